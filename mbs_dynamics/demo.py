"""``mbs-dynamics demo``: closed-loop tracking with and without the dynamics feedforward.

A robot follows a C⁴ trajectory in the built-in simulator (:mod:`mbs_dynamics.sim`, RK4, plant =
the same model) twice: with the feedforward + a small PD, and with the PD alone (the baseline).
The controller is the ROS-free core the feedforward node runs
(:class:`mbs_dynamics.controller.FeedforwardController`) plus the PD:

* rigid: ``τ = τ_ff + K_p (q_d − q) + K_d (q̇_d − q̇)``, with ``τ_ff`` the inverse dynamics along
  the desired motion;
* SEA: ``τ_m = τ_m,ff + K_p (θ_d − θ) + K_d (θ̇_d − θ̇)`` on the motor side, with ``θ_d, τ_m,ff``
  from the flatness feedforward (doc/math.md); without feedforward ``θ_d = q_d``.

Robots: the bundled 7-DOF arm (``arm7``, with its bundled trajectory and SEA parameters), the arms
of example-robot-data by name when it is installed (``ur5``, ``ur10``, ``panda``, ``kinova``,
``xarm7``, ``z1``, ``double_pendulum``), or any URDF file. For a robot without a bundled
trajectory one is generated inside the joint limits (joints whose URDF limits give no range, such
as ``[0, 0]``, are moved around 0 as if unlimited; the demo says so) and slow enough for the
velocity limits.

The PD gains are deliberately small and scaled to the robot: 10 rad/s on the diagonal of
``M(q_0)`` plus enough stiffness to hold against gravity's toppling (:func:`pd_gains`) for rigid
joints, critically damped at 30 rad/s on the motor inertia for SEA — as a compliant, safe robot
would use. Printed: RMS and max tracking error of both runs, their ratio,
and percentiles of the measured per-cycle compute time of the controller (wall clock, this
machine). Written to ``--out``: a CSV time series with units, PNG plots (with matplotlib), and a
generated trajectory as YAML (input for ``mbs-dynamics feedforward``).
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

from . import data as _data
from ._cliutil import (PLOT_HINT, PROG, ArgumentParser, InputError, add_lock_option,
                       check_memory, joint_units, load_actuator, load_trajectory, plot_backend,
                       positive_float, positive_int)

#: Bundled robots: name -> (URDF, demo trajectory).
BUNDLED = {"arm7": (_data.robot("arm7"), _data.trajectory("arm7_demo"))}

#: SEA parameters of a bundled robot: the package's actuator configuration (ROS parameter names).
SEA_CONFIG = {"arm7": _data.config("arm7_sea")}

#: Arms of example-robot-data by name: (URDF below its robots/ folder, joints locked by default).
EXAMPLE_ROBOTS = {
    "ur5": ("ur_description/urdf/ur5_robot.urdf", {}),
    "ur10": ("ur_description/urdf/ur10_robot.urdf", {}),
    "panda": ("panda_description/urdf/panda.urdf",
              {"panda_finger_joint1": 0.0, "panda_finger_joint2": 0.0}),
    "kinova": ("kinova_description/robots/kinova.urdf", {}),
    "xarm7": ("xarm_description/urdf/xarm7.urdf", {}),
    "z1": ("z1_description/urdf/z1.urdf", {"jointGripper": 0.0}),
    "double_pendulum": ("double_pendulum_description/urdf/double_pendulum.urdf", {}),
}

#: Natural frequencies of the demo's PD [rad/s]: link side (rigid), motor side (SEA).
WN_RIGID, WN_SEA = 10.0, 30.0

#: Bound on the generated trajectory's peak speed: this fraction of the URDF velocity limit, or
#: the fallback below where the URDF gives none [rad/s or m/s].
VELOCITY_FRACTION, FALLBACK_SPEED = 0.5, 1.0

#: Columns per joint of the demo CSV (see :func:`write_csv`).
CSV_COLUMNS_PER_JOINT = 11


# ------------------------------------------------------------------------------------ options
def add_arguments(parser):
    """Add the demo's options to an ``argparse`` parser (used by ``mbs-dynamics demo``)."""
    names = list(BUNDLED) + list(EXAMPLE_ROBOTS)
    parser.add_argument("--robot", default="arm7", metavar="NAME|URDF",
                        help=f"robot name ({', '.join(names)}; all but arm7 need "
                             "example-robot-data) or a URDF file; default arm7")
    parser.add_argument("--actuator", choices=("rigid", "sea"), default="rigid",
                        help="plant and feedforward: rigid joints or series-elastic actuators")
    parser.add_argument("--sea-config", default=None, metavar="CONFIG",
                        help="actuator.* YAML for --actuator sea (default: the robot's bundled "
                             "one, or springs scaled to the robot's inertia)")
    add_lock_option(parser)
    parser.add_argument("--out", default="mbs_dynamics_demo", metavar="DIR",
                        help="directory for the CSV and PNG files (default ./mbs_dynamics_demo)")
    parser.add_argument("--trajectory", default=None, metavar="FILE",
                        help="trajectory YAML/JSON (default: the robot's bundled trajectory, or "
                             "one generated inside the joint limits)")
    parser.add_argument("--duration", type=positive_float, default=None, metavar="S",
                        help="simulated time [s] (default: the trajectory + 0.5 s)")
    parser.add_argument("--dt", type=positive_float, default=1e-3, metavar="S",
                        help="control period = simulator step [s] (default 0.001)")
    parser.add_argument("--substeps", type=positive_int, default=None, metavar="K",
                        help="RK4 steps per control period, >= 1 (default 1 rigid, 4 SEA: stiff "
                             "springs ring fast)")
    parser.add_argument("--no-plots", action="store_true",
                        help="skip the PNG plots (they need matplotlib)")
    return parser


# --------------------------------------------------------------------------------- robots
def example_robot_data_dir():
    """The ``robots/`` folder of an installed example-robot-data, or None."""
    import site
    roots = [Path(p) for p in sys.path if p]
    try:
        roots += [Path(p) for p in site.getsitepackages()]
    except AttributeError:  # pragma: no cover - virtualenvs of old Pythons
        pass
    candidates = []
    for root in roots:
        candidates.append(root / "cmeel.prefix" / "share" / "example-robot-data" / "robots")
        if "cmeel.prefix" in root.parts:
            prefix = Path(*root.parts[:root.parts.index("cmeel.prefix") + 1])
            candidates.append(prefix / "share" / "example-robot-data" / "robots")
    candidates.append(Path(sys.prefix) / "share" / "example-robot-data" / "robots")
    candidates += sorted(Path("/opt/ros").glob("*/share/example-robot-data/robots"))
    for c in candidates:
        if c.is_dir():
            return c
    return None


#: Longest label derived from an input file name (it goes into output file names).
MAX_LABEL = 40


def file_label(stem):
    """A bounded, file-name-safe label from an input file's name: characters other than
    letters, digits, ``._-`` become ``_``; a name longer than :data:`MAX_LABEL` is cut and
    given 8 hex digits of its SHA-1, so distinct long names stay distinct."""
    import hashlib
    import re
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", stem) or "robot"
    if len(safe) <= MAX_LABEL and safe == stem:
        return safe
    digest = hashlib.sha1(stem.encode("utf-8", "surrogateescape")).hexdigest()[:8]
    return f"{safe[:MAX_LABEL - 9]}-{digest}"


def resolve_robot(name):
    """``--robot`` → (URDF path, default locked joints, bundled trajectory or None, label).

    Raises:
        InputError: neither a known name nor a file (the message lists the names).
    """
    if name in BUNDLED:
        urdf, traj = BUNDLED[name]
        return urdf, {}, traj, name
    if name in EXAMPLE_ROBOTS:
        rel, locks = EXAMPLE_ROBOTS[name]
        root = example_robot_data_dir()
        if root is None or not (root / rel).is_file():
            raise InputError(f"--robot {name}: needs example-robot-data (pip install "
                             f"example-robot-data), or give the URDF file's path")
        return root / rel, dict(locks), None, name
    path = Path(name)
    if path.is_file():
        return path, {}, None, file_label(path.stem)
    raise InputError(f"--robot {name}: neither a robot name "
                     f"({', '.join(list(BUNDLED) + list(EXAMPLE_ROBOTS))}) nor a URDF file")


def load_robot(urdf, locks):
    """Load a URDF with locked joints; errors are one line naming the file."""
    from .loader import load_urdf
    try:
        return load_urdf(urdf, locked_joints=locks or None)
    except ValueError as exc:
        msg = " ".join(str(exc).split())
        raise InputError(msg if str(urdf) in msg else f"{urdf}: {msg}") from None


def _mass_diagonal(robot, q):
    return np.diag(robot.mass_matrix(np.asarray(q, dtype=float))).copy()


def gravity_stiffness(robot, qs, h=1e-6):
    """Row sums ``Σ_k |∂g_j/∂q_k|`` of the gravity stiffness, the largest over the poses ``qs``.

    ``G = ∂g/∂q`` is the Hessian of the potential energy (symmetric); a PD with
    ``K_p,jj > Σ_k |G_jk|`` keeps ``K_p + G`` positive definite (Gershgorin), i.e. the PD is not
    overpowered by gravity toppling a link over its joint. Central differences, step ``h``.

    Args:
        robot: the robot.
        qs: (m, n) poses.

    Returns:
        (n,) [N m/rad].
    """
    qs = np.atleast_2d(np.asarray(qs, dtype=float))
    out = np.zeros(robot.n)
    for q in qs:
        G = np.empty((robot.n, robot.n))
        for k in range(robot.n):
            e = np.zeros(robot.n)
            e[k] = h
            G[:, k] = (robot.gravity_torques(q + e) - robot.gravity_torques(q - e)) / (2 * h)
        out = np.maximum(out, np.abs(0.5 * (G + G.T)).sum(axis=1))
    return out


def pd_gains(robot, q0, actuator=None, poses=None, dt=None):
    """The demo's small PD, scaled to the robot.

    Rigid (link side): ``K_p = m ω² + Σ_k |G_jk|`` with ``m`` the diagonal of ``M(q0)``,
    ``ω`` = :data:`WN_RIGID` and ``G`` the gravity stiffness over ``poses`` (default ``q0``;
    :func:`gravity_stiffness`), ``K_d = 2 √(K_p m)`` (critically damped per joint). With the
    control period ``dt``, ``K_d`` is scaled down where the coupled damping rate, the spectral
    radius of ``M⁻¹ K_d`` over the poses, exceeds ``1/dt``: a sampled (zero-order hold) velocity
    feedback is unstable beyond ``2/dt``, and a light wrist coupled to heavy links reaches it
    although each joint alone would not. SEA (motor side): critically damped at :data:`WN_SEA`
    on the motor inertia ``B``.

    Returns:
        (kp, kd): (n,) arrays [N m/rad], [N m s/rad] ([N/m], [N s/m] for prismatic joints).
    """
    if actuator is not None:
        m = np.asarray(actuator.motor_inertia, dtype=float) * np.ones(robot.n)
        return m * WN_SEA ** 2, 2.0 * WN_SEA * m
    poses = np.atleast_2d(q0 if poses is None else poses)
    m = _mass_diagonal(robot, q0)
    kp = m * WN_RIGID ** 2 + gravity_stiffness(robot, poses)
    kd = 2.0 * np.sqrt(kp * m)
    if dt is not None:
        rate = max(np.abs(np.linalg.eigvals(np.linalg.solve(robot.mass_matrix(q), np.diag(kd))))
                   .max() for q in poses)
        if rate * dt > 1.0:
            kd = kd / (rate * dt)
    return kp, kd


def sea_actuator(name, robot, traj):
    """The SEA of the demo: bundled parameters for a bundled robot, else springs scaled to the
    robot: motor inertia 10× the link's diagonal inertia at the start, link-side resonance at
    least 40 rad/s."""
    from .control.actuators import SEA
    cfg = SEA_CONFIG.get(name)
    if cfg is not None:
        return load_actuator(cfg, robot.n)
    Md = _mass_diagonal(robot, traj.sample(traj.start_time)[0])
    return SEA(np.maximum(Md * 40.0 ** 2, 10.0), np.maximum(10.0 * Md, 1e-3), n=robot.n)


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


# ----------------------------------------------------------------------------- trajectories
def joint_ranges(robot):
    """Usable position range per joint from the URDF limits.

    Returns:
        (lo, hi, notes): (n,) arrays with ±inf where a joint is unlimited, and one note per
        joint whose limits give no usable range (e.g. ``[0, 0]``): it is treated as unlimited.
    """
    lo = np.array(robot.lower, dtype=float)
    hi = np.array(robot.upper, dtype=float)
    notes = []
    for j, name in enumerate(robot.joint_names):
        if np.isfinite(lo[j]) and np.isfinite(hi[j]) and not hi[j] - lo[j] > 1e-6:
            notes.append(f"joint {name}: URDF limits [{lo[j]:g}, {hi[j]:g}] give no range; "
                         "moved around 0 as if unlimited")
            lo[j], hi[j] = -np.inf, np.inf
    return lo, hi, notes


def generated_trajectory(robot, segment=2.0):
    """A gentle C⁴ trajectory for any robot, inside its joint limits.

    Each joint starts off the middle of its range (alternating sides, which keeps a serial arm
    out of its stretched, often singular, zero pose), swings to one side, to the other, and back,
    with segments of ``segment`` seconds. The swing is at most a quarter of the range and 0.5 rad
    (0.05 m); the whole motion is slowed down until its peak speed is at most
    :data:`VELOCITY_FRACTION` of the URDF velocity limit (:data:`FALLBACK_SPEED` where none is
    given).

    Returns:
        (trajectory, notes): notes are one-line remarks on joints without a usable range.
    """
    from .control.trajectory import Trajectory
    lo, hi, notes = joint_ranges(robot)
    prismatic = np.array([t == "prismatic" for t in robot.joint_types])
    limited = np.isfinite(lo) & np.isfinite(hi)
    span = np.where(limited, np.where(limited, hi, 1.0) - np.where(limited, lo, 0.0),
                    np.where(prismatic, 0.4, 2 * math.pi))
    mid = np.where(limited, 0.5 * (np.where(limited, lo, 0.0) + np.where(limited, hi, 0.0)), 0.0)
    index = np.arange(robot.n)
    side = np.where(index % 2 == 0, 1.0, -1.0)
    vary = np.maximum(1.0 - 0.1 * index, 0.4)  # joints alike in range do not move alike
    q0 = mid + side * vary * np.minimum(0.1 * span, np.where(prismatic, 0.02, 0.3))
    amp = vary * np.minimum(0.15 * span, np.where(prismatic, 0.05, 0.5))
    pts = [q0, q0 + side * amp, q0 - side * amp, q0]
    vmax = np.where((robot.velocity_limit > 0) & np.isfinite(robot.velocity_limit),
                    VELOCITY_FRACTION * robot.velocity_limit, FALLBACK_SPEED)
    times = np.arange(4) * segment
    for _ in range(3):
        traj = Trajectory(robot.joint_names, times.tolist(), pts)
        qd = traj.sample_many(np.linspace(0, times[-1], 601))[:, 1]
        scale = float(np.max(np.abs(qd).max(axis=0) / vmax))
        if scale <= 1.0:
            break
        times = times * scale * 1.02
    return traj, notes


def trajectory_notes(robot, traj):
    """Remarks where a given trajectory leaves the URDF position or velocity limits."""
    lo, hi, notes = joint_ranges(robot)
    S = traj.sample_many(np.linspace(traj.start_time, traj.end_time, 1001))
    for j, name in enumerate(robot.joint_names):
        q = S[:, 0, j]
        if q.min() < lo[j] - 1e-9 or q.max() > hi[j] + 1e-9:
            notes.append(f"joint {name}: the trajectory spans [{q.min():.3g}, {q.max():.3g}], "
                         f"outside the URDF limits [{lo[j]:.3g}, {hi[j]:.3g}]")
        v = robot.velocity_limit[j]
        if v > 0 and np.isfinite(v) and np.abs(S[:, 1, j]).max() > v:
            notes.append(f"joint {name}: the trajectory's peak speed "
                         f"{np.abs(S[:, 1, j]).max():.3g} exceeds the URDF limit {v:.3g}")
    return notes


# ------------------------------------------------------------------------------ simulation
def run_case(robot, traj, actuator, feedforward, duration, dt, substeps=1):
    """One closed-loop simulation; returns (SimResult, desired (N+1, 5, n), controller stats)."""
    from .control.controller import FeedforwardController
    from .sim.simulator import simulate

    n = robot.n
    names = robot.joint_names
    q0 = traj.sample(traj.start_time)[0].copy()

    def new_controller():
        ctl = FeedforwardController(robot.copy(), actuator=actuator, joint_state_timeout=1.0,
                                    stats_window=int(duration / dt) + 2)
        ctl.set_joint_state(names, q0, np.zeros(n), stamp=0.0)
        return ctl

    # warm up (first calls may load compiled code), then start with fresh counters
    new_controller().update(0.0)
    ctl = new_controller()
    if not ctl.set_trajectory(traj, now=0.0):
        raise InputError(f"the controller rejected the trajectory: {ctl.last_rejection}")
    kp, kd = pd_gains(robot, q0, actuator, demo_poses(traj), dt)
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


def demo_poses(traj, count=41):
    """Poses along the trajectory at which the PD gains are checked against gravity."""
    ts = np.linspace(traj.start_time, traj.end_time, count)
    return traj.sample_many(ts)[:, 0]


def tracking_errors(res, desired):
    """(RMS, max, e): link position error q − q_d over all joints and samples."""
    e = res.q - desired[: res.q.shape[0], 0]
    return float(np.sqrt(np.mean(e ** 2))), float(np.abs(e).max()), e


# ------------------------------------------------------------------------------------ output
def write_csv(path, robot, res_ff, res_pd, desired):
    """The demo's time series with units in the header: ``t [s]``, then per joint q, q̇ of the
    feedforward run, q_d, q̇_d, q of the PD-only run, the command, the link torque τ_e, motor
    position θ (= q for rigid joints), spring deflection θ − q, the feedforward run's command
    without PD, and ``compute_time [s]``."""
    units = joint_units(robot.joint_types)
    theta = res_ff.theta if res_ff.theta is not None else res_ff.q
    cols = [("q", res_ff.q, 0), ("qd", res_ff.qd, 1), ("q_des", desired[:, 0], 0),
            ("qd_des", desired[:, 1], 1), ("q_pd_only", res_pd.q, 0),
            ("qd_pd_only", res_pd.qd, 1), ("command", res_ff.command, 2),
            ("command_pd_only", res_pd.command, 2), ("tau_e", res_ff.tau_e, 2),
            ("theta", theta, 0), ("deflection", theta - res_ff.q, 0)]
    assert len(cols) == CSV_COLUMNS_PER_JOINT
    header, table = ["t [s]"], [res_ff.t]
    for name, arr, kind in cols:
        for j, joint in enumerate(robot.joint_names):
            pos, force = units[j]
            unit = (pos, f"{pos}/s", force)[kind]
            header.append(f"{name}_{joint} [{unit}]")
            table.append(arr[:, j])
    header.append("compute_time [s]")
    table.append(res_ff.compute_time)
    np.savetxt(path, np.column_stack(table), delimiter=",", header=",".join(header),
               comments="", fmt="%.10g")


def _first_nonzero(y):
    nz = np.flatnonzero(y > 0)
    return int(nz[0]) if nz.size else y.shape[0]


def plots(plt, out, robot, res_ff, res_pd, desired, actuator_name, label):
    """Three PNGs: tracking (both runs, error on a log axis), command (and spring deflection),
    and the controller's compute time (histogram on a log axis). Returns their paths."""
    from matplotlib.lines import Line2D

    names = robot.joint_names
    n = len(names)
    cmap = plt.get_cmap("tab10" if n <= 10 else "tab20")
    colors = [cmap(j % cmap.N) for j in range(n)]
    units = joint_units(robot.joint_types)
    pos = ", ".join(sorted({u[0] for u in units}))
    force = ", ".join(sorted({u[1] for u in units}))
    t = res_ff.t
    files = []
    joint_handles = [Line2D([], [], color=c, lw=2) for c in colors]
    style_handles = [Line2D([], [], color="0.3", ls="--", lw=1.2),
                     Line2D([], [], color="0.3", ls="-", lw=1.2)]

    def finish(fig, path, title, legends):
        """Title, tight layout in the left 80 %, then each legend (axes, handles, labels,
        title) right of the data, level with the top of its axes."""
        fig.suptitle(title)
        fig.tight_layout(rect=(0, 0, 0.80, 0.96))
        for ax_, handles, labels, ltitle in legends:
            fig.legend(handles, labels, loc="upper left",
                       bbox_to_anchor=(0.81, ax_.get_position().y1), fontsize="small",
                       title=ltitle, frameon=False)
        fig.savefig(path, dpi=110)
        plt.close(fig)
        files.append(path)

    # --- tracking: desired dashed, actual solid, same colour per joint; both runs; error (log)
    fig, ax = plt.subplots(3, 1, figsize=(11, 9.5), sharex=True,
                           gridspec_kw={"height_ratios": (1, 1, 1)})
    for a, res, what in ((ax[0], res_ff, "feedforward + PD"), (ax[1], res_pd, "PD alone")):
        for j in range(n):
            a.plot(t, desired[:, 0, j], ls="--", lw=1.2, color=colors[j])
            a.plot(t, res.q[:, j], ls="-", lw=1.0, color=colors[j], alpha=0.9)
        a.set_ylabel(f"q [{pos}]")
        a.set_title(what, fontsize="medium", loc="left")
        a.grid(True, alpha=0.3)
    run_handles, floor = [], np.inf
    for res, what, c in ((res_pd, "PD alone", "tab:red"), (res_ff, "feedforward + PD",
                                                            "tab:blue")):
        e = np.abs(res.q - desired[:, 0]).max(axis=1)
        k = _first_nonzero(e)  # q(0) = q_d(0): the log axis starts at the first error
        if k < e.shape[0]:
            run_handles += ax[2].semilogy(t[k:], e[k:], color=c, lw=1.0, label=what)
            floor = min(floor, np.percentile(e[k:], 2))
    if np.isfinite(floor) and floor > 0:  # not down to the round-off of the first steps
        ax[2].set_ylim(bottom=10.0 ** np.floor(np.log10(floor)))
    ax[2].set_ylabel(f"max |q − q_d| over\njoints [{pos}]")
    ax[2].set_title("tracking error", fontsize="medium", loc="left")
    ax[2].set_xlabel("t [s]")
    ax[2].set_xlim(t[0], t[-1])
    ax[2].grid(True, which="both", alpha=0.3)
    path = out / f"demo_{actuator_name}_tracking.png"
    kind = actuator_name if actuator_name == "rigid" else actuator_name.upper()
    finish(fig, path, f"{label}: tracking, {kind} joints",
           [(ax[0], joint_handles + style_handles, list(names) + ["desired q_d (dashed)",
                                                                  "actual q (solid)"], "joint"),
            (ax[2], run_handles, [h.get_label() for h in run_handles], "run")])

    # --- command (and SEA spring deflection)
    elastic = res_ff.theta is not None
    fig, ax = plt.subplots(3 if elastic else 2, 1, figsize=(11, 8.5 if elastic else 6.5),
                           sharex=True)
    cmd_name = "τ_m" if elastic else "τ"
    for a, res, what in ((ax[0], res_ff, "feedforward + PD"), (ax[1], res_pd, "PD alone")):
        for j in range(n):
            a.plot(t, res.command[:, j], lw=1.0, color=colors[j])
        a.set_ylabel(f"{cmd_name} [{force}]")
        a.set_title(f"command, {what}", fontsize="medium", loc="left")
        a.grid(True, alpha=0.3)
    if elastic:
        for j in range(n):
            ax[2].plot(t, res_ff.theta[:, j] - res_ff.q[:, j], lw=1.0, color=colors[j])
        ax[2].set_ylabel(f"θ − q [{pos}]")
        ax[2].set_title("spring deflection, feedforward + PD", fontsize="medium", loc="left")
        ax[2].grid(True, alpha=0.3)
    ax[-1].set_xlabel("t [s]")
    ax[-1].set_xlim(t[0], t[-1])
    path = out / f"demo_{actuator_name}_command.png"
    finish(fig, path, f"{label}: commands, {kind} joints",
           [(ax[0], joint_handles, list(names), "joint")])

    # --- compute time: histogram on a log axis with percentiles
    ct = res_ff.compute_time[1:] * 1e6
    ct = ct[ct > 0]
    fig, a = plt.subplots(1, 1, figsize=(9, 4.2))
    if ct.size:
        bins = np.logspace(np.log10(ct.min()), np.log10(ct.max()) + 1e-9, 60)
        a.hist(ct, bins=bins, color="0.5")
        a.set_xscale("log")
        a.set_yscale("log")
        handles = []
        for p, c in ((50, "tab:blue"), (99, "tab:orange"), (100, "tab:red")):
            v = np.percentile(ct, p)
            handles.append(a.axvline(v, color=c, lw=1.2,
                                     label=f"{'max' if p == 100 else f'p{p}'} {v:.1f} µs"))
    a.set_xlabel("controller compute time per cycle [µs] (feedforward + PD, wall clock)")
    a.set_ylabel("cycles")
    a.grid(True, which="both", alpha=0.3)
    path = out / f"demo_{actuator_name}_timing.png"
    fig.suptitle(f"{label}: controller compute time over {ct.size} cycles")
    a.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    files.append(path)
    return files


# -------------------------------------------------------------------------------------- run
def prepare(args):
    """Every check of the demo's input, before any simulation.

    Returns:
        dict with robot, traj, actuator, label, notes, duration, dt, substeps, plt, out.

    Raises:
        InputError: a bad option or file (one line).
    """
    plt = None
    notes = []
    if not args.no_plots:
        try:
            plt = plot_backend()
        except InputError:
            notes.append(f"plots skipped: {PLOT_HINT}")
    urdf, locks, traj_file, label = resolve_robot(args.robot)
    locks.update(dict(args.lock))
    robot = load_robot(urdf, locks)
    if robot.n == 0:
        raise InputError(f"--robot {args.robot}: the robot has no movable joint left")
    if args.trajectory is not None:
        traj_file = Path(args.trajectory)
        if not traj_file.is_file():
            raise InputError(f"--trajectory {traj_file}: no such file")
    if traj_file is not None:
        traj = load_trajectory(traj_file, robot.joint_names, urdf, locked=locks)
        notes += trajectory_notes(robot, traj)
    else:
        traj, more = generated_trajectory(robot)
        notes += more
    if args.actuator == "sea":
        actuator = (load_actuator(args.sea_config, robot.n) if args.sea_config is not None
                    else sea_actuator(args.robot if not args.lock else "", robot, traj))
        if actuator is None or type(actuator).__name__ != "SEA":
            raise InputError(f"--sea-config {args.sea_config}: the demo needs actuator.type sea")
    else:
        if args.sea_config is not None:
            raise InputError("--sea-config needs --actuator sea")
        actuator = None
    duration = args.duration if args.duration is not None else traj.duration + 0.5
    dt = args.dt
    if dt > duration:
        raise InputError(f"--dt {dt:g} is longer than the simulated time {duration:g} s")
    check_memory(duration / dt + 1, 1 + CSV_COLUMNS_PER_JOINT * robot.n * 2,
                 f"--duration {duration:g} / --dt {dt:g}")
    substeps = args.substeps or (1 if actuator is None else 4)
    # the robot must be simulable at the start: a positive definite, finite mass matrix
    q0 = traj.sample(traj.start_time)[0]
    with np.errstate(all="ignore"):
        M = robot.mass_matrix(q0)
        ok = bool(np.all(np.isfinite(M)))
        if ok:
            try:
                np.linalg.cholesky(M)
            except np.linalg.LinAlgError:
                ok = False
    if not ok:
        raise InputError(f"--robot {args.robot}: the mass matrix at the start pose is not "
                         "positive definite (massless links?); the simulator cannot run it")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out}: exists and is not a directory")
    if not out.parent.is_dir() and not out.parent == Path(""):
        raise InputError(f"--out {out}: directory {out.parent} does not exist")
    return dict(robot=robot, traj=traj, traj_file=traj_file, actuator=actuator, label=label,
                notes=notes,
                duration=duration, dt=dt, substeps=substeps, plt=plt, out=out)


def run(args) -> int:
    """Run the demo with parsed ``args`` (see :func:`add_arguments`).

    Returns:
        0 when the feedforward improved the tracking over the PD alone, 1 when it did not or the
        simulation failed, 2 on bad input (one line on stderr).
    """
    try:
        p = prepare(args)
    except InputError as exc:
        print(f"{PROG} demo: error: {exc}", file=sys.stderr)
        return 2
    robot, traj, actuator = p["robot"], p["traj"], p["actuator"]
    duration, dt, substeps = p["duration"], p["dt"], p["substeps"]
    for note in p["notes"]:
        print(f"note: {note}")
    origin = "from file" if p["traj_file"] is not None else "generated inside the joint limits"
    print(f"robot {p['label']!r}: {robot.n} joints, {robot.total_mass:.3g} kg; trajectory "
          f"{traj.duration:g} s ({origin}); actuator {args.actuator}"
          + (f" (K = {np.round(actuator.stiffness, 1).tolist()} N m/rad, "
             f"B = {np.round(actuator.motor_inertia, 4).tolist()} kg m²)"
             if actuator is not None else ""))
    kp, kd = pd_gains(robot, traj.sample(traj.start_time)[0], actuator, demo_poses(traj), dt)
    how = ("link side, from M(q0), gravity and the control period" if actuator is None
           else f"motor side, {WN_SEA:g} rad/s on the motor inertia")
    fmt = dict(precision=3, max_line_width=400)
    print(f"PD gains ({how}): Kp = {np.array2string(kp, **fmt)} [N m/rad], "
          f"Kd = {np.array2string(kd, **fmt)} [N m s/rad]")
    print(f"simulating {duration:g} s twice (feedforward + PD, PD alone): controller every "
          f"{dt:g} s (zero-order hold), plant RK4 with {substeps} step(s) per period ...")
    try:
        res_ff, desired, stats = run_case(robot, traj, actuator, True, duration, dt, substeps)
        res_pd, _, _ = run_case(robot, traj, actuator, False, duration, dt, substeps)
    except InputError as exc:
        print(f"{PROG} demo: error: {exc}", file=sys.stderr)
        return 2
    except (ValueError, RuntimeError, ArithmeticError) as exc:
        print(f"{PROG} demo: error: the simulation failed: {' '.join(str(exc).split())}",
              file=sys.stderr)
        return 1
    rms_ff, max_ff, _ = tracking_errors(res_ff, desired)
    rms_pd, max_pd, _ = tracking_errors(res_pd, desired)
    unit = "rad" if all(u[0] == "rad" for u in joint_units(robot.joint_types)) else "rad or m"
    ct = res_ff.compute_time[1:] * 1e6
    p50, p90, p99 = np.percentile(ct, (50, 90, 99))
    print(f"tracking error q − q_d (all joints and samples) [{unit}]:")
    print(f"  PD alone          RMS {rms_pd:.3e}   max {max_pd:.3e}")
    print(f"  feedforward + PD  RMS {rms_ff:.3e}   max {max_ff:.3e}")
    if rms_ff > 0:
        print(f"  the feedforward reduces the RMS error {rms_pd / rms_ff:.3g}-fold")
    else:
        print("  the feedforward tracks exactly (zero error)")
    print(f"controller compute time per cycle over {ct.size} cycles (feedforward + PD, wall "
          f"clock, this machine): p50 {p50:.1f} µs, p90 {p90:.1f} µs, p99 {p99:.1f} µs, "
          f"max {ct.max():.1f} µs; FeedforwardController.update alone: p50 "
          f"{stats['p50'] * 1e6:.1f} µs, p99 {stats['p99'] * 1e6:.1f} µs")
    out = p["out"]
    out.mkdir(parents=True, exist_ok=True)
    csv = out / f"demo_{args.actuator}.csv"
    write_csv(csv, robot, res_ff, res_pd, desired)
    files = [csv]
    if p["traj_file"] is None:  # reusable: mbs-dynamics feedforward URDF <this file> -o ff.csv
        files.append(out / f"demo_{p['label']}_trajectory.yaml")
        traj.save(files[-1])
    if p["plt"] is not None:
        files += plots(p["plt"], out, robot, res_ff, res_pd, desired, args.actuator, p["label"])
    print("wrote " + ", ".join(str(f) for f in files))
    if not rms_ff < rms_pd:
        print(f"{PROG} demo: the feedforward did not improve the tracking on this robot",
              file=sys.stderr)
        return 1
    return 0


def main(argv=None) -> int:
    """``python -m mbs_dynamics.demo [options]`` (same as ``mbs-dynamics demo``)."""
    parser = add_arguments(ArgumentParser(prog=f"{PROG} demo", description=__doc__.split("\n")[0]))
    try:
        args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    except InputError as exc:
        print(f"{PROG} demo: error: {exc}", file=sys.stderr)
        return 2
    return run(args)


if __name__ == "__main__":
    raise SystemExit(main())
