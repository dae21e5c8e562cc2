"""Frames, twists, Jacobians, J̇ and accelerations in the four representations (issue 18, items
1–2) against Pinocchio.

Oracles (Pinocchio 4.1, measured): ``framesForwardKinematics`` (pose); ``getFrameJacobian``,
``getFrameJacobianTimeVariation`` (the exact time derivative of the Jacobian in LOCAL, WORLD and
LOCAL_WORLD_ALIGNED), ``getFrameVelocity``; ``getFrameAcceleration`` in LOCAL and WORLD (d/dt of
those twists) and ``getFrameClassicalAcceleration`` in LOCAL_WORLD_ALIGNED (d/dt of the hybrid
twist (ṗ, ω): ``getFrameAcceleration`` there is not — its linear part is p̈ − ω × ṗ). The mixed
form from its definition (seed 001 §3.4): the hybrid linear rows with the body angular rows.
Mimic robots: Pinocchio's full model (mimic joints as ordinary joints) at q_full = G q + off with
G built from the URDF text by test_mimic's oracle, projected with G. Every frame of every robot,
fixed and floating bases, ≤ 1e-12 relative.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import mbs_dynamics as mbs
from conftest import PANDA, erd_path, pin_model, pin_q, random_urdf
from test_mimic import CHAIN, ERD, FB_CHAIN, Oracle, OracleFB

TOL = 1e-12
REPS = ("body", "spatial", "hybrid", "mixed")


def _rel(a, b):
    return np.abs(np.asarray(a) - b).max() / max(1.0, np.abs(b).max())


class _Locked:
    """Pinocchio's reduced model (locked joints), no mimic: G = I."""

    def __init__(self, src, locked):
        self.pm = pin_model(src, locked)
        self.pd = self.pm.createData()
        self.G = np.eye(self.pm.nv)

    def q(self, q):
        return pin_q(self.pm, q)


FIXED = {"ur5": "ur_description/urdf/ur5_robot.urdf",
         "kinova": "kinova_description/robots/kinova.urdf"}
FLOATING = {"solo12": "solo_description/robots/solo12.urdf",
            "anymal": "anymal_b_simple_description/robots/anymal.urdf",
            "talos": "talos_data/robots/talos_reduced.urdf"}


def _load(case):
    """(robot, oracle with pm, pd, q(), G)."""
    pytest.importorskip("pinocchio")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", mbs.URDFWarning)
        if case == "panda_locked":
            src = erd_path(PANDA[0])
            return mbs.load_urdf(src, locked_joints=PANDA[1]), _Locked(src, PANDA[1])
        if case == "panda_locked_pose":  # locked joints away from zero: frames behind them
            locked = {"panda_joint7": 0.5, "panda_finger_joint1": 0.03,
                      "panda_finger_joint2": 0.01}
            src = erd_path(PANDA[0])
            return mbs.load_urdf(src, locked_joints=locked), _Locked(src, locked)
        if case == "random_floating":
            src = random_urdf(5, n_movable=12, massless_prob=0.0)[0].replace(
                '<link name="base"/>', '<link name="base"><inertial><origin xyz="0.01 0.02 '
                '-0.03" rpy="0.1 0.2 0.3"/><mass value="4"/><inertia ixx="0.2" ixy="0.01" '
                'ixz="0" iyy="0.3" iyz="0" izz="0.25"/></inertial></link>')
            return mbs.load_urdf(src, floating_base=True), OracleFB(src)
        if case in FIXED:
            src = erd_path(FIXED[case])
            return mbs.load_urdf(src), Oracle(src)
        if case == "random":
            src = random_urdf(4, n_movable=10)[0]
            return mbs.load_urdf(src), Oracle(src)
        if case == "panda_mimic":
            src = erd_path(ERD["panda"])
            return mbs.load_urdf(src), Oracle(src)
        if case == "chain_mimic":
            return mbs.load_urdf(CHAIN), Oracle(CHAIN)
        if case in FLOATING:
            src = erd_path(FLOATING[case])
            return mbs.load_urdf(src, floating_base=True), OracleFB(src)
        if case == "talos_full_mimic":
            src = erd_path(ERD["talos_full"])
            return mbs.load_urdf(src, floating_base=True), OracleFB(src)
        if case == "chain_mimic_floating":
            return mbs.load_urdf(FB_CHAIN, floating_base=True), OracleFB(FB_CHAIN)
    raise KeyError(case)


CASES = ["panda_locked", "panda_locked_pose", "ur5", "kinova", "random", "panda_mimic",
         "chain_mimic", "solo12", "anymal", "talos", "random_floating", "talos_full_mimic",
         "chain_mimic_floating"]


@pytest.fixture(scope="module", params=CASES)
def pair(request):
    return _load(request.param)


def _state(robot, rng):
    q = rng.uniform(-1.2, 1.2, robot.nq)
    if robot.floating_base:
        quat = rng.normal(size=4)
        q[:3] = rng.normal(size=3)
        q[3:7] = quat / np.linalg.norm(quat)
    return q, rng.normal(size=robot.nv), rng.normal(size=robot.nv)


def _pin_frame(o, fid, rep, pq, v, a):
    """[J, J̇, V, A] of frame fid from Pinocchio in one of the four representations."""
    pin = pytest.importorskip("pinocchio")
    if rep == "mixed":  # seed 001 §3.4: (ṗ in the world, ω in the body)
        B = _pin_frame(o, fid, "body", pq, v, a)
        H = _pin_frame(o, fid, "hybrid", pq, v, a)
        return [np.concatenate([h[:3], b[3:]]) for b, h in zip(B, H)]
    r = {"body": pin.LOCAL, "spatial": pin.WORLD, "hybrid": pin.LOCAL_WORLD_ALIGNED}[rep]
    pm, pd = o.pm, o.pd
    pin.computeJointJacobiansTimeVariation(pm, pd, pq, v)
    pin.forwardKinematics(pm, pd, pq, v, a)
    pin.updateFramePlacements(pm, pd)
    acc = pin.getFrameClassicalAcceleration if rep == "hybrid" else pin.getFrameAcceleration
    return [pin.getFrameJacobian(pm, pd, fid, r), pin.getFrameJacobianTimeVariation(pm, pd, fid, r),
            pin.getFrameVelocity(pm, pd, fid, r).vector, acc(pm, pd, fid, r).vector]


def test_frame_names_are_pinocchios_body_frames(pair):
    """Every URDF link is a frame (merged links too), base link first, then depth-first: the
    movable bodies' links appear in joint order."""
    pin = pytest.importorskip("pinocchio")
    robot, o = pair
    names = robot.frame_names
    pin_bodies = {f.name for f in o.pm.frames if f.type == pin.FrameType.BODY}
    assert set(names) == pin_bodies
    assert len(set(names)) == len(names)
    assert names[0] == robot.base_link
    links = robot.full_robot.link_names if isinstance(robot, mbs.MimicRobot) else robot.link_names
    pos = [names.index(ln) for ln in links]
    assert pos == sorted(pos)


def test_merged_links_are_frames():
    robot, _ = _load("panda_locked")
    for f in ("panda_link8", "panda_hand", "panda_hand_tcp", "panda_leftfinger", "panda_link0"):
        assert f in robot.frame_names
    # panda_hand_tcp is 0.1034 m along the hand's z from panda_hand, which is welded to link 7
    q = np.zeros(robot.nq)
    T = robot.frame_placement(q, "panda_hand_tcp")
    H = robot.frame_placement(q, "panda_hand")
    expect = np.eye(4)
    expect[2, 3] = 0.1034
    np.testing.assert_allclose(np.linalg.inv(H) @ T, expect, atol=1e-12)


def test_every_frame_matches_pinocchio(pair):
    """Pose, J, J̇, twist and acceleration of every frame in the four representations."""
    pin = pytest.importorskip("pinocchio")
    robot, o = pair
    rng = np.random.default_rng(11)
    G = o.G
    for _ in range(2):
        q, v, a = _state(robot, rng)
        pq, pv, pa = o.q(q), G @ v, G @ a
        pin.framesForwardKinematics(o.pm, o.pd, pq)
        for f in robot.frame_names:
            fid = o.pm.getFrameId(f, pin.FrameType.BODY)
            assert _rel(robot.frame_placement(q, f), o.pd.oMf[fid].homogeneous) <= TOL, f
        for f in robot.frame_names:
            fid = o.pm.getFrameId(f, pin.FrameType.BODY)
            for rep in REPS:
                J, Jd, V, A = _pin_frame(o, fid, rep, pq, pv, pa)
                assert _rel(robot.frame_jacobian(q, f, rep), J @ G) <= TOL, (f, rep)
                assert _rel(robot.frame_jacobian_derivative(q, v, f, rep), Jd @ G) <= TOL, (f, rep)
                assert _rel(robot.frame_velocity(q, v, f, rep), V) <= TOL, (f, rep)
                assert _rel(robot.frame_acceleration(q, v, a, f, rep), A) <= TOL, (f, rep)
        pin.framesForwardKinematics(o.pm, o.pd, pq)


def test_default_representation_is_body():
    robot, _ = _load("ur5")
    q, v, a = _state(robot, np.random.default_rng(0))
    f = robot.frame_names[-1]
    np.testing.assert_array_equal(robot.frame_jacobian(q, f), robot.frame_jacobian(q, f, "body"))
    np.testing.assert_array_equal(robot.frame_velocity(q, v, f),
                                  robot.frame_velocity(q, v, f, "body"))


@pytest.mark.parametrize("case", ["panda_locked", "solo12", "panda_mimic", "talos_full_mimic"])
def test_batches_and_out(case):
    robot, _ = _load(case)
    rng = np.random.default_rng(5)
    S = [_state(robot, rng) for _ in range(4)]
    Q, V, A = (np.array([s[i] for s in S]) for i in range(3))
    f = robot.frame_names[-1]
    np.testing.assert_array_equal(robot.frame_placement(Q, f),
                                  np.array([robot.frame_placement(q, f) for q in Q]))
    for rep in REPS:
        np.testing.assert_array_equal(robot.frame_jacobian(Q, f, rep),
                                      np.array([robot.frame_jacobian(q, f, rep) for q in Q]))
        np.testing.assert_array_equal(
            robot.frame_jacobian_derivative(Q, V, f, rep),
            np.array([robot.frame_jacobian_derivative(q, v, f, rep) for q, v in zip(Q, V)]))
        np.testing.assert_array_equal(
            robot.frame_velocity(Q, V, f, rep),
            np.array([robot.frame_velocity(q, v, f, rep) for q, v in zip(Q, V)]))
        np.testing.assert_array_equal(
            robot.frame_acceleration(Q, V, A, f, rep),
            np.array([robot.frame_acceleration(q, v, a, f, rep) for q, v, a in zip(Q, V, A)]))
    # out= is filled and returned; lists are accepted
    out = np.empty((6, robot.nv))
    assert robot.frame_jacobian(list(Q[0]), f, "hybrid", out=out) is out
    np.testing.assert_array_equal(out, robot.frame_jacobian(Q[0], f, "hybrid"))
    out4 = np.empty((4, 4, 4))
    assert robot.frame_placement(Q, f, out=out4) is out4
    with pytest.raises(ValueError, match="out"):
        robot.frame_jacobian(Q[0], f, out=np.empty((6, robot.nv + 1)))
    with pytest.raises(ValueError, match="out"):
        robot.frame_placement(Q[0], f, out=np.empty((4, 4), dtype=np.float32))


def test_out_aliasing_an_input_is_safe():
    robot, _ = _load("panda_locked")
    rng = np.random.default_rng(2)
    Q = np.array([_state(robot, rng)[0] for _ in range(8)])
    f = "panda_hand_tcp"
    ref = robot.frame_placement(Q, f).copy()
    buf = np.zeros(8 * 16)
    buf[:Q.size] = Q.ravel()
    q_view = buf[:Q.size].reshape(Q.shape)
    out = buf.reshape(8, 4, 4)
    robot.frame_placement(q_view, f, out=out)
    np.testing.assert_array_equal(out, ref)


def test_bad_input():
    robot, _ = _load("panda_locked")
    q = np.zeros(robot.nq)
    with pytest.raises(ValueError, match="panda_hand_tcp"):
        robot.frame_jacobian(q, "panda_hand_tc")
    with pytest.raises(ValueError, match="unknown frame"):
        robot.frame_placement(q, "zzz")
    with pytest.raises(ValueError, match="unknown frame"):
        robot.frame_placement(q, 3)
    for call in (lambda r: robot.frame_jacobian(q, "panda_hand", r),
                 lambda r: robot.frame_velocity(q, q, "panda_hand", r),
                 lambda r: robot.frame_jacobian_derivative(q, q, "panda_hand", r),
                 lambda r: robot.frame_acceleration(q, q, q, "panda_hand", r)):
        with pytest.raises(ValueError, match="'body', 'spatial', 'hybrid', 'mixed'"):
            call("LOCAL")
    with pytest.raises(ValueError, match="q contains NaN"):
        robot.frame_placement(np.r_[np.nan, q[1:]], "panda_hand")
    with pytest.raises(ValueError, match=r"q has shape \(5,\)"):
        robot.frame_jacobian(np.zeros(5), "panda_hand")
    with pytest.raises(ValueError, match="qd has shape"):
        robot.frame_velocity(q, np.zeros(3), "panda_hand")
    with pytest.raises(ValueError, match="qdd contains NaN"):
        robot.frame_acceleration(q, q, np.full(robot.nv, np.inf), "panda_hand")
    with pytest.raises(ValueError, match="qd has shape"):
        robot.frame_jacobian_derivative(np.zeros((3, robot.nq)), np.zeros((2, robot.nv)),
                                        "panda_hand")
    with pytest.raises(TypeError):
        robot.frame_placement(q + 0j, "panda_hand")
    fb, _ = _load("solo12")
    qf = np.zeros(fb.nq)
    with pytest.raises(ValueError, match="unit quaternion"):
        fb.frame_placement(qf, "FL_FOOT")
    mim, _ = _load("panda_mimic")
    with pytest.raises(ValueError, match="panda_hand_tcp"):
        mim.frame_jacobian(np.zeros(mim.nq), "panda_hand_tcpp")
    with pytest.raises(ValueError, match="q has shape"):
        mim.frame_jacobian(np.zeros(mim.nq + 1), "panda_hand_tcp")


def test_f_ext_is_force_then_moment_and_maps_through_the_body_jacobian():
    """A static wrench W = (f, m) on a frame, in that frame, costs τ = −J_bodyᵀ W (virtual work;
    the same convention as Pinocchio's fext, checked in test_dynamics_oracle), for a fixed and a
    floating base."""
    for case, frame in (("panda_locked", "panda_hand_tcp"), ("solo12", "FL_FOOT")):
        robot, _ = _load(case)
        q, _, _ = _state(robot, np.random.default_rng(4))
        z = np.zeros(robot.nv)
        W = np.array([3.0, -2.0, 5.0, 0.2, 0.1, -0.4])  # force, moment
        d = robot.inverse_dynamics(q, z, z, f_ext={frame: W}) - robot.inverse_dynamics(q, z, z)
        J = robot.frame_jacobian(q, frame, "body")
        assert _rel(d, -J.T @ W) <= TOL


@pytest.mark.parametrize("case", ["panda_locked", "panda_mimic"])
def test_simulator_fext_body_is_force_then_moment(case):
    """The simulator's constant body wrenches follow f_ext's (f, m) order (compiled path for a
    Robot, the public forward_dynamics for a MimicRobot)."""
    from mbs_dynamics.sim.simulator import Plant
    robot, _ = _load(case)
    rng = np.random.default_rng(6)
    W = rng.normal(size=(robot.n, 6))
    q, qd = rng.uniform(-1, 1, (2, robot.n))
    u = rng.normal(size=robot.n)
    plant = Plant(robot, None, 1e-3, 1, q, qd, fext_body=W)
    expect = robot.forward_dynamics(q, qd, u, f_ext=dict(zip(robot.link_names, W)))
    np.testing.assert_allclose(plant.evaluate(u), expect, rtol=1e-12, atol=1e-12)
