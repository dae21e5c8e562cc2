"""``mbs-dynamics identify``: base inertial parameters, friction (and SEA springs) from a CSV or
rosbag2 log (:mod:`mbs_dynamics.identification`): writes OUT.urdf, OUT_actuators.yaml and
OUT_report.json."""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from .._cliutil import (PROG, InputError, check_output_dir, existing_file, plot_backend,
                        positive_float)
from ._common import CHUNK, add_model_options, load_robot, one_line, progress_bar


def add_parser(subparsers):
    """Register ``identify`` and its options."""
    p = subparsers.add_parser(
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
    add_model_options(p)
    return p


def _float_list(text):
    try:
        vals = [float(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number or comma-separated list") \
            from None
    if not all(math.isfinite(v) and v != 0 for v in vals):
        raise argparse.ArgumentTypeError(f"{text!r}: torque constants must be finite and non-zero")
    return vals


def identification_missing(exc):
    """One-line hint when a dependency of identification cannot be imported (a broken
    installation: scipy is a dependency of the package, rosbags is the ``identify`` extra)."""
    name = getattr(exc, "name", None) or str(exc)
    return InputError(f"identification needs {name}: pip install 'mbs_dynamics[identify]'")


def run(args):
    """Identify, then write the URDF, the actuator YAML and the report; returns 0."""
    import warnings

    plt = plot_backend(args.plot) if args.plot is not None else None
    out = Path(args.output)
    check_output_dir(Path(f"{out}.urdf"), "-o")
    try:
        from ..identification import logs, pipeline
        from ..identification.report import format_report, plot_torques
    except ImportError as exc:
        raise identification_missing(exc) from None
    if args.lock:
        raise InputError("--lock: identify writes the URDF's inertials back; a locked joint's "
                         "links would be merged into its parent's inertial (identify the "
                         "full robot and hold the joint still instead)")
    robot = load_robot(args, one_dof="identification from joint logs")
    if robot.floating_base:
        raise InputError(f"{args.urdf}: identification needs a fixed-base robot")
    kt = args.torque_constant
    if kt is not None and len(kt) not in (1, robot.n):
        raise InputError(f"--torque-constant: {len(kt)} values for {robot.n} joints")
    progress = None if args.quiet else (lambda done, total: progress_bar(done, total, sys.stderr))
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
            raise InputError(one_line(exc)) from None
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
