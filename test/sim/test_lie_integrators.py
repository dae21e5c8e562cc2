"""RKMK integrators on SE(3) and SO(3)×R³ (mbs_dynamics.sim.lie_integrators): convergence order
against a SciPy reference, exactness for constant twists, orthonormality over 10⁵ steps,
momentum conservation of a free body, the R^m part as classical RK, input errors."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from mbs_dynamics.kernels import lie
from mbs_dynamics.sim.lie_integrators import INTEGRATORS, RKMK, get_integrator, xi_from_body_twist

NAMES = ["rkmk4-se3", "rkmk4-so3r3", "rkmk2-se3", "rkmk2-so3r3"]
TH = np.array([0.5, 1.0, 1.6])            # principal inertia [kg m²], asymmetric
G = np.array([0.0, 0.0, -9.81])
W0 = np.array([1.5, -2.0, 2.5])           # body-fixed ω0 [rad/s]
PD0 = np.array([0.5, 0.2, 1.0])           # COM velocity at t = 0 (R0 = I) [m/s]


def _cross(a, b):
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2],
                     a[0] * b[1] - a[1] * b[0]])


def _rhs(group, gravity=G, mass=1.0):
    """A free body with its frame at the COM: Euler's equations + Newton in gravity.
    SE(3): y = body-fixed twist (ω, v), v̇ = −ω × v + Rᵀg; SO(3)×R³: y = (ω, ṗ), p̈ = g."""
    if group == "se3":
        def f(t, R, p, y):
            w = y[:3]
            return y[None], np.r_[_cross(TH * w, w) / TH, -_cross(w, y[3:]) + R[0].T @ gravity]
    else:
        def f(t, R, p, y):
            w = y[:3]
            return y[None], np.r_[_cross(TH * w, w) / TH, gravity]
    return f


@pytest.fixture(scope="module")
def reference():
    """R(T), p(T) at T = 1 s: Euler's equations in quaternions by solve_ivp (rtol 1e-13), the
    COM by the closed form p0 + ṗ0 T + g T²/2."""
    from scipy.integrate import solve_ivp

    def f(t, x):
        q, w = x[:4], x[4:]
        qd = 0.5 * np.array([-q[1] * w[0] - q[2] * w[1] - q[3] * w[2],
                             q[0] * w[0] + q[2] * w[2] - q[3] * w[1],
                             q[0] * w[1] + q[3] * w[0] - q[1] * w[2],
                             q[0] * w[2] + q[1] * w[1] - q[2] * w[0]])
        return np.r_[qd, np.cross(TH * w, w) / TH]

    sol = solve_ivp(f, (0.0, 1.0), np.r_[1.0, 0, 0, 0, W0], method="DOP853", rtol=1e-13, atol=1e-15)
    from scipy.spatial.transform import Rotation
    q = sol.y[:4, -1]
    R = Rotation.from_quat([q[1], q[2], q[3], q[0]]).as_matrix()
    return R, PD0 + 0.5 * G


def _error(name, N, reference, **kw):
    integ = INTEGRATORS[name]
    if kw:
        integ = dataclasses.replace(integ, **kw)
    R, p, _ = integ.integrate(_rhs(integ.group), 0.0, np.eye(3), np.zeros(3), np.r_[W0, PD0],
                              1.0 / N, N)
    return np.abs(R[0] - reference[0]).max() + np.abs(p[0] - reference[1]).max()


@pytest.mark.parametrize("name", NAMES)
def test_convergence_order(name, reference):
    """Halving h divides the error by 2^p within 20 %."""
    p = INTEGRATORS[name].order
    N = 20 if p == 4 else 40
    ratio = _error(name, N, reference) / _error(name, 2 * N, reference)
    assert 0.8 * 2 ** p <= ratio <= 1.2 * 2 ** p, (name, ratio)


@pytest.mark.parametrize("group", ["se3", "so3r3"])
def test_exact_dexpinv_variant_has_the_same_order(group, reference):
    name = f"rkmk4-{group}"
    ratio = _error(name, 20, reference, exact_dexpinv=True) / _error(name, 40, reference,
                                                                     exact_dexpinv=True)
    assert 0.8 * 16 <= ratio <= 1.2 * 16, ratio
    # and the truncated series is as accurate as the closed form to O(h^5) per step
    assert abs(_error(name, 40, reference) - _error(name, 40, reference, exact_dexpinv=True)) \
        < 0.1 * _error(name, 40, reference)


@pytest.mark.parametrize("name", NAMES)
def test_constant_velocity_is_integrated_exactly(name):
    """ξ constant ⇒ C(T) = C0 exp(T ξ) on SE(3) (a screw motion), C0 (exp(Tω), p0 + T v) on
    SO(3)×R³, whatever h: the update is the group's exponential, here checked against
    scipy.linalg.expm."""
    from scipy.linalg import expm
    rng = np.random.default_rng(0)
    nb = 3
    xi = rng.normal(size=(nb, 6))
    R0 = lie.so3_exp(rng.normal(size=(nb, 3)))
    p0 = rng.normal(size=(nb, 3))
    integ = INTEGRATORS[name]
    R, p, _ = integ.integrate(lambda t, R, p, y: (xi, np.zeros(0)), 0.0, R0, p0, [], 0.1, 10)
    for i in range(nb):
        if integ.group == "se3":
            M = np.zeros((4, 4))
            M[:3, :3], M[:3, 3] = lie.skew(xi[i, :3]), xi[i, 3:]
            C = lie.pose(R0[i], p0[i]) @ expm(M)
            assert np.abs(R[i] - C[:3, :3]).max() < 1e-13
            assert np.abs(p[i] - C[:3, 3]).max() < 1e-13
        else:
            assert np.abs(R[i] - R0[i] @ expm(lie.skew(xi[i, :3]))).max() < 1e-13
            assert np.abs(p[i] - (p0[i] + xi[i, 3:])).max() < 1e-13


def test_rotation_stays_orthonormal_over_1e5_steps():
    """No re-normalisation: RᵀR − I stays at round-off after 10⁵ updates ``R ← R exp(φ̃)``.

    The full RKMK4 step costs ~0.1 ms in Python, so the 10⁵-step chain applies the integrator's
    own update (:func:`exp_parts`, then the product, exactly as in ``RKMK._move``) to the
    increments of a tumbling body computed in one vectorised call; the complete integrator runs
    2·10⁴ steps of the same body below with the same bound."""
    from mbs_dynamics.sim.lie_integrators import exp_parts
    n = 100_000
    t = np.arange(n) * 1e-3
    w = np.stack([1.5 * np.cos(3 * t), -2.0 + np.sin(t), 2.5 * np.cos(t) ** 2], axis=1)
    E, _, _ = exp_parts(w * 1e-3, False)                 # all increments at once
    assert np.abs(np.swapaxes(E, 1, 2) @ E - np.eye(3)).max() < 1e-15
    R = np.eye(3)
    for k in range(n):
        R = R @ E[k]
    assert np.abs(R.T @ R - np.eye(3)).max() <= 1e-12
    assert abs(np.linalg.det(R) - 1.0) <= 1e-12


@pytest.mark.parametrize("name, n", [("rkmk4-se3", 20_000), ("rkmk2-so3r3", 100_000)])
def test_integrator_keeps_rotation_orthonormal(name, n):
    """The complete integrator with a cheap right-hand side (ω̇ constant, so the increment
    changes every step): 10⁵ steps of the cheapest scheme, 2·10⁴ of RKMK4 on SE(3)."""
    integ = INTEGRATORS[name]
    alpha = np.array([0.01, -0.02, 0.015, 0.0, 0.0, 0.0])
    R, p, y = integ.integrate(lambda t, R, p, y: (y[None], alpha), 0.0, np.eye(3),
                              np.zeros(3), np.r_[W0, PD0], 1e-3, n)
    assert np.abs(R[0].T @ R[0] - np.eye(3)).max() <= 1e-12
    assert abs(np.linalg.det(R[0]) - 1.0) <= 1e-12


@pytest.mark.parametrize("name", ["rkmk4-se3", "rkmk4-so3r3"])
def test_free_body_conserves_spatial_momentum(name):
    """No gravity: the spatial momentum in the inertial frame, linear m ṗ and angular
    R Θ ω + p × m ṗ (about the origin), stays constant to ≤ 1e-10 (relative) over 2 s."""
    integ = INTEGRATORS[name]
    mass = 1.0
    p0 = np.array([0.3, -0.2, 0.5])

    def momentum(R, p, y):
        pd = R[0] @ y[3:] if integ.group == "se3" else y[3:]
        lin = mass * pd
        return np.r_[R[0] @ (TH * y[:3]) + np.cross(p[0], lin), lin]

    y0 = np.r_[W0, PD0]
    h0 = momentum(np.eye(3)[None], p0[None], y0)
    R, p, y = integ.integrate(_rhs(integ.group, gravity=np.zeros(3)), 0.0, np.eye(3), p0, y0,
                              1e-3, 2000)
    assert np.abs(momentum(R, p, y) - h0).max() <= 1e-10 * np.abs(h0).max()


@pytest.mark.parametrize("order", [2, 4])
def test_body_twist_on_so3r3_converges_to_the_screw_motion(order):
    """A constant body-fixed twist is a screw motion C0 exp(tV) (exact on SE(3)); on SO(3)×R³
    with ``xi_from_body_twist`` (ṗ = R v) the scheme converges to it at its order."""
    from scipy.linalg import expm
    V = np.array([[0.8, -1.1, 1.7, 0.4, -0.3, 0.9]])
    M = np.zeros((4, 4))
    M[:3, :3], M[:3, 3] = lie.skew(V[0, :3]), V[0, 3:]
    C1 = expm(M)
    integ = INTEGRATORS[f"rkmk{order}-so3r3"]
    f = lambda t, R, p, y: (xi_from_body_twist("so3r3", R, V), y)  # noqa: E731
    errs = []
    for N in (20, 40):
        R, p, _ = integ.integrate(f, 0.0, np.eye(3), np.zeros(3), [], 1.0 / N, N)
        assert np.abs(R[0] - C1[:3, :3]).max() < 1e-13      # the rotation is exact
        errs.append(np.abs(p[0] - C1[:3, 3]).max())
    assert 0.8 * 2 ** order <= errs[0] / errs[1] <= 1.2 * 2 ** order
    assert np.array_equal(xi_from_body_twist("se3", np.eye(3)[None], V), V)
    with pytest.raises(ValueError, match="group"):
        xi_from_body_twist("se2", np.eye(3)[None], V)


@pytest.mark.parametrize("name", NAMES)
def test_vector_part_is_classical_runge_kutta(name):
    """The R^m part (e.g. joint coordinates) follows the scheme's Butcher tableau: for ẏ = −y
    the step factor is the RK stability polynomial exactly."""
    integ = INTEGRATORS[name]
    h, N = 0.1, 7
    R, p, y = integ.integrate(lambda t, R, p, y: (np.zeros((1, 6)), -y), 0.0, np.eye(3),
                              np.zeros(3), [1.0, -2.0], h, N)
    z = -h
    amp = 1 + z + z * z / 2 + (z ** 3 / 6 + z ** 4 / 24 if integ.order == 4 else 0.0)
    assert np.allclose(y, np.array([1.0, -2.0]) * amp ** N, rtol=1e-14, atol=0)
    assert np.array_equal(R[0], np.eye(3)) and np.array_equal(p[0], np.zeros(3))


def test_registry_and_errors():
    assert sorted(INTEGRATORS) == sorted(NAMES)
    assert get_integrator("rkmk2-so3r3") is INTEGRATORS["rkmk2-so3r3"]
    with pytest.raises(ValueError, match="rk45"):
        get_integrator("rk45")
    with pytest.raises(ValueError, match="group"):
        RKMK("x", "se2", a=((),), b=(1.0,), c=(0.0,), order=1)
    integ = INTEGRATORS["rkmk4-se3"]
    f = _rhs("se3")
    with pytest.raises(ValueError, match="R0"):
        integ.integrate(f, 0.0, np.eye(4), np.zeros(3), np.zeros(6), 1e-3, 1)
    with pytest.raises(ValueError, match="R0 is not a rotation"):
        integ.integrate(f, 0.0, 2 * np.eye(3), np.zeros(3), np.zeros(6), 1e-3, 1)
    with pytest.raises(ValueError, match="p0"):
        integ.integrate(f, 0.0, np.eye(3), np.zeros(2), np.zeros(6), 1e-3, 1)
    with pytest.raises(ValueError, match="h must"):
        integ.integrate(f, 0.0, np.eye(3), np.zeros(3), np.zeros(6), 0.0, 1)
    with pytest.raises(ValueError, match="y0"):
        integ.integrate(f, 0.0, np.eye(3), np.zeros(3), [np.nan] * 6, 1e-3, 1)
    with pytest.raises(ValueError, match="non-finite"):
        integ.integrate(lambda t, R, p, y: (np.full((1, 6), np.inf), y), 0.0, np.eye(3),
                        np.zeros(3), np.zeros(6), 1e-3, 2)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("exact", [False, True])
def test_batched_bodies_match_single_body_path(name, exact):
    """Several bodies at once (NumPy batched path) give the same trajectories as each body alone
    (the scalar single-body path): two implementations of the same step."""
    integ = dataclasses.replace(INTEGRATORS[name], exact_dexpinv=exact)
    rng = np.random.default_rng(7)
    nb = 3
    R0 = lie.so3_exp(rng.normal(size=(nb, 3)))
    p0 = rng.normal(size=(nb, 3))
    y0 = rng.normal(size=6 * nb)
    f1 = _rhs(integ.group)

    def f(t, R, p, y):  # the free bodies in gravity, side by side
        out = [f1(t, R[i:i + 1], p[i:i + 1], y[6 * i:6 * i + 6]) for i in range(nb)]
        return np.concatenate([o[0] for o in out]), np.concatenate([o[1] for o in out])

    R, p, y = integ.integrate(f, 0.0, R0, p0, y0, 0.01, 30)
    for i in range(nb):
        Ri, pi, yi = integ.integrate(f1, 0.0, R0[i], p0[i], y0[6 * i:6 * i + 6], 0.01, 30)
        assert np.abs(R[i] - Ri[0]).max() < 1e-13
        assert np.abs(p[i] - pi[0]).max() < 1e-13
        assert np.abs(y[6 * i:6 * i + 6] - yi).max() < 1e-12


@pytest.mark.parametrize("n", [1, 5])
def test_exp_parts_matches_the_reference_exponential(n):
    """The integrators' hot-path exp / dexp (scalar for one body, batched otherwise, closed form
    or series on either side of 1e-2 rad) against mbs_dynamics.kernels.lie (itself tested vs expm)."""
    from mbs_dynamics.sim.lie_integrators import exp_parts
    rng = np.random.default_rng(11)
    for theta in [0.0, 1e-9, 5e-3, 1e-2 * (1 - 1e-12), 1e-2, 1.5e-2, 0.3, 2.0, 3.1]:
        axes = rng.normal(size=(n, 3))
        w = theta * axes / np.linalg.norm(axes, axis=1, keepdims=True)
        if n > 1:
            w[0] *= 1e-3  # mix small and large angles in one batch
        R, W, J = exp_parts(w, True)
        assert np.abs(R - lie.so3_exp(w)).max() < 1e-15
        assert np.abs(J - lie.so3_dexp(w)).max() < 1e-15
        assert np.abs(W - lie.hat(w)).max() == 0.0
