# cython: language_level=3
"""The CRBA kernel other compiled rooms reuse (loops: M of the spanning tree)."""
from mbs_dynamics.kernels._data cimport KModel, KWork


cdef void crba(const KModel* m, KWork* w, double* out) noexcept nogil
