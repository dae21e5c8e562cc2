"""The frame table of a model and a plain-NumPy reference forward kinematics (seed 001 §2).

A *frame* is a URDF link: every link of the model, including links merged into a body by fixed
joints (tool flanges, sensor frames, ``*_hand_tcp``) — Pinocchio's ``FrameType.BODY`` frames, which
carry the link names. Each frame sits on one body at a constant pose::

    C_f(q) = C_b(q) S_f,    S_f = pose of the link in body b (``Model.link_frames``)

with ``b = −1`` the base link (``C_{−1} = I`` for a fixed base: the world is the base link frame;
the free-flyer pose of ``q[:7]`` for a floating base).

Order of the frames (:func:`frame_names`): the base link first, then the links in the depth-first
pre-order of the URDF tree below it, children taken by joint name — the order in which
:func:`mbs_dynamics.model.model.build` visits them (so a movable body's link comes before the
links welded to it, and ``robot.link_names`` is a subsequence).

The body indices here are the *model's* (``0..n−1``, −1 the base); the compiled kernels number
bodies ``b + fb`` (body 0 = the floating base). :func:`body_poses` is the O(n) reference FK in
NumPy the compiled kernel (``_frames.pyx``) is tested against and that other capabilities may use
where speed does not matter.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass

import numpy as np

from ..kernels import lie

#: the four twist representations of seed 001 §3 (public names; Pinocchio's in parentheses):
#: "body" (LOCAL), "spatial" (WORLD), "hybrid" (LOCAL_WORLD_ALIGNED) and "mixed" (body angular
#: velocity with the world-frame velocity of the frame origin, seed 001 §3.4).
REPRESENTATIONS = ("body", "spatial", "hybrid", "mixed")


@dataclass(frozen=True)
class FrameTable:
    """All frames of a model, in the documented order.

    Attributes:
        names: (nf,) frame (= URDF link) names.
        body: (nf,) int64 model body index of each frame's body, −1 for the base link.
        pose: (nf, 4, 4) pose ``S_f`` of each frame in its body frame (read-only).
        index: name → row.
    """

    names: tuple
    body: np.ndarray
    pose: np.ndarray
    index: dict

    def __len__(self):
        return len(self.names)


def frame_names(model) -> tuple:
    """The frame names of ``model`` in the documented order (module docstring)."""
    return tuple(model.link_frames)


def frame_table(model) -> FrameTable:
    """The :class:`FrameTable` of ``model`` (a :class:`~mbs_dynamics.model.Model`)."""
    names = frame_names(model)
    body = np.array([model.link_frames[f][0] for f in names], dtype=np.int64)
    pose = np.array([model.link_frames[f][1] for f in names], dtype=float).reshape(-1, 4, 4)
    body.setflags(write=False)
    pose.setflags(write=False)
    return FrameTable(names, body, pose, {f: i for i, f in enumerate(names)})


def unknown_frame(name, names) -> ValueError:
    """The ValueError for an unknown frame ``name``: lists the close names (difflib), or a few
    of the frames when none is close."""
    close = difflib.get_close_matches(str(name), list(names), n=5, cutoff=0.5)
    if close:
        hint = "did you mean " + ", ".join(repr(c) for c in close) + "?"
    else:
        shown = list(names)[:8]
        more = f" (+{len(names) - 8} more)" if len(names) > 8 else ""
        hint = "frames are " + ", ".join(repr(c) for c in shown) + more
    return ValueError(f"unknown frame {name!r}: {hint}")


def frame_index(table: FrameTable, name) -> int:
    """Row of frame ``name`` in ``table``; ValueError listing close names when unknown."""
    try:
        return table.index[name]
    except (KeyError, TypeError):
        raise unknown_frame(name, table.names) from None


def representation_index(representation) -> int:
    """0..3 for "body", "spatial", "hybrid", "mixed"; ValueError listing the four otherwise."""
    try:
        return REPRESENTATIONS.index(representation)
    except ValueError:
        raise ValueError(f"unknown representation {representation!r}: expected one of "
                         + ", ".join(repr(r) for r in REPRESENTATIONS)) from None


def base_pose(model, q) -> np.ndarray:
    """World pose (4, 4) of the base link: I for a fixed base, the free-flyer pose
    ``(x, y, z, qx, qy, qz, qw)`` (normalised quaternion) for a floating base."""
    if not model.floating_base:
        return np.eye(4)
    q = np.asarray(q, dtype=float)
    x, y, z, w = q[3:7] / np.linalg.norm(q[3:7])
    R = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                  [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                  [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])
    return lie.pose(R, q[:3])


def body_poses(model, q) -> np.ndarray:
    """World poses of the bodies, (n + 1, 4, 4): row ``i`` = body ``i`` (``C_i = C_λ B_i
    exp(X_i q_i)``, seed 001 eq. 10 / seed 004 eq. 6–7), the last row (index −1) the base link.

    ``q`` is (nq,) (free-flyer layout with a floating base). Plain NumPy reference, O(n)."""
    q = np.asarray(q, dtype=float)
    fb = 7 if model.floating_base else 0
    C = np.empty((model.n + 1, 4, 4))
    C[-1] = base_pose(model, q)
    for i in range(model.n):
        C[i] = C[model.parent[i]] @ model.B[i] @ lie.exp_se3(model.X[i], q[fb + i])
    return C


def frame_poses(model, q, table: FrameTable | None = None) -> np.ndarray:
    """World poses of every frame, (nf, 4, 4), in the table's order (reference NumPy)."""
    table = frame_table(model) if table is None else table
    return body_poses(model, q)[table.body] @ table.pose
