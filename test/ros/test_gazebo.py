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

import math
import shutil
import tempfile
from pathlib import Path

import pytest

from test_cosim import _assert_measured, _report, _require_ros, _run


@pytest.mark.ros
@pytest.mark.gazebo
@pytest.mark.parametrize("robot", ["arm7", "panda"])
def test_gazebo_feedforward_vs_feedback_alone(robot):
    _require_ros(simulator=("ros_gz_sim", "ros_gz_bridge", "gz_ros2_control"),
                 tools=("ros2", "gz"))
    tmp = Path(tempfile.mkdtemp(prefix="mbs_gazebo_test_"))
    runs = {ff: _run(robot, "rigid", ff, tmp, launch="gazebo.launch.py") for ff in (True, False)}
    _report(runs, physics="gazebo")
    assert runs[True]["succeeded"], runs[True]
    for r in runs.values():
        _assert_measured(r)
    ratio = runs[False]["rms"] / runs[True]["rms"]
    print(f"gazebo {robot}: RMS ratio without/with feedforward {ratio:.1f}, "
          f"real-time factor {runs[True]['rtf']:.2f}")
    assert math.isfinite(ratio) and ratio >= 10.0, (runs[True], runs[False])
    shutil.rmtree(tmp, ignore_errors=True)
