"""The spatial (seed 000 eq. 69–72) and hybrid (eq. 73–77) recursive Newton–Euler algorithms
against Pinocchio's ``rnea``: fixed bases, floating bases (free flyer), mimic joints, applied
wrenches, batches, and the representation argument's errors."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import mbs_dynamics as mbs
from conftest import PANDA, UR5, erd_path, pin_model, pin_q, random_urdf
from test_floating_base import _pair, _pinq, _random_state
from test_mimic import Oracle, _random_mimic

REPS = ("body", "spatial", "hybrid")
TOL = 1e-12


def _rel(a, b):
    return np.abs(np.asarray(a) - b).max() / max(1.0, np.abs(b).max())


def _fixed(case):
    if case == "random":
        xml, _ = random_urdf(11)
        return mbs.load_urdf(xml), pin_model(xml)
    rel, locked = {"panda": PANDA, "ur5": UR5}[case]
    path = erd_path(rel)
    return mbs.load_urdf(path, locked_joints=locked), pin_model(path, locked)


@pytest.mark.parametrize("case", ["panda", "ur5", "random"])
@pytest.mark.parametrize("rep", REPS)
def test_fixed_base_matches_pinocchio(case, rep):
    pin = pytest.importorskip("pinocchio")
    robot, pm = _fixed(case)
    pd = pm.createData()
    rng = np.random.default_rng(1)
    for _ in range(3):
        q, v, a = rng.uniform(-2, 2, robot.n), rng.normal(size=robot.n), rng.normal(size=robot.n)
        ref = pin.rnea(pm, pd, pin_q(pm, q), v, a)
        assert _rel(robot.inverse_dynamics(q, v, a, representation=rep), ref) <= TOL
    # batch = single calls
    Q, V, A = rng.normal(size=(3, 5, robot.n))
    T = robot.inverse_dynamics(Q, V, A, representation=rep)
    for k in range(5):
        ref = pin.rnea(pm, pd, pin_q(pm, Q[k]), V[k], A[k])
        assert _rel(T[k], ref) <= TOL


@pytest.mark.parametrize("name", ["solo12", "anymal", "random5"])
@pytest.mark.parametrize("rep", ["spatial", "hybrid"])
def test_floating_base_matches_pinocchio(name, rep):
    pin = pytest.importorskip("pinocchio")
    robot, pm = _pair(name)
    pd = pm.createData()
    rng = np.random.default_rng(5)
    for _ in range(3):
        q, v, a = _random_state(rng, robot)
        ref = pin.rnea(pm, pd, _pinq(pm, q), v, a)
        assert _rel(robot.inverse_dynamics(q, v, a, representation=rep), ref) <= TOL


@pytest.mark.parametrize("rep", ["spatial", "hybrid"])
def test_external_wrenches(rep):
    """f_ext on a link (and on the floating base's link) equals the body-fixed RNEA with the
    same f_ext, which test_floating_base / test_dynamics_oracle check against Pinocchio."""
    pin = pytest.importorskip("pinocchio")
    robot, pm = _pair("anymal")
    pd = pm.createData()
    rng = np.random.default_rng(7)
    q, v, a = _random_state(rng, robot)
    links = ["LF_FOOT", "base", "RH_SHANK"]
    fext = {ln: rng.normal(size=6) for ln in links}
    body = robot.inverse_dynamics(q, v, a, f_ext=fext)
    assert _rel(robot.inverse_dynamics(q, v, a, f_ext=fext, representation=rep), body) <= TOL
    # and against Pinocchio: a wrench on a link frame, mapped to its joint
    pf = [pin.Force.Zero() for _ in range(pm.njoints)]
    pin.framesForwardKinematics(pm, pd, _pinq(pm, q))
    for ln, w in fext.items():
        fr = pm.frames[pm.getFrameId(ln)]
        X = fr.placement
        f = np.asarray(w)  # (force, moment), as Pinocchio's
        pf[fr.parentJoint] += X.act(pin.Force(f[:3], f[3:]))
    ref = pin.rnea(pm, pd, _pinq(pm, q), v, a, pf)
    assert _rel(robot.inverse_dynamics(q, v, a, f_ext=fext, representation=rep), ref) <= TOL


@pytest.mark.parametrize("case", ["panda", "random"])
@pytest.mark.parametrize("rep", ["spatial", "hybrid"])
def test_mimic_joints(case, rep):
    pytest.importorskip("pinocchio")
    src = _random_mimic(3) if case == "random" else erd_path(
        "panda_description/urdf/panda.urdf")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", mbs.URDFWarning)
        robot = mbs.load_urdf(src)
    oracle = Oracle(src)
    rng = np.random.default_rng(2)
    q, v, a = rng.uniform(-1, 1, robot.n), rng.normal(size=robot.n), rng.normal(size=robot.n)
    assert _rel(robot.inverse_dynamics(q, v, a, representation=rep), oracle.tau(q, v, a)) <= TOL
    Q, V, A = rng.normal(size=(3, 4, robot.n))
    T = robot.inverse_dynamics(Q, V, A, representation=rep)
    assert _rel(T[2], oracle.tau(Q[2], V[2], A[2])) <= TOL


def test_bad_input():
    robot, _ = _fixed("random")
    q = np.zeros(robot.n)
    with pytest.raises(ValueError, match="spatial"):
        robot.inverse_dynamics(q, q, q, representation="world")
    with pytest.raises(ValueError, match="representation"):
        robot.inverse_dynamics(q, q, q, representation=3)
    with pytest.raises(ValueError, match="qd"):
        robot.inverse_dynamics(q, np.r_[q, 1.0], q, representation="spatial")
    bad = q.copy()
    bad[0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        robot.inverse_dynamics(bad, q, q, representation="hybrid")
    out = np.empty(robot.n)
    assert robot.inverse_dynamics(q, q, q, out=out, representation="hybrid") is out
    with pytest.raises(ValueError, match="batch"):
        robot.inverse_dynamics(np.zeros((2, robot.n)), np.zeros((2, robot.n)),
                               np.zeros((2, robot.n)), f_ext={}, representation="spatial")
