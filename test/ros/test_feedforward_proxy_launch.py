"""launch_testing: feedforward_proxy starts from launch/feedforward_proxy.launch.py (installed
console script, config and launch file), serves a FollowJointTrajectory goal through a fake
controller in this process, and answers a bad goal with INVALID_JOINTS. Skipped (per class) where
ROS 2, launch_testing or control_msgs is missing.

Run on a ROS 2 machine with ``colcon test --packages-select mbs_dynamics`` or
``launch_test test/ros/test_feedforward_proxy_launch.py`` (the package built and sourced).
"""
from __future__ import annotations

import os
import sys
import unittest

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # launch_test: the harness
from launch_harness import (JOINTS, MISSING, URDF, ActionServer,  # noqa: E402
                            FollowJointTrajectory, GoalResponse, GoalStatus, JointTrajectory,
                            LockedActionClient, Probe, ReentrantCallbackGroup, describe_launch,
                            include, launch_testing, point, post_shutdown_test,
                            skip_without_ros, temp_file, two_link_tau, wait_future)

_MISSING = MISSING
pytestmark = pytest.mark.ros   # deselected where rclpy is missing (test/conftest.py)

PARAMS = """/**/feedforward_proxy:
  ros__parameters:
    output: effort
    sample_period: 0.02
    controller_action: /fake_jtc/follow_joint_trajectory
    controller_topic: /fake_jtc/joint_trajectory
    server_timeout: 60.0
"""


@pytest.mark.launch_test
@pytest.mark.ros
def generate_test_description():
    files = {"urdf_path": temp_file(URDF, ".urdf"), "params_path": temp_file(PARAMS, ".yaml")}
    return describe_launch(
        include("feedforward_proxy.launch.py", robot_description_file=files["urdf_path"],
                config=files["params_path"], namespace="proxy_test"),
    ), files


@skip_without_ros
class TestFeedforwardProxyLaunch(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.probe = Probe("proxy_launch_probe")
        cls.goals = []
        group = ReentrantCallbackGroup()

        def on_goal(goal):
            with cls.probe.lock:
                cls.goals.append(goal)
            return GoalResponse.ACCEPT

        def execute(goal_handle):
            goal_handle.succeed()
            result = FollowJointTrajectory.Result()
            result.error_string = "fake: done"
            return result

        cls.server = ActionServer(cls.probe.node, FollowJointTrajectory,
                                  "/fake_jtc/follow_joint_trajectory", execute,
                                  goal_callback=on_goal, callback_group=group)
        cls.client = LockedActionClient(cls.probe.node, FollowJointTrajectory,
                                        "/proxy_test/feedforward_proxy/follow_joint_trajectory",
                                        callback_group=group)
        cls.probe.start()

    @classmethod
    def tearDownClass(cls):
        cls.probe.close()

    def send(self, traj):
        goal = FollowJointTrajectory.Goal()
        goal.trajectory = traj
        handle = wait_future(self.client.send_goal_async(goal))
        self.assertTrue(handle.accepted)
        return wait_future(handle.get_result_async())

    def test_1_goal_is_enriched_and_forwarded(self, proc_output):
        proc_output.assertWaitFor("robot model", timeout=300.0)   # first start may compile
        self.assertTrue(self.client.wait_for_server(timeout_sec=120.0))
        traj = JointTrajectory()
        traj.joint_names = JOINTS
        traj.points = [point(0.0, [0.3, -0.6]), point(0.5, [0.6, -0.2]),
                       point(1.0, [0.2, 0.3])]
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
        traj.points = [point(0.0, [0.0, 0.0]), point(1.0, [0.1, 0.1])]
        res = self.send(traj)
        self.assertEqual(res.status, GoalStatus.STATUS_ABORTED)
        self.assertEqual(res.result.error_code, FollowJointTrajectory.Result.INVALID_JOINTS)
        self.assertIn("wrist_of_someone_else", res.result.error_string)
        self.assertEqual(len(self.goals), 1)                       # nothing forwarded


@post_shutdown_test()
@skip_without_ros
class TestFeedforwardProxyShutdown(unittest.TestCase):

    def test_exit_code(self, proc_info, urdf_path, params_path):
        os.unlink(urdf_path)
        os.unlink(params_path)
        launch_testing.asserts.assertExitCodes(proc_info)
