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
terms of Jb). Everything is exact (no differences). The chart is built once; a call at a new
configuration only re-seats the first chart joint's origin of each group in the compiled
workspace (as :meth:`~mbs_dynamics.kernels._data.Data.set_origins` does), and the constant
partial derivatives ∂ᵢJb, ∂ᵢ∂ⱼJb at φ = 0 are computed once per joint kind. The per-call work —
the checks, the quaternion → origin, the chart rates φ^(k), τ_group = Jb⁻ᵀ τ_chart as series,
the map of (∂τ/∂φ, ∂τ/∂φ̇), the link wrenches of ``f_ext`` (and their jets) → the chart's body
wrenches, :meth:`LieJointRobot.integrate` and the RK4 :meth:`LieJointRobot.chart_step`
(Jb(φ) in closed form) — is compiled (:class:`~mbs_dynamics.kernels._lie.LieChart`, its buffers
held by the robot), then the chart's compiled kernels run: inverse dynamics in the body, spatial
and hybrid recursions, forward dynamics, M, g, the jets (recursive), the derivatives, the
regressor and the frame functions in the four representations, with or without ``f_ext`` where
``Robot`` takes it. Batches of τ (body), M, g, forward dynamics and the jets loop in the kernel;
the other batches are Python loops over the compiled single calls, each row written in place.
Still NumPy: ``method="closed_form"`` (a chart ``Robot`` built at q, the series of Jb by
:func:`_chart_jet`), ``forward_dynamics(method="dca")``, the M⁻¹ products of
:meth:`LieJointRobot.forward_dynamics_derivatives`, :meth:`LieJointRobot.chart_velocity`, and
the series below that define the constant partials once.
"""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from ..kernels import _aba, _rnea, _rnea_repr
from ..kernels._lie import LieChart
from .description import RobotDescription
from .urdf import URDFError

__all__ = ["LieJointRobot", "quat_to_matrix", "matrix_to_quat", "CAPABILITIES"]

#: what a robot with spherical or free inner joints can do (everything else refuses).
CAPABILITIES = ("inverse_dynamics", "torque_derivatives", "inverse_dynamics_derivatives",
                "forward_dynamics_derivatives", "mass_matrix", "gravity_torques",
                "forward_dynamics", "frame_placement", "frame_jacobian",
                "frame_jacobian_derivative", "frame_velocity", "frame_acceleration", "regressor",
                "inertial_parameters", "simulate", "to_urdf")


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
    r = 3 if kind == "floating" else 0
    sb, cb = _sincos(phi[:, r + 1])
    sc, cc = _sincos(phi[:, r + 2])
    E = np.zeros((K, 3, 3))
    E[:, 0, 0], E[:, 0, 1] = _mul(cc, cb), sc
    E[:, 1, 0], E[:, 1, 1] = -_mul(sc, cb), cc
    E[:, 2, 0], E[0, 2, 2] = sb, 1.0
    if kind == "spherical":
        return E
    sa, ca = _sincos(phi[:, r])
    Rx, Ry, Rz = np.zeros((3, K, 3, 3))   # transposed: Rᵀ(φ) = Rz(c)ᵀ Ry(b)ᵀ Rx(a)ᵀ
    Rx[0, 0, 0] = Ry[0, 1, 1] = Rz[0, 2, 2] = 1.0
    Rx[:, 1, 1], Rx[:, 1, 2], Rx[:, 2, 1], Rx[:, 2, 2] = ca, sa, -sa, ca
    Ry[:, 0, 0], Ry[:, 0, 2], Ry[:, 2, 0], Ry[:, 2, 2] = cb, -sb, sb, cb
    Rz[:, 0, 0], Rz[:, 0, 1], Rz[:, 1, 0], Rz[:, 1, 1] = cc, sc, -sc, cc
    J = np.zeros((K, 6, 6))
    J[:, :3, :3], J[:, 3:, 3:] = _mul(_mul(Rz, Ry), Rx), E
    return J


class _JbSeries:
    """The normalised series of Jb(φ(t)) built one coefficient at a time: coefficient k needs
    φ's coefficients 0..k only (what :func:`_chart_jet` has when it needs it), and every
    sin/cos series and Cauchy product is extended, not recomputed (the same numbers as
    :func:`_jb_series` of the whole φ series)."""

    def __init__(self, kind, K):
        self.kind, self.r = kind, 3 if kind == "floating" else 0
        d = 3 if kind == "spherical" else 6
        self.s, self.c = np.zeros((3, K)), np.zeros((3, K))   # sin, cos of the three angles
        self.J = np.zeros((K, d, d))
        if kind == "floating":
            self.R = np.zeros((3, K, 3, 3))   # Rx(a)ᵀ, Ry(b)ᵀ, Rz(c)ᵀ
            self.RzRy = np.zeros((K, 3, 3))
        self.n = 0

    def push(self, phi):
        """Add coefficient n (phi: at least n + 1 coefficients); returns it."""
        k, s, c = self.n, self.s, self.c
        u = phi[:k + 1, self.r:self.r + 3].T          # (3, k + 1)
        if k == 0:
            s[:, 0], c[:, 0] = np.sin(u[:, 0]), np.cos(u[:, 0])
        else:
            j = np.arange(1, k + 1)
            s[:, k] = (j * u[:, j] * c[:, k - j]).sum(1) / k
            c[:, k] = -(j * u[:, j] * s[:, k - j]).sum(1) / k
        sb, cb, sc, cc = s[1, :k + 1], c[1, :k + 1], s[2, :k + 1], c[2, :k + 1]
        E = np.zeros((3, 3))
        E[0, 0], E[0, 1] = cc @ cb[::-1], sc[k]
        E[1, 0], E[1, 1] = -(sc @ cb[::-1]), cc[k]
        E[2, 0], E[2, 2] = sb[k], 1.0 if k == 0 else 0.0
        if self.kind == "spherical":
            self.J[k] = E
        else:
            R = self.R
            one = 1.0 if k == 0 else 0.0
            sa, ca = s[0, k], c[0, k]
            R[0, k] = ((one, 0, 0), (0, ca, sa), (0, -sa, ca))
            R[1, k] = ((cb[k], 0, -sb[k]), (0, one, 0), (sb[k], 0, cb[k]))
            R[2, k] = ((cc[k], sc[k], 0), (-sc[k], cc[k], 0), (0, 0, one))
            self.RzRy[k] = np.einsum("jab,jbc->ac", R[2, :k + 1], R[1, k::-1])
            self.J[k, :3, :3] = np.einsum("jab,jbc->ac", self.RzRy[:k + 1], R[0, k::-1])
            self.J[k, 3:, 3:] = E
        self.n += 1
        return self.J[k]


def _chart_jet(kind, V):
    """φ^(0..K+1) (φ = 0) of the chart centred at the configuration, from the group velocity
    jet V^(0..K) (K+1, d), and the normalised series of Jb (K+2, d, d)."""
    K1, d = V.shape
    fact = np.array([math.factorial(k) for k in range(K1 + 1)], dtype=float)
    Vn = V / fact[:K1, None]
    phi = np.zeros((K1 + 1, d))
    ser = _JbSeries(kind, K1 + 1)
    ser.push(phi)
    for k in range(K1):
        s = Vn[k].copy()
        for j in range(1, k + 1):
            s -= ser.J[j] @ ((k - j + 1) * phi[k - j + 1])
        phi[k + 1] = s / (k + 1)
        ser.push(phi)
    return phi * fact[:, None], ser.J


def _jb_rate(kind, V):
    """dJb/dt at φ = 0 when φ̇ = V: Σᵢ Vᵢ ∂ᵢJb (linear in V)."""
    D1 = _partials(kind)[0]
    d = len(V)
    return (V @ D1.reshape(d, d * d)).reshape(d, d)


_PARTIALS = {}


def _partials(kind):
    """(∂ᵢJb, ∂ᵢ∂ⱼJb) at φ = 0 of a joint kind, computed once (:func:`_jb_partials`)."""
    if kind not in _PARTIALS:
        D = _jb_partials(kind, 3 if kind == "spherical" else 6)
        for a in D:
            a.setflags(write=False)
        _PARTIALS[kind] = D
    return _PARTIALS[kind]


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


def _ndim(x):
    """np.ndim, without its overhead for an ndarray (the per-call path)."""
    return x.ndim if type(x) is np.ndarray else np.ndim(x)


#: the recursions of ``inverse_dynamics`` (kernels/_rnea_repr's codes; body: kernels/_rnea) and
#: the four representations of the frame functions
_RNEA_REPS = {"body": 0, "spatial": 1, "hybrid": 2}
_FRAME_REPS = {"body": 0, "spatial": 1, "hybrid": 2, "mixed": 3}


def _rep(representation, known, what):
    """The code of a representation name, or a ValueError listing the known ones."""
    rep = known.get(representation) if isinstance(representation, str) else None
    if rep is None:
        raise ValueError(f"representation must be one of {sorted(known)} for {what}, got "
                         f"{representation!r}")
    return rep


def _fill(out, x):
    """``x``, or ``out`` filled with it (same shape) when given."""
    if out is None:
        return x
    if not (isinstance(out, np.ndarray) and out.shape == np.shape(x) and out.dtype == float):
        raise ValueError(f"out must be a float64 array of shape {np.shape(x)}")
    out[...] = x
    return out


def group_layout(model):
    """The group layout of a chart model's joints: ``(segments, nq)``, one segment per joint
    in order, ``(kind, name, chart slice, q slice)`` with kind ``"joint"`` (a 1-DOF joint),
    ``"spherical"`` (3 chart coordinates, 4 of q: a quaternion) or ``"floating"`` (6, 7); the
    chart slice is also the joint's slice of v."""
    first = {i0: (name, kind) for name, (kind, i0) in model.lie_joints.items()}
    segs, i, qi = [], 0, 0
    while i < model.n:
        if i in first:
            name, kind = first[i]
            d, nq = (3, 4) if kind == "spherical" else (6, 7)
        else:
            name, kind, d, nq = model.joint_names[i], "joint", 1, 1
        segs.append((kind, name, slice(i, i + d), slice(qi, qi + nq)))
        i, qi = i + d, qi + nq
    return segs, qi


class LieJointRobot(RobotDescription):
    """A robot with spherical or free inner joints, in their group coordinates (module
    docstring). Made by :func:`mbs_dynamics.load_urdf` for a URDF with ``spherical`` or
    ``floating`` joints; the methods of :data:`CAPABILITIES` take ``q`` (nq,) with each such
    joint's quaternion (and position) and velocities (nv,) with its twist in the child frame, in
    joint order, Pinocchio's layout — or batches (N, nq), (N, nv) (a loop over the samples,
    results with a leading N), and ``f_ext`` where ``Robot``'s method takes it (single samples).
    Others raise ``NotImplementedError`` naming the joint. As a ``Robot``, it serves one thread
    at a time (a concurrent call raises RuntimeError); give each thread :meth:`copy`.
    """

    def __init__(self, chart_robot):
        model = chart_robot.model
        if model.floating_base:
            raise URDFError(f"joint '{next(iter(model.lie_joints))}': spherical/floating joints "
                            "inside the tree of a floating-base robot are not supported")
        if model.mimic:
            raise URDFError(f"joint '{next(iter(model.lie_joints))}': spherical/floating joints "
                            "together with mimic joints are not supported")
        self._full = chart_robot   # the chart, re-centred in place (_chart)
        self._model = model
        segs, qi = group_layout(model)
        groups = [sg for sg in segs if sg[0] != "joint"]
        self._segs, self._groups = segs, groups
        self._jv = np.array([sc.start for k, _, sc, _ in segs if k == "joint"], dtype=np.intp)
        self._jq = np.array([sq.start for k, _, _, sq in segs if k == "joint"], dtype=np.intp)
        self._first = np.array([sc.start for _, _, sc, _ in groups], dtype=np.intp)
        self._B0 = np.array(model.B[self._first])
        self._n = self._nv = model.n
        self._nq = qi
        self._fb = False
        # the physical bodies (Pinocchio's): every chart body but the massless links inside a
        # group's chart (a spherical joint's first two, a free joint's first five)
        inside = {i for _, _, sc, _ in groups for i in range(sc.start, sc.stop - 1)}
        self._bodies = np.array([i for i in range(model.n) if i not in inside], dtype=np.intp)
        self._cols = (10 * self._bodies[:, None] + np.arange(10)).ravel()
        self._Y = np.empty((model.n, 10 * model.n))   # the chart's regressor
        self._rates = np.empty((2, model.n))   # chart rates (φ̇, φ̈) of the current call
        self._J = np.empty((6, model.n))        # the Jacobian beside a J̇
        self._zero = np.zeros(model.n)
        # the compiled per-call path (kernels/_lie.pyx): re-centring, rates, force maps
        (d1s, d2s), (d1f, d2f) = _partials("spherical"), _partials("floating")
        self._k = LieChart(chart_robot.data, qi,
                           [(0 if kind == "spherical" else 1, sc.start, sq.start,
                             sc.stop - sc.start) for kind, _, sc, sq in groups],
                           [name for _, name, _, _ in groups], self._B0, self._jv, self._jq,
                           d1s, d2s, d1f, d2f)

    # ---- sizes and names (the rest: RobotDescription, on the chart model)
    @property
    def lie_joints(self):
        """Joint name → ``"spherical"`` | ``"floating"``, in joint order."""
        return {name: kind for kind, name, _, _ in self._groups}

    @property
    def frame_names(self):
        return self._full.frame_names

    @property
    def data(self):
        """The chart's workspace (``Robot.data``): ``with robot.data:`` holds it for one
        thread across several calls."""
        return self._full.data

    def joint_layout(self):
        """Each joint in order: ``(name, kind, q slice, v slice)``, kind ``"joint"`` (a
        1-DOF joint), ``"spherical"`` (q: a quaternion (x, y, z, w), v: ω) or ``"floating"``
        (q: (x, y, z, qx, qy, qz, qw), v: (v, ω) in the child frame)."""
        return [(name, kind, sq, sc) for kind, name, sc, sq in self._segs]

    def neutral(self):
        """The zero configuration (identity quaternions)."""
        q = np.zeros(self._nq)
        for _, _, _, sq in self._groups:
            q[sq.stop - 1] = 1.0
        return q

    def copy(self) -> "LieJointRobot":
        """An independent robot on the same model, with its own workspace (one per thread)."""
        return LieJointRobot(self._full.copy())

    def to_urdf(self, name=None) -> str:
        """This robot as URDF text, its spherical and floating joints as such
        (``Robot.to_urdf``)."""
        return self._full.to_urdf(name)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
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

    # ---- input checks, batches
    def _q(self, q):
        q = np.asarray(q, dtype=float)
        if q.shape != (self._nq,) or not np.isfinite(q).all():
            raise ValueError(f"q must be {self._nq} finite numbers (Pinocchio's layout: "
                             "(x, y, z,) qx, qy, qz, qw per spherical/floating joint), or a "
                             f"batch (N, {self._nq}); got shape {q.shape}")
        return q

    def _v(self, v, name, rows=None):
        v = np.asarray(v, dtype=float)
        want = (self._nv,) if rows is None else (rows, self._nv)
        if v.shape != want or not np.isfinite(v).all():
            raise ValueError(f"{name} must be finite numbers of shape {want}, got {v.shape}")
        return v

    def _each(self, fn, out, shape, q, *others, f_ext=None):
        """``fn(q_i, *others_i, out=row i)`` over the rows of a batch q (N, nq) (the others
        (N, nv)) into ``out`` (or a new array) of shape (N,) + shape: each row written in place
        by the single-sample method (its checks), no per-row result array."""
        if f_ext is not None:
            raise ValueError("f_ext is not supported with batch inputs")
        q = np.asarray(q, dtype=float)
        if q.ndim != 2 or q.shape[1] != self._nq:
            self._q(q)   # raises, naming the layout
        N = len(q)
        others = [np.asarray(x, dtype=float) for x in others]
        for x in others:
            if x.ndim < 2 or len(x) != N:
                raise ValueError(f"a batch needs the same number of rows N = {N} in every "
                                 f"argument, got shape {x.shape}")
        shape = (N,) + tuple(shape)
        direct = (type(out) is np.ndarray and out.shape == shape and out.dtype == float
                  and out.flags.c_contiguous and out.flags.writeable
                  and not any(np.shares_memory(out, x) for x in (q, *others)))
        res = out if direct else np.empty(shape)
        with self._full.data:
            for i in range(N):
                fn(q[i], *(x[i] for x in others), out=res[i])
        return res if direct or out is None else _fill(out, res)

    def _each3(self, fn, out, q, *others):
        """:meth:`_each` of a method with three (nv, nv) results (``out`` (3, nv, nv)): three
        (N, nv, nv) arrays, or the slices of ``out`` (3, N, nv, nv)."""
        nv = self._nv
        rows = self._each(fn, None, (3, nv, nv), q, *others)   # (N, 3, nv, nv)
        res = np.ascontiguousarray(np.moveaxis(rows, 1, 0))
        if out is None:
            return res[0], res[1], res[2]
        _fill(out, res)
        return out[0], out[1], out[2]

    def _wrenches(self, f_ext, rows):
        """The chart's body wrenches (rows, nb, 6) of ``f_ext`` (compiled,
        :meth:`~mbs_dynamics.kernels._lie.LieChart.body_wrenches`); anything it does not take
        goes through ``Robot``'s conversion, whose checks name the problem."""
        fx = self._k.body_wrenches(f_ext, self._model.link_frames, rows)
        return self._full._fext(f_ext, rows) if fx is None else fx

    # ---- the chart
    def _poses(self, q):
        """q's chart coordinates (every group coordinate 0) and the re-centred origins
        B·(R, p) of each group's first chart joint."""
        q = self._q(q)
        qc = np.zeros(self._nv)
        qc[self._jv] = q[self._jq]
        poses = np.empty((len(self._groups), 4, 4))
        for g, (kind, name, _, sq) in enumerate(self._groups):
            x = q[sq]
            quat = x[-4:]
            nrm = math.sqrt(float(quat @ quat))
            if not abs(nrm - 1.0) <= 1e-6:
                raise ValueError(f"joint '{name}': the quaternion {quat.tolist()} is not of unit "
                                 f"norm (|q| = {nrm:.6g})")
            T = np.eye(4)
            T[:3, :3] = quat_to_matrix(*(quat / nrm))
            if kind == "floating":
                T[:3, 3] = x[:3]
            poses[g] = self._B0[g] @ T
        return qc, poses

    def _chart(self, q):
        """(chart robot re-centred at q, q's chart coordinates); the robot stays re-centred
        until a call at another configuration."""
        return self._full, self._k.recenter(q)

    def chart_robot(self, q):
        """The chart centred at q, as an independent ``Robot``.

        Args:
            q: (nq,) configuration.
        Returns:
            ``(robot, qc)``: the chart's ``Robot`` (ordinary 1-DOF joints near φ = 0) and q's
            chart coordinates (every group coordinate 0).
        """
        qc, poses = self._poses(q)
        B = np.array(self._model.B)
        B[self._first] = poses
        return type(self._full)(replace(self._model, B=B), self._full.data.kmax), qc

    def _chart_rates(self, vs):
        """Group velocity jets (K+1, nv) → chart derivative jets φ^(1..K+1) (K+1, nv), and the
        Jb series of each group (None for K + 1 ≤ 2: φ̇ = V, φ̈ = V̇ − J̇b V in closed form)."""
        K1 = len(vs)
        if K1 == 2:   # compiled (kernels/_lie.pyx)
            return self._k.accel(vs[0], vs[1]), [None] * len(self._groups)
        out = np.array(vs, dtype=float)
        series = []
        for kind, _, sc, _ in self._groups:
            if K1 < 2:
                series.append(None)
                continue
            phi, Jn = _chart_jet(kind, vs[:, sc])
            out[:, sc] = phi[1:K1 + 1]
            series.append(Jn)
        return out, series

    # ---- dynamics
    def inverse_dynamics(self, q, qd, qdd, f_ext=None, out=None, representation="body"):
        """Inverse dynamics at the group state: the chart's RNEA at φ = 0 with φ̇ = V and
        φ̈ = V̇ − J̇b V (module docstring).

        Args:
            q: (nq,) configuration (Pinocchio's layout: quaternions ``(qx, qy, qz, qw)``), or
                (N, nq) for a batch.
            qd: (nv,) velocity (each group joint's twist in its child frame) [rad/s, m/s].
            qdd: (nv,) its time derivative [rad/s², m/s²].
            f_ext: optional dict link name → wrench ``(f, m)`` in that link's frame, as
                ``Robot.inverse_dynamics`` (single samples).
            out: optional (nv,) / (N, nv) array to fill.
            representation: the recursion, as ``Robot.inverse_dynamics``.
        Returns:
            τ (nv,) or (N, nv) [N m, N].
        Raises:
            ValueError: wrong shapes, non-finite values, a quaternion that is not unit.
        """
        fast = f_ext is None and representation == "body"
        if _ndim(q) == 2:
            if fast:
                return self._k.inverse_dynamics_batch(q, qd, qdd, out)
            if f_ext is not None:
                raise ValueError("f_ext is not supported with batch inputs")
            _rep(representation, _RNEA_REPS, "inverse_dynamics")
            return self._each(lambda x, y, z, out: self.inverse_dynamics(
                x, y, z, out=out, representation=representation), out, (self._nv,), q, qd, qdd)
        if fast:
            return self._k.inverse_dynamics(q, qd, qdd, out)
        rep = _rep(representation, _RNEA_REPS, "inverse_dynamics")
        k = self._k
        with self._full.data:
            qc = k.recenter(q)
            rates = k.accel(qd, qdd, self._rates)   # (V, φ̈ = V̇ − J̇b V)
            fx = None if f_ext is None else self._wrenches(f_ext, 1)[0]
            if rep == 0:
                return _rnea.inverse_dynamics(k.data, qc, rates[0], rates[1], fx, out)
            return _rnea_repr.inverse_dynamics(k.data, rep, qc, rates[0], rates[1], fx, out)

    def torque_derivatives(self, qs, method="recursive", out=None, *, f_ext=None):
        """τ and its first k time derivatives along a motion: τ_group(t) = Jb(φ(t))⁻ᵀ τ_chart(t)
        as Taylor series.

        Args:
            qs: a pair ``(q, vs)``: q (nq,) and vs (k+2, nv) rows V, V′, …, V^(k+1); or a batch
                (q (N, nq), vs (N, k+2, nv)).
            method: as ``Robot.torque_derivatives`` (the chart's recursion, or its closed form).
            out: optional (k+1, nv) / (N, k+1, nv) array to fill.
            f_ext: optional dict link name → wrench jet in the link frame, as
                ``Robot.torque_derivatives`` (single samples).
        Returns:
            (k+1, nv) rows τ, τ′, …, τ^(k) [N m, N m/s, …] (or (N, k+1, nv)).
        Raises:
            ValueError: not a pair, wrong shapes, non-finite values.
        """
        try:
            q, vs = qs
        except (TypeError, ValueError):
            raise ValueError("qs must be a pair (q (nq,), vs (k+2, nv))") from None
        vs = np.asarray(vs, dtype=float)
        if _ndim(q) == 2:
            if vs.ndim != 3:
                raise ValueError(f"a batch needs vs of shape (N, k+2, {self._nv}), got "
                                 f"{vs.shape}")
            if method == "recursive" and f_ext is None:
                return self._k.torque_derivatives_batch(q, vs, out)
            return self._each(lambda a, b, out: self.torque_derivatives((a, b), method, out),
                              out, (max(vs.shape[1] - 1, 0), self._nv), q, vs, f_ext=f_ext)
        if vs.ndim != 2 or vs.shape[0] < 2:
            raise ValueError(f"vs must have shape (k+2, {self._nv}) with k >= 0, got {vs.shape}")
        if method == "recursive" and f_ext is None:
            return self._k.torque_derivatives(q, vs, out)
        if method == "recursive":
            with self._full.data:
                return self._k.torque_derivatives(q, vs, out, self._wrenches(f_ext, len(vs) - 1))
        vs = self._v(vs, "vs", vs.shape[0])
        K = len(vs) - 2
        with self._full.data:
            if method == "closed_form":
                robot, qc = self.chart_robot(q)
            else:
                robot, qc = self._chart(q)
            rates, series = self._chart_rates(vs)
            tc = robot.torque_derivatives(np.vstack([qc, rates]), method, f_ext=f_ext)
        if K == 0:
            return _fill(out, tc)
        fact = np.array([math.factorial(k) for k in range(K + 1)], dtype=float)
        res, out = out, np.array(tc)
        for (_, _, sc, _), Jn in zip(self._groups, series):
            if Jn is None:  # K = 0 is returned above; K ≥ 1 has the series
                continue
            inv = np.zeros((K + 1,) + Jn.shape[1:])
            inv[0] = np.eye(Jn.shape[1])
            for k in range(1, K + 1):
                for j in range(1, k + 1):
                    inv[k] -= Jn[j] @ inv[k - j]
            tn = tc[:, sc] / fact[:, None]
            for k in range(K + 1):
                out[k, sc] = fact[k] * sum(inv[j].T @ tn[k - j] for j in range(k + 1))
        return _fill(res, out)

    def inverse_dynamics_derivatives(self, q, qd, qdd, out=None):
        """(∂τ/∂q, ∂τ/∂q̇, M), each (nv, nv), Pinocchio's convention: ∂/∂q along q ⊕ δ
        (:meth:`integrate`) with q̇, q̈ held.

        With the chart at q (φ(δ) = δ + O(δ²)), τ = Jb⁻ᵀ τ_c(φ, Jb⁻¹V, φ̈) and
        φ̈ = Jb⁻¹(V̇ − J̇b φ̇); differentiating at φ = 0 (Jb = I) gives, for a group's
        coordinate j, −(∂ⱼJb)ᵀ τ_c + ∂τ_c/∂φⱼ + ∂τ_c/∂φ̇ · ∂φ̇/∂φⱼ + M_c ∂φ̈/∂φⱼ with
        ∂φ̇/∂φⱼ = −∂ⱼJb V; ∂ⱼJb and ∂ᵢ∂ⱼJb come from the Taylor series of Jb (polarised).

        Args:
            q: (nq,) configuration; qd, qdd: (nv,) velocity and acceleration; or (N, ·) batches.
            out: optional (3, nv, nv) / (3, N, nv, nv) array whose slices are returned.
        Returns:
            (∂τ/∂q, ∂τ/∂q̇, M) [N m per rad (or m), N m s per rad, kg m²], each (nv, nv) or
            (N, nv, nv).
        """
        nv = self._nv
        if _ndim(q) == 2:
            return self._each3(self.inverse_dynamics_derivatives, out, q, qd, qdd)
        with self._full.data:
            qc, (v, pdd, tc) = self._k.chart_state(q, qd, qdd)   # V, V̇ − J̇b V, τ_c
            dq, dv, M = self._full.inverse_dynamics_derivatives(qc, v, pdd, out=out)
            self._k.derivatives_map(v, pdd, tc, dq, dv, M)   # in place (the docstring's map)
        return (dq, dv, M) if out is None else tuple(out)

    def forward_dynamics_derivatives(self, q, qd, tau, f_ext=None, out=None):
        """(∂V̇/∂q, ∂V̇/∂q̇, M⁻¹) of :meth:`forward_dynamics`, from differentiating
        ID(q, V, FD(q, V, τ)) = τ: ∂V̇/∂x = −M⁻¹ ∂τ/∂x with :meth:`inverse_dynamics_derivatives`
        at V̇ = FD (Pinocchio's ``computeABADerivatives``; ∂/∂q along q ⊕ δ).

        Args:
            q: (nq,) configuration; qd: (nv,) velocity; tau: (nv,) torques; or (N, ·) batches.
            f_ext: not supported (must be None): a wrench fixed in a link would enter ∂/∂q.
            out: optional (3, nv, nv) / (3, N, nv, nv) array whose slices are returned.
        Returns:
            (∂V̇/∂q, ∂V̇/∂q̇, M⁻¹), each (nv, nv) or (N, nv, nv).
        Raises:
            NotImplementedError: ``f_ext`` given.
        """
        if f_ext is not None:
            joint = next(iter(self.lie_joints))
            raise NotImplementedError(f"forward_dynamics_derivatives with f_ext does not take "
                                      f"the spherical/floating joint '{joint}' inside the tree")
        nv = self._nv
        if _ndim(q) == 2:
            return self._each3(self.forward_dynamics_derivatives, out, q, qd, tau)
        with self._full.data:
            a = self.forward_dynamics(q, qd, tau)
            DQ, DV, _ = self.inverse_dynamics_derivatives(q, qd, a)
            Minv = self._full.inverse_mass_matrix(self._k.recenter(q))   # the chart's (Jb = I)
        res = (-Minv @ DQ, -Minv @ DV, Minv)
        if out is None:
            return res
        for o, r in zip(out, res):
            _fill(o, r)
        return tuple(out)

    def mass_matrix(self, q, out=None):
        """Joint-space inertia matrix in the group velocities (the chart's at φ = 0, Jb = I).

        Args:
            q: (nq,) configuration, or (N, nq).
            out: optional (nv, nv) / (N, nv, nv) array to fill.
        Returns:
            M (nv, nv) or (N, nv, nv) [kg m², kg m, kg].
        """
        if _ndim(q) == 2:
            return self._k.mass_matrix_batch(q, out)
        return self._k.mass_matrix(q, out)

    def gravity_torques(self, q, out=None):
        """Generalized gravity.

        Args:
            q: (nq,) configuration, or (N, nq).
            out: optional (nv,) / (N, nv) array to fill.
        Returns:
            g(q) (nv,) or (N, nv) [N m, N].
        """
        if _ndim(q) == 2:
            return self._k.gravity_batch(q, out)
        return self._k.gravity(q, out)

    def forward_dynamics(self, q, qd, tau, f_ext=None, out=None, method="aba"):
        """Forward dynamics: the chart's ABA at φ = 0, then V̇ = φ̈ + J̇b V per group.

        Args:
            q: (nq,) configuration; qd: (nv,) velocity; tau: (nv,) joint torques [N m, N]; or
                (N, ·) batches.
            f_ext: optional dict link name → wrench ``(f, m)`` in that link's frame, as
                ``Robot.forward_dynamics`` (single samples).
            out: optional (nv,) / (N, nv) array to fill.
            method: ``"aba"`` or ``"dca"``, as ``Robot.forward_dynamics`` (the chart's).
        Returns:
            V̇ (nv,) or (N, nv) [rad/s², m/s²].
        """
        if _ndim(q) == 2:
            if f_ext is None and method == "aba":
                return self._k.forward_dynamics_batch(q, qd, tau, out)
            return self._each(lambda x, y, z, out: self.forward_dynamics(
                x, y, z, out=out, method=method), out, (self._nv,), q, qd, tau, f_ext=f_ext)
        if f_ext is None and method == "aba":
            return self._k.forward_dynamics(q, qd, tau, out)
        if method == "aba":   # with f_ext: the chart's ABA, then V̇ = φ̈ + J̇b V
            k = self._k
            with self._full.data:
                qc = k.recenter(q)
                fx = self._wrenches(f_ext, 1)[0]
                a = _aba.forward_dynamics(k.data, qc, qd, tau, fx, None)
                a -= k.accel(qd, self._zero, self._rates)[1]   # (V, −J̇b V)
            return _fill(out, a)
        with self._full.data:
            robot, qc = self._chart(q)
            v = self._v(qd, "qd")
            a = np.array(robot.forward_dynamics(qc, v, self._v(tau, "tau"), f_ext=f_ext,
                                                method=method))
        for kind, _, sc, _ in self._groups:
            a[sc] += _jb_rate(kind, v[sc]) @ v[sc]
        return _fill(out, a)

    def regressor(self, q, qd, qdd, out=None):
        """Inertial-parameter regressor: the chart's at φ = 0 with the chart rates (seed 000
        §6), the columns of the physical bodies (:attr:`body_names`) — Pinocchio's
        ``computeJointTorqueRegressor`` with ``JointModelSpherical`` / ``JointModelFreeFlyer``.

        Args:
            q: (nq,) configuration; qd, qdd: (nv,) velocity and acceleration; or (N, ·) batches.
            out: optional (nv, 10·nb) / (N, nv, 10·nb) array to fill.
        Returns:
            Y (nv, 10·nb) (or (N, nv, 10·nb)) with τ = Y π, π = :meth:`inertial_parameters`
            flattened, nb = ``len(body_names)``.
        """
        shape = (self._nv, self._cols.size)
        if _ndim(q) == 2:
            return self._each(self.regressor, out, shape, q, qd, qdd)
        k = self._k
        with self._full.data:
            qc = k.recenter(q)
            rates = k.accel(qd, qdd, self._rates)   # (V, φ̈ = V̇ − J̇b V)
            Y = self._full.regressor(qc, rates[0], rates[1], self._Y)
            return _fill(out, Y[:, self._cols])

    def inertial_parameters(self):
        """(nb, 10) inertial parameters of the physical bodies (:attr:`body_names`, Pinocchio's
        order and ``Inertia.toDynamicParameters()``); the massless links inside a chart carry
        none and are left out."""
        return self._full.inertial_parameters()[self._bodies]

    @property
    def body_names(self):
        """The link of each row of :meth:`inertial_parameters` (one per joint of the group
        layout: a spherical or free joint's child link, not its chart's massless links)."""
        return tuple(self._model.link_names[i] for i in self._bodies)

    # ---- kinematics
    def frame_placement(self, q, frame, out=None):
        """Pose of a frame in the base frame.

        Args:
            q: (nq,) configuration, or (N, nq); frame: a link or frame name.
            out: optional (4, 4) / (N, 4, 4) array to fill.
        Returns:
            (4, 4) (or (N, 4, 4)) homogeneous transform [m].
        """
        if _ndim(q) == 2:
            return self._each(lambda x, out: self.frame_placement(x, frame, out), out, (4, 4), q)
        with self._full.data:
            return self._full.frame_placement(self._k.recenter(q), frame, out)

    def frame_jacobian(self, q, frame, representation="body", out=None):
        """Frame Jacobian in the group velocities (as ``Robot.frame_jacobian``).

        Args:
            q: (nq,) configuration, or (N, nq); frame: a link or frame name.
            representation: ``"body"``, ``"spatial"``, ``"hybrid"`` or ``"mixed"``.
            out: optional (6, nv) / (N, 6, nv) array to fill.
        Returns:
            (6, nv) (or (N, 6, nv)), rows (linear, angular).
        """
        if _ndim(q) == 2:
            _rep(representation, _FRAME_REPS, "frame_jacobian")
            return self._each(lambda x, out: self.frame_jacobian(x, frame, representation, out),
                              out, (6, self._nv), q)
        with self._full.data:
            return self._full.frame_jacobian(self._k.recenter(q), frame, representation, out)

    def frame_jacobian_derivative(self, q, qd, frame, representation="body", out=None):
        """Time derivative of the frame Jacobian: the chart's J̇ − J J̇b on each group's columns.

        Args:
            q: (nq,) configuration; qd: (nv,) velocity; or (N, ·) batches; frame,
                representation: as :meth:`frame_jacobian`.
            out: optional (6, nv) / (N, 6, nv) array to fill.
        Returns:
            dJ/dt (6, nv) (or (N, 6, nv)).
        """
        if _ndim(q) == 2:
            _rep(representation, _FRAME_REPS, "frame_jacobian_derivative")
            return self._each(lambda x, y, out: self.frame_jacobian_derivative(
                x, y, frame, representation, out), out, (6, self._nv), q, qd)
        robot, k = self._full, self._k
        with robot.data:
            qc = k.recenter(q)
            v = self._v(qd, "qd")
            Jd = robot.frame_jacobian_derivative(qc, v, frame, representation)
            J = robot.frame_jacobian(qc, frame, representation, self._J)
        return _fill(out, k.jacobian_rate(v, J, Jd))   # Jd − J J̇b per group

    def frame_velocity(self, q, qd, frame, representation="body", out=None):
        """Twist of a frame, ``J V`` (the chart's at φ = 0 with φ̇ = V).

        Args:
            q: (nq,) configuration; qd: (nv,) velocity; or (N, ·) batches; frame,
                representation: as :meth:`frame_jacobian`.
            out: optional (6,) / (N, 6) array to fill.
        Returns:
            (6,) (or (N, 6)) twist (linear, angular) [m/s, rad/s].
        """
        if _ndim(q) == 2:
            _rep(representation, _FRAME_REPS, "frame_velocity")
            return self._each(lambda x, y, out: self.frame_velocity(
                x, y, frame, representation, out), out, (6,), q, qd)
        with self._full.data:
            return self._full.frame_velocity(self._k.recenter(q), qd, frame, representation,
                                             out)

    def frame_acceleration(self, q, qd, qdd, frame, representation="body", out=None):
        """Time derivative of :meth:`frame_velocity`: the chart's at φ = 0 with φ̇ = V and
        φ̈ = V̇ − J̇b V (as ``Robot.frame_acceleration``; hybrid: (p̈, ω̇)).

        Args:
            q: (nq,) configuration; qd, qdd: (nv,) velocity and acceleration; or (N, ·)
                batches; frame, representation: as :meth:`frame_jacobian`.
            out: optional (6,) / (N, 6) array to fill.
        Returns:
            (6,) (or (N, 6)) [m/s², rad/s²].
        """
        if _ndim(q) == 2:
            _rep(representation, _FRAME_REPS, "frame_acceleration")
            return self._each(lambda x, y, z, out: self.frame_acceleration(
                x, y, z, frame, representation, out), out, (6,), q, qd, qdd)
        k = self._k
        with self._full.data:
            qc = k.recenter(q)
            rates = k.accel(qd, qdd, self._rates)
            return self._full.frame_acceleration(qc, rates[0], rates[1], frame,
                                                 representation, out)

    # ---- the group
    def integrate(self, q, v, chart=None):
        """q ⊕ v: each spherical joint R exp(ω), each free joint (R, p) exp((v, ω)) (Pinocchio's
        ``integrate``), the other joints q + v.

        Args:
            q: (nq,) configuration; v: (nv,) tangent vector.
            chart: if true, v holds each group joint's chart coordinates φ (Euler angles after
                the translations) instead of a twist.
        Returns:
            (nq,) configuration, quaternions with w ≥ 0 (q's quaternions are normalised first).
        Raises:
            ValueError: wrong shapes, non-finite values, a zero quaternion.
        """
        return self._k.integrate(q, v, bool(chart), None)

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
            ValueError: wrong shapes, non-finite values, a quaternion that is not unit, a step
                that is not a finite number, or the state became non-finite.
        """
        return self._k.chart_step(q, v, tau, h, None, None)
