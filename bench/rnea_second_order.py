#!/usr/bin/env python3
"""Second-order derivatives of inverse dynamics against Pinocchio, as ratios in one run (issue 29).

Run from the repository root (build in place first: ``python setup.py build_ext --inplace``):

    python3 bench/rnea_second_order.py [--robots panda,chain30,solo12,talos] [--repeats 11]

Pinocchio's Python wheel does not expose ``ComputeRNEASecondOrderDerivatives`` (its C++ call is
timed by ``bench/pinocchio_so.py``, last rows), so the Python peers are
one ``pin.computeRNEADerivatives`` call (the issue's unit: the target is ≤ 5× it) and the
2·nv + 1 calls of the cheapest differences of it (one-sided along q and q̇, what a user without
the C++ call would do; ``pin.integrate`` not counted). Rows:

- ``inverse_dynamics_second_order_derivatives(q, v, a)`` / one ``pin.computeRNEADerivatives``;
- the same / 2·nv + 1 ``pin.computeRNEADerivatives`` calls (a Python loop);
- the same with ``out=`` (a preallocated output, as a loop over states would use) / one call;
- its batch of N samples, per sample / one ``pin.computeRNEADerivatives``;
- the floor any route pays: writing the 4·nv³ doubles of the output once (``fill`` of a
  preallocated (4, nv, nv, nv) array, no allocation) / one ``pin.computeRNEADerivatives``;
- Pinocchio's own C++ ``ComputeRNEASecondOrderDerivatives`` / its own C++
  ``computeRNEADerivatives`` (``bench/pinocchio_so.py``: compiled with g++ -O3 -march=native from
  the pip-installed ``pin`` wheel's headers, both calls in one C++ process, the same interleaving;
  its four tensors are zeroed in every call, as its documentation requires). This is the ratio
  the reference implementation itself achieves. Skipped with a message when no compiler or headers
  are found, or with ``--no-cpp``. The tensors of both are compared once per robot (the maximum
  difference relative to the largest entry is printed);
- our single call's median / that C++ second-order call's median (µs of the two rows; two
  processes one after the other, not interleaved: indicative).

Timing as in ``bench/derivatives.py`` (whose robots, states and interleaved ratio it reuses):
both calls of a pair back to back in every repeat, the order alternating, CPU time
(``time.process_time``), the ratio per repeat, median [min–max] printed. One OpenMP thread.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from derivatives import pair, ratio, states  # noqa: E402


def rows(name, a):
    import pinocchio as pin
    robot, pm = pair(name)
    pd = pm.createData()
    rng = np.random.default_rng(0)
    Q, V, A = states(robot, rng, a.batch)
    q, v, qdd = Q[0], V[0], A[0]
    nv = robot.nv
    num = max(20, int(a.number * 7 / nv ** 2))
    f = robot.inverse_dynamics_second_order_derivatives
    out = []

    def add(label, ours, theirs, number, per=1):
        mo, mt, med, lo, hi = ratio(ours, theirs, number, a.repeats)
        out.append((name, nv, label, mo / per, mt / per, med, lo, hi))

    def one():
        pin.computeRNEADerivatives(pm, pd, q, v, qdd)

    E = np.eye(nv) * 1e-6
    qs = [pin.integrate(pm, q, e) for e in E]

    def differences():
        pin.computeRNEADerivatives(pm, pd, q, v, qdd)
        for x in qs:
            pin.computeRNEADerivatives(pm, pd, x, v, qdd)
        for e in E:
            pin.computeRNEADerivatives(pm, pd, q, v + e, qdd)

    add("`inverse_dynamics_second_order_derivatives` / one `pin.computeRNEADerivatives`",
        lambda: f(q, v, qdd), one, num * 10)
    add(f"same / {2 * nv + 1} `pin.computeRNEADerivatives` (one-sided differences)",
        lambda: f(q, v, qdd), differences, num)
    res = np.empty((4, nv, nv, nv))
    add("same with `out=` / one `pin.computeRNEADerivatives`",
        lambda: f(q, v, qdd, out=res), one, num * 10)

    def loop():
        for x, y, z in zip(Q, V, A):
            pin.computeRNEADerivatives(pm, pd, x, y, z)
    add(f"batch N={a.batch}, per sample / one `pin.computeRNEADerivatives` (a loop of N)",
        lambda: f(Q, V, A), loop, 1, a.batch)
    buf = np.empty((4, nv, nv, nv))
    add(f"floor: writing the {4 * nv ** 3} output doubles once / one `pin.computeRNEADerivatives`",
        lambda: buf.fill(0.0), one, num * 10)
    if a.cpp:
        out += cpp_rows(name, nv, pm, q, v, qdd, f(q, v, qdd), num * 10, a.repeats, out[0])
    return out


def cpp_rows(name, nv, pm, q, v, qdd, ours, number, repeats, first):
    """Pinocchio's C++ second-order call / its C++ first-order call (one process), the largest
    difference of our tensors from its tensors, and our call's median (``first``, the single-call
    row) over its C++ second-order call's median (two processes, one after the other)."""
    import pinocchio_so
    try:
        exe = pinocchio_so.build()
    except pinocchio_so.Unavailable as e:
        print(f"(skipped Pinocchio's C++ rows for {name}: {e})", file=sys.stderr)
        return []
    theirs = pinocchio_so.tensors(exe, pm, q, v, qdd)
    err = max(float(np.abs(o - t).max() / max(np.abs(t).max(), 1.0))
              for o, t in zip(ours, theirs))
    t = pinocchio_so.timings(exe, pm, q, v, qdd, number, repeats)
    r = t[:, 0] / t[:, 1]
    so, fo = np.median(t, axis=0)
    mine = first[3]
    return [(name, nv, "Pinocchio's C++ `ComputeRNEASecondOrderDerivatives` / its C++ "
             f"`computeRNEADerivatives` (ours vs its tensors: {err:.1e})", so, fo,
             float(np.median(r)), float(r.min()), float(r.max())),
            (name, nv, "ours (the first row's median) / Pinocchio's C++ "
             "`ComputeRNEASecondOrderDerivatives` (medians; two processes, not interleaved)",
             mine, so, mine / so, mine / so, mine / so)]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--robots", default="panda,chain30,solo12,talos")
    ap.add_argument("--repeats", type=int, default=11)
    ap.add_argument("--number", type=int, default=2000, help="scales the calls per timing loop")
    ap.add_argument("--batch", type=int, default=50)
    ap.add_argument("--no-cpp", dest="cpp", action="store_false",
                    help="skip Pinocchio's C++ second-order call (built with g++ on first use)")
    a = ap.parse_args(argv)
    print(f"{a.repeats} interleaved repeats, CPU time, OMP_NUM_THREADS="
          f"{os.environ.get('OMP_NUM_THREADS')}; µs per call (batches: per sample)")
    print("| robot | nv | call / peer | call µs | peer µs | ratio median [min–max] |")
    print("|---|---|---|---|---|---|")
    for name in [x for x in a.robots.split(",") if x]:
        for r in rows(name, a):
            print("| {} | {} | {} | {:.2f} | {:.2f} | {:.3f} [{:.3f}–{:.3f}] |".format(*r),
                  flush=True)


if __name__ == "__main__":
    main()
