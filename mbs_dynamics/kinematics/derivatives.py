"""Higher-order kinematics of a frame (seed 000 §2): its twist and every time derivative a
trajectory jet determines, in the four representations of seed 001 §3, O(depth) compiled
(:mod:`mbs_dynamics.kinematics._jets`).

Input forms as :meth:`mbs_dynamics.Robot.torque_derivatives`: a fixed base's ``qs`` (r, n) rows
q, q′, …, q^(r−1) → (r−1, 6) rows V, V′, …, V^(r−2); or a pair ``(q, vs)`` with q (nq,) and vs
(r, nv) rows v, v′, … (a floating base's body-twist jet) → (r, 6). Rows are (linear, angular).
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from . import _jets
from .frames import frame_table


cached_table = lru_cache(maxsize=64)(frame_table)   # models are immutable, hashed by identity


@lru_cache(maxsize=64)
def packed_table(model):
    """(index name → row, kernel body of each frame (intc; −1 the fixed base, 0 a floating
    base), poses (nf, 12) as R row-major and p, names) for the compiled closed forms."""
    t = cached_table(model)
    fb = int(bool(model.floating_base))
    kb = np.ascontiguousarray(np.where(t.body >= 0, t.body + fb, 0 if fb else -1), dtype=np.intc)
    S12 = np.ascontiguousarray(np.concatenate([t.pose[:, :3, :3].reshape(-1, 9),
                                               t.pose[:, :3, 3]], axis=1))
    kb.setflags(write=False)
    S12.setflags(write=False)
    return t.index, kb, S12, t.names


def jet_frames(data, model):
    """The packed frame table the compiled jet reads (:class:`~._jets.JetFrames`)."""
    return _jets.JetFrames(data, cached_table(model))


def frame_derivatives(data, model, qs, frame, representation="body", out=None):
    """The frame's twist jet (module docstring); ``data`` the model's Data workspace."""
    return jet_frames(data, model).derivatives(qs, frame, representation, out)
