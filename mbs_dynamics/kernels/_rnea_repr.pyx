# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The spatial and the hybrid recursive Newton–Euler algorithms (seed 000 §4.2, §4.3), compiled,
beside the body-fixed one of :mod:`mbs_dynamics.kernels._rnea` (§4.1). All three compute the same
τ = ID(q, q̇, q̈, W^app); they differ in where twists and wrenches are measured and resolved.

Spatial (eq. 69–72): every quantity at the world origin, resolved in the world frame.
    C_i = C_λ B_i exp(X_i q_i),  J_i^s = Ad_{C_i} X_i                                   (71a–b)
    V_i^s = V_λ^s + J_i^s q̇_i,   V̇_i^s = V̇_λ^s + J_i^s q̈_i + ad_{V_λ^s} V_i^s        (71c–d)
    M_i^s = Ad_{C_i}^{−T} M_i^b Ad_{C_i}^{−1}                                           (72a)
    W_i^s = Σ_children W^s + M_i^s V̇_i^s − ad_{V_i^s}ᵀ M_i^s V_i^s − W_i^{s,app}      (72b)
    Q_i = J_i^{sT} W_i^s                                                              (72c)
No twist or wrench is transformed between bodies; the inertia is transformed instead (72a), as
(m, h^s = m p + R h, Θ_O = R Θ Rᵀ − m p̃p̃ − p̃h̃ − h̃p̃) with h̃ of R h.

Hybrid (eq. 73–77): twists at the body origin r_i, resolved in the world frame, V^h = (ω^s, ṙ).
    ⁰X_i = Ad_{R_i} X_i                                                                   (76b)
    V_i^h = Ad_{r_{i,λ}} V_λ^h + ⁰X_i q̇_i                                                (76c)
    V̇_i^h = Ad_{r_{i,λ}} V̇_λ^h + ad_{ṙ_{i,λ}} V_λ^h + ad_{ω_i^s} ⁰X_i q̇_i + ⁰X_i q̈_i    (76d)
    M_i^h = Ad_{R_i}^{−T} M_i^b Ad_{R_i}^{−1}                                           (77a)
    W_i^h = Σ_children Ad_{d_{c,i}}ᵀ W_c^h + M_i^h V̇_i^h + (ω × Θ^h ω, ω × (ω × h^h)) − W^{h,app}
    Q_i = ⁰X_iᵀ W_i^h                                                                    (77b–c)
with Ad_{r_{i,λ}} (ω, v) = (ω, v + ω × (r_i − r_λ)) and ad_{ṙ_{i,λ}} V_λ = (0, (ṙ_λ − ṙ_i) × ω_λ).

Gravity is the world's acceleration (0, −g) in both; a floating base (body 0) starts from its
body twist ν: V_0^s = Ad_{C_0} ν, V̇_0^s = Ad_{C_0} ν̇ + (0, −g); V_0^h = Ad_{R_0} ν,
V̇_0^h = Ad_{R_0}(ν̇ + (0, ω × v)) + (0, −g), and its wrench is returned in its body frame.
Applied wrenches arrive in body frames and are mapped with Ad^{−T}.

Workspace: the world poses C_i (12) and the joint screws J_i^s / ⁰X_i (6) live in the first 18
entries of each body's row of ``IA`` (the ABA's, unused here), twists in ``V[0]``, accelerations
in ``V[1]``, wrenches in ``W[0]``. No allocation.
"""
import numpy as np
cimport numpy as cnp

from mbs_dynamics.kernels._data cimport (finite_result, FREE, REVOLUTE, Data, KModel, KWork, alias3, as_out,
                                         claim, unclaim,
                                         fresh_if_alias, load_fx, out_vec, take_states)
from mbs_dynamics.kernels._spatial cimport (ad_V, add_adT, axpy6, compose, copy6, joint_pose,
                                            load_jet, load_rows, rot, screw, zero6)

cnp.import_array()

cdef enum:
    SPATIAL = 1
    HYBRID = 2


cdef inline void copy_pose(const double* a, double* b) noexcept nogil:
    cdef int k
    for k in range(12):
        b[k] = a[k]


cdef inline void rotT(const double* R, const double* x, double* y) noexcept nogil:
    """y = Rᵀ x (y may not alias x)."""
    y[0] = R[0] * x[0] + R[3] * x[1] + R[6] * x[2]
    y[1] = R[1] * x[0] + R[4] * x[1] + R[7] * x[2]
    y[2] = R[2] * x[0] + R[5] * x[1] + R[8] * x[2]


cdef inline void cross_add(const double* a, const double* b, double* y, double s) noexcept nogil:
    """y += s a × b."""
    y[0] += s * (a[1] * b[2] - a[2] * b[1])
    y[1] += s * (a[2] * b[0] - a[0] * b[2])
    y[2] += s * (a[0] * b[1] - a[1] * b[0])


cdef inline void world_inertia(const KModel* m, int i, const double* C, bint at_origin,
                               double* I) noexcept nogil:
    """The body inertia with world-frame orientation, I = (Θ (9), h (3)): about the body origin
    (hybrid, eq. 77a: Θ = R Θ_b Rᵀ, h = R h_b) or about the world origin (spatial, eq. 72a:
    h = m p + R h_b, Θ = R Θ_b Rᵀ − m p̃p̃ − p̃h̃_r − h̃_r p̃)."""
    cdef const double* R = C
    cdef const double* Th = m.Th + 9 * i
    cdef double RT[9]
    cdef double hr[3]
    cdef double ms = m.mass[i], p0, p1, p2, pp, ph
    cdef int r, c
    for r in range(3):
        for c in range(3):
            RT[3 * r + c] = R[3 * r] * Th[c] + R[3 * r + 1] * Th[3 + c] + R[3 * r + 2] * Th[6 + c]
    for r in range(3):
        for c in range(r, 3):
            I[3 * r + c] = (RT[3 * r] * R[3 * c] + RT[3 * r + 1] * R[3 * c + 1]
                            + RT[3 * r + 2] * R[3 * c + 2])
            I[3 * c + r] = I[3 * r + c]
    rot(R, m.h + 3 * i, hr)
    if not at_origin:
        I[9], I[10], I[11] = hr[0], hr[1], hr[2]
        return
    p0, p1, p2 = C[9], C[10], C[11]
    # −m p̃p̃ = m (|p|² I − p pᵀ);  −(p̃h̃ + h̃p̃) = 2 (p·h) I − p hᵀ − h pᵀ
    pp = p0 * p0 + p1 * p1 + p2 * p2
    ph = p0 * hr[0] + p1 * hr[1] + p2 * hr[2]
    for r in range(3):
        I[4 * r] += ms * pp + 2.0 * ph
    for r in range(3):
        for c in range(3):
            I[3 * r + c] -= ms * C[9 + r] * C[9 + c] + C[9 + r] * hr[c] + hr[r] * C[9 + c]
    I[9] = ms * p0 + hr[0]
    I[10] = ms * p1 + hr[1]
    I[11] = ms * p2 + hr[2]


cdef inline void inertia_apply(double ms, const double* I, const double* s,
                               double* d) noexcept nogil:
    """d = M s, M = [[Θ, h̃], [−h̃, m I]] with I = (Θ, h)."""
    cdef double w0 = s[0], w1 = s[1], w2 = s[2], v0 = s[3], v1 = s[4], v2 = s[5]
    cdef double h0 = I[9], h1 = I[10], h2 = I[11]
    d[0] = I[0] * w0 + I[1] * w1 + I[2] * w2 + (h1 * v2 - h2 * v1)
    d[1] = I[3] * w0 + I[4] * w1 + I[5] * w2 + (h2 * v0 - h0 * v2)
    d[2] = I[6] * w0 + I[7] * w1 + I[8] * w2 + (h0 * v1 - h1 * v0)
    d[3] = ms * v0 - (h1 * w2 - h2 * w1)
    d[4] = ms * v1 - (h2 * w0 - h0 * w2)
    d[5] = ms * v2 - (h0 * w1 - h1 * w0)


cdef inline void joint_screw(const KModel* m, int i, const double* C, bint spatial,
                             double* J) noexcept nogil:
    """J = Ad_{C_i} X_i (spatial, 71b) or Ad_{R_i} X_i (hybrid, 76b: the rotation alone, so a
    revolute joint's moment part p × R a is dropped)."""
    cdef bint revolute = m.jtype[i] == REVOLUTE
    screw(C, m.axis + 3 * i, revolute, J)
    if revolute and not spatial:
        J[3] = 0.0
        J[4] = 0.0
        J[5] = 0.0


cdef inline void base_twist(const double* C, const double* nu, bint spatial,
                            double* V) noexcept nogil:
    """V = Ad_{C} ν (spatial) or Ad_{R} ν (hybrid)."""
    rot(C, nu, V)
    rot(C, nu + 3, V + 3)
    if spatial:
        cross_add(C + 9, V, V + 3, 1.0)


cdef inline void wrench_from_body(const double* C, const double* Wb, bint spatial,
                                  double* W) noexcept nogil:
    """W += Ad_{C}^{−T} W_b (spatial: f = R f_b, m = R m_b + p × f) or Ad_{R}^{−T} W_b."""
    cdef double t[6]
    rot(C, Wb, t)
    rot(C, Wb + 3, t + 3)
    if spatial:
        cross_add(C + 9, t + 3, t, 1.0)
    axpy6(-1.0, t, W)


cdef inline double dot6(const double* a, const double* b) noexcept nogil:
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3] + a[4] * b[4] + a[5] * b[5]


cdef void rnea_spatial(const KModel* m, KWork* w, bint use_fx, double* out) noexcept nogil:
    """Seed 000 eq. 71–72; out (nv,) in Pinocchio's order."""
    cdef int nb = m.nb, i, par
    cdef double* C
    cdef double* J
    cdef double* V
    cdef double* A
    cdef double* Wi
    cdef double* s = w.S
    cdef double I[12]
    cdef double qd, qdd
    cdef double t[6]
    for i in range(nb):
        par = m.parent[i]
        C = w.IA + 36 * i
        V = w.V + 6 * i
        A = w.V + 6 * (nb + i)
        if m.jtype[i] == FREE:
            copy_pose(w.T, C)
            base_twist(C, w.nu, True, V)
            base_twist(C, w.nu + 6, True, A)   # d/dt Ad_C ν = Ad_C ν̇ (ad_ν ν = 0)
            A[3] -= m.g[0]
            A[4] -= m.g[1]
            A[5] -= m.g[2]
            continue
        J = C + 12
        joint_pose(m, i, w.qj[i], w.T + 12 * i)
        if par >= 0:
            compose(w.IA + 36 * par, w.T + 12 * i, C)
        else:
            copy_pose(w.T + 12 * i, C)
        joint_screw(m, i, C, True, J)
        qd = w.qj[nb + i]
        qdd = w.qj[2 * nb + i]
        if par >= 0:
            copy6(w.V + 6 * par, V)
            axpy6(qd, J, V)
            # V̇_i = V̇_λ + J q̈ + ad_{V_λ} V_i = V̇_λ + J q̈ + q̇ ad_{V_λ} J
            ad_V(w.V + 6 * par, J, t)
            copy6(w.V + 6 * (nb + par), A)
            axpy6(qd, t, A)
        else:
            zero6(V)
            axpy6(qd, J, V)
            zero6(A)
            A[3] = -m.g[0]
            A[4] = -m.g[1]
            A[5] = -m.g[2]
        axpy6(qdd, J, A)
    for i in range(nb):
        zero6(w.W + 6 * i)
    for i in range(nb - 1, -1, -1):
        C = w.IA + 36 * i
        V = w.V + 6 * i
        Wi = w.W + 6 * i
        world_inertia(m, i, C, True, I)
        inertia_apply(m.mass[i], I, w.V + 6 * (nb + i), s)
        axpy6(1.0, s, Wi)
        inertia_apply(m.mass[i], I, V, s)
        add_adT(V, s, Wi, 1.0)
        if use_fx:
            wrench_from_body(C, w.fx + 6 * i, True, Wi)
        if m.jtype[i] == FREE:
            # W_b = Ad_Cᵀ W_s: f_b = Rᵀ f, m_b = Rᵀ (m − p × f); Pinocchio order (f, m)
            copy6(Wi, t)
            cross_add(C + 9, Wi + 3, t, -1.0)
            rotT(C, t + 3, out)
            rotT(C, t, out + 3)
        else:
            out[i + 5 * m.fb] = dot6(C + 12, Wi)
        par = m.parent[i]
        if par >= 0:
            axpy6(1.0, Wi, w.W + 6 * par)


cdef void rnea_hybrid(const KModel* m, KWork* w, bint use_fx, double* out) noexcept nogil:
    """Seed 000 eq. 76–77; out (nv,) in Pinocchio's order."""
    cdef int nb = m.nb, i, par
    cdef double* C
    cdef double* X
    cdef double* V
    cdef double* A
    cdef double* Vp
    cdef double* Ap
    cdef double* Wi
    cdef double* s = w.S
    cdef double I[12]
    cdef double d[3]
    cdef double t[6]
    cdef double qd, qdd
    for i in range(nb):
        par = m.parent[i]
        C = w.IA + 36 * i
        V = w.V + 6 * i
        A = w.V + 6 * (nb + i)
        if m.jtype[i] == FREE:
            copy_pose(w.T, C)
            base_twist(C, w.nu, False, V)
            # V̇_0^h = Ad_R (ν̇ + (0, ω × v)) + (0, −g)
            copy6(w.nu + 6, t)
            cross_add(w.nu, w.nu + 3, t + 3, 1.0)
            base_twist(C, t, False, A)
            A[3] -= m.g[0]
            A[4] -= m.g[1]
            A[5] -= m.g[2]
            continue
        X = C + 12
        joint_pose(m, i, w.qj[i], w.T + 12 * i)
        if par >= 0:
            compose(w.IA + 36 * par, w.T + 12 * i, C)
        else:
            copy_pose(w.T + 12 * i, C)
        joint_screw(m, i, C, False, X)
        qd = w.qj[nb + i]
        qdd = w.qj[2 * nb + i]
        if par >= 0:
            Vp = w.V + 6 * par
            Ap = w.V + 6 * (nb + par)
            d[0] = C[9] - w.IA[36 * par + 9]
            d[1] = C[10] - w.IA[36 * par + 10]
            d[2] = C[11] - w.IA[36 * par + 11]
            # (76c) V = Ad_{r_{i,λ}} V_λ + ⁰X q̇
            copy6(Vp, V)
            cross_add(Vp, d, V + 3, 1.0)
            axpy6(qd, X, V)
            # (76d) V̇ = Ad_{r_{i,λ}} V̇_λ + (0, (ṙ_λ − ṙ_i) × ω_λ) + q̇ ad_{ω_i} ⁰X + ⁰X q̈
            copy6(Ap, A)
            cross_add(Ap, d, A + 3, 1.0)
            t[0] = Vp[3] - V[3]
            t[1] = Vp[4] - V[4]
            t[2] = Vp[5] - V[5]
            cross_add(t, Vp, A + 3, 1.0)
        else:
            zero6(V)
            axpy6(qd, X, V)
            zero6(A)
            A[3] = -m.g[0]
            A[4] = -m.g[1]
            A[5] = -m.g[2]
        cross_add(V, X, A, qd)
        cross_add(V, X + 3, A + 3, qd)
        axpy6(qdd, X, A)
    for i in range(nb):
        zero6(w.W + 6 * i)
    for i in range(nb - 1, -1, -1):
        C = w.IA + 36 * i
        V = w.V + 6 * i
        Wi = w.W + 6 * i
        world_inertia(m, i, C, False, I)
        inertia_apply(m.mass[i], I, w.V + 6 * (nb + i), s)
        axpy6(1.0, s, Wi)
        # (ω × Θω, ω × (ω × h))
        t[0] = I[0] * V[0] + I[1] * V[1] + I[2] * V[2]
        t[1] = I[3] * V[0] + I[4] * V[1] + I[5] * V[2]
        t[2] = I[6] * V[0] + I[7] * V[1] + I[8] * V[2]
        t[3] = V[1] * I[11] - V[2] * I[10]
        t[4] = V[2] * I[9] - V[0] * I[11]
        t[5] = V[0] * I[10] - V[1] * I[9]
        cross_add(V, t, Wi, 1.0)
        cross_add(V, t + 3, Wi + 3, 1.0)
        if use_fx:
            wrench_from_body(C, w.fx + 6 * i, False, Wi)
        if m.jtype[i] == FREE:
            rotT(C, Wi + 3, out)
            rotT(C, Wi, out + 3)
        else:
            out[i + 5 * m.fb] = dot6(C + 12, Wi)
        par = m.parent[i]
        if par >= 0:
            # Ad_{d}ᵀ: the same force, moment about r_λ: m + (r_i − r_λ) × f
            Vp = w.W + 6 * par
            d[0] = C[9] - w.IA[36 * par + 9]
            d[1] = C[10] - w.IA[36 * par + 10]
            d[2] = C[11] - w.IA[36 * par + 11]
            axpy6(1.0, Wi, Vp)
            cross_add(d, Wi + 3, Vp, 1.0)


cdef inline void run(const KModel* m, KWork* w, int rep, bint use_fx, double* out) noexcept nogil:
    if rep == SPATIAL:
        rnea_spatial(m, w, use_fx, out)
    else:
        rnea_hybrid(m, w, use_fx, out)


cdef object _inverse_dynamics(Data d, int rep, q, qd, qdd, fx, out):
    """τ (nv,) by the spatial (rep = 1) or hybrid (rep = 2) RNEA, optional body wrenches fx
    (nb, 6) in body frames."""
    if rep != SPATIAL and rep != HYBRID:
        raise ValueError("rep must be 1 (spatial) or 2 (hybrid)")
    cdef KModel* m = &d.m
    q, qd, qdd = take_states(m, q, qd, qdd, "qd", "qdd", False)
    out = out_vec(out, m.nv)
    cdef bint use_fx = fx is not None
    cdef KWork* w = &d.w
    if use_fx:
        load_fx(d, fx, 1)
    load_rows(m, w, <double*> cnp.PyArray_DATA(q), <double*> cnp.PyArray_DATA(qd),
              <double*> cnp.PyArray_DATA(qdd))
    res = alias3(out, q, qd, qdd)
    run(m, w, rep, use_fx, <double*> cnp.PyArray_DATA(res))
    if res is not out:
        out[...] = res
    return out


cdef object _inverse_dynamics_batch(Data d, int rep, q, qd, qdd, out):
    """τ (N, nv) for N states, one thread."""
    if rep != SPATIAL and rep != HYBRID:
        raise ValueError("rep must be 1 (spatial) or 2 (hybrid)")
    cdef KModel* m = &d.m
    q, qd, qdd = take_states(m, q, qd, qdd, "qd", "qdd", True)
    cdef Py_ssize_t N = q.shape[0], s
    out = as_out(out, "out", (N, m.nv))
    res = fresh_if_alias(out, (q, qd, qdd))
    cdef double* pq = <double*> cnp.PyArray_DATA(q)
    cdef double* pv = <double*> cnp.PyArray_DATA(qd)
    cdef double* pa = <double*> cnp.PyArray_DATA(qdd)
    cdef double* po = <double*> cnp.PyArray_DATA(res)
    cdef int nq = m.nq, nv = m.nv
    cdef KWork* w = &d.w
    with nogil:
        for s in range(N):
            load_rows(m, w, pq + s * nq, pv + s * nv, pa + s * nv)
            run(m, w, rep, False, po + s * nv)
    if res is not out:
        out[...] = res
    return out


# ---------------------------------------------------------------------------------------------
# the public entries: each takes the Data's owner flag (one thread at a time) around its kernel
# ---------------------------------------------------------------------------------------------

def inverse_dynamics(Data d, int rep, q, qd, qdd, fx, out):
    """τ (nv,) by the spatial (rep = 1) or hybrid (rep = 2) RNEA, optional body wrenches fx
    (nb, 6) in body frames."""
    claim(d)
    try:
        return finite_result(_inverse_dynamics(d, rep, q, qd, qdd, fx, out), "inverse_dynamics")
    finally:
        unclaim(d)


def inverse_dynamics_batch(Data d, int rep, q, qd, qdd, out):
    """τ (N, nv) for N states, one thread."""
    claim(d)
    try:
        return finite_result(_inverse_dynamics_batch(d, rep, q, qd, qdd, out), "inverse_dynamics_batch")
    finally:
        unclaim(d)
