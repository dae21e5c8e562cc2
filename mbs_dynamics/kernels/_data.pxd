# cython: language_level=3
"""C views of the frozen model and of the Data workspace, shared by the compiled kernels.

Layout and meaning of every field: see ``LAYOUT`` in ``_data.pyx`` (one table, documented
shapes). Twists ``(ω, v)``, wrenches ``(m, f)``, body-fixed (doc/math.md).
"""
from cpython.pythread cimport PyThread_get_thread_ident

cdef enum:
    REVOLUTE = 0
    PRISMATIC = 1
    FREE = 2


cdef struct KModel:
    int n            # movable joints
    int nb           # bodies: n, or n + 1 with a floating base (body 0)
    int fb           # 1 with a floating base
    int nq           # configuration size: n, or 7 + n
    int nv           # velocity size: n, or 6 + n
    int* parent      # (nb,) parent body, −1 = the world / fixed base
    int* jtype       # (nb,) REVOLUTE | PRISMATIC | FREE
    double* axis     # (nb, 3) joint axis e in the body frame
    double* BR       # (nb, 9) rotation of B_i (pose of body i in λ(i) at q = 0), row-major
    double* Bp       # (nb, 3) translation of B_i
    double* BE1      # (nb, 9) B_R ẽ  (revolute: R(q) = B_R + sin q B_R ẽ + (1 − cos q) B_R ẽ²)
    double* BE2      # (nb, 9) B_R ẽ²
    double* BRe      # (nb, 3) B_R e (prismatic: p(q) = B_p + q B_R e)
    double* mass     # (nb,)
    double* h        # (nb, 3) first moment m c
    double* Th       # (nb, 9) rotational inertia Θ_b about the body origin, row-major
    double g[3]      # gravity in the world/base frame


cdef struct KWork:
    int kmax         # derivative order the jet arrays hold
    double* T        # (nb, 12) C_{λ(i),i}: R (9, row-major), p (3)
    double* V        # (kmax + 2, nb, 6) V_i^(k)
    double* W        # (kmax + 1, nb, 6) W_i^(k)
    double* qj       # (kmax + 3, nb) q_i^(k) of each body's joint (row 0 positions)
    double* nu       # (kmax + 2, 6) base twist jet ν^(k) (floating base)
    double* gam      # (kmax + 1, 6) gravity twist jet γ^(k) of the base (floating base)
    double* fx       # (kmax + 1, nb, 6) applied wrench jet W^app(k) in body frames
    double* bell     # (kmax + 2, kmax + 2) c[m][j] of Φ_m = Σ_j c[m][j] ad_X^j (one joint)
    double* binom    # (kmax + 3, kmax + 3) binomial coefficients
    double* Au       # (kmax + 2, kmax + 2, 6) ad_X^j u_l (one joint)
    double* MV       # (kmax + 2, 6) M_i V_i^(k) (one joint)
    double* Ic       # (nb, 13) composite inertia (m, h, Θ) for M
    double* J        # (nb, 6) one column of J
    double* Jd       # (nb, 6) the same column of J̇
    double* P        # (nb, 6) backward accumulators
    double* IA       # (nb, 36) articulated inertias (row-major)
    double* pA       # (nb, 6) articulated bias wrenches
    double* c        # (nb, 6) velocity-product accelerations
    double* U        # (nb, 6) I^A X
    double* D        # (nb,) X^T I^A X
    double* u        # (nb,) τ − X^T p^A
    double* A        # (nb, 6) body accelerations
    double* S        # (8, 36) scratch
    double* Cw       # (nb, 12) world poses (C̄, Ṁ)
    double* Vs       # (nb, 6) spatial twists
    double* Sw       # (nv, 6) world-frame column screws
    double* Sdw      # (nv, 6) their time derivatives
    double* Icw      # (nb, 36) world-frame subtree composite inertias
    double* Bc       # (nb, 36) world-frame subtree composites of the C̄/Ṁ body terms
    double* dX       # (nb, 96) world-frame body quantities of the RNEA derivatives
    double* dC       # (nb + 5, 36) per velocity coordinate quantities of the RNEA derivatives


cdef class Data:
    cdef KModel m
    cdef KWork w
    cdef readonly object model
    cdef readonly dict arrays
    cdef readonly int kmax
    cdef list _keep
    cdef list _threads       # extra KWork owners for the threaded batch kernels
    cdef KWork* _tw          # their C views
    cdef int _ntw
    cdef int busy            # how many entries of the owner thread are inside (0: free)
    cdef unsigned long owner # the thread that holds the workspace while busy > 0
    cdef int _bind(self, dict arrays, KWork* w) except -1
    cdef KWork* thread_works(self, int T) except NULL


cdef inline void seat_origin(KModel* m, int b, const double* P) noexcept nogil:
    """Re-seat body b's zero-configuration pose B_b ← (R, p), ``P`` = R (9, row-major), p (3),
    in the packed model: B_R, B_p and the Rodrigues terms pre-multiplied by B_R (B_R ẽ,
    B_R ẽ², B_R e, as ``Data.__init__`` packs them) — what ``Data.set_origins`` and the
    Lie-joint chart (``_lie.pyx``) write."""
    cdef double e0 = m.axis[3 * b], e1 = m.axis[3 * b + 1], e2 = m.axis[3 * b + 2]
    cdef double E[9]
    cdef double r0
    cdef int i, j, l
    E[0], E[1], E[2] = 0.0, -e2, e1
    E[3], E[4], E[5] = e2, 0.0, -e0
    E[6], E[7], E[8] = -e1, e0, 0.0
    for i in range(9):
        m.BR[9 * b + i] = P[i]
    for i in range(3):
        m.Bp[3 * b + i] = P[9 + i]
        for j in range(3):
            r0 = 0.0
            for l in range(3):
                r0 += P[3 * i + l] * E[3 * l + j]
            m.BE1[9 * b + 3 * i + j] = r0
        m.BRe[3 * b + i] = P[3 * i] * e0 + P[3 * i + 1] * e1 + P[3 * i + 2] * e2
    for i in range(3):
        for j in range(3):
            r0 = 0.0
            for l in range(3):
                r0 += m.BE1[9 * b + 3 * i + l] * E[3 * l + j]
            m.BE2[9 * b + 3 * i + j] = r0


# ---- the owner flag (thread safety): every public entry that writes a Data takes it first
cdef int busy_error(Data d) except -1


cdef inline int claim(Data d) except -1:
    """Take ``d`` for the calling thread (re-entrant); RuntimeError if another thread holds it.
    Check and set run under the GIL without a Python call in between, so they are atomic."""
    cdef unsigned long me = PyThread_get_thread_ident()
    if d.busy and d.owner != me:
        return busy_error(d)
    d.busy += 1
    d.owner = me
    return 0


cdef inline void unclaim(Data d) noexcept:
    """Give ``d`` back (pairs with :func:`claim`, in a ``finally``)."""
    if d.busy > 0:
        d.busy -= 1


# ---- input conversion at the public entries (numpy the fast way, anything else converted once)
cdef object as_input(object x, str name, int ndim, tuple shape)
cdef object as_out(object x, str name, tuple shape)
cdef int check_finite(object a, str name) except -1
cdef object finite_result(object res, str what)
cdef object fresh_if_alias(object out, tuple inputs)
cdef int check_quat(const KModel* m, object q, str name) except -1
cdef tuple take_states(const KModel* m, object q, object x, object y, str nx, str ny,
                       bint batch)
cdef int load_fx(Data d, object fx, int rows) except -1
cdef object vec(object x, str name, Py_ssize_t n)
cdef object out_vec(object x, Py_ssize_t n)
cdef object out_mat(object x, Py_ssize_t r, Py_ssize_t c)
cdef object alias3(object out, object a, object b, object c)
