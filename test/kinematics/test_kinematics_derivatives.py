"""Frame twist jets (``frame_derivatives``, seed 000 §2) and kinematic Hessians
(``kinematic_hessian``, eq. 3–6, 16, 26) against Pinocchio, on fixed-base, floating-base and mimic
robots of example-robot-data and random trees.

Oracles: the twist and the first derivative are Pinocchio's ``getFrameVelocity`` /
``getFrameAcceleration`` (``getFrameClassicalAcceleration`` in LOCAL_WORLD_ALIGNED, the time
derivative of the hybrid twist); the mixed form from its definition (hybrid linear, body angular
rows); higher derivatives by 8th-order central differences of Pinocchio's exact acceleration
along analytic trajectories q(t) = Σ a sin(ωt + φ) (and a base moving on two screws). Hessians:
``getJointKinematicHessian`` (its buffer re-read column-major) for joint frames, and 8th-order
differences of ``getFrameJacobian`` along ``pin.integrate`` for every frame.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import mbs_dynamics as mbs
from conftest import PANDA, UR5, erd_path, pin_model, pin_q, random_urdf, trajectory
from test_floating_base import Motion, _pair, _pinq, _random_state
from test_mimic import Oracle, _random_mimic

REPS = ("body", "spatial", "hybrid", "mixed")
C1 = (4 / 5, -1 / 5, 4 / 105, -1 / 280)                       # 8th-order first derivative
C2 = (-205 / 72, 8 / 5, -1 / 5, 8 / 315, -1 / 560)            # 8th-order second derivative


def d1(f, t, h):
    return sum(c * (f(t + (k + 1) * h) - f(t - (k + 1) * h)) for k, c in enumerate(C1)) / h


def d2(f, t, h):
    return (C2[0] * f(t) + sum(c * (f(t + (k + 1) * h) + f(t - (k + 1) * h))
                               for k, c in enumerate(C2[1:]))) / h ** 2


def _rel(a, b):
    return np.abs(np.asarray(a) - b).max() / max(1.0, np.abs(b).max())


class Case:
    """A robot, its Pinocchio twin and a trajectory: ``state(t)`` → Pinocchio (q, v, a) and
    ``jet(t, r)`` → our input of r velocity-level rows."""

    def __init__(self, name):
        pin = pytest.importorskip("pinocchio")
        self.pin = pin
        self.G = None
        if name in ("anymal", "solo12", "random5"):
            self.robot, self.pm = _pair(name)
            self.motion = Motion(self.robot.n, seed=11)
            self.kind = "floating"
        elif name.startswith("mimic"):
            src = _random_mimic(3) if name == "mimic_random" else erd_path(
                "panda_description/urdf/panda.urdf")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", mbs.URDFWarning)
                self.robot = mbs.load_urdf(src)
            self.oracle = Oracle(src)
            self.pm, self.G = self.oracle.pm, self.oracle.G
            self.traj = trajectory(self.robot.n, 5, order=6)
            self.kind = "mimic"
        else:
            if name == "random":
                xml, _ = random_urdf(11)
                self.robot, self.pm = mbs.load_urdf(xml), pin_model(xml)
            else:
                rel, locked = {"panda": PANDA, "ur5": UR5}[name]
                path = erd_path(rel)
                self.robot = mbs.load_urdf(path, locked_joints=locked)
                self.pm = pin_model(path, locked)
            self.traj = trajectory(self.robot.n, 5, order=6)
            self.kind = "fixed"
        self.pd = self.pm.createData()

    def state(self, t):
        if self.kind == "floating":
            v = self.motion.v(t, 1)
            return _pinq(self.pm, self.motion.q(t)), v[0], v[1]
        x = self.traj(t)
        if self.kind == "mimic":
            return self.oracle.q(x[0]), self.G @ x[1], self.G @ x[2]
        return pin_q(self.pm, x[0]), x[1], x[2]

    def jet(self, t, r):
        """Our input giving r twist rows."""
        if self.kind == "floating":
            return (self.motion.q(t), self.motion.v(t, r - 1))
        return self.traj(t)[:r + 1]

    def pin_twist(self, t, frame, rep, acc=False):
        pin = self.pin
        q, v, a = self.state(t)
        pin.forwardKinematics(self.pm, self.pd, q, v, a)
        pin.updateFramePlacements(self.pm, self.pd)
        fid = self.pm.getFrameId(frame)

        def get(rf):
            if not acc:
                return pin.getFrameVelocity(self.pm, self.pd, fid, rf).vector
            if rf == pin.LOCAL_WORLD_ALIGNED:
                return pin.getFrameClassicalAcceleration(self.pm, self.pd, fid, rf).vector
            return pin.getFrameAcceleration(self.pm, self.pd, fid, rf).vector
        if rep == "mixed":
            return np.r_[get(pin.LOCAL_WORLD_ALIGNED)[:3], get(pin.LOCAL)[3:]]
        return get({"body": pin.LOCAL, "spatial": pin.WORLD,
                    "hybrid": pin.LOCAL_WORLD_ALIGNED}[rep])


FRAMES = {"panda": ["panda_link7", "panda_hand", "panda_link0", "panda_link3"],
          "ur5": ["tool0", "ee_link", "wrist_2_link"],
          "random": ["l5", "l17", "base"],
          "anymal": ["LF_FOOT", "base", "RH_SHANK"],
          "solo12": ["FL_FOOT", "base_link"],
          "random5": ["l7", "base"],
          "mimic_panda": ["panda_leftfinger", "panda_hand"],
          "mimic_random": None}


def _frames(case, name):
    fr = FRAMES[name]
    if fr is None:  # the last few links of the file
        fr = [f.name for f in case.pm.frames if f.type == case.pin.FrameType.BODY][-3:]
    return fr


CASES = list(FRAMES)


@pytest.mark.parametrize("name", CASES)
def test_frame_derivatives_against_pinocchio(name):
    case = Case(name)
    robot = case.robot
    t = 0.37
    for frame in _frames(case, name):
        for rep in REPS:
            V = robot.frame_derivatives(case.jet(t, 4), frame, rep)
            assert V.shape == (4, 6)
            acc = case.pin_twist(t, frame, rep, acc=True)
            assert _rel(V[0], case.pin_twist(t, frame, rep)) <= 1e-12, (frame, rep)
            assert _rel(V[1], acc) <= 1e-12, (frame, rep)
            scale = max(1.0, np.abs(acc).max())
            h = 0.01
            f = lambda s: case.pin_twist(s, frame, rep, acc=True)  # noqa: E731
            assert np.abs(V[2] - d1(f, t, h)).max() <= 1e-9 * scale, (frame, rep)
            assert np.abs(V[3] - d2(f, t, h)).max() <= 2e-7 * scale, (frame, rep)
            # fewer rows: a prefix of the same jet
            assert _rel(robot.frame_derivatives(case.jet(t, 2), frame, rep), V[:2]) <= 1e-15


def test_frame_derivatives_orders_and_batches():
    case = Case("panda")
    robot = case.robot
    x = case.traj(0.2)
    # the (k+3)-row input of torque_derivatives gives V … V^(k+1)
    assert robot.frame_derivatives(x[:5], "panda_hand").shape == (4, 6)
    assert robot.frame_derivatives(x[:2], "panda_hand").shape == (1, 6)
    # the pair form of a fixed base
    V = robot.frame_derivatives((x[0], x[1:5]), "panda_hand", "hybrid")
    assert _rel(V, robot.frame_derivatives(x[:5], "panda_hand", "hybrid")) <= 1e-15
    X = np.stack([case.traj(s)[:4] for s in (0.1, 0.5, 0.9)])
    B = robot.frame_derivatives(X, "panda_link5", "spatial")
    assert B.shape == (3, 3, 6)
    for k in range(3):
        assert np.array_equal(B[k], robot.frame_derivatives(X[k], "panda_link5", "spatial"))
    out = np.empty((3, 6))
    assert robot.frame_derivatives(X[0], "panda_link5", out=out) is out
    fb = Case("random5")
    q = np.stack([fb.motion.q(s) for s in (0.1, 0.4)])
    vs = np.stack([fb.motion.v(s, 2) for s in (0.1, 0.4)])
    B = fb.robot.frame_derivatives((q, vs), "l7", "mixed")
    assert B.shape == (2, 3, 6)
    assert np.array_equal(B[1], fb.robot.frame_derivatives((q[1], vs[1]), "l7", "mixed"))


def test_frame_derivatives_bad_input():
    robot = Case("panda").robot
    x = np.zeros((3, robot.n))
    with pytest.raises(ValueError, match="panda_hand"):
        robot.frame_derivatives(x, "panda_hnd")
    with pytest.raises(ValueError, match="mixed"):
        robot.frame_derivatives(x, "panda_hand", "local")
    with pytest.raises(ValueError, match="qs"):
        robot.frame_derivatives(x[:, :-1], "panda_hand")
    with pytest.raises(ValueError, match="qs"):
        robot.frame_derivatives(x[:1], "panda_hand")
    bad = x.copy()
    bad[1, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        robot.frame_derivatives(bad, "panda_hand")
    fb = Case("random5").robot
    with pytest.raises(ValueError, match="pair"):
        fb.frame_derivatives(np.zeros((3, fb.n)), "l7")
    with pytest.raises(ValueError, match="quaternion"):
        fb.frame_derivatives((np.zeros(fb.nq), np.zeros((2, fb.nv))), "l7")


# ---------------------------------------------------------------- kinematic Hessian
def _pin_jacobian(case, x, frame, rep):
    pin = case.pin
    fid = case.pm.getFrameId(frame)
    if rep == "mixed":
        Jh = pin.computeFrameJacobian(case.pm, case.pd, x, fid, pin.LOCAL_WORLD_ALIGNED)
        Jl = pin.computeFrameJacobian(case.pm, case.pd, x, fid, pin.LOCAL)
        J = np.r_[Jh[:3], Jl[3:]]
    else:
        rf = {"body": pin.LOCAL, "spatial": pin.WORLD, "hybrid": pin.LOCAL_WORLD_ALIGNED}[rep]
        J = pin.computeFrameJacobian(case.pm, case.pd, x, fid, rf).copy()
    return J if case.G is None else J @ case.G


@pytest.mark.parametrize("name", CASES)
def test_kinematic_hessian_against_differences(name):
    case = Case(name)
    robot, pin = case.robot, case.pin
    rng = np.random.default_rng(8)
    if case.kind == "floating":
        q = _random_state(rng, robot)[0]
        pq = _pinq(case.pm, q)
        step = lambda e, s: pin.integrate(case.pm, pq, s * e)  # noqa: E731
    elif case.kind == "mimic":
        q = rng.uniform(-1, 1, robot.n)
        step = lambda e, s: case.oracle.q(q + s * e)  # noqa: E731
    else:
        q = rng.uniform(-2, 2, robot.n)
        step = lambda e, s: pin_q(case.pm, q + s * e)  # noqa: E731
    nv = robot.nv
    for frame in _frames(case, name):
        for rep in REPS:
            H = robot.kinematic_hessian(q, frame, rep)
            assert H.shape == (6, nv, nv)
            ref = np.empty_like(H)
            for k in range(nv):
                e = np.eye(nv)[k]
                ref[:, :, k] = d1(lambda s: _pin_jacobian(case, step(e, s), frame, rep), 0.0, 0.01)
            scale = max(1.0, np.abs(ref).max())
            assert np.abs(H - ref).max() <= 1e-11 * scale, (frame, rep)


@pytest.mark.parametrize("name", ["panda", "ur5", "anymal", "random5"])
def test_kinematic_hessian_against_pinocchio_joint_hessians(name):
    """getJointKinematicHessian (its column-major buffer re-read with order="F") at the frame
    of each joint's child link, LOCAL / WORLD / LOCAL_WORLD_ALIGNED."""
    case = Case(name)
    robot, pin, pm, pd = case.robot, case.pin, case.pm, case.pd
    rng = np.random.default_rng(9)
    if case.kind == "floating":
        q = _random_state(rng, robot)[0]
        pq = _pinq(pm, q)
    else:
        q = rng.uniform(-2, 2, robot.n)
        pq = pin_q(pm, q)
    pin.computeJointJacobians(pm, pd, pq)
    pin.computeJointKinematicHessians(pm, pd, pq)
    checked = 0
    for jid in range(1, pm.njoints):
        links = [f.name for f in pm.frames if f.parentJoint == jid and f.type == pin.FrameType.BODY
                 and f.placement.isIdentity()]
        if not links:
            continue
        for rep, rf in (("body", pin.LOCAL), ("spatial", pin.WORLD),
                        ("hybrid", pin.LOCAL_WORLD_ALIGNED)):
            ref = np.asarray(pin.getJointKinematicHessian(pm, pd, jid, rf)).reshape(-1).reshape(
                (6, robot.nv, robot.nv), order="F")
            H = robot.kinematic_hessian(q, links[0], rep)
            assert np.abs(H - ref).max() <= 1e-12 * max(1.0, np.abs(ref).max()), (links[0], rep)
            checked += 1
    assert checked >= 3 * (pm.njoints - 2)


def test_kinematic_hessian_bad_input():
    robot = Case("panda").robot
    with pytest.raises(ValueError, match="panda_hand"):
        robot.kinematic_hessian(np.zeros(robot.n), "panda_hnd")
    with pytest.raises(ValueError, match="hybrid"):
        robot.kinematic_hessian(np.zeros(robot.n), "panda_hand", "WORLD")
    with pytest.raises(ValueError, match="q"):
        robot.kinematic_hessian(np.zeros(robot.n + 2), "panda_hand")
    with pytest.raises(ValueError, match="NaN"):
        robot.kinematic_hessian(np.full(robot.n, np.nan), "panda_hand")


def test_floating_base_with_mimic_joints_talos():
    """Talos (full, floating, with mimic gripper joints) — a MimicRobot over a free flyer: jets,
    Hessians, Christoffel symbols and the spatial/hybrid RNEA against Pinocchio's full model
    projected with G (base block the identity)."""
    pin = pytest.importorskip("pinocchio")
    from test_mimic import oracle_map
    path = erd_path("talos_data/robots/talos_full_v2.urdf")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        robot = mbs.load_urdf(path, floating_base=True)
    pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer())
    pd = pm.createData()
    ind, Gj, off = oracle_map(path, list(pm.names[2:]))
    assert list(robot.joint_names) == ind and Gj.shape[0] > Gj.shape[1]
    nv = robot.nv
    G = np.zeros((pm.nv, nv))
    G[:6, :6] = np.eye(6)
    G[6:, 6:] = Gj
    rng = np.random.default_rng(0)
    quat = rng.normal(size=4)
    q = np.r_[rng.normal(size=3), quat / np.linalg.norm(quat), rng.uniform(-0.5, 0.5, robot.n)]
    P = np.empty(pm.nq)
    P[:7] = q[:7]
    for j, xj in zip(pm.joints[2:], Gj @ q[7:] + off):
        if j.nq == 2:
            P[j.idx_q:j.idx_q + 2] = (np.cos(xj), np.sin(xj))
        else:
            P[j.idx_q] = xj
    vs = rng.normal(size=(2, nv))
    frame = "gripper_left_fingertip_1_link"
    fid = pm.getFrameId(frame)
    pin.forwardKinematics(pm, pd, P, G @ vs[0], G @ vs[1])
    pin.updateFramePlacements(pm, pd)
    for rep, rf in (("body", pin.LOCAL), ("spatial", pin.WORLD),
                    ("hybrid", pin.LOCAL_WORLD_ALIGNED)):
        V = robot.frame_derivatives((q, vs), frame, rep)
        acc = (pin.getFrameClassicalAcceleration if rf == pin.LOCAL_WORLD_ALIGNED
               else pin.getFrameAcceleration)(pm, pd, fid, rf).vector
        assert _rel(V[0], pin.getFrameVelocity(pm, pd, fid, rf).vector) <= 1e-12
        assert _rel(V[1], acc) <= 1e-12
        tau = G.T @ pin.rnea(pm, pd, P, G @ vs[0], G @ vs[1])
        assert _rel(robot.inverse_dynamics(q, vs[0], vs[1], representation=rep if rep != "body"
                                           else "spatial"), tau) <= 1e-12
    H = robot.kinematic_hessian(q, frame, "body")
    ref = np.empty_like(H)
    for k in range(nv):
        ref[:, :, k] = d1(lambda s: pin.computeFrameJacobian(
            pm, pd, pin.integrate(pm, P, s * G[:, k]), fid, pin.LOCAL) @ G, 0.0, 0.01)
    assert np.abs(H - ref).max() <= 1e-11 * np.abs(ref).max()

    def M(x):
        m = pin.crba(pm, pd, x)
        return G.T @ (np.triu(m) + np.triu(m, 1).T) @ G
    Gam = robot.christoffel(q)
    D = np.empty((nv, nv, nv))
    for k in range(nv):
        D[:, :, k] = d1(lambda s: M(pin.integrate(pm, P, s * G[:, k])), 0.0, 0.01)
    ref = 0.5 * (D + D.transpose(0, 2, 1) - D.transpose(2, 0, 1))
    assert np.abs(Gam - ref).max() <= 1e-10 * np.abs(ref).max()


# ---------------------------------------------------------------- input layouts
LAYOUTS = ("list", "readonly", "strided", "fortran", "float32", "int")


def _relayout(x, how):
    if how == "list":
        return x.tolist()
    if how == "readonly":
        y = x.copy()
        y.setflags(write=False)
        return y
    if how == "strided":
        big = np.zeros(x.shape[:-1] + (2 * x.shape[-1],))
        big[..., ::2] = x
        return big[..., ::2]
    if how == "fortran":
        return np.asfortranarray(x)
    if how == "float32":
        return x.astype(np.float32)
    return np.round(x * 3).astype(np.int64)


def _same_numbers(x, how):
    return np.ascontiguousarray(np.asarray(_relayout(x, how), dtype=np.float64))


@pytest.mark.parametrize("how", LAYOUTS)
def test_any_layout_gives_the_float64_result(how):
    robot = Case("random").robot
    rng = np.random.default_rng(1)
    qs = rng.uniform(-1, 1, (4, robot.n))
    Q = rng.uniform(-1, 1, (2, 4, robot.n))
    for x in (qs, Q):
        ref = robot.frame_derivatives(_same_numbers(x, how), "l17", "mixed")
        got = robot.frame_derivatives(_relayout(x, how), "l17", "mixed")
        assert got.dtype == np.float64 and got.flags.c_contiguous
        assert np.array_equal(got, ref)
    q = qs[0]
    for fn in (lambda x: robot.christoffel(x), lambda x: robot.kinematic_hessian(x, "l5"),
               lambda x: robot.inverse_dynamics(x, x, x, representation="hybrid"),
               lambda x: robot.inverse_dynamics(x, x, x, representation="spatial")):
        assert np.array_equal(fn(_relayout(q, how)), fn(_same_numbers(q, how)))
        assert np.array_equal(fn(_relayout(qs, how)), fn(_same_numbers(qs, how)))


def test_complex_out_and_aliasing():
    robot = Case("random").robot
    rng = np.random.default_rng(2)
    qs = rng.uniform(-1, 1, (4, robot.n))
    for fn in (lambda x: robot.frame_derivatives(x, "l17"), lambda x: robot.christoffel(x[0]),
               lambda x: robot.kinematic_hessian(x[0], "l17"),
               lambda x: robot.inverse_dynamics(x[0], x[1], x[2], representation="spatial")):
        with pytest.raises(TypeError):
            fn(qs.astype(complex))
    with pytest.raises(ValueError, match="out"):
        robot.frame_derivatives(qs, "l17", out=np.empty((4, 6)))
    with pytest.raises(ValueError, match="out"):
        robot.frame_derivatives(qs, "l17", out=np.empty((3, 6), dtype=np.float32))
    with pytest.raises(ValueError, match="out"):
        robot.inverse_dynamics(qs[0], qs[1], qs[2], out=np.empty(robot.n + 1),
                               representation="hybrid")
    # out sharing memory with the input: the same result
    buf = np.zeros(4 * robot.n + 18)
    x = buf[:4 * robot.n].reshape(4, robot.n)
    x[...] = qs
    ref = robot.frame_derivatives(qs, "l17", "spatial")
    out = buf[:18].reshape(3, 6)
    assert robot.frame_derivatives(x, "l17", "spatial", out=out) is out
    assert np.array_equal(out, ref)
    v = qs[1].copy()
    ref = robot.inverse_dynamics(qs[0], v, qs[2], representation="hybrid")
    assert np.array_equal(robot.inverse_dynamics(qs[0], v, qs[2], out=v,
                                                 representation="hybrid"), ref)


def test_single_free_body():
    """n = 0: a free body with a welded frame — jets, Hessian, Christoffel (zero: M is constant
    along q ⊕ ε e_k) and the spatial/hybrid RNEA against Pinocchio's free flyer."""
    pin = pytest.importorskip("pinocchio")
    xml = ('<robot name="box"><link name="b"><inertial><origin xyz="0.1 0.02 0"/>'
           '<mass value="2"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.2" iyz="0" izz="0.3"/>'
           '</inertial></link><link name="c"/><joint name="f" type="fixed"><parent link="b"/>'
           '<child link="c"/><origin xyz="0.3 0 0.1" rpy="0.2 0 0"/></joint></robot>')
    robot = mbs.load_urdf(xml, floating_base=True)
    pm = pin.buildModelFromXML(xml, pin.JointModelFreeFlyer())
    pd = pm.createData()
    rng = np.random.default_rng(0)
    quat = rng.normal(size=4)
    q = np.r_[rng.normal(size=3), quat / np.linalg.norm(quat)]
    v, a = rng.normal(size=(2, 6))
    for rep in ("spatial", "hybrid"):
        assert _rel(robot.inverse_dynamics(q, v, a, representation=rep),
                    pin.rnea(pm, pd, q, v, a)) <= 1e-12
    assert not np.any(robot.christoffel(q))
    fid = pm.getFrameId("c")
    pin.forwardKinematics(pm, pd, q, v, a)
    pin.updateFramePlacements(pm, pd)
    V = robot.frame_derivatives((q, np.stack([v, a])), "c", "hybrid")
    assert _rel(V[0], pin.getFrameVelocity(pm, pd, fid, pin.LOCAL_WORLD_ALIGNED).vector) <= 1e-12
    assert _rel(V[1], pin.getFrameClassicalAcceleration(
        pm, pd, fid, pin.LOCAL_WORLD_ALIGNED).vector) <= 1e-12
    H = robot.kinematic_hessian(q, "c", "spatial")
    ref = np.empty_like(H)
    for k in range(6):
        ref[:, :, k] = d1(lambda s: pin.computeFrameJacobian(
            pm, pd, pin.integrate(pm, q, s * np.eye(6)[k]), fid, pin.WORLD), 0.0, 0.01)
    assert np.abs(H - ref).max() <= 1e-12 * max(1.0, np.abs(ref).max())
