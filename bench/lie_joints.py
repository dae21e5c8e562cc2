#!/usr/bin/env python3
"""Spherical and inner free joints (``LieJointRobot``, issue 31) against Pinocchio, as ratios
measured in one run (CPU time).

Run from the repository root after building in place:

    python3 bench/lie_joints.py            # a Markdown table (bench/NOTES.md)
    python3 bench/lie_joints.py --quick

The robot is the one of ``test/model/test_spherical_joint.py`` (a revolute joint, a branch, a
spherical joint and a URDF ``floating`` joint inside the tree: nq = 13, nv = 11) and Pinocchio's
model built by hand with ``JointModelSpherical`` and ``JointModelFreeFlyer``. Every call
alternates between two random states, so our chart is re-centred on every call (the realistic
case). Each row times our public method and Pinocchio's equivalent back to back, round-robin
over the repeats, each over a loop of ``time.process_time`` calibrated to ≈ 20 ms; the ratio
ours/Pinocchio per repeat, reported as median [min–max], and our time per call. The peers:
``pin.rnea`` (with ``fext`` for f_ext; also for the jets and the spatial/hybrid recursions,
which Pinocchio does not have), ``pin.aba``, ``computeABADerivatives``,
``computeRNEADerivatives`` (a batch: a Python loop
of it), ``computeFrameJacobian``, ``forwardKinematics`` + ``getFrameVelocity`` /
``getFrameClassicalAcceleration``, ``computeJointJacobiansTimeVariation`` +
``getFrameJacobianTimeVariation`` (LOCAL_WORLD_ALIGNED = hybrid), ``pin.integrate``; the RK4
``chart_step`` (four ABAs of the chart and the map back to the group) against one ``pin.aba``.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "test" / "model"))
import mbs_dynamics as mbs  # noqa: E402
from test_spherical_joint import _geometry, _pin, _urdf  # noqa: E402


NB = 20   # rows of the batches


def _loop(f, k):
    t0 = time.process_time()
    for _ in range(k):
        f()
    return time.process_time() - t0


def _calibrate(f, target=0.02):
    k = 1
    while _loop(f, k) < target / 4 and k < 1 << 20:
        k *= 2
    return max(1, int(k * target / max(_loop(f, k), 1e-9)))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args(argv)
    import pinocchio as pin
    g = _geometry()
    robot, pm = mbs.load_urdf(_urdf(g)), _pin(g)
    pd = pm.createData()
    rng = np.random.default_rng(0)
    fid, jf = pm.getFrameId("tool"), pm.getJointId("f")
    LWA, LOCAL = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED, pin.ReferenceFrame.LOCAL
    states = []
    for _ in range(2):   # each state's inputs made once, not timed (wrenches, jets, batches)
        q, (v, a, w) = pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq)), \
            rng.normal(size=(3, pm.nv))
        fext = [pin.Force.Zero() for _ in range(pm.njoints)]
        fext[jf] = pin.Force(w[:3], w[3:6])   # link F's frame is joint f's frame
        Q = np.array([pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq))
                      for _ in range(NB)])
        states.append(dict(q=q, v=v, a=a, j1=np.stack([v, a, w]), j2=np.stack([v, a, w, v]),
                           f_ext={"F": w[:6]}, fext=fext, Q=Q, V=rng.normal(size=(NB, pm.nv)),
                           A=rng.normal(size=(NB, pm.nv))))
    it = [0]

    def state():
        it[0] ^= 1
        return states[it[0]]

    def pin_dtau_rows(s):
        for i in range(NB):
            pin.computeRNEADerivatives(pm, pd, s["Q"][i], s["V"][i], s["A"][i])

    def pin_jac_rows(s):
        for i in range(NB):
            pin.computeFrameJacobian(pm, pd, s["Q"][i], fid, LWA)

    def pin_vel(s):
        pin.forwardKinematics(pm, pd, s["q"], s["v"])
        return pin.getFrameVelocity(pm, pd, fid, LWA)

    def pin_acc(s):
        pin.forwardKinematics(pm, pd, s["q"], s["v"], s["a"])
        return pin.getFrameClassicalAcceleration(pm, pd, fid, LWA)

    def pin_jdot(s):
        pin.computeJointJacobiansTimeVariation(pm, pd, s["q"], s["v"])
        pin.updateFramePlacements(pm, pd)
        return pin.getFrameJacobianTimeVariation(pm, pd, fid, LWA)

    rnea = lambda s: pin.rnea(pm, pd, s["q"], s["v"], s["a"])  # noqa: E731
    rows = [
        ("inverse_dynamics", lambda s: robot.inverse_dynamics(s["q"], s["v"], s["a"]), rnea),
        ("inverse_dynamics spatial", lambda s: robot.inverse_dynamics(
            s["q"], s["v"], s["a"], representation="spatial"), rnea),
        ("inverse_dynamics hybrid", lambda s: robot.inverse_dynamics(
            s["q"], s["v"], s["a"], representation="hybrid"), rnea),
        ("inverse_dynamics f_ext", lambda s: robot.inverse_dynamics(
            s["q"], s["v"], s["a"], f_ext=s["f_ext"]),
         lambda s: pin.rnea(pm, pd, s["q"], s["v"], s["a"], s["fext"])),
        ("mass_matrix", lambda s: robot.mass_matrix(s["q"]), lambda s: pin.crba(pm, pd, s["q"])),
        ("gravity_torques", lambda s: robot.gravity_torques(s["q"]),
         lambda s: pin.computeGeneralizedGravity(pm, pd, s["q"])),
        ("forward_dynamics", lambda s: robot.forward_dynamics(s["q"], s["v"], s["a"]),
         lambda s: pin.aba(pm, pd, s["q"], s["v"], s["a"])),
        ("forward_dynamics f_ext", lambda s: robot.forward_dynamics(
            s["q"], s["v"], s["a"], f_ext=s["f_ext"]),
         lambda s: pin.aba(pm, pd, s["q"], s["v"], s["a"], s["fext"])),
        ("inverse_dynamics_derivatives", lambda s: robot.inverse_dynamics_derivatives(
            s["q"], s["v"], s["a"]),
         lambda s: pin.computeRNEADerivatives(pm, pd, s["q"], s["v"], s["a"])),
        ("forward_dynamics_derivatives", lambda s: robot.forward_dynamics_derivatives(
            s["q"], s["v"], s["a"]),
         lambda s: pin.computeABADerivatives(pm, pd, s["q"], s["v"], s["a"])),
        (f"inverse_dynamics_derivatives, batch of {NB} (vs a loop)",
         lambda s: robot.inverse_dynamics_derivatives(s["Q"], s["V"], s["A"]), pin_dtau_rows),
        ("frame_jacobian (body)", lambda s: robot.frame_jacobian(s["q"], "tool"),
         lambda s: pin.computeFrameJacobian(pm, pd, s["q"], fid, LOCAL)),
        ("frame_jacobian (hybrid)", lambda s: robot.frame_jacobian(s["q"], "tool", "hybrid"),
         lambda s: pin.computeFrameJacobian(pm, pd, s["q"], fid, LWA)),
        (f"frame_jacobian (hybrid), batch of {NB} (vs a loop)",
         lambda s: robot.frame_jacobian(s["Q"], "tool", "hybrid"), pin_jac_rows),
        ("frame_jacobian_derivative (hybrid)", lambda s: robot.frame_jacobian_derivative(
            s["q"], s["v"], "tool", "hybrid"), pin_jdot),
        ("frame_velocity (hybrid)", lambda s: robot.frame_velocity(
            s["q"], s["v"], "tool", "hybrid"), pin_vel),
        ("frame_acceleration (hybrid, classical)", lambda s: robot.frame_acceleration(
            s["q"], s["v"], s["a"], "tool", "hybrid"), pin_acc),
        ("regressor", lambda s: robot.regressor(s["q"], s["v"], s["a"]),
         lambda s: pin.computeJointTorqueRegressor(pm, pd, s["q"], s["v"], s["a"])),
        ("torque_derivatives k=1 (vs rnea)",
         lambda s: robot.torque_derivatives((s["q"], s["j1"])), rnea),
        ("torque_derivatives k=2 (vs rnea)",
         lambda s: robot.torque_derivatives((s["q"], s["j2"])), rnea),
        ("torque_derivatives k=1 f_ext (vs rnea f_ext)",
         lambda s: robot.torque_derivatives((s["q"], s["j1"]), f_ext=s["f_ext"]),
         lambda s: pin.rnea(pm, pd, s["q"], s["v"], s["a"], s["fext"])),
        ("chart_step (RK4, vs one aba)",
         lambda s: robot.chart_step(s["q"], s["v"], s["a"], 1e-3),
         lambda s: pin.aba(pm, pd, s["q"], s["v"], s["a"])),
        ("integrate", lambda s: robot.integrate(s["q"], s["v"]),
         lambda s: pin.integrate(pm, s["q"], s["v"])),
    ]
    reps = 2 if args.quick else args.repeats
    print("| call (nq = 13, nv = 11) | ours / Pinocchio, median [min–max] | ours µs per call |")
    print("|---|---|---|")
    for name, f, p in rows:
        fo, fp = (lambda f=f: f(state())), (lambda p=p: p(state()))
        ko, kp = _calibrate(fo), _calibrate(fp)
        ratios, tus = [], []
        for r in range(reps):
            pair = [(fo, ko), (fp, kp)] if r % 2 == 0 else [(fp, kp), (fo, ko)]
            t = {id(f0): _loop(f0, k0) / k0 for f0, k0 in pair}
            ratios.append(t[id(fo)] / t[id(fp)])
            tus.append(t[id(fo)] * 1e6)
        fmt = ".1f" if statistics.median(ratios) < 20 else ".0f"
        print(f"| {name} | {statistics.median(ratios):{fmt}}× [{min(ratios):{fmt}}–"
              f"{max(ratios):{fmt}}] | {statistics.median(tus):.1f} |")


if __name__ == "__main__":
    main()
