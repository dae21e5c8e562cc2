"""Frame Jacobians as expression DAGs, body representation (seed 001 §3: ``V^b = J^b q̇``), rows
(linear, angular) as Pinocchio's ``getFrameJacobian(..., LOCAL)``.

For a frame at pose S in body b, the pose G_j of each ancestor body j in the frame is
``G_b = S⁻¹``, ``G_λ(j) = G_j C_{λ(j),j}⁻¹``, and column j is ``Ad_{G_j} X_j`` (revolute
``X = (z, 0)``: ω = G_R z, v = G_p × ω; prismatic: v = G_R z). A floating base contributes
``Ad_{G_0}`` on its (linear, angular) velocity, a spherical / inner floating joint ``Ad_{G_j} S``
(S = [0; I3] or I6, constant in its child frame). Mimic joints: ``J G``.
"""
from __future__ import annotations

import numpy as np

from . import tree as t
from .jets import joint_jets, public_rows


def _compose_inv(g, R, p, Rc, pc):
    """(R, p)·(Rc, pc)⁻¹ = (R Rcᵀ, p − R Rcᵀ pc) for Expr lists."""
    R2 = [[g.dot(R[r], Rc[c]) for c in range(3)] for r in range(3)]
    p2 = [g.sub(p[r], g.dot(R2[r], pc)) for r in range(3)]
    return R2, p2


def frame_jacobian(g, tr, frame):
    """(6, nv) Expr rows (linear, angular) of the LOCAL Jacobian of URDF link ``frame``."""
    b, S, chart = tr.link_body(frame)
    fb = tr.fb
    N = 6 * fb + tr.n
    J = [[g.zero] * N for _ in range(6)]
    rows = public_rows(g, tr, ["q"])
    qf = joint_jets(g, tr, rows)[0]
    Si = np.linalg.inv(S)
    R = [[g.const(x) for x in row] for row in t._snap(Si[:3, :3])]
    p = [g.const(x) for x in t._snap(Si[:3, 3])]
    while b >= 0:
        # column (full index f) of unit twist u (internal index ix): Ad_G u
        cols = tr.columns(b)
        if chart is not None:  # a chart link of a spherical / floating joint: its 0..c
            cols, chart = cols[:chart + 1], None
        for f, ix in cols:
            w = [R[0][ix % 3], R[1][ix % 3], R[2][ix % 3]]  # R e_k, k = ix mod 3
            if ix < 3:
                w, v = w, t.cross(g, p, w)
            else:
                w, v = [g.zero] * 3, w
            for r in range(3):
                J[r][f], J[3 + r][f] = v[r], w[r]
        if tr.kind[b] == "free":
            break
        # G_λ = G_b · C_{λ,b}⁻¹, C_{λ,b} = B' T(q)
        Re, pe = t.joint_of(g, tr, b, rows[0], qf).pose()
        R, p = _compose_inv(g, R, p, Re, pe)
        R, p = _compose_inv(g, R, p, [[g.const(x) for x in row] for row in tr.BR[b]],
                            [g.const(x) for x in tr.Bp[b]])
        b = tr.parent[b]
    # mimic: J G
    out = [row[:6 * fb] + [g.zero] * tr.nind for row in J]
    for i, (_, vi, m, _) in enumerate(tr.map):
        for r in range(6):
            out[r][vi] = g.add(out[r][vi], g.mul(m, J[r][6 * fb + i]))
    return out
