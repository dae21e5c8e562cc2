# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Recursive inverse dynamics (RNEA) and its time derivatives of any order, compiled.

Forward (seed 000 eq. 67, differentiated, doc/math.md "Recursive time derivatives of any order"):
``u_l = T_i V_λ^(l)``, ``V_i^(k) = Σ_m binom(k,m) Φ_m u_{k−m} + X_i q_i^(k+1)`` with
``Φ_m = Σ_j c[m][j] ad_{X_i}^j`` (complete Bell polynomials of ``−q_i^(l) ad_{X_i}``). Backward
(eq. 68): ``F^(k) = M V^(k+1) − Σ_m binom(k,m) ad_{V^(m)}ᵀ M V^(k−m)``,
``W^(k) = Σ_children S^(k) + F^(k) − W^app(k)``, ``Q^(k) = X_iᵀ W^(k)``,
``S^(k) = T_iᵀ Σ_m binom(k,m) Φ_mᵀ W^(k−m)``. Gravity enters as a base acceleration: the world
has ``V^(1) = (0, −g)`` and every other derivative zero.

Floating base (body 0, a free joint with body-fixed twist ν): the world moves with the constant
acceleration ``(0, −g)`` (at rest at the instant), so by Leibniz ``V_0^(k) = ν^(k) + k γ^(k−1)``
with ``γ = Ad_{C_0⁻¹}(0, −g)``, gravity seen from the moving base: ``γ′ = −ad_ν γ``, so
``γ^(j) = −Σ_{m<j} binom(j−1,m) ad_{ν^(m)} γ^(j−1−m)``; the base's output is its whole wrench
``W_0^(k)`` (Pinocchio's free-flyer order: force, then moment).

All functions write into the :class:`~mbs_dynamics._data.Data` workspace and allocate nothing.
"""
import numpy as np
cimport numpy as cnp
from cython.parallel cimport prange
cimport openmp

from mbs_dynamics.kernels._data cimport (finite_result, FREE, REVOLUTE, Data, KModel, KWork, alias3, claim,
                                 unclaim, as_input, as_out,
                                 check_finite, check_quat, fresh_if_alias, load_fx, out_vec,
                                 take_states, vec)
from mbs_dynamics.kernels._spatial cimport (ad_V, ad_X, add_adT, add_to_parent, add_X, axpy6,
                                            base_gravity, bell, copy6, inertia_times, joint_pose,
                                            load_jet, load_rows, phi_small, phi_sum, to_child,
                                            X_dot, zero6)

cnp.import_array()

cdef extern from "_soa.h":
    enum: MBS_L
    ctypedef struct mbs_soa_model:
        int nb
        const int* parent
        const int* jtype
        const double* axis
        const double* BR
        const double* Bp
        const double* BE1
        const double* BE2
        const double* BRe
        const double* mass
        const double* h
        const double* Th
        double g[3]
    long mbs_soa_rnea_batch_size(int nb) noexcept nogil
    void mbs_soa_rnea_batch(const mbs_soa_model* m, double* work, long N, const double* q,
                            const double* v, const double* a, double* out) noexcept nogil
    long mbs_soa_jet2_batch_size(int nb) noexcept nogil
    void mbs_soa_jet2_batch(const mbs_soa_model* m, double* work, long N, const double* q,
                            long sq, const double* v, long sv, double* out) noexcept nogil


cdef inline Py_ssize_t block_samples(Py_ssize_t N) noexcept nogil:
    """How many of N samples the block kernels take: all, or all but a last partial block of
    fewer than SOA_MIN_N samples (those go one by one); 0 below SOA_MIN_N."""
    cdef Py_ssize_t r = N % MBS_L
    if N < SOA_MIN_N:
        return 0
    return N - r if r < SOA_MIN_N else N


cdef inline double* aligned64(double* p) noexcept nogil:
    """The first 64-byte boundary at or after p (p from an array of at least 8 more doubles): the
    block kernels' rows are whole cache lines, so no AVX-512 load or store splits one."""
    return <double*> ((<size_t> p + 63) & ~(<size_t> 63))


cdef void soa_view(const KModel* m, mbs_soa_model* v) noexcept nogil:
    """The model as the block kernels of _soa.h see it (fixed base)."""
    v.nb = m.nb
    v.parent, v.jtype, v.axis = m.parent, m.jtype, m.axis
    v.BR, v.Bp, v.BE1, v.BE2, v.BRe = m.BR, m.Bp, m.BE1, m.BE2, m.BRe
    v.mass, v.h, v.Th = m.mass, m.h, m.Th
    v.g[0], v.g[1], v.g[2] = m.g[0], m.g[1], m.g[2]

# A batch goes parallel only when each thread gets at least this much work, in joint-samples ×
# derivative rows: waking OpenMP workers costs ~10 µs on an idle machine but milliseconds when the
# other cores are busy (measured on a loaded 2-core machine: 8 ms for N = 100), so only batches
# that take milliseconds themselves are split.
cdef enum:
    PARALLEL_WORK = 20000
    # Fewer samples than this take the one-sample kernels: a block computes all MBS_L = 32 lanes,
    # so below ~10 samples it costs more than the samples one by one (Panda: a block 5.8 µs, one
    # sample 0.5 µs; the numbers are the same bit for bit). The same holds for the last,
    # partial block of a batch: fewer than SOA_MIN_N samples left go one by one.
    SOA_MIN_N = 12


# ---------------------------------------------------------------------------------------------
# loading states into the workspace
# ---------------------------------------------------------------------------------------------
cdef inline void store_base(const double* W, double* out) noexcept nogil:
    """A base wrench (m, f) into Pinocchio's free-flyer order (f, m)."""
    out[0] = W[3]
    out[1] = W[4]
    out[2] = W[5]
    out[3] = W[0]
    out[4] = W[1]
    out[5] = W[2]


# ---------------------------------------------------------------------------------------------
# τ = ID(q, q̇, q̈): the K = 0 recursion with its sums written out (the hot path)
# ---------------------------------------------------------------------------------------------
cdef void forward0(const KModel* m, KWork* w) noexcept nogil:
    """The forward pass of seed 000 eq. 67: T_i, V_i (row 0 of w.V) and V̇_i with gravity as a
    base acceleration (row 1). Shared with the regressor (identification/_regressor.pyx)."""
    cdef int nb = m.nb, i, par
    cdef double* T
    cdef double* V
    cdef double* A
    cdef double* s = w.S
    cdef double qd
    for i in range(nb):
        par = m.parent[i]
        T = w.T + 12 * i
        V = w.V + 6 * i
        A = w.V + 6 * (nb + i)
        if m.jtype[i] == FREE:
            copy6(w.nu, V)
            base_gravity(m, T, A)
            axpy6(1.0, w.nu + 6, A)
            continue
        joint_pose(m, i, w.qj[i], T)
        qd = w.qj[nb + i]
        if par >= 0:
            to_child(T, w.V + 6 * par, V)
            to_child(T, w.V + 6 * (nb + par), A)
            # V̇ = T V̇_λ − q̇ ad_X (T V_λ) + X q̈
            ad_X(m, i, V, s, False)
            axpy6(-qd, s, A)
        else:
            zero6(V)
            base_gravity(m, T, A)
        add_X(m, i, qd, V)
        add_X(m, i, w.qj[2 * nb + i], A)


cdef void rnea0(const KModel* m, KWork* w, bint use_fx, double* out) noexcept nogil:
    cdef int nb = m.nb, i, par, a
    cdef double* T
    cdef double* V
    cdef double* A
    cdef double* Wi
    cdef double* s = w.S
    cdef double qd
    forward0(m, w)
    for i in range(nb):
        zero6(w.W + 6 * i)
    for i in range(nb - 1, -1, -1):
        V = w.V + 6 * i
        Wi = w.W + 6 * i
        # W = Σ children + M V̇ − ad_Vᵀ M V − W^app
        inertia_times(m, i, w.V + 6 * (nb + i), s)
        axpy6(1.0, s, Wi)
        inertia_times(m, i, V, s)
        add_adT(V, s, Wi, 1.0)
        if use_fx:
            axpy6(-1.0, w.fx + 6 * i, Wi)
        if m.jtype[i] == FREE:
            store_base(Wi, out)
        else:
            out[i + 5 * m.fb] = X_dot(m, i, Wi)
        par = m.parent[i]
        if par >= 0:
            add_to_parent(w.T + 12 * i, Wi, w.W + 6 * par)


# ---------------------------------------------------------------------------------------------
# τ^(k), k = 0..K: the general recursion
# ---------------------------------------------------------------------------------------------
cdef void rnea_jet(const KModel* m, KWork* w, int K, bint use_fx, double* out) noexcept nogil:
    """τ^(k) into out (K+1, nv) from qj (K+3 rows), ν (K+2 rows), fx (K+1 rows) in ``w``."""
    cdef int nb = m.nb, nv = m.nv, K1 = K + 1, s = w.kmax + 2, nbn = w.kmax + 3
    cdef int i, par, k, l, j, mm
    cdef bint small
    cdef double q1 = 0.0, q2 = 0.0, q3 = 0.0
    cdef double* T
    cdef double* Vk
    cdef double* Wk
    cdef double* g
    # ---- the base: gravity jet γ^(j) and V_0^(k) = ν^(k) + γ^(k−1)
    if m.fb:
        base_gravity(m, w.T, w.gam)
        for j in range(1, K1):
            g = w.gam + 6 * j
            zero6(g)
            for mm in range(j):
                ad_V(w.nu + 6 * mm, w.gam + 6 * (j - 1 - mm), w.S)
                axpy6(-w.binom[(j - 1) * nbn + mm], w.S, g)
        for k in range(K1 + 1):
            Vk = w.V + 6 * (k * nb)
            copy6(w.nu + 6 * k, Vk)
            if k >= 1:
                axpy6(<double> k, w.gam + 6 * (k - 1), Vk)
    # ---- forward pass
    for i in range(m.fb, nb):
        par = m.parent[i]
        T = w.T + 12 * i
        joint_pose(m, i, w.qj[i], T)
        small = K1 <= 3
        if small:
            q1 = w.qj[nb + i]
            q2 = w.qj[2 * nb + i] if K1 >= 2 else 0.0
            q3 = w.qj[3 * nb + i] if K1 >= 3 else 0.0
        else:
            bell(m, w, i, K1)
        # Au[l][0] = u_l = T_i V_λ^(l); the world: V^(1) = (0, −g), the rest 0
        for l in range(K1 + 1):
            if par >= 0:
                to_child(T, w.V + 6 * (l * nb + par), w.Au + 6 * (l * s))
            elif l == 1:
                base_gravity(m, T, w.Au + 6 * s)
            else:
                zero6(w.Au + 6 * (l * s))
        for l in range(K1 + 1):
            for j in range(1, K1 - l + 1):
                ad_X(m, i, w.Au + 6 * (l * s + j - 1), w.Au + 6 * (l * s + j), False)
        for k in range(K1 + 1):
            Vk = w.V + 6 * (k * nb + i)
            copy6(w.Au + 6 * (k * s), Vk)
            if small:
                phi_small(w, k, q1, q2, q3, Vk)
            else:
                phi_sum(w, k, Vk)
            add_X(m, i, w.qj[(k + 1) * nb + i], Vk)
    # ---- backward pass
    for k in range(K1):
        for i in range(nb):
            zero6(w.W + 6 * (k * nb + i))
    for i in range(nb - 1, -1, -1):
        par = m.parent[i]
        for k in range(K1 + 1):
            inertia_times(m, i, w.V + 6 * (k * nb + i), w.MV + 6 * k)
        for k in range(K1):
            Wk = w.W + 6 * (k * nb + i)
            axpy6(1.0, w.MV + 6 * (k + 1), Wk)
            for mm in range(k + 1):
                add_adT(w.V + 6 * (mm * nb + i), w.MV + 6 * (k - mm), Wk, w.binom[k * nbn + mm])
            if use_fx:
                axpy6(-1.0, w.fx + 6 * (k * nb + i), Wk)
            if m.jtype[i] == FREE:
                store_base(Wk, out + k * nv)
            else:
                out[k * nv + i + 5 * m.fb] = X_dot(m, i, Wk)
        if par < 0:
            continue
        T = w.T + 12 * i
        # S^(k) = T_iᵀ Σ_m binom(k,m) Φ_mᵀ W^(k−m), with Au[l][j] = (ad_Xᵀ)^j W^(l)
        small = K <= 3
        if small:
            q1 = w.qj[nb + i]
            q2 = w.qj[2 * nb + i] if K >= 2 else 0.0
            q3 = w.qj[3 * nb + i] if K >= 3 else 0.0
        else:
            bell(m, w, i, K)
        for l in range(K1):
            copy6(w.W + 6 * (l * nb + i), w.Au + 6 * (l * s))
            for j in range(1, K - l + 1):
                ad_X(m, i, w.Au + 6 * (l * s + j - 1), w.Au + 6 * (l * s + j), True)
        for k in range(K1):
            copy6(w.Au + 6 * (k * s), w.S)
            if small:
                phi_small(w, k, q1, q2, q3, w.S)
            else:
                phi_sum(w, k, w.S)
            add_to_parent(T, w.S, w.W + 6 * (k * nb + par))


# ---------------------------------------------------------------------------------------------
# Q_grav = Jᵀ𝖬UG (seed 004 eq. 25–26)
# ---------------------------------------------------------------------------------------------
cdef void gravity0(const KModel* m, KWork* w, double* out) noexcept nogil:
    """UG forward (a_i = T_i a_λ, a_0 = (0, −g)), Jᵀ backward (P_λ += T_iᵀ P_i, P_i ⊇ M_i a_i)."""
    cdef int nb = m.nb, i, par
    cdef double* T
    for i in range(nb):
        par = m.parent[i]
        T = w.T + 12 * i
        if m.jtype[i] != FREE:
            joint_pose(m, i, w.qj[i], T)
        if par >= 0:
            to_child(T, w.V + 6 * par, w.V + 6 * i)
        else:
            base_gravity(m, T, w.V + 6 * i)
        inertia_times(m, i, w.V + 6 * i, w.P + 6 * i)
    for i in range(nb - 1, -1, -1):
        if m.jtype[i] == FREE:
            store_base(w.P, out)
        else:
            out[i + 5 * m.fb] = X_dot(m, i, w.P + 6 * i)
        par = m.parent[i]
        if par >= 0:
            add_to_parent(w.T + 12 * i, w.P + 6 * i, w.P + 6 * par)


# ---------------------------------------------------------------------------------------------
# public entries (called by mbs_dynamics.robot after its own argument handling)
# ---------------------------------------------------------------------------------------------
cdef inline int _threads(Py_ssize_t N, int n, int rows) noexcept:
    """Threads for N samples of n joints and ``rows`` derivative orders (1 for τ)."""
    cdef Py_ssize_t work = N * n * rows
    return max(1, min(openmp.omp_get_max_threads(), <int> (work // PARALLEL_WORK)))


cdef object _inverse_dynamics(Data d, q, qd, qdd, fx, out):
    """τ (nv,) = ID(q, v, a) with optional body wrenches fx (nb, 6) (or None)."""
    cdef KModel* m = &d.m
    q, qd, qdd = take_states(m, q, qd, qdd, "qd", "qdd", False)
    out = out_vec(out, m.nv)
    cdef bint use_fx = fx is not None
    cdef KWork* w = &d.w
    cdef int b
    cdef double* f
    if use_fx:
        load_fx(d, fx, 1)
    load_jet(m, w, <double*> cnp.PyArray_DATA(q), <double*> cnp.PyArray_DATA(qd), 1)
    # q̈ as the second velocity-level row
    f = <double*> cnp.PyArray_DATA(qdd)
    if m.fb:
        w.nu[6], w.nu[7], w.nu[8] = f[3], f[4], f[5]
        w.nu[9], w.nu[10], w.nu[11] = f[0], f[1], f[2]
        for b in range(1, m.nb):
            w.qj[2 * m.nb + b] = f[5 + b]
    else:
        for b in range(m.nb):
            w.qj[2 * m.nb + b] = f[b]
    res = alias3(out, q, qd, qdd)
    rnea0(m, w, use_fx, <double*> cnp.PyArray_DATA(res))
    if res is not out:
        out[...] = res
    return out


cdef object _inverse_dynamics_batch(Data d, q, qd, qdd, out):
    """τ (N, nv) for N states q (N, nq), v, a (N, nv), split over the OpenMP threads. A fixed
    base runs the block kernel of _soa.h (MBS_L samples per pass, SIMD across samples)."""
    cdef KModel* m = &d.m
    q, qd, qdd = take_states(m, q, qd, qdd, "qd", "qdd", True)
    cdef Py_ssize_t N = q.shape[0]
    out = as_out(out, "out", (N, m.nv))
    res = fresh_if_alias(out, (q, qd, qdd))
    cdef double* pq = <double*> cnp.PyArray_DATA(q)
    cdef double* pv = <double*> cnp.PyArray_DATA(qd)
    cdef double* pa = <double*> cnp.PyArray_DATA(qdd)
    cdef double* po = <double*> cnp.PyArray_DATA(res)
    cdef int T = _threads(N, m.nb, 1), t
    cdef Py_ssize_t s, s0, s1
    cdef KWork* ws
    cdef int nq = m.nq, nv = m.nv
    cdef mbs_soa_model sm
    cdef long wsize
    cdef double* pw
    cdef Py_ssize_t Nb = block_samples(N)
    if not m.fb and Nb > 0:  # the block kernel of _soa.h on [0, Nb), the rest one by one
        soa_view(m, &sm)
        wsize = (mbs_soa_rnea_batch_size(m.nb) + 7) // 8 * 8
        work = np.empty(T * wsize + 8)
        pw = aligned64(<double*> cnp.PyArray_DATA(work))
        if T == 1:
            mbs_soa_rnea_batch(&sm, pw, Nb, pq, pv, pa, po)
        else:
            for t in prange(T, nogil=True, schedule="static", chunksize=1, num_threads=T):
                s0 = (t * (Nb // MBS_L) // T) * MBS_L
                s1 = Nb if t == T - 1 else ((t + 1) * (Nb // MBS_L) // T) * MBS_L
                mbs_soa_rnea_batch(&sm, pw + t * wsize, s1 - s0, pq + s0 * nq, pv + s0 * nv,
                                   pa + s0 * nv, po + s0 * nv)
        for s in range(Nb, N):
            load_rows(m, &d.w, pq + s * nq, pv + s * nv, pa + s * nv)
            rnea0(m, &d.w, False, po + s * nv)
    else:
        ws = &d.w if T == 1 else d.thread_works(T)
        if T == 1:
            for s in range(N):
                load_rows(m, ws, pq + s * nq, pv + s * nv, pa + s * nv)
                rnea0(m, ws, False, po + s * nv)
        else:
            for t in prange(T, nogil=True, schedule="static", chunksize=1, num_threads=T):
                for s in range(t * N // T, (t + 1) * N // T):
                    load_rows(m, &ws[t], pq + s * nq, pv + s * nv, pa + s * nv)
                    rnea0(m, &ws[t], False, po + s * nv)
    if res is not out:
        out[...] = res
    return out


cdef object _torque_derivatives(Data d, q, vs, fx, out):
    """τ^(k), k = 0..K (K+1, nv), from q (nq,) and vs (K+2, nv) rows v, v′, …, v^(K+1), with an
    optional applied-wrench jet fx (Kf ≤ K+1, nb, 6) in body frames (None: no external load)."""
    cdef KModel* m = &d.m
    q = as_input(q, "q", 1, (m.nq,))
    vs = as_input(vs, "vs", 2, (-1, m.nv))
    cdef int K = vs.shape[0] - 2
    if K < 0:
        raise ValueError(f"vs has shape {vs.shape}, expected (k+2, {m.nv}) with k >= 0 "
                         "(rows v, v', v'', ...)")
    out = as_out(out, "out", (K + 1, m.nv))
    check_finite(q, "q")
    check_finite(vs, "vs")
    check_quat(m, q, "q")
    return _jet(d, q, vs, K, fx, out, (q, vs))


cdef object _torque_derivatives_qs(Data d, qs, out):
    """The fixed-base form: qs (K+3, n) rows q, q′, …, q^(K+2) → (K+1, n)."""
    cdef KModel* m = &d.m
    qs = as_input(qs, "qs", 2, (-1, m.n))
    cdef int K = qs.shape[0] - 3
    if K < 0:
        raise ValueError(f"qs has shape {qs.shape}, expected (k+3, {m.n}) with k >= 0 "
                         "(rows q, q', q'', ...)")
    out = as_out(out, "out", (K + 1, m.n))
    check_finite(qs, "qs")
    return _jet(d, qs, None, K, None, out, (qs,))


cdef object _jet(Data d, q, vs, int K, fx, out, tuple inputs):
    """vs None: q is a fixed-base qs whose rows after the first are the velocity-level jet."""
    cdef KModel* m = &d.m
    cdef double* pq = <double*> cnp.PyArray_DATA(q)
    cdef double* pv = (pq + m.n) if vs is None else <double*> cnp.PyArray_DATA(vs)
    if K > d.kmax:
        d.grow(K)
    cdef KWork* w = &d.w
    cdef bint use_fx = fx is not None
    if use_fx:
        load_fx(d, fx, K + 1)
    load_jet(m, w, pq, pv, K + 2)
    res = fresh_if_alias(out, inputs)
    rnea_jet(m, w, K, use_fx, <double*> cnp.PyArray_DATA(res))
    if res is not out:
        out[...] = res
    return out


cdef object _torque_derivatives_batch(Data d, q, vs, out):
    """N samples: q (N, nq) and vs (N, K+2, nv) → (N, K+1, nv); a fixed-base qs (N, K+3, n) is
    passed as ``q = qs``, ``vs = None``."""
    cdef KModel* m = &d.m
    cdef bint packed = vs is None
    cdef int K
    cdef Py_ssize_t N, sq, sv
    if packed:
        q = as_input(q, "qs", 3, (-1, -1, m.n))
        N, K = q.shape[0], q.shape[1] - 3
        if K < 0:
            raise ValueError(f"qs has shape {q.shape}, expected (N, k+3, {m.n}) with k >= 0")
        check_finite(q, "qs")
        sq = (K + 3) * m.n
        sv = sq
        inputs = (q,)
    else:
        q = as_input(q, "q", 2, (-1, m.nq))
        N = q.shape[0]
        vs = as_input(vs, "vs", 3, (N, -1, m.nv))
        K = vs.shape[1] - 2
        if K < 0:
            raise ValueError(f"vs has shape {vs.shape}, expected (N, k+2, {m.nv}) with k >= 0")
        check_finite(q, "q")
        check_finite(vs, "vs")
        check_quat(m, q, "q")
        sq = m.nq
        sv = (K + 2) * m.nv
        inputs = (q, vs)
    out = as_out(out, "out", (N, K + 1, m.nv))
    if K > d.kmax:
        d.grow(K)
    res = fresh_if_alias(out, inputs)
    cdef double* pq = <double*> cnp.PyArray_DATA(q)
    cdef double* pv = (pq + m.n) if packed else <double*> cnp.PyArray_DATA(vs)
    cdef double* po = <double*> cnp.PyArray_DATA(res)
    cdef int T = _threads(N, m.nb, 4 * (K + 1)), t
    cdef Py_ssize_t s, so = (K + 1) * m.nv, s0, s1
    cdef KWork* ws
    cdef mbs_soa_model sm
    cdef long wsize
    cdef double* pw
    cdef Py_ssize_t Nb = block_samples(N)
    if not m.fb and K == 2 and Nb > 0:  # the block kernel of _soa.h on [0, Nb), the rest one by one
        soa_view(m, &sm)
        wsize = (mbs_soa_jet2_batch_size(m.nb) + 7) // 8 * 8
        work = np.empty(T * wsize + 8)
        pw = aligned64(<double*> cnp.PyArray_DATA(work))
        if T == 1:
            mbs_soa_jet2_batch(&sm, pw, Nb, pq, sq, pv, sv, po)
        else:
            for t in prange(T, nogil=True, schedule="static", chunksize=1, num_threads=T):
                s0 = (t * (Nb // MBS_L) // T) * MBS_L
                s1 = Nb if t == T - 1 else ((t + 1) * (Nb // MBS_L) // T) * MBS_L
                mbs_soa_jet2_batch(&sm, pw + t * wsize, s1 - s0, pq + s0 * sq, sq, pv + s0 * sv,
                                   sv, po + s0 * so)
        for s in range(Nb, N):
            load_jet(m, &d.w, pq + s * sq, pv + s * sv, K + 2)
            rnea_jet(m, &d.w, K, False, po + s * so)
    else:
        ws = &d.w if T == 1 else d.thread_works(T)
        if T == 1:
            for s in range(N):
                load_jet(m, ws, pq + s * sq, pv + s * sv, K + 2)
                rnea_jet(m, ws, K, False, po + s * so)
        else:
            for t in prange(T, nogil=True, schedule="static", chunksize=1, num_threads=T):
                for s in range(t * N // T, (t + 1) * N // T):
                    load_jet(m, &ws[t], pq + s * sq, pv + s * sv, K + 2)
                    rnea_jet(m, &ws[t], K, False, po + s * so)
    if res is not out:
        out[...] = res
    return out


cdef object _gravity(Data d, q, out):
    """Q_grav (nv,) at q (nq,)."""
    cdef KModel* m = &d.m
    q = vec(q, "q", m.nq)
    out = out_vec(out, m.nv)
    check_finite(q, "q")
    check_quat(m, q, "q")
    cdef KWork* w = &d.w
    load_jet(m, w, <double*> cnp.PyArray_DATA(q), NULL, 0)
    res = alias3(out, q, None, None)
    gravity0(m, w, <double*> cnp.PyArray_DATA(res))
    if res is not out:
        out[...] = res
    return out


# ---------------------------------------------------------------------------------------------
# the public entries: each takes the Data's owner flag (one thread at a time) around its kernel
# ---------------------------------------------------------------------------------------------

def inverse_dynamics(Data d, q, qd, qdd, fx, out):
    """τ (nv,) = ID(q, v, a) with optional body wrenches fx (nb, 6) (or None)."""
    claim(d)
    try:
        return finite_result(_inverse_dynamics(d, q, qd, qdd, fx, out), "inverse_dynamics")
    finally:
        unclaim(d)


def inverse_dynamics_batch(Data d, q, qd, qdd, out):
    """τ (N, nv) for N states q (N, nq), v, a (N, nv), split over the OpenMP threads."""
    claim(d)
    try:
        return finite_result(_inverse_dynamics_batch(d, q, qd, qdd, out), "inverse_dynamics_batch")
    finally:
        unclaim(d)


def torque_derivatives(Data d, q, vs, fx, out):
    """τ^(k), k = 0..K (K+1, nv), from q (nq,) and vs (K+2, nv) rows v, v′, …, v^(K+1), with an
    optional applied-wrench jet fx (Kf ≤ K+1, nb, 6) in body frames (None: no external load)."""
    claim(d)
    try:
        return finite_result(_torque_derivatives(d, q, vs, fx, out), "torque_derivatives")
    finally:
        unclaim(d)


def torque_derivatives_qs(Data d, qs, out):
    """The fixed-base form: qs (K+3, n) rows q, q′, …, q^(K+2) → (K+1, n)."""
    claim(d)
    try:
        return finite_result(_torque_derivatives_qs(d, qs, out), "torque_derivatives_qs")
    finally:
        unclaim(d)


def torque_derivatives_batch(Data d, q, vs, out):
    """N samples: q (N, nq) and vs (N, K+2, nv) → (N, K+1, nv); a fixed-base qs (N, K+3, n) is
    passed as ``q = qs``, ``vs = None``."""
    claim(d)
    try:
        return finite_result(_torque_derivatives_batch(d, q, vs, out), "torque_derivatives_batch")
    finally:
        unclaim(d)


def gravity(Data d, q, out):
    """Q_grav (nv,) at q (nq,)."""
    claim(d)
    try:
        return finite_result(_gravity(d, q, out), "gravity")
    finally:
        unclaim(d)
