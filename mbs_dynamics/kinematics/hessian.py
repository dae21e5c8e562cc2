"""Kinematic Hessian of a frame, H[:, i, k] = ∂J[:, i]/∂q_k, in closed form from Lie brackets of
the joint screws (seed 000 §2, eq. 3–6, 16, 25–26), in the four representations of seed 001 §3.

With the spatial joint screws J_i^s (eq. 71b) of the coordinates supporting the frame,
    spatial (eq. 16):  ∂J_i^s/∂q_k = [J_k^s, J_i^s]                 for k ⪯ i (0 otherwise)
    body    (eq. 6):   ∂J_i^b/∂q_k = [J_i^b, J_k^b] = Ad_{C_f}^{−1} [J_i^s, J_k^s]   for i ≺ k
    hybrid  (eq. 25–26): ∂J_i^h/∂q_k = [k ⪯ i] [J_k^h, J_i^h] + [J_i^h, (0, ṙ_k)]
                         (ṙ_k the linear rows of J_k^h: eq. 26 for i ≺ k)
    mixed   (seed 000 §2.4): the hybrid linear rows and the body angular rows,
for coordinates i, k that both move the frame (zero otherwise). "⪯": the same joint or an
ancestor; a floating base's six coordinates are one joint preceding all others, and the
derivative along one of them is taken along q ⊕ ε e_k (Pinocchio's convention).
Rows of the result are (linear, angular) like every public 6-vector.

This module is the NumPy statement of the formulas (O(nv²)/O(nv³) arrays, kept as the
reference); ``Robot`` calls the compiled ``kinematics/_closed.pyx``, which follows it line by
line and is tested equal to it.
"""
from __future__ import annotations

import numpy as np

from ..kernels import lie
from ._tree import bracket_matrix, poses, spatial_screws, tree


def _lin_ang(H):
    return np.concatenate([H[3:], H[:3]])


def kinematic_hessian(model, q, body, S, rep):
    """H (6, nv, nv) of the frame at pose S (4, 4) on model body ``body`` (−1: the base link);
    rep 0 body, 1 spatial, 2 hybrid, 3 mixed."""
    t = tree(model)
    C = poses(model, q)
    J, _ = spatial_screws(t, C)
    b = t.n if body < 0 else body
    supp = t.anc[t.col_body, b]                       # (nv,) coordinates that move the frame
    J = J * supp
    pair = supp[:, None] & supp[None, :]
    Cf = C[b] @ S
    B = bracket_matrix(J)                             # B[:, i, k] = [J_i, J_k]
    if rep == 1:
        return _lin_ang(-B * (t.canc.T & pair))       # [J_k, J_i] for k ⪯ i
    if rep in (0, 3):
        Hb = np.einsum("ab,bik->aik", lie.Ad(lie.inv(Cf)), B * (t.strict & pair))
        if rep == 0:
            return _lin_ang(Hb)
    # hybrid: J^h = Ad_{(I, −r)} J^s
    r = Cf[:3, 3]
    Jh = J.copy()
    Jh[3:] -= np.cross(r, J[:3], axis=0)
    Bh = bracket_matrix(Jh)                           # [J_i^h, J_k^h]
    Jv = np.zeros_like(Jh)
    Jv[3:] = Jh[3:]
    # [J_i^h, (0, ṙ_k)] = (0, ω_i × ṙ_k)
    Hh = np.zeros_like(Bh)
    Hh[3:] = np.cross(Jh[:3, :, None], Jh[3:, None, :], axis=0)
    Hh -= Bh * t.canc.T
    Hh *= pair
    if rep == 2:
        return _lin_ang(Hh)
    return np.concatenate([Hh[3:], Hb[:3]])
