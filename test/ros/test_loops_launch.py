"""launch_testing: the launch files thread ``loops:=`` / ``actuated:=`` to the nodes (issue 19).

launch/feedforward.launch.py and launch/feedforward_proxy.launch.py start on a serial arm with a
parallelogram (test/loops/loops_mechanisms.py), the loops from a YAML file; joint states carrying
every joint of the mechanism go in, and ``~/feedforward`` names the actuated joints with the
gravity torque of the constrained oracle (Pinocchio's generalized gravity of the spanning tree
projected with G from its frame Jacobians, test_ros_loops.Oracle); the proxy reports the closed
loop. Skipped where ROS 2 (rclpy, launch_testing) or Pinocchio is not installed.

Run with ``colcon test --packages-select mbs_dynamics``, pytest, or ``launch_test
test/ros/test_loops_launch.py``.
"""
from __future__ import annotations

import os
import sys
import unittest

import pytest
import yaml

_HERE = os.path.dirname(os.path.abspath(__file__))
for _room in (_HERE, os.path.join(_HERE, "..", "loops")):
    if _room not in sys.path:     # launch_test (no conftest): the rooms' oracles by name
        sys.path.append(_room)
import loops_mechanisms as lm  # noqa: E402

from launch_harness import (MISSING, DEADLINE, JointState, Probe,  # noqa: E402
                            describe_launch, include, launch_testing, post_shutdown_test,
                            skip_without_ros, temp_file, wait_until)

_MISSING = MISSING
try:
    import pinocchio  # noqa: F401  (the oracle)
except ImportError:
    _MISSING = _MISSING or "pinocchio"
_skip_without_ros = skip_without_ros if not _MISSING else unittest.skip(
    f"ROS 2 / Pinocchio missing: {_MISSING}")

pytestmark = pytest.mark.ros   # deselected where rclpy is missing (test/conftest.py)

NAME = "parallelogram_arm"
ORDER = ["yaw", "drive", "pitch", "wrist"]    # the actuated joints, URDF depth-first


@pytest.mark.launch_test
@pytest.mark.ros
def generate_test_description():
    urdf_text, loops, act = lm.ALL[NAME]()
    files = {"urdf": temp_file(urdf_text, ".urdf"),
             "loops": temp_file(yaml.safe_dump({"loops": loops}), ".yaml")}
    common = {"robot_description_file": files["urdf"], "loops": files["loops"],
              "actuated": ",".join(act)}
    return describe_launch(
        include("feedforward.launch.py", **common, config="rigid_arm.yaml",
                namespace="loops_ff", use_sim_time="false"),
        include("feedforward_proxy.launch.py", **common, config="feedforward_proxy.yaml",
                namespace="loops_proxy"),
    ), {"paths": files}


@_skip_without_ros
class TestLoopsLaunch(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        from test_ros_loops import Oracle

        cls.oracle = Oracle(NAME)
        cls.probe = Probe("loops_launch_probe")
        cls.received = []
        cls.probe.node.create_subscription(   # 1 kHz: a deep history for a lagging probe
            JointState, "/loops_ff/feedforward_node/feedforward",
            cls.probe.store(cls.received), 1000)
        cls.js_pub = cls.probe.node.create_publisher(JointState, "/joint_states", 10)
        cls.probe.start()

    @classmethod
    def tearDownClass(cls):
        cls.probe.close()

    def test_feedforward_of_the_actuated_joints(self, proc_output):
        import numpy as np
        from mbs_dynamics.ros.parameters import rest_positions

        r = self.oracle.r
        self.assertEqual(list(r.joint_names), ORDER)
        proc_output.assertWaitFor("closed loops ['parallelogram']", timeout=300.0)
        q = rest_positions(r) + np.array([0.3, 0.1, -0.2, 0.5])
        full = r.copy().expand(q)
        msg = JointState()
        msg.name = ["gripper"] + list(r.full_joint_names)   # every joint, and an extra
        msg.position = [0.0] + full.tolist()

        def send_and_count():
            msg.header.stamp = self.probe.node.get_clock().now().to_msg()
            self.js_pub.publish(msg)
            with self.probe.lock:
                return len(self.received) >= 5
        wait_until(send_and_count, timeout=DEADLINE)
        with self.probe.lock:
            self.assertGreaterEqual(len(self.received), 5, "no ~/feedforward")
            ff = self.received[-1]
        self.assertEqual(list(ff.name), ORDER)
        want = self.oracle.gravity(q)
        np.testing.assert_allclose(ff.position, q, atol=1e-12)
        np.testing.assert_allclose(ff.effort, want, rtol=1e-9, atol=1e-12)

    def test_proxy_serves_the_closed_loop_robot(self, proc_output):
        proc_output.assertWaitFor(
            "robot model: 4 joints ['yaw', 'drive', 'pitch', 'wrist'] (closed loops "
            "['parallelogram']", timeout=300.0)


@post_shutdown_test()
@_skip_without_ros
class TestLoopsLaunchShutdown(unittest.TestCase):

    def test_exit_code(self, proc_info, paths):
        for path in paths.values():
            os.unlink(path)
        launch_testing.asserts.assertExitCodes(proc_info)
