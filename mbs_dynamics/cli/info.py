"""``mbs-dynamics info``: describe the dynamics model built from a URDF — joints (type, limits,
axis), link masses, the tree, total mass, frames and closed loops."""
from __future__ import annotations

import json
import math
import sys

import numpy as np

from .._cliutil import robot_file
from ._common import add_model_options, load_robot

HELP = "describe a URDF: joints, masses, tree, total mass"


def add_parser(subparsers):
    """Register ``info`` and its options."""
    p = subparsers.add_parser("info", help="describe a URDF: joints, masses, tree, total mass",
                       description="Describe the dynamics model built from a URDF.")
    p.add_argument("urdf", type=robot_file, metavar="URDF",
                   help="URDF file, or the name of a bundled robot (e.g. arm7, quad12)")
    add_model_options(p)
    p.add_argument("--floating-base", action="store_true",
                   help="the base link is a free body (legged robots, humanoids): "
                        "q = (x, y, z, qx, qy, qz, qw, joints)")
    p.add_argument("--json", action="store_true", help="print the description as JSON")
    return p


def run(args):
    """Print the description (text, or JSON with ``--json``); returns 0."""
    robot = load_robot(args)
    d = describe(robot)
    if args.json:
        json.dump(d, sys.stdout, indent=1, allow_nan=True)
        print()
    else:
        print_info(d, sys.stdout)
    return 0


def _fmt_limit(lo, hi):
    if not np.isfinite(lo) and not np.isfinite(hi):
        return "unlimited"
    return f"[{lo:.4g}, {hi:.4g}]"


def describe(robot):
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
    # the robot's coordinates (a mimic joint is none; a spherical / floating joint's chart
    # joints are not its configuration, a quaternion)
    lie = dict(getattr(robot, "lie_joints", {}))
    return {"closed_loops": loops, "name": m.name, "base_link": m.base_link, "n": m.n,
            "base": "floating" if m.floating_base else "fixed", "nq": int(robot.nq),
            "nv": int(robot.nv), "lie_joints": lie,
            "structure": "chain" if chain else "tree",
            "gravity": [float(x) for x in m.gravity], "total_mass": float(robot.total_mass),
            "moving_mass": float(masses.sum() + (m.base_inertia[3, 3] if m.floating_base
                                                 else 0.0)),
            "base_fixed_links": sorted(fixed.get(-1, [])), "joints": joints,
            "children": {str(k): v for k, v in children.items()},
            "frames": [{"name": f, "body": (m.base_link if m.link_frames[f][0] < 0
                                            else m.link_names[m.link_frames[f][0]])}
                       for f in robot.frame_names]}


def print_info(d, out):
    w = max([len(j["name"]) for j in d["joints"]] + [5])
    base = ("floating (a free body: q = (x, y, z, qx, qy, qz, qw, joints), nq = "
            f"{d['nq']}, nv = {d['nv']})" if d["base"] == "floating"
            else "fixed to the world (use --floating-base for a legged robot or humanoid)")
    print(f"robot {d['name']!r}: {d['n']} movable joints, {d['structure']}, base link "
          f"{d['base_link']!r}, total mass {d['total_mass']:.4g} kg ({d['moving_mass']:.4g} kg "
          f"moving), gravity {d['gravity']}\nbase: {base}", file=out)
    if d["lie_joints"]:
        kinds = {"spherical": "qx qy qz qw; v = ω", "floating": "x y z qx qy qz qw; v = (v, ω)"}
        print(f"configuration: nq = {d['nq']}, nv = {d['nv']}; "
              + ", ".join(f"{n} ({k}: q = {kinds[k]} in the child frame, the chart joints "
                          f"{n}_* below)" for n, k in d["lie_joints"].items()), file=out)
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
