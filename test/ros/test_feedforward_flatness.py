"""In-process rclpy tests of feedforward_node's flatness output (``flatness.enabled``): the motor
torque published on ``~/motor_torque`` equals the ROS-free FlatnessController called on the same
measured link and motor states and the same desired trajectory (a consistency check: the law
itself is checked in MuJoCo by test/control/test_flatness_mujoco.py), and bad flatness
parameters stop the node at start-up with a ConfigurationError naming the problem.

The simulated time is stepped by the test (``use_sim_time``, ``/clock``) and ``control_rate: 0``
makes one cycle per joint state, so every published u has known inputs.
"""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

_MISSING = ""
try:  # ROS 2 is optional: without it every test here skips, one by one
    import rclpy
    from builtin_interfaces.msg import Duration as DurationMsg
    from rclpy.parameter import Parameter
    from rclpy.time import Time
    from rosgraph_msgs.msg import Clock
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    from mbs_dynamics.ros.conversions import joint_trajectory_to_dict
    from mbs_dynamics.ros.feedforward_node import ConfigurationError, FeedforwardNode
except ImportError as exc:
    _MISSING = str(exc)

# importable without ROS 2 (its own rclpy imports are guarded), so collection works everywhere
from test_feedforward_node import JOINTS, URDF, Harness  # noqa: E402

import mbs_dynamics as mbs  # noqa: E402
from mbs_dynamics.control.flatness import FlatnessController  # noqa: E402
from mbs_dynamics.control.trajectory import parse_joint_trajectory  # noqa: E402

pytestmark = pytest.mark.ros   # deselected where rclpy is missing (test/conftest.py)


@pytest.fixture(autouse=True)
def _needs_ros():
    """Skip each test without ROS 2."""
    if _MISSING:
        pytest.skip(f"ROS 2 is not available here ({_MISSING})")


K = np.array([800.0, 300.0])        # model order (shoulder, elbow)
B = np.array([0.3, 0.1])
D = np.array([0.05, 0.02])
POLES = np.array([[30.0, 35.0, 40.0, 45.0], [25.0, 30.0, 50.0, 60.0]])
ORDER = ["elbow", "shoulder"]       # the node's joints: reversed model order
PERM = [JOINTS.index(j) for j in ORDER]
T = 1e-3


def _flat_params(**extra):
    p = {"robot_description": URDF, "joints": ORDER, "control_rate": 0.0,
         "joint_state_timeout": 0.5, "actuator.type": "sea",
         "actuator.stiffness": K[PERM].tolist(), "actuator.motor_inertia": B[PERM].tolist(),
         "actuator.motor_damping": D[PERM].tolist(), "flatness.enabled": True,
         "flatness.poles": POLES[PERM].ravel().tolist(), "flatness.sample_time": T}
    p.update(extra)
    return p


class FlatHarness(Harness):
    """The feedforward harness plus ``~/motor_torque`` and a ``motor_states`` publisher."""

    def __init__(self, overrides, sim_time=True):
        super().__init__(overrides, sim_time=sim_time)
        self.msgs["motor_torque"] = []
        fq = self.node.get_fully_qualified_name()
        self.probe.create_subscription(Float64MultiArray, f"{fq}/motor_torque",
                                       self._store("motor_torque"), 10)
        self.motor_pub = self.probe.create_publisher(JointState, "motor_states", 10)

    def set_time(self, t_ns):
        self.clock_pub.publish(Clock(clock=Time(nanoseconds=t_ns).to_msg()))
        assert self.wait_for(lambda: self.node.get_clock().now().nanoseconds == t_ns)

    def send_states(self, x, names=JOINTS, motor=True, stamp_ns=0):
        """Motor state (received before the cycle), then the joint state that starts it, both
        stamped ``stamp_ns`` (0: unstamped)."""
        if motor:
            m = JointState(name=list(names)[::-1], position=[float(v) for v in x[2][::-1]],
                           velocity=[float(v) for v in x[3][::-1]])
            m.header.frame_id = f"m{id(x)}"
            if stamp_ns:
                m.header.stamp = Time(nanoseconds=stamp_ns).to_msg()
            self.motor_pub.publish(m)
            assert self.wait_for(lambda: self.node._motor_js is not None
                                 and self.node._motor_js[0].header.frame_id == f"m{id(x)}")
        js = JointState(name=["gripper"] + list(names), position=[0.0] + x[0].tolist(),
                        velocity=[0.0] + x[1].tolist())
        if stamp_ns:
            js.header.stamp = Time(nanoseconds=stamp_ns).to_msg()
        self.js_pub.publish(js)


@pytest.fixture
def flat_harness():
    made = []

    def make(**extra):
        h = FlatHarness(_flat_params(**extra))
        made.append(h)
        return h
    yield make
    for h in made:
        h.close()


def _reference():
    robot = mbs.load_urdf(URDF)
    return robot, FlatnessController(robot, stiffness=K, motor_inertia=B, motor_damping=D,
                                     poles=POLES, sample_time=T)


def _trajectory_message(q0, start_ns):
    msg = JointTrajectory()
    msg.header.stamp = Time(nanoseconds=start_ns).to_msg()
    msg.joint_names = list(ORDER)
    for t, dq in ((0.0, (0.0, 0.0)), (0.4, (0.3, -0.2)), (0.8, (0.5, 0.1))):
        p = JointTrajectoryPoint()
        p.positions = [float(q0[PERM[i]] + dq[PERM[i]]) for i in range(2)]
        p.time_from_start = DurationMsg(sec=0, nanosec=int(t * 1e9))
        msg.points.append(p)
    return msg


def test_motor_torque_equals_the_flatness_controller(flat_harness):
    h = flat_harness()
    robot, ref = _reference()
    rng = np.random.default_rng(7)
    q0 = np.array([0.3, -0.6])
    t_ns = 2_000_000_000
    h.set_time(t_ns)
    # hold before any trajectory: the measured pose of the first cycle is held (latched)
    held = np.zeros((5, 2))
    held[0] = q0
    for k in range(3):
        x = np.vstack([q0 + 0.01 * k, rng.normal(0, 0.1, 2), q0 + rng.normal(0, 0.01, 2),
                       rng.normal(0, 0.1, 2)])
        h.send_states(x)
        assert h.wait_for(lambda: h.count("motor_torque") == k + 1), k
        u = np.array(h.last("motor_torque").data)
        np.testing.assert_allclose(u, ref.command(*x, held)[PERM], rtol=1e-10, atol=1e-9)
    # a trajectory: u = FlatnessController.update at the node's trajectory time, with its
    # q_d⁽⁵⁾ backward difference over the 1 ms steps
    _check_trajectory_cycles(h, ref, rng, q0, t_ns + 5_000_000, 100_000_000, 0)


def _check_trajectory_cycles(h, ref, rng, q0, start_ns, offset_ns, clock_ahead_ns):
    """Start a trajectory at ``start_ns``; six cycles at ``start + offset + k ms``, the joint
    states stamped with that time when ``clock_ahead_ns`` > 0 and the clock that much ahead
    (else unstamped, the clock at that time): u equals FlatnessController.update there."""
    msg = _trajectory_message(q0, start_ns)
    traj = parse_joint_trajectory(joint_trajectory_to_dict(msg), strict=False).to_trajectory()
    ref.set_trajectory(traj)
    h.traj_pub.publish(msg)
    assert h.wait_for(lambda: h.node._controller.has_trajectory)
    count = h.count("motor_torque")
    for k in range(6):
        t_ns = start_ns + offset_ns + k * 1_000_000
        h.set_time(t_ns + clock_ahead_ns)
        x = np.vstack([q0 + rng.normal(0, 0.02, 2), rng.normal(0, 0.1, 2),
                       q0 + rng.normal(0, 0.02, 2), rng.normal(0, 0.1, 2)])
        h.send_states(x, stamp_ns=t_ns if clock_ahead_ns else 0)
        assert h.wait_for(lambda: h.count("motor_torque") == count + k + 1), k
        u = np.array(h.last("motor_torque").data)
        expect = ref.update((t_ns - start_ns) * 1e-9, *x)[PERM]
        np.testing.assert_allclose(u, expect, rtol=1e-9, atol=1e-8)


def test_a_cycle_per_joint_state_runs_at_its_stamp(flat_harness):
    """control_rate 0: the cycle of a stamped joint state samples the trajectory at the stamp,
    not at the clock — which a simulator (the MuJoCo co-simulation) may already have advanced by
    a period when the state is processed. u equals FlatnessController.update at the stamps (its
    q_d⁽⁵⁾ difference over their 1 ms steps); at the clock's time it would differ by q̇_d T."""
    h = flat_harness()
    robot, ref = _reference()
    t_ns = 3_000_000_000
    h.set_time(t_ns)
    # the simulator has stepped already: the clock is a period ahead of the joint state's stamp
    _check_trajectory_cycles(h, ref, np.random.default_rng(11), np.array([0.2, -0.4]),
                             t_ns + 5_000_000, 200_000_000, 1_000_000)


def test_no_motor_torque_without_fresh_motor_states(flat_harness):
    h = flat_harness()
    t_ns = 1_000_000_000
    h.set_time(t_ns)
    x = np.vstack([[0.3, -0.6], [0.0, 0.0], [0.3, -0.6], [0.0, 0.0]])
    h.send_states(x, motor=False)                       # no motor state yet
    assert h.wait_for(lambda: h.count("torque") == 1)
    time.sleep(0.1)
    assert h.count("motor_torque") == 0
    assert h.node._flat.rejections["no_motor_state"] == 1
    h.send_states(x)
    assert h.wait_for(lambda: h.count("motor_torque") == 1)
    h.set_time(t_ns + 600_000_000)                      # older than joint_state_timeout 0.5 s
    h.send_states(x, motor=False)
    assert h.wait_for(lambda: h.count("torque") == 2)
    time.sleep(0.1)
    assert h.count("motor_torque") == 1
    assert h.node._flat.rejections["stale_motor_state"] == 1


def test_flatness_parameters_are_declared(flat_harness):
    h = flat_harness()
    for name in ("flatness.enabled", "flatness.poles", "flatness.bandwidth", "flatness.damping",
                 "flatness.sample_time", "flatness.delay"):
        assert h.node.has_parameter(name), name
        assert h.node.describe_parameter(name).description, name
        assert h.node.describe_parameter(name).read_only, name


@pytest.mark.parametrize("extra, match", [
    ({"actuator.type": "rigid"}, "needs elastic joints"),
    ({"flatness.poles": [30.0, -35.0, 40.0, 45.0]}, "left half-plane"),
    ({"flatness.poles": [], "flatness.bandwidth": 0.0}, "exactly one of"),
    ({"actuator.stiffness": [800.0, 0.0]}, "stiffness"),                 # singular K
    ({"joints": ["shoulder"], "actuator.stiffness": 800.0, "actuator.motor_inertia": 0.3,
      "actuator.motor_damping": 0.0, "flatness.poles": [30.0] * 4}, "every joint"),
    ({"actuator.motor_inertia": [0.0, 0.1]}, "motor_inertia"),
])
def test_bad_flatness_configuration_refuses_to_start(extra, match):
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        params = _flat_params(**extra)
        if params["flatness.poles"] == []:
            del params["flatness.poles"]
        with pytest.raises(ConfigurationError, match=match):
            FeedforwardNode(context=context, parameter_overrides=[
                Parameter(k, value=v) for k, v in params.items()])
    finally:
        context.try_shutdown()


def test_motor_torque_at_control_rate_in_wall_time():
    """With a control rate and the default sample time (1/control_rate), u is published every
    cycle while joint and motor states flow."""
    params = _flat_params(control_rate=200.0)
    del params["flatness.sample_time"]
    h = FlatHarness(params, sim_time=False)
    stop = threading.Event()

    def feed():
        while not stop.is_set():
            h.motor_pub.publish(JointState(name=JOINTS, position=[0.3, -0.6],
                                           velocity=[0.0, 0.0]))
            h.js_pub.publish(JointState(name=JOINTS, position=[0.3, -0.6],
                                        velocity=[0.0, 0.0]))
            time.sleep(0.005)
    th = threading.Thread(target=feed, daemon=True)
    th.start()
    try:
        assert h.node._flat.sample_time == pytest.approx(1 / 200.0)
        assert h.wait_for(lambda: h.count("motor_torque") >= 50, timeout=10.0)
        robot, _ = _reference()
        ref = FlatnessController(robot, stiffness=K, motor_inertia=B, motor_damping=D,
                                 poles=POLES, sample_time=1 / 200.0)
        x = np.array([[0.3, -0.6], [0.0, 0.0], [0.3, -0.6], [0.0, 0.0]])
        held = np.zeros((5, 2))
        held[0] = x[0]
        np.testing.assert_allclose(h.last("motor_torque").data, ref.command(*x, held)[PERM],
                                   rtol=1e-10)
    finally:
        stop.set()
        th.join()
        h.close()
