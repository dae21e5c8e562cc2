# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The closed forms of seed 004 that need the block structure of ``A = (I − D)⁻¹``, compiled:
the mass matrix ``M = Jᵀ𝖬J`` (eq. 20), the Coriolis matrix ``C̄`` (eq. 54) and ``Ṁ`` (eq. 29–30).

For a tree, ``(Aᵀ𝖬A)_{jk} = Ad_{C_{k,j}}ᵀ 𝖬ᶜ_k`` for ``j`` an ancestor of ``k``, with ``𝖬ᶜ_k`` the
composite inertia of the subtree of ``k``; so column ``k`` of ``M`` is ``𝖬ᶜ_k X_k`` carried up the
ancestors (``Ad_{C_{j,λ}}ᵀ``) and projected on each ``X_j``. A floating base (body 0) has the six
unit twists as its screws and reports its rows and columns in Pinocchio's order (linear first).
"""
import numpy as np
cimport numpy as cnp

from mbs_dynamics.kernels._data cimport (FREE, REVOLUTE, Data, KModel, KWork, alias3, claim,
                                 unclaim, check_finite,
                                 check_quat, out_mat, vec)
from mbs_dynamics.kernels._spatial cimport (ad_X, add_adT, add_to_parent, axpy6, copy6, inertia_times,
                                    joint_pose, load_jet, set_X, to_child, X_dot, zero6)

cnp.import_array()


cdef inline int col_of(const KModel* m, int b) noexcept nogil:
    """Column of joint body b in the velocity vector (the base takes 0..5)."""
    return b + 5 * m.fb


cdef inline int base_col(int a) noexcept nogil:
    """Our base basis e_a, a = 0..5 in (ω, v) order → Pinocchio's (v, ω) column."""
    return a + 3 if a < 3 else a - 3


cdef void poses(const KModel* m, KWork* w) noexcept nogil:
    cdef int i
    for i in range(m.fb, m.nb):
        joint_pose(m, i, w.qj[i], w.T + 12 * i)


cdef inline void carry_up(const KModel* m, KWork* w, int j, double* F, double* out, int col,
                          int nv, bint sym) noexcept nogil:
    """Walk F from body j up its ancestors (F ← Ad_{C_{j,λ}}ᵀ F) and write X_λᵀ F into
    out[row(λ), col] (and out[col, row(λ)] when ``sym``)."""
    cdef int a, r
    cdef double f0, f1, f2, n0, n1, n2, g0, g1, g2, v
    cdef double* T
    while m.parent[j] >= 0:
        T = w.T + 12 * j
        g0 = T[0] * F[3] + T[1] * F[4] + T[2] * F[5]
        g1 = T[3] * F[3] + T[4] * F[4] + T[5] * F[5]
        g2 = T[6] * F[3] + T[7] * F[4] + T[8] * F[5]
        n0 = T[0] * F[0] + T[1] * F[1] + T[2] * F[2]
        n1 = T[3] * F[0] + T[4] * F[1] + T[5] * F[2]
        n2 = T[6] * F[0] + T[7] * F[1] + T[8] * F[2]
        F[0] = n0 + T[10] * g2 - T[11] * g1
        F[1] = n1 + T[11] * g0 - T[9] * g2
        F[2] = n2 + T[9] * g1 - T[10] * g0
        F[3] = g0
        F[4] = g1
        F[5] = g2
        j = m.parent[j]
        if m.jtype[j] == FREE:
            for a in range(6):
                r = base_col(a)
                out[r * nv + col] = F[a]
                if sym:
                    out[col * nv + r] = F[a]
        else:
            v = X_dot(m, j, F)
            r = col_of(m, j)
            out[r * nv + col] = v
            if sym:
                out[col * nv + r] = v


# ---------------------------------------------------------------------------------------------
# M = Jᵀ𝖬J (seed 004 eq. 20)
# ---------------------------------------------------------------------------------------------
cdef void crba(const KModel* m, KWork* w, double* out) noexcept nogil:
    """𝖬ᶜ is kept in the compact form (m, h = m c, Θ_b) of eq. 24; moved by C = (R, p) into the
    parent frame it becomes m, R h + m p, R Θ_b Rᵀ − (Rh)~p̃ − p̃(Rh)~ − m p̃p̃."""
    cdef int nb = m.nb, nv = m.nv, i, a, par, k, col
    cdef double* T
    cdef double* c
    cdef double* d
    cdef double* F = w.S
    cdef double ms, p0, p1, p2, r0, r1, r2, d2
    cdef double t00, t01, t02, t10, t11, t12, t20, t21, t22, x00, x01, x02, x11, x12, x22
    cdef double ex, ey, ez, h0, h1, h2
    poses(m, w)
    for i in range(nb):
        c = w.Ic + 13 * i
        c[0] = m.mass[i]
        for a in range(3):
            c[1 + a] = m.h[3 * i + a]
        for a in range(9):
            c[4 + a] = m.Th[9 * i + a]
    for i in range(nv * nv):
        out[i] = 0.0
    for i in range(nb - 1, -1, -1):
        par = m.parent[i]
        if par < 0:
            continue
        T = w.T + 12 * i
        c = w.Ic + 13 * i
        d = w.Ic + 13 * par
        ms = c[0]
        p0, p1, p2 = T[9], T[10], T[11]
        r0 = T[0] * c[1] + T[1] * c[2] + T[2] * c[3]
        r1 = T[3] * c[1] + T[4] * c[2] + T[5] * c[3]
        r2 = T[6] * c[1] + T[7] * c[2] + T[8] * c[3]
        d[0] += ms
        d[1] += r0 + ms * p0
        d[2] += r1 + ms * p1
        d[3] += r2 + ms * p2
        # R Θ Rᵀ − (Rh)~p̃ − p̃(Rh)~ − m p̃p̃ (symmetric), with x̃ỹ = y xᵀ − (x·y) I
        t00 = T[0] * c[4] + T[1] * c[7] + T[2] * c[10]
        t01 = T[0] * c[5] + T[1] * c[8] + T[2] * c[11]
        t02 = T[0] * c[6] + T[1] * c[9] + T[2] * c[12]
        t10 = T[3] * c[4] + T[4] * c[7] + T[5] * c[10]
        t11 = T[3] * c[5] + T[4] * c[8] + T[5] * c[11]
        t12 = T[3] * c[6] + T[4] * c[9] + T[5] * c[12]
        t20 = T[6] * c[4] + T[7] * c[7] + T[8] * c[10]
        t21 = T[6] * c[5] + T[7] * c[8] + T[8] * c[11]
        t22 = T[6] * c[6] + T[7] * c[9] + T[8] * c[12]
        d2 = 2.0 * (r0 * p0 + r1 * p1 + r2 * p2) + ms * (p0 * p0 + p1 * p1 + p2 * p2)
        x00 = t00 * T[0] + t01 * T[1] + t02 * T[2] - 2.0 * p0 * r0 - ms * p0 * p0 + d2
        x11 = t10 * T[3] + t11 * T[4] + t12 * T[5] - 2.0 * p1 * r1 - ms * p1 * p1 + d2
        x22 = t20 * T[6] + t21 * T[7] + t22 * T[8] - 2.0 * p2 * r2 - ms * p2 * p2 + d2
        x01 = t00 * T[3] + t01 * T[4] + t02 * T[5] - (p0 * r1 + r0 * p1) - ms * p0 * p1
        x02 = t00 * T[6] + t01 * T[7] + t02 * T[8] - (p0 * r2 + r0 * p2) - ms * p0 * p2
        x12 = t10 * T[6] + t11 * T[7] + t12 * T[8] - (p1 * r2 + r1 * p2) - ms * p1 * p2
        d[4] += x00
        d[5] += x01
        d[6] += x02
        d[7] += x01
        d[8] += x11
        d[9] += x12
        d[10] += x02
        d[11] += x12
        d[12] += x22
    for k in range(m.fb, nb):
        # F = 𝖬ᶜ_k X_k: (Θe, e × h) for X = (e, 0); (h × e, m e) for X = (0, e)
        c = w.Ic + 13 * k
        ex, ey, ez = m.axis[3 * k], m.axis[3 * k + 1], m.axis[3 * k + 2]
        h0, h1, h2 = c[1], c[2], c[3]
        if m.jtype[k] == REVOLUTE:
            for a in range(3):
                F[a] = c[4 + 3 * a] * ex + c[5 + 3 * a] * ey + c[6 + 3 * a] * ez
            F[3] = ey * h2 - ez * h1
            F[4] = ez * h0 - ex * h2
            F[5] = ex * h1 - ey * h0
        else:
            F[0] = h1 * ez - h2 * ey
            F[1] = h2 * ex - h0 * ez
            F[2] = h0 * ey - h1 * ex
            F[3] = c[0] * ex
            F[4] = c[0] * ey
            F[5] = c[0] * ez
        col = col_of(m, k)
        out[col * nv + col] = X_dot(m, k, F)
        carry_up(m, w, k, F, out, col, nv, True)
    if m.fb:
        # the base block: 𝖬ᶜ_0 = [[Θ, h̃], [−h̃, m I]] in Pinocchio's order [[m I, h̃ᵀ], [h̃, Θ]]
        c = w.Ic
        h0, h1, h2 = c[1], c[2], c[3]
        for a in range(3):
            out[a * nv + a] = c[0]
            for k in range(3):
                out[(3 + a) * nv + 3 + k] = c[4 + 3 * a + k]
        # h̃ = [[0, −h2, h1], [h2, 0, −h0], [−h1, h0, 0]]: rows 3..5, cols 0..2; its transpose above
        out[3 * nv + 1], out[3 * nv + 2] = -h2, h1
        out[4 * nv + 0], out[4 * nv + 2] = h2, -h0
        out[5 * nv + 0], out[5 * nv + 1] = -h1, h0
        out[1 * nv + 3], out[2 * nv + 3] = -h2, h1
        out[0 * nv + 4], out[2 * nv + 4] = h2, -h0
        out[0 * nv + 5], out[1 * nv + 5] = -h1, h0


# ---------------------------------------------------------------------------------------------
# C̄ (eq. 54) and Ṁ (eq. 29–30)
# ---------------------------------------------------------------------------------------------
cdef void coriolis_column(const KModel* m, KWork* w, int c, const double* Xc, int col,
                          int mode, double* out) noexcept nogil:
    """Column ``col`` of C̄ (mode 0) or of the lower half of Ṁ (mode 1) for the screw Xc of body
    c. With J̇ = −AaJ (eq. 19), J_i = T_i J_λ, J̇_i = T_i J̇_λ − q̇_i ad_{X_i} J_i over the subtree
    of c (J_c = Xc, J̇_c = 0), and the product with Jᵀ as the backward accumulation
    P_λ += T_iᵀ P_i, of the body terms

        Y_i = 𝖬_i (J̇_i + ½ ad_{V_i} J_i) − ½ ad_{V_i}ᵀ 𝖬_i J_i − ½ ad_{J_i}ᵀ 𝖬_i V_i   (C̄)
        Y_i = 𝖬_i J̇_i                                                           (Ṁ, eq. 30)

    The C̄ term is the symmetric split of the gyroscopic operator that Pinocchio's
    ``computeCoriolisMatrix`` uses; for a fixed base it equals eq. 54 of seed 004 (checked
    against both), and for a floating base, where the free joint's ``a_0 = ad_ν`` makes the
    factorisation of eq. 54 differ, it keeps ``C̄ v`` = Coriolis and ``Ṁ − 2C̄`` skew while
    matching Pinocchio."""
    cdef int nb = m.nb, nv = m.nv, i, end, par, a, r
    cdef double* s = w.S
    cdef double* s2 = w.S + 6
    cdef double* V
    cdef double* J
    cdef double* Jd
    cdef double* P
    copy6(Xc, w.J + 6 * c)
    zero6(w.Jd + 6 * c)
    end = c + 1
    while end < nb and m.parent[end] >= c:
        i = end
        par = m.parent[i]
        to_child(w.T + 12 * i, w.J + 6 * par, w.J + 6 * i)
        to_child(w.T + 12 * i, w.Jd + 6 * par, w.Jd + 6 * i)
        ad_X(m, i, w.J + 6 * i, s, False)
        axpy6(-w.qj[nb + i], s, w.Jd + 6 * i)
        end += 1
    for i in range(c, end):
        P = w.P + 6 * i
        J = w.J + 6 * i
        Jd = w.Jd + 6 * i
        if mode == 1:
            inertia_times(m, i, Jd, P)
            continue
        V = w.V + 6 * i
        # J̇ + ½ ad_V J, ad_V (a, b) = (ω × a, v × a + ω × b)
        s[0] = Jd[0] + 0.5 * (V[1] * J[2] - V[2] * J[1])
        s[1] = Jd[1] + 0.5 * (V[2] * J[0] - V[0] * J[2])
        s[2] = Jd[2] + 0.5 * (V[0] * J[1] - V[1] * J[0])
        s[3] = Jd[3] + 0.5 * (V[4] * J[2] - V[5] * J[1] + V[1] * J[5] - V[2] * J[4])
        s[4] = Jd[4] + 0.5 * (V[5] * J[0] - V[3] * J[2] + V[2] * J[3] - V[0] * J[5])
        s[5] = Jd[5] + 0.5 * (V[3] * J[1] - V[4] * J[0] + V[0] * J[4] - V[1] * J[3])
        inertia_times(m, i, s, P)
        inertia_times(m, i, J, s2)
        add_adT(V, s2, P, 0.5)
        add_adT(J, w.A + 6 * i, P, 0.5)
    for i in range(end - 1, c, -1):
        out[col_of(m, i) * nv + col] = X_dot(m, i, w.P + 6 * i)
        add_to_parent(w.T + 12 * i, w.P + 6 * i, w.P + 6 * m.parent[i])
    P = w.P + 6 * c
    if m.jtype[c] == FREE:
        for a in range(6):
            out[base_col(a) * nv + col] = P[a]
    else:
        out[col_of(m, c) * nv + col] = X_dot(m, c, P)
    copy6(P, s)
    carry_up(m, w, c, s, out, col, nv, False)


cdef void coriolis(const KModel* m, KWork* w, int mode, double* out) noexcept nogil:
    cdef int nb = m.nb, nv = m.nv, i, j, a, par
    cdef double* Xc = w.S + 12
    cdef double sm
    poses(m, w)
    # body twists V_i = T_i V_λ + X_i q̇_i (the base: ν)
    for i in range(nb):
        par = m.parent[i]
        if m.jtype[i] == FREE:
            copy6(w.nu, w.V + 6 * i)
            continue
        if par >= 0:
            to_child(w.T + 12 * i, w.V + 6 * par, w.V + 6 * i)
        else:
            zero6(w.V + 6 * i)
        for a in range(3):
            w.V[6 * i + a + (0 if m.jtype[i] == REVOLUTE else 3)] += m.axis[3 * i + a] * w.qj[nb + i]
    for i in range(nb):
        inertia_times(m, i, w.V + 6 * i, w.A + 6 * i)    # 𝖬_i V_i
    for i in range(nv * nv):
        out[i] = 0.0
    if m.fb:
        for a in range(6):
            zero6(Xc)
            Xc[a] = 1.0
            coriolis_column(m, w, 0, Xc, base_col(a), mode, out)
    for i in range(m.fb, nb):
        set_X(m, i, Xc)
        coriolis_column(m, w, i, Xc, col_of(m, i), mode, out)
    if mode == 1:
        for i in range(nv):
            for j in range(i, nv):
                sm = out[i * nv + j] + out[j * nv + i]
                out[i * nv + j] = sm
                out[j * nv + i] = sm


# ---------------------------------------------------------------------------------------------
# public entries
# ---------------------------------------------------------------------------------------------
cdef object _mass_matrix(Data d, q, out):
    """M (nv, nv) at q (nq,)."""
    cdef KModel* m = &d.m
    q = vec(q, "q", m.nq)
    out = out_mat(out, m.nv, m.nv)
    check_finite(q, "q")
    check_quat(m, q, "q")
    load_jet(m, &d.w, <double*> cnp.PyArray_DATA(q), NULL, 0)
    res = alias3(out, q, None, None)
    crba(m, &d.w, <double*> cnp.PyArray_DATA(res))
    if res is not out:
        out[...] = res
    return out


cdef object _coriolis_matrix(Data d, q, qd, out, int mode):
    """C̄ (mode 0) or Ṁ (mode 1), (nv, nv), at q (nq,), v (nv,)."""
    cdef KModel* m = &d.m
    q = vec(q, "q", m.nq)
    qd = vec(qd, "qd", m.nv)
    out = out_mat(out, m.nv, m.nv)
    check_finite(q, "q")
    check_finite(qd, "qd")
    check_quat(m, q, "q")
    load_jet(m, &d.w, <double*> cnp.PyArray_DATA(q), <double*> cnp.PyArray_DATA(qd), 1)
    res = alias3(out, q, qd, None)
    coriolis(m, &d.w, mode, <double*> cnp.PyArray_DATA(res))
    if res is not out:
        out[...] = res
    return out


# ---------------------------------------------------------------------------------------------
# the public entries: each takes the Data's owner flag (one thread at a time) around its kernel
# ---------------------------------------------------------------------------------------------

def mass_matrix(Data d, q, out):
    """M (nv, nv) at q (nq,)."""
    claim(d)
    try:
        return _mass_matrix(d, q, out)
    finally:
        unclaim(d)


def coriolis_matrix(Data d, q, qd, out, int mode):
    """C̄ (mode 0) or Ṁ (mode 1), (nv, nv), at q (nq,), v (nv,)."""
    claim(d)
    try:
        return _coriolis_matrix(d, q, qd, out, mode)
    finally:
        unclaim(d)
