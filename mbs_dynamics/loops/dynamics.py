"""Constrained inverse dynamics of a closed-loop mechanism in its actuated coordinates, with
time-derivative jets of any order, and the constraint wrenches.

The spanning tree's equations with the loop multipliers (doc/math.md "Closed loops", seed 002 eq. 2):

    τ_tree(q, q̇, q̈) = S τ_a + Kᵀ λ,      h(q) = 0,

S selecting the actuated joints. On the constraint manifold q̇ = G q̇_a with
``G = [I; −K_d⁺ K_a]`` (rows in the actuated / dependent split); K G = 0 and Gᵀ S = I, so by
virtual work (the mimic projection made configuration-dependent)

    τ_a = G(q)ᵀ τ_tree(q, q̇, q̈),      K_dᵀ λ = τ_tree,d  (minimum-norm λ if redundant).

Jets: with normalized Taylor coefficients x_r = x^(r)/r!, ``τ_a,r = Σ_j G_jᵀ τ_tree,r−j``; the
coefficients of G(q(t)) follow from K(q(t)) G(q(t)) = 0 (rows of the actuated block constant):
``G_d,r = −K_d,0⁺ (K_a,r + Σ_{j≥1} K_d,j G_d,r−j)``, the K_j from the ε-directions of
:meth:`~.kinematics.LoopKinematics.jets`, τ_tree^(r) from the tree's recursive jet
(``torque_derivatives``).

In actuated coordinates: ``M_a = Gᵀ M G``, ``C̄_a = Gᵀ (C̄ G + M Ġ)`` (so C̄_a q̇_a is the
velocity-product torque and Ṁ_a − 2C̄_a = ĠᵀMG − GᵀMĠ + Gᵀ(Ṁ − 2C̄)G stays skew-symmetric),
``g_a = Gᵀ g``.
"""
from __future__ import annotations

from math import factorial

import numpy as np


def fact(K1):
    return np.array([float(factorial(r)) for r in range(K1)])


def G_jets(kin, Q, act, dep, Kdp):
    """Coefficients (K+1, n_full, n_a) of G(q(t)) along the full jet Q (K+1, n_full)."""
    K1 = Q.shape[0]
    H = kin.jets(Q, directions=True)  # (K1, 1+n, m)
    Kj = np.swapaxes(H[:, 1:], 1, 2)  # (K1, m, n)
    na, nf = len(act), Q.shape[1]
    G = np.zeros((K1, nf, na))
    G[0, act] = np.eye(na)
    for r in range(K1):
        rhs = Kj[r][:, act].copy() if r else Kj[0][:, act].copy()
        for j in range(1, r + 1):
            rhs += Kj[j][:, dep] @ G[r - j, dep]
        G[r, dep] = -Kdp @ rhs
    return G


def project_jet(G, T):
    """τ_a,r = Σ_j G_jᵀ τ_r−j (normalized coefficients): G (K+1, n_f, n_a), T (K+1, n_f)."""
    K1 = T.shape[0]
    out = np.zeros((K1, G.shape[2]))
    for r in range(K1):
        for j in range(r + 1):
            out[r] += T[r - j] @ G[j]
    return out
