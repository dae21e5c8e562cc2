"""``feedforward_proxy``: feedforward for ros2_control's joint_trajectory_controller (JTC).

A Python loop is not a real-time loop; JTC is. Along a *desired* trajectory the feedforward
depends on that trajectory only, so this node computes it ahead for the whole trajectory
(:mod:`mbs_dynamics.enrich`, batch inverse dynamics) and hands it to JTC, which interpolates it at
the hardware rate and adds each point's ``effort`` as feedforward when it commands the effort
interface. MoveIt (or any FollowJointTrajectory client) talks to this node instead of JTC:

* action server ``~/follow_joint_trajectory`` (control_msgs/action/FollowJointTrajectory): each
  goal's trajectory is splined (C⁴), resampled every ``sample_period`` s (the original waypoint
  times kept), filled (``output: effort``: spline positions/velocities/accelerations and effort =
  τ = ID(q, q̇, q̈); ``output: motor``: θ_d, θ′_d, θ″_d and effort = τ_m for SEA/VSA drives that
  command the motor side) and sent, with the goal's tolerances and header unchanged, to the
  action server ``controller_action``. Feedback and result come back unchanged (feedback
  ``index``, when the message has it, is mapped back to the client's waypoint index); a cancel is
  forwarded; a new goal preempts the active one as JTC (Jazzy) does: the old goal is cancelled
  downstream and ends ABORTED with error_code INVALID_GOAL and "Current goal preempted by new
  incoming action.";
* topic ``~/joint_trajectory`` (trajectory_msgs/JointTrajectory) → the enriched trajectory on
  ``controller_topic``; an empty trajectory is forwarded as is (JTC: stop and hold);
* a goal it cannot serve (unknown or missing joints, NaN/inf, times not increasing, no robot
  model yet, the controller's server absent) is answered ABORTED with error_code INVALID_JOINTS
  or INVALID_GOAL and an error_string naming the cause; nothing non-finite is ever forwarded;
* the robot comes from the ``robot_description`` parameter or, when that is empty, from the
  ``robot_description`` topic (reliable, transient local, as robot_state_publisher offers it);
  with the parameters ``loops``/``actuated`` it is a ClosedLoopRobot (``load_urdf(...,
  loops=..., actuated=...)``): goals name its actuated joints (a dependent joint:
  INVALID_JOINTS, naming it), ``joint_states`` may carry every joint (selected by name).

* before each goal the controller's ``command_interfaces`` are read (rcl_interfaces
  GetParameters of ``controller_node``, default: ``controller_action`` without its last part;
  ``parameter_timeout``): JTC rejects effort without an 'effort' command interface, in its goal
  callback, without a text. Such a goal is forwarded unenriched (``pass_through_without_effort``,
  default true; said in the result's error_string) or answered INVALID_GOAL with JTC's reason and
  the fix; a goal the controller rejects anyway is answered with what is known of the reason;
* a goal whose first point has ``time_from_start > 0`` gets the lead-in JTC would interpolate
  from its state, enriched (``enrich_lead_in``; the measured state from ``joint_states`` at
  t = 0, JTC's quintic to the first point, effort = ID along it; :mod:`.proxy_logic`);
* after a cancel or an abort (not a preemption), and at start-up with ``hold_on_start``, JTC
  gets a hold goal: measured position, at rest, effort = g(q) (``hold_after_stop``; output
  motor: θ = q + K⁻¹g(q), τ_m = g(q); none with ``feedforward`` false, which forwards goals
  resampled but without effort: the controller's feedback alone at the same gains).
* ``joint_states`` is subscribed to only while a measured state is needed (a lead-in, a hold),
  for at most ``joint_state_timeout`` s, and only a message received after the need counts:
  joint_state_broadcaster publishes at the controller manager's rate, and a permanent
  subscription woke the proxy ~37,000 times per 10 s goal at 500 Hz.

Threads: a MultiThreadedExecutor with a ReentrantCallbackGroup; each goal's execute callback
blocks its own thread while the goal runs downstream, on a threading.Event set by the futures'
done callbacks, cancel requests and preemptions (no polling: a few wake-ups per goal, one per
0.5 s at most otherwise); enrichment is serialised by a lock (a Robot is not thread-safe).
"""

from __future__ import annotations

import sys
import threading
import time

import numpy as np
from action_msgs.msg import GoalStatus
from control_msgs.action import FollowJointTrajectory
from rcl_interfaces.msg import FloatingPointRange, ParameterDescriptor, ParameterType
from rcl_interfaces.srv import GetParameters
from rclpy.action import ActionClient, ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.exceptions import ParameterException, ParameterUninitializedException
from rclpy.event_handler import SubscriptionEventCallbacks
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from trajectory_msgs.msg import JointTrajectory

from ..control.enrich import INVALID_GOAL, EnrichmentError, TrajectoryEnricher
from .conversions import enriched_to_joint_trajectory, joint_trajectory_to_dict
from .parameters import (STRING_ARRAY_PARAMETERS, check_proxy_config, load_robot,
                         proxy_parameter_table, rest_positions)
from .runner import run

from .conversions import point_to_joint_trajectory, without_effort  # noqa: E402,I100
from .proxy_logic import (DoneWaiter, JointStateCache, controller_node_name,  # noqa: E402
                          decide_forwarding, hold_point, lead_in, motor_hold_point,
                          rejection_reason)

NODE_NAME = "feedforward_proxy"
PREEMPTED = "Current goal preempted by new incoming action."  # JTC's text (Jazzy)
_CANCEL_GRACE_S = 2.0    # how long a cancelled/preempted goal waits for the controller's result
_TICK_S = 0.5            # a blocked goal re-checks shutdown this often (else woken by events)
_HOLD_RETRY_S = 0.5      # period of the start-up hold attempts


def qos_description():
    """Reliable, transient local, keep last 1: what robot_state_publisher offers."""
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1,
                      reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.TRANSIENT_LOCAL)


def qos_joint_states():
    """Best effort, keep last 1: the freshest state (also matches reliable publishers)."""
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1,
                      reliability=ReliabilityPolicy.BEST_EFFORT,
                      durability=DurabilityPolicy.VOLATILE)


def qos_trajectory():
    """Reliable, keep last 10 (joint_trajectory_controller's ~/joint_trajectory subscription)."""
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=10,
                      reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.VOLATILE)


class ConfigurationError(ValueError):
    """A parameter value the proxy cannot start with."""


class LockedActionClient(ActionClient):
    """An ActionClient whose requests are registered before their responses are processed.

    rclpy's ActionClient (Jazzy up to 7.1.3 at least; ros2/rclpy#1123, fixed upstream by
    ros2/rclpy#1308) sends a goal, cancel or result request and only then records its sequence
    number. Under a MultiThreadedExecutor another thread can process the response in between:
    rclpy logs "Ignoring unexpected goal response" and the future never completes. A C++ server
    on the same machine answers that fast: against the real joint_trajectory_controller the
    proxy's goals were accepted and executed by JTC while the proxy waited for an answer that
    never came, then told its client "no answer". Here a lock makes each request atomic with
    its registration, and the processing of responses waits for it.
    """

    def __init__(self, *args, **kwargs):
        self._request_lock = threading.RLock()
        super().__init__(*args, **kwargs)

    def send_goal_async(self, *args, **kwargs):
        with self._request_lock:
            return super().send_goal_async(*args, **kwargs)

    def _cancel_goal_async(self, *args, **kwargs):
        with self._request_lock:
            return super()._cancel_goal_async(*args, **kwargs)

    def _get_result_async(self, *args, **kwargs):
        with self._request_lock:
            return super()._get_result_async(*args, **kwargs)

    async def execute(self, taken_data):
        with self._request_lock:     # a request being sent is registered first
            pass
        return await super().execute(taken_data)


class _Goal:
    """Book-keeping of one upstream goal while it runs downstream."""

    def __init__(self, handle):
        self.handle = handle
        self.downstream = None            # ClientGoalHandle once the controller accepted it
        self.preempted = False
        self.cancel_sent = False
        self.lock = threading.Lock()
        self.waiter = DoneWaiter(tick=_TICK_S)   # woken by futures, cancel, preemption

    def cancel_downstream(self):
        """Ask the controller to cancel (once); safe before the downstream goal exists."""
        with self.lock:
            if self.downstream is None or self.cancel_sent:
                return
            self.cancel_sent = True
            downstream = self.downstream
        downstream.cancel_goal_async()


class FeedforwardProxy(Node):
    """The proxy node; see the module docstring.

    Args:
        node_name: node name (default ``feedforward_proxy``).
        **kwargs: passed to :class:`rclpy.node.Node` (``parameter_overrides``, ``context``,
            ``namespace`` …).

    Raises:
        ConfigurationError: a parameter value is invalid, or the ``robot_description``
            parameter does not load.
    """

    def __init__(self, node_name=NODE_NAME, **kwargs):
        super().__init__(node_name, **kwargs)
        try:
            self._declare_parameters()
        except ParameterException as exc:   # an override outside its range or of wrong type
            raise ConfigurationError(f"parameter: {exc}") from exc
        try:
            self._config = check_proxy_config(
                {name: self._param(name) for name in proxy_parameter_table()})
        except ValueError as exc:
            raise ConfigurationError(str(exc)) from exc
        cfg = self._config
        self._enricher = None
        self._enrich_lock = threading.Lock()
        self._load_error = ""
        self._active = None
        self._active_lock = threading.Lock()
        self.goals_received = 0
        self.goals_rejected = 0
        self.holds_sent = 0
        self.wakeups = 0                          # event waits of the execute threads
        self._states = JointStateCache()
        self._state_sub = None                    # joint_states, subscribed only while needed
        self._state_waiters = []
        self._state_lock = threading.Lock()
        self._interfaces = None                   # last command_interfaces read (None: unknown)
        self._group = ReentrantCallbackGroup()

        if cfg["robot_description"]:
            try:
                self._enricher = self._build(cfg["robot_description"])
            except Exception as exc:
                raise ConfigurationError(f"robot_description parameter: {exc}") from exc
            self._log_model()
        else:
            self.create_subscription(String, "robot_description", self._on_description,
                                     qos_description(), callback_group=self._group)
            self.get_logger().info("waiting for a robot model on the robot_description topic")

        fq = self.get_fully_qualified_name().rstrip("/")
        self._client = LockedActionClient(self, FollowJointTrajectory,
                                          cfg["controller_action"], callback_group=self._group)
        self._server = ActionServer(
            self, FollowJointTrajectory, f"{fq}/follow_joint_trajectory",
            execute_callback=self._execute, goal_callback=self._on_goal,
            cancel_callback=self._on_cancel, callback_group=self._group)
        self._pub = self.create_publisher(JointTrajectory, cfg["controller_topic"],
                                          qos_trajectory())
        self.create_subscription(JointTrajectory, "~/joint_trajectory", self._on_trajectory,
                                 qos_trajectory(), callback_group=self._group)
        self._controller = cfg["controller_node"] or controller_node_name(
            cfg["controller_action"])
        self._param_client = None
        if self._controller:
            self._param_client = self.create_client(
                GetParameters, f"{self._controller}/get_parameters", callback_group=self._group)
        self._start_timer = None
        self._start_busy = threading.Lock()
        if cfg["hold_on_start"]:
            self._start_timer = self.create_timer(_HOLD_RETRY_S, self._hold_on_start,
                                                  callback_group=self._group)
        self.get_logger().info(
            f"serving {fq}/follow_joint_trajectory -> {cfg['controller_action']} and "
            f"{fq}/joint_trajectory -> {cfg['controller_topic']} (output {cfg['output']}, "
            f"sample_period {cfg['sample_period']:g} s)")

    # -- parameters and model -----------------------------------------------------------------
    def _declare_parameters(self):
        for name, (default, text, read_only, limits) in proxy_parameter_table().items():
            desc = ParameterDescriptor(description=text, read_only=read_only)
            if limits is not None:
                desc.floating_point_range = [FloatingPointRange(
                    from_value=float(limits[0]), to_value=float(limits[1]), step=0.0)]
            if name in STRING_ARRAY_PARAMETERS:
                self.declare_parameter(name, Parameter.Type.STRING_ARRAY, desc)
            elif name.startswith("actuator.") and not isinstance(default, str):
                desc.dynamic_typing = True
                value = ([float(x) for x in default] if isinstance(default, (list, tuple))
                         else default)
                self.declare_parameter(name, value, desc)
            else:
                self.declare_parameter(name, default, desc)

    def _param(self, name):
        try:
            return self.get_parameter(name).value
        except ParameterUninitializedException:
            return None

    def _build(self, urdf):
        """URDF text (+ the ``loops``) → a warmed-up TrajectoryEnricher (raises ValueError on
        a bad model)."""
        from ..control.actuators import actuator_from_params

        cfg = self._config
        try:
            robot, note = load_robot(urdf, cfg)
        except ValueError as exc:
            raise ValueError(_model_hint(exc)) from exc
        if note:
            self.get_logger().warn(note)
        actuator = actuator_from_params(dict(cfg["actuator"]), robot.n)
        output = cfg["output"] if cfg["feedforward"] else "effort"   # no ff: θ_d = q_d
        enricher = TrajectoryEnricher(robot, output=output, actuator=actuator,
                                      sample_period=cfg["sample_period"])
        # warm up every kernel a goal uses, so the first goal is not slow (at rest where the
        # loops of a closed-loop robot are assembled)
        q = rest_positions(robot)
        enricher.enrich({"joint_names": list(robot.joint_names),
                         "points": [{"time_from_start": 0.0, "positions": q.tolist()},
                                    {"time_from_start": 0.1, "positions": q.tolist()}]})
        return enricher

    def _log_model(self):
        robot = self._enricher.robot
        loops = getattr(robot, "loop_names", ())
        closed = (f" (closed loops {list(loops)}: the actuated joints; the dependent ones "
                  f"{list(robot.dependent_joint_names)} follow)" if loops else "")
        self.get_logger().info(f"robot model: {robot.n} joints {list(robot.joint_names)}"
                               f"{closed}")

    def _on_description(self, msg):
        try:
            enricher = self._build(msg.data)
        except Exception as exc:  # noqa: BLE001 - report, keep what we have
            self._load_error = str(exc)
            if self._enricher is None:
                self.get_logger().error(f"robot_description rejected (no model loaded yet; "
                                        f"goals are answered INVALID_GOAL): {exc}")
            else:
                self.get_logger().error(f"robot_description rejected, keeping the previous "
                                        f"model: {exc}")
            return
        self._enricher = enricher
        self._load_error = ""
        self._log_model()

    def _enrich(self, msg):
        """JointTrajectory → EnrichedTrajectory (raises EnrichmentError)."""
        enricher = self._enricher
        if enricher is None:
            why = f" (last one rejected: {self._load_error})" if self._load_error else ""
            raise EnrichmentError("no robot model loaded yet: set the robot_description "
                                  f"parameter or publish the robot_description topic{why}",
                                  INVALID_GOAL)
        with self._enrich_lock:
            return enricher.enrich(joint_trajectory_to_dict(msg))

    def _enrich_goal(self, msg):
        """JointTrajectory → (EnrichedTrajectory with the lead-in when due, note for the client).

        Raises EnrichmentError like :meth:`_enrich`."""
        enricher = self._enricher
        enriched = self._enrich(msg)
        cfg = self._config
        if not cfg["enrich_lead_in"] or not enriched.times[0] > 0.0:
            return enriched, ""
        if enriched.output != "effort":
            return enriched, ("the lead-in from the controller's state to the first point has "
                              "no feedforward (filled for output effort only)")
        q, qd, why = self._measured_state(list(enriched.joint_names))
        if q is None:
            return enriched, (f"the lead-in from the controller's state to the first point "
                              f"has no feedforward: {why} (topic joint_states)")
        try:
            with self._enrich_lock:
                return lead_in(enricher.robot, enriched, q, qd,
                               sample_period=cfg["sample_period"]), ""
        except ValueError as exc:
            return enriched, f"the lead-in has no feedforward: {exc}"

    def _on_joint_state(self, msg):
        self._states.update(msg.name, msg.position, msg.velocity)
        with self._state_lock:
            waiters = list(self._state_waiters)
        for waiter in waiters:
            waiter.notify()

    def _measured_state(self, names):
        """(q, q̇ or None, "") from a joint_states message received after this call, or
        (None, None, why not).

        ``joint_states`` is subscribed to only while a state is wanted (a lead-in, a hold) and
        at most ``joint_state_timeout`` s (0: 1 s): joint_state_broadcaster publishes at the
        controller manager's rate (500-1000 Hz), which woke a permanently subscribed proxy some
        37,000 times per 10 s goal (voluntary context switches, real JTC, 500 Hz)."""
        timeout = self._config["joint_state_timeout"] or 1.0
        since = time.monotonic()
        waiter = DoneWaiter(tick=_TICK_S)
        with self._state_lock:
            self._state_waiters.append(waiter)
            if self._state_sub is None:
                # no QoS event handlers: rclpy's executor (Jazzy) does not survive an event
                # handler destroyed while another thread builds its wait set
                # (InvalidHandle out of spin(): the proxy died so at start-up in one ROS-suite run)
                self._state_sub = self.create_subscription(
                    JointState, "joint_states", self._on_joint_state, qos_joint_states(),
                    callback_group=self._group,
                    event_callbacks=SubscriptionEventCallbacks(use_default_callbacks=False))
        try:
            waiter.wait(lambda: self._states.get(names, 0.0, since=since)[0] is not None,
                        ok=self.context.ok, timeout=timeout)
        finally:
            with self._state_lock:
                self._state_waiters.remove(waiter)
                sub = self._state_sub if not self._state_waiters else None
                if sub is not None:
                    self._state_sub = None
            if sub is not None:
                self.destroy_subscription(sub)
        q, qd, why = self._states.get(names, 0.0, since=since)
        if q is None:
            why = f"{why} within {timeout:g} s"
        return q, qd, why

    def _command_interfaces(self):
        """The controller's ``command_interfaces`` (list) and "", or (None, why not).

        Asked before each goal (rcl_interfaces/GetParameters of the controller node, at most
        ``parameter_timeout`` s): JTC rejects effort in its goal callback, without a text."""
        client = self._param_client
        timeout = self._config["parameter_timeout"]
        if client is None:
            return None, "no controller node name: set the parameter controller_node"
        service = f"{self._controller}/get_parameters"
        if not client.service_is_ready() and not client.wait_for_service(timeout_sec=timeout):
            return None, f"service {service} not available within {timeout:g} s"
        future = client.call_async(GetParameters.Request(names=["command_interfaces"]))
        waiter = DoneWaiter(tick=_TICK_S)
        future.add_done_callback(waiter.notify)
        if not waiter.wait(future.done, ok=self.context.ok, timeout=timeout):
            return None, f"no answer from {service} within {timeout:g} s"
        try:
            response = future.result()
        except Exception as exc:  # noqa: BLE001 - report it as unknown
            return None, f"{service} failed: {exc!r}"
        if response is None or len(response.values) != 1:
            return None, f"{service} gave no value"
        value = response.values[0]
        if value.type != ParameterType.PARAMETER_STRING_ARRAY:
            return None, (f"{self._controller} has no string-array parameter command_interfaces "
                          f"(is it a joint_trajectory_controller? set controller_node)")
        interfaces = list(value.string_array_value)
        self._interfaces = interfaces
        return interfaces, ""

    # -- topic variant ------------------------------------------------------------------------
    def _on_trajectory(self, msg):
        if len(msg.points) == 0:
            self._pub.publish(msg)               # JTC: an empty trajectory stops and holds
            return
        # the interfaces last read for a goal (the topic callback does not block on a query)
        decision = decide_forwarding(self._interfaces,
                                     self._config["pass_through_without_effort"],
                                     self._controller or "the controller")
        if decision.mode == "reject":
            self.get_logger().error(f"~/joint_trajectory {decision.note}")
            return
        if decision.mode == "pass_through":
            self.get_logger().warn(f"~/joint_trajectory {decision.note}",
                                   throttle_duration_sec=10.0)
            self._pub.publish(without_effort(msg))
            return
        try:
            enriched, note = self._enrich_goal(msg)
        except EnrichmentError as exc:
            self.get_logger().error(f"~/joint_trajectory not forwarded: {exc}")
            return
        if note:
            self.get_logger().warn(f"~/joint_trajectory: {note}", throttle_duration_sec=10.0)
        forward = enriched_to_joint_trajectory(enriched, msg.header)
        self._pub.publish(forward if self._config["feedforward"] else without_effort(forward))

    # -- action variant -----------------------------------------------------------------------
    def _on_goal(self, goal_request):
        # every goal is accepted here and answered in _execute, so the client gets an
        # error_string; an invalid goal never preempts the active one
        self.goals_received += 1
        return GoalResponse.ACCEPT

    def _on_cancel(self, goal_handle):
        with self._active_lock:
            entry = self._active if (self._active is not None
                                     and self._active.handle == goal_handle) else None
        if entry is not None:
            entry.cancel_downstream()
            entry.waiter.notify()                # its thread waits for the controller's result
        return CancelResponse.ACCEPT

    def _execute(self, goal_handle):
        result = FollowJointTrajectory.Result()
        goal = goal_handle.request
        cfg = self._config
        controller = self._controller or cfg["controller_action"]
        interfaces, lookup_error = self._command_interfaces()
        decision = decide_forwarding(interfaces, cfg["pass_through_without_effort"], controller)
        if decision.mode == "reject":
            return self._fail(goal_handle, result, INVALID_GOAL, decision.note)
        note = decision.note
        if decision.mode == "pass_through":
            self.get_logger().warn(note, throttle_duration_sec=10.0)
            trajectory = without_effort(goal.trajectory)
            waypoints = np.arange(len(goal.trajectory.points))
        else:
            try:
                enriched, note = self._enrich_goal(goal.trajectory)
            except EnrichmentError as exc:
                return self._fail(goal_handle, result, exc.error_code, str(exc))
            except Exception as exc:  # noqa: BLE001 - never let a goal crash the node
                return self._fail(goal_handle, result, INVALID_GOAL,
                                  f"internal error: {exc!r}")
            if note:
                self.get_logger().warn(note)
            trajectory = enriched_to_joint_trajectory(enriched, goal.trajectory.header)
            if not cfg["feedforward"]:
                trajectory = without_effort(trajectory)
            waypoints = enriched.waypoints
        if goal_handle.is_cancel_requested:
            goal_handle.canceled()
            result.error_string = "cancelled before it was forwarded"
            return result

        entry = _Goal(goal_handle)
        with self._active_lock:
            previous, self._active = self._active, entry
        if previous is not None:
            previous.preempted = True            # its own thread cancels it downstream
            previous.waiter.notify()

        if not self._client.wait_for_server(timeout_sec=cfg["server_timeout"]):
            return self._finish_failed(entry, result, INVALID_GOAL,
                                       f"the controller's action server "
                                       f"{cfg['controller_action']} is not available")
        forward = FollowJointTrajectory.Goal()
        for field in forward.get_fields_and_field_types():
            setattr(forward, field, getattr(goal, field))   # tolerances etc. unchanged
        forward.trajectory = trajectory

        def relay(feedback_msg):
            fb = feedback_msg.feedback
            if hasattr(fb, "index"):
                fb.index = int(max(np.searchsorted(waypoints, fb.index, side="right") - 1, 0))
            try:
                goal_handle.publish_feedback(fb)
            except Exception:  # noqa: BLE001 - the goal may have just ended
                pass

        sent = self._client.send_goal_async(forward, feedback_callback=relay)
        sent.add_done_callback(entry.waiter.notify)
        if not self._wait(sent, entry, None, timeout=max(5.0, cfg["server_timeout"])):
            return self._finish_failed(entry, result, INVALID_GOAL,
                                       "no answer from the controller's action server")
        downstream = sent.result()
        if downstream is None or not downstream.accepted:
            if interfaces is None:      # it may have come up since: ask once more
                interfaces, lookup_error = self._command_interfaces()
            return self._finish_failed(entry, result, INVALID_GOAL,
                                       rejection_reason(controller, interfaces, lookup_error))
        with entry.lock:
            entry.downstream = downstream
        clock0, wall0 = self.get_clock().now().nanoseconds, time.monotonic()
        result_future = downstream.get_result_async()
        result_future.add_done_callback(entry.waiter.notify)
        self._wait(result_future, entry, _CANCEL_GRACE_S)
        with self._active_lock:
            if self._active is entry:
                self._active = None
        if not result_future.done():
            if entry.preempted:
                return self._end_preempted(goal_handle, result)
            self._hold("a cancel without a result from the controller")
            if goal_handle.is_cancel_requested:
                goal_handle.canceled()
                result.error_string = _with_note("cancelled (no result from the controller)",
                                                 note)
                return result
            return self._fail(goal_handle, result, INVALID_GOAL, "no result from the controller")
        response = result_future.result()
        result = response.result
        status = response.status
        self._log_pace(status, clock0, wall0)
        result.error_string = _with_note(result.error_string, note)
        if status == GoalStatus.STATUS_SUCCEEDED:
            goal_handle.succeed()
        elif status == GoalStatus.STATUS_CANCELED:
            if entry.preempted:
                return self._end_preempted(goal_handle, result)
            self._hold("a cancel")
            if goal_handle.is_cancel_requested:
                self._terminal(goal_handle, goal_handle.canceled)
            else:   # cancelled downstream by someone else: a server cannot cancel on its own
                if not result.error_string:
                    result.error_string = "the controller cancelled the goal"
                self._terminal(goal_handle, goal_handle.abort)
        elif entry.preempted and status != GoalStatus.STATUS_ABORTED:
            return self._end_preempted(goal_handle, result)
        else:
            # JTC aborted it: a tolerance violated, or preempted by another client's goal (then
            # that goal runs: no hold)
            if not entry.preempted and not result.error_string.startswith(PREEMPTED):
                self._hold("an abort")
            self._terminal(goal_handle, goal_handle.abort)
        return result

    def _log_pace(self, status, clock0, wall0):
        """One line per goal: its time on the node's clock (simulated time under
        ``use_sim_time``) against wall time — the simulation's real-time factor."""
        elapsed = (self.get_clock().now().nanoseconds - clock0) * 1e-9
        wall = time.monotonic() - wall0
        pace = f"real-time factor {elapsed / wall:.3f}" if wall > 0 else "no wall time elapsed"
        self.get_logger().info(f"goal ended (status {status}) after {elapsed:.3f} s on the "
                               f"node's clock, {wall:.3f} s of wall time: {pace}")

    def _wait(self, future, entry, grace, timeout=None):
        """Block until ``future`` is done (True) or ``timeout`` seconds passed (False; None:
        never), woken by the future's done callback, a cancel request or a preemption (all
        call ``entry.waiter.notify``), never by polling. With a ``grace`` [s], a preemption or
        cancel request cancels the goal downstream and waits at most ``grace`` seconds more for
        its result; None ignores them (the goal request itself must be answered first, else a
        goal the controller accepts would run unnoticed)."""
        waiter = entry.waiter
        before = waiter.wakeups
        try:
            return waiter.wait(
                future.done, ok=self.context.ok,
                interrupt=lambda: entry.preempted or entry.handle.is_cancel_requested,
                on_interrupt=entry.cancel_downstream, grace=grace, timeout=timeout)
        finally:
            self.wakeups += waiter.wakeups - before

    # -- holding ------------------------------------------------------------------------------
    def _hold(self, why, quiet=False):
        """Send the controller a hold goal: measured position, at rest, effort = g(q).

        Skipped (logged) when disabled, for output motor, with no model or fresh joint state,
        when the controller takes no effort, or when a goal is active (it takes over).
        Returns True if a hold goal was sent."""
        cfg = self._config
        if not cfg["hold_after_stop"] and why != "start-up":
            return False
        enricher = self._enricher
        if enricher is None or not cfg["feedforward"] or enricher.output != cfg["output"]:
            return False
        if self._interfaces is not None and "effort" not in self._interfaces:
            return False                         # JTC holds position by itself
        names = list(enricher.robot.joint_names)
        q, _, reason = self._measured_state(names)
        if q is None:
            if not quiet:
                self.get_logger().warn(f"no hold goal after {why}: {reason} (topic joint_states)")
            return False
        try:
            with self._enrich_lock:
                point = hold_point(enricher.robot, names, q)
                if cfg["output"] == "motor":     # the drive holds θ = q + K⁻¹g, τ_m = g
                    point = motor_hold_point(enricher.actuator, point)
        except ValueError as exc:
            self.get_logger().warn(f"no hold goal after {why}: {exc}")
            return False
        goal = FollowJointTrajectory.Goal()
        goal.trajectory = point_to_joint_trajectory(names, point)
        with self._active_lock:                  # a goal registered first takes over
            if self._active is not None or not self._client.server_is_ready():
                return False
            sent = self._client.send_goal_async(goal)
        self.holds_sent += 1

        def answered(future):
            handle = future.result() if future.exception() is None else None
            if handle is None or not handle.accepted:
                self.get_logger().error(
                    f"hold goal after {why}: "
                    f"{rejection_reason(self._controller or 'the controller', self._interfaces)}")
            else:
                self.get_logger().info(
                    f"holding after {why} at {np.round(q, 4).tolist()} with gravity torque "
                    f"{np.round(point['effort'], 4).tolist()}")
        sent.add_done_callback(answered)
        return True

    def _hold_on_start(self):
        """Timer: the start-up hold, once model, joint state and controller are there."""
        if not self._start_busy.acquire(blocking=False):
            return                               # the previous tick is still waiting
        try:
            self._try_hold_on_start()
        finally:
            self._start_busy.release()

    def _try_hold_on_start(self):
        if self._start_timer.is_canceled():
            return
        if self.goals_received > 0 or self._enricher is None:
            if self.goals_received > 0:
                self._start_timer.cancel()
            return
        if not self._client.server_is_ready():
            return
        if self._interfaces is None:
            interfaces, _ = self._command_interfaces()
            if interfaces is None:
                return
        if self._hold("start-up", quiet=True) or self._hold_impossible():
            self._start_timer.cancel()

    def _hold_impossible(self):
        """A hold can never be sent (feedforward off, or a controller without effort)."""
        return not self._config["feedforward"] or (
            self._interfaces is not None and "effort" not in self._interfaces)

    # -- terminal states ----------------------------------------------------------------------
    def _fail(self, goal_handle, result, code, text):
        self.goals_rejected += 1
        self.get_logger().warn(f"goal answered error_code {code}: {text}")
        result.error_code = int(code)
        result.error_string = text
        self._terminal(goal_handle, goal_handle.abort)
        return result

    def _finish_failed(self, entry, result, code, text):
        with self._active_lock:
            if self._active is entry:
                self._active = None
        if entry.preempted:
            return self._end_preempted(entry.handle, result)
        if entry.handle.is_cancel_requested:
            entry.handle.canceled()
            result.error_string = "cancelled"
            return result
        return self._fail(entry.handle, result, code, text)

    def _end_preempted(self, goal_handle, result):
        """As JTC (Jazzy): a preempted goal ends ABORTED, INVALID_GOAL, with its message."""
        result.error_code = FollowJointTrajectory.Result.INVALID_GOAL
        result.error_string = PREEMPTED
        self._terminal(goal_handle, goal_handle.abort)
        return result

    @staticmethod
    def _terminal(goal_handle, transition):
        try:
            transition()
        except Exception:  # noqa: BLE001 - invalid transition: end it as aborted
            if goal_handle.is_active:
                goal_handle.abort()

    def destroy_node(self):
        """Destroy the action server and client, then the node."""
        for entity in (self._server, self._client):
            try:
                entity.destroy()
            except Exception:  # noqa: BLE001 - already gone at shutdown
                pass
        return super().destroy_node()


def _with_note(text, note):
    """The controller's error_string with the proxy's note appended."""
    if not note:
        return text
    return f"{text} [feedforward_proxy: {note}]" if text else f"[feedforward_proxy: {note}]"


def _model_hint(exc):
    """A URDF error, with the node options that fix it named."""
    text = str(exc)
    if "mimic" in text:
        text += ("; this version models mimic joints only as locked joints: set the parameter "
                 "locked_joints, e.g. ['<mimic joint name>'] or ['<name>:<position>']")
    return text


def make_executor(context=None):
    """A MultiThreadedExecutor with enough threads for blocked goals and their responses."""
    kwargs = {} if context is None else {"context": context}
    return MultiThreadedExecutor(num_threads=8, **kwargs)


def main(args=None):
    """Entry point of ``ros2 run mbs_dynamics feedforward_proxy``; returns the exit code."""
    return run(FeedforwardProxy, NODE_NAME, args=args, make_executor=make_executor,
               config_errors=(ConfigurationError,))


if __name__ == "__main__":
    sys.exit(main())
