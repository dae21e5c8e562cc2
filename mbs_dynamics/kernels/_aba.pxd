# cython: language_level=3
"""The ABA kernel other compiled rooms reuse (identification: forward-dynamics derivatives)."""
from mbs_dynamics.kernels._data cimport KModel, KWork


cdef int aba_core(const KModel* m, KWork* w, const double* tau, bint use_fx,
                  double* out) noexcept nogil
