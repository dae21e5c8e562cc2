"""``gazebo.launch.py`` in Gazebo (gz sim, server only) through gz_ros2_control: arm7 and the
Panda (its finger a mimic joint), JTC with effort command interfaces and ``feedforward_proxy`` in
front of it, with and without feedforward at the same gains — the measurement of
``test_cosim.py`` with Gazebo's physics instead of MuJoCo's: goals SUCCEED, the link-side RMS
tracking error is at least 10× smaller with feedforward, the controller manager runs at 1 kHz of
simulated time, and the proxy reports the real-time factor.

Needs Gazebo Harmonic with ``ros_gz_sim``, ``ros_gz_bridge`` and ``gz_ros2_control`` built and
sourced beside this package (marker ``gazebo``: deselected where ``gz_ros2_control`` and
``ros_gz_sim`` are not on ``AMENT_PREFIX_PATH``, as in CI; ``MBS_REQUIRE_GAZEBO=1`` makes that an
error); skips, naming what is missing, where something else is.
"""
from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from test_cosim import RATE, _run


def _require_gazebo():
    try:
        import rclpy  # noqa: F401
        from ament_index_python.packages import get_package_share_directory
        from control_msgs.action import FollowJointTrajectory  # noqa: F401
    except ImportError as exc:
        pytest.skip(f"ROS 2 / control_msgs missing: {exc}")
    for pkg in ("mbs_dynamics", "ros_gz_sim", "ros_gz_bridge", "gz_ros2_control",
                "controller_manager", "joint_trajectory_controller", "joint_state_broadcaster",
                "robot_state_publisher"):
        try:
            get_package_share_directory(pkg)
        except LookupError:
            pytest.skip(f"ROS package {pkg} is not installed/sourced (Gazebo co-simulation)")
    for tool in ("ros2", "gz"):
        if shutil.which(tool) is None:
            pytest.skip(f"the {tool} command is not on PATH")
    pytest.importorskip("mujoco")   # test_cosim lists the joints through the MuJoCo model


@pytest.mark.ros
@pytest.mark.gazebo
@pytest.mark.parametrize("robot", ["arm7", "panda"])
def test_gazebo_feedforward_vs_feedback_alone(robot):
    _require_gazebo()
    tmp = Path(tempfile.mkdtemp(prefix="mbs_gazebo_test_"))
    runs = {ff: _run(robot, "rigid", ff, tmp, launch="gazebo.launch.py") for ff in (True, False)}
    for ff, r in runs.items():
        print(json.dumps({k: v for k, v in r.items() if k != "log"}))
        out = os.environ.get("MBS_COSIM_RESULTS")
        if out:
            with open(out, "a") as f:
                f.write(json.dumps(dict(r, physics="gazebo")) + "\n")
    assert runs[True]["succeeded"], runs[True]
    for ff, r in runs.items():
        assert r["samples"] >= 100 and r["max_gap_s"] <= 1.0, r
        assert r["finite_state"] and r["nonfinite"] == 0, r["log"]
        assert abs(r["rate_hz"] - RATE) <= 0.01 * RATE, r
        assert r["rtf"] is not None and r["rtf"] > 0, r["log"]
    ratio = runs[False]["rms"] / runs[True]["rms"]
    print(f"gazebo {robot}: RMS ratio without/with feedforward {ratio:.1f}, "
          f"real-time factor {runs[True]['rtf']:.2f}")
    assert math.isfinite(ratio) and ratio >= 10.0, (runs[True], runs[False])
    shutil.rmtree(tmp, ignore_errors=True)
