"""Floating robots in the built-in simulator (issue 13, item 3): the Lie-group integrators of
seed 003 against MuJoCo's free-joint simulation, momentum conservation in free flight, and the
energy drift reported.

The robot is the bundled 12-joint quadruped, in flight (no contacts). MuJoCo integrates the same
model (imported from the same URDF, the base given a free joint) with its RK4 at a step 20–40×
smaller than ours, so its own error is negligible at the tolerances below.
"""
from __future__ import annotations

import numpy as np
import pytest

import mbs_dynamics as mbs
from mbs_dynamics import data

INTEGRATORS = ["rkmk4-se3", "rkmk4-so3r3", "rkmk2-se3", "rkmk2-so3r3"]
Q0 = np.r_[0.1, -0.2, 0.4, 0.0, 0.0, 0.0, 1.0, np.tile([0.1, 0.8, -1.6], 4)]
V0 = np.r_[0.3, -0.2, 0.1, 0.5, -0.4, 0.8, np.linspace(-1, 1, 12)]


def _mujoco_model():
    """MuJoCo's model of the same URDF, compiled at full precision: a floating joint from a
    world link makes MuJoCo give the base a free joint; no contacts, no limits."""
    mujoco = pytest.importorskip("mujoco")
    urdf = open(data.robot("quad12")).read()
    urdf = urdf.replace('<robot name="quad12">', """<robot name="quad12">
      <mujoco><compiler angle="radian"/></mujoco>
      <link name="world"/><joint name="root" type="floating"><parent link="world"/>
        <child link="base"/></joint>""")
    m = mujoco.MjModel.from_xml_string(urdf)
    m.opt.timestep = 2.5e-5
    m.opt.integrator = mujoco.mjtIntegrator.mjINT_RK4
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT | mujoco.mjtDisableBit.mjDSBL_LIMIT
    m.opt.gravity[:] = (0, 0, -9.81)
    return mujoco, m


def _mujoco_run(duration):
    mujoco, m = _mujoco_model()
    robot = mbs.load_urdf(data.robot("quad12"), floating_base=True)
    d = mujoco.MjData(m)
    names = [m.joint(i).name for i in range(1, m.njnt)]
    idx = [names.index(j) for j in robot.joint_names]  # ours → MuJoCo's hinge order
    R = np.eye(3)  # Q0's base is not rotated
    d.qpos[:7] = np.r_[Q0[:3], Q0[6], Q0[3:6]]
    d.qvel[:6] = np.r_[R @ V0[:3], V0[3:6]]
    hinge_q, hinge_v = np.zeros(12), np.zeros(12)
    hinge_q[idx], hinge_v[idx] = Q0[7:], V0[6:]
    d.qpos[7:], d.qvel[6:] = hinge_q, hinge_v
    for _ in range(int(round(duration / m.opt.timestep))):
        mujoco.mj_step(m, d)
    quat = np.r_[d.qpos[4:7], d.qpos[3]]
    quat *= np.sign(quat[3]) if quat[3] != 0 else 1.0
    return np.r_[d.qpos[:3], quat, d.qpos[7:][idx]]


@pytest.fixture(scope="module")
def mujoco_reference():
    return _mujoco_run(0.2)


@pytest.mark.parametrize("name", INTEGRATORS)
def test_free_flight_agrees_with_mujoco_at_the_expected_order(name, mujoco_reference):
    robot = mbs.load_urdf(data.robot("quad12"), floating_base=True)
    errs = []
    for dt in (4e-3, 2e-3, 1e-3):
        res = mbs.simulate(robot, lambda t, s: np.zeros(12), 0.2, dt, q0=Q0, qd0=V0,
                           integrator=name)
        assert res.meta["integrator"] == name
        q = res.q[-1].copy()
        q[3:7] *= np.sign(q[6])
        errs.append(np.abs(q - mujoco_reference).max())
    p = int(name[4])
    ratios = [errs[0] / errs[1], errs[1] / errs[2]]
    assert errs[-1] < (1e-10 if p == 4 else 1e-5), errs
    # halving h divides the error by 2^p (within 20 %) at least once in the sweep
    assert any(abs(r / 2 ** p - 1) <= 0.2 for r in ratios), (errs, ratios)


@pytest.mark.parametrize("name", INTEGRATORS)
def test_momentum_is_conserved_without_gravity(name):
    robot = mbs.load_urdf(data.robot("quad12"), floating_base=True, gravity=(0, 0, 0))
    res = mbs.simulate(robot, lambda t, s: np.zeros(12), 0.5, 1e-3, q0=Q0, qd0=V0,
                       integrator=name)
    mom, energy = res.meta["momentum"], res.meta["energy"]
    tol = 1e-10 if name.startswith("rkmk4") else 1e-5
    assert np.abs(mom - mom[0]).max() <= tol * max(1.0, np.abs(mom[0]).max())
    # the energy drift is reported (and small); the rotation stays a unit quaternion
    assert np.abs(energy - energy[0]).max() <= (1e-9 if name.startswith("rkmk4") else 1e-6)
    assert np.abs(np.linalg.norm(res.q[:, 3:7], axis=1) - 1).max() <= 1e-12


def test_internal_torques_keep_momentum_and_gravity_accelerates_the_com():
    """Joint torques are internal: with a PD on the joints the momentum stays; with gravity the
    linear momentum grows by m g t."""
    robot = mbs.load_urdf(data.robot("quad12"), floating_base=True)
    total = robot.total_mass

    def pd(t, s):
        return 20.0 * (np.tile([0.0, 0.7, -1.4], 4) - s.q[7:]) - 1.0 * s.qd[6:]

    res = mbs.simulate(robot, pd, 0.3, 1e-3, q0=Q0, qd0=V0)
    mom = res.meta["momentum"]
    np.testing.assert_allclose(mom[:, :3] - mom[0, :3],
                               np.outer(res.t, total * robot.gravity), rtol=0, atol=1e-7)
    assert res.q.shape == (301, 19) and res.qd.shape == (301, 18) and res.command.shape == (301, 12)


def test_integrator_choice_is_checked():
    fixed = mbs.load_urdf(data.robot("arm7"))
    free = mbs.load_urdf(data.robot("quad12"), floating_base=True)
    with pytest.raises(ValueError, match="floating bases"):
        mbs.simulate(fixed, lambda t, s: np.zeros(7), 0.01, 1e-3, integrator="rkmk4-se3")
    with pytest.raises(ValueError, match="Lie-group scheme"):
        mbs.simulate(free, lambda t, s: np.zeros(12), 0.01, 1e-3, q0=Q0, integrator="rk4")
    with pytest.raises(ValueError, match="unit quaternion"):
        mbs.simulate(free, lambda t, s: np.zeros(12), 0.01, 1e-3, q0=Q0 * 2)
    with pytest.raises(ValueError, match="the floating base is unactuated"):
        mbs.simulate(free, lambda t, s: np.zeros(18), 0.01, 1e-3, q0=Q0)


def test_quat_from_matrix_round_trip():
    from scipy.spatial.transform import Rotation

    from mbs_dynamics.sim.simulator import quat_from_matrix
    for r in Rotation.random(50, random_state=1):
        q = quat_from_matrix(r.as_matrix())
        ref = r.as_quat()
        ref *= np.sign(ref[3])
        np.testing.assert_allclose(q, ref, atol=1e-14)
