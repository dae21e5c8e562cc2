"""The public API: a :class:`Robot` = a frozen :class:`~mbs_dynamics.model.Model` + its
:class:`~mbs_dynamics._data.Data` (the workspace the compiled kernels write).

Every method checks its inputs once (shape, finiteness; a ``ValueError`` names the argument),
crosses into one compiled kernel and returns a new array or fills ``out``. Inputs may be any
array-like (lists, read-only, strided, Fortran-ordered, float32 or integer arrays are converted
once); complex input is a ``TypeError``; ``out`` must be a writable float64 C-contiguous array of
exactly the result's shape (otherwise ``ValueError``), and may share memory with an input.
A Robot serves one thread at a time (its Data is the workspace of every call): a call while another
thread is inside one raises RuntimeError "Robot is in use by another thread" (never a wrong
number; ``kernels._data.BUSY_MESSAGE``); give each thread ``robot.copy()``.

Vectors follow ``robot.joint_names``. With a floating base (``load_urdf(..., floating_base=True)``)
they use Pinocchio's free-flyer layout: ``q = (x, y, z, qx, qy, qz, qw, joints)`` (nq = 7 + n),
velocities, accelerations and forces ``(linear, angular, joints)`` (nv = 6 + n), the base twist and
wrench in the base frame.
"""
from __future__ import annotations

import numpy as np

from .identification import _derivatives, _regressor
from .identification import parameters as _params
from .kernels import _aba, _crba, _rnea, _rnea_repr
from .kernels import _minv
from .kernels import _rnea_so
from .kinematics import _frames
from .model import model as _model
from .model.description import RobotDescription

_ND = np.ndarray


def _ndim(x):
    """np.ndim without converting a flat list or tuple of numbers (the kernels convert once)."""
    if type(x) is _ND:
        return x.ndim
    if type(x) in (list, tuple) and x and type(x[0]) in (float, int):
        return 1
    return np.ndim(x)


class Robot(RobotDescription):
    """Rigid-body dynamics of a robot loaded from URDF (see :func:`mbs_dynamics.load_urdf`).

    Conventions: every public 6-vector is ``(linear, angular)`` — twists ``(v, ω)``, wrenches
    ``(f, m)`` (``f_ext``, the floating base's twist and wrench), as Pinocchio and
    geometry_msgs; the kernels work angular-first inside. SI units, gravity in the base (world)
    frame; ``q`` of revolute/continuous joints in rad, prismatic in m.
    """

    __slots__ = ("_model", "_data", "_n", "_nq", "_nv", "_fb", "_fk", "_jf")

    def __init__(self, model: _model.Model, kmax: int = 2):
        self._model = model
        self._data = model.create_data(kmax)
        self._n = model.n
        self._nq = model.nq
        self._nv = model.nv
        self._fb = model.floating_base
        self._fk = _frames.FrameData(self._data, model)  # frame table + scratch (kinematics/)

    # ---------------------------------------------------------------- description
    # (model, n, nq, nv, floating_base, names, limits, gravity, total_mass: RobotDescription)
    @property
    def data(self):
        """The workspace the kernels write (``data.arrays``: name → array, see ``_data.LAYOUT``)."""
        return self._data

    def __repr__(self):
        base = "floating" if self._fb else "fixed"
        return (f"Robot('{self._model.name}', n={self.n}, base='{self.base_link}' ({base}), "
                f"joints={list(self.joint_names)})")

    def copy(self) -> "Robot":
        """An independent Robot on the same (immutable) model, with its own Data."""
        return Robot(self._model, self._data.kmax)

    def to_urdf(self, name=None) -> str:
        """This robot's model as URDF text (:func:`~mbs_dynamics.model.writer.to_urdf`): loading
        it again gives the same dynamics; a floating base and gravity are load options, not URDF.

        Args:
            name: the ``<robot name>`` (default: the model's).
        Returns:
            URDF text (str).
        """
        from .model.writer import to_urdf
        return to_urdf(self._model, name)

    def with_payload(self, link, mass, com=(0.0, 0.0, 0.0), inertia=None) -> "Robot":
        """A new Robot with a rigid payload on ``link``: ``mass`` [kg], ``com`` [m] and 3×3
        ``inertia`` [kg m²] about the COM, both in the link frame."""
        return Robot(_model.add_payload(self._model, link, mass, com, inertia), self._data.kmax)

    # ---------------------------------------------------------------- inverse dynamics
    def inverse_dynamics(self, q, qd, qdd, f_ext=None, out=None, representation="body"):
        """τ = M(q) q̈ + C(q, q̇) q̇ + Q_grav(q) − Q_ext (RNEA, seed 000 eq. 67–68).

        Args:
            q: (nq,) positions; qd, qdd: (nv,) velocities, accelerations; or (N, ·) batches.
            f_ext: optional dict link name → wrench ``(f, m)`` (6,) (force, then moment) in that
                link's frame, acting on the link (as Pinocchio's ``fext``; not with a batch).
            out: optional (nv,) / (N, nv) array to fill.
            representation: ``"body"`` (default, the fastest: eq. 67–68), ``"spatial"``
                (eq. 69–72) or ``"hybrid"`` (eq. 73–77): the recursion that computes τ (the
                result is the same at round-off; see :meth:`_inverse_dynamics_repr`).
        Returns:
            τ, shape (nv,) or (N, nv) [N m or N; a floating base's wrench in its frame].
        """
        if representation != "body":
            return self._inverse_dynamics_repr(q, qd, qdd, f_ext, out, representation)
        nd = _ndim(q)
        if f_ext is None and nd == 1:
            return _rnea.inverse_dynamics(self._data, q, qd, qdd, None, out)
        if nd == 2:
            if f_ext is not None:
                raise ValueError("f_ext is not supported with batch inputs")
            return _rnea.inverse_dynamics_batch(self._data, q, qd, qdd, out)
        fx = None if f_ext is None else self._fext(f_ext, 1)[0]
        return _rnea.inverse_dynamics(self._data, q, qd, qdd, fx, out)

    def forward_dynamics(self, q, qd, tau, f_ext=None, out=None, method="aba"):
        """q̈ = M(q)⁻¹ (τ + Q_ext − C(q, q̇) q̇ − Q_grav(q)) by the O(n) articulated-body algorithm
        (:mod:`mbs_dynamics._aba`), the inverse of :meth:`inverse_dynamics`.

        Args:
            q, qd, tau: (nq,), (nv,), (nv,) or (N, ·). f_ext, out: as in :meth:`inverse_dynamics`.
            method: ``"aba"`` (default, compiled) or ``"dca"`` — the acceleration-level
                divide-and-conquer assembly (seed 002's assembly with forces instead of
                impulses, :mod:`mbs_dynamics.loops.hdca`, compiled, plus one step of iterative
                refinement with the RNEA residual; fixed or floating base, f_ext as for ABA).
                ``"hdca"``, its former name, still works with a :class:`DeprecationWarning`.
        Returns:
            q̈, shape (nv,) or (N, nv).
        Raises:
            ValueError: also when a movable joint moves no mass (the dynamics is singular).
        """
        if method != "aba":
            method = forward_dynamics_method(method, ("aba", "dca"))
        if method == "dca":
            return self._dca(q, qd, tau, f_ext, out)
        nd = _ndim(q)
        if f_ext is None and nd == 1:
            return _aba.forward_dynamics(self._data, q, qd, tau, None, out)
        if nd == 2:
            if f_ext is not None:
                raise ValueError("f_ext is not supported with batch inputs")
            return _aba.forward_dynamics_batch(self._data, q, qd, tau, out)
        fx = None if f_ext is None else self._fext(f_ext, 1)[0]
        return _aba.forward_dynamics(self._data, q, qd, tau, fx, out)

    def _fext(self, f_ext, rows):
        """Public link wrenches ``(f, m)`` (link frame) → the kernels' body wrenches ``(m, f)``
        (body frame), (rows, nb, 6): m_b = R m + p × R f, f_b = R f. A value may be (6,) or a
        jet (r ≤ rows, 6) of rows W, W′, W″, …"""
        fb = 1 if self._fb else 0
        W = np.zeros((rows, self._n + fb, 6))
        if not hasattr(f_ext, "items"):
            raise ValueError("f_ext must be a dict link name → wrench (f, m)")
        for link, w in f_ext.items():
            if link not in self._model.link_frames:
                raise ValueError(f"f_ext: unknown link '{link}'")
            if np.iscomplexobj(w):
                raise TypeError(f"f_ext['{link}'] must be real")
            try:
                w = np.asarray(w, dtype=float)
            except (TypeError, ValueError, OverflowError):
                raise ValueError(f"f_ext['{link}'] must be numbers") from None
            if w.shape == (6,):
                w = w[None]
            if w.ndim != 2 or w.shape[1] != 6 or not 1 <= w.shape[0] <= rows:
                want = "(6,)" if rows == 1 else f"(6,) or (r <= {rows}, 6)"
                raise ValueError(f"f_ext['{link}'] has shape {w.shape}, expected {want}")
            if not np.all(np.isfinite(w)):
                raise ValueError(f"f_ext['{link}'] contains NaN or inf")
            body, S = self._model.link_frames[link]
            if body < 0 and not fb:
                continue  # a wrench on the fixed base produces no joint torque
            R, p = S[:3, :3], S[:3, 3]
            f = w[:, :3] @ R.T
            b = body + fb
            W[:w.shape[0], b, :3] += w[:, 3:] @ R.T + np.cross(p, f)
            W[:w.shape[0], b, 3:] += f
        return W

    def torque_derivatives(self, qs, method="recursive", out=None, *, f_ext=None):
        """τ and its first k time derivatives along a trajectory.

        Args:
            qs: (k+3, n) rows q, q′, q″, …, q^(k+2) (fixed base); or a pair ``(q, vs)`` with q
                (nq,) and vs (k+2, nv) rows v, v′, …, v^(k+1) — the form a floating base needs
                (v = (base twist, joint rates), its derivatives the base-motion jet); batches:
                (N, k+3, n) or (q (N, nq), vs (N, k+2, nv)).
            method: ``"recursive"`` (O(n), any k ≥ 0; doc/math.md) or ``"closed_form"`` (seed 004
                eq. 28 and 38, fixed base, k ≤ 2, no f_ext; dense, for cross-checks).
            out: optional (k+1, nv) / (N, k+1, nv) array to fill.
            f_ext: optional dict link name → external wrench jet: (6,) or (r ≤ k+1, 6) rows
                W, W′, W″, … ``(f, m)`` (force, moment) in the link frame acting on the link (a legged robot's
                contact forces and their rates); single samples only.
        Returns:
            (k+1, nv) rows τ, τ′, …, τ^(k) (or (N, k+1, nv)).
        """
        d = self._data
        pair = isinstance(qs, tuple) and len(qs) == 2
        if method == "recursive":
            if not pair and f_ext is None and type(qs) is _ND and qs.ndim == 2 and not self._fb:
                return _rnea.torque_derivatives_qs(d, qs, out)
        elif method != "closed_form":
            raise ValueError(f"method must be 'recursive' or 'closed_form', got {method!r}")
        if self._fb and not pair:
            raise ValueError("qs of a floating-base robot must be a pair (q, vs): q (nq,) = "
                             f"({self._nq},), vs (k+2, nv) = (k+2, {self._nv})")
        if method == "closed_form":
            return self._closed_form(qs, pair, out, f_ext)
        if pair:
            q, vs = qs
            if np.ndim(q) == 2:
                if f_ext is not None:
                    raise ValueError("f_ext is not supported with batch inputs")
                return _rnea.torque_derivatives_batch(d, q, vs, out)
            fx = None
            if f_ext is not None:
                k1 = max(np.shape(vs)[0] - 1, 1) if np.ndim(vs) == 2 else 1
                fx = self._fext(f_ext, k1)
            return _rnea.torque_derivatives(d, q, vs, fx, out)
        try:
            kind = np.asarray(qs).dtype.kind
        except (TypeError, ValueError, OverflowError):
            kind = "O"
        if kind == "c":
            raise TypeError("qs must be real, got a complex array")
        if kind not in "fiub":
            raise ValueError(f"qs must be an array of numbers of shape (k+3, {self._n})")
        nd = np.ndim(qs)
        if nd == 3:
            if f_ext is not None:
                raise ValueError("f_ext is not supported with batch inputs")
            return _rnea.torque_derivatives_batch(d, qs, None, out)
        if nd != 2:
            raise ValueError(f"qs has shape {np.shape(qs)}, expected (k+3, {self._n}) with k >= 0 "
                             f"(rows q, q', q'', ...) or (N, k+3, {self._n})")
        if f_ext is not None:
            qs = np.asarray(qs)
            return self.torque_derivatives((qs[0], qs[1:]), out=out, f_ext=f_ext)
        return _rnea.torque_derivatives_qs(d, qs, out)

    def _closed_form(self, qs, pair, out, f_ext):
        from .kernels.closed_form import torque_derivatives as cf
        from .kernels._data import _check_array
        if self._fb or pair or f_ext is not None:
            raise ValueError("closed_form covers fixed-base robots without f_ext: use "
                             "method='recursive'")
        n = self._n
        nd = np.ndim(qs)
        qs = _check_array(qs, "qs", nd if nd in (2, 3) else 2, (-1,) * (nd - 1) + (n,)
                          if nd in (2, 3) else (-1, n))
        if qs.shape[-2] < 3:
            raise ValueError(f"qs has shape {qs.shape}, expected (k+3, {n}) with k >= 0")
        shape = qs.shape[:-2] + (qs.shape[-2] - 2, n)
        res = (np.stack([cf(self._model, x) for x in qs]) if qs.ndim == 3 and len(qs)
               else np.empty(shape) if qs.ndim == 3 else cf(self._model, qs))
        if out is None:
            return res
        _check_array(out, "out", len(shape), shape, out=True)
        out[...] = res
        return out

    # ---------------------------------------------------------------- closed forms
    def mass_matrix(self, q, out=None):
        """Generalized mass matrix M(q) = Jᵀ𝖬J (seed 004 eq. 20), (nv, nv), symmetric positive
        definite."""
        return _crba.mass_matrix(self._data, q, out)

    def coriolis_matrix(self, q, qd, out=None):
        """Coriolis matrix C̄(q, q̇) of seed 004 eq. 54: C̄ q̇ is the Coriolis/centrifugal force
        and Ṁ − 2C̄ is skew-symmetric. (nv, nv)."""
        return _crba.coriolis_matrix(self._data, q, qd, out, 0)

    def mass_matrix_derivative(self, q, qd, out=None):
        """Ṁ(q, q̇) = Jᵀ𝖬⁽¹⁾J (seed 004 eq. 29–30). (nv, nv), symmetric."""
        return _crba.coriolis_matrix(self._data, q, qd, out, 1)

    def gravity_torques(self, q, out=None):
        """Generalized gravity forces Q_grav(q) = Jᵀ𝖬UG (seed 004 eq. 25–26). (nv,)."""
        return _rnea.gravity(self._data, q, out)

    def eom_derivatives(self, qs):
        """M, C̄, Q_grav and their first k ≤ 2 time derivatives along a trajectory, in closed form
        (seed 004 eq. 20–26, 29–36, 40–52): C̄ is :meth:`coriolis_matrix` (Ṁ = C̄ + C̄ᵀ, and so
        for every derivative); τ^(r) follows as in seed 004 eq. 28 and 38.

        A fixed base given ``qs`` uses the seed's closed form
        (:func:`mbs_dynamics.kernels.closed_form.eom_derivatives`, dense NumPy, O(n³)); the pair
        form ``(q, vs)`` — the one a floating base needs — uses Leibniz products of the body
        Jacobians' time derivatives (:func:`mbs_dynamics.kernels.eom_series.eom_derivatives`;
        the same numbers for a fixed base).

        Floating base (the tangent-space convention of :meth:`torque_derivatives` and of
        Pinocchio's free-flyer): v = (linear, angular velocity of the base in its own frame,
        joint rates); ``v′, v″`` are the time derivatives of these coordinates (the base-motion
        jet); M, C̄, Q_grav are Pinocchio's ``crba``, ``computeCoriolisMatrix`` and
        ``computeGeneralizedGravity`` in these coordinates (Q_grav's first six entries the force
        and moment on the base, in its frame), and their derivatives are the time derivatives of
        these matrices' entries along the trajectory the jet describes. M and C̄ do not depend on
        the base pose (left invariance); Q_grav does, through the base orientation.

        Args:
            qs: (k+2, n) rows q, q̇, …, q^(k+1), k ≤ 2 (Ṁ needs q̇; M̈, Ċ̄ and the second
                derivative of Q_grav need q̈; C̈̄ needs q⃛), or a batch (N, k+2, n) — fixed base;
                or a pair ``(q, vs)``: q (nq,) and vs (k+1, nv) rows v, v′, …, v^(k), or a batch
                (q (N, nq), vs (N, k+1, nv)) — any base.
        Returns:
            ``(Ms, Cs, gs)``: (k+1, nv, nv) rows M, Ṁ, M̈; (k+1, nv, nv) rows C̄, Ċ̄, C̈̄;
            (k+1, nv) rows Q_grav and its derivatives (a leading N for a batch).
        Raises:
            ValueError: a floating base given ``qs`` instead of ``(q, vs)``, a wrong shape or
                k > 2, non-finite input, a base quaternion that is not unit.
        """
        from .kernels.closed_form import eom_derivatives as cf
        if isinstance(qs, tuple) and len(qs) == 2:
            return self._eom_derivatives_pair(*qs)
        if self._fb:
            raise ValueError("a floating base needs eom_derivatives((q, vs)): q (nq,) and vs "
                             "(k+1, nv) rows v, v', v'' (fixed-base qs rows are joint angles)")
        nd = np.ndim(qs)
        n = self._n
        qs = _check_array(qs, "qs", 3 if nd == 3 else 2, (-1, -1, n) if nd == 3 else (-1, n))
        if not 2 <= qs.shape[-2] <= 4:
            raise ValueError(f"qs has shape {qs.shape}, expected (k+2, {n}) with 0 <= k <= 2 "
                             "(rows q, q̇, q̈, q⃛)")
        if qs.ndim == 2:
            return cf(self._model, qs)
        k1 = qs.shape[1] - 1
        res = [cf(self._model, x) for x in qs]
        if not res:
            return np.empty((0, k1, n, n)), np.empty((0, k1, n, n)), np.empty((0, k1, n))
        return tuple(np.stack([r[i] for r in res]) for i in range(3))

    def _eom_derivatives_pair(self, q, vs):
        """:meth:`eom_derivatives` for the pair form (q, vs), single or batch."""
        from .kernels._data import _check_array
        from .kernels.eom_series import eom_derivatives as series
        nq, nv = self._model.nq, self._model.nv
        batch = np.ndim(q) == 2
        q = _check_array(q, "q", 2 if batch else 1, (-1, nq) if batch else (nq,))
        vs = _check_array(vs, "vs", 3 if batch else 2,
                          (q.shape[0], -1, nv) if batch else (-1, nv))
        if not 1 <= vs.shape[-2] <= 3:
            raise ValueError(f"vs has shape {vs.shape}, expected (k+1, {nv}) with 0 <= k <= 2 "
                             "(rows v, v', v'')")
        if self._fb:
            r = np.linalg.norm(q[..., 3:7], axis=-1)
            if not np.all(np.abs(r * r - 1.0) <= 1e-6):
                raise ValueError("q: the base quaternion (qx, qy, qz, qw) is not a unit "
                                 "quaternion")
        if not batch:
            return series(self._model, q, vs)
        k1 = vs.shape[1]
        res = [series(self._model, a, b) for a, b in zip(q, vs)]
        if not res:
            return np.empty((0, k1, nv, nv)), np.empty((0, k1, nv, nv)), np.empty((0, k1, nv))
        return tuple(np.stack([x[i] for x in res]) for i in range(3))

    # ---- kinematics (mbs_dynamics/kinematics/)
    @property
    def frame_names(self):
        """Every URDF link of the model — including links merged into a body by fixed joints
        (flanges, sensors, ``*_hand_tcp``) — base link first, then depth-first (children by
        joint name); Pinocchio's ``FrameType.BODY`` frames (:mod:`mbs_dynamics.kinematics.frames`).
        """
        return self._fk.names

    def frame_placement(self, q, frame, out=None):
        """Pose (4, 4) of ``frame`` in the world — the base link frame for a fixed base, the
        world for a floating base (seed 001 eq. 10, ``C_f = C_b S_f``); (N, 4, 4) for q (N, nq).
        """
        return _frames.placement(self._fk, q, frame, out)

    def frame_velocity(self, q, qd, frame, representation="body", out=None):
        """Twist (6,) = (linear, angular) of ``frame`` in ``representation`` (seed 001 §3):
        ``"body"`` (Pinocchio LOCAL: origin velocity and ω in the frame), ``"spatial"`` (WORLD:
        ω and the velocity of the frame's point at the world origin, in the world), ``"hybrid"``
        (LOCAL_WORLD_ALIGNED: origin velocity ṗ and ω in the world) or ``"mixed"`` (§3.4: ṗ in
        the world with ω in the frame). (N, 6) for batches."""
        return _frames.velocity(self._fk, q, qd, frame, representation, out)

    def frame_jacobian(self, q, frame, representation="body", out=None):
        """J (6, nv), rows (linear, angular), with twist = J q̇ in ``representation`` (see
        :meth:`frame_velocity`; seed 001 eq. 16, 22, 36, 46); (N, 6, nv) for q (N, nq)."""
        return _frames.jacobian(self._fk, q, frame, representation, out)

    def frame_jacobian_derivative(self, q, qd, frame, representation="body", out=None):
        """J̇ (6, nv): the exact time derivative of :meth:`frame_jacobian` in that
        representation along q̇ (Pinocchio's ``getFrameJacobianTimeVariation``); (N, 6, nv)."""
        return _frames.jacobian_derivative(self._fk, q, qd, frame, representation, out)

    def frame_acceleration(self, q, qd, qdd, frame, representation="body", out=None):
        """d/dt of the frame's twist in ``representation`` = J q̈ + J̇ q̇, (6,) (linear,
        angular); (N, 6) for batches. Hybrid: (p̈, ω̇) (Pinocchio's classical acceleration in
        LOCAL_WORLD_ALIGNED); spatial: Pinocchio's WORLD acceleration."""
        return _frames.acceleration(self._fk, q, qd, qdd, frame, representation, out)

    # ---- kinematics: derivatives, Christoffel, RNEA representations (mbs_dynamics/kinematics/)
    def _inverse_dynamics_repr(self, q, qd, qdd, f_ext, out, representation):
        """:meth:`inverse_dynamics` by the spatial (seed 000 eq. 69–72) or the hybrid (eq. 73–77)
        recursive Newton–Euler algorithm (:mod:`mbs_dynamics.kernels._rnea_repr`)."""
        rep = _RNEA_REPS.get(representation) if isinstance(representation, str) else None
        if rep is None:
            raise ValueError(f"representation must be one of {sorted(_RNEA_REPS) + ['body']} "
                             f"for inverse_dynamics, got {representation!r}")
        if np.ndim(q) == 2:
            if f_ext is not None:
                raise ValueError("f_ext is not supported with batch inputs")
            return _rnea_repr.inverse_dynamics_batch(self._data, rep, q, qd, qdd, out)
        fx = None if f_ext is None else self._fext(f_ext, 1)[0]
        return _rnea_repr.inverse_dynamics(self._data, rep, q, qd, qdd, fx, out)

    def _q_checked(self, q):
        """q (nq,) or a batch (N, nq) as a finite float64 array with unit base quaternions,
        else ValueError."""
        from .kernels._data import _check_array
        if np.ndim(q) == 2:
            q = _check_array(q, "q", 2, (-1, self._nq))
        else:
            q = _check_array(q, "q", 1, (self._nq,))
        if self._fb:
            r = np.einsum("...i,...i->...", q[..., 3:7], q[..., 3:7])
            bad = np.flatnonzero(~(np.abs(np.atleast_1d(r) - 1.0) <= 1e-6))
            if bad.size:
                x = np.atleast_2d(q)[bad[0], 3:7]
                raise ValueError(f"q: the base quaternion (qx, qy, qz, qw) = {tuple(x)} is not "
                                 "a unit quaternion")
        return q

    def _each(self, fn, q, shape):
        """fn(q) for q (nq,), or stacked over the rows of a batch (N, nq)."""
        if q.ndim == 1:
            return fn(q)
        out = np.empty((len(q),) + shape)
        for i, x in enumerate(q):
            out[i] = fn(x)
        return out

    def christoffel(self, q):
        """Christoffel symbols of the first kind Γ (nv, nv, nv) of M(q) — (N, nv, nv, nv) for q
        (N, nq) — in closed form from Lie brackets of the joint screws (seed 000 eq. 86–87; not
        by differencing):
        ``Γ[i, j, k] = ½(∂M_ij/∂q_k + ∂M_ik/∂q_j − ∂M_jk/∂q_i)``, symmetric in (j, k), so that
        ``C(q, q̇)[i, j] = Σ_k Γ[i, j, k] q̇_k`` and C q̇ is the Coriolis/centrifugal force.

        Floating base: the derivatives are along ``q ⊕ ε e_k`` (the base moved by its body twist,
        Pinocchio's ``integrate``); the Coriolis force then also has the Euler–Poincaré term of
        the base, ``rnea(q, v, 0) − g = Σ Γ v v − [ad_νᵀ (M v)_base; 0]``
        (:func:`mbs_dynamics.kinematics.christoffel.euler_poincare`)."""
        if np.ndim(q) == 1:
            return _closed.christoffel(self._data, q, None)
        nv = self._nv
        return self._each(lambda x: _closed.christoffel(self._data, x, None), self._q_checked(q),
                          (nv, nv, nv))

    def frame_derivatives(self, qs, frame, representation="body", out=None):
        """The twist of ``frame`` and every time derivative the input determines (seed 000 §2:
        acceleration eq. 7/18/29, jerk eq. 14/22/32, and higher), O(n), in ``representation``
        (``"body" | "spatial" | "hybrid" | "mixed"``, as :meth:`frame_velocity`); each row is the
        time derivative of the previous one, ordered (linear, angular).

        Args:
            qs: (r, n) rows q, q′, …, q^(r−1) (fixed base; the (k+3)-row input of
                :meth:`torque_derivatives` gives V … V^(k+1)); or a pair ``(q, vs)``, q (nq,) and
                vs (r, nv) rows v, v′, … (floating base: the base body-twist jet); batches
                (N, r, n) or (q (N, nq), vs (N, r, nv)).
            frame: a name of :attr:`frame_names`.
        Returns:
            (r−1, 6) for ``qs``, (r, 6) for ``(q, vs)`` (or (N, ·, 6)).
        """
        try:
            jf = self._jf
        except AttributeError:  # made on first use (the packed frame table of the jet kernel)
            jf = self._jf = _kderivs.jet_frames(self._data, self._model)
        return jf.derivatives(qs, frame, representation, out)

    def kinematic_hessian(self, q, frame, representation="body"):
        """H (6, nv, nv) with ``H[:, i, k] = ∂J[:, i]/∂q_k`` for J = :meth:`frame_jacobian` of
        ``frame`` in ``representation`` ((N, 6, nv, nv) for q (N, nq)), in closed form from Lie
        brackets of the joint screws (seed 000 eq. 3–6, 16, 26); rows (linear, angular).
        Floating base: the derivative along a base coordinate is along ``q ⊕ ε e_k``
        (Pinocchio's convention, ``computeJointKinematicHessians``)."""
        index, kb, S12, names = _kderivs.packed_table(self._model)
        f = index.get(frame) if isinstance(frame, str) else None
        if f is None:
            raise _kframes.unknown_frame(frame, names)
        rep = _REPS4.get(representation) if isinstance(representation, str) else None
        if rep is None:
            _kframes.representation_index(representation)   # raises, listing the four
        if np.ndim(q) == 1:
            return _closed.kinematic_hessian(self._data, kb, S12, f, q, rep, None)
        nv = self._nv
        return self._each(lambda x: _closed.kinematic_hessian(self._data, kb, S12, f, x, rep,
                                                              None),
                          self._q_checked(q), (6, nv, nv))

    # ---- identification (mbs_dynamics/identification/)
    def inertial_parameters(self) -> np.ndarray:
        """(nb, 10) inertial parameters, one row per moving body in Pinocchio's order (a floating
        base first, then the bodies of ``joint_names``): ``(m, m c_x, m c_y, m c_z, I_xx, I_xy,
        I_yy, I_xz, I_yz, I_zz)`` about the body (joint) frame, fixed links merged — Pinocchio's
        ``Inertia.toDynamicParameters()``. ``τ = regressor(q, q̇, q̈) @ π.ravel()``."""
        return _params.inertial_parameters(self._model)

    def with_inertial_parameters(self, pi) -> "Robot":
        """A new Robot whose bodies have the parameters ``pi`` ((nb, 10) or (10·nb,)), validated as
        ``load_urdf`` validates a URDF: ValueError naming the body (link) whose mass is negative,
        whose inertia about its COM is not positive semi-definite, …, or the joint that moves no
        mass."""
        return Robot(_params.model_with_parameters(self._model, pi), self._data.kmax)

    def regressor(self, q, qd, qdd, out=None):
        """Joint-torque regressor Y (nv, 10·nb) with ``τ = Y π`` (π = ``inertial_parameters()``
        flattened; seed 000 §6), columns in blocks of 10 per body; batches (N, ·) → (N, nv, 10·nb).
        Pinocchio's ``computeJointTorqueRegressor``; ``out`` as in :meth:`inverse_dynamics`."""
        return _regressor.regressor(self._data, q, qd, qdd, out)

    def regressor_derivatives(self, qs, out=None):
        """Y, Y′, …, Y^(k) (k+1, nv, 10·nb) with ``τ^(r) = Y^(r) π`` along a trajectory, from the
        inputs of :meth:`torque_derivatives`: qs (k+3, n), or a pair ``(q, vs)`` (floating base),
        batches (N, …) → (N, k+1, nv, 10·nb). O(depth) per column block (doc/math.md recursion)."""
        if isinstance(qs, tuple) and len(qs) == 2:
            return _regressor.regressor_derivatives(self._data, qs[0], qs[1], out)
        if self._fb:
            raise ValueError("qs of a floating-base robot must be a pair (q, vs): q (nq,) = "
                             f"({self._nq},), vs (k+2, nv) = (k+2, {self._nv})")
        return _regressor.regressor_derivatives(self._data, qs, None, out)

    def inverse_dynamics_derivatives(self, q, qd, qdd, out=None):
        """Analytic partial derivatives of :meth:`inverse_dynamics` (seed 000 §6.1):
        ``(∂τ/∂q, ∂τ/∂q̇, M)``, each (nv, nv), M full (symmetric). A floating base's
        configuration is perturbed as Pinocchio's ``computeRNEADerivatives`` does (q ⊕ δ =
        C exp(δ), δ = (linear, angular) in the base frame). ``out``: an optional (3, nv, nv)
        array whose three slices are returned. Batches: (N, ·) inputs give three (N, nv, nv)
        arrays (``out`` (3, N, nv, nv))."""
        return _derivatives.inverse_dynamics_derivatives(self._data, q, qd, qdd, out)

    def inverse_dynamics_second_order_derivatives(self, q, qd, qdd, f_ext=None, out=None):
        """Second-order partial derivatives of :meth:`inverse_dynamics`, exact and compiled
        (:mod:`mbs_dynamics.kernels._rnea_so`: the analytic second-order IDSVA of Singh, Russell
        and Wensing 2022 — one forward sweep, then every entry a dot product of per-body
        quantities over the coordinates on one path to the root; no finite differences). The tensors and their layout are those of Pinocchio's C++
        ``ComputeRNEASecondOrderDerivatives``: entry ``[i, j, k]`` is ∂/∂x_k (∂τ_i/∂y_j), the first
        index τ's.

        A floating base's coordinates are Pinocchio's tangent space (``q ⊕ δ = pin.integrate(q, δ)``,
        δ = (linear, angular) in the base frame, the velocity held in the base frame): the q–q
        block is the derivative of ∂τ/∂q along ``q ⊕ δ``, not symmetric in the base's rotation
        coordinates (their Lie bracket); the joint block is symmetric.

        Args:
            q, qd, qdd: (nq,), (nv,), (nv,) [rad, m, rad/s, m/s, rad/s², m/s²], or (N, ·) batches
                (one compiled loop).
            f_ext: optional dict link name → wrench ``(f, m)`` in that link's frame, as in
                :meth:`inverse_dynamics` (single samples only); fixed in their links, so they enter
                ∂²τ/∂q².
            out: optional (4, nv, nv, nv) / (4, N, nv, nv, nv) array whose slices are returned.
        Returns:
            ``(d2tau_dq2, d2tau_dqd2, d2tau_dqdqd, dM_dq)``, each (nv, nv, nv) (or (N, nv, nv, nv)):
            ``d2tau_dq2[i, j, k] = ∂²τ_i/∂q_j∂q_k``, ``d2tau_dqd2[i, j, k] = ∂²τ_i/∂q̇_j∂q̇_k``
            (symmetric in j, k), ``d2tau_dqdqd[i, j, k] = ∂/∂q̇_k (∂τ_i/∂q_j)`` and
            ``dM_dq[i, j, k] = ∂M_ij/∂q_k`` (= ∂²τ_i/∂q̈_j∂q_k).
        Raises:
            ValueError: wrong sizes, NaN or inf, a base quaternion far from unit, or a bad
                ``f_ext``/``out``.
        """
        fx = None
        if f_ext is not None:
            if _ndim(q) == 2:
                raise ValueError("f_ext is not supported with batch inputs")
            fx = self._fext(f_ext, 1)[0]
        return _rnea_so.second_order_derivatives(self._data, q, qd, qdd, fx, out)

    def forward_dynamics_derivatives(self, q, qd, tau, f_ext=None, out=None):
        """``(∂q̈/∂q, ∂q̈/∂q̇, M⁻¹)`` of :meth:`forward_dynamics` (∂q̈/∂τ = M⁻¹), compiled in one
        pass over the tree: M⁻¹ (as :meth:`inverse_mass_matrix`) from the joint screws and
        inertias of the RNEA partials' forward pass, q̈ = M⁻¹(τ − b), ∂τ/∂q and ∂τ/∂q̇ at
        (q, q̇, q̈), then
        ``∂q̈/∂x = −M⁻¹ ∂τ/∂x`` (differentiate ID(q, q̇, FD(q, q̇, τ)) = τ; Carpentier & Mansard,
        RSS 2018, Pinocchio's ``computeABADerivatives``).

        A floating base's columns are derivatives along Pinocchio's tangent space: the base
        configuration moves as ``q ⊕ δ = pin.integrate(q, δ)`` (C exp(δ), δ = (linear, angular)
        in the base frame), velocities and torques in the base frame.

        Args:
            q, qd, tau: (nq,), (nv,), (nv,), or (N, ·) batches (one compiled loop).
            f_ext: optional dict link name → wrench ``(f, m)`` in that link's frame, as in
                :meth:`forward_dynamics` (single samples only); the wrenches are fixed in their
                links, so they also enter ∂q̈/∂q.
            out: optional (3, nv, nv) / (3, N, nv, nv) array whose slices are returned.
        Returns:
            (∂q̈/∂q, ∂q̈/∂q̇, M⁻¹), each (nv, nv) or (N, nv, nv).
        Raises:
            ValueError: bad input, or a movable joint that moves no mass.
        """
        fx = None
        if f_ext is not None:
            if _ndim(q) == 2:
                raise ValueError("f_ext is not supported with batch inputs")
            fx = self._fext(f_ext, 1)[0]
        return _derivatives.forward_dynamics_derivatives(self._data, q, qd, tau, fx, out)

    def inverse_mass_matrix(self, q, out=None):
        """M(q)⁻¹ by the articulated-body route, without forming or factorising M
        (:mod:`mbs_dynamics.kernels._minv`; Pinocchio's ``computeMinverse``, both triangles).

        Args:
            q: (nq,) positions, or (N, nq) for a batch.
            out: optional (nv, nv) / (N, nv, nv) array to fill.
        Returns:
            M⁻¹, (nv, nv) or (N, nv, nv), symmetric positive definite [1/(kg m²), 1/kg]; a
            floating base's rows and columns in Pinocchio's layout (base twist ``(linear,
            angular)`` in the base frame).
        Raises:
            ValueError: when a movable joint moves no mass (M is singular).
        """
        return _minv.inverse_mass_matrix(self._data, q, out)

    # ---- loops (mbs_dynamics/loops/)
    def _dca(self, q, qd, tau, f_ext, out):
        """forward_dynamics(method="dca"): validated like the ABA path, then the compiled
        divide-and-conquer kernel (:func:`mbs_dynamics.loops.hdca.tree_forward_dynamics`)."""
        nd = 2 if np.ndim(q) == 2 else 1
        if f_ext is not None and nd == 2:
            raise ValueError("f_ext is not supported with batch inputs")
        nq, nv = self._nq, self._nv
        q = _check_array(q, "q", nd, (-1, nq) if nd == 2 else (nq,))
        shv = (q.shape[0], nv) if nd == 2 else (nv,)
        qd = _check_array(qd, "qd", nd, shv)
        tau = _check_array(tau, "tau", nd, shv)
        if self._fb:  # the ABA path's unit-quaternion check
            for x in q.reshape(-1, nq):
                n2 = float(x[3] * x[3] + x[4] * x[4] + x[5] * x[5] + x[6] * x[6])
                if not abs(n2 - 1.0) <= 1e-6:
                    raise ValueError(f"q: the base quaternion (qx, qy, qz, qw) = "
                                     f"({x[3]:g}, {x[4]:g}, {x[5]:g}, {x[6]:g}) is not a unit "
                                     "quaternion")
        if out is not None:
            out = _check_array(out, "out", nd, shv, out=True)
        if nd == 1:
            return _hdca_fd(self, q, qd, tau, f_ext=f_ext, out=out)
        res = np.array([_hdca_fd(self, *x) for x in zip(q, qd, tau)]).reshape(shv)
        if out is None:
            return res
        out[...] = res
        return out

    def _dca_mimic(self, mimic_robot, q, qd, tau, f_ext=None):
        """``MimicRobot.forward_dynamics(method="dca")`` (a MimicRobot wrapping this robot; the
        model layer imports no capability): the mimic rows closed in the assembly."""
        from .loops.hdca import mimic_forward_dynamics
        return mimic_forward_dynamics(mimic_robot, q, qd, tau, f_ext=f_ext)


_RNEA_REPS = {"spatial": 1, "hybrid": 2}
_REPS4 = {"body": 0, "spatial": 1, "hybrid": 2, "mixed": 3}

# the kinematics capability (imported here, not in the header, to keep this block contiguous)
from .kernels._data import _check_array  # noqa: E402
from .model.methods import forward_dynamics_method  # noqa: E402
from .loops.hdca import tree_forward_dynamics as _hdca_fd  # noqa: E402
from .kinematics import _closed, derivatives as _kderivs, frames as _kframes  # noqa: E402
