"""Exciting trajectories for identification: finite Fourier series per joint (Swevers, Ganseman,
Tükel, De Schutter, Van Brussel 1997, "Optimal robot excitation and identification").

Per joint j, with ω_l = 2π l / T (l = 1..L):

    q_j(t) = q0_j + Σ_l (a_jl/ω_l) sin(ω_l t) − (b_jl/ω_l) cos(ω_l t)
    q̇_j(t) = Σ_l a_jl cos(ω_l t) + b_jl sin(ω_l t)
    q̈_j(t) = Σ_l −a_jl ω_l sin(ω_l t) + b_jl ω_l cos(ω_l t)

periodic in T. Starting and ending at rest (q̇ = q̈ = 0 at t = 0, T) is built in: a_jL = −Σ_{l<L}
a_jl and b_jL = −Σ_{l<L} l b_jl / L, so the free coefficients are the first L−1 pairs.

Limits are met by construction: the optimiser chooses the *shape* of each joint's motion; every
evaluation scales joint j by the largest factor that keeps |q̇_j| ≤ margin·v_max, |q̈_j| ≤
margin·a_max and the range of q_j within margin·(upper − lower) (centred in the limits), on a grid
of GRID samples per period (a final check on a 20× finer grid rescales if needed). The objective
is the condition number of the stacked base regressor (friction columns included) with columns
scaled to unit norm, on SAMPLES points per period, minimised by scipy.optimize (L-BFGS-B on log
cond from a random start).
"""
from __future__ import annotations

import math
import numbers
import reprlib

import numpy as np

from ..model.description import refuse_lie_joints

__all__ = ["FourierDesign", "excite", "fourier_states"]

GRID = 400
SAMPLES = 80
SOFT_P = 16


def fourier_states(a, b, period, t):
    """q − q0, q̇, q̈ (3, len(t), n) of coefficients a, b (L, n)."""
    L = a.shape[0]
    w = 2.0 * math.pi * np.arange(1, L + 1) / period
    wt = np.outer(np.asarray(t, float), w)
    s, c = np.sin(wt), np.cos(wt)
    q = s @ (a / w[:, None]) - c @ (b / w[:, None])
    qd = c @ a + s @ b
    qdd = -(s * w) @ a + (c * w) @ b
    return np.stack([q, qd, qdd])


def _full_coefficients(z, L, n):
    """Free coefficients z (2 (L−1) n) → a, b (L, n) starting and ending at rest."""
    z = z.reshape(2, L - 1, n)
    a = np.concatenate([z[0], -z[0].sum(axis=0, keepdims=True)])
    ls = np.arange(1, L)[:, None]
    b = np.concatenate([z[1], -(ls * z[1]).sum(axis=0, keepdims=True) / L])
    return a, b


class FourierDesign:
    """An exciting trajectory: coefficients a, b (L, n) [already scaled], offsets q0 (n,),
    period [s]; condition (final) and condition_start; peak ``|q̇|``, ``|q̈|`` per joint."""

    def __init__(self, joint_names, a, b, q0, period, condition, condition_start):
        self.joint_names = tuple(joint_names)
        self.a, self.b, self.q0, self.period = a, b, q0, float(period)
        self.condition, self.condition_start = float(condition), float(condition_start)
        t = np.linspace(0.0, self.period, 20 * GRID + 1)
        _, qd, qdd = fourier_states(a, b, self.period, t)
        self.peak_velocity = np.abs(qd).max(axis=0)
        self.peak_acceleration = np.abs(qdd).max(axis=0)

    def sample(self, t):
        """q, q̇, q̈ (3, len(t), n) at times t [s]."""
        out = fourier_states(self.a, self.b, self.period, t)
        out[0] += self.q0
        return out

    def to_dict(self, periods=1, points_per_second=None):
        """JointTrajectory-shaped dict (positions, velocities, accelerations at dense points)
        for :meth:`mbs_dynamics.Trajectory.from_dict`; starts and ends at rest."""
        L = self.a.shape[0]
        pps = points_per_second or max(50.0, 40.0 * L / self.period)
        from ..model.limits import MAX_POINTS
        span = self.period * periods * pps  # checked before building: 1e308 s overflowed and
        if not (0 < span <= MAX_POINTS - 1):  # 1e6 s built 5e7 points
            raise ValueError(f"period × periods = {self.period:g} s × {periods!r} gives "
                             f"{span:.3g} trajectory points, outside 1 … {MAX_POINTS} "
                             "(mbs_dynamics.model.limits.MAX_POINTS): shorten the period or "
                             "write fewer periods")
        m = int(math.ceil(span))
        t = np.linspace(0.0, self.period * periods, m + 1)
        q, qd, qdd = self.sample(t)
        qd[0] = qd[-1] = 0.0
        qdd[0] = qdd[-1] = 0.0
        points = [{"time_from_start": float(t[i]), "positions": q[i].tolist(),
                   "velocities": qd[i].tolist(), "accelerations": qdd[i].tolist()}
                  for i in range(m + 1)]
        return {"joint_names": list(self.joint_names), "points": points}


#: Largest ``harmonics`` of :func:`excite` (GRID samples a period: far below Nyquist) and most
#: optimiser ``iterations`` — bounds on the run time (the fuzz campaign of issue 22: 1,000
#: harmonics ran for minutes per iteration, 10⁶ never returned).
MAX_HARMONICS = 100
MAX_ITERATIONS = 100_000


def _real(x, name, what, ok):
    """``x`` as a float satisfying ``ok``, else ValueError/TypeError naming ``name``."""
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise TypeError(f"{name} must be a number, got {type(x).__name__}")
    try:
        v = float(x)
    except OverflowError:
        v = math.inf
    if not ok(v):
        raise ValueError(f"{name} must be {what}, got {reprlib.repr(x)}")
    return v


def _limits(robot, max_acceleration, margin):
    n = robot.n
    lo, hi = np.asarray(robot.lower, float), np.asarray(robot.upper, float)
    v = np.asarray(robot.velocity_limit, float).copy()
    v[~(np.isfinite(v) & (v > 0))] = 2.0  # no velocity limit in the URDF: 2 rad/s (m/s)
    acc = (np.full(n, float(max_acceleration)) if max_acceleration is not None else 2.0 * v)
    span = hi - lo
    span[~np.isfinite(span)] = np.inf
    bad = [robot.joint_names[j] for j in range(n) if not span[j] > 0]
    if bad:
        raise ValueError(f"joint(s) {', '.join(bad)} have no range of motion (lower = upper)")
    return lo, hi, margin * v, margin * acc, margin * span


def _softmax_abs(x, p=SOFT_P):
    """A smooth stand-in for max|x| over axis 0 (the p-mean; below the max by ≲ 20 % for the
    peaked signals here): keeps the objective differentiable for the optimiser."""
    m = np.abs(x).max(axis=0)
    m = np.where(m > 0, m, 1.0)
    return m * np.mean((np.abs(x) / m) ** p, axis=0) ** (1.0 / p)


def _scale(a, b, period, lims, t_grid, smooth=False):
    """Per-joint scale factors that meet the limits, and the centring offsets q0 (``smooth``:
    p-means instead of maxima, for the optimiser; the final design uses the maxima)."""
    lo, hi, vmax, amax, span = lims
    q, qd, qdd = fourier_states(a, b, period, t_grid)
    top, bot = q.max(axis=0), q.min(axis=0)
    if smooth:
        peak = _softmax_abs
        width = 2.0 * peak(q - q.mean(axis=0))
    else:
        peak = (lambda x: np.abs(x).max(axis=0))
        width = top - bot
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.minimum(vmax / peak(qd), amax / peak(qdd))
        s = np.minimum(s, span / width)
    s[~np.isfinite(s)] = 0.0
    finite = np.isfinite(lo) & np.isfinite(hi)
    mid = np.where(finite, 0.5 * (np.where(finite, lo, 0.0) + np.where(finite, hi, 0.0)), 0.0)
    q0 = mid - s * 0.5 * (top + bot)
    return s, q0


def excite(robot, *, period=10.0, harmonics=5, max_acceleration=None, margin=0.9,
           iterations=60, seed=0, friction=True, base=None):
    """Optimise a finite Fourier series trajectory for identification (module docstring).

    Args:
        robot: fixed-base Robot (or MimicRobot) with ``regressor``.
        period: T [s]; harmonics: L ≥ 2 (the base frequency is 1/T).
        max_acceleration: ``|q̈|`` limit of every joint [rad/s²] (default 2 v_max / s).
        margin: fraction of every limit used, in (0, 1].
        iterations: L-BFGS-B iterations.
        friction: include the viscous and Coulomb columns in the condition number.
        base: the base parameters object (default ``base_parameters(robot)``).
    Returns:
        :class:`FourierDesign`.
    """
    from scipy.optimize import minimize

    period = _real(period, "period", "a finite number of seconds > 0", lambda x: 0 < x < math.inf)
    if isinstance(harmonics, bool) or not isinstance(harmonics, numbers.Integral):
        raise TypeError(f"harmonics must be an integer, got {type(harmonics).__name__}")
    if not 2 <= harmonics <= MAX_HARMONICS:  # 1,000 took minutes per iteration
        raise ValueError(f"harmonics must lie in 2 … {MAX_HARMONICS} (one pair is used to start "
                         f"and end at rest), got {reprlib.repr(harmonics)}")
    margin = _real(margin, "margin", "in (0, 1]", lambda x: 0 < x <= 1)
    if max_acceleration is not None:
        max_acceleration = _real(max_acceleration, "max_acceleration",
                                 "a finite number > 0 [rad/s²]", lambda x: 0 < x < math.inf)
    if isinstance(iterations, bool) or not isinstance(iterations, numbers.Integral) \
            or not 0 <= iterations <= MAX_ITERATIONS:
        raise ValueError(f"iterations must be an integer in 0 … {MAX_ITERATIONS}, got "
                         f"{reprlib.repr(iterations)}")
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {reprlib.repr(seed)}")
    if getattr(robot, "floating_base", False):
        raise ValueError("exciting trajectories need a fixed-base robot")
    refuse_lie_joints(robot, "exciting trajectories")
    if base is None:
        from .base import base_parameters
        base = base_parameters(robot)
    from .estimate import base_map

    n, L = robot.n, int(harmonics)
    lims = _limits(robot, max_acceleration, margin)
    _, F = base_map(base, 10 * np.asarray(robot.inertial_parameters()).shape[0])
    t_grid = np.linspace(0.0, period, GRID, endpoint=False)
    t_eval = np.linspace(0.0, period, SAMPLES, endpoint=False)

    def design(z, smooth=False):
        a, b = _full_coefficients(z, L, n)
        s, q0 = _scale(a, b, period, lims, t_grid, smooth)
        return a * s, b * s, q0

    def log_cond(z):
        a, b, q0 = design(z, smooth=True)
        return log_cond_of(robot, F, a, b, q0, period, t_eval, friction)

    rng = np.random.default_rng(seed)
    z0 = rng.normal(size=2 * (L - 1) * n) / np.tile(np.repeat(np.arange(1, L), n), 2)
    def hard(z):
        return log_cond_of(robot, F, *design(z), period, t_eval, friction)

    start = hard(z0)
    with np.errstate(all="ignore"):
        res = minimize(log_cond, z0, method="L-BFGS-B",
                       options={"maxiter": int(iterations), "eps": 1e-6})
    z = res.x if hard(res.x) <= start else z0
    a, b, q0 = design(z)
    # the limits on a 20x finer grid (maxima between grid points)
    fine = np.linspace(0.0, period, 20 * GRID + 1)
    q, qd, qdd = fourier_states(a, b, period, fine)
    lo, hi, vmax, amax, span = (x / margin for x in lims)
    with np.errstate(divide="ignore", invalid="ignore"):
        over = np.maximum.reduce([np.abs(qd).max(0) / vmax, np.abs(qdd).max(0) / amax,
                                  (q.max(0) - q.min(0)) / span])
    shrink = np.where(over > margin, margin / over, 1.0)
    if np.any(shrink < 1):
        mid = q0 + 0.5 * (q.max(0) + q.min(0))
        a, b = a * shrink, b * shrink
        q0 = mid - shrink * 0.5 * (q.max(0) + q.min(0))
    final = log_cond_of(robot, F, a, b, q0, period, t_eval, friction)
    return FourierDesign(robot.joint_names, a, b, q0, period, math.exp(final), math.exp(start))


def log_cond_of(robot, F, a, b, q0, period, t, friction=True):
    """log of the condition number of the scaled stacked base regressor of a design."""
    from .estimate import friction_columns
    q, qd, qdd = fourier_states(a, b, period, t)
    Yb = robot.regressor(q + q0, qd, qdd) @ F
    if friction:  # sign(q̇) smoothed (tanh, 0.05 rad/s): the objective stays differentiable
        fc = friction_columns(qd)
        fc[:, :, 1::2] = np.tanh(fc[:, :, ::2] / 0.05) * (fc[:, :, 1::2] != 0)
        Yb = np.concatenate([Yb, fc], axis=2)
    Yb = Yb.reshape(-1, Yb.shape[-1])
    # eigenvalues of the scaled Gram matrix (an SVD of the tall matrix is ~50x slower with
    # threaded OpenBLAS on a loaded machine; cond ≲ 1e6 keeps the squared ratio accurate)
    G = Yb.T @ Yb
    d = np.sqrt(np.diag(G))
    if not np.all(d > 0):  # a column never excited (a joint at rest)
        return 50.0
    lam = np.linalg.eigvalsh(G / np.outer(d, d))
    return float(0.5 * np.log(lam[-1] / lam[0])) if lam[0] > 0 else 50.0
