"""In-process rclpy tests of the nodes on closed-loop robots (issue 19; skipped test by test where
ROS 2 is not installed): the ``loops`` / ``actuated`` parameters of feedforward_node,
feedforward_proxy and sim_node.

Oracles: the constrained inverse dynamics and gravity written from Pinocchio in test_ros_loops
(``Oracle``); Pinocchio's closure error and LOCAL frame Jacobians of the loop frames for the
full-mechanism joint states of sim_node; and, end to end, a mechanism held by gravity torques
stays at rest.
"""
from __future__ import annotations

import re
import threading
import time

import numpy as np
import pytest
import yaml

import loops_mechanisms as lm

from launch_harness import (DEADLINE, MISSING, Float64MultiArray, JointState,
                            JointTrajectory, JointTrajectoryPoint, MultiThreadedExecutor,
                            Parameter, rclpy, spin_in_background, wait_matched,
                            wait_until)

_MISSING = MISSING   # ROS 2 is optional: without it every test here skips (_needs_ros)
if not _MISSING:
    from mbs_dynamics.ros.feedforward_node import ConfigurationError as NodeConfigError
    from mbs_dynamics.ros.feedforward_node import FeedforwardNode
    from mbs_dynamics.ros.sim_node import ConfigurationError as SimConfigError
    from mbs_dynamics.ros.sim_node import SimNode

try:
    import pinocchio  # noqa: F401
except ImportError:
    pinocchio = None


pytestmark = pytest.mark.ros   # deselected where rclpy is missing (test/conftest.py)


@pytest.fixture(autouse=True)
def _needs_ros():
    """Skip each test without ROS 2 (or without Pinocchio, the oracle)."""
    if _MISSING:
        pytest.skip(f"ROS 2 is not available here ({_MISSING})")
    if pinocchio is None:
        pytest.skip("pinocchio (the oracle) is not installed")


def mechanism(name):
    u, loops, act = lm.ALL[name]()
    return u, yaml.safe_dump({"loops": loops}), act


class World:
    """One context, the nodes under test and a probe node, spun by a multithreaded executor."""

    def __init__(self):
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.nodes = []
        self.probe = rclpy.create_node("loops_probe", context=self.context)
        self.msgs = {}
        self.lock = threading.Lock()
        self.executor = MultiThreadedExecutor(num_threads=4, context=self.context)
        self.executor.add_node(self.probe)
        self.thread = None

    def add(self, make, **params):
        node = make(context=self.context,
                    parameter_overrides=[Parameter(k, value=v) for k, v in params.items()])
        self.nodes.append(node)
        self.executor.add_node(node)
        return node

    def listen(self, key, typ, topic):
        def cb(msg):
            with self.lock:
                self.msgs.setdefault(key, []).append(msg)
        return self.probe.create_subscription(typ, topic, cb, 100)

    def start(self):
        self.thread = spin_in_background(self.executor)

    def count(self, key):
        with self.lock:
            return len(self.msgs.get(key, ()))

    def last(self, key):
        with self.lock:
            return self.msgs[key][-1]

    def clear(self, key):
        with self.lock:
            self.msgs[key] = []

    @staticmethod
    def wait_for(predicate, timeout=DEADLINE):
        return wait_until(predicate, timeout)

    def close(self):
        self.executor.shutdown(timeout_sec=2.0)
        for node in self.nodes:
            node.destroy_node()
        self.probe.destroy_node()
        self.context.try_shutdown()
        if self.thread is not None:
            self.thread.join(timeout=2.0)


def refused(make, error, match, **params):
    """``make`` (a node class) with these parameters raises ``error`` matching ``match``, in a
    context of its own."""
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    try:
        with pytest.raises(error, match=match):
            make(context=ctx, parameter_overrides=[Parameter(k, value=v)
                                                   for k, v in params.items()])
    finally:
        rclpy.try_shutdown(context=ctx)


@pytest.fixture
def world():
    made = []

    def make():
        w = World()
        made.append(w)
        return w
    yield make
    for w in made:
        w.close()


def test_feedforward_node_publishes_the_actuated_joints(world, tmp_path):
    """loops from a YAML file: full joint_states in (dependent joints ignored), ~/feedforward
    and ~/torque for the actuated joints = the oracle's g_a (hold) and τ_a (trajectory); a
    trajectory naming a dependent joint is rejected, counted, and the node keeps going."""
    from test_ros_loops import Oracle
    from mbs_dynamics.ros.parameters import rest_positions

    u, text, act = mechanism("parallelogram_arm")
    path = tmp_path / "pgram_loops.yaml"
    path.write_text(text)
    w = world()
    node = w.add(FeedforwardNode, robot_description=u, loops=str(path), actuated=act,
                 control_rate=100.0, joints=["wrist", "pitch", "drive", "yaw"])
    fq = node.get_fully_qualified_name()
    w.listen("ff", JointState, f"{fq}/feedforward")
    w.listen("tau", Float64MultiArray, f"{fq}/torque")
    js_pub = w.probe.create_publisher(JointState, "joint_states", 10)
    traj_pub = w.probe.create_publisher(JointTrajectory, f"{fq}/joint_trajectory", 10)
    w.start()
    orc = Oracle("parallelogram_arm")
    r = orc.r
    order = ["wrist", "pitch", "drive", "yaw"]
    perm = [list(r.joint_names).index(j) for j in order]
    q = rest_positions(r) + np.array([0.2, -0.1, 0.05, 0.4])
    full = r.copy().expand(q)
    stop = threading.Event()

    def send():
        while not stop.is_set():
            msg = JointState()
            msg.header.stamp = w.probe.get_clock().now().to_msg()
            msg.name = list(r.full_joint_names)            # every joint of the mechanism
            msg.position = full.tolist()
            msg.velocity = [0.0] * len(full)
            js_pub.publish(msg)
            time.sleep(0.01)
    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    try:
        assert w.wait_for(lambda: w.count("ff") >= 3 and w.count("tau") >= 3)
        ff = w.last("ff")
        assert list(ff.name) == order
        g = orc.gravity(q)[perm]
        np.testing.assert_allclose(ff.position, q[perm], rtol=0, atol=1e-12)
        np.testing.assert_allclose(ff.effort, g, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(w.last("tau").data, g, rtol=1e-9, atol=1e-12)

        ctl = node._controller
        bad = JointTrajectory()
        bad.joint_names = ["yaw", "drive", "pitch", "wrist", "elbow"]
        bad.points = [JointTrajectoryPoint(positions=[0.0] * 5)]
        bad.points[0].time_from_start.sec = 1
        wait_matched([traj_pub])          # sent once: not before discovery
        traj_pub.publish(bad)
        assert w.wait_for(lambda: ctl.rejections["unknown_joint"] >= 1)
        assert "dependent joints ['elbow']" in ctl.last_rejection

        # a trajectory of the actuated joints: at rest at its target after it ends
        target = q + np.array([0.1, 0.1, -0.1, 0.2])
        good = JointTrajectory()
        good.joint_names = list(r.joint_names)
        good.points = [JointTrajectoryPoint(positions=target.tolist())]
        good.points[0].time_from_start.nanosec = 300_000_000
        traj_pub.publish(good)
        assert w.wait_for(lambda: ctl.trajectories_completed >= 1)
        mark = node.get_clock().now().nanoseconds * 1e-9   # in flight: older messages first
        assert w.wait_for(lambda: w.last("ff").header.stamp.sec
                          + 1e-9 * w.last("ff").header.stamp.nanosec >= mark)
        ff = w.last("ff")
        np.testing.assert_allclose(ff.position, target[perm], rtol=0, atol=1e-12)
        np.testing.assert_allclose(ff.effort, orc.gravity(target)[perm], rtol=1e-9, atol=1e-12)
    finally:
        stop.set()
        sender.join()


def test_feedforward_node_refuses_dependent_joints_and_bad_loops():
    u, text, act = mechanism("planar_fourbar")
    for params, words in (
            ({"loops": text, "actuated": act, "joints": ["j_rocker"]},
             "['j_rocker'] are dependent joints"),
            ({"loops": "/no/such/loops.yaml"}, "no such file"),
            ({"actuated": act}, "needs loops"),
            ({"loops": text, "actuated": ["j_nope"]}, "'j_nope' is not a movable joint")):
        refused(FeedforwardNode, NodeConfigError, re.escape(words), robot_description=u,
                **params)


def test_sim_node_publishes_every_joint_of_the_mechanism(world):
    """joint_states of the four-bar: all 3 joints, the loop closed (Pinocchio), K q̇ = 0, the
    actuated entries = the plant's state, effort τ on the crank and 0 on the passive joints;
    commands and motor-free reference use the actuated joint only."""
    from test_ros_loops import Oracle

    u, text, act = mechanism("planar_fourbar")
    w = world()
    sim = w.add(SimNode, robot_description=u, loops=text, actuated=act, rate=200.0)
    w.listen("js", JointState, "joint_states")
    cmd = w.probe.create_publisher(Float64MultiArray, "commands", 10)
    w.start()
    orc = Oracle("planar_fourbar")
    assert w.wait_for(lambda: w.count("js") >= 3)
    js = w.last("js")
    assert list(js.name) == ["j_crank", "j_coupler", "j_rocker"]
    np.testing.assert_allclose(js.position, orc.r.q_assembled, atol=1e-12)   # braked at start
    stop = threading.Event()

    def push():
        while not stop.is_set():
            cmd.publish(Float64MultiArray(data=[3.0]))
            time.sleep(0.01)
    pusher = threading.Thread(target=push, daemon=True)
    pusher.start()
    try:
        assert w.wait_for(lambda: sim.steps - sim.braked_steps >= 40)
        t_mark = sim._plant.t           # a message still in flight is older: wait past it
        w.clear("js")
        assert w.wait_for(lambda: w.count("js") >= 1 and w.last("js").header.stamp.sec
                          + 1e-9 * w.last("js").header.stamp.nanosec >= t_mark - 1e-9)
        js = w.last("js")
        q, qd = np.array(js.position), np.array(js.velocity)
        assert abs(q[0] - orc.r.q_assembled[0]) > 1e-3            # it moved
        assert orc.P.closure_error(q) < 1e-10
        _, K = orc.G(q)
        assert np.abs(K @ qd).max() < 1e-9 * max(1.0, np.abs(qd).max())
        assert abs(qd[0]) > 1e-3
        np.testing.assert_allclose(js.effort, [3.0, 0.0, 0.0])
    finally:
        stop.set()
        pusher.join()
    refused(SimNode, SimConfigError, "dependent joints", robot_description=u, loops=text,
            actuated=act, joints=["j_rocker"])
    refused(SimNode, SimConfigError, r"initial_positions \[1.5\]: cannot assemble",
            robot_description=u, loops=text, actuated=["j_rocker"],
            initial_positions=[1.5])   # the rocker cannot reach 1.5 rad


def test_sim_and_feedforward_node_hold_a_parallelogram_arm_at_rest(world):
    """End to end over topics: sim_node's joint_states (every joint) → feedforward_node (hold:
    g_a at the measured pose) → ~/torque → sim_node's commands. Gravity compensation exactly
    balances the mechanism, so it stays at its initial pose (RK4 of q̈ = 0)."""
    from mbs_dynamics.ros.parameters import rest_positions

    u, text, act = mechanism("parallelogram_arm")
    w = world()
    sim = w.add(SimNode, robot_description=u, loops=text, actuated=act, rate=100.0,
                command_timeout=0.5)
    q0 = rest_positions(sim._robot).copy()
    ff = w.add(FeedforwardNode, robot_description=u, loops=text, actuated=act,
               control_rate=0.0, joint_state_timeout=0.0)
    ff_fq = ff.get_fully_qualified_name()
    torque_to_sim = w.probe.create_publisher(Float64MultiArray, "commands", 10)
    w.probe.create_subscription(Float64MultiArray, f"{ff_fq}/torque",
                                lambda m: torque_to_sim.publish(m), 10)
    w.start()
    ctl = ff._controller
    # Two counters on two executors' threads: the simulator may step again on a command that is
    # still fresh (command_timeout), so wait for both instead of inferring one from the other.
    assert w.wait_for(lambda: sim.steps - sim.braked_steps >= 100 and ctl.cycles["hold"] >= 100,
                      ), (sim.steps, sim.braked_steps, dict(ctl.cycles))
    assert np.abs(sim._plant.q - q0).max() < 1e-9
    assert np.abs(sim._plant.qd).max() < 1e-8
    assert ctl.joints == tuple(sim._robot.joint_names)


def test_proxy_enriches_goals_of_the_actuated_joints(tmp_path):
    """The proxy with loops: a goal of the crank is forwarded with effort = the oracle's τ_a at
    every point; a goal naming a dependent joint is answered INVALID_JOINTS, naming it."""
    from test_feedforward_proxy import Harness, goal_of
    from test_ros_loops import Oracle

    u, text, act = mechanism("planar_fourbar")
    orc = Oracle("planar_fourbar")
    q0 = orc.r.q_assembled[orc.r.actuated_index]
    h = Harness({"robot_description": u, "loops": text, "actuated": act, "sample_period": 0.05,
                 "enrich_lead_in": False})
    try:
        traj = JointTrajectory()
        traj.joint_names = ["j_crank"]
        for k, (t, x) in enumerate(((0.0, 0.0), (0.5, 0.3), (1.0, 0.5))):
            p = JointTrajectoryPoint(positions=[float(q0[0] + x)])
            p.time_from_start.sec, p.time_from_start.nanosec = int(t), int((t % 1) * 1e9)
            traj.points.append(p)
        handle = h.send(goal_of(traj))
        assert handle.accepted
        res = h.result(handle)
        assert res.status == 4, res.result.error_string           # STATUS_SUCCEEDED
        sent = h.fake.goals[-1].trajectory
        assert list(sent.joint_names) == ["j_crank"] and len(sent.points) == 21
        for p in sent.points:
            want = orc.tau(np.array(p.positions), np.array(p.velocities),
                           np.array(p.accelerations))
            np.testing.assert_allclose(p.effort, want, rtol=1e-9, atol=1e-12)
        bad = JointTrajectory()
        bad.joint_names = ["j_crank", "j_coupler"]
        bad.points = [JointTrajectoryPoint(positions=[0.0, 0.0])]
        res = h.result(h.send(goal_of(bad)))
        assert res.result.error_code == -2                           # INVALID_JOINTS
        assert "['j_coupler'] are dependent joints" in res.result.error_string
        assert len(h.fake.goals) == 1                                # never forwarded
    finally:
        h.close()


def test_proxy_lead_in_and_hold_from_full_joint_states():
    """joint_states carrying every joint of the mechanism (the dependent ones, here NaN, are
    ignored): the start-up hold is g_a of the oracle at the measured actuated pose, and a goal
    whose first point is at 0.5 s gets the lead-in from that state, effort = the oracle's τ_a."""
    from test_feedforward_proxy import STATE_WAIT, Harness, goal_of, seconds
    from test_ros_loops import Oracle

    u, text, act = mechanism("planar_fourbar")
    orc = Oracle("planar_fourbar")
    r = orc.r
    q_meas = r.q_assembled[r.actuated_index] + 0.15
    h = Harness({"robot_description": u, "loops": text, "actuated": act, "sample_period": 0.05,
                 "hold_on_start": True, **STATE_WAIT}, interfaces=["effort"])
    try:
        msg = JointState(name=["j_rocker", "j_crank", "j_coupler"],
                         position=[float("nan"), float(q_meas[0]), float("nan")],
                         velocity=[0.0, 0.0, 0.0])
        h.state_timer = h.client_node.create_timer(0.01, lambda: h.state_pub.publish(msg))
        assert World.wait_for(lambda: bool(h.fake.goals))
        hold = h.fake.goals[0].trajectory
        assert list(hold.joint_names) == ["j_crank"] and len(hold.points) == 1
        np.testing.assert_allclose(hold.points[0].positions, q_meas, atol=1e-15)
        np.testing.assert_allclose(hold.points[0].effort, orc.gravity(q_meas), rtol=1e-9)
        traj = JointTrajectory()
        traj.joint_names = ["j_crank"]
        for t, x in ((0.5, 0.3), (1.0, 0.5)):
            p = JointTrajectoryPoint(positions=[float(q_meas[0] + x)])
            p.time_from_start.sec, p.time_from_start.nanosec = int(t), int((t % 1) * 1e9)
            traj.points.append(p)
        res = h.result(h.send(goal_of(traj)))
        assert res.status == 4, res.result.error_string
        sent = h.fake.goals[-1].trajectory
        times = np.array([seconds(p.time_from_start) for p in sent.points])
        assert times[0] == 0.0 and np.sum(times < 0.5 - 1e-9) >= 10
        np.testing.assert_allclose(sent.points[0].positions, q_meas, atol=1e-15)
        for p in sent.points:
            want = orc.tau(np.array(p.positions), np.array(p.velocities),
                           np.array(p.accelerations))
            np.testing.assert_allclose(p.effort, want, rtol=1e-9, atol=1e-12)
    finally:
        h.close()


def test_sim_node_sea_on_a_four_bar_rests_under_the_oracle_gravity_torque():
    """SEA drive on the crank: starting at the spring equilibrium θ = q + K⁻¹g_a and commanded
    τ_m = g_a of the oracle, the mechanism stays at rest; motor_states name the actuated joint,
    joint_states every joint with the spring torque on the crank."""
    from test_ros_loops import Oracle

    u, text, act = mechanism("planar_fourbar")
    orc = Oracle("planar_fourbar")
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    node = SimNode(context=ctx, parameter_overrides=[
        Parameter("robot_description", value=u), Parameter("loops", value=text),
        Parameter("actuated", value=act), Parameter("rate", value=100.0),
        Parameter("substeps", value=4), Parameter("actuator.type", value="sea"),
        Parameter("actuator.stiffness", value=800.0)])
    try:
        got = {}
        node._pub_js.publish = lambda m: got.__setitem__("js", m)
        node._pub_motor.publish = lambda m: got.__setitem__("ms", m)
        q0 = node._plant.q.copy()
        g = orc.gravity(q0)
        np.testing.assert_allclose(node._plant.theta, q0 + g / 800.0, rtol=1e-12)
        node._on_command(Float64MultiArray(data=[float(x) for x in g]))
        for _ in range(30):
            node._tick()
        assert node.braked_steps == 0
        assert np.abs(node._plant.q - q0).max() < 1e-10
        assert list(got["ms"].name) == ["j_crank"]
        assert list(got["js"].name) == ["j_crank", "j_coupler", "j_rocker"]
        np.testing.assert_allclose(got["js"].effort, [g[0], 0.0, 0.0], rtol=1e-9)
        assert orc.P.closure_error(np.array(got["js"].position)) < 1e-10
    finally:
        node.destroy_node()
        rclpy.try_shutdown(context=ctx)


def test_feedforward_node_on_a_stewart_platform_with_a_free_joint(world):
    """The 6-UPS platform on a passive ``floating`` joint (issue 31): joint_states of the six
    legs in, ~/feedforward = g_a, which keeps Pinocchio's platform at rest
    (test_ros_lie_loops's oracle); sim_node refuses the robot, naming the free joint."""
    from test_ros_lie_loops import constrained_accel, robot_and_oracle, stewart
    from mbs_dynamics.ros.parameters import rest_positions

    u, text, act, _ = stewart()
    robot, P = robot_and_oracle()
    w = world()
    node = w.add(FeedforwardNode, robot_description=u, loops=text, actuated=act,
                 control_rate=100.0)
    fq = node.get_fully_qualified_name()
    w.listen("ff", JointState, f"{fq}/feedforward")
    js_pub = w.probe.create_publisher(JointState, "joint_states", 10)
    w.start()
    q = rest_positions(robot) + np.array([0.01, -0.02, 0.0, 0.015, -0.01, 0.02])
    stop = threading.Event()

    def send():
        while not stop.is_set():
            msg = JointState()
            msg.header.stamp = w.probe.get_clock().now().to_msg()
            msg.name = list(act)
            msg.position = q.tolist()
            msg.velocity = [0.0] * 6
            js_pub.publish(msg)
            time.sleep(0.01)
    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    try:
        assert w.wait_for(lambda: w.count("ff") >= 3)
        ff = w.last("ff")
        assert list(ff.name) == list(act) == list(robot.joint_names)
        np.testing.assert_allclose(ff.position, q, rtol=0, atol=1e-12)
        a = constrained_accel(robot, P, q, np.zeros(6), np.array(ff.effort))
        assert np.abs(a).max() < 1e-8
    finally:
        stop.set()
        sender.join()

    refused(SimNode, SimConfigError, r"joint 'free' \(floating\) inside the loops",
            robot_description=u, loops=text, actuated=act)
