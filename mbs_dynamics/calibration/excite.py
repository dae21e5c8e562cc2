"""Measurement poses that make the geometric parameters observable: greedy selection from
candidate configurations minimising the condition number of the column-scaled identification
Jacobian of the identifiable parameters (the observability index of Borm and Menq, 1991, in its
condition-number form).

Rows are added one pose at a time: while the selected poses do not yet reach the rank of all
candidates, the pose that most increases log det(J_Sᵀ J_S + ε I) (D-optimality, defined before
full rank); then the pose that most lowers cond(J_S).
"""
from __future__ import annotations

import numpy as np

from .estimate import Measurements, stack
from .identifiable import identifiable_parameters
from .parameters import GeometricParameters

__all__ = ["select_poses"]


def select_poses(robot, candidates, frame, count, *, kind="position", base=True, base_pose=None,
                 frame_params=True, sigma_position=1e-4, sigma_rotation=1e-3, rtol=1e-8):
    """Choose ``count`` of the candidate configurations to measure ``frame`` at.

    Args:
        robot: a Robot or Model (as :func:`~.estimate.calibrate`).
        candidates: (N, n) candidate joint configurations.
        frame: the frame that will be measured.
        count: how many to choose (at most N).
        kind: ``"position"`` or ``"pose"`` (what the instrument measures).
        base, base_pose, frame_params, rtol: as :func:`~.estimate.calibrate`.
        sigma_position, sigma_rotation: the instrument's σ (they weigh position against
            rotation rows).
    Returns:
        ``(indices, condition)``: the chosen candidates in the order chosen, and the condition
        number of the scaled Jacobian of the identifiable parameters with them (inf if they do
        not reach the candidates' rank).
    Raises:
        ValueError: bad shapes, ``count`` out of range, an unknown ``kind``.
    """
    model = getattr(robot, "model", robot)
    Q = np.array(candidates, dtype=float)
    if Q.ndim != 2 or Q.shape[1] != model.n or not np.all(np.isfinite(Q)):
        raise ValueError(f"candidates must be (N, {model.n}) finite, got shape {Q.shape}")
    if not (isinstance(count, (int, np.integer)) and 1 <= count <= Q.shape[0]):
        raise ValueError(f"count must be an integer in 1 … {Q.shape[0]}, got {count!r}")
    if kind not in ("position", "pose"):
        raise ValueError(f"kind must be 'position' or 'pose', got {kind!r}")
    gp = GeometricParameters(model, (frame,), base=base, base_pose=base_pose,
                             frame_params=frame_params)
    N = Q.shape[0]
    T = gp.poses(None, Q, frame)
    m = Measurements(Q, frame, positions=T[:, :3, 3] if kind == "position" else None,
                     poses=T if kind == "pose" else None, sigma_position=sigma_position,
                     sigma_rotation=sigma_rotation)
    _, J, _ = stack(gp, None, [m.checked(model.n)])
    ident = identifiable_parameters(J, rtol)
    Jb = J[:, ident.base]
    Jb = Jb / np.linalg.norm(Jb, axis=0)
    rows = Jb.reshape(N, -1, Jb.shape[1])  # (N, 3 or 6, r)
    r = ident.rank
    eps = 1e-9 * np.trace(Jb.T @ Jb) / max(r, 1)
    A = np.zeros((r, r))
    chosen, left = [], list(range(N))
    for _ in range(count):
        best, best_val = None, None
        full = np.linalg.matrix_rank(A) >= r
        for k in left:
            Ak = A + rows[k].T @ rows[k]
            if full:
                s = np.linalg.svd(Ak, compute_uv=False)  # cond(J) = sqrt(cond(JᵀJ))
                val = np.sqrt(s[0] / s[-1]) if s[-1] > 0 else np.inf
            else:
                val = -np.linalg.slogdet(Ak + eps * np.eye(r))[1]
            if best_val is None or val < best_val:
                best, best_val = k, val
        chosen.append(best)
        left.remove(best)
        A += rows[best].T @ rows[best]
    s = np.linalg.svd(A, compute_uv=False)
    cond = float(np.sqrt(s[0] / s[-1])) if s[-1] > 1e-14 * s[0] else np.inf
    return np.array(chosen), cond
