#!/usr/bin/env python3
"""Cost of feedforward_proxy's enrichment (mbs_dynamics.control.enrich), ROS-free.

A 10 s trajectory of the bundled 7-DOF arm (11 waypoints) is splined, resampled at
``sample_period`` (1 ms = 1 kHz by default) and filled with τ (output effort) or SEA motor
references (output motor) by the batch API; the ROS message build is measured separately when
trajectory_msgs is importable. Wall-clock medians of ``--repeat`` runs after one warm-up.

Usage: python3 bench/enrich_cost.py [--duration 10] [--period 0.001] [--repeat 5]
"""
import argparse
import os
import sys
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=float, default=10.0, help="trajectory length [s]")
    ap.add_argument("--period", type=float, default=0.001, help="sample_period [s]")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)

    import mbs_dynamics as mbs
    from mbs_dynamics.control.actuators import SEA
    from mbs_dynamics.control.enrich import TrajectoryEnricher

    robot = mbs.load_urdf(os.path.join(REPO, "mbs_dynamics", "data", "robots", "arm7.urdf"))
    n = robot.n
    rng = np.random.default_rng(0)
    times = np.linspace(0.0, args.duration, 11)
    pos = 0.4 * rng.standard_normal((11, n))
    goal = {"joint_names": list(robot.joint_names),
            "points": [{"time_from_start": float(t), "positions": p.tolist()}
                       for t, p in zip(times, pos)]}
    cases = [("effort", TrajectoryEnricher(robot, sample_period=args.period)),
             ("motor (SEA)", TrajectoryEnricher(robot, output="motor", sample_period=args.period,
                                                actuator=SEA(2000.0, 0.3, n=n)))]
    try:
        from mbs_dynamics.ros.conversions import enriched_to_joint_trajectory
    except ImportError:
        enriched_to_joint_trajectory = None
    print(f"{n}-joint arm, {args.duration:g} s trajectory, sample_period {args.period:g} s")
    for name, enr in cases:
        out = enr.enrich(goal)                     # warm-up
        ts = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            out = enr.enrich(goal)
            ts.append(time.perf_counter() - t0)
        line = (f"  output {name:12s}: {len(out)} points, enrich median "
                f"{1e3 * np.median(ts):.1f} ms ({1e6 * np.median(ts) / len(out):.2f} µs/point)")
        if enriched_to_joint_trajectory is not None:
            t0 = time.perf_counter()
            enriched_to_joint_trajectory(out)
            line += f", JointTrajectory message build {1e3 * (time.perf_counter() - t0):.1f} ms"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
