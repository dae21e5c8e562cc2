"""Launch the mbs_dynamics feedforward node.

Arguments:
  robot_description_file  URDF file to load into the ``robot_description`` parameter. Empty
                          (default): the node takes the model from the ``robot_description`` topic
                          of a running robot_state_publisher.
  config                  parameters YAML: a file name under this package's ``config/``
                          (``rigid_arm.yaml``, ``sea_arm.yaml``) or an absolute path.
  namespace               namespace of the node (its topics follow it).
  use_sim_time            true: follow ``/clock`` (Gazebo, bag replay).
  joint_states_topic      where to read sensor_msgs/JointState (default ``/joint_states``).
  loops                   closed loops: a YAML file with a ``loops:`` list (relative paths are
                          taken from the current directory); sets the ``loops`` parameter.
                          Empty (default): the config's value (none in the bundled ones).
  actuated                with ``loops``: the motor joints, comma-separated (``j1,j2``); sets
                          the ``actuated`` parameter. Empty: the config's value, else chosen.

Example::

  ros2 launch mbs_dynamics feedforward.launch.py robot_description_file:=/path/robot.urdf \
      config:=sea_arm.yaml

  # a closed-loop mechanism: inputs and outputs name the actuated joints
  ros2 launch mbs_dynamics feedforward.launch.py robot_description_file:=/path/fourbar.urdf \
      loops:=/path/fourbar_loops.yaml actuated:=j_crank

Feeding ros2_control's effort controller: remap ``~/torque`` onto the controller's command
topic, e.g. add to the Node below ``remappings=[("~/torque",
"/effort_controller/commands")]``, with, in the controller_manager YAML::

  controller_manager:
    ros__parameters:
      update_rate: 1000
      effort_controller:
        type: effort_controllers/JointGroupEffortController
  effort_controller:
    ros__parameters:
      joints: [joint1, joint2, joint3, joint4, joint5, joint6, joint7]  # same order as `joints`

JointGroupEffortController keeps applying its last command when no new one arrives; the node
publishes nothing when its inputs go stale, so add your own watchdog if that matters.
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from mbs_dynamics.ros.launch_args import common_arguments, node_parameters


def _node(context):
    use_sim_time = LaunchConfiguration("use_sim_time").perform(context).lower() in (
        "true", "1", "yes")
    return [Node(
        package="mbs_dynamics",
        executable="feedforward_node",
        name="feedforward_node",
        namespace=LaunchConfiguration("namespace"),
        output="screen",
        emulate_tty=True,
        parameters=node_parameters(context, [{"use_sim_time": use_sim_time}]),
        remappings=[("joint_states", LaunchConfiguration("joint_states_topic"))],
    )]


def generate_launch_description():
    return LaunchDescription(common_arguments("rigid_arm.yaml") + [
        DeclareLaunchArgument("use_sim_time", default_value="false",
                              description="use /clock (simulation or bag replay)"),
        DeclareLaunchArgument("joint_states_topic", default_value="/joint_states",
                              description="sensor_msgs/JointState input"),
        OpaqueFunction(function=_node),
    ])
