"""Spherical and free (URDF ``floating``) joints inside the spanning tree of a closed-loop
robot: :class:`LieClosedLoopRobot`, a :class:`~.robot.ClosedLoopRobot` over the joints' chart
that re-centres the chart before it becomes singular.

The loader builds each such joint as the chart of :mod:`~mbs_dynamics.model.lie_joints`: three
revolute joints about the joint frame's x, y, z (a free joint: three prismatic ones first),
R = Rx(a) Ry(b) Rz(c). The loop machinery (:mod:`.kinematics`, :mod:`.dynamics`, ``_closed``)
runs unchanged on that tree with every chart coordinate dependent: the results in the actuated
coordinates, τ_a = Gᵀ τ_tree, M_a = Gᵀ M G and their jets, do not depend on how the dependent
coordinates are parametrised, as long as the parametrisation is regular. The Euler chart is not
regular at b = ±π/2 (its body Jacobian E(φ), ω = E(φ) φ̇, has det E = cos b), so this class
keeps |b| ≤ 1 rad: whenever an assembly ends with |b| > 1 rad (``RECENTRE``), every group's
current pose is folded into the origin B of its first chart joint (canonical coordinates of the
second kind re-centred at the configuration, Müller, "Screw and Lie group theory in multibody
dynamics", 2018), the chart coordinates become 0, and the call is repeated on that chart. The
chart is first centred at the assembled configuration. A call whose assembly fails (a jump of
the actuated coordinates that crosses the old chart's singularity) is retried by continuation
along the actuated straight line, re-centring on the way.

The full coordinates this class exposes are the group's (as
:class:`~mbs_dynamics.model.lie_joints.LieJointRobot`, Pinocchio's ``JointModelSpherical`` /
``JointModelFreeFlyer`` layout): a spherical joint's configuration is a unit quaternion
``(qx, qy, qz, qw)`` and its velocity ω in the child frame; a free joint's (x, y, z, qx, qy,
qz, qw) and (v, ω) in the child frame. The chart coordinates are internal. Velocity jets map by
V^(k) = Σ_j C(k, j) Jb^(j) φ^(k+1−j) (the chart's body Jacobian Jb = E, a free joint's
diag(Rᵀ, E), as Taylor series).
"""
from __future__ import annotations

import math
import warnings
from dataclasses import replace

import numpy as np

from .kinematics import LoopKinematics, _rank, pivoted_columns
from .robot import ClosedLoopRobot, LoopWarning
from .spec import parse_loops
from ..model.methods import forward_dynamics_method
from ..model.lie_joints import (_fill, _jb_rate, _jb_series, group_layout, matrix_to_quat,
                                quat_to_matrix)

__all__ = ["LieClosedLoopRobot", "RECENTRE"]

#: |middle chart angle| [rad] beyond which the chart is re-centred (cond E = 1/cos b ≤ 1.86).
RECENTRE = 1.0

#: attributes of the inner ClosedLoopRobot that depend on its chart (all others are passed on).
_CHART = ("full_robot", "data", "with_payload")


def _rot(a, b, c):
    """Rx(a) Ry(b) Rz(c)."""
    ca, sa, cb, sb, cc, sc = (math.cos(a), math.sin(a), math.cos(b), math.sin(b),
                              math.cos(c), math.sin(c))
    return np.array([[cb * cc, -cb * sc, sb],
                     [ca * sc + sa * sb * cc, ca * cc - sa * sb * sc, -sa * cb],
                     [sa * sc - ca * sb * cc, sa * cc + ca * sb * sc, ca * cb]])


def _chart_pose(kind, phi):
    """4×4 pose of a chart's child in its first joint's frame at chart coordinates φ."""
    T = np.eye(4)
    r = 3 if kind == "floating" else 0
    T[:3, :3] = _rot(*phi[r:r + 3])
    if r:
        T[:3, 3] = phi[:3]
    return T


class LieClosedLoopRobot:
    """A closed-loop robot with spherical or free joints inside its spanning tree (module
    docstring). Made by :func:`mbs_dynamics.load_urdf` for ``loops=`` with such joints; the
    actuated-coordinate API is :class:`~.robot.ClosedLoopRobot`'s (``inverse_dynamics``,
    ``forward_dynamics`` (``"lagrange"``, ``"dca"``), ``mass_matrix``, ``gravity_torques``,
    ``coriolis_matrix``, ``mass_matrix_derivative``, ``torque_derivatives``,
    ``constraint_forces``; :func:`~.simulate.simulate_loops`), the full coordinates are the
    group's. It serves one thread at a time (a re-centring replaces the chart's robot): give
    each thread :meth:`copy`.

    Args:
        chart_robot: the spanning tree with each spherical/free joint as its chart (a Robot,
            fixed or floating base).
        loops: list of loop dicts or a YAML path (:mod:`.spec`).
        actuated: the independent (motor) joints: 1-DOF joints only; None: chosen as
            :class:`~.robot.ClosedLoopRobot` does, among the 1-DOF joints.
    Raises:
        ValueError: naming the joint: a spherical or free joint (or one of its chart joints)
            listed in ``actuated``, a spherical/free joint the loops do not determine; the
            errors of :class:`~.robot.ClosedLoopRobot`.
    """

    def __init__(self, chart_robot, loops, actuated=None, _inner=None):
        model = chart_robot.model
        self._B0 = np.array(model.B)
        groups, chart = [], {}
        for name, (kind, i0) in model.lie_joints.items():
            d = 3 if kind == "spherical" else 6
            groups.append((name, kind, i0, d))
            for i in range(i0, i0 + d):
                chart[model.joint_names[i]] = name
        self._groups, self._chart_of = groups, chart
        segs, self._nqf = group_layout(model)   # (name, kind, chart = v slice, q slice)
        self._segs = [(name, kind, sc, sq) for kind, name, sc, sq in segs]
        self._orig = chart_robot
        self.recentrings = 0
        if _inner is not None:
            self._c = _inner
            return
        loops = list(loops) if isinstance(loops, (list, tuple)) else loops
        if actuated is not None:  # other malformed values: ClosedLoopRobot's error
            given = [actuated] if isinstance(actuated, str) else (
                list(actuated) if isinstance(actuated, (list, tuple)) else [])
            for a in given:
                g = self._group(a)
                if g is not None:
                    raise ValueError(f"actuated joint '{a}': '{g[0]}' is a {g[1]} joint; "
                                     "spherical and free joints inside a closed loop are passive "
                                     "(dependent): actuate 1-DOF joints")
        try:
            self._c = (self._choose(chart_robot, loops) if actuated is None else
                       ClosedLoopRobot(chart_robot, loops, actuated))
        except ValueError as e:
            raise ValueError(self._rename(str(e))) from None
        self._recentre(force=True)  # the chart's reference at the assembled configuration
        self._q_asm = self._group_q(self._c._last)

    # ------------------------------------------------------------------ set-up
    def _group(self, name):
        """(group name, kind) when ``name`` is a spherical/free joint or one of its chart
        joints, else None."""
        if not isinstance(name, str):
            return None
        for g, kind, _, _ in self._groups:
            if name == g or self._chart_of.get(name) == g:
                return g, kind
        return None

    def _choose(self, full, loops):
        """ClosedLoopRobot with the actuated joints chosen among the 1-DOF joints (QR with
        pivoting of K at the assembly, every chart column dependent)."""
        model = full.model
        kin = LoopKinematics(model, parse_loops(loops, model))
        nf = model.n
        q0, _, ok = kin.newton(np.zeros(nf), np.arange(nf), 1e-12)
        if not ok:  # the inner constructor raises the assembly error
            return ClosedLoopRobot(full, loops, [model.joint_names[0]])
        K = kin.residual_jacobian(q0)[1]
        C = np.array([i for _, _, i0, d in self._groups for i in range(i0, i0 + d)], dtype=int)
        rest = np.array([i for i in range(nf) if i not in set(C)], dtype=int)
        KC = K[:, C]
        sK = np.linalg.svd(K, compute_uv=False)
        s = np.linalg.svd(KC, compute_uv=False)  # its rank on K's scale (KC may be ~0)
        if np.sum(s > sK[0] * max(K.shape) * np.finfo(float).eps * 100) < len(C):
            v = np.linalg.svd(KC)[2][-1]
            j = int(C[int(np.argmax(np.abs(v)))])
            g = self._chart_of[model.joint_names[j]]
            raise ValueError(f"joint '{g}': the loops do not determine this spherical/free "
                             "joint (its rotation or translation is free at the assembled "
                             "configuration); it cannot be actuated, so close it by a loop")
        r = _rank(sK, K.shape)
        P = K[:, rest] - KC @ np.linalg.lstsq(KC, K[:, rest], rcond=None)[0]
        dep = set(int(rest[j]) for j in pivoted_columns(P, r - len(C)))
        act = [model.joint_names[i] for i in rest if i not in dep]
        if not act:
            raise ValueError("the loops leave the mechanism no degree of freedom")
        warnings.warn("no actuated joints given: chose the independent coordinates "
                      f"{act} (QR with pivoting of the constraint Jacobian at the assembled "
                      "configuration, spherical and free joints passive)", LoopWarning,
                      stacklevel=4)
        c = ClosedLoopRobot(full, loops, act)
        c.actuated_chosen = True
        return c

    # ------------------------------------------------------------------ the chart
    def _recentre(self, force=False):
        """Fold every group's pose at the last assembly into its chart's origin when some
        |middle angle| exceeds :data:`RECENTRE` (or ``force``); True if it did."""
        c = self._c
        qc = c._last
        if not force and all(abs(qc[i0 + (4 if kind == "floating" else 1)]) <= RECENTRE
                             for _, kind, i0, _ in self._groups):
            return False
        B = np.array(c.full_robot.model.B)
        qn = qc.copy()
        for _, kind, i0, d in self._groups:
            B[i0] = B[i0] @ _chart_pose(kind, qc[i0:i0 + d])
            qn[i0:i0 + d] = 0.0
        self._c = self._inner(B, qn)
        self.recentrings += 1
        return True

    def _kin(self, B):
        """The loops' kinematics on the chart with the origins ``B`` (its ``model`` that
        chart's)."""
        model = replace(self._c.full_robot.model, B=B)
        return LoopKinematics(model, parse_loops(list(self._c.loops), model))

    def _inner(self, B, qc):
        """A ClosedLoopRobot on the chart with the origins ``B``, assembled at ``qc``."""
        c = self._c
        kin = self._kin(B)
        return ClosedLoopRobot(type(c.full_robot)(kin.model, c.full_robot.data.kmax), None,
                               _state=(kin, c._act, c._dep, qc, c.actuated_chosen))

    def _group_q(self, qc):
        """Group coordinates (nq_full,) of the joints' chart coordinates ``qc`` (n_full,)."""
        q = np.empty(self._nqf)
        B = self._c.full_robot.model.B
        for _, kind, sc, sq in self._segs:
            if kind == "joint":
                q[sq] = qc[sc]
                continue
            i0 = sc.start
            T = np.linalg.solve(self._B0[i0], B[i0] @ _chart_pose(kind, qc[sc]))
            quat = matrix_to_quat(T[:3, :3])
            q[sq] = np.r_[T[:3, 3], quat] if kind == "floating" else quat
        return q

    def _group_v(self, X):
        """Group velocity jet (K, n_full) of a chart jet X (K+1, n_full) of derivatives:
        V^(k) = Σ_j C(k, j) Jb^(j) φ^(k+1−j), the chart's rates elsewhere."""
        K1 = len(X)
        f = np.array([math.factorial(k) for k in range(K1)], dtype=float)
        V = np.array(X[1:], dtype=float)
        for _, kind, sc, _ in self._segs:
            if kind == "joint":
                continue
            ph = X[:, sc] / f[:, None]
            Jn = _jb_series(kind, ph)
            for k in range(K1 - 1):
                s = sum(Jn[j] @ ((k - j + 1) * ph[k - j + 1]) for j in range(k + 1))
                V[k, sc] = s * f[k]
        return V

    def _chart_at(self, q):
        """(origins B of the chart centred at the group configuration q (nq_full,), q's chart
        coordinates (every group 0))."""
        qc = np.zeros(len(self._B0))
        B = np.array(self._B0)
        for name, kind, sc, sq in self._segs:
            if kind == "joint":
                qc[sc] = q[sq]
                continue
            x = q[sq]
            nrm = float(np.linalg.norm(x[-4:]))
            if not abs(nrm - 1.0) <= 1e-6:
                raise ValueError(f"joint '{name}': the quaternion {x[-4:].tolist()} is not of "
                                 f"unit norm (|q| = {nrm:.6g})")
            T = np.eye(4)
            T[:3, :3] = quat_to_matrix(*(x[-4:] / nrm))
            if kind == "floating":
                T[:3, 3] = x[:3]
            B[sc.start] = B[sc.start] @ T
        return B, qc

    def multipliers(self, q_full, qd_full, qdd_full, f_ext=None):
        """λ (m,), the minimum-norm solution of K_dᵀ λ = τ_tree,d at a full-coordinate motion in
        the group layout (as :meth:`.robot.ClosedLoopRobot.multipliers`): the tree's τ on the
        chart centred at q_full, where the chart's rates are φ̇ = v, φ̈ = v̇ − J̇b v.

        Args:
            q_full, qd_full, qdd_full: (nq_full,), (nv_full,), (nv_full,) (a floating base:
                its 7 / 6 entries in front).
            f_ext: as :meth:`Robot.inverse_dynamics`.
        Returns:
            λ (m,), the rows of ``loop_rows``.
        """
        nb, vb = (7, 6) if self._c.floating_base else (0, 0)
        qj = self._qfull(q_full)
        v = [np.asarray(x, dtype=float) for x in (qd_full, qdd_full)]
        for x, nm in zip(v, ("qd_full", "qdd_full")):
            if x.shape != (vb + self.nv_full,) or not np.isfinite(x).all():
                raise ValueError(f"{nm} must be {vb + self.nv_full} finite numbers, got shape "
                                 f"{x.shape}")
        v, a = v
        a = a.copy()
        for _, kind, sc, _ in self._segs:
            if kind != "joint":
                vg = v[vb:][sc]
                a[vb:][sc] -= _jb_rate(kind, vg) @ vg
        kin, qc = self._kin_at(qj)
        full = self._c.full_robot
        t = type(full)(kin.model, full.data.kmax).inverse_dynamics(
            np.r_[np.asarray(q_full)[:nb], qc], v, a, f_ext)
        K = kin.residual_jacobian(qc)[1]
        dep = self._c._dep
        return np.linalg.lstsq(K[:, dep].T, t[vb:][dep], rcond=None)[0]

    def _kin_at(self, q):
        """(LoopKinematics of the chart centred at q, q's chart coordinates)."""
        B, qc = self._chart_at(q)
        return self._kin(B), qc

    # ------------------------------------------------------------------ calls
    def _qa(self, q):
        """The actuated joint positions of an actuated-coordinate q, or None if malformed."""
        try:
            q = np.asarray(q, dtype=float)
        except (TypeError, ValueError):
            return None
        off = 7 if self._c.floating_base else 0
        if q.shape != (off + self._c.n,) or not np.isfinite(q).all():
            return None
        return q[off:]

    def _rename(self, msg):
        """An error message of the chart's ClosedLoopRobot with each chart joint named by its
        spherical/free joint."""
        for chart, g in self._chart_of.items():
            msg = msg.replace(f"'{chart}'", f"'{g}'")
        for g, _, _, _ in self._groups:  # its chart joints listed one after the other
            while f"'{g}', '{g}'" in msg:
                msg = msg.replace(f"'{g}', '{g}'", f"'{g}'")
        return msg

    def _walk(self, qa):
        """Continuation of the assembly to the actuated ``qa`` along a straight line,
        re-centring on the way; True when it arrives."""
        c = self._c
        start = c._last[c._act].copy()
        for steps in (8, 64):
            try:
                for s in range(1, steps + 1):
                    self._c.expand(start + (qa - start) * (s / steps))
                    self._recentre()
                return True
            except ValueError:
                continue
        return False

    def _run(self, name, q, args, kw, batch_ndim=2):
        """``inner.name(*args, **kw)`` at a regular chart: batches row by row, a failed
        assembly retried by continuation, a call ending beyond :data:`RECENTRE` repeated on the
        re-centred chart."""
        out = kw.pop("out", None)
        if np.ndim(q) == batch_ndim:
            if kw.get("f_ext") is not None:
                raise ValueError("f_ext is not supported with batch inputs")
            res = np.array([self._run(name, r[0], r, dict(kw), batch_ndim)
                            for r in zip(*args)])
            return _fill(out, res)
        try:
            res = getattr(self._c, name)(*args, **kw)
        except ValueError as e:
            qa = self._qa(q)
            if qa is None or not self._walk(qa):
                raise ValueError(self._rename(str(e))) from None
            res = getattr(self._c, name)(*args, **kw)
        if self._recentre():
            res = getattr(self._c, name)(*args, **kw)
        return _fill(out, res)

    def inverse_dynamics(self, q, qd, qdd, f_ext=None, out=None):
        """As :meth:`.robot.ClosedLoopRobot.inverse_dynamics`."""
        return self._run("inverse_dynamics", q, (q, qd, qdd), {"f_ext": f_ext, "out": out})

    def forward_dynamics(self, q, qd, tau, f_ext=None, out=None, method="lagrange"):
        """As :meth:`.robot.ClosedLoopRobot.forward_dynamics`. With ``method="dca"`` the
        chart's massless links get a ghost inertia (:data:`~.hdca.GHOST` × the largest body's)
        in the divide-and-conquer assembly, which then serves as the preconditioner of an
        iterative refinement against the exact RNEA residual, run to convergence (rounding)."""
        return self._run("forward_dynamics", q, (q, qd, tau),
                         {"f_ext": f_ext, "out": out, "method": method})

    def mass_matrix(self, q, out=None):
        """As :meth:`.robot.ClosedLoopRobot.mass_matrix`."""
        return self._run("mass_matrix", q, (q,), {"out": out})

    def gravity_torques(self, q, out=None):
        """As :meth:`.robot.ClosedLoopRobot.gravity_torques`."""
        return self._run("gravity_torques", q, (q,), {"out": out})

    def coriolis_matrix(self, q, qd, out=None):
        """As :meth:`.robot.ClosedLoopRobot.coriolis_matrix`."""
        return self._run("coriolis_matrix", q, (q, qd), {"out": out}, batch_ndim=-1)

    def mass_matrix_derivative(self, q, qd, out=None):
        """As :meth:`.robot.ClosedLoopRobot.mass_matrix_derivative`."""
        return self._run("mass_matrix_derivative", q, (q, qd), {"out": out}, batch_ndim=-1)

    def constraint_forces(self, q, qd, qdd, f_ext=None):
        """As :meth:`.robot.ClosedLoopRobot.constraint_forces` (the loops' wrenches do not
        depend on the tree's coordinates)."""
        return self._run("constraint_forces", q, (q, qd, qdd), {"f_ext": f_ext}, batch_ndim=-1)

    def torque_derivatives(self, qs, method="recursive", out=None, *, f_ext=None):
        """As :meth:`.robot.ClosedLoopRobot.torque_derivatives` (a floating base: the pair
        (q, vs))."""
        if isinstance(qs, tuple):
            q0 = qs[0] if len(qs) == 2 else None
            return self._run("torque_derivatives", q0, (qs,),
                             {"method": method, "out": out, "f_ext": f_ext}, batch_ndim=-1)
        q0 = qs[0] if np.ndim(qs) == 2 else None
        if np.ndim(qs) == 3:
            if f_ext is not None:
                raise ValueError("f_ext is not supported with batch inputs")
            return _fill(out, np.array([self.torque_derivatives(x, method) for x in qs]))
        return self._run("torque_derivatives", q0, (qs,),
                         {"method": method, "out": out, "f_ext": f_ext}, batch_ndim=-1)

    def expand(self, qs, q_guess=None):
        """Full coordinates in the group layout (``full_layout``) of actuated positions or of an
        actuated jet.

        Args:
            qs: (n,) actuated positions (a floating base: (7 + n,) with the base pose), or
                (k+1, n) rows q_a, q_a′, …, q_a^(k) of the actuated joints.
            q_guess: (nq_full,) start of Newton in the group layout (a floating base: its 7
                entries in front, ignored); default the last assembly, so a trajectory stays on
                its assembly branch (initially ``q_assembled``). The chart is re-centred there.
        Returns:
            (nq_full,) (a floating base: (7 + nq_full,)) for positions; for a jet the pair
            ``(q (nq_full,), vs (k, nv_full))``: the configuration and the rows v, v′, …,
            v^(k−1) (spherical/free joints: ω, (v, ω) in the child frame and their derivatives).
        """
        if q_guess is not None:
            self._c = self._inner(*self._chart_at(self._qfull(q_guess, "q_guess")))
        if np.ndim(qs) == 2:
            X = self._run("expand", qs[0], (qs,), {}, batch_ndim=-1)
            return self._group_q(X[0]), self._group_v(X)
        x = self._run("expand", qs, (qs,), {}, batch_ndim=-1)
        if self._c.floating_base:
            return np.r_[x[:7], self._group_q(x[7:])]
        return self._group_q(x)

    def _simulate_loops(self, duration, *, method=None, q0=None, qd0=None, tau=None, dt=0.01,
                        **options):
        """:func:`~.simulate.simulate_loops` for this robot: ``method="lagrange"`` over one
        output interval at a time, each started from the actuated state on the branch of the
        last (the state re-assembled at every output instant), the chart re-centred between
        intervals; the results in the group layout."""
        from .simulate import simulate_loops
        if method is None:
            method = "lagrange"
        if method == "hdca":
            raise ValueError(self._no_dca("simulate method 'hdca'"))
        duration, dt = float(duration), float(dt)
        if not (np.isfinite(duration) and duration >= 0 and np.isfinite(dt) and dt > 0):
            raise ValueError("duration must be >= 0 and dt > 0 (finite)")
        fb, act = self._c.floating_base, self._c.actuated_index
        nb, vb = (7, 6) if fb else (0, 0)
        if callable(tau):
            user = tau

            def tau(t, qf, vf):  # noqa: F811 — the user's torque law sees group coordinates
                return user(t0 + t, *self._group_state(qf, vf))
        self._c = self._inner(*self._chart_at(self._q_asm))  # q0 on q_assembled's branch
        N = int(round(duration / dt))
        rows, t0, nfev, wall, charts, qa, qda = [], 0.0, 0, 0.0, 0, q0, qd0
        for k in range(max(N, 1)):
            r = simulate_loops(self._c, dt if N else 0.0, method=method, q0=qa, qd0=qda,
                               tau=tau, dt=dt, **options)
            nfev, wall = nfev + r.nfev, wall + r.wall_time
            charts += r.meta.get("charts", 0)
            for i in range(0 if k == 0 else 1, len(r.t)):
                rows.append(((k + i) * dt if N else 0.0,) + self._group_state(r.q[i], r.qd[i])
                            + (r.residual[i], r.velocity_residual[i], r.energy[i],
                               r.meta["momentum"][i] if fb else None))
            qe, ve = r.q[-1], r.qd[-1]
            qa, qda = np.r_[qe[:nb], qe[nb + act]], np.r_[ve[:vb], ve[vb + act]]
            self._c._q0 = qe[nb:].copy()
            self._c._last = qe[nb:]
            self._recentre()
            t0 = (k + 1) * dt
        t, q, v, res, vres, E, mom = (np.array(x) for x in zip(*rows))
        meta = {"charts": charts, "recentrings": self.recentrings}
        if fb:
            meta["momentum"] = mom
        return type(r)(t, q, v, res, vres, E, nfev, wall, method, self.full_joint_names,
                       np.asarray(act), meta)

    def _group_state(self, qf, vf):
        """A full (chart) state → (q, v) in the group layout (a floating base's in front)."""
        nb, vb = (7, 6) if self._c.floating_base else (0, 0)
        q = np.r_[qf[:nb], self._group_q(qf[nb:])]
        v = np.r_[vf[:vb], self._group_v(np.stack([qf[nb:], vf[vb:]]))[0]]
        return q, v

    def _no_dca(self, what):
        g, kind, _, _ = self._groups[0]
        return (f"{what}: the divide-and-conquer assembly needs every body's inertia positive "
                f"definite, and the {kind} joint '{g}' is built of massless chart links; use "
                "method='lagrange' (the same constrained dynamics)")

    # ------------------------------------------------------------------ description
    def __getattr__(self, name):
        if name.startswith("_") or not hasattr(ClosedLoopRobot, name):
            raise AttributeError(name)
        if name not in _CHART:  # the actuated joints, the loops, limits, masses
            return getattr(self._c, name)
        g, kind, _, _ = self._groups[0]
        raise NotImplementedError(f"{name} is not available with the {kind} joint '{g}' inside "
                                  "the tree of a closed-loop robot (LieClosedLoopRobot)")

    def __repr__(self):
        return (f"LieClosedLoopRobot('{self._c.model.name}', n={self._c.n} actuated, "
                f"joints={list(self._c.joint_names)}, loops={list(self._c.loop_names)}, "
                f"lie_joints={self.lie_joints})")

    def copy(self):
        """An independent robot on the same model (own workspaces, own chart)."""
        r = LieClosedLoopRobot(self._orig, None, _inner=self._c.copy())
        r._q_asm = self._q_asm
        return r

    @property
    def actuated_chosen(self) -> bool:
        """Whether the package chose the actuated joints (a LoopWarning named them)."""
        return self._c.actuated_chosen

    @property
    def model(self):
        """The spanning tree's model with each spherical/free joint as its chart at the URDF
        zero (its joints the chart joints ``<name>_rx``, …): names, masses, limits; not the
        coordinates of this robot's full vectors (``full_layout``)."""
        return self._orig.model

    @property
    def lie_joints(self):
        """Joint name → ``"spherical"`` | ``"floating"``, in joint order."""
        return {name: kind for name, kind, _, _ in self._groups}

    def full_layout(self):
        """Each joint of the spanning tree in order: ``(name, kind, q slice, v slice)`` of the
        full coordinates (kind ``"joint"``, ``"spherical"`` or ``"floating"``; a floating
        base's 7 / 6 entries come first and are not listed)."""
        return [(name, kind, sq, sc) for name, kind, sc, sq in self._segs]

    @property
    def full_joint_names(self):
        """The spanning tree's joints in order (a spherical/free joint once)."""
        return tuple(s[0] for s in self._segs)

    @property
    def dependent_joint_names(self):
        dep = set(int(i) for i in self._c._dep)
        return tuple(name for name, kind, sc, _ in self._segs
                     if kind != "joint" or sc.start in dep)

    @property
    def nq_full(self) -> int:
        return self._nqf

    @property
    def nv_full(self) -> int:
        return len(self._B0)

    @property
    def n_full(self) -> int:
        """= ``nv_full``, the number of velocity coordinates of the tree's joints."""
        return len(self._B0)

    @property
    def actuated_index(self):
        """Columns of the actuated joints in the full velocities (the ``v`` slices)."""
        return self._c.actuated_index

    @property
    def actuated_q_index(self):
        """Columns of the actuated joints in the full configuration (the ``q`` slices)."""
        q_of = {sc.start: sq.start for _, _, sc, sq in self._segs}
        return np.array([q_of[int(i)] for i in self._c.actuated_index], dtype=np.intp)

    @property
    def q_assembled(self):
        """The assembled configuration found at load, (nq_full,) group coordinates."""
        return self._q_asm.copy()

    def _qfull(self, q_full, name="q_full"):
        off = 7 if self._c.floating_base else 0
        q = np.asarray(q_full, dtype=float)
        if q.shape != (off + self._nqf,) or not np.isfinite(q).all():
            raise ValueError(f"{name} must be {off + self._nqf} finite numbers (the group "
                             f"layout, full_layout()), got shape {q.shape}")
        return q[off:]

    def loop_residual(self, q_full):
        """h at a full configuration in the group layout (as
        :meth:`.robot.ClosedLoopRobot.loop_residual`)."""
        kin, qc = self._kin_at(self._qfull(q_full))
        return kin.residual(qc)

    def constraint_jacobian(self, q_full):
        """K (m, nv_full) (a floating base: 6 zero columns first): the columns of the
        spherical/free joints act on ω, (v, ω) in the child frame."""
        kin, qc = self._kin_at(self._qfull(q_full))
        K = kin.residual_jacobian(qc)[1]
        if self._c.floating_base:
            K = np.hstack([np.zeros((K.shape[0], 6)), K])
        return K

