"""Closed loops (issue 19): CPU-time ratios in one run, ours / peer, per call.

    PYTHONPATH=$PWD python bench/loops.py [--reps 7]

* constrained inverse dynamics ``ClosedLoopRobot.inverse_dynamics`` (actuated q, q̇, q̈: Newton
  assembly from the last configuration + dependent jets + RNEA + projection; the compiled path
  of ``loops/_closed.pyx``) vs Pinocchio's
  equivalent pipeline on the spanning tree, given the FULL motion: ``rnea`` + frame placements
  and LOCAL frame Jacobians of the loop frames + the null-space projection (numpy; the test
  oracle's code). (Pinocchio 4.1's
  ``computeInverseDynamicsConstraintForces`` is the point-contact NCP solver — c_ref, contact
  points — not a loop-closure inverse dynamics, so it is not the peer.)
* forward dynamics ``forward_dynamics(method="lagrange" | "dca")`` vs ``pin.constraintDynamics``
  (ProximalSettings(1e-12, 1e-12, 10)) on the same mechanism and state;
* the same two calls "along a trajectory": every call a new sample of an analytic actuated
  motion at 1 kHz (200 samples in turn: Newton from the previous assembly with its predictor,
  the control-loop case) against the peer on the same samples; the 3-leg delta (hinge closures:
  inverse dynamics only, Pinocchio 4.1 has no 5-D constraint) and the parallelogram arm on a
  floating base (a free-flyer in Pinocchio); ``torque_derivatives`` (τ, τ′, τ″ along the
  trajectory) against the inverse-dynamics peer's τ alone (Pinocchio has no constrained jets);
* HDCA vs the compiled ABA on a tree (arm7) — ``Robot.forward_dynamics(method="dca")``;
* HDCA vs the acceleration-level baseline: one right-hand side of seed 002's cases (``--seed002``:
  only these rows), the compiled momentum level and the NumPy one (the fallback) in the same run.
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time
import warnings

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "test"), os.path.join(ROOT, "test", "loops"),
                os.path.join(ROOT, "examples", "seed002")]
warnings.simplefilter("ignore")

import mbs_dynamics as mbs  # noqa: E402
import loops_mechanisms as lm  # noqa: E402
from test_loops_kinematics import PinLoops  # noqa: E402


def timeit(f, target=0.05):
    n = 1
    while True:
        t0 = time.process_time()
        for _ in range(n):
            f()
        dt = time.process_time() - t0
        if dt > target:
            return dt / n
        n *= 2


def ratio(ours, peer, reps):
    """Median [min–max] of ours/peer over ``reps`` back-to-back pairs (order alternating)."""
    rs, to, tp = [], [], []
    for i in range(reps):
        if i % 2 == 0:
            a = timeit(ours)
            b = timeit(peer)
        else:
            b = timeit(peer)
            a = timeit(ours)
        rs.append(a / b)
        to.append(a)
        tp.append(b)
    return np.median(rs), min(rs), max(rs), np.median(to), np.median(tp)


FLOAT_BASE = ('<link name="base"><inertial><mass value="3"/><inertia ixx="0.05" iyy="0.06" '
              'izz="0.07" ixy="0" ixz="0" iyz="0"/></inertial></link>')


def pin_setup(name, floating=False):
    import pinocchio as pin
    from mbs_dynamics.kernels import lie
    u, loops, act = lm.ALL[name]()
    if floating:
        u = u.replace('<link name="base"/>', FLOAT_BASE)
    r = mbs.load_urdf(u, loops=loops, actuated=act, floating_base=floating)
    pm = pin.buildModelFromXML(u, pin.JointModelFreeFlyer()) if floating else \
        pin.buildModelFromXML(u)
    pd = pm.createData()
    cms = []
    for lp in loops:
        if lp["type"] == "revolute":
            return pin, r, pm, pd, None, None
        def place(link, o):
            fr = pm.frames[pm.getFrameId(link, pin.BODY)]
            o = o or {}
            T = lie.pose(lie.rpy(*o.get("rpy", (0, 0, 0))), o.get("xyz", (0, 0, 0)))
            return fr.parentJoint, fr.placement * pin.SE3(T)
        j1, M1 = place(lp["frame_a"], lp.get("origin_a"))
        j2, M2 = place(lp["frame_b"], lp.get("origin_b"))
        ct = pin.ContactType.CONTACT_3D if lp["type"] == "connect" else \
            pin.ContactType.CONTACT_6D
        cms.append(pin.RigidConstraintModel(ct, pm, j1, M1, j2, M2, pin.ReferenceFrame.LOCAL))
    cds = [c.createData() for c in cms]
    pin.initConstraintDynamics(pm, pd, cms, cds)
    return pin, r, pm, pd, cms, cds


def full_motion(r, q, qd, qdd):
    """(q, v, a) of the spanning tree (a floating base passes its own rows) — the peer's input."""
    if not r.floating_base:
        return r.expand(np.stack([q, qd, qdd]))
    X = r.copy().expand(np.stack([q[7:], qd[6:], qdd[6:]]))
    return np.r_[q[:7], X[0]], np.r_[qd[:6], X[1]], np.r_[qdd[:6], X[2]]


def samples(r, N=200, dt=1e-3):
    """Actuated (q, q̇, q̈) along an analytic motion (test_loops_kinematics.trajectory)."""
    from test_loops_kinematics import trajectory
    out = []
    rng = np.random.default_rng(5)
    qb = np.r_[0.1, -0.2, 0.3, rng.standard_normal(4)]
    qb[3:] /= np.linalg.norm(qb[3:])
    vb, ab = rng.standard_normal((2, 6))

    class J:  # the joints of a floating robot
        n, q_assembled, actuated_index = r.n, r.q_assembled, r.actuated_index
    for k in range(N):
        Q = trajectory(J, k * dt)
        if r.floating_base:
            out.append((np.r_[qb, Q[0]], np.r_[vb, Q[1]], np.r_[ab, Q[2]]))
        else:
            out.append((Q[0], Q[1], Q[2]))
    return out


def cycle(items):
    it = [0]
    n = len(items)

    def nxt():
        i = it[0]
        it[0] = i + 1 if i + 1 < n else 0
        return items[i]
    return nxt


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--seed002", action="store_true",
                    help="only the rows of seed 002's cases (HDCA rhs vs the baseline)")
    a = ap.parse_args(argv)
    rows = []
    cases = [("planar_fourbar", False), ("spatial_fourbar", False), ("two_loop_planar", False),
             ("parallelogram_arm", False), ("delta", False), ("parallelogram_arm", True)]
    if a.seed002:
        cases = []
    for name, floating in cases:
        pin, r, pm, pd, cms, cds = pin_setup(name, floating)
        label = name + (" (floating base)" if floating else "")
        P = PinLoops(*lm.ALL[name]()[:2])
        ob = 6 if floating else 0
        act = np.r_[np.arange(ob), ob + r.actuated_index]
        dep = ob + np.setdiff1d(np.arange(r.n_full), r.actuated_index)
        pmod, pdat = (pm, pd) if floating else (P.model, P.data)

        def jac(qf):
            K = P.jacobian(qf[7:] if floating else qf)  # loop rows: joints only
            return np.hstack([np.zeros((K.shape[0], 6)), K]) if floating else K

        def pin_id_of(X):
            t = pin.rnea(pmod, pdat, X[0], X[1], X[2])
            K = jac(X[0])  # frame placements + LOCAL frame Jacobians → relative twist
            Gd = -np.linalg.lstsq(K[:, dep], K[:, act], rcond=None)[0]
            return t[act] + Gd.T @ t[dep]

        S = samples(r)
        if r.floating_base:
            q, qd, qdd = S[0]
        else:
            rng = np.random.default_rng(0)
            q = r.q_assembled[r.actuated_index] + 0.05
            qd, qdd = rng.standard_normal((2, r.n))
        X = full_motion(r, q, qd, qdd)
        tau = r.inverse_dynamics(q, qd, qdd)
        diff = np.abs(pin_id_of(X) - tau).max()
        rows.append((label, "inverse_dynamics (actuated) / pin rnea + constraint Jacobian "
                     "+ projection", ratio(lambda: r.inverse_dynamics(q, qd, qdd),
                                           lambda: pin_id_of(X), a.reps), diff))
        # along a trajectory: a new actuated sample every call
        Xs = [full_motion(r, *s) for s in S]
        taus = [r.inverse_dynamics(*s) for s in S]
        diff = max(np.abs(pin_id_of(x) - t).max() for x, t in zip(Xs, taus))
        ns, nx = cycle(S), cycle(Xs)
        rows.append((label, "inverse_dynamics along a trajectory (new q each call) / the same "
                     "peer", ratio(lambda: r.inverse_dynamics(*ns()), lambda: pin_id_of(nx()),
                                   a.reps), diff))
        if not floating:
            # τ, τ′, τ″ of the SEA feedforward against the peer's τ alone (Pinocchio has no
            # constrained jets): what a 1 kHz controller calls
            from test_loops_kinematics import trajectory
            J5 = [np.ascontiguousarray(trajectory(r, k * 1e-3)[:5]) for k in range(200)]
            nj = cycle(J5)
            nx2 = cycle(Xs)
            rows.append((label, "torque_derivatives (τ, τ′, τ″) along a trajectory / the peer's "
                         "τ alone", ratio(lambda: r.torque_derivatives(nj()),
                                          lambda: pin_id_of(nx2()), a.reps), float("nan")))
        if cms is None:
            continue
        nf = r.nv - r.n + r.n_full

        def tfull(t):
            tf = np.zeros(nf)
            tf[act] = t
            return tf
        tf = tfull(tau)
        ps = pin.ProximalSettings(1e-12, 1e-12, 10)

        def pin_fd():
            return pin.constraintDynamics(pm, pd, X[0], X[1], tf, cms, cds, ps)

        for m in ("lagrange", "dca"):
            if floating and m == "dca":
                continue
            diff = np.abs(r.forward_dynamics(q, qd, tau, method=m) - pin_fd()[act]).max()
            rows.append((label, f"forward_dynamics(method='{m}') / pin.constraintDynamics",
                         ratio(lambda: r.forward_dynamics(q, qd, tau, method=m), pin_fd, a.reps),
                         diff))
        FD = [(s[0], s[1], t) for s, t in zip(S, taus)]
        PF = [(x[0], x[1], tfull(t)) for x, t in zip(Xs, taus)]
        diff = max(np.abs(r.forward_dynamics(*f)
                          - pin.constraintDynamics(pm, pd, *p, cms, cds, ps)[act]).max()
                   for f, p in zip(FD, PF))
        nf_, np_ = cycle(FD), cycle(PF)
        rows.append((label, "forward_dynamics along a trajectory / pin.constraintDynamics",
                     ratio(lambda: r.forward_dynamics(*nf_()),
                           lambda: pin.constraintDynamics(pm, pd, *np_(), cms, cds, ps), a.reps),
                     diff))
    arm = mbs.load_urdf(os.path.join(ROOT, "mbs_dynamics", "data", "robots", "arm7.urdf"))
    q, qd, t = np.random.default_rng(1).standard_normal((3, arm.n))
    if not a.seed002:
        rows.append(("arm7 (tree)", "forward_dynamics(method='dca') / ABA (compiled)",
                     ratio(lambda: arm.forward_dynamics(q, qd, t, method="dca"),
                           lambda: arm.forward_dynamics(q, qd, t), a.reps),
                     np.abs(arm.forward_dynamics(q, qd, t, method="dca")
                            - arm.forward_dynamics(q, qd, t)).max()))
    import mechanisms as me
    from mbs_dynamics.loops.lagrange import acceleration
    from mbs_dynamics.loops.simulate import _hdca
    for k in (1, 2, 3):
        r = me.load(k)
        h = _hdca(r)
        z = np.zeros(r.n_full)
        # the compiled momentum level (HDCAKernel.velocity + momentum_rate) and, in the same
        # run, the NumPy one it replaced (the fallback); diff: max |compiled − NumPy| of (q̇, Ṗ)
        # at P = M v of a random full velocity
        vz = r.expand(np.stack([r.q_assembled[r.actuated_index],
                                np.random.default_rng(k).standard_normal(r.n)]))[1]
        Pz = h.momentum(r.q_assembled, vz)
        diff = max(np.abs(x - y).max() for x, y in
                   zip(h.rhs(r.q_assembled, Pz, z)[:2],
                       h.rhs(r.q_assembled, Pz, z, compiled=False)[:2]))
        rows.append((f"seed 002 case {k}", "HDCA rhs (q̇, Ṗ), compiled / acceleration-level "
                     "rhs (q̈)",
                     ratio(lambda: h.rhs(r.q_assembled, Pz, z),
                           lambda: acceleration(r, r.q_assembled, vz, z), a.reps), diff))
        rows.append((f"seed 002 case {k}", "HDCA rhs (q̇, Ṗ), NumPy (before; the fallback) / "
                     "acceleration-level rhs (q̈)",
                     ratio(lambda: h.rhs(r.q_assembled, Pz, z, compiled=False),
                           lambda: acceleration(r, r.q_assembled, vz, z), a.reps), diff))
    import pinocchio
    print(f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}, numpy {np.__version__}, pinocchio "
          f"{pinocchio.__version__}, load {os.getloadavg()}")
    print()
    print("| mechanism | call / peer | ratio median [min–max] | ours [µs] | peer [µs] | "
          "max abs diff |")
    print("|---|---|---|---|---|---|")
    for name, what, (med, lo, hi, to, tp), diff in rows:
        print(f"| {name} | {what} | {med:.3g} [{lo:.3g}–{hi:.3g}] | {to * 1e6:.3g} | "
              f"{tp * 1e6:.3g} | {diff:.2g} |")


if __name__ == "__main__":
    main()
