"""Tests of mbs_dynamics.control.actuators: SEA formulas, VSA Newton inversion and implicit derivatives,
pluggable spring laws, configuration parsing and every error path.

Oracles: the SEA formulas of doc/math.md written out, the closed-form inverse of the
exponential antagonistic law, and finite differences along smooth analytic τ(t), σ(t), q(t).
"""

import numpy as np
import pytest

from mbs_dynamics.control.actuators import (
    ACTUATOR_PARAMETERS,
    SEA,
    VSA,
    ExponentialAntagonisticSpring,
    LinearSpring,
    Spring,
    SpringInversionError,
    actuator_from_params,
    flatten_params,
)

N = 4


def _random_inputs(seed=0, batch=None):
    rng = np.random.default_rng(seed)
    shape = () if batch is None else (batch,)
    qs = rng.normal(size=shape + (5, N))
    taus = rng.normal(size=shape + (3, N)) * np.array([30.0, 100.0, 1000.0])[:, None]
    return qs, taus


# ------------------------------------------------------------------------------------------ SEA
def test_sea_formulas():
    qs, taus = _random_inputs()
    K = np.array([1000.0, 2000.0, 3000.0, 4000.0])
    B = np.array([0.1, 0.2, 0.3, 0.4])
    D = np.array([0.0, 1.0, 2.0, 3.0])
    ref = SEA(K, B, D).reference(qs, taus)
    theta = qs[0] + taus[0] / K
    theta_d = qs[1] + taus[1] / K
    theta_dd = qs[2] + taus[2] / K
    np.testing.assert_allclose(ref[0], theta, rtol=1e-15)
    np.testing.assert_allclose(ref[1], theta_d, rtol=1e-15)
    np.testing.assert_allclose(ref[2], theta_dd, rtol=1e-15)
    np.testing.assert_allclose(ref[3], B * theta_dd + D * theta_d + taus[0], rtol=1e-14)


def test_sea_scalar_parameters_and_no_damping():
    qs, taus = _random_inputs(1)
    a = SEA(2500.0, 0.2).reference(qs, taus)
    b = SEA(np.full(N, 2500.0), np.full(N, 0.2), np.zeros(N), n=N).reference(qs, taus)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(a[3], 0.2 * (qs[2] + taus[2] / 2500.0) + taus[0], rtol=1e-14)


def test_sea_batch_and_out():
    qs, taus = _random_inputs(2, batch=6)
    sea = SEA(2000.0, 0.3, 0.5)
    batch = sea.reference(qs, taus)
    assert batch.shape == (6, 4, N)
    for i in range(6):
        np.testing.assert_array_equal(batch[i], sea.reference(qs[i], taus[i]))
    out = np.empty((6, 4, N))
    assert sea.reference(qs, taus, out=out) is out
    np.testing.assert_array_equal(out, batch)
    out1 = np.empty((4, N))
    assert sea.reference(qs[0], taus[0], out=out1) is out1
    np.testing.assert_array_equal(out1, batch[0])


@pytest.mark.parametrize("kwargs, match", [
    (dict(stiffness=0.0), "stiffness must be > 0"),
    (dict(stiffness=-1.0), "stiffness must be > 0"),
    (dict(stiffness=[1.0, 2.0, 0.0, 1.0]), "stiffness must be > 0"),
    (dict(stiffness=np.nan), "stiffness must be finite"),
    (dict(stiffness=[1.0, 2.0]), "list of 4 numbers"),
    (dict(stiffness="stiff"), "number or a list of numbers"),
    (dict(motor_inertia=-0.1), "motor_inertia must be >= 0"),
    (dict(motor_damping=-1.0), "motor_damping must be >= 0"),
    (dict(motor_damping=[np.inf] * 4), "motor_damping must be finite"),
])
def test_sea_bad_parameters(kwargs, match):
    args = dict(stiffness=1000.0, motor_inertia=0.1, motor_damping=None, n=N)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        SEA(**args)


def test_reference_shape_errors():
    qs, taus = _random_inputs()
    sea = SEA(1000.0, 0.1, n=N)
    with pytest.raises(ValueError, match="qs must have shape"):
        sea.reference(qs[:4], taus)
    with pytest.raises(ValueError, match="taus must have shape"):
        sea.reference(qs, taus[:2])
    with pytest.raises(ValueError, match="configured for 4"):
        sea.reference(qs[:, :3], taus[:, :3])
    with pytest.raises(ValueError, match="out must be"):
        sea.reference(qs, taus, out=np.empty((3, N)))
    with pytest.raises(ValueError, match="out must be"):
        sea.reference(qs, taus, out=np.empty((4, N), dtype=np.float32))


# ------------------------------------------------------------------------------------------ VSA
def test_exponential_spring_partials_by_finite_differences():
    sp = ExponentialAntagonisticSpring([800.0, 1200.0], [4.0, 7.0])
    d = np.array([0.03, -0.05])
    s = np.array([0.1, 0.2])
    h = 1e-6
    phi, f_d, f_s, f_dd, f_ds, f_ss = sp.partials(d, s)
    np.testing.assert_allclose(f_d, (sp.torque(d + h, s) - sp.torque(d - h, s)) / (2 * h),
                               rtol=1e-8)
    np.testing.assert_allclose(f_s, (sp.torque(d, s + h) - sp.torque(d, s - h)) / (2 * h),
                               rtol=1e-8)
    np.testing.assert_allclose(f_dd, (sp.stiffness(d + h, s) - sp.stiffness(d - h, s)) / (2 * h),
                               rtol=1e-6)
    np.testing.assert_allclose(f_ds, (sp.stiffness(d, s + h) - sp.stiffness(d, s - h)) / (2 * h),
                               rtol=1e-6)
    dphis = lambda sig: sp.partials(d, sig)[2]  # noqa: E731
    np.testing.assert_allclose(f_ss, (dphis(s + h) - dphis(s - h)) / (2 * h), rtol=1e-6)
    # the antagonistic pair: φ = f(σ + δ) − f(σ − δ), f(x) = k/(2a) exp(a x)
    k, a = sp.k, sp.a
    f = lambda x: k / (2 * a) * np.exp(a * x)  # noqa: E731
    np.testing.assert_allclose(phi, f(s + d) - f(s - d), rtol=1e-13)
    np.testing.assert_allclose(sp.stiffness(0.0 * d, s), k * np.exp(a * s), rtol=1e-15)


def test_newton_inversion_matches_closed_form():
    sp = ExponentialAntagonisticSpring(500.0, 8.0)
    tau = np.array([-80.0, -5.0, 0.0, 3.0, 60.0])
    sigma = np.array([0.05, 0.1, 0.0, 0.2, 0.15])
    closed = np.arcsinh(8.0 * tau / (500.0 * np.exp(8.0 * sigma))) / 8.0
    # the generic Newton with a poor start (zero) must land on it too
    class FromZero(ExponentialAntagonisticSpring):
        def guess(self, tau, sigma):
            return np.zeros_like(tau)

    d = FromZero(500.0, 8.0).invert(tau, sigma)
    np.testing.assert_allclose(d, closed, rtol=1e-13, atol=1e-16)
    np.testing.assert_allclose(sp.torque(d, sigma), tau, atol=1e-11)


def _smooth_signals(t, n=N):
    """Analytic q(t) (5 derivs), τ(t) (3 derivs), σ(t) (3 derivs) as functions of t (scalar)."""
    w = np.array([1.0, 1.7, 2.3, 0.6])[:n]
    ph = np.array([0.1, 0.5, 1.0, 2.0])[:n]
    # q = sin(w t + ph); derivatives w^k sin(w t + ph + k π/2)
    qs = np.stack([w ** k * np.sin(w * t + ph + k * np.pi / 2) for k in range(5)])
    # τ = 40 sin(3 t + ph) + 10
    taus = np.stack([40 * 3.0 ** k * np.sin(3 * t + ph + k * np.pi / 2) for k in range(3)])
    taus[0] += 10.0
    # σ = 0.1 + 0.05 sin(2 t + ph)
    sig = np.stack([0.05 * 2.0 ** k * np.sin(2 * t + ph + k * np.pi / 2) for k in range(3)])
    sig[0] += 0.1
    return qs, taus, sig


class CubicSpring(Spring):
    """A user law: φ(δ, σ) = σ δ + c δ³ (stiffness σ at zero deflection), no closed form used."""

    def __init__(self, c):
        self.c = c

    def partials(self, delta, sigma):
        delta = np.asarray(delta, dtype=float)
        sigma = np.asarray(sigma, dtype=float)
        c = self.c
        zero = np.zeros(np.broadcast_shapes(delta.shape, sigma.shape))
        return (sigma * delta + c * delta ** 3, sigma + 3 * c * delta ** 2, delta + zero,
                6 * c * delta + zero, 1.0 + zero, zero)


@pytest.mark.parametrize("spring, sigma_scale", [
    (ExponentialAntagonisticSpring(500.0, 8.0), 1.0),                 # compiled kernel path
    (CubicSpring(2.0e5), 1.0e4),                                      # generic NumPy path
])
def test_vsa_implicit_derivatives_by_finite_differences(spring, sigma_scale):
    """θ', θ'' from implicit differentiation equal d/dt of θ(t) computed pointwise by Newton."""
    vsa = VSA(spring, motor_inertia=[0.1, 0.2, 0.3, 0.4], motor_damping=0.5)

    def ref(t):
        qs, taus, sig = _smooth_signals(t)
        return vsa.reference(qs, taus, sigmas=sig * sigma_scale)

    h = 1e-4
    for t in (0.0, 0.37, 1.3, 2.9):
        r0 = ref(t)
        rp, rm = ref(t + h), ref(t - h)
        np.testing.assert_allclose(r0[1], (rp[0] - rm[0]) / (2 * h), rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(r0[2], (rp[1] - rm[1]) / (2 * h), rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(r0[2], (rp[0] - 2 * r0[0] + rm[0]) / h ** 2, rtol=1e-4,
                                   atol=1e-5)
        # the spring law holds and τ_m = B θ'' + D θ' + τ
        qs, taus, sig = _smooth_signals(t)
        np.testing.assert_allclose(spring.torque(r0[0] - qs[0], sig[0] * sigma_scale), taus[0],
                                   rtol=1e-11)
        np.testing.assert_allclose(r0[3], vsa.motor_inertia * r0[2] + 0.5 * r0[1] + taus[0],
                                   rtol=1e-13)


def test_vsa_with_linear_spring_equals_sea():
    qs, taus = _random_inputs(3, batch=5)
    sea = SEA(1500.0, 0.2, 0.3).reference(qs, taus)
    vsa = VSA(LinearSpring(1500.0), 0.2, 0.3).reference(qs, taus)
    np.testing.assert_allclose(vsa, sea, rtol=1e-13, atol=1e-13)


def test_vsa_kernel_and_generic_paths_agree_batch():
    class Generic(ExponentialAntagonisticSpring):
        pass  # a subclass takes the generic NumPy path

    qs, taus = _random_inputs(4, batch=7)
    rng = np.random.default_rng(5)
    sig = np.stack([rng.uniform(0, 0.2, (7, N)), rng.normal(size=(7, N)),
                    rng.normal(size=(7, N))], axis=1)
    fast = VSA(ExponentialAntagonisticSpring(700.0, 6.0), 0.2, 0.1)
    slow = VSA(Generic(700.0, 6.0), 0.2, 0.1)
    assert len(slow._params(N)) == 3 and len(fast._params(N)) == 5  # generic vs compiled
    out = np.empty((7, 4, N))
    assert fast.reference(qs, taus, out=out, sigmas=sig) is out
    np.testing.assert_allclose(out, slow.reference(qs, taus, sigmas=sig), rtol=1e-12, atol=1e-12)
    for i in range(7):
        np.testing.assert_allclose(fast.reference(qs[i], taus[i], sigmas=sig[i]), out[i],
                                   rtol=1e-15)


def test_per_joint_parameters_must_match_the_joint_count():
    qs, taus = _random_inputs(9)
    with pytest.raises(ValueError, match="3 per-joint values, the input 4 joints"):
        SEA([1000.0, 2000.0, 3000.0], 0.1).reference(qs, taus)
    with pytest.raises(ValueError, match="3 per-joint values"):
        VSA(ExponentialAntagonisticSpring(700.0, 6.0), [0.1, 0.2, 0.3]).reference(qs, taus)


def test_vsa_constant_sigma():
    qs, taus = _random_inputs(6)
    vsa = VSA(ExponentialAntagonisticSpring(700.0, 6.0), 0.2, sigma=0.1)
    sig = np.zeros((3, N))
    sig[0] = 0.1
    np.testing.assert_array_equal(vsa.reference(qs, taus), vsa.reference(qs, taus, sigmas=sig))


def test_vsa_inversion_failures():
    qs, taus = _random_inputs(7)

    class Softening(Spring):  # stiffness turns negative: not a valid spring for large |δ|
        def partials(self, delta, sigma):
            delta = np.asarray(delta, dtype=float)
            z = np.zeros_like(delta)
            return (100 * np.sin(delta), 100 * np.cos(delta), z, -100 * np.sin(delta), z, z)

    with pytest.raises(SpringInversionError, match="non-positive"):
        VSA(Softening(), 0.1).reference(qs, taus * 10)
    # the compiled path: a (finite) τ so large that the deflection overflows
    huge = taus.copy()
    huge[0, 2] = 1e308
    with pytest.raises(SpringInversionError, match="sample 0, joint 2"):
        VSA(ExponentialAntagonisticSpring(1.0, 50.0), 0.1).reference(qs, huge)

    class Slow(CubicSpring):
        def guess(self, tau, sigma):
            return np.full_like(tau, 1e3)

    with pytest.raises(SpringInversionError, match="did not converge in 2"):
        VSA(Slow(2e5), 0.1, max_iterations=2).reference(qs, taus,
                                                          sigmas=np.full((3, N), 1e4))


@pytest.mark.parametrize("kwargs, match", [
    (dict(spring="exp"), "spring must be a Spring"),
    (dict(tol=0.0), "tolerance must be > 0"),
    (dict(max_iterations=0), "max_iterations"),
    (dict(max_iterations=2.5), "max_iterations"),
    (dict(sigma=[0.1, 0.2]), "sigma must be one number or a list of 4"),
    (dict(motor_inertia=-1), "motor_inertia must be >= 0"),
])
def test_vsa_bad_parameters(kwargs, match):
    args = dict(spring=ExponentialAntagonisticSpring(1.0, 1.0), motor_inertia=0.1, n=N)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        VSA(**args)
    with pytest.raises(ValueError, match="k must be > 0"):
        ExponentialAntagonisticSpring(0.0, 1.0)
    with pytest.raises(ValueError, match="a must be > 0"):
        ExponentialAntagonisticSpring(1.0, -1.0)
    with pytest.raises(ValueError, match="stiffness must be > 0"):
        LinearSpring(0.0)


def test_vsa_sigmas_errors():
    qs, taus = _random_inputs(8)
    vsa = VSA(ExponentialAntagonisticSpring(700.0, 6.0), 0.2)
    with pytest.raises(ValueError, match="sigmas must have shape"):
        vsa.reference(qs, taus, sigmas=np.zeros((2, N)))
    with pytest.raises(ValueError, match="NaN"):
        vsa.reference(qs, taus, sigmas=np.full((3, N), np.nan))


# ------------------------------------------------------------------------------------ parameters
def test_parameter_table():
    for name, value in ACTUATOR_PARAMETERS.items():
        assert name.startswith("actuator.")
        default, text = value
        assert isinstance(text, str) and len(text) > 20
        assert default is not None
    for key in ("actuator.type", "actuator.stiffness", "actuator.motor_inertia",
                "actuator.motor_damping"):
        assert key in ACTUATOR_PARAMETERS
    assert ACTUATOR_PARAMETERS["actuator.type"][0] == "rigid"


def test_actuator_from_params_types_and_forms():
    assert actuator_from_params({}, N) is None
    assert actuator_from_params({"actuator.type": "rigid", "other": 1}, N) is None
    nested = actuator_from_params({"actuator": {"type": "sea", "stiffness": [1, 2, 3, 4],
                                                "motor_inertia": 0.5}}, N)
    dotted = actuator_from_params({"actuator.type": "sea", "actuator.stiffness": [1, 2, 3, 4],
                                   "actuator.motor_inertia": 0.5}, N)
    assert isinstance(nested, SEA)
    for attr in ("stiffness", "motor_inertia", "motor_damping"):
        np.testing.assert_array_equal(getattr(nested, attr), getattr(dotted, attr))
    np.testing.assert_array_equal(nested.stiffness, [1, 2, 3, 4])
    ros = {"feedforward_node": {"ros__parameters": {"actuator": {"type": "sea"}}}}
    sea = actuator_from_params(ros, N)
    np.testing.assert_array_equal(sea.stiffness, np.full(N, ACTUATOR_PARAMETERS[
        "actuator.stiffness"][0]))
    vsa = actuator_from_params({"actuator": {"type": "vsa", "vsa": {"k": 300.0, "a": 4.0,
                                                                   "sigma": [0, .1, .2, .3]}}}, N)
    assert isinstance(vsa, VSA) and isinstance(vsa.spring, ExponentialAntagonisticSpring)
    np.testing.assert_array_equal(vsa.sigma, [0, .1, .2, .3])
    np.testing.assert_array_equal(vsa.spring.k, np.full(N, 300.0))


def test_flatten_params():
    assert flatten_params({"a": {"b": {"c": 1}}, "d": 2}) == {"a.b.c": 1, "d": 2}
    assert flatten_params({"ros__parameters": {"x": 1}}) == {"x": 1}
    with pytest.raises(ValueError, match="mapping"):
        flatten_params([1, 2])


@pytest.mark.parametrize("params, match", [
    ({"actuator.type": "hydraulic"}, "actuator.type must be 'rigid', 'sea' or 'vsa'"),
    ({"actuator.stifness": 10}, r"unknown actuator parameter\(s\) \['actuator.stifness'\]"),
    ({"actuator": {"type": "sea", "stiffness": 0}}, "actuator.stiffness must be > 0"),
    ({"actuator": {"type": "sea", "stiffness": [1, 2]}}, "actuator.stiffness must be one number"),
    ({"actuator": {"type": "sea", "motor_inertia": -1}}, "actuator.motor_inertia must be >= 0"),
    ({"actuator": {"type": "sea", "motor_damping": "x"}}, "actuator.motor_damping must be a"),
    ({"actuator": {"type": "vsa", "vsa": {"model": "maccepa"}}}, "actuator.vsa.model"),
    ({"actuator": {"type": "vsa", "vsa": {"k": -1}}}, "actuator.vsa.k must be > 0"),
    ({"actuator": {"type": "vsa", "vsa": {"a": 0}}}, "actuator.vsa.a must be > 0"),
    ({"actuator": {"type": "vsa", "vsa": {"sigma": [1, 2]}}}, "actuator.vsa.sigma"),
    ({"actuator": {"type": "vsa", "vsa": {"tolerance": 0}}}, "actuator.vsa.tolerance"),
    ({"actuator": {"type": "vsa", "vsa": {"max_iterations": 0}}}, "max_iterations"),
    ({"actuator": {"type": "vsa", "vsa": {"max_iterations": True}}}, "max_iterations"),
    ("sea", "configuration must be a mapping"),
])
def test_actuator_from_params_errors(params, match):
    with pytest.raises(ValueError, match=match):
        actuator_from_params(params, N)


def test_vsa_vectorised_newton_matches_closed_form_batch():
    """The NumPy batch kernel (no numba) against the closed-form inverse of the exponential law
    and its derivatives from the module docstring, for per-sample σ(t) over a (N, 3, n) batch."""
    from mbs_dynamics.control import actuators
    rng = np.random.default_rng(11)
    Nb, n = 300, N
    qs = rng.normal(size=(Nb, 5, n))
    taus = rng.normal(scale=50.0, size=(Nb, 3, n))
    sig = rng.normal(scale=0.1, size=(Nb, 3, n))
    k, a = np.array([700.0, 800.0, 900.0, 1000.0]), 6.0
    out = VSA(ExponentialAntagonisticSpring(k, a), 0.2, 0.1).reference(qs, taus, sigmas=sig)
    e = k * np.exp(a * sig[:, 0])
    d = np.arcsinh(a * taus[:, 0] / e) / a
    np.testing.assert_allclose(out[:, 0] - qs[:, 0], d, rtol=1e-12, atol=1e-15)
    phi = e * np.sinh(a * d) / a
    f_d = e * np.cosh(a * d)
    d1 = (taus[:, 1] - a * phi * sig[:, 1]) / f_d
    np.testing.assert_allclose(out[:, 1] - qs[:, 1], d1, rtol=1e-10, atol=1e-12)
    d2 = (taus[:, 2] - a * e * np.sinh(a * d) * d1 ** 2 - 2 * a * f_d * d1 * sig[:, 1]
          - a * a * phi * sig[:, 1] ** 2 - a * phi * sig[:, 2]) / f_d
    np.testing.assert_allclose(out[:, 2] - qs[:, 2], d2, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(out[:, 3], 0.2 * out[:, 2] + 0.1 * out[:, 1] + taus[:, 0],
                               rtol=1e-12, atol=1e-12)
    assert not hasattr(actuators, "njit")
    # failure index: the first (sample, joint) whose deflection overflows, no NumPy warning
    import warnings
    bad = taus.copy()
    bad[7, 0, 3] = 1e308
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(SpringInversionError, match="sample 7, joint 3"):
            VSA(ExponentialAntagonisticSpring(1.0, 50.0), 0.1).reference(qs, bad)
