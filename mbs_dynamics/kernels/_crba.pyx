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

from mbs_dynamics.kernels._data cimport (finite_result, FREE, REVOLUTE, Data, KModel, KWork, alias3, claim,
                                 unclaim, check_finite,
                                 check_quat, out_mat, vec)
from mbs_dynamics.kernels._spatial cimport (axpy6, copy6,
                                    joint_pose, load_jet, set_X, X_dot, zero6)

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
# C̄ (eq. 54) and Ṁ (eq. 29–30), O(n d) in the world frame
# ---------------------------------------------------------------------------------------------
cdef inline void cross_mat(const double* x, double* A, int lda) noexcept nogil:
    """A (3×3 block, leading dimension lda) = x̃."""
    A[0] = 0.0
    A[1] = -x[2]
    A[2] = x[1]
    A[lda] = x[2]
    A[lda + 1] = 0.0
    A[lda + 2] = -x[0]
    A[2 * lda] = -x[1]
    A[2 * lda + 1] = x[0]
    A[2 * lda + 2] = 0.0


cdef inline double dot6(const double* a, const double* b) noexcept nogil:
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3] + a[4] * b[4] + a[5] * b[5]


cdef inline void mat6_vec(const double* A, const double* x, double* y) noexcept nogil:
    """y = A x (A row-major 6×6)."""
    cdef int r
    for r in range(6):
        y[r] = dot6(A + 6 * r, x)


cdef void world_inertia(const KModel* m, int i, const double* C, double* Mw) noexcept nogil:
    """𝖬ʷ_i = Ad_{C_i}^{-T} 𝖬_i Ad_{C_i}^{-1} (6×6, row-major) for the world pose C_i = (R, p):
    h = R h_b + m p, Θ = R Θ_b Rᵀ − m p̃p̃ − p̃ (R h_b)~ − (R h_b)~ p̃ (parallel axes, seed 004
    eq. 24)."""
    cdef const double* R = C
    cdef const double* p = C + 9
    cdef const double* hb = m.h + 3 * i
    cdef const double* Tb = m.Th + 9 * i
    cdef double mass = m.mass[i]
    cdef double hr[3]
    cdef double h[3]
    cdef double RT[9]
    cdef double P[9]
    cdef double H[9]
    cdef int a, b, c
    for a in range(3):
        hr[a] = R[3 * a] * hb[0] + R[3 * a + 1] * hb[1] + R[3 * a + 2] * hb[2]
        h[a] = hr[a] + mass * p[a]
    # RT = R Θ_b
    for a in range(3):
        for b in range(3):
            RT[3 * a + b] = R[3 * a] * Tb[b] + R[3 * a + 1] * Tb[3 + b] + R[3 * a + 2] * Tb[6 + b]
    cross_mat(p, P, 3)
    cross_mat(hr, H, 3)
    for a in range(3):
        for b in range(3):
            # (R Θ_b Rᵀ)_ab
            Mw[6 * a + b] = (RT[3 * a] * R[3 * b] + RT[3 * a + 1] * R[3 * b + 1]
                             + RT[3 * a + 2] * R[3 * b + 2])
            for c in range(3):
                Mw[6 * a + b] -= (mass * P[3 * a + c] * P[3 * c + b] + P[3 * a + c] * H[3 * c + b]
                                  + H[3 * a + c] * P[3 * c + b])
    # [[Θ, h̃], [−h̃, m I]]
    cross_mat(h, Mw + 3, 6)
    cross_mat(h, Mw + 18, 6)
    for a in range(3):
        for b in range(3):
            Mw[18 + 6 * a + b] = -Mw[18 + 6 * a + b]
            Mw[21 + 6 * a + b] = mass if a == b else 0.0


cdef void gyro(const double* Mw, const double* V, int mode, double* B) noexcept nogil:
    """The body term of C̄ (mode 0) or of Ṁ's 𝖬J̇ part (mode 1) in the world frame, linear in
    the column's screw S: Y = 𝖬ʷṠ + B S with
        B = −½(𝖬ʷ ad_V + ad_Vᵀ 𝖬ʷ + H(𝖬ʷV))   (C̄; ad_Sᵀ h = H(h) S, H(μ, f) = [[μ̃, f̃], [f̃, 0]])
        B = −𝖬ʷ ad_V                            (Ṁ),
    V = (ω, v) the body's spatial twist, 𝖬ʷ = [[Θ, h̃], [−h̃, m]]. For C̄ the blocks collapse
    ([h̃, ω̃] = (h × ω)~): B = [[−½(Θω̃ − ω̃Θ + h̃ṽ + ṽh̃ + μ̃), 0], [−f̃, 0]] with
    (μ, f) = 𝖬ʷV, so only its first three columns are stored (B row-major 6×3); for Ṁ, 6×6."""
    cdef double Wt[9]
    cdef double Vt[9]
    cdef double Hh[9]
    cdef double h[3]
    cdef double mu[3]
    cdef double f[3]
    cdef double s, mass = Mw[21]
    cdef int r, c, k
    h[0] = Mw[6 * 2 + 4]         # (h̃)[2][1] = h_0 at row 2, col 3 + 1
    h[1] = Mw[6 * 0 + 5]         # (h̃)[0][2] = h_1 at row 0, col 3 + 2
    h[2] = Mw[6 * 1 + 3]         # (h̃)[1][0] = h_2 at row 1, col 3 + 0
    cross_mat(V, Wt, 3)
    cross_mat(V + 3, Vt, 3)
    cross_mat(h, Hh, 3)
    if mode == 1:
        # 𝖬 ad_V = [[Θω̃ + h̃ṽ, h̃ω̃], [−h̃ω̃ + mṽ, mω̃]]
        for r in range(3):
            for c in range(3):
                s = 0.0
                for k in range(3):
                    s += Mw[6 * r + k] * Wt[3 * k + c] + Hh[3 * r + k] * Vt[3 * k + c]
                B[6 * r + c] = -s
                s = 0.0
                for k in range(3):
                    s += Hh[3 * r + k] * Wt[3 * k + c]
                B[6 * r + 3 + c] = -s
                B[6 * (3 + r) + c] = s - mass * Vt[3 * r + c]
                B[6 * (3 + r) + 3 + c] = -mass * Wt[3 * r + c]
        return
    for r in range(3):
        mu[r] = (Mw[6 * r] * V[0] + Mw[6 * r + 1] * V[1] + Mw[6 * r + 2] * V[2]
                 + Mw[6 * r + 3] * V[3] + Mw[6 * r + 4] * V[4] + Mw[6 * r + 5] * V[5])
    f[0] = -(h[1] * V[2] - h[2] * V[1]) + mass * V[3]
    f[1] = -(h[2] * V[0] - h[0] * V[2]) + mass * V[4]
    f[2] = -(h[0] * V[1] - h[1] * V[0]) + mass * V[5]
    for r in range(3):
        for c in range(3):
            s = 0.0
            for k in range(3):
                s += (Mw[6 * r + k] * Wt[3 * k + c] - Wt[3 * r + k] * Mw[6 * k + c]
                      + Hh[3 * r + k] * Vt[3 * k + c] + Vt[3 * r + k] * Hh[3 * k + c])
            B[3 * r + c] = -0.5 * s
    B[1] += 0.5 * mu[2]          # −½ μ̃
    B[2] -= 0.5 * mu[1]
    B[3] -= 0.5 * mu[2]
    B[5] += 0.5 * mu[0]
    B[6] += 0.5 * mu[1]
    B[7] -= 0.5 * mu[0]
    cross_mat(f, B + 9, 3)
    for r in range(9, 18):
        B[r] = -B[r]


cdef inline int n_cols(const KModel* m, int b) noexcept nogil:
    return 6 if m.jtype[b] == FREE else 1


cdef inline int col_k(const KModel* m, int b, int a) noexcept nogil:
    """The a-th velocity column of body b."""
    return base_col(a) if m.jtype[b] == FREE else col_of(m, b)


cdef void coriolis(const KModel* m, KWork* w, int mode, double* out) noexcept nogil:
    """C̄ (mode 0) or Ṁ (mode 1), the O(n·depth) way (as Pinocchio's computeCoriolisMatrix):
    in the world frame a column of the system Jacobian is the same screw S_c = Ad_{C_k} X_k for
    every body of its subtree, and Ṡ_c = ad_{V_k} S_c (V_k the spatial twist of body k, seed 001
    §3.2). With the body terms Y_i = 𝖬ʷ_i Ṡ + B_i S (see :func:`gyro`; the world-frame form of
    ``𝖬(J̇ + ½ad_V J) − ½ad_Vᵀ𝖬J − ½ad_Jᵀ𝖬V``, the symmetric split of seed 004 eq. 54 that
    Pinocchio uses) and the subtree composites 𝖬ᶜ_k = Σ 𝖬ʷ_i, Bᶜ_k = Σ B_i:

        C̄[r, c] = S_rᵀ (𝖬ᶜ_k Ṡ_c + Bᶜ_k S_c)      k = the deeper body of r and c

    (zero when neither is an ancestor of the other), i.e. one 6-vector per column carried to
    every ancestor column by a dot product, and two per row for the other triangle. Ṁ = A + Aᵀ
    with A = Σ J_iᵀ 𝖬_i J̇_i (eq. 29–30), the same sum with B_i = −𝖬ʷ_i ad_{V_i}."""
    cdef int nb = m.nb, nv = m.nv, i, j, a, b, par, ci, cj, kk
    cdef double* C
    cdef double* Cp
    cdef double* T
    cdef double* S
    cdef double* Sd
    cdef double* V
    cdef double* Ic
    cdef double* Bc
    cdef double* F = w.S
    cdef double* G = w.S + 6
    cdef double* Hh = w.S + 12
    cdef double* Bi = w.S + 36
    cdef double* X = w.S + 18
    cdef double sm, qd
    cdef int bw = 3 if mode == 0 else 6    # stored columns of the body terms B (see gyro)
    poses(m, w)
    for i in range(nv * nv):
        out[i] = 0.0
    # forward: world poses, screws S, spatial twists, Ṡ, world inertias and body terms
    for i in range(nb):
        par = m.parent[i]
        C = w.Cw + 12 * i
        T = w.T + 12 * i
        if par < 0:
            for a in range(12):
                C[a] = T[a]
            zero6(w.Vs + 6 * i)
        else:
            Cp = w.Cw + 12 * par
            for a in range(3):
                for b in range(3):
                    C[3 * a + b] = Cp[3 * a] * T[b] + Cp[3 * a + 1] * T[3 + b] + Cp[3 * a + 2] * T[6 + b]
                C[9 + a] = Cp[3 * a] * T[9] + Cp[3 * a + 1] * T[10] + Cp[3 * a + 2] * T[11] + Cp[9 + a]
            copy6(w.Vs + 6 * par, w.Vs + 6 * i)
        V = w.Vs + 6 * i
        for a in range(n_cols(m, i)):
            ci = col_k(m, i, a)
            if m.jtype[i] == FREE:
                zero6(X)
                X[a] = 1.0
                qd = w.nu[a]
            else:
                set_X(m, i, X)
                qd = w.qj[nb + i]
            S = w.Sw + 6 * ci
            for b in range(3):      # Ad_C X: ω = R X_ω, v = R X_v + p × ω
                S[b] = C[3 * b] * X[0] + C[3 * b + 1] * X[1] + C[3 * b + 2] * X[2]
                S[3 + b] = C[3 * b] * X[3] + C[3 * b + 1] * X[4] + C[3 * b + 2] * X[5]
            S[3] += C[10] * S[2] - C[11] * S[1]
            S[4] += C[11] * S[0] - C[9] * S[2]
            S[5] += C[9] * S[1] - C[10] * S[0]
            axpy6(qd, S, V)
        for a in range(n_cols(m, i)):
            ci = col_k(m, i, a)
            S = w.Sw + 6 * ci
            Sd = w.Sdw + 6 * ci     # ad_V S = (ω × a, v × a + ω × b)
            Sd[0] = V[1] * S[2] - V[2] * S[1]
            Sd[1] = V[2] * S[0] - V[0] * S[2]
            Sd[2] = V[0] * S[1] - V[1] * S[0]
            Sd[3] = V[4] * S[2] - V[5] * S[1] + V[1] * S[5] - V[2] * S[4]
            Sd[4] = V[5] * S[0] - V[3] * S[2] + V[2] * S[3] - V[0] * S[5]
            Sd[5] = V[3] * S[1] - V[4] * S[0] + V[0] * S[4] - V[1] * S[3]
        world_inertia(m, i, C, w.Icw + 36 * i)
        gyro(w.Icw + 36 * i, V, mode, w.Bc + 36 * i)
    # backward: subtree composites
    for i in range(nb - 1, 0, -1):
        par = m.parent[i]
        if par >= 0:
            Ic = w.Icw + 36 * par
            Bc = w.Bc + 36 * par
            for a in range(36):
                Ic[a] += w.Icw[36 * i + a]
            for a in range(6 * bw):
                Bc[a] += w.Bc[36 * i + a]
    # C̄[r, c] = S_rᵀ(𝖬ᶜ_k Ṡ_c + Bᶜ_k S_c), k the deeper body
    for i in range(nb):
        Ic = w.Icw + 36 * i
        Bc = w.Bc + 36 * i
        for a in range(n_cols(m, i)):
            ci = col_k(m, i, a)
            mat6_vec(Ic, w.Sdw + 6 * ci, F)
            S = w.Sw + 6 * ci
            for b in range(6):
                sm = 0.0
                for kk in range(bw):
                    sm += Bc[bw * b + kk] * S[kk]
                F[b] += sm
            # rows of body i itself and of its ancestors
            j = i
            while j >= 0:
                for b in range(n_cols(m, j)):
                    cj = col_k(m, j, b)
                    out[cj * nv + ci] = dot6(w.Sw + 6 * cj, F)
                j = m.parent[j]
            # row ci against the columns of the strict ancestors
            if m.parent[i] < 0:
                continue
            S = w.Sw + 6 * ci
            mat6_vec(Ic, S, F)          # 𝖬ᶜ symmetric
            for kk in range(bw):        # G = Bᶜᵀ S (bw entries)
                sm = 0.0
                for b in range(6):
                    sm += Bc[bw * b + kk] * S[b]
                G[kk] = sm
            j = m.parent[i]
            while j >= 0:
                for b in range(n_cols(m, j)):
                    cj = col_k(m, j, b)
                    sm = dot6(F, w.Sdw + 6 * cj)
                    for kk in range(bw):
                        sm += G[kk] * w.Sw[6 * cj + kk]
                    out[ci * nv + cj] = sm
                j = m.parent[j]
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
        return finite_result(_mass_matrix(d, q, out), "mass_matrix")
    finally:
        unclaim(d)


def coriolis_matrix(Data d, q, qd, out, int mode):
    """C̄ (mode 0) or Ṁ (mode 1), (nv, nv), at q (nq,), v (nv,)."""
    claim(d)
    try:
        return finite_result(_coriolis_matrix(d, q, qd, out, mode), "coriolis_matrix")
    finally:
        unclaim(d)
