"""Universal and cylindrical joints (the package's URDF extension types ``universal`` with
``<axis>``/``<axis2>`` and ``cylindrical``), built as 1-DOF joints through massless links.
Against Pinocchio 4.1 models built joint by joint (never from our URDF): its own
``JointModelUniversal`` and a ``JointModelComposite`` of a revolute and a prismatic joint on one
axis for the cylindrical joint — τ, M, forward dynamics, frame poses and Jacobians (and their
time variation) in the four representations, the regressor; τ′, τ″ against 8th-order central
differences of Pinocchio's τ along an analytic trajectory; energy along a simulation.
∂τ/∂(q, q̇) is compared with Pinocchio's chain of 1-DOF joints, because Pinocchio 4.1's
``computeRNEADerivatives`` is wrong for ``JointModelUniversal`` (issue 31)."""
from __future__ import annotations

import numpy as np
import pytest

import mbs_dynamics as mbs
from joint_oracle import (TOL, check_core, check_jacobians, check_jet, fmt, joint_xml,
                          links_xml, pin_inertia, pin_placement, random_links,
                          energy_swing, sine_motion)


def _unit(v):
    v = np.asarray(v, dtype=float)
    return v / np.linalg.norm(v)


def _geometry(orthogonal=True):
    rng = np.random.default_rng(7 if orthogonal else 8)
    e1 = _unit(rng.normal(size=3))
    e2 = np.cross(e1, rng.normal(size=3)) if orthogonal else rng.normal(size=3)
    g = dict(e_a=_unit(rng.normal(size=3)), e_b=_unit(rng.normal(size=3)), e1=e1,
             e2=_unit(e2), e_c=_unit(rng.normal(size=3)))
    for k in ("a", "b", "u", "c", "tool"):
        g[f"xyz_{k}"] = rng.uniform(-0.3, 0.3, 3)
        g[f"rpy_{k}"] = rng.uniform(-1, 1, 3)
    random_links(g, rng, ("A", "B", "U", "C"))
    return g


def _urdf(g):
    return ('<robot name="uc"><link name="base"/>' + links_xml(g, ("A", "B", "U", "C"))
            + '<link name="tool"/>'
            + joint_xml(g, "a", "continuous", "base", "A", f'<axis xyz="{fmt(g["e_a"])}"/>')
            + joint_xml(g, "b", "continuous", "A", "B", f'<axis xyz="{fmt(g["e_b"])}"/>')
            + joint_xml(g, "u", "universal", "A", "U",
                        f'<axis xyz="{fmt(g["e1"])}"/><axis2 xyz="{fmt(g["e2"])}"/>')
            + joint_xml(g, "c", "cylindrical", "U", "C", f'<axis xyz="{fmt(g["e_c"])}"/>')
            + joint_xml(g, "tool", "fixed", "C", "tool") + "</robot>")


def _pin(g, native=True):
    """Pinocchio model in our joint order (a, b, u, c: children by joint name). ``native``:
    JointModelUniversal and a composite RX+PX joint; else a chain of 1-DOF joints."""
    pin = pytest.importorskip("pinocchio")
    T = lambda k: pin_placement(g, k)  # noqa: E731
    m = pin.Model()
    ja = m.addJoint(0, pin.JointModelRevoluteUnaligned(g["e_a"]), T("a"), "a")
    m.appendBodyToJoint(ja, pin_inertia(g, "A"), pin.SE3.Identity())
    jb = m.addJoint(ja, pin.JointModelRevoluteUnaligned(g["e_b"]), T("b"), "b")
    m.appendBodyToJoint(jb, pin_inertia(g, "B"), pin.SE3.Identity())
    if native:
        ju = m.addJoint(ja, pin.JointModelUniversal(g["e1"], g["e2"]), T("u"), "u")
        comp = pin.JointModelComposite(pin.JointModelRevoluteUnaligned(g["e_c"]))
        comp.addJoint(pin.JointModelPrismaticUnaligned(g["e_c"]))
        jc = m.addJoint(ju, comp, T("c"), "c")
    else:
        j1 = m.addJoint(ja, pin.JointModelRevoluteUnaligned(g["e1"]), T("u"), "u_1")
        ju = m.addJoint(j1, pin.JointModelRevoluteUnaligned(g["e2"]), pin.SE3.Identity(), "u_2")
        j1 = m.addJoint(ju, pin.JointModelRevoluteUnaligned(g["e_c"]), T("c"), "c_theta")
        jc = m.addJoint(j1, pin.JointModelPrismaticUnaligned(g["e_c"]), pin.SE3.Identity(),
                        "c_d")
    m.appendBodyToJoint(ju, pin_inertia(g, "U"), pin.SE3.Identity())
    m.appendBodyToJoint(jc, pin_inertia(g, "C"), pin.SE3.Identity())
    m.addFrame(pin.Frame("tool", jc, 0, T("tool"), pin.FrameType.OP_FRAME))
    return m


@pytest.fixture(scope="module", params=[True, False], ids=["orthogonal", "oblique"])
def case(request):
    g = _geometry(request.param)
    robot = mbs.load_urdf(_urdf(g))
    # Pinocchio's universal joint is defined for any two axes; the oblique case is compared
    # with the chain of two hinges (its motion subspace assumes nothing else)
    return robot, _pin(g, native=request.param), _pin(g, native=False)


def _states(n, k=4, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=(3, n)) for _ in range(k)]


def test_joint_names_and_massless_links():
    robot = mbs.load_urdf(_urdf(_geometry()))
    assert robot.joint_names == ("a", "b", "u_1", "u_2", "c_theta", "c_d")
    m = robot.model
    assert m.link_names[2:] == ("U_universal", "U", "C_cylindrical", "C")
    assert m.joint_types[2:] == ("continuous", "continuous", "continuous", "prismatic")
    for i in (2, 4):
        assert not np.any(m.inertias[i])


def test_dynamics_against_pinocchio(case):
    pin = pytest.importorskip("pinocchio")
    robot, pm, chain = case
    pd, cd = pm.createData(), chain.createData()
    assert pm.nq == pm.nv == robot.n == 6
    for q, v, a in _states(robot.n):
        s = check_core(robot, pm, pd, q, v, a)
        dq, dv, _ = pin.computeRNEADerivatives(chain, cd, q, v, a)
        ours = robot.inverse_dynamics_derivatives(q, v, a)
        assert np.abs(ours[0] - dq).max() <= 1e-11 * s
        assert np.abs(ours[1] - dv).max() <= 1e-11 * s


def test_frame_jacobians_against_pinocchio(case):
    """Body, spatial, hybrid = Pinocchio's LOCAL, WORLD, LOCAL_WORLD_ALIGNED; mixed =
    diag(I, Rᵀ) hybrid (linear in world axes, angular in body axes). The time variation
    against Pinocchio's chain of hinges and against 8th-order central differences of the native
    model's Jacobian along q + t q̇: Pinocchio 4.1's ``getFrameJacobianTimeVariation`` is off by
    ~0.24 for ``JointModelUniversal`` (measured here; the chain and the differences agree)."""
    robot, pm, chain = case
    for q, v, _ in _states(robot.n, seed=1):
        check_jacobians(robot, pm, q, v, dref_model=chain)


def test_regressor_against_pinocchio(case):
    """Y π = τ; the columns of the real bodies equal Pinocchio's joint torque regressor and the
    massless links' parameters are zero."""
    pin = pytest.importorskip("pinocchio")
    robot, pm, _ = case
    pd = pm.createData()
    real = [0, 1, 3, 5]  # bodies of a, b, u_2, c_d (U_universal and C_cylindrical are massless)
    cols = np.concatenate([np.arange(10 * b, 10 * b + 10) for b in real])
    pi = robot.inertial_parameters().reshape(-1)
    assert not np.any(np.delete(pi, cols))
    for q, v, a in _states(robot.n, seed=2):
        Y = robot.regressor(q, v, a)
        tau = robot.inverse_dynamics(q, v, a)
        assert np.abs(Y @ pi - tau).max() <= TOL * max(1.0, np.abs(tau).max())
        Yp = pin.computeJointTorqueRegressor(pm, pd, q, v, a)
        Yr = Y if Yp.shape == Y.shape else Y[:, cols]  # the chain has the massless bodies too
        assert Yp.shape == Yr.shape
        assert np.abs(Yr - Yp).max() <= TOL * max(1.0, np.abs(Yp).max())


def test_time_derivatives_against_differences_of_pinocchio(case):
    """τ′, τ″ of the jets against 8th-order central differences of Pinocchio's τ along
    q(t) = a + b sin(ω t) + c t² (analytic derivatives of q)."""
    pin = pytest.importorskip("pinocchio")
    robot, pm, _ = case
    pd = pm.createData()
    qs = sine_motion(robot.n)

    def tau(t):
        return pin.rnea(pm, pd, *qs(t, 3))

    for t in (0.0, 0.7):
        check_jet(robot.torque_derivatives(qs(t, 5)), tau, t)


def test_simulation_conserves_pinocchios_energy():
    """The built-in simulator: Pinocchio's kinetic + potential energy of its universal +
    composite model stays constant while the potential energy swings by joules."""
    pin = pytest.importorskip("pinocchio")
    g = _geometry()
    robot, pm = mbs.load_urdf(_urdf(g)), _pin(g)
    z = np.zeros(robot.n)
    res = mbs.simulate(robot, lambda t, s: z, 1.0, 5e-4, q0=np.array([0.3, -0.5, 0.8, 0.1, 1, 0]),
                       qd0=np.ones(robot.n))
    drift, swing = energy_swing(pm, res)
    assert swing > 1.0
    assert drift < 1e-9 * swing


def test_round_trip_through_standard_urdf():
    """to_urdf writes the 1-DOF joints (standard URDF, readable by Pinocchio and urdfdom): the
    same robot loads back."""
    robot = mbs.load_urdf(_urdf(_geometry()))
    text = robot.to_urdf()
    assert "universal" not in text.split("<joint")[1] and 'type="cylindrical"' not in text
    again = mbs.load_urdf(text)
    assert again.joint_names == robot.joint_names
    for q, v, a in _states(robot.n, seed=5):
        tau = robot.inverse_dynamics(q, v, a)
        assert np.abs(again.inverse_dynamics(q, v, a) - tau).max() <= TOL * max(
            1, np.abs(tau).max())
        assert np.abs(again.frame_placement(q, "tool") - robot.frame_placement(q, "tool")).max() \
            <= 1e-13


@pytest.mark.parametrize("extra, match", [
    ("", "needs <axis2"),
    ('<axis2 xyz="2 0 0"/>', "parallel"),
    ('<axis2 xyz="0 nan 0"/>', "axis2"),
    ('<axis2 xyz="0 0 0"/>', "zero axis"),
])
def test_bad_universal_joint_is_a_clear_error(extra, match):
    text = ('<robot name="r"><link name="a"/><link name="b"><inertial><mass value="1"/>'
            '<inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link>'
            '<joint name="uj" type="universal"><parent link="a"/><child link="b"/>'
            f'<axis xyz="1 0 0"/>{extra}</joint></robot>')
    with pytest.raises(mbs.URDFError, match=match) as e:
        mbs.load_urdf(text)
    assert "'uj'" in str(e.value)


def test_massless_link_name_clash_is_an_error():
    text = _urdf(_geometry()).replace('<link name="tool"/>', '<link name="C_cylindrical"/>')
    text = text.replace('<child link="tool"/>', '<child link="C_cylindrical"/>')
    with pytest.raises(mbs.URDFError, match="C_cylindrical"):
        mbs.load_urdf(text)


@pytest.mark.parametrize("kind", ["universal", "cylindrical"])
def test_from_screws_rows_are_the_joint(kind):
    """Through ``from_screws`` a universal joint is two revolute screws through one point, a
    cylindrical joint a revolute and a prismatic screw on one axis, the first body massless:
    equal to Pinocchio's JointModelUniversal / composite joint at that point."""
    pin = pytest.importorskip("pinocchio")
    rng = np.random.default_rng(11)
    Q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    R, p = Q * np.sign(np.linalg.det(Q)), rng.uniform(-0.3, 0.3, 3)
    e1 = _unit(rng.normal(size=3))
    e2 = _unit(np.cross(e1, rng.normal(size=3))) if kind == "universal" else e1
    Y = [np.r_[np.cross(p, e1), e1],
         np.r_[np.cross(p, e2), e2] if kind == "universal" else np.r_[e2, 0, 0, 0]]
    A = np.array([np.eye(4), np.eye(4)])
    A[:, :3, :3], A[:, :3, 3] = R, p
    Qi, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    body = dict(mass=1.3, com=(0.1, -0.2, 0.05), inertia=Qi @ np.diag([0.05, 0.07, 0.09]) @ Qi.T)
    robot = mbs.from_screws(Y, A, inertials=[None, body])
    pm = pin.Model()
    if kind == "universal":
        jm = pin.JointModelUniversal(R.T @ e1, R.T @ e2)
    else:
        jm = pin.JointModelComposite(pin.JointModelRevoluteUnaligned(R.T @ e1))
        jm.addJoint(pin.JointModelPrismaticUnaligned(R.T @ e1))
    j = pm.addJoint(0, jm, pin.SE3(R, p), kind)
    pm.appendBodyToJoint(j, pin.Inertia(body["mass"], np.array(body["com"]), body["inertia"]),
                         pin.SE3.Identity())
    pd = pm.createData()
    for q, v, a in _states(2, seed=9):
        pin.forwardKinematics(pm, pd, q)
        assert np.abs(robot.frame_placement(q, "link2") - pd.oMi[j].homogeneous).max() <= 1e-13
        tau = pin.rnea(pm, pd, q, v, a)
        assert np.abs(robot.inverse_dynamics(q, v, a) - tau).max() <= TOL * max(
            1, np.abs(tau).max())
