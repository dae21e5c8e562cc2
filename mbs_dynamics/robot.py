"""The public API: a :class:`Robot` = a frozen :class:`~mbs_dynamics.model.Model` + its
:class:`~mbs_dynamics._data.Data` (the workspace the compiled kernels write).

Every method checks its inputs once (shape, finiteness; a ``ValueError`` names the argument),
crosses into one compiled kernel and returns a new array or fills ``out``. Inputs may be any
array-like (lists, read-only, strided, Fortran-ordered, float32 or integer arrays are converted
once); complex input is a ``TypeError``; ``out`` must be a writable float64 C-contiguous array of
exactly the result's shape (otherwise ``ValueError``), and may share memory with an input.
A Robot is not thread-safe (its Data is shared by its calls): give each thread ``robot.copy()``.

Vectors follow ``robot.joint_names``. With a floating base (``load_urdf(..., floating_base=True)``)
they use Pinocchio's free-flyer layout: ``q = (x, y, z, qx, qy, qz, qw, joints)`` (nq = 7 + n),
velocities, accelerations and forces ``(linear, angular, joints)`` (nv = 6 + n), the base twist and
wrench in the base frame.
"""
from __future__ import annotations

import numpy as np

from .kernels import _aba, _crba, _rnea
from .model import model as _model

_ND = np.ndarray


def _ndim(x):
    """np.ndim without converting a flat list or tuple of numbers (the kernels convert once)."""
    if type(x) is _ND:
        return x.ndim
    if type(x) in (list, tuple) and x and type(x[0]) in (float, int):
        return 1
    return np.ndim(x)


class Robot:
    """Rigid-body dynamics of a robot loaded from URDF (see :func:`mbs_dynamics.load_urdf`).

    Conventions: body-fixed twists ``(ω, v)``, wrenches ``(m, f)``, SI units, gravity in the base
    (world) frame; ``q`` of revolute/continuous joints in rad, prismatic in m.
    """

    __slots__ = ("_model", "_data", "_n", "_nq", "_nv", "_fb")

    def __init__(self, model: _model.Model, kmax: int = 2):
        self._model = model
        self._data = model.create_data(kmax)
        self._n = model.n
        self._nq = model.nq
        self._nv = model.nv
        self._fb = model.floating_base

    # ---------------------------------------------------------------- description
    @property
    def model(self) -> _model.Model:
        """The frozen model."""
        return self._model

    @property
    def data(self):
        """The workspace the kernels write (``data.arrays``: name → array, see ``_data.LAYOUT``)."""
        return self._data

    @property
    def n(self) -> int:
        """Number of movable joints."""
        return self._n

    @property
    def nq(self) -> int:
        """Configuration size: n, or 7 + n with a floating base."""
        return self._nq

    @property
    def nv(self) -> int:
        """Velocity (and force) size: n, or 6 + n with a floating base."""
        return self._nv

    @property
    def floating_base(self) -> bool:
        return self._fb

    @property
    def joint_names(self):
        return self._model.joint_names

    @property
    def link_names(self):
        return self._model.link_names

    @property
    def joint_types(self):
        return self._model.joint_types

    @property
    def lower(self):
        return self._model.lower

    @property
    def upper(self):
        return self._model.upper

    @property
    def velocity_limit(self):
        return self._model.velocity_limit

    @property
    def effort_limit(self):
        return self._model.effort_limit

    @property
    def gravity(self):
        return self._model.gravity

    @property
    def base_link(self):
        return self._model.base_link

    @property
    def total_mass(self) -> float:
        return float(self._model.inertias[:, 3, 3].sum() + self._model.base_inertia[3, 3])

    def __repr__(self):
        base = "floating" if self._fb else "fixed"
        return (f"Robot('{self._model.name}', n={self.n}, base='{self.base_link}' ({base}), "
                f"joints={list(self.joint_names)})")

    def copy(self) -> "Robot":
        """An independent Robot on the same (immutable) model, with its own Data."""
        return Robot(self._model, self._data.kmax)

    def with_payload(self, link, mass, com=(0.0, 0.0, 0.0), inertia=None) -> "Robot":
        """A new Robot with a rigid payload on ``link``: ``mass`` [kg], ``com`` [m] and 3×3
        ``inertia`` [kg m²] about the COM, both in the link frame."""
        return Robot(_model.add_payload(self._model, link, mass, com, inertia), self._data.kmax)

    # ---------------------------------------------------------------- inverse dynamics
    def inverse_dynamics(self, q, qd, qdd, f_ext=None, out=None):
        """τ = M(q) q̈ + C(q, q̇) q̇ + Q_grav(q) − Q_ext (RNEA, seed 000 eq. 67–68).

        Args:
            q: (nq,) positions; qd, qdd: (nv,) velocities, accelerations; or (N, ·) batches.
            f_ext: optional dict link name → wrench ``(m, f)`` (6,) in that link's frame, acting
                on the link (as Pinocchio's ``fext``; not with a batch).
            out: optional (nv,) / (N, nv) array to fill.
        Returns:
            τ, shape (nv,) or (N, nv) [N m or N; a floating base's wrench in its frame].
        """
        nd = _ndim(q)
        if f_ext is None and nd == 1:
            return _rnea.inverse_dynamics(self._data, q, qd, qdd, None, out)
        if nd == 2:
            if f_ext is not None:
                raise ValueError("f_ext is not supported with batch inputs")
            return _rnea.inverse_dynamics_batch(self._data, q, qd, qdd, out)
        fx = None if f_ext is None else self._fext(f_ext, 1)[0]
        return _rnea.inverse_dynamics(self._data, q, qd, qdd, fx, out)

    def forward_dynamics(self, q, qd, tau, f_ext=None, out=None):
        """q̈ = M(q)⁻¹ (τ + Q_ext − C(q, q̇) q̇ − Q_grav(q)) by the O(n) articulated-body algorithm
        (:mod:`mbs_dynamics._aba`), the inverse of :meth:`inverse_dynamics`.

        Args:
            q, qd, tau: (nq,), (nv,), (nv,) or (N, ·). f_ext, out: as in :meth:`inverse_dynamics`.
        Returns:
            q̈, shape (nv,) or (N, nv).
        Raises:
            ValueError: also when a movable joint moves no mass (the dynamics is singular).
        """
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
        """Link wrenches (link frame) → body wrenches (body frame), (rows, nb, 6):
        m_b = R m + p × R f, f_b = R f. A value may be (6,) or a jet (r ≤ rows, 6) of rows
        W, W′, W″, …"""
        fb = 1 if self._fb else 0
        W = np.zeros((rows, self._n + fb, 6))
        if not hasattr(f_ext, "items"):
            raise ValueError("f_ext must be a dict link name → wrench (m, f)")
        for link, w in f_ext.items():
            if link not in self._model.link_frames:
                raise ValueError(f"f_ext: unknown link '{link}'")
            if np.iscomplexobj(w):
                raise TypeError(f"f_ext['{link}'] must be real")
            try:
                w = np.asarray(w, dtype=float)
            except (TypeError, ValueError):
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
            f = w[:, 3:] @ R.T
            b = body + fb
            W[:w.shape[0], b, :3] += w[:, :3] @ R.T + np.cross(p, f)
            W[:w.shape[0], b, 3:] += f
        return W

    def torque_derivatives(self, qs, method="recursive", out=None, *, f_ext=None):
        """τ and its first k time derivatives along a trajectory.

        Args:
            qs: (k+3, n) rows q, q′, q″, …, q^(k+2) (fixed base); or a pair ``(q, vs)`` with q
                (nq,) and vs (k+2, nv) rows v, v′, …, v^(k+1) — the form a floating base needs
                (v = (base twist, joint rates), its derivatives the base-motion jet); batches:
                (N, k+3, n) or (q (N, nq), vs (N, k+2, nv)).
            method: ``"recursive"`` (O(n), any k ≥ 0; MATH.md) or ``"closed_form"`` (seed 004
                eq. 28 and 38, fixed base, k ≤ 2, no f_ext; dense, for cross-checks).
            out: optional (k+1, nv) / (N, k+1, nv) array to fill.
            f_ext: optional dict link name → external wrench jet: (6,) or (r ≤ k+1, 6) rows
                W, W′, W″, … ``(m, f)`` in the link frame acting on the link (a legged robot's
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
        except (TypeError, ValueError):
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
