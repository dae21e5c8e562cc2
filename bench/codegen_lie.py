#!/usr/bin/env python3
"""Generated C for spherical and inner free joints (issue 31) against Pinocchio, as ratios
measured in one run (process CPU time).

Run from the repository root after building in place (a C compiler on PATH):

    python3 bench/codegen_lie.py            # a Markdown table (bench/NOTES.md)
    python3 bench/codegen_lie.py --quick

The robot is the one of ``test/model/test_spherical_joint.py`` (a revolute joint, a branch, a
spherical joint and a URDF ``floating`` joint inside the tree: nq = 13, nv = 11), compiled with
``mbs_dynamics.codegen.compile`` (``-O3 -march=native``), and Pinocchio's model built by hand
with ``JointModelSpherical`` and ``JointModelFreeFlyer``. Every call is a Python call on a fresh
state (two random states, alternating); each row times ours and Pinocchio's back to back,
round-robin over the repeats (:func:`timing.measure_group`), and reports the ratio ours /
Pinocchio per repeat as median [min–max], our time per call, and the largest difference of
the two results on the state.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "test" / "model"))
import mbs_dynamics as mbs  # noqa: E402
from mbs_dynamics import codegen  # noqa: E402
from test_spherical_joint import _geometry, _pin, _urdf  # noqa: E402
from timing import measure_group, ratio_stat  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeats", type=int, default=9)
    args = ap.parse_args(argv)
    import os
    import pinocchio as pin
    os.environ.setdefault("MBS_DYNAMICS_CACHE", tempfile.mkdtemp(prefix="mbs_bench_cg_"))
    g = _geometry()
    robot, pm = mbs.load_urdf(_urdf(g)), _pin(g)
    c = codegen.compile(robot, frames=["tool"])
    pd = pm.createData()
    rng = np.random.default_rng(0)
    states = [(pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq)),
               *rng.normal(size=(3, pm.nv))) for _ in range(2)]
    # the jet's rows v, v′, v″, v‴ built once (np.stack alone costs several µs a call)
    jets = {id(st[0]): np.stack([st[1], st[2], st[3], st[1]]) for st in states}
    fid = pm.getFrameId("tool")
    it = [0]

    def state():
        it[0] ^= 1
        return states[it[0]]

    def pin_jac(q):
        return pin.computeFrameJacobian(pm, pd, q, fid, pin.LOCAL)

    rows = [
        ("τ: `inverse_dynamics`", "`pin.rnea`",
         lambda q, v, a, w: c.inverse_dynamics(q, v, a),
         lambda q, v, a, w: pin.rnea(pm, pd, q, v, a)),
        ("M: `mass_matrix`", "`pin.crba`", lambda q, v, a, w: c.mass_matrix(q),
         lambda q, v, a, w: pin.crba(pm, pd, q)),
        ("g: `gravity_torques`", "`pin.computeGeneralizedGravity`",
         lambda q, v, a, w: c.gravity_torques(q),
         lambda q, v, a, w: pin.computeGeneralizedGravity(pm, pd, q)),
        ("q̈: `forward_dynamics`", "`pin.aba`", lambda q, v, a, w: c.forward_dynamics(q, v, a),
         lambda q, v, a, w: pin.aba(pm, pd, q, v, a)),
        ("J: `frame_jacobian(q, 'tool')`", "`pin.computeFrameJacobian` LOCAL",
         lambda q, v, a, w: c.frame_jacobian(q, "tool"), lambda q, v, a, w: pin_jac(q)),
        ("τ, τ′, τ″: `torque_derivatives`", "one `pin.rnea`",
         lambda q, v, a, w: c.torque_derivatives((q, jets[id(q)])),
         lambda q, v, a, w: pin.rnea(pm, pd, q, v, a)),
        ("τ of the Python `LieJointRobot`", "`pin.rnea`",
         lambda q, v, a, w: robot.inverse_dynamics(q, v, a),
         lambda q, v, a, w: pin.rnea(pm, pd, q, v, a)),
    ]
    reps = 3 if args.quick else args.repeats
    target = 0.005 if args.quick else 0.02
    print(f"| call (nq = {pm.nq}, nv = {pm.nv}) | peer | ours / peer, median [min–max] "
          "| ours µs per call | max abs diff |")
    print("|---|---|---|---|---|")
    for name, peer, f, p in rows:
        ns = {"fo": lambda f=f: f(*state()), "fp": lambda p=p: p(*state())}
        to, tp = measure_group(["fo()", "fp()"], ns, reps, target)
        r = ratio_stat(to, tp)
        q, v, a, w = states[0]
        ours, theirs = np.asarray(f(q, v, a, w)), np.asarray(p(q, v, a, w))
        if "derivatives" in name:  # its first row is τ
            ours = ours[0]
        if "crba" in peer:  # Pinocchio fills the upper triangle
            theirs = np.triu(theirs) + np.triu(theirs, 1).T
        diff = float(np.abs(ours - theirs).max())
        print(f"| {name} | {peer} | {r.med:.2f} [{min(r.values):.2f}–{max(r.values):.2f}] "
              f"| {to.med:.2f} | {diff:.1e} |")


if __name__ == "__main__":
    main()
