"""Closed-loop robots behind the ROS nodes, without ROS (issue 19, items 1 and 3): the ``loops`` /
``actuated`` parameters, and the ROS-free cores the nodes call — the feedforward controller, the
trajectory enricher and the proxy's lead-in and hold (``proxy_logic``), and ``sea_feedforward`` —
on a ``ClosedLoopRobot`` (a serial arm with a parallelogram, a planar four-bar).

Oracle: the constrained inverse dynamics written here from Pinocchio (RNEA and generalized gravity
of the spanning tree, projected with G = [I; −K_d⁺K_a] built from Pinocchio's LOCAL frame
Jacobians of the loop frames: ``oracle_G`` of test/loops), at full-coordinate states whose
closure Pinocchio confirms; τ′, τ″ by 9-point central differences of that oracle along analytic
actuated trajectories.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import yaml

import mbs_dynamics as mbs
import loops_mechanisms as lm
from mbs_dynamics.control.controller import FeedforwardController
from mbs_dynamics.control.enrich import INVALID_JOINTS, EnrichmentError, TrajectoryEnricher
from mbs_dynamics.control.actuators import SEA
from mbs_dynamics.ros import proxy_logic
from mbs_dynamics.ros.parameters import (check_config, check_proxy_config, joint_name_problem,
                                         load_robot, read_loops_parameter, rest_positions)

try:
    import pinocchio as pin
except ImportError:  # skip per test, not per module (launch_testing)
    pin = None

needs_pin = pytest.mark.skipif(pin is None, reason="pinocchio is not installed")

D1 = np.array([1 / 280, -4 / 105, 1 / 5, -4 / 5, 0, 4 / 5, -1 / 5, 4 / 105, -1 / 280])


def load(name, **kw):
    u, loops, act = lm.ALL[name]()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", mbs.URDFWarning)
        r = mbs.load_urdf(u, loops=loops, actuated=kw.pop("actuated", act), **kw)
    return r, u, loops, act


class Oracle:
    """τ_a = Gᵀ τ_tree and g_a = Gᵀ g_tree from Pinocchio at the assembled full state."""

    def __init__(self, name):
        from test_loops_kinematics import PinLoops
        self.r, u, loops, _ = load(name)
        self.P = PinLoops(u, loops)

    def full(self, q, qd, qdd):
        X = self.r.expand(np.stack([q, qd, qdd]))
        assert self.P.closure_error(X[0]) < 1e-10
        return X

    def G(self, q_full):
        from test_loops_dynamics import oracle_G
        G, K, _ = oracle_G(self.r, self.P, q_full)
        return G, K

    def tau(self, q, qd, qdd):
        X = self.full(q, qd, qdd)
        G, K = self.G(X[0])
        assert np.abs(K @ X[1]).max() < 1e-9 * max(1.0, np.abs(X[1]).max())
        return G.T @ pin.rnea(self.P.model, self.P.data, X[0], X[1], X[2])

    def gravity(self, q):
        X = self.full(q, np.zeros_like(q), np.zeros_like(q))
        G, _ = self.G(X[0])
        return G.T @ pin.computeGeneralizedGravity(self.P.model, self.P.data, X[0])

    def tau_jet(self, traj, t, h=1e-2):
        """τ, τ′, τ″ at t of a Trajectory-like ``traj(t)`` → (≥3, n) rows q, q′, q″."""
        taus = np.array([self.tau(*traj(t + k * h)[:3]) for k in range(-8, 9)])
        d1 = np.tensordot(D1, taus[4:13], axes=(0, 0)) / h
        d1s = np.array([np.tensordot(D1, taus[i:i + 9], axes=(0, 0)) / h for i in range(9)])
        d2 = np.tensordot(D1, d1s, axes=(0, 0)) / h
        return taus[8], d1, d2


def rel(a, b):
    return np.abs(np.asarray(a) - b).max() / max(1.0, np.abs(b).max())


def analytic(r, seed=0):
    """q_a(t) = q_a0 + A sin(ω t + φ) − A sin φ: rows q … q'''' at t."""
    from test_loops_kinematics import trajectory

    def traj(t):
        return trajectory(r, t, seed)[:5]
    return traj


# ------------------------------------------------------------------------------------ parameters
def test_loops_parameter_file_text_and_empty(tmp_path):
    u, loops, act = lm.parallelogram_arm()
    text = yaml.safe_dump({"loops": loops})
    path = tmp_path / "pgram_loops.yaml"
    path.write_text(text)
    assert read_loops_parameter("") is None and read_loops_parameter("  ") is None
    assert read_loops_parameter(None) is None
    from_file = read_loops_parameter(str(path))
    from_text = read_loops_parameter(text)
    assert from_file == from_text == yaml.safe_load(text)["loops"]
    assert read_loops_parameter(yaml.safe_dump(loops)) == from_file   # a bare list
    cfg = check_config({"loops": str(path), "actuated": act})
    assert cfg["loops"] == from_file and cfg["actuated"] == act
    robot, note = load_robot(u, cfg)
    assert note == ""
    direct = mbs.load_urdf(u, loops=str(path), actuated=act)        # exactly as load_urdf
    assert type(robot) is type(direct)
    assert robot.joint_names == direct.joint_names == ("yaw", "drive", "pitch", "wrist")
    assert robot.full_joint_names == direct.full_joint_names
    assert robot.loops == direct.loops
    q = rest_positions(robot) + 0.1
    assert np.array_equal(robot.inverse_dynamics(q, q, q), direct.inverse_dynamics(q, q, q))
    pcfg = check_proxy_config({"loops": text, "actuated": act})
    assert pcfg["loops"] == from_file and pcfg["actuated"] == act
    # no loops: a plain Robot, as before
    plain, note = load_robot(u, check_config({}))
    assert type(plain) is mbs.Robot and plain.n == 6 and note == ""


def test_actuated_chosen_by_the_package_is_said():
    u, loops, _ = lm.planar_fourbar()
    robot, note = load_robot(u, check_config({"loops": yaml.safe_dump({"loops": loops})}))
    assert robot.actuated_chosen
    assert "closure" in note and str(list(robot.joint_names)) in note and "actuated" in note


@pytest.mark.parametrize("value, words", [
    ("no/such/loops.yaml", "no such file 'no/such/loops.yaml'"),
    ("loops: 3", "'loops:' list"),
    ("loops: []", "empty"),
    ("{robot: x}", "no 'loops:' list"),
    ("loops: [a, {b: 1", "loops"),
    ("[" * 5000, "loops"),                                     # the package's YAML limits
])
def test_bad_loops_parameter_is_one_value_error(value, words):
    with pytest.raises(ValueError) as exc:
        check_config({"loops": value})
    assert words in str(exc.value)
    assert "\n" not in str(exc.value)


def test_bad_actuated_parameter():
    with pytest.raises(ValueError, match="needs loops"):
        check_config({"actuated": ["j_crank"]})
    u, loops, _ = lm.planar_fourbar()
    text = yaml.safe_dump({"loops": loops})
    with pytest.raises(ValueError, match="twice"):
        check_proxy_config({"loops": text, "actuated": ["j_crank", "j_crank"]})
    with pytest.raises(ValueError, match="must be a string"):
        check_config({"loops": 3})
    # unknown actuated joint, or a loop the model does not have: the loader's message
    with pytest.raises(ValueError, match="'nope' is not a movable joint"):
        load_robot(u, check_config({"loops": text, "actuated": ["nope"]}))
    with pytest.raises(ValueError, match="frame_a 'nolink' is not a link"):
        load_robot(u, check_config({"loops": text.replace("coupler", "nolink")}))


def test_joint_name_problem_says_dependent():
    r, *_ = load("parallelogram_arm")
    assert joint_name_problem(r, ["yaw", "wrist"], "joints") is None
    text = joint_name_problem(r, ["yaw", "elbow", "nope"], "joints")
    assert "['elbow'] are dependent joints" in text and "['nope'] are not movable" in text


def test_config_files_document_the_loop_parameters():
    from pathlib import Path
    repo = Path(__file__).resolve().parents[2]
    for name in ("rigid_arm.yaml", "feedforward_proxy.yaml"):
        text = (repo / "config" / name).read_text()
        assert "# loops:" in text and "# actuated:" in text, name


# ------------------------------------------------------------------------ feedforward controller
@needs_pin
def test_controller_on_a_parallelogram_arm():
    """Joint states with every joint (dependent ones ignored, even NaN) or the actuated ones
    only; hold = g_a; a trajectory of the actuated joints → τ, τ′, τ″ of the oracle; SEA motor
    references θ = q + K⁻¹τ; a trajectory naming a dependent joint is rejected naming it."""
    r, *_ = load("parallelogram_arm")
    orc = Oracle("parallelogram_arm")
    names = list(r.joint_names)
    K = np.array([400.0, 500.0, 300.0, 200.0])   # SEA parameters in ctl.joints order
    ctl = FeedforwardController(r, joints=["wrist", "pitch", "yaw", "drive"],
                                actuator=SEA(K, 0.02, n=4), joint_state_timeout=0.0)
    perm = [names.index(j) for j in ctl.joints]
    q_meas = rest_positions(r) + np.array([0.1, -0.05, 0.08, 0.3])
    full = r.copy().expand(q_meas)
    js_names = list(reversed(r.full_joint_names))
    pos = full[[r.full_joint_names.index(j) for j in js_names]]
    dep = [js_names.index(j) for j in r.dependent_joint_names]
    pos[dep] = np.nan                            # dependent joints: ignored
    assert ctl.set_joint_state(js_names, pos, stamp=0.0)
    out = ctl.update(0.01)
    assert out.mode == "hold"
    assert rel(out.tau, orc.gravity(q_meas)[perm]) < 1e-10
    assert np.array_equal(out.q, q_meas[perm])
    # the actuated joints only, any order
    assert ctl.set_joint_state(ctl.joints, q_meas[perm], stamp=0.02)
    assert rel(ctl.update(0.02).tau, orc.gravity(q_meas)[perm]) < 1e-10

    bad = {"joint_names": ["yaw", "pitch", "drive", "wrist", "elbow"],
           "points": [{"time_from_start": 0.0, "positions": [0.0] * 5},
                      {"time_from_start": 1.0, "positions": [0.1] * 5}]}
    assert not ctl.set_trajectory(bad, now=0.0)
    assert ctl.rejections["unknown_joint"] == 1
    assert "dependent joints ['elbow']" in ctl.last_rejection

    traj = analytic(r, seed=3)
    T = np.linspace(0.0, 2.0, 21)
    qs = np.array([traj(t) for t in T])
    msg = {"joint_names": names,
           "points": [{"time_from_start": float(t), "positions": qs[k, 0].tolist(),
                       "velocities": qs[k, 1].tolist(), "accelerations": qs[k, 2].tolist()}
                      for k, t in enumerate(T)]}
    assert ctl.set_trajectory(msg, now=0.0)
    t = 0.95             # mid-segment: the differences' stencil (±16 ms) stays inside it
    out = ctl.update(t)
    assert out.mode == "trajectory"
    spline = ctl._active.traj
    tau, d1, d2 = orc.tau_jet(lambda s: spline.sample(s), t, h=2e-3)
    assert rel(out.tau, tau[perm]) < 1e-10
    assert rel(out.tau_dot, d1[perm]) < 1e-7
    assert rel(out.tau_ddot, d2[perm]) < 1e-5
    qd = spline.sample(t)
    assert rel(out.theta, qd[0, perm] + tau[perm] / K) < 1e-10
    assert rel(out.theta_ddot, qd[2, perm] + d2[perm] / K) < 1e-5


# ----------------------------------------------------------------------- enricher and proxy logic
@needs_pin
def test_enricher_and_lead_in_on_a_four_bar():
    r, *_ = load("planar_fourbar")
    orc = Oracle("planar_fourbar")
    q0 = rest_positions(r)
    enr = TrajectoryEnricher(r, output="effort", sample_period=0.05)
    goal = {"joint_names": ["j_crank"],
            "points": [{"time_from_start": 0.5, "positions": (q0 + 0.2).tolist()},
                       {"time_from_start": 1.5, "positions": (q0 + 0.6).tolist()}]}
    e = enr.enrich(goal)
    assert e.joint_names == ("j_crank",) and len(e) == 21
    for k in (0, 7, 20):
        want = orc.tau(e.positions[k], e.velocities[k], e.accelerations[k])
        assert rel(e.effort[k], want) < 1e-10
    # JTC's lead-in from the measured state, effort = the oracle's ID along JTC's quintic
    state = q0 - 0.1
    led = proxy_logic.lead_in(r, e, state, [0.3], sample_period=0.05)
    assert led.times[0] == 0.0 and np.array_equal(led.positions[0], state)
    n_in = led.waypoints[0]
    assert n_in >= 10 and np.allclose(led.times[n_in:], e.times)
    for k in range(0, n_in, 3):
        want = orc.tau(led.positions[k], led.velocities[k], led.accelerations[k])
        assert rel(led.effort[k], want) < 1e-10
    coeff = proxy_logic.jtc_coefficients(state, e.positions[0], 0.5, [0.3], e.velocities[0],
                                         [0.0], e.accelerations[0])
    assert rel(led.positions[:n_in], proxy_logic.jtc_sample(coeff, led.times[:n_in])[:, 0]) \
        < 1e-12
    # hold: g(q) of the oracle
    hold = proxy_logic.hold_point(r, ["j_crank"], q0 + 0.3)
    assert rel(hold["effort"], orc.gravity(q0 + 0.3)) < 1e-10
    with pytest.raises(ValueError, match="not the model's joints"):
        proxy_logic.hold_point(r, ["j_crank", "j_rocker"], [0.0, 0.0])
    # a goal naming a dependent joint: INVALID_JOINTS, naming it
    bad = {"joint_names": ["j_crank", "j_rocker"],
           "points": [{"time_from_start": 0.0, "positions": [0.0, 0.0]}]}
    with pytest.raises(EnrichmentError) as exc:
        enr.enrich(bad)
    assert exc.value.error_code == INVALID_JOINTS
    assert "['j_rocker'] are dependent joints" in str(exc.value)


@needs_pin
def test_motor_output_and_sea_feedforward_on_a_four_bar():
    """output motor (SEA): θ = q + K⁻¹τ, θ″ = q″ + K⁻¹τ″, τ_m = Bθ″ + τ with τ, τ″ of the
    oracle (differences along the analytic trajectory); sea_feedforward gives the same."""
    r, *_ = load("planar_fourbar")
    orc = Oracle("planar_fourbar")
    traj = analytic(r, seed=5)
    K, B = 250.0, 0.03
    t = 0.7
    tau, d1, d2 = orc.tau_jet(traj, t)
    ff = mbs.sea_feedforward(r, traj(t), K, B)
    assert rel(ff.tau, tau) < 1e-10 and rel(ff.tau_dot, d1) < 1e-7 and rel(ff.tau_ddot, d2) < 1e-6
    q = traj(t)
    assert rel(ff.theta, q[0] + tau / K) < 1e-10
    assert rel(ff.theta_ddot, q[2] + d2 / K) < 1e-6
    assert rel(ff.tau_motor, B * (q[2] + d2 / K) + tau) < 1e-6
    enr = TrajectoryEnricher(r, output="motor", actuator=SEA(K, B, n=1), sample_period=0.0)
    T = np.linspace(0.0, 1.4, 15)
    qs = np.array([traj(s) for s in T])
    e = enr.enrich({"joint_names": ["j_crank"],
                    "points": [{"time_from_start": float(s), "positions": qs[k, 0].tolist(),
                                "velocities": qs[k, 1].tolist(),
                                "accelerations": qs[k, 2].tolist()}
                               for k, s in enumerate(T)]})
    k = 7                                            # t = 0.7, a waypoint
    assert math.isclose(e.times[k], t)
    assert rel(e.positions[k], q[0] + tau / K) < 1e-10


def test_unreachable_motion_is_refused_never_raised():
    """A rocker-driven four-bar cannot reach 1.5 rad: the enricher answers INVALID_GOAL naming
    the assembly failure; the controller publishes nothing for those cycles (counted) and
    holds again once the state is reachable; hold_point raises a ValueError saying why."""
    from mbs_dynamics.control.enrich import INVALID_GOAL

    r, *_ = load("planar_fourbar", actuated=["j_rocker"])
    q0 = rest_positions(r)
    enr = TrajectoryEnricher(r, output="effort", sample_period=0.1)
    goal = {"joint_names": ["j_rocker"],
            "points": [{"time_from_start": 0.0, "positions": q0.tolist()},
                       {"time_from_start": 1.0, "positions": [1.5]}]}
    with pytest.raises(EnrichmentError) as exc:
        enr.enrich(goal)
    assert exc.value.error_code == INVALID_GOAL and "cannot assemble" in str(exc.value)
    with pytest.raises(ValueError, match="cannot assemble"):
        proxy_logic.hold_point(r, ["j_rocker"], [1.5])
    ctl = FeedforwardController(r, joint_state_timeout=0.0)
    assert ctl.set_joint_state(["j_rocker"], [1.5], stamp=0.0)
    out = ctl.update(0.0)
    assert out.mode == "none" and not out.valid
    assert ctl.rejections["non_finite_output"] == 1 and "cannot assemble" in ctl.last_rejection
    assert ctl.set_joint_state(["j_rocker"], q0, stamp=0.1)
    assert ctl.update(0.1).mode == "hold"
