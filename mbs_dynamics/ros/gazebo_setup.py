"""What ``launch/gazebo.launch.py`` prepares before it starts Gazebo (plain Python, no ROS): the
URDF with gz_ros2_control's ``<ros2_control>`` block and Gazebo plugin added.

The arrangement is the co-simulation's (:mod:`mbs_dynamics.ros.cosim_setup`): the hardware is
``gz_ros2_control/GazeboSimSystem`` with an ``effort`` command interface and ``position`` /
``velocity`` state interfaces per joint, joint_trajectory_controller (JTC) commands the efforts
(its PID plus the feedforward effort the proxy puts in each trajectory point), and
``feedforward_proxy`` sits in front of JTC. Gazebo's joints are rigid: series-elastic joints are
simulated only by the MuJoCo co-simulation (``cosim.launch.py``).
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

__all__ = ["HARDWARE_PLUGIN", "SYSTEM_PLUGIN", "gazebo_description"]

HARDWARE_PLUGIN = "gz_ros2_control/GazeboSimSystem"
SYSTEM_PLUGIN = ("gz_ros2_control-system", "gz_ros2_control::GazeboSimROS2ControlPlugin")


def gazebo_description(urdf, joints, q0, effort_limits, controllers_file, mimic=None):
    """The URDF with the ``<ros2_control>`` block for Gazebo and the ``<gazebo>`` plugin tag.

    The robot's root link is fixed to Gazebo's world (a ``world`` link and a fixed joint are
    added unless the root already is ``world``): this package's models have a fixed base, and
    Gazebo would otherwise simulate the URDF as a free body standing on the ground plane.

    A mimic joint (URDF ``<mimic>``: q_m = multiplier·q + offset) is listed with state
    interfaces only: ros2_control reads its ``<mimic>`` from the URDF and gz_ros2_control's
    ``GazeboSimSystem`` keeps it on q_m by commanding its velocity every cycle (a kinematic
    constraint; the mimicking body's inertia still loads the robot). JTC commands the
    independent joints only.

    Args:
        urdf: URDF XML text; an existing ``<ros2_control>`` element or gz_ros2_control plugin
            is replaced.
        joints: the movable joints JTC commands (URDF names).
        q0: (n,) initial joint positions [rad or m] (the state interfaces' ``initial_value``).
        effort_limits: (n,) |effort| bounds of the command interfaces (inf: unbounded).
        controllers_file: path of the controllers YAML gz_ros2_control's controller manager
            loads.
        mimic: ``{mimic joint: (independent joint, multiplier, offset)}`` (a MimicRobot's
            ``mimic_joints``); their initial positions follow from ``q0``.

    Returns:
        str: the URDF text. Names and values are written by ElementTree (escaped), never
        spliced into the text.

    Raises:
        ValueError: sizes differ, a value is not finite (``q0``), a mimic joint follows a joint
            that is not in ``joints``, or the URDF is not XML.
    """
    joints = list(joints)
    q0 = [float(x) for x in q0]
    effort_limits = [float(x) for x in effort_limits]
    if not (len(joints) == len(q0) == len(effort_limits)):
        raise ValueError(f"gazebo_description: {len(joints)} joints, {len(q0)} initial positions,"
                         f" {len(effort_limits)} effort limits")
    if not all(math.isfinite(x) for x in q0):
        raise ValueError("gazebo_description: initial positions must be finite")
    followers = []
    for name, (leader, multiplier, offset) in dict(mimic or {}).items():
        if name in joints:
            raise ValueError(f"gazebo_description: mimic joint '{name}' is also a commanded "
                             "joint")
        if leader not in joints:
            raise ValueError(f"gazebo_description: mimic joint '{name}' follows '{leader}', "
                             "which is not one of the commanded joints")
        followers.append((name, float(multiplier) * q0[joints.index(leader)] + float(offset)))
    try:
        root = ET.fromstring(urdf)
    except ET.ParseError as exc:
        raise ValueError(f"gazebo_description: the URDF is not XML ({exc})") from None
    _fix_to_world(root)
    for el in root.findall("ros2_control"):
        root.remove(el)
    for g in root.findall("gazebo"):
        if any(p.get("filename") == SYSTEM_PLUGIN[0] for p in g.findall("plugin")):
            root.remove(g)
    rc = ET.SubElement(root, "ros2_control", {"name": "GazeboSimSystem", "type": "system"})
    ET.SubElement(ET.SubElement(rc, "hardware"), "plugin").text = HARDWARE_PLUGIN
    for name, q, eff in zip(joints, q0, effort_limits):
        j = ET.SubElement(rc, "joint", {"name": name})
        cmd = ET.SubElement(j, "command_interface", {"name": "effort"})
        if math.isfinite(eff) and eff > 0:
            ET.SubElement(cmd, "param", {"name": "min"}).text = repr(-eff)
            ET.SubElement(cmd, "param", {"name": "max"}).text = repr(eff)
        _state_interfaces(j, q, "position", "velocity", "effort")
    for name, q in followers:
        _state_interfaces(ET.SubElement(rc, "joint", {"name": name}), q, "position", "velocity")
    plugin = ET.SubElement(ET.SubElement(root, "gazebo"), "plugin",
                           {"filename": SYSTEM_PLUGIN[0], "name": SYSTEM_PLUGIN[1]})
    ET.SubElement(plugin, "parameters").text = str(controllers_file)
    return ET.tostring(root, encoding="unicode")


def _fix_to_world(root):
    """Add ``<link name="world"/>`` and a fixed joint from it to the URDF's root link (Gazebo's
    convention for a robot bolted to the world), unless the root link already is ``world``."""
    links = [el.get("name") for el in root.findall("link")]
    children = {el.get("link") for el in root.findall("joint/child")}
    roots = [name for name in links if name not in children]
    if len(roots) != 1 or roots[0] == "world":
        return                  # several roots: not a tree (loads refuse it); or already fixed
    names = {el.get("name") for el in root.findall("joint")}
    joint = "world_fixed"
    while joint in names:
        joint = "_" + joint
    ET.SubElement(root, "link", {"name": "world"})
    fixed = ET.SubElement(root, "joint", {"name": joint, "type": "fixed"})
    ET.SubElement(fixed, "parent", {"link": "world"})
    ET.SubElement(fixed, "child", {"link": roots[0]})


def _state_interfaces(joint, q0, *names):
    """``<state_interface>`` elements under ``joint``; the position one starts at ``q0``."""
    for name in names:
        el = ET.SubElement(joint, "state_interface", {"name": name})
        if name == "position":
            ET.SubElement(el, "param", {"name": "initial_value"}).text = repr(q0)
