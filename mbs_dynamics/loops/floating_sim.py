"""Simulation of a closed-loop mechanism on a floating base (:class:`FloatingClosedLoopRobot`:
legged robots with parallel ankles or knees, free-flying linkages) in the full coordinates of
its free-flyer spanning tree — q = (x, y, z, qx, qy, qz, qw, joints), v = (base linear, angular
in the base frame, joint rates), Pinocchio's layout.

* ``method="lagrange"``: the index-1 acceleration-level equations with the loop rows
  (zero base columns: a closure constrains relative poses only, h = h(q_joints)),
  ``M v̇ + c = τ + Kᵀλ``, ``K v̇ = −K̇v − 2α ḣ − β² h`` (Baumgarte), range-space solve with the
  minimum-norm λ (:func:`.lagrange.acceleration`); state (base pose, joints, v).
* ``method="hdca"``: Hamilton's equations of seed 002 with the base momentum in the free-flyer
  layout (:meth:`~.hdca.HDCA.momentum_rate`): state (base pose, joints, augmented momenta
  P = M v − K_vᵀσ); P's base rows are the total spatial momentum in the base frame (K_v has
  zero base columns), so loop impulses never change them. HDCA is evaluated with the world
  origin moved to the base (:func:`_at_origin`: its world-frame assembly loses digits far from
  the origin).

**The base on the Lie group** (seed 003 §2, the RKMK idea of :mod:`mbs_dynamics.sim`): the base
pose is C = C₀ exp(ψ̂) in the exponential chart of SE(3) around a pose C₀, and the chart
coordinates ψ (angular first) are integrated with the rest of the state by scipy's adaptive
``solve_ivp`` with ``ψ̇ = dexp⁻¹_{−ψ} V_b`` (V_b = (ω, v) the base's body-fixed twist,
:func:`mbs_dynamics.kernels.lie.se3_dexpinv`). The chart is re-centred (C₀ ← C₀ exp ψ̂, ψ = 0)
at every output instant and whenever |ψ_ω| reaches ``CHART_ANGLE`` rad (a terminal event), far
from dexp⁻¹'s singularity at 2π. R stays exactly orthonormal (Rodrigues), no quaternion
normalisation is needed; the quaternion of q is read from R.

**Projection** (``projection=True``, at every output instant): the joints by Gauss–Newton onto
h(q_joints) = 0 (minimum-norm steps, base pose unchanged), then for Lagrange the velocities by
the mass-metric projection that keeps the total momentum: ``v ← v + M⁻¹Kᵀμ + Sᵀμ_b`` with
``(K M⁻¹ Kᵀ) μ = −K v`` (minimum-norm μ) and ``M_bb μ_b = p_b − (M v)_b`` (p_b the base rows of
Mv before the position step): a constraint impulse is internal, so the projected state has
K v = 0 and the momentum it had. For HDCA P is kept (its base rows are the momentum; the
velocities from P satisfy the constraints by construction). This holds the position drift at
the Newton tolerance (1e-13) over any duration.
"""
from __future__ import annotations

import time

import numpy as np

from ..kernels import lie
from .lagrange import acceleration

CHART_ANGLE = 1.0  # [rad] re-centre the base's exponential chart beyond this rotation


def quat_to_matrix(x):
    """R from (qx, qy, qz, qw) (unit)."""
    qx, qy, qz, qw = x
    return np.array([[1 - 2 * (qy * qy + qz * qz), 2 * (qx * qy - qz * qw), 2 * (qx * qz + qy * qw)],
                     [2 * (qx * qy + qz * qw), 1 - 2 * (qx * qx + qz * qz), 2 * (qy * qz - qx * qw)],
                     [2 * (qx * qz - qy * qw), 2 * (qy * qz + qx * qw), 1 - 2 * (qx * qx + qy * qy)]])


def matrix_to_quat(R, ref=None):
    """(qx, qy, qz, qw) of a rotation matrix (Shepperd's method: the largest of the four
    squares first, no cancellation), the sign chosen to agree with ``ref`` (continuity)."""
    t = np.trace(R)
    d = np.array([R[0, 0], R[1, 1], R[2, 2], t])
    k = int(np.argmax(d))
    if k == 3:
        s = 2.0 * np.sqrt(1.0 + t)
        q = np.array([(R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s,
                      (R[1, 0] - R[0, 1]) / s, 0.25 * s])
    else:
        i, j, l = k, (k + 1) % 3, (k + 2) % 3
        s = 2.0 * np.sqrt(1.0 + R[i, i] - R[j, j] - R[l, l])
        q = np.empty(4)
        q[i] = 0.25 * s
        q[j] = (R[j, i] + R[i, j]) / s
        q[l] = (R[l, i] + R[i, l]) / s
        q[3] = (R[l, j] - R[j, l]) / s
    q /= np.linalg.norm(q)
    if ref is not None and q @ ref < 0:
        q = -q
    return q


def poses(model, q):
    """World poses (4, 4) of the base (first) and of every body of the free-flyer tree."""
    Cb = lie.pose(quat_to_matrix(np.asarray(q[3:7]) / np.linalg.norm(q[3:7])), q[:3])
    C = []
    for i in range(model.n):
        p = int(model.parent[i])
        Ci = model.B[i] @ lie.exp_se3(model.X[i], q[7 + i])
        C.append((Cb if p < 0 else C[p]) @ Ci)
    return [Cb] + C


def energy(robot, q, v):
    """½ vᵀMv − Σ m_i gᵀ c_i over the base and every body [J]."""
    full = robot.full_robot
    model = full.model
    T = 0.5 * v @ full.mass_matrix(q) @ v
    Vg = 0.0
    for C, I in zip(poses(model, q), [model.base_inertia] + list(model.inertias)):
        m = I[3, 3]
        Vg -= model.gravity @ (C[:3, :3] @ lie.first_moment(I) + m * C[:3, 3])
    return float(T + Vg)


def momentum(robot, q, v):
    """Total spatial momentum in the world frame, (linear, angular about the world origin):
    the base rows of M v (the base frame's) moved to the world, as :class:`FloatingPlant`."""
    hb = robot.full_robot.mass_matrix(q)[:6] @ v
    R = quat_to_matrix(np.asarray(q[3:7]) / np.linalg.norm(q[3:7]))
    lin = R @ hb[:3]
    return np.r_[lin, R @ hb[3:] + np.cross(q[:3], lin)]


def _at_origin(q):
    """q with the base at the world origin, for HDCA: its spatial (world-frame) inertias and
    compliances grow with the distance |p| of the bodies from the origin and the assembly loses
    digits with it (measured: the velocity pass of the spatial four-bar 4e-11 at the origin,
    2e-8 at 4 m, 8e-7 at 10 m); the free-flyer quantities (P, v, Ṗ in the base frame) do not
    depend on where the world's origin is (uniform gravity is invariant under translation),
    so every HDCA evaluation uses the world frame translated to the base."""
    q = q.copy()
    q[:3] = 0.0
    return q


def _vec(x, m, name, what):
    try:
        a = np.asarray(x, dtype=float)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{name} must be {m} numbers ({what})") from None
    if a.shape != (m,):
        raise ValueError(f"{name} has shape {a.shape}, expected ({m},) ({what})")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} contains NaN or inf")
    return a


def initial_state(robot, q0, qd0):
    """Full (q, v) from the actuated (7 + n,) / (6 + n,) initial state (defaults: the base at
    the origin, the assembled joints, rest); the quaternion must be unit (|‖q‖ − 1| ≤ 1e-6),
    then normalised."""
    n = robot.n
    if q0 is None:
        q0 = np.r_[np.zeros(6), 1.0, robot.q_assembled[robot.actuated_index]]
    q0 = _vec(q0, 7 + n, "q0", "x y z qx qy qz qw and the actuated joints")
    nq = np.linalg.norm(q0[3:7])
    if not abs(nq - 1.0) <= 1e-6:
        raise ValueError(f"q0: the base quaternion (qx, qy, qz, qw) = {q0[3:7].tolist()} is not "
                         f"a unit quaternion (norm {nq:.6g})")
    qd0 = np.zeros(6 + n) if qd0 is None else _vec(
        qd0, 6 + n, "qd0", "base linear, angular velocity in the base frame and the actuated "
        "joints")
    X = robot.expand(np.stack([q0[7:], qd0[6:]]), q_guess=robot.q_assembled)
    return np.r_[q0[:3], q0[3:7] / nq, X[0]], np.r_[qd0[:6], X[1]]


def simulate_floating(robot, duration, *, method, q0, qd0, tau, dt, rtol, atol, integrator,
                      projection, baumgarte, result_type, hdca=None):
    """:func:`.simulate.simulate_loops` for a FloatingClosedLoopRobot (module docstring);
    ``hdca``: the robot's :class:`~.hdca.HDCA` solver (method "hdca")."""
    from scipy.integrate import solve_ivp
    n, nf = robot.n, robot.n_full
    act = robot.actuated_index
    kin = robot._kin
    full = robot.full_robot
    alpha, beta = baumgarte
    q, v = initial_state(robot, q0, qd0)
    nv = 6 + nf
    hd = hdca if method == "hdca" else None

    def torque(t, qf, vf):
        tf = np.zeros(nv)
        if tau is None:
            return tf
        ta = tau(t, qf, vf) if callable(tau) else tau
        ta = np.asarray(ta, float)
        if ta.shape != (n,) or not np.all(np.isfinite(ta)):
            raise ValueError(f"tau must give ({n},) finite actuated joint torques at t = {t:g} "
                             "(the floating base is unactuated)")
        tf[6 + act] = ta
        return tf

    C0 = lie.pose(quat_to_matrix(q[3:7]), q[:3])
    qref = [q[3:7].copy()]
    nfev = [0]

    def full_q(C, qj):
        qq = matrix_to_quat(C[:3, :3], qref[0])
        return np.r_[C[:3, 3], qq, qj]

    def f(t, x):
        nfev[0] += 1
        psi, qj, w = x[:6], x[6:6 + nf], x[6 + nf:]
        qq = full_q(C0 @ lie.se3_exp(psi), qj)
        if method == "lagrange":
            vv = w
            wd = acceleration(robot, qq, vv, torque(t, qq, vv), alpha=alpha, beta=beta)
        else:
            vv, sig, st = hd.velocity(_at_origin(qq), w)
            wd = hd.momentum_rate(st, vv, sig, torque(t, qq, vv))
        Vb = np.r_[vv[3:6], vv[0:3]]  # the base's body twist, angular first
        return np.r_[lie.se3_dexpinv(-psi) @ Vb, vv[6:], wd]

    def chart(t, x):
        return CHART_ANGLE - np.linalg.norm(x[:3])

    chart.terminal = True
    chart.direction = -1

    x = np.r_[np.zeros(6), q[7:], v if method == "lagrange" else hd.momentum(_at_origin(q), v)]
    N = int(round(duration / dt))
    ts = np.arange(N + 1) * dt
    Q, V = np.empty((N + 1, 7 + nf)), np.empty((N + 1, nv))
    res, vres, E = np.empty(N + 1), np.empty(N + 1), np.empty(N + 1)
    mom = np.empty((N + 1, 6))
    wall, charts = 0.0, 0

    def state(x):
        qq = full_q(C0, x[6:6 + nf])
        vv = x[6 + nf:] if method == "lagrange" else hd.velocity(_at_origin(qq), x[6 + nf:])[0]
        return qq, vv

    def record(k, x):
        qq, vv = state(x)
        Q[k], V[k] = qq, vv
        hq, Kj = kin.residual_jacobian(qq[7:])
        res[k] = np.abs(hq).max(initial=0.0)
        vres[k] = np.abs(Kj @ vv[6:]).max(initial=0.0)
        E[k] = energy(robot, qq, vv)
        mom[k] = momentum(robot, qq, vv)

    record(0, x)
    for k in range(N):
        t0 = time.perf_counter()
        t = ts[k]
        while True:
            sol = solve_ivp(f, (t, ts[k + 1]), x, method=integrator, rtol=rtol, atol=atol,
                            events=chart)
            if sol.status < 0 or not np.all(np.isfinite(sol.y[:, -1])):
                raise ValueError(f"integration failed at t = {t:g}: {sol.message}")
            x = sol.y[:, -1].copy()
            C0 = C0 @ lie.se3_exp(x[:6])  # re-centre the chart
            x[:6] = 0.0
            charts += 1
            qref[0] = matrix_to_quat(C0[:3, :3], qref[0])  # the quaternion's sign: continuous
            if sol.status == 1 and sol.t[-1] < ts[k + 1]:
                t = float(sol.t[-1])
                continue
            break
        if projection:
            qj = x[6:6 + nf]
            if method == "lagrange":
                qq = full_q(C0, qj)
                pb = (full.mass_matrix(qq)[:6] @ x[6 + nf:])
            qj, _, _ = kin.newton(qj, np.arange(nf), 1e-13)
            x[6:6 + nf] = qj
            if method == "lagrange":
                qq = full_q(C0, qj)
                vv = x[6 + nf:]
                M = full.mass_matrix(qq)
                Kj = kin.residual_jacobian(qj)[1]
                K = np.hstack([np.zeros((Kj.shape[0], 6)), Kj])
                MK = np.linalg.solve(M, K.T)
                mu = np.linalg.lstsq(K @ MK, -(K @ vv), rcond=None)[0]
                mub = np.linalg.solve(M[:6, :6], pb - M[:6] @ vv)
                vv = vv + MK @ mu
                vv[:6] += mub
                x[6 + nf:] = vv
        wall += time.perf_counter() - t0
        record(k + 1, x)
    return result_type(ts, Q, V, res, vres, E, nfev[0], wall, method, robot.full_joint_names,
                       act, meta={"floating_base": True, "momentum": mom,
                                  "base_integration": "exponential chart of SE(3) (RKMK), "
                                                      f"re-centred {charts} times",
                                  "charts": charts})
