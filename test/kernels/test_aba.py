"""Forward dynamics (articulated-body algorithm, mbs_dynamics.kernels._aba) against Pinocchio's ``aba``,
against a Cholesky solve with the joint-space mass matrix, and against our own inverse dynamics
(inverse of inverse)."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import BAXTER, PANDA, UR5, LazyModule, erd_path, pin_model, pin_q, random_urdf

import mbs_dynamics as mbs

pin = LazyModule("pinocchio")  # each test skips on its own without Pinocchio

RTOL = 1e-9


def _robot_and_pin(case):
    if isinstance(case, int):
        xml, _ = random_urdf(case, n_movable=22, massless_prob=0.0)
        return mbs.load_urdf(xml), pin_model(xml)
    rel, locked = case
    path = erd_path(rel)
    return mbs.load_urdf(path, locked_joints=locked), pin_model(path, locked)


def _state(rng, n, scale=1.0):
    return (rng.uniform(-2.0, 2.0, n), rng.normal(size=n) * scale, rng.normal(size=n) * 10.0)


def _rel(a, b):
    return np.abs(a - b).max() / max(np.abs(b).max(), 1e-300)


CASES = [pytest.param(PANDA, id="panda"), pytest.param(UR5, id="ur5"),
         pytest.param(BAXTER, id="baxter-tree")] + [pytest.param(s, id=f"random{s}")
                                                    for s in (1, 2, 3, 4)]


@pytest.mark.parametrize("case", CASES)
def test_aba_matches_pinocchio(case):
    robot, pm = _robot_and_pin(case)
    pd = pm.createData()
    rng = np.random.default_rng(7)
    for _ in range(5):
        q, qd, tau = _state(rng, robot.n)
        qdd = robot.forward_dynamics(q, qd, tau)
        ref = pin.aba(pm, pd, pin_q(pm, q), qd, tau)
        assert _rel(qdd, ref) <= RTOL


def test_random_trees_have_what_the_brief_asks():
    """The random URDFs are ≥ 20 joints with prismatic joints and fixed joints mid-chain."""
    xml, movable = random_urdf(1, n_movable=22, massless_prob=0.0)
    assert len(movable) >= 20
    assert 'type="prismatic"' in xml and 'type="fixed"' in xml
    robot = mbs.load_urdf(xml)
    assert "prismatic" in robot.joint_types
    assert len(set(robot.model.parent.tolist())) > 1  # not a trivial chain


@pytest.mark.parametrize("case", [pytest.param(PANDA, id="panda"), pytest.param(2, id="random2")])
def test_aba_external_wrenches_match_pinocchio(case):
    robot, pm = _robot_and_pin(case)
    pd = pm.createData()
    rng = np.random.default_rng(3)
    q, qd, tau = _state(rng, robot.n)
    W = rng.normal(size=(robot.n, 6)) * 5.0  # (f, m) in body = joint frames
    # body i frame = the child link frame of joint i
    qdd = robot.forward_dynamics(q, qd, tau, f_ext=dict(zip(robot.link_names, W)))
    # Pinocchio: fext[j] in joint j's local frame, Force(linear, angular)
    fext = [pin.Force.Zero()] + [pin.Force(w[:3], w[3:]) for w in W]
    ref = pin.aba(pm, pd, pin_q(pm, q), qd, tau, fext)
    assert _rel(qdd, ref) <= RTOL
    # and the wrenches change the answer (the test can fail)
    assert _rel(robot.forward_dynamics(q, qd, tau), ref) > 1e-3


def _mass_matrix(robot, q):
    if hasattr(robot, "mass_matrix"):
        return robot.mass_matrix(q)
    z = np.zeros(robot.n)
    h = robot.inverse_dynamics(q, z, z)
    return np.column_stack([robot.inverse_dynamics(q, z, e) - h for e in np.eye(robot.n)])


@pytest.mark.parametrize("case", [pytest.param(UR5, id="ur5"), pytest.param(BAXTER, id="baxter"),
                                  pytest.param(4, id="random4")])
def test_aba_equals_cholesky_solve(case):
    robot, _ = _robot_and_pin(case)
    rng = np.random.default_rng(11)
    q, qd, tau = _state(rng, robot.n)
    M = _mass_matrix(robot, q)
    h = robot.inverse_dynamics(q, qd, np.zeros(robot.n))  # C q̇ + Q_grav
    L = np.linalg.cholesky(M)
    ref = np.linalg.solve(L.T, np.linalg.solve(L, tau - h))
    assert _rel(robot.forward_dynamics(q, qd, tau), ref) <= 1e-8


@pytest.mark.parametrize("case", [pytest.param(PANDA, id="panda"), pytest.param(3, id="random3")])
def test_inverse_of_inverse(case):
    robot, _ = _robot_and_pin(case)
    rng = np.random.default_rng(5)
    for _ in range(5):
        q, qd, qdd = _state(rng, robot.n)
        tau = robot.inverse_dynamics(q, qd, qdd)
        assert _rel(robot.forward_dynamics(q, qd, tau), qdd) <= RTOL


def test_batch_equals_single_and_model_accepted():
    robot, pm = _robot_and_pin(UR5)
    rng = np.random.default_rng(2)
    N = 6
    q, qd, tau = (rng.uniform(-2, 2, (N, robot.n)), rng.normal(size=(N, robot.n)),
                  rng.normal(size=(N, robot.n)))
    out = np.empty((N, robot.n))
    res = robot.forward_dynamics(q, qd, tau, out=out)
    assert res is out
    pd = pm.createData()
    for s in range(N):
        assert _rel(res[s], pin.aba(pm, pd, pin_q(pm, q[s]), qd[s], tau[s])) <= RTOL


def test_bad_inputs_name_the_argument():
    robot, _ = _robot_and_pin(UR5)
    n = robot.n
    z = np.zeros(n)
    with pytest.raises(ValueError, match="qd"):
        robot.forward_dynamics(z, np.zeros(n + 1), z)
    with pytest.raises(ValueError, match="tau"):
        robot.forward_dynamics(z, z, np.r_[z[:-1], np.nan])
    with pytest.raises(ValueError, match="^q "):
        robot.forward_dynamics(np.full(n, np.inf), z, z)
    with pytest.raises(ValueError, match="f_ext"):
        robot.forward_dynamics(z, z, z, f_ext={robot.link_names[-1]: np.zeros(5)})
    with pytest.raises(ValueError, match="^out "):
        robot.forward_dynamics(z, z, z, out=np.zeros(n + 1))


def test_prismatic_only_chain_is_a_point_mass():
    """Analytic: two orthogonal prismatic joints carrying mass m under gravity: q̈ = τ/m + g."""
    xml = """<robot name="xy"><link name="base"/>
      <joint name="x" type="prismatic"><parent link="base"/><child link="a"/>
        <axis xyz="1 0 0"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
      <link name="a"/>
      <joint name="z" type="prismatic"><parent link="a"/><child link="b"/>
        <axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
      <link name="b"><inertial><origin xyz="0.1 0.2 0.3" rpy="0.3 0.2 0.1"/><mass value="2"/>
        <inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>
    </robot>"""
    robot = mbs.load_urdf(xml)
    qdd = robot.forward_dynamics([0.3, -0.2], [0.5, 1.0], [4.0, 10.0])
    np.testing.assert_allclose(qdd, [2.0, 5.0 - 9.81], rtol=1e-12)


def test_robot_forward_dynamics_with_link_wrench_matches_pinocchio():
    """Robot.forward_dynamics (the public method on this kernel): a wrench on panda_hand, a link
    attached to panda_link7 by a fixed joint, expressed in the hand frame; Pinocchio's fext is in
    the parent joint's frame, so the oracle moves it with the frame placement."""
    robot, pm = _robot_and_pin(PANDA)
    pd = pm.createData()
    rng = np.random.default_rng(9)
    q, qd, tau = _state(rng, robot.n)
    w = rng.normal(size=6) * 3.0  # (f, m) in the hand frame
    qdd = robot.forward_dynamics(q, qd, tau, f_ext={"panda_hand": w})
    frame = pm.frames[pm.getFrameId("panda_hand")]
    fext = [pin.Force.Zero() for _ in range(pm.njoints)]
    fext[frame.parentJoint] = frame.placement.act(pin.Force(w[:3], w[3:]))
    ref = pin.aba(pm, pd, pin_q(pm, q), qd, tau, fext)
    assert _rel(qdd, ref) <= RTOL
    # batch through the public method
    Q = np.stack([q, q + 0.1])
    out = robot.forward_dynamics(Q, np.stack([qd, qd]), np.stack([tau, tau]))
    assert _rel(out[1], pin.aba(pm, pd, pin_q(pm, q + 0.1), qd, tau)) <= RTOL
