"""``mbs-dynamics``: rigid-body dynamics and SEA/VSA flatness feedforward from a URDF.

One module per command in this package: every module whose name does not start with ``_``
registers its subparser with ``add_parser(subparsers)`` and runs it with ``run(args)`` (or, for a
command whose options belong to its own parser such as ``demo``, ``run_argv(argv)`` with the rest
of the command line). A new command is a new module; nothing here lists them.

Exit codes: 0 done, 1 the computation failed (e.g. a spring cannot follow), 2 bad input. Bad input
files or options give a one-line error ``mbs-dynamics: error: ...`` before any long computation.
"""
from __future__ import annotations

import importlib
import os
import pkgutil
import sys
import warnings

from .._cliutil import PROG, ArgumentParser, InputError

__all__ = ["commands", "get_argument_parser", "main"]

DESCRIPTION = ("Exact rigid-body dynamics, its time derivatives and SEA/VSA flatness feedforward "
               "from a URDF. Bad input files or options give a one-line error and exit code 2, "
               "before any long computation; `mbs-dynamics COMMAND --help` describes a command.")


def commands():
    """The command modules, ``{name: module}``, in alphabetical order (imported here; each
    imports its heavy dependencies only when it runs)."""
    names = sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))
    return {name: importlib.import_module(f"{__name__}.{name}") for name in names}


def get_argument_parser():
    """The ``mbs-dynamics`` argument parser: one subparser per command module."""
    parser = ArgumentParser(prog=PROG, description=DESCRIPTION)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in commands().values():
        module.add_parser(sub)
    return parser


def main(argv=None) -> int:
    """Entry point of ``mbs-dynamics``; returns the exit code (0 ok, 1 the computation failed,
    2 bad input). Every error is one line on stderr: ``mbs-dynamics: error: ...``."""
    argv = sys.argv[1:] if argv is None else list(argv)
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        return _main(argv)


def _show_warning(message, category, filename, lineno, file=None, line=None):
    """The package's warnings (e.g. the chosen actuated joints of a closed loop) as one line
    ``mbs-dynamics: warning: ...`` on stderr, like its errors, not Python's source excerpt."""
    print(f"{PROG}: warning: {' '.join(str(message).split())}", file=sys.stderr)


def _main(argv):
    try:
        modules = commands()
        module = modules.get(argv[0]) if argv else None
        if module is not None and hasattr(module, "run_argv"):  # its own parser takes the rest
            return module.run_argv(argv[1:])
        args = get_argument_parser().parse_args(argv)
        return modules[args.command].run(args)
    except InputError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. `mbs-dynamics info robot.urdf | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:
        print(f"{PROG}: error: {exc.filename or ''}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    except ArithmeticError as exc:  # e.g. SpringInversionError: the config cannot follow
        print(f"{PROG}: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 1
