"""Christoffel symbols of the first kind of the mass matrix in closed form (seed 000 §5.2).

    Γ_ijk = ½ (∂M_ij/∂q_k + ∂M_ik/∂q_j − ∂M_jk/∂q_i),   Σ_j M_ij q̈_j + Σ_jk Γ_ijk q̇_j q̇_k = Q_i
                                                                                   (eq. 86)

The partial derivatives come from the Lie-bracket form of the Jacobian's derivatives (eq. 6, 16)
instead of differencing: with the spatial joint screws J_i = J_i^s (seed 000 eq. 71b), the
spatial inertias M_l^s = Ad_{C_l}^{−T} M_l Ad_{C_l}^{−1} (eq. 72a) and M = Σ_l J_lᵀ M_l^s J_l
(eq. 82 in the spatial representation), ∂J_i/∂q_k = [J_k, J_i] when joint k is joint i or one of
its ancestors (eq. 16) and ∂M_l^s/∂q_k = −ad_{J_k}ᵀ M_l^s − M_l^s ad_{J_k} when joint k supports
body l. The two contributions cancel except where joint i strictly precedes k, which gives the
closed form equivalent to eq. 87

    ∂M_ij/∂q_k = [i ≺ k] [J_i, J_k]ᵀ I_d J_j + [j ≺ k] J_iᵀ I_d [J_j, J_k]

for joints i, j, k on one branch, ``d`` the deepest of them and I_d = Σ_{l ⪰ d} M_l^s its
composite (subtree) inertia; zero when i, j, k are not on one branch. Cost O(nv³) (the size of Γ).

Floating base: the velocities are the base's body twist and the joint rates (quasi-velocities),
so the derivative along coordinate k is taken along q ⊕ ε e_k (the base pose C_0 exp(ε e_k),
Pinocchio's ``integrate``): the six base columns are treated as one joint, an ancestor of all
others. Then Σ_jk Γ_ijk v_j v_k is *not* the whole Coriolis force: the Boltzmann–Hamel
equations add, on the base rows only, the Euler–Poincaré term −ad_νᵀ p with ν the base twist
and p = (M v)_base its momentum (angular-first; README "Christoffel symbols"):

    rnea(q, v, 0) − g(q) = Σ_jk Γ_ijk v_j v_k − [ad_νᵀ (M v)_base ; 0].

This module is the NumPy statement of the formulas (O(nv²)/O(nv³) arrays, kept as the
reference); ``Robot`` calls the compiled ``kinematics/_closed.pyx``, which follows it line by
line and is tested equal to it.
"""
from __future__ import annotations

import numpy as np

from ..kernels import lie
from ._tree import bracket_matrix, poses, spatial_screws, tree


def mass_matrix_partials(model, q):
    """D (nv, nv, nv), D[i, j, k] = ∂M_ij/∂q_k in closed form (along q ⊕ ε e_k with a floating
    base). ``q``: (nq,) checked by the caller."""
    t = tree(model)
    C = poses(model, q)
    J, Ad = spatial_screws(t, C)
    # spatial inertias and their subtree sums (composite inertias), bodies depth-first
    Ainv = np.linalg.inv(Ad)
    Ms = np.einsum("lba,lbc,lcd->lad", Ainv, t.inertia, Ainv)
    Ic = Ms.copy()
    par = np.asarray(model.parent)
    for i in range(t.n - 1, -1, -1):
        Ic[par[i]] += Ic[i]       # parent −1 = the base, the last row
    B = bracket_matrix(J)         # B[:, i, k] = [J_i, J_k]
    nv = J.shape[1]
    key = t.key
    idx = np.arange(nv)
    # deepest column of each triple and whether all three lie on one branch
    d = np.where(key[:, None] >= key[None, :], idx[:, None], idx[None, :])      # (i, k)
    m = np.where(key[d][:, None, :] >= key[None, :, None], d[:, None, :],
                 idx[None, :, None])                                            # (i, j, k)
    mb = t.col_body[m]
    on = t.canc[idx[:, None, None], m] & t.canc[idx[None, :, None], m] \
        & t.canc[idx[None, None, :], m]
    # Y[i, j, k] = I_d J_j with d = the deepest of (i, j, k): (nv, nv, nv, 6), gathered from
    # P[d, :, j] = I_d J_j (nb, 6, nv)
    P = Ic @ J
    Y = P[mb, :, idx[None, :, None]]
    T = np.einsum("aik,ijka->ijk", B, Y) * t.strict[:, None, :]                 # [i≺k] term
    T *= on
    return T + T.transpose(1, 0, 2)


def christoffel(model, q):
    """Γ (nv, nv, nv), Γ[i, j, k] = ½(∂M_ij/∂q_k + ∂M_ik/∂q_j − ∂M_jk/∂q_i) (seed 000 eq. 86–87),
    symmetric in (j, k)."""
    D = mass_matrix_partials(model, q)
    return 0.5 * (D + D.transpose(0, 2, 1) - D.transpose(2, 0, 1))


def euler_poincare(model, q, v, M):
    """The base rows' extra Coriolis term of a floating base, −ad_νᵀ p in Pinocchio's order
    (force, moment), with ν the base twist and p = (M v)[:6]; zeros for the joints."""
    out = np.zeros(len(v))
    if not model.floating_base:
        return out
    nu = np.r_[v[3:6], v[:3]]
    p = M[:6] @ v
    p = np.r_[p[3:6], p[:3]]
    e = -lie.ad(nu).T @ p
    out[:3], out[3:6] = e[3:], e[:3]
    return out
