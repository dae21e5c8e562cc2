"""Closed loops, batches in one compiled loop (issue 29): ``inverse_dynamics`` and
``forward_dynamics`` on (N, ·) inputs equal the loop over the single calls bit for bit (each
sample is the single call's steps in the same order, the assembly warm-started from the previous
sample), on every test mechanism and on a floating base; the compiled batch entry is taken (not
the Python fallback); and the batch agrees with the NumPy path (an independent formulation)."""
from __future__ import annotations

import numpy as np
import pytest

from test_loops_compiled import floating_arm, numpy_path, rel
from test_loops_kinematics import NAMES, load, trajectory


def _states(r, N=12):
    rows = [trajectory(r, t) for t in np.linspace(0.0, 1.5, N)]
    Q, QD, QDD = (np.array([x[k] for x in rows]) for k in range(3))
    return Q, QD, QDD


def _floating_states(r, N=8, seed=0):
    rng = np.random.default_rng(seed)
    qa = r.q_assembled[r.actuated_index]
    Q, V, A = [], [], []
    for k in range(N):
        quat = rng.normal(size=4)
        q = np.r_[rng.normal(size=3), quat / np.linalg.norm(quat),
                  qa + 0.02 * k * rng.uniform(-1, 1, r.n)]
        Q.append(q)
        V.append(rng.normal(size=r.nv) * 0.5)
        A.append(rng.normal(size=r.nv) * 0.5)
    return np.array(Q), np.array(V), np.array(A)


@pytest.mark.parametrize("name", NAMES)
def test_batch_equals_single_calls(name):
    r, _, _ = load(name)
    Q, QD, QDD = _states(r)
    tau = np.random.default_rng(1).normal(size=QD.shape)
    a, b = r.copy(), r.copy()
    assert a._cw.inverse_dynamics_batch(Q, QD, QDD) is not None  # the compiled batch decides
    a, b = r.copy(), r.copy()
    got = a.inverse_dynamics(Q, QD, QDD)
    want = np.array([b.inverse_dynamics(*x) for x in zip(Q, QD, QDD)])
    assert np.array_equal(got, want)
    slow = numpy_path(r)
    assert rel(got, np.array([slow.inverse_dynamics(*x) for x in zip(Q, QD, QDD)])) <= 1e-9
    a, b = r.copy(), r.copy()
    got = a.forward_dynamics(Q, QD, tau)
    want = np.array([b.forward_dynamics(*x) for x in zip(Q, QD, tau)])
    assert np.array_equal(got, want)
    slow = numpy_path(r)
    assert rel(got, np.array([slow.forward_dynamics(*x) for x in zip(Q, QD, tau)])) <= 1e-8
    out = np.full(Q.shape, np.nan)
    assert r.copy().forward_dynamics(Q, QD, tau, out=out) is out
    assert np.array_equal(out, got)


def test_floating_batch_equals_single_calls():
    r = floating_arm()
    Q, V, A = _floating_states(r)
    a, b = r.copy(), r.copy()
    assert a._cw.inverse_dynamics_batch(Q, V, A) is not None
    a = r.copy()
    got = a.inverse_dynamics(Q, V, A)
    assert np.array_equal(got, np.array([b.inverse_dynamics(*x) for x in zip(Q, V, A)]))
    a, b = r.copy(), r.copy()
    got = a.forward_dynamics(Q, V, A)
    assert np.array_equal(got, np.array([b.forward_dynamics(*x) for x in zip(Q, V, A)]))


def test_batch_bad_input():
    r, _, _ = load("planar_fourbar")
    Q, QD, QDD = _states(r, 3)
    QDD[1, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        r.inverse_dynamics(Q, QD, QDD)
    with pytest.raises(ValueError, match="tau"):
        r.forward_dynamics(Q, QD, np.full(QD.shape, 1e200))
    rf = floating_arm()
    Q, V, A = _floating_states(rf, 2)
    Q[1, 3] = 2.0
    with pytest.raises(ValueError, match="quaternion"):
        rf.inverse_dynamics(Q, V, A)


@pytest.mark.parametrize("name", NAMES)
def test_jet_batch_equals_single_calls(name):
    r, _, _ = load(name)
    for K1 in (3, 5):
        qs = np.array([trajectory(r, t)[:K1] for t in np.linspace(0.0, 1.5, 10)])
        a, b = r.copy(), r.copy()
        assert a._cw.torque_derivatives_batch(qs) is not None  # the compiled batch decides
        a = r.copy()
        got = a.torque_derivatives(qs)
        assert got.shape == (10, K1 - 2, r.n)
        assert np.array_equal(got, np.array([b.torque_derivatives(x) for x in qs]))
        slow = numpy_path(r)
        assert rel(got, np.array([slow.torque_derivatives(x) for x in qs])) <= 1e-8
