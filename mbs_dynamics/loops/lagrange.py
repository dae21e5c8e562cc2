"""Acceleration-level (index-1) Lagrange formulation of a closed-loop mechanism in the full
coordinates of its spanning tree, Baumgarte-stabilised — the baseline of seed 002 §3:

    M q̈ + c(q, q̇) = τ + Kᵀλ,     K q̈ = −K̇q̇ − 2α ḣ − β² h,

solved by the range-space method: q̈₀ = M⁻¹(τ − c), (K M⁻¹ Kᵀ) λ = γ − K q̈₀ with the
minimum-norm λ (least squares: redundant closures make K M⁻¹ Kᵀ singular, never inverted),
q̈ = q̈₀ + M⁻¹Kᵀλ. h, K and ``K̇q̇`` come from the robot's compiled closed-loop workspace
(:func:`loop_terms`); ``K̇q̇`` is twice the second Taylor coefficient of h(q + q̇t), which
:func:`constraint_terms` computes in NumPy as their reference; α = β = 0 at an assembled state.
"""
from __future__ import annotations

import numpy as np


def constraint_terms(kin, q, v):
    """(h, ḣ = K q̇, K̇ q̇, K) at a full state from the NumPy Taylor series of
    :class:`~.kinematics.LoopKinematics` — the reference :func:`loop_terms` is tested against."""
    Q = np.zeros((3, len(q)))
    Q[0], Q[1] = q, v
    H = kin.jets(Q, directions=True)
    return H[0, 0], H[1, 0], 2.0 * H[2, 0], np.ascontiguousarray(H[0, 1:].T)


def loop_terms(robot, q, v):
    """(h, ḣ = K q̇, K̇q̇, K) of a closed-loop robot's loops at the joints' state (q, v) (its
    spanning-tree joints, no base), from the compiled kernels of its closed-loop workspace
    (``loops/_closed.pyx``; every ClosedLoopRobot has one)."""
    h, K = robot._cw.residual_jacobian(q)
    return h, K @ v, robot._cw.drift_terms(q, v), K


def acceleration(robot, q, v, tau, f_ext=None, alpha=0.0, beta=0.0, return_lambda=False):
    """Full q̈ (n_full,) of the ClosedLoopRobot ``robot`` at the full state (q, v) under the
    full joint torques ``tau`` (zero at the dependent joints). On a floating base
    (FloatingClosedLoopRobot) the full state has the base first — q (7 + n_full,) with the
    pose (x y z qx qy qz qw), v and ``tau`` (6 + n_full,) — the loop rows have zero base columns
    (K = [0 | K_joints]) and the result is v̇ (6 + n_full,)."""
    full = robot.full_robot
    fb = robot.floating_base
    h, hd, Kdv, K = loop_terms(robot, q[7:] if fb else q, v[6:] if fb else v)
    if fb:
        K = np.hstack([np.zeros((K.shape[0], 6)), K])
    M = full.mass_matrix(q)
    c = full.inverse_dynamics(q, v, np.zeros_like(v), f_ext)
    L = np.linalg.cholesky(M)

    def Minv(b):
        return np.linalg.solve(L.T, np.linalg.solve(L, b))

    a0 = Minv(tau - c)
    MK = Minv(K.T)
    A = K @ MK
    gamma = -Kdv - 2.0 * alpha * hd - beta * beta * h
    lam = np.linalg.lstsq(A, gamma - K @ a0, rcond=None)[0]
    a = a0 + MK @ lam
    return (a, lam) if return_lambda else a
