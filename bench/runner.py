"""Side-by-side speed benchmark of mbs_dynamics against Pinocchio, dynibo and MuJoCo (issue 10).

Not part of the installed package: it lives in the repository's ``bench/`` (one module per
concern: settings, robots, peers (and casadi_c, the compiled limit), cases, timing, calls,
profiling, trajectories, startup, machine, report, report_sections; this module is the run) and
imports ``mbs_dynamics`` from the checkout (``bench/run_benchmark.py`` puts the checkout first on
``sys.path``). Only the public API of ``mbs_dynamics`` is used, so the same script measures the
package whatever its kernels are built with.

Everything is measured in one process, interleaved: in each repeat our call and every anchor's
call are timed back to back, round-robin (the starting call rotates between repeats), so the ratio
ours/anchor of that repeat sees the same machine load. Tables give medians with [min–max] over the
repeats. Writes ``README.md`` (tables, the command that reproduces them, machine facts) and
``scaling.png`` into ``--out-dir``.

Robots: a Panda (fingers locked), a UR5, an ``n``-joint generated chain (:func:`chain_urdf`) and
Baxter (a fixed-base tree, its gripper fingers locked), all from example-robot-data, with gravity
(0, 0, −9.80665) m/s² for every library (dynibo's fixed standard gravity).

Anchors: ``pin.rnea``, ``pin.crba``, ``pin.computeCoriolisMatrix``,
``pin.computeGeneralizedGravity``, ``pin.aba``; Pinocchio's τ′ route (``computeRNEADerivatives``
then τ′ = ∂τ/∂q q̇ + ∂τ/∂q̇ q̈ + M q⃛, the chain rule of doc/math.md) and its finite-difference τ″;
dynibo's ``inverse_dynamics``, ``gravity``, ``mass_matrix``, ``forward_dynamics`` (checked against
Pinocchio first, or left out with the reason); ``mujoco.mj_inverse`` for reference.

Run ``python3 bench/run_benchmark.py`` (``--quick`` for a smoke run, ``--startup`` adds the
fresh-install start-up, ``--help`` lists the options).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

from calls import bench_batch, bench_limit, bench_single
from cases import make_case
from machine import blas_threads, machine_facts, omp_threads
from profiling import bench_profile
from report import command_line, write_report
from settings import DEFAULTS, HERE, QUICK, ROBOTS
from startup import bench_startup
from timing import Row, Stat, set_clock
from trajectories import bench_enrichment, bench_scaling, plot_scaling, scaling_summary


def _pos_int(s):
    v = int(s)
    if v <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {s}")
    return v


def _pos_float(s):
    v = float(s)
    if not (v > 0 and math.isfinite(v)):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {s}")
    return v


def _robots(s):
    names = [x.strip() for x in s.split(",") if x.strip()]
    bad = [x for x in names if x not in ROBOTS]
    if bad or not names:
        raise argparse.ArgumentTypeError(f"robots must be a comma list of {', '.join(ROBOTS)}")
    return ",".join(names)


def _robots_or_none(s):
    return "none" if s.strip() == "none" else _robots(s)


def _sizes(s):
    try:
        v = [int(x) for x in s.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {s}") from None
    if not v or min(v) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers, got {s}")
    return ",".join(str(x) for x in sorted(set(v)))


def get_argument_parser() -> argparse.ArgumentParser:
    """Options of ``bench/run_benchmark.py``; unset ones take ``--quick``'s or the defaults."""
    p = argparse.ArgumentParser(prog="run_benchmark.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true",
                   help="smoke run: Panda and a 4-joint chain, tiny repeat counts (seconds)")
    p.add_argument("--startup", action="store_true",
                   help="also time start-up after a fresh install in a new venv (minutes)")
    p.add_argument("--keep-venv", action="store_true", help="keep the --startup venv")
    p.add_argument("--use-installed", action="store_true",
                   help="measure the installed mbs_dynamics, not this checkout's source tree "
                        "(handled by run_benchmark.py)")
    p.add_argument("--out-dir", default=None,
                   help="where README.md and scaling.png go (default: bench/ of this checkout)")
    p.add_argument("--robots", type=_robots, help="comma list of %s" % ", ".join(ROBOTS))
    p.add_argument("--chain-n", type=_pos_int, help="joints of the generated chain (30)")
    p.add_argument("--repeat", type=_pos_int, help="timed repeats per call (11)")
    p.add_argument("--target-time", type=_pos_float, help="seconds per timed loop (0.02)")
    p.add_argument("--batch", type=_pos_int, help="samples of the batch path (10000)")
    p.add_argument("--batch-repeat", type=_pos_int, help="timed repeats of each batch (5)")
    p.add_argument("--scaling", type=_sizes, help="chain sizes of the scaling plot")
    p.add_argument("--enrich-duration", type=_pos_float,
                   help="seconds of the enriched trajectory (10)")
    p.add_argument("--skip-scaling", action="store_true", help="no scaling plot")
    p.add_argument("--skip-mujoco", action="store_true", help="no MuJoCo reference rows")
    p.add_argument("--blas-threads", type=int,
                   help="NumPy BLAS threads during the run, 0 = leave as is (1)")
    p.add_argument("--seed", type=int, help="random states (0)")
    p.add_argument("--omp-threads", type=int,
                   help="OpenMP threads of the package's batches, 0 = leave as is (1: the "
                        "ratios count work, issue 21)")
    p.add_argument("--clock", choices=("cpu", "wall"),
                   help="cpu: process CPU time, all threads (default); wall: perf_counter")
    p.add_argument("--casadi", type=_robots_or_none,
                   help="robots whose CasADi-generated C is timed as the compiled limit "
                        "(comma list, 'none'; default panda: a 30-joint chain's C takes a "
                        "minute to compile)")
    p.add_argument("--json", default=None, help="also write the raw results here")
    return p


def parse_args(argv=None):
    """Parse and fill the unset options from ``QUICK`` (with ``--quick``) and ``DEFAULTS``."""
    args = get_argument_parser().parse_args(argv)
    base = dict(DEFAULTS, **QUICK) if args.quick else DEFAULTS
    for k, v in base.items():
        if getattr(args, k, None) is None:
            setattr(args, k, v)
    return args


def run(args) -> int:
    """Run the benchmark described by ``args`` (from :func:`parse_args`); 0 on success."""
    try:
        import pinocchio  # noqa: F401
    except ImportError:
        print("the benchmark needs Pinocchio: pip install pin example-robot-data", file=sys.stderr)
        return 2
    try:
        import mbs_dynamics  # noqa: F401
    except ImportError as e:
        print(f"cannot import mbs_dynamics ({e}): run from a checkout (built in place if it has "
              "compiled parts) or install it and pass --use-installed", file=sys.stderr)
        return 2
    t_start = time.perf_counter()
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)

    def log(msg):
        print(msg, flush=True)

    facts = machine_facts()
    facts["NumPy BLAS"] = blas_threads(args.blas_threads)
    facts["OpenMP threads of the batches"] = omp_threads(args.omp_threads)
    set_clock(args.clock)
    log("machine: " + "; ".join(f"{k}: {v}" for k, v in facts.items()))
    res = {"facts": facts, "command": command_line(args), "single": {}, "batch": {}, "cases": {}}
    profile_case = None
    for name in args.robots.split(","):
        log(f"{name}: loading")
        case = make_case(name, args)
        res["cases"][name] = {"label": case.label, "n": case.robot.n, "source": case.source,
                              "mj_note": case.mj_note, "sym": case.sym, "dy_note": case.dy_note,
                              "dy_check": case.dy.check if case.dy else {},
                              "dy_order": case.dy.order if case.dy else ""}
        res["single"][name] = bench_single(case, args, log)
        res["batch"][name] = bench_batch(case, args, log)
        if name in args.casadi.split(","):
            res.setdefault("limit", {})[name] = bench_limit(case, args, res["batch"][name], log)
        if name == "panda":
            profile_case = case
    if profile_case is not None:
        res["profile"] = bench_profile(profile_case, args, log)
    res["enrichment"] = bench_enrichment(args, log)
    if not args.skip_scaling:
        sc = bench_scaling(args, log)
        res["scaling"] = sc
        res["scaling_summary"] = scaling_summary(sc)
        plot_scaling(sc, res["scaling_summary"], out_dir / "scaling.png")
    if args.startup:
        t0 = time.perf_counter()
        res["startup"] = bench_startup(args, log)
        res["startup"]["elapsed"] = time.perf_counter() - t0
    res["load_end"] = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    res["elapsed"] = time.perf_counter() - t_start
    write_report(out_dir / "README.md", res, args)
    if args.json:
        Path(args.json).write_text(json.dumps(_jsonable(res), indent=1))
    log(f"wrote {out_dir / 'README.md'} in {res['elapsed']:.0f} s")
    return 0


def _jsonable(x):
    if isinstance(x, (Row, Stat)):
        return x.to_dict()
    if isinstance(x, dict):
        return {k: _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, (np.floating, np.integer)):
        return x.item()
    return x


def main(argv=None) -> int:
    """Entry point: ``python3 bench/run_benchmark.py [options]``."""
    args = parse_args(argv)
    if args.out_dir is None:
        args.out_dir = str(HERE)
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
