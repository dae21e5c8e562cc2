"""``mbs-dynamics excite``: an exciting trajectory for identification — a finite Fourier series
per joint within the limits, minimising the condition number of the base regressor
(:mod:`mbs_dynamics.identification.excite`)."""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from .._cliutil import (InputError, check_output_dir, existing_file, positive_float,
                        positive_int)
from ._common import add_model_options, load_robot, one_line
from .identify import identification_missing


def add_parser(subparsers):
    """Register ``excite`` and its options."""
    p = subparsers.add_parser(
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
    add_model_options(p)
    return p


def _fraction(text):
    x = positive_float(text)
    if x > 1:
        raise argparse.ArgumentTypeError(f"{text!r} must lie in (0, 1]")
    return x


def run(args):
    """Design the series and write it as a trajectory file; returns 0."""
    check_output_dir(args.output, "-o")
    if args.output.suffix.lower() not in (".yaml", ".yml", ".json"):
        raise InputError(f"-o {args.output}: use a .yaml, .yml or .json file name")
    try:
        from ..identification import excite
    except ImportError as exc:
        raise identification_missing(exc) from None
    robot = load_robot(args, one_dof="exciting trajectories")
    if robot.floating_base:
        raise InputError(f"{args.urdf}: exciting trajectories need a fixed-base robot")
    try:
        design = excite.excite(robot, period=args.period, harmonics=args.harmonics,
                               max_acceleration=args.max_acceleration, margin=args.margin,
                               iterations=args.iterations, seed=args.seed)
        d = design.to_dict(periods=args.periods)
    except ValueError as exc:
        raise InputError(one_line(exc)) from None
    from ..control.trajectory import Trajectory
    Trajectory.from_dict(d).save(args.output)
    if not args.quiet:
        print(f"finite Fourier series, {args.harmonics} harmonics, period {args.period:g} s, "
              f"{args.periods} period(s): condition number {design.condition:.4g} "
              f"(start {design.condition_start:.4g}); peak |q̇| "
              f"{np.round(design.peak_velocity, 3).tolist()}, peak |q̈| "
              f"{np.round(design.peak_acceleration, 3).tolist()} -> {args.output}")
    return 0
