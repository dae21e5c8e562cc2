"""Spherical joints and URDF floating joints inside the tree in the MuJoCo model
(``sim/mujoco_model.py``: ball joints, slides + ball): MuJoCo's own inverse dynamics
(``mj_inverse``) on the exported model equals Pinocchio 4.1's (``JointModelSpherical``,
``JointModelFreeFlyer`` inner joints) and ours, through the quaternion (w, x, y, z) ↔ (x, y, z, w)
and velocity conventions of ``mujoco_state`` / ``robot_forces``; poses by ``mj_kinematics``;
the ros2_control co-simulation refuses these joints naming them."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import mbs_dynamics as mbs

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "model"))


def _setup(tmp_path, seed=5):
    mujoco = pytest.importorskip("mujoco")
    pytest.importorskip("pinocchio")
    from test_spherical_joint import _geometry, _pin, _urdf

    from mbs_dynamics.sim.mujoco_model import mujoco_model

    g = _geometry(seed)
    text = _urdf(g)
    cm = mujoco_model(text)
    path = tmp_path / "m.mjb"
    path.write_bytes(cm.mjb)
    return mujoco, mbs.load_urdf(text), _pin(g), cm, mujoco.MjModel.from_binary_path(str(path))


@pytest.mark.parametrize("seed", [5, 12])
def test_mj_inverse_equals_pinocchio_and_ours(tmp_path, seed):
    mujoco, robot, pm, cm, m = _setup(tmp_path, seed)
    import pinocchio as pin
    from mbs_dynamics.sim.mujoco_model import SLIDE_SUFFIXES, mujoco_state, robot_forces

    assert cm.lie_joints == {"s": "spherical", "f": "floating"}
    assert [j.name for j in cm.joints] == ["r", "b"]
    types = {m.joint(i).name: int(m.jnt_type[i]) for i in range(m.njnt)}
    assert types["s"] == types["f"] == mujoco.mjtJoint.mjJNT_BALL
    assert all(types["f" + s] == mujoco.mjtJoint.mjJNT_SLIDE for s in SLIDE_SUFFIXES)
    assert (m.nq, m.nv) == (pm.nq, pm.nv)
    d = mujoco.MjData(m)
    pd = pm.createData()
    rng = np.random.default_rng(seed)
    for _ in range(4):
        q = pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq))
        v, a = rng.normal(size=(2, pm.nv))
        d.qpos[:], d.qvel[:], d.qacc[:] = mujoco_state(m, robot, q, v, a)
        mujoco.mj_inverse(m, d)
        tau_mj = robot_forces(m, robot, q, d.qfrc_inverse)
        tau_pin = pin.rnea(pm, pd, q, v, a)
        s = max(1.0, np.abs(tau_pin).max())
        # MuJoCo stores each inertia in its principal axes (an eigendecomposition): 2.3e-12
        assert np.abs(tau_mj - tau_pin).max() <= 1e-11 * s
        assert np.abs(robot.inverse_dynamics(q, v, a) - tau_mj).max() <= 1e-11 * s
        # poses: MuJoCo's body frame of F (its xquat is (w, x, y, z)) against ours
        mujoco.mj_kinematics(m, d)
        T = robot.frame_placement(q, "F")
        bid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, "F")
        assert np.abs(d.xpos[bid] - T[:3, 3]).max() <= 1e-12
        assert np.abs(d.xmat[bid].reshape(3, 3) - T[:3, :3]).max() <= 1e-12
        # forward: MuJoCo's mj_forward under its τ (qfrc_inverse) against our forward
        # dynamics under ours, mapped to MuJoCo's coordinates
        tau_in = d.qfrc_inverse.copy()
        d.qpos[:], d.qvel[:] = mujoco_state(m, robot, q, v)
        d.qfrc_applied[:] = tau_in
        mujoco.mj_forward(m, d)
        _, _, qacc = mujoco_state(m, robot, q, v, robot.forward_dynamics(q, v, tau_mj))
        assert np.abs(d.qacc - qacc).max() <= 1e-9 * max(1.0, np.abs(qacc).max())


def test_quaternion_order_is_converted(tmp_path):
    """A rotation about one axis only: MuJoCo's qpos quaternion starts with w."""
    mujoco, robot, pm, cm, m = _setup(tmp_path)
    from mbs_dynamics.sim.mujoco_model import mujoco_state

    q = robot.neutral()
    half = 0.3
    q[2:6] = (np.sin(half), 0.0, 0.0, np.cos(half))  # s: about x by 0.6 rad, ours (x, y, z, w)
    qpos, _ = mujoco_state(m, robot, q, np.zeros(robot.nv))
    adr = m.jnt_qposadr[mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, "s")]
    assert np.allclose(qpos[adr:adr + 4], (np.cos(half), np.sin(half), 0.0, 0.0), atol=0)


def test_cosim_refuses_ball_joints_naming_them(tmp_path):
    pytest.importorskip("mujoco")
    from test_spherical_joint import _geometry, _urdf

    from mbs_dynamics.sim.mujoco_model import CosimModelError, cosim_description

    text = _urdf(_geometry())
    with pytest.raises(CosimModelError, match="joint 's': spherical joints are in the MuJoCo "
                                              "model .*ros2_control"):
        cosim_description(text, tmp_path / "m.mjb")
    with pytest.raises(CosimModelError, match="joint 'f': floating joints"):
        cosim_description(text.replace('type="spherical"', 'type="revolute"'),
                          tmp_path / "m.mjb")


def test_state_maps_refuse_wrong_sizes(tmp_path):
    _, robot, _, _, m = _setup(tmp_path)
    from mbs_dynamics.sim.mujoco_model import mujoco_state, robot_forces

    with pytest.raises(ValueError, match="shapes"):
        mujoco_state(m, robot, np.zeros(3), np.zeros(robot.nv))
    with pytest.raises(ValueError, match="shapes"):
        robot_forces(m, robot, robot.neutral(), np.zeros(2))
