"""The robot as the generator sees it: bodies in frames chosen so that every joint screw has one
non-zero entry, the model's numbers as constants, the public inputs as symbols.

Frames (doc/math.md, seed 004 §2). The model's body frame i is the URDF joint frame, where the screw
is ``X_i = (e, 0)`` or ``(0, e)`` with any unit axis e. The generator uses body frames i' rotated
by a constant Q_i with ``Q_i z = e`` (an exact signed permutation when e is a coordinate axis, as
in most URDFs), so that ``X_i' = (z, 0)`` or ``(0, z)``: ``ad_X`` is a signed swap, ``Xᵀ W`` one
entry, and ``exp(X q)`` a rotation about z (2 products per 3-vector) or a shift along z. The
relative pose becomes ``B_i' = Q_λᵀ B_i Q_i``, the inertia ``M_i' = Ad_Qᵀ M_i Ad_Q`` (Θ' = QᵀΘQ,
h' = Qᵀh) and a link at pose S in body i sits at ``Q_iᵀ S`` in body i'. Joint torques do not
depend on the frames; the floating base keeps its own frame (its twist and wrench are public).

Transforms are applied in two stages, ``T_i = E_i Ad_{B_i⁻¹}`` (doc/math.md), so the constant stage
folds its zeros and ones and the joint stage costs 4 products (revolute) per 3-vector.
"""
from __future__ import annotations

import hashlib

import numpy as np

#: the generator's version: part of the model hash, so a changed generator never reuses a library
VERSION = "2"

#: a floating base's or inner floating joint's public velocity (linear, angular) → the internal
#: twist index (ω, v)
BASE_IX = (3, 4, 5, 0, 1, 2)

_SNAP = 4e-16  # |x| below this (rounding noise of cos(π/2) …) is an exact 0; |x| − 1 likewise


class CodegenError(ValueError):
    """A robot feature the code generator does not handle (the message names it)."""


def _snap(a):
    a = np.array(a, dtype=float)
    a[np.abs(a) < _SNAP] = 0.0
    for s in (1.0, -1.0):
        a[np.abs(a - s) < _SNAP] = s
    return a


def _frame_for(e):
    """A rotation Q with Q z = e: a signed permutation when e is (±) a coordinate axis."""
    e = np.asarray(e, dtype=float)
    k = int(np.argmax(np.abs(e)))
    if abs(abs(e[k]) - 1.0) < 1e-15:
        s = 1.0 if e[k] > 0 else -1.0
        z = np.zeros(3)
        z[k] = s
        x = np.zeros(3)
        x[(k + 1) % 3] = 1.0
        y = np.cross(z, x)
        return np.column_stack([x, y, z])
    e = e / np.linalg.norm(e)
    a = np.eye(3)[int(np.argmin(np.abs(e)))]
    x = np.cross(a, e)
    x /= np.linalg.norm(x)
    return np.column_stack([x, np.cross(e, x), e])


#: joints whose configuration is on a group: URDF ``floating`` inside the tree and the
#: ``spherical`` extension (:mod:`mbs_dynamics.model.lie_joints`) → (velocity dim, q dim)
LIE = {"spherical": (3, 4), "floating": (6, 7)}


def model_of(robot):
    """(Model, mimic map) of a Robot, MimicRobot or LieJointRobot; CodegenError naming what is
    missing."""
    if any(getattr(robot, k, None) for k in ("loop_closures", "closures", "loops", "constraints")):
        raise CodegenError("closed kinematic loops are not supported by the code generator "
                           "(it generates tree dynamics)")
    model = getattr(robot, "model", None)
    if model is None or not hasattr(model, "parent"):
        raise CodegenError(f"cannot generate code for {type(robot).__name__}: it has no Model "
                           "(load it with mbs_dynamics.load_urdf)")
    lie = getattr(model, "lie_joints", None) or {}
    chart = {i0 + k for _, (kind, i0) in lie.items() for k in range(LIE[kind][0])}
    for i, t in enumerate(model.joint_types):
        if t not in ("revolute", "continuous", "prismatic") and i not in chart:
            raise CodegenError(f"joint '{model.joint_names[i]}' of type '{t}' is not supported "
                               "by the code generator")
    if lie:  # a LieJointRobot, or the chart Robot of a model Python does not load as one
        return model, dict(model.mimic)
    if getattr(robot, "full_robot", None) is None and model.mimic:
        raise CodegenError("the model has mimic joints but the robot is not a MimicRobot: "
                           "pass the object load_urdf returned")
    return model, dict(model.mimic) if getattr(robot, "full_robot", None) is not None else {}


def _groups(model, mimic):
    """{first chart joint index: (name, kind)} of the spherical / floating joints, checked to be
    what :func:`~mbs_dynamics.model.model.composite_parts` builds: a chain of d chart joints,
    the later ones at the identity origin, the links between them massless, nothing else
    attached to those links, no mimic joint among them."""
    lie = getattr(model, "lie_joints", None) or {}
    out = {}
    for name, (kind, i0) in lie.items():
        d = LIE[kind][0]
        chain = list(range(i0, i0 + d))
        for k, i in enumerate(chain):
            nm = model.joint_names[i]
            if nm in mimic or any(v[0] == nm for v in mimic.values()):
                raise CodegenError(f"joint '{name}' ({kind}): its chart joint '{nm}' is or has "
                                   "a mimic joint; the code generator does not take that")
            if k and (int(model.parent[i]) != i - 1 or not np.allclose(model.B[i], np.eye(4),
                                                                        rtol=0, atol=1e-15)):
                raise CodegenError(f"joint '{name}' ({kind}): its chart is not the chain the "
                                   "URDF loader builds; the code generator does not take it")
            if i != chain[-1] and np.any(np.asarray(model.inertias[i]) != 0.0):
                raise CodegenError(f"joint '{name}' ({kind}): a chart link carries mass")
        for j in range(model.n):
            if int(model.parent[j]) in chain[:-1] and j not in chain:
                raise CodegenError(f"joint '{model.joint_names[j]}' hangs from a chart link of "
                                   f"the {kind} joint '{name}'; the code generator does not "
                                   "take that")
        out[i0] = (name, kind)
    return out


def model_hash(model, mimic):
    """SHA-256 (hex) of every number the generated code folds in, every name it writes (the
    robot's, the joints', the links') and the generator version."""
    h = hashlib.sha256(f"mbs_dynamics.codegen {VERSION}".encode())
    for k in ("parent", "B", "X", "inertias", "gravity", "base_inertia"):
        a = np.ascontiguousarray(getattr(model, k))
        h.update(k.encode() + str(a.shape).encode() + a.tobytes())
    h.update(repr((getattr(model, "name", None), model.joint_names, model.joint_types, bool(model.floating_base),
                   sorted((m, v[0], float(v[1]), float(v[2])) for m, v in mimic.items()),
                   sorted((ln, b, np.asarray(S).tobytes().hex())
                          for ln, (b, S) in model.link_frames.items()),
                   sorted((nm, k, int(i)) for nm, (k, i) in
                          (getattr(model, "lie_joints", None) or {}).items()))).encode())
    return h.hexdigest()


class Tree:
    """Bodies b = 0..nb−1 (b = 0 the base when it floats), numbers in the rotated frames.

    A spherical or inner floating joint is one body (kind ``"spherical"`` / ``"floating"``) in
    its child frame (no rotation Q), its relative pose ``B·(R(quat), p)`` and its constant
    motion subspace S (``[0; I3]``, ``I6`` in (ω, v)); its d chart joints of the model keep their
    d slots in the full coordinates (6·fb + n), which are its velocity (v, ω) in order.

    Attributes (per body): kind, parent, BR, Bp (constant origin), joint (first model joint),
    qix / vix (public index of its first position / velocity coordinate; 1-DOF joints: None
    for q, see ``map``), mass, h, Th. Per model joint, ``map``: (public q index or None,
    public v index, multiplier, offset). ``quats``: public q indices of every quaternion.
    """

    def __init__(self, robot):
        model, mimic = model_of(robot)
        self.model, self.mimic = model, mimic
        groups = _groups(model, mimic)
        chart_of = {}  # model joint → (group body's first joint, chart index c)
        for i0, (_, kind) in groups.items():
            for c in range(LIE[kind][0]):
                chart_of[i0 + c] = (i0, c)
        fb = int(bool(model.floating_base))
        n = model.n
        self.fb, self.n = fb, n
        self.kind, self.parent, self.BR, self.Bp, self.joint = [], [], [], [], []
        self.mass, self.h, self.Th, self.qix, self.vix = [], [], [], [], []
        self.body_of = {}  # model body → (tree body, chart index c or None)
        self.quats = [3] if fb else []
        self.quat_names = ["base"] if fb else []
        # public coordinates: the model's joints in order, a group's as one joint, mimic joints
        # folded into their masters
        names = list(model.joint_names)
        qpos, vpos = 7 * fb, 6 * fb
        col, self.map = {}, [None] * n
        self.public_names = []
        for i, nm in enumerate(names):
            if i in groups:
                kind = groups[i][1]
                d, nqg = LIE[kind]
                for c in range(d):
                    self.map[i + c] = (None, vpos + c, 1.0, 0.0)
                self.quats.append(qpos + nqg - 4)
                self.quat_names.append(groups[i][0])
                col[i] = (qpos, vpos)
                self.public_names.append(groups[i][0])
                qpos, vpos = qpos + nqg, vpos + d
            elif i in chart_of or nm in mimic:
                continue
            else:
                col[i] = (qpos, vpos)
                self.public_names.append(nm)
                self.map[i] = (qpos, vpos, 1.0, 0.0)
                qpos, vpos = qpos + 1, vpos + 1
        index = {nm: i for i, nm in enumerate(names)}
        for nm, (master, k, o) in mimic.items():
            qm, vm, _, _ = self.map[index[master]]
            self.map[index[nm]] = (qm, vm, float(k), float(o))
        self.nq, self.nv = qpos, vpos
        self.nind = vpos - 6 * fb
        bodies = [i for i in range(n) if i not in chart_of or chart_of[i][1] == 0]
        self.nb = len(bodies) + fb
        Q = [np.eye(3)] * self.nb
        if fb:
            self.kind.append("free")
            self.parent.append(-1)
            self.BR.append(np.eye(3))
            self.Bp.append(np.zeros(3))
            self.joint.append(-1)
            self.qix.append(0)
            self.vix.append(0)
            self._inertia(model.base_inertia, np.eye(3))
        for b, i in enumerate(bodies, start=fb):
            if i in groups:
                d = LIE[groups[i][1]][0]
                for c in range(d):
                    self.body_of[i + c] = (b, c if c < d - 1 else None)
            else:
                self.body_of[i] = (b, None)
                e = model.X[i][:3] if model.joint_types[i] != "prismatic" else model.X[i][3:]
                Q[b] = _frame_for(e)
        inertias = list(model.inertias)
        for b, i in enumerate(bodies, start=fb):
            pi = int(model.parent[i])
            par = self.body_of[pi][0] if pi >= 0 else (0 if fb else -1)
            Ql = Q[par] if par >= 0 else np.eye(3)
            B = model.B[i]
            if i in groups:
                kind = groups[i][1]
                self.kind.append(kind)
                self.qix.append(col[i][0])
                self.vix.append(col[i][1])
                I6 = inertias[i + LIE[kind][0] - 1]
            else:
                self.kind.append("prismatic" if model.joint_types[i] == "prismatic"
                                 else "revolute")
                self.qix.append(None)
                self.vix.append(None)
                I6 = inertias[i]
            self.parent.append(par)
            self.BR.append(_snap(Ql.T @ B[:3, :3] @ Q[b]))
            self.Bp.append(_snap(Ql.T @ B[:3, 3]))
            self.joint.append(i)
            self._inertia(I6, Q[b])
        self.Q = Q
        self.children = [[] for _ in range(self.nb)]
        for b in range(self.nb):
            if self.parent[b] >= 0:
                self.children[self.parent[b]].append(b)
        self.gravity = np.asarray(model.gravity, dtype=float)
        self.hash = model_hash(model, mimic)

    def _inertia(self, I6, Q):
        I6 = np.asarray(I6)
        hx = I6[:3, 3:]
        h = np.array([hx[2, 1], hx[0, 2], hx[1, 0]])
        self.mass.append(float(I6[3, 3]))
        self.h.append(_snap(Q.T @ h))
        Th = Q.T @ I6[:3, :3] @ Q
        self.Th.append(_snap(0.5 * (Th + Th.T)))

    def columns(self, b):
        """[(full coordinate index, internal unit twist index in (ω, v))] of body b's joint."""
        fb = self.fb
        kind = self.kind[b]
        if kind == "free":
            return [(k, BASE_IX[k]) for k in range(6)]
        i = self.joint[b]
        if kind == "spherical":
            return [(6 * fb + i + c, c) for c in range(3)]
        if kind == "floating":
            return [(6 * fb + i + c, BASE_IX[c]) for c in range(6)]
        return [(6 * fb + i, joint_index(kind))]

    def link_pose(self, link):
        """(body b or −1 for a fixed base, 4×4 pose of ``link`` in body b's rotated frame)."""
        b, S, _ = self.link_body(link)
        return b, S

    def link_body(self, link):
        """(body b or −1, pose of ``link`` in body b's rotated frame, chart index c or None):
        c is set for a link between the chart joints of a spherical / floating joint (the
        chart's own links, at the joint's child frame at φ = 0): its Jacobian has that joint's
        columns 0..c only, as :class:`~mbs_dynamics.model.lie_joints.LieJointRobot` gives it."""
        if link not in self.model.link_frames:
            raise CodegenError(f"unknown frame '{link}': frames are URDF links "
                               f"({', '.join(list(self.model.link_frames)[:8])}, …)")
        body, S = self.model.link_frames[link]
        b, c = self.body_of[body] if body >= 0 else (0 if self.fb else -1, None)
        S = np.array(S, dtype=float)
        if b >= 0:
            S[:3] = self.Q[b].T @ S[:3]
        return b, _snap(S), c


# ---------------------------------------------------------------------------------------------
# symbolic spatial algebra on lists of Expr (twists (ω, v), wrenches (m, f))
# ---------------------------------------------------------------------------------------------
def cross(g, a, b):
    return [g.sub(g.mul(a[1], b[2]), g.mul(a[2], b[1])),
            g.sub(g.mul(a[2], b[0]), g.mul(a[0], b[2])),
            g.sub(g.mul(a[0], b[1]), g.mul(a[1], b[0]))]


def matvec(g, R, x):
    return [g.dot(R[r], x) for r in range(3)]


def matTvec(g, R, x):
    return [g.dot([R[0][c], R[1][c], R[2][c]], x) for c in range(3)]


def add(g, a, b):
    return [g.add(x, y) for x, y in zip(a, b)]


def axpy(g, c, a, b):
    """b + c·a."""
    return [g.add(y, g.mul(c, x)) for x, y in zip(a, b)]


def scale(g, c, a):
    return [g.mul(c, x) for x in a]


def const_to_child(g, R, p, s):
    """Ad_{B⁻¹} s for a constant pose B = (R, p): ω' = Rᵀω, v' = Rᵀ(v + ω × p)."""
    w, v = s[:3], s[3:]
    pe = [g.const(x) for x in p]
    Rc = [[g.const(x) for x in row] for row in R]
    return matTvec(g, Rc, w) + matTvec(g, Rc, add(g, v, cross(g, w, pe)))


def const_to_parent(g, R, p, s):
    """Ad_{B⁻¹}ᵀ s for wrenches: f' = R f, m' = R m + p × f'."""
    Rc = [[g.const(x) for x in row] for row in R]
    f = matvec(g, Rc, s[3:])
    m = add(g, matvec(g, Rc, s[:3]), cross(g, [g.const(x) for x in p], f))
    return m + f


def rz_T(g, c, s, x):
    """Rz(q)ᵀ x."""
    return [g.add(g.mul(c, x[0]), g.mul(s, x[1])), g.sub(g.mul(c, x[1]), g.mul(s, x[0])), x[2]]


def rz(g, c, s, x):
    """Rz(q) x."""
    return [g.sub(g.mul(c, x[0]), g.mul(s, x[1])), g.add(g.mul(s, x[0]), g.mul(c, x[1])), x[2]]


class Joint:
    """The joint stage E_i = exp(−q ad_X) of one body, for one value of q (c, s or d = q)."""

    def __init__(self, g, kind, q):
        self.g, self.kind = g, kind
        if kind == "revolute":
            self.c, self.s = g.fn("cos", q), g.fn("sin", q)
        else:
            self.d = q

    def to_child(self, x):
        g = self.g
        if self.kind == "revolute":
            return rz_T(g, self.c, self.s, x[:3]) + rz_T(g, self.c, self.s, x[3:])
        # v' = v + ω × (z d) = v + (ω_y d, −ω_x d, 0)
        return x[:3] + [g.add(x[3], g.mul(x[1], self.d)), g.sub(x[4], g.mul(x[0], self.d)), x[5]]

    def to_parent(self, x):
        g = self.g
        if self.kind == "revolute":
            return rz(g, self.c, self.s, x[:3]) + rz(g, self.c, self.s, x[3:])
        # m' = m + (z d) × f = m + (−d f_y, d f_x, 0)
        return [g.sub(x[0], g.mul(self.d, x[4])), g.add(x[1], g.mul(self.d, x[3])), x[2]] + x[3:]

    def pose(self):
        """(R, p) of exp(X q) as Expr lists."""
        g = self.g
        if self.kind == "revolute":
            z, o = g.zero, g.one
            return [[self.c, g.neg(self.s), z], [self.s, self.c, z], [z, z, o]], [z, z, z]
        z, o = g.zero, g.one
        return [[o, z, z], [z, o, z], [z, z, o]], [z, z, self.d]


def quat_R(g, xs):
    """Rotation matrix (Expr lists) of the quaternion xs = (qx, qy, qz, qw), normalised as the
    kernels do (its norm is checked ≈ 1 before the generated code runs)."""
    qx, qy, qz, qw = xs
    s = g.div(1.0, g.fn("sqrt", g.add(g.add(g.mul(qx, qx), g.mul(qy, qy)),
                                     g.add(g.mul(qz, qz), g.mul(qw, qw)))))
    qx, qy, qz, qw = (g.mul(x, s) for x in (qx, qy, qz, qw))
    two = 2.0
    xx, yy, zz = g.mul(qx, qx), g.mul(qy, qy), g.mul(qz, qz)
    xy, xz, yz = g.mul(qx, qy), g.mul(qx, qz), g.mul(qy, qz)
    xw, yw, zw = g.mul(qx, qw), g.mul(qy, qw), g.mul(qz, qw)
    return [[g.sub(1.0, g.mul(two, g.add(yy, zz))), g.mul(two, g.sub(xy, zw)),
             g.mul(two, g.add(xz, yw))],
            [g.mul(two, g.add(xy, zw)), g.sub(1.0, g.mul(two, g.add(xx, zz))),
             g.mul(two, g.sub(yz, xw))],
            [g.mul(two, g.sub(xz, yw)), g.mul(two, g.add(yz, xw)),
             g.sub(1.0, g.mul(two, g.add(xx, yy)))]]


class GroupJoint:
    """The joint stage of a spherical / inner floating joint at one configuration: the pose
    T = (R(quat), p) (p = 0 for a spherical joint) after the constant origin, ``Ad_{T⁻¹}`` on
    twists and its transpose on wrenches (the same interface as :class:`Joint`)."""

    def __init__(self, g, kind, qrow, qix):
        self.g, self.kind = g, kind
        if kind == "spherical":
            self.R = quat_R(g, qrow[qix:qix + 4])
            self.p = [g.zero] * 3
        else:
            self.R = quat_R(g, qrow[qix + 3:qix + 7])
            self.p = list(qrow[qix:qix + 3])

    def to_child(self, x):
        """ω' = Rᵀω, v' = Rᵀ(v + ω × p)."""
        g, w = self.g, x[:3]
        return matTvec(g, self.R, w) + matTvec(g, self.R, add(g, x[3:], cross(g, w, self.p)))

    def to_parent(self, x):
        """f' = R f, m' = R m + p × f'."""
        g = self.g
        f = matvec(g, self.R, x[3:])
        return add(g, matvec(g, self.R, x[:3]), cross(g, self.p, f)) + f

    def pose(self):
        return self.R, self.p

    def twist(self, nu):
        """S ν in (ω, v) from the public velocity ν (ω; or (v, ω))."""
        z = self.g.zero
        if self.kind == "spherical":
            return list(nu[:3]) + [z, z, z]
        return list(nu[3:6]) + list(nu[:3])


def joint_of(g, tr, b, qrow, qf):
    """The joint stage of body b (not the floating base) at positions qrow (public) / qf
    (the model's 1-DOF joints)."""
    kind = tr.kind[b]
    if kind in LIE:
        return GroupJoint(g, kind, qrow, tr.qix[b])
    return Joint(g, kind, qf[tr.joint[b]])


def ad_X(g, kind, x):
    """ad_X x with X = (z, 0) (revolute) or (0, z) (prismatic): z × a = (−a_y, a_x, 0)."""
    if kind == "revolute":
        return [g.neg(x[1]), x[0], g.zero, g.neg(x[4]), x[3], g.zero]
    return [g.zero, g.zero, g.zero, g.neg(x[1]), x[0], g.zero]


def ad_XT(g, kind, x):
    """ad_Xᵀ x (wrenches): −ad_X (revolute); (−z × f, 0) (prismatic)."""
    if kind == "revolute":
        return [x[1], g.neg(x[0]), g.zero, x[4], g.neg(x[3]), g.zero]
    return [x[4], g.neg(x[3]), g.zero, g.zero, g.zero, g.zero]


def ad_V(g, V, s):
    """ad_V s = (ω × a, v × a + ω × b)."""
    w, v, a, b = V[:3], V[3:], s[:3], s[3:]
    return cross(g, w, a) + add(g, cross(g, v, a), cross(g, w, b))


def neg_adT(g, V, s):
    """−ad_Vᵀ (μ, f) = (ω × μ + v × f, ω × f)."""
    w, v, mu, f = V[:3], V[3:], s[:3], s[3:]
    return add(g, cross(g, w, mu), cross(g, v, f)) + cross(g, w, f)


def joint_index(kind):
    """The one non-zero entry of X in (ω, v): 2 (revolute) or 5 (prismatic)."""
    return 2 if kind == "revolute" else 5


class Inertia:
    """A symbolic rigid-body inertia (m, h = m c, Θ about the frame origin), seed 004 eq. 24."""

    def __init__(self, g, m, h, Th):
        self.g, self.m, self.h, self.Th = g, m, h, Th

    @classmethod
    def const(cls, g, m, h, Th):
        return cls(g, g.const(m), [g.const(x) for x in h],
                   [[g.const(x) for x in row] for row in Th])

    def times(self, s):
        """M s = (Θω + h × v, m v − h × ω)."""
        g = self.g
        w, v = s[:3], s[3:]
        return (add(g, matvec(g, self.Th, w), cross(g, self.h, v))
                + [g.sub(g.mul(self.m, v[k]), c) for k, c in enumerate(cross(g, self.h, w))])

    def __add__(self, o):
        g = self.g
        return Inertia(g, g.add(self.m, o.m), add(g, self.h, o.h),
                       [add(g, a, b) for a, b in zip(self.Th, o.Th)])

    def to_parent(self, R, p):
        """The same inertia seen from a frame where this one sits at pose (R, p) (Expr lists):
        h' = R h + m p, Θ' = R Θ Rᵀ − (h̃' p̃ + p̃ h̃') + m p̃ p̃ (symmetric; 6 entries)."""
        g = self.g
        hR = matvec(g, R, self.h)
        h2 = axpy(g, self.m, p, hR)
        RT = [[g.dot(R[r], [self.Th[0][c], self.Th[1][c], self.Th[2][c]]) for c in range(3)]
              for r in range(3)]  # R Θ
        Th = [[None] * 3 for _ in range(3)]
        # Θ' = RΘRᵀ + S, S = −(h̃'p̃ + p̃h̃') + m p̃p̃ ; x̃ỹ = y xᵀ − (x·y) I
        hp = g.dot(h2, p)
        pp = g.dot(p, p)
        for r in range(3):
            for c in range(r, 3):
                v = g.dot(RT[r], R[c])
                # −(p h'ᵀ + h' pᵀ) + 2(h'·p) δ + m (p pᵀ − (p·p) δ)
                s = g.neg(g.add(g.mul(p[r], h2[c]), g.mul(h2[r], p[c])))
                s = g.add(s, g.mul(self.m, g.mul(p[r], p[c])))
                if r == c:
                    s = g.add(s, g.sub(g.mul(2.0, hp), g.mul(self.m, pp)))
                Th[r][c] = Th[c][r] = g.add(v, s)
        return Inertia(g, self.m, h2, Th)
