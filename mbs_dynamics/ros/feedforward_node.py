"""``feedforward_node``: τ, τ′, τ″ (and SEA/VSA motor references) at control rate.

The node is transport only: parameters, QoS, a control loop and message ⇄
array conversion around :class:`mbs_dynamics.controller.FeedforwardController`, which makes every
decision (trajectory / hold / nothing, rejections, non-finite guard).

Topics (inputs relative, so launch files remap them; outputs private):

* sub ``joint_states`` — sensor_msgs/JointState; best effort, keep last 1;
* sub ``~/joint_trajectory`` — trajectory_msgs/JointTrajectory; reliable, keep last 1; header
  stamp 0 = start now (as joint_trajectory_controller); no points = cancel (hold);
* sub ``robot_description`` — std_msgs/String, only when the parameter is empty; reliable,
  transient local, keep last 1 (what robot_state_publisher offers);
* pub ``~/torque`` — std_msgs/Float64MultiArray: τ in ``joints`` order;
* pub ``~/feedforward`` — sensor_msgs/JointState: q_d, q′_d, τ, stamped with the cycle time;
* pub ``~/torque_derivatives`` — std_msgs/Float64MultiArray, layout ``order`` (3) × ``joint``
  (n), row-major: τ, τ′, τ″;
* pub ``~/motor_reference`` — sensor_msgs/JointState: θ_d, θ′_d, τ_m (elastic actuators only);
* with ``flatness.enabled``: sub ``motor_states`` — sensor_msgs/JointState, best effort, keep
  last 1: the measured motor side of every joint, named as the joint, position θ [rad] and
  velocity θ̇ [rad/s] reflected to the joint side (what the co-simulation's MuJoCo hardware
  publishes on ``<hardware>/motor_states``, and sim_node on ``~/motor_states``); of the last
  four, the one whose header stamp is nearest the joint state's is used (one control cycle's
  sample), else the latest; with ``control_rate`` 0 a cycle runs per joint state at the time
  of its header stamp (the clock when unstamped); pub ``~/motor_torque`` —
  std_msgs/Float64MultiArray: the flatness controller's motor torque u in ``joints`` order
  (:mod:`.flatness_output`; ``effort_controllers/JointGroupEffortController``'s ``~/commands``
  takes it);
* pub ``/diagnostics`` — diagnostic_msgs/DiagnosticArray, once a second: achieved rate,
  compute-time percentiles, loop lateness, rejections by cause.

Closed loops (parameters ``loops``, ``actuated``; :mod:`.parameters`): the robot is
``load_urdf(robot_description, loops=..., actuated=...)``, a ClosedLoopRobot whose joints are the
actuated ones: ``joints``, every output and the trajectories name actuated joints only (a
trajectory naming a dependent joint is rejected, ``unknown_joint``); ``joint_states`` may carry
every joint of the mechanism or the actuated ones only (selected by name).

All control publishers are reliable, keep last 1. History, depth and reliability of the control
topics can be overridden with the standard ``qos_overrides.<topic>.<publisher|subscription>.
<policy>`` parameters.

Why these QoS: a feedforward is only useful fresh, so every control stream keeps the last sample
only. ``joint_states`` is read best effort, which also matches reliable publishers (a reliable
subscriber would not match a best-effort sensor stream). Outputs are published reliable because
a reliable publisher serves both kinds of subscriber, and ros2_control's command topics
(``~/commands`` of ``effort_controllers/JointGroupEffortController``) subscribe reliable; with
depth 1 reliability never queues old torques. Trajectories are reliable (a lost goal is worse than
a late one), as in joint_trajectory_controller.

Timing: a dedicated control thread sleeps to absolute deadlines on the node clock
(``Clock.sleep_until``; with ``use_sim_time`` a wait woken by every ``/clock`` jump, forward and
backward: rclpy's ``sleep_until`` ignores backward jumps and would sleep until the simulated time
caught up with the old deadline after a simulator reset) and reads only the latest
stored inputs; the executor thread (the ``EventsExecutor`` where the installed rclpy has it,
otherwise a ``SingleThreadedExecutor``) runs the callbacks, which only store messages (the
trajectory callback also fits the spline, so that work never lands in the control loop). With
``control_rate: 0`` the control thread runs once per received joint state instead. A new
``robot_description`` is parsed (and its kernels warmed up) on a loader thread and swapped in
atomically. Joint-state age (``joint_state_timeout``) is measured from the time the node received
the message on its own clock, so clock offsets between machines cannot make fresh states look
stale.
"""

from __future__ import annotations

import array
import collections
import math
import os
import sys
import threading
import time

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rcl_interfaces.msg import FloatingPointRange, ParameterDescriptor, SetParametersResult
from rclpy.clock import ClockChange, JumpThreshold
from rclpy.duration import Duration
from rclpy.exceptions import ParameterException, ParameterUninitializedException
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.qos_overriding_options import QoSOverridingOptions
from rclpy.time import Time
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String
from trajectory_msgs.msg import JointTrajectory

from ..control.controller import FeedforwardController
from ..control.trajectory import Trajectory
from .conversions import derivatives_message, joint_trajectory_to_dict, stamp_to_sec
from .flatness_output import FlatnessOutput
from .parameters import (DOUBLE_ARRAY_PARAMETERS, MAX_SUSTAINED_RATE,
                         STRING_ARRAY_PARAMETERS, check_config,
                         check_runtime, joint_name_problem, load_robot, parameter_table,
                         rest_positions)
from .runner import run

try:  # rclpy >= 7.1.4 (Jazzy backport) and later distributions
    from rclpy.experimental.events_executor import EventsExecutor
except ImportError:  # pragma: no cover - depends on the installed rclpy
    EventsExecutor = None

NODE_NAME = "feedforward_node"
DIAGNOSTICS_PERIOD_NS = 1_000_000_000
MAX_BACKLOG = 5             # cycles a late loop may catch up before it resyncs
RATE_SHORTFALL = 0.98        # achieved / requested rate below this: WARN (diagnostics and log)
WAITING_LOG_PERIOD_S = 30.0  # "waiting for the first joint state" repeats at most this often

# Keep-last 1 everywhere on the control path (see the module docstring for the reasons); fresh
# profiles per entity, since QoS overrides (``qos_overrides.<topic>...`` parameters) modify them.


def qos_joint_states():
    """Best effort, keep last 1: the freshest state; matches reliable publishers too."""
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1,
                      reliability=ReliabilityPolicy.BEST_EFFORT,
                      durability=DurabilityPolicy.VOLATILE)


def qos_control():
    """Reliable, keep last 1: serves reliable and best-effort subscribers, never queues."""
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1,
                      reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.VOLATILE)


def qos_description():
    """Reliable, transient local, keep last 1: what robot_state_publisher offers."""
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1,
                      reliability=ReliabilityPolicy.RELIABLE,
                      durability=DurabilityPolicy.TRANSIENT_LOCAL)


class ConfigurationError(ValueError):
    """A parameter value the node cannot start with."""


def _float_range(lo, hi):
    return [FloatingPointRange(from_value=float(lo), to_value=float(hi), step=0.0)]


def _attach(msg, field, n):
    """Give ``msg.<field>`` (``float64[]``) n zeros and return a NumPy view of the stored array.

    The view is taken on what the message stores after the assignment: depending on
    ``ROS_PYTHON_CHECK_FIELDS`` the generated setter keeps the ``array.array`` or copies it.
    """
    setattr(msg, field, array.array("d", bytes(8 * n)))
    return np.frombuffer(getattr(msg, field), dtype=np.float64)


class _Messages:
    """Preallocated output messages for m joints.

    Every ``float64[]`` field holds one ``array.array`` for the node's lifetime; a cycle only
    writes new values into it through a NumPy view and sets the stamp fields, so publishing
    allocates no new arrays. ``publish`` serialises the message at once, so overwriting the
    buffers in the next cycle is safe.
    """

    def __init__(self, joint_names, with_motor):
        n = len(joint_names)
        names = list(joint_names)
        self.torque = Float64MultiArray()
        self.tau = _attach(self.torque, "data", n)
        self.motor_torque = Float64MultiArray()
        self.u = _attach(self.motor_torque, "data", n)
        self.feedforward = JointState()
        self.feedforward.name = names
        self.ff_views = [_attach(self.feedforward, f, n)
                         for f in ("position", "velocity", "effort")]
        self.derivatives = derivatives_message(n)
        self.taus = _attach(self.derivatives, "data", 3 * n).reshape(3, n)
        self.motor = None
        self.motor_views = []
        if with_motor:
            self.motor = JointState()
            self.motor.name = list(names)
            self.motor_views = [_attach(self.motor, f, n)
                                for f in ("position", "velocity", "effort")]


class FeedforwardNode(Node):
    """The feedforward node. See the module docstring for topics, QoS and timing.

    Args:
        node_name: node name (default ``feedforward_node``).
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
            self._refuse(f"parameter: {exc}", exc)
        try:
            self._config = self._read_config()
        except ConfigurationError as exc:
            self._refuse(str(exc), exc)
        self._rate = self._config["control_rate"]

        self._controller = None           # set once a robot model is loaded
        self._messages = None
        self._js = None                   # (JointState, receive time [s]) — latest only
        self._js_done = None
        self._js_event = threading.Event()
        self._stop = threading.Event()
        self._loader_event = threading.Event()
        self._pending_description = None
        self._pending_lock = threading.Lock()
        self._dropped_before_model = 0
        self._load_error = ""
        self._late_ns = np.zeros(1000)    # wake-up lateness of recent cycles (diagnostics)
        self._late_count = 0
        self._overruns = 0
        self._waiting_logged = None       # monotonic time of the last "waiting for" message
        self._clock_jumps_logged = 0
        self._rej_logged_at = -math.inf    # monotonic time of the last rejection WARN
        self._rej_logged_counts = {}

        self._warn_if_fast(self._rate)
        built = None
        if self._config["robot_description"]:
            # before any publisher or subscription: a refused model leaves nothing behind
            try:
                built = self._build(self._config["robot_description"])
            except Exception as exc:  # noqa: BLE001 - every failure is a configuration error
                self._refuse(f"robot_description parameter: {exc}", exc)

        # users may override history/depth/reliability: qos_overrides.<topic>.<entity>.<policy>
        override = QoSOverridingOptions.with_default_policies
        self._pub_torque = self.create_publisher(
            Float64MultiArray, "~/torque", qos_control(), qos_overriding_options=override())
        self._pub_feedforward = self.create_publisher(
            JointState, "~/feedforward", qos_control(), qos_overriding_options=override())
        self._pub_derivatives = self.create_publisher(
            Float64MultiArray, "~/torque_derivatives", qos_control(),
            qos_overriding_options=override())
        self._pub_motor = None
        if self._config["actuator"].get("actuator.type", "rigid") != "rigid":
            self._pub_motor = self.create_publisher(
                JointState, "~/motor_reference", qos_control(),
                qos_overriding_options=override())
        self._flat = None                 # FlatnessOutput, with the robot model
        self._motor_js = None             # latest motor_states (JointState, receive time [s])
        self._motor_recent = collections.deque(maxlen=4)   # the last few, paired by stamp
        self._pub_motor_torque = None
        if self._config["flatness"] is not None:
            self._pub_motor_torque = self.create_publisher(
                Float64MultiArray, "~/motor_torque", qos_control(),
                qos_overriding_options=override())
            self.create_subscription(JointState, "motor_states", self._on_motor_state,
                                     qos_joint_states(), qos_overriding_options=override())
        self._pub_diagnostics = self.create_publisher(DiagnosticArray, "/diagnostics", 10)

        self.create_subscription(JointState, "joint_states", self._on_joint_state,
                                 qos_joint_states(), qos_overriding_options=override())
        self.create_subscription(JointTrajectory, "~/joint_trajectory", self._on_trajectory,
                                 qos_control(), qos_overriding_options=override())
        if built is not None:
            self._install(built)
        else:
            self.create_subscription(String, "robot_description", self._on_description,
                                     qos_description())
            self.get_logger().info("waiting for a robot model on the robot_description topic")
        self.add_on_set_parameters_callback(self._validate_parameters)
        self.add_post_set_parameters_callback(self._apply_parameters)

        self._loader = threading.Thread(target=self._loader_loop, name="ff_loader", daemon=True)
        self._loader.start()
        self._thread = threading.Thread(target=self._control_loop, name="ff_control",
                                        daemon=True)
        self._thread.start()

    def _refuse(self, text, cause):
        """Destroy the half-built node (its rcl handle, parameter services and any entity made
        so far: the caller never gets an object to destroy) and raise ConfigurationError."""
        Node.destroy_node(self)
        raise ConfigurationError(text) from cause

    # -- parameters ---------------------------------------------------------------------------
    def _declare_parameters(self):
        for name, (default, text, read_only, limits) in parameter_table().items():
            desc = ParameterDescriptor(description=text, read_only=read_only)
            if limits is not None:
                desc.floating_point_range = _float_range(*limits)
            if name in STRING_ARRAY_PARAMETERS:
                # no default: an empty list would be typed as a byte array by rclpy
                self.declare_parameter(name, Parameter.Type.STRING_ARRAY, desc)
            elif name in DOUBLE_ARRAY_PARAMETERS:
                self.declare_parameter(name, Parameter.Type.DOUBLE_ARRAY, desc)
            elif name.startswith("actuator.") and not isinstance(default, str):
                # one number for every joint or one per joint: both types accepted
                desc.dynamic_typing = True
                self.declare_parameter(name, _as_parameter_value(default), desc)
            else:
                self.declare_parameter(name, default, desc)

    def _param(self, name):
        try:
            return self.get_parameter(name).value
        except ParameterUninitializedException:
            return None

    def _read_config(self):
        """All parameters, checked; raises ConfigurationError naming the parameter."""
        try:
            return check_config({name: self._param(name) for name in parameter_table()})
        except ValueError as exc:
            raise ConfigurationError(str(exc)) from exc

    def _validate_parameters(self, params):
        for p in params:
            reason = check_runtime(p.name, p.value)
            if reason:
                return SetParametersResult(successful=False, reason=reason)
        return SetParametersResult(successful=True)

    def _warn_if_fast(self, rate):
        if rate > MAX_SUSTAINED_RATE:
            self.get_logger().warn(
                f"control_rate {rate:g} Hz: a Python control loop rarely sustains more than "
                f"{MAX_SUSTAINED_RATE:g} Hz; the achieved rate is reported in /diagnostics and "
                f"logged when it falls short. For hardware-rate feedforward use "
                f"feedforward_proxy with joint_trajectory_controller.")

    def _apply_parameters(self, params):
        for p in params:
            if p.name == "control_rate":
                self._rate = float(p.value)
                self._warn_if_fast(self._rate)
                self._js_event.set()   # wake the loop so it picks up the new mode
            elif p.name == "joint_state_timeout":
                self._config["joint_state_timeout"] = float(p.value)
                if self._controller is not None:
                    self._controller.joint_state_timeout = float(p.value)

    # -- robot model --------------------------------------------------------------------------
    def _build(self, urdf):
        """URDF text (+ the ``loops``) → (robot, joints, actuator); compiles/warms the kernels
        before it goes live."""
        cfg = self._config
        try:
            robot, note = load_robot(urdf, cfg)
        except ValueError as exc:
            text = str(exc)
            if "mimic" in text:
                text += ("; this version models mimic joints only as locked joints: set the "
                         "node parameter locked_joints, e.g. ['<mimic joint name>'] or "
                         "['<name>:<position>']")
            raise ValueError(text) from exc
        if note:
            self.get_logger().warn(note)
        joints = cfg["joints"] or list(robot.joint_names)
        problem = joint_name_problem(robot, joints, "joints")
        if problem:
            raise ValueError(problem)
        actuator = _make_actuator(cfg["actuator"], len(joints))
        _warm_up(robot, joints, actuator)
        flat = self._build_flatness(robot, joints)
        return robot, joints, actuator, flat

    def _build_flatness(self, robot, joints):
        """The FlatnessOutput of this model (None without ``flatness.enabled``), warmed up."""
        fc = self._config["flatness"]
        if fc is None:
            return None
        if hasattr(robot, "loop_names"):
            raise ValueError("flatness.enabled: not available for a closed-loop robot")
        T = fc["sample_time"]
        if T is None:   # the node's own period; a VSA has no lead
            vsa = self._config["actuator"].get("actuator.type") == "vsa"
            T = 0.0 if vsa or self._rate <= 0.0 else 1.0 / self._rate
        flat = FlatnessOutput(robot, joints, self._config["actuator"], poles=fc.get("poles"),
                              bandwidth=fc.get("bandwidth"), damping=fc.get("damping"),
                              sample_time=T, delay=fc.get("delay", 0.0))
        q0 = rest_positions(robot)
        flat.controller.command(q0, 0 * q0, q0, 0 * q0, np.stack([q0] + [0 * q0] * 4))
        return flat

    def _install(self, built):
        robot, joints, actuator, flat = built
        self._flat = None   # never a new model's controller with the old output (or back)
        if self._controller is None:
            ctl = FeedforwardController(robot, joints=joints, actuator=actuator,
                                        joint_state_timeout=self._config["joint_state_timeout"])
            self._messages = _Messages(ctl.joints, actuator is not None)
            self._controller = ctl   # published last: the control thread starts using it now
        else:
            self._controller.swap_robot(robot)
        self._flat = flat
        self._load_error = ""
        loops = getattr(robot, "loop_names", ())
        closed = (f" (closed loops {list(loops)}; {len(robot.full_joint_names)} joints in all, "
                  f"the dependent ones {list(robot.dependent_joint_names)} follow)"
                  if loops else "")
        self.get_logger().info(
            f"robot model: {robot.n} joints, {robot.total_mass:.3f} kg{closed}; "
            f"controlling {list(self._controller.joints)}")

    def _on_description(self, msg):
        with self._pending_lock:
            self._pending_description = msg.data
        self._loader_event.set()

    def _loader_loop(self):
        while not self._stop.is_set():
            if not self._loader_event.wait(0.2):
                continue
            self._loader_event.clear()
            with self._pending_lock:
                text, self._pending_description = self._pending_description, None
            if not text:
                continue
            try:
                self._install(self._build(text))
            except Exception as exc:  # noqa: BLE001 - keep the old model, report
                self._load_error = str(exc)
                if self._controller is None:
                    self.get_logger().error(f"robot_description rejected (no model loaded "
                                            f"yet, nothing is published): {exc}")
                else:
                    self.get_logger().error(f"robot_description rejected, keeping the "
                                            f"previous model: {exc}")

    # -- inputs: store only -------------------------------------------------------------------
    def _now(self):
        return self.get_clock().now().nanoseconds * 1e-9

    def _on_joint_state(self, msg):
        self._js = (msg, self._now())
        if self._rate <= 0.0:
            self._js_event.set()

    def _on_motor_state(self, msg):
        entry = (msg, self._now())
        self._motor_recent.append(entry)   # deque: thread-safe append, the last four kept
        self._motor_js = entry

    def _on_trajectory(self, msg):
        # The spline is built here, in the executor thread, never in the control loop; the
        # controller's lock is held only to swap the result in.
        ctl = self._controller
        if ctl is None:
            self._dropped_before_model += 1
            self.get_logger().warn("trajectory dropped: no robot model yet",
                                   throttle_duration_sec=1.0)
            return
        ok = ctl.set_trajectory(joint_trajectory_to_dict(msg), now=self._now(),
                                start_time=stamp_to_sec(msg.header.stamp))
        if not ok:
            self.get_logger().warn(f"trajectory rejected: {ctl.last_rejection}")

    # -- control loop -------------------------------------------------------------------------
    def _set_realtime_priority(self):
        """SCHED_FIFO for the control thread when asked for and permitted; logged either way."""
        prio = self._config.get("realtime_priority", 0)
        if not prio:
            return
        try:
            # pid 0: the calling thread (Linux schedules threads individually)
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(prio))
        except (AttributeError, OSError) as exc:
            self.get_logger().warn(
                f"realtime_priority {prio}: SCHED_FIFO not permitted ({exc}); running with "
                f"the normal scheduler (grant rtprio, e.g. in /etc/security/limits.d)")
        else:
            self.get_logger().info(f"control thread runs SCHED_FIFO priority {prio}")

    def _on_time_jump(self, jump):
        """Clock jump callback (executor thread): wake the control loop's simulated-time wait."""
        if jump.clock_change in (ClockChange.ROS_TIME_ACTIVATED,
                                 ClockChange.ROS_TIME_DEACTIVATED):
            self._time_reset = True
        elif jump.delta.nanoseconds < 0:
            self._time_reset = True
        self._wake.set()

    def _sleep_sim(self, clock, deadline_ns):
        """Wait until the simulated time reaches ``deadline_ns``; False when it jumped back,
        the time source changed, or the node stops."""
        while not self._stop.is_set() and self.context.ok():
            self._wake.clear()
            if self._time_reset:
                self._time_reset = False
                return False
            if clock.now().nanoseconds >= deadline_ns:
                return True
            self._wake.wait(0.1)
        return False

    def _sleep_until(self, clock, deadline_ns):
        if clock.ros_time_is_active:
            return self._sleep_sim(clock, deadline_ns)
        self._time_reset = False
        # system time: a plain sleep to the deadline (rclpy's sleep_until registers a jump
        # callback and an event on every call, a measurable cost at 1 kHz)
        while True:
            remaining = deadline_ns - clock.now().nanoseconds
            if remaining <= 0:
                return True
            if self._stop.is_set() or clock.ros_time_is_active:
                return False
            time.sleep(min(remaining, 100_000_000) * 1e-9)

    def _control_loop(self):
        clock = self.get_clock()
        next_ns = None
        last_diag_ns = None
        self._wake = threading.Event()
        self._time_reset = False
        jump_handle = clock.create_jump_callback(
            JumpThreshold(min_forward=Duration(nanoseconds=1),
                          min_backward=Duration(nanoseconds=-1), on_clock_change=True),
            post_callback=self._on_time_jump)
        self._set_realtime_priority()
        try:
            while not self._stop.is_set() and self.context.ok():
                rate = self._rate
                if rate <= 0.0:
                    next_ns = None
                    if self._js_event.wait(0.1):
                        self._js_event.clear()
                        if self._rate <= 0.0:
                            self._step(clock.now())
                else:
                    period = int(round(1e9 / rate))
                    now_ns = clock.now().nanoseconds
                    # a late cycle is caught up (the next deadline keeps its phase) unless the
                    # loop fell more than MAX_BACKLOG periods behind: then it resyncs and those
                    # cycles are lost (counted as overruns)
                    if (next_ns is None or now_ns - next_ns > MAX_BACKLOG * period
                            or next_ns - now_ns > period):
                        if next_ns is not None and now_ns > next_ns:
                            self._overruns += 1
                        next_ns = now_ns            # start, overrun or time jump: resync
                    next_ns += period
                    if not self._sleep_until(clock, next_ns):
                        next_ns = None              # time jumped back, source changed, stop
                        continue
                    now = clock.now()
                    self._record_lateness(now.nanoseconds - next_ns)
                    self._step(now)
                now_ns = clock.now().nanoseconds
                if last_diag_ns is None or not 0 <= now_ns - last_diag_ns < DIAGNOSTICS_PERIOD_NS:
                    self._publish_diagnostics(now_ns, last_diag_ns)
                    last_diag_ns = now_ns
        except Exception as exc:  # noqa: BLE001 - shutdown races end the loop quietly
            if self.context.ok() and not self._stop.is_set():
                self.get_logger().fatal(f"control loop stopped: {exc!r}")
        finally:
            try:
                jump_handle.unregister()
            except Exception:  # noqa: BLE001 - the clock may be gone at shutdown
                pass

    def _record_lateness(self, late_ns):
        self._late_ns[self._late_count % self._late_ns.shape[0]] = late_ns
        self._late_count += 1

    def _step(self, now):
        ctl = self._controller
        if ctl is None:
            return
        js = self._js
        if js is not None and js is not self._js_done:
            msg, received = js
            ctl.set_joint_state(msg.name, msg.position, msg.velocity, stamp=received)
            self._js_done = js
        ns = now.nanoseconds
        if self._flat is not None and self._rate <= 0.0 and self._js_done is not None:
            ns = self._sample_time_ns(self._js_done[0], ns, ctl.joint_state_timeout)
        out = ctl.update(ns * 1e-9)
        if out.valid:
            self._publish(out, ns)
            flat = self._flat
            if flat is not None:
                self._publish_motor_torque(flat, ctl, out, ns * 1e-9)
        elif out.mode == "none":
            self._log_not_publishing(ctl)

    @staticmethod
    def _sample_time_ns(msg, now_ns, timeout):
        """The cycle time of a flatness cycle run once per joint state (``control_rate`` 0): the
        joint state's header stamp when it has one within ``timeout`` of the clock, else the
        clock. The clock is read when the sample is processed, after the simulator or driver
        may already have advanced it by a period: the desired jet would then be sampled one
        period ahead of the state on some cycles and not on others (measured in the MuJoCo
        co-simulation: link RMS 1.5e-3 rad instead of 1e-5, doc/guide/cosim.md)."""
        stamp_ns = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
        if stamp_ns > 0 and abs(now_ns - stamp_ns) * 1e-9 <= timeout:
            return stamp_ns
        return now_ns

    def _log_not_publishing(self, ctl):
        """One message while waiting for the first joint state, then at most every 30 s; one
        per clock jump."""
        if ctl.clock_jumps != self._clock_jumps_logged:
            self._clock_jumps_logged = ctl.clock_jumps
            self.get_logger().warn(f"{ctl.last_rejection}; publishing stops until fresh joint "
                                   "states arrive")
            return
        if self._js is None:
            t = time.monotonic()
            if self._waiting_logged is None:
                self.get_logger().info("waiting for the first joint state on "
                                       f"{self.resolve_topic_name('joint_states')}")
                self._waiting_logged = t
            elif t - self._waiting_logged >= WAITING_LOG_PERIOD_S:
                self.get_logger().info(f"still waiting for a joint state on "
                                       f"{self.resolve_topic_name('joint_states')}")
                self._waiting_logged = t

    def _publish(self, out, ns):
        m = self._messages
        m.tau[:] = out.tau
        self._pub_torque.publish(m.torque)
        ff = m.feedforward
        sec, nanosec = divmod(ns, 1_000_000_000)
        ff.header.stamp.sec = sec
        ff.header.stamp.nanosec = nanosec
        views = m.ff_views
        views[0][:] = out.q
        views[1][:] = out.qd
        views[2][:] = out.tau
        self._pub_feedforward.publish(ff)
        m.taus[:] = out.taus
        self._pub_derivatives.publish(m.derivatives)
        if m.motor is not None and self._pub_motor is not None:
            mr = m.motor
            mr.header.stamp.sec = sec
            mr.header.stamp.nanosec = nanosec
            views = m.motor_views
            views[0][:] = out.theta
            views[1][:] = out.theta_dot
            views[2][:] = out.tau_motor
            self._pub_motor.publish(mr)

    def _publish_motor_torque(self, flat, ctl, out, now):
        flat.clear_motor_states()
        for msg, received in tuple(self._motor_recent):
            flat.set_motor_state(msg.name, msg.position, msg.velocity, received,
                                 stamp_to_sec(msg.header.stamp))
        msg = self._js_done[0]
        u = flat.compute(now, (msg.name, msg.position, msg.velocity), ctl.desired, out.mode,
                         ctl.holding_last_point, ctl.joint_state_timeout,
                         stamp_to_sec(msg.header.stamp))
        if u is not None:
            self._messages.u[:] = u
            self._pub_motor_torque.publish(self._messages.motor_torque)

    # -- diagnostics --------------------------------------------------------------------------
    def _publish_diagnostics(self, now_ns, last_ns):
        status = DiagnosticStatus()
        status.name = f"{self.get_name()}: feedforward"
        status.hardware_id = self.get_fully_qualified_name()
        ctl = self._controller
        values = {"control_rate.target_hz": self._rate,
                  "loop.overruns": self._overruns,
                  "dropped_before_model": self._dropped_before_model}
        k = min(self._late_count, self._late_ns.shape[0])
        if k:
            p50, p99 = np.percentile(self._late_ns[:k], (50.0, 99.0)) * 1e-6
            values["loop.wake_late_p50_ms"] = round(float(p50), 4)
            values["loop.wake_late_p99_ms"] = round(float(p99), 4)
        if ctl is None:
            status.level = DiagnosticStatus.ERROR if self._load_error else DiagnosticStatus.WARN
            status.message = ("no robot model: " + self._load_error if self._load_error
                              else "waiting for robot_description")
        else:
            d = ctl.diagnostics()
            cycles = d["cycles.trajectory"] + d["cycles.hold"] + d["cycles.none"]
            prev = getattr(self, "_diag_prev", None)
            if prev is not None and last_ns is not None and now_ns > last_ns:
                dt = (now_ns - last_ns) * 1e-9
                values["rate_achieved_hz"] = round((cycles - prev[0]) / dt, 2)
                published = d["cycles.trajectory"] + d["cycles.hold"] - prev[1]
                values["rate_published_hz"] = round(published / dt, 2)
                new_rejections = d["rejected.total"] - prev[2]
            else:
                new_rejections = d["rejected.total"]
            self._diag_prev = (cycles, d["cycles.trajectory"] + d["cycles.hold"],
                               d["rejected.total"])
            counts = {k[len("rejected."):]: v for k, v in d.items()
                      if k.startswith("rejected.") and k != "rejected.total"}
            before = getattr(self, "_diag_counts", {})
            recent = {k: v - before.get(k, 0) for k, v in counts.items() if v > before.get(k, 0)}
            self._diag_counts = counts
            for key in ("compute.p50", "compute.p90", "compute.p99", "compute.max"):
                v = d.pop(key)
                values[key.replace("compute.", "compute_") + "_us"] = (
                    round(v * 1e6, 2) if math.isfinite(v) else "n/a")
            values.update(d)
            flat = self._flat
            if flat is not None:
                values.update(flat.diagnostics())
            achieved = values.get("rate_achieved_hz")
            short = (self._rate > 0.0 and achieved is not None
                     and achieved < RATE_SHORTFALL * self._rate)
            values["rate_met"] = not short
            # waiting for the first joint state is logged by _log_not_publishing
            noisy = {k: v for k, v in recent.items() if k != "no_joint_state"}
            # each problem is reported on its own; one does not hide another
            parts = []
            if short:
                text = f"control rate {achieved:g} Hz is below the requested {self._rate:g} Hz"
                parts.append(text)
                self.get_logger().warn(
                    text + f" (loop overruns {self._overruns}; wake-up lateness p99 "
                    f"{values.get('loop.wake_late_p99_ms', 'n/a')} ms)",
                    throttle_duration_sec=10.0)
            if new_rejections and (noisy or self._js is not None):
                text = ("rejected since last report: "
                        + ", ".join(f"{k}={v}" for k, v in recent.items())
                        + f"; last: {d['last_rejection']}")
                parts.append(text)
                if noisy:
                    self._log_rejections(counts, d["last_rejection"])
            elif self._js is None:
                parts.append("waiting for the first joint state")
            if self._load_error:
                parts.append("new robot_description rejected: " + self._load_error)
            if parts:
                status.level = DiagnosticStatus.WARN
                status.message = "; ".join(parts)
            else:
                status.level = DiagnosticStatus.OK
                status.message = "trajectory" if d["trajectory_active"] else "hold"
        status.values = [KeyValue(key=str(k), value=str(v)) for k, v in values.items()]
        arr = DiagnosticArray()
        arr.header.stamp = Time(nanoseconds=now_ns).to_msg()
        arr.status = [status]
        self._pub_diagnostics.publish(arr)

    def _log_rejections(self, counts, last):
        """WARN the rejections since the last *logged* report, at most about once a second
        (a logger throttle would drop a report whose counts then never reappear)."""
        t = time.monotonic()
        if t - self._rej_logged_at < 0.9:
            return
        base = self._rej_logged_counts
        new = {k: v - base.get(k, 0) for k, v in counts.items()
               if v > base.get(k, 0) and k != "no_joint_state"}
        if not new:
            return
        self._rej_logged_at = t
        self._rej_logged_counts = dict(counts)
        self.get_logger().warn("rejected: " + ", ".join(f"{k}={v}" for k, v in new.items())
                               + f"; last: {last}")

    # -- shutdown -----------------------------------------------------------------------------
    def destroy_node(self):
        """Stop the control and loader threads, then destroy the node."""
        self._stop.set()
        self._js_event.set()
        self._loader_event.set()
        for thread in (self._thread, self._loader):
            if thread.is_alive() and thread is not threading.current_thread():
                thread.join(timeout=1.0)
        return super().destroy_node()


def _warm_up(robot, joints, actuator):
    """Run every kernel a cycle uses once, off the control thread (loader thread or start-up):
    the first trajectory must not stall the loop with a first-call compile or cache load. At
    rest at :func:`~.parameters.rest_positions` (for a closed-loop robot its assembly: the
    actuated zero need not close the loops)."""
    n = robot.n
    q0 = rest_positions(robot)
    qs = np.zeros((5, n))
    qs[0] = q0
    robot.torque_derivatives(qs)
    robot.gravity_torques(q0)
    names = list(robot.joint_names)
    traj = Trajectory(names, [0.0, 0.1], np.stack([q0, q0]))
    traj.sample(0.05, out=qs)
    traj.sample_many(np.array([0.0, 0.05]))
    ctl = FeedforwardController(robot, joints=joints, actuator=actuator)
    ctl.set_joint_state(names, q0, stamp=0.0)
    ctl.set_trajectory({"joint_names": names,
                        "points": [{"time_from_start": 0.0, "positions": q0.tolist()},
                                   {"time_from_start": 0.1, "positions": q0.tolist()}]}, now=0.0)
    ctl.update(0.05)
    ctl.update(0.2)


def _make_actuator(params, n):
    from ..control.actuators import actuator_from_params

    return actuator_from_params(dict(params), n)


def _as_parameter_value(default):
    """Convert a Python default to a value rclpy can declare (number lists as float lists)."""
    if isinstance(default, (list, tuple, np.ndarray)):
        return [float(x) for x in default]
    return default


def make_executor(context=None):
    """Return the EventsExecutor where rclpy has it, else a SingleThreadedExecutor.

    The EventsExecutor (rclpy >= 7.1.4 on Jazzy) has lower latency and less jitter at 1 kHz
    (rclpy issues 1389 and 1452).
    """
    kwargs = {} if context is None else {"context": context}
    if EventsExecutor is not None:
        return EventsExecutor(**kwargs)
    return SingleThreadedExecutor(**kwargs)


#: GIL switch interval of the node process [s]. Python's default (5 ms) lets the executor
#: thread keep the GIL for up to 5 ms after the control thread's deadline; a shorter interval
#: bounds that wake-up delay (measured with bench/ros_rate.py).
SWITCH_INTERVAL_S = 2e-4


def main(args=None):
    """Entry point of ``ros2 run mbs_dynamics feedforward_node``; returns the exit code."""
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    return run(FeedforwardNode, NODE_NAME, args=args, make_executor=make_executor,
               config_errors=(ConfigurationError,))


if __name__ == "__main__":
    sys.exit(main())
