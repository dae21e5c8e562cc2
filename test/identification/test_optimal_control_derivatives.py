"""Derivatives for optimal control (issue 29): ``inverse_mass_matrix`` (M⁻¹ by the
articulated-body route) against ``pin.computeMinverse`` and ``inv(pin.crba)`` (1e-12 relative),
on fixed (Panda, UR5, random trees with prismatic joints and branches), floating (solo12, ANYmal;
Pinocchio's tangent convention) and mimic robots (Pinocchio's full model projected with G)."""
from __future__ import annotations

import numpy as np
import pytest

import mbs_dynamics as mbs
from conftest import pin_q, random_urdf, sym
from test_identification_regressor import CASES, Case, rel


@pytest.fixture(scope="module", params=CASES)
def case(request):
    return Case(request.param)


def _pin_minv(case, q):
    """inv(pin.crba) (projected for mimic robots); checked against ``pin.computeMinverse``,
    which itself strays from inv(crba) by up to ~1e-12 on solo12 at |q_j| ≤ 2 (cond(M) ~ 2e4),
    hence the looser 1e-10 for that second oracle."""
    pin = case.pin
    M = sym(pin.crba(case.pm, case.pd, case.to_pin(q)).copy())
    if case.G is not None:
        return np.linalg.inv(case.G.T @ M @ case.G), None
    return np.linalg.inv(M), sym(pin.computeMinverse(case.pm, case.pd, case.to_pin(q)).copy())


def _check(got, case, q):
    want, pmi = _pin_minv(case, q)
    assert rel(got, want) <= 1e-12
    if pmi is not None:
        assert rel(got, pmi) <= 1e-10


def test_inverse_mass_matrix_matches_pinocchio(case):
    rng = np.random.default_rng(21)
    r = case.robot
    for _ in range(3):
        q, _, _ = case.state(rng)
        got = r.inverse_mass_matrix(q)
        assert got.shape == (r.nv, r.nv)
        _check(got, case, q)
        assert np.array_equal(got, got.T)


def test_inverse_mass_matrix_batch_and_out(case):
    rng = np.random.default_rng(22)
    r = case.robot
    Q = np.array([case.state(rng)[0] for _ in range(4)])
    got = r.inverse_mass_matrix(Q)
    assert got.shape == (4, r.nv, r.nv)
    for k in range(4):
        _check(got[k], case, Q[k])
    out = np.full((4, r.nv, r.nv), np.nan)
    assert r.inverse_mass_matrix(Q, out=out) is out
    assert np.array_equal(out, got)
    one = np.full((r.nv, r.nv), np.nan)
    assert r.inverse_mass_matrix(Q[1], out=one) is one
    assert np.array_equal(one, got[1])


@pytest.mark.parametrize("seed", [3, 4, 7])
def test_inverse_mass_matrix_random_trees(seed):
    pin = pytest.importorskip("pinocchio")
    xml, _ = random_urdf(seed, n_movable=14)
    r = mbs.load_urdf(xml)
    pm = pin.buildModelFromXML(xml)
    pd = pm.createData()
    rng = np.random.default_rng(seed)
    for _ in range(2):
        q = rng.uniform(-2, 2, r.n)
        want = sym(pin.computeMinverse(pm, pd, pin_q(pm, q)).copy())
        assert rel(r.inverse_mass_matrix(q), want) <= 1e-12
        assert rel(r.inverse_mass_matrix(q), np.linalg.inv(sym(pin.crba(pm, pd, pin_q(pm, q))))) \
            <= 1e-12


@pytest.mark.parametrize("floating", [False, True])
@pytest.mark.parametrize("n, branch, seed", [(1, 0.0, 1), (2, 0.0, 2), (3, 0.0, 3), (4, 0.0, 4),
                                             (9, 0.0, 5), (7, 0.5, 6), (12, 0.8, 8),
                                             (16, 0.3, 9)])
def test_inverse_mass_matrix_chains_and_branches(n, branch, seed, floating):
    """The set sweeps do a body and its only child in one pass: chains of odd and even length,
    several bodies on the fixed base (roots), branching bodies, prismatic joints, a floating
    base with one or several children — against computeMinverse and inv(crba), 1e-12."""
    pin, r, pm, pd = _random_tree(seed, floating, base_mass=floating, n_movable=n,
                                  branch_prob=branch, prismatic_prob=0.3)
    rng = np.random.default_rng(seed)
    for _ in range(2):
        q, pq = _random_q(rng, r, pm, floating)
        got = r.inverse_mass_matrix(q)
        want = sym(pin.computeMinverse(pm, pd, pq).copy())
        assert rel(got, want) <= 1e-12
        assert rel(got, np.linalg.inv(sym(pin.crba(pm, pd, pq)))) <= 1e-12
        assert np.array_equal(got, got.T)


def _random_tree(seed, floating, base_mass=False, **kw):
    """(pinocchio, our robot, Pinocchio's model and data) of ``random_urdf(seed, **kw)``; with
    ``base_mass`` the base link gets an inertia of its own (a floating base that would move no
    mass otherwise)."""
    pin = pytest.importorskip("pinocchio")
    xml, _ = random_urdf(seed, **kw)
    if base_mass:
        xml = xml.replace('<link name="base"/>', '<link name="base"><inertial><origin xyz="0.1 0 '
                          '0.05" rpy="0.3 0 0.2"/><mass value="4"/><inertia ixx="0.2" ixy="0" '
                          'ixz="0" iyy="0.3" iyz="0" izz="0.25"/></inertial></link>')
    r = mbs.load_urdf(xml, floating_base=floating)
    pm = pin.buildModelFromXML(xml, pin.JointModelFreeFlyer()) if floating else \
        pin.buildModelFromXML(xml)
    assert pm.nv == r.nv
    return pin, r, pm, pm.createData()


def _random_q(rng, r, pm, floating):
    """A random configuration (joints in [−2, 2], a random base pose) as ours and Pinocchio's."""
    qj = rng.uniform(-2, 2, r.n)
    if not floating:
        return qj, pin_q(pm, qj)
    quat = rng.normal(size=4)
    quat /= np.linalg.norm(quat)
    q = np.r_[rng.normal(size=3), quat, qj]
    return q, np.r_[q[:7], _joint_q(pm, qj)]


def test_inverse_mass_matrix_bad_input():
    r = Case("ur5").robot
    with pytest.raises(ValueError, match="q"):
        r.inverse_mass_matrix(np.zeros(5))
    with pytest.raises(ValueError, match="NaN"):
        r.inverse_mass_matrix(np.full(6, np.nan))
    with pytest.raises(TypeError):
        r.inverse_mass_matrix(np.zeros(6, dtype=complex))
    with pytest.raises(ValueError, match="out"):
        r.inverse_mass_matrix(np.zeros(6), out=np.zeros((6, 5)))
    fb = Case("solo12").robot
    q = np.zeros(fb.nq)
    q[3] = 2.0
    with pytest.raises(ValueError, match="quaternion"):
        fb.inverse_mass_matrix(q)


# ---------------------------------------------------------------- ∂FD (compiled, batches)
def _pin_fd(case, q, v, tau, fext=None):
    pin = case.pin
    if case.G is None:
        args = (case.pm, case.pd, case.to_pin(q), v, tau) + ((fext,) if fext else ())
        dq, dv, Mi = (x.copy() for x in pin.computeABADerivatives(*args))
        return dq, dv, sym(Mi)
    qdd = case.oracle.aba(q, v, tau)
    dq, dv, M = (x.copy() for x in pin.computeRNEADerivatives(
        case.pm, case.pd, case.to_pin(q), case.v(v), case.v(qdd)))
    G = case.G
    dq, dv, M = G.T @ dq @ G, G.T @ dv @ G, G.T @ sym(M) @ G
    Mi = np.linalg.inv(M)
    return -Mi @ dq, -Mi @ dv, Mi


def test_forward_dynamics_derivatives_batch_equals_pinocchio(case):
    rng = np.random.default_rng(23)
    r = case.robot
    Q, V, _ = (np.array(x) for x in zip(*[case.state(rng) for _ in range(3)]))
    T = rng.normal(size=V.shape) * 3
    got = r.forward_dynamics_derivatives(Q, V, T)
    assert all(g.shape == (3, r.nv, r.nv) for g in got)
    for k in range(3):
        single = r.forward_dynamics_derivatives(Q[k], V[k], T[k])
        for g, w, s in zip(got, _pin_fd(case, Q[k], V[k], T[k]), single):
            assert rel(g[k], w) <= 1e-10
            if case.G is None:
                assert np.array_equal(g[k], s)  # the batch is the single call, bit for bit


def test_forward_dynamics_derivatives_out():
    case = Case("panda")
    r = case.robot
    rng = np.random.default_rng(24)
    q, v, tau = case.state(rng)
    want = [x.copy() for x in r.forward_dynamics_derivatives(q, v, tau)]
    out = np.full((3, r.nv, r.nv), np.nan)
    got = r.forward_dynamics_derivatives(q, v, tau, out=out)
    assert all(np.shares_memory(g, out) for g in got)
    for g, w in zip(got, want):
        assert np.array_equal(g, w)
    with pytest.raises(ValueError, match="out"):
        r.forward_dynamics_derivatives(q, v, tau, out=np.zeros((2, r.nv, r.nv)))
    with pytest.raises(ValueError, match="batch"):
        r.forward_dynamics_derivatives(q[None], v[None], tau[None],
                                       f_ext={"panda_link5": np.ones(6)})


@pytest.mark.parametrize("name,links", [("panda", ("panda_link4", "panda_link7")),
                                        ("solo12", ("FL_LOWER_LEG", "base_link"))])
def test_forward_dynamics_derivatives_f_ext(name, links):
    case = Case(name)
    pin, pm, r = case.pin, case.pm, case.robot
    rng = np.random.default_rng(25)
    q, v, _ = case.state(rng)
    tau = rng.normal(size=r.nv) * 3
    wr = {lk: rng.normal(size=6) * 5.0 for lk in links}
    fext = [pin.Force.Zero() for _ in range(pm.njoints)]
    for lk, w in wr.items():
        fr = pm.frames[pm.getFrameId(lk, pin.BODY)]
        fext[fr.parentJoint] += fr.placement.act(pin.Force(w[:3], w[3:]))
    got = r.forward_dynamics_derivatives(q, v, tau, f_ext=wr)
    for g, w in zip(got, _pin_fd(case, q, v, tau, fext)):
        assert rel(g, w) <= 1e-10


def test_forward_dynamics_derivatives_tangent_convention():
    """Independent of Pinocchio's derivative code: 8th-order central differences of our own
    forward dynamics along ``pin.integrate(q, h e_k)`` (floating base) and q̇ + h e_k."""
    case = Case("solo12")
    pin, pm, r = case.pin, case.pm, case.robot
    rng = np.random.default_rng(26)
    q, v, _ = case.state(rng)
    tau = rng.normal(size=r.nv)
    dq, dv, _ = r.forward_dynamics_derivatives(q, v, tau)
    c = (4 / 5, -1 / 5, 4 / 105, -1 / 280)
    h = 1e-3
    for k in range(r.nv):
        e = np.zeros(r.nv)
        e[k] = 1.0

        def fq(s):
            return r.forward_dynamics(pin.integrate(pm, q, s * e), v, tau)

        def fv(s):
            return r.forward_dynamics(q, v + s * e, tau)
        for f, want in ((fq, dq[:, k]), (fv, dv[:, k])):
            d = sum(ci * (f((i + 1) * h) - f(-(i + 1) * h)) for i, ci in enumerate(c)) / h
            assert np.abs(d - want).max() <= 1e-8 * max(1.0, np.abs(want).max())


@pytest.mark.parametrize("seed,floating", [(3, False), (4, False), (5, True), (11, True)])
def test_forward_dynamics_derivatives_random_trees(seed, floating):
    """Branched random trees (oblique axes, prismatic and continuous joints, massless links):
    the fused ∂FD pass (q̈ = M⁻¹(τ − b), the product that skips ∂τ's structural zeros of
    unrelated branches) against ``pin.computeABADerivatives``, fixed and floating."""
    pin, r, pm, pd = _random_tree(seed, floating, n_movable=14)
    rng = np.random.default_rng(seed)
    for _ in range(2):
        q, pq = _random_q(rng, r, pm, floating)
        v = rng.normal(size=r.nv)
        tau = rng.normal(size=r.nv) * 3
        want = [x.copy() for x in pin.computeABADerivatives(pm, pd, pq, v, tau)]
        want[2] = sym(want[2])
        got = r.forward_dynamics_derivatives(q, v, tau)
        for g, w in zip(got, want):
            assert rel(g, w) <= 1e-10
        assert rel(got[2], np.linalg.inv(sym(pin.crba(pm, pd, pq)))) <= 1e-12


def _joint_q(pm, qj):
    """Pinocchio's joint part of the configuration after a free flyer (continuous: cos, sin)."""
    out = []
    for j, x in zip(pm.joints[2:], qj):
        out += [np.cos(x), np.sin(x)] if j.nq == 2 else [x]
    return np.array(out)


def test_forward_dynamics_derivatives_views_and_overflow():
    """The three results of a single call are C-contiguous writable views of one (3, nv, nv)
    array that outlive each other; an overflowing input (|q̇| ~ 1e200) is a ValueError, single
    and batch (the finiteness check runs in the kernel's wrapper, not on the returned tuple)."""
    case = Case("solo12")
    r = case.robot
    rng = np.random.default_rng(27)
    q, v, tau = case.state(rng)
    dq, dv, mi = r.forward_dynamics_derivatives(q, v, tau)
    base = dq.base
    assert base is dv.base is mi.base and base.shape == (3, r.nv, r.nv)
    for k, g in enumerate((dq, dv, mi)):
        assert g.shape == (r.nv, r.nv) and g.flags.c_contiguous and g.flags.writeable
        assert np.array_equal(g, base[k])
    want = [x.copy() for x in _pin_fd(case, q, v, tau)]
    del dq, mi, base  # dv keeps the memory alive
    assert rel(dv, want[1]) <= 1e-10
    with pytest.raises(ValueError, match="overflowed"):
        r.forward_dynamics_derivatives(q, v * 1e200, tau)
    with pytest.raises(ValueError, match="overflowed"):
        r.forward_dynamics_derivatives(np.array([q, q]), np.array([v, v * 1e200]),
                                       np.array([tau, tau]))


_TINY = """<robot name="tiny"><link name="base"/>
<link name="l1"><inertial><mass value="2.0"/><origin xyz="0 0 0.1"/>
<inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
<link name="l2"><inertial><mass value="{m}"/><origin xyz="0 0 0"/>
<inertia ixx="{m}" iyy="{m}" izz="{m}" ixy="0" ixz="0" iyz="0"/></inertial></link>
<joint name="j1" type="revolute"><parent link="base"/><child link="l1"/><axis xyz="0 1 0"/>
<limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
<joint name="j2" type="prismatic"><parent link="base"/><child link="l2"/><axis xyz="1 0 0"/>
<origin xyz="0 0 0.3"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>"""


def test_inverse_mass_matrix_overflow_is_an_error():
    """M⁻¹'s finiteness is checked inside the kernel's mirror pass: a subnormal mass (1e-310) on
    a second root (no parent whose articulated inertia would turn NaN: 1/D overflows alone) is
    the overflow ValueError, single, batch (in the second sample) and ∂FD;
    a small but normal mass still gives Pinocchio's M⁻¹."""
    q = np.array([0.3, 0.2])
    r = mbs.load_urdf(_TINY.format(m="1e-310"))
    with pytest.raises(ValueError, match="inverse_mass_matrix: the result overflowed"):
        r.inverse_mass_matrix(q)
    with pytest.raises(ValueError, match="inverse_mass_matrix: the result overflowed"):
        r.inverse_mass_matrix(np.array([q, -q]))
    with pytest.raises(ValueError, match="forward_dynamics_derivatives: the result overflowed"):
        r.forward_dynamics_derivatives(q, np.zeros(2), np.ones(2))
    pin = pytest.importorskip("pinocchio")
    xml = _TINY.format(m="1e-6")
    r = mbs.load_urdf(xml)
    pm = pin.buildModelFromXML(xml)
    want = sym(pin.computeMinverse(pm, pm.createData(), q).copy())
    got = r.inverse_mass_matrix(np.array([q, q]))
    assert rel(got[1], want) <= 1e-12 and np.array_equal(got[0], got[0].T)
