"""The ``calibrate`` command's logic (mbs_dynamics.calibration.command) on files: a URDF and a
CSV of simulated tracker measurements in, a calibrated URDF that predicts held-out positions at
the noise level and a JSON report out; bad files → one ValueError naming row and column."""
from __future__ import annotations

import argparse
import io
import json

import numpy as np
import pytest

import mbs_dynamics as mbs
from mbs_dynamics.calibration import GeometricParameters
from mbs_dynamics.calibration.command import add_arguments, run
from test_calibration import _iiwa


def _args(argv):
    p = argparse.ArgumentParser()
    add_arguments(p)
    return p.parse_args(argv)


def _write(tmp_path, rng, with_quat=False, N=60, noise=5e-5):
    robot = _iiwa()
    urdf = tmp_path / "arm.urdf"
    urdf.write_text(robot.to_urdf())
    gp = GeometricParameters(robot.model, ("tool",))
    truth = 2e-3 * rng.normal(size=gp.size)
    q = rng.uniform(-2.5, 2.5, (N, 7))
    T = gp.poses(truth, q, "tool")
    p = T[:, :3, 3] + noise * rng.normal(size=(N, 3))
    head = list(robot.joint_names) + ["x", "y", "z"] + (["qx", "qy", "qz", "qw"] * with_quat)
    lines = [",".join(head)]
    for k in range(N):
        row = list(q[k]) + list(p[k])
        if with_quat:
            R = T[k, :3, :3]
            w = np.sqrt(1 + np.trace(R)) / 2
            row += [(R[2, 1] - R[1, 2]) / (4 * w), (R[0, 2] - R[2, 0]) / (4 * w),
                    (R[1, 0] - R[0, 1]) / (4 * w), w]
        lines.append(",".join(repr(float(v)) for v in row))
    csv = tmp_path / "meas.csv"
    csv.write_text("\n".join(lines) + "\n")
    return robot, gp, truth, urdf, csv


@pytest.mark.parametrize("with_quat", [False, True])
def test_calibrate_command_writes_a_calibrated_urdf(tmp_path, with_quat):
    pytest.importorskip("scipy")
    rng = np.random.default_rng(12)
    robot, gp, truth, urdf, csv = _write(tmp_path, rng, with_quat)
    out = io.StringIO()
    argv = [str(urdf), str(csv), "--frame", "tool", "-o", str(tmp_path / "cal"),
            "--sigma-position", "5e-5"]
    assert run(_args(argv + (["--sigma-rotation", "1e-4"] if with_quat else [])), out) == 0
    rep = json.loads((tmp_path / "cal_report.json").read_text())
    assert len(rep["identifiable"]) == (34 if with_quat else 31)
    assert "tool.rx" in rep["unidentifiable"] or with_quat
    cal = mbs.load_urdf(str(tmp_path / "cal.urdf"))
    Twb = np.array(rep["base_pose"])
    q = rng.uniform(-2.5, 2.5, (30, 7))
    T = gp.poses(truth, q, "tool")
    err = [np.linalg.norm((Twb @ cal.frame_placement(qk, "tool"))[:3, 3] - T[k, :3, 3])
           for k, qk in enumerate(q)]
    assert np.sqrt(np.mean(np.square(err))) <= np.sqrt(3) * 5e-5
    assert "unidentifiable" in out.getvalue()


def test_calibrate_command_bad_files(tmp_path):
    rng = np.random.default_rng(1)
    robot, _, _, urdf, csv = _write(tmp_path, rng, N=5)
    text = csv.read_text().splitlines()
    bad = tmp_path / "bad.csv"
    bad.write_text("\n".join([text[0], text[1].replace(text[1].split(",")[2], "nan", 1)]
                             + text[2:]) + "\n")
    with pytest.raises(ValueError, match=r"row 2, column 'joint3'"):
        run(_args([str(urdf), str(bad), "--frame", "tool", "-o", str(tmp_path / "c")]))
    bad.write_text(text[0].replace(",z", ",w") + "\n" + "\n".join(text[1:]) + "\n")
    with pytest.raises(ValueError, match="missing column"):
        run(_args([str(urdf), str(bad), "--frame", "tool", "-o", str(tmp_path / "c")]))
    with pytest.raises(ValueError, match="not a link"):
        run(_args([str(urdf), str(csv), "--frame", "nope", "-o", str(tmp_path / "c")]))
    with pytest.raises(ValueError, match="frame of a moving body"):
        run(_args([str(urdf), str(csv), "--frame", "link7", "-o", str(tmp_path / "c")]))


def test_cli_subcommand(tmp_path, capsys):
    """``mbs-dynamics calibrate`` through the CLI package: exit 0 and the outputs; a bad file
    is exit 2 with one ``mbs-dynamics: error:`` line."""
    pytest.importorskip("scipy")
    from mbs_dynamics.cli import main
    rng = np.random.default_rng(9)
    _, _, _, urdf, csv = _write(tmp_path, rng, N=40)
    assert main(["calibrate", str(urdf), str(csv), "--frame", "tool", "-o",
                 str(tmp_path / "cli"), "--quiet"]) == 0
    assert (tmp_path / "cli.urdf").exists()
    capsys.readouterr()
    assert main(["calibrate", str(urdf), str(csv), "--frame", "nope", "-o",
                 str(tmp_path / "cli")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mbs-dynamics: error: --frame nope: not a link") and err.count("\n") == 1
