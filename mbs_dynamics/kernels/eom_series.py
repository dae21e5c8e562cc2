"""M, C̄, Q_grav and their time derivatives for a fixed or a floating base, by Leibniz products of
the body Jacobians' time derivatives (dense NumPy, O(n²) per order).

Body i's twist is ``V_i = J_i(q) v`` (seed 004 eq. 11–19, the body-fixed representation; a
floating base is body 0 with ``J_0 = P``, P mapping the base twist's (linear, angular) to the
package's internal (ω, v) order). Along a trajectory the transforms ``T_i = Ad_{C_{λ(i),i}}⁻¹``
obey ``Ṫ_i = −q̇_i ad_{X_i} T_i`` (seed 004 eq. 12) and the base's ``Y = Ad_{C_0}⁻¹`` obeys
``Ẏ = −ad_ν Y`` (ν the base's body twist), so every time derivative of ``J_i`` and of the body
gravity ``U_i G`` (eq. 25–26) follows from Leibniz's rule, and

* ``M = Σ_i J_iᵀ 𝖬_i J_i`` (eq. 20),
* ``Q_grav = Σ_i J_iᵀ 𝖬_i U_i G`` (eq. 25),
* ``C̄ = Σ_i J_iᵀ (𝖬_i J̇_i + ½ L_i(V_i) J_i)``, ``L_i(V) = 𝖬_i ad_V − ad_Vᵀ 𝖬_i − Ω(𝖬_i V)``,
  ``Ω(W) x = ad_xᵀ W`` — the package's (and Pinocchio's) Coriolis matrix: ``C̄ v`` is the
  Coriolis/centrifugal force and ``Ṁ = C̄ + C̄ᵀ`` (``Ω`` is skew) —

are differentiated term by term (L is linear in V). The same numbers as the seed's closed form
(:mod:`mbs_dynamics.kernels.closed_form`) for a fixed base; written for any base.
"""
from __future__ import annotations

from math import comb, factorial

import numpy as np

from . import lie

_P = np.block([[np.zeros((3, 3)), np.eye(3)], [np.eye(3), np.zeros((3, 3))]])


def _omega(W):
    """Ω(W) (6, 6): Ω(W) x = ad_xᵀ W."""
    return np.stack([lie.ad(e).T @ W for e in np.eye(6)], axis=1)


def _quat_pose(q):
    x, y, z, w = q[3:7] / np.linalg.norm(q[3:7])
    R = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                  [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                  [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])
    return lie.pose(R, q[:3])


def _series_transform(T0, gens):
    """Derivatives T^(r), r ≤ len(gens), of ``Ṫ = −A(t) T`` with ``gens[j] = A^(j)``."""
    T = [T0]
    for r in range(len(gens)):
        T.append(-sum(comb(r, j) * gens[j] @ T[r - j] for j in range(r + 1)))
    return T


def _leibniz(A, B, r):
    return sum(comb(r, j) * A[j] @ B[r - j] for j in range(r + 1))


def eom_derivatives(model, q, vs):
    """M, C̄, Q_grav and their first k ≤ 2 time derivatives along a trajectory.

    Args:
        model: a :class:`mbs_dynamics.model.Model` (fixed or floating base).
        q: (nq,) configuration (a floating base: x, y, z, qx, qy, qz, qw, joints).
        vs: (k+1, nv) rows v, v′, …, v^(k) (a floating base: the base's body twist (linear,
            angular) in its own frame and its time derivatives, then the joint rates).
    Returns:
        (Ms (k+1, nv, nv), Cs (k+1, nv, nv), gs (k+1, nv)): row r the r-th time derivative.
    """
    q = np.asarray(q, dtype=float)
    vs = np.asarray(vs, dtype=float)
    k = vs.shape[0] - 1
    fb, n, nv = model.floating_base, model.n, model.nv
    o = 6 if fb else 0
    qj = q[7:] if fb else q
    dq = [qj] + [vs[r, o:] for r in range(k + 1)]          # q_j^(r), r ≤ k + 1
    G = -np.r_[0.0, 0.0, 0.0, model.gravity]
    bodies = []                                              # (𝖬, J series, U G series)
    if fb:
        J0 = [np.zeros((6, nv)) for _ in range(k + 2)]
        J0[0][:, :6] = _P
        nus = [lie.ad(_P @ vs[r, :6]) for r in range(k)]
        Y = _series_transform(lie.Ad(lie.inv(_quat_pose(q))), nus)
        root = (J0, [y @ G for y in Y])
        bodies.append((np.asarray(model.base_inertia, dtype=float),) + root)
    else:
        root = ([np.zeros((6, nv))] * (k + 2), [G] + [np.zeros(6)] * k)
    for i in range(n):
        X = np.asarray(model.X[i], dtype=float)
        adX = lie.ad(X)
        T = _series_transform(lie.Ad(lie.inv(model.B[i] @ lie.exp_se3(X, qj[i]))),
                              [dq[j + 1][i] * adX for j in range(k + 1)])
        par = model.parent[i]
        Jp, Up = root if par < 0 else bodies[par + fb][1:]
        J = [_leibniz(T, Jp, r) for r in range(k + 2)]
        J[0][:, o + i] += X
        bodies.append((np.asarray(model.inertias[i], dtype=float), J,
                       [_leibniz(T, Up, r) for r in range(k + 1)]))
    Ms, Cs, gs = np.zeros((k + 1, nv, nv)), np.zeros((k + 1, nv, nv)), np.zeros((k + 1, nv))
    for Mb, J, UG in bodies:
        Jt = [x.T for x in J]
        MJ = [Mb @ x for x in J]
        V = [sum(comb(r, j) * J[j] @ vs[r - j] for j in range(r + 1)) for r in range(k + 1)]
        L = [Mb @ lie.ad(x) - lie.ad(x).T @ Mb - _omega(Mb @ x) for x in V]
        for r in range(k + 1):
            Ms[r] += _leibniz(Jt, MJ, r)
            gs[r] += sum(comb(r, j) * Jt[j] @ (Mb @ UG[r - j]) for j in range(r + 1))
            Cs[r] += sum(comb(r, j) * Jt[j] @ MJ[r - j + 1] for j in range(r + 1))
            for a in range(r + 1):
                for b in range(r - a + 1):
                    c = r - a - b
                    w = factorial(r) // (factorial(a) * factorial(b) * factorial(c))
                    Cs[r] += 0.5 * w * Jt[a] @ L[b] @ J[c]
    return Ms, Cs, gs
