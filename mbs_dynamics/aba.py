"""Forward dynamics q̈ = FD(q, q̇, τ) by the O(n) articulated-body algorithm (ABA), compiled.

The recursion is Featherstone's ABA (R. Featherstone, *Rigid Body Dynamics Algorithms*, Springer
2008, §7.3, Table 7.1) written in the body-fixed screw formulation of the inverse dynamics in
:mod:`mbs_dynamics._kernels` (seed 000 §4.1, eq. 67–68; seed 000 §4 remarks that the same
forward/backward structure yields the O(n) forward dynamics). Twists ``(ω, v)``, wrenches
``(m, f)``, all in body frames; ``T_i = Ad_{C_{i,λ(i)}}`` maps a parent twist into body ``i``
and ``T_iᵀ`` maps a body-``i`` wrench to the parent.

Equations, with the body equation of motion of the RNEA
``W_i = M_i V̇_i − ad_{V_i}ᵀ M_i V_i − W_i^app + Σ_c T_cᵀ W_c`` and ``Q_i = X_iᵀ W_i``:

1. forward (velocities), ``i = 1..n``::

       V_i = T_i V_λ + X_i q̇_i                      (eq. 67)
       c_i = −q̇_i ad_{X_i} V_i                       (velocity-product acceleration, eq. 67)
       p_i = −ad_{V_i}ᵀ M_i V_i − W_i^app            (bias wrench, eq. 68)
       I^A_i = M_i,  p^A_i = p_i

2. backward (articulated inertias), ``i = n..1``::

       U_i = I^A_i X_i,  D_i = X_iᵀ U_i,  u_i = τ_i − X_iᵀ p^A_i
       I^a = I^A_i − U_i U_iᵀ / D_i
       p^a = p^A_i + I^a c_i + U_i u_i / D_i
       I^A_λ += T_iᵀ I^a T_i,  p^A_λ += T_iᵀ p^a

3. forward (accelerations), with the base acceleration ``V̇_0 = (0, −g)`` (gravity, MATH.md)::

       A'_i = T_i V̇_λ + c_i
       q̈_i = (u_i − U_iᵀ A'_i) / D_i
       V̇_i = A'_i + X_i q̈_i

Every kernel reads the packed model ``pf`` (:mod:`mbs_dynamics.model`) and a flat workspace from
:func:`make_aba_workspace`, writes into preallocated outputs and allocates nothing. Kernels
return an int status like :mod:`mbs_dynamics._kernels`: 0 = ok, ``10 a + 1`` = argument ``a`` has
the wrong size, ``10 a + 2`` = argument ``a`` holds NaN or inf (arguments numbered from 1 after
``ws``).

The fixed-step integrators of :mod:`mbs_dynamics.sim` call :func:`rk4_rigid` and :func:`rk4_sea`,
which run one whole RK4 step (four ABA evaluations) in one compiled call.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ._kernels import (_add_to_parent, _bad, _joint_pose, _to_child, check_batch, check_states,
                       check_states_fext)
from .model import PF_AXIS, PF_H, PF_I, PF_MASS, PF_PARENT, PF_TYPE

__all__ = ["make_aba_workspace", "aba_layout", "forward_dynamics", "aba", "aba_fext",
           "aba_batch", "rk4_rigid", "rk4_sea"]

HDR = 1  # ws[0] = n


def _sig(readonly_model, fext=False):
    """Explicit signature of the public single-state kernels: the packed model may be the
    Model's read-only array or a private writable copy; every other array is C-contiguous float64."""
    from numba import types
    pf = types.Array(types.float64, 2, "C", readonly=readonly_model)
    v = types.Array(types.float64, 1, "C")
    args = (pf, v, v, v, v) + ((types.Array(types.float64, 2, "C"),) if fext else ()) + (v,)
    return types.int64(*args)


def aba_layout(n):
    """Offsets of the regions of the flat ABA workspace for ``n`` bodies."""
    o = {}
    off = HDR
    for name, size in (
        ("RP", n * 12),   # C_{λ(i),i}(q_i): R (9, row-major), p (3) — the layout of _joint_pose
        ("V", n * 6),     # V_i
        ("c", n * 6),     # c_i = −q̇_i ad_{X_i} V_i
        ("IA", n * 36),   # I^A_i (row-major 6×6)
        ("pA", n * 6),    # p^A_i
        ("U", n * 6),     # U_i = I^A_i X_i
        ("D", n),         # D_i = X_iᵀ U_i
        ("u", n),         # u_i = τ_i − X_iᵀ p^A_i
        ("A", n * 6),     # V̇_i
        ("Ia", 36),       # I^a of the current body
        ("S", 96),        # scratch vectors and 3×3 blocks
    ):
        o[name] = off
        off += size
    o["size"] = off
    return o


def make_aba_workspace(n):
    """A fresh workspace for the ABA kernels of an ``n``-body model (float64, zeroed)."""
    ws = np.zeros(aba_layout(n)["size"])
    ws[0] = n
    return ws


@njit(cache=True)
def _aba_offsets(n):
    off = HDR
    oRP = off
    off += n * 12
    oV = off
    off += n * 6
    oc = off
    off += n * 6
    oIA = off
    off += n * 36
    opA = off
    off += n * 6
    oU = off
    off += n * 6
    oD = off
    off += n
    ou = off
    off += n
    oA = off
    off += n * 6
    oIa = off
    off += 36
    oS = off
    return oRP, oV, oc, oIA, opA, oU, oD, ou, oA, oIa, oS


@njit(cache=True)
def _congruence_add(ws, o, src, dst, tmp):
    """ws[dst:dst+36] += T_iᵀ I T_i for the symmetric 6×6 I at ws[src:] (row-major),
    T_i = Ad_{C_{i,λ}} with C_{λ,i} = (R, p) at ws[o:o+12].

    T_i = diag(Rᵀ, Rᵀ) [[1, 0], [−p̃, 1]], so with I' = diag(R, R) I diag(Rᵀ, Rᵀ) =
    [[A', B'], [B'ᵀ, C']]: T_iᵀ I T_i = [[A' + M + Mᵀ − p̃C'p̃, B' + p̃C'], [(B' + p̃C')ᵀ, C']],
    M = p̃B'ᵀ (column c of M = p × row c of B'). Uses 45 floats of scratch at ws[tmp:]."""
    oA, oB, oC, oT, oP = tmp, tmp + 9, tmp + 18, tmp + 27, tmp + 36
    p0, p1, p2 = ws[o + 9], ws[o + 10], ws[o + 11]
    # A' = R A Rᵀ, B' = R B Rᵀ, C' = R C Rᵀ (blocks of I at rows/cols 0 and 3)
    for blk in range(3):
        r0 = 0 if blk == 0 else (0 if blk == 1 else 3)
        c0 = 0 if blk == 0 else 3
        ob = oA if blk == 0 else (oB if blk == 1 else oC)
        for r in range(3):        # T = X Rᵀ
            for c in range(3):
                acc = 0.0
                for k in range(3):
                    acc += ws[src + 6 * (r0 + r) + c0 + k] * ws[o + 3 * c + k]
                ws[oT + 3 * r + c] = acc
        for r in range(3):        # X' = R T
            for c in range(3):
                acc = 0.0
                for k in range(3):
                    acc += ws[o + 3 * r + k] * ws[oT + 3 * k + c]
                ws[ob + 3 * r + c] = acc
    # P = p̃ C' (column c = p × column c of C')
    for c in range(3):
        x0, x1, x2 = ws[oC + c], ws[oC + 3 + c], ws[oC + 6 + c]
        ws[oP + c] = p1 * x2 - p2 * x1
        ws[oP + 3 + c] = p2 * x0 - p0 * x2
        ws[oP + 6 + c] = p0 * x1 - p1 * x0
    # M = p̃ B'ᵀ into oT (column c = p × row c of B')
    for c in range(3):
        x0, x1, x2 = ws[oB + 3 * c], ws[oB + 3 * c + 1], ws[oB + 3 * c + 2]
        ws[oT + c] = p1 * x2 - p2 * x1
        ws[oT + 3 + c] = p2 * x0 - p0 * x2
        ws[oT + 6 + c] = p0 * x1 - p1 * x0
    for r in range(3):
        # row r of −p̃C'p̃ = p × row r of P
        x0, x1, x2 = ws[oP + 3 * r], ws[oP + 3 * r + 1], ws[oP + 3 * r + 2]
        q0 = p1 * x2 - p2 * x1
        q1 = p2 * x0 - p0 * x2
        q2 = p0 * x1 - p1 * x0
        for c in range(3):
            qq = q0 if c == 0 else (q1 if c == 1 else q2)
            ws[dst + 6 * r + c] += (ws[oA + 3 * r + c] + ws[oT + 3 * r + c]
                                    + ws[oT + 3 * c + r] + qq)
            tr = ws[oB + 3 * r + c] + ws[oP + 3 * r + c]
            ws[dst + 6 * r + 3 + c] += tr
            ws[dst + 6 * (3 + c) + r] += tr
            ws[dst + 6 * (3 + r) + 3 + c] += ws[oC + 3 * r + c]


@njit(cache=True)
def _aba_core(pf, ws, q, qd, tau, fext, use_fext, out):
    """q̈ into out (n,) from q, q̇, τ (n,) and optional body wrenches fext (n, 6); no checks."""
    n = pf.shape[0] - 1
    oRP, oV, oc, oIA, opA, oU, oD, ou, oA, oIa, oS = _aba_offsets(n)
    g0, g1, g2 = pf[n, 0], pf[n, 1], pf[n, 2]
    s0 = oS          # scratch twist / wrench
    s1 = oS + 6      # scratch
    s2 = oS + 12     # base acceleration (0, −g)

    # ---- pass 1: velocities, bias terms, I^A = M
    for i in range(n):
        par = int(pf[i, PF_PARENT])
        _joint_pose(pf, i, q[i], ws, oRP)
        o = oRP + 12 * i
        v = oV + 6 * i
        if par >= 0:
            _to_child(ws, o, ws, oV + 6 * par, ws, v)
        else:
            for a in range(6):
                ws[v + a] = 0.0
        prism = pf[i, PF_TYPE] != 0.0
        ex, ey, ez = pf[i, PF_AXIS], pf[i, PF_AXIS + 1], pf[i, PF_AXIS + 2]
        qdi = qd[i]
        if prism:
            ws[v + 3] += ex * qdi
            ws[v + 4] += ey * qdi
            ws[v + 5] += ez * qdi
        else:
            ws[v] += ex * qdi
            ws[v + 1] += ey * qdi
            ws[v + 2] += ez * qdi
        w0, w1, w2 = ws[v], ws[v + 1], ws[v + 2]
        l0, l1, l2 = ws[v + 3], ws[v + 4], ws[v + 5]
        # c_i = −q̇ ad_X V: revolute ad_X = diag(ẽ, ẽ); prismatic ad_X (ω, v) = (0, e × ω)
        c = oc + 6 * i
        if prism:
            ws[c] = 0.0
            ws[c + 1] = 0.0
            ws[c + 2] = 0.0
            ws[c + 3] = -qdi * (ey * w2 - ez * w1)
            ws[c + 4] = -qdi * (ez * w0 - ex * w2)
            ws[c + 5] = -qdi * (ex * w1 - ey * w0)
        else:
            ws[c] = -qdi * (ey * w2 - ez * w1)
            ws[c + 1] = -qdi * (ez * w0 - ex * w2)
            ws[c + 2] = -qdi * (ex * w1 - ey * w0)
            ws[c + 3] = -qdi * (ey * l2 - ez * l1)
            ws[c + 4] = -qdi * (ez * l0 - ex * l2)
            ws[c + 5] = -qdi * (ex * l1 - ey * l0)
        # I^A_i = M_i = [[Θ, h̃], [−h̃, m I]] (seed 004 eq. 24)
        ia = oIA + 36 * i
        m = pf[i, PF_MASS]
        h0, h1, h2 = pf[i, PF_H], pf[i, PF_H + 1], pf[i, PF_H + 2]
        for r in range(3):
            for k in range(3):
                ws[ia + 6 * r + k] = pf[i, PF_I + 3 * r + k]
                ws[ia + 6 * (r + 3) + k + 3] = m if r == k else 0.0
        # top-right h̃, bottom-left −h̃ = h̃ᵀ
        ws[ia + 3], ws[ia + 4], ws[ia + 5] = 0.0, -h2, h1
        ws[ia + 9], ws[ia + 10], ws[ia + 11] = h2, 0.0, -h0
        ws[ia + 15], ws[ia + 16], ws[ia + 17] = -h1, h0, 0.0
        ws[ia + 18], ws[ia + 19], ws[ia + 20] = 0.0, h2, -h1
        ws[ia + 24], ws[ia + 25], ws[ia + 26] = -h2, 0.0, h0
        ws[ia + 30], ws[ia + 31], ws[ia + 32] = h1, -h0, 0.0
        # p_i = −ad_Vᵀ (M V) − W^app;  −ad_Vᵀ (μ, f) = (ω × μ + v × f, ω × f)
        for r in range(6):
            acc = 0.0
            for k in range(6):
                acc += ws[ia + 6 * r + k] * ws[v + k]
            ws[s0 + r] = acc
        u0, u1, u2 = ws[s0], ws[s0 + 1], ws[s0 + 2]
        f0, f1, f2 = ws[s0 + 3], ws[s0 + 4], ws[s0 + 5]
        p = opA + 6 * i
        ws[p] = w1 * u2 - w2 * u1 + l1 * f2 - l2 * f1
        ws[p + 1] = w2 * u0 - w0 * u2 + l2 * f0 - l0 * f2
        ws[p + 2] = w0 * u1 - w1 * u0 + l0 * f1 - l1 * f0
        ws[p + 3] = w1 * f2 - w2 * f1
        ws[p + 4] = w2 * f0 - w0 * f2
        ws[p + 5] = w0 * f1 - w1 * f0
        if use_fext:
            for a in range(6):
                ws[p + a] -= fext[i, a]

    # ---- pass 2: articulated inertias and bias wrenches, leaves to root
    for i in range(n - 1, -1, -1):
        par = int(pf[i, PF_PARENT])
        ia = oIA + 36 * i
        p = opA + 6 * i
        U = oU + 6 * i
        col = 3 if pf[i, PF_TYPE] != 0.0 else 0
        ex, ey, ez = pf[i, PF_AXIS], pf[i, PF_AXIS + 1], pf[i, PF_AXIS + 2]
        # U = I^A X (X has its only non-zero block in columns col..col+2)
        for r in range(6):
            ws[U + r] = (ws[ia + 6 * r + col] * ex + ws[ia + 6 * r + col + 1] * ey
                         + ws[ia + 6 * r + col + 2] * ez)
        D = ws[U + col] * ex + ws[U + col + 1] * ey + ws[U + col + 2] * ez
        ws[oD + i] = D
        uu = tau[i] - (ws[p + col] * ex + ws[p + col + 1] * ey + ws[p + col + 2] * ez)
        ws[ou + i] = uu
        if par < 0:
            continue
        # I^a = I^A − U Uᵀ / D
        invD = 1.0 / D
        for r in range(6):
            for k in range(6):
                ws[oIa + 6 * r + k] = ws[ia + 6 * r + k] - ws[U + r] * ws[U + k] * invD
        # p^a = p^A + I^a c + U u / D  (into s1)
        c = oc + 6 * i
        for r in range(6):
            acc = ws[p + r] + ws[U + r] * uu * invD
            for k in range(6):
                acc += ws[oIa + 6 * r + k] * ws[c + k]
            ws[s1 + r] = acc
        o = oRP + 12 * i
        _add_to_parent(ws, o, ws, s1, ws, opA + 6 * par)
        # I^A_λ += T_iᵀ I^a T_i (block form, see _congruence_add)
        _congruence_add(ws, o, oIa, oIA + 36 * par, oS + 18)

    # ---- pass 3: accelerations, root to leaves
    for i in range(n):
        par = int(pf[i, PF_PARENT])
        o = oRP + 12 * i
        A = oA + 6 * i
        if par >= 0:
            _to_child(ws, o, ws, oA + 6 * par, ws, A)
        else:
            ws[s2], ws[s2 + 1], ws[s2 + 2] = 0.0, 0.0, 0.0
            ws[s2 + 3], ws[s2 + 4], ws[s2 + 5] = -g0, -g1, -g2
            _to_child(ws, o, ws, s2, ws, A)
        c = oc + 6 * i
        U = oU + 6 * i
        acc = ws[ou + i]
        for a in range(6):
            ws[A + a] += ws[c + a]
            acc -= ws[U + a] * ws[A + a]
        qddi = acc / ws[oD + i]
        out[i] = qddi
        col = 3 if pf[i, PF_TYPE] != 0.0 else 0
        ws[A + col] += pf[i, PF_AXIS] * qddi
        ws[A + col + 1] += pf[i, PF_AXIS + 1] * qddi
        ws[A + col + 2] += pf[i, PF_AXIS + 2] * qddi


# ---------------------------------------------------------------------------------------------
# Public kernels (status codes as in _kernels)
# ---------------------------------------------------------------------------------------------
@njit([_sig(False), _sig(True)], cache=True)
def aba(pf, ws, q, qd, tau, out):
    """q̈ = FD(q, q̇, τ): q, qd, tau, out of shape (n,)."""
    n = pf.shape[0] - 1
    st = check_states(n, q, qd, tau, out)
    if st:
        return st
    _aba_core(pf, ws, q, qd, tau, pf, False, out)
    return 0


@njit([_sig(False, True), _sig(True, True)], cache=True)
def aba_fext(pf, ws, q, qd, tau, fext, out):
    """q̈ = FD(q, q̇, τ, W^app) with body wrenches fext (n, 6) in body frames (as rnea_fext)."""
    n = pf.shape[0] - 1
    st = check_states_fext(n, q, qd, tau, fext, out)
    if st:
        return st
    _aba_core(pf, ws, q, qd, tau, fext, True, out)
    return 0


@njit(cache=True)
def aba_batch(pf, ws, q, qd, tau, out):
    """q̈ for N states in one compiled loop: q, qd, tau, out of shape (N, n)."""
    n = pf.shape[0] - 1
    N = q.shape[0]
    st = check_batch(n, q, qd, tau, out)
    if st:
        return st
    for s in range(N):
        _aba_core(pf, ws, q[s], qd[s], tau[s], pf, False, out[s])
    return 0


# ---------------------------------------------------------------------------------------------
# One RK4 step of the closed-loop plant (used by mbs_dynamics.sim), one compiled call per step
# ---------------------------------------------------------------------------------------------
@njit(cache=True)
def rk4_rigid(pf, ws, x, tau, fext, use_fext, dt, stages, out):
    """One classical RK4 step of the rigid plant ẋ = (q̇, FD(q, q̇, τ)), τ held over the step.

    Args:
        x: (2, n) rows q, q̇ at the start of the step.
        tau: (n,) joint torque, constant over the step (zero-order hold).
        fext, use_fext: optional body wrenches (n, 6), constant over the step.
        dt: step [s].
        stages: (5, 2, n) scratch: stage slopes k1..k4 and the stage state.
        out: (2, n) the state at the end of the step (may not alias x).
    Returns:
        0, or 2 if an acceleration is not finite.
    """
    n = x.shape[1]
    y = stages[4]
    wts = (0.0, 0.5, 0.5, 1.0)
    for s in range(4):
        # stage state y = x + wts[s] dt k_{s−1}
        for i in range(n):
            if s == 0:
                y[0, i] = x[0, i]
                y[1, i] = x[1, i]
            else:
                y[0, i] = x[0, i] + wts[s] * dt * stages[s - 1, 0, i]
                y[1, i] = x[1, i] + wts[s] * dt * stages[s - 1, 1, i]
        for i in range(n):
            stages[s, 0, i] = y[1, i]
        _aba_core(pf, ws, y[0], y[1], tau, fext, use_fext, stages[s, 1])
    for i in range(n):
        for r in range(2):
            out[r, i] = x[r, i] + dt / 6.0 * (stages[0, r, i] + 2.0 * stages[1, r, i]
                                              + 2.0 * stages[2, r, i] + stages[3, r, i])
    if _bad(out):
        return 2
    return 0


@njit(cache=True)
def rk4_sea(pf, ws, x, tau_m, K, B, Dm, fext, use_fext, dt, stages, out):
    """One classical RK4 step of the series-elastic plant (reduced flexible-joint model):

        M(q) q̈ + c(q, q̇) + g(q) = τ_e,   τ_e = K (θ − q),   B θ̈ + D_m θ̇ + τ_e = τ_m

    (shared/MATH.md, "Flatness feedforward"), motor torque τ_m held over the step.

    Args:
        x: (4, n) rows q, q̇, θ, θ̇ at the start of the step.
        tau_m: (n,) motor torque [N m]; K, B, Dm: (n,) stiffness, motor inertia, motor damping.
        stages: (5, 4, n) scratch; out: (4, n) the state at the end of the step.
    Returns:
        0, or 2 if the state is not finite.
    """
    n = x.shape[1]
    y = stages[4]
    wts = (0.0, 0.5, 0.5, 1.0)
    for s in range(4):
        for i in range(n):
            for r in range(4):
                if s == 0:
                    y[r, i] = x[r, i]
                else:
                    y[r, i] = x[r, i] + wts[s] * dt * stages[s - 1, r, i]
        k = stages[s]
        for i in range(n):
            te = K[i] * (y[2, i] - y[0, i])   # spring torque on the link
            k[0, i] = y[1, i]
            k[2, i] = y[3, i]
            k[3, i] = (tau_m[i] - Dm[i] * y[3, i] - te) / B[i]
            k[1, i] = te                       # link torque, replaced by q̈ below
        # the link torque sits in k[1]; copy it out before the ABA overwrites that row
        for i in range(n):
            y[2, i] = k[1, i]   # y[2] (θ of the stage) is no longer needed
        _aba_core(pf, ws, y[0], y[1], y[2], fext, use_fext, k[1])
    for i in range(n):
        for r in range(4):
            out[r, i] = x[r, i] + dt / 6.0 * (stages[0, r, i] + 2.0 * stages[1, r, i]
                                              + 2.0 * stages[2, r, i] + stages[3, r, i])
    if _bad(out):
        return 2
    return 0


# ---------------------------------------------------------------------------------------------
# Python entry (validation once, then one compiled call)
# ---------------------------------------------------------------------------------------------
def _names_raise(st, names, arrays, desc):
    a, kind = divmod(int(st), 10)
    name = names[a - 1]
    if kind == 1:
        raise ValueError(f"{name} has shape {arrays[a - 1].shape}, expected {desc}")
    raise ValueError(f"{name} contains NaN or inf")


def _f64(x, name):
    if type(x) is np.ndarray and x.dtype == np.float64 and x.flags.c_contiguous:
        return x
    try:
        return np.ascontiguousarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be an array of numbers") from None


def forward_dynamics(robot_or_model, ws, q, qd, tau, fext_body=None, out=None):
    """Joint accelerations q̈ = M(q)⁻¹ (τ + Q_ext − C(q, q̇) q̇ − Q_grav(q)) by the ABA (O(n)).

    Args:
        robot_or_model: a :class:`~mbs_dynamics.Robot` or its :class:`~mbs_dynamics.model.Model`.
        ws: a workspace from :func:`make_aba_workspace` (``None``: a new one, allocated).
        q, qd, tau: (n,) positions, velocities, joint forces; or (N, n) for a batch.
        fext_body: optional (n, 6) external wrenches ``(m, f)`` acting on each body, in the body
            frame (as :func:`mbs_dynamics._kernels.rnea_fext`); not with a batch.
        out: optional (n,) / (N, n) float64 array to fill.
    Returns:
        q̈, shape (n,) or (N, n) [rad/s² or m/s²].
    Raises:
        ValueError: naming the argument with a wrong shape or NaN/inf.
    """
    model = getattr(robot_or_model, "model", robot_or_model)
    pf = model.pf
    n = model.n
    if ws is None:
        ws = make_aba_workspace(n)
    elif ws.shape[0] != aba_layout(n)["size"]:
        raise ValueError(f"ws is not an ABA workspace for n = {n} (use make_aba_workspace)")
    q = _f64(q, "q")
    qd = _f64(qd, "qd")
    tau = _f64(tau, "tau")
    batch = q.ndim == 2
    desc = f"({q.shape[0]}, {n})" if batch else f"({n},)"
    for a, name in ((q, "q"), (qd, "qd"), (tau, "tau")):
        if a.ndim != q.ndim or q.ndim not in (1, 2):
            raise ValueError(f"{name} has shape {a.shape}, expected {desc}")
    if out is None:
        out = np.empty(q.shape)
    if batch:
        if fext_body is not None:
            raise ValueError("fext_body is not supported with batch inputs")
        st = aba_batch(pf, ws, q, qd, tau, out)
        names, arrs = ("q", "qd", "tau", "out"), (q, qd, tau, out)
    elif fext_body is None:
        st = aba(pf, ws, q, qd, tau, out)
        names, arrs = ("q", "qd", "tau", "out"), (q, qd, tau, out)
    else:
        fe = _f64(fext_body, "fext_body")
        if fe.ndim != 2:
            raise ValueError(f"fext_body has shape {fe.shape}, expected ({n}, 6)")
        st = aba_fext(pf, ws, q, qd, tau, fe, out)
        names, arrs = ("q", "qd", "tau", "fext_body", "out"), (q, qd, tau, fe, out)
    if st:
        _names_raise(st, names, arrs, desc if "fext" not in names[min(st // 10, 4) - 1]
                     else f"({n}, 6)")
    return out
