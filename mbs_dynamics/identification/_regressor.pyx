# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The joint-torque regressor Y (τ = Y π) and its time derivatives Y^(k), compiled (seed 000 §6;
the NumPy reference and the derivation are in :mod:`.regressor`).

Y (K = 0). Body i's term of the backward pass is ``F_i = M_i A_i − ad_{V_i}ᵀ M_i V_i`` (A_i = V̇_i
with gravity), and joint j (an ancestor of i, or i) reads ``Q_j ∋ X_jᵀ Ad_{C_{i,j}}ᵀ F_i``. With
``y = Ad_{C_{i,j}} X_j`` (joint j's screw seen from body i: a column of body i's Jacobian) and
``M s = Ψ(s) π``, the entry is bilinear, ``y ᵀ M A − (ad_V y)ᵀ M V = β(y, A) − β(ad_V y, V)``,
``β(y, s) = yᵀ Ψ(s)`` (10 numbers: ``y_v·s_v``, ``s_v × y_ω + y_v × s_ω``, the 6 products of
``y_ω`` and ``s_ω``). The walk from i to the root composes the relative pose ``C_{j,i}`` on the
way: O(depth) per column block, no 6×10 matrix is ever formed. A floating base's 6 rows are the
6 unit twists of the free joint (force rows: (0, e), moment rows: (e, 0)) seen from body i.

Y^(k) (any K): the kernels' jet forward pass (:func:`mbs_dynamics.kernels._rnea.rnea_jet`) gives
the twist jets; body i's term ``Φ_i^(k) = Ψ(V_i^(k+1)) − Σ_m binom(k,m) ad_{V_i^(m)}ᵀ Ψ(V_i^(k−m))``
(10 wrench jets, one per parameter) is read by the jets of the Jacobian columns y above,
``Y^(k) = Σ_m binom(k,m) y^(m)ᵀ Φ^(k−m)``, the y jets following the twists' forward rule of
doc/math.md without the joint term, ``y_{i,c}^(k) = Σ_m binom(k,m) Φ_m(i) T_i y_{λ(i),c}^(k−m)`` —
the transpose of carrying Φ's jets to the root by ``S^(k) = T_jᵀ Σ_m binom(k,m) Φ_mᵀ W^(k−m)``
(the NumPy reference :mod:`.regressor` does that; a test keeps both equal), one 6-vector jet per
pair instead of ten.

Twists ``(ω, v)``, wrenches ``(m, f)`` inside; a floating base's rows are (force, moment),
Pinocchio's order. Nothing allocates inside the loops.
"""
import numpy as np
cimport numpy as cnp
from cython.parallel cimport prange
cimport openmp
from libc.string cimport memset

from mbs_dynamics.kernels._data cimport (finite_result, FREE, REVOLUTE, Data, KModel, KWork, claim, unclaim, as_input, as_out,
                                         check_finite, check_quat, fresh_if_alias, take_states)
from mbs_dynamics.kernels._rnea cimport forward0, rnea_jet
from mbs_dynamics.kernels._spatial cimport (ad_V, ad_X, add_adT, add_to_parent, add_X, axpy6,
                                            base_gravity, bell, copy6, joint_pose, load_jet,
                                            load_rows, phi_small, phi_sum, to_child, X_dot, zero6)

cnp.import_array()

# as in kernels/_rnea.pyx: a batch goes parallel only when each thread gets milliseconds of work
# (waking OpenMP workers costs milliseconds on a loaded machine)
cdef enum:
    PARALLEL_WORK = 20000


# ---------------------------------------------------------------------------------------------
# K = 0
# ---------------------------------------------------------------------------------------------
cdef inline void beta_add(const double* y, const double* s, double c, double* row) noexcept nogil:
    """row[0..9] += c β(y, s), β(y, s) = yᵀ Ψ(s) for M s = Ψ(s) π, s = (ω, v):
    (y_v·v, v × y_ω + y_v × ω, y_ω ⊗ ω in the order Ixx, Ixy, Iyy, Ixz, Iyz, Izz)."""
    cdef double y0 = y[0], y1 = y[1], y2 = y[2], u0 = y[3], u1 = y[4], u2 = y[5]
    cdef double w0 = s[0], w1 = s[1], w2 = s[2], v0 = s[3], v1 = s[4], v2 = s[5]
    row[0] += c * (u0 * v0 + u1 * v1 + u2 * v2)
    row[1] += c * (v1 * y2 - v2 * y1 + u1 * w2 - u2 * w1)
    row[2] += c * (v2 * y0 - v0 * y2 + u2 * w0 - u0 * w2)
    row[3] += c * (v0 * y1 - v1 * y0 + u0 * w1 - u1 * w0)
    row[4] += c * (y0 * w0)
    row[5] += c * (y0 * w1 + y1 * w0)
    row[6] += c * (y1 * w1)
    row[7] += c * (y0 * w2 + y2 * w0)
    row[8] += c * (y1 * w2 + y2 * w1)
    row[9] += c * (y2 * w2)


cdef inline void entry(const double* y, const double* V, const double* A, double* row) noexcept nogil:
    """row[0..9] = yᵀ (Ψ(A) − ad_Vᵀ Ψ(V)) = β(y, A) − β(ad_V y, V)."""
    cdef double z[6]
    cdef int a
    for a in range(10):
        row[a] = 0.0
    beta_add(y, A, 1.0, row)
    ad_V(V, y, z)
    beta_add(z, V, -1.0, row)


cdef void regressor0(const KModel* m, KWork* w, double* Y) noexcept nogil:
    """Y (nv, 10 nb) from the workspace after :func:`forward0`."""
    cdef int nb = m.nb, nv = m.nv, cols = 10 * nb, fb = m.fb, i, j, a, r
    cdef double G[12]
    cdef double R2[9]
    cdef double y[6]
    cdef double u[6]
    cdef double* T
    cdef double* V
    cdef double* A
    cdef const double* e
    cdef double px, py, pz, ex, ey, ez
    memset(Y, 0, nv * cols * sizeof(double))
    for i in range(nb):
        V = w.V + 6 * i
        A = w.V + 6 * (nb + i)
        # G = C_{j,i}: identity at j = i
        for a in range(12):
            G[a] = 0.0
        G[0] = 1.0
        G[4] = 1.0
        G[8] = 1.0
        j = i
        while True:
            if m.jtype[j] == FREE:
                # the base's 6 unit twists seen from body i: y = Ad_{G⁻¹} u
                for r in range(6):
                    zero6(u)
                    if r < 3:
                        u[3 + r] = 1.0   # force row r: linear unit twist
                    else:
                        u[r - 3] = 1.0   # moment row: angular unit twist
                    to_child(G, u, y)
                    entry(y, V, A, Y + r * cols + 10 * i)
                break
            e = m.axis + 3 * j
            ex, ey, ez = e[0], e[1], e[2]
            # y = Ad_{G⁻¹} X_j: revolute (Gᵣᵀ e, Gᵣᵀ (e × p)), prismatic (0, Gᵣᵀ e)
            if m.jtype[j] == REVOLUTE:
                px, py, pz = G[9], G[10], G[11]
                y[0] = G[0] * ex + G[3] * ey + G[6] * ez
                y[1] = G[1] * ex + G[4] * ey + G[7] * ez
                y[2] = G[2] * ex + G[5] * ey + G[8] * ez
                u[0] = ey * pz - ez * py
                u[1] = ez * px - ex * pz
                u[2] = ex * py - ey * px
                y[3] = G[0] * u[0] + G[3] * u[1] + G[6] * u[2]
                y[4] = G[1] * u[0] + G[4] * u[1] + G[7] * u[2]
                y[5] = G[2] * u[0] + G[5] * u[1] + G[8] * u[2]
            else:
                y[0] = 0.0
                y[1] = 0.0
                y[2] = 0.0
                y[3] = G[0] * ex + G[3] * ey + G[6] * ez
                y[4] = G[1] * ex + G[4] * ey + G[7] * ez
                y[5] = G[2] * ex + G[5] * ey + G[8] * ez
            entry(y, V, A, Y + (j + 5 * fb) * cols + 10 * i)
            if m.parent[j] < 0:
                break
            # G ← T_j G  (C_{λ(j),i} = C_{λ(j),j} C_{j,i})
            T = w.T + 12 * j
            for a in range(3):
                R2[3 * a] = T[3 * a] * G[0] + T[3 * a + 1] * G[3] + T[3 * a + 2] * G[6]
                R2[3 * a + 1] = T[3 * a] * G[1] + T[3 * a + 1] * G[4] + T[3 * a + 2] * G[7]
                R2[3 * a + 2] = T[3 * a] * G[2] + T[3 * a + 1] * G[5] + T[3 * a + 2] * G[8]
            px, py, pz = G[9], G[10], G[11]
            G[9] = T[0] * px + T[1] * py + T[2] * pz + T[9]
            G[10] = T[3] * px + T[4] * py + T[5] * pz + T[10]
            G[11] = T[6] * px + T[7] * py + T[8] * pz + T[11]
            for a in range(9):
                G[a] = R2[a]
            j = m.parent[j]


cdef inline int _threads(Py_ssize_t N, Py_ssize_t work1) noexcept:
    cdef Py_ssize_t work = N * work1
    return max(1, min(openmp.omp_get_max_threads(), <int> (work // PARALLEL_WORK)))


def _regressor(Data d, q, qd, qdd, out=None):
    """Y (nv, 10 nb) for q (nq,), v, a (nv,); or (N, nv, 10 nb) for (N, ·) batches."""
    cdef KModel* m = &d.m
    cdef KWork* w
    cdef bint batch = not (type(q) is np.ndarray and (<cnp.ndarray> q).ndim == 1) \
        and np.ndim(q) == 2
    q, qd, qdd = take_states(m, q, qd, qdd, "qd", "qdd", batch)
    cdef Py_ssize_t cols = 10 * m.nb, N, s, so
    cdef double* pq = <double*> cnp.PyArray_DATA(q)
    cdef double* pv = <double*> cnp.PyArray_DATA(qd)
    cdef double* pa = <double*> cnp.PyArray_DATA(qdd)
    cdef double* po
    cdef int T, t, nq = m.nq, nv = m.nv
    if not batch:
        out = as_out(out, "out", (m.nv, cols))
        w = &d.w
        load_rows(m, w, pq, pv, pa)
        forward0(m, w)
        regressor0(m, w, <double*> cnp.PyArray_DATA(out))  # inputs are read before out is written
        return out
    N = q.shape[0]
    out = as_out(out, "out", (N, m.nv, cols))
    res = fresh_if_alias(out, (q, qd, qdd))
    po = <double*> cnp.PyArray_DATA(res)
    so = m.nv * cols
    T = _threads(N, 4 * m.nb)  # a sample costs ≈ 3–4 RNEAs: split only batches of ms per thread
    cdef KWork* ws = &d.w if T == 1 else d.thread_works(T)
    if T == 1:
        for s in range(N):
            load_rows(m, ws, pq + s * nq, pv + s * nv, pa + s * nv)
            forward0(m, ws)
            regressor0(m, ws, po + s * so)
    else:
        for t in prange(T, nogil=True, schedule="static", chunksize=1, num_threads=T):
            for s in range(t * N // T, (t + 1) * N // T):
                load_rows(m, &ws[t], pq + s * nq, pv + s * nv, pa + s * nv)
                forward0(m, &ws[t])
                regressor0(m, &ws[t], po + s * so)
    if res is not out:
        out[...] = res
    return out


# ---------------------------------------------------------------------------------------------
# any K
# ---------------------------------------------------------------------------------------------
cdef inline void psi_cols(const double* s, double* P) noexcept nogil:
    """P[c*6 .. c*6+5] = Ψ(s) e_c, c = 0..9: M s = Ψ(s) π = (Θ ω + h × v, m v − h × ω)."""
    cdef double w0 = s[0], w1 = s[1], w2 = s[2], v0 = s[3], v1 = s[4], v2 = s[5]
    cdef int a
    for a in range(60):
        P[a] = 0.0
    P[3], P[4], P[5] = v0, v1, v2                        # m
    # h_x: (e_x × v, ω × e_x) = ((0, −v2, v1), (0, w2, −w1))
    P[7], P[8], P[10], P[11] = -v2, v1, w2, -w1
    # h_y: ((v2, 0, −v0), (−w2, 0, w0))
    P[12], P[14], P[15], P[17] = v2, -v0, -w2, w0
    # h_z: ((−v1, v0, 0), (w1, −w0, 0))
    P[18], P[19], P[21], P[22] = -v1, v0, w1, -w0
    P[24] = w0                                            # Ixx
    P[30], P[31] = w1, w0                                 # Ixy
    P[37] = w1                                            # Iyy
    P[42], P[44] = w2, w0                                 # Ixz
    P[49], P[50] = w2, w1                                 # Iyz
    P[56] = w2                                            # Izz


cdef inline void col_range(const KModel* m, int b, int* c0, int* c1) noexcept nogil:
    """The velocity coordinates [c0, c1) of body b's joint (6 for the free base)."""
    if m.jtype[b] == FREE:
        c0[0] = 0
        c1[0] = 6
    else:
        c0[0] = b + 5 * m.fb
        c1[0] = b + 5 * m.fb + 1


cdef void regressor_jet(const KModel* m, KWork* w, int K, double* Y, double* P,
                        double* F, double* Yj) noexcept nogil:
    """Y^(k) (K+1, nv, 10 nb) from the workspace after ``rnea_jet`` of order K.

    Y^(k)[c, block i] = Σ_m binom(k,m) (y_{i,c}^(m))ᵀ Φ_i^(k−m), with y_{i,c} = Ad_{C_{i,b(c)}} X_c
    the screw of coordinate c seen from body i (a column of body i's Jacobian; for the free base
    the unit twists, force rows ↔ linear, moment rows ↔ angular), whose jet follows the twists'
    forward rule of doc/math.md without the joint term: y_{i,c}^(k) = Σ_m binom(k,m) Φ_m(i) T_i
    y_{λ(i),c}^(k−m). Scratch: P ((K+2)·60), F ((K+1)·60), Yj (nb·nv·(K+1)·6)."""
    cdef int nb = m.nb, nv = m.nv, cols = 10 * nb, K1 = K + 1
    cdef int s = w.kmax + 2, nbn = w.kmax + 3
    cdef int i, k, mm, c, l, r, par, b, c0, c1, cc
    cdef bint small = K <= 3
    cdef double q1 = 0.0, q2 = 0.0, q3 = 0.0, acc, bn
    cdef double* T
    cdef double* Fk
    cdef double* y
    cdef double* yp
    cdef Py_ssize_t jet = 6 * K1, body = nv * jet
    memset(Y, 0, K1 * nv * cols * sizeof(double))
    for i in range(nb):
        par = m.parent[i]
        T = w.T + 12 * i
        # ---- the Jacobian-column jets y_{i,c}^(k), c over the coordinates of i and its ancestors
        col_range(m, i, &c0, &c1)
        for c in range(c0, c1):
            y = Yj + i * body + c * jet
            for l in range(jet):
                y[l] = 0.0
            if m.jtype[i] == FREE:
                y[3 + c if c < 3 else c - 3] = 1.0
            else:
                add_X(m, i, 1.0, y)
        if par >= 0:
            if small:
                q1 = w.qj[nb + i]
                q2 = w.qj[2 * nb + i] if K >= 2 else 0.0
                q3 = w.qj[3 * nb + i] if K >= 3 else 0.0
            else:
                bell(m, w, i, K)
            b = par
            while b >= 0:
                col_range(m, b, &c0, &c1)
                for c in range(c0, c1):
                    yp = Yj + par * body + c * jet
                    y = Yj + i * body + c * jet
                    for l in range(K1):
                        to_child(T, yp + 6 * l, w.Au + 6 * (l * s))
                        for r in range(1, K - l + 1):
                            ad_X(m, i, w.Au + 6 * (l * s + r - 1), w.Au + 6 * (l * s + r), False)
                    for k in range(K1):
                        copy6(w.Au + 6 * (k * s), y + 6 * k)
                        if small:
                            phi_small(w, k, q1, q2, q3, y + 6 * k)
                        else:
                            phi_sum(w, k, y + 6 * k)
                b = m.parent[b]
        # ---- Φ^(k) = Ψ(V^(k+1)) − Σ_m binom(k,m) ad_{V^(m)}ᵀ Ψ(V^(k−m)), column by column
        for l in range(K + 2):
            psi_cols(w.V + 6 * (l * nb + i), P + 60 * l)
        for k in range(K1):
            Fk = F + 60 * k
            for c in range(60):
                Fk[c] = P[60 * (k + 1) + c]
            for mm in range(k + 1):
                for c in range(10):
                    add_adT(w.V + 6 * (mm * nb + i), P + 60 * (k - mm) + 6 * c, Fk + 6 * c,
                            w.binom[k * nbn + mm])
        # ---- the entries: Σ_m binom(k,m) y^(m)·Φ^(k−m)
        b = i
        while b >= 0:
            col_range(m, b, &c0, &c1)
            for cc in range(c0, c1):
                y = Yj + i * body + cc * jet
                for k in range(K1):
                    for c in range(10):
                        acc = 0.0
                        for mm in range(k + 1):
                            bn = w.binom[k * nbn + mm]
                            acc += bn * (y[6 * mm] * F[60 * (k - mm) + 6 * c]
                                         + y[6 * mm + 1] * F[60 * (k - mm) + 6 * c + 1]
                                         + y[6 * mm + 2] * F[60 * (k - mm) + 6 * c + 2]
                                         + y[6 * mm + 3] * F[60 * (k - mm) + 6 * c + 3]
                                         + y[6 * mm + 4] * F[60 * (k - mm) + 6 * c + 4]
                                         + y[6 * mm + 5] * F[60 * (k - mm) + 6 * c + 5])
                        Y[(k * nv + cc) * cols + 10 * i + c] = acc
            b = m.parent[b]


def _regressor_derivatives(Data d, q, vs, out=None):
    """Y^(k), k = 0..K: q (nq,) and vs (K+2, nv) → (K+1, nv, 10 nb); batches q (N, nq),
    vs (N, K+2, nv) → (N, K+1, nv, 10 nb). vs None: q is a fixed-base qs ((N,) K+3, n)."""
    cdef KModel* m = &d.m
    cdef bint packed = vs is None
    cdef bint batch
    cdef int K
    cdef Py_ssize_t N, sq, sv, s
    if packed:
        batch = np.ndim(q) == 3
        try:
            q = as_input(q, "qs", 3 if batch else 2, ((-1,) if batch else ()) + (-1, m.n))
        except ValueError as e:
            if "must be an array" in str(e):
                raise ValueError(f"qs must be an array of numbers of shape (k+3, {m.n}) (rows q, "
                                 f"q', q'', ...) or (N, k+3, {m.n})") from None
            raise
        N = q.shape[0] if batch else 1
        K = q.shape[q.ndim - 2] - 3
        if K < 0:
            raise ValueError(f"qs has shape {q.shape}, expected ({'N, ' if batch else ''}k+3, "
                             f"{m.n}) with k >= 0 (rows q, q', q'', ...)")
        check_finite(q, "qs")
        sq = (K + 3) * m.n
        sv = sq
        inputs = (q,)
    else:
        batch = np.ndim(q) == 2
        q = as_input(q, "q", 2 if batch else 1, ((-1,) if batch else ()) + (m.nq,))
        N = q.shape[0] if batch else 1
        vs = as_input(vs, "vs", 3 if batch else 2, ((N,) if batch else ()) + (-1, m.nv))
        K = vs.shape[vs.ndim - 2] - 2
        if K < 0:
            raise ValueError(f"vs has shape {vs.shape}, expected ({'N, ' if batch else ''}k+2, "
                             f"{m.nv}) with k >= 0 (rows v, v', v'', ...)")
        check_finite(q, "q")
        check_finite(vs, "vs")
        check_quat(m, q, "q")
        sq = m.nq
        sv = (K + 2) * m.nv
        inputs = (q, vs)
    cdef Py_ssize_t cols = 10 * m.nb, so = (K + 1) * m.nv * cols
    shape = ((N,) if batch else ()) + (K + 1, m.nv, cols)
    if out is None:
        out = np.empty(shape)  # (as_out makes at most 3-D arrays)
    elif not (type(out) is np.ndarray and out.dtype == np.float64 and out.flags.c_contiguous
              and out.flags.writeable and out.shape == shape):
        raise ValueError(f"out must be a writable float64 C-contiguous array of shape {shape}")
    if K > d.kmax:
        d.grow(K)
    res = fresh_if_alias(out, inputs)
    cdef KWork* w = &d.w
    scratch = np.empty((K + 2) * 60 + (K + 1) * 60 + m.nb * m.nv * (K + 1) * 6 + (K + 1) * m.nv)
    cdef double* P = <double*> cnp.PyArray_DATA(scratch)
    cdef double* F = P + (K + 2) * 60
    cdef double* Yj = F + (K + 1) * 60
    cdef double* tau = Yj + m.nb * m.nv * (K + 1) * 6
    cdef double* pq = <double*> cnp.PyArray_DATA(q)
    cdef double* pv = (pq + m.n) if packed else <double*> cnp.PyArray_DATA(vs)
    cdef double* po = <double*> cnp.PyArray_DATA(res)
    with nogil:
        for s in range(N):
            load_jet(m, w, pq + s * sq, pv + s * sv, K + 2)
            rnea_jet(m, w, K, False, tau)
            regressor_jet(m, w, K, po + s * so, P, F, Yj)
    if res is not out:
        out[...] = res
    return out


# the public entries take the Data's owner flag (one thread at a time, kernels/_data.pyx)

def regressor(Data d, q, qd, qdd, out=None):
    """Y (nv, 10 nb) for q (nq,), v, a (nv,); or (N, nv, 10 nb) for (N, ·) batches."""
    claim(d)
    try:
        return finite_result(_regressor(d, q, qd, qdd, out), "regressor")
    finally:
        unclaim(d)


def support_rows(Data d, q, qd, qdd, const Py_ssize_t[::1] idx, const Py_ssize_t[::1] start,
                 bint friction, double rest, double[::1] out):
    """The rows of the least squares' per-joint blocks, without the (N, nv, 10 nb) regressor:
    per sample, Y (τ = Y π) of that sample only (a cache-sized buffer), and for every joint j
    the entries ``Y[j, idx[start[j]:start[j+1]]]`` followed, with ``friction``, by the joint's
    viscous and Coulomb columns ``(q̇_j, sign q̇_j)`` (both 0 when |q̇_j| < ``rest``).

    Args:
        q, qd, qdd: (N, n) states of a fixed-base robot.
        idx, start: the columns kept per joint (``start`` has nv + 1 entries).
        friction: append the two friction columns per joint.
        rest: speed below which a joint counts as at rest [rad/s or m/s].
        out: at least N·Σ_j k_j doubles, k_j = start[j+1] − start[j] + 2·friction; joint j's
            block is ``out[N o_j : N (o_j + k_j)]`` as an (N, k_j) row-major matrix,
            o_j = Σ_{i<j} k_i.
    Returns:
        out.
    Raises:
        ValueError: wrong sizes, a floating base, non-finite states.
    """
    cdef KModel* m = &d.m
    if m.fb:
        raise ValueError("support_rows needs a fixed-base robot")
    if start.shape[0] != m.nv + 1 or start[0] != 0 or start[m.nv] > idx.shape[0]:
        raise ValueError(f"start must hold nv + 1 = {m.nv + 1} offsets into idx")
    cdef Py_ssize_t cols = 10 * m.nb, c, j, s, N, o, kj, fr = 2 if friction else 0, tot = 0
    for j in range(m.nv):
        if start[j + 1] < start[j]:
            raise ValueError("start must not decrease")
        tot += start[j + 1] - start[j] + fr
    for c in range(start[m.nv]):
        if not 0 <= idx[c] < cols:
            raise ValueError(f"column {idx[c]} outside the regressor's {cols}")
    claim(d)
    try:
        q, qd, qdd = take_states(m, q, qd, qdd, "qd", "qdd", True)
        N = q.shape[0]
        if out.shape[0] < N * tot:
            raise ValueError(f"out holds {out.shape[0]} doubles, {N * tot} needed")
        Yb = np.empty(m.nv * cols)
        return _support_rows(m, &d.w, <double*> cnp.PyArray_DATA(q),
                             <double*> cnp.PyArray_DATA(qd), <double*> cnp.PyArray_DATA(qdd),
                             N, &idx[0] if idx.shape[0] else NULL, &start[0], fr, rest,
                             &out[0] if out.shape[0] else NULL, Yb, out)
    finally:
        unclaim(d)


cdef object _support_rows(KModel* m, KWork* w, double* pq, double* pv, double* pa,
                          Py_ssize_t N, const Py_ssize_t* idx, const Py_ssize_t* start,
                          Py_ssize_t fr, double rest, double* po, object Yb, object out):
    cdef double[::1] yv = Yb
    cdef double* Y = &yv[0]
    cdef Py_ssize_t cols = 10 * m.nb, j, s, c, o, kj, nq = m.nq, nv = m.nv
    cdef double v
    cdef double* row
    with nogil:
        for s in range(N):
            load_rows(m, w, pq + s * nq, pv + s * nv, pa + s * nv)
            forward0(m, w)
            regressor0(m, w, Y)
            o = 0
            for j in range(nv):
                kj = start[j + 1] - start[j]
                row = po + N * o + s * (kj + fr)
                for c in range(kj):
                    row[c] = Y[j * cols + idx[start[j] + c]]
                if fr:
                    v = pv[s * nv + j]
                    if v >= rest:
                        row[kj], row[kj + 1] = v, 1.0
                    elif v <= -rest:
                        row[kj], row[kj + 1] = v, -1.0
                    else:
                        row[kj], row[kj + 1] = 0.0, 0.0
                o += kj + fr
    return out


def regressor_derivatives(Data d, q, vs, out=None):
    """Y^(k), k = 0..K: q (nq,) and vs (K+2, nv) → (K+1, nv, 10 nb); batches q (N, nq),
    vs (N, K+2, nv) → (N, K+1, nv, 10 nb). vs None: q is a fixed-base qs ((N,) K+3, n)."""
    claim(d)
    try:
        return finite_result(_regressor_derivatives(d, q, vs, out), "regressor_derivatives")
    finally:
        unclaim(d)
