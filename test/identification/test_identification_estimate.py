"""Identification from logs (issue 20, item 4) against data simulated by Pinocchio.

Oracle: ``pin.rnea`` of a Pinocchio model whose inertial parameters were changed at random
(the hidden truth), plus viscous and Coulomb friction and Gaussian noise of a different σ per
joint, along analytic Fourier trajectories (test/identification/identification_sim.py). Checked:

* a held-out trajectory's measured torques are predicted at its states with RMS ≤ 1.2 σ per joint
  (a perfect model gives 1.0 σ);
* ≥ 90 % of the base parameters (and of the friction coefficients) lie within 3 σ of the truth
  (truth: ``base_parameters(robot).to_base(π_true)``);
* the physically consistent estimate is written as a URDF that ``load_urdf`` loads without a
  validation error, with the identified parameters;
* CSV and rosbag2 (sqlite3, MCAP; written here with rosbags, velocity left empty) agree;
* series elastic logs: K and B per joint within 3 σ;
* a joint that does not move: a warning naming its parameters, and the URDF still loads.
"""
from __future__ import annotations

import importlib.util
import warnings

import numpy as np
import pytest

import mbs_dynamics as mbs
from mbs_dynamics import data
from mbs_dynamics.identification import consistent, logs
from mbs_dynamics.identification.pipeline import IdentificationWarning, identify

from identification_sim import (central_first_derivative, central_second_derivative, fourier,
                                perturbed_model, pin, rigid_torques, simulate, true_parameters)

_NO_SCIPY = importlib.util.find_spec("scipy") is None   # a skip per test, not per module
pytestmark = [pytest.mark.skipif(pin is None, reason="pinocchio is not installed"),
              pytest.mark.skipif(_NO_SCIPY, reason="scipy is not installed")]

RATE = 500.0
SIGMA = np.array([0.08, 0.2, 0.1, 0.1, 0.04, 0.03, 0.02])

TREE_URDF = """<robot name="tree">
  <link name="base"/>
  <link name="a"><inertial><origin xyz="0.05 0 0.1"/><mass value="2"/>
    <inertia ixx="0.02" iyy="0.03" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="b"><inertial><origin xyz="0 0.02 0.2"/><mass value="1.5"/>
    <inertia ixx="0.01" iyy="0.012" izz="0.004" ixy="0.001" ixz="0" iyz="0"/></inertial></link>
  <link name="c"><inertial><origin xyz="0.1 0 0"/><mass value="0.8"/>
    <inertia ixx="0.002" iyy="0.003" izz="0.003" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="ja" type="revolute"><parent link="base"/><child link="a"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="50" velocity="2"/></joint>
  <joint name="jb" type="revolute"><parent link="a"/><child link="b"/><axis xyz="0 1 0"/>
    <origin xyz="0 0 0.3"/><limit lower="-2" upper="2" effort="50" velocity="2"/></joint>
  <joint name="jc" type="prismatic"><parent link="a"/><child link="c"/><axis xyz="1 0 0"/>
    <origin xyz="0 0.2 0.1"/><limit lower="-0.3" upper="0.3" effort="50" velocity="0.5"/></joint>
</robot>"""


def _case(urdf_text, sigma, seed, duration=24.0, amp=0.8, q0=None, still=()):
    """A training log and a held-out log of one robot with hidden parameters and friction."""
    rng = np.random.default_rng(seed)
    model = perturbed_model(urdf_text, rng)
    n = model.nv
    Fv = rng.uniform(0.05, 0.8, n)
    Fc = rng.uniform(0.05, 0.6, n)
    t = np.arange(0.0, duration, 1.0 / RATE)
    q, qd, qdd = fourier(t, n, rng, amp=amp, q0=q0)
    for j in still:
        q[:, j], qd[:, j], qdd[:, j] = 0.3, 0.0, 0.0
    tau = simulate(model, t, q, qd, qdd, Fv, Fc, sigma, rng)
    th = np.arange(0.0, 6.0, 1.0 / RATE)
    qh, qdh, qddh = fourier(th, n, rng, amp=amp, q0=q0)
    tauh = simulate(model, th, qh, qdh, qddh, Fv, Fc, sigma, rng)
    return dict(model=model, Fv=Fv, Fc=Fc, t=t, q=q, qd=qd, qdd=qdd, tau=tau,
                held=(qh, qdh, qddh, tauh))


@pytest.fixture(scope="module")
def arm7():
    path = data.robot("arm7")
    text = path.read_text()
    robot = mbs.load_urdf(path)
    case = _case(text, SIGMA, seed=7)
    assert [pin_name for pin_name in case["model"].names[1:]] == list(robot.joint_names)
    return robot, path, case


@pytest.fixture(scope="module")
def arm7_result(arm7, tmp_path_factory):
    robot, path, c = arm7
    d = tmp_path_factory.mktemp("arm7")
    log = logs.JointLog(c["t"], robot.joint_names, c["q"], c["tau"], None, None, "sim")
    logs.write_csv(d / "log.csv", log)
    with warnings.catch_warnings():
        warnings.simplefilter("error", IdentificationWarning)  # a well-excited log: no warning
        res = identify(robot, d / "log.csv", urdf=path)
    return res, d


def _within(est, sigma, truth):
    return np.abs(est - truth) <= 3.0 * sigma


def test_held_out_trajectory_predicted_to_the_noise(arm7, arm7_result):
    _, _, c = arm7
    res, _ = arm7_result
    qh, qdh, qddh, tauh = c["held"]
    rms = np.sqrt(np.mean((res.predict(qh, qdh, qddh) - tauh) ** 2, axis=0))
    assert np.all(rms <= 1.2 * SIGMA), rms / SIGMA
    # the URDF's parameters are far off (what the identification is for)
    rms_urdf = np.sqrt(np.mean((mbs.load_urdf(data.robot("arm7")).inverse_dynamics(
        qh, qdh, qddh) - tauh) ** 2, axis=0))
    assert np.all(rms_urdf > 2 * SIGMA)
    # the reported residual RMS of the training log is the noise
    rep = res.report["rms"]
    np.testing.assert_allclose([rep[j] for j in res.joint_names], SIGMA, rtol=0.1)


def test_base_parameters_and_friction_within_3_sigma(arm7, arm7_result):
    robot, _, c = arm7
    res, _ = arm7_result
    base = mbs.identification.base_parameters(robot)
    truth = base.to_base(true_parameters(c["model"]))
    assert list(res.base_parameters) == list(base.names)
    est = np.array([v["value"] for v in res.base_parameters.values()])
    sig = np.array([v["sigma"] for v in res.base_parameters.values()])
    assert np.all(sig > 0) and np.all(np.isfinite(sig))
    ok = _within(est, sig, truth)
    assert ok.mean() >= 0.9, (np.array(base.names)[~ok], ((est - truth) / sig)[~ok])
    fr = res.report["friction"]
    fv = np.array([[fr[j]["viscous"], fr[j]["viscous_sigma"]] for j in robot.joint_names])
    fc = np.array([[fr[j]["coulomb"], fr[j]["coulomb_sigma"]] for j in robot.joint_names])
    assert _within(fv[:, 0], fv[:, 1], c["Fv"]).mean() >= 0.85
    assert _within(fc[:, 0], fc[:, 1], c["Fc"]).mean() >= 0.85
    # the friction of the returned model (consistent fit) is the estimate's to a few σ
    for j, name in enumerate(robot.joint_names):
        assert abs(res.friction[name]["viscous"] - c["Fv"][j]) < 5 * fv[j, 1] + 1e-3


def test_consistent_estimate_loads(arm7_result):
    res, d = arm7_result
    files = res.write(d / "out")
    assert [f.rsplit("/", 1)[-1] for f in files] == ["out.urdf", "out_actuators.yaml",
                                                     "out_report.json"]
    assert consistent.is_consistent(res.inertial_parameters).all()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no URDFWarning either
        loaded = mbs.load_urdf(d / "out.urdf")
    np.testing.assert_allclose(loaded.inertial_parameters(), res.inertial_parameters,
                               rtol=1e-12, atol=1e-14)
    # everything but the inertials is the original text: same joints, limits, kinematics
    orig = mbs.load_urdf(data.robot("arm7"))
    assert loaded.joint_names == orig.joint_names
    np.testing.assert_array_equal(loaded.model.B, orig.model.B)
    np.testing.assert_array_equal(loaded.upper, orig.upper)
    text = (d / "out.urdf").read_text()
    assert text.startswith(data.robot("arm7").read_text().split("<robot")[0])
    cfg = mbs.actuator_from_params(__import__("yaml").safe_load(
        (d / "out_actuators.yaml").read_text()), 7)
    assert cfg is None  # rigid


def test_rosbag_sqlite3_and_mcap_match_the_csv(arm7, tmp_path):
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore

    robot, path, c = arm7
    c = {k: c[k][:4000] for k in ("t", "q", "tau")}
    logs.write_csv(tmp_path / "log.csv", logs.JointLog(c["t"], robot.joint_names, c["q"],
                                                       c["tau"], None, None, "sim"))
    res_csv = identify(robot, tmp_path / "log.csv")
    store = get_typestore(Stores.ROS2_HUMBLE)
    JS = store.types["sensor_msgs/msg/JointState"]
    Header = store.types["std_msgs/msg/Header"]
    Time = store.types["builtin_interfaces/msg/Time"]
    names = list(robot.joint_names)[::-1] + ["gripper"]  # any order, extra joints ignored
    for plugin in (StoragePlugin.SQLITE3, StoragePlugin.MCAP):
        bag = tmp_path / f"bag_{plugin.name.lower()}"
        with Writer(bag, version=9, storage_plugin=plugin) as w:
            conn = w.add_connection("/robot/joint_states", JS.__msgtype__, typestore=store)
            other = w.add_connection("/chatter", "std_msgs/msg/String", typestore=store)
            w.write(other, 1, store.serialize_cdr(store.types["std_msgs/msg/String"](data="x"),
                                                  "std_msgs/msg/String"))
            for k in range(c["t"].size):
                ns = int(round(c["t"][k] * 1e9)) + 10 ** 18
                msg = JS(header=Header(stamp=Time(sec=ns // 10 ** 9, nanosec=ns % 10 ** 9),
                                       frame_id=""), name=names,
                         position=np.append(c["q"][k][::-1], 0.01),
                         velocity=np.zeros(0), effort=np.append(c["tau"][k][::-1], 0.0))
                # the bag's receive time is jittered: header.stamp is what counts
                w.write(conn, ns + int(3e5 * (k % 3)), store.serialize_cdr(msg, JS.__msgtype__))
        res = identify(robot, bag, topic="/robot/joint_states", urdf=path)
        a = np.array([v["value"] for v in res.base_parameters.values()])
        b = np.array([v["value"] for v in res_csv.base_parameters.values()])
        s = np.array([v["sigma"] for v in res_csv.base_parameters.values()])
        assert np.all(np.abs(a - b) < 1e-3 * s), plugin


def test_unexcited_joint_is_named(tmp_path):
    """Joint 7 of arm7 never moves: its friction and the parameters only it excites are named
    in a warning and kept at the URDF's values; the written URDF still loads."""
    path = data.robot("arm7")
    robot = mbs.load_urdf(path)
    c = _case(path.read_text(), SIGMA, seed=3, duration=12.0, still=(6,))
    log = logs.JointLog(c["t"], robot.joint_names, c["q"], c["tau"], None, None, "still.csv")
    with pytest.warns(IdentificationWarning, match="arm7_joint7.viscous") as rec:
        res = identify(robot, log, urdf=path)
    msg = str(rec[0].message)
    assert "arm7_joint7.coulomb" in msg and "URDF" in msg
    assert "arm7_joint7.viscous" in res.report["unexcited"]
    assert not np.isfinite(res.estimate.sigma[res.estimate.names.index("arm7_joint7.viscous")])
    res.write(tmp_path / "still")
    mbs.load_urdf(tmp_path / "still.urdf")


def test_series_elastic_log(tmp_path):
    """SEA: link q, motor θ = q + τ/K, motor torque τ_m = B θ̈ + F_m sign(θ̇) + τ (+ noise); θ̇, θ̈
    by sixth-order differences of the exact θ samples. K and B within 3σ (and 5 %), then the link dynamics."""
    rng = np.random.default_rng(11)
    text = data.robot("arm7").read_text()
    robot = mbs.load_urdf(data.robot("arm7"))
    model = perturbed_model(text, rng)
    K = np.array([3000.0, 3000.0, 2000.0, 2000.0, 1000.0, 1000.0, 1000.0])
    B = np.array([0.4, 0.4, 0.2, 0.2, 0.1, 0.05, 0.05])
    dt = 1.0 / RATE
    t = np.arange(0.0, 20.0, dt)
    q, qd, qdd = fourier(t, 7, rng, amp=0.6)
    tau = rigid_torques(model, q, qd, qdd)
    theta = q + tau / K
    thdd = central_second_derivative(theta, dt)
    sig_m = 0.05
    Fm = np.array([2.0, 2.0, 1.0, 1.0, 0.5, 0.3, 0.3])  # motor-side Coulomb friction
    thd = central_first_derivative(theta, dt)
    tau_m = B * thdd + Fm * np.sign(thd) + tau + rng.normal(size=tau.shape) * sig_m
    keep = slice(5, -5)
    log = logs.JointLog(t[keep], robot.joint_names, q[keep], tau_m[keep], None, theta[keep],
                        "sea.csv")
    logs.write_csv(tmp_path / "sea.csv", log)
    res = identify(robot, tmp_path / "sea.csv", friction=False, urdf=data.robot("arm7"))
    sea = res.report["sea"]
    for j, name in enumerate(robot.joint_names):
        s = sea[name]
        assert abs(s["stiffness"] - K[j]) <= max(3 * s["stiffness_sigma"], 1e-3 * K[j]), s
        assert abs(s["motor_inertia"] - B[j]) <= max(3 * s["motor_inertia_sigma"], 0.01 * B[j])
        assert abs(s["stiffness"] - K[j]) < 0.05 * K[j]
        assert abs(s["motor_coulomb"] - Fm[j]) <= 3 * s["motor_coulomb_sigma"] + 0.02 * Fm[j]
    res.write(tmp_path / "sea_out")
    cfg = mbs.actuator_from_params(__import__("yaml").safe_load(
        (tmp_path / "sea_out_actuators.yaml").read_text()), 7)
    assert isinstance(cfg, mbs.SEA)
    # the link model predicts the link torque K (θ − q) of a held-out motion
    qh, qdh, qddh = fourier(t[:2000], 7, rng, amp=0.6)
    tau_h = rigid_torques(model, qh, qdh, qddh)
    err = res.predict(qh, qdh, qddh) - tau_h
    assert np.all(np.sqrt(np.mean(err ** 2, axis=0)) < 0.02 * np.abs(tau_h).max(axis=0) + 0.05)


def test_tree_with_a_prismatic_joint():
    """A branching robot with revolute and prismatic joints."""
    robot = mbs.load_urdf(TREE_URDF)
    sigma = np.array([0.02, 0.05, 0.05])
    c = _case(TREE_URDF, sigma, seed=5, duration=20.0, amp=0.3)
    log = logs.JointLog(c["t"], robot.joint_names, c["q"], c["tau"], None, None, "tree.csv")
    res = identify(robot, log, urdf=TREE_URDF)
    qh, qdh, qddh, tauh = c["held"]
    rms = np.sqrt(np.mean((res.predict(qh, qdh, qddh) - tauh) ** 2, axis=0))
    assert np.all(rms <= 1.2 * sigma), rms / sigma
    mbs.load_urdf(res.urdf_text())


@pytest.mark.filterwarnings("ignore::mbs_dynamics.URDFWarning")
def test_least_squares_estimate_and_options(arm7):
    """consistent=False returns the least-squares parameters (same torques); torque constants
    scale a current log; a floating base is refused."""
    robot, path, c = arm7
    n = slice(0, 6000)
    log = logs.JointLog(c["t"][n], robot.joint_names, c["q"][n], c["tau"][n] / 2.0, None, None,
                        "current.csv")
    res = identify(robot, log, consistent=False, torque_constants=2.0)
    base = mbs.identification.base_parameters(robot)
    est = np.array([v["value"] for v in res.base_parameters.values()])
    np.testing.assert_allclose(base.to_base(res.inertial_parameters), est, rtol=1e-9,
                               atol=1e-12)
    with pytest.raises(ValueError, match="fixed-base"):
        identify(mbs.load_urdf(path, floating_base=True), log)
