"""The MuJoCo model of the co-simulation (mbs_dynamics.sim.mujoco_model) has the dynamics the
feedforward assumes — checked against Pinocchio's (mass matrix, bias forces) on arm7 and the
Panda —, the series-elastic joints are Spong's reduced model (rotor inertia B, damping D_m,
spring K(θ − q) on both sides, no gravity on the rotor), mimic joints are tied, and what cannot be
simulated is refused by name. Plus the ROS-free set-up of launch/cosim.launch.py
(mbs_dynamics.ros.cosim_setup). No ROS needed."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from conftest import erd_path, pin_q, sym

REPO = Path(__file__).resolve().parents[2]
ARM7 = REPO / "mbs_dynamics" / "data" / "robots" / "arm7.urdf"
SEA_YAML = REPO / "config" / "sea_arm.yaml"
GRAVITY = (0.3, -0.2, -9.81)


def _mujoco():
    return pytest.importorskip("mujoco")


def _load(cm):
    """The binary model the plugin loads (and the MJCF text loads too)."""
    mujoco = _mujoco()
    import os
    import tempfile
    assert mujoco.MjModel.from_xml_string(cm.mjcf).nv > 0
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "m.mjb")
        with open(path, "wb") as f:
            f.write(cm.mjb)
        return mujoco.MjModel.from_binary_path(path)


def _sea_section():
    from mbs_dynamics.ros.cosim_setup import find_actuator_section
    return find_actuator_section(yaml.safe_load(SEA_YAML.read_text()))


def _compare_with_pinocchio(urdf_path, seed):
    mujoco = _mujoco()
    pin = pytest.importorskip("pinocchio")
    from mbs_dynamics.sim.mujoco_model import mujoco_model

    text = Path(urdf_path).read_text()
    cm = mujoco_model(text, gravity=GRAVITY)
    m = _load(cm)
    d = mujoco.MjData(m)
    pm = pin.buildModelFromUrdf(str(urdf_path))
    pm.gravity.linear = np.asarray(GRAVITY)
    pd = pm.createData()
    names = [pm.names[i] for i in range(1, pm.njoints)]
    cols = [m.jnt_dofadr[m.joint(nm).id] for nm in names]
    assert m.nv == len(names)            # no extra dof, nothing lost
    assert m.ngeom == 0                  # no geometry: no contacts, no meshes
    assert np.all(m.dof_damping == 0) and np.all(m.dof_armature == 0)
    assert np.all(m.dof_frictionloss == 0) and not np.any(m.jnt_limited)
    rng = np.random.default_rng(seed)
    for _ in range(3):
        q = rng.uniform(-1.5, 1.5, len(names))
        v = rng.uniform(-2.0, 2.0, len(names))
        d.qpos[cols] = q
        d.qvel[cols] = v
        mujoco.mj_forward(m, d)
        M = np.zeros((m.nv, m.nv))
        mujoco.mj_fullM(m, d, M)
        M = M[np.ix_(cols, cols)]
        bias = d.qfrc_bias[cols]
        qp = pin_q(pm, q)
        Mp = sym(pin.crba(pm, pd, qp))
        bp = pin.rnea(pm, pd, qp, v, np.zeros(len(names)))
        np.testing.assert_allclose(M, Mp, rtol=1e-11, atol=1e-11 * np.abs(Mp).max())
        np.testing.assert_allclose(bias, bp, rtol=1e-11, atol=1e-11 * np.abs(bp).max())
    return cm


def test_rigid_arm7_matches_pinocchio():
    cm = _compare_with_pinocchio(ARM7, 0)
    assert [j.name for j in cm.joints] == [f"arm7_joint{i}" for i in range(1, 8)]
    assert not any(j.elastic for j in cm.joints)


def test_rigid_panda_matches_pinocchio_and_ties_the_mimic_finger():
    mujoco = _mujoco()
    cm = _compare_with_pinocchio(erd_path("panda_description/urdf/panda.urdf"), 1)
    assert cm.mimic == {"panda_finger_joint2": ("panda_finger_joint1", 1.0, 0.0)}
    assert "panda_finger_joint2" not in [j.name for j in cm.joints]
    m = _load(cm)
    d = mujoco.MjData(m)
    f1, f2 = (m.jnt_qposadr[m.joint(n).id] for n in ("panda_finger_joint1", "panda_finger_joint2"))
    d.qpos[f1] = 0.02
    for _ in range(4000):                # 1 s: the equality pulls finger 2 onto finger 1
        d.qfrc_applied[:] = 0.0
        mujoco.mj_step(m, d)
    assert abs(d.qpos[f2] - d.qpos[f1]) < 1e-3


def test_sea_is_spongs_reduced_model():
    mujoco = _mujoco()
    from mbs_dynamics.sim.mujoco_model import MOTOR_SUFFIX, mujoco_model

    act = _sea_section()
    act["motor_damping"] = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7]
    cm = mujoco_model(ARM7.read_text(), {"actuator": act}, gravity=GRAVITY)
    K = np.array(act["stiffness"])
    B = np.array(act["motor_inertia"])
    m = _load(cm)
    d = mujoco.MjData(m)
    link = [m.joint(j.name).id for j in cm.joints]
    rotor = [m.joint(j.name + MOTOR_SUFFIX).id for j in cm.joints]
    ld, rd = m.jnt_dofadr[link], m.jnt_dofadr[rotor]
    rng = np.random.default_rng(2)
    q, theta = rng.uniform(-1, 1, 7), rng.uniform(-1, 1, 7)
    v, w = rng.uniform(-1, 1, 7), rng.uniform(-1, 1, 7)
    d.qpos[m.jnt_qposadr[link]] = q
    d.qpos[m.jnt_qposadr[rotor]] = theta
    d.qvel[ld], d.qvel[rd] = v, w
    mujoco.mj_forward(m, d)
    M = np.zeros((m.nv, m.nv))
    mujoco.mj_fullM(m, d, M)
    np.testing.assert_allclose(M[rd, rd], B, rtol=1e-12)                 # rotor inertia B
    assert np.all(M[np.ix_(rd, ld)] == 0)                                # no inertial coupling
    np.testing.assert_allclose(d.qfrc_bias[rd], 0.0, atol=1e-12)         # no gravity on rotors
    spring = K * (theta - q)
    np.testing.assert_allclose(d.qfrc_passive[rd], -spring - act["motor_damping"] * w,
                               rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(d.qfrc_passive[ld], spring, rtol=1e-10, atol=1e-10)
    j = cm.joints[0]
    assert j.elastic and j.stiffness == K[0]
    assert j.motor_p == K[0] and j.motor_d == pytest.approx(2 * np.sqrt(K[0] * B[0]))


def test_motor_loop_gains_from_the_actuator_section():
    from mbs_dynamics.sim.mujoco_model import mujoco_model

    act = dict(_sea_section(), motor_loop={"p": 500.0, "d": [1, 2, 3, 4, 5, 6, 7]})
    cm = mujoco_model(ARM7.read_text(), {"actuator": act})
    assert [j.motor_p for j in cm.joints] == [500.0] * 7
    assert [j.motor_d for j in cm.joints] == [1.0, 2, 3, 4, 5, 6, 7]


@pytest.mark.parametrize("change, match", [
    (dict(loops=[{"name": "l"}]), "closed loops"),
    (dict(actuator={"actuator": {"type": "vsa"}}), "vsa"),
    (dict(actuator={"actuator": {"type": "sea", "motor_inertia": 0.0}}), "motor_inertia"),
    (dict(actuator={"actuator": {"type": "sea", "stiffness": float("nan")}}), "stiffness"),
    (dict(actuator={"actuator": {"type": "sea", "bogus": 1.0}}), "bogus"),
    (dict(gravity=(0, 0, float("inf"))), "gravity"),
    (dict(timestep=0.0), "timestep"),
])
def test_refusals_name_the_problem(change, match):
    _mujoco()
    from mbs_dynamics.sim.mujoco_model import CosimModelError, mujoco_model

    kwargs = dict(change)
    actuator = kwargs.pop("actuator", None)
    with pytest.raises(CosimModelError, match=match):
        mujoco_model(ARM7.read_text(), actuator, **kwargs)


@pytest.mark.parametrize("urdf, match", [
    ("", "empty"), ("<robot", "malformed"), ("<foo/>", "must be <robot>"),
    ('<!DOCTYPE r [<!ENTITY a "b">]><robot name="r"/>', "DOCTYPE"),
    ('<robot name="r"><link name="a"/></robot>', "no movable joint"),
    ('<robot name="r"><link name="a"/><link name="b"/><joint name="f" type="planar">'
     '<parent link="a"/><child link="b"/></joint></robot>', "joint 'f': planar"),
])
def test_bad_urdf(urdf, match):
    from mbs_dynamics.sim.mujoco_model import CosimModelError, mujoco_model

    with pytest.raises(CosimModelError, match=match):
        mujoco_model(urdf)


def test_encoding_declaration_is_accepted():
    _mujoco()
    from mbs_dynamics.sim.mujoco_model import mujoco_model

    text = ARM7.read_text().replace('<?xml version="1.0"?>',
                                    '<?xml version="1.0" encoding="utf-8"?>')
    assert len(mujoco_model(text).joints) == 7


def test_mimic_chain_is_refused():
    _mujoco()
    from mbs_dynamics.sim.mujoco_model import CosimModelError, mujoco_model

    links = "".join(f'<link name="l{i}"><inertial><mass value="1"/><inertia ixx="0.1" ixy="0" '
                    f'ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>' for i in range(4))
    joints = "".join(f'<joint name="j{i}" type="revolute"><parent link="l{i - 1}"/><child '
                     f'link="l{i}"/><axis xyz="0 0 1"/>{mim}</joint>'
                     for i, mim in ((1, ""), (2, '<mimic joint="j1"/>'),
                                    (3, '<mimic joint="j2"/>')))
    with pytest.raises(CosimModelError, match="chains of mimics"):
        mujoco_model(f'<robot name="r">{links}{joints}</robot>')


def test_ros2_control_block():
    _mujoco()
    from mbs_dynamics.sim.mujoco_model import HARDWARE_PLUGIN, cosim_description

    urdf, cm = cosim_description(ARM7.read_text(), "/tmp/x.xml", {"actuator": _sea_section()},
                                 initial={"arm7_joint2": 0.5})
    import xml.etree.ElementTree as ET
    rc = ET.fromstring(urdf).find("ros2_control")
    assert rc.find("hardware/plugin").text == HARDWARE_PLUGIN
    assert rc.find("hardware/param[@name='mjcf']").text == "/tmp/x.xml"
    j2 = rc.find("joint[@name='arm7_joint2']")
    assert [c.get("name") for c in j2.findall("command_interface")] == ["position", "effort"]
    assert [s.get("name") for s in j2.findall("state_interface")] == [
        "position", "velocity", "effort", "motor_position", "motor_velocity"]
    assert float(j2.find("state_interface[@name='position']/param").text) == 0.5
    assert float(j2.find("param[@name='stiffness']").text) == 3000.0
    assert rc.find("hardware/param[@name='lockstep_topic']") is None   # free-running by default
    locked, _ = cosim_description(ARM7.read_text(), "/tmp/x.xml", {"actuator": _sea_section()},
                                  lockstep_topic="/c/commands")
    assert ET.fromstring(locked).find(
        "ros2_control/hardware/param[@name='lockstep_topic']").text == "/c/commands"
    rigid, _ = cosim_description(ARM7.read_text(), "/tmp/x.xml")
    j1 = ET.fromstring(rigid).find("ros2_control/joint[@name='arm7_joint1']")
    assert [c.get("name") for c in j1.findall("command_interface")] == ["effort"]
    assert [s.get("name") for s in j1.findall("state_interface")] == [
        "position", "velocity", "effort"]


def test_actuator_section_under_any_node_key():
    from mbs_dynamics.ros.cosim_setup import find_actuator_section

    act = _sea_section()
    assert act["type"] == "sea" and len(act["stiffness"]) == 7
    assert find_actuator_section({"a": {"b": {"actuator.type": "sea",
                                              "actuator.stiffness": 5.0}}}) == {
        "type": "sea", "stiffness": 5.0}
    with pytest.raises(ValueError, match="no 'actuator:' section"):
        find_actuator_section({"x": {"ros__parameters": {"gravity": [0, 0, -9.81]}}})
    with pytest.raises(ValueError, match="several"):
        find_actuator_section({"a": {"actuator": {"type": "sea"}},
                               "b": {"actuator": {"type": "rigid"}}})


def test_controllers_config_patches_only_what_the_hardware_decides():
    from mbs_dynamics.ros.cosim_setup import controllers_config

    doc = yaml.safe_load((REPO / "config" / "jtc_feedforward_example.yaml").read_text())
    joints = [f"arm7_joint{i}" for i in range(1, 8)]
    rigid, rate = controllers_config(doc, joints, elastic=False)
    assert rate == 1000
    jtc = rigid["joint_trajectory_controller"]["ros__parameters"]
    assert jtc["command_interfaces"] == ["effort"]
    assert jtc["gains"] == doc["joint_trajectory_controller"]["ros__parameters"]["gains"]
    assert rigid["controller_manager"]["ros__parameters"]["use_sim_time"] is True
    sea, _ = controllers_config(doc, joints, elastic=True)
    assert sea["joint_trajectory_controller"]["ros__parameters"]["command_interfaces"] == [
        "position", "effort"]
    with pytest.raises(ValueError, match="not joints of the hardware"):
        controllers_config(doc, joints[:3], elastic=False)
    with pytest.raises(ValueError, match="controller_manager"):
        controllers_config({"joint_trajectory_controller": {}}, joints, elastic=False)


def _emulate(kind, feedforward, seconds=3.0):
    """JTC + the drive + the derived MuJoCo model, emulated at 1 kHz in Python as the plugin runs
    them (4 RK4 steps per period): rigid, effort = ff(t + T) + PD(t); SEA, θ_d(t + T) and τ_m(t)
    with the motor loop on the line from the previous command. Returns (RMS, max) of q_d − q."""
    mujoco = _mujoco()
    import mbs_dynamics as mbs
    from mbs_dynamics.control.actuators import actuator_from_params
    from mbs_dynamics.control.enrich import TrajectoryEnricher
    from mbs_dynamics.sim.mujoco_model import MOTOR_SUFFIX, mujoco_model

    urdf = ARM7.read_text()
    robot = mbs.load_urdf(urdf)
    names = list(robot.joint_names)
    act = _sea_section() if kind == "sea" else None
    q0 = np.array([0.0, 0.4, 0.0, -1.2, 0.0, 0.9, 0.0])
    mid = q0 + [0.5, -0.4, 0.3, 0.5, -0.6, 0.4, 0.7]
    goal = {"joint_names": names, "points": [
        {"time_from_start": 0.0, "positions": list(q0)},
        {"time_from_start": seconds / 2, "positions": list(mid)},
        {"time_from_start": seconds, "positions": list(q0)}]}
    output = "motor" if kind == "sea" and feedforward else "effort"
    sea = actuator_from_params({"actuator": act}, robot.n) if kind == "sea" else None
    cmd = TrajectoryEnricher(robot, output=output, actuator=sea, sample_period=0.001).enrich(goal)
    ref = TrajectoryEnricher(robot, sample_period=0.001).enrich(goal)
    cm = mujoco_model(urdf, {"actuator": act} if act else None)
    m = _load(cm)
    d = mujoco.MjData(m)
    T, sub = 1e-3, 4
    m.opt.timestep = T / sub
    qa = [m.jnt_qposadr[m.joint(n).id] for n in names]
    va = [m.jnt_dofadr[m.joint(n).id] for n in names]
    d.qpos[qa] = q0
    if kind == "sea":
        ra = [m.jnt_qposadr[m.joint(n + MOTOR_SUFFIX).id] for n in names]
        rv = [m.jnt_dofadr[m.joint(n + MOTOR_SUFFIX).id] for n in names]
        P = np.array([j.motor_p for j in cm.joints])
        D = np.array([j.motor_d for j in cm.joints])
        d.qpos[ra] = cmd.positions[0]
    Kp = np.array([200, 200, 150, 150, 50, 50, 20.0])
    Kd = np.array([20, 20, 15, 15, 5, 5, 0.5])

    def at(tr, t, field):
        k = min(int(round(t / T)), len(tr.times) - 1)
        return getattr(tr, field)[k]

    err, prev = [], None
    for k in range(int(round(seconds / T))):
        t = k * T
        q, v = d.qpos[qa].copy(), d.qvel[va].copy()
        err.append(at(ref, t, "positions") - q)
        ff_next = at(cmd, t + T, "effort") if feedforward else 0.0
        if kind == "rigid":
            d.qfrc_applied[va] = (ff_next + Kp * (at(cmd, t, "positions") - q)
                                  + Kd * (at(cmd, t, "velocities") - v))
            for _ in range(sub):
                mujoco.mj_step(m, d)
        else:
            new = at(cmd, t + T, "positions")
            old = new if prev is None else prev
            tau_m = at(cmd, t, "effort") if feedforward else 0.0
            for s in range(sub):
                r = old + (new - old) * s / sub
                d.qfrc_applied[rv] = tau_m + P * (r - d.qpos[ra]) + D * ((new - old) / T
                                                                        - d.qvel[rv])
                mujoco.mj_step(m, d)
            prev = new
    err = np.array(err)
    return float(np.sqrt(np.mean(err ** 2))), float(np.abs(err).max())


@pytest.mark.parametrize("kind", ["rigid", "sea"])
def test_the_feedforward_drives_the_derived_model(kind):
    """MuJoCo integrating the derived model under the package's feedforward (through the
    sampled loop the plugin runs) follows the trajectory ≥ 100× better than the same loop
    without feedforward: the model is the one the feedforward inverts, SEA included."""
    with_ff = _emulate(kind, True)
    without = _emulate(kind, False)
    assert without[0] >= 100.0 * with_ff[0], (with_ff, without)
    assert with_ff[1] < 2e-3


def test_the_module_writes_the_files_or_refuses_with_status_2(tmp_path):
    """``python -m mbs_dynamics.sim.mujoco_model REQUEST.json`` (what cosim.launch.py runs when
    the launching interpreter has no mujoco)."""
    _mujoco()
    import json
    import subprocess
    import sys

    req = tmp_path / "req.json"
    req.write_text(json.dumps({"urdf_file": str(ARM7), "folder": str(tmp_path),
                               "actuator": {"actuator": {"type": "sea"}},
                               "gravity": [0, 0, -9.81], "substeps": 4}))
    env = dict(__import__("os").environ)   # the package as installed (or PYTHONPATH's)
    done = subprocess.run([sys.executable, "-m", "mbs_dynamics.sim.mujoco_model", str(req)],
                          capture_output=True, text=True, env=env, check=False,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = json.loads((tmp_path / "joints.json").read_text())
    assert out["elastic"] and len(out["joints"]) == 7
    assert "<ros2_control" in (tmp_path / "description.urdf").read_text()
    assert (tmp_path / "model.mjb").stat().st_size > 0
    req.write_text(json.dumps({"urdf_file": str(ARM7), "folder": str(tmp_path),
                               "loops": [{"name": "x"}]}))
    done = subprocess.run([sys.executable, "-m", "mbs_dynamics.sim.mujoco_model", str(req)],
                          capture_output=True, text=True, env=env, check=False,
                          cwd=tmp_path)
    assert done.returncode == 2 and "closed loops" in done.stderr


def test_proxy_overrides_are_valid_proxy_parameters():
    from mbs_dynamics.ros.cosim_setup import proxy_overrides
    from mbs_dynamics.ros.parameters import check_proxy_config

    sea = proxy_overrides(_sea_section(), feedforward=True)
    assert sea["output"] == "motor" and sea["hold_on_start"] is True
    assert sea["actuator.stiffness"][0] == 3000.0 and sea["actuator.motor_damping"] == 0.0
    cfg = check_proxy_config(sea)
    assert cfg["output"] == "motor" and cfg["feedforward"] is True
    rigid = check_proxy_config(proxy_overrides({"type": "rigid"}, feedforward=False))
    assert rigid["output"] == "effort" and rigid["feedforward"] is False
    assert rigid["hold_on_start"] is False


def test_point_masses_and_massless_links_load():
    """A textbook arm: a massless intermediate link and a point mass (zero inertia) — valid
    URDF; MuJoCo's lower bounds (1e-12) leave its mass matrix Pinocchio's to 1e-10."""
    mujoco = _mujoco()
    pin = pytest.importorskip("pinocchio")
    from mbs_dynamics.sim.mujoco_model import mujoco_model

    urdf = ('<robot name="p"><link name="base"/><link name="l0"/><link name="l1"><inertial>'
            '<origin xyz="0 0.5 0"/><mass value="1.5"/><inertia ixx="0" ixy="0" ixz="0" '
            'iyy="0" iyz="0" izz="0"/></inertial></link>'
            '<joint name="j0" type="revolute"><parent link="base"/><child link="l0"/>'
            '<axis xyz="1 0 0"/><limit lower="-3" upper="3" effort="9" velocity="9"/></joint>'
            '<joint name="j1" type="revolute"><parent link="l0"/><child link="l1"/>'
            '<origin xyz="0 0 0.3"/><axis xyz="0 0 1"/>'
            '<limit lower="-3" upper="3" effort="9" velocity="9"/></joint></robot>')
    m = _load(mujoco_model(urdf))
    d = mujoco.MjData(m)
    d.qpos[:] = [0.4, -0.7]
    mujoco.mj_forward(m, d)
    M = np.zeros((2, 2))
    mujoco.mj_fullM(m, d, M)
    pm = pin.buildModelFromXML(urdf)
    Mp = sym(pin.crba(pm, pm.createData(), np.array([0.4, -0.7])))
    np.testing.assert_allclose(M, Mp, atol=1e-10)


def test_flatness_controllers_and_node_parameters():
    """controller:=flatness: the effort controller over every hardware joint, and node
    parameters feedforward_node's own checks accept (the flatness output on, the lead one
    controller period)."""
    from mbs_dynamics.ros.cosim_setup import (FLATNESS_CONTROLLER, flatness_controllers_config,
                                              flatness_node_overrides)
    from mbs_dynamics.ros.parameters import check_config

    doc = yaml.safe_load((REPO / "config" / "jtc_feedforward_example.yaml").read_text())
    joints = [f"arm7_joint{i}" for i in range(1, 8)]
    out, rate = flatness_controllers_config(doc, joints)
    assert rate == 1000
    cm = out["controller_manager"]["ros__parameters"]
    assert cm[FLATNESS_CONTROLLER]["type"] == "effort_controllers/JointGroupEffortController"
    eff = out[FLATNESS_CONTROLLER]["ros__parameters"]
    assert eff["joints"] == joints and eff["interface_name"] == "effort"
    params = flatness_node_overrides(_sea_section(), joints, 20.0, 0.8, rate)
    cfg = check_config(params)
    # one period of transport delay: the torque of cycle k is applied from cycle k + 1 on
    assert cfg["flatness"] == {"bandwidth": 20.0, "damping": 0.8, "sample_time": 1e-3,
                               "delay": 1e-3}
    assert cfg["joints"] == joints and cfg["control_rate"] == 0.0
    with pytest.raises(ValueError, match="actuator:=sea"):
        flatness_node_overrides({"type": "rigid"}, joints, 20.0, 1.0, rate)
    with pytest.raises(ValueError, match="flatness_bandwidth"):
        flatness_node_overrides(_sea_section(), joints, -1.0, 1.0, rate)
    with pytest.raises(ValueError, match="controller_manager"):
        flatness_controllers_config({}, joints)
