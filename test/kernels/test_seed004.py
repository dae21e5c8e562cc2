"""Seed 004 §6.2: the KUKA LBR iiwa 14 R820 example (examples/seed004/iiwa14.urdf).

Q, Q̇, Q̈ of ``Robot.torque_derivatives`` (recursive and closed form) along the example's
cos-function joint trajectory q_i(t) = a_i cos(ω_i t) + b_i, against Pinocchio loading the same
URDF: Q = ``pin.rnea``; Q̇ = ∂τ/∂q q̇ + ∂τ/∂v q̈ + M q⃛ from ``computeRNEADerivatives`` (exact chain
rule); Q̈ = eighth-order central differences of that Pinocchio Q̇ along the analytic trajectory.
"""
import importlib.util
import warnings
from pathlib import Path

import numpy as np
import pytest

import mbs_dynamics as mbs

HERE = Path(__file__).resolve().parents[2] / "examples" / "seed004"
D1 = np.array([1 / 280, -4 / 105, 1 / 5, -4 / 5, 0.0, 4 / 5, -1 / 5, 4 / 105, -1 / 280])


def _example():
    spec = importlib.util.spec_from_file_location("seed004_run", HERE / "run.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _pin_dtau(pin, model, data, x):
    """Pinocchio's Q and Q̇ at the jet x = (q, q̇, q̈, q⃛, …)."""
    q, v, a, j = x[0], x[1], x[2], x[3]
    tau = pin.rnea(model, data, q, v, a).copy()
    dq, dv, M = pin.computeRNEADerivatives(model, data, q, v, a)
    M = np.triu(M) + np.triu(M, 1).T
    return tau, dq @ v + dv @ a + M @ j


def test_urdf_is_the_one_model_py_writes():
    spec = importlib.util.spec_from_file_location("seed004_model", HERE / "model.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert (HERE / "iiwa14.urdf").read_text(encoding="utf-8") == mod.urdf()
    # the seed's frames: joint 3 at r3 along y of frame 2, joint 5 at -r5 along y of frame 4
    assert mod.JOINTS[2][0] == (0.0, 0.42, 0.0) and mod.JOINTS[4][0] == (0.0, -0.40, 0.0)


@pytest.mark.parametrize("method", ["recursive", "closed_form"])
def test_q_dq_ddq_match_pinocchio(method):
    pin = pytest.importorskip("pinocchio")
    run = _example()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # links 4 and 7: the rounded table's triangle slack
        robot = mbs.load_urdf(str(HERE / "iiwa14.urdf"))
    model = pin.buildModelFromUrdf(str(HERE / "iiwa14.urdf"))
    data = model.createData()
    assert robot.n == model.nv == 7
    ts = np.linspace(0.0, run.T_END, 23)
    ours = robot.torque_derivatives(run.jets(ts), method=method)    # (N, 3, 7)
    h = 4e-3        # eighth order: truncation ~h⁸ f⁽⁹⁾ and rounding ~1e-16 |Q̇|/h both < 1e-11
    for t, o in zip(ts, ours):
        tau, dtau = _pin_dtau(pin, model, data, run.jet(t))
        dd = np.array([_pin_dtau(pin, model, data, run.jet(t + k * h))[1]
                       for k in range(-4, 5)])
        ddtau = np.tensordot(D1, dd, axes=1) / h
        np.testing.assert_allclose(o[0], tau, rtol=0, atol=1e-10)
        np.testing.assert_allclose(o[1], dtau, rtol=0, atol=1e-10)
        np.testing.assert_allclose(o[2], ddtau, rtol=0, atol=1e-10)
    assert np.abs(ours[:, 0]).max() > 10.0       # the check is not on a trivial signal
