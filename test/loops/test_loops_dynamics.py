"""Closed loops (issue 19): constrained inverse dynamics, λ, jets, M/C̄/g, forward dynamics.

Oracles: Pinocchio's ``constraintDynamics`` (CONTACT_3D/6D rigid constraint models, proximal
settings) on the spanning tree where it applies; an independent formulation written here from
Pinocchio's RNEA, M, g and LOCAL frame Jacobians (null-space projection G = [I; −K_d⁺K_a],
least-squares multipliers); high-order central differences along analytic actuated
trajectories for the jets (the full-coordinate motion is checked in test_loops_kinematics).
"""
from __future__ import annotations


import numpy as np
import pytest

import mbs_dynamics as mbs
import loops_mechanisms as lm
from test_loops_kinematics import D, NAMES, PinLoops, load, rpy_pose, trajectory

try:
    import pinocchio as pin
except ImportError:  # skip per test, not per module (launch_testing)
    pin = None
pytestmark = pytest.mark.skipif(pin is None, reason="pinocchio is not installed")


def rel(a, b):
    return np.abs(np.asarray(a) - b).max() / max(1.0, np.abs(b).max())


@pytest.fixture(scope="module", params=NAMES)
def mech(request):
    r, u, loops = load(request.param)
    return request.param, r, PinLoops(u, loops)


def state(r, seed=1):
    rng = np.random.default_rng(seed)
    q = r.q_assembled[r.actuated_index] + 0.1 * rng.standard_normal(r.n)
    return q, rng.standard_normal(r.n), rng.standard_normal(r.n)


def oracle_G(r, P, q_full):
    K = P.jacobian(q_full)
    a, d = r.actuated_index, np.setdiff1d(np.arange(r.n_full), r.actuated_index)
    G = np.zeros((r.n_full, r.n))
    G[a] = np.eye(r.n)
    G[d] = -np.linalg.lstsq(K[:, d], K[:, a], rcond=None)[0]
    return G, K, d


def test_inverse_dynamics_and_multipliers(mech):
    name, r, P = mech
    r = r.copy()
    q, qd, qdd = state(r)
    X = r.expand(np.stack([q, qd, qdd]))
    assert P.closure_error(X[0]) < 1e-11
    G, K, d = oracle_G(r, P, X[0])
    t_tree = pin.rnea(P.model, P.data, X[0], X[1], X[2])
    tau = r.inverse_dynamics(q, qd, qdd)
    assert rel(tau, G.T @ t_tree) < 1e-10
    lam = np.linalg.lstsq(K[:, d].T, t_tree[d], rcond=None)[0]  # minimum norm
    cf = r.constraint_forces(q, qd, qdd)
    off = 0
    for lp in r.loops:
        m = {"connect": 3, "weld": 6, "revolute": 5}[lp["type"]]
        want = lam[off:off + m]
        if lp["type"] == "revolute":
            want = np.r_[want, 0.0]  # no moment about the hinge
        assert cf[lp["name"]].shape == want.shape
        assert rel(cf[lp["name"]], want) < 1e-10, lp["name"]
        off += m
    # the tree equation holds with these multipliers: τ_tree = S τ + Kᵀ λ
    S = np.zeros((r.n_full, r.n))
    S[r.actuated_index] = np.eye(r.n)
    lam_all = np.concatenate([cf[lp["name"]][:{"connect": 3, "weld": 6, "revolute": 5}
                                             [lp["type"]]] for lp in r.loops])
    assert rel(S @ tau + K.T @ lam_all, t_tree) < 1e-10


def _pin_constraints(r, P):
    cms = []
    for lp, fa, Oa, fb, Ob in P.loops:
        if lp["type"] == "revolute":
            return None  # Pinocchio 4.1 has no 5-D hinge constraint
        fra, frb = P.model.frames[fa], P.model.frames[fb]
        ct = pin.ContactType.CONTACT_3D if lp["type"] == "connect" else pin.ContactType.CONTACT_6D
        cms.append(pin.RigidConstraintModel(ct, P.model, fra.parentJoint, fra.placement * Oa,
                                            frb.parentJoint, frb.placement * Ob,
                                            pin.ReferenceFrame.LOCAL))
    return cms


def test_forward_dynamics_matches_pinocchio_constraint_dynamics(mech):
    name, r, P = mech
    r = r.copy()
    q, qd, tau = state(r, 2)
    qdd = r.forward_dynamics(q, qd, tau, method="lagrange")
    assert rel(r.inverse_dynamics(q, qd, qdd), tau) < 1e-10  # round trip
    X = r.expand(np.stack([q, qd, qdd]))
    cms = _pin_constraints(r, P)
    tf = np.zeros(r.n_full)
    tf[r.actuated_index] = tau
    if cms is not None:
        cds = [c.createData() for c in cms]
        pin.initConstraintDynamics(P.model, P.data, cms, cds)
        ddq = pin.constraintDynamics(P.model, P.data, X[0], X[1], tf, cms, cds,
                                     pin.ProximalSettings(1e-14, 1e-12, 200))
        assert rel(X[2], ddq) < 1e-9
        # Pinocchio's λ (LOCAL, frame_a's axes, on frame_a) = −R_ab λ_b where unique
        if name in ("spatial_fourbar",):
            pin.framesForwardKinematics(P.model, P.data, X[0])
            cf = r.constraint_forces(q, qd, qdd)
            (lp, fa, Oa, fb, Ob), = P.loops
            Rab = (P.data.oMf[fa] * Oa).rotation.T @ (P.data.oMf[fb] * Ob).rotation
            assert rel(-Rab @ cf[lp["name"]], P.data.lambda_c) < 1e-9
    # independent KKT in full coordinates: M q̈ + nle = τ + Kᵀλ, K q̈ = −K̇q̇ (K̇q̇ by differences)
    G, K, d = oracle_G(r, P, X[0])
    M = pin.crba(P.model, P.data, X[0])
    M = np.triu(M) + np.triu(M, 1).T
    nle = pin.nonLinearEffects(P.model, P.data, X[0], X[1])
    h = 1e-3
    Kdot = sum(c * P.jacobian(X[0] + (i - 4) * h * X[1]) for i, c in enumerate(D[1])) / h
    A = np.block([[M, -K.T], [K, np.zeros((K.shape[0], K.shape[0]))]])
    rhs = np.r_[tf - nle, -Kdot @ X[1]]
    sol = np.linalg.lstsq(A, rhs, rcond=None)[0]
    assert rel(X[2], sol[:r.n_full]) < 1e-8


def test_torque_jets_match_finite_differences(mech):
    name, r, P = mech
    r = r.copy()
    t0, h = 0.4, 1e-2
    k = 2
    qs = trajectory(r, t0, seed=5)[:k + 3]
    T = r.torque_derivatives(qs)
    assert T.shape == (k + 1, r.n)
    assert rel(T[0], r.inverse_dynamics(*qs[:3])) < 1e-12
    ts = t0 + h * np.arange(-4, 5)
    tau = np.array([r.inverse_dynamics(*trajectory(r, t, seed=5)[:3]) for t in ts])
    scale = np.abs(T).max() + 1
    assert np.abs(T[1] - D[1] @ tau / h).max() < 1e-9 * scale
    assert np.abs(T[2] - D[2] @ tau / h ** 2).max() < 1e-8 * scale
    # a higher order: τ‴ from the differences of the τ″ of the jet
    T3 = r.torque_derivatives(trajectory(r, t0, seed=5)[:6])
    tdd = np.array([r.torque_derivatives(trajectory(r, t, seed=5)[:5])[2] for t in ts])
    assert rel(T3[:3], T) < 1e-12
    assert np.abs(T3[3] - D[1] @ tdd / h).max() < 1e-8 * (np.abs(T3).max() + 1)
    # batches
    B = r.torque_derivatives(np.stack([qs, qs]))
    assert B.shape == (2, k + 1, r.n) and rel(B[1], T) < 1e-12


def test_mass_coriolis_gravity(mech):
    name, r, P = mech
    r = r.copy()
    q, qd, _ = state(r, 3)
    X = r.expand(np.stack([q, qd]))
    G, K, d = oracle_G(r, P, X[0])
    M = pin.crba(P.model, P.data, X[0])
    M = np.triu(M) + np.triu(M, 1).T
    Ma = r.mass_matrix(q)
    assert rel(Ma, G.T @ M @ G) < 1e-10
    assert rel(r.gravity_torques(q), G.T @ pin.computeGeneralizedGravity(P.model, P.data, X[0])) \
        < 1e-10
    C = r.coriolis_matrix(q, qd)
    assert rel(C @ qd, r.inverse_dynamics(q, qd, np.zeros(r.n)) - r.gravity_torques(q)) < 1e-10
    Md = r.mass_matrix_derivative(q, qd)
    h = 1e-3
    Mfd = sum(c * r.mass_matrix(q + (i - 4) * h * qd) for i, c in enumerate(D[1])) / h
    assert rel(Md, Mfd) < 1e-8
    S = Md - 2 * C
    assert np.abs(S + S.T).max() < 1e-10 * (np.abs(Md).max() + 1)


def test_forward_inverse_round_trip_batch():
    r, _, _ = load("delta")
    rng = np.random.default_rng(7)
    q = r.q_assembled[r.actuated_index] + 0.05 * rng.standard_normal((3, r.n))
    qd, tau = rng.standard_normal((3, r.n)), rng.standard_normal((3, r.n))
    qdd = r.forward_dynamics(q, qd, tau)
    assert qdd.shape == (3, r.n)
    assert rel(r.inverse_dynamics(q, qd, qdd), tau) < 1e-10


def test_sea_feedforward_on_a_closed_loop_robot():
    r, _, _ = load("parallelogram_arm")
    qs = trajectory(r, 0.2)[:5]
    K = np.full(r.n, 300.0)
    B = np.full(r.n, 0.05)
    res = mbs.sea_feedforward(r, qs, K, B)
    T = r.torque_derivatives(qs)
    assert rel(res.tau, T[0]) < 1e-12
    assert rel(res.theta, qs[0] + T[0] / K) < 1e-12
    assert rel(res.theta_ddot, qs[2] + T[2] / K) < 1e-12
    batch = mbs.sea_feedforward(r, np.stack([qs, qs]), K, B)
    assert rel(batch.tau_motor[1], res.tau_motor) < 1e-12


def test_f_ext_and_payload():
    r, u, loops = load("spatial_fourbar")
    q, qd, qdd = state(r, 4)
    w = np.array([0.1, -0.2, 0.3, 1.0, 2.0, -1.0])
    t1 = r.inverse_dynamics(q, qd, qdd, f_ext={"coupler": w})
    t0 = r.inverse_dynamics(q, qd, qdd)
    X = r.expand(np.stack([q, qd, qdd]))
    P = PinLoops(u, loops)
    G, _, _ = oracle_G(r, P, X[0])
    pin.framesForwardKinematics(P.model, P.data, X[0])
    pin.computeJointJacobians(P.model, P.data, X[0])
    J = pin.getFrameJacobian(P.model, P.data, P.model.getFrameId("coupler", pin.BODY), pin.LOCAL)
    # the wrench is (f, m), as Pinocchio's Jacobian rows (linear, angular)
    assert rel(t0 - t1, G.T @ J.T @ w) < 1e-10
    r2 = r.with_payload("rocker", 0.5)
    assert isinstance(r2, mbs.ClosedLoopRobot) and r2.total_mass == pytest.approx(r.total_mass + 0.5)


def test_mimic_joints_with_loops():
    """A four-bar plus a flap whose joint mimics the crank (q_flap = −0.5 q_crank + 0.1): the
    mimic is one more dependent coordinate; oracle: Pinocchio's model with the mimic as an
    ordinary joint, the loop rows from its frame Jacobians and the mimic row written here."""
    u, loops, act = lm.planar_fourbar_with_flap()
    r = mbs.load_urdf(u, loops=loops, actuated=act)
    assert r.n == 1 and r.mimic_joints == {"j_flap": ("j_crank", -0.5, 0.1)}
    P = PinLoops(u, loops)
    q, qd, qdd = state(r, 8)
    X = r.expand(np.stack([q, qd, qdd]))
    i_f, i_c = r.full_joint_names.index("j_flap"), r.full_joint_names.index("j_crank")
    assert np.allclose(X[:, i_f], -0.5 * X[:, i_c] + np.r_[0.1, 0, 0], atol=1e-14)
    K = P.jacobian(X[0])
    row = np.zeros(r.n_full)
    row[i_f], row[i_c] = 1.0, 0.5
    K = np.vstack([K, row])
    a, d = r.actuated_index, np.setdiff1d(np.arange(r.n_full), r.actuated_index)
    G = np.zeros((r.n_full, r.n))
    G[a] = np.eye(r.n)
    G[d] = -np.linalg.lstsq(K[:, d], K[:, a], rcond=None)[0]
    t_tree = pin.rnea(P.model, P.data, X[0], X[1], X[2])
    assert rel(r.inverse_dynamics(q, qd, qdd), G.T @ t_tree) < 1e-10
    tau = np.array([0.7])
    assert rel(r.inverse_dynamics(q, qd, r.forward_dynamics(q, qd, tau)), tau) < 1e-10
    # HDCA closes the mimic row in the assembly (test_loops_hdca_bases: against a KKT oracle)
    assert rel(r.inverse_dynamics(q, qd, r.forward_dynamics(q, qd, tau, method="dca")),
               tau) < 1e-10
    with pytest.raises(ValueError, match="mimic joint 'j_flap'"):
        mbs.load_urdf(u, loops=loops, actuated=["j_crank", "j_flap"])


def test_floating_base_with_loops():
    """The parallelogram arm on a floating base (a free-flying torso): oracle Pinocchio's
    free-flyer model of the same file, loop rows from its LOCAL frame Jacobians (base columns
    included), the null-space projection with the base coordinates independent."""
    u, loops, act = lm.parallelogram_arm()
    u = u.replace('<link name="base"/>', '<link name="base"><inertial><mass value="3"/><inertia '
                  'ixx="0.05" iyy="0.06" izz="0.07" ixy="0" ixz="0" iyz="0"/></inertial></link>')
    r = mbs.load_urdf(u, loops=loops, actuated=act, floating_base=True)
    assert r.floating_base and (r.nq, r.nv, r.n) == (11, 10, 4)
    pm = pin.buildModelFromXML(u, pin.JointModelFreeFlyer())
    pd = pm.createData()
    rng = np.random.default_rng(9)
    qb = np.r_[0.1, -0.2, 0.3, rng.standard_normal(4)]
    qb[3:] /= np.linalg.norm(qb[3:])
    q = np.r_[qb, r.q_assembled[r.actuated_index] + 0.05]
    qd, qdd = rng.standard_normal((2, r.nv))
    qf = r.expand(q)
    assert qf.shape == (7 + r.n_full,) and np.abs(r.loop_residual(qf)).max() < 1e-12
    # Pinocchio's loop rows with its free-flyer (base columns ~0: a relative twist)
    (lp,) = loops
    fa, fb = pm.getFrameId(lp["frame_a"], pin.BODY), pm.getFrameId(lp["frame_b"], pin.BODY)
    Oa, Ob = rpy_pose(lp.get("origin_a")), rpy_pose(lp.get("origin_b"))
    pin.framesForwardKinematics(pm, pd, qf)
    pin.computeJointJacobians(pm, pd, qf)
    Ja = Oa.toActionMatrixInverse() @ pin.getFrameJacobian(pm, pd, fa, pin.LOCAL)
    Jb = Ob.toActionMatrixInverse() @ pin.getFrameJacobian(pm, pd, fb, pin.LOCAL)
    Cba = (pd.oMf[fb] * Ob).inverse() * (pd.oMf[fa] * Oa)
    K = (Jb - Cba.toActionMatrix() @ Ja)[:3]
    assert rel(r.constraint_jacobian(qf), K) < 1e-12
    ind = np.r_[np.arange(6), 6 + r.actuated_index]
    dep = np.setdiff1d(np.arange(6 + r.n_full), ind)
    G = np.zeros((6 + r.n_full, r.nv))
    G[ind] = np.eye(r.nv)
    G[dep] = -np.linalg.lstsq(K[:, dep], K[:, ind], rcond=None)[0]
    # the full motion: base passes, the joints' from the closure (checked against K here)
    X = r.copy().expand(np.stack([q[7:], qd[6:], qdd[6:]]))
    vf, af = np.r_[qd[:6], X[1]], np.r_[qdd[:6], X[2]]
    assert np.abs(K @ vf).max() < 1e-12
    tau = r.inverse_dynamics(q, qd, qdd)
    assert tau.shape == (10,)
    assert rel(tau, G.T @ pin.rnea(pm, pd, qf, vf, af)) < 1e-10
    M = pin.crba(pm, pd, qf)
    M = np.triu(M) + np.triu(M, 1).T
    assert rel(r.mass_matrix(q), G.T @ M @ G) < 1e-10
    assert rel(r.gravity_torques(q), G.T @ pin.computeGeneralizedGravity(pm, pd, qf)) < 1e-10
    assert rel(r.inverse_dynamics(q, qd, r.forward_dynamics(q, qd, tau)), tau) < 1e-10
    # jets: the pair form, τ from its first row, τ′ by differences along a base-free motion
    vs = np.vstack([qd, qdd, rng.standard_normal((2, r.nv))])
    T = r.torque_derivatives((q, vs))
    assert T.shape == (3, 10) and rel(T[0], r.inverse_dynamics(q, qd, qdd)) < 1e-10
    C = r.coriolis_matrix(q, qd)
    assert rel(C @ qd, r.inverse_dynamics(q, qd, np.zeros(10)) - r.gravity_torques(q)) < 1e-10
    with pytest.raises(ValueError, match="pair"):
        r.torque_derivatives(np.zeros((5, 4)))
    # HDCA with the base as a 6-DOF joint (test_loops_hdca_bases: against Pinocchio)
    assert rel(r.forward_dynamics(q, qd, tau, method="dca"), r.forward_dynamics(q, qd, tau)) \
        < 1e-10
    with pytest.raises(ValueError, match="method must be"):
        r.forward_dynamics(q, qd, tau, method="aba")


def test_floating_base_torque_jets_by_differences():
    """τ′, τ″ of the pair form against 9-point differences of τ along a motion whose base
    twist is constant (its pose = Pinocchio's integrate of v·t) and whose joints follow an
    analytic trajectory."""
    u, loops, act = lm.parallelogram_arm()
    u = u.replace('<link name="base"/>', '<link name="base"><inertial><mass value="3"/><inertia '
                  'ixx="0.05" iyy="0.06" izz="0.07" ixy="0" ixz="0" iyz="0"/></inertial></link>')
    r = mbs.load_urdf(u, loops=loops, actuated=act, floating_base=True)
    pm = pin.buildModelFromXML(u, pin.JointModelFreeFlyer())
    q0b = np.r_[0.1, -0.2, 0.3, 0.0, 0.0, 0.0, 1.0]
    vb = np.array([0.3, -0.1, 0.2, 0.4, -0.3, 0.5])
    pmb = pin.buildModelFromXML('<robot name="b"><link name="b"><inertial><mass value="1"/>'
                                '<inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/>'
                                '</inertial></link></robot>', pin.JointModelFreeFlyer())
    assert pm.nq == 7 + r.n_full

    class Fake:  # the joints' analytic trajectory of test_loops_kinematics
        n = r.n
        q_assembled = r.q_assembled  # the joints' (a floating robot's too)
        actuated_index = r.actuated_index

    def sample(t):
        J = trajectory(Fake, t, seed=3)
        q = np.r_[pin.integrate(pmb, q0b, vb * t), J[0]]
        vs = np.vstack([np.r_[vb, J[1]], np.r_[np.zeros(6), J[2]], np.r_[np.zeros(6), J[3]],
                        np.r_[np.zeros(6), J[4]]])
        return q, vs

    t0, h = 0.2, 1e-2
    T = r.torque_derivatives(sample(t0))
    tau = np.array([r.torque_derivatives(sample(t0 + (i - 4) * h))[0] for i in range(9)])
    scale = np.abs(T).max() + 1
    assert np.abs(T[1] - D[1] @ tau / h).max() < 1e-8 * scale
    assert np.abs(T[2] - D[2] @ tau / h ** 2).max() < 1e-7 * scale
