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
from .frames import frame_table


cached_table = lru_cache(maxsize=64)(frame_table)   # models are immutable, hashed by identity


def jet_frames(data, model):
    """The packed frame table the compiled jet reads (:class:`~._jets.JetFrames`)."""
    return _jets.JetFrames(data, cached_table(model))


def frame_derivatives(data, model, qs, frame, representation="body", out=None):
    """The frame's twist jet (module docstring); ``data`` the model's Data workspace."""
    return jet_frames(data, model).derivatives(qs, frame, representation, out)
