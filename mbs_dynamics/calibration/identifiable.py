"""The geometric parameters a measurement set-up can identify: QR with column pivoting of the
stacked, σ-weighted identification Jacobian (as for the base inertial parameters, Gautier 1990).

With the columns scaled to unit norm (the parameters mix metres and radians), ``J D⁻¹ P = Q R``;
the rank r is the number of ``|R_kk| > rtol·|R_00|``; the r pivoted columns are the identifiable
(base) parameters b, the others d are not identifiable from these measurements: their effect is
a combination of the base parameters' (J_d = J_b β with β = D_b⁻¹ R₁⁻¹ R₂ D_d), so the estimate
of each base parameter is the combination ``π_b + β π_d`` of the true geometry, and the d are
reported as unidentifiable, never estimated.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["identifiable_parameters", "Identifiability"]


@dataclass(frozen=True)
class Identifiability:
    """Result of :func:`identifiable_parameters`.

    Attributes:
        base: indices of the identifiable parameters (ascending).
        dependent: indices of the unidentifiable ones (ascending).
        beta: (len(base), len(dependent)) regrouping: the base parameters identify
            ``π_b + beta @ π_d``.
        rank: the numerical rank r.
        condition: condition number of the column-scaled Jacobian restricted to the base
            parameters.
    """

    base: np.ndarray
    dependent: np.ndarray
    beta: np.ndarray
    rank: int
    condition: float


def identifiable_parameters(J, rtol=1e-8) -> Identifiability:
    """The identifiable parameters of a stacked, σ-weighted Jacobian J (m, p) (module
    docstring). Columns with no effect at all are unidentifiable with β = 0.

    Args:
        J: (m, p) ∂(weighted residual)/∂π, m ≥ 1.
        rtol: rank threshold relative to the largest pivot of the unit-column Jacobian.
    Returns:
        An :class:`Identifiability`.
    """
    from scipy.linalg import qr, solve_triangular
    J = np.asarray(J, dtype=float)
    if J.ndim != 2 or not np.all(np.isfinite(J)):
        raise ValueError("the identification Jacobian must be a finite (m, p) matrix")
    p = J.shape[1]
    d = np.linalg.norm(J, axis=0)
    live = np.flatnonzero(d > rtol * max(d.max(initial=0.0), np.finfo(float).tiny))
    if live.size == 0:
        return Identifiability(np.zeros(0, int), np.arange(p), np.zeros((0, p)), 0, np.inf)
    Js = J[:, live] / d[live]
    _, R, piv = qr(Js, mode="economic", pivoting=True)
    diag = np.abs(np.diag(R))
    r = int(np.sum(diag > rtol * diag[0]))
    K = solve_triangular(R[:r, :r], R[:r, r:])  # scaled regrouping, pivoted order
    b_loc, d_loc = piv[:r], piv[r:]
    base, dep_live = live[b_loc], live[d_loc]
    beta_live = K * d[dep_live][None, :] / d[base][:, None]
    dead = np.setdiff1d(np.arange(p), live)
    ob, od = np.argsort(base), np.argsort(np.r_[dep_live, dead])
    dependent = np.r_[dep_live, dead].astype(int)[od]
    beta = np.c_[beta_live, np.zeros((r, dead.size))][ob][:, od]
    s = np.linalg.svd(Js[:, b_loc], compute_uv=False)
    return Identifiability(np.sort(base), dependent, beta, r, float(s[0] / s[-1]))
