"""The feedforward node's parameters: names, defaults, descriptions, ranges, and their checks.

Plain data and pure functions (no ``rclpy``), so the configuration files and the checks are tested
without ROS, and one table feeds the node's ``ParameterDescriptor`` s and the README.
"""

from __future__ import annotations

import math

__all__ = ["NODE_PARAMETERS", "RUNTIME_PARAMETERS", "parameter_table", "check_config",
           "check_runtime"]

#: name → (default, description, read_only, (min, max) or None). ``joints`` has no default value
#: (declared as an unset string array: empty means "every movable joint").
NODE_PARAMETERS = {
    "robot_description": (
        "", "URDF XML of the robot. Empty: take it from the robot_description topic "
            "(std_msgs/String, transient local), as robot_state_publisher publishes it; every "
            "new message there swaps the model.", True, None),
    "joints": (
        [], "Controlled joints, in output order (a subset of the model's movable joints). "
            "Unset or empty: every movable joint in URDF order.", True, None),
    "base_link": (
        "", "Link fixed to the world; gravity is expressed in it. Empty: the URDF root.",
        True, None),
    "tip_link": (
        "", "If set, model only the chain base_link -> tip_link.", True, None),
    "control_rate": (
        1000.0, "Output rate [Hz]; 0 publishes once per received joint state.", False,
        (0.0, 10000.0)),
    "gravity": (
        [0.0, 0.0, -9.81], "Gravitational acceleration [m/s^2] in the base_link frame "
                           "(3 values).", True, None),
    "joint_state_timeout": (
        0.1, "Publish nothing while the latest joint state is older than this [s]; 0 "
             "disables the check.", False, (0.0, 3600.0)),
}

#: Parameters that may change while the node runs (``ros2 param set``).
RUNTIME_PARAMETERS = ("control_rate", "joint_state_timeout")


def parameter_table():
    """Return every node parameter, the actuator ones included.

    Returns:
        dict: name → (default, description, read_only, (min, max) or None).
    """
    from ..actuators import ACTUATOR_PARAMETERS

    table = dict(NODE_PARAMETERS)
    for name, (default, text) in ACTUATOR_PARAMETERS.items():
        table[name] = (default, text, True, None)
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
        (str or None), ``control_rate``/``joint_state_timeout`` (float), ``gravity`` (3-tuple)
        and ``actuator`` (dict of the ``actuator.*`` values, as ``actuator_from_params`` takes).

    Raises:
        ValueError: naming the parameter and the problem.
    """
    from ..actuators import actuator_from_params

    table = parameter_table()
    unknown = sorted(k for k in values if k not in table and k != "use_sim_time")
    if unknown:
        raise ValueError(f"unknown parameter(s) {unknown}")

    def get(name):
        v = values.get(name)
        return table[name][0] if v is None else v

    cfg = {}
    for key in ("robot_description", "base_link", "tip_link"):
        v = get(key)
        if not isinstance(v, str):
            raise ValueError(f"{key} must be a string")
        cfg[key] = v if key == "robot_description" else (v or None)
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
    try:
        gravity = [float(g) for g in get("gravity")]
    except (TypeError, ValueError):
        gravity = []
    if len(gravity) != 3 or not all(math.isfinite(g) for g in gravity):
        raise ValueError(f"gravity must be 3 finite numbers, got {get('gravity')}")
    cfg["gravity"] = tuple(gravity)
    cfg["actuator"] = {k: _plain(get(k)) for k in table if k.startswith("actuator.")}
    kind = cfg["actuator"]["actuator.type"]
    if kind not in ("rigid", "sea", "vsa"):
        raise ValueError(f"actuator.type must be rigid, sea or vsa, got {kind!r}")
    if joints:   # the joint count is known: check the actuator parameters now
        actuator_from_params(cfg["actuator"], len(joints))
    return cfg


def _plain(value):
    """Parameter value → plain Python (array.array and tuples → list of float)."""
    if isinstance(value, (list, tuple)) or hasattr(value, "typecode"):
        return [float(x) for x in value]
    return value
