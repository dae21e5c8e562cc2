"""Where the time of the Panda's calls goes, through the public API only (cProfile, N sweeps,
input kinds)."""
from __future__ import annotations

import cProfile
import pstats
from pathlib import Path

import numpy as np

from cases import Case, batch_states
from robots import _first_line
from timing import measure, measure_group


def _noop3(a, b, c):
    return None


def bench_profile(case: Case, args, log) -> dict:
    """Where the time of the Panda's calls goes, through the public API only.

    * single calls: the public method, the same with ``out=``, a pure-Python no-op with the same
      arguments (the interpreter's call floor), ``np.empty(n)`` (the allocation a method without
      ``out=`` makes), and a cProfile of the public call (functions by own time);
    * batches: one call over N ∈ {1, 10, …} samples, fitted as fixed cost + N × per-sample cost;
    * inputs: the cost of inputs that are not C-contiguous float64 arrays.
    """
    r, n = case.robot, case.robot.n
    q, qd, qdd, qddd, _ = case.qs
    tau = r.inverse_dynamics(q, qd, qdd)
    ns = dict(r=r, q=q, qd=qd, qdd=qdd, qs=case.qs, tau=tau, o1=np.empty(n), oM=np.empty((n, n)),
              o3=np.empty((3, n)), np=np, n=n, noop3=_noop3)
    specs = {  # name: (public, out=, profiled callable)
        "inverse_dynamics": ("r.inverse_dynamics(q, qd, qdd)",
                             "r.inverse_dynamics(q, qd, qdd, out=o1)",
                             lambda: r.inverse_dynamics(q, qd, qdd)),
        "gravity_torques": ("r.gravity_torques(q)", "r.gravity_torques(q, out=o1)",
                            lambda: r.gravity_torques(q)),
        "mass_matrix": ("r.mass_matrix(q)", "r.mass_matrix(q, out=oM)", lambda: r.mass_matrix(q)),
        "coriolis_matrix": ("r.coriolis_matrix(q, qd)", "r.coriolis_matrix(q, qd, out=oM)",
                            lambda: r.coriolis_matrix(q, qd)),
        "forward_dynamics": ("r.forward_dynamics(q, qd, tau)",
                             "r.forward_dynamics(q, qd, tau, out=o1)",
                             lambda: r.forward_dynamics(q, qd, tau)),
        "torque_derivatives k=2": ("r.torque_derivatives(qs)", "r.torque_derivatives(qs, out=o3)",
                                   lambda: r.torque_derivatives(case.qs)),
    }
    ns["qs"] = case.qs
    floors = measure_group(["noop3(q, qd, qdd)", "np.empty(n)"], ns, args.repeat,
                           args.target_time)
    out = {"floors": {"python no-op call, 3 arguments": floors[0], "np.empty(n)": floors[1]},
           "calls": {}, "profiles": {}, "batch": {}, "inputs": []}
    for name, (pub, witho, fn) in specs.items():
        try:
            st = measure_group([pub, witho], ns, args.repeat, args.target_time)
        except Exception as e:  # noqa: BLE001 - a public call that fails is reported
            out["calls"][name] = f"failed: {type(e).__name__}: {_first_line(e)}"
            continue
        out["calls"][name] = st
        out["profiles"][name] = cprofile_top(fn, 2000 if args.repeat < 5 else 20000)
        log(f"  profile {name:24s} public {st[0].med:7.3f} µs  out= {st[1].med:7.3f} µs")
    # batches: time of one call vs N
    QS_all = batch_states(case, max(args.batch, 1), args.seed)
    sizes = sorted({s for s in (1, 10, 100, 1000, 10_000) if s <= args.batch} | {args.batch})
    for name, mk, fn in (
            ("inverse_dynamics", lambda QS: tuple(np.ascontiguousarray(QS[:, i]) for i in range(3)),
             lambda a: r.inverse_dynamics(*a)),
            ("torque_derivatives k=2", lambda QS: (np.ascontiguousarray(QS),),
             lambda a: r.torque_derivatives(*a))):
        pts = []
        for N in sizes:
            a = mk(QS_all[:N])
            ns2 = {"fn": fn, "a": a}
            st = measure("fn(a)", ns2, args.repeat, args.target_time)
            pts.append((N, st))
        # two-point fit through the smallest and the largest N (the largest fixes the slope)
        (n0, s0), (n1, s1) = pts[0], pts[-1]
        slope = (s1.med - s0.med) / (n1 - n0) if n1 > n0 else s0.med / n0
        icept = s0.med - slope * n0
        out["batch"][name] = {"points": pts, "per_sample": float(slope), "fixed": float(icept)}
        log(f"  profile batch {name:24s} fixed {icept:8.2f} µs + {slope:.3f} µs/sample")
    # inputs
    X = np.ascontiguousarray(np.stack([q, qd, qdd], axis=1))  # columns are strided views
    ro = [np.array(x) for x in (q, qd, qdd)]
    for a in ro:
        a.setflags(write=False)
    kinds = [("C-contiguous float64 (reference)", (q, qd, qdd)),
             ("read-only float64", tuple(ro)),
             ("strided views (columns of an (n, 3) array)", (X[:, 0], X[:, 1], X[:, 2])),
             ("Python lists", (q.tolist(), qd.tolist(), qdd.tolist())),
             ("float32", tuple(x.astype(np.float32) for x in (q, qd, qdd))),
             ("int64", tuple(np.round(x).astype(np.int64) for x in (q, qd, qdd)))]
    # issue 21 item 5: every kind next to the C-contiguous call and to NumPy's own conversion
    # of the same three inputs (``np.ascontiguousarray(x)``, with ``dtype=np.float64``
    # where x is not float64 already), one group
    ns3 = {"r": r, "np": np}
    stmts, labels = [], []
    for k, (label, a) in enumerate(kinds):
        ns3[f"a{k}"] = a
        try:
            res = r.inverse_dynamics(*a)
            if not np.all(np.isfinite(res)):
                raise ValueError("non-finite result")
        except Exception as e:  # noqa: BLE001 - the error is the finding
            out["inputs"].append((label, f"{type(e).__name__}: {_first_line(e)[:90]}", None))
            continue
        labels.append(label)
        f64 = np.asarray(a[0]).dtype == np.float64  # then NumPy needs no dtype argument
        stmts += [f"r.inverse_dynamics(*a{k})",
                  "; ".join(f"np.ascontiguousarray(a{k}[{j}]"
                            + (")" if f64 else ", dtype=np.float64)") for j in range(3))]
    sts = measure_group(stmts, ns3, args.repeat, args.target_time)
    for m, label in enumerate(labels):
        out["inputs"].append((label, sts[2 * m], sts[2 * m + 1]))
    N = min(100, args.batch)
    QSb = QS_all[:N]
    C = [np.ascontiguousarray(QSb[:, i]) for i in range(3)]
    F = [np.asfortranarray(np.ascontiguousarray(QSb[:, i])) for i in range(3)]
    for label, a in ((f"batch (N = {N}, n) C order", C), (f"batch (N = {N}, n) Fortran order", F)):
        ns3 = {"r": r, "a": a}
        try:
            st = measure("r.inverse_dynamics(*a)", ns3, args.repeat, args.target_time)
            out["inputs"].append((label, st, None))
        except Exception as e:  # noqa: BLE001
            out["inputs"].append((label, f"{type(e).__name__}: {_first_line(e)[:90]}", None))
    return out


def cprofile_top(fn, calls, top=6):
    """cProfile of ``calls`` calls of ``fn``: the top functions by own time, µs per outer call.

    The profiler adds its own cost to every Python-level call it sees, so the shares matter more
    than the absolute numbers. Compiled code appears only where it is a builtin call."""
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(calls):
        fn()
    pr.disable()
    st = pstats.Stats(pr)
    rows = []
    total = sum(v[2] for v in st.stats.values())
    for (file, line, func), (cc, nc, tt, ct, _) in st.stats.items():
        if func == "<lambda>" or "disable" in func:
            continue
        where = f"{Path(file).name}:{line} {func}" if file != "~" else func
        rows.append((tt / calls * 1e6, nc / calls, where))
    rows.sort(reverse=True)
    return {"total_us": total / calls * 1e6, "rows": rows[:top]}
