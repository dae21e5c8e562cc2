"""Munthe-Kaas (RKMK) Lie-group integrators on SE(3) and on SO(3)×R³ (seed 003 §2–4, eq. 35–37).

The state is a set of rigid-body configurations ``C_i = (R_i, p_i)`` (``R`` of shape (nb, 3, 3),
``p`` of shape (nb, 3)) and a vector ``y`` (m,) in R^m that holds everything else (the velocities,
joint coordinates, actuator states, ...) and is integrated additively (classical RK). The user's
right-hand side returns, for each body, the velocity ``ξ_i`` that moves ``C_i`` and the derivative
of ``y``::

    rhs(t, R, p, y) -> (xi, ydot)      xi: (nb, 6) angular-first, ydot: (m,)

What ``ξ = (ω, v)`` means depends on the configuration space (seed 003 §2):

* ``"se3"`` — ``C ∈ SE(3)`` and ξ is the **body-fixed twist** ``C⁻¹Ċ = (ω̃, v)`` (eq. 6):
  ``Ṙ = R ω̃``, ``ṗ = R v``. The update is the screw motion ``C ← C · exp(Φ̂)`` (eq. 8).
* ``"so3r3"`` — ``C ∈ SO(3)×R³`` and ξ is the **hybrid velocity** ``(ω, ṗ)`` (eq. 20): body-fixed
  angular velocity, spatial linear velocity; ``R ← R · exp(φ̃_ω)`` and ``p ← p + φ_v`` (eq. 18).

One step of the s-stage scheme (eq. 37, left-trivialised as in eq. 36)::

    Ψ_1 = 0;  k_j = dexp⁻¹_{−Ψ_j} F(t + c_j h, X exp Ψ_j);  Ψ_j = h Σ_{l<j} a_jl k_l
    X ← X · exp(h Σ_j b_j k_j)

``dexp⁻¹_{−Ψ} F = F + ½[Ψ, F] + 1/12 [Ψ, [Ψ, F]] − …`` is truncated after the brackets of
order p − 2 (Munthe-Kaas 1999: Ψ = O(h), so the dropped terms are O(h^{p−1}) in k and O(h^{p+1})
locally), i.e. after the double bracket for the 4th-order scheme and before any bracket for the
2nd-order one; ``exact_dexpinv=True`` uses the closed forms of :mod:`mbs_dynamics.lie` instead.
The brackets are those of se(3) (eq. 7) or of so(3)×R³ (``[X1, X2] = (ω1 × ω2, 0)``, eq. 17).

The rotation update multiplies by an exactly orthonormal ``exp(φ̃)`` (Rodrigues), so ``RᵀR = I``
holds to round-off over any number of steps without re-normalisation.

Select a scheme by name: ``INTEGRATORS["rkmk4-se3"]`` (or :func:`get_integrator`); names
``"rkmk4-se3" | "rkmk4-so3r3" | "rkmk2-se3" | "rkmk2-so3r3"``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..kernels import lie

__all__ = ["RKMK", "INTEGRATORS", "get_integrator", "exp_parts", "xi_from_body_twist"]

# W = hat(w) as one matmul: W.reshape(9) = w @ _LEVI, W_ij = −ε_ijk w_k
_LEVI = np.zeros((3, 9))
for _i, _j, _k, _s in [(0, 1, 2, 1), (1, 2, 0, 1), (2, 0, 1, 1), (0, 2, 1, -1), (2, 1, 0, -1),
                       (1, 0, 2, -1)]:
    _LEVI[_k, 3 * _i + _j] = -_s
_I3 = np.eye(3)
# coefficients of (ad_Ψ)^k, k = 1, 2, ..., in dexp⁻¹_{−Ψ} = Σ_k B_k (−ad_Ψ)^k / k!
_BRACKET_COEFS = tuple(float(lie._B[k]) * (-1) ** k / math.factorial(k) for k in range(1, 9))
_SMALL = 1e-2  # [rad] below this the exp coefficients come from 3-term Taylor series


def _hat(w):
    """(n, 3) → (n, 3, 3) skew matrices."""
    return (w @ _LEVI).reshape(w.shape[0], 3, 3)


def exp_parts(w, with_jacobian=True):
    """Rotations ``exp(ω̃)`` and (optionally) ``dexp_ω`` for a batch ``w`` (n, 3).

    The hot-path version of :func:`mbs_dynamics.lie.so3_exp` / :func:`~mbs_dynamics.lie.so3_dexp`:
    closed forms (seed 003 eq. 9, ``ω̃² = ω ωᵀ − θ² I``), 3-term Taylor series of the coefficients
    below |ω| < 1e-2 rad (truncation < 1e-17). The closed form of (θ − sin θ)/θ³ loses relative
    accuracy for small θ, but it multiplies ω̃² (norm θ²), so the matrix stays accurate to a few
    ulps. A single body (n = 1, the floating-base case) takes a scalar path (NumPy's per-call cost
    dominates 3×3 arithmetic).

    Returns:
        ``(R, W, J)``: R (n, 3, 3) rotation, W = ω̃ (n, 3, 3), J = dexp_ω (n, 3, 3) or None.
    """
    if w.shape[0] == 1:
        return _exp_parts_1(w, with_jacobian)
    t2 = np.einsum("ij,ij->i", w, w)
    W = _hat(w)
    WW = W @ W
    if t2.max() < _SMALL * _SMALL:
        a = 1.0 - t2 * (1.0 / 6.0 - t2 / 120.0)
        b = 0.5 - t2 * (1.0 / 24.0 - t2 / 720.0)
        c = 1.0 / 6.0 - t2 * (1.0 / 120.0 - t2 / 5040.0)
    else:
        t = np.sqrt(t2)
        tt = np.where(t2 > 0.0, t, 1.0)
        s = np.sin(tt)
        sh = np.sin(0.5 * tt)
        small = t < _SMALL
        a = np.where(small, 1.0 - t2 * (1.0 / 6.0 - t2 / 120.0), s / tt)
        b = np.where(small, 0.5 - t2 * (1.0 / 24.0 - t2 / 720.0), 2.0 * sh * sh / (tt * tt))
        c = np.where(small, 1.0 / 6.0 - t2 * (1.0 / 120.0 - t2 / 5040.0), (tt - s) / (tt * tt * tt))
    R = _I3 + a[:, None, None] * W + b[:, None, None] * WW
    J = _I3 + b[:, None, None] * W + c[:, None, None] * WW if with_jacobian else None
    return R, W, J


def _coefs_scalar(t2):
    if t2 < _SMALL * _SMALL:
        return (1.0 - t2 * (1.0 / 6.0 - t2 / 120.0), 0.5 - t2 * (1.0 / 24.0 - t2 / 720.0),
                1.0 / 6.0 - t2 * (1.0 / 120.0 - t2 / 5040.0))
    t = math.sqrt(t2)
    s = math.sin(t)
    sh = math.sin(0.5 * t)
    return s / t, 2.0 * sh * sh / t2, (t - s) / (t2 * t)


def _exp_parts_1(w, with_jacobian):
    x, y, z = w[0].tolist()
    t2 = x * x + y * y + z * z
    a, b, c = _coefs_scalar(t2)
    xx, yy, zz, xy, xz, yz = x * x, y * y, z * z, x * y, x * z, y * z
    W = np.array([[[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]]])
    # ω̃² = ω ωᵀ − θ² I
    R = np.array([[[1.0 + b * (xx - t2), b * xy - a * z, b * xz + a * y],
                   [b * xy + a * z, 1.0 + b * (yy - t2), b * yz - a * x],
                   [b * xz - a * y, b * yz + a * x, 1.0 + b * (zz - t2)]]])
    if not with_jacobian:
        return R, W, None
    J = np.array([[[1.0 + c * (xx - t2), c * xy - b * z, c * xz + b * y],
                   [c * xy + b * z, 1.0 + c * (yy - t2), c * yz - b * x],
                   [c * xz - b * y, c * yz + b * x, 1.0 + c * (zz - t2)]]])
    return R, W, J


@dataclass(frozen=True)
class RKMK:
    """An explicit Runge–Kutta–Munthe-Kaas scheme on (SE(3) or SO(3)×R³)^nb × R^m.

    Attributes:
        name: registry name, e.g. ``"rkmk4-se3"``.
        group: ``"se3"`` (body-fixed twists, screw update) or ``"so3r3"`` (hybrid velocities,
            rotation and translation updated separately).
        a, b, c: Butcher tableau (explicit: ``a`` strictly lower triangular).
        order: classical order p of the tableau (and of the scheme, with the dexp⁻¹ truncation).
        exact_dexpinv: use the closed-form dexp⁻¹ (:func:`mbs_dynamics.lie.se3_dexpinv`,
            ``so3_dexpinv``) instead of the truncated bracket series.
    """

    name: str
    group: str
    a: tuple
    b: tuple
    c: tuple
    order: int
    exact_dexpinv: bool = False

    def __post_init__(self):
        if self.group not in ("se3", "so3r3"):
            raise ValueError(f"group must be 'se3' or 'so3r3', got {self.group!r}")

    # -- the Lie-group operations of the configuration space -----------------------------------
    def _move(self, R0, p0, psi):
        """``C0 · exp(Ψ)`` for every body: Ψ (nb, 6). Returns ``(R, p, aux)``, ``aux`` reused by
        :meth:`_dexpinv_neg` (ψ̃_ω, or Ψ as floats on the single-body path)."""
        if psi.shape[0] == 1:
            return self._move_1(R0, p0, psi)
        if self.group == "se3":
            E, W, J = exp_parts(psi[:, :3], True)
            R = R0 @ E
            p = p0 + (R0 @ (J @ psi[:, 3:, None]))[..., 0]
        else:
            E, W, _ = exp_parts(psi[:, :3], False)
            R = R0 @ E
            p = p0 + psi[:, 3:]
        return R, p, W

    def _move_1(self, R0, p0, psi):
        """:meth:`_move` for one body in scalar arithmetic (NumPy's per-call cost dominates 3×3)."""
        f = psi[0].tolist()
        x, y, z, u1, u2, u3 = f
        t2 = x * x + y * y + z * z
        if not t2 < math.inf:
            nan = np.full((1, 3), np.nan)
            return np.full((1, 3, 3), np.nan), nan, f
        a, b, c = _coefs_scalar(t2)
        xy, xz, yz = x * y, x * z, y * z
        E = np.array([[1.0 + b * (x * x - t2), b * xy - a * z, b * xz + a * y],
                      [b * xy + a * z, 1.0 + b * (y * y - t2), b * yz - a * x],
                      [b * xz - a * y, b * yz + a * x, 1.0 + b * (z * z - t2)]])
        R = R0 @ E
        if self.group == "se3":
            # dexp_ω u = u + b ω × u + c ω × (ω × u), ω × (ω × u) = ω (ω·u) − θ² u
            wu = x * u1 + y * u2 + z * u3
            d = np.array([u1 + b * (y * u3 - z * u2) + c * (x * wu - t2 * u1),
                          u2 + b * (z * u1 - x * u3) + c * (y * wu - t2 * u2),
                          u3 + b * (x * u2 - y * u1) + c * (z * wu - t2 * u3)])
            p = p0 + R0[0] @ d
        else:
            p = p0 + psi[:, 3:]
        return R, p, f

    def _dexpinv_neg_1(self, f, xi):
        """:meth:`_dexpinv_neg` for one body in scalar arithmetic."""
        x, y, z, u1, u2, u3 = f
        se3 = self.group == "se3"
        out = xi[0].tolist()
        term = out
        for ck in self._bracket_coefs:
            a1, a2, a3, b1, b2, b3 = term
            # ad_Ψ (a, b) = (ψω × a, ψω × b + ψv × a)   (so(3)×R³: (ψω × a, 0))
            term = [y * a3 - z * a2, z * a1 - x * a3, x * a2 - y * a1,
                    (y * b3 - z * b2 + u2 * a3 - u3 * a2) if se3 else 0.0,
                    (z * b1 - x * b3 + u3 * a1 - u1 * a3) if se3 else 0.0,
                    (x * b2 - y * b1 + u1 * a2 - u2 * a1) if se3 else 0.0]
            if ck != 0.0:
                out = [o + ck * tk for o, tk in zip(out, term)]
        return np.array([out])

    def _dexpinv_neg(self, psi, W, xi):
        """``dexp⁻¹_{−Ψ} ξ`` per body (seed 003 eq. 36), truncated for the scheme's order."""
        if psi.shape[0] == 1 and not self.exact_dexpinv:
            return self._dexpinv_neg_1(W, xi) if self._bracket_coefs else xi
        if self.exact_dexpinv:
            if self.group == "se3":
                return np.einsum("nij,nj->ni", lie.se3_dexpinv(-psi), xi)
            out = xi.copy()
            out[:, :3] = np.einsum("nij,nj->ni", lie.so3_dexpinv(-psi[:, :3]), xi[:, :3])
            return out
        coefs = self._bracket_coefs
        if not coefs:
            return xi
        n = psi.shape[0]
        A = np.zeros((n, 6, 6))  # ad_Ψ (eq. 7) or, on so(3)×R³, diag(ψ̃ω, 0) (eq. 17)
        A[:, :3, :3] = W
        if self.group == "se3":
            A[:, 3:, 3:] = W
            A[:, 3:, :3] = _hat(psi[:, 3:])
        out = xi
        term = xi[..., None]
        for ck in coefs:
            term = A @ term
            if ck != 0.0:
                out = out + ck * term[..., 0]
        return out

    @property
    def _bracket_coefs(self):
        """Σ_k B_k (−ad_Ψ)^k / k! truncated at k = p − 2: [+1/2, +1/12] for p = 4, [] for p = 2."""
        return _BRACKET_COEFS[: max(self.order - 2, 0)]

    # -- stepping ------------------------------------------------------------------------------
    def step(self, rhs, t, h, R, p, y):
        """One step of size ``h`` from ``(R, p, y)`` at time ``t`` (seed 003 eq. 37).

        Args:
            rhs: ``rhs(t, R, p, y) -> (xi (nb, 6), ydot (m,))``, see the module docstring.
            t: time [s]; h: step [s].
            R: (nb, 3, 3) rotations; p: (nb, 3) positions [m]; y: (m,) vector state.
        Returns:
            ``(R, p, y)`` at ``t + h`` (new arrays).
        """
        K = []   # body parts k_j (nb, 6)
        KY = []  # vector parts (m,)
        for j, row in enumerate(self.a):
            if j == 0:
                Rj, pj, yj = R, p, y
                psi, W = None, None
            else:
                nz = [(h * a_jl, l) for l, a_jl in enumerate(row) if a_jl != 0.0]
                psi = nz[0][0] * K[nz[0][1]]
                yj = y + nz[0][0] * KY[nz[0][1]]
                for ha, l in nz[1:]:
                    psi = psi + ha * K[l]
                    yj = yj + ha * KY[l]
                Rj, pj, W = self._move(R, p, psi)
            xi, ydot = rhs(t + self.c[j] * h, Rj, pj, yj)
            xi = np.asarray(xi, dtype=float).reshape(R.shape[0], 6)
            K.append(xi if j == 0 else self._dexpinv_neg(psi, W, xi))
            KY.append(np.asarray(ydot, dtype=float))
        phi = h * sum(bj * kj for bj, kj in zip(self.b, K) if bj != 0.0)
        y1 = y + h * sum(bj * kj for bj, kj in zip(self.b, KY) if bj != 0.0)
        R1, p1, _ = self._move(R, p, phi)
        return R1, p1, y1

    def integrate(self, rhs, t0, R0, p0, y0, h, n_steps, observe=None):
        """``n_steps`` steps of size ``h`` from ``t0``.

        Args:
            rhs: see :meth:`step`.
            t0: initial time [s]; h: step [s] (> 0); n_steps: number of steps (≥ 0).
            R0: (nb, 3, 3) or (3, 3); p0: (nb, 3) or (3,); y0: (m,) (may be empty).
            observe: optional ``observe(k, t, R, p, y)`` called after each step k = 1..n_steps
                (and once with k = 0 at the start).
        Returns:
            ``(R, p, y)`` at ``t0 + n_steps h`` with R (nb, 3, 3), p (nb, 3), y (m,).
        Raises:
            ValueError: naming the argument with a bad shape or value, or the step at which the
                state became non-finite.
        """
        R, p, y = self.check_state(R0, p0, y0)
        h = float(h)
        if not (h > 0.0 and math.isfinite(h)):
            raise ValueError(f"h must be a finite step > 0 [s], got {h}")
        n_steps = int(n_steps)
        if n_steps < 0:
            raise ValueError(f"n_steps must be >= 0, got {n_steps}")
        t = float(t0)
        if observe is not None:
            observe(0, t, R, p, y)
        for k in range(1, n_steps + 1):
            R, p, y = self.step(rhs, t, h, R, p, y)
            t = t0 + k * h
            if observe is not None:
                observe(k, t, R, p, y)
        if not (np.isfinite(R).all() and np.isfinite(p).all() and np.isfinite(y).all()):
            raise ValueError(f"{self.name}: the state became non-finite before t = {t} s")
        return R, p, y

    @staticmethod
    def check_state(R0, p0, y0):
        """Validate and normalise shapes: returns float arrays R (nb,3,3), p (nb,3), y (m,)."""
        R = np.array(R0, dtype=float)
        if R.ndim == 2:
            R = R[None]
        if R.ndim != 3 or R.shape[1:] != (3, 3):
            raise ValueError(f"R0 must have shape (nb, 3, 3) or (3, 3), got {np.shape(R0)}")
        p = np.array(p0, dtype=float)
        if p.ndim == 1:
            p = p[None]
        if p.shape != (R.shape[0], 3):
            raise ValueError(f"p0 must have shape ({R.shape[0]}, 3) to match R0, "
                             f"got {np.shape(p0)}")
        y = np.array(y0, dtype=float).reshape(-1)
        for name, a in (("R0", R), ("p0", p), ("y0", y)):
            if not np.isfinite(a).all():
                raise ValueError(f"{name} has non-finite entries")
        dev = np.abs(np.swapaxes(R, 1, 2) @ R - _I3).max() if R.size else 0.0
        if dev > 1e-9:
            raise ValueError(f"R0 is not a rotation: max |RᵀR − I| = {dev:.3g}")
        return R, p, y


_RK4 = dict(a=((), (0.5,), (0.0, 0.5), (0.0, 0.0, 1.0)), b=(1 / 6, 1 / 3, 1 / 3, 1 / 6),
            c=(0.0, 0.5, 0.5, 1.0), order=4)
_HEUN = dict(a=((), (1.0,)), b=(0.5, 0.5), c=(0.0, 1.0), order=2)

#: name → integrator: classical RK4 / Heun (explicit trapezoidal) tableaus on each group.
INTEGRATORS = {
    "rkmk4-se3": RKMK("rkmk4-se3", "se3", **_RK4),
    "rkmk4-so3r3": RKMK("rkmk4-so3r3", "so3r3", **_RK4),
    "rkmk2-se3": RKMK("rkmk2-se3", "se3", **_HEUN),
    "rkmk2-so3r3": RKMK("rkmk2-so3r3", "so3r3", **_HEUN),
}


def xi_from_body_twist(group, R, V):
    """The velocity ``xi`` a scheme on ``group`` expects, from body-fixed twists ``V`` (nb, 6).

    For a model that computes its dynamics with body-fixed twists (e.g. a floating base) whatever
    the integrator: ``"se3"`` takes them as they are, ``"so3r3"`` needs the hybrid velocity
    ``(ω, ṗ) = (ω, R v)`` (seed 003 eq. 20).
    """
    V = np.asarray(V, dtype=float).reshape(-1, 6)
    if group == "se3":
        return V
    if group != "so3r3":
        raise ValueError(f"group must be 'se3' or 'so3r3', got {group!r}")
    out = V.copy()
    out[:, 3:] = (R @ V[:, 3:, None])[..., 0]
    return out


def get_integrator(name):
    """The integrator registered as ``name`` (see :data:`INTEGRATORS`).

    Raises:
        ValueError: unknown name (the known ones are listed).
    """
    try:
        return INTEGRATORS[name]
    except (KeyError, TypeError):
        raise ValueError(f"integrator must be one of {sorted(INTEGRATORS)}, got {name!r}") from None
