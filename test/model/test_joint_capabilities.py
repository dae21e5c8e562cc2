"""Universal and cylindrical joints in the capabilities beyond the core: generated C (which takes
them: they are 1-DOF joints of the model), a closed loop through a universal joint, and the
tools that hand the URDF text itself to another reader — the ROS nodes (urdfdom) and the MuJoCo
co-simulation model — which refuse the extension types with one error naming the joint and the
capability."""
from __future__ import annotations

import os
import shutil

import numpy as np
import pytest

import mbs_dynamics as mbs
from test_universal_cylindrical import _geometry, _pin, _urdf

TOL = 1e-12


def _rel(a, b):
    return np.abs(np.asarray(a) - b).max() / max(1.0, np.abs(b).max())


def test_generated_c_against_pinocchios_universal_joint(tmp_path, monkeypatch):
    pin = pytest.importorskip("pinocchio")
    if shutil.which(os.environ.get("CC", "cc")) is None:
        pytest.skip("no C compiler")
    from mbs_dynamics import codegen

    monkeypatch.setenv("MBS_DYNAMICS_CACHE", str(tmp_path))
    g = _geometry()
    robot = mbs.load_urdf(_urdf(g))
    c = codegen.compile(robot, frames=["tool"])
    pm = _pin(g)
    pd = pm.createData()
    rng = np.random.default_rng(4)
    for _ in range(3):
        q, v, a = rng.normal(size=(3, robot.n))
        tau = pin.rnea(pm, pd, q, v, a)
        assert _rel(c.inverse_dynamics(q, v, a), tau) <= TOL
        M = pin.crba(pm, pd, q)
        assert _rel(c.mass_matrix(q), np.triu(M) + np.triu(M, 1).T) <= TOL
        pin.computeJointJacobians(pm, pd, q)
        pin.updateFramePlacements(pm, pd)
        J = pin.getFrameJacobian(pm, pd, pm.getFrameId("tool"), pin.LOCAL)
        assert _rel(c.frame_jacobian(q, "tool"), J) <= TOL
        vs = rng.normal(size=(3, robot.n))
        assert _rel(c.torque_derivatives((q, vs)), robot.torque_derivatives((q, vs))) <= TOL


FOURBAR = """<robot name="ub"><link name="base"/>
<link name="crank"><inertial><origin xyz="0.1 0 0"/><mass value="1"/>
 <inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
<link name="rod"><inertial><origin xyz="0 0.2 0"/><mass value="0.5"/>
 <inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
<link name="rocker"><inertial><origin xyz="0 0.1 0"/><mass value="1"/>
 <inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
<link name="rod_end"/><link name="rocker_end"/>
<joint name="crank_j" type="continuous"><parent link="base"/><child link="crank"/>
 <axis xyz="0 0 1"/></joint>
<joint name="rod_u" type="universal"><parent link="crank"/><child link="rod"/>
 <origin xyz="0.2 0 0"/><axis xyz="0 0 1"/><axis2 xyz="1 0 0"/></joint>
<joint name="rocker_j" type="continuous"><parent link="base"/><child link="rocker"/>
 <origin xyz="0.4 0 0"/><axis xyz="0 0 1"/></joint>
<joint name="rod_end_j" type="fixed"><parent link="rod"/><child link="rod_end"/>
 <origin xyz="0 0.4 0"/></joint>
<joint name="rocker_end_j" type="fixed"><parent link="rocker"/><child link="rocker_end"/>
 <origin xyz="0 0.2 0"/></joint>
</robot>"""


def test_closed_loop_through_a_universal_joint():
    """A four-bar whose rod hangs on a universal joint, closed by a ``connect`` loop (one
    degree of freedom): the expanded motion closes the loop in Pinocchio's kinematics of the
    tree (read by Pinocchio from the standard URDF ``to_urdf`` writes), and the closed-loop τ
    is Gᵀ τ_tree with τ_tree from Pinocchio's RNEA and G = ∂q_full/∂q_a (virtual power)."""
    pin = pytest.importorskip("pinocchio")
    r = mbs.load_urdf(FOURBAR, loops=[dict(name="l", type="connect", frame_a="rod_end",
                                           frame_b="rocker_end")], actuated=["crank_j"])
    assert r.n == 1 and {"rod_u_1", "rod_u_2"} <= set(r.full_joint_names)
    pm = pin.buildModelFromXML(r.full_robot.to_urdf())
    pd = pm.createData()
    order = [r.full_joint_names.index(nm) for nm in pm.names[1:]]
    fa, fb = pm.getFrameId("rod_end"), pm.getFrameId("rocker_end")
    for q0, qd, qdd in ((0.3, 0.7, -0.4), (-0.2, -1.1, 0.9)):
        X = r.expand(np.array([[q0 + r.q_assembled[r.actuated_index][0]], [qd], [qdd]]))
        qf, vf, af = (x[order] for x in X)
        # Pinocchio's continuous joints take (cos q, sin q)
        qf = np.concatenate([[np.cos(x), np.sin(x)] if pm.joints[i + 1].nq == 2 else [x]
                             for i, x in enumerate(qf)])
        pin.framesForwardKinematics(pm, pd, qf)
        assert np.abs(pd.oMf[fa].translation - pd.oMf[fb].translation).max() <= 1e-12
        tau_tree = pin.rnea(pm, pd, qf, vf, af)
        G = vf / qd
        tau = r.inverse_dynamics([X[0][r.actuated_index][0]], [qd], [qdd])
        assert abs(tau[0] - G @ tau_tree) <= TOL * max(1.0, np.abs(tau_tree).max())


@pytest.mark.parametrize("kind, extra", [("universal", '<axis2 xyz="0 1 0"/>'),
                                         ("cylindrical", "")])
def test_ros_nodes_refuse_extension_joints(kind, extra):
    from mbs_dynamics.ros.parameters import load_robot

    text = ('<robot name="r"><link name="a"/><link name="b"><inertial><mass value="1"/>'
            '<inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link>'
            f'<joint name="odd&amp;j" type="{kind}"><parent link="a"/><child link="b"/>'
            f'<axis xyz="1 0 0"/>{extra}</joint></robot>')
    with pytest.raises(ValueError, match=f"joint 'odd&j' is of type '{kind}'.*ROS nodes"):
        load_robot(text, {})
    # the same robot written by to_urdf (1-DOF joints) is taken
    robot, _ = load_robot(mbs.load_urdf(text).to_urdf(), {})
    assert robot.n == 2


@pytest.mark.parametrize("kind, extra", [("universal", '<axis2 xyz="0 1 0"/>'),
                                         ("cylindrical", "")])
def test_mujoco_model_refuses_extension_joints(kind, extra):
    pytest.importorskip("mujoco")
    from mbs_dynamics.sim.mujoco_model import CosimModelError, mujoco_model

    text = ('<robot name="r"><link name="a"/><link name="b"><inertial><mass value="1"/>'
            '<inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link>'
            f'<joint name="jj" type="{kind}"><parent link="a"/><child link="b"/>'
            f'<axis xyz="1 0 0"/>{extra}</joint></robot>')
    with pytest.raises(CosimModelError, match=f"joint 'jj': {kind} joints .*MuJoCo"):
        mujoco_model(text)


def _lie_robot_text():
    from test_spherical_joint import _geometry as g_s, _urdf as u_s
    return u_s(g_s())


def test_capabilities_refuse_spherical_and_inner_floating_joints():
    """Calibration, the ROS nodes and the MuJoCo model refuse a spherical or floating joint
    inside the tree, naming the joint and the capability (generated C takes them:
    test/codegen/test_codegen_lie_joints.py; closed loops too, passive:
    test/loops/test_loops_lie.py — here one `connect` cannot determine the free joint)."""
    from mbs_dynamics.calibration import calibrate
    from mbs_dynamics.ros.parameters import load_robot

    text = _lie_robot_text()
    robot = mbs.load_urdf(text)
    q = np.tile(robot.neutral(), (3, 1))
    with pytest.raises(ValueError, match="calibration: joint 's' \\(spherical\\)"):
        calibrate(robot, [dict(frame="tool", q=q, positions=np.zeros((3, 3)), sigma=1e-4)])
    with pytest.raises(ValueError, match="joint 'f': the loops do not determine"):
        mbs.load_urdf(text, loops=[dict(name="l", type="connect", frame_a="B", frame_b="tool")])
    with pytest.raises(ValueError, match="joint 's' is of type 'spherical'.*ROS nodes"):
        load_robot(text, {})
    floating_only = text.replace('type="spherical"', 'type="revolute"')
    with pytest.raises(ValueError, match="joint 'f' is of type 'floating' inside the tree: "
                                         "the ROS nodes"):
        load_robot(floating_only, {})


def test_mujoco_cosim_refuses_spherical_joints(tmp_path):
    """The MuJoCo model takes them (ball joints: test/sim/test_mujoco_lie_joints.py); the
    ros2_control co-simulation, one scalar interface per joint, refuses them by name."""
    pytest.importorskip("mujoco")
    from mbs_dynamics.sim.mujoco_model import CosimModelError, cosim_description

    with pytest.raises(CosimModelError, match="joint 's': spherical joints .*ros2_control"):
        cosim_description(_lie_robot_text().replace('type="floating"', 'type="revolute"'),
                          tmp_path / "m.mjb")
