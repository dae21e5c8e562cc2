#!/usr/bin/env python3
"""The evidence behind the kernel technology (issue 10): what one call from Python costs before
any arithmetic, for the ways a compiled kernel can be reached. Run from the repository root
(build in place first: ``python setup.py build_ext --inplace``):

    python3 bench/entry_overhead.py

It times, on a one-joint robot (so the arithmetic is a few dozen flops), µs per call, best of 7:
our Cython entry (argument checks, NumPy C API, one kernel call) through the public method and
directly; `pin.rnea` on the same one-joint model; a Numba ``@njit`` function taking four arrays
and doing nothing (the dispatch floor of the previous kernels; needs numba, skipped without);
a ctypes call into libm with no arrays (the ctypes floor).
"""
import ctypes
import ctypes.util
import sys
import timeit
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import mbs_dynamics as mbs  # noqa: E402
from mbs_dynamics.kernels import _rnea  # noqa: E402

URDF = """<robot name="one"><link name="base"/>
  <joint name="j" type="revolute"><parent link="base"/><child link="l"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
  <link name="l"><inertial><origin xyz="0.1 0 0"/><mass value="1"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link></robot>"""


def best(f, number=100000):
    return min(timeit.repeat(f, number=number, repeat=7)) / number * 1e6


def main():
    robot = mbs.load_urdf(URDF)
    q = np.zeros(1)
    out = np.empty(1)
    d = robot.data
    rows = [("Cython entry, public method `robot.inverse_dynamics(q, qd, qdd)`",
             best(lambda: robot.inverse_dynamics(q, q, q))),
            ("the same with `out=`", best(lambda: robot.inverse_dynamics(q, q, q, out=out))),
            ("Cython entry called directly (`_rnea.inverse_dynamics`, out given)",
             best(lambda: _rnea.inverse_dynamics(d, q, q, q, None, out)))]
    try:
        import pinocchio as pin
        pm = pin.buildModelFromXML(URDF)
        pd = pm.createData()
        rows.append(("`pin.rnea` (Boost.Python, Eigen), same model", best(
            lambda: pin.rnea(pm, pd, q, q, q))))
    except ImportError:
        rows.append(("`pin.rnea`", float("nan")))
    try:
        from numba import njit

        @njit
        def nothing(a, b, c, o):
            return 0
        nothing(q, q, q, out)
        rows.append(("Numba `@njit` dispatch, 4 arrays, no work", best(
            lambda: nothing(q, q, q, out))))
    except ImportError:
        rows.append(("Numba `@njit` dispatch (numba not installed)", float("nan")))
    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    libm.cos.restype, libm.cos.argtypes = ctypes.c_double, [ctypes.c_double]
    rows.append(("ctypes call into libm, no arrays", best(lambda: libm.cos(0.5))))
    rows.append(("pure-Python function, three arguments, no work", best(lambda: (lambda a, b, c: 0)(q, q, q))))
    print("| call (one-joint robot) | µs per call |\n|---|---|")
    for name, t in rows:
        print(f"| {name} | {t:.3f} |")


if __name__ == "__main__":
    main()
