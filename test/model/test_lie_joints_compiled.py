"""The compiled per-call path of LieJointRobot (``kernels/_lie.pyx``): jets of any order along a
motion that is *not* a one-parameter subgroup (the velocity's derivatives not parallel) against
8th-order differences of Pinocchio's τ, τ′ of arbitrary jets against Pinocchio's analytic
derivatives, batches against Pinocchio row by row, and odd inputs (NaN, non-unit quaternions,
wrong sizes, lists, strided and float32 arrays, q changed in place, ``out`` aliasing an input)."""
from __future__ import annotations

import math

import numpy as np
import pytest

import mbs_dynamics as mbs
from joint_oracle import TOL, rel_err
from test_spherical_joint import _geometry, _pin, _urdf


@pytest.fixture(scope="module")
def pair():
    g = _geometry(23)
    return mbs.load_urdf(_urdf(g)), _pin(g)


def _hat(w):
    return np.array([[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]])


def _ad(pm, xi):
    """Block-diagonal ad_ξ over the velocity vector: so(3) for a spherical joint, se(3) with
    (v, ω) first-linear for a free joint, 0 for a 1-DOF joint."""
    A = np.zeros((pm.nv, pm.nv))
    for j in range(1, pm.njoints):
        i, n = pm.joints[j].idx_v, pm.joints[j].nv
        x = xi[i:i + n]
        if n == 3:
            A[i:i + 3, i:i + 3] = _hat(x)
        elif n == 6:
            A[i:i + 3, i:i + 3] = A[i + 3:i + 6, i + 3:i + 6] = _hat(x[3:])
            A[i:i + 3, i + 3:i + 6] = _hat(x[:3])
    return A


def _two_subgroups(pm, seed, w=1.1, c=0.8):
    """q(t) = (q₀ ⊕ f(t) ξ₁) ⊕ c t ξ₂ with f(t) = sin(w t) + t²/2: per group joint
    V(t) = exp(−c t ad_ξ₂) ξ₁ f′(t) + c ξ₂ (the 1-DOF joints: f′ ξ₁ + c ξ₂), so
    V^(k) = Σ_j C(k, j) (−c ad_ξ₂)^j exp(−c t ad_ξ₂) ξ₁ f^(k+1−j)(t) + [k = 0] c ξ₂ exactly —
    derivatives that are not parallel to V. Returns (q(t), V^(k)(t))."""
    pin = pytest.importorskip("pinocchio")
    from scipy.linalg import expm
    rng = np.random.default_rng(seed)
    q0 = pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq))
    x1, x2 = rng.normal(size=(2, pm.nv))
    ad = _ad(pm, x2)

    def f(t, k):
        return (w ** k * math.sin(w * t + k * math.pi / 2)
                + (t * t / 2 if k == 0 else t if k == 1 else 1.0 if k == 2 else 0.0))

    def q(t):
        return pin.integrate(pm, pin.integrate(pm, q0, f(t, 0) * x1), c * t * x2)

    def V(t, k):
        E = expm(-c * t * ad)
        out = sum(math.comb(k, j) * np.linalg.matrix_power(-c * ad, j) @ E @ x1 * f(t, k + 1 - j)
                  for j in range(k + 1))
        return out + (c * x2 if k == 0 else 0.0)

    return q, V


def _stencil(k, m=6):
    """Central-difference weights of the k-th derivative on 2m + 1 points (order ≥ 2m − k + 1)."""
    x = np.arange(-m, m + 1)
    b = np.zeros(len(x))
    b[k] = math.factorial(k)
    return np.linalg.solve(np.vander(x, increasing=True).T.astype(float), b)


def test_jets_of_a_general_motion_against_differences_of_pinocchio(pair):
    """τ … τ⁗ (K = 4, the Taylor series of Jb to order 5) along a motion whose velocity jet is
    not parallel, against Pinocchio's τ(t) and its central differences (the differences limit
    the agreement: 1e-11 … 3e-9 measured at h = 0.02)."""
    pin = pytest.importorskip("pinocchio")
    robot, pm = pair
    pd = pm.createData()
    q, V = _two_subgroups(pm, 4)

    def tau(t):
        return pin.rnea(pm, pd, q(t), V(t, 0), V(t, 1))

    h = 0.02
    for t in (0.0, 0.6):
        T = np.array([tau(t + i * h) for i in range(-6, 7)])
        vs = np.array([V(t, k) for k in range(6)])
        jet = robot.torque_derivatives((q(t), vs))
        assert jet.shape == (5, pm.nv)
        assert rel_err(jet[0], T[6]) <= TOL
        for k, tol in ((1, 1e-10), (2, 1e-10), (3, 1e-7), (4, 1e-7)):
            assert rel_err(jet[k], _stencil(k) @ T / h ** k) <= tol, k
        # a lower order gives the leading rows of a higher one
        for K in range(4):
            assert rel_err(robot.torque_derivatives((q(t), vs[:K + 2])), jet[:K + 1]) <= 1e-13


def test_first_jet_of_arbitrary_rates_is_pinocchios_chain_rule(pair):
    """For any V, V̇, V̈ (random, not a motion we built): τ′ = ∂τ/∂q V + ∂τ/∂q̇ V̇ + M V̈ with
    Pinocchio's computeRNEADerivatives (∂/∂q along q ⊕ δ)."""
    pin = pytest.importorskip("pinocchio")
    robot, pm = pair
    pd = pm.createData()
    rng = np.random.default_rng(7)
    for _ in range(4):
        q = pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq))
        v, a, j, s = rng.normal(size=(4, pm.nv))
        dq, dv, M = (np.array(x) for x in pin.computeRNEADerivatives(pm, pd, q, v, a))
        M = np.triu(M) + np.triu(M, 1).T
        want = dq @ v + dv @ a + M @ j
        for vs in (np.stack([v, a, j]), np.stack([v, a, j, s])):
            jet = robot.torque_derivatives((q, vs))
            assert rel_err(jet[0], pin.rnea(pm, pd, q, v, a)) <= TOL
            assert rel_err(jet[1], want) <= 1e-11


def test_compiled_batches_against_pinocchio(pair):
    pin = pytest.importorskip("pinocchio")
    robot, pm = pair
    pd = pm.createData()
    rng = np.random.default_rng(3)
    N = 6
    Q = np.array([pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq))
                  for _ in range(N)])
    Q[3] = Q[2]   # a repeated configuration (the chart is not re-seated)
    V, A = rng.normal(size=(2, N, pm.nv))
    tau = robot.inverse_dynamics(Q, V, A)
    M = robot.mass_matrix(Q)
    oM = np.empty((N, pm.nv, pm.nv))
    assert robot.mass_matrix(Q, out=oM) is oM and np.array_equal(oM, M)
    for i in range(N):
        assert rel_err(tau[i], pin.rnea(pm, pd, Q[i], V[i], A[i])) <= TOL
        m = pin.crba(pm, pd, Q[i])
        assert rel_err(M[i], np.triu(m) + np.triu(m, 1).T) <= TOL
    G = robot.gravity_torques(Q)
    ddq = robot.forward_dynamics(Q, V, tau)
    for i in range(N):
        assert rel_err(G[i], pin.computeGeneralizedGravity(pm, pd, Q[i])) <= TOL
        assert rel_err(ddq[i], A[i]) <= 1e-10
        assert rel_err(ddq[i], pin.aba(pm, pd, Q[i], V[i], tau[i])) <= 1e-10
    for K in (0, 1, 3):
        vs = rng.normal(size=(N, K + 2, pm.nv))
        jets = robot.torque_derivatives((Q, vs))
        assert jets.shape == (N, K + 1, pm.nv)
        for i in range(N):
            assert np.array_equal(jets[i], robot.torque_derivatives((Q[i], vs[i])))
            assert rel_err(jets[i][0], pin.rnea(pm, pd, Q[i], vs[i][0], vs[i][1])) <= TOL
    assert robot.inverse_dynamics(Q[:0], V[:0], A[:0]).shape == (0, pm.nv)
    assert robot.mass_matrix(Q[:0]).shape == (0, pm.nv, pm.nv)
    assert robot.gravity_torques(Q[:0]).shape == (0, pm.nv)
    assert robot.forward_dynamics(Q[:0], V[:0], A[:0]).shape == (0, pm.nv)
    # batch errors
    with pytest.raises(ValueError, match="same number of rows N = 6"):
        robot.forward_dynamics(Q, V[:5], A)
    with pytest.raises(ValueError, match="tau must be finite"):
        robot.forward_dynamics(Q, V, np.full_like(A, np.nan))
    with pytest.raises(ValueError, match="vs of shape"):
        robot.torque_derivatives((Q, np.zeros((5, 3, pm.nv))))
    with pytest.raises(ValueError, match="vs must be finite"):
        robot.torque_derivatives((Q, np.full((N, 3, pm.nv), np.inf)))
    with pytest.raises(ValueError, match="q must be 13 finite"):
        robot.gravity_torques(np.full_like(Q, np.nan))
    with pytest.raises(ValueError, match="q must be 13"):
        robot.mass_matrix(Q[:, :-1])
    bad = Q.copy()
    bad[4, 5] = 2.0
    with pytest.raises(ValueError, match="joint 's': the quaternion"):
        robot.gravity_torques(bad)
    with pytest.raises(ValueError, match="out"):
        robot.gravity_torques(Q, out=np.empty((N, pm.nv + 1)))


def test_odd_inputs(pair):
    pin = pytest.importorskip("pinocchio")
    robot, pm = pair
    pd = pm.createData()
    rng = np.random.default_rng(5)
    q = pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq))
    v, a = rng.normal(size=(2, pm.nv))
    ref = pin.rnea(pm, pd, q, v, a)
    # lists, float32, strided and read-only arrays are converted once
    assert rel_err(robot.inverse_dynamics(q.tolist(), v.tolist(), a.tolist()), ref) <= TOL
    wide = np.zeros((pm.nq, 2))
    wide[:, 0] = q
    ro = a.copy()
    ro.flags.writeable = False
    assert rel_err(robot.inverse_dynamics(wide[:, 0], v, ro), ref) <= TOL
    assert rel_err(robot.inverse_dynamics(q, v.astype(np.float32), a),
                   pin.rnea(pm, pd, q, v.astype(np.float32).astype(float), a)) <= TOL
    # NaN / inf anywhere, wrong sizes: a ValueError naming the argument
    for bad in (np.nan, np.inf):
        qb = q.copy()
        qb[0] = bad
        with pytest.raises(ValueError, match="q must be 13 finite numbers"):
            robot.inverse_dynamics(qb, v, a)
        with pytest.raises(ValueError, match="q must be 13 finite numbers"):
            robot.mass_matrix(qb)
        vb = v.copy()
        vb[4] = bad
        with pytest.raises(ValueError, match="qd must be finite"):
            robot.inverse_dynamics(q, vb, a)
        with pytest.raises(ValueError, match="vs must be finite"):
            robot.torque_derivatives((q, np.stack([v, vb, a])))
        with pytest.raises(ValueError, match="tau must be finite"):
            robot.forward_dynamics(q, v, vb)
    with pytest.raises(ValueError, match="q must be 13"):
        robot.inverse_dynamics(q[:-1], v, a)
    with pytest.raises(ValueError, match="qdd must be finite numbers of shape"):
        robot.inverse_dynamics(q, v, a[:-1])
    with pytest.raises(ValueError, match="out"):
        robot.inverse_dynamics(q, v, a, out=np.empty(pm.nv - 1))
    with pytest.raises(ValueError, match="vs must have shape"):
        robot.torque_derivatives((q, v[None]))
    # a quaternion of the wrong norm (the free joint's, behind a good spherical one): an error,
    # and the chart is left as it was (the next call is right)
    robot.inverse_dynamics(q, v, a)
    q2 = pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq))
    qb = q2.copy()
    qb[-4:] *= 1.01
    with pytest.raises(ValueError, match="joint 'f': the quaternion"):
        robot.inverse_dynamics(qb, v, a)
    assert rel_err(robot.inverse_dynamics(q, v, a), ref) <= TOL
    assert rel_err(robot.inverse_dynamics(q2, v, a), pin.rnea(pm, pd, q2, v, a)) <= TOL
    # a nearly unit quaternion is normalised (as Pinocchio's normalize)
    qn = q2.copy()
    qn[-4:] *= 1 + 1e-9
    assert rel_err(robot.inverse_dynamics(qn, v, a), pin.rnea(pm, pd, q2, v, a)) <= 1e-8
    # q changed in place between calls: the chart follows (no stale re-centring)
    qm = q.copy()
    robot.mass_matrix(qm)
    qm[:] = q2
    m = pin.crba(pm, pd, q2)
    assert rel_err(robot.mass_matrix(qm), np.triu(m) + np.triu(m, 1).T) <= TOL
    # out sharing memory with an input
    x = a.copy()
    assert robot.inverse_dynamics(q, v, x, out=x) is x and rel_err(x, ref) <= TOL
    vs = np.stack([v, a, v])
    jet = robot.torque_derivatives((q, vs))
    o = vs[:2].copy()
    assert robot.torque_derivatives((q, np.stack([v, a, v])), out=o) is o
    assert np.array_equal(o, jet)
    t = np.array(ref)
    x = t.copy()
    assert robot.forward_dynamics(q, v, x, out=x) is x and rel_err(x, a) <= 1e-10
    # overflow says so
    with pytest.raises(ValueError, match="overflowed"):
        robot.inverse_dynamics(q, np.full(pm.nv, 1e200), a)
