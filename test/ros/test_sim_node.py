"""In-process rclpy tests of sim_node (skipped where ROS 2 is not installed).

Oracles: a single link about a vertical axis under a constant torque moves on the exact
parabola q = q0 + τ t² / (2 J) (RK4 is exact on it); braking keeps the pose; /clock carries the
simulated time.
"""
from __future__ import annotations

import math
import threading

import pytest

from launch_harness import (DEADLINE, MISSING, ONE_LINK, Clock,  # noqa: F401
                            Float64MultiArray, JointState, Parameter, SingleThreadedExecutor,
                            needs_ros, rclpy, spin_in_background, wait_until)

_MISSING = MISSING   # ROS 2 is optional: without it every test here skips (needs_ros)
if not _MISSING:
    from mbs_dynamics.ros.sim_node import ConfigurationError, SimNode

pytestmark = pytest.mark.ros   # deselected where rclpy is missing (test/conftest.py)


J = 0.04 + 2.0 * 0.3 ** 2  # inertia about the joint axis


@pytest.fixture
def context():
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    yield ctx
    rclpy.try_shutdown(context=ctx)


def _node(context, **overrides):
    params = [Parameter(k, value=v) for k, v in overrides.items()]
    return SimNode(context=context, parameter_overrides=params)


def test_brakes_until_the_first_command_then_exact_parabola(context):
    node = _node(context, robot_description=ONE_LINK, rate=100.0)
    try:
        for _ in range(5):
            node._tick()
        assert node.braked_steps == 5 and node._plant.q[0] == 0.0
        t0 = node._plant.t
        node._on_command(Float64MultiArray(data=[0.8]))
        for _ in range(20):
            node._tick()
        t = node._plant.t - t0
        assert math.isclose(t, 0.2, rel_tol=1e-12)
        assert abs(node._plant.q[0] - 0.8 * t ** 2 / (2 * J)) < 1e-12
    finally:
        node.destroy_node()


def test_command_timeout_brakes_again(context):
    node = _node(context, robot_description=ONE_LINK, rate=100.0, command_timeout=0.05)
    try:
        node._on_command(Float64MultiArray(data=[1.0]))
        for _ in range(20):
            node._tick()
        q = node._plant.q[0]
        assert node.braked_steps >= 14  # applied for 0.05 s (+1 tick), then braked
        assert node._plant.qd[0] == 0.0
        node._tick()
        assert node._plant.q[0] == q
    finally:
        node.destroy_node()


def test_reference_pd_pulls_to_the_reference(context):
    node = _node(context, robot_description=ONE_LINK, rate=1000.0, kp=[20.0], kd=[4.0],
                 command_timeout=0.0)
    try:
        ref = JointState()
        ref.name = ["j"]
        ref.position = [0.5]
        ref.velocity = [0.0]
        node._on_reference(ref)
        for _ in range(4000):
            node._tick()
        assert abs(node._plant.q[0] - 0.5) < 1e-3
        bad = JointState()
        bad.name = ["other"]
        bad.position = [1.0]
        node._on_reference(bad)
        assert node.rejected == 1
    finally:
        node.destroy_node()


def test_sea_publishes_motor_states_and_bad_parameters_raise(context):
    node = _node(context, robot_description=ONE_LINK, **{"actuator.type": "sea",
                                                         "actuator.stiffness": 200.0,
                                                         "actuator.motor_inertia": 0.1})
    try:
        assert node._pub_motor is not None and node._plant.kind == "sea"
        node._on_command(Float64MultiArray(data=[0.5]))
        node._tick()
        assert node._plant.theta[0] > 0.0
    finally:
        node.destroy_node()
    with pytest.raises(ConfigurationError, match="initial_positions"):
        _node(context, robot_description=ONE_LINK, initial_positions=[0.1, 0.2])


def test_topics_and_clock(context):
    node = _node(context, robot_description=ONE_LINK, rate=200.0, publish_clock=True)
    probe = rclpy.create_node("probe", context=context)
    got = {"js": [], "clock": []}
    lock = threading.Lock()

    def store(key):
        def cb(msg):
            with lock:
                got[key].append(msg)
        return cb

    probe.create_subscription(JointState, "joint_states", store("js"), 10)
    probe.create_subscription(Clock, "/clock", store("clock"), 10)
    pub = probe.create_publisher(Float64MultiArray, "commands", 10)
    ex = SingleThreadedExecutor(context=context)
    ex.add_node(node)
    ex.add_node(probe)
    spin_in_background(ex)
    try:
        def enough():
            pub.publish(Float64MultiArray(data=[0.3]))
            with lock:
                return (len(got["js"]) > 20 and len(got["clock"]) > 20
                        and node.steps > node.braked_steps)
        assert wait_until(enough, DEADLINE, period=0.02), (len(got["js"]), len(got["clock"]))
        with lock:
            js, clk = got["js"][-1], got["clock"][-1]
        assert js.name == ["j"] and len(js.position) == 1 and math.isfinite(js.position[0])
        t_js = js.header.stamp.sec + 1e-9 * js.header.stamp.nanosec
        t_clk = clk.clock.sec + 1e-9 * clk.clock.nanosec
        assert t_js > 0.0 and t_clk > 0.0
        # stamps are simulated time: multiples of the period
        assert abs(t_js * 200.0 - round(t_js * 200.0)) < 1e-6
    finally:
        ex.shutdown()
        probe.destroy_node()
        node.destroy_node()

