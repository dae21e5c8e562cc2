"""Frame Jacobians as expression DAGs, body representation (seed 001 §3: ``V^b = J^b q̇``), rows
(linear, angular) as Pinocchio's ``getFrameJacobian(..., LOCAL)``.

For a frame at pose S in body b, the pose G_j of each ancestor body j in the frame is
``G_b = S⁻¹``, ``G_λ(j) = G_j C_{λ(j),j}⁻¹``, and column j is ``Ad_{G_j} X_j`` (revolute
``X = (z, 0)``: ω = G_R z, v = G_p × ω; prismatic: v = G_R z). A floating base contributes
``Ad_{G_0}`` on its (linear, angular) velocity. Mimic joints: ``J G``.
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
    b, S = tr.link_pose(frame)
    fb = tr.fb
    N = 6 * fb + tr.n
    J = [[g.zero] * N for _ in range(6)]
    qf = joint_jets(g, tr, public_rows(g, tr, ["q"]))[0]
    Si = np.linalg.inv(S)
    R = [[g.const(x) for x in row] for row in t._snap(Si[:3, :3])]
    p = [g.const(x) for x in t._snap(Si[:3, 3])]
    while b >= 0:
        kind = tr.kind[b]
        if kind == "free":
            for k in range(6):  # public base velocity k: internal unit twist BASE_IX[k]
                u = [g.zero] * 6
                u[(3, 4, 5, 0, 1, 2)[k]] = g.one
                w = t.matvec(g, R, u[:3])
                v = t.add(g, t.matvec(g, R, u[3:]), t.cross(g, p, w))
                for r in range(3):
                    J[r][k], J[3 + r][k] = v[r], w[r]
            break
        col = 6 * fb + tr.joint[b]
        z = [R[0][2], R[1][2], R[2][2]]
        if kind == "revolute":
            w, v = z, t.cross(g, p, z)
        else:
            w, v = [g.zero] * 3, z
        for r in range(3):
            J[r][col], J[3 + r][col] = v[r], w[r]
        # G_λ = G_b · C_{λ,b}⁻¹, C_{λ,b} = B' exp(X q)
        Jb = t.Joint(g, kind, qf[tr.joint[b]])
        Re, pe = Jb.pose()
        R, p = _compose_inv(g, R, p, Re, pe)
        R, p = _compose_inv(g, R, p, [[g.const(x) for x in row] for row in tr.BR[b]],
                            [g.const(x) for x in tr.Bp[b]])
        b = tr.parent[b]
    # mimic: J G
    out = [row[:6 * fb] + [g.zero] * tr.nind for row in J]
    for i, (c, m, _) in enumerate(tr.map):
        for r in range(6):
            out[r][6 * fb + c] = g.add(out[r][6 * fb + c], g.mul(m, J[r][6 * fb + i]))
    return out
