#!/usr/bin/env python3
"""Per-cycle CPU time of the flatness-based SEA controller (issue 28) on a 7-DOF arm.

One cycle = ``FlatnessController.update``: trajectory sample + q̈ (ABA) + τ′ jet + q⃛ (the ABA's
τ-dependent passes on the same articulated inertias) + the outer loop + the τ…τ‴ jet + the motor
torque with the zero-order-hold lead, all inside the compiled cycle (control/_flatness.pyx). Reports
median / p90 / p99 of the per-cycle CPU time (``time.process_time_ns``: time the process ran,
so other processes on a shared machine do not count) and, as a peer in the same run,
Pinocchio's ``rnea`` on the same URDF (one inverse dynamics).

The machine's 1-minute load average is printed before and after each run (a shared machine's
p99 depends on it: preemption refills the caches).

Usage: python3 bench/flatness_cycle.py [--urdf FILE] [--cycles N] [--repeats R]
Target (issue 28): p99 <= 30 µs from Python.
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import mbs_dynamics as mbs  # noqa: E402
from controller_cycle import DEFAULT_URDF, peer_rnea, summary, timed  # noqa: E402
from mbs_dynamics.control.flatness import FlatnessController  # noqa: E402
from mbs_dynamics.control.trajectory import Trajectory  # noqa: E402


def cpu_times(fn, n):
    """Per-call CPU time [µs] of fn(i), i < n (process time: other processes do not count)."""
    return timed(fn, n, time.process_time_ns)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--urdf", default=DEFAULT_URDF)
    ap.add_argument("--cycles", type=int, default=20000)
    ap.add_argument("--repeats", type=int, default=1)
    args = ap.parse_args(argv)
    robot = mbs.load_urdf(args.urdf)
    n = robot.n
    q0 = 0.5 * (np.clip(robot.lower, -2, 2) + np.clip(robot.upper, -2, 2))
    times = np.linspace(0.0, args.cycles * 1e-3 + 1.0, 12)
    traj = Trajectory(robot.joint_names, times,
                      [q0 + 0.4 * np.sin(t + np.arange(n)) * (t > 0) for t in times])
    ctl = FlatnessController(robot, stiffness=2000.0, motor_inertia=0.3, motor_damping=0.05,
                             poles=[10.0, 20.0, 30.0, 40.0], trajectory=traj)
    q, qd = q0 + 0.01, np.full(n, 0.1)
    th, thd = q + 0.02, qd + 0.01
    out = np.empty(n)
    for i in range(500):  # warm-up
        ctl.update(1e-3 * i, q, qd, th, thd, out=out)
    print(f"{os.path.basename(args.urdf)}: {n} joints, SEA flatness control, {args.cycles} cycles")
    p99s = []
    for r in range(args.repeats):
        load0 = os.getloadavg()[0]
        ts = cpu_times(lambda i: ctl.update(0.5 + 1e-3 * i, q, qd, th, thd, out=out),
                       args.cycles)
        summary("flatness cycle (update, 1 kHz lead)", ts)
        print(f"  load average (1 min) {load0:.1f} -> {os.getloadavg()[0]:.1f}")
        p99s.append(np.percentile(ts, 99))
    p99 = float(np.median(p99s))
    peer_rnea(args.urdf, args.cycles, cpu_times)
    print(f"target p99 <= 30 µs: {'met' if p99 <= 30.0 else 'NOT met'} (median over runs of the "
          f"p99: {p99:.1f} µs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
