"""The ROS-free decisions of feedforward_proxy (mbs_dynamics.ros.proxy_logic).

Oracles: JTC's interpolating polynomials solved here from their boundary conditions
(np.linalg.solve on the Hermite conditions, not JTC's closed-form coefficients), a replay of how
JTC samples the forwarded trajectory (trajectory.cpp: quintic between consecutive points when
positions, velocities and accelerations are all given; effort linear), and Pinocchio's RNEA
(skipped without Pinocchio) for the efforts.
"""
from __future__ import annotations

import math
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import mbs_dynamics as mbs
from mbs_dynamics.ros.proxy_logic import (JTC_EFFORT_REJECTION, DoneWaiter, JointStateCache,
                                          controller_node_name, decide_forwarding, hold_point,
                                          jtc_coefficients, jtc_sample, lead_in, lead_in_grid,
                                          rejection_reason, strip_effort, takes_effort)

from mbs_dynamics.control.enrich import TrajectoryEnricher

ARM7 = Path(mbs.__file__).resolve().parent / "data" / "robots" / "arm7.urdf"
NAMES = [f"arm7_joint{i}" for i in range(1, 8)]
Q0 = np.array([0.1, -0.5, 0.2, -1.2, 0.1, 0.8, 0.3])


def _load(path):
    return mbs.load_urdf(str(path))


@pytest.fixture(scope="module")
def robot():
    return _load(ARM7)


@pytest.fixture(scope="module")
def pm():
    pin = pytest.importorskip("pinocchio")
    m = pin.buildModelFromUrdf(str(ARM7))
    assert [m.names[i] for i in range(1, m.njoints)] == NAMES
    return m


def rnea(pm, q, qd, qdd):
    import pinocchio as pin
    return pin.rnea(pm, pm.createData(), np.asarray(q, float), np.asarray(qd, float),
                    np.asarray(qdd, float))


def hermite(p0, p1, T, v0=None, v1=None, a0=None, a1=None):
    """Independent oracle: the polynomial through the boundary conditions, by a linear solve.

    Returns a function s -> (q, q', q'') for one joint (scalars in, scalars out)."""
    rows, rhs = [], []

    def row(s, r, deg):
        return [math.factorial(k) / math.factorial(k - r) * s ** (k - r) if k >= r else 0.0
                for k in range(deg + 1)]
    deg = 1 if v0 is None else (3 if a0 is None else 5)
    conds = [(0.0, 0, p0), (T, 0, p1)]
    if deg >= 3:
        conds += [(0.0, 1, v0), (T, 1, v1)]
    if deg == 5:
        conds += [(0.0, 2, a0), (T, 2, a1)]
    for s, r, value in conds:
        rows.append(row(s, r, deg))
        rhs.append(value)
    c = np.linalg.solve(np.array(rows), np.array(rhs))

    def f(s):
        return tuple(float(np.dot(row(s, r, deg), c)) for r in range(3))
    return f


def goal(times=(1.0, 1.8, 3.0), amp=0.4):
    pts = []
    for k, t in enumerate(times):
        q = Q0 + amp * math.sin(1.3 * (k + 1)) * np.linspace(1.0, 0.4, 7)
        pts.append({"time_from_start": float(t), "positions": q.tolist()})
    return {"joint_names": list(NAMES), "points": pts}


# -- JTC's polynomials --------------------------------------------------------------------------
@pytest.mark.parametrize("fields", ["linear", "cubic", "quintic"])
def test_jtc_coefficients_solve_the_boundary_conditions(fields):
    rng = np.random.default_rng(3)
    p0, p1, v0, v1, a0, a1 = rng.normal(size=(6, 4))
    T = 0.73
    kw = {}
    if fields != "linear":
        kw.update(v0=v0, v1=v1)
    if fields == "quintic":
        kw.update(a0=a0, a1=a1)
    c = jtc_coefficients(p0, p1, T, **kw)
    s = np.linspace(0.0, T, 11)
    got = jtc_sample(c, s, order=2)
    for j in range(4):
        f = hermite(p0[j], p1[j], T, *([kw[k][j] for k in ("v0", "v1")] if kw else [None] * 2),
                    *([kw[k][j] for k in ("a0", "a1")] if "a0" in kw else [None] * 2))
        want = np.array([f(x) for x in s])
        np.testing.assert_allclose(got[:, :, j], want, rtol=1e-10, atol=1e-10)


def test_one_sided_velocity_is_linear_as_in_jtc():
    # JTC: cubic only when *both* ends have velocities
    c = jtc_coefficients([0.0], [1.0], 2.0, v0=[0.3], v1=None)
    np.testing.assert_allclose(c[:, 0], [0.0, 0.5, 0, 0, 0, 0])


def test_lead_in_grid():
    np.testing.assert_allclose(lead_in_grid(0.05, 0.01), [0.0, 0.01, 0.02, 0.03, 0.04])
    g = lead_in_grid(0.0405, 0.01)          # 0.04 is closer than 0.1 dt to 0.0405: dropped
    np.testing.assert_allclose(g, [0.0, 0.01, 0.02, 0.03])
    np.testing.assert_allclose(lead_in_grid(1.0, 0.0), [0.0])
    np.testing.assert_allclose(lead_in_grid(0.0005, 0.01), [0.0])


# -- the lead-in ---------------------------------------------------------------------------------
def _enriched_with_lead_in(robot, state_q, state_v, dt=0.01):
    enriched = TrajectoryEnricher(robot, sample_period=dt).enrich(goal())
    return enriched, lead_in(robot, enriched, state_q, state_v, sample_period=dt)


def test_lead_in_starts_at_the_state_and_follows_jtcs_quintic(robot, pm):
    state_q = Q0 + 0.05
    state_v = np.linspace(-0.1, 0.1, 7)
    enriched, full = _enriched_with_lead_in(robot, state_q, state_v)
    t1 = enriched.times[0]
    L = len(full) - len(enriched)
    assert full.times[0] == 0.0 and L >= 100
    assert np.all(np.diff(full.times[:L + 1]) <= 0.01 + 1e-12)
    # the client's waypoints still index the same times; the original points are unchanged
    np.testing.assert_array_equal(full.times[full.waypoints], enriched.times[enriched.waypoints])
    np.testing.assert_array_equal(full.effort[L:], enriched.effort)
    np.testing.assert_array_equal(full.positions[0], state_q)
    np.testing.assert_array_equal(full.velocities[0], state_v)
    np.testing.assert_array_equal(full.accelerations[0], np.zeros(7))
    # JTC's segment from the state (acceleration absent -> 0) to the enriched first point
    for j in range(7):
        f = hermite(state_q[j], enriched.positions[0, j], t1, state_v[j],
                    enriched.velocities[0, j], 0.0, enriched.accelerations[0, j])
        want = np.array([f(s) for s in full.times[:L]])
        np.testing.assert_allclose(full.positions[:L, j], want[:, 0], atol=1e-12)
        np.testing.assert_allclose(full.velocities[:L, j], want[:, 1], atol=1e-11)
        np.testing.assert_allclose(full.accelerations[:L, j], want[:, 2], atol=1e-10)
    for k in range(L):
        tau = rnea(pm, full.positions[k], full.velocities[k], full.accelerations[k])
        np.testing.assert_allclose(full.effort[k], tau, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("offset, speed", [(0.1, 0.0), (0.6, 0.8)])
def test_what_jtc_commands_over_the_lead_in_gets_the_inverse_dynamics(robot, pm, offset, speed):
    """Replay JTC at 1 kHz over the forwarded lead-in: quintic between consecutive points (all
    fields given), effort linear; the commanded effort must match RNEA along the commanded
    motion to 1e-3 relative (the relative error is measured against max |τ| per joint)."""
    state_q = Q0 - offset
    state_v = speed * np.linspace(1.0, -1.0, 7)
    enriched, full = _enriched_with_lead_in(robot, state_q, state_v)
    t1 = enriched.times[0]
    worst = 0.0
    scale = np.max(np.abs(full.effort[:len(full) - len(enriched) + 1]), axis=0)
    seg = [hermite(state_q[j], enriched.positions[0, j], t1, state_v[j],
                   enriched.velocities[0, j], 0.0, enriched.accelerations[0, j])
           for j in range(7)]
    for t in np.arange(0.0, t1, 0.0007):
        k = int(np.searchsorted(full.times, t, side="right") - 1)
        ta, tb = full.times[k], full.times[k + 1]
        T, s = tb - ta, t - ta
        q, qd, qdd = np.zeros((3, 7))
        for j in range(7):
            f = hermite(full.positions[k, j], full.positions[k + 1, j], T,
                        full.velocities[k, j], full.velocities[k + 1, j],
                        full.accelerations[k, j], full.accelerations[k + 1, j])
            q[j], qd[j], qdd[j] = f(s)
            # JTC's quintic between samples of a quintic is that quintic
            np.testing.assert_allclose((q[j], qd[j], qdd[j]), seg[j](t), atol=1e-8)
        effort = full.effort[k] + (full.effort[k + 1] - full.effort[k]) * s / T
        tau = rnea(pm, q, qd, qdd)
        worst = max(worst, float(np.max(np.abs(effort - tau) / scale)))
    print(f"lead-in worst relative effort error {worst:.2e}")
    assert worst <= 1e-3, worst


def test_lead_in_in_goal_order_and_refusals(robot, pm):
    order = [3, 0, 6, 1, 5, 2, 4]
    g = goal()
    g["joint_names"] = [NAMES[i] for i in order]
    for p in g["points"]:
        p["positions"] = [p["positions"][i] for i in order]
    enriched = TrajectoryEnricher(robot, sample_period=0.05).enrich(g)
    state = (Q0 + 0.02)[order]
    full = lead_in(robot, enriched, state, None, sample_period=0.05)
    inv = np.argsort(order)
    for k in range(len(full) - len(enriched)):
        tau = rnea(pm, full.positions[k][inv], full.velocities[k][inv],
                   full.accelerations[k][inv])
        np.testing.assert_allclose(full.effort[k][inv], tau, rtol=1e-9, atol=1e-9)
    with pytest.raises(ValueError, match="not finite"):
        lead_in(robot, enriched, state * np.nan, None)
    at_zero = TrajectoryEnricher(robot).enrich(goal(times=(0.0, 1.0)))
    with pytest.raises(ValueError, match="no lead-in"):
        lead_in(robot, at_zero, state, None)


# -- hold ----------------------------------------------------------------------------------------
def test_hold_point_is_at_rest_with_the_gravity_torque(robot, pm):
    order = [6, 5, 4, 3, 2, 1, 0]
    names = [NAMES[i] for i in order]
    q = (Q0 + 0.3)[order]
    p = hold_point(robot, names, q)
    assert p["time_from_start"] == 0.0
    np.testing.assert_array_equal(p["positions"], q)
    assert not p["velocities"].any() and not p["accelerations"].any()
    inv = np.argsort(order)
    np.testing.assert_allclose(p["effort"][inv], rnea(pm, q[inv], np.zeros(7), np.zeros(7)),
                               rtol=1e-10, atol=1e-10)
    with pytest.raises(ValueError, match="not the model's joints"):
        hold_point(robot, names[:-1], q[:-1])
    with pytest.raises(ValueError, match="not finite"):
        hold_point(robot, names, q * np.inf)


# -- what to forward -----------------------------------------------------------------------------
def test_forwarding_decisions_follow_jtcs_effort_rule():
    assert takes_effort(["effort"]) and takes_effort(["position", "effort"])
    assert takes_effort(["position"]) is False and takes_effort(None) is None
    assert decide_forwarding(["effort"], False).mode == "enrich"
    assert decide_forwarding(None, False) == ("enrich", "")
    d = decide_forwarding(["position"], True, "/jtc")
    assert d.mode == "pass_through"
    assert "without feedforward" in d.note and "['position']" in d.note and "/jtc" in d.note
    d = decide_forwarding(["position", "velocity"], False, "/jtc")
    assert d.mode == "reject"
    assert JTC_EFFORT_REJECTION in d.note and "pass_through_without_effort" in d.note
    assert "[position, effort]" in d.note


def test_rejection_reasons_name_the_cause():
    text = rejection_reason("/jtc", ["position"])
    assert JTC_EFFORT_REJECTION in text and "['position']" in text
    text = rejection_reason("/jtc", None, "no answer from /jtc/get_parameters in 1 s")
    assert "could not be read" in text and "no answer" in text
    assert "see its log" in rejection_reason("/jtc", ["effort"])


def test_controller_node_name():
    assert controller_node_name("/joint_trajectory_controller/follow_joint_trajectory") == \
        "/joint_trajectory_controller"
    assert controller_node_name("/ns/arm_controller/follow_joint_trajectory/") == \
        "/ns/arm_controller"
    assert controller_node_name("follow_joint_trajectory") == ""


def test_strip_effort():
    pts = [{"positions": [1.0], "effort": [2.0]}, {"positions": [3.0]}]
    assert strip_effort(pts) == [{"positions": [1.0]}, {"positions": [3.0]}]
    assert pts[0]["effort"] == [2.0]


# -- joint states ----------------------------------------------------------------------------
def test_joint_state_cache():
    c = JointStateCache()
    q, v, why = c.get(["a"], 1.0, now=0.0)
    assert q is None and "no joint state" in why
    c.update(["a", "b", "c"], [1.0, 2.0, 3.0], [0.1, 0.2, 0.3], now=10.0)
    q, v, why = c.get(["c", "a"], 0.5, now=10.2)
    np.testing.assert_array_equal(q, [3.0, 1.0])
    np.testing.assert_array_equal(v, [0.3, 0.1])
    assert why == ""
    q, v, why = c.get(["a"], 0.5, now=11.0)
    assert q is None and "old" in why
    q, v, why = c.get(["a"], 0.0, now=100.0)       # 0: any age
    assert q is not None
    c.update(["a"], [1.5], [], now=12.0)            # no velocities in this message
    q, v, why = c.get(["a", "b"], 0.0, now=12.0)
    assert v is None and q[0] == 1.5
    q, v, why = c.get(["a", "b"], 0.0, now=12.0, since=11.0)   # b was received before 11
    assert q is None and "['b']" in why
    q, v, why = c.get(["a"], 0.0, now=12.0, since=12.0)
    assert q[0] == 1.5


# -- waiting without polling -----------------------------------------------------------------
class FakeFuture:
    """The part of rclpy.task.Future the proxy uses: done(), add_done_callback()."""

    def __init__(self):
        self._done = False
        self._callbacks = []

    def done(self):
        return self._done

    def add_done_callback(self, cb):
        if self._done:
            cb(self)
        else:
            self._callbacks.append(cb)

    def set_result(self):
        self._done = True
        for cb in self._callbacks:
            cb(self)


def _complete_later(future, delay):
    threading.Timer(delay, future.set_result).start()


def test_waiter_wakes_on_the_done_callback_not_by_polling():
    fut = FakeFuture()
    w = DoneWaiter(tick=0.5)
    fut.add_done_callback(w.notify)
    _complete_later(fut, 0.3)
    t0 = time.monotonic()
    assert w.wait(fut.done)
    assert time.monotonic() - t0 < 0.45          # woken by the callback, before the tick
    assert w.wakeups <= 2


def test_waiter_budget_over_a_long_goal():
    """A 2 s goal wakes ~4 times at tick 0.5 s; scaled to 10 s that is ~20, far below 3,500."""
    fut = FakeFuture()
    w = DoneWaiter(tick=0.5)
    fut.add_done_callback(w.notify)
    _complete_later(fut, 2.0)
    assert w.wait(fut.done)
    assert w.wakeups * 5 <= 3500 and w.wakeups <= 6


def test_waiter_interrupt_cancels_once_and_gives_up_after_grace():
    fut = FakeFuture()
    w = DoneWaiter(tick=0.5)
    flag = {"cancel": False, "calls": 0}

    def on_interrupt():
        flag["calls"] += 1

    threading.Timer(0.1, lambda: (flag.__setitem__("cancel", True), w.notify())).start()
    t0 = time.monotonic()
    assert not w.wait(fut.done, interrupt=lambda: flag["cancel"], on_interrupt=on_interrupt,
                      grace=0.3)
    dt = time.monotonic() - t0
    assert 0.35 <= dt < 0.8 and flag["calls"] >= 1 and w.wakeups <= 4


def test_waiter_timeout_and_shutdown():
    fut = FakeFuture()
    w = DoneWaiter(tick=0.5)
    t0 = time.monotonic()
    assert not w.wait(fut.done, timeout=0.2)
    assert 0.18 <= time.monotonic() - t0 < 0.5
    assert not w.wait(fut.done, ok=lambda: False)


def test_motor_hold_point_is_the_sea_rest_reference():
    """At rest the flatness reference is θ = q + K⁻¹g, τ_m = g (doc/math.md, flatness feedforward, with τ' = τ'' = 0)."""
    from mbs_dynamics.control.actuators import SEA
    from mbs_dynamics.ros.proxy_logic import motor_hold_point

    K = np.array([3000.0, 1500.0, 800.0])
    sea = SEA(K, [0.5, 0.1, 0.2], [0.3, 0.0, 1.0], n=3)
    q = np.array([0.2, -0.4, 1.1])
    g = np.array([12.0, -3.0, 0.5])
    hold = motor_hold_point(sea, {"time_from_start": 0.0, "positions": q,
                                  "velocities": np.zeros(3), "accelerations": np.zeros(3),
                                  "effort": g})
    np.testing.assert_allclose(hold["positions"], q + g / K, rtol=1e-15)
    np.testing.assert_array_equal(hold["effort"], g)
    assert not np.any(hold["velocities"]) and not np.any(hold["accelerations"])
    with pytest.raises(ValueError, match="not finite"):
        motor_hold_point(sea, {"positions": q, "effort": np.array([np.nan, 0.0, 0.0])})
