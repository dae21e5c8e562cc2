#!/usr/bin/env python3
"""Speed of the identification room against Pinocchio, as ratios in one run (issue 20).

Run from the repository root (build in place first: ``python setup.py build_ext --inplace``):

    python3 bench/identification.py [--repeats 11] [--robot panda|ur5|solo12]

For each pair (ours, Pinocchio's) both calls are timed back to back in every repeat, each over a
loop of ``--number`` calls, in CPU time (``time.process_time``); the ratio ours/theirs is taken
per repeat and the median [min–max] is printed. Ratios below 1 mean we are faster. Pinocchio's
calls return views into its Data; ours return new arrays (the fair comparison for a user).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "test"))
import mbs_dynamics as mbs  # noqa: E402

ROBOTS = {
    "panda": ("panda_description/urdf/panda.urdf",
              {"panda_finger_joint1": 0.0, "panda_finger_joint2": 0.0}, False),
    "ur5": ("ur_description/urdf/ur5_robot.urdf", {}, False),
    "solo12": ("solo_description/robots/solo12.urdf", {}, True),
}


def erd(rel):
    import pinocchio as pin
    for root in [Path(pin.__file__).parents[4]] + [Path(p).parents[2] for p in sys.path
                                                   if p.endswith("site-packages")]:
        f = root / "share/example-robot-data/robots" / rel
        if f.exists():
            return str(f)
    raise SystemExit(f"example-robot-data not found ({rel})")


def pair(name):
    import pinocchio as pin
    rel, locked, fb = ROBOTS[name]
    path = erd(rel)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        robot = mbs.load_urdf(path, locked_joints=locked, floating_base=fb)
    pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if fb else \
        pin.buildModelFromUrdf(path)
    if locked:
        q0 = pin.neutral(pm)
        pm = pin.buildReducedModel(pm, [pm.getJointId(n) for n in locked], q0)
    return robot, pm


def loop_time(f, number):
    t0 = time.process_time()
    for _ in range(number):
        f()
    return (time.process_time() - t0) / number * 1e6


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--robot", default="panda", choices=sorted(ROBOTS))
    ap.add_argument("--repeats", type=int, default=11)
    ap.add_argument("--number", type=int, default=20000)
    a = ap.parse_args(argv)
    import pinocchio as pin
    robot, pm = pair(a.robot)
    pd = pm.createData()
    rng = np.random.default_rng(0)
    if robot.floating_base:
        quat = rng.normal(size=4)
        q = np.r_[rng.normal(size=3), quat / np.linalg.norm(quat), rng.uniform(-1, 1, robot.n)]
    else:
        q = rng.uniform(-1, 1, robot.n)
    pq = np.array(q)  # no continuous joints in these robots: the same configuration
    assert pq.shape == (pm.nq,)
    v, acc, tau = rng.normal(size=(3, robot.nv))
    qs = np.vstack([q, rng.normal(size=(3, robot.n))]) if not robot.floating_base else None
    vs = rng.normal(size=(3, robot.nv))

    def taudot_pin():
        dq, dv, M = pin.computeRNEADerivatives(pm, pd, pq, vs[0], vs[1])
        M = np.triu(M) + np.triu(M, 1).T
        return dq @ vs[0] + dv @ vs[1] + M @ vs[2]

    rd = (lambda: robot.regressor_derivatives(qs)) if qs is not None else \
        (lambda: robot.regressor_derivatives((q, vs)))
    pairs = [
        ("regressor Y vs pin.computeJointTorqueRegressor",
         lambda: robot.regressor(q, v, acc),
         lambda: pin.computeJointTorqueRegressor(pm, pd, pq, v, acc)),
        ("regressor_derivatives k=1 (Y, Y′) vs pin regressor + τ′ from partials",
         rd, lambda: (pin.computeJointTorqueRegressor(pm, pd, pq, vs[0], vs[1]), taudot_pin())),
    ]
    if hasattr(robot, "inverse_dynamics_derivatives"):
        pairs += [
            ("inverse_dynamics_derivatives vs pin.computeRNEADerivatives",
             lambda: robot.inverse_dynamics_derivatives(q, v, acc),
             lambda: pin.computeRNEADerivatives(pm, pd, pq, v, acc)),
            ("forward_dynamics_derivatives vs pin.computeABADerivatives",
             lambda: robot.forward_dynamics_derivatives(q, v, tau),
             lambda: pin.computeABADerivatives(pm, pd, pq, v, tau)),
        ]
    print(f"robot {a.robot} (nv = {robot.nv}), {a.repeats} repeats × {a.number} calls, CPU time")
    print("| call | ours µs | Pinocchio µs | ratio median [min–max] |")
    print("|---|---|---|---|")
    for label, ours, theirs in pairs:
        ours(), theirs()
        n = max(1000, a.number // (10 if "derivatives k" in label else 1))
        ro, rt, ratio = [], [], []
        for r in range(a.repeats):
            order = (ours, theirs) if r % 2 == 0 else (theirs, ours)
            t = {f: loop_time(f, n) for f in order}
            ro.append(t[ours])
            rt.append(t[theirs])
            ratio.append(t[ours] / t[theirs])
        print(f"| {label} | {statistics.median(ro):.2f} | {statistics.median(rt):.2f} | "
              f"{statistics.median(ratio):.3f} [{min(ratio):.3f}–{max(ratio):.3f}] |")


if __name__ == "__main__":
    main()
