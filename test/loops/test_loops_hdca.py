"""HDCA (seed 002) and the closed-loop simulation (issue 19).

Oracles: the compiled ABA (trees), Pinocchio's M, kinetic/potential energy and LOCAL frame
Jacobians of the spanning tree (Hamilton's equations (6)–(8) of seed 002 written here), the
independent Lagrange/KKT solution of test_loops_dynamics.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import mbs_dynamics as mbs
from mbs_dynamics.loops.hdca import HDCA
from mbs_dynamics.loops.simulate import simulate_loops
from test_loops_kinematics import D, NAMES, PinLoops, load

try:
    import pinocchio as pin
except ImportError:  # skip per test, not per module (launch_testing)
    pin = None
pytestmark = pytest.mark.skipif(pin is None, reason="pinocchio is not installed")


def rel(a, b):
    return np.abs(np.asarray(a) - b).max() / max(1.0, np.abs(b).max())


@pytest.mark.parametrize("urdf", ["arm7.urdf", "quad12.urdf"])
def test_hdca_equals_aba_on_trees(urdf):
    import os
    path = os.path.join(os.path.dirname(mbs.__file__), "data", "robots", urdf)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = mbs.load_urdf(path)
    rng = np.random.default_rng(0)
    for _ in range(3):
        q, qd, tau = rng.standard_normal((3, r.n))
        a = r.forward_dynamics(q, qd, tau)
        assert rel(r.forward_dynamics(q, qd, tau, method="dca"), a) < 1e-12
    Q = rng.standard_normal((2, r.n))
    assert rel(r.forward_dynamics(Q, Q, Q, method="dca"), r.forward_dynamics(Q, Q, Q)) < 1e-12
    with pytest.raises(ValueError, match="method must be"):
        r.forward_dynamics(q, qd, tau, method="crba")


@pytest.fixture(scope="module", params=NAMES)
def mech(request):
    r, u, loops = load(request.param)
    return request.param, r, PinLoops(u, loops)


def test_hdca_forward_dynamics_on_loops(mech):
    name, r, P = mech
    r = r.copy()
    rng = np.random.default_rng(11)
    q = r.q_assembled[r.actuated_index] + 0.1 * rng.standard_normal(r.n)
    qd, tau = rng.standard_normal((2, r.n))
    a = r.forward_dynamics(q, qd, tau, method="dca")
    assert rel(a, r.forward_dynamics(q, qd, tau, method="lagrange")) < 1e-10
    assert rel(r.inverse_dynamics(q, qd, a), tau) < 1e-10  # forward → inverse round trip


def test_hamilton_equations_against_pinocchio(mech):
    """Velocity pass (eq. 8) and momentum derivative (eq. 7) against Pinocchio's M, energies
    and the constraint Jacobian built in the test."""
    name, r, P = mech
    rng = np.random.default_rng(12)
    X = r.copy().expand(np.stack([r.q_assembled[r.actuated_index] + 0.05,
                                  rng.standard_normal(r.n)]))
    q, v = X
    K = P.jacobian(q)
    M = pin.crba(P.model, P.data, q)
    M = np.triu(M) + np.triu(M, 1).T
    s = rng.standard_normal(K.shape[0])
    Pm = M @ v - K.T @ s  # augmented momenta with impulses s (eq. 6)
    h = HDCA(r.model, r._kin)
    qd, sig, st = h.velocity(q, Pm)
    # the divide-and-conquer velocities of the 20 g joint blocks (1e-4 kg m²) of the delta and
    # the welded four-bar are sums of terms ~M⁻¹σ ≈ 1e4 times larger (measured: 1.5e-9; a
    # dense KKT solve of the same system: 7e-15) — DCA's known loss of digits with light bodies
    assert rel(qd, v) < (1e-8 if name in ("delta", "spatial_fourbar_weld") else 1e-10)
    sig = np.concatenate(sig)
    assert rel(K.T @ sig, K.T @ s) < 1e-9  # σ unique up to the redundant directions
    tau = rng.standard_normal(r.n_full)
    Pd = h.momentum_rate(st, qd, [sig[sl] for sl in r.loop_rows.values()], tau)
    # Ṗ = τ + ∂L/∂q − K̇ᵀσ (eq. 7), ∂L/∂q and K̇ by 9-point differences of Pinocchio quantities
    e = 1e-4

    def L(x):
        return (pin.computeKineticEnergy(P.model, P.data, x, v)
                - pin.computePotentialEnergy(P.model, P.data, x))

    dL = np.array([sum(c * L(q + (i - 4) * e * u) for i, c in enumerate(D[1])) / e
                   for u in np.eye(r.n_full)])
    Kd = sum(c * P.jacobian(q + (i - 4) * e * v) for i, c in enumerate(D[1])) / e
    assert rel(Pd, tau + dL - Kd.T @ sig) < 1e-8


def test_simulation_drift_and_energy():
    r, _, _ = load("planar_fourbar")
    for method in ("hdca", "lagrange"):
        res = simulate_loops(r, 10.0, method=method, dt=0.5, rtol=1e-8, atol=1e-8)
        assert res.q.shape == (21, r.n_full)
        assert res.residual.max() < 1e-8  # projection at every output instant
        assert res.velocity_residual.max() < 1e-8
        assert np.abs(res.energy - res.energy[0]).max() < 1e-5 * max(1, abs(res.energy[0]))
    # without projection HDCA keeps the velocity constraints: the position drift stays small
    res = simulate_loops(r, 2.0, method="hdca", dt=0.5, projection=False, rtol=1e-9, atol=1e-9)
    assert res.residual.max() < 1e-6
    with pytest.raises(ValueError, match="method must be"):
        simulate_loops(r, 1.0, method="dca")
    with pytest.raises(ValueError, match="q0 has shape"):
        simulate_loops(r, 1.0, q0=[0.0, 1.0])
    with pytest.raises(ValueError, match="qd0 contains NaN"):
        simulate_loops(r, 1.0, qd0=[np.nan])
    with pytest.raises(ValueError, match="tau must give"):
        simulate_loops(r, 0.1, dt=0.05, tau=lambda t, q, v: [np.nan])
    # Baumgarte-stabilised Lagrange without projection also holds the closure
    res = simulate_loops(r, 2.0, method="lagrange", dt=0.5, projection=False,
                         baumgarte=(20.0, 20.0), rtol=1e-9, atol=1e-9)
    assert res.residual.max() < 1e-6


def test_simulate_entry_point():
    r, _, _ = load("planar_fourbar")
    res = mbs.simulate(r, lambda t, s: np.zeros(r.n), 0.5, 0.25, method="lagrange")
    assert res.residual.max() < 1e-8 and res.q.shape == (3, r.n_full)


def test_simulated_motion_matches_mujoco_equality_constraint():
    """MuJoCo: the same four-bar as a tree of hinges closed by an equality ``connect`` between
    two sites (stiff solref, RK4 at 0.1 ms); from the same assembled rest state, 1 s."""
    mujoco = pytest.importorskip("mujoco")
    r, _, _ = load("planar_fourbar")

    def body(name, pos, pitch, L, m, inner=""):
        Il = m * L * L / 12 + 0.002
        return (f'<body name="{name}" pos="{pos}" euler="0 {pitch} 0"><joint name="j_{name}" '
                f'type="hinge" axis="0 1 0"/><inertial pos="{L / 2} 0 0" mass="{m}" '
                f'diaginertia="0.003 {Il} {Il}"/>{inner}</body>')

    coupler = body("coupler", "0.3 0 0", -1.2, 0.8, 1.3, '<site name="sa" pos="0.8 0 0"/>')
    rocker = body("rocker", "0.7 0 0", -1.9, 0.6, 0.8,
                  '<site name="sb" pos="0.6 0 0" euler="0.3 0.2 0.1"/>')
    xml = ('<mujoco><option gravity="0 0 -9.81" timestep="1e-4" integrator="RK4"><flag '
           'contact="disable"/></option><compiler angle="radian"/><worldbody>'
           f'{body("crank", "0 0 0", 0, 0.3, 1.0, coupler)}{rocker}</worldbody><equality>'
           '<connect site1="sa" site2="sb" solref="0.0005 1"/></equality></mujoco>')
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    order = [r.full_joint_names.index(f"j_{b}") for b in ("crank", "coupler", "rocker")]
    d.qpos[:] = r.q_assembled[order]
    out = []
    for _ in range(4):
        for _ in range(2500):
            mujoco.mj_step(m, d)
        out.append(d.qpos.copy())
    for method in ("hdca", "lagrange"):
        res = simulate_loops(r, 1.0, method=method, dt=0.25, rtol=1e-10, atol=1e-10)
        assert np.abs(np.array(out) - res.q[1:][:, order]).max() < 1e-5, method
