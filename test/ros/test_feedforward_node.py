"""In-process rclpy tests of feedforward_node (skipped where ROS 2 is not installed).

The robot is a planar two-link arm (joints about +x, links along +y, gravity −z), whose inverse
dynamics has the textbook closed form (Spong, Hutchinson, Vidyasagar, *Robot Modeling and
Control*, §7.4): that is the oracle for every published torque.
"""
from __future__ import annotations

import math
import threading
import time

import numpy as np
import pytest

_MISSING = ""
try:  # ROS 2 is optional: without it every test here skips, one by one
    import rclpy
    from builtin_interfaces.msg import Duration as DurationMsg
    from diagnostic_msgs.msg import DiagnosticArray
    from rclpy.duration import Duration
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.parameter import Parameter
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from rclpy.time import Time
    from rosgraph_msgs.msg import Clock
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray, String
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    from mbs_dynamics.ros.feedforward_node import FeedforwardNode
except ImportError as exc:
    _MISSING = str(exc)

from mbs_dynamics.control.trajectory import Trajectory  # noqa: E402


pytestmark = pytest.mark.ros   # deselected where rclpy is missing (test/conftest.py)


@pytest.fixture(autouse=True)
def _needs_ros():
    """Skip each test without ROS 2."""
    if _MISSING:
        pytest.skip(f"ROS 2 is not available here ({_MISSING})")


M1, M2, L1, LC1, LC2, I1, I2, G = 2.0, 1.5, 0.6, 0.3, 0.25, 0.05, 0.03, 9.81

URDF = f"""<?xml version="1.0"?>
<robot name="two_link">
  <link name="base"/>
  <link name="link1">
    <inertial><origin xyz="0 {LC1} 0"/><mass value="{M1}"/>
      <inertia ixx="{I1}" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial>
  </link>
  <link name="link2">
    <inertial><origin xyz="0 {LC2} 0"/><mass value="{M2}"/>
      <inertia ixx="{I2}" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial>
  </link>
  <joint name="shoulder" type="revolute">
    <parent link="base"/><child link="link1"/><origin xyz="0 0 0"/><axis xyz="1 0 0"/>
    <limit lower="-3" upper="3" effort="100" velocity="5"/>
  </joint>
  <joint name="elbow" type="revolute">
    <parent link="link1"/><child link="link2"/><origin xyz="0 {L1} 0"/><axis xyz="1 0 0"/>
    <limit lower="-3" upper="3" effort="100" velocity="5"/>
  </joint>
</robot>
"""
JOINTS = ["shoulder", "elbow"]
Q_MEAS = np.array([0.3, -0.6])


def two_link_tau(q, qd, qdd):
    """Closed-form inverse dynamics of the planar 2R arm (angles from +y toward +z)."""
    c2, s2 = math.cos(q[1]), math.sin(q[1])
    m11 = I1 + I2 + M1 * LC1 ** 2 + M2 * (L1 ** 2 + LC2 ** 2 + 2 * L1 * LC2 * c2)
    m12 = I2 + M2 * (LC2 ** 2 + L1 * LC2 * c2)
    m22 = I2 + M2 * LC2 ** 2
    h = -M2 * L1 * LC2 * s2
    g1 = (M1 * LC1 + M2 * L1) * G * math.cos(q[0]) + M2 * LC2 * G * math.cos(q[0] + q[1])
    g2 = M2 * LC2 * G * math.cos(q[0] + q[1])
    return np.array([m11 * qdd[0] + m12 * qdd[1] + h * qd[1] ** 2 + 2 * h * qd[0] * qd[1] + g1,
                     m12 * qdd[0] + m22 * qdd[1] - h * qd[0] ** 2 + g2])


class Harness:
    """One context: the node under test, a probe node, and an executor spinning both."""

    def __init__(self, overrides, sim_time=False):
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        params = [Parameter(k, value=v) for k, v in overrides.items()]
        if sim_time:
            params.append(Parameter("use_sim_time", value=True))
        self.node = FeedforwardNode(context=self.context, parameter_overrides=params)
        self.probe = rclpy.create_node("probe", context=self.context)
        self.msgs = {k: [] for k in ("torque", "feedforward", "torque_derivatives",
                                     "motor_reference", "diagnostics")}
        self.lock = threading.Lock()
        fq = self.node.get_fully_qualified_name()
        for topic, typ in (("torque", Float64MultiArray), ("feedforward", JointState),
                           ("torque_derivatives", Float64MultiArray),
                           ("motor_reference", JointState)):
            self.probe.create_subscription(typ, f"{fq}/{topic}", self._store(topic), 10)
        self.probe.create_subscription(DiagnosticArray, "/diagnostics",
                                       self._store("diagnostics"), 10)
        self.js_pub = self.probe.create_publisher(JointState, "joint_states", 10)
        self.traj_pub = self.probe.create_publisher(JointTrajectory,
                                                    f"{fq}/joint_trajectory", 10)
        self.clock_pub = self.probe.create_publisher(Clock, "/clock", 10)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.executor.add_node(self.probe)
        self.thread = threading.Thread(target=self._spin, daemon=True)
        self.thread.start()

    def _spin(self):
        try:
            self.executor.spin()
        except Exception:  # noqa: BLE001 - ExternalShutdownException at teardown
            pass

    def _store(self, key):
        def cb(msg):
            with self.lock:
                self.msgs[key].append(msg)
        return cb

    def count(self, key):
        with self.lock:
            return len(self.msgs[key])

    def last(self, key):
        with self.lock:
            return self.msgs[key][-1]

    def clear(self):
        with self.lock:
            for v in self.msgs.values():
                v.clear()

    def wait_for(self, predicate, timeout=10.0):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if predicate():
                return True
            time.sleep(0.01)
        return False

    def send_joint_state(self, q=Q_MEAS, names=None, extra=True):
        msg = JointState()
        msg.header.stamp = self.probe.get_clock().now().to_msg()
        names = list(names or JOINTS)
        pos = [float(x) for x in q]
        if extra:   # extra joints in front, as a joint_state_broadcaster of a bigger robot
            names = ["gripper"] + names[::-1]
            pos = [0.0] + pos[::-1]
        msg.name = names
        msg.position = pos
        msg.velocity = [0.0] * len(names)
        self.js_pub.publish(msg)

    def close(self):
        self.executor.shutdown(timeout_sec=1.0)
        self.node.destroy_node()
        self.probe.destroy_node()
        self.context.try_shutdown()
        self.thread.join(timeout=2.0)


@pytest.fixture
def harness():
    made = []

    def make(overrides=None, sim_time=False):
        cfg = {"robot_description": URDF, "control_rate": 100.0}
        cfg.update(overrides or {})
        h = Harness(cfg, sim_time=sim_time)
        made.append(h)
        return h
    yield make
    for h in made:
        h.close()


def keep_sending(h, stop, q=Q_MEAS, period=0.01):
    while not stop.is_set():
        h.send_joint_state(q)
        time.sleep(period)


def test_hold_publishes_gravity_on_every_topic_at_rate(harness):
    h = harness()
    stop = threading.Event()
    sender = threading.Thread(target=keep_sending, args=(h, stop), daemon=True)
    sender.start()
    try:
        assert h.wait_for(lambda: min(h.count(k) for k in
                                      ("torque", "feedforward", "torque_derivatives")) >= 5)
        expected = two_link_tau(Q_MEAS, [0, 0], [0, 0])
        np.testing.assert_allclose(h.last("torque").data, expected, rtol=1e-9)
        ff = h.last("feedforward")
        assert list(ff.name) == JOINTS
        np.testing.assert_allclose(ff.position, Q_MEAS)
        np.testing.assert_allclose(ff.velocity, 0.0)
        np.testing.assert_allclose(ff.effort, expected, rtol=1e-9)
        d = h.last("torque_derivatives")
        assert [x.label for x in d.layout.dim] == ["order", "joint"]
        assert [x.size for x in d.layout.dim] == [3, 2]
        np.testing.assert_allclose(np.reshape(d.data, (3, 2))[0], expected, rtol=1e-9)
        np.testing.assert_allclose(np.reshape(d.data, (3, 2))[1:], 0.0)
        assert h.count("motor_reference") == 0            # rigid: no motor references
        # configured rate 100 Hz: loose bounds over 2 s (CI machines are noisy)
        h.clear()
        time.sleep(2.0)
        assert 100 <= h.count("torque") <= 300
        assert h.wait_for(lambda: h.count("diagnostics") >= 1, timeout=3.0)
    finally:
        stop.set()
        sender.join()


def test_trajectory_torque_matches_closed_form(harness):
    h = harness()
    stop = threading.Event()
    sender = threading.Thread(target=keep_sending, args=(h, stop), daemon=True)
    sender.start()
    try:
        assert h.wait_for(lambda: h.count("torque") >= 2)
        start = h.probe.get_clock().now() + Duration(seconds=0.3)
        msg = JointTrajectory()
        msg.header.stamp = start.to_msg()
        msg.joint_names = JOINTS[::-1]                      # any order
        points = [(0.0, Q_MEAS[::-1]), (1.0, Q_MEAS[::-1] + [0.5, -0.4]),
                  (2.0, Q_MEAS[::-1])]
        for t, q in points:
            p = JointTrajectoryPoint()
            p.positions = [float(x) for x in q]
            p.time_from_start = DurationMsg(sec=int(t), nanosec=int((t % 1) * 1e9))
            msg.points.append(p)
        h.traj_pub.publish(msg)
        ref = Trajectory(JOINTS[::-1], [p[0] for p in points],
                         [p[1] for p in points]).reorder(JOINTS)
        t_start = start.nanoseconds * 1e-9
        checked = 0
        deadline = time.monotonic() + 10.0
        while checked < 5 and time.monotonic() < deadline:
            time.sleep(0.05)
            ff = h.last("feedforward")
            t = ff.header.stamp.sec + 1e-9 * ff.header.stamp.nanosec - t_start
            if not 0.05 < t < 1.95:
                continue
            qs = ref.sample(t)
            np.testing.assert_allclose(ff.position, qs[0], atol=1e-6)
            np.testing.assert_allclose(ff.effort, two_link_tau(qs[0], qs[1], qs[2]),
                                       rtol=1e-5, atol=1e-5)
            checked += 1
        assert checked == 5
    finally:
        stop.set()
        sender.join()


def test_bad_messages_are_rejected_without_crash(harness):
    h = harness()
    stop = threading.Event()
    sender = threading.Thread(target=keep_sending, args=(h, stop), daemon=True)
    sender.start()
    ctl = h.node._controller
    try:
        assert h.wait_for(lambda: h.count("torque") >= 2)
        # The node samples only the latest joint state each cycle, so a bad one followed 10 ms
        # later by a good one may never be looked at: pause the stream while sending bad ones.
        stop.set()
        sender.join()
        bad = JointState()
        bad.name = JOINTS
        bad.position = [math.nan, 0.0]
        h.js_pub.publish(bad)
        assert h.wait_for(lambda: ctl.rejections["non_finite"] >= 1)
        short = JointState()
        short.name = JOINTS
        short.position = [0.1]
        h.js_pub.publish(short)
        assert h.wait_for(lambda: ctl.rejections["wrong_size"] >= 1)
        traj = JointTrajectory()
        traj.joint_names = ["shoulder", "unknown_joint"]
        p = JointTrajectoryPoint()
        p.positions = [0.0, 0.0]
        p.time_from_start = DurationMsg(sec=1)
        traj.points = [p]
        h.traj_pub.publish(traj)
        assert h.wait_for(lambda: ctl.rejections["unknown_joint"] >= 1)
        stop.clear()
        sender = threading.Thread(target=keep_sending, args=(h, stop), daemon=True)
        sender.start()
        h.clear()
        assert h.wait_for(lambda: h.count("torque") >= 3)   # still alive, still publishing
        for m in list(h.msgs["torque"]):
            assert np.isfinite(m.data).all()
        np.testing.assert_allclose(h.last("torque").data,
                                   two_link_tau(Q_MEAS, [0, 0], [0, 0]), rtol=1e-9)
    finally:
        stop.set()
        sender.join()


def test_stale_joint_states_stop_output(harness):
    h = harness({"joint_state_timeout": 0.1})
    h.send_joint_state()
    assert h.wait_for(lambda: h.count("torque") >= 1)
    time.sleep(0.3)
    h.clear()
    time.sleep(0.3)
    assert h.count("torque") == 0
    assert h.node._controller.rejections["stale_joint_state"] > 0


def test_sea_publishes_motor_references(harness):
    k = [1000.0, 500.0]
    h = harness({"actuator.type": "sea", "actuator.stiffness": k,
                 "actuator.motor_inertia": 0.2})
    stop = threading.Event()
    sender = threading.Thread(target=keep_sending, args=(h, stop), daemon=True)
    sender.start()
    try:
        assert h.wait_for(lambda: h.count("motor_reference") >= 2)
        mr = h.last("motor_reference")
        tau = two_link_tau(Q_MEAS, [0, 0], [0, 0])
        np.testing.assert_allclose(mr.position, Q_MEAS + tau / np.array(k), rtol=1e-9)
        np.testing.assert_allclose(mr.velocity, 0.0, atol=1e-12)
        np.testing.assert_allclose(mr.effort, tau, rtol=1e-9)
    finally:
        stop.set()
        sender.join()


def test_robot_description_from_transient_local_topic(harness):
    h = harness({"robot_description": ""})
    qos = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL)
    pub = h.probe.create_publisher(String, "robot_description", qos)
    pub.publish(String(data=URDF))               # before or after the node: latched
    assert h.wait_for(lambda: h.node._controller is not None)
    stop = threading.Event()
    sender = threading.Thread(target=keep_sending, args=(h, stop), daemon=True)
    sender.start()
    try:
        assert h.wait_for(lambda: h.count("torque") >= 2)
        np.testing.assert_allclose(h.last("torque").data,
                                   two_link_tau(Q_MEAS, [0, 0], [0, 0]), rtol=1e-9)
        # a new description swaps the model: a 10x heavier second link
        heavy = URDF.replace(f'<mass value="{M2}"/>', f'<mass value="{10 * M2}"/>')
        pub.publish(String(data=heavy))
        assert h.wait_for(lambda: h.node._controller.robot_swaps >= 1)
        h.clear()
        assert h.wait_for(lambda: h.count("torque") >= 2)
        g2 = 10 * M2 * LC2 * G * math.cos(Q_MEAS[0] + Q_MEAS[1])
        assert h.last("torque").data[1] == pytest.approx(g2, rel=1e-9)
        # a broken description is refused; the previous model stays
        pub.publish(String(data="<robot name='broken'>"))
        time.sleep(0.5)
        h.clear()
        assert h.wait_for(lambda: h.count("torque") >= 2)
        assert h.last("torque").data[1] == pytest.approx(g2, rel=1e-9)
    finally:
        stop.set()
        sender.join()


def test_use_sim_time_follows_clock(harness):
    h = harness(sim_time=True)
    stop = threading.Event()

    def sim():
        t_ns = 1_000_000_000
        while not stop.is_set():
            t_ns += 1_000_000
            h.clock_pub.publish(Clock(clock=Time(nanoseconds=t_ns).to_msg()))
            if t_ns % 10_000_000 == 0:
                h.send_joint_state()
            time.sleep(0.001)

    th = threading.Thread(target=sim, daemon=True)
    th.start()
    try:
        assert h.wait_for(lambda: h.count("feedforward") >= 3)
        stamp = h.last("feedforward").header.stamp
        t = stamp.sec + 1e-9 * stamp.nanosec
        assert 1.0 < t < 1000.0                   # sim time, not wall time
    finally:
        stop.set()
        th.join()
    # /clock stopped: sim time stands still, so nothing more is published
    time.sleep(0.2)
    n = h.count("feedforward")
    time.sleep(0.3)
    assert h.count("feedforward") == n


def test_control_rate_zero_publishes_once_per_joint_state(harness):
    h = harness({"control_rate": 0.0})
    for _ in range(5):
        h.send_joint_state()
        time.sleep(0.1)
    assert h.wait_for(lambda: h.count("torque") >= 4, timeout=3.0)
    time.sleep(0.3)
    assert h.count("torque") <= 5


def test_parameters_declared_with_descriptors_and_validated(harness):
    h = harness()
    node = h.node
    for name in ("robot_description", "joints", "base_link", "tip_link", "control_rate",
                 "gravity", "joint_state_timeout", "actuator.type", "actuator.stiffness",
                 "actuator.motor_inertia"):
        assert node.has_parameter(name), name
        assert node.describe_parameter(name).description, name
    assert node.describe_parameter("robot_description").read_only
    assert node.describe_parameter("control_rate").floating_point_range
    res = node.set_parameters([Parameter("control_rate", value=-5.0)])
    assert not res[0].successful
    res = node.set_parameters([Parameter("joint_state_timeout", value=0.5)])
    assert res[0].successful
    assert node._controller.joint_state_timeout == 0.5
    res = node.set_parameters([Parameter("gravity", value=[0.0, 0.0, 0.0])])
    assert not res[0].successful                     # read-only


def test_bad_configuration_refuses_to_start():
    from mbs_dynamics.ros.feedforward_node import ConfigurationError
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        for overrides in ({"robot_description": "<robot name='x'><link name='a'/>"},
                          {"robot_description": URDF, "joints": ["shoulder", "nope"]},
                          {"robot_description": URDF, "gravity": [0.0, 1.0]},
                          {"robot_description": URDF, "actuator.type": "sea",
                           "actuator.stiffness": -1.0}):
            with pytest.raises(ConfigurationError):
                FeedforwardNode(context=context, parameter_overrides=[
                    Parameter(k, value=v) for k, v in overrides.items()])
    finally:
        context.try_shutdown()


def test_after_a_trajectory_the_last_point_is_held(harness):
    """As joint_trajectory_controller: τ = g(q_final) at the desired final pose, even though the
    measured pose (joint states keep reporting Q_MEAS) never got there."""
    h = harness()
    stop = threading.Event()
    sender = threading.Thread(target=keep_sending, args=(h, stop), daemon=True)
    sender.start()
    try:
        assert h.wait_for(lambda: h.count("torque") >= 2)
        q_final = Q_MEAS + np.array([0.4, -0.3])
        msg = JointTrajectory()
        msg.joint_names = JOINTS
        for t, q in ((0.0, Q_MEAS), (0.3, q_final)):
            p = JointTrajectoryPoint()
            p.positions = [float(x) for x in q]
            p.time_from_start = DurationMsg(sec=0, nanosec=int(t * 1e9))
            msg.points.append(p)
        h.traj_pub.publish(msg)
        ctl = h.node._controller
        assert h.wait_for(lambda: ctl.trajectories_completed >= 1, timeout=10.0)
        h.clear()
        assert h.wait_for(lambda: h.count("feedforward") >= 3)
        ff = h.last("feedforward")
        np.testing.assert_allclose(ff.position, q_final, atol=1e-12)
        np.testing.assert_allclose(ff.velocity, 0.0, atol=0)
        np.testing.assert_allclose(ff.effort, two_link_tau(q_final, [0, 0], [0, 0]), rtol=1e-9)
        # an empty trajectory cancels: gravity at the measured pose again
        h.traj_pub.publish(JointTrajectory(joint_names=JOINTS))
        assert h.wait_for(lambda: not ctl.holding_last_point, timeout=10.0)
        h.clear()
        assert h.wait_for(lambda: h.count("torque") >= 3)
        np.testing.assert_allclose(h.last("torque").data, two_link_tau(Q_MEAS, [0, 0], [0, 0]),
                                   rtol=1e-9)
    finally:
        stop.set()
        sender.join()


def test_clock_jump_back_stops_output_until_fresh_joint_states(harness):
    h = harness({"joint_state_timeout": 0.1}, sim_time=True)
    stop = threading.Event()
    state = {"t_ns": 100_000_000_000, "send_js": True}

    def sim():
        while not stop.is_set():
            state["t_ns"] += 1_000_000
            h.clock_pub.publish(Clock(clock=Time(nanoseconds=state["t_ns"]).to_msg()))
            if state["send_js"] and state["t_ns"] % 10_000_000 == 0:
                h.send_joint_state()
            time.sleep(0.001)

    th = threading.Thread(target=sim, daemon=True)
    th.start()
    try:
        assert h.wait_for(lambda: h.count("feedforward") >= 3)
        state["send_js"] = False
        time.sleep(0.03)                          # in-flight states land on the old timeline
        state["t_ns"] = 1_000_000_000             # simulator reset: /clock back to 1 s
        ctl = h.node._controller
        assert h.wait_for(lambda: ctl.clock_jumps >= 1, timeout=10.0)
        time.sleep(0.3)
        with h.lock:
            after = [m for m in h.msgs["feedforward"]
                     if m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec < 50.0]
        assert after == []                        # nothing on the new timeline without states
        state["send_js"] = True
        assert h.wait_for(lambda: any(
            m.header.stamp.sec < 50 for m in list(h.msgs["feedforward"])), timeout=10.0)
    finally:
        stop.set()
        th.join()
