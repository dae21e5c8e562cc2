# cython: language_level=3
"""The ABA kernels other compiled rooms reuse (identification: forward-dynamics derivatives;
kernels/_minv.pyx: M⁻¹)."""
from mbs_dynamics.kernels._data cimport KModel, KWork


cdef int aba_core(const KModel* m, KWork* w, const double* tau, bint use_fx,
                  double* out) noexcept nogil


cdef int articulated_inertias(const KModel* m, KWork* w) noexcept nogil

cdef int solve6(double* A, double* b, double* L) noexcept nogil
