# cython: language_level=3
"""The ABA kernels other compiled rooms reuse (identification: forward-dynamics derivatives;
kernels/_minv.pyx: the 6×6 solve of a floating base)."""
from mbs_dynamics.kernels._data cimport KModel, KWork


cdef int aba_core(const KModel* m, KWork* w, const double* tau, bint use_fx,
                  double* out) noexcept nogil


cdef int solve6(double* A, double* b, double* L) noexcept nogil
