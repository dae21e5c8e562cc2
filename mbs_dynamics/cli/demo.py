"""``mbs-dynamics demo``: closed-loop tracking (feedforward + PD vs PD) in the built-in simulator.

The demo and its options live in :mod:`mbs_dynamics.demo`, imported only when the command runs
(listing the commands does not load the simulator); its options belong to its own parser, so this
command takes the rest of the command line as it is (:func:`run_argv`).
"""
from __future__ import annotations

import importlib

from .._cliutil import PROG, ArgumentParser, InputError

HELP = "closed-loop tracking demo (feedforward + PD vs PD) in the built-in simulator"

#: The module with ``add_arguments(parser)`` and ``run(args)``.
MODULE = "mbs_dynamics.demo"


def add_parser(subparsers):
    """Register ``demo`` for ``--help``; its options are parsed by :func:`run_argv`."""
    return subparsers.add_parser("demo", help=HELP, add_help=False)


def run_argv(argv):
    """Parse ``argv`` (everything after ``demo``) with the demo's own parser and run it."""
    try:
        module = importlib.import_module(MODULE)
        add_arguments, run = module.add_arguments, module.run
    except (ImportError, AttributeError) as exc:
        raise InputError(f"demo: not available ({MODULE}: {exc})") from None
    parser = ArgumentParser(prog=f"{PROG} demo", description=HELP)
    add_arguments(parser)
    return int(run(parser.parse_args(argv)) or 0)
