"""``mbs-dynamics kinematics``: pose, twist and Jacobian of a frame at a configuration, in the
body, spatial, hybrid or mixed representation (every 6-vector is linear, angular)."""
from __future__ import annotations

import json
import sys

import numpy as np

from .._cliutil import InputError, number_list, robot_file
from ..kinematics.frames import REPRESENTATIONS
from ._common import add_model_options, load_robot, one_line


def add_parser(subparsers):
    """Register ``kinematics`` and its options."""
    p = subparsers.add_parser(
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
    add_model_options(p)
    return p


def run(args):
    """Print (or dump as JSON) the frame's pose, Jacobian and, with ``--qd``, twist; returns 0."""
    robot = load_robot(args)
    names = ", ".join(robot.joint_names[:4]) + (", ..." if robot.n > 4 else "")
    base = "x y z qx qy qz qw, " if robot.floating_base else ""
    q = _vector(args.q, robot.nq, "--q", base + _q_names(robot, names))
    qd = None if args.qd is None else _vector(args.qd, robot.nv, "--qd", (
        "vx vy vz wx wy wz of the base, " if robot.floating_base else "") + names)
    rep = args.representation
    try:
        T = robot.frame_placement(q, args.frame)
        J = robot.frame_jacobian(q, args.frame, rep)
        V = None if qd is None else robot.frame_velocity(q, qd, args.frame, rep)
    except ValueError as exc:
        raise InputError(one_line(exc)) from None
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


def _q_names(robot, names):
    """The configuration's entries: a spherical / floating joint's are its quaternion (and
    position), not its chart joints."""
    if not getattr(robot, "lie_joints", None):
        return names
    pos = {"joint": "", "spherical": " (qx qy qz qw)", "floating": " (x y z qx qy qz qw)"}
    layout = robot.joint_layout()
    return ", ".join(n + pos[k] for n, k, _, _ in layout[:4]) + (", ..." if len(layout) > 4
                                                                   else "")


def _vector(values, size, option, what):
    if len(values) != size:
        raise InputError(f"{option} has {len(values)} numbers, expected {size} ({what})")
    return np.array(values)


_PIN_NAME = {"body": "Pinocchio LOCAL", "spatial": "Pinocchio WORLD",
             "hybrid": "Pinocchio LOCAL_WORLD_ALIGNED",
             "mixed": "world velocity of the origin, body angular velocity"}


def _columns_of(robot):
    base = ("base_vx", "base_vy", "base_vz", "base_wx", "base_wy", "base_wz")
    return (base if robot.floating_base else ()) + tuple(robot.joint_names)


def _indent(a):
    return "\n".join("  " + line for line in np.array2string(np.asarray(a)).splitlines())
