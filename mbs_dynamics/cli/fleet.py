"""``mbs-dynamics fleet``: a fleet's logs ``LOGS_DIR/<robot_id>/<log>`` identified per robot and
time window, the parameters that drift flagged (:mod:`mbs_dynamics.identification.drift`);
writes OUT/fleet_report.json and one figure per flagged robot."""
from __future__ import annotations

import sys
from pathlib import Path

from .._cliutil import PROG, InputError, existing_file, positive_float
from ._common import add_model_options, load_robot, one_line


def add_parser(subparsers):
    """Register ``fleet`` and its options."""
    p = subparsers.add_parser(
        "fleet", help="identify a fleet's logs per robot and time window, flag drift",
        description="Identify every robot of a fleet of one model from the logs in "
                    "LOGS_DIR/<robot_id>/<log> (CSV files, rosbag2 directories) per time window "
                    "(by the logs' time stamps): base parameters and friction with σ. Parameters "
                    "that move by more than k σ between windows or from the fleet's median are "
                    "flagged. The logs are cut into chunks whose sufficient statistics are "
                    "computed on a local Dask cluster (or --scheduler) and added. Writes "
                    "OUT/fleet_report.json and OUT/<robot_id>_drift.png per flagged robot. A bad "
                    "log or an unreachable scheduler is one warning line; the rest is identified.")
    p.add_argument("urdf", type=existing_file, metavar="ROBOT", help="URDF file of the model")
    p.add_argument("logs_dir", type=Path, metavar="LOGS_DIR",
                   help="directory of <robot_id>/<log> (CSV files, rosbag2 directories)")
    p.add_argument("-o", "--output", required=True, metavar="OUT", help="output directory")
    p.add_argument("--window", default="1d", help="time window: 1d, 12h, 30min, ... (default 1d)")
    p.add_argument("-k", type=positive_float, default=5.0,
                   help="flag changes larger than k σ (default 5)")
    p.add_argument("--scheduler", default=None, metavar="tcp://HOST:PORT",
                   help="a running Dask scheduler (default: a local cluster of --workers)")
    p.add_argument("--workers", type=int, default=2,
                   help="worker processes of the local cluster (0: run in this process)")
    p.add_argument("--topic", default="/joint_states",
                   help="JointState topic of bags (default /joint_states)")
    p.add_argument("--cutoff", type=positive_float, default=None, metavar="HZ",
                   help="low-pass cut-off for the positions [Hz] (default 10)")
    p.add_argument("--no-friction", action="store_true", help="do not identify friction")
    p.add_argument("--no-plots", action="store_true", help="write the JSON report only")
    p.add_argument("--quiet", action="store_true", help="no progress or summary")
    add_model_options(p)
    return p


def _progress(done, total, _cid):
    width = 30
    filled = int(width * done / total)
    sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} chunks")
    if done == total:
        sys.stderr.write("\n")
    sys.stderr.flush()


def run(args):
    """Identify the fleet and write the report (and plots); returns 0."""
    try:
        import scipy  # noqa: F401
        from ..identification import drift as _fleet
    except ImportError as exc:
        raise InputError(f"fleet needs {getattr(exc, 'name', None) or exc}: "
                         "pip install 'mbs_dynamics[fleet]'") from None
    if args.workers < 0:
        raise InputError(f"--workers must be 0 or more, got {args.workers}")
    if args.lock:
        raise InputError("--lock: identify the full robot (the fleet's logs carry every joint)")
    try:
        _fleet.parse_window(args.window)  # checked before any work
    except ValueError as exc:
        raise InputError(f"--window: {one_line(exc)}") from None
    if not args.logs_dir.is_dir():
        raise InputError(f"{args.logs_dir}: no such directory (expected "
                         "LOGS_DIR/<robot_id>/<log>)")
    out = Path(args.output)
    if out.exists() and not out.is_dir():
        raise InputError(f"-o: {out} exists and is not a directory")
    robot = load_robot(args, one_dof="identification from joint logs")
    if robot.floating_base:
        raise InputError(f"{args.urdf}: identification needs a fixed-base robot")
    try:
        res = _fleet.fleet(robot, args.logs_dir, window=args.window, k=args.k,
                           friction=not args.no_friction, cutoff=args.cutoff, topic=args.topic,
                           scheduler=args.scheduler, workers=args.workers,
                           progress=None if args.quiet else _progress)
    except ImportError as exc:
        raise InputError(one_line(exc)) from None
    except ValueError as exc:
        raise InputError(one_line(exc)) from None
    for line in res.errors:
        print(f"{PROG}: warning: {line}", file=sys.stderr)
    if not res.robots:
        raise InputError(f"{args.logs_dir}: no usable log of this robot")
    paths = res.write(out, plots=not args.no_plots)
    if not args.quiet:
        for rid, wins in res.robots.items():
            print(f"{rid}: {len(wins)} window(s), "
                  f"{sum(w['samples'] for w in wins)} samples")
        for f in res.flags:
            print(f"flag: {f['robot']} {f['window']} {f['parameter']} ({f['kind']}, "
                  f"{f['reason']}): {f['change']:+.4g}, {f['size_sigma']:.1f} σ")
        for p in res.payloads:
            if p["mass"] is not None:
                com = ("" if p["com"] is None else ", centre of mass (" + ", ".join(
                    f"{c:.4g}±{s:.2g}" for c, s in zip(p["com"], p["com_sigma"]))
                    + f") m in {p['frame']}")
                print(f"payload: {p['robot']} {p['window']} (since {p['since']}): "
                      f"{p['mass']:+.4g}±{p['mass_sigma']:.2g} kg{com}")
        print("-> " + ", ".join(paths))
    return 0
