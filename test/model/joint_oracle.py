"""Shared checks of a joint type against a Pinocchio model built by hand (the joint tests of
test/model): the core quantities at a state, frame Jacobians in the four representations, the
8th-order central differences of τ along an analytic motion, and link inertials written both
as URDF and as pin.Inertia from one random geometry."""
from __future__ import annotations

import numpy as np
import pytest

TOL = 1e-12
#: 8th-order central differences, first and second derivative (nodes −4..4)
D1 = np.array([1 / 280, -4 / 105, 1 / 5, -4 / 5, 0, 4 / 5, -1 / 5, 4 / 105, -1 / 280])
D2 = np.array([-1 / 560, 8 / 315, -1 / 5, 8 / 5, -205 / 72, 8 / 5, -1 / 5, 8 / 315, -1 / 560])
#: our representation → Pinocchio's ReferenceFrame (mixed = diag(I, Rᵀ) hybrid)
REPS = {"body": "LOCAL", "spatial": "WORLD", "hybrid": "LOCAL_WORLD_ALIGNED"}


def rel_err(a, b):
    return np.abs(np.asarray(a) - b).max() / max(1.0, np.abs(b).max())


def random_links(g, rng, names):
    """Random inertials (mass, COM, principal moments, their axes' rpy) into ``g``."""
    for k in names:
        g["m_" + k] = float(rng.uniform(0.5, 2))
        g["com_" + k] = rng.uniform(-0.1, 0.1, 3)
        g["crpy_" + k] = rng.uniform(-1, 1, 3)
        g["I_" + k] = rng.uniform(0.05, 0.09, 3)


def fmt(v):
    return " ".join(repr(float(x)) for x in v)


def links_xml(g, names):
    """The ``<link>`` elements of :func:`random_links`."""
    return "".join(
        f'<link name="{k}"><inertial><origin xyz="{fmt(g["com_" + k])}" '
        f'rpy="{fmt(g["crpy_" + k])}"/><mass value="{g["m_" + k]!r}"/><inertia '
        + 'ixx="{!r}" iyy="{!r}" izz="{!r}"'.format(*map(float, g["I_" + k]))
        + ' ixy="0" ixz="0" iyz="0"/></inertial></link>' for k in names)


def joint_xml(g, name, jtype, parent, child, extra=""):
    """A ``<joint>`` at the origin ``g["xyz_" + name]``, ``g["rpy_" + name]``."""
    return (f'<joint name="{name}" type="{jtype}"><parent link="{parent}"/>'
            f'<child link="{child}"/><origin xyz="{fmt(g["xyz_" + name])}" '
            f'rpy="{fmt(g["rpy_" + name])}"/>{extra}</joint>')


def pin_placement(g, k):
    pin = pytest.importorskip("pinocchio")
    return pin.SE3(pin.rpy.rpyToMatrix(*g["rpy_" + k]), g["xyz_" + k])


def pin_inertia(g, k):
    pin = pytest.importorskip("pinocchio")
    R = pin.rpy.rpyToMatrix(*g["crpy_" + k])
    return pin.Inertia(g["m_" + k], g["com_" + k], R @ np.diag(g["I_" + k]) @ R.T)


def check_core(robot, pm, pd, q, v, a, frame="tool"):
    """Frame pose, τ, M and forward dynamics at (q, v, a) against Pinocchio; returns
    max(1, |τ|∞)."""
    pin = pytest.importorskip("pinocchio")
    pin.framesForwardKinematics(pm, pd, q)
    fid = pm.getFrameId(frame)
    assert np.abs(robot.frame_placement(q, frame) - pd.oMf[fid].homogeneous).max() <= TOL
    tau = pin.rnea(pm, pd, q, v, a)
    assert rel_err(robot.inverse_dynamics(q, v, a), tau) <= TOL
    M = pin.crba(pm, pd, q)
    M = np.triu(M) + np.triu(M, 1).T
    assert rel_err(robot.mass_matrix(q), M) <= TOL
    ddq = pin.aba(pm, pd, q, v, tau)
    assert rel_err(robot.forward_dynamics(q, v, tau), ddq) <= 1e-10
    return max(1.0, np.abs(tau).max())


def check_jacobians(robot, pm, q, v, frame="tool", dref_model=None, integrate=None):
    """Frame Jacobians in the four representations against Pinocchio's; their time variation
    against ``dref_model``'s (default ``pm``; another model of the same robot where Pinocchio's
    own is wrong) and against 8th-order differences of ``pm``'s Jacobian along
    ``integrate(q, t v)`` (default q + t v)."""
    pin = pytest.importorskip("pinocchio")
    pd = pm.createData()
    dm = pm if dref_model is None else dref_model
    dd = dm.createData()
    fid, did = pm.getFrameId(frame), dm.getFrameId(frame)
    step = integrate or (lambda q0, dv: q0 + dv)

    def jac(x, rf):
        pin.computeJointJacobians(pm, pd, x)
        pin.framesForwardKinematics(pm, pd, x)
        return pin.getFrameJacobian(pm, pd, fid, rf)

    pin.computeJointJacobiansTimeVariation(dm, dd, q, v)
    pin.framesForwardKinematics(dm, dd, q)
    h = 1e-3
    for rep, name in REPS.items():
        rf = getattr(pin.ReferenceFrame, name)
        assert np.abs(robot.frame_jacobian(q, frame, rep) - jac(q, rf)).max() <= TOL, rep
        dJ = robot.frame_jacobian_derivative(q, v, frame, rep)
        assert np.abs(dJ - pin.getFrameJacobianTimeVariation(dm, dd, did, rf)).max() \
            <= 1e-11, rep
        fd = sum(c * jac(step(q, k * h * v), rf) for c, k in zip(D1, range(-4, 5))) / h
        assert np.abs(dJ - fd).max() <= 1e-9, rep
    ref = jac(q, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
    ref[3:] = pd.oMf[fid].rotation.T @ ref[3:]
    assert np.abs(robot.frame_jacobian(q, frame, "mixed") - ref).max() <= TOL


def check_jet(jet, tau, t, h=1e-2):
    """τ, τ′, τ″ of ``jet`` against ``tau(t)`` and its 8th-order central differences."""
    T = np.array([tau(t + k * h) for k in range(-4, 5)])
    d1, d2 = D1 @ T / h, D2 @ T / h ** 2
    assert rel_err(jet[0], T[4]) <= TOL
    assert rel_err(jet[1], d1) <= 1e-8
    assert rel_err(jet[2], d2) <= 1e-6


def sine_motion(n, seed=3, w=1.3):
    """``qs(t, k)``: rows q, q′, …, q^(k−1) of q(t) = a + b sin(w t) + c t² (random a, b, c)."""
    a, b, c = np.random.default_rng(seed).normal(size=(3, n))

    def qs(t, k):
        out = [a + b * np.sin(w * t) + c * t * t, b * w * np.cos(w * t) + 2 * c * t,
               -b * w * w * np.sin(w * t) + 2 * c]
        for r in range(3, k):
            out.append(b * w ** r * np.sin(w * t + r * np.pi / 2))
        return np.array(out[:k])

    return qs


def energy_swing(pm, res, every=20):
    """(peak-to-peak of Pinocchio's kinetic + potential energy, of its potential energy) [J]
    along a simulation result."""
    pin = pytest.importorskip("pinocchio")
    pd = pm.createData()
    Q, V = res.q[::every], res.qd[::every]
    U = [pin.computePotentialEnergy(pm, pd, q) for q in Q]
    E = [pin.computeKineticEnergy(pm, pd, q, v) + u for q, v, u in zip(Q, V, U)]
    return np.ptp(E), np.ptp(U)


def assert_same_configuration(pm, a, b, tol=1e-13):
    """Configurations ``a`` and ``b`` of Pinocchio model ``pm`` agree joint by joint, a
    quaternion and its negative being one rotation."""
    for j in range(1, pm.njoints):
        i, n = pm.joints[j].idx_q, pm.joints[j].nq
        x, y = a[i:i + n], b[i:i + n]
        if n >= 4 and np.dot(x[-4:], y[-4:]) < 0:
            y = np.r_[y[:-4], -y[-4:]]
        assert np.abs(x - y).max() <= tol
