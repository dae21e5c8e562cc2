"""The compiled HDCA assembly (mbs_dynamics/loops/_hdca.pyx) against the NumPy one it flattens
(issue 19 item 4): the same q̈ on trees, floating bases, closed loops (redundant closures
included) and mimic rows; the NumPy fallback; threads sharing one plan.

The oracles of the results themselves (Pinocchio's aba / constraintDynamics, KKT solves) are
in test_loops_hdca*.py; this file checks that the compiled route and the NumPy route of the
same algorithm agree, and that the workspace is safe to share."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import mbs_dynamics as mbs
import loops_mechanisms as lm
from conftest import erd_path
from test_loops_kinematics import NAMES
from mbs_dynamics.loops import hdca
from test_loops_hdca_bases import _load, rel


def _state(r, rng, fb):
    if fb:
        quat = rng.normal(size=4)
        return (np.r_[rng.normal(size=3), quat / np.linalg.norm(quat),
                      rng.uniform(-1, 1, r.nq - 7)], *rng.normal(size=(2, r.nv)))
    return (rng.uniform(-1, 1, r.nq), *rng.normal(size=(2, r.nv)))


@pytest.mark.parametrize("case", [("panda_description/urdf/panda.urdf", False),
                                  ("talos_data/robots/talos_reduced.urdf", True),
                                  ("solo_description/robots/solo12.urdf", True)])
def test_compiled_equals_numpy_on_trees_and_mimic(case):
    path, fb = case
    r = _load(erd_path(path), floating_base=fb)
    rng = np.random.default_rng(11)
    full = r.full_robot if isinstance(r, mbs.MimicRobot) else r
    h = hdca._tree(full.model, mimic=isinstance(r, mbs.MimicRobot))
    assert h.compiled() is not None
    for _ in range(3):
        q, v, tau = _state(full, rng, fb)
        ref = h.acceleration(q, v, tau, rnea=full.inverse_dynamics)  # the NumPy assembly
        for refine in (True, False):
            a = h.fast_acceleration(q, v, tau, refine=refine)
            assert rel(a, ref) < 1e-12
        if not isinstance(r, mbs.MimicRobot):
            assert rel(r.forward_dynamics(q, v, tau, method="dca"), ref) < 1e-12


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("fb", [False, True])
def test_compiled_equals_numpy_on_closed_loops(name, fb):
    u, loops, act = lm.ALL[name]()
    if fb:
        u = u.replace('<link name="base"/>',
                      '<link name="base"><inertial><mass value="3"/><inertia ixx="0.05" '
                      'iyy="0.06" izz="0.07" ixy="0" ixz="0" iyz="0"/></inertial></link>')
    r = _load(u, loops=loops, actuated=act, floating_base=fb)
    rng = np.random.default_rng(13)
    qa = r.q_assembled[r.actuated_index] + 0.05 * rng.standard_normal(r.n)
    X = r.copy().expand(np.stack([qa, rng.standard_normal(r.n)]))
    if fb:
        quat = rng.normal(size=4)
        qf = np.r_[rng.normal(size=3), quat / np.linalg.norm(quat), X[0]]
        vf = np.r_[rng.normal(size=6), X[1]]
    else:
        qf, vf = X[0], X[1]
    tf = rng.standard_normal(r.full_robot.nv)
    h = hdca.HDCA(r.model, r._kin)
    assert h.compiled() is not None
    ref = h.acceleration(qf, vf, tf, rnea=r.full_robot.inverse_dynamics)
    assert rel(h.fast_acceleration(qf, vf, tf), ref) < 1e-10
    # the entry of ClosedLoopRobot.forward_dynamics (a redundant closure — the planar four-bar
    # closed in 3-D — leaves rows without an impulse at the pivoted Cholesky's rank; the motion
    # is the same: the KKT oracles in test_loops_hdca*.py)
    a = hdca.acceleration(r, qf, vf, tf)
    assert rel(a, ref) < 1e-10


def test_numpy_fallback_and_fext():
    """Where no kernel applies (``compiled()`` None) the NumPy assembly serves, f_ext too."""
    r = _load(erd_path("solo_description/robots/solo12.urdf"), floating_base=True)
    rng = np.random.default_rng(2)
    q, v, tau = _state(r, rng, True)
    W = {r.link_names[-1]: rng.normal(size=6), r.model.base_link: rng.normal(size=6)}
    ref = r.forward_dynamics(q, v, tau, f_ext=W)  # ABA
    h = hdca._tree(r.model)
    K = h.compiled()
    try:
        h._ck = None
        assert rel(r.forward_dynamics(q, v, tau, f_ext=W, method="dca"), ref) < 1e-12
        assert rel(r.forward_dynamics(q, v, tau, method="dca"),
                   r.forward_dynamics(q, v, tau)) < 1e-12
    finally:
        h._ck = K
    assert rel(r.forward_dynamics(q, v, tau, f_ext=W, method="dca"), ref) < 1e-12


def test_threads_share_one_plan():
    """Threads calling HDCA on robots of one model at once: each call either takes the plan's
    workspace or a private one — every result right."""
    r = _load(erd_path("talos_data/robots/talos_reduced.urdf"), floating_base=True)
    rng = np.random.default_rng(4)
    states = [_state(r, rng, True) for _ in range(8)]
    robots = [r.copy() if hasattr(r, "copy") else r for _ in range(4)]
    refs = [r.forward_dynamics(*s) for s in states]
    bad = []

    def work(rb, t):
        for i in range(150):
            k = (i + t) % len(states)
            if rel(rb.forward_dynamics(*states[k], method="dca"), refs[k]) > 1e-12:
                bad.append((t, i))

    ths = [threading.Thread(target=work, args=(robots[t], t)) for t in range(4)]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    assert not bad
