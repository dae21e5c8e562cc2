"""launch_testing: feedforward_proxy in front of the *real* joint_trajectory_controller.

ros2_control's controller manager (``ros2_control_node``) runs ``mock_components/GenericSystem``
for a planar two-link arm whose joints take ``[position, effort]`` commands (a drive with its own
position loop and a torque feedforward input), with joint_state_broadcaster and
joint_trajectory_controller (JTC) spawned by controller_manager's ``spawner``; the proxy starts
from the installed launch/feedforward_proxy.launch.py. A goal sent to the proxy must succeed on
JTC, and the effort JTC writes to the hardware (``controller_state.output``) must be the
inverse dynamics at JTC's own reference (``controller_state.reference``: q, q̇, q̈), as the
closed form of the planar 2R arm gives it (Spong, Hutchinson, Vidyasagar, *Robot Modeling and
Control*, §7.4) — the proxy's points are 10 ms apart and JTC interpolates the effort linearly
between them, hence the tolerance. Without the proxy's feedforward JTC's effort would be 0.

Run on a ROS 2 machine with ros2_control and ros2_controllers, the package built with colcon
and sourced: ``pytest -m ros test/ros/test_proxy_jtc_launch.py``.
"""
from __future__ import annotations

import os
import sys
import unittest

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # launch_test: the harness
from launch_harness import (JOINTS, MISSING, DEADLINE, FollowJointTrajectory,  # noqa: E402
                            GoalStatus, JointTrajectory, JointTrajectoryControllerState,
                            LockedActionClient, Node, Probe, ReentrantCallbackGroup,
                            describe_launch, include, point, post_shutdown_test,
                            skip_without_ros, temp_file, two_link_tau, two_link_urdf,
                            wait_future, wait_until)

_MISSING = MISSING
pytestmark = pytest.mark.ros   # deselected where rclpy is missing (test/conftest.py)

Q0 = [0.3, -0.6]
HW_JOINTS = "".join(f"""
    <joint name="{name}">
      <command_interface name="position"/><command_interface name="effort"/>
      <state_interface name="position"><param name="initial_value">{q0}</param></state_interface>
      <state_interface name="velocity"/><state_interface name="effort"/>
    </joint>""" for name, q0 in zip(JOINTS, Q0))
URDF = two_link_urdf(f"""
  <ros2_control name="mock_arm" type="system">
    <hardware><plugin>mock_components/GenericSystem</plugin></hardware>{HW_JOINTS}
  </ros2_control>
""")
UPDATE_RATE = 500
CONTROLLERS = f"""controller_manager:
  ros__parameters:
    update_rate: {UPDATE_RATE}
    joint_state_broadcaster:
      type: joint_state_broadcaster/JointStateBroadcaster
    joint_trajectory_controller:
      type: joint_trajectory_controller/JointTrajectoryController
joint_trajectory_controller:
  ros__parameters:
    joints: [{", ".join(JOINTS)}]
    command_interfaces: [position, effort]
    state_interfaces: [position, velocity]
    constraints:
      goal_time: 1.0
"""
PARAMS = """/**/feedforward_proxy:
  ros__parameters:
    output: effort
    sample_period: 0.01
    controller_action: /joint_trajectory_controller/follow_joint_trajectory
    server_timeout: 60.0
    parameter_timeout: 5.0
    pass_through_without_effort: false
"""
WAYPOINTS = [(0.0, Q0), (0.8, [0.8, -0.1]), (1.6, [0.1, 0.5]), (2.4, [0.4, -0.3])]


@pytest.mark.launch_test
@pytest.mark.ros
def generate_test_description():
    files = {"urdf_path": temp_file(URDF, ".urdf"),
             "controllers_path": temp_file(CONTROLLERS, ".yaml"),
             "params_path": temp_file(PARAMS, ".yaml")}
    return describe_launch(
        Node(package="robot_state_publisher", executable="robot_state_publisher",
             parameters=[{"robot_description": URDF}], output="screen"),
        Node(package="controller_manager", executable="ros2_control_node",
             parameters=[files["controllers_path"]], output="screen"),
        Node(package="controller_manager", executable="spawner", output="screen",
             arguments=["joint_state_broadcaster", "joint_trajectory_controller",
                        "--param-file", files["controllers_path"],
                        "--controller-manager-timeout", "120"]),
        include("feedforward_proxy.launch.py", robot_description_file=files["urdf_path"],
                config=files["params_path"]),
    ), files


@skip_without_ros
class TestProxyOnRealJTC(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.probe = Probe("proxy_jtc_probe")
        cls.raw_states = []
        group = ReentrantCallbackGroup()
        # the controller state comes at UPDATE_RATE: kept serialised (a Python callback that
        # deserialises every message falls behind on a loaded machine and drops some), in a
        # deep history, and read after the goal
        cls.probe.node.create_subscription(
            JointTrajectoryControllerState, "/joint_trajectory_controller/controller_state",
            cls.probe.store(cls.raw_states), 5000, callback_group=group, raw=True)
        cls.client = LockedActionClient(cls.probe.node, FollowJointTrajectory,
                                        "/feedforward_proxy/follow_joint_trajectory",
                                        callback_group=group)
        cls.probe.start()

    @classmethod
    def tearDownClass(cls):
        cls.probe.close()

    def states(self):
        from rclpy.serialization import deserialize_message
        with self.probe.lock:
            raw = list(self.raw_states)
        states = [deserialize_message(m, JointTrajectoryControllerState) for m in raw]
        # in publication order (the probe's executor threads may append out of order)
        return sorted(states, key=lambda s: (s.header.stamp.sec, s.header.stamp.nanosec))

    def test_goal_runs_on_jtc_with_the_inverse_dynamics_as_its_effort(self, proc_output):
        proc_output.assertWaitFor("robot model", timeout=300.0)
        self.assertTrue(self.client.wait_for_server(timeout_sec=DEADLINE))
        # JTC active: its state is published (the spawner activates it after configuring)
        self.assertTrue(wait_until(lambda: bool(self.raw_states), timeout=2 * DEADLINE),
                        "joint_trajectory_controller never published its state")
        goal = FollowJointTrajectory.Goal()
        goal.trajectory = JointTrajectory(joint_names=JOINTS,
                                          points=[point(t, q) for t, q in WAYPOINTS])
        with self.probe.lock:
            self.raw_states.clear()
        handle = wait_future(self.client.send_goal_async(goal))
        self.assertTrue(handle.accepted)
        res = wait_future(handle.get_result_async())
        self.assertEqual(res.status, GoalStatus.STATUS_SUCCEEDED, res.result.error_string)
        self.assertEqual(res.result.error_code, FollowJointTrajectory.Result.SUCCESSFUL)
        self.assertNotIn("without feedforward", res.result.error_string)
        states = self.states()
        moving = [s for s in states if max(abs(v) for v in s.reference.velocities) > 0.05]
        self.assertGreater(len(moving), 20, f"{len(states)} controller states, few moving")
        scale = max(max(abs(x) for x in two_link_tau(s.reference.positions,
                                                     s.reference.velocities,
                                                     s.reference.accelerations))
                    for s in moving)
        worst = 0.0
        for s in moving:
            self.assertEqual(list(s.joint_names), JOINTS)
            want = two_link_tau(s.reference.positions, s.reference.velocities,
                                s.reference.accelerations)
            self.assertEqual(len(s.output.effort), 2)
            worst = max(worst, *(abs(g - w) for g, w in zip(s.output.effort, want)))
        self.assertLess(worst, 2e-3 * scale, f"max |effort - ID(reference)| = {worst:.3g}")
        # the drive gets JTC's trajectory position, untouched by a PID ([position, effort]):
        # JTC writes the sample one update period T ahead of its reference (command_next_ at
        # traj_time + T), so output = q + T q' + T²/2 q'' of the reference up to the Taylor
        # remainder |jerk| T³/6 (the jerk bounded from the published accelerations); the
        # reference itself (a PID-free drive lagging one period) would be off by about |q'| T
        T = 1.0 / UPDATE_RATE
        jerk = max(abs(b - a) / dt for s0, s1 in zip(states, states[1:])
                   for dt in [(s1.header.stamp.sec - s0.header.stamp.sec)
                              + 1e-9 * (s1.header.stamp.nanosec - s0.header.stamp.nanosec)]
                   if dt > 0.5 * T
                   for a, b in zip(s0.reference.accelerations, s1.reference.accelerations))
        bound = 2.0 * jerk * T ** 3 / 6.0 + 1e-12
        lead = 0.0
        for s in moving:
            for g, q, v, a in zip(s.output.positions, s.reference.positions,
                                  s.reference.velocities, s.reference.accelerations):
                self.assertAlmostEqual(g, q + T * v + 0.5 * T * T * a, delta=bound)
                lead = max(lead, abs(v) * T)
        self.assertLess(bound, 0.1 * lead, "the bound must tell one period ahead from none")


@post_shutdown_test()
@skip_without_ros
class TestProxyOnRealJTCShutdown(unittest.TestCase):

    def test_files_removed(self, urdf_path, controllers_path, params_path):
        for path in (urdf_path, controllers_path, params_path):
            os.unlink(path)
