"""The frozen robot model (screw form, seed 004 §2) and its construction from a URDF tree.

Bodies are the child links of the movable joints, numbered in depth-first order, so that
``parent[i] < i``. Body frame = child link frame = joint frame (doc/math.md), hence
``C_{λ(i),i}(q_i) = B_i exp(X_i q_i)`` with ``B_i`` the joint ``<origin>`` (composed with any fixed
joints in between) and ``X_i = (e, 0)`` (revolute) or ``(0, e)`` (prismatic).
Twists are angular-first ``(ω, v)``; wrenches ``(m, f)``.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from ..kernels import lie
import warnings

from .urdf import (COMPOSITE, LIE, MAX_LENGTH, MAX_MIMIC, MOVABLE, URDFError,
                   URDFWarning, check_inertia, check_inertias, parse)


def _ro(a):
    a = np.ascontiguousarray(a, dtype=float)
    a.setflags(write=False)
    return a


@dataclass(frozen=True, eq=False)
class Model:
    """Immutable rigid multibody model. Arrays are read-only.

    Attributes:
        n: number of movable joints = bodies.
        joint_names: movable joints, depth-first (Pinocchio's order for the same file).
        link_names: body i's link (the child link of joint i).
        joint_types: ``'revolute' | 'continuous' | 'prismatic'`` per joint.
        parent: (n,) parent body index λ(i), −1 for the base.
        axis: (n, 3) joint axis in body frame.
        B: (n, 4, 4) pose of body i in body λ(i) at q = 0.
        X: (n, 6) joint screw in body frame (seed 004 eq. 4–5).
        inertias: (n, 6, 6) body inertia in body frame (seed 004 eq. 24), fixed links merged.
        gravity: (3,) gravitational acceleration in the base frame [m/s²].
        lower, upper, velocity_limit, effort_limit: (n,) URDF limits (±inf where absent).
        link_frames: link name → (body index or −1 for the base, 4×4 pose of the link in that body).
        base_link: name of the base link (fixed to the world, or floating).
        floating_base: True if the base link is a free body (a 6-DOF free joint to the world).
        base_inertia: (6, 6) inertia of the base link and the links welded to it, in its frame
            (used with a floating base; zero otherwise).
    """

    n: int
    joint_names: tuple
    link_names: tuple
    joint_types: tuple
    parent: np.ndarray
    axis: np.ndarray
    B: np.ndarray
    X: np.ndarray
    inertias: np.ndarray
    gravity: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    velocity_limit: np.ndarray
    effort_limit: np.ndarray
    link_frames: dict = field(repr=False)
    base_link: str = ""
    name: str = ""
    floating_base: bool = False
    base_inertia: np.ndarray = field(default_factory=lambda: np.zeros((6, 6)), repr=False)
    mimic: dict = field(default_factory=dict, repr=False)
    #: spherical / floating joints inside the tree: name → (kind, index of its first chart
    #: joint) (:mod:`~.lie_joints`)
    lie_joints: dict = field(default_factory=dict, repr=False)

    def __post_init__(self):
        for k in ("parent", "axis", "B", "X", "inertias", "gravity", "lower", "upper",
                  "velocity_limit", "effort_limit", "base_inertia"):
            a = getattr(self, k)
            object.__setattr__(self, k, _ro(a) if k != "parent" else _ro_int(a))

    @property
    def nq(self) -> int:
        """Configuration size: n, or 7 + n with a floating base (x, y, z, qx, qy, qz, qw)."""
        return self.n + 7 * self.floating_base

    @property
    def nv(self) -> int:
        """Velocity size: n, or 6 + n with a floating base (linear, angular velocity first)."""
        return self.n + 6 * self.floating_base

    def create_data(self, kmax=2):
        """A new :class:`~mbs_dynamics._data.Data` workspace for this model (derivative orders
        up to ``kmax`` preallocated; grown on demand)."""
        from ..kernels._data import Data
        return Data(self, kmax)

    @property
    def body_of_link(self):
        return {k: v[0] for k, v in self.link_frames.items()}

    def with_inertias(self, inertias):
        """A new model with other body inertias (n, 6, 6)."""
        return replace(self, inertias=np.array(inertias))


def _ro_int(a):
    a = np.ascontiguousarray(a, dtype=np.int64)
    a.setflags(write=False)
    return a


def _resolve_mimics(u, locked):
    """Follow every mimic chain to its independent master, in linear time (each joint's
    resolution is kept and reused by the chains through it).

    Returns name → ``(master, multiplier, offset)`` with q_name = multiplier·q_master + offset,
    or ``(None, 0.0, value)`` when the chain reaches a locked joint (then q_name = value), for
    every mimic joint not itself locked. Chains compose: q = k₁(k₂ q_b + o₂) + o₁ =
    k₁k₂ q_b + (k₁o₂ + o₁); a composed |multiplier| or |offset| above ``MAX_MIMIC`` (or not
    finite) is a URDFError naming the joint.
    """
    memo = {}
    for j0 in u.joints.values():
        if j0.mimic is None or j0.name in locked or j0.name in memo:
            continue
        path, onpath, cur = [], set(), j0.name
        while True:
            master = u.joints[cur].mimic
            if master not in u.joints:
                raise URDFError(f"joint '{cur}' mimics joint '{master}', which is not a joint of "
                                "the URDF")
            mj = u.joints[master]
            if mj.type not in MOVABLE:
                raise URDFError(f"joint '{cur}' mimics joint '{master}' of type '{mj.type}': a "
                                "mimic's master must be revolute, continuous or prismatic")
            if master == cur or master in onpath:
                raise URDFError("mimic joints form a cycle: " + " -> ".join(path + [cur, master]))
            path.append(cur)
            onpath.add(cur)
            if master in locked:
                base = (None, 0.0, float(locked[master]))
                break
            if master in memo:
                base = memo[master]
                break
            if mj.mimic is None:
                base = (master, 1.0, 0.0)
                break
            cur = master
        m, k, o = base
        for name in reversed(path):
            j = u.joints[name]
            k, o = j.multiplier * k, j.multiplier * o + j.offset
            if not (abs(k) <= MAX_MIMIC and abs(o) <= MAX_MIMIC):
                raise URDFError(f"joint '{name}': its mimic chain composes to multiplier {k:g}, "
                                f"offset {o:g} (|value| > {MAX_MIMIC:g} is not a physical "
                                "coupling)")
            memo[name] = (m, k, o)
    return memo


def build(source, *, base_link=None, tip_link=None, locked_joints=None, gravity=(0.0, 0.0, -9.81),
          floating_base=False):
    """Build a :class:`Model` from URDF text or a path (see :func:`mbs_dynamics.load_urdf`).

    Mimic joints stay ordinary joints of the model ("full" coordinates); ``Model.mimic`` maps each
    mimic joint to ``(master, multiplier, offset)`` with its master resolved to an independent
    joint (:mod:`mbs_dynamics.mimic` turns that into the independent coordinates). A mimic whose
    master is locked is locked at ``multiplier·value + offset``. Raises URDFError for invalid
    inertias (:func:`mbs_dynamics.urdf.check_inertia`) and for a movable joint that moves no mass
    (forward dynamics would be singular), naming the link or joint.
    """
    u = parse(source)
    base = u.root if base_link is None else base_link
    if base not in u.links:
        raise URDFError(f"base_link '{base}' is not a link of the URDF")
    g = np.asarray(gravity, dtype=float)
    if g.shape != (3,) or not np.all(np.isfinite(g)):
        raise ValueError(f"gravity must be 3 finite numbers, got {gravity!r}")
    locked = dict(locked_joints or {})
    for jn, v in locked.items():
        if jn not in u.joints:
            raise URDFError(f"locked joint '{jn}' is not a joint of the URDF")
        if u.joints[jn].type in COMPOSITE:
            raise URDFError(f"locked joint '{jn}' is of type '{u.joints[jn].type}': "
                            "locked_joints takes one position per joint (revolute, continuous "
                            "or prismatic), not a multi-DOF joint; make it fixed in the URDF")
        if u.joints[jn].type not in MOVABLE:
            raise URDFError(f"locked joint '{jn}' is of type '{u.joints[jn].type}', not movable")
        try:
            ok = np.isfinite(float(v))
        except (TypeError, ValueError, OverflowError):
            ok = False
        if not ok:
            raise ValueError(f"locked joint '{jn}' position must be finite, got {v!r}")

    # mimic joints: resolve every chain to its independent master (or to a locked joint)
    mimic = {}
    for name, (master, k, o) in _resolve_mimics(u, locked).items():
        if master is None:
            locked[name] = o  # its master is locked: so is the mimic, at the mimic position
        else:
            mimic[name] = (master, k, o)

    # the links that stay movable-connected: everything below base, or the path base → tip
    path = None
    if tip_link is not None:
        if tip_link not in u.links:
            raise URDFError(f"tip_link '{tip_link}' is not a link of the URDF")
        path, ln = [tip_link], tip_link
        while ln != base:
            if ln not in u.parent_joint:
                raise URDFError(f"tip_link '{tip_link}' is not below base_link '{base}'")
            ln = u.parent_joint[ln].parent
            path.append(ln)
        path = set(path)

    names, links, types, parent, axis, B, X, lims = [], [], [], [], [], [], [], []
    lie_j = {}
    link_frames = {base: (-1, np.eye(4))}
    eye4 = np.eye(4)

    # depth-first, children by joint name (Pinocchio's order); iterative so that any depth loads
    stack = list(reversed(u.children.get(base, ())))
    while stack:
        j = stack.pop()  # pre-order: a joint, then its whole subtree, then its next sibling
        body, S = link_frames[j.parent]
        movable = j.type in MOVABLE and j.name not in locked
        if path is not None and j.child not in path and (movable or j.type in COMPOSITE):
            continue  # a movable branch off the selected chain is dropped
        if j.type in COMPOSITE:  # 1-DOF joints through massless links (composite_parts)
            if j.type in LIE:
                lie_j[j.name] = (j.type, len(names))
            _composite(j, body, S, u, link_frames, names, links, types, parent, axis, B, X,
                       lims)
            stack.extend(reversed(u.children.get(j.child, ())))
            continue
        if movable:
            names.append(j.name)
            links.append(j.child)
            types.append(j.type)
            parent.append(body)
            axis.append(j.axis)
            B.append(S @ j.origin)
            x = np.zeros(6)
            x[3 * (j.type == "prismatic"):][:3] = j.axis
            X.append(x)
            lims.append((j.lower, j.upper, j.velocity, j.effort))
            link_frames[j.child] = (len(names) - 1, eye4)
        else:
            T = S @ j.origin
            if j.name in locked:
                Xl = np.r_[j.axis, 0, 0, 0] if j.type != "prismatic" else np.r_[0, 0, 0, j.axis]
                T = T @ lie.exp_se3(Xl, float(locked[j.name]))
            link_frames[j.child] = (body, T)
        stack.extend(reversed(u.children.get(j.child, ())))
    if tip_link is not None and tip_link not in link_frames:
        raise URDFError(f"tip_link '{tip_link}' is not below base_link '{base}'")
    n = len(names)
    if n == 0 and not floating_base:
        raise URDFError("the selected URDF tree has no movable joint")
    index = {nm: i for i, nm in enumerate(names)}
    # a mimic whose master is not in the model (dropped off the tip_link chain) is independent
    mimic = {m: v for m, v in mimic.items() if m in index and v[0] in index}

    # merge every link's inertia into its body (seed 004 eq. 24; fixed joints: Ad_{S⁻¹}ᵀ M Ad_{S⁻¹})
    _validate_links(u, link_frames, include_base=floating_base)
    # the links welded to the base make the base body's inertia (it matters only when it floats)
    inertias, base_inertia = _merge_inertias(u, link_frames, n)

    exempt = set(mimic) | {v[0] for v in mimic.values()}  # checked in independent coordinates
    _check_moves_mass(names, parent, B, X, inertias, exempt,
                      base_inertia if floating_base and not exempt else None)

    lims = np.array(lims, dtype=float).reshape(n, 4)
    return Model(
        n=n, joint_names=tuple(names), link_names=tuple(links), joint_types=tuple(types),
        parent=np.array(parent), axis=np.array(axis), B=np.array(B), X=np.array(X),
        inertias=inertias, gravity=g, lower=lims[:, 0], upper=lims[:, 1],
        velocity_limit=lims[:, 2], effort_limit=lims[:, 3], link_frames=link_frames,
        base_link=base, name=u.name,
        mimic={m: mimic[m] for m in names if m in mimic},  # in joint order: deterministic
        floating_base=bool(floating_base), base_inertia=base_inertia, lie_joints=lie_j)


def composite_parts(j):
    """The 1-DOF joints ``(name, child link, type, unit axis)`` that a multi-DOF URDF joint
    ``j`` (:data:`~.urdf.COMPOSITE`) is, parent to child; every child link but the last is a
    massless link of the model. All axes are in the joint frame at q = 0 (the intermediate
    links' frames coincide with the joint frame there).

    - ``planar`` (the URDF specification: motion in the plane normal to ``<axis>`` e):
      q = (x, y, θ), ``<name>_x`` and ``<name>_y`` prismatic along u₁, u₂ and ``<name>_theta``
      revolute about e (u₁ × u₂ = e; u₁ is the joint frame's x axis projected on the plane, or
      its y axis when |e_x| ≥ 0.9 for the unit normal e), through links ``<child>_planar_x``,
      ``<child>_planar_y``. (x, y) are in the parent's joint frame and θ ∈ SO(2): no
      singularity. Pinocchio's planar velocity is the same motion in the child frame,
      (v_x, v_y) = R(θ)ᵀ (ẋ, ẏ); unlike Pinocchio 4.1, which builds a URDF planar joint in the
      x–y plane whatever its axis, the plane here is normal to the axis.
    - ``universal`` (extension; Hooke's joint): R = exp(ê₁ q₁) exp(ê₂ q₂), ``<name>_1`` about
      ``<axis>`` e₁ to link ``<child>_universal``, then ``<name>_2`` about ``<axis2>`` e₂ (which
      turns with q₁): Pinocchio's ``JointModelUniversal(e₁, e₂)`` with the same q and q̇.
    - ``cylindrical`` (extension): ``<name>_theta`` revolute about e to link
      ``<child>_cylindrical``, then ``<name>_d`` prismatic along e; q = (θ, d) [rad, m]
      (rotation and translation along one axis commute).
    - ``spherical`` (extension) and ``floating`` (URDF, inside the tree): the chart of
      :mod:`~.lie_joints` — ``<name>_rx``, ``<name>_ry``, ``<name>_rz`` revolute about the joint
      frame's x, y, z through links ``<child>_<type>_rx``, ``<child>_<type>_ry`` (a floating
      joint: ``<name>_x``, ``_y``, ``_z`` prismatic first). The configuration is the group's
      (:class:`~.lie_joints.LieJointRobot`), never these Euler angles.
    """
    e = np.asarray(j.axis, dtype=float)
    if j.type in LIE:
        I3 = np.eye(3)
        rot = tuple((f"{j.name}_r{c}", f"{j.child}_{j.type}_r{c}", "continuous", I3[k])
                    for k, c in enumerate("xyz"))
        rot = rot[:2] + ((rot[2][0], j.child, "continuous", I3[2]),)
        if j.type == "spherical":
            return rot
        return tuple((f"{j.name}_{c}", f"{j.child}_{j.type}_{c}", "prismatic", I3[k])
                     for k, c in enumerate("xyz")) + rot
    if j.type == "universal":
        return ((f"{j.name}_1", f"{j.child}_universal", "continuous", e),
                (f"{j.name}_2", j.child, "continuous", np.asarray(j.axis2, dtype=float)))
    if j.type == "cylindrical":
        return ((f"{j.name}_theta", f"{j.child}_cylindrical", "continuous", e),
                (f"{j.name}_d", j.child, "prismatic", e))
    a = np.eye(3)[0] if abs(e[0]) < 0.9 else np.eye(3)[1]
    u1 = a - e * (e @ a)
    u1 /= np.linalg.norm(u1)
    u2 = np.cross(e, u1)
    return ((f"{j.name}_x", f"{j.child}_planar_x", "prismatic", u1),
            (f"{j.name}_y", f"{j.child}_planar_y", "prismatic", u2),
            (f"{j.name}_theta", j.child, "continuous", e))


def _composite(j, body, S, u, link_frames, names, links, types, parent, axis, B, X, lims):
    """Append the 1-DOF joints of :func:`composite_parts` (unbounded, no effort or velocity
    limit) to the model under construction."""
    eye4 = np.eye(4)
    parts = composite_parts(j)
    for k, (jn, ln, jt, ax) in enumerate(parts):
        if k < len(parts) - 1 and (ln in u.links or ln in link_frames):
            raise URDFError(f"joint '{j.name}' ({j.type}) needs a massless link '{ln}' between "
                            "its axes, which the URDF already has")
        if jn in u.joints or jn in names:
            raise URDFError(f"joint '{j.name}' ({j.type}) names its 1-DOF joints "
                            f"{', '.join(repr(p[0]) for p in parts)}, and the URDF already has a "
                            f"joint '{jn}': rename one")
        names.append(jn)
        links.append(ln)
        types.append(jt)
        parent.append(body if k == 0 else len(names) - 2)
        axis.append(ax)
        B.append(S @ j.origin if k == 0 else eye4)
        x = np.zeros(6)
        x[3 * (jt == "prismatic"):][:3] = ax
        X.append(x)
        lims.append((-np.inf, np.inf, np.inf, np.inf))
        link_frames[ln] = (len(names) - 1, eye4)


def _validate_links(u, link_frames, include_base=False):
    """Check every link whose inertia enters the model (:func:`~.urdf.check_inertias`): invalid →
    URDFError naming the link; dubious (zero mass with inertia, triangle inequality) → one
    URDFWarning listing the links. Links welded to a fixed base never enter the dynamics: an
    invalid one there only warns (``include_base=True`` for a floating base)."""
    lk = [(ln, body) for ln, (body, _) in link_frames.items() if u.links.get(ln) is not None]
    dubious = {"zero mass": [], "triangle": [], "ignored": []}
    for moving in (True, False):
        sel = [ln for ln, body in lk if (body >= 0 or include_base) == moving]
        if not sel:
            continue
        masses = [u.links[ln].mass for ln in sel]
        inertias = [u.links[ln].inertia for ln in sel]
        if not moving:  # welded to the fixed base: report invalid ones, one by one
            for ln, m_, I_ in zip(sel, masses, inertias):
                try:
                    check_inertias([m_], [I_], [f"link '{ln}'"])
                except URDFError as e:
                    dubious["ignored"].append(f"{ln} ({str(e).split(': ', 1)[-1]})")
            continue
        zero, tri = check_inertias(masses, inertias, [f"link '{ln}'" for ln in sel])
        dubious["zero mass"] += [sel[i] for i in zero]
        dubious["triangle"] += [sel[i] for i in tri]
    text = {"zero mass": "have zero mass but a non-zero inertia (kept as given, as Pinocchio does)",
            "triangle": "have principal moments that violate the triangle inequality "
                        "(kept as given)",
            "ignored": "are invalid but welded to the fixed base, so they do not enter the "
                       "dynamics"}
    for key, lst in dubious.items():
        if lst:
            more = f" (+{len(lst) - 8} more)" if len(lst) > 8 else ""
            warnings.warn(f"URDF '{u.name}': links {', '.join(lst[:8])}{more} {text[key]}",
                          URDFWarning, stacklevel=4)


def _merge_inertias(u, link_frames, n):
    """Every link's spatial inertia merged into its body (seed 004 eq. 24; a link at pose S in
    the body, COM frame P = S·com: Θ_b = R Θ_c Rᵀ − m c̃ c̃, off-diagonal ±m c̃), vectorised.
    Returns (n, 6, 6) body inertias and the (6, 6) inertia of the links welded to the base."""
    inertias = np.zeros((n + 1, 6, 6))  # row n: the base
    items = [(body, S, u.links[ln]) for ln, (body, S) in link_frames.items()
             if u.links.get(ln) is not None]
    if not items:
        return inertias[:n], inertias[n]
    body = np.array([b for b, _, _ in items])
    P = np.array([S for _, S, _ in items]) @ np.array([ine.origin for _, _, ine in items])
    m = np.array([ine.mass for _, _, ine in items])
    Ic = np.array([ine.inertia for _, _, ine in items])
    R, c = P[:, :3, :3], P[:, :3, 3]
    C = np.zeros((len(items), 3, 3))
    C[:, 0, 1], C[:, 0, 2], C[:, 1, 2] = -c[:, 2], c[:, 1], -c[:, 0]
    C[:, 1, 0], C[:, 2, 0], C[:, 2, 1] = c[:, 2], -c[:, 1], c[:, 0]
    I6 = np.zeros((len(items), 6, 6))
    I6[:, :3, :3] = R @ Ic @ R.transpose(0, 2, 1) - m[:, None, None] * (C @ C)
    I6[:, :3, 3:] = m[:, None, None] * C
    I6[:, 3:, :3] = -m[:, None, None] * C
    I6[:, 3:, 3:] = m[:, None, None] * np.eye(3)
    np.add.at(inertias, body, I6)  # body −1 lands in row n
    return np.ascontiguousarray(inertias[:n]), inertias[n].copy()


def _check_moves_mass(names, parent, B, X, inertias, exempt, base_inertia=None, rtol=1e-10):
    """URDFError naming the joint when a movable joint moves no mass, i.e. when the
    articulated-body inertia along its screw, D_i = X_iᵀ I^A_i X_i (seed 000, ABA), vanishes
    (relative to X_iᵀ I^c_i X_i of the composite body) at q = 0 AND at a fixed generic
    configuration: then M(q) is singular everywhere (a massless subtree, a point mass on the
    axis) and forward dynamics undefined. A singularity at q = 0 only (icub's neck: aligned axes
    and a degenerate inertia) is a property of that configuration, not of the model, and passes.
    Joints in ``exempt`` (mimic joints and their masters) are checked in the independent
    coordinates instead (:class:`~.mimic.MimicRobot`); their subtrees still count.

    With ``base_inertia`` (a floating base) the base's articulated inertia must be positive
    definite too, else URDFError "the floating base moves no mass".

    O(n) NumPy: one backward pass with 6×6 matrices (two when q = 0 is singular), skipped when
    every body's spatial inertia is positive definite (then M(q) is, for every q).
    """
    lam = np.linalg.eigvalsh(inertias) if len(names) else np.ones((0, 6))
    if np.all(lam[:, 0] > 1e-12 * lam[:, -1]) and _pd(base_inertia):
        return  # (a PD base plus PSD articulated children is PD)
    bad, IA0 = _first_massless(names, parent, B, X, inertias, exempt, None, rtol, base_inertia)
    if bad >= 0 or not _pd(IA0):
        qg = np.random.default_rng(12345).uniform(-0.9, 0.9, len(names))
        bad, IA0 = _first_massless(names, parent, B, X, inertias, exempt, qg, rtol, base_inertia)
    if bad < 0 and not _pd(IA0):
        if not np.any(base_inertia):
            raise URDFError("the floating base moves no mass: its links have no inertia and the "
                            "joints below it leave some base motion free (the base's 6×6 "
                            "articulated inertia is singular, so forward dynamics is undefined); "
                            "give the base link an <inertial> or load it with a fixed base")
        raise URDFError("the floating base moves no mass: its links and the robot's have no "
                        "inertia in some direction (the base's 6×6 articulated inertia is "
                        "singular, so forward dynamics is undefined)")
    if bad >= 0:
        raise URDFError(f"joint '{names[bad]}' moves no mass (its subtree has no inertia "
                        "about/along its axis): the mass matrix is singular; give the links "
                        "below it an inertial or lock the joint with locked_joints")


def _pd(I, rtol=1e-10, floor=1e-15):
    """A (6, 6) inertia (angular rows first) is positive definite (None: nothing to check),
    independent of units: its Cholesky pivots must exceed ``rtol`` times their own diagonal
    entry (the test of the Jacobi-scaled matrix, so a 1 kg body with 10¹² kg m² of inertia is as
    regular as a 1 kg, 1 kg m² one), and each diagonal entry ``floor`` times the largest of its
    3×3 block (kg m² or kg) — below that it is rounding left by the articulated-body sums,
    not inertia."""
    if I is None:
        return True
    A = 0.5 * (I + I.T)
    d = np.diag(A).copy()
    for blk in (slice(0, 3), slice(3, 6)):
        top = d[blk].max()
        if not (top > 0 and np.all(d[blk] > floor * top)):
            return False
    for k in range(6):   # LDLᵀ, pivots against their own diagonal
        p = A[k, k]
        if not p > rtol * d[k]:
            return False
        c = A[k + 1:, k] / p
        A[k + 1:, k + 1:] -= np.outer(c, A[k + 1:, k])
    return True


def _first_massless(names, parent, B, X, inertias, exempt, q, rtol, base_inertia=None):
    """Index of the first joint (leaf → root) whose ABA pivot D_i vanishes at q (None: 0), or −1;
    and the articulated inertia of the base (``base_inertia`` + its children), or None."""
    n = len(names)
    IA0 = None if base_inertia is None else np.array(base_inertia)
    if n == 0:
        return -1, IA0
    X = np.asarray(X)
    C = np.array(B)  # pose of body i in body λ(i) at q
    if q is not None:
        C = C @ np.array([lie.exp_se3(X[i], q[i]) for i in range(n)])
    # A_i = Ad(C_i⁻¹) = [[Rᵀ, 0], [−Rᵀ p̃, Rᵀ]] maps twists of body λ(i) to body i, all at once
    Rt = C[:, :3, :3].transpose(0, 2, 1)
    p = C[:, :3, 3]
    P = np.zeros((n, 3, 3))
    P[:, 0, 1], P[:, 0, 2], P[:, 1, 2] = -p[:, 2], p[:, 1], -p[:, 0]
    P[:, 1, 0], P[:, 2, 0], P[:, 2, 1] = p[:, 2], -p[:, 1], p[:, 0]
    A = np.zeros((n, 6, 6))
    A[:, :3, :3] = Rt
    A[:, 3:, 3:] = Rt
    A[:, 3:, :3] = -Rt @ P
    At = A.transpose(0, 2, 1).copy()
    IA = np.array(inertias)  # articulated inertias, filled leaf → root
    IC = np.array(inertias)  # composite inertias
    bad = -1
    for i in range(n - 1, -1, -1):
        x = X[i]
        U = IA[i] @ x
        D = x @ U
        ok = D > rtol * (x @ IC[i] @ x)
        if not ok and names[i] not in exempt and bad < 0:
            bad = i
        j = parent[i]
        if j < 0 and IA0 is None:
            continue
        Ia = IA[i] - np.outer(U, U) / D if ok else IA[i]
        if j < 0:
            IA0 += At[i] @ Ia @ A[i]
            continue
        IA[j] += At[i] @ Ia @ A[i]
        IC[j] += At[i] @ IC[i] @ A[i]
    return bad, IA0


def _link_inertia(S, mass, com_pose, inertia_com):
    """Inertia of a link (mass, COM pose in link frame, Θ_c) in a body frame where the link sits at S."""
    P = S @ com_pose  # COM frame in body frame
    return lie.spatial_inertia(mass, P[:3, 3], inertia_com, P[:3, :3])


def add_payload(model: Model, link, mass, com, inertia):
    """A new model with a rigid payload on ``link`` (COM ``com`` and 3×3 ``inertia`` about the COM,
    both in the link frame)."""
    if link not in model.link_frames:
        raise ValueError(f"unknown link '{link}'")
    body, S = model.link_frames[link]
    if body < 0 and not model.floating_base:
        raise ValueError(f"link '{link}' is fixed to the base: a payload there has no effect")
    try:
        mass = float(mass)
        com = np.asarray(com, dtype=float)
        inertia = np.zeros((3, 3)) if inertia is None else np.asarray(inertia, dtype=float)
    except (TypeError, ValueError, OverflowError):
        raise ValueError("payload mass, com and inertia must be numbers") from None
    if not (np.isfinite(mass) and mass >= 0):
        raise ValueError(f"payload mass must be finite and >= 0, got {mass}")
    if com.shape != (3,) or not np.all(np.isfinite(com)):
        raise ValueError(f"payload com must be 3 finite numbers, got {com!r}")
    if np.max(np.abs(com)) > MAX_LENGTH:
        raise ValueError(f"payload com {com.tolist()} is more than {MAX_LENGTH:g} m from link "
                         f"'{link}'")
    if inertia.shape != (3, 3) or not np.all(np.isfinite(inertia)):
        raise ValueError("payload inertia must be a finite symmetric 3×3 matrix")
    problems = check_inertia(mass, inertia, f"payload on link '{link}'")  # URDFError: a ValueError
    if problems:
        warnings.warn(f"payload on link '{link}': " + " and ".join(
            {"zero mass": "zero mass with a non-zero inertia",
             "triangle": "principal moments violate the triangle inequality"}[p]
            for p in problems), URDFWarning, stacklevel=3)
    extra = _link_inertia(S, mass, lie.pose(np.eye(3), com), inertia)
    if body < 0:
        return replace(model, base_inertia=np.array(model.base_inertia) + extra)
    I6 = np.array(model.inertias)
    I6[body] += extra
    return model.with_inertias(I6)
