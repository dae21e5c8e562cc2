"""Physically consistent inertial parameters: every body's pseudo-inertia positive definite.

Body parameters π_i = (m, m c, I_xx, I_xy, I_yy, I_xz, I_yz, I_zz) (inertia about the body
frame origin) and the 4×4 pseudo-inertia (Wensing, Kim, Slotine 2017)

    J(π) = [[Σ, h], [hᵀ, m]],   Σ = ½ tr(I) 1 − I,   h = m c,

are in one-to-one correspondence; J ≻ 0 exactly when π is the inertia of a positive mass
density (mass > 0, inertia positive definite, strict triangle inequality). The log-Cholesky
parameterisation (Rucker & Wensing 2022) J = U Uᵀ with U upper triangular, diagonal exp(α_k)
and free off-diagonal entries, maps every θ ∈ R¹⁰ to a consistent body, so an unconstrained
least-squares problem in θ stays consistent:

    min_θ,f  ‖Lᵀ (x(θ, f) − x̂)‖² + ‖(π(θ) − π_prior) / s‖²,   x = (to_base(π(θ)), f),

with x̂ the weighted least-squares estimate and L Lᵀ its information matrix (the same cost as
the torque residual up to a constant), friction f ≥ 0 (bounds), and a weak prior (σ_prior = s,
the magnitude of each parameter kind in the prior model) that fixes the directions the torques
do not see (solved with scipy.optimize.least_squares).
"""
from __future__ import annotations

import numpy as np

__all__ = ["pseudo_inertia", "parameters_of_pseudo", "theta_of_pi", "pi_of_theta",
           "is_consistent", "consistent_estimate"]

_IU = np.triu_indices(4, 1)


def pseudo_inertia(p):
    """(…, 4, 4) pseudo-inertia of parameter rows p (…, 10)."""
    p = np.asarray(p, float)
    m, h = p[..., 0], p[..., 1:4]
    xx, xy, yy, xz, yz, zz = (p[..., k] for k in range(4, 10))
    I = np.stack([np.stack([xx, xy, xz], -1), np.stack([xy, yy, yz], -1),
                  np.stack([xz, yz, zz], -1)], -2)
    tr = xx + yy + zz
    J = np.zeros(p.shape[:-1] + (4, 4))
    J[..., :3, :3] = 0.5 * tr[..., None, None] * np.eye(3) - I
    J[..., :3, 3] = h
    J[..., 3, :3] = h
    J[..., 3, 3] = m
    return J


def parameters_of_pseudo(J):
    """Inverse of :func:`pseudo_inertia`: (…, 10) rows."""
    S = J[..., :3, :3]
    I = np.trace(S, axis1=-2, axis2=-1)[..., None, None] * np.eye(3) - S
    return np.stack([J[..., 3, 3], J[..., 0, 3], J[..., 1, 3], J[..., 2, 3], I[..., 0, 0],
                     I[..., 0, 1], I[..., 1, 1], I[..., 0, 2], I[..., 1, 2], I[..., 2, 2]], -1)


def is_consistent(p, rtol=1e-12):
    """True where the pseudo-inertia of rows p is positive definite."""
    J = pseudo_inertia(p)
    lam = np.linalg.eigvalsh(J)
    return lam[..., 0] > rtol * np.abs(lam).max(-1)


def pi_of_theta(theta):
    """(nb, 10) parameters of log-Cholesky coordinates θ (nb, 10): J = U Uᵀ."""
    theta = np.asarray(theta, float).reshape(-1, 10)
    U = np.zeros((theta.shape[0], 4, 4))
    k = np.arange(4)
    U[:, k, k] = np.exp(theta[:, :4])
    U[:, _IU[0], _IU[1]] = theta[:, 4:]
    return parameters_of_pseudo(U @ U.transpose(0, 2, 1))


def pi_jacobian(theta):
    """(nb, 10, 10) derivatives ∂π_i/∂θ_i of :func:`pi_of_theta` (block diagonal over bodies):
    dJ = dU Uᵀ + U dUᵀ with dU one entry of U (times exp(α) on the diagonal)."""
    theta = np.asarray(theta, float).reshape(-1, 10)
    nb = theta.shape[0]
    U = np.zeros((nb, 4, 4))
    k = np.arange(4)
    U[:, k, k] = np.exp(theta[:, :4])
    U[:, _IU[0], _IU[1]] = theta[:, 4:]
    rows = list(zip(k, k)) + list(zip(*_IU))
    dJ = np.zeros((nb, 10, 4, 4))
    for c, (a, b) in enumerate(rows):
        dU = np.zeros((nb, 4, 4))
        dU[:, a, b] = U[:, a, b] if c < 4 else 1.0
        G = dU @ U.transpose(0, 2, 1)
        dJ[:, c] = G + G.transpose(0, 2, 1)
    return parameters_of_pseudo(dJ).transpose(0, 2, 1)


def theta_of_pi(p, floor=1e-6):
    """Log-Cholesky coordinates of the nearest consistent bodies to rows p: eigenvalues of each
    pseudo-inertia are raised to at least ``floor`` × its largest (and > 0)."""
    J = pseudo_inertia(np.asarray(p, float).reshape(-1, 10))
    lam, V = np.linalg.eigh(J)
    top = np.maximum(np.abs(lam).max(-1, keepdims=True), 1e-9)
    lam = np.maximum(lam, floor * top)
    J = (V * lam[:, None, :]) @ V.transpose(0, 2, 1)
    # J = U Uᵀ with U upper triangular: the Cholesky factor of the index-reversed matrix
    E = np.eye(4)[::-1]
    L = np.linalg.cholesky(E @ J @ E)
    U = E @ L @ E
    k = np.arange(4)
    return np.concatenate([np.log(U[:, k, k]), U[:, _IU[0], _IU[1]]], axis=1)


def least_norm(T, r):
    """The least-norm solution of T x = r (T of full row rank): Tᵀ (T Tᵀ)⁻¹ r."""
    return T.T @ np.linalg.solve(T @ T.T, r)


def _prior_scale(prior):
    """Magnitude of each parameter kind over the bodies (mass, first moment, inertia)."""
    a = np.abs(prior)
    s = np.empty(10)
    s[0] = max(a[:, 0].mean(), 1e-3)
    s[1:4] = max(a[:, 1:4].mean(), 0.05 * s[0] * 0.1)
    s[4:10] = max(a[:, [4, 6, 9]].mean(), 0.01 * s[0] * 0.01)
    return s


def consistent_estimate(T, x_hat, information, prior, n_friction=0, max_nfev=400):
    """The physically consistent (π, friction) closest to a least-squares estimate.

    Args:
        T: (p, 10 nb) to_base matrix.
        x_hat: (p + n_friction,) estimate (base parameters, then friction coefficients).
        information: (P, P) inverse covariance of x_hat.
        prior: (nb, 10) prior parameters (the URDF's); also the starting point's null-space part.
        n_friction: number of friction coefficients at the end of x_hat (kept ≥ 0).
    Returns:
        (pi (nb, 10) consistent, friction (n_friction,), cost_increase) where cost_increase is
        the increase of the weighted residual (χ² units) over the unconstrained estimate.
    """
    from scipy.optimize import least_squares

    nb = prior.shape[0]
    p = T.shape[0]
    prior = np.asarray(prior, float)
    # information = L Lᵀ; eigen-factor (it may be singular in unexcited directions)
    lam, V = np.linalg.eigh(0.5 * (information + information.T))
    L = V * np.sqrt(np.maximum(lam, 0.0))
    s = np.tile(_prior_scale(prior), nb)
    prior_flat = prior.ravel()

    nf = n_friction
    LT = L.T
    # friction f = u² ≥ 0 (MINPACK's Levenberg-Marquardt has no bounds; it factors by QR in
    # Fortran, where trf's SVD or LSMR per iteration took seconds on a loaded machine)

    def residual(z):
        pi = pi_of_theta(z[:10 * nb]).ravel()
        x = np.concatenate([T @ pi, z[10 * nb:] ** 2])
        return np.concatenate([LT @ (x - x_hat), (pi - prior_flat) / s])

    def jacobian(z):
        D = np.zeros((10 * nb, 10 * nb))  # block diagonal ∂π/∂θ
        for i, blk in enumerate(pi_jacobian(z[:10 * nb])):
            D[10 * i:10 * i + 10, 10 * i:10 * i + 10] = blk
        top = np.concatenate([LT[:, :p] @ (T @ D), LT[:, p:] * (2.0 * z[10 * nb:])], axis=1)
        bottom = np.concatenate([D / s[:, None], np.zeros((10 * nb, nf))], axis=1)
        return np.concatenate([top, bottom], axis=0)

    # start: the prior moved along the identifiable directions to the estimate (least norm),
    # then projected onto the consistent bodies
    pi0 = prior_flat + least_norm(T, x_hat[:p] - T @ prior_flat)
    starts = [theta_of_pi(pi0.reshape(nb, 10)).ravel(), theta_of_pi(prior).ravel()]
    f_scale = max(float(np.abs(x_hat[p:]).max(initial=0.0)), 1e-3)
    u0 = np.sqrt(np.maximum(x_hat[p:], 1e-4 * f_scale))
    best, best_cost = None, np.inf
    for th0 in starts:
        z0 = np.concatenate([th0, u0])
        with np.errstate(all="ignore"):
            for z in (z0, least_squares(residual, z0, jac=jacobian, method="lm",
                                        max_nfev=max_nfev).x):
                r = residual(z)
                cost = float(r @ r) if np.all(np.isfinite(r)) else np.inf
                if cost < best_cost:  # a diverged fit never beats its own start
                    best, best_cost = z, cost
    if best is None:
        raise ArithmeticError("the physically consistent fit failed (non-finite residuals)")
    pi = pi_of_theta(best[:10 * nb])
    fr = best[10 * nb:] ** 2
    x = np.concatenate([T @ pi.ravel(), fr])
    r = L.T @ (x - x_hat)
    return pi, fr, float(r @ r)
