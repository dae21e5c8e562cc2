"""Robot models from Denavit–Hartenberg tables and from zero-reference screw coordinates, as URDF.

Both sources are turned into the equivalent URDF text (built with ``xml.etree``, so every name
is escaped and nothing from the input is ever evaluated) and loaded like any URDF: the result is
the same :class:`~.model.Model` as the hand-written URDF, and :func:`~.writer.to_urdf` writes it
back out.

**Denavit–Hartenberg** (one row ``(a, alpha, d, theta)`` per joint, metres and radians):

- ``"standard"`` (distal, Denavit & Hartenberg 1955): ``ⁱ⁻¹Tᵢ = Rz(θᵢ+qᵢ) Tz(dᵢ) Tx(aᵢ) Rx(αᵢ)``
  for a revolute joint (``dᵢ+qᵢ`` for a prismatic one): joint i moves about/along
  z_{i−1}, link frame i sits at the distal end of link i. In the URDF, joint i's child link is
  a massless frame ``<link>_joint`` at Rz(θᵢ) Tz(dᵢ) in frame i−1, and the link frame i is welded
  to it at Tx(aᵢ) Rx(αᵢ).
- ``"modified"`` (proximal, Craig 1986): ``ⁱ⁻¹Tᵢ = Rx(αᵢ₋₁) Tx(aᵢ₋₁) Rz(θᵢ+qᵢ) Tz(dᵢ)``, where
  row i holds (aᵢ₋₁, αᵢ₋₁, dᵢ, θᵢ): joint i moves about/along z_i and link frame i is the joint
  frame (the URDF joint's origin is the whole transform, its axis z).

**Zero-reference screw coordinates** (Müller, "Screw and Lie group theory in multibody
kinematics", 2018, §2.4, eq. 10–12): C_i(q) = exp(Y₁q₁)···exp(Y_i q_i) A_i with the spatial
screws Y_i = (y_i × e_i + h_i e_i, e_i) (linear part first, as every public 6-vector of the
package; ``(v, 0)`` with ‖v‖ = 1 for a prismatic joint) and the body reference poses A_i = C_i(0),
both in the base frame at q = 0. URDF turns a joint about an axis through its child link's origin,
so joint i's child link is a massless frame ``<link>_joint`` on the axis (at the point of the
axis nearest to A_i's origin, oriented like body i) carrying body i on a fixed joint.

A **helical** joint (pitch h = e·v ≠ 0, eq. 12: Y = (y × e + h e, e)) is exp((e, h e) q) =
exp((e, 0) q) exp((0, e) h q), rotation and translation along one axis commuting: the revolute
joint ``<joint>`` to a massless link ``<link>_screw``, then a prismatic joint ``<joint>_pitch``
along the same axis that mimics it with multiplier h. The robot is then a
:class:`~.mimic.MimicRobot` whose independent coordinate is the screw's angle q, so every
capability of the package takes it (τ, its jets, M, forward dynamics, frame Jacobians,
regressor).
"""
from __future__ import annotations

import math
import numbers
import reprlib
import xml.etree.ElementTree as ET

import numpy as np

from .writer import inertial_element, limit_element, origin_element, urdf_text

__all__ = ["dh_urdf", "screws_urdf", "dh_transform", "CONVENTIONS", "JOINT_TYPES"]

CONVENTIONS = ("standard", "modified")
JOINT_TYPES = ("revolute", "continuous", "prismatic")
_PITCH_TOL = 1e-9  # |h| below this (m/rad) is a revolute joint with rounding in Y
MAX_PITCH = 1e6  # [m/rad] largest |h| of a helical joint (the URDF's MAX_MIMIC)


def _Rx(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[1, 0, 0, 0], [0, c, -s, 0], [0, s, c, 0], [0, 0, 0, 1.0]])


def _Rz(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0, 0], [s, c, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1.0]])


def _T(x, y, z):
    T = np.eye(4)
    T[:3, 3] = (x, y, z)
    return T


def dh_transform(a, alpha, d, theta, convention="standard"):
    """The 4×4 DH link transform ⁱ⁻¹Tᵢ at q = 0 (module docstring; metres, radians)."""
    if convention == "standard":
        return _Rz(theta) @ _T(0, 0, d) @ _T(a, 0, 0) @ _Rx(alpha)
    return _Rx(alpha) @ _T(a, 0, 0) @ _Rz(theta) @ _T(0, 0, d)


def _names(given, n, default, what):
    if given is None:
        return [default.format(i + 1) for i in range(n)]
    names = list(given)
    if len(names) != n or not all(isinstance(s, str) and s for s in names):
        raise ValueError(f"{what} must be {n} non-empty strings, got {given!r}")
    return names


def _finite_array(x, shape, what):
    """``x`` as a float array of ``shape`` (None: any) with finite entries, else ValueError."""
    try:
        if np.iscomplexobj(x):  # float() would drop the imaginary part with a warning
            raise TypeError
        a = np.array(x, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be real numbers of shape {shape}, got "
                         f"{reprlib.repr(x)}") from None
    if shape is not None and a.shape != shape:
        raise ValueError(f"{what} must have shape {shape}, got {a.shape}")
    bad = np.argwhere(~np.isfinite(a))
    if len(bad):
        raise ValueError(f"{what} has a non-finite entry at index {tuple(bad[0].tolist())}")
    return a


def _inertial(item, what):
    """(mass, com, inertia) from a mapping ``{"mass", "com", "inertia"}`` or a 3-tuple; None for
    a massless link."""
    if item is None:
        return None
    if isinstance(item, dict):
        unknown = set(item) - {"mass", "com", "inertia"}
        if unknown or "mass" not in item:
            raise ValueError(f"{what} must have keys 'mass', 'com', 'inertia', got "
                             f"{sorted(item)}")
        m, c, I = item["mass"], item.get("com", (0, 0, 0)), item.get("inertia", np.zeros((3, 3)))
    else:
        try:
            m, c, I = item
        except (TypeError, ValueError):
            raise ValueError(f"{what} must be a dict(mass=, com=, inertia=) or a "
                             "(mass, com, inertia) tuple") from None
    if not isinstance(m, numbers.Real) or not math.isfinite(m):
        raise ValueError(f"{what}: mass must be a finite number, got {m!r}")
    return (float(m), _finite_array(c, (3,), f"{what} com"),
            _finite_array(I, (3, 3), f"{what} inertia"))


def _inertials(inertials, n):
    if inertials is None or isinstance(inertials, (str, bytes, dict)):
        raise ValueError(f"inertials must be a sequence of {n} link inertials "
                         "(dict(mass=, com=, inertia=) or None for a massless link)")
    items = list(inertials)
    if len(items) != n:
        raise ValueError(f"inertials has {len(items)} entries for {n} links")
    return [_inertial(it, f"inertials[{i}]") for i, it in enumerate(items)]


def _types(joint_types, n):
    if joint_types is None:
        return ["revolute"] * n
    if isinstance(joint_types, str):
        joint_types = [joint_types] * n
    t = list(joint_types)
    if len(t) != n:
        raise ValueError(f"joint_types has {len(t)} entries for {n} joints")
    for i, s in enumerate(t):
        if s not in JOINT_TYPES:
            raise ValueError(f"joint_types[{i}] = {s!r}: expected one of {JOINT_TYPES}")
    return t


def _limits(limits, n):
    """(n, 4) lower, upper, velocity, effort (±inf where not given)."""
    if limits is None:
        return np.tile([-np.inf, np.inf, np.inf, np.inf], (n, 1))
    try:
        if np.iscomplexobj(limits):
            raise TypeError
        L = np.array(limits, dtype=float)
    except (TypeError, ValueError):
        raise ValueError("limits must be numbers of shape (n, 4): lower, upper, velocity, "
                         "effort") from None
    if L.shape != (n, 4) or np.isnan(L).any():
        got = (f"a NaN in row {int(np.argwhere(np.isnan(L))[0][0])}" if L.shape == (n, 4)
               else f"shape {L.shape}")
        raise ValueError(f"limits must have shape ({n}, 4) without NaN (lower, upper, velocity, "
                         f"effort; ±inf for none), got {got}")
    return L


class _Writer:
    """Accumulates the URDF ``<robot>`` (links with inertials, joints, extra frames)."""

    def __init__(self, name, base):
        self.root = ET.Element("robot", name=str(name))
        self.links = {}
        self._link(base, None)

    def _link(self, name, inertial):
        if name in self.links:
            raise ValueError(f"link name '{name}' is used twice")
        el = ET.SubElement(self.root, "link", name=name)
        if inertial is not None:
            inertial_element(el, *inertial)
        self.links[name] = el

    def joint(self, name, jtype, parent, child, origin, inertial=None, axis=None, limit=None,
              mimic=None):
        self._link(child, inertial)
        el = ET.SubElement(self.root, "joint", name=name, type=jtype)
        ET.SubElement(el, "parent", link=parent)
        ET.SubElement(el, "child", link=child)
        origin_element(el, origin)
        if axis is not None:
            ET.SubElement(el, "axis", xyz=" ".join(repr(float(v)) for v in axis))
        if limit is not None:
            limit_element(el, jtype, *limit)
        if mimic is not None:
            ET.SubElement(el, "mimic", joint=mimic[0], multiplier=repr(float(mimic[1])),
                          offset="0")

    def frames(self, frames):
        """Extra massless frames: name → (link, 4×4 pose in that link)."""
        for fname, spec in dict(frames or {}).items():
            try:
                link, T = spec
            except (TypeError, ValueError):
                raise ValueError(f"frames['{fname}'] must be (link name, 4×4 pose)") from None
            if link not in self.links:
                raise ValueError(f"frames['{fname}']: unknown link '{link}'")
            T = _pose(T, f"frames['{fname}'] pose")
            self.joint(f"{link}_to_{fname}", "fixed", link, str(fname), T)

    def text(self):
        return urdf_text(self.root)


def _pose(T, what):
    T = _finite_array(T, (4, 4), what)
    R = T[:3, :3]
    if (np.abs(R.T @ R - np.eye(3)).max() > 1e-9 or np.linalg.det(R) < 0
            or np.abs(T[3] - (0, 0, 0, 1)).max() > 0):
        raise ValueError(f"{what} is not a rigid transform (orthonormal rotation, last row "
                         "0 0 0 1)")
    return T


def dh_urdf(table, convention="standard", *, inertials, joint_types=None, joint_names=None,
            link_names=None, base_link="base", limits=None, frames=None, name="dh_robot"):
    """URDF text of a serial chain given by a DH table (module docstring).

    Args:
        table: (n, 4) rows ``(a, alpha, d, theta)`` [m, rad, m, rad]; in the modified convention
            row i is (aᵢ₋₁, αᵢ₋₁, dᵢ, θᵢ). θᵢ (revolute) and dᵢ (prismatic) are the joint offsets
            (the value at q = 0).
        convention: ``"standard"`` or ``"modified"``.
        inertials: n link inertials in the DH link frame i: ``dict(mass=kg, com=(3,) m,
            inertia=3×3 about the COM in link axes, kg m²)`` or None for a massless link.
        joint_types: one of ``"revolute" | "continuous" | "prismatic"`` or n of them
            (default revolute).
        joint_names, link_names: n names (default ``joint1``…, ``link1``…).
        base_link: the name of frame 0.
        limits: (n, 4) lower, upper, velocity, effort (±inf: none).
        frames: extra fixed frames, name → (link name, 4×4 pose in that link) (a tool flange).
        name: the ``<robot name>``.
    Returns:
        URDF text (str).
    Raises:
        ValueError naming the argument and the row: a table of the wrong shape, a non-finite
        entry, an unknown convention or joint type, inertials of the wrong count.
    """
    if convention not in CONVENTIONS:
        raise ValueError(f"unknown DH convention {convention!r}: expected 'standard' or "
                         "'modified'")
    try:
        if np.iscomplexobj(table):  # float() would drop the imaginary part with a warning
            raise TypeError
        tab = np.array(table, dtype=float)
    except (TypeError, ValueError):
        raise ValueError("the DH table must be real numbers of shape (n, 4): a, alpha, d, "
                         "theta") from None
    if tab.ndim != 2 or tab.shape[1] != 4 or tab.shape[0] == 0:
        raise ValueError(f"the DH table must have shape (n, 4) with n ≥ 1 (columns a, alpha, d, "
                         f"theta), got shape {tab.shape}")
    n = tab.shape[0]
    bad = np.argwhere(~np.isfinite(tab))
    if len(bad):
        r, c = bad[0]
        raise ValueError(f"the DH table has a non-finite {('a', 'alpha', 'd', 'theta')[c]} in "
                         f"row {r}")
    types = _types(joint_types, n)
    jn = _names(joint_names, n, "joint{}", "joint_names")
    ln = _names(link_names, n, "link{}", "link_names")
    ine = _inertials(inertials, n)
    lim = _limits(limits, n)
    w = _Writer(name, str(base_link))
    parent = str(base_link)
    for i, (a, alpha, d, theta) in enumerate(tab):
        if convention == "modified":
            w.joint(jn[i], types[i], parent, ln[i], dh_transform(a, alpha, d, theta, "modified"),
                    ine[i], (0, 0, 1), lim[i])
        else:
            jl = f"{ln[i]}_joint"
            w.joint(jn[i], types[i], parent, jl, _Rz(theta) @ _T(0, 0, d), None, (0, 0, 1),
                    lim[i])
            w.joint(f"{jl}_to_{ln[i]}", "fixed", jl, ln[i], _T(a, 0, 0) @ _Rx(alpha), ine[i])
        parent = ln[i]
    w.frames(frames)
    return w.text()


def screws_urdf(Y, A, *, inertials, parent=None, joint_names=None, link_names=None,
                base_link="base", limits=None, frames=None, name="screw_robot"):
    """URDF text of a tree given by zero-reference screw coordinates (module docstring).

    Args:
        Y: (n, 6) spatial joint screws at q = 0 in the base frame, ``(y×e + h e, e)`` (linear
            first) with ‖e‖ = 1 (revolute for pitch h = 0, helical with h [m/rad] otherwise) or
            ``(e, 0)`` (prismatic).
        A: (n, 4, 4) reference poses A_i = C_i(0) of the body frames in the base frame.
        inertials: n body inertials in body frame i (as :func:`dh_urdf`).
        parent: (n,) parent body index (−1: the base), each < its child; default a serial chain.
        joint_names, link_names, base_link, limits, frames, name: as :func:`dh_urdf`.
    Returns:
        URDF text (str).
    Raises:
        ValueError naming the argument and the joint: wrong shapes, non-finite entries, a screw
        that is neither a unit-axis rotation nor a unit translation, ‖h‖ > MAX_PITCH, a pose
        that is not rigid, a bad parent index.
    """
    Y = _finite_array(Y, None, "Y")
    if Y.ndim != 2 or Y.shape[1] != 6 or Y.shape[0] == 0:
        raise ValueError(f"Y must have shape (n, 6) with n ≥ 1 (linear, angular parts), got "
                         f"shape {Y.shape}")
    n = Y.shape[0]
    A = _finite_array(A, (n, 4, 4), "A")
    for i in range(n):
        _pose(A[i], f"A[{i}]")
    par = list(range(-1, n - 1)) if parent is None else list(parent)
    if len(par) != n or not all(isinstance(p, numbers.Integral) and -1 <= p < i
                                for i, p in enumerate(par)):
        raise ValueError(f"parent must be {n} integers with -1 <= parent[i] < i, got {parent!r}")
    jn = _names(joint_names, n, "joint{}", "joint_names")
    ln = _names(link_names, n, "link{}", "link_names")
    ine = _inertials(inertials, n)
    lim = _limits(limits, n)
    w = _Writer(name, str(base_link))
    J = np.empty((n, 4, 4))  # the joint frames at q = 0, in the base frame
    for i in range(n):
        v, e = Y[i, :3], Y[i, 3:]
        ne, nv = np.linalg.norm(e), np.linalg.norm(v)
        R = A[i, :3, :3]
        if ne > 0.5:
            if abs(ne - 1) > 1e-9:
                raise ValueError(f"Y[{i}]: the angular part must be a unit vector (|e| = {ne:.6g})")
            h = float(e @ v)
            if abs(h) > MAX_PITCH:
                raise ValueError(f"Y[{i}] (joint '{jn[i]}') has pitch h = {h:.6g} m/rad: |h| > "
                                 f"{MAX_PITCH:g} is not a physical screw")
            if abs(h) <= _PITCH_TOL:
                h = 0.0
            v = v - h * e
            y = np.cross(e, v)  # the point of the axis nearest the base origin (v = y × e)
            r = A[i, :3, 3]
            y = y + e * (e @ (r - y))  # … moved to the point nearest body i's origin
            jtype, axis = "revolute", R.T @ e
        elif ne < 1e-12 and abs(nv - 1) <= 1e-9:
            h, y, jtype, axis = 0.0, A[i, :3, 3], "prismatic", R.T @ v
        else:
            raise ValueError(f"Y[{i}] (joint '{jn[i]}') is neither a revolute screw (|e| = 1) nor "
                             f"a prismatic one (e = 0, |v| = 1): |e| = {ne:.6g}, |v| = {nv:.6g}")
        J[i] = np.eye(4)
        J[i, :3, :3], J[i, :3, 3] = R, y
        Ap = np.eye(4) if par[i] < 0 else A[par[i]]  # the parent body's frame
        Ap_inv = np.eye(4)
        Ap_inv[:3, :3], Ap_inv[:3, 3] = Ap[:3, :3].T, -Ap[:3, :3].T @ Ap[:3, 3]
        pl = base_link if par[i] < 0 else ln[par[i]]
        jl = f"{ln[i]}_joint"
        if h:  # helical: the rotation, then the translation h·q along the same axis (a mimic)
            w.joint(jn[i], jtype, str(pl), f"{ln[i]}_screw", Ap_inv @ J[i], None, axis, lim[i])
            w.joint(f"{jn[i]}_pitch", "prismatic", f"{ln[i]}_screw", jl, np.eye(4), None, axis,
                    (-np.inf, np.inf, np.inf, np.inf), mimic=(jn[i], h))
        else:
            w.joint(jn[i], jtype, str(pl), jl, Ap_inv @ J[i], None, axis, lim[i])
        B = np.eye(4)
        B[:3, 3] = R.T @ (A[i, :3, 3] - y)
        w.joint(f"{jl}_to_{ln[i]}", "fixed", jl, ln[i], B, ine[i])
    w.frames(frames)
    return w.text()
