"""Second-order derivatives of inverse dynamics against Pinocchio's own C++
``ComputeRNEASecondOrderDerivatives`` (issue 29): the tensors the issue names, from the reference
implementation itself, entry by entry (its Python wheel does not expose the call).

``bench/pinocchio_so.py`` compiles ``bench/pinocchio_so.cpp`` with g++ against the headers and
libraries of the pip-installed ``pin`` wheel (cached after the first build, ~2 CPU minutes);
each test skips with the reason when no compiler, Pinocchio headers or Eigen are found. The
model crosses over as Pinocchio's own text serialisation, so Pinocchio's C++ sees exactly the
model its Python side built (locked joints, floating base). Pinocchio's call takes no applied
wrenches and no mimic joints; those are checked against differences of
``pin.computeRNEADerivatives`` in test_rnea_second_order.py."""
from __future__ import annotations

import importlib
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import mbs_dynamics as mbs
from conftest import pin_q, random_urdf
from test_identification_regressor import Case, rel

BENCH = Path(__file__).resolve().parents[2] / "bench"
TOL = 1e-10


@pytest.fixture(scope="module")
def cpp():
    """(module bench/pinocchio_so.py, the compiled program), or a skip naming what is missing."""
    pytest.importorskip("pinocchio")
    sys.path.insert(0, str(BENCH))
    try:
        ps = importlib.import_module("pinocchio_so")
    finally:
        sys.path.remove(str(BENCH))
    try:
        return ps, ps.build()
    except ps.Unavailable as e:
        pytest.skip(str(e))


def _compare(cpp, pm, qp, r, q, v, a):
    ps, exe = cpp
    want = ps.tensors(exe, pm, qp, v, a)
    got = r.inverse_dynamics_second_order_derivatives(q, v, a)
    for g, w, name in zip(got, want, ("d2tau_dqdq", "d2tau_dvdv", "dtau_dqdv", "dtau_dadq")):
        assert g.shape == w.shape == (r.nv,) * 3, name
        assert np.abs(w).max() > 1e-3, name  # a nonzero reference: the check can fail
        assert rel(g, w) <= TOL, (name, rel(g, w))


@pytest.mark.parametrize("name", ["panda", "ur5", "solo12", "anymal"])
def test_matches_pinocchio_cpp(cpp, name):
    case = Case(name)
    q, v, a = case.state(np.random.default_rng(41))
    _compare(cpp, case.pm, case.to_pin(q), case.robot, q, v, a)


def test_matches_pinocchio_cpp_talos(cpp):
    """TALOS (talos_reduced, floating, 38 velocity coordinates)."""
    import pinocchio as pin
    from conftest import erd_path
    from test_floating_base import _pinq
    path = erd_path("talos_data/robots/talos_reduced.urdf")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = mbs.load_urdf(path, floating_base=True)
    pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer())
    rng = np.random.default_rng(42)
    quat = rng.normal(size=4)
    q = np.r_[rng.normal(size=3), quat / np.linalg.norm(quat), rng.uniform(-1, 1, r.n)]
    v, a = rng.normal(size=(2, r.nv))
    _compare(cpp, pm, _pinq(pm, q), r, q, v, a)


@pytest.mark.parametrize("seed,n,branch", [(7, 30, 0.0), (8, 16, 0.4)])
def test_matches_pinocchio_cpp_random(cpp, seed, n, branch):
    """A random 30-joint chain and a random branching tree (oblique axes, prismatic and
    continuous joints, fixed joints mid-chain, massless links)."""
    import pinocchio as pin
    xml, _ = random_urdf(seed, n_movable=n, branch_prob=branch)
    r = mbs.load_urdf(xml)
    pm = pin.buildModelFromXML(xml)
    rng = np.random.default_rng(seed)
    q, v, a = rng.uniform(-2, 2, r.n), rng.normal(size=r.n), rng.normal(size=r.n)
    _compare(cpp, pm, pin_q(pm, q), r, q, v, a)
