# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The twist of one frame and its time derivatives of any order (seed 000 §2), compiled, O(depth).

Forward recursion along the path base → frame body only (no gravity; the RNEA jet of
:mod:`mbs_dynamics.kernels._rnea` without its backward pass): ``u_l = Ad_{C_{i,λ}} V_λ^(l)``,
``V_i^(k) = Σ_m binom(k,m) Φ_m u_{k−m} + X_i q_i^(k+1)``, ``Φ_m = Σ_j c[m][j] ad_{X_i}^j`` — the
recursive form of eq. 7 and 14 (the Lie-bracket series of the body-fixed acceleration and jerk);
a floating base starts from its body-twist jet ν^(k). The frame's body twist is
``Ad_{S^{-1}} V_b^(k)`` (S constant).

The other representations are ``Ad_{C}`` (spatial) or ``Ad_{R}`` (hybrid) of a body-frame jet;
since ``d/dt Ad_C = Ad_C ad_V`` (spatial) and ``d/dt Ad_R = Ad_R ad_{(ω, 0)}`` (hybrid),
``(Ad_C V)^(k) = Ad_C U_k`` with ``U_0 = V`` and ``U_{k+1} = ad_Z U_k + U_k′`` (Z = V or (ω, 0)),
expanded by Leibniz: ``U_{k+1}^(j) = Σ_m binom(j,m) ad_{Z^(m)} U_k^(j−m) + U_k^(j+1)``. This gives
V̇^s = Ad_C V̇^b (eq. 19 in body terms) and the hybrid acceleration (ω̇, r̈) (eq. 29–30); mixed
(seed 000 §2.4, eq. 34) takes the hybrid linear and the body angular rows.
Public output rows are (linear, angular).
"""
import numpy as np
cimport numpy as cnp
from libc.stdlib cimport free, malloc

from mbs_dynamics.kernels._data cimport (FREE, Data, KModel, KWork, as_input, as_out, claim,
                                         finite_result,
                                         unclaim,
                                         check_finite, check_quat, fresh_if_alias)
from mbs_dynamics.kernels._spatial cimport (ad_V, ad_X, add_X, axpy6, bell, compose, copy6, joint_pose, rot,
                                            load_jet, quat_pose, to_child, zero6)

cnp.import_array()


cdef int body_jet(const KModel* m, KWork* w, int b, int K, double* Cw, int* path) noexcept nogil:
    """V_b^(k), k = 0..K, into w.V rows (body b's slot) and the world pose of b into Cw (12);
    qj / ν already loaded. Returns 0."""
    cdef int nb = m.nb, s = w.kmax + 2, nbn = w.kmax + 3
    cdef int depth = 0, i, par, k, l, j, mm, a
    cdef double* T
    cdef double* Vk
    cdef double c
    cdef double tmp[12]
    i = b
    while i >= 0:
        path[depth] = i
        depth += 1
        i = m.parent[i]
    for a in range(12):
        Cw[a] = 1.0 if a in (0, 4, 8) else 0.0
    for l in range(depth - 1, -1, -1):
        i = path[l]
        par = m.parent[i]
        T = w.T + 12 * i
        if m.jtype[i] == FREE:
            for k in range(K + 1):
                copy6(w.nu + 6 * k, w.V + 6 * (k * nb + i))
            for a in range(12):
                Cw[a] = T[a]
            continue
        joint_pose(m, i, w.qj[i], T)
        compose(Cw, T, tmp)
        for a in range(12):
            Cw[a] = tmp[a]
        bell(m, w, i, K)
        for k in range(K + 1):
            if par >= 0:
                to_child(T, w.V + 6 * (k * nb + par), w.Au + 6 * (k * s))
            else:
                zero6(w.Au + 6 * (k * s))
        for k in range(K + 1):
            for j in range(1, K - k + 1):
                ad_X(m, i, w.Au + 6 * (k * s + j - 1), w.Au + 6 * (k * s + j), False)
        for k in range(K + 1):
            Vk = w.V + 6 * (k * nb + i)
            copy6(w.Au + 6 * (k * s), Vk)
            for mm in range(1, k + 1):
                for j in range(1, mm + 1):
                    c = w.bell[mm * s + j]
                    if c != 0.0:
                        axpy6(c * w.binom[k * nbn + mm], w.Au + 6 * ((k - mm) * s + j), Vk)
            add_X(m, i, w.qj[(k + 1) * nb + i], Vk)
    return 0


cdef void frame_jet(const KModel* m, KWork* w, int b, const double* S, int K, int rep,
                    double* buf, int* path, double* out) noexcept nogil:
    """out (K+1, 6) (linear, angular): the frame's twist jet in representation rep
    (0 body, 1 spatial, 2 hybrid, 3 mixed). buf: 2 (K+1)² 6 + 12 + 6 (K+1) doubles."""
    cdef int nb = m.nb, nbn = w.kmax + 3, k, j, mm, a, K1 = K + 1
    cdef double* Cw = buf
    cdef double* Vf = buf + 12                  # (K+1, 6) frame body jet
    cdef double* U = Vf + 6 * K1                # (K+1, K+1, 6): U[k][j]
    cdef double* Z = U + 6 * K1 * K1            # (K+1, 6)
    cdef double Cf[12]
    cdef double t[6]
    cdef double r[6]
    cdef double* V
    if b >= 0:
        body_jet(m, w, b, K, Cw, path)
    else:  # the fixed base link: at rest
        for a in range(12):
            Cw[a] = 1.0 if a in (0, 4, 8) else 0.0
    for k in range(K1):
        if b >= 0:
            to_child(S, w.V + 6 * (k * nb + b), Vf + 6 * k)   # Ad_{S⁻¹} V (to_child uses T = S)
        else:
            zero6(Vf + 6 * k)
    compose(Cw, S, Cf)
    if rep == 0:
        for k in range(K1):
            V = Vf + 6 * k
            out[6 * k], out[6 * k + 1], out[6 * k + 2] = V[3], V[4], V[5]
            out[6 * k + 3], out[6 * k + 4], out[6 * k + 5] = V[0], V[1], V[2]
        return
    # Z^(m): V^(m) (spatial) or (ω^(m), 0) (hybrid, mixed)
    for k in range(K1):
        copy6(Vf + 6 * k, Z + 6 * k)
        if rep != 1:
            Z[6 * k + 3] = 0.0
            Z[6 * k + 4] = 0.0
            Z[6 * k + 5] = 0.0
    for j in range(K1):
        copy6(Vf + 6 * j, U + 6 * j)            # U[0][j] = V^(j)
    for k in range(1, K1):
        for j in range(K1 - k):
            copy6(U + 6 * ((k - 1) * K1 + j + 1), U + 6 * (k * K1 + j))
            for mm in range(j + 1):
                ad_V(Z + 6 * mm, U + 6 * ((k - 1) * K1 + j - mm), t)
                axpy6(w.binom[j * nbn + mm], t, U + 6 * (k * K1 + j))
    for k in range(K1):
        V = U + 6 * (k * K1)
        rot(Cf, V, r)
        rot(Cf, V + 3, r + 3)
        if rep == 1:   # + p × ω
            r[3] += Cf[10] * r[2] - Cf[11] * r[1]
            r[4] += Cf[11] * r[0] - Cf[9] * r[2]
            r[5] += Cf[9] * r[1] - Cf[10] * r[0]
        out[6 * k], out[6 * k + 1], out[6 * k + 2] = r[3], r[4], r[5]
        if rep == 3:
            V = Vf + 6 * k
            out[6 * k + 3], out[6 * k + 4], out[6 * k + 5] = V[0], V[1], V[2]
        else:
            out[6 * k + 3], out[6 * k + 4], out[6 * k + 5] = r[0], r[1], r[2]


cdef dict REPS = {"body": 0, "spatial": 1, "hybrid": 2, "mixed": 3}


cdef class JetFrames:
    """The frame table of one model packed for :meth:`derivatives` (kernel body of each frame,
    its pose S as R (9) p (3)) and the scratch of the jet (grown with the order)."""
    cdef Data d
    cdef dict index
    cdef tuple names
    cdef object _body
    cdef object _S
    cdef int* fbody
    cdef double* fS
    cdef int* path
    cdef double* buf
    cdef int nbuf

    def __cinit__(self):
        self.path = NULL
        self.buf = NULL
        self.nbuf = 0

    def __init__(self, Data d, table):
        """``table``: a :class:`~mbs_dynamics.kinematics.frames.FrameTable` of d's model."""
        self.d = d
        self.names = tuple(table.names)
        self.index = dict(table.index)
        fb = d.m.fb
        body = np.asarray(table.body)
        self._body = np.ascontiguousarray(np.where(body >= 0, body + fb, 0 if fb else -1),
                                          dtype=np.intc)
        P = np.asarray(table.pose, dtype=float)
        self._S = np.ascontiguousarray(np.concatenate(
            [P[:, :3, :3].reshape(-1, 9), P[:, :3, 3]], axis=1))
        self.fbody = <int*> cnp.PyArray_DATA(self._body)
        self.fS = <double*> cnp.PyArray_DATA(self._S)
        self.path = <int*> malloc((d.m.nb + 1) * sizeof(int))
        if self.path == NULL:
            raise MemoryError()

    def __dealloc__(self):
        free(self.path)
        free(self.buf)

    cdef double* scratch(self, int K) except NULL:
        cdef int need = 12 + 6 * (K + 1) * (K + 3)
        if need > self.nbuf:
            free(self.buf)
            self.buf = <double*> malloc(need * sizeof(double))
            if self.buf == NULL:
                self.nbuf = 0
                raise MemoryError()
            self.nbuf = need
        return self.buf

    def derivatives(self, qs, frame, representation, out):
        """As :func:`frame_derivatives`, with the frame and representation by name; ``qs`` an
        array (fixed base) or a pair (q, vs)."""
        f = self.index.get(frame) if isinstance(frame, str) else None
        if f is None:
            from .frames import unknown_frame
            raise unknown_frame(frame, self.names)
        r = REPS.get(representation) if isinstance(representation, str) else None
        if r is None:
            from .frames import representation_index
            representation_index(representation)   # raises, listing the four
        cdef int fi = f
        if type(qs) is tuple and len(qs) == 2:
            return _derivatives(self, fi, qs[0], qs[1], r, out)
        if isinstance(qs, tuple):
            raise ValueError("qs must be an array (r, n) or a pair (q, vs)")
        if self.d.m.fb:
            raise ValueError(f"qs of a floating-base robot must be a pair (q, vs): q (nq,) = "
                             f"({self.d.m.nq},), vs (r, nv) = (r, {self.d.m.nv})")
        return _derivatives(self, fi, qs, None, r, out)


cdef object _derivatives(JetFrames jf, int f, q, vs, int rep, out):
    """The owner flag of the Data (one thread at a time) around :func:`_derivatives_body`."""
    claim(jf.d)
    try:
        return finite_result(_derivatives_body(jf, f, q, vs, rep, out), "frame_derivatives")
    finally:
        unclaim(jf.d)


cdef object _derivatives_body(JetFrames jf, int f, q, vs, int rep, out):
    cdef Data d = jf.d
    cdef KModel* m = &d.m
    cdef bint packed = vs is None, batch
    cdef int K
    cdef Py_ssize_t N, sq, sv, s
    cdef tuple shp
    if packed:
        batch = cnp.PyArray_NDIM(q) == 3 if cnp.PyArray_Check(q) else np.ndim(q) == 3
        if batch:
            shp = (-1, -1, m.n)
        else:
            shp = (-1, m.n)
        q = as_input(q, "qs", 3 if batch else 2, shp)
        if q.shape[q.ndim - 2] < 2:
            raise ValueError(f"qs has shape {q.shape}, expected (r, {m.n}) with r >= 2 "
                             "(rows q, q', ...)")
        check_finite(q, "qs")
        K = q.shape[q.ndim - 2] - 2
        N = q.shape[0] if batch else 1
        sq = (K + 2) * m.n
        sv = sq
    else:
        batch = cnp.PyArray_NDIM(q) == 2 if cnp.PyArray_Check(q) else np.ndim(q) == 2
        if batch:
            shp = (-1, m.nq)
        else:
            shp = (m.nq,)
        q = as_input(q, "q", 2 if batch else 1, shp)
        N = q.shape[0] if batch else 1
        if batch:
            shp = (N, -1, m.nv)
        else:
            shp = (-1, m.nv)
        vs = as_input(vs, "vs", 3 if batch else 2, shp)
        if vs.shape[vs.ndim - 2] < 1:
            raise ValueError(f"vs has shape {vs.shape}, expected (r, {m.nv}) with r >= 1 "
                             "(rows v, v', ...)")
        check_finite(q, "q")
        check_finite(vs, "vs")
        check_quat(m, q, "q")
        K = vs.shape[vs.ndim - 2] - 1
        sq = m.nq
        sv = (K + 1) * m.nv
    if batch:
        shp = (N, K + 1, 6)
    else:
        shp = (K + 1, 6)
    out = as_out(out, "out", shp)
    if K > d.kmax:
        d.grow(K)
    cdef double* buf = jf.scratch(K)
    res = fresh_if_alias(out, (q, vs) if vs is not None else (q,))
    cdef double* pq = <double*> cnp.PyArray_DATA(q)
    cdef double* pv = (pq + m.n) if packed else <double*> cnp.PyArray_DATA(vs)
    cdef double* po = <double*> cnp.PyArray_DATA(res)
    cdef KWork* w = &d.w
    cdef int bk = jf.fbody[f]
    cdef const double* S = jf.fS + 12 * f
    with nogil:
        for s in range(N):
            load_jet(m, w, pq + s * sq, pv + s * sv, K + 1)
            frame_jet(m, w, bk, S, K, rep, buf, jf.path, po + s * 6 * (K + 1))
    if res is not out:
        out[...] = res
    return out
