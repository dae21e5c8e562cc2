# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""One cycle of the SEA flatness controller with a diagonal K, compiled end to end
(:mod:`mbs_dynamics.control.flatness` documents the law).

The cycle calls the kernels at the C level on the robot's own :class:`Data` (no Python call, no
input conversion, no allocation): one articulated-body pass for q̈, one first-order jet recursion
for τ′ at q⃛ = 0, the solve ``q⃛ = M⁻¹ r`` by the τ-dependent passes of the articulated-body
algorithm only — the articulated inertias of the first pass are reused (Featherstone, *Rigid Body
Dynamics Algorithms*, 2008, §7.3: they depend on q alone) — and one jet recursion of order 2 (or 3
with the zero-order-hold lead) for τ″ (τ‴). :meth:`SEACycle.update` also samples the trajectory
(compiled Horner, :mod:`mbs_dynamics.control._spline`).
"""
cimport numpy as cnp
from libc.math cimport fabs, isfinite
from libc.string cimport memcpy

from mbs_dynamics.kernels._data cimport Data, KModel, KWork, claim, unclaim
from mbs_dynamics.kernels._spatial cimport X_dot, add_X, add_to_parent, load_jet, to_child, zero6
from mbs_dynamics.kernels._aba cimport aba_core
from mbs_dynamics.kernels._rnea cimport rnea_jet
from mbs_dynamics.control._spline cimport sample_one

cnp.import_array()

# status codes of SEACycle.command / update (flatness.py turns them into errors)
cdef enum:
    OK = 0
    NOT_FINITE = 1      # an input is NaN or inf
    BAD_U = 2           # the motor torque came out non-finite
    SLOW = 3            # an input is not a C-contiguous float64 ndarray of the right shape
    SINGULAR = 4        # an articulated inertia is singular
    COPY_OUT = 5        # done; ``out`` still needs filling (not a plain float64 (n,) array)


cdef void minv_solve(const KModel* m, KWork* w, const double* r, double* out) noexcept nogil:
    """out = M(q)⁻¹ r (fixed base) from the articulated inertias the last :func:`aba_core` left in
    ``w`` (U_i = I^A_i X_i, D_i = X_iᵀ U_i, and the joint transforms T_i): the articulated-body
    algorithm's bias and acceleration passes with q̇ = 0 and no gravity."""
    cdef int nb = m.nb, i, par, k
    cdef double* p
    cdef double* U
    cdef double* A
    cdef double* s = w.S
    cdef double uu, acc
    for i in range(nb):
        zero6(w.pA + 6 * i)
    for i in range(nb - 1, -1, -1):
        p = w.pA + 6 * i
        uu = r[i] - X_dot(m, i, p)               # u_i = r_i − X_iᵀ p_i
        w.u[i] = uu
        par = m.parent[i]
        if par >= 0:
            U = w.U + 6 * i
            uu = uu / w.D[i]
            for k in range(6):
                s[k] = p[k] + U[k] * uu          # p_λ += T_iᵀ (p_i + U_i u_i / D_i)
            add_to_parent(w.T + 12 * i, s, w.pA + 6 * par)
    for i in range(nb):
        par = m.parent[i]
        A = w.A + 6 * i
        if par >= 0:
            to_child(w.T + 12 * i, w.A + 6 * par, A)
        else:
            zero6(A)
        U = w.U + 6 * i
        acc = w.u[i]
        for k in range(6):
            acc -= U[k] * A[k]
        acc = acc / w.D[i]                       # ẍ_i = (u_i − U_iᵀ a_i) / D_i
        out[i] = acc
        add_X(m, i, acc, A)


cdef inline bint plain_vec(object a, Py_ssize_t n):
    """a is a C-contiguous aligned float64 ndarray of shape (n,)."""
    return (cnp.PyArray_CheckExact(a) and cnp.PyArray_TYPE(<cnp.ndarray> a) == cnp.NPY_DOUBLE
            and cnp.PyArray_NDIM(<cnp.ndarray> a) == 1 and cnp.PyArray_DIM(<cnp.ndarray> a, 0) == n
            and cnp.PyArray_ISCARRAY_RO(<cnp.ndarray> a))


cdef class SEACycle:
    """The workspace and parameters of one SEA controller with a diagonal K, bound once: ``d`` the
    robot's Data; x (4, n) rows q, q̇, θ, θ̇; qs (6, n) rows q, q̇, q̈, q⃛, v, v̇; taus (4, n); des
    (6, n) the desired jet :meth:`update` samples into; te, r, u (n,)."""
    cdef Data d
    cdef double[:, ::1] x, k, qs, taus, des, des5
    cdef double[::1] K, B, D, te, r, u
    cdef double T, t_prev, lead
    cdef int n, kj
    cdef object u_arr, spline
    cdef const double[::1] times, hold0, hold1
    cdef const double[:, :, :, ::1] coef

    def __init__(self, Data d, x, K, B, D, k, double T, qs, taus, te, r, u, des,
                 double delay=0.0):
        self.d = d
        self.x, self.K, self.B, self.D, self.k, self.T = x, K, B, D, k, T
        self.lead = 0.5 * T + delay                 # the lead time of u + lead · u̇
        self.qs, self.taus, self.te, self.r, self.u, self.u_arr = qs, taus, te, r, u, u
        self.des, self.des5 = des, des[:5]
        self.n = x.shape[1]
        self.kj = 3 if self.lead > 0 else 2         # jet order: τ″, and τ‴ for the lead
        self.t_prev = -1e300
        self.spline = None
        if d.kmax < self.kj:
            d.grow(self.kj)

    def set_spline(self, times, coef, hold0, hold1):
        """The trajectory :meth:`update` samples (``Trajectory``'s piecewise polynomials)."""
        self.times, self.coef, self.hold0, self.hold1 = times, coef, hold0, hold1
        self.spline = (times, coef, hold0, hold1)
        self.t_prev = -1e300

    cdef int load(self, q, qd, theta, theta_dot):
        cdef Py_ssize_t n = self.n
        if not (plain_vec(q, n) and plain_vec(qd, n) and plain_vec(theta, n)
                and plain_vec(theta_dot, n)):
            return SLOW
        memcpy(&self.x[0, 0], cnp.PyArray_DATA(<cnp.ndarray> q), n * sizeof(double))
        memcpy(&self.x[1, 0], cnp.PyArray_DATA(<cnp.ndarray> qd), n * sizeof(double))
        memcpy(&self.x[2, 0], cnp.PyArray_DATA(<cnp.ndarray> theta), n * sizeof(double))
        memcpy(&self.x[3, 0], cnp.PyArray_DATA(<cnp.ndarray> theta_dot), n * sizeof(double))
        return OK

    cdef int finish(self, int status, out):
        cdef Py_ssize_t n = self.n
        if status != OK or out is None:
            return status
        if plain_vec(out, n) and cnp.PyArray_ISWRITEABLE(<cnp.ndarray> out):
            memcpy(cnp.PyArray_DATA(<cnp.ndarray> out), &self.u[0], n * sizeof(double))
            return OK
        return COPY_OUT

    def command(self, q, qd, theta, theta_dot, desired, out):
        """u from the measured state and ``desired`` (5 or 6, n); returns a status code."""
        cdef int nd
        if not (cnp.PyArray_CheckExact(desired)
                and cnp.PyArray_TYPE(<cnp.ndarray> desired) == cnp.NPY_DOUBLE
                and cnp.PyArray_NDIM(<cnp.ndarray> desired) == 2
                and cnp.PyArray_DIM(<cnp.ndarray> desired, 1) == self.n
                and cnp.PyArray_ISCARRAY_RO(<cnp.ndarray> desired)):
            return SLOW
        nd = cnp.PyArray_DIM(<cnp.ndarray> desired, 0)
        if nd != 5 and nd != 6:
            return SLOW
        if self.load(q, qd, theta, theta_dot):
            return SLOW
        return self.finish(self.run(<double*> cnp.PyArray_DATA(<cnp.ndarray> desired), nd), out)

    def update(self, t, q, qd, theta, theta_dot, out):
        """:meth:`command` with the desired jet sampled at time t [s] (q_d⁽⁵⁾ for the lead by
        the backward difference of q_d⁗ over the previous call when that was T earlier)."""
        cdef double tt, T = self.T
        cdef Py_ssize_t n = self.n, j
        cdef double[:, ::1] des = self.des
        if self.spline is None or not isinstance(t, float) or self.load(q, qd, theta, theta_dot):
            return SLOW
        tt = t
        if not isfinite(tt):
            return NOT_FINITE
        if T > 0:
            for j in range(n):
                des[5, j] = des[4, j]
        sample_one(self.times, self.coef, self.hold0, self.hold1, tt, self.des5)
        if T > 0:
            if fabs(tt - self.t_prev - T) <= 1e-9 * (fabs(tt) if fabs(tt) > 1.0 else 1.0):
                for j in range(n):
                    des[5, j] = (des[4, j] - des[5, j]) / T
            else:
                for j in range(n):
                    des[5, j] = 0.0
        self.t_prev = tt
        return self.finish(self.run(&des[0, 0], 6 if T > 0 else 5), out)

    cdef int run(self, const double* des, int nd):
        """des (nd ≥ 5, n) rows q_d … (row-major); fills u."""
        cdef int status
        if self.d.kmax < self.kj:
            self.d.grow(self.kj)
        claim(self.d)
        try:
            status = self.cycle(des, nd)
        finally:
            unclaim(self.d)
        return status

    cdef int cycle(self, const double* des, int nd) noexcept:
        cdef double[:, ::1] x = self.x, qs = self.qs, taus = self.taus, k = self.k
        cdef double[::1] K = self.K, B = self.B, D = self.D, te = self.te, r = self.r
        cdef double[::1] u = self.u
        cdef double hl = self.lead
        cdef Py_ssize_t n = self.n, i, j
        cdef bint lead = hl > 0
        cdef double acc
        cdef KModel* m = &self.d.m
        cdef KWork* w = &self.d.w
        for i in range(4):
            for j in range(n):
                if not isfinite(x[i, j]):
                    return NOT_FINITE
        for i in range(nd * n):
            if not isfinite(des[i]):
                return NOT_FINITE
        for j in range(n):
            qs[0, j] = x[0, j]
            qs[1, j] = x[1, j]
            te[j] = K[j] * (x[2, j] - x[0, j])             # τ_e = K (θ − q)
            qs[3, j] = 0.0
        load_jet(m, w, &qs[0, 0], &qs[1, 0], 1)
        if aba_core(m, w, &te[0], False, &qs[2, 0]):        # q̈ = FD(q, q̇, τ_e)
            return SINGULAR
        load_jet(m, w, &qs[0, 0], &qs[1, 0], 3)
        rnea_jet(m, w, 1, False, &taus[0, 0])               # τ, τ′ at q⃛ = 0
        for j in range(n):                                  # M q⃛ = τ_e′ − τ′₀
            r[j] = K[j] * (x[3, j] - x[1, j]) - taus[1, j]
        minv_solve(m, w, &r[0], &qs[3, 0])                  # the first pass's I^A (same q)
        for j in range(n):
            acc = des[4 * n + j]                            # v = q⁗_d + Σ k_i e^(i)
            for i in range(4):
                acc += k[i, j] * (des[i * n + j] - qs[i, j])
            qs[4, j] = acc
            if lead:                                        # v̇ = q_d⁽⁵⁾ + Σ k_i e^(i+1)
                acc = des[5 * n + j] if nd > 5 else 0.0
                for i in range(4):
                    acc += k[i, j] * (des[(i + 1) * n + j] - qs[i + 1, j])
                qs[5, j] = acc
        load_jet(m, w, &qs[0, 0], &qs[1, 0], self.kj + 2)
        rnea_jet(m, w, self.kj, False, &taus[0, 0])         # τ … τ″ (τ‴) at q⁗ = v, q⁽⁵⁾ = v̇
        for j in range(n):
            acc = qs[2, j] + taus[2, j] / K[j]              # θ̈ = q̈ + K⁻¹ τ″
            u[j] = B[j] * acc + D[j] * x[3, j] + te[j]
            if lead:                                        # + (T/2 + delay) u̇
                u[j] += hl * (B[j] * (qs[3, j] + taus[3, j] / K[j]) + D[j] * acc
                                   + K[j] * (x[3, j] - x[1, j]))
            if not isfinite(u[j]):
                return BAD_U
        return OK
