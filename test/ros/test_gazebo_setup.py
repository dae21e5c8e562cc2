"""gazebo.launch.py's URDF preparation (plain Python, no ROS, no Gazebo): gz_ros2_control's
``<ros2_control>`` block and plugin tag added to a plain URDF, hostile names escaped."""

import math
import xml.etree.ElementTree as ET

import pytest

import mbs_dynamics as mbs
from mbs_dynamics import data
from mbs_dynamics.ros.gazebo_setup import HARDWARE_PLUGIN, SYSTEM_PLUGIN, gazebo_description


def _arm7():
    urdf = open(data.robot("arm7"), encoding="utf-8").read()
    return urdf, mbs.load_urdf(urdf)


def test_block_has_every_joint_with_effort_command_and_state_interfaces():
    urdf, robot = _arm7()
    q0 = [0.1 * i for i in range(robot.n)]
    out = ET.fromstring(gazebo_description(urdf, robot.joint_names, q0,
                                           robot.model.effort_limit, "/tmp/c.yaml"))
    (rc,) = out.findall("ros2_control")
    assert rc.find("hardware/plugin").text == HARDWARE_PLUGIN
    joints = rc.findall("joint")
    assert [j.get("name") for j in joints] == list(robot.joint_names)
    for j, q, eff in zip(joints, q0, robot.model.effort_limit):
        assert [c.get("name") for c in j.findall("command_interface")] == ["effort"]
        assert [s.get("name") for s in j.findall("state_interface")] == [
            "position", "velocity", "effort"]
        assert float(j.find("state_interface/param").text) == q
        lims = {p.get("name"): float(p.text) for p in j.findall("command_interface/param")}
        assert lims == ({"min": -eff, "max": eff} if math.isfinite(eff) else {})
    (plugin,) = [p for g in out.findall("gazebo") for p in g.findall("plugin")]
    assert (plugin.get("filename"), plugin.get("name")) == SYSTEM_PLUGIN
    assert plugin.find("parameters").text == "/tmp/c.yaml"
    # the robot itself is untouched: it loads and has the same joints
    again = mbs.load_urdf(ET.tostring(out, encoding="unicode"))
    assert again.joint_names == robot.joint_names


def test_an_existing_block_is_replaced_not_doubled():
    urdf, robot = _arm7()
    once = gazebo_description(urdf, robot.joint_names, [0.0] * robot.n,
                              robot.model.effort_limit, "a.yaml")
    twice = ET.fromstring(gazebo_description(once, robot.joint_names, [0.0] * robot.n,
                                             robot.model.effort_limit, "b.yaml"))
    assert len(twice.findall("ros2_control")) == 1
    plugins = [p for g in twice.findall("gazebo") for p in g.findall("plugin")]
    assert [p.find("parameters").text for p in plugins] == ["b.yaml"]


def test_hostile_names_and_paths_are_escaped():
    name = 'j"/><plugin>evil</plugin><x a="'
    urdf = (f'<robot name="r"><link name="base"/><link name="l"><inertial><mass value="1"/>'
            f'<inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>'
            f'<joint name="{name.replace(chr(34), "&quot;").replace("<", "&lt;").replace(">", "&gt;")}"'
            f' type="continuous"><parent link="base"/><child link="l"/><axis xyz="0 0 1"/>'
            f'</joint></robot>')
    robot = mbs.load_urdf(urdf)
    assert robot.joint_names == (name,)
    path = '/tmp/x</parameters><plugin filename="evil"/>.yaml'
    out = ET.fromstring(gazebo_description(urdf, robot.joint_names, [0.0], [math.inf], path))
    assert [j.get("name") for j in out.findall("ros2_control/joint")] == [name]
    plugins = [p for g in out.findall("gazebo") for p in g.findall("plugin")]
    assert len(plugins) == 1 and plugins[0].find("parameters").text == path


@pytest.mark.parametrize("args", [
    (["a", "b"], [0.0], [1.0, 1.0]),
    (["a"], [math.nan], [1.0]),
])
def test_bad_sizes_and_values_are_refused(args):
    urdf, _ = _arm7()
    with pytest.raises(ValueError, match="gazebo_description"):
        gazebo_description(urdf, *args, "c.yaml")


def test_not_xml_is_a_clear_error():
    with pytest.raises(ValueError, match="not XML"):
        gazebo_description("<robot", ["a"], [0.0], [1.0], "c.yaml")
