# cython: language_level=3
"""Inline spatial algebra on 6-vectors (twists ``(ω, v)``, wrenches ``(m, f)``) for the kernels.

``T`` points at a relative pose C_{λ(i),i} = (R, p) stored as R (row-major 9) then p (3); then
``Ad_{C_{i,λ}}`` maps a parent twist into body i and its transpose a body-i wrench to the parent
(seed 004 §2: Ad_C = [[R, 0], [p̃R, R]]).
"""
from libc.math cimport sqrt

cdef extern from "_soa.h":
    void mbs_sincos(double x, double* s, double* c) noexcept nogil

from mbs_dynamics.kernels._data cimport FREE, PRISMATIC, REVOLUTE, KModel, KWork


cdef inline void joint_pose(const KModel* m, int i, double q, double* T) noexcept nogil:
    """C_{λ(i),i}(q) = B_i exp(X_i q) (seed 004 eq. 6–7): R = B_R (I + sin q ẽ + (1 − cos q) ẽ²),
    p = B_p (revolute); R = B_R, p = B_p + B_R e q (prismatic). B_R ẽ, B_R ẽ² are precomputed.
    sin q, cos q: ``mbs_sincos`` of _soa.h, the same function the batch kernels use (a batch
    gives the single calls' numbers bit for bit)."""
    cdef const double* B = m.BR + 9 * i
    cdef const double* Bp = m.Bp + 3 * i
    cdef const double* E1
    cdef const double* E2
    cdef const double* Be
    cdef double s, c, t
    cdef int a
    if m.jtype[i] == REVOLUTE:
        mbs_sincos(q, &s, &c)
        t = 1.0 - c
        E1 = m.BE1 + 9 * i
        E2 = m.BE2 + 9 * i
        for a in range(9):
            T[a] = B[a] + s * E1[a] + t * E2[a]
        T[9] = Bp[0]
        T[10] = Bp[1]
        T[11] = Bp[2]
    else:
        Be = m.BRe + 3 * i
        for a in range(9):
            T[a] = B[a]
        T[9] = Bp[0] + Be[0] * q
        T[10] = Bp[1] + Be[1] * q
        T[11] = Bp[2] + Be[2] * q


cdef inline void quat_pose(const double* x, double* T) noexcept nogil:
    """Base pose from (x, y, z, qx, qy, qz, qw) (Pinocchio's free-flyer layout); the quaternion
    is normalised here (the public entry rejects one far from unit)."""
    cdef double qx = x[3], qy = x[4], qz = x[5], qw = x[6]
    cdef double s = 1.0 / sqrt(qx * qx + qy * qy + qz * qz + qw * qw)
    qx *= s
    qy *= s
    qz *= s
    qw *= s
    T[0] = 1.0 - 2.0 * (qy * qy + qz * qz)
    T[1] = 2.0 * (qx * qy - qz * qw)
    T[2] = 2.0 * (qx * qz + qy * qw)
    T[3] = 2.0 * (qx * qy + qz * qw)
    T[4] = 1.0 - 2.0 * (qx * qx + qz * qz)
    T[5] = 2.0 * (qy * qz - qx * qw)
    T[6] = 2.0 * (qx * qz - qy * qw)
    T[7] = 2.0 * (qy * qz + qx * qw)
    T[8] = 1.0 - 2.0 * (qx * qx + qy * qy)
    T[9] = x[0]
    T[10] = x[1]
    T[11] = x[2]


cdef inline void to_child(const double* T, const double* s, double* d) noexcept nogil:
    """d = Ad_{C_{i,λ}} s for twists: ω' = Rᵀω, v' = Rᵀ(v + ω × p). ``d`` may not alias ``s``."""
    cdef double w0 = s[0], w1 = s[1], w2 = s[2]
    cdef double p0 = T[9], p1 = T[10], p2 = T[11]
    cdef double v0 = s[3] + w1 * p2 - w2 * p1
    cdef double v1 = s[4] + w2 * p0 - w0 * p2
    cdef double v2 = s[5] + w0 * p1 - w1 * p0
    d[0] = T[0] * w0 + T[3] * w1 + T[6] * w2
    d[1] = T[1] * w0 + T[4] * w1 + T[7] * w2
    d[2] = T[2] * w0 + T[5] * w1 + T[8] * w2
    d[3] = T[0] * v0 + T[3] * v1 + T[6] * v2
    d[4] = T[1] * v0 + T[4] * v1 + T[7] * v2
    d[5] = T[2] * v0 + T[5] * v1 + T[8] * v2


cdef inline void add_to_parent(const double* T, const double* s, double* d) noexcept nogil:
    """d += Ad_{C_{i,λ}}ᵀ s for wrenches: f' = R f, m' = R m + p × f'."""
    cdef double f0 = T[0] * s[3] + T[1] * s[4] + T[2] * s[5]
    cdef double f1 = T[3] * s[3] + T[4] * s[4] + T[5] * s[5]
    cdef double f2 = T[6] * s[3] + T[7] * s[4] + T[8] * s[5]
    cdef double m0 = T[0] * s[0] + T[1] * s[1] + T[2] * s[2]
    cdef double m1 = T[3] * s[0] + T[4] * s[1] + T[5] * s[2]
    cdef double m2 = T[6] * s[0] + T[7] * s[1] + T[8] * s[2]
    cdef double p0 = T[9], p1 = T[10], p2 = T[11]
    d[0] += m0 + p1 * f2 - p2 * f1
    d[1] += m1 + p2 * f0 - p0 * f2
    d[2] += m2 + p0 * f1 - p1 * f0
    d[3] += f0
    d[4] += f1
    d[5] += f2


cdef inline void inertia_times(const KModel* m, int i, const double* s, double* d) noexcept nogil:
    """d = M_i s, M_i = [[Θ, h̃], [−h̃, m I]] (seed 004 eq. 24, h = m c)."""
    cdef double w0 = s[0], w1 = s[1], w2 = s[2], v0 = s[3], v1 = s[4], v2 = s[5]
    cdef double ms = m.mass[i]
    cdef const double* h = m.h + 3 * i
    cdef const double* I = m.Th + 9 * i
    cdef double h0 = h[0], h1 = h[1], h2 = h[2]
    d[0] = I[0] * w0 + I[1] * w1 + I[2] * w2 + (h1 * v2 - h2 * v1)
    d[1] = I[3] * w0 + I[4] * w1 + I[5] * w2 + (h2 * v0 - h0 * v2)
    d[2] = I[6] * w0 + I[7] * w1 + I[8] * w2 + (h0 * v1 - h1 * v0)
    d[3] = ms * v0 - (h1 * w2 - h2 * w1)
    d[4] = ms * v1 - (h2 * w0 - h0 * w2)
    d[5] = ms * v2 - (h0 * w1 - h1 * w0)


cdef inline void ad_X(const KModel* m, int i, const double* s, double* d, bint transpose) noexcept nogil:
    """d = ad_{X_i} s (twists) or ad_{X_i}ᵀ s (wrenches); d may alias s."""
    cdef const double* e = m.axis + 3 * i
    cdef double ex = e[0], ey = e[1], ez = e[2]
    cdef double a0 = s[0], a1 = s[1], a2 = s[2], b0 = s[3], b1 = s[4], b2 = s[5], sg
    if m.jtype[i] == REVOLUTE:  # X = (e, 0): ad_X = diag(ẽ, ẽ), ad_Xᵀ = −ad_X
        sg = -1.0 if transpose else 1.0
        d[0] = sg * (ey * a2 - ez * a1)
        d[1] = sg * (ez * a0 - ex * a2)
        d[2] = sg * (ex * a1 - ey * a0)
        d[3] = sg * (ey * b2 - ez * b1)
        d[4] = sg * (ez * b0 - ex * b2)
        d[5] = sg * (ex * b1 - ey * b0)
    elif not transpose:  # X = (0, e): ad_X (ω, v) = (0, e × ω)
        d[3] = ey * a2 - ez * a1
        d[4] = ez * a0 - ex * a2
        d[5] = ex * a1 - ey * a0
        d[0] = 0.0
        d[1] = 0.0
        d[2] = 0.0
    else:  # ad_Xᵀ (m, f) = (−e × f, 0)
        d[0] = -(ey * b2 - ez * b1)
        d[1] = -(ez * b0 - ex * b2)
        d[2] = -(ex * b1 - ey * b0)
        d[3] = 0.0
        d[4] = 0.0
        d[5] = 0.0


cdef inline void ad_V(const double* V, const double* s, double* d) noexcept nogil:
    """d = ad_V s = (ω × a, v × a + ω × b) for V = (ω, v), s = (a, b); d may not alias s or V."""
    d[0] = V[1] * s[2] - V[2] * s[1]
    d[1] = V[2] * s[0] - V[0] * s[2]
    d[2] = V[0] * s[1] - V[1] * s[0]
    d[3] = V[4] * s[2] - V[5] * s[1] + V[1] * s[5] - V[2] * s[4]
    d[4] = V[5] * s[0] - V[3] * s[2] + V[2] * s[3] - V[0] * s[5]
    d[5] = V[3] * s[1] - V[4] * s[0] + V[0] * s[4] - V[1] * s[3]


cdef inline void add_adT(const double* V, const double* s, double* d, double b) noexcept nogil:
    """d −= b ad_Vᵀ s, with −ad_Vᵀ (μ, f) = (ω × μ + v × f, ω × f)."""
    cdef double w0 = V[0], w1 = V[1], w2 = V[2], l0 = V[3], l1 = V[4], l2 = V[5]
    cdef double u0 = s[0], u1 = s[1], u2 = s[2], f0 = s[3], f1 = s[4], f2 = s[5]
    d[0] += b * (w1 * u2 - w2 * u1 + l1 * f2 - l2 * f1)
    d[1] += b * (w2 * u0 - w0 * u2 + l2 * f0 - l0 * f2)
    d[2] += b * (w0 * u1 - w1 * u0 + l0 * f1 - l1 * f0)
    d[3] += b * (w1 * f2 - w2 * f1)
    d[4] += b * (w2 * f0 - w0 * f2)
    d[5] += b * (w0 * f1 - w1 * f0)


cdef inline double X_dot(const KModel* m, int i, const double* w) noexcept nogil:
    """X_iᵀ w (the joint force of wrench w)."""
    cdef const double* e = m.axis + 3 * i
    if m.jtype[i] == REVOLUTE:
        return e[0] * w[0] + e[1] * w[1] + e[2] * w[2]
    return e[0] * w[3] + e[1] * w[4] + e[2] * w[5]


cdef inline void add_X(const KModel* m, int i, double s, double* v) noexcept nogil:
    """v += s X_i."""
    cdef const double* e = m.axis + 3 * i
    cdef int o = 0 if m.jtype[i] == REVOLUTE else 3
    v[o] += s * e[0]
    v[o + 1] += s * e[1]
    v[o + 2] += s * e[2]


cdef inline void set_X(const KModel* m, int i, double* v) noexcept nogil:
    """v = X_i."""
    cdef int a
    for a in range(6):
        v[a] = 0.0
    add_X(m, i, 1.0, v)


cdef inline void copy6(const double* s, double* d) noexcept nogil:
    cdef int a
    for a in range(6):
        d[a] = s[a]


cdef inline void zero6(double* d) noexcept nogil:
    cdef int a
    for a in range(6):
        d[a] = 0.0


cdef inline void axpy6(double c, const double* s, double* d) noexcept nogil:
    cdef int a
    for a in range(6):
        d[a] += c * s[a]


cdef inline void base_gravity(const KModel* m, const double* T, double* d) noexcept nogil:
    """d = (0, −Rᵀ g): gravity as an upward base acceleration in a body at world pose T."""
    cdef double g0 = m.g[0], g1 = m.g[1], g2 = m.g[2]
    d[0] = 0.0
    d[1] = 0.0
    d[2] = 0.0
    d[3] = -(T[0] * g0 + T[3] * g1 + T[6] * g2)
    d[4] = -(T[1] * g0 + T[4] * g1 + T[7] * g2)
    d[5] = -(T[2] * g0 + T[5] * g1 + T[8] * g2)


cdef inline void load_jet(const KModel* m, KWork* w, const double* q, const double* vs,
                          int rows) noexcept nogil:
    """q (nq,) and ``rows`` velocity-level rows vs (rows, nv) → qj (rows + 1, nb), ν (rows, 6)
    and the base pose; Pinocchio's free-flyer order (linear first) becomes (ω, v)."""
    cdef int nb = m.nb, fb = m.fb, nv = m.nv, k, b
    cdef const double* x
    if fb:
        quat_pose(q, w.T)
        for b in range(1, nb):
            w.qj[b] = q[6 + b]
        for k in range(rows):
            x = vs + k * nv
            w.nu[6 * k] = x[3]
            w.nu[6 * k + 1] = x[4]
            w.nu[6 * k + 2] = x[5]
            w.nu[6 * k + 3] = x[0]
            w.nu[6 * k + 4] = x[1]
            w.nu[6 * k + 5] = x[2]
            for b in range(1, nb):
                w.qj[(k + 1) * nb + b] = x[5 + b]
    else:
        for b in range(nb):
            w.qj[b] = q[b]
        for k in range(rows):
            for b in range(nb):
                w.qj[(k + 1) * nb + b] = vs[k * nv + b]


cdef inline void load_rows(const KModel* m, KWork* w, const double* q, const double* v,
                           const double* a) noexcept nogil:
    """q, v, a of one sample into the workspace (K = 0; the base's (linear, angular) → (ω, v))."""
    cdef int nb = m.nb, b
    load_jet(m, w, q, v, 1)
    if m.fb:
        w.nu[6], w.nu[7], w.nu[8] = a[3], a[4], a[5]
        w.nu[9], w.nu[10], w.nu[11] = a[0], a[1], a[2]
        for b in range(1, nb):
            w.qj[2 * nb + b] = a[5 + b]
    else:
        for b in range(nb):
            w.qj[2 * nb + b] = a[b]


# ---- the Bell polynomials Φ_m of one joint (doc/math.md "Recursive time derivatives of any order")
cdef inline void bell(const KModel* m, KWork* w, int i, int K1) noexcept nogil:
    """c[m][j] of Φ_m, m ≤ K1: c[m+1][j] = Σ_l binom(m,l) c[m−l][j−1] (−q^(l+1))."""
    cdef int nb = m.nb, s = w.kmax + 2, nbn = w.kmax + 3, mm, j, l
    cdef double acc
    for mm in range(K1 + 1):
        for j in range(K1 + 1):
            w.bell[mm * s + j] = 0.0
    w.bell[0] = 1.0
    for mm in range(K1):
        for j in range(1, mm + 2):
            acc = 0.0
            for l in range(mm + 1):
                acc -= w.binom[mm * nbn + l] * w.bell[(mm - l) * s + j - 1] * w.qj[(l + 1) * nb + i]
            w.bell[(mm + 1) * s + j] = acc


cdef inline void phi_sum(KWork* w, int k, double* d) noexcept nogil:
    """d += Σ_{m=1..k} binom(k,m) Σ_j c[m][j] Au[k−m][j]  (the Φ_m terms of the k-th derivative)."""
    cdef int s = w.kmax + 2, nbn = w.kmax + 3, mm, j
    cdef double c
    for mm in range(1, k + 1):
        for j in range(1, mm + 1):
            c = w.bell[mm * s + j]
            if c != 0.0:
                axpy6(c * w.binom[k * nbn + mm], w.Au + 6 * ((k - mm) * s + j), d)


cdef inline void phi_small(KWork* w, int k, double q1, double q2, double q3, double* d) noexcept nogil:
    """phi_sum for k ≤ 3 with the Bell polynomials written out (doc/math.md):
    Φ_1 = −q̇A, Φ_2 = −q̈A + q̇²A², Φ_3 = −q⃛A + 3q̇q̈A² − q̇³A³."""
    cdef int s = w.kmax + 2
    cdef double* Au = w.Au
    if k == 1:
        axpy6(-q1, Au + 6, d)
    elif k == 2:
        axpy6(-2.0 * q1, Au + 6 * (s + 1), d)
        axpy6(-q2, Au + 6, d)
        axpy6(q1 * q1, Au + 12, d)
    elif k == 3:
        axpy6(-3.0 * q1, Au + 6 * (2 * s + 1), d)
        axpy6(-3.0 * q2, Au + 6 * (s + 1), d)
        axpy6(3.0 * q1 * q1, Au + 6 * (s + 2), d)
        axpy6(-q3, Au + 6, d)
        axpy6(3.0 * q1 * q2, Au + 12, d)
        axpy6(-q1 * q1 * q1, Au + 18, d)


# ---- poses (R row-major 9, p 3)
cdef inline void compose(const double* A, const double* B, double* C) noexcept nogil:
    """C = A B for poses; C may not alias A or B."""
    cdef int r, c
    for r in range(3):
        for c in range(3):
            C[3 * r + c] = A[3 * r] * B[c] + A[3 * r + 1] * B[3 + c] + A[3 * r + 2] * B[6 + c]
        C[9 + r] = A[3 * r] * B[9] + A[3 * r + 1] * B[10] + A[3 * r + 2] * B[11] + A[9 + r]


cdef inline void rot(const double* R, const double* x, double* y) noexcept nogil:
    """y = R x (y may not alias x)."""
    y[0] = R[0] * x[0] + R[1] * x[1] + R[2] * x[2]
    y[1] = R[3] * x[0] + R[4] * x[1] + R[5] * x[2]
    y[2] = R[6] * x[0] + R[7] * x[1] + R[8] * x[2]


cdef inline double dot6(const double* a, const double* b) noexcept nogil:
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3] + a[4] * b[4] + a[5] * b[5]


cdef inline void cross_force(const double* x, const double* h, double* d, double c) noexcept nogil:
    """d += c · x ×* h = c (ω × n + v × f, ω × f) for x = (ω, v), h = (n, f)."""
    d[0] += c * (x[1] * h[2] - x[2] * h[1] + x[4] * h[5] - x[5] * h[4])
    d[1] += c * (x[2] * h[0] - x[0] * h[2] + x[5] * h[3] - x[3] * h[5])
    d[2] += c * (x[0] * h[1] - x[1] * h[0] + x[3] * h[4] - x[4] * h[3])
    d[3] += c * (x[1] * h[5] - x[2] * h[4])
    d[4] += c * (x[2] * h[3] - x[0] * h[5])
    d[5] += c * (x[0] * h[4] - x[1] * h[3])


cdef inline void world_screw(const double* P, const double* u, double* d) noexcept nogil:
    """d = Ad_C u for a body twist u and the world pose C = P (R, p): (R ω, R v + p × R ω)."""
    cdef double a0 = P[0] * u[0] + P[1] * u[1] + P[2] * u[2]
    cdef double a1 = P[3] * u[0] + P[4] * u[1] + P[5] * u[2]
    cdef double a2 = P[6] * u[0] + P[7] * u[1] + P[8] * u[2]
    d[0] = a0
    d[1] = a1
    d[2] = a2
    d[3] = P[0] * u[3] + P[1] * u[4] + P[2] * u[5] + P[10] * a2 - P[11] * a1
    d[4] = P[3] * u[3] + P[4] * u[4] + P[5] * u[5] + P[11] * a0 - P[9] * a2
    d[5] = P[6] * u[3] + P[7] * u[4] + P[8] * u[5] + P[9] * a1 - P[10] * a0


cdef inline void screw(const double* C, const double* a, bint rotational, double* J) noexcept nogil:
    """Ad_C of the unit screw (a, 0) (rotational) or (0, a): (R a, p × R a) or (0, R a) — a
    joint's screw in the frame of the pose C = (R, p), the zero half not multiplied."""
    cdef double x0 = C[0] * a[0] + C[1] * a[1] + C[2] * a[2]
    cdef double x1 = C[3] * a[0] + C[4] * a[1] + C[5] * a[2]
    cdef double x2 = C[6] * a[0] + C[7] * a[1] + C[8] * a[2]
    if rotational:
        J[0], J[1], J[2] = x0, x1, x2
        J[3] = C[10] * x2 - C[11] * x1
        J[4] = C[11] * x0 - C[9] * x2
        J[5] = C[9] * x1 - C[10] * x0
    else:
        J[0] = 0.0
        J[1] = 0.0
        J[2] = 0.0
        J[3], J[4], J[5] = x0, x1, x2


cdef inline void wrench_to_world(const double* P, const double* u, double* d) noexcept nogil:
    """d = Ad_C⁻ᵀ u for a body wrench u = (m, f): (R m + p × R f, R f)."""
    cdef double f0 = P[0] * u[3] + P[1] * u[4] + P[2] * u[5]
    cdef double f1 = P[3] * u[3] + P[4] * u[4] + P[5] * u[5]
    cdef double f2 = P[6] * u[3] + P[7] * u[4] + P[8] * u[5]
    d[0] = P[0] * u[0] + P[1] * u[1] + P[2] * u[2] + P[10] * f2 - P[11] * f1
    d[1] = P[3] * u[0] + P[4] * u[1] + P[5] * u[2] + P[11] * f0 - P[9] * f2
    d[2] = P[6] * u[0] + P[7] * u[1] + P[8] * u[2] + P[9] * f1 - P[10] * f0
    d[3], d[4], d[5] = f0, f1, f2


cdef inline void body_inertia(const KModel* m, int i, const double* P, double* I) noexcept nogil:
    """Body i's inertia in the world about the world origin (m, h_w, Θ_w): h_p = R h,
    Θ_p = R Θ Rᵀ, h_w = h_p + m p, Θ_w = Θ_p + m(|p|² 1 − p pᵀ) + 2(p·h_p) 1 − p h_pᵀ − h_p pᵀ."""
    cdef double ms = m.mass[i]
    cdef const double* h = m.h + 3 * i
    cdef const double* Th = m.Th + 9 * i
    cdef double RT[9]
    cdef double hp[3]
    cdef double pv[3]
    cdef int a, b
    cdef double acc, pp, ph
    pv[0], pv[1], pv[2] = P[9], P[10], P[11]
    for a in range(3):
        hp[a] = P[3 * a] * h[0] + P[3 * a + 1] * h[1] + P[3 * a + 2] * h[2]
        for b in range(3):
            RT[3 * a + b] = P[3 * a] * Th[b] + P[3 * a + 1] * Th[3 + b] + P[3 * a + 2] * Th[6 + b]
    pp = pv[0] * pv[0] + pv[1] * pv[1] + pv[2] * pv[2]
    ph = pv[0] * hp[0] + pv[1] * hp[1] + pv[2] * hp[2]
    for a in range(3):
        for b in range(a, 3):
            acc = RT[3 * a] * P[3 * b] + RT[3 * a + 1] * P[3 * b + 1] + RT[3 * a + 2] * P[3 * b + 2]
            acc += -ms * pv[a] * pv[b] - pv[a] * hp[b] - hp[a] * pv[b]
            if a == b:
                acc += ms * pp + 2.0 * ph
            I[4 + 3 * a + b] = acc
            I[4 + 3 * b + a] = acc
    I[0] = ms
    for a in range(3):
        I[1 + a] = hp[a] + ms * pv[a]

