"""Forward dynamics as an expression DAG: ``q̈ = M⁻¹ (τ − h)`` with ``h = RNEA(q, v, 0)``, M from
the unrolled composite-rigid-body algorithm, solved by an unrolled ``M = Lᵀ D L`` factorisation
(RBDA §6.5, "LTDL": eliminate from the last coordinate to the first). In that order a tree's mass
matrix has no fill-in, so with the exact zeros of M folded away the factorisation costs what the
tree's depth makes it cost (Featherstone's O(n d²)), and it serves mimic joints
(``Gᵀ M_full G``) and floating bases unchanged — the reason it was chosen over an unrolled ABA.
"""
from __future__ import annotations

from .crba import full_mass_matrix, project_matrix
from .jets import jets, joint_jets, project, public_rows


def ltdl_solve(g, H, b):
    """x = H⁻¹ b for a symmetric positive definite H (Expr lists), H = Lᵀ D L, L unit lower."""
    N = len(H)
    H = [row[:] for row in H]
    inv_d = [None] * N
    for k in range(N - 1, -1, -1):
        inv_d[k] = g.div(1.0, H[k][k])
        for i in range(k - 1, -1, -1):
            if H[k][i].is_const and H[k][i].val == 0.0:
                continue
            a = g.mul(H[k][i], inv_d[k])
            for j in range(i, -1, -1):
                H[i][j] = g.sub(H[i][j], g.mul(a, H[k][j]))
            H[k][i] = a
    x = list(b)
    for i in range(N - 1, -1, -1):  # Lᵀ y = b
        for j in range(i):
            x[j] = g.sub(x[j], g.mul(H[i][j], x[i]))
    x = [g.mul(x[i], inv_d[i]) for i in range(N)]
    for i in range(N):  # L x = y
        for j in range(i):
            x[i] = g.sub(x[i], g.mul(H[i][j], x[j]))
    return x


def forward_dynamics(g, tr):
    """q̈ from q, v, tau (public coordinates)."""
    rows = public_rows(g, tr, ["q", "v", None])
    h = project(g, tr, jets(g, tr, rows, 0)[0])
    qf = joint_jets(g, tr, rows[:1])[0]
    M = project_matrix(g, tr, full_mass_matrix(g, tr, qf, rows[0]))
    rhs = [g.sub(g.input("tau", k), h[k]) for k in range(tr.nv)]
    return ltdl_solve(g, M, rhs)
