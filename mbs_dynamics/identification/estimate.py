"""Least squares of the base parameters and the joint friction (seed 000 §6: τ = Y(q, q̇, q̈) π).

The torques are linear in the unknowns x = (β, Fv, Fc): β the base parameters (β = to_base(π)),
and per joint a viscous and a Coulomb coefficient, τ_f,j = Fv_j q̇_j + Fc_j sign(q̇_j):

    τ_j = Y_b,j x + e_j,    Y_b = Y F  (F = the base map from_base, (10 nb, p)),

with e_j white noise of variance σ_j². Logs are long (10⁵ samples × n joints × ~10² columns do
not fit comfortably in memory), so the regressor is evaluated chunk by chunk and only the
per-joint normal equations A_j = Σ Y_b,jᵀ Y_b,j, b_j = Σ Y_b,jᵀ τ_j, c_j = Σ τ_j² are kept.

* OLS: A x = b with A = Σ_j A_j; σ̂² = RSS / (N n − P); cov = σ̂² A⁻¹.
* WLS (Gautier's weighting by the per-joint noise): σ̂_j² = RSS_j(x_OLS) / (N − P/n), weights
  w_j = 1/σ̂_j², (Σ w_j A_j) x = Σ w_j b_j, cov = s² (Σ w_j A_j)⁻¹ with s² the weighted RSS per
  degree of freedom (1 when the σ̂_j are right).

Excitation. The columns are scaled to unit norm (D = diag(A)^½, Ā = D⁻¹ A D⁻¹); the condition
number of the scaled regressor is (λ_max/λ_min(Ā))^½. Directions with λ/λ_max < NULL_TOL are not
excited by the log: their parameters are named (:attr:`Estimate.unexcited`), their components
are taken from the prior (the URDF's values) and their σ is reported as infinite.
"""
from __future__ import annotations

import numpy as np

from . import _regressor

__all__ = ["NormalEquations", "Accumulator", "Estimate", "accumulate", "solve", "base_map",
           "row_supports", "CHUNK", "NULL_TOL"]

CHUNK = 2000
#: Eigenvalues of the scaled information matrix below NULL_TOL · λ_max are "not excited".
NULL_TOL = 1e-10


def base_map(base, nparam):
    """The matrices of ``base.to_base`` (p, nparam) and ``base.from_base`` (nparam, p)."""
    T = np.column_stack([np.asarray(base.to_base(e.reshape(-1, 10)), float).ravel()
                         for e in np.eye(nparam)])
    p = T.shape[0]
    F = np.column_stack([np.asarray(base.from_base(e), float).ravel() for e in np.eye(p)])
    return T, F


class NormalEquations:
    """Per-joint normal equations of the stacked regressor (see the module docstring).

    Attributes:
        A: (n, P, P); b: (n, P); c: (n,) sums of τ_j²; N: samples; names: the P unknowns.
    """

    def __init__(self, n, names):
        P = len(names)
        self.names = tuple(names)
        self.A = np.zeros((n, P, P))
        self.b = np.zeros((n, P))
        self.c = np.zeros(n)
        self.N = 0

    def add(self, Yb, tau):
        """Add samples: Yb (N, n, P) rows of the regressor, tau (N, n) torques."""
        Yt = np.ascontiguousarray(Yb.transpose(1, 0, 2))  # (n, N, P): one matrix per joint
        self.A += np.matmul(Yt.transpose(0, 2, 1), Yt)
        self.b += np.einsum("jkp,kj->jp", Yt, tau)
        self.c += np.einsum("kj,kj->j", tau, tau)
        self.N += tau.shape[0]

    def merge(self, other):
        """Add another sample set's statistics (same unknowns); returns self."""
        if other.names != self.names or other.A.shape != self.A.shape:
            raise ValueError("normal equations of different unknowns cannot be added")
        self.A += other.A
        self.b += other.b
        self.c += other.c
        self.N += other.N
        return self

    def rss(self, x):
        """(n,) residual sums of squares per joint at x."""
        Ax = self.A @ x
        return np.maximum(self.c - 2.0 * self.b @ x + Ax @ x, 0.0)


#: |q̇| below this counts as rest in the friction columns [rad/s or m/s]: a joint held still
#: has filtered velocities of ~1e-13 whose sign is noise.
REST = 1e-6


def friction_columns(qd):
    """(N, n, 2n) friction block of the regressor: columns (Fv_j, Fc_j) act on joint j only;
    samples at rest (|q̇| < REST) contribute nothing."""
    N, n = qd.shape
    out = np.zeros((N, n, 2 * n))
    j = np.arange(n)
    moving = np.abs(qd) >= REST
    out[:, j, 2 * j] = np.where(moving, qd, 0.0)
    out[:, j, 2 * j + 1] = np.where(moving, np.sign(qd), 0.0)
    return out


def row_supports(robot, ncols):
    """Per joint j, the columns of the regressor's row j that the kernels can fill: the
    parameters of the bodies in j's subtree (τ_j carries the wrenches of those bodies only).
    A robot whose rows are not one per body (a floating base, mimic joints) gets every column."""
    model = getattr(robot, "model", None)
    n = getattr(robot, "nv", 0)
    if (model is None or getattr(model, "floating_base", True) or model.n != n
            or ncols != 10 * n or getattr(robot, "full_robot", None) is not None):
        return [np.arange(ncols)] * n
    parent = np.asarray(model.parent)
    inside = np.eye(n, dtype=bool)  # inside[j, i]: body i in the subtree of joint j
    for i in range(n):  # parent[i] < i: ancestors are known when i is reached
        if parent[i] >= 0:
            inside[:, i] |= inside[:, parent[i]]
    return [np.flatnonzero(np.repeat(inside[j], 10)) for j in range(n)]


class Accumulator:
    """Sufficient statistics of τ = Y F β (+ friction) sample block by sample block.

    Per joint j the regressor row is gathered on its support S_j (:func:`row_supports`, less
    the columns whose row of F is zero: they reach no unknown) with the joint's two friction
    columns appended, W_j = [Y_j[:, S_j], q̇_j, sign q̇_j], and only the small Gram matrix
    G_j = Σ W_jᵀ W_j (a symmetric rank-k update, BLAS syrk), h_j = Σ W_jᵀ τ_j, c_j = Σ τ_j² are
    summed; :meth:`result` maps them to the unknowns once, A_j = E_jᵀ G_j E_j with
    E_j = diag(F[S_j], I₂) placed at the unknowns' columns. For a robot of the kernels (fixed
    base, no mimic joints) the blocks W_j come from the compiled
    :func:`~mbs_dynamics.identification._regressor.support_rows`, which never forms the
    (N, n, 10 nb) regressor; otherwise from ``robot.regressor``. Memory: one block of
    ``chunk`` samples.
    """

    def __init__(self, robot, F, *, friction=True, names=(), chunk=CHUNK):
        self.robot, self.friction, self.chunk = robot, bool(friction), int(chunk)
        n, p = robot.nv, F.shape[1]
        self.n, self.names = n, tuple(names)
        P = p + (2 * n if friction else 0)
        if len(self.names) != P:
            raise ValueError(f"{len(self.names)} names for {P} unknowns")
        reach = np.any(F != 0, axis=1)
        self.S = [S[reach[S]] for S in row_supports(robot, F.shape[0])]
        k = 2 if friction else 0
        self.k = [S.size + k for S in self.S]
        self.E = []
        for j, S in enumerate(self.S):
            E = np.zeros((S.size + k, P))
            E[:S.size, :p] = F[S]
            if friction:
                E[S.size, p + 2 * j] = E[S.size + 1, p + 2 * j + 1] = 1.0
            self.E.append(E)
        self.G = [np.zeros((kj, kj)) for kj in self.k]
        self.h = [np.zeros(kj) for kj in self.k]
        self.c = np.zeros(n)
        self.N = 0
        self._data = _kernel_data(robot)
        if self._data is not None:
            self._idx = np.concatenate(self.S + [np.zeros(0, np.intp)]).astype(np.intp)
            self._start = np.concatenate([[0], np.cumsum([S.size for S in self.S])]).astype(
                np.intp)
            self._off = np.concatenate([[0], np.cumsum(self.k)]).astype(np.intp)
            self._rows = np.empty(self.chunk * int(self._off[-1]))
        else:
            self._Y = np.empty((self.chunk, n, F.shape[0]))
            self._W = np.empty((self.chunk, max(self.k))) if n else None

    def add(self, q, qd, qdd, tau):
        """Add the samples q, qd, qdd, tau (N, n)."""
        N = tau.shape[0]
        for a in range(0, N, self.chunk):
            b = min(N, a + self.chunk)
            m = b - a
            t = tau[a:b]
            for j, W in enumerate(self._blocks(q[a:b], qd[a:b], qdd[a:b])):
                self.G[j] += W.T @ W
                self.h[j] += W.T @ t[:, j]
            self.c += np.einsum("kj,kj->j", t, t)
            self.N += m

    def _blocks(self, q, qd, qdd):
        """W_j (m, k_j) of one block of m ≤ chunk samples, for every joint j."""
        m = q.shape[0]
        if self._data is not None:
            _regressor.support_rows(self._data, q, qd, qdd, self._idx, self._start,
                                    self.friction, REST, self._rows)
            off = self._off
            return [self._rows[m * off[j]:m * off[j + 1]].reshape(m, self.k[j])
                    for j in range(self.n)]
        Y = self.robot.regressor(q, qd, qdd, out=self._Y[:m])
        out = []
        for j, S in enumerate(self.S):
            s = S.size
            W = self._W[:m, :self.k[j]]
            np.take(Y[:, j], S, axis=1, out=W[:, :s])
            if self.friction:
                v = qd[:, j]
                moving = np.abs(v) >= REST
                W[:, s] = np.where(moving, v, 0.0)
                W[:, s + 1] = np.where(moving, np.sign(v), 0.0)
            out.append(W.copy())
        return out

    def result(self):
        """The :class:`NormalEquations` of the samples added so far."""
        neq = NormalEquations(self.n, self.names)
        for j, E in enumerate(self.E):
            neq.A[j] = E.T @ self.G[j] @ E
            neq.b[j] = E.T @ self.h[j]
        neq.c[:] = self.c
        neq.N = self.N
        return neq


def _kernel_data(robot):
    """The kernels' workspace of a fixed-base robot without mimic joints (whose regressor rows
    :func:`~._regressor.support_rows` computes), else None."""
    from ..kernels._data import Data
    data = getattr(robot, "_data", None)
    model = getattr(robot, "model", None)
    if (not isinstance(data, Data) or model is None or getattr(model, "floating_base", True)
            or getattr(robot, "full_robot", None) is not None or model.n != robot.nv):
        return None
    return data


def accumulate(robot, F, q, qd, qdd, tau, *, friction=True, names=(), progress=None,
               chunk=CHUNK):
    """Normal equations of τ = Y F β (+ friction) over all samples, chunk by chunk
    (:class:`Accumulator`).

    Args:
        robot: with ``regressor(q, qd, qdd, out=)`` → (N, nv, 10 nb).
        F: (10 nb, p) from_base matrix.
        q, qd, qdd, tau: (N, n) states and measured torques.
        friction: append the viscous and Coulomb columns of every joint.
        names: the names of the P unknowns.
        progress: optional callable(done, total).
    """
    N = tau.shape[0]
    acc = Accumulator(robot, F, friction=friction, names=names, chunk=chunk)
    for a in range(0, N, chunk):
        b = min(N, a + chunk)
        acc.add(q[a:b], qd[a:b], qdd[a:b], tau[a:b])
        if progress is not None:
            progress(b, N)
    return acc.result()


class Estimate:
    """Result of :func:`solve`.

    Attributes:
        names: the P unknowns; x: (P,) WLS estimate; sigma: (P,) its standard deviations
            (inf where not excited); x_ols, sigma_ols: the OLS estimate and σ;
        noise: (n,) residual RMS per joint at x (the estimated noise σ_j);
        information: (P, P) Σ w_j A_j (inverse covariance of x);
        covariance: (P, P) covariance of x on the excited directions (0 on the others);
        condition: condition number of the column-scaled regressor;
        unexcited: names of the unknowns in the directions the log does not excite;
        poorly_excited: names with a variance inflation factor above 10⁶ (estimated, uncertain);
        dof: N n − rank.
    """

    def __init__(self, **kw):
        self.__dict__.update(kw)


def _scaled_eig(A):
    d = np.sqrt(np.maximum(np.diag(A), 0.0))
    d[d == 0] = 1.0
    lam, V = np.linalg.eigh(A / np.outer(d, d))
    return d, lam, V


def _subspace_solve(A, b, x0, d, lam, V, keep):
    """x = x0 + D⁻¹ V_k Λ_k⁻¹ V_kᵀ D⁻¹ (b − A x0): the least-squares step restricted to the
    excited directions; the other directions stay at the prior x0."""
    r = (b - A @ x0) / d
    Vk = V[:, keep]
    return x0 + (Vk @ ((Vk.T @ r) / lam[keep])) / d


def _covariance(d, lam, V, keep, scale):
    Vk = V[:, keep]
    C = (Vk / lam[keep]) @ Vk.T
    return scale * C / np.outer(d, d)


def solve(neq, x0) -> Estimate:
    """OLS then WLS of the unknowns; ``x0`` (P,) is the prior for unexcited directions."""
    n, P = neq.b.shape
    A = neq.A.sum(axis=0)
    b = neq.b.sum(axis=0)
    d, lam, V = _scaled_eig(A)
    lmax = max(lam[-1], 1e-300)
    keep = lam > NULL_TOL * lmax
    rank = int(keep.sum())
    unexcited = []
    for k in np.flatnonzero(~keep):
        v = np.abs(V[:, k])
        unexcited += [neq.names[i] for i in np.flatnonzero(v > 0.3 * v.max())]
    unexcited = sorted(set(unexcited), key=neq.names.index)
    dof = max(neq.N * n - rank, 1)

    x_ols = _subspace_solve(A, b, x0, d, lam, V, keep)
    rss = neq.rss(x_ols)
    s2 = rss.sum() / dof
    cov_ols = _covariance(d, lam, V, keep, s2)

    # WLS: weights from the per-joint residual variance of OLS
    var_j = np.maximum(rss / max(neq.N - rank / n, 1.0), 1e-300)
    w = 1.0 / var_j
    Aw = np.einsum("j,jpq->pq", w, neq.A)
    bw = w @ neq.b
    dw, lamw, Vw = _scaled_eig(Aw)
    keepw = lamw > NULL_TOL * max(lamw[-1], 1e-300)
    x = _subspace_solve(Aw, bw, x0, dw, lamw, Vw, keepw)
    rss_w = neq.rss(x)
    chi2 = float((w * rss_w).sum() / dof)
    cov = _covariance(dw, lamw, Vw, keepw, chi2)

    sig = np.sqrt(np.maximum(np.diag(cov), 0.0))
    sig_ols = np.sqrt(np.maximum(np.diag(cov_ols), 0.0))
    null = np.zeros(P, bool)
    null[[neq.names.index(nm) for nm in unexcited]] = True
    sig[null] = np.inf
    sig_ols[null] = np.inf
    # variance inflation factors of the excited unknowns: (Ā⁻¹)_ii
    vif = np.diag(_covariance(np.ones(P), lam, V, keep, 1.0))
    poorly = [nm for i, nm in enumerate(neq.names) if not null[i] and vif[i] > 1e6]
    with np.errstate(divide="ignore"):
        cond = float(np.sqrt(lmax / lam[0])) if lam[0] > 0 else float("inf")
    return Estimate(names=neq.names, x=x, sigma=sig, x_ols=x_ols, sigma_ols=sig_ols,
                    noise=np.sqrt(rss_w / max(neq.N, 1)), information=cov_inverse(Aw, chi2),
                    condition=cond, unexcited=unexcited, poorly_excited=poorly, dof=dof,
                    samples=neq.N, weights=w, covariance=cov)


def cov_inverse(Aw, chi2):
    """The information matrix of the WLS estimate (inverse of its covariance)."""
    return Aw / chi2
