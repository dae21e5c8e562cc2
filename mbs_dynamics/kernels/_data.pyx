# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The Data room: every workspace array of the compiled kernels, under a name, with its shape.

A :class:`Data` is made from a frozen :class:`~mbs_dynamics.model.Model` (``model.create_data()``,
as Pinocchio's ``model.createData()`` and MuJoCo's ``MjData(model)``) and is the only thing a call
writes. ``LAYOUT`` is the one table of the workspace: name, shape (in the number of bodies ``nb``
and the derivative order ``kmax`` it is sized for) and meaning. Bodies are numbered depth-first
(``parent[i] < i``); with a floating base, body 0 is the base link and body ``i ≥ 1`` carries
movable joint ``i − 1``. Twists ``(ω, v)``, wrenches ``(m, f)``, all in body frames (doc/math.md).

This module also holds the input conversion every public entry uses: NumPy float64 C-ordered
arrays pass through untouched; any other array-like is converted once (never through an
exception); complex input is a TypeError; ``out=`` must be exactly right or a ValueError names it.
"""
import numpy as np
cimport numpy as cnp
from libc.stdint cimport uint64_t
from libc.stdlib cimport free, malloc

cnp.import_array()

#: name, shape (a function of nb bodies and kmax), meaning — the one layout table.
LAYOUT = (
    ("T", lambda nb, k: (nb, 12), "C_{λ(i),i}(q_i) = B_i exp(X_i q_i): R (row-major 9), p (3)"),
    ("V", lambda nb, k: (k + 2, nb, 6), "body twists and their derivatives V_i^(k), k = 0..kmax+1 "
                                        "(k ≥ 1 include gravity as a base acceleration)"),
    ("W", lambda nb, k: (k + 1, nb, 6), "body wrenches W_i^(k) of the backward pass"),
    ("qj", lambda nb, k: (k + 3, nb), "joint jet q_i^(k) per body, k = 0..kmax+2"),
    ("nu", lambda nb, k: (k + 2, 6), "base twist jet ν^(k) (floating base)"),
    ("gam", lambda nb, k: (k + 1, 6), "gravity twist of the base γ^(k) = d^k/dt^k Ad_{C⁻¹}(0, −g)"),
    ("fx", lambda nb, k: (k + 1, nb, 6), "applied wrench jet W^app(k) in body frames"),
    ("bell", lambda nb, k: (k + 2, k + 2), "c[m][j]: Φ_m = Σ_j c[m][j] ad_X^j (one joint, doc/math.md)"),
    ("binom", lambda nb, k: (k + 3, k + 3), "binomial coefficients"),
    ("Au", lambda nb, k: (k + 2, k + 2, 6), "ad_X^j T_i V_λ^(l) (one joint)"),
    ("MV", lambda nb, k: (k + 2, 6), "M_i V_i^(k) (one joint)"),
    ("Ic", lambda nb, k: (nb, 13), "composite inertia (m, m c, Θ) of each subtree (mass matrix)"),
    ("J", lambda nb, k: (nb, 6), "one column of the system Jacobian J (closed forms)"),
    ("Jd", lambda nb, k: (nb, 6), "the same column of J̇"),
    ("P", lambda nb, k: (nb, 6), "backward accumulators Σ Ad^T(·) of the closed forms"),
    ("IA", lambda nb, k: (nb, 36), "articulated-body inertias I^A_i (ABA, row-major 6×6)"),
    ("pA", lambda nb, k: (nb, 6), "articulated bias wrenches p^A_i (ABA)"),
    ("c", lambda nb, k: (nb, 6), "velocity-product accelerations c_i = −q̇_i ad_{X_i} V_i (ABA)"),
    ("U", lambda nb, k: (nb, 6), "U_i = I^A_i X_i (ABA)"),
    ("D", lambda nb, k: (nb,), "D_i = X_i^T U_i (ABA)"),
    ("u", lambda nb, k: (nb,), "u_i = τ_i − X_i^T p^A_i (ABA)"),
    ("A", lambda nb, k: (nb, 6), "body accelerations V̇_i incl. gravity (ABA)"),
    ("Cw", lambda nb, k: (nb, 12), "world pose C_i of each body: R (row-major 9), p (3) (C̄, Ṁ)"),
    ("Vs", lambda nb, k: (nb, 6), "spatial (world-frame) twist of each body (C̄, Ṁ)"),
    ("Sw", lambda nb, k: (nb + 5, 6), "world-frame screw S_c = Ad_{C_k} X_k of each velocity column"),
    ("Sdw", lambda nb, k: (nb + 5, 6), "its time derivative Ṡ_c = ad_{V_k} S_c"),
    ("Icw", lambda nb, k: (nb, 36), "subtree composite inertia in the world frame (row-major 6×6)"),
    ("Bc", lambda nb, k: (nb, 36), "subtree composite of the C̄ / Ṁ body terms B_i (world frame)"),
    ("S", lambda nb, k: (8, 36), "scratch"),
    ("dX", lambda nb, k: (nb, 96), "world-frame body quantities of the RNEA derivatives "
                                   "(identification/_derivatives.pyx: pose, v, a, composites)"),
    ("dC", lambda nb, k: (nb + 5, 36), "per velocity coordinate: S, Ψ̇, D, Ψ̈, α, β of the RNEA "
                                       "derivatives (identification/_derivatives.pyx)"),
    ("Fs", lambda nb, k: (nb + 2, 6, nb + 5), "M⁻¹ (kernels/_minv.pyx): per body a 6 × nv motion "
                                              "set, one 6 × nv force set, subtree ends"),
    ("dP", lambda nb, k: (3, nb + 5, nb + 5), "∂τ/∂q, ∂τ/∂q̇, M of the forward-dynamics "
                                              "derivatives (identification/_derivatives.pyx)"),
)

#: The message of the RuntimeError a call raises when another thread is using the same Data.
BUSY_MESSAGE = ("Robot is in use by another thread: its workspace (Data) serves one call at a "
                "time; give each thread its own robot.copy()")


cdef int busy_error(Data d) except -1:
    raise RuntimeError(BUSY_MESSAGE)


cdef inline double* _ptr(object a):
    return <double*> cnp.PyArray_DATA(a)


def _binomials(int k):
    from math import comb
    b = np.zeros((k + 3, k + 3))
    for a in range(k + 3):
        for c in range(a + 1):
            b[a, c] = comb(a, c)
    return b


cdef class Data:
    """Preallocated workspace of one :class:`~mbs_dynamics.model.Model`, for one thread at a
    time: every public kernel entry takes its owner flag (``claim``/``unclaim`` of
    ``_data.pxd``, re-entrant for the holding thread) and another thread's call meanwhile raises
    RuntimeError (:data:`BUSY_MESSAGE`); :meth:`acquire`/:meth:`release` or ``with data:`` hold
    it across a sequence of calls.

    Attributes:
        model: the frozen model it belongs to.
        kmax: the highest derivative order of τ the jet arrays are sized for (grown on demand
            by :meth:`mbs_dynamics.Robot.torque_derivatives`).
        arrays: name → NumPy array of ``LAYOUT`` (views the kernels write; read them after a
            call to inspect intermediate results, e.g. ``data.arrays["V"][0]`` = body twists).
    """

    def __cinit__(self):
        self._tw = NULL
        self._ntw = 0
        self.busy = 0
        self.owner = 0

    def __init__(self, model, int kmax=2):
        if kmax < 0:
            raise ValueError("kmax must be >= 0")
        self.model = model
        self.kmax = kmax
        fb = 1 if model.floating_base else 0
        n = model.n
        nb = n + fb
        # --- the model, packed once per body (body 0 = the base link with a floating base)
        parent = np.empty(nb, dtype=np.intc)
        jtype = np.empty(nb, dtype=np.intc)
        axis = np.zeros((nb, 3))
        BR = np.zeros((nb, 9))
        Bp = np.zeros((nb, 3))
        mass = np.zeros(nb)
        h = np.zeros((nb, 3))
        I = np.zeros((nb, 9))
        ine = list(model.inertias)
        if fb:
            parent[0], jtype[0] = -1, FREE
            BR[0] = np.eye(3).ravel()
            ine = [model.base_inertia] + ine
        for i in range(n):
            b = i + fb
            parent[b] = model.parent[i] + fb
            jtype[b] = PRISMATIC if model.joint_types[i] == "prismatic" else REVOLUTE
            axis[b] = model.axis[i]
            BR[b] = model.B[i, :3, :3].ravel()
            Bp[b] = model.B[i, :3, 3]
        for b in range(nb):
            I6 = ine[b]
            mass[b] = I6[3, 3]
            hx = I6[:3, 3:]          # M = [[Θ, h̃], [−h̃, m I]] (seed 004 eq. 24)
            h[b] = (hx[2, 1], hx[0, 2], hx[1, 0])
            I[b] = I6[:3, :3].ravel()
        # Rodrigues pre-multiplied by B_R, so that a joint pose is 18 multiply-adds
        BE1, BE2, BRe = np.zeros((nb, 9)), np.zeros((nb, 9)), np.zeros((nb, 3))
        for b in range(fb, nb):
            e = axis[b]
            E = np.array([[0, -e[2], e[1]], [e[2], 0, -e[0]], [-e[1], e[0], 0]])
            B3 = BR[b].reshape(3, 3)
            BE1[b] = (B3 @ E).ravel()
            BE2[b] = (B3 @ E @ E).ravel()
            BRe[b] = B3 @ e
        self._keep = [parent, jtype, axis, BR, Bp, mass, h, I, BE1, BE2, BRe]
        self.m.n, self.m.nb, self.m.fb = n, nb, fb
        self.m.nq, self.m.nv = n + 7 * fb, n + 6 * fb
        self.m.parent = <int*> cnp.PyArray_DATA(parent)
        self.m.jtype = <int*> cnp.PyArray_DATA(jtype)
        self.m.axis, self.m.BR, self.m.Bp = _ptr(axis), _ptr(BR), _ptr(Bp)
        self.m.BE1, self.m.BE2, self.m.BRe = _ptr(BE1), _ptr(BE2), _ptr(BRe)
        self.m.mass, self.m.h, self.m.Th = _ptr(mass), _ptr(h), _ptr(I)
        for a in range(3):
            self.m.g[a] = float(model.gravity[a])
        self.arrays = self._allocate()
        self._bind(self.arrays, &self.w)
        self._threads = []

    def __dealloc__(self):
        if self._tw != NULL:
            free(self._tw)

    def _allocate(self):
        nb, k = self.m.nb, self.kmax
        arrays = {name: np.zeros(shape(nb, k)) for name, shape, _ in LAYOUT}
        arrays["binom"][...] = _binomials(k)
        return arrays

    cdef int _bind(self, dict a, KWork* w) except -1:
        w.kmax = self.kmax
        w.T, w.V, w.W, w.qj = _ptr(a["T"]), _ptr(a["V"]), _ptr(a["W"]), _ptr(a["qj"])
        w.nu, w.gam, w.fx = _ptr(a["nu"]), _ptr(a["gam"]), _ptr(a["fx"])
        w.bell, w.binom, w.Au, w.MV = _ptr(a["bell"]), _ptr(a["binom"]), _ptr(a["Au"]), _ptr(a["MV"])
        w.Ic, w.J, w.Jd, w.P = _ptr(a["Ic"]), _ptr(a["J"]), _ptr(a["Jd"]), _ptr(a["P"])
        w.IA, w.pA, w.c, w.U = _ptr(a["IA"]), _ptr(a["pA"]), _ptr(a["c"]), _ptr(a["U"])
        w.D, w.u, w.A, w.S = _ptr(a["D"]), _ptr(a["u"]), _ptr(a["A"]), _ptr(a["S"])
        w.Cw, w.Vs, w.Sw, w.Sdw = _ptr(a["Cw"]), _ptr(a["Vs"]), _ptr(a["Sw"]), _ptr(a["Sdw"])
        w.Icw, w.Bc = _ptr(a["Icw"]), _ptr(a["Bc"])
        w.dX, w.dC = _ptr(a["dX"]), _ptr(a["dC"])
        return 0

    cdef KWork* thread_works(self, int T) except NULL:
        """T independent workspaces for the threaded batch kernels (made once, kept)."""
        if self._ntw != T or self._tw == NULL:
            if self._tw != NULL:
                free(self._tw)
                self._tw = NULL
            self._threads = [self._allocate() for _ in range(T)]
            self._tw = <KWork*> malloc(T * sizeof(KWork))
            if self._tw == NULL:
                raise MemoryError()
            for t in range(T):
                self._bind(self._threads[t], &self._tw[t])
            self._ntw = T
        return self._tw

    def grow(self, int kmax):
        """Resize the jet arrays for derivative orders up to ``kmax`` (no-op if large enough)."""
        claim(self)
        try:
            if kmax > self.kmax:
                self.kmax = kmax
                self.arrays = self._allocate()
                self._bind(self.arrays, &self.w)
                self._ntw = 0
        finally:
            unclaim(self)

    # ---- the owner flag: one thread at a time (see BUSY_MESSAGE)
    def acquire(self):
        """Take this workspace for the calling thread before a sequence of kernel calls that
        must not interleave with another thread's (re-entrant: the kernels called in between
        by the same thread pass). Raises RuntimeError (:data:`BUSY_MESSAGE`) if another thread
        holds it. Pair every acquire with :meth:`release` (or use ``with data:``)."""
        claim(self)

    def release(self):
        """Give back one :meth:`acquire` of the calling thread."""
        if self.busy and self.owner != PyThread_get_thread_ident():
            raise RuntimeError("Data.release() from a thread that does not hold it")
        unclaim(self)

    def __enter__(self):
        claim(self)
        return self

    def __exit__(self, *exc):
        unclaim(self)
        return False

    @property
    def in_use(self):
        """True while a thread is inside a kernel call (or between acquire and release)."""
        return self.busy > 0

    @property
    def n(self):
        return self.m.n

    @property
    def nb(self):
        return self.m.nb

    @property
    def nq(self):
        return self.m.nq

    @property
    def nv(self):
        return self.m.nv

    def set_origins(self, object bodies, object poses):
        """Re-seat the zero-configuration pose ``B_i`` of some bodies in this workspace's packed
        model (``BR``, ``Bp`` and the pre-multiplied Rodrigues terms), in place: the kernels
        then compute with ``B_i ← poses[k]`` for ``i = bodies[k]``.

        This is how :class:`~mbs_dynamics.model.lie_joints.LieJointRobot` re-centres its chart
        at a new configuration without rebuilding the workspace. ``self.model`` is not changed
        (it still holds the original ``B``): only the compiled kernels see the new poses.

        Args:
            bodies: (k,) body indices (0 ≤ i < nb; not a floating base's body 0).
            poses: (k, 4, 4) homogeneous poses [m].
        Raises:
            ValueError: an index out of range or poses of the wrong shape.
        """
        cdef Py_ssize_t k, b
        cdef double[:, :, ::1] P = np.ascontiguousarray(poses, dtype=float)
        cdef long[::1] idx = np.ascontiguousarray(bodies, dtype=np.int_)
        cdef double RP[12]
        cdef int i, j
        if P.shape[0] != idx.shape[0] or P.shape[1] != 4 or P.shape[2] != 4:
            raise ValueError(f"poses must have shape ({idx.shape[0]}, 4, 4)")
        for k in range(idx.shape[0]):
            if not self.m.fb <= idx[k] < self.m.nb:
                raise ValueError(f"body index {idx[k]} out of range")
        claim(self)
        try:
            for k in range(idx.shape[0]):
                b = idx[k]
                for i in range(3):
                    RP[9 + i] = P[k, i, 3]
                    for j in range(3):
                        RP[3 * i + j] = P[k, i, j]
                seat_origin(&self.m, <int> b, RP)
        finally:
            unclaim(self)

    def __getattr__(self, name):
        try:
            return self.arrays[name]
        except KeyError:
            raise AttributeError(name) from None

    def __repr__(self):
        return (f"Data(nb={self.m.nb}, kmax={self.kmax}, "
                f"fields={[name for name, _, _ in LAYOUT]})")


# ---------------------------------------------------------------------------------------------
# Input conversion at the public entries
# ---------------------------------------------------------------------------------------------
def _desc(tuple shape):
    return "(" + ", ".join("N" if s < 0 else str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


cdef inline bint _shape_ok(cnp.ndarray a, int ndim, tuple shape):
    cdef int i
    cdef Py_ssize_t want
    if cnp.PyArray_NDIM(a) != ndim:
        return False
    for i in range(ndim):
        want = <Py_ssize_t> shape[i]
        if want >= 0 and cnp.PyArray_DIM(a, i) != want:
            return False
    return True


cdef object as_input(object x, str name, int ndim, tuple shape):
    """``x`` as a C-contiguous float64 array of ``shape`` (−1 = any size), converted at most once.

    NumPy's C API all the way (issue 21: inputs at numpy's cost): an array of float64 in C order
    passes untouched; another real array (strided view, Fortran order, float32, integers, bool)
    is copied once by ``PyArray_FromAny``; anything else goes through ``PyArray_FromAny`` in its
    natural dtype first (what ``np.asarray`` does), then the same checks."""
    cdef cnp.ndarray a
    if cnp.PyArray_CheckExact(x):
        a = <cnp.ndarray> x
        if (cnp.PyArray_TYPE(a) == cnp.NPY_DOUBLE and cnp.PyArray_IS_C_CONTIGUOUS(a)
                and _shape_ok(a, ndim, shape)):
            return a
    elif cnp.PyArray_Check(x):
        a = <cnp.ndarray> x
    else:
        try:
            a = <cnp.ndarray> cnp.PyArray_FROM_O(x)
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be an array of numbers of shape {_desc(shape)}") from None
    if cnp.PyArray_ISCOMPLEX(a):
        raise TypeError(f"{name} must be real, got a complex array")
    if not (cnp.PyArray_ISFLOAT(a) or cnp.PyArray_ISINTEGER(a) or cnp.PyArray_ISBOOL(a)):
        raise ValueError(f"{name} must be an array of numbers of shape {_desc(shape)}")
    if not _shape_ok(a, ndim, shape):
        raise ValueError(f"{name} has shape {(<object> a).shape}, expected {_desc(shape)}")
    if (cnp.PyArray_CheckExact(a) and cnp.PyArray_TYPE(a) == cnp.NPY_DOUBLE
            and cnp.PyArray_IS_C_CONTIGUOUS(a)):
        return a
    return cnp.PyArray_FROM_OTF(a, cnp.NPY_DOUBLE, cnp.NPY_ARRAY_IN_ARRAY | cnp.NPY_ARRAY_FORCECAST
                                | cnp.NPY_ARRAY_ENSUREARRAY)


cdef object as_out(object x, str name, tuple shape):
    """A fresh array of ``shape``, or ``x`` if it is a writable float64 C-contiguous array of
    exactly that shape; anything else is a ValueError naming ``name``."""
    cdef cnp.ndarray a
    cdef cnp.npy_intp dims[3]
    cdef int i, nd = len(shape)
    if x is None:
        for i in range(nd):
            dims[i] = <cnp.npy_intp> shape[i]
        return cnp.PyArray_EMPTY(nd, dims, cnp.NPY_DOUBLE, 0)
    if cnp.PyArray_Check(x):
        a = <cnp.ndarray> x
        if (cnp.PyArray_TYPE(a) == cnp.NPY_DOUBLE and cnp.PyArray_IS_C_CONTIGUOUS(a)
                and cnp.PyArray_ISWRITEABLE(a) and cnp.PyArray_NDIM(a) == nd):
            for i in range(nd):
                if cnp.PyArray_DIM(a, i) != <cnp.npy_intp> shape[i]:
                    break
            else:
                return a
        x = np.asarray(x)
        if (x.dtype == np.float64 and x.flags.c_contiguous and x.flags.writeable
                and x.shape != shape):
            raise ValueError(f"{name} has shape {x.shape}, expected {shape}")
        raise ValueError(f"{name} must be a writable float64 C-contiguous array of shape "
                         f"{shape}, got {x.dtype} {x.shape}"
                         + ("" if x.flags.writeable else " (read-only)")
                         + ("" if x.flags.c_contiguous else " (not C-contiguous)"))
    raise ValueError(f"{name} must be a writable float64 C-contiguous NumPy array of shape "
                     f"{shape}, got {type(x).__name__}")


cdef int check_finite(object a, str name) except -1:
    """NaN or inf anywhere is a ValueError. Branch-free over the bits (it vectorises): the
    exponent field is all ones exactly when (x & EXP) + 2⁵² carries into the sign bit."""
    cdef const uint64_t* p = <const uint64_t*> cnp.PyArray_DATA(a)
    cdef Py_ssize_t i, N = cnp.PyArray_SIZE(a)
    cdef uint64_t acc = 0
    for i in range(N):
        acc |= (p[i] & <uint64_t> 0x7FF0000000000000ULL) + <uint64_t> 0x0010000000000000ULL
    if acc >> 63:
        raise ValueError(f"{name} contains NaN or inf")
    return 0


cdef inline bint _finite_array(object a):
    """Every entry of the float64 array ``a`` is finite (branch-free over the bits, as
    :func:`check_finite`; any layout)."""
    cdef const uint64_t* p
    cdef Py_ssize_t i, N
    cdef uint64_t acc = 0
    if not cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray> a) or cnp.PyArray_TYPE(<cnp.ndarray> a) != cnp.NPY_DOUBLE:
        return bool(np.isfinite(a).all())
    p = <const uint64_t*> cnp.PyArray_DATA(<cnp.ndarray> a)
    N = cnp.PyArray_SIZE(<cnp.ndarray> a)
    for i in range(N):
        acc |= (p[i] & <uint64_t> 0x7FF0000000000000ULL) + <uint64_t> 0x0010000000000000ULL
    return not (acc >> 63)


cdef object finite_result(object res, str what):
    """``res`` (an array, or a tuple of arrays) when every entry is finite, else a ValueError:
    finite inputs far beyond a robot's range (|q̇| ~ 1e154 and up) overflow float64 arithmetic,
    and the call says so instead of returning inf or NaN. One pass over the output."""
    cdef bint ok = True
    if type(res) is np.ndarray:
        ok = _finite_array(res)
    elif type(res) is tuple:
        for a in res:
            if type(a) is np.ndarray and not _finite_array(a):
                ok = False
    if not ok:
        raise ValueError(f"{what}: the result overflowed to inf or NaN — an input is too "
                         "large for float64 arithmetic (check the magnitudes of q, its "
                         "derivatives, the torques and the external wrenches)")
    return res


cdef inline bint _overlap(object out, object x):
    cdef char* o0
    cdef char* a0
    if x is None:
        return False
    o0 = <char*> cnp.PyArray_DATA(out)
    a0 = <char*> cnp.PyArray_DATA(x)
    return a0 < o0 + cnp.PyArray_NBYTES(out) and o0 < a0 + cnp.PyArray_NBYTES(x)


cdef object fresh_if_alias(object out, tuple inputs):
    """``out`` itself, or a fresh array of its shape when it shares memory with an input (the
    caller copies the result back), so that aliasing never changes a result."""
    for x in inputs:
        if _overlap(out, x):
            return np.empty_like(out)
    return out


cdef int check_quat(const KModel* m, object q, str name) except -1:
    """A floating base's quaternion must be close to unit (it is normalised in the kernel)."""
    cdef double* x = <double*> cnp.PyArray_DATA(q)
    cdef Py_ssize_t N = cnp.PyArray_SIZE(q) // m.nq, s
    cdef double r
    if not m.fb:
        return 0
    for s in range(N):
        r = x[3] * x[3] + x[4] * x[4] + x[5] * x[5] + x[6] * x[6]
        if not (abs(r - 1.0) <= 1e-6):
            raise ValueError(f"{name}: the base quaternion (qx, qy, qz, qw) = "
                             f"({x[3]:g}, {x[4]:g}, {x[5]:g}, {x[6]:g}) is not a unit quaternion")
        x += m.nq
    return 0


def _check_array(x, str name, int ndim, tuple shape, bint out=False, double bound=-1.0):
    """Python access to the entry checks: an input (converted, finite) or an ``out`` array.
    With ``bound`` >= 0, also ValueError naming ``name`` when an entry exceeds it in magnitude
    (e.g. a MimicRobot's bound that keeps its expansion ``k·q`` finite)."""
    cdef double* p
    cdef Py_ssize_t i, N
    if out:
        return as_out(x, name, shape)
    a = as_input(x, name, ndim, shape)
    check_finite(a, name)
    if bound >= 0.0:
        p = <double*> cnp.PyArray_DATA(a)
        N = cnp.PyArray_SIZE(a)
        for i in range(N):
            if not (-bound <= p[i] <= bound):
                raise ValueError(f"{name} has an entry of magnitude {abs(p[i]):.3g}, above "
                                 f"{bound:.3g}: its mimic expansion would overflow")
    return a


cdef tuple take_states(const KModel* m, object q, object x, object y, str nx, str ny,
                       bint batch):
    """The three state arguments of ID/FD, checked once: q (nq,) and x, y (nv,) — or (N, ·)
    batches — converted, finite, a unit base quaternion."""
    if batch:
        q = as_input(q, "q", 2, (-1, m.nq))
        N = q.shape[0]
        x = as_input(x, nx, 2, (N, m.nv))
        y = as_input(y, ny, 2, (N, m.nv))
    else:
        q = vec(q, "q", m.nq)
        x = vec(x, nx, m.nv)
        y = vec(y, ny, m.nv)
    check_finite(q, "q")
    check_finite(x, nx)
    check_finite(y, ny)
    check_quat(m, q, "q")
    return q, x, y


cdef int load_fx(Data d, object fx, int rows) except -1:
    """Body wrenches (≤ rows, nb, 6) (C float64, made by Robot) into the workspace's fx jet;
    missing rows are zero."""
    cdef double* f = <double*> cnp.PyArray_DATA(fx)
    cdef Py_ssize_t b, size = 6 * d.m.nb, have = min(cnp.PyArray_SIZE(fx), rows * size)
    for b in range(rows * size):
        d.w.fx[b] = f[b] if b < have else 0.0
    return 0


# ---- the hot path of single calls: no tuples, no Python-level loops
cdef inline bint _c_vec(object x, Py_ssize_t n):
    cdef cnp.ndarray a
    if not cnp.PyArray_CheckExact(x):
        return False
    a = <cnp.ndarray> x
    return (cnp.PyArray_TYPE(a) == cnp.NPY_DOUBLE and cnp.PyArray_IS_C_CONTIGUOUS(a)
            and cnp.PyArray_NDIM(a) == 1 and cnp.PyArray_DIM(a, 0) == n)


cdef object vec(object x, str name, Py_ssize_t n):
    """``x`` as a C float64 (n,) array: itself when it already is one, else :func:`as_input`."""
    if _c_vec(x, n):
        return x
    return as_input(x, name, 1, (n,))


cdef object out_vec(object x, Py_ssize_t n):
    """``out`` for an (n,) result: a fresh array for None, ``x`` if exactly right, else
    :func:`as_out`'s ValueError."""
    cdef cnp.npy_intp dims[1]
    if x is None:
        dims[0] = n
        return cnp.PyArray_EMPTY(1, dims, cnp.NPY_DOUBLE, 0)
    if _c_vec(x, n) and cnp.PyArray_ISWRITEABLE(<cnp.ndarray> x):
        return x
    return as_out(x, "out", (n,))


cdef object out_mat(object x, Py_ssize_t r, Py_ssize_t c):
    """``out`` for an (r, c) result (see :func:`out_vec`)."""
    cdef cnp.npy_intp dims[2]
    cdef cnp.ndarray a
    if x is None:
        dims[0] = r
        dims[1] = c
        return cnp.PyArray_EMPTY(2, dims, cnp.NPY_DOUBLE, 0)
    if cnp.PyArray_CheckExact(x):
        a = <cnp.ndarray> x
        if (cnp.PyArray_TYPE(a) == cnp.NPY_DOUBLE and cnp.PyArray_IS_C_CONTIGUOUS(a)
                and cnp.PyArray_ISWRITEABLE(a) and cnp.PyArray_NDIM(a) == 2
                and cnp.PyArray_DIM(a, 0) == r and cnp.PyArray_DIM(a, 1) == c):
            return a
    return as_out(x, "out", (r, c))


cdef object alias3(object out, object a, object b, object c):
    """:func:`fresh_if_alias` for up to three inputs (None: absent), without a tuple."""
    if _overlap(out, a) or _overlap(out, b) or _overlap(out, c):
        return np.empty_like(out)
    return out
