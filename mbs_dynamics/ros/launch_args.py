"""What the package's launch files share (``launch/feedforward.launch.py``,
``launch/feedforward_proxy.launch.py``): the launch arguments every node takes and the node
parameters built from them — the parameters YAML, the URDF file, the closed loops. Imports
``launch`` and ``launch_ros``, so only a ROS 2 environment imports this module.
"""

import os

from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare


def common_arguments(default_config, namespace_description="node namespace"):
    """``robot_description_file``, ``config`` (default ``default_config``), ``namespace``,
    ``loops`` and ``actuated``."""
    return [
        DeclareLaunchArgument(
            "robot_description_file", default_value="",
            description="URDF file; empty: use the robot_description topic"),
        DeclareLaunchArgument(
            "config", default_value=default_config,
            description="parameters YAML (name in the installed share/mbs_dynamics/config or absolute path)"),
        DeclareLaunchArgument("namespace", default_value="", description=namespace_description),
        DeclareLaunchArgument(
            "loops", default_value="",
            description="closed loops: YAML file with a 'loops:' list (empty: none/config's)"),
        DeclareLaunchArgument(
            "actuated", default_value="",
            description="with loops: motor joints, comma-separated (empty: config's/chosen)"),
    ]


def loop_parameters(context):
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


def node_parameters(context, extra=()):
    """The node's parameter list: the ``config`` YAML (a bare name is looked up in the package's
    ``config/``), then ``extra`` dicts, the URDF of ``robot_description_file`` as
    ``robot_description`` (a string: launch_ros must not parse it as YAML), the loops."""
    urdf_file = LaunchConfiguration("robot_description_file").perform(context)
    config = LaunchConfiguration("config").perform(context)
    if config and not os.path.isabs(config):
        share = FindPackageShare("mbs_dynamics").perform(context)
        config = os.path.join(share, "config", config)
    parameters = [config] if config else []
    parameters.extend(extra)
    if urdf_file:
        with open(urdf_file, encoding="utf-8") as f:
            parameters.append({"robot_description": ParameterValue(f.read(), value_type=str)})
    parameters.extend(loop_parameters(context))
    return parameters
