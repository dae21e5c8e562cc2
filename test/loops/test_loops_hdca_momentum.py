"""The compiled momentum level of HDCA (``HDCAKernel.velocity`` / ``momentum_rate`` in
mbs_dynamics/loops/_hdca.pyx: seed 002 Alg. 1–3, the right-hand side (q, P) → (q̇, Ṗ) that
``simulate(method="hdca")`` integrates) against the NumPy path it replaces (kept as the
fallback), on the closed-loop mechanisms of loops_mechanisms.py on a fixed and a floating base,
on trees and on mimic rows.

The oracles of the results themselves (Pinocchio's M, energies and constraint Jacobians:
``test_hamilton_equations_against_pinocchio`` in test_loops_hdca.py and
``test_hdca_momentum_rate_with_floating_base`` in test_loops_simulate_floating.py) run on the
default, i.e. the compiled, path; this file checks that the compiled and the NumPy routes of
the same algorithm agree, that the simulation takes the compiled one, and the bad input."""
from __future__ import annotations


import numpy as np
import pytest

import mbs_dynamics as mbs
import loops_mechanisms as lm
from conftest import erd_path
from test_loops_kinematics import NAMES
from mbs_dynamics.loops import hdca
from test_loops_hdca_bases import _load, rel
from mbs_dynamics.loops.simulate import _hdca, simulate_loops

try:
    import pinocchio as pin
except ImportError:  # skip per test, not per module (launch_testing)
    pin = None
pytestmark = pytest.mark.skipif(pin is None, reason="pinocchio is not installed")

BASE = ('<link name="base"><inertial><mass value="3"/><inertia ixx="0.05" iyy="0.06" '
        'izz="0.07" ixy="0" ixz="0" iyz="0"/></inertial></link>')


def _closed(name, fb):
    u, loops, act = lm.ALL[name]()
    if fb:
        u = u.replace('<link name="base"/>', BASE)
    return _load(u, loops=loops, actuated=act, floating_base=fb)


def _full_state(r, rng, fb):
    qa = r.q_assembled[r.actuated_index] + 0.05 * rng.standard_normal(r.n)
    X = r.copy().expand(np.stack([qa, rng.standard_normal(r.n)]))
    if not fb:
        return X[0], X[1]
    quat = rng.normal(size=4)
    return (np.r_[rng.normal(size=3), quat / np.linalg.norm(quat), X[0]],
            np.r_[rng.normal(size=6), X[1]])


def _KT(h, st, sig):
    """K_vᵀσ of the loop impulses: the wrenches ±E_ℓσ_ℓ summed over each joint's subtree,
    projected on its screw (a floating base: on S_b)."""
    W = np.zeros((h.nb, 6))
    for (a, b), E, s in zip(h.lb, st["E"], sig):
        if b >= 0:
            W[b] += E @ s
        if a >= 0:
            W[a] -= E @ s
    for k in range(h.n - 1, -1, -1):
        if h.par[k] >= 0:
            W[h.par[k]] += W[k]
    out = np.einsum("ni,ni->n", st["S"], W[:h.n])
    return np.r_[st["Sb"].T @ W[h.n], out] if h.fb else out


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("fb", [False, True])
def test_compiled_momentum_level_equals_numpy_on_closed_loops(name, fb):
    """q̇, the loop impulses' generalized forces Kᵀσ, and Ṗ of the compiled pass = NumPy's
    at augmented momenta P = M v − Kᵀs with arbitrary impulses s. Tolerance: the NumPy plan's
    world-frame mobilities lose digits with the light joint blocks (delta, the u-joints:
    measured ≤ 7e-11 between the two routes; each ≤ 8e-10 from the dense oracles)."""
    r = _closed(name, fb)
    rng = np.random.default_rng(21)
    h = hdca.HDCA(r.model, r._kin)
    assert h.compiled() is not None
    for _ in range(2):
        qf, vf = _full_state(r, rng, fb)
        P = rng.standard_normal(h.nv0 + h.n) * 3.0
        tau = rng.standard_normal(h.nv0 + h.n)
        qd, sig, st = h.velocity(qf, P)
        assert "kernel" in st  # the compiled route
        qd0, sig0, st0 = h.velocity(qf, P, compiled=False)
        assert "kernel" not in st0
        assert rel(qd, qd0) < 1e-9
        assert len(sig) == len(sig0)
        # σ is unique up to the redundant rows (planar four-bar closed in 3-D): compare the
        # generalized impulses Kᵀσ, which the motion sees
        assert rel(_KT(h, st0, sig), _KT(h, st0, sig0)) < 1e-9
        Pd = h.momentum_rate(st, qd, sig, tau)
        Pd0 = h.momentum_rate(st0, qd0, sig0, tau)
        assert Pd.shape == Pd0.shape == (h.nv0 + h.n,)
        assert rel(Pd, Pd0) < 1e-9
        # mixed: the compiled Ṗ with the NumPy impulses (a list of only the loops' σ)
        nl = len(h.loops)
        assert rel(h.momentum_rate(st, qd, sig0[:nl], tau), Pd0) < 1e-9
        a, b = h.rhs(qf, P, tau), h.rhs(qf, P, tau, compiled=False)
        assert rel(a[0], b[0]) < 1e-9 and rel(a[1], b[1]) < 1e-9
        # P of the rates themselves (σ = 0): the velocity pass returns them
        assert rel(h.velocity(qf, h.momentum(qf, vf))[0], vf) < 1e-9


@pytest.mark.parametrize("case", [("panda_description/urdf/panda.urdf", False),
                                  ("talos_data/robots/talos_reduced.urdf", True),
                                  ("solo_description/robots/solo12.urdf", True)])
def test_compiled_momentum_level_on_trees_and_mimic(case):
    """Trees (fixed and floating base) and a mimic row (Panda's finger, a MimicRobot): the
    compiled q̇, Ṗ = the NumPy ones, q̇ of P = M v is v (round trip through the NumPy momentum);
    the mimic row's q̇ against Pinocchio's M projected with G."""
    path, fb = case
    r = _load(erd_path(path), floating_base=fb)
    full = r.full_robot if isinstance(r, mbs.MimicRobot) else r
    h = hdca._tree(full.model, mimic=isinstance(r, mbs.MimicRobot))
    assert h.compiled() is not None
    rng = np.random.default_rng(9)
    nv = h.nv0 + h.n
    for _ in range(2):
        if fb:
            quat = rng.normal(size=4)
            q = np.r_[rng.normal(size=3), quat / np.linalg.norm(quat),
                      rng.uniform(-1, 1, h.n)]
        else:
            q = rng.uniform(-1, 1, h.n)
        P, tau = rng.standard_normal((2, nv))
        a, b = h.rhs(q, P, tau), h.rhs(q, P, tau, compiled=False)
        if h.has_mimic:
            # the mimic row: q̇ = G (GᵀMG)⁻¹ Gᵀ P with Pinocchio's M of the full tree (GᵀKᵀ = 0:
            # any impulse drops out). The NumPy pass loses digits with the light fingers
            # (measured 6e-6 abs.; compiled 2.5e-10 on |q̇| ≈ 40), so Ṗ is compared at the
            # compiled twists
            pm = pin.buildModelFromUrdf(erd_path(path))
            M = pin.crba(pm, pm.createData(), q)
            M = np.triu(M) + np.triu(M, 1).T
            G = r.G
            assert rel(a[0], G @ np.linalg.solve(G.T @ M @ G, G.T @ P)) < 1e-10
            st0 = h.state(q)
            st0["V"] = h.velocity(q, P)[2]["V"]
            assert rel(a[1], h.momentum_rate(st0, a[0], [], tau)) < 1e-10
            continue
        assert rel(a[0], b[0]) < 1e-10 and rel(a[1], b[1]) < 1e-10
        if not h.has_mimic:
            v = rng.standard_normal(nv)
            assert rel(h.velocity(q, h.momentum(q, v))[0], v) < 1e-10


@pytest.mark.parametrize("fb", [False, True])
def test_simulation_takes_the_compiled_route_and_agrees(fb):
    """``simulate(method="hdca")`` with the compiled right-hand side = with the NumPy one
    (the kernel switched off: ``compiled()`` None) along a short driven motion."""
    r = _closed("two_loop_planar", fb)
    h = _hdca(r)
    assert h.compiled() is not None
    kw = dict(method="hdca", tau=[0.4], dt=0.1, rtol=1e-10, atol=1e-10)
    res = simulate_loops(r, 0.3, **kw)
    K = h.compiled()
    try:
        h._ck = None
        ref = simulate_loops(r, 0.3, **kw)
    finally:
        h._ck = K
    assert np.abs(res.q - ref.q).max() < 1e-8
    assert np.abs(res.qd - ref.qd).max() < 1e-7


def test_bad_input_to_the_compiled_momentum_level():
    r = _closed("planar_fourbar", False)
    h = hdca.HDCA(r.model, r._kin)
    q = r.q_assembled
    with pytest.raises(ValueError, match="q must be"):
        h.velocity(q[:-1], np.zeros(h.n))
    with pytest.raises(ValueError, match="P"):
        h.velocity(q, np.zeros(h.n + 1))
    qd, sig, st = h.velocity(q, np.ones(h.n))
    with pytest.raises(ValueError, match="tau"):
        h.momentum_rate(st, qd, sig, np.zeros(h.n + 2))
    with pytest.raises(ValueError, match="overflowed"):
        h.velocity(q, np.full(h.n, np.nan))
