# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Sampling of the piecewise-polynomial C⁴ trajectories of :mod:`mbs_dynamics.trajectory`, compiled.

``coef[2k, d, p, j]`` is the coefficient of ``x^p`` in the d-th time derivative on segment k,
joint j, expanded about the segment start (``x = s``); ``coef[2k + 1]`` the same about its end
(``x = s − 1``). The nearer expansion is used, so knot states come out of the constant terms
exactly. Outside ``[times[0], times[-1]]`` the trajectory holds its end positions at rest.
"""


cdef inline Py_ssize_t find_segment(const double[::1] times, double t) noexcept nogil:
    """k with times[k] <= t < times[k+1], clamped to [0, m − 2] (binary search)."""
    cdef Py_ssize_t lo = 0, hi = times.shape[0] - 1, mid
    while hi - lo > 1:
        mid = (lo + hi) >> 1
        if times[mid] <= t:
            lo = mid
        else:
            hi = mid
    return lo


cdef void sample_one(const double[::1] times, const double[:, :, :, ::1] coef,
                     const double[::1] hold0, const double[::1] hold1, double t,
                     double[:, ::1] out) noexcept nogil:
    """q … q⁗ at time t into out (nd, n) by Horner's rule on the nearer expansion."""
    cdef Py_ssize_t n = out.shape[1], nd = out.shape[0], npow = coef.shape[2], k, e, d, j, p
    cdef double x, acc
    cdef const double[::1] hold
    if t < times[0] or t > times[times.shape[0] - 1]:
        hold = hold0 if t < times[0] else hold1
        for j in range(n):
            out[0, j] = hold[j]
        for d in range(1, nd):
            for j in range(n):
                out[d, j] = 0.0
        return
    k = find_segment(times, t)
    x = (t - times[k]) / (times[k + 1] - times[k])
    e = 2 * k
    if x > 0.5:
        e += 1
        x -= 1.0
    for d in range(nd):
        for j in range(n):
            acc = 0.0
            for p in range(npow - 1 - d, -1, -1):
                acc = acc * x + coef[e, d, p, j]
            out[d, j] = acc


def sample(const double[::1] times, const double[:, :, :, ::1] coef, const double[::1] hold0,
           const double[::1] hold1, double t, double[:, ::1] out):
    """One time: out (nd, n)."""
    sample_one(times, coef, hold0, hold1, t, out)


def sample_many(const double[::1] times, const double[:, :, :, ::1] coef,
                const double[::1] hold0, const double[::1] hold1, const double[::1] ts,
                double[:, :, ::1] out):
    """Many times: out (N, nd, n)."""
    cdef Py_ssize_t i
    with nogil:
        for i in range(ts.shape[0]):
            sample_one(times, coef, hold0, hold1, ts[i], out[i])
