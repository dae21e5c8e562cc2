#!/usr/bin/env python3
"""Frame kinematics (issue 18) against Pinocchio, as ratios measured in one run (CPU time).

Run from the repository root after building in place (``python setup.py build_ext --inplace``):

    python3 bench/kinematics.py            # prints a Markdown table (bench/README.md section)
    python3 bench/kinematics.py --quick    # a smoke run in seconds

Each row times our public method and Pinocchio's equivalent from Python on the same model,
state and frame, back to back, round-robin over the repeats (the first call alternates), each
over a loop of ``time.process_time`` calibrated to ≈ 20 ms; the ratio ours/Pinocchio is taken per
repeat and reported as median [min–max]. Below 1 we are faster. Pinocchio's side is the call a
user makes to get the same array: ``computeFrameJacobian`` (it runs the forward kinematics of the
frame's support and returns the Jacobian), ``framesForwardKinematics`` + ``data.oMf[id]
.homogeneous``, and for the velocity-level quantities ``forwardKinematics(q, v[, a])`` +
``getFrameVelocity`` / ``getFrameAcceleration``, ``computeJointJacobiansTimeVariation`` +
``getFrameJacobianTimeVariation``. *max abs diff* compares the two results on the benchmark state.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "test"))
import mbs_dynamics as mbs  # noqa: E402


def _loop(f, k):
    t0 = time.process_time()
    for _ in range(k):
        f()
    return time.process_time() - t0


def _calibrate(f, target):
    k = 1
    while True:
        t = _loop(f, k)
        if t >= target / 4 or k > 1 << 22:
            return max(1, int(k * target / max(t, 1e-9)))
        k *= 4


def ratio(ours, theirs, repeats, target):
    """(median, min, max) of ours/theirs per repeat, and the best µs per call of each."""
    ko, kt = _calibrate(ours, target), _calibrate(theirs, target)
    rs, bo, bt = [], float("inf"), float("inf")
    for r in range(repeats):
        pair = [(ours, ko), (theirs, kt)]
        if r % 2:
            pair.reverse()
        t = {id(f): _loop(f, k) / k for f, k in pair}
        to, tt = t[id(ours)], t[id(theirs)]
        rs.append(to / tt)
        bo, bt = min(bo, to), min(bt, tt)
    return statistics.median(rs), min(rs), max(rs), bo * 1e6, bt * 1e6


def _cases(quick):
    import pinocchio as pin
    from conftest import PANDA, erd_path, pin_model
    out = []
    p = erd_path(PANDA[0])
    out.append(("Panda (n = 7, fingers locked)", "panda_hand_tcp",
                mbs.load_urdf(p, locked_joints=PANDA[1]), pin_model(p, PANDA[1]), False))
    p = erd_path("ur_description/urdf/ur5_robot.urdf")
    out.append(("UR5 (n = 6)", "tool0", mbs.load_urdf(p), pin_model(p), False))
    if not quick:
        p = erd_path("talos_data/robots/talos_reduced.urdf")
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = mbs.load_urdf(p, floating_base=True)
        out.append(("Talos reduced (floating, n = 32)", "gripper_left_base_link", r,
                    pin.buildModelFromUrdf(p, pin.JointModelFreeFlyer()), True))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="3 repeats of 2 ms (smoke run)")
    args = ap.parse_args(argv)
    import pinocchio as pin
    repeats, target = (3, 0.002) if args.quick else (11, 0.02)
    rng = np.random.default_rng(0)
    print(f"Measured {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC, load average "
          f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}, pinocchio {pin.__version__}, "
          f"{repeats} repeats of ≈ {target * 1e3:g} ms per side; ratio = ours / Pinocchio "
          "(CPU time), median [min–max].\n")
    LOCAL, WORLD, LWA = pin.LOCAL, pin.WORLD, pin.LOCAL_WORLD_ALIGNED
    for title, frame, robot, pm, fb in _cases(args.quick):
        pd = pm.createData()
        fid = pm.getFrameId(frame, pin.FrameType.BODY)
        q = rng.uniform(-1, 1, robot.nq)
        if fb:
            q[3:7] /= np.linalg.norm(q[3:7])
        v, a = rng.normal(size=(2, robot.nv))

        def pin_place():
            pin.framesForwardKinematics(pm, pd, q)
            return pd.oMf[fid].homogeneous

        def pin_place_one():
            pin.forwardKinematics(pm, pd, q)
            return pin.updateFramePlacement(pm, pd, fid).homogeneous

        def pin_vel(r):
            pin.forwardKinematics(pm, pd, q, v)
            return pin.getFrameVelocity(pm, pd, fid, r).vector

        def pin_acc(r):
            pin.forwardKinematics(pm, pd, q, v, a)
            return pin.getFrameAcceleration(pm, pd, fid, r).vector

        def pin_jd(r):
            pin.computeJointJacobiansTimeVariation(pm, pd, q, v)
            pin.updateFramePlacements(pm, pd)
            return pin.getFrameJacobianTimeVariation(pm, pd, fid, r)

        rows = [
            ("`frame_jacobian(q, f)` (body) / `computeFrameJacobian(…, LOCAL)`",
             lambda: robot.frame_jacobian(q, frame),
             lambda: pin.computeFrameJacobian(pm, pd, q, fid, LOCAL), "≤ 1.0"),
            ("`frame_jacobian(q, f, \"hybrid\")` / `computeFrameJacobian(…, LOCAL_WORLD_ALIGNED)`",
             lambda: robot.frame_jacobian(q, frame, "hybrid"),
             lambda: pin.computeFrameJacobian(pm, pd, q, fid, LWA), "≤ 1.0"),
            ("`frame_jacobian(q, f, \"spatial\")` / `computeFrameJacobian(…, WORLD)`",
             lambda: robot.frame_jacobian(q, frame, "spatial"),
             lambda: pin.computeFrameJacobian(pm, pd, q, fid, WORLD), "≤ 1.0"),
            ("`frame_placement(q, f)` / `framesForwardKinematics` + `oMf[id].homogeneous`",
             lambda: robot.frame_placement(q, frame), pin_place, "≤ 1.0"),
            ("`frame_placement(q, f)` / `forwardKinematics` + `updateFramePlacement` (one frame)",
             lambda: robot.frame_placement(q, frame), pin_place_one, ""),
            ("`frame_velocity(q, v, f)` / `forwardKinematics(q, v)` + `getFrameVelocity`",
             lambda: robot.frame_velocity(q, v, frame), lambda: pin_vel(LOCAL), ""),
            ("`frame_jacobian_derivative(q, v, f)` / `computeJointJacobiansTimeVariation` + "
             "`getFrameJacobianTimeVariation`",
             lambda: robot.frame_jacobian_derivative(q, v, frame), lambda: pin_jd(LOCAL), ""),
            ("`frame_acceleration(q, v, a, f)` / `forwardKinematics(q, v, a)` + "
             "`getFrameAcceleration`",
             lambda: robot.frame_acceleration(q, v, a, frame), lambda: pin_acc(LOCAL), ""),
        ]
        print(f"### {title}, frame `{frame}`\n")
        print("| call, ours / Pinocchio's | bound | ratio median [min–max] | ours µs | "
              "Pinocchio µs | max abs diff |")
        print("|---|---|---|---|---|---|")
        for name, ours, theirs, bound in rows:
            diff = np.abs(np.asarray(ours()) - np.asarray(theirs())).max()
            med, lo, hi, to, tt = ratio(ours, theirs, repeats, target)
            verdict = (" **holds**" if med <= 1.0 else " **misses**") if bound else ""
            print(f"| {name} | {bound or '–'} | {med:.2f} [{lo:.2f}–{hi:.2f}]{verdict} | "
                  f"{to:.3f} | {tt:.3f} | {diff:.1e} |")
        # a batch: one call over N configurations vs a Python loop over computeFrameJacobian
        N = 200 if args.quick else 1000
        Q = np.tile(q, (N, 1))
        Q[:, -robot.n:] += rng.uniform(-0.5, 0.5, (N, robot.n))
        out = np.empty((N, 6, robot.nv))

        def loop():
            for x in Q:
                pin.computeFrameJacobian(pm, pd, x, fid, LOCAL)
        med, lo, hi, to, tt = ratio(lambda: robot.frame_jacobian(Q, frame, out=out), loop,
                                    max(3, repeats // 2), target)
        print(f"| batch N = {N}: `frame_jacobian(Q, f)` / Python loop of `computeFrameJacobian` "
              f"| – | {med:.3f} [{lo:.3f}–{hi:.3f}] | {to / N:.3f} per sample | "
              f"{tt / N:.3f} per sample | – |\n")


if __name__ == "__main__":
    main()
