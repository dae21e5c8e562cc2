"""HDCA (seed 002, issue 19 item 4) vs ABA on trees and on closed loops: CPU-time ratios in
one run, per call.

    PYTHONPATH=$PWD python bench/hdca.py [--reps 7]

* ``forward_dynamics(method="dca")`` (the compiled divide-and-conquer assembly,
  ``loops/_hdca.pyx``, + one refinement step) / ``forward_dynamics()`` (the compiled ABA) on the
  same robot and state, and / ``pin.aba`` where the model is the same (no mimic joints);
* the compiled assembly alone (no refinement) / the compiled ABA;
* the NumPy assembly (``HDCA.acceleration`` + refinement with the compiled RNEA: the path before
  the compiled kernel, now the fallback) / the compiled ABA — "before" in the same run;
* closed loops (test/loops/loops_mechanisms.py): ``forward_dynamics(method="dca")`` of the
  ClosedLoopRobot / its ``method="lagrange"`` (the acceleration-level baseline), and the
  full-coordinate HDCA (``hdca.acceleration``, compiled and NumPy) / the compiled ABA of the
  spanning tree at the same full state;
* robots: Panda (fingers locked, fixed base), a 30-joint serial chain (bench/robots.py), Talos
  (talos_reduced, floating base: the base a 6-DOF joint of the assembly), Panda with its finger
  mimic joint (a MimicRobot: the mimic row closed in the assembly; peer the MimicRobot's
  projected ABA solve);
* parallel assembly: the root's two subtrees (``HDCA.halves``) assembled in two threads vs one
  after the other (the same NumPy work), on the chain and Talos — does it pay on this machine?
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import threading
import time
import warnings

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [ROOT, HERE, os.path.join(ROOT, "test", "loops")]
warnings.simplefilter("ignore")

import mbs_dynamics as mbs  # noqa: E402
from mbs_dynamics.loops import hdca  # noqa: E402
from robots import chain_urdf, erd_root, locked_urdf_text  # noqa: E402
from settings import PANDA_LOCKED  # noqa: E402


def timeit(f, target=0.05, clock=time.process_time):
    n = 1
    while True:
        t0 = clock()
        for _ in range(n):
            f()
        dt = clock() - t0
        if dt > target:
            return dt / n
        n *= 2


def ratio(ours, peer, reps, clock=time.process_time):
    """Median [min–max] of ours/peer over ``reps`` back-to-back pairs (order alternating)."""
    rs, to, tp = [], [], []
    for i in range(reps):
        if i % 2 == 0:
            a, b = timeit(ours, clock=clock), timeit(peer, clock=clock)
        else:
            b, a = timeit(peer, clock=clock), timeit(ours, clock=clock)
        rs.append(a / b)
        to.append(a)
        tp.append(b)
    return np.median(rs), min(rs), max(rs), np.median(to), np.median(tp)


def robots():
    import pinocchio as pin
    panda = (erd_root() / "panda_description/urdf/panda.urdf").read_text()
    locked = locked_urdf_text(panda, PANDA_LOCKED)
    talos = str(erd_root() / "talos_data/robots/talos_reduced.urdf")
    out = []
    for label, src, fb in (("Panda (fingers locked)", locked, False),
                           ("chain30", chain_urdf(30), False),
                           ("Talos (talos_reduced, floating base)", talos, True),
                           ("Panda (finger mimic: MimicRobot)", panda, False)):
        r = mbs.load_urdf(src, floating_base=fb)
        pm = None
        if not isinstance(r, mbs.MimicRobot):
            root = pin.JointModelFreeFlyer()
            pm = (pin.buildModelFromXML(src, root) if "<" in src
                  else pin.buildModelFromUrdf(src, root)) if fb else (
                pin.buildModelFromXML(src) if "<" in src else pin.buildModelFromUrdf(src))
            assert list(pm.names[2 if fb else 1:]) == list(r.joint_names)
            assert pm.nq == r.nq  # revolute joints only: one coordinate each
        out.append((label, r, pm))
    return out


def state(r, rng):
    if r.floating_base:
        quat = rng.normal(size=4)
        q = np.r_[rng.normal(size=3), quat / np.linalg.norm(quat), rng.uniform(-1, 1, r.n)]
    else:
        q = rng.uniform(-1, 1, r.nq)
    v, tau = rng.normal(size=(2, r.nv))
    return q, v, tau


def parallel(r, q, v, tau, reps):
    """Wall-clock of the root's two subtrees assembled one after the other vs in two threads
    (the same work: Alg. 1 on the halves; the root and the disassembly are not timed)."""
    h = hdca._tree(r.model)
    st = h.state(q, v)
    A, B, _ = h.halves()
    f = np.einsum("nij,j->ni", st["M"], np.r_[0.0, 0.0, 0.0, r.model.gravity])
    beta = [np.zeros(d) for d in h.dim]

    def ctx():
        return h.context(st, f, tau, beta)

    def seq():
        c = ctx()
        h._assemble(A, c)
        h._assemble(B, c)

    def par():
        c = ctx()
        t = threading.Thread(target=h._assemble, args=(B, c))
        t.start()
        h._assemble(A, c)
        t.join()

    return ratio(par, seq, reps, clock=time.perf_counter), len(A), len(B)


def loops(reps, rng):
    """Closed-loop mechanisms: the ClosedLoopRobot's HDCA against its acceleration-level
    baseline, and the full-coordinate assembly (compiled, NumPy) against the spanning tree's
    compiled ABA (the unconstrained tree: the price of the closures)."""
    import loops_mechanisms as lm
    out = []
    for name in ("planar_fourbar", "spatial_fourbar", "delta", "two_loop_planar",
                 "parallelogram_arm"):
        u, lp, act = lm.ALL[name]()
        r = mbs.load_urdf(u, loops=lp, actuated=act)
        qa = r.q_assembled[r.actuated_index] + 0.05 * rng.standard_normal(r.n)
        qd, tau = rng.standard_normal((2, r.n))
        ref = r.forward_dynamics(qa, qd, tau, method="lagrange")
        ours = r.forward_dynamics(qa, qd, tau, method="dca")
        lab = f"{name} (loops)"
        out.append((lab, r.n, "forward_dynamics(method='dca') / method='lagrange'",
                    ratio(lambda: r.forward_dynamics(qa, qd, tau, method="dca"),
                          lambda: r.forward_dynamics(qa, qd, tau, method="lagrange"), reps),
                    np.abs(ours - ref).max() / max(1.0, np.abs(ref).max())))
        X = r.copy().expand(np.stack([qa, qd]))
        qf, vf = X[0], X[1]
        tf = rng.standard_normal(r.full_robot.nv)
        fr = r.full_robot
        h = hdca.HDCA(r.model, r._kin)
        new = h.fast_acceleration(qf, vf, tf)
        old = h.acceleration(qf, vf, tf, rnea=fr.inverse_dynamics)
        out.append((lab, fr.nv, "full-coordinate HDCA (compiled) / spanning tree's ABA",
                    ratio(lambda: h.fast_acceleration(qf, vf, tf),
                          lambda: fr.forward_dynamics(qf, vf, tf), reps),
                    np.abs(new - old).max() / max(1.0, np.abs(old).max())))
        out.append((lab, fr.nv, "full-coordinate HDCA (NumPy: before) / spanning tree's ABA",
                    ratio(lambda: h.acceleration(qf, vf, tf, rnea=fr.inverse_dynamics),
                          lambda: fr.forward_dynamics(qf, vf, tf), reps), float("nan")))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=7)
    a = ap.parse_args(argv)
    import pinocchio as pin
    rng = np.random.default_rng(0)
    rows, prow = [], []
    for label, r, pm in robots():
        q, v, tau = state(r, rng)
        aba = r.forward_dynamics(q, v, tau)
        ours = r.forward_dynamics(q, v, tau, method="dca")
        peer = ("MimicRobot's ABA (projected solve)" if isinstance(r, mbs.MimicRobot)
                else "compiled ABA")
        rows.append((label, r.nv, f"forward_dynamics(method='dca') / {peer}",
                     ratio(lambda: r.forward_dynamics(q, v, tau, method="dca"),
                           lambda: r.forward_dynamics(q, v, tau), a.reps),
                     np.abs(ours - aba).max() / max(1.0, np.abs(aba).max())))
        if pm is not None:
            pd = pm.createData()
            ref = pin.aba(pm, pd, q, v, tau)
            rows.append((label, r.nv, "forward_dynamics(method='dca') / pin.aba",
                         ratio(lambda: r.forward_dynamics(q, v, tau, method="dca"),
                               lambda: pin.aba(pm, pd, q, v, tau), a.reps),
                         np.abs(ours - ref).max() / max(1.0, np.abs(ref).max())))
            h = hdca._tree(r.model)
            raw = h.fast_acceleration(q, v, tau, refine=False)
            rows.append((label, r.nv, "compiled assembly alone (no refinement) / compiled ABA",
                         ratio(lambda: h.fast_acceleration(q, v, tau, refine=False),
                               lambda: r.forward_dynamics(q, v, tau), a.reps),
                         np.abs(raw - aba).max() / max(1.0, np.abs(aba).max())))
            old = h.acceleration(q, v, tau, rnea=r.inverse_dynamics)
            rows.append((label, r.nv, "NumPy HDCA (before; the fallback) / compiled ABA",
                         ratio(lambda: h.acceleration(q, v, tau, rnea=r.inverse_dynamics),
                               lambda: r.forward_dynamics(q, v, tau), a.reps),
                         np.abs(old - aba).max() / max(1.0, np.abs(aba).max())))
        else:
            h = hdca._tree(r.full_robot.model, mimic=True)
            K = h.compiled()
            try:
                h._ck = None  # the NumPy path (before)
                old = r.forward_dynamics(q, v, tau, method="dca")
                rows.append((label, r.nv, "NumPy HDCA (before; the fallback) / MimicRobot's ABA",
                             ratio(lambda: r.forward_dynamics(q, v, tau, method="dca"),
                                   lambda: r.forward_dynamics(q, v, tau), a.reps),
                             np.abs(old - aba).max() / max(1.0, np.abs(aba).max())))
            finally:
                h._ck = K
        if label.startswith(("chain", "Talos")):
            prow.append((label, *parallel(r, q, v, tau, a.reps)))
    rows += loops(a.reps, rng)
    print(f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}, numpy {np.__version__}, pinocchio "
          f"{pin.__version__}, load {tuple(round(x, 2) for x in os.getloadavg())}")
    print()
    print("| robot | nv | call / peer | ratio median [min–max] | ours [µs] | peer [µs] | "
          "max rel diff |")
    print("|---|---|---|---|---|---|---|")
    for label, nv, what, (med, lo, hi, to, tp), diff in rows:
        print(f"| {label} | {nv} | {what} | {med:.3g} [{lo:.3g}–{hi:.3g}] | {to * 1e6:.0f} | "
              f"{tp * 1e6:.1f} | {diff:.1e} |")
    print()
    print("| robot | nodes (halves) | two threads / sequential (wall) median [min–max] | "
          "two threads [µs] | sequential [µs] |")
    print("|---|---|---|---|---|")
    for label, (med, lo, hi, to, tp), na, nb in prow:
        print(f"| {label} | {na} + {nb} | {med:.3g} [{lo:.3g}–{hi:.3g}] | {to * 1e6:.0f} | "
              f"{tp * 1e6:.0f} |")


if __name__ == "__main__":
    main()
