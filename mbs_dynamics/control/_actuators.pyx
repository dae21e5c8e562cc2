# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The VSA motor reference for the antagonistic exponential spring, compiled (a per-sample Newton
solve is a scalar loop: in NumPy it costs ~50 µs a sample for 7 joints, here well under 1 µs).

``φ(δ, σ) = (k/a) e^{aσ} sinh(a δ)``: δ solves φ = τ (closed-form start
``asinh(a τ e^{−aσ}/k)/a``, Newton polish with a convergence check), δ′, δ″ by implicit
differentiation of φ(δ, σ) = τ (doc/math.md, "Flatness feedforward"):
``δ′ = (τ′ − φ_σ σ′)/φ_δ``, ``δ″ = (τ″ − φ_δδ δ′² − 2φ_δσ δ′σ′ − φ_σσ σ′² − φ_σ σ″)/φ_δ``;
``θ^(r) = q^(r) + δ^(r)``, ``τ_m = B θ″ + D_m θ′ + τ``.
"""
from libc.math cimport asinh, cosh, exp, fabs, isfinite, sinh


def exp_vsa(const double[:, :, :] qs, const double[:, :, :] taus, const double[:, :, :] sig,
            const double[:] k, const double[:] a, const double[:] B, const double[:] Dm,
            double tol, int max_iter, double[:, :, :] out):
    """qs (N, 5, n), taus (N, 3, n), sig (N or 1, 3, n) rows σ, σ′, σ″ → out (N, 4, n) rows
    θ, θ′, θ″, τ_m. Returns 0, or 1 + the flat index (sample · n + joint) that failed."""
    cdef Py_ssize_t N = qs.shape[0], n = qs.shape[2], i, j, si, it
    cdef double tau, s0, s1, s2, aj, e, d, step, sh, ch, f_d, f_dd, f_s, d1, d2
    cdef bint ok
    cdef Py_ssize_t status = 0
    with nogil:
        for i in range(N):
            si = i if sig.shape[0] > 1 else 0
            for j in range(n):
                tau = taus[i, 0, j]
                s0, s1, s2 = sig[si, 0, j], sig[si, 1, j], sig[si, 2, j]
                aj = a[j]
                e = k[j] * exp(aj * s0)
                d = asinh(aj * tau / e) / aj
                ok = False
                for it in range(max_iter):
                    step = (e * sinh(aj * d) / aj - tau) / (e * cosh(aj * d))
                    d -= step
                    if fabs(step) <= tol * (fabs(d) if fabs(d) > 1.0 else 1.0):
                        ok = True
                        break
                if not ok or not isfinite(d):
                    if status == 0:
                        status = 1 + i * n + j
                    continue
                sh = sinh(aj * d)
                ch = cosh(aj * d)
                f_d = e * ch               # φ_δ
                f_dd = aj * e * sh         # φ_δδ
                f_s = e * sh               # φ_σ = a φ; φ_δσ = a φ_δ; φ_σσ = a φ_σ
                d1 = (taus[i, 1, j] - f_s * s1) / f_d
                d2 = (taus[i, 2, j] - f_dd * d1 * d1 - 2.0 * aj * f_d * d1 * s1
                      - aj * f_s * s1 * s1 - f_s * s2) / f_d
                out[i, 0, j] = qs[i, 0, j] + d
                out[i, 1, j] = qs[i, 1, j] + d1
                out[i, 2, j] = qs[i, 2, j] + d2
                out[i, 3, j] = B[j] * out[i, 2, j] + Dm[j] * out[i, 1, j] + tau
    return status
