# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The compiled per-call path of :class:`~mbs_dynamics.model.lie_joints.LieJointRobot`: spherical
and free joints inside the tree, through a chart of 1-DOF joints re-centred at every call.

A :class:`LieChart` holds the chart robot's :class:`~mbs_dynamics.kernels._data.Data` and every
buffer a call needs (allocated once, grown only for a higher derivative order). Per call it

- checks ``q`` and re-centres the chart at it: each group's unit quaternion → R (and p), the
  first chart joint's origin ``B ← B₀ (R, p)`` written into the packed model in place (the
  Rodrigues terms ``B_R ẽ``, ``B_R ẽ²``, ``B_R e`` as ``Data.set_origins``); nothing is done when
  ``q`` is the last one;
- maps the group velocity jet ``V^(k)`` to the chart's ``φ^(k+1)``: φ̇ = V and
  φ̈ = V̇ − J̇b V with J̇b = Σᵢ Vᵢ ∂ᵢJb (the constant partials at φ = 0); for higher orders the
  truncated Taylor series of Jb(φ(t)) (Müller, "Screw and Lie group theory in multibody
  dynamics", 2018: canonical coordinates of the second kind), solved order by order from
  ``V^(k) = Σ_j C(k, j) Jb^(j) φ^(k+1−j)``;
- runs the chart's compiled recursion (RNEA, its jets, CRBA) at φ = 0 (Jb = I) and maps the
  forces back, τ_group = Jb⁻ᵀ τ_chart as series;
- maps the chart's (∂τ/∂φ, ∂τ/∂φ̇, M) to the group's (Pinocchio's convention, ∂/∂q along q ⊕ δ)
  with ∂ᵢJb and ∂ᵢ∂ⱼJb (``LieJointRobot.inverse_dynamics_derivatives``' docstring).

The model layer (``model/lie_joints.py``) owns the meaning (the chart, the constant partials);
this module only runs the numbers. A chart robot has a fixed base (nv = nq of the chart = nb).
"""
import numpy as np
cimport numpy as cnp
from libc.math cimport cos, sin, sqrt, fabs
from libc.string cimport memcmp, memcpy, memset

from mbs_dynamics.kernels._data cimport (Data, KModel, KWork, claim, unclaim, finite_result,
                                         out_vec, out_mat, as_out, seat_origin,
                                         load_fx)
from mbs_dynamics.kernels._rnea cimport rnea0, rnea_jet
from mbs_dynamics.kernels._crba cimport crba
from mbs_dynamics.kernels._aba cimport aba_core
from mbs_dynamics.kernels import _rnea, _aba

cnp.import_array()

cdef enum:
    SPHERICAL = 0
    FLOATING = 1


cdef inline double* _p(object a):
    return <double*> cnp.PyArray_DATA(a)


cdef inline bint _exact(object x, int ndim, Py_ssize_t n0, Py_ssize_t n1):
    """x is a C-contiguous float64 array of shape (n0,) or (n0, n1)."""
    cdef cnp.ndarray a
    if not cnp.PyArray_CheckExact(x):
        return False
    a = <cnp.ndarray> x
    if not (cnp.PyArray_TYPE(a) == cnp.NPY_DOUBLE and cnp.PyArray_IS_C_CONTIGUOUS(a)
            and cnp.PyArray_NDIM(a) == ndim and cnp.PyArray_DIM(a, 0) == n0):
        return False
    return ndim == 1 or cnp.PyArray_DIM(a, 1) == n1


cdef inline bint _overlaps(object a, object b):
    """The data of two C-contiguous float64 arrays share memory."""
    cdef char* p = <char*> cnp.PyArray_DATA(a)
    cdef char* r = <char*> cnp.PyArray_DATA(b)
    return r < p + cnp.PyArray_NBYTES(a) and p < r + cnp.PyArray_NBYTES(b)


cdef inline bint _finite(const double* x, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i
    cdef double acc = 0.0
    for i in range(n):
        acc += x[i] * 0.0        # NaN for NaN or ±inf, 0 otherwise
    return acc == 0.0


def _nonzeros(D, int nd):
    """(n, nd + 1) rows (indices…, value) of the non-zero entries of D (∂Jb is sparse: 3 of
    27 entries of a spherical joint's ∂ᵢJb, 9 of 216 of a free joint's)."""
    D = np.asarray(D, dtype=float)
    idx = np.argwhere(D != 0.0)
    if D.ndim != nd:
        raise ValueError(f"expected a {nd}-index array of partial derivatives, got {D.shape}")
    return np.ascontiguousarray(np.hstack([idx.astype(float), D[tuple(idx.T)][:, None]]))


cdef class LieChart:
    """The chart of a LieJointRobot with its buffers (module docstring).

    Args:
        data: the chart robot's Data (fixed base).
        nq: the group configuration size.
        groups: (ng, 4) int rows (kind 0 spherical | 1 floating, first chart coordinate = body,
            first q index, d = 3 | 6).
        names: (ng,) joint names (error messages).
        B0: (ng, 4, 4) original origin of each group's first chart joint.
        jv, jq: chart coordinate and q index of every 1-DOF joint.
        D1s, D2s, D1f, D2f: ∂ᵢJb (d, d, d) and ∂ᵢ∂ⱼJb (d, d, d, d) at φ = 0, spherical and free.
    """
    cdef readonly Data data
    cdef int nv, nq, ng, nj
    cdef int[:, ::1] groups
    cdef long[::1] jv, jq
    cdef list names
    cdef double[:, :, ::1] B0
    cdef double[:, ::1] nz1s, nz2s, nz1f, nz2f   # the non-zeros (indices…, value) of each
    cdef object qlast, qc, rates, tc, st, rk, fx
    cdef bint valid
    # series buffers (grown with the order)
    cdef int kcap
    cdef object ser_s, ser_c, ser_J, ser_R, ser_RR, ser_phi, ser_u, ser_all, fact

    def __init__(self, Data data, int nq, groups, list names, B0, jv, jq, D1s, D2s, D1f, D2f):
        self.data = data
        self.nv = data.m.nv
        self.nq = nq
        self.groups = np.ascontiguousarray(groups, dtype=np.intc).reshape(-1, 4)
        self.ng = self.groups.shape[0]
        self.names = list(names)
        self.B0 = np.ascontiguousarray(B0, dtype=float).reshape(-1, 4, 4).copy()
        self.jv = np.ascontiguousarray(jv, dtype=np.int_)
        self.jq = np.ascontiguousarray(jq, dtype=np.int_)
        self.nj = self.jv.shape[0]
        self.nz1s, self.nz2s = _nonzeros(D1s, 3), _nonzeros(D2s, 4)
        self.nz1f, self.nz2f = _nonzeros(D1f, 3), _nonzeros(D2f, 4)
        self.qlast = np.zeros(nq)
        self.qc = np.zeros(self.nv)
        self.valid = False
        self.rates = np.zeros((4, self.nv))
        self.tc = np.zeros(self.nv)
        self.st = np.zeros((3, self.nv))
        self.rk = None
        self.fx = None
        self.kcap = -1
        self.fact = np.ones(1)

    # ------------------------------------------------------------------ input checks
    cdef object _q(self, object q):
        """q as C float64 (nq,), finite (the old Python checks' message)."""
        if not _exact(q, 1, self.nq, 0):
            q = np.asarray(q, dtype=float)
            if q.shape != (self.nq,):
                raise ValueError(f"q must be {self.nq} finite numbers (Pinocchio's layout: "
                                 "(x, y, z,) qx, qy, qz, qw per spherical/floating joint), or a "
                                 f"batch (N, {self.nq}); got shape {q.shape}")
            q = np.ascontiguousarray(q)
        if not _finite(_p(q), self.nq):
            raise ValueError(f"q must be {self.nq} finite numbers (Pinocchio's layout: "
                             "(x, y, z,) qx, qy, qz, qw per spherical/floating joint), or a "
                             f"batch (N, {self.nq}); got shape {q.shape}")
        return q

    cdef object _v(self, object v, str name, Py_ssize_t rows):
        """v as C float64 (nv,) (rows < 0) or (rows, nv), finite."""
        cdef Py_ssize_t n = self.nv
        if not (_exact(v, 1, n, 0) if rows < 0 else _exact(v, 2, rows, n)):
            v = np.ascontiguousarray(np.asarray(v, dtype=float))
            want = (int(n),) if rows < 0 else (int(rows), int(n))
            if v.shape != want:
                raise ValueError(f"{name} must be finite numbers of shape {want}, got {v.shape}")
        if not _finite(_p(v), cnp.PyArray_SIZE(<cnp.ndarray> v)):
            want = (int(n),) if rows < 0 else (int(rows), int(n))
            raise ValueError(f"{name} must be finite numbers of shape {want}, got {v.shape}")
        return v

    cdef tuple _single3(self, q, x, y, str nx, str ny):
        """(q, x, y) of one sample, checked (:meth:`_q`, :meth:`_v`)."""
        return self._q(q), self._v(x, nx, -1), self._v(y, ny, -1)

    # ------------------------------------------------------------------ the chart
    cdef int _recenter(self, const double* q) except -1:
        """Re-seat each group's first chart origin at q (nothing when q is the last one)."""
        cdef double* ql = _p(self.qlast)
        cdef double* qc = _p(self.qc)
        cdef KModel* m = &self.data.m
        cdef int g, b, q0, i, j, l
        cdef double nrm, r0
        cdef double R[9]
        cdef double P[12]
        if self.valid and memcmp(q, ql, self.nq * sizeof(double)) == 0:
            return 0
        for g in range(self.ng):       # every quaternion first: nothing re-seated on an error
            q0 = self.groups[g, 2] + (3 if self.groups[g, 0] == FLOATING else 0)
            nrm = sqrt(q[q0] * q[q0] + q[q0 + 1] * q[q0 + 1] + q[q0 + 2] * q[q0 + 2]
                       + q[q0 + 3] * q[q0 + 3])
            if not fabs(nrm - 1.0) <= 1e-6:
                quat = [q[q0], q[q0 + 1], q[q0 + 2], q[q0 + 3]]
                raise ValueError(f"joint '{self.names[g]}': the quaternion {quat} is not of "
                                 f"unit norm (|q| = {nrm:.6g})")
        self.valid = False
        for j in range(self.nj):
            qc[self.jv[j]] = q[self.jq[j]]
        for g in range(self.ng):
            b = self.groups[g, 1]
            q0 = self.groups[g, 2] + (3 if self.groups[g, 0] == FLOATING else 0)
            _quat_R(q + q0, R)
            # P = B0 (R, p): rotation B0_R R, translation B0_R p + B0_p
            for i in range(3):
                for j in range(3):
                    r0 = 0.0
                    for l in range(3):
                        r0 = r0 + self.B0[g, i, l] * R[3 * l + j]
                    P[3 * i + j] = r0
                r0 = self.B0[g, i, 3]
                if self.groups[g, 0] == FLOATING:
                    r0 = (self.B0[g, i, 0] * q[q0 - 3] + self.B0[g, i, 1] * q[q0 - 2]
                          + self.B0[g, i, 2] * q[q0 - 1]) + r0
                P[9 + i] = r0
            seat_origin(m, b, P)   # the packed model: B_R, B_p, B_R ẽ, B_R ẽ², B_R e
        memcpy(ql, q, self.nq * sizeof(double))
        self.valid = True
        return 0

    cdef inline double[:, ::1] _nz1(self, int g) noexcept:
        return self.nz1s if self.groups[g, 0] == SPHERICAL else self.nz1f

    cdef void _rate(self, int g, const double* V, double* S) noexcept:
        """S = J̇b = Σᵢ Vᵢ ∂ᵢJb (d, d) of group g at φ = 0 with φ̇ = V (V: the group's slice)."""
        cdef int d = self.groups[g, 3], n, r
        cdef double[:, ::1] nz = self._nz1(g)
        for r in range(d * d):
            S[r] = 0.0
        for n in range(nz.shape[0]):   # (i, r, k, ∂ᵢJb[r, k])
            S[d * <int> nz[n, 1] + <int> nz[n, 2]] += V[<int> nz[n, 0]] * nz[n, 3]

    cdef void _accel(self, const double* v, double* a) noexcept:
        """a ← a − J̇b V on every group's slice (φ̈ = V̇ − J̇b V), in place."""
        cdef double S[36]
        cdef int g, d, s0, r, c
        cdef double acc
        for g in range(self.ng):
            d, s0 = self.groups[g, 3], self.groups[g, 1]
            self._rate(g, v + s0, S)
            for r in range(d):
                acc = 0.0
                for c in range(d):
                    acc += S[d * r + c] * v[s0 + c]
                a[s0 + r] -= acc

    cdef void _load(self, const double* v, const double* a) noexcept:
        """qj rows q_c, φ̇ = V, φ̈ = V̇ − J̇b V (K = 0)."""
        cdef KWork* w = &self.data.w
        cdef int nb = self.data.m.nb, i
        cdef double* qc = _p(self.qc)
        for i in range(nb):
            w.qj[i] = qc[i]
            w.qj[nb + i] = v[i]
            w.qj[2 * nb + i] = a[i]
        self._accel(v, w.qj + 2 * nb)

    # ------------------------------------------------------------------ public entries
    def recenter(self, q):
        """Re-centre the chart at q; returns q's chart coordinates (a buffer of this chart,
        valid until the next call: every group coordinate 0)."""
        claim(self.data)
        try:
            q = self._q(q)
            self._recenter(_p(q))
            return self.qc
        finally:
            unclaim(self.data)

    def accel(self, v, a, out=None):
        """Chart rates (φ̇, φ̈) (2, nv) of group velocity and acceleration (K = 0)."""
        v = self._v(v, "qd", -1)
        a = self._v(a, "qdd", -1)
        out = as_out(out, "out", (2, self.nv)) if out is not None else np.empty((2, self.nv))
        memcpy(_p(out), _p(v), self.nv * sizeof(double))
        memcpy(_p(out) + self.nv, _p(a), self.nv * sizeof(double))
        self._accel(_p(v), _p(out) + self.nv)
        return out

    def inverse_dynamics(self, q, qd, qdd, out):
        """τ (nv,) at the group state: the chart's RNEA at φ = 0 with φ̇ = V, φ̈ = V̇ − J̇b V."""
        claim(self.data)
        try:
            q, qd, qdd = self._single3(q, qd, qdd, "qd", "qdd")
            out = out_vec(out, self.nv)
            self._recenter(_p(q))
            self._load(_p(qd), _p(qdd))
            rnea0(&self.data.m, &self.data.w, False, _p(self.tc))
            memcpy(_p(out), _p(self.tc), self.nv * sizeof(double))
            return finite_result(out, "inverse_dynamics")
        finally:
            unclaim(self.data)

    def chart_state(self, q, qd, qdd):
        """Re-centre at q and return (q_c, S) with S (3, nv) rows φ̇ = V, φ̈ = V̇ − J̇b V and the
        chart's τ_c there (buffers of this chart, valid until its next call): what
        ``LieJointRobot.inverse_dynamics_derivatives`` needs besides the chart's derivatives."""
        cdef int nv = self.nv
        cdef double* S = _p(self.st)
        claim(self.data)
        try:
            q, qd, qdd = self._single3(q, qd, qdd, "qd", "qdd")
            self._recenter(_p(q))
            memcpy(S, _p(qd), nv * sizeof(double))
            memcpy(S + nv, _p(qdd), nv * sizeof(double))
            self._accel(S, S + nv)
            self._load(_p(qd), _p(qdd))
            rnea0(&self.data.m, &self.data.w, False, S + 2 * nv)
            return self.qc, self.st
        finally:
            unclaim(self.data)

    def inverse_dynamics_batch(self, q, qd, qdd, out):
        """τ (N, nv) of N states (rows), the chart re-centred per row."""
        claim(self.data)
        try:
            q, qd, qdd = self._batch3(q, qd, qdd, "qd", "qdd")
            N = q.shape[0]
            out = as_out(out, "out", (N, self.nv))
            res = np.empty((N, self.nv))
            self._id_rows(q, qd, qdd, res)
            out[...] = res
            return finite_result(out, "inverse_dynamics")
        finally:
            unclaim(self.data)

    cdef int _id_rows(self, q, qd, qdd, res) except -1:
        cdef Py_ssize_t s, N = q.shape[0]
        cdef double* pq = _p(q)
        cdef double* pv = _p(qd)
        cdef double* pa = _p(qdd)
        cdef double* po = _p(res)
        for s in range(N):
            self._recenter(pq + s * self.nq)
            self._load(pv + s * self.nv, pa + s * self.nv)
            rnea0(&self.data.m, &self.data.w, False, po + s * self.nv)
        return 0

    cdef object _qrows(self, q):
        """A batch q (N, nq) as C float64, finite."""
        q = np.ascontiguousarray(np.asarray(q, dtype=float))
        if q.ndim != 2 or q.shape[1] != self.nq or not _finite(_p(q), q.size):
            raise ValueError(f"q must be {self.nq} finite numbers (Pinocchio's layout: "
                             "(x, y, z,) qx, qy, qz, qw per spherical/floating joint), or a "
                             f"batch (N, {self.nq}); got shape {q.shape}")
        return q

    cdef tuple _batch3(self, q, x, y, str nx, str ny):
        q = self._qrows(q)
        N = q.shape[0]
        out = [q]
        for v, name in ((x, nx), (y, ny)):
            v = np.asarray(v, dtype=float)
            if v.ndim < 2 or len(v) != N:
                raise ValueError(f"a batch needs the same number of rows N = {N} in every "
                                 f"argument, got shape {v.shape}")
            out.append(self._v(np.ascontiguousarray(v), name, N))
        return tuple(out)

    def mass_matrix(self, q, out):
        """M (nv, nv) in the group velocities (the chart's at φ = 0, Jb = I)."""
        claim(self.data)
        try:
            q = self._q(q)
            out = out_mat(out, self.nv, self.nv)
            self._recenter(_p(q))
            self._load_q()
            crba(&self.data.m, &self.data.w, _p(out))
            return finite_result(out, "mass_matrix")
        finally:
            unclaim(self.data)

    def mass_matrix_batch(self, q, out):
        """M (N, nv, nv) of N configurations."""
        cdef Py_ssize_t s, N
        claim(self.data)
        try:
            q = self._qrows(q)
            N = q.shape[0]
            out = as_out(out, "out", (N, self.nv, self.nv))
            res = np.empty((N, self.nv, self.nv))
            for s in range(N):
                self._recenter(_p(q) + s * self.nq)
                self._load_q()
                crba(&self.data.m, &self.data.w, _p(res) + s * self.nv * self.nv)
            out[...] = res
            return finite_result(out, "mass_matrix")
        finally:
            unclaim(self.data)

    cdef void _load_q(self) noexcept:
        cdef KWork* w = &self.data.w
        cdef int i
        cdef double* qc = _p(self.qc)
        for i in range(self.data.m.nb):
            w.qj[i] = qc[i]

    def gravity(self, q, out):
        """g (nv,): the chart's at φ = 0 (Jb = I)."""
        claim(self.data)
        try:
            q = self._q(q)
            self._recenter(_p(q))
            return _rnea.gravity(self.data, self.qc, out)
        finally:
            unclaim(self.data)

    def forward_dynamics(self, q, qd, tau, out):
        """V̇ (nv,): the chart's ABA at φ = 0, then V̇ = φ̈ + J̇b V per group."""
        claim(self.data)
        try:
            q, qd, tau = self._single3(q, qd, tau, "qd", "tau")
            out = out_vec(out, self.nv)
            res = np.empty(self.nv) if _overlaps(out, qd) or _overlaps(out, tau) else out
            self._fd(_p(q), _p(qd), _p(tau), _p(res))
            if res is not out:
                out[...] = res
            return finite_result(out, "forward_dynamics")
        finally:
            unclaim(self.data)

    # ------------------------------------------------------------------ jets
    cdef int _grow(self, int K1) except -1:
        """Series buffers for K1 + 1 coefficients (K1 = rows of the velocity jet)."""
        cdef int k
        if K1 <= self.kcap:
            return 0
        self.ser_s = np.zeros((3, K1 + 1))
        self.ser_c = np.zeros((3, K1 + 1))
        self.ser_J = np.zeros((self.ng, K1 + 1, 36))   # Jb coefficients per group, d×d
        self.ser_R = np.zeros((3, K1 + 1, 9))           # Rx(a)ᵀ, Ry(b)ᵀ, Rz(c)ᵀ
        self.ser_RR = np.zeros((K1 + 1, 9))             # (Rz Ry)
        self.ser_phi = np.zeros((K1 + 1, 6))
        self.ser_u = np.zeros((K1 + 1, 6))            # the series of Jb⁻ᵀ τ of one group
        self.ser_all = np.zeros((K1 + 1, self.nv))      # normalised τ_chart series
        self.fact = np.array([float(np.prod(np.arange(1, k + 1))) for k in range(K1 + 2)])
        self.kcap = K1
        return 0

    cdef void _push(self, int g, int k) noexcept:
        """Coefficient k of Jb(φ(t)) of group g (needs φ's coefficients 0..k in ser_phi)."""
        cdef double* s = _p(self.ser_s)
        cdef double* c = _p(self.ser_c)
        cdef double* phi = _p(self.ser_phi)
        cdef double* J = _p(self.ser_J) + (g * (self.kcap + 1) + k) * 36
        cdef double* Rs = _p(self.ser_R)
        cdef double* RR = _p(self.ser_RR)
        cdef int L = self.kcap + 1, a, j, r = 3 if self.groups[g, 0] == FLOATING else 0
        cdef int d = self.groups[g, 3], i, l, t
        cdef double ss, cc, one = 1.0 if k == 0 else 0.0, acc
        cdef double E[9]
        cdef double* Rk
        for a in range(3):
            if k == 0:
                s[a * L] = sin(phi[r + a])
                c[a * L] = cos(phi[r + a])
            else:
                ss = 0.0
                cc = 0.0
                for j in range(1, k + 1):
                    ss = ss + j * phi[j * 6 + r + a] * c[a * L + k - j]
                    cc = cc + j * phi[j * 6 + r + a] * s[a * L + k - j]
                s[a * L + k] = ss / k
                c[a * L + k] = -cc / k
        # E: sb, cb = s/c[1]; sc, cc = s/c[2]
        acc = 0.0
        for j in range(k + 1):
            acc = acc + c[2 * L + j] * c[L + k - j]
        E[0] = acc
        E[1] = s[2 * L + k]
        E[2] = 0.0
        acc = 0.0
        for j in range(k + 1):
            acc = acc + s[2 * L + j] * c[L + k - j]
        E[3] = -acc
        E[4] = c[2 * L + k]
        E[5] = 0.0
        E[6] = s[L + k]
        E[7] = 0.0
        E[8] = one
        for i in range(d * d):
            J[i] = 0.0
        if d == 3:
            for i in range(9):
                J[i] = E[i]
            return
        for i in range(3):
            for j in range(3):
                J[6 * (3 + i) + 3 + j] = E[3 * i + j]
        # Rx(a)ᵀ, Ry(b)ᵀ, Rz(c)ᵀ coefficient k
        Rk = Rs + (0 * L + k) * 9
        Rk[0], Rk[1], Rk[2] = one, 0.0, 0.0
        Rk[3], Rk[4], Rk[5] = 0.0, c[k], s[k]
        Rk[6], Rk[7], Rk[8] = 0.0, -s[k], c[k]
        Rk = Rs + (1 * L + k) * 9
        Rk[0], Rk[1], Rk[2] = c[L + k], 0.0, -s[L + k]
        Rk[3], Rk[4], Rk[5] = 0.0, one, 0.0
        Rk[6], Rk[7], Rk[8] = s[L + k], 0.0, c[L + k]
        Rk = Rs + (2 * L + k) * 9
        Rk[0], Rk[1], Rk[2] = c[2 * L + k], s[2 * L + k], 0.0
        Rk[3], Rk[4], Rk[5] = -s[2 * L + k], c[2 * L + k], 0.0
        Rk[6], Rk[7], Rk[8] = 0.0, 0.0, one
        # (Rz Ry)_k = Σ_j Rz_j Ry_{k−j}; J_k[:3, :3] = Σ_j (Rz Ry)_j Rx_{k−j}
        for i in range(3):
            for l in range(3):
                acc = 0.0
                for j in range(k + 1):
                    for t in range(3):
                        acc = acc + Rs[(2 * L + j) * 9 + 3 * i + t] * Rs[(L + k - j) * 9 + 3 * t + l]
                RR[k * 9 + 3 * i + l] = acc
        for i in range(3):
            for l in range(3):
                acc = 0.0
                for j in range(k + 1):
                    for t in range(3):
                        acc = acc + RR[j * 9 + 3 * i + t] * Rs[(k - j) * 9 + 3 * t + l]
                J[6 * i + l] = acc

    cdef void _jet_group(self, int g, const double* vs, int K1, double* rates) noexcept:
        """φ^(1..K1) of group g (into rates rows 0..K1−1 at its slice) from V^(0..K1−1) (vs,
        rows of nv), and the series of Jb (ser_J of g, coefficients 0..K1)."""
        cdef int d = self.groups[g, 3], s0 = self.groups[g, 1], nv = self.nv, k, j, r, c
        cdef double* phi = _p(self.ser_phi)
        cdef double* fact = _p(self.fact)
        cdef double* Jg = _p(self.ser_J) + g * (self.kcap + 1) * 36
        cdef double acc
        cdef double sv[6]
        memset(phi, 0, (K1 + 1) * 6 * sizeof(double))
        self._push(g, 0)
        for k in range(K1):
            for r in range(d):
                sv[r] = vs[k * nv + s0 + r] / fact[k]
            for j in range(1, k + 1):
                for r in range(d):
                    acc = 0.0
                    for c in range(d):
                        acc = acc + Jg[j * 36 + d * r + c] * ((k - j + 1) * phi[(k - j + 1) * 6 + c])
                    sv[r] -= acc
            for r in range(d):
                phi[(k + 1) * 6 + r] = sv[r] / (k + 1)
            self._push(g, k + 1)
        for k in range(K1):
            for r in range(d):
                rates[k * nv + s0 + r] = phi[(k + 1) * 6 + r] * fact[k + 1]

    cdef int _prepare_jet(self, int K1) except -1:
        """Buffers and the workspace's order for a velocity jet of K1 rows."""
        if K1 > self.rates.shape[0]:
            self.rates = np.zeros((K1, self.nv))
        if K1 > 2:
            self._grow(K1)
        if K1 - 2 > self.data.kmax:
            self.data.grow(K1 - 2)
        return 0

    cdef int _jet(self, const double* q, const double* vs, int K1, double* po,
                  bint use_fx=False) except -1:
        """τ^(0..K) (K = K1 − 2) into po (K+1, nv) at q, group velocity jet vs (K1, nv);
        buffers ready (:meth:`_prepare_jet`)."""
        cdef int K = K1 - 2, g, k, j, r, c, d, s0, nv = self.nv, l
        cdef double* pr = _p(self.rates)
        cdef double* tn
        cdef double* u
        cdef double* Jg
        cdef double* fact
        cdef double acc
        cdef KWork* w = &self.data.w
        cdef int nb = self.data.m.nb
        cdef double* qc = _p(self.qc)
        self._recenter(q)
        memcpy(pr, vs, K1 * nv * sizeof(double))
        if K1 <= 2:
            self._accel(vs, pr + nv)
        else:
            for g in range(self.ng):
                self._jet_group(g, vs, K1, pr)
        for r in range(nb):
            w.qj[r] = qc[r]
        for k in range(K1):
            for r in range(nb):
                w.qj[(k + 1) * nb + r] = pr[k * nv + r]
        if K == 0:
            rnea_jet(&self.data.m, w, K, use_fx, po)
            return 0
        tn = _p(self.ser_all)
        rnea_jet(&self.data.m, w, K, use_fx, tn)
        fact = _p(self.fact)
        memcpy(po, tn, (K + 1) * nv * sizeof(double))
        for k in range(K + 1):
            for r in range(nv):
                tn[k * nv + r] /= fact[k]
        u = _p(self.ser_u)
        for g in range(self.ng):   # τ_group = Jb⁻ᵀ τ_chart as series: Σ_j Jb_jᵀ u_{k−j} = τ_k
            d, s0 = self.groups[g, 3], self.groups[g, 1]
            Jg = _p(self.ser_J) + g * (self.kcap + 1) * 36
            for k in range(K + 1):   # u_k = τ_k − Σ_{j ≥ 1} Jb_jᵀ u_{k−j} (Jb_0 = I)
                for c in range(d):
                    acc = tn[k * nv + s0 + c]
                    for j in range(1, k + 1):
                        for r in range(d):
                            acc = acc - Jg[j * 36 + d * r + c] * u[(k - j) * 6 + r]
                    u[k * 6 + c] = acc
                for c in range(d):
                    po[k * nv + s0 + c] = fact[k] * u[k * 6 + c]
        return 0

    def torque_derivatives(self, q, vs, out, fx=None):
        """τ, τ′, …, τ^(K) (K+1, nv) of q (nq,) and the group velocity jet vs (K+2, nv); fx:
        optional body wrench jet (K+1, nb, 6) of :meth:`body_wrenches` (a wrench constant in
        its link frame: its rows W, W′, … as given)."""
        cdef int K1
        claim(self.data)
        try:
            q = self._q(q)
            if not _exact(vs, 2, vs.shape[0], self.nv):
                vs = np.ascontiguousarray(vs, dtype=float)
            K1 = vs.shape[0]
            vs = self._v(vs, "vs", K1)
            out = as_out(out, "out", (K1 - 1, self.nv)) if out is not None else np.empty(
                (K1 - 1, self.nv))
            self._prepare_jet(K1)
            res = np.empty_like(out) if _overlaps(out, vs) or _overlaps(out, q) else out
            if fx is not None:
                if not (cnp.PyArray_CheckExact(fx) and fx.dtype == np.float64
                        and fx.flags.c_contiguous
                        and fx.shape == (K1 - 1, self.data.m.nb, 6)):
                    raise ValueError(f"fx must be C float64 of shape ({K1 - 1}, "
                                     f"{self.data.m.nb}, 6)")
                load_fx(self.data, fx, K1 - 1)
            self._jet(_p(q), _p(vs), K1, _p(res), fx is not None)
            if res is not out:
                out[...] = res
            return finite_result(out, "torque_derivatives")
        finally:
            unclaim(self.data)

    def torque_derivatives_batch(self, q, vs, out):
        """(N, K+1, nv) of q (N, nq) and vs (N, K+2, nv), the chart re-centred per row."""
        cdef Py_ssize_t s, N
        cdef int K1
        claim(self.data)
        try:
            q = self._qrows(q)
            N = q.shape[0]
            vs = np.ascontiguousarray(np.asarray(vs, dtype=float))
            if vs.ndim != 3 or vs.shape[0] != N or vs.shape[1] < 2 or vs.shape[2] != self.nv:
                raise ValueError(f"a batch needs vs of shape (N = {N}, k+2, {self.nv}), got "
                                 f"{vs.shape}")
            if not _finite(_p(vs), vs.size):
                raise ValueError(f"vs must be finite numbers of shape (N, k+2, {self.nv})")
            K1 = vs.shape[1]
            out = as_out(out, "out", (N, K1 - 1, self.nv))
            res = np.empty((N, K1 - 1, self.nv))
            self._prepare_jet(K1)
            for s in range(N):
                self._jet(_p(q) + s * self.nq, _p(vs) + s * K1 * self.nv, K1,
                          _p(res) + s * (K1 - 1) * self.nv)
            out[...] = res
            return finite_result(out, "torque_derivatives")
        finally:
            unclaim(self.data)

    # ------------------------------------------------------------------ forward dynamics, g
    cdef int _fd(self, const double* q, const double* v, const double* tau,
                 double* out) except -1:
        """V̇ = φ̈ + J̇b V with φ̈ the chart's ABA at φ = 0, φ̇ = V."""
        cdef KWork* w = &self.data.w
        cdef int nb = self.data.m.nb, i
        cdef double* qc = _p(self.qc)
        cdef double* t = _p(self.tc)
        self._recenter(q)
        for i in range(nb):
            w.qj[i] = qc[i]
            w.qj[nb + i] = v[i]
        if aba_core(&self.data.m, w, tau, False, out):
            _aba._singular()
        for i in range(self.nv):
            t[i] = 0.0
        self._accel(v, t)          # t = −J̇b V
        for i in range(self.nv):
            out[i] -= t[i]
        return 0

    def forward_dynamics_batch(self, q, qd, tau, out):
        """V̇ (N, nv) of N states."""
        cdef Py_ssize_t s, N
        claim(self.data)
        try:
            q, qd, tau = self._batch3(q, qd, tau, "qd", "tau")
            N = q.shape[0]
            out = as_out(out, "out", (N, self.nv))
            res = np.empty((N, self.nv))
            for s in range(N):
                self._fd(_p(q) + s * self.nq, _p(qd) + s * self.nv, _p(tau) + s * self.nv,
                         _p(res) + s * self.nv)
            out[...] = res
            return finite_result(out, "forward_dynamics")
        finally:
            unclaim(self.data)

    def gravity_batch(self, q, out):
        """g (N, nv) of N configurations (the chart's RNEA at rest: the same sums as its
        gravity kernel, with exact zeros added)."""
        cdef Py_ssize_t s, N
        cdef KWork* w = &self.data.w
        cdef int nb = self.data.m.nb, i
        claim(self.data)
        try:
            q = self._qrows(q)
            N = q.shape[0]
            out = as_out(out, "out", (N, self.nv))
            res = np.empty((N, self.nv))
            for s in range(N):
                self._recenter(_p(q) + s * self.nq)
                self._load_q()
                for i in range(nb):
                    w.qj[nb + i] = 0.0
                    w.qj[2 * nb + i] = 0.0
                rnea0(&self.data.m, w, False, _p(res) + s * self.nv)
            out[...] = res
            return finite_result(out, "gravity_torques")
        finally:
            unclaim(self.data)

    # ------------------------------------------------------------------ ∂τ/∂q, ∂τ/∂q̇
    def jacobian_rate(self, v, J, Jd):
        """Jd[:, group] −= J[:, group] J̇b per group, in place (the time derivative of a
        Jacobian in the group velocities: d/dt (J_c Jb) at φ = 0); v: group velocity (nv,),
        J, Jd: C float64 (rows, nv)."""
        cdef double S[36]
        cdef int g, d, s0, r, c, k, rows, nv = self.nv
        cdef double acc
        cdef double* pJ
        cdef double* pD
        v = self._v(v, "qd", -1)
        if not (cnp.PyArray_Check(J) and cnp.PyArray_Check(Jd) and J.ndim == 2
                and J.shape == Jd.shape and J.shape[1] == nv
                and _exact(J, 2, J.shape[0], nv) and _exact(Jd, 2, J.shape[0], nv)):
            raise ValueError(f"jacobian_rate takes two C float64 arrays of shape (rows, {nv})")
        rows = J.shape[0]
        pJ, pD = _p(J), _p(Jd)
        for g in range(self.ng):
            d, s0 = self.groups[g, 3], self.groups[g, 1]
            self._rate(g, _p(v) + s0, S)
            for r in range(rows):
                for c in range(d):
                    acc = 0.0
                    for k in range(d):
                        acc = acc + pJ[r * nv + s0 + k] * S[d * k + c]
                    pD[r * nv + s0 + c] -= acc
        return Jd

    def derivatives_map(self, v, pdd, tc, dq, dv, M):
        """The chart's (∂τ/∂φ, ∂τ/∂φ̇, M) at φ = 0 → the group's (∂τ/∂q, ∂τ/∂q̇), in place in
        dq, dv (C float64 (nv, nv)); v: group velocity, pdd: φ̈, tc: τ_chart. For a group
        coordinate j: ∂φ̇/∂φⱼ = −∂ⱼJb V, ∂φ̈/∂φⱼ = −∂ⱼJb φ̈ − Vᵀ∂ᵢ∂ⱼJb V − Σᵢ (∂φ̇/∂φⱼ)ᵢ ∂ᵢJb V
        − J̇b ∂φ̇/∂φⱼ, column j of ∂τ/∂q = ∂τ_c/∂φⱼ + ∂τ_c/∂φ̇ ∂φ̇/∂φⱼ + M ∂φ̈/∂φⱼ − (∂ⱼJb)ᵀ τ_c,
        of ∂τ/∂q̇ = ∂τ_c/∂φ̇ⱼ + M (∂φ̇/∂φⱼ − J̇b eⱼ) (the sums over the non-zeros of ∂Jb)."""
        cdef double* V = _p(v)
        cdef double* P2 = _p(pdd)
        cdef double* T = _p(tc)
        cdef double* DQ = _p(dq)
        cdef double* DV = _p(dv)
        cdef double* Mm = _p(M)
        cdef int nv = self.nv, g, d, s0, i, j, k, r, row, n
        cdef double[:, ::1] nz1
        cdef double[:, ::1] nz2
        cdef double S[36]
        cdef double Dp[36]    # row j: ∂φ̇/∂φⱼ
        cdef double Dpp[36]   # row j: ∂φ̈/∂φⱼ
        cdef double acc, val
        if not (_exact(v, 1, nv, 0) and _exact(pdd, 1, nv, 0) and _exact(tc, 1, nv, 0)
                and _exact(dq, 2, nv, nv) and _exact(dv, 2, nv, nv) and _exact(M, 2, nv, nv)):
            raise ValueError(f"derivatives_map takes C float64 arrays of shapes ({nv},) and "
                             f"({nv}, {nv})")
        for g in range(self.ng):
            d, s0 = self.groups[g, 3], self.groups[g, 1]
            nz1 = self._nz1(g)
            nz2 = self.nz2s if self.groups[g, 0] == SPHERICAL else self.nz2f
            self._rate(g, V + s0, S)
            for r in range(d * d):
                Dp[r] = 0.0
                Dpp[r] = 0.0
            for n in range(nz1.shape[0]):          # (i, r, k, ∂ᵢJb[r, k])
                i, r, k, val = <int> nz1[n, 0], <int> nz1[n, 1], <int> nz1[n, 2], nz1[n, 3]
                Dp[d * i + r] -= val * V[s0 + k]
                Dpp[d * i + r] -= val * P2[s0 + k]
            for n in range(nz2.shape[0]):          # (i, j, r, k, ∂ᵢ∂ⱼJb[r, k])
                i, j, r, k = <int> nz2[n, 0], <int> nz2[n, 1], <int> nz2[n, 2], <int> nz2[n, 3]
                Dpp[d * j + r] -= V[s0 + i] * nz2[n, 4] * V[s0 + k]
            for j in range(d):
                for n in range(nz1.shape[0]):
                    i, r, k, val = <int> nz1[n, 0], <int> nz1[n, 1], <int> nz1[n, 2], nz1[n, 3]
                    Dpp[d * j + r] -= Dp[d * j + i] * val * V[s0 + k]
                for r in range(d):
                    acc = 0.0
                    for k in range(d):
                        acc = acc + S[d * r + k] * Dp[d * j + k]
                    Dpp[d * j + r] -= acc
            for j in range(d):                     # ∂τ/∂q (reads ∂τ_c/∂φ̇ before it changes)
                for row in range(nv):
                    acc = DQ[row * nv + s0 + j]
                    for k in range(d):
                        acc = acc + (DV[row * nv + s0 + k] * Dp[d * j + k]
                                     + Mm[row * nv + s0 + k] * Dpp[d * j + k])
                    DQ[row * nv + s0 + j] = acc
            for n in range(nz1.shape[0]):          # − (∂ⱼJb)ᵀ τ_c on the group's rows
                j, k, r, val = <int> nz1[n, 0], <int> nz1[n, 1], <int> nz1[n, 2], nz1[n, 3]
                DQ[(s0 + r) * nv + s0 + j] -= val * T[s0 + k]
            for j in range(d):                     # ∂τ/∂q̇
                for row in range(nv):
                    acc = DV[row * nv + s0 + j]
                    for k in range(d):
                        acc = acc + Mm[row * nv + s0 + k] * (Dp[d * j + k] - S[d * k + j])
                    DV[row * nv + s0 + j] = acc
        return dq, dv

    # ------------------------------------------------------------------ external wrenches
    def body_wrenches(self, f_ext, dict link_frames, int rows=1):
        """The chart's body wrenches (rows, nb, 6) (moment, force) in body frames of ``f_ext``,
        a dict link name → wrench (f, m) (6,) in that link's frame, or a jet (r ≤ rows, 6) of
        rows W, W′, …: m_b = R m + p × R f, f_b = R f with (R, p) the link's pose in its body
        (``link_frames``: name → (body, (4, 4)); a link of the fixed base is dropped). A buffer
        of this chart, valid until its next call; None when ``f_ext`` is not a dict of finite
        real (6,) / (r ≤ rows, 6) wrenches on known links (the caller then asks ``Robot``, whose
        checks name the problem)."""
        cdef int nb = self.data.m.nb, b, i, j, r, nr
        cdef double* W
        cdef double* x
        cdef double f[3]
        cdef double mm[3]
        cdef double* S
        if type(f_ext) is not dict or rows < 1:
            return None
        if self.fx is None or self.fx.shape[0] != rows:
            self.fx = np.zeros((rows, nb, 6))
        W = _p(self.fx)
        memset(W, 0, rows * nb * 6 * sizeof(double))
        for link, w in f_ext.items():
            entry = link_frames.get(link) if type(link) is str else None
            if entry is None:
                return None
            if _exact(w, 1, 6, 0):
                nr = 1
            else:
                if np.iscomplexobj(w):
                    return None
                try:
                    w = np.ascontiguousarray(w, dtype=float)
                except (TypeError, ValueError, OverflowError):
                    return None
                if w.ndim == 1 and w.shape[0] == 6:
                    w = w.reshape(1, 6)
                if w.ndim != 2 or w.shape[1] != 6 or not 1 <= w.shape[0] <= rows:
                    return None
                nr = w.shape[0]
            x = _p(w)
            if not _finite(x, 6 * nr):
                return None
            b = entry[0]
            if b < 0:
                continue   # a wrench on the fixed base produces no joint torque
            pose = entry[1]
            if not _exact(pose, 2, 4, 4):
                pose = np.ascontiguousarray(pose, dtype=float)
            S = _p(pose)   # (4, 4) row-major: R = S[:3, :3], p = S[:3, 3]
            for r in range(nr):
                for i in range(3):
                    f[i] = S[4 * i] * x[6 * r] + S[4 * i + 1] * x[6 * r + 1] \
                        + S[4 * i + 2] * x[6 * r + 2]
                    mm[i] = (S[4 * i] * x[6 * r + 3] + S[4 * i + 1] * x[6 * r + 4]
                             + S[4 * i + 2] * x[6 * r + 5])
                j = 6 * (r * nb + b)
                W[j] += mm[0] + (S[7] * f[2] - S[11] * f[1])
                W[j + 1] += mm[1] + (S[11] * f[0] - S[3] * f[2])
                W[j + 2] += mm[2] + (S[3] * f[1] - S[7] * f[0])
                for i in range(3):
                    W[j + 3 + i] += f[i]
        return self.fx

    # ------------------------------------------------------------------ simulation: chart_step
    cdef void _jb_at(self, int g, const double* phi, const double* x, double* y,
                     bint transpose) noexcept:
        """y = Jb(φ) x (or Jb(φ)ᵀ x) of group g at chart coordinates φ (its slice), closed form:
        E(φ) = [[c_c c_b, s_c, 0], [−s_c c_b, c_c, 0], [s_b, 0, 1]] on the rotation, and a free
        joint's Rᵀ(φ) = (Rx(a) Ry(b) Rz(c))ᵀ on its translation (module docstring of the model)."""
        cdef int r = 3 if self.groups[g, 0] == FLOATING else 0, i, j
        cdef double sa, ca, sb, cb, sc, cc, acc
        cdef double E[9]
        cdef double X[9]
        cdef double Y[9]
        cdef double Z[9]
        cdef double RR[9]
        cdef double RT[9]
        sb, cb, sc, cc = sin(phi[r + 1]), cos(phi[r + 1]), sin(phi[r + 2]), cos(phi[r + 2])
        E[0], E[1], E[2] = cc * cb, sc, 0.0
        E[3], E[4], E[5] = -(sc * cb), cc, 0.0
        E[6], E[7], E[8] = sb, 0.0, 1.0
        for i in range(3):
            acc = 0.0
            for j in range(3):
                acc = acc + (E[3 * j + i] if transpose else E[3 * i + j]) * x[r + j]
            y[r + i] = acc
        if r == 0:
            return
        sa, ca = sin(phi[3]), cos(phi[3])
        X[0], X[1], X[2], X[3], X[4], X[5], X[6], X[7], X[8] = 1.0, 0.0, 0.0, 0.0, ca, sa, \
            0.0, -sa, ca
        Y[0], Y[1], Y[2], Y[3], Y[4], Y[5], Y[6], Y[7], Y[8] = cb, 0.0, -sb, 0.0, 1.0, 0.0, \
            sb, 0.0, cb
        Z[0], Z[1], Z[2], Z[3], Z[4], Z[5], Z[6], Z[7], Z[8] = cc, sc, 0.0, -sc, cc, 0.0, \
            0.0, 0.0, 1.0
        _mm3(Z, Y, RR)                 # Rᵀ = (Rz(c)ᵀ Ry(b)ᵀ) Rx(a)ᵀ
        _mm3(RR, X, RT)
        for i in range(3):
            acc = 0.0
            for j in range(3):
                acc = acc + (RT[3 * j + i] if transpose else RT[3 * i + j]) * x[j]
            y[i] = acc

    cdef int _rk_f(self, const double* y, const double* yd, const double* tau, double* kp,
                   double* kv) except -1:
        """One RK4 stage in the chart: (φ̇, φ̈) with φ̈ the chart's ABA at (φ, φ̇) under
        τ_chart = Jb(φ)ᵀ τ on each group's slice (φ: chart coordinates, the groups' from 0)."""
        cdef KWork* w = &self.data.w
        cdef int nb = self.data.m.nb, i, g, s0
        cdef double* tc = _p(self.tc)
        for i in range(nb):
            w.qj[i] = y[i]
            w.qj[nb + i] = yd[i]
            tc[i] = tau[i]
            kp[i] = yd[i]
        for g in range(self.ng):
            s0 = self.groups[g, 1]
            self._jb_at(g, y + s0, tau + s0, tc + s0, True)
        if aba_core(&self.data.m, w, tc, False, kv):
            _aba._singular()
        return 0

    cdef void _compose(self, const double* q, const double* dx, bint chart,
                       double* qo) noexcept:
        """qo = q ⊕ dx (``LieJointRobot.integrate``): the 1-DOF joints q + dx; each group's
        R ← R T_R, p ← p + R T_p with T = Rx(a) Ry(b) Rz(c) after Trans(x, y, z) (chart) or
        exp of the rotation vector / twist (dx in the group's velocity coordinates); R of the
        normalised quaternion, the new one by Shepperd's method with w ≥ 0."""
        cdef int j, g, kind, b, q0, i
        cdef double th, A, Bc, Cc
        cdef double R[9]
        cdef double T[9]
        cdef double R2[9]
        cdef double Q4[4]
        cdef double RX[9]
        cdef double RY[9]
        cdef double XY[9]
        cdef double W[9]
        cdef double tp[3]
        cdef const double* d
        memcpy(qo, q, self.nq * sizeof(double))
        for j in range(self.nj):
            qo[self.jq[j]] = q[self.jq[j]] + dx[self.jv[j]]
        for g in range(self.ng):
            kind, b = self.groups[g, 0], self.groups[g, 1]
            q0 = self.groups[g, 2] + (3 if kind == FLOATING else 0)
            d = dx + b
            _quat_R(q + q0, R)
            i = 3 if kind == FLOATING else 0
            if chart:
                _rot3(0, d[i], RX)
                _rot3(1, d[i + 1], RY)
                _rot3(2, d[i + 2], R2)
                _mm3(RX, RY, XY)
                _mm3(XY, R2, T)
                tp[0], tp[1], tp[2] = d[0], d[1], d[2]
            else:   # exp: I + A W + B W², and (I + B W + C W²) v
                th = sqrt(d[i] * d[i] + d[i + 1] * d[i + 1] + d[i + 2] * d[i + 2])
                if th < 1e-8:
                    A, Bc, Cc = 1 - th * th / 6, 0.5 - th * th / 24, 1.0 / 6 - th * th / 120
                else:
                    A, Bc, Cc = sin(th) / th, (1 - cos(th)) / (th * th), \
                        (th - sin(th)) / (th * th * th)
                W[0], W[1], W[2] = 0.0, -d[i + 2], d[i + 1]
                W[3], W[4], W[5] = d[i + 2], 0.0, -d[i]
                W[6], W[7], W[8] = -d[i + 1], d[i], 0.0
                for j in range(9):
                    XY[j] = Bc * W[j]
                    RX[j] = Cc * W[j]
                _mm3(XY, W, RY)       # (B W) W
                _mm3(RX, W, R2)       # (C W) W
                for j in range(9):
                    T[j] = ((1.0 if j % 4 == 0 else 0.0) + A * W[j]) + RY[j]
                    XY[j] = ((1.0 if j % 4 == 0 else 0.0) + XY[j]) + R2[j]
                if kind == FLOATING:
                    for j in range(3):
                        tp[j] = (XY[3 * j] * d[0] + XY[3 * j + 1] * d[1]) + XY[3 * j + 2] * d[2]
            _mm3(R, T, R2)
            _shepperd(R2, Q4)
            for j in range(4):
                qo[q0 + j] = Q4[j]
            if kind == FLOATING:
                for j in range(3):
                    qo[q0 - 3 + j] = q[q0 - 3 + j] + (
                        (R[3 * j] * tp[0] + R[3 * j + 1] * tp[1]) + R[3 * j + 2] * tp[2])

    def integrate(self, q, v, bint chart, out):
        """q ⊕ v (nq,) (``LieJointRobot.integrate``; chart: v holds chart coordinates); q's
        quaternions are normalised (a zero one is refused)."""
        cdef int g, q0
        cdef double n2
        cdef double* pq
        q = self._q(q)
        v = self._v(v, "v", -1)
        pq = _p(q)
        for g in range(self.ng):
            q0 = self.groups[g, 2] + (3 if self.groups[g, 0] == FLOATING else 0)
            n2 = pq[q0] * pq[q0] + pq[q0 + 1] * pq[q0 + 1] + pq[q0 + 2] * pq[q0 + 2] \
                + pq[q0 + 3] * pq[q0 + 3]
            if not n2 > 0.0:
                raise ValueError(f"joint '{self.names[g]}': the quaternion is zero")
        out = as_out(out, "out", (self.nq,)) if out is not None else np.empty(self.nq)
        res = np.empty(self.nq) if _overlaps(out, q) or _overlaps(out, v) else out
        self._compose(pq, _p(v), chart, _p(res))
        if res is not out:
            out[...] = res
        return finite_result(out, "integrate")

    def chart_step(self, q, v, tau, h, qout, vout):
        """One classical RK4 step of length h in the chart centred at q (``LieJointRobot.
        chart_step``), mapped back to the group: q ⊕ φ (R ← R Rx(a) Ry(b) Rz(c), p ← p + R
        (x, y, z), the quaternion by Shepperd's method with w ≥ 0) into qout (nq,) and
        V = Jb(φ) φ̇ into vout (nv,) (fresh arrays when None); returns (qout, vout)."""
        cdef int nv = self.nv, nq = self.nq, i, j, g, b, t
        cdef double hh, c2, hs
        cdef double* Y
        cdef double* pq
        cdef double* qo
        cdef double* qc = _p(self.qc)
        try:
            hh = float(h)
        except (TypeError, ValueError):
            raise ValueError(f"h must be a finite number (the step, s), got {h!r}") from None
        if not _finite(&hh, 1):
            raise ValueError(f"h must be a finite number (the step, s), got {h!r}")
        claim(self.data)
        try:
            q = self._q(q)
            v = self._v(v, "qd", -1)
            tau = self._v(tau, "tau", -1)
            qout = as_out(qout, "out", (nq,)) if qout is not None else np.empty(nq)
            vout = as_out(vout, "out", (nv,)) if vout is not None else np.empty(nv)
            self._recenter(_p(q))
            if self.rk is None:
                self.rk = np.zeros((12, nv))
            Y = _p(self.rk)   # rows: y, yd, stage y, stage yd, k1..k4 (p, v) pairs
            for i in range(nv):
                Y[i] = qc[i]
                Y[nv + i] = _p(v)[i]
            c2 = 0.5 * hh
            self._rk_f(Y, Y + nv, _p(tau), Y + 4 * nv, Y + 5 * nv)
            for t in range(1, 4):          # k2, k3 at y + h/2 k, k4 at y + h k
                hs = c2 if t < 3 else hh
                for i in range(nv):
                    Y[2 * nv + i] = Y[i] + hs * Y[(2 + 2 * t) * nv + i]
                    Y[3 * nv + i] = Y[nv + i] + hs * Y[(3 + 2 * t) * nv + i]
                self._rk_f(Y + 2 * nv, Y + 3 * nv, _p(tau), Y + (4 + 2 * t) * nv,
                           Y + (5 + 2 * t) * nv)
            hs = hh / 6
            for j in range(2):             # φ, φ̇ at t + h into the stage rows
                for i in range(nv):
                    Y[(2 + j) * nv + i] = Y[j * nv + i] + hs * (
                        ((Y[(4 + j) * nv + i] + 2 * Y[(6 + j) * nv + i])
                         + 2 * Y[(8 + j) * nv + i]) + Y[(10 + j) * nv + i])
            if not _finite(Y + 2 * nv, 2 * nv):
                raise ValueError("the simulation state became non-finite")
            for i in range(nv):            # Δφ = φ − q_c (the groups' φ from 0)
                Y[2 * nv + i] = Y[2 * nv + i] - qc[i]
            pq = _p(q)
            res_v = np.empty(nv) if _overlaps(vout, q) or _overlaps(vout, v) or _overlaps(
                vout, tau) else vout
            memcpy(_p(res_v), Y + 3 * nv, nv * sizeof(double))
            for g in range(self.ng):
                b = self.groups[g, 1]
                self._jb_at(g, Y + 2 * nv + b, Y + 3 * nv + b, _p(res_v) + b, False)
            qnew = np.empty(nq)
            self._compose(pq, Y + 2 * nv, True, _p(qnew))
            qo = _p(qnew)
            memcpy(_p(qout), qo, nq * sizeof(double))
            if res_v is not vout:
                vout[...] = res_v
            return finite_result((qout, vout), "chart_step")
        finally:
            unclaim(self.data)


cdef inline void _quat_R(const double* q, double* R) noexcept:
    """R (3, 3) of the quaternion (x, y, z, w) normalised (the model's ``quat_to_matrix``)."""
    cdef double nrm = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
    cdef double x = q[0] / nrm, y = q[1] / nrm, z = q[2] / nrm, w = q[3] / nrm
    R[0], R[1], R[2] = 1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)
    R[3], R[4], R[5] = 2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)
    R[6], R[7], R[8] = 2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)


cdef inline void _rot3(int axis, double a, double* R) noexcept:
    """R (3, 3) of a rotation by a about the x, y or z axis."""
    cdef double c = cos(a), s = sin(a)
    cdef int i = 1 if axis == 0 else (2 if axis == 1 else 0)
    cdef int j = 2 if axis == 0 else (0 if axis == 1 else 1), k
    for k in range(9):
        R[k] = 0.0
    R[0], R[4], R[8] = 1.0, 1.0, 1.0
    R[3 * i + i], R[3 * i + j], R[3 * j + i], R[3 * j + j] = c, -s, s, c


cdef inline void _mm3(const double* A, const double* B, double* C) noexcept:
    cdef int i, j, l
    cdef double acc
    for i in range(3):
        for j in range(3):
            acc = 0.0
            for l in range(3):
                acc = acc + A[3 * i + l] * B[3 * l + j]
            C[3 * i + j] = acc


cdef void _shepperd(const double* R, double* q) noexcept:
    """Unit quaternion (x, y, z, w), w ≥ 0, of a rotation matrix (Shepperd's method, as the
    model's ``matrix_to_quat``)."""
    cdef double t = R[0] + R[4] + R[8], s, n, sg
    cdef int i, j, k, a
    if t > 0:
        s = 2.0 * sqrt(1.0 + t)
        q[0], q[1], q[2], q[3] = (R[7] - R[5]) / s, (R[2] - R[6]) / s, (R[3] - R[1]) / s, s / 4
    else:
        i = 0
        if R[4] > R[0]:
            i = 1
        if R[8] > R[3 * i + i]:
            i = 2
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * sqrt(1.0 + R[3 * i + i] - R[3 * j + j] - R[3 * k + k])
        q[i] = s / 4
        q[j] = (R[3 * j + i] + R[3 * i + j]) / s
        q[k] = (R[3 * k + i] + R[3 * i + k]) / s
        q[3] = (R[3 * k + j] - R[3 * j + k]) / s
    n = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
    sg = 1.0 if q[3] >= 0 else -1.0
    for a in range(4):
        q[a] = q[a] * sg / n
