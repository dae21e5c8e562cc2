"""Seed 002's three planar test mechanisms (§3.1, Fig. 4), rebuilt as URDF spanning trees + loops.

Every body: m = 1 kg, length l = 1 m, J_c = diag(1, 1, 1) kg m² about its centre, revolute
joints about y (the mechanisms move in the x–z plane), gravity g = 9.81 m/s² along −z, initial
velocities zero. Fig. 4 itself is not in the text of the seed available here, so the geometry
is a reconstruction from the description — symmetric closed chains hanging between two ground
pivots, released from rest:

* case 1: a single loop of 4 bodies (ground pivots A, B; 4 bars A → B), 2 DOF;
* case 2: a single loop of 8 bodies, 6 DOF;
* case 3: a double loop of 8 bodies: case 2 with the middle joint also pinned to the ground
  (a second closure), 4 DOF.

Each loop is closed by a 3-D ``connect`` (a planar closure: one of its 3 equations is
redundant — handled by the rank-revealing solvers).
"""
from __future__ import annotations

import numpy as np

G = 9.81


def _chain(angles):
    """URDF of a chain of unit bars from the ground pivot at the origin; ``angles`` are the
    initial directions of the bars in the x–z plane (rad, from +x, positive up)."""
    links, joints = [], []
    prev_abs = 0.0
    for i, a in enumerate(angles):
        links.append(f'<link name="b{i + 1}"><inertial><origin xyz="0.5 0 0"/><mass value="1"/>'
                     '<inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link>')
        parent = "ground" if i == 0 else f"b{i}"
        xyz = "0 0 0" if i == 0 else "1 0 0"
        # joint origin: rotate about y by -(a - prev) (URDF pitch is about +y: x → −z)
        pitch = -float(a - prev_abs)
        prev_abs = a
        joints.append(f'<joint name="j{i + 1}" type="continuous"><parent link="{parent}"/>'
                      f'<child link="b{i + 1}"/><origin xyz="{xyz}" rpy="0 {pitch!r} 0"/>'
                      '<axis xyz="0 1 0"/></joint>')
    return "<robot name='seed002'><link name='ground'/>" + "".join(links + joints) + "</robot>"


def _points(angles):
    p = [np.zeros(2)]
    for a in angles:
        p.append(p[-1] + np.array([np.cos(a), np.sin(a)]))
    return np.array(p)


def case(k):
    """(urdf, loops, title) of case k ∈ {1, 2, 3}."""
    if k == 1:
        half = np.radians([-60.0, -20.0])
    else:
        half = np.radians([-75.0, -50.0, -30.0, -10.0])
    angles = np.r_[half, -half[::-1]]
    pts = _points(angles)
    n = len(angles)
    B = pts[-1]
    loops = [{"name": "B", "frame_a": f"b{n}", "frame_b": "ground",
              "origin_a": {"xyz": [1.0, 0.0, 0.0]},
              "origin_b": {"xyz": [float(B[0]), 0.0, float(B[1])]}, "type": "connect"}]
    if k == 3:
        m = pts[n // 2]
        loops.append({"name": "middle", "frame_a": f"b{n // 2}", "frame_b": "ground",
                      "origin_a": {"xyz": [1.0, 0.0, 0.0]},
                      "origin_b": {"xyz": [float(m[0]), 0.0, float(m[1])]}, "type": "connect"})
    title = {1: "case 1: single loop, 4 bodies", 2: "case 2: single loop, 8 bodies",
             3: "case 3: double loop, 8 bodies"}[k]
    return _chain(angles), loops, title


def load(k):
    import warnings
    import mbs_dynamics as mbs
    u, loops, _ = case(k)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", mbs.LoopWarning)
        return mbs.load_urdf(u, loops=loops, gravity=(0.0, 0.0, -G))
