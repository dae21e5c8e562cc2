"""exp, log, dexp, dexp⁻¹ of SO(3) and SE(3) (mbs_dynamics.kernels.lie) against scipy.linalg.expm,
finite differences and the defining power series."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.linalg import expm

from mbs_dynamics.kernels import lie

RNG = np.random.default_rng(3)
# angles across every branch: 0, tiny, the series/closed-form switch at 2 rad, near π
ANGLES = [0.0, 1e-12, 1e-7, 1e-4, 1e-2, 0.3, 1.0, 1.999999, 2.0, 2.000001, 2.5, 3.0,
          math.pi - 1e-6, math.pi]


def _axis():
    a = RNG.normal(size=3)
    return a / np.linalg.norm(a)


def _hat4(X):
    M = np.zeros((4, 4))
    M[:3, :3] = lie.skew(X[:3])
    M[:3, 3] = X[3:]
    return M


def _vee4(M):
    return np.r_[lie.vee(M[:3, :3]), M[:3, 3]]


def _twist(theta):
    return np.r_[theta * _axis(), RNG.normal(size=3)]


@pytest.mark.parametrize("theta", ANGLES)
def test_so3_exp_matches_expm(theta):
    w = theta * _axis()
    R = lie.so3_exp(w)
    assert np.abs(R - expm(lie.skew(w))).max() < 2e-15
    assert np.abs(R.T @ R - np.eye(3)).max() < 1e-15


@pytest.mark.parametrize("theta", ANGLES)
def test_se3_exp_matches_expm(theta):
    X = _twist(theta)
    assert np.abs(lie.se3_exp(X) - expm(_hat4(X))).max() < 5e-15


@pytest.mark.parametrize("theta", ANGLES[:-1])  # at exactly π the log is ±: checked below
def test_log_inverts_exp(theta):
    w = theta * _axis()
    tol = 1e-14 * max(1.0, 1.0 / max(math.pi - theta, 1e-2))
    assert np.abs(lie.so3_log(lie.so3_exp(w)) - w).max() < tol
    X = _twist(theta)
    # log is ill-conditioned as θ → π (condition ~ 1/(π − θ)): 1e-6 from π, ~1e-10 is round-off
    tol = 2e-9 if theta > 3.1 else 1e-13
    assert np.abs(lie.se3_log(lie.se3_exp(X)) - X).max() < tol


def test_log_at_pi_and_random_rotations_round_trip():
    from scipy.spatial.transform import Rotation
    Rs = Rotation.random(200, random_state=4).as_matrix()
    w = lie.so3_log(Rs)                               # batched
    assert np.all(np.linalg.norm(w, axis=1) <= math.pi + 1e-15)
    assert np.abs(lie.so3_exp(w) - Rs).max() < 1e-14
    for _ in range(5):                                # θ = π exactly: either sign is right
        n = _axis()
        R = expm(lie.skew(math.pi * n))
        wl = lie.so3_log(R)
        assert abs(np.linalg.norm(wl) - math.pi) < 1e-14
        assert min(np.abs(wl - math.pi * n).max(), np.abs(wl + math.pi * n).max()) < 1e-7
        assert np.abs(lie.so3_exp(wl) - R).max() < 1e-14


def test_log_is_continuous_near_pi_and_zero():
    n = _axis()
    for eps in [1e-3, 1e-6, 1e-9]:
        for theta in (math.pi - eps, eps):
            w = lie.so3_log(lie.so3_exp(theta * n))
            assert np.abs(w - theta * n).max() < 1e-12, (theta, w - theta * n)


def _fd_right(expfun, hatfun, veefun, X, Y, eps=1e-6):
    """vee( d/dε exp(X + εY) · exp(X)⁻¹ ) by central differences."""
    d = (expfun(hatfun(X + eps * Y)) - expfun(hatfun(X - eps * Y))) / (2 * eps)
    return veefun(d @ np.linalg.inv(expfun(hatfun(X))))


@pytest.mark.parametrize("theta", [0.0, 1e-5, 0.4, 1.9, 2.1, 3.0])
def test_dexp_is_the_differential_of_exp(theta):
    w, u = theta * _axis(), RNG.normal(size=3)
    assert np.abs(lie.so3_dexp(w) @ u - _fd_right(expm, lie.skew, lie.vee, w, u)).max() < 1e-8
    X, Y = _twist(theta), RNG.normal(size=6)
    assert np.abs(lie.se3_dexp(X) @ Y - _fd_right(expm, _hat4, _vee4, X, Y)).max() < 1e-8
    # left-trivialised form used by the integrators: C⁻¹Ċ = dexp_{−X} Ẋ
    eps = 1e-6
    C = expm(_hat4(X))
    Cd = (expm(_hat4(X + eps * Y)) - expm(_hat4(X - eps * Y))) / (2 * eps)
    assert np.abs(lie.se3_dexp(-X) @ Y - _vee4(np.linalg.inv(C) @ Cd)).max() < 1e-8


@pytest.mark.parametrize("theta", [0.0, 1e-6, 0.05, 0.7, 1.5, 1.99, 2.01, 2.8, 4.0, 6.0])
def test_dexp_and_dexpinv_match_their_series_and_invert(theta):
    X = _twist(theta)
    a = lie.ad(X)
    series = sum(np.linalg.matrix_power(a, k) / math.factorial(k + 1) for k in range(80))
    assert np.abs(lie.se3_dexp(X) - series).max() < 1e-14 * max(1.0, np.abs(series).max())
    assert np.abs(lie.se3_dexp(X) @ lie.se3_dexpinv(X) - np.eye(6)).max() < 1e-13
    assert np.abs(lie.so3_dexp(X[:3]) @ lie.so3_dexpinv(X[:3]) - np.eye(3)).max() < 1e-13
    if theta < 3.0:  # Bernoulli series of dexp⁻¹ converges for |ω| < 2π; fast enough below 3
        inv_series = sum(float(lie._B[k]) * np.linalg.matrix_power(a, k) / math.factorial(k)
                         for k in range(44))
        assert np.abs(lie.se3_dexpinv(X) - inv_series).max() < 1e-13


@pytest.mark.parametrize("theta", [0.5, 1.0, 2.0, 3.0, 5.0])
def test_se3_dexpinv_equals_the_papers_eq_10(theta):
    X = _twist(theta)
    assert np.abs(lie.se3_dexpinv(X) - lie.se3_dexpinv_paper(X)).max() < 1e-12


def test_coefficients_are_continuous_across_the_series_switch():
    # one ulp either side of the switch (axis along x so that |ω| is exact): the series and the
    # closed form must agree to round-off
    n, v = np.array([1.0, 0.0, 0.0]), RNG.normal(size=3)
    lo = np.nextafter(lie._SERIES_THETA, 0.0) * n
    hi = np.nextafter(lie._SERIES_THETA, 9.0) * n
    assert np.linalg.norm(lo) < lie._SERIES_THETA <= np.linalg.norm(hi)
    for f in (lie.so3_exp, lie.so3_dexp, lie.so3_dexpinv):
        assert np.abs(f(lo) - f(hi)).max() < 1e-14
    for f in (lie.se3_exp, lie.se3_dexp, lie.se3_dexpinv):
        assert np.abs(f(np.r_[lo, v]) - f(np.r_[hi, v])).max() < 1e-14
    # and at 0: the first-order behaviour
    w = 1e-9 * n
    assert np.abs(lie.so3_dexp(w) - (np.eye(3) + 0.5 * lie.skew(w))).max() < 1e-18
    assert np.abs(lie.so3_dexpinv(w) - (np.eye(3) - 0.5 * lie.skew(w))).max() < 1e-18


def test_batched_shapes_and_agreement_with_the_existing_helpers():
    W = RNG.normal(size=(4, 5, 3))
    assert lie.so3_exp(W).shape == (4, 5, 3, 3)
    assert lie.so3_log(lie.so3_exp(W)).shape == (4, 5, 3)
    X = RNG.normal(size=(7, 6))
    assert lie.se3_dexp(X).shape == (7, 6, 6)
    for k in range(7):
        assert np.allclose(lie.se3_dexp(X)[k], lie.se3_dexp(X[k]), atol=1e-15)
        assert np.allclose(lie.ad_se3(X)[k], lie.ad(X[k]))
        assert np.allclose(lie.hat(X[k, :3]), lie.skew(X[k, :3]))
    # exp_se3(X, q) (unit screw, angle) used by model.py is the same exponential
    for _ in range(5):
        S = np.r_[_axis(), RNG.normal(size=3)]
        q = RNG.uniform(-3, 3)
        assert np.abs(lie.exp_se3(S, q) - lie.se3_exp(S * q)).max() < 1e-14


def test_first_moment_of_spatial_inertias():
    """m·c read back from seed 004 eq. 24's inertia, one body and a stack of bodies."""
    rng = np.random.default_rng(5)
    ms, cs = rng.uniform(0.1, 3.0, 4), rng.normal(size=(4, 3))
    Ms = np.stack([lie.spatial_inertia(m, c, np.diag([0.1, 0.2, 0.3])) for m, c in zip(ms, cs)])
    np.testing.assert_allclose(lie.first_moment(Ms), ms[:, None] * cs, rtol=1e-15, atol=1e-15)
    np.testing.assert_allclose(lie.first_moment(Ms[0]), ms[0] * cs[0], rtol=1e-15, atol=1e-15)
