"""The generated code from plain C (issue 21, item 2): test/codegen/main.c links it, is built
with ``gcc -std=c99 -pedantic -Wall -Wextra -Werror`` and run; it compares every function with
Pinocchio's values written into expected.h by this test (jets: ``robot.torque_derivatives``)."""
from __future__ import annotations

import shutil
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pytest

import mbs_dynamics as mbs
from mbs_dynamics import codegen
from mbs_dynamics.codegen.generate import c_name
from conftest import PANDA, erd_path, pin_model, pin_q, sym

GCC = shutil.which("gcc")
MAIN = Path(__file__).with_name("main.c")


def _arr(name, rows):
    rows = np.atleast_2d(rows)
    body = ",\n".join("  {" + ", ".join(repr(float(x)) for x in r) + "}" for r in rows)
    return f"static const double {name}[NCASES][{rows.shape[1]}] = {{\n{body}\n}};\n"


def _states(robot, rng, fb):
    qs = []
    for _ in range(3):
        if fb:
            quat = rng.normal(size=4)
            qs.append(np.r_[rng.normal(size=3), quat / np.linalg.norm(quat),
                            rng.uniform(-1.5, 1.5, robot.n)])
        else:
            qs.append(rng.uniform(-1.5, 1.5, robot.n))
    return qs


@pytest.mark.skipif(GCC is None, reason="no gcc")
@pytest.mark.parametrize("case", ["panda", "solo12", "lie"])
def test_c_program_links_generated_code(case, tmp_path):
    pin = pytest.importorskip("pinocchio")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", mbs.URDFWarning)
        if case == "panda":
            src = erd_path(PANDA[0])
            robot = mbs.load_urdf(src, locked_joints=PANDA[1])
            pm, frame, fb = pin_model(src, PANDA[1]), "panda_hand", False
        elif case == "lie":  # a spherical and an inner floating joint (test_spherical_joint)
            from test_spherical_joint import _geometry, _pin, _urdf
            robot = mbs.load_urdf(_urdf(_geometry()))
            pm, frame, fb = _pin(_geometry()), "tool", False
        else:
            src = erd_path("solo_description/robots/solo12.urdf")
            robot = mbs.load_urdf(src, floating_base=True)
            pm = pin.buildModelFromUrdf(src, pin.JointModelFreeFlyer())
            frame, fb = "FL_FOOT", True
    pd = pm.createData()
    rng = np.random.default_rng(7)
    Q = _states(robot, rng, fb) if case != "lie" else [
        pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq)) for _ in range(3)]
    V, A, VS = [], [], []
    TAU, MM, G, TFD, FD, JAC, JET = [], [], [], [], [], [], []
    for q in Q:
        pq = pin_q(pm, q) if case == "panda" else q  # solo12, lie: Pinocchio's layout
        v, a, tfd = rng.normal(size=(3, robot.nv))
        vs = rng.normal(size=(4, robot.nv))
        V.append(v), A.append(a), VS.append(vs.ravel()), TFD.append(tfd)
        TAU.append(pin.rnea(pm, pd, pq, v, a))
        MM.append(sym(pin.crba(pm, pd, pq)).ravel())
        G.append(pin.computeGeneralizedGravity(pm, pd, pq))
        FD.append(pin.aba(pm, pd, pq, v, tfd))
        pin.computeJointJacobians(pm, pd, pq)
        pin.updateFramePlacements(pm, pd)
        JAC.append(pin.getFrameJacobian(pm, pd, pm.getFrameId(frame), pin.LOCAL).ravel())
        JET.append(robot.torque_derivatives((q, vs)).ravel())
    codegen.generate(robot, frames=[frame], out_dir=tmp_path)
    exp = (f"#define NCASES {len(Q)}\n#define TOL 1e-12\n"
           f"#define FRAME_JACOBIAN robot_frame_jacobian_{c_name(frame)}\n"
           + "".join(_arr(n, x) for n, x in [("Q", Q), ("V", V), ("A", A), ("TAU", TAU),
                                                ("MM", MM), ("G", G), ("TAU_FD", TFD),
                                                ("FD", FD), ("JAC", JAC), ("VS", VS),
                                                ("JET", JET)]))
    (tmp_path / "expected.h").write_text(exp)
    shutil.copy(MAIN, tmp_path / "main.c")
    build = subprocess.run([GCC, "-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror", "-O2",
                            "main.c", "robot.c", "-o", "main", "-lm"], cwd=tmp_path,
                           capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    run = subprocess.run([str(tmp_path / "main")], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.startswith("OK: 3 cases, 0 failures")
