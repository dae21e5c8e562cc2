"""``ClosedLoopRobot``: a full-coordinate tree Robot (the spanning tree) closed by loop
constraints, exposing the Robot API in the actuated (independent) coordinates.

Inputs and outputs of the dynamics follow ``joint_names`` (the actuated joints, URDF depth-first
order); ``full_joint_names`` is the spanning tree's order, the coordinates of
``expand``, ``loop_residual``, ``constraint_jacobian`` and of ``full_robot``. Formulas:
:mod:`.kinematics` (closure, Newton, jets) and :mod:`.dynamics` (projection, λ, jets).

Single-sample ``inverse_dynamics``, ``forward_dynamics(method="lagrange")``,
``constraint_forces``, ``mass_matrix``, ``gravity_torques``, ``coriolis_matrix``,
``mass_matrix_derivative``, ``expand`` (without ``q_guess``) and ``torque_derivatives`` (k ≤ 5),
without ``f_ext``, run compiled (``_closed.pyx``: the same formulas in C over the tree's
RNEA/CRBA kernels, ~1–25 µs); they take
the NumPy path below whenever the compiled one cannot decide (Newton needing continuation, a
near-singular K_d, too many actuated joints), so results and errors are those of the formulas
here. Both paths share the last assembly (``_last``, held by the compiled workspace).
"""
from __future__ import annotations

import reprlib
import warnings

import numpy as np

from . import _closed
from .dynamics import G_jets, fact, project_jet
from .kinematics import LoopKinematics, _rank, pivoted_columns
from .spec import parse_loops
from ..model.methods import forward_dynamics_method
from ..model.subset import SubsetDescription

_F64 = np.dtype(np.float64)


class LoopWarning(UserWarning):
    """The package chose the independent coordinates of a closed-loop robot."""


def _arr(x, name, shape_desc, ndims):
    if np.iscomplexobj(x):
        raise TypeError(f"{name} must be real")
    try:
        a = np.array(x, dtype=float)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{name} must be an array of numbers of shape {shape_desc}") from None
    if a.ndim not in ndims:
        raise ValueError(f"{name} has shape {a.shape}, expected {shape_desc}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} contains NaN or inf")
    return a


def _out(out, res):
    if out is None:
        return res
    if (type(out) is not np.ndarray or out.dtype != _F64 or not out.flags.c_contiguous
            or not out.flags.writeable or out.shape != res.shape):
        raise ValueError(f"out must be a writable C-contiguous float64 array of shape {res.shape}")
    out[...] = res
    return out


class ClosedLoopRobot(SubsetDescription):
    """A closed-loop mechanism (see the module docstring and :func:`mbs_dynamics.load_urdf`).

    Args:
        full_robot: the spanning tree, a fixed-base Robot in full coordinates.
        loops: list of loop dicts or a YAML path (:mod:`.spec`).
        actuated: names of the independent (motor) joints; None: chosen rank-revealingly (QR
            with column pivoting of K at the assembled configuration) with a :class:`LoopWarning`
            naming them (``actuated_chosen`` is then True).
        tol: Newton tolerance on ``|h|_∞`` (m, rad).
    Raises:
        ValueError naming the loop: unknown frames, a loop inside one body, origins that cannot be
        assembled (with the residual), actuated joints that do not determine the mechanism.
    """

    def __new__(cls, full_robot=None, *args, **kwargs):
        if cls is ClosedLoopRobot and getattr(full_robot, "floating_base", False):
            return super().__new__(FloatingClosedLoopRobot)
        return super().__new__(cls)

    def __init__(self, full_robot, loops, actuated=None, tol=1e-12, _state=None):
        self._full = full_robot
        model = full_robot.model
        if _state is not None:
            self._kin, self._act, self._dep, self._q0, self.actuated_chosen = _state
            self._setup()
            return
        self._kin = kin = LoopKinematics(model, parse_loops(loops, model))
        self._tol = tol
        nf = model.n
        q0, err, ok = kin.newton(np.zeros(nf), np.arange(nf), tol)
        if not ok:
            name, e = kin.worst_loop(kin.residual(q0))
            raise ValueError(f"the loops cannot be assembled: Newton from the URDF's zero stops at "
                             f"|h| = {err:.3g} (loop '{name}': residual {e:.3g}); check the "
                             "loops' frames and origins")
        names = list(model.joint_names)
        h, K = kin.residual_jacobian(q0)
        self.actuated_chosen = actuated is None
        if actuated is None:
            s = np.linalg.svd(K, compute_uv=False)
            r = _rank(s, K.shape)
            dep = set(pivoted_columns(K, r))
            act = [i for i in range(nf) if i not in dep]
            if not act:
                raise ValueError("the loops leave the mechanism no degree of freedom")
            warnings.warn("no actuated joints given: chose the independent coordinates "
                          f"{[names[i] for i in act]} (QR with pivoting of the constraint "
                          "Jacobian at the assembled configuration)", LoopWarning, stacklevel=3)
        else:
            if isinstance(actuated, str):
                actuated = [actuated]
            try:
                given = list(actuated) if not isinstance(actuated, (bytes, dict)) else None
            except TypeError:
                given = None
            if given is None or not all(isinstance(a, str) for a in given):
                raise ValueError("actuated must be a joint name or a list of joint names, got "
                                 f"{reprlib.repr(actuated)}")
            actuated = given
            act = []
            for a in actuated:
                if a not in names:
                    raise ValueError(f"actuated joint '{a}' is not a movable joint of the model")
                act.append(names.index(a))
            if len(set(act)) != len(act):
                raise ValueError("actuated joints are listed twice")
            act = sorted(act)
        self._act = np.array(act, dtype=np.intp)
        self._dep = np.array([i for i in range(nf) if i not in set(act)], dtype=np.intp)
        self._q0 = q0
        self._check(q0, K)
        self._setup()

    def _setup(self):
        self._nf = self._full.model.n
        self._n = len(self._act)
        self._tol = getattr(self, "_tol", 1e-12)
        # the compiled per-call paths (_closed.pyx) and the assembly state both paths share
        self._cw = _closed.LoopWork(self._full.data, self._kin, self._act, self._dep, self._tol)
        self._last = self._q0.copy()

    @property
    def _last(self):
        """The last assembled configuration (the next Newton's start), held by the compiled
        workspace so both paths continue on one branch."""
        return self._cw.last

    @_last.setter
    def _last(self, q):
        self._cw.set_last(q, None)

    # ------------------------------------------------------------------ determinacy
    def _check(self, q, K=None, where="the assembled configuration"):
        """K_d⁺ at q, or ValueError naming the loops when the actuated joints do not determine
        the mechanism (dependent joints free to move) or are not independent."""
        kin = self._kin
        if K is None:
            K = kin.residual_jacobian(q)[1]
        Kd = K[:, self._dep]
        names = self._full.model.joint_names
        if self._dep.size == 0:
            if np.abs(K).max(initial=0) > 0:
                bad = [lp.name for lp, sl in zip(kin.loops, kin.rows) if np.abs(K[sl]).max() > 0]
                raise ValueError(f"every joint is actuated: loops {bad} constrain them")
            return np.zeros((0, K.shape[0]))
        U, s, Vt = np.linalg.svd(Kd)
        rd = _rank(s, Kd.shape)
        if rd < Kd.shape[1]:
            v = Vt[rd:]
            moving = [int(self._dep[j]) for j in np.nonzero(np.abs(v).max(0) > 1e-8)[0]]
            jn = [names[i] for i in moving]
            lps = [lp.name for lp, sup in zip(kin.loops, kin.support) if set(sup) & set(moving)]
            if not lps:
                raise ValueError(f"joints {jn} are in no loop and not actuated: the mechanism is "
                                 "undetermined; add them to actuated")
            raise ValueError(f"the actuated joints {list(self.joint_names)} do not determine the "
                             f"mechanism at {where}: the dependent joints {jn} of loop(s) {lps} "
                             "can move (too few actuated joints, or a singular configuration)")
        rk = _rank(np.linalg.svd(K, compute_uv=False), K.shape)
        if rk > rd:
            P = K[:, self._act] - Kd @ np.linalg.lstsq(Kd, K[:, self._act], rcond=None)[0]
            big = 1e-8 * max(1.0, np.abs(K).max())
            lps = [lp.name for lp, sl in zip(kin.loops, kin.rows) if np.abs(P[sl]).max() > big]
            lps += [f"mimic joint '{names[mj]}'" for t, (mj, *_) in enumerate(kin.mimic)
                    if np.abs(P[kin.mimic_rows.start + t]).max() > big]
            raise ValueError(f"the actuated joints {list(self.joint_names)} are not independent at "
                             f"{where}: loop(s) {lps} constrain them (too many actuated joints)")
        inv = (Vt[:rd].T / s[:rd]) @ U[:, :rd].T
        return inv

    # ------------------------------------------------------------------ description
    @property
    def full_robot(self):
        return self._full

    @property
    def model(self):
        """The spanning tree's model (full coordinates)."""
        return self._full.model

    @property
    def loops(self):
        """The loops as dicts (name, frame_a, frame_b, origin_a, origin_b, type)."""
        return tuple(lp.as_dict() for lp in self._kin.loops)

    @property
    def mimic_joints(self) -> dict:
        """Mimic joint → (master, multiplier, offset): extra (linear) constraint rows after the
        loops' in ``loop_residual`` / ``constraint_jacobian``; mimic joints are dependent
        coordinates unless listed in ``actuated``."""
        return {m: tuple(v) for m, v in dict(self._full.model.mimic or {}).items()}

    @property
    def frame_names(self):
        """The spanning tree's frames (every URDF link), for the kinematics in full coordinates
        (``full_robot.frame_placement(expand(q), …)``)."""
        return self._full.frame_names

    @property
    def loop_names(self):
        return tuple(lp.name for lp in self._kin.loops)

    @property
    def n(self) -> int:
        return self._n

    @property
    def nq(self) -> int:
        return self._n

    @property
    def nv(self) -> int:
        return self._n

    @property
    def n_full(self) -> int:
        return self._nf

    @property
    def floating_base(self) -> bool:
        return False

    @property
    def joint_names(self):
        f = self._full.model.joint_names
        return tuple(f[i] for i in self._act)

    @property
    def full_joint_names(self):
        return tuple(self._full.model.joint_names)

    @property
    def dependent_joint_names(self):
        f = self._full.model.joint_names
        return tuple(f[i] for i in self._dep)

    @property
    def actuated_index(self):
        """Indices of the actuated joints in the full coordinates."""
        return self._act.copy()

    @property
    def q_assembled(self):
        """The assembled configuration found from the URDF's zero at load (full coordinates)."""
        return self._q0.copy()

    def _sel(self, a):
        return np.asarray(a)[self._act]

    @property
    def link_names(self):
        return tuple(self._full.link_names[i] for i in self._act)

    @property
    def joint_types(self):
        return tuple(self._full.joint_types[i] for i in self._act)


    @property
    def data(self):
        return self._full.data

    def __repr__(self):
        return (f"ClosedLoopRobot('{self.model.name}', n={self._n} actuated of {self._nf}, "
                f"joints={list(self.joint_names)}, loops={list(self.loop_names)})")

    def _state(self):
        return (self._kin, self._act, self._dep, self._q0, self.actuated_chosen)

    def copy(self):
        """An independent ClosedLoopRobot on the same model (own workspaces, own last
        assembly)."""
        r = type(self)(self._full.copy(), None, _state=self._state())
        r._last = self._last.copy()
        return r

    def with_payload(self, link, mass, com=(0.0, 0.0, 0.0), inertia=None):
        """A new ClosedLoopRobot with a rigid payload on ``link`` (:meth:`Robot.with_payload`)."""
        return type(self)(self._full.with_payload(link, mass, com, inertia), None,
                          _state=self._state())

    # ------------------------------------------------------------------ loop kinematics
    def _qfull(self, q, name="q_full"):
        return _arr(q, name, f"({self._nf},)", (1,)) if np.shape(q) == (self._nf,) else \
            self._shape_err(q, name, f"({self._nf},)")

    @staticmethod
    def _shape_err(q, name, desc):
        raise ValueError(f"{name} has shape {np.shape(q)}, expected {desc}")

    def loop_residual(self, q_full):
        """h(q_full), (m,): per loop, rows in its order (connect 3, weld 6, revolute 5), the
        frame_a → frame_b offset and misalignment in frame_b's axes (:mod:`.kinematics`)."""
        return self._kin.residual(self._qfull(q_full))

    def constraint_jacobian(self, q_full):
        """K = ∂h/∂q_full, (m, n_full) (exact; at an assembled configuration the rows of the
        relative twist of frame_b w.r.t. frame_a in frame_b's axes, linear first)."""
        return self._kin.residual_jacobian(self._qfull(q_full))[1]

    @property
    def loop_rows(self):
        """Loop name → slice of its rows in ``loop_residual`` / ``constraint_jacobian``."""
        return {lp.name: sl for lp, sl in zip(self._kin.loops, self._kin.rows)}

    def _assemble(self, qa, guess):
        """(full q with the actuated ``qa`` and the dependent joints by Newton from ``guess``,
        K there); continuation from guess's actuated values if a direct Newton fails."""
        kin, act, dep = self._kin, self._act, self._dep
        self._check_range(qa)
        q = guess.copy()
        q[act] = qa
        cw = self._cw
        if guess is cw.last and cw.has_pred:  # first-order predictor along the branch
            q[dep] -= cw.dqd @ (qa - guess[act])
        qn, err, ok, K = kin.newton(q, dep, self._tol, jacobian=True)
        if ok and self._same_actuated(qn, qa):
            return qn, K
        start = guess[act].copy()
        for steps in (8, 64):
            qc = guess.copy()
            good = True
            for s in range(1, steps + 1):
                qc[act] = start + (qa - start) * (s / steps)
                qc, err, ok, K = kin.newton(qc, dep, self._tol, jacobian=True)
                if not ok:
                    good = False
                    break
            if good and self._same_actuated(qc, qa):
                return qc, K
        name, e = kin.worst_loop(kin.residual(qn))
        raise ValueError(f"cannot assemble the loops at the actuated q = {np.round(qa, 6).tolist()}"
                         f": Newton stops at |h| = {e:.3g} (loop '{name}'); the configuration "
                         "may be unreachable or q_guess on another branch")

    def _check_range(self, qa):
        """ValueError naming the actuated joint whose input is outside its URDF limits, not
        finite, or absurd (|q| ≥ 1e9: nothing of it is assembled or remembered)."""
        lo, hi = _closed._actuated_range(self._full.model, self._act)
        bad = np.flatnonzero(~((lo < qa) & (qa < hi)))
        if bad.size:
            j = int(bad[0])
            name = self._full.model.joint_names[self._act[j]]
            lim = (self._full.model.lower[self._act[j]], self._full.model.upper[self._act[j]])
            why = ("is not finite" if not np.isfinite(qa[j]) else
                   f"has magnitude ≥ {_closed.Q_ABSURD:g}" if abs(qa[j]) >= _closed.Q_ABSURD
                   else f"is outside its limits [{lim[0]:g}, {lim[1]:g}]")
            raise ValueError(f"q: the actuated joint '{name}' = {qa[j]:g} {why}")

    def _same_actuated(self, q, qa):
        """The assembly keeps exactly the actuated coordinates asked for (never another
        configuration's)."""
        return bool(np.all(q[self._act] == qa)) and bool(np.all(np.abs(q) < _closed.Q_ABSURD))

    def expand(self, qs, q_guess=None):
        """Full-coordinate jet of an actuated jet.

        Args:
            qs: (n,) actuated positions → (n_full,) full positions; or (k+1, n) rows q, q′, …,
                q^(k) → (k+1, n_full) rows of the full coordinates (the dependent joints by
                Newton for row 0, then order by order from the differentiated closure).
            q_guess: (n_full,) start of Newton (default: the last assembled configuration, so a
                trajectory stays on one assembly branch; initially ``q_assembled``).
        """
        if q_guess is None:
            res = self._cw.expand(qs)  # compiled (k + 1 ≤ 8 rows)
            if res is not None:
                return res
        return self._expand(qs, q_guess)

    def _expand(self, qs, q_guess=None):
        qs = _arr(qs, "qs", f"({self._n},) or (k+1, {self._n})", (1, 2))
        if q_guess is None and qs.shape[-1] == self._n:
            res = self._cw.expand(qs)
            if res is not None:
                return res
        if qs.shape[-1] != self._n:
            self._shape_err(qs, "qs", f"({self._n},) or (k+1, {self._n})")
        guess = self._last if q_guess is None else _arr(q_guess, "q_guess",
                                                        f"({self._nf},)", (1,))
        if guess.shape != (self._nf,):
            self._shape_err(guess, "q_guess", f"({self._nf},)")
        one = qs.ndim == 1
        Qa = qs[None] if one else qs
        Q, _ = self._jet(Qa, guess)
        self._set_last(Q[0])
        if one:
            return Q[0]
        X = Q * fact(Q.shape[0])[:, None]
        X[:, self._act] = qs  # exactly the given actuated jet
        return X

    def _jet(self, Qa_deriv, guess):
        """Normalized full jet (K+1, n_f), K_d⁺ and K at its row 0."""
        q, K = self._assemble(Qa_deriv[0], guess)
        Kdp = self._check(q, K, where=f"the actuated q = {np.round(Qa_deriv[0], 6).tolist()}")
        K1 = Qa_deriv.shape[0]
        Q = np.zeros((K1, self._nf))
        Q[0] = q
        Q[1:, self._act] = Qa_deriv[1:] / fact(K1)[1:, None]
        self._kin.dependent_jets(Q, self._act, self._dep, Kdp, K)
        self._K = K
        self._dqd = Kdp @ K[:, self._act]  # −∂q_d/∂q_a = K_d⁺K_a at this assembly
        return Q, Kdp

    def _set_last(self, q):
        """Remember the assembly (the next Newton starts there, with a first-order predictor)."""
        self._cw.set_last(q, self._dqd)

    def _G0(self, q, Kdp):
        """G at the configuration of the last ``_jet`` (its K reused)."""
        G = np.zeros((self._nf, self._n))
        G[self._act] = np.eye(self._n)
        G[self._dep] = -Kdp @ self._K[:, self._act]
        return G

    def _state3(self, q, qd, qdd):
        Qa = np.stack([q, qd, qdd])
        Q, Kdp = self._jet(Qa, self._last)
        self._set_last(Q[0])
        return Q * fact(3)[:, None], Kdp

    def _vec1(self, q):
        """q as a float64 (n,) array, or the shape error."""
        q = _arr(q, "q", f"({self._n},)", (1,))
        if q.shape != (self._n,):
            self._shape_err(q, "q", f"({self._n},)")
        return q

    def _vec3(self, q, qd, qdd, names=("q", "qd", "qdd")):
        out = []
        for x, nm in zip((q, qd, qdd), names):
            a = _arr(x, nm, f"({self._n},) or (N, {self._n})", (1, 2))
            if a.shape[-1] != self._n:
                self._shape_err(a, nm, f"({self._n},) or (N, {self._n})")
            out.append(a)
        if not (out[0].shape == out[1].shape == out[2].shape):
            raise ValueError(f"{names[0]}, {names[1]}, {names[2]} must have the same shape, got "
                             f"{out[0].shape}, {out[1].shape}, {out[2].shape}")
        return out

    def inverse_dynamics(self, q, qd, qdd, f_ext=None, out=None):
        """Actuated torques τ_a = Gᵀ τ_tree(q, q̇, q̈) for a motion of the actuated coordinates
        (virtual work on the constraint manifold, :mod:`.dynamics`). (n,) or (N, n) batches.
        ``f_ext``: link name → wrench (f, m) in the link frame (single samples), as
        :meth:`Robot.inverse_dynamics`. Single samples without ``f_ext`` take the compiled path
        (:mod:`._closed`), the NumPy one where that cannot decide."""
        if f_ext is None:
            res = self._cw.inverse_dynamics(q, qd, qdd)
            if res is not None:
                return res if out is None else _out(out, res)
        return self._inverse_dynamics(q, qd, qdd, f_ext, out)

    def _inverse_dynamics(self, q, qd, qdd, f_ext=None, out=None):
        q, qd, qdd = self._vec3(q, qd, qdd)
        if q.ndim == 1 and f_ext is None:
            res = self._cw.inverse_dynamics(q, qd, qdd)
            if res is not None:
                return _out(out, res)
        if q.ndim == 2:
            if f_ext is not None:
                raise ValueError("f_ext is not supported with batch inputs")
            res = self._cw.inverse_dynamics_batch(q, qd, qdd)  # one compiled loop
            if res is None:
                res = np.array([self.inverse_dynamics(a, b, c) for a, b, c in zip(q, qd, qdd)])
            return _out(out, res.reshape(q.shape))
        X, Kdp = self._state3(q, qd, qdd)
        t = self._full.inverse_dynamics(X[0], X[1], X[2], f_ext)
        return _out(out, t @ self._G0(X[0], Kdp))

    def constraint_forces(self, q, qd, qdd, f_ext=None):
        """The loop wrenches λ: loop name → the constraint wrench acting on frame_b at its
        origin, in that origin frame's axes: (3,) force for ``connect``, (6,) (force, moment)
        for ``weld`` and ``revolute`` (zero moment about the hinge z). Where the closures are
        redundant λ is not unique: this is the minimum-norm λ (as Pinocchio's proximal solver)."""
        q, qd, qdd = self._vec3(q, qd, qdd)
        if q.ndim != 1:
            raise ValueError(f"constraint_forces takes one sample: q ({self._n},)")
        if f_ext is None:
            lam = self._cw.multipliers(q, qd, qdd)
            if lam is not None:
                return self._wrenches(lam)
        X, _ = self._state3(q, qd, qdd)
        lam = self.multipliers(X[0], X[1], X[2], f_ext)
        return self._wrenches(lam)

    def _wrenches(self, lam):
        out = {}
        for lp, sl in zip(self._kin.loops, self._kin.rows):
            v = lam[sl]
            if lp.type == "revolute":
                v = np.r_[v, 0.0]
            out[lp.name] = v.copy()
        return out

    def multipliers(self, q_full, qd_full, qdd_full, f_ext=None):
        """λ (m,) minimum-norm solution of K_dᵀ λ = τ_tree,d at a full-coordinate motion."""
        t = self._full.inverse_dynamics(q_full, qd_full, qdd_full, f_ext)
        K = self._kin.residual_jacobian(q_full)[1]
        return np.linalg.lstsq(K[:, self._dep].T, t[self._dep], rcond=None)[0]

    def torque_derivatives(self, qs, method="recursive", out=None, *, f_ext=None):
        """τ_a, τ_a′, …, τ_a^(k) along an actuated jet ``qs`` (k+3, n) rows q, q′, …, q^(k+2)
        (or a batch (N, k+3, n)): ``τ_a^(r) = Σ_j binom(r, j) G^(j)ᵀ τ_tree^(r−j)``
        (:mod:`.dynamics`). Returns (k+1, n) (or (N, k+1, n)). Single jets with k ≤ 5 (and the
        tree's kmax) take the compiled path (:mod:`._closed`)."""
        if method == "recursive" and f_ext is None:
            res = self._cw.torque_derivatives(qs)
            if res is not None:
                return res if out is None else _out(out, res)
        return self._torque_derivatives(qs, method, out, f_ext=f_ext)

    def _torque_derivatives(self, qs, method="recursive", out=None, *, f_ext=None):
        if method not in ("recursive", "closed_form"):
            raise ValueError(f"method must be 'recursive' or 'closed_form', got {method!r}")
        if isinstance(qs, tuple):
            raise ValueError("a ClosedLoopRobot has a fixed base: qs is (k+3, n), not (q, vs)")
        qs = _arr(qs, "qs", f"(k+3, {self._n})", (2, 3))
        if qs.shape[-1] != self._n or qs.shape[-2] < 3:
            self._shape_err(qs, "qs", f"(k+3, {self._n}) with k >= 0 (rows q, q', q'', ...) "
                            f"or (N, k+3, {self._n})")
        if qs.ndim == 3:
            if f_ext is not None:
                raise ValueError("f_ext is not supported with batch inputs")
            res = self._cw.torque_derivatives_batch(qs) if method == "recursive" else None
            if res is None:  # one compiled loop above; else the loop over the single calls
                res = np.array([self.torque_derivatives(x, method) for x in qs])
            return _out(out, res.reshape(qs.shape[:1] + (qs.shape[1] - 2, self._n)))
        if method == "recursive" and f_ext is None:
            res = self._cw.torque_derivatives(qs)
            if res is not None:
                return _out(out, res)
        K1 = qs.shape[0]
        Q, Kdp = self._jet(qs, self._last)
        self._set_last(Q[0])
        f = fact(K1)
        full = Q * f[:, None]
        kw = {} if f_ext is None else {"f_ext": f_ext}
        T = self._full.torque_derivatives(full, method, **kw)  # (K1-2, n_f)
        Tn = T / f[:K1 - 2, None]
        G = G_jets(self._kin, Q[:K1 - 2], self._act, self._dep, Kdp)
        return _out(out, project_jet(G, Tn) * f[:K1 - 2, None])

    def _GdG(self, q, qd):
        Qa = np.stack([q, qd])
        Q, Kdp = self._jet(Qa, self._last)
        self._set_last(Q[0])
        G = G_jets(self._kin, Q, self._act, self._dep, Kdp)
        return Q[0], Q[1], G[0], G[1]

    def mass_matrix(self, q, out=None):
        """M_a = Gᵀ M_tree G, (n, n) symmetric positive definite."""
        res = self._cw.mass_matrix(q)
        if res is None:
            q = self._vec1(q)
            res = self._cw.mass_matrix(q)
            if res is None:
                qf, _, G, _ = self._GdG(q, np.zeros(self._n))
                res = G.T @ self._full.mass_matrix(qf) @ G
        return _out(out, res)

    def coriolis_matrix(self, q, qd, out=None):
        """C̄_a = Gᵀ (C̄_tree G + M_tree Ġ): C̄_a q̇ is the velocity-product torque and
        Ṁ_a − 2C̄_a is skew-symmetric. (n, n)."""
        res = self._cw.coriolis_matrix(q, qd, 0)
        if res is not None:
            return _out(out, res)
        q, qd, _ = self._vec3(q, qd, qd, ("q", "qd", "qd"))
        res = self._cw.coriolis_matrix(q, qd, 0)
        if res is not None:
            return _out(out, res)
        qf, vf, G, Gd = self._GdG(q, qd)
        return _out(out, G.T @ (self._full.coriolis_matrix(qf, vf) @ G
                                + self._full.mass_matrix(qf) @ Gd))

    def mass_matrix_derivative(self, q, qd, out=None):
        """Ṁ_a = ĠᵀMG + GᵀṀG + GᵀMĠ. (n, n), symmetric."""
        res = self._cw.coriolis_matrix(q, qd, 1)
        if res is not None:
            return _out(out, res)
        q, qd, _ = self._vec3(q, qd, qd, ("q", "qd", "qd"))
        res = self._cw.coriolis_matrix(q, qd, 1)
        if res is not None:
            return _out(out, res)
        qf, vf, G, Gd = self._GdG(q, qd)
        M = self._full.mass_matrix(qf)
        A = Gd.T @ M @ G
        return _out(out, A + A.T + G.T @ self._full.mass_matrix_derivative(qf, vf) @ G)

    def gravity_torques(self, q, out=None):
        """g_a = Gᵀ g_tree. (n,)."""
        res = self._cw.gravity_torques(q)
        if res is None:
            q = self._vec1(q)
            res = self._cw.gravity_torques(q)
            if res is None:
                qf, _, G, _ = self._GdG(q, np.zeros(self._n))
                res = self._full.gravity_torques(qf) @ G
        return _out(out, res)

    def forward_dynamics(self, q, qd, tau, f_ext=None, out=None, method="lagrange"):
        """Actuated accelerations q̈_a for actuated torques ``tau`` (the dependent joints
        unactuated): ``method="lagrange"`` — the index-1 (acceleration-level) Lagrange equations
        of the spanning tree with the loop constraints, solved by the range-space method with a
        minimum-norm multiplier (redundant closures); ``"dca"`` — the divide-and-conquer
        assembly at acceleration level (:mod:`.hdca`; ``"hdca"``, its former name, is
        deprecated). (n,) or (N, n) batches. ``"lagrange"`` on single samples
        without ``f_ext`` takes the compiled path (:mod:`._closed`: the same equations in the
        null-space form (GᵀMG) q̈_a = Gᵀ(τ − c − Mγ)), the NumPy one where that cannot decide."""
        if method != "lagrange":
            method = forward_dynamics_method(method, ("lagrange", "dca"))
        if method == "lagrange" and f_ext is None:
            res = self._cw.forward_dynamics(q, qd, tau)
            if res is not None:
                return res if out is None else _out(out, res)
        if method == "dca" and f_ext is None and np.ndim(q) == 1:
            res = self._dca1(q, qd, tau)
            if res is not None:
                return res if out is None else _out(out, res)
        return self._forward_dynamics(q, qd, tau, f_ext, out, method)

    def _dca1(self, q, qd, tau):
        """One sample of ``method="dca"`` by compiled steps only: the entry checks of the
        kernels, the full (q, q̇) by the compiled expand, the compiled assembly
        (:func:`.hdca.acceleration`); None where the compiled expand cannot decide (the NumPy
        path then does, with its errors)."""
        from ..kernels._data import _check_array
        from .hdca import acceleration
        sh = (self._n,)
        q, qd, tau = (_check_array(x, nm, 1, sh) for x, nm in ((q, "q"), (qd, "qd"),
                                                               (tau, "tau")))
        Q = self._cw.expand(np.stack([q, qd]))
        if Q is None:
            return None
        tf = np.zeros(self._nf)
        tf[self._act] = tau
        _in_range(Q[1], tf)
        return _finite(acceleration(self, Q[0], Q[1], tf)[self._act])

    def _forward_dynamics(self, q, qd, tau, f_ext=None, out=None, method="lagrange"):
        q, qd, tau = self._vec3(q, qd, tau, ("q", "qd", "tau"))
        method = forward_dynamics_method(method, ("lagrange", "dca"))
        if q.ndim == 1 and method == "lagrange" and f_ext is None:
            res = self._cw.forward_dynamics(q, qd, tau)
            if res is not None:
                return _out(out, res)
        if q.ndim == 2:
            if f_ext is not None:
                raise ValueError("f_ext is not supported with batch inputs")
            res = self._cw.forward_dynamics_batch(q, qd, tau) if method == "lagrange" else None
            if res is None:
                res = np.array([self.forward_dynamics(a, b, c, method=method)
                                for a, b, c in zip(q, qd, tau)])
            return _out(out, res.reshape(q.shape))
        Qa = np.stack([q, qd])
        Q = self._cw.expand(Qa) if method == "dca" else None  # compiled (q, q̇) full
        if Q is None:
            Q, _ = self._jet(Qa, self._last)
            self._set_last(Q[0])
        tf = np.zeros(self._nf)
        tf[self._act] = tau
        _in_range(Q[1], tf)
        if method == "lagrange":
            from .lagrange import acceleration
            a = acceleration(self, Q[0], Q[1], tf, f_ext)
        else:
            from .hdca import acceleration
            a = acceleration(self, Q[0], Q[1], tf, f_ext)
        return _out(out, _finite(a[self._act]))


class FloatingClosedLoopRobot(ClosedLoopRobot):
    """A closed-loop mechanism on a floating base (legged robots with parallel ankles or knees):
    Pinocchio's free-flyer layout in front of the actuated joints, q = (x, y, z, qx, qy, qz, qw,
    q_a) (nq = 7 + n), v = (base linear, angular in the base frame, q̇_a) (nv = 6 + n). The
    loops constrain joint coordinates only (a relative pose does not depend on the base pose),
    so G = blockdiag(I₆, G_joints) and the base rows pass through; ``expand`` maps a full
    configuration (7 + n,) → (7 + n_full,) or a joints-only jet (k+1, n) → (k+1, n_full);
    ``torque_derivatives`` takes the pair (q, vs) like :meth:`Robot.torque_derivatives`.
    ``forward_dynamics`` takes ``method="lagrange" | "dca"``; ``q_assembled`` and ``actuated_index``
    refer to the joints (n_full,)."""

    @property
    def nq(self) -> int:
        return 7 + self._n

    @property
    def nv(self) -> int:
        return 6 + self._n

    @property
    def floating_base(self) -> bool:
        return True

    def __repr__(self):
        return super().__repr__().replace("ClosedLoopRobot(", "FloatingClosedLoopRobot(", 1)

    def _vin(self, x, name, m):
        a = _arr(x, name, f"({m},)", (1,))
        if a.shape != (m,):
            self._shape_err(a, name, f"({m},)")
        return a

    def _q(self, q):
        """q (7 + n,): base pose (x y z qx qy qz qw) and actuated joints, or the shape error."""
        return self._vin(q, "q", 7 + self._n)

    def _v(self, x, name):
        """A (6 + n,) vector (base twist or wrench, actuated joints) named ``name``."""
        return self._vin(x, name, 6 + self._n)

    def _Gf(self, G, zero=False):
        nf, n = G.shape
        out = np.zeros((6 + nf, 6 + n))
        if not zero:
            out[:6, :6] = np.eye(6)
        out[6:, 6:] = G
        return out

    def expand(self, qs, q_guess=None):
        x = np.asarray(qs, dtype=float) if not np.iscomplexobj(qs) else qs
        if np.ndim(x) == 1 and np.shape(x) == (7 + self._n,):
            x = self._q(x)
            g = None if q_guess is None else np.asarray(q_guess, float)[7:]
            return np.r_[x[:7], super().expand(x[7:], g)]
        return super().expand(qs, q_guess)

    def loop_residual(self, q_full):
        q = self._vin(q_full, "q_full", 7 + self._nf)
        return self._kin.residual(q[7:])

    def constraint_jacobian(self, q_full):
        """(m, 6 + n_full): the base columns are zero (loops constrain joints only)."""
        q = self._vin(q_full, "q_full", 7 + self._nf)
        K = self._kin.residual_jacobian(q[7:])[1]
        return np.hstack([np.zeros((K.shape[0], 6)), K])

    def _motion(self, q, qd, qdd):
        q = self._q(q)
        qd = self._v(qd, "qd")
        qdd = self._v(qdd, "qdd")
        X, Kdp = self._state3(q[7:], qd[6:], qdd[6:])
        return (np.r_[q[:7], X[0]], np.r_[qd[:6], X[1]], np.r_[qdd[:6], X[2]],
                self._G0(X[0], Kdp))

    def _batch(self, fn, xs, out, f_ext):
        if f_ext is not None:
            raise ValueError("f_ext is not supported with batch inputs")
        res = np.array([fn(*row) for row in zip(*xs)])
        return _out(out, res)

    def inverse_dynamics(self, q, qd, qdd, f_ext=None, out=None):
        """(base wrench, actuated τ) = G_fᵀ τ_tree, G_f = blockdiag(I₆, G); (6 + n,). Single
        samples without ``f_ext``: the compiled path first (:mod:`._closed`)."""
        if f_ext is None:
            res = self._cw.inverse_dynamics(q, qd, qdd)
            if res is not None:
                return res if out is None else _out(out, res)
        return self._inverse_dynamics(q, qd, qdd, f_ext, out)

    def _inverse_dynamics(self, q, qd, qdd, f_ext=None, out=None):
        if np.ndim(q) == 2:
            res = None if f_ext is not None else self._cw.inverse_dynamics_batch(q, qd, qdd)
            if res is not None:
                return _out(out, res)
            return self._batch(self.inverse_dynamics, (q, qd, qdd), out, f_ext)
        if f_ext is None:
            res = self._cw.inverse_dynamics(self._q(q), self._v(qd, "qd"), self._v(qdd, "qdd"))
            if res is not None:
                return _out(out, res)
        qf, vf, af, G = self._motion(q, qd, qdd)
        t = self._full.inverse_dynamics(qf, vf, af, f_ext)
        return _out(out, np.r_[t[:6], t[6:] @ G])

    def constraint_forces(self, q, qd, qdd, f_ext=None):
        if f_ext is None:
            lam = self._cw.multipliers(self._q(q), self._v(qd, "qd"), self._v(qdd, "qdd"))
            if lam is not None:
                return self._wrenches(lam)
        qf, vf, af, _ = self._motion(q, qd, qdd)
        return self._wrenches(self.multipliers(qf, vf, af, f_ext))

    def multipliers(self, q_full, qd_full, qdd_full, f_ext=None):
        t = self._full.inverse_dynamics(q_full, qd_full, qdd_full, f_ext)
        K = self._kin.residual_jacobian(np.asarray(q_full, float)[7:])[1]
        return np.linalg.lstsq(K[:, self._dep].T, t[6:][self._dep], rcond=None)[0]

    def torque_derivatives(self, qs, method="recursive", out=None, *, f_ext=None):
        """``qs`` = (q (7 + n,), vs (k+2, 6 + n) rows v, v′, …): returns (k+1, 6 + n) rows of
        (base wrench, actuated τ) and their derivatives (compiled for k ≤ 5 without f_ext)."""
        if (method == "recursive" and f_ext is None and type(qs) is tuple and len(qs) == 2):
            res = self._cw.torque_derivatives(qs[0], qs[1])
            if res is not None:
                return res if out is None else _out(out, res)
        return self._torque_derivatives(qs, method, out, f_ext=f_ext)

    def _torque_derivatives(self, qs, method="recursive", out=None, *, f_ext=None):
        if not (isinstance(qs, tuple) and len(qs) == 2):
            raise ValueError(f"qs of a floating-base robot must be a pair (q, vs): q ({self.nq},),"
                             f" vs (k+2, {self.nv})")
        q, vs = qs
        q = self._q(q)
        vs = _arr(vs, "vs", f"(k+2, {self.nv})", (2,))
        if vs.shape[1] != self.nv or vs.shape[0] < 2:
            self._shape_err(vs, "vs", f"(k+2, {self.nv}) with k >= 0")
        if method == "recursive" and f_ext is None:
            res = self._cw.torque_derivatives(q, vs)
            if res is not None:
                return _out(out, res)
        qj = np.vstack([q[7:], vs[:, 6:]])
        K1 = qj.shape[0]
        Q, Kdp = self._jet(qj, self._last)
        self._set_last(Q[0])
        f = fact(K1)
        full = Q * f[:, None]
        vsf = np.hstack([vs[:, :6], full[1:]])
        kw = {} if f_ext is None else {"f_ext": f_ext}
        T = self._full.torque_derivatives((np.r_[q[:7], full[0]], vsf), method, **kw)
        Tn = T[:, 6:] / f[:K1 - 2, None]
        G = G_jets(self._kin, Q[:K1 - 2], self._act, self._dep, Kdp)
        return _out(out, np.hstack([T[:, :6], project_jet(G, Tn) * f[:K1 - 2, None]]))

    def _GdGf(self, q, qd):
        q = self._q(q)
        qd = self._v(qd, "qd")
        qf, vf, G, Gd = self._GdG(q[7:], qd[6:])
        return np.r_[q[:7], qf], np.r_[qd[:6], vf], self._Gf(G), self._Gf(Gd, zero=True)

    def mass_matrix(self, q, out=None):
        res = self._cw.mass_matrix(q)
        if res is None:
            res = self._cw.mass_matrix(self._q(q))
        if res is None:
            qf, _, G, _ = self._GdGf(q, np.zeros(self.nv))
            res = G.T @ self._full.mass_matrix(qf) @ G
        return _out(out, res)

    def gravity_torques(self, q, out=None):
        res = self._cw.gravity_torques(q)
        if res is None:
            res = self._cw.gravity_torques(self._q(q))
        if res is None:
            qf, _, G, _ = self._GdGf(q, np.zeros(self.nv))
            res = self._full.gravity_torques(qf) @ G
        return _out(out, res)

    def coriolis_matrix(self, q, qd, out=None):
        res = self._cw.coriolis_matrix(q, qd, 0)
        if res is None:
            res = self._cw.coriolis_matrix(self._q(q), self._v(qd, "qd"), 0)
        if res is not None:
            return _out(out, res)
        qf, vf, G, Gd = self._GdGf(q, qd)
        return _out(out, G.T @ (self._full.coriolis_matrix(qf, vf) @ G
                                + self._full.mass_matrix(qf) @ Gd))

    def mass_matrix_derivative(self, q, qd, out=None):
        res = self._cw.coriolis_matrix(q, qd, 1)
        if res is None:
            res = self._cw.coriolis_matrix(self._q(q), self._v(qd, "qd"), 1)
        if res is not None:
            return _out(out, res)
        qf, vf, G, Gd = self._GdGf(q, qd)
        M = self._full.mass_matrix(qf)
        A = Gd.T @ M @ G
        return _out(out, A + A.T + G.T @ self._full.mass_matrix_derivative(qf, vf) @ G)

    def forward_dynamics(self, q, qd, tau, f_ext=None, out=None, method="lagrange"):
        """(base acceleration, q̈_a) for (base wrench, actuated τ) ``tau`` (6 + n,): the index-1
        Lagrange equations with the loop rows (zero base columns), range-space solve; or
        ``method="dca"`` (:mod:`.hdca`, the base a 6-DOF joint of the assembly). Single
        samples of ``"lagrange"`` without ``f_ext``: the compiled path first (null-space form,
        :mod:`._closed`)."""
        if method != "lagrange":
            method = forward_dynamics_method(method, ("lagrange", "dca"))
        if method == "lagrange" and f_ext is None:
            res = self._cw.forward_dynamics(q, qd, tau)
            if res is not None:
                return res if out is None else _out(out, res)
        return self._forward_dynamics(q, qd, tau, f_ext, out, method)

    def _forward_dynamics(self, q, qd, tau, f_ext=None, out=None, method="lagrange"):
        method = forward_dynamics_method(method, ("lagrange", "dca"))
        if np.ndim(q) == 2:
            res = (self._cw.forward_dynamics_batch(q, qd, tau)
                   if f_ext is None and method == "lagrange" else None)
            if res is not None:
                return _out(out, res)
            return self._batch(lambda a, b, c: self.forward_dynamics(a, b, c, method=method),
                               (q, qd, tau), out, f_ext)
        q = self._q(q)
        qd = self._v(qd, "qd")
        tau = self._v(tau, "tau")
        if f_ext is None and method == "lagrange":
            res = self._cw.forward_dynamics(q, qd, tau)
            if res is not None:
                return _out(out, res)
        Qa = np.stack([q[7:], qd[6:]])
        Q = self._cw.expand(Qa) if method == "dca" else None  # compiled joints (q, q̇)
        if Q is None:
            Q, _ = self._jet(Qa, self._last)
            self._set_last(Q[0])
        qf, vf = np.r_[q[:7], Q[0]], np.r_[qd[:6], Q[1]]
        tf = np.zeros(6 + self._nf)
        tf[:6] = tau[:6]
        tf[6 + self._act] = tau[6:]
        _in_range(vf, tf)
        if method == "dca":
            from .hdca import acceleration
            a = _finite(acceleration(self, qf, vf, tf, f_ext))
            return _out(out, np.r_[a[:6], a[6 + self._act]])
        from .lagrange import acceleration
        a = acceleration(self, qf, vf, tf, f_ext)
        return _out(out, np.r_[a[:6], a[6 + self._act]])


def _one_thread(fn):
    """Hold the spanning tree's workspace for the whole call: a ClosedLoopRobot keeps Python
    state between its kernel calls (the last assembly and its predictor, ``_last``/``_pred``),
    so two threads interleaving on one robot gave wrong torques without any error. Another
    thread's call now raises the Robot's RuntimeError "in use by another thread" (re-entrant
    for the holding thread); give each thread ``robot.copy()``."""
    import functools

    @functools.wraps(fn)
    def call(self, *args, **kwargs):
        with self._full.data:
            return fn(self, *args, **kwargs)
    return call


for _cls in (ClosedLoopRobot, FloatingClosedLoopRobot):
    for _name in ("expand", "_expand", "loop_residual", "constraint_jacobian", "inverse_dynamics",
                  "_inverse_dynamics", "constraint_forces", "multipliers", "torque_derivatives",
                  "_torque_derivatives", "mass_matrix", "coriolis_matrix",
                  "mass_matrix_derivative", "gravity_torques", "forward_dynamics",
                  "_forward_dynamics"):
        if _name in ("inverse_dynamics", "forward_dynamics", "torque_derivatives") or (
                _cls is ClosedLoopRobot and _name == "expand"):
            continue  # the compiled path claims the workspace itself; its fallbacks are wrapped
        if _name in _cls.__dict__:
            setattr(_cls, _name, _one_thread(_cls.__dict__[_name]))
del _cls, _name


# |v|, |τ| beyond this overflow the quadratic velocity terms (|v|² > 1e300) of float64
_HUGE = 1e150


def _in_range(v, tau):
    """Velocities and torques far beyond any mechanism's range (≥ 1e150) are a ValueError before
    they reach LAPACK (which would print 'illegal value' and return NaN)."""
    if np.abs(v).max(initial=0.0) >= _HUGE or np.abs(tau).max(initial=0.0) >= _HUGE:
        raise ValueError("forward_dynamics: qd or tau is too large for float64 arithmetic "
                         f"(|value| >= {_HUGE:g})")


def _finite(a):
    if not np.all(np.isfinite(a)):
        raise ValueError("forward_dynamics: the result overflowed to inf or NaN — an input is "
                         "too large for float64 arithmetic")
    return a
