"""Hamiltonian divide-and-conquer forward dynamics (HDCA, seed 002) for trees and closed loops,
on a fixed or a floating base, with mimic joints.

Formulation (seed 002 §2.1, eq. 6–8): the state is the joint positions q and the *augmented*
momenta P = M q̇ − K_vᵀσ of the spanning tree's joints (σ: the loop impulses, σ̇ = λ);

    [M  K_vᵀ] [ q̇ ]   [P]                Ṗ = τ + ∂L/∂q(q, q̇) − K̇_vᵀσ          (6)–(8)
    [K_v  0 ] [−σ ] = [0],

the constraints acting at velocity level, ``K_v q̇ = E_ℓᵀ(V_b − V_a) = 0`` (E_ℓ the loop's wrench
basis at frame_b; at an assembled configuration K_v is :meth:`constraint_jacobian`'s K).

Everything is in the spatial (world) representation: body twists V_i, spatial inertias
M_i = Ad_{C_i}⁻ᵀ M_i^b Ad_{C_i}⁻¹, joint screws S_k = Ad_{C_k} X_k; a joint transmits the impulse
``D_k σ_k + H_k P_k`` (eq. 10; Dᵀ_k S_k = 0, H_k = S_k/|S_k|², so S_kᵀ(…) = P_k), a loop ±E_ℓσ_ℓ.

* Connections. Every constraint c — the 5 rows ``D_kᵀ(V_k − V_λ(k)) = β`` of a 1-DOF joint, the
  rows ``E_ℓᵀ(V_b − V_a) = β`` of a loop, the row of a mimic joint (below) — is a list of
  handles (body i, B_{c,i}): it reads ``Σ_i B_{c,i}ᵀ X_i = β_c`` and applies ``B_{c,i} σ_c`` to
  body i (the same matrices: the impulses do no work on admissible motions, seed 002 eq. 10).
* Velocities and impulses (Alg. 1–2): each body's integral form ``X_i = M_i⁻¹(f_i + Σ B σ)``
  (eq. 12–16; every handle of a rigid body shares its spatial twist) gives, for a subassembly,
  the velocities of its open connections as an affine function of their impulses,
  ``u = Λ σ + λ₀`` (Λ the subassembly's handle compliance, seed 002 eq. 17–22 stacked); two
  subassemblies are joined over a balanced binary tree by adding their Λ, λ₀ and eliminating the
  connections that are now closed: ``Λ_JJ σ_J = β_J − λ₀_J − Λ_Jb σ_b`` (eq. 23–29,
  pseudo-inverse: redundant closures give the minimum-norm σ, never a singular solve), the
  Schur complement ``Λ_bb + Λ_bJ Z`` for the rest (eq. 30–36). A connection to the fixed world
  drops the world's handle (eq. 42–45: X_world = 0). The disassembly (Alg. 2) recovers every
  impulse top-down, the body twists (eq. 15) and the joint rates by projection,
  q̇_k = H_kᵀ(V_k − V_λ(k)) (eq. 23, 40).
* Floating base: the base is a body joined to the world by a 6-DOF joint with no constraint
  rows and the momenta (active wrench) ``H_b P_b``, H_b = S_b⁻ᵀ, S_b = Ad_{C_b}·[[0, I], [I, 0]]
  (Pinocchio's free-flyer layout: v_b = (linear, angular) in the base frame) — its rate
  v_b = H_bᵀ V_b, its acceleration v̇_b = H_bᵀ V̇_b (Ṡ_b v_b = ad_{V_b} V_b = 0).
* Mimic joints (q_m = k q_s + o, a linear holonomic constraint between two joint coordinates):
  the row ``q̇_m − k q̇_s = H_mᵀ(X_m − X_λ(m)) − k H_sᵀ(X_s − X_λ(s)) = β`` is a connection with
  the four handles ±H_m, ∓k H_s (the generalized impulse σ at joint m, −kσ at joint s: Kᵀσ with
  K = e_m − k e_s). Closed in the assembly like a loop, it is exact: the solution is the
  constrained tree's, i.e. the projected dynamics GᵀMG q̈ = Gᵀ(τ − h) of
  :class:`~mbs_dynamics.model.mimic.MimicRobot` (the torques enter at the independent joints).
* Spherical/free joints inside a closed loop's tree (:mod:`.lie`): their chart's links are
  massless, so the acceleration level gives them a ghost inertia (``GHOST`` × the largest
  body's) and uses the assembly as the preconditioner of an iterative refinement against the
  exact RNEA residual and loop rows, run until it stops gaining — the fixed point is the exact
  constrained q̈ (the error contracts by (GᵀM_εG)⁻¹GᵀEG, eigenvalues in [0, 1)). NumPy path
  only; the momentum level (Alg. 3) refuses them.
* Momentum derivatives (Alg. 3, eq. 69/77 in this representation): with Π_k, Γ_k the momentum
  and the gravity wrench of the subtree of joint k and Ṡ_k = ad_{V_λ(k)} S_k,
  ``Ṗ_k = τ_k + S_kᵀΓ_k + Ṡ_kᵀ Π_k − (K̇_vᵀσ)_k`` — ∂T/∂q_k = Ṡ_kᵀΠ_k replaces ∂H/∂q (fixed
  bases; a mimic row has K̇ = 0).

The same assembly at acceleration level (forces instead of impulses, M_i V̇_i = F_i + ad_{V_i}ᵀ
M_i V_i, biases Dᵀ Ṡ q̇ at the joints, E_ℓᵀ ad_{V_b}(V_b − V_a) at the loops and
H_mᵀṠ_m q̇_m − k H_sᵀṠ_s q̇_s at the mimic rows) is Featherstone's DCA, which gives q̈ for
``forward_dynamics(method="dca")``, followed by one step of iterative refinement with the
spanning tree's RNEA residual that reuses the factorisation.

Compiled path (``mbs_dynamics/loops/_hdca.pyx``, :meth:`HDCA.fast_acceleration`, used by
``forward_dynamics(method="dca")`` of a Robot, MimicRobot, ClosedLoopRobot and
FloatingClosedLoopRobot, with ``f_ext``): the plan flattened once per model into integer
arrays, a workspace per plan (no allocation per call; a second thread inside at the same time
gets a private workspace), the leaves in the body frames (Λ = UᵀU, U = L_bᵀ Ad_Cᵀ B with L_b the
Cholesky factor of the body mobility (M_i^b)⁻¹ — no world-frame M_i⁻¹, whose Schur complements
lost up to 6 digits with light links: 1e-15…1e-13 before the refinement), Schur complements
Λ_bb − GᵀG with G = R⁻¹Λ_Jb, R the Cholesky factor of Λ_JJ — with diagonal pivoting
(rank-revealing) once a loop or mimic row is closed in the subassembly: the redundant rows of a
closure get no impulse (a basic solution; the motion is the same for every solution), never a
singular solve — and the refinement's RNEA residual computed in the kernel (world-frame
spatial RNEA at the solved q̈). Its binary tree splits each depth-first range where the fewest
constraint rows stay open (:meth:`HDCA._split_open`); the NumPy plan (:meth:`solve`, the
fallback) keeps the plain halving. The momentum level is compiled the same way
(:meth:`HDCA.velocity`: the kernel's assembled system with the right-hand side H_k P_k, β = 0
and no body terms; :meth:`HDCA.momentum_rate`: Ṗ from the compiled twists and loop impulses,
``HDCAKernel.momentum_rate``); ``compiled=False`` takes the NumPy path. Fallback to the NumPy path:
the extension not built, a model without movable joints, or a joint screw with |ω| ∉ {0, 1}
(not produced by URDF joints).

Parallel assembly: the two subtrees of a node are independent (:meth:`HDCA.halves`); measured
with two threads on the shared 2-core machine it does not pay reliably in NumPy (the GIL between
the many small calls: bench/hdca.py, bench/NOTES.md), so the assembly runs sequentially; the
compiled kernel releases the GIL (threads on different robots run in parallel) but does not
split one call.
"""
from __future__ import annotations

import weakref

import numpy as np

from ..kernels import lie


#: ghost inertia of a massless chart link, relative to the largest body's (module docstring)
GHOST = 1e-6
#: at most this many refinement steps with ghost inertias (each gains ~|log10 GHOST| digits)
GHOST_STEPS = 8


def _ad(V):
    return lie.ad(V)


def _adT_batch(V):
    """ad_V for a batch (N, 6) → (N, 6, 6)."""
    N = V.shape[0]
    A = np.zeros((N, 6, 6))
    w, v = V[:, :3], V[:, 3:]
    for blk, x in (((slice(0, 3), slice(0, 3)), w), ((slice(3, 6), slice(3, 6)), w),
                   ((slice(3, 6), slice(0, 3)), v)):
        S = np.zeros((N, 3, 3))
        S[:, 0, 1], S[:, 0, 2], S[:, 1, 2] = -x[:, 2], x[:, 1], -x[:, 0]
        S[:, 1, 0], S[:, 2, 0], S[:, 2, 1] = x[:, 2], -x[:, 1], x[:, 0]
        A[:, blk[0], blk[1]] = S
    return A


def _quat_pose(x):
    """Base pose from (x, y, z, qx, qy, qz, qw) (the quaternion normalised, as the kernels)."""
    qx, qy, qz, qw = np.asarray(x[3:7], float) / np.linalg.norm(x[3:7])
    R = np.array([[1 - 2 * (qy * qy + qz * qz), 2 * (qx * qy - qz * qw), 2 * (qx * qz + qy * qw)],
                  [2 * (qx * qy + qz * qw), 1 - 2 * (qx * qx + qz * qz), 2 * (qy * qz - qx * qw)],
                  [2 * (qx * qz - qy * qw), 2 * (qy * qz + qx * qw), 1 - 2 * (qx * qx + qy * qy)]])
    return lie.pose(R, np.asarray(x[:3], float))


_SEL = {"connect": [3, 4, 5], "weld": [3, 4, 5, 0, 1, 2], "revolute": [3, 4, 5, 0, 1]}
# (linear, angular) ↔ (angular, linear): the free-flyer's velocity order vs the kernels' twists
_SWAP = np.block([[np.zeros((3, 3)), np.eye(3)], [np.eye(3), np.zeros((3, 3))]])


class HDCA:
    """Divide-and-conquer solver on a tree model (fixed or floating base) with optional loops
    (``kin``: a :class:`~.kinematics.LoopKinematics` or None) and the model's mimic joints.

    Bodies 0…n−1 are the model's; with a floating base body n is the base (the model's body −1).
    Connections: joints 0…n−1, then the loops, then the mimic rows (the order of the rows of
    ``kin``'s K; ``mimic``: without kin, whether the model's mimic map constrains the tree — a
    MimicRobot's, not its full-coordinate Robot's). Inputs and outputs in the model's layout
    (nq, nv: the free-flyer's first)."""

    def __init__(self, model, kin=None, mimic=False):
        self.model = model
        self.kin = kin
        n = model.n
        self.n = n
        self.fb = bool(model.floating_base)
        self.nb = n + self.fb
        self.base = n if self.fb else -1
        self.nv0 = 6 if self.fb else 0  # leading base velocities
        self.loops = [] if kin is None else list(kin.loops)
        names = list(model.joint_names)
        if kin is not None:
            self.mimic = list(kin.mimic)
        elif not mimic:  # a Robot in full coordinates: its mimic map is not a constraint
            self.mimic = []
        else:
            self.mimic = [(names.index(mj), names.index(v[0]), float(v[1]), float(v[2]))
                          for mj, v in dict(getattr(model, "mimic", {}) or {}).items()]
        self.has_mimic = bool(self.mimic)
        self.par = [int(p) if p >= 0 else self.base for p in model.parent]
        self.lb = [(self._body(lp.body_a), self._body(lp.body_b)) for lp in self.loops]
        dims, bodies = [], []
        for k in range(n):
            dims.append(5)
            bodies.append({k, self.par[k]})
        for lp, (a, b) in zip(self.loops, self.lb):
            dims.append(len(_SEL[lp.type]))
            bodies.append({a, b})
        for mj, s, _, _ in self.mimic:
            dims.append(1)
            bodies.append({mj, self.par[mj], s, self.par[s]})
        self.dim = dims
        self.cbodies = [frozenset(b - {-1}) for b in bodies]
        self.nc = len(dims)
        self.handles = {i: [c for c in range(self.nc) if i in self.cbodies[c]]
                        for i in range(self.nb)}
        order = ([self.base] if self.fb else []) + list(range(n))
        self.tree = self._split(order)
        Ib = np.array(model.inertias)
        if self.fb:
            Ib = np.concatenate([Ib, np.asarray(model.base_inertia)[None]])
        lam = np.linalg.eigvalsh(Ib) if self.nb else np.ones((0, 6))
        bad = [i for i in range(self.nb) if not lam[i, 0] > 1e-12 * max(lam[i, -1], 1e-300)]
        chart = {i for _, (kind, i0) in dict(getattr(model, "lie_joints", {}) or {}).items()
                 for i in range(i0, i0 + (2 if kind == "spherical" else 5))}
        # with loops (a LieClosedLoopRobot's chart, whose model holds the chart's origins):
        # the massless links inside a spherical/free joint's chart get a ghost inertia GHOST ×
        # the largest body's, the assembly then a preconditioner refined against the exact
        # RNEA residual until converged (:meth:`acceleration`). Not on a tree: a LieJointRobot
        # re-seats its chart's origins in the compiled workspace only, not in this model.
        self.ghost = (kin is not None and bool(bad) and set(bad) <= chart
                      and len(bad) < self.nb)
        if self.ghost:
            good = [i for i in range(self.nb) if i not in set(bad)]
            Ib[bad] = GHOST * max(lam[i, -1] for i in good) * np.eye(6)
            bad = []
        self.Ib = Ib
        if bad:
            nm = ["the floating base link" if i == n else f"the link of joint '{names[i]}'"
                  for i in bad]
            raise ValueError(f"the divide-and-conquer assembly (forward_dynamics method 'dca', "
                             f"simulate method 'hdca') needs every body's spatial inertia positive "
                             f"definite (the divide-and-conquer body mobilities M_i⁻¹): "
                             f"{', '.join(nm)} has a singular inertia; use method='aba'")
        self.Mb_inv = np.linalg.inv(Ib)  # body-frame inertias (well scaled)
        self.plan = self._plan()

    _ghost_error = ("the Hamiltonian divide-and-conquer assembly (simulate method 'hdca') "
                    "needs every body's inertia positive definite; the links inside a "
                    "spherical/free joint's chart are massless: use method='lagrange'")

    # ------------------------------------------------------------------ compiled path
    def compiled(self):
        """The compiled kernel of this plan (:mod:`mbs_dynamics.loops._hdca`), or None where it
        does not apply: the extension not built, no movable joint, or a joint screw with
        |ω| ∉ {0, 1} (the NumPy path then serves)."""
        k = self.__dict__.get("_ck", 0)
        if k == 0 and self.ghost:
            k = self._ck = None  # the NumPy path refines to convergence
        if k == 0:
            try:
                from . import _hdca
                spec = self._spec()
                k = None if spec is None else _hdca.HDCAKernel(spec)
            except ImportError:
                k = None
            self._ck = k
        return k

    def _spec(self):
        """The plan and the model flattened into integer/float arrays for the kernel."""
        m, n, nb = self.model, self.n, self.nb
        if n == 0:  # nothing moves but a floating base, or nothing at all: the NumPy path
            return None
        X = np.asarray(m.X, float).reshape(n, 6)
        wn = np.linalg.norm(X[:, :3], axis=1) if n else np.zeros(0)
        if not np.all((np.abs(wn - 1.0) < 1e-12) | (wn < 1e-12)):
            return None
        kind = (wn < 1e-12).astype(np.intc)
        B = np.asarray(m.B, float).reshape(n, 4, 4)
        Ib = np.array(m.inertias, float).reshape(n, 6, 6)
        if self.fb:
            Ib = np.concatenate([Ib, np.asarray(m.base_inertia, float)[None]])
        Dloc = np.zeros((n, 5, 6))
        for k in range(n):
            u, _, _ = np.linalg.svd(X[k][:, None])
            Dloc[k] = u[:, 1:].T
        nl, nm = len(self.loops), len(self.mimic)
        ldim = [len(_SEL[lp.type]) for lp in self.loops]
        lsel = np.zeros((nl, 6), np.intc)
        for t, lp in enumerate(self.loops):
            lsel[t, :ldim[t]] = _SEL[lp.type]
        lsrc = 5 * n + np.r_[0, np.cumsum(ldim)][:nl].astype(int)
        hsrc = 5 * n + int(sum(ldim))
        dim = self.dim
        coff = np.r_[0, np.cumsum(dim)].astype(int)
        # handle columns, grouped by body in the order of handles[i]
        bcol, colsig, tptr, tsrc, tcoef = [0], [], [0], [], []
        for i in range(nb):
            for c in self.handles[i]:
                terms = []  # (coef, first source column) for this body
                if c < n:
                    if c == i:
                        terms.append((1.0, 5 * c))
                    if self.par[c] == i:
                        terms.append((-1.0, 5 * c))
                elif c < n + nl:
                    t = c - n
                    a, b = self.lb[t]
                    if b == i:
                        terms.append((1.0, lsrc[t]))
                    if a == i:
                        terms.append((-1.0, lsrc[t]))
                else:
                    mj, sj, kk, _ = self.mimic[c - n - nl]
                    for bd, w, src in ((mj, 1.0, mj), (self.par[mj], -1.0, mj),
                                       (sj, -kk, sj), (self.par[sj], kk, sj)):
                        if bd == i:
                            terms.append((w, hsrc + src))
                for j in range(dim[c]):
                    colsig.append(coff[c] + j)
                    for w, s0 in terms:
                        tsrc.append(s0 + (j if c < n + nl else 0))
                        tcoef.append(w)
                    tptr.append(len(tsrc))
            bcol.append(len(colsig))
        Lb = np.linalg.cholesky(self.Mb_inv) if nb else np.zeros((0, 6, 6))
        Uself = np.einsum("kji,kcj->kci", Lb[:n], Dloc)  # Lbᵀ D_k^b, (n, 5, 6)
        ucon, ukind, uref = [], [], []
        for i in range(nb):
            for c in self.handles[i]:
                own = c < n and c == i
                child = c < n and not own and self.par[c] == i
                ucon.extend(5 * c + j if own else -1 for j in range(dim[c]))
                ukind.extend([1 if own else 2 if child else 0] * dim[c])
                uref.extend(5 * c + j if child else -1 for j in range(dim[c]))
        Lself = np.einsum("kai,kbi->kab", Uself, Uself)  # (n, 5, 5)
        order = ([self.base] if self.fb else []) + list(range(n))
        plan = self._plan(self._split_open(order))
        N = len(plan)
        F = {k: np.zeros(N, np.intc) for k in ("leaf", "kA", "kB", "mpre", "nJ", "npost", "pinv",
                                                "oiJ", "oib", "ova", "ovb", "oL", "ol0", "oF",
                                                "oZ", "oz0", "oY")}
        idx, gsig, store = [], [], 0

        def put(a, g=None):
            o = len(idx)
            idx.extend(int(x) for x in a)
            gsig.extend(int(x) for x in (g if g is not None else [0] * len(a)))
            return o

        def sig(cs):
            return [coff[c] + j for c in cs for j in range(dim[c])]

        for k, nd in enumerate(plan):
            if "leaf" in nd:
                i = nd["leaf"]
                F["leaf"][k], F["kA"][k], F["kB"][k] = i, -1, -1
                F["mpre"][k] = mp = sum(dim[c] for c in self.handles[i])
                F["oY"][k] = store
                store += 6 * mp
            else:
                F["leaf"][k] = -1
                F["kA"][k], F["kB"][k] = nd["kids"]
                F["mpre"][k] = nd["m"]
                F["ova"][k] = put(nd["va"])
                F["ovb"][k] = put(nd["vb"])
            nj, nbk = len(nd["iJ"]), len(nd["ib"])
            F["nJ"][k], F["npost"][k], F["pinv"][k] = nj, nbk, bool(nd["pinv"])
            F["oiJ"][k] = put(nd["iJ"], sig(nd["J"]))
            F["oib"][k] = put(nd["ib"], sig(nd["hs"]))
            for key, size in (("oL", nbk * nbk), ("ol0", nbk), ("oF", nj * nj),
                              ("oZ", nj * nbk), ("oz0", nj)):
                F[key][k] = store
                store += size
        spec = dict(F)
        spec.update(
            n=n, nb=nb, fb=int(self.fb), nl=nl, nm=nm, nc=self.nc, ns=int(coff[-1]), N=N,
            nsrc=hsrc + n, nhcol=len(colsig), maxm=int(max(F["mpre"], default=1)),
            maxJ=int(max(max(F["nJ"], default=1), 1)),
            maxb=int(max(F["npost"], default=1)), nstore=store,
            par=np.array(self.par, np.intc), kind=kind, BR=B[:, :3, :3], Bp=B[:, :3, 3],
            Xs=X, Ib=Ib, Dloc=Dloc, g=tuple(float(x) for x in m.gravity),
            la=np.array([a for a, _ in self.lb], np.intc),
            lb=np.array([b for _, b in self.lb], np.intc),
            lSR=np.array([lp.S_b[:3, :3] for lp in self.loops]).reshape(-1),
            lSp=np.array([lp.S_b[:3, 3] for lp in self.loops]).reshape(-1),
            ldim=np.array(ldim, np.intc), lsel=lsel, lsrc=np.array(lsrc, np.intc),
            mmj=np.array([x[0] for x in self.mimic], np.intc),
            mms=np.array([x[1] for x in self.mimic], np.intc),
            mmk=np.array([x[2] for x in self.mimic], float),
            cdim=np.array(dim, np.intc), coff=np.array(coff[:-1], np.intc),
            bcol=np.array(bcol, np.intc),
            colsig=np.array(colsig, np.intc), tptr=np.array(tptr, np.intc),
            tsrc=np.array(tsrc, np.intc), tcoef=np.array(tcoef, float),
            idx=np.array(idx, np.intc), gsig=np.array(gsig, np.intc),
            Lb=Lb, LbT=np.ascontiguousarray(np.swapaxes(Lb, 1, 2)), Uself=Uself, ucon=np.array(ucon, np.intc), ukind=np.array(ukind, np.intc),
            uref=np.array(uref, np.intc), Lself=Lself)
        return spec

    def fast_acceleration(self, q, v, tau, fx=None, refine=True):
        """q̈ (nv,) by the compiled assembly (:meth:`compiled`) with one step of iterative
        refinement (``refine``: the residual of the spanning tree's RNEA, computed in the
        kernel, mapped back through the stored factorisation); ``fx``: None or (nb, 6) applied
        wrenches (m, f) in the body frames, the floating base's row n. Falls back to the NumPy
        :meth:`acceleration` (refined against ``refine``, then a callable (q, q̇, q̈) → τ of the
        spanning tree) where no kernel applies."""
        K = self.compiled()
        if K is None:
            fw = None
            if fx is not None:
                C = self.state(q)["C"]
                fw = np.array([lie.Ad(lie.inv(C[i])).T @ fx[i] for i in range(self.nb)])
            return self.acceleration(q, v, tau, f_ext_spatial=fw,
                                     rnea=refine if callable(refine) else None)
        a = np.empty(self.nv0 + self.n)
        K.acceleration(q, v, tau, fx, a, bool(refine))
        return a

    def _body(self, b):
        return b if b >= 0 else self.base

    def _split(self, bodies):
        if len(bodies) == 1:
            return bodies[0]
        h = len(bodies) // 2
        return (self._split(bodies[:h]), self._split(bodies[h:]))

    def _split_open(self, bodies):
        """The compiled path's binary tree: each range (depth-first order) split within its
        middle half where the two parts leave the fewest open constraint rows (Σ rows²: the
        Schur complements' size) — on a branched tree (Talos) a cut between branches instead
        of through one; the same balanced depth O(log n)."""
        if len(bodies) == 1:
            return bodies[0]
        L = len(bodies)

        def rows(S):
            return sum(self.dim[c] for c in range(self.nc)
                       if self.cbodies[c] & S and not self.cbodies[c] <= S)

        best = None
        for h in range(max(1, L // 4), min(L - 1, (3 * L + 3) // 4) + 1):
            sc = rows(set(bodies[:h])) ** 2 + rows(set(bodies[h:])) ** 2
            if best is None or sc < best[0]:
                best = (sc, h)
        h = best[1]
        return (self._split_open(bodies[:h]), self._split_open(bodies[h:]))

    # ------------------------------------------------------------------ kinematics
    def state(self, q, v=None):
        """Poses C (nb,4,4), joint screws S (n,6), inertias M and mobilities Minv (nb,6,6),
        D (n,6,5), H (n,6), loop bases E (list of (6, m)), the base's S_b and H_b (6,6), twists
        V (nb,6) when v is given — q, v in the model's layout."""
        m = self.model
        n, nb = self.n, self.nb
        q = np.asarray(q, float)
        qj = q[7:] if self.fb else q
        C = np.empty((nb, 4, 4))
        if self.fb:
            C[n] = _quat_pose(q[:7])
        for i in range(n):
            p = self.par[i]
            Ci = m.B[i] @ lie.exp_se3(m.X[i], qj[i])
            C[i] = Ci if p < 0 else C[p] @ Ci
        S = np.empty((n, 6))
        Mi = np.empty((nb, 6, 6))
        Minv = np.empty((nb, 6, 6))
        D = np.empty((n, 6, 5))
        for i in range(nb):
            A = lie.Ad(C[i])
            Ainv = lie.Ad(lie.inv(C[i]))
            Ib = self.Ib[i]
            Mi[i] = Ainv.T @ Ib @ Ainv
            Minv[i] = A @ self.Mb_inv[i] @ A.T  # exact: no inversion of the world-frame M_i
            if i < n:
                S[i] = A @ m.X[i]
                u, _, _ = np.linalg.svd(S[i][:, None])
                D[i] = u[:, 1:]
        H = S / (S * S).sum(1)[:, None]
        st = {"C": C, "S": S, "M": Mi, "Minv": Minv, "D": D, "H": H}
        if self.fb:
            st["Sb"] = lie.Ad(C[n]) @ _SWAP
            st["Hb"] = lie.Ad(lie.inv(C[n])).T @ _SWAP  # S_b⁻ᵀ
        E = []
        for lp, (_, b) in zip(self.loops, self.lb):
            F = lp.S_b if b < 0 else C[b] @ lp.S_b
            E.append(lie.Ad(lie.inv(F)).T[:, _SEL[lp.type]])
        st["E"] = E
        st["V"] = None
        if v is not None:
            v = np.asarray(v, float)
            vj = v[6:] if self.fb else v
            V = np.zeros((nb, 6))
            if self.fb:
                V[n] = st["Sb"] @ v[:6]
            for i in range(n):
                p = self.par[i]
                V[i] = (V[p] if p >= 0 else 0.0) + S[i] * vj[i]
            st["V"] = V
        return st

    def _handles(self, st):
        """Per connection: list of (body, B (6, dim)) — the constraint Σ Bᵀ X = β and the
        impulse B σ on each body (the world's handle dropped)."""
        out = []
        for k in range(self.n):
            Dk = st["D"][k]
            out.append([(k, Dk)] + ([(self.par[k], -Dk)] if self.par[k] >= 0 else []))
        for E, (a, b) in zip(st["E"], self.lb):
            out.append([(x, s * E) for x, s in ((b, 1.0), (a, -1.0)) if x >= 0])
        H = st["H"]
        for mj, s, k, _ in self.mimic:
            acc = {}
            for b, w in ((mj, H[mj]), (self.par[mj], -H[mj]), (s, -k * H[s]),
                         (self.par[s], k * H[s])):
                if b >= 0:
                    acc[b] = acc.get(b, 0.0) + w
            out.append([(b, w[:, None]) for b, w in acc.items()])
        return out

    # ------------------------------------------------------------------ Alg. 1–2
    def _plan(self, tree=None):
        """The assembly's topology (fixed by the model and the loops), computed once: the nodes
        of the binary tree in post-order, each with its open connections (handles), the
        scatter of its children's handle blocks and the closed connections J with the index
        sets of the elimination."""
        dim, cb = self.dim, self.cbodies
        plan = []

        def idx(hs, sel):
            off = np.cumsum([0] + [dim[c] for c in hs])
            return (np.concatenate([np.arange(off[t], off[t + 1]) for t in sel]).astype(np.intp)
                    if sel else np.zeros(0, np.intp))

        def close(node, hs, bodies, looped):
            J = [t for t, c in enumerate(hs) if cb[c] <= bodies]
            keep = [t for t in range(len(hs)) if t not in set(J)]
            iJ, ib = idx(hs, J), idx(hs, keep)
            # a tree's Λ_JJ = Dᵀ(ΣM⁻¹)D is positive definite: a Cholesky-type solve; once a
            # loop or mimic row is closed in the subassembly the rows may be redundant (a
            # planar four-bar closed in 3-D): pseudo-inverse (rank-revealing, eq. 27)
            looped = looped or any(hs[t] >= self.n for t in J)
            node.update(hs=[hs[t] for t in keep], J=[hs[t] for t in J], bodies=bodies,
                        JJ=np.ix_(iJ, iJ), Jb=np.ix_(iJ, ib), bJ=np.ix_(ib, iJ),
                        bb=np.ix_(ib, ib), iJ=iJ, ib=ib, pinv=looped)
            plan.append(node)
            return len(plan) - 1

        def build(t):
            if not isinstance(t, tuple):
                hs = list(self.handles[t])
                return close({"leaf": t}, hs, frozenset([t]), False)
            a, b = build(t[0]), build(t[1])
            A, B = plan[a], plan[b]
            hs = A["hs"] + [c for c in B["hs"] if c not in A["hs"]]
            pos = {c: k for k, c in enumerate(hs)}
            ia = idx(hs, [pos[c] for c in A["hs"]])
            ibb = idx(hs, [pos[c] for c in B["hs"]])
            node = {"kids": (a, b), "m": int(sum(dim[c] for c in hs)),
                    "sa": np.ix_(ia, ia), "sb": np.ix_(ibb, ibb), "va": ia, "vb": ibb}
            return close(node, hs, A["bodies"] | B["bodies"], A["pinv"] or B["pinv"])

        if self.nb:
            build(self.tree if tree is None else tree)
        return plan

    def _rhs(self, f, st, active):
        """Body terms f_i plus the joint terms ±H_k a_k (and H_b a_b of a floating base)."""
        n = self.n
        rhs = np.array(f, dtype=float)
        a = np.asarray(active, float)
        w = st["H"] * a[self.nv0:, None]
        rhs[:n] += w
        for k in range(n):
            p = self.par[k]
            if p >= 0:
                rhs[p] -= w[k]
        if self.fb:
            rhs[n] += st["Hb"] @ a[:6]
        return rhs

    def solve(self, st, f, active, beta):
        """Divide-and-conquer solve of the body balances ``M_i X_i = f_i + Σ_c B_{c,i} σ_c +
        (joint terms H_k a_k)`` with the connection conditions ``Σ_i B_{c,i}ᵀ X_i = β_c``.
        The factorisation stays in ``st["ctx"]`` for :meth:`resolve`.

        Args:
            f: (nb, 6) known body terms; active: (nv,) joint terms a (momenta P or torques τ;
                a floating base's 6 first); beta: list of per-connection biases.
        Returns:
            X (nb, 6) body twists (or their rates), sigma (list per connection).
        """
        ctx = st["ctx"] = self.context(st, f, active, beta)
        self._assemble(range(len(self.plan)), ctx)
        return self._disassemble(ctx)

    def context(self, st, f, active, beta):
        """The workspace of one solve: right-hand sides, handle matrices, per-node slots."""
        N = len(self.plan)
        return {"rhs": self._rhs(f, st, active), "Bof": [dict(h) for h in self._handles(st)],
                "beta": beta, "Minv": st["Minv"], "L": [None] * N, "l0": [None] * N,
                "Z": [None] * N, "Y": [None] * N, "W": [None] * N, "LbJ": [None] * N}

    def resolve(self, st, f, active, beta):
        """The solve of :meth:`solve` for other right-hand sides at the same state, reusing its
        factorisation (the handle compliances Λ and their eliminations depend on the state
        only): mat-vecs through the plan, no new factorisation."""
        ctx = dict(st["ctx"])
        rhs = ctx["rhs"] = self._rhs(f, st, active)
        ctx["beta"] = beta
        N = len(self.plan)
        l0s, Z0 = [None] * N, list(ctx["Z"])
        for k, nd in enumerate(self.plan):
            if "leaf" in nd:
                l0 = ctx["Y"][k].T @ rhs[nd["leaf"]]
            else:
                a_, b_ = nd["kids"]
                l0 = np.zeros(nd["m"])
                l0[nd["va"]] += l0s[a_]
                l0[nd["vb"]] += l0s[b_]
                l0s[a_] = l0s[b_] = None
            if nd["J"]:
                bJ = np.concatenate([beta[c] for c in nd["J"]])
                b = bJ - l0[nd["iJ"]]
                z0 = ctx["W"][k] @ b if nd["pinv"] else np.linalg.solve(ctx["W"][k], b)
                Z0[k] = (Z0[k][0], z0)
                l0 = l0[nd["ib"]] + ctx["LbJ"][k] @ z0
            l0s[k] = l0
        ctx["Z"] = Z0
        return self._disassemble(ctx)

    def halves(self):
        """(nodes of the root's first subtree, of its second, the root) as index ranges of the
        post-order plan: the two halves are independent until the root (for a parallel
        assembly; bench/hdca.py measures whether it pays)."""
        r = len(self.plan) - 1
        if "kids" not in self.plan[r]:
            return range(0), range(0), range(r, r + 1)
        a, b = self.plan[r]["kids"]
        return range(0, a + 1), range(a + 1, b + 1), range(r, r + 1)

    def _assemble(self, ks, ctx):
        """The assembly (Alg. 1) over the plan's nodes ``ks`` (post-order): a node's handle
        compliance Λ, λ₀ from its body (leaf) or the sum of its children's, then the closed
        connections eliminated (eq. 23–36)."""
        Bof, rhs, beta, Minv = ctx["Bof"], ctx["rhs"], ctx["beta"], ctx["Minv"]
        Ls, l0s, ZZ = ctx["L"], ctx["l0"], ctx["Z"]
        plan = self.plan
        for k in ks:
            nd = plan[k]
            if "leaf" in nd:
                i = nd["leaf"]
                hs0 = self.handles[i]
                B = np.hstack([Bof[c][i] for c in hs0]) if hs0 else np.zeros((6, 0))
                Y = Minv[i] @ B
                L, l0 = B.T @ Y, Y.T @ rhs[i]
                ctx["Y"][k] = Y
            else:
                a_, b_ = nd["kids"]
                L = np.zeros((nd["m"], nd["m"]))
                l0 = np.zeros(nd["m"])
                L[nd["sa"]] += Ls[a_]
                L[nd["sb"]] += Ls[b_]
                l0[nd["va"]] += l0s[a_]
                l0[nd["vb"]] += l0s[b_]
                Ls[a_] = Ls[b_] = None
            if nd["J"]:
                bJ = np.concatenate([beta[c] for c in nd["J"]])
                LJJ = L[nd["JJ"]]
                rhsJ = np.concatenate([L[nd["Jb"]], (bJ - l0[nd["iJ"]])[:, None]], axis=1)
                if nd["pinv"]:
                    W = np.linalg.pinv(LJJ, rcond=1e-12)
                    sol = W @ rhsJ
                else:  # positive definite (tree joints only): an LU solve, kept for resolve
                    W = LJJ
                    sol = np.linalg.solve(LJJ, rhsJ)
                Z, z0 = -sol[:, :-1], sol[:, -1]
                LbJ = L[nd["bJ"]]
                L, l0 = L[nd["bb"]] + LbJ @ Z, l0[nd["ib"]] + LbJ @ z0  # eq. 34–36
                ZZ[k] = (Z, z0)
                ctx["W"][k], ctx["LbJ"][k] = W, LbJ
            Ls[k], l0s[k] = L, l0

    def _disassemble(self, ctx):
        """Alg. 2: the impulses top-down (parents first), then the body twists (eq. 15–16)."""
        plan, ZZ, dim = self.plan, ctx["Z"], self.dim
        sigma = [None] * self.nc
        for k in range(len(plan) - 1, -1, -1):
            nd = plan[k]
            if not nd["J"]:
                continue
            Z, z0 = ZZ[k]
            sb = np.concatenate([sigma[c] for c in nd["hs"]]) if nd["hs"] else np.zeros(0)
            sJ = Z @ sb + z0
            o = 0
            for c in nd["J"]:
                sigma[c] = sJ[o:o + dim[c]]
                o += dim[c]
        Bof, rhs, Minv = ctx["Bof"], ctx["rhs"], ctx["Minv"]
        X = np.empty((self.nb, 6))
        for i in range(self.nb):
            wi = rhs[i].copy()
            for c in self.handles[i]:
                wi += Bof[c][i] @ sigma[c]
            X[i] = Minv[i] @ wi
        return X, sigma

    def rates(self, st, X, bias=None):
        """Joint rates by projection, x_k = H_kᵀ(X_k − X_λ(k) − bias_k) (eq. 23, 40); a floating
        base's first, x_b = H_bᵀ X_b. (nv,)."""
        out = np.empty(self.nv0 + self.n)
        if self.fb:
            out[:6] = st["Hb"].T @ X[self.n]
        for k in range(self.n):
            p = self.par[k]
            d = X[k] - (X[p] if p >= 0 else 0.0)
            if bias is not None:
                d = d - bias[k]
            out[self.nv0 + k] = st["H"][k] @ d
        return out

    # ------------------------------------------------------------------ Alg. 3
    def _zero_beta(self):
        return [np.zeros(d) for d in self.dim]

    def velocity(self, q, P, compiled=True):
        """(q̇, σ of the loops and mimic rows, state) from the augmented momenta P (Alg. 1–2).

        Compiled (``HDCAKernel.velocity``: the acceleration level's body-frame assembly with
        the right-hand side H_k P_k and β = 0) where :meth:`compiled` applies and ``compiled``;
        the NumPy plan otherwise. The state then carries q and the body twists V only, which
        :meth:`momentum_rate` hands to the compiled Ṗ."""
        if self.ghost:
            raise ValueError(self._ghost_error)
        K = self.compiled() if compiled else None
        if K is not None:
            nv = self.nv0 + self.n
            q = np.ascontiguousarray(q, dtype=float)
            P = np.ascontiguousarray(P, dtype=float)
            if q.shape != (nv + self.fb,) or P.shape != (nv,):
                raise ValueError(f"HDCA.velocity: q must be ({nv + self.fb},) and P ({nv},), "
                                 f"got {q.shape} and {P.shape}")
            qd, V = np.empty(nv), np.empty((self.nb, 6))
            sg = np.empty(sum(self.dim))
            K.velocity(q, P, qd, V, sg)
            off = np.r_[0, np.cumsum(self.dim)]
            sig = [sg[off[c]:off[c + 1]] for c in range(self.n, self.nc)]
            return qd, sig, {"q": q, "V": V, "kernel": K}
        st = self.state(q)
        X, sigma = self.solve(st, np.zeros((self.nb, 6)), P, self._zero_beta())
        qd = self.rates(st, X)
        st["V"] = X
        return qd, sigma[self.n:], st

    def momentum_rate(self, st, qd, sig_loops, tau):
        """Ṗ = τ + S_kᵀΓ_k + Ṡ_kᵀ(Π_k − W_k) + S_kᵀW₂_k (eq. 69/77 in the spatial form:
        Ṡ_kᵀΠ_k is ∂T/∂q_k, W_k, W₂_k the loop wrenches Eσ and ad_{V_b}ᵀEσ in the subtree of
        joint k give −(K̇_vᵀσ)_k; the mimic rows have K̇ = 0).

        A floating base (free-flyer layout, its rows first): P_b = S_bᵀΠ is the total spatial
        momentum in the base frame (K_v's base columns vanish: a loop's two bodies share the
        base's motion), S_b = Ad_{C_b}·[[0, I], [I, 0]] turns with the base itself,
        Ṡ_b = ad_{V_b} S_b, and Π̇ is the external wrench (gravity Γ and the base's active wrench
        H_b τ_b; joint torques and loop impulses are internal), so
        ``Ṗ_b = τ_b + S_bᵀ(Γ + ad_{V_b}ᵀ Π)`` — the Euler–Poincaré (quasi-velocity) form of
        Hamilton's equation for the base; the joints' Ṡ_k = ad_{V_λ(k)} S_k then use the base's
        twist V_b for the joints on the base."""
        if self.ghost:
            raise ValueError(self._ghost_error)
        K = st.get("kernel")
        if K is not None:  # compiled (HDCAKernel.momentum_rate), from a compiled velocity pass
            nl = len(self.loops)
            sl = (np.concatenate([np.ravel(np.asarray(x, float)) for x in sig_loops[:nl]])
                  if nl else np.zeros(1))
            tau = np.ascontiguousarray(tau, dtype=float)
            nv = self.nv0 + self.n
            if tau.shape != (nv,) or sl.shape[0] < sum(self.dim[self.n:self.n + nl]):
                raise ValueError(f"HDCA.momentum_rate: tau must be ({nv},) and the loop "
                                 f"impulses {sum(self.dim[self.n:self.n + nl])} rows")
            return K.momentum_rate(st["q"], st["V"], np.ascontiguousarray(sl), tau,
                                   np.empty(nv))
        n, m, nb, o = self.n, self.model, self.nb, self.nv0
        V, S, Mi = st["V"], st["S"], st["M"]
        g6 = np.r_[0.0, 0.0, 0.0, m.gravity]
        Pi = np.einsum("nij,nj->ni", Mi, V)
        Ga = np.einsum("nij,j->ni", Mi, g6)
        W = np.zeros((nb, 6))
        W2 = np.zeros((nb, 6))
        for (a, b), E, s in zip(self.lb, st["E"], sig_loops):
            w = E @ s
            if b >= 0:
                w2 = _ad(V[b]).T @ w
                W[b] += w
                W2[b] += w2
            else:
                w2 = np.zeros(6)
            if a >= 0:
                W[a] -= w
                W2[a] -= w2
        for k in range(n - 1, -1, -1):  # accumulate over the subtrees (into the base: totals)
            p = self.par[k]
            if p >= 0:
                Pi[p] += Pi[k]
                Ga[p] += Ga[k]
                W[p] += W[k]
                W2[p] += W2[k]
        tau = np.asarray(tau, float)
        Pd = np.empty(o + n)
        for k in range(n):
            p = self.par[k]
            Sd = _ad(V[p]) @ S[k] if p >= 0 else np.zeros(6)
            Pd[o + k] = tau[o + k] + S[k] @ Ga[k] + Sd @ (Pi[k] - W[k]) + S[k] @ W2[k]
        if self.fb:
            b = self.base
            Pd[:6] = tau[:6] + st["Sb"].T @ (Ga[b] + _ad(V[b]).T @ Pi[b])
        return Pd

    def momentum(self, q, v):
        """P = M q̇ (σ = 0): P_k = S_kᵀ Π_k (a floating base's S_bᵀ Π of the whole robot)."""
        if self.ghost:
            raise ValueError(self._ghost_error)
        st = self.state(q, v)
        Pi = np.einsum("nij,nj->ni", st["M"], st["V"])
        for k in range(self.n - 1, -1, -1):
            p = self.par[k]
            if p >= 0:
                Pi[p] += Pi[k]
        Pj = np.einsum("ni,ni->n", st["S"], Pi[:self.n])
        return np.r_[st["Sb"].T @ Pi[self.n], Pj] if self.fb else Pj

    def rhs(self, q, P, tau, compiled=True):
        """Hamilton's equations (Alg. 3): (q̇, Ṗ) at the state (q, P) (compiled where
        :meth:`compiled` applies and ``compiled``, else NumPy)."""
        qd, sig, st = self.velocity(q, P, compiled)
        return qd, self.momentum_rate(st, qd, sig, tau), sig

    def velocity_violation(self, q, v):
        """max |E_ℓᵀ(V_b − V_a)| over the loops: the velocity-level constraints HDCA enforces."""
        st = self.state(q, v)
        V = st["V"]
        e = 0.0
        for (a, b), E in zip(self.lb, st["E"]):
            Vb = V[b] if b >= 0 else np.zeros(6)
            Va = V[a] if a >= 0 else np.zeros(6)
            e = max(e, float(np.abs(E.T @ (Vb - Va)).max()))
        return e

    # ------------------------------------------------------------------ acceleration level
    def acceleration(self, q, v, tau, f_ext_spatial=None, rnea=None):
        """q̈ (nv,) by the same assembly at acceleration level (DCA): body balances
        M_i V̇_i = M_i a_g + ad_{V_i}ᵀ M_i V_i + Σ (joint, loop and mimic forces); with ``rnea``
        (q, q̇, q̈) → τ of the spanning tree, one step of iterative refinement
        (:meth:`_correction`)."""
        st = self.state(q, v)
        n, m = self.n, self.model
        V, S, Mi = st["V"], st["S"], st["M"]
        vj = np.asarray(v, float)[self.nv0:]
        g6 = np.r_[0.0, 0.0, 0.0, m.gravity]
        adV = _adT_batch(V)
        f = (np.einsum("nij,j->ni", Mi, g6)
             + np.einsum("nji,nj->ni", adV, np.einsum("nij,nj->ni", Mi, V)))
        if f_ext_spatial is not None:
            f = f + f_ext_spatial
        bias_j = np.empty((n, 6))
        beta = []
        for k in range(n):
            p = self.par[k]
            Sd = adV[p] @ S[k] if p >= 0 else np.zeros(6)
            bias_j[k] = Sd * vj[k]
            beta.append(st["D"][k].T @ bias_j[k])
        for (a, b), E in zip(self.lb, st["E"]):
            Vb = V[b] if b >= 0 else np.zeros(6)
            Va = V[a] if a >= 0 else np.zeros(6)
            beta.append(E.T @ (_ad(Vb) @ (Vb - Va)))
        H = st["H"]
        for mj, s, k, _ in self.mimic:
            beta.append(np.array([H[mj] @ bias_j[mj] - k * (H[s] @ bias_j[s])]))
        X, sigma = self.solve(st, f, tau, beta)
        a = self.rates(st, X, bias_j)
        if rnea is None:
            if self.ghost:
                raise ValueError(self._ghost_error)
            return a
        if not self.ghost:
            return a + self._correction(st, a, sigma, bias_j, beta, tau, rnea(q, v, a))
        prev = np.inf
        for _ in range(GHOST_STEPS):  # the ghost system as a preconditioner: to convergence
            da, ds = self._correction(st, a, sigma, bias_j, beta, tau, rnea(q, v, a), True)
            a = a + da
            sigma = [x + y for x, y in zip(sigma, ds)]
            e = np.abs(da).max(initial=0.0) / max(1.0, np.abs(a).max(initial=0.0))
            if e <= 1e-13 or (e > 0.5 * prev and e <= 1e-11):  # converged, or at rounding
                return a
            prev = e
        raise ValueError("the divide-and-conquer assembly did not converge on the massless "
                         "chart links of a spherical/free joint; use method='lagrange'")

    def _correction(self, st, a, sigma, bias_j, beta, tau, tau_id, impulses=False):
        """One step of iterative refinement of the constrained system M q̈ + h = τ + Kᵀσ,
        K q̈ = β: the residuals r₁ = τ + Kᵀσ − τ_RNEA(q, q̇, q̈) (Kᵀσ from the loop wrenches and
        the mimic impulses) and r₂ = β − (rows of the loop and mimic connections at the body
        accelerations of q̈) are solved by the same assembly (f = 0, joint terms r₁, biases r₂)
        — DCA's Schur complements lose digits with light bodies (1e-10…1e-9 measured on the
        test mechanisms on a floating base), the refined q̈ agrees with a dense KKT to ~1e-14."""
        n, nb = self.n, self.nb
        aj = a[self.nv0:]
        A = np.zeros((nb, 6))
        if self.fb:
            A[n] = st["Sb"] @ a[:6]
        for k in range(n):
            p = self.par[k]
            A[k] = (A[p] if p >= 0 else 0.0) + st["S"][k] * aj[k] + bias_j[k]
        W = np.zeros((nb, 6))
        r2 = [np.zeros(d) for d in self.dim]
        for t, ((la, lb), E) in enumerate(zip(self.lb, st["E"])):
            c = n + t
            w = E @ sigma[c]
            if lb >= 0:
                W[lb] += w
            if la >= 0:
                W[la] -= w
            r2[c] = beta[c] - E.T @ ((A[lb] if lb >= 0 else 0.0) - (A[la] if la >= 0 else 0.0))
        for k in range(n - 1, -1, -1):
            p = self.par[k]
            if p >= 0:
                W[p] += W[k]
        gen = np.empty(self.nv0 + n)
        if self.fb:
            gen[:6] = st["Sb"].T @ W[n]
        gen[self.nv0:] = np.einsum("ni,ni->n", st["S"], W[:n])
        c0 = n + len(self.loops)
        for t, (mj, s, k, _) in enumerate(self.mimic):
            sg = float(sigma[c0 + t][0])
            gen[self.nv0 + mj] += sg
            gen[self.nv0 + s] -= k * sg
            r2[c0 + t] = np.array([k * aj[s] - aj[mj]])  # the joint-level row (β: biases)
        r1 = np.asarray(tau, float) + gen - tau_id
        dX, ds = self.resolve(st, np.zeros((nb, 6)), r1, r2)
        return (self.rates(st, dX), ds) if impulses else self.rates(st, dX)


def _fx(robot, h, f_ext):
    """Public link wrenches (dict link → (f, m) in the link frame, as ``Robot.forward_dynamics``)
    → HDCA's (nb, 6) body-frame rows (m, f) (the floating base's row last), via the tree
    Robot's own conversion; None without f_ext."""
    if f_ext is None:
        return None
    W = robot._fext(f_ext, 1)[0]
    return np.concatenate([W[1:], W[:1]]) if h.fb else W


def _rnea(robot, f_ext):
    if f_ext is None:
        return robot.inverse_dynamics
    return lambda q, v, a: robot.inverse_dynamics(q, v, a, f_ext)


def acceleration(robot, q, v, tau, f_ext=None, refine=True):
    """Full q̈ of a ClosedLoopRobot (fixed or floating base, mimic joints as constraint rows) at
    a full state by the divide-and-conquer assembly (compiled, :meth:`HDCA.fast_acceleration`),
    with one step of iterative refinement against the spanning tree's compiled RNEA
    (``refine``); ``f_ext``: dict link → wrench (f, m) in the link frame (the spanning tree's
    links), as :meth:`Robot.forward_dynamics`."""
    h = getattr(robot, "_hdca", None)
    if h is None:
        h = HDCA(robot.model, robot._kin)
        robot._hdca = h
    full = robot.full_robot
    fx = _fx(full, h, f_ext)
    if h.fb:
        x = np.asarray(q, float)
        if not abs(x[3:7] @ x[3:7] - 1.0) <= 1e-6:
            raise ValueError(f"q: the base quaternion (qx, qy, qz, qw) = ({x[3]:g}, {x[4]:g}, "
                             f"{x[5]:g}, {x[6]:g}) is not a unit quaternion")
    q, v, tau = (np.ascontiguousarray(x, dtype=float) for x in (q, v, tau))
    return h.fast_acceleration(q, v, tau, fx, _rnea(full, f_ext) if refine else False)


_TREE_CACHE = weakref.WeakKeyDictionary()


def _tree(model, mimic=False):
    hs = _TREE_CACHE.get(model)
    if hs is None:
        hs = _TREE_CACHE[model] = {}  # per (immutable) model, dropped with it
    if mimic not in hs:
        hs[mimic] = HDCA(model, mimic=mimic)
    return hs[mimic]


def tree_forward_dynamics(robot, q, qd, tau, refine=True, f_ext=None, out=None):
    """q̈ of a tree Robot (fixed or floating base) by HDCA's divide-and-conquer assembly
    (equals ABA), compiled (:meth:`HDCA.fast_acceleration`); ``f_ext`` as
    :meth:`Robot.forward_dynamics`; ``out``: an optional C-contiguous (nv,) float64 array to
    fill (the inputs C-contiguous float64, as the Robot's checks return them).

    With ``refine`` one step of iterative refinement follows: the residual
    r = τ − τ_RNEA(q, q̇, q̈) of the spanning tree mapped back by the same factorisation
    (q̈ += M⁻¹r). The compiled assembly works in the body frames (Λ = UᵀU, U = L_bᵀ D_b,
    L_b the Cholesky factor of the body mobility) and agrees with ABA to ~1e-14 before the
    step; the refined q̈ to rounding."""
    h = _tree(robot.model)
    K = h.__dict__.get("_ck", 0)
    if K == 0:
        K = h.compiled()
    if K is None:  # the NumPy path
        a = h.fast_acceleration(q, qd, tau, _fx(robot, h, f_ext),
                                _rnea(robot, f_ext) if refine else False)
        if out is None:
            return a
        out[...] = a
        return out
    alias = out is not None and any(np.may_share_memory(out, x) for x in (q, qd, tau))
    a = np.empty(h.nv0 + h.n) if out is None or alias else out
    K.acceleration(q, qd, tau, _fx(robot, h, f_ext), a, bool(refine))
    if alias:  # the kernel reads τ again after writing q̈
        out[...] = a
        return out
    return a
def mimic_forward_dynamics(robot, q, qd, tau, refine=True, f_ext=None):
    """q̈ (independent coordinates) of a MimicRobot by HDCA on its full-coordinate tree with
    each mimic joint a constraint row of the assembly (module docstring): the full state
    ``(G q + o, G q̇)``, the torques τ at the independent joints (Gᵀτ_full = τ), q̈ the
    independent rows of the constrained q̈_full (= G q̈). ``refine``: one step of iterative
    refinement of the constrained system with the full tree's compiled RNEA
    (:meth:`HDCA._correction`); ``f_ext``: dict link → wrench (f, m) in the link frame."""
    h = _tree(robot.model, mimic=True)
    G = robot.G
    nvf = G.shape[0]
    ind = h.__dict__.get("_mind")  # the independent rows (a function of the model)
    if ind is None:
        full = list(robot.full_joint_names)
        nb = nvf - len(full)  # leading base velocities
        ind = h._mind = np.r_[np.arange(nb), [nb + full.index(j) for j in robot.joint_names]
                              ].astype(np.intp)
    qf = np.ascontiguousarray(robot.expand(q), dtype=float)
    vf = np.ascontiguousarray(G @ qd)
    tf = np.zeros(nvf)
    tf[ind] = tau
    fr = robot.full_robot
    return h.fast_acceleration(qf, vf, tf, _fx(fr, h, f_ext),
                               _rnea(fr, f_ext) if refine else False)[ind]
