# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Frame kinematics, compiled: the pose, twist, Jacobian, its time derivative and the acceleration
of one frame in the four representations of seed 001 §3 (body, spatial, hybrid, mixed).

Only the bodies that support the frame (its body and that body's ancestors, root first) are
visited. For each, the world pose ``C_b = C_λ B_b exp(X_b q_b)`` (seed 001 eq. 10) and — when a
velocity is given — the world angular velocity ``ω_b`` and the world velocity of the body origin
``ṗ_b`` (``ω_b = ω_λ + a_b q̇_b`` for a revolute joint, ``ṗ_b = ṗ_λ + ω_λ × (p_b − p_λ)
(+ a_b q̇_b`` prismatic), with ``a_b = R_b e_b`` the world joint axis through ``p_b``).

Column ``j`` of the Jacobian is first formed in the *hybrid* form (seed 001 eq. 36–38: the
instantaneous screw of joint j measured at the frame origin ``p_f``, resolved in the world):
revolute ``(a × (p_f − p_b), a)``, prismatic ``(a, 0)``; its exact time derivative is
``(ȧ × (p_f − p_b) + a × (ṗ_f − ṗ_b), ȧ)`` with ``ȧ = ω_b × a`` (prismatic ``(ω_b × a, 0)``).
The other representations follow from Table 3 of seed 001 and their derivatives by the product
rule (the frame pose is ``(R_f, p_f)``, its world angular velocity ``ω_f``, origin velocity ṗ_f):

* body (eq. 16; Pinocchio LOCAL): ``(R_fᵀ l, R_fᵀ a)``, derivative ``R_fᵀ(l̇ − ω_f × l)`` …
* spatial (eq. 22; WORLD): ``(l + p_f × a, a)``, derivative ``(l̇ + ṗ_f × a + p_f × ȧ, ȧ)``
* hybrid (eq. 36; LOCAL_WORLD_ALIGNED): ``(l, a)``
* mixed (eq. 46, §3.4): ``(l, R_fᵀ a)`` — the world velocity of the origin with the body-fixed
  angular velocity.

Public 6-vectors and Jacobian rows are (linear, angular). A floating base (body 0) contributes
six columns (Pinocchio's free-flyer: base linear then angular velocity in the base frame): the
linear ones are prismatic along ``R_0 e_k``, the angular ones revolute about ``R_0 e_k`` through
``p_0``. The acceleration of the frame in a representation is ``J q̈ + J̇ q̇`` — the exact time
derivative of that representation's twist.
"""
import numpy as np
cimport numpy as cnp
from libc.string cimport memset

from mbs_dynamics.kernels._data cimport (finite_result, FREE, REVOLUTE, Data, KModel, alias3, as_input, as_out,
                                         claim, unclaim,
                                         check_finite, check_quat, vec)
from mbs_dynamics.kernels._spatial cimport compose, joint_pose, quat_pose

from mbs_dynamics.kinematics.frames import frame_table, representation_index, unknown_frame

cnp.import_array()

cdef enum:
    BODY = 0
    SPATIAL = 1
    HYBRID = 2
    MIXED = 3


cdef class FrameData:
    """The frame table of a model packed for the kernels, and their scratch (one thread at a
    time: the entries take the Data's owner flag, ``claim``/``unclaim`` of ``_data.pxd``).

    Attributes:
        names: the frame names (:func:`~.frames.frame_names` order).
        index: name → row.
    """
    cdef Data d
    cdef readonly tuple names
    cdef readonly dict index
    cdef int nf
    cdef object _body      # (nf,) intc: kernel body of each frame (−1: the fixed base = world)
    cdef object _S         # (nf, 12): pose of the frame in its body, R (row-major 9), p (3)
    cdef object _scratch   # chain (nb,) ints, world poses (nb, 12), velocities (nb, 6)
    cdef object _chain
    cdef object _J
    cdef object _Jd
    cdef int* fbody
    cdef double* fS
    cdef int* chain
    cdef double* Cw
    cdef double* Vw
    cdef double* Jb
    cdef double* Jdb

    def __init__(self, Data d, model):
        self.d = d
        t = frame_table(model)
        fb = 1 if model.floating_base else 0
        self.names = t.names
        self.index = dict(t.index)
        self.nf = len(t.names)
        body = np.asarray(t.body, dtype=np.intc) + fb
        if not fb:
            body[np.asarray(t.body) < 0] = -1
        self._body = np.ascontiguousarray(body, dtype=np.intc)
        S = np.empty((self.nf, 12))
        S[:, :9] = np.asarray(t.pose)[:, :3, :3].reshape(-1, 9)
        S[:, 9:] = np.asarray(t.pose)[:, :3, 3]
        self._S = S
        nb, nv = d.m.nb, d.m.nv
        self._chain = np.zeros(max(nb, 1), dtype=np.intc)
        self._scratch = np.zeros((max(nb, 1), 18))
        self._J = np.zeros((6, max(nv, 1)))
        self._Jd = np.zeros((6, max(nv, 1)))
        self.fbody = <int*> cnp.PyArray_DATA(self._body)
        self.fS = <double*> cnp.PyArray_DATA(self._S)
        self.chain = <int*> cnp.PyArray_DATA(self._chain)
        self.Cw = <double*> cnp.PyArray_DATA(self._scratch)
        self.Vw = self.Cw + 12
        self.Jb = <double*> cnp.PyArray_DATA(self._J)
        self.Jdb = <double*> cnp.PyArray_DATA(self._Jd)

    def __len__(self):
        return self.nf


# ---------------------------------------------------------------------------------------------
# the core: one frame, one sample
# ---------------------------------------------------------------------------------------------
cdef inline void cross(const double* a, const double* b, double* c) noexcept nogil:
    c[0] = a[1] * b[2] - a[2] * b[1]
    c[1] = a[2] * b[0] - a[0] * b[2]
    c[2] = a[0] * b[1] - a[1] * b[0]


cdef inline void rt_mul(const double* R, const double* x, double* y) noexcept nogil:
    """y = Rᵀ x (R row-major)."""
    y[0] = R[0] * x[0] + R[3] * x[1] + R[6] * x[2]
    y[1] = R[1] * x[0] + R[4] * x[1] + R[7] * x[2]
    y[2] = R[2] * x[0] + R[5] * x[1] + R[8] * x[2]


cdef int support(FrameData fd, int f) noexcept nogil:
    """The bodies supporting frame f, root first, into fd.chain; returns their number."""
    cdef const int* parent = fd.d.m.parent
    cdef int b = fd.fbody[f], L = 0, i, t
    while b >= 0:
        fd.chain[L] = b
        L += 1
        b = parent[b]
    for i in range(L // 2):
        t = fd.chain[i]
        fd.chain[i] = fd.chain[L - 1 - i]
        fd.chain[L - 1 - i] = t
    return L


cdef int forward(FrameData fd, int f, const double* q, const double* v, double* Cf,
                 double* wf, double* pdf) noexcept nogil:
    """World poses (and with v: ω, ṗ) of the supporting bodies into fd.Cw / fd.Vw (rows of 18:
    pose 12, ω 3, ṗ 3); the frame pose into Cf (12) and, with v, ω_f and ṗ_f. Returns L."""
    cdef const KModel* m = &fd.d.m
    cdef int L = support(fd, f), k, b, par = -1, fb = m.fb, a
    cdef double T[12]
    cdef double* C
    cdef double* P = NULL
    cdef double ax[3]
    cdef double d[3]
    cdef double t3[3]
    cdef double qd
    for k in range(L):
        b = fd.chain[k]
        C = fd.Cw + 18 * k
        if m.jtype[b] == FREE:
            quat_pose(q, C)
            if v != NULL:
                # ω_0 = R_0 v_ang, ṗ_0 = R_0 v_lin (the free-flyer velocity is in the base frame)
                for a in range(3):
                    C[12 + a] = C[3 * a] * v[3] + C[3 * a + 1] * v[4] + C[3 * a + 2] * v[5]
                    C[15 + a] = C[3 * a] * v[0] + C[3 * a + 1] * v[1] + C[3 * a + 2] * v[2]
            continue
        joint_pose(m, b, q[b + 6 * fb], T)
        if k == 0:
            for a in range(12):
                C[a] = T[a]
        else:
            P = fd.Cw + 18 * (k - 1)
            compose(P, T, C)
        if v == NULL:
            continue
        # world axis a_b = R_b e_b
        for a in range(3):
            ax[a] = (C[3 * a] * m.axis[3 * b] + C[3 * a + 1] * m.axis[3 * b + 1]
                     + C[3 * a + 2] * m.axis[3 * b + 2])
        qd = v[b + 5 * fb]
        if k == 0:
            for a in range(6):
                C[12 + a] = 0.0
        else:
            for a in range(3):
                d[a] = C[9 + a] - P[9 + a]
            cross(P + 12, d, t3)
            for a in range(3):
                C[12 + a] = P[12 + a]
                C[15 + a] = P[15 + a] + t3[a]
        if m.jtype[b] == REVOLUTE:
            for a in range(3):
                C[12 + a] += qd * ax[a]
        else:
            for a in range(3):
                C[15 + a] += qd * ax[a]
    # the frame: C_f = C_b S_f
    if L == 0:
        for a in range(12):
            Cf[a] = fd.fS[12 * f + a]
        if v != NULL:
            for a in range(3):
                wf[a] = 0.0
                pdf[a] = 0.0
        return 0
    C = fd.Cw + 18 * (L - 1)
    compose(C, fd.fS + 12 * f, Cf)
    if v != NULL:
        for a in range(3):
            d[a] = Cf[9 + a] - C[9 + a]
        cross(C + 12, d, t3)
        for a in range(3):
            wf[a] = C[12 + a]
            pdf[a] = C[15 + a] + t3[a]
    return L


cdef inline void emit(int rep, const double* Cf, const double* wf, const double* pdf,
                      const double* l, const double* an, const double* ld, const double* ad,
                      double* J, double* Jd, int c, int nv) noexcept nogil:
    """Write the hybrid column (l, a) (and its derivative (l̇, ȧ) when Jd) in representation
    ``rep`` into column c of J (6, nv) (and Jd), rows (linear, angular)."""
    cdef double x[3]
    cdef double y[3]
    cdef double z[3]
    cdef int a
    if rep == HYBRID:
        for a in range(3):
            J[a * nv + c] = l[a]
            J[(3 + a) * nv + c] = an[a]
        if Jd != NULL:
            for a in range(3):
                Jd[a * nv + c] = ld[a]
                Jd[(3 + a) * nv + c] = ad[a]
        return
    if rep == SPATIAL:
        cross(Cf + 9, an, x)
        for a in range(3):
            J[a * nv + c] = l[a] + x[a]
            J[(3 + a) * nv + c] = an[a]
        if Jd != NULL:
            cross(pdf, an, y)
            cross(Cf + 9, ad, z)
            for a in range(3):
                Jd[a * nv + c] = ld[a] + y[a] + z[a]
                Jd[(3 + a) * nv + c] = ad[a]
        return
    # body and mixed: the angular rows are R_fᵀ a, derivative R_fᵀ(ȧ − ω_f × a)
    rt_mul(Cf, an, x)
    for a in range(3):
        J[(3 + a) * nv + c] = x[a]
    if Jd != NULL:
        cross(wf, an, y)
        for a in range(3):
            y[a] = ad[a] - y[a]
        rt_mul(Cf, y, x)
        for a in range(3):
            Jd[(3 + a) * nv + c] = x[a]
    if rep == MIXED:
        for a in range(3):
            J[a * nv + c] = l[a]
        if Jd != NULL:
            for a in range(3):
                Jd[a * nv + c] = ld[a]
        return
    rt_mul(Cf, l, x)
    for a in range(3):
        J[a * nv + c] = x[a]
    if Jd != NULL:
        cross(wf, l, y)
        for a in range(3):
            y[a] = ld[a] - y[a]
        rt_mul(Cf, y, x)
        for a in range(3):
            Jd[a * nv + c] = x[a]


cdef void columns(FrameData fd, int L, int rep, const double* Cf, const double* wf,
                  const double* pdf, double* J, double* Jd) noexcept nogil:
    """The columns of the supporting joints (zeros elsewhere) into J (and Jd when not NULL)."""
    cdef const KModel* m = &fd.d.m
    cdef int nv = m.nv, k, b, a, j, c
    cdef double* C
    cdef double an[3]
    cdef double l[3]
    cdef double ad[3]
    cdef double ld[3]
    cdef double r[3]
    cdef double dp[3]
    cdef double t3[3]
    cdef double zero[3]
    cdef int i
    for i in range(3):
        zero[i] = 0.0
        dp[i] = 0.0
        ld[i] = 0.0
        ad[i] = 0.0
    memset(J, 0, 6 * nv * sizeof(double))
    if Jd != NULL:
        memset(Jd, 0, 6 * nv * sizeof(double))
    for k in range(L):
        b = fd.chain[k]
        C = fd.Cw + 18 * k
        for a in range(3):
            r[a] = Cf[9 + a] - C[9 + a]          # p_f − p_b
            if Jd != NULL:
                dp[a] = pdf[a] - C[15 + a]       # ṗ_f − ṗ_b
        if m.jtype[b] == FREE:
            for j in range(3):
                for a in range(3):
                    an[a] = C[3 * a + j]         # R_0 e_j
                # linear column j: a prismatic joint along R_0 e_j
                if Jd != NULL:
                    cross(C + 12, an, ld)
                emit(rep, Cf, wf, pdf, an, zero, ld, zero, J, Jd, j, nv)
                # angular column 3 + j: a revolute joint about R_0 e_j through p_0
                cross(an, r, l)
                if Jd != NULL:
                    cross(C + 12, an, ad)
                    cross(ad, r, ld)
                    cross(an, dp, t3)
                    for a in range(3):
                        ld[a] += t3[a]
                emit(rep, Cf, wf, pdf, l, an, ld, ad, J, Jd, 3 + j, nv)
            continue
        c = b + 5 * m.fb
        for a in range(3):
            an[a] = (C[3 * a] * m.axis[3 * b] + C[3 * a + 1] * m.axis[3 * b + 1]
                     + C[3 * a + 2] * m.axis[3 * b + 2])
        if m.jtype[b] == REVOLUTE:
            cross(an, r, l)
            if Jd != NULL:
                cross(C + 12, an, ad)
                cross(ad, r, ld)
                cross(an, dp, t3)
                for a in range(3):
                    ld[a] += t3[a]
            emit(rep, Cf, wf, pdf, l, an, ld, ad, J, Jd, c, nv)
        else:
            if Jd != NULL:
                cross(C + 12, an, ld)
            emit(rep, Cf, wf, pdf, an, zero, ld, zero, J, Jd, c, nv)


cdef inline void twist(int rep, const double* Cf, const double* wf, const double* pdf,
                       double* out) noexcept nogil:
    """The frame's twist (linear, angular) in ``rep`` from ω_f, ṗ_f (world)."""
    cdef double x[3]
    cdef int a
    if rep == HYBRID:
        for a in range(3):
            out[a] = pdf[a]
            out[3 + a] = wf[a]
    elif rep == SPATIAL:
        cross(Cf + 9, wf, x)     # velocity of the point at the world origin: ṗ − ω × p
        for a in range(3):
            out[a] = pdf[a] + x[a]
            out[3 + a] = wf[a]
    else:
        rt_mul(Cf, wf, out + 3)
        if rep == MIXED:
            for a in range(3):
                out[a] = pdf[a]
        else:
            rt_mul(Cf, pdf, out)


cdef inline void pose_out(const double* Cf, double* o) noexcept nogil:
    o[0], o[1], o[2], o[3] = Cf[0], Cf[1], Cf[2], Cf[9]
    o[4], o[5], o[6], o[7] = Cf[3], Cf[4], Cf[5], Cf[10]
    o[8], o[9], o[10], o[11] = Cf[6], Cf[7], Cf[8], Cf[11]
    o[12], o[13], o[14], o[15] = 0.0, 0.0, 0.0, 1.0


# ---------------------------------------------------------------------------------------------
# public entries (robot.py passes the FrameData, the arguments as given)
# ---------------------------------------------------------------------------------------------
cdef inline int frame_of(FrameData fd, object frame) except -1:
    cdef object i = fd.index.get(frame) if isinstance(frame, str) else None
    if i is None:
        raise unknown_frame(frame, fd.names)
    return <int> i


cdef inline int rep_of(object rep) except -1:
    if rep == "body":
        return BODY
    if rep == "spatial":
        return SPATIAL
    if rep == "hybrid":
        return HYBRID
    if rep == "mixed":
        return MIXED
    return representation_index(rep)  # raises the ValueError listing the four


cdef inline bint is_batch(object x):
    """A 2-D input (N, ·) — NumPy arrays by their ndim, anything else converted once."""
    if cnp.PyArray_Check(x):
        return cnp.PyArray_NDIM(<cnp.ndarray> x) == 2
    return np.ndim(x) == 2


cdef object take_q(FrameData fd, object q, bint batch):
    cdef const KModel* m = &fd.d.m
    if batch:
        q = as_input(q, "q", 2, (-1, m.nq))
    else:
        q = vec(q, "q", m.nq)
    check_finite(q, "q")
    check_quat(m, q, "q")
    return q


cdef object take_v(FrameData fd, object x, str name, Py_ssize_t N):
    cdef const KModel* m = &fd.d.m
    if N < 0:
        x = vec(x, name, m.nv)
    else:
        x = as_input(x, name, 2, (N, m.nv))
    check_finite(x, name)
    return x


cdef object out_of(object out, bint batch, Py_ssize_t N, Py_ssize_t r, Py_ssize_t c):
    """The result array: (r, c) (c = 0: (r,)), or (N, r, c) / (N, r) for a batch; ``out`` checked
    by :func:`~mbs_dynamics.kernels._data.as_out`."""
    cdef cnp.npy_intp dims[3]
    cdef int nd = 0
    if batch:
        dims[0] = N
        nd = 1
    dims[nd] = r
    nd += 1
    if c > 0:
        dims[nd] = c
        nd += 1
    cdef cnp.ndarray o
    cdef int i
    if out is None:
        return cnp.PyArray_EMPTY(nd, dims, cnp.NPY_DOUBLE, 0)
    if cnp.PyArray_CheckExact(out):
        o = <cnp.ndarray> out
        if (cnp.PyArray_TYPE(o) == cnp.NPY_DOUBLE and cnp.PyArray_IS_C_CONTIGUOUS(o)
                and cnp.PyArray_ISWRITEABLE(o) and cnp.PyArray_NDIM(o) == nd):
            for i in range(nd):
                if cnp.PyArray_DIM(o, i) != dims[i]:
                    break
            else:
                return out
    return as_out(out, "out", tuple([dims[i] for i in range(nd)]))


cdef object _placement(FrameData fd, q, frame, out=None):
    """(4, 4) world pose of ``frame`` at q (nq,), or (N, 4, 4) for q (N, nq)."""
    cdef int f = frame_of(fd, frame)
    cdef bint batch = is_batch(q)
    q = take_q(fd, q, batch)
    cdef const KModel* m = &fd.d.m
    cdef Py_ssize_t N = q.shape[0] if batch else 1, s
    cdef double Cf[12]
    fresh = out is None
    out = res = out_of(out, batch, N, 4, 4)
    if not fresh:
        res = alias3(out, q, None, None)
    cdef double* pq = <double*> cnp.PyArray_DATA(q)
    cdef double* po = <double*> cnp.PyArray_DATA(res)
    for s in range(N):
        forward(fd, f, pq + s * m.nq, NULL, Cf, NULL, NULL)
        pose_out(Cf, po + 16 * s)
    if res is not out:
        out[...] = res
    return out


cdef object _velocity(FrameData fd, q, qd, frame, representation, out=None):
    """(6,) twist (linear, angular) of ``frame`` in ``representation``; (N, 6) for batches."""
    cdef int f = frame_of(fd, frame), rep = rep_of(representation)
    cdef bint batch = is_batch(q)
    q = take_q(fd, q, batch)
    cdef Py_ssize_t N = q.shape[0] if batch else 1, s
    qd = take_v(fd, qd, "qd", N if batch else -1)
    cdef const KModel* m = &fd.d.m
    cdef double Cf[12]
    cdef double wf[3]
    cdef double pdf[3]
    fresh = out is None
    out = res = out_of(out, batch, N, 6, 0)
    if not fresh:
        res = alias3(out, q, qd, None)
    cdef double* pq = <double*> cnp.PyArray_DATA(q)
    cdef double* pv = <double*> cnp.PyArray_DATA(qd)
    cdef double* po = <double*> cnp.PyArray_DATA(res)
    for s in range(N):
        forward(fd, f, pq + s * m.nq, pv + s * m.nv, Cf, wf, pdf)
        twist(rep, Cf, wf, pdf, po + 6 * s)
    if res is not out:
        out[...] = res
    return out


cdef object _jacobian(FrameData fd, q, frame, representation, out=None):
    """(6, nv) Jacobian of ``frame`` in ``representation`` (rows linear, angular); (N, 6, nv)."""
    cdef int f = frame_of(fd, frame), rep = rep_of(representation)
    cdef bint batch = is_batch(q)
    q = take_q(fd, q, batch)
    cdef const KModel* m = &fd.d.m
    cdef Py_ssize_t N = q.shape[0] if batch else 1, s
    cdef int L, nv = m.nv
    cdef double Cf[12]
    fresh = out is None
    out = res = out_of(out, batch, N, 6, nv)
    if not fresh:
        res = alias3(out, q, None, None)
    cdef double* pq = <double*> cnp.PyArray_DATA(q)
    cdef double* po = <double*> cnp.PyArray_DATA(res)
    for s in range(N):
        L = forward(fd, f, pq + s * m.nq, NULL, Cf, NULL, NULL)
        columns(fd, L, rep, Cf, NULL, NULL, po + 6 * nv * s, NULL)
    if res is not out:
        out[...] = res
    return out


cdef object _jacobian_derivative(FrameData fd, q, qd, frame, representation, out=None):
    """(6, nv) J̇ = d/dt J(q(t)) at (q, q̇) in ``representation``; (N, 6, nv) for batches."""
    cdef int f = frame_of(fd, frame), rep = rep_of(representation)
    cdef bint batch = is_batch(q)
    q = take_q(fd, q, batch)
    cdef Py_ssize_t N = q.shape[0] if batch else 1, s
    qd = take_v(fd, qd, "qd", N if batch else -1)
    cdef const KModel* m = &fd.d.m
    cdef int L, nv = m.nv
    cdef double Cf[12]
    cdef double wf[3]
    cdef double pdf[3]
    fresh = out is None
    out = res = out_of(out, batch, N, 6, nv)
    if not fresh:
        res = alias3(out, q, qd, None)
    cdef double* pq = <double*> cnp.PyArray_DATA(q)
    cdef double* pv = <double*> cnp.PyArray_DATA(qd)
    cdef double* po = <double*> cnp.PyArray_DATA(res)
    for s in range(N):
        L = forward(fd, f, pq + s * m.nq, pv + s * nv, Cf, wf, pdf)
        columns(fd, L, rep, Cf, wf, pdf, fd.Jb, po + 6 * nv * s)
    if res is not out:
        out[...] = res
    return out


cdef object _acceleration(FrameData fd, q, qd, qdd, frame, representation, out=None):
    """(6,) d/dt of the frame's twist in ``representation`` = J q̈ + J̇ q̇; (N, 6) for batches."""
    cdef int f = frame_of(fd, frame), rep = rep_of(representation)
    cdef bint batch = is_batch(q)
    q = take_q(fd, q, batch)
    cdef Py_ssize_t N = q.shape[0] if batch else 1, s
    qd = take_v(fd, qd, "qd", N if batch else -1)
    qdd = take_v(fd, qdd, "qdd", N if batch else -1)
    cdef const KModel* m = &fd.d.m
    cdef int L, nv = m.nv, r, c, k, b, c0, c1
    cdef double Cf[12]
    cdef double wf[3]
    cdef double pdf[3]
    cdef double acc
    fresh = out is None
    out = res = out_of(out, batch, N, 6, 0)
    if not fresh:
        res = alias3(out, q, qd, qdd)
    cdef double* pq = <double*> cnp.PyArray_DATA(q)
    cdef double* pv = <double*> cnp.PyArray_DATA(qd)
    cdef double* pa = <double*> cnp.PyArray_DATA(qdd)
    cdef double* po = <double*> cnp.PyArray_DATA(res)
    cdef double* v
    cdef double* a
    for s in range(N):
        v = pv + s * nv
        a = pa + s * nv
        L = forward(fd, f, pq + s * m.nq, v, Cf, wf, pdf)
        columns(fd, L, rep, Cf, wf, pdf, fd.Jb, fd.Jdb)
        for r in range(6):
            acc = 0.0
            for k in range(L):   # only the supporting columns are non-zero
                b = fd.chain[k]
                if m.jtype[b] == FREE:
                    c0, c1 = 0, 6
                else:
                    c0 = b + 5 * m.fb
                    c1 = c0 + 1
                for c in range(c0, c1):
                    acc += fd.Jb[r * nv + c] * a[c] + fd.Jdb[r * nv + c] * v[c]
            po[6 * s + r] = acc
    if res is not out:
        out[...] = res
    return out


# ---------------------------------------------------------------------------------------------
# the public entries: each takes the Data's owner flag (one thread at a time, kernels/_data.pxd)
# ---------------------------------------------------------------------------------------------

def placement(FrameData fd, q, frame, out=None):
    """(4, 4) world pose of ``frame`` at q (nq,), or (N, 4, 4) for q (N, nq)."""
    claim(fd.d)
    try:
        return finite_result(_placement(fd, q, frame, out), "placement")
    finally:
        unclaim(fd.d)


def velocity(FrameData fd, q, qd, frame, representation, out=None):
    """(6,) twist (linear, angular) of ``frame`` in ``representation``; (N, 6) for batches."""
    claim(fd.d)
    try:
        return finite_result(_velocity(fd, q, qd, frame, representation, out), "velocity")
    finally:
        unclaim(fd.d)


def jacobian(FrameData fd, q, frame, representation, out=None):
    """(6, nv) Jacobian of ``frame`` in ``representation`` (rows linear, angular); (N, 6, nv)."""
    claim(fd.d)
    try:
        return finite_result(_jacobian(fd, q, frame, representation, out), "jacobian")
    finally:
        unclaim(fd.d)


def jacobian_derivative(FrameData fd, q, qd, frame, representation, out=None):
    """(6, nv) J̇ = d/dt J(q(t)) at (q, q̇) in ``representation``; (N, 6, nv) for batches."""
    claim(fd.d)
    try:
        return finite_result(_jacobian_derivative(fd, q, qd, frame, representation, out), "jacobian_derivative")
    finally:
        unclaim(fd.d)


def acceleration(FrameData fd, q, qd, qdd, frame, representation, out=None):
    """(6,) d/dt of the frame's twist in ``representation`` = J q̈ + J̇ q̇; (N, 6) for batches."""
    claim(fd.d)
    try:
        return finite_result(_acceleration(fd, q, qd, qdd, frame, representation, out), "acceleration")
    finally:
        unclaim(fd.d)
