"""The geometric parameters of a model and the sensitivity of measured frame poses to them
(Müller 2018, "Screw and Lie group theory in multibody dynamics", §6.2).

Every joint frame's reference pose is perturbed by a twist in its own (body i) coordinates,

    B_i(π_i) = B_i0 exp(Û_i π_i),   C_{λ(i),i}(q_i, π_i) = B_i(π_i) exp(X_i q_i),

with six parameters per joint along an orthonormal basis whose z axis is the joint axis:
``tx, ty, tz`` (translations, m) and ``rx, ry, rz`` (rotations, rad). The joint offset is one of
them — ``rz`` of a revolute joint (B_i exp(X_i δ) exp(X_i q) = B_i exp(X_i (q + δ))), ``tz`` of a
prismatic one — so a joint has six parameters in all, not seven. The measured frames (the
target of a laser tracker, a camera marker, a probe tip) get six more each, S_f(π_f) =
S_f0 exp(Û π_f) in their body, and the robot's base in the measurement frame W six more,
T_WB(π_0) = T_WB0 exp(Û π_0). The pose of frame f at q is

    T_f(q, π) = T_WB(π_0) · C_b(q, π) · S_f(π_f)   (C_b by the product of exponentials).

The derivative with respect to a parameter k of a group with location L (the pose, in W, where
its twist acts: T_WB, C_{λ(i)} B_i(π_i), or T_f) is the spatial twist V = Ad_L dexp_{−Ûπ} U_k
(the right-trivialised derivative of exp, seed 003 §2.1, makes it exact at any π, not only at
π = 0): the position moves by v + ω × p_f, the orientation by ω (W frame).

Internally twists are angular-first (ω, v), as in the kernels; every row of a Jacobian here is
(position, rotation) — linear first, as every public 6-vector.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..kernels import lie

__all__ = ["GeometricParameters", "COMPONENTS"]

COMPONENTS = ("tx", "ty", "tz", "rx", "ry", "rz")


def _basis(axis):
    """(6, 6) columns: unit twists (ω, v) along an orthonormal frame (n1, n2, axis): the order
    of :data:`COMPONENTS` (translations first)."""
    e = np.asarray(axis, dtype=float)
    e = e / np.linalg.norm(e)
    a = np.eye(3)[np.argmin(np.abs(e))]
    n1 = np.cross(e, a)
    n1 /= np.linalg.norm(n1)
    E = np.c_[n1, np.cross(e, n1), e]
    U = np.zeros((6, 6))
    U[3:, :3] = E  # translations: (0, E[:, k])
    U[:3, 3:] = E  # rotations: (E[:, k], 0)
    return U


def _twist_exp(U, p):
    """exp(Û π) (4×4) for the basis U (6, 6) and π (6,)."""
    return lie.se3_exp(U @ p)


def check_model(model):
    """Raise ValueError naming the cause when calibration cannot take ``model``: a floating
    base, spherical or floating joints inside the tree, mimic joints."""
    if model.floating_base:
        raise ValueError("calibration: a floating-base model is not supported (its base pose "
                         "is a state, not a geometric parameter)")
    if getattr(model, "lie_joints", None):
        name, (kind, _) = next(iter(model.lie_joints.items()))
        raise ValueError(f"calibration: joint '{name}' ({kind}): spherical and floating "
                         "joints inside the tree are not supported")
    if model.mimic:
        raise ValueError(f"calibration: mimic joints ({', '.join(model.mimic)}) are not "
                         "supported")


class GeometricParameters:
    """The geometric parameters of ``model`` for measurements of ``frames`` (module docstring).

    Layout of π: ``[base (6) if base] + [joint i (6), i = 0 … n−1] + [frame f (6), each f]``,
    names ``"base.tx"``, ``"<joint>.rz"``, ``"<frame>.tx"`` … (:attr:`names`); the joint offsets
    are flagged in :attr:`offsets`.

    Args:
        model: a fixed-base :class:`~mbs_dynamics.model.model.Model` without mimic joints.
        frames: the names of the measured frames (links or frames of the model).
        base: estimate the pose of the robot base in the measurement frame W (else W is the
            robot's base frame and ``base_pose`` is exact).
        base_pose: nominal 4×4 pose T_WB0 of the base in W (default the identity).
        frame_params: give each measured frame its six parameters (its pose in its body is
            uncertain: a tracker target glued to the flange); else it is exact.
    Raises:
        ValueError naming the capability and the cause: a floating base, mimic joints, an
        unknown frame.
    """

    def __init__(self, model, frames, *, base=True, base_pose=None, frame_params=True):
        check_model(model)
        if isinstance(frames, str):
            frames = (frames,)
        frames = tuple(frames)
        for f in frames:
            if f not in model.link_frames:
                raise ValueError(f"calibration: unknown frame '{f}' (not a link or frame of "
                                 f"the model '{model.name}')")
            if frame_params and (f in model.link_names or f == model.base_link):
                raise ValueError(f"calibration: frame '{f}' is the frame of a moving body, whose "
                                 "pose in the body cannot change; measure a frame fixed to it "
                                 "(a tool or target link on a fixed joint) or pass "
                                 "frame_params=False (CLI: --no-frame-params)")
        self.model, self.frames, self.n = model, frames, model.n
        T = np.eye(4) if base_pose is None else np.array(base_pose, dtype=float)
        if T.shape != (4, 4) or not np.all(np.isfinite(T)):
            raise ValueError("calibration: base_pose must be a finite 4×4 transform")
        self.base_pose = T
        groups, names, U = [], [], []
        if base:
            groups.append(("base", -1))
        groups += [(model.joint_names[i], i) for i in range(model.n)]
        if frame_params:
            groups += [(f, self.n + k) for k, f in enumerate(frames)]
        for label, g in groups:
            U.append(_basis(model.axis[g]) if 0 <= g < self.n else np.eye(6)[:, [3, 4, 5, 0, 1,
                                                                                  2]])
            names += [f"{label}.{c}" for c in COMPONENTS]
        self.groups = tuple(g for _, g in groups)
        self.U = np.array(U)  # (groups, 6, 6)
        self.names = tuple(names)
        self.offsets = tuple(k for k, nm in enumerate(names)
                             if 0 <= self.groups[k // 6] < self.n
                             and nm.endswith(".tz" if model.joint_types[self.groups[k // 6]]
                                             == "prismatic" else ".rz"))
        self._anc = [self._ancestors(f) for f in frames]

    @property
    def size(self) -> int:
        """Number of parameters p."""
        return len(self.names)

    def _ancestors(self, f):
        b, _ = self.model.link_frames[f]
        out = set()
        while b >= 0:
            out.add(b)
            b = int(self.model.parent[b])
        return out

    def _split(self, pi):
        pi = np.zeros(self.size) if pi is None else np.asarray(pi, dtype=float)
        if pi.shape != (self.size,) or not np.all(np.isfinite(pi)):
            raise ValueError(f"calibration: pi must be {self.size} finite numbers, got shape "
                             f"{pi.shape}")
        return {g: pi[6 * k:6 * k + 6] for k, g in enumerate(self.groups)}

    def _q(self, q):
        q = np.array(q, dtype=float)
        if q.ndim == 1:
            q = q[None]
        if q.ndim != 2 or q.shape[1] != self.n or not np.all(np.isfinite(q)):
            raise ValueError(f"calibration: q must be (N, {self.n}) finite joint positions, got "
                             f"shape {q.shape}")
        return q

    def _kinematics(self, parts, q):
        """Pre-joint poses L_i = T_WB C_{λ(i)} B_i(π_i) and body poses C_i (N, n, 4, 4) in W."""
        m = self.model
        N = q.shape[0]
        T_wb = self.base_pose @ (_twist_exp(self.U[0], parts[-1]) if -1 in parts else np.eye(4))
        L = np.empty((N, m.n, 4, 4))
        C = np.empty((N, m.n, 4, 4))
        Xa = np.asarray(m.X)
        for i in range(m.n):
            k = self.groups.index(i)
            Bi = m.B[i] @ _twist_exp(self.U[k], parts[i])
            P = T_wb[None] if m.parent[i] < 0 else C[:, m.parent[i]]
            L[:, i] = P @ Bi
            C[:, i] = L[:, i] @ lie.se3_exp(Xa[i][None] * q[:, i, None])
        return T_wb, L, C

    def _frame_pose(self, parts, T_wb, C, k):
        f = self.frames[k]
        b, S = self.model.link_frames[f]
        g = self.n + k
        if g in parts:
            S = S @ _twist_exp(self.U[self.groups.index(g)], parts[g])
        return (T_wb[None] if b < 0 else C[:, b]) @ S

    def poses(self, pi, q, frame=None):
        """Poses (N, 4, 4) in W of a measured frame (default the first) at the configurations q
        (N, n) with the parameters π (None: the nominal model)."""
        parts, q = self._split(pi), self._q(q)
        T_wb, _, C = self._kinematics(parts, q)
        return self._frame_pose(parts, T_wb, C, self._index(frame))

    def _index(self, frame):
        if frame is None:
            return 0
        if frame not in self.frames:
            raise ValueError(f"calibration: '{frame}' is not one of the measured frames "
                             f"{self.frames}")
        return self.frames.index(frame)

    def jacobian(self, pi, q, frame=None):
        """∂(position, rotation)/∂π of a measured frame: (N, 6, p), rows (p_x, p_y, p_z, θ_x,
        θ_y, θ_z) in W (the rotation as the spatial rotation vector δθ with δR = θ̃ R), with
        the poses (N, 4, 4). Exact at any π (the module docstring)."""
        parts, q = self._split(pi), self._q(q)
        T_wb, L, C = self._kinematics(parts, q)
        k = self._index(frame)
        T = self._frame_pose(parts, T_wb, C, k)
        pf = T[:, :3, 3]
        J = np.zeros((q.shape[0], 6, self.size))
        for gk, g in enumerate(self.groups):
            if 0 <= g < self.n:
                if g not in self._anc[k]:
                    continue  # joint g does not move the frame
                Loc = L[:, g]
            elif g < 0:
                Loc = np.broadcast_to(T_wb, (q.shape[0], 4, 4))
            elif g == self.n + k:
                Loc = T
            else:
                continue  # another frame's parameters
            # local twists of the six parameters, exact at π: dexp_{−Ûπ} U (right-trivialised)
            Ul = lie.se3_dexp(-(self.U[gk] @ parts[g])) @ self.U[gk]  # (6, 6), (ω, v) rows
            R, p = Loc[:, :3, :3], Loc[:, :3, 3]
            w = R @ Ul[:3]  # (N, 3, 6)
            v = R @ Ul[3:] + np.cross(p[:, :, None], w, axis=1)
            J[:, :3, 6 * gk:6 * gk + 6] = v + np.cross(w, pf[:, :, None], axis=1)
            J[:, 3:, 6 * gk:6 * gk + 6] = w
        return J, T

    def apply(self, pi):
        """The model with the parameters π built in: (Model, base pose T_WB in W). Joint i's
        B_i becomes B_i0 exp(Û_i π_i) (its body, the links welded to it and its inertia move
        with it); a measured frame's pose in its body S_f0 exp(Û π_f)."""
        parts = self._split(pi)
        m = self.model
        B = np.array(m.B)
        for i in range(m.n):
            B[i] = B[i] @ _twist_exp(self.U[self.groups.index(i)], parts[i])
        frames = dict(m.link_frames)
        for k, f in enumerate(self.frames):
            g = self.n + k
            if g in parts:
                b, S = frames[f]
                frames[f] = (b, S @ _twist_exp(self.U[self.groups.index(g)], parts[g]))
        T_wb = self.base_pose @ (_twist_exp(self.U[0], parts[-1]) if -1 in parts else np.eye(4))
        return replace(m, B=B, link_frames=frames), T_wb
