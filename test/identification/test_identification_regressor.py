"""The inertial parameters and the joint-torque regressor Y (τ = Y π) and its time derivatives
Y^(r) (τ^(r) = Y^(r) π), against Pinocchio: ``Inertia.toDynamicParameters``,
``computeJointTorqueRegressor`` (1e-12 relative) on fixed (Panda, UR5), floating (solo12,
ANYmal) and mimic (Panda with its finger pair, a mimic chain) robots; Y′π against Pinocchio's τ′
from its partials (τ′ = ∂τ/∂q q̇ + ∂τ/∂q̇ q̈ + M q⃛) and Y″π, Y‴π against 8th-order central
differences of that τ′ along analytic trajectories, for random physical π (Pinocchio's model
given the same π)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import mbs_dynamics as mbs
from conftest import PANDA, UR5, erd_path, pin_model, pin_q, sym, trajectory
from test_floating_base import ROBOTS as FB_ROBOTS, _pinq
from test_mimic import CHAIN, ERD as MIMIC_ERD, Oracle

TOL = 1e-12
D1 = np.array([1 / 280, -4 / 105, 1 / 5, -4 / 5, 0, 4 / 5, -1 / 5, 4 / 105, -1 / 280])


def rel(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return np.abs(a - b).max() / max(np.abs(b).max(), 1e-300)


def random_parameters(rng, nb):
    """Physically consistent random bodies: (nb, 10) rows (m, m c, I about the body origin)."""
    out = np.empty((nb, 10))
    for i in range(nb):
        m = rng.uniform(0.3, 4.0)
        c = rng.uniform(-0.15, 0.15, 3)
        a, b = rng.uniform(0.01, 0.1, 2)
        lam = np.array([a, b, rng.uniform(abs(a - b) + 1e-3, a + b)])
        Q = np.linalg.qr(rng.normal(size=(3, 3)))[0]
        Ic = Q @ np.diag(lam) @ Q.T
        C = np.array([[0, -c[2], c[1]], [c[2], 0, -c[0]], [-c[1], c[0], 0]])
        I = Ic - m * C @ C
        out[i] = (m, *(m * c), I[0, 0], I[0, 1], I[1, 1], I[0, 2], I[1, 2], I[2, 2])
    return out


# ---------------------------------------------------------------- robots and their oracles
class Case:
    """Our robot, Pinocchio's model of the same file, and the map of our q to Pinocchio's."""

    def __init__(self, name):
        pin = pytest.importorskip("pinocchio")
        self.pin = pin
        self.name = name
        self.G = None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", mbs.URDFWarning)
            if name in ("panda", "ur5"):
                path, locked = {"panda": PANDA, "ur5": UR5}[name]
                path = erd_path(path)
                self.robot = mbs.load_urdf(path, locked_joints=locked)
                self.pm = pin_model(path, locked)
                self.to_pin = lambda q: pin_q(self.pm, q)
                self.fb = False
            elif name in FB_ROBOTS:
                path = erd_path(FB_ROBOTS[name])
                self.robot = mbs.load_urdf(path, floating_base=True)
                self.pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer())
                self.to_pin = lambda q: _pinq(self.pm, q)
                self.fb = True
            else:  # mimic robots: Pinocchio's full model, projected with the URDF's G
                src = CHAIN if name == "mimic_chain" else erd_path(MIMIC_ERD[name[6:]])
                self.robot = mbs.load_urdf(src)
                self.oracle = Oracle(src)
                self.pm = self.oracle.pm
                self.G = self.oracle.G
                self.to_pin = self.oracle.q
                self.fb = False
        self.pd = self.pm.createData()

    def v(self, x):
        return x if self.G is None else self.G @ x

    def state(self, rng):
        r = self.robot
        if self.fb:
            quat = rng.normal(size=4)
            q = np.r_[rng.normal(size=3), quat / np.linalg.norm(quat), rng.uniform(-2, 2, r.n)]
        else:
            q = rng.uniform(-2, 2, r.n)
        return q, rng.normal(size=r.nv), rng.normal(size=r.nv)

    def Y(self, q, v, a):
        Y = self.pin.computeJointTorqueRegressor(self.pm, self.pd, self.to_pin(q), self.v(v),
                                                 self.v(a)).copy()
        return Y if self.G is None else self.G.T @ Y

    def set_parameters(self, pi):
        for i, row in enumerate(pi):
            self.pm.inertias[i + 1] = self.pin.Inertia.FromDynamicParameters(row)
        self.pd = self.pm.createData()

    def tau_dot(self, q, v, a, j):
        """τ′ from Pinocchio's partials (its tangent convention: a body-frame base twist)."""
        dq, dv, M = (x.copy() for x in self.pin.computeRNEADerivatives(
            self.pm, self.pd, self.to_pin(q), self.v(v), self.v(a)))
        t = dq @ self.v(v) + dv @ self.v(a) + sym(M) @ self.v(j)
        return t if self.G is None else self.G.T @ t


CASES = ["panda", "ur5", "solo12", "anymal", "mimic_panda", "mimic_chain"]


@pytest.fixture(scope="module", params=CASES)
def case(request):
    return Case(request.param)


# ---------------------------------------------------------------- parameters
def test_parameters_are_pinocchios(case):
    pi = case.robot.inertial_parameters()
    want = np.array([case.pm.inertias[i].toDynamicParameters()
                     for i in range(1, case.pm.njoints)])
    assert pi.shape == want.shape == (case.pm.njoints - 1, 10)
    assert rel(pi, want) <= TOL


def test_regressor_matches_pinocchio(case):
    rng = np.random.default_rng(1)
    r = case.robot
    nb = r.inertial_parameters().shape[0]
    for _ in range(3):
        q, v, a = case.state(rng)
        Y = r.regressor(q, v, a)
        assert Y.shape == (r.nv, 10 * nb)
        assert rel(Y, case.Y(q, v, a)) <= TOL
        # sanity only (not the oracle): Y π is our own inverse dynamics
        assert rel(Y @ r.inertial_parameters().ravel(), r.inverse_dynamics(q, v, a)) <= 1e-11


def test_regressor_batch(case):
    rng = np.random.default_rng(2)
    r = case.robot
    states = [case.state(rng) for _ in range(4)]
    Q, V, A = (np.array(x) for x in zip(*states))
    Yb = r.regressor(Q, V, A)
    assert Yb.shape[0] == 4
    for k in range(4):
        assert rel(Yb[k], case.Y(Q[k], V[k], A[k])) <= TOL


def _jet(case, rng, K):
    """Inputs of regressor_derivatives for a random instant: qs (fixed base) or (q, vs)."""
    r = case.robot
    if case.fb:
        q, _, _ = case.state(rng)
        return (q, rng.normal(size=(K + 2, r.nv)))
    return rng.uniform(-1.5, 1.5, (K + 3, r.n))


def _velocity_rows(x):
    return x[1] if isinstance(x, tuple) else x[1:]


def test_first_derivative_against_pinocchio_partials(case):
    rng = np.random.default_rng(3)
    r = case.robot
    nb = r.inertial_parameters().shape[0]
    pi = random_parameters(rng, nb)
    case.set_parameters(pi)
    try:
        for _ in range(2):
            x = _jet(case, rng, 1)
            Ys = r.regressor_derivatives(x)
            assert Ys.shape == (2, r.nv, 10 * nb)
            vs = _velocity_rows(x)
            q = x[0]
            assert rel(Ys[0] @ pi.ravel(), case.Y(q, vs[0], vs[1]) @ pi.ravel()) <= TOL
            assert rel(Ys[1] @ pi.ravel(), case.tau_dot(q, vs[0], vs[1], vs[2])) <= 1e-10
    finally:
        case.set_parameters(r.inertial_parameters())


@pytest.mark.parametrize("name", ["panda", "ur5", "mimic_chain"])
def test_higher_derivatives_against_differences_of_pinocchio(name):
    """Y″π and Y‴π: 8th-order central differences of Pinocchio's τ′ and of Y′π… along an analytic
    trajectory (fixed bases)."""
    case = Case(name)
    r = case.robot
    rng = np.random.default_rng(4)
    nb = r.inertial_parameters().shape[0]
    pi = random_parameters(rng, nb)
    case.set_parameters(pi)
    try:
        traj = trajectory(r.n, seed=5, order=6)
        t0, h = 0.37, 1e-3
        Ys = r.regressor_derivatives(traj(t0))  # K = 3
        assert Ys.shape == (4, r.nv, 10 * nb)
        taud = np.array([case.tau_dot(*traj(t0 + k * h)[:4]) for k in range(-4, 5)])
        tau2 = D1 @ taud / h
        assert rel(Ys[2] @ pi.ravel(), tau2) <= 1e-7
        Y2 = np.array([r.regressor_derivatives(traj(t0 + k * h)[:5])[2] @ pi.ravel()
                       for k in range(-4, 5)])
        assert rel(Ys[3] @ pi.ravel(), D1 @ Y2 / h) <= 1e-7
    finally:
        case.set_parameters(r.inertial_parameters())


@pytest.mark.parametrize("name", ["solo12", "anymal"])
def test_floating_base_second_derivative(name):
    """Floating base, k = 2: Y′π and Y″π against Pinocchio's τ′ and its 8th-order differences
    along an analytic base + joint trajectory (test_floating_base's Motion: C(t) = C₀ exp(X₁
    s₁(t)) exp(X₂ s₂(t)), body twist jet in closed form), for random parameters."""
    from test_floating_base import Motion, _fd8, _pin_tau_dot
    case = Case(name)
    r = case.robot
    rng = np.random.default_rng(8)
    pi = random_parameters(rng, r.inertial_parameters().shape[0])
    case.set_parameters(pi)
    try:
        motion = Motion(r.n, seed=12)
        t = 0.6
        Ys = r.regressor_derivatives((motion.q(t), motion.v(t, 3)))
        assert rel(Ys[1] @ pi.ravel(), _pin_tau_dot(case.pm, case.pd, motion, t)) <= 1e-10
        ref = _fd8(lambda s: _pin_tau_dot(case.pm, case.pd, motion, s), t, 0.005)
        assert rel(Ys[2] @ pi.ravel(), ref) <= 1e-8
    finally:
        case.set_parameters(r.inertial_parameters())


def test_any_order_and_batches(case):
    rng = np.random.default_rng(6)
    r = case.robot
    nb = r.inertial_parameters().shape[0]
    pi = r.inertial_parameters().ravel()
    for K in (0, 4):
        x = _jet(case, rng, K)
        Ys = r.regressor_derivatives(x)
        assert Ys.shape == (K + 1, r.nv, 10 * nb)
        assert rel(Ys @ pi, r.torque_derivatives(x)) <= 1e-11  # sanity, not the oracle
    xs = [_jet(case, rng, 2) for _ in range(3)]
    batch = (np.array([x[0] for x in xs]), np.array([x[1] for x in xs])) if case.fb \
        else np.array(xs)
    Yb = r.regressor_derivatives(batch)
    assert Yb.shape == (3, 3, r.nv, 10 * nb)
    for k in range(3):
        assert rel(Yb[k], r.regressor_derivatives(xs[k])) <= 1e-14


# ---------------------------------------------------------------- with_inertial_parameters
def test_with_inertial_parameters_against_pinocchio(case):
    rng = np.random.default_rng(7)
    r = case.robot
    pi = random_parameters(rng, r.inertial_parameters().shape[0])
    r2 = r.with_inertial_parameters(pi)
    assert type(r2) is type(r) and r2.joint_names == r.joint_names
    assert rel(r2.inertial_parameters(), pi) <= 1e-14
    assert rel(r.with_inertial_parameters(pi.ravel()).inertial_parameters(), pi) <= 1e-14
    case.set_parameters(pi)
    try:
        q, v, a = case.state(rng)
        want = case.pin.rnea(case.pm, case.pd, case.to_pin(q), case.v(v), case.v(a))
        want = want if case.G is None else case.G.T @ want
        assert rel(r2.inverse_dynamics(q, v, a), want) <= TOL
    finally:
        case.set_parameters(r.inertial_parameters())


@pytest.mark.parametrize("edit, words", [
    (lambda p: p.__setitem__((1, 0), -1.0), "negative mass"),
    (lambda p: p.__setitem__((2, 4), np.nan), "NaN"),
    (lambda p: p.__setitem__((0, 6), -5.0), "not positive semi-definite"),
    (lambda p: p.__setitem__((3, slice(None)), np.r_[0, 0.1, 0, 0, np.zeros(6)]),
     "zero mass"),
])
def test_with_inertial_parameters_rejects_unphysical(edit, words):
    case = Case("panda")
    pi = case.robot.inertial_parameters().copy()
    edit(pi)
    with pytest.raises(ValueError, match=words) as e:
        case.robot.with_inertial_parameters(pi)
    assert "link '" in str(e.value)


def test_with_inertial_parameters_shapes_and_massless_joint():
    r = Case("ur5").robot
    with pytest.raises(ValueError, match=r"shape \(3, 10\)"):
        r.with_inertial_parameters(np.zeros((3, 10)))
    with pytest.raises(ValueError, match="array of numbers"):
        r.with_inertial_parameters("heavy")
    with pytest.raises(TypeError):
        r.with_inertial_parameters(np.zeros((6, 10), complex))
    pi = r.inertial_parameters().copy()
    pi[-1] = 0.0  # the wrist's last body has no inertia: its joint moves no mass
    with pytest.raises(ValueError, match="moves no mass"):
        r.with_inertial_parameters(pi)


def test_regressor_bad_input():
    r = Case("ur5").robot
    q = np.zeros(6)
    with pytest.raises(ValueError, match="qd"):
        r.regressor(q, np.zeros(5), q)
    with pytest.raises(ValueError, match="NaN"):
        r.regressor(np.full(6, np.nan), q, q)
    with pytest.raises(ValueError, match="qs"):
        r.regressor_derivatives(np.zeros((2, 6)))


@pytest.mark.parametrize("seed", [1, 2])
def test_random_trees_prismatic_fixed_links(seed):
    """Random trees (oblique axes, prismatic and continuous joints, fixed links mid-chain,
    branches): Y against Pinocchio; Y^(k) up to k = 5 (the general Bell-polynomial path) against
    the NumPy reference over the same forward pass (kept equal to the kernel) and, summed with π,
    against our τ^(k) (sanity)."""
    pin = pytest.importorskip("pinocchio")
    from conftest import random_urdf
    from mbs_dynamics.identification import regressor as ref
    xml, _ = random_urdf(seed, n_movable=9)
    r = mbs.load_urdf(xml)
    pm = pin.buildModelFromXML(xml)
    pd = pm.createData()
    rng = np.random.default_rng(seed)
    q, v, a = rng.uniform(-2, 2, r.n), rng.normal(size=r.n), rng.normal(size=r.n)
    Yp = pin.computeJointTorqueRegressor(pm, pd, pin_q(pm, q), v, a).copy()
    assert rel(r.regressor(q, v, a), Yp) <= TOL
    qs = rng.uniform(-1, 1, (8, r.n))
    Ys = r.regressor_derivatives(qs)
    d = r.data.arrays
    assert rel(Ys, ref.regressor_jet(r.model, d["V"], d["T"], d["qj"], 5)) <= 1e-13
    assert rel(Ys @ r.inertial_parameters().ravel(), r.torque_derivatives(qs)) <= 1e-11
    assert rel(ref.regressor(r, q, v, a), Yp) <= TOL


@pytest.mark.parametrize("name", ["mimic_baxter", "mimic_pr2", "mimic_tiago_pro",
                                  "mimic_talos_full"])
def test_more_mimic_robots(name):
    """Y = Gᵀ Y_full and the inverse-dynamics partials Gᵀ (·) G on the other mimic robots of
    example-robot-data (columns: every body of the full model)."""
    case = Case(name)
    r = case.robot
    rng = np.random.default_rng(13)
    q, v, a = case.state(rng)
    assert rel(r.regressor(q, v, a), case.Y(q, v, a)) <= TOL
    dq, dv, M = (x.copy() for x in case.pin.computeRNEADerivatives(
        case.pm, case.pd, case.to_pin(q), case.v(v), case.v(a)))
    G = case.G
    for got, want in zip(r.inverse_dynamics_derivatives(q, v, a), (dq, dv, sym(M))):
        assert rel(got, G.T @ want @ G) <= 1e-10


def test_out_arrays_and_aliasing():
    case = Case("ur5")
    r = case.robot
    rng = np.random.default_rng(14)
    q, v, a = case.state(rng)
    want = case.Y(q, v, a)
    out = np.full((r.nv, 60), np.nan)
    assert r.regressor(q, v, a, out=out) is out and rel(out, want) <= TOL
    with pytest.raises(ValueError, match="out"):
        r.regressor(q, v, a, out=np.zeros((r.nv, 59)))
    with pytest.raises(ValueError, match="out"):
        r.regressor(q, v, a, out=np.zeros((r.nv, 60), np.float32))
    qs = rng.normal(size=(4, r.n))
    Ys = r.regressor_derivatives(qs)
    o = np.empty_like(Ys)
    assert r.regressor_derivatives(qs, out=o) is o and np.array_equal(o, Ys)
    with pytest.raises(ValueError, match="out"):
        r.regressor_derivatives(qs, out=np.empty((3, r.nv, 61)))
    # a batch whose out shares memory with its (strided) q input still gives the right result
    Q, V, A = rng.normal(size=(3, 2, r.n))
    buf = np.zeros((2, r.nv, 60))
    buf[0, 0, :6], buf[1, 0, :6] = Q
    Qv = buf[:, 0, :6]
    Yb = r.regressor(np.ascontiguousarray(Qv), V, A)
    assert rel(r.regressor(Qv, V, A, out=buf), Yb) == 0
    for k in range(2):
        assert rel(Yb[k], case.Y(Q[k], V[k], A[k])) <= TOL


def test_with_inertial_parameters_huge_python_integer_is_a_value_error_naming_pi():
    # fuzz campaign (issue 22): 10**400 escaped as OverflowError
    import mbs_dynamics as mbs
    from mbs_dynamics import data
    r = mbs.load_urdf(data.robot("arm7"))
    pi = r.inertial_parameters().tolist()
    pi[0][0] = 10 ** 400
    with pytest.raises(ValueError, match="pi"):
        r.with_inertial_parameters(pi)
