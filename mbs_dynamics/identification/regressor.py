"""The joint-torque regressor and its time derivatives, NumPy reference (seed 000 §6, doc/math.md
"Recursive time derivatives of any order"): ``τ^(r) = Y^(r) π`` for r = 0..K.

The body term of the backward pass, ``F_i^(k) = M_i V_i^(k+1) − Σ_m binom(k,m) ad_{V_i^(m)}ᵀ M_i
V_i^(k−m)``, is linear in body i's parameters π_i: with ``M_i s = Ψ(s) π_i`` (a 6×10 matrix of the
twist s),

    F_i^(k) = Φ_i^(k) π_i,   Φ_i^(k) = Ψ(V_i^(k+1)) − Σ_m binom(k,m) ad_{V_i^(m)}ᵀ Ψ(V_i^(k−m)),

and the backward recursion is linear too, so the column block of body i holds the jet Φ_i^(k)
carried to the root by the same transport as the wrenches, ``S^(k) = T_jᵀ Σ_m binom(k,m) Φ_mᵀ
W^(k−m)``, read on the way by ``Q_j^(k) = X_jᵀ W^(k)``: O(depth) per column block. Twists and
their derivatives (gravity included) come from the kernels' forward pass (``data.arrays["V"]``).

This module is the readable reference of the compiled kernel (:mod:`._regressor`); a test keeps
them equal. Twists ``(ω, v)``, wrenches ``(m, f)`` inside; a floating base's rows are (force,
moment), Pinocchio's order.
"""
from __future__ import annotations

from math import comb

import numpy as np


def skew(x):
    return np.array([[0.0, -x[2], x[1]], [x[2], 0.0, -x[0]], [-x[1], x[0], 0.0]])


def psi(s) -> np.ndarray:
    """Ψ(s) (6, 10) with ``M s = Ψ(s) π`` for M = [[Θ, h̃], [−h̃, m 1]] and s = (ω, v):
    M s = (Θ ω + h × v, m v − h × ω)."""
    w, v = s[:3], s[3:]
    P = np.zeros((6, 10))
    P[3:, 0] = v
    P[:3, 1:4] = -skew(v)
    P[3:, 1:4] = skew(w)
    P[0, 4], P[0, 5], P[0, 7] = w
    P[1, 5], P[1, 6], P[1, 8] = w
    P[2, 7], P[2, 8], P[2, 9] = w
    return P


def ad(V) -> np.ndarray:
    """ad_V = [[ω̃, 0], [ṽ, ω̃]] (doc/math.md)."""
    A = np.zeros((6, 6))
    A[:3, :3] = A[3:, 3:] = skew(V[:3])
    A[3:, :3] = skew(V[3:])
    return A


def to_parent(T) -> np.ndarray:
    """Ad_{C_{i,λ}}ᵀ for wrenches from a pose (R row-major 9, p 3) of body i in λ:
    f' = R f, m' = R m + p × f'."""
    R = np.asarray(T[:9]).reshape(3, 3)
    P = np.zeros((6, 6))
    P[:3, :3] = P[3:, 3:] = R
    P[:3, 3:] = skew(T[9:12]) @ R
    return P


def bell(qj, K):
    """c[m][r] of Φ_m = Σ_r c[m][r] ad_X^r, m ≤ K, from the joint jet qj = (q, q̇, q̈, …):
    c[m+1][r] = Σ_l binom(m,l) c[m−l][r−1] (−q^(l+1))."""
    c = np.zeros((K + 1, K + 1))
    c[0, 0] = 1.0
    for m in range(K):
        for r in range(1, m + 2):
            c[m + 1, r] = -sum(comb(m, l) * c[m - l, r - 1] * qj[l + 1] for l in range(m + 1))
    return c


def body_terms(V, K):
    """Φ^(k), k = 0..K (K+1, 6, 10) of one body from its twist jet V (≥ K+2, 6)."""
    P = [psi(V[k]) for k in range(K + 2)]
    F = np.empty((K + 1, 6, 10))
    for k in range(K + 1):
        F[k] = P[k + 1]
        for m in range(k + 1):
            F[k] -= comb(k, m) * ad(V[m]).T @ P[k - m]
    return F


def structure(model):
    """Per body (floating base first): parent (−1 root), joint screw X (None for the free base),
    and the row of its output in τ."""
    fb = 1 if model.floating_base else 0
    parent = [-1] * fb + [int(p) + fb for p in model.parent]
    X = [None] * fb + [np.asarray(x) for x in model.X]
    row = [0] * fb + [i + 6 * fb for i in range(model.n)]
    return parent, X, row


def regressor_jet(model, V, T, qj, K):
    """Y^(k), k = 0..K (K+1, nv, 10·nb) from the kernels' workspace after a forward pass of order
    ≥ K: twist jets V (≥ K+2, nb, 6), poses T (nb, 12), joint jets qj (≥ K+1, nb)."""
    parent, X, row = structure(model)
    nb = len(parent)
    nv = model.nv
    Y = np.zeros((K + 1, nv, 10 * nb))
    adX = [None if x is None else ad(x) for x in X]
    phis = []  # Φ_m of every joint, m ≤ K
    for j in range(nb):
        if X[j] is None:
            phis.append(None)
            continue
        c = bell(qj[:, j], K)
        pw = [np.eye(6)]
        for r in range(K):
            pw.append(pw[-1] @ adX[j])
        phis.append([sum(c[m, r] * pw[r] for r in range(m + 1)) for m in range(K + 1)])
    for i in range(nb):
        W = body_terms(V[:, i], K)
        cols = slice(10 * i, 10 * i + 10)
        j = i
        while True:
            if X[j] is None:  # the free base: its whole wrench, (force, moment)
                Y[:, 0:3, cols] = W[:, 3:]
                Y[:, 3:6, cols] = W[:, :3]
            else:
                Y[:, row[j], cols] = np.einsum("a,kab->kb", X[j], W)
            if parent[j] < 0:
                break
            P = to_parent(T[j])
            S = np.empty_like(W)
            for k in range(K + 1):
                acc = sum(comb(k, m) * phis[j][m].T @ W[k - m] for m in range(k + 1))
                S[k] = P @ acc
            W = S
            j = parent[j]
    return Y


def regressor(robot, q, qd, qdd):
    """Y (nv, 10·nb), or (N, nv, 10·nb) for (N, ·) inputs, through ``robot``'s kernels (the
    forward pass of ``robot.inverse_dynamics`` fills its workspace, which also checks the
    inputs)."""
    if np.ndim(q) == 2:
        return np.stack([regressor(robot, a, b, c) for a, b, c in zip(q, qd, qdd)]) if len(q) \
            else np.zeros((0, robot.nv, 10 * _nb(robot.model)))
    robot.inverse_dynamics(q, qd, qdd)
    d = robot.data.arrays
    return regressor_jet(robot.model, d["V"], d["T"], d["qj"], 0)[0]


def regressor_derivatives(robot, qs):
    """Y^(k), k = 0..K from the inputs of ``robot.torque_derivatives`` (one sample or a batch)."""
    pair = isinstance(qs, tuple) and len(qs) == 2
    if (pair and np.ndim(qs[0]) == 2) or (not pair and np.ndim(qs) == 3):
        items = list(zip(*qs)) if pair else list(qs)
        return np.stack([regressor_derivatives(robot, x) for x in items])
    t = robot.torque_derivatives(qs)
    d = robot.data.arrays
    return regressor_jet(robot.model, d["V"], d["T"], d["qj"], t.shape[0] - 1)


def _nb(model):
    return model.n + (1 if model.floating_base else 0)
