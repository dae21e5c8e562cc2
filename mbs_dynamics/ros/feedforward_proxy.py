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
  ``robot_description`` topic (reliable, transient local, as robot_state_publisher offers it).

Threads: a MultiThreadedExecutor with a ReentrantCallbackGroup; each goal's execute callback
blocks its own thread while the goal runs downstream (polling rclpy futures, so the executor's
other threads deliver responses); enrichment is serialised by a lock (a Robot is not
thread-safe).
"""

from __future__ import annotations

import sys
import threading
import time

import numpy as np
from action_msgs.msg import GoalStatus
from control_msgs.action import FollowJointTrajectory
from rcl_interfaces.msg import FloatingPointRange, ParameterDescriptor
from rclpy.action import ActionClient, ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.exceptions import ParameterException, ParameterUninitializedException
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import String
from trajectory_msgs.msg import JointTrajectory

from ..control.enrich import INVALID_GOAL, EnrichmentError, TrajectoryEnricher
from .conversions import enriched_to_joint_trajectory, joint_trajectory_to_dict
from .parameters import STRING_ARRAY_PARAMETERS, check_proxy_config, proxy_parameter_table
from .runner import run

NODE_NAME = "feedforward_proxy"
PREEMPTED = "Current goal preempted by new incoming action."  # JTC's text (Jazzy)
_POLL_S = 0.002          # poll period of a blocked execute callback [s]
_CANCEL_GRACE_S = 2.0    # how long a cancelled/preempted goal waits for the controller's result


def qos_description():
    """Reliable, transient local, keep last 1: what robot_state_publisher offers."""
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1,
                      reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.TRANSIENT_LOCAL)


def qos_trajectory():
    """Reliable, keep last 10 (joint_trajectory_controller's ~/joint_trajectory subscription)."""
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=10,
                      reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.VOLATILE)


class ConfigurationError(ValueError):
    """A parameter value the proxy cannot start with."""


class _Goal:
    """Book-keeping of one upstream goal while it runs downstream."""

    def __init__(self, handle):
        self.handle = handle
        self.downstream = None            # ClientGoalHandle once the controller accepted it
        self.preempted = False
        self.cancel_sent = False
        self.lock = threading.Lock()

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
        self._client = ActionClient(self, FollowJointTrajectory, cfg["controller_action"],
                                    callback_group=self._group)
        self._server = ActionServer(
            self, FollowJointTrajectory, f"{fq}/follow_joint_trajectory",
            execute_callback=self._execute, goal_callback=self._on_goal,
            cancel_callback=self._on_cancel, callback_group=self._group)
        self._pub = self.create_publisher(JointTrajectory, cfg["controller_topic"],
                                          qos_trajectory())
        self.create_subscription(JointTrajectory, "~/joint_trajectory", self._on_trajectory,
                                 qos_trajectory(), callback_group=self._group)
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
        """URDF text → a warmed-up TrajectoryEnricher (raises ValueError on a bad model)."""
        from ..loader import load_urdf
        from ..control.actuators import actuator_from_params

        cfg = self._config
        try:
            robot = load_urdf(urdf, base_link=cfg["base_link"], tip_link=cfg["tip_link"],
                              locked_joints=cfg["locked_joints"] or None,
                              gravity=cfg["gravity"])
        except ValueError as exc:
            raise ValueError(_model_hint(exc)) from exc
        actuator = actuator_from_params(dict(cfg["actuator"]), robot.n)
        enricher = TrajectoryEnricher(robot, output=cfg["output"], actuator=actuator,
                                      sample_period=cfg["sample_period"])
        # warm up every kernel a goal uses, so the first goal is not slow
        q = np.zeros(robot.n)
        enricher.enrich({"joint_names": list(robot.joint_names),
                         "points": [{"time_from_start": 0.0, "positions": q.tolist()},
                                    {"time_from_start": 0.1, "positions": q.tolist()}]})
        return enricher

    def _log_model(self):
        robot = self._enricher.robot
        self.get_logger().info(f"robot model: {robot.n} joints {list(robot.joint_names)}")

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

    # -- topic variant ------------------------------------------------------------------------
    def _on_trajectory(self, msg):
        if len(msg.points) == 0:
            self._pub.publish(msg)               # JTC: an empty trajectory stops and holds
            return
        try:
            enriched = self._enrich(msg)
        except EnrichmentError as exc:
            self.get_logger().error(f"~/joint_trajectory not forwarded: {exc}")
            return
        self._pub.publish(enriched_to_joint_trajectory(enriched, msg.header))

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
        return CancelResponse.ACCEPT

    def _execute(self, goal_handle):
        result = FollowJointTrajectory.Result()
        goal = goal_handle.request
        try:
            enriched = self._enrich(goal.trajectory)
        except EnrichmentError as exc:
            return self._fail(goal_handle, result, exc.error_code, str(exc))
        except Exception as exc:  # noqa: BLE001 - never let a goal crash the node
            return self._fail(goal_handle, result, INVALID_GOAL, f"internal error: {exc!r}")
        if goal_handle.is_cancel_requested:
            goal_handle.canceled()
            result.error_string = "cancelled before it was forwarded"
            return result

        entry = _Goal(goal_handle)
        with self._active_lock:
            previous, self._active = self._active, entry
        if previous is not None:
            previous.preempted = True            # its own thread cancels it downstream

        cfg = self._config
        if not self._client.wait_for_server(timeout_sec=cfg["server_timeout"]):
            return self._finish_failed(entry, result, INVALID_GOAL,
                                       f"the controller's action server "
                                       f"{cfg['controller_action']} is not available")
        forward = FollowJointTrajectory.Goal()
        for field in forward.get_fields_and_field_types():
            setattr(forward, field, getattr(goal, field))   # tolerances etc. unchanged
        forward.trajectory = enriched_to_joint_trajectory(enriched, goal.trajectory.header)
        waypoints = enriched.waypoints

        def relay(feedback_msg):
            fb = feedback_msg.feedback
            if hasattr(fb, "index"):
                fb.index = int(max(np.searchsorted(waypoints, fb.index, side="right") - 1, 0))
            try:
                goal_handle.publish_feedback(fb)
            except Exception:  # noqa: BLE001 - the goal may have just ended
                pass

        sent = self._client.send_goal_async(forward, feedback_callback=relay)
        if not self._wait(sent, entry, None, timeout=max(5.0, cfg["server_timeout"])):
            return self._finish_failed(entry, result, INVALID_GOAL,
                                       "no answer from the controller's action server")
        downstream = sent.result()
        if downstream is None or not downstream.accepted:
            return self._finish_failed(entry, result, INVALID_GOAL,
                                       "the controller rejected the enriched goal (see its log)")
        with entry.lock:
            entry.downstream = downstream
        result_future = downstream.get_result_async()
        self._wait(result_future, entry, _CANCEL_GRACE_S)
        with self._active_lock:
            if self._active is entry:
                self._active = None
        if not result_future.done():
            if entry.preempted:
                return self._end_preempted(goal_handle, result)
            if goal_handle.is_cancel_requested:
                goal_handle.canceled()
                result.error_string = "cancelled (no result from the controller)"
                return result
            return self._fail(goal_handle, result, INVALID_GOAL, "no result from the controller")
        response = result_future.result()
        result = response.result
        status = response.status
        if status == GoalStatus.STATUS_SUCCEEDED:
            goal_handle.succeed()
        elif status == GoalStatus.STATUS_CANCELED:
            if entry.preempted:
                return self._end_preempted(goal_handle, result)
            if goal_handle.is_cancel_requested:
                self._terminal(goal_handle, goal_handle.canceled)
            else:   # cancelled downstream by someone else: a server cannot cancel on its own
                if not result.error_string:
                    result.error_string = "the controller cancelled the goal"
                self._terminal(goal_handle, goal_handle.abort)
        elif entry.preempted and status != GoalStatus.STATUS_ABORTED:
            return self._end_preempted(goal_handle, result)
        else:
            self._terminal(goal_handle, goal_handle.abort)
        return result

    def _wait(self, future, entry, grace, timeout=None):
        """Poll until ``future`` is done (True) or ``timeout`` seconds passed (False; None:
        never). With a ``grace`` [s], a preemption or cancel request cancels the goal
        downstream and waits at most ``grace`` seconds more for its result; None ignores them
        (the goal request itself must be answered first, else a goal the controller accepts
        would run unnoticed)."""
        deadline = None
        give_up = None if timeout is None else time.monotonic() + timeout
        while not future.done():
            if not self.context.ok() or (give_up is not None and time.monotonic() > give_up):
                return False
            if grace is not None and (entry.preempted or entry.handle.is_cancel_requested):
                entry.cancel_downstream()
                if deadline is None:
                    deadline = time.monotonic() + grace
                elif time.monotonic() > deadline:
                    return False
            time.sleep(_POLL_S)
        return True

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
