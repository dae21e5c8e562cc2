"""Co-simulation in Gazebo (gz sim, server only) through gz_ros2_control, in the arrangement of
``cosim.launch.py``: joint_trajectory_controller (JTC) with effort command interfaces on
gz_ros2_control's ``GazeboSimSystem``, and ``feedforward_proxy`` in front of it.

    ros2 launch mbs_dynamics gazebo.launch.py robot_description_file:=/path/robot.urdf \\
        feedforward:=true|false controllers_file:=/path/controllers.yaml

Needs ``ros_gz_sim``, ``ros_gz_bridge`` and ``gz_ros2_control`` (Gazebo Harmonic with Jazzy).
What it starts:

1. Gazebo's server (``ros_gz_sim``'s ``gz_sim.launch.py`` with ``gz_args``, default
   ``-r -s empty.sdf``: running, no GUI) and a ``/clock`` bridge;
2. ``robot_state_publisher`` with the URDF plus gz_ros2_control's ``<ros2_control>`` block and
   Gazebo plugin (:func:`mbs_dynamics.ros.gazebo_setup.gazebo_description`), the robot spawned
   from ``robot_description``;
3. after the spawn, the spawners of ``joint_state_broadcaster`` and
   ``joint_trajectory_controller`` (the controllers file patched as the MuJoCo co-simulation
   does: :func:`mbs_dynamics.ros.cosim_setup.controllers_config`);
4. ``feedforward_proxy`` (``output: effort``; ``feedforward:=false`` forwards the same goals
   without effort: JTC's PID alone at the same gains). Goals go to
   ``/feedforward_proxy/follow_joint_trajectory``.

Gazebo's joints are rigid: ``actuator:=sea`` is for ``cosim.launch.py`` (MuJoCo), and closed
loops are refused here with a message. Mimic joints (the Panda's fingers) follow their joint
through gz_ros2_control (state interfaces only; JTC commands the independent joints).
"""

import os
import tempfile

from launch import LaunchDescription
from launch.actions import (DeclareLaunchArgument, IncludeLaunchDescription, OpaqueFunction,
                            RegisterEventHandler)
from launch.event_handlers import OnProcessExit
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare

from mbs_dynamics.ros.launch_args import common_arguments, node_parameters

_TRUE = ("true", "True", "1", "yes")
_BOOL = _TRUE + ("false", "False", "0", "no")


def _setup(context):
    import numpy as np
    import yaml

    import mbs_dynamics as mbs
    from mbs_dynamics import demo
    from mbs_dynamics.ros.cosim_setup import controllers_config, proxy_overrides
    from mbs_dynamics.ros.gazebo_setup import gazebo_description

    urdf_file = LaunchConfiguration("robot_description_file").perform(context).strip()
    if not urdf_file:
        urdf_file = str(demo.BUNDLED["arm7"][0])
        context.launch_configurations["robot_description_file"] = urdf_file
    if LaunchConfiguration("loops").perform(context).strip():
        raise RuntimeError("gazebo.launch.py: closed loops are not simulated in Gazebo here")
    ff = LaunchConfiguration("feedforward").perform(context).strip()
    if ff not in _BOOL:
        raise RuntimeError(f"feedforward:={ff}: expected true or false")
    with open(urdf_file, encoding="utf-8") as f:
        urdf = f.read()
    robot = mbs.load_urdf(urdf)
    q0 = np.clip(0.0, robot.lower, robot.upper)
    ctrl = LaunchConfiguration("controllers_file").perform(context).strip()
    if not os.path.isabs(ctrl) and not os.path.isfile(ctrl):
        ctrl = os.path.join(FindPackageShare("mbs_dynamics").perform(context), "config", ctrl)
    with open(ctrl, encoding="utf-8") as f:
        doc = yaml.safe_load(f)
    try:
        doc, _ = controllers_config(doc, robot.joint_names, elastic=False, use_sim_time=True)
    except ValueError as exc:
        raise RuntimeError(f"gazebo.launch.py: {exc}") from None
    ctrl_path = os.path.join(tempfile.mkdtemp(prefix="mbs_gazebo_"), "controllers.yaml")
    with open(ctrl_path, "w", encoding="utf-8") as f:
        yaml.safe_dump(doc, f, sort_keys=False)
    description = gazebo_description(urdf, robot.joint_names, q0, robot.effort_limit,
                                      ctrl_path, mimic=getattr(robot, "mimic_joints", None))

    gazebo = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(PathJoinSubstitution(
            [FindPackageShare("ros_gz_sim"), "launch", "gz_sim.launch.py"])),
        launch_arguments=[("gz_args", LaunchConfiguration("gz_args"))])
    clock_bridge = Node(
        package="ros_gz_bridge", executable="parameter_bridge", output="screen",
        arguments=["/clock@rosgraph_msgs/msg/Clock[gz.msgs.Clock"])
    state_publisher = Node(
        package="robot_state_publisher", executable="robot_state_publisher", output="screen",
        parameters=[{"robot_description": ParameterValue(description, value_type=str),
                     "use_sim_time": True}])
    spawn = Node(
        package="ros_gz_sim", executable="create", output="screen",
        arguments=["-topic", "robot_description", "-name", robot.model.name or "robot",
                   "-allow_renaming", "true"])
    spawners = [Node(package="controller_manager", executable="spawner", output="screen",
                     arguments=[name, "--param-file", ctrl_path,
                                "--controller-manager-timeout", "120"])
                for name in ("joint_state_broadcaster", "joint_trajectory_controller")]
    proxy = Node(
        package="mbs_dynamics", executable="feedforward_proxy", name="feedforward_proxy",
        namespace=LaunchConfiguration("namespace"), output="screen", emulate_tty=True,
        parameters=node_parameters(context, extra=[proxy_overrides(
            {"type": "rigid"}, ff in _TRUE, use_sim_time=True)]))
    return [gazebo, clock_bridge, state_publisher, spawn,
            RegisterEventHandler(OnProcessExit(target_action=spawn, on_exit=spawners + [proxy]))]


def generate_launch_description():
    return LaunchDescription(common_arguments("feedforward_proxy.yaml", "proxy namespace") + [
        DeclareLaunchArgument("gz_args", default_value="-r -s empty.sdf",
                              description="arguments of gz sim (-r: run, -s: server only)"),
        DeclareLaunchArgument(
            "feedforward", default_value="true",
            description="false: goals forwarded without effort (JTC's PID alone, same gains)"),
        DeclareLaunchArgument(
            "controllers_file", default_value="jtc_feedforward_example.yaml",
            description="ros2_control controllers file (name under config/ or path)"),
        OpaqueFunction(function=_setup),
    ])
