"""mbs-dynamics: rigid-body dynamics and SEA/VSA flatness feedforward from a URDF.

Subcommands:
  info URDF                      joints (type, limits, axis), link masses, tree, total mass, frames
  kinematics ROBOT --frame F --q Q
                                 pose, twist and Jacobian of a frame (body, spatial, hybrid or
                                 mixed representation)
  feedforward URDF TRAJECTORY    τ, τ', τ'' (and θ, θ', θ'', τ_m with --sea CONFIG) sampled along a
                                 C⁴ trajectory, written to CSV (and a plot with matplotlib)
  identify URDF LOG -o OUT       inertial parameters, friction (and SEA springs) from a CSV or
                                 rosbag2 log: OUT.urdf, OUT_actuators.yaml, OUT_report.json
  excite URDF -o TRAJ.yaml       an exciting trajectory for identification (Fourier series)
  demo                           closed-loop tracking demo in the built-in simulator
  codegen URDF -o DIR            C99 source and header of the robot's dynamics (τ, τ', τ'', M,
                                 g, forward dynamics, frame Jacobians) for C/C++ control loops

Bad input files or options give a one-line error and exit code 2, before any long computation.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

from ._cliutil import (PROG, ArgumentParser, InputError, add_lock_option, add_loops_option,
                       check_memory,
                       check_output_dir, existing_file, joint_units, load_actuator,
                       load_trajectory, number_list, plot_backend, positive_float,
                       positive_int, robot_file, unit_of)
from .kinematics.frames import REPRESENTATIONS

__all__ = ["get_argument_parser", "main"]

#: Subcommands that live in other modules, imported only when used: name -> (module, help).
LAZY = {
    "demo": ("mbs_dynamics.demo", "closed-loop tracking demo (feedforward + PD vs PD) in the "
                                  "built-in simulator"),
}
#: CSV/plot quantities: (name, row of the sampled array, label).
Q_COLUMNS = ("q", "q_dot", "q_ddot", "q_dddot", "q_ddddot")
FF_COLUMNS = ("tau", "tau_dot", "tau_ddot")
ACT_COLUMNS = ("theta", "theta_dot", "theta_ddot", "tau_motor")
CHUNK = 2000  # samples per batch call (and per progress-bar step)


# ------------------------------------------------------------------------------------ parser
def get_argument_parser():
    """The ``mbs-dynamics`` argument parser (subcommands info, feedforward, codegen, demo)."""
    parser = ArgumentParser(prog=PROG, description=__doc__,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = sub.add_parser("info", help="describe a URDF: joints, masses, tree, total mass",
                       description="Describe the dynamics model built from a URDF.")
    p.add_argument("urdf", type=robot_file, metavar="URDF",
                   help="URDF file, or the name of a bundled robot (e.g. arm7, quad12)")
    _add_model_options(p)
    p.add_argument("--floating-base", action="store_true",
                   help="the base link is a free body (legged robots, humanoids): "
                        "q = (x, y, z, qx, qy, qz, qw, joints)")
    p.add_argument("--json", action="store_true", help="print the description as JSON")

    p = sub.add_parser(
        "kinematics", help="pose, twist and Jacobian of a frame at a configuration",
        description="Pose (4×4, in the world = the base link frame of a fixed base), twist and "
                    "Jacobian (6 × nv, rows vx vy vz wx wy wz: every 6-vector is linear, "
                    "angular) of one frame (any URDF link; `info` lists them) at --q (and --qd).")
    p.add_argument("urdf", type=robot_file, metavar="ROBOT",
                   help="URDF file, or the name of a bundled robot (e.g. arm7, quad12)")
    p.add_argument("--frame", required=True, help="frame (URDF link) name")
    p.add_argument("--q", required=True, type=number_list, metavar='"Q1 Q2 ..."',
                   help="configuration: nq numbers separated by spaces or commas (a floating "
                        "base: x y z qx qy qz qw, then the joints); a list that starts with a "
                        "minus sign and has no space: --q=-0.1,0.2")
    p.add_argument("--qd", type=number_list, metavar='"V1 V2 ..."',
                   help="velocity (nv numbers): also print the twist")
    p.add_argument("--representation", default="body", choices=REPRESENTATIONS,
                   help="body (Pinocchio LOCAL, default), spatial (WORLD), hybrid "
                        "(LOCAL_WORLD_ALIGNED) or mixed (world velocity of the origin, body "
                        "angular velocity)")
    p.add_argument("--floating-base", action="store_true",
                   help="the base link is a free body: q = (x, y, z, qx, qy, qz, qw, joints)")
    p.add_argument("--json", action="store_true", help="print pose, twist and Jacobian as JSON")
    _add_model_options(p)

    p = sub.add_parser(
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
    _add_model_options(p)

    p = sub.add_parser(
        "codegen", help="C99 source and header of the robot's dynamics for C/C++ loops",
        description="Write P.h and P.c: straight-line C99 for this robot (libm only, no "
                    "allocation, re-entrant): P_inverse_dynamics, P_torque_derivatives (τ, τ', "
                    "τ''), P_mass_matrix, P_gravity_torques, P_forward_dynamics and "
                    "P_frame_jacobian_<frame> (LOCAL, rows linear, angular) for each --frames.")
    p.add_argument("urdf", type=robot_file, metavar="ROBOT",
                   help="URDF file, or the name of a bundled robot (e.g. arm7, quad12)")
    p.add_argument("-o", "--output", required=True, type=Path, metavar="DIR",
                   help="directory to write P.h and P.c into (created if missing)")
    p.add_argument("--frames", nargs="+", default=[], metavar="F",
                   help="URDF links whose Jacobians to generate")
    p.add_argument("--prefix", default="robot", metavar="P",
                   help="C identifier prefix of every generated name (default robot)")
    p.add_argument("--floating-base", action="store_true",
                   help="the base link is a free body: q = (x, y, z, qx, qy, qz, qw, joints)")
    _add_model_options(p)
    _add_identification_parsers(sub)

    for name, (_, text) in LAZY.items():
        sub.add_parser(name, help=text)  # listed in --help; main() dispatches before parsing
    return parser


def _add_identification_parsers(sub):
    p = sub.add_parser(
        "identify", help="identify inertial parameters, friction (and SEA K, B) from a log",
        description="Identify the base inertial parameters (weighted least squares, with σ), "
                    "viscous and Coulomb friction per joint and, for series elastic logs, the "
                    "spring stiffness K and motor inertia B per joint, from a CSV file or a "
                    "rosbag2 (sqlite3 or MCAP) of sensor_msgs/JointState; then a physically "
                    "consistent estimate. Writes OUT.urdf (inertials replaced), "
                    "OUT_actuators.yaml (actuator.* keys) and OUT_report.json. CSV columns: "
                    "time, <joint>/position, <joint>/effort, optional <joint>/velocity and "
                    "<joint>/motor_position (then effort is the motor torque).")
    p.add_argument("urdf", type=existing_file, metavar="URDF", help="URDF file of the robot")
    p.add_argument("log", type=Path, metavar="LOG",
                   help="CSV file or rosbag2 directory (or its .db3/.mcap file)")
    p.add_argument("-o", "--output", required=True, metavar="OUT",
                   help="output prefix: writes OUT.urdf, OUT_actuators.yaml, OUT_report.json")
    p.add_argument("--topic", default="/joint_states",
                   help="JointState topic of a bag (default /joint_states)")
    p.add_argument("--cutoff", type=positive_float, default=None, metavar="HZ",
                   help="low-pass cut-off for the positions [Hz] (default 10)")
    p.add_argument("--torque-constant", type=_float_list, default=None, metavar="KT[,KT...]",
                   help="the logged effort is a motor current: τ = KT·effort (one number or "
                        "one per joint)")
    p.add_argument("--no-friction", action="store_true", help="do not identify friction")
    p.add_argument("--least-squares", action="store_true",
                   help="write the least-squares estimate instead of the physically "
                        "consistent one (may not load)")
    p.add_argument("--plot", type=Path, metavar="OUT.png",
                   help="also plot measured vs predicted torques (needs matplotlib)")
    p.add_argument("--quiet", action="store_true", help="no progress bar or report")
    _add_model_options(p)

    p = sub.add_parser(
        "excite", help="an exciting trajectory for identification (finite Fourier series)",
        description="Design a periodic finite Fourier series per joint (Swevers et al. 1997) "
                    "that starts and ends at rest, stays within the position, velocity and "
                    "acceleration limits, and minimises the condition number of the stacked "
                    "base regressor (friction columns included); written as a trajectory YAML "
                    "the feedforward command, the nodes and the proxy play.")
    p.add_argument("urdf", type=existing_file, metavar="URDF", help="URDF file of the robot")
    p.add_argument("-o", "--output", required=True, type=Path, metavar="TRAJ.yaml",
                   help="trajectory file to write (.yaml, .yml or .json)")
    p.add_argument("--period", type=positive_float, default=10.0, metavar="S",
                   help="period of the series [s] (default 10)")
    p.add_argument("--harmonics", type=positive_int, default=5, metavar="L",
                   help="harmonics per joint (default 5)")
    p.add_argument("--periods", type=positive_int, default=1, metavar="K",
                   help="periods written to the file (default 1)")
    p.add_argument("--max-acceleration", type=positive_float, default=None, metavar="A",
                   help="acceleration limit [rad/s²] of every joint (default: 2× its velocity "
                        "limit per second)")
    p.add_argument("--margin", type=_fraction, default=0.9, metavar="F",
                   help="use this fraction of every limit (default 0.9)")
    p.add_argument("--iterations", type=positive_int, default=60, metavar="N",
                   help="optimiser iterations (default 60)")
    p.add_argument("--seed", type=int, default=0, help="random start (default 0)")
    p.add_argument("--quiet", action="store_true", help="no summary")
    _add_model_options(p)


def _float_list(text):
    try:
        vals = [float(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number or comma-separated list") \
            from None
    if not all(math.isfinite(v) and v != 0 for v in vals):
        raise argparse.ArgumentTypeError(f"{text!r}: torque constants must be finite and non-zero")
    return vals


def _fraction(text):
    x = positive_float(text)
    if x > 1:
        raise argparse.ArgumentTypeError(f"{text!r} must lie in (0, 1]")
    return x


def _add_model_options(p):
    p.add_argument("--base-link", default=None, help="link fixed to the world (default: root)")
    p.add_argument("--tip-link", default=None, help="keep only the chain base → tip")
    add_lock_option(p)
    add_loops_option(p)


# ---------------------------------------------------------------------------------- helpers
def _load_robot(args):
    from .loader import load_urdf
    try:
        kw = {}
        if getattr(args, "loops", None) is not None:
            kw = {"loops": args.loops, "actuated": args.actuated}
        elif getattr(args, "actuated", None) is not None:
            raise InputError("--actuated needs --loops")
        return load_urdf(args.urdf, base_link=args.base_link, tip_link=args.tip_link,
                         locked_joints=dict(args.lock) or None,
                         floating_base=getattr(args, "floating_base", False), **kw)
    except ValueError as exc:
        msg = " ".join(str(exc).split())
        raise InputError(msg if str(args.urdf) in msg else f"{args.urdf}: {msg}") from None


def _fmt_limit(lo, hi):
    if not np.isfinite(lo) and not np.isfinite(hi):
        return "unlimited"
    return f"[{lo:.4g}, {hi:.4g}]"


def _describe(robot):
    """Model description as a JSON-able dict."""
    m = robot.model
    masses = m.inertias[:, 3, 3]
    children = {i: [] for i in range(-1, m.n)}
    for i, p in enumerate(m.parent):
        children[int(p)].append(i)
    fixed = {}
    for link, (body, _) in m.link_frames.items():
        if link != m.base_link and (body < 0 or link != m.link_names[body]):
            fixed.setdefault(int(body), []).append(link)
    joints = []
    for i in range(m.n):
        joints.append({
            "name": m.joint_names[i], "type": m.joint_types[i], "child_link": m.link_names[i],
            "parent_joint": None if m.parent[i] < 0 else m.joint_names[m.parent[i]],
            "axis": [float(x) for x in m.axis[i]],
            "lower": float(m.lower[i]), "upper": float(m.upper[i]),
            "velocity_limit": float(m.velocity_limit[i]), "effort_limit": float(m.effort_limit[i]),
            "body_mass": float(masses[i]), "fixed_links": sorted(fixed.get(i, [])),
            "mimic": (dict(zip(("master", "multiplier", "offset"), m.mimic[m.joint_names[i]]))
                      if m.joint_names[i] in m.mimic else None),
        })
    chain = all(int(p) == i - 1 for i, p in enumerate(m.parent))
    loops = None
    if hasattr(robot, "loop_residual"):  # a ClosedLoopRobot: the spanning tree + its loops
        loops = {"loops": [dict(lp) for lp in robot.loops], "actuated": list(robot.joint_names),
                 "chosen": bool(robot.actuated_chosen)}
    return {"closed_loops": loops, "name": m.name, "base_link": m.base_link, "n": m.n,
            "base": "floating" if m.floating_base else "fixed", "nq": m.nq, "nv": m.nv,
            "structure": "chain" if chain else "tree",
            "gravity": [float(x) for x in m.gravity], "total_mass": float(robot.total_mass),
            "moving_mass": float(masses.sum() + (m.base_inertia[3, 3] if m.floating_base
                                                 else 0.0)),
            "base_fixed_links": sorted(fixed.get(-1, [])), "joints": joints,
            "children": {str(k): v for k, v in children.items()},
            "frames": [{"name": f, "body": (m.base_link if m.link_frames[f][0] < 0
                                            else m.link_names[m.link_frames[f][0]])}
                       for f in robot.frame_names]}


def _print_info(d, out):
    w = max([len(j["name"]) for j in d["joints"]] + [5])
    base = ("floating (a free body: q = (x, y, z, qx, qy, qz, qw, joints), nq = "
            f"{d['nq']}, nv = {d['nv']})" if d["base"] == "floating"
            else "fixed to the world (use --floating-base for a legged robot or humanoid)")
    print(f"robot {d['name']!r}: {d['n']} movable joints, {d['structure']}, base link "
          f"{d['base_link']!r}, total mass {d['total_mass']:.4g} kg ({d['moving_mass']:.4g} kg "
          f"moving), gravity {d['gravity']}\nbase: {base}", file=out)
    print(f"\n{'joint':<{w}}  {'type':<10} {'axis':<22} {'limits':<20} {'vel.':>8} "
          f"{'effort':>8}  {'mass [kg]':>9}  link", file=out)
    for j in d["joints"]:
        axis = "(" + ", ".join(f"{x:.3g}" for x in j["axis"]) + ")"
        vel = f"{j['velocity_limit']:.4g}" if math.isfinite(j["velocity_limit"]) else "-"
        eff = f"{j['effort_limit']:.4g}" if math.isfinite(j["effort_limit"]) else "-"
        extra = f" (+ fixed: {', '.join(j['fixed_links'])})" if j["fixed_links"] else ""
        if j["mimic"]:
            mm = j["mimic"]
            extra += (f" [mimic: {mm['multiplier']:g}·{mm['master']} + {mm['offset']:g}, "
                      "not a coordinate]")
        print(f"{j['name']:<{w}}  {j['type']:<10} {axis:<22} "
              f"{_fmt_limit(j['lower'], j['upper']):<20} {vel:>8} {eff:>8}  "
              f"{j['body_mass']:>9.4g}  {j['child_link']}{extra}", file=out)
    print("\ntree (joint → child link; masses include rigidly attached links):", file=out)
    base = d["base_link"] + (f" (+ fixed: {', '.join(d['base_fixed_links'])})"
                             if d["base_fixed_links"] else "")
    print(base, file=out)

    stack = [(i, 1) for i in reversed(d["children"]["-1"])]  # depth-first, iteratively
    while stack:
        i, depth = stack.pop()
        j = d["joints"][i]
        print(f"{'  ' * depth}└─ {j['name']} [{j['type']}] → {j['child_link']} "
              f"({j['body_mass']:.4g} kg)", file=out)
        stack.extend((c, depth + 1) for c in reversed(d["children"][str(i)]))
    print(f"\nframes ({len(d['frames'])}: every link, base first then depth-first; "
          "`kinematics --frame`):", file=out)
    for f in d["frames"]:
        on = "" if f["body"] == f["name"] else f" (on {f['body']})"
        print(f"  {f['name']}{on}", file=out)
    if d.get("closed_loops"):
        cl = d["closed_loops"]
        print(f"\nclosed loops (the tree above is the spanning tree); actuated joints "
              f"{', '.join(cl['actuated'])}{' (chosen by the package)' if cl['chosen'] else ''}:",
              file=out)
        for lp in cl["loops"]:
            print(f"  {lp['name']}: {lp['type']} {lp['frame_a']} {lp['origin_a']['xyz']} ↔ "
                  f"{lp['frame_b']} {lp['origin_b']['xyz']}", file=out)


def _progress(done, total, out):
    width = 30
    filled = int(width * done / total)
    out.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} samples")
    if done == total:
        out.write("\n")
    out.flush()


def _compute(robot, traj, actuator, ts, progress=None, source="the trajectory"):
    """Sample and evaluate in chunks; returns a dict of (N, n) arrays.

    Raises:
        InputError: a value is not finite (e.g. overflow from huge trajectory numbers); the
            sample time is named. NumPy's floating-point warnings are silenced: the finiteness
            check reports the problem instead, in one line.
    """
    from .control.actuators import VSA

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
                _progress(b, N, progress)
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
    from .control.actuators import VSA
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


# ------------------------------------------------------------------------------ subcommands
def cmd_info(args):
    robot = _load_robot(args)
    d = _describe(robot)
    if args.json:
        json.dump(d, sys.stdout, indent=1, allow_nan=True)
        print()
    else:
        _print_info(d, sys.stdout)
    return 0


def cmd_feedforward(args):
    # every check before any computation or output
    plt = plot_backend(args.plot) if args.plot is not None else None
    check_output_dir(args.output, "-o")
    robot = _load_robot(args)
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


def _vector(values, size, option, what):
    if len(values) != size:
        raise InputError(f"{option} has {len(values)} numbers, expected {size} ({what})")
    return np.array(values)


def cmd_kinematics(args):
    robot = _load_robot(args)
    names = ", ".join(robot.joint_names[:4]) + (", ..." if robot.n > 4 else "")
    base = "x y z qx qy qz qw, " if robot.floating_base else ""
    q = _vector(args.q, robot.nq, "--q", base + names)
    qd = None if args.qd is None else _vector(args.qd, robot.nv, "--qd", (
        "vx vy vz wx wy wz of the base, " if robot.floating_base else "") + names)
    rep = args.representation
    try:
        T = robot.frame_placement(q, args.frame)
        J = robot.frame_jacobian(q, args.frame, rep)
        V = None if qd is None else robot.frame_velocity(q, qd, args.frame, rep)
    except ValueError as exc:
        raise InputError(" ".join(str(exc).split())) from None
    world = "the world" if robot.floating_base else f"the base link {robot.base_link!r}"
    if args.json:
        json.dump({"frame": args.frame, "representation": rep, "q": q.tolist(),
                   "pose": T.tolist(), "twist": None if V is None else V.tolist(),
                   "jacobian": J.tolist(), "columns": list(_columns_of(robot))}, sys.stdout,
                  indent=1)
        print()
        return 0
    np.set_printoptions(precision=6, suppress=True, linewidth=120)
    print(f"frame {args.frame!r} of {robot.model.name!r}, representation {rep!r} "
          f"({_PIN_NAME[rep]})")
    print(f"pose in {world} (4×4):")
    print(_indent(T))
    if V is not None:
        print("twist (vx vy vz [m/s], wx wy wz [rad/s]):")
        print(_indent(V[None]))
    cols = _columns_of(robot)
    print(f"Jacobian (6 × {robot.nv}; rows vx vy vz wx wy wz; columns {', '.join(cols)}):")
    print(_indent(J))
    return 0


_PIN_NAME = {"body": "Pinocchio LOCAL", "spatial": "Pinocchio WORLD",
             "hybrid": "Pinocchio LOCAL_WORLD_ALIGNED",
             "mixed": "world velocity of the origin, body angular velocity"}


def _columns_of(robot):
    base = ("base_vx", "base_vy", "base_vz", "base_wx", "base_wy", "base_wz")
    return (base if robot.floating_base else ()) + tuple(robot.joint_names)


def _indent(a):
    return "\n".join("  " + line for line in np.array2string(np.asarray(a)).splitlines())


def cmd_codegen(args):
    from .codegen import generate
    robot = _load_robot(args)
    if args.output.exists() and not args.output.is_dir():
        raise InputError(f"-o {args.output}: exists and is not a directory")
    try:
        files = generate(robot, frames=args.frames, prefix=args.prefix)
    except ValueError as exc:
        raise InputError(" ".join(str(exc).split())) from None
    args.output.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (args.output / name).write_text(text)
    print(f"wrote {', '.join(str(args.output / n) for n in files)} "
          f"({robot.nv} velocities, {len(args.frames)} frame Jacobians)")
    return 0


def _identification_missing(exc):
    """One-line hint when an optional dependency of identification is missing."""
    name = getattr(exc, "name", None) or str(exc)
    return InputError(f"identification needs {name}: pip install 'mbs_dynamics[identify]'")


def cmd_identify(args):
    import warnings

    plt = plot_backend(args.plot) if args.plot is not None else None
    out = Path(args.output)
    check_output_dir(Path(f"{out}.urdf"), "-o")
    try:
        import scipy  # noqa: F401
        from .identification import logs, pipeline
        from .identification.report import format_report, plot_torques
    except ImportError as exc:
        raise _identification_missing(exc) from None
    if args.lock:
        raise InputError("--lock: identify writes the URDF's inertials back; a locked joint's "
                         "links would be merged into its parent's inertial (identify the "
                         "full robot and hold the joint still instead)")
    robot = _load_robot(args)
    if robot.floating_base:
        raise InputError(f"{args.urdf}: identification needs a fixed-base robot")
    kt = args.torque_constant
    if kt is not None and len(kt) not in (1, robot.n):
        raise InputError(f"--torque-constant: {len(kt)} values for {robot.n} joints")
    progress = None if args.quiet else (lambda done, total: _progress(done, total, sys.stderr))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", pipeline.IdentificationWarning)
        try:
            log = logs.read_log(args.log, robot.joint_names, topic=args.topic)
            if not args.quiet and log.n_samples < 4 * CHUNK:
                progress = None
            result = pipeline.identify(
                robot, log, friction=not args.no_friction, consistent=not args.least_squares,
                cutoff=args.cutoff, torque_constants=kt, urdf=args.urdf, progress=progress)
            texts = {f"{out}.urdf": result.urdf_text(),
                     f"{out}_actuators.yaml": result.actuator_text()}
        except ValueError as exc:  # LogError, URDF validation of the result, bad cut-off
            raise InputError(" ".join(str(exc).split())) from None
    # everything is computed: now write
    for path, text in texts.items():
        Path(path).write_text(text)
    Path(f"{out}_report.json").write_text(
        json.dumps(pipeline._jsonable(result.report), indent=1) + "\n")
    if plt is not None:
        step = max(1, result.time.shape[0] // 4000)
        sl = slice(None, None, step)
        plot_torques(plt, args.plot, result.time[sl], result.torque[sl], result.predicted[sl],
                     result.predicted_urdf[sl], robot.joint_names,
                     title=f"{Path(args.log).name}: measured vs predicted τ (RMS identified "
                           f"{max(result.report['rms'].values()):.3g}, URDF "
                           f"{max(result.report['rms_urdf'].values()):.3g}, worst joint)")
    if not args.quiet:
        print(format_report(result.report, max_parameters=80))
        print(f"-> {out}.urdf, {out}_actuators.yaml, {out}_report.json"
              + (f", {args.plot}" if args.plot is not None else ""))
    else:
        for w in caught:
            if issubclass(w.category, pipeline.IdentificationWarning):
                print(f"{PROG}: warning: {w.message}", file=sys.stderr)
    return 0


def cmd_excite(args):
    check_output_dir(args.output, "-o")
    if args.output.suffix.lower() not in (".yaml", ".yml", ".json"):
        raise InputError(f"-o {args.output}: use a .yaml, .yml or .json file name")
    try:
        import scipy  # noqa: F401
        from .identification import excite
    except ImportError as exc:
        raise _identification_missing(exc) from None
    robot = _load_robot(args)
    if robot.floating_base:
        raise InputError(f"{args.urdf}: exciting trajectories need a fixed-base robot")
    try:
        design = excite.excite(robot, period=args.period, harmonics=args.harmonics,
                               max_acceleration=args.max_acceleration, margin=args.margin,
                               iterations=args.iterations, seed=args.seed)
        d = design.to_dict(periods=args.periods)
    except ValueError as exc:
        raise InputError(" ".join(str(exc).split())) from None
    from .control.trajectory import Trajectory
    Trajectory.from_dict(d).save(args.output)
    if not args.quiet:
        print(f"finite Fourier series, {args.harmonics} harmonics, period {args.period:g} s, "
              f"{args.periods} period(s): condition number {design.condition:.4g} "
              f"(start {design.condition_start:.4g}); peak |q̇| "
              f"{np.round(design.peak_velocity, 3).tolist()}, peak |q̈| "
              f"{np.round(design.peak_acceleration, 3).tolist()} -> {args.output}")
    return 0


def cmd_lazy(name, rest):
    """Run ``demo`` from its own module (imported only now)."""
    import importlib

    module_name, text = LAZY[name]
    try:
        module = importlib.import_module(module_name)
        add_arguments, run = module.add_arguments, module.run
    except (ImportError, AttributeError) as exc:
        raise InputError(f"{name}: not available ({module_name}: {exc})") from None
    parser = ArgumentParser(prog=f"{PROG} {name}", description=text)
    add_arguments(parser)
    return int(run(parser.parse_args(rest)) or 0)


def main(argv=None) -> int:
    """Entry point of ``mbs-dynamics``; returns the exit code (0 ok, 1 the computation failed,
    2 bad input). Every error is one line on stderr: ``mbs-dynamics: error: ...``."""
    argv = sys.argv[1:] if argv is None else list(argv)
    import warnings
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        return _main(argv)


def _show_warning(message, category, filename, lineno, file=None, line=None):
    """The package's warnings (e.g. the chosen actuated joints of a closed loop) as one line
    ``mbs-dynamics: warning: ...`` on stderr, like its errors, not Python's source excerpt."""
    print(f"{PROG}: warning: {' '.join(str(message).split())}", file=sys.stderr)


def _main(argv):
    try:
        if argv and argv[0] in LAZY:  # their options belong to their own parser
            return cmd_lazy(argv[0], argv[1:])
        args = get_argument_parser().parse_args(argv)
        return {"info": cmd_info, "feedforward": cmd_feedforward,
                "kinematics": cmd_kinematics, "codegen": cmd_codegen,
                "identify": cmd_identify, "excite": cmd_excite}[args.command](args)
    except InputError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. `mbs-dynamics info robot.urdf | head`
        import os
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:
        print(f"{PROG}: error: {exc.filename or ''}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    except ArithmeticError as exc:  # e.g. SpringInversionError: the config cannot follow
        print(f"{PROG}: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 1
    except MemoryError:  # inputs are bounded before the work; a small machine may still run out
        print(f"{PROG}: error: out of memory (the inputs are too large for this machine)",
              file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
