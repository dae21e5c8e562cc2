"""Co-simulation in Gazebo (gz sim) through gz_ros2_control: the bundled arm7, effort-controlled
by feedforward_node's ``~/torque``.

    ros2 launch mbs_dynamics gazebo.launch.py

Needs ``ros_gz_sim``, ``ros_gz_bridge``, ``gz_ros2_control``, ``robot_state_publisher``,
``controller_manager``, ``joint_state_broadcaster`` and ``effort_controllers`` (e.g.
``sudo apt install ros-$ROS_DISTRO-gz-ros2-control ros-$ROS_DISTRO-ros-gz
ros-$ROS_DISTRO-ros2-controllers``). What it starts, following the gz_ros2_control demos:

1. Gazebo (``ros_gz_sim``'s ``gz_sim.launch.py``, ``gz_args``, default ``-r empty.sdf``) and a
   ``/clock`` bridge (``ros_gz_bridge parameter_bridge``);
2. ``robot_state_publisher`` with arm7's URDF plus a ``<ros2_control>`` block (hardware
   ``gz_ros2_control/GazeboSimSystem``; per joint an ``effort`` command interface and
   ``position``/``velocity`` state interfaces, initial positions = the trajectory's start) and the
   ``gz_ros2_control-system`` plugin reading ``config/gazebo_controllers.yaml``;
3. ``ros_gz_sim create`` spawning the robot from ``robot_description``, then the spawners of
   ``joint_state_broadcaster`` and ``effort_controller``
   (``effort_controllers/JointGroupEffortController``, command topic
   ``/effort_controller/commands``, std_msgs/Float64MultiArray);
4. ``feedforward_node`` with ``use_sim_time: true``, reading ``/joint_states`` and remapping
   ``~/torque`` onto ``/effort_controller/commands``;
5. after ``delay`` seconds, the bundled trajectory sent once to
   ``/feedforward_node/joint_trajectory``.

The effort controller only forwards torques, so this loop is pure feedforward (no feedback):
it shows the model and Gazebo agree, and drifts slowly where they do not (Gazebo's integrator,
joint limits). JointGroupEffortController keeps applying its last command if the node stops
publishing.
"""

import re

from launch import LaunchDescription
from launch.actions import (DeclareLaunchArgument, ExecuteProcess, IncludeLaunchDescription,
                            OpaqueFunction, RegisterEventHandler, TimerAction)
from launch.event_handlers import OnProcessExit
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare


def _ros2_control_urdf(urdf, joints, q0, effort_limits, controllers_yaml):
    """arm7's URDF with the gz_ros2_control hardware block and Gazebo plugin inserted."""
    blocks = ['  <ros2_control name="GazeboSimSystem" type="system">',
              "    <hardware>",
              "      <plugin>gz_ros2_control/GazeboSimSystem</plugin>",
              "    </hardware>"]
    for name, q, eff in zip(joints, q0, effort_limits):
        blocks += [f'    <joint name="{name}">',
                   '      <command_interface name="effort">',
                   f'        <param name="min">{-eff:g}</param>',
                   f'        <param name="max">{eff:g}</param>',
                   "      </command_interface>",
                   '      <state_interface name="position">',
                   f'        <param name="initial_value">{q:.9g}</param>',
                   "      </state_interface>",
                   '      <state_interface name="velocity"/>',
                   '      <state_interface name="effort"/>',
                   "    </joint>"]
    blocks += ["  </ros2_control>",
               "  <gazebo>",
               '    <plugin filename="gz_ros2_control-system" '
               'name="gz_ros2_control::GazeboSimROS2ControlPlugin">',
               f"      <parameters>{controllers_yaml}</parameters>",
               "    </plugin>",
               "  </gazebo>"]
    head, tail = re.split(r"</robot>\s*$", urdf, maxsplit=1)
    return head + "\n".join(blocks) + "\n</robot>\n" + tail


def _setup(context):
    import mbs_dynamics as mbs
    from mbs_dynamics import demo
    from mbs_dynamics.control.trajectory import Trajectory

    urdf_file, traj_file = demo.BUNDLED["arm7"]
    urdf = urdf_file.read_text()
    robot = mbs.load_urdf(urdf)
    traj = Trajectory.load(traj_file).reorder(robot.joint_names)
    q0 = traj.sample(0.0)[0]
    controllers = PathJoinSubstitution(
        [FindPackageShare("mbs_dynamics"), "config", "gazebo_controllers.yaml"]).perform(context)
    description = _ros2_control_urdf(urdf, robot.joint_names, q0, robot.effort_limit,
                                     controllers)
    desc_param = ParameterValue(description, value_type=str)

    gazebo = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(PathJoinSubstitution(
            [FindPackageShare("ros_gz_sim"), "launch", "gz_sim.launch.py"])),
        launch_arguments=[("gz_args", LaunchConfiguration("gz_args"))])
    clock_bridge = Node(
        package="ros_gz_bridge", executable="parameter_bridge", output="screen",
        arguments=["/clock@rosgraph_msgs/msg/Clock[gz.msgs.Clock"])
    state_publisher = Node(
        package="robot_state_publisher", executable="robot_state_publisher", output="screen",
        parameters=[{"robot_description": desc_param, "use_sim_time": True}])
    spawn = Node(
        package="ros_gz_sim", executable="create", output="screen",
        arguments=["-topic", "robot_description", "-name", "arm7", "-allow_renaming", "true"])
    jsb = Node(package="controller_manager", executable="spawner",
               arguments=["joint_state_broadcaster"])
    effort = Node(package="controller_manager", executable="spawner",
                  arguments=["effort_controller", "--param-file", controllers])
    feedforward = Node(
        package="mbs_dynamics", executable="feedforward_node", name="feedforward_node",
        output="screen",
        parameters=[{"robot_description": ParameterValue(urdf, value_type=str),
                     "use_sim_time": True, "control_rate": 1000.0,
                     "joint_state_timeout": 0.1, "actuator.type": "rigid"}],
        remappings=[("joint_states", "/joint_states"),
                    ("~/torque", "/effort_controller/commands")])
    publish = TimerAction(
        period=float(LaunchConfiguration("delay").perform(context)),
        actions=[ExecuteProcess(
            cmd=["ros2", "topic", "pub", "--once", "-w", "1",
                 "/feedforward_node/joint_trajectory", "trajectory_msgs/msg/JointTrajectory",
                 demo.trajectory_message_yaml(traj)],
            output="screen")])
    return [
        gazebo, clock_bridge, state_publisher, spawn,
        RegisterEventHandler(OnProcessExit(target_action=spawn, on_exit=[jsb])),
        RegisterEventHandler(OnProcessExit(target_action=jsb, on_exit=[effort, feedforward])),
        RegisterEventHandler(OnProcessExit(target_action=effort, on_exit=[publish])),
    ]


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("gz_args", default_value="-r empty.sdf",
                              description="arguments of gz sim (-r: run at start)"),
        DeclareLaunchArgument("delay", default_value="2.0",
                              description="seconds after the controllers are up before the "
                                          "trajectory is sent"),
        OpaqueFunction(function=_setup),
    ])
