"""Closed-loop test mechanisms: URDF text of the spanning tree + loop dicts + actuated joints.

Each function returns ``(urdf, loops, actuated)``. Geometry is chosen so that the tree's zero is
NOT assembled (the loader's Newton assembly is exercised) but a nearby assembly exists.
"""
from __future__ import annotations

import numpy as np


def _urdf(name, links, joints):
    """links: [(name, mass, com xyz, (ixx, iyy, izz))]; joints: [(name, type, parent, child,
    xyz, rpy, axis)]."""
    out = [f'<robot name="{name}">', '  <link name="base"/>']
    for ln, m, c, I in links:
        out.append(f'  <link name="{ln}"><inertial><origin xyz="{c[0]} {c[1]} {c[2]}"/>'
                   f'<mass value="{m}"/><inertia ixx="{I[0]}" iyy="{I[1]}" izz="{I[2]}" '
                   'ixy="0" ixz="0" iyz="0"/></inertial></link>')
    for jn, t, p, c, xyz, rpy, ax in joints:
        lim = '<limit lower="-10" upper="10" effort="100" velocity="10"/>'
        out.append(f'  <joint name="{jn}" type="{t}"><parent link="{p}"/><child link="{c}"/>'
                   f'<origin xyz="{xyz[0]} {xyz[1]} {xyz[2]}" rpy="{rpy[0]} {rpy[1]} {rpy[2]}"/>'
                   f'<axis xyz="{ax[0]} {ax[1]} {ax[2]}"/>{lim}</joint>')
    out.append("</robot>")
    return "\n".join(out)


def _bar(name, length, m=1.0, axis="x"):
    i = {"x": 0, "y": 1, "z": 2}[axis]
    c = [0.0, 0.0, 0.0]
    c[i] = length / 2
    Il = m * length ** 2 / 12 + 0.002
    I = [Il, Il, Il]
    I[i] = 0.003
    return (name, m, c, I)


def planar_fourbar():
    """Crank–rocker four-bar in the x–z plane (hinges about y), closed by a 3-D ``connect``:
    one of its 3 equations is always satisfied (redundant). 1 DOF, actuated: the crank."""
    a, b, c, d = 0.3, 0.8, 0.6, 0.7
    links = [_bar("crank", a), _bar("coupler", b, 1.3), _bar("rocker", c, 0.8)]
    Y = (0, 1, 0)
    joints = [("j_crank", "revolute", "base", "crank", (0, 0, 0), (0, 0, 0), Y),
              ("j_coupler", "revolute", "crank", "coupler", (a, 0, 0), (0, -1.2, 0), Y),
              ("j_rocker", "revolute", "base", "rocker", (d, 0, 0), (0, -1.9, 0), Y)]
    loops = [{"name": "closure", "frame_a": "coupler", "frame_b": "rocker",
              "origin_a": {"xyz": [b, 0, 0], "rpy": [0, 0, 0]},
              "origin_b": {"xyz": [c, 0, 0], "rpy": [0.3, 0.2, 0.1]}, "type": "connect"}]
    return _urdf("fourbar", links, joints), loops, ["j_crank"]


def spatial_fourbar():
    """RUSR spatial four-bar: crank about z, universal joint to the coupler, spherical (a
    ``connect``) to a rocker about x. 1 DOF."""
    links = [_bar("crank", 0.25), ("u_link", 0.05, [0, 0, 0], [1e-4, 1e-4, 1e-4]),
             _bar("coupler", 0.7, 1.2), _bar("rocker", 0.5, 0.9, "z")]
    joints = [("crank", "revolute", "base", "crank", (0, 0, 0), (0, 0, 0), (0, 0, 1)),
              ("u1", "revolute", "crank", "u_link", (0.25, 0, 0), (0, 0, 0), (0, 0, 1)),
              ("u2", "revolute", "u_link", "coupler", (0, 0, 0), (0, 0, 0), (0, 1, 0)),
              ("rocker", "revolute", "base", "rocker", (0.45, 0.35, 0.1), (0, 0, 0), (1, 0, 0))]
    loops = [{"name": "ball", "frame_a": "coupler", "frame_b": "rocker",
              "origin_a": {"xyz": [0.7, 0, 0]}, "origin_b": {"xyz": [0, 0, 0.5]},
              "type": "connect"}]
    return _urdf("spatial4", links, joints), loops, ["crank"]


def spatial_fourbar_weld():
    """The RUSR four-bar with its spherical joint in the tree (3 hinges x, y, z at the rocker's
    tip) and the closure a ``weld`` of the ball link to the coupler's tip: 7 joints − 6 = 1 DOF."""
    small = [1e-4, 1e-4, 1e-4]
    links = [_bar("crank", 0.25), ("u_link", 0.05, [0, 0, 0], small),
             _bar("coupler", 0.7, 1.2), _bar("rocker", 0.5, 0.9, "z"),
             ("s1", 0.02, [0, 0, 0], small), ("s2", 0.02, [0, 0, 0], small),
             ("ball", 0.1, [0.01, 0, 0], [2e-4, 2e-4, 2e-4])]
    joints = [("crank", "revolute", "base", "crank", (0, 0, 0), (0, 0, 0), (0, 0, 1)),
              ("u1", "revolute", "crank", "u_link", (0.25, 0, 0), (0, 0, 0), (0, 0, 1)),
              ("u2", "revolute", "u_link", "coupler", (0, 0, 0), (0, 0, 0), (0, 1, 0)),
              ("rocker", "revolute", "base", "rocker", (0.45, 0.35, 0.1), (0, 0, 0), (1, 0, 0)),
              ("sx", "revolute", "rocker", "s1", (0, 0, 0.5), (0, 0, 0), (1, 0, 0)),
              ("sy", "revolute", "s1", "s2", (0, 0, 0), (0, 0, 0), (0, 1, 0)),
              ("sz", "revolute", "s2", "ball", (0, 0, 0), (0, 0, 0), (0, 0, 1))]
    loops = [{"name": "weld", "frame_a": "coupler", "frame_b": "ball",
              "origin_a": {"xyz": [0.7, 0, 0], "rpy": [0.1, 0.2, 0.3]},
              "origin_b": {"xyz": [0, 0, 0]}, "type": "weld"}]
    return _urdf("spatial4w", links, joints), loops, ["crank"]


def slider_crank():
    """Slider-crank in the x–z plane: crank and connecting rod (hinges about y), a slider on a
    prismatic joint along x, the rod's tip ``connect``-ed to the slider. 1 DOF."""
    Y = (0, 1, 0)
    links = [_bar("crank", 0.2), _bar("rod", 0.6, 0.7),
             ("slider", 1.5, [0, 0, 0], [0.01, 0.01, 0.01])]
    joints = [("crank", "revolute", "base", "crank", (0, 0, 0), (0, 0, 0), Y),
              ("rod", "revolute", "crank", "rod", (0.2, 0, 0), (0, 0.5, 0), Y),
              ("slide", "prismatic", "base", "slider", (0.5, 0, 0.05), (0, 0, 0), (1, 0, 0))]
    loops = [{"name": "pin", "frame_a": "rod", "frame_b": "slider",
              "origin_a": {"xyz": [0.6, 0, 0]}, "origin_b": {"xyz": [0, 0, 0]},
              "type": "connect"}]
    return _urdf("slider_crank", links, joints), loops, ["crank"]


def delta():
    """3-leg delta-type robot (3-RUU: motor, universal elbow, universal wrist): leg 1 carries the
    platform in the tree, legs 2 and 3 close on it by ``revolute`` loops (5 equations each).
    13 joints − 10 equations = 3 DOF (the motors)."""
    R, L1, L2, r = 0.25, 0.3, 0.6, 0.1
    links, joints, loops = [], [], []
    small = [1e-4, 1e-4, 1e-4]
    for k in range(3):
        phi = 2 * np.pi * k / 3
        base_xyz = (R * np.cos(phi), R * np.sin(phi), 0.0)
        up, el, fo, wr = f"upper{k}", f"elbow{k}", f"fore{k}", f"wrist{k}"
        links += [_bar(up, L1, 0.5), (el, 0.02, [0, 0, 0], small),
                  (fo, 0.3, [0, 0, -L2 / 2], [0.01, 0.01, 1e-4]), (wr, 0.02, [0, 0, 0], small)]
        joints += [(f"motor{k}", "revolute", "base", up, base_xyz, (0, 0, phi), (0, 1, 0)),
                   (f"ea{k}", "revolute", up, el, (L1, 0, 0), (0, 0, 0), (0, 1, 0)),
                   (f"eb{k}", "revolute", el, fo, (0, 0, 0), (0, 0, 0), (1, 0, 0)),
                   (f"wb{k}", "revolute", fo, wr, (0, 0, -L2), (0, 0, 0), (1, 0, 0))]
        if k == 0:
            links.append(("platform", 0.8, [-r, 0, 0], [0.002, 0.002, 0.004]))
            joints.append(("wa0", "revolute", wr, "platform", (0, 0, 0), (0, 0, 0), (0, 1, 0)))
        else:
            att = np.array([-r, 0, 0]) + r * np.array([np.cos(phi), np.sin(phi), 0.0])
            loops.append({"name": f"leg{k}", "frame_a": wr, "frame_b": "platform",
                          "origin_a": {"xyz": [0, 0, 0], "rpy": [-np.pi / 2, 0, 0]},
                          "origin_b": {"xyz": [float(x) for x in att],
                                       "rpy": [-np.pi / 2, 0, float(phi)]},
                          "type": "revolute"})
    return _urdf("delta", links, joints), loops, ["motor0", "motor1", "motor2"]


def two_loop_planar():
    """Planar six-bar (two four-bar loops in series, x–z plane), both closed by ``connect``:
    2 × 3 equations of rank 4. 5 joints − 4 = 1 DOF."""
    Y = (0, 1, 0)
    links = [_bar("crank", 0.3), _bar("coupler", 0.8, 1.1), _bar("rocker", 0.6, 0.9),
             _bar("link4", 0.7, 0.7), _bar("link5", 0.5, 0.6)]
    joints = [("j1", "revolute", "base", "crank", (0, 0, 0), (0, 0, 0), Y),
              ("j2", "revolute", "crank", "coupler", (0.3, 0, 0), (0, -1.2, 0), Y),
              ("j3", "revolute", "base", "rocker", (0.7, 0, 0), (0, -1.9, 0), Y),
              ("j4", "revolute", "rocker", "link4", (0.6, 0, 0), (0, 1.5, 0), Y),
              ("j5", "revolute", "base", "link5", (1.3, 0, 0), (0, -1.4, 0), Y)]
    loops = [{"name": "inner", "frame_a": "coupler", "frame_b": "rocker",
              "origin_a": {"xyz": [0.8, 0, 0]}, "origin_b": {"xyz": [0.6, 0, 0]},
              "type": "connect"},
             {"name": "outer", "frame_a": "link4", "frame_b": "link5",
              "origin_a": {"xyz": [0.7, 0, 0]}, "origin_b": {"xyz": [0.5, 0, 0]},
              "type": "connect"}]
    return _urdf("sixbar", links, joints), loops, ["j1"]


def parallelogram_arm():
    """Serial arm (yaw, shoulder pitch, elbow, wrist) whose elbow is driven through a
    parallelogram: a crank coaxial with the shoulder pitch and a rod parallel to the upper arm
    meet the forearm's lever. The loop is planar in the arm's plane and closed by ``connect``
    (one redundant equation). 6 joints − 2 = 4 DOF (yaw, pitch, drive, wrist)."""
    Y = (0, 1, 0)
    L, e = 0.5, 0.12
    links = [("shoulder", 2.0, [0, 0, 0.05], [0.01, 0.01, 0.01]), _bar("upper", L, 1.5),
             ("fore", 1.0, [0.2, 0, 0], [0.003, 0.02, 0.02]), _bar("crank", e, 0.3),
             _bar("rod", L, 0.4), _bar("hand", 0.15, 0.5)]
    joints = [("yaw", "revolute", "base", "shoulder", (0, 0, 0.3), (0, 0, 0), (0, 0, 1)),
              ("pitch", "revolute", "shoulder", "upper", (0, 0, 0.1), (0, -0.4, 0), Y),
              ("elbow", "revolute", "upper", "fore", (L, 0, 0), (0, 0.9, 0), Y),
              ("drive", "revolute", "shoulder", "crank", (0, 0, 0.1), (0, 1.9, 0), Y),
              ("rod", "revolute", "crank", "rod", (e, 0, 0), (0, -1.4, 0), Y),
              ("wrist", "revolute", "fore", "hand", (0.4, 0, 0), (0, 0, 0), (1, 0, 0))]
    loops = [{"name": "parallelogram", "frame_a": "rod", "frame_b": "fore",
              "origin_a": {"xyz": [L, 0, 0]}, "origin_b": {"xyz": [-e, 0, 0]},
              "type": "connect"}]
    return _urdf("pgram_arm", links, joints), loops, ["yaw", "pitch", "drive", "wrist"]



def planar_fourbar_with_flap():
    """The planar four-bar plus a flap on the base whose joint mimics the crank
    (q_flap = −0.5 q_crank + 0.1): a loop and a mimic joint in one mechanism."""
    u, loops, act = planar_fourbar()
    flap = ('<link name="flap"><inertial><origin xyz="0.1 0 0"/><mass value="0.4"/><inertia '
            'ixx="0.001" iyy="0.002" izz="0.002" ixy="0" ixz="0" iyz="0"/></inertial></link>'
            '<joint name="j_flap" type="revolute"><parent link="base"/><child link="flap"/>'
            '<origin xyz="-0.2 0 0.1"/><axis xyz="0 1 0"/><limit lower="-3" upper="3" '
            'effort="10" velocity="5"/><mimic joint="j_crank" multiplier="-0.5" offset="0.1"/>'
            '</joint></robot>')
    return u.replace("</robot>", flap), loops, act

ALL = {"planar_fourbar": planar_fourbar, "spatial_fourbar": spatial_fourbar,
       "spatial_fourbar_weld": spatial_fourbar_weld, "slider_crank": slider_crank, "delta": delta,
       "two_loop_planar": two_loop_planar, "parallelogram_arm": parallelogram_arm}


# ---- spherical and free joints inside the tree (issue 31): structured descriptions, so that
# the tests can write the same mechanism for Pinocchio (JointModelSpherical / FreeFlyer).
# links: [(name, mass or None, com, (ixx, iyy, izz))]; joints: [(name, type, parent, child, xyz,
# rpy, axis)]; type "spherical" / "floating" inside the tree.
def lie_urdf(name, links, joints):
    """URDF text of a structured description (massless links for mass None)."""
    out = [f'<robot name="{name}">', '  <link name="base"/>']
    for ln, m, c, I in links:
        if m is None:
            out.append(f'  <link name="{ln}"/>')
            continue
        out.append(f'  <link name="{ln}"><inertial><origin xyz="{c[0]} {c[1]} {c[2]}"/>'
                   f'<mass value="{m}"/><inertia ixx="{I[0]}" iyy="{I[1]}" izz="{I[2]}" '
                   'ixy="0" ixz="0" iyz="0"/></inertial></link>')
    for jn, t, p, c, xyz, rpy, ax in joints:
        lim = ('<limit lower="-10" upper="10" effort="100" velocity="10"/>'
               if t in ("revolute", "prismatic") else "")
        axis = f'<axis xyz="{ax[0]} {ax[1]} {ax[2]}"/>' if ax is not None else ""
        out.append(f'  <joint name="{jn}" type="{t}"><parent link="{p}"/><child link="{c}"/>'
                   f'<origin xyz="{xyz[0]} {xyz[1]} {xyz[2]}" rpy="{rpy[0]} {rpy[1]} {rpy[2]}"/>'
                   f'{axis}{lim}</joint>')
    out.append("</robot>")
    return "\n".join(out)


def rusr_ball(hinges=False):
    """The RUSR four-bar of :func:`spatial_fourbar_weld` with its ball joint ``s`` in the tree
    as a ``spherical`` joint (``hinges``: the same joint as three hinges x, y, z through
    massless links — its Euler chart written out), closed by a weld. 1 DOF: the crank."""
    small = [1e-4, 1e-4, 1e-4]
    links = [_bar("crank", 0.25), ("u_link", 0.05, [0, 0, 0], small),
             _bar("coupler", 0.7, 1.2), _bar("rocker", 0.5, 0.9, "z"),
             ("ball", 0.1, [0.01, 0.02, -0.03], [2e-4, 3e-4, 2.5e-4])]
    joints = [("crank", "revolute", "base", "crank", (0, 0, 0), (0, 0, 0), (0, 0, 1)),
              ("u1", "revolute", "crank", "u_link", (0.25, 0, 0), (0, 0, 0), (0, 0, 1)),
              ("u2", "revolute", "u_link", "coupler", (0, 0, 0), (0, 0, 0), (0, 1, 0)),
              ("rocker", "revolute", "base", "rocker", (0.45, 0.35, 0.1), (0, 0, 0), (1, 0, 0))]
    if hinges:
        links += [("s1", None, 0, 0), ("s2", None, 0, 0)]
        joints += [("sx", "revolute", "rocker", "s1", (0, 0, 0.5), (0.2, -0.1, 0.3), (1, 0, 0)),
                   ("sy", "revolute", "s1", "s2", (0, 0, 0), (0, 0, 0), (0, 1, 0)),
                   ("sz", "revolute", "s2", "ball", (0, 0, 0), (0, 0, 0), (0, 0, 1))]
    else:
        joints += [("s", "spherical", "rocker", "ball", (0, 0, 0.5), (0.2, -0.1, 0.3), None)]
    loops = [{"name": "weld", "frame_a": "coupler", "frame_b": "ball",
              "origin_a": {"xyz": [0.7, 0, 0], "rpy": [0.1, 0.2, 0.3]},
              "origin_b": {"xyz": [0, 0, 0]}, "type": "weld"}]
    return "rusr", links, joints, loops, ["crank"]


def swing_ball():
    """A ball joint ``s`` at the base welded to a crank about y through the same point: the
    crank angle θ turns the ball by Ry(θ) about its joint frame's y — the middle axis of its
    Euler chart, singular at θ = ±π/2 (relative to the URDF zero). 1 DOF: the crank."""
    links = [("crank", 1.0, [0.3, 0.02, 0.01], [0.004, 0.03, 0.03]),
             ("ball", 0.6, [0.2, -0.03, 0.05], [0.002, 0.01, 0.012])]
    joints = [("crank", "revolute", "base", "crank", (0, 0, 0), (0, 0, 0), (0, 1, 0)),
              ("s", "spherical", "base", "ball", (0, 0, 0), (0, 0, 0), None)]
    loops = [{"name": "weld", "frame_a": "crank", "frame_b": "ball",
              "origin_a": {"xyz": [0.4, 0, 0], "rpy": [0.3, -0.2, 0.5]},
              "origin_b": {"xyz": [0.4, 0, 0], "rpy": [0.3, -0.2, 0.5]}, "type": "weld"}]
    return "swing", links, joints, loops, ["crank"]


def stewart():
    """A 6-UPS Stewart platform: the platform on a free (``floating``) joint from the base,
    six legs (universal joint at the base, actuated prismatic ``leg<i>``), each closed by a
    ``connect`` (the ball joint) at the platform. 24 joints − 18 = 6 DOF."""
    links = [("platform", 4.0, [0.01, -0.02, 0.03], [0.2, 0.22, 0.35])]
    joints = [("free", "floating", "base", "platform", (0, 0, 1.0), (0, 0, 0), None)]
    loops = []
    for i in range(6):
        a = 2 * np.pi * (i // 2) / 3 + (0.25 if i % 2 else -0.25)
        b = 2 * np.pi * ((i + 1) // 2 % 3) / 3 + np.pi / 3 + (-0.3 if i % 2 else 0.3) - np.pi / 3
        pa = (1.0 * np.cos(a), 1.0 * np.sin(a), 0.0)
        pb = (0.6 * np.cos(b), 0.6 * np.sin(b), 0.0)
        links += [(f"cross{i}", 0.05, [0, 0, 0], [1e-4, 1e-4, 1e-4]),
                  (f"cyl{i}", 0.8, [0, 0, 0.3], [0.03, 0.03, 0.002]),
                  (f"rod{i}", 0.4, [0, 0, 0.2], [0.01, 0.01, 0.001])]
        joints += [(f"ux{i}", "revolute", "base", f"cross{i}", pa, (0, 0, 0), (1, 0, 0)),
                   (f"uy{i}", "revolute", f"cross{i}", f"cyl{i}", (0, 0, 0), (0, 0, 0),
                    (0, 1, 0)),
                   (f"leg{i}", "prismatic", f"cyl{i}", f"rod{i}", (0, 0, 0.5), (0, 0, 0),
                    (0, 0, 1))]
        loops.append({"name": f"ball{i}", "frame_a": f"rod{i}", "frame_b": "platform",
                      "origin_a": {"xyz": [0, 0, 0.5]}, "origin_b": {"xyz": list(pb)},
                      "type": "connect"})
    return "stewart", links, joints, loops, [f"leg{i}" for i in range(6)]


def stewart_ball():
    """The 6-UPS platform of :func:`stewart` carried in the tree by leg 0's ``spherical`` joint
    ``ball0`` (the platform a child of leg 0's rod: the ball joint has descendants), the other
    five legs closed by ``connect``. 21 joints − 15 = 6 DOF."""
    name, links, joints, loops, act = stewart()
    (jn, t, p, c, xyz, rpy, ax) = joints[0]
    pb = loops[0]["origin_b"]["xyz"]
    joints = joints[1:] + [("ball0", "spherical", "rod0", "platform", (0, 0, 0.5), (0, 0, 0),
                            None)]
    links = links[1:] + links[:1]
    # the platform frame at the ball: its points relative to leg 0's attachment
    loops = [dict(lp, origin_b={"xyz": [a - b for a, b in zip(lp["origin_b"]["xyz"], pb)]})
             for lp in loops[1:]]
    return "stewart_ball", links, joints, loops, act
