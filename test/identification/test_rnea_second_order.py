"""Second-order derivatives of inverse dynamics (issue 29):
``inverse_dynamics_second_order_derivatives`` → (∂²τ/∂q², ∂²τ/∂q̇², ∂²τ/∂q∂q̇, ∂M/∂q), Pinocchio's
``ComputeRNEASecondOrderDerivatives`` layout ``[i, j, k] = ∂/∂x_k (∂τ_i/∂y_j)``.

Oracle: differences of ``pin.computeRNEADerivatives`` (Pinocchio's own first derivatives, never
ours). Along q: 8th-order central differences on ``pin.integrate(q, h e_k)`` (Pinocchio's
tangent convention for a floating base; the mimic robots' full model at ``G q + off``, projected
with G). Along q̇: ∂τ/∂q and ∂τ/∂q̇ are polynomials of degree ≤ 2 in q̇, so the central difference
with a unit step is exact up to rounding. Fixed (Panda, UR5, random trees, a random 30-joint
chain), floating (solo12, ANYmal, TALOS) and mimic robots."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import mbs_dynamics as mbs
from conftest import pin_q, random_urdf, sym
from test_identification_regressor import CASES, Case, rel

TOL = 1e-10
C8 = ((1, 4 / 5), (2, -1 / 5), (3, 4 / 105), (4, -1 / 280))


@pytest.fixture(scope="module", params=CASES)
def case(request):
    return Case(request.param)


def _first(pin, pm, pd, qp, v, a, G=None, fext=None):
    """Pinocchio's (∂τ/∂q, ∂τ/∂q̇, M) at its configuration qp (projected with G for mimic)."""
    args = (pm, pd, qp, v, a) if fext is None else (pm, pd, qp, v, a, fext)
    dq, dv, M = (x.copy() for x in pin.computeRNEADerivatives(*args))
    M = sym(M)
    if G is not None:
        dq, dv, M = G.T @ dq @ G, G.T @ dv @ G, G.T @ M @ G
    return np.array([dq, dv, M])


def oracle(pin, pm, qp, v, a, nv, G=None, fext=None, h=2e-3):
    """The four tensors from differences of Pinocchio's first derivatives (see the module)."""
    pd = pm.createData()
    Gm = np.eye(nv) if G is None else G
    vf, af = Gm @ v, Gm @ a
    qq, qa, vv, qv = (np.zeros((nv, nv, nv)) for _ in range(4))
    for k in range(nv):
        acc = 0.0
        for s, c in C8:
            for sg in (1, -1):
                qk = pin.integrate(pm, qp, sg * s * h * Gm[:, k])
                acc = acc + sg * c * _first(pin, pm, pd, qk, vf, af, G, fext)
        acc = acc / h
        qq[:, :, k], qa[:, :, k] = acc[0], acc[2]
        d = (_first(pin, pm, pd, qp, vf + Gm[:, k], af, G, fext)
             - _first(pin, pm, pd, qp, vf - Gm[:, k], af, G, fext)) / 2
        vv[:, :, k], qv[:, :, k] = d[1], d[0]
    return qq, vv, qv, qa


def _pin_fext(pin, pm, wr):
    """Pinocchio's per-joint external forces for wrenches (f, m) given in links' frames."""
    fext = [pin.Force.Zero() for _ in range(pm.njoints)]
    for lk, w in wr.items():
        fr = pm.frames[pm.getFrameId(lk, pin.BODY)]
        fext[fr.parentJoint] += fr.placement.act(pin.Force(w[:3], w[3:]))
    return fext


def _check(got, want, nv, tol=TOL):
    for g, w, name in zip(got, want, ("d2tau_dq2", "d2tau_dqd2", "d2tau_dqdqd", "dM_dq")):
        assert g.shape == (nv, nv, nv), name
        assert rel(g, w) <= tol, (name, rel(g, w))


def test_matches_differences_of_pinocchio(case):
    rng = np.random.default_rng(31)
    r = case.robot
    for _ in range(2):
        q, v, a = case.state(rng)
        got = r.inverse_dynamics_second_order_derivatives(q, v, a)
        want = oracle(case.pin, case.pm, case.to_pin(q), v, a, r.nv, case.G)
        _check(got, want, r.nv)
        # structure: ∂²τ/∂q̇² symmetric in (j, k); ∂M/∂q symmetric in (i, j)
        assert rel(got[1], got[1].transpose(0, 2, 1)) <= 1e-13
        assert rel(got[3], got[3].transpose(1, 0, 2)) <= 1e-13
        if not case.fb:  # fixed base: ∂²τ/∂q² symmetric (no Lie bracket)
            assert rel(got[0], got[0].transpose(0, 2, 1)) <= 1e-12
        else:  # the joint block is; the base's rotation block is not (q ⊕ δ on SE(3))
            j = slice(6, r.nv)
            assert rel(got[0][:, j, j], got[0][:, j, j].transpose(0, 2, 1)) <= 1e-12
            assert rel(got[0], got[0].transpose(0, 2, 1)) > 1e-6


@pytest.mark.parametrize("seed,n,branch", [(7, 30, 0.0), (8, 12, 0.3)])
def test_random_chain_and_tree(seed, n, branch):
    pin = pytest.importorskip("pinocchio")
    xml, _ = random_urdf(seed, n_movable=n, branch_prob=branch)
    r = mbs.load_urdf(xml)
    pm = pin.buildModelFromXML(xml)
    rng = np.random.default_rng(seed)
    q, v, a = rng.uniform(-2, 2, r.n), rng.normal(size=r.n), rng.normal(size=r.n)
    got = r.inverse_dynamics_second_order_derivatives(q, v, a)
    _check(got, oracle(pin, pm, pin_q(pm, q), v, a, r.nv), r.nv)


def test_floating_humanoid_talos():
    """TALOS (talos_reduced, 38 velocity coordinates, a floating humanoid)."""
    pin = pytest.importorskip("pinocchio")
    from conftest import erd_path
    from test_floating_base import _pinq
    path = erd_path("talos_data/robots/talos_reduced.urdf")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = mbs.load_urdf(path, floating_base=True)
    pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer())
    assert pm.nv == r.nv == 38
    rng = np.random.default_rng(35)
    quat = rng.normal(size=4)
    q = np.r_[rng.normal(size=3), quat / np.linalg.norm(quat), rng.uniform(-1, 1, r.n)]
    v, a = rng.normal(size=(2, r.nv))
    got = r.inverse_dynamics_second_order_derivatives(q, v, a)
    _check(got, oracle(pin, pm, _pinq(pm, q), v, a, r.nv), r.nv)


@pytest.mark.parametrize("name,links", [("panda", ("panda_link4", "panda_link7")),
                                        ("solo12", ("FL_LOWER_LEG", "base_link"))])
def test_f_ext(name, links):
    case = Case(name)
    pin, pm, r = case.pin, case.pm, case.robot
    rng = np.random.default_rng(33)
    q, v, a = case.state(rng)
    wr = {lk: rng.normal(size=6) * 5.0 for lk in links}
    fext = _pin_fext(pin, pm, wr)
    got = r.inverse_dynamics_second_order_derivatives(q, v, a, f_ext=wr)
    _check(got, oracle(pin, pm, case.to_pin(q), v, a, r.nv, fext=fext), r.nv)
    # the wrenches matter (the check can fail): without them ∂²τ/∂q² differs
    plain = r.inverse_dynamics_second_order_derivatives(q, v, a)
    assert rel(plain[0], got[0]) > 1e-6


def test_f_ext_on_a_random_tree():
    """Wrenches on links of different branches of a fixed-base tree (prismatic joints, fixed
    joints mid-chain): the entries of coordinates on different branches stay zero, the rest
    match the differences of Pinocchio with the same wrenches."""
    pin = pytest.importorskip("pinocchio")
    xml, _ = random_urdf(12, n_movable=10, branch_prob=0.5)
    r = mbs.load_urdf(xml)
    pm = pin.buildModelFromXML(xml)
    rng = np.random.default_rng(12)
    q, v, a = rng.uniform(-2, 2, r.n), rng.normal(size=r.n), rng.normal(size=r.n)
    links = [r.link_names[len(r.link_names) // 2], r.link_names[-1]]
    wr = {lk: rng.normal(size=6) * 5.0 for lk in links}
    fext = _pin_fext(pin, pm, wr)
    got = r.inverse_dynamics_second_order_derivatives(q, v, a, f_ext=wr)
    _check(got, oracle(pin, pm, pin_q(pm, q), v, a, r.nv, fext=fext), r.nv)
    plain = r.inverse_dynamics_second_order_derivatives(q, v, a)
    assert rel(plain[0], got[0]) > 1e-6


def test_overflow_is_an_error():
    """Finite inputs whose products overflow float64 give the package's overflow error (the
    kernel flags a non-finite entry without a second pass); large finite results pass."""
    r = Case("solo12").robot
    q = np.zeros(r.nq)
    q[6] = 1.0
    z = np.zeros(r.nv)
    got = r.inverse_dynamics_second_order_derivatives(q, np.full(r.nv, 1e150), z)
    assert all(np.isfinite(g).all() for g in got) and np.abs(got[0]).max() > 1e290
    with pytest.raises(ValueError, match="overflowed"):
        r.inverse_dynamics_second_order_derivatives(q, np.full(r.nv, 1e155), z)


_ONE = ('<robot name="r"><link name="base"><inertial><origin xyz="0.1 0.02 -0.03" rpy="0.1 0.2 0.3"/>'
        '<mass value="2.0"/><inertia ixx="0.1" ixy="0.01" ixz="0" iyy="0.2" iyz="0" izz="0.15"/>'
        '</inertial></link>{}</robot>')
_JOINT = ('<joint name="j1" type="{}"><parent link="base"/><child link="l1"/>'
          '<origin xyz="0.1 0.2 0.3" rpy="0.3 -0.2 0.1"/><axis xyz="0.3 0.5 0.8"/>'
          '<limit lower="-3" upper="3" effort="1" velocity="1"/></joint><link name="l1"><inertial>'
          '<origin xyz="0.05 0.1 0.0"/><mass value="1.0"/>'
          '<inertia ixx="0.05" ixy="0" ixz="0" iyy="0.04" iyz="0" izz="0.03"/></inertial></link>')


@pytest.mark.parametrize("joint,fb", [("revolute", False), ("prismatic", False), (None, True),
                                      ("revolute", True), ("prismatic", True)])
def test_smallest_robots(joint, fb):
    """One joint on a fixed base, a lone floating body, one joint on a floating base: the
    triple loop's degenerate cases (i = j = k; the base's own 6 × 6 × 6 block). Several tensors
    are exactly zero here, so the error is taken relative to max(|oracle|, 1)."""
    pin = pytest.importorskip("pinocchio")
    from test_floating_base import _pinq
    xml = _ONE.format(_JOINT.format(joint) if joint else "")
    r = mbs.load_urdf(xml, floating_base=fb)
    pm = pin.buildModelFromXML(xml, pin.JointModelFreeFlyer()) if fb else pin.buildModelFromXML(xml)
    rng = np.random.default_rng(36)
    if fb:
        quat = rng.normal(size=4)
        q = np.r_[rng.normal(size=3), quat / np.linalg.norm(quat), rng.uniform(-1, 1, r.n)]
        qp = _pinq(pm, q)
    else:
        q = qp = rng.uniform(-1, 1, r.n)
    v, a = rng.normal(size=(2, r.nv))
    got = r.inverse_dynamics_second_order_derivatives(q, v, a)
    want = oracle(pin, pm, qp, v, a, r.nv)
    for g, w in zip(got, want):
        assert np.abs(g - w).max() <= TOL * max(np.abs(w).max(), 1.0)
    if fb:  # the base's M does not depend on its pose in its own frame; its τ does
        assert np.abs(got[3][:6, :6, :6]).max() == 0.0
        assert np.abs(got[0]).max() > 1e-3


def test_batches_out_and_repeated_calls():
    case = Case("solo12")
    r = case.robot
    rng = np.random.default_rng(34)
    states = [case.state(rng) for _ in range(3)]
    Q, V, A = (np.array(x) for x in zip(*states))
    got = r.inverse_dynamics_second_order_derivatives(Q, V, A)
    assert all(g.shape == (3, r.nv, r.nv, r.nv) for g in got)
    for s in range(3):
        one = r.inverse_dynamics_second_order_derivatives(Q[s], V[s], A[s])
        for g, o in zip(got, one):
            assert np.array_equal(g[s], o)
    keep = [x.copy() for x in one]
    r.inverse_dynamics_second_order_derivatives(Q[0], V[0], A[0])
    for x, y in zip(one, keep):
        assert np.array_equal(x, y)
    out = np.full((4, r.nv, r.nv, r.nv), np.nan)
    res = r.inverse_dynamics_second_order_derivatives(Q[2], V[2], A[2], out=out)
    assert all(np.shares_memory(g, out) for g in res)
    for g, y in zip(res, keep):
        assert np.array_equal(g, y)
    with pytest.raises(ValueError, match="out"):
        r.inverse_dynamics_second_order_derivatives(Q[0], V[0], A[0],
                                                     out=np.zeros((3, r.nv, r.nv, r.nv)))


def test_bad_input():
    r = Case("ur5").robot
    z = np.zeros(6)
    with pytest.raises(ValueError, match="qd"):
        r.inverse_dynamics_second_order_derivatives(z, np.zeros(4), z)
    with pytest.raises(ValueError, match="qdd"):
        r.inverse_dynamics_second_order_derivatives(z, z, np.zeros(7))
    with pytest.raises(ValueError, match="q"):
        r.inverse_dynamics_second_order_derivatives(np.zeros(5), z, z)
    with pytest.raises(ValueError, match="NaN"):
        r.inverse_dynamics_second_order_derivatives(z, z, np.full(6, np.nan))
    with pytest.raises(ValueError, match="NaN"):
        r.inverse_dynamics_second_order_derivatives(np.r_[np.inf, z[1:]], z, z)
    with pytest.raises(TypeError):
        r.inverse_dynamics_second_order_derivatives(z.astype(complex), z, z)
    with pytest.raises(ValueError, match="f_ext"):
        r.inverse_dynamics_second_order_derivatives(z, z, z, f_ext={"no_such_link": np.ones(6)})
    with pytest.raises(ValueError, match="batch"):
        r.inverse_dynamics_second_order_derivatives(z[None], z[None], z[None],
                                                     f_ext={"wrist_3_link": np.ones(6)})
    fb = Case("solo12").robot
    q = np.zeros(fb.nq)
    q[3] = 2.0  # not a unit quaternion
    with pytest.raises(ValueError, match="quaternion"):
        fb.inverse_dynamics_second_order_derivatives(q, np.zeros(fb.nv), np.zeros(fb.nv))
    mr = Case("mimic_panda").robot  # a MimicRobot: single samples only, checked inputs
    z = np.zeros(mr.nv)
    with pytest.raises(ValueError, match="q has shape"):
        mr.inverse_dynamics_second_order_derivatives(np.zeros((2, mr.nq)), z[None], z[None])
    with pytest.raises(ValueError, match="NaN"):
        mr.inverse_dynamics_second_order_derivatives(np.zeros(mr.nq), z, np.full(mr.nv, np.nan))
