"""Simulation of closed loops on a floating base (issue 19, item 4): ``mbs.simulate`` /
``simulate_loops`` on a FloatingClosedLoopRobot with method="lagrange" and "hdca".

Oracles, never this package's numbers: Pinocchio's ``constraintDynamics`` (CONTACT_3D/6D on the
free-flyer spanning tree) and the KKT solve of test_loops_hdca_bases (Pinocchio's M, nle, LOCAL
frame Jacobians and accelerations) for the accelerations at sampled states; Pinocchio's M, nle
and the loop Jacobian of the test (PinLoops-style, 9-point differences) for the momentum rate of
Hamilton's equations with a floating base; MuJoCo with ``connect`` equality constraints (stiff
solref, free joint) for the simulated motion; physics — a free-floating mechanism without
gravity keeps its total linear and angular momentum and its energy; with gravity the energy,
p(t) = p₀ + m g t and L(t) = L₀ + m c₀ × g t + p₀ × g t²/2 (c₀, p₀ from Pinocchio).
"""
from __future__ import annotations

import warnings
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import mbs_dynamics as mbs
import loops_mechanisms as lm
from mbs_dynamics.loops import lagrange
from mbs_dynamics.loops.simulate import simulate_loops
from test_loops_hdca_bases import BASE_INERTIA, _kkt, constraint_dynamics
from test_loops_kinematics import D, NAMES, rpy_pose

try:
    import pinocchio as pin
except ImportError:  # skip per test, not per module (launch_testing)
    pin = None
pytestmark = pytest.mark.skipif(pin is None, reason="pinocchio is not installed")


def rel(a, b):
    return np.abs(np.asarray(a) - b).max() / max(1.0, np.abs(b).max())


def load(name, gravity=True):
    u, loops, act = lm.ALL[name]()
    u = u.replace('<link name="base"/>', BASE_INERTIA)
    kw = {} if gravity else {"gravity": (0.0, 0.0, 0.0)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", mbs.URDFWarning)
        r = mbs.load_urdf(u, loops=loops, actuated=act, floating_base=True, **kw)
    return r, u, loops


def pin_model(u, gravity=True):
    pm = pin.buildModelFromXML(u, pin.JointModelFreeFlyer())
    if not gravity:
        pm.gravity.linear[:] = 0.0
    return pm


def start(r, seed=0, spin=1.0):
    rng = np.random.default_rng(seed)
    quat = rng.normal(size=4)
    q0 = np.r_[rng.normal(size=3) * 0.3, quat / np.linalg.norm(quat),
               r.q_assembled[r.actuated_index]]
    qd0 = np.r_[0.3, -0.2, 0.1, spin * np.array([1.0, 2.0, -1.5]), rng.standard_normal(r.n)]
    return q0, qd0


def full_state(r, q, qd):
    X = r.copy().expand(np.stack([q[7:], qd[6:]]))
    return np.r_[q[:7], X[0]], np.r_[qd[:6], X[1]]


# ---------------------------------------------------------------- the right-hand sides
@pytest.mark.parametrize("name", NAMES)
def test_acceleration_against_pinocchio(name):
    """The Lagrange right-hand side (Baumgarte terms vanish on the manifold) at sampled full
    states: Pinocchio's constraintDynamics where its types apply, the KKT oracle everywhere."""
    r, u, loops = load(name)
    pm = pin_model(u)
    rng = np.random.default_rng(7)
    for s in range(3):
        q0, qd0 = start(r, s)
        q0[7:] += 0.1 * rng.standard_normal(r.n)
        qf, vf = full_state(r, q0, qd0)
        tf = np.zeros(6 + r.n_full)
        tf[6 + r.actuated_index] = rng.standard_normal(r.n)
        a = lagrange.acceleration(r, qf, vf, tf, alpha=5.0, beta=5.0)
        af, K = _kkt(r, loops, pm, qf, vf, tf)
        assert rel(a, af) < 1e-10
        if all(lp["type"] != "revolute" for lp in loops):
            assert rel(a, constraint_dynamics(pm, loops, qf, vf, tf)) < 1e-10


@pytest.mark.parametrize("name", ["planar_fourbar", "spatial_fourbar", "two_loop_planar",
                                  "spatial_fourbar_weld"])
def test_hdca_momentum_rate_with_floating_base(name):
    """Hamilton's equations (seed 002 eq. 6–8) with the base in the free-flyer layout: the
    velocity pass recovers v from P = M v − Kᵀσ, and Ṗ = τ − nle + Ṁv − K̇ᵀσ (P differentiated
    along the motion; Ṁ, K̇ by 9-point differences of Pinocchio's M and of the loop Jacobian
    written in test_loops_hdca_bases, which do not depend on the base pose)."""
    from mbs_dynamics.loops.simulate import _hdca
    r, u, loops = load(name)
    pm = pin_model(u)
    pd = pm.createData()
    q0, qd0 = start(r, 3)
    qf, vf = full_state(r, q0, qd0)
    rng = np.random.default_rng(5)
    tf = rng.standard_normal(6 + r.n_full)
    K = _kkt(r, loops, pm, qf, vf, tf)[1]
    s = rng.standard_normal(K.shape[0])

    def M(x):
        m = pin.crba(pm, pd, x)
        return np.triu(m) + np.triu(m, 1).T

    P = M(qf) @ vf - K.T @ s
    h = _hdca(r)
    v, sig, st = h.velocity(qf, P)
    # DCA's velocity pass with the light joint blocks (50 g / 1e-4 kg m² u-joint, 20 g ball
    # links) loses digits (measured ≤ 8e-10; test_loops_hdca: the same on a fixed base)
    assert rel(v, vf) < 1e-8
    sig = np.concatenate(sig)
    assert rel(K.T @ sig, K.T @ s) < 1e-8
    Pd = h.momentum_rate(st, v, [sig[sl] for sl in r.loop_rows.values()], tf)
    e = 1e-4
    pts = [pin.integrate(pm, qf, (i - 4) * e * vf) for i in range(9)]
    Md = sum(c * M(x) for c, x in zip(D[1], pts)) / e
    Kd = sum(c * _kkt(r, loops, pm, x, vf, tf)[1] for c, x in zip(D[1], pts)) / e
    nle = pin.nonLinearEffects(pm, pd, qf, vf)
    assert rel(Pd, tf - nle + Md @ vf - Kd.T @ sig) < 1e-9  # measured ≤ 3e-11


# ---------------------------------------------------------------- physics over time
@pytest.mark.parametrize("method", ["lagrange", "hdca"])
def test_free_floating_loop_conserves_momentum_and_energy(method):
    """No gravity, no torque: total linear and angular momentum (world) and energy constant;
    10 s with projection: position drift below 1e-8, velocity constraints too."""
    r, u, loops = load("spatial_fourbar", gravity=False)
    q0, qd0 = start(r, 1)
    res = simulate_loops(r, 10.0, method=method, q0=q0, qd0=qd0, dt=0.5, rtol=1e-9, atol=1e-9)
    assert res.q.shape == (21, 7 + r.n_full) and res.qd.shape == (21, 6 + r.n_full)
    assert res.residual.max() < 1e-8 and res.velocity_residual.max() < 1e-8
    assert np.abs(np.linalg.norm(res.q[:, 3:7], axis=1) - 1).max() < 1e-14
    assert np.abs(res.energy - res.energy[0]).max() < 1e-7 * abs(res.energy[0])
    mom = res.meta["momentum"]
    assert np.abs(mom - mom[0]).max() < 1e-7 * np.abs(mom[0]).max()
    # the momentum the oracle sees at the start and the end (Pinocchio's centroidal momentum
    # moved to the world origin) is the same
    pm = pin_model(u, gravity=False)
    pd = pm.createData()
    L = []
    for k in (0, -1):
        hg = pin.computeCentroidalMomentum(pm, pd, res.q[k], res.qd[k])
        c = pd.com[0]
        L.append(np.r_[hg.linear, hg.angular + np.cross(c, hg.linear)])
    assert rel(L[1], L[0]) < 1e-7 and rel(L[0], mom[0]) < 1e-12
    assert res.meta["charts"] > 20  # the base turned by several chart angles


def test_gravity_energy_and_momentum_balance():
    """With gravity: energy constant, p(t) = p₀ + m g t, L(t) = L₀ + m c₀×g t + p₀×g t²/2 about
    the world origin (c₀, p₀, m from Pinocchio)."""
    r, u, loops = load("planar_fourbar")
    q0, qd0 = start(r, 2)
    res = simulate_loops(r, 2.0, method="lagrange", q0=q0, qd0=qd0, dt=0.25, rtol=1e-10,
                         atol=1e-10)
    assert res.residual.max() < 1e-8
    assert np.abs(res.energy - res.energy[0]).max() < 1e-7 * max(1.0, abs(res.energy[0]))
    pm = pin_model(u)
    pd = pm.createData()
    m = pin.computeTotalMass(pm)
    c0 = pin.centerOfMass(pm, pd, res.q[0], res.qd[0])
    p0 = m * pd.vcom[0]
    L0 = pin.computeCentroidalMomentum(pm, pd, res.q[0], res.qd[0]).angular + np.cross(c0, p0)
    g = np.array([0.0, 0.0, -9.81])
    t = res.t[:, None]
    mom = res.meta["momentum"]
    assert np.abs(mom[:, :3] - (p0 + m * g * t)).max() < 1e-7
    L = L0 + m * np.cross(c0, g) * t + np.cross(p0, g) * t ** 2 / 2
    assert np.abs(mom[:, 3:] - L).max() < 1e-7


def test_internal_torque_keeps_momentum_and_both_methods_agree():
    """A constant motor torque is internal: without gravity the momentum stays; HDCA and the
    Lagrange baseline give the same motion."""
    r, _, _ = load("planar_fourbar", gravity=False)
    q0, qd0 = start(r, 4, spin=0.3)
    out = {}
    for method in ("lagrange", "hdca"):
        res = simulate_loops(r, 1.0, method=method, q0=q0, qd0=qd0, tau=[0.7], dt=0.25,
                             rtol=1e-11, atol=1e-11)
        mom = res.meta["momentum"]
        assert np.abs(mom - mom[0]).max() < 1e-8
        assert res.energy[-1] - res.energy[0] > 1e-3  # the motor did work
        out[method] = res
    assert np.abs(out["hdca"].q - out["lagrange"].q).max() < 1e-7
    assert np.abs(out["hdca"].qd - out["lagrange"].qd).max() < 1e-6


def test_without_projection_stabilisation():
    """HDCA keeps the velocity constraints by construction, Baumgarte holds the closure: both
    without projection stay near the manifold over 2 s."""
    r, _, _ = load("planar_fourbar")
    q0, qd0 = start(r, 5)
    res = simulate_loops(r, 2.0, method="hdca", q0=q0, qd0=qd0, dt=0.5, projection=False,
                         rtol=1e-10, atol=1e-10)
    assert res.residual.max() < 1e-6
    res = simulate_loops(r, 2.0, method="lagrange", q0=q0, qd0=qd0, dt=0.5, projection=False,
                         baumgarte=(20.0, 20.0), rtol=1e-10, atol=1e-10)
    assert res.residual.max() < 1e-6


# ---------------------------------------------------------------- MuJoCo
def _quat_wxyz(rpy):
    R = rpy_pose({"xyz": [0, 0, 0], "rpy": list(rpy)}).rotation
    x, y, z, w = (float(c) for c in pin.Quaternion(R).coeffs())
    return f"{w!r} {x!r} {y!r} {z!r}"


def mjcf(urdf, loops, timestep=1e-4):
    """MJCF of the URDF tree (text parsed here) with a free joint at the base, the loops as
    ``connect`` / ``weld`` equalities between sites (a weld joins the site frames), no
    gravity."""
    root = ET.fromstring(urdf)
    links = {ln.get("name"): ln for ln in root.findall("link")}
    kids = {}
    for j in root.findall("joint"):
        kids.setdefault(j.find("parent").get("link"), []).append(j)
    sites = {}
    for t, lp in enumerate(loops):
        for s in "ab":
            o = lp.get(f"origin_{s}") or {}
            xyz = o.get("xyz", [0, 0, 0])
            quat = _quat_wxyz(o.get("rpy", [0, 0, 0]))
            sites.setdefault(lp[f"frame_{s}"], []).append(
                f'<site name="s{t}{s}" pos="{xyz[0]} {xyz[1]} {xyz[2]}" quat="{quat}"/>')

    def inertial(name):
        i = links[name].find("inertial")
        c = [float(x) for x in i.find("origin").get("xyz").split()]
        I = i.find("inertia").attrib
        full = " ".join(I[k] for k in ("ixx", "iyy", "izz", "ixy", "ixz", "iyz"))
        return (f'<inertial pos="{c[0]} {c[1]} {c[2]}" mass="{i.find("mass").get("value")}" '
                f'fullinertia="{full}"/>')

    def body(j):
        c = j.find("child").get("link")
        o = j.find("origin")
        ax = j.find("axis").get("xyz")
        kind = "hinge" if j.get("type") == "revolute" else "slide"
        rpy = [float(x) for x in o.get("rpy").split()]
        inner = "".join(body(k) for k in kids.get(c, []))
        return (f'<body name="{c}" pos="{o.get("xyz")}" quat="{_quat_wxyz(rpy)}">'
                f'<joint name="{j.get("name")}" type="{kind}" axis="{ax}"/>{inertial(c)}'
                f'{"".join(sites.get(c, []))}{inner}</body>')

    base = (f'<body name="base"><freejoint name="root"/>{inertial("base")}'
            f'{"".join(sites.get("base", []))}{"".join(body(k) for k in kids["base"])}</body>')
    eq = "".join(f'<{lp["type"]} site1="s{t}a" site2="s{t}b" solref="{5 * timestep} 1"/>'
                 for t, lp in enumerate(loops))
    return (f'<mujoco><option gravity="0 0 0" timestep="{timestep}" integrator="RK4"><flag '
            'contact="disable"/></option><compiler angle="radian"/><worldbody>'
            f'{base}</worldbody><equality>{eq}</equality></mujoco>')


@pytest.mark.parametrize("name", ["planar_fourbar", "spatial_fourbar", "slider_crank",
                                  "two_loop_planar", "spatial_fourbar_weld"])
def test_simulated_motion_matches_mujoco(name):
    """MuJoCo: the free-flying mechanism as a tree with a free joint, the loop an equality
    ``connect`` or ``weld`` (stiff solref = 5 steps, RK4 at 0.1 ms; 50 µs for the weld, whose
    20 g ball links make MuJoCo's soft constraint converge slower: 2.3e-5, 5.7e-6, 1.4e-6 at
    100, 50, 25 µs), from the same state (base spinning, joints moving), 1 s without gravity:
    base pose and every joint (measured ≤ 1.9e-6 for the connect mechanisms)."""
    mujoco = pytest.importorskip("mujoco")
    r, u, loops = load(name, gravity=False)
    q0, qd0 = start(r, 6, spin=0.5)
    qf, vf = full_state(r, q0, qd0)
    ts = 5e-5 if name == "spatial_fourbar_weld" else 1e-4
    m = mujoco.MjModel.from_xml_string(mjcf(u, loops, ts))
    d = mujoco.MjData(m)
    adr = [m.joint(jn).qposadr[0] for jn in r.full_joint_names]
    vadr = [m.joint(jn).dofadr[0] for jn in r.full_joint_names]
    x, y, z, w = qf[3:7]
    Rb = pin.Quaternion(w, x, y, z).toRotationMatrix()
    d.qpos[:3], d.qpos[3:7] = qf[:3], [w, x, y, z]
    d.qpos[adr] = qf[7:]
    d.qvel[:3] = Rb @ vf[:3]  # MuJoCo's free joint: linear velocity in the world frame
    d.qvel[3:6] = vf[3:6]  # angular velocity in the body frame, as Pinocchio's
    d.qvel[vadr] = vf[6:]
    out = []
    for _ in range(4):
        for _ in range(int(round(0.25 / ts))):
            mujoco.mj_step(m, d)
        out.append(d.qpos.copy())
    out = np.array(out)
    for method in ("lagrange", "hdca"):
        res = simulate_loops(r, 1.0, method=method, q0=q0, qd0=qd0, dt=0.25, rtol=1e-10,
                             atol=1e-10)
        qs = res.q[1:]
        assert np.abs(out[:, :3] - qs[:, :3]).max() < 1e-5, method
        quat = np.c_[qs[:, 6], qs[:, 3:6]]
        dq = np.minimum(np.abs(out[:, 3:7] - quat).max(1), np.abs(out[:, 3:7] + quat).max(1))
        assert dq.max() < 1e-5, method
        assert np.abs(out[:, adr] - qs[:, 7:]).max() < 1e-5, method


# ---------------------------------------------------------------- the entry point, bad input
def test_entry_point_and_bad_input():
    r, _, _ = load("planar_fourbar")
    seen = []

    def ctrl(t, s):
        seen.append((s.q.shape, s.qd.shape))
        return np.array([0.1])

    res = mbs.simulate(r, ctrl, 0.2, 0.1, method="lagrange")
    assert res.q.shape == (3, 7 + r.n_full) and res.residual.max() < 1e-8
    assert seen and set(seen) == {((7 + r.n,), (6 + r.n,))}
    assert res.meta["floating_base"] and res.meta["momentum"].shape == (3, 6)
    res = mbs.simulate(r, ctrl, 0.1, 0.1, method="hdca")
    assert res.method == "hdca" and res.velocity_residual.max() < 1e-8
    q0, qd0 = start(r, 0)
    with pytest.raises(ValueError, match=r"q0 has shape \(3,\)"):
        simulate_loops(r, 0.1, q0=[0.0, 1.0, 2.0])
    bad = q0.copy()
    bad[3:7] *= 1.1
    with pytest.raises(ValueError, match="unit quaternion"):
        simulate_loops(r, 0.1, q0=bad)
    with pytest.raises(ValueError, match="qd0 contains NaN"):
        simulate_loops(r, 0.1, q0=q0, qd0=np.r_[np.nan, qd0[1:]])
    with pytest.raises(ValueError, match=r"qd0 has shape"):
        simulate_loops(r, 0.1, q0=q0, qd0=qd0[1:])
    with pytest.raises(ValueError, match="tau must give"):
        simulate_loops(r, 0.1, q0=q0, dt=0.05, tau=lambda t, q, v: [np.nan])
    with pytest.raises(ValueError, match="tau must give"):
        simulate_loops(r, 0.1, q0=q0, dt=0.05, tau=np.zeros(6 + r.n))
    with pytest.raises(ValueError, match="baumgarte"):
        simulate_loops(r, 0.1, method="lagrange", baumgarte=(1.0, np.nan))
    with pytest.raises(ValueError, match="method must be"):
        simulate_loops(r, 0.1, method="dca")
    with pytest.raises(ValueError, match="duration"):
        simulate_loops(r, np.nan)


def test_mimic_joint_and_payload_on_a_floating_loop():
    """A flap mimicking the crank (q_f = −0.5 q_c + 0.1, a constraint row with the loop's) and a
    payload on the coupler, on the free-floating four-bar: the mimic relation, the closure, the
    momentum and the energy hold for both methods; the payload changes the motion."""
    u, loops, act = lm.planar_fourbar_with_flap()
    u = u.replace('<link name="base"/>', BASE_INERTIA)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", mbs.URDFWarning)
        r = mbs.load_urdf(u, loops=loops, actuated=act, floating_base=True, gravity=(0, 0, 0))
    i, c = (r.full_joint_names.index(j) for j in ("j_flap", "j_crank"))
    q0, qd0 = start(r, 8, spin=0.5)
    out = {}
    for method in ("lagrange", "hdca"):
        res = simulate_loops(r, 1.0, method=method, q0=q0, qd0=qd0, dt=0.25, rtol=1e-10,
                             atol=1e-10)
        assert res.residual.max() < 1e-12
        assert np.abs(res.q[:, 7 + i] + 0.5 * res.q[:, 7 + c] - 0.1).max() < 1e-12
        assert np.abs(res.qd[:, 6 + i] + 0.5 * res.qd[:, 6 + c]).max() < 1e-9
        mom = res.meta["momentum"]
        assert np.abs(mom - mom[0]).max() < 1e-8
        assert np.abs(res.energy - res.energy[0]).max() < 1e-8
        out[method] = res.q
    assert np.abs(out["hdca"] - out["lagrange"]).max() < 1e-7
    r2 = r.with_payload("coupler", 0.5, com=(0.2, 0.0, 0.0))
    res = simulate_loops(r2, 1.0, method="lagrange", q0=q0, qd0=qd0, dt=0.25, rtol=1e-10,
                         atol=1e-10)
    mom = res.meta["momentum"]
    assert np.abs(mom - mom[0]).max() < 1e-8 and res.residual.max() < 1e-12
    assert np.abs(res.q - out["lagrange"]).max() > 1e-3


def test_hdca_drifts_less_than_the_acceleration_level_baseline():
    """Seed 002's claim on a floating base: without projection and at equal tolerance, the
    momentum-level HDCA keeps the closure and the energy of a conservative free-floating loop
    better than the plain index-1 baseline (α = β = 0). Measured (10 s, rtol = atol = 1e-6):
    |h| 6.7e-7 vs 3.0e-5, |ΔE|/E 7.5e-7 vs 1.3e-5."""
    r, _, _ = load("spatial_fourbar", gravity=False)
    q0, qd0 = start(r, 1)
    res = {m: simulate_loops(r, 10.0, method=m, q0=q0, qd0=qd0, dt=0.5, rtol=1e-6, atol=1e-6,
                             projection=False) for m in ("hdca", "lagrange")}
    dE = {m: np.abs(x.energy - x.energy[0]).max() for m, x in res.items()}
    assert res["hdca"].residual.max() < 0.2 * res["lagrange"].residual.max()
    assert res["hdca"].velocity_residual.max() < 0.2 * res["lagrange"].velocity_residual.max()
    assert dE["hdca"] < 0.2 * dE["lagrange"]


def test_massless_base_link():
    """A base link without inertia: HDCA needs every body's M_i⁻¹ (a clear error pointing to
    method='lagrange'); the Lagrange formulation simulates it (the links carry the mass)."""
    u, loops, act = lm.planar_fourbar()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", mbs.URDFWarning)
        r = mbs.load_urdf(u, loops=loops, actuated=act, floating_base=True, gravity=(0, 0, 0))
    q0, qd0 = start(r, 9, spin=0.3)
    with pytest.raises(ValueError, match="singular inertia.*method='lagrange'"):
        simulate_loops(r, 0.1, method="hdca", q0=q0, qd0=qd0)
    res = simulate_loops(r, 0.5, method="lagrange", q0=q0, qd0=qd0, dt=0.25, rtol=1e-10,
                         atol=1e-10)
    mom = res.meta["momentum"]
    assert res.residual.max() < 1e-12 and np.abs(mom - mom[0]).max() < 1e-8


@pytest.mark.parametrize("floating", [False, True])
def test_velocity_feedback_controller_sees_the_velocities(floating):
    """A damping controller τ = −d q̇_crank through mbs.simulate: HDCA's controller gets the
    velocities from the momenta (as Lagrange's), both methods agree and the energy decays."""
    if floating:
        r, _, _ = load("planar_fourbar", gravity=False)
        q0, qd0 = start(r, 10, spin=0.3)
    else:
        u, loops, act = lm.planar_fourbar()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", mbs.URDFWarning)
            r = mbs.load_urdf(u, loops=loops, actuated=act, gravity=(0, 0, 0))
        q0, qd0 = r.q_assembled[r.actuated_index], np.array([3.0])
    out = {}
    for method in ("lagrange", "hdca"):
        res = mbs.simulate(r, lambda t, s: -2.0 * s.qd[-1:], 1.0, 0.25, q0=q0, qd0=qd0,
                           method=method, rtol=1e-10, atol=1e-10)
        assert np.all(np.diff(res.energy) < 0) and res.energy[-1] < res.energy[0] - 0.05
        out[method] = res
    assert np.abs(out["hdca"].q - out["lagrange"].q).max() < 1e-7


@pytest.mark.parametrize("name", ["spatial_fourbar_weld", "delta", "two_loop_planar"])
def test_compiled_constraint_terms_equal_the_numpy_series(name):
    """The right-hand side takes h, K, K̇v from the robot's compiled workspace when it has them;
    they equal the NumPy Taylor series of :mod:`mbs_dynamics.loops.lagrange` off the manifold."""
    from mbs_dynamics.loops.lagrange import constraint_terms, loop_terms
    r, _, _ = load(name)
    rng = np.random.default_rng(12)
    qj = r.q_assembled + 0.05 * rng.standard_normal(r.n_full)
    vj = rng.standard_normal(r.n_full)
    for a, b in zip(loop_terms(r, qj, vj), constraint_terms(r._kin, qj, vj)):
        assert np.abs(a - b).max() < 1e-12


@pytest.mark.parametrize("name", NAMES)
def test_every_mechanism_with_gravity(name):
    """Every test mechanism (connect, weld and revolute closures, redundant and multi-loop) on a
    floating base under gravity: closure held, energy conserved, HDCA = Lagrange — on a motion
    that stays away from the loops' singular configurations (checked: the rank of K holds with
    a margin). Through a singular one (the parallelogram's bars collinear, reached with 3×
    these joint rates) the equations do not determine the branch, and the two formulations were
    seen to continue on different ones."""
    r, _, _ = load(name)
    q0, qd0 = start(r, 11, spin=0.5)
    qd0[6:] *= 0.3
    out = {}
    for method in ("lagrange", "hdca"):
        res = simulate_loops(r, 0.5, method=method, q0=q0, qd0=qd0, dt=0.125, rtol=1e-10,
                             atol=1e-10)
        assert res.residual.max() < 1e-12 and res.velocity_residual.max() < 1e-8
        assert np.abs(res.energy - res.energy[0]).max() < 1e-7 * max(1.0, abs(res.energy[0]))
        out[method] = res
    rank = None
    for q in out["lagrange"].q:
        s = np.linalg.svd(r.constraint_jacobian(q), compute_uv=False)
        rk = int(np.sum(s > 1e-9 * s[0]))
        rank = rank or rk
        assert rk == rank and s[rk - 1] > 0.02 * s[0]
    assert np.abs(out["hdca"].q - out["lagrange"].q).max() < 1e-7


def test_integrator_option():
    """``integrator`` reaches scipy through mbs.simulate; a Lie-group scheme's name of the tree
    simulator (or any unknown name) is a clear error."""
    r, _, _ = load("planar_fourbar")
    zero = lambda t, s: np.zeros(r.n)  # noqa: E731
    a = mbs.simulate(r, zero, 0.2, 0.1, method="lagrange", integrator="DOP853")
    b = mbs.simulate(r, zero, 0.2, 0.1, method="lagrange")
    assert a.nfev != b.nfev and np.abs(a.q - b.q).max() < 1e-7
    with pytest.raises(ValueError, match="solve_ivp methods"):
        mbs.simulate(r, zero, 0.2, 0.1, integrator="rkmk4-se3")


@pytest.mark.parametrize("name", ["spatial_fourbar", "parallelogram_arm", "two_loop_planar"])
def test_floating_forward_dynamics_numpy_path_equals_the_compiled_one(name):
    """With ``f_ext`` a FloatingClosedLoopRobot's forward dynamics takes the NumPy path
    (:func:`mbs_dynamics.loops.lagrange.acceleration`, the base rows first); a zero wrench must
    give the compiled null-space solution."""
    r, u, loops = load(name)
    q0, qd0 = start(r, 3)
    tau = np.random.default_rng(1).normal(size=r.nv)
    a = r.forward_dynamics(q0, qd0, tau)
    b = r.forward_dynamics(q0, qd0, tau, f_ext={r.full_robot.link_names[-1]: np.zeros(6)})
    assert rel(b, a) < 1e-12
