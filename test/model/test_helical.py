"""Helical (screw) joints from zero-reference screw coordinates with a pitch (seed 001 eq. 12,
Y = (y × e + h e, e)): a revolute joint and a prismatic joint mimicking it with multiplier h.
Against Pinocchio 4.1's ``JointModelHelicalUnaligned`` (built joint by joint, never from our
URDF): poses, τ, M, forward dynamics, ∂τ/∂(q, q̇), frame Jacobians and their time variation in
the four representations, the regressor; the time derivatives of τ against 8th-order central
differences of Pinocchio's τ along an analytic trajectory."""
from __future__ import annotations

import numpy as np
import pytest

import mbs_dynamics as mbs
from joint_oracle import TOL, check_core, check_jacobians, check_jet, energy_swing, sine_motion


def _arm(pitches=(0.0, 0.05, 0.0, -0.12), parent=None):
    """A 4-joint tree or chain of revolute/helical joints (and one prismatic), random geometry."""
    rng = np.random.default_rng(21)
    n = len(pitches)
    Y, A, ine, axes, pts = np.zeros((n, 6)), np.zeros((n, 4, 4)), [], [], []
    for i in range(n):
        e = rng.normal(size=3)
        e /= np.linalg.norm(e)
        y = rng.uniform(-0.4, 0.4, 3)
        Y[i] = np.r_[np.cross(y, e) + pitches[i] * e, e] if pitches[i] is not None else \
            np.r_[e, 0, 0, 0]
        Q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
        A[i] = np.eye(4)
        A[i, :3, :3] = Q * np.sign(np.linalg.det(Q))
        A[i, :3, 3] = rng.uniform(-0.5, 0.5, 3)
        Qi, _ = np.linalg.qr(rng.normal(size=(3, 3)))
        ine.append(dict(mass=rng.uniform(0.5, 2), com=rng.uniform(-0.1, 0.1, 3),
                        inertia=Qi @ np.diag(rng.uniform(0.05, 0.09, 3)) @ Qi.T))
    tool = np.eye(4)
    tool[:3, 3] = (0.1, -0.05, 0.2)
    robot = mbs.from_screws(Y, A, inertials=ine, parent=parent,
                            frames={"tool": (f"link{n}", tool)})
    return robot, Y, A, ine, tool, parent


def _pin(Y, A, ine, tool, parent):
    """Pinocchio: joint i at the point of its axis nearest body i's origin, oriented like body
    i (our joint frames: the bodies' inertial parameters are then in the same frames)."""
    pin = pytest.importorskip("pinocchio")
    n = len(Y)
    par = list(range(-1, n - 1)) if parent is None else parent
    m = pin.Model()
    J = []
    for i in range(n):
        v, e = Y[i, :3], Y[i, 3:]
        R = A[i, :3, :3]
        if np.linalg.norm(e) < 0.5:
            pt, jm = A[i, :3, 3], pin.JointModelPrismaticUnaligned(R.T @ v)
        else:
            h = float(e @ v)
            y = np.cross(e, v - h * e)
            pt = y + e * (e @ (A[i, :3, 3] - y))
            jm = (pin.JointModelHelicalUnaligned(R.T @ e, h) if abs(h) > 0 else
                  pin.JointModelRevoluteUnaligned(R.T @ e))
        Ji = pin.SE3(R, pt)
        Jp = pin.SE3.Identity() if par[i] < 0 else J[par[i]]
        m.addJoint(par[i] + 1, jm, Jp.inverse() * Ji, f"j{i}")
        J.append(Ji)
        body = Ji.inverse() * pin.SE3(A[i, :3, :3], A[i, :3, 3])  # body frame in joint frame
        I = pin.Inertia(ine[i]["mass"], ine[i]["com"], ine[i]["inertia"])
        m.appendBodyToJoint(i + 1, body.act(I), pin.SE3.Identity())
        if i == n - 1:
            m.addFrame(pin.Frame("tool", i + 1, 0, body * pin.SE3(tool[:3, :3], tool[:3, 3]),
                                 pin.FrameType.OP_FRAME))
    return m


@pytest.fixture(scope="module", params=[None, [-1, 0, 1, 0]], ids=["chain", "tree"])
def pair(request):
    robot, Y, A, ine, tool, parent = _arm(parent=request.param)
    return robot, _pin(Y, A, ine, tool, parent)


def _states(n, k=4, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=(3, n)) for _ in range(k)]


def test_helical_is_a_mimic_robot_in_the_screw_angles(pair):
    robot, pm = pair
    assert isinstance(robot, mbs.MimicRobot)
    assert robot.joint_names == ("joint1", "joint2", "joint3", "joint4")
    mj = robot.mimic_joints
    assert set(mj) == {"joint2_pitch", "joint4_pitch"}
    for name, h in (("joint2", 0.05), ("joint4", -0.12)):
        master, k, off = mj[f"{name}_pitch"]
        assert master == name and abs(k - h) <= 1e-15 and off == 0


def test_dynamics_against_pinocchio(pair):
    pin = pytest.importorskip("pinocchio")
    robot, pm = pair
    pd = pm.createData()
    for q, v, a in _states(robot.n):
        s = check_core(robot, pm, pd, q, v, a)
        dq, dv, _ = pin.computeRNEADerivatives(pm, pd, q, v, a)
        ours = robot.inverse_dynamics_derivatives(q, v, a)
        assert np.abs(ours[0] - dq).max() <= 1e-11 * s
        assert np.abs(ours[1] - dv).max() <= 1e-11 * s


def test_frame_jacobians_against_pinocchio(pair):
    """Body, spatial and hybrid (seed 001 Table 3) are Pinocchio's LOCAL, WORLD and
    LOCAL_WORLD_ALIGNED; mixed = diag(I, Rᵀ) hybrid (linear in world, angular in body axes)."""
    robot, pm = pair
    for q, v, _ in _states(robot.n, seed=1):
        check_jacobians(robot, pm, q, v)


def test_regressor_against_pinocchio(pair):
    """Y(q, q̇, q̈) π = τ, and the columns of the real bodies (the prismatic mimics' children,
    in the joint frames Pinocchio uses) equal Pinocchio's joint torque regressor."""
    pin = pytest.importorskip("pinocchio")
    robot, pm = pair
    pd = pm.createData()
    full = robot.full_robot
    real = [full.joint_names.index(nm + "_pitch") if nm + "_pitch" in full.joint_names
            else full.joint_names.index(nm) for nm in robot.joint_names]
    for q, v, a in _states(robot.n, seed=2):
        Y = robot.regressor(q, v, a)
        tau = robot.inverse_dynamics(q, v, a)
        assert np.abs(Y @ robot.inertial_parameters().reshape(-1) - tau).max() <= TOL * max(
            1.0, np.abs(tau).max())
        Yp = pin.computeJointTorqueRegressor(pm, pd, q, v, a)
        cols = np.concatenate([np.arange(10 * b, 10 * b + 10) for b in real])
        assert np.abs(Y[:, cols] - Yp).max() <= TOL * max(1.0, np.abs(Yp).max())


def test_time_derivatives_against_differences_of_pinocchio(pair):
    """τ′, τ″ of the jets against 8th-order central differences of Pinocchio's τ along
    q(t) = a + b sin(ω t) + c t² (analytic derivatives of q)."""
    pin = pytest.importorskip("pinocchio")
    robot, pm = pair
    pd = pm.createData()
    qs = sine_motion(robot.n)

    def tau(t):
        q, v, acc = qs(t, 3)
        return pin.rnea(pm, pd, q, v, acc)

    for t in (0.0, 0.7):
        check_jet(robot.torque_derivatives(qs(t, 5)), tau, t)


def test_simulation_conserves_pinocchios_energy():
    """The built-in simulator on a chain with helical joints: Pinocchio's kinetic + potential
    energy of its helical model stays constant while ~28 J swing between the two."""
    pin = pytest.importorskip("pinocchio")
    robot, Y, A, ine, tool, parent = _arm()
    pm = _pin(Y, A, ine, tool, parent)
    z = np.zeros(robot.n)
    res = mbs.simulate(robot, lambda t, s: z, 1.0, 5e-4, q0=np.array([0.3, -0.5, 0.8, 0.1]),
                       qd0=np.ones(robot.n))
    drift, swing = energy_swing(pm, res)
    assert swing > 1.0
    assert drift < 1e-9 * swing


def test_helical_robot_round_trips_through_urdf(pair):
    robot, _ = pair
    again = mbs.load_urdf(robot.to_urdf())
    assert isinstance(again, mbs.MimicRobot) and again.joint_names == robot.joint_names
    for q, v, a in _states(robot.n, seed=5):
        tau = robot.inverse_dynamics(q, v, a)
        assert np.abs(again.inverse_dynamics(q, v, a) - tau).max() <= TOL * max(
            1, np.abs(tau).max())
        assert np.abs(again.frame_placement(q, "tool") - robot.frame_placement(q, "tool")).max() \
            <= 1e-13
