# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Analytic partial derivatives of inverse dynamics, ∂τ/∂q, ∂τ/∂q̇ and M = ∂τ/∂q̈ (seed 000 §6.1),
compiled, O(n) 6×6 work plus O(n·depth) dot products.

Derived for this project in the world frame (spatial twists, angular first), in the spirit of
Carpentier & Mansard (RSS 2018), from the screw-product partials of the spatial Jacobian, seed
000 eq. (16) ``∂S_i/∂q_j = [S_j, S_i]`` (j before i), (17) ``Ṡ_i = [V_i, S_i]`` and the spatial
acceleration (18). Per body k: world twist v_k, acceleration a_k (gravity as the
world's acceleration a_0 = (0, −g)), inertia I_k, momentum h_k = I_k v_k, force
f_k = I_k a_k + v_k ×* h_k; per velocity coordinate j (body b(j), parent body λ): its world screw
S_j, Ψ̇_j = v_λ × S_j, Ψ̈_j = a_λ × S_j + v_λ × Ψ̇_j. Moving coordinate j moves the subtree of b(j)
rigidly, except the parent's motion (v_λ, a_λ): for k in that subtree

    ∂f_k/∂q_j = S_j ×* f_k + I_k Ψ̈_j + 𝔅_k Ψ̇_j,   ∂f_k/∂q̇_j = I_k D_j + 𝔅_k S_j,

with 𝔅_k x = I_k (x × v_k) + x ×* h_k + v_k ×* I_k x = H̄(h_k) x − N_k x − N_kᵀ x
(N_k = I_k ad_{v_k}, H̄(h) x = x ×* h, antisymmetric) and D_j = Ψ̇_j − S_j × v_{b(j)} (= 2Ψ̇_j for
a one-dof joint; v_0 × S_j for the free base, whose own bias term v_0 × v_0 vanishes). Since
τ_i = S_iᵀ F_i (F_i = Σ_{k ⪰ i} f_k) and ∂S_i/∂q_j = S_j × S_i for i in the subtree, the
S_j ×* F_i terms cancel there; with composites I^C, 𝔅^C, F^C and α_i = I^C S_i, β_i = 𝔅^{C T} S_i:

    b(i) in the subtree of b(j) (same body included):
        ∂τ_i/∂q_j = α_i·Ψ̈_j + β_i·Ψ̇_j,   ∂τ_i/∂q̇_j = α_i·D_j + β_i·S_j,   M_ij = α_i·S_j;
    b(i) a strict ancestor of b(j):
        ∂τ_i/∂q_j = S_i·(S_j ×* F^C + I^C Ψ̈_j + 𝔅^C Ψ̇_j),   ∂τ_i/∂q̇_j = S_i·(I^C D_j + 𝔅^C S_j),
        M_ij = S_i·α_j   (composites of b(j)).

A floating base is body 0 with 6 coordinates, its configuration perturbed as Pinocchio does
(C_0 exp(δ), δ = (linear, angular) in the base frame), so its screws are S_r = Ad_{C_0} e_r,
Ψ̇_r = 0 and Ψ̈_r = a_0 × S_r. Every quantity above moves by one constant Ad under a change of
the (inertial) reference frame and the entries are invariant, so with a floating base the kernel
works in the base's own frame at this instant: S_r = e_r, the base pose is the identity and
gravity enters as (0, −R_0ᵀ g) — the frame of the M⁻¹ kernel, which :func:`fd_derivatives`
shares. Rows and columns follow Pinocchio's velocity layout.
"""
import numpy as np
cimport numpy as cnp
from libc.stdint cimport uint64_t


from mbs_dynamics.kernels._data cimport (finite_result, FREE, Data, KModel, KWork, claim,
                                         fresh_if_alias, load_fx, take_states, unclaim)
from mbs_dynamics.kernels._mat6 cimport inertia6
from mbs_dynamics.kernels._minv cimport minv_solve
from mbs_dynamics.kernels._spatial cimport ad_V, base_gravity, cross_force, dot6, load_jet
from mbs_dynamics.kernels._sweep cimport N_apply, body_forces, inertia_apply, sweep_joint

cnp.import_array()

# offsets in a body row of w.dX (96 doubles) and a coordinate row of w.dC (36 doubles); the
# first 61 and 24 are the layouts of kernels/_sweep.pxd (the shared forward sweep)
cdef enum:
    B_POSE = 0      # R (9, row-major), p (3): world pose
    B_V = 12        # world twist
    B_A = 18        # world acceleration (gravity included)
    B_M = 24        # composite mass, h (3), Θ (9, about the world origin)
    B_H = 37        # composite momentum Σ I_k v_k
    B_F = 43        # composite force Σ f_k
    B_N = 49        # composite N + Nᵀ, N = Σ I_k ad_{v_k} (12: S, k of body_N)
    B_END = 61
    C_S = 0
    C_PD = 6        # Ψ̇
    C_D = 12        # D
    C_PDD = 18      # Ψ̈
    C_AL = 24       # α
    C_BE = 30       # β


cdef void derivatives(const KModel* m, KWork* w, double* dq, double* dv, double* M,
                      bint use_fx=False) noexcept nogil:
    """∂τ/∂q, ∂τ/∂q̇, M (nv, nv) each, from q, v, a loaded in the workspace (w.T[0] holds the
    base pose, w.nu the base twist and its rate, w.qj the joint jet). With ``use_fx`` the
    applied body wrenches w.fx (body frames, constant there) enter f_k as −Ad_{C_k}⁻ᵀ W_k: a
    wrench fixed in the body moves with it, so ∂f_k/∂q_j keeps the form S_j ×* f_k above."""
    deriv_forward(m, w, use_fx, False)
    deriv_composites(m, w)
    deriv_entries(m, w, dq, dv, M)


cdef void deriv_forward(const KModel* m, KWork* w, bint use_fx, bint fill_IA) noexcept nogil:
    """The forward pass of :func:`derivatives`: reference-frame poses, twists, accelerations,
    screws, Ψ̇, Ψ̈ and each body's own inertia, momentum, force and N (w.dX, w.dC). The
    reference frame is the world for a fixed base and the floating base's own frame otherwise
    (every quantity is moved by the same constant Ad, so the τ partials are unchanged; gravity
    enters as that frame's acceleration (0, −R₀ᵀ g)). With ``fill_IA`` each body inertia is also
    written as a 6×6 matrix into w.IA (for :func:`minv_solve`)."""
    cdef int nb = m.nb, fb = m.fb, i, a, r, par
    cdef double* X
    cdef double* C
    cdef double ag[6]
    if fb:
        base_gravity(m, w.T, ag)
    else:
        ag[0], ag[1], ag[2] = 0.0, 0.0, 0.0
        ag[3], ag[4], ag[5] = -m.g[0], -m.g[1], -m.g[2]
    for i in range(nb):
        X = w.dX + 96 * i
        par = m.parent[i]
        if m.jtype[i] == FREE:
            for a in range(12):
                X[B_POSE + a] = 1.0 if a in (0, 4, 8) else 0.0
            for a in range(6):
                X[B_V + a] = w.nu[a]
                X[B_A + a] = w.nu[6 + a] + ag[a]
            for r in range(6):
                C = w.dC + 36 * r
                for a in range(6):
                    C[C_S + a] = 0.0
                    C[C_PD + a] = 0.0
                C[C_S + (3 + r if r < 3 else r - 3)] = 1.0   # (linear, angular) order
                ad_V(X + B_V, C + C_S, C + C_D)      # D = v_0 × S
                ad_V(ag, C + C_S, C + C_PDD)         # Ψ̈ = a_0 × S
        else:
            sweep_joint(m, w, i, X, w.dX + 96 * par if par >= 0 else NULL,
                        w.dC + 36 * (i + 5 * fb), ag)
        body_forces(m, w, i, X, use_fx)
        if fill_IA:
            inertia6(X[B_M], X + B_M + 1, X + B_M + 4, w.IA + 36 * i)


cdef void deriv_composites(const KModel* m, KWork* w) noexcept nogil:
    """The backward pass of :func:`derivatives`: subtree composites of (I, h, f, N) in place,
    then α = I^C S and β = 𝔅^{Cᵀ} S per velocity coordinate."""
    cdef int nb = m.nb, nv = m.nv, fb = m.fb, i, a, par, ci, bi
    cdef double* X
    cdef double* Xp
    cdef double* C
    cdef double t1[6]
    for i in range(nb - 1, 0, -1):
        par = m.parent[i]
        if par < 0:
            continue
        X = w.dX + 96 * i
        Xp = w.dX + 96 * par
        for a in range(B_M, B_END):
            Xp[a] += X[a]
    for ci in range(nv):
        bi = 0 if ci < 6 * fb else ci - 5 * fb
        X = w.dX + 96 * bi
        C = w.dC + 36 * ci
        inertia_apply(X + B_M, C + C_S, C + C_AL)
        N_apply(X + B_N, C + C_S, t1)
        for a in range(6):
            C[C_BE + a] = -t1[a]
        cross_force(C + C_S, X + B_H, C + C_BE, -1.0)   # H̄ᵀ S = −S ×* h


cdef void deriv_entries(const KModel* m, KWork* w, double* dq, double* dv,
                        double* M) noexcept nogil:
    """The entries of :func:`derivatives` (M skipped when NULL); entries of unrelated bodies
    are not written."""
    cdef int nv = m.nv, fb = m.fb, a, b, c, r, ci, cj, bi
    cdef double* X
    cdef double* C
    cdef double* Cj
    cdef double t1[6]
    cdef double gq[6]
    cdef double gv[6]
    for ci in range(nv):
        bi = 0 if ci < 6 * fb else ci - 5 * fb
        X = w.dX + 96 * bi
        C = w.dC + 36 * ci
        # g_q = S ×* F^C + I^C Ψ̈ + 𝔅^C Ψ̇,  g_v = I^C D + 𝔅^C S  (𝔅 x = x ×* h − N x − Nᵀ x)
        inertia_apply(X + B_M, C + C_PDD, gq)
        cross_force(C + C_S, X + B_F, gq, 1.0)
        N_apply(X + B_N, C + C_PD, t1)
        for a in range(6):
            gq[a] -= t1[a]
        cross_force(C + C_PD, X + B_H, gq, 1.0)
        inertia_apply(X + B_M, C + C_D, gv)
        N_apply(X + B_N, C + C_S, t1)
        for a in range(6):
            gv[a] -= t1[a]
        cross_force(C + C_S, X + B_H, gv, 1.0)
        # walk the ancestors of body bi (itself included)
        b = bi
        while b >= 0:
            if m.jtype[b] == FREE:
                c, r = 0, 6
            else:
                c, r = b + 5 * fb, b + 5 * fb + 1
            for cj in range(c, r):
                Cj = w.dC + 36 * cj
                # row ci in the subtree of column cj's body
                dq[ci * nv + cj] = dot6(C + C_AL, Cj + C_PDD) + dot6(C + C_BE, Cj + C_PD)
                dv[ci * nv + cj] = dot6(C + C_AL, Cj + C_D) + dot6(C + C_BE, Cj + C_S)
                if M != NULL:
                    M[ci * nv + cj] = dot6(C + C_AL, Cj + C_S)
                if b != bi:  # row cj: a strict ancestor
                    dq[cj * nv + ci] = dot6(Cj + C_S, gq)
                    dv[cj * nv + ci] = dot6(Cj + C_S, gv)
                    if M != NULL:
                        M[cj * nv + ci] = M[ci * nv + cj]
            b = m.parent[b]


def _inverse_dynamics_derivatives(Data d, q, qd, qdd, out=None):
    """(∂τ/∂q, ∂τ/∂q̇, M), each (nv, nv), views of one (3, nv, nv) array (``out`` if given); for
    (N, ·) batches each (N, nv, nv), views of one (3, N, nv, nv) array."""
    cdef KModel* m = &d.m
    cdef bint batch = not (type(q) is np.ndarray and (<cnp.ndarray> q).ndim == 1) \
        and np.ndim(q) == 2
    q, qd, qdd = take_states(m, q, qd, qdd, "qd", "qdd", batch)
    cdef Py_ssize_t nv = m.nv, N = <Py_ssize_t> q.shape[0] if batch else 1, s, nn = nv * nv
    cdef tuple shape = (3, N, nv, nv)
    if not batch:
        shape = (3, nv, nv)
    if out is None:
        out = np.zeros(shape)
    elif not (type(out) is np.ndarray and out.dtype == np.float64 and out.flags.c_contiguous
              and out.flags.writeable and out.shape == shape):
        raise ValueError(f"out must be a writable float64 C-contiguous array of shape {shape}")
    else:
        out[...] = 0.0
    cdef KWork* w = &d.w
    cdef double* pq = <double*> cnp.PyArray_DATA(q)
    cdef double* pv = <double*> cnp.PyArray_DATA(qd)
    cdef double* pa = <double*> cnp.PyArray_DATA(qdd)
    cdef double* po = <double*> cnp.PyArray_DATA(out)
    with nogil:
        for s in range(N):
            load_jet(m, w, pq + s * m.nq, pv + s * nv, 1)
            load_acc(m, w, pa + s * nv)
            derivatives(m, w, po + s * nn, po + (N + s) * nn, po + (2 * N + s) * nn)
    return out[0], out[1], out[2]


cdef void load_acc(const KModel* m, KWork* w, const double* pa) noexcept nogil:
    """q̈ (nv,) into the workspace: ν̇ (row 1 of ν, angular first) and the joints' row 2."""
    cdef int b
    if m.fb:
        w.nu[6], w.nu[7], w.nu[8] = pa[3], pa[4], pa[5]
        w.nu[9], w.nu[10], w.nu[11] = pa[0], pa[1], pa[2]
        for b in range(1, m.nb):
            w.qj[2 * m.nb + b] = pa[5 + b]
    else:
        for b in range(m.nb):
            w.qj[2 * m.nb + b] = pa[b]


cdef extern from *:
    """
    /* C = -A B for n x n row-major A (symmetric: M^-1), B, C, where row l of B is zero from
       column e(l) = last[b(l)] + 5 fb + 1 on (b(l) = 0 for l < 6 fb, else l - 5 fb; `last` the
       subtree ends of the bodies). A 4 x 4 block of C is summed in registers over l (rows l
       with e(l) <= the block's first column, or zero in the block's four columns — the
       structural zeros of unrelated bodies — skipped); A's symmetry gives its column i..i+3 as
       the contiguous A[l, i..i+3]. Tails by plain loops. Compiled for AVX2 and the baseline
       (GCC's target_clones, picked at load time; other compilers: the baseline); with
       -ffp-contract=off both do the same operations in the same order (the same numbers). */
    #if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
    #define FDD_CLONES __attribute__((target_clones("avx2", "default")))
    #else
    #define FDD_CLONES
    #endif
    FDD_CLONES static void fdd_neg_product(long n, const double* __restrict__ A,
                                const double* __restrict__ B1, const double* __restrict__ B2,
                                double* __restrict__ C1, double* __restrict__ C2,
                                const double* last, int fb) {
        /* C1 = -A B1 and C2 = -A B2 at once (B1, B2 share the zero structure): each row of A
           loaded once for both */
        long i, j, l, r, s, k;
        #define FDD_E(l) ((long) last[(l) < 6 * fb ? 0 : (l) - 5 * fb] + 5 * fb + 1)
        for (i = 0; i + 4 <= n; i += 4) {
            for (j = 0; j + 4 <= n; j += 4) {
                double acc[16] = {0.0}, acd[16] = {0.0};
                for (l = 0; l < n; l++) {
                    if (FDD_E(l) <= j) continue;
                    const double* __restrict__ b = B1 + l * n + j;
                    const double* __restrict__ d = B2 + l * n + j;
                    const double* __restrict__ a = A + l * n + i;
                    for (r = 0; r < 4; r++)
                        for (s = 0; s < 4; s++) {
                            acc[4 * r + s] += a[r] * b[s];
                            acd[4 * r + s] += a[r] * d[s];
                        }
                }
                for (r = 0; r < 4; r++)
                    for (s = 0; s < 4; s++) {
                        C1[(i + r) * n + j + s] = -acc[4 * r + s];
                        C2[(i + r) * n + j + s] = -acd[4 * r + s];
                    }
            }
            for (; j < n; j++) {
                double acc[4] = {0.0}, acd[4] = {0.0};
                for (l = 0; l < n; l++) {
                    const double x = B1[l * n + j], y = B2[l * n + j];
                    for (r = 0; r < 4; r++) {
                        acc[r] += A[l * n + i + r] * x;
                        acd[r] += A[l * n + i + r] * y;
                    }
                }
                for (r = 0; r < 4; r++) {
                    C1[(i + r) * n + j] = -acc[r];
                    C2[(i + r) * n + j] = -acd[r];
                }
            }
        }
        for (; i < n; i++) {
            for (k = 0; k < 2; k++) {
                const double* __restrict__ B = k ? B2 : B1;
                double* __restrict__ C = k ? C2 : C1;
                for (j = 0; j < n; j++) C[i * n + j] = 0.0;
                for (l = 0; l < n; l++) {
                    const double a0 = -A[l * n + i];
                    const double* __restrict__ b = B + l * n;
                    const long e = FDD_E(l);
                    for (j = 0; j < e; j++) C[i * n + j] += a0 * b[j];
                }
            }
        }
        #undef FDD_E
    }
    """
    void fdd_neg_product(long n, const double* A, const double* B1, const double* B2,
                         double* C1, double* C2, const double* last, int fb) noexcept nogil


cdef int fd_derivatives(const KModel* m, KWork* w, const double* q, const double* v,
                        const double* tau, bint use_fx, double* F, double* P, double* dq,
                        double* dv, double* Mi) noexcept nogil:
    """∂q̈/∂q, ∂q̈/∂q̇ and M⁻¹ (nv × nv each) at one sample, in one pass over the tree
    (Carpentier & Mansard, RSS 2018, eq. 7: differentiate ID(q, q̇, FD(q, q̇, τ)) = τ, so
    ``∂q̈/∂x = −M⁻¹ ∂τ/∂x`` at (q, q̇, q̈)):

    1. the forward pass of :func:`derivatives` at q̈ = 0 (poses, twists, screws, inertias, all
       in one reference frame) and the composites;
    2. M⁻¹ by the articulated-body route from the same screws and body inertias
       (:func:`mbs_dynamics.kernels._minv.minv_solve`, no M formed);
    3. the bias b_c = S_c·F^C (τ at q̈ = 0) and q̈ = M⁻¹ (τ − b) — no separate ABA;
    4. q̈'s terms added to what depends on it: the accelerations Δa_i = Δa_λ + S_i q̈_i,
       Ψ̈_j += Δa_λ × S_j and the composite forces ΔF^C_k = Σ_{i ⪰ k} I_i Δa_i
       = I^C_k Δa_λ(k) + Σ_{c in the subtree} α_c q̈_c (α_c = I^C S_c of the composites);
    5. the entries of ∂τ/∂q, ∂τ/∂q̇ (:func:`deriv_entries`, M not formed), then the product
       −M⁻¹ ∂τ/∂x, skipping the columns of ∂τ/∂x that are zero by the tree's structure (row l
       vanishes beyond the end of its body's subtree).

    P: (3, nv, nv) scratch, F: the ``Fs`` scratch. 1 if singular."""
    cdef long nv = m.nv, nn = nv * nv
    cdef int nb = m.nb, fb = m.fb, i, a, r, ci, bi, par
    cdef double* qdd = P + 2 * nn
    cdef double* rhs = qdd + nv
    cdef double* last = F + (nb + 1) * 6 * nv   # minv_solve's subtree ends
    cdef double* X
    cdef double* C
    cdef double* G
    cdef double* da
    cdef double* dal
    cdef double x
    cdef double t1[6]
    load_jet(m, w, q, v, 1)
    for a in range(6):
        w.nu[6 + a] = 0.0
    for i in range(nb):
        w.qj[2 * nb + i] = 0.0
    deriv_forward(m, w, use_fx, True)
    if minv_solve(m, w, F, Mi, w.dC + C_S, 36) == 1:  # (2, overflow: the caller's check)
        return 1
    deriv_composites(m, w)
    for ci in range(nv):
        bi = 0 if ci < 6 * fb else ci - 5 * fb
        rhs[ci] = tau[ci] - dot6(w.dC + 36 * ci + C_S, w.dX + 96 * bi + B_F)
    for i in range(nv):
        x = 0.0
        for a in range(nv):
            x += Mi[i * nv + a] * rhs[a]
        qdd[i] = x
    # q̈'s terms: accelerations, Ψ̈, composite forces
    for i in range(nb):
        da = w.A + 6 * i
        if m.jtype[i] == FREE:
            for a in range(6):
                da[a] = 0.0
            for r in range(6):
                C = w.dC + 36 * r + C_S
                for a in range(6):
                    da[a] += C[a] * qdd[r]
            continue
        ci = i + 5 * fb
        C = w.dC + 36 * ci
        par = m.parent[i]
        if par >= 0:
            dal = w.A + 6 * par
            ad_V(dal, C + C_S, t1)
            for a in range(6):
                C[C_PDD + a] += t1[a]
                da[a] = dal[a] + C[C_S + a] * qdd[ci]
        else:
            for a in range(6):
                da[a] = C[C_S + a] * qdd[ci]
    for a in range(6 * nb):
        w.P[a] = 0.0
    for ci in range(nv):
        bi = 0 if ci < 6 * fb else ci - 5 * fb
        G = w.P + 6 * bi
        C = w.dC + 36 * ci + C_AL
        for a in range(6):
            G[a] += C[a] * qdd[ci]
    for i in range(nb - 1, -1, -1):
        X = w.dX + 96 * i
        G = w.P + 6 * i
        par = m.parent[i]
        for a in range(6):
            X[B_F + a] += G[a]
        if par >= 0:
            inertia_apply(X + B_M, w.A + 6 * par, t1)
            for a in range(6):
                X[B_F + a] += t1[a]
                w.P[6 * par + a] += G[a]
    for i in range(2 * nn):
        P[i] = 0.0  # entries of unrelated bodies stay 0
    deriv_entries(m, w, P, P + nn, NULL)
    fdd_neg_product(nv, Mi, P, P + nn, dq, dv, last, fb)
    return 0


cdef inline bint all_finite(const double* p, Py_ssize_t n) noexcept nogil:
    """Every p[0 … n) finite (branch-free over the exponent bits, as ``finite_result``)."""
    cdef const uint64_t* u = <const uint64_t*> p
    cdef uint64_t acc = 0
    cdef Py_ssize_t i
    for i in range(n):
        acc |= (u[i] & <uint64_t> 0x7FF0000000000000ULL) + <uint64_t> 0x0010000000000000ULL
    return not (acc >> 63)


cdef inline object view_of(cnp.ndarray base, int nd, cnp.npy_intp* dims, double* p):
    """A C-contiguous float64 view of ``base``'s memory at p (as ``base[k]``, without NumPy's
    index parsing)."""
    cdef cnp.ndarray v = cnp.PyArray_SimpleNewFromData(nd, dims, cnp.NPY_DOUBLE, p)
    cnp.set_array_base(v, base)
    return v


cdef object _forward_dynamics_derivatives(Data d, q, qd, tau, fx, out):
    """(∂q̈/∂q, ∂q̈/∂q̇, M⁻¹), each (nv, nv), views of one (3, nv, nv) array (``out`` if given);
    for (N, ·) batches each (N, nv, nv), views of one (3, N, nv, nv) array. Checked finite."""
    cdef KModel* m = &d.m
    cdef bint batch = not (type(q) is np.ndarray and (<cnp.ndarray> q).ndim == 1) \
        and np.ndim(q) == 2
    q, qd, tau = take_states(m, q, qd, tau, "qd", "tau", batch)
    cdef Py_ssize_t nv = m.nv, N = <Py_ssize_t> q.shape[0] if batch else 1, s, nn = nv * nv
    cdef cnp.npy_intp dims[4]
    dims[0], dims[1], dims[2], dims[3] = 3, N, nv, nv
    cdef int nd = 4 if batch else 3
    if not batch:
        dims[1] = nv
    cdef tuple shape
    if out is None:
        out = cnp.PyArray_EMPTY(nd, dims, cnp.NPY_DOUBLE, 0)
        res = out
    else:
        shape = (3, N, nv, nv)
        if not batch:
            shape = (3, nv, nv)
        if not (type(out) is np.ndarray and out.dtype == np.float64 and out.flags.c_contiguous
                and out.flags.writeable and out.shape == shape):
            raise ValueError(f"out must be a writable float64 C-contiguous array of shape {shape}")
        res = fresh_if_alias(out, (q, qd, tau))
    cdef bint use_fx = fx is not None
    if use_fx:
        load_fx(d, fx, 1)
    cdef KWork* w = &d.w
    cdef double* F = <double*> cnp.PyArray_DATA(d.arrays["Fs"])
    cdef double* P = <double*> cnp.PyArray_DATA(d.arrays["dP"])
    cdef double* pq = <double*> cnp.PyArray_DATA(q)
    cdef double* pv = <double*> cnp.PyArray_DATA(qd)
    cdef double* pt = <double*> cnp.PyArray_DATA(tau)
    cdef double* po = <double*> cnp.PyArray_DATA(res)
    cdef int err = 0
    cdef bint ok
    if not batch:  # a single sample: no GIL round trip
        err = fd_derivatives(m, w, pq, pv, pt, use_fx, F, P, po, po + nn, po + 2 * nn)
    else:
        with nogil:
            for s in range(N):
                if fd_derivatives(m, w, pq + s * m.nq, pv + s * nv, pt + s * nv, use_fx, F, P,
                                  po + s * nn, po + (N + s) * nn, po + (2 * N + s) * nn):
                    err = 1
                    break
    if err:
        raise ValueError("forward dynamics is singular: a movable joint moves no mass (check the "
                         "inertial parameters)")
    with nogil:
        ok = all_finite(po, 3 * N * nn)
    if not ok:  # finite_result's message
        finite_result(res, "forward_dynamics_derivatives")
    if res is not out:
        out[...] = res
    po = <double*> cnp.PyArray_DATA(out)
    return (view_of(out, nd - 1, dims + 1, po), view_of(out, nd - 1, dims + 1, po + N * nn),
            view_of(out, nd - 1, dims + 1, po + 2 * N * nn))


# the public entries take the Data's owner flag (one thread at a time, kernels/_data.pyx)

def inverse_dynamics_derivatives(Data d, q, qd, qdd, out=None):
    """(∂τ/∂q, ∂τ/∂q̇, M), each (nv, nv), views of one (3, nv, nv) array (``out`` if given); for
    (N, ·) batches each (N, nv, nv), views of one (3, N, nv, nv) array."""
    claim(d)
    try:
        return finite_result(_inverse_dynamics_derivatives(d, q, qd, qdd, out), "inverse_dynamics_derivatives")
    finally:
        unclaim(d)


def forward_dynamics_derivatives(Data d, q, qd, tau, fx=None, out=None):
    """(∂q̈/∂q, ∂q̈/∂q̇, M⁻¹), each (nv, nv) (or (N, nv, nv) for batches): one pass over the
    tree per sample, q̈ = M⁻¹(τ − b) and ``∂q̈/∂x = −M⁻¹ ∂τ/∂x`` at (q, q̇, q̈)
    (:func:`fd_derivatives`); fx: optional body wrenches (1, nb, 6) (single samples)."""
    claim(d)
    try:
        return _forward_dynamics_derivatives(d, q, qd, tau, fx, out)
    finally:
        unclaim(d)
