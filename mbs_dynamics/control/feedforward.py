"""Flatness-based feedforward for rigid, SEA and VSA robots along a C⁴ joint trajectory.

From the desired link motion q…q'''' (e.g. :meth:`mbs_dynamics.Trajectory.sample`), the rigid
inverse dynamics and its derivatives τ, τ′, τ″ (``Robot.torque_derivatives``, doc/math.md
"Recursive time derivatives") give the motor reference of an elastic joint
(doc/math.md "Flatness feedforward"; formulas in :mod:`mbs_dynamics.actuators`):

* SEA: ``θ = q + K⁻¹τ``, ``θ' = q' + K⁻¹τ'``, ``θ'' = q'' + K⁻¹τ''``, ``τ_m = B θ'' + D_m θ' + τ``;
* VSA: ``θ − q`` from inverting ``φ(θ − q, σ) = τ``, θ', θ'' by implicit differentiation;
* rigid: ``θ = q`` and ``τ_m = τ``.

Every function takes one sample, ``qs`` (5, n), or a batch, ``qs`` (N, 5, n); a batch is one
batch call for the dynamics and one for the actuator (no Python loop over samples).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model.description import LIE_REASONS, refuse_lie_joints
from .actuators import SEA, VSA, vsa_spring


def require_fixed_base(robot, who):
    """ValueError naming ``who`` when ``robot`` has a floating base: the joint-space feedforward
    (controller, enricher) drives the joints of a fixed-base arm; its vectors would miss the
    base's 7 position and 6 velocity coordinates and every call would fail."""
    if getattr(robot, "floating_base", False):
        raise ValueError(
            f"{who} needs a fixed-base robot, got a floating-base one (nq = {robot.nq}, "
            f"nv = {robot.nv} with the base): load the URDF without floating_base=True (the "
            "base fixed to the world) for joint-space feedforward")
    refuse_lie_joints(robot, who, LIE_REASONS["feedforward"])

__all__ = ["FeedforwardResult", "feedforward", "sea_feedforward", "vsa_feedforward"]


@dataclass(frozen=True)
class FeedforwardResult:
    """Feedforward along the trajectory; each array is (n,) for one sample or (N, n) for N.

    Attributes:
        theta, theta_dot, theta_ddot: motor position θ [rad], velocity, acceleration.
        tau_motor: motor torque τ_m [Nm].
        tau, tau_dot, tau_ddot: link torque τ = τ_e (rigid inverse dynamics) and derivatives.
        sigma, sigma_dot, sigma_ddot: VSA stiffness input and derivatives (None otherwise).
        stiffness: spring stiffness ∂τ_e/∂(θ − q) along the trajectory [Nm/rad] (None: rigid).
    """

    theta: np.ndarray
    theta_dot: np.ndarray
    theta_ddot: np.ndarray
    tau_motor: np.ndarray
    tau: np.ndarray
    tau_dot: np.ndarray
    tau_ddot: np.ndarray
    sigma: np.ndarray = None
    sigma_dot: np.ndarray = None
    sigma_ddot: np.ndarray = None
    stiffness: np.ndarray = None
    base_wrench: np.ndarray = None


def _joint_jet(robot, qs, f_ext):
    """(joint qs (…, 5, n), τ jet of the joints (…, 3, n), base wrench jet (…, 3, 6) or None).

    ``qs`` is (5, n) / (N, 5, n), or — a floating base, or external wrenches — a pair
    ``(q, vs)`` with q (nq,) and vs (4, nv) rows v, v′, v″, v‴ (or batches (N, nq), (N, 4, nv))."""
    refuse_lie_joints(robot, "feedforward")
    if not (isinstance(qs, tuple) and len(qs) == 2):
        if robot.nv != robot.n:
            raise ValueError(f"a floating-base robot needs qs = (q, vs): q ({robot.nq},) and vs "
                             f"(4, {robot.nv}) rows v, v′, v″, v‴ (the base-motion jet, then the "
                             "joints')")
        qs = _check_qs(robot, qs)
        if f_ext is None:
            return qs, robot.torque_derivatives(qs), None
        return qs, robot.torque_derivatives((qs[0], qs[1:]), f_ext=f_ext), None
    q, vs = (np.asarray(x, dtype=float) for x in qs)
    if (vs.shape[-2:] != (4, robot.nv) or q.shape[-1:] != (robot.nq,)
            or q.shape[:-1] != vs.shape[:-2]):
        raise ValueError(f"(q, vs) must have shapes ({robot.nq},) and (4, {robot.nv}) (rows v, "
                         f"v′, v″, v‴) or (N, {robot.nq}) and (N, 4, {robot.nv}), got {q.shape} "
                         f"and {vs.shape}")
    taus = robot.torque_derivatives((q, vs), f_ext=f_ext)
    b = robot.nv - robot.n
    joint_qs = np.concatenate([q[..., None, robot.nq - robot.n:], vs[..., b:]], axis=-2)
    return joint_qs, taus[..., b:], (taus[..., :b] if b else None)


def _check_qs(robot, qs):
    qs = np.asarray(qs, dtype=float)
    if qs.ndim not in (2, 3) or qs.shape[-2:] != (5, robot.n):
        raise ValueError(f"qs must have shape (5, {robot.n}) (rows q, q', q'', q''', q'''') or "
                         f"(N, 5, {robot.n}), got {qs.shape}")
    return qs


def feedforward(robot, qs, actuator=None, sigmas=None, *, f_ext=None):
    """Feedforward for any actuator object (None = rigid).

    Args:
        robot: a :class:`mbs_dynamics.Robot`.
        qs: (5, n) or (N, 5, n): q, q', q'', q''', q'''' in ``robot.joint_names`` order; for a
            floating base (or with ``f_ext``) the pair ``(q, vs)``: q (nq,) and vs (4, nv) rows
            v, v′, v″, v‴ — the base-motion jet (linear, angular in the base frame) and the
            joints' (see :meth:`mbs_dynamics.Robot.torque_derivatives`); batches (N, …).
        f_ext: optional dict link → external wrench jet (6,) or (r ≤ 3, 6) rows W, W′, W″
            ``(f, m)`` (force, moment) in the link frame (e.g. the contact forces of a legged robot and their
            rates); single samples only.
        actuator: None (rigid), :class:`~mbs_dynamics.actuators.SEA` or
            :class:`~mbs_dynamics.actuators.VSA`.
        sigmas: VSA only: (3, n) or (N, 3, n) rows σ, σ', σ''; None = the actuator's constant σ.

    Returns:
        :class:`FeedforwardResult` (joint quantities; with a floating base ``base_wrench``
        (…, 3, 6) holds the wrench jet the base needs — force, moment in the base frame — that
        contacts or a support must provide).
    """
    qs, taus, base = _joint_jet(robot, qs, f_ext)
    tau, tau_dot, tau_ddot = (taus[..., r, :] for r in range(3))
    if actuator is None:
        return FeedforwardResult(qs[..., 0, :], qs[..., 1, :], qs[..., 2, :], tau, tau, tau_dot,
                                 tau_ddot, base_wrench=base)
    if isinstance(actuator, VSA):
        ref = actuator.reference(qs, taus, sigmas=sigmas)
        if sigmas is None:
            sig = np.zeros(qs.shape[:-2] + (3, robot.n))
            sig[..., 0, :] = actuator._param(actuator.sigma, robot.n)
        else:
            sig = np.broadcast_to(np.asarray(sigmas, dtype=float), qs.shape[:-2] + (3, robot.n))
        stiff = actuator.spring.stiffness(ref[..., 0, :] - qs[..., 0, :], sig[..., 0, :])
        return FeedforwardResult(*(ref[..., r, :] for r in range(4)), tau, tau_dot, tau_ddot,
                                 sig[..., 0, :], sig[..., 1, :], sig[..., 2, :], stiff,
                                 base_wrench=base)
    if sigmas is not None:
        raise ValueError("sigmas is only meaningful for a VSA actuator")
    ref = actuator.reference(qs, taus)
    stiff = np.broadcast_to(actuator._param(actuator.stiffness, robot.n), tau.shape)
    return FeedforwardResult(*(ref[..., r, :] for r in range(4)), tau, tau_dot, tau_ddot,
                             stiffness=stiff, base_wrench=base)


def sea_feedforward(robot, qs, stiffness, motor_inertia, motor_damping=None, *, f_ext=None):
    """Series-elastic feedforward: θ, θ', θ'', τ_m from q…q'''' (doc/math.md).

    Args:
        robot: a :class:`mbs_dynamics.Robot`.
        qs: (5, n) or (N, 5, n): q, q', q'', q''', q''''; or ``(q, vs)`` (floating base,
            see :func:`feedforward`). f_ext: external wrench jets, see :func:`feedforward`.
        stiffness: spring stiffness K [Nm/rad], scalar or (n,), > 0.
        motor_inertia: reflected motor inertia B [kg m²], scalar or (n,), >= 0.
        motor_damping: motor viscous friction D_m [Nm s/rad] (τ_m gains D_m θ'), or None.

    Returns:
        :class:`FeedforwardResult` (arrays (n,) or (N, n)).

    Raises:
        ValueError: bad shapes, non-finite values, stiffness <= 0, negative inertia/damping.
    """
    return feedforward(robot, qs, SEA(stiffness, motor_inertia, motor_damping, n=robot.n),
                       f_ext=f_ext)


def vsa_feedforward(robot, qs, sigma=0.0, motor_inertia=None, motor_damping=None, spring=None,
                    k=None, a=None, tol=1e-12, max_iterations=50, *, f_ext=None):
    """Variable-stiffness feedforward: θ, θ', θ'', τ_m for ``τ_e = φ(θ − q, σ)``.

    Args:
        robot: a :class:`mbs_dynamics.Robot`.
        qs: (5, n) or (N, 5, n): q, q', q'', q''', q''''; or ``(q, vs)`` (floating base,
            see :func:`feedforward`). f_ext: external wrench jets, see :func:`feedforward`.
        sigma: stiffness input: a scalar or (n,) constant, or (3, n) / (N, 3, n) rows σ, σ', σ''.
        motor_inertia: B [kg m²], scalar or (n,).
        motor_damping: D_m [Nm s/rad] or None.
        spring: a :class:`~mbs_dynamics.actuators.Spring`; default
            :class:`~mbs_dynamics.actuators.ExponentialAntagonisticSpring` ``(k, a)``.
        k, a: parameters of the default spring [Nm/rad], [1/rad] (default 1000 and 5); not
            together with ``spring``.
        tol, max_iterations: Newton settings for inverting φ.

    The keywords (``motor_inertia``, ``motor_damping``, ``spring``, ``k``, ``a``, ``sigma``,
    ``tol``, ``max_iterations``) are those of :class:`~mbs_dynamics.actuators.VSA`, so
    ``vsa_feedforward(robot, qs, **kw)`` equals ``feedforward(robot, qs, VSA(**kw))`` for a
    constant σ.

    Returns:
        :class:`FeedforwardResult` with ``sigma*`` and ``stiffness`` filled.

    Raises:
        SpringInversionError: φ(δ, σ) = τ could not be solved.
        ValueError: bad parameters, or both ``spring`` and ``k``/``a``.
        TypeError: no ``motor_inertia``.
    """
    if motor_inertia is None:
        raise TypeError("vsa_feedforward() needs motor_inertia (B [kg m²], scalar or (n,))")
    spring = vsa_spring(spring, k, a)
    sig = np.asarray(sigma, dtype=float)
    if sig.ndim <= 1:
        vsa = VSA(spring, motor_inertia, motor_damping, sigma=sig, tol=tol,
                  max_iterations=max_iterations, n=robot.n)
        return feedforward(robot, qs, vsa, f_ext=f_ext)
    vsa = VSA(spring, motor_inertia, motor_damping, tol=tol, max_iterations=max_iterations,
              n=robot.n)
    return feedforward(robot, qs, vsa, sigmas=sig, f_ext=f_ext)
