# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Compiled closed forms of seed 000 §2 and §5.2: the kinematic Hessian of a frame and the
Christoffel symbols of the mass matrix, from Lie brackets of the spatial joint screws
(mathematics and conventions: :mod:`mbs_dynamics.kinematics.hessian` and
:mod:`mbs_dynamics.kinematics.christoffel`, whose NumPy versions these follow line by line).

Columns follow the public velocity vector: a floating base's six first (linear, angular), each
``Ad_{C_0} e_a``; joint i's column ``Ad_{C_i} X_i`` (seed 000 eq. 71b). Kernel bodies are
numbered depth-first (parent < child), so the deepest of bodies on one branch is the largest
index. Scratch is malloc'ed per call (O(nb² + nb nv + nv²) doubles); no Python objects inside.
"""
import numpy as np
cimport numpy as cnp
from libc.stdlib cimport calloc, free, malloc

from mbs_dynamics.kernels._data cimport (finite_result, FREE, REVOLUTE, Data, KModel, KWork, as_input, claim,
                                         unclaim,
                                         as_out, check_finite, check_quat)
from mbs_dynamics.kernels._spatial cimport ad_V, compose, joint_pose, quat_pose, screw

cnp.import_array()


cdef int world_poses(const KModel* m, KWork* w, const double* q, double* Cw) noexcept nogil:
    """World poses Cw (nb, 12) of all kernel bodies at q (nq,)."""
    cdef int nb = m.nb, i, a
    cdef double* T
    for i in range(nb):
        T = w.T + 12 * i
        if m.jtype[i] == FREE:
            quat_pose(q, Cw)
            continue
        joint_pose(m, i, q[i + 6 * m.fb], T)
        if m.parent[i] >= 0:
            compose(Cw + 12 * m.parent[i], T, Cw + 12 * i)
        else:
            for a in range(12):
                Cw[12 * i + a] = T[a]
    return 0


cdef int columns(const KModel* m, const double* Cw, double* J, int* cb) noexcept nogil:
    """Spatial screws J (nv, 6) of every velocity column and the body of each, cb (nv,)."""
    cdef int i, a, c = 0
    cdef double e[3]
    if m.fb:
        for a in range(6):
            e[0] = 0.0
            e[1] = 0.0
            e[2] = 0.0
            e[a % 3] = 1.0
            screw(Cw, e, a >= 3, J + 6 * a)
            cb[a] = 0
        c = 6
    for i in range(m.fb, m.nb):
        screw(Cw + 12 * i, m.axis + 3 * i, m.jtype[i] == REVOLUTE, J + 6 * c)
        cb[c] = i
        c += 1
    return 0


cdef inline void shift_hybrid(const double* r, const double* J, double* Jh) noexcept nogil:
    """Ad_{(I, −r)} J: (ω, v − r × ω)."""
    Jh[0], Jh[1], Jh[2] = J[0], J[1], J[2]
    Jh[3] = J[3] - (r[1] * J[2] - r[2] * J[1])
    Jh[4] = J[4] - (r[2] * J[0] - r[0] * J[2])
    Jh[5] = J[5] - (r[0] * J[1] - r[1] * J[0])


cdef inline void to_frame(const double* C, const double* s, double* d) noexcept nogil:
    """d = Ad_{C}^{−1} s: (Rᵀ ω, Rᵀ (v − p × ω))."""
    cdef double t0 = s[3] - (C[10] * s[2] - C[11] * s[1])
    cdef double t1 = s[4] - (C[11] * s[0] - C[9] * s[2])
    cdef double t2 = s[5] - (C[9] * s[1] - C[10] * s[0])
    d[0] = C[0] * s[0] + C[3] * s[1] + C[6] * s[2]
    d[1] = C[1] * s[0] + C[4] * s[1] + C[7] * s[2]
    d[2] = C[2] * s[0] + C[5] * s[1] + C[8] * s[2]
    d[3] = C[0] * t0 + C[3] * t1 + C[6] * t2
    d[4] = C[1] * t0 + C[4] * t1 + C[7] * t2
    d[5] = C[2] * t0 + C[5] * t1 + C[8] * t2


cdef inline void put(double* out, int nv, int i, int k, const double* x, int rows) noexcept nogil:
    """out[:, i, k] = x in (linear, angular) rows; rows 0 all, 1 linear only, 2 angular only."""
    cdef Py_ssize_t s = <Py_ssize_t> nv * nv, o = <Py_ssize_t> i * nv + k
    if rows != 2:
        out[o] = x[3]
        out[s + o] = x[4]
        out[2 * s + o] = x[5]
    if rows != 1:
        out[3 * s + o] = x[0]
        out[4 * s + o] = x[1]
        out[5 * s + o] = x[2]


cdef int hessian_kernel(const KModel* m, KWork* w, int body, const double* S, const double* q,
                        int rep, double* out) noexcept nogil:
    """out (6, nv, nv) zero-initialised by the caller."""
    cdef int nb = m.nb, nv = m.nv, L = 0, b, i, k, a, pi, pk, ncol
    cdef Py_ssize_t z
    # one block: Cw (12 nb), J, Jh (6 nv each) doubles, then cb, cols (nv), onpath (nb) ints
    cdef double* Cw = <double*> malloc((12 * nb + 12 * nv) * sizeof(double)
                                       + (2 * nv + nb) * sizeof(int))
    if Cw == NULL:
        return -1
    cdef double* J = Cw + 12 * nb
    cdef double* Jh = J + 6 * nv
    cdef int* cb = <int*> (Jh + 6 * nv)
    cdef int* cols = cb + nv
    cdef int* onpath = cols + nv
    cdef double Cf[12]
    cdef double x[6]
    cdef double y[6]
    cdef double r[3]
    for z in range(6 * (<Py_ssize_t> nv) * nv):
        out[z] = 0.0
    for b in range(nb):
        onpath[b] = 0
    world_poses(m, w, q, Cw)
    columns(m, Cw, J, cb)
    # the frame's supporting bodies (position along the path: onpath = depth + 1)
    b = body
    while b >= 0:
        L += 1
        b = m.parent[b]
    b = body
    k = L
    while b >= 0:
        onpath[b] = k
        k -= 1
        b = m.parent[b]
    ncol = 0
    for i in range(nv):
        if onpath[cb[i]]:
            cols[ncol] = i
            ncol += 1
    if body >= 0:
        compose(Cw + 12 * body, S, Cf)
    else:
        for a in range(12):
            Cf[a] = S[a]
    r[0], r[1], r[2] = Cf[9], Cf[10], Cf[11]
    for a in range(ncol):
        shift_hybrid(r, J + 6 * cols[a], Jh + 6 * cols[a])
    for pi in range(ncol):
        i = cols[pi]
        for pk in range(ncol):
            k = cols[pk]
            # k ⪯ i: k's body at or above i's (same body: the base's six, or i itself)
            if rep == 1:
                if onpath[cb[k]] <= onpath[cb[i]]:
                    ad_V(J + 6 * k, J + 6 * i, x)          # [J_k, J_i]   (eq. 16)
                    put(out, nv, i, k, x, 0)
                continue
            if rep == 0 or rep == 3:
                if onpath[cb[i]] < onpath[cb[k]]:
                    ad_V(J + 6 * i, J + 6 * k, y)          # Ad⁻¹ [J_i, J_k]   (eq. 6)
                    to_frame(Cf, y, x)
                    put(out, nv, i, k, x, 0 if rep == 0 else 2)
                if rep == 0:
                    continue
            # hybrid (eq. 25–26): [k ⪯ i][J_k^h, J_i^h] + (0, ω_i × ṙ_k)
            if onpath[cb[k]] <= onpath[cb[i]]:
                ad_V(Jh + 6 * k, Jh + 6 * i, x)
            else:
                for a in range(6):
                    x[a] = 0.0
            x[3] += Jh[6 * i + 1] * Jh[6 * k + 5] - Jh[6 * i + 2] * Jh[6 * k + 4]
            x[4] += Jh[6 * i + 2] * Jh[6 * k + 3] - Jh[6 * i] * Jh[6 * k + 5]
            x[5] += Jh[6 * i] * Jh[6 * k + 4] - Jh[6 * i + 1] * Jh[6 * k + 3]
            put(out, nv, i, k, x, 0 if rep == 2 else 1)
    free(Cw)
    return 0


def kinematic_hessian(Data d, const int[::1] kb, const double[:, ::1] S12, int f, q, int rep,
                      out):
    """(the owner flag around :func:`_kinematic_hessian`)"""
    claim(d)
    try:
        return finite_result(_kinematic_hessian(d, kb, S12, f, q, rep, out), "kinematic_hessian")
    finally:
        unclaim(d)


cdef object _kinematic_hessian(Data d, const int[::1] kb, const double[:, ::1] S12, int f, q,
                               int rep, out):
    """H (6, nv, nv) (rows linear, angular) of frame f of a packed table (kernel body kb[f],
    −1 the fixed base; pose S12[f] = R row-major, p) at q (nq,); rep 0 body, 1 spatial,
    2 hybrid, 3 mixed."""
    cdef KModel* m = &d.m
    q = as_input(q, "q", 1, (m.nq,))
    check_finite(q, "q")
    check_quat(m, q, "q")
    out = as_out(out, "out", (6, m.nv, m.nv))
    cdef int rc
    cdef double* pq = <double*> cnp.PyArray_DATA(q)
    cdef double* po = <double*> cnp.PyArray_DATA(out)
    with nogil:
        rc = hessian_kernel(m, &d.w, kb[f], &S12[f, 0], pq, rep, po)
    if rc != 0:
        raise MemoryError()
    return out


# ---------------------------------------------------------------------------------------------
# Christoffel symbols
# ---------------------------------------------------------------------------------------------
cdef inline void world_inertia(const KModel* m, int i, const double* C, double* I) noexcept nogil:
    """Body i's inertia about the world origin, world axes: I = (m, h (3), Θ (9)) with
    h = m p + R h_b, Θ = R Θ_b Rᵀ − m p̃p̃ − p̃h̃_r − h̃_r p̃ (seed 000 eq. 72a)."""
    cdef const double* R = C
    cdef const double* Th = m.Th + 9 * i
    cdef const double* hb = m.h + 3 * i
    cdef double RT[9]
    cdef double hr[3]
    cdef double ms = m.mass[i], pp, ph
    cdef int r, c
    for r in range(3):
        for c in range(3):
            RT[3 * r + c] = R[3 * r] * Th[c] + R[3 * r + 1] * Th[3 + c] + R[3 * r + 2] * Th[6 + c]
    for r in range(3):
        for c in range(3):
            I[4 + 3 * r + c] = (RT[3 * r] * R[3 * c] + RT[3 * r + 1] * R[3 * c + 1]
                                + RT[3 * r + 2] * R[3 * c + 2])
        hr[r] = R[3 * r] * hb[0] + R[3 * r + 1] * hb[1] + R[3 * r + 2] * hb[2]
    pp = C[9] * C[9] + C[10] * C[10] + C[11] * C[11]
    ph = C[9] * hr[0] + C[10] * hr[1] + C[11] * hr[2]
    for r in range(3):
        I[4 + 4 * r] += ms * pp + 2.0 * ph
        for c in range(3):
            I[4 + 3 * r + c] -= ms * C[9 + r] * C[9 + c] + C[9 + r] * hr[c] + hr[r] * C[9 + c]
        I[1 + r] = ms * C[9 + r] + hr[r]
    I[0] = ms


cdef inline void inertia_apply(const double* I, const double* s, double* d) noexcept nogil:
    """d = M s, M = [[Θ, h̃], [−h̃, m I]], I = (m, h, Θ)."""
    cdef double w0 = s[0], w1 = s[1], w2 = s[2], v0 = s[3], v1 = s[4], v2 = s[5]
    cdef double h0 = I[1], h1 = I[2], h2 = I[3], ms = I[0]
    cdef const double* T = I + 4
    d[0] = T[0] * w0 + T[1] * w1 + T[2] * w2 + (h1 * v2 - h2 * v1)
    d[1] = T[3] * w0 + T[4] * w1 + T[5] * w2 + (h2 * v0 - h0 * v2)
    d[2] = T[6] * w0 + T[7] * w1 + T[8] * w2 + (h0 * v1 - h1 * v0)
    d[3] = ms * v0 - (h1 * w2 - h2 * w1)
    d[4] = ms * v1 - (h2 * w0 - h0 * w2)
    d[5] = ms * v2 - (h0 * w1 - h1 * w0)


cdef inline double dot6(const double* a, const double* b) noexcept nogil:
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3] + a[4] * b[4] + a[5] * b[5]


cdef int christoffel_kernel(const KModel* m, KWork* w, const double* q, double* out) noexcept nogil:
    """Γ (nv, nv, nv) into out: D[i,j,k] = ∂M_ij/∂q_k first (in out), then Γ in place of a copy."""
    cdef int nb = m.nb, nv = m.nv, i, j, k, a, bi, bj, bk, dm, p
    cdef Py_ssize_t n2 = <Py_ssize_t> nv * nv, n3 = n2 * nv, o
    cdef double* Cw = <double*> malloc(12 * nb * sizeof(double))
    cdef double* J = <double*> malloc(6 * nv * sizeof(double))
    cdef int* cb = <int*> malloc(nv * sizeof(int))
    cdef double* Ic = <double*> calloc(13 * nb, sizeof(double))
    cdef double* P = <double*> malloc(6 * (<Py_ssize_t> nb) * nv * sizeof(double))
    cdef double* B = <double*> malloc(6 * n2 * sizeof(double))
    cdef char* anc = <char*> calloc(nb * nb, sizeof(char))
    cdef double* D = <double*> malloc(n3 * sizeof(double))
    cdef double t
    if (Cw == NULL or J == NULL or cb == NULL or Ic == NULL or P == NULL or B == NULL
            or anc == NULL or D == NULL):
        free(Cw); free(J); free(cb); free(Ic); free(P); free(B); free(anc); free(D)
        return -1
    world_poses(m, w, q, Cw)
    columns(m, Cw, J, cb)
    # anc[a * nb + b]: body a is b or an ancestor of b
    for bi in range(nb):
        p = bi
        while p >= 0:
            anc[p * nb + bi] = 1
            p = m.parent[p]
    # composite inertias about the world origin, subtree sums (children after parents)
    for bi in range(nb):
        world_inertia(m, bi, Cw + 12 * bi, Ic + 13 * bi)
    for bi in range(nb - 1, -1, -1):
        p = m.parent[bi]
        if p >= 0:
            for a in range(13):
                Ic[13 * p + a] += Ic[13 * bi + a]
    for bi in range(nb):
        for j in range(nv):
            inertia_apply(Ic + 13 * bi, J + 6 * j, P + 6 * (bi * nv + j))
    for i in range(nv):
        for k in range(nv):
            ad_V(J + 6 * i, J + 6 * k, B + 6 * (i * nv + k))      # [J_i, J_k]
    # D[i, j, k] = [i ≺ k] [J_i, J_k]·(I_d J_j) + [j ≺ k] (I_d J_i)·[J_j, J_k]
    for i in range(nv):
        bi = cb[i]
        for j in range(nv):
            bj = cb[j]
            for k in range(nv):
                bk = cb[k]
                dm = bi if bi > bj else bj
                dm = dm if dm > bk else bk
                o = i * n2 + j * nv + k
                if not (anc[bi * nb + dm] and anc[bj * nb + dm] and anc[bk * nb + dm]):
                    D[o] = 0.0
                    continue
                t = 0.0
                if bi != bk and anc[bi * nb + bk]:
                    t += dot6(B + 6 * (i * nv + k), P + 6 * (dm * nv + j))
                if bj != bk and anc[bj * nb + bk]:
                    t += dot6(P + 6 * (dm * nv + i), B + 6 * (j * nv + k))
                D[o] = t
    for i in range(nv):
        for j in range(nv):
            for k in range(nv):
                out[i * n2 + j * nv + k] = 0.5 * (D[i * n2 + j * nv + k] + D[i * n2 + k * nv + j]
                                                  - D[j * n2 + k * nv + i])
    free(Cw); free(J); free(cb); free(Ic); free(P); free(B); free(anc); free(D)
    return 0


def christoffel(Data d, q, out):
    """(the owner flag around :func:`_christoffel`)"""
    claim(d)
    try:
        return finite_result(_christoffel(d, q, out), "christoffel")
    finally:
        unclaim(d)


cdef object _christoffel(Data d, q, out):
    """Γ (nv, nv, nv) at q (nq,)."""
    cdef KModel* m = &d.m
    q = as_input(q, "q", 1, (m.nq,))
    check_finite(q, "q")
    check_quat(m, q, "q")
    out = as_out(out, "out", (m.nv, m.nv, m.nv))
    cdef int rc
    cdef double* pq = <double*> cnp.PyArray_DATA(q)
    cdef double* po = <double*> cnp.PyArray_DATA(out)
    with nogil:
        rc = christoffel_kernel(m, &d.w, pq, po)
    if rc != 0:
        raise MemoryError()
    return out
