#!/usr/bin/env python3
"""Two interconnected floating bodies of seed 003 §5.3, integrated on SE(3) and on SO(3)×R³.

The two links of the paper's spherical double pendulum (§5.2: boxes a × b × c = 0.2 × 0.1 × 0.05
m along the COM axes) joined by one spherical joint, not connected to the ground, no gravity. The
paper gives no mass for these links; aluminium (2700 kg/m³, as for its heavy top) gives
m = 2.7 kg. Initially both frames are aligned with the inertial frame and the bodies lie along x:
C₁ = (I, (a/2, 0, 0)), C₂ = (I, (3a/2, 0, 0)), the joint at (a, 0, 0); ω₁ = (0, 0, −10) rad/s,
ω₂ = (1, −1, 2π) rad/s (body-fixed). The paper gives no linear velocities; body 1's COM starts as
in the double pendulum it came from (rotating about the removed ground joint at the origin,
ṗ₁ = ω₁ × p₁) and body 2's follows from the joint's velocity constraint.

The absolute-coordinate index-1 system (eq. 3 with the joint rows of eq. 50/53 and 61/64) is
integrated with RKMK4 on SE(3) (body-fixed twists) and on SO(3)×R³ (hybrid velocities) over a
sweep of step sizes: the joint drift ``max_t |g₂|``, the error against a reference, the observed
order, the cost per step. The reference is an independent minimal formulation: the system's COM
moves uniformly, the constraint force is eliminated (λ = −μ d̈, μ = m₁m₂/(m₁+m₂), d = R₁s₁ −
R₂s₂), leaving Euler's equations of the two bodies coupled through a 6×6 mass matrix, with unit
quaternions; SciPy ``solve_ivp`` (DOP853, rtol 1e-12, atol 1e-14).

    python examples/seed003/floating_bodies.py --json [--quick] [--plot FILE.png]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.append(os.path.dirname(os.path.dirname(HERE)))  # a checkout, after any installed package

from rigid_mbs import (SphericalMBS, box_inertia, cross, integrator_cost,  # noqa: E402
                       observed_order, plot_sweep, quat_rate,
                       quat_to_rot, rot_error, skew)
from mbs_dynamics.sim.lie_integrators import INTEGRATORS  # noqa: E402

A, B, C = 0.2, 0.1, 0.05
MASS = 2700.0 * A * B * C            # 2.7 kg
THETA = box_inertia(MASS, A, B, C)
S1 = np.array([A / 2, 0.0, 0.0])     # joint from COM 1, body-1 frame [m]
S2 = np.array([-A / 2, 0.0, 0.0])    # joint from COM 2, body-2 frame [m]
OMEGA0 = np.array([[0.0, 0.0, -10.0], [1.0, -1.0, 2 * np.pi]])


def model():
    return SphericalMBS([MASS, MASS], [THETA, THETA], [(0, S1, 1, S2)])


def initial_conditions():
    """R (2,3,3), p (2,3), body-fixed ω (2,3), COM velocities ṗ (2,3)."""
    R = np.stack([np.eye(3), np.eye(3)])
    p = np.array([[A / 2, 0, 0], [3 * A / 2, 0, 0]])
    pd1 = cross(R[0] @ OMEGA0[0], p[0])
    # joint velocity: ṗ1 + R1 (ω1 × s1) = ṗ2 + R2 (ω2 × s2)
    pd2 = pd1 + R[0] @ cross(OMEGA0[0], S1) - R[1] @ cross(OMEGA0[1], S2)
    return R, p, OMEGA0.copy(), np.stack([pd1, pd2])


def initial(group, mbs):
    R, p, w, pd = initial_conditions()
    return R, p, mbs.initial_state(group, R, p, w, pd)


def reference(times):
    """(R_i(t), p_i(t)) at ``times`` from the minimal quaternion formulation (module docstring)."""
    from scipy.integrate import solve_ivp
    R0, p0, w0, pd0 = initial_conditions()
    M = 2 * MASS
    mu = MASS * MASS / M
    c0 = (MASS * p0[0] + MASS * p0[1]) / M
    cd0 = (MASS * pd0[0] + MASS * pd0[1]) / M
    S1t, S2t = skew(S1), skew(S2)
    Mrot = np.zeros((6, 6))
    Mrot[:3, :3] = THETA
    Mrot[3:, 3:] = THETA

    def f(t, x):
        q1, q2, w1, w2 = x[:4], x[4:8], x[8:11], x[11:14]
        R1, R2 = quat_to_rot(q1), quat_to_rot(q2)
        Amat = np.hstack([-R1 @ S1t, R2 @ S2t])       # d̈ = A ω̇ + b
        b = R1 @ np.cross(w1, np.cross(w1, S1)) - R2 @ np.cross(w2, np.cross(w2, S2))
        gyro = np.r_[np.cross(w1, THETA @ w1), np.cross(w2, THETA @ w2)]
        wd = np.linalg.solve(Mrot + mu * Amat.T @ Amat, -gyro - mu * Amat.T @ b)
        return np.concatenate([quat_rate(q1, w1), quat_rate(q2, w2), wd])

    x0 = np.r_[1.0, 0, 0, 0, 1.0, 0, 0, 0, w0[0], w0[1]]
    sol = solve_ivp(f, (0.0, times[-1]), x0, method="DOP853", rtol=1e-12, atol=1e-14, t_eval=times)
    out = []
    for k, t in enumerate(times):
        R1, R2 = quat_to_rot(sol.y[:4, k]), quat_to_rot(sol.y[4:8, k])
        c = c0 + cd0 * t
        d = R1 @ S1 - R2 @ S2
        out.append((np.stack([R1, R2]), np.stack([c - 0.5 * d, c + 0.5 * d])))  # equal masses
    return out


def run(name, h, T, checkpoints):
    integ = INTEGRATORS[name]
    mbs = model()
    R0, p0, y0 = initial(integ.group, mbs)
    n = int(round(T / h))
    every = {int(round(tc / h)): i for i, tc in enumerate(checkpoints)}
    drift = [0.0, 0.0]  # constraint, relative energy (max over the run)
    states = [None] * len(checkpoints)
    E0 = mbs.energy(integ.group, R0, p0, y0)

    def observe(k, t, R, p, y):
        drift[0] = max(drift[0], float(mbs.joint_violation(R, p)[0]))
        drift[1] = max(drift[1], abs(mbs.energy(integ.group, R, p, y) - E0) / abs(E0))
        if k in every:
            states[every[k]] = (R.copy(), p.copy(), y.copy())

    t0 = time.process_time()
    integ.integrate(mbs.rhs(integ.group), 0.0, R0, p0, y0, h, n, observe=observe)
    cost = (time.process_time() - t0) / max(n, 1)
    return drift, states, cost, mbs


def sweep(hs, T, n_check, order=4):
    checkpoints = np.linspace(0.0, T, n_check + 1)[1:]
    ref = reference(checkpoints)
    out = {}
    for group in ("se3", "so3r3"):
        name = f"rkmk{order}-{group}"
        res = {"integrator": name, "h": [], "constraint_drift": [], "error": [],
               "rotation_error": [], "energy_drift": [], "seconds_per_step": []}
        for h in hs:
            (drift, edrift), states, cost, mbs = run(name, h, T, checkpoints)
            err = max(np.linalg.norm(s[1] - r[1], axis=1).max() for s, r in zip(states, ref))
            rerr = max(rot_error(s[0][i], r[0][i]) for s, r in zip(states, ref) for i in range(2))
            res["h"].append(h)
            res["constraint_drift"].append(drift)
            res["error"].append(float(err))
            res["rotation_error"].append(float(rerr))
            res["energy_drift"].append(float(edrift))
            res["seconds_per_step"].append(cost)
        res["order"] = observed_order(res["h"], res["error"])
        res["order_pairwise"] = [observed_order(res["h"][i:i + 2], res["error"][i:i + 2])
                                 for i in range(len(res["h"]) - 1)]
        out[group] = res
    out["cost_ratio_se3_over_so3r3"] = float(np.median(out["se3"]["seconds_per_step"])
                                             / np.median(out["so3r3"]["seconds_per_step"]))
    ic = integrator_cost(2, order, n=200 if T < 0.5 else 2000, repeats=1 if T < 0.5 else 5)
    out["integrator_seconds_per_step"] = ic
    out["integrator_cost_ratio_se3_over_so3r3"] = float(ic["se3"] / ic["so3r3"])
    out["T"] = T
    out["units"] = {"h": "s", "constraint_drift": "m (max over all steps of |g2|, the joint)",
                    "error": "m (max over checkpoints and bodies of the COM position error)",
                    "rotation_error": "rad",
                    "seconds_per_step": "CPU s per step, incl. the index-1 solve and monitors",
                    "energy_drift": "max over the run of |E - E0| / E0"}
    out["reference"] = ("Minimal form: uniform motion of the system COM, constraint force "
                        "eliminated (lambda = -mu d''), Euler's equations of both bodies coupled "
                        "by a 6x6 mass matrix, unit quaternions; SciPy solve_ivp DOP853, "
                        f"rtol=1e-12, atol=1e-14. Errors are the max over {n_check} checkpoints "
                        "in (0, T].")
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--quick", action="store_true", help="short run, two step sizes (for CI)")
    ap.add_argument("--plot", metavar="FILE", help="write a PNG of error and drift vs h")
    ap.add_argument("--order", type=int, choices=(2, 4), default=4, help="RKMK order")
    a = ap.parse_args(argv)
    if a.quick:
        res = sweep([4e-3, 2e-3], 0.2, 2, a.order)
    else:
        res = sweep([8e-3, 4e-3, 2e-3, 1e-3], 2.0, 10, a.order)
    if a.plot:
        plot_sweep(res, a.plot, "Floating bodies", "joint drift", "max |g2| [m]")
    if a.json:
        print(json.dumps(res))
    else:
        for g in ("se3", "so3r3"):
            r = res[g]
            print(f"{r['integrator']:12s} order {r['order']:.2f}")
            for row in zip(r["h"], r["error"], r["constraint_drift"], r["energy_drift"],
                           r["seconds_per_step"]):
                print("  h=%.1e  error=%.3e m  drift=%.3e m  dE/E=%.2e  %.0f us/step"
                      % (*row[:4], row[4] * 1e6))
        print(f"cost per step SE(3)/SO(3)xR3: {res['cost_ratio_se3_over_so3r3']:.2f} (whole step), "
              f"{res['integrator_cost_ratio_se3_over_so3r3']:.2f} (integrator alone)")
    return res


if __name__ == "__main__":
    main()
