"""Shared pieces of the closed-form kinematic derivatives (seed 000 §2, §5.2): the tree's
ancestor relation per velocity coordinate and the spatial joint screws of every coordinate.

Coordinates ("columns") follow the public velocity vector: with a floating base the six base
columns come first in Pinocchio's order (linear, angular) and belong to the base "body" (index
``n`` here, the model's −1), each of them an ancestor of every body. Screws are angular-first
``(ω, v)`` as in the kernels.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..kernels import lie
from .frames import body_poses

# base columns in the public order (linear, angular) as angular-first screws
_E = np.zeros((6, 6))
_E[3:, :3] = np.eye(3)   # columns 0..2: (0, e_a)
_E[:3, 3:] = np.eye(3)   # columns 3..5: (e_a, 0)


class Tree:
    """Static structure of a model for the closed forms.

    Attributes:
        nb: bodies incl. the base (index n = the base link / world).
        col_body: (nv,) body of each velocity column (n for the base's six).
        anc: (nb, nb) bool, ``anc[a, b]``: body a is an ancestor of b or b itself (the base is
            everyone's ancestor).
        canc: (nv, nv) the same per column; ``strict[i, k]`` = anc and not the reverse.
        X: (nv, 6) joint screw of each column in its body frame (base: unit twists).
        inertia: (nb, 6, 6) body inertias in body frames (base last; zero for a fixed base).
    """

    def __init__(self, model):
        n, fb = model.n, bool(model.floating_base)
        self.n, self.fb, self.nb = n, fb, n + 1
        par = np.asarray(model.parent)
        anc = np.zeros((n + 1, n + 1), dtype=bool)
        anc[n, :] = True
        for i in range(n):
            anc[i, i] = True
            p = par[i]
            while p >= 0:
                anc[p, i] = True
                p = par[p]
        self.anc = anc
        self.col_body = np.r_[np.full(6 * fb, n), np.arange(n)].astype(np.intp)
        self.canc = anc[self.col_body][:, self.col_body]
        self.strict = self.canc & ~self.canc.T
        X = np.asarray(model.X, dtype=float).reshape(-1, 6)
        self.X = np.concatenate([_E.T[:6 * fb], X]) if fb else X
        ine = np.zeros((n + 1, 6, 6))
        ine[:n] = np.asarray(model.inertias, dtype=float).reshape(-1, 6, 6)
        if fb:
            ine[n] = model.base_inertia
        self.inertia = ine
        # deepest body of a chain of columns: the largest body index, the base lowest
        self.key = np.where(self.col_body == n, -1, self.col_body)


@lru_cache(maxsize=64)
def tree(model) -> Tree:
    return Tree(model)


def poses(model, q):
    """World poses (n + 1, 4, 4) of the bodies, the base link last (frames.body_poses)."""
    return body_poses(model, q)


def spatial_screws(t: Tree, C):
    """J^s (6, nv): column c = Ad_{C_{body(c)}} X_c (seed 001 eq. 20 / seed 000 eq. 71b)."""
    Ad = np.array([lie.Ad(c) for c in C])          # (n + 1, 6, 6)
    return np.einsum("cab,cb->ac", Ad[t.col_body], t.X), Ad


def bracket_matrix(J):
    """B[:, i, k] = [J_i, J_k] = ad_{J_i} J_k for all column pairs, (6, nv, nv)."""
    w, v = J[:3], J[3:]
    W, V = w[:, :, None], v[:, :, None]
    Wk, Vk = w[:, None, :], v[:, None, :]
    top = np.cross(W, Wk, axis=0)
    bot = np.cross(W, Vk, axis=0) + np.cross(V, Wk, axis=0)
    return np.concatenate([top, bot])
