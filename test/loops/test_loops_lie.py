"""Spherical and free joints inside the spanning tree of a closed-loop robot (issue 31).

Oracles: Pinocchio's ``constraintDynamics`` on the same mechanism built by hand here with
``JointModelSpherical`` / ``JointModelFreeFlyer`` and CONTACT_3D / CONTACT_6D rigid constraints
(its configuration on the group: no chart, no singularity); the same mechanism with the ball
joint written as three hinges (a plain ClosedLoopRobot); high-order central differences of
τ_a along an analytic trajectory that turns a ball joint past its chart's singular angle.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import mbs_dynamics as mbs
import loops_mechanisms as lm
from mbs_dynamics.loops.robot import ClosedLoopRobot, LoopWarning
from mbs_dynamics.loops.simulate import simulate_loops
from test_loops_kinematics import D, rpy_pose

try:
    import pinocchio as pin
except ImportError:  # skip per test, not per module (launch_testing)
    pin = None
needs_pin = pytest.mark.skipif(pin is None, reason="pinocchio is not installed")

MECHS = {"rusr": lm.rusr_ball, "swing": lm.swing_ball, "stewart": lm.stewart,
         "stewart_ball": lm.stewart_ball}


def rel(a, b):
    return np.abs(np.asarray(a) - b).max() / max(1.0, np.abs(b).max())


def load(fn, **kw):
    name, links, joints, loops, act = fn(**kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", mbs.URDFWarning)
        r = mbs.load_urdf(lm.lie_urdf(name, links, joints), loops=loops, actuated=act)
    return r, (links, joints, loops)


class PinMech:
    """The mechanism on Pinocchio, written from the structured description (joints added in
    the order ``order``; spherical → JointModelSpherical, floating → JointModelFreeFlyer)."""

    def __init__(self, desc, order, base=None):
        links, joints, loops = desc
        m = pin.Model()
        jid = {"base": 0}
        if base is not None:  # a floating base (mass, com, principal inertia)
            jid["base"] = m.addJoint(0, pin.JointModelFreeFlyer(), pin.SE3.Identity(), "root")
            m.appendBodyToJoint(jid["base"], pin.Inertia(base[0], np.array(base[1], float),
                                                         np.diag(base[2])), pin.SE3.Identity())
        L = {ln[0]: ln for ln in links}
        J = {j[0]: j for j in joints}
        for name in order:
            _, t, p, c, xyz, rpy, ax = J[name]
            M = pin.SE3(pin.rpy.rpyToMatrix(*map(float, rpy)), np.array(xyz, float))
            jm = {"revolute": lambda: pin.JointModelRevoluteUnaligned(np.array(ax, float)),
                  "prismatic": lambda: pin.JointModelPrismaticUnaligned(np.array(ax, float)),
                  "spherical": pin.JointModelSpherical,
                  "floating": pin.JointModelFreeFlyer}[t]()
            jid[c] = j = m.addJoint(jid[p], jm, M, name)
            _, mass, com, I = L[c]
            if mass is not None:
                m.appendBodyToJoint(j, pin.Inertia(mass, np.array(com, float), np.diag(I)),
                                    pin.SE3.Identity())
        # massless links below a joint chain (the hinge version's s1, s2) carry nothing
        self.model, self.data = m, m.createData()
        self.cms = []
        for lp in loops:
            ct = (pin.ContactType.CONTACT_3D if lp["type"] == "connect"
                  else pin.ContactType.CONTACT_6D)
            self.cms.append(pin.RigidConstraintModel(
                ct, m, jid[lp["frame_a"]], rpy_pose(lp.get("origin_a")), jid[lp["frame_b"]],
                rpy_pose(lp.get("origin_b")), pin.ReferenceFrame.LOCAL))
        self.cds = [c.createData() for c in self.cms]

    def closure(self, q):
        pin.forwardKinematics(self.model, self.data, q)
        e = 0.0
        for c in self.cms:
            Ma = self.data.oMi[c.joint1_id] * c.joint1_placement
            Mb = self.data.oMi[c.joint2_id] * c.joint2_placement
            e = max(e, np.abs(Ma.translation - Mb.translation).max())
            if c.type == pin.ContactType.CONTACT_6D:
                e = max(e, np.abs(Ma.rotation - Mb.rotation).max())
        return e

    def ddq(self, q, v, tau):
        pin.initConstraintDynamics(self.model, self.data, self.cms, self.cds)
        return pin.constraintDynamics(self.model, self.data, q, v, tau, self.cms, self.cds,
                                      pin.ProximalSettings(1e-14, 1e-12, 500))


@pytest.fixture(scope="module", params=sorted(MECHS))
def mech(request):
    r, desc = load(MECHS[request.param])
    return request.param, r, desc


def actuated_q(r):
    """The actuated joints' positions in ``q_assembled``."""
    lay = {name: sq for name, _, sq, _ in r.full_layout()}
    return np.array([r.q_assembled[lay[j]][0] for j in r.joint_names])


def states(r, seed):
    rng = np.random.default_rng(seed)
    q0 = actuated_q(r)
    for s in range(3):
        yield (q0 + 0.1 * rng.standard_normal(r.n), rng.standard_normal(r.n),
               rng.standard_normal(r.n))


@needs_pin
def test_inverse_and_forward_dynamics_match_pinocchio_constraint_dynamics(mech):
    name, r, desc = mech
    r = r.copy()
    P = PinMech(desc, r.full_joint_names)
    assert P.model.nq == r.nq_full and P.model.nv == r.nv_full
    for q, qd, qdd in states(r, 3):
        tau = r.inverse_dynamics(q, qd, qdd)
        qf, (v, a) = r.expand(np.stack([q, qd, qdd]))
        assert P.closure(qf) < 1e-11
        tf = np.zeros(r.nv_full)
        tf[r.actuated_index] = tau
        ddq = P.ddq(qf, v, tf)
        assert rel(ddq[r.actuated_index], qdd) < 1e-9, name
        assert rel(ddq, a) < 1e-9, name  # the full acceleration of the group jets too
        for method in ("lagrange", "dca"):
            assert rel(r.forward_dynamics(q, qd, tau, method=method), qdd) < 1e-9, (name, method)
        # the loop wrenches: Pinocchio's λ (LOCAL, in origin_a's axes, on frame_a) = −R_ab λ_b
        cf = r.constraint_forces(q, qd, qdd)
        lam = r.multipliers(qf, v, a)
        pin.forwardKinematics(P.model, P.data, qf)
        off = 0
        for lp, c in zip(r.loops, P.cms):
            Rab = ((P.data.oMi[c.joint1_id] * c.joint1_placement).rotation.T
                   @ (P.data.oMi[c.joint2_id] * c.joint2_placement).rotation)
            m = 3 if lp["type"] == "connect" else 6
            X = np.kron(np.eye(m // 3), Rab)
            if name != "swing":  # its weld is redundant (rank 3): λ is not unique there
                assert rel(-X @ cf[lp["name"]], P.data.lambda_c[off:off + m]) < 1e-8, name
            assert rel(lam[off:off + m], cf[lp["name"]]) < 1e-9, name
            off += m


@needs_pin
@needs_pin
def test_swing_through_the_singular_angle_matches_pinocchio():
    """θ = ±π/2 is where the URDF-zero Euler chart of the ball is singular (the same chain of
    hinges cannot even decide its dependent rates there); the re-centred chart gives
    Pinocchio's constrained accelerations on both sides and at it, jumping there or walking."""
    r, desc = load(lm.swing_ball)
    r0 = r.copy()
    P = PinMech(desc, r.full_joint_names)
    # the chart without re-centring (the loops on the chart robot itself) fails at π/2, and
    # its Hamiltonian assembly refuses the chart's massless links
    raw = ClosedLoopRobot(r._orig, desc[2], ["crank"])
    with pytest.raises(ValueError, match="singular configuration"):
        raw.mass_matrix([np.pi / 2])
    with pytest.raises(ValueError, match="massless: use method='lagrange'"):
        simulate_loops(raw, 0.1, method="hdca")
    for th in (1.2, np.pi / 2, 2.0, 3.0, -np.pi / 2, -2.5, np.pi / 2 + 1e-9):
        for rb in (r, r0.copy()):  # one after the other, and straight from the assembly
            q, qd, qdd = np.array([th]), np.array([1.1]), np.array([-0.6])
            tau = rb.inverse_dynamics(q, qd, qdd)
            qf, (v, a) = rb.expand(np.stack([q, qd, qdd]))
            tf = np.zeros(rb.nv_full)
            tf[rb.actuated_index] = tau
            ddq = P.ddq(qf, v, tf)
            assert P.closure(qf) < 1e-12
            assert rel(ddq, a) < 1e-9, th
            assert rel(rb.forward_dynamics(q, qd, tau), qdd) < 1e-10
            assert rel(rb.forward_dynamics(q, qd, tau, method="dca"), qdd) < 1e-10
    assert r.recentrings >= 3


@needs_pin
def test_mass_matrix_and_gravity_match_pinocchio(mech):
    """M_a⁻¹ and g_a from Pinocchio's constrained accelerations at rest: q̈_a(τ) − q̈_a(0) =
    M_a⁻¹ τ, q̈_a(0) = −M_a⁻¹ g_a."""
    name, r, desc = mech
    r = r.copy()
    P = PinMech(desc, r.full_joint_names)
    q = next(states(r, 5))[0]
    qf = r.expand(q)
    act = r.actuated_index
    z = np.zeros(r.nv_full)
    a0 = P.ddq(qf, z, z)[act]
    Minv = np.empty((r.n, r.n))
    for i in range(r.n):
        t = np.zeros(r.nv_full)
        t[act[i]] = 1.0
        Minv[:, i] = P.ddq(qf, z, t)[act] - a0
    M = r.mass_matrix(q)
    assert rel(M @ Minv, np.eye(r.n)) < 1e-8
    assert rel(r.gravity_torques(q), -M @ a0) < 1e-8


def test_hinge_chain_equals_spherical_joint():
    """The RUSR with its ball joint as three hinges (its Euler chart written out): τ_a, M_a,
    C̄_a, Ṁ_a, g_a, λ and τ_a jets to 1e-12 — also after the spherical one re-centred."""
    r, _ = load(lm.rusr_ball)
    h, _ = load(lm.rusr_ball, hinges=True)
    assert type(h).__name__ == "ClosedLoopRobot"
    q0 = actuated_q(r)
    # the crank's reachable range is about [q0 − 3.9, q0 + 1.4] (a rocker): there and back
    for s in np.r_[np.linspace(0, 1.35, 5), np.linspace(1.1, -3.8, 9)]:
        q, qd, qdd = q0 + s, np.array([0.7]), np.array([-1.3])
        assert rel(r.inverse_dynamics(q, qd, qdd), h.inverse_dynamics(q, qd, qdd)) < 1e-12
        assert rel(r.mass_matrix(q), h.mass_matrix(q)) < 1e-12
        assert rel(r.gravity_torques(q), h.gravity_torques(q)) < 1e-12
        assert rel(r.coriolis_matrix(q, qd), h.coriolis_matrix(q, qd)) < 1e-12
        assert rel(r.mass_matrix_derivative(q, qd), h.mass_matrix_derivative(q, qd)) < 1e-12
        jet = np.array([q, qd, qdd, [0.4], [-2.0], [0.9]])
        assert rel(r.torque_derivatives(jet), h.torque_derivatives(jet)) < 1e-11
        assert rel(r.constraint_forces(q, qd, qdd)["weld"],
                   h.constraint_forces(q, qd, qdd)["weld"]) < 1e-11
        tau = h.inverse_dynamics(q, qd, qdd)
        assert rel(r.forward_dynamics(q, qd, tau), qdd) < 1e-11


def swing_jet(t):
    """θ(t) = 0.2 + 1.2 t + 0.3 sin 2t and its derivatives (rows 0..6)."""
    rows = [0.2 + 1.2 * t + 0.3 * np.sin(2 * t), 1.2 + 0.6 * np.cos(2 * t)]
    rows += [0.3 * 2 ** k * np.sin(2 * t + k * np.pi / 2) for k in range(2, 7)]
    return np.array(rows)[:, None]


def test_ball_joint_through_its_chart_singularity():
    """The swing ball turns by Ry(θ) about its chart's middle axis: θ from 0.2 to past 3 rad
    crosses ±π/2 (relative to the URDF zero). τ_a and its jets against 8th-order central
    differences of τ_a along the trajectory, the group configuration against Ry(θ), and the
    chart was re-centred on the way."""
    r, _ = load(lm.swing_ball)
    start = r.recentrings
    h = 1e-3
    for t in np.linspace(0.0, 2.0, 11):
        X = swing_jet(t)
        qf = r.expand(X[0])
        th = X[0, 0]
        want = np.array([0.0, np.sin(th / 2), 0.0, np.cos(th / 2)])
        assert min(np.abs(qf[1:5] - want).max(), np.abs(qf[1:5] + want).max()) < 1e-12
        T = r.torque_derivatives(X[:5])  # τ, τ′, τ″
        taus = np.array([r.inverse_dynamics(*swing_jet(t + (i - 4) * h)[:3])
                         for i in range(9)])
        for k in range(3):
            fd = taus[4] if k == 0 else D[k] @ taus / h ** k
            assert rel(T[k], fd) < (1e-12 if k == 0 else 1e-6), (t, k)
    assert r.recentrings > start


def test_expand_from_a_guess_picks_the_branch():
    """The RUSR's two assembly modes: q_guess (group layout) selects the branch; the default
    continues from the last assembly."""
    r, _ = load(lm.rusr_ball)
    q = actuated_q(r) + 0.2
    a = r.expand(q)
    # the other mode, by Newton from random starts
    other = None
    for seed in range(20):
        g = np.random.default_rng(seed).uniform(-3, 3, r.nq_full)
        g[4:8] /= np.linalg.norm(g[4:8])  # the ball's quaternion
        try:
            b = r.expand(q, q_guess=g)
        except ValueError:
            continue
        if np.abs(np.angle(np.exp(1j * (b[:4] - a[:4])))).max() > 1e-3:  # not a 2π shift
            other = b
            break
    assert other is not None
    assert np.abs(r.loop_residual(other)).max() < 1e-11
    assert rel(r.expand(q), other) < 1e-12  # the default stays on the new branch
    assert rel(r.expand(q, q_guess=a), a) < 1e-12
    with pytest.raises(ValueError, match="q_guess must be 8 finite numbers"):
        r.expand(q, q_guess=np.zeros(3))


def test_stewart_legs_and_platform():
    """The free joint's full coordinates: (x, y, z, quat) of the platform, ω and v in its
    frame; K q̇ = 0 in the group columns; the loops closed."""
    r, _ = load(lm.stewart)
    q = actuated_q(r) + 0.05
    qd = np.linspace(-0.2, 0.3, 6)
    qf, (v,) = r.expand(np.stack([q, qd]))
    assert np.abs(r.loop_residual(qf)).max() < 1e-11
    assert np.abs(r.constraint_jacobian(qf) @ v).max() < 1e-11
    quat = qf[3:7]
    assert abs(np.linalg.norm(quat) - 1) < 1e-14
    assert r.full_layout()[0][:2] == ("free", "floating")


def test_actuating_a_ball_joint_is_refused():
    name, links, joints, loops, act = lm.rusr_ball()
    u = lm.lie_urdf(name, links, joints)
    for bad in ("s", "s_ry", ["crank", "s_rx"]):
        with pytest.raises(ValueError, match="'s' is a spherical joint"):
            mbs.load_urdf(u, loops=loops, actuated=bad)
    name, links, joints, loops, act = lm.stewart()
    with pytest.raises(ValueError, match="'free' is a floating joint"):
        mbs.load_urdf(lm.lie_urdf(name, links, joints), loops=loops, actuated=["free_x"])
    for bad in (5, [3.0], {"leg0": 1}):
        with pytest.raises(ValueError, match="actuated must be a joint name or a list"):
            mbs.load_urdf(lm.lie_urdf(name, links, joints), loops=loops, actuated=bad)


def test_a_ball_joint_the_loops_do_not_determine_is_named():
    """The RUSR closed by a `connect` at the ball instead of a weld: the ball's spin is free."""
    name, links, joints, loops, act = lm.rusr_ball()
    loops = [dict(loops[0], type="connect")]
    u = lm.lie_urdf(name, links, joints)
    with pytest.raises(ValueError, match="joint 's': the loops do not determine"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LoopWarning)
            mbs.load_urdf(u, loops=loops)
    with pytest.raises(ValueError, match=r"dependent joints \['s'\] of loop"):
        mbs.load_urdf(u, loops=loops, actuated=act)


def test_automatic_choice_never_picks_a_chart_joint():
    name, links, joints, loops, act = lm.stewart()
    with pytest.warns(LoopWarning) as w:
        r = mbs.load_urdf(lm.lie_urdf(name, links, joints), loops=loops)
    assert r.actuated_chosen and r.n == 6
    assert not any(j.startswith("free") for j in r.joint_names), r.joint_names
    assert "spherical and free joints passive" in str(w[0].message)


def test_bad_inputs():
    r, _ = load(lm.rusr_ball)
    q = actuated_q(r)
    with pytest.raises(ValueError, match="NaN"):
        r.inverse_dynamics([np.nan], [0.0], [0.0])
    with pytest.raises(ValueError, match="shape"):
        r.inverse_dynamics([0.1, 0.2], [0.0], [0.0])
    with pytest.raises(ValueError, match="shape"):
        r.mass_matrix(np.zeros(3))
    with pytest.raises(ValueError, match="unit norm"):
        qf = r.expand(q)
        qf[-1] = 3.0
        r.loop_residual(qf)
    with pytest.raises(ValueError, match="group"):
        r.loop_residual(np.zeros(r.nv_full))
    with pytest.raises(NotImplementedError, match="'s'"):
        r.full_robot
    with pytest.raises(NotImplementedError, match="'s'"):
        r.with_payload("ball", 1.0)
    # batches: row by row, equal to the single calls
    Q = q + np.array([[0.0], [0.5], [1.0]])
    T = r.inverse_dynamics(Q, Q * 0 + 0.3, Q * 0 - 0.2)
    assert T.shape == (3, 1)
    for i in range(3):
        assert rel(T[i], r.inverse_dynamics(Q[i], [0.3], [-0.2])) < 1e-12


@needs_pin
def test_simulation_through_the_singular_angle():
    """The swing ball falls from θ = 0 through θ = π/2 (its URDF-zero chart's singular angle):
    θ(t) against the same pendulum integrated with Pinocchio's constrained accelerations, the
    energy conserved, the loops closed, the configuration on the group."""
    from scipy.integrate import solve_ivp
    r, desc = load(lm.swing_ball)
    P = PinMech(desc, r.full_joint_names)

    def f(t, x):
        th, w = x
        q = np.r_[th, 0.0, np.sin(th / 2), 0.0, np.cos(th / 2)]
        return [w, P.ddq(q, np.array([w, 0.0, w, 0.0]), np.zeros(4))[0]]

    res = simulate_loops(r, 1.0, dt=0.05, rtol=1e-11, atol=1e-11)
    assert res.method == "lagrange" and res.q.shape == (21, r.nq_full)
    ref = solve_ivp(f, (0, 1.0), [0.0, 0.0], rtol=1e-12, atol=1e-12, t_eval=res.t,
                    method="DOP853")
    assert np.abs(res.q[:, 0] - ref.y[0]).max() < 1e-7
    assert np.abs(res.qd[:, 0] - ref.y[1]).max() < 1e-7
    assert res.q[:, 0].max() > np.pi / 2 + 0.3  # through the singular angle
    assert res.meta["recentrings"] > 1
    assert np.abs(res.energy - res.energy[0]).max() < 1e-7
    assert res.residual.max() < 1e-10
    assert np.abs(np.linalg.norm(res.q[:, 1:5], axis=1) - 1).max() < 1e-14
    with pytest.raises(ValueError, match="massless chart links"):
        simulate_loops(r, 0.1, method="hdca")


def test_simulate_stewart_with_a_controller():
    """mbs.simulate: the controller sees the actuated legs (q columns of the group layout),
    the platform's pose stays a unit quaternion, the loops closed, the legs held by PD."""
    r, _ = load(lm.stewart)
    q_ref = actuated_q(r)
    g = r.gravity_torques(q_ref)
    seen = []

    def ctrl(t, s):
        seen.append(s.q.copy())
        return g - 400.0 * (s.q - q_ref) - 40.0 * s.qd

    res = mbs.simulate(r, ctrl, 0.2, 0.05)
    assert res.q.shape == (5, r.nq_full) and res.qd.shape == (5, r.nv_full)
    assert rel(seen[0], q_ref) < 1e-12
    assert np.abs(res.q[:, r.actuated_q_index] - q_ref).max() < 1e-9  # held (g exact)
    assert np.abs(np.linalg.norm(res.q[:, 3:7], axis=1) - 1).max() < 1e-14
    assert res.residual.max() < 1e-10


@needs_pin
def test_floating_base_with_a_ball_joint_in_the_loop():
    """The RUSR on a free-floating 2 kg base (FloatingClosedLoopRobot over the chart): (base
    wrench, τ_a) against Pinocchio's constrained accelerations with a FreeFlyer root."""
    name, links, joints, loops, act = lm.rusr_ball()
    base = ('<link name="base"><inertial><origin xyz="0.1 0.05 -0.02"/><mass value="2"/>'
            '<inertia ixx="0.03" iyy="0.04" izz="0.05" ixy="0" ixz="0" iyz="0"/></inertial>'
            '</link>')
    u = lm.lie_urdf(name, links, joints).replace('<link name="base"/>', base)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", mbs.URDFWarning)
        r = mbs.load_urdf(u, loops=loops, actuated=act, floating_base=True)
    assert r.floating_base and r.nq == 8 and r.nv == 7
    P = PinMech((links, joints, loops), r.full_joint_names,
                base=(2.0, [0.1, 0.05, -0.02], [0.03, 0.04, 0.05]))
    rng = np.random.default_rng(4)
    quat = rng.standard_normal(4)
    q = np.r_[rng.standard_normal(3), quat / np.linalg.norm(quat), actuated_q(r) + 0.1]
    qd, qdd = rng.standard_normal(7), rng.standard_normal(7)
    tau = r.inverse_dynamics(q, qd, qdd)
    qj, (vj, aj) = r.expand(np.stack([q[7:], qd[6:], qdd[6:]]))
    qf = np.r_[q[:7], qj]
    assert rel(r.expand(q), qf) < 1e-13
    tf = np.zeros(6 + r.nv_full)
    tf[:6] = tau[:6]
    tf[6 + r.actuated_index] = tau[6:]
    ddq = P.ddq(qf, np.r_[qd[:6], vj], tf)
    assert rel(ddq, np.r_[qdd[:6], aj]) < 1e-9
    assert rel(r.forward_dynamics(q, qd, tau), qdd) < 1e-9
    assert rel(r.forward_dynamics(q, qd, tau, method="dca"), qdd) < 1e-9
    lam = r.multipliers(qf, np.r_[qd[:6], vj], np.r_[qdd[:6], aj])
    assert rel(lam, r.constraint_forces(q, qd, qdd)["weld"]) < 1e-9


def test_stewart_jets_and_matrices_by_differences():
    """The 6-UPS platform on its free joint along an analytic leg trajectory: τ′, τ″ and Ṁ
    against 8th-order central differences of τ and M; C̄ q̇ + g = τ(q, q̇, 0); Ṁ − 2C̄ skew."""
    r, _ = load(lm.stewart)
    q0 = actuated_q(r)
    A, w, ph = np.linspace(0.02, 0.05, 6), np.linspace(0.9, 1.6, 6), np.linspace(0, 2, 6)

    def jet(t):
        return np.array([q0 + A * np.sin(w * t + ph)]
                        + [A * w ** k * np.sin(w * t + ph + k * np.pi / 2) for k in range(1, 5)])

    h = 1e-3
    for t in (0.0, 0.7):
        X = jet(t)
        T = r.torque_derivatives(X)
        taus = np.array([r.inverse_dynamics(*jet(t + (i - 4) * h)[:3]) for i in range(9)])
        assert rel(T[0], taus[4]) < 1e-12
        for k in (1, 2):
            assert rel(T[k], D[k] @ taus / h ** k) < 1e-6, k
        Ms = np.array([r.mass_matrix(jet(t + (i - 4) * h)[0]) for i in range(9)])
        Md = r.mass_matrix_derivative(X[0], X[1])
        assert rel(Md, np.tensordot(D[1], Ms, 1) / h) < 1e-7
        C = r.coriolis_matrix(X[0], X[1])
        assert rel(C @ X[1] + r.gravity_torques(X[0]),
                   r.inverse_dynamics(X[0], X[1], np.zeros(6))) < 1e-11
        assert np.abs(Md - 2 * C + (Md - 2 * C).T).max() < 1e-10


def test_description_and_cli_info():
    """What does not depend on the chart passes through (limits, masses, loops); the CLI's
    description of the spanning tree lists the chart's links."""
    from mbs_dynamics.cli.info import describe
    r, (links, _, _) = load(lm.rusr_ball)
    assert r.total_mass == pytest.approx(sum(ln[1] for ln in links))
    assert r.joint_names == ("crank",) and r.lower.shape == (1,) and not r.actuated_chosen
    assert r.loop_names == ("weld",) and r.model.lie_joints["s"][0] == "spherical"
    d = describe(r)
    assert d["total_mass"] == pytest.approx(r.total_mass)
