"""Closed loops (issue 19): CPU-time ratios in one run, ours / peer, per call.

    PYTHONPATH=$PWD python bench/loops.py [--reps 7]

* constrained inverse dynamics ``ClosedLoopRobot.inverse_dynamics`` (actuated q, q̇, q̈: Newton
  assembly from the last configuration + dependent jets + RNEA + projection) vs Pinocchio's
  equivalent pipeline on the spanning tree, given the FULL motion: ``rnea`` + frame placements
  and LOCAL frame Jacobians of the loop frames + the null-space projection (numpy; the test
  oracle's code). (Pinocchio 4.1's
  ``computeInverseDynamicsConstraintForces`` is the point-contact NCP solver — c_ref, contact
  points — not a loop-closure inverse dynamics, so it is not the peer.)
* forward dynamics ``forward_dynamics(method="lagrange" | "hdca")`` vs ``pin.constraintDynamics``
  (ProximalSettings(1e-12, 1e-12, 10)) on the same mechanism and state;
* HDCA vs the compiled ABA on a tree (arm7) — ``Robot.forward_dynamics(method="hdca")``;
* HDCA vs the acceleration-level baseline: one right-hand side of seed 002's cases.
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time
import warnings

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "test"), os.path.join(ROOT, "examples", "seed002")]
warnings.simplefilter("ignore")

import mbs_dynamics as mbs  # noqa: E402
import loops_mechanisms as lm  # noqa: E402
from test_loops_kinematics import PinLoops  # noqa: E402


def timeit(f, target=0.05):
    n = 1
    while True:
        t0 = time.process_time()
        for _ in range(n):
            f()
        dt = time.process_time() - t0
        if dt > target:
            return dt / n
        n *= 2


def ratio(ours, peer, reps):
    """Median [min–max] of ours/peer over ``reps`` back-to-back pairs (order alternating)."""
    rs, to, tp = [], [], []
    for i in range(reps):
        if i % 2 == 0:
            a = timeit(ours)
            b = timeit(peer)
        else:
            b = timeit(peer)
            a = timeit(ours)
        rs.append(a / b)
        to.append(a)
        tp.append(b)
    return np.median(rs), min(rs), max(rs), np.median(to), np.median(tp)


def pin_setup(name):
    import pinocchio as pin
    from mbs_dynamics.kernels import lie
    u, loops, act = lm.ALL[name]()
    r = mbs.load_urdf(u, loops=loops, actuated=act)
    pm = pin.buildModelFromXML(u)
    pd = pm.createData()
    cms = []
    for lp in loops:
        def place(link, o):
            fr = pm.frames[pm.getFrameId(link, pin.BODY)]
            o = o or {}
            T = lie.pose(lie.rpy(*o.get("rpy", (0, 0, 0))), o.get("xyz", (0, 0, 0)))
            return fr.parentJoint, fr.placement * pin.SE3(T)
        j1, M1 = place(lp["frame_a"], lp.get("origin_a"))
        j2, M2 = place(lp["frame_b"], lp.get("origin_b"))
        ct = pin.ContactType.CONTACT_3D if lp["type"] == "connect" else pin.ContactType.CONTACT_6D
        cms.append(pin.RigidConstraintModel(ct, pm, j1, M1, j2, M2, pin.ReferenceFrame.LOCAL))
    cds = [c.createData() for c in cms]
    pin.initConstraintDynamics(pm, pd, cms, cds)
    return pin, r, pm, pd, cms, cds


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=7)
    a = ap.parse_args(argv)
    rows = []
    for name in ("planar_fourbar", "spatial_fourbar", "two_loop_planar", "parallelogram_arm"):
        pin, r, pm, pd, cms, cds = pin_setup(name)
        rng = np.random.default_rng(0)
        q = r.q_assembled[r.actuated_index] + 0.05
        qd, qdd = rng.standard_normal((2, r.n))
        X = r.expand(np.stack([q, qd, qdd]))
        act, dep = r.actuated_index, np.setdiff1d(np.arange(r.n_full), r.actuated_index)

        P = PinLoops(*lm.ALL[name]()[:2])

        def pin_id():
            t = pin.rnea(P.model, P.data, X[0], X[1], X[2])
            K = P.jacobian(X[0])  # frame placements + LOCAL frame Jacobians → relative twist
            Gd = -np.linalg.lstsq(K[:, dep], K[:, act], rcond=None)[0]
            return t[act] + Gd.T @ t[dep]

        tau = r.inverse_dynamics(q, qd, qdd)
        diff = np.abs(pin_id() - tau).max()
        rows.append((name, "inverse_dynamics (actuated) / pin rnea + constraint Jacobian "
                     "+ projection", ratio(lambda: r.inverse_dynamics(q, qd, qdd), pin_id,
                                           a.reps), diff))
        tf = np.zeros(r.n_full)
        tf[act] = tau
        ps = pin.ProximalSettings(1e-12, 1e-12, 10)

        def pin_fd():
            return pin.constraintDynamics(pm, pd, X[0], X[1], tf, cms, cds, ps)

        for m in ("lagrange", "hdca"):
            diff = np.abs(r.forward_dynamics(q, qd, tau, method=m) - pin_fd()[act]).max()
            rows.append((name, f"forward_dynamics(method='{m}') / pin.constraintDynamics",
                         ratio(lambda: r.forward_dynamics(q, qd, tau, method=m), pin_fd, a.reps),
                         diff))
    arm = mbs.load_urdf(os.path.join(ROOT, "mbs_dynamics", "data", "robots", "arm7.urdf"))
    q, qd, t = np.random.default_rng(1).standard_normal((3, arm.n))
    rows.append(("arm7 (tree)", "forward_dynamics(method='hdca') / ABA (compiled)",
                 ratio(lambda: arm.forward_dynamics(q, qd, t, method="hdca"),
                       lambda: arm.forward_dynamics(q, qd, t), a.reps),
                 np.abs(arm.forward_dynamics(q, qd, t, method="hdca")
                        - arm.forward_dynamics(q, qd, t)).max()))
    import mechanisms as me
    from mbs_dynamics.loops.lagrange import acceleration
    from mbs_dynamics.loops.simulate import _hdca
    for k in (1, 2, 3):
        r = me.load(k)
        h = _hdca(r)
        z = np.zeros(r.n_full)
        rows.append((f"seed 002 case {k}", "HDCA rhs (q̇, Ṗ) / acceleration-level rhs (q̈)",
                     ratio(lambda: h.rhs(r.q_assembled, z, z),
                           lambda: acceleration(r, r.q_assembled, z, z), a.reps), float("nan")))
    import pinocchio
    print(f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}, numpy {np.__version__}, pinocchio "
          f"{pinocchio.__version__}, load {os.getloadavg()}")
    print()
    print("| mechanism | call / peer | ratio median [min–max] | ours [µs] | peer [µs] | "
          "max abs diff |")
    print("|---|---|---|---|---|---|")
    for name, what, (med, lo, hi, to, tp), diff in rows:
        print(f"| {name} | {what} | {med:.3g} [{lo:.3g}–{hi:.3g}] | {to * 1e6:.0f} | "
              f"{tp * 1e6:.1f} | {diff:.2g} |")


if __name__ == "__main__":
    main()
