"""Elastic actuator models: spring laws, SEA and VSA flatness references.

Reduced model of an elastic joint (doc/math.md, "Flatness feedforward"; Spong's reduced model):

* link:   ``M(q) q'' + c(q, q') + g(q) = τ_e``
* spring: ``τ_e = φ(θ − q, σ)``, with ``θ`` the motor position (reflected to the joint side) and
  ``σ`` a stiffness input (unused by a series-elastic spring, ``φ = K (θ − q)``)
* motor:  ``B θ'' + D_m θ' + τ_e = τ_m``; ``D_m`` is optional motor viscous friction
  (``actuator.motor_damping``, default 0); the spring itself is undamped.

Given the desired link motion ``q(t)`` and the rigid inverse dynamics ``τ(t) = τ_e(t)`` with its
first two derivatives, the motor reference follows by differentiation (flatness):

* SEA: ``θ = q + K⁻¹τ``, ``θ' = q' + K⁻¹τ'``, ``θ'' = q'' + K⁻¹τ''``,
  ``τ_m = B θ'' + D_m θ' + τ``.
* VSA: ``δ = θ − q`` solves ``φ(δ, σ) = τ`` (Newton, convergence checked); differentiating
  ``φ(δ(t), σ(t)) = τ(t)`` once and twice gives ::

      δ'  = (τ' − φ_σ σ') / φ_δ
      δ'' = (τ'' − φ_δδ δ'² − 2 φ_δσ δ' σ' − φ_σσ σ'² − φ_σ σ'') / φ_δ

  and ``θ = q + δ``, ``θ' = q' + δ'``, ``θ'' = q'' + δ''``, ``τ_m = B θ'' + D_m θ' + τ``.
  ``σ`` is treated as a kinematic input (its own drive is assumed position controlled).

Spring laws are pluggable: subclass :class:`Spring` and implement :meth:`Spring.partials`.
The built-in nonlinear law is :class:`ExponentialAntagonisticSpring`.

Every actuator object has ``reference(qs, taus, out=None)``: ``qs`` is (5, n) = q…q'''',
``taus`` (3, n) = τ, τ', τ''; the result is (4, n) with rows θ, θ', θ'', τ_m. The same call takes
(N, 5, n) and (N, 3, n) and returns (N, 4, n). For :class:`SEA` and :class:`VSA` with the
built-in exponential law the work is a few vectorised NumPy operations over the whole batch.
Units: joint-side [rad], [Nm], [kg m²] (prismatic joints: [m], [N], [kg]).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod

import numpy as np

__all__ = [
    "ACTUATOR_PARAMETERS",
    "SEA",
    "VSA",
    "Spring",
    "LinearSpring",
    "ExponentialAntagonisticSpring",
    "SpringInversionError",
    "actuator_from_params",
    "vsa_spring",
    "flatten_params",
]

#: Configuration keys (ROS parameter names; YAML keys, nested or dotted): name -> (default, text).
ACTUATOR_PARAMETERS = {
    "actuator.type": (
        "rigid",
        "Actuator model: 'rigid' (motor torque = link torque), 'sea' (series elastic, linear "
        "spring K), 'vsa' (variable stiffness, spring law actuator.vsa.model)."),
    "actuator.stiffness": (
        1000.0,
        "SEA spring stiffness K [Nm/rad] ([N/m] for prismatic joints): one number for every "
        "joint or a list of n numbers, each > 0."),
    "actuator.motor_inertia": (
        0.5,
        "Motor inertia B reflected to the joint side (rotor inertia times gear ratio squared) "
        "[kg m²]: one number or a list of n, each >= 0."),
    "actuator.motor_damping": (
        0.0,
        "Motor viscous friction D_m [Nm s/rad]: the motor torque gains D_m θ'. One number or a "
        "list of n, each >= 0; 0 disables it."),
    "actuator.vsa.model": (
        "exponential_antagonistic",
        "VSA spring law. 'exponential_antagonistic': two exponential springs in agonist-"
        "antagonist arrangement, φ(δ, σ) = (k/a) exp(a σ) sinh(a δ)."),
    "actuator.vsa.k": (
        1000.0,
        "VSA stiffness at zero deflection and zero pretension, k [Nm/rad]: number or list of "
        "n, each > 0."),
    "actuator.vsa.a": (
        5.0,
        "VSA spring exponent a [1/rad]: number or list of n, each > 0. Stiffness at zero "
        "deflection is k exp(a σ)."),
    "actuator.vsa.sigma": (
        0.0,
        "VSA stiffness input σ (pretension, half the difference of the two motor positions) "
        "[rad] held constant when no σ(t) is given: number or list of n."),
    "actuator.vsa.tolerance": (
        1e-12,
        "Newton convergence tolerance on the spring deflection [rad] (relative above 1 rad)."),
    "actuator.vsa.max_iterations": (
        50,
        "Newton iteration limit; failing to converge raises SpringInversionError."),
    "actuator.motor_loop.p": (
        0.0,
        "Drive motor-loop position gain [Nm/rad] of a simulated SEA (MuJoCo co-simulation): "
        "τ = τ_m + p (θ_d − θ) + d (θ'_d − θ'). One number or a list of n, each >= 0; 0: K."),
    "actuator.motor_loop.d": (
        0.0,
        "Drive motor-loop velocity gain [Nm s/rad] of a simulated SEA: one number or a list of "
        "n, each >= 0; 0: 2 √(K B) (critically damped rotor at the spring's frequency)."),
}


class SpringInversionError(ArithmeticError):
    """Newton failed to solve φ(δ, σ) = τ for the spring deflection δ."""


# =============================================================================================
# spring laws
# =============================================================================================
class Spring(ABC):
    """A spring law ``τ_e = φ(δ, σ)`` with ``δ = θ − q`` and stiffness input ``σ``.

    Subclasses implement :meth:`partials`, vectorised over NumPy arrays (broadcasting ``delta``
    and ``sigma``). ``φ`` must be strictly increasing in ``δ`` (``φ_δ > 0``: a positive stiffness),
    and twice continuously differentiable. Override :meth:`guess` when a better starting point for
    Newton than ``τ / φ_δ(0, σ)`` is known.
    """

    @abstractmethod
    def partials(self, delta, sigma):
        """φ and its partial derivatives up to second order.

        Args:
            delta: deflection θ − q [rad], array.
            sigma: stiffness input, array broadcastable with ``delta``.

        Returns:
            tuple ``(φ, φ_δ, φ_σ, φ_δδ, φ_δσ, φ_σσ)`` of arrays.
        """

    def partials3(self, delta, sigma):
        """The third partial derivatives of φ, for the flatness controller's zero-order-hold
        lead (:class:`~mbs_dynamics.control.flatness.FlatnessController`, ``sample_time`` > 0).
        Optional: a spring law without them runs that controller with ``sample_time=0`` only.

        Args:
            delta: deflection θ − q [rad], array.
            sigma: stiffness input, array broadcastable with ``delta``.

        Returns:
            tuple ``(φ_δδδ, φ_δδσ, φ_δσσ, φ_σσσ)`` of arrays.

        Raises:
            NotImplementedError: this spring law does not provide them.
        """
        raise NotImplementedError(f"{type(self).__name__} has no third partials (partials3)")

    def torque(self, delta, sigma):
        """φ(δ, σ) [Nm]."""
        return self.partials(delta, sigma)[0]

    def stiffness(self, delta, sigma):
        """∂φ/∂δ [Nm/rad]."""
        return self.partials(delta, sigma)[1]

    def guess(self, tau, sigma):
        """Starting point for Newton: the linearisation at zero deflection."""
        return tau / self.partials(np.zeros_like(tau), sigma)[1]

    def invert(self, tau, sigma, tol=1e-12, max_iterations=50):
        """Deflection δ with φ(δ, σ) = τ, by Newton's method with backtracking.

        Each Newton step is halved until the residual ``|φ − τ|`` does not grow, which makes the
        iteration converge for any strictly increasing φ. Converged when every step is below
        ``tol·max(1, |δ|)``.

        Raises:
            SpringInversionError: φ_δ <= 0 or non-finite values met, or no convergence within
                ``max_iterations``.
        """
        tau = np.asarray(tau, dtype=float)
        sigma = np.broadcast_to(np.asarray(sigma, dtype=float), tau.shape)
        delta = np.array(self.guess(tau, sigma), dtype=float)
        phi, phi_d = self.partials(delta, sigma)[:2]
        res = phi - tau
        for _ in range(max_iterations):
            if not (np.all(phi_d > 0) and np.all(np.isfinite(res))):
                raise SpringInversionError(
                    f"spring law {type(self).__name__} has non-positive or non-finite stiffness "
                    f"at δ={delta}, σ={sigma}")
            step = res / phi_d
            # backtracking: halve the step where the residual would grow
            for _ in range(60):
                trial = delta - step
                phi_t, phi_d_t = self.partials(trial, sigma)[:2]
                res_t = phi_t - tau
                worse = ~(np.abs(res_t) <= np.abs(res))
                if not np.any(worse):
                    break
                step = np.where(worse, 0.5 * step, step)
            delta, phi_d, res = trial, phi_d_t, res_t
            if np.all(np.abs(step) <= tol * np.maximum(1.0, np.abs(delta))):
                return delta
        raise SpringInversionError(
            f"Newton did not converge in {max_iterations} iterations for {type(self).__name__}: "
            f"max residual {np.max(np.abs(res)):.3g} Nm")


class LinearSpring(Spring):
    """``φ(δ, σ) = K δ`` (σ ignored): the SEA spring as a :class:`Spring`.

    Args:
        stiffness: K [Nm/rad], scalar or (n,), > 0.
    """

    def __init__(self, stiffness):
        self.K = _positive(stiffness, "stiffness")

    def partials(self, delta, sigma):
        delta = np.asarray(delta, dtype=float)
        zero = np.zeros(np.broadcast_shapes(delta.shape, np.shape(sigma)))
        return self.K * delta + zero, self.K + zero, zero, zero, zero, zero

    def guess(self, tau, sigma):
        return tau / self.K

    def partials3(self, delta, sigma):
        zero = np.zeros(np.broadcast_shapes(np.shape(delta), np.shape(sigma), np.shape(self.K)))
        return zero, zero, zero, zero


class ExponentialAntagonisticSpring(Spring):
    """Two identical exponential springs in agonist–antagonist arrangement.

    Motor positions ``θ₁ = θ + σ`` and ``θ₂ = θ − σ`` each pull the link through a spring with
    torque–deflection law ``f(x) = (k / 2a) exp(a x)``; with ``δ = θ − q`` the deflections are
    ``σ + δ`` and ``σ − δ``, so ::

        φ(δ, σ) = f(σ + δ) − f(σ − δ) = (k/a) exp(a σ) sinh(a δ)
        φ_δ = k exp(a σ) cosh(a δ)           (stiffness; k exp(a σ) at δ = 0)
        φ_σ = a φ,  φ_δδ = a k exp(a σ) sinh(a δ),  φ_δσ = a φ_δ,  φ_σσ = a² φ

    The pretension σ sets the stiffness independently of the equilibrium θ — the mechanism of
    antagonistic VSAs with progressive springs (C. E. English, D. Russell, "Mechanics and
    stiffness limitations of a variable stiffness actuator for use in prosthetic limbs",
    Mechanism and Machine Theory 34(1), 1999; G. Tonietti, R. Schiavi, A. Bicchi, "Design and
    control of a variable stiffness actuator for safe and fast physical human/robot
    interaction", ICRA 2005; review: B. Vanderborght et al., "Variable impedance actuators: a
    review", Robotics and Autonomous Systems 61(12), 2013).

    Args:
        k: stiffness at δ = 0, σ = 0 [Nm/rad], scalar or (n,), > 0.
        a: exponent [1/rad], scalar or (n,), > 0.
    """

    def __init__(self, k, a):
        self.k = _positive(k, "k")
        self.a = _positive(a, "a")

    def partials(self, delta, sigma):
        k, a = self.k, self.a
        e = k * np.exp(a * np.asarray(sigma, dtype=float))
        s = np.sinh(a * np.asarray(delta, dtype=float))
        c = np.cosh(a * np.asarray(delta, dtype=float))
        phi = e * s / a
        phi_d = e * c
        return phi, phi_d, a * phi, a * e * s, a * phi_d, a * a * phi

    def partials3(self, delta, sigma):
        """``φ_δδδ = a² φ_δ``, ``φ_δδσ = a φ_δδ``, ``φ_δσσ = a² φ_δ``, ``φ_σσσ = a³ φ``."""
        phi, phi_d, _, phi_dd = self.partials(delta, sigma)[:4]
        a = self.a
        return a * a * phi_d, a * phi_dd, a * a * phi_d, a ** 3 * phi

    def guess(self, tau, sigma):
        # closed-form inverse; Newton then only polishes it
        return np.arcsinh(self.a * tau / (self.k * np.exp(self.a * sigma))) / self.a


# =============================================================================================
# batch kernels (NumPy, vectorised over samples and joints; layout qs (N,5,n), taus (N,3,n),
# out (N,4,n))
# =============================================================================================
def _sea_kernel(qs, taus, K, B, Dm, out):
    """SEA reference, doc/math.md: θ = q + K⁻¹τ, θ' = q' + K⁻¹τ', θ'' = q'' + K⁻¹τ'',
    τ_m = B θ'' + D_m θ' + τ. Fills ``out`` (N, 4, n) in place."""
    np.divide(taus[:, 0:3], K, out=out[:, 0:3])
    out[:, 0:3] += qs[:, 0:3]
    np.multiply(B, out[:, 2], out=out[:, 3])
    out[:, 3] += Dm * out[:, 1]
    out[:, 3] += taus[:, 0]


def _exp_vsa_kernel(qs, taus, sig, k, a, B, Dm, tol, max_iter, out, constant_sigma=False):
    """VSA reference for :class:`ExponentialAntagonisticSpring` (compiled:
    :func:`mbs_dynamics._actuators.exp_vsa`); sig (N or 1, 3, n) = σ, σ', σ''; fills ``out``
    (N, 4, n). ``constant_sigma`` is implied by σ' = σ'' = 0 in ``sig``.

    Returns:
        0 on success, else 1 + the flat index (sample * n + joint) of the first entry that did
        not converge or is not finite.
    """
    from ._actuators import exp_vsa
    f = np.ascontiguousarray
    return exp_vsa(qs, taus, sig, f(k, dtype=float), f(a, dtype=float), f(B, dtype=float),
                   f(Dm, dtype=float), float(tol), int(max_iter), out)


# =============================================================================================
# actuators
# =============================================================================================
def _vector(value, what, n=None):
    """Scalar or (n,) -> float (n,) array (n=None: any length, scalars become shape (1,))."""
    try:
        arr = np.array(value, dtype=float)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{what} must be a number or a list of numbers, got {value!r}") from None
    if arr.ndim == 0:
        arr = np.full(1 if n is None else n, float(arr))
    if arr.ndim != 1 or (n is not None and arr.shape[0] != n):
        raise ValueError(f"{what} must be one number or a list of {n} numbers, got shape "
                         f"{arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{what} must be finite, got {value!r}")
    return arr


def _positive(value, what, n=None):
    arr = _vector(value, what, n)
    if not np.all(arr > 0):
        raise ValueError(f"{what} must be > 0, got {value!r}")
    return arr


def _nonnegative(value, what, n=None):
    arr = _vector(value, what, n)
    if not np.all(arr >= 0):
        raise ValueError(f"{what} must be >= 0, got {value!r}")
    return arr


class _Actuator:
    """Shared shape handling of ``reference``."""

    n = None

    def _prepare(self, qs, taus, out):
        qs = np.asarray(qs, dtype=float)
        taus = np.asarray(taus, dtype=float)
        single = qs.ndim == 2
        if single:
            qs, taus = qs[None], taus[None]
        if qs.ndim != 3 or qs.shape[1] != 5:
            raise ValueError(f"qs must have shape (5, n) or (N, 5, n), got {qs.shape}")
        n = qs.shape[2]
        if self.n is not None and n != self.n:
            raise ValueError(f"qs has {n} joints, the actuator was configured for {self.n}")
        if taus.shape != (qs.shape[0], 3, n):
            raise ValueError(f"taus must have shape {(3, n) if single else (qs.shape[0], 3, n)},"
                             f" got {taus.shape if not single else taus.shape[1:]}")
        shape = (qs.shape[0], 4, n)
        if out is None:
            result = np.empty(shape[1:] if single else shape)
        else:
            result = out
            if out.shape != (shape[1:] if single else shape) or out.dtype != np.float64:
                raise ValueError(f"out must be a float64 array of shape "
                                 f"{shape[1:] if single else shape}, got {out.shape}")
        out3 = result[None] if single else result
        return qs, taus, result, out3

    @staticmethod
    def _param(arr, n):
        """A per-joint parameter for n joints (a single value is repeated)."""
        if arr.shape[0] == n:
            return arr
        if arr.shape[0] == 1:
            return np.full(n, arr[0])
        raise ValueError(f"the actuator has {arr.shape[0]} per-joint values, the input {n} "
                         "joints")


class SEA(_Actuator):
    """Series elastic actuator with linear spring K (see the module docstring).

    Args:
        stiffness: K [Nm/rad], scalar or (n,), > 0.
        motor_inertia: B [kg m²], scalar or (n,), >= 0.
        motor_damping: D_m [Nm s/rad], scalar or (n,), >= 0, or None (= 0).
        n: number of joints, if known (scalars are then expanded and lengths checked).
    """

    def __init__(self, stiffness, motor_inertia, motor_damping=None, n=None):
        self.n = n
        self.stiffness = _positive(stiffness, "stiffness", n)
        self.motor_inertia = _nonnegative(motor_inertia, "motor_inertia", n)
        self.motor_damping = _nonnegative(0.0 if motor_damping is None else motor_damping,
                                          "motor_damping", n)
        self._cache = (None, None)

    def __repr__(self):
        return (f"SEA(stiffness={self.stiffness.tolist()}, motor_inertia="
                f"{self.motor_inertia.tolist()}, motor_damping={self.motor_damping.tolist()})")

    @property
    def spring(self):
        """The :class:`LinearSpring` with this stiffness."""
        return LinearSpring(self.stiffness)

    def _params(self, n):
        cached_n, params = self._cache
        if cached_n != n:
            params = tuple(np.ascontiguousarray(self._param(p, n)) for p in
                           (self.stiffness, self.motor_inertia, self.motor_damping))
            self._cache = (n, params)
        return params

    def reference(self, qs, taus, out=None):
        """Motor reference θ, θ', θ'', τ_m from q…q'''' and τ, τ', τ''.

        Args:
            qs: (5, n) or (N, 5, n): q, q', q'', q''', q'''' (only the first three are used).
            taus: (3, n) or (N, 3, n): τ, τ', τ'' (rigid inverse dynamics and derivatives).
            out: optional (4, n) or (N, 4, n) float64 array to fill.

        Returns:
            (4, n) or (N, 4, n): rows θ, θ', θ'', τ_m.
        """
        qs, taus, result, out3 = self._prepare(qs, taus, out)
        K, B, Dm = self._params(qs.shape[2])
        _sea_kernel(qs, taus, K, B, Dm, out3)
        return result


#: Parameters of the default VSA spring law (:class:`ExponentialAntagonisticSpring`) when
#: neither ``spring`` nor ``k``/``a`` are given: k [Nm/rad], a [1/rad].
VSA_DEFAULT_K, VSA_DEFAULT_A = 1000.0, 5.0


def vsa_spring(spring=None, k=None, a=None):
    """The spring law of a VSA from the keywords shared by :class:`VSA` and
    :func:`mbs_dynamics.feedforward.vsa_feedforward`: a :class:`Spring`, or the parameters
    ``k`` [Nm/rad] and ``a`` [1/rad] of :class:`ExponentialAntagonisticSpring` (defaults
    :data:`VSA_DEFAULT_K`, :data:`VSA_DEFAULT_A`).

    Raises:
        ValueError: ``spring`` is not a Spring, or both ``spring`` and ``k``/``a`` are given.
    """
    if spring is None:
        return ExponentialAntagonisticSpring(VSA_DEFAULT_K if k is None else k,
                                             VSA_DEFAULT_A if a is None else a)
    if not isinstance(spring, Spring):
        raise ValueError(f"spring must be a Spring, got {type(spring).__name__}")
    if k is not None or a is not None:
        raise ValueError("give either spring or k, a (the exponential spring's parameters), "
                         "not both")
    return spring


class VSA(_Actuator):
    """Variable stiffness actuator ``τ_e = φ(θ − q, σ)`` (see the module docstring).

    Takes the same keywords as :func:`mbs_dynamics.feedforward.vsa_feedforward`:
    ``VSA(motor_inertia=0.2, sigma=0.1, k=1000.0, a=5.0)`` or ``VSA(spring, motor_inertia)``.

    Args:
        spring: a :class:`Spring`; None (default): :class:`ExponentialAntagonisticSpring`
            ``(k, a)``.
        motor_inertia: B [kg m²], scalar or (n,), >= 0.
        motor_damping: D_m [Nm s/rad], scalar or (n,), >= 0, or None.
        sigma: constant stiffness input σ [rad] used when ``reference`` gets no ``sigmas``,
            scalar or (n,).
        tol: Newton tolerance on δ [rad]; max_iterations: Newton iteration limit.
        n: number of joints, if known.
        k, a: parameters of the default spring, k [Nm/rad] and a [1/rad], scalar or (n,)
            (default 1000 and 5); not together with ``spring``.

    Raises:
        ValueError: a parameter out of range (named), or both ``spring`` and ``k``/``a``.
        TypeError: no ``motor_inertia``.
    """

    def __init__(self, spring=None, motor_inertia=None, motor_damping=None, sigma=0.0, tol=1e-12,
                 max_iterations=50, n=None, *, k=None, a=None):
        if motor_inertia is None:
            raise TypeError("VSA() needs motor_inertia (B [kg m²], scalar or (n,))")
        self.n = n
        self.spring = vsa_spring(spring, k, a)
        self.motor_inertia = _nonnegative(motor_inertia, "motor_inertia", n)
        self.motor_damping = _nonnegative(0.0 if motor_damping is None else motor_damping,
                                          "motor_damping", n)
        self.sigma = _vector(sigma, "sigma", n)
        if not (tol > 0 and math.isfinite(tol)):
            raise ValueError(f"tolerance must be > 0, got {tol!r}")
        if int(max_iterations) != max_iterations or max_iterations < 1:
            raise ValueError(f"max_iterations must be a positive integer, got {max_iterations!r}")
        self.tol = float(tol)
        self.max_iterations = int(max_iterations)
        self._cache = (None, None)

    def __repr__(self):
        return f"VSA(spring={type(self.spring).__name__}, sigma={self.sigma.tolist()})"

    def _params(self, n):
        cached_n, params = self._cache
        if cached_n != n:
            sig = np.zeros((1, 3, n))
            sig[0, 0] = self._param(self.sigma, n)
            params = (np.ascontiguousarray(self._param(self.motor_inertia, n)),
                      np.ascontiguousarray(self._param(self.motor_damping, n)), sig)
            if type(self.spring) is ExponentialAntagonisticSpring:  # subclasses may differ
                params += (np.ascontiguousarray(self._param(self.spring.k, n)),
                           np.ascontiguousarray(self._param(self.spring.a, n)))
            self._cache = (n, params)
        return params

    def _sigmas(self, sigmas, N, n, single):
        if sigmas is None:
            return self._params(n)[2]
        sig = np.asarray(sigmas, dtype=float)
        if sig.ndim == 2:  # one (3, n) for every sample
            sig = sig[None]
        if sig.shape not in ((N, 3, n), (1, 3, n)):
            raise ValueError(f"sigmas must have shape {(3, n) if single else (N, 3, n)} "
                             f"(σ, σ', σ''), got {np.shape(sigmas)}")
        if not np.all(np.isfinite(sig)):
            raise ValueError("sigmas contains NaN or inf")
        return sig

    def reference(self, qs, taus, out=None, sigmas=None):
        """Motor reference θ, θ', θ'', τ_m from q…q'''', τ, τ', τ'' and σ, σ', σ''.

        Args:
            qs: (5, n) or (N, 5, n).
            taus: (3, n) or (N, 3, n).
            out: optional (4, n) or (N, 4, n) float64 array.
            sigmas: (3, n) or (N, 3, n) rows σ, σ', σ''; None: the constant ``sigma``.

        Returns:
            (4, n) or (N, 4, n): rows θ, θ', θ'', τ_m.

        Raises:
            SpringInversionError: the spring law could not be inverted.
        """
        single = np.ndim(qs) == 2
        qs, taus, result, out3 = self._prepare(qs, taus, out)
        N, _, n = qs.shape
        sig = self._sigmas(sigmas, N, n, single)
        params = self._params(n)
        B, Dm = params[0], params[1]
        if len(params) == 5:  # built-in law: closed-form start, vectorised Newton
            status = _exp_vsa_kernel(qs, taus, sig, params[3], params[4], B, Dm, self.tol,
                                     self.max_iterations, out3, constant_sigma=sigmas is None)
            if status:
                i, j = divmod(status - 1, n)
                raise SpringInversionError(
                    f"spring inversion failed at sample {i}, joint {j}: τ={taus[i, 0, j]!r}, "
                    f"σ={sig[i if sig.shape[0] > 1 else 0, 0, j]!r}")
            return result
        # generic spring law: vectorised NumPy
        s0, s1, s2 = sig[:, 0], sig[:, 1], sig[:, 2]
        d = self.spring.invert(taus[:, 0], np.broadcast_to(s0, taus[:, 0].shape), self.tol,
                               self.max_iterations)
        _, f_d, f_s, f_dd, f_ds, f_ss = self.spring.partials(d, s0)
        d1 = (taus[:, 1] - f_s * s1) / f_d
        d2 = (taus[:, 2] - f_dd * d1 ** 2 - 2.0 * f_ds * d1 * s1 - f_ss * s1 ** 2 - f_s * s2) / f_d
        out3[:, 0] = qs[:, 0] + d
        out3[:, 1] = qs[:, 1] + d1
        out3[:, 2] = qs[:, 2] + d2
        out3[:, 3] = B * out3[:, 2] + Dm * out3[:, 1] + taus[:, 0]
        return result

    def stiffness(self, delta, sigma=None):
        """Spring stiffness φ_δ at deflection ``θ − q`` and σ (default: the constant sigma)."""
        sig = self.sigma if sigma is None else sigma
        return self.spring.stiffness(delta, sig)


# =============================================================================================
# configuration
# =============================================================================================
def flatten_params(params, prefix=""):
    """Nested mappings -> dotted keys: ``{actuator: {type: sea}}`` -> ``{"actuator.type": "sea"}``.

    A ROS parameter file (``node: {ros__parameters: {...}}``) is unwrapped first.
    """
    if not isinstance(params, dict):
        raise ValueError(f"configuration must be a mapping, got {type(params).__name__}")
    if not prefix:
        wrapped = [v for v in params.values() if isinstance(v, dict) and "ros__parameters" in v]
        if len(wrapped) == 1 and len(params) == 1:
            params = wrapped[0]["ros__parameters"]
        elif "ros__parameters" in params:
            params = params["ros__parameters"]
    flat = {}
    for key, value in params.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(flatten_params(value, name + "."))
        else:
            flat[name] = value
    return flat


def actuator_from_params(params, n):
    """Actuator object from configuration keys (:data:`ACTUATOR_PARAMETERS`).

    Args:
        params: mapping with dotted (``"actuator.type"``) or nested (``{actuator: {type: ...}}``)
            keys; keys not starting with ``actuator`` are ignored; missing keys take their
            defaults.
        n: number of joints.

    Returns:
        None for ``rigid``, else a :class:`SEA` or :class:`VSA` for n joints.

    Raises:
        ValueError: unknown ``actuator.*`` key, unknown type/model, or an invalid value (named).
    """
    flat = {k: v for k, v in flatten_params(params).items()
            if k == "actuator" or k.startswith("actuator.")}
    unknown = sorted(set(flat) - set(ACTUATOR_PARAMETERS))
    if unknown:
        raise ValueError(f"unknown actuator parameter(s) {unknown}; known: "
                         f"{sorted(ACTUATOR_PARAMETERS)}")
    p = {k: flat.get(k, default) for k, (default, _) in ACTUATOR_PARAMETERS.items()}
    kind = p["actuator.type"]
    if kind == "rigid":
        return None
    if kind == "sea":
        return SEA(_positive(p["actuator.stiffness"], "actuator.stiffness", n),
                   _nonnegative(p["actuator.motor_inertia"], "actuator.motor_inertia", n),
                   _nonnegative(p["actuator.motor_damping"], "actuator.motor_damping", n), n=n)
    if kind == "vsa":
        model = p["actuator.vsa.model"]
        if model != "exponential_antagonistic":
            raise ValueError(f"actuator.vsa.model must be 'exponential_antagonistic', got "
                             f"{model!r}")
        spring = ExponentialAntagonisticSpring(_positive(p["actuator.vsa.k"], "actuator.vsa.k", n),
                                               _positive(p["actuator.vsa.a"], "actuator.vsa.a", n))
        tol = p["actuator.vsa.tolerance"]
        iters = p["actuator.vsa.max_iterations"]
        if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not tol > 0:
            raise ValueError(f"actuator.vsa.tolerance must be a number > 0, got {tol!r}")
        if isinstance(iters, bool) or not isinstance(iters, (int, float)) or iters < 1 \
                or int(iters) != iters:
            raise ValueError(f"actuator.vsa.max_iterations must be an integer >= 1, got "
                             f"{iters!r}")
        return VSA(spring,
                   _nonnegative(p["actuator.motor_inertia"], "actuator.motor_inertia", n),
                   _nonnegative(p["actuator.motor_damping"], "actuator.motor_damping", n),
                   sigma=_vector(p["actuator.vsa.sigma"], "actuator.vsa.sigma", n),
                   tol=float(tol), max_iterations=int(iters), n=n)
    raise ValueError(f"actuator.type must be 'rigid', 'sea' or 'vsa', got {kind!r}")
