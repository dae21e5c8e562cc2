"""Any :class:`~.model.Model` written out as URDF text (``Robot.to_urdf``).

The URDF describes the same tree: one ``<link>`` per body (its merged inertia, i.e. the body's
links welded by fixed joints summed, as an ``<inertial>`` about the centre of mass), one
``<joint>`` per movable joint (``<origin>`` = B_i, ``<axis>``, the finite limits, ``<mimic>``),
and every other link of ``Model.link_frames`` as a massless link on a fixed joint at its pose in
its body. Loading the text again gives the same poses, Jacobians and dynamics (to the rounding of
the roll–pitch–yaw angles, ~1e-16). A floating base and the gravity vector have no URDF element:
load the text with ``floating_base=True`` / ``gravity=`` as the original. A spherical or
floating joint inside the tree is written back as that one joint (its chart's massless links
and 1-DOF joints are not written). Names are written as
XML attributes (escaped by ``xml.etree``), so any name round-trips.
"""
from __future__ import annotations

import math
import xml.etree.ElementTree as ET

import numpy as np

__all__ = ["to_urdf", "rpy_of", "origin_element", "inertial_element", "limit_element",
           "urdf_text"]


def _f(x) -> str:
    """Shortest text that reads back as the same float (``repr``), ``0`` for ±0."""
    x = float(x)
    return "0" if x == 0 else repr(x)


def rpy_of(R):
    """URDF roll–pitch–yaw (r, p, y) [rad] of a rotation R = Rz(y) Ry(p) Rx(r).

    The pitch comes from ``atan2`` (no ``asin`` precision loss near ±90°); at the gimbal lock
    (cos p = 0) roll is set to 0 and the yaw carries the whole rotation about the vertical.
    """
    R = np.asarray(R, dtype=float)
    cp = math.hypot(R[0, 0], R[1, 0])
    p = math.atan2(-R[2, 0], cp)
    if cp > 1e-12:
        return math.atan2(R[2, 1], R[2, 2]), p, math.atan2(R[1, 0], R[0, 0])
    # R = Rz(y) Ry(±π/2): R01 = −sin y, R11 = cos y (roll folded into yaw)
    return 0.0, p, math.atan2(-R[0, 1], R[1, 1])


def origin_element(parent, T):
    """Append ``<origin xyz rpy>`` of the 4×4 pose T to ``parent`` (omitted for the identity)."""
    T = np.asarray(T, dtype=float)
    if np.array_equal(T, np.eye(4)):
        return None
    return ET.SubElement(parent, "origin", xyz=" ".join(_f(v) for v in T[:3, 3]),
                         rpy=" ".join(_f(v) for v in rpy_of(T[:3, :3])))


def inertial_element(parent, mass, com, inertia):
    """Append ``<inertial>`` (mass [kg], COM [m] in the link frame, 3×3 inertia about the COM
    in link axes [kg m²]) to ``parent``."""
    el = ET.SubElement(parent, "inertial")
    ET.SubElement(el, "origin", xyz=" ".join(_f(v) for v in com), rpy="0 0 0")
    ET.SubElement(el, "mass", value=_f(mass))
    I = np.asarray(inertia, dtype=float)
    ET.SubElement(el, "inertia", ixx=_f(I[0, 0]), ixy=_f(I[0, 1]), ixz=_f(I[0, 2]),
                  iyy=_f(I[1, 1]), iyz=_f(I[1, 2]), izz=_f(I[2, 2]))
    return el


def _inertial_from_spatial(M):
    """(mass, com, inertia about the COM) of a 6×6 spatial inertia in the angular-first layout
    of the kernels, [[Θ_o, m c̃], [−m c̃, m 1]] (seed 004 eq. 24): Θ_c = Θ_o + m c̃ c̃."""
    M = 0.5 * (np.asarray(M, dtype=float) + np.asarray(M, dtype=float).T)
    m = M[3, 3]
    mc = np.array([M[2, 4], M[0, 5], M[1, 3]])  # m c̃ = M[:3, 3:]
    c = mc / m if m > 0 else np.zeros(3)
    C = np.array([[0, -c[2], c[1]], [c[2], 0, -c[0]], [-c[1], c[0], 0]])
    return m, c, M[:3, :3] + m * (C @ C)


def limit_element(parent, jtype, lower, upper, velocity, effort):
    """Append ``<limit>``: always ``effort`` and ``velocity`` (urdfdom, hence Pinocchio and ROS,
    refuses a revolute or prismatic joint without them, and reads no ``inf``): the largest
    float (1.8e308) where there is none; ``lower``/``upper`` where finite (absent: no limit
    for this package, 0 for urdfdom)."""
    lim = {k: _f(v) if np.isfinite(v) else _f(np.finfo(float).max)
           for k, v in (("effort", effort), ("velocity", velocity))}
    if jtype != "continuous":
        lim.update({k: _f(v) for k, v in (("lower", lower), ("upper", upper)) if np.isfinite(v)})
    return ET.SubElement(parent, "limit", **lim)


def urdf_text(root) -> str:
    """Pretty-printed URDF text of an ``ET.Element`` ``<robot>``."""
    ET.indent(root, space="  ")
    return '<?xml version="1.0"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _unique(name, taken):
    out, k = name, 1
    while out in taken:
        k += 1
        out = f"{name}_{k}"
    taken.add(out)
    return out


def _mounts(model, body_link, root, taken, links):
    """URDF parsers visit a link's child joints by name (urdfdom's map; :func:`~.urdf.parse`),
    so joints written directly on their parent body would be renumbered where the model's
    sibling order is not the name order (a model whose joints hung on fixed links). There, each
    movable child hangs on a massless link welded to the parent at the identity by a fixed joint
    whose name sorts in the model's order. Returns joint index → the link it hangs on."""
    hang = {}
    for b in range(-1, model.n):
        kids = [i for i in range(model.n) if model.parent[i] == b]
        if [model.joint_names[i] for i in kids] == sorted(model.joint_names[i] for i in kids):
            continue
        for k, i in enumerate(kids):
            ln = _unique(f"{model.link_names[i]}_mount", links)
            el = ET.SubElement(root, "link", name=ln)
            el = ET.SubElement(root, "joint", name=_unique(f"{body_link[b]}_mount_{k:06d}",
                                                           taken), type="fixed")
            ET.SubElement(el, "parent", link=body_link[b])
            ET.SubElement(el, "child", link=ln)
            hang[i] = ln
    return hang


def to_urdf(model, name=None) -> str:
    """URDF text of ``model`` (see the module docstring). ``name``: the ``<robot name>``
    (default ``model.name`` or ``"robot"``). Returns a str."""
    root = ET.Element("robot", name=str(name or model.name or "robot"))
    body_link = {-1: model.base_link}
    body_link.update({i: ln for i, ln in enumerate(model.link_names)})
    # spherical / floating joints are written back as one joint, without their chart's links
    group, inner, chart_links = {}, set(), set()
    for gname, (kind, i0) in getattr(model, "lie_joints", {}).items():
        last = i0 + (3 if kind == "spherical" else 6) - 1
        group[i0] = (gname, kind, last)
        inner.update(range(i0 + 1, last + 1))
        chart_links.update(model.link_names[i] for i in range(i0, last))
    # links: bodies carry the merged inertia, other links are massless frames
    for ln, (b, _) in model.link_frames.items():
        if ln in chart_links:
            continue
        el = ET.SubElement(root, "link", name=ln)
        if body_link.get(b) != ln:
            continue
        M = model.base_inertia if b < 0 else model.inertias[b]
        if np.any(M):
            inertial_element(el, *_inertial_from_spatial(M))
    taken = set(model.joint_names) | {g[0] for g in group.values()}
    links = set(model.link_frames)
    hang = _mounts(model, body_link, root, taken, links)
    for i, jn in enumerate(model.joint_names):
        if i in inner:
            continue
        if i in group:
            gname, kind, last = group[i]
            el = ET.SubElement(root, "joint", name=gname, type=kind)
            ET.SubElement(el, "parent", link=hang.get(i, body_link[int(model.parent[i])]))
            ET.SubElement(el, "child", link=model.link_names[last])
            origin_element(el, model.B[i])
            continue
        el = ET.SubElement(root, "joint", name=jn, type=model.joint_types[i])
        ET.SubElement(el, "parent", link=hang.get(i, body_link[int(model.parent[i])]))
        ET.SubElement(el, "child", link=model.link_names[i])
        origin_element(el, model.B[i])
        ET.SubElement(el, "axis", xyz=" ".join(_f(v) for v in model.axis[i]))
        limit_element(el, model.joint_types[i], model.lower[i], model.upper[i],
                      model.velocity_limit[i], model.effort_limit[i])
        if jn in model.mimic:
            master, k, o = model.mimic[jn]
            ET.SubElement(el, "mimic", joint=master, multiplier=_f(k), offset=_f(o))
    for ln, (b, S) in model.link_frames.items():
        if body_link.get(b) == ln:
            continue
        el = ET.SubElement(root, "joint", name=_unique(f"{body_link[b]}_to_{ln}", taken),
                           type="fixed")
        ET.SubElement(el, "parent", link=body_link[b])
        ET.SubElement(el, "child", link=ln)
        origin_element(el, S)
    return urdf_text(root)
