"""The mass matrix M(q) as an expression DAG: the composite-rigid-body algorithm unrolled over
the tree (seed 004 eq. 20 evaluated recursively: ``M = Jᵀ𝖬J``; composite inertias
``I^c_λ += T_iᵀ I^c_i T_i``, column ``F = I^c_i X_i`` carried to each ancestor j by ``T_jᵀ``,
``M_ji = X_jᵀ F``). Entries of joints that are not on one root path are exact zeros; mimic
joints are folded in by ``M = Gᵀ M_full G``.
"""
from __future__ import annotations

from . import tree as t
from .jets import joint_jets, public_rows


def _through_joint(g, tr, b, J, I):
    """The composite inertia of body b seen from its parent: through exp(X q), then B'."""
    R, p = J.pose()
    I = I.to_parent(R, p)
    return I.to_parent([[g.const(x) for x in row] for row in tr.BR[b]],
                       [g.const(x) for x in tr.Bp[b]])


def _unit(g, k):
    u = [g.zero] * 6
    u[k] = g.one
    return u


BASE_IX = t.BASE_IX


def full_mass_matrix(g, tr, qf, qrow):
    """M of the full coordinates (6·fb + n square, Expr lists) at joint positions qf (public
    positions qrow: the quaternions of spherical / floating joints)."""
    nb, fb = tr.nb, tr.fb
    N = 6 * fb + tr.n
    M = [[g.zero] * N for _ in range(N)]
    J = [None] * nb
    for b in range(nb):
        if tr.kind[b] != "free":
            J[b] = t.joint_of(g, tr, b, qrow, qf)
    Ic = [t.Inertia.const(g, tr.mass[b], tr.h[b], tr.Th[b]) for b in range(nb)]
    for b in range(nb - 1, -1, -1):
        par = tr.parent[b]
        if par >= 0:
            Ic[par] = Ic[par] + _through_joint(g, tr, b, J[b], Ic[b])

    col_of = tr.columns  # full columns of body b: [(column index, internal unit twist index)]

    for b in range(nb):
        for ci, ix in col_of(b):
            F = Ic[b].times(_unit(g, ix))
            j = b
            while True:
                for rj, jx in col_of(j):
                    if rj <= ci or j != b:
                        M[rj][ci] = F[jx]
                        M[ci][rj] = F[jx]
                par = tr.parent[j]
                if par < 0:
                    break
                F = t.const_to_parent(g, tr.BR[j], tr.Bp[j], J[j].to_parent(F))
                j = par
    return M


def project_matrix(g, tr, M):
    """Gᵀ M G (mimic joints folded into their masters)."""
    fb = tr.fb
    cols = [(k, 1.0) for k in range(6 * fb)] + [(vi, m) for _, vi, m, _ in tr.map]
    if all(m == 1.0 and a == k for k, (a, m) in enumerate(cols)) and len(cols) == tr.nv:
        return M
    N = tr.nv
    out = [[g.zero] * N for _ in range(N)]
    for i, (a, ka) in enumerate(cols):
        for j, (b, kb) in enumerate(cols):
            if M[i][j].is_const and M[i][j].val == 0.0:
                continue
            out[a][b] = g.add(out[a][b], g.mul(ka * kb, M[i][j]))
    return out


def mass_matrix(g, tr):
    """M(q) in public coordinates (nv × nv Expr lists)."""
    rows = public_rows(g, tr, ["q"])
    qf = joint_jets(g, tr, rows)[0]
    return project_matrix(g, tr, full_mass_matrix(g, tr, qf, rows[0]))
