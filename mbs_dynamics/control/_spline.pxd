# cython: language_level=3
"""The trajectory sampler other compiled rooms reuse (the flatness controller's cycle)."""


cdef void sample_one(const double[::1] times, const double[:, :, :, ::1] coef,
                     const double[::1] hold0, const double[::1] hold1, double t,
                     double[:, ::1] out) noexcept nogil
