"""URDF text → kinematic tree (links, joints, origins, axes, inertials) → :class:`~.model.Model`.

Only what dynamics needs is read: ``<link>/<inertial>``, ``<joint>`` type, parent, child, origin,
axis, limit and mimic. Everything else (visuals, collisions, materials, transmissions, gazebo
tags) is ignored, so every URDF of example-robot-data without floating or mimic joints loads.

Why not ``urdf_parser_py`` (urdfdom-py, the ROS choice): it rejects valid files on details that
dynamics never reads (``<transmission>`` and ``<material>`` variants: 5 of the 69 example-robot-data
URDFs fail even when given bytes, 23 when given text with an encoding declaration), and it would
still need all of the tree logic below. The standard library's ElementTree reads all of them.
"""
from __future__ import annotations

import math
import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

import numpy as np

from .limits import FileLimitError, check_text_size, read_bytes

MOVABLE = ("revolute", "continuous", "prismatic")
# multi-DOF joints the model builds as chains of 1-DOF joints through massless links
# (model.build): URDF's ``planar``, and this package's URDF extension types ``universal``
# (``<axis>`` then ``<axis2>``) and ``cylindrical`` (rotation about and translation along
# ``<axis>``) and ``spherical`` (a ball joint, configuration a quaternion, as URDF's
# ``floating`` joint inside the tree), which other URDF readers (urdfdom, Pinocchio, ROS) refuse.
COMPOSITE = ("planar", "universal", "cylindrical", "spherical", "floating")
EXTENSION = ("universal", "cylindrical", "spherical")
#: joints whose configuration lives on a group (a quaternion), see model.lie_joints
LIE = ("spherical", "floating")


# Validation policy (README "Physically valid models"): finite-but-absurd values are rejected.
MAX_LENGTH = 1e6  # [m] largest |xyz| of a joint or inertial origin (and of a payload COM)
MAX_MASS = 1e12  # [kg] largest link or payload mass
MAX_INERTIA = 1e24  # [kg m²] largest |entry| of an inertia matrix
MAX_MIMIC = 1e6  # largest |multiplier| and |offset| of a mimic joint (also of a resolved chain)
PSD_TOL = 1e-6  # an inertia about the COM is PSD when λ_min ≥ −(PSD_TOL·λ_max + PSD_ATOL)
PSD_ATOL = 1e-12  # [kg m²] exporter noise (icub's l_ankle_2: ixz = 1.4e-20, all else 0)
TRIANGLE_TOL = 1e-6  # principal moments: λ_a + λ_b ≥ (1 − TRIANGLE_TOL)·λ_c, else a warning


class URDFError(ValueError):
    """A URDF that cannot be turned into a model; the message names the element at fault."""


class URDFWarning(UserWarning):
    """A URDF that loads but is physically dubious (the message names the links)."""


@dataclass
class Inertial:
    mass: float
    origin: np.ndarray  # 4×4 pose of the COM frame in the link frame
    inertia: np.ndarray  # 3×3 about the COM, in the COM frame


@dataclass
class Joint:
    name: str
    type: str
    parent: str
    child: str
    origin: np.ndarray  # 4×4 pose of the child link frame in the parent link frame at q = 0
    axis: np.ndarray  # unit 3-vector in the child (joint) frame
    axis2: np.ndarray | None = None  # universal joints: the second axis (joint frame at q = 0)
    lower: float = -np.inf
    upper: float = np.inf
    velocity: float = np.inf
    effort: float = np.inf
    mimic: str | None = None  # master joint named by <mimic joint=...>
    multiplier: float = 1.0  # q = multiplier·q_master + offset
    offset: float = 0.0


@dataclass
class URDF:
    name: str
    links: dict  # name → Inertial | None
    joints: dict  # name → Joint, in file order
    children: dict = field(default_factory=dict)  # link → [joints], sorted by joint name
    parent_joint: dict = field(default_factory=dict)  # link → joint
    root: str = ""


def _floats(text, n, what):
    try:
        v = [float(s) for s in text.split()]
    except (ValueError, AttributeError):
        raise URDFError(f"{what}: cannot read numbers from {text!r}") from None
    if len(v) != n or not all(map(math.isfinite, v)):
        raise URDFError(f"{what}: expected {n} finite numbers, got {text!r}")
    return v


def _origin(el, what):
    o = el.find("origin") if el is not None else None
    if o is None:
        return np.eye(4)
    x, y, z = _floats(o.get("xyz", "0 0 0"), 3, f"{what} <origin xyz>")
    if max(abs(x), abs(y), abs(z)) > MAX_LENGTH:
        raise URDFError(f"{what} <origin xyz> {o.get('xyz')!r}: a distance above "
                        f"{MAX_LENGTH:g} m is not a physical robot")
    r, p, w = _floats(o.get("rpy", "0 0 0"), 3, f"{what} <origin rpy>")
    # URDF fixed-axis roll-pitch-yaw R = Rz(w) Ry(p) Rx(r) (as lie.rpy, in scalar math: fast)
    cr, sr, cp, sp = math.cos(r), math.sin(r), math.cos(p), math.sin(p)
    cw, sw = math.cos(w), math.sin(w)
    return np.array([
        [cw * cp, cw * sp * sr - sw * cr, cw * sp * cr + sw * sr, x],
        [sw * cp, sw * sp * sr + cw * cr, sw * sp * cr - cw * sr, y],
        [-sp, cp * sr, cp * cr, z],
        [0.0, 0.0, 0.0, 1.0]])


def _attr(el, name, what, default=None):
    v = el.get(name)
    if v is None:
        if default is None:
            raise URDFError(f"{what} has no '{name}' attribute")
        return default
    return v


def read_text(source) -> str | bytes:
    """``source`` is URDF XML (str or bytes) or a path to a file."""
    if isinstance(source, (bytes, bytearray)):
        text = bytes(source)
    elif isinstance(source, os.PathLike) or (isinstance(source, str) and "<" not in source):
        try:
            return read_bytes(source, "URDF file")  # size-limited (model.limits)
        except FileLimitError as e:
            raise URDFError(str(e)) from None
        except OSError as e:
            raise URDFError(f"cannot read URDF file {str(source)!r}: {e.strerror}") from None
    elif not isinstance(source, str):
        raise URDFError(f"URDF source must be XML text or a file path, got {type(source).__name__}")
    else:
        text = source
    try:
        check_text_size(text, "URDF text")
    except FileLimitError as e:
        raise URDFError(str(e)) from None
    return text


def robot_element(source) -> ET.Element:
    """The ``<robot>`` element of URDF XML text, bytes or a file path.

    Raises:
        URDFError: not XML, or the root element is not ``<robot>``.
    """
    text = read_text(source)
    if isinstance(text, str):
        # ElementTree refuses str input with an encoding declaration: hand it bytes.
        text = text.encode("utf-8") if text.lstrip().startswith("<?xml") else text
    try:
        root = ET.fromstring(text)
    except ET.ParseError as e:
        raise URDFError(f"malformed URDF XML: {e}") from None
    if root.tag != "robot":
        raise URDFError(f"URDF root element must be <robot>, got <{root.tag}>")
    return root


def extension_joints(source):
    """The joints of URDF text, bytes or a path whose type is one of this package's extensions
    (:data:`EXTENSION`: ``universal``, ``cylindrical``), as ``[(name, type), ...]`` in file
    order. Tools that hand the URDF itself to other readers (ROS, MuJoCo) refuse these joints:
    urdfdom and MuJoCo do not know the types.

    Raises:
        URDFError: not URDF XML.
    """
    return [(el.get("name", ""), el.get("type")) for el in robot_element(source).findall("joint")
            if el.get("type") in EXTENSION]


def parse(source) -> URDF:
    """Parse URDF XML text, bytes or a file path into a :class:`URDF` tree."""
    root = robot_element(source)

    links = {}
    for el in root.findall("link"):
        name = _attr(el, "name", "<link>")
        if name in links:
            raise URDFError(f"link '{name}' is defined twice")
        links[name] = _inertial(el.find("inertial"), f"link '{name}'")

    joints = {}
    for el in root.findall("joint"):
        name = _attr(el, "name", "<joint>")
        what = f"joint '{name}'"
        if name in joints:
            raise URDFError(f"{what} is defined twice")
        jtype = _attr(el, "type", what)
        if jtype not in MOVABLE + COMPOSITE + ("fixed",):
            raise URDFError(f"{what} has unknown type '{jtype}'")
        p, c = el.find("parent"), el.find("child")
        if p is None or c is None:
            raise URDFError(f"{what} needs <parent link=...> and <child link=...>")
        parent, child = _attr(p, "link", f"{what} <parent>"), _attr(c, "link", f"{what} <child>")
        for ln in (parent, child):
            if ln not in links:
                raise URDFError(f"{what} refers to unknown link '{ln}'")
        ax = el.find("axis")
        axis = _axis(ax.get("xyz", "1 0 0") if ax is not None else "1 0 0", what,
                     jtype in MOVABLE or jtype in COMPOSITE)
        j = Joint(name, jtype, parent, child, _origin(el, what), axis)
        if jtype == "universal":
            j.axis2 = _universal_axis2(el, what, axis)
        lim = el.find("limit")
        if lim is not None:
            for key in ("lower", "upper", "velocity", "effort"):
                if lim.get(key) is not None:
                    setattr(j, key, _floats(lim.get(key), 1, f"{what} <limit {key}>")[0])
        if jtype == "continuous":
            j.lower, j.upper = -np.inf, np.inf
        m = el.find("mimic")
        if m is not None and jtype in MOVABLE:  # URDF: a mimic tag on a fixed joint means nothing
            j.mimic = _attr(m, "joint", f"{what} <mimic>")
            for key in ("multiplier", "offset"):
                if m.get(key) is not None:
                    v = float(_floats(m.get(key), 1, f"{what} <mimic {key}>")[0])
                    if abs(v) > MAX_MIMIC:
                        raise URDFError(f"{what} <mimic {key}> = {v:g}: |{key}| > {MAX_MIMIC:g} "
                                        "is not a physical coupling")
                    setattr(j, key, v)
        joints[name] = j

    u = URDF(root.get("name", ""), links, joints)
    for j in joints.values():
        if j.child in u.parent_joint:
            raise URDFError(f"link '{j.child}' has two parent joints: "
                            f"'{u.parent_joint[j.child].name}' and '{j.name}'")
        u.parent_joint[j.child] = j
        u.children.setdefault(j.parent, []).append(j)
    # urdfdom keeps joints in a name-sorted map, so Pinocchio's depth-first order visits children
    # by joint name; sorting here gives the same q ordering for the same file.
    for lst in u.children.values():
        lst.sort(key=lambda j: j.name)
    if not links:
        raise URDFError("URDF has no <link>")
    roots = [ln for ln in links if ln not in u.parent_joint]
    if len(roots) != 1:
        raise URDFError(f"URDF must have exactly one root link, found {len(roots)}: {roots[:5]}")
    u.root = roots[0]
    # every link must hang below the root (no cycles)
    seen, stack = set(), [u.root]
    while stack:
        ln = stack.pop()
        seen.add(ln)
        stack.extend(j.child for j in u.children.get(ln, []))
    if len(seen) != len(links):
        raise URDFError(f"URDF links not connected to root '{u.root}' (a cycle?): "
                        f"{sorted(set(links) - seen)[:5]}")
    return u


def _universal_axis2(el, what, axis):
    """The second axis of a ``universal`` joint (``<axis2 xyz>``, required), not parallel to
    the first."""
    ax2 = el.find("axis2")
    if ax2 is None or ax2.get("xyz") is None:
        raise URDFError(f"{what} (universal) needs <axis2 xyz=...>: the second axis, in the "
                        "joint frame at q = 0")
    a2 = _axis(ax2.get("xyz"), f"{what} <axis2>", True)
    if np.linalg.norm(np.cross(axis, a2)) < 1e-6:
        raise URDFError(f"{what} (universal): <axis> and <axis2> are parallel "
                        f"({ax2.get('xyz')!r}); a universal joint needs two distinct axes")
    return a2


def _axis(text, what, movable):
    """Unit axis from ``<axis xyz>``, normalised without overflow or underflow (exact decimal
    scaling by the largest component first), so ``1e200 1e200 0`` and ``1e-320 0 0`` are fine."""
    try:  # fast path: ordinary magnitudes normalise in floating point without over/underflow
        v = [float(x) for x in text.split()]
        big = max(map(abs, v)) if len(v) == 3 and all(map(math.isfinite, v)) else 0.0
        if 1e-150 < big < 1e150:
            nv = math.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2])
            return np.array([v[0] / nv, v[1] / nv, v[2] / nv])
    except (ValueError, AttributeError):
        pass
    try:
        d = [Decimal(x) for x in text.split()]
    except (InvalidOperation, AttributeError):
        raise URDFError(f"{what} <axis>: cannot read numbers from {text!r}") from None
    if len(d) != 3 or not all(x.is_finite() for x in d):
        raise URDFError(f"{what} <axis>: expected 3 finite numbers, got {text!r}")
    big = max(abs(x) for x in d)
    if big == 0:
        if movable:
            raise URDFError(f"{what} has a zero axis {text!r}")
        return np.array([1.0, 0.0, 0.0])  # a fixed joint's axis is never used
    a = np.array([float(x / big) for x in d])
    return a / np.linalg.norm(a)


def check_inertias(masses, inertias, names):
    """Validate rigid bodies: masses (L,) [kg], 3×3 inertias about the COM (L, 3, 3) [kg m²];
    ``names[i]`` names body i in the messages (e.g. ``"link 'hand'"``). Vectorised.

    Errors (URDFError, naming the first invalid body): non-finite values, mass < 0 or
    > MAX_MASS, |entries| > MAX_INERTIA, an asymmetric matrix, or one that is not positive
    semi-definite (λ_min < −(PSD_TOL·λ_max + PSD_ATOL)).
    Returns ``(zero_mass, triangle)``: indices that only warrant a warning — mass 0 with a
    non-zero inertia (kept as given, as Pinocchio does: the spatial inertia stays PSD, so M does
    too) and principal moments that violate λ_a + λ_b ≥ λ_c (no real body does, real files do).
    """
    m = np.asarray(masses, dtype=float).reshape(-1)
    I = np.asarray(inertias, dtype=float).reshape(-1, 3, 3)
    L = len(m)

    def fail(mask, msg):
        if np.any(mask):
            i = int(np.argmax(mask))
            raise URDFError(f"{names[i]}{msg(i)}")

    fail(~(np.isfinite(m) & np.isfinite(I).all(axis=(1, 2))),
         lambda i: ": mass and inertia must be finite")
    fail(m < 0, lambda i: f" has negative mass {m[i]}")
    fail(m > MAX_MASS, lambda i: f" has mass {m[i]:g} kg, above {MAX_MASS:g} kg")
    fail(np.abs(I).max(axis=(1, 2), initial=0.0) > MAX_INERTIA,
         lambda i: f" has an inertia entry above {MAX_INERTIA:g} kg m²")
    It = I.transpose(0, 2, 1)
    fail(np.abs(I - It).max(axis=(1, 2), initial=0.0)
         > 1e-12 * np.abs(I).max(axis=(1, 2), initial=0.0),
         lambda i: ": the inertia matrix must be symmetric")
    ev = np.linalg.eigvalsh(0.5 * (I + It)) if L else np.zeros((0, 3))
    fail(ev[:, 0] < -(PSD_TOL * np.maximum(ev[:, 2], 0.0) + PSD_ATOL),
         lambda i: (": the inertia about the centre of mass is not positive semi-definite "
                    f"(principal moments {ev[i, 0]:.6g}, {ev[i, 1]:.6g}, {ev[i, 2]:.6g} kg m²)"))
    nonzero = np.abs(I).max(axis=(1, 2), initial=0.0) > 0
    zero_mass = np.flatnonzero((m == 0) & nonzero)
    triangle = np.flatnonzero(nonzero & (ev[:, 0] + ev[:, 1]
                                         < (1 - TRIANGLE_TOL) * ev[:, 2] - PSD_ATOL))
    return zero_mass, triangle


def check_inertia(mass, inertia, what):
    """:func:`check_inertias` for one body; returns the list of warnings, a subset of
    ``['zero mass', 'triangle']``."""
    z, t = check_inertias([mass], [inertia], [what])
    return ["zero mass"] * len(z) + ["triangle"] * len(t)


def _inertial(el, what):
    if el is None:
        return None  # massless link
    m_el = el.find("mass")
    mass = _floats(m_el.get("value") if m_el is not None else None, 1, f"{what} <mass>")[0]
    if mass < 0:
        raise URDFError(f"{what} has negative mass {mass}")
    i = el.find("inertia")
    if i is None:
        I = np.zeros((3, 3))
    else:
        try:
            g = {k: float(i.get(k, "0")) for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")}
        except ValueError:
            g = {}
        if len(g) < 6 or not all(map(math.isfinite, g.values())):  # name the bad attribute
            g = {k: _floats(i.get(k, "0"), 1, f"{what} <inertia {k}>")[0]
                 for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")}
        I = np.array([[g["ixx"], g["ixy"], g["ixz"]],
                      [g["ixy"], g["iyy"], g["iyz"]],
                      [g["ixz"], g["iyz"], g["izz"]]])
    return Inertial(mass, _origin(el, what + " <inertial>"), I)
