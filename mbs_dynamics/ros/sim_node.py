"""``sim_node``: the built-in simulator (:class:`mbs_dynamics.sim.Plant`) as a ROS 2 node, a
lightweight co-simulation peer for ``feedforward_node`` without Gazebo.

Each tick of a steady (wall-clock) timer at ``rate`` × ``real_time_factor`` advances the plant by
one period ``1 / rate`` (RK4, ``substeps`` steps) with the latest command held, then publishes
the state. The simulated time is exact whatever the timer jitter; with ``publish_clock: true`` it
is published on ``/clock`` so that nodes started with ``use_sim_time: true`` (feedforward_node)
follow it. The node itself must not use ``use_sim_time`` (it is the clock).

Command = ``commands`` (if fresh) + ``reference.effort`` (if fresh and ``reference_feedforward``)
+ ``kp (reference.position − x) + kd (reference.velocity − ẋ)`` (if fresh), where ``x`` is the
link position for rigid joints and the motor position θ for elastic ones; the command is the link
torque τ (rigid) or the motor torque τ_m (SEA/VSA). Wire ``commands`` to a pure effort stream
(``feedforward_node``'s ``~/torque``), or ``reference`` to a JointState carrying position,
velocity and effort (``~/feedforward`` for rigid, ``~/motor_reference`` for SEA), which makes the
node behave like a drive with an impedance loop. Until the first input arrives, and whenever every
input is older than ``command_timeout`` (simulated time), the joints are braked: positions held,
velocities zero (a stale torque is never repeated).

=========================  ======================================  ==============================
topic                      type                                    QoS
=========================  ======================================  ==============================
``commands`` (sub)         std_msgs/Float64MultiArray, n values    best effort, keep last 1
                           in ``joints`` order
``reference`` (sub)        sensor_msgs/JointState (by name)        best effort, keep last 1
``joint_states``           sensor_msgs/JointState: q, q̇, link      reliable, keep last 1
                           torque (τ, or the spring torque)
``motor_states``           sensor_msgs/JointState: θ, θ̇, τ_m       reliable, keep last 1
                           (elastic actuators only)
``/clock``                 rosgraph_msgs/Clock (``publish_clock``)  reliable, keep last 1
=========================  ======================================  ==============================

Best-effort subscriptions match reliable and best-effort publishers alike; reliable publishers
serve both kinds of subscriber (rclpy's ``/clock`` subscription is best effort).

Closed loops (parameters ``loops``, ``actuated``; :mod:`.parameters`): the robot is
``load_urdf(robot_description, loops=..., actuated=...)``, a ClosedLoopRobot simulated in its
actuated coordinates (RK4 on the constrained forward dynamics, the dependent joints assembled by
Newton at every evaluation: no drift). ``commands``, ``reference``, ``initial_positions`` (default:
the assembly of the URDF's zero), ``kp``/``kd`` and ``motor_states`` are about the actuated
joints; ``joint_states`` carries every joint of the mechanism (``robot.expand`` of the actuated
state: positions, velocities; effort τ on the actuated joints, 0 on the passive dependent ones),
so robot_state_publisher shows it whole.
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock as ClockMsg
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from ..control.actuators import ACTUATOR_PARAMETERS, actuator_from_params
from ..sim.simulator import Plant
from .parameters import (LOOP_PARAMETERS, _loop_config, joint_name_problem, load_robot,
                         rest_positions)
from .runner import run

NODE_NAME = "sim_node"
BUNDLED_URDF = Path(__file__).resolve().parents[1] / "data" / "robots" / "arm7.urdf"

QOS_IN = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1,
                    reliability=ReliabilityPolicy.BEST_EFFORT,
                    durability=DurabilityPolicy.VOLATILE)
QOS_OUT = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1,
                     reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.VOLATILE)


class ConfigurationError(ValueError):
    """A parameter value the node cannot start with."""


def _range(lo, hi):
    return [FloatingPointRange(from_value=float(lo), to_value=float(hi), step=0.0)]


def _gains(value, n, name):
    v = np.array([float(x) for x in (value or [])], dtype=float)
    if v.size == 0:
        return np.zeros(n)
    if v.size == 1:
        v = np.full(n, v[0])
    if v.shape != (n,) or not np.all(np.isfinite(v)) or np.any(v < 0):
        raise ConfigurationError(f"{name} must be one number or {n} numbers, each >= 0, "
                                 f"got {list(value)}")
    return v


class SimNode(Node):
    """The simulator node (see the module docstring for topics, QoS and timing).

    Args:
        node_name: node name (default ``sim_node``).
        **kwargs: passed to :class:`rclpy.node.Node` (``parameter_overrides``, ``context`` …).

    Raises:
        ConfigurationError: an invalid parameter or a URDF that does not load.
    """

    def __init__(self, node_name=NODE_NAME, **kwargs):
        super().__init__(node_name, **kwargs)
        self._declare()
        cfg = self._config()
        try:
            robot, note = load_robot(cfg["urdf"], cfg)
        except ValueError as exc:
            raise ConfigurationError(f"robot_description does not load: {exc}") from exc
        if note:
            self.get_logger().warn(note)
        n = robot.n
        self._robot = robot
        self._names = list(robot.joint_names)
        # a closed-loop robot is simulated in its actuated coordinates; joint_states carries
        # every joint of the mechanism (robot.expand), so robot_state_publisher shows it whole
        self._closed = bool(getattr(robot, "loop_names", ()))
        lie = getattr(robot, "lie_joints", None)
        if lie:
            name = next(iter(lie))
            raise ConfigurationError(
                f"joint '{name}' ({lie[name]}) inside the loops: sim_node publishes every joint "
                "of the mechanism on joint_states, which cannot carry its pose; the "
                "feedforward node and the proxy take this robot (their joints are the actuated "
                "ones)")
        if cfg["joints"]:
            if sorted(cfg["joints"]) != sorted(self._names):
                why = joint_name_problem(robot, cfg["joints"], "joints") or ""
                raise ConfigurationError(f"joints must be a permutation of the model's joints "
                                         f"{self._names}, got {cfg['joints']}"
                                         + (f" ({why})" if why else ""))
            self._cmd_index = np.array([self._names.index(j) for j in cfg["joints"]])
        else:
            self._cmd_index = np.arange(n)
        try:
            actuator = actuator_from_params(cfg["actuator"], n)
        except ValueError as exc:
            raise ConfigurationError(str(exc)) from exc
        q0 = rest_positions(robot) if self._closed else None
        if cfg["initial_positions"]:
            q0 = np.array([float(x) for x in cfg["initial_positions"]])
            if q0.shape != (n,) or not np.all(np.isfinite(q0)):
                raise ConfigurationError(f"initial_positions must be {n} finite numbers "
                                         f"(model order {self._names})")
        if self._closed:
            try:
                robot.expand(q0)
            except ValueError as exc:
                raise ConfigurationError(f"initial_positions {q0.tolist()}: {exc}") from exc
        dt = 1.0 / cfg["rate"]
        try:
            self._plant = Plant(robot, actuator, dt, cfg["substeps"], q0=q0)
        except ValueError as exc:
            raise ConfigurationError(str(exc)) from exc
        self._kp = _gains(cfg["kp"], n, "kp")
        self._kd = _gains(cfg["kd"], n, "kd")
        self._cfg = cfg
        self._elastic = actuator is not None

        # latest inputs (stored by the callbacks, read by the tick; one executor thread)
        self._cmd = np.zeros(n)
        self._cmd_time = -math.inf
        self._ref = np.zeros((3, n))            # position, velocity, effort (model order)
        self._ref_has = np.zeros(3, dtype=bool)
        self._ref_time = -math.inf
        self._ref_map = (None, None)            # (names tuple, index array)
        self._u = np.zeros(n)
        self.steps = 0
        self.braked_steps = 0
        self.rejected = 0

        self._pub_js = self.create_publisher(JointState, "joint_states", QOS_OUT)
        self._js = JointState()
        self._js.name = list(robot.full_joint_names if self._closed else self._names)
        self._effort_full = np.zeros(len(self._js.name))
        self._pub_motor = None
        if self._elastic:
            self._pub_motor = self.create_publisher(JointState, "motor_states", QOS_OUT)
            self._ms = JointState()
            self._ms.name = list(self._names)
        self._pub_clock = (self.create_publisher(ClockMsg, "/clock", QOS_OUT)
                           if cfg["publish_clock"] else None)
        self._clock_msg = ClockMsg()
        self.create_subscription(Float64MultiArray, "commands", self._on_command, QOS_IN)
        self.create_subscription(JointState, "reference", self._on_reference, QOS_IN)
        period = dt / cfg["real_time_factor"]
        self._timer = self.create_timer(period, self._tick,
                                        clock=Clock(clock_type=ClockType.STEADY_TIME))
        closed = (f", closed loops {list(robot.loop_names)}: {n} actuated of "
                  f"{len(robot.full_joint_names)} joints, all on joint_states"
                  if self._closed else "")
        self.get_logger().info(
            f"simulating '{robot.model.name}' ({n} joints, {self._plant.kind}{closed}) at "
            f"{cfg['rate']:g} Hz x {cfg['real_time_factor']:g} real time"
            + (", publishing /clock" if cfg["publish_clock"] else ""))

    # -- parameters ---------------------------------------------------------------------------
    def _declare(self):
        d = ParameterDescriptor
        self.declare_parameter("robot_description", "", d(
            description="URDF XML of the simulated robot; empty: the bundled arm7.",
            read_only=True))
        self.declare_parameter("joints", [""], d(
            description="Order of the values in `commands` (a permutation of the model's "
                        "joints); empty: URDF order.", read_only=True))
        self.declare_parameter("rate", 1000.0, d(
            description="Simulation rate [Hz]: one RK4 period of 1/rate per tick.",
            read_only=True, floating_point_range=_range(1.0, 100000.0)))
        self.declare_parameter("substeps", 1, d(
            description="RK4 steps per period (raise for stiff springs).", read_only=True,
            integer_range=[IntegerRange(from_value=1, to_value=1000, step=1)]))
        self.declare_parameter("real_time_factor", 1.0, d(
            description="Simulated seconds per wall-clock second (best effort).",
            read_only=True, floating_point_range=_range(0.001, 1000.0)))
        self.declare_parameter("publish_clock", False, d(
            description="Publish the simulated time on /clock (for use_sim_time peers).",
            read_only=True))
        self.declare_parameter("gravity", [0.0, 0.0, -9.81], d(
            description="Gravitational acceleration [m/s^2] in the URDF root frame.",
            read_only=True))
        self.declare_parameter("initial_positions", [0.0], d(
            description="Initial link positions, model order; [0.0] or empty: all zero "
                        "(one value per joint otherwise).", read_only=True,
            dynamic_typing=True))
        self.declare_parameter("kp", [0.0], d(
            description="PD stiffness on `reference` (one value or one per joint) [N m/rad].",
            read_only=True, dynamic_typing=True))
        self.declare_parameter("kd", [0.0], d(
            description="PD damping on `reference` (one value or one per joint) [N m s/rad].",
            read_only=True, dynamic_typing=True))
        self.declare_parameter("reference_feedforward", True, d(
            description="Add reference.effort to the command.", read_only=True))
        self.declare_parameter("command_timeout", 0.5, d(
            description="Brake when every input is older than this [s, simulated]; 0: never.",
            floating_point_range=_range(0.0, 3600.0)))
        self.declare_parameter("loops", "", d(
            description=LOOP_PARAMETERS["loops"][1], read_only=True))
        self.declare_parameter("actuated", [""], d(
            description=LOOP_PARAMETERS["actuated"][1], read_only=True))
        for name, (default, text) in ACTUATOR_PARAMETERS.items():
            if isinstance(default, str):
                self.declare_parameter(name, default, d(description=text, read_only=True))
            else:
                self.declare_parameter(name, default, d(description=text, read_only=True,
                                                        dynamic_typing=True))

    def _config(self):
        p = self.get_parameter
        urdf = p("robot_description").value or BUNDLED_URDF.read_text()
        gravity = [float(g) for g in p("gravity").value]
        if len(gravity) != 3 or not all(math.isfinite(g) for g in gravity):
            raise ConfigurationError(f"gravity must be 3 finite numbers, got {gravity}")
        q0 = p("initial_positions").value
        q0 = [] if q0 is None or (len(q0) == 1 and float(q0[0]) == 0.0) else list(q0)
        act = {}
        for name in ACTUATOR_PARAMETERS:
            v = p(name).value
            act[name] = [float(x) for x in v] if isinstance(v, (list, tuple)) or hasattr(
                v, "typecode") else v
        joints = [j for j in (p("joints").value or []) if j]
        loops = {}
        try:
            _loop_config(loops, lambda name: p(name).value)
        except ValueError as exc:
            raise ConfigurationError(str(exc)) from exc
        return {
            **loops,
            "urdf": urdf, "gravity": tuple(gravity), "joints": joints,
            "rate": float(p("rate").value), "substeps": int(p("substeps").value),
            "real_time_factor": float(p("real_time_factor").value),
            "publish_clock": bool(p("publish_clock").value), "initial_positions": q0,
            "kp": _as_list(p("kp").value), "kd": _as_list(p("kd").value),
            "reference_feedforward": bool(p("reference_feedforward").value),
            "actuator": act,
        }

    # -- inputs -------------------------------------------------------------------------------
    def _on_command(self, msg):
        data = np.asarray(msg.data, dtype=float)
        if data.shape != self._cmd.shape or not np.all(np.isfinite(data)):
            self.rejected += 1
            self.get_logger().warn(f"commands: expected {self._cmd.size} finite values, got "
                                   f"{data.size}", throttle_duration_sec=1.0)
            return
        self._cmd[self._cmd_index] = data
        self._cmd_time = self._plant.t

    def _on_reference(self, msg):
        names = tuple(msg.name)
        if self._ref_map[0] != names:
            try:
                idx = np.array([names.index(j) for j in self._names])
            except ValueError:
                self.rejected += 1
                self.get_logger().warn(f"reference lacks joints of {self._names}",
                                       throttle_duration_sec=1.0)
                return
            self._ref_map = (names, idx)
        idx = self._ref_map[1]
        fields = (msg.position, msg.velocity, msg.effort)
        for k, f in enumerate(fields):
            if len(f) == 0:
                self._ref_has[k] = False
                continue
            v = np.asarray(f, dtype=float)
            if v.shape != (len(names),) or not np.all(np.isfinite(v[idx])):
                self.rejected += 1
                self.get_logger().warn("reference: a field has the wrong size or NaN/inf",
                                       throttle_duration_sec=1.0)
                return
        for k, f in enumerate(fields):
            if len(f):
                self._ref[k] = np.asarray(f, dtype=float)[idx]
                self._ref_has[k] = True
        self._ref_time = self._plant.t

    # -- the simulation tick ------------------------------------------------------------------
    def _fresh(self, stamp, timeout):
        return stamp > -math.inf and (timeout <= 0.0 or self._plant.t - stamp <= timeout)

    def _tick(self):
        plant = self._plant
        timeout = float(self.get_parameter("command_timeout").value)
        cmd_ok = self._fresh(self._cmd_time, timeout)
        ref_ok = self._fresh(self._ref_time, timeout)
        u = self._u
        if cmd_ok or ref_ok:
            u[:] = self._cmd if cmd_ok else 0.0
            if ref_ok:
                x, xd = (plant.theta, plant.thetad) if self._elastic else (plant.q, plant.qd)
                if self._ref_has[2] and self._cfg["reference_feedforward"]:
                    u += self._ref[2]
                if self._ref_has[0]:
                    u += self._kp * (self._ref[0] - x)
                if self._ref_has[1]:
                    u += self._kd * (self._ref[1] - xd)
                else:
                    u -= self._kd * xd
            try:
                plant.step(u)
            except ValueError as exc:
                self.get_logger().error(f"{exc}; braking", throttle_duration_sec=1.0)
                plant.hold()
                self.braked_steps += 1
        else:
            u[:] = 0.0
            plant.hold()
            self.braked_steps += 1
        self.steps += 1
        self._publish(u)

    def _publish(self, u):
        plant = self._plant
        sec = math.floor(plant.t)
        nsec = int(round((plant.t - sec) * 1e9))
        if nsec >= 1_000_000_000:
            sec, nsec = sec + 1, nsec - 1_000_000_000
        if self._pub_clock is not None:
            self._clock_msg.clock.sec, self._clock_msg.clock.nanosec = int(sec), nsec
            self._pub_clock.publish(self._clock_msg)
            stamp = self._clock_msg.clock
        else:
            stamp = self.get_clock().now().to_msg()
        tau_e = u if not self._elastic else plant.spring_torque()
        js = self._js
        js.header.stamp = stamp
        if self._closed:
            # every joint of the mechanism: the full positions and velocities of the actuated
            # state (Newton from the last assembly, then the differentiated closure); the
            # dependent joints are passive: zero joint torque
            try:
                X = self._robot.expand(np.stack([plant.q, plant.qd]))
            except ValueError as exc:
                self.get_logger().error(f"joint_states not published: {exc}",
                                        throttle_duration_sec=1.0)
                X = None
            if X is not None:
                eff = self._effort_full
                eff[self._robot.actuated_index] = tau_e
                js.position = X[0].tolist()
                js.velocity = X[1].tolist()
                js.effort = eff.tolist()
                self._pub_js.publish(js)
        else:
            js.position = plant.q.tolist()
            js.velocity = plant.qd.tolist()
            js.effort = np.asarray(tau_e, dtype=float).tolist()
            self._pub_js.publish(js)
        if self._pub_motor is not None:
            ms = self._ms
            ms.header.stamp = stamp
            ms.position = plant.theta.tolist()
            ms.velocity = plant.thetad.tolist()
            ms.effort = u.tolist()
            self._pub_motor.publish(ms)


def _as_list(value):
    if value is None:
        return []
    if isinstance(value, (int, float)):
        return [float(value)]
    return [float(x) for x in value]


def main(args=None):
    """Entry point of ``ros2 run mbs_dynamics sim_node``; returns the exit code."""
    return run(SimNode, NODE_NAME, args=args, config_errors=(ConfigurationError,))


if __name__ == "__main__":
    sys.exit(main())
