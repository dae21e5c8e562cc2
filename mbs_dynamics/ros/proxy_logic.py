"""Decisions of ``feedforward_proxy`` that need no ROS (no ``rclpy`` import here; tested in CI).

What joint_trajectory_controller (JTC, ros2_controllers 4.42.1, Jazzy) does, read from its source
(``joint_trajectory_controller.cpp``, ``trajectory.cpp``), and what the proxy does about it:

* **Effort fields.** ``validate_trajectory_msg`` rejects any trajectory point with ``effort``
  unless ``command_interfaces`` contains ``effort`` ([effort] or [position, effort]), logging
  :data:`JTC_EFFORT_REJECTION`; the rejection happens in the goal callback, so the action
  protocol carries no text. :func:`decide_forwarding` reads the controller's
  ``command_interfaces`` (the proxy asks the controller node with rcl_interfaces/GetParameters)
  and decides: enrich, pass through without effort, or refuse with the reason and the fix.
* **Lead-in.** JTC samples a new trajectory from the state it has at its first update
  (``set_point_before_trajectory_msg``: the measured state, velocities/accelerations filled with
  zeros when the hardware has no such state interface but the first point has them), and
  interpolates from there to the first point with ``interpolate_between_points``: linear
  (positions only), cubic (positions + velocities), quintic (positions + velocities +
  accelerations); the effort is interpolated *linearly* from the effort command it was sending
  to the first point's effort. So when the first waypoint has ``time_from_start > 0`` the
  feedforward over the lead-in is a ramp, not the dynamics. :func:`lead_in` inserts the measured
  state at ``t = 0`` and samples JTC's own interpolating polynomial (:func:`jtc_coefficients`,
  quintic for the enriched first point, which has all three fields) every ``sample_period``,
  with effort = ID(q, q̇, q̈) along it. JTC then interpolates between these samples with
  quintics, which reproduce the sampled quintic exactly: what JTC commands over the lead-in is
  that quintic, and its effort is the inverse dynamics at every sample (linearly interpolated
  between samples, as everywhere else on the trajectory).
* **Holding.** After a cancel or an abort JTC holds a message whose point keeps the effort of the
  last *successful* trajectory's end point (``set_success_trajectory_point`` and
  ``set_hold_position`` share one message and the latter overwrites only the positions), or zero
  before any goal succeeded. :func:`hold_point` is the single point (``t = 0``, as JTC's own hold)
  the proxy sends instead: current position, zero velocity and acceleration, effort = g(q).
* **Waiting.** :class:`DoneWaiter` blocks a goal's thread on a :class:`threading.Event` set from
  done callbacks, cancel requests and preemptions, not on a polling loop.
"""

from __future__ import annotations

import threading
import time
from collections import namedtuple

import numpy as np

__all__ = ["JTC_EFFORT_REJECTION", "controller_node_name", "takes_effort", "Forwarding",
           "decide_forwarding", "rejection_reason", "jtc_coefficients", "jtc_sample",
           "lead_in_grid", "lead_in", "hold_point", "JointStateCache", "DoneWaiter",
           "strip_effort"]

#: What JTC (4.42.1) logs when it rejects a trajectory with effort fields.
JTC_EFFORT_REJECTION = ("Trajectories with effort fields are only supported for controllers "
                        "using the 'effort' command interface.")

#: A forwarding decision: ``mode`` "enrich" | "pass_through" | "reject", ``note`` the text for
#: the client (result ``error_string``) and the log ("" when there is nothing to say).
Forwarding = namedtuple("Forwarding", "mode note")


def controller_node_name(action_name):
    """``/joint_trajectory_controller/follow_joint_trajectory`` → ``/joint_trajectory_controller``.

    JTC serves its action as ``~/follow_joint_trajectory``, so the controller node is the action
    name without its last component. Returns "" when there is no such component.
    """
    name = action_name.strip().rstrip("/")
    node, sep, _ = name.rpartition("/")
    if not sep or not node:
        return ""
    return node


def takes_effort(command_interfaces):
    """Does a JTC with these ``command_interfaces`` accept trajectories with ``effort``?

    Args:
        command_interfaces: the controller's parameter value (list of str), or None (unknown).

    Returns:
        True, False, or None when unknown.
    """
    if command_interfaces is None:
        return None
    return "effort" in list(command_interfaces)


def _fix_text(controller, interfaces):
    return (f"{controller} has command_interfaces {list(interfaces)}; JTC takes effort "
            f"feedforward only with command_interfaces [effort] or [position, effort] "
            f"(the hardware must export an effort command interface)")


def decide_forwarding(command_interfaces, pass_through, controller="the controller"):
    """What to do with a goal, given the controller's ``command_interfaces``.

    Args:
        command_interfaces: list of str, or None when they could not be read (then the goal is
            enriched, and a rejection is explained by :func:`rejection_reason`).
        pass_through: the proxy's ``pass_through_without_effort`` parameter.
        controller: the controller's node name, for the text.

    Returns:
        :class:`Forwarding`.
    """
    effort = takes_effort(command_interfaces)
    if effort is None or effort:
        return Forwarding("enrich", "")
    if pass_through:
        return Forwarding("pass_through",
                          f"forwarded without feedforward (pass_through_without_effort): "
                          f"{_fix_text(controller, command_interfaces)}")
    return Forwarding("reject",
                      f"not forwarded: the controller would reject it ('{JTC_EFFORT_REJECTION}'): "
                      f"{_fix_text(controller, command_interfaces)}; or set the proxy's "
                      f"pass_through_without_effort to true to forward goals without "
                      f"feedforward")


def rejection_reason(controller, command_interfaces, lookup_error=""):
    """The ``error_string`` for a goal the controller rejected (its goal callback gives no text).

    Args:
        controller: the controller's node name.
        command_interfaces: its ``command_interfaces`` (list), or None if not read.
        lookup_error: why they could not be read ("" if they were).
    """
    head = f"{controller} rejected the enriched goal"
    effort = takes_effort(command_interfaces)
    if effort is False:
        return f"{head}: '{JTC_EFFORT_REJECTION}' ({_fix_text(controller, command_interfaces)})"
    if effort is None:
        why = f" ({lookup_error})" if lookup_error else ""
        return (f"{head}; its command_interfaces could not be read{why}. If they lack "
                f"'effort', JTC logs '{JTC_EFFORT_REJECTION}'; otherwise see its log (inactive "
                f"controller, joints not the controller's, nonzero velocity at the end with "
                f"allow_nonzero_velocity_at_trajectory_end false, trajectory ending in the past)")
    return (f"{head} (its command_interfaces {list(command_interfaces)} take effort): see its "
            f"log (inactive controller, joints not the controller's, nonzero velocity at the end "
            f"with allow_nonzero_velocity_at_trajectory_end false, trajectory ending in the past)")


def strip_effort(points):
    """Copies of JointTrajectory-shaped points without ``effort`` (for a pass-through)."""
    return [{k: v for k, v in p.items() if k != "effort"} for p in points]


# -- JTC's interpolation (trajectory.cpp, Trajectory::interpolate_between_points) -------------
def jtc_coefficients(p0, p1, duration, v0=None, v1=None, a0=None, a1=None):
    """Coefficients of JTC's polynomial from state a to state b over ``duration`` seconds.

    JTC's rule: velocities on both ends → cubic (positions + velocities) or, with accelerations
    on both ends too, quintic; otherwise linear. The coefficients are JTC's, term by term.

    Args:
        p0, p1: (m,) positions at the start and the end.
        duration: segment length T > 0 [s].
        v0, v1, a0, a1: (m,) or None (field absent).

    Returns:
        (6, m): c with q(s) = Σ c_k s^k, s = time since the start (unused orders are 0).
    """
    p0 = np.asarray(p0, dtype=float)
    p1 = np.asarray(p1, dtype=float)
    c = np.zeros((6, p0.shape[0]))
    T = float(duration)
    has_vel = v0 is not None and v1 is not None
    has_acc = a0 is not None and a1 is not None
    c[0] = p0
    if not has_vel:      # JTC: linear unless velocities are given on both ends
        c[1] = (p1 - p0) / T
        return c
    v0 = np.asarray(v0, dtype=float)
    v1 = np.asarray(v1, dtype=float)
    c[1] = v0
    if not has_acc:      # cubic
        c[2] = (-3.0 * p0 + 3.0 * p1 - 2.0 * v0 * T - v1 * T) / T ** 2
        c[3] = (2.0 * p0 - 2.0 * p1 + v0 * T + v1 * T) / T ** 3
        return c
    a0 = np.asarray(a0, dtype=float)
    a1 = np.asarray(a1, dtype=float)
    c[2] = 0.5 * a0
    c[3] = (-20.0 * p0 + 20.0 * p1 - 3.0 * a0 * T ** 2 + a1 * T ** 2 - 12.0 * v0 * T
            - 8.0 * v1 * T) / (2.0 * T ** 3)
    c[4] = (30.0 * p0 - 30.0 * p1 + 3.0 * a0 * T ** 2 - 2.0 * a1 * T ** 2 + 16.0 * v0 * T
            + 14.0 * v1 * T) / (2.0 * T ** 4)
    c[5] = (-12.0 * p0 + 12.0 * p1 - a0 * T ** 2 + a1 * T ** 2 - 6.0 * v0 * T
            - 6.0 * v1 * T) / (2.0 * T ** 5)
    return c


def jtc_sample(coefficients, s, order=2):
    """q and its time derivatives up to ``order`` of a :func:`jtc_coefficients` polynomial.

    Args:
        coefficients: (6, m).
        s: (N,) times since the segment start [s].
        order: highest derivative (≤ 5).

    Returns:
        (N, order + 1, m).
    """
    s = np.asarray(s, dtype=float)
    c = np.asarray(coefficients, dtype=float)
    out = np.zeros((s.shape[0], order + 1, c.shape[1]))
    for r in range(order + 1):
        for k in range(r, c.shape[0]):
            factor = 1.0
            for j in range(r):
                factor *= k - j
            out[:, r] += factor * c[k][None, :] * s[:, None] ** (k - r)
    return out


def lead_in_grid(t_first, sample_period):
    """Sample times of the lead-in: 0, dt, 2 dt, … before ``t_first`` (exclusive).

    A grid time closer than ``0.1 sample_period`` to ``t_first`` is dropped (as
    :func:`mbs_dynamics.enrich.sample_times` does near waypoints); ``sample_period = 0`` gives
    ``[0]`` only.
    """
    if sample_period <= 0.0:
        return np.zeros(1)
    count = int(np.ceil(t_first / sample_period)) + 1
    grid = sample_period * np.arange(count)
    return grid[grid <= t_first - 0.1 * sample_period] if t_first > 0.1 * sample_period \
        else np.zeros(1)


def lead_in(robot, enriched, state_positions, state_velocities=None, state_accelerations=None,
            sample_period=0.01, tolerance=2.5e-4, min_period=0.001):
    """Prepend JTC's lead-in segment, filled with inverse dynamics, to an enriched trajectory.

    Args:
        robot: the model the trajectory was enriched with (``joint_names``,
            ``inverse_dynamics`` on (N, n) arrays).
        enriched: an ``EnrichedTrajectory`` with ``output == "effort"`` whose first point is
            at ``times[0] > 0`` (the goal's first waypoint).
        state_positions: (m,) measured positions in ``enriched.joint_names`` order.
        state_velocities, state_accelerations: (m,) or None: absent state interfaces count as
            zero, as JTC's ``set_point_before_trajectory_msg`` fills them when the first point
            has them (it always has: the proxy fills every field).
        sample_period: largest spacing of the lead-in samples [s] (0: the state point only).
        tolerance: JTC interpolates the effort linearly between points; the spacing is halved
            (down to ``min_period``) until the effort at every mid-point is within
            ``tolerance`` × (largest |τ| of that joint over the lead-in) of the inverse dynamics
            there, so the feedforward matches the commanded motion between samples too.
        min_period: smallest spacing [s].

    Returns:
        A new trajectory of the same type: the samples at ``t ∈ [0, t_first)``, then the
        original points; ``waypoints`` shifted to keep pointing at the client's waypoints.

    Raises:
        ValueError: ``output`` is not "effort", the first point is at t ≤ 0, the state is not
            finite, or a joint of the model is missing from the trajectory.
    """
    if enriched.output != "effort":
        raise ValueError("the lead-in is filled for output 'effort' only")
    t_first = float(enriched.times[0])
    if not t_first > 0.0:
        raise ValueError("the first point is at t = 0: no lead-in")
    m = len(enriched.joint_names)
    p0 = np.asarray(state_positions, dtype=float).reshape(m)
    v0 = np.zeros(m) if state_velocities is None else \
        np.asarray(state_velocities, dtype=float).reshape(m)
    a0 = np.zeros(m) if state_accelerations is None else \
        np.asarray(state_accelerations, dtype=float).reshape(m)
    if not (np.all(np.isfinite(p0)) and np.all(np.isfinite(v0)) and np.all(np.isfinite(a0))):
        raise ValueError("the measured state is not finite")
    coeff = jtc_coefficients(p0, enriched.positions[0], t_first, v0, enriched.velocities[0],
                             a0, enriched.accelerations[0])
    # goal order → model order for the inverse dynamics, and back
    model = list(robot.joint_names)
    index = {name: i for i, name in enumerate(model)}
    missing = [j for j in model if j not in enriched.joint_names]
    if missing:
        raise ValueError(f"joints {missing} of the model are not in the trajectory")
    cols = np.array([index[j] for j in enriched.joint_names])

    def inverse_dynamics(qs):
        full = np.zeros((qs.shape[0], 3, len(model)))
        full[:, :, cols] = qs
        with np.errstate(all="ignore"):
            return np.asarray(robot.inverse_dynamics(
                *(np.ascontiguousarray(full[:, r]) for r in range(3))))[:, cols]

    period = float(sample_period)
    while True:
        s = lead_in_grid(t_first, period)
        qs = jtc_sample(coeff, s, order=2)
        qs[0, 0], qs[0, 1], qs[0, 2] = p0, v0, a0        # the state itself, exactly
        tau = inverse_dynamics(qs)
        if period <= 0.0 or period <= min_period:
            break
        # mid-points of every segment, the last one ending at the first point
        ends = np.append(s, t_first)
        mid = 0.5 * (ends[:-1] + ends[1:])
        tau_ends = np.vstack((tau, enriched.effort[:1]))
        linear = 0.5 * (tau_ends[:-1] + tau_ends[1:])
        exact = inverse_dynamics(jtc_sample(coeff, mid, order=2))
        scale = np.max(np.abs(tau_ends), axis=0)
        scale = np.maximum(scale, 1e-9 + 1e-3 * float(np.max(scale)))
        if np.all(np.abs(linear - exact) <= tolerance * scale):
            break
        period = max(0.5 * period, min_period)
    if not np.all(np.isfinite(tau)):
        raise ValueError("the lead-in effort is not finite")
    cat = np.concatenate
    return type(enriched)(
        enriched.joint_names, cat((s, enriched.times)), cat((qs[:, 0], enriched.positions)),
        cat((qs[:, 1], enriched.velocities)), cat((qs[:, 2], enriched.accelerations)),
        cat((tau, enriched.effort)), np.asarray(enriched.waypoints) + s.shape[0],
        enriched.output)


def hold_point(robot, names, positions):
    """The single point of a hold goal: at ``positions``, at rest, effort = g(q).

    Args:
        robot: the model (``joint_names``, ``gravity_torques``).
        names: joint names of the goal (every model joint, any order; others are rejected).
        positions: (m,) positions in ``names`` order.

    Returns:
        dict with ``time_from_start`` 0 (as JTC's own hold) and (m,) ``positions``,
        ``velocities`` (0), ``accelerations`` (0), ``effort`` = g(q) arrays.

    Raises:
        ValueError: names not the model's joints, or a non-finite position or torque.
    """
    model = list(robot.joint_names)
    names = list(names)
    if sorted(names) != sorted(model):
        raise ValueError(f"hold joints {names} are not the model's joints {model}")
    q = np.asarray(positions, dtype=float).reshape(len(names))
    if not np.all(np.isfinite(q)):
        raise ValueError("hold position is not finite")
    cols = np.array([model.index(j) for j in names])
    full = np.zeros(len(model))
    full[cols] = q
    g = np.asarray(robot.gravity_torques(full), dtype=float)[cols]
    if not np.all(np.isfinite(g)):
        raise ValueError("gravity torque at the hold position is not finite")
    zero = np.zeros(len(names))
    return {"time_from_start": 0.0, "positions": q, "velocities": zero,
            "accelerations": zero.copy(), "effort": g}


def motor_hold_point(actuator, point):
    """A :func:`hold_point` for a drive commanded on the motor side (``output: motor``): at
    rest, the flatness reference of :mod:`mbs_dynamics.control.actuators` with τ = g(q) and
    all derivatives zero — θ = q + φ⁻¹(g) (SEA: q + K⁻¹g), θ' = θ'' = 0, τ_m = g.

    Args:
        actuator: the SEA/VSA object of the enricher (``reference``).
        point: the dict of :func:`hold_point` (link side, in the model's joint order).

    Returns:
        dict like ``point`` with ``positions`` = θ and ``effort`` = τ_m.

    Raises:
        ValueError: the reference is not finite.
    """
    q = np.asarray(point["positions"], dtype=float)
    n = q.shape[0]
    qs = np.zeros((5, n))
    qs[0] = q
    taus = np.zeros((3, n))
    taus[0] = point["effort"]
    ref = np.asarray(actuator.reference(qs, taus))
    if not np.all(np.isfinite(ref)):
        raise ValueError("motor-side hold reference is not finite")
    zero = np.zeros(n)
    return {"time_from_start": 0.0, "positions": ref[0], "velocities": zero,
            "accelerations": zero.copy(), "effort": ref[3]}


class JointStateCache:
    """The latest measured position/velocity of each joint (from sensor_msgs/JointState).

    Thread-safe. Times are ``time.monotonic()`` seconds of arrival (the wall clock of this
    process, not the ROS clock: staleness is about the transport, and sim time may stand still).
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._pos = {}
        self._vel = {}
        self._when = {}

    def update(self, names, positions, velocities=(), now=None):
        """Store one message; velocities may be empty (unknown)."""
        now = time.monotonic() if now is None else now
        has_vel = len(velocities) == len(names)
        with self._lock:
            for i, name in enumerate(names):
                if i < len(positions):
                    self._pos[name] = float(positions[i])
                    self._vel[name] = float(velocities[i]) if has_vel else None
                    self._when[name] = now

    def get(self, names, max_age, now=None, since=None):
        """(positions, velocities or None, "") for ``names``, or (None, None, reason).

        ``max_age`` ≤ 0 accepts any age; with ``since`` (a ``time.monotonic()`` time) only
        states received at or after it count. Velocities are None unless known for every joint.
        """
        now = time.monotonic() if now is None else now
        with self._lock:
            missing = [j for j in names if j not in self._pos
                       or (since is not None and self._when[j] < since)]
            if missing:
                return None, None, f"no joint state received for {missing}"
            age = max(now - self._when[j] for j in names)
            if max_age > 0 and age > max_age:
                return None, None, f"the latest joint state is {age:.3g} s old (> {max_age:g} s)"
            q = np.array([self._pos[j] for j in names])
            vel = [self._vel[j] for j in names]
        if not np.all(np.isfinite(q)):
            return None, None, "the joint state has non-finite positions"
        if any(v is None for v in vel) or not np.all(np.isfinite(vel)):
            return q, None, ""
        return q, np.array(vel), ""


class DoneWaiter:
    """Block a thread until something it waits for happens: no polling.

    ``notify()`` is called from done callbacks (future results), cancel requests and
    preemptions; :meth:`wait` sleeps on one :class:`threading.Event` and re-checks only when it
    is set, or every ``tick`` seconds to notice a shutdown. ``wakeups`` counts the returns of
    the event wait (the figure the 3,500-per-10-s-goal budget is about).
    """

    def __init__(self, tick=0.5):
        self.event = threading.Event()
        self.tick = float(tick)
        self.wakeups = 0

    def notify(self, *_args):
        """Wake the waiting thread (usable as a done callback: arguments are ignored)."""
        self.event.set()

    def wait(self, done, *, ok=lambda: True, interrupt=lambda: False, on_interrupt=None,
             grace=None, timeout=None):
        """Wait until ``done()`` is true.

        Args:
            done: callable → bool (e.g. ``future.done``).
            ok: callable → bool; False ends the wait (shutdown).
            interrupt: callable → bool: a cancel request or preemption is pending.
            on_interrupt: called on every wake-up while ``interrupt()`` holds (idempotent, e.g.
                cancel the downstream goal once).
            grace: with an interrupt pending, wait at most this long more [s]; None: interrupts
                are ignored.
            timeout: give up after this long [s]; None: never.

        Returns:
            True if ``done()``, False on shutdown, timeout or grace expiry.
        """
        start = time.monotonic()
        give_up = None if timeout is None else start + timeout
        deadline = None
        while True:
            self.event.clear()               # clear first: a notify from now on is not lost
            if done():
                return True
            if not ok():
                return False
            now = time.monotonic()
            if give_up is not None and now >= give_up:
                return False
            if grace is not None and interrupt():
                if on_interrupt is not None:
                    on_interrupt()
                if deadline is None:
                    deadline = now + grace
                elif now >= deadline:
                    return False
            limit = self.tick
            for end in (give_up, deadline):
                if end is not None:
                    limit = min(limit, max(end - now, 0.0))
            self.event.wait(limit)
            self.wakeups += 1
