"""τ and its time derivatives τ^(k), k = 0..K, as expression DAGs: the recursion of doc/math.md
"Recursive time derivatives of any order" (seed 000 eq. 67–68 differentiated), unrolled over
the tree. K = 0 is the RNEA (inverse dynamics); with v = a = 0 it folds to Q_grav.

Forward, body i (frame i'): ``u_l = T_i V_λ^(l)``, ``V_i^(k) = Σ_m binom(k,m) Φ_m u_{k−m} +
X_i q_i^(k+1)``, ``Φ_m = Σ_j c[m][j] ad_X^j`` (complete Bell polynomials of ``−q^(l) ad_X``).
Backward: ``F^(k) = M V^(k+1) − Σ_m binom(k,m) ad_{V^(m)}ᵀ M V^(k−m)``,
``W^(k) = Σ_children S^(k) + F^(k)``, ``Q^(k) = X_iᵀ W^(k)``,
``S^(k) = T_iᵀ Σ_m binom(k,m) Φ_mᵀ W^(k−m)``. The world has ``V^(1) = (0, −g)`` and every other
derivative zero; a floating base has ``V_0^(k) = ν^(k) + k γ^(k−1)``, ``γ = Ad_{C_0⁻¹}(0, −g)``,
``γ^(j) = −Σ_{m<j} binom(j−1,m) ad_{ν^(m)} γ^(j−1−m)`` (as the kernels, :mod:`..kernels._rnea`).
"""
from __future__ import annotations

from math import comb

from . import tree as t


def _bell(g, qs, K1):
    """c[m][j] of Φ_m, m ≤ K1, from the joint jet qs (q, q′, …): c[m+1][j] =
    Σ_l binom(m,l) c[m−l][j−1] (−q^(l+1))."""
    c = [[g.zero] * (K1 + 1) for _ in range(K1 + 1)]
    c[0][0] = g.one
    for m in range(K1):
        for j in range(1, m + 2):
            acc = g.zero
            for l in range(m + 1):
                acc = g.sub(acc, g.mul(float(comb(m, l)), g.mul(c[m - l][j - 1], qs[l + 1])))
            c[m + 1][j] = acc
    return c


def _phi(g, kind, c, us, k, transpose):
    """Σ_{m=0..k} binom(k,m) Φ_m(ᵀ) us[k−m], with Φ_m = Σ_j c[m][j] ad_X^j (ad_Xᵀ for wrenches)."""
    op = t.ad_XT if transpose else t.ad_X
    out = list(us[k])
    for m in range(1, k + 1):
        x = us[k - m]
        powers = []
        for j in range(1, m + 1):
            x = op(g, kind, x)
            powers.append(x)
        for j in range(1, m + 1):
            cm = g.mul(float(comb(k, m)), c[m][j])
            out = t.axpy(g, cm, powers[j - 1], out)
    return out


def base_pose_R(g, q):
    """Rotation of the floating base from (qx, qy, qz, qw) = q[3:7], normalised as the kernels
    do."""
    return t.quat_R(g, [g.input("q", k) for k in (3, 4, 5, 6)])


def joint_jets(g, tr, rows):
    """Full-coordinate joint jets qf[k][i] (k = 0..len(rows)−1) from the public rows
    (rows[0] = positions "q" (Expr per public index), rows[k] velocity-level); mimic joints
    q_m^(k) = mult·q_master^(k) (+ offset for k = 0). The chart joints of a spherical /
    floating joint have no position (0) and its velocity components at k ≥ 1."""
    out = []
    for k, row in enumerate(rows):
        vals = []
        for qi, vi, mult, o in tr.map:
            if k == 0:
                vals.append(g.zero if qi is None else g.add(g.mul(mult, row[qi]), o))
            else:
                vals.append(g.mul(mult, row[vi]))
        out.append(vals)
    return out


def _sum_binom(g, j, eta, xs, op):
    """Σ_{m=0..j} binom(j,m) op(η^(m), xs[j−m])."""
    acc = [g.zero] * 6
    for m in range(j + 1):
        acc = t.axpy(g, float(comb(j, m)), op(g, eta[m], xs[j - m]), acc)
    return acc


def _group_forward(g, tr, b, rows, V, K1):
    """Twist jets V_b^(k), k = 0..K1, of a spherical / floating joint's body (S constant in
    the child frame): with A = Ad_{C⁻¹} (C = B·T(quat, p)), Ȧ = −ad_η A (η = S ν),
    ``y_l = A V_λ^(l)`` has ``(y_l)′ = y_{l+1} − ad_η y_l``, so its k-th derivative
    ``D(l, k+1) = D(l+1, k) − Σ_m binom(k,m) ad_{η^(m)} D(l, k−m)`` and
    ``V_b^(k) = D(0, k) + η^(k)``. Returns (jets, (joint stage, η jets))."""
    J = t.GroupJoint(g, tr.kind[b], rows[0], tr.qix[b])
    vi, d = tr.vix[b], t.LIE[tr.kind[b]][0]
    eta = [J.twist(rows[k + 1][vi:vi + d]) for k in range(K1 + 1)]
    par = tr.parent[b]
    grav = [g.const(-x) for x in tr.gravity]
    D = []
    for l in range(K1 + 1):
        if par >= 0:
            y = V[par][l]
        else:
            y = [g.zero] * 3 + grav if l == 1 else [g.zero] * 6
        D.append([J.to_child(t.const_to_child(g, tr.BR[b], tr.Bp[b], y))])
    for k in range(1, K1 + 1):
        for l in range(K1 + 1 - k):
            x = _sum_binom(g, k - 1, eta, D[l], t.ad_V)
            D[l].append(t.axpy(g, -1.0, x, D[l + 1][k - 1]))
    return [t.add(g, D[0][k], eta[k]) for k in range(K1 + 1)], (J, eta)


def jets(g, tr, rows, K):
    """τ^(k), k = 0..K, as Expr lists of the full coordinates (base wrench first, as (f, m)),
    from ``rows``: K+3 rows of public Expr (q, v, v′, …; a floating base's v rows are
    (linear, angular, joints)). Returns (K+1) lists of length 6·fb + n."""
    K1 = K + 1
    nb, fb = tr.nb, tr.fb
    qf = joint_jets(g, tr, rows)
    V = [None] * nb  # V[b][k], k = 0..K1
    ctx = [None] * nb
    zero6 = [g.zero] * 6
    grav = [g.const(-x) for x in tr.gravity]
    for b in range(nb):
        kind = tr.kind[b]
        if kind == "free":
            R = base_pose_R(g, rows[0])
            gam = [[g.zero] * 3 + t.matTvec(g, R, grav)]
            nu = [[row[3], row[4], row[5], row[0], row[1], row[2]] for row in rows[1:K1 + 2]]
            for j in range(1, K1):
                acc = zero6
                for m in range(j):
                    acc = t.axpy(g, -float(comb(j - 1, m)), t.ad_V(g, nu[m], gam[j - 1 - m]), acc)
                gam.append(acc)
            V[b] = [nu[k] if k == 0 else t.axpy(g, float(k), gam[k - 1], nu[k])
                    for k in range(K1 + 1)]
            continue
        if kind in t.LIE:
            V[b], ctx[b] = _group_forward(g, tr, b, rows, V, K1)
            continue
        i = tr.joint[b]
        qs = [qf[k][i] for k in range(K1 + 2)]
        J = t.Joint(g, kind, qs[0])
        par = tr.parent[b]
        us = []
        for l in range(K1 + 1):
            if par >= 0:
                y = V[par][l]
            else:
                y = [g.zero] * 3 + grav if l == 1 else zero6
            us.append(J.to_child(t.const_to_child(g, tr.BR[b], tr.Bp[b], y)))
        c = _bell(g, qs, K1)
        ix = t.joint_index(kind)
        Vb = []
        for k in range(K1 + 1):
            x = _phi(g, kind, c, us, k, False)
            x[ix] = g.add(x[ix], qs[k + 1])
            Vb.append(x)
        V[b] = Vb
        ctx[b] = (J, c, ix)
    # backward
    W = [[zero6] * K1 for _ in range(nb)]
    out = [[None] * (6 * fb + tr.n) for _ in range(K1)]
    for b in range(nb - 1, -1, -1):
        I = t.Inertia.const(g, tr.mass[b], tr.h[b], tr.Th[b])
        MV = [I.times(V[b][k]) for k in range(K1 + 1)]
        Wb = []
        for k in range(K1):
            x = t.add(g, W[b][k], MV[k + 1])
            for m in range(k + 1):
                x = t.axpy(g, float(comb(k, m)), t.neg_adT(g, V[b][m], MV[k - m]), x)
            Wb.append(x)
        if tr.kind[b] == "free":
            for k in range(K1):
                out[k][:6] = Wb[k][3:] + Wb[k][:3]
            continue
        if tr.kind[b] in t.LIE:
            J, eta = ctx[b]
            for k in range(K1):
                for f, ix in tr.columns(b):
                    out[k][f] = Wb[k][ix]
            par = tr.parent[b]
            if par >= 0:
                lev = Wb
                for k in range(K1):  # (Aᵀ W)^(k) = Aᵀ (D^k W)^(0), D W = W′ − ad_ηᵀ W
                    S = t.const_to_parent(g, tr.BR[b], tr.Bp[b], J.to_parent(lev[0]))
                    W[par][k] = t.add(g, W[par][k], S)
                    lev = [t.add(g, lev[j + 1], _sum_binom(g, j, eta, lev, t.neg_adT))
                           for j in range(len(lev) - 1)]
            continue
        J, c, ix = ctx[b]
        for k in range(K1):
            out[k][6 * fb + tr.joint[b]] = Wb[k][ix]
        par = tr.parent[b]
        if par < 0:
            continue
        for k in range(K1):
            S = _phi(g, tr.kind[b], c, Wb, k, True)
            S = t.const_to_parent(g, tr.BR[b], tr.Bp[b], J.to_parent(S))
            W[par][k] = t.add(g, W[par][k], S)
    return out


def project(g, tr, full):
    """Gᵀ x for a full-coordinate vector x (Expr list): mimic joints add mult·x to their master."""
    fb = tr.fb
    out = list(full[:6 * fb]) + [g.zero] * tr.nind
    for i, (_, vi, mult, _) in enumerate(tr.map):
        out[vi] = g.add(out[vi], g.mul(mult, full[6 * fb + i]))
    return out


def public_rows(g, tr, names):
    """Expr rows of the public arguments: names[0] is the position array (nq), the others
    velocity-level arrays (nv); a name may be (array, row) for a row of a stacked argument."""
    rows = []
    for k, nm in enumerate(names):
        size = tr.nq if k == 0 else tr.nv
        if nm is None:
            rows.append([g.zero] * size)
        elif isinstance(nm, tuple):
            arr, r = nm
            rows.append([g.input(arr, r * size + j) for j in range(size)])
        else:
            rows.append([g.input(nm, j) for j in range(size)])
    return rows


def inverse_dynamics(g, tr, q="q", v="v", a="a"):
    """τ = Gᵀ RNEA(q, v, a) (K = 0), public coordinates."""
    rows = public_rows(g, tr, [q, v, a])
    return project(g, tr, jets(g, tr, rows, 0)[0])


def torque_derivatives(g, tr, K=2):
    """τ, τ′, …, τ^(K) from q and vs = (v, v′, …, v^(K+1)) stacked row-major."""
    rows = public_rows(g, tr, ["q"] + [("vs", r) for r in range(K + 2)])
    return [project(g, tr, x) for x in jets(g, tr, rows, K)]


def gravity_torques(g, tr):
    """Q_grav = RNEA(q, 0, 0): every velocity and acceleration term folds away."""
    rows = public_rows(g, tr, ["q", None, None])
    return project(g, tr, jets(g, tr, rows, 0)[0])
