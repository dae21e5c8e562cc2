#!/usr/bin/env python3
"""Spherical and inner free joints (``LieJointRobot``, issue 31) against Pinocchio, as ratios
measured in one run (CPU time).

Run from the repository root after building in place:

    python3 bench/lie_joints.py            # a Markdown table (bench/NOTES.md)
    python3 bench/lie_joints.py --quick

The robot is the one of ``test/model/test_spherical_joint.py`` (a revolute joint, a branch, a
spherical joint and a URDF ``floating`` joint inside the tree: nq = 13, nv = 11) and Pinocchio's
model built by hand with ``JointModelSpherical`` and ``JointModelFreeFlyer``. Every call
alternates between two random states, so our chart is re-centred on every call (the realistic
case). Each row times our public method and Pinocchio's equivalent back to back, round-robin
over the repeats, each over a loop of ``time.process_time`` calibrated to ≈ 20 ms; the ratio
ours/Pinocchio per repeat, reported as median [min–max], and our time per call.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "test" / "model"))
import mbs_dynamics as mbs  # noqa: E402
from test_spherical_joint import _geometry, _pin, _urdf  # noqa: E402


def _loop(f, k):
    t0 = time.process_time()
    for _ in range(k):
        f()
    return time.process_time() - t0


def _calibrate(f, target=0.02):
    k = 1
    while _loop(f, k) < target / 4 and k < 1 << 20:
        k *= 2
    return max(1, int(k * target / max(_loop(f, k), 1e-9)))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args(argv)
    import pinocchio as pin
    g = _geometry()
    robot, pm = mbs.load_urdf(_urdf(g)), _pin(g)
    pd = pm.createData()
    rng = np.random.default_rng(0)
    states = []
    for _ in range(2):   # (q, v, a, w, jet k = 1, jet k = 2): the jets stacked once, not timed
        q, (v, a, w) = pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq)), \
            rng.normal(size=(3, pm.nv))
        states.append((q, v, a, w, np.stack([v, a, w]), np.stack([v, a, w, v])))
    it = [0]

    def state():
        it[0] ^= 1
        return states[it[0]]

    rows = [
        ("inverse_dynamics", lambda q, v, a, w, j1, j2: robot.inverse_dynamics(q, v, a),
         lambda q, v, a, w, j1, j2: pin.rnea(pm, pd, q, v, a)),
        ("mass_matrix", lambda q, v, a, w, j1, j2: robot.mass_matrix(q),
         lambda q, v, a, w, j1, j2: pin.crba(pm, pd, q)),
        ("gravity_torques", lambda q, v, a, w, j1, j2: robot.gravity_torques(q),
         lambda q, v, a, w, j1, j2: pin.computeGeneralizedGravity(pm, pd, q)),
        ("forward_dynamics", lambda q, v, a, w, j1, j2: robot.forward_dynamics(q, v, a),
         lambda q, v, a, w, j1, j2: pin.aba(pm, pd, q, v, a)),
        ("inverse_dynamics_derivatives",
         lambda q, v, a, w, j1, j2: robot.inverse_dynamics_derivatives(q, v, a),
         lambda q, v, a, w, j1, j2: pin.computeRNEADerivatives(pm, pd, q, v, a)),
        ("frame_jacobian (body)", lambda q, v, a, w, j1, j2: robot.frame_jacobian(q, "tool"),
         lambda q, v, a, w, j1, j2: pin.computeFrameJacobian(pm, pd, q, pm.getFrameId("tool"),
                                                     pin.LOCAL)),
        ("regressor", lambda q, v, a, w, j1, j2: robot.regressor(q, v, a),
         lambda q, v, a, w, j1, j2: pin.computeJointTorqueRegressor(pm, pd, q, v, a)),
        ("torque_derivatives k=1 (vs rnea)",
         lambda q, v, a, w, j1, j2: robot.torque_derivatives((q, j1)),
         lambda q, v, a, w, j1, j2: pin.rnea(pm, pd, q, v, a)),
        ("torque_derivatives k=2 (vs rnea)",
         lambda q, v, a, w, j1, j2: robot.torque_derivatives((q, j2)),
         lambda q, v, a, w, j1, j2: pin.rnea(pm, pd, q, v, a)),
    ]
    reps = 2 if args.quick else args.repeats
    print("| call (nq = 13, nv = 11) | ours / Pinocchio, median [min–max] | ours µs per call |")
    print("|---|---|---|")
    for name, f, p in rows:
        fo, fp = (lambda f=f: f(*state())), (lambda p=p: p(*state()))
        ko, kp = _calibrate(fo), _calibrate(fp)
        ratios, tus = [], []
        for r in range(reps):
            pair = [(fo, ko), (fp, kp)] if r % 2 == 0 else [(fp, kp), (fo, ko)]
            t = {id(f0): _loop(f0, k0) / k0 for f0, k0 in pair}
            ratios.append(t[id(fo)] / t[id(fp)])
            tus.append(t[id(fo)] * 1e6)
        fmt = ".1f" if statistics.median(ratios) < 20 else ".0f"
        print(f"| {name} | {statistics.median(ratios):{fmt}}× [{min(ratios):{fmt}}–"
              f"{max(ratios):{fmt}}] | {statistics.median(tus):.1f} |")


if __name__ == "__main__":
    main()
