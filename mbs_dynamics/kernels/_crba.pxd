# cython: language_level=3
"""The CRBA and C̄/Ṁ kernels other compiled rooms reuse (loops: M, C̄, Ṁ of the spanning tree)."""
from mbs_dynamics.kernels._data cimport KModel, KWork


cdef void crba(const KModel* m, KWork* w, double* out) noexcept nogil
cdef void coriolis(const KModel* m, KWork* w, int mode, double* out) noexcept nogil
