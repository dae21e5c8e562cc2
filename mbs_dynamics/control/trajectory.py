"""C⁴ joint trajectories from JointTrajectory-like waypoints.

A :class:`Trajectory` interpolates waypoints ``(t_k, q_k)`` (optionally with velocities and
accelerations, as in ``trajectory_msgs/JointTrajectory``) by piecewise polynomials of degree 9
whose position, velocity, acceleration, jerk and snap (q, q', q'', q''', q'''') are continuous, so
that the SEA/VSA flatness feedforward (doc/math.md, "Flatness feedforward") has the bounded
snap it needs.

Construction (nonic Hermite segments: the degree-9 member of the Hermite family whose quintic
member ROS' joint_trajectory_controller uses for C² motion):

* every knot gets a full state ``(q, q', q'', q''', q'''')``; each segment ``[t_k, t_{k+1}]`` is the
  unique degree-9 polynomial matching the states at both of its ends, so q…q'''' are continuous
  across knots by construction and every waypoint is hit exactly;
* velocity and acceleration: the given ones; at an end point without them, zero ("at rest");
  at an interior knot without them, those of the parabola through the knot and its two
  neighbours (Bessel's three-point rule): with slopes ``m_{k-1} = (q_k - q_{k-1})/h_{k-1}`` and
  ``m_k``: ``q'_k = (h_k m_{k-1} + h_{k-1} m_k)/(h_{k-1} + h_k)``,
  ``q''_k = 2 (m_k - m_{k-1})/(h_{k-1} + h_k)``; the velocity is then limited as in monotone
  cubic interpolation (Fritsch & Carlson, SIAM J. Numer. Anal. 17(2), 1980): zero where the
  slopes change sign (the waypoint is a local extremum), at most ``3 min(|m_{k-1}|, |m_k|)``
  otherwise;
* jerk and snap at every knot are zero.

The rule is local: a waypoint moves the curve only on the segments next to it and its
neighbours, so uneven spacing does not make the curve ring through the whole trajectory as
global interpolating splines of degree 5 to 9 do (they overshoot unevenly spaced data by orders
of magnitude). Waypoints far closer in time than their neighbours still ask for large
derivatives there: space waypoints evenly in time where possible. Quadratic motion is reproduced
exactly where the velocity limit is inactive. With the clamped hold outside ``[t_0, t_m]``
(position held, every derivative zero) a trajectory that starts and ends at rest is C⁴ on the
whole time axis.

Sampling is on the 1 kHz path: the coefficients of q…q'''' in the local variable
``s = (t - t_k)/h_k`` (already divided by ``h^d``) are precomputed, and :meth:`Trajectory.sample`
is one call into a compiled kernel (binary search plus Horner), allocation-free when ``out`` is
given.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from ..model.limits import MAX_POINTS, load_data_file
from ._spline import sample as _sample_one
from ._spline import sample_many as _sample_many

__all__ = ["Trajectory", "TrajectoryError", "JointTrajectoryData", "parse_joint_trajectory",
           "TRAJECTORY_ERROR_CAUSES"]

DEGREE = 9
NCOEF = DEGREE + 1
NDERIV = 5  # q, q', q'', q''', q''''


def _falling(p, d):
    """p! / (p - d)!, the factor of s^(p-d) in d^d/ds^d s^p (0 if d > p)."""
    if d > p:
        return 0.0
    return float(math.factorial(p) // math.factorial(p - d))


# ---------------------------------------------------------------------------------------------
# validation helpers
# ---------------------------------------------------------------------------------------------
#: Causes a :class:`TrajectoryError` is classified under (a subset of the controller's).
TRAJECTORY_ERROR_CAUSES = ("invalid", "wrong_size", "non_finite", "duplicate_joint", "time_order")


class TrajectoryError(ValueError):
    """A malformed trajectory; the message names the field and index at fault.

    Attributes:
        cause: one of :data:`TRAJECTORY_ERROR_CAUSES`: ``"invalid"`` (types, missing fields, too
            few points), ``"wrong_size"`` (a row's length differs from the joint names),
            ``"non_finite"`` (NaN or inf), ``"duplicate_joint"``, ``"time_order"`` (negative or
            not strictly increasing ``time_from_start``).
    """

    def __init__(self, message, cause="invalid"):
        super().__init__(message)
        self.cause = cause


def _as_float_matrix(value, what, m, n):
    """Convert a list of m rows of n numbers to an (m, n) float array, naming the bad place."""
    if not isinstance(value, (list, tuple, np.ndarray)):
        raise TrajectoryError(f"{what} must be one row per point, got {type(value).__name__}")
    if len(value) != m:
        raise TrajectoryError(f"{what} has {len(value)} rows, expected {m} (one per point)",
                              "wrong_size")
    out = np.empty((m, n))
    for i, row in enumerate(value):
        out[i] = _as_float_row(row, f"{what}[{i}]", n)
    return out


def _as_float_row(row, what, n):
    if isinstance(row, (str, bytes)) or (row is not None and not hasattr(row, "__len__")):
        raise TrajectoryError(f"{what} is not a list of numbers")
    try:
        arr = np.asarray(row, dtype=float)
    except OverflowError:  # an integer beyond the float range, e.g. 10**400
        big = [i for i, x in enumerate(row) if isinstance(x, int) and not _float_ok(x)]
        at = f"[{big[0]}]" if big else ""
        raise TrajectoryError(f"{what}{at} is an integer too large for a float (must be "
                              "finite)", "non_finite") from None
    except (TypeError, ValueError, OverflowError) as exc:
        raise TrajectoryError(f"{what} is not a list of numbers ({exc})") from None
    if arr.ndim != 1 or arr.shape[0] != n:
        got = arr.shape[0] if arr.ndim == 1 else f"shape {arr.shape}"
        raise TrajectoryError(f"{what} has {got} values, expected {n} (one per joint name)",
                              "wrong_size")
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        raise TrajectoryError(f"{what}[{bad[0]}] is {arr[bad[0]]} (must be finite)", "non_finite")
    return arr


def _float_ok(x):
    try:
        float(x)
        return True
    except (OverflowError, TypeError, ValueError):
        return False


def _time_from_start(value, where):
    """float seconds or a {sec, nanosec} mapping (builtin_interfaces/Duration) -> float."""
    if isinstance(value, Mapping):
        unknown = set(value) - {"sec", "nanosec"}
        if unknown:
            raise TrajectoryError(f"{where}.time_from_start has unknown keys {sorted(unknown)} "
                                  "(expected sec, nanosec)")
        try:
            t = float(value.get("sec", 0)) + 1e-9 * float(value.get("nanosec", 0))
        except OverflowError:
            raise TrajectoryError(f"{where}.time_from_start {value!r:.60} is too large (must be "
                                  "finite)", "non_finite") from None
        except (TypeError, ValueError, OverflowError):
            raise TrajectoryError(f"{where}.time_from_start {value!r} is not numeric") from None
    elif isinstance(value, (bool, str, bytes)) or value is None:
        raise TrajectoryError(f"{where}.time_from_start {value!r} is not a number")
    else:
        try:
            t = float(value)
        except OverflowError:
            raise TrajectoryError(f"{where}.time_from_start is an integer too large for a float "
                                  "(must be finite)", "non_finite") from None
        except (TypeError, ValueError, OverflowError):
            raise TrajectoryError(f"{where}.time_from_start {value!r} is not a number") from None
    if not math.isfinite(t):
        raise TrajectoryError(f"{where}.time_from_start is {t} (must be finite)", "non_finite")
    return t


def _check_times(t):
    for i, ti in enumerate(t):
        if not np.isfinite(ti):
            raise TrajectoryError(f"points[{i}].time_from_start is {ti} (must be finite)",
                                  "non_finite")
        if i and ti <= t[i - 1]:
            raise TrajectoryError(f"time_from_start must increase strictly: points[{i}] at "
                                  f"{ti} s is not after points[{i - 1}] at {t[i - 1]} s",
                                  "time_order")


def _check_joint_names(joint_names):
    if isinstance(joint_names, (str, bytes)):
        raise TrajectoryError("joint_names must be a list of names, not one string")
    try:
        names = tuple(joint_names)
    except TypeError:
        raise TrajectoryError("joint_names must be a list of names") from None
    if not names:
        raise TrajectoryError("joint_names is empty", "wrong_size")
    for i, name in enumerate(names):
        if not isinstance(name, str) or not name:
            raise TrajectoryError(f"joint_names[{i}] = {name!r} is not a non-empty string")
    seen = {}
    for i, name in enumerate(names):
        if name in seen:
            raise TrajectoryError(f"joint_names[{i}] = {name!r} duplicates "
                                  f"joint_names[{seen[name]}]", "duplicate_joint")
        seen[name] = i
    return names


class JointTrajectoryData:
    """The checked content of a JointTrajectory-shaped mapping (:func:`parse_joint_trajectory`).

    Attributes:
        joint_names: tuple of n distinct names.
        times: (m,) strictly increasing, finite, non-negative ``time_from_start`` [s] (m may be
            0 or 1; building a :class:`Trajectory` needs 2).
        positions: (m, n) finite positions [rad or m].
        velocities, accelerations: length-m lists of None (not given) or (n,) finite arrays.
        efforts: length-m list of None or (n,) finite arrays (carried, not interpolated) [N m].
    """

    __slots__ = ("joint_names", "times", "positions", "velocities", "accelerations", "efforts")

    def __init__(self, joint_names, times, positions, velocities, accelerations, efforts):
        self.joint_names = joint_names
        self.times = times
        self.positions = positions
        self.velocities = velocities
        self.accelerations = accelerations
        self.efforts = efforts

    def select(self, columns):
        """The same points restricted to the columns ``columns`` (indices), in that order."""
        idx = list(columns)

        def pick(rows):
            return [None if r is None else r[idx] for r in rows]

        return JointTrajectoryData(tuple(self.joint_names[i] for i in idx), self.times,
                                   self.positions[:, idx], pick(self.velocities),
                                   pick(self.accelerations), pick(self.efforts))

    def prepend(self, t, q):
        """A copy with a point ``q`` at rest (velocity and acceleration 0) at time ``t``."""
        n = len(self.joint_names)
        zero = np.zeros(n)
        return JointTrajectoryData(
            self.joint_names, np.concatenate(([float(t)], self.times)),
            np.vstack((np.asarray(q, dtype=float).reshape(1, n), self.positions)),
            [zero] + list(self.velocities), [zero] + list(self.accelerations),
            [None] + list(self.efforts))

    def to_trajectory(self):
        """Build the C⁴ :class:`Trajectory` through these points.

        Raises:
            TrajectoryError: fewer than 2 points (cause ``invalid``).
        """
        return Trajectory(self.joint_names, self.times, self.positions, self.velocities,
                          self.accelerations)


def parse_joint_trajectory(d, *, strict=True):
    """Check a JointTrajectory-shaped mapping; the one parser of trajectories in the package.

    ``{"joint_names": [...], "points": [{"time_from_start": 0.5 | {"sec": 0, "nanosec":
    500000000}, "positions": [...], "velocities": [...]?, "accelerations": [...]?,
    "effort": [...]?}, ...], "header": ...?}`` (the fields of ``trajectory_msgs/JointTrajectory``).
    Empty velocity/acceleration/effort lists mean "not given", as in the ROS message.

    Args:
        d: the mapping (a YAML/JSON document, or a converted ROS message).
        strict: reject unknown fields (files); False ignores them (messages).

    Returns:
        :class:`JointTrajectoryData` (points may number 0 or 1).

    Raises:
        TrajectoryError: naming the field and index at fault, with its ``cause``.
    """
    if not isinstance(d, Mapping):
        raise TrajectoryError(f"a trajectory must be a mapping with joint_names and points, "
                              f"got {type(d).__name__}")
    for key in ("joint_names", "points"):
        if key not in d:
            raise TrajectoryError(f"trajectory has no '{key}' field")
    if strict:
        unknown = set(d) - {"joint_names", "points", "header"}
        if unknown:
            raise TrajectoryError(f"trajectory has unknown field(s) {sorted(unknown)}")
    points = d["points"]
    if not isinstance(points, (list, tuple)):
        raise TrajectoryError("trajectory 'points' must be a list")
    if len(points) > MAX_POINTS:  # before anything is built from them
        raise TrajectoryError(f"trajectory has {len(points)} points, more than the limit of "
                              f"{MAX_POINTS} (mbs_dynamics.model.limits.MAX_POINTS)")
    names = d["joint_names"]
    if not isinstance(names, (list, tuple)):
        raise TrajectoryError("trajectory 'joint_names' must be a list")
    names = _check_joint_names(names)
    n = len(names)
    m = len(points)
    times = np.empty(m)
    pos = np.empty((m, n))
    vel, acc, eff = [], [], []
    allowed = {"time_from_start", "positions", "velocities", "accelerations", "effort"}
    for i, pt in enumerate(points):
        where = f"points[{i}]"
        if not isinstance(pt, Mapping):
            raise TrajectoryError(f"{where} must be a mapping, got {type(pt).__name__}")
        if strict:
            unknown = set(pt) - allowed
            if unknown:
                raise TrajectoryError(f"{where} has unknown field(s) {sorted(unknown)}")
        if pt.get("time_from_start") is None and "time_from_start" not in pt:
            raise TrajectoryError(f"{where} has no time_from_start")
        if "positions" not in pt:
            raise TrajectoryError(f"{where} has no positions")
        times[i] = _time_from_start(pt["time_from_start"], where)
        row = pt["positions"]
        if row is None or (hasattr(row, "__len__") and len(row) == 0):
            raise TrajectoryError(f"{where}.positions is empty", "wrong_size")
        pos[i] = _as_float_row(row, f"{where}.positions", n)
        for key, rows in (("velocities", vel), ("accelerations", acc), ("effort", eff)):
            value = pt.get(key)
            if value is None or (hasattr(value, "__len__") and not isinstance(value, str)
                                 and len(value) == 0):
                rows.append(None)
            else:
                rows.append(_as_float_row(value, f"{where}.{key}", n))
    if m and times[0] < 0.0:
        raise TrajectoryError(f"points[0].time_from_start is {times[0]} s (must be >= 0)",
                              "time_order")
    _check_times(times)
    return JointTrajectoryData(names, times, pos, vel, acc, eff)


# ---------------------------------------------------------------------------------------------
# the knot states and the Hermite segments
# ---------------------------------------------------------------------------------------------
def _knot_states(times, pos, vel, acc):
    """(m+1, 5, n) knot states q, q', q'', q''', q'''' (rules in the module docstring).

    ``vel`` and ``acc`` hold NaN rows where a point prescribes nothing.
    """
    npts, n = pos.shape
    h = np.diff(times)
    state = np.zeros((npts, NDERIV, n))
    state[:, 0] = pos
    if npts > 2:
        slope = np.diff(pos, axis=0) / h[:, None]  # (m, n)
        hl, hr = h[:-1, None], h[1:, None]
        ml, mr = slope[:-1], slope[1:]
        v = (hr * ml + hl * mr) / (hl + hr)  # Bessel: the parabola through 3 points
        # shape guard (Fritsch-Carlson): stop at a local extremum, |v| <= 3 min(|m_l|, |m_r|)
        bound = np.where(ml * mr > 0, 3.0 * np.minimum(np.abs(ml), np.abs(mr)), 0.0)
        state[1:-1, 1] = np.clip(v, -bound, bound)
        state[1:-1, 2] = 2.0 * (mr - ml) / (hl + hr)
    given_v = ~np.isnan(vel[:, 0])
    given_a = ~np.isnan(acc[:, 0])
    state[given_v, 1] = vel[given_v]
    state[given_a, 2] = acc[given_a]
    return state


def _hermite_inverse(origin):
    """Inverse of the map from the 10 coefficients of p(x) = Σ c_p x^p, x = s - origin, to
    p⁽ᵈ⁾ at s = 0 and at s = 1, d = 0..4 (d/dx = d/ds)."""
    H = np.zeros((NCOEF, NCOEF))
    for row, s_end in ((0, 0.0), (NDERIV, 1.0)):
        x = s_end - origin
        for d in range(NDERIV):
            for p in range(d, NCOEF):
                H[row + d, p] = _falling(p, d) * x ** (p - d)
    return np.linalg.inv(H)


# expansions about the segment start (x = s) and about its end (x = s - 1)
_HERMITE_INV = (_hermite_inverse(0.0), _hermite_inverse(1.0))


def _hermite_coefficients(times, state):
    """(2m, 10, n) coefficients of the nonic Hermite segments through the knot ``state``:
    row 2k expanded about the start of segment k (x = s), row 2k+1 about its end (x = s - 1)."""
    h = np.diff(times)
    scale = (h[:, None] ** np.arange(NDERIV))[..., None]  # (m, 5, 1): d/ds = h d/dt
    ends = np.concatenate([state[:-1] * scale, state[1:] * scale], axis=1)  # (m, 10, n)
    m, _, n = ends.shape
    c = np.empty((2 * m, NCOEF, n))
    c[0::2] = np.einsum("pe,men->mpn", _HERMITE_INV[0], ends)
    c[1::2] = np.einsum("pe,men->mpn", _HERMITE_INV[1], ends)
    # the expansion point's own terms are the knot state itself: set them without rounding
    fact = np.array([math.factorial(d) for d in range(NDERIV)])[None, :, None]
    c[0::2, :NDERIV] = ends[:, :NDERIV] / fact
    c[1::2, :NDERIV] = ends[:, NDERIV:] / fact
    return c


def _derivative_coefficients(c, h):
    """(2m, 10, n) position coefficients -> (2m, 5, 10, n) coefficients of q..q'''' in x."""
    h2 = np.repeat(h, 2)
    out = np.zeros((c.shape[0], NDERIV, NCOEF, c.shape[2]))
    for d in range(NDERIV):
        scale = 1.0 / h2 ** d
        for p in range(NCOEF - d):
            cp = c[:, p + d, :]
            # 0 * inf (a motionless segment of a tiny duration) is 0, not NaN
            out[:, d, p, :] = np.where(cp == 0.0, 0.0, cp * (_falling(p + d, d) * scale)[:, None])
    return out


#: Largest |coefficient| of the spline's q, q′, …, q⁗ polynomials: the ten terms of one sample
#: then stay finite (a larger one means waypoints far too far apart for their times).
MAX_COEFFICIENT = 1e300


def _check_spline(coef, t, names):
    """TrajectoryError (cause ``non_finite``) naming the segment, joint and derivative when the
    spline overflows (its samples would be inf or NaN)."""
    bad = ~(np.abs(coef) <= MAX_COEFFICIENT)   # (2m, 5, 10, n); NaN counts as bad
    if bad.any():
        seg, d, _, j = np.argwhere(bad)[0]
        k = seg // 2
        what = ("position", "velocity", "acceleration", "jerk", "snap")[d]
        raise TrajectoryError(
            f"the spline between points[{k}] (t = {t[k]:.6g} s) and points[{k + 1}] (t = "
            f"{t[k + 1]:.6g} s) overflows: the {what} of joint {names[j]!r} exceeds "
            f"{MAX_COEFFICIENT:g}, its samples are not finite (the points are too close in "
            "time for their change)",
            "non_finite")


# ---------------------------------------------------------------------------------------------
# public class
# ---------------------------------------------------------------------------------------------
class Trajectory:
    """A C⁴ joint trajectory through waypoints (nonic Hermite segments; see the module docstring).

    Args:
        joint_names: n distinct joint names; columns of every array follow this order.
        times: (m+1,) strictly increasing, finite ``time_from_start`` of each point [s]; m >= 1.
        positions: (m+1, n) joint positions [rad or m].
        velocities: None, an (m+1, n) array, or a length-(m+1) list whose entries are None (not
            prescribed at that point) or n numbers [rad/s]. Unprescribed end velocities are zero,
            unprescribed interior ones follow Bessel's three-point rule.
        accelerations: like ``velocities`` [rad/s²].

    Raises:
        ValueError: naming the field and index of non-increasing times, NaN/inf, ragged rows,
            duplicate or empty joint names.

    Example:
        >>> traj = Trajectory(["a", "b"], [0.0, 1.0], [[0, 0], [1, 2]])
        >>> traj.sample(0.5).shape
        (5, 2)
    """

    __slots__ = ("_names", "_times", "_pos", "_vel", "_acc", "_coef", "_hold0", "_hold1")

    def __init__(self, joint_names, times, positions, velocities=None, accelerations=None):
        names = self._check_names(joint_names)
        n = len(names)
        try:
            t = np.array(times, dtype=float)
        except OverflowError:
            raise TrajectoryError("times holds an integer too large for a float (must be "
                                  "finite)", "non_finite") from None
        except (TypeError, ValueError, OverflowError):
            raise TrajectoryError(f"times must be a list of numbers, got {times!r}") from None
        if t.ndim != 1:
            raise TrajectoryError(f"times must be a 1-D list, got shape {t.shape}")
        if t.shape[0] < 2:
            raise TrajectoryError(f"a trajectory needs at least 2 points, got {t.shape[0]}")
        _check_times(t)
        npts = t.shape[0]
        pos = _as_float_matrix(positions, "positions", npts, n)
        vel = self._optional(velocities, "velocities", npts, n)
        acc = self._optional(accelerations, "accelerations", npts, n)
        with np.errstate(all="ignore"):  # overflow is reported below, in one line
            state = _knot_states(t, pos, vel, acc)
            coef = _derivative_coefficients(_hermite_coefficients(t, state), np.diff(t))
            _check_spline(coef, t, names)
        self._setup(names, t, pos, vel, acc, coef)

    def _setup(self, names, t, pos, vel, acc, coef):
        self._names = names
        self._times = t
        self._pos = pos
        self._vel = vel
        self._acc = acc
        self._coef = np.ascontiguousarray(coef)
        self._hold0 = np.ascontiguousarray(pos[0])
        self._hold1 = np.ascontiguousarray(pos[-1])
        for a in (self._times, self._pos, self._vel, self._acc, self._coef, self._hold0,
                  self._hold1):
            a.setflags(write=False)

    @staticmethod
    def _check_names(joint_names):
        return _check_joint_names(joint_names)

    @staticmethod
    def _optional(value, what, npts, n):
        """None / array / per-point list with None entries -> (npts, n) array, NaN = not given."""
        out = np.full((npts, n), np.nan)
        if value is None:
            return out
        if not isinstance(value, (list, tuple, np.ndarray)):
            raise TrajectoryError(f"{what} must be None or one row per point, got "
                                  f"{type(value).__name__}")
        if len(value) != npts:
            raise TrajectoryError(f"{what} has {len(value)} rows, expected {npts} (one per "
                                  "point)", "wrong_size")
        for i, row in enumerate(value):
            if row is None or np.size(row) == 0:  # empty = not given, as in the ROS message
                continue
            out[i] = _as_float_row(row, f"points[{i}].{what}", n)
        return out

    # -- properties ---------------------------------------------------------------------------
    @property
    def joint_names(self):
        """tuple[str]: joint names; the column order of every sampled array."""
        return self._names

    @property
    def n(self):
        """int: number of joints."""
        return len(self._names)

    @property
    def times(self):
        """(m+1,) read-only array of waypoint times [s]."""
        return self._times

    @property
    def positions(self):
        """(m+1, n) read-only array of waypoint positions."""
        return self._pos

    @property
    def start_time(self):
        """float: time of the first point [s] (usually 0)."""
        return float(self._times[0])

    @property
    def end_time(self):
        """float: time of the last point [s]."""
        return float(self._times[-1])

    @property
    def duration(self):
        """float: time of the last point [s] (``time_from_start`` of the final waypoint)."""
        return float(self._times[-1])

    def __repr__(self):
        return (f"Trajectory(n={self.n}, points={self._times.shape[0]}, "
                f"t=[{self.start_time:g}, {self.end_time:g}] s)")

    # -- sampling -----------------------------------------------------------------------------
    def sample(self, t, out=None):
        """q, q', q'', q''', q'''' at time t.

        Before the first point the first position is held and after the last point the last
        position is held, with every derivative zero there.

        Args:
            t: time [s] (same clock as ``time_from_start``).
            out: optional (5, n) float64 C-contiguous array to fill (no allocation then).

        Returns:
            (5, n) array: rows q, q', q'', q''', q''''.
        """
        if out is None:
            out = np.empty((NDERIV, len(self._names)))
        elif out.shape != (NDERIV, len(self._names)) or out.dtype != np.float64:
            raise ValueError(f"out must be a float64 array of shape {(NDERIV, self.n)}, "
                             f"got {out.dtype} {out.shape}")
        try:
            t = float(t)
        except (TypeError, ValueError, OverflowError):
            raise ValueError(f"t must be a finite number of seconds, got {t!r:.60}") from None
        if not math.isfinite(t):
            raise ValueError(f"t must be finite, got {t}")
        _sample_one(self._times, self._coef, self._hold0, self._hold1, t, out)
        return out

    def sample_many(self, ts, out=None):
        """Vectorised :meth:`sample` over N times.

        Args:
            ts: (N,) times [s].
            out: optional (N, 5, n) float64 array to fill.

        Returns:
            (N, 5, n) array.
        """
        try:
            ts = np.ascontiguousarray(ts, dtype=float)
        except (TypeError, ValueError, OverflowError):
            raise ValueError("ts must be a 1-D array of finite numbers of seconds") from None
        if ts.ndim != 1:
            raise ValueError(f"ts must be 1-D, got shape {ts.shape}")
        if not np.all(np.isfinite(ts)):
            raise ValueError("ts contains NaN or inf")
        shape = (ts.shape[0], NDERIV, len(self._names))
        if out is None:
            out = np.empty(shape)
        elif out.shape != shape or out.dtype != np.float64:
            raise ValueError(f"out must be a float64 array of shape {shape}, got {out.shape}")
        _sample_many(self._times, self._coef, self._hold0, self._hold1, ts, out)
        return out

    def times_at_rate(self, rate):
        """Sample times from the first to the last point at ``rate`` [Hz], both ends included."""
        try:
            rate = float(rate)
        except (TypeError, ValueError, OverflowError):
            rate = math.nan
        if not (rate > 0 and np.isfinite(rate)):
            raise ValueError(f"rate must be a positive finite number of Hz, got {rate}")
        count = int(math.floor((self.end_time - self.start_time) * rate + 1e-9)) + 1
        ts = self.start_time + np.arange(count) / rate
        if ts[-1] < self.end_time - 1e-12:
            ts = np.append(ts, self.end_time)
        return ts

    # -- joint order --------------------------------------------------------------------------
    def reorder(self, joint_names):
        """The same trajectory with its columns in the order of ``joint_names``.

        Args:
            joint_names: a permutation of :attr:`joint_names` (e.g. ``robot.joint_names``).

        Raises:
            ValueError: a name unknown to the trajectory, or a trajectory joint not listed.
        """
        names = self._check_names(joint_names)
        unknown = [x for x in names if x not in self._names]
        if unknown:
            raise ValueError(f"joint(s) {unknown} are not in the trajectory "
                             f"(it has {list(self._names)})")
        missing = [x for x in self._names if x not in names]
        if missing:
            raise ValueError(f"trajectory joint(s) {missing} are missing from the requested "
                             f"order {list(names)}")
        idx = np.array([self._names.index(x) for x in names])
        new = object.__new__(Trajectory)
        new._setup(names, self._times, self._pos[:, idx], self._vel[:, idx], self._acc[:, idx],
                   self._coef[..., idx])
        return new

    # -- serialisation ------------------------------------------------------------------------
    @classmethod
    def from_dict(cls, d):
        """Build from a JointTrajectory-shaped mapping (:func:`parse_joint_trajectory`).

        ``{"joint_names": [...], "points": [{"time_from_start": 0.5 | {"sec": 0, "nanosec":
        500000000}, "positions": [...], "velocities": [...]?, "accelerations": [...]?}, ...]}``.
        Empty velocity/acceleration lists mean "not given", as in the ROS message. ``header``,
        ``effort`` are ignored.

        Raises:
            TrajectoryError (a ValueError): naming the field at fault.
        """
        return parse_joint_trajectory(d).to_trajectory()

    def to_dict(self):
        """JointTrajectory-shaped mapping (time_from_start as float seconds); round-trips."""
        points = []
        for i, t in enumerate(self._times):
            pt = {"time_from_start": float(t), "positions": self._pos[i].tolist()}
            if not np.isnan(self._vel[i, 0]):
                pt["velocities"] = self._vel[i].tolist()
            if not np.isnan(self._acc[i, 0]):
                pt["accelerations"] = self._acc[i].tolist()
            points.append(pt)
        return {"joint_names": list(self._names), "points": points}

    @classmethod
    def load(cls, path):
        """Read a YAML (.yaml/.yml) or JSON (.json) file holding :meth:`to_dict`'s structure.

        A top-level ``trajectory:`` key around the structure is accepted too. The file passes
        the limits of :mod:`mbs_dynamics.model.limits` (size, nesting, aliases, at most
        ``MAX_POINTS`` points) before anything is built; every failure is a ValueError whose
        message starts with the path.
        """
        path = Path(path)
        d = load_data_file(path, "trajectory")  # the package's resource limits (model.limits)
        if isinstance(d, dict) and set(d) == {"trajectory"}:
            d = d["trajectory"]
        try:
            return cls.from_dict(d)
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from None

    def save(self, path):
        """Write :meth:`to_dict` as YAML or JSON, chosen by the file extension."""
        path = Path(path)
        suffix = path.suffix.lower()
        d = self.to_dict()
        if suffix == ".json":
            path.write_text(json.dumps(d, indent=1) + "\n")
        elif suffix in (".yaml", ".yml"):
            import yaml
            path.write_text(yaml.safe_dump(d, sort_keys=False, default_flow_style=None))
        else:
            raise ValueError(f"{path}: unknown trajectory file type '{suffix}' "
                             "(use .yaml, .yml or .json)")
