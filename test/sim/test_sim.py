"""The built-in simulator (mbs_dynamics.sim.simulator): energy conservation, RK4 order, analytic
solutions of rigid and elastic-joint plants, controller sampling."""
from __future__ import annotations

import math

import numpy as np
import pytest

from conftest import PANDA, UR5, erd_path, pin_model, pin_q

import mbs_dynamics as mbs
from mbs_dynamics.control.actuators import SEA, VSA, ExponentialAntagonisticSpring
from mbs_dynamics.sim.simulator import SimResult, simulate

Q0 = np.array([0.1, -0.5, 0.2, -2.0, 0.3, 1.5, 0.7])
QD0 = np.array([1.0, -1.0, 0.5, 1.0, -1.0, 2.0, 1.0])


def _zero(n):
    z = np.zeros(n)
    return lambda t, s: z


def _panda(gravity=(0.0, 0.0, 0.0)):
    return mbs.load_urdf(erd_path(PANDA[0]), locked_joints=PANDA[1], gravity=gravity)


def _kinetic(robot, q, qd):
    """½ q̇ᵀ M q̇ with M q̇ from the RNEA of a gravity-free copy."""
    z = np.zeros(robot.n)
    return 0.5 * qd @ (robot.inverse_dynamics(q, z, qd) - robot.inverse_dynamics(q, z, z))


def test_rigid_energy_conserved_to_integrator_accuracy():
    robot = _panda()
    drift = []
    for dt in (2e-3, 1e-3):
        res = simulate(robot, _zero(7), 1.0, dt, q0=Q0, qd0=QD0)
        E = np.array([_kinetic(robot, q, qd) for q, qd in zip(res.q, res.qd)])
        drift.append(np.abs(E - E[0]).max() / E[0])
    assert drift[1] < 1e-8
    # fourth order: halving the step divides the drift by ~16
    assert 10.0 < drift[0] / drift[1] < 25.0


def test_rigid_energy_with_gravity_against_pinocchio():
    """Total energy (Pinocchio's kinetic + potential energy as the oracle) is conserved."""
    pin = pytest.importorskip("pinocchio")
    path = erd_path(UR5[0])
    robot = mbs.load_urdf(path)
    pm = pin_model(path)
    pd = pm.createData()
    q0 = np.array([0.3, -1.0, 1.2, -0.5, 0.8, 0.0])
    res = simulate(robot, _zero(6), 1.0, 5e-4, q0=q0, qd0=np.ones(6))

    def energy(q, qd):
        qp = pin_q(pm, q)
        return pin.computeKineticEnergy(pm, pd, qp, qd) + pin.computePotentialEnergy(pm, pd, qp)

    E = np.array([energy(q, qd) for q, qd in zip(res.q[::20], res.qd[::20])])
    swing = np.ptp([pin.computePotentialEnergy(pm, pd, pin_q(pm, q)) for q in res.q[::20]])
    assert swing > 1.0  # the arm really falls: energy is exchanged
    assert np.abs(E - E[0]).max() < 1e-7 * swing


def test_rk4_global_error_is_fourth_order():
    robot = _panda(gravity=(0.0, 0.0, -9.81))
    ref = simulate(robot, _zero(7), 0.4, 1.25e-4, q0=Q0, qd0=QD0)
    err = []
    for dt in (2e-3, 1e-3):
        res = simulate(robot, _zero(7), 0.4, dt, q0=Q0, qd0=QD0)
        err.append(np.abs(res.q[-1] - ref.q[-1]).max())
    assert 12.0 < err[0] / err[1] < 20.0
    # substeps: 2 substeps of 1 ms per 2 ms control period = the 1 ms run at shared instants
    res = simulate(robot, _zero(7), 0.4, 2e-3, q0=Q0, qd0=QD0, substeps=2)
    fine = simulate(robot, _zero(7), 0.4, 1e-3, q0=Q0, qd0=QD0)
    np.testing.assert_allclose(res.q, fine.q[::2], rtol=0, atol=1e-13)


ONE_LINK = """<robot name="one"><link name="base"/>
  <joint name="j" type="continuous"><parent link="base"/><child link="l"/>
    <origin xyz="0 0 0.1" rpy="0 0 0"/><axis xyz="0 0 1"/></joint>
  <link name="l"><inertial><origin xyz="0.3 0.1 0.05" rpy="0.4 -0.2 0.7"/><mass value="2"/>
    <inertia ixx="0.02" ixy="0" ixz="0" iyy="0.03" iyz="0" izz="0.04"/></inertial></link>
</robot>"""


def _one_link_inertia():
    """Inertia about the z axis: R diag(I) Rᵀ rotated by rpy (0.4, −0.2, 0.7), plus m (cx²+cy²)."""
    def rot(axis, a):
        c, s = math.cos(a), math.sin(a)
        if axis == 0:
            return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])
        if axis == 1:
            return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])
        return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])
    R = rot(2, 0.7) @ rot(1, -0.2) @ rot(0, 0.4)
    Ic = R @ np.diag([0.02, 0.03, 0.04]) @ R.T
    return Ic[2, 2] + 2.0 * (0.3 ** 2 + 0.1 ** 2)


def test_rigid_constant_torque_is_exact_parabola():
    """Vertical axis, no gravity torque: J q̈ = τ, so q = q0 + q̇0 t + τ t²/(2J); RK4 is exact."""
    robot = mbs.load_urdf(ONE_LINK)
    J = _one_link_inertia()
    res = simulate(robot, lambda t, s: np.array([0.8]), 0.5, 1e-2, q0=[0.2], qd0=[-1.0])
    expect = 0.2 - 1.0 * res.t + 0.8 * res.t ** 2 / (2 * J)
    np.testing.assert_allclose(res.q[:, 0], expect, rtol=0, atol=1e-12)
    np.testing.assert_allclose(res.qdd[:, 0], 0.8 / J, rtol=1e-12)


def test_sea_two_mass_oscillator_matches_analytic_solution():
    """Link J and motor B joined by a spring K, released from a deflection δ at rest:
    q(t) = B δ/(J + B) (1 − cos ωt), ω² = K (1/J + 1/B)."""
    robot = mbs.load_urdf(ONE_LINK)
    J = _one_link_inertia()
    K, B, delta = 400.0, 0.3, 0.05
    res = simulate(robot, _zero(1), 0.5, 1e-4, actuator=SEA(K, B, n=1), q0=[0.0], qd0=[0.0],
                   theta0=[delta], thetad0=[0.0])
    w = math.sqrt(K * (1.0 / J + 1.0 / B))
    q = B * delta / (J + B) * (1.0 - np.cos(w * res.t))
    np.testing.assert_allclose(res.q[:, 0], q, rtol=0, atol=1e-9)
    # the motor moves the other way: J q + B θ is conserved
    np.testing.assert_allclose(J * res.q[:, 0] + B * res.theta[:, 0], B * delta, atol=1e-12)
    np.testing.assert_allclose(res.tau_e[:, 0], K * (res.theta[:, 0] - res.q[:, 0]), rtol=1e-12)


def test_sea_energy_conserved():
    robot = _panda()
    K, B = 500.0, 0.2
    drift = []
    for dt in (1e-3, 5e-4):
        res = simulate(robot, _zero(7), 0.5, dt, actuator=SEA(K, B, n=7), q0=Q0, qd0=QD0,
                       thetad0=np.zeros(7))
        E = np.array([_kinetic(robot, q, qd) + 0.5 * B * td @ td + 0.5 * K * (th - q) @ (th - q)
                      for q, qd, th, td in zip(res.q, res.qd, res.theta, res.thetad)])
        drift.append(np.abs(E - E[0]).max() / E[0])
    assert drift[1] < 1e-6
    assert drift[0] / drift[1] > 10.0


def test_sea_static_equilibrium_holds():
    """θ0 defaults to q0 + K⁻¹ Q_grav(q0); with τ_m = Q_grav(q0) nothing moves."""
    robot = _panda(gravity=(0.0, 0.0, -9.81))
    z = np.zeros(7)
    g = robot.inverse_dynamics(Q0, z, z)
    K = np.linspace(300.0, 900.0, 7)
    res = simulate(robot, lambda t, s: g, 0.3, 1e-3, actuator=SEA(K, 0.1, motor_damping=0.5, n=7),
                   q0=Q0)
    np.testing.assert_allclose(res.theta[0], Q0 + g / K, rtol=1e-14)
    assert np.abs(res.q - Q0).max() < 1e-10
    assert np.abs(res.qd).max() < 1e-9


def test_sea_motor_damping_dissipates():
    robot = _panda()
    K, B = 500.0, 0.2
    res = simulate(robot, _zero(7), 1.0, 1e-3, actuator=SEA(K, B, motor_damping=2.0, n=7),
                   q0=Q0, qd0=QD0, thetad0=np.zeros(7))
    E = np.array([_kinetic(robot, q, qd) + 0.5 * B * td @ td + 0.5 * K * (th - q) @ (th - q)
                  for q, qd, th, td in zip(res.q, res.qd, res.theta, res.thetad)])
    assert E[-1] < 0.9 * E[0]
    assert np.all(np.diff(E) < 1e-9)  # never gains energy (D_m θ̇² ≥ 0)


def test_vsa_energy_conserved_with_exponential_spring():
    """Spring potential of φ = (k/a) e^{aσ} sinh(aδ): (k/a²) e^{aσ} (cosh(aδ) − 1)."""
    robot = _panda()
    k, a, sigma, B = 300.0, 4.0, 0.1, 0.2
    act = VSA(ExponentialAntagonisticSpring(k, a), B, sigma=sigma, n=7)
    res = simulate(robot, _zero(7), 0.2, 5e-4, actuator=act, q0=Q0, qd0=QD0, thetad0=np.zeros(7))

    def pot(d):
        return (k / a ** 2) * math.exp(a * sigma) * (np.cosh(a * d) - 1.0).sum()

    E = np.array([_kinetic(robot, q, qd) + 0.5 * B * td @ td + pot(th - q)
                  for q, qd, th, td in zip(res.q, res.qd, res.theta, res.thetad)])
    assert np.ptp(res.theta - res.q) > 1e-3  # the springs do deflect
    assert np.abs(E - E[0]).max() / E[0] < 1e-6


def test_controller_is_sampled_with_zero_order_hold():
    robot = mbs.load_urdf(ONE_LINK)
    seen = []

    def ctl(t, s):
        seen.append((t, float(s.q[0])))
        with pytest.raises(ValueError):
            s.q[0] = 1.0  # read-only views
        return np.array([1.0 if t < 0.05 else 0.0])

    res = simulate(robot, ctl, 0.1, 0.01)
    assert isinstance(res, SimResult)
    assert len(seen) == 11 and res.t.shape == (11,)
    np.testing.assert_allclose([t for t, _ in seen], np.arange(11) * 0.01, atol=1e-15)
    np.testing.assert_allclose(res.command[:, 0], [1.0] * 5 + [0.0] * 6)
    assert res.compute_time.shape == (11,) and np.all(res.compute_time >= 0)
    J = _one_link_inertia()
    # after the torque pulse the link coasts at the velocity τ · 0.05 / J
    np.testing.assert_allclose(res.qd[-1, 0], 0.05 / J, rtol=1e-12)


def test_bad_arguments_raise():
    robot = mbs.load_urdf(ONE_LINK)
    with pytest.raises(ValueError, match="shape"):
        simulate(robot, lambda t, s: np.zeros(2), 0.1, 0.01)
    with pytest.raises(ValueError, match="NaN"):
        simulate(robot, lambda t, s: np.array([np.nan]), 0.1, 0.01)
    with pytest.raises(ValueError, match="dt"):
        simulate(robot, _zero(1), 0.1, 0.0)
    with pytest.raises(ValueError, match="q0"):
        simulate(robot, _zero(1), 0.1, 0.01, q0=[0.0, 1.0])
    with pytest.raises(ValueError, match="motor_inertia"):
        simulate(robot, _zero(1), 0.1, 0.01, actuator=SEA(100.0, 0.0, n=1))
    with pytest.raises(ValueError, match="diverged"):
        simulate(robot, lambda t, s: np.array([1e300]), 0.1, 0.01)


def test_csv_has_a_column_per_joint(tmp_path):
    robot = mbs.load_urdf(ONE_LINK)
    res = simulate(robot, _zero(1), 0.05, 0.01, actuator=SEA(100.0, 0.1, n=1), q0=[0.1])
    f = tmp_path / "sim.csv"
    res.to_csv(f, extra={"q_ref": np.zeros((6, 1))})
    header = f.read_text().splitlines()[0].split(",")
    assert header[:3] == ["t", "q_j", "qd_j"] and "theta_j" in header and "q_ref_j" in header
    data = np.loadtxt(f, delimiter=",", skiprows=1)
    assert data.shape == (6, len(header))


def test_rigid_simulation_matches_mujoco_rk4():
    """MuJoCo (its own URDF importer and dynamics, integrator RK4 at the same step) simulates
    the bundled arm7 under a constant torque: the trajectories agree to round-off."""
    mujoco = pytest.importorskip("mujoco")
    import xml.etree.ElementTree as ET

    from mbs_dynamics import demo
    urdf = demo.BUNDLED["arm7"][0]
    root = ET.fromstring(urdf.read_bytes())
    for link in root.findall("link"):
        for tag in ("visual", "collision"):
            for el in link.findall(tag):
                link.remove(el)
    ET.SubElement(ET.SubElement(root, "mujoco"), "compiler", inertiafromgeom="false",
                  discardvisual="true")
    m = mujoco.MjModel.from_xml_string(ET.tostring(root, encoding="unicode"))
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
    m.opt.integrator = mujoco.mjtIntegrator.mjINT_RK4
    dt, N = 1e-3, 500
    m.opt.timestep = dt
    assert np.all(m.dof_armature == 0) and np.all(m.dof_damping == 0)
    d = mujoco.MjData(m)
    q0 = np.array([0.1, 0.4, -0.2, -1.2, 0.3, 0.9, 0.5])
    qd0 = np.array([0.5, -0.3, 0.2, 0.4, -0.6, 0.3, 1.0])
    tau = np.array([1.0, -2.0, 0.5, 0.3, 0.1, -0.05, 0.02])
    d.qpos[:], d.qvel[:], d.qfrc_applied[:] = q0, qd0, tau
    Q = [q0.copy()]
    for _ in range(N):
        mujoco.mj_step(m, d)
        Q.append(d.qpos.copy())
    Q = np.array(Q)
    robot = mbs.load_urdf(urdf.read_text())
    res = simulate(robot, lambda t, s: tau, N * dt, dt, q0=q0, qd0=qd0)
    assert np.ptp(Q, axis=0).max() > 1.0  # the arm swings under gravity
    np.testing.assert_allclose(res.q, Q, rtol=0, atol=1e-10)
    np.testing.assert_allclose(res.qd[-1], d.qvel, rtol=0, atol=1e-9)


def test_a_robot_with_mimic_joints_is_simulated_and_conserves_energy():
    """A MimicRobot (independent coordinates) runs through its public forward dynamics: with
    τ = 0 the energy ½ q̇ᵀM q̇ − Σ m g·c of the full model stays to RK4's accuracy."""
    from mbs_dynamics.sim.simulator import _potential
    xml = """<robot name="mimic3"><link name="base"/>
      <joint name="a" type="revolute"><parent link="base"/><child link="l1"/><axis xyz="0 1 0"/>
        <limit lower="-3" upper="3" effort="10" velocity="10"/></joint>
      <link name="l1"><inertial><origin xyz="0.2 0 0"/><mass value="1"/>
        <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.02"/></inertial></link>
      <joint name="b" type="revolute"><parent link="l1"/><child link="l2"/><origin xyz="0.4 0 0"/>
        <axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="10" velocity="10"/>
        <mimic joint="a" multiplier="-0.5" offset="0.1"/></joint>
      <link name="l2"><inertial><origin xyz="0.15 0 0.02"/><mass value="0.7"/>
        <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.015" iyz="0" izz="0.012"/></inertial></link>
      <joint name="c" type="revolute"><parent link="l2"/><child link="l3"/><origin xyz="0.3 0 0"/>
        <axis xyz="1 0 0"/><limit lower="-3" upper="3" effort="10" velocity="10"/></joint>
      <link name="l3"><inertial><origin xyz="0 0.1 0"/><mass value="0.4"/>
        <inertia ixx="0.004" ixy="0" ixz="0" iyy="0.003" iyz="0" izz="0.004"/></inertial></link>
    </robot>"""
    robot = mbs.load_urdf(xml)
    assert robot.n == 2 and "b" in robot.mimic_joints
    full = robot.full_robot

    def energy(q, qd):
        qf = robot.expand(q)
        kin = 0.5 * qd @ robot.mass_matrix(q) @ qd
        full.mass_matrix(qf)  # leaves the body poses in full.data for _potential
        return kin + _potential(full, qf)

    res = mbs.simulate(robot, lambda t, s: np.zeros(2), 1.0, 1e-3, q0=[0.3, -0.2], qd0=[1.0, 2.0])
    E = [energy(q, qd) for q, qd in zip(res.q[::100], res.qd[::100])]
    assert np.ptp(E) < 1e-9 * max(1.0, abs(E[0]))
    assert np.ptp(res.q[:, 0]) > 0.1  # it moved
