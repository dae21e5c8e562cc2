"""A small built-in simulator of the same model: rigid, series-elastic (SEA) or variable-stiffness
(VSA) joints, in closed loop with any Python controller.

Plant (doc/math.md, "Flatness feedforward"; Spong's reduced flexible-joint model):

* rigid: ``M(q) q̈ + c(q, q̇) + g(q) = τ`` — the controller returns the joint torque ``τ``;
* SEA:  ``M(q) q̈ + c + g = τ_e``, ``τ_e = K (θ − q)``, ``B θ̈ + D_m θ̇ + τ_e = τ_m`` — the
  controller returns the motor torque ``τ_m``; ``θ`` is the motor position reflected to the
  joint side (:class:`mbs_dynamics.actuators.SEA`);
* VSA:  the same with ``τ_e = φ(θ − q, σ)`` and the actuator's constant ``σ``
  (:class:`mbs_dynamics.actuators.VSA`).

The link accelerations come from the O(n) articulated-body algorithm (:mod:`mbs_dynamics._aba`).

Integration: the classical fourth-order Runge–Kutta method with a fixed step (global error
O(h⁴); E. Hairer, S. P. Nørsett, G. Wanner, *Solving Ordinary Differential Equations I*, §II.1).
The controller is sampled like a digital controller: it is called at ``t_k = k dt`` with the state
at ``t_k`` and its output is held constant over ``[t_k, t_k + dt)`` (zero-order hold); the plant
may take ``substeps`` RK4 steps of ``dt / substeps`` inside each control period (useful for stiff
springs: RK4 is stable for ``ω h ≲ 2.8``). Because the input is constant on each step, RK4's order
is not reduced by the hold. With ``τ = 0`` and no dissipation the total energy is conserved to
the integrator's accuracy (``test/sim/test_sim.py``). Joint limits are not modelled.

For SEA the whole RK4 step is one compiled call (:func:`mbs_dynamics._aba.rk4_sea`), as it is for
the rigid plant (:func:`mbs_dynamics._aba.rk4_rigid`); the VSA spring law is evaluated in NumPy.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from ..kernels import _aba

__all__ = ["simulate", "Plant", "FloatingPlant", "SimState", "SimResult", "quat_from_matrix"]


class SimState:
    """What the controller sees at a control instant (read-only views; copy what you keep).

    Attributes:
        t: time [s].
        q, qd: (n,) link positions and velocities.
        theta, thetad: (n,) motor positions and velocities (joint side), or None (rigid).
    """

    __slots__ = ("t", "q", "qd", "theta", "thetad")

    def __init__(self, t, q, qd, theta=None, thetad=None):
        self.t, self.q, self.qd, self.theta, self.thetad = t, q, qd, theta, thetad

    def __repr__(self):
        return f"SimState(t={self.t:g}, q={self.q}, qd={self.qd})"


@dataclass
class SimResult:
    """Time series of a simulation, one row per control instant ``t_k = k dt``, k = 0..N.

    Attributes:
        t: (N+1,) time [s].
        q, qd, qdd: (N+1, n) link positions, velocities, accelerations (q̈ under that row's
            command).
        command: (N+1, n) what the controller returned at ``t_k`` (τ for rigid, τ_m for SEA/VSA).
        theta, thetad: (N+1, n) motor positions and velocities, or None (rigid).
        tau_e: (N+1, n) torque on the links: τ (rigid) or the spring torque (SEA/VSA).
        compute_time: (N+1,) wall-clock time of each controller call [s].
        joint_names: the robot's joint names (column order).
        actuator: ``'rigid'``, ``'sea'`` or ``'vsa'``.
        dt: control period [s]; substeps: RK4 steps per period.
    """

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray
    command: np.ndarray
    tau_e: np.ndarray
    compute_time: np.ndarray
    joint_names: tuple
    actuator: str
    dt: float
    substeps: int
    theta: np.ndarray | None = None
    thetad: np.ndarray | None = None
    meta: dict = field(default_factory=dict)

    def to_csv(self, path, extra=None):
        """Write the time series as CSV (header: t, then ``<column>_<joint>``).

        Args:
            path: file path.
            extra: optional dict name → (N+1, n) array of further columns (e.g. the reference).
        """
        cols = [("q", self.q), ("qd", self.qd), ("qdd", self.qdd), ("command", self.command),
                ("tau_e", self.tau_e)]
        if self.theta is not None:
            cols += [("theta", self.theta), ("thetad", self.thetad)]
        cols += list((extra or {}).items())
        names = list(self.joint_names)
        base = {len(names) + 7: ["x", "y", "z", "qx", "qy", "qz", "qw"],
                len(names) + 6: ["vx", "vy", "vz", "wx", "wy", "wz"]}
        header = ["t"] + [f"{c}_{j}" for c, a in cols
                          for j in (base.get(a.shape[1], []) if a.shape[1] != len(names)
                                    else []) + names]
        data = np.column_stack([self.t] + [a for _, a in cols] + [self.compute_time])
        header.append("compute_time")
        np.savetxt(path, data, delimiter=",", header=",".join(header), comments="", fmt="%.10g")


def _vec(x, n, name, default):
    if x is None:
        return np.array(default, dtype=float)
    a = np.array(x, dtype=float)
    if a.shape != (n,):
        raise ValueError(f"{name} has shape {a.shape}, expected ({n},)")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} contains NaN or inf")
    return a


def _kind(actuator):
    if actuator is None or actuator == "rigid":
        return "rigid"
    from ..control.actuators import SEA, VSA
    if isinstance(actuator, SEA):
        return "sea"
    if isinstance(actuator, VSA):
        return "vsa"
    raise ValueError(f"actuator must be None, an actuators.SEA or an actuators.VSA, "
                     f"got {type(actuator).__name__}")


def _param(a, n, name, positive):
    a = np.asarray(a, dtype=float)
    a = np.full(n, float(a[0])) if a.shape == (1,) else a
    if a.shape != (n,):
        raise ValueError(f"actuator {name} has shape {a.shape}, expected ({n},)")
    if positive and not np.all(a > 0):
        raise ValueError(f"actuator {name} must be > 0 for simulation (got {a.tolist()})")
    return np.ascontiguousarray(a)


def _check_command(u, n, t, what=""):
    u = np.ascontiguousarray(u, dtype=float)
    if u.shape != (n,):
        raise ValueError(f"command has shape {u.shape} at t = {t:g} s, expected ({n},){what}")
    if not np.all(np.isfinite(u)):
        raise ValueError(f"command contains NaN or inf at t = {t:g} s")
    return u


class Plant:
    """The simulated robot: its state and one fixed-step advance per control period.

    Used by :func:`simulate` and by the ``sim_node`` (:mod:`mbs_dynamics.ros.sim_node`).

    Args:
        robot: a :class:`mbs_dynamics.Robot` (gravity as loaded).
        actuator: None (rigid), an :class:`~mbs_dynamics.actuators.SEA` or a
            :class:`~mbs_dynamics.actuators.VSA` (motor inertia must be > 0).
        dt: control period [s]; the command is held over it.
        substeps: RK4 steps per control period (≥ 1).
        q0, qd0: (n,) initial link state (default: zeros).
        theta0, thetad0: (n,) initial motor state (default: the static spring equilibrium
            ``τ_e(θ0 − q0) = Q_grav(q0)``, i.e. ``θ0 = q0 + K⁻¹ Q_grav(q0)``, and ``θ̇0 = q̇0``).
        fext_body: optional constant (n, 6) body wrenches ``(f, m)`` (force, moment; rows follow
            ``robot.link_names``, each in its link = body frame) acting on the bodies.

    Attributes:
        t: simulated time [s]; x: (2, n) rows q, q̇ (rigid) or (4, n) rows q, q̇, θ, θ̇;
        q, qd, theta, thetad: views of the rows of x (theta, thetad None when rigid);
        qdd, tau_e: (n,) link accelerations and link torques of the last :meth:`evaluate`.
    """

    def __init__(self, robot, actuator=None, dt=1e-3, substeps=1, q0=None, qd0=None,
                 theta0=None, thetad0=None, fext_body=None):
        n = self.n = robot.n
        self.kind = kind = _kind(actuator)
        dt = float(dt)
        if not (dt > 0 and math.isfinite(dt)):
            raise ValueError(f"dt must be a positive number of seconds, got {dt}")
        substeps = int(substeps)
        if substeps < 1:
            raise ValueError(f"substeps must be >= 1, got {substeps}")
        self.dt, self.substeps, self.h = dt, substeps, dt / substeps
        self.robot = robot
        if getattr(robot, "floating_base", False):
            raise ValueError("this simulator integrates joint coordinates (RK4) of fixed-base "
                             "robots; the robot has a floating base")
        from ..robot import Robot
        # a plain Robot runs whole RK4 steps in compiled code; any other robot object (a
        # MimicRobot) through its public forward_dynamics
        self._data = robot.model.create_data(0) if type(robot) is Robot else None
        self._use_fext = fext_body is not None
        fext = (np.zeros((n, 6)) if fext_body is None
                else np.ascontiguousarray(fext_body, dtype=float))
        if fext.shape != (n, 6) or not np.all(np.isfinite(fext)):
            raise ValueError(f"fext_body must be a finite ({n}, 6) array")
        self._fext_pub = fext  # public (f, m); the compiled kernels take (m, f)
        self._fext = np.ascontiguousarray(np.concatenate([fext[:, 3:], fext[:, :3]], axis=1))
        q0 = _vec(q0, n, "q0", np.zeros(n))
        qd0 = _vec(qd0, n, "qd0", np.zeros(n))
        nx = 2 if kind == "rigid" else 4
        self.x = np.zeros((nx, n))
        self.x[0], self.x[1] = q0, qd0
        self.actuator = actuator
        if kind != "rigid":
            self._B = _param(actuator.motor_inertia, n, "motor_inertia", True)
            self._Dm = _param(actuator.motor_damping, n, "motor_damping", False)
            if kind == "sea":
                self._K = _param(actuator.stiffness, n, "stiffness", True)
            else:
                self._sigma = _param(actuator.sigma, n, "sigma", False)
                self._spring = actuator.spring
            if theta0 is None:
                g = robot.inverse_dynamics(q0, np.zeros(n), np.zeros(n))
                theta0 = q0 + (g / self._K if kind == "sea"
                               else self._spring.invert(g, self._sigma))
            self.x[2] = _vec(theta0, n, "theta0", None)
            self.x[3] = _vec(thetad0, n, "thetad0", qd0)
        self.t = 0.0
        self.qdd = np.zeros(n)
        self.tau_e = np.zeros(n)
        self._stages = np.zeros((5, nx, n))
        self._xb = np.zeros((nx, n))

    @property
    def q(self):
        return self.x[0]

    @property
    def qd(self):
        return self.x[1]

    @property
    def theta(self):
        return self.x[2] if self.kind != "rigid" else None

    @property
    def thetad(self):
        return self.x[3] if self.kind != "rigid" else None

    def _fd(self, q, qd, tau, out):
        """Link accelerations into ``out`` (the compiled ABA, or the robot's own method)."""
        if self._data is not None:
            _aba.forward_dynamics(self._data, q, qd, tau,
                                  self._fext if self._use_fext else None, out)
        else:
            f_ext = None
            if self._use_fext:
                f_ext = {ln: w for ln, w in zip(self.robot.link_names, self._fext_pub)
                         if w.any()}
            out[...] = self.robot.forward_dynamics(q, qd, tau, f_ext=f_ext or None)

    def spring_law(self, delta):
        """τ_e(θ − q) of the elastic joints (SEA: K δ; VSA: φ(δ, σ))."""
        if self.kind == "sea":
            return self._K * delta
        return self._spring.torque(delta, self._sigma)

    def spring_torque(self, x=None):
        """τ_e of the elastic joints at state x (default: the current state); None if rigid."""
        x = self.x if x is None else x
        if self.kind == "sea":
            return self._K * (x[2] - x[0])
        if self.kind == "vsa":
            return np.asarray(self._spring.torque(x[2] - x[0], self._sigma), dtype=float)
        return None

    def _command(self, u):
        return _check_command(u, self.n, self.t)

    def evaluate(self, u):
        """Link torque ``tau_e`` and acceleration ``qdd`` at the current state under command u."""
        u = self._command(u)
        te = u if self.kind == "rigid" else np.ascontiguousarray(self.spring_torque())
        self.tau_e[:] = te
        x = self.x
        try:
            self._fd(x[0], x[1], self.tau_e, self.qdd)
        except ValueError:
            raise ValueError(f"the state is not finite at t = {self.t:g} s") from None
        return self.qdd

    def step(self, u):
        """Advance one control period ``dt`` with the command u (τ or τ_m) held."""
        u = self._command(u)
        xa, xb = self.x, self._xb
        d, h, stages = self._data, self.h, self._stages
        fx = self._fext if self._use_fext else None
        for s in range(self.substeps):
            if d is not None and self.kind == "rigid":
                st = _aba.rk4_rigid(d, xa, u, fx, h, stages, xb)
            elif d is not None and self.kind == "sea":
                st = _aba.rk4_sea(d, xa, u, self._K, self._B, self._Dm, fx, h, stages, xb)
            else:
                st = _rk4_python(self._fd, xa, u,
                                 None if self.kind == "rigid" else self.spring_law,
                                 getattr(self, "_B", None), getattr(self, "_Dm", None), h,
                                 stages, xb)
            if st:
                raise ValueError(
                    f"the simulation diverged (non-finite state) near t = "
                    f"{self.t + (s + 1) * h:g} s: the controller is sampled and held for dt = "
                    f"{self.dt:g} s, so a stiff controller needs a smaller dt (substeps refine "
                    "only the plant); or the commands are too large")
            xa, xb = xb, xa
        if xa is not self.x:          # odd number of substeps: the result sits in the spare
            self.x[...] = xa
        self.t += self.dt

    def hold(self):
        """Advance the time one period with every joint braked: positions kept, velocities 0."""
        self.x[1] = 0.0
        if self.kind != "rigid":
            self.x[3] = 0.0
        self.t += self.dt


def quat_from_matrix(R):
    """Unit quaternion (x, y, z, w) of a rotation matrix (Shepperd's method, w ≥ 0)."""
    tr = R[0, 0] + R[1, 1] + R[2, 2]
    k = int(np.argmax([tr, R[0, 0], R[1, 1], R[2, 2]]))
    if k == 0:
        w = 0.5 * math.sqrt(1.0 + tr)
        x, y, z = ((R[2, 1] - R[1, 2]) / (4 * w), (R[0, 2] - R[2, 0]) / (4 * w),
                   (R[1, 0] - R[0, 1]) / (4 * w))
    elif k == 1:
        x = 0.5 * math.sqrt(1.0 + 2 * R[0, 0] - tr)
        w, y, z = ((R[2, 1] - R[1, 2]) / (4 * x), (R[0, 1] + R[1, 0]) / (4 * x),
                   (R[0, 2] + R[2, 0]) / (4 * x))
    elif k == 2:
        y = 0.5 * math.sqrt(1.0 + 2 * R[1, 1] - tr)
        w, x, z = ((R[0, 2] - R[2, 0]) / (4 * y), (R[0, 1] + R[1, 0]) / (4 * y),
                   (R[1, 2] + R[2, 1]) / (4 * y))
    else:
        z = 0.5 * math.sqrt(1.0 + 2 * R[2, 2] - tr)
        w, x, y = ((R[1, 0] - R[0, 1]) / (4 * z), (R[0, 2] + R[2, 0]) / (4 * z),
                   (R[1, 2] + R[2, 1]) / (4 * z))
    q = np.array([x, y, z, w])
    return q if w >= 0 else -q


class FloatingPlant:
    """A robot with a floating base, integrated on a Lie group (seed 003): the base pose on SE(3)
    or SO(3)×R³ by an RKMK scheme of :mod:`mbs_dynamics.lie_integrators`, the joint coordinates
    and all velocities alongside; rigid joints, the base unactuated (the command is the joint
    torque), the command held over each control period.

    State: q = (x, y, z, qx, qy, qz, qw, joints) (nq,), v = (linear, angular velocity of the base
    in its frame, joint rates) (nv,) — the layout of :class:`mbs_dynamics.Robot`.
    """

    def __init__(self, robot, integrator="rkmk4-se3", dt=1e-3, substeps=1, q0=None, qd0=None,
                 fext_body=None):
        from .lie_integrators import get_integrator
        self.robot = robot
        self.n, self.nq, self.nv = robot.n, robot.nq, robot.nv
        self.kind = "rigid"
        self.integrator = get_integrator(integrator)
        dt = float(dt)
        if not (dt > 0 and math.isfinite(dt)):
            raise ValueError(f"dt must be a positive number of seconds, got {dt}")
        if int(substeps) < 1:
            raise ValueError(f"substeps must be >= 1, got {substeps}")
        self.dt, self.substeps, self.h = dt, int(substeps), dt / int(substeps)
        if fext_body is not None:
            raise ValueError("fext_body is not supported with a floating base (use the "
                             "controller's command for the joints)")
        q0 = _vec(q0, self.nq, "q0", np.r_[np.zeros(6), 1.0, np.zeros(self.n)])
        quat = q0[3:7]
        if abs(np.linalg.norm(quat) - 1.0) > 1e-6:
            raise ValueError(f"q0: the base quaternion {quat.tolist()} is not a unit quaternion")
        x, y_, z, w = quat / np.linalg.norm(quat)
        self._R = np.array([[[1 - 2 * (y_ * y_ + z * z), 2 * (x * y_ - z * w), 2 * (x * z + y_ * w)],
                             [2 * (x * y_ + z * w), 1 - 2 * (x * x + z * z), 2 * (y_ * z - x * w)],
                             [2 * (x * z - y_ * w), 2 * (y_ * z + x * w), 1 - 2 * (x * x + y_ * y_)]]])
        self._p = q0[None, :3].copy()
        self._y = np.r_[q0[7:], _vec(qd0, self.nv, "qd0", np.zeros(self.nv))]
        self._tau = np.zeros(self.nv)
        self.t = 0.0
        self.qdd = np.zeros(self.nv)
        self.tau_e = np.zeros(self.n)

    @property
    def q(self):
        return np.r_[self._p[0], quat_from_matrix(self._R[0]), self._y[:self.n]]

    @property
    def qd(self):
        return self._y[self.n:].copy()

    def _rhs(self, t, R, p, y):
        n = self.n
        q = np.r_[p[0], quat_from_matrix(R[0]), y[:n]]
        v = y[n:]
        vd = self.robot.forward_dynamics(q, v, self._tau)
        if self.integrator.group == "se3":
            xi = np.r_[v[3:6], v[0:3]]                 # body twist (ω, v)
        else:
            xi = np.r_[v[3:6], R[0] @ v[0:3]]          # hybrid (ω, ṗ)
        return xi[None], np.r_[v[6:], vd]

    def _command(self, u):
        return _check_command(u, self.n, self.t, " (the joints; the floating base is unactuated)")

    def evaluate(self, u):
        self.tau_e[:] = self._command(u)
        self._tau[6:] = self.tau_e
        self.qdd[:] = self.robot.forward_dynamics(self.q, self.qd, self._tau)
        return self.qdd

    def step(self, u):
        self._tau[6:] = self._command(u)
        R, p, y = self._R, self._p, self._y
        for s in range(self.substeps):
            R, p, y = self.integrator.step(self._rhs, self.t + s * self.h, self.h, R, p, y)
            if not (np.isfinite(R).all() and np.isfinite(p).all() and np.isfinite(y).all()):
                raise ValueError(f"the simulation diverged (non-finite state) near t = "
                                 f"{self.t + (s + 1) * self.h:g} s: reduce dt")
        self._R, self._p, self._y = R, p, y
        self.t += self.dt

    def momentum(self):
        """Spatial momentum of the whole robot in the world frame, (linear, angular about the
        world origin) (6,): the base rows of M v, moved from the base frame to the world."""
        h = self.robot.mass_matrix(self.q)[:6] @ self.qd
        R, p = self._R[0], self._p[0]
        lin = R @ h[:3]
        return np.r_[lin, R @ h[3:] + np.cross(p, lin)]

    def energy(self):
        """Kinetic ½ vᵀMv plus the potential −Σ m_i g·c_i of every body (world frame) [J]."""
        q, v = self.q, self.qd
        kin = 0.5 * v @ self.robot.mass_matrix(q) @ v
        return kin + _potential(self.robot, q)


def _potential(robot, q):
    """−Σ m_i g · c_i over the bodies (the poses the last kernel call left in robot.data)."""
    m = robot.model
    T = robot.data.arrays["T"]
    fb = 1 if m.floating_base else 0
    ine = ([m.base_inertia] if fb else []) + list(m.inertias)
    C = []
    E = 0.0
    for b in range(len(ine)):
        Rb, pb = T[b, :9].reshape(3, 3), T[b, 9:]
        if b >= fb:
            par = int(m.parent[b - fb]) + fb
            if par >= 0:
                Rp, pp = C[par]
                Rb, pb = Rp @ Rb, Rp @ pb + pp
        C.append((Rb, pb))
        mass = ine[b][3, 3]
        if mass > 0:
            hx = ine[b][:3, 3:]
            c = np.array([hx[2, 1], hx[0, 2], hx[1, 0]]) / mass
            E -= mass * m.gravity @ (Rb @ c + pb)
    return E


def simulate(robot, controller, duration, dt, actuator=None, q0=None, qd0=None, theta0=None,
             thetad0=None, substeps=1, fext_body=None, integrator=None, **loop_options):
    """Simulate the robot in closed loop with ``controller``.

    Args:
        robot: the plant, a :class:`mbs_dynamics.Robot` (gravity as loaded).
        controller: ``controller(t, state) -> (n,)`` command: the joint torque τ (rigid) or the
            motor torque τ_m (SEA/VSA); ``state`` is a :class:`SimState` of read-only views.
            Called at every ``t_k = k dt``, k = 0..N (the last call is recorded, not applied).
        duration: simulated time [s]; N = round(duration / dt) steps.
        dt: control period [s] (> 0).
        actuator, q0, qd0, theta0, thetad0, substeps, fext_body: see :class:`Plant`.
        integrator: ``"rk4"`` (fixed bases, the default there) or, for a floating base, a
            Lie-group scheme of seed 003 — ``"rkmk4-se3"`` (the default), ``"rkmk4-so3r3"``,
            ``"rkmk2-se3"``, ``"rkmk2-so3r3"`` (:class:`FloatingPlant`; q (nq,), v (nv,), the
            command is the joints' torque; ``meta`` of the result holds the world momentum and
            the energy at every instant).

    Returns:
        :class:`SimResult`.

    Raises:
        ValueError: bad arguments, a command of the wrong shape or not finite, or a state that
            became non-finite (the time is named).

    A :class:`~mbs_dynamics.ClosedLoopRobot` is integrated in the full coordinates of its
    spanning tree by :func:`mbs_dynamics.loops.simulate.simulate_loops` (``method="hdca"`` or
    ``"lagrange"``, ``rtol``, ``atol``, ``projection``, ... as keywords, ``integrator`` one of
    scipy's ``solve_ivp`` methods, default ``"RK45"``; ``controller(t, state)``
    returns the actuated torques, ``state.q``/``state.qd`` actuated — on a floating base
    (:class:`~mbs_dynamics.loops.robot.FloatingClosedLoopRobot`) the base pose and velocity in
    front, (7 + n,) / (6 + n,), the base unactuated, its pose integrated on SE(3),
    :mod:`mbs_dynamics.loops.floating_sim`); it returns a ``LoopSimResult`` (loop residual and
    energy over time; a floating base's world momentum in ``meta["momentum"]``).
    """
    if hasattr(robot, "loop_residual"):
        if integrator is not None:  # scipy's solve_ivp method of the closed-loop integration
            loop_options["integrator"] = integrator
        return _simulate_loops(robot, controller, duration, dt, actuator, q0, qd0, loop_options)
    if loop_options:
        raise TypeError(f"simulate() got unexpected keyword arguments {sorted(loop_options)}")
    if getattr(robot, "lie_joints", None):  # spherical / free joints inside the tree
        bad = ("actuator" if actuator not in (None, "rigid") else
               f"integrator={integrator!r}" if integrator not in (None, "rk4") else
               "fext_body" if fext_body else None)
        if bad:
            name, kind = next(iter(robot.lie_joints.items()))
            raise ValueError(f"simulate: joint '{name}' ({kind}): a robot with spherical or "
                             f"floating joints is simulated with rigid joints, the chart RK4 "
                             f"(integrator None or 'rk4') and no fext_body; got {bad}")
        return _simulate_lie(robot, controller, duration, dt, q0, qd0, substeps)
    if getattr(robot, "floating_base", False):
        if actuator is not None and actuator != "rigid":
            raise ValueError("a floating-base robot is simulated with rigid joints (actuator None)")
        if integrator in (None, "rk4"):
            if integrator == "rk4":
                raise ValueError("integrator 'rk4' integrates joint coordinates of a fixed base; "
                                 "a floating base needs a Lie-group scheme: 'rkmk4-se3', "
                                 "'rkmk4-so3r3', 'rkmk2-se3' or 'rkmk2-so3r3'")
            integrator = "rkmk4-se3"
        return _simulate_floating(robot, controller, duration, dt, integrator, q0, qd0, substeps,
                                  fext_body)
    if integrator not in (None, "rk4"):
        raise ValueError(f"integrator {integrator!r} is a Lie-group scheme for floating bases; "
                         "a fixed-base robot uses 'rk4'")
    plant = Plant(robot, actuator, dt, substeps, q0, qd0, theta0, thetad0, fext_body)
    duration = float(duration)
    if not (duration >= 0 and math.isfinite(duration)):
        raise ValueError(f"duration must be a finite number of seconds >= 0, got {duration}")
    n, dt = plant.n, plant.dt
    N = int(round(duration / dt))
    nx = plant.x.shape[0]
    X = np.zeros((N + 1, nx, n))  # the state history, rows q, q̇ (, θ, θ̇)
    cmd = np.zeros((N + 1, n))
    qdd = np.zeros((N + 1, n))
    tau_e = np.zeros((N + 1, n))
    ctime = np.zeros(N + 1)
    for k in range(N + 1):
        X[k] = plant.x
        # the controller sees read-only views of this row
        v = [X[k, r] for r in range(nx)]
        for a in v:
            a.setflags(write=False)
        t = k * dt
        plant.t = t
        state = SimState(t, *v)
        t0 = time.perf_counter()
        u = controller(t, state)
        ctime[k] = time.perf_counter() - t0
        cmd[k] = u if np.shape(u) == (n,) else plant._command(u)
        qdd[k] = plant.evaluate(cmd[k])
        tau_e[k] = plant.tau_e
        if k < N:
            plant.step(cmd[k])
    kind = plant.kind
    return SimResult(
        t=np.arange(N + 1) * dt, q=X[:, 0].copy(), qd=X[:, 1].copy(), qdd=qdd, command=cmd,
        tau_e=tau_e, compute_time=ctime, joint_names=tuple(robot.joint_names), actuator=kind,
        dt=dt, substeps=plant.substeps,
        theta=X[:, 2].copy() if nx == 4 else None, thetad=X[:, 3].copy() if nx == 4 else None)


def _simulate_lie(robot, controller, duration, dt, q0=None, qd0=None, substeps=1):
    """Spherical / free joints inside the tree (a ``LieJointRobot``): RK4 in the chart re-centred at every step (``chart_step``), so each
    joint's configuration stays on its group. Rigid joints, ``q`` (nq,) in the
    group layout (default ``robot.neutral()``), ``qd`` (nv,); the controller returns (nv,)."""
    nq, nv = robot.nq, robot.nv
    dt, duration = float(dt), float(duration)
    if not (dt > 0 and math.isfinite(dt)):
        raise ValueError(f"dt must be a finite number of seconds > 0, got {dt}")
    if not (duration >= 0 and math.isfinite(duration)):
        raise ValueError(f"duration must be a finite number of seconds >= 0, got {duration}")
    if not (isinstance(substeps, int) and substeps >= 1):
        raise ValueError(f"substeps must be an integer >= 1, got {substeps!r}")
    q = robot.neutral() if q0 is None else np.array(q0, dtype=float)
    v = np.zeros(nv) if qd0 is None else np.array(qd0, dtype=float)
    if q.shape != (nq,) or v.shape != (nv,):
        raise ValueError(f"q0 must have shape ({nq},) and qd0 ({nv},), got {q.shape}, {v.shape}")
    N = int(round(duration / dt))
    Q, V, A = np.zeros((N + 1, nq)), np.zeros((N + 1, nv)), np.zeros((N + 1, nv))
    cmd, ctime = np.zeros((N + 1, nv)), np.zeros(N + 1)
    h = dt / substeps
    for k in range(N + 1):
        Q[k], V[k] = q, v
        qr, vr = q.copy(), v.copy()
        qr.setflags(write=False)
        vr.setflags(write=False)
        t = k * dt
        t0 = time.perf_counter()
        u = np.asarray(controller(t, SimState(t, qr, vr)), dtype=float)
        ctime[k] = time.perf_counter() - t0
        if u.shape != (nv,) or not np.all(np.isfinite(u)):
            raise ValueError(f"the controller returned shape {u.shape} or non-finite values at "
                             f"t = {t:g} s; expected ({nv},) finite joint torques")
        cmd[k] = u
        A[k] = robot.forward_dynamics(q, v, u)
        if k < N:
            for _ in range(substeps):
                q, v = robot.chart_step(q, v, u, h)
    return SimResult(t=np.arange(N + 1) * dt, q=Q, qd=V, qdd=A, command=cmd, tau_e=cmd.copy(),
                     compute_time=ctime, joint_names=tuple(robot.joint_names), actuator="rigid",
                     dt=dt, substeps=substeps, meta={"lie_joints": robot.lie_joints})


def _simulate_loops(robot, controller, duration, dt, actuator, q0, qd0, options):
    from ..loops.simulate import simulate_loops
    if actuator not in (None, "rigid"):
        raise ValueError("a ClosedLoopRobot is simulated with rigid joints (actuator None)")
    act = robot.actuated_index
    aq = getattr(robot, "actuated_q_index", act)  # spherical/free joints: q columns differ
    if robot.floating_base:  # the controller sees (base, actuated joints): (7 + n,), (6 + n,)
        iq, iv = np.r_[np.arange(7), 7 + aq], np.r_[np.arange(6), 6 + act]
    else:
        iq, iv = aq, act

    def tau(t, qf, vf):
        v = vf[iv] if vf is not None else np.zeros(len(iv))
        return controller(t, SimState(t, qf[iq], v))

    return simulate_loops(robot, duration, q0=q0, qd0=qd0, tau=tau, dt=dt, **options)


def _simulate_floating(robot, controller, duration, dt, integrator, q0, qd0, substeps,
                       fext_body):
    plant = FloatingPlant(robot, integrator, dt, substeps, q0, qd0, fext_body)
    duration = float(duration)
    if not (duration >= 0 and math.isfinite(duration)):
        raise ValueError(f"duration must be a finite number of seconds >= 0, got {duration}")
    n, nq, nv, dt = plant.n, plant.nq, plant.nv, plant.dt
    N = int(round(duration / dt))
    Q, V, A = np.zeros((N + 1, nq)), np.zeros((N + 1, nv)), np.zeros((N + 1, nv))
    cmd, ctime = np.zeros((N + 1, n)), np.zeros(N + 1)
    mom, energy = np.zeros((N + 1, 6)), np.zeros(N + 1)
    for k in range(N + 1):
        Q[k], V[k] = plant.q, plant.qd
        mom[k], energy[k] = plant.momentum(), plant.energy()
        q, v = Q[k].copy(), V[k].copy()
        q.setflags(write=False)
        v.setflags(write=False)
        t = k * dt
        plant.t = t
        t0 = time.perf_counter()
        u = controller(t, SimState(t, q, v))
        ctime[k] = time.perf_counter() - t0
        cmd[k] = plant._command(u)
        A[k] = plant.evaluate(cmd[k])
        if k < N:
            plant.step(cmd[k])
    return SimResult(t=np.arange(N + 1) * dt, q=Q, qd=V, qdd=A, command=cmd, tau_e=cmd.copy(),
                     compute_time=ctime, joint_names=tuple(robot.joint_names), actuator="rigid",
                     dt=dt, substeps=plant.substeps,
                     meta={"floating_base": True, "integrator": plant.integrator.name,
                           "momentum": mom, "energy": energy})


def _rk4_python(fd, x, tau, spring_torque, B, Dm, h, stages, out):
    """One RK4 step with the link accelerations from ``fd(q, q̇, τ, out)`` (any robot object,
    e.g. a :class:`~mbs_dynamics.mimic.MimicRobot`): rigid (x rows q, q̇; ``spring_torque``
    None) or elastic (rows q, q̇, θ, θ̇; ``spring_torque(θ − q)`` the link torque)."""
    w = (0.0, 0.5, 0.5, 1.0)
    y = stages[4]
    for s in range(4):
        y[...] = x if s == 0 else x + w[s] * h * stages[s - 1]
        k = stages[s]
        k[0] = y[1]
        if spring_torque is None:
            te = tau
        else:
            te = np.ascontiguousarray(spring_torque(y[2] - y[0]), dtype=float)
            k[2] = y[3]
            k[3] = (tau - Dm * y[3] - te) / B
        try:
            fd(y[0].copy(), y[1].copy(), te, k[1])
        except ValueError:
            return 2
    out[...] = x + h / 6.0 * (stages[0] + 2.0 * stages[1] + 2.0 * stages[2] + stages[3])
    return 0 if np.all(np.isfinite(out)) else 2
