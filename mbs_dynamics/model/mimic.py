"""Mimic joints as dependent coordinates: a :class:`MimicRobot` wraps a full-coordinate
:class:`~.robot.Robot` and exposes the same public API in the independent coordinates.

URDF's ``<mimic joint="j" multiplier="k" offset="o"/>`` makes a joint's position
``q_m = k·q_j + o``, hence every derivative ``q_m^(r) = k·q_j^(r)`` (r ≥ 1). Chains of mimics are
resolved to the independent master when the model is built (:func:`~.model.build`,
``Model.mimic``). With the n independent coordinates ``q`` and the n_f full ones (every movable
joint, the model the kernels see)

    q_full = G q + off,    q_full^(r) = G q^(r)  (r ≥ 1),

G (n_f × n) holding a 1 for each independent joint and k in the master's column for each mimic.
The constraint is ideal (workless), so by the principle of virtual work the generalized forces
in the independent coordinates are the projections (doc/math.md, "Mimic joints"):

    τ = Gᵀ τ_full(G q + off, G q̇, G q̈, f_ext),   M = Gᵀ M_full G,   C̄ = Gᵀ C̄_full G,
    g = Gᵀ g_full,   Ṁ = Gᵀ Ṁ_full G,   τ^(r) = Gᵀ τ_full^(r)  (G is constant),

and forward dynamics solves ``(Gᵀ M_full G) q̈ = τ − Gᵀ h_full`` with h_full = τ_full(q̈ = 0).

Floating base: when the wrapped robot has ``nq``/``nv`` (base coordinates first), the base block
of G is the identity: ``nq − n_f`` leading position and ``nv − n_f`` leading velocity coordinates
are passed through unchanged.
"""
from __future__ import annotations

import numpy as np

from ..kernels._data import _check_array
from .urdf import URDFError
from .methods import forward_dynamics_method
from .subset import SubsetDescription

_F64 = np.dtype(np.float64)


def _ro(a):
    a = np.ascontiguousarray(a)
    a.setflags(write=False)
    return a


def _in(x, name, sizes, desc, bound=-1.0):
    """``x`` as a finite float64 C-contiguous array whose shape is in ``sizes`` (tuple of shapes,
    where None in a shape means any size), else ValueError naming ``name`` — the checks of
    :class:`~.robot.Robot`'s entries: complex input is a TypeError, NaN or inf a ValueError."""
    if type(x) is not np.ndarray or x.dtype != _F64 or not x.flags.c_contiguous:
        try:
            a = np.asarray(x)
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be an array of numbers of shape {desc}") from None
        if a.dtype.kind == "c":
            raise TypeError(f"{name} must be real, got a complex array")
        if a.dtype.kind not in "fiub":
            raise ValueError(f"{name} must be an array of numbers of shape {desc}")
        try:
            x = np.ascontiguousarray(a, dtype=np.float64)
        except (TypeError, ValueError, OverflowError):
            raise ValueError(f"{name} must be an array of numbers of shape {desc}") from None
    for s in sizes:
        if len(s) == x.ndim and all(a is None or a == b for a, b in zip(s, x.shape)):
            return _finite(x, name, bound)
    raise ValueError(f"{name} has shape {x.shape}, expected {desc}")


def _finite(x, name, bound=-1.0):
    """ValueError naming ``name`` unless every entry of the float64 array ``x`` is finite (and,
    with ``bound`` >= 0, at most ``bound`` in magnitude): the compiled check of the Robot
    entries, ~0.1 µs against ~1 µs for NumPy's."""
    return _check_array(x, name, x.ndim, (-1,) * x.ndim, False, bound)


def _out(out, shape):
    """A new array, or ``out`` checked: writable float64 C-contiguous of exactly ``shape``."""
    if out is None:
        return np.empty(shape)
    if (type(out) is not np.ndarray or out.dtype != _F64 or not out.flags.c_contiguous
            or not out.flags.writeable or out.shape != shape):
        raise ValueError(f"out must be a writable C-contiguous float64 array of shape {shape}, "
                         f"got {getattr(out, 'dtype', type(out).__name__)} "
                         f"{getattr(out, 'shape', '')}")
    return out


class MimicRobot(SubsetDescription):
    """A robot with mimic joints, in its independent coordinates (see the module docstring).

    The public API is :class:`~.robot.Robot`'s: every joint vector follows ``joint_names`` (the
    independent joints); ``mimic_joints``, ``full_joint_names``, ``G``, ``offset``, ``expand``
    and ``full_robot`` describe the map to the full model. Like a Robot it serves one thread at
    a time: a call while another thread is inside one raises RuntimeError ("in use by another
    thread"); give each thread ``robot.copy()``.

    Args:
        full_robot: a Robot whose ``model.mimic`` maps mimic joint → (master, multiplier, offset).
        check: verify that every independent joint moves mass (the reduced mass matrix is
            regular at q = 0 or at a generic configuration); URDFError naming the joint otherwise.
    """

    __slots__ = ("_full", "_names", "_ind", "_n", "_nf", "_nbq", "_nbv", "_iq", "_kq", "_oq",
                 "_iv", "_kv", "_G", "_Gq", "_GT", "_mimic", "_shq", "_shv", "_bq", "_bv", "_ba",
                 "_bt", "_bM", "_bMG", "_d", "_bound")

    def __init__(self, full_robot, check=True):
        self._full = full_robot
        self._d = full_robot.data  # its workspace: held across each multi-kernel sequence
        model = full_robot.model
        mimic = dict(model.mimic)
        names = tuple(model.joint_names)
        nf = len(names)
        ind = [i for i, nm in enumerate(names) if nm not in mimic]
        col = {names[i]: c for c, i in enumerate(ind)}
        try:
            idx = np.array([col[mimic[nm][0]] if nm in mimic else col[nm] for nm in names],
                           dtype=np.intp)
        except KeyError as e:
            raise URDFError(f"mimic master {e} is not an independent joint of the model") from None
        mul = np.array([float(mimic[nm][1]) if nm in mimic else 1.0 for nm in names])
        off = np.array([float(mimic[nm][2]) if nm in mimic else 0.0 for nm in names])
        nbq = getattr(full_robot, "nq", nf) - nf  # leading base coordinates (0: fixed base)
        nbv = getattr(full_robot, "nv", nf) - nf
        n = len(ind)
        self._n, self._nf, self._nbq, self._nbv = n, nf, nbq, nbv
        self._names = tuple(names[i] for i in ind)
        self._ind = _ro(np.array(ind, dtype=np.intp))
        self._mimic = {m: (str(v[0]), float(v[1]), float(v[2])) for m, v in mimic.items()}
        self._iq = _ro(np.r_[np.arange(nbq), nbq + idx].astype(np.intp))
        self._kq = _ro(np.r_[np.ones(nbq), mul])
        self._oq = _ro(np.r_[np.zeros(nbq), off])
        self._iv = _ro(np.r_[np.arange(nbv), nbv + idx].astype(np.intp))
        self._kv = _ro(np.r_[np.ones(nbv), mul])
        G = np.zeros((nbv + nf, nbv + n))
        G[np.arange(nbv + nf), self._iv] = self._kv
        self._G = _ro(G)
        # inputs above this magnitude would overflow in the expansion G x + offset (|k| <= 1e6)
        self._bound = 1e306 / max(1.0, float(np.abs(mul).max(initial=1.0)))
        Gq = np.zeros((nbq + nf, nbq + n))
        Gq[np.arange(nbq + nf), self._iq] = self._kq
        self._Gq = _ro(Gq)
        self._GT = _ro(G.T)
        nvf, nv = nbv + nf, nbv + n
        self._shq, self._shv = (nbq + n,), (nbv + n,)
        self._bq = np.empty(nbq + nf)  # buffers of the single-sample calls
        self._bv = np.empty(nvf)
        self._ba = np.empty(nvf)
        self._bt = np.empty(nvf)
        self._bM = np.empty((nvf, nvf))
        self._bMG = np.empty((nvf, nv))
        if check:
            self._check_moves_mass()

    # ---------------------------------------------------------------- the coordinate map
    @property
    def full_robot(self):
        """The wrapped Robot in full coordinates (every movable joint)."""
        return self._full

    @property
    def mimic_joints(self) -> dict:
        """Mimic joint name → (independent master, multiplier, offset): q_m = k q_master + o."""
        return dict(self._mimic)

    @property
    def full_joint_names(self):
        return self._full.joint_names

    @property
    def G(self) -> np.ndarray:
        """(nv_full, nv) read-only: q̇_full = G q̇ (and q_full = G q + offset for a fixed base)."""
        return self._G

    @property
    def offset(self) -> np.ndarray:
        """(nq_full,) read-only: the position offsets of the full coordinates."""
        return self._oq

    def expand(self, q, derivative=0):
        """Full coordinates of ``q`` (nq,) or (N, nq): ``G q + offset``; for ``derivative`` ≥ 1
        (a velocity, acceleration, … of that order, size nv) ``G q`` without the offset."""
        if derivative:
            x = _in(q, "q", ((self.nv,), (None, self.nv)), f"({self.nv},) or (N, {self.nv})",
                    self._bound)
            return x[..., self._iv] * self._kv
        x = _in(q, "q", ((self.nq,), (None, self.nq)), f"({self.nq},) or (N, {self.nq})",
                self._bound)
        return x[..., self._iq] * self._kq + self._oq

    def _xq(self, x, buf):
        np.dot(self._Gq, x, out=buf)  # a small dense matvec beats np.take(out=) by 3x
        buf += self._oq
        return buf

    def _xv(self, x, buf):
        return np.dot(self._G, x, out=buf)

    def _check_moves_mass(self, rtol=1e-10):
        """URDFError naming the independent joint whose motion moves no mass: the reduced mass
        matrix has a vanishing pivot of M = L D Lᵀ (joint order) at q = 0 and at a fixed generic
        configuration (a singularity of one configuration only is not an error of the model)."""
        q0 = np.zeros(self.nq)
        if self._nbq == 7:
            q0[6] = 1.0  # identity quaternion (x, y, z, qx, qy, qz, qw) of a floating base
        k = self._first_zero_pivot(q0, rtol)
        if k >= 0:
            qg = q0.copy()
            qg[self._nbq:] = np.random.default_rng(12345).uniform(-0.9, 0.9, self._n)
            k = self._first_zero_pivot(qg, rtol)
        if k < 0:
            return
        if k < self._nbv:
            raise URDFError("the floating base moves no mass: the mass matrix is singular")
        name = self._names[k - self._nbv]
        mims = [m for m, v in self._mimic.items() if v[0] == name]
        also = f" (with its mimic joints {', '.join(mims)})" if mims else ""
        raise URDFError(f"joint '{name}'{also} moves no mass: the mass matrix is singular; give "
                        "the links below it an inertial or lock the joint with locked_joints")

    def _first_zero_pivot(self, q, rtol):
        A = self.mass_matrix(q)
        dg = np.diag(A).copy()
        for k in range(A.shape[0]):
            d = A[k, k]
            if not d > rtol * dg[k]:
                return k
            c = A[k + 1:, k] / d
            A[k + 1:, k + 1:] -= np.outer(c, A[k + 1:, k])
        return -1

    # ---------------------------------------------------------------- description
    @property
    def model(self):
        """The full-coordinate model (``model.mimic`` holds the mimic map)."""
        return self._full.model

    @property
    def n(self) -> int:
        """Number of independent joints."""
        return self._n

    @property
    def nq(self) -> int:
        return self._nbq + self._n

    @property
    def nv(self) -> int:
        return self._nbv + self._n

    @property
    def joint_names(self):
        return self._names

    @property
    def link_names(self):
        f = self._full.link_names
        return tuple(f[i] for i in self._ind)

    @property
    def joint_types(self):
        f = self._full.joint_types
        return tuple(f[i] for i in self._ind)

    def _sel(self, a):
        return _ro(np.asarray(a)[self._ind])


    def __repr__(self):
        return (f"MimicRobot('{self.model.name}', n={self._n}, base='{self.base_link}', "
                f"joints={list(self._names)}, mimic={self._mimic})")

    def to_urdf(self, name=None) -> str:
        """The full model as URDF text, mimic tags included (``Robot.to_urdf`` of
        :attr:`full_robot`); loading it gives this MimicRobot again."""
        return self._full.to_urdf(name)

    def copy(self) -> "MimicRobot":
        """An independent MimicRobot on the same model, with its own workspaces."""
        return MimicRobot(self._full.copy(), check=False)

    def with_payload(self, link, mass, com=(0.0, 0.0, 0.0), inertia=None) -> "MimicRobot":
        """A new MimicRobot with a rigid payload on ``link`` (see :meth:`Robot.with_payload`)."""
        return MimicRobot(self._full.with_payload(link, mass, com, inertia), check=False)

    # ---------------------------------------------------------------- dynamics
    def _q1(self, x, name="q"):
        if type(x) is np.ndarray and x.dtype == _F64 and x.shape == self._shq:
            return _check_array(x, name, 1, self._shq, False, self._bound)  # compiled: ~0.1 µs
        return _in(x, name, (self._shq,), f"({self.nq},)", self._bound)

    def _v1(self, x, name):
        if type(x) is np.ndarray and x.dtype == _F64 and x.shape == self._shv:
            return _check_array(x, name, 1, self._shv, False, self._bound)
        return _in(x, name, (self._shv,), f"({self.nv},)", self._bound)

    def _vecs(self, names, xs):
        """Validate (n,) or (N, n) inputs with consistent shapes; returns (arrays, N or None)."""
        nq, nv = self.nq, self.nv
        out = []
        batch = np.ndim(xs[0]) == 2
        for i, (name, x) in enumerate(zip(names, xs)):
            m = nq if i == 0 else nv
            if batch:
                N = np.shape(xs[0])[0]
                out.append(_in(x, name, ((N, m),), f"({N}, {m})", self._bound))
            else:
                out.append(_in(x, name, ((m,),), f"({m},) (or a batch (N, {m}))", self._bound))
        return out, (out[0].shape[0] if batch else None)

    def inverse_dynamics(self, q, qd, qdd, f_ext=None, out=None, representation="body"):
        """τ = Gᵀ τ_full(G q + off, G q̇, G q̈, f_ext), shape (n,) or (N, n) for a batch.
        Arguments as :meth:`Robot.inverse_dynamics` (``f_ext``: link name → wrench;
        ``representation``: the recursion, ``"body" | "spatial" | "hybrid"``)."""
        with self._d:  # one thread at a time (the kernels' owner flag)
            return self._inverse_dynamics(q, qd, qdd, f_ext, out, representation)

    def _inverse_dynamics(self, q, qd, qdd, f_ext=None, out=None, representation="body"):
        if np.ndim(q) == 1:
            q, qd, qdd = self._q1(q), self._v1(qd, "qd"), self._v1(qdd, "qdd")
            o = np.empty(self._shv) if out is None else _out(out, self._shv)
            t = self._full.inverse_dynamics(self._xq(q, self._bq), self._xv(qd, self._bv),
                                            self._xv(qdd, self._ba), f_ext, out=self._bt,
                                            representation=representation)
            return np.dot(t, self._G, out=o)
        (q, qd, qdd), N = self._vecs(("q", "qd", "qdd"), (q, qd, qdd))
        o = _out(out, (N, self.nv))
        t = self._full.inverse_dynamics(q[:, self._iq] * self._kq + self._oq,
                                        qd[:, self._iv] * self._kv, qdd[:, self._iv] * self._kv,
                                        f_ext, representation=representation)
        return np.matmul(t, self._G, out=o)

    def forward_dynamics(self, q, qd, tau, f_ext=None, out=None, method="aba"):
        """q̈ solving (Gᵀ M_full G) q̈ = τ − Gᵀ h_full(q, q̇, f_ext); (n,) or (N, n).
        ``method``: ``"aba"`` (the projected solve) or ``"dca"`` — the acceleration-level
        divide-and-conquer assembly (``"hdca"``, its former name, is deprecated) of the full tree with each mimic joint a constraint row
        (:func:`mbs_dynamics.loops.hdca.mimic_forward_dynamics`; compiled, f_ext as for
        ``"aba"``, not with a batch)."""
        if method != "aba" and forward_dynamics_method(method, ("aba", "dca")) == "dca":
            return self._dca(q, qd, tau, f_ext, out)
        with self._d:  # one thread at a time (the kernels' owner flag)
            return self._forward_dynamics(q, qd, tau, f_ext, out)

    def _dca(self, q, qd, tau, f_ext, out):
        # the model layer imports no capability: the full Robot's facade reaches loops/hdca.py
        mimic_forward_dynamics = self._full._dca_mimic
        (q, qd, tau), N = self._vecs(("q", "qd", "tau"), (q, qd, tau))
        if f_ext is not None and N is not None:
            raise ValueError("f_ext is not supported with batch inputs")
        o = _out(out, (self.nv,) if N is None else (N, self.nv))
        with self._d:  # one thread at a time (the refinement's kernel calls)
            if N is None:
                o[:] = mimic_forward_dynamics(self, q, qd, tau, f_ext)
            else:
                for i in range(N):
                    o[i] = mimic_forward_dynamics(self, q[i], qd[i], tau[i])
        return o

    def _forward_dynamics(self, q, qd, tau, f_ext=None, out=None):
        (q, qd, tau), N = self._vecs(("q", "qd", "tau"), (q, qd, tau))
        if N is None:
            o = _out(out, (self.nv,))
            qf, vf = self._xq(q, self._bq), self._xv(qd, self._bv)
            self._ba[:] = 0.0
            h = self._full.inverse_dynamics(qf, vf, self._ba, f_ext, out=self._bt) @ self._G
            M = self._project(self._full.mass_matrix(qf, out=self._bM))
            o[:] = np.linalg.solve(M, tau - h)
            return o
        o = _out(out, (N, self.nv))
        qf = q[:, self._iq] * self._kq + self._oq
        vf = qd[:, self._iv] * self._kv
        h = self._full.inverse_dynamics(qf, vf, np.zeros_like(vf), f_ext) @ self._G
        M = np.empty((N, self.nv, self.nv))
        for i in range(N):
            M[i] = self._project(self._full.mass_matrix(qf[i], out=self._bM))
        o[:] = np.linalg.solve(M, (tau - h)[..., None])[..., 0]
        return o

    def _project(self, A, out=None):
        """Gᵀ A G for an (nv_full, nv_full) matrix."""
        AG = np.matmul(A, self._G, out=self._bMG)
        return np.matmul(self._GT, AG, out=out)

    def mass_matrix(self, q, out=None):
        """M = Gᵀ M_full(G q + off) G, (n, n) symmetric positive definite."""
        with self._d:  # one thread at a time (the kernels' owner flag)
            return self._mass_matrix(q, out)

    def _mass_matrix(self, q, out=None):
        q = self._q1(q)
        o = _out(out, (self.nv, self.nv))
        return self._project(self._full.mass_matrix(self._xq(q, self._bq), out=self._bM), o)

    def inverse_mass_matrix(self, q, out=None):
        """(Gᵀ M_full(G q + off) G)⁻¹, (nv, nv) or (N, nv, nv) for q (N, nq): the reduced mass
        matrix is formed (the articulated-body M⁻¹ of the full robot is not the reduced one's)
        and inverted through its Cholesky factor."""
        with self._d:
            if np.ndim(q) == 2:
                q = _in(q, "q", ((None, self.nq),), f"(N, {self.nq})", self._bound)
                M = np.stack([self._mass_matrix(x) for x in q]) if len(q) else \
                    np.empty((0, self.nv, self.nv))
            else:
                M = self._mass_matrix(q)
        o = _out(out, M.shape)
        L = np.linalg.inv(np.linalg.cholesky(M))
        return np.matmul(np.swapaxes(L, -1, -2), L, out=o)

    def _cor(self, q, qd, out, fn):
        with self._d:
            return self._cor1(q, qd, out, fn)

    def _cor1(self, q, qd, out, fn):
        q, qd = self._q1(q), self._v1(qd, "qd")
        o = _out(out, (self.nv, self.nv))
        A = fn(self._xq(q, self._bq), self._xv(qd, self._bv), out=self._bM)
        return self._project(A, o)

    def coriolis_matrix(self, q, qd, out=None):
        """C̄ = Gᵀ C̄_full(G q + off, G q̇) G: C̄ q̇ is the Coriolis/centrifugal torque and
        Ṁ − 2C̄ stays skew-symmetric. (n, n)."""
        return self._cor(q, qd, out, self._full.coriolis_matrix)

    def mass_matrix_derivative(self, q, qd, out=None):
        """Ṁ = Gᵀ Ṁ_full G. (n, n), symmetric."""
        return self._cor(q, qd, out, self._full.mass_matrix_derivative)

    def gravity_torques(self, q, out=None):
        """g = Gᵀ g_full(G q + off). (n,)."""
        with self._d:  # one thread at a time (the kernels' owner flag)
            return self._gravity_torques(q, out)

    def _gravity_torques(self, q, out=None):
        q = self._q1(q)
        o = np.empty(self._shv) if out is None else _out(out, self._shv)
        t = self._full.gravity_torques(self._xq(q, self._bq), out=self._bt)
        return np.dot(t, self._G, out=o)

    def torque_derivatives(self, qs, method="recursive", out=None, *, f_ext=None):
        """τ, τ′, …, τ^(k) = Gᵀ τ_full^(r) along the expanded jet (positions G q + off; every
        derivative G q^(r)). ``qs``: (k+3, n) rows q, q′, … or (N, k+3, n); or a pair ``(q, vs)``
        with q (nq,) and vs (k+2, nv) rows v, v′, … (the floating-base form; batches (N, nq),
        (N, k+2, nv)). ``f_ext``: link name → wrench (jet), as :meth:`Robot.torque_derivatives`.
        Returns (k+1, nv) or (N, k+1, nv)."""
        with self._d:  # one thread at a time (the kernels' owner flag)
            return self._torque_derivatives(qs, method, out, f_ext=f_ext)

    def _torque_derivatives(self, qs, method="recursive", out=None, *, f_ext=None):
        kw = {} if f_ext is None else {"f_ext": f_ext}
        nq, nv = self.nq, self.nv
        if isinstance(qs, tuple) and len(qs) == 2:
            q, vs = qs
            q = _in(q, "q", ((nq,), (None, nq)), f"({nq},) or (N, {nq})", self._bound)
            vs = _in(vs, "vs", ((None, nv),) if q.ndim == 1 else ((q.shape[0], None, nv),),
                     f"(k+2, {nv})" if q.ndim == 1 else f"({q.shape[0]}, k+2, {nv})", self._bound)
            if vs.shape[-2] < 2:
                raise ValueError(f"vs has shape {vs.shape}, expected (k+2, {nv}) with k >= 0 "
                                 "(rows v, v', ...)")
            qf = np.matmul(q, self._Gq.T)
            qf += self._oq
            o = _out(out, vs.shape[:-2] + (vs.shape[-2] - 1, nv))
            t = self._full.torque_derivatives((qf, np.matmul(vs, self._GT)), method, **kw)
            return np.matmul(t, self._G, out=o)
        if self._nbq != self._nbv:
            raise ValueError(f"qs of a floating-base robot must be a pair (q, vs): q (nq,) = "
                             f"({nq},), vs (k+2, nv) = (k+2, {nv})")
        qs = _in(qs, "qs", ((None, nv), (None, None, nv)),
                 f"(k+3, {nv}) or (N, k+3, {nv}) (rows q, q', q'', ...)", self._bound)
        if qs.shape[-2] < 3:
            raise ValueError(f"qs has shape {qs.shape}, expected (k+3, {nv}) with k >= 0 "
                             f"(rows q, q', q'', ...) or (N, k+3, {nv})")
        o = _out(out, qs.shape[:-2] + (qs.shape[-2] - 2, nv))
        qf = np.matmul(qs, self._GT)  # C-contiguous (k+3, n_f): the full robot's fast path
        qf[..., 0, :] += self._oq
        t = self._full.torque_derivatives(qf, method, **kw)
        return np.matmul(t, self._G, out=o)

    @property
    def floating_base(self) -> bool:
        return bool(getattr(self._full, "floating_base", False))

    # ---- kinematics (mbs_dynamics/kinematics/)
    def _fq(self, q):
        """Full coordinates of q (nq,) or (N, nq)."""
        if np.ndim(q) == 2:
            return self.expand(q)
        return self._xq(self._q1(q), self._bq)

    def _fv(self, x, name, buf):
        """Full velocities (derivative ≥ 1) of x (nv,) or (N, nv)."""
        if np.ndim(x) == 2:
            return _in(x, name, ((None, self.nv),), f"(N, {self.nv})",
                       self._bound)[:, self._iv] * self._kv
        return self._xv(self._v1(x, name), buf)

    @property
    def frame_names(self):
        """The frames (every URDF link) of the full model (see :attr:`Robot.frame_names`)."""
        return self._full.frame_names

    def frame_placement(self, q, frame, out=None):
        """Pose (4, 4) of ``frame`` at the full configuration G q + off (:meth:`Robot.
        frame_placement`)."""
        with self._d:  # the shared buffers: one thread at a time
            return self._full.frame_placement(self._fq(q), frame, out)

    def frame_velocity(self, q, qd, frame, representation="body", out=None):
        """Twist (6,) of ``frame`` at (G q + off, G q̇) — equal to (J_full G) q̇."""
        with self._d:  # the shared buffers: one thread at a time
            return self._full.frame_velocity(self._fq(q), self._fv(qd, "qd", self._bv), frame,
                                             representation, out)

    def frame_jacobian(self, q, frame, representation="body", out=None):
        """J = J_full(G q + off) G (6, n): the frame's Jacobian in the independent coordinates."""
        with self._d:  # the shared buffers: one thread at a time
            J = self._full.frame_jacobian(self._fq(q), frame, representation)
            return np.matmul(J, self._G, out=_out(out, J.shape[:-1] + (self.nv,)))

    def frame_jacobian_derivative(self, q, qd, frame, representation="body", out=None):
        """J̇ = J̇_full(G q + off, G q̇) G (G is constant)."""
        with self._d:  # the shared buffers: one thread at a time
            Jd = self._full.frame_jacobian_derivative(self._fq(q), self._fv(qd, "qd", self._bv),
                                                      frame, representation)
            return np.matmul(Jd, self._G, out=_out(out, Jd.shape[:-1] + (self.nv,)))

    def frame_acceleration(self, q, qd, qdd, frame, representation="body", out=None):
        """d/dt of the frame's twist = J q̈ + J̇ q̇ = the full one at (G q + off, G q̇, G q̈)."""
        with self._d:  # the shared buffers: one thread at a time
            return self._full.frame_acceleration(self._fq(q), self._fv(qd, "qd", self._bv),
                                                 self._fv(qdd, "qdd", self._ba), frame,
                                                 representation, out)

    # ---- kinematics: derivatives, Christoffel symbols (mbs_dynamics/kinematics/)
    def christoffel(self, q):
        """Γ (n, n, n) of the independent coordinates: Γ_abc = Σ G_ia G_jb G_kc Γ_full,ijk
        (q_full = G q + off is affine, so M = Gᵀ M_full G differentiates term by term);
        C(q, q̇)_ab = Σ_c Γ_abc q̇_c. See :meth:`Robot.christoffel`."""
        q = _in(q, "q", ((self.nq,), (None, self.nq)), f"({self.nq},) or (N, {self.nq})",
                self._bound)
        with self._d:  # the shared buffers: one thread at a time
            Gf = self._full.christoffel(self._fq(q))
        G = self._G
        return np.einsum("...ijk,ia,jb,kc->...abc", Gf, G, G, G, optimize=True)

    def frame_derivatives(self, qs, frame, representation="body", out=None):
        """The frame's twist jet along the expanded trajectory (positions G q + off, every
        derivative G q^(r)); arguments and result as :meth:`Robot.frame_derivatives`."""
        nq, nv = self.nq, self.nv
        if isinstance(qs, tuple) and len(qs) == 2:
            q, vs = qs
            q = _in(q, "q", ((nq,), (None, nq)), f"({nq},) or (N, {nq})", self._bound)
            vs = _in(vs, "vs", ((None, nv),) if q.ndim == 1 else ((q.shape[0], None, nv),),
                     f"(r, {nv})" if q.ndim == 1 else f"({q.shape[0]}, r, {nv})", self._bound)
            qf = np.matmul(q, self._Gq.T)
            qf += self._oq
            return self._full.frame_derivatives((qf, np.matmul(vs, self._GT)), frame,
                                                representation, out)
        if self._nbq != self._nbv:
            raise ValueError(f"qs of a floating-base robot must be a pair (q, vs): q (nq,) = "
                             f"({nq},), vs (r, nv) = (r, {nv})")
        qs = _in(qs, "qs", ((None, nv), (None, None, nv)),
                 f"(r, {nv}) or (N, r, {nv}) (rows q, q', ...)", self._bound)
        if qs.shape[-2] < 2:
            raise ValueError(f"qs has shape {qs.shape}, expected (r, {nv}) with r >= 2 "
                             "(rows q, q', ...)")
        qf = np.matmul(qs, self._GT)
        qf[..., 0, :] += self._oq
        return self._full.frame_derivatives(qf, frame, representation, out)

    def kinematic_hessian(self, q, frame, representation="body"):
        """H (6, n, n) in the independent coordinates: H[:, a, c] = Σ_ik G_ia G_kc H_full[:, i, k]
        (the Jacobian is J_full G and G is constant). See :meth:`Robot.kinematic_hessian`."""
        q = _in(q, "q", ((self.nq,), (None, self.nq)), f"({self.nq},) or (N, {self.nq})",
                self._bound)
        with self._d:  # the shared buffers: one thread at a time
            H = self._full.kinematic_hessian(self._fq(q), frame, representation)
        return np.einsum("...sik,ia,kc->...sac", H, self._G, self._G, optimize=True)


    # ---- identification (mbs_dynamics/identification/)
    def inertial_parameters(self) -> np.ndarray:
        """(nb, 10) parameters of every body of the full model (all ``full_joint_names`` bodies,
        a floating base first): see :meth:`Robot.inertial_parameters`."""
        return self._full.inertial_parameters()

    def with_inertial_parameters(self, pi) -> "MimicRobot":
        """A new MimicRobot with the bodies' parameters ``pi`` (nb, 10) (validated as
        :meth:`Robot.with_inertial_parameters`, and every independent joint must move mass)."""
        return MimicRobot(self._full.with_inertial_parameters(pi), check=True)

    def regressor(self, q, qd, qdd, out=None):
        """Y = Gᵀ Y_full(G q + off, G q̇, G q̈): (nv, 10·nb) (columns: every full body), or
        (N, nv, 10·nb) for a batch; τ = Y π with π = ``inertial_parameters()``."""
        with self._d:  # the shared buffers: one thread at a time
            return self._regressor(q, qd, qdd, out)

    def _regressor(self, q, qd, qdd, out):
        (q, qd, qdd), N = self._vecs(("q", "qd", "qdd"), (q, qd, qdd))
        if N is None:
            Y = self._full.regressor(self._xq(q, self._bq), self._xv(qd, self._bv),
                                     self._xv(qdd, self._ba))
        else:
            Y = self._full.regressor(q[:, self._iq] * self._kq + self._oq,
                                     qd[:, self._iv] * self._kv, qdd[:, self._iv] * self._kv)
        return np.matmul(self._GT, Y, out=_out(out, Y.shape[:-2] + (self.nv, Y.shape[-1])))

    def regressor_derivatives(self, qs, out=None):
        """Y^(r) = Gᵀ Y_full^(r) along the expanded jet (inputs as :meth:`torque_derivatives`):
        (k+1, nv, 10·nb) or (N, k+1, nv, 10·nb)."""
        Y = self._full.regressor_derivatives(self._expand_jet(qs))
        return np.matmul(self._GT, Y, out=_out(out, Y.shape[:-2] + (self.nv, Y.shape[-1])))

    def _expand_jet(self, qs):
        """The full-coordinate form of a torque_derivatives input (validated)."""
        nq, nv = self.nq, self.nv
        if isinstance(qs, tuple) and len(qs) == 2:
            q, vs = qs
            q = _in(q, "q", ((nq,), (None, nq)), f"({nq},) or (N, {nq})")
            vs = _in(vs, "vs", ((None, nv),) if q.ndim == 1 else ((q.shape[0], None, nv),),
                     f"(k+2, {nv})" if q.ndim == 1 else f"({q.shape[0]}, k+2, {nv})")
            if vs.shape[-2] < 2:
                raise ValueError(f"vs has shape {vs.shape}, expected (k+2, {nv}) with k >= 0 "
                                 "(rows v, v', ...)")
            qf = np.matmul(q, self._Gq.T)
            qf += self._oq
            return qf, np.matmul(vs, self._GT)
        if self._nbq != self._nbv:
            raise ValueError(f"qs of a floating-base robot must be a pair (q, vs): q (nq,) = "
                             f"({nq},), vs (k+2, nv) = (k+2, {nv})")
        qs = _in(qs, "qs", ((None, nv), (None, None, nv)),
                 f"(k+3, {nv}) or (N, k+3, {nv}) (rows q, q', q'', ...)")
        if qs.shape[-2] < 3:
            raise ValueError(f"qs has shape {qs.shape}, expected (k+3, {nv}) with k >= 0 "
                             f"(rows q, q', q'', ...) or (N, k+3, {nv})")
        qf = np.matmul(qs, self._GT)
        qf[..., 0, :] += self._oq
        return qf


    def inverse_dynamics_derivatives(self, q, qd, qdd, out=None):
        """(∂τ/∂q, ∂τ/∂q̇, M) = Gᵀ (·)_full G at the expanded state (G is constant), each (nv, nv)
        (views of ``out`` (3, nv, nv) if given)."""
        with self._d:  # the shared buffers (_bq, _bv, _ba, _bMG): one thread at a time
            return self._inverse_dynamics_derivatives(q, qd, qdd, out)

    def _inverse_dynamics_derivatives(self, q, qd, qdd, out):
        q, qd, qdd = self._q1(q), self._v1(qd, "qd"), self._v1(qdd, "qdd")
        d = self._full.inverse_dynamics_derivatives(self._xq(q, self._bq), self._xv(qd, self._bv),
                                                    self._xv(qdd, self._ba))
        o = _out(out, (3, self.nv, self.nv))
        for k in range(3):
            self._project(d[k], out=o[k])
        return o[0], o[1], o[2]

    def inverse_dynamics_second_order_derivatives(self, q, qd, qdd, f_ext=None, out=None):
        """The four second-order tensors of :meth:`Robot.inverse_dynamics_second_order_derivatives`
        in the independent coordinates: ``T[i, j, k] = Σ G_ai G_bj G_ck T_full[a, b, c]`` at the
        expanded state (G constant, so no other term). Single samples; ``f_ext`` as for
        :meth:`inverse_dynamics`; ``out``: optional (4, nv, nv, nv)."""
        nv, G = self.nv, self._G
        o = _out(out, (4, nv, nv, nv))
        with self._d:  # the shared buffers (_bq, _bv, _ba): one thread at a time
            q, qd, qdd = self._q1(q), self._v1(qd, "qd"), self._v1(qdd, "qdd")
            full = self._full.inverse_dynamics_second_order_derivatives(
                self._xq(q, self._bq), self._xv(qd, self._bv), self._xv(qdd, self._ba),
                f_ext=f_ext)
            for k in range(4):
                np.einsum("abc,ai,bj,ck->ijk", full[k], G, G, G, out=o[k], optimize=True)
        return o[0], o[1], o[2], o[3]

    def forward_dynamics_derivatives(self, q, qd, tau, f_ext=None, out=None):
        """(∂q̈/∂q, ∂q̈/∂q̇, M⁻¹) in the independent coordinates: −M⁻¹ ∂τ/∂x at q̈ = FD(q, q̇, τ),
        M = Gᵀ M_full G inverted through its Cholesky factor. (N, ·) batches loop over the
        samples; ``out``: optional (3, nv, nv) / (3, N, nv, nv). ``f_ext`` is not supported."""
        if f_ext is not None:
            raise ValueError("f_ext is not supported by a MimicRobot's forward_dynamics_derivatives")
        nv = self.nv
        if np.ndim(q) == 2:
            (q, qd, tau), N = self._vecs(("q", "qd", "tau"), (q, qd, tau))
            o = _out(out, (3, N, nv, nv))
            for k in range(N):
                o[:, k] = self.forward_dynamics_derivatives(q[k], qd[k], tau[k])
            return o[0], o[1], o[2]
        o = _out(out, (3, nv, nv))
        with self._d:  # one thread at a time: the two calls share the buffers
            qdd = self._forward_dynamics(q, qd, tau)
            dq, dv, M = self._inverse_dynamics_derivatives(q, qd, qdd, None)
        L = np.linalg.inv(np.linalg.cholesky(M))
        np.matmul(L.T, L, out=o[2])
        np.matmul(o[2], dq, out=o[0])
        np.matmul(o[2], dv, out=o[1])
        np.negative(o[:2], out=o[:2])
        return o[0], o[1], o[2]


def wrap(robot):
    """``robot`` itself when its model has no mimic joints, else a :class:`MimicRobot` (a
    :class:`~.lie_joints.LieJointRobot` when it has spherical or inner floating joints)."""
    if robot.model.lie_joints:
        from .lie_joints import LieJointRobot
        return LieJointRobot(robot)
    return MimicRobot(robot) if robot.model.mimic else robot
