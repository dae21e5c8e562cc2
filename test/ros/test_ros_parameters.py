"""ROS-free checks of the nodes' parameter tables, config files and launch files
(mbs_dynamics.ros.parameters is plain Python: these run in CI without ROS)."""
from __future__ import annotations

import ast
import math
from pathlib import Path

import numpy as np
import pytest
import yaml

import mbs_dynamics as mbs
from mbs_dynamics.control.enrich import TrajectoryEnricher
from mbs_dynamics.ros.parameters import (check_config, check_proxy_config, parse_locked_joints,
                                         proxy_parameter_table)

REPO = Path(__file__).resolve().parents[2]
ARM7 = REPO / "mbs_dynamics" / "data" / "robots" / "arm7.urdf"


def _flatten(d, prefix=""):
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def test_proxy_config_file_is_valid_and_serves_the_bundled_arm():
    doc = yaml.safe_load((REPO / "config" / "feedforward_proxy.yaml").read_text())
    assert list(doc) == ["/**/feedforward_proxy"]
    params = _flatten(doc["/**/feedforward_proxy"]["ros__parameters"])
    assert set(params) <= set(proxy_parameter_table())
    cfg = check_proxy_config(params)
    assert cfg["output"] == "effort" and cfg["sample_period"] == 0.01
    assert cfg["controller_action"] == "/joint_trajectory_controller/follow_joint_trajectory"
    robot = mbs.load_urdf(str(ARM7), gravity=cfg["gravity"])
    enr = TrajectoryEnricher(robot, output=cfg["output"], sample_period=cfg["sample_period"])
    q = np.zeros(robot.n)
    out = enr.enrich({"joint_names": list(robot.joint_names),
                      "points": [{"time_from_start": 0.0, "positions": q.tolist()},
                                 {"time_from_start": 1.0, "positions": (q + 0.2).tolist()}]})
    assert len(out) == 101


def test_jtc_example_commands_effort_and_matches_the_proxy():
    text = (REPO / "config" / "jtc_feedforward_example.yaml").read_text()
    doc = yaml.safe_load(text)
    jtc = doc["joint_trajectory_controller"]["ros__parameters"]
    assert jtc["command_interfaces"] == ["effort"]
    assert set(jtc["state_interfaces"]) == {"position", "velocity"}
    assert "command_interfaces: [position, effort]" in text      # the second configuration
    robot = mbs.load_urdf(str(ARM7))
    assert jtc["joints"] == list(robot.joint_names)
    assert set(jtc["gains"]) == set(jtc["joints"])
    proxy = _flatten(doc["/**/feedforward_proxy"]["ros__parameters"])
    cfg = check_proxy_config(proxy)
    assert cfg["controller_action"] == "/joint_trajectory_controller/follow_joint_trajectory"


@pytest.mark.parametrize("values, match", [
    ({"output": "torque"}, "output"),
    ({"output": "motor"}, "needs actuator.type sea or vsa"),
    ({"sample_period": -0.01}, "sample_period"),
    ({"sample_period": math.nan}, "sample_period"),
    ({"server_timeout": "x"}, "server_timeout"),
    ({"controller_action": " "}, "controller_action"),
    ({"locked_joints": ["a:b"]}, "not a number"),
    ({"control_rate": 100.0}, "unknown"),
    ({"gravity": [0.0]}, "gravity"),
])
def test_check_proxy_config_rejects_bad_values(values, match):
    with pytest.raises(ValueError, match=match):
        check_proxy_config(values)


def test_proxy_motor_output_with_an_elastic_actuator():
    cfg = check_proxy_config({"output": "motor", "actuator.type": "sea"})
    assert cfg["output"] == "motor" and cfg["actuator"]["actuator.type"] == "sea"


def test_locked_joints_and_realtime_priority():
    assert parse_locked_joints(["a", "b:0.25", " c : -1 "]) == {"a": 0.0, "b": 0.25, "c": -1.0}
    for bad in (["a", "a"], [""], ["x:inf"], [3]):
        with pytest.raises(ValueError, match="locked_joints"):
            parse_locked_joints(bad)
    cfg = check_config({"locked_joints": ["panda_finger_joint1"], "realtime_priority": 80})
    assert cfg["locked_joints"] == {"panda_finger_joint1": 0.0}
    assert cfg["realtime_priority"] == 80
    for bad in (-1, 100, 1.5, True):
        with pytest.raises(ValueError, match="realtime_priority"):
            check_config({"realtime_priority": bad})
    with pytest.raises(ValueError, match="control_rate"):
        check_config({"control_rate": 5000.0})      # beyond what the node accepts


def test_locked_joints_let_a_mimic_urdf_load():
    """The URDF error about a mimic joint names an option that exists: locked_joints."""
    urdf = ARM7.read_text().replace(
        '<joint name="arm7_joint7" type="revolute">',
        '<joint name="arm7_joint7" type="revolute"><mimic joint="arm7_joint6"/>')
    try:
        mbs.load_urdf(urdf)
    except ValueError as exc:   # this model version has no native mimic support
        assert "locked_joints" in str(exc)
        robot = mbs.load_urdf(urdf, locked_joints=parse_locked_joints(["arm7_joint7"]))
        assert "arm7_joint7" not in robot.joint_names
    else:                       # native mimic support: the mimic joint is not independent
        assert "arm7_joint7" not in mbs.load_urdf(urdf).joint_names


def _declared(path):
    """Names of the DeclareLaunchArgument calls in a file, and of common_arguments() when the
    file calls it (mbs_dynamics/ros/launch_args.py: what the launch files share)."""
    tree = ast.parse(path.read_text())
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)]
    names = {node.args[0].value for node in calls
             if getattr(node.func, "id", "") == "DeclareLaunchArgument"}
    if any(getattr(node.func, "id", "") == "common_arguments" for node in calls):
        names |= _declared(REPO / "mbs_dynamics" / "ros" / "launch_args.py")
    return names


def test_proxy_launch_file_declares_its_arguments():
    declared = _declared(REPO / "launch" / "feedforward_proxy.launch.py")
    assert declared == {"robot_description_file", "config", "namespace", "loops", "actuated"}
    assert _declared(REPO / "launch" / "feedforward.launch.py") == declared | {
        "use_sim_time", "joint_states_topic"}
    for name in ("feedforward.launch.py", "feedforward_proxy.launch.py"):
        tree = ast.parse((REPO / "launch" / name).read_text())
        assert any(isinstance(n, ast.FunctionDef) and n.name == "generate_launch_description"
                   for n in tree.body), name
    assert "feedforward_proxy" in (REPO / "launch" / "feedforward_proxy.launch.py").read_text()
