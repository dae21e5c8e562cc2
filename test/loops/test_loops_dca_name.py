"""``forward_dynamics(method="dca")``: the acceleration-level divide-and-conquer has its own name
(issue 34); ``"hdca"``, the name of seed 002's momentum-level Hamiltonian algorithm (what
``simulate(method="hdca")`` integrates), still works for a release with a DeprecationWarning that
names ``"dca"`` and points at the caller's line.

Oracle for the values: the robots' other method (the compiled ABA, the projected solve, the
Lagrange multipliers), itself tested against Pinocchio elsewhere; here the names only.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import mbs_dynamics as mbs
from mbs_dynamics import data
import loops_mechanisms as lm
from test_loops_hdca_bases import BASE_INERTIA
from test_mimic import CHAIN


def _robots():
    u, loops, act = lm.planar_fourbar()
    heavy_base = u.replace('<link name="base"/>', BASE_INERTIA)
    assert heavy_base != u
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", mbs.URDFWarning)
        return {"Robot": (mbs.load_urdf(data.robot("arm7")), "aba"),
                "floating Robot": (mbs.load_urdf(data.robot("quad12"), floating_base=True),
                                   "aba"),
                "MimicRobot": (mbs.load_urdf(CHAIN), "aba"),
                "ClosedLoopRobot": (mbs.load_urdf(u, loops=loops, actuated=act), "lagrange"),
                "FloatingClosedLoopRobot": (mbs.load_urdf(heavy_base, loops=loops,
                                                          actuated=act, floating_base=True),
                                            "lagrange")}


def _state(r, rng):
    q = 0.1 * rng.normal(size=r.nq)
    if r.floating_base:
        q[3:7] = (0.0, 0.0, 0.0, 1.0)
    return q, rng.normal(size=r.nv), rng.normal(size=r.nv)


@pytest.mark.parametrize("kind", ["Robot", "floating Robot", "MimicRobot", "ClosedLoopRobot",
                                  "FloatingClosedLoopRobot"])
def test_dca_is_the_name_and_hdca_warns(kind):
    r, default = _robots()[kind]
    q, v, tau = _state(r, np.random.default_rng(3))
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)  # the new name does not warn
        a = r.forward_dynamics(q, v, tau, method="dca")
    assert np.abs(a - r.forward_dynamics(q, v, tau, method=default)).max() < 1e-9
    with pytest.warns(DeprecationWarning, match='method="dca"') as rec:
        old = r.forward_dynamics(q, v, tau, method="hdca")
    assert rec[0].filename == __file__  # points at the caller's line
    assert np.abs(old - a).max() < 1e-12
    with pytest.warns(DeprecationWarning):  # batches too
        olds = r.forward_dynamics(np.array([q, q]), np.array([v, v]), np.array([tau, tau]),
                                  method="hdca")
    assert np.abs(olds - a).max() < 1e-12
    with pytest.raises(ValueError, match=f"'{default}' or 'dca', got 'rk4'"):
        r.forward_dynamics(q, v, tau, method="rk4")


def test_simulate_keeps_hdca():
    """The momentum-level Hamiltonian integration keeps its name, with no warning."""
    u, loops, act = lm.planar_fourbar()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", mbs.URDFWarning)
        r = mbs.load_urdf(u, loops=loops, actuated=act)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        res = mbs.simulate(r, lambda t, s: np.zeros(1), 0.2, 0.1, method="hdca")
    assert res.q.shape[0] == 3
