#!/usr/bin/env python3
"""Identification as map-reduce (issue 30): CPU per sample of the map step, and 2 Dask workers
against 1.

Run from the repository root (build in place first: ``python setup.py build_ext --inplace``):

    OMP_NUM_THREADS=1 python3 bench/fleet.py [--samples 200000] [--repeats 3] [--dask]

A log of the bundled arm7 at 1 kHz (torques simulated by Pinocchio, not timed) is written as CSV.
Per sample, in CPU time (``time.process_time``) of this process: the whole map step
(:func:`mbs_dynamics.identification.mapreduce.map_chunk` over every chunk) and its parts —
reading and parsing the rows, filtering, the statistics (regressor + Gram updates) — and the
compiled regressor alone on the same states, the peer the map step is compared with. With
``--dask``: wall time of the map steps of the log on a local cluster of 1 and of 2 worker
processes (one thread each; imports done on every worker before the clock starts),
alternating, the ratio 1-worker / 2-worker per repeat, and the workers' CPU time (how many
cores they got: on a shared machine with the kernel's autogroup scheduling, the processes of one
session share one session's slice of the CPU, however many there are).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "test" / "identification"))
import mbs_dynamics as mbs  # noqa: E402
from mbs_dynamics import data  # noqa: E402
from mbs_dynamics.identification import (chunked, estimate, filtering, logs,  # noqa: E402
                                         mapreduce)
from mbs_dynamics.identification.pipeline import Unknowns  # noqa: E402

from identification_sim import fourier, perturbed_model, simulate  # noqa: E402


def cpu(f):
    c = time.process_time()
    out = f()
    return time.process_time() - c, out


def _warm():
    import scipy.signal  # noqa: F401

    import mbs_dynamics.identification.mapreduce  # noqa: F401


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--samples", type=int, default=200_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--rows", type=int, default=None, help="rows per chunk")
    ap.add_argument("--dask", action="store_true", help="also time 1 vs 2 Dask workers")
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    path = data.robot("arm7")
    robot = mbs.load_urdf(path)
    model = perturbed_model(path.read_text(), rng)
    t = np.arange(a.samples) / 1000.0
    q, qd, qdd = fourier(t, 7, rng)
    tau = simulate(model, t, q, qd, qdd, 0.3, 0.2, 0.05, rng)
    with tempfile.TemporaryDirectory() as d:
        csv = Path(d) / "log.csv"
        logs.write_csv(csv, logs.JointLog(t + 1.75e9, robot.joint_names, q, tau))
        print(f"arm7, {a.samples} samples at 1 kHz, CSV {csv.stat().st_size / 1e6:.1f} MB; "
              f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; "
              f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}")
        unk = Unknowns(robot)
        problem = mapreduce.make_problem(unk, type(robot))
        index = chunked.scan(csv, robot.joint_names)
        chunks = mapreduce.plan(index, problem.cutoff, a.rows)
        N = sum(c.keep_b - c.keep_a for c in chunks)
        print(f"{len(chunks)} chunks of {chunks[0].keep_b - chunks[0].keep_a} rows")
        for r in range(a.repeats):
            t_scan, _ = cpu(lambda: chunked.scan(csv, robot.joint_names))
            t_map, _ = cpu(lambda: [mapreduce.map_chunk(problem, c) for c in chunks])
            t_read = t_filt = t_acc = t_reg = 0.0
            for c in chunks:
                dt, seg = cpu(lambda: chunked.read_rows(index, c.lo, c.hi))
                t_read += dt
                keep = slice(c.keep_a - c.lo, c.keep_b - c.lo)
                dt, fs = cpu(lambda: filtering.filter_segment(seg, problem.cutoff, keep, c.rate))
                t_filt += dt
                dt, _ = cpu(lambda: estimate.accumulate(robot, unk.F, fs.q, fs.qd, fs.qdd,
                                                        seg.effort[keep], names=unk.names))
                t_acc += dt
                Y = np.empty((estimate.CHUNK, 7, 70))

                def reg():
                    for s in range(0, fs.q.shape[0], estimate.CHUNK):
                        e = min(fs.q.shape[0], s + estimate.CHUNK)
                        robot.regressor(fs.q[s:e], fs.qd[s:e], fs.qdd[s:e], out=Y[:e - s])
                dt, _ = cpu(reg)
                t_reg += dt
            us = 1e6 / N
            print(f"repeat {r}: map step {t_map * us:.2f} us/sample (scan {t_scan * us:.2f}); "
                  f"parts: read+parse {t_read * us:.2f}, filter {t_filt * us:.2f}, "
                  f"statistics {t_acc * us:.2f} (of which the regressor {t_reg * us:.2f}); "
                  f"map without reading / regressor = {(t_map - t_read) / t_reg:.2f}")
        if a.dask:
            from dask.distributed import Client

            from mbs_dynamics.identification import distributed
            ratios = []
            for r in range(a.repeats):
                wall, work = {}, {}
                for n in (1, 2):
                    with distributed.local_cluster(n) as cl, Client(cl) as c:
                        c.run(_warm)  # imports (scipy.signal takes seconds) on every worker
                        c0 = sum(c.run(time.process_time).values())
                        w0 = time.perf_counter()
                        res, err = distributed.run_chunks(c, mapreduce.map_chunk, problem,
                                                          chunks)
                        wall[n] = time.perf_counter() - w0
                        work[n] = sum(c.run(time.process_time).values()) - c0
                        assert not err and len(res) == len(chunks)
                ratios.append(wall[1] / wall[2])
                print(f"repeat {r}: 1 worker {wall[1]:.2f} s wall ({work[1]:.2f} s CPU), "
                      f"2 workers {wall[2]:.2f} s wall ({work[2]:.2f} s CPU, "
                      f"{work[2] / wall[2]:.2f} cores busy), speed-up {ratios[-1]:.2f}x; "
                      f"load average {os.getloadavg()[0]:.1f}")
            print(f"speed-up median {statistics.median(ratios):.2f}x "
                  f"[{min(ratios):.2f}-{max(ratios):.2f}]")


if __name__ == "__main__":
    main()
