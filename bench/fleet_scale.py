#!/usr/bin/env python3
"""Identification as map-reduce at scale (issue 30): 10⁷ samples of a 7-DOF arm, CPU time,
µs per sample, peak memory, load average; optionally the same map steps on a Dask scheduler
and 1 or 2 worker processes started as separate processes (as a deployment would).

Run from the repository root (build in place first: ``python setup.py build_ext --inplace``):

    OMP_NUM_THREADS=1 python3 bench/fleet_scale.py [--samples 1000000] [--copies 10]
        [--dask-workers 1 2]

A log of the bundled arm7 at 1 kHz (``--samples`` rows; torques from the kernels' inverse
dynamics with friction and noise, not timed) is written once as CSV and read ``--copies`` times
(hard links, one log each), so ``samples × copies`` samples are identified: scan, plan, every
map step, reduce and the one solve, in this process (``workers=0``). Reported: CPU time
(``time.process_time``) and µs per sample, the peak RSS of this process
(``resource.getrusage``; the map step's memory is bounded by the chunk), and the load average.

With ``--dask-workers``: for each count n, a ``dask scheduler`` and n ``dask worker``
processes (``--nthreads 1``) are started with ``subprocess``, the map steps run through
:func:`mbs_dynamics.identification.distributed.run_chunks`, and the wall time, each worker's
CPU time and peak RSS (``client.run``) and the load average are printed, then the processes
are stopped.
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
import mbs_dynamics as mbs  # noqa: E402
from mbs_dynamics import data  # noqa: E402
from mbs_dynamics.identification import chunked, logs, mapreduce  # noqa: E402
from mbs_dynamics.identification.pipeline import Unknowns, solve_statistics  # noqa: E402


def write_log(path, robot, samples, rng):
    t = np.arange(samples) / 1000.0
    w = 2 * np.pi * np.array([0.1, 0.2, 0.3])
    a = rng.uniform(0.2, 0.6, (3, 7))
    ph = rng.uniform(0, 2 * np.pi, (3, 7))
    q = sum(a[k] / w[k] * np.sin(w[k] * t[:, None] + ph[k]) for k in range(3))
    qd = sum(a[k] * np.cos(w[k] * t[:, None] + ph[k]) for k in range(3))
    qdd = sum(-a[k] * w[k] * np.sin(w[k] * t[:, None] + ph[k]) for k in range(3))
    tau = robot.inverse_dynamics(q, qd, qdd) + 0.2 * qd + 0.1 * np.sign(qd)
    tau += rng.normal(scale=0.05, size=tau.shape)
    logs.write_csv(path, logs.JointLog(t + 1.75e9, robot.joint_names, q, tau))


def _worker_stats():
    import resource as r
    return time.process_time(), r.getrusage(r.RUSAGE_SELF).ru_maxrss / 1024.0


def _warm():
    import scipy.signal  # noqa: F401

    import mbs_dynamics.identification.mapreduce  # noqa: F401


def run_dask(n, problem, chunks):
    from dask.distributed import Client

    from mbs_dynamics.identification import distributed
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    port = 8786 + 17 + n
    sched = subprocess.Popen(["dask", "scheduler", "--host", "127.0.0.1", "--port", str(port),
                              "--no-dashboard"], env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    workers = [subprocess.Popen(["dask", "worker", f"tcp://127.0.0.1:{port}", "--nthreads",
                                 "1", "--no-dashboard", "--host", "127.0.0.1"], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
               for _ in range(n)]
    try:
        client = Client(f"tcp://127.0.0.1:{port}", timeout=60)
        client.wait_for_workers(n, timeout=120)
        client.run(_warm)
        s0 = client.run(_worker_stats)
        w0 = time.perf_counter()
        res, err = distributed.run_chunks(client, mapreduce.map_chunk, problem, chunks)
        wall = time.perf_counter() - w0
        s1 = client.run(_worker_stats)
        assert not err and len(res) == len(chunks), err
        cpu = {k: s1[k][0] - s0[k][0] for k in s1}
        rss = {k: s1[k][1] for k in s1}
        print(f"dask, {n} worker(s): {wall:.1f} s wall; worker CPU "
              + ", ".join(f"{v:.1f} s" for v in cpu.values())
              + f" ({sum(cpu.values()) / wall:.2f} cores busy); worker peak RSS "
              + ", ".join(f"{v:.0f} MB" for v in rss.values())
              + f"; load average {os.getloadavg()[0]:.1f}")
        client.close()
        return wall, res
    finally:
        for p in workers + [sched]:
            p.terminate()
        for p in workers + [sched]:
            p.wait(timeout=30)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--samples", type=int, default=1_000_000)
    ap.add_argument("--copies", type=int, default=10)
    ap.add_argument("--dask-workers", type=int, nargs="*", default=[])
    ap.add_argument("--keep", type=Path, default=None, help="directory for the log (kept)")
    a = ap.parse_args()
    robot = mbs.load_urdf(data.robot("arm7"))
    d = Path(a.keep or tempfile.mkdtemp())
    d.mkdir(parents=True, exist_ok=True)
    try:
        src = d / "log0.csv"
        if not src.exists() or chunked.scan(src, robot.joint_names).rows != a.samples:
            write_log(src, robot, a.samples, np.random.default_rng(0))
        paths = [src]
        for k in range(1, a.copies):
            p = d / f"log{k}.csv"
            if not p.exists():
                os.link(src, p)
            paths.append(p)
        print(f"arm7, {a.copies} logs x {a.samples} samples at 1 kHz (CSV "
              f"{src.stat().st_size / 1e6:.0f} MB each); load average "
              f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; OMP_NUM_THREADS="
              f"{os.environ.get('OMP_NUM_THREADS', 'unset')}")
        import scipy.signal  # noqa: F401  (import not timed)
        rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
        c0, w0 = time.process_time(), time.perf_counter()
        stats, unk = mapreduce.statistics(robot, paths)
        neq = stats[0][0]
        sol = solve_statistics(robot, unk, neq, consistent=None)
        cpu, wall = time.process_time() - c0, time.perf_counter() - w0
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
        N = neq.N
        print(f"in this process: {N} samples identified in {cpu:.1f} s CPU ({wall:.1f} s wall), "
              f"{cpu / N * 1e6:.2f} us per sample; peak RSS {rss:.0f} MB (before: {rss0:.0f} "
              f"MB); load average {os.getloadavg()[0]:.1f}; residual RMS per joint "
              + " ".join(f"{x:.3f}" for x in sol.rms))
        if a.dask_workers:
            problem = mapreduce.make_problem(Unknowns(robot), type(robot))
            chunks = []
            for i, p in enumerate(paths):
                chunks += mapreduce.plan(chunked.scan(p, robot.joint_names), problem.cutoff,
                                         log_id=i)
            walls = {}
            for n in a.dask_workers:
                walls[n], res = run_dask(n, problem, chunks)
                red = mapreduce.reduce(res)[0][0]
                rel = np.abs(red.A - neq.A).max() / np.abs(neq.A).max()
                print(f"  same statistics as in this process: max relative difference "
                      f"{rel:.1e}")
            if 1 in walls and 2 in walls:
                print(f"2 workers vs 1: {walls[1] / walls[2]:.2f}x (wall time)")
    finally:
        if a.keep is None:
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
