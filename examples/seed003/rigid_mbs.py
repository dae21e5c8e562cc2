"""Rigid bodies connected by spherical joints in absolute coordinates (seed 003 §5), index-1 form.

Each body i has its reference frame at its centre of mass, configuration ``C_i = (R_i, p_i)``,
mass ``m_i`` and inertia ``Θ_i`` about the COM. A spherical joint k ties the point ``s_a`` of body
``a`` (in a's COM frame) to the point ``s_b`` of body ``b`` (or to the fixed point ``s_b`` of the
ground when ``b is None``): ``g_k = p_a + R_a s_a − (p_b + R_b s_b) = 0`` (seed 003 eq. 38, 43).

The motion equations are the paper's eq. (3), solved for the accelerations at every stage:

    [[M, Jᵀ], [J, 0]] [V̇; λ] = [Q; η],    J V̇ = η  (the acceleration constraints)

in one of the two velocity representations of seed 003 §2:

* ``"se3"``: body-fixed twists ``V_i = (ω_i, v_i)``, ``v_i = R_iᵀ ṗ_i`` (eq. 6); Newton–Euler at
  the COM ``Θ ω̇ + ω × Θω = M_b``, ``m (v̇ + ω × v) = R_iᵀ F^s`` (eq. 40/53);
  ``J_i = σ[−R_i s̃_i, R_i]``, ``η = −Σ σ R_i ω̃_i (v_i + ω̃_i s_i)``.
* ``"so3r3"``: hybrid velocities ``V_i = (ω_i, ṗ_i)`` (eq. 20); ``m v̇^s = F^s`` (eq. 42/64);
  ``J_i = σ[−R_i s̃_i, I]``, ``η = −Σ σ R_i ω̃_i ω̃_i s_i``.

(σ = +1 for body a, −1 for body b.) For a joint to the ground the paper writes the constraint in
the body frame (eq. 39), i.e. premultiplied by R_aᵀ; that changes neither the kernel of J nor V̇.
The state for :mod:`mbs_dynamics.sim.lie_integrators` is ``R (nb,3,3), p (nb,3), y = (V_1..V_nb)``;
``xi = V`` in both representations (the body-fixed twist for SE(3), the hybrid velocity for
SO(3)×R³), which is exactly what each group's integrator expects.
"""
from __future__ import annotations

import numpy as np


def cross(a, b):
    """a × b for 3-vectors (np.cross costs ~10 µs per call on 3-vectors)."""
    a0, a1, a2 = a
    b0, b1, b2 = b
    return np.array([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0])


def skew(x):
    return np.array([[0.0, -x[2], x[1]], [x[2], 0.0, -x[0]], [-x[1], x[0], 0.0]])


def box_inertia(m, a, b, c):
    """Inertia [kg m²] about the COM of a box with side lengths a, b, c [m] along x, y, z."""
    return m / 12.0 * np.diag([b * b + c * c, a * a + c * c, a * a + b * b])


class SphericalMBS:
    """Bodies + spherical joints, index-1 right-hand sides for both configuration spaces.

    Args:
        masses: (nb,) [kg].
        inertias: (nb, 3, 3) about the COM, body frame [kg m²].
        joints: list of ``(a, s_a, b, s_b)``; ``b = None`` for the ground (then ``s_b`` is the
            fixed point in the inertial frame) [m].
        gravity: (3,) [m/s²] in the inertial frame.
    """

    def __init__(self, masses, inertias, joints, gravity=(0.0, 0.0, 0.0)):
        self.m = np.asarray(masses, float)
        self.Theta = np.asarray(inertias, float)
        self.nb = len(self.m)
        self.joints = [(a, np.asarray(sa, float), b, np.asarray(sb, float))
                       for a, sa, b, sb in joints]
        self.nj = len(self.joints)
        self.g = np.asarray(gravity, float)
        n = 6 * self.nb
        self.Mdiag = np.zeros((n, n))
        for i in range(self.nb):
            self.Mdiag[6 * i:6 * i + 3, 6 * i:6 * i + 3] = self.Theta[i]
            self.Mdiag[6 * i + 3:6 * i + 6, 6 * i + 3:6 * i + 6] = self.m[i] * np.eye(3)
        self.S = [(skew(sa), None if b is None else skew(sb)) for a, sa, b, sb in self.joints]

    # -- right-hand sides ------------------------------------------------------------------------
    def _solve(self, Q, J, eta):
        n, k = 6 * self.nb, 3 * self.nj
        A = np.zeros((n + k, n + k))
        A[:n, :n] = self.Mdiag
        A[:n, n:] = J.T
        A[n:, :n] = J
        return np.linalg.solve(A, np.concatenate([Q, eta]))[:n]

    def rhs(self, group):
        """``rhs(t, R, p, y) -> (xi, ydot)`` of the index-1 system (eq. 3) for ``group``."""
        se3 = group == "se3"
        nb, n = self.nb, 6 * self.nb

        def f(t, R, p, y):
            V = y.reshape(nb, 6)
            w, v = V[:, :3], V[:, 3:]
            Q = np.empty(n)
            for i in range(nb):
                Q[6 * i:6 * i + 3] = -cross(w[i], self.Theta[i] @ w[i])
                if se3:
                    Q[6 * i + 3:6 * i + 6] = self.m[i] * (R[i].T @ self.g - cross(w[i], v[i]))
                else:
                    Q[6 * i + 3:6 * i + 6] = self.m[i] * self.g
            J = np.zeros((3 * self.nj, n))
            eta = np.zeros(3 * self.nj)
            for k, ((a, sa, b, sb), (Sa, Sb)) in enumerate(zip(self.joints, self.S)):
                rows = slice(3 * k, 3 * k + 3)
                for sigma, i, s, St in ((1.0, a, sa, Sa), (-1.0, b, sb, Sb)):
                    if i is None:
                        continue
                    J[rows, 6 * i:6 * i + 3] = -sigma * R[i] @ St
                    wi, vi = w[i], v[i]
                    if se3:
                        J[rows, 6 * i + 3:6 * i + 6] = sigma * R[i]
                        eta[rows] -= sigma * R[i] @ cross(wi, vi + cross(wi, s))
                    else:
                        J[rows, 6 * i + 3:6 * i + 6] = sigma * np.eye(3)
                        eta[rows] -= sigma * R[i] @ cross(wi, cross(wi, s))
            Vd = self._solve(Q, J, eta)
            return V, Vd
        return f

    # -- helpers ---------------------------------------------------------------------------------
    def initial_state(self, group, R0, p0, omega0, pdot0):
        """``y0`` from body-fixed angular velocities ω (nb,3) and COM velocities ṗ (nb,3)."""
        R0 = np.asarray(R0, float)
        V = np.zeros((self.nb, 6))
        V[:, :3] = omega0
        V[:, 3:] = np.einsum("nji,nj->ni", R0, pdot0) if group == "se3" else pdot0
        return V.reshape(-1)

    def joint_violation(self, R, p):
        """(nj,) norms ``|g_k|`` [m] of the position constraints."""
        out = np.empty(self.nj)
        for k, (a, sa, b, sb) in enumerate(self.joints):
            pb = sb if b is None else p[b] + R[b] @ sb
            out[k] = np.linalg.norm(p[a] + R[a] @ sa - pb)
        return out

    def com_velocities(self, group, R, y):
        V = y.reshape(self.nb, 6)
        return np.einsum("nij,nj->ni", R, V[:, 3:]) if group == "se3" else V[:, 3:].copy()

    def energy(self, group, R, p, y):
        """Kinetic + gravitational potential energy [J]."""
        V = y.reshape(self.nb, 6)
        T = 0.0
        for i in range(self.nb):
            T += 0.5 * V[i, :3] @ self.Theta[i] @ V[i, :3] + 0.5 * self.m[i] * V[i, 3:] @ V[i, 3:]
        return T - float(np.sum(self.m * (p @ self.g)))


def quat_to_rot(q):
    """Rotation matrix of a (w, x, y, z) quaternion (normalised first)."""
    w, x, y, z = q / np.linalg.norm(q)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def quat_rate(q, w):
    """``q̇ = ½ q ⊗ (0, ω)`` for a body-fixed angular velocity ω."""
    q0, q1, q2, q3 = q
    return 0.5 * np.array([-q1 * w[0] - q2 * w[1] - q3 * w[2],
                           q0 * w[0] + q2 * w[2] - q3 * w[1],
                           q0 * w[1] + q3 * w[0] - q1 * w[2],
                           q0 * w[2] + q1 * w[1] - q2 * w[0]])


def rot_error(R, Rref):
    """Angle [rad] of ``R_refᵀ R``."""
    c = 0.5 * (np.trace(Rref.T @ R) - 1.0)
    s = 0.5 * np.linalg.norm([(Rref.T @ R)[2, 1] - (Rref.T @ R)[1, 2],
                              (Rref.T @ R)[0, 2] - (Rref.T @ R)[2, 0],
                              (Rref.T @ R)[1, 0] - (Rref.T @ R)[0, 1]])
    return float(np.arctan2(s, c))


def observed_order(h, err):
    """Least-squares slope of log(err) against log(h)."""
    h, err = np.log(np.asarray(h, float)), np.log(np.asarray(err, float))
    return float(np.polyfit(h, err, 1)[0])


def integrator_cost(nb, order=4, n=1000, repeats=3):
    """CPU seconds per step of the RKMK schemes alone (a constant right-hand side), per group.

    CPU time (``time.process_time``), the two groups interleaved and the minimum over
    ``repeats`` taken, so that other processes on a shared machine bias the ratio less.
    """
    import time
    from mbs_dynamics.sim.lie_integrators import INTEGRATORS
    xi = np.tile([0.3, -0.2, 0.5, 0.1, 0.2, 0.3], (nb, 1))
    yd = np.zeros(6 * nb)

    def rhs(t, R, p, y):
        return xi, yd

    best = {"se3": np.inf, "so3r3": np.inf}
    for _ in range(repeats):
        for group in ("se3", "so3r3"):
            integ = INTEGRATORS[f"rkmk{order}-{group}"]
            t0 = time.process_time()
            integ.integrate(rhs, 0.0, np.tile(np.eye(3), (nb, 1, 1)), np.zeros((nb, 3)),
                            np.zeros(6 * nb), 1e-3, n)
            best[group] = min(best[group], (time.process_time() - t0) / n)
    return best


def plot_sweep(res, path, title, drift, drift_label):
    """PNG of a sweep's result: error and constraint drift vs h, log-log, both schemes."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter
    fig, ax = plt.subplots(1, 2, figsize=(10, 4))
    for group, style in (("se3", "o-"), ("so3r3", "s--")):
        r = res[group]
        ax[0].loglog(r["h"], r["error"], style, label=f"{r['integrator']} (order {r['order']:.2f})")
        ax[1].loglog(r["h"], np.maximum(r["constraint_drift"], 1e-17), style, label=r["integrator"])
    ax[0].set(xlabel="h [s]", ylabel="COM position error [m]", title=f"{title}: error vs h")
    ax[1].set(xlabel="h [s]", ylabel=drift_label, title=f"{title}: {drift} vs h")
    h = np.asarray(res["se3"]["h"])
    e_ref = 0.3 * min(res["se3"]["error"][-1], res["so3r3"]["error"][-1])
    ax[0].loglog(h, e_ref * (h / h[-1]) ** 4, "k:", lw=1, label="∝ h⁴")
    for a in ax:
        a.grid(True, which="both", alpha=0.3)
        a.xaxis.set_minor_formatter(NullFormatter())
        a.set_xticks(h)
        a.set_xticklabels([f"{x:g}" for x in h])
        a.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
