"""ROS-free checks of feedforward_node's flatness output (mbs_dynamics.ros.flatness_output and the
``flatness.*`` parameters): the motor torque equals FlatnessController's on the same inputs, in
the node's joint order, and bad configurations are refused with a message naming the problem."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import mbs_dynamics as mbs
from mbs_dynamics.control.flatness import FlatnessController
from mbs_dynamics.control.trajectory import Trajectory
from mbs_dynamics.ros.flatness_output import FlatnessOutput
from mbs_dynamics.ros.parameters import check_config

ARM7 = Path(__file__).resolve().parents[2] / "mbs_dynamics" / "data" / "robots" / "arm7.urdf"
SEA = {"actuator.type": "sea"}


def _arm():
    robot = mbs.load_urdf(str(ARM7))
    names = list(robot.joint_names)
    return robot, names


@pytest.mark.parametrize("values, match", [
    ({"flatness.enabled": True, "flatness.poles": [10.0] * 4}, "needs elastic joints"),
    ({**SEA, "flatness.enabled": True}, "exactly one of"),
    ({**SEA, "flatness.enabled": True, "flatness.poles": [10.0] * 4,
      "flatness.bandwidth": 5.0}, "exactly one of"),
    ({**SEA, "flatness.enabled": True, "flatness.poles": [10.0, 20.0, -30.0, 40.0]},
     "left half-plane"),
    ({**SEA, "flatness.enabled": True, "flatness.poles": [10.0, 20.0, 0.0, 40.0]},
     "left half-plane"),
    ({**SEA, "flatness.enabled": True, "flatness.poles": [10.0] * 6}, "4 values"),
    ({**SEA, "joints": ["a", "b"], "flatness.enabled": True, "flatness.poles": [10.0] * 12},
     "4 per joint"),
    ({**SEA, "flatness.enabled": True, "flatness.bandwidth": 10.0, "flatness.damping": 0.0},
     "damping must be > 0"),
    ({"actuator.type": "vsa", "flatness.enabled": True, "flatness.bandwidth": 10.0,
      "flatness.sample_time": 0.001}, "SEA only"),
    ({"actuator.type": "vsa", "flatness.enabled": True, "flatness.bandwidth": 10.0,
      "flatness.delay": 0.001}, "SEA only"),
    ({**SEA, "flatness.enabled": True, "flatness.bandwidth": 10.0, "flatness.delay": -0.001},
     "flatness.delay"),
    ({**SEA, "flatness.enabled": "yes", "flatness.bandwidth": 10.0}, "true or false"),
])
def test_flatness_parameters_are_checked(values, match):
    with pytest.raises(ValueError, match=match):
        check_config(values)


def test_flatness_off_by_default_and_parsed():
    assert check_config({})["flatness"] is None
    cfg = check_config({**SEA, "joints": ["a", "b"], "flatness.enabled": True,
                        "flatness.poles": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]})
    assert cfg["flatness"] == {"poles": [[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]],
                               "sample_time": None, "delay": 0.0}


def test_robot_level_refusals():
    robot, names = _arm()
    with pytest.raises(ValueError, match="joints lacks"):
        FlatnessOutput(robot, names[:-1], SEA, poles=[10.0] * 4)
    with pytest.raises(ValueError, match="stiffness"):   # a singular K
        FlatnessOutput(robot, names, {**SEA, "actuator.stiffness": [100.0] * 6 + [0.0]},
                       poles=[10.0] * 4)
    with pytest.raises(ValueError, match="elastic joints"):
        FlatnessOutput(robot, names, {"actuator.type": "rigid"}, poles=[10.0] * 4)


def test_motor_torque_equals_the_controller_in_joint_order():
    """Reordered joints, per-joint K, B, D and poles: u equals FlatnessController.update on the
    same inputs (the node's q_d⁽⁵⁾ backward difference included), permuted to joints order."""
    robot, names = _arm()
    n = robot.n
    rng = np.random.default_rng(3)
    joints = names[::-1]
    perm = [names.index(j) for j in joints]          # joints position → model index
    K = rng.uniform(200.0, 2000.0, n)                # model order
    B = rng.uniform(0.1, 0.5, n)
    D = rng.uniform(0.0, 0.2, n)
    P = rng.uniform(20.0, 60.0, (n, 4))
    act = {**SEA, "actuator.stiffness": K[perm].tolist(), "actuator.motor_inertia":
           B[perm].tolist(), "actuator.motor_damping": D[perm].tolist()}
    T = 1e-3
    out = FlatnessOutput(robot, joints, act, poles=P[perm].tolist(), sample_time=T)
    traj = Trajectory(names, [0.0, 0.5, 1.0], rng.uniform(-0.5, 0.5, (3, n)))
    ref = FlatnessController(robot, stiffness=K, motor_inertia=B, motor_damping=D, poles=P,
                             sample_time=T, trajectory=traj)
    des = np.zeros((5, n))
    for k in range(4):
        t = 0.2 + k * T
        x = rng.uniform(-0.5, 0.5, (4, n))
        traj.sample(t, out=des)
        expect = ref.update(t, *x)[perm]
        out.set_motor_state(joints, x[2][perm], x[3][perm], stamp=t)
        js = (["gripper"] + names, np.r_[0.0, x[0]], np.r_[0.0, x[1]])   # extra joint
        u = out.compute(t, js, des, "trajectory", False, 0.1)
        np.testing.assert_allclose(u, expect, rtol=1e-12, atol=1e-9)
    # hold before any trajectory: the measured pose of the first hold cycle is latched
    x0 = rng.uniform(-0.5, 0.5, (4, n))
    x1 = rng.uniform(-0.5, 0.5, (4, n))
    held = np.zeros((5, n))
    held[0] = x0[0]
    for x in (x0, x1):
        out.set_motor_state(names, x[2], x[3], stamp=1.0)
        u = out.compute(1.0, (names, x[0], x[1]), des * np.nan, "hold", False, 0.1)
        np.testing.assert_allclose(u, ref.command(*x, held)[perm], rtol=1e-12, atol=1e-9)


def test_missing_stale_or_partial_motor_states_give_no_torque():
    robot, names = _arm()
    out = FlatnessOutput(robot, names, SEA, bandwidth=20.0, damping=1.0, sample_time=0.0)
    q = np.zeros(robot.n)
    js = (names, q, q)
    des = np.zeros((5, robot.n))
    assert out.compute(0.0, js, des, "hold", False, 0.1) is None
    out.set_motor_state(names, q, q, stamp=0.0)
    assert out.compute(0.5, js, des, "hold", False, 0.1) is None
    out.set_motor_state(names[1:], q[1:], q[1:], stamp=0.5)
    assert out.compute(0.5, js, des, "hold", False, 0.1) is None
    out.set_motor_state(names, q, q[1:], stamp=0.5)
    assert out.compute(0.5, js, des, "hold", False, 0.1) is None
    out.set_motor_state(names, q * np.nan, q, stamp=0.5)
    assert out.compute(0.5, js, des, "hold", False, 0.1) is None
    out.set_motor_state(names, q, q, stamp=0.5)
    assert out.compute(0.5, (names, q, []), des, "hold", False, 0.1) is None
    assert out.rejections == {"no_motor_state": 1, "stale_motor_state": 1, "motor_state": 3,
                              "joint_state": 1, "non_finite_output": 0}
    assert out.compute(0.5, js, des, "hold", False, 0.1) is not None


def test_the_motor_state_of_the_joint_states_stamp_is_used():
    """Of the last motor states, the one stamped like the joint state (one control cycle's
    sample) is used, even when a newer one has arrived; unstamped joint states take the latest."""
    robot, names = _arm()
    n = robot.n
    out = FlatnessOutput(robot, names, SEA, bandwidth=20.0, sample_time=0.0)
    ref = FlatnessController(robot, stiffness=1000.0, motor_inertia=0.5, bandwidth=20.0,
                             sample_time=0.0)
    rng = np.random.default_rng(5)
    x = rng.uniform(-0.3, 0.3, (4, n))
    newer = x[2] + 0.01
    held = np.zeros((5, n))
    held[0] = x[0]
    out.set_motor_state(names, x[2], x[3], stamp=1.0, header_stamp=0.999)
    out.set_motor_state(names, x[2] - 0.01, x[3], stamp=1.0, header_stamp=1.000)
    out.set_motor_state(names, newer, x[3], stamp=1.0, header_stamp=1.001)
    js = (names, x[0], x[1])
    u = out.compute(1.0, js, held, "hold", False, 0.1, joint_state_stamp=1.000)
    np.testing.assert_allclose(u, ref.command(x[0], x[1], x[2] - 0.01, x[3], held), rtol=1e-12)
    u = out.compute(1.0, js, held, "hold", False, 0.1)
    np.testing.assert_allclose(u, ref.command(x[0], x[1], newer, x[3], held), rtol=1e-12)


def test_a_delay_lengthens_the_lead():
    """flatness.delay d: the lead (T/2 + d) u̇ — FlatnessController with sample_time T + 2d."""
    robot, names = _arm()
    n = robot.n
    out = FlatnessOutput(robot, names, SEA, bandwidth=20.0, sample_time=1e-3, delay=1e-3)
    ref = FlatnessController(robot, stiffness=1000.0, motor_inertia=0.5, bandwidth=20.0,
                             sample_time=3e-3)
    x = np.random.default_rng(8).uniform(-0.3, 0.3, (4, n))
    held = np.zeros((5, n))
    held[0] = x[0]
    out.set_motor_state(names, x[2], x[3], stamp=0.0)
    u = out.compute(0.0, (names, x[0], x[1]), held, "hold", False, 0.1)
    np.testing.assert_allclose(u, ref.command(*x, held), rtol=1e-12)
