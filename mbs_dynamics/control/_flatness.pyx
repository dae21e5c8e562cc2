# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""One cycle of the SEA flatness controller with a diagonal K, compiled glue around the compiled
kernels (:mod:`mbs_dynamics.control.flatness` documents the law): the element-wise arithmetic
between the two articulated-body passes and the two jet recursions would otherwise cost ~35
NumPy calls (~1 µs each) a cycle.
"""
from libc.math cimport isfinite


def sea_cycle(fd, jet, d, double[:, ::1] x, double[:, ::1] des, int nd, double[::1] K,
              double[::1] B, double[::1] D, double[:, ::1] k, double T, double[:, ::1] qs,
              qs_arr, qs4, qs5, double[:, ::1] taus, taus_arr, taus2, taus3, te_arr, double[::1] te,
              r_arr, double[::1] r, double[::1] u):
    """x (4, n) rows q, q̇, θ, θ̇; des (nd ≥ 5, n) rows q_d … ; qs (6, n) / taus (4, n) the jet
    buffers (``qs_arr`` and its row views ``qs4`` = qs[:4], ``qs5`` = qs[:5]; ``taus2``,
    ``taus3`` likewise); fd(d, q, qd, tau, None, out) and jet(d, qs, out) the kernels.
    Fills u; returns 0, or 1 when an input is not finite, 2 when u is not finite."""
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
    q_row, qd_row = qs_arr[0], qs_arr[1]
    fd(d, q_row, qd_row, te_arr, None, qs_arr[2])        # q̈
    jet(d, qs4, taus2)                                   # τ, τ′ at q⃛ = 0
    for j in range(n):                                   # τ_e + τ_e′ − τ′₀
        r[j] = te[j] + K[j] * (x[3, j] - x[1, j]) - taus[1, j]
    fd(d, q_row, qd_row, r_arr, None, qs_arr[3])         # q̈ + M⁻¹(τ_e′ − τ′₀)
    for j in range(n):
        qs[3, j] -= qs[2, j]
        acc = des[4, j]                                  # v = q⁗_d + Σ k_i e^(i)
        for i in range(4):
            acc += k[i, j] * (des[i, j] - qs[i, j])
        qs[4, j] = acc
        if lead:                                         # v̇ = q_d⁽⁵⁾ + Σ k_i e^(i+1)
            acc = des[5, j] if nd > 5 else 0.0
            for i in range(4):
                acc += k[i, j] * (des[i + 1, j] - qs[i + 1, j])
            qs[5, j] = acc
    if lead:
        jet(d, qs_arr, taus_arr)                           # τ … τ‴ at q⁗ = v, q⁽⁵⁾ = v̇
    else:
        jet(d, qs5, taus3)                               # τ″ at q⁗ = v
    for j in range(n):
        acc = qs[2, j] + taus[2, j] / K[j]               # θ̈ = q̈ + K⁻¹ τ″
        u[j] = B[j] * acc + D[j] * x[3, j] + te[j]
        if lead:                                         # + (T/2) u̇
            u[j] += 0.5 * T * (B[j] * (qs[3, j] + taus[3, j] / K[j]) + D[j] * acc
                               + K[j] * (x[3, j] - x[1, j]))
        if not isfinite(u[j]):
            return 2
    return 0
