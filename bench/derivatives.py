#!/usr/bin/env python3
"""Derivatives for optimal control against Pinocchio, as ratios in one run (issue 29).

Run from the repository root (build in place first: ``python setup.py build_ext --inplace``):

    python3 bench/derivatives.py [--robots panda,chain30,solo12,talos] [--repeats 11]

Pairs (ours, Pinocchio's), on the Panda (7, fixed), a 30-joint chain (fixed), solo12 (18,
floating) and TALOS (talos_reduced, 38, a floating humanoid):

- ``inverse_mass_matrix(q)`` / ``pin.computeMinverse``;
- its batch over N samples / a Python loop over ``pin.computeMinverse``;
- ``forward_dynamics_derivatives(q, v, τ)`` / ``pin.computeABADerivatives``;
- its batch / a Python loop over ``pin.computeABADerivatives``;
- regression checks of the shared kernels: ``forward_dynamics`` / ``pin.aba`` and
  ``inverse_dynamics_derivatives`` / ``pin.computeRNEADerivatives``;
- ``inverse_dynamics_second_order_derivatives(q, v, a)`` / one ``pin.computeRNEADerivatives``
  (more rows in ``bench/rnea_second_order.py``);
- closed loops (delta, two-loop planar, parallelogram arm): batches of constrained τ and forward
  dynamics and τ, τ′, τ″ jets / the Python loop over the single compiled call (``--robots ""`` for these alone).

Both calls of a pair are timed back to back in every repeat (the order alternating), each over a
loop of calls, in CPU time (``time.process_time``); the ratio ours/theirs is taken per repeat and
the median [min–max] printed. Ratios below 1 mean we are faster. Pinocchio returns views into its
Data; ours return new arrays (the fair comparison for a user). One OpenMP thread.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
import mbs_dynamics as mbs  # noqa: E402
from robots import chain_urdf, erd_root  # noqa: E402

ROBOTS = {
    "panda": ("panda_description/urdf/panda.urdf",
              {"panda_finger_joint1": 0.0, "panda_finger_joint2": 0.0}, False),
    "chain30": (None, {}, False),
    "solo12": ("solo_description/robots/solo12.urdf", {}, True),
    "talos": ("talos_data/robots/talos_reduced.urdf", {}, True),
}


def pair(name):
    import pinocchio as pin
    rel, locked, fb = ROBOTS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if rel is None:
            xml = chain_urdf(30)
            return mbs.load_urdf(xml), pin.buildModelFromXML(xml)
        path = str(erd_root() / rel)
        robot = mbs.load_urdf(path, locked_joints=locked, floating_base=fb)
        pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if fb else \
            pin.buildModelFromUrdf(path)
    if locked:
        pm = pin.buildReducedModel(pm, [pm.getJointId(n) for n in locked], pin.neutral(pm))
    assert pm.nv == robot.nv, (name, pm.nv, robot.nv)
    return robot, pm


def states(robot, rng, N):
    if robot.floating_base:
        quat = rng.normal(size=(N, 4))
        quat /= np.linalg.norm(quat, axis=1)[:, None]
        q = np.c_[rng.normal(size=(N, 3)), quat, rng.uniform(-1, 1, (N, robot.n))]
    else:
        q = rng.uniform(-1, 1, (N, robot.n))
    return q, rng.normal(size=(N, robot.nv)), rng.normal(size=(N, robot.nv))


def loop_time(f, number):
    t0 = time.process_time()
    for _ in range(number):
        f()
    return (time.process_time() - t0) / number * 1e6


def ratio(ours, theirs, number, repeats):
    ours(), theirs()
    ro, rt, r = [], [], []
    for k in range(repeats):
        order = (ours, theirs) if k % 2 == 0 else (theirs, ours)
        t = {f: loop_time(f, number) for f in order}
        ro.append(t[ours])
        rt.append(t[theirs])
        r.append(t[ours] / t[theirs])
    return statistics.median(ro), statistics.median(rt), statistics.median(r), min(r), max(r)


def rows(name, a):
    import pinocchio as pin
    robot, pm = pair(name)
    pd = pm.createData()
    rng = np.random.default_rng(0)
    N = a.batch
    Q, V, T = states(robot, rng, N)  # the benchmark robots have no continuous joints: same q
    q, v, tau = Q[0], V[0], T[0]
    qdd = robot.forward_dynamics(q, v, tau)
    num = max(200, int(a.number * 7 / robot.nv))
    out = []

    def add(label, ours, theirs, number, per=1):
        mo, mt, med, lo, hi = ratio(ours, theirs, number, a.repeats)
        out.append((name, robot.nv, label, mo / per, mt / per, med, lo, hi))

    add("M⁻¹: `inverse_mass_matrix(q)` / `pin.computeMinverse`",
        lambda: robot.inverse_mass_matrix(q), lambda: pin.computeMinverse(pm, pd, q), num)

    def pin_minv_loop():
        for x in Q:
            pin.computeMinverse(pm, pd, x)
    add(f"M⁻¹ batch N={N} / Python loop over `pin.computeMinverse`",
        lambda: robot.inverse_mass_matrix(Q), pin_minv_loop, 1, N)
    add("∂FD: `forward_dynamics_derivatives(q, v, τ)` / `pin.computeABADerivatives`",
        lambda: robot.forward_dynamics_derivatives(q, v, tau),
        lambda: pin.computeABADerivatives(pm, pd, q, v, tau), max(100, num // 4))

    def pin_aba_loop():
        for x, y, z in zip(Q, V, T):
            pin.computeABADerivatives(pm, pd, x, y, z)
    if _batched_fd(robot):
        add(f"∂FD batch N={N} / Python loop over `pin.computeABADerivatives`",
            lambda: robot.forward_dynamics_derivatives(Q, V, T), pin_aba_loop, 1, N)
    # regression checks of the kernels this work shares (the ABA's 6×6 Cholesky, the RNEA
    # partials' passes)
    add("ABA: `forward_dynamics(q, v, τ)` / `pin.aba` (regression check)",
        lambda: robot.forward_dynamics(q, v, tau), lambda: pin.aba(pm, pd, q, v, tau), num)
    add("∂τ: `inverse_dynamics_derivatives(q, v, a)` / `pin.computeRNEADerivatives` "
        "(regression check)", lambda: robot.inverse_dynamics_derivatives(q, v, qdd),
        lambda: pin.computeRNEADerivatives(pm, pd, q, v, qdd), max(100, num // 3))
    if hasattr(robot, "inverse_dynamics_second_order_derivatives"):  # bench/rnea_second_order.py
        add("∂²τ: `inverse_dynamics_second_order_derivatives` / one `pin.computeRNEADerivatives`",
            lambda: robot.inverse_dynamics_second_order_derivatives(q, v, qdd),
            lambda: pin.computeRNEADerivatives(pm, pd, q, v, qdd), max(50, num // 10))
    return out


def loop_rows(a):
    """Closed loops (test/loops/loops_mechanisms.py): batches of constrained τ and forward
    dynamics in one compiled loop / the Python loop over the single (compiled) call."""
    sys.path.insert(0, str(HERE.parent / "test" / "loops"))
    import loops_mechanisms as lm
    from test_loops_kinematics import trajectory
    out = []
    N = a.batch
    for name in ("delta", "two_loop_planar", "parallelogram_arm"):
        u, loops, act = lm.ALL[name]()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = mbs.load_urdf(u, loops=loops, actuated=act)
        rows = [trajectory(r, t) for t in np.linspace(0.0, 2.0, N)]
        Q, QD, QDD = (np.ascontiguousarray([x[k] for x in rows]) for k in range(3))
        tau = r.inverse_dynamics(Q, QD, QDD)
        for label, f in (("τ", r.inverse_dynamics), ("FD", r.forward_dynamics)):
            third = QDD if label == "τ" else tau

            def single(f=f, third=third):
                for x, y, z in zip(Q, QD, third):
                    f(x, y, z)
            mo, mt, med, lo, hi = ratio(lambda f=f, third=third: f(Q, QD, third), single, 1,
                                        a.repeats)
            out.append((f"loop:{name}", r.n, f"closed-loop {label} batch N={N} / Python loop "
                        "over the single call", mo / N, mt / N, med, lo, hi))
        QS = np.ascontiguousarray([x[:5] for x in rows])  # jets τ, τ′, τ″

        def jets():
            for x in QS:
                r.torque_derivatives(x)
        mo, mt, med, lo, hi = ratio(lambda: r.torque_derivatives(QS), jets, 1, a.repeats)
        out.append((f"loop:{name}", r.n, f"closed-loop τ, τ′, τ″ batch N={N} / Python loop over "
                    "the single call", mo / N, mt / N, med, lo, hi))
    return out


def _batched_fd(robot):
    try:
        robot.forward_dynamics_derivatives(np.zeros((0, robot.nq)), np.zeros((0, robot.nv)),
                                           np.zeros((0, robot.nv)))
        return True
    except (ValueError, TypeError):
        return False


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--robots", default="panda,chain30,solo12,talos")
    ap.add_argument("--repeats", type=int, default=11)
    ap.add_argument("--number", type=int, default=4000, help="calls per timing loop (7 DOF)")
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--no-loops", action="store_true", help="skip the closed-loop rows")
    a = ap.parse_args(argv)
    print(f"{a.repeats} interleaved repeats, CPU time, OMP_NUM_THREADS="
          f"{os.environ.get('OMP_NUM_THREADS')}; µs per call (batches: per sample)")
    print("| robot | nv | call | ours µs | Pinocchio µs | ratio median [min–max] |")
    print("|---|---|---|---|---|---|")
    names = [x for x in a.robots.split(",") if x]
    for name in names + ([] if a.no_loops else ["loops"]):
        for r in (loop_rows(a) if name == "loops" else rows(name, a)):
            print("| {} | {} | {} | {:.2f} | {:.2f} | {:.3f} [{:.3f}–{:.3f}] |".format(*r),
                  flush=True)


if __name__ == "__main__":
    main()
