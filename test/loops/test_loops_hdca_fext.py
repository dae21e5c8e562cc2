"""HDCA (seed 002) with applied link wrenches ``f_ext`` (issue 19 item 4, the compiled path).

Oracles, never this package's numbers: Pinocchio's ``aba(..., fext)`` on the same URDF (fixed and
free-flyer trees; the link wrench moved to its parent joint's frame by the link frame's
placement); for a MimicRobot Pinocchio's M and RNEA with ``fext`` projected with the mimic map
written in test_mimic; for closed loops on a floating base the KKT solve of
test_loops_hdca_bases with the generalized force of ``fext`` from Pinocchio's RNEA.
"""
from __future__ import annotations

import numpy as np
import pytest

import mbs_dynamics as mbs
from conftest import erd_path
from test_loops_hdca_bases import _base_q, _floating, _kkt, _load, rel
from test_loops_kinematics import NAMES

try:
    import pinocchio as pin
except ImportError:  # skip per test, not per module (launch_testing)
    pin = None
pytestmark = pytest.mark.skipif(pin is None, reason="pinocchio is not installed")


def _pin_fext(pm, wrenches):
    """Public link wrenches {link: (f, m) in the link frame} → Pinocchio's per-joint LOCAL
    forces."""
    fext = [pin.Force.Zero() for _ in range(pm.njoints)]
    for link, w in wrenches.items():
        fr = pm.frames[pm.getFrameId(link, pin.BODY)]
        fext[fr.parentJoint] += fr.placement.act(pin.Force(np.asarray(w[:3]),
                                                           np.asarray(w[3:])))
    return fext


def _wrenches(r, rng, links):
    return {lk: rng.normal(size=6) * 5.0 for lk in links}


@pytest.mark.parametrize("case", ["panda_locked", "ur5", "solo12", "talos_reduced"])
def test_tree_hdca_with_fext_equals_pinocchio_aba(case):
    fb = case in ("solo12", "talos_reduced")
    path = erd_path({"panda_locked": "panda_description/urdf/panda.urdf",
                     "ur5": "ur_description/urdf/ur5_robot.urdf",
                     "solo12": "solo_description/robots/solo12.urdf",
                     "talos_reduced": "talos_data/robots/talos_reduced.urdf"}[case])
    src = path
    if case == "panda_locked":  # the fingers locked: a tree without mimic rows
        import re
        txt = open(path).read()
        src = re.sub(r'(<joint name="panda_finger_joint\d" type=")prismatic', r"\1fixed", txt)
    r = _load(src, floating_base=fb)
    assert type(r) is mbs.Robot
    pm = (pin.buildModelFromXML(src, *([pin.JointModelFreeFlyer()] if fb else []))
          if "<" in src else pin.buildModelFromUrdf(src, *([pin.JointModelFreeFlyer()]
                                                            if fb else [])))
    pd = pm.createData()
    rng = np.random.default_rng(7)
    links = [r.link_names[-1], r.link_names[len(r.link_names) // 2]]
    if fb:
        links.append(r.model.base_link)
    for _ in range(3):
        q = _base_q(rng, r.n) if fb else rng.uniform(-1, 1, r.nq)
        v, tau = rng.normal(size=(2, r.nv))
        W = _wrenches(r, rng, links)
        a = r.forward_dynamics(q, v, tau, f_ext=W, method="dca")
        ref = pin.aba(pm, pd, q, v, tau, _pin_fext(pm, W))
        assert rel(a, ref) < 1e-12
        assert rel(a, r.forward_dynamics(q, v, tau, method="dca")) > 1e-6  # the wrench acts
        assert rel(a, r.forward_dynamics(q, v, tau, f_ext=W)) < 1e-12  # = ABA
        # the assembly alone (no refinement step) already agrees to ~1e-13
        from mbs_dynamics.loops.hdca import tree_forward_dynamics
        assert rel(tree_forward_dynamics(r, q, v, tau, refine=False, f_ext=W), ref) < 1e-11
    with pytest.raises(ValueError, match="unknown link"):
        r.forward_dynamics(q, v, tau, f_ext={"nope": np.ones(6)}, method="dca")
    with pytest.raises(ValueError, match="NaN"):
        r.forward_dynamics(q, v, tau, f_ext={links[0]: np.full(6, np.nan)}, method="dca")
    with pytest.raises(ValueError, match="batch"):
        r.forward_dynamics(np.array([q, q]), np.array([v, v]), np.array([tau, tau]),
                           f_ext=W, method="dca")


@pytest.mark.parametrize("case", ["panda", "chain"])
def test_mimic_robot_hdca_with_fext(case):
    from test_mimic import Oracle, _source
    src = _source(case)
    r = _load(src)
    assert isinstance(r, mbs.MimicRobot)
    o = Oracle(src)
    rng = np.random.default_rng(9)
    full = r.full_robot
    links = [full.link_names[-1], full.link_names[len(full.link_names) // 2]]
    for _ in range(2):
        q = rng.uniform(-1, 1, r.nq)
        v, tau = rng.normal(size=(2, r.nv))
        W = _wrenches(r, rng, links)
        a = r.forward_dynamics(q, v, tau, f_ext=W, method="dca")
        h = o.tau(q, v, np.zeros(r.nv), _pin_fext(o.pm, W))
        ref = np.linalg.solve(o.M(q), tau - h)
        assert rel(a, ref) < 1e-12


@pytest.mark.parametrize("name", NAMES)
def test_floating_closed_loops_hdca_with_fext(name):
    r, u, loops, pm = _floating(name)
    rng = np.random.default_rng(23)
    qb = np.r_[rng.normal(size=3), rng.normal(size=4)]
    qb[3:] /= np.linalg.norm(qb[3:])
    q = np.r_[qb, r.q_assembled[r.actuated_index] + 0.05 * rng.standard_normal(r.n)]
    qd, tau = rng.standard_normal((2, r.nv))
    links = [r.full_robot.link_names[-1], r.full_robot.model.base_link]
    W = _wrenches(r, rng, links)
    a = r.forward_dynamics(q, qd, tau, f_ext=W, method="dca")
    X = r.copy().expand(np.stack([q[7:], qd[6:]]))
    qf, vf = np.r_[q[:7], X[0]], np.r_[qd[:6], X[1]]
    tf = np.zeros(6 + r.n_full)
    tf[:6] = tau[:6]
    tf[6 + r.actuated_index] = tau[6:]
    pd = pm.createData()
    z = np.zeros(pm.nv)
    Qext = pin.rnea(pm, pd, qf, vf, z) - pin.rnea(pm, pd, qf, vf, z, _pin_fext(pm, W))
    af, _ = _kkt(r, loops, pm, qf, vf, tf + Qext)
    assert rel(a, np.r_[af[:6], af[6 + r.actuated_index]]) < 1e-10
    assert rel(a, r.forward_dynamics(q, qd, tau, method="dca")) > 1e-6
