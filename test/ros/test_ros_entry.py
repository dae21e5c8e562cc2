"""Node console scripts where ROS 2 is absent: one line naming what to do, exit code 2.

``pip install .`` puts ``feedforward_node``, ``sim_node`` and ``feedforward_proxy`` on PATH with
or without ROS 2. The check runs in a subprocess whose import system refuses rclpy (or only
control_msgs), so it runs the same with and without ROS installed.
"""
from __future__ import annotations

import subprocess
import tempfile
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

BLOCK = """
import sys
class _Block:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in {blocked!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None
sys.meta_path.insert(0, _Block())
sys.argv = [{program!r}]
from mbs_dynamics.ros import entry
sys.exit(entry.{program}())
"""


def run_blocked(program, blocked):
    code = BLOCK.format(program=program, blocked=set(blocked))
    # the package as installed: not from the checkout, whose kernels may not be built in place
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=tempfile.gettempdir(), timeout=600)


@pytest.mark.parametrize("program", ["feedforward_node", "sim_node", "feedforward_proxy"])
def test_without_ros_one_line_and_exit_2(program):
    proc = run_blocked(program, {"rclpy", "diagnostic_msgs", "control_msgs", "std_msgs"})
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"{program}: needs ROS 2: source your ROS 2 setup")
    assert "Traceback" not in proc.stderr and proc.stdout == ""


@pytest.mark.ros
def test_proxy_without_control_msgs_names_the_package():
    import rclpy  # noqa: F401 - with rclpy present, only control_msgs is missing
    proc = run_blocked("feedforward_proxy", {"control_msgs"})
    assert proc.returncode == 2
    assert "control_msgs" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_console_scripts_point_at_the_guarded_entries():
    text = (REPO / "setup.py").read_text()
    for program in ("feedforward_node", "sim_node", "feedforward_proxy"):
        assert f"{program} = mbs_dynamics.ros.entry:{program}" in text
