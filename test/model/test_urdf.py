"""URDF loading: every example-robot-data file, the features we claim, and every error path."""
from __future__ import annotations

import numpy as np
import pytest

import mbs_dynamics as mbs
from mbs_dynamics import URDFError
from conftest import random_urdf

TWO_LINK = """<?xml version="1.0" encoding="utf-8"?>
<robot name="two">
  <link name="base"/>
  <link name="a"><inertial><mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>
  <link name="b"><inertial><origin xyz="0 0 0.1"/><mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="a"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="10" velocity="2"/></joint>
  <joint name="j2" type="{j2}"><parent link="a"/><child link="b"/><origin xyz="0 0 0.3"/>
    <axis xyz="0 1 0"/>{extra}</joint>
</robot>"""


def two_link(j2="revolute", extra='<limit lower="-1" upper="1" effort="10" velocity="2"/>'):
    return TWO_LINK.replace("{j2}", j2).replace("{extra}", extra)


def test_source_forms(tmp_path):
    """XML text (with or without an encoding declaration), bytes, str path and Path give the same."""
    text = two_link()
    p = tmp_path / "two.urdf"
    p.write_text(text)
    q = np.array([0.3, -0.5])
    ref = mbs.load_urdf(text).gravity_torques(q)
    for src in (text.split("\n", 1)[1], text.encode(), str(p), p):
        np.testing.assert_array_equal(mbs.load_urdf(src).gravity_torques(q), ref)


def test_joint_types_limits_and_massless_links():
    r = mbs.load_urdf(two_link("prismatic"))
    assert r.joint_types == ("revolute", "prismatic")
    assert r.lower[0] == -1 and r.upper[0] == 1 and r.effort_limit[0] == 10 and r.velocity_limit[0] == 2
    r = mbs.load_urdf(two_link("continuous", ""))
    assert r.joint_types[1] == "continuous" and np.isinf(r.upper[1])
    # a massless tip behind a movable joint: M is singular, so the joint is named at load
    massless = ('<link name="b"><inertial><origin xyz="0 0 0.1"/><mass value="1"/>'
                '<inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>')
    text = two_link().replace(massless, '<link name="b"/>')
    with pytest.raises(URDFError, match="joint 'j2' moves no mass"):
        mbs.load_urdf(text)
    # behind a fixed joint a massless link contributes nothing
    r = mbs.load_urdf(two_link("fixed", "").replace(massless, '<link name="b"/>'))
    assert r.n == 1 and r.total_mass == 1.0


def test_fixed_joint_merges_inertia():
    """A fixed joint merges its child into the parent body: same dynamics as one combined link."""
    rng = np.random.default_rng(0)
    text = two_link("fixed", "")
    r = mbs.load_urdf(text)
    assert r.n == 1 and r.link_names == ("a",)
    # combined: mass 2, COM at z = (0 + 0.4)/2 = 0.2; inertia by Steiner about the joint axis z
    one = """<robot name="one"><link name="base"/>
      <link name="a"><inertial><origin xyz="0 0 0.2"/><mass value="2"/>
        <inertia ixx="0.28" ixy="0" ixz="0" iyy="0.28" iyz="0" izz="0.2"/></inertial></link>
      <joint name="j1" type="revolute"><parent link="base"/><child link="a"/><axis xyz="0 0 1"/></joint>
    </robot>"""
    r1 = mbs.load_urdf(one)
    for _ in range(3):
        q, qd, qdd = rng.normal(size=(3, 1))
        np.testing.assert_allclose(r.inverse_dynamics(q, qd, qdd), r1.inverse_dynamics(q, qd, qdd), rtol=1e-13)


def test_model_is_immutable():
    r = mbs.load_urdf(two_link())
    with pytest.raises(ValueError):
        r.model.B[0, 0, 0] = 2.0
    with pytest.raises(ValueError):
        r.model.inertias[0, 0, 0] = 2.0
    with pytest.raises(Exception):
        r.model.n = 3
    with pytest.raises(AttributeError):
        r.foo = 1


@pytest.mark.parametrize("text, words", [
    ("<robot name='x'><link name='a'>", ["malformed"]),
    ("<robt name='x'/>", ["<robot>"]),
    ("<robot name='x'><link name='a'/><link name='b'/></robot>", ["one root"]),
    (two_link().replace('<child link="b"/>', '<child link="nope"/>'), ["j2", "nope"]),
    (two_link("gearbox", ""), ["j2", "gearbox"]),
    (two_link("revolute", '<mimic joint="j0" multiplier="2"/>'), ["'j2'", "'j0'"]),
    (two_link().replace('<axis xyz="0 1 0"/>', '<axis xyz="0 0 0"/>'), ["j2", "zero axis"]),
    (two_link().replace('<axis xyz="0 1 0"/>', '<axis xyz="0 nan 1"/>'), ["j2", "axis"]),
    (two_link().replace('<origin xyz="0 0 0.3"/>', '<origin xyz="0 0.3"/>'), ["j2", "origin"]),
    (two_link().replace('<mass value="1"/>', '<mass value="-1"/>', 1), ["a", "negative mass"]),
    (two_link().replace('<link name="b">', '<link name="a">'), ["a", "twice"]),
    (two_link().replace('<parent link="a"/>', '<parent link="b"/>'), ["root"]),
])
def test_malformed_urdf_errors(text, words):
    with pytest.raises(URDFError) as e:
        mbs.load_urdf(text)
    for w in words:
        assert w in str(e.value)


def test_selection_errors(tmp_path):
    text = two_link()
    with pytest.raises(URDFError, match="base_link 'zz'"):
        mbs.load_urdf(text, base_link="zz")
    with pytest.raises(URDFError, match="tip_link 'zz'"):
        mbs.load_urdf(text, tip_link="zz")
    with pytest.raises(URDFError, match="tip_link 'a' is not below base_link 'b'"):
        mbs.load_urdf(text, base_link="b", tip_link="a")
    with pytest.raises(URDFError, match="locked joint 'zz'"):
        mbs.load_urdf(text, locked_joints={"zz": 0.0})
    with pytest.raises(ValueError, match="locked joint 'j1'"):
        mbs.load_urdf(text, locked_joints={"j1": float("nan")})
    with pytest.raises(URDFError, match="no movable joint"):
        mbs.load_urdf(text, locked_joints={"j1": 0.0, "j2": 0.0})
    with pytest.raises(ValueError, match="gravity"):
        mbs.load_urdf(text, gravity=(0, 0))
    with pytest.raises(URDFError, match="cannot read URDF file"):
        mbs.load_urdf(str(tmp_path / "missing.urdf"))
    # a mimic joint off the selected chain does not matter
    mim = two_link("revolute", '<mimic joint="j1"/>')
    assert mbs.load_urdf(mim, tip_link="a").n == 1
    assert mbs.load_urdf(mim, locked_joints={"j2": 0.0}).n == 1


def test_locked_joint_keeps_subtree_mass():
    text = two_link()
    r = mbs.load_urdf(text, locked_joints={"j2": 0.5})
    assert r.n == 1 and r.total_mass == 2.0
    assert "b" in r.model.link_frames and r.model.link_frames["b"][0] == 0


def test_random_urdf_has_claimed_features():
    urdf, _ = random_urdf(0)
    assert 'type="fixed"' in urdf and 'type="prismatic"' in urdf and 'type="continuous"' in urdf
    r = mbs.load_urdf(urdf)
    assert r.n >= 20
