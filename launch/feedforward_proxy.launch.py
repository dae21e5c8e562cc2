"""Launch mbs_dynamics' feedforward_proxy in front of a joint_trajectory_controller.

Arguments:
  robot_description_file  URDF file to load into the ``robot_description`` parameter. Empty
                          (default): the proxy takes the model from the ``robot_description``
                          topic of a running robot_state_publisher.
  config                  parameters YAML: a file name under this package's ``config/``
                          (``feedforward_proxy.yaml``) or an absolute path.
  namespace               namespace of the proxy (its action and topic follow it).
  loops                   closed loops: a YAML file with a ``loops:`` list (relative paths are
                          taken from the current directory); sets the ``loops`` parameter.
                          Empty (default): the config's value (none in the bundled ones).
  actuated                with ``loops``: the motor joints, comma-separated (``j1,j2``); sets
                          the ``actuated`` parameter. Empty: the config's value, else chosen.

Example::

  ros2 launch mbs_dynamics feedforward_proxy.launch.py config:=feedforward_proxy.yaml
  ros2 launch mbs_dynamics feedforward_proxy.launch.py loops:=/path/loops.yaml actuated:=m1,m2

The proxy serves ``<namespace>/feedforward_proxy/follow_joint_trajectory`` and forwards enriched
goals to ``controller_action`` (default ``/joint_trajectory_controller/follow_joint_trajectory``);
point MoveIt's controller at the proxy's action (see config/jtc_feedforward_example.yaml).
"""

import os

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare


def _loop_parameters(context):
    """The ``loops`` / ``actuated`` launch arguments as node parameters (none when empty)."""
    out = []
    loops = LaunchConfiguration("loops").perform(context).strip()
    if loops:
        if not os.path.isfile(loops):
            raise RuntimeError(f"loops:={loops}: no such file (a YAML file with a 'loops:' list)")
        out.append({"loops": ParameterValue(os.path.abspath(loops), value_type=str)})
    actuated = [j.strip() for j in LaunchConfiguration("actuated").perform(context).split(",")
                if j.strip()]
    if actuated:
        out.append({"actuated": actuated})
    return out


def _node(context):
    urdf_file = LaunchConfiguration("robot_description_file").perform(context)
    config = LaunchConfiguration("config").perform(context)
    if config and not os.path.isabs(config):
        share = FindPackageShare("mbs_dynamics").perform(context)
        config = os.path.join(share, "config", config)
    parameters = [config] if config else []
    if urdf_file:
        with open(urdf_file, encoding="utf-8") as f:
            # value_type=str: the URDF text must not be parsed as YAML by launch_ros
            parameters.append({"robot_description": ParameterValue(f.read(), value_type=str)})
    parameters.extend(_loop_parameters(context))
    return [Node(
        package="mbs_dynamics",
        executable="feedforward_proxy",
        name="feedforward_proxy",
        namespace=LaunchConfiguration("namespace"),
        output="screen",
        emulate_tty=True,
        parameters=parameters,
    )]


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument(
            "robot_description_file", default_value="",
            description="URDF file; empty: use the robot_description topic"),
        DeclareLaunchArgument(
            "config", default_value="feedforward_proxy.yaml",
            description="parameters YAML (name under mbs_dynamics/config or absolute path)"),
        DeclareLaunchArgument("namespace", default_value="", description="proxy namespace"),
        DeclareLaunchArgument(
            "loops", default_value="",
            description="closed loops: YAML file with a 'loops:' list (empty: none/config's)"),
        DeclareLaunchArgument(
            "actuated", default_value="",
            description="with loops: motor joints, comma-separated (empty: config's/chosen)"),
        OpaqueFunction(function=_node),
    ])
