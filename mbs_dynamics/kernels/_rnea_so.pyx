# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Second-order partial derivatives of inverse dynamics, compiled and exact: ∂²τ/∂q², ∂²τ/∂q̇²,
∂²τ/∂q∂q̇ and ∂M/∂q (the four tensors of Pinocchio's C++ ``ComputeRNEASecondOrderDerivatives``).

Route: forward-mode directional derivatives (a tangent pass, not finite differences) of the
world-frame first-order recursion of :mod:`mbs_dynamics.identification._derivatives` (seed 000
§6.1, eq. 16–18; Carpentier & Mansard, RSS 2018). That recursion writes, per velocity coordinate
j with world screw S_j, Ψ̇_j = v_λ × S_j, Ψ̈_j = a_λ × S_j + v_λ × Ψ̇_j, D_j, and per body the
world inertia I_k, momentum h_k, force f_k, N_k = I_k ad_{v_k} and their subtree composites,

    ∂τ_i/∂q_j = α_i·Ψ̈_j + β_i·Ψ̇_j,   ∂τ_i/∂q̇_j = α_i·D_j + β_i·S_j,   M_ij = α_i·S_j

(b(j) ⪯ b(i), α = I^C S, β = 𝔅^{Cᵀ} S) and, for b(i) a strict ancestor of b(j),
``S_i·g_q(j)``, ``S_i·g_v(j)``. One tangent pass per direction differentiates every factor by
the product rule, seeded geometrically:

* direction q_k (world screw ξ = S_k, body b = b(k)): each body of the subtree of b moves
  rigidly by ξ, so its screws and inertia get ``dS = ξ × S`` and
  ``d(m, h, Θ) = (0, ω × h + m v, ω̃Θ − Θω̃ + 2(h·v)1 − h vᵀ − v hᵀ)`` (ξ = (ω, v), h = m c and
  Θ about the world origin), its applied wrenches ``dW = ξ ×* W``; velocities and accelerations
  follow their recursions (``dv_i = dv_λ + dS_i q̇_i``, …). A floating base's six directions move
  the whole tree along ``S_r = Ad_{C_0} e_r`` (Pinocchio's ``q ⊕ δ = C_0 exp(δ)``, δ = (linear,
  angular) in the base frame), with ν held fixed in the base frame;
* direction q̇_k: the seed ``dq̇_k = 1`` (``dv_0 = S_r`` for a base coordinate), poses fixed.

Only q passes are run for a fixed base. ∂²τ/∂q∂q̇ is their tangent of ∂τ/∂q̇ (mixed partials
commute). ∂²τ/∂q̇² follows from ∂M/∂q by the Christoffel identity
``∂²τ_i/∂q̇_j∂q̇_k = ∂_k M_ij + ∂_j M_ik − ∂_i M_jk``: for the joint block always, since the base's
M does not depend on its pose in its own frame. A floating base adds one q̇ pass for each of its
six quasi-velocities (the Lie brackets). Inside the moving subtree a twist and a wrench that both
move rigidly keep their dot product, so those pairs use only the non-rigid parts
``δx = dx − ξ ⊙ x``, and ∂M_ij/∂q_k = 0 there. Two ancestors of b(k) share the subtree's
composite tangent, so each of their entries is one dot product. ∂²τ/∂q² is symmetric in (j, k)
except in the base's own 6 × 6 block, so only its columns j ≤ k are formed.

Cost: nv (+ 6) passes, each O(nb) 6×6 work plus O(nv·depth) dot products over the related
coordinates only (the subtree and ancestors of b(k)). That is O(nv²·depth) in all, the order of
the output (4·nv³ entries, most of them structurally zero off the ancestor pairs).
"""
import numpy as np
cimport numpy as cnp
from libc.string cimport memset

from mbs_dynamics.kernels._data cimport (finite_result, FREE, REVOLUTE, Data, KModel, KWork, claim,
                                         fresh_if_alias, load_fx, take_states, unclaim)
from mbs_dynamics.kernels._spatial cimport (ad_V, body_inertia, cross_force, dot6, joint_pose,
                                           load_rows, world_screw, wrench_to_world)

cnp.import_array()

# offsets in a body row (BS doubles) of the base values and, for the tangents, the same offsets
cdef enum:
    B_P = 0         # pose R (9, row-major), p (3) (the tangent row keeps ξ here)
    B_V = 12        # world twist (ω, v)
    B_A = 18        # world acceleration, gravity included
    B_I = 24        # inertia (m, h, Θ) about the world origin (13)
    B_H = 37        # momentum I v
    B_F = 43        # force I a + v ×* I v − W_ext
    B_N = 49        # N = I ad_v (36, row-major); in the composites N + Nᵀ
    B_C = 85        # the composites of B_I … B_N (61 doubles)
    B_W = 146       # the applied wrench in the world
    BS = 152
    NCOMP = 61
    C_S = 0         # per coordinate (CS doubles): S, Ψ̇, D, Ψ̈, α, β, g_q, g_v
    C_PD = 6
    C_D = 12
    C_PDD = 18
    C_AL = 24
    C_BE = 30
    C_GQ = 36
    C_GV = 42
    CS = 48


cdef inline void inertia_apply(const double* I, const double* x, double* d,
                               double c) noexcept nogil:
    """d += c · I x for I = (m, h, Θ): I x = (Θ ω + h × v, m v − h × ω)."""
    cdef double m = I[0]
    cdef const double* h = I + 1
    cdef const double* Th = I + 4
    cdef double w0 = x[0], w1 = x[1], w2 = x[2], v0 = x[3], v1 = x[4], v2 = x[5]
    d[0] += c * (Th[0] * w0 + Th[1] * w1 + Th[2] * w2 + h[1] * v2 - h[2] * v1)
    d[1] += c * (Th[3] * w0 + Th[4] * w1 + Th[5] * w2 + h[2] * v0 - h[0] * v2)
    d[2] += c * (Th[6] * w0 + Th[7] * w1 + Th[8] * w2 + h[0] * v1 - h[1] * v0)
    d[3] += c * (m * v0 - (h[1] * w2 - h[2] * w1))
    d[4] += c * (m * v1 - (h[2] * w0 - h[0] * w2))
    d[5] += c * (m * v2 - (h[0] * w1 - h[1] * w0))


cdef inline void cross_add(const double* V, const double* s, double* d) noexcept nogil:
    """d += V × s (ad_V s)."""
    cdef double t[6]
    ad_V(V, s, t)
    cdef int a
    for a in range(6):
        d[a] += t[a]


cdef inline void ad_sub(const double* V, const double* s, double* d) noexcept nogil:
    """d −= V × s."""
    cdef double t[6]
    ad_V(V, s, t)
    cdef int a
    for a in range(6):
        d[a] -= t[a]


cdef void rigid_inertia(const double* x, const double* I, double* d) noexcept nogil:
    """d = the tangent of I = (m, h, Θ) (about the world origin) when its body moves by the world
    twist x = (ω, v): (0, ω × h + m v, ω̃Θ − Θω̃ + 2(h·v) 1 − h vᵀ − v hᵀ)."""
    cdef const double* h = I + 1
    cdef const double* Th = I + 4
    cdef double W[9]
    cdef double hv = h[0] * x[3] + h[1] * x[4] + h[2] * x[5]
    cdef int a, b
    W[0], W[1], W[2] = 0.0, -x[2], x[1]
    W[3], W[4], W[5] = x[2], 0.0, -x[0]
    W[6], W[7], W[8] = -x[1], x[0], 0.0
    d[0] = 0.0
    d[1] = x[1] * h[2] - x[2] * h[1] + I[0] * x[3]
    d[2] = x[2] * h[0] - x[0] * h[2] + I[0] * x[4]
    d[3] = x[0] * h[1] - x[1] * h[0] + I[0] * x[5]
    for a in range(3):
        for b in range(3):
            d[4 + 3 * a + b] = (W[3 * a] * Th[b] + W[3 * a + 1] * Th[3 + b]
                                + W[3 * a + 2] * Th[6 + b] - Th[3 * a] * W[b]
                                - Th[3 * a + 1] * W[3 + b] - Th[3 * a + 2] * W[6 + b]
                                - h[a] * x[3 + b] - x[3 + a] * h[b])
        d[4 + 4 * a] += 2.0 * hv


cdef void body_N(const double* I, const double* v, double* N, bint add) noexcept nogil:
    """N (+)= I ad_v (6×6 row-major) = [[Θ ω̃ + h̃ ṽ, h̃ ω̃], [−h̃ ω̃ + m ṽ, m ω̃]] (bilinear in
    I and v)."""
    cdef double W[9]
    cdef double L[9]
    cdef double H[9]
    cdef const double* Th = I + 4
    cdef double m = I[0]
    cdef int a, b
    cdef double hw, tw, hl
    if not add:
        memset(N, 0, 36 * sizeof(double))
    W[0], W[1], W[2] = 0.0, -v[2], v[1]
    W[3], W[4], W[5] = v[2], 0.0, -v[0]
    W[6], W[7], W[8] = -v[1], v[0], 0.0
    L[0], L[1], L[2] = 0.0, -v[5], v[4]
    L[3], L[4], L[5] = v[5], 0.0, -v[3]
    L[6], L[7], L[8] = -v[4], v[3], 0.0
    H[0], H[1], H[2] = 0.0, -I[3], I[2]
    H[3], H[4], H[5] = I[3], 0.0, -I[1]
    H[6], H[7], H[8] = -I[2], I[1], 0.0
    for a in range(3):
        for b in range(3):
            tw = Th[3 * a] * W[b] + Th[3 * a + 1] * W[3 + b] + Th[3 * a + 2] * W[6 + b]
            hl = H[3 * a] * L[b] + H[3 * a + 1] * L[3 + b] + H[3 * a + 2] * L[6 + b]
            hw = H[3 * a] * W[b] + H[3 * a + 1] * W[3 + b] + H[3 * a + 2] * W[6 + b]
            N[6 * a + b] += tw + hl
            N[6 * a + 3 + b] += hw
            N[6 * (3 + a) + b] += -hw + m * L[3 * a + b]
            N[6 * (3 + a) + 3 + b] += m * W[3 * a + b]


cdef inline void N_sym(const double* N, const double* x, double* d, double c) noexcept nogil:
    """d += c (N + Nᵀ) x, with the composite's N + Nᵀ stored (symmetrised by :func:`symmetrise`)."""
    cdef int a, b
    cdef double r
    for a in range(6):
        r = 0.0
        for b in range(6):
            r += N[6 * a + b] * x[b]
        d[a] += c * r


cdef inline void symmetrise(double* N) noexcept nogil:
    """N ← N + Nᵀ (6×6 row-major, in place)."""
    cdef int a, b
    cdef double t
    for a in range(6):
        N[7 * a] *= 2.0
        for b in range(a + 1, 6):
            t = N[6 * a + b] + N[6 * b + a]
            N[6 * a + b] = t
            N[6 * b + a] = t


cdef inline void B_apply(const double* Y, const double* x, double* d, double c) noexcept nogil:
    """d += c 𝔅 x = c (x ×* h − (N + Nᵀ) x) with the momentum h and N of the block Y
    (Y points at B_I of a body row or at its composite)."""
    cross_force(x, Y + (B_H - B_I), d, c)
    N_sym(Y + (B_N - B_I), x, d, -c)


cdef inline void Bt_apply(const double* Y, const double* x, double* d, double c) noexcept nogil:
    """d += c 𝔅ᵀ x = c (−x ×* h − (N + Nᵀ) x)."""
    cross_force(x, Y + (B_H - B_I), d, -c)
    N_sym(Y + (B_N - B_I), x, d, -c)


cdef inline void coord_terms(const double* Y, const double* c, double* d,
                             bint gq) noexcept nogil:
    """d += (α, β, g_q, g_v) of a coordinate row c (S, Ψ̇, D, Ψ̈) against the composite block Y:
    α = I^C S, β = 𝔅^{Cᵀ} S, g_q = I^C Ψ̈ + S ×* F^C + 𝔅^C Ψ̇ (if ``gq``), g_v = I^C D + 𝔅^C S.
    Bilinear in (Y, c): the tangent is ``coord_terms(Y, dc) + coord_terms(dY, c)``."""
    inertia_apply(Y, c + C_S, d + C_AL, 1.0)
    Bt_apply(Y, c + C_S, d + C_BE, 1.0)
    if gq:
        inertia_apply(Y, c + C_PDD, d + C_GQ, 1.0)
        cross_force(c + C_S, Y + (B_F - B_I), d + C_GQ, 1.0)
        B_apply(Y, c + C_PD, d + C_GQ, 1.0)
    inertia_apply(Y, c + C_D, d + C_GV, 1.0)
    B_apply(Y, c + C_S, d + C_GV, 1.0)


cdef inline int coord_body(const KModel* m, int c) noexcept nogil:
    return 0 if c < 6 * m.fb else c - 5 * m.fb


cdef void base_pass(const KModel* m, KWork* w, double* X, double* C, bint use_fx) noexcept nogil:
    """The first-order recursion's values at (q, q̇, q̈) (loaded in w): per body X (nb, BS), per
    coordinate C (nv, CS), composites included."""
    cdef int nb = m.nb, nv = m.nv, fb = m.fb, i, a, b, r, par, ci, bi, c
    cdef double* Xi
    cdef double* Xp
    cdef double* Ci
    cdef double* T
    cdef double qd, qdd
    cdef double u[6]
    cdef double t1[6]
    cdef double ag[6]
    cdef double vl[6]
    cdef double al[6]
    ag[0], ag[1], ag[2] = 0.0, 0.0, 0.0
    ag[3], ag[4], ag[5] = -m.g[0], -m.g[1], -m.g[2]
    for i in range(nb):
        Xi = X + BS * i
        par = m.parent[i]
        if m.jtype[i] == FREE:
            for a in range(12):
                Xi[B_P + a] = w.T[a]
            world_screw(Xi, w.nu, Xi + B_V)
            world_screw(Xi, w.nu + 6, Xi + B_A)
            for a in range(6):
                Xi[B_A + a] += ag[a]
            for r in range(6):
                Ci = C + CS * r
                for a in range(6):
                    u[a] = 0.0
                u[3 + r if r < 3 else r - 3] = 1.0   # (linear, angular) order
                world_screw(Xi, u, Ci + C_S)
                for a in range(6):
                    Ci[C_PD + a] = 0.0
                ad_V(Xi + B_V, Ci + C_S, Ci + C_D)   # D = v_0 × S
                ad_V(ag, Ci + C_S, Ci + C_PDD)       # Ψ̈ = a_0 × S
        else:
            T = w.T + 12 * i
            joint_pose(m, i, w.qj[i], T)
            if par >= 0:
                Xp = X + BS * par
                for a in range(3):
                    for b in range(3):
                        Xi[3 * a + b] = (Xp[3 * a] * T[b] + Xp[3 * a + 1] * T[3 + b]
                                         + Xp[3 * a + 2] * T[6 + b])
                    Xi[9 + a] = (Xp[3 * a] * T[9] + Xp[3 * a + 1] * T[10] + Xp[3 * a + 2] * T[11]
                                 + Xp[9 + a])
                for a in range(6):
                    vl[a] = Xp[B_V + a]
                    al[a] = Xp[B_A + a]
            else:
                for a in range(12):
                    Xi[a] = T[a]
                for a in range(6):
                    vl[a] = 0.0
                    al[a] = ag[a]
            Ci = C + CS * (i + 5 * fb)
            for a in range(6):
                u[a] = 0.0
            c = 0 if m.jtype[i] == REVOLUTE else 3
            u[c], u[c + 1], u[c + 2] = m.axis[3 * i], m.axis[3 * i + 1], m.axis[3 * i + 2]
            world_screw(Xi, u, Ci + C_S)
            ad_V(vl, Ci + C_S, Ci + C_PD)            # Ψ̇ = v_λ × S
            ad_V(al, Ci + C_S, Ci + C_PDD)
            ad_V(vl, Ci + C_PD, t1)
            qd = w.qj[nb + i]
            qdd = w.qj[2 * nb + i]
            for a in range(6):
                Ci[C_PDD + a] += t1[a]               # Ψ̈ = a_λ × S + v_λ × Ψ̇
                Ci[C_D + a] = 2.0 * Ci[C_PD + a]
                Xi[B_V + a] = vl[a] + Ci[C_S + a] * qd
                Xi[B_A + a] = al[a] + Ci[C_S + a] * qdd + Ci[C_PD + a] * qd
        body_inertia(m, i, Xi, Xi + B_I)
        for a in range(12):
            Xi[B_H + a] = 0.0
        inertia_apply(Xi + B_I, Xi + B_V, Xi + B_H, 1.0)
        inertia_apply(Xi + B_I, Xi + B_A, Xi + B_F, 1.0)
        cross_force(Xi + B_V, Xi + B_H, Xi + B_F, 1.0)
        if use_fx:
            wrench_to_world(Xi, w.fx + 6 * i, Xi + B_W)
            for a in range(6):
                Xi[B_F + a] -= Xi[B_W + a]
        else:
            for a in range(6):
                Xi[B_W + a] = 0.0
        body_N(Xi + B_I, Xi + B_V, Xi + B_N, False)
        for a in range(NCOMP):
            Xi[B_C + a] = Xi[B_I + a]
    for i in range(nb - 1, 0, -1):
        par = m.parent[i]
        if par >= 0:
            Xi = X + BS * i
            Xp = X + BS * par
            for a in range(NCOMP):
                Xp[B_C + a] += Xi[B_C + a]
    for i in range(nb):
        symmetrise(X + BS * i + B_C + (B_N - B_I))
    # α = I^C S, β = 𝔅^{Cᵀ} S, g_q = S ×* F^C + I^C Ψ̈ + 𝔅^C Ψ̇, g_v = I^C D + 𝔅^C S
    for ci in range(nv):
        bi = coord_body(m, ci)
        Xi = X + BS * bi + B_C
        Ci = C + CS * ci
        for a in range(24):
            Ci[C_AL + a] = 0.0
        coord_terms(Xi, Ci, Ci, True)


cdef void tangent_pass(const KModel* m, KWork* w, const double* X, const double* C, double* dX,
                       double* dC, double* eC, int* mark, int k, bint vel, double* Tq, double* Tv,
                       double* TM, long sbv, long offv) noexcept nogil:
    """The directional derivative of (∂τ/∂q, ∂τ/∂q̇, M) along q_k (``vel`` false) or q̇_k,
    written straight into the output tensors (zeroed by the caller; only the pairs of related
    bodies written): entry (i, j) of the Tq and TM slices at ``[i, j, k]``, of Tv at
    ``i·nv² + j·sbv + offv``. Along
    q̇_k only Tv is formed (∂²τ/∂q̇²; the other two come from the q passes). Along q_k the
    columns j > k of Tq are skipped where ∂²τ/∂q_j∂q_k is symmetric (all but the base's own
    6 × 6 block; :func:`second_order` mirrors them).
    mark (nb): 1 in the subtree of b(k), 2 on its strict ancestors, 0 elsewhere. eC (nv, CS):
    for the subtree's coordinates the non-rigid parts δx = dx − ξ ⊙ x (ξ × for twists, ξ ×* for
    wrenches; ξ = 0 along q̇): a dot product of a twist and a wrench that both move rigidly
    has zero tangent, so the pairs inside the subtree need only these (δα = δS = 0)."""
    cdef int nb = m.nb, nv = m.nv, fb = m.fb, i, a, r, par, ci, cj, bi, b, c0, c1
    cdef int rb = coord_body(m, k)
    cdef long nn = nv * nv
    cdef const double* Xi
    cdef double* dXi
    cdef double* dXp
    cdef const double* Ci
    cdef double* dCi
    cdef const double* Cj
    cdef double* dCj
    cdef const double* xi = C + CS * k + C_S
    cdef const double* Y
    cdef double* dY
    cdef double qd, qdd, dqd
    cdef double ag[6]
    cdef double vl[6]
    cdef double al[6]
    cdef double dvl[6]
    cdef double dal[6]
    cdef bint sub
    cdef int nbase = 6 * fb
    cdef double z6[6]
    cdef const double* rig
    cdef double* eCi
    cdef const double* eCj
    for a in range(6):
        z6[a] = 0.0
    rig = xi
    if vel:
        rig = &z6[0]
    ag[0], ag[1], ag[2] = 0.0, 0.0, 0.0
    ag[3], ag[4], ag[5] = -m.g[0], -m.g[1], -m.g[2]
    for i in range(nb):
        mark[i] = 0
    b = rb
    while b >= 0:
        mark[b] = 2
        b = m.parent[b]
    mark[rb] = 1
    for i in range(rb + 1, nb):
        if m.parent[i] >= 0 and mark[m.parent[i]] == 1:
            mark[i] = 1
    memset(dX, 0, nb * BS * sizeof(double))
    # ---- forward over the subtree of b(k) (every other body keeps zero tangents)
    for i in range(rb, nb):
        if mark[i] != 1:
            continue
        Xi = X + BS * i
        dXi = dX + BS * i
        sub = not vel                                 # the body moves rigidly along ξ
        par = m.parent[i]
        if m.jtype[i] == FREE:
            for r in range(6):
                Ci = C + CS * r
                dCi = dC + CS * r
                memset(dCi, 0, 24 * sizeof(double))
                if sub:
                    ad_V(xi, Ci + C_S, dCi + C_S)
                    ad_V(ag, dCi + C_S, dCi + C_PDD)
            if sub:
                ad_V(xi, Xi + B_V, dXi + B_V)
                for a in range(6):
                    al[a] = Xi[B_A + a] - ag[a]
                ad_V(xi, al, dXi + B_A)
            else:                                     # k < 6: dv_0 = S_k
                for a in range(6):
                    dXi[B_V + a] = xi[a]
            for r in range(6):
                Ci = C + CS * r
                dCi = dC + CS * r
                ad_V(dXi + B_V, Ci + C_S, dCi + C_D)
                cross_add(Xi + B_V, dCi + C_S, dCi + C_D)
        else:
            if par >= 0:
                for a in range(6):
                    vl[a] = X[BS * par + B_V + a]
                    al[a] = X[BS * par + B_A + a]
                    dvl[a] = dX[BS * par + B_V + a]
                    dal[a] = dX[BS * par + B_A + a]
            else:
                for a in range(6):
                    vl[a] = 0.0
                    al[a] = ag[a]
                    dvl[a] = 0.0
                    dal[a] = 0.0
            ci = i + 5 * fb
            Ci = C + CS * ci
            dCi = dC + CS * ci
            memset(dCi, 0, 24 * sizeof(double))
            if sub:
                ad_V(xi, Ci + C_S, dCi + C_S)
            ad_V(dvl, Ci + C_S, dCi + C_PD)           # dΨ̇ = dv_λ × S + v_λ × dS
            cross_add(vl, dCi + C_S, dCi + C_PD)
            ad_V(dal, Ci + C_S, dCi + C_PDD)          # dΨ̈ = da_λ × S + a_λ × dS
            cross_add(al, dCi + C_S, dCi + C_PDD)     #      + dv_λ × Ψ̇ + v_λ × dΨ̇
            cross_add(dvl, Ci + C_PD, dCi + C_PDD)
            cross_add(vl, dCi + C_PD, dCi + C_PDD)
            qd = w.qj[nb + i]
            qdd = w.qj[2 * nb + i]
            dqd = 1.0 if (vel and ci == k) else 0.0
            for a in range(6):
                dCi[C_D + a] = 2.0 * dCi[C_PD + a]
                dXi[B_V + a] = dvl[a] + dCi[C_S + a] * qd + Ci[C_S + a] * dqd
                dXi[B_A + a] = (dal[a] + dCi[C_S + a] * qdd + dCi[C_PD + a] * qd
                                + Ci[C_PD + a] * dqd)
        # body terms: dI, dh = dI v + I dv, df = dI a + I da + dv ×* h + v ×* dh − dW, dN
        if sub:
            rigid_inertia(xi, Xi + B_I, dXi + B_I)
            inertia_apply(dXi + B_I, Xi + B_V, dXi + B_H, 1.0)
            inertia_apply(dXi + B_I, Xi + B_A, dXi + B_F, 1.0)
            cross_force(xi, Xi + B_W, dXi + B_F, -1.0)
            body_N(dXi + B_I, Xi + B_V, dXi + B_N, True)
        inertia_apply(Xi + B_I, dXi + B_V, dXi + B_H, 1.0)
        inertia_apply(Xi + B_I, dXi + B_A, dXi + B_F, 1.0)
        cross_force(dXi + B_V, Xi + B_H, dXi + B_F, 1.0)
        cross_force(Xi + B_V, dXi + B_H, dXi + B_F, 1.0)
        body_N(Xi + B_I, dXi + B_V, dXi + B_N, True)
        for a in range(NCOMP):
            dXi[B_C + a] = dXi[B_I + a]
    # ---- composites: the subtree's sums, carried up to the ancestors of b(k)
    for i in range(nb - 1, 0, -1):
        par = m.parent[i]
        if par >= 0 and mark[i] != 0:
            dXi = dX + BS * i
            dXp = dX + BS * par
            for a in range(NCOMP):
                dXp[B_C + a] += dXi[B_C + a]
    for i in range(nb):
        if mark[i] != 0:
            symmetrise(dX + BS * i + B_C + (B_N - B_I))
    # ---- per related coordinate: dα, dβ, dg_q, dg_v (product rule)
    for ci in range(nv):
        bi = coord_body(m, ci)
        if mark[bi] == 0:
            continue
        Ci = C + CS * ci
        dCi = dC + CS * ci
        if mark[bi] == 2:                             # an ancestor: S, Ψ̇, D, Ψ̈ unchanged
            memset(dCi, 0, 24 * sizeof(double))
        memset(dCi + C_AL, 0, 24 * sizeof(double))
        Y = X + BS * bi + B_C
        dY = dX + BS * bi + B_C
        if mark[bi] == 1:                             # S, Ψ̇, D, Ψ̈ move (ancestors: fixed)
            coord_terms(Y, dCi, dCi, not vel)
        coord_terms(dY, Ci, dCi, not vel)
        if mark[bi] == 1:
            eCi = eC + CS * ci
            for a in range(6):
                eCi[C_PD + a] = dCi[C_PD + a]
                eCi[C_D + a] = dCi[C_D + a]
                eCi[C_PDD + a] = dCi[C_PDD + a]
                eCi[C_BE + a] = dCi[C_BE + a]
                eCi[C_GQ + a] = dCi[C_GQ + a]
                eCi[C_GV + a] = dCi[C_GV + a]
            ad_sub(rig, Ci + C_PD, eCi + C_PD)
            ad_sub(rig, Ci + C_D, eCi + C_D)
            ad_sub(rig, Ci + C_PDD, eCi + C_PDD)
            cross_force(rig, Ci + C_BE, eCi + C_BE, -1.0)
            cross_force(rig, Ci + C_GQ, eCi + C_GQ, -1.0)
            cross_force(rig, Ci + C_GV, eCi + C_GV, -1.0)
        elif not vel:
            # an ancestor of b(k): α, β, g move only through the composite tangent dY, the
            # same for all of them, so for two ancestors ci ⪰ cj
            # ∂/∂q_k (α_i·Ψ̈_j + β_i·Ψ̇_j) = S_i·(dI^C Ψ̈_j + d𝔅^C Ψ̇_j)
            #                             = S_i·(dg_q(j) − S_j ×* dF^C)
            eCi = eC + CS * ci
            for a in range(6):
                eCi[C_GQ + a] = dCi[C_GQ + a]
            cross_force(Ci + C_S, dY + (B_F - B_I), eCi + C_GQ, -1.0)
    # ---- the entries: the first-order pairs, differentiated
    for ci in range(nv):
        bi = coord_body(m, ci)
        if mark[bi] == 0:
            continue
        Ci = C + CS * ci
        dCi = dC + CS * ci
        b = bi
        while b >= 0:
            if m.jtype[b] == FREE:
                c0, c1 = 0, 6
            else:
                c0, c1 = b + 5 * fb, b + 5 * fb + 1
            for cj in range(c0, c1):
                Cj = C + CS * cj
                dCj = dC + CS * cj
                if mark[b] == 1:                      # both move: the non-rigid parts only
                    eCj = eC + CS * cj
                    eCi = eC + CS * ci
                    if not vel and (cj <= k or cj < nbase):
                        Tq[ci * nn + cj * nv + k] = (dot6(Ci + C_AL, eCj + C_PDD)
                                                     + dot6(eCi + C_BE, Cj + C_PD)
                                                     + dot6(Ci + C_BE, eCj + C_PD))
                    Tv[ci * nn + cj * sbv + offv] = (dot6(Ci + C_AL, eCj + C_D)
                                                     + dot6(eCi + C_BE, Cj + C_S))
                    # TM stays 0: M_ij is invariant when the subtree holding i and j moves
                    # rigidly (the two dot products cancel analytically)
                elif mark[bi] == 2 and not vel:       # two ancestors: one dot product each
                    Tq[ci * nn + cj * nv + k] = dot6(Ci + C_S, eC + CS * cj + C_GQ)
                    Tv[ci * nn + cj * sbv + offv] = dot6(Ci + C_S, dCj + C_GV)
                    TM[ci * nn + cj * nv + k] = dot6(Ci + C_S, dCj + C_AL)
                else:
                    if not vel and (cj <= k or cj < nbase):
                        Tq[ci * nn + cj * nv + k] = (dot6(dCi + C_AL, Cj + C_PDD)
                                                     + dot6(dCi + C_BE, Cj + C_PD))
                    Tv[ci * nn + cj * sbv + offv] = (dot6(dCi + C_AL, Cj + C_D)
                                                     + dot6(dCi + C_BE, Cj + C_S))
                    if not vel:
                        TM[ci * nn + cj * nv + k] = dot6(dCi + C_AL, Cj + C_S)
                if b != bi:                           # row cj: a strict ancestor
                    if mark[b] == 1:
                        if not vel and (ci <= k or ci < nbase):
                            Tq[cj * nn + ci * nv + k] = dot6(Cj + C_S, eCi + C_GQ)
                        Tv[cj * nn + ci * sbv + offv] = dot6(Cj + C_S, eCi + C_GV)
                    else:
                        if not vel and (ci <= k or ci < nbase):
                            Tq[cj * nn + ci * nv + k] = dot6(Cj + C_S, dCi + C_GQ)
                        Tv[cj * nn + ci * sbv + offv] = dot6(Cj + C_S, dCi + C_GV)
                    if not vel:
                        TM[cj * nn + ci * nv + k] = TM[ci * nn + cj * nv + k]
            b = m.parent[b]


cdef void second_order(const KModel* m, KWork* w, double* work, int* mark, bint use_fx,
                       double* dqq, double* dvv, double* dqv, double* daq) noexcept nogil:
    """The four (nv, nv, nv) tensors, [i, j, k] = ∂/∂x_k (∂τ_i/∂y_j), at the state loaded in w;
    dqq … daq zeroed by the caller. work: the scratch of :func:`work_size`."""
    cdef int nb = m.nb, nv = m.nv, k, i, j
    cdef long nn = nv * nv
    cdef double* X = work
    cdef double* dX = X + nb * BS
    cdef double* C = dX + nb * BS
    cdef double* dC = C + nv * CS
    cdef double* eC = dC + nv * CS
    cdef double* S
    cdef double* M
    cdef int nbase = 6 * m.fb
    base_pass(m, w, X, C, use_fx)
    # q passes: ∂²τ/∂q² (columns j ≤ k), ∂M/∂q, and ∂/∂q_k ∂τ_i/∂q̇_j = dqv[i, k, j]
    for k in range(nv):
        tangent_pass(m, w, X, C, dX, dC, eC, mark, k, False, dqq, dqv, daq, 1, k * nv)
    for i in range(nv):
        S = dqq + i * nn                                      # the skipped symmetric half
        M = daq + i * nn
        for j in range(nbase, nv):
            for k in range(j):
                S[j * nv + k] = S[k * nv + j]
        # Christoffel (i any; j, k joints; the base's ∂M/∂q = 0 in its own frame):
        # ∂²τ_i/∂q̇_j∂q̇_k = Γ_ijk + Γ_ikj = ∂_k M_ij + ∂_j M_ik − ∂_i M_jk
        for j in range(nbase, nv):
            for k in range(nbase, nv):
                dvv[i * nn + j * nv + k] = (M[j * nv + k] + M[k * nv + j]
                                            - daq[(j * nv + k) * nv + i])
    # the base's quasi-velocities (their Lie brackets): one q̇ pass per base coordinate, and
    # the symmetric entries from it
    for k in range(nbase):
        tangent_pass(m, w, X, C, dX, dC, eC, mark, k, True, dqq, dvv, daq, nv, k)
    for i in range(nv):
        for j in range(nbase, nv):
            for k in range(nbase):
                dvv[i * nn + k * nv + j] = dvv[i * nn + j * nv + k]


cdef Py_ssize_t work_size(const KModel* m):
    return 2 * m.nb * BS + 3 * m.nv * CS + m.nb


cdef object _scratch(Data d):
    """The kernel's scratch, kept in the Data's arrays (made once per Data and size)."""
    cdef Py_ssize_t size = work_size(&d.m)
    s = d.arrays.get("rnea_so")
    if s is None or s.shape[0] != size:
        s = np.zeros(size)
        d.arrays["rnea_so"] = s
    return s


def _second_order_derivatives(Data d, q, qd, qdd, fx=None, out=None):
    cdef KModel* m = &d.m
    cdef bint batch = not (type(q) is np.ndarray and (<cnp.ndarray> q).ndim == 1) \
        and np.ndim(q) == 2
    q, qd, qdd = take_states(m, q, qd, qdd, "qd", "qdd", batch)
    cdef Py_ssize_t nv = m.nv, N = <Py_ssize_t> q.shape[0] if batch else 1, s
    cdef Py_ssize_t n3 = nv * nv * nv
    cdef tuple shape = (4, N, nv, nv, nv)
    if not batch:
        shape = (4, nv, nv, nv)
    if out is None:
        out = np.empty(shape)
    elif not (type(out) is np.ndarray and out.dtype == np.float64 and out.flags.c_contiguous
              and out.flags.writeable and out.shape == shape):
        raise ValueError(f"out must be a writable float64 C-contiguous array of shape {shape}")
    res = fresh_if_alias(out, (q, qd, qdd))
    res.fill(0.0)
    cdef bint use_fx = fx is not None
    if use_fx:
        if batch:
            raise ValueError("f_ext is not supported with batch inputs")
        load_fx(d, fx, 1)
    scratch = _scratch(d)
    cdef double* work = <double*> cnp.PyArray_DATA(scratch)
    cdef int* mark = <int*> (work + (work_size(m) - m.nb))
    cdef KWork* w = &d.w
    cdef double* pq = <double*> cnp.PyArray_DATA(q)
    cdef double* pv = <double*> cnp.PyArray_DATA(qd)
    cdef double* pa = <double*> cnp.PyArray_DATA(qdd)
    cdef double* po = <double*> cnp.PyArray_DATA(res)
    with nogil:
        for s in range(N):
            load_rows(m, w, pq + s * m.nq, pv + s * nv, pa + s * nv)
            second_order(m, w, work, mark, use_fx, po + s * n3, po + (N + s) * n3,
                         po + (2 * N + s) * n3, po + (3 * N + s) * n3)
    if res is not out:
        out[...] = res
    return out[0], out[1], out[2], out[3]


def second_order_derivatives(Data d, q, qd, qdd, fx=None, out=None):
    """(∂²τ/∂q², ∂²τ/∂q̇², ∂²τ/∂q∂q̇, ∂M/∂q), each (nv, nv, nv) with [i, j, k] =
    ∂/∂x_k (∂τ_i/∂y_j), views of one (4, nv, nv, nv) array (``out`` if given); (N, ·) batches give
    (N, nv, nv, nv) views of one (4, N, nv, nv, nv) array. fx: optional body wrenches (1, nb, 6)
    (single samples)."""
    claim(d)
    try:
        return finite_result(_second_order_derivatives(d, q, qd, qdd, fx, out),
                             "inverse_dynamics_second_order_derivatives")
    finally:
        unclaim(d)
