"""``mbs-dynamics calibrate``: the command's arguments and its run, on files (the CLI wires
``add_arguments`` and ``run``; errors are ``ValueError`` with one-line messages, which the CLI
prints as ``mbs-dynamics: error: …``).

The measurements file is CSV with a header: one column per joint (named as the URDF's joints;
rad or m), then the measured position ``x, y, z`` [m] of the frame in the measurement frame W,
and optionally its orientation as a unit quaternion ``qx, qy, qz, qw`` (then poses are
calibrated). Writes ``OUT.urdf`` (the calibrated robot) and ``OUT_report.json``.
"""
from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path

import numpy as np

from ..model.limits import FileLimitError, read_bytes
from ..model.model import build
from ..model.writer import to_urdf
from .estimate import Measurements, calibrate
from .parameters import check_model

__all__ = ["add_arguments", "run", "read_measurements", "DESCRIPTION"]

DESCRIPTION = ("Geometric calibration: estimate the identifiable geometric parameters of every "
               "joint frame (offsets, lengths, axis misalignments), the base pose in the "
               "measurement frame and the measured frame's pose in its link, from measured "
               "positions (x, y, z) or poses (x, y, z, qx, qy, qz, qw) of one frame in a CSV "
               "file with one column per joint; writes OUT.urdf and OUT_report.json and lists "
               "the parameters the measurements cannot identify.")


def _positive(text):
    try:
        v = float(text)
    except ValueError:
        v = float("nan")
    if not (np.isfinite(v) and v > 0):
        import argparse
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return v


def add_arguments(parser):
    """The command's arguments on an ``argparse`` parser."""
    parser.add_argument("urdf", type=Path, metavar="URDF", help="URDF file of the robot")
    parser.add_argument("measurements", type=Path, metavar="CSV",
                        help="joint columns, then x, y, z [m] (and qx, qy, qz, qw)")
    parser.add_argument("--frame", required=True, help="the measured frame (link) of the URDF")
    parser.add_argument("-o", "--output", required=True, metavar="OUT",
                        help="output prefix: writes OUT.urdf and OUT_report.json")
    parser.add_argument("--sigma-position", type=_positive, default=1e-4, metavar="M",
                        help="σ of each measured coordinate [m] (default 1e-4)")
    parser.add_argument("--sigma-rotation", type=_positive, default=1e-3, metavar="RAD",
                        help="σ of each rotation component [rad] (default 1e-3)")
    parser.add_argument("--no-base", action="store_true",
                        help="the measurements are in the robot's base frame (do not estimate "
                             "the base pose)")
    parser.add_argument("--no-frame-params", action="store_true",
                        help="the measured frame's pose in its link is exact")
    parser.add_argument("--quiet", action="store_true", help="no report on stdout")


def _quat(qx, qy, qz, qw):
    q = np.array([qx, qy, qz, qw])
    q /= np.linalg.norm(q)
    x, y, z, w = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def read_measurements(path, joint_names, frame, sigma_position=1e-4, sigma_rotation=1e-3):
    """:class:`~.estimate.Measurements` from the CSV file ``path`` (module docstring).
    ValueError naming the file, row and column for a missing column, a non-number or NaN, or a
    zero quaternion."""
    try:
        raw = read_bytes(path, "measurements file")
    except FileLimitError as e:
        raise ValueError(str(e)) from None
    except OSError as e:
        raise ValueError(f"cannot read measurements file {str(path)!r}: {e.strerror}") from None
    try:
        rows = list(csv.reader(io.StringIO(raw.decode("utf-8-sig"))))
    except (UnicodeDecodeError, csv.Error) as e:
        raise ValueError(f"{path}: not a CSV text file ({e})") from None
    rows = [r for r in rows if any(c.strip() for c in r)]
    if len(rows) < 2:
        raise ValueError(f"{path}: needs a header and at least one row")
    head = [c.strip() for c in rows[0]]
    need = list(joint_names) + ["x", "y", "z"]
    missing = [c for c in need if c not in head]
    if missing:
        raise ValueError(f"{path}: missing column(s) {', '.join(missing[:8])} (header: joints "
                         "of the URDF, then x, y, z and optionally qx, qy, qz, qw)")
    quat = [c for c in ("qx", "qy", "qz", "qw") if c in head]
    if quat and len(quat) != 4:
        raise ValueError(f"{path}: an orientation needs all of qx, qy, qz, qw")
    cols = [head.index(c) for c in need + quat]
    data = np.empty((len(rows) - 1, len(cols)))
    for k, r in enumerate(rows[1:]):
        for j, c in enumerate(cols):
            try:
                v = float(r[c])
            except (IndexError, ValueError):
                v = float("nan")
            if not np.isfinite(v):
                raise ValueError(f"{path}: row {k + 2}, column '{head[c]}': not a finite "
                                 "number")
            data[k, j] = v
    n = len(joint_names)
    q, p = data[:, :n], data[:, n:n + 3]
    if not quat:
        return Measurements(q, frame, positions=p, sigma_position=sigma_position,
                            sigma_rotation=sigma_rotation)
    T = np.tile(np.eye(4), (len(q), 1, 1))
    T[:, :3, 3] = p
    for k, qq in enumerate(data[:, n + 3:]):
        if not np.linalg.norm(qq) > 1e-9:
            raise ValueError(f"{path}: row {k + 2}: the quaternion is zero")
        T[k, :3, :3] = _quat(*qq)
    return Measurements(q, frame, poses=T, sigma_position=sigma_position,
                        sigma_rotation=sigma_rotation)


def _jsonable(report):
    return {"identifiable": list(report.identifiable),
            "unidentifiable": list(report.unidentifiable),
            "estimates": dict(zip(report.identifiable, report.estimates.tolist())),
            "sigma": dict(zip(report.identifiable, report.sigma.tolist())),
            "correlation": report.correlation.tolist(),
            "rms_before": report.rms_before, "rms_after": report.rms_after,
            "chi2_dof": report.chi2_dof, "condition": report.condition,
            "base_pose": report.base_pose.tolist(), "iterations": report.iterations,
            "converged": report.converged, "joint_offsets": list(report.offsets)}


def run(args, out=None):
    """Run the command on parsed ``args`` (:func:`add_arguments`). Returns 0; ValueError on bad
    input (a one-line message)."""
    out = sys.stdout if out is None else out
    prefix = Path(args.output)
    if prefix.parent and not prefix.parent.is_dir():
        raise ValueError(f"-o {args.output}: directory {str(prefix.parent)!r} does not exist")
    model = build(args.urdf)
    check_model(model)  # a joint calibration cannot take, before the CSV's columns
    if args.frame not in model.link_frames:
        raise ValueError(f"--frame {args.frame}: not a link of {args.urdf}")
    meas = read_measurements(args.measurements, model.joint_names, args.frame,
                             args.sigma_position, args.sigma_rotation)
    new, report = calibrate(model, meas, base=not args.no_base,
                            frame_params=not args.no_frame_params)
    urdf, rep = f"{prefix}.urdf", f"{prefix}_report.json"
    Path(urdf).write_text(to_urdf(new))
    Path(rep).write_text(json.dumps(_jsonable(report), indent=1) + "\n")
    if not args.quiet:
        print(report.summary(), file=out)
        print(f"-> {urdf}, {rep}", file=out)
    return 0

