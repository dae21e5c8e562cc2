"""Physically consistent inertial parameters: every body's pseudo-inertia positive definite.

Body parameters π_i = (m, m c, I_xx, I_xy, I_yy, I_xz, I_yz, I_zz) (inertia about the body
frame origin) and the 4×4 pseudo-inertia (Wensing, Kim, Slotine 2017)

    J(π) = [[Σ, h], [hᵀ, m]],   Σ = ½ tr(I) 1 − I,   h = m c,

are in one-to-one correspondence; J ≻ 0 exactly when π is the inertia of a positive mass
density (mass > 0, inertia positive definite, strict triangle inequality). The log-Cholesky
parameterisation (Rucker & Wensing 2022) J = U Uᵀ with U upper triangular, diagonal exp(α_k)
and free off-diagonal entries, maps every θ ∈ R¹⁰ to a consistent body, so an unconstrained
least-squares problem in θ stays consistent.

The prior is geometric (Lee, Wensing & Park, "Geometric robot dynamic identification: a convex
programming approach", 2020): the log-det (Bregman, entropic) divergence of each body's
pseudo-inertia from the URDF's J̄ = Ū Ūᵀ,

    d(J ‖ J̄) = tr(J̄⁻¹ J) − log det(J̄⁻¹ J) − 4,

which is 0 at J̄, invariant to the units and the frame, and grows without bound towards the
boundary of the physical bodies (a barrier: the estimate keeps a margin). In relative
log-Cholesky coordinates J = Ū V Vᵀ Ūᵀ (V upper triangular, V_kk = exp(α_k)) it is a sum of
squares, d = Σ_{a<b} V_ab² + Σ_k (e^{2α_k} − 2α_k − 1), so the estimate is

    min_θ,f  ‖Lᵀ (x(θ, f) − x̂)‖² + γ Σ_bodies d(J(θ) ‖ J̄),   x = (to_base(π(θ)), f),

with x̂ the weighted least-squares estimate and L Lᵀ its information matrix (the torque residual
in units of the noise σ, up to a constant), friction f = u² ≥ 0, solved by Levenberg–Marquardt
(scipy.optimize.least_squares). γ (:data:`PRIOR_WEIGHT`) weighs the prior as one standard
deviation of the data per unit of divergence (≈ ½ ‖J̄^{-½} ΔJ J̄^{-½}‖² for small changes: a
relative change of a body's pseudo-inertia of order one); directions the data do not see stay
at the prior, the others follow the data. A body whose smallest eigenvalue still ends below
:data:`MARGIN` of its largest is raised to it (the URDF's own bodies are first made to hold it).
"""
from __future__ import annotations

import numpy as np

__all__ = ["pseudo_inertia", "parameters_of_pseudo", "theta_of_pi", "pi_of_theta", "divergence",
           "margin", "PRIOR_WEIGHT", "MARGIN",
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


def _factor(theta):
    theta = np.asarray(theta, float).reshape(-1, 10)
    U = np.zeros((theta.shape[0], 4, 4))
    k = np.arange(4)
    U[:, k, k] = np.exp(theta[:, :4])
    U[:, _IU[0], _IU[1]] = theta[:, 4:]
    return theta, U


def pi_of_theta(theta, Ubar=None):
    """(nb, 10) parameters of log-Cholesky coordinates θ (nb, 10): J = U Uᵀ, or relative to
    upper triangular factors Ubar (nb, 4, 4): J = Ubar U Uᵀ Ubarᵀ."""
    theta, U = _factor(theta)
    if Ubar is not None:
        U = Ubar @ U
    return parameters_of_pseudo(U @ U.transpose(0, 2, 1))


def pi_jacobian(theta, Ubar=None):
    """(nb, 10, 10) derivatives ∂π_i/∂θ_i of :func:`pi_of_theta` (block diagonal over bodies):
    dJ = dU Uᵀ + U dUᵀ with dU one entry of U (times exp(α) on the diagonal), premultiplied by
    Ubar when given."""
    theta, V = _factor(theta)
    nb = theta.shape[0]
    k = np.arange(4)
    U = V if Ubar is None else Ubar @ V
    rows = list(zip(k, k)) + list(zip(*_IU))
    dJ = np.zeros((nb, 10, 4, 4))
    for c, (a, b) in enumerate(rows):
        dU = np.zeros((nb, 4, 4))
        dU[:, a, b] = V[:, a, b] if c < 4 else 1.0
        if Ubar is not None:
            dU = Ubar @ dU
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


#: γ: the weight of the geometric prior against the data's χ² (module docstring).
PRIOR_WEIGHT = 1.0
#: Smallest eigenvalue of every returned body's pseudo-inertia relative to its largest.
MARGIN = 1e-6


def _divergence_residuals(theta):
    """r (nb, 10) with Σ r² = d(J ‖ J̄) in relative log-Cholesky coordinates θ, and dr/dθ
    (diagonal, (nb, 10)): r = sign(α)(e^{2α} − 2α − 1)^½ for the diagonal, V_ab above it."""
    theta = np.asarray(theta, float).reshape(-1, 10)
    al = theta[:, :4]
    small = np.abs(al) < 1e-4
    g = np.expm1(2.0 * al) - 2.0 * al
    with np.errstate(invalid="ignore", divide="ignore"):
        r_big = np.sign(al) * np.sqrt(np.maximum(g, 0.0))
        d_big = np.expm1(2.0 * al) / r_big
    r_small = np.sqrt(2.0) * al * np.sqrt(1.0 + 2.0 * al / 3.0 + al * al / 3.0)
    d_small = np.sqrt(2.0) * (1.0 + 2.0 * al / 3.0)
    r = np.concatenate([np.where(small, r_small, r_big), theta[:, 4:]], axis=1)
    dr = np.concatenate([np.where(small, d_small, d_big), np.ones_like(theta[:, 4:])], axis=1)
    return r, dr


def divergence(pi, prior):
    """Log-det divergence d(J(π_i) ‖ J(prior_i)) (nb,) of each body (module docstring)."""
    J = pseudo_inertia(np.asarray(pi, float).reshape(-1, 10))
    Jb = pseudo_inertia(np.asarray(prior, float).reshape(-1, 10))
    M = np.linalg.solve(Jb, J)
    return np.trace(M, axis1=1, axis2=2) - np.linalg.slogdet(M)[1] - 4.0


def margin(pi):
    """Smallest over largest eigenvalue (nb,) of each body's pseudo-inertia."""
    lam = np.linalg.eigvalsh(pseudo_inertia(np.asarray(pi, float).reshape(-1, 10)))
    return lam[:, 0] / np.abs(lam).max(-1)


def consistent_estimate(T, x_hat, information, prior, n_friction=0, max_nfev=400,
                        weight=PRIOR_WEIGHT):
    """The physically consistent (π, friction) closest to a least-squares estimate, regularised
    towards the prior by the log-det divergence of the pseudo-inertias (module docstring).

    Args:
        T: (p, 10 nb) to_base matrix.
        x_hat: (p + n_friction,) estimate (base parameters, then friction coefficients).
        information: (P, P) inverse covariance of x_hat.
        prior: (nb, 10) prior parameters (the URDF's); bodies whose pseudo-inertia is not
            positive definite with :data:`MARGIN` are first raised to it.
        n_friction: number of friction coefficients at the end of x_hat (kept ≥ 0).
        weight: γ, the prior's weight in units of the data's χ².
    Returns:
        (pi (nb, 10) consistent with margin, friction (n_friction,), cost_increase) where
        cost_increase is the increase of the weighted residual (χ² units) over the
        unconstrained estimate.
    """
    from scipy.optimize import least_squares

    nb = prior.shape[0]
    p = T.shape[0]
    prior = np.asarray(prior, float)
    # information = L Lᵀ; eigen-factor (it may be singular in unexcited directions)
    lam, V = np.linalg.eigh(0.5 * (information + information.T))
    L = V * np.sqrt(np.maximum(lam, 0.0))
    _, Ubar = _factor(theta_of_pi(prior, floor=2.0 * MARGIN))
    sw = np.sqrt(float(weight))
    nf = n_friction
    LT = L.T
    # friction f = u² ≥ 0 (MINPACK's Levenberg-Marquardt has no bounds; it factors by QR in
    # Fortran, where trf's SVD or LSMR per iteration took seconds on a loaded machine)

    def residual(z):
        pi = pi_of_theta(z[:10 * nb], Ubar).ravel()
        x = np.concatenate([T @ pi, z[10 * nb:] ** 2])
        r, _ = _divergence_residuals(z[:10 * nb])
        return np.concatenate([LT @ (x - x_hat), sw * r.ravel()])

    def jacobian(z):
        D = np.zeros((10 * nb, 10 * nb))  # block diagonal ∂π/∂θ
        for i, blk in enumerate(pi_jacobian(z[:10 * nb], Ubar)):
            D[10 * i:10 * i + 10, 10 * i:10 * i + 10] = blk
        top = np.concatenate([LT[:, :p] @ (T @ D), LT[:, p:] * (2.0 * z[10 * nb:])], axis=1)
        _, dr = _divergence_residuals(z[:10 * nb])
        bottom = np.concatenate([np.diag(sw * dr.ravel()), np.zeros((10 * nb, nf))], axis=1)
        return np.concatenate([top, bottom], axis=0)

    # starts: the prior itself (θ = 0), and the prior moved along the identifiable directions
    # to the estimate (least norm), projected onto the consistent bodies, in coordinates
    # relative to the prior's factor
    prior_flat = prior.ravel()
    pi0 = prior_flat + least_norm(T, x_hat[:p] - T @ prior_flat)
    _, U0 = _factor(theta_of_pi(pi0.reshape(nb, 10)))
    V0 = np.linalg.solve(Ubar, U0)
    k = np.arange(4)
    rel0 = np.concatenate([np.log(np.abs(V0[:, k, k])), V0[:, _IU[0], _IU[1]]], axis=1)
    starts = [np.zeros(10 * nb), rel0.ravel()]
    f_scale = max(float(np.abs(x_hat[p:]).max(initial=0.0)), 1e-3)
    u0 = np.sqrt(np.maximum(x_hat[p:], 1e-4 * f_scale))
    best, best_cost = None, np.inf
    for th0 in starts:
        z0 = np.concatenate([th0, u0])
        with np.errstate(all="ignore"):
            if not np.all(np.isfinite(residual(z0))):
                continue
            for z in (z0, least_squares(residual, z0, jac=jacobian, method="lm",
                                        max_nfev=max_nfev).x):
                r = residual(z)
                cost = float(r @ r) if np.all(np.isfinite(r)) else np.inf
                if cost < best_cost:  # a diverged fit never beats its own start
                    best, best_cost = z, cost
    if best is None:
        raise ArithmeticError("the physically consistent fit failed (non-finite residuals)")
    pi = pi_of_theta(best[:10 * nb], Ubar)
    low = margin(pi) < MARGIN
    if low.any():  # the divergence is a barrier; should the data still press a body onto the
        pi[low] = pi_of_theta(theta_of_pi(pi[low], floor=2.0 * MARGIN))  # boundary: lift it
    fr = best[10 * nb:] ** 2
    x = np.concatenate([T @ pi.ravel(), fr])
    r = L.T @ (x - x_hat)
    return pi, fr, float(r @ r)
