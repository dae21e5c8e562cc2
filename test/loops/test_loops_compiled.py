"""Closed loops: the compiled per-call paths (mbs_dynamics/loops/_closed.pyx).

The public single-sample calls of a ClosedLoopRobot (inverse and forward dynamics, constraint
forces, M, g) run compiled and fall back to the NumPy path where the compiled one cannot decide.
Oracles: Pinocchio's loop-frame Jacobians (the relative twist) and high-order central
differences of the residual / Jacobian for the compiled K and K̇q̇ off the constraint manifold;
Pinocchio's RNEA, M and ``constraintDynamics`` through the public calls (test_loops_dynamics);
here, in addition, the compiled and the NumPy path against each other along trajectories (the
assembly warm start and its predictor), on every test mechanism and on a floating base, the
redundant planar closure, bad input, and the fallback at a singular configuration.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import mbs_dynamics as mbs
import loops_mechanisms as lm
from test_loops_kinematics import D, NAMES, PinLoops, load, trajectory

try:
    import pinocchio as pin
except ImportError:  # skip per test, not per module (launch_testing)
    pin = None
needs_pin = pytest.mark.skipif(pin is None, reason="pinocchio is not installed")


def rel(a, b):
    return np.abs(np.asarray(a) - b).max() / max(1.0, np.abs(b).max())


def numpy_path(r):
    """A copy of ``r`` whose calls all take the NumPy path."""
    c = r.copy()
    c._cw.fast = False
    return c


def floating_arm():
    u, loops, act = lm.parallelogram_arm()
    u = u.replace('<link name="base"/>', '<link name="base"><inertial><mass value="3"/><inertia '
                  'ixx="0.05" iyy="0.06" izz="0.07" ixy="0" ixz="0" iyz="0"/></inertial></link>')
    return mbs.load_urdf(u, loops=loops, actuated=act, floating_base=True)


@needs_pin
@pytest.mark.parametrize("name", NAMES)
def test_compiled_jacobian_and_drift(name):
    """K at assembled configurations = Pinocchio's relative twist rows; off the manifold K = ∂h/∂q
    and K̇q̇ = d/dt (K(q + q̇t)) q̇ by 9-point differences."""
    r, u, loops = load(name)
    P = PinLoops(u, loops)
    cw = r._cw
    rng = np.random.default_rng(3)
    for t in (0.0, 0.7):
        qf = r.expand(trajectory(r, t)[0])
        h, K = cw.residual_jacobian(qf)
        assert np.abs(h).max() < 1e-11
        if not r.mimic_joints:
            assert rel(K, P.jacobian(qf)) < 1e-12
    qf = r.q_assembled + 0.05 * rng.standard_normal(r.n_full)
    v = rng.standard_normal(r.n_full)
    h, K = cw.residual_jacobian(qf)
    e = 1e-3
    for j in range(r.n_full):
        dq = np.zeros(r.n_full)
        dq[j] = e
        fd = sum(c * cw.residual_jacobian(qf + (i - 4) * dq)[0] for i, c in enumerate(D[1])) / e
        assert rel(K[:, j], fd) < 1e-9, (name, j)
    Kd = sum(c * cw.residual_jacobian(qf + (i - 4) * e * v)[1]
             for i, c in enumerate(D[1])) / e
    assert rel(cw.drift_terms(qf, v), Kd @ v) < 1e-8


def _states(r, n=6, seed=0):
    """Samples along an analytic trajectory (each call a new actuated q: Newton from the last
    assembly with the predictor)."""
    out = []
    for k, t in enumerate(np.linspace(0.0, 0.5, n)):
        Q = trajectory(r, t, seed)
        out.append((Q[0], Q[1], Q[2]))
    return out


@pytest.mark.parametrize("name", NAMES + ["floating"])
def test_compiled_path_equals_numpy_path(name):
    r = floating_arm() if name == "floating" else load(name)[0]
    np_r = numpy_path(r)
    assert r._cw.fast and not np_r._cw.fast
    rng = np.random.default_rng(1)
    for qa, qda, qdda in _states(r if name != "floating" else _Joints(r)):
        if name == "floating":
            qb = np.r_[0.1, -0.2, 0.3, rng.standard_normal(4)]
            qb[3:] /= np.linalg.norm(qb[3:])
            q, qd, qdd = np.r_[qb, qa], np.r_[rng.standard_normal(6), qda], \
                np.r_[rng.standard_normal(6), qdda]
        else:
            q, qd, qdd = qa, qda, qdda
        assert r._cw.inverse_dynamics(q, qd, qdd) is not None  # the compiled path decides
        tau = r.inverse_dynamics(q, qd, qdd)
        assert rel(tau, np_r.inverse_dynamics(q, qd, qdd)) < 1e-10
        a = r.forward_dynamics(q, qd, tau)
        assert rel(a, np_r.forward_dynamics(q, qd, tau)) < 1e-9
        assert rel(a, qdd) < 1e-9  # round trip
        assert rel(r.mass_matrix(q), np_r.mass_matrix(q)) < 1e-10
        assert rel(r.gravity_torques(q), np_r.gravity_torques(q)) < 1e-10
        assert r._cw.coriolis_matrix(q, qd, 0) is not None
        assert rel(r.coriolis_matrix(q, qd), np_r.coriolis_matrix(q, qd)) < 1e-10
        Md = r.mass_matrix_derivative(q, qd)
        assert rel(Md, np_r.mass_matrix_derivative(q, qd)) < 1e-10 and np.array_equal(Md, Md.T)
        cf, cf_np = r.constraint_forces(q, qd, qdd), np_r.constraint_forces(q, qd, qdd)
        for k in cf:
            assert rel(cf[k], cf_np[k]) < 1e-9, k
        # both paths continue from the same assembly
        assert np.abs(r._last - np_r._last).max() < 1e-10
        if name == "floating":
            vs = np.vstack([qd, qdd, rng.standard_normal((2, r.nv))])
            assert r._cw.torque_derivatives(q, vs) is not None
            assert rel(r.torque_derivatives((q, vs)), np_r.torque_derivatives((q, vs))) < 1e-10
            assert rel(r.torque_derivatives((q, vs[:2].tolist())),
                       np_r.torque_derivatives((q, vs[:2]))) < 1e-10
    out = np.empty(r.nv)
    assert r.inverse_dynamics(q, qd, qdd, out=out) is out
    assert rel(out, tau) < 1e-14


@pytest.mark.parametrize("name", NAMES)
def test_compiled_jets_equal_numpy_path(name):
    """torque_derivatives (k = 0 … 3) and expand (1-D and jets up to 8 rows) along a trajectory:
    the compiled series (order-by-order dependent jets, the series of K for the G jets, the
    tree's recursive τ jet) against the NumPy path."""
    r = load(name)[0]
    np_r = numpy_path(r)
    for t in (0.0, 0.01, 0.3):
        Q = trajectory(r, t)
        for K1 in (3, 4, 5, 6):
            qs = np.ascontiguousarray(Q[:K1])
            assert r._cw.torque_derivatives(qs) is not None
            T = r.torque_derivatives(qs)
            assert T.shape == (K1 - 2, r.n)
            assert rel(T, np_r.torque_derivatives(qs)) < 1e-10, (t, K1)
        for K1 in (1, 3, 7):
            X = r.expand(Q[:K1])
            assert rel(X, np_r.expand(Q[:K1])) < 1e-10
            assert np.array_equal(X[:, r.actuated_index], Q[:K1])
        assert rel(r.expand(Q[0]), np_r.expand(Q[0])) < 1e-12
    # more rows than the compiled series hold, batches, lists: the NumPy path / conversion
    Q8 = np.vstack([Q, Q[-1:] * 0.5, Q[-1:] * 0.25])
    assert Q8.shape[0] == 9 and r._cw.expand(Q8) is None
    assert rel(r.expand(Q8), np_r.expand(Q8)) < 1e-9
    assert rel(r.torque_derivatives(Q[:4].tolist()), np_r.torque_derivatives(Q[:4])) < 1e-10
    B = np.stack([trajectory(r, t)[:4] for t in (0.1, 0.2)])
    assert rel(r.torque_derivatives(B), np_r.torque_derivatives(B)) < 1e-10
    with pytest.raises(ValueError, match="qs contains NaN"):
        r.torque_derivatives(np.full((3, r.n), np.nan))
    with pytest.raises(ValueError, match="qs contains NaN"):
        r.expand(np.full((2, r.n), np.inf))


class _Joints:
    """The joints of a floating ClosedLoopRobot as a fixed-base one, for ``trajectory``."""

    def __init__(self, r):
        self.n, self.q_assembled, self.actuated_index = r.n, r.q_assembled, r.actuated_index


def test_redundant_planar_closure_compiled():
    """The planar four-bar's 3-D connect: K has 3 rows of rank 2 (the force along the hinge
    axes, in frame_b's tilted axes, does no work); the compiled QR takes it as it is and λ is the
    minimum-norm one (no component along the left null vector of K)."""
    r, _, _ = load("planar_fourbar")
    (qa, qd, qdd), = _states(r, 1)
    q = qa + 0.2
    assert r._cw.multipliers(q, qd, qdd) is not None
    lam = r.constraint_forces(q, qd, qdd)["closure"]
    qf = r.expand(q)
    K = r.constraint_jacobian(qf)
    U, sv, _ = np.linalg.svd(K)
    assert K.shape == (3, 3) and sv[1] > 1e-3 and sv[2] < 1e-14
    assert abs(U[:, 2] @ lam) < 1e-12 * np.abs(lam).max()
    # the tree's equation holds: τ_tree = S τ + Kᵀλ
    X = r.expand(np.stack([q, qd, qdd]))
    t_tree = r.full_robot.inverse_dynamics(*X)
    S = np.zeros((r.n_full, r.n))
    S[r.actuated_index] = np.eye(r.n)
    assert rel(S @ r.inverse_dynamics(q, qd, qdd) + K.T @ lam, t_tree) < 1e-10


def test_compiled_inputs():
    r, _, _ = load("planar_fourbar")
    q = r.q_assembled[r.actuated_index]
    z = np.zeros(1)
    want = r.inverse_dynamics(q, z + 0.3, z)
    # lists, ints, float32, strided views: converted, then the compiled path
    assert rel(r.inverse_dynamics(q.tolist(), [0.3], [0]), want) < 1e-14
    assert rel(r.inverse_dynamics(q.astype(np.float32).astype(float), np.float32([0.3]), z),
               r.inverse_dynamics(q.astype(np.float32).astype(float), [0.3], z)) < 1e-7
    assert rel(r.inverse_dynamics(np.r_[q, q][::2], [0.3], z), want) < 1e-14
    for fn, names in ((r.inverse_dynamics, ("q", "qd", "qdd")),
                      (r.forward_dynamics, ("q", "qd", "tau")),
                      (r.constraint_forces, ("q", "qd", "qdd"))):
        for i, nm in enumerate(names):
            args = [q.copy(), z.copy(), z.copy()]
            args[i][0] = np.nan
            with pytest.raises(ValueError, match=f"{nm} contains NaN"):
                fn(*args)
        with pytest.raises(ValueError, match="shape"):
            fn(np.zeros(2), z, z)
        with pytest.raises(TypeError):
            fn(q, np.array([1j]), z)
    # None anywhere: the Python path's error (the compiled entries once read it as an array)
    for fn, nargs in ((r.inverse_dynamics, 3), (r.forward_dynamics, 3),
                      (r.constraint_forces, 3), (r.coriolis_matrix, 2),
                      (r.mass_matrix_derivative, 2), (r.mass_matrix, 1), (r.gravity_torques, 1),
                      (r.torque_derivatives, 1), (r.expand, 1)):
        for i in range(nargs):
            args = [q, z, z][:nargs]
            args[i] = None
            with pytest.raises((ValueError, TypeError)):
                fn(*args)
    for fn in (r.coriolis_matrix, r.mass_matrix_derivative):
        with pytest.raises(ValueError, match="qd contains NaN"):
            fn(q, np.array([np.nan]))
    for fn in (r.mass_matrix, r.gravity_torques):
        with pytest.raises(ValueError, match="q contains NaN"):
            fn(np.array([np.inf]))
        with pytest.raises(ValueError, match="shape"):
            fn(np.zeros((1, 1)))
    with pytest.raises(ValueError, match="overflowed"):
        r.inverse_dynamics(q, np.array([1e200]), z)
    with pytest.raises(ValueError, match="overflowed"):
        r.torque_derivatives(np.array([q, [1e200], [0.0]]))
    with pytest.raises(ValueError, match="too large"):
        r.forward_dynamics(q, np.array([1e200]), z)
    with pytest.raises(ValueError, match="too large"):
        r.forward_dynamics(q, z, np.array([1e151]))
    with pytest.raises(ValueError, match="method"):
        r.forward_dynamics(q, z, z, method="aba")
    rf = floating_arm()
    qf = np.r_[0, 0, 0, 0, 0, 0, 2.0, rf.q_assembled[rf.actuated_index]]
    with pytest.raises(ValueError, match="unit quaternion"):
        rf.inverse_dynamics(qf, np.zeros(rf.nv), np.zeros(rf.nv))
    with pytest.raises(ValueError, match="unit quaternion"):
        rf.forward_dynamics(qf, np.zeros(rf.nv), np.zeros(rf.nv))


def test_compiled_falls_back_where_it_cannot_decide():
    """An unreachable actuated q (Newton fails) and a singular configuration (the rocker-driven
    four-bar at its toggle: crank and coupler aligned, K_d singular) leave the compiled path
    (None, state untouched) and the NumPy path says what is wrong."""
    u, loops, _ = lm.planar_fourbar()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rc = mbs.load_urdf(u, loops=loops, actuated=["j_crank"])
        rr = mbs.load_urdf(u, loops=loops, actuated=["j_rocker"])
    z = np.zeros(1)
    last = rr._last.copy()
    bad = rr.q_assembled[rr.actuated_index] + 1.0
    assert rr._cw.inverse_dynamics(bad, z, z) is None
    assert np.array_equal(rr._last, last)
    with pytest.raises(ValueError, match="cannot assemble.*loop 'closure'"):
        rr.inverse_dynamics(bad, z, z)
    # the toggle: the coupler's joint angle + its origin pitch (−1.2) ≡ 0 (mod π), found on the
    # crank-driven robot (stepping the crank down from its assembly, on its branch) by bisection
    def f(th, guess):
        x = rc.expand(np.array([th]), q_guess=guess)
        return np.sin(x[1] - 1.2), x
    th = rc.q_assembled[0]
    v, g = f(th, rc.q_assembled)
    while True:
        v2, g2 = f(th - 0.05, g)
        if v * v2 < 0:
            break
        th, v, g = th - 0.05, v2, g2
    a, b = th - 0.05, th
    for _ in range(60):
        c = 0.5 * (a + b)
        if f(c, g)[0] * v <= 0:
            a = c
        else:
            b = c
    qfull = rc.expand(np.array([a]), q_guess=g)
    rr._last = qfull
    qa = qfull[rr.actuated_index]
    assert rr._cw.inverse_dynamics(qa, z, z) is None
    with pytest.raises(ValueError, match="do not determine|cannot assemble"):
        rr.inverse_dynamics(qa, z, z)


def test_compiled_path_thread_guard():
    """The compiled entries hold the tree's workspace for the call (re-entrant for the holding
    thread); another thread gets the Robot's RuntimeError."""
    import threading
    r, _, _ = load("spatial_fourbar")
    q = r.q_assembled[r.actuated_index]
    z = np.zeros(1)
    err = []
    with r.data:
        assert r.inverse_dynamics(q, z, z).shape == (1,)

        def other():
            try:
                r.forward_dynamics(q, z, z)
            except RuntimeError as e:
                err.append(str(e))
        th = threading.Thread(target=other)
        th.start()
        th.join()
    assert err and "in use by another thread" in err[0]
    assert not r.data.in_use


def test_compiled_mimic_rows():
    """A four-bar plus a flap mimicking the crank (test_loops_dynamics): the mimic row is a
    constraint row of the compiled h, K and their series too."""
    u, loops, act = lm.planar_fourbar()
    flap = ('<link name="flap"><inertial><origin xyz="0.1 0 0"/><mass value="0.4"/><inertia '
            'ixx="0.001" iyy="0.002" izz="0.002" ixy="0" ixz="0" iyz="0"/></inertial></link>'
            '<joint name="j_flap" type="revolute"><parent link="base"/><child link="flap"/>'
            '<origin xyz="-0.2 0 0.1"/><axis xyz="0 1 0"/><limit lower="-3" upper="3" '
            'effort="10" velocity="5"/><mimic joint="j_crank" multiplier="-0.5" offset="0.1"/>'
            '</joint></robot>')
    r = mbs.load_urdf(u.replace("</robot>", flap), loops=loops, actuated=act)
    np_r = numpy_path(r)
    qf = r.q_assembled + 0.03
    h, K = r._cw.residual_jacobian(qf)
    assert np.allclose(h, r.loop_residual(qf), atol=1e-15)
    assert np.allclose(K, r.constraint_jacobian(qf), atol=1e-14)
    for t in (0.0, 0.2):
        Q = trajectory(r, t)
        assert r._cw.inverse_dynamics(Q[0], Q[1], Q[2]) is not None
        assert rel(r.inverse_dynamics(Q[0], Q[1], Q[2]),
                   np_r.inverse_dynamics(Q[0], Q[1], Q[2])) < 1e-10
        assert rel(r.torque_derivatives(Q[:5]), np_r.torque_derivatives(Q[:5])) < 1e-10
        assert rel(r.expand(Q[:4]), np_r.expand(Q[:4])) < 1e-10
        assert rel(r.coriolis_matrix(Q[0], Q[1]), np_r.coriolis_matrix(Q[0], Q[1])) < 1e-10
