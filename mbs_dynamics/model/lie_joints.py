"""Spherical joints and free (URDF ``floating``) joints anywhere in the tree, with their
configuration on the group: a :class:`LieJointRobot` wraps the Robot of the *chart* model.

A spherical joint (configuration a unit quaternion ``(qx, qy, qz, qw)``, velocity the child's
angular velocity ω in the child frame, as Pinocchio's ``JointModelSpherical``) and a free joint
(``(x, y, z, qx, qy, qz, qw)``, velocity ``(v, ω)`` of the child in the child frame, as
``JointModelFreeFlyer``) are built (:func:`~.model.composite_parts`) as the 1-DOF joints of a
chart through massless links — ``<name>_rx``, ``<name>_ry``, ``<name>_rz`` revolute about the
joint frame's x, y, z axes (a free joint: ``<name>_x``, ``_y``, ``_z`` prismatic first). Those
chain coordinates φ are Euler angles, singular at ±π/2, so they are never used as the
configuration: every call re-centres the chart at the current configuration (Müller,
"Screw and Lie group theory in multibody dynamics", 2018: canonical coordinates of the second
kind). The joint's pose (R, p) is folded into the origin B of its first chart joint, φ = 0, and
the chart's body Jacobian ``Jb(φ)`` (V = Jb(φ) φ̇, with Jb(0) = I) maps the group's velocity
jets to the chart's:

    V^(k) = Σ_j C(k, j) Jb^(j) φ^(k+1−j)      (solved for φ^(k+1) order by order),

with Jb = E(φ) = [[c_c c_b, s_c, 0], [−s_c c_b, c_c, 0], [s_b, 0, 1]] for R = Rx(a) Ry(b) Rz(c)
(a free joint: diag(R(φ)ᵀ, E(φ)), linear first), propagated as truncated Taylor series. The
generalized forces follow by virtual power, τ_group = Jb⁻ᵀ τ_chart (so τ, M, g, the Jacobians and
the regressor are the chart's at φ = 0, and the time derivatives of τ and J pick up the Taylor
terms of Jb). Everything is exact (no differences); the chart model is rebuilt per configuration
(about 1 ms), so this is correct, not fast.
"""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from .urdf import URDFError

__all__ = ["LieJointRobot", "quat_to_matrix", "matrix_to_quat", "CAPABILITIES"]

#: what a robot with spherical or free inner joints can do (everything else refuses).
CAPABILITIES = ("inverse_dynamics", "torque_derivatives", "inverse_dynamics_derivatives",
                "mass_matrix", "gravity_torques",
                "forward_dynamics", "frame_placement", "frame_jacobian",
                "frame_jacobian_derivative", "regressor", "inertial_parameters", "simulate",
                "to_urdf")


#: read-only data forwarded to the chart robot (per velocity coordinate, or the whole robot)
_FORWARD = ("link_names", "joint_types", "lower", "upper", "velocity_limit", "effort_limit",
            "gravity", "base_link", "total_mass", "to_urdf")


def quat_to_matrix(x, y, z, w):
    """Rotation matrix of the unit quaternion ``(x, y, z, w)`` (Pinocchio's order)."""
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def matrix_to_quat(R):
    """Unit quaternion ``(x, y, z, w)`` of a rotation matrix, w ≥ 0 (Shepperd's method)."""
    t = np.trace(R)
    if t > 0:
        s = 2.0 * math.sqrt(1.0 + t)
        q = ((R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s, s / 4)
    else:
        i = int(np.argmax(np.diag(R)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * math.sqrt(1.0 + R[i, i] - R[j, j] - R[k, k])
        q = [0.0] * 4
        q[i], q[j], q[k] = s / 4, (R[j, i] + R[i, j]) / s, (R[k, i] + R[i, k]) / s
        q[3] = (R[k, j] - R[j, k]) / s
    q = np.array(q)
    return q * (1.0 if q[3] >= 0 else -1.0) / np.linalg.norm(q)


# ---- truncated Taylor series (normalised coefficients f_k = f^(k)/k!, axis 0)
def _mul(a, b):
    """Cauchy product of two series (scalars or matrices per coefficient)."""
    K = len(a)
    out = np.zeros(np.broadcast_shapes(a.shape, b.shape) if a.ndim == b.ndim == 1
                   else (K,) + np.matmul(a[0], b[0]).shape)
    for k in range(K):
        for j in range(k + 1):
            out[k] += a[j] * b[k - j] if a.ndim == 1 else a[j] @ b[k - j]
    return out


def _sincos(u):
    """Series of sin u, cos u."""
    K = len(u)
    s, c = np.zeros(K), np.zeros(K)
    s[0], c[0] = math.sin(u[0]), math.cos(u[0])
    for k in range(1, K):
        j = np.arange(1, k + 1)
        s[k] = (j * u[j] * c[k - j]).sum() / k
        c[k] = -(j * u[j] * s[k - j]).sum() / k
    return s, c


def _jb_series(kind, phi):
    """Series of the chart's body Jacobian Jb(φ(t)) (K, d, d) from the series of φ (K, d)."""
    K = len(phi)
    one, zero = np.zeros(K), np.zeros(K)
    one[0] = 1.0
    r = 3 if kind == "floating" else 0
    sa, ca = _sincos(phi[:, r])
    sb, cb = _sincos(phi[:, r + 1])
    sc, cc = _sincos(phi[:, r + 2])
    E = np.stack([np.stack([_mul(cc, cb), sc, zero], -1),
                  np.stack([-_mul(sc, cb), cc, zero], -1),
                  np.stack([sb, zero, one], -1)], -2)
    if kind == "spherical":
        return E
    Rx = np.stack([np.stack([one, zero, zero], -1), np.stack([zero, ca, -sa], -1),
                   np.stack([zero, sa, ca], -1)], -2)
    Ry = np.stack([np.stack([cb, zero, sb], -1), np.stack([zero, one, zero], -1),
                   np.stack([-sb, zero, cb], -1)], -2)
    Rz = np.stack([np.stack([cc, -sc, zero], -1), np.stack([sc, cc, zero], -1),
                   np.stack([zero, zero, one], -1)], -2)
    Rt = _mul(_mul(Rz.transpose(0, 2, 1), Ry.transpose(0, 2, 1)), Rx.transpose(0, 2, 1))
    J = np.zeros((K, 6, 6))
    J[:, :3, :3], J[:, 3:, 3:] = Rt, E
    return J


def _chart_jet(kind, V):
    """φ^(0..K+1) (φ = 0) of the chart centred at the configuration, from the group velocity
    jet V^(0..K) (K+1, d), and the normalised series of Jb (K+2, d, d)."""
    K1, d = V.shape
    fact = np.array([math.factorial(k) for k in range(K1 + 1)], dtype=float)
    Vn = V / fact[:K1, None]
    phi = np.zeros((K1 + 1, d))
    for k in range(K1):
        Jn = _jb_series(kind, phi[:k + 1])
        s = Vn[k].copy()
        for j in range(1, k + 1):
            s -= Jn[j] @ ((k - j + 1) * phi[k - j + 1])
        phi[k + 1] = s / (k + 1)
    return phi * fact[:, None], _jb_series(kind, phi)


def _jb_rate(kind, V):
    """dJb/dt at φ = 0 when φ̇ = V (the first Taylor coefficient: linear in V)."""
    phi = np.zeros((2, len(V)))
    phi[1] = V
    return _jb_series(kind, phi)[1]


def _jb_partials(kind, d):
    """∂ᵢJb (d, d, d) and ∂ᵢ∂ⱼJb (d, d, d, d) at φ = 0, from the Taylor coefficients of Jb
    along straight lines φ = t u (polarisation of the quadratic one)."""
    I = np.eye(d)

    def coef(u):
        phi = np.zeros((3, d))
        phi[1] = u
        return _jb_series(kind, phi)

    D1 = np.array([coef(I[i])[1] for i in range(d)])
    c2 = [coef(I[i])[2] for i in range(d)]
    D2 = np.empty((d, d, d, d))
    for i in range(d):
        D2[i, i] = 2 * c2[i]
        for j in range(i):
            D2[i, j] = D2[j, i] = coef(I[i] + I[j])[2] - c2[i] - c2[j]
    return D1, D2


def _fill(out, x):
    """``x``, or ``out`` filled with it (same shape) when given."""
    if out is None:
        return x
    if not (isinstance(out, np.ndarray) and out.shape == np.shape(x) and out.dtype == float):
        raise ValueError(f"out must be a float64 array of shape {np.shape(x)}")
    out[...] = x
    return out


class LieJointRobot:
    """A robot with spherical or free inner joints, in their group coordinates (module
    docstring). Made by :func:`mbs_dynamics.load_urdf` for a URDF with ``spherical`` or
    ``floating`` joints; the methods of :data:`CAPABILITIES` take ``q`` (nq,) with each such
    joint's quaternion (and position) and velocities (nv,) with its twist in the child frame, in
    joint order, Pinocchio's layout. Others raise ``NotImplementedError`` naming the joint.
    """

    def __init__(self, chart_robot):
        model = chart_robot.model
        if model.floating_base:
            raise URDFError(f"joint '{next(iter(model.lie_joints))}': spherical/floating joints "
                            "inside the tree of a floating-base robot are not supported")
        if model.mimic:
            raise URDFError(f"joint '{next(iter(model.lie_joints))}': spherical/floating joints "
                            "together with mimic joints are not supported")
        self._full = chart_robot
        self._model = model
        groups, qi, first = [], 0, {}
        for name, (kind, i0) in model.lie_joints.items():
            first[i0] = (name, kind)
        segs, i = [], 0
        while i < model.n:  # (kind, name, chart slice, q slice)
            if i in first:
                name, kind = first[i]
                d, nq = (3, 4) if kind == "spherical" else (6, 7)
                segs.append((kind, name, slice(i, i + d), slice(qi, qi + nq)))
                groups.append(segs[-1])
                i, qi = i + d, qi + nq
            else:
                segs.append(("joint", model.joint_names[i], slice(i, i + 1), slice(qi, qi + 1)))
                i, qi = i + 1, qi + 1
        self._segs, self._groups = segs, groups
        self._nq, self._nv = qi, model.n
        self._cache = (None, None)

    # ---- sizes and names
    @property
    def model(self):
        """The chart model (the 1-DOF joints; see the module docstring)."""
        return self._model

    @property
    def n(self) -> int:
        return self._nv

    @property
    def nq(self) -> int:
        return self._nq

    @property
    def nv(self) -> int:
        return self._nv

    @property
    def floating_base(self) -> bool:
        return False

    @property
    def joint_names(self):
        """The velocity coordinates' names (the chart joints)."""
        return self._model.joint_names

    @property
    def lie_joints(self):
        """Joint name → ``"spherical"`` | ``"floating"``, in joint order."""
        return {name: kind for kind, name, _, _ in self._groups}

    @property
    def frame_names(self):
        return self._full.frame_names

    def neutral(self):
        """The zero configuration (identity quaternions)."""
        q = np.zeros(self._nq)
        for _, _, _, sq in self._groups:
            q[sq.stop - 1] = 1.0
        return q

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        if name in _FORWARD:  # per chart joint (velocity coordinate) / whole-robot data
            return getattr(self._full, name)
        if hasattr(self._full, name):
            joint = next(iter(self.lie_joints))
            raise NotImplementedError(
                f"{name} does not take the spherical/floating joint '{joint}' "
                f"({self.lie_joints[joint]}) inside the tree; a robot with such joints supports "
                f"{', '.join(CAPABILITIES)}")
        raise AttributeError(name)

    def __repr__(self):
        return (f"LieJointRobot({self._model.name!r}, nq={self._nq}, nv={self._nv}, "
                f"lie_joints={self.lie_joints})")

    # ---- the chart
    def _no_fext(self, f_ext):
        if f_ext is not None:
            joint = next(iter(self.lie_joints))
            raise NotImplementedError(f"f_ext does not take the spherical/floating joint "
                                      f"'{joint}' inside the tree")

    def _q(self, q):
        q = np.asarray(q, dtype=float)
        if q.ndim == 2:
            joint = next(iter(self.lie_joints))
            raise NotImplementedError(f"batches (N, nq) do not take the spherical/floating joint "
                                      f"'{joint}' inside the tree (identification, logs): call "
                                      "one sample at a time")
        if q.shape != (self._nq,) or not np.all(np.isfinite(q)):
            raise ValueError(f"q must be {self._nq} finite numbers (Pinocchio's layout: "
                             "(x, y, z,) qx, qy, qz, qw per spherical/floating joint), got shape "
                             f"{q.shape}")
        return q

    def _v(self, v, name, rows=None):
        v = np.asarray(v, dtype=float)
        want = (self._nv,) if rows is None else (rows, self._nv)
        if v.shape != want or not np.all(np.isfinite(v)):
            raise ValueError(f"{name} must be finite numbers of shape {want}, got {v.shape}")
        return v

    def _chart(self, q):
        """(chart robot at q, chart coordinates): B of each group's first joint ← B·(R, p)."""
        q = self._q(q)
        key = q.tobytes()
        if self._cache[0] == key:
            return self._cache[1]
        B = np.array(self._model.B)
        qc = np.zeros(self._nv)
        for kind, name, sc, sq in self._segs:
            if kind == "joint":
                qc[sc] = q[sq]
                continue
            x = q[sq]
            quat = x[-4:]
            nrm = np.linalg.norm(quat)
            if not abs(nrm - 1.0) <= 1e-6:
                raise ValueError(f"joint '{name}': the quaternion {quat.tolist()} is not of unit "
                                 f"norm (|q| = {nrm:.6g})")
            T = np.eye(4)
            T[:3, :3] = quat_to_matrix(*(quat / nrm))
            if kind == "floating":
                T[:3, 3] = x[:3]
            B[sc.start] = B[sc.start] @ T
        robot = type(self._full)(replace(self._model, B=B), self._full.data.kmax)
        self._cache = (key, (robot, qc))
        return robot, qc

    def _chart_rates(self, vs):
        """Group velocity jets (K+1, nv) → chart derivative jets φ^(1..K+1) (K+1, nv), and the
        Jb series of each group."""
        out = np.array(vs, dtype=float)
        K1 = len(vs)
        series = []
        for kind, _, sc, _ in self._groups:
            phi, Jn = _chart_jet(kind, vs[:, sc])
            out[:, sc] = phi[1:K1 + 1]
            series.append(Jn)
        return out, series

    # ---- dynamics
    def inverse_dynamics(self, q, qd, qdd, f_ext=None, out=None, representation="body"):
        """Inverse dynamics at the group state: the chart's RNEA at φ = 0 with φ̇ = V and
        φ̈ = V̇ − J̇b V (module docstring).

        Args:
            q: (nq,) configuration (Pinocchio's layout: quaternions ``(qx, qy, qz, qw)``).
            qd: (nv,) velocity (each group joint's twist in its child frame) [rad/s, m/s].
            qdd: (nv,) its time derivative [rad/s², m/s²].
            f_ext: not supported (must be None).
            out: optional (nv,) array to fill.
            representation: the recursion, as ``Robot.inverse_dynamics``.
        Returns:
            τ (nv,) [N m, N].
        Raises:
            ValueError: wrong shapes, non-finite values, a quaternion that is not unit.
            NotImplementedError: ``f_ext`` given.
        """
        self._no_fext(f_ext)
        robot, qc = self._chart(q)
        vs = np.stack([self._v(qd, "qd"), self._v(qdd, "qdd")])
        rates, _ = self._chart_rates(vs)
        return _fill(out, robot.inverse_dynamics(qc, rates[0], rates[1],
                                                 representation=representation))

    def torque_derivatives(self, qs, method="recursive", out=None, *, f_ext=None):
        """τ and its first k time derivatives along a motion: τ_group(t) = Jb(φ(t))⁻ᵀ τ_chart(t)
        as Taylor series.

        Args:
            qs: a pair ``(q, vs)``: q (nq,) and vs (k+2, nv) rows V, V′, …, V^(k+1).
            method: as ``Robot.torque_derivatives`` (the chart's recursion).
            out: optional (k+1, nv) array to fill.
            f_ext: not supported (must be None).
        Returns:
            (k+1, nv) rows τ, τ′, …, τ^(k) [N m, N m/s, …].
        Raises:
            ValueError: not a pair, wrong shapes, non-finite values.
        """
        try:
            q, vs = qs
        except (TypeError, ValueError):
            raise ValueError("qs must be a pair (q (nq,), vs (k+2, nv))") from None
        vs = np.asarray(vs, dtype=float)
        if vs.ndim != 2 or vs.shape[0] < 2:
            raise ValueError(f"vs must have shape (k+2, {self._nv}) with k >= 0, got {vs.shape}")
        vs = self._v(vs, "vs", vs.shape[0])
        robot, qc = self._chart(q)
        rates, series = self._chart_rates(vs)
        K = len(vs) - 2
        self._no_fext(f_ext)
        tc = robot.torque_derivatives(np.vstack([qc, rates]), method)
        fact = np.array([math.factorial(k) for k in range(K + 1)], dtype=float)
        res, out = out, np.array(tc)
        for (_, _, sc, _), Jn in zip(self._groups, series):
            inv = np.zeros((K + 1,) + Jn.shape[1:])
            inv[0] = np.eye(Jn.shape[1])
            for k in range(1, K + 1):
                for j in range(1, k + 1):
                    inv[k] -= Jn[j] @ inv[k - j]
            tn = tc[:, sc] / fact[:, None]
            for k in range(K + 1):
                out[k, sc] = fact[k] * sum(inv[j].T @ tn[k - j] for j in range(k + 1))
        return _fill(res, out)

    def inverse_dynamics_derivatives(self, q, qd, qdd):
        """(∂τ/∂q, ∂τ/∂q̇, M), each (nv, nv), Pinocchio's convention: ∂/∂q along q ⊕ δ
        (:meth:`integrate`) with q̇, q̈ held.

        With the chart at q (φ(δ) = δ + O(δ²)), τ = Jb⁻ᵀ τ_c(φ, Jb⁻¹V, φ̈) and
        φ̈ = Jb⁻¹(V̇ − J̇b φ̇); differentiating at φ = 0 (Jb = I) gives, for a group's
        coordinate j, −(∂ⱼJb)ᵀ τ_c + ∂τ_c/∂φⱼ + ∂τ_c/∂φ̇ · ∂φ̇/∂φⱼ + M_c ∂φ̈/∂φⱼ with
        ∂φ̇/∂φⱼ = −∂ⱼJb V; ∂ⱼJb and ∂ᵢ∂ⱼJb come from the Taylor series of Jb (polarised).

        Args:
            q: (nq,) configuration; qd, qdd: (nv,) velocity and acceleration.
        Returns:
            (∂τ/∂q, ∂τ/∂q̇, M) [N m per rad (or m), N m s per rad, kg m²].
        """
        robot, qc = self._chart(q)
        v, a = self._v(qd, "qd"), self._v(qdd, "qdd")
        rates, _ = self._chart_rates(np.stack([v, a]))
        pd, pdd = rates[0], rates[1]
        tc = robot.inverse_dynamics(qc, pd, pdd)
        dq, dv, M = (np.array(x) for x in robot.inverse_dynamics_derivatives(qc, pd, pdd))
        DQ, DV = dq.copy(), dv.copy()
        for kind, _, sc, _ in self._groups:
            d = sc.stop - sc.start
            D1, D2 = _jb_partials(kind, d)
            V, P2 = v[sc], pdd[sc]
            S = np.einsum("i,ijk->jk", V, D1)  # Σᵢ Vᵢ ∂ᵢJb
            for j in range(d):
                dphid = -D1[j] @ V
                dphidd = (-D1[j] @ P2 - np.einsum("i,ijk,k->j", V, D2[:, j], V)
                          - np.einsum("i,ijk,k->j", dphid, D1, V) - S @ dphid)
                col = dq[:, sc.start + j] + dv[:, sc] @ dphid + M[:, sc] @ dphidd
                col[sc] -= D1[j].T @ tc[sc]
                DQ[:, sc.start + j] = col
                DV[:, sc.start + j] = dv[:, sc.start + j] + M[:, sc] @ (
                    -D1[j] @ V - S[:, j])
        return DQ, DV, M

    def mass_matrix(self, q):
        """Joint-space inertia matrix in the group velocities (the chart's at φ = 0, Jb = I).

        Args:
            q: (nq,) configuration.
        Returns:
            M (nv, nv) [kg m², kg m, kg].
        """
        robot, qc = self._chart(q)
        return robot.mass_matrix(qc)

    def gravity_torques(self, q):
        """Generalized gravity.

        Args:
            q: (nq,) configuration.
        Returns:
            g(q) (nv,) [N m, N].
        """
        robot, qc = self._chart(q)
        return robot.gravity_torques(qc)

    def forward_dynamics(self, q, qd, tau, f_ext=None, out=None, method="aba"):
        """Forward dynamics: the chart's ABA at φ = 0, then V̇ = φ̈ + J̇b V per group.

        Args:
            q: (nq,) configuration; qd: (nv,) velocity; tau: (nv,) joint torques [N m, N].
            f_ext: not supported (must be None).
            out: optional (nv,) array to fill.
            method: ``"aba"`` or ``"dca"``, as ``Robot.forward_dynamics`` (the chart's).
        Returns:
            V̇ (nv,) [rad/s², m/s²].
        """
        self._no_fext(f_ext)
        robot, qc = self._chart(q)
        v = self._v(qd, "qd")
        a = np.array(robot.forward_dynamics(qc, v, self._v(tau, "tau"), method=method))
        for kind, _, sc, _ in self._groups:
            a[sc] += _jb_rate(kind, v[sc]) @ v[sc]
        return _fill(out, a)

    def regressor(self, q, qd, qdd):
        """Inertial-parameter regressor.

        Args:
            q: (nq,) configuration; qd, qdd: (nv,) velocity and acceleration.
        Returns:
            Y (nv, 10·nb) with τ = Y π, π = :meth:`inertial_parameters` (every chart body).
        """
        robot, qc = self._chart(q)
        vs = np.stack([self._v(qd, "qd"), self._v(qdd, "qdd")])
        rates, _ = self._chart_rates(vs)
        return robot.regressor(qc, rates[0], rates[1])

    def inertial_parameters(self):
        """(nb, 10) of every chart body (the chart's massless links are zero)."""
        return self._full.inertial_parameters()

    # ---- kinematics
    def frame_placement(self, q, frame):
        """Pose of a frame in the base frame.

        Args:
            q: (nq,) configuration; frame: a link or frame name.
        Returns:
            (4, 4) homogeneous transform [m].
        """
        robot, qc = self._chart(q)
        return robot.frame_placement(qc, frame)

    def frame_jacobian(self, q, frame, representation="body"):
        """Frame Jacobian in the group velocities (as ``Robot.frame_jacobian``).

        Args:
            q: (nq,) configuration; frame: a link or frame name.
            representation: ``"body"``, ``"spatial"``, ``"hybrid"`` or ``"mixed"``.
        Returns:
            (6, nv), rows (linear, angular).
        """
        robot, qc = self._chart(q)
        return robot.frame_jacobian(qc, frame, representation)

    def frame_jacobian_derivative(self, q, qd, frame, representation="body"):
        """Time derivative of the frame Jacobian: the chart's J̇ − J J̇b on each group's columns.

        Args:
            q: (nq,) configuration; qd: (nv,) velocity; frame, representation: as
                :meth:`frame_jacobian`.
        Returns:
            dJ/dt (6, nv).
        """
        robot, qc = self._chart(q)
        v = self._v(qd, "qd")
        Jd = robot.frame_jacobian_derivative(qc, v, frame, representation)
        J = robot.frame_jacobian(qc, frame, representation)
        for kind, _, sc, _ in self._groups:
            Jd[:, sc] -= J[:, sc] @ _jb_rate(kind, v[sc])
        return Jd

    # ---- the group
    def integrate(self, q, v, chart=None):
        """q ⊕ v: each spherical joint R exp(ω), each free joint (R, p) exp((v, ω)) (Pinocchio's
        ``integrate``), the other joints q + v.

        Args:
            q: (nq,) configuration; v: (nv,) tangent vector.
            chart: if true, v holds each group joint's chart coordinates φ (Euler angles after
                the translations) instead of a twist.
        Returns:
            (nq,) configuration, quaternions with w ≥ 0.
        """
        q, v = self._q(q), self._v(v, "v")
        out = q.copy()
        for kind, _, sc, sq in self._segs:
            if kind == "joint":
                out[sq] += v[sc]
                continue
            x = q[sq]
            R = quat_to_matrix(*(x[-4:] / np.linalg.norm(x[-4:])))
            T = _chart_pose(kind, v[sc]) if chart else _exp_pose(kind, v[sc])
            R2 = R @ T[:3, :3]
            out[sq.stop - 4:sq.stop] = matrix_to_quat(R2)
            if kind == "floating":
                out[sq.start:sq.start + 3] = x[:3] + R @ T[:3, 3]
        return out

    def chart_velocity(self, phi, phid):
        """Group velocity of chart coordinates and rates.

        Args:
            phi: (nv,) chart coordinates (only the group joints' entries are used).
            phid: (nv,) their rates.
        Returns:
            V = Jb(φ) φ̇ (nv,).
        """
        V = np.array(phid, dtype=float)
        for kind, _, sc, _ in self._groups:
            s = np.zeros((1, sc.stop - sc.start))
            s[0] = phi[sc]
            V[sc] = _jb_series(kind, s)[0] @ phid[sc]
        return V

    def chart_step(self, q, v, tau, h):
        """One classical RK4 step in the chart centred at q, mapped back to the group.

        Over the step the chart is a fixed-base robot in ordinary coordinates
        (τ_chart = Jb(φ)ᵀ τ); the quaternions stay unit and the scheme keeps RK4's order (a
        Lie-group method in canonical coordinates of the second kind, re-centred every step).

        Args:
            q: (nq,) configuration; v: (nv,) velocity.
            tau: (nv,) joint torques held over the step [N m, N].
            h: step [s].
        Returns:
            (q, v) at t + h.
        Raises:
            ValueError: the state became non-finite.
        """
        robot, qc = self._chart(q)
        v = self._v(v, "qd")
        tau = self._v(tau, "tau")

        def f(phi, phid):
            tc = tau.copy()
            for kind, _, sc, _ in self._groups:
                s = np.zeros((1, sc.stop - sc.start))
                s[0] = phi[sc] - qc[sc]
                tc[sc] = _jb_series(kind, s)[0].T @ tau[sc]
            return phid, robot.forward_dynamics(phi, phid, tc)

        y, yd = qc, v
        k1 = f(y, yd)
        k2 = f(y + 0.5 * h * k1[0], yd + 0.5 * h * k1[1])
        k3 = f(y + 0.5 * h * k2[0], yd + 0.5 * h * k2[1])
        k4 = f(y + h * k3[0], yd + h * k3[1])
        phi = y + h / 6 * (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0])
        phid = yd + h / 6 * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1])
        if not (np.all(np.isfinite(phi)) and np.all(np.isfinite(phid))):
            raise ValueError("the simulation state became non-finite")
        return self.integrate(q, phi - qc, chart=True), self.chart_velocity(phi - qc, phid)

    def chart_robot(self, q):
        """The chart centred at q.

        Args:
            q: (nq,) configuration.
        Returns:
            ``(robot, qc)``: the chart's ``Robot`` (ordinary 1-DOF joints near φ = 0) and q's
            chart coordinates (every group coordinate 0).
        """
        return self._chart(q)


def _rot(axis, a):
    c, s = math.cos(a), math.sin(a)
    i, j = [(1, 2), (2, 0), (0, 1)][axis]
    R = np.eye(3)
    R[i, i], R[i, j], R[j, i], R[j, j] = c, -s, s, c
    return R


def _chart_pose(kind, phi):
    """Pose of the chart coordinates: Trans(x, y, z) Rx(a) Ry(b) Rz(c)."""
    T = np.eye(4)
    r = phi[-3:]
    T[:3, :3] = _rot(0, r[0]) @ _rot(1, r[1]) @ _rot(2, r[2])
    if kind == "floating":
        T[:3, 3] = phi[:3]
    return T


def _exp_pose(kind, v):
    """exp of a rotation vector ω (spherical) or of a twist (v, ω) (free joint) as a pose."""
    w = v[-3:]
    th = float(np.linalg.norm(w))
    W = np.array([[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]])
    if th < 1e-8:
        A, Bc, Cc = 1 - th * th / 6, 0.5 - th * th / 24, 1 / 6 - th * th / 120
    else:
        A, Bc, Cc = math.sin(th) / th, (1 - math.cos(th)) / th ** 2, (th - math.sin(th)) / th ** 3
    T = np.eye(4)
    T[:3, :3] = np.eye(3) + A * W + Bc * W @ W
    if kind == "floating":
        T[:3, 3] = (np.eye(3) + Bc * W + Cc * W @ W) @ v[:3]
    return T
