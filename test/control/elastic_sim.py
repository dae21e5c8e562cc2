"""MuJoCo elastic-joint harness shared by the feedforward and the flatness-control tests.

MuJoCo provides the link dynamics (its own URDF importer, inertias taken from the URDF
``<inertial>`` exactly: ``inertiafromgeom="false"``; meshes, joint damping/friction stripped; no
armature; constraints — contacts and limits — disabled). The elastic joint is added beside it:
spring torque ``τ_e`` (``K (θ − q)`` or a VSA law) through ``qfrc_applied``, motor
``B θ'' + D θ' = τ_m − τ_e``. The coupled state x = (q, q', θ, θ') is integrated by classical RK4
with ``mj_forward`` giving ``q''`` at every stage (the spring torque re-evaluated at every stage).
"""

import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

import mbs_dynamics as mbs

try:
    import mujoco
except ImportError:
    mujoco = None


def strip_urdf(text, rigid_prefixes=()):
    """The URDF without visuals/collisions/dynamics, joints named ``rigid_prefixes*`` fixed,
    and MuJoCo's compiler told to take the URDF inertias as they are."""
    root = ET.fromstring(text)
    for link in root.findall("link"):
        for tag in ("visual", "collision"):
            for el in link.findall(tag):
                link.remove(el)
    for joint in root.findall("joint"):
        for tag in ("dynamics", "safety_controller", "mimic"):
            for el in joint.findall(tag):
                joint.remove(el)
        if rigid_prefixes and joint.get("name").startswith(tuple(rigid_prefixes)):
            joint.set("type", "fixed")
            for el in joint.findall("limit") + joint.findall("axis"):
                joint.remove(el)
    mj = ET.SubElement(root, "mujoco")
    ET.SubElement(mj, "compiler", inertiafromgeom="false", discardvisual="true")
    return ET.tostring(root, encoding="unicode")


def panda_urdf():
    """The 7-DOF Panda of example-robot-data (fingers rigid), prepared for MuJoCo."""
    import pinocchio as pin
    path = (Path(pin.__file__).parents[4] / "share/example-robot-data/robots/panda_description/"
            "urdf/panda.urdf")
    if not path.exists():
        pytest.skip("example-robot-data Panda not installed")
    return strip_urdf(path.read_text(), ("panda_finger_joint",))


def arm7_urdf():
    """The package's bundled 7-DOF arm, prepared for MuJoCo."""
    path = Path(mbs.__file__).parent / "data" / "robots" / "arm7.urdf"
    return strip_urdf(path.read_text())


def mujoco_model(text, robot):
    """MuJoCo model of the URDF ``text`` (no constraints, gravity −9.81 z), checked against
    ``robot``: same joints, mass matrix and bias forces at a random state."""
    m = mujoco.MjModel.from_xml_string(text)
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
    m.opt.gravity[:] = (0.0, 0.0, -9.81)
    n = robot.n
    assert m.nv == n and m.nq == n
    names = tuple(mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, j) for j in range(m.njnt))
    assert names == tuple(robot.joint_names)
    assert np.all(m.dof_armature == 0) and np.all(m.dof_damping == 0)
    assert np.all(m.dof_frictionloss == 0)
    d = mujoco.MjData(m)
    rng = np.random.default_rng(0)
    d.qpos[:] = rng.uniform(-1, 1, n)
    d.qvel[:] = rng.uniform(-1, 1, n)
    mujoco.mj_forward(m, d)
    M = np.zeros((n, n))
    mujoco.mj_fullM(m, d, M)
    np.testing.assert_allclose(M, robot.mass_matrix(d.qpos), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(d.qfrc_bias, robot.inverse_dynamics(d.qpos, d.qvel, np.zeros(n)),
                               rtol=1e-9, atol=1e-10)
    return m


def link_accel(m, d, q, qd, tau_joint):
    """q'' of MuJoCo's link model under the joint torques ``tau_joint``."""
    d.qpos[:] = q
    d.qvel[:] = qd
    d.qfrc_applied[:] = tau_joint
    mujoco.mj_forward(m, d)
    return d.qacc.copy()


def rk4(m, x0, accel, steps, dt):
    """Classical RK4 on x = (q, q', θ, θ'); ``accel(step, stage, d, q, qd, th, thd)`` ->
    (q'', θ''), stage 0…3 at t, t + dt/2, t + dt/2, t + dt. Returns the states (steps + 1, 4n)."""
    d = mujoco.MjData(m)
    nv = m.nv
    x = np.array(x0, dtype=float)

    def f(k, s, x):
        q, qd = x[:nv], x[nv:2 * nv]
        qdd, thdd = accel(k, s, d, q, qd, x[2 * nv:3 * nv], x[3 * nv:])
        return np.concatenate([qd, qdd, x[3 * nv:], thdd])

    hist = np.empty((steps + 1, 4 * nv))
    hist[0] = x
    for k in range(steps):
        k1 = f(k, 0, x)
        k2 = f(k, 1, x + dt / 2 * k1)
        k3 = f(k, 2, x + dt / 2 * k2)
        k4 = f(k, 3, x + dt * k3)
        x = x + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        hist[k + 1] = x
    return hist


def closed_loop(m, x0, control, t_end, K, B, D=0.0, rate=1000.0, substeps=4,
                disturbance=None, noise=None, rng=None, spring=None):
    """The elastic robot with a digital controller in the loop.

    Every ``1/rate`` s the (optionally noisy) state is measured and ``control(t, q, qd, θ, θd)``
    returns the motor torque u, held constant (zero-order hold) while RK4 integrates the SEA
    ``M q'' + h = K (θ − q) + d(t)``, ``B θ'' + D θ' + K (θ − q) = u`` over ``substeps`` steps.

    Args:
        K, B, D: the *true* spring stiffness, motor inertia and motor damping, (n,) or scalars.
        spring: optional ``δ -> τ_e`` replacing ``K δ`` (a VSA law; K is then unused).
        disturbance: optional t -> (n,) link-side torque d(t) [Nm].
        noise: optional (σ_q, σ_qd, σ_θ, σ_θd) standard deviations of Gaussian measurement noise.

    Returns:
        (times (N+1,), states (N+1, 4n) at the control instants, commands (N, n)).
    """
    n = m.nv
    K, B, D = (np.broadcast_to(np.asarray(0.0 if a is None else a, dtype=float), (n,))
               for a in (K, B, D))
    steps = int(round(t_end * rate))
    h = 1.0 / rate / substeps
    d = mujoco.MjData(m)
    rng = np.random.default_rng(0) if rng is None else rng
    x = np.array(x0, dtype=float)
    hist = np.empty((steps + 1, 4 * n))
    us = np.empty((steps, n))
    hist[0] = x
    zero = np.zeros(n)

    def f(t, x, u):
        q, qd, th, thd = x[:n], x[n:2 * n], x[2 * n:3 * n], x[3 * n:]
        te = K * (th - q) if spring is None else spring(th - q)
        dist = zero if disturbance is None else disturbance(t)
        qdd = link_accel(m, d, q, qd, te + dist)
        return np.concatenate([qd, qdd, thd, (u - D * thd - te) / B])

    for k in range(steps):
        t = k / rate
        meas = x if noise is None else x + np.repeat(np.asarray(noise, float), n) * \
            rng.standard_normal(4 * n)
        u = np.array(control(t, meas[:n], meas[n:2 * n], meas[2 * n:3 * n], meas[3 * n:]))
        us[k] = u
        for s in range(substeps):
            ts = t + s * h
            k1 = f(ts, x, u)
            k2 = f(ts + h / 2, x + h / 2 * k1, u)
            k3 = f(ts + h / 2, x + h / 2 * k2, u)
            k4 = f(ts + h, x + h * k3, u)
            x = x + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        hist[k + 1] = x
    return np.arange(steps + 1) / rate, hist, us
