"""The flatness controller in the co-simulation loop (``cosim.launch.py controller:=flatness``):
MuJoCo's series-elastic arm7 (link + spring + rotor per joint, from the ``actuator`` section) as
the ros2_control hardware at 1 kHz in sim time, ``feedforward_node`` with ``flatness.enabled``
computing the motor torque from ``/joint_states`` and the hardware's motor states, and
``effort_controllers/JointGroupEffortController`` writing it to the motor effort interface.

The loop runs in lock-step (``lockstep:=true``, the default): the hardware waits each cycle for
the torque computed from the state it published, so the torque of cycle k is applied from cycle
k + 1 on under any load, and the node's law is told that one-period delay (``flatness.delay``,
lead 1.5 T). A smooth goal (the waypoints of test_cosim.py, splined by the node) is then tracked
as in-process (link RMS ≤ 1e-4 rad; measured 8.9e-6, 7.8e-6 beside two CPU burners; without
lock-step and the delay lead 1.5e-3 unloaded and 6.5e-3 at load 12, doc/guide/sea_control.md);
the same goal through the rigid arm's JTC + feedforward (test_cosim.py's run) is measured
alongside for comparison. The numbers are printed (``pytest -s``) and written to
``$MBS_COSIM_RESULTS`` (JSON lines) when set.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest
import yaml

from test_cosim import (ARM7, RATE, Probe, _controllers, _gains, _require_ros, _run, _wait,
                        stop_launch)

BANDWIDTH = 20.0       # rad/s, a quadruple pole at -20
OMEGA_S = 40.0         # rad/s, every joint's spring frequency with the motor held


def _sea_section(urdf, n):
    """The elastic joints of test/control/test_flatness_mujoco.py: K_j = ω_s² M_jj(0),
    B_j = 0.5 M_jj(0) + 0.01, D_j = 0.02."""
    import mbs_dynamics as mbs

    M0 = np.diag(mbs.load_urdf(urdf).mass_matrix(np.zeros(n)))
    return {"type": "sea", "stiffness": (OMEGA_S ** 2 * M0).tolist(),
            "motor_inertia": (0.5 * M0 + 0.01).tolist(), "motor_damping": [0.02] * n}
TIMES = [0.0, 1.5, 3.0, 4.5]


def _offsets(n):
    amp = np.full(n, 0.4)
    return [np.zeros(n), amp * np.sign(np.arange(n) % 2 - 0.5), -0.6 * amp, np.zeros(n)]


def _flatness_run(tmp, real_time_factor):
    from builtin_interfaces.msg import Duration
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from std_msgs.msg import Float64MultiArray
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    from mbs_dynamics.control.trajectory import parse_joint_trajectory
    from mbs_dynamics.ros.conversions import joint_trajectory_to_dict
    from mbs_dynamics.sim.mujoco_model import mujoco_model

    urdf = ARM7.read_text()
    joints = [j.name for j in mujoco_model(urdf).joints]
    n = len(joints)
    ctrl = tmp / "controllers_flat.yaml"
    ctrl.write_text(yaml.safe_dump(_controllers(joints, _gains(urdf, joints, np.zeros(n)))))
    sea = tmp / "sea_flat.yaml"
    sea.write_text(yaml.safe_dump({"/**/feedforward_node": {"ros__parameters": {
        "actuator": _sea_section(urdf, n)}}}))
    args = [f"robot_description_file:={ARM7}", f"controllers_file:={ctrl}", "actuator:=sea",
            f"actuator_config:={sea}", "controller:=flatness",
            f"flatness_bandwidth:={BANDWIDTH}", f"real_time_factor:={real_time_factor}"]
    log = tmp / "launch_flat.log"
    env = dict(os.environ, PYTHONUNBUFFERED="1", RCUTILS_COLORIZED_OUTPUT="0")
    with open(log, "w") as out:
        proc = subprocess.Popen(["ros2", "launch", "mbs_dynamics", "cosim.launch.py", *args],
                                stdout=out, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)
    probe = Probe()
    commands = []
    probe.node.create_subscription(
        Float64MultiArray, "/flatness_effort_controller/commands",
        lambda m: commands.append(probe.node.get_clock().now().nanoseconds), 100)
    pub = probe.node.create_publisher(
        JointTrajectory, "/feedforward_node/joint_trajectory",
        QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE))
    try:
        _wait(lambda: probe.latest() is not None
              and log.read_text().count("Configured and activated") >= 2
              or proc.poll() is not None, 240, "the controllers")
        assert proc.poll() is None, log.read_text()[-3000:]
        _wait(lambda: len(commands) > 100, 120, "the flatness motor torques")
        names = probe.names
        idx = [names.index(j) for j in joints]

        def settled():
            s = probe.samples[-200:]
            return len(s) == 200 and max(np.abs(v[idx]).max() for _, _, v in s) < 1e-3
        _wait(settled, 120, "the hold to settle")
        t_now, q_now, _ = probe.latest()
        q0 = q_now[idx]
        traj = JointTrajectory()
        traj.joint_names = joints
        start = t_now + 1.0
        traj.header.stamp.sec = int(start)
        traj.header.stamp.nanosec = int(round((start - int(start)) * 1e9))
        for t, off in zip(TIMES, _offsets(n)):
            p = JointTrajectoryPoint()
            p.positions = [float(x) for x in q0 + off]
            p.time_from_start = Duration(sec=int(t), nanosec=int(round((t % 1) * 1e9)))
            traj.points.append(p)
        cmd_before = len(commands)
        pub.publish(traj)
        _wait(lambda: probe.latest()[0] >= start + TIMES[-1] + 0.5, 240,
              "the /joint_states of the whole goal")
        with probe.lock:
            samples = list(probe.samples)
        cmds = np.array(commands[cmd_before:]) * 1e-9
    finally:
        probe.close()
        stop_launch(proc)
    text = log.read_text()
    spline = parse_joint_trajectory(joint_trajectory_to_dict(traj), strict=False).to_trajectory()
    stamps = np.array([s[0] for s in samples])
    q = np.array([s[1][idx] for s in samples])
    inside = (stamps >= start) & (stamps <= start + TIMES[-1])
    tr = stamps[inside] - start
    qd = np.array([spline.sample(t)[0] for t in tr])
    err = qd - q[inside]
    steps = np.diff(stamps[stamps >= start])
    in_goal = cmds[(cmds >= start) & (cmds <= start + TIMES[-1])]
    return {
        "robot": "arm7", "actuator": "sea", "controller": "flatness", "bandwidth": BANDWIDTH,
        "real_time_factor": real_time_factor,
        "rms": float(np.sqrt(np.mean(err ** 2))), "max": float(np.abs(err).max()),
        "rms_after_1s": float(np.sqrt(np.mean(err[tr >= 1.0] ** 2))),
        "samples": int(inside.sum()),
        # the controller manager's period: the greatest common divisor of the steps between
        # the probe's samples, in µs of sim time (a loaded probe drops some of the 1 kHz
        # messages: a median, or even the smallest step, would measure the probe)
        "rate_hz": float(1e6 / np.gcd.reduce(np.round(steps[steps > 0] * 1e6).astype(np.int64))),
        "on_grid": bool(np.all(np.abs(steps * RATE - np.round(steps * RATE)) < 1e-3)),
        "torques_per_cycle": float(len(in_goal) / max(inside.sum(), 1)),
        "nonfinite": text.count("non-finite") + text.count("diverged"),
        "lockstep_on": "lock-step: each cycle" in text,
        "lockstep_timeouts": text.count("lock-step: no command"),
        "finite_state": bool(np.all(np.isfinite(q))),
        "log": str(log),
    }


def _record(r):
    print(json.dumps({k: v for k, v in r.items() if k != "log"}))
    out = os.environ.get("MBS_COSIM_RESULTS")
    if out:
        with open(out, "a") as f:
            f.write(json.dumps(r) + "\n")


@pytest.mark.ros
def test_cosim_flatness_tracks_on_the_elastic_arm():
    _require_ros()
    tmp = Path(tempfile.mkdtemp(prefix="mbs_cosim_flat_"))
    flat = _flatness_run(tmp, real_time_factor=float(
        os.environ.get("MBS_COSIM_FLAT_RTF", "0.1")))
    _record(flat)
    rigid = _run("arm7", "rigid", True, tmp)
    _record(rigid)
    assert flat["finite_state"] and flat["nonfinite"] == 0, flat["log"]
    assert flat["samples"] > 4000
    assert abs(flat["rate_hz"] - RATE) <= 0.01 * RATE, flat
    assert flat["on_grid"], flat
    assert flat["lockstep_on"], flat["log"]
    print(f"arm7: link RMS flatness (SEA) {flat['rms']:.3g} rad, JTC + feedforward (rigid) "
          f"{rigid['rms']:.3g} rad")
    # measured 8.9e-6 rad RMS (max 3.2e-5) at real_time_factor 0.1, rigid JTC + FF 3.6e-4;
    # without lock-step and the delay lead 1.5e-3 (6.5e-3 under load)
    assert flat["rms"] <= 1e-4, flat
    assert rigid["succeeded"], rigid
    shutil.rmtree(tmp, ignore_errors=True)   # kept (with the launch logs) when a check fails
