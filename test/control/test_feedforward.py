"""API tests of mbs_dynamics.control.feedforward (the physics check is test_feedforward_mujoco.py).

Oracles: Pinocchio's RNEA for τ (and central differences of it along the trajectory for τ′),
the SEA formulas of doc/math.md, the closed-form inverse of the exponential spring law.
"""

from pathlib import Path

import numpy as np
import pytest

import mbs_dynamics as mbs
from mbs_dynamics.control.actuators import LinearSpring
from mbs_dynamics.control.feedforward import feedforward, sea_feedforward, vsa_feedforward
from mbs_dynamics.control.trajectory import Trajectory

URDF = Path(mbs.__file__).parent / "data" / "robots" / "arm7.urdf"
TRAJ = Path(mbs.__file__).parent / "data" / "trajectories" / "arm7_example.yaml"


@pytest.fixture(scope="module")
def setup():
    robot = mbs.load_urdf(URDF)
    traj = Trajectory.load(TRAJ).reorder(robot.joint_names)
    ts = np.linspace(0.05, 4.4, 40)
    return robot, traj, ts, traj.sample_many(ts)


def test_rigid_tau_matches_pinocchio(setup):
    pin = pytest.importorskip("pinocchio")
    robot, traj, ts, qs = setup
    model = pin.buildModelFromUrdf(str(URDF))
    data = model.createData()
    ff = feedforward(robot, qs)
    for i in range(len(ts)):
        ref = pin.rnea(model, data, qs[i, 0], qs[i, 1], qs[i, 2])
        np.testing.assert_allclose(ff.tau[i], ref, rtol=1e-10, atol=1e-10)
    np.testing.assert_array_equal(ff.theta, qs[:, 0])
    np.testing.assert_array_equal(ff.tau_motor, ff.tau)
    # τ′ against central differences of Pinocchio's τ along the trajectory
    h = 1e-5
    for t in ts[::8]:
        a, b = traj.sample(t + h), traj.sample(t - h)
        fd = (pin.rnea(model, data, a[0], a[1], a[2]) - pin.rnea(model, data, b[0], b[1], b[2]))
        np.testing.assert_allclose(feedforward(robot, traj.sample(t)).tau_dot, fd / (2 * h),
                                   rtol=1e-5, atol=1e-5)


def test_sea_feedforward_single_and_batch(setup):
    robot, traj, ts, qs = setup
    K = np.array([3000, 3000, 2000, 2000, 1000, 1000, 1000.0])
    B = np.linspace(0.05, 0.4, 7)
    D = 0.3
    batch = sea_feedforward(robot, qs, K, B, D)
    assert batch.theta.shape == (len(ts), 7)
    for i in (0, 17, 39):
        one = sea_feedforward(robot, qs[i], K, B, D)
        for name in ("theta", "theta_dot", "theta_ddot", "tau_motor", "tau", "tau_dot",
                     "tau_ddot"):
            assert getattr(one, name).shape == (7,)
            np.testing.assert_allclose(getattr(one, name), getattr(batch, name)[i], rtol=1e-13,
                                       atol=1e-12)
        # doc/math.md: θ = q + K⁻¹τ, θ″ = q″ + K⁻¹τ″, τ_m = B θ″ + τ (+ D θ′)
        np.testing.assert_allclose(one.theta, qs[i, 0] + one.tau / K, rtol=1e-15)
        np.testing.assert_allclose(one.theta_dot, qs[i, 1] + one.tau_dot / K, rtol=1e-14)
        np.testing.assert_allclose(one.tau_motor, B * one.theta_ddot + D * one.theta_dot
                                   + one.tau, rtol=1e-13)
    np.testing.assert_array_equal(batch.stiffness[3], K)
    scalar = sea_feedforward(robot, qs, 2000.0, 0.2)
    np.testing.assert_allclose(scalar.theta, qs[:, 0] + scalar.tau / 2000.0, rtol=1e-15)


@pytest.mark.parametrize("kwargs, match", [
    (dict(stiffness=0.0), "stiffness must be > 0"),
    (dict(stiffness=[1.0] * 6), "list of 7"),
    (dict(motor_inertia=-1.0), "motor_inertia"),
    (dict(qs=np.zeros((4, 7))), r"qs must have shape \(5, 7\)"),
    (dict(qs=np.zeros((5, 6))), r"qs must have shape"),
])
def test_sea_feedforward_errors(setup, kwargs, match):
    robot, _, _, qs = setup
    args = dict(qs=qs[0], stiffness=1000.0, motor_inertia=0.1)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        sea_feedforward(robot, **args)


def test_sea_feedforward_rejects_nan(setup):
    robot, _, _, qs = setup
    bad = qs[0].copy()
    bad[0, 3] = np.nan
    with pytest.raises(ValueError, match="qs"):
        sea_feedforward(robot, bad, 1000.0, 0.1)


def test_vsa_feedforward_sigma_forms(setup):
    robot, _, ts, qs = setup
    k, a = 800.0, 6.0
    const = vsa_feedforward(robot, qs, 0.1, 0.2, k=k, a=a)
    # the spring law holds: θ − q = asinh(a τ / (k e^{aσ})) / a
    delta = np.arcsinh(a * const.tau / (k * np.exp(a * 0.1))) / a
    np.testing.assert_allclose(const.theta - qs[:, 0], delta, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(const.stiffness, k * np.exp(a * 0.1) * np.cosh(a * delta),
                               rtol=1e-12)
    assert np.all(const.sigma == 0.1) and np.all(const.sigma_dot == 0)
    sig = np.zeros((3, 7))
    sig[0] = 0.1
    same = vsa_feedforward(robot, qs, sig, 0.2, k=k, a=a)
    np.testing.assert_allclose(same.theta_ddot, const.theta_ddot, rtol=1e-14, atol=1e-14)
    varying = np.broadcast_to(sig, (len(ts), 3, 7)).copy()
    varying[:, 1] = 0.3  # σ′ ≠ 0 changes θ′
    moved = vsa_feedforward(robot, qs, varying, 0.2, k=k, a=a)
    assert np.abs(moved.theta_dot - const.theta_dot).max() > 1e-4
    single = vsa_feedforward(robot, qs[5], varying[5], 0.2, k=k, a=a)
    np.testing.assert_allclose(single.theta_dot, moved.theta_dot[5], rtol=1e-14)
    # a linear spring as VSA law reproduces the SEA feedforward
    lin = vsa_feedforward(robot, qs, 0.0, 0.2, spring=LinearSpring(1500.0))
    sea = sea_feedforward(robot, qs, 1500.0, 0.2)
    np.testing.assert_allclose(lin.tau_motor, sea.tau_motor, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="spring must be a Spring"):
        vsa_feedforward(robot, qs, 0.0, 0.2, spring="linear")
    with pytest.raises(ValueError, match="sigmas is only meaningful"):
        from mbs_dynamics.control.actuators import SEA
        feedforward(robot, qs, SEA(1000.0, 0.1), sigmas=sig)


def test_vsa_and_vsa_feedforward_take_the_same_arguments(setup):
    """``VSA(**kw)`` and ``vsa_feedforward(robot, qs, **kw)`` accept the same keywords and agree;
    the result satisfies the spring law's closed-form inverse (independent of the Newton code)."""
    from mbs_dynamics.control.actuators import VSA, ExponentialAntagonisticSpring
    robot, _, _, qs = setup
    kw = dict(sigma=0.1, motor_inertia=0.2, motor_damping=0.05, k=800.0, a=6.0, tol=1e-12,
              max_iterations=30)
    a = vsa_feedforward(robot, qs, **kw)
    b = feedforward(robot, qs, VSA(**kw, n=robot.n))
    c = feedforward(robot, qs, mbs.VSA(ExponentialAntagonisticSpring(800.0, 6.0), 0.2, 0.05,
                                       sigma=0.1))  # the old positional form still works
    for r in (b, c):
        np.testing.assert_allclose(r.tau_motor, a.tau_motor, rtol=1e-14, atol=1e-14)
        np.testing.assert_allclose(r.theta_ddot, a.theta_ddot, rtol=1e-14, atol=1e-14)
    delta = np.arcsinh(6.0 * a.tau / (800.0 * np.exp(6.0 * 0.1))) / 6.0
    np.testing.assert_allclose(a.theta - qs[:, 0], delta, rtol=1e-12, atol=1e-15)
    # defaults: the same spring (k = 1000, a = 5) in both
    d1 = vsa_feedforward(robot, qs, sigma=0.0, motor_inertia=0.2)
    d2 = feedforward(robot, qs, VSA(motor_inertia=0.2))
    np.testing.assert_allclose(d1.theta, d2.theta, rtol=1e-14, atol=1e-14)
    delta = np.arcsinh(5.0 * d1.tau / 1000.0) / 5.0
    np.testing.assert_allclose(d1.theta - qs[:, 0], delta, rtol=1e-12, atol=1e-15)
    # the same errors from both
    for call in (lambda **k: VSA(**k), lambda **k: vsa_feedforward(robot, qs, **k)):
        with pytest.raises(ValueError, match="either spring or k, a"):
            call(motor_inertia=0.2, spring=LinearSpring(100.0), k=10.0)
        with pytest.raises(TypeError, match="motor_inertia"):
            call(sigma=0.1, k=10.0)
        with pytest.raises(ValueError, match="k must be > 0"):
            call(motor_inertia=0.2, k=-1.0)


def test_floating_base_feedforward_uses_the_base_motion_and_contact_jets():
    """A quadruped with SEA joints: θ = q + K⁻¹τ, θ″ = q″ + K⁻¹τ″ with τ, τ′, τ″ the joint rows of
    the floating-base derivatives (checked against Pinocchio in test_floating_base), the base
    wrench jet reported apart; a contact-wrench jet on a foot changes the joints' feedforward."""
    import mbs_dynamics as mbs
    from mbs_dynamics import data
    from mbs_dynamics.control.feedforward import sea_feedforward
    robot = mbs.load_urdf(data.robot("quad12"), floating_base=True)
    rng = np.random.default_rng(7)
    quat = rng.normal(size=4)
    q = np.r_[0, 0, 0.4, quat / np.linalg.norm(quat), np.tile([0.1, 0.8, -1.6], 4)]
    vs = rng.normal(size=(4, robot.nv)) * 0.3
    K, B = 800.0, 0.05
    ff = sea_feedforward(robot, (q, vs), K, B)
    full = robot.torque_derivatives((q, vs))
    np.testing.assert_array_equal(ff.tau, full[0, 6:])
    np.testing.assert_array_equal(ff.base_wrench, full[:, :6])
    np.testing.assert_allclose(ff.theta, q[7:] + full[0, 6:] / K, rtol=1e-15, atol=1e-15)
    np.testing.assert_allclose(ff.theta_ddot, vs[1, 6:] + full[2, 6:] / K, rtol=1e-14,
                               atol=1e-14)
    np.testing.assert_allclose(ff.tau_motor, B * ff.theta_ddot + ff.tau, rtol=1e-14, atol=1e-14)
    # stance: a foot contact wrench jet enters τ, τ′, τ″
    jet = np.array([[0, 0, 40.0, 0, 0, 0], [0, 0, 5.0, 0, 0, 0], [0, 0, -2.0, 0, 0, 0]])  # (f, m)
    fc = sea_feedforward(robot, (q, vs), K, B, f_ext={"LF_foot": jet})
    np.testing.assert_array_equal(
        fc.tau_ddot, robot.torque_derivatives((q, vs), f_ext={"LF_foot": jet})[2, 6:])
    assert np.abs(fc.tau_ddot - ff.tau_ddot).max() > 1e-3
    # batches
    Q, VS = np.stack([q, q]), np.stack([vs, vs])
    np.testing.assert_array_equal(sea_feedforward(robot, (Q, VS), K, B).theta[1], ff.theta)
    with pytest.raises(ValueError, match="floating-base robot needs qs"):
        sea_feedforward(robot, np.zeros((5, robot.n)), K, B)
    with pytest.raises(ValueError, match=r"\(q, vs\) must have shapes"):
        sea_feedforward(robot, (q, vs[:3]), K, B)
