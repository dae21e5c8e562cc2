"""URDF ``planar`` joints (motion in the plane normal to ``<axis>``, the URDF specification) as
three joints q = (x, y, θ): against Pinocchio 4.1's ``JointModelPlanar`` built joint by joint
with its plane turned normal to the axis (Pinocchio's URDF reader puts every planar joint in the
x–y plane, whatever the axis). Pinocchio's configuration is (x, y, cos θ, sin θ) and its velocity
the child-frame twist (v_x, v_y, ω) = (R(θ)ᵀ (ẋ, ẏ), θ̇) =: T q̇, so τ = Tᵀ τ_pin(q, T q̇,
T q̈ + Ṫ q̇), M = Tᵀ M_pin T, J = J_pin T."""
from __future__ import annotations

import numpy as np
import pytest

import mbs_dynamics as mbs

TOL = 1e-12


def _urdf(axis, origin):
    return f'''<robot name="p"><link name="base"/>
    <link name="c"><inertial><origin xyz="0.1 0.2 0.05" rpy="0.1 0.2 0.3"/><mass value="2"/>
      <inertia ixx="0.1" ixy="0.01" ixz="0" iyy="0.2" iyz="0" izz="0.15"/></inertial></link>
    <link name="d"><inertial><origin xyz="0 0.1 0.3"/><mass value="1"/>
      <inertia ixx="0.1" ixy="0" ixz="0" iyy="0.12" iyz="0" izz="0.08"/></inertial></link>
    <joint name="p" type="planar"><parent link="base"/><child link="c"/>
      <origin xyz="{origin}" rpy="0.4 -0.2 0.1"/><axis xyz="{axis}"/></joint>
    <joint name="r" type="revolute"><parent link="c"/><child link="d"/>
      <origin xyz="0.3 0 0"/><axis xyz="0 1 0"/>
      <limit effort="1" velocity="1" lower="-1" upper="1"/></joint></robot>'''


def _pin(robot, origin_T):
    pin = pytest.importorskip("pinocchio")
    m = robot.model
    ix = m.joint_names.index("p_x")
    u1, u2, e = m.axis[ix], m.axis[ix + 1], m.axis[ix + 2]
    Ra = np.c_[u1, u2, e]  # the plane's frame in the joint frame: z along the normal
    pm = pin.Model()
    j1 = pm.addJoint(0, pin.JointModelPlanar(), pin.SE3(origin_T[:3, :3], origin_T[:3, 3])
                     * pin.SE3(Ra, np.zeros(3)), "p")
    c_in_j = pin.SE3(Ra.T, np.zeros(3))  # link c's frame in Pinocchio's joint frame
    i_c = m.link_names.index("c")
    pm.appendBodyToJoint(j1, c_in_j.act(_inertia(m.inertias[i_c])), pin.SE3.Identity())
    j2 = pm.addJoint(j1, pin.JointModelRY(), c_in_j * pin.SE3(np.eye(3), np.array([0.3, 0, 0])),
                     "r")
    pm.appendBodyToJoint(j2, _inertia(m.inertias[m.link_names.index("d")]), pin.SE3.Identity())
    pm.addFrame(pin.Frame("c", j1, 0, c_in_j, pin.FrameType.OP_FRAME))
    pm.addFrame(pin.Frame("d", j2, 0, pin.SE3.Identity(), pin.FrameType.OP_FRAME))
    return pm


def _inertia(M6):
    """pin.Inertia of a body's 6×6 inertia (angular rows first, about the body origin)."""
    pin = pytest.importorskip("pinocchio")
    m = M6[3, 3]
    c = np.array([M6[2, 4], M6[0, 5], M6[1, 3]]) / m
    C = np.array([[0, -c[2], c[1]], [c[2], 0, -c[0]], [-c[1], c[0], 0]])
    return pin.Inertia(m, c, M6[:3, :3] + m * C @ C)


def _T(th):
    c, s = np.cos(th), np.sin(th)
    T = np.eye(4)
    T[:2, :2] = [[c, s], [-s, c]]
    return T


@pytest.mark.parametrize("axis", ["0 0 1", "0.3 -0.5 0.8", "1 0 0"])
def test_planar_joint_against_pinocchio(axis):
    pin = pytest.importorskip("pinocchio")
    origin = "0.3 0 0.2"
    robot = mbs.load_urdf(_urdf(axis, origin))
    assert robot.joint_names == ("p_x", "p_y", "p_theta", "r")
    O = np.eye(4)
    from mbs_dynamics.kernels.lie import rpy
    O[:3, :3], O[:3, 3] = rpy(0.4, -0.2, 0.1), (0.3, 0, 0.2)
    pm = _pin(robot, O)
    pd = pm.createData()
    rng = np.random.default_rng(0)
    for _ in range(4):
        q, qd, qdd = rng.normal(size=(3, 4))
        th, w = q[2], qd[2]
        T = _T(th)
        dT = np.zeros((4, 4))
        dT[:2, :2] = w * np.array([[-np.sin(th), np.cos(th)], [-np.cos(th), -np.sin(th)]])
        qp = np.r_[q[0], q[1], np.cos(th), np.sin(th), q[3]]
        v, a = T @ qd, T @ qdd + dT @ qd
        pin.framesForwardKinematics(pm, pd, qp)
        for f in ("c", "d"):
            ref = pd.oMf[pm.getFrameId(f)].homogeneous
            assert np.abs(robot.frame_placement(q, f) - ref).max() <= TOL, f
        tau = T.T @ pin.rnea(pm, pd, qp, v, a)
        assert np.abs(robot.inverse_dynamics(q, qd, qdd) - tau).max() <= TOL * max(
            1, np.abs(tau).max())
        M = pin.crba(pm, pd, qp)
        M = np.triu(M) + np.triu(M, 1).T
        assert np.abs(robot.mass_matrix(q) - T.T @ M @ T).max() <= TOL * np.abs(M).max()
        pin.computeJointJacobians(pm, pd, qp)
        J = pin.getFrameJacobian(pm, pd, pm.getFrameId("d"), pin.ReferenceFrame.LOCAL)
        assert np.abs(robot.frame_jacobian(q, "d", "body") - J @ T).max() <= TOL
        ddq = robot.forward_dynamics(q, qd, robot.inverse_dynamics(q, qd, qdd))
        assert np.abs(ddq - qdd).max() <= 1e-10


def test_planar_zero_axis_and_link_clash_are_errors():
    with pytest.raises(mbs.URDFError, match="joint 'p' has a zero axis"):
        mbs.load_urdf(_urdf("0 0 0", "0 0 0"))
    text = _urdf("0 0 1", "0 0 0").replace('<link name="d">', '<link name="c_planar_x"/>'
                                           '<link name="d">')
    text = text.replace("</robot>", '<joint name="f" type="fixed"><parent link="d"/>'
                                    '<child link="c_planar_x"/></joint></robot>')
    with pytest.raises(mbs.URDFError, match="c_planar_x"):
        mbs.load_urdf(text)
