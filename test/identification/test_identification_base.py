"""Base parameters: ``mbs.identification.base_parameters(robot)``. Oracles: Pinocchio's torques
on fresh random states (``pin.rnea`` with its model's inertias set to a random physical π, and
its ``computeJointTorqueRegressor`` times ``from_base(to_base(π))``, which need not be a physical
body), and the rank of Pinocchio's stacked regressor."""
from __future__ import annotations

import numpy as np
import pytest

import mbs_dynamics as mbs
from test_identification_regressor import CASES, Case, random_parameters, rel
from mbs_dynamics.identification import base_parameters


@pytest.fixture(scope="module", params=CASES)
def case(request):
    c = Case(request.param)
    return c, mbs.identification.base_parameters(c.robot)


def _pin_tau(case, pi, q, v, a):
    case.set_parameters(pi)
    t = case.pin.rnea(case.pm, case.pd, case.to_pin(q), case.v(v), case.v(a)).copy()
    return t if case.G is None else case.G.T @ t


def test_round_trip_keeps_torques(case):
    case, bp = case
    r = case.robot
    rng = np.random.default_rng(21)
    nb = r.inertial_parameters().shape[0]
    try:
        for k in range(2):
            pi = random_parameters(rng, nb)
            beta = bp.to_base(pi)
            assert beta.shape == (bp.n,) == (len(bp.names),)
            back = bp.from_base(beta)
            assert back.shape == (nb, 10)
            near = bp.from_base(beta, reference=r.inertial_parameters())
            assert rel(bp.to_base(near), beta) <= 1e-12
            assert rel(near.ravel()[bp.dependent], r.inertial_parameters().ravel()[bp.dependent]) == 0
            for _ in range(3):
                q, v, a = case.state(rng)
                want = _pin_tau(case, pi, q, v, a)
                # from_base's π need not be a physical body (zero masses): Pinocchio's regressor
                Yp = case.Y(q, v, a)
                assert rel(Yp @ pi.ravel(), want) <= 1e-12
                assert rel(Yp @ back.ravel(), want) <= 1e-9
                assert rel(Yp @ near.ravel(), want) <= 1e-9
                # the base regressor: τ = Y_B β
                assert rel(bp.regressor(r.regressor(q, v, a)) @ beta, want) <= 1e-9
    finally:
        case.set_parameters(r.inertial_parameters())


def test_count_is_the_rank_of_pinocchios_regressor(case):
    case, bp = case
    rng = np.random.default_rng(22)
    W = np.vstack([case.Y(*case.state(rng)) for _ in range(40)])
    W = W / np.maximum(np.abs(W).max(axis=1, keepdims=True), 1e-300)
    s = np.linalg.svd(W, compute_uv=False)
    assert bp.n == int(np.sum(s > 1e-9 * s[0]))
    assert len(set(bp.names)) == bp.n
    assert sorted(np.r_[bp.columns, bp.dependent].tolist()) == list(range(W.shape[1]))


def test_known_counts_and_names():
    """A 7-DOF Panda has 43 base inertial parameters (Gaz et al., RA-L 2019); the UR5's
    6R chain with three parallel axes has 36."""
    for name, count in (("panda", 43), ("ur5", 36)):
        bp = mbs.identification.base_parameters(Case(name).robot)
        assert bp.n == count
        assert all("." in nm for nm in bp.names)
        assert all(e.startswith(nm) for e, nm in zip(bp.expressions, bp.names))
        assert len(bp.full_names) == 10 * (7 if name == "panda" else 6)


def test_bad_shapes():
    c = Case("ur5")
    bp = mbs.identification.base_parameters(c.robot)
    with pytest.raises(ValueError, match="pi has shape"):
        bp.to_base(np.zeros(7))
    with pytest.raises(ValueError, match="beta has shape"):
        bp.from_base(np.zeros(bp.n + 1))


@pytest.mark.parametrize("kw, exc, words", [
    (dict(samples=0), ValueError, "samples"), (dict(samples=-1), ValueError, "samples"),
    (dict(samples=10 ** 12), ValueError, "samples"), (dict(samples=1.5), TypeError, "samples"),
    (dict(rtol=float("nan")), ValueError, "rtol"), (dict(rtol=10 ** 400), ValueError, "rtol"),
    (dict(rtol=2.0), ValueError, "rtol"), (dict(rtol="x"), TypeError, "rtol"),
    (dict(seed=-1), ValueError, "seed"), (dict(seed="x"), ValueError, "seed")])
def test_base_parameters_arguments_are_checked_and_named(kw, exc, words):
    # fuzz campaign (issue 22): samples=0 said "zero-size array to reduction operation",
    # 10**12 raised MemoryError, rtol=NaN was accepted, rtol=10**400 raised OverflowError
    from mbs_dynamics import data
    r = mbs.load_urdf(data.robot("arm7"))
    with pytest.raises(exc, match=words):
        base_parameters(r, **kw)
