#!/usr/bin/env python3
"""Identification of a long log (issue 20, item 4: 10⁵ samples of a 7-DOF arm in < 10 s).

Run from the repository root (build in place first: ``python setup.py build_ext --inplace``):

    python3 bench/identification_logs.py [--samples 100000] [--repeats 3]

A log of the bundled arm7 (hidden parameters, friction, noise) is simulated by Pinocchio (not
timed) and written as CSV; then ``mbs-dynamics identify`` (the CLI's code path, progress bar
off) is timed from the file to the three written files: wall clock and CPU time
(``time.process_time``, all threads of this process). With ``--peer``, for a peer, the same
samples' Pinocchio regressor (``pin.computeJointTorqueRegressor`` in a Python loop, stacked)
plus ``numpy.linalg.lstsq`` is timed once: what a user would write without us.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "test"))
import mbs_dynamics as mbs  # noqa: E402
from mbs_dynamics import cli, data  # noqa: E402
from mbs_dynamics.identification import logs  # noqa: E402

from identification_sim import fourier, perturbed_model, pin, simulate  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--samples", type=int, default=100_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--peer", action="store_true", help="also time Pinocchio + lstsq")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    path = data.robot("arm7")
    robot = mbs.load_urdf(path)
    model = perturbed_model(path.read_text(), rng)
    t = np.arange(args.samples) / 1000.0
    q, qd, qdd = fourier(t, 7, rng)
    tau = simulate(model, t, q, qd, qdd, 0.3, 0.2, 0.05, rng)
    with tempfile.TemporaryDirectory() as d:
        csv = Path(d) / "log.csv"
        logs.write_csv(csv, logs.JointLog(t, robot.joint_names, q, tau))
        print(f"arm7, {args.samples} samples at 1 kHz, CSV {csv.stat().st_size / 1e6:.1f} MB; "
              f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
        for r in range(args.repeats):
            w0, c0 = time.perf_counter(), time.process_time()
            rc = cli.main(["identify", str(path), str(csv), "-o", str(Path(d) / "out"),
                           "--quiet"])
            w1, c1 = time.perf_counter(), time.process_time()
            assert rc == 0
            print(f"repeat {r}: mbs-dynamics identify {w1 - w0:.2f} s wall, {c1 - c0:.2f} s CPU")
    if args.peer and pin is not None:
        pmodel = pin.buildModelFromUrdf(str(path))
        pdata = pmodel.createData()
        c0 = time.process_time()
        Y = np.concatenate([pin.computeJointTorqueRegressor(pmodel, pdata, q[k], qd[k], qdd[k])
                            for k in range(args.samples)])
        c1 = time.process_time()
        np.linalg.lstsq(Y, tau.ravel(), rcond=None)
        c2 = time.process_time()
        print(f"peer: Pinocchio regressor stacked {c1 - c0:.2f} s CPU, lstsq of the "
              f"{Y.shape[0]}x{Y.shape[1]} system {c2 - c1:.2f} s CPU (no filtering, no base "
              "parameters, no friction, no consistency)")


if __name__ == "__main__":
    main()
