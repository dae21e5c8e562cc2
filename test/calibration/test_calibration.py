"""Geometric calibration (mbs_dynamics.calibration): the pose sensitivities against central
differences of the poses, the calibrated model against Pinocchio (through its URDF), the number
of identifiable parameters against the classical count 4R + 2P + 6 (Everett, Driels and Mooring
1987; three fewer when only positions are measured), and calibration from simulated
measurements of a robot with hidden errors: identifiable parameters within 3σ of the true
combination they identify, held-out error at the noise level, the rest reported unidentifiable.
"""
from __future__ import annotations

import numpy as np
import pytest

import mbs_dynamics as mbs
from mbs_dynamics.calibration import (GeometricParameters, Measurements, calibrate,
                                      identifiable_parameters, select_poses)
from mbs_dynamics.kernels import lie

H = np.pi / 2
LINK = dict(mass=2.0, com=(0.0, 0.01, 0.05), inertia=np.diag([0.02, 0.02, 0.01]))


def _iiwa(prismatic=False):
    """A 7-joint arm in modified DH (seed 004's iiwa with a base height) and a tool frame."""
    table = [(0, 0, 0.36, 0), (0, H, 0, 0), (0, -H, 0.42, 0), (0, -H, 0, 0), (0, H, 0.4, 0),
             (0, H, 0, 0), (0, -H, 0, 0)]
    types = ["revolute"] * 7
    if prismatic:
        table[6] = (0.05, -H, 0.1, 0.3)
        types[6] = "prismatic"
    tool = np.eye(4)
    tool[:3, 3] = (0.02, 0.01, 0.126)
    return mbs.from_dh(table, "modified", inertials=[LINK] * 7, joint_types=types,
                       frames={"tool": ("link7", tool)})


def _tree():
    """A tree from zero-reference screws: two branches off body 1, a target on each."""
    rng = np.random.default_rng(2)
    Y, A = np.zeros((4, 6)), np.tile(np.eye(4), (4, 1, 1))
    for i in range(4):
        e = rng.normal(size=3)
        e /= np.linalg.norm(e)
        y = rng.uniform(-0.4, 0.4, 3)
        Y[i] = np.r_[np.cross(y, e), e]
        A[i, :3, 3] = rng.uniform(-0.5, 0.5, 3)
    t = np.eye(4)
    t[:3, 3] = (0.1, 0, 0)
    return mbs.from_screws(Y, A, inertials=[LINK] * 4, parent=[-1, 0, 1, 0],
                           frames={"a": ("link3", t), "b": ("link4", t)})


@pytest.mark.parametrize("make, frame", [(_iiwa, "tool"), (lambda: _iiwa(True), "tool"),
                                         (_tree, "a"), (_tree, "b")])
def test_jacobian_equals_central_differences(make, frame):
    robot = make()
    gp = GeometricParameters(robot.model, ("a", "b") if frame in "ab" else (frame,))
    rng = np.random.default_rng(1)
    pi = 0.05 * rng.normal(size=gp.size)  # away from 0: the dexp factor matters
    q = rng.uniform(-2, 2, (5, robot.n))
    J, T = gp.jacobian(pi, q, frame)
    h = 1e-6
    for k in range(gp.size):
        d = np.zeros(gp.size)
        d[k] = h
        Tp, Tm = gp.poses(pi + d, q, frame), gp.poses(pi - d, q, frame)
        Tp2, Tm2 = gp.poses(pi + 2 * d, q, frame), gp.poses(pi - 2 * d, q, frame)
        dp = (8 * (Tp - Tm) - (Tp2 - Tm2))[:, :3, 3] / (12 * h)  # 4th-order differences
        dR = (8 * (Tp - Tm) - (Tp2 - Tm2))[:, :3, :3] / (12 * h)
        dw = lie.vee(dR @ T[:, :3, :3].transpose(0, 2, 1))  # δR Rᵀ = θ̃
        assert np.abs(dp - J[:, :3, k]).max() <= 1e-8, gp.names[k]
        assert np.abs(dw - J[:, 3:, k]).max() <= 1e-8, gp.names[k]
    assert np.abs(T - gp.poses(pi, q, frame)).max() == 0


def test_calibrated_model_against_pinocchio_through_its_urdf():
    """The poses of the parameterised model equal Pinocchio's model of the URDF written from
    ``apply(π)`` (base pose composed), and the Robot's own."""
    pin = pytest.importorskip("pinocchio")
    robot = _iiwa(True)
    gp = GeometricParameters(robot.model, ("tool",))
    rng = np.random.default_rng(4)
    pi = 3e-3 * rng.normal(size=gp.size)
    model, T_wb = gp.apply(pi)
    new = mbs.Robot(model)
    pm = pin.buildModelFromXML(new.to_urdf())
    pd = pm.createData()
    fid = pm.getFrameId("tool")
    q = rng.uniform(-2, 2, (6, 7))
    T = gp.poses(pi, q, "tool")
    for k in range(len(q)):
        pin.framesForwardKinematics(pm, pd, q[k])
        assert np.abs(T_wb @ pd.oMf[fid].homogeneous - T[k]).max() <= 1e-13
        assert np.abs(T_wb @ new.frame_placement(q[k], "tool") - T[k]).max() <= 1e-13


@pytest.mark.parametrize("prismatic, kind, expected", [(False, "pose", 34), (False, "position", 31),
                                                       (True, "pose", 32)])
def test_identifiable_count_is_the_classical_one(prismatic, kind, expected):
    robot = _iiwa(prismatic)
    gp = GeometricParameters(robot.model, ("tool",))
    rng = np.random.default_rng(0)
    q = rng.uniform(-2.5, 2.5, (80, 7))
    J, _ = gp.jacobian(None, q, "tool")
    J = J[:, :3] if kind == "position" else J
    ident = identifiable_parameters(J.reshape(-1, gp.size))
    assert ident.rank == expected
    # the regrouping reproduces the dependent columns
    Jf = J.reshape(-1, gp.size)
    assert np.abs(Jf[:, ident.dependent] - Jf[:, ident.base] @ ident.beta).max() <= 1e-9


def _simulate(robot, rng, kind, noise, N, hidden=2e-3):
    """Measurements of the tool of a robot whose geometry differs from ``robot`` by hidden
    errors (every parameter, ~hidden m or rad) seen from a tracker placed off the base."""
    gp = GeometricParameters(robot.model, ("tool",))
    truth = hidden * rng.normal(size=gp.size)
    q = rng.uniform(-2.5, 2.5, (N, robot.n))
    T = gp.poses(truth, q, "tool")
    if kind == "position":
        m = Measurements(q, "tool", positions=T[:, :3, 3] + noise[0] * rng.normal(size=(N, 3)),
                         sigma_position=noise[0])
    else:
        R = lie.so3_exp(noise[1] * rng.normal(size=(N, 3))) @ T[:, :3, :3]
        P = T.copy()
        P[:, :3, :3] = R
        P[:, :3, 3] += noise[0] * rng.normal(size=(N, 3))
        m = Measurements(q, "tool", poses=P, sigma_position=noise[0], sigma_rotation=noise[1])
    return gp, truth, m


@pytest.mark.parametrize("kind, seed, prismatic", [("position", 0, False), ("position", 3, True),
                                                   ("pose", 2, False)])
def test_calibration_recovers_hidden_errors(kind, seed, prismatic):
    """Hidden errors in every parameter. The base parameters identify an exactly equivalent
    geometry (the noise-free fit has residuals ~1e-12): the estimates from noisy data lie within
    3σ of it, and it equals the linear regrouping π_b + β π_d to second order in the errors."""
    pytest.importorskip("scipy")
    robot = _iiwa(prismatic)
    rng = np.random.default_rng(seed)
    noise, hidden = (5e-5, 1e-4), 2e-3
    gp, truth, m = _simulate(robot, rng, kind, noise, 80, hidden)
    calibrated, rep = calibrate(robot, m)
    assert isinstance(calibrated, mbs.Robot) and rep.converged
    b = [gp.names.index(nm) for nm in rep.identifiable]
    d = [gp.names.index(nm) for nm in rep.unidentifiable]
    assert sorted(b + d) == list(range(gp.size)) and len(d) > 0
    assert np.all(rep.pi[d] == 0)  # never "estimated"
    # the equivalent geometry: the same robot measured without noise
    T = gp.poses(truth, m.q, "tool")
    exact = Measurements(m.q, "tool", positions=None if kind == "pose" else T[:, :3, 3],
                         poses=T if kind == "pose" else None, sigma_position=noise[0],
                         sigma_rotation=noise[1])
    _, ref = calibrate(robot, exact)
    assert ref.identifiable == rep.identifiable
    assert ref.rms_after["position"] <= 1e-10
    assert np.abs(ref.estimates - (truth[b] + rep.regrouping @ truth[d])).max() <= 10 * hidden ** 2
    z = (rep.estimates - ref.estimates) / rep.sigma
    assert np.abs(z).max() <= 3.0, dict(zip(rep.identifiable, np.round(z, 2)))
    assert 0.6 < rep.chi2_dof < 1.5
    # held-out poses: the calibrated robot (and base pose) against the true geometry, no noise
    q = rng.uniform(-2.5, 2.5, (50, robot.n))
    T_true = gp.poses(truth, q, "tool")
    T_cal = np.array([rep.base_pose @ calibrated.frame_placement(qk, "tool") for qk in q])
    err = np.linalg.norm(T_cal[:, :3, 3] - T_true[:, :3, 3], axis=1)
    assert np.sqrt(np.mean(err ** 2)) <= np.sqrt(3) * noise[0]
    err0 = np.linalg.norm(gp.poses(None, q, "tool")[:, :3, 3] - T_true[:, :3, 3], axis=1)
    assert np.sqrt(np.mean(err0 ** 2)) > 20 * noise[0]  # the errors were there to find
    assert rep.rms_after["position"] < rep.rms_before["position"] / 20
    assert "unidentifiable" in rep.summary()


def test_sigma_is_the_spread_of_the_estimates():
    """Over repeated experiments the normalised errors (estimate − equivalent truth)/σ have unit
    RMS: the reported σ are neither optimistic nor pessimistic. (Each |z| ≤ 3 holds with 99.7 %;
    the largest of ~30 correlated z exceeds 3 in a few percent of experiments.)"""
    pytest.importorskip("scipy")
    robot = _iiwa(True)
    zs = []
    for seed in range(6):
        rng = np.random.default_rng(100 + seed)
        gp, truth, m = _simulate(robot, rng, "position", (5e-5, 1e-4), 80)
        _, rep = calibrate(robot, m)
        exact = Measurements(m.q, "tool", positions=gp.poses(truth, m.q, "tool")[:, :3, 3],
                             sigma_position=5e-5)
        _, ref = calibrate(robot, exact)
        zs.append((rep.estimates - ref.estimates) / rep.sigma)
    rms = np.sqrt(np.mean(np.square(zs)))
    assert 0.8 < rms < 1.2


def test_identifiable_errors_alone_are_recovered_within_3_sigma():
    """Hidden errors only in the identifiable parameters (joint offsets, link lengths, axis
    misalignments of a few mm / mrad): the estimates are within 3σ of them directly."""
    pytest.importorskip("scipy")
    robot = _iiwa()
    rng = np.random.default_rng(8)
    gp, _, m0 = _simulate(robot, rng, "position", (5e-5, 0), 80)
    _, rep0 = calibrate(robot, m0)
    b = [gp.names.index(nm) for nm in rep0.identifiable]
    truth = np.zeros(gp.size)
    truth[b] = 3e-3 * rng.uniform(-1, 1, len(b))
    P = gp.poses(truth, m0.q, "tool")[:, :3, 3] + 5e-5 * rng.normal(size=(len(m0.q), 3))
    _, rep = calibrate(robot, Measurements(m0.q, "tool", positions=P, sigma_position=5e-5))
    assert rep.identifiable == rep0.identifiable
    assert np.abs((rep.estimates - truth[b]) / rep.sigma).max() <= 3.0
    assert any(nm in rep.offsets for nm in rep.identifiable)  # joint offsets among them


def test_selected_poses_condition_better_than_random():
    pytest.importorskip("scipy")
    robot = _iiwa()
    rng = np.random.default_rng(3)
    cand = rng.uniform(-2.5, 2.5, (200, 7))
    idx, cond = select_poses(robot, cand, "tool", 15)
    assert len(set(idx.tolist())) == 15 and np.isfinite(cond)
    gp = GeometricParameters(robot.model, ("tool",))
    J, _ = gp.jacobian(None, cand, "tool")
    J = J / 1e-4  # weighted by the default σ, as select_poses does
    ident = identifiable_parameters(J[:, :3].reshape(-1, gp.size))

    def cond_of(sel):
        Jb = J[:, :3][:, :, ident.base]
        Js = Jb.reshape(-1, ident.rank) / np.linalg.norm(Jb.reshape(-1, ident.rank), axis=0)
        Js = Js.reshape(len(cand), 3, -1)[sel].reshape(-1, ident.rank)
        s = np.linalg.svd(Js, compute_uv=False)
        return s[0] / s[-1]

    assert abs(cond_of(idx) - cond) <= 1e-6 * cond
    rand = [cond_of(rng.choice(200, 15, replace=False)) for _ in range(20)]
    assert cond < np.median(rand)


@pytest.mark.parametrize("bad, msg", [
    (dict(q=np.full((3, 7), np.nan)), "q must be"),
    (dict(q=np.zeros((3, 6))), "q must be"),
    (dict(positions=np.zeros((2, 3))), "positions must be"),
    (dict(sigma_position=0.0), "sigma_position"),
    (dict(poses=np.tile(np.eye(4), (3, 1, 1))), "positions or poses"),
    (dict(frame="nowhere"), "unknown frame 'nowhere'"),
    (dict(frame="link7"), "frame of a moving body"),
])
def test_bad_measurements_are_one_clear_error(bad, msg):
    pytest.importorskip("scipy")
    robot = _iiwa()
    m = dict(q=np.zeros((3, 7)), frame="tool", positions=np.zeros((3, 3)))
    m.update(bad)
    with pytest.raises(ValueError) as e:
        calibrate(robot, m)
    assert msg in str(e.value)


def test_refuses_floating_base_and_mimic():
    text = ('<robot name="r"><link name="b"><inertial><mass value="1"/><inertia ixx="1" ixy="0" '
            'ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link><link name="c"><inertial>'
            '<mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/>'
            '</inertial></link><joint name="j" type="revolute"><parent link="b"/>'
            '<child link="c"/><axis xyz="0 0 1"/></joint></robot>')
    robot = mbs.load_urdf(text, floating_base=True)
    with pytest.raises(ValueError, match="floating-base"):
        GeometricParameters(robot.model, ("c",), frame_params=False)


@pytest.mark.parametrize("make", [lambda: _iiwa(True), _tree])
def test_torque_sensitivity_equals_central_differences(make):
    """∂τ/∂π (the augmented tree's analytic ∂τ/∂q) against 4th-order central differences of τ
    of the models built with ±π (a chain with a prismatic joint, a tree)."""
    from mbs_dynamics.calibration import torque_sensitivity
    robot = make()
    rng = np.random.default_rng(6)
    q, qd, qdd = rng.normal(size=(3, robot.n))
    S = torque_sensitivity(robot, q, qd, qdd)
    gp = GeometricParameters(robot.model, (), base=False, frame_params=False)
    assert S.shape == (robot.n, gp.size)

    def tau(pi):
        return mbs.Robot(gp.apply(pi)[0]).inverse_dynamics(q, qd, qdd)

    h = 1e-4
    for k in range(gp.size):
        d = np.zeros(gp.size)
        d[k] = h
        F = (8 * (tau(d) - tau(-d)) - (tau(2 * d) - tau(-2 * d))) / (12 * h)
        assert np.abs(S[:, k] - F).max() <= 1e-9 * max(1.0, np.abs(S).max()), gp.names[k]
    with pytest.raises(ValueError, match="qd must be"):
        torque_sensitivity(robot, q, qd[:-1], qdd)
