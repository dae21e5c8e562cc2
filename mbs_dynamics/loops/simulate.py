"""Simulation of a closed-loop mechanism in the full coordinates of its spanning tree.

* ``method="hdca"``: Hamilton's equations of seed 002 (state q, augmented momenta P; velocity
  constraints exact by construction, :mod:`.hdca`), the initial P = M q̇₀ (σ = 0, seed 002 §2.1);
* ``method="lagrange"``: the index-1 acceleration-level equations (state q, q̇, :mod:`.lagrange`)
  with Baumgarte stabilisation ``K q̈ = −K̇q̇ − 2α ḣ − β² h`` (α = β = 0: the plain DCA-style
  baseline of the paper).

Integration by scipy's ``solve_ivp`` over output intervals; with ``projection=True`` the state
is projected back onto the constraint manifold at every output instant (Newton on q with
minimum-norm steps; q̇ ← q̇ − K⁺Kq̇ for Lagrange — HDCA's velocities satisfy the constraints by
construction), which holds the position drift at the Newton tolerance. The result reports the
loop residual at position and velocity level and the total energy at every output instant.

A floating base (:class:`~.robot.FloatingClosedLoopRobot`) is simulated by
:mod:`.floating_sim`: the same two formulations in the free-flyer layout, the base pose on SE(3)
in a re-centred exponential chart (RKMK, seed 003), a projection that also keeps the total
momentum, and the world momentum over time in ``meta["momentum"]``.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..kernels import lie
from ..kinematics.frames import body_poses
from .hdca import HDCA
from .lagrange import acceleration as lagrange_acc


@dataclass
class LoopSimResult:
    """Time series of a closed-loop simulation (full coordinates).

    Attributes:
        t: (N+1,) output instants [s]; q, qd: (N+1, n_full) positions and velocities.
        residual: (N+1,) max |h(q)| (position-level closure violation) [m or rad].
        velocity_residual: (N+1,) max |E_ℓᵀ(V_b − V_a)|, the relative twist of the loop frames
            in the constrained directions (velocity level; = K q̇ on the manifold — on a floating
            base max |K q̇_joints|, the exact ḣ).
        energy: (N+1,) kinetic + potential energy [J] (conservative when tau is None).
        nfev: right-hand-side evaluations; wall_time: integration wall-clock time [s].
        full_joint_names, actuated: the column names and the actuated joints' indices (of the
            joints; a floating base's q, qd have its 7 / 6 columns in front).
        meta: a floating base's ``momentum`` (N+1, 6) (world, linear and angular about the
            origin) and ``charts`` (re-centrings of the base's exponential chart).
    """

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    residual: np.ndarray
    velocity_residual: np.ndarray
    energy: np.ndarray
    nfev: int
    wall_time: float
    method: str
    full_joint_names: tuple
    actuated: np.ndarray
    meta: dict = field(default_factory=dict)


def energy(robot, q, v):
    """T + V: ½ q̇ᵀMq̇ − Σ m_i gᵀ c_i (c_i the body COMs in the world)."""
    full = robot.full_robot
    T = 0.5 * v @ full.mass_matrix(q) @ v
    model = full.model
    C = body_poses(model, q)[:model.n]
    I = model.inertias
    m = I[:, 3, 3]
    mc = lie.first_moment(I)
    pw = np.einsum("nij,nj->ni", C[:, :3, :3], mc) + m[:, None] * C[:, :3, 3]
    return float(T - model.gravity @ pw.sum(0))


def _vec(x, n, name):
    try:
        a = np.asarray(x, dtype=float)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{name} must be {n} numbers (the actuated joints)") from None
    if a.shape != (n,):
        raise ValueError(f"{name} has shape {a.shape}, expected ({n},) (the actuated joints)")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} contains NaN or inf")
    return a


_SCIPY_METHODS = ("RK45", "RK23", "DOP853", "Radau", "BDF", "LSODA")


def _baumgarte(b):
    try:
        alpha, beta = (float(x) for x in b)
    except (TypeError, ValueError):
        raise ValueError("baumgarte must be a pair (alpha, beta) of numbers") from None
    if not (np.isfinite(alpha) and np.isfinite(beta) and alpha >= 0 and beta >= 0):
        raise ValueError(f"baumgarte (alpha, beta) must be finite and >= 0, got {b!r}")
    return alpha, beta


def _hdca(robot):
    h = getattr(robot, "_hdca", None)
    if h is None:
        h = HDCA(robot.model, robot._kin)
        robot._hdca = h
    return h


def simulate_loops(robot, duration, *, method=None, q0=None, qd0=None, tau=None, dt=0.01,
                   rtol=1e-8, atol=1e-8, integrator="RK45", projection=True,
                   baumgarte=(0.0, 0.0)):
    """Simulate a ClosedLoopRobot from rest or a given actuated state.

    Args:
        duration: simulated time [s]; dt: output (and projection) interval [s].
        method: ``"hdca"`` (default) or ``"lagrange"`` — with spherical or free joints in the
            tree (:class:`~.lie.LieClosedLoopRobot`) ``"lagrange"`` only (the default there),
            integrated one output interval at a time on a re-centred chart, the results in
            the group layout.
        q0, qd0: actuated initial positions / velocities (default: the assembled configuration,
            rest); expanded to full coordinates on the assembly branch of ``q_assembled``. On a
            floating base (7 + n,) = (x, y, z, qx, qy, qz, qw, actuated joints) with a unit
            quaternion and (6 + n,) = (base linear, angular velocity in the base frame, actuated
            rates) (default: the base at the origin, at rest).
        tau: None (no actuation: a conservative mechanism), an (n,) constant actuated torque or
            ``tau(t, q_full, qd_full) -> (n,)`` (a floating base is unactuated).
        rtol, atol, integrator: scipy ``solve_ivp`` settings.
        projection: project onto the constraint manifold at every output instant.
        baumgarte: (α, β) for ``method="lagrange"``.
    Returns:
        :class:`LoopSimResult` (a floating base: q (N+1, 7 + n_full), qd (N+1, 6 + n_full),
        ``meta["momentum"]`` the total (linear, angular) momentum in the world frame).
    """
    try:
        from scipy.integrate import solve_ivp
    except ImportError:  # pragma: no cover
        raise ImportError("simulating closed loops needs scipy (pip install scipy)") from None
    if hasattr(robot, "_simulate_loops"):  # spherical/free joints in the tree (.lie)
        return robot._simulate_loops(duration, method=method, q0=q0, qd0=qd0, tau=tau, dt=dt,
                                     rtol=rtol, atol=atol, integrator=integrator,
                                     projection=projection, baumgarte=baumgarte)
    if method is None:
        method = "hdca"
    if method not in ("hdca", "lagrange"):
        raise ValueError(f"method must be 'hdca' or 'lagrange', got {method!r}")
    if isinstance(integrator, str) and integrator not in _SCIPY_METHODS:
        raise ValueError(f"integrator must be one of scipy's solve_ivp methods {_SCIPY_METHODS} "
                         f"(a closed-loop robot's full coordinates; a floating base's pose is "
                         f"integrated on SE(3) by the same method in an exponential chart), got "
                         f"{integrator!r}")
    duration, dt = float(duration), float(dt)
    if not (np.isfinite(duration) and duration >= 0 and np.isfinite(dt) and dt > 0):
        raise ValueError("duration must be >= 0 and dt > 0 (finite)")
    alpha, beta = _baumgarte(baumgarte)
    if method == "hdca":
        try:
            _hdca(robot)
        except ValueError as e:  # a body without a positive definite inertia
            raise ValueError(str(e).replace("use method='aba'", "simulate with "
                                            "method='lagrange'")) from None
    if robot.floating_base:
        from .floating_sim import simulate_floating
        return simulate_floating(robot, duration, method=method, q0=q0, qd0=qd0, tau=tau, dt=dt,
                                 rtol=rtol, atol=atol, integrator=integrator,
                                 projection=projection, baumgarte=(alpha, beta),
                                 result_type=LoopSimResult,
                                 hdca=_hdca(robot) if method == "hdca" else None)
    n, nf = robot.n, robot.n_full
    act = robot.actuated_index
    qa0 = robot.q_assembled[act] if q0 is None else _vec(q0, n, "q0")
    qda0 = np.zeros(n) if qd0 is None else _vec(qd0, n, "qd0")
    X0 = robot.expand(np.stack([qa0, qda0]), q_guess=robot.q_assembled)
    q, v = X0[0].copy(), X0[1].copy()
    kin = robot._kin
    try:
        h = _hdca(robot)
    except ValueError:  # "lagrange" on a tree with massless bodies (a spherical joint's chart)
        h = None

    def torque(t, qf, vf):
        tf = np.zeros(nf)
        if tau is None:
            return tf
        ta = tau(t, qf, vf) if callable(tau) else tau
        ta = np.asarray(ta, float)
        if ta.shape != (n,) or not np.all(np.isfinite(ta)):
            raise ValueError(f"tau must give ({n},) finite actuated torques at t = {t:g}")
        tf[act] = ta
        return tf

    nfev = [0]

    if method == "hdca":
        def f(t, x):
            nfev[0] += 1
            qq, P = x[:nf], x[nf:]
            qd, sig, st = h.velocity(qq, P)
            return np.r_[qd, h.momentum_rate(st, qd, sig, torque(t, qq, qd))]
        x = np.r_[q, h.momentum(q, v)]
    else:
        def f(t, x):
            nfev[0] += 1
            qq, vv = x[:nf], x[nf:]
            a = lagrange_acc(robot, qq, vv, torque(t, qq, vv), alpha=alpha, beta=beta)
            return np.r_[vv, a]
        x = np.r_[q, v]

    N = int(round(duration / dt))
    ts = np.arange(N + 1) * dt
    Q = np.empty((N + 1, nf))
    V = np.empty((N + 1, nf))
    res, vres, E = np.empty(N + 1), np.empty(N + 1), np.empty(N + 1)
    wall = 0.0

    def record(k, x):
        qq = x[:nf]
        if method == "hdca":
            vv = h.velocity(qq, x[nf:])[0]
        else:
            vv = x[nf:]
        Q[k], V[k] = qq, vv
        res[k] = np.abs(kin.residual(qq)).max()
        vres[k] = (h.velocity_violation(qq, vv) if h is not None else
                   np.abs(kin.residual_jacobian(qq)[1] @ vv).max(initial=0.0))
        E[k] = energy(robot, qq, vv)

    if not projection:  # one integration over the whole span (the paper's setting)
        t0 = time.perf_counter()
        sol = solve_ivp(f, (0.0, ts[-1]), x, method=integrator, rtol=rtol, atol=atol, t_eval=ts)
        wall = time.perf_counter() - t0
        if not sol.success or not np.all(np.isfinite(sol.y)):
            raise ValueError(f"integration failed: {sol.message}")
        for k in range(N + 1):
            record(k, sol.y[:, k])
        return LoopSimResult(ts, Q, V, res, vres, E, nfev[0], wall, method,
                             robot.full_joint_names, act)
    record(0, x)
    for k in range(N):
        t0 = time.perf_counter()
        sol = solve_ivp(f, (ts[k], ts[k + 1]), x, method=integrator, rtol=rtol, atol=atol)
        if not sol.success or not np.all(np.isfinite(sol.y[:, -1])):
            raise ValueError(f"integration failed at t = {ts[k]:g}: {sol.message}")
        x = sol.y[:, -1].copy()
        if projection:
            qq, err, ok = kin.newton(x[:nf], np.arange(nf), 1e-13)
            x[:nf] = qq
            if method == "lagrange":
                K = kin.residual_jacobian(qq)[1]
                vv = x[nf:]
                x[nf:] = vv - np.linalg.lstsq(K, K @ vv, rcond=None)[0]
        wall += time.perf_counter() - t0
        record(k + 1, x)
    return LoopSimResult(ts, Q, V, res, vres, E, nfev[0], wall, method, robot.full_joint_names,
                         act)
