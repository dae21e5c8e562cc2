"""The ROS-free core of feedforward_proxy (mbs_dynamics.control.enrich): resampling, filling, rejection.

Oracles: Pinocchio's RNEA on the forwarded points (efforts to 1e-9 relative), central differences
in time of Pinocchio's RNEA along the spline (τ′, τ″ for the SEA motor references, whose formulas
θ = q + K⁻¹τ, τ_m = B θ'' + D_m θ' + τ are written out here from doc/math.md), and the input
waypoints themselves (kept exactly). Tests without an oracle use the bundled arm7 and need neither
Pinocchio nor ROS.
"""
from __future__ import annotations

import math
from pathlib import Path

import tempfile

import numpy as np
import pytest

import mbs_dynamics as mbs
from mbs_dynamics.control.enrich import (INVALID_GOAL, INVALID_JOINTS, EnrichmentError,
                                 TrajectoryEnricher, sample_times)
from mbs_dynamics.control.trajectory import Trajectory

ARM7 = Path(mbs.__file__).resolve().parent / "data" / "robots" / "arm7.urdf"
NAMES = [f"arm7_joint{i}" for i in range(1, 8)]
Q0 = np.array([0.1, -0.5, 0.2, -1.2, 0.1, 0.8, 0.3])
K = np.array([3000.0, 3000.0, 2000.0, 2000.0, 1000.0, 1000.0, 1000.0])
B = np.array([0.4, 0.4, 0.2, 0.2, 0.1, 0.05, 0.05])
DM = np.array([0.1, 0.1, 0.05, 0.05, 0.02, 0.02, 0.02])


@pytest.fixture(scope="module")
def robot():
    return mbs.load_urdf(str(ARM7))


@pytest.fixture(scope="module")
def pm():
    pin = pytest.importorskip("pinocchio")
    m = pin.buildModelFromUrdf(str(ARM7))
    assert [m.names[i] for i in range(1, m.njoints)] == NAMES
    return m


def rnea(pm, q, qd, qdd):
    import pinocchio as pin
    return pin.rnea(pm, pm.createData(), np.asarray(q, float), np.asarray(qd, float),
                    np.asarray(qdd, float))


def goal(names=NAMES, times=(0.0, 0.8, 2.0), amp=0.4, order=None, velocities=False):
    """A JointTrajectory-shaped mapping (header and stale effort included, as from ROS)."""
    pts = []
    for k, t in enumerate(times):
        q = Q0 + amp * math.sin(1.3 * k) * np.linspace(1.0, 0.4, 7)
        pt = {"time_from_start": {"sec": int(t), "nanosec": int(round((t % 1) * 1e9))},
              "positions": q.tolist(), "effort": [123.0] * 7}
        if velocities and 0 < k < len(times) - 1:
            pt["velocities"] = (0.3 * np.ones(7)).tolist()
        pts.append(pt)
    msg = {"header": {"stamp": 0}, "joint_names": list(names), "points": pts}
    if order is not None:
        msg["joint_names"] = [names[i] for i in order]
        for p in pts:
            for key in ("positions", "velocities"):
                if key in p:
                    p[key] = [p[key][i] for i in order]
    return msg


def test_sample_times_keep_the_waypoints_and_the_spacing():
    w = np.array([0.0, 0.105, 0.5, 0.503, 1.0])
    ts, idx = sample_times(w, 0.01)
    np.testing.assert_array_equal(ts[idx], w)
    assert np.all(np.diff(ts) > 0)
    assert np.all(np.diff(ts) <= 0.01 + 1e-12)
    assert np.all(np.diff(ts) >= 0.1 * 0.01 - 1e-12)
    ts0, idx0 = sample_times(w, 0.0)
    np.testing.assert_array_equal(ts0, w)
    np.testing.assert_array_equal(idx0, np.arange(5))


def test_efforts_are_the_inverse_dynamics_of_the_forwarded_points(robot, pm):
    msg = goal(velocities=True)
    enr = TrajectoryEnricher(robot, sample_period=0.01).enrich(msg)
    assert enr.output == "effort" and enr.joint_names == tuple(NAMES)
    assert len(enr) >= 200
    for k in range(0, len(enr), 7):
        tau = rnea(pm, enr.positions[k], enr.velocities[k], enr.accelerations[k])
        np.testing.assert_allclose(enr.effort[k], tau, rtol=1e-9, atol=1e-9 * np.abs(tau).max())
    # the stale input efforts are replaced, the spline is the one of Trajectory
    ref = Trajectory.from_dict(msg).sample_many(enr.times)
    np.testing.assert_allclose(enr.positions, ref[:, 0], atol=1e-12)
    np.testing.assert_allclose(enr.velocities, ref[:, 1], atol=1e-12)
    np.testing.assert_allclose(enr.accelerations, ref[:, 2], atol=1e-12)


def test_waypoints_are_kept_exactly(robot):
    msg = goal(times=(0.0, 0.333, 1.257, 2.0), velocities=True)
    enr = TrajectoryEnricher(robot, sample_period=0.01).enrich(msg)
    w = [p["time_from_start"]["sec"] + 1e-9 * p["time_from_start"]["nanosec"]
         for p in msg["points"]]
    np.testing.assert_allclose(enr.times[enr.waypoints], w, rtol=0, atol=0)
    for k, p in zip(enr.waypoints, msg["points"]):
        np.testing.assert_array_equal(enr.positions[k], p["positions"])
        if "velocities" in p:
            np.testing.assert_array_equal(enr.velocities[k], p["velocities"])
    steps = np.diff(enr.times)
    assert steps.max() <= 0.01 + 1e-12 and steps.min() >= 0.001 - 1e-12
    only = TrajectoryEnricher(robot, sample_period=0.0).enrich(msg)
    np.testing.assert_allclose(only.times, w)


def test_joint_order_of_the_goal_is_kept(robot, pm):
    order = [3, 0, 6, 1, 5, 2, 4]
    plain = TrajectoryEnricher(robot, sample_period=0.05).enrich(goal())
    perm = TrajectoryEnricher(robot, sample_period=0.05).enrich(goal(order=order))
    assert perm.joint_names == tuple(NAMES[i] for i in order)
    np.testing.assert_allclose(perm.effort, plain.effort[:, order], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(perm.positions, plain.positions[:, order], atol=0)


def test_motor_output_is_the_sea_flatness_feedforward(robot, pm):
    from mbs_dynamics.control.actuators import SEA
    msg = goal()
    act = SEA(K, B, DM, n=7)
    enr = TrajectoryEnricher(robot, output="motor", actuator=act, sample_period=0.02).enrich(msg)
    traj = Trajectory.from_dict(msg)

    def tau(s):
        qs = traj.sample(s)
        return rnea(pm, qs[0], qs[1], qs[2])

    h = 1e-4
    for k in range(3, len(enr) - 3, 11):
        t = enr.times[k]
        qs = traj.sample(t)
        t0, tp, tm = tau(t), tau(t + h), tau(t - h)
        td, tdd = (tp - tm) / (2 * h), (tp - 2 * t0 + tm) / h ** 2
        theta, theta_d, theta_dd = qs[0] + t0 / K, qs[1] + td / K, qs[2] + tdd / K
        np.testing.assert_allclose(enr.positions[k], theta, atol=1e-9)
        np.testing.assert_allclose(enr.velocities[k], theta_d, atol=1e-6)
        np.testing.assert_allclose(enr.accelerations[k], theta_dd, atol=2e-4)
        np.testing.assert_allclose(enr.effort[k], B * theta_dd + DM * theta_d + t0, atol=1e-3)


def test_single_point_is_filled_at_rest(robot, pm):
    msg = {"joint_names": NAMES, "points": [{"time_from_start": 1.5, "positions": Q0.tolist()}]}
    enr = TrajectoryEnricher(robot).enrich(msg)
    assert len(enr) == 1 and enr.times[0] == 1.5
    np.testing.assert_allclose(enr.effort[0], rnea(pm, Q0, np.zeros(7), np.zeros(7)),
                               rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(enr.velocities[0], 0.0)


def test_to_dict_round_trips_through_the_parser(robot):
    enr = TrajectoryEnricher(robot, sample_period=0.1).enrich(goal())
    back = Trajectory.from_dict(enr.to_dict())
    np.testing.assert_allclose(back.times, enr.times)
    d = enr.to_dict()
    assert set(d["points"][0]) == {"time_from_start", "positions", "velocities",
                                   "accelerations", "effort"}


class _WithMimic:
    def __init__(self, robot, mimic):
        self._robot = robot
        self.mimic_joints = mimic

    def __getattr__(self, name):
        return getattr(self._robot, name)


def test_mimic_joint_columns_are_dropped(robot):
    msg = goal()
    msg["joint_names"].append("arm7_finger_mimic")
    for p in msg["points"]:
        p["positions"].append(0.02)
        p["effort"].append(0.0)
    mimic = {"arm7_finger_mimic": ("arm7_joint7", 1.0, 0.0)}
    enr = TrajectoryEnricher(_WithMimic(robot, mimic), sample_period=0.05).enrich(msg)
    plain = TrajectoryEnricher(robot, sample_period=0.05).enrich(goal())
    assert enr.joint_names == tuple(NAMES)
    np.testing.assert_allclose(enr.effort, plain.effort, rtol=1e-12, atol=1e-12)
    with pytest.raises(EnrichmentError) as err:          # without mimic info: unknown
        TrajectoryEnricher(robot).enrich(msg)
    assert err.value.error_code == INVALID_JOINTS


def _bad(kind):
    msg = goal()
    pts = msg["points"]
    if kind == "unknown":
        msg["joint_names"][2] = "elbow_of_someone_else"
    elif kind == "missing":
        msg["joint_names"] = msg["joint_names"][:6]
        for p in pts:
            p["positions"] = p["positions"][:6]
            p["effort"] = p["effort"][:6]
    elif kind == "duplicate":
        msg["joint_names"][1] = msg["joint_names"][0]
    elif kind == "nan":
        pts[1]["positions"][3] = math.nan
    elif kind == "inf_velocity":
        pts[1]["velocities"] = [0.0] * 6 + [math.inf]
    elif kind == "equal_times":
        pts[2]["time_from_start"] = pts[1]["time_from_start"]
    elif kind == "negative_time":
        pts[0]["time_from_start"] = -0.5
    elif kind == "empty":
        del pts[:]
    elif kind == "short":
        pts[1]["positions"] = pts[1]["positions"][:3]
    elif kind == "not_a_mapping":
        msg = [1, 2, 3]
    elif kind == "huge":
        pts[1]["positions"] = [1e300] * 7
    return msg


@pytest.mark.parametrize("kind, code, words", [
    ("unknown", INVALID_JOINTS, "elbow_of_someone_else"),
    ("missing", INVALID_JOINTS, "arm7_joint7"),
    ("duplicate", INVALID_JOINTS, "duplicates"),
    ("nan", INVALID_GOAL, r"points\[1\].positions\[3\]"),
    ("inf_velocity", INVALID_GOAL, r"points\[1\].velocities\[6\]"),
    ("equal_times", INVALID_GOAL, "increase strictly"),
    ("negative_time", INVALID_GOAL, "must be >= 0"),
    ("empty", INVALID_GOAL, "no points"),
    ("short", INVALID_GOAL, r"points\[1\].positions has 3 values"),
    ("not_a_mapping", INVALID_GOAL, "mapping"),
    ("huge", INVALID_GOAL, "not finite"),
])
def test_bad_trajectories_raise_with_the_error_code(robot, kind, code, words):
    with pytest.raises(EnrichmentError, match=words) as err:
        TrajectoryEnricher(robot).enrich(_bad(kind))
    assert err.value.error_code == code


def test_too_many_points_is_refused_before_sampling(robot):
    msg = goal(times=(0.0, 1.0, 1e6))
    with pytest.raises(EnrichmentError, match="raise sample_period") as err:
        TrajectoryEnricher(robot, sample_period=0.001).enrich(msg)
    assert err.value.error_code == INVALID_GOAL


def test_vsa_spring_failure_is_an_invalid_goal_not_a_crash(robot):
    from mbs_dynamics.control.actuators import actuator_from_params
    act = actuator_from_params({"actuator.type": "vsa", "actuator.vsa.k": 1e-6,
                                "actuator.vsa.a": 0.1, "actuator.motor_inertia": 0.1,
                                "actuator.vsa.max_iterations": 2}, 7)
    try:
        enr = TrajectoryEnricher(robot, output="motor", actuator=act).enrich(goal())
    except EnrichmentError as exc:
        assert exc.error_code == INVALID_GOAL
    else:   # the spring inverted after all: then every number must be finite
        assert all(np.isfinite(a).all() for a in (enr.positions, enr.velocities,
                                                  enr.accelerations, enr.effort))


@pytest.mark.parametrize("kwargs, match", [
    (dict(output="torque"), "output must be one of"),
    (dict(output="motor"), "needs an elastic actuator"),
    (dict(sample_period=-0.01), "sample_period"),
    (dict(sample_period=math.nan), "sample_period"),
    (dict(max_points=0), "max_points"),
])
def test_constructor_errors(robot, kwargs, match):
    with pytest.raises(ValueError, match=match):
        TrajectoryEnricher(robot, **kwargs)


def test_module_does_not_import_rclpy():
    import subprocess
    import sys
    code = "import sys, mbs_dynamics.control.enrich; sys.exit(1 if 'rclpy' in sys.modules else 0)"
    assert subprocess.run([sys.executable, "-c", code],
                          cwd=tempfile.gettempdir()).returncode == 0
