"""The ROS-free controller core (mbs_dynamics.control.controller): every decision and rejection.

Oracles: Pinocchio (gravity, RNEA along the desired trajectory), central finite differences of
Pinocchio's RNEA in time (τ′, τ″), and the SEA formulas of doc/math.md written out here.
"""
from __future__ import annotations

import math
import subprocess
import tempfile
import sys
import threading

import numpy as np
import pytest

from conftest import PANDA, erd_path, pin_model

import mbs_dynamics as mbs
from mbs_dynamics.control.controller import REJECTION_CAUSES, FeedforwardController
from mbs_dynamics.control.trajectory import Trajectory

try:  # the oracle; every test using it takes the `panda` fixture, which skips without it
    import pinocchio as pin
except ImportError:
    pin = None

Q0 = np.array([0.1, -0.5, 0.2, -2.0, 0.1, 1.5, 0.7])
K = np.array([1500.0, 2000.0, 2500.0, 1800.0, 900.0, 700.0, 600.0])
B = np.array([0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0.05])


@pytest.fixture(scope="module")
def panda():
    path = erd_path(PANDA[0])
    robot = mbs.load_urdf(path, locked_joints=PANDA[1])
    pm = pin_model(path, PANDA[1])
    return robot, pm


def names(robot):
    return list(robot.joint_names)


def pin_tau(pm, q, qd, qdd):
    data = pm.createData()
    return pin.rnea(pm, data, np.asarray(q, float), np.asarray(qd, float), np.asarray(qdd, float))


def pin_tau_derivatives(pm, traj, t, h=1e-4):
    """τ, τ′, τ″ at t by central differences in time of Pinocchio's RNEA along traj."""
    def tau(s):
        qs = traj.sample(s)
        return pin_tau(pm, qs[0], qs[1], qs[2])
    tm, t0, tp = tau(t - h), tau(t), tau(t + h)
    return t0, (tp - tm) / (2 * h), (tp - 2 * t0 + tm) / h ** 2


def smooth_traj(robot, t0=0.0, t1=2.0, amp=0.4, start=Q0):
    """A 3-point trajectory from `start`, as a JointTrajectory-shaped dict."""
    pts = [{"time_from_start": t0, "positions": list(start)},
           {"time_from_start": 0.5 * (t0 + t1), "positions": list(start + amp)},
           {"time_from_start": t1, "positions": list(start - 0.5 * amp)}]
    return {"joint_names": names(robot), "points": pts}


def js(ctl, robot, q=Q0, stamp=0.0, extra=True, shuffle=True):
    """Send a joint state (with extra finger joints, shuffled) to the controller."""
    nm = names(robot) + (["panda_finger_joint1", "panda_finger_joint2"] if extra else [])
    pos = list(q) + ([0.01, 0.02] if extra else [])
    if shuffle:
        perm = np.random.default_rng(0).permutation(len(nm))
        nm = [nm[i] for i in perm]
        pos = [pos[i] for i in perm]
    return ctl.set_joint_state(nm, pos, [0.0] * len(nm), stamp=stamp)


def test_module_does_not_import_rclpy():
    code = ("import sys, mbs_dynamics.control.controller; "
            "sys.exit(1 if 'rclpy' in sys.modules else 0)")
    assert subprocess.run([sys.executable, "-c", code],
                          cwd=tempfile.gettempdir()).returncode == 0


def test_no_joint_state_publishes_nothing(panda):
    robot, _ = panda
    ctl = FeedforwardController(robot)
    out = ctl.update(1.0)
    assert not out.valid and out.mode == "none"
    assert ctl.rejections["no_joint_state"] == 1


def test_hold_is_gravity_compensation_at_measured_pose(panda):
    robot, pm = panda
    ctl = FeedforwardController(robot)
    assert js(ctl, robot, stamp=10.0)
    out = ctl.update(10.01)
    assert out.valid and out.mode == "hold"
    g = pin.computeGeneralizedGravity(pm, pm.createData(), Q0)
    np.testing.assert_allclose(out.tau, g, rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(out.tau_dot, 0.0)
    np.testing.assert_array_equal(out.tau_ddot, 0.0)
    np.testing.assert_allclose(out.q, Q0)
    np.testing.assert_array_equal(out.qd, 0.0)
    assert out.motor is None
    assert sum(ctl.rejections.values()) == 0


def test_trajectory_tau_and_derivatives_match_pinocchio(panda):
    robot, pm = panda
    ctl = FeedforwardController(robot)
    js(ctl, robot, stamp=100.0)
    msg = smooth_traj(robot)
    assert ctl.set_trajectory(msg, now=100.0, start_time=100.0)
    ref = Trajectory.from_dict(msg)
    for t in (0.3, 0.97, 1.6):
        js(ctl, robot, stamp=100.0 + t)
        out = ctl.update(100.0 + t)
        assert out.mode == "trajectory" and out.valid
        assert out.trajectory_time == pytest.approx(t)
        tau, tau_d, tau_dd = pin_tau_derivatives(pm, ref, t)
        np.testing.assert_allclose(out.tau, tau, rtol=1e-9, atol=1e-8)
        np.testing.assert_allclose(out.tau_dot, tau_d, rtol=1e-5, atol=1e-4)
        np.testing.assert_allclose(out.tau_ddot, tau_dd, rtol=1e-3, atol=5e-2)
        qs = ref.sample(t)
        np.testing.assert_allclose(out.q, qs[0])
        np.testing.assert_allclose(out.qd, qs[1])


def test_zero_start_time_starts_now(panda):
    robot, _ = panda
    ctl = FeedforwardController(robot)
    js(ctl, robot, stamp=5.0)
    assert ctl.set_trajectory(smooth_traj(robot), now=5.0, start_time=0.0)
    out = ctl.update(5.05)
    assert out.mode == "trajectory"
    assert out.trajectory_time == pytest.approx(0.05)


def test_future_start_holds_until_start(panda):
    robot, pm = panda
    ctl = FeedforwardController(robot)
    js(ctl, robot, stamp=1.0)
    assert ctl.set_trajectory(smooth_traj(robot), now=1.0, start_time=1.5)
    out = ctl.update(1.05)
    assert out.mode == "hold"
    np.testing.assert_allclose(out.tau, pin.computeGeneralizedGravity(pm, pm.createData(), Q0),
                               atol=1e-9)
    js(ctl, robot, stamp=1.6)
    assert ctl.update(1.6).mode == "trajectory"


def test_after_the_end_holds_the_last_point(panda):
    """As joint_trajectory_controller: τ = g(q_final), τ' = τ'' = 0, q_d = q_final, whatever
    the measured pose."""
    robot, pm = panda
    ctl = FeedforwardController(robot)
    js(ctl, robot, stamp=0.0)
    msg = smooth_traj(robot)
    q_final = np.array(msg["points"][-1]["positions"])
    assert ctl.set_trajectory(msg, now=0.0)
    q_off = q_final + 0.05                       # the robot did not reach the goal exactly
    js(ctl, robot, q=q_off, stamp=2.5)
    out = ctl.update(2.5)
    assert out.mode == "hold" and out.valid
    np.testing.assert_allclose(out.tau, pin.computeGeneralizedGravity(pm, pm.createData(),
                                                                      q_final), atol=1e-9)
    np.testing.assert_array_equal(out.taus[1:], 0.0)
    np.testing.assert_allclose(out.q, q_final, atol=0)
    np.testing.assert_array_equal(out.qd, 0.0)
    assert ctl.trajectories_completed == 1 and not ctl.has_trajectory
    assert ctl.holding_last_point and ctl.diagnostics()["holding_last_point"]
    # still held later, with the robot elsewhere
    js(ctl, robot, q=Q0, stamp=3.0)
    np.testing.assert_allclose(ctl.update(3.0).q, q_final, atol=0)


def test_cancel_holds_the_measured_pose(panda):
    robot, pm = panda
    ctl = FeedforwardController(robot)
    js(ctl, robot, stamp=0.0)
    assert ctl.set_trajectory(smooth_traj(robot), now=0.0)
    js(ctl, robot, stamp=2.5)
    assert ctl.update(2.5).mode == "hold" and ctl.holding_last_point
    q_now = Q0 - 0.07
    js(ctl, robot, q=q_now, stamp=2.6)
    assert ctl.set_trajectory({"joint_names": names(robot), "points": []}, now=2.6)
    out = ctl.update(2.6)
    assert out.mode == "hold" and not ctl.holding_last_point
    np.testing.assert_allclose(out.q, q_now, atol=0)
    np.testing.assert_allclose(out.tau, pin.computeGeneralizedGravity(pm, pm.createData(),
                                                                      q_now), atol=1e-9)
    # clear_trajectory() is a cancel too
    assert ctl.set_trajectory(smooth_traj(robot, start=q_now), now=2.6)
    js(ctl, robot, q=q_now, stamp=5.0)
    assert ctl.update(5.0).mode == "hold" and ctl.holding_last_point
    ctl.clear_trajectory()
    np.testing.assert_allclose(ctl.update(5.0).q, q_now, atol=0)


def test_sea_hold_of_the_last_point_is_at_rest_at_q_final(panda):
    """SEA at rest: θ = q + K⁻¹ g(q), θ' = θ'' = 0, τ_m = g(q) (doc/math.md, flatness feedforward)."""
    robot, pm = panda
    from mbs_dynamics.control.actuators import actuator_from_params
    act = actuator_from_params({"actuator.type": "sea", "actuator.stiffness": K.tolist(),
                                "actuator.motor_inertia": B.tolist()}, 7)
    ctl = FeedforwardController(robot, actuator=act)
    js(ctl, robot, stamp=0.0)
    msg = smooth_traj(robot)
    q_final = np.array(msg["points"][-1]["positions"])
    assert ctl.set_trajectory(msg, now=0.0)
    js(ctl, robot, q=Q0, stamp=2.2)
    out = ctl.update(2.2)
    g = pin.computeGeneralizedGravity(pm, pm.createData(), q_final)
    np.testing.assert_allclose(out.theta, q_final + g / K, atol=1e-12)
    np.testing.assert_array_equal(out.theta_dot, 0.0)
    np.testing.assert_array_equal(out.theta_ddot, 0.0)
    np.testing.assert_allclose(out.tau_motor, g, atol=1e-9)


def test_partial_trajectory_after_a_hold_keeps_the_other_joints_held(panda):
    robot, _ = panda
    ctl = FeedforwardController(robot)
    js(ctl, robot, stamp=0.0)
    msg = smooth_traj(robot)
    q_final = np.array(msg["points"][-1]["positions"])
    assert ctl.set_trajectory(msg, now=0.0)
    js(ctl, robot, q=Q0, stamp=2.1)
    assert ctl.update(2.1).mode == "hold"
    part = {"joint_names": names(robot)[:3],
            "points": [{"time_from_start": 0.0, "positions": list(q_final[:3])},
                       {"time_from_start": 1.0, "positions": list(q_final[:3] + 0.1)}]}
    ctl2 = FeedforwardController(robot, joints=names(robot)[:3])
    js(ctl2, robot, stamp=0.0)
    assert ctl2.set_trajectory(msg, now=0.0)
    js(ctl2, robot, q=Q0, stamp=2.1)
    assert ctl2.update(2.1).mode == "hold"
    assert ctl2.set_trajectory(part, now=2.1)
    js(ctl2, robot, q=Q0, stamp=3.2)
    out = ctl2.update(3.2)                        # second one finished: all joints held
    assert out.mode == "hold"
    np.testing.assert_allclose(out.q, q_final[:3] + 0.1, atol=1e-12)
    assert ctl2.set_trajectory(part, now=3.2)
    js(ctl2, robot, q=Q0, stamp=3.7)
    out = ctl2.update(3.7)
    assert out.mode == "trajectory"
    # joints 4..7 (not named) come from the held point, not the measured pose
    np.testing.assert_allclose(ctl2._model.qs[0, 3:], q_final[3:], atol=0)


def test_joint_state_from_the_future_is_stale(panda):
    robot, _ = panda
    ctl = FeedforwardController(robot, joint_state_timeout=0.1)
    js(ctl, robot, stamp=100.0)
    out = ctl.update(5.0)                         # stamp 95 s ahead: not fresh
    assert not out.valid and out.mode == "none"
    assert ctl.rejections["future_joint_state"] == 1
    assert ctl.rejections["stale_joint_state"] == 0
    js(ctl, robot, stamp=5.05)                    # 50 ms ahead: within the timeout
    assert ctl.update(5.0).valid


def test_clock_jump_back_stops_output_until_fresh_joint_states(panda):
    robot, _ = panda
    ctl = FeedforwardController(robot, joint_state_timeout=0.1)
    js(ctl, robot, stamp=100.0)
    assert ctl.set_trajectory(smooth_traj(robot), now=100.0)
    assert ctl.update(100.01).mode == "trajectory"
    out = ctl.update(0.5)                         # /clock reset, joint states stopped
    assert not out.valid
    assert ctl.clock_jumps == 1 and ctl.rejections["clock_jump"] == 1
    assert not ctl.has_trajectory and not ctl.holding_last_point
    assert not ctl.update(0.51).valid             # still nothing: no state on the new timeline
    assert ctl.clock_jumps == 1
    js(ctl, robot, stamp=0.52)
    out = ctl.update(0.52)
    assert out.valid and out.mode == "hold"
    np.testing.assert_allclose(out.q, Q0)


def test_negative_timeout_raises_and_zero_disables(panda):
    robot, _ = panda
    with pytest.raises(ValueError, match="joint_state_timeout"):
        FeedforwardController(robot, joint_state_timeout=-0.1)
    ctl = FeedforwardController(robot, joint_state_timeout=0.0)
    js(ctl, robot, stamp=0.0)
    assert ctl.update(1e6).valid


class _WithMimic:
    """A robot stand-in exposing mimic joints (as the model with native mimic support will)."""

    def __init__(self, robot, mimic):
        self._robot = robot
        self.mimic_joints = mimic

    def __getattr__(self, name):
        return getattr(self._robot, name)


def test_trajectory_naming_a_mimic_joint_is_accepted_and_the_mimic_column_ignored(panda):
    robot, _ = panda
    mimic = {"panda_finger_joint2": ("panda_finger_joint1", 1.0, 0.0)}
    ctl = FeedforwardController(_WithMimic(robot, mimic))
    js(ctl, robot, stamp=0.0)
    msg = smooth_traj(robot)
    plain = Trajectory.from_dict(msg)
    msg["joint_names"] = msg["joint_names"] + ["panda_finger_joint2"]
    for p in msg["points"]:
        p["positions"] = p["positions"] + [0.01]
    assert ctl.set_trajectory(msg, now=0.0), ctl.last_rejection
    js(ctl, robot, stamp=0.4)
    np.testing.assert_allclose(ctl.update(0.4).q, plain.sample(0.4)[0])
    # a name that is neither a joint nor a mimic joint is still unknown
    msg["joint_names"][-1] = "nobody"
    assert not ctl.set_trajectory(msg, now=0.5)
    assert ctl.rejections["unknown_joint"] == 1


def test_first_point_after_zero_starts_from_measured_pose(panda):
    robot, _ = panda
    ctl = FeedforwardController(robot)
    q_meas = Q0 - 0.1
    js(ctl, robot, q=q_meas, stamp=0.0)
    msg = smooth_traj(robot, t0=0.5, t1=2.0)
    assert ctl.set_trajectory(msg, now=0.0)
    out = ctl.update(1e-9)
    assert out.mode == "trajectory"
    np.testing.assert_allclose(out.q, q_meas, atol=1e-9)
    np.testing.assert_allclose(out.qd, 0.0, atol=1e-6)
    js(ctl, robot, q=q_meas, stamp=0.5)
    np.testing.assert_allclose(ctl.update(0.5).q, Q0, atol=1e-9)   # waypoint hit


def test_empty_trajectory_cancels(panda):
    robot, _ = panda
    ctl = FeedforwardController(robot)
    js(ctl, robot, stamp=0.0)
    assert ctl.set_trajectory(smooth_traj(robot), now=0.0)
    assert ctl.update(0.01).mode == "trajectory"
    assert ctl.set_trajectory({"joint_names": names(robot), "points": []}, now=0.02)
    assert ctl.update(0.03).mode == "hold"


def test_trajectory_object_accepted(panda):
    robot, _ = panda
    ctl = FeedforwardController(robot)
    js(ctl, robot, stamp=0.0)
    traj = Trajectory.from_dict(smooth_traj(robot)).reorder(names(robot)[::-1])
    assert ctl.set_trajectory(traj, now=0.0)
    js(ctl, robot, stamp=0.4)
    out = ctl.update(0.4)
    assert out.mode == "trajectory"
    np.testing.assert_allclose(out.q, Trajectory.from_dict(smooth_traj(robot)).sample(0.4)[0])


def test_joint_subset_and_order(panda):
    """Controlled joints 6, 1, 3 in that order; the trajectory names only them; the other joints
    stay at their measured position, at rest (Pinocchio RNEA with that state is the oracle)."""
    robot, pm = panda
    nm = names(robot)
    joints = [nm[5], nm[0], nm[2]]
    ctl = FeedforwardController(robot, joints=joints)
    q_meas = Q0 + 0.02
    js(ctl, robot, q=q_meas, stamp=0.0)
    out = ctl.update(0.0)
    g = pin.computeGeneralizedGravity(pm, pm.createData(), q_meas)
    np.testing.assert_allclose(out.tau, g[[5, 0, 2]], atol=1e-9)
    assert out.joint_names == tuple(joints)

    pts = [{"time_from_start": 0.0, "positions": [q_meas[5], q_meas[0], q_meas[2]]},
           {"time_from_start": 1.0, "positions": [q_meas[5] + 0.3, q_meas[0] - 0.2,
                                                  q_meas[2] + 0.1]}]
    msg = {"joint_names": joints, "points": pts}
    assert ctl.set_trajectory(msg, now=0.0)
    t = 0.4
    js(ctl, robot, q=q_meas, stamp=t)
    out = ctl.update(t)
    sub = Trajectory.from_dict(msg).sample(t)
    full = np.zeros((3, 7))
    full[0] = q_meas
    full[:, [5, 0, 2]] = sub[:3]
    tau = pin_tau(pm, *full)
    np.testing.assert_allclose(out.tau, tau[[5, 0, 2]], rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(out.q, sub[0])


def test_sea_motor_references(panda):
    robot, pm = panda
    from mbs_dynamics.control.actuators import actuator_from_params
    act = actuator_from_params({"actuator.type": "sea", "actuator.stiffness": list(K),
                                "actuator.motor_inertia": list(B)}, 7)
    ctl = FeedforwardController(robot, actuator=act)
    js(ctl, robot, stamp=0.0)
    out = ctl.update(0.0)                       # hold: θ = q + K⁻¹ g, θ' = θ'' = 0, τ_m = g
    np.testing.assert_allclose(out.theta, Q0 + out.tau / K)
    np.testing.assert_allclose(out.tau_motor, out.tau)
    np.testing.assert_array_equal(out.theta_dot, 0.0)
    msg = smooth_traj(robot)
    assert ctl.set_trajectory(msg, now=0.0)
    t = 0.8
    js(ctl, robot, stamp=t)
    out = ctl.update(t)
    ref = Trajectory.from_dict(msg)
    qs = ref.sample(t)
    tau, tau_d, tau_dd = pin_tau_derivatives(pm, ref, t)
    # doc/math.md: θ = q + K⁻¹τ, θ' = q' + K⁻¹τ', θ'' = q'' + K⁻¹τ'', τ_m = B θ'' + τ
    np.testing.assert_allclose(out.theta, qs[0] + tau / K, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(out.theta_dot, qs[1] + tau_d / K, atol=1e-7)
    np.testing.assert_allclose(out.theta_ddot, qs[2] + tau_dd / K, atol=5e-5)
    np.testing.assert_allclose(out.tau_motor, B * (qs[2] + tau_dd / K) + tau, atol=5e-5)


def test_vsa_motor_position_inverts_the_spring_law(panda):
    """VSA (exponential antagonistic springs): the motor position θ must satisfy the spring law
    φ(θ − q, σ) = (k/a) exp(aσ) sinh(a(θ − q)) = τ, written out here as the oracle."""
    robot, pm = panda
    from mbs_dynamics.control.actuators import actuator_from_params
    k, a, sigma = 800.0, 4.0, 0.1
    act = actuator_from_params({"actuator.type": "vsa", "actuator.vsa.k": k,
                                "actuator.vsa.a": a, "actuator.vsa.sigma": sigma}, 7)
    ctl = FeedforwardController(robot, actuator=act)
    js(ctl, robot, stamp=0.0)
    assert ctl.set_trajectory(smooth_traj(robot), now=0.0)
    for t in (0.0, 0.6):
        js(ctl, robot, stamp=t)
        out = ctl.update(t)
        assert out.valid
        phi = (k / a) * math.exp(a * sigma) * np.sinh(a * (out.theta - out.q))
        np.testing.assert_allclose(phi, out.tau, rtol=1e-9, atol=1e-9)


def test_stale_joint_state_stops_output(panda):
    robot, _ = panda
    ctl = FeedforwardController(robot, joint_state_timeout=0.1)
    js(ctl, robot, stamp=1.0)
    assert ctl.update(1.09).valid
    out = ctl.update(1.11)
    assert not out.valid and out.mode == "none"
    assert ctl.rejections["stale_joint_state"] == 1
    js(ctl, robot, stamp=1.12)
    assert ctl.update(1.12).valid
    ctl.joint_state_timeout = 0.0             # disabled
    assert ctl.update(1e6).valid


@pytest.mark.parametrize("case, cause", [
    (dict(positions=[0.0] * 6), "wrong_size"),
    (dict(velocities=[0.0] * 3), "wrong_size"),
    (dict(nan_at=2), "non_finite"),
    (dict(inf_at=4), "non_finite"),
    (dict(nan_velocity_at=1), "non_finite"),
    (dict(drop=3), "missing_joint"),
    (dict(duplicate=True), "duplicate_joint"),
    (dict(stamp=math.nan), "bad_time"),
    (dict(names="panda_joint1"), "invalid"),
    (dict(positions="abc"), "invalid"),
    (dict(positions=[[0.0] * 7]), "wrong_size"),
])
def test_bad_joint_state_rejected_and_previous_kept(panda, case, cause):
    robot, pm = panda
    ctl = FeedforwardController(robot, joint_state_timeout=0.0)
    js(ctl, robot, stamp=0.0, extra=False, shuffle=False)
    nm, pos, vel, stamp = names(robot), list(Q0 + 0.3), [0.0] * 7, 1.0
    if "positions" in case:
        pos = case["positions"]
    if "velocities" in case:
        vel = case["velocities"]
    if "nan_at" in case:
        pos[case["nan_at"]] = math.nan
    if "inf_at" in case:
        pos[case["inf_at"]] = math.inf
    if "nan_velocity_at" in case:
        vel[case["nan_velocity_at"]] = math.nan
    if "drop" in case:
        del nm[case["drop"]], pos[case["drop"]], vel[case["drop"]]
    if case.get("duplicate"):
        nm[1] = nm[0]
    if "stamp" in case:
        stamp = case["stamp"]
    if "names" in case:
        nm = case["names"]
    assert not ctl.set_joint_state(nm, pos, vel, stamp=stamp)
    assert ctl.rejections[cause] == 1, ctl.rejections
    assert sum(ctl.rejections.values()) == 1
    out = ctl.update(2.0)
    assert out.mode == "hold"
    np.testing.assert_allclose(out.q, Q0)       # the previous good state is still used


def test_non_finite_extra_joint_is_ignored(panda):
    robot, _ = panda
    ctl = FeedforwardController(robot)
    assert ctl.set_joint_state(names(robot) + ["gripper"], list(Q0) + [math.nan], stamp=0.0)
    assert ctl.update(0.0).valid


def _traj_case(robot, kind):
    msg = smooth_traj(robot)
    pts = msg["points"]
    if kind == "unknown":
        msg["joint_names"] = msg["joint_names"] + ["elbow_of_someone_else"]
        for p in pts:
            p["positions"] = p["positions"] + [0.0]
    elif kind == "missing":
        msg["joint_names"] = msg["joint_names"][1:]
        for p in pts:
            p["positions"] = p["positions"][1:]
    elif kind == "duplicate":
        msg["joint_names"][1] = msg["joint_names"][0]
    elif kind == "equal_times":
        pts[2]["time_from_start"] = pts[1]["time_from_start"]
    elif kind == "decreasing_times":
        pts[1]["time_from_start"] = 5.0
    elif kind == "negative_time":
        pts[0]["time_from_start"] = -0.5
    elif kind == "nan_position":
        pts[1]["positions"][3] = math.nan
    elif kind == "inf_velocity":
        pts[1]["velocities"] = [0.0] * 6 + [math.inf]
    elif kind == "nan_time":
        pts[1]["time_from_start"] = math.nan
    elif kind == "short_positions":
        pts[1]["positions"] = pts[1]["positions"][:5]
    elif kind == "short_accelerations":
        pts[1]["accelerations"] = [0.0, 0.0]
    elif kind == "no_positions":
        pts[1]["positions"] = []
    elif kind == "one_point_at_zero":
        del pts[1:]
    elif kind == "not_a_point":
        pts[1] = 3.0
    elif kind == "names_string":
        msg["joint_names"] = "panda_joint1"
    elif kind == "duration_dict":
        pts[1]["time_from_start"] = {"sec": "x", "nanosec": 0}
    return msg


@pytest.mark.parametrize("kind, cause", [
    ("unknown", "unknown_joint"), ("missing", "missing_joint"), ("duplicate", "duplicate_joint"),
    ("equal_times", "time_order"), ("decreasing_times", "time_order"),
    ("negative_time", "time_order"), ("nan_position", "non_finite"),
    ("inf_velocity", "non_finite"), ("nan_time", "non_finite"),
    ("short_positions", "wrong_size"), ("short_accelerations", "wrong_size"),
    ("no_positions", "wrong_size"), ("one_point_at_zero", "invalid"),
    ("not_a_point", "invalid"), ("names_string", "invalid"), ("duration_dict", "invalid"),
])
def test_bad_trajectory_rejected_and_active_kept(panda, kind, cause):
    robot, _ = panda
    ctl = FeedforwardController(robot)
    js(ctl, robot, stamp=0.0)
    good = smooth_traj(robot, amp=0.2)
    assert ctl.set_trajectory(good, now=0.0)
    assert not ctl.set_trajectory(_traj_case(robot, kind), now=0.0)
    assert ctl.rejections[cause] == 1, ctl.rejections
    assert sum(ctl.rejections.values()) == 1
    js(ctl, robot, stamp=0.5)
    out = ctl.update(0.5)
    assert out.mode == "trajectory"
    np.testing.assert_allclose(out.q, Trajectory.from_dict(good).sample(0.5)[0])


def test_expired_trajectory_rejected(panda):
    robot, _ = panda
    ctl = FeedforwardController(robot)
    js(ctl, robot, stamp=10.0)
    assert not ctl.set_trajectory(smooth_traj(robot), now=10.0, start_time=5.0)
    assert ctl.rejections["expired_trajectory"] == 1
    assert ctl.update(10.0).mode == "hold"


def test_trajectory_needing_start_pose_without_joint_state(panda):
    robot, _ = panda
    ctl = FeedforwardController(robot)
    assert not ctl.set_trajectory(smooth_traj(robot, t0=0.5), now=0.0)
    assert ctl.rejections["no_joint_state"] == 1


def test_bad_time_in_update_and_trajectory(panda):
    robot, _ = panda
    ctl = FeedforwardController(robot)
    js(ctl, robot, stamp=0.0)
    for bad in (math.nan, math.inf, None, "now"):
        assert not ctl.update(bad).valid
    assert ctl.rejections["bad_time"] == 4
    assert not ctl.set_trajectory(smooth_traj(robot), now=math.nan)
    assert ctl.rejections["bad_time"] == 5


class _BadActuator:
    def __init__(self, mode):
        self.mode = mode

    def reference(self, qs, taus, out=None):
        if self.mode == "raise" and np.any(taus != 0):
            raise ArithmeticError("spring inversion failed")
        out[...] = 0.0
        if self.mode == "inf" and np.any(taus != 0):
            out[3, 0] = math.inf
        return out


@pytest.mark.parametrize("mode, cause", [("inf", "non_finite_output"),
                                         ("raise", "actuator_error")])
def test_non_finite_or_failing_output_is_suppressed(panda, mode, cause):
    robot, _ = panda
    ctl = FeedforwardController(robot, actuator=_BadActuator(mode))
    js(ctl, robot, stamp=0.0)
    out = ctl.update(0.0)
    assert not out.valid and out.mode == "none"
    assert ctl.rejections[cause] == 1


def test_huge_positions_never_give_non_finite_output(panda):
    robot, _ = panda
    ctl = FeedforwardController(robot)
    js(ctl, robot, q=np.full(7, 1e308), stamp=0.0)
    out = ctl.update(0.0)
    assert (not out.valid) or np.isfinite(out.buffer).all()


def test_constructor_errors(panda):
    robot, _ = panda
    with pytest.raises(ValueError, match="not movable joints"):
        FeedforwardController(robot, joints=["panda_joint1", "nope"])
    with pytest.raises(ValueError, match="duplicates"):
        FeedforwardController(robot, joints=["panda_joint1", "panda_joint1"])
    with pytest.raises(ValueError, match="actuator"):
        from mbs_dynamics.control.actuators import actuator_from_params
        FeedforwardController(robot, actuator=actuator_from_params(
            {"actuator.type": "sea"}, 3))
    with pytest.raises(ValueError):
        FeedforwardController(robot, joint_state_timeout=math.nan)


def test_swap_robot(panda):
    robot, pm = panda
    path = erd_path(PANDA[0])
    ctl = FeedforwardController(robot)
    js(ctl, robot, stamp=0.0)
    assert ctl.set_trajectory(smooth_traj(robot), now=0.0)
    moon = mbs.load_urdf(path, locked_joints=PANDA[1], gravity=(0.0, 0.0, -1.62))
    ctl.swap_robot(moon)
    assert ctl.robot is moon and ctl.robot_swaps == 1
    assert ctl.has_trajectory                       # same joints: the trajectory is kept
    ctl.clear_trajectory()
    out = ctl.update(0.0)                           # the stored joint state was re-mapped
    pm_moon = pin_model(path, PANDA[1], gravity=(0.0, 0.0, -1.62))
    np.testing.assert_allclose(
        out.tau, pin.computeGeneralizedGravity(pm_moon, pm_moon.createData(), Q0), atol=1e-9)
    # a model without the controlled joints is refused; the old one stays
    arm6 = mbs.load_urdf(path, locked_joints={**PANDA[1], "panda_joint7": 0.0})
    with pytest.raises(ValueError, match="panda_joint7"):
        ctl.swap_robot(arm6)
    assert ctl.robot is moon


def test_swap_robot_while_updating(panda):
    """A swap from another thread never interleaves with a cycle (no error, no NaN)."""
    robot, _ = panda
    path = erd_path(PANDA[0])
    other = mbs.load_urdf(path, locked_joints=PANDA[1], gravity=(0.0, 0.0, -1.62))
    ctl = FeedforwardController(robot, joint_state_timeout=0.0)
    js(ctl, robot, stamp=0.0)
    ctl.set_trajectory(smooth_traj(robot), now=0.0)
    stop = threading.Event()

    def swapper():
        k = 0
        while not stop.is_set():
            ctl.swap_robot(other if k % 2 else robot)
            k += 1

    th = threading.Thread(target=swapper)
    th.start()
    try:
        for i in range(2000):
            out = ctl.update(i * 1e-3)
            assert out.valid and np.isfinite(out.buffer).all()
    finally:
        stop.set()
        th.join()
    assert sum(ctl.rejections.values()) == 0


def test_stats_and_diagnostics(panda):
    robot, _ = panda
    ctl = FeedforwardController(robot, stats_window=50)
    assert ctl.compute_stats()["count"] == 0
    js(ctl, robot, stamp=0.0)
    for i in range(80):
        ctl.update(i * 1e-3)
    s = ctl.compute_stats()
    assert s["count"] == 50
    assert 0 < s["p50"] <= s["p90"] <= s["p99"] <= s["max"]
    d = ctl.diagnostics()
    assert d["cycles.hold"] == 80
    assert all(f"rejected.{c}" in d for c in REJECTION_CAUSES)


# -- fuzzing ----------------------------------------------------------------------------------
_WEIRD = [math.nan, math.inf, -math.inf, 1e308, -1e308, 0.0, 1.0, -3.0, 1e-300, None, "x", [],
          [1.0, 2.0], {}, b"\x00", True, 7, object()]


def _garbage(rng, nm, depth=0):
    """A random malformed value, biased toward almost-valid structures."""
    u = rng.uniform()
    if u < 0.35 or depth > 1:
        return _WEIRD[rng.integers(len(_WEIRD))]
    if u < 0.75:
        k = int(rng.integers(0, len(nm) + 3))
        vals = rng.normal(size=k) * rng.choice([1.0, 1e3, 1e200])
        vals = vals.tolist()
        if k and rng.uniform() < 0.5:
            vals[int(rng.integers(k))] = _WEIRD[rng.integers(5)]
        return vals
    return [_garbage(rng, nm, depth + 1) for _ in range(int(rng.integers(0, 4)))]


def _random_names(rng, nm):
    u = rng.uniform()
    pool = nm + ["panda_finger_joint1", "foo", ""]
    if u < 0.6:
        names = list(nm)
        rng.shuffle(names)
        if rng.uniform() < 0.3:
            names.append(pool[int(rng.integers(len(pool)))])
        if rng.uniform() < 0.2 and names:
            names.pop(int(rng.integers(len(names))))
        return names
    if u < 0.8:
        return [pool[int(rng.integers(len(pool)))] for _ in range(int(rng.integers(0, 10)))]
    return _garbage(rng, nm)


def test_fuzz_malformed_inputs_never_escape_or_give_non_finite_output(panda):
    """10⁵ random malformed joint states, trajectories and times (seeded): no exception escapes,
    no published output is non-finite."""
    robot, _ = panda
    from mbs_dynamics.control.actuators import actuator_from_params
    act = actuator_from_params({"actuator.type": "sea", "actuator.stiffness": 1000.0}, 7)
    nm = names(robot)
    rng = np.random.default_rng(20261121)
    ctls = [FeedforwardController(robot, joint_state_timeout=0.5),
            FeedforwardController(robot, joints=nm[::-2], actuator=None),
            FeedforwardController(robot, actuator=act, joint_state_timeout=0.0)]
    published = 0
    t = 0.0
    for i in range(100_000):
        ctl = ctls[i % 3]
        u = rng.uniform()
        t += float(rng.exponential(0.01))
        if u < 0.35:
            names_ = _random_names(rng, nm)
            if rng.uniform() < 0.5 and isinstance(names_, list):
                pos = (Q0[:1].repeat(len(names_)) + rng.normal(size=len(names_))).tolist()
                if rng.uniform() < 0.3 and pos:
                    pos[int(rng.integers(len(pos)))] = _WEIRD[int(rng.integers(5))]
            else:
                pos = _garbage(rng, nm)
            vel = _garbage(rng, nm) if rng.uniform() < 0.5 else None
            stamp = t if rng.uniform() < 0.8 else _WEIRD[int(rng.integers(len(_WEIRD)))]
            ctl.set_joint_state(names_, pos, vel, stamp=stamp)
        elif u < 0.45:
            npts = int(rng.integers(0, 4))
            pts = []
            for k in range(npts):
                pt = {"time_from_start": (k + float(rng.uniform(0, 1)) if rng.uniform() < 0.8
                                          else _garbage(rng, nm)),
                      "positions": (Q0 + rng.normal(size=7) * 0.3).tolist()
                      if rng.uniform() < 0.7 else _garbage(rng, nm)}
                if rng.uniform() < 0.3:
                    pt["velocities"] = _garbage(rng, nm)
                pts.append(pt if rng.uniform() < 0.95 else _garbage(rng, nm))
            msg = {"joint_names": nm if rng.uniform() < 0.7 else _random_names(rng, nm),
                   "points": pts if rng.uniform() < 0.95 else _garbage(rng, nm)}
            start = 0.0 if rng.uniform() < 0.7 else _WEIRD[int(rng.integers(len(_WEIRD)))]
            ctl.set_trajectory(msg if rng.uniform() < 0.95 else _garbage(rng, nm), now=t,
                               start_time=start)
        else:
            now = t if rng.uniform() < 0.9 else _WEIRD[int(rng.integers(len(_WEIRD)))]
            out = ctl.update(now)
            if out.valid:
                published += 1
                assert np.isfinite(out.buffer).all(), (i, out.mode)
    assert published > 1000          # the fuzzer also exercised the publishing paths
    total = sum(sum(c.rejections.values()) for c in ctls)
    assert total > 10_000
    assert all(c.rejections["internal_error"] == 0 for c in ctls)


# -- node parameters, configuration files, launch file (ROS-free parts) -----------------------
REPO = __import__("pathlib").Path(__file__).resolve().parents[2]


def _flatten(d, prefix=""):
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


@pytest.mark.parametrize("name", ["rigid_arm.yaml", "sea_arm.yaml"])
def test_config_files_are_valid_parameter_files(name):
    import yaml
    from mbs_dynamics.control.actuators import actuator_from_params
    from mbs_dynamics.ros.parameters import check_config, parameter_table
    doc = yaml.safe_load((REPO / "config" / name).read_text())
    assert list(doc) == ["/**/feedforward_node"]
    params = _flatten(doc["/**/feedforward_node"]["ros__parameters"])
    assert set(params) <= set(parameter_table())
    for v in params.values():     # ROS parameters are typed: floats must be written as floats
        if isinstance(v, list) and v and isinstance(v[0], (int, float)):
            assert all(isinstance(x, float) for x in v)
    cfg = check_config(params)
    arm7 = mbs.load_urdf(str(REPO / "mbs_dynamics" / "data" / "robots" / "arm7.urdf"))
    act = actuator_from_params(cfg["actuator"], arm7.n)
    assert (act is None) == (name == "rigid_arm.yaml")
    ctl = FeedforwardController(arm7, actuator=act)
    ctl.set_joint_state(arm7.joint_names, np.zeros(arm7.n), stamp=0.0)
    out = ctl.update(0.0)
    assert out.valid and (out.motor is not None) == (name == "sea_arm.yaml")


@pytest.mark.parametrize("values, match", [
    ({"gravity": [0.0, 1.0]}, "gravity"),
    ({"gravity": [0.0, 0.0, math.nan]}, "gravity"),
    ({"control_rate": -1.0}, "control_rate"),
    ({"control_rate": math.inf}, "control_rate"),
    ({"joint_state_timeout": -0.1}, "joint_state_timeout"),
    ({"joints": ["a", "a"]}, "duplicates"),
    ({"joints": ["a", ""]}, "joints"),
    ({"frobnicate": 1.0}, "unknown"),
    ({"actuator.type": "hydraulic"}, "actuator.type"),
    ({"joints": ["a", "b"], "actuator.type": "sea", "actuator.stiffness": -5.0}, "stiffness"),
    ({"joints": ["a", "b"], "actuator.type": "sea", "actuator.stiffness": [1.0, 2.0, 3.0]},
     "stiffness"),
])
def test_check_config_rejects_bad_values(values, match):
    from mbs_dynamics.ros.parameters import check_config
    with pytest.raises(ValueError, match=match):
        check_config(values)


def test_check_config_defaults_and_runtime_checks():
    from mbs_dynamics.ros.parameters import check_config, check_runtime, parameter_table
    cfg = check_config({})
    assert cfg["control_rate"] == 1000.0 and cfg["gravity"] == (0.0, 0.0, -9.81)
    assert cfg["joints"] == [] and cfg["base_link"] is None
    assert cfg["actuator"]["actuator.type"] == "rigid"
    assert check_runtime("control_rate", 0.0) is None
    assert check_runtime("control_rate", -1.0)
    assert check_runtime("joint_state_timeout", "1")
    assert check_runtime("joint_state_timeout", True)
    for name, (_, text, read_only, _) in parameter_table().items():
        assert text, name                                   # every parameter is described
        assert read_only == (name not in ("control_rate", "joint_state_timeout")), name


def test_effort_controller_example():
    import yaml
    doc = yaml.safe_load((REPO / "config" / "effort_controller_example.yaml").read_text())
    cm = doc["controller_manager"]["ros__parameters"]
    assert cm["effort_controller"]["type"] == "effort_controllers/JointGroupEffortController"
    arm7 = mbs.load_urdf(str(REPO / "mbs_dynamics" / "data" / "robots" / "arm7.urdf"))
    assert doc["effort_controller"]["ros__parameters"]["joints"] == list(arm7.joint_names)


def test_update_keeps_no_memory_per_cycle():
    """The 1 kHz path allocates nothing that survives a cycle (preallocated NumPy buffers)."""
    import tracemalloc
    from mbs_dynamics.control.actuators import SEA
    robot = mbs.load_urdf(str(REPO / "mbs_dynamics" / "data" / "robots" / "arm7.urdf"))
    nm = list(robot.joint_names)
    ctl = FeedforwardController(robot, joints=nm[::-1], actuator=SEA(2000.0, 0.3, n=7),
                                joint_state_timeout=0.0)
    ctl.set_joint_state(nm, np.zeros(7), stamp=0.0)
    assert ctl.set_trajectory({"joint_names": nm, "points": [
        {"time_from_start": 0.0, "positions": [0.0] * 7},
        {"time_from_start": 100.0, "positions": [1.0] * 7}]}, now=0.0)
    for i in range(1000):
        ctl.update(i * 1e-3)
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    for i in range(1000, 6000):
        out = ctl.update(i * 1e-3)
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    assert out.mode == "trajectory" and out.valid
    grown = sum(s.size_diff for s in after.compare_to(before, "filename")
                if "tracemalloc" not in str(s.traceback))
    assert grown < 4096, grown          # 5000 cycles: nothing retained per cycle
