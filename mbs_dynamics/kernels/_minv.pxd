# cython: language_level=3
"""M⁻¹ by the articulated-body route, for other compiled rooms (forward-dynamics derivatives)."""
from mbs_dynamics.kernels._data cimport KModel, KWork


cdef int minv_core(const KModel* m, KWork* w, double* F, double* Mi, bint have_T) noexcept nogil
cdef int minv_solve(const KModel* m, KWork* w, double* F, double* Mi, const double* Sw,
                    int sst) noexcept nogil
