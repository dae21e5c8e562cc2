"""``mbs-dynamics demo``: closed-loop tracking with and without the dynamics feedforward.

The bundled 7-DOF arm (``data/robots/arm7.urdf``) follows the bundled C⁴ trajectory
(``data/trajectories/arm7_demo.yaml``) in the built-in simulator (:mod:`mbs_dynamics.sim`, RK4,
plant = the same model). The controller is the ROS-free core the feedforward node runs
(:class:`mbs_dynamics.controller.FeedforwardController`) plus a small PD:

* rigid: ``τ = τ_ff + K_p (q_d − q) + K_d (q̇_d − q̇)``, with ``τ_ff`` the inverse dynamics along
  the desired motion;
* SEA: ``τ_m = τ_m,ff + K_p (θ_d − θ) + K_d (θ̇_d − θ̇)`` on the motor side, with ``θ_d, τ_m,ff``
  from the flatness feedforward (shared/MATH.md); without feedforward ``θ_d = q_d``. The springs
  and motor inertias of arm7 are those of ``data/config/arm7_sea.yaml``.

The PD alone is the baseline. The gains are deliberately small (a 10 rad/s critically damped loop
on the diagonal of ``M(q_0)`` for rigid joints, 30 rad/s on the motor inertia for SEA), as a
compliant, safe robot would use. Printed: RMS and max tracking error of both runs, their ratio,
and percentiles of the measured per-cycle compute time of the controller (wall clock, this
machine). Written to ``--out``: a CSV time series and PNG plots.
"""
from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np

from .cli import positive_float

DATA = Path(__file__).resolve().parent / "data"
BUNDLED = {"arm7": (DATA / "robots" / "arm7.urdf", DATA / "trajectories" / "arm7_demo.yaml")}

# SEA parameters of a bundled robot: the package's actuator configuration (ROS parameter names)
SEA_CONFIG = {"arm7": DATA / "config" / "arm7_sea.yaml"}

IMPROVEMENT_REQUIRED = 10.0


def add_arguments(parser):
    """Add the demo's options to an ``argparse`` parser (used by ``mbs-dynamics demo``)."""
    parser.add_argument("--robot", default="arm7",
                        help="bundled robot name (%s) or a URDF file; default arm7"
                             % ", ".join(BUNDLED))
    parser.add_argument("--actuator", choices=("rigid", "sea"), default="rigid",
                        help="plant and feedforward: rigid joints or series-elastic actuators")
    parser.add_argument("--out", default="mbs_dynamics_demo", metavar="DIR",
                        help="directory for the CSV and PNG files (default ./mbs_dynamics_demo)")
    parser.add_argument("--trajectory", default=None, metavar="FILE",
                        help="trajectory YAML/JSON (default: the robot's bundled trajectory, or "
                             "a generated one for a URDF file)")
    parser.add_argument("--duration", type=positive_float, default=None, metavar="S",
                        help="simulated time [s] (default: the trajectory + 0.5 s)")
    parser.add_argument("--dt", type=positive_float, default=1e-3, metavar="S",
                        help="control period = simulator step [s] (default 0.001)")
    parser.add_argument("--substeps", type=int, default=None, metavar="K",
                        help="RK4 steps per control period (default 1 rigid, 4 SEA: the stiff "
                             "wrist springs ring at ~900 rad/s)")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    return parser


def _mass_diagonal(robot, q):
    if hasattr(robot, "mass_matrix"):
        return np.diag(robot.mass_matrix(q)).copy()
    z = np.zeros(robot.n)
    h = robot.inverse_dynamics(q, z, z)
    return np.array([robot.inverse_dynamics(q, z, e)[i] - h[i]
                     for i, e in enumerate(np.eye(robot.n))])


def pd_gains(robot, q0, actuator=None):
    """The demo's small PD: critically damped at 10 rad/s on the diagonal of ``M(q0)`` (rigid:
    link side), or at 30 rad/s on the motor inertia ``B`` (SEA: motor side).

    Returns:
        (kp, kd): (n,) arrays [N m/rad], [N m s/rad].
    """
    if actuator is None:
        wn, m = 10.0, _mass_diagonal(robot, np.asarray(q0, dtype=float))
    else:
        wn, m = 30.0, np.asarray(actuator.motor_inertia, dtype=float) * np.ones(robot.n)
    return m * wn ** 2, 2.0 * wn * m


def sea_actuator(name, robot, traj):
    """The SEA of the demo: bundled parameters for a bundled robot, else a generic choice."""
    return _sea_actuator(name, robot, traj)


def trajectory_message_yaml(traj):
    """A :class:`~mbs_dynamics.trajectory.Trajectory`'s waypoints as the YAML of a
    trajectory_msgs/JointTrajectory (for ``ros2 topic pub``; used by the launch files)."""
    pts = []
    for t, q in zip(traj.times, traj.positions):
        sec = int(math.floor(t))
        nsec = int(round((t - sec) * 1e9))
        pos = ", ".join(repr(float(x)) for x in q)
        pts.append(f"{{positions: [{pos}], time_from_start: {{sec: {sec}, nanosec: {nsec}}}}}")
    return f"{{joint_names: [{', '.join(traj.joint_names)}], points: [{', '.join(pts)}]}}"


def _generated_trajectory(robot):
    """A gentle C⁴ trajectory for any robot: three waypoints around the middle of the limits."""
    from .trajectory import Trajectory
    lo = np.where(np.isfinite(robot.lower), robot.lower, -math.pi)
    hi = np.where(np.isfinite(robot.upper), robot.upper, math.pi)
    mid, amp = 0.5 * (lo + hi), 0.2 * (hi - lo)
    pts = [mid, mid + amp, mid - amp, mid]
    return Trajectory(robot.joint_names, [0.0, 2.0, 4.0, 6.0], pts)


def _load(args):
    import mbs_dynamics as mbs
    from .trajectory import Trajectory
    name = args.robot
    if name in BUNDLED:
        urdf, traj_file = BUNDLED[name]
    else:
        urdf, traj_file = Path(name), None
        if not urdf.exists():
            raise ValueError(f"--robot {name!r} is neither a bundled robot "
                             f"({', '.join(BUNDLED)}) nor a URDF file")
    robot = mbs.load_urdf(str(urdf))
    if args.trajectory is not None:
        traj_file = Path(args.trajectory)
    traj = Trajectory.load(traj_file) if traj_file is not None else _generated_trajectory(robot)
    return robot, traj.reorder(robot.joint_names)


def _sea_actuator(name, robot, traj):
    from .actuators import SEA, actuator_from_params
    n = robot.n
    cfg = SEA_CONFIG.get(name)
    if cfg is not None and cfg.exists():
        import yaml
        return actuator_from_params(yaml.safe_load(cfg.read_text()), n)
    # generic: motor inertia 10× the link's diagonal inertia, link-side resonance ≥ 40 rad/s
    Md = _mass_diagonal(robot, traj.sample(0.0)[0])
    return SEA(np.maximum(Md * 40.0 ** 2, 10.0), np.maximum(10.0 * Md, 1e-3), n=n)


def run_case(robot, traj, actuator, feedforward, duration, dt, substeps=1):
    """One closed-loop simulation; returns (SimResult, desired (N+1, 5, n), controller stats)."""
    from .controller import FeedforwardController
    from .sim import simulate

    n = robot.n
    names = robot.joint_names
    q0 = traj.sample(0.0)[0].copy()
    ctl = FeedforwardController(robot.copy(), actuator=actuator, joint_state_timeout=0.0,
                                stats_window=int(duration / dt) + 2)
    # warm the compiled kernels up (first calls compile or load the cache), then reset counters
    ctl.set_joint_state(names, q0, np.zeros(n), stamp=0.0)
    ctl.update(0.0)
    ctl = FeedforwardController(robot.copy(), actuator=actuator, joint_state_timeout=0.0,
                                stats_window=int(duration / dt) + 2)
    ctl.set_joint_state(names, q0, np.zeros(n), stamp=0.0)
    if not ctl.set_trajectory(traj, now=0.0):
        raise ValueError(f"the controller rejected the trajectory: {ctl.last_rejection}")
    kp, kd = pd_gains(robot, q0, actuator)
    desired = np.zeros((int(round(duration / dt)) + 1, 5, n))
    step = [0]

    def controller(t, s):
        ctl.set_joint_state(names, s.q, s.qd, stamp=t)
        out = ctl.update(t)
        if not out.valid:
            raise RuntimeError(f"feedforward controller produced no output at t = {t:g} s: "
                               f"{ctl.last_rejection}")
        k = min(step[0], desired.shape[0] - 1)
        step[0] += 1
        d = traj.sample(t, out=desired[k])  # q_d (held at the last point after the end)
        if actuator is None:
            u = kp * (d[0] - s.q) + kd * (d[1] - s.qd)
            if feedforward:
                u += out.tau
            return u
        if feedforward:
            return (out.tau_motor + kp * (out.theta - s.theta)
                    + kd * (out.theta_dot - s.thetad))
        return kp * (d[0] - s.theta) + kd * (d[1] - s.thetad)

    res = simulate(robot, controller, duration, dt, actuator=actuator, q0=q0,
                   substeps=substeps)
    return res, desired, ctl.compute_stats()


def _errors(res, desired):
    e = res.q - desired[: res.q.shape[0], 0]
    return float(np.sqrt(np.mean(e ** 2))), float(np.abs(e).max()), e


def _plots(out, robot, res_ff, res_pd, desired, actuator_name):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    files = []
    t = res_ff.t
    e_ff = res_ff.q - desired[:, 0]
    e_pd = res_pd.q - desired[:, 0]
    fig, ax = plt.subplots(2, 1, figsize=(9, 7), sharex=True)
    for j, name in enumerate(robot.joint_names):
        ax[0].plot(t, desired[:, 0, j], lw=1.0, label=name)
        ax[0].plot(t, res_ff.q[:, j], "k:", lw=0.8)
    ax[0].set_ylabel("q [rad]  (dotted: feedforward + PD)")
    ax[0].legend(fontsize=7, ncol=4)
    ax[1].semilogy(t, np.abs(e_pd).max(axis=1) + 1e-16, label="PD alone")
    ax[1].semilogy(t, np.abs(e_ff).max(axis=1) + 1e-16, label="feedforward + PD")
    ax[1].set_ylabel("max |q − q_d| over joints [rad]")
    ax[1].set_xlabel("t [s]")
    ax[1].legend()
    fig.suptitle(f"mbs_dynamics demo: {actuator_name} joints, tracking")
    fig.tight_layout()
    f = out / f"demo_{actuator_name}_tracking.png"
    fig.savefig(f, dpi=110)
    plt.close(fig)
    files.append(f)

    fig, ax = plt.subplots(2, 1, figsize=(9, 7), sharex=True)
    for j, name in enumerate(robot.joint_names):
        ax[0].plot(t, res_ff.command[:, j], lw=1.0, label=name)
    ax[1].plot(t[1:], res_ff.compute_time[1:] * 1e6, "k", lw=0.3)
    ax[0].set_ylabel("τ_m [N m]" if actuator_name == "sea" else "τ [N m]")
    ax[0].legend(fontsize=7, ncol=4)
    ax[1].set_ylabel("controller compute time [µs]")
    ax[1].set_xlabel("t [s]")
    fig.tight_layout()
    f = out / f"demo_{actuator_name}_command.png"
    fig.savefig(f, dpi=110)
    plt.close(fig)
    files.append(f)
    return files


def run(args) -> int:
    """Run the demo with parsed ``args`` (see :func:`add_arguments`); returns the exit code:
    0 when the feedforward improves the RMS tracking error at least 10×, 1 otherwise, 2 on bad
    input."""
    try:
        robot, traj = _load(args)
    except (ValueError, OSError) as exc:
        print(f"mbs-dynamics demo: {exc}")
        return 2
    name = args.robot if args.robot in BUNDLED else Path(args.robot).stem
    actuator = None if args.actuator == "rigid" else _sea_actuator(name, robot, traj)
    duration = args.duration if args.duration is not None else traj.duration + 0.5
    dt = args.dt
    substeps = args.substeps or (1 if actuator is None else 4)
    if substeps < 1:
        print("mbs-dynamics demo: --substeps must be >= 1")
        return 2
    print(f"robot {robot.model.name!r}: {robot.n} joints, {robot.total_mass:.2f} kg; "
          f"trajectory {traj.duration:g} s; actuator {args.actuator}"
          + (f" (K = {np.round(actuator.stiffness, 1).tolist()} N m/rad, "
             f"B = {np.round(actuator.motor_inertia, 4).tolist()} kg m²)"
             if actuator is not None else ""))
    print(f"simulating {duration:g} s: controller every {dt:g} s (zero-order hold), plant RK4 "
          f"with {substeps} step(s) per period ...")
    t0 = time.perf_counter()
    res_ff, desired, stats = run_case(robot, traj, actuator, True, duration, dt, substeps)
    res_pd, _, _ = run_case(robot, traj, actuator, False, duration, dt, substeps)
    wall = time.perf_counter() - t0
    rms_ff, max_ff, _ = _errors(res_ff, desired)
    rms_pd, max_pd, _ = _errors(res_pd, desired)
    ratio = rms_pd / rms_ff if rms_ff > 0 else math.inf
    ct = res_ff.compute_time[1:] * 1e6
    p50, p90, p99 = np.percentile(ct, (50, 90, 99))
    print("tracking error (link positions, all joints and samples):")
    print(f"  PD alone          RMS {rms_pd:.3e} rad   max {max_pd:.3e} rad")
    print(f"  feedforward + PD  RMS {rms_ff:.3e} rad   max {max_ff:.3e} rad")
    print(f"  improvement       {ratio:.1f}x RMS (required >= {IMPROVEMENT_REQUIRED:g}x)")
    print(f"controller cycle compute time over {ct.size} cycles (feedforward + PD, measured "
          f"wall clock): p50 {p50:.1f} us, p90 {p90:.1f} us, p99 {p99:.1f} us, "
          f"max {ct.max():.1f} us")
    print(f"  of which FeedforwardController.update: p50 {stats['p50'] * 1e6:.1f} us, "
          f"p99 {stats['p99'] * 1e6:.1f} us")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    csv = out / f"demo_{args.actuator}.csv"
    res_ff.to_csv(csv, extra={"q_des": desired[:, 0], "qd_des": desired[:, 1],
                              "q_pd_only": res_pd.q})
    files = [csv]
    if not args.no_plots:
        files += _plots(out, robot, res_ff, res_pd, desired, args.actuator)
    print("wrote " + ", ".join(str(f) for f in files) + f"  ({wall:.1f} s)")
    if ratio < IMPROVEMENT_REQUIRED:
        print(f"FAILED: the feedforward improved the RMS error only {ratio:.1f}x")
        return 1
    return 0


def main(argv=None) -> int:
    """``python -m mbs_dynamics.demo [options]``."""
    parser = argparse.ArgumentParser(prog="mbs-dynamics demo", description=__doc__.split("\n")[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
