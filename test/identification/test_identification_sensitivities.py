"""Analytic sensitivities (seed 000 §6.1): ``inverse_dynamics_derivatives`` → (∂τ/∂q, ∂τ/∂q̇, M)
against ``pin.computeRNEADerivatives`` and ``forward_dynamics_derivatives`` → (∂q̈/∂q, ∂q̈/∂q̇,
M⁻¹) against ``pin.computeABADerivatives`` (1e-10 relative; Pinocchio returns views into its Data,
so they are copied), on fixed (Panda, UR5, random trees with prismatic joints and fixed links),
floating (solo12, ANYmal; Pinocchio's tangent convention) and mimic robots (Pinocchio's full model
projected with the URDF's G)."""
from __future__ import annotations

import numpy as np
import pytest

import mbs_dynamics as mbs
from conftest import pin_q, random_urdf, sym
from test_identification_regressor import CASES, Case, rel

TOL = 1e-10


@pytest.fixture(scope="module", params=CASES)
def case(request):
    return Case(request.param)


def _pin_rnea_derivatives(case, q, v, a):
    pin = case.pin
    dq, dv, M = (x.copy() for x in pin.computeRNEADerivatives(
        case.pm, case.pd, case.to_pin(q), case.v(v), case.v(a)))
    M = sym(M)
    if case.G is not None:
        G = case.G
        dq, dv, M = G.T @ dq @ G, G.T @ dv @ G, G.T @ M @ G
    return dq, dv, M


def _pin_aba_derivatives(case, q, v, tau):
    pin = case.pin
    if case.G is None:
        out = pin.computeABADerivatives(case.pm, case.pd, case.to_pin(q), v, tau)
        dq, dv, Minv = (x.copy() for x in out)
        return dq, dv, sym(Minv)
    # mimic: q̈ = M_r⁻¹ (τ − Gᵀ h), ∂q̈/∂x = −M_r⁻¹ ∂τ_r/∂x at that q̈ (Pinocchio's partials)
    qdd = case.oracle.aba(q, v, tau)
    dq, dv, M = _pin_rnea_derivatives(case, q, v, qdd)
    Minv = np.linalg.inv(M)
    return -Minv @ dq, -Minv @ dv, Minv


def test_inverse_dynamics_derivatives_match_pinocchio(case):
    rng = np.random.default_rng(11)
    r = case.robot
    for _ in range(3):
        q, v, a = case.state(rng)
        got = r.inverse_dynamics_derivatives(q, v, a)
        want = _pin_rnea_derivatives(case, q, v, a)
        for g, w, name in zip(got, want, ("dtau_dq", "dtau_dv", "M")):
            assert g.shape == (r.nv, r.nv)
            assert rel(g, w) <= TOL, name
        # sanity (not the oracle): M is our mass matrix
        assert rel(got[2], r.mass_matrix(q)) <= 1e-12


def test_forward_dynamics_derivatives_match_pinocchio(case):
    rng = np.random.default_rng(12)
    r = case.robot
    for _ in range(3):
        q, v, _ = case.state(rng)
        tau = rng.normal(size=r.nv) * 3
        got = r.forward_dynamics_derivatives(q, v, tau)
        want = _pin_aba_derivatives(case, q, v, tau)
        for g, w, name in zip(got, want, ("ddq_dq", "ddq_dv", "Minv")):
            assert g.shape == (r.nv, r.nv)
            assert rel(g, w) <= TOL, name


@pytest.mark.parametrize("seed", [3, 4])
def test_random_trees(seed):
    pin = pytest.importorskip("pinocchio")
    xml, _ = random_urdf(seed, n_movable=10)
    r = mbs.load_urdf(xml)
    pm = pin.buildModelFromXML(xml)
    pd = pm.createData()
    rng = np.random.default_rng(seed)
    q, v, a = rng.uniform(-2, 2, r.n), rng.normal(size=r.n), rng.normal(size=r.n)
    got = r.inverse_dynamics_derivatives(q, v, a)
    dq, dv, M = (x.copy() for x in pin.computeRNEADerivatives(pm, pd, pin_q(pm, q), v, a))
    for g, w in zip(got, (dq, dv, sym(M))):
        assert rel(g, w) <= TOL
    got = r.forward_dynamics_derivatives(q, v, a)
    want = (x.copy() for x in pin.computeABADerivatives(pm, pd, pin_q(pm, q), v, a))
    for g, w in zip(got, want):
        assert rel(g, sym(w) if g is got[2] else w) <= TOL


def test_out_and_repeated_calls_do_not_share_results():
    r = Case("ur5").robot
    rng = np.random.default_rng(5)
    q, v, a = rng.normal(size=(3, r.nv))
    first = r.inverse_dynamics_derivatives(q, v, a)
    keep = [x.copy() for x in first]
    r.inverse_dynamics_derivatives(q + 1, v, a)
    for x, y in zip(first, keep):
        assert np.array_equal(x, y)
    out = np.full((3, r.nv, r.nv), np.nan)
    got = r.inverse_dynamics_derivatives(q, v, a, out=out)
    assert all(np.shares_memory(g, out) for g in got)
    for g, y in zip(got, keep):
        assert np.array_equal(g, y)
    with pytest.raises(ValueError, match="out"):
        r.inverse_dynamics_derivatives(q, v, a, out=np.zeros((3, r.nv)))


def test_bad_input():
    r = Case("ur5").robot
    z = np.zeros(6)
    with pytest.raises(ValueError, match="qd"):
        r.inverse_dynamics_derivatives(z, np.zeros(4), z)
    with pytest.raises(ValueError, match="NaN"):
        r.inverse_dynamics_derivatives(z, z, np.full(6, np.nan))
    with pytest.raises(ValueError, match="tau"):
        r.forward_dynamics_derivatives(z, z, np.zeros(7))
    with pytest.raises(TypeError):
        r.forward_dynamics_derivatives(z.astype(complex), z, z)
    fb = Case("solo12").robot
    q = np.zeros(fb.nq)
    q[3] = 2.0  # not a unit quaternion
    with pytest.raises(ValueError, match="quaternion"):
        fb.inverse_dynamics_derivatives(q, np.zeros(fb.nv), np.zeros(fb.nv))


def test_batches_equal_single_calls():
    case = Case("solo12")
    r = case.robot
    rng = np.random.default_rng(9)
    Q, V, A = (np.array(x) for x in zip(*[case.state(rng) for _ in range(3)]))
    got = r.inverse_dynamics_derivatives(Q, V, A)
    assert all(g.shape == (3, r.nv, r.nv) for g in got)
    for k in range(3):
        for g, w in zip(got, _pin_rnea_derivatives(case, Q[k], V[k], A[k])):
            assert rel(g[k], w) <= TOL
