"""Christoffel symbols (seed 000 eq. 86–87) against 8th-order central differences of Pinocchio's
``crba`` (along ``pin.integrate`` for a floating base), on fixed-base, floating-base and mimic
robots; C = Σ_k Γ_ijk q̇_k reproduces Pinocchio's Coriolis force (plus the documented
Euler–Poincaré term on a floating base)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import mbs_dynamics as mbs
from conftest import PANDA, UR5, erd_path, pin_model, pin_q, random_urdf, sym
from test_floating_base import _pair, _pinq, _random_state
from test_mimic import Oracle, _random_mimic

# 8th-order central difference: error ~ h^8 f^(9) + ε/h; h = 1e-2 rad gives ~1e-13 relative
STENCIL = ((1, 4 / 5), (2, -1 / 5), (3, 4 / 105), (4, -1 / 280))
H = 1e-2
TOL = 1e-10    # the stencil's accuracy


def _diff(f, x, step):
    """d/dε f(step(x, ε)) at 0, 8th order."""
    return sum(c * (f(step(x, k * H)) - f(step(x, -k * H))) for k, c in STENCIL) / H


def _rel(a, b):
    return np.abs(a - b).max() / np.abs(b).max()


def _gamma_from(D):
    return 0.5 * (D + D.transpose(0, 2, 1) - D.transpose(2, 0, 1))


def _fixed(case):
    if case == "random":
        xml, _ = random_urdf(11)
        return mbs.load_urdf(xml), pin_model(xml)
    rel, locked = {"panda": PANDA, "ur5": UR5}[case]
    path = erd_path(rel)
    return mbs.load_urdf(path, locked_joints=locked), pin_model(path, locked)


@pytest.mark.parametrize("case", ["panda", "ur5", "random"])
def test_fixed_base(case):
    pin = pytest.importorskip("pinocchio")
    robot, pm = _fixed(case)
    pd = pm.createData()
    rng = np.random.default_rng(0)
    q, v = rng.uniform(-2, 2, robot.n), rng.normal(size=robot.n)
    G = robot.christoffel(q)
    assert G.shape == (robot.nv,) * 3
    assert np.allclose(G, G.transpose(0, 2, 1), rtol=0, atol=1e-14 * np.abs(G).max())
    n = robot.n
    D = np.empty((n, n, n))
    for k in range(n):
        e = np.eye(n)[k]
        D[:, :, k] = _diff(lambda x: sym(pin.crba(pm, pd, pin_q(pm, x))), q,
                           lambda x, s: x + s * e)
    assert _rel(G, _gamma_from(D)) <= TOL
    # C(q, q̇) q̇ is Pinocchio's Coriolis/centrifugal force
    C = np.einsum("ijk,k->ij", G, v)
    h = pin.rnea(pm, pd, pin_q(pm, q), v, np.zeros(n)) - pin.computeGeneralizedGravity(
        pm, pd, pin_q(pm, q))
    assert _rel(C @ v, h) <= 1e-12
    # Ṁ = C + Cᵀ with this C, and it is coriolis_matrix's C̄ (seed 004 eq. 54 / seed 000 eq. 85)
    Md = robot.mass_matrix_derivative(q, v)
    assert _rel(C + C.T, Md) <= 1e-12
    assert _rel(C, robot.coriolis_matrix(q, v)) <= 1e-12


@pytest.mark.parametrize("name", ["anymal", "random5"])
def test_floating_base(name):
    pin = pytest.importorskip("pinocchio")
    from mbs_dynamics.kinematics.christoffel import euler_poincare
    robot, pm = _pair(name)
    pd = pm.createData()
    rng = np.random.default_rng(4)
    q, v, _ = _random_state(rng, robot)
    pq = _pinq(pm, q)
    nv = robot.nv
    G = robot.christoffel(q)
    D = np.empty((nv, nv, nv))
    for k in range(nv):
        e = np.eye(nv)[k]
        D[:, :, k] = _diff(lambda x: sym(pin.crba(pm, pd, x)), pq,
                           lambda x, s: pin.integrate(pm, x, s * e))
    assert _rel(G, _gamma_from(D)) <= TOL
    h = pin.rnea(pm, pd, pq, v, np.zeros(nv)) - pin.computeGeneralizedGravity(pm, pd, pq)
    c = np.einsum("ijk,j,k->i", G, v, v)
    assert _rel(c, h) > 1e-3          # the Christoffel part alone is not the Coriolis force
    M = robot.mass_matrix(q)
    assert _rel(c + euler_poincare(robot.model, q, v, M), h) <= 1e-12
    # Ṁ (along q ⊕ v t) = C + Cᵀ still; C̄ = C + E with E v the Euler–Poincaré term
    C = np.einsum("ijk,k->ij", G, v)
    assert _rel(C + C.T, robot.mass_matrix_derivative(q, v)) <= 1e-12
    E = robot.coriolis_matrix(q, v) - C
    assert _rel(E @ v, euler_poincare(robot.model, q, v, M)) <= 1e-12
    # the documented term by hand: −ad_νᵀ p (angular-first), p the base momentum
    nu = np.r_[v[3:6], v[:3]]
    p = M[:6] @ v
    p = np.r_[p[3:6], p[:3]]
    ep = np.r_[np.cross(nu[:3], p[:3]) + np.cross(nu[3:], p[3:]), np.cross(nu[:3], p[3:])]
    assert _rel(c[:6] + np.r_[ep[3:], ep[:3]], h[:6]) <= 1e-12


@pytest.mark.parametrize("case", ["panda", "random"])
def test_mimic(case):
    pytest.importorskip("pinocchio")
    src = _random_mimic(3) if case == "random" else erd_path("panda_description/urdf/panda.urdf")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", mbs.URDFWarning)
        robot = mbs.load_urdf(src)
    oracle = Oracle(src)
    rng = np.random.default_rng(6)
    q, v = rng.uniform(-1, 1, robot.n), rng.normal(size=robot.n)
    G = robot.christoffel(q)
    n = robot.n
    D = np.empty((n, n, n))
    for k in range(n):
        e = np.eye(n)[k]
        D[:, :, k] = _diff(oracle.M, q, lambda x, s: x + s * e)
    assert _rel(G, _gamma_from(D)) <= TOL
    h = oracle.tau(q, v, np.zeros(n)) - oracle.g(q)
    assert _rel(np.einsum("ijk,j,k->i", G, v, v), h) <= 1e-12
    assert _rel(np.einsum("ijk,k->ij", G, v), oracle.C(q, v)) <= 1e-12


def test_bad_input():
    robot, _ = _fixed("random")
    with pytest.raises(ValueError, match="q"):
        robot.christoffel(np.zeros(robot.n + 1))
    with pytest.raises(ValueError, match="NaN"):
        robot.christoffel(np.full(robot.n, np.nan))
    fb, _ = _pair("random5")
    q = np.zeros(fb.nq)
    with pytest.raises(ValueError, match="quaternion"):
        fb.christoffel(q)


@pytest.mark.parametrize("case", ["fixed", "floating", "mimic"])
def test_batches_equal_single_calls(case):
    rng = np.random.default_rng(12)
    if case == "fixed":
        robot = _fixed("random")[0]
        Q = rng.uniform(-2, 2, (3, robot.n))
    elif case == "floating":
        robot = _pair("random5")[0]
        Q = np.stack([_random_state(rng, robot)[0] for _ in range(3)])
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", mbs.URDFWarning)
            robot = mbs.load_urdf(_random_mimic(3))
        Q = rng.uniform(-1, 1, (3, robot.n))
    G = robot.christoffel(Q)
    assert G.shape == (3,) + (robot.nv,) * 3
    frame = robot.link_names[-1]
    H = robot.kinematic_hessian(Q, frame, "hybrid")
    assert H.shape == (3, 6, robot.nv, robot.nv)
    for k in range(3):
        assert np.array_equal(G[k], robot.christoffel(Q[k]))
        assert np.array_equal(H[k], robot.kinematic_hessian(Q[k], frame, "hybrid"))
    if case == "floating":
        Q[1, 3:7] *= 2
        with pytest.raises(ValueError, match="quaternion"):
            robot.christoffel(Q)


@pytest.mark.parametrize("case", ["fixed", "floating"])
def test_numpy_reference_equals_the_compiled_kernels(case):
    """kinematics/christoffel.py and kinematics/hessian.py (the NumPy statements of the closed
    forms) against the compiled kinematics/_closed.pyx the Robot calls."""
    from mbs_dynamics.kinematics.christoffel import christoffel
    from mbs_dynamics.kinematics.derivatives import cached_table
    from mbs_dynamics.kinematics.hessian import kinematic_hessian
    rng = np.random.default_rng(5)
    if case == "fixed":
        robot = _fixed("random")[0]
        q = rng.uniform(-2, 2, robot.n)
    else:
        robot = _pair("random5")[0]
        q = _random_state(rng, robot)[0]
    G = robot.christoffel(q)
    assert np.abs(G - christoffel(robot.model, q)).max() <= 1e-14 * np.abs(G).max()
    t = cached_table(robot.model)
    for f, name in enumerate(t.names):
        for rep, rname in enumerate(("body", "spatial", "hybrid", "mixed")):
            H = robot.kinematic_hessian(q, name, rname)
            ref = kinematic_hessian(robot.model, q, int(t.body[f]), t.pose[f], rep)
            assert np.abs(H - ref).max() <= 1e-14 * max(1.0, np.abs(ref).max()), (name, rname)
