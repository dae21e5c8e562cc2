"""`mbs-dynamics kinematics` and the frame list of `info` (issue 18, item 7)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from mbs_dynamics import cli, data, load_urdf
from conftest import erd_path


def test_kinematics_json_matches_pinocchio(capsys):
    pin = pytest.importorskip("pinocchio")
    urdf = erd_path("ur_description/urdf/ur5_robot.urdf")
    q = np.array([0.1, -0.7, 1.2, 0.3, -0.4, 0.9])
    qd = np.array([0.5, -0.2, 0.3, 1.0, 0.0, -0.6])
    argv = ["kinematics", urdf, "--frame", "tool0", "--q", " ".join(map(str, q)),
            "--qd", ",".join(map(str, qd)), "--representation", "hybrid", "--json"]
    assert cli.main(argv) == 0
    d = json.loads(capsys.readouterr().out)
    pm = pin.buildModelFromUrdf(urdf)
    pd = pm.createData()
    fid = pm.getFrameId("tool0", pin.FrameType.BODY)
    pin.computeJointJacobians(pm, pd, q)
    pin.forwardKinematics(pm, pd, q, qd)
    pin.updateFramePlacements(pm, pd)
    lwa = pin.LOCAL_WORLD_ALIGNED
    np.testing.assert_allclose(d["pose"], pd.oMf[fid].homogeneous, rtol=0, atol=1e-12)
    np.testing.assert_allclose(d["jacobian"], pin.getFrameJacobian(pm, pd, fid, lwa), rtol=0,
                               atol=1e-12)
    np.testing.assert_allclose(d["twist"], pin.getFrameVelocity(pm, pd, fid, lwa).vector,
                               rtol=0, atol=1e-12)
    assert d["representation"] == "hybrid" and len(d["columns"]) == 6


def test_kinematics_text_floating_base_and_bundled_name(capsys):
    q = "0 0 0.4 0 0 0 1 " + " ".join(["0 0.8 -1.6"] * 4)
    assert cli.main(["kinematics", "quad12", "--floating-base", "--frame", "LF_foot",
                     "--q", q, "--representation", "mixed"]) == 0
    out = capsys.readouterr().out
    assert "pose in the world" in out and "Jacobian (6 × 18" in out and "base_wx" in out
    assert "twist" not in out  # no --qd
    robot = load_urdf(data.robot("quad12"), floating_base=True)
    qv = np.array(q.split(), dtype=float)
    T = robot.frame_placement(qv, "LF_foot")
    assert f"{T[0, 3]:.6f}".rstrip("0") in out


@pytest.mark.parametrize("argv, expect", [
    (["--frame", "arm7_lnk7", "--q", "0 0 0 0 0 0 0"], "did you mean 'arm7_link7'"),
    (["--frame", "arm7_link7", "--q", "0 0"], "--q has 2 numbers, expected 7"),
    (["--frame", "arm7_link7", "--q", "0 0 0 0 0 0 0", "--qd", "1"], "--qd has 1 numbers"),
    (["--frame", "arm7_link7", "--q", "0 x"], "is not a list of numbers"),
    (["--frame", "arm7_link7", "--q", "0 0 0 0 0 0 nan"], "finite numbers"),
    (["--frame", "arm7_link7", "--q", "0 0 0 0 0 0 0", "--representation", "LOCAL"],
     "'body', 'spatial', 'hybrid', 'mixed'"),
    (["--q", "0 0 0 0 0 0 0"], "--frame"),
])
def test_kinematics_bad_input_exit_2_one_line(capsys, argv, expect):
    assert cli.main(["kinematics", "arm7"] + argv) == 2
    err = capsys.readouterr().err
    assert expect in err and err.count("\n") == 1 and err.startswith("mbs-dynamics: error:")


def test_kinematics_bad_quaternion_and_unknown_robot(capsys):
    q = "0 0 0.4 0 0 0 0 " + " ".join(["0 0.8 -1.6"] * 4)
    assert cli.main(["kinematics", "quad12", "--floating-base", "--frame", "LF_foot",
                     "--q", q]) == 2
    assert "unit quaternion" in capsys.readouterr().err
    assert cli.main(["kinematics", "no_such_robot", "--frame", "a", "--q", "0"]) == 2
    assert "no bundled robot named 'no_such_robot'" in capsys.readouterr().err


def test_info_lists_the_frames(capsys):
    assert cli.main(["info", "arm7"]) == 0
    out = capsys.readouterr().out
    assert "frames (10" in out and "arm7_tool (on arm7_link7)" in out
    assert cli.main(["info", str(data.robot("arm7")), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    robot = load_urdf(data.robot("arm7"))
    assert [f["name"] for f in d["frames"]] == list(robot.frame_names)
    assert {"name": "arm7_tool", "body": "arm7_link7"} in d["frames"]
