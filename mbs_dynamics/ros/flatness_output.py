"""The motor-torque output of ``feedforward_node``: the flatness controller in the node's cycle.

Plain Python (no ``rclpy``): the node hands it the latest joint state and motor state messages'
fields and the desired jet its :class:`~mbs_dynamics.control.controller.FeedforwardController`
decided, and publishes the motor torque returned here. The law itself is
:class:`~mbs_dynamics.control.flatness.FlatnessController` (Spong's reduced elastic-joint model,
link position as the flat output); this module only

* maps the measured link state (``joint_states``: position and velocity) and motor state
  (``motor_states``: position θ and velocity θ̇ reflected to the joint side, one entry per joint,
  named as the joint) from message order to model order, and checks them (every joint present,
  finite, fresh); of the last few motor states it takes the one whose header stamp is nearest
  the joint state's (the same sample when both come from one control cycle, as from the MuJoCo
  co-simulation's hardware), else the latest: a motor state one cycle newer than the link state
  would put an error ``K θ̇ T`` into the spring torque the law differentiates;
* chooses the desired jet: the trajectory's q_d … q_d⁗ while a trajectory runs (q_d⁽⁵⁾ the
  backward difference of q_d⁗ over one sample time, as
  :meth:`~mbs_dynamics.control.flatness.FlatnessController.update` does); the held last point at
  rest after it; before any trajectory and after a cancel, the measured pose *latched* at the
  first such cycle (a feedback law that tracked the measured pose would let the arm drift);
* returns u in the node's ``joints`` order, or None with the reason counted.
"""

from __future__ import annotations

import math
from collections import deque

import numpy as np

from ..control.flatness import FlatnessController, FlatnessConfigError

__all__ = ["FlatnessOutput", "FLATNESS_REJECTIONS"]

#: Causes under which a cycle without a motor torque is counted.
FLATNESS_REJECTIONS = ("no_motor_state", "stale_motor_state", "motor_state", "joint_state",
                       "non_finite_output")


def _permute_actuator(params, perm):
    """``actuator.*`` values in ``joints`` order → model order (lists of one value per joint)."""
    m = len(perm)
    out = {}
    for key, value in params.items():
        if isinstance(value, (list, tuple)) and len(value) == m and m > 1:
            value = [value[i] for i in perm]
        out[key] = value
    return out


class FlatnessOutput:
    """The flatness motor torque of one robot model, in the node's joint order.

    Args:
        robot: the node's fixed-base tree robot (model order ``robot.joint_names``).
        joints: the node's ``joints`` (output order); must be every joint of the robot.
        actuator: the ``actuator.*`` values (per-joint lists in ``joints`` order).
        poles: 4 shared values, or one row of 4 per joint in ``joints`` order; or None.
        bandwidth, damping: instead of ``poles`` (see FlatnessController).
        sample_time: the hold period T [s] (SEA lead ``u + (T/2) u̇``); 0: none.
        delay: transport delay d [s] between the states read and the command applied: the
            lead becomes ``(T/2 + d) u̇`` (FlatnessController's ``delay``).

    Raises:
        ValueError: joints not all of the robot's; whatever FlatnessController refuses (rigid
            actuator, right-half-plane poles, a zero or singular K, B <= 0, sizes), with its
            message.
    """

    def __init__(self, robot, joints, actuator, poles=None, bandwidth=None, damping=None,
                 sample_time=0.0, delay=0.0):
        names = list(robot.joint_names)
        if sorted(joints) != sorted(names) or len(joints) != len(names):
            missing = [j for j in names if j not in joints]
            raise ValueError(f"flatness.enabled: the flatness controller commands every joint; "
                             f"joints lacks {missing} (leave joints unset for all)")
        index = {j: i for i, j in enumerate(joints)}
        perm = [index[j] for j in names]            # model position → joints position
        self.ctrl = np.array([names.index(j) for j in joints], dtype=np.intp)
        kw = {}
        if poles is not None:
            p = np.array(poles, dtype=float)
            kw["poles"] = p[perm] if p.ndim == 2 else p
        else:
            kw["bandwidth"] = bandwidth
            kw["damping"] = damping
        try:
            self.controller = FlatnessController(
                robot, actuator=_permute_actuator(dict(actuator), perm),
                sample_time=float(sample_time), delay=float(delay), **kw)
        except FlatnessConfigError as exc:
            raise ValueError(f"flatness: {exc}") from None
        self.sample_time = float(sample_time)
        n = len(names)
        self.names = tuple(names)
        self._maps = {}                            # names tuple → (n,) message indices
        self._x = np.zeros((4, n))                 # q, q̇, θ, θ̇ (model order)
        self._des = np.zeros((6, n))               # q_d … q_d⁽⁵⁾
        self._prev4 = np.zeros(n)
        self._t_prev = -math.inf
        self._latched = None
        self._u = np.zeros(n)
        self.u = np.zeros(n)                       # the last u, joints order
        self._motor = deque(maxlen=4)  # (names, positions, velocities, received, header stamp)
        self.rejections = dict.fromkeys(FLATNESS_REJECTIONS, 0)
        self.last_rejection = ""
        self.published = 0

    def set_motor_state(self, names, positions, velocities, stamp, header_stamp=0.0):
        """Store a motor state (checked when used); the last four are kept.

        Args:
            names, positions, velocities: the message's fields (θ, θ̇ per joint name).
            stamp: when it was received [s] (node clock; the freshness check).
            header_stamp: its header stamp [s] (0: unstamped), to pair it with a joint state.
        """
        self._motor.append((tuple(names), positions, velocities, float(stamp),
                            float(header_stamp)))

    def clear_motor_states(self):
        """Forget the stored motor states."""
        self._motor.clear()

    def _map(self, names):
        m = self._maps.get(names)
        if m is None:
            where = {}
            for i, name in enumerate(names):
                if name in where:
                    raise ValueError(f"names {name!r} twice")
                where[name] = i
            missing = [j for j in self.names if j not in where]
            if missing:
                raise ValueError(f"lacks joints {missing}")
            m = np.array([where[j] for j in self.names], dtype=np.intp)
            if len(self._maps) > 8:
                self._maps.clear()
            self._maps[names] = m
        return m

    def _take(self, what, names, positions, velocities, row):
        names = tuple(names)
        if len(positions) != len(names) or len(velocities) != len(names):
            raise ValueError(f"{what} needs a position and a velocity per name ({len(names)} "
                             f"names, {len(positions)} positions, {len(velocities)} velocities)")
        m = self._map(names)
        np.take(np.asarray(positions, dtype=float), m, out=self._x[row])
        np.take(np.asarray(velocities, dtype=float), m, out=self._x[row + 1])
        if not (np.isfinite(self._x[row]).all() and np.isfinite(self._x[row + 1]).all()):
            raise ValueError(f"{what} is not finite")

    def _reject(self, cause, message):
        self.rejections[cause] += 1
        self.last_rejection = f"{cause}: {message}"
        return None

    def compute(self, now, joint_state, desired, mode, holding_last_point, timeout,
                joint_state_stamp=0.0):
        """The motor torque of this cycle.

        Args:
            now: the cycle time [s] (node clock).
            joint_state: (names, positions, velocities) of the latest joint state.
            desired: (5, n) desired jet in model order from the feedforward controller.
            mode: its decision, ``'trajectory'`` or ``'hold'``.
            holding_last_point: whether the hold is a finished trajectory's last point.
            timeout: maximum motor state age [s] (inf: no check).
            joint_state_stamp: the joint state's header stamp [s] (0: unstamped): the motor
                state nearest in header stamp is used (else the latest).

        Returns:
            (m,) u in ``joints`` order (a buffer reused by the next call), or None (counted).
        """
        if not self._motor:
            return self._reject("no_motor_state", "no motor state received yet")
        ms = self._motor[-1]
        if joint_state_stamp > 0.0:
            best = math.inf
            for cand in self._motor:
                gap = abs(cand[4] - joint_state_stamp)
                if cand[4] > 0.0 and gap < best:
                    ms, best = cand, gap
        names, pos, vel, stamp, _ = ms
        age = now - stamp
        if not abs(age) <= timeout:
            return self._reject("stale_motor_state", f"latest motor state is {age:.3f} s old")
        try:
            self._take("motor state", names, pos, vel, 2)
        except ValueError as exc:
            return self._reject("motor_state", f"motor state: {exc}")
        try:
            self._take("joint state", *joint_state, 0)
        except ValueError as exc:
            return self._reject("joint_state", f"joint state: {exc}")
        des = self._des
        T = self.sample_time
        if mode == "trajectory":
            des[:5] = desired
            self._latched = None
            if T > 0 and abs(now - self._t_prev - T) <= 1e-9 * max(1.0, abs(now)):
                np.subtract(des[4], self._prev4, out=des[5])
                des[5] *= 1.0 / T
            else:
                des[5] = 0.0
            self._prev4[:] = des[4]
            self._t_prev = now
        else:
            self._t_prev = -math.inf
            if holding_last_point:
                self._latched = None
                des[0] = desired[0]
            else:
                if self._latched is None:
                    self._latched = self._x[0].copy()
                des[0] = self._latched
            des[1:] = 0.0
        try:
            self.controller.command(self._x[0], self._x[1], self._x[2], self._x[3], des,
                                    out=self._u)
        except ValueError as exc:
            return self._reject("non_finite_output", str(exc))
        np.take(self._u, self.ctrl, out=self.u)
        self.published += 1
        return self.u

    def diagnostics(self):
        """Counters for /diagnostics (``flatness.*`` keys)."""
        d = {f"flatness.rejected.{k}": v for k, v in self.rejections.items()}
        d["flatness.published"] = self.published
        d["flatness.last_rejection"] = self.last_rejection
        return d
