"""What ``launch/cosim.launch.py`` prepares before it starts anything (plain Python, no ROS):
the ``actuator:`` section of a parameters file, the controllers file it hands the controller
manager and the spawners, and the proxy's parameters.

The controllers file is the user's (``controller_manager`` with ``joint_state_broadcaster`` and
``joint_trajectory_controller``, gains included); the co-simulation only fills what the hardware
decides: the update rate when absent (1000 Hz), ``use_sim_time``, JTC's ``joints`` when absent
(the hardware's joints), and for series-elastic joints JTC's ``command_interfaces`` =
``[position, effort]`` (θ_d to the drive, τ_m as its feedforward) with ``state_interfaces`` =
``[position, velocity]``; rigid joints keep the file's (``[effort]``: PID + feedforward effort).
"""

from __future__ import annotations

import copy
import math

__all__ = ["find_actuator_section", "controllers_config", "proxy_overrides",
           "flatness_controllers_config", "flatness_node_overrides", "actuator_overrides",
           "FLATNESS_CONTROLLER",
           "DEFAULT_UPDATE_RATE"]

DEFAULT_UPDATE_RATE = 1000


def find_actuator_section(doc, where="actuator_config"):
    """The ``actuator:`` mapping of a parameters YAML document, under whatever node key.

    Args:
        doc: the loaded YAML (a mapping).
        where: the file's name, for messages.

    Returns:
        dict: the nested ``actuator`` mapping ({} when ``doc`` is empty).

    Raises:
        ValueError: not a mapping, no ``actuator:`` section, or several different ones.
    """
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise ValueError(f"{where}: expected a YAML mapping with an 'actuator:' section")
    found = []

    def walk(node, depth):
        if depth > 8 or not isinstance(node, dict):
            return
        for key, value in node.items():
            if key == "actuator" and isinstance(value, dict):
                found.append(value)
            elif isinstance(value, dict):
                walk(value, depth + 1)
        flat = {k: v for k, v in node.items() if isinstance(k, str) and k.startswith("actuator.")}
        if flat:
            nested = {}
            for k, v in flat.items():
                cur = nested
                parts = k.split(".")[1:]
                for p in parts[:-1]:
                    cur = cur.setdefault(p, {})
                cur[parts[-1]] = v
            found.append(nested)

    walk(doc, 0)
    if not found:
        raise ValueError(f"{where}: no 'actuator:' section (e.g. actuator: {{type: sea, "
                         "stiffness: 3000.0, motor_inertia: 0.5}})")
    if any(f != found[0] for f in found[1:]):
        raise ValueError(f"{where}: several different 'actuator:' sections; keep one")
    return copy.deepcopy(found[0])


def _sections(doc, name):
    """The ``ros__parameters`` mappings of node ``name`` (plain, ``/name``, ``/**/name``)."""
    out = []
    for key, value in doc.items():
        if isinstance(key, str) and key.rsplit("/", 1)[-1] == name and isinstance(value, dict):
            params = value.setdefault("ros__parameters", {})
            if not isinstance(params, dict):
                raise ValueError(f"controllers file: {key}.ros__parameters is not a mapping")
            out.append(params)
    return out


def _controller_managers(doc, use_sim_time):
    """A copy of the controllers file and its ``controller_manager`` parameter mappings, each
    with ``update_rate`` (default :data:`DEFAULT_UPDATE_RATE`) and ``use_sim_time`` set."""
    if not isinstance(doc, dict):
        raise ValueError("controllers file: expected a YAML mapping")
    doc = copy.deepcopy(doc)
    cms = _sections(doc, "controller_manager")
    if not cms:
        raise ValueError("controllers file: no 'controller_manager:' section")
    for cm in cms:
        cm.setdefault("update_rate", DEFAULT_UPDATE_RATE)
        cm["use_sim_time"] = bool(use_sim_time)
    return doc, cms


def _update_rate(cms):
    rate = cms[-1]["update_rate"]
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 < rate <= 100000:
        raise ValueError(f"controllers file: update_rate must be a positive number, got {rate!r}")
    return rate


def controllers_config(doc, joints, elastic, use_sim_time=True):
    """The controllers file the co-simulation runs (a patched copy of ``doc``).

    Args:
        doc: the user's controllers YAML, loaded.
        joints: the hardware's joint names.
        elastic: True when the joints are series-elastic.
        use_sim_time: set on the controller manager and the two controllers.

    Returns:
        (doc, update_rate): the patched copy and the controller manager's rate [Hz].

    Raises:
        ValueError: no ``controller_manager`` / ``joint_trajectory_controller`` section, a
            controller type missing, or JTC naming joints the hardware does not have.
    """
    doc, cms = _controller_managers(doc, use_sim_time)
    for cm in cms:
        for name, kind in (("joint_state_broadcaster",
                            "joint_state_broadcaster/JointStateBroadcaster"),
                           ("joint_trajectory_controller",
                            "joint_trajectory_controller/JointTrajectoryController")):
            entry = cm.setdefault(name, {})
            if not isinstance(entry, dict):
                raise ValueError(f"controllers file: controller_manager.{name} must be a "
                                 "mapping with a 'type'")
            entry.setdefault("type", kind)
    rate = _update_rate(cms)
    jtcs = _sections(doc, "joint_trajectory_controller")
    if not jtcs:
        doc["joint_trajectory_controller"] = {"ros__parameters": {}}
        jtcs = _sections(doc, "joint_trajectory_controller")
    for jtc in jtcs:
        names = jtc.setdefault("joints", list(joints))
        unknown = [j for j in names if j not in joints]
        if unknown:
            raise ValueError(f"controllers file: joint_trajectory_controller.joints {unknown} "
                             f"are not joints of the hardware {list(joints)}")
        jtc["use_sim_time"] = bool(use_sim_time)
        if elastic:
            jtc["command_interfaces"] = ["position", "effort"]
        else:
            jtc.setdefault("command_interfaces", ["effort"])
        jtc["state_interfaces"] = ["position", "velocity"]
    for jsb in _sections(doc, "joint_state_broadcaster"):
        jsb["use_sim_time"] = bool(use_sim_time)
    return doc, int(rate)


def proxy_overrides(actuator, feedforward, use_sim_time=True):
    """The proxy's parameters set by the co-simulation (added after its config file).

    Args:
        actuator: the nested ``actuator`` mapping (its ``type`` decides ``output``).
        feedforward: False: goals are forwarded without effort (PD / motor loop alone).
        use_sim_time: the proxy's clock.

    Returns:
        dict of dotted parameter names → values (lists of floats for per-joint values);
        ``hold_on_start`` is on with feedforward.
    """
    out = actuator_overrides(actuator)
    kind = out.get("actuator.type", "rigid")
    out["output"] = "motor" if kind in ("sea", "vsa") else "effort"
    out["feedforward"] = bool(feedforward)
    # start from the feedforward's own equilibrium (g(q); SEA: θ = q + K⁻¹g, τ_m = g) rather
    # than from JTC's activation hold (PID / motor loop alone), so a first goal has no jump
    out["hold_on_start"] = bool(feedforward)
    out["use_sim_time"] = bool(use_sim_time)
    return out


#: Name of the forwarding effort controller of ``cosim.launch.py controller:=flatness``.
FLATNESS_CONTROLLER = "flatness_effort_controller"


def flatness_controllers_config(doc, joints, use_sim_time=True):
    """The controllers file of ``controller:=flatness`` (a patched copy of ``doc``): the
    controller manager (its ``update_rate``, 1000 Hz when absent) with ``joint_state_broadcaster``
    and :data:`FLATNESS_CONTROLLER`, an ``effort_controllers/JointGroupEffortController`` over
    ``joints`` that writes feedforward_node's ``~/motor_torque`` (its ``~/commands``) to the
    elastic joints' effort interface: the motor torque (their position command stays unclaimed,
    so the drive's motor loop is off).

    Args:
        doc: the user's controllers YAML, loaded (gains of other controllers are left alone).
        joints: the hardware's joint names.
        use_sim_time: set on the controller manager and the two controllers.

    Returns:
        (doc, update_rate).

    Raises:
        ValueError: no ``controller_manager`` section or a bad ``update_rate``.
    """
    doc, cms = _controller_managers(doc, use_sim_time)
    for cm in cms:
        cm.setdefault("joint_state_broadcaster", {}).setdefault(
            "type", "joint_state_broadcaster/JointStateBroadcaster")
        cm[FLATNESS_CONTROLLER] = {"type": "effort_controllers/JointGroupEffortController"}
    rate = _update_rate(cms)
    doc[FLATNESS_CONTROLLER] = {"ros__parameters": {
        "joints": list(joints), "interface_name": "effort", "use_sim_time": bool(use_sim_time)}}
    for jsb in _sections(doc, "joint_state_broadcaster"):
        jsb["use_sim_time"] = bool(use_sim_time)
    return doc, int(rate)


def actuator_overrides(actuator):
    """The nested ``actuator`` mapping as dotted ROS parameters (lists of floats, numbers as
    floats where the node declares floats)."""
    from ..control.actuators import flatten_params

    out = {}
    for key, value in flatten_params({"actuator": actuator}).items():
        if isinstance(value, (list, tuple)):
            out[key] = [float(x) for x in value]
        elif isinstance(value, int) and not isinstance(value, bool) and key not in (
                "actuator.vsa.max_iterations",):
            out[key] = float(value)
        else:
            out[key] = value
    return out


def flatness_node_overrides(actuator, joints, bandwidth, damping, update_rate,
                            use_sim_time=True):
    """feedforward_node's parameters in ``controller:=flatness``: the actuator, every hardware
    joint, one cycle per joint state (``control_rate: 0``, at the time of its stamp), the gains
    by bandwidth and damping, the hold lead of one controller period T and a transport delay
    ``flatness.delay`` of one period: the torque computed from the state the hardware read in
    cycle k reaches the effort controller in cycle k + 1 (the node is another process), so it
    is held over the period after next and the lead becomes 1.5 T (doc/guide/cosim.md).

    Raises:
        ValueError: the actuator is not ``sea``, or bandwidth/damping not > 0.
    """
    if actuator.get("type") != "sea":
        raise ValueError("controller:=flatness needs actuator:=sea (elastic joints: the "
                         "flatness controller commands the motor torque)")
    for name, v in (("flatness_bandwidth", bandwidth), ("flatness_damping", damping)):
        if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
            raise ValueError(f"{name} must be a number > 0, got {v!r}")
    out = actuator_overrides(actuator)
    out.update({"joints": list(joints), "control_rate": 0.0, "flatness.enabled": True,
                "flatness.bandwidth": float(bandwidth), "flatness.damping": float(damping),
                "flatness.sample_time": 1.0 / float(update_rate),
                "flatness.delay": 1.0 / float(update_rate),
                "use_sim_time": bool(use_sim_time)})
    return out
