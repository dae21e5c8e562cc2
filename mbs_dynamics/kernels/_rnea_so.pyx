# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Second-order partial derivatives of inverse dynamics, compiled and exact: ∂²τ/∂q², ∂²τ/∂q̇²,
∂²τ/∂q∂q̇ and ∂M/∂q (the four tensors of Pinocchio's C++ ``ComputeRNEASecondOrderDerivatives``).

Route: the analytic second-order IDSVA of Singh, Russell & Wensing, "Efficient analytical
derivatives of rigid-body dynamics using spatial vector algebra" (IEEE RA-L 2022), in world
coordinates. One forward sweep gives, per velocity coordinate j with world screw S_j,
Ψ̇_j = v_λ × S_j, Ψ̈_j = a_λ × S_j + v_λ × Ψ̇_j and D_j = Ψ̇_j + v_j × S_j, and per body the
subtree composites I^C (inertia), 𝔅^C (the Coriolis composite, 𝔅 x = x ×* h + v ×* I x −
I (v × x)) and F^C (force, applied wrenches included). The first-order derivatives are then
dot products of these (seed 000 §6.1; Carpentier & Mansard, RSS 2018): for b(j) ⪯ b(i)

    ∂τ_i/∂q_j = α_i·Ψ̈_j + β_i·Ψ̇_j,   ∂τ_i/∂q̇_j = α_i·D_j + β_i·S_j,   M_ij = α_i·S_j,

α = I^C S, β = 𝔅^{Cᵀ} S (composites of b(i)), and for b(i) a strict ancestor of b(j)
S_i·(I^C Ψ̈_j + S_j ×* F^C + 𝔅^C Ψ̇_j) and S_i·(I^C D_j + 𝔅^C S_j) (composites of b(j)).
Differentiating them once more along q_k / q̇_k only ever moves S, Ψ̇, Ψ̈, D by
``dS_j/dq_k = S_k × S_j`` (b(k) ⪯ b(j)) and the composites by ``S_k ×* X − X S_k ×``-type
variations. Every entry of the four tensors for a triple of coordinates k ⪯ j ⪯ i on one path
to the root is therefore a dot product of 6-vectors: per coordinate i a handful of 6×6
matrices (the variations of I^C and 𝔅^C along S_i and Ψ̇_i and the cross-product matrices of
I^C S_i, 𝔅^{Cᵀ} S_i, 𝔅^C Ψ̇_i + S_i ×* F^C + I^C Ψ̈_i and 𝔅^C S_i + I^C D_i), per ancestor j of
i a dozen 6-vectors from them, and per ancestor k of j a few dot products written into every
permutation of (i, j, k) it decides (the symmetries ∂²τ/∂q_j∂q_k = ∂²τ/∂q_k∂q_j of the joint
block, ∂²τ/∂q̇² symmetric, ∂M_ij = ∂M_ji). Pairs not on one path are structurally zero.

A floating base is one 6-DOF joint with world screws ``S_r = Ad_{C_0} e_r`` (δ = (linear,
angular) in the base frame, Pinocchio's ``q ⊕ δ = C_0 exp(δ)``), Ψ̇ = 0, Ψ̈ = a_g × S_r,
D = v_0 × S_r; its Lie bracket ``dS_r/dδ_s = S_s × S_r`` is the ancestor rule above, which
is why the q–q block of the base is not symmetric. Applied wrenches fixed in their links move
with them and enter through F^C only.

Cost: O(nb) 6×6 work in the sweep, O(nv·depth) 6×6 mat-vecs over the (i, j) pairs and
O(nv·depth²) dot products over the triples: the order of the nonzero output.
"""
import numpy as np
cimport numpy as cnp
from libc.string cimport memset

from mbs_dynamics.kernels._data cimport (finite_result, FREE, Data, KModel, KWork, claim,
                                         fresh_if_alias, load_fx, take_states, unclaim)
from mbs_dynamics.kernels._spatial cimport ad_V, cross_force, dot6, load_rows, world_screw
from mbs_dynamics.kernels._sweep cimport body_forces, sweep_joint

cnp.import_array()

# offsets in a body row (BS doubles) and a coordinate row (CS doubles); the first 61 and 24 are
# the layouts of kernels/_sweep.pxd (the forward sweep shared with the first-order kernel)
cdef enum:
    B_P = 0         # pose R (9, row-major), p (3)
    B_V = 12        # world twist (ω, v)
    B_A = 18        # world acceleration, gravity included
    B_I = 24        # inertia (m, h, Θ) about the world origin (13)
    B_H = 37        # momentum I v
    B_F = 43        # force I a + v ×* I v − W_ext
    B_N = 49        # N + Nᵀ, N = I ad_v (12: S, k of _sweep.body_N)
    B_C = 61        # the composites of B_I … B_N (37 doubles)
    BS = 98
    NCOMP = 37
    C_S = 0         # per coordinate (CS doubles): S, Ψ̇, D, Ψ̈
    C_PD = 6
    C_D = 12
    C_PDD = 18
    CS = 24
    M_I = 0         # per body (MS doubles): I^C, 𝔅^C as 6×6 row-major matrices
    M_B = 36
    MS = 72


cdef inline void add_skew(double* R, double a0, double a1, double a2) noexcept nogil:
    """R[0:3, 0:3] += ã, the cross-product matrix of a (R inside a 6×6 row-major matrix)."""
    R[1] -= a2
    R[2] += a1
    R[6] += a2
    R[8] -= a0
    R[12] -= a1
    R[13] += a0


cdef inline void cmf(const double* f, double* R, double c) noexcept nogil:
    """R += c · the matrix of x ↦ x ×* f (f = (n, f)): [[−ñ, −f̃], [−f̃, 0]] (6×6 row-major)."""
    add_skew(R, -c * f[0], -c * f[1], -c * f[2])
    add_skew(R + 3, -c * f[3], -c * f[4], -c * f[5])
    add_skew(R + 18, -c * f[3], -c * f[4], -c * f[5])


cdef inline void variation(const double* x, const double* A, double* R, bint add) noexcept nogil:
    """R (+)= x ×* A − A x× (the tangent of a force-from-twist map A when everything moves by
    the twist x): columns of A through x ×*, rows of A through x ×* (−A x× = (x ×* Aᵀ)ᵀ rows)."""
    cdef double col[6]
    cdef double t[6]
    cdef int a, b
    if not add:
        memset(R, 0, 36 * sizeof(double))
    for a in range(6):
        for b in range(6):
            col[b] = A[6 * b + a]
            t[b] = 0.0
        cross_force(x, col, t, 1.0)
        for b in range(6):
            R[6 * b + a] += t[b]
    for a in range(6):
        cross_force(x, A + 6 * a, R + 6 * a, 1.0)


cdef inline void mv(const double* A, const double* x, double* d) noexcept nogil:
    """d = A x (6×6 row-major)."""
    cdef int a
    for a in range(6):
        d[a] = (A[6 * a] * x[0] + A[6 * a + 1] * x[1] + A[6 * a + 2] * x[2]
                + A[6 * a + 3] * x[3] + A[6 * a + 4] * x[4] + A[6 * a + 5] * x[5])


cdef inline void mv_add(const double* A, const double* x, double* d) noexcept nogil:
    """d += A x."""
    cdef int a
    for a in range(6):
        d[a] += (A[6 * a] * x[0] + A[6 * a + 1] * x[1] + A[6 * a + 2] * x[2]
                 + A[6 * a + 3] * x[3] + A[6 * a + 4] * x[4] + A[6 * a + 5] * x[5])


cdef inline void mtv(const double* A, const double* x, double* d) noexcept nogil:
    """d = Aᵀ x."""
    cdef int a
    for a in range(6):
        d[a] = (A[a] * x[0] + A[6 + a] * x[1] + A[12 + a] * x[2] + A[18 + a] * x[3]
                + A[24 + a] * x[4] + A[30 + a] * x[5])


cdef void composite_matrices(const double* Y, double* Mi) noexcept nogil:
    """I^C = [[Θ, h̃], [−h̃, m 1]] and 𝔅^C = (x ↦ x ×* h^C) − (N + Nᵀ)^C from the composite
    block Y (at B_C of a body row; N + Nᵀ = [[S, k̃], [−k̃, 0]] as _sweep.body_N stores it)."""
    cdef double* I = Mi + M_I
    cdef double* B = Mi + M_B
    cdef const double* NS = Y + (B_N - B_I)
    cdef int a, b
    memset(I, 0, 36 * sizeof(double))
    memset(B, 0, 36 * sizeof(double))
    for a in range(3):
        for b in range(3):
            I[6 * a + b] = Y[4 + 3 * a + b]
            B[6 * a + b] = -NS[3 * a + b]
        I[6 * (3 + a) + 3 + a] = Y[0]
    I[4], I[5], I[9], I[11], I[15], I[16] = -Y[3], Y[2], Y[3], -Y[1], -Y[2], Y[1]
    I[19], I[20], I[24], I[26], I[30], I[31] = Y[3], -Y[2], -Y[3], Y[1], Y[2], -Y[1]
    add_skew(B + 3, -NS[9], -NS[10], -NS[11])      # −k̃
    add_skew(B + 18, NS[9], NS[10], NS[11])        # +k̃
    cmf(Y + (B_H - B_I), B, 1.0)


cdef inline int body_coords(const KModel* m, int b, int* end) noexcept nogil:
    """The first velocity coordinate of body b (returned) and one past its last (in end)."""
    if m.jtype[b] == FREE:
        end[0] = 6
        return 0
    end[0] = b + 5 * m.fb + 1
    return b + 5 * m.fb


cdef inline int coord_body(const KModel* m, int c) noexcept nogil:
    return 0 if c < 6 * m.fb else c - 5 * m.fb


cdef void base_pass(const KModel* m, KWork* w, double* X, double* C, double* Mx,
                    bint use_fx) noexcept nogil:
    """The one forward sweep at (q, q̇, q̈) (loaded in w): per body X (nb, BS) its world pose,
    twist, acceleration, inertia, momentum, force and N, with their subtree composites; per
    coordinate C (nv, CS) S, Ψ̇, D, Ψ̈; per body Mx (nb, MS) the composites I^C and 𝔅^C as 6×6
    matrices."""
    cdef int nb = m.nb, fb = m.fb, i, a, r, par
    cdef double* Xi
    cdef double* Xp
    cdef double* Ci
    cdef double u[6]
    cdef double ag[6]
    ag[0], ag[1], ag[2] = 0.0, 0.0, 0.0
    ag[3], ag[4], ag[5] = -m.g[0], -m.g[1], -m.g[2]
    for i in range(nb):
        Xi = X + BS * i
        par = m.parent[i]
        if m.jtype[i] == FREE:
            for a in range(12):
                Xi[B_P + a] = w.T[a]
            world_screw(Xi, w.nu, Xi + B_V)
            world_screw(Xi, w.nu + 6, Xi + B_A)
            for a in range(6):
                Xi[B_A + a] += ag[a]
            for r in range(6):
                Ci = C + CS * r
                for a in range(6):
                    u[a] = 0.0
                u[3 + r if r < 3 else r - 3] = 1.0   # (linear, angular) order
                world_screw(Xi, u, Ci + C_S)
                for a in range(6):
                    Ci[C_PD + a] = 0.0
                ad_V(Xi + B_V, Ci + C_S, Ci + C_D)   # D = v_0 × S
                ad_V(ag, Ci + C_S, Ci + C_PDD)       # Ψ̈ = a_0 × S
        else:
            sweep_joint(m, w, i, Xi, X + BS * par if par >= 0 else NULL, C + CS * (i + 5 * fb),
                        ag)
        body_forces(m, w, i, Xi, use_fx)
        for a in range(NCOMP):
            Xi[B_C + a] = Xi[B_I + a]
    for i in range(nb - 1, 0, -1):
        par = m.parent[i]
        if par >= 0:
            Xi = X + BS * i
            Xp = X + BS * par
            for a in range(NCOMP):
                Xp[B_C + a] += Xi[B_C + a]
    for i in range(nb):
        composite_matrices(X + BS * i + B_C, Mx + MS * i)


cdef double second_order(const KModel* m, KWork* w, double* work, bint use_fx, double* dqq,
                         double* dvv, double* dqv, double* daq) noexcept nogil:
    """The four (nv, nv, nv) tensors, [i, j, k] = ∂/∂x_k (∂τ_i/∂y_j), at the state loaded in w
    (zeroed here first: the entries of coordinates on different branches, and a few structural
    zeros on one path, are not written). work: the scratch of :func:`work_size`. Returns 0
    when every entry written is finite, else NaN (0 × the sum of each triple's entries: the
    output check without a second pass over the 4·nv³ entries).

    For each coordinate i (body b(i), composites I, 𝔅, F of its subtree), with
    S, Ψ̇, Ψ̈, D its own: the 6×6 matrices r1 = S ×* I − I S× (the variation of I^C along S) and
    r3 = Ψ̇ ×* I − I Ψ̇× + (· ×* I Ψ̇) + S ×* 𝔅 − 𝔅 S×, and the forces I S, f4 = 𝔅ᵀ S,
    f5 = 𝔅 Ψ̇ + S ×* F + I Ψ̈, f7 = 𝔅 S + I D, whose cross matrices r0 = (· ×* I S) (antisymmetric),
    (· ×* f) are applied as cross products; Bic = r1 + r0, r2 = r0 − r1, r6 = r0 + S ×* I are
    never formed. For each j with b(j) ⪯ b(i) the vectors u
    below, and for each k with b(k) ⪯ b(j) the entries of the triple (i, j, k) and of the
    permutations it decides (Singh, Russell & Wensing 2022, Alg. 2, in world coordinates)."""
    cdef int nb = m.nb, nv = m.nv, fb = m.fb
    cdef long nn = nv * nv
    cdef double* X = work
    cdef double* C = X + nb * BS
    cdef double* Mx = C + nv * CS
    cdef int ci, cj, ck, bi, bj, bk, j0, j1, k0, k1, a
    cdef const double* Y
    cdef const double* I
    cdef const double* B
    cdef const double* Si
    cdef const double* Cj
    cdef const double* Ck
    cdef const double* Sj
    cdef const double* Pdj
    cdef const double* Sk
    cdef const double* Pdk
    cdef double r1[36]
    cdef double r3[36]
    cdef double IS[6]
    cdef double IP[6]
    cdef double f4[6]
    cdef double f5[6]
    cdef double f7[6]
    cdef double u1[6]
    cdef double u2[6]
    cdef double u3[6]
    cdef double u4[6]
    cdef double u6[6]
    cdef double u7[6]
    cdef double u9[6]
    cdef double u11[6]
    cdef double u13[6]
    cdef double u58[6]
    cdef double u812[6]
    cdef double u8[6]
    cdef double c6[6]
    cdef double y6[6]
    cdef double t[6]
    cdef double p1, p2, p3, p4, p5, p6, s3, acc, q13 = 0.0
    cdef long oi, oj, ok
    cdef double z = 0.0
    cdef bint ji, kj
    cdef size_t n3 = <size_t> nn * nv * sizeof(double)
    memset(dqq, 0, n3)
    memset(dvv, 0, n3)
    memset(dqv, 0, n3)
    memset(daq, 0, n3)
    base_pass(m, w, X, C, Mx, use_fx)
    for ci in range(nv):
        bi = coord_body(m, ci)
        Y = X + BS * bi + B_C
        I = Mx + MS * bi + M_I
        B = Mx + MS * bi + M_B
        Si = C + CS * ci
        mv(I, Si + C_S, IS)
        mv(I, Si + C_PD, IP)
        variation(Si + C_S, I, r1, False)
        variation(Si + C_PD, I, r3, False)
        cmf(IP, r3, 1.0)
        variation(Si + C_S, B, r3, True)
        mtv(B, Si + C_S, f4)
        mv(B, Si + C_PD, f5)
        cross_force(Si + C_S, Y + (B_F - B_I), f5, 1.0)
        mv(I, Si + C_PDD, t)
        mv(B, Si + C_S, f7)
        for a in range(6):
            f5[a] += t[a]
        mv(I, Si + C_D, t)
        for a in range(6):
            f7[a] += t[a]
        bj = bi
        while bj >= 0:
            ji = bj != bi
            j0 = body_coords(m, bj, &j1)
            for cj in range(j0, j1):
                Cj = C + CS * cj
                Sj = Cj + C_S
                Pdj = Cj + C_PD
                # r0 = (· ×* I S) is antisymmetric, so with c = Ψ̇_j ×* I S and y = r1 Ψ̇_j:
                # u9 = r0 S_j, u13 = r1 S_j, u2 = r1ᵀ S_j, u11 = Bicᵀ S_j = u2 − u9,
                # u58 = u5 + u8 = (c − y) + S_j ×* f4, u812 = u8 − Bicᵀ Ψ̇_j = u8 − r1ᵀ Ψ̇_j + c,
                # u6 = Bic Ψ̇_j + S_j ×* f7 = y + c + S_j ×* f7
                for a in range(6):
                    u9[a] = 0.0
                    c6[a] = 0.0
                    u8[a] = 0.0
                cross_force(Sj, IS, u9, 1.0)
                cross_force(Pdj, IS, c6, 1.0)
                cross_force(Sj, f4, u8, 1.0)
                mv(r1, Sj, u13)
                mtv(r1, Sj, u2)
                mv(r1, Pdj, y6)
                mtv(r1, Pdj, t)
                for a in range(6):
                    u11[a] = u2[a] - u9[a]
                    u58[a] = c6[a] - y6[a] + u8[a]
                    u812[a] = u8[a] - t[a] + c6[a]
                    u6[a] = y6[a] + c6[a]
                cross_force(Sj, f7, u6, 1.0)
                # u3 = r3 Ψ̇_j + r1 Ψ̈_j + S_j ×* f5
                mv(r3, Pdj, u3)
                mv_add(r1, Cj + C_PDD, u3)
                cross_force(Sj, f5, u3, 1.0)
                if ji:
                    mtv(r3, Sj, u1)
                    mv(r3, Sj, u7)
                    mv_add(r1, Cj + C_D, u7)
                else:                                     # u4 = r6 S_j = u9 + S_i ×* I S_j
                    mv(I, Sj, t)
                    for a in range(6):
                        u4[a] = u9[a]
                    cross_force(Si + C_S, t, u4, 1.0)
                bk = bj
                while bk >= 0:
                    kj = bk != bj
                    k0 = body_coords(m, bk, &k1)
                    for ck in range(k0, k1):
                        Ck = C + CS * ck
                        Sk = Ck + C_S
                        Pdk = Ck + C_PD
                        oi = ci * nn
                        oj = cj * nn
                        ok = ck * nn
                        p1 = dot6(u11, Pdk)
                        p2 = dot6(u9, Ck + C_PDD) + dot6(u812, Pdk)
                        p3 = dot6(u11, Sk)
                        dqq[oi + cj * nv + ck] = p2
                        dqv[oi + ck * nv + cj] = -p1
                        acc = p1 + p2 + p3
                        if ji:
                            s3 = dot6(u1, Pdk) + dot6(u2, Ck + C_PDD)
                            q13 = dot6(Sk, u13)
                            p4 = q13
                            p6 = dot6(u1, Sk) + dot6(u2, Ck + C_D)
                            dqq[oj + ck * nv + ci] = s3
                            dqq[oj + ci * nv + ck] = s3
                            dqv[oj + ck * nv + ci] = p1
                            dqv[oj + ci * nv + ck] = p6
                            dvv[oj + ck * nv + ci] = p3
                            dvv[oj + ci * nv + ck] = p3
                            daq[ok + cj * nv + ci] = p4
                            daq[oj + ck * nv + ci] = p4
                            acc = acc + (s3 + p4 + p6)
                        if kj:
                            p5 = dot6(Sk, u9)
                            s3 = dot6(Sk, u3)
                            p6 = dot6(Sk, u58) + dot6(u9, Ck + C_D)
                            p4 = dot6(Sk, u6)
                            dqq[oi + ck * nv + cj] = p2
                            dqq[ok + ci * nv + cj] = s3
                            dvv[oi + cj * nv + ck] = -p3
                            dvv[oi + ck * nv + cj] = -p3
                            dqv[oi + cj * nv + ck] = p6
                            dqv[ok + cj * nv + ci] = p4
                            daq[ok + ci * nv + cj] = p5
                            daq[oi + ck * nv + cj] = p5
                            acc = acc + (p5 + s3 + p6 + p4)
                            if ji:
                                p4 = dot6(Sk, u7)
                                p6 = q13 + p5                     # S_k·Bic S_j
                                dqq[ok + cj * nv + ci] = s3
                                dvv[ok + ci * nv + cj] = p6
                                dvv[ok + cj * nv + ci] = p6
                                dqv[ok + ci * nv + cj] = p4
                                acc = acc + (p4 + p6)
                            else:
                                p4 = dot6(Sk, u4)
                                dvv[ok + cj * nv + ci] = p4
                                acc = acc + p4
                        else:
                            p4 = dot6(u2, Sk)
                            dvv[oi + cj * nv + ck] = -p4
                            acc = acc + p4
                        z = z + acc * 0.0
                    bk = m.parent[bk]
            bj = m.parent[bj]
    return z


cdef Py_ssize_t work_size(const KModel* m):
    return m.nb * (BS + MS) + m.nv * CS


cdef object _scratch(Data d):
    """The kernel's scratch, kept in the Data's arrays (made once per Data and size)."""
    cdef Py_ssize_t size = work_size(&d.m)
    s = d.arrays.get("rnea_so")
    if s is None or s.shape[0] != size:
        s = np.zeros(size)
        d.arrays["rnea_so"] = s
    return s


def _second_order_derivatives(Data d, q, qd, qdd, fx=None, out=None):
    cdef KModel* m = &d.m
    cdef bint batch = not (type(q) is np.ndarray and (<cnp.ndarray> q).ndim == 1) \
        and np.ndim(q) == 2
    q, qd, qdd = take_states(m, q, qd, qdd, "qd", "qdd", batch)
    cdef Py_ssize_t nv = m.nv, N = <Py_ssize_t> q.shape[0] if batch else 1, s
    cdef Py_ssize_t n3 = nv * nv * nv
    cdef tuple shape = (4, N, nv, nv, nv)
    if not batch:
        shape = (4, nv, nv, nv)
    if out is None:
        out = np.empty(shape)
    elif not (type(out) is np.ndarray and out.dtype == np.float64 and out.flags.c_contiguous
              and out.flags.writeable and out.shape == shape):
        raise ValueError(f"out must be a writable float64 C-contiguous array of shape {shape}")
    res = fresh_if_alias(out, (q, qd, qdd))
    cdef bint use_fx = fx is not None
    if use_fx:
        if batch:
            raise ValueError("f_ext is not supported with batch inputs")
        load_fx(d, fx, 1)
    scratch = _scratch(d)
    cdef double* work = <double*> cnp.PyArray_DATA(scratch)
    cdef KWork* w = &d.w
    cdef double* pq = <double*> cnp.PyArray_DATA(q)
    cdef double* pv = <double*> cnp.PyArray_DATA(qd)
    cdef double* pa = <double*> cnp.PyArray_DATA(qdd)
    cdef double* po = <double*> cnp.PyArray_DATA(res)
    cdef double z = 0.0
    with nogil:
        for s in range(N):
            load_rows(m, w, pq + s * m.nq, pv + s * nv, pa + s * nv)
            z += second_order(m, w, work, use_fx, po + s * n3, po + (N + s) * n3,
                              po + (2 * N + s) * n3, po + (3 * N + s) * n3)
    if res is not out:
        out[...] = res
    res = (out[0], out[1], out[2], out[3])
    if z != 0.0:      # an entry overflowed: the full check names it (one pass, then raises)
        return finite_result(res, "inverse_dynamics_second_order_derivatives")
    return res


def second_order_derivatives(Data d, q, qd, qdd, fx=None, out=None):
    """(∂²τ/∂q², ∂²τ/∂q̇², ∂²τ/∂q∂q̇, ∂M/∂q), each (nv, nv, nv) with [i, j, k] =
    ∂/∂x_k (∂τ_i/∂y_j), views of one (4, nv, nv, nv) array (``out`` if given); (N, ·) batches give
    (N, nv, nv, nv) views of one (4, N, nv, nv, nv) array. fx: optional body wrenches (1, nb, 6)
    (single samples)."""
    claim(d)
    try:
        return _second_order_derivatives(d, q, qd, qdd, fx, out)
    finally:
        unclaim(d)
