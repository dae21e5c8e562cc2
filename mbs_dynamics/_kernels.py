"""Compiled kernels (Numba): recursive inverse dynamics and its time derivatives of any order,
and the block-structured closed forms M, C̄, Ṁ, Q_grav.

All kernels read the packed model ``pf`` (see ``model.PF_*``) and one flat float workspace ``ws``
(see :func:`layout`), write into preallocated outputs and allocate nothing. Public entries have explicit
signatures (C-contiguous float64 arrays; anything else raises TypeError, which robot.py answers by
converting once) and return an int status: 0 = ok, ``10 * a + 1`` = argument ``a`` has the wrong size, ``10 * a + 2`` =
argument ``a`` holds NaN or inf (arguments numbered from 1 after ``ws``).

Twists ``(ω, v)``, wrenches ``(m, f)``, body-fixed (MATH.md, seed 000 eq. 67–68).
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from .model import PF_AXIS, PF_H, PF_I, PF_MASS, PF_P, PF_PARENT, PF_R, PF_TYPE

FM = {"contract", "nsz", "reassoc", "arcp"}  # no nnan/ninf: the finiteness checks must stay

# Header of ws: [0] = Kcap, [1] = n
HDR = 2


def layout(n, kcap):
    """Offsets of the regions of the flat workspace for ``n`` joints and derivative order ≤ kcap."""
    o = {}
    off = HDR
    for name, size in (
        ("V", (kcap + 2) * n * 6),   # V_i^(k), k = 0..K+1
        ("W", (kcap + 1) * n * 6),   # W_i^(k), k = 0..K
        ("RP", n * 12),              # C_{λ(i),i}: R (9, row-major), p (3)
        ("Q", (kcap + 3) * n),       # q^(k), k = 0..K+2
        ("C", (kcap + 2) * (kcap + 2)),  # Bell coefficients c[m][j] of Φ_m (one joint)
        ("U", (kcap + 2) * 6),       # u_k = T_i V_λ^(k) (one joint), or M V^(k) in the backward pass
        ("BIN", (kcap + 3) * (kcap + 3)),  # binomial coefficients
        ("IC", n * 36),              # composite inertias (closed-form M)
        ("J", n * 6),                # one column of J (closed-form C̄, Ṁ)
        ("JD", n * 6),               # the same column of J̇
        ("P", n * 6),                # backward accumulators (closed forms)
        ("S", 24),                   # scratch vectors (see _phi_apply, S_base)
    ):
        o[name] = off
        off += size
    o["size"] = off
    return o


def make_workspace(n, kcap):
    """A fresh workspace for ``n`` joints and derivative orders up to ``kcap``."""
    o = layout(n, kcap)
    ws = np.zeros(o["size"])
    ws[0], ws[1] = kcap, n
    b = o["BIN"]
    for a in range(kcap + 3):
        for c in range(kcap + 3):
            ws[b + a * (kcap + 3) + c] = _binom(a, c)
    return ws


def _binom(a, c):
    if c < 0 or c > a:
        return 0.0
    r = 1.0
    for t in range(c):
        r = r * (a - t) / (t + 1)
    return r


@njit(cache=True, fastmath=FM)
def _offsets(n, kcap):
    off = HDR
    oV = off
    off += (kcap + 2) * n * 6
    oW = off
    off += (kcap + 1) * n * 6
    oRP = off
    off += n * 12
    oQ = off
    off += (kcap + 3) * n
    oC = off
    off += (kcap + 2) * (kcap + 2)
    oU = off
    off += (kcap + 2) * 6
    oB = off
    off += (kcap + 3) * (kcap + 3)
    oIC = off
    off += n * 36
    oJ = off
    off += n * 6
    oJD = off
    off += n * 6
    oP = off
    return oV, oW, oRP, oQ, oC, oU, oB, oIC, oJ, oJD, oP


# ---------------------------------------------------------------------------------------------
# Kinematics of one joint
# ---------------------------------------------------------------------------------------------
@njit(cache=True, fastmath=FM)
def _joint_pose(pf, i, q, ws, oRP):
    """C_{λ(i),i}(q) = B_i exp(X_i q): R = B_R Rot(e, q), p = B_p (revolute);
    R = B_R, p = B_p + B_R e q (prismatic). Stored in ws[oRP + 12 i : +12]."""
    ex, ey, ez = pf[i, PF_AXIS], pf[i, PF_AXIS + 1], pf[i, PF_AXIS + 2]
    o = oRP + 12 * i
    if pf[i, PF_TYPE] == 0.0:
        s, c = np.sin(q), np.cos(q)
        t = 1.0 - c
        # Rodrigues: I + s ẽ + (1 − c) ẽ²
        r00 = c + t * ex * ex
        r01 = t * ex * ey - s * ez
        r02 = t * ex * ez + s * ey
        r10 = t * ex * ey + s * ez
        r11 = c + t * ey * ey
        r12 = t * ey * ez - s * ex
        r20 = t * ex * ez - s * ey
        r21 = t * ey * ez + s * ex
        r22 = c + t * ez * ez
        for a in range(3):
            b0, b1, b2 = pf[i, PF_R + 3 * a], pf[i, PF_R + 3 * a + 1], pf[i, PF_R + 3 * a + 2]
            ws[o + 3 * a] = b0 * r00 + b1 * r10 + b2 * r20
            ws[o + 3 * a + 1] = b0 * r01 + b1 * r11 + b2 * r21
            ws[o + 3 * a + 2] = b0 * r02 + b1 * r12 + b2 * r22
            ws[o + 9 + a] = pf[i, PF_P + a]
    else:
        for a in range(3):
            b0, b1, b2 = pf[i, PF_R + 3 * a], pf[i, PF_R + 3 * a + 1], pf[i, PF_R + 3 * a + 2]
            ws[o + 3 * a] = b0
            ws[o + 3 * a + 1] = b1
            ws[o + 3 * a + 2] = b2
            ws[o + 9 + a] = pf[i, PF_P + a] + (b0 * ex + b1 * ey + b2 * ez) * q


@njit(cache=True, fastmath=FM)
def _to_child(ws, o, src, s, dst, d):
    """dst = Ad_{C_{i,λ}} src for twists: ω' = Rᵀω, v' = Rᵀ(v + ω × p); (R, p) at ws[o:]."""
    w0, w1, w2 = src[s], src[s + 1], src[s + 2]
    p0, p1, p2 = ws[o + 9], ws[o + 10], ws[o + 11]
    v0 = src[s + 3] + w1 * p2 - w2 * p1
    v1 = src[s + 4] + w2 * p0 - w0 * p2
    v2 = src[s + 5] + w0 * p1 - w1 * p0
    for a in range(3):
        ra0, ra1, ra2 = ws[o + a], ws[o + 3 + a], ws[o + 6 + a]  # column a of R
        dst[d + a] = ra0 * w0 + ra1 * w1 + ra2 * w2
        dst[d + 3 + a] = ra0 * v0 + ra1 * v1 + ra2 * v2


@njit(cache=True, fastmath=FM)
def _add_to_parent(ws, o, src, s, dst, d):
    """dst += Ad_{C_{i,λ}}ᵀ src for wrenches: f' = R f, m' = R m + p × f'."""
    f0 = ws[o] * src[s + 3] + ws[o + 1] * src[s + 4] + ws[o + 2] * src[s + 5]
    f1 = ws[o + 3] * src[s + 3] + ws[o + 4] * src[s + 4] + ws[o + 5] * src[s + 5]
    f2 = ws[o + 6] * src[s + 3] + ws[o + 7] * src[s + 4] + ws[o + 8] * src[s + 5]
    m0 = ws[o] * src[s] + ws[o + 1] * src[s + 1] + ws[o + 2] * src[s + 2]
    m1 = ws[o + 3] * src[s] + ws[o + 4] * src[s + 1] + ws[o + 5] * src[s + 2]
    m2 = ws[o + 6] * src[s] + ws[o + 7] * src[s + 1] + ws[o + 8] * src[s + 2]
    p0, p1, p2 = ws[o + 9], ws[o + 10], ws[o + 11]
    dst[d] += m0 + p1 * f2 - p2 * f1
    dst[d + 1] += m1 + p2 * f0 - p0 * f2
    dst[d + 2] += m2 + p0 * f1 - p1 * f0
    dst[d + 3] += f0
    dst[d + 4] += f1
    dst[d + 5] += f2


@njit(cache=True, fastmath=FM)
def _inertia_times(pf, i, src, s, dst, d, scale, accumulate):
    """dst (+)= scale · M_i src, M_i = [[Θ, h̃], [−h̃, m I]] (seed 004 eq. 24, h = m c)."""
    w0, w1, w2, v0, v1, v2 = src[s], src[s + 1], src[s + 2], src[s + 3], src[s + 4], src[s + 5]
    m = pf[i, PF_MASS]
    h0, h1, h2 = pf[i, PF_H], pf[i, PF_H + 1], pf[i, PF_H + 2]
    I = PF_I
    a0 = pf[i, I] * w0 + pf[i, I + 1] * w1 + pf[i, I + 2] * w2 + (h1 * v2 - h2 * v1)
    a1 = pf[i, I + 3] * w0 + pf[i, I + 4] * w1 + pf[i, I + 5] * w2 + (h2 * v0 - h0 * v2)
    a2 = pf[i, I + 6] * w0 + pf[i, I + 7] * w1 + pf[i, I + 8] * w2 + (h0 * v1 - h1 * v0)
    b0 = m * v0 - (h1 * w2 - h2 * w1)
    b1 = m * v1 - (h2 * w0 - h0 * w2)
    b2 = m * v2 - (h0 * w1 - h1 * w0)
    if not accumulate:
        for a in range(6):
            dst[d + a] = 0.0
    dst[d] += scale * a0
    dst[d + 1] += scale * a1
    dst[d + 2] += scale * a2
    dst[d + 3] += scale * b0
    dst[d + 4] += scale * b1
    dst[d + 5] += scale * b2


@njit(cache=True, fastmath=FM)
def _ad_X(pf, i, vec, s, transpose):
    """In place: vec[s:s+6] ← ad_{X_i} vec (or ad_{X_i}ᵀ vec for wrenches)."""
    ex, ey, ez = pf[i, PF_AXIS], pf[i, PF_AXIS + 1], pf[i, PF_AXIS + 2]
    a0, a1, a2, b0, b1, b2 = vec[s], vec[s + 1], vec[s + 2], vec[s + 3], vec[s + 4], vec[s + 5]
    if pf[i, PF_TYPE] == 0.0:  # X = (e, 0): ad_X = diag(ẽ, ẽ), ad_Xᵀ = −ad_X
        sg = -1.0 if transpose else 1.0
        vec[s] = sg * (ey * a2 - ez * a1)
        vec[s + 1] = sg * (ez * a0 - ex * a2)
        vec[s + 2] = sg * (ex * a1 - ey * a0)
        vec[s + 3] = sg * (ey * b2 - ez * b1)
        vec[s + 4] = sg * (ez * b0 - ex * b2)
        vec[s + 5] = sg * (ex * b1 - ey * b0)
    elif not transpose:  # X = (0, e): ad_X (ω, v) = (0, e × ω)
        vec[s] = 0.0
        vec[s + 1] = 0.0
        vec[s + 2] = 0.0
        vec[s + 3] = ey * a2 - ez * a1
        vec[s + 4] = ez * a0 - ex * a2
        vec[s + 5] = ex * a1 - ey * a0
    else:  # ad_Xᵀ (m, f) = (−e × f, 0)
        vec[s] = -(ey * b2 - ez * b1)
        vec[s + 1] = -(ez * b0 - ex * b2)
        vec[s + 2] = -(ex * b1 - ey * b0)
        vec[s + 3] = 0.0
        vec[s + 4] = 0.0
        vec[s + 5] = 0.0


@njit(cache=True, fastmath=FM)
def _bell(ws, i, K1, n, oQ, oC, oB, kcap):
    """Coefficients c[m][j] of Φ_m = Σ_j c[m][j] ad_{X_i}^j, m ≤ K1 (MATH.md: complete Bell
    polynomials in x_l = −q_i^(l) ad_{X_i}): c[m+1][j] = Σ_l binom(m,l) c[m−l][j−1] (−q^(l+1))."""
    w = kcap + 2
    nb = kcap + 3
    for m in range(K1 + 1):
        for j in range(K1 + 1):
            ws[oC + m * w + j] = 0.0
    ws[oC] = 1.0
    for m in range(K1):
        for j in range(1, m + 2):
            acc = 0.0
            for l in range(m + 1):
                acc -= ws[oB + m * nb + l] * ws[oC + (m - l) * w + j - 1] * ws[oQ + (l + 1) * n + i]
            ws[oC + (m + 1) * w + j] = acc


@njit(cache=True, fastmath=FM)
def _phi_apply(pf, i, ws, oC, kcap, m, src, s, dst, d, scale, transpose):
    """dst += scale · Φ_m src (or Φ_mᵀ src); src is left unchanged."""
    t = ws.shape[0] - 6  # scratch: the last 6 floats of ws
    w = kcap + 2
    for a in range(6):
        ws[t + a] = src[s + a]
    for j in range(m + 1):
        if j > 0:
            _ad_X(pf, i, ws, t, transpose)
        c = ws[oC + m * w + j]
        if c != 0.0:
            c *= scale
            for a in range(6):
                dst[d + a] += c * ws[t + a]


@njit(cache=True, fastmath=FM)
def _phi1_apply(pf, i, src, s, dst, d, c, transpose):
    """dst += c · ad_{X_i} src (or ad_{X_i}ᵀ): Φ_1 = −q̇ ad_X when only first derivatives occur."""
    ex, ey, ez = pf[i, PF_AXIS], pf[i, PF_AXIS + 1], pf[i, PF_AXIS + 2]
    a0, a1, a2, b0, b1, b2 = src[s], src[s + 1], src[s + 2], src[s + 3], src[s + 4], src[s + 5]
    if pf[i, PF_TYPE] == 0.0:
        if transpose:
            c = -c
        dst[d] += c * (ey * a2 - ez * a1)
        dst[d + 1] += c * (ez * a0 - ex * a2)
        dst[d + 2] += c * (ex * a1 - ey * a0)
        dst[d + 3] += c * (ey * b2 - ez * b1)
        dst[d + 4] += c * (ez * b0 - ex * b2)
        dst[d + 5] += c * (ex * b1 - ey * b0)
    elif not transpose:
        dst[d + 3] += c * (ey * a2 - ez * a1)
        dst[d + 4] += c * (ez * a0 - ex * a2)
        dst[d + 5] += c * (ex * a1 - ey * a0)
    else:
        dst[d] -= c * (ey * b2 - ez * b1)
        dst[d + 1] -= c * (ez * b0 - ex * b2)
        dst[d + 2] -= c * (ex * b1 - ey * b0)


# ---------------------------------------------------------------------------------------------
# Recursive inverse dynamics and its time derivatives (MATH.md "Recursive time derivatives")
# ---------------------------------------------------------------------------------------------
@njit(cache=True, fastmath=FM)
def _rnea_k(pf, ws, K, fext, use_fext, out):
    """τ^(k), k = 0..K, into out[k, :], from q^(k) (k = 0..K+2) already in ws's Q region.

    Forward (seed 000 eq. 67, differentiated): Z^(k) = Σ_m binom(k,m) Φ_m (T_i Y^(k−m)),
    V_i^(k) = Z^(k) + X_i q_i^(k+1). Backward (eq. 68): F^(k) = M V^(k+1) − Σ_m binom(k,m)
    ad_{V^(m)}ᵀ M V^(k−m); W^(k) = Σ_children S^(k) + F^(k) − W^app; Q^(k) = X_iᵀ W^(k);
    S^(k) = T_iᵀ Σ_m binom(k,m) Φ_mᵀ W^(k−m).
    """
    n = pf.shape[0] - 1
    kcap = int(ws[0])
    oV, oW, oRP, oQ, oC, oU, oB, oIC, oJ, oJD, oP = _offsets(n, kcap)
    nb = kcap + 3
    K1 = K + 1

    # ---- forward pass
    sb = S_base(ws)
    for i in range(n):
        par = int(pf[i, PF_PARENT])
        _joint_pose(pf, i, ws[oQ + i], ws, oRP)
        o = oRP + 12 * i
        if K1 > 1:
            _bell(ws, i, K1, n, oQ, oC, oB, kcap)
        for k in range(K1 + 1):
            # u_k = T_i V_λ^(k); the base has V_0 = 0, V̇_0 = (0, −g) (gravity, MATH.md)
            u = oU + 6 * k
            if par >= 0:
                _to_child(ws, o, ws, oV + (k * n + par) * 6, ws, u)
            elif k == 1:
                for a in range(3):
                    ws[sb + a] = 0.0
                    ws[sb + 3 + a] = -pf[n, a]
                _to_child(ws, o, ws, sb, ws, u)
            else:
                for a in range(6):
                    ws[u + a] = 0.0
            # V^(k) = Σ_m binom(k,m) Φ_m u_{k−m} + X_i q^(k+1); Φ_0 = I, Φ_1 = −q̇ ad_X
            v = oV + (k * n + i) * 6
            for a in range(6):
                ws[v + a] = ws[u + a]
            if k >= 1:
                if K1 > 1:
                    for m in range(1, k + 1):
                        _phi_apply(pf, i, ws, oC, kcap, m, ws, oU + 6 * (k - m), ws, v,
                                   ws[oB + k * nb + m], False)
                else:
                    _phi1_apply(pf, i, ws, oU, ws, v, -ws[oQ + n + i], False)
            qk = ws[oQ + (k + 1) * n + i]
            if pf[i, PF_TYPE] == 0.0:
                for a in range(3):
                    ws[v + a] += pf[i, PF_AXIS + a] * qk
            else:
                for a in range(3):
                    ws[v + 3 + a] += pf[i, PF_AXIS + a] * qk

    # ---- backward pass
    for k in range(K + 1):
        for i in range(n):
            for a in range(6):
                ws[oW + (k * n + i) * 6 + a] = 0.0
    for i in range(n - 1, -1, -1):
        par = int(pf[i, PF_PARENT])
        o = oRP + 12 * i
        # M V^(k), k = 0..K+1, into the U region
        for k in range(K1 + 1):
            _inertia_times(pf, i, ws, oV + (k * n + i) * 6, ws, oU + 6 * k, 1.0, False)
        for k in range(K + 1):
            w = oW + (k * n + i) * 6
            for a in range(6):
                ws[w + a] += ws[oU + 6 * (k + 1) + a]
            for m in range(k + 1):
                # − binom(k,m) ad_{V^(m)}ᵀ (M V^(k−m)); ad_Vᵀ (μ, f) = (−ω×μ − v×f, −ω×f)
                b = ws[oB + k * nb + m]
                vv = oV + (m * n + i) * 6
                mv = oU + 6 * (k - m)
                w0, w1, w2 = ws[vv], ws[vv + 1], ws[vv + 2]
                l0, l1, l2 = ws[vv + 3], ws[vv + 4], ws[vv + 5]
                u0, u1, u2 = ws[mv], ws[mv + 1], ws[mv + 2]
                f0, f1, f2 = ws[mv + 3], ws[mv + 4], ws[mv + 5]
                ws[w] += b * (w1 * u2 - w2 * u1 + l1 * f2 - l2 * f1)
                ws[w + 1] += b * (w2 * u0 - w0 * u2 + l2 * f0 - l0 * f2)
                ws[w + 2] += b * (w0 * u1 - w1 * u0 + l0 * f1 - l1 * f0)
                ws[w + 3] += b * (w1 * f2 - w2 * f1)
                ws[w + 4] += b * (w2 * f0 - w0 * f2)
                ws[w + 5] += b * (w0 * f1 - w1 * f0)
            if k == 0 and use_fext:
                for a in range(6):
                    ws[w + a] -= fext[i, a]
            # Q_i^(k) = X_iᵀ W_i^(k)
            if pf[i, PF_TYPE] == 0.0:
                out[k, i] = (pf[i, PF_AXIS] * ws[w] + pf[i, PF_AXIS + 1] * ws[w + 1]
                             + pf[i, PF_AXIS + 2] * ws[w + 2])
            else:
                out[k, i] = (pf[i, PF_AXIS] * ws[w + 3] + pf[i, PF_AXIS + 1] * ws[w + 4]
                             + pf[i, PF_AXIS + 2] * ws[w + 5])
        if par >= 0:
            if K > 1:
                _bell(ws, i, K, n, oQ, oC, oB, kcap)
            for k in range(K + 1):
                w = oW + (k * n + i) * 6
                if k == 0:
                    _add_to_parent(ws, o, ws, w, ws, oW + par * 6)
                    continue
                for a in range(6):
                    ws[sb + a] = ws[w + a]
                if K > 1:
                    for m in range(1, k + 1):
                        _phi_apply(pf, i, ws, oC, kcap, m, ws, oW + ((k - m) * n + i) * 6, ws,
                                   sb, ws[oB + k * nb + m], True)
                else:
                    _phi1_apply(pf, i, ws, oW + i * 6, ws, sb, -ws[oQ + n + i], True)
                _add_to_parent(ws, o, ws, sb, ws, oW + (k * n + par) * 6)


@njit(cache=True, fastmath=FM)
def S_base(ws):
    """Start of a 6-float scratch vector (distinct from the one _phi_apply uses)."""
    return ws.shape[0] - 12


@njit(cache=True)
def _bad(x):
    for v in x.flat:
        if not np.isfinite(v):
            return True
    return False


@njit(cache=True)
def check_states(n, a, b, c, out):
    """Status of three state vectors and an output, all (n,): size first, then finiteness."""
    if a.shape[0] != n:
        return 11
    if b.shape[0] != n:
        return 21
    if c.shape[0] != n:
        return 31
    if out.shape[-1] != n:
        return 41
    if _bad(a):
        return 12
    if _bad(b):
        return 22
    if _bad(c):
        return 32
    return 0


@njit(cache=True)
def check_states_fext(n, a, b, c, fext, out):
    """check_states, with body wrenches fext (n, 6) as argument 4 and out as argument 5."""
    st = check_states(n, a, b, c, out)
    if st:
        return st + 10 if st // 10 == 4 else st
    if fext.shape[0] != n or fext.shape[1] != 6:
        return 41
    if _bad(fext):
        return 42
    return 0


@njit(cache=True)
def check_batch(n, a, b, c, out):
    """The same for (N, n) batches."""
    N = a.shape[0]
    if a.shape[1] != n:
        return 11
    if b.shape[0] != N or b.shape[1] != n:
        return 21
    if c.shape[0] != N or c.shape[1] != n:
        return 31
    if out.shape[0] != N or out.shape[1] != n:
        return 41
    if _bad(a):
        return 12
    if _bad(b):
        return 22
    if _bad(c):
        return 32
    return 0


@njit(cache=True, fastmath=FM)
def _load_states(ws, n, q, qd, qdd):
    """q, q̇, q̈ into the Q region (rows 0–2) of the workspace."""
    oQ = _offsets(n, int(ws[0]))[3]
    for i in range(n):
        ws[oQ + i] = q[i]
        ws[oQ + n + i] = qd[i]
        ws[oQ + 2 * n + i] = qdd[i]


# ---------------------------------------------------------------------------------------------
# Public entries
# ---------------------------------------------------------------------------------------------
@njit("int64(f8[:, ::1], f8[::1], f8[::1], f8[::1], f8[::1], f8[::1])", cache=True, fastmath=FM)
def rnea(pf, ws, q, qd, qdd, out):
    """τ = ID(q, q̇, q̈) (K = 0 of the recursion)."""
    n = pf.shape[0] - 1
    st = check_states(n, q, qd, qdd, out)
    if st:
        return st
    _load_states(ws, n, q, qd, qdd)
    _rnea_k(pf, ws, 0, pf, False, out.reshape((1, n)))
    return 0


@njit("int64(f8[:, ::1], f8[::1], f8[::1], f8[::1], f8[::1], f8[:, ::1], f8[::1])", cache=True, fastmath=FM)
def rnea_fext(pf, ws, q, qd, qdd, fext, out):
    """τ = ID(q, q̇, q̈) with external wrenches fext (n, 6) acting on the bodies (body frames)."""
    n = pf.shape[0] - 1
    st = check_states_fext(n, q, qd, qdd, fext, out)
    if st:
        return st
    _load_states(ws, n, q, qd, qdd)
    _rnea_k(pf, ws, 0, fext, True, out.reshape((1, n)))
    return 0


@njit("int64(f8[:, ::1], f8[:, ::1], f8[:, ::1], f8[:, ::1], f8[:, ::1], f8[:, ::1])",
      cache=True, parallel=True, fastmath=FM)
def rnea_batch(pf, wsb, q, qd, qdd, out):
    """τ for N states: q, qd, qdd, out of shape (N, n); the samples are split over the threads,
    each with its own workspace row of ``wsb`` (T, size)."""
    n = pf.shape[0] - 1
    N = q.shape[0]
    st = check_batch(n, q, qd, qdd, out)
    if st:
        return st
    T = wsb.shape[0]
    oQ = _offsets(n, int(wsb[0, 0]))[3]
    for c in prange(T):
        ws = wsb[c]
        for s in range(c * N // T, (c + 1) * N // T):
            for i in range(n):
                ws[oQ + i] = q[s, i]
                ws[oQ + n + i] = qd[s, i]
                ws[oQ + 2 * n + i] = qdd[s, i]
            _rnea_k(pf, ws, 0, pf, False, out[s:s + 1])
    return 0


@njit("int64(f8[:, ::1], f8[::1], f8[:, ::1], f8[:, ::1])", cache=True, fastmath=FM)
def torque_derivatives(pf, ws, qs, out):
    """τ^(k), k = 0..K, from qs = (q, q', …, q^(K+2)) of shape (K+3, n); out (K+1, n)."""
    n = pf.shape[0] - 1
    K = qs.shape[0] - 3
    if K < 0 or qs.shape[1] != n or K > int(ws[0]):
        return 11
    if out.shape[0] != K + 1 or out.shape[1] != n:
        return 21
    if _bad(qs):
        return 12
    oQ = _offsets(n, int(ws[0]))[3]
    for k in range(K + 3):
        for i in range(n):
            ws[oQ + k * n + i] = qs[k, i]
    _rnea_k(pf, ws, K, pf, False, out)
    return 0


@njit("int64(f8[:, ::1], f8[:, ::1], f8[:, :, ::1], f8[:, :, ::1])", cache=True, parallel=True, fastmath=FM)
def torque_derivatives_batch(pf, wsb, qs, out):
    """The same for N samples: qs (N, K+3, n) → out (N, K+1, n), in one compiled loop split over
    the threads (one workspace row of ``wsb`` each)."""
    n = pf.shape[0] - 1
    N = qs.shape[0]
    K = qs.shape[1] - 3
    kcap = int(wsb[0, 0])
    if K < 0 or qs.shape[2] != n or K > kcap:
        return 11
    if out.shape[0] != N or out.shape[1] != K + 1 or out.shape[2] != n:
        return 21
    if _bad(qs):
        return 12
    T = wsb.shape[0]
    oQ = _offsets(n, kcap)[3]
    for c in prange(T):
        ws = wsb[c]
        for s in range(c * N // T, (c + 1) * N // T):
            for k in range(K + 3):
                for i in range(n):
                    ws[oQ + k * n + i] = qs[s, k, i]
            _rnea_k(pf, ws, K, pf, False, out[s])
    return 0


# ---------------------------------------------------------------------------------------------
# Closed forms exploiting the block-triangular structure of A = (I − D)⁻¹ (seed 004 §2–3)
# ---------------------------------------------------------------------------------------------
@njit(cache=True, fastmath=FM)
def _X_dot(pf, i, ws, w):
    """X_iᵀ W for the 6-vector at ws[w:]."""
    o = w if pf[i, PF_TYPE] == 0.0 else w + 3
    return pf[i, PF_AXIS] * ws[o] + pf[i, PF_AXIS + 1] * ws[o + 1] + pf[i, PF_AXIS + 2] * ws[o + 2]


@njit(cache=True, fastmath=FM)
def _set_X(pf, i, ws, d, scale):
    """ws[d:d+6] = scale · X_i."""
    for a in range(6):
        ws[d + a] = 0.0
    o = d if pf[i, PF_TYPE] == 0.0 else d + 3
    for a in range(3):
        ws[o + a] = scale * pf[i, PF_AXIS + a]


@njit(cache=True, fastmath=FM)
def _poses(pf, ws, q, oRP):
    for i in range(q.shape[0]):
        _joint_pose(pf, i, q[i], ws, oRP)


@njit("int64(f8[:, ::1], f8[::1], f8[::1], f8[:, ::1])", cache=True, fastmath=FM)
def mass_matrix(pf, ws, q, out):
    """M = Jᵀ𝖬J (seed 004 eq. 20). With J = A X and A block lower-triangular,
    (Aᵀ𝖬A)_{jk} = Ad_{C_{k,j}}ᵀ 𝖬ᶜ_k for j an ancestor of k, where 𝖬ᶜ_k = Σ_{i ⪰ k} Ad_{C_{i,k}}ᵀ
    M_i Ad_{C_{i,k}} is the subtree (composite) inertia, so M_{jk} = (Ad_{C_{k,j}} X_j)ᵀ 𝖬ᶜ_k X_k.

    𝖬ᶜ is kept in the compact form (m, h = m c, Θ_b) of eq. 24; moving it by C = (R, p) into the
    parent frame gives m, R h + m p, R Θ_b Rᵀ − (Rh)~p̃ − p̃(Rh)~ − m p̃p̃.
    """
    n = pf.shape[0] - 1
    if q.shape[0] != n:
        return 11
    if out.shape[0] != n or out.shape[1] != n:
        return 21
    if _bad(q):
        return 12
    oV, oW, oRP, oQ, oC, oU, oB, oIC, oJ, oJD, oP = _offsets(n, int(ws[0]))
    _poses(pf, ws, q, oRP)
    for i in range(n):
        c = oIC + 13 * i
        ws[c] = pf[i, PF_MASS]
        for a in range(3):
            ws[c + 1 + a] = pf[i, PF_H + a]
        for a in range(9):
            ws[c + 4 + a] = pf[i, PF_I + a]
        for j in range(n):
            out[i, j] = 0.0
    for i in range(n - 1, -1, -1):
        par = int(pf[i, PF_PARENT])
        if par < 0:
            continue
        o = oRP + 12 * i
        c = oIC + 13 * i
        d = oIC + 13 * par
        m = ws[c]
        p0, p1, p2 = ws[o + 9], ws[o + 10], ws[o + 11]
        # R h
        r0 = ws[o] * ws[c + 1] + ws[o + 1] * ws[c + 2] + ws[o + 2] * ws[c + 3]
        r1 = ws[o + 3] * ws[c + 1] + ws[o + 4] * ws[c + 2] + ws[o + 5] * ws[c + 3]
        r2 = ws[o + 6] * ws[c + 1] + ws[o + 7] * ws[c + 2] + ws[o + 8] * ws[c + 3]
        ws[d] += m
        ws[d + 1] += r0 + m * p0
        ws[d + 2] += r1 + m * p1
        ws[d + 3] += r2 + m * p2
        # R Θ Rᵀ − (Rh)~p̃ − p̃(Rh)~ − m p̃p̃ (symmetric: six entries), with x̃ỹ = y xᵀ − (x·y) I
        t00 = ws[o] * ws[c + 4] + ws[o + 1] * ws[c + 7] + ws[o + 2] * ws[c + 10]
        t01 = ws[o] * ws[c + 5] + ws[o + 1] * ws[c + 8] + ws[o + 2] * ws[c + 11]
        t02 = ws[o] * ws[c + 6] + ws[o + 1] * ws[c + 9] + ws[o + 2] * ws[c + 12]
        t10 = ws[o + 3] * ws[c + 4] + ws[o + 4] * ws[c + 7] + ws[o + 5] * ws[c + 10]
        t11 = ws[o + 3] * ws[c + 5] + ws[o + 4] * ws[c + 8] + ws[o + 5] * ws[c + 11]
        t12 = ws[o + 3] * ws[c + 6] + ws[o + 4] * ws[c + 9] + ws[o + 5] * ws[c + 12]
        t20 = ws[o + 6] * ws[c + 4] + ws[o + 7] * ws[c + 7] + ws[o + 8] * ws[c + 10]
        t21 = ws[o + 6] * ws[c + 5] + ws[o + 7] * ws[c + 8] + ws[o + 8] * ws[c + 11]
        t22 = ws[o + 6] * ws[c + 6] + ws[o + 7] * ws[c + 9] + ws[o + 8] * ws[c + 12]
        d2 = 2.0 * (r0 * p0 + r1 * p1 + r2 * p2) + m * (p0 * p0 + p1 * p1 + p2 * p2)
        x00 = t00 * ws[o] + t01 * ws[o + 1] + t02 * ws[o + 2] - 2.0 * p0 * r0 - m * p0 * p0 + d2
        x11 = (t10 * ws[o + 3] + t11 * ws[o + 4] + t12 * ws[o + 5] - 2.0 * p1 * r1 - m * p1 * p1
               + d2)
        x22 = (t20 * ws[o + 6] + t21 * ws[o + 7] + t22 * ws[o + 8] - 2.0 * p2 * r2 - m * p2 * p2
               + d2)
        x01 = t00 * ws[o + 3] + t01 * ws[o + 4] + t02 * ws[o + 5] - (p0 * r1 + r0 * p1) - m * p0 * p1
        x02 = t00 * ws[o + 6] + t01 * ws[o + 7] + t02 * ws[o + 8] - (p0 * r2 + r0 * p2) - m * p0 * p2
        x12 = t10 * ws[o + 6] + t11 * ws[o + 7] + t12 * ws[o + 8] - (p1 * r2 + r1 * p2) - m * p1 * p2
        ws[d + 4] += x00
        ws[d + 5] += x01
        ws[d + 6] += x02
        ws[d + 7] += x01
        ws[d + 8] += x11
        ws[d + 9] += x12
        ws[d + 10] += x02
        ws[d + 11] += x12
        ws[d + 12] += x22
    sb = S_base(ws)
    for k in range(n):
        # F = 𝖬ᶜ_k X_k: (Θe, e × h) for X = (e, 0); (h × e, m e) for X = (0, e)
        c = oIC + 13 * k
        ex, ey, ez = pf[k, PF_AXIS], pf[k, PF_AXIS + 1], pf[k, PF_AXIS + 2]
        h0, h1, h2 = ws[c + 1], ws[c + 2], ws[c + 3]
        if pf[k, PF_TYPE] == 0.0:
            for a in range(3):
                ws[sb + a] = ws[c + 4 + 3 * a] * ex + ws[c + 5 + 3 * a] * ey + ws[c + 6 + 3 * a] * ez
            ws[sb + 3] = ey * h2 - ez * h1
            ws[sb + 4] = ez * h0 - ex * h2
            ws[sb + 5] = ex * h1 - ey * h0
        else:
            ws[sb] = h1 * ez - h2 * ey
            ws[sb + 1] = h2 * ex - h0 * ez
            ws[sb + 2] = h0 * ey - h1 * ex
            ws[sb + 3] = ws[c] * ex
            ws[sb + 4] = ws[c] * ey
            ws[sb + 5] = ws[c] * ez
        out[k, k] = _X_dot(pf, k, ws, sb)
        m0, m1, m2, f0, f1, f2 = ws[sb], ws[sb + 1], ws[sb + 2], ws[sb + 3], ws[sb + 4], ws[sb + 5]
        j = k
        while int(pf[j, PF_PARENT]) >= 0:
            # F ← Ad_{C_{j,λ}}ᵀ F (f' = R f, m' = R m + p × f'), then M_{λk} = X_λᵀ F
            o = oRP + 12 * j
            g0 = ws[o] * f0 + ws[o + 1] * f1 + ws[o + 2] * f2
            g1 = ws[o + 3] * f0 + ws[o + 4] * f1 + ws[o + 5] * f2
            g2 = ws[o + 6] * f0 + ws[o + 7] * f1 + ws[o + 8] * f2
            n0 = ws[o] * m0 + ws[o + 1] * m1 + ws[o + 2] * m2
            n1 = ws[o + 3] * m0 + ws[o + 4] * m1 + ws[o + 5] * m2
            n2 = ws[o + 6] * m0 + ws[o + 7] * m1 + ws[o + 8] * m2
            p0, p1, p2 = ws[o + 9], ws[o + 10], ws[o + 11]
            m0 = n0 + p1 * g2 - p2 * g1
            m1 = n1 + p2 * g0 - p0 * g2
            m2 = n2 + p0 * g1 - p1 * g0
            f0, f1, f2 = g0, g1, g2
            j = int(pf[j, PF_PARENT])
            ex, ey, ez = pf[j, PF_AXIS], pf[j, PF_AXIS + 1], pf[j, PF_AXIS + 2]
            if pf[j, PF_TYPE] == 0.0:
                v = ex * m0 + ey * m1 + ez * m2
            else:
                v = ex * f0 + ey * f1 + ez * f2
            out[j, k] = v
            out[k, j] = v
    return 0


@njit(cache=True, fastmath=FM)
def _set_unit(ws, d, c):
    for a in range(6):
        ws[d + a] = 0.0
    ws[d + c] = 1.0


@njit(cache=True, fastmath=FM)
def _mat6_vec(ws, m, src, s, dst, d):
    """dst = A src with A stored column-wise at ws[m:m+36]."""
    for a in range(6):
        dst[d + a] = 0.0
    for c in range(6):
        x = src[s + c]
        if x != 0.0:
            for a in range(6):
                dst[d + a] += ws[m + 6 * c + a] * x


@njit("int64(f8[:, ::1], f8[::1], f8[::1], f8[::1], f8[:, ::1], int64)", cache=True, fastmath=FM)
def coriolis(pf, ws, q, qd, out, mode):
    """mode 0: C̄ = −Jᵀ(𝖬Aa + bᵀ𝖬 − 𝖬b)J (seed 004 eq. 54), so that Ṁ − 2C̄ is skew;
    mode 1: Ṁ = −Jᵀ(𝖬Aa + (𝖬Aa)ᵀ)J (eq. 29–30).

    With J̇ = −AaJ (eq. 19, aX = 0), column c of J and J̇ follow the forward recursion over the
    subtree of c: J_i = T_i J_λ, J̇_i = T_i J̇_λ − q̇_i ad_{X_i} J_i (J_c = X_c, J̇_c = 0); the
    products with Jᵀ are backward accumulations Σ Ad_{C_{i,j}}ᵀ (·)_i.
    """
    n = pf.shape[0] - 1
    if q.shape[0] != n:
        return 11
    if qd.shape[0] != n:
        return 21
    if out.shape[0] != n or out.shape[1] != n:
        return 31
    if _bad(q):
        return 12
    if _bad(qd):
        return 22
    oV, oW, oRP, oQ, oC, oU, oB, oIC, oJ, oJD, oP = _offsets(n, int(ws[0]))
    sb = S_base(ws)
    _poses(pf, ws, q, oRP)
    # body twists V_i = T_i V_λ + X_i q̇_i
    for i in range(n):
        par = int(pf[i, PF_PARENT])
        v = oV + 6 * i
        if par >= 0:
            _to_child(ws, oRP + 12 * i, ws, oV + 6 * par, ws, v)
        else:
            for a in range(6):
                ws[v + a] = 0.0
        o = v if pf[i, PF_TYPE] == 0.0 else v + 3
        for a in range(3):
            ws[o + a] += pf[i, PF_AXIS + a] * qd[i]
    for i in range(n):
        for j in range(n):
            out[i, j] = 0.0
    for c in range(n):
        # ---- forward over the subtree of c (contiguous in depth-first order)
        _set_X(pf, c, ws, oJ + 6 * c, 1.0)
        for a in range(6):
            ws[oJD + 6 * c + a] = 0.0
        end = c + 1
        while end < n and int(pf[end, PF_PARENT]) >= c:
            i = end
            par = int(pf[i, PF_PARENT])
            o = oRP + 12 * i
            _to_child(ws, o, ws, oJ + 6 * par, ws, oJ + 6 * i)
            _to_child(ws, o, ws, oJD + 6 * par, ws, oJD + 6 * i)
            for a in range(6):
                ws[sb + a] = ws[oJ + 6 * i + a]
            _ad_X(pf, i, ws, sb, False)
            for a in range(6):
                ws[oJD + 6 * i + a] -= qd[i] * ws[sb + a]
            end += 1
        # ---- Y_i = 𝖬_i (J̇_i + ad_{V_i} J_i) − ad_{V_i}ᵀ 𝖬_i J_i  (Ṁ: Y_i = 𝖬_i J̇_i);
        #      backward P = Σ Tᵀ Y
        for i in range(c, end):
            p = oP + 6 * i
            if mode == 1:
                _inertia_times(pf, i, ws, oJD + 6 * i, ws, p, 1.0, False)
                continue
            v = oV + 6 * i
            w0, w1, w2 = ws[v], ws[v + 1], ws[v + 2]
            l0, l1, l2 = ws[v + 3], ws[v + 4], ws[v + 5]
            # J̇ + ad_V J, with ad_V (a, b) = (ω × a, v × a + ω × b)
            j = oJ + 6 * i
            d = oJD + 6 * i
            a0, a1, a2, b0, b1, b2 = ws[j], ws[j + 1], ws[j + 2], ws[j + 3], ws[j + 4], ws[j + 5]
            ws[sb] = ws[d] + w1 * a2 - w2 * a1
            ws[sb + 1] = ws[d + 1] + w2 * a0 - w0 * a2
            ws[sb + 2] = ws[d + 2] + w0 * a1 - w1 * a0
            ws[sb + 3] = ws[d + 3] + l1 * a2 - l2 * a1 + w1 * b2 - w2 * b1
            ws[sb + 4] = ws[d + 4] + l2 * a0 - l0 * a2 + w2 * b0 - w0 * b2
            ws[sb + 5] = ws[d + 5] + l0 * a1 - l1 * a0 + w0 * b1 - w1 * b0
            _inertia_times(pf, i, ws, sb, ws, p, 1.0, False)
            # − ad_Vᵀ (𝖬 J), ad_Vᵀ (μ, f) = (−ω×μ − v×f, −ω×f)
            _inertia_times(pf, i, ws, j, ws, sb, 1.0, False)
            u0, u1, u2, f0, f1, f2 = ws[sb], ws[sb + 1], ws[sb + 2], ws[sb + 3], ws[sb + 4], ws[sb + 5]
            ws[p] += w1 * u2 - w2 * u1 + l1 * f2 - l2 * f1
            ws[p + 1] += w2 * u0 - w0 * u2 + l2 * f0 - l0 * f2
            ws[p + 2] += w0 * u1 - w1 * u0 + l0 * f1 - l1 * f0
            ws[p + 3] += w1 * f2 - w2 * f1
            ws[p + 4] += w2 * f0 - w0 * f2
            ws[p + 5] += w0 * f1 - w1 * f0
        for i in range(end - 1, c, -1):
            out[i, c] = _X_dot(pf, i, ws, oP + 6 * i)
            _add_to_parent(ws, oRP + 12 * i, ws, oP + 6 * i, ws, oP + 6 * int(pf[i, PF_PARENT]))
        # up the ancestors of c, in registers: P ← Ad_{C_{i,λ}}ᵀ P
        p = oP + 6 * c
        m0, m1, m2, f0, f1, f2 = ws[p], ws[p + 1], ws[p + 2], ws[p + 3], ws[p + 4], ws[p + 5]
        out[c, c] = _X_dot(pf, c, ws, p)
        i = c
        while int(pf[i, PF_PARENT]) >= 0:
            o = oRP + 12 * i
            g0 = ws[o] * f0 + ws[o + 1] * f1 + ws[o + 2] * f2
            g1 = ws[o + 3] * f0 + ws[o + 4] * f1 + ws[o + 5] * f2
            g2 = ws[o + 6] * f0 + ws[o + 7] * f1 + ws[o + 8] * f2
            n0 = ws[o] * m0 + ws[o + 1] * m1 + ws[o + 2] * m2
            n1 = ws[o + 3] * m0 + ws[o + 4] * m1 + ws[o + 5] * m2
            n2 = ws[o + 6] * m0 + ws[o + 7] * m1 + ws[o + 8] * m2
            p0, p1, p2 = ws[o + 9], ws[o + 10], ws[o + 11]
            m0 = n0 + p1 * g2 - p2 * g1
            m1 = n1 + p2 * g0 - p0 * g2
            m2 = n2 + p0 * g1 - p1 * g0
            f0, f1, f2 = g0, g1, g2
            i = int(pf[i, PF_PARENT])
            ex, ey, ez = pf[i, PF_AXIS], pf[i, PF_AXIS + 1], pf[i, PF_AXIS + 2]
            if pf[i, PF_TYPE] == 0.0:
                out[i, c] = ex * m0 + ey * m1 + ez * m2
            else:
                out[i, c] = ex * f0 + ey * f1 + ez * f2
    if mode == 1:
        for i in range(n):
            for j in range(i, n):
                s = out[i, j] + out[j, i]
                out[i, j] = s
                out[j, i] = s
    return 0


@njit("int64(f8[:, ::1], f8[::1], f8[::1], f8[::1])", cache=True, fastmath=FM)
def gravity(pf, ws, q, out):
    """Q_grav = Jᵀ𝖬UG (seed 004 eq. 25–26): UG forward (a_i = T_i a_λ, a_0 = (0, −g)),
    Jᵀ backward (P_λ += T_iᵀ P_i, P_i ⊇ M_i a_i, Q_i = X_iᵀ P_i)."""
    n = pf.shape[0] - 1
    if q.shape[0] != n:
        return 11
    if out.shape[0] != n:
        return 21
    if _bad(q):
        return 12
    oV, oW, oRP, oQ, oC, oU, oB, oIC, oJ, oJD, oP = _offsets(n, int(ws[0]))
    sb = S_base(ws)
    _poses(pf, ws, q, oRP)
    for a in range(3):
        ws[sb + a] = 0.0
        ws[sb + 3 + a] = -pf[n, a]
    for i in range(n):
        par = int(pf[i, PF_PARENT])
        src = oV + 6 * par if par >= 0 else sb
        _to_child(ws, oRP + 12 * i, ws, src, ws, oV + 6 * i)
        _inertia_times(pf, i, ws, oV + 6 * i, ws, oP + 6 * i, 1.0, False)
    for i in range(n - 1, -1, -1):
        out[i] = _X_dot(pf, i, ws, oP + 6 * i)
        par = int(pf[i, PF_PARENT])
        if par >= 0:
            _add_to_parent(ws, oRP + 12 * i, ws, oP + 6 * i, ws, oP + 6 * par)
    return 0
