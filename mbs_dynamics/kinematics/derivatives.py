"""Higher-order kinematics of a frame (seed 000 §2): its twist and every time derivative a
trajectory jet determines, in the four representations of seed 001 §3, O(depth) compiled
(:mod:`mbs_dynamics.kinematics._jets`).

Input forms as :meth:`mbs_dynamics.Robot.torque_derivatives`: a fixed base's ``qs`` (r, n) rows
q, q′, …, q^(r−1) → (r−1, 6) rows V, V′, …, V^(r−2); or a pair ``(q, vs)`` with q (nq,) and vs
(r, nv) rows v, v′, … (a floating base's body-twist jet) → (r, 6). Rows are (linear, angular).
"""
from __future__ import annotations

from functools import lru_cache

from . import _jets
from .frames import frame_index, frame_table, representation_index


cached_table = lru_cache(maxsize=64)(frame_table)   # models are immutable, hashed by identity


def frame_derivatives(data, model, qs, frame, representation="body", out=None):
    """The frame's twist jet (module docstring); ``data`` the model's Data workspace."""
    table = cached_table(model)
    f = frame_index(table, frame)
    rep = representation_index(representation)
    body, S = int(table.body[f]), table.pose[f]
    if isinstance(qs, tuple) and len(qs) == 2:
        return _jets.frame_derivatives(data, body, S, qs[0], qs[1], rep, out)
    if model.floating_base:
        raise ValueError(f"qs of a floating-base robot must be a pair (q, vs): q (nq,) = "
                         f"({model.nq},), vs (r, nv) = (r, {model.nv})")
    if isinstance(qs, tuple):
        raise ValueError("qs must be an array (r, n) or a pair (q, vs)")
    return _jets.frame_derivatives(data, body, S, qs, None, rep, out)
