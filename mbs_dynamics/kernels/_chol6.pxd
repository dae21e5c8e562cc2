# cython: language_level=3
"""The 6×6 symmetric positive definite Cholesky the kernels share (the floating base's
articulated inertia in the ABA, kernels/_aba.pyx, and in M⁻¹, kernels/_minv.pyx): inline, with
fixed bounds so that the compiler unrolls it, and the reciprocals of the diagonal kept so that
the substitutions multiply instead of divide."""
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
