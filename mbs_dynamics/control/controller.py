"""The ROS-free feedforward controller core: latest inputs + time → what to publish.

This module owns the *policy* of the feedforward node; the ROS layer
(:mod:`mbs_dynamics.ros`) only converts messages to the plain Python/NumPy values taken here and
publishes what :meth:`FeedforwardController.update` returns. It never imports ``rclpy``, so the
whole decision logic runs (and is tested) without ROS.

Decisions, once per control cycle (:meth:`FeedforwardController.update`):

* **trajectory** — an accepted trajectory is active at ``now``: sample the desired
  ``q, q', q'', q''', q''''`` (a C⁴ :class:`~mbs_dynamics.trajectory.Trajectory`) and compute
  ``τ, τ', τ''`` by the recursive derivatives of doc/math.md ("Recursive time derivatives of any
  order", K = 2); with an elastic actuator also the motor references ``θ, θ', θ'', τ_m``
  (doc/math.md, "Flatness feedforward": ``θ = q + K⁻¹τ`` …);
* **hold** — no trajectory running. After a trajectory has ended, its last point is held (as
  joint_trajectory_controller does): ``τ = Q_grav(q_final)`` (seed 004 eq. 25–26),
  ``τ' = τ'' = 0``, desired position ``q_final``, desired velocity 0 (and, with an elastic
  actuator, the motor references at rest at ``q_final``). Before any trajectory and after a
  cancel: gravity compensation at the *measured* pose, desired position = measured position;
* **none** — nothing is published: no joint state yet, the latest joint state is older than
  ``joint_state_timeout`` or stamped further than that in the future, the clock jumped back
  (until a joint state stamped on the new timeline arrives), the time is not finite, or a result
  would not be finite.

Inputs are checked where they arrive; a bad input is dropped (the previous good one stays in
force) and counted in :attr:`FeedforwardController.rejections` under its cause (see
:data:`REJECTION_CAUSES`). No method raises on bad *data*; only programming errors at construction
(wrong ``joints``, wrong actuator size) raise ``ValueError``.

Joint names: a joint state may carry extra joints (grippers, other arms, mimic joints) in any
order; every joint of the model must be present. A trajectory may name any subset of the model's
joints that contains every controlled joint; model joints the trajectory does not name are taken
at the held position (or the measured one when nothing is held), at rest. Mimic joints of the
robot (``robot.mimic_joints``, when the model has them) are ignored in a trajectory: they follow
their master. Any other name the model does not know is rejected (``unknown_joint``), as
joint_trajectory_controller does. On a closed-loop robot
(:class:`~mbs_dynamics.loops.robot.ClosedLoopRobot`) the model's joints are the actuated ones: a
joint state may carry every joint of the mechanism (the dependent ones are ignored) or only the
actuated ones, and a trajectory naming a dependent joint is rejected (``unknown_joint``, the
message says it is dependent). Trajectories are parsed by
:func:`mbs_dynamics.trajectory.parse_joint_trajectory`, the package's one parser.

Time: every time is a float in seconds on one clock (the node's clock, so ``use_sim_time``
works). A trajectory whose start time is ``0`` starts at the ``now`` given with it, as
joint_trajectory_controller does for a zero header stamp. If its first point lies after
``time_from_start = 0``, the measured position is prepended at time 0 (at rest), so the motion
starts where the robot is.

Threading: every public method takes an internal lock, so a model swap (:meth:`swap_robot`) from
another thread is atomic with respect to :meth:`update`. The returned :class:`Output` is reused and
overwritten by the next :meth:`update`: copy what you keep.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Mapping

import numpy as np

from .feedforward import require_fixed_base
from .trajectory import Trajectory, TrajectoryError, parse_joint_trajectory

__all__ = ["FeedforwardController", "Output", "REJECTION_CAUSES", "MODES"]

#: Causes under which dropped inputs and suppressed cycles are counted.
REJECTION_CAUSES = (
    "non_finite",          # NaN or inf in a joint state or trajectory field (or its stamp)
    "wrong_size",          # field lengths disagree with the joint names / each other
    "unknown_joint",       # a trajectory names a joint the model does not have
    "missing_joint",       # a message lacks a joint the controller needs
    "duplicate_joint",     # a joint name appears twice in one message
    "time_order",          # trajectory times negative or not strictly increasing
    "expired_trajectory",  # the trajectory ended before it was received
    "invalid",             # anything else malformed (types, too few points, spline failure)
    "no_joint_state",      # update(): no joint state received yet
    "stale_joint_state",   # update(): the latest joint state is older than the timeout
    "future_joint_state",  # update(): the latest joint state is stamped > timeout in the future
    "clock_jump",          # update(): the time went backwards (e.g. /clock reset); inputs dropped
    "bad_time",            # update()/set_*(): a time that is not a finite number
    "non_finite_output",   # update(): a computed output would not be finite; nothing published
    "actuator_error",      # update(): the actuator model failed (e.g. VSA spring inversion)
    "internal_error",      # update(): an unexpected exception, caught; nothing published
)

#: What :meth:`FeedforwardController.update` decided.
MODES = ("trajectory", "hold", "none")

_NDERIV = 5  # q, q', q'', q''', q''''
_NTAU = 3    # tau, tau', tau''


class Output:
    """The decision of one control cycle, in the controller's ``joints`` order.

    All arrays are preallocated once and overwritten by every :meth:`FeedforwardController.update`.

    Attributes:
        valid: True when something should be published (mode ``trajectory`` or ``hold``).
        mode: ``'trajectory'``, ``'hold'`` or ``'none'``.
        time: the ``now`` of this cycle [s].
        joint_names: tuple of the m controlled joint names (the order of every array).
        q: (m,) desired position [rad or m] (hold: the held last point, or the measured
            position when nothing is held).
        qd: (m,) desired velocity (hold: 0).
        taus: (3, m) rows τ, τ', τ'' [N·m, N·m/s, N·m/s²]; ``tau``, ``tau_dot``, ``tau_ddot``
            are views of its rows.
        motor: (4, m) rows θ, θ', θ'', τ_m when an actuator is configured, else None;
            ``theta``, ``theta_dot``, ``theta_ddot``, ``tau_motor`` are views of its rows.
        trajectory_time: time since the active trajectory's start [s] (NaN outside trajectory
            mode).
        buffer: (5, m) or (9, m) array of which all the arrays above are row views.
    """

    __slots__ = ("valid", "mode", "time", "joint_names", "buffer", "q", "qd", "taus", "tau",
                 "tau_dot",
                 "tau_ddot", "motor", "theta", "theta_dot", "theta_ddot", "tau_motor",
                 "trajectory_time")

    def __init__(self, joint_names, with_motor):
        m = len(joint_names)
        self.valid = False
        self.mode = "none"
        self.time = math.nan
        self.joint_names = tuple(joint_names)
        # one buffer, so one finiteness check covers every output: rows q, q', τ, τ', τ''
        # [, θ, θ', θ'', τ_m]; every attribute below is a C-contiguous view of it
        self.buffer = np.zeros((9 if with_motor else 5, m))
        self.q, self.qd = self.buffer[0], self.buffer[1]
        self.taus = self.buffer[2:5]
        self.tau, self.tau_dot, self.tau_ddot = self.taus
        self.trajectory_time = math.nan
        if with_motor:
            self.motor = self.buffer[5:9]
            self.theta, self.theta_dot, self.theta_ddot, self.tau_motor = self.motor
        else:
            self.motor = self.theta = self.theta_dot = self.theta_ddot = self.tau_motor = None


class _ModelState:
    """Everything that depends on the robot model: index maps and work arrays (built off-line)."""

    def __init__(self, robot, joints):
        require_fixed_base(robot, "FeedforwardController")
        names = tuple(robot.joint_names)
        self.robot = robot
        self.n = n = len(names)
        self.names = names
        self.index = {name: i for i, name in enumerate(names)}
        missing = [j for j in joints if j not in self.index]
        if missing:
            raise ValueError(f"joints {missing} are not movable joints of the robot "
                             f"(it has {list(names)})")
        self.ctrl = np.array([self.index[j] for j in joints], dtype=np.intp)
        self.identity = bool(len(joints) == n and np.array_equal(self.ctrl, np.arange(n)))
        self.qs = np.zeros((_NDERIV, n))       # desired q..q'''' (model order)
        self.taus = np.zeros((_NTAU, n))       # τ, τ', τ'' (model order)
        self.q_meas = np.zeros(n)              # latest measured position (model order)
        self.q_hold = np.zeros(n)              # held last trajectory point (model order)
        self.finite = np.zeros((_NDERIV, n), dtype=bool)   # finiteness work array
        mimic = getattr(robot, "mimic_joints", None)
        self.mimic = dict(mimic) if isinstance(mimic, Mapping) else {}
        # a ClosedLoopRobot: names are the actuated joints; the dependent ones follow them
        self.dependent = frozenset(getattr(robot, "dependent_joint_names", ()))
        self.js_names = None                   # names tuple of the joint state the map is for
        self.js_map = None                     # (n,) message index of every model joint


class _ActiveTrajectory:
    """An accepted trajectory with its start time and the map of its columns into the model."""

    __slots__ = ("traj", "start", "end", "cols", "full", "buf")

    def __init__(self, traj, start, model):
        self.traj = traj
        self.start = start
        self.end = float(traj.times[-1])
        self.remap(model)

    def remap(self, model):
        """Map trajectory columns to model joints (raises KeyError on an unknown joint)."""
        self.cols = np.array([model.index[j] for j in self.traj.joint_names], dtype=np.intp)
        self.full = bool(len(self.cols) == model.n
                         and np.array_equal(self.cols, np.arange(model.n)))
        self.buf = np.zeros((_NDERIV, len(self.cols)))


class _Rejected(Exception):
    """Internal: an input is dropped under ``cause``."""

    def __init__(self, cause, message=""):
        super().__init__(message or cause)
        self.cause = cause


class FeedforwardController:
    """Feedforward torque (and motor reference) decisions from the latest inputs.

    Args:
        robot: a fixed-base :class:`mbs_dynamics.Robot`. Used only by this controller (a Robot
            serves one thread at a time; pass ``robot.copy()`` if it is shared).
        joints: names of the controlled joints, in output order (a subset of
            ``robot.joint_names``); default: all joints in model order.
        actuator: None (rigid) or an actuator with ``reference(qs, taus, out)`` for m joints, as
            built by :func:`mbs_dynamics.actuators.actuator_from_params` (qs (5, m), taus (3, m)
            → (4, m) rows θ, θ', θ'', τ_m).
        joint_state_timeout: a joint state older than this [s], or stamped more than this in
            the future, stops the output; ``0`` or ``inf`` disables the check.
        stats_window: number of recent compute times kept for :meth:`compute_stats`.

    Raises:
        ValueError: a floating-base robot; unknown or duplicate ``joints``; a negative or NaN
            timeout; an actuator that does not accept the joint count.

    Example:
        >>> ctl = FeedforwardController(robot)
        >>> ctl.set_joint_state(robot.joint_names, q, stamp=0.0)
        True
        >>> out = ctl.update(0.001)
        >>> out.mode, out.tau.shape
        ('hold', (7,))
    """

    def __init__(self, robot, joints=None, actuator=None, joint_state_timeout=0.1,
                 stats_window=1000):
        joints = tuple(robot.joint_names) if joints is None or len(joints) == 0 else tuple(joints)
        if len(set(joints)) != len(joints):
            raise ValueError(f"joints {list(joints)} contain duplicates")
        self._joints = joints
        self._model = _ModelState(robot, joints)
        m = len(joints)
        self._actuator = actuator
        self._out = Output(joints, actuator is not None)
        self._qs_c = np.zeros((_NDERIV, m))          # desired q..q'''' of controlled joints
        self._finite = np.zeros(self._out.buffer.shape, dtype=bool)   # finiteness work array
        if actuator is not None:
            self._check_actuator(actuator, m)
        self._lock = threading.Lock()
        self.joint_state_timeout = joint_state_timeout
        # latest joint state (raw, so a model swap can re-map it) and its stamp
        self._js_raw = None
        self._js_stamp = None
        self._active = None
        self._holding = False            # a finished trajectory's last point is held
        self._last_now = None            # latest update() time, to detect a clock jump back
        self.clock_jumps = 0
        self.rejections = dict.fromkeys(REJECTION_CAUSES, 0)
        self.last_rejection = ""
        self.cycles = dict.fromkeys(MODES, 0)
        self.trajectories_accepted = 0
        self.trajectories_completed = 0
        self.robot_swaps = 0
        self._window = np.zeros(max(int(stats_window), 1))
        self._window_count = 0

    # -- configuration ------------------------------------------------------------------------
    @property
    def joints(self):
        """tuple[str]: controlled joints, the order of every output array."""
        return self._joints

    @property
    def robot(self):
        """The robot model in use."""
        return self._model.robot

    @property
    def actuator(self):
        """The actuator model (None for a rigid robot)."""
        return self._actuator

    @property
    def joint_state_timeout(self):
        """float: maximum joint state age [s]; ``inf`` when disabled."""
        return self._timeout

    @joint_state_timeout.setter
    def joint_state_timeout(self, value):
        try:
            value = float(value)
        except (TypeError, ValueError, OverflowError):
            raise ValueError(f"joint_state_timeout must be a number of seconds >= 0, got "
                             f"{value!r:.60}") from None
        if math.isnan(value) or value < 0.0:
            raise ValueError(f"joint_state_timeout must be >= 0 s (0 disables the check), "
                             f"got {value}")
        self._timeout = math.inf if value == 0.0 else value

    @property
    def has_trajectory(self):
        """bool: a trajectory is accepted and not yet finished."""
        return self._active is not None

    @property
    def desired(self):
        """(5, n) view of the last cycle's desired q and its first four time derivatives in
        *model* order (``robot.joint_names``): the trajectory's jet, or in a hold the held (or
        measured) pose at rest. Overwritten by the next :meth:`update`."""
        return self._model.qs

    @property
    def holding_last_point(self):
        """bool: the last point of a finished trajectory is held (else hold = measured pose)."""
        return self._holding

    @staticmethod
    def _check_actuator(actuator, m):
        # one call on a rest state catches a wrong size now rather than at 1 kHz
        qs = np.zeros((_NDERIV, m))
        taus = np.zeros((_NTAU, m))
        ref = np.zeros((4, m))
        try:
            actuator.reference(qs, taus, out=ref)
        except Exception as exc:  # noqa: BLE001 - re-raised with context
            raise ValueError(f"actuator does not accept {m} joints: {exc}") from exc

    def swap_robot(self, robot):
        """Use a new robot model from the next cycle on (a new robot_description).

        The new model's index maps and work arrays are built before the lock is taken; the swap
        itself is a reference assignment. The latest joint state is re-mapped to the new model
        and the active trajectory kept when the new model has all its joints (else it is dropped).

        Args:
            robot: the new :class:`mbs_dynamics.Robot`.

        Raises:
            ValueError: the new model lacks a controlled joint (the old model stays in use).
        """
        model = _ModelState(robot, self._joints)
        with self._lock:
            old = self._model
            if self._holding:
                if all(name in old.index for name in model.names):
                    model.q_hold[:] = old.q_hold[[old.index[nm] for nm in model.names]]
                else:
                    self._holding = False       # the held point does not cover the new model
            self._model = model
            self.robot_swaps += 1
            if self._active is not None:
                try:
                    self._active.remap(model)
                except KeyError:
                    self._active = None
            if self._js_raw is not None:
                names, pos, vel, stamp = self._js_raw
                try:
                    self._store_joint_state(names, pos, vel, stamp)
                except _Rejected as rej:
                    self._count(rej.cause, str(rej))
                    self._js_stamp = None
                except Exception as exc:  # noqa: BLE001 - never let bad data escape
                    self._count("invalid", f"joint state: {exc}")
                    self._js_stamp = None

    # -- inputs -------------------------------------------------------------------------------
    def set_joint_state(self, names, positions, velocities=None, stamp=0.0):
        """Store the latest measured joint state.

        Args:
            names: joint names of the message (may contain extra joints, any order).
            positions: positions, one per name.
            velocities: None/empty (not given) or one per name; stored for completeness, the
                hold decision needs positions only.
            stamp: time the state refers to / was received [s], on the controller's clock.

        Returns:
            bool: True when stored; False when rejected (counted by cause).
        """
        with self._lock:
            try:
                self._store_joint_state(names, positions, velocities, stamp)
                return True
            except _Rejected as rej:
                self._count(rej.cause, str(rej))
            except Exception as exc:  # noqa: BLE001 - never let bad data escape
                self._count("invalid", f"joint state: {exc}")
            return False

    def _store_joint_state(self, names, positions, velocities, stamp):
        model = self._model
        stamp = _finite_time(stamp, "joint state stamp")
        if isinstance(names, str):
            raise _Rejected("invalid", "joint state names must be a list of strings")
        names = tuple(names)
        try:
            pos = np.asarray(positions, dtype=float)
        except (TypeError, ValueError, OverflowError):
            raise _Rejected("invalid", "joint state positions must be numbers") from None
        if pos.ndim != 1 or pos.shape[0] != len(names):
            raise _Rejected("wrong_size", f"joint state has {len(names)} names but "
                                          f"positions of shape {pos.shape}")
        vel = None
        if velocities is not None and len(velocities) != 0:
            try:
                vel = np.asarray(velocities, dtype=float)
            except (TypeError, ValueError, OverflowError):
                raise _Rejected("invalid", "joint state velocities must be numbers") from None
            if vel.ndim != 1 or vel.shape[0] != len(names):
                raise _Rejected("wrong_size", f"joint state has {len(names)} names but "
                                              f"velocities of shape {vel.shape}")
        if names != model.js_names:
            model.js_map = self._joint_state_map(names, model)
            model.js_names = names
        q = np.take(pos, model.js_map)
        if not np.isfinite(q).all():
            raise _Rejected("non_finite", "joint state positions contain NaN or inf")
        if vel is not None and not np.isfinite(np.take(vel, model.js_map)).all():
            raise _Rejected("non_finite", "joint state velocities contain NaN or inf")
        model.q_meas[:] = q
        self._js_raw = (names, pos, vel, stamp)
        self._js_stamp = stamp

    @staticmethod
    def _joint_state_map(names, model):
        where = {}
        for i, name in enumerate(names):
            if not isinstance(name, str):
                raise _Rejected("invalid", f"joint state name {i} is not a string")
            if name in where:
                raise _Rejected("duplicate_joint", f"joint state names {name!r} twice")
            where[name] = i
        missing = [j for j in model.names if j not in where]
        if missing:
            raise _Rejected("missing_joint", f"joint state lacks joints {missing}")
        return np.array([where[j] for j in model.names], dtype=np.intp)

    def set_trajectory(self, trajectory, now, start_time=0.0):
        """Accept a new trajectory, replacing the active one (as joint_trajectory_controller).

        The spline is built outside the lock, so a concurrent :meth:`update` is not delayed by it.

        Args:
            trajectory: a JointTrajectory-shaped mapping (``joint_names``, ``points`` with
                ``time_from_start``, ``positions``, optional ``velocities``/``accelerations``;
                see :meth:`Trajectory.from_dict`) or a
                :class:`~mbs_dynamics.trajectory.Trajectory`.
                A mapping without points cancels the active trajectory (hold), as in
                joint_trajectory_controller.
            now: current time [s].
            start_time: time at which ``time_from_start = 0`` [s]; ``0`` means ``now``.

        Returns:
            bool: True when accepted (or an empty trajectory cancelled the active one).
        """
        try:
            with self._lock:
                model = self._model
                q_meas = model.q_meas.copy() if self._js_stamp is not None else None
            active = self._build_trajectory(trajectory, now, start_time, model, q_meas)
            with self._lock:
                if active is None:
                    self._active = None          # empty trajectory: cancel, hold measured
                    self._holding = False
                    return True
                if self._model is not model:     # swapped meanwhile: map to the new model
                    try:
                        active.remap(self._model)
                    except KeyError as exc:
                        raise _Rejected("unknown_joint", f"trajectory joint {exc} is not "
                                                         "in the new model") from None
                self._active = active
                self.trajectories_accepted += 1
                return True
        except _Rejected as rej:
            with self._lock:
                self._count(rej.cause, str(rej))
        except Exception as exc:  # noqa: BLE001 - never let bad data escape
            with self._lock:
                self._count("invalid", f"trajectory: {exc}")
        return False

    def clear_trajectory(self):
        """Cancel: drop the active trajectory and any held point; the next cycles hold the
        measured pose."""
        with self._lock:
            self._active = None
            self._holding = False

    def _build_trajectory(self, trajectory, now, start_time, model, q_meas):
        now = _finite_time(now, "now")
        start_time = _finite_time(start_time, "trajectory start time")
        start = now if start_time == 0.0 else start_time
        if isinstance(trajectory, Trajectory):
            traj = trajectory
            keep = self._columns(traj.joint_names, model)
            if len(keep) != len(traj.joint_names):
                raise _Rejected("invalid", "a Trajectory object must not name mimic joints")
        elif isinstance(trajectory, Mapping):
            points = trajectory.get("points", ())
            if points is None or len(points) == 0:
                return None
            traj = self._parse(trajectory, model, q_meas)
        else:
            raise _Rejected("invalid", f"a trajectory must be a mapping or a Trajectory, "
                                       f"got {type(trajectory).__name__}")
        end = start + float(traj.times[-1])
        if not math.isfinite(end):
            raise _Rejected("non_finite", "trajectory end time is not finite")
        if end < now:
            raise _Rejected("expired_trajectory",
                            f"trajectory ended {now - end:.3f} s before it was received")
        return _ActiveTrajectory(traj, start, model)

    def _columns(self, names, model):
        """Indices of the trajectory columns to use: the model's joints (mimic joints dropped).

        Raises _Rejected for an unknown joint or a missing controlled joint.
        """
        unknown = [j for j in names if j not in model.index and j not in model.mimic]
        dependent = [j for j in unknown if j in model.dependent]
        if dependent:
            raise _Rejected("unknown_joint", f"trajectory names dependent joints {dependent} of "
                                             "the closed loops: they follow the actuated joints "
                                             f"{list(model.names)}; name only those")
        if unknown:
            raise _Rejected("unknown_joint", f"trajectory names unknown joints {unknown} "
                                             f"(the model has {list(model.names)})")
        missing = [j for j in self._joints if j not in names]
        if missing:
            raise _Rejected("missing_joint", f"trajectory lacks controlled joints {missing}")
        return [i for i, j in enumerate(names) if j in model.index]

    def _parse(self, msg, model, q_meas):
        """Parse a JointTrajectory mapping into a Trajectory, classifying every defect by cause."""
        try:
            data = parse_joint_trajectory(msg, strict=False)
        except TrajectoryError as exc:
            raise _Rejected(exc.cause, f"trajectory: {exc}") from None
        keep = self._columns(data.joint_names, model)
        if len(keep) != len(data.joint_names):
            data = data.select(keep)             # mimic joints follow their master
        if data.times[0] > 0.0:
            # start where the robot is: prepend the measured position, at rest, at t = 0
            if q_meas is None:
                raise _Rejected("no_joint_state", "trajectory starts after t = 0 but no joint "
                                                  "state has been received to start from")
            data = data.prepend(0.0, q_meas[[model.index[j] for j in data.joint_names]])
        if len(data.times) < 2:
            raise _Rejected("invalid", "a trajectory needs two points, or one point after "
                                       "time_from_start = 0")
        try:
            with np.errstate(all="ignore"):
                traj = data.to_trajectory()
                # extreme inputs can overflow the spline: probe it before accepting it
                probe = traj.sample_many(np.linspace(data.times[0], data.times[-1], 101))
        except TrajectoryError as exc:
            raise _Rejected(exc.cause, f"trajectory: {exc}") from None
        except ValueError as exc:
            raise _Rejected("invalid", f"trajectory: {exc}") from exc
        if not np.isfinite(probe).all():
            raise _Rejected("non_finite", "trajectory spline overflows (extreme values)")
        return traj

    # -- the control cycle --------------------------------------------------------------------
    def update(self, now):
        """Decide the output of the cycle at ``now``.

        Args:
            now: current time [s] on the clock of the stamps.

        Returns:
            Output: the (reused) output; publish it only when ``output.valid``.
        """
        t0 = time.perf_counter_ns()
        with self._lock:
            out = self._out
            out.valid = False
            out.mode = "none"
            out.trajectory_time = math.nan
            try:
                self._cycle(now, out)
            except _Rejected as rej:
                out.valid = False
                out.mode = "none"
                self._count(rej.cause, str(rej))
            except Exception as exc:  # noqa: BLE001 - the cycle must never raise
                out.valid = False
                out.mode = "none"
                self._count("internal_error", f"update: {exc!r}")
            self.cycles[out.mode] += 1
            self._record((time.perf_counter_ns() - t0) * 1e-9)
        return out

    def _cycle(self, now, out):
        try:
            now = float(now)
        except (TypeError, ValueError, OverflowError):
            now = math.nan
        if not math.isfinite(now):
            self._count("bad_time", "update() time is not finite")
            return
        out.time = now
        if self._last_now is not None and now < self._last_now:
            self._clock_jumped(now)
        self._last_now = now
        if self._js_stamp is None:
            self._count("no_joint_state", "no joint state received yet")
            return
        age = now - self._js_stamp
        if age > self._timeout:
            self._count("stale_joint_state", f"latest joint state is {age:.3f} s old")
            return
        if -age > self._timeout:
            self._count("future_joint_state",
                        f"latest joint state is stamped {-age:.3f} s in the future")
            return
        model = self._model
        active = self._active
        if active is not None and now > active.start + active.end:
            self._finish(active, model)         # finished: hold its last point
            active = None
        if active is not None and now >= active.start:
            self._trajectory_cycle(now - active.start, active, model, out)
        else:
            self._hold_cycle(model, out)
        if not self._outputs_finite(out):
            out.valid = False
            out.mode = "none"
            self._count("non_finite_output", "computed output is not finite; suppressed")
            return
        out.valid = True

    def _clock_jumped(self, now):
        """The time went back (simulator reset, bag loop): drop the old timeline's inputs.

        The joint state is kept only when it is fresh on the new timeline; the active trajectory
        and the held point are dropped (the robot was most likely reset).
        """
        jump = self._last_now - now
        self.clock_jumps += 1
        self._active = None
        self._holding = False
        if self._js_stamp is not None and not 0.0 <= now - self._js_stamp <= self._timeout:
            self._js_stamp = None
            self._js_raw = None
        self._count("clock_jump", f"time jumped back by {jump:.3f} s; waiting for joint states "
                                  "on the new timeline")

    def _finish(self, active, model):
        """The active trajectory ended: hold its last point (other joints where they were)."""
        hold = model.q_hold
        if not self._holding:
            hold[:] = model.q_meas
        hold[active.cols] = active.traj.positions[-1]
        self._holding = True
        self._active = None
        self.trajectories_completed += 1

    def _trajectory_cycle(self, t, active, model, out):
        qs = model.qs
        if active.full:
            active.traj.sample(t, out=qs)
        else:
            # joints the trajectory does not name: held (or measured) position, at rest
            qs[0] = model.q_hold if self._holding else model.q_meas
            qs[1:] = 0.0
            active.traj.sample(t, out=active.buf)
            qs[:, active.cols] = active.buf
        if not np.isfinite(qs, out=model.finite).all():
            raise _Rejected("non_finite_output", "desired trajectory state is not finite")
        try:
            model.robot.torque_derivatives(qs, out=model.taus)
        except ValueError as exc:   # finite but huge inputs: the kernels refuse an overflow
            raise _Rejected("non_finite_output", f"torque derivatives: {exc}") from None
        self._gather(model, out)
        out.mode = "trajectory"
        out.trajectory_time = t

    def _hold_cycle(self, model, out):
        qs = model.qs
        q = model.q_hold if self._holding else model.q_meas
        qs[0] = q
        qs[1:] = 0.0
        try:
            model.robot.gravity_torques(q, out=model.taus[0])
        except ValueError as exc:
            raise _Rejected("non_finite_output", f"gravity torques: {exc}") from None
        model.taus[1:] = 0.0
        self._gather(model, out)
        out.mode = "hold"

    def _gather(self, model, out):
        """Model-order results → controlled-joint order; motor references if configured."""
        # mode="clip": no temporary buffer (the indices are valid by construction)
        np.take(model.qs, model.ctrl, axis=1, out=self._qs_c, mode="clip")
        out.buffer[0:2] = self._qs_c[0:2]
        np.take(model.taus, model.ctrl, axis=1, out=out.taus, mode="clip")
        if self._actuator is not None:
            try:
                self._actuator.reference(self._qs_c, out.taus, out=out.motor)
            except Exception as exc:  # noqa: BLE001 - e.g. SpringInversionError
                raise _Rejected("actuator_error", f"actuator reference: {exc}") from None

    def _outputs_finite(self, out):
        return bool(np.isfinite(out.buffer, out=self._finite).all())

    # -- bookkeeping --------------------------------------------------------------------------
    def _count(self, cause, message):
        self.rejections[cause] += 1
        self.last_rejection = f"{cause}: {message}"

    def _record(self, seconds):
        w = self._window
        w[self._window_count % w.shape[0]] = seconds
        self._window_count += 1

    def compute_stats(self):
        """Compute time of recent :meth:`update` calls (wall clock, for diagnostics only).

        Returns:
            dict: ``count`` (cycles in the window), ``p50``, ``p90``, ``p99``, ``max`` [s]
            (NaN when no cycle ran yet).
        """
        with self._lock:
            k = min(self._window_count, self._window.shape[0])
            if k == 0:
                return {"count": 0, "p50": math.nan, "p90": math.nan, "p99": math.nan,
                        "max": math.nan}
            p50, p90, p99 = np.percentile(self._window[:k], (50.0, 90.0, 99.0))
            return {"count": k, "p50": float(p50), "p90": float(p90), "p99": float(p99),
                    "max": float(self._window[:k].max())}

    def diagnostics(self):
        """Return a flat snapshot for /diagnostics: modes, rejections by cause, compute time.

        Returns:
            dict[str, object]: counters and statistics (times in seconds).
        """
        stats = self.compute_stats()
        with self._lock:
            d = {f"cycles.{k}": v for k, v in self.cycles.items()}
            d.update({f"rejected.{k}": v for k, v in self.rejections.items()})
            d["rejected.total"] = sum(self.rejections.values())
            d["last_rejection"] = self.last_rejection
            d["trajectory_active"] = self._active is not None
            d["holding_last_point"] = self._holding
            d["clock_jumps"] = self.clock_jumps
            d["trajectories_accepted"] = self.trajectories_accepted
            d["trajectories_completed"] = self.trajectories_completed
            d["robot_swaps"] = self.robot_swaps
        d.update({f"compute.{k}": v for k, v in stats.items()})
        return d


def _finite_time(value, what):
    try:
        t = float(value)
    except (TypeError, ValueError, OverflowError):
        raise _Rejected("bad_time", f"{what} is not a number") from None
    if not math.isfinite(t):
        raise _Rejected("bad_time", f"{what} is not finite")
    return t
