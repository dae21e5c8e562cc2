"""Loop kinematics in product-of-exponentials form (seed 001 §4): the closure residual h(q), its
exact Jacobian K = ∂h/∂q, Newton assembly and the dependent joints' jets of any order.

Body poses follow the POE recursion ``C_i = C_λ(i) B_i exp(X_i q_i)`` (seed 001 eq. 6–7, the
Model's ``parent``, ``B``, ``X``). For loop ℓ with frames ``F_a = C_{a} S_a``, ``F_b = C_{b} S_b``
the relative pose ``C_ba = F_b⁻¹ F_a = (R, p)`` (frame a seen from frame b) gives the residual,
expressed in the axes of F_b:

* connect (3):  h = −p
* weld (6):     h = (−p, −2 vee(R − Rᵀ) / (1 + tr R))   (= −2 tan(θ/2) e: zero only at R = I)
* revolute (5): h = (−p, 2 (R₁₂, −R₀₂) / (1 + R₂₂))      (stereographic: zero only for z_a = z_b)

(the denominators keep Newton away from the spurious zeros of vee(R − Rᵀ) at θ = π and of
(R₁₂, R₀₂) at z_a = −z_b; the series of a quotient follow from b·y = a order by order)

Differentiating, ``ḣ = K q̇`` with, at an assembled configuration (p = 0, R = I for a weld,
R e_z = e_z for a hinge), the rows of the relative twist of F_b with respect to F_a in F_b's
axes, ``V_b − Ad_{C_ba} V_a`` — (linear, angular), linear first. Hence ``Kᵀλ`` is the
generalized force of the wrench λ = (f, m) acting on frame_b at its origin in its axes (and its
reaction on frame_a): the multipliers are the constraint wrenches.

Jets. Every quantity is propagated as a truncated Taylor series in t (normalized coefficients
``x_r = x^(r)/r!``) and, optionally, first order in n independent infinitesimal shifts ε_j of
the joint coordinates (ε_j ε_l = 0): the ε_j part of the series of h is the series of the
Jacobian column ``K_j(q(t))``. Joint exponentials: ``exp(X q) = I + sin q X̂ + (1 − cos q) X̂²``
(revolute; sin/cos series by their recurrences) or ``I + q X̂`` (prismatic). The r-th
coefficient of h is ``K(q₀) q_r + (terms in q₀ … q_{r−1})``, which gives the dependent
coefficients order by order: ``q_{d,r} = −K_d⁺ h_r|_{q_{d,r}=0}`` (seed 001 §4: the loop
constraints differentiated r times), K_d⁺ the least-squares (rank-revealing) inverse — exact
for redundant but consistent closures.
"""
from __future__ import annotations

import numpy as np

from ..kernels import lie


def _rank(s, shape):
    """Numerical rank from singular values ``s`` of a ``shape`` matrix (numpy's default tol)."""
    if s.size == 0:
        return 0
    tol = s[0] * max(shape) * np.finfo(float).eps * 100
    return int(np.sum(s > max(tol, 1e-300)))


def pivoted_columns(K, rank):
    """The first ``rank`` pivot columns of a QR factorisation with column pivoting of K
    (Businger–Golub: at each step the column of largest remaining norm, Householder
    elimination) — the best-conditioned set of dependent coordinates; NumPy only."""
    A = np.array(K, dtype=float)
    m, n = A.shape
    perm = list(range(n))
    for k in range(min(rank, m, n)):
        norms = np.linalg.norm(A[k:, k:], axis=0)
        j = k + int(np.argmax(norms))
        A[:, [k, j]] = A[:, [j, k]]
        perm[k], perm[j] = perm[j], perm[k]
        x = A[k:, k]
        v = x.copy()
        v[0] += np.copysign(np.linalg.norm(x), x[0] if x[0] != 0 else 1.0)
        nv = np.linalg.norm(v)
        if nv > 0:
            v /= nv
            A[k:, k:] -= 2.0 * np.outer(v, v @ A[k:, k:])
    return perm[:rank]


class LoopKinematics:
    """Residual, Jacobian and jets of the loops on a tree model (fixed base).

    Args:
        model: the full-coordinate :class:`~mbs_dynamics.model.model.Model` (spanning tree).
        loops: tuple of :class:`~.spec.Loop`.
    """

    def __init__(self, model, loops):
        self.model = model
        self.loops = tuple(loops)
        self.n = model.n
        self.rows = []  # loop ℓ → slice of its rows in h
        r = 0
        for lp in self.loops:
            self.rows.append(slice(r, r + lp.m))
            r += lp.m
        # mimic joints (URDF <mimic>) as linear constraint rows q_m − k q_j − o = 0 after the
        # loops: the dependent coordinates then include them
        names = list(model.joint_names)
        self.mimic = [(names.index(mj), names.index(v[0]), float(v[1]), float(v[2]))
                      for mj, v in dict(getattr(model, "mimic", {}) or {}).items()]
        self.mimic_rows = slice(r, r + len(self.mimic))
        self.m = r + len(self.mimic)
        # the bodies whose pose the loops need (every ancestor of a loop body), in order
        need = set()
        for lp in self.loops:
            for b in (lp.body_a, lp.body_b):
                while b >= 0 and b not in need:
                    need.add(b)
                    b = int(model.parent[b])
        self.bodies = sorted(need)
        self.hat = np.zeros((self.n, 4, 4))
        self.prismatic = np.zeros(self.n, dtype=bool)
        for i in range(self.n):
            X = model.X[i]
            w, v = X[:3], X[3:]
            if np.linalg.norm(w) > 0.5:
                if np.linalg.norm(v) > 1e-12:
                    raise ValueError(f"joint '{model.joint_names[i]}': a revolute screw with a "
                                     "moment part is not supported")
                self.hat[i, :3, :3] = lie.skew(w)
            else:
                self.prismatic[i] = True
                self.hat[i, :3, 3] = v
        self.hat2 = self.hat @ self.hat
        self._eye = np.eye(4)
        # joints that move some loop frame relative to the other (the loop's "support")
        self.support = []
        for lp in self.loops:
            pa, pb = self._path(lp.body_a), self._path(lp.body_b)
            self.support.append(sorted(set(pa) ^ set(pb)))

    def _path(self, b):
        out = []
        while b >= 0:
            out.append(b)
            b = int(self.model.parent[b])
        return out

    # ------------------------------------------------------------------ jets
    @staticmethod
    def _sincos(q):
        """Normalized Taylor coefficients of sin q(t), cos q(t) from those of q(t)."""
        K1 = q.shape[0]
        s, c = np.empty(K1), np.empty(K1)
        s[0], c[0] = np.sin(q[0]), np.cos(q[0])
        j = np.arange(1, K1)
        for r in range(1, K1):
            jq = j[:r] * q[1:r + 1]
            s[r] = jq @ c[r - 1::-1] / r
            c[r] = -(jq @ s[r - 1::-1]) / r
        return s, c

    @staticmethod
    def _mul(A, B):
        """Product of two pose jets (K+1, D, 4, 4) with ε_j ε_l = 0 (D = 1 + directions)."""
        K1, D = A.shape[0], A.shape[1]
        out = np.empty_like(A)
        if K1 == 1:  # the configuration only (Newton): no series
            out[0, 0] = A[0, 0] @ B[0, 0]
            if D > 1:
                out[0, 1:] = A[0, 1:] @ B[0, 0] + A[0, 0] @ B[0, 1:]
            return out
        for r in range(K1):
            a, b = A[:r + 1], B[r::-1]
            out[r, 0] = np.einsum("jab,jbc->ac", a[:, 0], b[:, 0])
            if D > 1:
                out[r, 1:] = (np.matmul(a[:, 1:], b[:, :1]).sum(0)
                              + np.matmul(a[:, :1], b[:, 1:]).sum(0))
        return out

    @staticmethod
    def _div(a, b):
        """Series of y = a / b: a (K+1, D, k), b (K+1, D) scalar, first order in the ε
        directions: b·y = a coefficient by coefficient."""
        K1, D = b.shape
        y = np.empty_like(a)
        b0 = b[0, 0]
        if not abs(b0) > 1e-12:
            b0 = 1e-12  # the anti-aligned (spurious) configuration: a huge, finite residual
        for r in range(K1):
            acc = a[r, 0] - np.einsum("j,jk->k", b[1:r + 1, 0], y[r - 1::-1, 0]) if r else a[r, 0]
            y[r, 0] = acc / b0
            if D > 1:
                acc = a[r, 1:] - np.einsum("jd,jk->dk", b[:r + 1, 1:], y[r::-1, 0])
                if r:
                    acc = acc - np.einsum("j,jdk->dk", b[1:r + 1, 0], y[r - 1::-1, 1:])
                y[r, 1:] = acc / b0
        return y

    def _poses(self, Q, D):
        """World pose jets (K+1, D, 4, 4) of the needed bodies (dict body → jet)."""
        K1 = Q.shape[0]
        model = self.model
        eye = self._eye
        I4 = np.zeros((K1, D, 4, 4))
        I4[0, 0] = eye
        C = {-1: I4}
        delta = np.zeros(K1)
        delta[0] = 1.0
        for i in self.bodies:
            q = Q[:, i]
            X, X2 = self.hat[i], self.hat2[i]
            if self.prismatic[i]:
                E = q[:, None, None] * X
                E[0] += eye
                dE = np.zeros((K1, 4, 4))
                dE[0] = X
            elif K1 == 1:
                E = (np.sin(q[0]) * X + (1.0 - np.cos(q[0])) * X2 + eye)[None]
                dE = E @ X
            else:
                s, c = self._sincos(q)
                E = s[:, None, None] * X + (delta - c)[:, None, None] * X2
                E[0] += eye
                dE = E @ X
            P = C[int(model.parent[i])] @ model.B[i]  # (K1, D, 4, 4)
            if K1 == 1:
                out = P @ E[0]
                if D > 1:
                    out[0, 1 + i] += P[0, 0] @ dE[0]
                C[i] = out
                continue
            out = np.empty((K1, D, 4, 4))
            for r in range(K1):
                out[r] = np.matmul(P[:r + 1], E[r::-1, None]).sum(0)
                if D > 1:
                    out[r, 1 + i] += np.matmul(P[:r + 1, 0], dE[r::-1]).sum(0)
            C[i] = out
        return C

    def jets(self, Q, directions=False):
        """Taylor coefficients of h(q(t)) (and of K(q(t)) if ``directions``).

        Args:
            Q: (K+1, n) normalized coefficients q_r = q^(r)/r! of the full coordinates.
        Returns:
            (K+1, D, m): ``[:, 0]`` the series of h, ``[:, 1 + j]`` that of K's column j
            (D = 1 + n with directions, else 1).
        """
        K1 = Q.shape[0]
        D = 1 + self.n if directions else 1
        C = self._poses(Q, D)
        H = np.empty((K1, D, self.m))
        for lp, sl in zip(self.loops, self.rows):
            Fa = C[lp.body_a] @ lp.S_a
            Fb = C[lp.body_b] @ lp.S_b
            inv = np.zeros_like(Fb)
            inv[..., :3, :3] = np.swapaxes(Fb[..., :3, :3], -1, -2)
            inv[0, 0, 3, 3] = 1.0
            inv[..., :3, 3] = -self._mul(inv, Fb)[..., :3, 3]
            Cba = self._mul(inv, Fa)
            R, p = Cba[..., :3, :3], Cba[..., :3, 3]
            H[..., sl.start:sl.start + 3] = -p
            if lp.type == "weld":
                num = -2.0 * np.stack([R[..., 2, 1] - R[..., 1, 2], R[..., 0, 2] - R[..., 2, 0],
                                       R[..., 1, 0] - R[..., 0, 1]], axis=-1)
                den = R[..., 0, 0] + R[..., 1, 1] + R[..., 2, 2]
                den[0, 0] += 1.0
                H[..., sl.start + 3:sl.start + 6] = self._div(num, den)
            elif lp.type == "revolute":
                num = 2.0 * np.stack([R[..., 1, 2], -R[..., 0, 2]], axis=-1)
                den = R[..., 2, 2].copy()
                den[0, 0] += 1.0
                H[..., sl.start + 3:sl.start + 5] = self._div(num, den)
        r0 = self.mimic_rows.start
        for t, (mj, j, k, o) in enumerate(self.mimic):
            H[:, 0, r0 + t] = Q[:, mj] - k * Q[:, j]
            H[0, 0, r0 + t] -= o
            if D > 1:
                H[:, 1:, r0 + t] = 0.0
                H[0, 1 + mj, r0 + t] = 1.0
                H[0, 1 + j, r0 + t] -= k
        return H

    def residual(self, q):
        """h(q), (m,)."""
        return self.jets(np.asarray(q, float)[None])[0, 0]

    def residual_jacobian(self, q):
        """(h(q) (m,), K(q) (m, n))."""
        H = self.jets(np.asarray(q, float)[None], directions=True)[0]
        return H[0], np.ascontiguousarray(H[1:].T)

    # ------------------------------------------------------------------ assembly
    def newton(self, q, free, tol=1e-12, maxit=60, jacobian=False):
        """Solve h(q) = 0 for the coordinates ``free`` (index array), the others fixed, by
        Gauss–Newton steps ``Δq_free = −K_free⁺ h`` (least squares: rank-revealing, also for
        redundant closures) with step halving; once |h|_∞ ≤ tol one more full step takes q to
        rounding (reproducible whatever the start). Returns (q, |h|_∞, ok), and
        K(q) (m, n) too with ``jacobian=True`` (evaluated at the returned q)."""
        q = np.array(q, dtype=float)
        h, K = self.residual_jacobian(q)
        err = np.abs(h).max(initial=0.0)
        for _ in range(maxit):
            dq = np.linalg.lstsq(K[:, free], h, rcond=None)[0]
            if not np.all(np.isfinite(dq)):
                break
            if err <= tol:
                # one more full step (to rounding, whatever the start), K at the returned q
                qn = q.copy()
                qn[free] -= dq
                en = np.abs(self.residual(qn)).max(initial=0.0)
                if en <= err:
                    q, err = qn, en
                    if jacobian:
                        K = self.residual_jacobian(q)[1]
                return (q, err, True, K) if jacobian else (q, err, True)
            t, ok = 1.0, False
            for _ in range(30):
                qn = q.copy()
                qn[free] -= t * dq
                hn = self.residual(qn)
                en = np.abs(hn).max(initial=0.0)
                if en < err or en <= tol:
                    ok = True
                    break
                t *= 0.5
            if not ok:
                break
            q = qn
            h, K = self.residual_jacobian(q)
            err = np.abs(h).max(initial=0.0)
        ok = err <= tol
        return (q, err, ok, K) if jacobian else (q, err, ok)

    def worst_loop(self, h):
        """Name and |h|_∞ of the loop with the largest residual."""
        errs = [np.abs(h[sl]).max() for sl in self.rows]
        if not errs:
            return "mimic", float(np.abs(h).max(initial=0.0))
        i = int(np.argmax(errs))
        return self.loops[i].name, float(errs[i])

    # ------------------------------------------------------------------ dependent jets
    def dependent_jets(self, Q, act, dep, Kdp=None, K=None):
        """Fill the dependent coefficients ``Q[r, dep]`` for r = 1 … K in place, the actuated
        ones ``Q[r, act]`` and the assembled ``Q[0]`` given; ``Kdp`` = K_d(q₀)⁺ and ``K`` = K(q₀)
        (computed if None). Order 1 is q̇_d = −K_d⁺K_a q̇_a; every higher order takes one
        evaluation of the series. Returns Q."""
        if K is None:
            K = self.residual_jacobian(Q[0])[1]
        if Kdp is None:
            Kdp = np.linalg.pinv(K[:, dep])
        if Q.shape[0] > 1:
            Q[1, dep] = -Kdp @ (K[:, act] @ Q[1, act])
        for r in range(2, Q.shape[0]):
            Q[r, dep] = 0.0
            H = self.jets(Q[:r + 1])
            Q[r, dep] = -Kdp @ H[r, 0]
        return Q
