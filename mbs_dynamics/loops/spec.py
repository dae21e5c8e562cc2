"""Loop descriptions: a URDF is a tree, a loop closes it by a constraint between two frames.

A loop is a dict ``{"name": str (default "loop<i>"), "frame_a": link, "frame_b": link,
"origin_a": {"xyz": [3], "rpy": [3]}, "origin_b": {...}, "type": "connect" | "weld" |
"revolute"}``; ``loops=`` is a list of them or the path of a YAML file with a ``loops:`` list.
The loop frames are ``F_a = link_a · origin_a`` and ``F_b = link_b · origin_b`` (URDF xyz/rpy,
like a joint ``<origin>``):

* ``connect``: the origins of F_a and F_b coincide (3 equations, a spherical joint);
* ``weld``: F_a and F_b coincide (6 equations);
* ``revolute``: the origins coincide and the z axes align (5 equations, a hinge about z_b).
"""
from __future__ import annotations

import reprlib
from dataclasses import dataclass

import numpy as np

from ..kernels import lie

TYPES = {"connect": 3, "weld": 6, "revolute": 5}
_KEYS = {"name", "frame_a", "frame_b", "origin_a", "origin_b", "type"}


@dataclass(frozen=True, eq=False)
class Loop:
    """One validated loop closure.

    Attributes:
        name, type, frame_a, frame_b: as given.
        body_a, body_b: the model bodies carrying the frames (−1: the base).
        S_a, S_b: (4, 4) poses of F_a, F_b in their bodies' frames.
        m: number of constraint equations (3, 6 or 5).
    """

    name: str
    type: str
    frame_a: str
    frame_b: str
    body_a: int
    body_b: int
    S_a: np.ndarray
    S_b: np.ndarray
    origin_a: dict
    origin_b: dict

    @property
    def m(self) -> int:
        return TYPES[self.type]

    def as_dict(self) -> dict:
        return {"name": self.name, "frame_a": self.frame_a, "frame_b": self.frame_b,
                "origin_a": dict(self.origin_a), "origin_b": dict(self.origin_b),
                "type": self.type}


def _origin(o, where):
    if o is None:
        o = {}
    if not hasattr(o, "get"):
        raise ValueError(f"{where} must be a dict with 'xyz' and 'rpy', got {o!r}")
    unknown = set(o) - {"xyz", "rpy"}
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {sorted(unknown)} (expected 'xyz', 'rpy')")
    out = {}
    for key in ("xyz", "rpy"):
        v = o.get(key, (0.0, 0.0, 0.0))
        try:
            a = np.asarray(v, dtype=float)
        except (TypeError, ValueError, OverflowError):
            raise ValueError(f"{where}['{key}'] must be 3 numbers, got {reprlib.repr(v)}") from None
        if a.shape != (3,):
            raise ValueError(f"{where}['{key}'] must be 3 numbers, got {v!r}")
        if not np.all(np.isfinite(a)):
            raise ValueError(f"{where}['{key}'] contains NaN or inf: {v!r}")
        out[key] = [float(x) for x in a]
    return out


def read_loops(loops):
    """The list of loop dicts from ``loops``: a list/tuple of dicts, or a path (str or
    os.PathLike) to a YAML file holding ``loops: [...]`` (or a bare list)."""
    import os
    if isinstance(loops, (str, os.PathLike)):
        # the package's one file reader: size, nesting depth and aliases are checked before
        # any object is built (a deeply nested loops YAML ended in a RecursionError)
        from ..model.limits import parse_yaml, read_text
        try:
            doc = parse_yaml(read_text(loops, "loops YAML"), f"loops: '{loops}'")
        except OSError as e:
            raise ValueError(f"loops: cannot read '{loops}': {e.strerror}") from None
        if isinstance(doc, dict):
            if "loops" not in doc:
                raise ValueError(f"loops: '{loops}' has no 'loops:' list")
            doc = doc["loops"]
        loops = doc
    if isinstance(loops, dict):
        loops = [loops]
    if not isinstance(loops, (list, tuple)):
        raise ValueError(f"loops must be a list of loop dicts or a YAML path, got "
                         f"{type(loops).__name__}")
    return list(loops)


def parse_loops(loops, model):
    """Validate ``loops`` (see :func:`read_loops`) against ``model`` → tuple of :class:`Loop`.

    Raises ValueError naming the loop: unknown keys or type, an unknown frame (link), both frames
    on one rigid body (the loop closes nothing), duplicate names, bad origins (NaN, shape).
    """
    items = read_loops(loops)
    if not items:
        raise ValueError("loops is empty: give at least one loop")
    out, names = [], set()
    for i, d in enumerate(items):
        if not hasattr(d, "get"):
            raise ValueError(f"loop {i} must be a dict, got {d!r}")
        name = str(d.get("name", f"loop{i}"))
        where = f"loop '{name}'"
        unknown = set(d) - _KEYS
        if unknown:
            raise ValueError(f"{where}: unknown key(s) {sorted(unknown)} (expected "
                             f"{sorted(_KEYS)})")
        if name in names:
            raise ValueError(f"{where}: duplicate loop name")
        names.add(name)
        typ = d.get("type", "connect")
        if not isinstance(typ, str) or typ not in TYPES:  # a list once gave "unhashable type"
            raise ValueError(f"{where}: type must be one of {sorted(TYPES)}, got {typ!r}")
        fr = []
        for key in ("frame_a", "frame_b"):
            if key not in d:
                raise ValueError(f"{where}: '{key}' is missing")
            ln = d[key]
            if not isinstance(ln, str) or ln not in model.link_frames:
                raise ValueError(f"{where}: {key} '{ln}' is not a link of the model")
            fr.append(ln)
        oa = _origin(d.get("origin_a"), f"{where}: origin_a")
        ob = _origin(d.get("origin_b"), f"{where}: origin_b")
        (ba, Ta), (bb, Tb) = model.link_frames[fr[0]], model.link_frames[fr[1]]
        if ba == bb:
            what = "the base" if ba < 0 else f"body of joint '{model.joint_names[ba]}'"
            raise ValueError(f"{where}: frame_a '{fr[0]}' and frame_b '{fr[1]}' are on the same "
                             f"rigid body ({what}): the loop closes nothing")
        Sa = Ta @ lie.pose(lie.rpy(*oa["rpy"]), oa["xyz"])
        Sb = Tb @ lie.pose(lie.rpy(*ob["rpy"]), ob["xyz"])
        out.append(Loop(name, typ, fr[0], fr[1], int(ba), int(bb), _ro(Sa), _ro(Sb), oa, ob))
    return tuple(out)


def _ro(a):
    a = np.array(a, dtype=float)
    a.setflags(write=False)
    return a
