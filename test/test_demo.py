"""The demo (mbs_dynamics.demo): closed-loop tracking of the bundled arm, ≥ 10× RMS improvement by
the feedforward (recomputed here from the CSV it writes), files, bundled data."""
from __future__ import annotations

import argparse

import numpy as np
import pytest

from conftest import UR5, erd_path

import mbs_dynamics as mbs
from mbs_dynamics import demo
from mbs_dynamics.trajectory import Trajectory


def _args(tmp_path, *extra):
    parser = demo.add_arguments(argparse.ArgumentParser())
    return parser.parse_args(["--out", str(tmp_path), *extra])


def _columns(csv, prefix, names):
    header = csv.read_text().splitlines()[0].split(",")
    data = np.loadtxt(csv, delimiter=",", skiprows=1)
    return data[:, [header.index(f"{prefix}_{j}") for j in names]]


@pytest.mark.parametrize("actuator", ["rigid", "sea"])
def test_demo_feedforward_improves_tracking_tenfold(tmp_path, capsys, actuator):
    code = demo.run(_args(tmp_path, "--actuator", actuator, "--duration", "2.5"))
    printed = capsys.readouterr().out
    assert code == 0, printed
    csv = tmp_path / f"demo_{actuator}.csv"
    assert csv.exists()
    assert (tmp_path / f"demo_{actuator}_tracking.png").stat().st_size > 10_000
    assert (tmp_path / f"demo_{actuator}_command.png").exists()
    robot = mbs.load_urdf(str(demo.BUNDLED["arm7"][0]))
    names = robot.joint_names
    q_des = _columns(csv, "q_des", names)
    e_ff = _columns(csv, "q", names) - q_des
    e_pd = _columns(csv, "q_pd_only", names) - q_des
    assert q_des.shape == (2501, 7)
    # the trajectory really moves in this window, and the desired q is the bundled trajectory's
    assert np.ptp(q_des, axis=0).max() > 0.5
    traj = Trajectory.load(demo.BUNDLED["arm7"][1]).reorder(names)
    np.testing.assert_allclose(q_des[1000], traj.sample(1.0)[0], atol=1e-12)
    rms_ff, rms_pd = np.sqrt(np.mean(e_ff ** 2)), np.sqrt(np.mean(e_pd ** 2))
    assert rms_pd >= 10.0 * rms_ff
    # the printed numbers are the measured ones
    assert f"RMS {rms_ff:.3e} rad" in printed and f"RMS {rms_pd:.3e} rad" in printed
    assert "p50" in printed and "p99" in printed


def test_demo_runs_any_urdf_with_a_generated_trajectory(tmp_path, capsys):
    """Any URDF: a generated trajectory, rigid, no plots."""
    code = demo.run(_args(tmp_path, "--robot", erd_path(UR5[0]), "--duration", "1.0",
                          "--no-plots"))
    out = capsys.readouterr().out
    assert code == 0, out
    assert (tmp_path / "demo_rigid.csv").exists()
    assert not (tmp_path / "demo_rigid_tracking.png").exists()


def test_demo_bad_robot_returns_2(tmp_path, capsys):
    assert demo.run(_args(tmp_path, "--robot", "no_such_robot")) == 2
    assert "no_such_robot" in capsys.readouterr().out


def test_bundled_arm_is_physical_and_trajectory_feasible():
    pin = pytest.importorskip("pinocchio")
    urdf, traj_file = demo.BUNDLED["arm7"]
    robot = mbs.load_urdf(str(urdf))
    assert robot.n == 7 and 15.0 < robot.total_mass < 30.0
    # Pinocchio reads the same file: same joints, and our inverse dynamics agrees
    pm = pin.buildModelFromUrdf(str(urdf))
    assert tuple(pm.names[1:]) == robot.joint_names
    # every link inertia is physical: positive principal moments, triangle inequality
    for I6 in robot.model.inertias:
        m = I6[3, 3]
        c = np.array([I6[2, 4], I6[0, 5], I6[1, 3]]) / m
        Ic = I6[:3, :3] + m * (np.outer(c, c) - (c @ c) * np.eye(3))
        ev = np.linalg.eigvalsh(Ic)
        assert ev.min() > 0 and ev[0] + ev[1] >= ev[2] - 1e-12
    # axes alternate z / ±y
    ax = np.abs(robot.model.axis)
    assert np.allclose(ax[::2], [0, 0, 1]) and np.allclose(ax[1::2], [0, 1, 0])
    traj = Trajectory.load(traj_file).reorder(robot.joint_names)
    S = traj.sample_many(np.linspace(traj.start_time, traj.end_time, 4001))
    assert np.all(S[:, 0] >= robot.lower) and np.all(S[:, 0] <= robot.upper)
    assert np.all(np.abs(S[:, 1]) <= robot.velocity_limit)
    # C⁴ with rest at both ends: q' … q'''' vanish at the ends
    assert np.abs(S[[0, -1], 1:]).max() < 1e-9
    tau = robot.torque_derivatives(np.ascontiguousarray(S))[:, 0]
    assert np.all(np.abs(tau) <= robot.effort_limit)
    pd = pm.createData()
    k = 1234
    ref = pin.rnea(pm, pd, S[k, 0], S[k, 1], S[k, 2])
    np.testing.assert_allclose(tau[k], ref, rtol=1e-10, atol=1e-10)
