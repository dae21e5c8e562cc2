# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""One cycle of the SEA flatness controller with a diagonal K, compiled glue around the compiled
kernels (:mod:`mbs_dynamics.control.flatness` documents the law): the element-wise arithmetic
between the two articulated-body passes and the two jet recursions would otherwise cost ~35
NumPy calls (~1 µs each) a cycle.
"""
from libc.math cimport isfinite


cdef class SEACycle:
    """The workspace and parameters of one controller, bound once (typed views acquired at
    construction, not every cycle): x (4, n) rows q, q̇, θ, θ̇; qs (6, n) / taus (4, n) the jet
    buffers; fd(d, q, qd, tau, None, out) and jet(d, qs, out) the kernels."""
    cdef object fd, jet, d, qs_arr, qs4, qs5, taus_arr, taus2, taus3, te_arr, r_arr
    cdef object q_row, qd_row, qdd_row, qddd_row
    cdef double[:, ::1] x, k, qs, taus
    cdef double[::1] K, B, D, te, r, u
    cdef double T

    def __init__(self, fd, jet, d, x, K, B, D, k, double T, qs, taus, te, r, u):
        self.fd, self.jet, self.d = fd, jet, d
        self.x, self.K, self.B, self.D, self.k, self.T = x, K, B, D, k, T
        self.qs, self.qs_arr, self.qs4, self.qs5 = qs, qs, qs[:4], qs[:5]
        self.taus, self.taus_arr, self.taus2, self.taus3 = taus, taus, taus[:2], taus[:3]
        self.te, self.te_arr, self.r, self.r_arr, self.u = te, te, r, r, u
        self.q_row, self.qd_row, self.qdd_row, self.qddd_row = qs[0], qs[1], qs[2], qs[3]

    def run(self, double[:, ::1] des, int nd):
        """des (nd ≥ 5, n) rows q_d …; fills u. Returns 0, or 1 when an input is not finite,
        2 when u is not finite."""
        cdef double[:, ::1] x = self.x, qs = self.qs, taus = self.taus, k = self.k
        cdef double[::1] K = self.K, B = self.B, D = self.D, te = self.te, r = self.r
        cdef double[::1] u = self.u
        cdef double T = self.T
        cdef Py_ssize_t n = x.shape[1], i, j
        cdef bint lead = T > 0
        cdef double acc
        for i in range(4):
            for j in range(n):
                if not isfinite(x[i, j]):
                    return 1
        for i in range(nd):
            for j in range(n):
                if not isfinite(des[i, j]):
                    return 1
        for j in range(n):
            qs[0, j] = x[0, j]
            qs[1, j] = x[1, j]
            te[j] = K[j] * (x[2, j] - x[0, j])             # τ_e = K (θ − q)
            qs[3, j] = 0.0
        self.fd(self.d, self.q_row, self.qd_row, self.te_arr, None, self.qdd_row)   # q̈
        self.jet(self.d, self.qs4, self.taus2)             # τ, τ′ at q⃛ = 0
        for j in range(n):                                 # τ_e + τ_e′ − τ′₀
            r[j] = te[j] + K[j] * (x[3, j] - x[1, j]) - taus[1, j]
        self.fd(self.d, self.q_row, self.qd_row, self.r_arr, None, self.qddd_row)
        for j in range(n):
            qs[3, j] -= qs[2, j]                           # q⃛ = M⁻¹(τ_e′ − τ′₀)
            acc = des[4, j]                                # v = q⁗_d + Σ k_i e^(i)
            for i in range(4):
                acc += k[i, j] * (des[i, j] - qs[i, j])
            qs[4, j] = acc
            if lead:                                       # v̇ = q_d⁽⁵⁾ + Σ k_i e^(i+1)
                acc = des[5, j] if nd > 5 else 0.0
                for i in range(4):
                    acc += k[i, j] * (des[i + 1, j] - qs[i + 1, j])
                qs[5, j] = acc
        if lead:
            self.jet(self.d, self.qs_arr, self.taus_arr)   # τ … τ‴ at q⁗ = v, q⁽⁵⁾ = v̇
        else:
            self.jet(self.d, self.qs5, self.taus3)         # τ″ at q⁗ = v
        for j in range(n):
            acc = qs[2, j] + taus[2, j] / K[j]             # θ̈ = q̈ + K⁻¹ τ″
            u[j] = B[j] * acc + D[j] * x[3, j] + te[j]
            if lead:                                       # + (T/2) u̇
                u[j] += 0.5 * T * (B[j] * (qs[3, j] + taus[3, j] / K[j]) + D[j] * acc
                                   + K[j] * (x[3, j] - x[1, j]))
            if not isfinite(u[j]):
                return 2
        return 0
