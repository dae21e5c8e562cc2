"""What the ``mbs-dynamics`` commands share beyond :mod:`mbs_dynamics._cliutil`: the model
options (base/tip link, locked joints, closed loops), loading the robot they name, the progress bar
and the samples per batch call. Every failure is an :class:`~mbs_dynamics._cliutil.InputError`
(one line, exit code 2)."""
from __future__ import annotations

import sys

from .._cliutil import InputError, add_lock_option, add_loops_option

__all__ = ["CHUNK", "add_model_options", "load_robot", "progress_bar", "one_line"]

CHUNK = 2000  # samples per batch call (and per progress-bar step)


def add_model_options(p):
    """Add ``--base-link``, ``--tip-link``, ``--lock`` and ``--loops``/``--actuated`` to ``p``."""
    p.add_argument("--base-link", default=None, help="link fixed to the world (default: root)")
    p.add_argument("--tip-link", default=None, help="keep only the chain base → tip")
    add_lock_option(p)
    add_loops_option(p)


def load_robot(args, one_dof=None):
    """The robot the parsed ``args`` name (URDF, model options, ``--floating-base``).

    ``one_dof``: the name of a capability of 1-DOF joint coordinates (``"feedforward"``, …):
    a spherical or floating joint is then refused first, before the command reads files of
    joint names (:func:`~mbs_dynamics.model.description.refuse_lie_joints`).

    Raises:
        InputError: the URDF or an option is invalid; the message names the file.
    """
    from ..loader import load_urdf
    from ..model.description import refuse_lie_joints
    try:
        kw = {}
        if getattr(args, "loops", None) is not None:
            kw = {"loops": args.loops, "actuated": args.actuated}
        elif getattr(args, "actuated", None) is not None:
            raise InputError("--actuated needs --loops")
        robot = load_urdf(args.urdf, base_link=args.base_link, tip_link=args.tip_link,
                          locked_joints=dict(args.lock) or None,
                          floating_base=getattr(args, "floating_base", False), **kw)
        if one_dof:
            refuse_lie_joints(robot, one_dof)
        return robot
    except ValueError as exc:
        msg = " ".join(str(exc).split())
        raise InputError(msg if str(args.urdf) in msg else f"{args.urdf}: {msg}") from None


def one_line(exc):
    """An exception's message on one line (for :class:`InputError`)."""
    return " ".join(str(exc).split())


def progress_bar(done, total, out=sys.stderr):
    """Draw ``[####....] done/total samples`` on ``out`` (a new line when done)."""
    width = 30
    filled = int(width * done / total)
    out.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} samples")
    if done == total:
        out.write("\n")
    out.flush()
