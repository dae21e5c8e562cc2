"""Shared pieces of the ``mbs-dynamics`` subcommands (:mod:`mbs_dynamics.cli`,
:mod:`mbs_dynamics.demo`): argument types, input checks, units, and the optional plotting backend.

Every check here runs before any long computation or output, and every failure is an
:class:`InputError` whose message is one line naming the file or option at fault; the command
prints it as ``mbs-dynamics: error: <message>`` and exits with code 2.
"""
from __future__ import annotations

import argparse
import math
from pathlib import Path

PROG = "mbs-dynamics"

#: Upper bound on the memory the sampled arrays of one command may take [bytes]. The CSV text is
#: about three times larger on disk; a command needing more is refused before it starts.
MEMORY_LIMIT = 2 * 1024 ** 3

PLOT_HINT = "plots need matplotlib: pip install 'mbs_dynamics[plot]'"


class InputError(Exception):
    """A bad input file or option: reported in one line, exit code 2."""


class ArgumentParser(argparse.ArgumentParser):
    """``argparse`` parser whose usage errors are one line (``prog: error: ...``) and raise
    :class:`InputError` instead of printing the usage and exiting (``--help`` still exits 0)."""

    def error(self, message):
        raise InputError(f"{message} (see {self.prog} --help)")


# ------------------------------------------------------------------------------- argument types
def positive_float(text):
    """argparse type: a finite number > 0."""
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not (x > 0 and math.isfinite(x)):
        raise argparse.ArgumentTypeError(f"{text!r} must be a positive number")
    return x


def positive_int(text):
    """argparse type: an integer >= 1."""
    try:
        x = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if x < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be an integer >= 1")
    return x


def existing_file(text):
    """argparse type: a path to an existing file."""
    p = Path(text)
    if not p.exists():
        raise argparse.ArgumentTypeError(f"{text}: no such file")
    if not p.is_file():
        raise argparse.ArgumentTypeError(f"{text}: not a file")
    return p


def robot_file(text):
    """argparse type: an existing URDF file, or the name of a bundled robot
    (:func:`mbs_dynamics.data.robot`)."""
    p = Path(text)
    if p.is_file():
        return p
    if not p.exists() and p.name == text and not text.startswith("."):
        from . import data
        try:
            return data.robot(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"{text}: no such file, and {exc}") from None
    return existing_file(text)


def number_list(text):
    """argparse type: numbers separated by spaces and/or commas, e.g. ``"0.1 0.2, 0.3"``."""
    parts = [t for t in text.replace(",", " ").split() if t]
    try:
        values = [float(t) for t in parts]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a list of numbers") from None
    if not values or not all(math.isfinite(x) for x in values):
        raise argparse.ArgumentTypeError(f"{text!r} must be finite numbers separated by "
                                         "spaces or commas")
    return values


def joint_lock(text):
    """argparse type: ``JOINT=POSITION`` (a joint to make rigid at that position)."""
    name, sep, value = text.partition("=")
    try:
        pos = float(value)
    except ValueError:
        pos = math.nan
    if not sep or not name or not math.isfinite(pos):
        raise argparse.ArgumentTypeError(f"{text!r} is not JOINT=POSITION")
    return name, pos


def add_lock_option(parser):
    """``--lock JOINT=POS`` (repeatable)."""
    parser.add_argument("--lock", type=joint_lock, action="append", default=[],
                        metavar="JOINT=POS",
                        help="make a joint rigid at a position (repeatable), e.g. a gripper or "
                             "mimic joint")


def joint_list(text):
    """argparse type: ``J1,J2,...`` (joint names)."""
    names = [t.strip() for t in text.split(",") if t.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of joints")
    return names


def add_loops_option(parser):
    """``--loops FILE.yaml`` (closed loops) and ``--actuated J1,J2,...``."""
    parser.add_argument("--loops", default=None, metavar="YAML",
                        help="close loops of the URDF tree: a YAML file with a 'loops:' list "
                             "(name, frame_a, frame_b, origin_a, origin_b, type)")
    parser.add_argument("--actuated", type=joint_list, default=None, metavar="J1,J2,...",
                        help="with --loops: the independent (motor) joints (default: chosen)")


# ------------------------------------------------------------------------------------ files
def load_yaml(path):
    """Parse a YAML file within the package's resource limits (:mod:`mbs_dynamics.model.limits`:
    size, nesting, aliases, entries); any unreadable content is an :class:`InputError` naming
    the file."""
    from .model.limits import parse_yaml, read_text
    try:
        return parse_yaml(read_text(path, "YAML"), str(path))
    except ValueError as exc:
        msg = " ".join(str(exc).split())
        raise InputError(msg if msg.startswith(str(path)) else f"{path}: {msg}") from None


def load_actuator(path, n):
    """The actuator of an ``actuator.*`` configuration file (``None`` for ``type: rigid``).

    The file must hold an ``actuator:`` section (nested, dotted, or inside a ROS parameter file);
    a file without one is refused rather than silently treated as rigid.
    """
    from .control.actuators import actuator_from_params, flatten_params

    data = load_yaml(path)
    if not isinstance(data, dict):
        raise InputError(f"{path}: expected a mapping with an 'actuator:' section, got "
                         f"{type(data).__name__}")
    try:
        flat = flatten_params(data)
    except ValueError as exc:
        raise InputError(f"{path}: {exc}") from None
    if not any(k.startswith("actuator.") for k in flat):
        keys = ", ".join(sorted(flat)[:5]) or "nothing"
        raise InputError(f"{path}: no 'actuator:' section (found {keys}); expected e.g. "
                         "'actuator: {type: sea, stiffness: 1000.0, motor_inertia: 0.5}' "
                         "(keys: mbs_dynamics.actuators.ACTUATOR_PARAMETERS)")
    try:
        return actuator_from_params(data, n)
    except ValueError as exc:
        raise InputError(f"{path}: {exc}") from None


def load_trajectory(path, joint_names, urdf, locked=()):
    """A trajectory file, reordered to ``joint_names``; errors name the file.

    Columns of joints in ``locked`` (made rigid with ``--lock``) are dropped first, so a
    trajectory written for the full robot also drives the reduced one.
    """
    import numpy as np

    from .control.trajectory import Trajectory
    path = Path(path)
    try:
        # huge numbers overflow in the spline coefficients: reported by the finiteness checks
        # of the commands (one line), not as NumPy warnings
        with np.errstate(all="ignore"):
            traj = Trajectory.load(path)
    except ValueError as exc:
        msg = " ".join(str(exc).split())
        raise InputError(msg if msg.startswith(str(path)) else f"{path}: {msg}") from None
    drop = [j for j in traj.joint_names if j in set(locked) and j not in joint_names]
    if drop:
        d = traj.to_dict()
        keep = [i for i, j in enumerate(d["joint_names"]) if j not in drop]
        d["joint_names"] = [d["joint_names"][i] for i in keep]
        for pt in d["points"]:
            for key in ("positions", "velocities", "accelerations"):
                if key in pt:
                    pt[key] = [pt[key][i] for i in keep]
        traj = Trajectory.from_dict(d)
    try:
        return traj.reorder(joint_names)
    except ValueError as exc:
        raise InputError(f"{path}: joint names do not match {urdf}: {exc}") from None


def check_output_dir(path, option):
    """The directory an output file goes to must exist, and the file must not be a directory."""
    if path is None:
        return
    if Path(path).is_dir():
        raise InputError(f"{option} {path}: is a directory, expected a file name")
    if not Path(path).parent.is_dir():
        raise InputError(f"{option} {path}: directory {Path(path).parent} does not exist")


def check_memory(samples, columns, option):
    """Refuse a run whose sampled table (samples × columns float64) would exceed
    :data:`MEMORY_LIMIT`; ``option`` names what to change (e.g. ``"--rate 1e+09"``)."""
    need = float(samples) * float(columns) * 8.0
    if not need <= MEMORY_LIMIT:
        raise InputError(
            f"{option}: {samples:.4g} samples × {columns} columns × 8 bytes = "
            f"{need / 1024 ** 3:.3g} GiB, above the limit of {MEMORY_LIMIT / 1024 ** 3:g} GiB")


# ---------------------------------------------------------------------------------- plotting
def plot_backend(path=None, option="--plot"):
    """Import matplotlib (Agg) for a requested plot and check the file format.

    Args:
        path: the output file, or None (only check that matplotlib is there).
        option: the option's name, for the message.

    Returns:
        ``matplotlib.pyplot``.

    Raises:
        InputError: matplotlib is not installed (one-line install hint), or the file's extension
            is not a format matplotlib can write.
    """
    try:
        import matplotlib
    except ImportError:
        raise InputError(PLOT_HINT) from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    if path is not None:
        formats = Figure().canvas.get_supported_filetypes()
        suffix = Path(path).suffix.lower().lstrip(".")
        if suffix not in formats:
            what = f"'{suffix}' is not a plot format" if suffix else "no file extension"
            raise InputError(f"{option} {path}: {what}; use one of "
                             f"{', '.join(sorted(formats))}")
        check_output_dir(path, option)
    return plt


# ------------------------------------------------------------------------------------- units
def joint_units(joint_types):
    """Position and force units per joint: ('rad', 'N m') revolute, ('m', 'N') prismatic."""
    return [("m", "N") if t == "prismatic" else ("rad", "N m") for t in joint_types]


def unit_of(quantity, pos_unit, force_unit):
    """Unit of a per-joint quantity name (q, q_dot, …, tau, tau_dot, …, theta, stiffness)."""
    order = {"": 0, "_dot": 1, "_ddot": 2, "_dddot": 3, "_ddddot": 4}
    for base, unit in (("q", pos_unit), ("theta", pos_unit), ("tau", force_unit)):
        for suffix, k in order.items():
            if quantity == base + suffix:
                return unit + ("" if k == 0 else "/s" if k == 1 else f"/s^{k}")
    if quantity == "tau_motor":
        return force_unit
    if quantity == "stiffness":
        return f"{force_unit}/{pos_unit}"
    raise KeyError(quantity)
