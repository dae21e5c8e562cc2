# cython: language_level=3
"""The RNEA kernels other compiled rooms reuse (identification: the forward passes)."""
from mbs_dynamics.kernels._data cimport KModel, KWork


cdef void forward0(const KModel* m, KWork* w) noexcept nogil
cdef void rnea_jet(const KModel* m, KWork* w, int K, bint use_fx, double* out) noexcept nogil
cdef void rnea0(const KModel* m, KWork* w, bint use_fx, double* out) noexcept nogil
