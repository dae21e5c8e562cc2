"""Flatness-based feedback linearisation of robots with elastic joints (SEA, VSA).

The model is Spong's reduced model of an elastic joint (M. W. Spong, "Modeling and control of
elastic joint robots", J. Dyn. Syst. Meas. Control 109(4), 1987), with the link position ``q``
as the flat output:

* link:   ``M(q) q̈ + c(q, q̇) + g(q) = τ_e``
* spring: ``τ_e = K (θ − q)`` (SEA; K diagonal or a symmetric positive definite (n, n) matrix),
  or ``τ_e = φ(θ − q, σ)`` (VSA, σ the stiffness input, driven by its own loop); the spring is
  undamped
* motor:  ``B θ̈ + D θ̇ + τ_e = u`` (B > 0 the reflected rotor inertia, D ≥ 0 motor viscous
  friction, u the motor torque — the control input).

Each cycle, from the *measured* state ``(q, q̇, θ, θ̇)`` (and, for a VSA, ``σ, σ̇, σ̈``):

1. ``τ_e`` from the spring law; ``q̈ = FD(q, q̇, τ_e)`` (articulated-body algorithm);
2. ``q⃛`` from the first time derivative of the link equation,
   ``τ_e′ = M(q) q⃛ + τ′(q, q̇, q̈, 0)`` where ``τ′(…, 0)`` is the jet recursion (doc/math.md,
   "Recursive time derivatives") evaluated with ``q⃛ = 0``: ``q⃛ = M⁻¹(τ_e′ − τ′(q, q̇, q̈, 0))``,
   with ``τ_e′ = K (θ̇ − q̇)`` (SEA) or ``φ_δ δ̇ + φ_σ σ̇`` (VSA, δ = θ − q). The solve
   ``M⁻¹ r = FD(q, q̇, τ_e + r) − q̈`` reuses the articulated-body algorithm (FD is affine in τ);
3. the outer loop ``v = q⁗_d + Σ_{i=0..3} k_i (q_d^(i) − q^(i))``;
4. ``τ″ = τ″(q, q̇, q̈, q⃛, v)`` (jet recursion, K = 2) and the motor torque

   * SEA: ``u = B (q̈ + K⁻¹ τ″) + D θ̇ + K (θ − q)``,
   * VSA: ``u = B (q̈ + δ̈) + D θ̇ + φ`` with
     ``δ̈ = (τ″ − φ_δδ δ̇² − 2 φ_δσ δ̇ σ̇ − φ_σσ σ̇² − φ_σ σ̈) / φ_δ``.

Why this linearises: ``θ = q + K⁻¹τ_e`` and the link equation give ``θ̈ = q̈ + K⁻¹ τ_e″`` with
``τ_e″ = M q⁗ + (terms in q … q⃛)``; substituting u into the motor equation leaves
``M(q)(q⁗ − v) = 0``, so ``q⁗ = v`` and every joint's error ``e = q_d − q`` obeys
``e⁗ + k₃ e⃛ + k₂ ë + k₁ ė + k₀ e = 0``: its poles are the roots of
``s⁴ + k₃ s³ + k₂ s² + k₁ s + k₀``. For the VSA the same holds with ``φ_δ > 0`` in place of K
(the chain rule on ``φ(δ(t), σ(t)) = τ_e(t)``, as in :mod:`mbs_dynamics.control.actuators`).
A damped spring (``τ_e`` depending on ``θ̇``) lowers the relative degree to three and needs a
different law; it is not covered.

Gains: ``poles=`` four values p per joint ((4,) shared or (n, 4)), the closed loop's
characteristic polynomial ``Π_j (s + p_j)`` — so p = 20 puts a root at s = −20; complex p in
conjugate pairs — or ``bandwidth=`` ω [rad/s] with ``damping=`` ζ (default 1):
``(s² + 2ζωs + ω²)²``. Every p must have a positive real part.

The cycle (:meth:`FlatnessController.update` / :meth:`FlatnessController.command`) with a
diagonal K is compiled end to end (``control/_flatness.pyx``) and allocates nothing: one
articulated-body pass for q̈, one jet recursion of order 1, the solve ``M⁻¹ r`` by the
articulated-body algorithm's bias and acceleration passes on the articulated inertias of the
first pass (they depend on q only), one jet recursion of order 3 (the third derivative for the
zero-order-hold lead, see :meth:`FlatnessController.command`), all called at the C level on the
robot's own Data; :meth:`~FlatnessController.update` samples the trajectory inside it. A full K
matrix and the VSA run the same law in NumPy.

Where it works: the law takes q̈ and q⃛ from the spring through the model, so a relative model
error ε is amplified by the link's modes on its springs, ω = sqrt(eig(M⁻¹K))
(:func:`spring_frequencies`): it needs roughly ``k₂ > ε ω_max²`` — the soft joints (poles above
the modes) flatness control is for; with stiff springs a motor PD with feedforward is the
robust choice (doc/guide/sea_control.md measures both). In a 1 kHz loop the residual of the
hold grows with ω_max T (exact model, arm7 with its top mode at 426 rad/s: 7e-5 rad RMS).
"""

from __future__ import annotations

import numpy as np

from . import _flatness
from .actuators import SEA, VSA, actuator_from_params
from .feedforward import require_fixed_base

# SEACycle status codes (_flatness.pyx): not plain float64 arrays, singular FD, out to copy
_SLOW, _SINGULAR, _COPY_OUT = 3, 4, 5

__all__ = ["FlatnessController", "FlatnessConfigError", "gains_from_poles", "spring_frequencies"]


class FlatnessConfigError(ValueError, TypeError):
    """A bad :class:`FlatnessController` configuration (gains, poles, actuator, sizes).

    A ``ValueError`` and, for an unknown keyword, as Python's own, a ``TypeError``."""


def gains_from_poles(poles, n):
    """Outer-loop gains k₀ … k₃ per joint from the closed-loop poles.

    Args:
        poles: (4,) shared or (n, 4) per joint: the p_j of ``Π_j (s + p_j)`` [1/s]; real or
            complex (complex ones in conjugate pairs per joint); every Re p_j > 0.
        n: number of joints.

    Returns:
        (4, n) array, rows k₀, k₁, k₂, k₃: ``s⁴ + k₃ s³ + k₂ s² + k₁ s + k₀ = Π_j (s + p_j)``.

    Raises:
        FlatnessConfigError: wrong shape, non-finite, Re p <= 0 (a root of the closed loop in
            the closed right half-plane), or complex poles without their conjugates.
    """
    try:
        p = np.array(poles, dtype=complex)
    except (TypeError, ValueError, OverflowError):
        raise FlatnessConfigError(f"poles must be numbers, got {poles!r:.80}") from None
    if p.shape == (4,):
        p = np.broadcast_to(p, (n, 4))
    if p.shape != (n, 4):
        raise FlatnessConfigError(f"poles must have shape (4,) (shared) or ({n}, 4) (four per "
                                  f"joint), got {p.shape}")
    if not np.all(np.isfinite(p)):
        raise FlatnessConfigError(f"poles must be finite, got {poles!r:.80}")
    bad = np.argwhere(~(p.real > 0))
    if bad.size:
        j, i = bad[0]
        raise FlatnessConfigError(
            f"pole p = {p[j, i]} of joint {j} gives the closed-loop root s = {-p[j, i]}, not "
            "in the open left half-plane: poles are the p of Π (s + p), each with Re p > 0")
    k = np.empty((4, n))
    for j in range(n):
        c = np.poly(-p[j])  # s⁴ + c1 s³ + c2 s² + c3 s + c4
        if np.max(np.abs(c.imag)) > 1e-9 * np.max(np.abs(c)):
            raise FlatnessConfigError(f"the complex poles of joint {j} ({p[j]}) must come in "
                                      "conjugate pairs (the gains would be complex)")
        k[:, j] = c.real[:0:-1]   # k0 = c4, k1 = c3, k2 = c2, k3 = c1
    return k


def _bandwidth_poles(bandwidth, damping, n):
    """(n, 4) poles of (s² + 2ζωs + ω²)²."""
    w = _per_joint(bandwidth, "bandwidth", n)
    z = _per_joint(1.0 if damping is None else damping, "damping", n)
    if not np.all(w > 0):
        raise FlatnessConfigError(f"bandwidth must be > 0 rad/s, got {bandwidth!r}")
    if not np.all(z > 0):
        raise FlatnessConfigError(f"damping must be > 0, got {damping!r}")
    r = np.sqrt((z * z - 1).astype(complex))
    p1, p2 = w * (z + r), w * (z - r)
    return np.stack([p1, p2, p1, p2], axis=1)


def _per_joint(value, what, n):
    try:
        a = np.array(value, dtype=float)
    except (TypeError, ValueError, OverflowError):
        raise FlatnessConfigError(f"{what} must be a number or {n} numbers, got "
                                  f"{value!r:.80}") from None
    if a.ndim == 0:
        a = np.full(n, float(a))
    if a.shape != (n,):
        raise FlatnessConfigError(f"{what} must be one number or {n} numbers, got shape "
                                  f"{a.shape}")
    if not np.all(np.isfinite(a)):
        raise FlatnessConfigError(f"{what} must be finite, got {value!r:.80}")
    return a


def _seconds(value, what):
    """A finite duration >= 0 [s] as a float, or one FlatnessConfigError naming ``what``."""
    try:
        t = float(value)
    except (TypeError, ValueError):
        raise FlatnessConfigError(f"{what} must be a number of seconds, got "
                                  f"{value!r:.40}") from None
    if not (t >= 0 and np.isfinite(t)):
        raise FlatnessConfigError(f"{what} must be >= 0 s, got {value!r}")
    return t


def _stiffness(value, n):
    """K as (n,) (diagonal) or (n, n) (symmetric positive definite), validated."""
    try:
        K = np.array(value, dtype=float)
    except (TypeError, ValueError, OverflowError):
        raise FlatnessConfigError(f"stiffness must be numbers, got {value!r:.80}") from None
    if K.ndim == 0:
        K = np.full(n, float(K))
    if K.shape not in ((n,), (n, n)):
        raise FlatnessConfigError(f"stiffness must be a number, {n} numbers or an ({n}, {n}) "
                                  f"matrix, got shape {K.shape}")
    if not np.all(np.isfinite(K)):
        raise FlatnessConfigError("stiffness must be finite")
    if K.ndim == 1:
        if not np.all(K > 0):
            raise FlatnessConfigError(f"stiffness must be > 0 for every joint (a zero or "
                                      f"negative spring cannot be inverted), got {K.tolist()}")
        return K
    if not np.allclose(K, K.T, rtol=1e-12, atol=0.0):
        raise FlatnessConfigError("a stiffness matrix must be symmetric")
    try:
        np.linalg.cholesky(K)
    except np.linalg.LinAlgError:
        raise FlatnessConfigError("the stiffness matrix is singular or not positive definite "
                                  f"(eigenvalues {np.linalg.eigvalsh(K)})") from None
    if np.linalg.cond(K) > 1e12:
        raise FlatnessConfigError(f"the stiffness matrix is numerically singular (condition "
                                  f"number {np.linalg.cond(K):.3g})")
    return K


class FlatnessController:
    """Exact feedback linearisation of an SEA/VSA robot (see the module docstring).

    Args:
        robot: a fixed-base :class:`mbs_dynamics.Robot` (the link model).
        actuator: a :class:`~mbs_dynamics.control.actuators.SEA` or
            :class:`~mbs_dynamics.control.actuators.VSA`, or a mapping of ``actuator.*``
            configuration keys (:data:`~mbs_dynamics.control.actuators.ACTUATOR_PARAMETERS`);
            or None with ``stiffness`` and ``motor_inertia`` given.
        stiffness: SEA spring stiffness K [Nm/rad]: a number, (n,) or a symmetric positive
            definite (n, n) matrix (not with ``actuator``).
        motor_inertia: B [kg m²], number or (n,), > 0 (not with ``actuator``).
        motor_damping: D [Nm s/rad], number or (n,), >= 0 (default 0; not with ``actuator``).
        poles: (4,) or (n, 4): the closed loop's ``Π_j (s + p_j)`` per joint [1/s], Re p > 0.
        bandwidth: ω [rad/s] (number or (n,)), poles of ``(s² + 2ζωs + ω²)²``; not with
            ``poles``.
        damping: ζ > 0 for ``bandwidth`` (default 1: a quadruple pole at −ω).
        sample_time: the period T [s] of the zero-order hold the command goes through (SEA
            default 1e-3: a 1 kHz loop); the command leads by T/2 to cancel the hold's delay
            (see :meth:`command`). 0: a continuous-time law (e.g. evaluated at every integrator
            stage). A VSA takes the same default when its spring law has third partials
            (:meth:`~mbs_dynamics.control.actuators.Spring.partials3`), else 0 (and a lead is
            refused).
        delay: transport delay d [s] from the measured state to the start of the hold that
            applies its command (default 0): the command leads by ``T/2 + d``,
            ``u + (T/2 + d) u̇`` — e.g. one period when the command computed from the state
            read in cycle k reaches the drive in cycle k + 1, as through a topic to a
            ros2_control effort controller (doc/guide/cosim.md measures both).
        trajectory: optional :class:`~mbs_dynamics.control.trajectory.Trajectory` over
            ``robot.joint_names`` for :meth:`update`.

    Raises:
        FlatnessConfigError: (a ``ValueError``) a floating base, no elastic actuator (rigid, or
            none given), K not positive / singular, B <= 0, sizes that do not match the robot,
            poles with Re p <= 0, both or neither of ``poles`` and ``bandwidth``, or an unknown
            keyword (then also a ``TypeError``).
    """

    def __init__(self, robot, actuator=None, *, stiffness=None, motor_inertia=None,
                 motor_damping=None, poles=None, bandwidth=None, damping=None, sample_time=None,
                 delay=0.0, trajectory=None, **unknown):
        if unknown:
            raise FlatnessConfigError(
                f"unknown keyword(s) {sorted(unknown)}; gains are given by poles= or "
                "bandwidth= (with damping=), the actuator by actuator= or stiffness=, "
                "motor_inertia=, motor_damping=")
        try:
            require_fixed_base(robot, "FlatnessController")
        except ValueError as e:
            raise FlatnessConfigError(str(e)) from None
        n = robot.n
        self._robot = robot
        self._n = n
        self._vsa = None
        if actuator is not None and any(x is not None for x in
                                        (stiffness, motor_inertia, motor_damping)):
            raise FlatnessConfigError("give either actuator= or stiffness=/motor_inertia=/"
                                      "motor_damping=, not both")
        if actuator is None:
            if stiffness is None or motor_inertia is None:
                raise FlatnessConfigError(
                    "a flatness controller needs elastic joints: give actuator= (an SEA or VSA, "
                    "or actuator.* keys) or stiffness= and motor_inertia=")
            K = _stiffness(stiffness, n)
            B = _per_joint(motor_inertia, "motor_inertia", n)
            D = _per_joint(0.0 if motor_damping is None else motor_damping, "motor_damping", n)
        else:
            if isinstance(actuator, dict) or hasattr(actuator, "items"):
                try:
                    actuator = actuator_from_params(dict(actuator), n)
                except ValueError as e:
                    raise FlatnessConfigError(str(e)) from None
            if actuator is None:
                raise FlatnessConfigError("actuator.type is 'rigid': a flatness controller "
                                          "needs elastic joints (actuator.type 'sea' or 'vsa')")
            if isinstance(actuator, SEA):
                K = _stiffness(actuator._param(actuator.stiffness, n) if
                               actuator.stiffness.shape[0] in (1, n) else actuator.stiffness, n)
            elif isinstance(actuator, VSA):
                self._vsa = actuator
                K = None
            else:
                raise FlatnessConfigError(f"actuator must be an SEA or a VSA, got "
                                          f"{type(actuator).__name__}")
            try:
                B = _per_joint(actuator._param(actuator.motor_inertia, n), "motor_inertia", n)
                D = _per_joint(actuator._param(actuator.motor_damping, n), "motor_damping", n)
            except ValueError as e:
                raise FlatnessConfigError(f"actuator size does not match the robot's {n} "
                                          f"joints: {e}") from None
        if not np.all(B > 0):
            raise FlatnessConfigError(f"motor_inertia must be > 0 for every joint (B = 0 "
                                      f"removes the motor dynamics the law inverts), got "
                                      f"{B.tolist()}")
        if not np.all(D >= 0):
            raise FlatnessConfigError(f"motor_damping must be >= 0, got {D.tolist()}")
        if (poles is None) == (bandwidth is None):
            raise FlatnessConfigError("give exactly one of poles= (4 per joint or 4 shared) "
                                      "and bandwidth= (with damping=)")
        if damping is not None and bandwidth is None:
            raise FlatnessConfigError("damping= goes with bandwidth=")
        p = (np.array(poles, dtype=complex) if poles is not None
             else _bandwidth_poles(bandwidth, damping, n))
        self._gains = gains_from_poles(p, n)
        self._poles = np.array(np.broadcast_to(p, (n, 4)))
        self._K = K
        self._Kinv = None if K is None or K.ndim == 1 else np.linalg.inv(K)
        self._B, self._D = B, D
        lead_ok = self._vsa is None or self._has_partials3()
        if sample_time is None:
            sample_time = 1e-3 if lead_ok else 0.0
        T = _seconds(sample_time, "sample_time")
        delay = _seconds(delay, "delay")
        if (T > 0 or delay > 0) and not lead_ok:
            raise FlatnessConfigError(
                f"the zero-order-hold lead (sample_time > 0 or delay > 0) needs τ_e‴, hence "
                f"the third partials of the VSA's spring law, and "
                f"{type(self._vsa.spring).__name__} has no partials3(); give sample_time=0 and "
                "delay=0 or implement Spring.partials3")
        self._T = T
        self._delay = delay
        self._lead = 0.5 * T + delay
        self._trajectory = None
        if trajectory is not None:
            self.set_trajectory(trajectory)
        # the cycle's workspace
        self._x = np.zeros((4, n))         # q, q̇, θ, θ̇ (measured)
        self._qs = np.zeros((6, n))        # q, q̇, q̈, q⃛, v, v̇: the jet input
        self._taus = np.zeros((4, n))      # τ, τ′, τ″, τ‴
        self._qs5, self._taus3 = self._qs[:5], self._taus[:3]
        self._qs4, self._taus2 = self._qs[:4], self._taus[:2]
        self._des = np.zeros((6, n))       # q_d … q_d⁽⁵⁾
        self._des5 = self._des[:5]
        self._t_prev = -np.inf
        self._te = np.zeros(n)             # τ_e
        self._r = np.zeros(n)
        self._w = np.zeros(n)
        self._u = np.zeros(n)
        self._cycle = None
        # the compiled cycle runs on a Robot's kernel workspace (a MimicRobot has none: the
        # NumPy path below, through its own torque_derivatives)
        if self._vsa is None and self._Kinv is None and hasattr(robot, "data"):
            self._cycle = _flatness.SEACycle(
                robot.data, self._x, self._K, self._B, self._D, self._gains, self._T, self._qs,
                self._taus, self._te, self._r, self._u, self._des, delay)
            if self._trajectory is not None:
                self._bind_spline()

    # ---------------------------------------------------------------- description
    @property
    def robot(self):
        return self._robot

    @property
    def gains(self):
        """(4, n) rows k₀ … k₃ of ``v = q⁗_d + Σ k_i (q_d^(i) − q^(i))`` (a copy)."""
        return self._gains.copy()

    @property
    def poles(self):
        """(n, 4) the p of ``Π (s + p)`` per joint (closed-loop roots at −p; a copy)."""
        return self._poles.copy()

    @property
    def stiffness(self):
        """K (n,) or (n, n) of an SEA; None for a VSA."""
        return None if self._K is None else self._K.copy()

    @property
    def estimates(self):
        """(6, n) view of the last cycle's q, q̇, q̈ (model), q⃛ (model), v (commanded q⁗) and
        v̇ (only with ``sample_time`` > 0)."""
        return self._qs

    @property
    def torque_jet(self):
        """(4, n) view of the last cycle's τ, τ′, τ″ (at the commanded q⁗ = v) and τ‴."""
        return self._taus

    def set_trajectory(self, trajectory):
        """The C⁴ trajectory :meth:`update` tracks (columns reordered to ``robot.joint_names``).

        Raises:
            FlatnessConfigError: its joints are not the robot's.
        """
        names = tuple(self._robot.joint_names)
        if tuple(trajectory.joint_names) != names:
            if sorted(trajectory.joint_names) != sorted(names):
                raise FlatnessConfigError(f"the trajectory's joints {list(trajectory.joint_names)}"
                                          f" are not the robot's {list(names)}")
            trajectory = trajectory.reorder(names)
        self._trajectory = trajectory
        if getattr(self, "_cycle", None) is not None:
            self._bind_spline()

    def _bind_spline(self):
        tr = self._trajectory
        self._cycle.set_spline(tr._times, tr._coef, tr._hold0, tr._hold1)

    # ---------------------------------------------------------------- the cycle
    def update(self, t, q, qd, theta, theta_dot, sigmas=None, out=None):
        """:meth:`command` with the desired jet sampled from the trajectory at time ``t`` [s].

        With ``sample_time`` T > 0, q_d⁽⁵⁾ (for the hold's lead) is the backward difference of
        q_d⁗ over the previous call when that was T earlier, else 0."""
        if self._trajectory is None:
            raise RuntimeError("no trajectory: call set_trajectory() or use command()")
        if self._cycle is not None:   # the compiled cycle samples the trajectory too
            status = self._cycle.update(t, q, qd, theta, theta_dot, out)
            if status != _SLOW:
                return self._result(status, out)
            try:
                t = float(t)
            except (TypeError, ValueError, OverflowError):
                raise ValueError(f"t must be a finite number of seconds, got {t!r:.60}") from None
            q, qd, theta, theta_dot = self._state(q, qd, theta, theta_dot)
            return self._result(self._cycle.update(t, q, qd, theta, theta_dot, out), out)
        des = self._des
        T = self._T
        if T > 0:
            des[5] = des[4]
            t_prev = self._t_prev
            self._trajectory.sample(t, out=self._des5)
            self._t_prev = t
            if abs(t - t_prev - T) <= 1e-9 * max(1.0, abs(t)):
                np.subtract(des[4], des[5], out=des[5])
                des[5] *= 1.0 / T
            else:
                des[5] = 0.0
            return self.command(q, qd, theta, theta_dot, des, sigmas, out)
        self._trajectory.sample(t, out=self._des5)
        return self.command(q, qd, theta, theta_dot, self._des5, sigmas, out)

    def _state(self, q, qd, theta, theta_dot):
        """The four measured vectors as float64 (n,) arrays, or a ValueError naming the bad one."""
        n = self._n
        res = []
        for val, name in ((q, "q"), (qd, "qd"), (theta, "theta"), (theta_dot, "theta_dot")):
            if np.shape(val) != (n,):
                raise ValueError(f"{name} must have shape ({n},), got {np.shape(val)}")
            try:
                res.append(np.ascontiguousarray(val, dtype=float))
            except (TypeError, ValueError):
                raise ValueError(f"{name} must be numbers") from None
        return res

    def _result(self, status, out):
        """The compiled cycle's status code as the return value, or the error it stands for."""
        if status == 0:
            return self._u if out is None else out
        if status == _COPY_OUT:
            out[...] = self._u
            return out
        if status == _SINGULAR:
            raise ValueError("forward dynamics is singular at the measured q (a movable joint "
                             "moves no mass)")
        raise ValueError("q, qd, theta, theta_dot, t and desired must be finite" if status == 1
                         else "the motor torque is not finite (state far outside the model's "
                         "range?)")

    def command(self, q, qd, theta, theta_dot, desired, sigmas=None, out=None):
        """Motor torque u [Nm] that makes the link error obey the chosen fourth-order dynamics.

        With ``sample_time`` T > 0 the command is meant to be held for T (zero-order hold) and
        is ``u + (T/2) u̇``: the mean of the continuous law over the hold to first order (without
        it the hold delays u by T/2, a link error of order ``(K/M) u̇ T / (2 B k₀)``); with a
        transport ``delay`` d the hold starts d later and the command is ``u + (T/2 + d) u̇``
        (the same first-order prediction over T/2 + d). ``u̇`` is
        exact: ``u̇ = B (q⃛ + K⁻¹ τ‴) + D θ̈ + K (θ̇ − q̇)`` with τ‴ from the jet recursion at
        ``q⁽⁵⁾ = v̇ = q_d⁽⁵⁾ + Σ_{i=0..3} k_i (q_d^(i+1) − q^(i+1))`` (q⁽⁴⁾ = v). For a VSA,
        ``u̇ = B (q⃛ + δ⃛) + D θ̈ + φ′`` with δ⃛ from ``τ‴ = d³φ(δ, σ)/dt³`` (the chain rule with
        the spring's third partials, doc/guide/sea_control.md).

        Args:
            q, qd: measured link position [rad] and velocity [rad/s], (n,).
            theta, theta_dot: measured motor position and velocity (joint side), (n,).
            desired: (5, n) rows q_d, q̇_d, q̈_d, q⃛_d, q⁗_d (e.g. ``Trajectory.sample``), or
                (6, n) with q_d⁽⁵⁾ as a sixth row (taken as 0 when absent).
            sigmas: VSA only: (3, n) rows σ, σ̇, σ̈ of the stiffness input (its own loop), or
                (4, n) with σ⃛ (the lead's δ⃛; taken as 0 when absent); None = the actuator's
                constant σ.
            out: optional (n,) float64 array to fill (the returned array otherwise is the
                controller's own buffer, overwritten by the next cycle).

        Returns:
            (n,) motor torque u.

        Raises:
            ValueError: wrong shapes or non-finite values (named).
        """
        n = self._n
        if self._cycle is not None:   # the compiled cycle (diagonal K)
            status = self._cycle.command(q, qd, theta, theta_dot, desired, out)
            if status != _SLOW:
                return self._result(status, out)
            q, qd, theta, theta_dot = self._state(q, qd, theta, theta_dot)
            shape = np.shape(desired)
            if shape not in ((5, n), (6, n)):
                raise ValueError(f"desired must have shape (5, {n}) (q_d to q_d'''') or "
                                 f"(6, {n}), got {shape}")
            desired = np.ascontiguousarray(desired, dtype=float)
            return self._result(self._cycle.command(q, qd, theta, theta_dot, desired, out), out)
        x, qs, taus, te, r, w, u = (self._x, self._qs, self._taus, self._te, self._r, self._w,
                                    self._u)
        for row, (val, name) in enumerate(((q, "q"), (qd, "qd"), (theta, "theta"),
                                           (theta_dot, "theta_dot"))):
            if np.shape(val) != (n,):
                raise ValueError(f"{name} must have shape ({n},), got {np.shape(val)}")
            x[row] = val
        shape = np.shape(desired)
        if shape not in ((5, n), (6, n)):
            raise ValueError(f"desired must have shape (5, {n}) (q_d to q_d'''') or (6, {n}), "
                             f"got {shape}")
        if not (np.isfinite(x).all() and np.isfinite(desired).all()):
            raise ValueError("q, qd, theta, theta_dot and desired must be finite")
        robot = self._robot
        sea = self._vsa is None
        diag = sea and self._Kinv is None
        qs[0] = x[0]
        qs[1] = x[1]
        np.subtract(x[2], x[0], out=w)                     # δ = θ − q
        np.subtract(x[3], x[1], out=r)                     # δ̇
        if sea:
            if diag:
                np.multiply(self._K, w, out=te)            # τ_e = K δ
                np.multiply(self._K, r, out=r)             # τ_e′ = K δ̇
            else:
                np.dot(self._K, w, out=te)
                np.dot(self._K, r, out=u)
                r[:] = u
        else:
            vsa_terms = self._vsa_terms(w, r, sigmas)
            te[:] = vsa_terms[0]
            r[:] = vsa_terms[1]
        robot.forward_dynamics(x[0], x[1], te, out=qs[2])   # q̈
        qs[3] = 0.0
        robot.torque_derivatives(qs[:4], out=taus[:2])     # τ, τ′ at q⃛ = 0
        r -= taus[1]                                        # M q⃛ = τ_e′ − τ′(q⃛ = 0)
        r += te
        robot.forward_dynamics(x[0], x[1], r, out=qs[3])   # q̈ + M⁻¹(τ_e′ − τ′₀)
        qs[3] -= qs[2]
        # v = q⁗_d + Σ k_i (q_d^(i) − q^(i))
        k = self._gains
        v = qs[4]
        v[:] = desired[4]
        for i in range(4):
            np.subtract(desired[i], qs[i], out=w)
            w *= k[i]
            v += w
        lead = self._lead > 0
        if lead:   # v̇ = q_d⁽⁵⁾ + Σ k_i (q_d^(i+1) − q^(i+1)), with q⁽⁴⁾ = v
            vd = qs[5]
            if shape[0] == 6:
                vd[:] = desired[5]
            else:
                vd[:] = 0.0
            for i in range(4):
                np.subtract(desired[i + 1], qs[i + 1], out=w)
                w *= k[i]
                vd += w
            robot.torque_derivatives(qs, out=taus)          # τ … τ‴ at q⁗ = v, q⁽⁵⁾ = v̇
        else:
            robot.torque_derivatives(self._qs5, out=self._taus3)   # τ″ at q⁗ = v
        if sea:
            if diag:
                np.divide(taus[2], self._K, out=u)
            else:
                np.dot(self._Kinv, taus[2], out=u)
        else:
            u[:] = vsa_terms[2](taus[2])
        u += qs[2]                                          # θ̈ = q̈ + K⁻¹ τ″
        if lead:
            # (T/2) u̇ = (T/2)(B (q⃛ + δ⃛) + D θ̈ + τ_e′), accumulated in r; SEA: δ⃛ = K⁻¹ τ‴,
            # τ_e′ = K δ̇; VSA: δ⃛ from τ‴ = d³φ/dt³ (chain rule), τ_e′ = φ_δ δ̇ + φ_σ σ̇
            if not sea:
                r[:] = vsa_terms[3](taus[3], u - qs[2])
            elif diag:
                np.divide(taus[3], self._K, out=r)
            else:
                np.dot(self._Kinv, taus[3], out=r)
            r += qs[3]
            r *= self._B
            np.multiply(self._D, u, out=w)
            r += w
            if not sea:
                r += vsa_terms[1]
            else:
                np.subtract(x[3], x[1], out=w)
                if diag:
                    w *= self._K
                    r += w
                else:
                    r += self._K @ w
            r *= self._lead
        u *= self._B
        np.multiply(self._D, x[3], out=w)
        u += w
        u += te
        if lead:
            u += r
        if not np.isfinite(u).all():
            raise ValueError("the motor torque is not finite (state far outside the model's "
                             "range?)")
        if out is not None:
            out[...] = u
            return out
        return u

    def _has_partials3(self):
        vsa, n = self._vsa, self._n
        try:
            vsa.spring.partials3(np.zeros(n), vsa._param(vsa.sigma, n))
        except NotImplementedError:
            return False
        return True

    def _vsa_terms(self, delta, delta_dot, sigmas):
        """VSA: (φ, φ′ = φ_δ δ̇ + φ_σ σ̇, τ″ ↦ δ̈, (τ‴, δ̈) ↦ δ⃛) at the measured deflection."""
        vsa, n = self._vsa, self._n
        if sigmas is None:
            s0 = vsa._param(vsa.sigma, n)
            s1 = s2 = s3 = np.zeros(n)
        else:
            s = np.asarray(sigmas, dtype=float)
            if s.shape not in ((3, n), (4, n)) or not np.isfinite(s).all():
                raise ValueError(f"sigmas must be finite with shape (3, {n}) (σ, σ', σ'') or "
                                 f"(4, {n}) (and σ‴), got {s.shape}")
            s0, s1, s2 = s[:3]
            s3 = s[3] if s.shape[0] == 4 else np.zeros(n)
        delta = delta.copy()    # the caller reuses its buffers
        phi, f_d, f_s, f_dd, f_ds, f_ss = vsa.spring.partials(delta, s0)
        if not np.all(f_d > 0):
            raise ValueError("the VSA spring has a non-positive stiffness ∂φ/∂δ at the measured "
                             "deflection: the linearisation does not exist there")
        d1 = delta_dot.copy()
        dphi = f_d * d1 + f_s * s1

        def ddelta(tau_dd):
            return (tau_dd - f_dd * d1 * d1 - 2.0 * f_ds * d1 * s1 - f_ss * s1 * s1
                    - f_s * s2) / f_d

        def dddelta(tau_ddd, d2):
            # d³φ/dt³ = φ_δ δ⃛ + φ_σ σ⃛ + φ_δδδ δ̇³ + 3 φ_δδσ δ̇²σ̇ + 3 φ_δσσ δ̇σ̇² + φ_σσσ σ̇³
            #           + 3 φ_δδ δ̇δ̈ + 3 φ_δσ (δ̈σ̇ + δ̇σ̈) + 3 φ_σσ σ̇σ̈
            f_ddd, f_dds, f_dss, f_sss = vsa.spring.partials3(delta, s0)
            rest = (f_s * s3 + f_ddd * d1 ** 3 + 3.0 * f_dds * d1 * d1 * s1
                    + 3.0 * f_dss * d1 * s1 * s1 + f_sss * s1 ** 3 + 3.0 * f_dd * d1 * d2
                    + 3.0 * f_ds * (d2 * s1 + d1 * s2) + 3.0 * f_ss * s1 * s2)
            return (tau_ddd - rest) / f_d
        return phi, dphi, ddelta, dddelta


def spring_frequencies(robot, q, stiffness):
    """The link's natural frequencies on its springs with the motors held,
    ``ω = sqrt(eig(M(q)⁻¹ K))`` [rad/s], ascending (n,).

    Flatness control works in the "soft" regime — requested poles above these frequencies.
    Its robustness to a relative model error ε (inertial parameters, K) needs roughly
    ``k₂ > ε ω_max²``; the per-joint ratios ``sqrt(K_j / M_jj)`` can lie far below ω_max when
    light distal links are coupled to heavy proximal ones.
    """
    from scipy.linalg import eigh
    M = robot.mass_matrix(q)
    K = _stiffness(stiffness, robot.n)
    return np.sqrt(eigh(np.diag(K) if K.ndim == 1 else K, M, eigvals_only=True))
