"""Closed-form EOM and their first and second time derivatives (seed 004 §2–4), dense NumPy.

A second implementation, independent of the recursion in ``_rnea.pyx``: it builds the system
matrices ``A = (I − D)⁻¹``, ``X``, ``J = A X``, ``𝖬``, ``a(ẏ) = diag(ẏ_i ad_{X_i})``,
``b(V) = diag(ad_{V_i})`` and ``U`` (6n × 6n) and evaluates the paper's equations literally.
O(n³); meant for cross-checks and small robots, not for the 1 kHz path.
"""
from __future__ import annotations

import numpy as np

from . import lie



class System:
    """The seed-004 system matrices of ``model`` at configuration ``q``."""

    def __init__(self, model, q):
        n = model.n
        self.n = n
        T = []  # Ad_{C_{i,λ(i)}}
        for i in range(n):
            C = model.B[i] @ lie.exp_se3(model.X[i], q[i])  # C_{λ(i),i}, seed 004 eq. 3
            T.append(lie.Ad(lie.inv(C)))
        A = np.zeros((6 * n, 6 * n))
        Ub = np.zeros((6 * n, 6))  # U = A (Ad_{C_1}⁻¹, 0, …)ᵀ generalised to trees (eq. 26)
        for i in range(n):
            par = model.parent[i]
            A[6 * i:6 * i + 6, 6 * i:6 * i + 6] = np.eye(6)
            if par >= 0:
                # A_{ij} = Ad_{C_{i,λ}} A_{λ j}: (I − D)⁻¹ for the block lower-triangular D, eq. 16–17
                A[6 * i:6 * i + 6, :6 * i] = T[i] @ A[6 * par:6 * par + 6, :6 * i]
                Ub[6 * i:6 * i + 6] = T[i] @ Ub[6 * par:6 * par + 6]
            else:
                Ub[6 * i:6 * i + 6] = T[i]
        X = np.zeros((6 * n, n))
        Mb = np.zeros((6 * n, 6 * n))
        for i in range(n):
            X[6 * i:6 * i + 6, i] = model.X[i]
            Mb[6 * i:6 * i + 6, 6 * i:6 * i + 6] = model.inertias[i]
        self.model, self.A, self.X, self.M, self.U = model, A, X, Mb, Ub
        self.J = A @ X
        self.G = -np.r_[0.0, 0.0, 0.0, model.gravity]  # eq. 26

    def a(self, y):
        """a(y) = diag(y_i ad_{X_i}) (eq. 13)."""
        n = self.n
        out = np.zeros((6 * n, 6 * n))
        for i in range(n):
            out[6 * i:6 * i + 6, 6 * i:6 * i + 6] = y[i] * lie.ad(self.model.X[i])
        return out

    def E(self, V):
        """E(V) = ½(b(V)ᵀ𝖬 + 𝖬b(V) − Ω(𝖬V)), Ω(W) x := ad_xᵀ W, block-diagonal and linear in V:
        ``C̄ = Jᵀ(C_22 + E(V))J`` is the package's (Pinocchio's) Coriolis matrix, the symmetric
        split ``𝖬(J̇ + ½ad_V J) − ½ad_Vᵀ𝖬J − ½ad_Jᵀ𝖬V`` of eq. 54, with C_22 eq. 22's."""
        n = self.n
        out = np.zeros((6 * n, 6 * n))
        basis = [lie.ad(e) for e in np.eye(6)]
        for i in range(n):
            sl = slice(6 * i, 6 * i + 6)
            Mi = self.M[sl, sl]
            adV = lie.ad(V[sl])
            W = Mi @ V[sl]
            Om = np.stack([B.T @ W for B in basis], axis=1)
            out[sl, sl] = 0.5 * (adV.T @ Mi + Mi @ adV - Om)
        return out

    def b(self, V):
        """b(V) = diag(ad_{V_i}) (eq. 23)."""
        n = self.n
        out = np.zeros((6 * n, 6 * n))
        for i in range(n):
            out[6 * i:6 * i + 6, 6 * i:6 * i + 6] = lie.ad(V[6 * i:6 * i + 6])
        return out


def eom_derivatives(model, qs):
    """M, C̄, Q_grav and their first k ≤ 2 time derivatives (seed 004 eq. 20–26, 29–36, 40–52).

    C̄ is the package's Coriolis matrix (:meth:`mbs_dynamics.Robot.coriolis_matrix`, Pinocchio's
    ``computeCoriolisMatrix``; Ṁ − 2C̄ skew): eq. 22's C plus ``Jᵀ E(V) J`` (see
    :meth:`System.E`; zero times q̇), whose derivatives follow from ``J̇ = −AaJ`` (eq. 12) and
    ``E^(r) = E(V^(r))`` (E is linear in V).

    Args:
        qs: (k+2, n) rows q, q̇, …, q^(k+1) (Ṁ, Ċ̄ need q̈ only through C̄; C̈̄ needs q⃛).
    Returns:
        (Ms (k+1, n, n), Cs (k+1, n, n), gs (k+1, n)): row r the r-th time derivative.
    """
    qs = np.asarray(qs, dtype=float)
    k = qs.shape[0] - 2
    if not 0 <= k <= 2:
        raise ValueError(f"closed_form covers k <= 2 (qs with 2 to 4 rows), got {qs.shape[0]} rows")
    n = model.n
    s = System(model, qs[0])
    A, M, J, UG = s.A, s.M, s.J, s.U @ s.G
    qd = qs[1]
    a = s.a(qd)
    Aa = A @ a
    MAa = M @ Aa
    V = J @ qd
    b = s.b(V)
    Cs = -MAa - b.T @ M  # eq. 22
    Ms, Cb, gs = np.empty((k + 1, n, n)), np.empty((k + 1, n, n)), np.empty((k + 1, n))
    Mb = s.E(V)
    Ms[0], Cb[0], gs[0] = J.T @ M @ J, J.T @ (Cs + Mb) @ J, J.T @ M @ UG  # eq. 20, 22, 25
    if k == 0:
        return Ms, Cb, gs
    # derivatives of the system twist: J̇ = −AaJ (eq. 12, 19), V̇ = Jq̈ + J̇q̇
    Jd = -Aa @ J
    Vd = J @ qs[2] + Jd @ qd
    ad_, bd = s.a(qs[2]), s.b(Vd)
    M1 = -MAa - MAa.T  # eq. 30
    # eq. 35
    C1 = (-M @ A @ ad_ - bd.T @ M + b.T @ MAa + Aa.T @ b.T @ M + Aa.T @ MAa
          + 2 * MAa @ Aa - MAa @ a)
    Mbd = s.E(Vd)
    Ms[1] = J.T @ M1 @ J  # eq. 29
    Cb[1] = J.T @ (C1 + Mbd) @ J + Jd.T @ Mb @ J + J.T @ Mb @ Jd  # eq. 31 + d/dt JᵀEJ
    gs[1] = J.T @ M1 @ UG  # eq. 36
    if k == 1:
        return Ms, Cb, gs
    # V̈ = Jq⃛ + 2J̇q̈ + J̈q̇, J̈ = −ȦaJ − AȧJ − AaJ̇ with Ȧ = Aa − AaA (eq. 19)
    Ad_ = Aa - Aa @ A
    Jdd = -Ad_ @ a @ J - A @ ad_ @ J - Aa @ Jd
    Vdd = J @ qs[3] + 2 * Jd @ qs[2] + Jdd @ qd
    add, bdd = s.a(qs[3]), s.b(Vdd)
    MAad = M @ A @ ad_
    # eq. 44
    M2 = (-MAad - MAad.T + 2 * MAa @ Aa + 2 * (MAa @ Aa).T + 2 * Aa.T @ MAa
          - MAa @ a - (MAa @ a).T)
    # eq. 51
    aTAT = Aa.T
    Aad = A @ ad_
    C2 = (-M @ A @ add - bdd.T @ M + 2 * bd.T @ MAa + 2 * aTAT @ bd.T @ M
          + 3 * M @ Aad @ Aa + 2 * MAa @ Aad + 2 * aTAT @ M @ Aad - Cs @ Aad - Aad.T @ Cs
          + 2 * Cs @ Aa @ Aa + 2 * aTAT @ Cs @ Aa + 2 * aTAT @ aTAT @ Cs
          - 4 * MAa @ Aa @ Aa - 2 * aTAT @ MAa @ Aa + 2 * MAa @ a @ Aa + 2 * aTAT @ MAa @ a
          + 2 * MAa @ Aa @ a - 3 * MAa @ ad_ - MAa @ a @ a + MAa @ a @ Aa
          - Cs @ Aa @ a - a.T @ aTAT @ Cs)
    Ms[2] = J.T @ M2 @ J  # eq. 40
    Cb[2] = (J.T @ (C2 + s.E(Vdd)) @ J + Jdd.T @ Mb @ J + J.T @ Mb @ Jdd  # eq. 45 + (JᵀEJ)″
             + 2 * (Jd.T @ Mbd @ J + Jd.T @ Mb @ Jd + J.T @ Mbd @ Jd))
    gs[2] = J.T @ M2 @ UG  # eq. 52
    return Ms, Cb, gs


def torque_derivatives(model, qs):
    """τ, τ′, τ″ (as many as ``qs`` allows, k ≤ 2) from seed 004 eq. 1, 28 and 38.

    Args:
        qs: (k+3, n) rows q, q̇, q̈, q⃛, q⁗.
    Returns:
        (k+1, n).
    """
    qs = np.asarray(qs, dtype=float)
    k = qs.shape[0] - 3
    if not 0 <= k <= 2:
        raise ValueError(f"closed_form covers k <= 2 (qs with 3 to 5 rows), got {qs.shape[0]} rows")
    (M, Md, Mdd), (C, Cd, Cdd), (g, gd, gdd) = (
        tuple(x) + (None,) * (2 - k) for x in eom_derivatives(model, qs[:k + 2]))
    out = np.empty((k + 1, model.n))
    out[0] = M @ qs[2] + C @ qs[1] + g  # eq. 1
    if k >= 1:
        out[1] = M @ qs[3] + (Md + C) @ qs[2] + Cd @ qs[1] + gd  # eq. 28
    if k == 2:
        out[2] = (M @ qs[4] + (2 * Md + C) @ qs[3] + (Mdd + 2 * Cd) @ qs[2] + Cdd @ qs[1]
                  + gdd)  # eq. 38
    return out
