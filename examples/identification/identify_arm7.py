"""Identify the bundled 7-DOF arm from a simulated rosbag2, and compare the feedforward with the
URDF's parameters against the identified ones (issue 20, item 6).

1. The "real" robot is the bundled arm7 with hidden changes: every link's mass ±25 %, its centre
   of mass moved by up to 2 cm, its inertia scaled, plus a 1.2 kg tool on the flange that the URDF
   does not know, viscous and Coulomb friction per joint (the Coulomb step smoothed over
   ±0.01 rad/s), torque-sensor noise and 18-bit encoders.
2. MuJoCo (its own URDF importer, RK4 at 4 kHz) plays an exciting trajectory from
   ``mbs_dynamics.identification.excite``: feedforward from the nominal URDF + PD, friction
   applied through ``qfrc_applied``; every millisecond the joint positions and the commanded
   torques (+ noise) are logged as sensor_msgs/JointState to a rosbag2 (MCAP) with rosbags.
3. ``identify`` reads the bag (velocities left empty: it differentiates q) and writes
   ``out/arm7_identified.urdf``, ``..._actuators.yaml``, ``..._report.json``.
4. On a different trajectory (the bundled ``arm7_example.yaml``), the torque the real robot needs
   (MuJoCo's ``mj_inverse`` of the hidden model + the hidden friction) is compared with the
   feedforward of the URDF and of the identified model (+ identified friction).

Run:  python examples/identification/identify_arm7.py [--out DIR] [--quick]
"""
from __future__ import annotations

import argparse
import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import mujoco
import numpy as np

import mbs_dynamics as mbs
from mbs_dynamics import data
from mbs_dynamics.identification import excite, identify, logs

HERE = Path(__file__).resolve().parent
RATE = 1000.0
SUBSTEPS = 4
NOISE = np.array([0.3, 0.3, 0.15, 0.15, 0.05, 0.05, 0.02])   # torque sensor σ [N m]
FV = np.array([0.8, 0.9, 0.5, 0.5, 0.2, 0.15, 0.1])          # viscous [N m s/rad]
FC = np.array([1.5, 1.8, 1.0, 1.0, 0.4, 0.3, 0.2])           # Coulomb [N m]
ENCODER = 2 * np.pi / 2 ** 18                                  # position quantum [rad]


def hidden_urdf(text, rng):
    """The arm7 URDF with changed inertials and an extra tool: the 'real' robot."""
    root = ET.fromstring(text)
    for link in root.iter("link"):
        inertial = link.find("inertial")
        if inertial is None or link.get("name") in ("world", "arm7_link0"):
            continue
        mass = inertial.find("mass")
        mass.set("value", repr(float(mass.get("value")) * rng.uniform(0.75, 1.25)))
        origin = inertial.find("origin")
        xyz = np.array([float(x) for x in origin.get("xyz", "0 0 0").split()])
        origin.set("xyz", " ".join(repr(float(x)) for x in xyz + rng.uniform(-0.02, 0.02, 3)))
        inertia = inertial.find("inertia")
        s = rng.uniform(0.7, 1.3)
        for k in ("ixx", "iyy", "izz", "ixy", "ixz", "iyz"):
            inertia.set(k, repr(float(inertia.get(k, "0")) * s))
    # a tool the URDF does not know: 1.2 kg, 8 cm beyond the flange
    tool = ET.SubElement(root, "link", name="hidden_tool")
    inertial = ET.SubElement(tool, "inertial")
    ET.SubElement(inertial, "origin", xyz="0.01 0 0.08", rpy="0 0 0")
    ET.SubElement(inertial, "mass", value="1.2")
    ET.SubElement(inertial, "inertia", ixx="0.004", iyy="0.004", izz="0.002", ixy="0", ixz="0",
                  iyz="0")
    joint = ET.SubElement(root, "joint", name="hidden_tool_joint", type="fixed")
    ET.SubElement(joint, "parent", link="arm7_link7")
    ET.SubElement(joint, "child", link="hidden_tool")
    return ET.tostring(root, encoding="unicode")


def mujoco_model(urdf_text):
    """MuJoCo model of a URDF: inertias from the URDF, no geometry, no contacts or limits."""
    root = ET.fromstring(urdf_text)
    for link in root.iter("link"):
        for tag in ("visual", "collision"):
            for el in link.findall(tag):
                link.remove(el)
    mj = ET.SubElement(root, "mujoco")
    ET.SubElement(mj, "compiler", inertiafromgeom="false", discardvisual="true")
    m = mujoco.MjModel.from_xml_string(ET.tostring(root, encoding="unicode"))
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
    m.opt.gravity[:] = (0.0, 0.0, -9.81)
    m.opt.integrator = mujoco.mjtIntegrator.mjINT_RK4
    m.opt.timestep = 1.0 / (RATE * SUBSTEPS)
    return m


def friction(qd):
    """The hidden friction; the Coulomb step is smoothed over ±0.01 rad/s (the friction torque,
    updated every 0.25 ms substep, stays stable: slope Fc/0.01 ≤ 180 N m s/rad)."""
    return FV * qd + FC * np.tanh(qd / 0.01)


def simulate(m, nominal, traj, rng):
    """Track ``traj`` in MuJoCo: nominal feedforward + PD; log q (quantised) and τ (+ noise)."""
    d = mujoco.MjData(m)
    ts = np.arange(traj.start_time, traj.end_time, 1.0 / RATE)
    ref = traj.sample_many(ts)
    d.qpos[:] = ref[0, 0]
    # PD gains from the smallest diagonal of M(q) along the trajectory: 4 Hz bandwidth, critically
    # damped (kd·dt/M_ii ≤ 0.05 with the 1 ms zero-order hold, at every configuration)
    w = 2 * np.pi * 4.0
    m_ii = np.min([np.diag(nominal.mass_matrix(x)) for x in ref[::100, 0]], axis=0)
    kp, kd = m_ii * w ** 2, 2.0 * m_ii * w
    q_log, tau_log = np.empty((ts.size, 7)), np.empty((ts.size, 7))
    for k in range(ts.size):
        q_ref, qd_ref, qdd_ref = ref[k, 0], ref[k, 1], ref[k, 2]
        tau = (nominal.inverse_dynamics(q_ref, qd_ref, qdd_ref)
               + kp * (q_ref - d.qpos) + kd * (qd_ref - d.qvel))
        q_log[k] = np.round(d.qpos / ENCODER) * ENCODER
        tau_log[k] = tau + rng.normal(size=7) * NOISE
        for _ in range(SUBSTEPS):  # the motor torque held for 1 ms, minus the joint friction
            d.qfrc_applied[:] = tau - friction(d.qvel)
            mujoco.mj_step(m, d)
    return ts, q_log, tau_log


def needed_torque(m, traj, ts):
    """τ the real robot needs along traj: MuJoCo's inverse dynamics + the hidden friction."""
    d = mujoco.MjData(m)
    s = traj.sample_many(ts)
    out = np.empty((ts.size, 7))
    for k in range(ts.size):
        d.qpos[:], d.qvel[:], d.qacc[:] = s[k, 0], s[k, 1], s[k, 2]
        mujoco.mj_inverse(m, d)
        out[k] = d.qfrc_inverse + friction(s[k, 1])
    return s, out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=HERE / "out")
    ap.add_argument("--quick", action="store_true", help="one period and a short optimisation")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(2026)

    urdf_path = data.robot("arm7")
    nominal = mbs.load_urdf(urdf_path)
    real = mujoco_model(hidden_urdf(urdf_path.read_text(), rng))
    assert real.nv == 7

    # 1. an exciting trajectory (finite Fourier series, optimised condition number)
    design = excite.excite(nominal, period=10.0, harmonics=5, margin=0.8,
                           iterations=5 if args.quick else 40, seed=1)
    traj = mbs.Trajectory.from_dict(design.to_dict(periods=1 if args.quick else 3))
    traj.save(args.out / "exciting.yaml")
    print(f"exciting trajectory: {traj.duration:g} s, condition number "
          f"{design.condition:.3g} (random start {design.condition_start:.3g})")

    # 2. MuJoCo plays it; the log becomes a rosbag2 (MCAP), velocities left empty
    ts, q, tau = simulate(real, nominal, traj, rng)
    if not np.all(np.isfinite(q)) or np.abs(q).max() > 10:
        raise SystemExit("the MuJoCo simulation diverged")
    bag = args.out / "arm7_log"
    if bag.exists():
        shutil.rmtree(bag)
    logs.write_rosbag(bag, logs.JointLog(ts + 1.7e9, nominal.joint_names, q, tau),
                      storage="mcap")
    print(f"logged {ts.size} JointState messages to {bag}")

    # 3. identification from the bag
    res = identify(nominal, bag, urdf=urdf_path)
    files = res.write(args.out / "arm7_identified")
    print("wrote", ", ".join(Path(f).name for f in files))
    identified = mbs.load_urdf(args.out / "arm7_identified.urdf")

    # 4. feedforward error on another trajectory: URDF vs identified (+ friction)
    task = mbs.Trajectory.load(data.trajectory("arm7_example"))
    tt = np.arange(task.start_time, task.end_time, 1.0 / RATE)
    s, tau_real = needed_torque(real, task, tt)
    ff_urdf = nominal.inverse_dynamics(s[:, 0], s[:, 1], s[:, 2])
    ff_id = identified.inverse_dynamics(s[:, 0], s[:, 1], s[:, 2]) + res.friction_torque(s[:, 1])
    rms_urdf = np.sqrt(np.mean((ff_urdf - tau_real) ** 2, axis=0))
    rms_id = np.sqrt(np.mean((ff_id - tau_real) ** 2, axis=0))
    summary = {
        "samples": int(ts.size), "condition_number": res.report["condition_number"],
        "noise_sigma": NOISE.tolist(),
        "training_rms_identified": [res.report["rms"][j] for j in nominal.joint_names],
        "feedforward_rms_urdf": rms_urdf.tolist(),
        "feedforward_rms_identified": rms_id.tolist(),
        "friction_true": {"viscous": FV.tolist(), "coulomb": FC.tolist()},
        "friction_identified": {k: [res.friction[j][k] for j in nominal.joint_names]
                                for k in ("viscous", "coulomb")},
        "unexcited": res.report["unexcited"],
    }
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print("\nfeedforward RMS error on arm7_example.yaml [N m] (URDF -> identified):")
    for j, name in enumerate(nominal.joint_names):
        print(f"  {name}: {rms_urdf[j]:8.4f} -> {rms_id[j]:8.4f}")

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, axes = plt.subplots(7, 1, sharex=True, figsize=(9, 12))
    for j, ax in enumerate(axes):
        ax.plot(tt, tau_real[:, j], color="k", lw=1.2, label="needed (MuJoCo, hidden model)")
        ax.plot(tt, ff_urdf[:, j], color="tab:red", ls="--", lw=1.0, label="feedforward: URDF")
        ax.plot(tt, ff_id[:, j], color="tab:blue", ls=":", lw=1.6,
                label="feedforward: identified")
        ax.set_ylabel(f"joint {j + 1}\nτ [N m]", fontsize="small")
        ax.grid(True, alpha=0.3)
    axes[0].legend(fontsize="small", ncol=3, loc="upper left", bbox_to_anchor=(0, 1.45))
    axes[-1].set_xlabel("t [s] (arm7_example.yaml)")
    fig.suptitle("arm7: torque needed by the real robot vs feedforward", y=0.995)
    fig.tight_layout()
    fig.savefig(args.out / "feedforward_error.png", dpi=90)
    plt.close(fig)


if __name__ == "__main__":
    main()
