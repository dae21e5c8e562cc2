# cython: language_level=3
"""6×6 helpers the kernels share, inline: the spatial inertia matrix of a body, and the
symmetric positive definite Cholesky of the floating base's articulated inertia (the ABA,
kernels/_aba.pyx, and M⁻¹, kernels/_minv.pyx) — fixed bounds so that the compiler unrolls it,
and the reciprocals of the diagonal kept so that the substitutions multiply instead of
divide."""
cimport cython
from libc.math cimport sqrt


@cython.cdivision(True)
@cython.boundscheck(False)
@cython.wraparound(False)
cdef inline int chol6(const double* A, double* L) noexcept nogil:
    """A = L Lᵀ for the symmetric 6×6 A (row-major; its lower triangle is read) into the
    strictly lower triangle of L (row-major), with 1/L_ii on L's diagonal. 1 if A is not
    positive definite (or not finite), else 0."""
    cdef int i, j, k
    cdef double s
    for i in range(6):
        for j in range(i + 1):
            s = A[6 * i + j]
            for k in range(j):
                s -= L[6 * i + k] * L[6 * j + k]
            if i == j:
                if not (s > 0.0):
                    return 1
                L[6 * i + i] = 1.0 / sqrt(s)
            else:
                L[6 * i + j] = s * L[6 * j + j]
    return 0


@cython.boundscheck(False)
@cython.wraparound(False)
cdef inline void chol6_solve(const double* L, double* b) noexcept nogil:
    """b ← (L Lᵀ)⁻¹ b for the factor L of :func:`chol6`: forward then back substitution."""
    cdef int i, k
    cdef double s
    for i in range(6):
        s = b[i]
        for k in range(i):
            s -= L[6 * i + k] * b[k]
        b[i] = s * L[6 * i + i]
    for i in range(5, -1, -1):
        s = b[i]
        for k in range(i + 1, 6):
            s -= L[6 * k + i] * b[k]
        b[i] = s * L[6 * i + i]


@cython.boundscheck(False)
@cython.wraparound(False)
cdef inline void inertia6(double ms, const double* h, const double* Th, double* d) noexcept nogil:
    """d (6×6 row-major) = [[Θ, h̃], [−h̃, m 1]] for the mass ms, first moment h (3) and
    rotational inertia Θ (9, row-major) of a body (seed 004 eq. 24)."""
    cdef double h0 = h[0], h1 = h[1], h2 = h[2]
    cdef int r, k
    for r in range(3):
        for k in range(3):
            d[6 * r + k] = Th[3 * r + k]
            d[6 * (r + 3) + k + 3] = ms if r == k else 0.0
    d[3], d[4], d[5] = 0.0, -h2, h1
    d[9], d[10], d[11] = h2, 0.0, -h0
    d[15], d[16], d[17] = -h1, h0, 0.0
    d[18], d[19], d[20] = 0.0, h2, -h1
    d[24], d[25], d[26] = -h2, 0.0, h0
    d[30], d[31], d[32] = h1, -h0, 0.0
