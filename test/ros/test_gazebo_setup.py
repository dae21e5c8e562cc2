"""gazebo.launch.py's URDF preparation (plain Python, no ROS, no Gazebo): gz_ros2_control's
``<ros2_control>`` block and plugin tag added to a plain URDF, hostile names escaped."""

import math
import xml.etree.ElementTree as ET

import numpy as np
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


_MIMIC = """<robot name="gripper"><link name="base"/>
  <link name="a"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="f1"><inertial><mass value="0.1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="f2"><inertial><mass value="0.1"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="j" type="revolute"><parent link="base"/><child link="a"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="10" velocity="1"/></joint>
  <joint name="f1" type="prismatic"><parent link="a"/><child link="f1"/><axis xyz="0 1 0"/>
    <limit lower="0" upper="0.04" effort="20" velocity="0.2"/></joint>
  <joint name="f2" type="prismatic"><parent link="a"/><child link="f2"/><axis xyz="0 -1 0"/>
    <limit lower="-0.04" upper="0.04" effort="20" velocity="0.2"/>
    <mimic joint="f1" multiplier="-2" offset="0.01"/></joint>
</robot>"""


def test_mimic_joints_get_state_interfaces_only_and_their_initial_position():
    robot = mbs.load_urdf(_MIMIC)
    assert robot.joint_names == ("j", "f1")
    out = ET.fromstring(gazebo_description(_MIMIC, robot.joint_names, [0.5, 0.02],
                                           robot.effort_limit, "c.yaml",
                                           mimic=robot.mimic_joints))
    joints = out.findall("ros2_control/joint")
    assert [j.get("name") for j in joints] == ["j", "f1", "f2"]
    f2 = joints[2]
    # ros2_control refuses command interfaces on an active mimic joint
    assert f2.findall("command_interface") == []
    assert [s.get("name") for s in f2.findall("state_interface")] == ["position", "velocity"]
    assert float(f2.find("state_interface/param").text) == pytest.approx(-2 * 0.02 + 0.01)
    # the URDF keeps its <mimic>: ros2_control reads multiplier and offset from it
    (m,) = [j.find("mimic") for j in out.findall("joint") if j.get("name") == "f2"]
    assert m.get("joint") == "f1"


def test_a_mimic_joint_of_a_joint_not_commanded_is_refused():
    with pytest.raises(ValueError, match="mimic joint 'f2' follows 'f1'"):
        gazebo_description(_MIMIC, ["j"], [0.0], [10.0], "c.yaml",
                           mimic={"f2": ("f1", -2.0, 0.01)})
    with pytest.raises(ValueError, match="mimic joint 'f2' is also a commanded joint"):
        gazebo_description(_MIMIC, ["j", "f1", "f2"], [0.0] * 3, [10.0] * 3, "c.yaml",
                           mimic={"f2": ("f1", -2.0, 0.01)})


def _root_and_world_joint(xml):
    out = ET.fromstring(xml)
    fixed = [j for j in out.findall("joint") if j.find("parent").get("link") == "world"]
    return out, fixed


def test_a_robot_without_world_link_is_fixed_to_the_world():
    robot = mbs.load_urdf(_MIMIC)
    out, fixed = _root_and_world_joint(gazebo_description(
        _MIMIC, robot.joint_names, [0.0, 0.0], robot.effort_limit, "c.yaml",
        mimic=robot.mimic_joints))
    assert len(fixed) == 1 and fixed[0].get("type") == "fixed"
    assert fixed[0].find("child").get("link") == "base"
    assert [el.get("name") for el in out.findall("link")].count("world") == 1
    # the same robot for the package: the added link is the root, the joints unchanged
    again = mbs.load_urdf(ET.tostring(out, encoding="unicode"))
    assert again.joint_names == robot.joint_names
    np.testing.assert_allclose(again.mass_matrix([0.3, 0.01]), robot.mass_matrix([0.3, 0.01]),
                               rtol=1e-14, atol=1e-14)


def test_a_robot_already_on_world_gets_no_second_world_and_names_do_not_clash():
    urdf, robot = _arm7()          # arm7's root is "world"
    out, fixed = _root_and_world_joint(gazebo_description(
        urdf, robot.joint_names, [0.0] * robot.n, robot.effort_limit, "c.yaml"))
    assert [el.get("name") for el in out.findall("link")].count("world") == 1
    assert len(fixed) == 1 and fixed[0].get("name") == "arm7_world_joint"
    clash = _MIMIC.replace('<joint name="j"', '<joint name="world_fixed"')
    robot = mbs.load_urdf(clash)
    out, fixed = _root_and_world_joint(gazebo_description(
        clash, robot.joint_names, [0.0, 0.0], robot.effort_limit, "c.yaml",
        mimic=robot.mimic_joints))
    names = [j.get("name") for j in out.findall("joint")]
    assert len(names) == len(set(names)) and len(fixed) == 1
