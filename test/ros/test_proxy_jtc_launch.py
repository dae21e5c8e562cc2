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
    import rclpy
    from action_msgs.msg import GoalStatus
    from builtin_interfaces.msg import Duration as DurationMsg
    from control_msgs.action import FollowJointTrajectory
    from control_msgs.msg import JointTrajectoryControllerState
    from launch.actions import IncludeLaunchDescription
    from launch.launch_description_sources import PythonLaunchDescriptionSource
    from launch_ros.actions import Node
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
_skip_without_ros = unittest.skipIf(bool(_MISSING), f"ROS 2 / ros2_control missing: {_MISSING}")

M1, M2, L1, LC1, LC2, I1, I2, G = 2.0, 1.5, 0.6, 0.3, 0.25, 0.05, 0.03, 9.81
JOINTS = ["shoulder", "elbow"]
Q0 = [0.3, -0.6]
LINKS = f"""
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
"""
HW_JOINTS = "".join(f"""
    <joint name="{name}">
      <command_interface name="position"/><command_interface name="effort"/>
      <state_interface name="position"><param name="initial_value">{q0}</param></state_interface>
      <state_interface name="velocity"/><state_interface name="effort"/>
    </joint>""" for name, q0 in zip(JOINTS, Q0))
URDF = f"""<?xml version="1.0"?>
<robot name="two_link">{LINKS}
  <ros2_control name="mock_arm" type="system">
    <hardware><plugin>mock_components/GenericSystem</plugin></hardware>{HW_JOINTS}
  </ros2_control>
</robot>
"""
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


def _file(text, suffix):
    f = tempfile.NamedTemporaryFile("w", suffix=suffix, delete=False)
    f.write(text)
    f.close()
    return f.name


@pytest.mark.launch_test
@pytest.mark.ros
def generate_test_description():
    files = {"urdf_path": _file(URDF, ".urdf"), "controllers_path": _file(CONTROLLERS, ".yaml"),
             "params_path": _file(PARAMS, ".yaml")}
    actions = [] if EnableRmwIsolation is None else [EnableRmwIsolation()]
    actions += [
        Node(package="robot_state_publisher", executable="robot_state_publisher",
             parameters=[{"robot_description": URDF}], output="screen"),
        Node(package="controller_manager", executable="ros2_control_node",
             parameters=[files["controllers_path"]], output="screen"),
        Node(package="controller_manager", executable="spawner", output="screen",
             arguments=["joint_state_broadcaster", "joint_trajectory_controller",
                        "--param-file", files["controllers_path"],
                        "--controller-manager-timeout", "120"]),
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(launch_file()),
            launch_arguments={"robot_description_file": files["urdf_path"],
                              "config": files["params_path"]}.items(),
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
class TestProxyOnRealJTC(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        rclpy.init()
        cls.node = rclpy.create_node("proxy_jtc_probe")
        cls.states = []
        cls.lock = threading.Lock()
        group = ReentrantCallbackGroup()

        def on_state(msg):
            with cls.lock:
                cls.states.append(msg)

        cls.node.create_subscription(JointTrajectoryControllerState,
                                     "/joint_trajectory_controller/controller_state", on_state,
                                     100, callback_group=group)
        cls.client = LockedActionClient(cls.node, FollowJointTrajectory,
                                  "/feedforward_proxy/follow_joint_trajectory",
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
    def wait(future, timeout=60.0):
        end = time.monotonic() + timeout
        while not future.done():
            if time.monotonic() > end:
                raise AssertionError("timed out")
            time.sleep(0.01)
        return future.result()

    def test_goal_runs_on_jtc_with_the_inverse_dynamics_as_its_effort(self, proc_output):
        proc_output.assertWaitFor("robot model", timeout=300.0)
        self.assertTrue(self.client.wait_for_server(timeout_sec=60.0))
        # JTC active: its state is published (the spawner activates it after configuring)
        end = time.monotonic() + 120.0
        while not self.states and time.monotonic() < end:
            time.sleep(0.05)
        self.assertTrue(self.states, "joint_trajectory_controller never published its state")
        goal = FollowJointTrajectory.Goal()
        goal.trajectory = JointTrajectory(joint_names=JOINTS,
                                          points=[_point(t, q) for t, q in WAYPOINTS])
        with self.lock:
            self.states.clear()
        handle = self.wait(self.client.send_goal_async(goal))
        self.assertTrue(handle.accepted)
        res = self.wait(handle.get_result_async())
        self.assertEqual(res.status, GoalStatus.STATUS_SUCCEEDED, res.result.error_string)
        self.assertEqual(res.result.error_code, FollowJointTrajectory.Result.SUCCESSFUL)
        self.assertNotIn("without feedforward", res.result.error_string)
        with self.lock:
            states = list(self.states)
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


@launch_testing.post_shutdown_test() if not _MISSING else (lambda cls: cls)
@_skip_without_ros
class TestProxyOnRealJTCShutdown(unittest.TestCase):

    def test_files_removed(self, urdf_path, controllers_path, params_path):
        for path in (urdf_path, controllers_path, params_path):
            os.unlink(path)
