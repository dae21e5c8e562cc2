"""SE(3) / se(3) helpers in NumPy: skew, Rodrigues, Ad, ad (seed 004 §2, seed 001 eq. 6–7), and exp,
log, dexp, dexp⁻¹ of SO(3) and SE(3) (seed 003 §2, eq. 8–11) for the Lie-group integrators.

Twists are angular-first ``V = (ω, v)``; wrenches ``W = (m, f)``. These are the reference
(NumPy) versions used to build models, by the closed forms and by tests; the compiled kernels in
the compiled kernels work on rotations and positions directly.
"""
from __future__ import annotations

import numpy as np


def skew(x):
    """The 3×3 matrix ``x̃`` with ``x̃ y = x × y``."""
    return np.array([[0.0, -x[2], x[1]], [x[2], 0.0, -x[0]], [-x[1], x[0], 0.0]])


def rot(axis, angle):
    """Rotation by ``angle`` [rad] about the unit ``axis`` (Rodrigues, seed 001 eq. 6)."""
    e = np.asarray(axis, dtype=float)
    K = skew(e)
    return np.eye(3) + np.sin(angle) * K + (1.0 - np.cos(angle)) * (K @ K)


def rpy(r, p, y):
    """URDF fixed-axis roll–pitch–yaw: ``R = Rz(y) Ry(p) Rx(r)``."""
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    return np.array([
        [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
        [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
        [-sp, cp * sr, cp * cr],
    ])


def pose(R, p):
    """Homogeneous 4×4 matrix of ``C = (R, p)``."""
    C = np.eye(4)
    C[:3, :3] = R
    C[:3, 3] = p
    return C


def inv(C):
    """Inverse of a homogeneous transform."""
    R, p = C[:3, :3], C[:3, 3]
    return pose(R.T, -R.T @ p)


def exp_se3(X, q):
    """``exp(X q)`` for a screw ``X = (ω, v)`` with ``|ω| ∈ {0, 1}`` (seed 001 eq. 6–7)."""
    w, v = np.asarray(X[:3], float), np.asarray(X[3:], float)
    if np.linalg.norm(w) < 1e-12:
        return pose(np.eye(3), v * q)
    R = rot(w, q)
    W = skew(w)
    # eq. 7: translation (I − R) (ω × v) + ω ωᵀ v q
    p = (np.eye(3) - R) @ (W @ v) + np.outer(w, w) @ v * q
    return pose(R, p)


def Ad(C):
    """``Ad_C = [[R, 0], [r̃ R, R]]`` for ``C = (R, r)``: maps twists of the moved frame to the base."""
    R, r = C[:3, :3], C[:3, 3]
    A = np.zeros((6, 6))
    A[:3, :3] = R
    A[3:, 3:] = R
    A[3:, :3] = skew(r) @ R
    return A


def ad(V):
    """``ad_V = [[ω̃, 0], [ṽ, ω̃]]`` for ``V = (ω, v)``; ``ad_V Y`` is the Lie bracket ``[V, Y]``."""
    A = np.zeros((6, 6))
    A[:3, :3] = skew(V[:3])
    A[3:, 3:] = skew(V[:3])
    A[3:, :3] = skew(V[3:])
    return A


def spatial_inertia(mass, com, inertia_com, R_com=None):
    """Body inertia in the body frame, seed 004 eq. 24, with Steiner ``Θ_b = R Θ_c Rᵀ − m c̃ c̃``."""
    c = np.asarray(com, float)
    Rc = np.eye(3) if R_com is None else R_com
    C = skew(c)
    M = np.zeros((6, 6))
    M[:3, :3] = Rc @ np.asarray(inertia_com, float) @ Rc.T - mass * C @ C
    M[:3, 3:] = mass * C
    M[3:, :3] = -mass * C
    M[3:, 3:] = mass * np.eye(3)
    return M


def first_moment(M):
    """m·c (…, 3), the first mass moment, of body inertias M (…, 6, 6) laid out as
    :func:`spatial_inertia` (the m c̃ block at rows 0–2, columns 3–5)."""
    S = np.asarray(M)[..., :3, 3:]
    return np.stack([S[..., 2, 1], S[..., 0, 2], S[..., 1, 0]], axis=-1)


# ---------------------------------------------------------------------------------------------
# exp, log, dexp, dexp⁻¹ of SO(3) and SE(3) (seed 003 §2, eq. 8–11), batched over leading axes.
#
# Conventions (as the rest of the project and seed 003): twists are angular-first X = (ω, v);
# X̂ = [[ω̃, v], [0, 0]] ∈ se(3); ``ad_X`` is eq. (7). ``dexp_X`` is the right-trivialised
# differential of the exponential (seed 003 §2.1): for C(t) = exp(X(t)),
#     Ċ C⁻¹ = (dexp_X Ẋ)^,        C⁻¹ Ċ = (dexp_{−X} Ẋ)^   (the body-fixed twist),
# dexp_X = Σ_k ad_X^k / (k+1)!  and  dexp_X⁻¹ = Σ_k B_k ad_X^k / k!  (B_k Bernoulli numbers).
# On SO(3), dexp_ξ is the "left Jacobian" I + (1 − cos θ)/θ² ξ̃ + (θ − sin θ)/θ³ ξ̃², θ = |ξ|.
# Every scalar coefficient that cancels near θ = 0 is evaluated by its Taylor series below
# θ < _SERIES_THETA (chosen so that neither branch loses more than a few ulps).
# ---------------------------------------------------------------------------------------------

from fractions import Fraction as _Fraction  # noqa: E402
from math import factorial as _factorial  # noqa: E402

_SERIES_THETA = 2.0  # [rad] below this, the series; the closed forms lose < ~1e-15 above it


def _bernoulli(n_max):
    """Bernoulli numbers B_0..B_n_max (B_1 = −1/2) as Fractions, by the standard recurrence."""
    B = [_Fraction(1)]
    for m in range(1, n_max + 1):
        B.append(-sum(_Fraction(_factorial(m + 1), _factorial(k) * _factorial(m + 1 - k)) * B[k]
                      for k in range(m)) / (m + 1))
    return B


_B = _bernoulli(44)
# Taylor coefficients in powers of θ² (index k ↔ θ^{2k}) of the scalar functions used below.
_S_SINC = [(-1) ** k / _factorial(2 * k + 1) for k in range(16)]        # sin θ / θ
_S_COSC = [(-1) ** k / _factorial(2 * k + 2) for k in range(16)]        # (1 − cos θ)/θ²
_S_SINC3 = [(-1) ** k / _factorial(2 * k + 3) for k in range(16)]       # (θ − sin θ)/θ³
_S_C2 = [(-1) ** k / _factorial(2 * k + 4) for k in range(16)]          # (θ²/2 + cos θ − 1)/θ⁴
_S_D5 = [(-1) ** (k + 1) / _factorial(2 * k + 5) for k in range(16)]    # (θ − sin θ − θ³/6)/θ⁵
# (1 − (θ/2) cot(θ/2))/θ² = −Σ_{n≥1} (−1)ⁿ B_{2n} θ^{2n−2}/(2n)!   (seed 003 eq. 11)
_S_COT = [float(-(-1) ** n * _B[2 * n] / _factorial(2 * n)) for n in range(1, 23)]


def _series(t2, coeffs):
    """Σ_k coeffs[k] t2^k by Horner."""
    s = np.full_like(t2, coeffs[-1])
    for c in coeffs[-2::-1]:
        s = s * t2 + c
    return s


def _coef(theta, closed, coeffs, threshold=_SERIES_THETA):
    """A scalar coefficient f(θ): ``closed(θ)`` for θ ≥ threshold, its series below."""
    theta = np.asarray(theta, dtype=float)
    small = theta < threshold
    out = _series(theta * theta, coeffs)
    if not np.all(small):
        big = ~small
        out = np.where(big, closed(np.where(big, theta, 1.0)), out)
    return out


def hat(w):
    """Batched :func:`skew`: ``(..., 3) → (..., 3, 3)`` with ``hat(w) @ y = w × y``."""
    w = np.asarray(w, dtype=float)
    W = np.zeros(w.shape + (3,))
    W[..., 0, 1], W[..., 0, 2] = -w[..., 2], w[..., 1]
    W[..., 1, 0], W[..., 1, 2] = w[..., 2], -w[..., 0]
    W[..., 2, 0], W[..., 2, 1] = -w[..., 1], w[..., 0]
    return W


def vee(W):
    """Inverse of :func:`hat` (of the skew part): ``(..., 3, 3) → (..., 3)``."""
    W = np.asarray(W, dtype=float)
    return 0.5 * np.stack([W[..., 2, 1] - W[..., 1, 2], W[..., 0, 2] - W[..., 2, 0],
                           W[..., 1, 0] - W[..., 0, 1]], axis=-1)


def ad_se3(X):
    """Batched :func:`ad`: ``ad_X = [[ω̃, 0], [ṽ, ω̃]]`` (seed 003 eq. 7), (..., 6) → (..., 6, 6)"""
    X = np.asarray(X, dtype=float)
    W, Vt = hat(X[..., :3]), hat(X[..., 3:])
    A = np.zeros(X.shape[:-1] + (6, 6))
    A[..., :3, :3] = W
    A[..., 3:, 3:] = W
    A[..., 3:, :3] = Vt
    return A


def _so3_coefs(w):
    th = np.linalg.norm(w, axis=-1)
    a = _coef(th, lambda t: np.sin(t) / t, _S_SINC)
    b = _coef(th, lambda t: 2.0 * np.sin(0.5 * t) ** 2 / (t * t), _S_COSC)
    return th, a, b


def so3_exp(w):
    """``exp(ω̃)`` by Rodrigues (seed 003 eq. 9): ``(..., 3) → (..., 3, 3)``, exactly orthonormal
    up to round-off for any |ω| (no small-angle singularity)."""
    w = np.asarray(w, dtype=float)
    _, a, b = _so3_coefs(w)
    W = hat(w)
    return np.eye(3) + a[..., None, None] * W + b[..., None, None] * (W @ W)


def so3_log(R):
    """``log`` of a rotation: ``(..., 3, 3) → (..., 3)`` with |ω| ∈ [0, π].

    The angle is ``atan2(|vee(R − Rᵀ)|/… , (tr R − 1)/2)`` (accurate at 0 and at π); the axis is
    taken from the skew part for θ < 3π/4 and from the symmetric part ``R + Rᵀ − 2 cos θ I =
    2(1 − cos θ) n nᵀ`` above, where the skew part vanishes (continuity near π).
    """
    R = np.asarray(R, dtype=float)
    s = vee(R)                               # sin θ · n
    c = 0.5 * (np.trace(R, axis1=-2, axis2=-1) - 1.0)
    sn = np.linalg.norm(s, axis=-1)
    th = np.arctan2(sn, c)
    # θ / sin θ has no cancellation: the series only removes the 0/0 at θ = 0
    out = s * _coef(th, lambda t: t / np.sin(t), [1.0, 1.0 / 6.0, 7.0 / 360.0, 31.0 / 15120.0],
                    threshold=1e-3)[..., None]
    near_pi = c < np.cos(0.75 * np.pi)
    if np.any(near_pi):
        Rn, thn, sn_ = R[near_pi], th[near_pi], s[near_pi]
        cn = c[near_pi]
        S = (0.5 * (Rn + np.swapaxes(Rn, -1, -2)) - cn[:, None, None] * np.eye(3)) \
            / (1.0 - cn)[:, None, None]          # = n nᵀ
        d = np.diagonal(S, axis1=-2, axis2=-1)
        k = np.argmax(d, axis=-1)
        col = S[np.arange(len(k)), :, k]
        n = col / np.sqrt(d[np.arange(len(k)), k])[:, None]
        sign = np.where(np.sum(n * sn_, axis=-1) < 0.0, -1.0, 1.0)
        out = out.copy()
        out[near_pi] = (sign * thn)[:, None] * n
    return out


def so3_dexp(w):
    """Right-trivialised ``dexp_ω = I + (1 − cos θ)/θ² ω̃ + (θ − sin θ)/θ³ ω̃²``: ``(..., 3, 3)``.

    ``Ṙ Rᵀ = (dexp_ω ω̇)^`` and ``Rᵀ Ṙ = (dexp_{−ω} ω̇)^`` for ``R = exp(ω̃)``; also the
    translation part of the SE(3) exponential: ``exp(X) = (exp ω̃, dexp_ω v)``.
    """
    w = np.asarray(w, dtype=float)
    th = np.linalg.norm(w, axis=-1)
    b = _coef(th, lambda t: 2.0 * np.sin(0.5 * t) ** 2 / (t * t), _S_COSC)
    c = _coef(th, lambda t: (t - np.sin(t)) / t ** 3, _S_SINC3)
    W = hat(w)
    return np.eye(3) + b[..., None, None] * W + c[..., None, None] * (W @ W)


def so3_dexpinv(w):
    """``dexp_ω⁻¹ = I − ½ ω̃ + (1 − (θ/2) cot(θ/2)) ω̃²/θ²`` (seed 003 eq. 11), for |ω| < 2π."""
    w = np.asarray(w, dtype=float)
    th = np.linalg.norm(w, axis=-1)
    d = _coef(th, lambda t: (1.0 - 0.5 * t / np.tan(0.5 * t)) / (t * t), _S_COT)
    W = hat(w)
    return np.eye(3) - 0.5 * W + d[..., None, None] * (W @ W)


def se3_exp(X):
    """``exp(X̂)`` of a twist ``X = (ω, v)`` of any magnitude (seed 003 eq. 8): ``(..., 6) →
    (..., 4, 4)``; rotation ``exp ω̃``, translation ``dexp_ω v``. (Unlike :func:`exp_se3`, which
    takes a unit screw and an angle.)"""
    X = np.asarray(X, dtype=float)
    w, v = X[..., :3], X[..., 3:]
    C = np.zeros(X.shape[:-1] + (4, 4))
    C[..., :3, :3] = so3_exp(w)
    C[..., :3, 3] = np.einsum("...ij,...j->...i", so3_dexp(w), v)
    C[..., 3, 3] = 1.0
    return C


def se3_log(C):
    """``log`` of a homogeneous transform: ``(..., 4, 4) → (..., 6)``, ``ω = log R``,
    ``v = dexp_ω⁻¹ r``; |ω| ∈ [0, π]."""
    C = np.asarray(C, dtype=float)
    w = so3_log(C[..., :3, :3])
    v = np.einsum("...ij,...j->...i", so3_dexpinv(w), C[..., :3, 3])
    return np.concatenate([w, v], axis=-1)


def _se3_q(X):
    """Lower-left block Q of the SE(3) dexp (angular-first), Barfoot's closed form:
    ``Q = ½ṽ + c1 (ω̃ṽ + ṽω̃ + ω̃ṽω̃) + c2 (ω̃²ṽ + ṽω̃² − 3ω̃ṽω̃) + c3 (ω̃ṽω̃² + ω̃²ṽω̃)``."""
    w, v = X[..., :3], X[..., 3:]
    th = np.linalg.norm(w, axis=-1)
    c1 = _coef(th, lambda t: (t - np.sin(t)) / t ** 3, _S_SINC3)
    c2 = _coef(th, lambda t: (0.5 * t * t + np.cos(t) - 1.0) / t ** 4, _S_C2)
    d5 = _coef(th, lambda t: (t - np.sin(t) - t ** 3 / 6.0) / t ** 5, _S_D5)
    c3 = 0.5 * (c2 + 3.0 * d5)
    W, Vt = hat(w), hat(v)
    WV, VW = W @ Vt, Vt @ W
    WVW = WV @ W
    e = (..., None, None)
    return (0.5 * Vt + c1[e] * (WV + VW + WVW) + c2[e] * (W @ WV + VW @ W - 3.0 * WVW)
            + c3[e] * (WVW @ W + W @ WVW))


def se3_dexp(X):
    """Right-trivialised ``dexp_X = Σ ad_X^k/(k+1)! = [[dexp_ω, 0], [Q, dexp_ω]]``:
    ``(..., 6) → (..., 6, 6)``. ``C⁻¹Ċ = dexp_{−X} Ẋ`` for ``C = exp X̂`` (seed 003 §2.1)."""
    X = np.asarray(X, dtype=float)
    A = so3_dexp(X[..., :3])
    D = np.zeros(X.shape[:-1] + (6, 6))
    D[..., :3, :3] = A
    D[..., 3:, 3:] = A
    D[..., 3:, :3] = _se3_q(X)
    return D


def se3_dexpinv(X):
    """``dexp_X⁻¹ = [[A⁻¹, 0], [−A⁻¹ Q A⁻¹, A⁻¹]]`` with ``A = dexp_ω`` (equal to seed 003
    eq. 10), for |ω| < 2π: ``(..., 6) → (..., 6, 6)``."""
    X = np.asarray(X, dtype=float)
    Ai = so3_dexpinv(X[..., :3])
    D = np.zeros(X.shape[:-1] + (6, 6))
    D[..., :3, :3] = Ai
    D[..., 3:, 3:] = Ai
    D[..., 3:, :3] = -Ai @ _se3_q(X) @ Ai
    return D


def se3_dexpinv_paper(X):
    """Seed 003 eq. (10) verbatim (no small-angle series; for tests, |ω| not small)::

        I − ½ ad + (2/θ² + (θ + 3 sin θ)/(4θ(cos θ − 1))) ad²
                 + (1/θ⁴ + (θ + sin θ)/(4θ³(cos θ − 1))) ad⁴
    """
    X = np.asarray(X, dtype=float)
    t = np.linalg.norm(X[..., :3], axis=-1)[..., None, None]
    a = ad_se3(X)
    a2 = a @ a
    c2 = 2 / t ** 2 + (t + 3 * np.sin(t)) / (4 * t * (np.cos(t) - 1))
    c4 = 1 / t ** 4 + (t + np.sin(t)) / (4 * t ** 3 * (np.cos(t) - 1))
    return np.eye(6) - 0.5 * a + c2 * a2 + c4 * (a2 @ a2)
