"""The nodes' process entry point: Ctrl-C is a clean stop (exit code 0, no traceback), a bad
configuration exits with 1, a real error still surfaces. Skipped where ROS 2 is not installed.

The in-process tests drive :func:`mbs_dynamics.ros.runner.run` through the two shutdown races
seen with ``ros2 launch`` on Jazzy (a callback publishing after rclpy's SIGINT handler shut the
context down; a second SIGINT during ``destroy_node``); the subprocess tests send a real SIGINT
to ``feedforward_node`` and ``sim_node``.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
import yaml

from launch_harness import DEADLINE, MISSING, ONE_LINK, Parameter, needs_ros, rclpy  # noqa: F401

_MISSING = MISSING   # ROS 2 is optional: without it every test here skips (needs_ros)
if not _MISSING:
    from mbs_dynamics.ros.runner import run
    from mbs_dynamics.ros.sim_node import ConfigurationError, SimNode

pytestmark = pytest.mark.ros   # deselected where rclpy is missing (test/conftest.py)


def sim_node():
    return SimNode(parameter_overrides=[Parameter("robot_description", value=ONE_LINK)])


class _Executor:
    """Stands in for the executor: ``spin`` runs the given scenario with the node."""

    def __init__(self, scenario):
        self.scenario = scenario
        self.node = None

    def add_node(self, node):
        self.node = node

    def spin(self):
        self.scenario(self.node)


def test_callback_publishing_after_sigint_shutdown_is_a_clean_stop():
    def scenario(node):
        rclpy.shutdown()      # what rclpy's SIGINT handler does to the default context
        node._tick()          # a timer callback in flight publishes: RCLError (context invalid)

    assert run(sim_node, "sim_node", args=[],
               make_executor=lambda: _Executor(scenario)) == 0
    assert not rclpy.ok()


def test_error_while_context_valid_is_raised():
    def scenario(node):
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        run(sim_node, "sim_node", args=[], make_executor=lambda: _Executor(scenario))
    assert not rclpy.ok()     # cleaned up all the same


def test_second_sigint_during_destroy_still_shuts_down():
    destroyed = []

    class Interrupted(SimNode):
        def destroy_node(self):
            destroyed.append(True)
            super().destroy_node()
            raise KeyboardInterrupt   # the SIGINT ros2 launch forwards after the terminal's

    def make():
        return Interrupted(parameter_overrides=[Parameter("robot_description",
                                                          value=ONE_LINK)])

    def scenario(node):
        raise KeyboardInterrupt

    try:
        code = run(make, "sim_node", args=[], make_executor=lambda: _Executor(scenario))
    except KeyboardInterrupt:   # would otherwise abort the whole pytest session
        pytest.fail("KeyboardInterrupt escaped run()")
    assert code == 0
    assert destroyed == [True]
    assert not rclpy.ok()


def test_configuration_error_exits_with_1():
    def make():
        return SimNode(parameter_overrides=[Parameter("robot_description", value=ONE_LINK),
                                            Parameter("initial_positions", value=[0.1, 0.2])])

    assert run(make, "sim_node", args=[], config_errors=(ConfigurationError,)) == 1
    assert not rclpy.ok()


@pytest.mark.parametrize("module, started", [
    ("mbs_dynamics.ros.sim_node", "simulating"),
    ("mbs_dynamics.ros.feedforward_node", "robot model"),
    ("mbs_dynamics.ros.feedforward_proxy", "robot model"),
])
def test_sigint_exits_cleanly(tmp_path, module, started):
    if module.endswith("proxy"):
        pytest.importorskip("control_msgs.action")
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({"/**": {"ros__parameters": {
        "robot_description": ONE_LINK}}}))
    log = tmp_path / "stderr.log"
    env = dict(os.environ, PYTHONUNBUFFERED="1", RCUTILS_LOGGING_BUFFERED_STREAM="0")
    with open(log, "w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", module, "--ros-args", "--params-file", str(params)],
            stdout=subprocess.DEVNULL, stderr=err, env=env,
            cwd=str(tmp_path))  # not the checkout: the installed package, compiled kernels
    try:
        end = time.monotonic() + 2 * DEADLINE      # a loaded machine starts Python slowly
        while started not in log.read_text() and time.monotonic() < end:
            assert proc.poll() is None, log.read_text()
            time.sleep(0.1)
        assert started in log.read_text()
        time.sleep(0.5)                   # running: timers / control loop active
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=DEADLINE) == 0, log.read_text()
        assert "Traceback" not in log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
