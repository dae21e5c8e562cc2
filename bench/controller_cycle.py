#!/usr/bin/env python3
"""Per-cycle compute of the feedforward controller core for a 7-DOF SEA arm.

One cycle = trajectory sample (q…q'''') + τ, τ′, τ″ (recursive, MATH.md) + SEA motor references
+ output checks: exactly what ``FeedforwardController.update`` does at 1 kHz in the node.
Reports median / p90 / p99 in µs for trajectory and hold cycles, and, for scale, Pinocchio's
``rnea`` on the same URDF in the same run (a plain inverse dynamics, far less work than a cycle).

Usage: python3 bench/controller_cycle.py [--urdf FILE] [--cycles N]
Target (issue 5): median < 50 µs on the 2-core CI machine.
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import mbs_dynamics as mbs  # noqa: E402
from mbs_dynamics.control.actuators import actuator_from_params  # noqa: E402
from mbs_dynamics.control.controller import FeedforwardController  # noqa: E402

DEFAULT_URDF = os.path.join(os.path.dirname(mbs.__file__), "data", "robots", "arm7.urdf")


def timed(fn, n, clock=time.perf_counter_ns):
    """Per-call time [µs] of fn(i), i < n, on ``clock`` (wall by default)."""
    ts = np.empty(n)
    for i in range(n):
        t0 = clock()
        fn(i)
        ts[i] = clock() - t0
    return ts * 1e-3


def summary(name, ts):
    p50, p90, p99 = np.percentile(ts, (50, 90, 99))
    print(f"{name:<34s} median {p50:7.2f} µs   p90 {p90:7.2f}   p99 {p99:7.2f}")
    return p50


def peer_rnea(urdf, cycles, timer=timed):
    """The scale in the same run: Pinocchio's rnea on the same URDF (skipped without it)."""
    try:
        import pinocchio as pin
    except ImportError:
        return
    pm = pin.buildModelFromUrdf(urdf)
    pd = pm.createData()
    q = pin.neutral(pm)
    v = np.zeros(pm.nv)
    summary("pinocchio rnea (same URDF)", timer(lambda i: pin.rnea(pm, pd, q, v, v), cycles))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--urdf", default=DEFAULT_URDF)
    ap.add_argument("--cycles", type=int, default=20000)
    args = ap.parse_args(argv)

    robot = mbs.load_urdf(args.urdf)
    n = robot.n
    sea = actuator_from_params({"actuator.type": "sea", "actuator.stiffness": 3000.0,
                                "actuator.motor_inertia": 0.3}, n)
    ctl = FeedforwardController(robot, actuator=sea, joint_state_timeout=0.0)
    q0 = 0.5 * (np.clip(robot.lower, -2, 2) + np.clip(robot.upper, -2, 2))
    ctl.set_joint_state(robot.joint_names, q0, stamp=0.0)
    duration = args.cycles * 1e-3 + 1.0
    pts = [{"time_from_start": t, "positions": (q0 + 0.4 * np.sin(t + np.arange(n))).tolist()}
           for t in np.linspace(0.0, duration, 12)]
    pts[0]["positions"] = q0.tolist()
    assert ctl.set_trajectory({"joint_names": list(robot.joint_names), "points": pts}, now=0.0)
    for i in range(200):                       # warm-up (caches, branch predictors)
        ctl.update(1e-3 * i)
    print(f"{os.path.basename(args.urdf)}: {n} joints, SEA, {args.cycles} cycles")
    ts = timed(lambda i: ctl.update(0.2 + 1e-3 * i), args.cycles)
    assert ctl.cycles["trajectory"] >= args.cycles
    med = summary("trajectory cycle (τ,τ′,τ″ + θ refs)", ts)
    ctl.clear_trajectory()
    summary("hold cycle (gravity + θ refs)", timed(lambda i: ctl.update(1e-3 * i), args.cycles))
    peer_rnea(args.urdf, args.cycles)
    print(f"target median < 50 µs: {'met' if med < 50.0 else 'NOT met'} ({med:.1f} µs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
