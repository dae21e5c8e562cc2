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
import tempfile
import threading
import time
import unittest

import pytest
import yaml

_HERE = os.path.dirname(os.path.abspath(__file__))
for _room in (_HERE, os.path.join(_HERE, "..", "loops")):
    if _room not in sys.path:     # launch_test (no conftest): the rooms' oracles by name
        sys.path.append(_room)
import loops_mechanisms as lm  # noqa: E402

_MISSING = ""
try:  # ROS 2 is optional: without it the test classes below are skipped (not the module)
    import launch
    import launch_testing
    import launch_testing.actions
    import launch_testing.asserts
    import rclpy
    from launch.actions import IncludeLaunchDescription
    from launch.launch_description_sources import PythonLaunchDescriptionSource
    from sensor_msgs.msg import JointState
except ImportError as exc:
    _MISSING = str(exc)
try:
    import pinocchio  # noqa: F401  (the oracle)
except ImportError:
    _MISSING = _MISSING or "pinocchio"

try:  # Kilted and later
    from launch_testing_ros.actions import EnableRmwIsolation
except ImportError:  # Jazzy: isolate by a per-process domain id instead (see test/conftest.py)
    EnableRmwIsolation = None
    os.environ["ROS_DOMAIN_ID"] = (os.environ.get("MBS_TEST_ROS_DOMAIN_ID")
                                   or str(1 + os.getpid() % 100))

pytestmark = pytest.mark.ros   # deselected where rclpy is missing (test/conftest.py)
_skip_without_ros = unittest.skipIf(bool(_MISSING), f"ROS 2 / launch_testing missing: {_MISSING}")

NAME = "parallelogram_arm"
ORDER = ["yaw", "drive", "pitch", "wrist"]    # the actuated joints, URDF depth-first


def _post_shutdown_test():
    if _MISSING:
        return lambda cls: cls
    return launch_testing.post_shutdown_test()


def launch_file(name):
    """The installed launch file (tests the install rules), else the one in the source tree."""
    try:
        from ament_index_python.packages import get_package_share_directory
        path = os.path.join(get_package_share_directory("mbs_dynamics"), "launch", name)
        if os.path.exists(path):
            return path
    except (ImportError, LookupError):
        pass
    return os.path.join(_HERE, "..", "..", "launch", name)


@pytest.mark.launch_test
@pytest.mark.ros
def generate_test_description():
    urdf_text, loops, act = lm.ALL[NAME]()
    files = {}
    for key, suffix, text in (("urdf", ".urdf", urdf_text),
                              ("loops", ".yaml", yaml.safe_dump({"loops": loops}))):
        f = tempfile.NamedTemporaryFile("w", suffix=suffix, delete=False)
        f.write(text)
        f.close()
        files[key] = f.name
    common = {"robot_description_file": files["urdf"], "loops": files["loops"],
              "actuated": ",".join(act)}
    actions = [] if EnableRmwIsolation is None else [EnableRmwIsolation()]
    actions += [
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(launch_file("feedforward.launch.py")),
            launch_arguments={**common, "config": "rigid_arm.yaml", "namespace": "loops_ff",
                              "use_sim_time": "false"}.items()),
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(launch_file("feedforward_proxy.launch.py")),
            launch_arguments={**common, "config": "feedforward_proxy.yaml",
                              "namespace": "loops_proxy"}.items()),
        launch_testing.actions.ReadyToTest(),
    ]
    return launch.LaunchDescription(actions), {"paths": files}


@_skip_without_ros
class TestLoopsLaunch(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        from test_ros_loops import Oracle

        cls.oracle = Oracle(NAME)
        rclpy.init()
        cls.node = rclpy.create_node("loops_launch_probe")
        cls.received = []
        cls.lock = threading.Lock()

        def store(msg):
            with cls.lock:
                cls.received.append(msg)
        cls.node.create_subscription(JointState, "/loops_ff/feedforward_node/feedforward",
                                     store, 10)
        cls.js_pub = cls.node.create_publisher(JointState, "/joint_states", 10)

    @classmethod
    def tearDownClass(cls):
        cls.node.destroy_node()
        rclpy.shutdown()

    def test_feedforward_of_the_actuated_joints(self, proc_output):
        import numpy as np
        from mbs_dynamics.ros.parameters import rest_positions

        r = self.oracle.r
        self.assertEqual(list(r.joint_names), ORDER)
        proc_output.assertWaitFor("closed loops ['parallelogram']", timeout=300.0)
        q = rest_positions(r) + np.array([0.3, 0.1, -0.2, 0.5])
        full = r.copy().expand(q)
        end = time.monotonic() + 20.0
        while time.monotonic() < end:
            msg = JointState()
            msg.header.stamp = self.node.get_clock().now().to_msg()
            msg.name = ["gripper"] + list(r.full_joint_names)   # every joint, and an extra
            msg.position = [0.0] + full.tolist()
            self.js_pub.publish(msg)
            rclpy.spin_once(self.node, timeout_sec=0.01)
            with self.lock:
                if len(self.received) >= 5:
                    break
        with self.lock:
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


@_post_shutdown_test()
@_skip_without_ros
class TestLoopsLaunchShutdown(unittest.TestCase):

    def test_exit_code(self, proc_info, paths):
        for path in paths.values():
            os.unlink(path)
        launch_testing.asserts.assertExitCodes(proc_info)
