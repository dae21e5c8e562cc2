#!/usr/bin/env python3
"""What the thread guard costs (issue 22 item 13): single-thread calls of this tree against a
peer tree without the guard (the tree it was merged onto, built in place), in one run.

Every public kernel entry now takes the Data's owner flag (``claim``/``unclaim`` in
``kernels/_data.pxd``: one thread-id read and two integer writes, under the GIL) and a
MimicRobot holds it across its kernel sequence (``Data.acquire``/``release``). Run from the
repository root, after building both trees in place (``python setup.py build_ext --inplace``):

    mkdir /tmp/before && git archive main | tar -x -C /tmp/before   # the peer: main without it
    (cd /tmp/before && python setup.py build_ext --inplace)
    python3 bench/thread_guard.py --before /tmp/before

The two trees are timed alternately in fresh subprocesses (``--rounds`` each; the median of the
per-round best-of-5 CPU times per call is reported), so that machine load hits both alike.
Prints a Markdown table: µs per call before, after, and the ratio after/before.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent

CHILD = r'''
import json, sys, time
import numpy as np
import mbs_dynamics as mbs
from mbs_dynamics import data

ONE = """<robot name="one"><link name="base"/>
  <joint name="j" type="revolute"><parent link="base"/><child link="l"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
  <link name="l"><inertial><origin xyz="0.1 0 0"/><mass value="1"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link></robot>"""
L = ('<link name="{0}"><inertial><origin xyz="0 0 0.1"/><mass value="1"/><inertia ixx="0.01" '
     'ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>')
J = ('<joint name="{0}" type="revolute"><parent link="{1}"/><child link="{2}"/><origin '
     'xyz="0 0 0.2"/><axis xyz="0 1 0"/><limit lower="-1" upper="1" effort="1" velocity="1"/>{3}'
     '</joint>')
MIMIC = ('<robot name="m">' + L.format("b") + L.format("a") + L.format("c")
         + J.format("j1", "b", "a", "") + J.format("j2", "a", "c", '<mimic joint="j1" multiplier="2"/>')
         + "</robot>")


def best(f, number):
    ts = []
    for _ in range(5):
        t0 = time.process_time()
        for _ in range(number):
            f()
        ts.append((time.process_time() - t0) / number * 1e6)
    return min(ts)


one = mbs.load_urdf(ONE)
arm = mbs.load_urdf(data.robot("arm7"))
mim = mbs.load_urdf(MIMIC)
q1, o1 = np.zeros(1), np.empty(1)
rng = np.random.default_rng(0)
q, v, a = rng.uniform(-1, 1, (3, 7))
o7, M = np.empty(7), np.empty((7, 7))
qs = rng.uniform(-1, 1, (5, 7))
Q, V, A = rng.uniform(-1, 1, (3, 100, 7))
O = np.empty((100, 7))
qm = np.array([0.3])
rows = {
    "one-joint `inverse_dynamics(q, qd, qdd, out=)` (entry overhead)":
        best(lambda: one.inverse_dynamics(q1, q1, q1, out=o1), 20000),
    "arm7 `inverse_dynamics(..., out=)`": best(lambda: arm.inverse_dynamics(q, v, a, out=o7), 20000),
    "arm7 `mass_matrix(q, out=)`": best(lambda: arm.mass_matrix(q, out=M), 20000),
    "arm7 `forward_dynamics(..., out=)`": best(lambda: arm.forward_dynamics(q, v, a, out=o7), 20000),
    "arm7 `gravity_torques(q, out=)`": best(lambda: arm.gravity_torques(q, out=o7), 20000),
    "arm7 `torque_derivatives(qs)` (k = 2)": best(lambda: arm.torque_derivatives(qs), 10000),
    "arm7 batch `inverse_dynamics` N = 100": best(lambda: arm.inverse_dynamics(Q, V, A, out=O), 1000),
    "mimic pair `MimicRobot.inverse_dynamics`": best(lambda: mim.inverse_dynamics(qm, qm, qm), 10000),
}
if hasattr(arm, "frame_jacobian"):
    J = np.empty((6, 7))
    rows["arm7 `frame_jacobian(q, 'arm7_tool', out=)`"] = best(
        lambda: arm.frame_jacobian(q, "arm7_tool", out=J), 20000)
json.dump(rows, sys.stdout)
'''


def run(tree):
    env = dict(os.environ, PYTHONPATH=str(tree), OMP_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, check=True, capture_output=True,
                         text=True, cwd=str(tree)).stdout
    return json.loads(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before", required=True, type=Path,
                    help="a checkout of the commit before the guard, built in place")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    before, after = {}, {}
    for _ in range(args.rounds):
        for tree, acc in ((args.before, before), (HERE, after)):
            for k, t in run(tree).items():
                acc.setdefault(k, []).append(t)
    print("| call (single thread, CPU time) | before µs | after µs | after / before |")
    print("|---|---|---|---|")
    for k in after:
        if k not in before:
            continue
        b, a = statistics.median(before[k]), statistics.median(after[k])
        print(f"| {k} | {b:.3f} | {a:.3f} | {a / b:.3f} |")


if __name__ == "__main__":
    main()
