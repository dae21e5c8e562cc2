"""launch_testing: feedforward_proxy starts from launch/feedforward_proxy.launch.py (installed
console script, config and launch file), serves a FollowJointTrajectory goal through a fake
controller in this process, and answers a bad goal with INVALID_JOINTS. Skipped (per class) where
ROS 2, launch_testing or control_msgs is missing.

Run on a ROS 2 machine with ``colcon test --packages-select mbs_dynamics`` or
``launch_test test/ros/test_feedforward_proxy_launch.py`` (the package built and sourced).
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
    from action_msgs.msg import GoalStatus
    from builtin_interfaces.msg import Duration as DurationMsg
    from control_msgs.action import FollowJointTrajectory
    from launch.actions import IncludeLaunchDescription
    from launch.launch_description_sources import PythonLaunchDescriptionSource
    from rclpy.action import ActionServer, GoalResponse
    from rclpy.callback_groups import ReentrantCallbackGroup
    from rclpy.executors import MultiThreadedExecutor

    from mbs_dynamics.ros.feedforward_proxy import LockedActionClient
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
_skip_without_ros = unittest.skipIf(bool(_MISSING), f"ROS 2 / control_msgs missing: {_MISSING}")

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
PARAMS = """/**/feedforward_proxy:
  ros__parameters:
    output: effort
    sample_period: 0.02
    controller_action: /fake_jtc/follow_joint_trajectory
    controller_topic: /fake_jtc/joint_trajectory
    server_timeout: 10.0
"""


def two_link_tau(q, qd, qdd):
    """Closed-form inverse dynamics of the planar 2R arm (Spong et al., §7.4)."""
    c2, s2 = math.cos(q[1]), math.sin(q[1])
    m11 = I1 + I2 + M1 * LC1 ** 2 + M2 * (L1 ** 2 + LC2 ** 2 + 2 * L1 * LC2 * c2)
    m12 = I2 + M2 * (LC2 ** 2 + L1 * LC2 * c2)
    m22 = I2 + M2 * LC2 ** 2
    h = -M2 * L1 * LC2 * s2
    g1 = (M1 * LC1 + M2 * L1) * G * math.cos(q[0]) + M2 * LC2 * G * math.cos(q[0] + q[1])
    g2 = M2 * LC2 * G * math.cos(q[0] + q[1])
    return [m11 * qdd[0] + m12 * qdd[1] + h * qd[1] ** 2 + 2 * h * qd[0] * qd[1] + g1,
            m12 * qdd[0] + m22 * qdd[1] - h * qd[0] ** 2 + g2]


def launch_file():
    """The installed launch file (tests the install rules), else the one in the source tree."""
    try:
        from ament_index_python.packages import get_package_share_directory
        path = os.path.join(get_package_share_directory("mbs_dynamics"), "launch",
                            "feedforward_proxy.launch.py")
        if os.path.exists(path):
            return path
    except (ImportError, LookupError):
        pass
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "launch",
                        "feedforward_proxy.launch.py")


@pytest.mark.launch_test
@pytest.mark.ros
def generate_test_description():
    files = {}
    for key, suffix, text in (("urdf_path", ".urdf", URDF), ("params_path", ".yaml", PARAMS)):
        f = tempfile.NamedTemporaryFile("w", suffix=suffix, delete=False)
        f.write(text)
        f.close()
        files[key] = f.name
    actions = [] if EnableRmwIsolation is None else [EnableRmwIsolation()]
    actions += [
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(launch_file()),
            launch_arguments={"robot_description_file": files["urdf_path"],
                              "config": files["params_path"],
                              "namespace": "proxy_test"}.items(),
        ),
        launch_testing.actions.ReadyToTest(),
    ]
    return launch.LaunchDescription(actions), files


def _point(t, q):
    p = JointTrajectoryPoint()
    p.positions = [float(x) for x in q]
    p.time_from_start = DurationMsg(sec=int(t), nanosec=int(round((t % 1) * 1e9)))
    return p


@_skip_without_ros
class TestFeedforwardProxyLaunch(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        rclpy.init()
        cls.node = rclpy.create_node("proxy_launch_probe")
        cls.goals = []
        group = ReentrantCallbackGroup()

        def on_goal(goal):
            cls.goals.append(goal)
            return GoalResponse.ACCEPT

        def execute(goal_handle):
            goal_handle.succeed()
            result = FollowJointTrajectory.Result()
            result.error_string = "fake: done"
            return result

        cls.server = ActionServer(cls.node, FollowJointTrajectory,
                                  "/fake_jtc/follow_joint_trajectory", execute,
                                  goal_callback=on_goal, callback_group=group)
        cls.client = LockedActionClient(cls.node, FollowJointTrajectory,
                                  "/proxy_test/feedforward_proxy/follow_joint_trajectory",
                                  callback_group=group)
        cls.executor = MultiThreadedExecutor(num_threads=4)
        cls.executor.add_node(cls.node)
        cls.thread = threading.Thread(target=cls.executor.spin, daemon=True)
        cls.thread.start()

    @classmethod
    def tearDownClass(cls):
        cls.executor.shutdown(timeout_sec=2.0)
        cls.node.destroy_node()
        rclpy.shutdown()

    @staticmethod
    def wait(future, timeout=30.0):
        end = time.monotonic() + timeout
        while not future.done():
            if time.monotonic() > end:
                raise AssertionError("timed out")
            time.sleep(0.01)
        return future.result()

    def send(self, traj):
        goal = FollowJointTrajectory.Goal()
        goal.trajectory = traj
        handle = self.wait(self.client.send_goal_async(goal))
        self.assertTrue(handle.accepted)
        return self.wait(handle.get_result_async())

    def test_1_goal_is_enriched_and_forwarded(self, proc_output):
        proc_output.assertWaitFor("robot model", timeout=300.0)   # first start may compile
        self.assertTrue(self.client.wait_for_server(timeout_sec=30.0))
        traj = JointTrajectory()
        traj.joint_names = JOINTS
        traj.points = [_point(0.0, [0.3, -0.6]), _point(0.5, [0.6, -0.2]),
                       _point(1.0, [0.2, 0.3])]
        res = self.send(traj)
        self.assertEqual(res.status, GoalStatus.STATUS_SUCCEEDED)
        self.assertEqual(res.result.error_string, "fake: done")
        self.assertEqual(len(self.goals), 1)
        fwd = self.goals[0].trajectory
        self.assertEqual(list(fwd.joint_names), JOINTS)
        self.assertEqual(len(fwd.points), 51)                     # 1 s every 0.02 s
        for p in fwd.points:
            want = two_link_tau(p.positions, p.velocities, p.accelerations)
            for got, w in zip(p.effort, want):
                self.assertLessEqual(abs(got - w), 1e-6 * max(abs(x) for x in want))

    def test_2_bad_goal_is_answered_invalid_joints(self):
        traj = JointTrajectory()
        traj.joint_names = ["shoulder", "wrist_of_someone_else"]
        traj.points = [_point(0.0, [0.0, 0.0]), _point(1.0, [0.1, 0.1])]
        res = self.send(traj)
        self.assertEqual(res.status, GoalStatus.STATUS_ABORTED)
        self.assertEqual(res.result.error_code, FollowJointTrajectory.Result.INVALID_JOINTS)
        self.assertIn("wrist_of_someone_else", res.result.error_string)
        self.assertEqual(len(self.goals), 1)                       # nothing forwarded


def _post_shutdown_test():
    """launch_testing's post-shutdown marker, or nothing where launch_testing is missing."""
    if _MISSING:
        return lambda cls: cls
    return launch_testing.post_shutdown_test()


@_post_shutdown_test()
@_skip_without_ros
class TestFeedforwardProxyShutdown(unittest.TestCase):

    def test_exit_code(self, proc_info, urdf_path, params_path):
        os.unlink(urdf_path)
        os.unlink(params_path)
        launch_testing.asserts.assertExitCodes(proc_info)
