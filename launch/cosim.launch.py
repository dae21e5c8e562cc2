"""Co-simulation inside ros2_control: MuJoCo as the hardware, joint_trajectory_controller (JTC)
as the controller, feedforward_proxy in front of it.

    ros2 launch mbs_dynamics cosim.launch.py robot_description_file:=/path/robot.urdf \\
        actuator:=rigid|sea actuator_config:=/path/sea.yaml feedforward:=true|false \\
        controllers_file:=/path/controllers.yaml use_sim_time:=true

Needs the package ``mbs_dynamics_mujoco`` (this repository's ``mbs_dynamics_mujoco/`` folder,
built with ``colcon build --base-paths . mbs_dynamics_mujoco``) and the ``mujoco`` Python
package. What it starts:

1. ``robot_state_publisher`` with the URDF plus a ``<ros2_control>`` block for the hardware
   ``mbs_dynamics_mujoco/MujocoSystem`` (:mod:`mbs_dynamics.sim.mujoco_model`: the MuJoCo model
   is derived from the URDF — its inertias, no geometry, no damping, friction, armature or
   limits; for ``actuator:=sea`` a rotor (inertia B, damping D_m) and a spring K per joint);
2. ``ros2_control_node`` (the controller manager) at the controllers file's ``update_rate``
   (1000 Hz when absent) and the spawners of ``joint_state_broadcaster`` and
   ``joint_trajectory_controller`` (gains from the controllers file; for ``sea`` JTC commands
   ``[position, effort]`` = θ_d and τ_m to the simulated drive);
3. ``feedforward_proxy`` (its ``config``, default ``feedforward_proxy.yaml``, then: ``output``
   effort (rigid) or motor (sea), the ``actuator.*`` keys, ``feedforward``); goals go to
   ``/feedforward_proxy/follow_joint_trajectory``.

Arguments (besides ``config``, ``namespace``, ``loops``, ``actuated`` of the other launch files;
closed loops are refused by the co-simulation with a message):

* ``robot_description_file``: URDF (empty: the bundled arm7);
* ``actuator``: ``rigid`` or ``sea`` (sets ``actuator.type``);
* ``actuator_config``: a parameters YAML with an ``actuator:`` section under any node key (as
  ``config/sea_arm.yaml``): K, B, D_m and the drive's ``motor_loop`` gains ``p``, ``d``;
* ``feedforward``: ``false``: the proxy forwards the same resampled goals without effort (PD /
  motor loop alone at the same gains; SEA: θ_d = q_d, τ_m = 0);
* ``controllers_file``: ros2_control's controllers file (default
  ``config/jtc_feedforward_example.yaml``);
* ``use_sim_time``: ``true`` (default): the hardware publishes ``/clock`` and advances MuJoCo by
  exactly one period per cycle, the controller manager runs in lockstep on that clock;
* ``real_time_factor``: simulated seconds per wall second (0: as fast as possible; sim time only);
* ``substeps``: MuJoCo steps per control period (default 4, RK4);
* ``controller``: ``jtc`` (default: JTC + ``feedforward_proxy`` as above) or ``flatness``
  (``actuator:=sea`` only): no JTC and no proxy; ``feedforward_node`` with ``flatness.enabled``
  computes the motor torque u from ``/joint_states`` (link side) and the hardware's
  ``motor_states`` (motor side) once per joint state, and
  ``effort_controllers/JointGroupEffortController`` (``flatness_effort_controller``) writes it to
  the elastic joints' effort interface (their position command unclaimed: no motor loop).
  Trajectories go to ``/feedforward_node/joint_trajectory`` (trajectory_msgs/JointTrajectory);
  gains from ``flatness_bandwidth`` [rad/s] and ``flatness_damping``
  (``(s² + 2ζωs + ω²)²`` per joint). ``lockstep`` (default ``true``, sim time only): the
  hardware waits each cycle for the torque computed from the state it just published, so the
  delay is one period under any load; the node is told that delay (``flatness.delay``).

The files generated for the run (``/tmp/mbs_cosim_*``) are removed when the launch shuts down.

The motor side of elastic joints (θ, θ', motor torque) is published on
``/mujocosystem/motor_states`` (sensor_msgs/JointState); ``/joint_states`` is the link side.
"""

import os
import shutil
import tempfile

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction, RegisterEventHandler
from launch.event_handlers import OnShutdown
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare

from mbs_dynamics.ros.launch_args import common_arguments, node_parameters

_TRUE = ("true", "True", "1", "yes")
_BOOL = _TRUE + ("false", "False", "0", "no")


def _bool(context, name):
    value = LaunchConfiguration(name).perform(context).strip()
    if value not in _BOOL:
        raise RuntimeError(f"{name}:={value}: expected true or false")
    return value in _TRUE


def _yaml_file(path, what):
    import yaml

    if not os.path.isfile(path):
        raise RuntimeError(f"{what}:={path}: no such file")
    with open(path, encoding="utf-8") as f:
        try:
            return yaml.safe_load(f)
        except yaml.YAMLError as exc:
            raise RuntimeError(f"{what}:={path}: not YAML ({exc})") from None


def _share_config(context, name):
    value = LaunchConfiguration(name).perform(context).strip()
    if value and not os.path.isabs(value) and not os.path.isfile(value):
        value = os.path.join(FindPackageShare("mbs_dynamics").perform(context), "config", value)
    return value


def _model_files(urdf_file, folder, actuator, gravity, loops, options):
    """mbs_dynamics.sim.mujoco_model.write_cosim_files, here when this interpreter has the
    ``mujoco`` package, else in the interpreter mbs_dynamics_mujoco was built with (recorded in
    its share folder; ``MUJOCO_PYTHON`` overrides): ``ros2 launch`` runs the interpreter ROS was
    built with, which need not have ``mujoco``."""
    import json
    import subprocess

    try:
        import mujoco  # noqa: F401
    except ImportError:
        python = os.environ.get("MUJOCO_PYTHON", "").strip()
        if not python:
            try:
                from ament_index_python.packages import get_package_share_directory
                share = get_package_share_directory("mbs_dynamics_mujoco")
                with open(os.path.join(share, "mujoco_python"), encoding="utf-8") as f:
                    python = f.read().strip()
            except Exception:  # noqa: BLE001 - not installed: said below
                python = ""
        if not python:
            raise RuntimeError(
                "cosim.launch.py: this Python has no 'mujoco' package and no interpreter with "
                "it is known (build mbs_dynamics_mujoco, or set MUJOCO_PYTHON)") from None
        request = dict(options, urdf_file=urdf_file, folder=folder, actuator=actuator,
                       gravity=list(gravity), loops=loops)
        path = os.path.join(folder, "request.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(request, f)
        # run in the model's folder: ``-m`` puts the working directory first on sys.path,
        # and a source checkout there (uncompiled kernels) would shadow the installed package
        done = subprocess.run([python, "-m", "mbs_dynamics.sim.mujoco_model", path],
                              capture_output=True, text=True, check=False, cwd=folder)
        if done.returncode != 0:
            raise RuntimeError(f"cosim.launch.py: {done.stderr.strip()}") from None
        with open(os.path.join(folder, "joints.json"), encoding="utf-8") as f:
            return json.load(f)
    from mbs_dynamics.sim.mujoco_model import CosimModelError, write_cosim_files

    with open(urdf_file, encoding="utf-8") as f:
        urdf = f.read()
    try:
        return write_cosim_files(urdf, folder, actuator, gravity=gravity, loops=loops,
                                 **options)
    except CosimModelError as exc:
        raise RuntimeError(f"cosim.launch.py: {exc}") from None


def _setup(context):
    import math

    from mbs_dynamics.control.actuators import flatten_params
    from mbs_dynamics.ros.cosim_setup import find_actuator_section
    from mbs_dynamics.ros.parameters import read_loops_parameter

    urdf_file = LaunchConfiguration("robot_description_file").perform(context).strip()
    if not urdf_file:
        from mbs_dynamics import demo
        urdf_file = str(demo.BUNDLED["arm7"][0])
        context.launch_configurations["robot_description_file"] = urdf_file
    kind = LaunchConfiguration("actuator").perform(context).strip()
    if kind not in ("rigid", "sea"):
        raise RuntimeError(f"actuator:={kind}: expected rigid or sea")
    controller = LaunchConfiguration("controller").perform(context).strip()
    if controller not in ("jtc", "flatness"):
        raise RuntimeError(f"controller:={controller}: expected jtc or flatness")
    if controller == "flatness" and kind != "sea":
        raise RuntimeError("controller:=flatness needs actuator:=sea (the flatness controller "
                           "commands the motor torque of elastic joints)")
    feedforward = _bool(context, "feedforward")
    use_sim_time = _bool(context, "use_sim_time")
    act_file = _share_config(context, "actuator_config")
    actuator = {}
    if act_file:
        try:
            actuator = find_actuator_section(_yaml_file(act_file, "actuator_config"), act_file)
        except ValueError as exc:
            raise RuntimeError(str(exc)) from None
    actuator["type"] = kind

    proxy_cfg = _share_config(context, "config")
    flat = flatten_params(_yaml_file(proxy_cfg, "config") or {}) if proxy_cfg else {}
    flat = {k.rsplit("ros__parameters.", 1)[-1]: v for k, v in flat.items()}
    gravity = flat.get("gravity", [0.0, 0.0, -9.81])
    loops = LaunchConfiguration("loops").perform(context).strip() or flat.get("loops") or ""
    try:
        loops = read_loops_parameter(loops)
    except ValueError as exc:
        raise RuntimeError(str(exc)) from None

    rtf = float(LaunchConfiguration("real_time_factor").perform(context))
    substeps = int(LaunchConfiguration("substeps").perform(context))
    if not (math.isfinite(rtf) and rtf >= 0.0) or not 1 <= substeps <= 1000:
        raise RuntimeError("real_time_factor must be >= 0 and substeps 1..1000")
    controllers_file = _share_config(context, "controllers_file")
    ctrl_doc = _yaml_file(controllers_file, "controllers_file")
    tmp = tempfile.mkdtemp(prefix="mbs_cosim_")
    try:
        return _start(context, tmp, urdf_file, kind, controller, feedforward, use_sim_time,
                      actuator, gravity, loops, rtf, substeps, controllers_file, ctrl_doc)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _start(context, tmp, urdf_file, kind, controller, feedforward, use_sim_time, actuator,
           gravity, loops, rtf, substeps, controllers_file, ctrl_doc):
    """The nodes of :func:`_setup`, with the generated files in ``tmp`` (removed when the
    launch shuts down)."""
    import yaml

    from mbs_dynamics.ros.cosim_setup import (FLATNESS_CONTROLLER, controllers_config,
                                              flatness_controllers_config,
                                              flatness_node_overrides, proxy_overrides)

    cleanup = RegisterEventHandler(OnShutdown(
        on_shutdown=lambda event, ctx: shutil.rmtree(tmp, ignore_errors=True)))
    options = {"substeps": substeps, "real_time_factor": rtf, "publish_clock": use_sim_time}
    if controller == "flatness" and use_sim_time and _bool(context, "lockstep"):
        options["lockstep_topic"] = f"/{FLATNESS_CONTROLLER}/commands"
    files = _model_files(urdf_file, tmp, {"actuator": actuator}, gravity, loops, options)
    try:
        if controller == "flatness":
            ctrl_doc, rate = flatness_controllers_config(ctrl_doc, files["joints"], use_sim_time)
            flat_params = flatness_node_overrides(
                actuator, files["joints"],
                float(LaunchConfiguration("flatness_bandwidth").perform(context)),
                float(LaunchConfiguration("flatness_damping").perform(context)), rate,
                use_sim_time)
        else:
            ctrl_doc, _ = controllers_config(ctrl_doc, files["joints"], files["elastic"],
                                             use_sim_time)
    except ValueError as exc:
        raise RuntimeError(f"cosim.launch.py: {exc}") from None
    with open(files["description"], encoding="utf-8") as f:
        description = f.read()
    ctrl_path = os.path.join(tmp, "controllers.yaml")
    with open(ctrl_path, "w", encoding="utf-8") as f:
        yaml.safe_dump(ctrl_doc, f, sort_keys=False)

    sim = {"use_sim_time": use_sim_time}
    state_publisher = Node(
        package="robot_state_publisher", executable="robot_state_publisher", output="screen",
        parameters=[{"robot_description": ParameterValue(description, value_type=str)}, sim])
    control_node = Node(
        package="controller_manager", executable="ros2_control_node", output="screen",
        parameters=[ctrl_path, sim])
    spawners = [Node(package="controller_manager", executable="spawner", output="screen",
                     arguments=[name, "--param-file", ctrl_path,
                                "--controller-manager-timeout", "120"])
                for name in ("joint_state_broadcaster", FLATNESS_CONTROLLER
                             if controller == "flatness" else "joint_trajectory_controller")]
    if controller == "flatness":
        with open(urdf_file, encoding="utf-8") as f:
            plain = f.read()
        node = Node(
            package="mbs_dynamics", executable="feedforward_node", name="feedforward_node",
            namespace=LaunchConfiguration("namespace"), output="screen", emulate_tty=True,
            parameters=[{"robot_description": ParameterValue(plain, value_type=str),
                         "gravity": [float(g) for g in gravity]}, flat_params],
            remappings=[("joint_states", "/joint_states"),
                        ("motor_states", "/mujocosystem/motor_states"),
                        ("~/motor_torque", f"/{FLATNESS_CONTROLLER}/commands")])
        return [cleanup, state_publisher, control_node, *spawners, node]
    proxy = Node(
        package="mbs_dynamics", executable="feedforward_proxy", name="feedforward_proxy",
        namespace=LaunchConfiguration("namespace"), output="screen", emulate_tty=True,
        parameters=node_parameters(context, extra=[proxy_overrides(
            actuator, feedforward, use_sim_time)]))
    return [cleanup, state_publisher, control_node, *spawners, proxy]


def generate_launch_description():
    return LaunchDescription(common_arguments("feedforward_proxy.yaml", "proxy namespace") + [
        DeclareLaunchArgument("actuator", default_value="rigid", description="rigid or sea"),
        DeclareLaunchArgument(
            "actuator_config", default_value="",
            description="YAML with an 'actuator:' section (any node key), e.g. sea_arm.yaml"),
        DeclareLaunchArgument(
            "feedforward", default_value="true",
            description="false: goals forwarded without effort (feedback alone, same gains)"),
        DeclareLaunchArgument(
            "controllers_file", default_value="jtc_feedforward_example.yaml",
            description="ros2_control controllers file (name under config/ or path)"),
        DeclareLaunchArgument("use_sim_time", default_value="true",
                              description="the hardware publishes /clock; all nodes use it"),
        DeclareLaunchArgument("real_time_factor", default_value="1.0",
                              description="sim seconds per wall second (0: as fast as possible)"),
        DeclareLaunchArgument("substeps", default_value="4",
                              description="MuJoCo RK4 steps per control period"),
        DeclareLaunchArgument(
            "controller", default_value="jtc",
            description="jtc: JTC + feedforward_proxy; flatness: feedforward_node's flatness "
                        "motor torque through an effort controller (actuator:=sea)"),
        DeclareLaunchArgument("flatness_bandwidth", default_value="20.0",
                              description="controller:=flatness: error bandwidth w [rad/s]"),
        DeclareLaunchArgument(
            "lockstep", default_value="true",
            description="controller:=flatness in sim time: the hardware waits each cycle for "
                        "the motor torque computed from its state (one period of delay, always)"),
        DeclareLaunchArgument("flatness_damping", default_value="1.0",
                              description="controller:=flatness: damping zeta of the poles"),
        OpaqueFunction(function=_setup),
    ])
