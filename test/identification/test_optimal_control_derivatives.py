"""Derivatives for optimal control (issue 29): ``inverse_mass_matrix`` (M⁻¹ by the
articulated-body route) against ``pin.computeMinverse`` and ``inv(pin.crba)`` (1e-12 relative),
on fixed (Panda, UR5, random trees with prismatic joints and branches), floating (solo12, ANYmal;
Pinocchio's tangent convention) and mimic robots (Pinocchio's full model projected with G)."""
from __future__ import annotations

import numpy as np
import pytest

import mbs_dynamics as mbs
from conftest import pin_q, random_urdf, sym
from test_identification_regressor import CASES, Case, rel


@pytest.fixture(scope="module", params=CASES)
def case(request):
    return Case(request.param)


def _pin_minv(case, q):
    """inv(pin.crba) (projected for mimic robots); checked against ``pin.computeMinverse``,
    which itself strays from inv(crba) by up to ~1e-12 on solo12 at |q_j| ≤ 2 (cond(M) ~ 2e4),
    hence the looser 1e-10 for that second oracle."""
    pin = case.pin
    M = sym(pin.crba(case.pm, case.pd, case.to_pin(q)).copy())
    if case.G is not None:
        return np.linalg.inv(case.G.T @ M @ case.G), None
    return np.linalg.inv(M), sym(pin.computeMinverse(case.pm, case.pd, case.to_pin(q)).copy())


def _check(got, case, q):
    want, pmi = _pin_minv(case, q)
    assert rel(got, want) <= 1e-12
    if pmi is not None:
        assert rel(got, pmi) <= 1e-10


def test_inverse_mass_matrix_matches_pinocchio(case):
    rng = np.random.default_rng(21)
    r = case.robot
    for _ in range(3):
        q, _, _ = case.state(rng)
        got = r.inverse_mass_matrix(q)
        assert got.shape == (r.nv, r.nv)
        _check(got, case, q)
        assert np.array_equal(got, got.T)


def test_inverse_mass_matrix_batch_and_out(case):
    rng = np.random.default_rng(22)
    r = case.robot
    Q = np.array([case.state(rng)[0] for _ in range(4)])
    got = r.inverse_mass_matrix(Q)
    assert got.shape == (4, r.nv, r.nv)
    for k in range(4):
        _check(got[k], case, Q[k])
    out = np.full((4, r.nv, r.nv), np.nan)
    assert r.inverse_mass_matrix(Q, out=out) is out
    assert np.array_equal(out, got)
    one = np.full((r.nv, r.nv), np.nan)
    assert r.inverse_mass_matrix(Q[1], out=one) is one
    assert np.array_equal(one, got[1])


@pytest.mark.parametrize("seed", [3, 4, 7])
def test_inverse_mass_matrix_random_trees(seed):
    pin = pytest.importorskip("pinocchio")
    xml, _ = random_urdf(seed, n_movable=14)
    r = mbs.load_urdf(xml)
    pm = pin.buildModelFromXML(xml)
    pd = pm.createData()
    rng = np.random.default_rng(seed)
    for _ in range(2):
        q = rng.uniform(-2, 2, r.n)
        want = sym(pin.computeMinverse(pm, pd, pin_q(pm, q)).copy())
        assert rel(r.inverse_mass_matrix(q), want) <= 1e-12
        assert rel(r.inverse_mass_matrix(q), np.linalg.inv(sym(pin.crba(pm, pd, pin_q(pm, q))))) \
            <= 1e-12


def test_inverse_mass_matrix_bad_input():
    r = Case("ur5").robot
    with pytest.raises(ValueError, match="q"):
        r.inverse_mass_matrix(np.zeros(5))
    with pytest.raises(ValueError, match="NaN"):
        r.inverse_mass_matrix(np.full(6, np.nan))
    with pytest.raises(TypeError):
        r.inverse_mass_matrix(np.zeros(6, dtype=complex))
    with pytest.raises(ValueError, match="out"):
        r.inverse_mass_matrix(np.zeros(6), out=np.zeros((6, 5)))
    fb = Case("solo12").robot
    q = np.zeros(fb.nq)
    q[3] = 2.0
    with pytest.raises(ValueError, match="quaternion"):
        fb.inverse_mass_matrix(q)
