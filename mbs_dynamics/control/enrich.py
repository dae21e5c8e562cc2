"""Trajectory enrichment for joint_trajectory_controller: the ROS-free core of ``feedforward_proxy``.

Along a *desired* trajectory the feedforward depends on that trajectory only, so it can be
computed ahead, for the whole trajectory at once, and handed to ros2_control's
joint_trajectory_controller (JTC), which interpolates it at the hardware rate and adds each
point's ``effort`` as feedforward when it commands the effort interface. This module turns a
JointTrajectory (``joint_names`` + waypoints) into such an *enriched* trajectory:

1. the waypoints are parsed by :func:`mbs_dynamics.trajectory.parse_joint_trajectory` and joined
   by the C⁴ spline of :class:`mbs_dynamics.trajectory.Trajectory` (waypoints hit exactly, given
   velocities/accelerations kept);
2. the spline is sampled every ``sample_period`` seconds from the first to the last waypoint; the
   original waypoint times are kept (grid samples closer than ``0.1 sample_period`` to a waypoint
   are dropped, so no segment is degenerately short); ``sample_period = 0`` keeps only the
   waypoints;
3. every sample is filled with the batch API (``Robot.inverse_dynamics`` on (N, n) arrays;
   :func:`mbs_dynamics.feedforward.feedforward` for the motor side):

   * ``output="effort"`` (rigid joints, or drives whose joint interface takes link torque):
     positions, velocities, accelerations of the spline, ``effort`` = τ = ID(q, q̇, q̈)
     (RNEA, seed 000 eq. 67–68);
   * ``output="motor"`` (SEA/VSA drives whose joint interface commands the motor side):
     positions, velocities, accelerations = θ_d, θ′_d, θ″_d and ``effort`` = τ_m (doc/math.md,
     "Flatness feedforward": ``θ = q + K⁻¹τ`` …, which needs τ′, τ″ and hence the spline's snap).

A trajectory with a single waypoint is filled at that point (velocity and acceleration as given,
else zero). A trajectory that cannot be served raises :class:`EnrichmentError` carrying the
FollowJointTrajectory error code to answer with (``INVALID_JOINTS`` for unknown, missing or
duplicate joints, ``INVALID_GOAL`` for anything else); a non-finite number is never returned.

Joint names: the trajectory must name every joint of the model (use ``tip_link`` /
``locked_joints`` to model only the joints the controller drives), in any order, and may name the
model's mimic joints (``robot.mimic_joints``, when the model has them): those columns are dropped,
as JTC does not command them. The enriched trajectory keeps the input's joint order. On a
closed-loop robot (:class:`~mbs_dynamics.loops.robot.ClosedLoopRobot`) the model's joints are the
actuated ones; a trajectory naming a dependent joint is refused (``INVALID_JOINTS``, naming it).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .feedforward import feedforward, require_fixed_base
from .trajectory import TrajectoryError, parse_joint_trajectory

__all__ = ["TrajectoryEnricher", "EnrichedTrajectory", "EnrichmentError", "OUTPUTS",
           "INVALID_GOAL", "INVALID_JOINTS"]

#: Values of the ``output`` option.
OUTPUTS = ("effort", "motor")

#: control_msgs/action/FollowJointTrajectory result error codes used here.
INVALID_GOAL = -1
INVALID_JOINTS = -2


class EnrichmentError(ValueError):
    """A trajectory the enricher cannot serve.

    Attributes:
        error_code: the FollowJointTrajectory result code to answer with: :data:`INVALID_GOAL`
            (-1) or :data:`INVALID_JOINTS` (-2).
    """

    def __init__(self, message, error_code=INVALID_GOAL):
        super().__init__(message)
        self.error_code = error_code


class EnrichedTrajectory:
    """A resampled, filled trajectory (all arrays finite).

    Attributes:
        joint_names: tuple of m joint names (the input's order, mimic joints dropped).
        times: (N,) strictly increasing ``time_from_start`` [s].
        positions, velocities, accelerations: (N, m) [rad, rad/s, rad/s²] (or m): the spline
            (``output="effort"``) or the motor references θ, θ′, θ″ (``output="motor"``).
        effort: (N, m): τ [N m] (``effort``) or τ_m (``motor``).
        waypoints: (K,) indices into ``times`` of the original waypoints.
        output: ``"effort"`` or ``"motor"``.
    """

    __slots__ = ("joint_names", "times", "positions", "velocities", "accelerations", "effort",
                 "waypoints", "output")

    def __init__(self, joint_names, times, positions, velocities, accelerations, effort,
                 waypoints, output):
        self.joint_names = tuple(joint_names)
        self.times = times
        self.positions = positions
        self.velocities = velocities
        self.accelerations = accelerations
        self.effort = effort
        self.waypoints = waypoints
        self.output = output

    def __len__(self):
        return self.times.shape[0]

    def to_dict(self):
        """JointTrajectory-shaped mapping (``time_from_start`` in float seconds)."""
        return {"joint_names": list(self.joint_names),
                "points": [{"time_from_start": float(t),
                            "positions": self.positions[k].tolist(),
                            "velocities": self.velocities[k].tolist(),
                            "accelerations": self.accelerations[k].tolist(),
                            "effort": self.effort[k].tolist()}
                           for k, t in enumerate(self.times)]}


def sample_times(waypoint_times, sample_period):
    """Sample times: a grid every ``sample_period`` plus every waypoint time.

    Args:
        waypoint_times: (K,) strictly increasing times [s].
        sample_period: grid spacing [s]; 0 = the waypoints only.

    Returns:
        tuple: (N,) sorted times, and (K,) indices of the waypoints in them. Grid times closer
        than ``0.1 sample_period`` to a waypoint are dropped.
    """
    w = np.asarray(waypoint_times, dtype=float)
    if sample_period <= 0.0 or w.shape[0] < 2:
        return w.copy(), np.arange(w.shape[0])
    count = int(np.floor((w[-1] - w[0]) / sample_period)) + 1
    grid = w[0] + sample_period * np.arange(count)
    # distance of each grid time to its nearest waypoint
    k = np.clip(np.searchsorted(w, grid), 1, w.shape[0] - 1)
    near = np.minimum(np.abs(grid - w[k - 1]), np.abs(w[k] - grid))
    grid = grid[near >= 0.1 * sample_period]
    times = np.concatenate((grid, w))
    order = np.argsort(times, kind="stable")
    times = times[order]
    where = np.empty_like(order)
    where[order] = np.arange(order.shape[0])
    return times, where[grid.shape[0]:]


class TrajectoryEnricher:
    """Turn JointTrajectory waypoints into a resampled trajectory with feedforward efforts.

    Args:
        robot: a :class:`mbs_dynamics.Robot` (not shared with another thread; pass
            ``robot.copy()`` if it is).
        output: ``"effort"`` (τ) or ``"motor"`` (θ_d, θ′_d, θ″_d, τ_m; needs ``actuator``).
        actuator: None (rigid) or an actuator with ``reference(qs, taus)`` for ``robot.n``
            joints (:func:`mbs_dynamics.actuators.actuator_from_params`).
        sample_period: spacing of the resampled points [s]; 0 keeps the waypoints only.
        max_points: largest number of points produced (memory bound of one goal).

    Raises:
        ValueError: a floating-base robot, an unknown ``output``, ``motor`` without an actuator,
            a negative or non-finite ``sample_period``, ``max_points`` < 1.
    """

    def __init__(self, robot, *, output="effort", actuator=None, sample_period=0.01,
                 max_points=200_000):
        require_fixed_base(robot, "TrajectoryEnricher")
        if output not in OUTPUTS:
            raise ValueError(f"output must be one of {OUTPUTS}, got {output!r}")
        if output == "motor" and actuator is None:
            raise ValueError("output 'motor' needs an elastic actuator (actuator.type sea or "
                             "vsa); a rigid robot has no motor side: use output 'effort'")
        try:
            sample_period = float(sample_period)
        except (TypeError, ValueError, OverflowError):
            sample_period = float("nan")
        if not (np.isfinite(sample_period) and sample_period >= 0.0):
            raise ValueError(f"sample_period must be a finite number of seconds >= 0, got "
                             f"{sample_period}")
        if int(max_points) < 1:
            raise ValueError(f"max_points must be >= 1, got {max_points}")
        self.robot = robot
        self.output = output
        self.actuator = actuator
        self.sample_period = sample_period
        self.max_points = int(max_points)
        self._names = tuple(robot.joint_names)
        self._index = {name: i for i, name in enumerate(self._names)}
        mimic = getattr(robot, "mimic_joints", None)
        self._mimic = dict(mimic) if isinstance(mimic, Mapping) else {}
        # a ClosedLoopRobot: joint_names are the actuated joints, the others follow them
        self._dependent = frozenset(getattr(robot, "dependent_joint_names", ()))

    def enrich(self, trajectory):
        """Enrich one trajectory.

        Args:
            trajectory: a JointTrajectory-shaped mapping (``joint_names``, ``points`` with
                ``time_from_start`` [s or {sec, nanosec}], ``positions``, optional
                ``velocities``/``accelerations``; ``effort`` is ignored and replaced).

        Returns:
            :class:`EnrichedTrajectory`.

        Raises:
            EnrichmentError: with ``error_code`` INVALID_JOINTS or INVALID_GOAL and a message
                naming the joint, point or field at fault.
        """
        try:
            data = parse_joint_trajectory(trajectory, strict=False)
        except TrajectoryError as exc:
            code = INVALID_JOINTS if exc.cause == "duplicate_joint" else INVALID_GOAL
            raise EnrichmentError(f"invalid trajectory: {exc}", code) from None
        if len(data.times) == 0:
            raise EnrichmentError("the trajectory has no points")
        names = data.joint_names
        unknown = [j for j in names if j not in self._index and j not in self._mimic]
        dependent = [j for j in unknown if j in self._dependent]
        if dependent:
            raise EnrichmentError(
                f"trajectory joints {dependent} are dependent joints of the closed loops: they "
                f"follow the actuated joints {list(self._names)}; a trajectory names only "
                "those", INVALID_JOINTS)
        if unknown:
            raise EnrichmentError(f"trajectory joints {unknown} are not joints of the robot "
                                  f"model (it has {list(self._names)})", INVALID_JOINTS)
        missing = [j for j in self._names if j not in names]
        if missing:
            raise EnrichmentError(
                f"trajectory lacks joints {missing} of the robot model: the inverse dynamics "
                f"needs every joint; model only the driven joints (parameters tip_link, "
                f"locked_joints) or send them all", INVALID_JOINTS)
        keep = [i for i, j in enumerate(names) if j in self._index]
        if len(keep) != len(names):
            data = data.select(keep)             # mimic joints: JTC does not command them
            names = data.joint_names
        cols = np.array([self._index[j] for j in names])   # goal column -> model index
        qs = self._desired(data)                 # (N, 5, n) in the goal's order
        times, waypoints = qs[1]
        qs = qs[0]
        model_qs = np.empty_like(qs)
        model_qs[:, :, cols] = qs
        bad = ~np.isfinite(qs)
        if bad.any():                            # the spline overflowed between waypoints
            k, r, j = np.argwhere(bad)[0]
            what = ("position", "velocity", "acceleration", "jerk", "snap")[r]
            raise EnrichmentError(f"the spline's {what} of joint {names[j]!r} at t = "
                                  f"{times[k]:.6g} s is not finite (extreme waypoints?); nothing "
                                  "forwarded")
        try:
            with np.errstate(all="ignore"):
                if self.output == "effort":     # τ only: batch RNEA (no τ', τ'' needed)
                    q, qd, qdd = (np.ascontiguousarray(model_qs[:, r]) for r in range(3))
                    rows = (q, qd, qdd, self.robot.inverse_dynamics(q, qd, qdd))
                else:
                    res = feedforward(self.robot, model_qs, self.actuator)
                    rows = (res.theta, res.theta_dot, res.theta_ddot, res.tau_motor)
        except ArithmeticError as exc:           # e.g. the VSA spring cannot be inverted
            raise EnrichmentError(f"the actuator model fails along the trajectory: {exc}") \
                from None
        except ValueError as exc:                # the dynamics refuses a sample
            raise EnrichmentError(f"the dynamics fails along the trajectory: {exc}") from None
        pos, vel, acc, eff = (np.ascontiguousarray(np.asarray(r)[:, cols]) for r in rows)
        for what, arr in (("positions", pos), ("velocities", vel), ("accelerations", acc),
                          ("effort", eff)):
            bad = ~np.isfinite(arr)
            if bad.any():
                k, j = np.argwhere(bad)[0]
                raise EnrichmentError(f"the enriched {what} of joint {names[j]!r} at "
                                      f"t = {times[k]:.6g} s is not finite (extreme "
                                      f"waypoints?); nothing forwarded")
        return EnrichedTrajectory(names, times, pos, vel, acc, eff, waypoints, self.output)

    def _desired(self, data):
        """((N, 5, m) q..q'''' at the sample times, (times, waypoint indices))."""
        m = len(data.joint_names)
        if len(data.times) == 1:
            qs = np.zeros((1, 5, m))
            qs[0, 0] = data.positions[0]
            for r, given in ((1, data.velocities[0]), (2, data.accelerations[0])):
                if given is not None:
                    qs[0, r] = given
            return qs, (data.times.copy(), np.zeros(1, dtype=int))
        span = data.times[-1] - data.times[0]
        if self.sample_period > 0.0 and span / self.sample_period + len(data.times) \
                > self.max_points:
            raise EnrichmentError(
                f"{span:g} s at sample_period {self.sample_period:g} s gives more than "
                f"{self.max_points} points; raise sample_period")
        if len(data.times) > self.max_points:
            raise EnrichmentError(f"the trajectory has {len(data.times)} points, more than "
                                  f"{self.max_points}")
        try:
            with np.errstate(all="ignore"):
                traj = data.to_trajectory()
                times, waypoints = sample_times(data.times, self.sample_period)
                qs = traj.sample_many(times)
        except TrajectoryError as exc:
            raise EnrichmentError(f"invalid trajectory: {exc}") from None
        return qs, (times, waypoints)
