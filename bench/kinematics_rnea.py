#!/usr/bin/env python3
"""The three recursive Newton–Euler algorithms of seed 000 §4 side by side — body-fixed (eq.
67–68), spatial (eq. 69–72), hybrid (eq. 73–77) — operation counts and CPU times in one run, and
``frame_derivatives`` of order 2 against one ``torque_derivatives`` call (issue 18).

Run from the repository root after building in place (``python setup.py build_ext --inplace``):

    python3 bench/kinematics_rnea.py            # prints the Markdown of bench/README.md's section
    python3 bench/kinematics_rnea.py --quick    # a smoke run in seconds

Operation counts: (1) the paper's, per algorithm, for a chain of n bodies (§4.1–4.3: frame
transformations of screws, transformations of the inertia tensor, Lie brackets); (2) the
multiplications and additions of this package's kernels per movable revolute body below the
root, counted by hand from the source (``_rnea.pyx`` ``rnea0``, ``_rnea_repr.pyx``
``rnea_spatial``/``rnea_hybrid``) with the primitive costs in ``PRIMS`` (sin/cos excluded, both
kernels need one pair per joint). Times: ``time.process_time`` loops calibrated to ≈ 20 ms,
round-robin over the repeats, ratio to the body-fixed call per repeat, median [min–max].
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
from kinematics import _calibrate, _loop  # noqa: E402  (bench/kinematics.py: CPU-time loops)

# (multiplications, additions) of the kernels' primitives for a revolute joint (from the source)
PRIMS = {
    "joint_pose": (18, 18), "compose": (36, 27), "to_child": (24, 18),
    "add_to_parent": (24, 24), "ad_X": (18, 6), "ad_V": (18, 12), "axpy6": (6, 6),
    "add_X": (3, 3), "inertia_times": (24, 18), "add_adT": (24, 18), "X_dot": (3, 2),
    "dot6": (6, 5), "cross_add": (9, 6), "rot": (9, 6), "sub3": (0, 3), "add6": (0, 6),
    "inertia_rotate": (54, 36),          # R Θ Rᵀ (symmetric: 6 entries) and R h
    "inertia_shift": (51, 40),           # − m p̃p̃ − p̃h̃ − h̃p̃ and h = m p + R h (spatial)
}
KERNELS = {
    "body": {"forward": ["joint_pose", "to_child", "to_child", "ad_X", "axpy6", "add_X",
                         "add_X"],
             "backward": ["inertia_times", "inertia_times", "add6", "add_adT", "X_dot",
                          "add_to_parent"]},
    "spatial": {"forward": ["joint_pose", "compose", "rot", "cross_add", "axpy6", "ad_V",
                            "axpy6", "axpy6"],
                "backward": ["inertia_rotate", "inertia_shift", "inertia_times",
                             "inertia_times", "add6", "add_adT", "dot6", "add6"]},
    "hybrid": {"forward": ["joint_pose", "compose", "rot", "sub3", "cross_add", "axpy6",
                           "cross_add", "sub3", "cross_add", "cross_add", "cross_add", "axpy6"],
               "backward": ["inertia_rotate", "inertia_times", "add6", "rot", "cross_add",
                            "cross_add", "cross_add", "dot6", "sub3", "add6", "cross_add"]},
}


def flops(kernel):
    out = {}
    for part, prims in KERNELS[kernel].items():
        m = sum(PRIMS[p][0] for p in prims)
        a = sum(PRIMS[p][1] for p in prims)
        out[part] = (m, a)
    return out


def paper_counts(n):
    """seed 000 §4.1–4.3 for n bodies: (screw transformations, tensor transformations,
    Lie brackets) with the kind of transformation."""
    return {
        "body": f"{3 * (n - 1)} frame transformations, {2 * n - 1} Lie brackets",
        "spatial": f"{n} frame transformations, {n} inertia-tensor transformations, "
                   f"{2 * n - 1} Lie brackets",
        "hybrid": f"{3 * n - 3} translational + {n} rotational transformations, {n} rotational "
                  f"inertia-tensor transformations, {3 * n - 1} Lie brackets",
    }


def timed(fns, repeats, target):
    """µs per call (best) of each, and the per-repeat ratios to the first, round-robin."""
    for f in fns:   # warm-up: lazily built tables, first-touch of the workspace
        f()
    ks = [_calibrate(f, target) for f in fns]
    best = [float("inf")] * len(fns)
    ratios = [[] for _ in fns]
    for r in range(repeats):
        order = list(range(len(fns)))
        if r % 2:
            order.reverse()
        t = {}
        for i in order:
            t[i] = _loop(fns[i], ks[i]) / ks[i]
            best[i] = min(best[i], t[i])
        for i in range(len(fns)):
            ratios[i].append(t[i] / t[0])
    return best, [(statistics.median(x), min(x), max(x)) for x in ratios]


def _cases(quick):
    """(title, robot, frame, Pinocchio model, the frame's joint link)."""
    import warnings

    import pinocchio as pin
    from conftest import PANDA, erd_path, pin_model
    out = []
    p = erd_path(PANDA[0])
    out.append(("Panda (n = 7, fingers locked)", mbs.load_urdf(p, locked_joints=PANDA[1]),
                "panda_hand_tcp", pin_model(p, PANDA[1]), "panda_link7"))
    p = erd_path("ur_description/urdf/ur5_robot.urdf")
    out.append(("UR5 (n = 6)", mbs.load_urdf(p), "tool0", pin_model(p), "wrist_3_link"))
    if not quick:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            p = erd_path("talos_data/robots/talos_reduced.urdf")
            out.append(("Talos reduced (floating, n = 32)",
                        mbs.load_urdf(p, floating_base=True), "gripper_left_base_link",
                        pin.buildModelFromUrdf(p, pin.JointModelFreeFlyer()), "arm_left_7_link"))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="3 repeats of 2 ms (smoke run)")
    args = ap.parse_args(argv)
    repeats, target = (3, 0.002) if args.quick else (11, 0.02)
    rng = np.random.default_rng(0)
    print(f"Measured {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC, load average "
          f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}, {repeats} repeats of "
          f"≈ {target * 1e3:g} ms per call; CPU time.\n")
    print("#### Operation counts per movable revolute body (below the root)\n")
    print("| recursion | paper (seed 000 §4), n bodies | kernel forward mul + add | "
          "kernel backward mul + add | kernel total |")
    print("|---|---|---|---|---|")
    pc = paper_counts(7)
    for k in ("body", "spatial", "hybrid"):
        f = flops(k)
        tot = sum(sum(x) for x in f.values())
        print(f"| {k} | n = 7: {pc[k]} | {f['forward'][0]} + {f['forward'][1]} | "
              f"{f['backward'][0]} + {f['backward'][1]} | {tot} |")
    print()
    import pinocchio as pin
    for title, robot, frame, pm, link in _cases(args.quick):
        q = rng.uniform(-1, 1, robot.nq)
        if robot.floating_base:
            q[3:7] /= np.linalg.norm(q[3:7])
        v, a = rng.normal(size=(2, robot.nv))
        out = np.empty(robot.nv)
        fns = [lambda r=r: robot.inverse_dynamics(q, v, a, out=out, representation=r)
               for r in ("body", "spatial", "hybrid")]
        ref = robot.inverse_dynamics(q, v, a)
        diffs = [np.abs(robot.inverse_dynamics(q, v, a, representation=r) - ref).max()
                 / np.abs(ref).max() for r in ("body", "spatial", "hybrid")]
        best, rat = timed(fns, repeats, target)
        # batch of N states: one call each
        N = 200 if args.quick else 1000
        Q = np.tile(q, (N, 1))
        Q[:, -robot.n:] += rng.uniform(-0.5, 0.5, (N, robot.n))
        V, A = rng.normal(size=(2, N, robot.nv))
        bout = np.empty((N, robot.nv))
        bf = [lambda r=r: robot.inverse_dynamics(Q, V, A, out=bout, representation=r)
              for r in ("body", "spatial", "hybrid")]
        bbest, brat = timed(bf, max(3, repeats // 2), target)
        print(f"#### {title}\n")
        print("| `inverse_dynamics(…, representation=)` | µs per call | ratio to body, median "
              "[min–max] | batch N = %d, µs per sample | batch ratio to body | max rel. diff "
              "to body |" % N)
        print("|---|---|---|---|---|---|")
        for i, r in enumerate(("body", "spatial", "hybrid")):
            print(f"| {r} | {best[i] * 1e6:.3f} | {rat[i][0]:.2f} [{rat[i][1]:.2f}–{rat[i][2]:.2f}]"
                  f" | {bbest[i] * 1e6 / N:.3f} | {brat[i][0]:.2f} | {diffs[i]:.1e} |")
        # frame_derivatives of order 2 (V, V̇, V̈) vs one torque_derivatives call (τ, τ′, τ″)
        if robot.floating_base:
            vs = rng.normal(size=(4, robot.nv))
            jet_in, fd_in = (q, vs), (q, vs[:3])
        else:
            qs = rng.normal(size=(5, robot.n))
            jet_in, fd_in = qs, qs[:4]
        tout = np.empty((3, robot.nv))
        fout = np.empty((3, 6))
        rows = [("torque_derivatives (τ, τ′, τ″)",
                 lambda: robot.torque_derivatives(jet_in, out=tout))]
        for r in ("body", "spatial", "hybrid", "mixed"):
            rows.append((f"frame_derivatives order 2, {r}",
                         lambda r=r: robot.frame_derivatives(fd_in, frame, r, out=fout)))
        fbest, frat = timed([f for _, f in rows], repeats, target)
        print(f"\n| frame `{frame}`: call | µs per call | ratio to torque_derivatives "
              "(bound ≤ 1.0) |")
        print("|---|---|---|")
        for i, (name, _) in enumerate(rows):
            verdict = "" if i == 0 else (" **holds**" if frat[i][0] <= 1.0 else " **misses**")
            print(f"| {name} | {fbest[i] * 1e6:.3f} | {frat[i][0]:.2f} "
                  f"[{frat[i][1]:.2f}–{frat[i][2]:.2f}]{verdict} |")
        # kinematic Hessian of a joint's link vs Pinocchio's joint Hessian (both from Python);
        # Christoffel symbols (no Pinocchio peer) against one mass_matrix call
        pd = pm.createData()
        jid = pm.frames[pm.getFrameId(link)].parentJoint
        pq = q.copy()   # no continuous joints in these models: the same configuration vector

        def pin_hess():
            pin.computeJointJacobians(pm, pd, pq)
            pin.computeJointKinematicHessians(pm, pd, pq)
            return pin.getJointKinematicHessian(pm, pd, jid, pin.LOCAL)
        ref = np.asarray(pin_hess()).reshape(-1).reshape((6, robot.nv, robot.nv), order="F")
        diff = np.abs(robot.kinematic_hessian(q, link) - ref).max()
        hbest, hrat = timed([pin_hess, lambda: robot.kinematic_hessian(q, link)], repeats, target)
        cbest, crat = timed([lambda: robot.mass_matrix(q), lambda: robot.christoffel(q)],
                            repeats, target)
        print(f"\n| call | µs per call | ratio to the peer, median [min–max] | peer |")
        print("|---|---|---|---|")
        print(f"| `kinematic_hessian(q, \"{link}\")` | {hbest[1] * 1e6:.3f} | {hrat[1][0]:.2f} "
              f"[{hrat[1][1]:.2f}–{hrat[1][2]:.2f}] (max abs diff {diff:.1e}) | "
              f"`computeJointJacobians` + `computeJointKinematicHessians` + "
              f"`getJointKinematicHessian`: {hbest[0] * 1e6:.3f} µs |")
        print(f"| `christoffel(q)` (nv = {robot.nv}) | {cbest[1] * 1e6:.3f} | {crat[1][0]:.1f} "
              f"[{crat[1][1]:.1f}–{crat[1][2]:.1f}] | `mass_matrix(q)`: {cbest[0] * 1e6:.3f} µs "
              "(Pinocchio has no Christoffel symbols) |")
        print()


if __name__ == "__main__":
    main()
