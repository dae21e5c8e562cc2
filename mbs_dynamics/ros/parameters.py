"""The feedforward node's parameters: names, defaults, descriptions, ranges, and their checks.

Plain data and pure functions (no ``rclpy``), so the configuration files and the checks are tested
without ROS, and one table feeds the node's ``ParameterDescriptor`` s and the README.
"""

from __future__ import annotations

import math

__all__ = ["NODE_PARAMETERS", "RUNTIME_PARAMETERS", "PROXY_PARAMETERS", "parameter_table",
           "proxy_parameter_table", "check_config", "check_proxy_config", "check_runtime",
           "parse_locked_joints", "STRING_ARRAY_PARAMETERS", "MAX_SUSTAINED_RATE",
           "PROXY_BOOLEANS", "LOOP_PARAMETERS", "read_loops_parameter", "load_robot",
           "joint_name_problem", "rest_positions", "FLATNESS_PARAMETERS",
           "DOUBLE_ARRAY_PARAMETERS"]

#: Parameters declared as string arrays without a default (rclpy would type an empty list as a
#: byte array).
STRING_ARRAY_PARAMETERS = ("joints", "locked_joints", "actuated")

#: Parameters declared as double arrays without a default (same reason).
DOUBLE_ARRAY_PARAMETERS = ("flatness.poles",)

#: Above this control_rate [Hz] a Python control loop is not expected to keep up on a typical
#: PC (measured: ~1 kHz sustained on 2 cores with Cyclone DDS); the node warns at start and reports
#: the achieved rate. Hardware-rate feedforward belongs in joint_trajectory_controller (see
#: feedforward_proxy).
MAX_SUSTAINED_RATE = 1000.0

_LOCKED_TEXT = (
    "Joints to model as rigid at a fixed position, each 'name' (at 0) or 'name:position' "
    "[rad or m]; e.g. gripper fingers or mimic joints the model cannot otherwise load.")

#: The closed-loop parameters shared by feedforward_node, feedforward_proxy and sim_node
#: (issue 19): the robot is built as ``load_urdf(robot_description, loops=..., actuated=...)``.
LOOP_PARAMETERS = {
    "loops": (
        "", "Closed loops of the URDF tree (a ClosedLoopRobot): the path of a YAML file with a "
            "'loops:' list (as load_urdf(loops=...) and the CLI's --loops), or that YAML text "
            "itself (a value with a newline, or starting with 'loops:', '[' or '{'). Empty: no "
            "loops. Read once at start-up.", True, None),
    "actuated": (
        [], "With loops: the actuated (motor) joints, the independent coordinates; the joint "
            "order of every input and output is theirs. Unset or empty: chosen by the package "
            "(logged).", True, None),
}

#: name → (default, description, read_only, (min, max) or None). ``joints`` has no default value
#: (declared as an unset string array: empty means "every movable joint").
NODE_PARAMETERS = {
    "robot_description": (
        "", "URDF XML of the robot. Empty: take it from the robot_description topic "
            "(std_msgs/String, transient local), as robot_state_publisher publishes it; every "
            "new message there swaps the model.", True, None),
    "joints": (
        [], "Controlled joints, in output order (a subset of the model's movable joints; with "
            "loops, of the actuated joints). Unset or empty: every movable (actuated) joint in "
            "URDF order.", True, None),
    "base_link": (
        "", "Link fixed to the world; gravity is expressed in it. Empty: the URDF root.",
        True, None),
    "tip_link": (
        "", "If set, model only the chain base_link -> tip_link.", True, None),
    "locked_joints": ([], _LOCKED_TEXT, True, None),
    "control_rate": (
        1000.0, "Output rate [Hz]; 0 publishes once per received joint state. Above 1000 Hz a "
                "Python loop rarely keeps up: the achieved rate is in /diagnostics and a WARN "
                "is logged when it falls short.", False, (0.0, 2000.0)),
    "realtime_priority": (
        0, "SCHED_FIFO priority (1..99) of the control thread; 0 keeps the normal scheduler. "
           "Needs the rtprio limit (e.g. /etc/security/limits.d); when not permitted the node "
           "logs it once and runs with normal priority.", True, None),
    "gravity": (
        [0.0, 0.0, -9.81], "Gravitational acceleration [m/s^2] in the base_link frame "
                           "(3 values).", True, None),
    "joint_state_timeout": (
        0.1, "Publish nothing while the latest joint state is older than this [s]; 0 "
             "disables the check. With flatness.enabled the same bound applies to the motor "
             "states.", False, (0.0, 3600.0)),
    **LOOP_PARAMETERS,
}

#: The flatness controller's parameters of ``feedforward_node`` (issue 28): the motor torque u of
#: :class:`~mbs_dynamics.control.flatness.FlatnessController` on ``~/motor_torque``.
FLATNESS_PARAMETERS = {
    "flatness.enabled": (
        False, "Publish the flatness-based feedback linearisation's motor torque u on "
               "~/motor_torque, computed each cycle from the measured link state (joint_states), "
               "the measured motor state (motor_states) and the desired trajectory. Needs "
               "actuator.type sea or vsa, every movable joint in joints, no loops, and exactly "
               "one of flatness.poles and flatness.bandwidth.", True, None),
    "flatness.poles": (
        [], "Closed-loop poles p [1/s] of the link error, roots at s = -p of "
            "(s + p1)(s + p2)(s + p3)(s + p4): 4 values shared by every joint, or 4 per joint in "
            "joints order (4 n values); each > 0.", True, None),
    "flatness.bandwidth": (
        0.0, "Instead of poles: the error polynomial (s^2 + 2 zeta w s + w^2)^2 with w this "
             "value [rad/s] > 0 and zeta flatness.damping; 0: use flatness.poles.", True,
        (0.0, 1e6)),
    "flatness.damping": (
        1.0, "zeta of flatness.bandwidth, > 0 (1: a quadruple real pole at -w).", True,
        (0.0, 1e3)),
    "flatness.sample_time": (
        -1.0, "Period T [s] of the zero-order hold the command goes through; u leads by T/2 "
              "(SEA only). Negative: 1/control_rate at start-up (0 with control_rate 0, and for "
              "a VSA); 0: no lead (a continuous-time law).", True, (-1.0, 1.0)),
    "flatness.delay": (
        0.0, "Transport delay [s] from the states a cycle reads to the time its u is applied "
             "(e.g. one controller period when the torque reaches the drive in the next cycle, "
             "as through a topic to a ros2_control effort controller); the lead becomes "
             "(T/2 + delay) du/dt. SEA only.", True, (0.0, 1.0)),
}

#: Parameters that may change while the node runs (``ros2 param set``).
RUNTIME_PARAMETERS = ("control_rate", "joint_state_timeout")


#: name → (default, description, read_only, (min, max) or None) of ``feedforward_proxy``.
PROXY_PARAMETERS = {
    "robot_description": NODE_PARAMETERS["robot_description"],
    "base_link": NODE_PARAMETERS["base_link"],
    "tip_link": NODE_PARAMETERS["tip_link"],
    "locked_joints": NODE_PARAMETERS["locked_joints"],
    "gravity": NODE_PARAMETERS["gravity"],
    **LOOP_PARAMETERS,
    "output": (
        "effort", "'effort': forward the spline's positions/velocities/accelerations and effort "
                  "= inverse dynamics tau; 'motor' (SEA/VSA drives whose joint interface "
                  "commands the motor side): positions/velocities/accelerations = theta_d and "
                  "its derivatives, effort = motor torque tau_m.", True, None),
    "sample_period": (
        0.01, "Spacing of the forwarded points [s]; the original waypoint times are kept. 0: "
              "forward the waypoints only (filled).", True, (0.0, 10.0)),
    "controller_action": (
        "/joint_trajectory_controller/follow_joint_trajectory",
        "control_msgs/action/FollowJointTrajectory server the enriched goals go to.", True,
        None),
    "controller_topic": (
        "/joint_trajectory_controller/joint_trajectory",
        "trajectory_msgs/JointTrajectory topic the enriched ~/joint_trajectory messages go to.",
        True, None),
    "server_timeout": (
        5.0, "How long a goal waits for the controller's action server [s] before it is "
             "answered INVALID_GOAL.", True, (0.0, 3600.0)),
    "controller_node": (
        "", "Node whose command_interfaces parameter is read (rcl_interfaces GetParameters) "
            "before each goal, to know whether it takes effort. Empty: controller_action "
            "without its last component (/joint_trajectory_controller).", True, None),
    "parameter_timeout": (
        1.0, "How long to wait for the controller's command_interfaces [s]; on timeout the goal "
             "is enriched and forwarded, and a rejection is explained as far as known.", True,
        (0.0, 60.0)),
    "pass_through_without_effort": (
        True, "When the controller's command_interfaces lack 'effort' (JTC then rejects any "
              "trajectory with effort): true forwards goals unenriched (effort fields "
              "removed) and says so in the result's error_string; false answers them "
              "INVALID_GOAL with the reason.", True, None),
    "enrich_lead_in": (
        True, "A goal whose first point has time_from_start > 0: insert the measured state "
              "(joint_states) at t = 0 and fill JTC's interpolation from it to the first point "
              "with inverse dynamics (output effort only). false: forward as received (JTC then "
              "ramps the effort linearly over that lead-in).", True, None),
    "joint_state_timeout": (
        0.5, "How long [s] to wait for a joint_states message when the lead-in or a hold needs "
             "the measured state (joint_states is subscribed to only then; only a message "
             "received after the need counts); 0: 1 s.", True, (0.0, 3600.0)),
    "hold_after_stop": (
        True, "After a goal is cancelled or aborted (not preempted), send the controller a hold "
              "goal at the measured position with effort = gravity torque g(q) (output motor: "
              "θ = q + K⁻¹g(q) with τ_m = g(q)), so the drive does not hold a stale or zero "
              "effort.", True, None),
    "hold_on_start": (
        False, "Send such a hold goal once at start-up, as soon as the model, a joint state "
               "and the controller are available.", True, None),
    "feedforward": (
        True, "false: forward every goal resampled like an enriched one (positions, velocities, "
              "accelerations of q_d; output motor too: θ_d = q_d) but without effort, and send "
              "no hold goals: the controller's feedback alone at the same gains (the baseline "
              "the feedforward is measured against).", True, None),
}

#: Boolean ``feedforward_proxy`` parameters.
PROXY_BOOLEANS = ("pass_through_without_effort", "enrich_lead_in", "hold_after_stop",
                  "hold_on_start", "feedforward")


def proxy_parameter_table():
    """Return every ``feedforward_proxy`` parameter, the actuator ones included.

    Returns:
        dict: name → (default, description, read_only, (min, max) or None).
    """
    from ..control.actuators import ACTUATOR_PARAMETERS

    table = dict(PROXY_PARAMETERS)
    for name, (default, text) in ACTUATOR_PARAMETERS.items():
        table[name] = (default, text, True, None)
    return table


def parse_locked_joints(entries, what="locked_joints"):
    """``['finger', 'wrist:0.3']`` → ``{'finger': 0.0, 'wrist': 0.3}``.

    Raises:
        ValueError: naming the bad entry.
    """
    locked = {}
    for entry in entries or []:
        if not isinstance(entry, str) or not entry.strip():
            raise ValueError(f"{what} entries must be 'name' or 'name:position', got {entry!r}")
        name, sep, value = entry.partition(":")
        name = name.strip()
        try:
            position = float(value) if sep else 0.0
        except ValueError:
            raise ValueError(f"{what} entry {entry!r}: position {value!r} is not a "
                             "number") from None
        if not name or not math.isfinite(position):
            raise ValueError(f"{what} entry {entry!r} must be 'name' or 'name:position' with "
                             "a finite position")
        if name in locked:
            raise ValueError(f"{what} names joint {name!r} twice")
        locked[name] = position
    return locked


def _common(cfg, get):
    """Checks shared by the node and the proxy: strings, locked joints, gravity, actuator."""
    for key in ("robot_description", "base_link", "tip_link"):
        v = get(key)
        if not isinstance(v, str):
            raise ValueError(f"{key} must be a string")
        cfg[key] = v if key == "robot_description" else (v or None)
    cfg["locked_joints"] = parse_locked_joints(list(get("locked_joints") or []))
    try:
        gravity = [float(g) for g in get("gravity")]
    except (TypeError, ValueError, OverflowError):
        gravity = []
    if len(gravity) != 3 or not all(math.isfinite(g) for g in gravity):
        raise ValueError(f"gravity must be 3 finite numbers, got {get('gravity')}")
    cfg["gravity"] = tuple(gravity)
    _loop_config(cfg, get)


def _loop_config(cfg, get):
    """``loops`` → list of loop dicts or None; ``actuated`` → list of names or None."""
    cfg["loops"] = read_loops_parameter(get("loops"))
    actuated = list(get("actuated") or [])
    if not all(isinstance(j, str) for j in actuated):
        raise ValueError(f"actuated must be joint names, got {actuated}")
    actuated = [j.strip() for j in actuated if j.strip()]
    if len(set(actuated)) != len(actuated):
        raise ValueError(f"actuated names a joint twice: {actuated}")
    if actuated and cfg["loops"] is None:
        raise ValueError(f"actuated {actuated} needs loops (the parameter loops is empty)")
    cfg["actuated"] = actuated or None


def _looks_like_yaml(text):
    return "\n" in text or text.lstrip().startswith(("loops:", "[", "{"))


def read_loops_parameter(value):
    """The ``loops`` parameter → list of loop dicts, or None when empty.

    Args:
        value: "" (no loops); the path of a YAML file with a ``loops:`` list (or a bare list);
            or that YAML text itself: a value containing a newline or starting with
            ``loops:``, ``[`` or ``{`` (what a ``--params-file`` multi-line string or a launch
            argument holds). Files and text pass the package's YAML limits
            (:mod:`mbs_dynamics.model.limits`).

    Raises:
        ValueError: naming the parameter: not a string, no such file, not YAML, no ``loops:``
            list. The loops themselves are checked against the model by ``load_urdf``.
    """
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"loops must be a string (a YAML file path or YAML text), got "
                         f"{type(value).__name__}")
    text = value.strip()
    if not text:
        return None
    from ..loops.spec import read_loops
    from ..model.limits import parse_yaml

    if _looks_like_yaml(text):
        try:
            doc = parse_yaml(value, "loops parameter (YAML text)")
        except ValueError as exc:
            raise ValueError(f"loops: {exc}") from None
        if isinstance(doc, dict):
            if "loops" not in doc:
                raise ValueError("loops: the YAML text has no 'loops:' list")
            doc = doc["loops"]
        if not isinstance(doc, list):
            raise ValueError("loops: the YAML text must hold a 'loops:' list of loop mappings")
        loops = doc
    else:
        import os
        if not os.path.isfile(text):
            raise ValueError(f"loops: no such file '{text}' (give the path of a YAML file with a "
                             "'loops:' list, or that YAML text)")
        try:
            loops = read_loops(text)
        except ValueError as exc:
            raise ValueError(str(exc) if str(exc).startswith("loops") else
                             f"loops: {exc}") from None
    if not loops:
        raise ValueError("loops: the 'loops:' list is empty (leave the parameter empty for no "
                         "loops)")
    return loops


def load_robot(urdf, cfg):
    """The robot of a node: ``load_urdf`` of the URDF text with the checked parameters
    (``base_link``, ``tip_link``, ``locked_joints``, ``gravity``, ``loops``, ``actuated``).

    Returns:
        (robot, note): ``note`` names the actuated joints the package chose when ``loops`` is
        set without ``actuated`` ("" otherwise), for the node's log.

    Raises:
        ValueError: the URDF or the loops do not load (the loader's message), or it has a
            ``universal`` or ``cylindrical`` joint (a URDF extension of this package that
            robot_state_publisher and ros2_control cannot read), a ``planar`` joint (one
            joint name for three coordinates, which a JointState cannot carry), or a
            ``floating`` joint inside an open tree (a closed-loop robot may have it as a
            passive joint).
    """
    import warnings

    from ..loader import load_urdf
    from ..loops.robot import LoopWarning
    from ..model.urdf import extension_joints, robot_element

    ext = extension_joints(urdf)
    if ext:
        name, kind = ext[0]
        raise ValueError(f"joint '{name}' is of type '{kind}', an mbs_dynamics URDF extension "
                         "that the ROS nodes cannot take (robot_state_publisher and "
                         "ros2_control read the URDF with urdfdom, which refuses it): publish "
                         "Robot.to_urdf() instead, which writes it as 1-DOF joints")
    planar = [el.get("name", "") for el in robot_element(urdf).findall("joint")
              if el.get("type") == "planar"]
    if planar:
        raise ValueError(f"joint '{planar[0]}' is of type 'planar', which the ROS nodes cannot "
                         "take: a JointState carries one position per joint name and a planar "
                         "joint has three (x, y, θ), which robot_state_publisher (KDL) and "
                         "ros2_control do not know either; publish Robot.to_urdf() instead, "
                         "which writes it as 1-DOF joints")

    loops = cfg.get("loops")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        robot = load_urdf(urdf, base_link=cfg.get("base_link"), tip_link=cfg.get("tip_link"),
                          locked_joints=cfg.get("locked_joints") or None,
                          gravity=cfg.get("gravity", (0.0, 0.0, -9.81)),
                          loops=loops, actuated=cfg.get("actuated") if loops else None)
    lie = getattr(robot, "lie_joints", None)
    if lie and not getattr(robot, "loop_names", ()):
        # in a closed loop they are passive (LieClosedLoopRobot): the nodes' joints are the
        # actuated 1-DOF ones, which a JointState carries; in an open tree they are coordinates
        name = next(iter(lie))
        raise ValueError(f"joint '{name}' is of type '{lie[name]}' inside the tree: the ROS "
                         "nodes do not take spherical or floating joints of an open tree (a "
                         "JointState carries one position per joint); inside a closed loop "
                         "(the loops parameter) they may be passive joints")
    note = ""
    for w in caught:
        if issubclass(w.category, LoopWarning):
            note = (f"loops {list(robot.loop_names)}: {w.message}; set the parameter actuated "
                    "to choose them")
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return robot, note


def rest_positions(robot):
    """(n,) actuated positions where a node warms its kernels up and sim_node starts by default:
    zero, or for a closed-loop robot the actuated part of its assembly of the URDF's zero
    (``q_assembled``; the zero of the actuated joints alone need not close the loops)."""
    import numpy as np

    if hasattr(robot, "q_assembled"):   # q columns (a passive ball or free joint: ≠ v's)
        index = getattr(robot, "actuated_q_index", robot.actuated_index)
        return np.asarray(robot.q_assembled, dtype=float)[index]
    return np.zeros(robot.n)


def joint_name_problem(robot, names, what):
    """Why ``names`` are not all joints of ``robot.joint_names`` (None if they are): a dependent
    joint of a closed-loop robot (it follows the actuated ones) is said to be one."""
    known = set(robot.joint_names)
    unknown = [j for j in names if j not in known]
    if not unknown:
        return None
    dependent = set(getattr(robot, "dependent_joint_names", ()))
    dep = [j for j in unknown if j in dependent]
    other = [j for j in unknown if j not in dependent]
    parts = []
    if dep:
        parts.append(f"{dep} are dependent joints of the closed loops (they follow the actuated "
                     f"joints {list(robot.joint_names)}; name only those)")
    if other:
        parts.append(f"{other} are not movable joints of the model (it has "
                     f"{list(robot.joint_names)})")
    return f"{what}: " + "; ".join(parts)


def _actuator_config(cfg, table, get):
    cfg["actuator"] = {k: _plain(get(k)) for k in table if k.startswith("actuator.")}
    kind = cfg["actuator"]["actuator.type"]
    if kind not in ("rigid", "sea", "vsa"):
        raise ValueError(f"actuator.type must be rigid, sea or vsa, got {kind!r}")


def _reader(values, table):
    """``get(name)``: the given value, or the table's default; unknown names are an error."""
    unknown = sorted(k for k in values if k not in table and k != "use_sim_time")
    if unknown:
        raise ValueError(f"unknown parameter(s) {unknown}")

    def get(name):
        v = values.get(name)
        return table[name][0] if v is None else v
    return get


def check_proxy_config(values):
    """Check and normalise ``feedforward_proxy`` parameter values.

    Args:
        values: parameter name → value; missing names take their defaults.

    Returns:
        dict with the keys of :func:`check_config` that apply, plus ``output`` (str),
        ``sample_period``/``server_timeout``/``parameter_timeout``/``joint_state_timeout``
        (float), ``controller_action``/``controller_topic``/``controller_node`` (str) and the
        booleans of :data:`PROXY_BOOLEANS`.

    Raises:
        ValueError: naming the parameter and the problem.
    """
    table = proxy_parameter_table()
    get = _reader(values, table)
    cfg = {}
    _common(cfg, get)
    _actuator_config(cfg, table, get)
    output = get("output")
    if output not in ("effort", "motor"):
        raise ValueError(f"output must be 'effort' or 'motor', got {output!r}")
    if output == "motor" and cfg["actuator"]["actuator.type"] == "rigid":
        raise ValueError("output 'motor' needs actuator.type sea or vsa (a rigid joint has no "
                         "motor side); use output 'effort'")
    cfg["output"] = output
    for key in ("sample_period", "server_timeout", "parameter_timeout", "joint_state_timeout"):
        v = get(key)
        lo, hi = table[key][3]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not (
                math.isfinite(v) and lo <= v <= hi):
            raise ValueError(f"{key} must be a number between {lo:g} and {hi:g}, got {v!r}")
        cfg[key] = float(v)
    for key in ("controller_action", "controller_topic"):
        v = get(key)
        if not isinstance(v, str) or not v.strip():
            raise ValueError(f"{key} must be a non-empty name, got {v!r}")
        cfg[key] = v.strip()
    v = get("controller_node")
    if not isinstance(v, str):
        raise ValueError(f"controller_node must be a string, got {v!r}")
    cfg["controller_node"] = v.strip()
    for key in PROXY_BOOLEANS:
        v = get(key)
        if not isinstance(v, bool):
            raise ValueError(f"{key} must be true or false, got {v!r}")
        cfg[key] = v
    return cfg


def parameter_table():
    """Return every node parameter, the actuator ones included.

    Returns:
        dict: name → (default, description, read_only, (min, max) or None).
    """
    from ..control.actuators import ACTUATOR_PARAMETERS

    table = dict(NODE_PARAMETERS)
    for name, (default, text) in ACTUATOR_PARAMETERS.items():
        table[name] = (default, text, True, None)
    table.update(FLATNESS_PARAMETERS)
    return table


def check_runtime(name, value):
    """Reason why ``value`` is not acceptable for runtime parameter ``name``, or None."""
    if name in RUNTIME_PARAMETERS:
        lo, hi = NODE_PARAMETERS[name][3]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"{name} must be a number"
        if not (math.isfinite(value) and lo <= value <= hi):
            return f"{name} must be between {lo:g} and {hi:g}, got {value}"
    return None


def check_config(values):
    """Check and normalise parameter values (a flat dict, as the node reads them).

    Args:
        values: parameter name → value; missing names take their defaults.

    Returns:
        dict with ``robot_description`` (str), ``joints`` (list), ``base_link``/``tip_link``
        (str or None), ``locked_joints`` (dict name → position), ``control_rate``/
        ``joint_state_timeout`` (float), ``realtime_priority`` (int), ``gravity`` (3-tuple)
        and ``actuator`` (dict of the ``actuator.*`` values, as ``actuator_from_params`` takes).

    Raises:
        ValueError: naming the parameter and the problem.
    """
    from ..control.actuators import actuator_from_params

    table = parameter_table()
    get = _reader(values, table)
    cfg = {}
    _common(cfg, get)
    joints = list(get("joints") or [])
    if not all(isinstance(j, str) and j for j in joints):
        raise ValueError(f"joints must be non-empty names, got {joints}")
    if len(set(joints)) != len(joints):
        raise ValueError(f"joints contains duplicates: {joints}")
    cfg["joints"] = joints
    for key in RUNTIME_PARAMETERS:
        reason = check_runtime(key, get(key))
        if reason:
            raise ValueError(reason)
        cfg[key] = float(get(key))
    prio = get("realtime_priority")
    if isinstance(prio, bool) or not isinstance(prio, int) or not 0 <= prio <= 99:
        raise ValueError(f"realtime_priority must be an integer 0..99 (0 = off), got {prio!r}")
    cfg["realtime_priority"] = int(prio)
    _actuator_config(cfg, table, get)
    if joints:   # the joint count is known: check the actuator parameters now
        actuator_from_params(cfg["actuator"], len(joints))
    cfg["flatness"] = _flatness_config(cfg, get)
    return cfg


def _flatness_config(cfg, get):
    """The ``flatness.*`` parameters → None (off) or a dict of FlatnessController keywords
    (``poles`` (k, 4) in ``joints`` order or (4,), or ``bandwidth``/``damping``; and
    ``sample_time``, None = from control_rate). Raises ValueError naming the parameter."""
    enabled = get("flatness.enabled")
    if not isinstance(enabled, bool):
        raise ValueError(f"flatness.enabled must be true or false, got {enabled!r}")
    if not enabled:
        return None
    kind = cfg["actuator"]["actuator.type"]
    if kind == "rigid":
        raise ValueError("flatness.enabled needs elastic joints: set actuator.type to sea (with "
                         "actuator.stiffness and actuator.motor_inertia) or vsa; a rigid robot "
                         "has no motor side to command")
    if cfg["loops"] is not None:
        raise ValueError("flatness.enabled: the flatness controller models a tree robot; it is "
                         "not available with loops")
    try:
        poles = [float(p) for p in (get("flatness.poles") or [])]
    except (TypeError, ValueError):
        raise ValueError(f"flatness.poles must be numbers, got {get('flatness.poles')!r}") \
            from None
    numbers = {}
    for key in ("flatness.bandwidth", "flatness.damping", "flatness.sample_time",
                "flatness.delay"):
        v = get(key)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ValueError(f"{key} must be a finite number, got {v!r}")
        numbers[key] = float(v)
    bandwidth = numbers["flatness.bandwidth"]
    if bandwidth < 0:
        raise ValueError(f"flatness.bandwidth must be > 0 rad/s (0: use flatness.poles), got "
                         f"{bandwidth:g}")
    if bool(poles) == (bandwidth > 0):
        raise ValueError("flatness.enabled: give exactly one of flatness.poles (4 values, or 4 "
                         "per joint) and flatness.bandwidth (> 0)")
    out = {}
    if poles:
        if len(poles) % 4:
            raise ValueError(f"flatness.poles must hold 4 values (shared) or 4 per joint, got "
                             f"{len(poles)}")
        bad = [p for p in poles if not (math.isfinite(p) and p > 0)]
        if bad:
            raise ValueError(f"flatness.poles {bad}: every pole p must be > 0 (the closed-loop "
                             "root s = -p must lie in the left half-plane)")
        joints = cfg["joints"]
        if len(poles) > 4 and joints and len(poles) != 4 * len(joints):
            raise ValueError(f"flatness.poles has {len(poles)} values: give 4 (shared) or "
                             f"4 per joint ({4 * len(joints)} for the {len(joints)} joints)")
        out["poles"] = poles[:4] if len(poles) == 4 else [poles[i:i + 4] for i in
                                                           range(0, len(poles), 4)]
    else:
        damping = numbers["flatness.damping"]
        if not damping > 0:
            raise ValueError(f"flatness.damping must be > 0, got {damping:g}")
        out["bandwidth"] = bandwidth
        out["damping"] = damping
    T = numbers["flatness.sample_time"]
    if T > 1.0:
        raise ValueError(f"flatness.sample_time must be <= 1 s, got {T:g}")
    delay = numbers["flatness.delay"]
    if not 0.0 <= delay <= 1.0:
        raise ValueError(f"flatness.delay must be between 0 and 1 s, got {delay:g}")
    if kind == "vsa" and (T > 0 or delay > 0):
        raise ValueError("flatness.sample_time > 0 and flatness.delay > 0 (the lead) are "
                         "implemented for SEA only; leave them at their defaults for a VSA")
    out["sample_time"] = None if T < 0 else T
    out["delay"] = delay
    return out


def _plain(value):
    """Parameter value → plain Python (array.array and tuples → list of float)."""
    if isinstance(value, (list, tuple)) or hasattr(value, "typecode"):
        return [float(x) for x in value]
    return value
