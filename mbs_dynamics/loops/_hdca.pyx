# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Compiled divide-and-conquer assembly of :class:`mbs_dynamics.loops.hdca.HDCA` at acceleration
level (seed 002 Alg. 1–2 with forces instead of impulses: Featherstone's DCA), the
``forward_dynamics(method="dca")`` path.

The plan (the binary assembly tree, the handles of every connection, the index sets of every
elimination) is the NumPy class's, flattened once into integer arrays by
:func:`mbs_dynamics.loops.hdca.HDCA.compiled`; every per-call quantity lives in this object's
workspace (no allocation per call). Per call (:meth:`HDCAKernel.solve`):

* kinematics: world poses C_i, relative poses T_k = B_k exp(X_k q_k), screws S_k = Ad_{C_k} X_k,
  H_k = S_k/|S_k|², twists V_i, the body terms f_i = M_i a_g + ad_{V_i}ᵀ M_i V_i + W_i^ext;
* handles: the joint constraint bases D_k^b (D_k^bᵀ X_k = 0, constant in body k; in the parent
  −Ad_{T_k}⁻ᵀ D_k^b), the loop wrench bases E_ℓ of frame_b, the mimic rows ±H_m, ∓k H_s
  (module docstring of ``hdca.py``);
* assembly (eq. 17–36) in the body frames: leaf Λ = UᵀU, λ₀ = Uᵀu with U = L_bᵀ Ad_Cᵀ B,
  u = L_bᵀ Ad_Cᵀ rhs (M_i⁻¹ = Ad_C L_b L_bᵀ Ad_Cᵀ, L_b the Cholesky factor of (M_i^b)⁻¹; the own
  joint's block constant); internal nodes add their children's and eliminate the closed
  connections J: P Λ_JJ Pᵀ = R Rᵀ (Cholesky; diagonal pivoting, rank-revealing, once a loop or
  mimic row is closed in the subassembly), G = R⁻¹ P[Λ_Jb | β_J − λ₀_J], Λ' = Λ_bb − GᵀG,
  λ₀' = λ₀_b + Gᵀg₀ — redundant rows get no impulse, never a singular solve;
* disassembly (Alg. 2): P σ_J = [R⁻ᵀ(g₀ − G σ_b); 0] top-down, X_i = Ad_C L_b(u + U σ),
  q̈_k = H_kᵀ(X_k − X_λ(k) − Ṡ_k q̇_k).

The momentum level (seed 002 Alg. 1–3, ``HDCA.velocity`` / ``momentum_rate``, what
``simulate(method="hdca")`` integrates): :meth:`HDCAKernel.velocity` runs the same assembly with
the right-hand side H_k P_k (β = 0, no body terms) and returns q̇, the twists and the impulses;
:meth:`HDCAKernel.momentum_rate` computes Ṗ_k = τ_k + S_kᵀΓ_k + (ad_{V_λ(k)}S_k)ᵀ(Π_k − W_k) +
S_kᵀW₂_k (eq. 77 in the spatial form; a floating base's Euler–Poincaré row) from them.

:meth:`HDCAKernel.refine_core` is the iterative-refinement step of ``HDCA._correction`` (the
residual of the spanning tree's RNEA, computed here in the world frame, mapped back through the
stored factorisation). Thread safety: one workspace per HDCA plan, taken under the GIL for a
whole call; a second thread inside at the same time gets a private copy.
"""
import numpy as np
from libc.math cimport sin, cos, sqrt, fabs, isfinite
from libc.string cimport memset, memcpy
from cpython.pythread cimport PyThread_get_thread_ident


cdef inline double* dp(object a):
    cdef double[::1] v = a
    return &v[0] if v.shape[0] else <double*>0


cdef inline int* ip(object a):
    cdef int[::1] v = a
    return &v[0] if v.shape[0] else <int*>0


# ---------------------------------------------------------------- small spatial helpers
cdef inline void wrenchT(const double* R, const double* p, const double* w, double* o) noexcept nogil:
    """o = Ad_C⁻ᵀ w for C = (R, p), w = (m, f) angular-first: (R m + p × R f, R f)."""
    cdef double rm[3]
    cdef double rf[3]
    cdef int i
    for i in range(3):
        rm[i] = R[3 * i] * w[0] + R[3 * i + 1] * w[1] + R[3 * i + 2] * w[2]
        rf[i] = R[3 * i] * w[3] + R[3 * i + 1] * w[4] + R[3 * i + 2] * w[5]
    o[0] = rm[0] + p[1] * rf[2] - p[2] * rf[1]
    o[1] = rm[1] + p[2] * rf[0] - p[0] * rf[2]
    o[2] = rm[2] + p[0] * rf[1] - p[1] * rf[0]
    o[3] = rf[0]
    o[4] = rf[1]
    o[5] = rf[2]


cdef inline void wrenchT_inv(const double* R, const double* p, const double* w, double* o) noexcept nogil:
    """o = Ad_Cᵀ w: the world wrench w = (m, f) in the frame C: (Rᵀ(m − p × f), Rᵀ f)."""
    cdef double m0 = w[0] - (p[1] * w[5] - p[2] * w[4])
    cdef double m1 = w[1] - (p[2] * w[3] - p[0] * w[5])
    cdef double m2 = w[2] - (p[0] * w[4] - p[1] * w[3])
    cdef int i
    for i in range(3):
        o[i] = R[i] * m0 + R[3 + i] * m1 + R[6 + i] * m2
        o[3 + i] = R[i] * w[3] + R[3 + i] * w[4] + R[6 + i] * w[5]


cdef inline void twistAd(const double* R, const double* p, const double* x, double* o) noexcept nogil:
    """o = Ad_C x, x = (ω, v): (R ω, p × R ω + R v)."""
    cdef double rw[3]
    cdef double rv[3]
    cdef int i
    for i in range(3):
        rw[i] = R[3 * i] * x[0] + R[3 * i + 1] * x[1] + R[3 * i + 2] * x[2]
        rv[i] = R[3 * i] * x[3] + R[3 * i + 1] * x[4] + R[3 * i + 2] * x[5]
    o[0] = rw[0]
    o[1] = rw[1]
    o[2] = rw[2]
    o[3] = p[1] * rw[2] - p[2] * rw[1] + rv[0]
    o[4] = p[2] * rw[0] - p[0] * rw[2] + rv[1]
    o[5] = p[0] * rw[1] - p[1] * rw[0] + rv[2]


cdef inline void twistAd_inv(const double* R, const double* p, const double* x, double* o) noexcept nogil:
    """o = Ad_C⁻¹ x: (Rᵀ ω, Rᵀ(v − p × ω))."""
    cdef double v0 = x[3] - (p[1] * x[2] - p[2] * x[1])
    cdef double v1 = x[4] - (p[2] * x[0] - p[0] * x[2])
    cdef double v2 = x[5] - (p[0] * x[1] - p[1] * x[0])
    cdef int i
    for i in range(3):
        o[i] = R[i] * x[0] + R[3 + i] * x[1] + R[6 + i] * x[2]
        o[3 + i] = R[i] * v0 + R[3 + i] * v1 + R[6 + i] * v2


cdef inline void ad_mul(const double* V, const double* x, double* o) noexcept nogil:
    """o = ad_V x = (ω × x_ω, v × x_ω + ω × x_v)."""
    o[0] = V[1] * x[2] - V[2] * x[1]
    o[1] = V[2] * x[0] - V[0] * x[2]
    o[2] = V[0] * x[1] - V[1] * x[0]
    o[3] = V[4] * x[2] - V[5] * x[1] + V[1] * x[5] - V[2] * x[4]
    o[4] = V[5] * x[0] - V[3] * x[2] + V[2] * x[3] - V[0] * x[5]
    o[5] = V[3] * x[1] - V[4] * x[0] + V[0] * x[4] - V[1] * x[3]


cdef inline void adT_mul_add(const double* V, const double* w, double* o) noexcept nogil:
    """o += ad_Vᵀ w, w = (m, f): (m × ω + f × v, f × ω)."""
    o[0] += w[1] * V[2] - w[2] * V[1] + w[4] * V[5] - w[5] * V[4]
    o[1] += w[2] * V[0] - w[0] * V[2] + w[5] * V[3] - w[3] * V[5]
    o[2] += w[0] * V[1] - w[1] * V[0] + w[3] * V[4] - w[4] * V[3]
    o[3] += w[4] * V[2] - w[5] * V[1]
    o[4] += w[5] * V[0] - w[3] * V[2]
    o[5] += w[3] * V[1] - w[4] * V[0]


cdef inline double dot6(const double* a, const double* b) noexcept nogil:
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3] + a[4] * b[4] + a[5] * b[5]


cdef inline void mat6_vec(const double* M, const double* x, double* o) noexcept nogil:
    cdef int i
    for i in range(6):
        o[i] = (M[6 * i] * x[0] + M[6 * i + 1] * x[1] + M[6 * i + 2] * x[2] + M[6 * i + 3] * x[3]
                + M[6 * i + 4] * x[4] + M[6 * i + 5] * x[5])


cdef inline void LbT_mul(const double* LbT, const double* x, double* o) noexcept nogil:
    """o = Lbᵀ x, LbT = Lbᵀ upper triangular 6×6 row-major."""
    cdef int r, k
    cdef double t
    for r in range(6):
        t = 0.0
        for k in range(r, 6):
            t += LbT[6 * r + k] * x[k]
        o[r] = t


cdef inline void Lb_mul(const double* Lb, const double* x, double* o) noexcept nogil:
    """o = Lb x, Lb lower triangular 6×6 row-major."""
    cdef int r, k
    cdef double t
    for r in range(6):
        t = 0.0
        for k in range(r + 1):
            t += Lb[6 * r + k] * x[k]
        o[r] = t


cdef void joint_exp(const double* X, double q, int kind, double* R, double* p) noexcept nogil:
    """exp(X q) for a screw X = (ω, v), |ω| = 1 (kind 0) or ω = 0 (kind 1) (seed 001 eq. 6–7)."""
    cdef double s, c, w0, w1, w2, a0, a1, a2, wv
    cdef int i, j
    if kind == 1:
        R[0] = 1.0; R[1] = 0.0; R[2] = 0.0
        R[3] = 0.0; R[4] = 1.0; R[5] = 0.0
        R[6] = 0.0; R[7] = 0.0; R[8] = 1.0
        p[0] = X[3] * q; p[1] = X[4] * q; p[2] = X[5] * q
        return
    s = sin(q)
    c = cos(q)
    w0 = X[0]; w1 = X[1]; w2 = X[2]
    # R = I + s W + (1 − c) W²  (Rodrigues)
    R[0] = 1.0 + (1.0 - c) * (-w1 * w1 - w2 * w2)
    R[1] = -s * w2 + (1.0 - c) * w0 * w1
    R[2] = s * w1 + (1.0 - c) * w0 * w2
    R[3] = s * w2 + (1.0 - c) * w0 * w1
    R[4] = 1.0 + (1.0 - c) * (-w0 * w0 - w2 * w2)
    R[5] = -s * w0 + (1.0 - c) * w1 * w2
    R[6] = -s * w1 + (1.0 - c) * w0 * w2
    R[7] = s * w0 + (1.0 - c) * w1 * w2
    R[8] = 1.0 + (1.0 - c) * (-w0 * w0 - w1 * w1)
    # p = (I − R)(ω × v) + ω ωᵀ v q
    a0 = w1 * X[5] - w2 * X[4]
    a1 = w2 * X[3] - w0 * X[5]
    a2 = w0 * X[4] - w1 * X[3]
    wv = (w0 * X[3] + w1 * X[4] + w2 * X[5]) * q
    p[0] = a0 - (R[0] * a0 + R[1] * a1 + R[2] * a2) + w0 * wv
    p[1] = a1 - (R[3] * a0 + R[4] * a1 + R[5] * a2) + w1 * wv
    p[2] = a2 - (R[6] * a0 + R[7] * a1 + R[8] * a2) + w2 * wv


cdef inline void compose(const double* R1, const double* p1, const double* R2, const double* p2,
                         double* R, double* p) noexcept nogil:
    """(R, p) = (R1, p1)(R2, p2)."""
    cdef int i, j
    for i in range(3):
        for j in range(3):
            R[3 * i + j] = R1[3 * i] * R2[j] + R1[3 * i + 1] * R2[3 + j] + R1[3 * i + 2] * R2[6 + j]
        p[i] = R1[3 * i] * p2[0] + R1[3 * i + 1] * p2[1] + R1[3 * i + 2] * p2[2] + p1[i]


# ---------------------------------------------------------------- small dense algebra
cdef int chol(double* A, int n) noexcept nogil:
    """In-place Cholesky A = L Lᵀ (lower triangle, row-major n×n); −1 if not positive."""
    cdef int i, j, k
    cdef double s
    for j in range(n):
        s = A[j * n + j]
        for k in range(j):
            s -= A[j * n + k] * A[j * n + k]
        if not s > 0.0:
            return -1
        s = sqrt(s)
        A[j * n + j] = s
        for i in range(j + 1, n):
            t = A[i * n + j]
            for k in range(j):
                t -= A[i * n + k] * A[j * n + k]
            A[i * n + j] = t / s
    return 0


cdef int pchol(double* A, int n, int* perm, double tol) noexcept nogil:
    """Cholesky with diagonal pivoting of the symmetric positive semidefinite A (n×n,
    row-major, overwritten): P A Pᵀ = R Rᵀ with R the lower rank × rank block of A, ``perm[r]``
    the original row of pivot r; stops when the largest remaining pivot is ≤ tol × the largest
    diagonal entry (rank-revealing). Returns the rank."""
    cdef int i, j, l, p, ti
    cdef double big = 0.0, d, t
    for i in range(n):
        perm[i] = i
        if A[i * n + i] > big:
            big = A[i * n + i]
    if not big > 0.0:
        return 0
    for j in range(n):
        p = j
        for i in range(j + 1, n):
            if A[i * n + i] > A[p * n + p]:
                p = i
        if not A[p * n + p] > tol * big:
            return j
        if p != j:
            for l in range(n):
                t = A[j * n + l]; A[j * n + l] = A[p * n + l]; A[p * n + l] = t
            for l in range(n):
                t = A[l * n + j]; A[l * n + j] = A[l * n + p]; A[l * n + p] = t
            ti = perm[j]; perm[j] = perm[p]; perm[p] = ti
        d = sqrt(A[j * n + j])
        A[j * n + j] = d
        for i in range(j + 1, n):
            A[i * n + j] /= d
        for i in range(j + 1, n):
            t = A[i * n + j]
            for l in range(j + 1, n):
                A[i * n + l] -= t * A[l * n + j]
    return n


cdef class HDCAKernel:
    """The workspace and the flattened plan of one :class:`~.hdca.HDCA` (see the module
    docstring). Built by ``HDCA.compiled()``; not for direct use."""
    cdef list _keep
    cdef readonly object spec
    cdef int n, nb, fb, nl, nm, nc, ns, N, nsrc, nhcol
    cdef int maxm, maxJ, maxb
    cdef int busy
    cdef unsigned long owner
    # model
    cdef int* par
    cdef int* kind
    cdef double* BR
    cdef double* Bp
    cdef double* Xs
    cdef double* Ib
    cdef double* Dloc
    cdef double g[3]
    # loops, mimic
    cdef int* la
    cdef int* lb
    cdef double* lSR
    cdef double* lSp
    cdef int* ldim
    cdef int* lsel
    cdef int* lsrc
    cdef int* mmj
    cdef int* mms
    cdef double* mmk
    # connections and handles
    cdef int* cdim
    cdef int* coff
    cdef int* bcol      # (nb + 1) first column of body i's handle block
    cdef int* colsig    # (nhcol) sigma index of a handle column
    cdef int* tptr      # (nhcol + 1) terms of a handle column
    cdef int* tsrc
    cdef double* tcoef
    # plan
    cdef int* leaf
    cdef int* kA
    cdef int* kB
    cdef int* mpre
    cdef int* nJ
    cdef int* npost
    cdef int* pinv
    cdef int* oiJ
    cdef int* oib
    cdef int* ova
    cdef int* ovb
    cdef int* idx
    cdef int* gsig
    cdef int* oL
    cdef int* ol0
    cdef int* oF
    cdef int* oZ
    cdef int* oz0
    cdef int* oY
    cdef int* ucon       # (nhcol) own-joint column of Uself, or −1
    cdef double* Lb      # (nb, 36) lower Cholesky factor of (M_i^b)⁻¹
    cdef double* LbT     # (nb, 36) its transpose
    cdef double* Uself   # (5 n, 6) Lbᵀ D_k^b: the constant leaf columns of a body's own joint
    cdef double* ur      # (nb, 6) Lbᵀ Ad_Cᵀ rhs_i
    cdef double* fbody   # (nb, 6) the body terms f_i (world)
    cdef double* T       # (n, 12) pose of body k in its parent, B_k exp(X_k q_k)
    cdef int* ukind      # (nhcol) 0: generic (world B), 1: own joint (constant), 2: a child's joint
    cdef int* uref       # (nhcol) ukind 2: the D^b column 5c + j
    cdef int* perm       # (len idx) pivot order of each closure's rows (at oiJ)
    cdef int* rank       # (N) rank of each closure
    cdef double* Lself   # (n, 25) the constant Λ block of a body's own joint, U_selfᵀ U_self
    # workspace
    cdef double* C       # (nb, 12)
    cdef double* S       # (n, 6)
    cdef double* H       # (n, 6)
    cdef double* V       # (nb, 6)
    cdef double* rhs     # (nb, 6)
    cdef double* X       # (nb, 6)
    cdef double* bias    # (n, 6)
    cdef double* src     # (nsrc, 6)
    cdef double* Bst     # (nhcol, 6)
    cdef double* beta    # (ns,)
    cdef double* sig     # (ns,)
    cdef double* store   # per-node blocks
    cdef double* Lpre
    cdef double* l0pre
    cdef double* rhsJ
    cdef double* fx      # (nb, 6) applied body-frame wrenches (m, f), base row n
    cdef double* Acc     # (nb, 6)
    cdef double* Wr      # (nb, 6)
    cdef double* gen     # (nv,)
    cdef double* Pim     # (nb, 6) subtree momenta Π (momentum level)
    cdef double* Gam     # (nb, 6) subtree gravity wrenches Γ
    cdef double* W2m     # (nb, 6) subtree ad_{V_b}ᵀ E σ
    cdef double* zv      # (nv,) zeros: the velocity of the momentum level's kinematics

    def __init__(self, dict spec):
        self.spec = spec
        self._keep = []

        def I(name):
            a = np.array(spec[name], dtype=np.intc).ravel().copy()
            if a.size == 0:
                a = np.zeros(1, np.intc)
            self._keep.append(a)
            return a

        def D(name):
            a = np.array(spec[name], dtype=np.float64).ravel().copy()
            if a.size == 0:
                a = np.zeros(1)
            self._keep.append(a)
            return a

        def Z(size):
            a = np.zeros(max(int(size), 1))
            self._keep.append(a)
            return a

        self.n, self.nb, self.fb = spec["n"], spec["nb"], spec["fb"]
        self.nl, self.nm, self.nc, self.ns = spec["nl"], spec["nm"], spec["nc"], spec["ns"]
        self.N, self.nsrc, self.nhcol = spec["N"], spec["nsrc"], spec["nhcol"]
        self.maxm, self.maxJ, self.maxb = spec["maxm"], spec["maxJ"], spec["maxb"]
        self.par = ip(I("par")); self.kind = ip(I("kind"))
        self.BR = dp(D("BR")); self.Bp = dp(D("Bp")); self.Xs = dp(D("Xs"))
        self.Ib = dp(D("Ib")); self.Dloc = dp(D("Dloc"))
        self.g[0], self.g[1], self.g[2] = spec["g"]
        self.la = ip(I("la")); self.lb = ip(I("lb")); self.lSR = dp(D("lSR"))
        self.lSp = dp(D("lSp")); self.ldim = ip(I("ldim")); self.lsel = ip(I("lsel"))
        self.lsrc = ip(I("lsrc"))
        self.mmj = ip(I("mmj")); self.mms = ip(I("mms")); self.mmk = dp(D("mmk"))
        self.cdim = ip(I("cdim")); self.coff = ip(I("coff"));
        self.bcol = ip(I("bcol")); self.colsig = ip(I("colsig"))
        self.tptr = ip(I("tptr")); self.tsrc = ip(I("tsrc")); self.tcoef = dp(D("tcoef"))
        self.leaf = ip(I("leaf")); self.kA = ip(I("kA")); self.kB = ip(I("kB"))
        self.mpre = ip(I("mpre")); self.nJ = ip(I("nJ")); self.npost = ip(I("npost"))
        self.pinv = ip(I("pinv")); self.oiJ = ip(I("oiJ")); self.oib = ip(I("oib"))
        self.ova = ip(I("ova")); self.ovb = ip(I("ovb")); self.idx = ip(I("idx"))
        self.gsig = ip(I("gsig")); self.oL = ip(I("oL")); self.ol0 = ip(I("ol0"))
        self.oF = ip(I("oF")); self.oZ = ip(I("oZ"))
        self.oz0 = ip(I("oz0")); self.oY = ip(I("oY"))
        self.ucon = ip(I("ucon")); self.Lb = dp(D("Lb")); self.LbT = dp(D("LbT")); self.Uself = dp(D("Uself"))
        self.ukind = ip(I("ukind")); self.uref = ip(I("uref")); self.Lself = dp(D("Lself"))
        self.T = dp(Z(self.n * 12))
        pa = np.zeros(max(len(spec["idx"]), 1), np.intc)
        ra = np.zeros(max(self.N, 1), np.intc)
        self._keep += [pa, ra]
        self.perm = ip(pa)
        self.rank = ip(ra)
        n, nb = self.n, self.nb
        self.C = dp(Z(nb * 12)); self.S = dp(Z(n * 6)); self.H = dp(Z(n * 6))
        self.V = dp(Z(nb * 6)); self.rhs = dp(Z(nb * 6))
        self.X = dp(Z(nb * 6)); self.bias = dp(Z(n * 6)); self.src = dp(Z(self.nsrc * 6))
        self.Bst = dp(Z(self.nhcol * 6)); self.beta = dp(Z(self.ns)); self.sig = dp(Z(self.ns))
        self.store = dp(Z(spec["nstore"]))
        self.Lpre = dp(Z(self.maxm * self.maxm)); self.l0pre = dp(Z(self.maxm))
        self.rhsJ = dp(Z(self.maxJ * (self.maxb + 1)))
        self.fx = dp(Z(nb * 6)); self.Acc = dp(Z(nb * 6)); self.Wr = dp(Z(nb * 6))
        self.gen = dp(Z(n + 6))
        self.Pim = dp(Z(nb * 6)); self.Gam = dp(Z(nb * 6)); self.W2m = dp(Z(nb * 6))
        self.zv = dp(Z(n + 6))
        self.ur = dp(Z(nb * 6)); self.fbody = dp(Z(nb * 6))

    # ------------------------------------------------------------ per-call stages
    cdef void kinematics(self, const double* q, const double* v) noexcept nogil:
        cdef int n = self.n, i, p, k
        cdef double Rj[9]
        cdef double pj[3]
        cdef double Rl[9]
        cdef double pl[3]
        cdef double* Ci
        cdef double* x
        cdef double nr, qx, qy, qz, qw, s2
        cdef double tw[6]
        cdef const double* qj = q + (7 if self.fb else 0)
        cdef const double* vv = v + (6 if self.fb else 0)
        if self.fb:
            Ci = self.C + 12 * n
            qx = q[3]; qy = q[4]; qz = q[5]; qw = q[6]
            nr = sqrt(qx * qx + qy * qy + qz * qz + qw * qw)
            qx /= nr; qy /= nr; qz /= nr; qw /= nr
            Ci[0] = 1 - 2 * (qy * qy + qz * qz); Ci[1] = 2 * (qx * qy - qz * qw)
            Ci[2] = 2 * (qx * qz + qy * qw); Ci[3] = 2 * (qx * qy + qz * qw)
            Ci[4] = 1 - 2 * (qx * qx + qz * qz); Ci[5] = 2 * (qy * qz - qx * qw)
            Ci[6] = 2 * (qx * qz - qy * qw); Ci[7] = 2 * (qy * qz + qx * qw)
            Ci[8] = 1 - 2 * (qx * qx + qy * qy)
            Ci[9] = q[0]; Ci[10] = q[1]; Ci[11] = q[2]
            tw[0] = v[3]; tw[1] = v[4]; tw[2] = v[5]; tw[3] = v[0]; tw[4] = v[1]; tw[5] = v[2]
            twistAd(Ci, Ci + 9, tw, self.V + 6 * n)
        for i in range(n):
            p = self.par[i]
            joint_exp(self.Xs + 6 * i, qj[i], self.kind[i], Rj, pj)
            Ci = self.C + 12 * i
            compose(self.BR + 9 * i, self.Bp + 3 * i, Rj, pj, self.T + 12 * i, self.T + 12 * i + 9)
            if p < 0:
                memcpy(Ci, self.T + 12 * i, 12 * sizeof(double))
            else:
                compose(self.C + 12 * p, self.C + 12 * p + 9, self.T + 12 * i, self.T + 12 * i + 9,
                        Ci, Ci + 9)
            twistAd(Ci, Ci + 9, self.Xs + 6 * i, self.S + 6 * i)
            x = self.S + 6 * i
            s2 = 1.0 / dot6(x, x)
            for k in range(6):
                self.H[6 * i + k] = x[k] * s2
                self.V[6 * i + k] = (self.V[6 * p + k] if p >= 0 else 0.0) + x[k] * vv[i]
            # Ṡ_k q̇_k = ad_{V_λ} S_k q̇_k
            if p >= 0:
                ad_mul(self.V + 6 * p, x, self.bias + 6 * i)
                for k in range(6):
                    self.bias[6 * i + k] *= vv[i]
            else:
                for k in range(6):
                    self.bias[6 * i + k] = 0.0

    cdef void body_terms(self, bint use_fx) noexcept nogil:
        """f_i = M_i a_g + ad_{V_i}ᵀ M_i V_i (+ W^ext) in the world frame, into rhs."""
        cdef int i, k
        cdef double* Ci
        cdef double vb[6]
        cdef double gb[6]
        cdef double h[6]
        cdef double fb_[6]
        cdef double* R
        for i in range(self.nb):
            Ci = self.C + 12 * i
            R = Ci
            twistAd_inv(Ci, Ci + 9, self.V + 6 * i, vb)
            gb[0] = 0.0; gb[1] = 0.0; gb[2] = 0.0
            for k in range(3):
                gb[3 + k] = R[k] * self.g[0] + R[3 + k] * self.g[1] + R[6 + k] * self.g[2]
            mat6_vec(self.Ib + 36 * i, vb, h)
            mat6_vec(self.Ib + 36 * i, gb, fb_)
            adT_mul_add(vb, h, fb_)
            if use_fx:
                for k in range(6):
                    fb_[k] += self.fx[6 * i + k]
            wrenchT(Ci, Ci + 9, fb_, self.rhs + 6 * i)
            memcpy(self.fbody + 6 * i, self.rhs + 6 * i, 6 * sizeof(double))

    cdef void joint_terms(self, const double* a, bint add) noexcept nogil:
        """rhs += H_k a_k at body k, −H_k a_k at its parent; H_b a_b at a floating base."""
        cdef int n = self.n, k, p, j
        cdef double* Ci
        cdef double w[6]
        cdef const double* aj = a + (6 if self.fb else 0)
        if not add:
            memset(self.rhs, 0, 6 * self.nb * sizeof(double))
        for k in range(n):
            p = self.par[k]
            for j in range(6):
                self.rhs[6 * k + j] += self.H[6 * k + j] * aj[k]
                if p >= 0:
                    self.rhs[6 * p + j] -= self.H[6 * k + j] * aj[k]
        if self.fb:
            Ci = self.C + 12 * n
            w[0] = a[3]; w[1] = a[4]; w[2] = a[5]; w[3] = a[0]; w[4] = a[1]; w[5] = a[2]
            wrenchT(Ci, Ci + 9, w, self.X)
            for j in range(6):
                self.rhs[6 * n + j] += self.X[j]

    cdef void handles(self) noexcept nogil:
        """The sources (D_k, E_ℓ, H_k columns) and every handle column B = Σ coef × source."""
        cdef int n = self.n, k, j, t, b, s, c, col
        cdef double* Ci
        cdef double* o
        cdef double e[6]
        cdef double Rf[9]
        cdef double pf[3]
        cdef const double* R
        cdef const double* p
        self.loop_sources()
        o = self.src + 6 * (5 * n + self.ldim_total())
        memcpy(o, self.H, 6 * n * sizeof(double))
        for col in range(self.nhcol):
            if self.ukind[col] != 0:
                continue
            o = self.Bst + 6 * col
            for c in range(6):
                o[c] = 0.0
            for t in range(self.tptr[col], self.tptr[col + 1]):
                R = self.src + 6 * self.tsrc[t]
                for c in range(6):
                    o[c] += self.tcoef[t] * R[c]

    cdef void loop_sources(self) noexcept nogil:
        """The loop wrench bases E_ℓ (world frame, columns of frame_b's selected axes)."""
        cdef int j, t, b, s, c
        cdef double e[6]
        cdef double Rf[9]
        cdef double pf[3]
        cdef const double* R
        cdef const double* p
        for t in range(self.nl):
            b = self.lb[t]
            if b >= 0:
                compose(self.C + 12 * b, self.C + 12 * b + 9, self.lSR + 9 * t, self.lSp + 3 * t,
                        Rf, pf)
                R = Rf
                p = pf
            else:
                R = self.lSR + 9 * t
                p = self.lSp + 3 * t
            for j in range(self.ldim[t]):
                s = self.lsel[6 * t + j]
                for c in range(6):
                    e[c] = 0.0
                e[s] = 1.0
                wrenchT(R, p, e, self.src + 6 * (self.lsrc[t] + j))

    cdef inline int ldim_total(self) noexcept nogil:
        cdef int t, s = 0
        for t in range(self.nl):
            s += self.ldim[t]
        return s

    cdef void biases(self) noexcept nogil:
        """β: D_kᵀ Ṡ_k q̇_k (joints), E_ℓᵀ ad_{V_b}(V_b − V_a) (loops), H_m·Ṡ_m q̇_m − k H_s·Ṡ_s q̇_s
        (mimic rows)."""
        cdef int n = self.n, k, j, t, a, b, c
        cdef double d[6]
        cdef double w[6]
        for k in range(n):
            twistAd_inv(self.C + 12 * k, self.C + 12 * k + 9, self.bias + 6 * k, d)
            for j in range(5):
                self.beta[self.coff[k] + j] = dot6(self.Dloc + 30 * k + 6 * j, d)
        for t in range(self.nl):
            a = self.la[t]
            b = self.lb[t]
            for c in range(6):
                d[c] = (self.V[6 * b + c] if b >= 0 else 0.0) - (self.V[6 * a + c] if a >= 0 else 0.0)
            if b >= 0:
                ad_mul(self.V + 6 * b, d, w)
            else:
                for c in range(6):
                    w[c] = 0.0
            for j in range(self.ldim[t]):
                self.beta[self.coff[n + t] + j] = dot6(self.src + 6 * (self.lsrc[t] + j), w)
        for t in range(self.nm):
            a = self.mmj[t]
            b = self.mms[t]
            self.beta[self.coff[n + self.nl + t]] = (dot6(self.H + 6 * a, self.bias + 6 * a)
                                                    - self.mmk[t] * dot6(self.H + 6 * b, self.bias + 6 * b))

    cdef int assemble(self) noexcept nogil:
        """Alg. 1 over the plan (post-order), storing every factorisation."""
        cdef int k, i, m, nj, nbk, r, c, ma, a_, b_, mi, c0
        cdef int* iJ
        cdef int* ib
        cdef int* va
        cdef double* L = self.Lpre
        cdef double* l0 = self.l0pre
        cdef double* Ci
        cdef double tw[6]
        cdef int col
        cdef double* g
        cdef double* gm
        cdef int* perm
        cdef int rk
        cdef double* Y
        cdef double* Mi
        cdef double* src
        cdef double* F
        cdef double* RJ = self.rhsJ
        cdef double* Zk
        cdef double* z0
        cdef double* Lp
        cdef double* lp
        cdef double t
        for k in range(self.N):
            m = self.mpre[k]
            i = self.leaf[k]
            if self.nJ[k] == 0:  # nothing closes here (ib = all): build the stored block
                L = self.store + self.oL[k]
                l0 = self.store + self.ol0[k]
            else:
                L = self.Lpre
                l0 = self.l0pre
            if i >= 0:
                # body frame: Λ = UᵀU, U = Lbᵀ Ad_Cᵀ B (M_i⁻¹ = Ad_C Lb Lbᵀ Ad_Cᵀ), λ₀ = Uᵀ u_r
                Y = self.store + self.oY[k]
                Mi = self.LbT + 36 * i
                Ci = self.C + 12 * i
                for c in range(m):
                    col = self.bcol[i] + c
                    if self.ukind[col] == 1:
                        memcpy(Y + 6 * c, self.Uself + 6 * self.ucon[col], 6 * sizeof(double))
                    elif self.ukind[col] == 2:  # −Ad_{T_c}⁻ᵀ D_c^b: a child's joint
                        mi = self.uref[col]
                        wrenchT(self.T + 12 * (mi // 5), self.T + 12 * (mi // 5) + 9,
                                self.Dloc + 6 * mi, tw)
                        LbT_mul(Mi, tw, Y + 6 * c)
                        for r in range(6):
                            Y[6 * c + r] = -Y[6 * c + r]
                    else:
                        wrenchT_inv(Ci, Ci + 9, self.Bst + 6 * col, tw)
                        LbT_mul(Mi, tw, Y + 6 * c)
                wrenchT_inv(Ci, Ci + 9, self.rhs + 6 * i, tw)
                LbT_mul(Mi, tw, self.ur + 6 * i)
                c0 = 5 if (i < self.n and self.ukind[self.bcol[i]] == 1) else 0
                for r in range(c0):
                    for c in range(c0):
                        L[r * m + c] = self.Lself[25 * i + 5 * r + c]
                for r in range(m):
                    for c in range(max(r, c0), m):
                        t = dot6(Y + 6 * r, Y + 6 * c)
                        L[r * m + c] = t
                        L[c * m + r] = t
                    l0[r] = dot6(Y + 6 * r, self.ur + 6 * i)
            else:
                memset(L, 0, m * m * sizeof(double))
                memset(l0, 0, m * sizeof(double))
                for a_ in range(2):  # the two children's (Λ, λ₀), scattered (as reassemble)
                    b_ = self.kA[k] if a_ == 0 else self.kB[k]
                    ma = self.npost[b_]
                    va = self.idx + (self.ova[k] if a_ == 0 else self.ovb[k])
                    Lp = self.store + self.oL[b_]
                    lp = self.store + self.ol0[b_]
                    for r in range(ma):
                        l0[va[r]] += lp[r]
                        for c in range(ma):
                            L[va[r] * m + va[c]] += Lp[r * ma + c]
            nj = self.nJ[k]
            nbk = self.npost[k]
            iJ = self.idx + self.oiJ[k]
            ib = self.idx + self.oib[k]
            Lp = self.store + self.oL[k]
            lp = self.store + self.ol0[k]
            if nj == 0:
                continue
            F = self.store + self.oF[k]
            c0 = nbk + 1
            perm = self.perm + self.oiJ[k]
            for r in range(nj):
                for c in range(nbk):
                    RJ[r * c0 + c] = L[iJ[r] * m + ib[c]]
                RJ[r * c0 + nbk] = self.beta[self.gsig[self.oiJ[k] + r]] - l0[iJ[r]]
            # Λ_JJ: P Λ_JJ Pᵀ = R Rᵀ (R: rank × rank lower), rank-revealing (diagonal pivots)
            # once a loop or mimic row is closed in the subassembly, plain Cholesky otherwise
            for r in range(nj):
                for c in range(nj):
                    F[r * nj + c] = L[iJ[r] * m + iJ[c]]
            if self.pinv[k]:
                rk = pchol(F, nj, perm, 1e-12)
            else:
                for r in range(nj):
                    perm[r] = r
                rk = nj if chol(F, nj) == 0 else -1
            if rk < 0:
                return -1
            self.rank[k] = rk
            # G = R⁻¹ P[Λ_Jb | β_J − λ₀_J] (first rk rows): Λ' = Λ_bb − GᵀG, λ₀' = λ₀_b + Gᵀg0
            # (eq. 34–36; disassembly P σ_J = [R⁻ᵀ(g0 − G σ_b); 0]: the redundant rows of a
            # closure get no impulse — a basic solution; the motion is the same for all)
            Zk = self.store + self.oZ[k]
            z0 = self.store + self.oz0[k]
            for r in range(rk):
                g = Zk + r * nbk
                gm = RJ + perm[r] * c0
                for c in range(nbk):
                    g[c] = gm[c]
                z0[r] = gm[nbk]
            for r in range(rk):  # forward substitution, row by row
                g = Zk + r * nbk
                for mi in range(r):
                    t = F[r * nj + mi]
                    gm = Zk + mi * nbk
                    for c in range(nbk):
                        g[c] -= t * gm[c]
                    z0[r] -= t * z0[mi]
                t = 1.0 / F[r * nj + r]
                for c in range(nbk):
                    g[c] *= t
                z0[r] *= t
            for r in range(nbk):
                lp[r] = l0[ib[r]]
                for c in range(r, nbk):
                    Lp[r * nbk + c] = L[ib[r] * m + ib[c]]
            for mi in range(rk):
                g = Zk + mi * nbk
                for r in range(nbk):
                    t = g[r]
                    lp[r] += t * z0[mi]
                    for c in range(r, nbk):
                        Lp[r * nbk + c] -= t * g[c]
            for r in range(nbk):
                for c in range(r):
                    Lp[r * nbk + c] = Lp[c * nbk + r]
        return 0

    cdef void reassemble(self) noexcept nogil:
        """λ₀ and z0 for new right-hand sides (rhs, β) through the stored factorisation."""
        cdef int k, i, m, nj, nbk, r, c, ma, a_, b_, mi
        cdef int* iJ
        cdef int* ib
        cdef int* va
        cdef double* l0 = self.l0pre
        cdef double* Y
        cdef double* F
        cdef double* z0
        cdef double* Zk
        cdef double* lp
        cdef double t
        cdef double tw[6]
        cdef int* perm
        cdef int rk
        for k in range(self.N):
            m = self.mpre[k]
            i = self.leaf[k]
            if i >= 0:
                Y = self.store + self.oY[k]
                wrenchT_inv(self.C + 12 * i, self.C + 12 * i + 9, self.rhs + 6 * i, tw)
                LbT_mul(self.LbT + 36 * i, tw, self.ur + 6 * i)
                for r in range(m):
                    l0[r] = dot6(Y + 6 * r, self.ur + 6 * i)
            else:
                memset(l0, 0, m * sizeof(double))
                for a_ in range(2):
                    b_ = self.kA[k] if a_ == 0 else self.kB[k]
                    ma = self.npost[b_]
                    va = self.idx + (self.ova[k] if a_ == 0 else self.ovb[k])
                    lp = self.store + self.ol0[b_]
                    for r in range(ma):
                        l0[va[r]] += lp[r]
            nj = self.nJ[k]
            nbk = self.npost[k]
            iJ = self.idx + self.oiJ[k]
            ib = self.idx + self.oib[k]
            lp = self.store + self.ol0[k]
            if nj == 0:
                for r in range(nbk):
                    lp[r] = l0[ib[r]]
                continue
            F = self.store + self.oF[k]
            z0 = self.store + self.oz0[k]
            Zk = self.store + self.oZ[k]
            perm = self.perm + self.oiJ[k]
            rk = self.rank[k]
            for r in range(rk):
                t = self.beta[self.gsig[self.oiJ[k] + perm[r]]] - l0[iJ[perm[r]]]
                for mi in range(r):
                    t -= F[r * nj + mi] * z0[mi]
                z0[r] = t / F[r * nj + r]
            for r in range(nbk):
                t = l0[ib[r]]
                for mi in range(rk):
                    t += Zk[mi * nbk + r] * z0[mi]
                lp[r] = t

    cdef void disassemble(self) noexcept nogil:
        """Alg. 2: σ top-down, then X_i = M_i⁻¹ rhs_i + Y_i σ_i (eq. 15–16)."""
        cdef int k, r, c, nj, nbk, i, m, mi
        cdef double w[6]
        cdef double w2[6]
        cdef double* F
        cdef double* Zk
        cdef double* z0
        cdef int* perm
        cdef int rk
        cdef int* gJ
        cdef int* gb
        cdef double t
        cdef double* Y
        for k in range(self.N - 1, -1, -1):
            nj = self.nJ[k]
            if nj == 0:
                continue
            nbk = self.npost[k]
            Zk = self.store + self.oZ[k]
            z0 = self.store + self.oz0[k]
            gJ = self.gsig + self.oiJ[k]
            gb = self.gsig + self.oib[k]
            F = self.store + self.oF[k]
            perm = self.perm + self.oiJ[k]
            rk = self.rank[k]
            for r in range(rk, nj):
                self.sig[gJ[perm[r]]] = 0.0
            for r in range(rk - 1, -1, -1):  # P σ_J = R⁻ᵀ(g0 − G σ_b)
                t = z0[r]
                for c in range(nbk):
                    t -= Zk[r * nbk + c] * self.sig[gb[c]]
                for mi in range(r + 1, rk):
                    t -= F[mi * nj + r] * self.sig[gJ[perm[mi]]]
                self.sig[gJ[perm[r]]] = t / F[r * nj + r]
        for k in range(self.N):
            i = self.leaf[k]
            if i < 0:
                continue
            m = self.mpre[k]
            Y = self.store + self.oY[k]
            memcpy(w, self.ur + 6 * i, 6 * sizeof(double))
            for c in range(m):
                t = self.sig[self.colsig[self.bcol[i] + c]]
                for r in range(6):
                    w[r] += Y[6 * c + r] * t
            Lb_mul(self.Lb + 36 * i, w, w2)
            twistAd(self.C + 12 * i, self.C + 12 * i + 9, w2, self.X + 6 * i)

    cdef void rates(self, double* out, bint with_bias) noexcept nogil:
        cdef int n = self.n, k, p, j
        cdef double d[6]
        cdef double* Ci
        cdef double* o = out + (6 if self.fb else 0)
        if self.fb:
            Ci = self.C + 12 * n
            twistAd_inv(Ci, Ci + 9, self.X + 6 * n, d)
            out[0] = d[3]; out[1] = d[4]; out[2] = d[5]; out[3] = d[0]; out[4] = d[1]; out[5] = d[2]
        for k in range(n):
            p = self.par[k]
            for j in range(6):
                d[j] = self.X[6 * k + j] - (self.X[6 * p + j] if p >= 0 else 0.0)
                if with_bias:
                    d[j] -= self.bias[6 * k + j]
            o[k] = dot6(self.H + 6 * k, d)

    # ------------------------------------------------------------ entries
    cdef int solve_core(self, const double* q, const double* v, const double* tau, bint use_fx,
                        double* out) noexcept nogil:
        self.kinematics(q, v)
        self.body_terms(use_fx)
        self.joint_terms(tau, True)
        self.handles()
        self.biases()
        memset(self.sig, 0, self.ns * sizeof(double))
        if self.assemble() != 0:
            return -1
        self.disassemble()
        self.rates(out, True)
        return 0

    cdef void refine_core(self, const double* tau, double* a) noexcept nogil:
        """One step of iterative refinement (``HDCA._correction``): residuals r₁ = τ + Kᵀσ −
        τ_RNEA(q, q̇, q̈) (the spanning tree's RNEA in the world frame at the solved q̈, with the
        stored body terms f_i) and r₂ = β − K(body accelerations) of the loop and mimic rows,
        solved through the stored factorisation; ``a`` += the correction."""
        cdef int n = self.n, nv0 = 6 if self.fb else 0, k, p, j, t, la_, lb_, c
        cdef double* Ci
        cdef double tw[6]
        cdef double w[6]
        cdef double sg
        cdef double* A = self.Acc
        cdef double* W = self.Wr
        cdef double* gen = self.gen
        if self.fb:
            Ci = self.C + 12 * n
            tw[0] = a[3]; tw[1] = a[4]; tw[2] = a[5]; tw[3] = a[0]; tw[4] = a[1]; tw[5] = a[2]
            twistAd(Ci, Ci + 9, tw, A + 6 * n)
        for k in range(n):
            p = self.par[k]
            for j in range(6):
                A[6 * k + j] = ((A[6 * p + j] if p >= 0 else 0.0)
                                + self.S[6 * k + j] * a[nv0 + k] + self.bias[6 * k + j])
        # −(M_i A_i − f_i): the body wrenches of the spanning tree's RNEA at q̈ (world frame)
        for k in range(self.nb):
            Ci = self.C + 12 * k
            twistAd_inv(Ci, Ci + 9, A + 6 * k, tw)
            mat6_vec(self.Ib + 36 * k, tw, w)
            wrenchT(Ci, Ci + 9, w, W + 6 * k)
            for j in range(6):
                W[6 * k + j] = self.fbody[6 * k + j] - W[6 * k + j]
        # r₂ into beta (joints: 0)
        for k in range(n):
            for j in range(5):
                self.beta[self.coff[k] + j] = 0.0
        for t in range(self.nl):
            la_ = self.la[t]
            lb_ = self.lb[t]
            for c in range(6):
                w[c] = 0.0
            for j in range(self.ldim[t]):
                sg = self.sig[self.coff[n + t] + j]
                for c in range(6):
                    w[c] += self.src[6 * (self.lsrc[t] + j) + c] * sg
            for c in range(6):
                if lb_ >= 0:
                    W[6 * lb_ + c] += w[c]
                if la_ >= 0:
                    W[6 * la_ + c] -= w[c]
                tw[c] = (A[6 * lb_ + c] if lb_ >= 0 else 0.0) - (A[6 * la_ + c] if la_ >= 0 else 0.0)
            for j in range(self.ldim[t]):
                self.beta[self.coff[n + t] + j] -= dot6(self.src + 6 * (self.lsrc[t] + j), tw)
        for k in range(n - 1, -1, -1):
            p = self.par[k]
            if p >= 0:
                for c in range(6):
                    W[6 * p + c] += W[6 * k + c]
        if self.fb:
            Ci = self.C + 12 * n
            wrenchT_inv(Ci, Ci + 9, W + 6 * n, w)
            gen[0] = w[3]; gen[1] = w[4]; gen[2] = w[5]; gen[3] = w[0]; gen[4] = w[1]; gen[5] = w[2]
        for k in range(n):
            gen[nv0 + k] = dot6(self.S + 6 * k, W + 6 * k)
        for t in range(self.nm):
            sg = self.sig[self.coff[n + self.nl + t]]
            gen[nv0 + self.mmj[t]] += sg
            gen[nv0 + self.mms[t]] -= self.mmk[t] * sg
            self.beta[self.coff[n + self.nl + t]] = (self.mmk[t] * a[nv0 + self.mms[t]]
                                                     - a[nv0 + self.mmj[t]])
        for k in range(nv0 + n):
            gen[k] = tau[k] + gen[k]
        self.joint_terms(gen, False)
        self.reassemble()
        self.disassemble()
        self.rates(gen, False)
        for k in range(nv0 + n):
            a[k] += gen[k]

    cdef int velocity_core(self, const double* q, const double* P, double* qd) noexcept nogil:
        """Alg. 1–2 at velocity level (seed 002 eq. 8): the body balances M_i V_i = Σ H_k P_k
        (± at the parent) + Σ B σ with the constraints Bᵀ V = 0 (β = 0, no body terms): the
        twists V in X, the impulses σ in sig, q̇ = H_kᵀ(V_k − V_λ(k)) into ``qd``."""
        memset(self.zv, 0, (self.n + 6) * sizeof(double))
        self.kinematics(q, self.zv)
        self.joint_terms(P, False)
        self.handles()
        memset(self.beta, 0, self.ns * sizeof(double))
        memset(self.sig, 0, self.ns * sizeof(double))
        if self.assemble() != 0:
            return -1
        self.disassemble()
        self.rates(qd, False)
        return 0

    cdef void momentum_rate_core(self, const double* q, const double* V, const double* sl,
                                 const double* tau, double* out) noexcept nogil:
        """Ṗ (seed 002 eq. 69/77, spatial form, ``HDCA.momentum_rate``) at the configuration q,
        body twists V (nb, 6) and loop impulses ``sl`` (Σ loop rows, the loops' order):
        Ṗ_k = τ_k + S_kᵀΓ_k + (ad_{V_λ(k)} S_k)ᵀ(Π_k − W_k) + S_kᵀW₂_k with the subtree sums of
        Π = M_i V_i, Γ = M_i a_g, W = Eσ, W₂ = ad_{V_b}ᵀEσ; a floating base's
        Ṗ_b = τ_b + S_bᵀ(Γ + ad_{V_b}ᵀΠ) of the whole robot."""
        cdef int n = self.n, nb = self.nb, nv0 = 6 if self.fb else 0, i, k, p, j, t, a, b, c, o
        cdef double* Ci
        cdef double vb[6]
        cdef double gb[6]
        cdef double h[6]
        cdef double w[6]
        cdef double w2[6]
        cdef double d[6]
        cdef double sg
        cdef double* Pi = self.Pim
        cdef double* Ga = self.Gam
        cdef double* W = self.Wr
        cdef double* W2 = self.W2m
        memset(self.zv, 0, (n + 6) * sizeof(double))
        self.kinematics(q, self.zv)
        self.loop_sources()
        for i in range(nb):
            Ci = self.C + 12 * i
            twistAd_inv(Ci, Ci + 9, V + 6 * i, vb)
            gb[0] = 0.0; gb[1] = 0.0; gb[2] = 0.0
            for k in range(3):
                gb[3 + k] = Ci[k] * self.g[0] + Ci[3 + k] * self.g[1] + Ci[6 + k] * self.g[2]
            mat6_vec(self.Ib + 36 * i, vb, h)
            wrenchT(Ci, Ci + 9, h, Pi + 6 * i)
            mat6_vec(self.Ib + 36 * i, gb, h)
            wrenchT(Ci, Ci + 9, h, Ga + 6 * i)
        memset(W, 0, 6 * nb * sizeof(double))
        memset(W2, 0, 6 * nb * sizeof(double))
        for t in range(self.nl):
            a = self.la[t]
            b = self.lb[t]
            o = self.lsrc[t] - 5 * n
            for c in range(6):
                w[c] = 0.0
                w2[c] = 0.0
            for j in range(self.ldim[t]):
                sg = sl[o + j]
                for c in range(6):
                    w[c] += self.src[6 * (self.lsrc[t] + j) + c] * sg
            if b >= 0:
                adT_mul_add(V + 6 * b, w, w2)
                for c in range(6):
                    W[6 * b + c] += w[c]
                    W2[6 * b + c] += w2[c]
            if a >= 0:
                for c in range(6):
                    W[6 * a + c] -= w[c]
                    W2[6 * a + c] -= w2[c]
        for k in range(n - 1, -1, -1):
            p = self.par[k]
            if p >= 0:
                for c in range(6):
                    Pi[6 * p + c] += Pi[6 * k + c]
                    Ga[6 * p + c] += Ga[6 * k + c]
                    W[6 * p + c] += W[6 * k + c]
                    W2[6 * p + c] += W2[6 * k + c]
        for k in range(n):
            p = self.par[k]
            sg = tau[nv0 + k] + dot6(self.S + 6 * k, Ga + 6 * k) + dot6(self.S + 6 * k, W2 + 6 * k)
            if p >= 0:
                ad_mul(V + 6 * p, self.S + 6 * k, d)
                for c in range(6):
                    w[c] = Pi[6 * k + c] - W[6 * k + c]
                sg += dot6(d, w)
            out[nv0 + k] = sg
        if self.fb:
            memcpy(w, Ga + 6 * n, 6 * sizeof(double))
            adT_mul_add(V + 6 * n, Pi + 6 * n, w)
            Ci = self.C + 12 * n
            wrenchT_inv(Ci, Ci + 9, w, h)
            out[0] = tau[0] + h[3]; out[1] = tau[1] + h[4]; out[2] = tau[2] + h[5]
            out[3] = tau[3] + h[0]; out[4] = tau[4] + h[1]; out[5] = tau[5] + h[2]

    def velocity(self, const double[::1] q, const double[::1] P, double[::1] qd,
                 double[:, ::1] V, double[::1] sig):
        """Momentum level (seed 002 Alg. 1–2, eq. 8): q̇ into ``qd`` (nv), the body twists
        (world, angular first) into ``V`` (nb, 6), every connection's impulse into ``sig``
        (ns: joints, loops, mimic rows) at the state (q, P) (sizes checked by the caller)."""
        cdef HDCAKernel k = self
        cdef int i, rc
        cdef unsigned long me = PyThread_get_thread_ident()
        if self.busy and self.owner != me:
            k = HDCAKernel(self.spec)
        k.busy += 1
        k.owner = me
        try:
            with nogil:
                rc = k.velocity_core(&q[0], &P[0], &qd[0])
                if rc == 0:
                    memcpy(&V[0, 0], k.X, 6 * k.nb * sizeof(double))
                    memcpy(&sig[0], k.sig, k.ns * sizeof(double))
        finally:
            k.busy -= 1
        if rc != 0:
            raise ValueError("method='hdca': a joint's constraint block is not positive "
                             "definite (singular assembly)")
        for i in range(qd.shape[0]):
            if not isfinite(qd[i]):
                raise ValueError("simulate(method='hdca'): the joint velocities overflowed to "
                                 "inf or NaN — the momenta are too large for float64")
        return qd

    def momentum_rate(self, const double[::1] q, const double[:, ::1] V,
                      const double[::1] sig_loops, const double[::1] tau, double[::1] out):
        """Ṗ into ``out`` (nv) at (q, the body twists V (nb, 6) of :meth:`velocity`, the loop
        impulses (Σ loop rows), τ (nv)); sizes checked by the caller."""
        cdef HDCAKernel k = self
        cdef unsigned long me = PyThread_get_thread_ident()
        if self.busy and self.owner != me:
            k = HDCAKernel(self.spec)
        k.busy += 1
        k.owner = me
        try:
            with nogil:
                k.momentum_rate_core(&q[0], &V[0, 0], &sig_loops[0], &tau[0], &out[0])
        finally:
            k.busy -= 1
        return out

    def acceleration(self, const double[::1] q, const double[::1] v, const double[::1] tau,
                     fx, double[::1] out, bint refine=True):
        """q̈ into ``out`` (sizes checked by the caller); ``fx``: None or (nb, 6) body-frame
        applied wrenches (m, f), the floating base's row n; ``refine``: one step of iterative
        refinement. A second thread inside at the same time gets a private workspace."""
        cdef HDCAKernel k = self
        cdef double[:, ::1] f
        cdef int i, j, rc
        cdef bint use = fx is not None
        cdef unsigned long me = PyThread_get_thread_ident()
        if self.busy and self.owner != me:
            k = HDCAKernel(self.spec)
        k.busy += 1
        k.owner = me
        try:
            if use:
                f = fx
                for i in range(k.nb):
                    for j in range(6):
                        k.fx[6 * i + j] = f[i, j]
            with nogil:
                rc = k.solve_core(&q[0], &v[0], &tau[0], use, &out[0])
                if rc == 0 and refine:
                    k.refine_core(&tau[0], &out[0])
        finally:
            k.busy -= 1
        if rc != 0:
            raise ValueError("forward_dynamics(method='dca'): a joint's constraint block is not positive "
                             "definite (singular assembly)")
        for i in range(out.shape[0]):
            if not isfinite(out[i]):  # the compiled entries' overflow rule (finite_result)
                raise ValueError("forward_dynamics: the result overflowed to inf or NaN — an "
                                 "input is too large for float64 arithmetic (check the "
                                 "magnitudes of q, its derivatives, the torques and the "
                                 "external wrenches)")
        return out
