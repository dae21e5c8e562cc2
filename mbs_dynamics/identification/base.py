"""Base parameters (seed 000 §6; Gautier's numerical method): the identifiable linear
combinations of the inertial parameters.

τ = Y(q, q̇, q̈) π is linear in the 10·nb parameters π, but some columns of Y vanish for every
motion (a mass on a fixed axis …) and others are linear combinations of the rest (a body's
parameters regrouped into its parent's). Stacking Y over random states into W and factorising
``W P = Q R`` (QR with column pivoting, ``scipy.linalg.qr(pivoting=True)``), the rank r is the
number of diagonal entries ``|R_kk| > rtol · |R_00|``; the r pivoted columns B are the base
columns, the others D satisfy ``W_D = W_B K`` with ``K = R_1⁻¹ R_2``, so

    τ = Y_B β,   β = π_B + K π_D,

for every state (the dependencies are structural, so random samples find them with probability
one; the relative residual of ``W_D − W_B K`` is checked against ``rtol``).
"""
from __future__ import annotations

import reprlib
from dataclasses import dataclass, field

import numpy as np

from .parameters import PARAMETER_NAMES, body_names

#: default rank tolerance: |R_kk| ≤ RTOL·|R_00| counts as zero. The regressor's columns are
#: exact up to rounding (~1e-15 relative); unidentifiable combinations vanish to that level,
#: identifiable ones of real robots stay above ~1e-6, so 1e-9 separates them with margin.
RTOL = 1e-9


@dataclass(frozen=True, eq=False)
class BaseParameters:
    """The base parameters of a robot (see the module docstring).

    Attributes:
        names: (r,) name of each base parameter: the full parameter it is built on,
            ``"<link>.<param>"`` (param one of m, mcx, mcy, mcz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz).
        expressions: (r,) the linear combination each one is, e.g.
            ``"link4.Izz + 0.0841*link5.m + …"``.
        full_names: (10·nb,) names of the full parameters (π flattened, body by body).
        columns: (r,) indices of the base columns B in the flattened π (ascending).
        dependent: indices D of the other columns.
        K: (r, len(D)) β = π_B + K π_D.
        rank_ratio: ``|R_rr| / |R_00|`` of the last base column (how far from the tolerance).
        rtol: the rank tolerance used.
    """

    names: tuple
    expressions: tuple
    full_names: tuple
    columns: np.ndarray
    dependent: np.ndarray
    K: np.ndarray
    rank_ratio: float
    rtol: float
    _nb: int = field(repr=False, default=0)

    @property
    def n(self) -> int:
        """Number of base parameters."""
        return len(self.columns)

    def _flat(self, pi):
        p = np.asarray(pi, dtype=float)
        if p.shape[-2:] == (self._nb, 10):
            p = p.reshape(p.shape[:-2] + (10 * self._nb,))
        if p.shape[-1:] != (10 * self._nb,):
            raise ValueError(f"pi has shape {np.shape(pi)}, expected ({self._nb}, 10) or "
                             f"({10 * self._nb},)")
        return p

    def to_base(self, pi) -> np.ndarray:
        """β (r,) from full parameters π ((nb, 10) or (10·nb,)): β = π_B + K π_D."""
        p = self._flat(pi)
        return p[..., self.columns] + p[..., self.dependent] @ self.K.T

    def from_base(self, beta, reference=None) -> np.ndarray:
        """A full π (nb, 10) with the same torques as β: ``to_base(π) = β``, hence Y π = Y_B β.
        The dependent parameters keep their values in ``reference`` (e.g. the URDF's π, so that
        the result stays near a physical body), or are 0 without one."""
        b = np.asarray(beta, dtype=float)
        if b.shape[-1:] != (self.n,):
            raise ValueError(f"beta has shape {b.shape}, expected ({self.n},)")
        p = np.zeros(b.shape[:-1] + (10 * self._nb,))
        if reference is not None:
            p[..., self.dependent] = self._flat(reference)[..., self.dependent]
        p[..., self.columns] = b - p[..., self.dependent] @ self.K.T
        return p.reshape(b.shape[:-1] + (self._nb, 10))

    def regressor(self, Y) -> np.ndarray:
        """The base regressor Y_B = Y[..., B] (τ = Y_B β) of a full regressor Y (…, 10·nb)."""
        return np.asarray(Y)[..., self.columns]


def _random_states(robot, N, rng):
    n, nq, nv = robot.n, robot.nq, robot.nv
    lo = np.where(np.isfinite(robot.lower), robot.lower, -np.pi)
    hi = np.where(np.isfinite(robot.upper), robot.upper, np.pi)
    hi = np.where(hi > lo, hi, lo + 1.0)
    if getattr(robot, "lie_joints", None):  # a quaternion per spherical / inner free joint:
        # random chart coordinates (±π on their axes) mapped onto the group
        x, q0 = rng.uniform(lo, hi, (N, nv)), robot.neutral()
        q = np.array([robot.integrate(q0, xi) for xi in x])
        return q, rng.normal(size=(N, nv)), rng.normal(size=(N, nv))
    q = np.empty((N, nq))
    nbq = nq - n
    if nbq:
        q[:, :3] = rng.normal(size=(N, 3))
        quat = rng.normal(size=(N, 4))
        q[:, 3:7] = quat / np.linalg.norm(quat, axis=1, keepdims=True)
    q[:, nbq:] = rng.uniform(lo, hi, (N, n))
    return q, rng.normal(size=(N, nv)), rng.normal(size=(N, nv))


#: Most regressor entries (samples × nv × 10·nb) that base_parameters stacks (8 bytes each).
MAX_ENTRIES = 50_000_000


def _check_arguments(samples, rtol, seed, row_size):
    """ValueError/TypeError naming the argument: the fuzz campaign of issue 22 found
    samples=0 ("zero-size array to reduction operation"), 10**12 (MemoryError), rtol=NaN
    (accepted: every parameter "unidentifiable"), rtol=10**400 (OverflowError)."""
    if isinstance(samples, bool) or not isinstance(samples, (int, np.integer)):
        raise TypeError(f"samples must be an integer, got {type(samples).__name__}")
    if not 1 <= samples <= MAX_ENTRIES // row_size:
        raise ValueError(f"samples must lie in 1 … {MAX_ENTRIES // row_size} for this robot "
                         f"(at most {MAX_ENTRIES:.0e} regressor entries), got {samples}")
    if isinstance(rtol, bool) or not isinstance(rtol, (int, float, np.integer, np.floating)):
        raise TypeError(f"rtol must be a number, got {type(rtol).__name__}")
    if not (isinstance(rtol, float) or abs(rtol) < 2) or not 0 <= float(rtol) < 1:
        raise ValueError(f"rtol must lie in [0, 1), got {reprlib.repr(rtol)}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {reprlib.repr(seed)}")


def base_parameters(robot, samples=None, rtol=RTOL, seed=0) -> BaseParameters:
    """The base parameters of ``robot`` (a Robot or MimicRobot) by QR with column pivoting of
    the regressor stacked over ``samples`` random states (default: enough for 3× as many rows
    as parameters; positions uniform within the joint limits, velocities and accelerations
    standard normal; a fixed ``seed``, so the result is reproducible).

    Args:
        rtol: rank tolerance, ``|R_kk| ≤ rtol·|R_00|`` is zero (module constant RTOL, 1e-9).
    Raises:
        ValueError: if the dependencies found do not hold to ``rtol`` on the samples (a
            tolerance too loose for this robot).
    """
    from scipy.linalg import qr, solve_triangular

    model = robot.model
    # a LieJointRobot's physical bodies (its chart's massless links have no columns)
    links = getattr(robot, "body_names", None) or body_names(model)
    nb = len(links)
    P = 10 * nb
    if samples is None:
        samples = max(30, int(np.ceil(3 * P / robot.nv)))
    _check_arguments(samples, rtol, seed, robot.nv * P)
    rng = np.random.default_rng(seed)
    W = robot.regressor(*_random_states(robot, samples, rng)).reshape(-1, P)
    # equilibrate rows so that no joint's units dominate the rank decision
    W = W / np.maximum(np.abs(W).max(axis=1, keepdims=True), 1e-300)
    _, R, piv = qr(W, mode="economic", pivoting=True)
    d = np.abs(np.diag(R))
    r = int(np.sum(d > rtol * d[0])) if d.size and d[0] > 0 else 0
    B, D = piv[:r], piv[r:]
    K = solve_triangular(R[:r, :r], R[:r, r:]) if r else np.zeros((0, len(D)))
    order = np.argsort(B)
    B, K = B[order], K[order]
    Dorder = np.argsort(D)
    D, K = D[Dorder], K[:, Dorder]
    resid = np.abs(W[:, D] - W[:, B] @ K).max(initial=0.0)
    if resid > 1e3 * rtol * max(np.abs(W).max(), 1e-300):
        raise ValueError(f"base parameters: the dependencies found hold only to {resid:.2e} on "
                         f"the samples; rtol={rtol:g} is too loose for this robot")
    full = tuple(f"{ln}.{p}" for ln in links for p in PARAMETER_NAMES)
    names = tuple(full[c] for c in B)
    expr = []
    for k, c in enumerate(B):
        terms = [full[c]]
        for coef, dc in zip(K[k], D):
            if abs(coef) > 1e-10:
                terms.append(f"{'-' if coef < 0 else '+'} {abs(coef):.6g}*{full[dc]}")
        expr.append(" ".join(terms))
    return BaseParameters(names=names, expressions=tuple(expr), full_names=full,
                          columns=np.asarray(B, dtype=np.intp),
                          dependent=np.asarray(D, dtype=np.intp), K=K,
                          rank_ratio=float(d[r - 1] / d[0]) if r else 0.0, rtol=rtol, _nb=nb)
