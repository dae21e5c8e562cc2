"""The public API: a :class:`Robot` = an immutable :class:`~.model.Model` + a private workspace.

Every method validates its inputs once (shape, finiteness; a ``ValueError`` names the argument),
crosses into one compiled kernel, and returns a new array (or fills ``out``). Joint vectors follow
``robot.joint_names``. A Robot is not thread-safe (its workspace is shared by its calls): give each
thread ``robot.copy()``.
"""
from __future__ import annotations

import numpy as np

from . import _kernels as K
from . import aba as _aba
from . import model as _model

_F64 = np.dtype(np.float64)


def _arr(x, name, shape_desc, ndim):
    """Fast path for C-contiguous float64 arrays; anything else is converted once."""
    if type(x) is not np.ndarray or x.dtype != _F64 or not x.flags.c_contiguous:
        try:
            x = np.ascontiguousarray(x, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be an array of numbers of shape {shape_desc}") from None
    if x.ndim != ndim:
        raise ValueError(f"{name} has shape {x.shape}, expected {shape_desc}")
    return x


def _raise(status, names, arrays, shape_desc):
    """Turn a kernel status (10 a + 1: wrong size, 10 a + 2: NaN/inf) into a ValueError."""
    a, kind = divmod(status, 10)
    name = names[a - 1]
    if kind == 1:
        raise ValueError(f"{name} has shape {arrays[a - 1].shape}, expected {shape_desc}")
    raise ValueError(f"{name} contains NaN or inf")


class Robot:
    """Rigid-body dynamics of a robot loaded from URDF (see :func:`mbs_dynamics.load_urdf`).

    Conventions: body-fixed twists ``(ω, v)``, wrenches ``(m, f)``, SI units, gravity in the base
    frame; ``q`` of revolute/continuous joints in rad, prismatic in m.
    """

    __slots__ = ("_model", "_pf", "_ws", "_kcap", "_n", "_nn", "_wa", "_wsb")

    def __init__(self, model: _model.Model, kcap: int = 4):
        self._model = model
        self._pf = np.array(model.pf)  # private writable copy: the kernels' signatures are plain arrays
        self._n = model.n
        self._nn = (model.n, model.n)
        self._kcap = kcap
        self._ws = K.make_workspace(model.n, kcap)
        self._wa = None  # ABA workspace, made on first use
        self._wsb = None  # one workspace per thread for the batch kernels, made on first use

    # ---------------------------------------------------------------- description
    @property
    def model(self) -> _model.Model:
        return self._model

    @property
    def n(self) -> int:
        return self._model.n

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
        return float(self._model.inertias[:, 3, 3].sum())

    def __repr__(self):
        return (f"Robot('{self._model.name}', n={self.n}, base='{self.base_link}', "
                f"joints={list(self.joint_names)})")

    def copy(self) -> "Robot":
        """An independent Robot on the same (immutable) model, with its own workspace."""
        return Robot(self._model, self._kcap)

    def with_payload(self, link, mass, com=(0.0, 0.0, 0.0), inertia=None) -> "Robot":
        """A new Robot with a rigid payload on ``link``: ``mass`` [kg], ``com`` [m] and 3×3
        ``inertia`` [kg m²] about the COM, both in the link frame."""
        return Robot(_model.add_payload(self._model, link, mass, com, inertia), self._kcap)

    # ---------------------------------------------------------------- calling the kernels
    def _call(self, kernel, names, args, shapes, ws=None):
        """Slow path: convert every argument once (any array-like), then call ``kernel``.

        ``names``/``shapes`` describe the user arguments for error messages; the last entry of
        ``args`` may be ``out``."""
        conv = []
        for a, name, (nd, desc) in zip(args, names, shapes):
            conv.append(_arr(a, name, desc, nd))
        st = kernel(self._pf, self._ws if ws is None else ws, *conv)
        if st:
            _raise(st, names, conv, shapes[(st // 10) - 1][1])
        return conv[-1]

    # ---------------------------------------------------------------- inverse dynamics
    def inverse_dynamics(self, q, qd, qdd, f_ext=None, out=None):
        """τ = M(q) q̈ + C(q, q̇) q̇ + Q_grav(q) − Q_ext (RNEA, seed 000 eq. 67–68).

        Args:
            q, qd, qdd: (n,) joint positions, velocities, accelerations; or (N, n) for a batch.
            f_ext: optional dict link name → wrench ``(m, f)`` (6,) in that link's frame, acting
                on the link (as Pinocchio's ``fext``).
            out: optional (n,) / (N, n) array to fill.
        Returns:
            τ, shape (n,) or (N, n) [N m or N].
        """
        if f_ext is None:
            o = np.empty(self._n) if out is None else out
            try:
                if K.rnea(self._pf, self._ws, q, qd, qdd, o) == 0:  # fast path: float64 vectors
                    return o
            except TypeError:
                pass
        return self._inverse_dynamics(q, qd, qdd, f_ext, out)

    def _inverse_dynamics(self, q, qd, qdd, f_ext, out):
        n = self._n
        if np.ndim(q) == 2:
            N = np.shape(q)[0]
            if f_ext is not None:
                raise ValueError("f_ext is not supported with batch inputs")
            if out is None:
                out = np.empty((N, n))
            sh = (2, f"({N}, {n})")
            return self._call(K.rnea_batch, ("q", "qd", "qdd", "out"), (q, qd, qdd, out), (sh,) * 4,
                              ws=self._batch_ws())
        if out is None:
            out = np.empty(n)
        sh = (1, f"({n},)")
        if f_ext is None:
            return self._call(K.rnea, ("q", "qd", "qdd", "out"), (q, qd, qdd, out), (sh,) * 4)
        return self._call(K.rnea_fext, ("q", "qd", "qdd", "f_ext", "out"),
                          (q, qd, qdd, self._fext(f_ext), out),
                          (sh, sh, sh, (2, f"({n}, 6)"), sh))

    def forward_dynamics(self, q, qd, tau, f_ext=None, out=None):
        """q̈ = M(q)⁻¹ (τ + Q_ext − C(q, q̇) q̇ − Q_grav(q)) by the O(n) articulated-body algorithm
        (:mod:`mbs_dynamics.aba`), the inverse of :meth:`inverse_dynamics`.

        Args:
            q, qd, tau: (n,) or (N, n). f_ext, out: as in :meth:`inverse_dynamics`.
        Returns:
            q̈, shape (n,) or (N, n).
        """
        if f_ext is None and self._wa is not None:
            o = np.empty(self._n) if out is None else out
            try:
                if _aba.aba(self._pf, self._wa, q, qd, tau, o) == 0:  # fast path
                    return o
            except TypeError:
                pass
        from . import aba
        if self._wa is None:
            self._wa = aba.make_aba_workspace(self._n)
        n = self._n
        if np.ndim(q) == 2:
            if f_ext is not None:
                raise ValueError("f_ext is not supported with batch inputs")
            N = np.shape(q)[0]
            sh = (2, f"({N}, {n})")
            return self._call(aba.aba_batch, ("q", "qd", "tau", "out"),
                              (q, qd, tau, np.empty((N, n)) if out is None else out), (sh,) * 4,
                              ws=self._wa)
        sh = (1, f"({n},)")
        out = np.empty(n) if out is None else out
        if f_ext is None:
            return self._call(aba.aba, ("q", "qd", "tau", "out"), (q, qd, tau, out), (sh,) * 4,
                              ws=self._wa)
        return self._call(aba.aba_fext, ("q", "qd", "tau", "f_ext", "out"),
                          (q, qd, tau, self._fext(f_ext), out),
                          (sh, sh, sh, (2, f"({n}, 6)"), sh), ws=self._wa)

    def _fext(self, f_ext):
        """Link wrenches (link frame) → body wrenches (body frame): m_b = R m + p × R f, f_b = R f."""
        W = np.zeros((self._model.n, 6))
        if not hasattr(f_ext, "items"):
            raise ValueError("f_ext must be a dict link name → wrench (m, f)")
        for link, w in f_ext.items():
            if link not in self._model.link_frames:
                raise ValueError(f"f_ext: unknown link '{link}'")
            w = np.asarray(w, dtype=float)
            if w.shape != (6,):
                raise ValueError(f"f_ext['{link}'] has shape {w.shape}, expected (6,)")
            if not np.all(np.isfinite(w)):
                raise ValueError(f"f_ext['{link}'] contains NaN or inf")
            body, S = self._model.link_frames[link]
            if body < 0:
                continue  # a wrench on the fixed base produces no joint torque
            R, p = S[:3, :3], S[:3, 3]
            f = R @ w[3:]
            W[body, :3] += R @ w[:3] + np.cross(p, f)
            W[body, 3:] += f
        return W

    def torque_derivatives(self, qs, method="recursive", out=None):
        """τ and its first k time derivatives along a trajectory.

        Args:
            qs: (k+3, n) rows q, q′, q″, …, q^(k+2); or (N, k+3, n) for N samples.
            method: ``"recursive"`` (O(n), any k ≥ 0; MATH.md) or ``"closed_form"`` (seed 004
                eq. 28 and 38, k ≤ 2; dense, for cross-checks).
            out: optional (k+1, n) / (N, k+1, n) array to fill.
        Returns:
            (k+1, n) rows τ, τ′, …, τ^(k) (or (N, k+1, n)).
        """
        if method == "recursive":
            try:
                k1 = qs.shape[0] - 2  # fast path: a C-contiguous float64 (k+3, n) array
                if 1 <= k1 <= self._kcap + 1:
                    o = np.empty((k1, self._n)) if out is None else out
                    if K.torque_derivatives(self._pf, self._ws, qs, o) == 0:
                        return o
            except (TypeError, AttributeError, IndexError):
                pass
        return self._torque_derivatives(qs, method, out)

    def _torque_derivatives(self, qs, method, out):
        n = self._n
        nd = np.ndim(qs)
        qs = _arr(qs, "qs", f"(k+3, {n}) or (N, k+3, {n})", nd if nd in (2, 3) else 2)
        if qs.shape[-1] != n or qs.shape[-2] < 3:
            raise ValueError(f"qs has shape {qs.shape}, expected (k+3, {n}) with k >= 0 "
                             f"(rows q, q', q'', ...) or (N, k+3, {n})")
        k = qs.shape[-2] - 3
        if method == "closed_form":
            from .closed_form import torque_derivatives as cf
            if qs.ndim == 3:
                res = np.stack([cf(self._model, x) for x in qs])
            else:
                res = cf(self._model, qs)
            if out is not None:
                out[...] = res
                return out
            return res
        if method != "recursive":
            raise ValueError(f"method must be 'recursive' or 'closed_form', got {method!r}")
        if k > self._kcap:
            self._kcap = k
            self._ws = K.make_workspace(n, k)
            self._wsb = None
        shape = qs.shape[:-2] + (k + 1, n)
        if out is None:
            out = np.empty(shape)
        sh = (qs.ndim, str(shape))
        if qs.ndim == 3:
            return self._call(K.torque_derivatives_batch, ("qs", "out"), (qs, out),
                              ((3, str(qs.shape)), sh), ws=self._batch_ws())
        return self._call(K.torque_derivatives, ("qs", "out"), (qs, out), ((2, str(qs.shape)), sh))

    def _batch_ws(self):
        """(T, size) workspaces for the threaded batch kernels, T = numba's thread count."""
        import numba
        T = numba.get_num_threads()
        if self._wsb is None or self._wsb.shape != (T, self._ws.shape[0]):
            self._wsb = np.tile(self._ws, (T, 1))  # a writable copy per thread, also for T = 1
        return self._wsb

    # ---------------------------------------------------------------- closed forms
    def mass_matrix(self, q, out=None):
        """Generalized mass matrix M(q) = Jᵀ𝖬J (seed 004 eq. 20), (n, n), symmetric positive definite."""
        o = np.empty(self._nn) if out is None else out
        try:
            if K.mass_matrix(self._pf, self._ws, q, o) == 0:
                return o
        except TypeError:
            pass
        n = self._n
        return self._call(K.mass_matrix, ("q", "out"), (q, o), ((1, f"({n},)"), (2, f"({n}, {n})")))

    def coriolis_matrix(self, q, qd, out=None):
        """Coriolis matrix C̄(q, q̇) of seed 004 eq. 54: C̄ q̇ is the Coriolis/centrifugal torque
        and Ṁ − 2C̄ is skew-symmetric. (n, n)."""
        return self._coriolis(q, qd, out, 0)

    def mass_matrix_derivative(self, q, qd, out=None):
        """Ṁ(q, q̇) = Jᵀ𝖬⁽¹⁾J (seed 004 eq. 29–30). (n, n), symmetric."""
        return self._coriolis(q, qd, out, 1)

    def _coriolis(self, q, qd, out, mode):
        n = self._n
        o = np.empty(self._nn) if out is None else out
        try:
            if K.coriolis(self._pf, self._ws, q, qd, o, mode) == 0:
                return o
        except TypeError:
            pass
        sh = (1, f"({n},)")
        return self._call(lambda pf, ws, a, b, o: K.coriolis(pf, ws, a, b, o, mode),
                          ("q", "qd", "out"), (q, qd, o), (sh, sh, (2, f"({n}, {n})")))

    def gravity_torques(self, q, out=None):
        """Generalized gravity forces Q_grav(q) = Jᵀ𝖬UG (seed 004 eq. 25–26). (n,)."""
        o = np.empty(self._n) if out is None else out
        try:
            if K.gravity(self._pf, self._ws, q, o) == 0:
                return o
        except TypeError:
            pass
        sh = (1, f"({self._n},)")
        return self._call(K.gravity, ("q", "out"), (q, o), (sh, sh))
