"""The whole loop without Gazebo: sim_node + feedforward_node + a trajectory publisher.

    ros2 launch mbs_dynamics demo.launch.py                  # rigid arm7
    ros2 launch mbs_dynamics demo.launch.py actuator:=sea    # series-elastic arm7

* ``sim_node`` simulates the bundled arm7 (mbs_dynamics/data/robots/arm7.urdf) at 1 kHz, publishes
  ``/joint_states`` and ``/clock`` (simulated time);
* ``feedforward_node`` (``use_sim_time: true``) reads ``/joint_states`` and publishes, for rigid
  joints, ``~/feedforward`` (q_d, q'_d, τ) and, for SEA, ``~/motor_reference`` (θ_d, θ'_d, τ_m);
* ``sim_node`` takes that JointState as its ``reference``: command = effort + a small PD (the gains
  of ``mbs-dynamics demo``), i.e. the same loop as the CLI demo, over ROS topics;
* after ``delay`` seconds ``ros2 topic pub --once`` sends the bundled C⁴ trajectory
  (data/trajectories/arm7_demo.yaml) to ``/feedforward_node/joint_trajectory``.

Watch it with ``ros2 topic echo /joint_states`` or PlotJuggler (``/joint_states/position`` vs
``/feedforward_node/feedforward/position``). Until the feedforward node publishes, the simulated
joints are braked.
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, ExecuteProcess, OpaqueFunction, TimerAction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue


def _setup(context):
    import mbs_dynamics as mbs
    from mbs_dynamics import demo
    from mbs_dynamics.control.trajectory import Trajectory

    actuator_kind = LaunchConfiguration("actuator").perform(context)
    if actuator_kind not in ("rigid", "sea"):
        raise RuntimeError(f"actuator must be rigid or sea, got {actuator_kind!r}")
    urdf_file, traj_file = demo.BUNDLED["arm7"]
    urdf = urdf_file.read_text()
    robot = mbs.load_urdf(urdf)
    traj = Trajectory.load(traj_file).reorder(robot.joint_names)
    q0 = traj.sample(0.0)[0]
    actuator = None if actuator_kind == "rigid" else demo.sea_actuator("arm7", robot, traj)
    kp, kd = demo.pd_gains(robot, q0, actuator, demo.demo_poses(traj), 1e-3)  # as the CLI demo

    act_params = {"actuator.type": actuator_kind}
    if actuator is not None:
        act_params.update({
            "actuator.stiffness": [float(x) for x in actuator.stiffness],
            "actuator.motor_inertia": [float(x) for x in actuator.motor_inertia],
            "actuator.motor_damping": [float(x) for x in actuator.motor_damping],
        })
    description = ParameterValue(urdf, value_type=str)
    sim = Node(
        package="mbs_dynamics", executable="sim_node", name="sim_node", output="screen",
        parameters=[{
            "robot_description": description,
            "rate": 1000.0,
            "substeps": 1 if actuator is None else 4,   # as mbs-dynamics demo
            "publish_clock": True,
            "initial_positions": [float(x) for x in q0],
            "kp": [float(x) for x in kp],
            "kd": [float(x) for x in kd],
            "command_timeout": 0.5,
            **act_params,
        }],
        remappings=[("reference", "/feedforward_node/feedforward" if actuator is None
                     else "/feedforward_node/motor_reference")],
    )
    feedforward = Node(
        package="mbs_dynamics", executable="feedforward_node", name="feedforward_node",
        output="screen",
        parameters=[{
            "robot_description": description,
            "use_sim_time": True,
            "control_rate": 1000.0,
            "joint_state_timeout": 0.1,
            **act_params,
        }],
        remappings=[("joint_states", "/joint_states")],
    )
    publish = TimerAction(
        period=float(LaunchConfiguration("delay").perform(context)),
        actions=[ExecuteProcess(
            cmd=["ros2", "topic", "pub", "--once", "-w", "1",
                 "/feedforward_node/joint_trajectory", "trajectory_msgs/msg/JointTrajectory",
                 demo.trajectory_message_yaml(traj)],
            output="screen")],
    )
    return [sim, feedforward, publish]


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("actuator", default_value="rigid",
                              description="rigid or sea (series-elastic arm7)"),
        DeclareLaunchArgument("delay", default_value="3.0",
                              description="seconds before the trajectory is sent"),
        OpaqueFunction(function=_setup),
    ])
