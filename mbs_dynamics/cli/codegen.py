"""``mbs-dynamics codegen``: C99 source and header of the robot's dynamics (τ, τ', τ'', M, g,
forward dynamics, frame Jacobians) for C/C++ control loops (:mod:`mbs_dynamics.codegen`)."""
from __future__ import annotations

from pathlib import Path

from .._cliutil import InputError, robot_file
from ._common import add_model_options, load_robot, one_line


def add_parser(subparsers):
    """Register ``codegen`` and its options."""
    p = subparsers.add_parser(
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
    add_model_options(p)
    return p


def run(args):
    """Write ``P.h`` and ``P.c`` into ``-o``; returns 0."""
    from ..codegen import generate
    robot = load_robot(args)
    if args.output.exists() and not args.output.is_dir():
        raise InputError(f"-o {args.output}: exists and is not a directory")
    try:
        files = generate(robot, frames=args.frames, prefix=args.prefix)
    except ValueError as exc:
        raise InputError(one_line(exc)) from None
    args.output.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (args.output / name).write_text(text)
    print(f"wrote {', '.join(str(args.output / n) for n in files)} "
          f"({robot.nv} velocities, {len(args.frames)} frame Jacobians)")
    return 0
