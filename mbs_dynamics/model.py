"""The frozen robot model (screw form, seed 004 §2) and its construction from a URDF tree.

Bodies are the child links of the movable joints, numbered in depth-first order, so that
``parent[i] < i``. Body frame = child link frame = joint frame (MATH.md), hence
``C_{λ(i),i}(q_i) = B_i exp(X_i q_i)`` with ``B_i`` the joint ``<origin>`` (composed with any fixed
joints in between) and ``X_i = (e, 0)`` (revolute) or ``(0, e)`` (prismatic).
Twists are angular-first ``(ω, v)``; wrenches ``(m, f)``.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from . import lie
from .urdf import MOVABLE, UNSUPPORTED, URDFError, parse

REVOLUTE, PRISMATIC = 0, 1

# Columns of the packed float array ``Model.pf`` (shape (n + 1, PF_COLS)); row n holds gravity.
PF_R, PF_P, PF_AXIS, PF_MASS, PF_H, PF_I, PF_PARENT, PF_TYPE = 0, 9, 12, 15, 16, 19, 28, 29
PF_COLS = 32


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
        base_link: name of the base (world-fixed) link.
        pf: (n + 1, PF_COLS) packed float array read by the compiled kernels (see PF_* columns).
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
    pf: np.ndarray = field(default=None, repr=False)

    def __post_init__(self):
        for k in ("parent", "axis", "B", "X", "inertias", "gravity", "lower", "upper",
                  "velocity_limit", "effort_limit"):
            a = getattr(self, k)
            object.__setattr__(self, k, _ro(a) if k != "parent" else _ro_int(a))
        object.__setattr__(self, "pf", _ro(_pack(self)))

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


def _pack(m: Model):
    pf = np.zeros((m.n + 1, PF_COLS))
    for i in range(m.n):
        pf[i, PF_R:PF_R + 9] = m.B[i, :3, :3].ravel()
        pf[i, PF_P:PF_P + 3] = m.B[i, :3, 3]
        pf[i, PF_AXIS:PF_AXIS + 3] = m.axis[i]
        I6 = m.inertias[i]
        mass = I6[3, 3]
        pf[i, PF_MASS] = mass
        # M_i = [[Θ_b, m c̃], [−m c̃, m I]]: h = m c from the skew block
        hx = I6[:3, 3:]
        pf[i, PF_H:PF_H + 3] = (hx[2, 1], hx[0, 2], hx[1, 0])
        pf[i, PF_I:PF_I + 9] = I6[:3, :3].ravel()
        pf[i, PF_PARENT] = m.parent[i]
        pf[i, PF_TYPE] = PRISMATIC if m.joint_types[i] == "prismatic" else REVOLUTE
    pf[m.n, :3] = m.gravity
    return pf


def build(source, *, base_link=None, tip_link=None, locked_joints=None, gravity=(0.0, 0.0, -9.81)):
    """Build a :class:`Model` from URDF text or a path (see :func:`mbs_dynamics.load_urdf`)."""
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
        if u.joints[jn].type not in MOVABLE:
            raise URDFError(f"locked joint '{jn}' is of type '{u.joints[jn].type}', not movable")
        if not np.isfinite(float(v)):
            raise ValueError(f"locked joint '{jn}' position must be finite, got {v!r}")

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

    names, links, types, parent, axis, B, X, inertias, lims = [], [], [], [], [], [], [], [], []
    link_frames = {base: (-1, np.eye(4))}

    def visit(link):
        body, S = link_frames[link]
        for j in u.children.get(link, []):
            movable = j.type in MOVABLE and j.name not in locked
            if path is not None and j.child not in path and movable:
                continue  # a movable branch off the selected chain is dropped
            if j.type in UNSUPPORTED:
                raise URDFError(f"joint '{j.name}' is of type '{j.type}': only revolute, "
                                "continuous, prismatic and fixed joints are supported")
            if j.mimic is not None and j.name not in locked:
                raise URDFError(f"joint '{j.name}' mimics '{j.mimic}': mimic joints are not "
                                "supported (lock it with locked_joints)")
            if movable:
                i = len(names)
                names.append(j.name)
                links.append(j.child)
                types.append(j.type)
                parent.append(body)
                axis.append(j.axis)
                B.append(S @ j.origin)
                X.append(np.r_[j.axis, 0, 0, 0] if j.type != "prismatic" else np.r_[0, 0, 0, j.axis])
                inertias.append(np.zeros((6, 6)))
                lims.append((j.lower, j.upper, j.velocity, j.effort))
                link_frames[j.child] = (i, np.eye(4))
            else:
                T = S @ j.origin
                if j.name in locked:
                    Xl = np.r_[j.axis, 0, 0, 0] if j.type != "prismatic" else np.r_[0, 0, 0, j.axis]
                    T = T @ lie.exp_se3(Xl, float(locked[j.name]))
                link_frames[j.child] = (body, T)
            visit(j.child)

    visit(base)
    if tip_link is not None and tip_link not in link_frames:
        raise URDFError(f"tip_link '{tip_link}' is not below base_link '{base}'")
    n = len(names)
    if n == 0:
        raise URDFError("the selected URDF tree has no movable joint")

    # merge every link's inertia into its body (seed 004 eq. 24; fixed joints: Ad_{S⁻¹}ᵀ M Ad_{S⁻¹})
    for ln, (body, S) in link_frames.items():
        ine = u.links[ln]
        if body < 0 or ine is None:
            continue
        inertias[body] += _link_inertia(S, ine.mass, ine.origin, ine.inertia)

    lims = np.array(lims, dtype=float).reshape(n, 4)
    return Model(
        n=n, joint_names=tuple(names), link_names=tuple(links), joint_types=tuple(types),
        parent=np.array(parent), axis=np.array(axis), B=np.array(B), X=np.array(X),
        inertias=np.array(inertias), gravity=g, lower=lims[:, 0], upper=lims[:, 1],
        velocity_limit=lims[:, 2], effort_limit=lims[:, 3], link_frames=link_frames,
        base_link=base, name=u.name)


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
    if body < 0:
        raise ValueError(f"link '{link}' is fixed to the base: a payload there has no effect")
    mass = float(mass)
    com = np.asarray(com, dtype=float)
    inertia = np.zeros((3, 3)) if inertia is None else np.asarray(inertia, dtype=float)
    if not (np.isfinite(mass) and mass >= 0):
        raise ValueError(f"payload mass must be finite and >= 0, got {mass}")
    if com.shape != (3,) or not np.all(np.isfinite(com)):
        raise ValueError(f"payload com must be 3 finite numbers, got {com!r}")
    if inertia.shape != (3, 3) or not np.all(np.isfinite(inertia)) or not np.allclose(inertia, inertia.T):
        raise ValueError("payload inertia must be a finite symmetric 3×3 matrix")
    I6 = np.array(model.inertias)
    I6[body] += _link_inertia(S, mass, lie.pose(np.eye(3), com), inertia)
    return model.with_inertias(I6)
