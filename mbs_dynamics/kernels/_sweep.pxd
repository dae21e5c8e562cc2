# cython: language_level=3
"""The forward sweep shared by the analytic derivatives of inverse dynamics: first order
(``identification/_derivatives.pyx``) and second order (``kernels/_rnea_so.pyx``, IDSVA of
Singh, Russell & Wensing, IEEE RA-L 2022). Seed 000 §6.1, eqs. (16)–(18): per velocity
coordinate j (body b(j), parent body λ) its screw S_j, Ψ̇_j = v_λ × S_j,
Ψ̈_j = a_λ × S_j + v_λ × Ψ̇_j and D_j = 2Ψ̇_j (a one-dof joint); per body its pose, twist
v = v_λ + S q̇, acceleration a = a_λ + S q̈ + Ψ̇ q̇, inertia I, momentum h = I v, force
f = I a + v ×* h − W (W the applied wrench in the sweep's frame) and N + Nᵀ (N = I ad_v).

Layouts (both callers' enums name the same offsets):
    body row X: pose R (9, row-major), p (3) at 0; v at 12; a at 18; I = (m, h, Θ) at 24 (13);
    h at 37; f at 43; N + Nᵀ at 49 (12: S (9), k (3), see :func:`body_N`).
    coordinate row C: S at 0, Ψ̇ at 6, D at 12, Ψ̈ at 18.
"""
from mbs_dynamics.kernels._data cimport REVOLUTE, KModel, KWork
from mbs_dynamics.kernels._spatial cimport (ad_V, body_inertia, cross_force, joint_pose,
                                           world_screw, wrench_to_world)


cdef inline void inertia_apply(const double* I, const double* x, double* d) noexcept nogil:
    """d = I x for I = (m, h, Θ): (Θ ω + h × v, m v − h × ω)."""
    cdef double m = I[0]
    cdef const double* h = I + 1
    cdef const double* Th = I + 4
    cdef double w0 = x[0], w1 = x[1], w2 = x[2], v0 = x[3], v1 = x[4], v2 = x[5]
    d[0] = Th[0] * w0 + Th[1] * w1 + Th[2] * w2 + h[1] * v2 - h[2] * v1
    d[1] = Th[3] * w0 + Th[4] * w1 + Th[5] * w2 + h[2] * v0 - h[0] * v2
    d[2] = Th[6] * w0 + Th[7] * w1 + Th[8] * w2 + h[0] * v1 - h[1] * v0
    d[3] = m * v0 - (h[1] * w2 - h[2] * w1)
    d[4] = m * v1 - (h[2] * w0 - h[0] * w2)
    d[5] = m * v2 - (h[0] * w1 - h[1] * w0)


cdef inline void body_N(const double* I, const double* v, double* N) noexcept nogil:
    """N + Nᵀ for N = I ad_v, I = (m, h, Θ), v = (ω, u), stored as (S (9, row-major), k (3)):
    N = [[Θ ω̃ + h̃ ũ, h̃ ω̃], [−h̃ ω̃ + m ũ, m ω̃]], so N + Nᵀ = [[S, k̃], [−k̃, 0]] with
    S = P + Pᵀ + u hᵀ + h uᵀ − 2 (h·u) 1 (P = Θ ω̃: row a is Θ_a × ω; h̃ ũ + ũ h̃ = u hᵀ + h uᵀ
    − 2 (h·u) 1) and k = h × ω − m u (h̃ ω̃ − ω̃ h̃ = (h × ω)~). Linear in I: composites add."""
    cdef const double* Th = I + 4
    cdef const double* h = I + 1
    cdef double m = I[0], w0 = v[0], w1 = v[1], w2 = v[2], u0 = v[3], u1 = v[4], u2 = v[5]
    cdef double P[9]
    cdef double hu = h[0] * u0 + h[1] * u1 + h[2] * u2
    cdef double uu[3]
    cdef int a, b
    uu[0], uu[1], uu[2] = u0, u1, u2
    for a in range(3):
        P[3 * a] = Th[3 * a + 1] * w2 - Th[3 * a + 2] * w1
        P[3 * a + 1] = Th[3 * a + 2] * w0 - Th[3 * a] * w2
        P[3 * a + 2] = Th[3 * a] * w1 - Th[3 * a + 1] * w0
    for a in range(3):
        for b in range(3):
            N[3 * a + b] = P[3 * a + b] + P[3 * b + a] + uu[a] * h[b] + h[a] * uu[b]
        N[4 * a] -= 2.0 * hu
    N[9] = h[1] * w2 - h[2] * w1 - m * u0
    N[10] = h[2] * w0 - h[0] * w2 - m * u1
    N[11] = h[0] * w1 - h[1] * w0 - m * u2


cdef inline void N_apply(const double* N, const double* x, double* d) noexcept nogil:
    """d = (N + Nᵀ) x for N + Nᵀ = [[S, k̃], [−k̃, 0]] as stored by :func:`body_N`:
    (S ω + k × v, −k × ω) for x = (ω, v)."""
    cdef double w0 = x[0], w1 = x[1], w2 = x[2], v0 = x[3], v1 = x[4], v2 = x[5]
    cdef double k0 = N[9], k1 = N[10], k2 = N[11]
    d[0] = N[0] * w0 + N[1] * w1 + N[2] * w2 + k1 * v2 - k2 * v1
    d[1] = N[3] * w0 + N[4] * w1 + N[5] * w2 + k2 * v0 - k0 * v2
    d[2] = N[6] * w0 + N[7] * w1 + N[8] * w2 + k0 * v1 - k1 * v0
    d[3] = -(k1 * w2 - k2 * w1)
    d[4] = -(k2 * w0 - k0 * w2)
    d[5] = -(k0 * w1 - k1 * w0)


cdef inline void sweep_joint(const KModel* m, KWork* w, int i, double* X, const double* Xp,
                             double* C, const double* ag) noexcept nogil:
    """Body i behind its one-dof joint: its pose X[0:12] from the parent's row Xp (NULL: the
    root, whose parent is the sweep's frame at rest with acceleration ag), the joint's C row
    (S, Ψ̇, D, Ψ̈) and the body's v (X[12:18]) and a (X[18:24]); q, q̇, q̈ from w.qj."""
    cdef int nb = m.nb, a, b, c
    cdef double* T = w.T + 12 * i
    cdef double u[6]
    cdef double t1[6]
    cdef double vl[6]
    cdef double al[6]
    cdef double qd, qdd
    joint_pose(m, i, w.qj[i], T)
    if Xp != NULL:
        for a in range(3):
            for b in range(3):
                X[3 * a + b] = (Xp[3 * a] * T[b] + Xp[3 * a + 1] * T[3 + b]
                                + Xp[3 * a + 2] * T[6 + b])
            X[9 + a] = (Xp[3 * a] * T[9] + Xp[3 * a + 1] * T[10] + Xp[3 * a + 2] * T[11]
                        + Xp[9 + a])
        for a in range(6):
            vl[a] = Xp[12 + a]
            al[a] = Xp[18 + a]
    else:
        for a in range(12):
            X[a] = T[a]
        for a in range(6):
            vl[a] = 0.0
            al[a] = ag[a]
    for a in range(6):
        u[a] = 0.0
    c = 0 if m.jtype[i] == REVOLUTE else 3
    u[c], u[c + 1], u[c + 2] = m.axis[3 * i], m.axis[3 * i + 1], m.axis[3 * i + 2]
    world_screw(X, u, C)
    ad_V(vl, C, C + 6)                       # Ψ̇ = v_λ × S
    ad_V(al, C, C + 18)
    ad_V(vl, C + 6, t1)
    qd = w.qj[nb + i]
    qdd = w.qj[2 * nb + i]
    for a in range(6):
        C[18 + a] += t1[a]                   # Ψ̈ = a_λ × S + v_λ × Ψ̇
        C[12 + a] = 2.0 * C[6 + a]           # D = Ψ̇ − S × v = 2Ψ̇
        X[12 + a] = vl[a] + C[a] * qd
        X[18 + a] = al[a] + C[a] * qdd + C[6 + a] * qd


cdef inline void body_forces(const KModel* m, const KWork* w, int i, double* X,
                             bint use_fx) noexcept nogil:
    """Body i's inertia I (X[24:37], in the frame of its pose X[0:12]), momentum h = I v,
    force f = I a + v ×* h − W (W: the applied wrench w.fx of body i, fixed in the body) and
    N + Nᵀ (X[49:61])."""
    cdef double t1[6]
    cdef int a
    body_inertia(m, i, X, X + 24)
    inertia_apply(X + 24, X + 12, X + 37)
    inertia_apply(X + 24, X + 18, X + 43)
    cross_force(X + 12, X + 37, X + 43, 1.0)
    if use_fx:
        wrench_to_world(X, w.fx + 6 * i, t1)
        for a in range(6):
            X[43 + a] -= t1[a]
    body_N(X + 24, X + 12, X + 49)
