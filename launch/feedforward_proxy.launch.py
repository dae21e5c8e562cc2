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

from launch import LaunchDescription
from launch.actions import OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from mbs_dynamics.ros.launch_args import common_arguments, node_parameters


def _node(context):
    return [Node(
        package="mbs_dynamics",
        executable="feedforward_proxy",
        name="feedforward_proxy",
        namespace=LaunchConfiguration("namespace"),
        output="screen",
        emulate_tty=True,
        parameters=node_parameters(context),
    )]


def generate_launch_description():
    return LaunchDescription(common_arguments("feedforward_proxy.yaml", "proxy namespace") + [
        OpaqueFunction(function=_node),
    ])
