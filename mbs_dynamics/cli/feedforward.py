"""``mbs-dynamics feedforward``: τ, τ', τ'' (and θ, θ', θ'', τ_m of SEA/VSA actuators) sampled
along a C⁴ trajectory, written to CSV with units (and a plot with matplotlib)."""
from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

from .._cliutil import (PROG, InputError, check_memory, check_output_dir, existing_file,
                        joint_units, load_actuator, load_trajectory, plot_backend,
                        positive_float, unit_of)
from ._common import CHUNK, add_model_options, load_robot, progress_bar

#: CSV/plot quantities: (name, row of the sampled array, label).
Q_COLUMNS = ("q", "q_dot", "q_ddot", "q_dddot", "q_ddddot")
FF_COLUMNS = ("tau", "tau_dot", "tau_ddot")
ACT_COLUMNS = ("theta", "theta_dot", "theta_ddot", "tau_motor")


def add_parser(subparsers):
    """Register ``feedforward`` and its options."""
    p = subparsers.add_parser(
        "feedforward", help="τ, τ', τ'' (and SEA/VSA motor references) along a trajectory",
        description="Sample a C⁴ trajectory at --rate Hz and write every quantity per sample: "
                    "q..q'''', τ, τ', τ'' and, with an actuator config, θ, θ', θ'', τ_m (a VSA "
                    "adds its spring stiffness). CSV columns are named "
                    "'quantity_joint [unit]', the first is 't [s]'.")
    p.add_argument("urdf", type=existing_file, metavar="URDF", help="URDF file")
    p.add_argument("trajectory", type=existing_file, metavar="TRAJECTORY",
                   help="JointTrajectory-shaped YAML or JSON (joint_names, points with "
                        "time_from_start, positions, optional velocities/accelerations)")
    p.add_argument("--sea", "--actuator", dest="config", type=existing_file, metavar="CONFIG",
                   help="YAML with actuator.* keys (nested or dotted, as the ROS parameters): "
                        "actuator.type sea or vsa, stiffness, motor_inertia, ...; default rigid")
    p.add_argument("--rate", type=positive_float, default=1000.0, metavar="HZ",
                   help="sampling rate [Hz] (default 1000)")
    p.add_argument("-o", "--output", required=True, type=Path, metavar="OUT.csv",
                   help="CSV file to write (columns 't [s]' and 'quantity_joint [unit]')")
    p.add_argument("--plot", type=Path, metavar="OUT.png",
                   help="also write a multi-panel plot of q, τ, τ', τ'' (and the spring "
                        "deflection θ − q, τ_m) per joint; any matplotlib format (.png, .pdf, "
                        ".svg, ...); needs matplotlib (pip install 'mbs_dynamics[plot]')")
    p.add_argument("--quiet", action="store_true", help="no progress bar or summary")
    add_model_options(p)
    return p


def run(args):
    """Sample, check, write the CSV (and plot); returns 0."""
    # every check before any computation or output
    plt = plot_backend(args.plot) if args.plot is not None else None
    check_output_dir(args.output, "-o")
    robot = load_robot(args, one_dof="feedforward")
    traj = load_trajectory(args.trajectory, robot.joint_names, args.urdf,
                           locked=[name for name, _ in args.lock])
    actuator, kind = None, "rigid"
    if args.config is not None:
        actuator = load_actuator(args.config, robot.n)
        kind = type(actuator).__name__ if actuator is not None else "rigid"
    samples = math.floor(traj.duration * args.rate) + 2
    check_memory(samples, csv_columns(robot, actuator), f"--rate {args.rate:g}")
    # a coarse pass over the whole trajectory finds overflowing numbers before the long run
    _compute(robot, traj, actuator, np.linspace(traj.start_time, traj.end_time, 201),
             source=args.trajectory)

    ts = traj.times_at_rate(args.rate)
    progress = sys.stderr if (not args.quiet and ts.shape[0] >= 4 * CHUNK) else None
    data = _compute(robot, traj, actuator, ts, progress, source=args.trajectory)
    _write_csv(args.output, ts, data, robot)
    if plt is not None:
        _plot(plt, args.plot, ts, data, robot, kind)
    if not args.quiet:
        for w in _limit_warnings(robot, data):
            print(f"{PROG}: warning: {w}", file=sys.stderr)
        peak = np.abs(data.get("tau_motor", data["tau"])).max(axis=0)
        print(f"{ts.shape[0]} samples over [{ts[0]:g}, {ts[-1]:g}] s at {args.rate:g} Hz, "
              f"{kind}; peak |{'tau_motor' if actuator is not None else 'tau'}| = "
              f"{np.round(peak, 3).tolist()} [{_unit_label(robot, 'force')}] -> {args.output}"
              + (f", {args.plot}" if args.plot is not None else ""))
    return 0


def _compute(robot, traj, actuator, ts, progress=None, source="the trajectory"):
    """Sample and evaluate in chunks; returns a dict of (N, n) arrays.

    Raises:
        InputError: a value is not finite (e.g. overflow from huge trajectory numbers); the
            sample time is named. NumPy's floating-point warnings are silenced: the finiteness
            check reports the problem instead, in one line.
    """
    from ..control.actuators import VSA

    N, n = ts.shape[0], robot.n
    qs = np.empty((N, 5, n))
    taus = np.empty((N, 3, n))
    ref = np.empty((N, 4, n)) if actuator is not None else None
    with np.errstate(all="ignore"):
        for a in range(0, N, CHUNK):
            b = min(N, a + CHUNK)
            traj.sample_many(ts[a:b], out=qs[a:b])
            _check_finite(qs[a:b], Q_COLUMNS, ts[a:b], robot, source)  # before the dynamics
            _torque_derivatives(robot, qs[a:b], taus[a:b])
            _check_finite(taus[a:b], FF_COLUMNS, ts[a:b], robot, source)
            if actuator is not None:
                actuator.reference(qs[a:b], taus[a:b], out=ref[a:b])
                _check_finite(ref[a:b], ACT_COLUMNS, ts[a:b], robot, source)
            if progress is not None:
                progress_bar(b, N, progress)
        data = {name: qs[:, r] for r, name in enumerate(Q_COLUMNS)}
        data.update({name: taus[:, r] for r, name in enumerate(FF_COLUMNS)})
        if ref is not None:
            data.update({name: ref[:, r] for r, name in enumerate(ACT_COLUMNS)})
        if isinstance(actuator, VSA):  # its stiffness varies with the deflection
            data["stiffness"] = actuator.stiffness(data["theta"] - data["q"])
            _check_finite(data["stiffness"][:, None], ("stiffness",), ts, robot, source)
    return data


def _torque_derivatives(robot, qs, taus):
    """τ, τ′, τ″ of a block; where the kernels refuse an overflow (finite but huge values), the
    samples up to the first refused one, which is marked NaN for :func:`_check_finite` to name."""
    try:
        robot.torque_derivatives(qs, out=taus)
    except ValueError:
        for s in range(qs.shape[0]):
            try:
                robot.torque_derivatives(qs[s], out=taus[s])
            except ValueError:
                taus[s] = np.nan
                return


def _check_finite(block, names, ts, robot, source):
    """block (N, rows, n) with rows named ``names``: raise InputError at the first non-finite."""
    bad = ~np.isfinite(block)
    if bad.any():
        i, r, j = np.argwhere(bad)[0]
        raise InputError(f"{source}: {names[r]} of joint {robot.joint_names[j]} is not finite at "
                         f"t = {ts[i]:g} s (numbers too large for float64?)")


def _columns(data, robot):
    """CSV header (with units) and the matching list of (N,) columns."""
    units = joint_units(robot.joint_types)
    header, cols = ["t [s]"], []
    for q, arr in data.items():
        for j, name in enumerate(robot.joint_names):
            header.append(f"{q}_{name} [{unit_of(q, *units[j])}]")
            cols.append(arr[:, j])
    return header, cols


def csv_columns(robot, actuator):
    """Number of CSV columns of ``feedforward`` for this robot and actuator (time included)."""
    from ..control.actuators import VSA
    per_joint = len(Q_COLUMNS) + len(FF_COLUMNS)
    if actuator is not None:
        per_joint += len(ACT_COLUMNS) + (1 if isinstance(actuator, VSA) else 0)
    return 1 + per_joint * robot.n


def _write_csv(path, ts, data, robot):
    header, cols = _columns(data, robot)
    table = np.column_stack([ts] + cols)
    np.savetxt(path, table, delimiter=",", header=",".join(header), comments="", fmt="%.17g")


def _unit_label(robot, kind):
    units = sorted({u[0 if kind == "pos" else 1] for u in joint_units(robot.joint_types)})
    return ", ".join(units)


def _plot(plt, path, ts, data, robot, actuator_kind):
    """Multi-panel plot of the feedforward: q, τ, τ′, τ″ (and θ − q, τ_m, stiffness)."""
    pos, force = _unit_label(robot, "pos"), _unit_label(robot, "force")
    panels = [("q", lambda d: d["q"], f"q [{pos}]"),
              ("tau", lambda d: d["tau"], f"τ [{force}]"),
              ("tau_dot", lambda d: d["tau_dot"], f"τ′ [{force}/s]"),
              ("tau_ddot", lambda d: d["tau_ddot"], f"τ″ [{force}/s²]")]
    if "theta" in data:
        panels += [("deflection", lambda d: d["theta"] - d["q"], f"θ − q [{pos}]\n(spring)"),
                   ("tau_motor", lambda d: d["tau_motor"], f"τ_m [{force}]")]
    if "stiffness" in data:
        panels += [("stiffness", lambda d: d["stiffness"], f"stiffness\n[{force}/{pos}]")]
    names = robot.joint_names
    fig, axes = plt.subplots(len(panels), 1, sharex=True,
                             figsize=(10, 1.9 * len(panels) + 1.0), squeeze=False)
    axes = axes[:, 0]
    colors = plt.get_cmap("tab10" if len(names) <= 10 else "tab20")
    lines = []
    for ax, (_, get, label) in zip(axes, panels):
        y = get(data)
        lines = [ax.plot(ts, y[:, j], lw=1.1, color=colors(j % colors.N), label=name)[0]
                 for j, name in enumerate(names)]
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
    axes[-1].set_xlabel("t [s]")
    axes[-1].set_xlim(ts[0], ts[-1])
    fig.legend(lines, names, loc="upper left", bbox_to_anchor=(0.83, 0.94), fontsize="small",
               title="joint", frameon=False)
    fig.suptitle(f"mbs-dynamics feedforward along the trajectory ({actuator_kind})")
    fig.tight_layout(rect=(0, 0, 0.83, 0.97))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _limit_warnings(robot, data):
    """Human-readable warnings where the sampled motion exceeds the URDF limits."""
    warn = []
    checks = [("position", data["q"], robot.lower, robot.upper),
              ("velocity", np.abs(data["q_dot"]), None, robot.velocity_limit),
              ("effort", np.abs(data.get("tau_motor", data["tau"])), None, robot.effort_limit)]
    for what, x, lo, hi in checks:
        for j, name in enumerate(robot.joint_names):
            if np.isfinite(hi[j]) and x[:, j].max() > hi[j] * (1 + 1e-9) + 1e-12:
                warn.append(f"{name}: {what} {x[:, j].max():.4g} exceeds limit {hi[j]:.4g}")
            if lo is not None and np.isfinite(lo[j]) and x[:, j].min() < lo[j] - 1e-12:
                warn.append(f"{name}: {what} {x[:, j].min():.4g} below limit {lo[j]:.4g}")
    return warn
