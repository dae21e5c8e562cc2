"""``mbs-dynamics calibrate``: geometric calibration from measured positions or poses of a frame
(:mod:`mbs_dynamics.calibration`; the arguments and the work are in
:mod:`mbs_dynamics.calibration.command`)."""
from __future__ import annotations

from .._cliutil import InputError
from ._common import one_line


def add_parser(subparsers):
    """Register ``calibrate`` and its options."""
    from ..calibration.command import DESCRIPTION, add_arguments
    p = subparsers.add_parser(
        "calibrate", help="geometric calibration from measured frame positions or poses",
        description=DESCRIPTION)
    add_arguments(p)
    return p


def run(args):
    """Calibrate and write OUT.urdf and OUT_report.json; returns 0."""
    from ..calibration.command import run as run_calibration
    try:
        return run_calibration(args)
    except ValueError as exc:  # URDFError, a bad measurements file, unknown frame, ...
        raise InputError(one_line(exc)) from None
