# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Forward dynamics q̈ = FD(q, q̇, τ) by the O(n) articulated-body algorithm (ABA), compiled.

Featherstone's ABA (*Rigid Body Dynamics Algorithms*, 2008, §7.3, Table 7.1) in the body-fixed
screw form of the inverse dynamics (seed 000 eq. 67–68), with the body equation of motion of the
RNEA ``W_i = M_i V̇_i − ad_{V_i}ᵀ M_i V_i − W_i^app + Σ_c T_cᵀ W_c`` and ``Q_i = X_iᵀ W_i``:

1. forward: ``V_i = T_i V_λ + X_i q̇_i``, ``c_i = −q̇_i ad_{X_i} V_i``,
   ``p_i = −ad_{V_i}ᵀ M_i V_i − W_i^app``, ``I^A_i = M_i``;
2. backward: ``U_i = I^A_i X_i``, ``D_i = X_iᵀ U_i``, ``u_i = τ_i − X_iᵀ p^A_i``,
   ``I^a = I^A_i − U_i U_iᵀ / D_i``, ``p^a = p^A_i + I^a c_i + U_i u_i / D_i``,
   ``I^A_λ += T_iᵀ I^a T_i``, ``p^A_λ += T_iᵀ p^a``;
3. forward, with the base acceleration ``(0, −g)`` (gravity): ``A'_i = T_i V̇_λ + c_i``,
   ``q̈_i = (u_i − U_iᵀ A'_i) / D_i``, ``V̇_i = A'_i + X_i q̈_i``.

A floating base (body 0, twist ν) closes the backward pass with its 6×6 articulated inertia:
``I^A_0 (ν̇ + γ) + p^A_0 = τ_0`` (the applied base wrench), solved by Cholesky; ``γ`` is gravity in
the base frame. :func:`rk4_rigid` and :func:`rk4_sea` run one classical RK4 step of the fixed-base
plant (four ABA evaluations) in one call, for :mod:`mbs_dynamics.sim`.
"""
import numpy as np
cimport numpy as cnp
from libc.math cimport isfinite

from mbs_dynamics.kernels._mat6 cimport chol6, chol6_solve, inertia6
from mbs_dynamics.kernels._data cimport (finite_result, FREE, REVOLUTE, Data, KModel, KWork, alias3, claim,
                                 unclaim, as_out,
                                 fresh_if_alias, load_fx, out_vec, take_states)
from mbs_dynamics.kernels._spatial cimport (ad_X, add_adT, add_to_parent, add_X, axpy6, base_gravity,
                                    copy6, inertia_times, joint_pose, load_jet, quat_pose, to_child,
                                    zero6)

cnp.import_array()


cdef inline void congruence_add(const double* T, const double* I, double* dst, double* tmp) noexcept nogil:
    """dst += T_iᵀ I T_i for the symmetric 6×6 I (row-major), T_i = Ad_{C_{i,λ}}, C_{λ,i} = (R, p).

    T_i = diag(Rᵀ, Rᵀ) [[1, 0], [−p̃, 1]]; with I' = diag(R, R) I diag(Rᵀ, Rᵀ) = [[A', B'], [B'ᵀ, C']]:
    T_iᵀ I T_i = [[A' + N + Nᵀ − p̃C'p̃, B' + p̃C'], [(B' + p̃C')ᵀ, C']], N = p̃B'ᵀ. 45 floats of tmp."""
    cdef double* oA = tmp
    cdef double* oB = tmp + 9
    cdef double* oC = tmp + 18
    cdef double* oT = tmp + 27
    cdef double* oP = tmp + 36
    cdef double p0 = T[9], p1 = T[10], p2 = T[11], acc, x0, x1, x2, q0, q1, q2, qq, tr
    cdef int blk, r0, c0, r, c, k
    cdef double* ob
    for blk in range(3):
        r0 = 0 if blk < 2 else 3
        c0 = 0 if blk == 0 else 3
        ob = oA if blk == 0 else (oB if blk == 1 else oC)
        for r in range(3):        # X Rᵀ
            for c in range(3):
                acc = 0.0
                for k in range(3):
                    acc += I[6 * (r0 + r) + c0 + k] * T[3 * c + k]
                oT[3 * r + c] = acc
        for r in range(3):        # R (X Rᵀ)
            for c in range(3):
                acc = 0.0
                for k in range(3):
                    acc += T[3 * r + k] * oT[3 * k + c]
                ob[3 * r + c] = acc
    for c in range(3):            # P = p̃ C'
        x0, x1, x2 = oC[c], oC[3 + c], oC[6 + c]
        oP[c] = p1 * x2 - p2 * x1
        oP[3 + c] = p2 * x0 - p0 * x2
        oP[6 + c] = p0 * x1 - p1 * x0
    for c in range(3):            # N = p̃ B'ᵀ
        x0, x1, x2 = oB[3 * c], oB[3 * c + 1], oB[3 * c + 2]
        oT[c] = p1 * x2 - p2 * x1
        oT[3 + c] = p2 * x0 - p0 * x2
        oT[6 + c] = p0 * x1 - p1 * x0
    for r in range(3):
        x0, x1, x2 = oP[3 * r], oP[3 * r + 1], oP[3 * r + 2]   # row r of −p̃C'p̃ = p × row r of P
        q0 = p1 * x2 - p2 * x1
        q1 = p2 * x0 - p0 * x2
        q2 = p0 * x1 - p1 * x0
        for c in range(3):
            qq = q0 if c == 0 else (q1 if c == 1 else q2)
            dst[6 * r + c] += oA[3 * r + c] + oT[3 * r + c] + oT[3 * c + r] + qq
            tr = oB[3 * r + c] + oP[3 * r + c]
            dst[6 * r + 3 + c] += tr
            dst[6 * (3 + c) + r] += tr
            dst[6 * (3 + r) + 3 + c] += oC[3 * r + c]


cdef int aba_core(const KModel* m, KWork* w, const double* tau, bint use_fx,
                  double* out) noexcept nogil:
    """q̈ (nv,) into out from the state loaded in ``w`` (qj rows 0–1, ν row 0, base pose) and
    τ (nv,); 1 if an articulated inertia is singular (a movable subtree without mass)."""
    cdef int nb = m.nb, fb = m.fb, i, par, r, k, col
    cdef double* T
    cdef double* V
    cdef double* c
    cdef double* ia
    cdef double* p
    cdef double* U
    cdef double* A
    cdef double* s0 = w.S
    cdef double* s1 = w.S + 6
    cdef double* Ia = w.S + 36
    cdef double* tmp = w.S + 72
    cdef double qdi, D, uu, invD, acc, qddi
    cdef const double* e
    # ---- pass 1: velocities, bias terms, I^A = M
    for i in range(nb):
        par = m.parent[i]
        T = w.T + 12 * i
        V = w.V + 6 * i
        c = w.c + 6 * i
        if m.jtype[i] == FREE:
            copy6(w.nu, V)
            zero6(c)
        else:
            joint_pose(m, i, w.qj[i], T)
            if par >= 0:
                to_child(T, w.V + 6 * par, V)
            else:
                zero6(V)
            qdi = w.qj[nb + i]
            add_X(m, i, qdi, V)
            ad_X(m, i, V, c, False)       # c_i = −q̇ ad_X V
            for r in range(6):
                c[r] = -qdi * c[r]
        # I^A_i = M_i = [[Θ, h̃], [−h̃, m I]] (seed 004 eq. 24)
        inertia6(m.mass[i], m.h + 3 * i, m.Th + 9 * i, w.IA + 36 * i)
        # p_i = −ad_Vᵀ (M V) − W^app
        p = w.pA + 6 * i
        inertia_times(m, i, V, s0)
        zero6(p)
        add_adT(V, s0, p, 1.0)
        if use_fx:
            axpy6(-1.0, w.fx + 6 * i, p)
    # ---- pass 2: articulated inertias and bias wrenches, leaves to root
    for i in range(nb - 1, fb - 1, -1):
        par = m.parent[i]
        ia = w.IA + 36 * i
        p = w.pA + 6 * i
        U = w.U + 6 * i
        e = m.axis + 3 * i
        col = 0 if m.jtype[i] == REVOLUTE else 3
        for r in range(6):
            U[r] = ia[6 * r + col] * e[0] + ia[6 * r + col + 1] * e[1] + ia[6 * r + col + 2] * e[2]
        D = U[col] * e[0] + U[col + 1] * e[1] + U[col + 2] * e[2]
        if not (D > 0.0):
            return 1
        w.D[i] = D
        uu = tau[i + 5 * fb] - (p[col] * e[0] + p[col + 1] * e[1] + p[col + 2] * e[2])
        w.u[i] = uu
        if par < 0:
            continue
        invD = 1.0 / D
        for r in range(6):
            for k in range(6):
                Ia[6 * r + k] = ia[6 * r + k] - U[r] * U[k] * invD
        c = w.c + 6 * i
        for r in range(6):
            acc = p[r] + U[r] * uu * invD
            for k in range(6):
                acc += Ia[6 * r + k] * c[k]
            s1[r] = acc
        T = w.T + 12 * i
        add_to_parent(T, s1, w.pA + 6 * par)
        congruence_add(T, Ia, w.IA + 36 * par, tmp)
    # ---- the floating base: I^A_0 (ν̇ + γ) = τ_0 − p^A_0
    if fb:
        A = w.A
        A[0] = tau[3] - w.pA[0]
        A[1] = tau[4] - w.pA[1]
        A[2] = tau[5] - w.pA[2]
        A[3] = tau[0] - w.pA[3]
        A[4] = tau[1] - w.pA[4]
        A[5] = tau[2] - w.pA[5]
        if chol6(w.IA, tmp):
            return 1
        chol6_solve(tmp, A)
        base_gravity(m, w.T, s0)
        out[0] = A[3] - s0[3]
        out[1] = A[4] - s0[4]
        out[2] = A[5] - s0[5]
        out[3] = A[0] - s0[0]
        out[4] = A[1] - s0[1]
        out[5] = A[2] - s0[2]
    # ---- pass 3: accelerations, root to leaves
    for i in range(fb, nb):
        par = m.parent[i]
        T = w.T + 12 * i
        A = w.A + 6 * i
        if par >= 0:
            to_child(T, w.A + 6 * par, A)
        else:
            base_gravity(m, T, A)
        c = w.c + 6 * i
        U = w.U + 6 * i
        acc = w.u[i]
        for r in range(6):
            A[r] += c[r]
            acc -= U[r] * A[r]
        qddi = acc / w.D[i]
        out[i + 5 * fb] = qddi
        add_X(m, i, qddi, A)
    return 0


cdef inline void load_state(const KModel* m, KWork* w, const double* q, const double* v) noexcept nogil:
    load_jet(m, w, q, v, 1)


cdef int bad(const double* x, Py_ssize_t N) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(N):
        if not isfinite(x[i]):
            return 1
    return 0


def _singular():
    raise ValueError("forward dynamics is singular: a movable joint moves no mass (check the "
                     "URDF's inertials), or the state is not finite")


cdef object _forward_dynamics(Data d, q, qd, tau, fx, out):
    """q̈ (nv,) = FD(q, v, τ) with optional body wrenches fx (nb, 6)."""
    cdef KModel* m = &d.m
    q, qd, tau = take_states(m, q, qd, tau, "qd", "tau", False)
    out = out_vec(out, m.nv)
    cdef KWork* w = &d.w
    cdef bint use_fx = fx is not None
    if use_fx:
        load_fx(d, fx, 1)
    load_state(m, w, <double*> cnp.PyArray_DATA(q), <double*> cnp.PyArray_DATA(qd))
    res = alias3(out, q, qd, tau)
    if aba_core(m, w, <double*> cnp.PyArray_DATA(tau), use_fx, <double*> cnp.PyArray_DATA(res)):
        _singular()
    if res is not out:
        out[...] = res
    return out


cdef object _forward_dynamics_batch(Data d, q, qd, tau, out):
    """q̈ (N, nv) for N states."""
    cdef KModel* m = &d.m
    q, qd, tau = take_states(m, q, qd, tau, "qd", "tau", True)
    cdef Py_ssize_t N = q.shape[0], s
    out = as_out(out, "out", (N, m.nv))
    res = fresh_if_alias(out, (q, qd, tau))
    cdef double* pq = <double*> cnp.PyArray_DATA(q)
    cdef double* pv = <double*> cnp.PyArray_DATA(qd)
    cdef double* pt = <double*> cnp.PyArray_DATA(tau)
    cdef double* po = <double*> cnp.PyArray_DATA(res)
    cdef int st = 0
    with nogil:
        for s in range(N):
            load_state(m, &d.w, pq + s * m.nq, pv + s * m.nv)
            if aba_core(m, &d.w, pt + s * m.nv, False, po + s * m.nv):
                st = 1
                break
    if st:
        _singular()
    if res is not out:
        out[...] = res
    return out


# ---------------------------------------------------------------------------------------------
# One RK4 step of the fixed-base closed-loop plant (mbs_dynamics.sim), one call per step
# ---------------------------------------------------------------------------------------------
cdef int rk4_rigid_step(const KModel* m, KWork* w, const double* x, const double* tau, bint use_fx,
                        double h, double* st, double* out) noexcept nogil:
    """ẋ = (q̇, FD(q, q̇, τ)), τ held; x, out (2, n); st (5, 2, n) scratch (k1..k4, stage)."""
    cdef int n = m.n, s, i, r
    cdef double* y = st + 8 * n
    cdef double wts[4]
    wts[0], wts[1], wts[2], wts[3] = 0.0, 0.5, 0.5, 1.0
    for s in range(4):
        for i in range(2 * n):
            y[i] = x[i] if s == 0 else x[i] + wts[s] * h * st[(s - 1) * 2 * n + i]
        for i in range(n):
            st[s * 2 * n + i] = y[n + i]
        load_state(m, w, y, y + n)
        if aba_core(m, w, tau, use_fx, st + s * 2 * n + n):
            return 2
    for i in range(2 * n):
        out[i] = x[i] + h / 6.0 * (st[i] + 2.0 * st[2 * n + i] + 2.0 * st[4 * n + i] + st[6 * n + i])
    return 2 if bad(out, 2 * n) else 0


cdef int rk4_sea_step(const KModel* m, KWork* w, const double* x, const double* tau_m,
                      const double* K, const double* B, const double* Dm, bint use_fx, double h,
                      double* st, double* out) noexcept nogil:
    """Series-elastic plant (doc/math.md): M q̈ + c + g = τ_e = K (θ − q), B θ̈ + D_m θ̇ + τ_e = τ_m;
    x, out (4, n) rows q, q̇, θ, θ̇; st (5, 4, n) scratch."""
    cdef int n = m.n, s, i
    cdef double* y = st + 16 * n
    cdef double* k
    cdef double te
    cdef double wts[4]
    wts[0], wts[1], wts[2], wts[3] = 0.0, 0.5, 0.5, 1.0
    for s in range(4):
        for i in range(4 * n):
            y[i] = x[i] if s == 0 else x[i] + wts[s] * h * st[(s - 1) * 4 * n + i]
        k = st + s * 4 * n
        for i in range(n):
            te = K[i] * (y[2 * n + i] - y[i])
            k[i] = y[n + i]
            k[2 * n + i] = y[3 * n + i]
            k[3 * n + i] = (tau_m[i] - Dm[i] * y[3 * n + i] - te) / B[i]
            y[2 * n + i] = te            # θ of the stage is no longer needed: the link torque
        load_state(m, w, y, y + n)
        if aba_core(m, w, y + 2 * n, use_fx, k + n):
            return 2
    for i in range(4 * n):
        out[i] = x[i] + h / 6.0 * (st[i] + 2.0 * st[4 * n + i] + 2.0 * st[8 * n + i] + st[12 * n + i])
    return 2 if bad(out, 4 * n) else 0


cdef object _rk4_rigid(Data d, double[:, ::1] x, double[::1] tau, fx, double h,
                       double[:, :, ::1] stages, double[:, ::1] out):
    """One RK4 step of the rigid fixed-base plant; returns 0, or 2 if the state diverged.
    Arguments are trusted (the simulator made them): x, out (2, n), stages (5, 2, n)."""
    cdef bint use_fx = fx is not None
    if use_fx:
        load_fx(d, fx, 1)
    return rk4_rigid_step(&d.m, &d.w, &x[0, 0], &tau[0], use_fx, h, &stages[0, 0, 0], &out[0, 0])


cdef object _rk4_sea(Data d, double[:, ::1] x, double[::1] tau_m, double[::1] K, double[::1] B,
                     double[::1] Dm, fx, double h, double[:, :, ::1] stages, double[:, ::1] out):
    """One RK4 step of the series-elastic fixed-base plant (see rk4_sea_step)."""
    cdef bint use_fx = fx is not None
    if use_fx:
        load_fx(d, fx, 1)
    return rk4_sea_step(&d.m, &d.w, &x[0, 0], &tau_m[0], &K[0], &B[0], &Dm[0], use_fx, h,
                        &stages[0, 0, 0], &out[0, 0])


# ---------------------------------------------------------------------------------------------
# the public entries: each takes the Data's owner flag (one thread at a time) around its kernel
# ---------------------------------------------------------------------------------------------

def forward_dynamics(Data d, q, qd, tau, fx, out):
    """q̈ (nv,) = FD(q, v, τ) with optional body wrenches fx (nb, 6)."""
    claim(d)
    try:
        return finite_result(_forward_dynamics(d, q, qd, tau, fx, out), "forward_dynamics")
    finally:
        unclaim(d)


def forward_dynamics_batch(Data d, q, qd, tau, out):
    """q̈ (N, nv) for N states."""
    claim(d)
    try:
        return finite_result(_forward_dynamics_batch(d, q, qd, tau, out), "forward_dynamics_batch")
    finally:
        unclaim(d)


def rk4_rigid(Data d, double[:, ::1] x, double[::1] tau, fx, double h, double[:, :, ::1] stages,
              double[:, ::1] out):
    """One RK4 step of the rigid fixed-base plant; returns 0, or 2 if the state diverged.
    Arguments are trusted (the simulator made them): x, out (2, n), stages (5, 2, n)."""
    claim(d)
    try:
        return _rk4_rigid(d, x, tau, fx, h, stages, out)
    finally:
        unclaim(d)


def rk4_sea(Data d, double[:, ::1] x, double[::1] tau_m, double[::1] K, double[::1] B,
            double[::1] Dm, fx, double h, double[:, :, ::1] stages, double[:, ::1] out):
    """One RK4 step of the series-elastic fixed-base plant (see rk4_sea_step)."""
    claim(d)
    try:
        return _rk4_sea(d, x, tau_m, K, B, Dm, fx, h, stages, out)
    finally:
        unclaim(d)
