"""launch_testing: the node starts from launch/feedforward.launch.py, receives joint states and a
trajectory, publishes the expected τ on every output topic at the configured rate, and survives a
bad message. Skipped where ROS 2 (rclpy, launch_testing) is not installed.

Run on a ROS 2 machine with ``colcon test --packages-select mbs_dynamics`` or
``launch_test test/ros/test_feedforward_launch.py`` (the package must be built and sourced: the
launch file starts the installed ``feedforward_node`` and reads its ``config/``).
"""
from __future__ import annotations

import math
import os
import tempfile
import threading
import time
import unittest

import pytest

_MISSING = ""
try:  # ROS 2 is optional: without it the test classes below are skipped (not the module)
    import launch
    import launch_testing
    import launch_testing.actions
    import launch_testing.asserts
    import rclpy
    from builtin_interfaces.msg import Duration as DurationMsg
    from diagnostic_msgs.msg import DiagnosticArray
    from launch.actions import IncludeLaunchDescription
    from launch.launch_description_sources import PythonLaunchDescriptionSource
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
except ImportError as exc:
    _MISSING = str(exc)

try:  # Kilted and later
    from launch_testing_ros.actions import EnableRmwIsolation
except ImportError:  # Jazzy: isolate by a per-process domain id instead (see test/conftest.py)
    EnableRmwIsolation = None
    os.environ["ROS_DOMAIN_ID"] = (os.environ.get("MBS_TEST_ROS_DOMAIN_ID")
                                   or str(1 + os.getpid() % 100))

pytestmark = pytest.mark.ros   # deselected where rclpy is missing (test/conftest.py)
_skip_without_ros = unittest.skipIf(bool(_MISSING), f"ROS 2 / launch_testing missing: {_MISSING}")


def _post_shutdown_test():
    """launch_testing's post-shutdown marker, or nothing where launch_testing is missing."""
    if _MISSING:
        return lambda cls: cls
    return launch_testing.post_shutdown_test()


M1, M2, L1, LC1, LC2, I1, I2, G = 2.0, 1.5, 0.6, 0.3, 0.25, 0.05, 0.03, 9.81
URDF = f"""<?xml version="1.0"?>
<robot name="two_link">
  <link name="base"/>
  <link name="link1"><inertial><origin xyz="0 {LC1} 0"/><mass value="{M1}"/>
    <inertia ixx="{I1}" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
  <link name="link2"><inertial><origin xyz="0 {LC2} 0"/><mass value="{M2}"/>
    <inertia ixx="{I2}" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
  <joint name="shoulder" type="revolute"><parent link="base"/><child link="link1"/>
    <origin xyz="0 0 0"/><axis xyz="1 0 0"/>
    <limit lower="-3" upper="3" effort="100" velocity="5"/></joint>
  <joint name="elbow" type="revolute"><parent link="link1"/><child link="link2"/>
    <origin xyz="0 {L1} 0"/><axis xyz="1 0 0"/>
    <limit lower="-3" upper="3" effort="100" velocity="5"/></joint>
</robot>
"""
JOINTS = ["shoulder", "elbow"]
Q_MEAS = [0.3, -0.6]


def launch_file():
    """The installed launch file (tests the install rules), else the one in the source tree."""
    try:
        from ament_index_python.packages import get_package_share_directory
        path = os.path.join(get_package_share_directory("mbs_dynamics"), "launch",
                            "feedforward.launch.py")
        if os.path.exists(path):
            return path
    except (ImportError, LookupError):
        pass
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "launch",
                        "feedforward.launch.py")


def gravity_torque(q):
    """Closed-form gravity torque of the planar 2R arm (Spong et al., §7.4)."""
    g1 = (M1 * LC1 + M2 * L1) * G * math.cos(q[0]) + M2 * LC2 * G * math.cos(q[0] + q[1])
    g2 = M2 * LC2 * G * math.cos(q[0] + q[1])
    return [g1, g2]


@pytest.mark.launch_test
@pytest.mark.ros
def generate_test_description():
    urdf = tempfile.NamedTemporaryFile("w", suffix=".urdf", delete=False)
    urdf.write(URDF)
    urdf.close()
    actions = [] if EnableRmwIsolation is None else [EnableRmwIsolation()]
    actions += [
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(launch_file()),
            launch_arguments={
                "robot_description_file": urdf.name,
                "config": "rigid_arm.yaml",          # 1000 Hz, from the installed config/
                "namespace": "ff_test",
                "use_sim_time": "false",
            }.items(),
        ),
        launch_testing.actions.ReadyToTest(),
    ]
    return launch.LaunchDescription(actions), {"urdf_path": urdf.name}


@_skip_without_ros
class TestFeedforwardLaunch(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        rclpy.init()
        cls.node = rclpy.create_node("feedforward_launch_probe")
        cls.received = {"torque": [], "feedforward": [], "torque_derivatives": [],
                        "diagnostics": []}
        cls.lock = threading.Lock()

        def store(key):
            def cb(msg):
                with cls.lock:
                    cls.received[key].append(msg)
            return cb

        base = "/ff_test/feedforward_node"
        cls.node.create_subscription(Float64MultiArray, f"{base}/torque", store("torque"), 10)
        cls.node.create_subscription(JointState, f"{base}/feedforward", store("feedforward"), 10)
        cls.node.create_subscription(Float64MultiArray, f"{base}/torque_derivatives",
                                     store("torque_derivatives"), 10)
        cls.node.create_subscription(DiagnosticArray, "/diagnostics", store("diagnostics"), 10)
        cls.js_pub = cls.node.create_publisher(JointState, "/joint_states", 10)
        cls.traj_pub = cls.node.create_publisher(JointTrajectory,
                                                 f"{base}/joint_trajectory", 10)

    @classmethod
    def tearDownClass(cls):
        cls.node.destroy_node()
        rclpy.shutdown()

    def spin_for(self, seconds, q=Q_MEAS, until=None):
        """Spin the probe for up to `seconds`, sending joint states at ~100 Hz."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            msg = JointState()
            msg.header.stamp = self.node.get_clock().now().to_msg()
            msg.name = ["gripper"] + JOINTS[::-1]          # extra joint, other order
            msg.position = [0.0, q[1], q[0]]
            self.js_pub.publish(msg)
            rclpy.spin_once(self.node, timeout_sec=0.01)
            if until is not None and until():
                return True
        return until is None

    def count(self, key):
        with self.lock:
            return len(self.received[key])

    def test_1_hold_on_every_topic_and_rate(self, proc_output):
        # A fresh install compiles the numba kernels on the node's first start (~20 s on an
        # idle 2-core machine, measured with rclpy 7.1.3): wait for the model before timing.
        proc_output.assertWaitFor("robot model", timeout=300.0)
        ok = self.spin_for(20.0, until=lambda: all(
            self.count(k) >= 5 for k in ("torque", "feedforward", "torque_derivatives")))
        self.assertTrue(ok, f"no output: { {k: self.count(k) for k in self.received} }")
        expected = gravity_torque(Q_MEAS)
        with self.lock:
            torque = self.received["torque"][-1]
            ff = self.received["feedforward"][-1]
            der = self.received["torque_derivatives"][-1]
        for got, want in zip(torque.data, expected):
            self.assertAlmostEqual(got, want, places=9)
        self.assertEqual(list(ff.name), JOINTS)
        for got, want in zip(ff.effort, expected):
            self.assertAlmostEqual(got, want, places=9)
        self.assertEqual([d.label for d in der.layout.dim], ["order", "joint"])
        self.assertEqual(list(der.data[2:]), [0.0, 0.0, 0.0, 0.0])
        # rate: the node reports what it achieved; configured 1000 Hz. A loose bound (a quarter):
        # this says the timer publishes at about its rate, it is no speed measurement (a loaded
        # 2-core machine once reported 494.6 Hz against the old bound of 500)
        rates = []

        def rate_seen():
            with self.lock:
                for arr in self.received["diagnostics"]:
                    for st in arr.status:
                        if "feedforward_node" in st.name:
                            kv = {v.key: v.value for v in st.values}
                            if "rate_published_hz" in kv:
                                rates.append(float(kv["rate_published_hz"]))
            return len(rates) >= 2
        self.assertTrue(self.spin_for(10.0, until=rate_seen), "no diagnostics with a rate")
        self.assertGreater(max(rates), 250.0)

    def test_2_trajectory(self):
        msg = JointTrajectory()
        msg.joint_names = JOINTS
        for t, q in ((0.0, Q_MEAS), (1.0, [0.6, -0.2]), (2.0, Q_MEAS)):
            p = JointTrajectoryPoint()
            p.positions = [float(x) for x in q]
            p.time_from_start = DurationMsg(sec=int(t))
            msg.points.append(p)
        with self.lock:
            self.received["feedforward"].clear()
        self.traj_pub.publish(msg)   # stamp 0: start now

        def moving():
            with self.lock:
                return any(abs(m.position[0] - Q_MEAS[0]) > 0.1
                           for m in self.received["feedforward"])
        self.assertTrue(self.spin_for(10.0, until=moving), "trajectory not followed")

    def test_3_bad_message_rejected_without_crash(self, proc_output, proc_info):
        bad = JointState()
        bad.name = JOINTS
        bad.position = [float("nan"), 0.0]
        for _ in range(5):
            self.js_pub.publish(bad)
            rclpy.spin_once(self.node, timeout_sec=0.01)
        proc_output.assertWaitFor("non_finite", timeout=10.0)   # the rejection is logged
        with self.lock:
            self.received["torque"].clear()
        self.assertTrue(self.spin_for(10.0, until=lambda: self.count("torque") >= 5))
        with self.lock:
            for m in self.received["torque"]:
                self.assertTrue(all(math.isfinite(x) for x in m.data))


@_post_shutdown_test()
@_skip_without_ros
class TestFeedforwardShutdown(unittest.TestCase):

    def test_exit_code(self, proc_info, urdf_path):
        os.unlink(urdf_path)
        launch_testing.asserts.assertExitCodes(proc_info)
