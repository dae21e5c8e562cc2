# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The per-call paths of a closed-loop robot, compiled: assembly, G, constrained inverse and
forward dynamics (the formulas of :mod:`.kinematics`, :mod:`.dynamics`, :mod:`.lagrange`).

A :class:`LoopWork` is the workspace of one ``ClosedLoopRobot`` (the spanning tree's
:class:`~mbs_dynamics.kernels._data.Data` plus the loop arrays, preallocated). One call:

1. assembly (seed 001 §4): ``q = last`` with the actuated ``q_a`` and the first-order predictor
   ``q_d −= K_d⁺K_a (q_a − last_a)``, then the Gauss–Newton steps of
   :meth:`~.kinematics.LoopKinematics.newton` (least squares through a Householder QR with
   column pivoting of ``K_d``, step halving, then, once ``|h|_∞ ≤ tol``, one more full step and
   K re-evaluated there: the assembly, K and G_d do not depend on where Newton started) — an
   already assembled configuration costs two residual-and-Jacobians and one residual;
2. the residual ``h`` and the exact ``K = ∂h/∂q`` from the world poses of the loop bodies:
   moving joint j changes ``C_ba = F_b⁻¹F_a`` by ``hat(V) C_ba``, ``V = ±Ad_{F_b⁻¹C_j} X_j``
   (+ on frame_a's path, − on frame_b's), so ``ṗ = ω × p + v``, ``Ṙ = ω̃R`` and the quotients of
   the weld / hinge rows by the quotient rule;
3. ``G_d = −K_d⁺K_a`` from the same QR (``K_d`` of full column rank, checked per call by the
   pivots; the redundant rows of a planar closure cost nothing), ``q̇_d = G_d q̇_a``;
4. ``K̇q̇ = 2 h₂``, h₂ the second Taylor coefficient of ``h(q + q̇t)`` (truncated series of the
   poses, as :meth:`~.kinematics.LoopKinematics.jets`), ``q̈_d = −K_d⁺(K_a q̈_a + K̇q̇)``;
5. inverse dynamics ``τ_a = Gᵀ RNEA(q, q̇, q̈)``, ``λ`` the minimum-norm solution of
   ``K_dᵀλ = τ_d`` (``λ = Q R⁻ᵀ Πᵀτ_d``); forward dynamics by the null-space form of the index-1
   equations: ``(GᵀMG) q̈_a = Gᵀ(τ − RNEA(q, q̇, γ))``, ``γ = (0, −K_d⁺K̇q̇)`` (RNEA at q̈ = γ
   is ``c + Mγ``; M by the CRBA kernel, a Cholesky of the n_a × n_a matrix);
6. jets (``expand``, ``torque_derivatives``, Ġ for ``coriolis_matrix``): every pose a truncated
   Taylor series (normalized coefficients, sin/cos by their recurrences); the dependent rows
   order by order, ``q_d,r = −K_d⁺ h_r`` with ``q_d,r = 0`` inside ``h_r``
   (:meth:`~.kinematics.LoopKinematics.dependent_jets`); the series of K by the Jacobian
   formula of item 2 with every quantity a series; ``G_d,r = −K_d⁺(K_a,r + Σ_{j≥1} K_d,j
   G_d,r−j)`` and ``τ_a,r = Σ_j G_jᵀ τ_r−j`` with the tree's recursive τ jet
   (:mod:`.dynamics`); C̄_a = Gᵀ(C̄G + MĠ), Ṁ_a = ĠᵀMG + GᵀṀG + GᵀMĠ with the tree's C̄/Ṁ kernel.

Whatever this path cannot decide safely — Newton not converging (the NumPy path continues from
the last configuration), a pivot of ``K_d`` below 1e-8 of the largest (near-singular), actuated
columns outside the range of ``K_d`` (too many actuated joints), a non-positive pivot of
``GᵀMG`` — returns None before any state changes and the caller takes the NumPy path, which
raises the errors naming the loops. Nothing here allocates except the returned arrays.
"""
import numpy as np
cimport numpy as cnp
from libc.math cimport fabs, sqrt

from mbs_dynamics.kernels._data cimport (REVOLUTE, Data, KModel, KWork, check_finite, claim,
                                         finite_result, unclaim)
from mbs_dynamics.kernels._spatial cimport compose, joint_pose, load_jet, load_rows, mbs_sincos
from mbs_dynamics.kernels._rnea cimport rnea0, rnea_jet
from mbs_dynamics.kernels._crba cimport coriolis, crba

cnp.import_array()

cdef enum:
    CONNECT = 0
    WELD = 1
    HINGE = 2
    NMAX = 8        # Taylor coefficients of the compiled jets (torque_derivatives: k ≤ 5)

# |v|, |τ| beyond this overflow the quadratic velocity terms (as robot.py's _HUGE)
cdef double HUGE = 1e150
# a pivot of K_d below this fraction of the largest: near-singular, the NumPy path decides
cdef double PIVOT_TOL = 1e-8
# actuated columns of K outside range(K_d) beyond this (relative): too many actuated joints?
cdef double RANGE_TOL = 1e-11
#: |q_a| at or beyond this is refused (an angle there keeps no digit below 1e-7 rad; 1e16 and
#: 1e200 were once assembled and poisoned the next call's start)
Q_ABSURD = 1e9
cdef double QABS = Q_ABSURD


def _actuated_range(model, act):
    """(lo, hi) (na,) float arrays: the actuated joints' URDF limits widened by a relative
    1e-12 (±Q_ABSURD where absent or wider): the inputs assembly accepts."""
    act = np.asarray(act, dtype=np.intp)
    lo = np.asarray(model.lower, dtype=float)[act]
    hi = np.asarray(model.upper, dtype=float)[act]
    lo = np.where(np.isfinite(lo), lo - 1e-12 * (1.0 + np.abs(lo)), -Q_ABSURD)
    hi = np.where(np.isfinite(hi), hi + 1e-12 * (1.0 + np.abs(hi)), Q_ABSURD)
    lo, hi = np.maximum(lo, -Q_ABSURD), np.minimum(hi, Q_ABSURD)
    return np.ascontiguousarray(lo), np.ascontiguousarray(hi)


cdef inline bint _plain(object x, Py_ssize_t n):
    """A float64 C-contiguous 1-D ndarray of length n (anything else: the Python path)."""
    cdef cnp.ndarray a
    if not cnp.PyArray_CheckExact(x):
        return False
    a = <cnp.ndarray> x
    return (cnp.PyArray_TYPE(a) == cnp.NPY_DOUBLE and cnp.PyArray_ISNOTSWAPPED(a) and cnp.PyArray_NDIM(a) == 1
            and cnp.PyArray_DIM(a, 0) == n and cnp.PyArray_IS_C_CONTIGUOUS(a))


cdef inline bint _plain2(object x, Py_ssize_t n):
    """x a float64 C-contiguous (N, n) array."""
    cdef cnp.ndarray a
    if not cnp.PyArray_CheckExact(x):
        return False
    a = <cnp.ndarray> x
    return (cnp.PyArray_TYPE(a) == cnp.NPY_DOUBLE and cnp.PyArray_NDIM(a) == 2
            and cnp.PyArray_IS_C_CONTIGUOUS(a) and cnp.PyArray_DIM(a, 1) == n)


cdef inline double* _p(object a):
    return <double*> cnp.PyArray_DATA(a)


cdef inline double _maxabs(const double* x, int n) noexcept nogil:
    cdef double e = 0.0
    cdef int i
    for i in range(n):
        if fabs(x[i]) > e:
            e = fabs(x[i])
    return e


cdef inline void _rtr(const double* A, const double* B, double* C) noexcept nogil:
    """C = Aᵀ B (3×3 row-major)."""
    cdef int r, c
    for r in range(3):
        for c in range(3):
            C[3 * r + c] = A[r] * B[c] + A[3 + r] * B[3 + c] + A[6 + r] * B[6 + c]


cdef inline void _rtv(const double* A, const double* x, double* y) noexcept nogil:
    """y = Aᵀ x."""
    y[0] = A[0] * x[0] + A[3] * x[1] + A[6] * x[2]
    y[1] = A[1] * x[0] + A[4] * x[1] + A[7] * x[2]
    y[2] = A[2] * x[0] + A[5] * x[1] + A[8] * x[2]


cdef inline void _cross(const double* a, const double* b, double* c) noexcept nogil:
    c[0] = a[1] * b[2] - a[2] * b[1]
    c[1] = a[2] * b[0] - a[0] * b[2]
    c[2] = a[0] * b[1] - a[1] * b[0]


cdef inline void _acc(const double* A, const double* B, double* C) noexcept nogil:
    """C.R += A.R B.R, C.p += A.R B.p (one term of a product of pose series)."""
    cdef int r, c
    for r in range(3):
        for c in range(3):
            C[3 * r + c] += A[3 * r] * B[c] + A[3 * r + 1] * B[3 + c] + A[3 * r + 2] * B[6 + c]
        C[9 + r] += A[3 * r] * B[9] + A[3 * r + 1] * B[10] + A[3 * r + 2] * B[11]


cdef inline void _ser_mul(const double* A, const double* B, double* C) noexcept nogil:
    """Product of two pose series truncated at order 2 (3 coefficients of 12): C_r = Σ A_i B_{r−i}
    with the homogeneous row (0, δ_r) of B: the translation of A enters as A_r.p."""
    cdef int r, i, a
    for a in range(36):
        C[a] = 0.0
    for r in range(3):
        for i in range(r + 1):
            _acc(A + 12 * i, B + 12 * (r - i), C + 12 * r)
        C[12 * r + 9] += A[12 * r + 9]
        C[12 * r + 10] += A[12 * r + 10]
        C[12 * r + 11] += A[12 * r + 11]


# ---- truncated Taylor series (normalized coefficients x_r = x^(r)/r!, r < N) of poses (N, 12),
# 3-vectors (N, 3) and scalars (N,)
cdef void _s_joint(const KModel* m, int b, const double* qc, int stride, int N,
                   double* T, double* sn, double* cs) noexcept nogil:
    """Series of C_{λ(i),i}(q(t)) = B exp(X q(t)) from the coefficients qc[r * stride]: sin and
    cos by their recurrences (r s_r = Σ j q_j c_{r−j}, r c_r = −Σ j q_j s_{r−j})."""
    cdef int r, j, a
    cdef double acc_s, acc_c, d
    cdef const double* BR = m.BR + 9 * b
    cdef const double* E1 = m.BE1 + 9 * b
    cdef const double* E2 = m.BE2 + 9 * b
    if m.jtype[b] == REVOLUTE:
        mbs_sincos(qc[0], &sn[0], &cs[0])
        for r in range(1, N):
            acc_s = 0.0
            acc_c = 0.0
            for j in range(1, r + 1):
                acc_s += j * qc[j * stride] * cs[r - j]
                acc_c += j * qc[j * stride] * sn[r - j]
            sn[r] = acc_s / r
            cs[r] = -acc_c / r
        for r in range(N):
            d = 1.0 if r == 0 else 0.0
            for a in range(9):
                T[12 * r + a] = d * BR[a] + sn[r] * E1[a] + (d - cs[r]) * E2[a]
            for a in range(3):
                T[12 * r + 9 + a] = d * m.Bp[3 * b + a]
    else:
        for r in range(N):
            d = 1.0 if r == 0 else 0.0
            for a in range(9):
                T[12 * r + a] = d * BR[a]
            for a in range(3):
                T[12 * r + 9 + a] = d * m.Bp[3 * b + a] + qc[r * stride] * m.BRe[3 * b + a]


cdef void _s_mul(const double* A, const double* B, double* C, int N) noexcept nogil:
    """C = A B for pose series (C may not alias A or B)."""
    cdef int r, i, a
    for a in range(12 * N):
        C[a] = 0.0
    for r in range(N):
        for i in range(r + 1):
            _acc(A + 12 * i, B + 12 * (r - i), C + 12 * r)
        C[12 * r + 9] += A[12 * r + 9]
        C[12 * r + 10] += A[12 * r + 10]
        C[12 * r + 11] += A[12 * r + 11]


cdef void _s_mulc(const double* A, const double* S, double* C, int N) noexcept nogil:
    """C = A S, S a constant pose."""
    cdef int r
    for r in range(N):  # (A S)_r = A_r S: translation A_r.R S.p + A_r.p (S's homogeneous 1)
        compose(A + 12 * r, S, C + 12 * r)


cdef void _s_inv(const double* F, double* Fi, int N) noexcept nogil:
    """F⁻¹ series: Rᵀ, p = −Σ Rᵀ_i p_{r−i}."""
    cdef int r, i, a, c
    for r in range(N):
        for a in range(3):
            for c in range(3):
                Fi[12 * r + 3 * a + c] = F[12 * r + 3 * c + a]
    for r in range(N):
        for a in range(3):
            Fi[12 * r + 9 + a] = 0.0
        for i in range(r + 1):
            for a in range(3):
                Fi[12 * r + 9 + a] -= (Fi[12 * i + 3 * a] * F[12 * (r - i) + 9]
                                       + Fi[12 * i + 3 * a + 1] * F[12 * (r - i) + 10]
                                       + Fi[12 * i + 3 * a + 2] * F[12 * (r - i) + 11])


cdef void _s_rtv(const double* A, const double* x, double* y, int N) noexcept nogil:
    """y = Rᵀ x, R the rotation series of the pose series A, x (N, 3)."""
    cdef int r, i
    cdef const double* R
    cdef const double* v
    for r in range(N):
        y[3 * r] = 0.0
        y[3 * r + 1] = 0.0
        y[3 * r + 2] = 0.0
        for i in range(r + 1):
            R = A + 12 * i
            v = x + 3 * (r - i)
            y[3 * r] += R[0] * v[0] + R[3] * v[1] + R[6] * v[2]
            y[3 * r + 1] += R[1] * v[0] + R[4] * v[1] + R[7] * v[2]
            y[3 * r + 2] += R[2] * v[0] + R[5] * v[1] + R[8] * v[2]


cdef void _s_cross(const double* a, const double* b, double* c, int N, bint add) noexcept nogil:
    """c (+)= a × b for 3-vector series."""
    cdef int r, i
    cdef const double* u
    cdef const double* v
    for r in range(N):
        if not add:
            c[3 * r] = 0.0
            c[3 * r + 1] = 0.0
            c[3 * r + 2] = 0.0
        for i in range(r + 1):
            u = a + 3 * i
            v = b + 3 * (r - i)
            c[3 * r] += u[1] * v[2] - u[2] * v[1]
            c[3 * r + 1] += u[2] * v[0] - u[0] * v[2]
            c[3 * r + 2] += u[0] * v[1] - u[1] * v[0]


cdef void _s_div(const double* a, int sa, const double* b, double* y, int sy, int N) noexcept nogil:
    """y = a / b for scalar series (strides sa, sy between coefficients): b₀y_r = a_r − Σ b_j y_{r−j};
    b₀ guarded as in kinematics.LoopKinematics._div."""
    cdef int r, j
    cdef double acc, b0 = b[0]
    if not fabs(b0) > 1e-12:
        b0 = 1e-12
    for r in range(N):
        acc = a[r * sa]
        for j in range(1, r + 1):
            acc -= b[j] * y[(r - j) * sy]
        y[r * sy] = acc / b0


cdef class LoopWork:
    """Workspace and compiled per-call paths of one ClosedLoopRobot (see the module docstring).

    Args:
        data: the spanning tree's Data.
        kin: its :class:`~.kinematics.LoopKinematics`.
        act, dep: actuated / dependent joint indices (full coordinates).
        tol: Newton tolerance on |h|_∞.
    """
    cdef Data d
    cdef KModel* km
    cdef readonly int nf, na, nd, m, nl, nmim, fb, nneed, o, naf, nqa
    cdef public bint fast       # False: every call takes the NumPy path (tests)
    cdef double tol
    cdef readonly object last       # (nf,) the last assembled configuration (the next start)
    cdef readonly object dqd        # (nd, na) K_d⁺K_a there (the predictor)
    cdef public bint has_pred
    cdef list _keep
    cdef int* act
    cdef int* dep
    cdef int* par
    cdef int* need
    cdef int* ltype
    cdef int* la
    cdef int* lb
    cdef int* lrow
    cdef int* perm
    cdef int* mim
    cdef signed char* sgn
    cdef double* S          # (nl, 2, 12) S_a, S_b
    cdef double* mimk       # (nmim, 2) k, offset
    cdef double* q
    cdef double* qn
    cdef double* C          # (nf, 12) world poses (order 0)
    cdef double* Cs         # (nf, 36) pose series (order 2)
    cdef double* h
    cdef double* K          # (m, nf)
    cdef double* A          # (m, nd) K_d, then its QR
    cdef double* tq         # (nd,) Householder scalars
    cdef double* B          # (m, na) K_a, then Qᵀ K_a
    cdef double* Ga         # (nd, na) G_d
    cdef double* r          # (m,) scratch
    cdef double* v          # (nf,)
    cdef double* a          # (nf,)
    cdef double* t          # (nf,) tree torques
    cdef double* M          # (nf, nf)
    cdef double* MG         # (nf, na)
    cdef double* Ma         # (na, na)
    cdef double* lam        # (m,)
    cdef double* kdv        # (m,) K̇q̇
    cdef double* sc         # scratch poses (8, 36)
    cdef double* qF         # (7 + nf,) floating base: the full q, v, a of the tree
    cdef double* vF
    cdef double* aF
    cdef double* QS         # (NMAX, nf) the full jet (normalized coefficients)
    cdef double* CSS        # (nf, NMAX, 12) pose series of the joints
    cdef double* sF         # (4, NMAX, 12) F_a, F_b, F_b⁻¹, C_ba series of one loop
    cdef double* HS         # (NMAX, m) series of h
    cdef double* KS         # (NMAX, m, nf) series of K
    cdef double* GS         # (NMAX, nd, na) series of G_d
    cdef double* TT         # (NMAX, nf + 6) the tree's τ^(r)
    cdef double* VS         # (NMAX, nf + 6) velocity-level rows of the tree's jet
    cdef double* sv         # vector-series scratch (16, NMAX, 3)
    cdef double* Cm         # (nv, nv) the tree's C̄ or Ṁ
    cdef double* Gf         # (nv, naf) G_f
    cdef double* Gdf        # (nv, naf) Ġ_f
    cdef double* lastp
    cdef double* dqdp
    cdef double* qlo        # (na,) the actuated joints' lower / upper limits, less a margin
    cdef double* qhi

    def __init__(self, Data data, kin, act, dep, double tol):
        self.d = data
        self.km = &data.m
        self.fb = data.m.fb
        self.nf = kin.n
        self.na = len(act)
        self.nd = len(dep)
        self.m = kin.m
        self.nl = len(kin.loops)
        self.nmim = len(kin.mimic)
        self.tol = tol
        self.has_pred = False
        self.o = 6 * self.fb
        self.naf = self.na + self.o
        self.nqa = self.na + 7 * self.fb
        self.fast = self.nd > 0 and self.m >= self.nd and self.na > 0
        nf, m = self.nf, max(self.m, 1)
        self._keep = []
        self.last = np.zeros(nf)
        self.dqd = np.zeros((self.nd, self.na))
        self.lastp = _p(self.last)
        self.dqdp = _p(self.dqd)
        need = [int(b) for b in kin.bodies]
        sg = np.zeros((max(self.nl, 1), nf), dtype=np.int8)
        for l, sup in enumerate(kin.support):
            lp = kin.loops[l]
            pa = set(kin._path(lp.body_a))
            for j in sup:
                sg[l, j] = 1 if j in pa else -1
        S = np.zeros((max(self.nl, 1), 2, 12))
        for l, lp in enumerate(kin.loops):
            for s, X in enumerate((lp.S_a, lp.S_b)):
                S[l, s, :9] = np.asarray(X)[:3, :3].ravel()
                S[l, s, 9:] = np.asarray(X)[:3, 3]
        ints = {"act": act, "dep": dep, "par": [int(p) for p in kin.model.parent],
                "need": need or [0],
                "ltype": [{"connect": CONNECT, "weld": WELD, "revolute": HINGE}[lp.type]
                          for lp in kin.loops] or [0],
                "la": [lp.body_a for lp in kin.loops] or [0],
                "lb": [lp.body_b for lp in kin.loops] or [0],
                "lrow": [sl.start for sl in kin.rows] or [0],
                "perm": [0] * max(self.nd, 1),
                "mim": [x for (mj, j, k, o) in kin.mimic for x in (mj, j)] or [0]}
        arrs = {}
        for k, x in ints.items():
            arrs[k] = np.ascontiguousarray(x, dtype=np.intc)
        self.nneed = len(need)
        self.act = <int*> cnp.PyArray_DATA(arrs["act"])
        self.dep = <int*> cnp.PyArray_DATA(arrs["dep"])
        self.par = <int*> cnp.PyArray_DATA(arrs["par"])
        self.need = <int*> cnp.PyArray_DATA(arrs["need"])
        self.ltype = <int*> cnp.PyArray_DATA(arrs["ltype"])
        self.la = <int*> cnp.PyArray_DATA(arrs["la"])
        self.lb = <int*> cnp.PyArray_DATA(arrs["lb"])
        self.lrow = <int*> cnp.PyArray_DATA(arrs["lrow"])
        self.perm = <int*> cnp.PyArray_DATA(arrs["perm"])
        self.mim = <int*> cnp.PyArray_DATA(arrs["mim"])
        sg = np.ascontiguousarray(sg)
        self.sgn = <signed char*> cnp.PyArray_DATA(sg)
        S = np.ascontiguousarray(S)
        self.S = _p(S)
        mk = np.ascontiguousarray([[k, o] for (mj, j, k, o) in kin.mimic] or [[0.0, 0.0]],
                                  dtype=float)
        self.mimk = _p(mk)
        lo, hi = _actuated_range(kin.model, act)
        self.qlo, self.qhi = _p(lo), _p(hi)
        self._keep += [arrs, sg, S, mk, lo, hi]
        na, nd = max(self.na, 1), max(self.nd, 1)
        sizes = {"q": nf, "qn": nf, "C": 12 * nf, "Cs": 36 * nf, "h": m, "K": m * nf,
                 "A": m * nd, "tq": nd, "B": m * na, "Ga": nd * na, "r": m, "v": nf, "a": nf,
                 "t": nf + 6, "M": (nf + 6) * (nf + 6), "MG": (nf + 6) * (na + 6),
                 "Ma": (na + 6) * (na + 6), "lam": m, "kdv": m, "sc": 8 * 36, "qF": nf + 7,
                 "vF": nf + 6, "aF": nf + 6, "QS": NMAX * nf, "CSS": nf * NMAX * 12,
                 "sF": 5 * NMAX * 12, "HS": NMAX * m, "KS": NMAX * m * nf,
                 "GS": NMAX * nd * na, "TT": NMAX * (nf + 6), "VS": (NMAX + 1) * (nf + 6),
                 "sv": 16 * NMAX * 3, "Cm": (nf + 6) * (nf + 6), "Gf": (nf + 6) * (na + 6),
                 "Gdf": (nf + 6) * (na + 6)}
        buf = {k: np.zeros(s) for k, s in sizes.items()}
        self._keep.append(buf)
        self.q, self.qn, self.C, self.Cs = _p(buf["q"]), _p(buf["qn"]), _p(buf["C"]), _p(buf["Cs"])
        self.h, self.K, self.A, self.tq = _p(buf["h"]), _p(buf["K"]), _p(buf["A"]), _p(buf["tq"])
        self.B, self.Ga, self.r, self.v = _p(buf["B"]), _p(buf["Ga"]), _p(buf["r"]), _p(buf["v"])
        self.a, self.t, self.M, self.MG = _p(buf["a"]), _p(buf["t"]), _p(buf["M"]), _p(buf["MG"])
        self.Ma, self.lam, self.kdv = _p(buf["Ma"]), _p(buf["lam"]), _p(buf["kdv"])
        self.sc = _p(buf["sc"])
        self.qF, self.vF, self.aF = _p(buf["qF"]), _p(buf["vF"]), _p(buf["aF"])
        self.QS, self.CSS, self.sF, self.HS = _p(buf["QS"]), _p(buf["CSS"]), _p(buf["sF"]), \
            _p(buf["HS"])
        self.KS, self.GS, self.TT, self.VS = _p(buf["KS"]), _p(buf["GS"]), _p(buf["TT"]), \
            _p(buf["VS"])
        self.sv = _p(buf["sv"])
        self.Cm, self.Gf, self.Gdf = _p(buf["Cm"]), _p(buf["Gf"]), _p(buf["Gdf"])

    # ------------------------------------------------------------------ state
    def set_last(self, q, dqd=None):
        """The assembly the next call starts from; ``dqd`` (K_d⁺K_a there) enables the
        first-order predictor, None disables it."""
        self.last[...] = q
        if dqd is None:
            self.has_pred = False
        else:
            self.dqd[...] = dqd
            self.has_pred = True

    # ------------------------------------------------------------------ kinematics
    cdef void poses(self, const double* q) noexcept nogil:
        """World poses C_j of the joints the loops need (the base: identity)."""
        cdef int idx, j, p
        cdef double* T = self.sc
        for idx in range(self.nneed):
            j = self.need[idx]
            p = self.par[j]
            if p < 0:
                joint_pose(self.km, j + self.fb, q[j], self.C + 12 * j)
            else:
                joint_pose(self.km, j + self.fb, q[j], T)
                compose(self.C + 12 * p, T, self.C + 12 * j)

    cdef void frames(self, int l, double* Fa, double* Fb) noexcept nogil:
        cdef int a = self.la[l], b = self.lb[l], i
        cdef const double* Sa = self.S + 24 * l
        cdef const double* Sb = Sa + 12
        if a < 0:
            for i in range(12):
                Fa[i] = Sa[i]
        else:
            compose(self.C + 12 * a, Sa, Fa)
        if b < 0:
            for i in range(12):
                Fb[i] = Sb[i]
        else:
            compose(self.C + 12 * b, Sb, Fb)

    cdef void residual(self, const double* q, double* h, double* K) noexcept nogil:
        """h(q) (m,) and, if K is not NULL, K(q) (m, nf), exact (module docstring, item 2)."""
        cdef int nf = self.nf, l, j, r0, c, typ, b, t
        cdef double* Fa = self.sc + 36
        cdef double* Fb = self.sc + 48
        cdef double R[9]
        cdef double p[3]
        cdef double d[3]
        cdef double w[3]
        cdef double vv[3]
        cdef double aw[3]
        cdef double x[3]
        cdef double dR[9]
        cdef double y[3]
        cdef double num[3]
        cdef double dn[3]
        cdef double den, dd, sg
        cdef const double* Cj
        cdef const double* e
        self.poses(q)
        if K != NULL:
            for c in range(self.m * nf):
                K[c] = 0.0
        for l in range(self.nl):
            self.frames(l, Fa, Fb)
            _rtr(Fb, Fa, R)
            d[0] = Fa[9] - Fb[9]
            d[1] = Fa[10] - Fb[10]
            d[2] = Fa[11] - Fb[11]
            _rtv(Fb, d, p)
            r0 = self.lrow[l]
            typ = self.ltype[l]
            h[r0] = -p[0]
            h[r0 + 1] = -p[1]
            h[r0 + 2] = -p[2]
            den = 1.0
            y[0] = 0.0
            y[1] = 0.0
            y[2] = 0.0
            if typ == WELD:
                num[0] = -2.0 * (R[7] - R[5])
                num[1] = -2.0 * (R[2] - R[6])
                num[2] = -2.0 * (R[3] - R[1])
                den = 1.0 + R[0] + R[4] + R[8]
                if not fabs(den) > 1e-12:
                    den = 1e-12
                for c in range(3):
                    y[c] = num[c] / den
                    h[r0 + 3 + c] = y[c]
            elif typ == HINGE:
                num[0] = 2.0 * R[5]
                num[1] = -2.0 * R[2]
                den = 1.0 + R[8]
                if not fabs(den) > 1e-12:
                    den = 1e-12
                for c in range(2):
                    y[c] = num[c] / den
                    h[r0 + 3 + c] = y[c]
            if K == NULL:
                continue
            for j in range(nf):
                t = self.sgn[l * nf + j]
                if t == 0:
                    continue
                sg = <double> t
                b = j + self.fb
                Cj = self.C + 12 * j
                e = self.km.axis + 3 * b
                aw[0] = Cj[0] * e[0] + Cj[1] * e[1] + Cj[2] * e[2]
                aw[1] = Cj[3] * e[0] + Cj[4] * e[1] + Cj[5] * e[2]
                aw[2] = Cj[6] * e[0] + Cj[7] * e[1] + Cj[8] * e[2]
                if self.km.jtype[b] == REVOLUTE:
                    _rtv(Fb, aw, w)
                    d[0] = Cj[9] - Fb[9]
                    d[1] = Cj[10] - Fb[10]
                    d[2] = Cj[11] - Fb[11]
                    _cross(d, aw, x)
                    _rtv(Fb, x, vv)
                    for c in range(3):
                        w[c] *= sg
                        vv[c] *= sg
                else:
                    w[0] = 0.0
                    w[1] = 0.0
                    w[2] = 0.0
                    _rtv(Fb, aw, vv)
                    for c in range(3):
                        vv[c] *= sg
                # ṗ = ω × p + v
                _cross(w, p, x)
                K[r0 * nf + j] = -(x[0] + vv[0])
                K[(r0 + 1) * nf + j] = -(x[1] + vv[1])
                K[(r0 + 2) * nf + j] = -(x[2] + vv[2])
                if typ == CONNECT:
                    continue
                # Ṙ = ω̃R: column c is ω × R[:, c]
                for c in range(3):
                    dR[c] = w[1] * R[6 + c] - w[2] * R[3 + c]
                    dR[3 + c] = w[2] * R[c] - w[0] * R[6 + c]
                    dR[6 + c] = w[0] * R[3 + c] - w[1] * R[c]
                if typ == WELD:
                    dn[0] = -2.0 * (dR[7] - dR[5])
                    dn[1] = -2.0 * (dR[2] - dR[6])
                    dn[2] = -2.0 * (dR[3] - dR[1])
                    dd = dR[0] + dR[4] + dR[8]
                    for c in range(3):
                        K[(r0 + 3 + c) * nf + j] = (dn[c] - y[c] * dd) / den
                else:
                    dn[0] = 2.0 * dR[5]
                    dn[1] = -2.0 * dR[2]
                    dd = dR[8]
                    for c in range(2):
                        K[(r0 + 3 + c) * nf + j] = (dn[c] - y[c] * dd) / den
        r0 = self.m - self.nmim
        for t in range(self.nmim):
            j = self.mim[2 * t]
            c = self.mim[2 * t + 1]
            h[r0 + t] = q[j] - self.mimk[2 * t] * q[c] - self.mimk[2 * t + 1]
            if K != NULL:
                K[(r0 + t) * nf + j] = 1.0
                K[(r0 + t) * nf + c] -= self.mimk[2 * t]

    cdef void drift(self, const double* q, const double* v) noexcept nogil:
        """kdv = K̇q̇ = 2 h₂, h₂ the second Taylor coefficient of h(q + q̇t) (module item 4)."""
        cdef int idx, j, b, p, l, a, r0, typ, c, r, i
        cdef double* F
        cdef double s0, c0, s1, c1, s2, c2, vj
        cdef double* T = self.sc            # 36: the joint's series
        cdef double* Fa = self.sc + 36      # 36
        cdef double* Fb = self.sc + 72      # 36
        cdef double* Fi = self.sc + 108     # 36
        cdef double* Cba = self.sc + 144    # 36
        cdef double* Sa = self.sc + 180     # 36: a constant series
        cdef double* Cs = self.Cs
        cdef const KModel* m = self.km
        cdef const double* E1
        cdef const double* E2
        cdef const double* BR
        cdef double nm[9]
        cdef double dn[3]
        cdef double y0, y1, y2, b0, b1, b2
        for idx in range(self.nneed):
            j = self.need[idx]
            b = j + self.fb
            vj = v[j]
            BR = m.BR + 9 * b
            for a in range(36):
                T[a] = 0.0
            if m.jtype[b] == REVOLUTE:
                mbs_sincos(q[j], &s0, &c0)
                s1 = vj * c0
                c1 = -vj * s0
                s2 = -0.5 * vj * vj * s0
                c2 = -0.5 * vj * vj * c0
                E1 = m.BE1 + 9 * b
                E2 = m.BE2 + 9 * b
                for a in range(9):
                    T[a] = BR[a] + s0 * E1[a] + (1.0 - c0) * E2[a]
                    T[12 + a] = s1 * E1[a] - c1 * E2[a]
                    T[24 + a] = s2 * E1[a] - c2 * E2[a]
                for a in range(3):
                    T[9 + a] = m.Bp[3 * b + a]
            else:
                for a in range(9):
                    T[a] = BR[a]
                for a in range(3):
                    T[9 + a] = m.Bp[3 * b + a] + q[j] * m.BRe[3 * b + a]
                    T[21 + a] = vj * m.BRe[3 * b + a]
            p = self.par[j]
            if p < 0:
                for a in range(36):
                    Cs[36 * j + a] = T[a]
            else:
                _ser_mul(Cs + 36 * p, T, Cs + 36 * j)
        for a in range(36):
            Sa[a] = 0.0
        for l in range(self.nl):
            # F_a, F_b series: C ∘ S (S constant)
            for c in range(2):
                for a in range(12):
                    Sa[a] = self.S[24 * l + 12 * c + a]
                p = self.la[l] if c == 0 else self.lb[l]
                F = Fa if c == 0 else Fb
                if p < 0:
                    for a in range(36):
                        F[a] = Sa[a]
                else:
                    _ser_mul(Cs + 36 * p, Sa, F)
            # F_b⁻¹: Rᵀ series, p = −Σ Rᵀ_i p_{r−i}
            for r in range(3):
                for a in range(3):
                    for c in range(3):
                        Fi[12 * r + 3 * a + c] = Fb[12 * r + 3 * c + a]
            for r in range(3):
                for a in range(3):
                    Fi[12 * r + 9 + a] = 0.0
                for i in range(r + 1):
                    for a in range(3):
                        Fi[12 * r + 9 + a] -= (Fi[12 * i + 3 * a] * Fb[12 * (r - i) + 9]
                                               + Fi[12 * i + 3 * a + 1] * Fb[12 * (r - i) + 10]
                                               + Fi[12 * i + 3 * a + 2] * Fb[12 * (r - i) + 11])
            _ser_mul(Fi, Fa, Cba)
            r0 = self.lrow[l]
            typ = self.ltype[l]
            for a in range(3):
                self.kdv[r0 + a] = -2.0 * Cba[24 + 9 + a]
            if typ == CONNECT:
                continue
            # quotient series y = num / den up to order 2
            for r in range(3):
                if typ == WELD:
                    nm[3 * r] = -2.0 * (Cba[12 * r + 7] - Cba[12 * r + 5])
                    nm[3 * r + 1] = -2.0 * (Cba[12 * r + 2] - Cba[12 * r + 6])
                    nm[3 * r + 2] = -2.0 * (Cba[12 * r + 3] - Cba[12 * r + 1])
                else:
                    nm[3 * r] = 2.0 * Cba[12 * r + 5]
                    nm[3 * r + 1] = -2.0 * Cba[12 * r + 2]
                    nm[3 * r + 2] = 0.0
            if typ == WELD:
                b0 = 1.0 + Cba[0] + Cba[4] + Cba[8]
                b1 = Cba[12] + Cba[16] + Cba[20]
                b2 = Cba[24] + Cba[28] + Cba[32]
            else:
                b0 = 1.0 + Cba[8]
                b1 = Cba[20]
                b2 = Cba[32]
            if not fabs(b0) > 1e-12:
                b0 = 1e-12
            for c in range(3 if typ == WELD else 2):
                y0 = nm[c] / b0
                y1 = (nm[3 + c] - b1 * y0) / b0
                y2 = (nm[6 + c] - b1 * y1 - b2 * y0) / b0
                self.kdv[r0 + 3 + c] = 2.0 * y2
        r0 = self.m - self.nmim
        for c in range(self.nmim):
            self.kdv[r0 + c] = 0.0

    # ------------------------------------------------------------------ jets (series)
    cdef void s_poses(self, int N) noexcept nogil:
        """Pose series (N coefficients) of the needed joints from the full jet QS."""
        cdef int idx, j, p, a
        cdef double* T = self.sF + 4 * NMAX * 12
        for idx in range(self.nneed):
            j = self.need[idx]
            p = self.par[j]
            if p < 0:
                _s_joint(self.km, j + self.fb, self.QS + j, self.nf, N, self.CSS + j * NMAX * 12,
                         self.sv, self.sv + NMAX)
            else:
                _s_joint(self.km, j + self.fb, self.QS + j, self.nf, N, T, self.sv,
                         self.sv + NMAX)
                _s_mul(self.CSS + p * NMAX * 12, T, self.CSS + j * NMAX * 12, N)

    cdef void s_loop(self, int l, int N) noexcept nogil:
        """F_a, F_b, F_b⁻¹, C_ba = F_b⁻¹F_a series of loop l into sF."""
        cdef double* Fa = self.sF
        cdef double* Fb = self.sF + NMAX * 12
        cdef double* F
        cdef const double* Sx
        cdef int c, b, a
        for c in range(2):
            b = self.la[l] if c == 0 else self.lb[l]
            F = Fa if c == 0 else Fb
            Sx = self.S + 24 * l + 12 * c
            if b < 0:
                for a in range(12 * N):
                    F[a] = 0.0
                for a in range(12):
                    F[a] = Sx[a]
            else:
                _s_mulc(self.CSS + b * NMAX * 12, Sx, F, N)
        _s_inv(Fb, self.sF + 2 * NMAX * 12, N)
        _s_mul(self.sF + 2 * NMAX * 12, Fa, self.sF + 3 * NMAX * 12, N)

    cdef void s_quot(self, int typ, int N, double* y, double* den) noexcept nogil:
        """Series of the rotation rows of a weld (3) / hinge (2): y (N, 3) = num / den."""
        cdef const double* C = self.sF + 3 * NMAX * 12
        cdef double* num = self.sv + 2 * NMAX * 3
        cdef int r, c
        for r in range(N):
            if typ == WELD:
                num[3 * r] = -2.0 * (C[12 * r + 7] - C[12 * r + 5])
                num[3 * r + 1] = -2.0 * (C[12 * r + 2] - C[12 * r + 6])
                num[3 * r + 2] = -2.0 * (C[12 * r + 3] - C[12 * r + 1])
                den[r] = C[12 * r] + C[12 * r + 4] + C[12 * r + 8]
            else:
                num[3 * r] = 2.0 * C[12 * r + 5]
                num[3 * r + 1] = -2.0 * C[12 * r + 2]
                num[3 * r + 2] = 0.0
                den[r] = C[12 * r + 8]
        den[0] += 1.0
        for c in range(3 if typ == WELD else 2):
            _s_div(num + c, 3, den, y + c, 3, N)

    cdef void s_h(self, int N) noexcept nogil:
        """HS (N, m): the series of h along QS (as LoopKinematics.jets without directions)."""
        cdef int m = self.m, nf = self.nf, l, r, c, r0, typ, t
        cdef const double* C = self.sF + 3 * NMAX * 12
        cdef double* y = self.sv + 3 * NMAX * 3
        cdef double* den = self.sv + 4 * NMAX * 3
        for l in range(self.nl):
            self.s_loop(l, N)
            r0 = self.lrow[l]
            typ = self.ltype[l]
            for r in range(N):
                for c in range(3):
                    self.HS[r * m + r0 + c] = -C[12 * r + 9 + c]
            if typ == CONNECT:
                continue
            self.s_quot(typ, N, y, den)
            for r in range(N):
                for c in range(3 if typ == WELD else 2):
                    self.HS[r * m + r0 + 3 + c] = y[3 * r + c]
        r0 = m - self.nmim
        for t in range(self.nmim):
            for r in range(N):
                self.HS[r * m + r0 + t] = (self.QS[r * nf + self.mim[2 * t]]
                                           - self.mimk[2 * t] * self.QS[r * nf + self.mim[2 * t + 1]])
            self.HS[r0 + t] -= self.mimk[2 * t + 1]

    cdef void s_K(self, int N) noexcept nogil:
        """KS (N, m, nf): the series of K along QS — the Jacobian formula of ``residual`` with
        every quantity a series."""
        cdef int m = self.m, nf = self.nf, l, r, i, c, r0, typ, t, j, b, col
        cdef const double* C = self.sF + 3 * NMAX * 12
        cdef const double* Fb = self.sF + NMAX * 12
        cdef const double* Cj
        cdef const double* e
        cdef double* y = self.sv + 3 * NMAX * 3
        cdef double* den = self.sv + 4 * NMAX * 3
        cdef double* pv = self.sv + 5 * NMAX * 3
        cdef double* aw = self.sv + 6 * NMAX * 3
        cdef double* w = self.sv + 7 * NMAX * 3
        cdef double* d = self.sv + 8 * NMAX * 3
        cdef double* x = self.sv + 9 * NMAX * 3
        cdef double* dp = self.sv + 10 * NMAX * 3
        cdef double* dn = self.sv + 11 * NMAX * 3
        cdef double* z = self.sv + 12 * NMAX * 3
        cdef double* dR = self.sv + 13 * NMAX * 3       # (N, 9): spans 3 blocks
        cdef double dd[NMAX]
        cdef double sg, acc
        cdef const double* u
        cdef const double* R
        for i in range(N * m * nf):
            self.KS[i] = 0.0
        for l in range(self.nl):
            self.s_loop(l, N)
            r0 = self.lrow[l]
            typ = self.ltype[l]
            for r in range(N):
                for c in range(3):
                    pv[3 * r + c] = C[12 * r + 9 + c]
            if typ != CONNECT:
                self.s_quot(typ, N, y, den)
            for j in range(nf):
                t = self.sgn[l * nf + j]
                if t == 0:
                    continue
                sg = <double> t
                b = j + self.fb
                Cj = self.CSS + j * NMAX * 12
                e = self.km.axis + 3 * b
                for r in range(N):
                    u = Cj + 12 * r
                    aw[3 * r] = u[0] * e[0] + u[1] * e[1] + u[2] * e[2]
                    aw[3 * r + 1] = u[3] * e[0] + u[4] * e[1] + u[5] * e[2]
                    aw[3 * r + 2] = u[6] * e[0] + u[7] * e[1] + u[8] * e[2]
                if self.km.jtype[b] == REVOLUTE:
                    _s_rtv(Fb, aw, w, N)
                    for r in range(N):
                        for c in range(3):
                            d[3 * r + c] = Cj[12 * r + 9 + c] - Fb[12 * r + 9 + c]
                    _s_cross(d, aw, x, N, False)
                    _s_rtv(Fb, x, dp, N)
                else:
                    for i in range(3 * N):
                        w[i] = 0.0
                    _s_rtv(Fb, aw, dp, N)
                for i in range(3 * N):
                    w[i] *= sg
                    dp[i] *= sg
                _s_cross(w, pv, dp, N, True)     # ṗ = ω × p + v
                for r in range(N):
                    for c in range(3):
                        self.KS[(r * m + r0 + c) * nf + j] = -dp[3 * r + c]
                if typ == CONNECT:
                    continue
                # Ṙ = ω̃R series: column col of term i is ω_i × R_{r−i}[:, col]
                for r in range(N):
                    for c in range(9):
                        dR[9 * r + c] = 0.0
                    for i in range(r + 1):
                        u = w + 3 * i
                        R = C + 12 * (r - i)
                        for col in range(3):
                            dR[9 * r + col] += u[1] * R[6 + col] - u[2] * R[3 + col]
                            dR[9 * r + 3 + col] += u[2] * R[col] - u[0] * R[6 + col]
                            dR[9 * r + 6 + col] += u[0] * R[3 + col] - u[1] * R[col]
                for r in range(N):
                    if typ == WELD:
                        dn[3 * r] = -2.0 * (dR[9 * r + 7] - dR[9 * r + 5])
                        dn[3 * r + 1] = -2.0 * (dR[9 * r + 2] - dR[9 * r + 6])
                        dn[3 * r + 2] = -2.0 * (dR[9 * r + 3] - dR[9 * r + 1])
                        dd[r] = dR[9 * r] + dR[9 * r + 4] + dR[9 * r + 8]
                    else:
                        dn[3 * r] = 2.0 * dR[9 * r + 5]
                        dn[3 * r + 1] = -2.0 * dR[9 * r + 2]
                        dn[3 * r + 2] = 0.0
                        dd[r] = dR[9 * r + 8]
                for c in range(3 if typ == WELD else 2):
                    for r in range(N):
                        acc = dn[3 * r + c]
                        for i in range(r + 1):
                            acc -= y[3 * i + c] * dd[r - i]
                        z[r] = acc
                    _s_div(z, 1, den, self.KS + (r0 + 3 + c) * nf + j, m * nf, N)
        r0 = m - self.nmim
        for t in range(self.nmim):
            self.KS[(r0 + t) * nf + self.mim[2 * t]] = 1.0
            self.KS[(r0 + t) * nf + self.mim[2 * t + 1]] -= self.mimk[2 * t]

    cdef void fill_jet(self, int K1) noexcept nogil:
        """QS rows 2..K1−1 of the dependent joints, order by order: q_d,r = −K_d⁺ h_r with
        q_d,r = 0 inside h_r (rows 0, 1 and the actuated rows given)."""
        cdef int r, i, nf = self.nf, m = self.m
        for r in range(2, K1):
            for i in range(self.nd):
                self.QS[r * nf + self.dep[i]] = 0.0
            self.s_poses(r + 1)
            self.s_h(r + 1)
            for i in range(m):
                self.r[i] = self.HS[r * m + i]
            self.lstsq(self.r, self.lam)
            for i in range(self.nd):
                self.QS[r * nf + self.dep[i]] = -self.lam[i]

    cdef void start_jet(self, const double* qs, int K1) noexcept nogil:
        """QS from the assembly, an actuated jet qs (K1, na) of derivatives, and G_d."""
        cdef int nf = self.nf, na = self.na, r, i, j
        cdef double f = 1.0, s
        for i in range(nf):
            self.QS[i] = self.q[i]
        for r in range(1, K1):
            f *= r
            for j in range(na):
                self.QS[r * nf + self.act[j]] = qs[r * na + j] / f
        if K1 > 1:
            for i in range(self.nd):
                s = 0.0
                for j in range(na):
                    s += self.Ga[i * na + j] * qs[na + j]
                self.QS[nf + self.dep[i]] = s
        self.fill_jet(K1)

    cdef void g_jets(self, int Ng) noexcept nogil:
        """GS (Ng, nd, na): G_d,r = −K_d⁺(K_a,r + Σ_{j≥1} K_d,j G_d,r−j) (dynamics.G_jets)."""
        cdef int nf = self.nf, na = self.na, nd = self.nd, m = self.m, r, j, col, row, dd
        cdef double acc
        for j in range(nd * na):
            self.GS[j] = self.Ga[j]
        if Ng < 2:
            return
        self.s_poses(Ng)
        self.s_K(Ng)
        for r in range(1, Ng):
            for col in range(na):
                for row in range(m):
                    acc = self.KS[(r * m + row) * nf + self.act[col]]
                    for j in range(1, r + 1):
                        for dd in range(nd):
                            acc += (self.KS[(j * m + row) * nf + self.dep[dd]]
                                    * self.GS[((r - j) * nd + dd) * na + col])
                    self.r[row] = acc
                self.lstsq(self.r, self.lam)
                for dd in range(nd):
                    self.GS[(r * nd + dd) * na + col] = -self.lam[dd]

    # ------------------------------------------------------------------ QR of K_d
    cdef int factor(self) noexcept nogil:
        """Householder QR with column pivoting of A = K_d (m × nd), in place; B = K_a is
        multiplied by Qᵀ. Returns 0, or 1 when a pivot is below PIVOT_TOL of the first or
        K_a leaves range(K_d) (the NumPy path decides)."""
        cdef int m = self.m, n = self.nd, na = self.na, nf = self.nf, i, j, k, jmax
        cdef double* A = self.A
        cdef double* B = self.B
        cdef double nrm, best, x0, beta, tau, s, big, r0 = 0.0
        for i in range(m):
            for j in range(n):
                A[i * n + j] = self.K[i * nf + self.dep[j]]
            for j in range(na):
                B[i * na + j] = self.K[i * nf + self.act[j]]
        for j in range(n):
            self.perm[j] = j
        for k in range(n):
            best = -1.0
            jmax = k
            for j in range(k, n):
                nrm = 0.0
                for i in range(k, m):
                    nrm += A[i * n + j] * A[i * n + j]
                if nrm > best:
                    best = nrm
                    jmax = j
            if jmax != k:
                for i in range(m):
                    s = A[i * n + k]
                    A[i * n + k] = A[i * n + jmax]
                    A[i * n + jmax] = s
                i = self.perm[k]
                self.perm[k] = self.perm[jmax]
                self.perm[jmax] = i
            nrm = sqrt(best)
            x0 = A[k * n + k]
            if k == 0:
                r0 = nrm
            if not nrm > PIVOT_TOL * r0 or not nrm > 1e-300:
                return 1
            beta = -nrm if x0 >= 0.0 else nrm
            tau = (beta - x0) / beta
            s = 1.0 / (x0 - beta)
            for i in range(k + 1, m):
                A[i * n + k] *= s
            A[k * n + k] = beta
            self.tq[k] = tau
            for j in range(k + 1, n):
                s = A[k * n + j]
                for i in range(k + 1, m):
                    s += A[i * n + k] * A[i * n + j]
                s *= tau
                A[k * n + j] -= s
                for i in range(k + 1, m):
                    A[i * n + j] -= s * A[i * n + k]
            for j in range(na):
                s = B[k * na + j]
                for i in range(k + 1, m):
                    s += A[i * n + k] * B[i * na + j]
                s *= tau
                B[k * na + j] -= s
                for i in range(k + 1, m):
                    B[i * na + j] -= s * A[i * n + k]
        # K_a's part outside range(K_d): rows n.. of QᵀK_a
        big = _maxabs(self.K, m * nf)
        if big < 1.0:
            big = 1.0
        for i in range(n, m):
            for j in range(na):
                if not fabs(B[i * na + j]) <= RANGE_TOL * big:
                    return 1
        # G_d = −K_d⁺K_a = −Π R⁻¹ (QᵀK_a)[:n]
        for j in range(na):
            for k in range(n - 1, -1, -1):
                s = B[k * na + j]
                for i in range(k + 1, n):
                    s -= A[k * n + i] * self.r[i]
                self.r[k] = s / A[k * n + k]
            for k in range(n):
                self.Ga[self.perm[k] * na + j] = -self.r[k]
        return 0

    cdef void lstsq(self, double* b, double* x) noexcept nogil:
        """x (nd) = K_d⁺ b (b (m) is overwritten): Qᵀb, back substitution, Π."""
        cdef int m = self.m, n = self.nd, i, k
        cdef double* A = self.A
        cdef double s
        for k in range(n):
            s = b[k]
            for i in range(k + 1, m):
                s += A[i * n + k] * b[i]
            s *= self.tq[k]
            b[k] -= s
            for i in range(k + 1, m):
                b[i] -= s * A[i * n + k]
        for k in range(n - 1, -1, -1):
            s = b[k]
            for i in range(k + 1, n):
                s -= A[k * n + i] * b[i]
            b[k] = s / A[k * n + k]
        for k in range(n):
            x[self.perm[k]] = b[k]

    cdef void min_norm(self, const double* td, double* lam) noexcept nogil:
        """λ (m) = the minimum-norm solution of K_dᵀλ = td (nd): Rᵀy = Πᵀtd, λ = Q (y, 0)."""
        cdef int m = self.m, n = self.nd, i, k
        cdef double* A = self.A
        cdef double s
        for k in range(n):
            s = td[self.perm[k]]
            for i in range(k):
                s -= A[i * n + k] * lam[i]
            lam[k] = s / A[k * n + k]
        for i in range(n, m):
            lam[i] = 0.0
        for k in range(n - 1, -1, -1):
            s = lam[k]
            for i in range(k + 1, m):
                s += A[i * n + k] * lam[i]
            s *= self.tq[k]
            lam[k] -= s
            for i in range(k + 1, m):
                lam[i] -= s * A[i * n + k]

    # ------------------------------------------------------------------ assembly
    cdef int assemble(self, const double* qa) noexcept nogil:
        """q (nf) with the actuated qa and the dependent joints by Newton from ``last``; K, its
        QR and G_d at the last Jacobian evaluation. 0, or 1: the NumPy path decides."""
        cdef int nf = self.nf, na = self.na, nd = self.nd, m = self.m, i, j, it, ls
        cdef int polish = 0
        cdef double* q = self.q
        cdef double* qn = self.qn
        cdef double err, en, tstep, s
        cdef bint ok
        for j in range(na):  # outside the joint's range or absurd: the NumPy path says so
            if not (self.qlo[j] < qa[j] < self.qhi[j]):
                return 1
        for i in range(nf):
            q[i] = self.lastp[i]
        for j in range(na):
            q[self.act[j]] = qa[j]
        if self.has_pred:
            for i in range(nd):
                s = 0.0
                for j in range(na):
                    s += self.dqdp[i * na + j] * (qa[j] - self.lastp[self.act[j]])
                q[self.dep[i]] -= s
        self.residual(q, self.h, self.K)
        err = _maxabs(self.h, m)
        for it in range(60):
            if self.factor():
                return 1
            if polish:  # K, its QR and G_d are those of the polished q
                return 0 if _maxabs(q, nf) < QABS else 1
            for i in range(m):
                self.r[i] = self.h[i]
            self.lstsq(self.r, self.lam)    # dq (nd) in lam
            for i in range(nd):
                if not fabs(self.lam[i]) < 1e300:
                    return 1
            if err <= self.tol:
                # one more full step (to rounding: |h| ≤ tol², whatever the start), then K, its
                # QR and G_d at the returned point, so the answer does not depend on the start
                for i in range(nf):
                    qn[i] = q[i]
                for i in range(nd):
                    qn[self.dep[i]] -= self.lam[i]
                self.residual(qn, self.r, NULL)
                en = _maxabs(self.r, m)
                if not en <= err:  # rounding: q stays, with its K and QR
                    return 0 if _maxabs(q, nf) < QABS else 1
                polish = 1
                for i in range(nf):
                    q[i] = qn[i]
                self.residual(q, self.h, self.K)
                err = _maxabs(self.h, m)
                continue
            tstep = 1.0
            ok = False
            for ls in range(30):
                for i in range(nf):
                    qn[i] = q[i]
                for i in range(nd):
                    qn[self.dep[i]] -= tstep * self.lam[i]
                self.residual(qn, self.r, NULL)
                en = _maxabs(self.r, m)
                if en < err or en <= self.tol:
                    ok = True
                    break
                tstep *= 0.5
            if not ok:
                return 1
            for i in range(nf):
                q[i] = qn[i]
            self.residual(q, self.h, self.K)
            err = _maxabs(self.h, m)
        return 1

    cdef void commit(self) noexcept nogil:
        """The assembly becomes the next start, K_d⁺K_a = −G_d the predictor."""
        cdef int i
        for i in range(self.nf):
            self.lastp[i] = self.q[i]
        for i in range(self.nd * self.na):
            self.dqdp[i] = -self.Ga[i]
        self.has_pred = True

    cdef void motion(self, const double* va, const double* aa) noexcept nogil:
        """v (nf) = G q̇_a and a (nf) = G q̈_a + γ (va / aa NULL: zero), at the assembly."""
        cdef int nf = self.nf, na = self.na, nd = self.nd, m = self.m, i, j, k
        cdef double s
        cdef bint moving = False
        for i in range(nf):
            self.v[i] = 0.0
            self.a[i] = 0.0
        if va != NULL:
            for j in range(na):
                self.v[self.act[j]] = va[j]
                if va[j] != 0.0:
                    moving = True
            for i in range(nd):
                s = 0.0
                for j in range(na):
                    s += self.Ga[i * na + j] * va[j]
                self.v[self.dep[i]] = s
        if aa != NULL:
            for j in range(na):
                self.a[self.act[j]] = aa[j]
            for i in range(nd):
                s = 0.0
                for j in range(na):
                    s += self.Ga[i * na + j] * aa[j]
                self.a[self.dep[i]] = s
        if moving:
            self.drift(self.q, self.v)
            for i in range(m):
                self.r[i] = self.kdv[i]
            self.lstsq(self.r, self.lam)
            for i in range(nd):
                self.a[self.dep[i]] -= self.lam[i]

    cdef void base_state(self, const double* qb, const double* vb, const double* ab) noexcept nogil:
        """Floating base: qF, vF, aF = the tree's (base, joints) from the base part of the
        inputs (vb / ab NULL: zero) and the assembled joints."""
        cdef int i
        if not self.fb:
            return
        for i in range(7):
            self.qF[i] = qb[i]
        for i in range(6):
            self.vF[i] = vb[i] if vb != NULL else 0.0
            self.aF[i] = ab[i] if ab != NULL else 0.0
        for i in range(self.nf):
            self.qF[7 + i] = self.q[i]
            self.vF[6 + i] = self.v[i]
            self.aF[6 + i] = self.a[i]

    cdef void tree_id(self) noexcept nogil:
        """t (nv) = RNEA(q, v, a) of the spanning tree (floating base: after base_state)."""
        if self.fb:
            load_rows(self.km, &self.d.w, self.qF, self.vF, self.aF)
        else:
            load_rows(self.km, &self.d.w, self.q, self.v, self.a)
        rnea0(self.km, &self.d.w, False, self.t)

    cdef void project(self, const double* t, double* out) noexcept nogil:
        """out (naf) = G_fᵀ t, G_f = blockdiag(I₆, G) with a floating base."""
        cdef int i, j, o = self.o
        cdef double s
        for i in range(o):
            out[i] = t[i]
        for j in range(self.na):
            s = t[o + self.act[j]]
            for i in range(self.nd):
                s += self.Ga[i * self.na + j] * t[o + self.dep[i]]
            out[o + j] = s

    cdef int reduced_mass(self) noexcept nogil:
        """Ma = G_fᵀMG_f (naf × naf) from M (nv × nv) at q by the CRBA kernel."""
        cdef int nf = self.nf, na = self.na, nd = self.nd, o = self.o, i, j, k
        cdef int nv = nf + o, naf = self.naf
        cdef double s
        load_jet(self.km, &self.d.w, self.qF if self.fb else self.q, NULL, 0)
        crba(self.km, &self.d.w, self.M)
        for i in range(nv):
            for k in range(o):
                self.MG[i * naf + k] = self.M[i * nv + k]
            for k in range(na):
                s = self.M[i * nv + o + self.act[k]]
                for j in range(nd):
                    s += self.M[i * nv + o + self.dep[j]] * self.Ga[j * na + k]
                self.MG[i * naf + o + k] = s
        for k in range(naf):
            for i in range(o):
                self.Ma[i * naf + k] = self.MG[i * naf + k]
            for i in range(na):
                s = self.MG[(o + self.act[i]) * naf + k]
                for j in range(nd):
                    s += self.Ga[j * na + i] * self.MG[(o + self.dep[j]) * naf + k]
                self.Ma[(o + i) * naf + k] = s
        return 0

    cdef int cholesky(self) noexcept nogil:
        cdef int n = self.naf, i, j, k
        cdef double s, s2
        cdef double* L = self.Ma
        for j in range(n):
            s = L[j * n + j]
            for k in range(j):
                s -= L[j * n + k] * L[j * n + k]
            if not s > 0.0:
                return 1
            s = sqrt(s)
            L[j * n + j] = s
            for i in range(j + 1, n):
                s2 = L[i * n + j]
                for k in range(j):
                    s2 -= L[i * n + k] * L[j * n + k]
                L[i * n + j] = s2 / L[j * n + j]
        return 0

    # ------------------------------------------------------------------ entries
    cdef int inputs(self, int nargs, q, x, y, str nx, str ny) except -1:
        """1 when the first ``nargs`` of q (nqa,), x, y (naf,) are float64 C-contiguous 1-D
        arrays (then checked: finite, a unit base quaternion), 0 when the caller must convert
        (None included: the caller's checks name it)."""
        cdef double* b
        cdef double r
        if not (self.fast and _plain(q, self.nqa) and (nargs < 2 or _plain(x, self.naf))
                and (nargs < 3 or _plain(y, self.naf))):
            return 0
        check_finite(q, "q")
        if nargs >= 2:
            check_finite(x, nx)
        if nargs >= 3:
            check_finite(y, ny)
        if self.fb:
            b = _p(q)
            r = b[3] * b[3] + b[4] * b[4] + b[5] * b[5] + b[6] * b[6]
            if not (fabs(r - 1.0) <= 1e-6):
                raise ValueError(f"q: the base quaternion (qx, qy, qz, qw) = ({b[3]:g}, {b[4]:g}, "
                                 f"{b[5]:g}, {b[6]:g}) is not a unit quaternion")
        return 1

    cdef int state3(self, q, qd, qdd) noexcept:
        """Assembly and the full motion (q̇, q̈ None: zero) into the tree's q, v, a. 0, or 1:
        fallback."""
        cdef double* qp = _p(q)
        cdef double* vp = NULL
        cdef double* ap = NULL
        if qd is not None:
            vp = _p(qd)
        if qdd is not None:
            ap = _p(qdd)
        if self.assemble(qp + 7 * self.fb):
            return 1
        self.motion(vp + self.o if vp != NULL else NULL, ap + self.o if ap != NULL else NULL)
        self.base_state(qp, vp, ap)
        return 0

    def inverse_dynamics(self, q, qd, qdd):
        """τ (naf,) = G_fᵀ RNEA for (base and) actuated q (nqa,), q̇, q̈ (naf,), or None when the
        inputs are not plain float64 arrays of these shapes (the caller converts) or this path
        cannot decide (the caller takes the NumPy path)."""
        if not self.inputs(3, q, qd, qdd, "qd", "qdd"):
            return None
        cdef cnp.ndarray out
        claim(self.d)
        try:
            if self.state3(q, qd, qdd):
                return None
            self.tree_id()
            out = cnp.PyArray_EMPTY(1, [self.naf], cnp.NPY_DOUBLE, 0)
            self.project(self.t, _p(out))
            finite_result(out, "inverse_dynamics")
            self.commit()
            return out
        finally:
            unclaim(self.d)

    # ---- batches (issue 29): one compiled loop over the samples, each sample exactly the single
    # call's steps in the same order (the assembly warm-started from the previous sample and
    # committed), so a batch equals the loop over the single calls
    cdef int batch_inputs(self, q, x, y, str nx, str ny) except -1:
        """N ≥ 0 when q (N, nqa), x, y (N, naf) are float64 C-contiguous 2-D arrays (then
        checked: finite, unit base quaternions); −1 when the caller must convert."""
        cdef Py_ssize_t N, s
        cdef double* b
        cdef double r
        if not (self.fast and _plain2(q, self.nqa) and _plain2(x, self.naf)
                and _plain2(y, self.naf)):
            return -1
        N = cnp.PyArray_DIM(<cnp.ndarray> q, 0)
        if cnp.PyArray_DIM(<cnp.ndarray> x, 0) != N or cnp.PyArray_DIM(<cnp.ndarray> y, 0) != N:
            return -1
        check_finite(q, "q")
        check_finite(x, nx)
        check_finite(y, ny)
        if self.fb:
            b = _p(q)
            for s in range(N):
                r = b[3] * b[3] + b[4] * b[4] + b[5] * b[5] + b[6] * b[6]
                if not (fabs(r - 1.0) <= 1e-6):
                    raise ValueError(f"q: the base quaternion (qx, qy, qz, qw) = ({b[3]:g}, "
                                     f"{b[4]:g}, {b[5]:g}, {b[6]:g}) is not a unit quaternion")
                b += self.nqa
        return <int> N

    cdef int state3p(self, double* qp, double* vp, double* ap) noexcept nogil:
        """:meth:`state3` on raw rows (vp / ap NULL: zero). 0, or 1: fallback."""
        if self.assemble(qp + 7 * self.fb):
            return 1
        self.motion(vp + self.o if vp != NULL else NULL, ap + self.o if ap != NULL else NULL)
        self.base_state(qp, vp, ap)
        return 0

    cdef int fd_row(self, double* qp, double* vp, double* tp, double* x) noexcept nogil:
        """One sample of :meth:`forward_dynamics` into x (naf): 0, 1 (fallback) or 2 (|q̇| or
        |τ| ≥ HUGE)."""
        cdef int n = self.naf, i, k
        cdef double s
        cdef double* L
        if self.state3p(qp, vp, NULL):
            return 1
        if (_maxabs(self.vF if self.fb else self.v, self.nf + self.o) >= HUGE
                or _maxabs(tp, n) >= HUGE):
            return 2
        self.tree_id()
        self.reduced_mass()
        if self.cholesky():
            return 1
        self.project(self.t, x)
        L = self.Ma
        for i in range(n):
            s = tp[i] - x[i]
            for k in range(i):
                s -= L[i * n + k] * x[k]
            x[i] = s / L[i * n + i]
        for i in range(n - 1, -1, -1):
            s = x[i]
            for k in range(i + 1, n):
                s -= L[k * n + i] * x[k]
            x[i] = s / L[i * n + i]
        return 0

    def inverse_dynamics_batch(self, q, qd, qdd):
        """τ (N, naf) for q (N, nqa), q̇, q̈ (N, naf) in one compiled loop, each row as
        :meth:`inverse_dynamics`; None when the inputs are not plain arrays or a sample cannot
        be decided here (the caller then loops over the single calls)."""
        cdef int N = self.batch_inputs(q, qd, qdd, "qd", "qdd"), s, bad = 0
        if N < 0:
            return None
        cdef cnp.ndarray out = cnp.PyArray_EMPTY(2, [N, self.naf], cnp.NPY_DOUBLE, 0)
        cdef double* qp = _p(q)
        cdef double* vp = _p(qd)
        cdef double* ap = _p(qdd)
        cdef double* op = _p(out)
        claim(self.d)
        try:
            with nogil:
                for s in range(N):
                    if self.state3p(qp + s * self.nqa, vp + s * self.naf, ap + s * self.naf):
                        bad = 1
                        break
                    self.tree_id()
                    self.project(self.t, op + s * self.naf)
                    self.commit()
            if bad:
                return None
            return finite_result(out, "inverse_dynamics")
        finally:
            unclaim(self.d)

    def forward_dynamics_batch(self, q, qd, tau):
        """q̈ (N, naf) for q (N, nqa), q̇, τ (N, naf) in one compiled loop, each row as
        :meth:`forward_dynamics`; None as :meth:`inverse_dynamics_batch`."""
        cdef int N = self.batch_inputs(q, qd, tau, "qd", "tau"), s, st = 0, i
        if N < 0:
            return None
        cdef cnp.ndarray out = cnp.PyArray_EMPTY(2, [N, self.naf], cnp.NPY_DOUBLE, 0)
        cdef double* qp = _p(q)
        cdef double* vp = _p(qd)
        cdef double* tp = _p(tau)
        cdef double* op = _p(out)
        claim(self.d)
        try:
            with nogil:
                for s in range(N):
                    st = self.fd_row(qp + s * self.nqa, vp + s * self.naf, tp + s * self.naf,
                                     op + s * self.naf)
                    if st:
                        break
                    self.commit()
            if st == 2:
                raise ValueError("forward_dynamics: qd or tau is too large for float64 "
                                 f"arithmetic (|value| >= {HUGE:g})")
            if st:
                return None
            for i in range(N * self.naf):
                if not fabs(op[i]) < 1e308:
                    raise ValueError("forward_dynamics: the result overflowed to inf or NaN — "
                                     "an input is too large for float64 arithmetic")
            return out
        finally:
            unclaim(self.d)

    cdef int jet_row(self, double* q, int K1, double* ot) noexcept nogil:
        """One fixed-base jet of :meth:`torque_derivatives` (its steps, in its order): τ_a …
        τ_a^(K1−3) (K1 − 2, na) into ot for the actuated jet q (K1, na). 0, or 1: fallback."""
        cdef int k = K1 - 3, r, j, col, dd, nf = self.nf, na = self.na, nd = self.nd, i
        cdef double fr = 1.0, acc
        cdef double fj[NMAX]
        if self.assemble(q):
            return 1
        self.start_jet(q, K1)
        self.g_jets(k + 1)
        fj[0] = 1.0
        for r in range(1, K1):
            fr *= r
            if r < NMAX:
                fj[r] = fr
            for i in range(nf):
                self.VS[(r - 1) * nf + i] = self.QS[r * nf + i] * fr
        load_jet(self.km, &self.d.w, self.QS, self.VS, k + 2)
        rnea_jet(self.km, &self.d.w, k, False, self.TT)
        for r in range(k + 1):
            for col in range(na):
                acc = self.TT[r * nf + self.act[col]] / fj[r]
                for j in range(r + 1):
                    for dd in range(nd):
                        acc += (self.GS[(j * nd + dd) * na + col]
                                * self.TT[(r - j) * nf + self.dep[dd]] / fj[r - j])
                ot[r * na + col] = acc * fj[r]
        return 0

    def torque_derivatives_batch(self, qs):
        """Fixed base: τ_a jets (N, k+1, na) for N actuated jets qs (N, k+3, na) in one compiled
        loop, each as :meth:`torque_derivatives`; None when qs is not a plain float64 array of
        that shape (3 ≤ k+3 ≤ NMAX), on a floating base, or when a sample cannot be decided here
        (the caller then loops over the single calls)."""
        cdef cnp.ndarray a
        cdef int N, K1, s, bad = 0
        if self.fb or not (self.fast and cnp.PyArray_CheckExact(qs)):
            return None
        a = <cnp.ndarray> qs
        if not (cnp.PyArray_TYPE(a) == cnp.NPY_DOUBLE and cnp.PyArray_NDIM(a) == 3
                and cnp.PyArray_IS_C_CONTIGUOUS(a) and cnp.PyArray_DIM(a, 2) == self.na
                and 3 <= cnp.PyArray_DIM(a, 1) <= NMAX):
            return None
        N = <int> cnp.PyArray_DIM(a, 0)
        K1 = <int> cnp.PyArray_DIM(a, 1)
        check_finite(qs, "qs")
        if K1 - 3 > self.d.kmax:
            self.d.grow(K1 - 3)  # as the tree's own entries do
        cdef cnp.ndarray out = cnp.PyArray_EMPTY(3, [N, K1 - 2, self.na], cnp.NPY_DOUBLE, 0)
        cdef double* qp = _p(qs)
        cdef double* op = _p(out)
        claim(self.d)
        try:
            with nogil:
                for s in range(N):
                    if self.jet_row(qp + s * K1 * self.na, K1, op + s * (K1 - 2) * self.na):
                        bad = 1
                        break
                    self.commit()
            if bad:
                return None
            return finite_result(out, "torque_derivatives")
        finally:
            unclaim(self.d)

    def multipliers(self, q, qd, qdd):
        """λ (m,), the minimum-norm solution of K_dᵀλ = τ_tree,d, or None (inverse_dynamics)."""
        cdef int i
        if not self.inputs(3, q, qd, qdd, "qd", "qdd"):
            return None
        cdef cnp.ndarray out
        claim(self.d)
        try:
            if self.state3(q, qd, qdd):
                return None
            self.tree_id()
            for i in range(self.nd):
                self.r[i] = self.t[self.o + self.dep[i]]
            out = cnp.PyArray_EMPTY(1, [self.m], cnp.NPY_DOUBLE, 0)
            self.min_norm(self.r, _p(out))
            finite_result(out, "constraint_forces")
            self.commit()
            return out
        finally:
            unclaim(self.d)

    def gravity_torques(self, q):
        """g = G_fᵀ g_tree (naf,), or None."""
        if not self.inputs(1, q, None, None, "", ""):
            return None
        cdef cnp.ndarray out
        claim(self.d)
        try:
            if self.state3(q, None, None):
                return None
            self.tree_id()
            out = cnp.PyArray_EMPTY(1, [self.naf], cnp.NPY_DOUBLE, 0)
            self.project(self.t, _p(out))
            finite_result(out, "gravity_torques")
            self.commit()
            return out
        finally:
            unclaim(self.d)

    def mass_matrix(self, q):
        """G_fᵀMG_f (naf, naf), or None."""
        cdef int i, n = self.naf
        if not self.inputs(1, q, None, None, "", ""):
            return None
        cdef cnp.ndarray out
        claim(self.d)
        try:
            if self.state3(q, None, None):
                return None
            self.reduced_mass()
            out = cnp.PyArray_EMPTY(2, [n, n], cnp.NPY_DOUBLE, 0)
            for i in range(n * n):
                (<double*> cnp.PyArray_DATA(out))[i] = self.Ma[i]
            finite_result(out, "mass_matrix")
            self.commit()
            return out
        finally:
            unclaim(self.d)

    def forward_dynamics(self, q, qd, tau):
        """(base acceleration and) q̈_a (naf,) for τ (naf,) — the index-1 Lagrange equations in
        the null-space form — or None (see inverse_dynamics). ValueError for |q̇|, |τ| ≥ 1e150
        or an overflow, as the NumPy path."""
        cdef int n = self.naf, i, k
        cdef double s
        cdef double* x
        cdef double* L
        cdef double* tp
        if not self.inputs(3, q, qd, tau, "qd", "tau"):
            return None
        tp = _p(tau)
        cdef cnp.ndarray out
        claim(self.d)
        try:
            if self.state3(q, qd, None):
                return None
            if (_maxabs(self.vF if self.fb else self.v, self.nf + self.o) >= HUGE
                    or _maxabs(tp, n) >= HUGE):
                raise ValueError("forward_dynamics: qd or tau is too large for float64 "
                                 f"arithmetic (|value| >= {HUGE:g})")
            self.tree_id()     # c + Mγ
            self.reduced_mass()
            if self.cholesky():
                return None
            out = cnp.PyArray_EMPTY(1, [n], cnp.NPY_DOUBLE, 0)
            x = _p(out)
            self.project(self.t, x)
            L = self.Ma
            for i in range(n):
                s = tp[i] - x[i]
                for k in range(i):
                    s -= L[i * n + k] * x[k]
                x[i] = s / L[i * n + i]
            for i in range(n - 1, -1, -1):
                s = x[i]
                for k in range(i + 1, n):
                    s -= L[k * n + i] * x[k]
                x[i] = s / L[i * n + i]
            for i in range(n):
                if not fabs(x[i]) < 1e308:
                    raise ValueError("forward_dynamics: the result overflowed to inf or NaN — an "
                                     "input is too large for float64 arithmetic")
            self.commit()
            return out
        finally:
            unclaim(self.d)

    def coriolis_matrix(self, q, qd, int mode):
        """C̄_a = G_fᵀ(C̄ G_f + M Ġ_f) (mode 0) or Ṁ_a = Ġ_fᵀMG_f + G_fᵀṀG_f + G_fᵀMĠ_f
        (mode 1), (naf, naf), with Ġ_d the first coefficient of the G jets (:mod:`.dynamics`)
        and the tree's C̄ / Ṁ and M from the CRBA-room kernels; None as inverse_dynamics."""
        cdef int nf = self.nf, na = self.na, nd = self.nd, o = self.o, naf = self.naf
        cdef int nv = nf + o, i, j, k
        cdef double acc
        cdef double* Mt = self.M
        cdef cnp.ndarray out
        cdef double* res
        if not self.inputs(2, q, qd, None, "qd", ""):
            return None
        claim(self.d)
        try:
            if self.state3(q, None, None):
                return None
            # the full velocity: v_d = G_d q̇_a (no drift needed)
            for j in range(na):
                self.v[self.act[j]] = _p(qd)[o + j]
            for i in range(nd):
                acc = 0.0
                for j in range(na):
                    acc += self.Ga[i * na + j] * _p(qd)[o + j]
                self.v[self.dep[i]] = acc
            for i in range(nf):
                self.QS[i] = self.q[i]
                self.QS[nf + i] = self.v[i]
            self.g_jets(2)
            self.base_state(_p(q), _p(qd), NULL)
            for i in range(nv * naf):
                self.Gf[i] = 0.0
                self.Gdf[i] = 0.0
            for k in range(o):
                self.Gf[k * naf + k] = 1.0
            for j in range(na):
                self.Gf[(o + self.act[j]) * naf + o + j] = 1.0
                for i in range(nd):
                    self.Gf[(o + self.dep[i]) * naf + o + j] = self.Ga[i * na + j]
                    self.Gdf[(o + self.dep[i]) * naf + o + j] = self.GS[(nd + i) * na + j]
            if self.fb:
                load_jet(self.km, &self.d.w, self.qF, self.vF, 1)
            else:
                load_jet(self.km, &self.d.w, self.q, self.v, 1)
            coriolis(self.km, &self.d.w, mode, self.Cm)
            crba(self.km, &self.d.w, Mt)
            out = cnp.PyArray_EMPTY(2, [naf, naf], cnp.NPY_DOUBLE, 0)
            res = _p(out)
            # MG = M G_f, then A = (C̄ G_f + M Ġ_f) (mode 0) or Ṁ G_f (mode 1) into Gdf's room
            for i in range(nv):
                for k in range(naf):
                    acc = 0.0
                    for j in range(nv):
                        acc += Mt[i * nv + j] * self.Gf[j * naf + k]
                    self.MG[i * naf + k] = acc
            for i in range(naf):
                for k in range(naf):
                    acc = 0.0
                    for j in range(nv):
                        acc += self.Gdf[j * naf + i] * self.MG[j * naf + k]
                    res[i * naf + k] = acc            # (ĠᵀMG)_ik
            for i in range(nv):
                for k in range(naf):
                    acc = 0.0
                    for j in range(nv):
                        acc += self.Cm[i * nv + j] * self.Gf[j * naf + k]
                    self.MG[i * naf + k] = acc      # C̄G or ṀG
            for i in range(naf):
                for k in range(i if mode == 1 else 0, naf):
                    acc = 0.0
                    for j in range(nv):
                        acc += self.Gf[j * naf + i] * self.MG[j * naf + k]
                    if mode == 0:
                        # Gᵀ(C̄G) + GᵀMĠ = Gᵀ(C̄G) + (ĠᵀMG)ᵀ
                        self.Ma[i * naf + k] = acc
                    else:
                        self.Ma[i * naf + k] = acc
            if mode == 0:
                for i in range(naf):
                    for k in range(naf):
                        self.Ma[i * naf + k] += res[k * naf + i]
                for i in range(naf * naf):
                    res[i] = self.Ma[i]
            else:
                for i in range(naf):
                    for k in range(i, naf):
                        acc = self.Ma[i * naf + k] + res[i * naf + k] + res[k * naf + i]
                        self.Ma[i * naf + k] = acc
                for i in range(naf):
                    for k in range(naf):
                        res[i * naf + k] = self.Ma[i * naf + k] if k >= i else self.Ma[k * naf + i]
            finite_result(out, "coriolis_matrix")
            self.commit()
            return out
        finally:
            unclaim(self.d)

    cdef bint plain_jet(self, qs, int kmin):
        """qs a float64 C-contiguous (K1, na) array with kmin ≤ K1 ≤ NMAX."""
        cdef cnp.ndarray a
        if not (self.fast and cnp.PyArray_CheckExact(qs)):
            return False
        a = <cnp.ndarray> qs
        return (cnp.PyArray_TYPE(a) == cnp.NPY_DOUBLE and cnp.PyArray_ISNOTSWAPPED(a) and cnp.PyArray_NDIM(a) == 2
                and cnp.PyArray_DIM(a, 1) == self.na and kmin <= cnp.PyArray_DIM(a, 0) <= NMAX
                and cnp.PyArray_IS_C_CONTIGUOUS(a))

    def torque_derivatives(self, qs, vs=None):
        """τ_a, τ_a′, …, τ_a^(k) (k+1, na) along an actuated jet qs (k+3, na) of derivatives
        (fixed base), or — floating base, ``qs`` = q (7 + na,) and ``vs`` (k+2, 6 + na) —
        (k+1, 6 + na) rows of (base wrench, τ_a) and their derivatives; k ≤ 5. The dependent jet
        order by order, the G jets, the tree's recursive τ jet (RNEA kernel) and
        τ_a,r = Σ_j G_jᵀ τ_r−j (normalized coefficients, :mod:`.dynamics`). None: the caller
        converts or takes the NumPy path."""
        cdef int K1, k, r, j, col, dd, nf = self.nf, na = self.na, nd = self.nd, i
        cdef int o = self.o, nv = nf + self.o
        cdef double fr, acc
        cdef double fj[NMAX]
        cdef double* q
        cdef double* src
        cdef cnp.ndarray qa
        if self.fb:
            if not (vs is not None and _plain(qs, self.nqa) and self.plain_vs(vs)):
                return None
            K1 = <int> cnp.PyArray_DIM(<cnp.ndarray> vs, 0) + 1
            if not self.inputs(1, qs, None, None, "", ""):
                return None
            check_finite(vs, "vs")
            qa = cnp.PyArray_EMPTY(2, [K1, na], cnp.NPY_DOUBLE, 0)
            q = _p(qa)
            src = _p(qs)
            for j in range(na):
                q[j] = src[7 + j]
            src = _p(vs)
            for r in range(1, K1):
                for j in range(na):
                    q[r * na + j] = src[(r - 1) * (6 + na) + 6 + j]
        else:
            if vs is not None or not self.plain_jet(qs, 3):
                return None
            K1 = <int> cnp.PyArray_DIM(<cnp.ndarray> qs, 0)
            check_finite(qs, "qs")
            q = _p(qs)
        k = K1 - 3
        if k > self.d.kmax:
            self.d.grow(k)  # as the tree's own entries do
        cdef cnp.ndarray out
        cdef double* ot
        claim(self.d)
        try:
            if self.assemble(q):
                return None
            self.start_jet(q, K1)
            self.g_jets(k + 1)
            fr = 1.0
            fj[0] = 1.0
            for r in range(1, K1):
                fr *= r
                if r < NMAX:
                    fj[r] = fr
                for i in range(nf):
                    self.VS[(r - 1) * nv + o + i] = self.QS[r * nf + i] * fr
                for i in range(o):
                    self.VS[(r - 1) * nv + i] = _p(vs)[(r - 1) * (6 + na) + i]
            if self.fb:
                for i in range(7):
                    self.qF[i] = _p(qs)[i]
                for i in range(nf):
                    self.qF[7 + i] = self.QS[i]
                load_jet(self.km, &self.d.w, self.qF, self.VS, k + 2)
            else:
                load_jet(self.km, &self.d.w, self.QS, self.VS, k + 2)
            rnea_jet(self.km, &self.d.w, k, False, self.TT)
            out = cnp.PyArray_EMPTY(2, [k + 1, self.naf], cnp.NPY_DOUBLE, 0)
            ot = _p(out)
            for r in range(k + 1):
                for i in range(o):
                    ot[r * self.naf + i] = self.TT[r * nv + i]
                for col in range(na):
                    acc = self.TT[r * nv + o + self.act[col]] / fj[r]
                    for j in range(r + 1):
                        for dd in range(nd):
                            acc += (self.GS[(j * nd + dd) * na + col]
                                    * self.TT[(r - j) * nv + o + self.dep[dd]] / fj[r - j])
                    ot[r * self.naf + o + col] = acc * fj[r]
            finite_result(out, "torque_derivatives")
            self.commit()
            return out
        finally:
            unclaim(self.d)

    cdef bint plain_vs(self, vs):
        """vs a float64 C-contiguous (k+2, 6 + na) array, 2 ≤ k+2 ≤ NMAX − 1."""
        cdef cnp.ndarray a
        if not (self.fast and cnp.PyArray_CheckExact(vs)):
            return False
        a = <cnp.ndarray> vs
        return (cnp.PyArray_TYPE(a) == cnp.NPY_DOUBLE and cnp.PyArray_ISNOTSWAPPED(a) and cnp.PyArray_NDIM(a) == 2
                and cnp.PyArray_DIM(a, 1) == self.naf and 2 <= cnp.PyArray_DIM(a, 0) < NMAX
                and cnp.PyArray_IS_C_CONTIGUOUS(a))

    def expand(self, qs):
        """The full configuration (nf,) of actuated q (na,), or the full jet (K1, nf) of an
        actuated jet (K1 ≤ 8, na) of derivatives (the given actuated rows exactly), from the
        last assembly; None: the caller converts or takes the NumPy path."""
        cdef int K1, r, i, nf = self.nf
        cdef double fr
        cdef cnp.ndarray out
        cdef double* o
        one = _plain(qs, self.na)
        if not (self.fast and (one or self.plain_jet(qs, 1))):
            return None
        check_finite(qs, "qs")
        K1 = 1 if one else <int> cnp.PyArray_DIM(<cnp.ndarray> qs, 0)
        claim(self.d)
        try:
            if self.assemble(_p(qs)):
                return None
            if one:
                out = cnp.PyArray_EMPTY(1, [nf], cnp.NPY_DOUBLE, 0)
                o = _p(out)
                for i in range(nf):
                    o[i] = self.q[i]
            else:
                self.start_jet(_p(qs), K1)
                out = cnp.PyArray_EMPTY(2, [K1, nf], cnp.NPY_DOUBLE, 0)
                o = _p(out)
                fr = 1.0
                for r in range(K1):
                    if r:
                        fr *= r
                    for i in range(nf):
                        o[r * nf + i] = self.QS[r * nf + i] * fr
                    for i in range(self.na):
                        o[r * nf + self.act[i]] = _p(qs)[r * self.na + i]
            finite_result(out, "expand")
            self.commit()
            return out
        finally:
            unclaim(self.d)

    # ------------------------------------------------------------------ for tests
    def state(self, q, qd, qdd):
        """(q_full, q̇_full, q̈_full, K, G_d, K̇q̇) of the compiled path (None: fallback);
        for the tests against the NumPy path. Does not move ``last``."""
        cdef int na = self.na, i
        q = np.ascontiguousarray(q, dtype=float)
        qd = np.ascontiguousarray(qd, dtype=float)
        qdd = np.ascontiguousarray(qdd, dtype=float)
        if not (self.fast and _plain(q, na) and _plain(qd, na) and _plain(qdd, na)):
            return None
        claim(self.d)
        try:
            if self.assemble(_p(q)):
                return None
            self.motion(_p(qd), _p(qdd))
            K = np.array([self.K[i] for i in range(self.m * self.nf)]).reshape(self.m, self.nf)
            G = np.array([self.Ga[i] for i in range(self.nd * na)]).reshape(self.nd, na)
            kdv = np.array([self.kdv[i] for i in range(self.m)])
            return (np.array([self.q[i] for i in range(self.nf)]),
                    np.array([self.v[i] for i in range(self.nf)]),
                    np.array([self.a[i] for i in range(self.nf)]), K, G, kdv)
        finally:
            unclaim(self.d)

    def residual_jacobian(self, q_full):
        """(h, K) at a full configuration, compiled (tests)."""
        q_full = np.ascontiguousarray(q_full, dtype=float)
        if q_full.shape != (self.nf,):
            raise ValueError("q_full has the wrong shape")
        h = np.zeros(max(self.m, 1))
        K = np.zeros((max(self.m, 1), self.nf))
        claim(self.d)
        try:
            self.residual(_p(q_full), _p(h), _p(K))
        finally:
            unclaim(self.d)
        return h[:self.m], K[:self.m]

    def drift_terms(self, q_full, v_full):
        """K̇q̇ (m,) at a full state, compiled (tests)."""
        q_full = np.ascontiguousarray(q_full, dtype=float)
        v_full = np.ascontiguousarray(v_full, dtype=float)
        if q_full.shape != (self.nf,) or v_full.shape != (self.nf,):
            raise ValueError("wrong shapes")
        claim(self.d)
        try:
            self.drift(_p(q_full), _p(v_full))
            return np.array([self.kdv[i] for i in range(self.m)])
        finally:
            unclaim(self.d)
