"""The flatness-based SEA controller in the loop with MuJoCo's link dynamics (issue 28).

The elastic robot is simulated by :mod:`elastic_sim` (MuJoCo's own URDF import gives the link
dynamics; spring, motor inertia and damping beside it): the controller runs at 1 kHz, its motor
torque held (zero-order hold) over four RK4 sub-steps. Robots: the bundled arm7, the Panda of
example-robot-data and a random tree with prismatic joints — none tuned for.

Spring stiffness per joint ``K_j = ω_s² M_jj(q₀)``: ω_s is then every joint's spring frequency
with the motor held, so "soft" (poles above ω_s) and "stiff" (ω_s far above the poles) are
per-joint statements.
"""

import numpy as np
import pytest

import mbs_dynamics as mbs
from mbs_dynamics.control.actuators import VSA, ExponentialAntagonisticSpring
from mbs_dynamics.control.feedforward import sea_feedforward
from mbs_dynamics.control.flatness import (FlatnessConfigError, FlatnessController,
                                           gains_from_poles, spring_frequencies)
from mbs_dynamics.control.trajectory import Trajectory
from conftest import random_urdf
from elastic_sim import arm7_urdf, closed_loop, mujoco, mujoco_model, panda_urdf, strip_urdf

POLES = [8.0, 16.0, 24.0, 32.0]
DIST = 1.0   # [rad/s²]: the link-side step accelerates each link by this much on its own


def robot_text(name, tree_seed=7):
    """(URDF text prepared for MuJoCo, robot, q₀) of ``arm7``, ``panda`` or a random 4-joint
    tree (skips without mujoco, or pinocchio for the Panda)."""
    if mujoco is None:
        pytest.skip("mujoco is not installed")
    if name == "panda":
        pytest.importorskip("pinocchio")
        text = panda_urdf()
        q0 = np.array([0.0, -0.3, 0.0, -2.2, 0.0, 2.0, 0.8])
    elif name == "arm7":
        text = arm7_urdf()
        q0 = None
    else:
        text = strip_urdf(random_urdf(tree_seed, n_movable=4, massless_prob=0.0)[0])
        q0 = None
    robot = mbs.load_urdf(text)
    if q0 is None:
        q0 = 0.25 * (np.clip(robot.lower, -2, 2) + np.clip(robot.upper, -2, 2)) + 0.1
    return text, robot, q0


def _robot(name):
    text, robot, q0 = robot_text(name)
    return robot, mujoco_model(text, robot), q0


def _sea(robot, q0, omega_s, rng=None):
    M0 = np.diag(robot.mass_matrix(q0))
    K = omega_s ** 2 * M0
    B = 0.5 * M0 + 0.01          # motor inertia of the order of the link's
    D = 0.02 * np.ones(robot.n)
    return K, B, D


@pytest.mark.parametrize("name", ["arm7", "panda", "tree"])
def test_error_decays_at_the_requested_poles(name):
    """Exact model, a held set-point and a 0.02 rad initial link error: the error follows
    e⁗ + k₃e⃛ + k₂ë + k₁ė + k₀e = 0 (prediction within 1 % of e₀) and its tail decays at the
    slowest pole (fitted rate within 10 %; measured within 1 %)."""
    robot, m, q0 = _robot(name)
    n = robot.n
    K, B, D = _sea(robot, q0, 40.0)
    traj = Trajectory(robot.joint_names, [0.0, 1.0], [q0, q0])
    ctl = FlatnessController(robot, stiffness=K, motor_inertia=B, motor_damping=D,
                             poles=POLES, trajectory=traj)
    e0 = 0.02
    qs = q0 - e0
    th = qs + robot.gravity_torques(qs) / K      # at rest on its spring
    x0 = np.concatenate([qs, np.zeros(n), th, np.zeros(n)])
    ts, X, _ = closed_loop(m, x0, lambda t, *s: ctl.update(t, *s), 1.6, K, B, D)
    _assert_decays_at_poles(name, ts, q0 - X[:, :n], e0)


def _assert_decays_at_poles(name, ts, e, e0, tol=0.01):
    """e (N, n) from e(0) = e0 at rest (ė = ë = e⃛ = 0) against the solution of the closed
    loop's fourth-order error dynamics (within ``tol``·e0), and the tail's fitted decay rate
    against the slowest pole (within 10 %)."""
    p = np.array(POLES)
    V = np.vander(-p, 4, increasing=True).T      # rows: Σ c_j (−p_j)^r = e^(r)(0)
    c = np.linalg.solve(V, [e0, 0.0, 0.0, 0.0])
    pred = (c * np.exp(-np.outer(ts, p))).sum(axis=1)
    dev = np.abs(e - pred[:, None]).max()
    assert dev < tol * e0, f"{name}: error deviates from the pole prediction by {dev:.3g} rad"
    tail = (ts > 0.8) & (ts < 1.6)
    for j in range(e.shape[1]):
        rate = -np.polyfit(ts[tail], np.log(np.abs(e[tail, j])), 1)[0]
        assert abs(rate - p[0]) < 0.1 * p[0], f"{name} joint {j}: decay rate {rate:.3g}/s"


def _vsa_arm7():
    robot, m, q0 = _robot("arm7")
    M0 = np.diag(robot.mass_matrix(q0))
    k, a, sigma = 40.0 ** 2 * M0, 5.0, 0.05
    vsa = VSA(motor_inertia=0.5 * M0 + 0.01, motor_damping=0.02, sigma=sigma, k=k, a=a,
              n=robot.n)
    return robot, m, q0, vsa, ExponentialAntagonisticSpring(k, a), sigma


def test_vsa_error_decays_at_the_requested_poles():
    """VSA (exponential antagonistic springs, σ held), exact model, 1 kHz zero-order hold with
    the default T/2 lead: the error follows the pole prediction (1 % of e₀; measured 0.04 %) and
    the tail decays at the slowest pole within 10 % (measured 7.98–8.05 /s for 8 /s). Without
    the lead (sample_time=0) the same run deviates by 3.6 % of e₀ and its tail rates spread over
    6.6–10.8 /s: the check fails, so it is sensitive to the lead."""
    robot, m, q0, vsa, spring, sigma = _vsa_arm7()
    n = robot.n
    traj = Trajectory(robot.joint_names, [0.0, 1.0], [q0, q0])
    e0 = 0.02
    qs = q0 - e0
    th = qs + spring.invert(robot.gravity_torques(qs), sigma)     # at rest on its springs
    x0 = np.concatenate([qs, np.zeros(n), th, np.zeros(n)])
    runs = {}
    for T in (None, 0.0):
        ctl = FlatnessController(robot, vsa, poles=POLES, trajectory=traj, sample_time=T)
        assert ctl._T == (1e-3 if T is None else 0.0)
        ts, X, _ = closed_loop(m, x0, lambda t, *s: ctl.update(t, *s), 1.6, None,
                               vsa.motor_inertia, vsa.motor_damping,
                               spring=lambda d: spring.torque(d, sigma))
        runs[T] = (ts, q0 - X[:, :n])
    _assert_decays_at_poles("VSA", *runs[None], e0)
    with pytest.raises(AssertionError):
        _assert_decays_at_poles("VSA without the lead", *runs[0.0], e0)


def test_vsa_hold_lead_is_what_meets_the_tracking_bound():
    """VSA, exact model, C⁴ trajectory at 1 kHz: RMS ≤ 1e-4 rad with the lead (measured
    8.7e-6), and at least 10 times more without it (measured 8.2e-4)."""
    robot, m, q0, vsa, spring, sigma = _vsa_arm7()
    n = robot.n
    traj = _c4_trajectory(robot, q0, 3)
    tau = robot.torque_derivatives(traj.sample(0.0))
    delta = spring.invert(tau[0], sigma)                  # the flat initial state
    x0 = np.concatenate([q0, np.zeros(n), q0 + delta,
                         tau[1] / spring.partials(delta, sigma)[1]])
    rms = {}
    for T in (1e-3, 0.0):
        ctl = FlatnessController(robot, vsa, poles=POLES, trajectory=traj, sample_time=T)
        ts, X, _ = closed_loop(m, x0, lambda t, *s: ctl.update(t, *s), 2.6, None,
                               vsa.motor_inertia, vsa.motor_damping,
                               spring=lambda d: spring.torque(d, sigma))
        e = X[:, :n] - traj.sample_many(ts)[:, 0]
        rms[T] = np.sqrt(np.mean(e ** 2))
    assert rms[1e-3] < 1e-4, rms
    assert rms[0.0] > 10 * rms[1e-3], rms


def test_vsa_spring_without_third_partials_has_no_lead(arm7):
    """A user spring law without ``partials3``: the lead is off by default and refused when
    asked for, at construction."""
    from mbs_dynamics.control.actuators import Spring

    class Cubic(Spring):
        def partials(self, delta, sigma):
            d = np.asarray(delta, dtype=float)
            z = np.zeros_like(d)
            return 100 * d + d ** 3, 100 + 3 * d * d, z, 6 * d, z, z
    vsa = VSA(Cubic(), motor_inertia=0.3)
    assert FlatnessController(arm7, vsa, poles=POLES)._T == 0.0
    with pytest.raises(FlatnessConfigError, match="partials3"):
        FlatnessController(arm7, vsa, poles=POLES, sample_time=1e-3)


def _c4_trajectory(robot, q0, seed, amplitude=0.3, duration=2.4):
    rng = np.random.default_rng(seed)
    pts = [q0] + [q0 + amplitude * rng.uniform(-1, 1, robot.n) for _ in range(3)]
    return Trajectory(robot.joint_names, np.linspace(0.0, duration, 4), pts)


def _tracking_rms(name, omega_s, sample_time=None):
    robot, m, q0 = _robot(name)
    n = robot.n
    K, B, D = _sea(robot, q0, omega_s)
    traj = _c4_trajectory(robot, q0, 3)
    ctl = FlatnessController(robot, stiffness=K, motor_inertia=B, motor_damping=D,
                             poles=POLES, trajectory=traj, sample_time=sample_time)
    ff = sea_feedforward(robot, traj.sample(0.0), K, B, D)
    x0 = np.concatenate([q0, np.zeros(n), ff.theta, ff.theta_dot])
    ts, X, _ = closed_loop(m, x0, lambda t, *s: ctl.update(t, *s), 2.6, K, B, D)
    e = X[:, :n] - traj.sample_many(ts)[:, 0]
    return np.sqrt(np.mean(e ** 2))


@pytest.mark.parametrize("name,omega_s", [("arm7", 40.0), ("panda", 30.0), ("tree", 50.0)])
def test_tracks_a_c4_trajectory_exact_model(name, omega_s):
    """Exact model, from the flat initial state: RMS link error ≤ 1e-4 rad at 1 kHz (measured
    arm7 7.1e-6 rad)."""
    rms = _tracking_rms(name, omega_s)
    assert rms < 1e-4, f"{name}: RMS tracking error {rms:.3g} rad"


def test_the_hold_lead_is_what_meets_the_bound():
    """The same arm7 run without the T/2 lead (sample_time=0 in a 1 kHz hold): RMS 6.3e-4 rad,
    ~90 times the 7.1e-6 with it — the check above is sensitive to the lead."""
    rms = _tracking_rms("arm7", 40.0, sample_time=0.0)
    assert rms > 1e-4, f"without the lead the error is only {rms:.3g} rad"


def _perturbed(robot, rng):
    """The controller's model: every body's 10 inertial parameters scaled by 0.9 or 1.1."""
    pi = robot.inertial_parameters()
    return robot.with_inertial_parameters(pi * rng.choice([0.9, 1.1], (len(pi), 1)))


def compare_with_pd(robot, m, q0, omega_s, poles, seed=0, t_end=2.6, noise=(1e-5, 1e-3, 1e-5, 1e-3),
                    errors=True, histories=None):
    """RMS link errors (flatness, motor PD + flatness feedforward) with ±10 % inertial
    parameters and K in the controllers' model, measurement noise and a link-side step
    disturbance at t = 1.2 s. The PD has its double pole at the slowest requested pole p:
    ``u = τ_m,ff + B p² (θ_d − θ) + 2 B p (θ̇_d − θ̇)``."""
    n = robot.n
    rng = np.random.default_rng(seed)
    K, B, D = _sea(robot, q0, omega_s)
    model = _perturbed(robot, rng) if errors else robot
    K_model = K * rng.choice([0.9, 1.1], n) if errors else K
    traj = _c4_trajectory(robot, q0, 5 + seed)
    step = DIST * np.diag(robot.mass_matrix(q0))

    def dist(t):
        return step if t >= 1.2 else 0.0 * step

    ff0 = sea_feedforward(robot, traj.sample(0.0), K, B, D)
    x0 = np.concatenate([q0, np.zeros(n), ff0.theta, ff0.theta_dot])
    flat = FlatnessController(model, stiffness=K_model, motor_inertia=B, motor_damping=D,
                              poles=poles, trajectory=traj)
    p = float(np.min(np.real(poles)))

    def pd(t, q, qd, th, thd):
        ff = sea_feedforward(model, traj.sample(t), K_model, B, D)
        return ff.tau_motor + B * p * p * (ff.theta - th) + 2 * B * p * (ff.theta_dot - thd)

    out = []
    for law in (lambda t, *s: flat.update(t, *s), pd):
        try:
            ts, X, _ = closed_loop(m, x0, law, t_end, K, B, D, disturbance=dist, noise=noise,
                                   rng=np.random.default_rng(seed))
        except ValueError:        # the state left the model's range: report it as unbounded
            out.append((np.inf, np.inf))
            continue
        e = X[:, :n] - traj.sample_many(ts)[:, 0]
        out.append((np.sqrt(np.mean(e[ts > 0.3] ** 2)), np.abs(e).max()))
        if histories is not None:
            histories.append((ts, e))
    return out


SOFT_POLES = [25.0, 30.0, 35.0, 40.0]


@pytest.mark.parametrize("name", ["arm7", "panda"])
def test_soft_joints_flatness_beats_motor_pd(name):
    """Poles (8…32 rad/s) above the spring frequencies (ω_s = 5 rad/s), with model errors, noise
    and a disturbance: flatness control stays bounded and tracks better than motor PD +
    feedforward at equal bandwidth (measured on arm7: RMS 0.20 rad against 1.13 rad; the
    springs are so soft that 10 % of K alone moves the links by tenths of a radian)."""
    robot, m, q0 = _robot(name)
    K = _sea(robot, q0, 5.0)[0]
    assert spring_frequencies(robot, q0, K).max() < min(SOFT_POLES)    # soft: every mode
    (rms_f, max_f), (rms_pd, max_pd) = compare_with_pd(robot, m, q0, 5.0, SOFT_POLES)
    assert max_f < 1.0 and np.isfinite(max_pd), (max_f, max_pd)   # measured arm7: 0.64 rad
    assert rms_f < rms_pd, f"{name}: flatness RMS {rms_f:.3g} rad >= PD RMS {rms_pd:.3g} rad"


# ------------------------------------------------------------------ construction (no MuJoCo)
@pytest.fixture(scope="module")
def arm7():
    from pathlib import Path
    return mbs.load_urdf(str(Path(mbs.__file__).parent / "data" / "robots" / "arm7.urdf"))


def test_gains_are_the_coefficients_of_the_pole_polynomial(arm7):
    n = arm7.n
    poles = np.array([[3.0, 4.0 + 2j, 4.0 - 2j, 9.0]] * n)
    k = gains_from_poles(poles, n)
    s = 1.7  # Π (s + p) evaluated directly
    direct = np.prod(s + poles[0]).real
    assert np.allclose(s ** 4 + k[3] * s ** 3 + k[2] * s ** 2 + k[1] * s + k[0], direct)
    c = FlatnessController(arm7, stiffness=500.0, motor_inertia=0.2, bandwidth=10.0)
    assert np.allclose(c.gains[:, 0], [1e4, 4e3, 600.0, 40.0])   # (s + 10)^4
    c = FlatnessController(arm7, stiffness=500.0, motor_inertia=0.2, bandwidth=10.0,
                           damping=0.5)
    assert np.allclose(c.gains[:, 0], [1e4, 2e3, 300.0, 20.0])   # (s² + 10 s + 100)²


@pytest.mark.parametrize("kw,match", [
    (dict(poles=[10, 20, -5, 30]), "left half-plane"),
    (dict(poles=[10, 20, 0, 30]), "left half-plane"),
    (dict(poles=[10, 20, 30]), "shape"),
    (dict(poles=[1 + 1j, 2, 3, 4]), "conjugate"),
    (dict(poles=[10] * 4, bandwidth=5.0), "exactly one"),
    (dict(), "exactly one"),
    (dict(bandwidth=-1.0), "bandwidth"),
    (dict(poles=[10] * 4, kp=3.0), "unknown keyword"),
    (dict(poles=[10] * 4, stiffness=0.0), "stiffness must be > 0"),
    (dict(poles=[10] * 4, stiffness=np.ones((7, 7))), "singular"),
    (dict(poles=[10] * 4, stiffness=[1.0] * 6), "stiffness"),
    (dict(poles=[10] * 4, motor_inertia=0.0), "motor_inertia"),
    (dict(poles=[10] * 4, sample_time=-1e-3), "sample_time"),
])
def test_bad_configuration_is_one_clear_error(arm7, kw, match):
    args = dict(stiffness=500.0, motor_inertia=0.2)
    args.update(kw)
    with pytest.raises(FlatnessConfigError, match=match):
        FlatnessController(arm7, **args)


def test_no_elastic_joints_is_refused(arm7):
    with pytest.raises(ValueError, match="elastic"):
        FlatnessController(arm7, poles=[10] * 4)
    with pytest.raises(ValueError, match="rigid"):
        FlatnessController(arm7, {"actuator.type": "rigid"}, poles=[10] * 4)
    with pytest.raises(TypeError, match="unknown keyword"):
        FlatnessController(arm7, stiffness=1.0, motor_inertia=1.0, poles=[1] * 4, gain=2)


def test_compiled_cycle_equals_the_numpy_path(arm7):
    """Diagonal K runs the compiled cycle, a (diagonal) K matrix the NumPy one."""
    rng = np.random.default_rng(0)
    Kv = rng.uniform(300, 3000, 7)
    for T in (1e-3, 0.0):
        a = FlatnessController(arm7, stiffness=Kv, motor_inertia=0.3, motor_damping=0.1,
                               poles=POLES, sample_time=T)
        b = FlatnessController(arm7, stiffness=np.diag(Kv), motor_inertia=0.3,
                               motor_damping=0.1, poles=POLES, sample_time=T)
        x = rng.normal(size=(4, 7))
        des = rng.normal(size=(6, 7))
        ua = a.command(*x, des).copy()
        np.testing.assert_allclose(ua, b.command(*x, des), rtol=1e-12, atol=1e-9)
    with pytest.raises(ValueError, match="finite"):
        a.command(*x[:3], np.full(7, np.nan), des)


def test_compiled_update_equals_the_numpy_path(arm7):
    """update() samples the trajectory and forms q_d⁽⁵⁾ inside the compiled cycle: the same u,
    q̈, q⃛ (the compiled q⃛ reuses the first pass's articulated inertias, the NumPy path runs a
    second forward dynamics) and τ jet as the NumPy path, call after call; lists, an int time
    and a strided ``out`` take the converting path to the same numbers."""
    rng = np.random.default_rng(1)
    n = arm7.n
    Kv = rng.uniform(300, 3000, n)
    q0 = 0.2 * rng.normal(size=n)
    times = np.linspace(0.0, 1.0, 6)
    traj = Trajectory(arm7.joint_names, times,
                      [q0 + 0.3 * np.sin(3 * t + np.arange(n)) for t in times])
    kw = dict(motor_inertia=0.3, motor_damping=0.1, poles=POLES, trajectory=traj)
    a = FlatnessController(arm7, stiffness=Kv, **kw)
    b = FlatnessController(arm7, stiffness=np.diag(Kv), **kw)
    for i in range(5):
        t = 0.1 + 1e-3 * i
        x = rng.normal(size=(4, n))
        ua = a.update(t, *x).copy()
        np.testing.assert_allclose(ua, b.update(t, *x), rtol=1e-12, atol=1e-9)
        np.testing.assert_allclose(a.estimates, b.estimates, rtol=1e-12, atol=1e-9)
        np.testing.assert_allclose(a.torque_jet, b.torque_jet, rtol=1e-12, atol=1e-9)
    assert np.any(a.estimates[5] != 0.0)        # q_d⁽⁵⁾ was formed (the lead is on)
    x = rng.normal(size=(4, n))
    ref = b.update(1, *x).copy()
    out = np.zeros((n, 2))[:, 0]                # strided: filled by a copy, not by the C loop
    u = a.update(1, *[list(v) for v in x], out=out)
    assert u is out
    np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-9)
    with pytest.raises(ValueError, match="finite"):
        a.update(float("nan"), *x)
    with pytest.raises(ValueError, match="shape"):
        a.update(0.2, x[0][:3], *x[1:])


def test_vsa_third_derivative_chain_rule(arm7):
    """The VSA lead's δ⃛ from τ_e‴ = d³φ(δ(t), σ(t))/dt³: along polynomial δ(t), σ(t) the
    controller's inversion of an 8th-order difference of φ(t) returns the true δ⃛ (and δ̈ from
    φ″), for the exponential antagonistic spring with a moving σ; a linear-spring VSA equals
    the SEA law, lead included."""
    n = arm7.n
    rng = np.random.default_rng(3)
    k, a = rng.uniform(200, 900, n), 4.0
    vsa = VSA(motor_inertia=0.3, sigma=0.05, k=k, a=a, n=n)
    ctl = FlatnessController(arm7, vsa, poles=POLES)
    assert ctl._T == 1e-3                       # the lead is on by default, as for an SEA
    cd, cs = rng.normal(size=(4, n)) * 0.1, rng.normal(size=(4, n)) * 0.1
    t0, h = 0.3, 1e-2

    def poly(c, t, r):   # r-th derivative of Σ c_j t^j
        return sum(c[j] * np.prod(range(j - r + 1, j + 1)) * t ** (j - r)
                   for j in range(r, 4))

    def phi(t):
        return vsa.spring.partials(poly(cd, t, 0), poly(cs, t, 0))[0]
    c3 = np.array([1 / 8, -1, 13 / 8, 0, -13 / 8, 1, -1 / 8])   # 3rd derivative, O(h⁴)
    d3 = sum(cj * phi(t0 + (j - 3) * h) for j, cj in enumerate(c3)) / h ** 3
    d2 = np.tensordot([-1 / 560, 8 / 315, -1 / 5, 8 / 5, -205 / 72, 8 / 5, -1 / 5, 8 / 315,
                       -1 / 560], [phi(t0 + j * h) for j in range(-4, 5)], axes=1) / h ** 2
    sig = np.array([poly(cs, t0, r) for r in range(4)])
    terms = ctl._vsa_terms(poly(cd, t0, 0), poly(cd, t0, 1), sig)
    np.testing.assert_allclose(terms[2](d2), poly(cd, t0, 2), rtol=0, atol=1e-7)
    np.testing.assert_allclose(terms[3](d3, poly(cd, t0, 2)), poly(cd, t0, 3), rtol=0, atol=1e-5)
    from mbs_dynamics.control.actuators import LinearSpring
    lin = FlatnessController(arm7, VSA(LinearSpring(k), motor_inertia=0.3, motor_damping=0.1),
                             poles=POLES)
    sea = FlatnessController(arm7, stiffness=k, motor_inertia=0.3, motor_damping=0.1,
                             poles=POLES)
    x, des = rng.normal(size=(4, n)), rng.normal(size=(6, n))
    np.testing.assert_allclose(lin.command(*x, des), sea.command(*x, des), rtol=1e-12, atol=1e-9)
