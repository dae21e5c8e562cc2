"""Spherical joints (the URDF extension ``type="spherical"``) and URDF ``floating`` joints inside
the tree, with their configuration on the group (quaternions, Pinocchio's layout): against
Pinocchio 4.1 models built by hand with ``JointModelSpherical`` and ``JointModelFreeFlyer`` as
inner joints — poses, τ, M, forward dynamics, frame Jacobians in the four representations and
their time variation, the regressor; τ′, τ″ against 8th-order central differences of
Pinocchio's τ along an analytic motion on the group (one-parameter subgroups
q(t) = q₀ ⊕ f(t) ξ, whose velocity is f′(t) ξ); energy along a simulation on the group."""
from __future__ import annotations

import numpy as np
import pytest

import mbs_dynamics as mbs
from joint_oracle import (TOL, assert_same_configuration, check_core, check_jacobians,
                          check_jet, energy_swing, fmt, joint_xml, links_xml, pin_inertia,
                          pin_placement, random_links)


def _geometry(seed=5):
    rng = np.random.default_rng(seed)
    g = {}
    for k in ("r", "s", "f", "b", "tool"):
        g["xyz_" + k] = rng.uniform(-0.3, 0.3, 3)
        g["rpy_" + k] = rng.uniform(-1, 1, 3)
    random_links(g, rng, ("A", "S", "F", "B"))
    g["e_r"] = rng.normal(size=3)
    g["e_r"] /= np.linalg.norm(g["e_r"])
    g["e_b"] = rng.normal(size=3)
    g["e_b"] /= np.linalg.norm(g["e_b"])
    return g


def _urdf(g):
    """r: base → A; b: A → B (a branch); s (spherical): A → S; f (floating): S → F."""
    return ('<robot name="lie"><link name="base"/>' + links_xml(g, ("A", "S", "F", "B"))
            + '<link name="tool"/>'
            + joint_xml(g, "r", "continuous", "base", "A", f'<axis xyz="{fmt(g["e_r"])}"/>')
            + joint_xml(g, "b", "continuous", "A", "B", f'<axis xyz="{fmt(g["e_b"])}"/>')
            + joint_xml(g, "s", "spherical", "A", "S")
            + joint_xml(g, "f", "floating", "S", "F")
            + joint_xml(g, "tool", "fixed", "F", "tool") + "</robot>")


def _pin(g):
    pin = pytest.importorskip("pinocchio")
    T = lambda k: pin_placement(g, k)  # noqa: E731
    m = pin.Model()
    jr = m.addJoint(0, pin.JointModelRevoluteUnaligned(g["e_r"]), T("r"), "r")
    m.appendBodyToJoint(jr, pin_inertia(g, "A"), pin.SE3.Identity())
    jb = m.addJoint(jr, pin.JointModelRevoluteUnaligned(g["e_b"]), T("b"), "b")
    m.appendBodyToJoint(jb, pin_inertia(g, "B"), pin.SE3.Identity())
    js = m.addJoint(jr, pin.JointModelSpherical(), T("s"), "s")
    m.appendBodyToJoint(js, pin_inertia(g, "S"), pin.SE3.Identity())
    jf = m.addJoint(js, pin.JointModelFreeFlyer(), T("f"), "f")
    m.appendBodyToJoint(jf, pin_inertia(g, "F"), pin.SE3.Identity())
    m.addFrame(pin.Frame("tool", jf, 0, T("tool"), pin.FrameType.OP_FRAME))
    return m


@pytest.fixture(scope="module")
def pair():
    g = _geometry()
    return mbs.load_urdf(_urdf(g)), _pin(g)


def _states(robot, pm, k=3, seed=0):
    pin = pytest.importorskip("pinocchio")
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(k):
        q = pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq))
        out.append((q, *rng.normal(size=(2, pm.nv))))
    return out


def test_layout(pair):
    robot, pm = pair
    assert (robot.nq, robot.nv) == (pm.nq, pm.nv) == (13, 11)
    assert robot.lie_joints == {"s": "spherical", "f": "floating"}
    assert robot.joint_names == ("r", "b", "s_rx", "s_ry", "s_rz", "f_x", "f_y", "f_z",
                                 "f_rx", "f_ry", "f_rz")
    assert np.array_equal(robot.neutral(), np.r_[0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1.0])


def test_dynamics_against_pinocchio(pair):
    pin = pytest.importorskip("pinocchio")
    robot, pm = pair
    pd = pm.createData()
    for q, v, a in _states(robot, pm):
        check_core(robot, pm, pd, q, v, a)
        g = pin.computeGeneralizedGravity(pm, pd, q)
        assert np.abs(robot.gravity_torques(q) - g).max() <= TOL * max(1.0, np.abs(g).max())


def test_inverse_dynamics_derivatives_against_pinocchio(pair):
    """∂τ/∂q along q ⊕ δ and ∂τ/∂q̇ against pin.computeRNEADerivatives, itself checked here
    against central differences of pin.rnea along pin.integrate."""
    pin = pytest.importorskip("pinocchio")
    robot, pm = pair
    pd = pm.createData()
    I = np.eye(pm.nv)
    for q, v, a in _states(robot, pm, seed=7):
        dq, dv, _ = pin.computeRNEADerivatives(pm, pd, q, v, a)
        h = 1e-5
        fd = np.array([pin.rnea(pm, pd, pin.integrate(pm, q, h * I[j]), v, a)
                       - pin.rnea(pm, pd, pin.integrate(pm, q, -h * I[j]), v, a)
                       for j in range(pm.nv)]).T / (2 * h)
        s = max(1.0, np.abs(dq).max())
        assert np.abs(fd - dq).max() <= 1e-8 * s
        DQ, DV, M = robot.inverse_dynamics_derivatives(q, v, a)
        assert np.abs(DQ - dq).max() <= 1e-12 * s
        assert np.abs(DV - dv).max() <= 1e-12 * max(1.0, np.abs(dv).max())
        assert np.abs(M - robot.mass_matrix(q)).max() <= TOL * max(1.0, np.abs(M).max())


def test_frame_jacobians_against_pinocchio(pair):
    """The four representations; the time variation also against 8th-order differences of
    Pinocchio's Jacobian along the one-parameter subgroup q ⊕ t q̇."""
    pin = pytest.importorskip("pinocchio")
    robot, pm = pair
    for q, v, _ in _states(robot, pm, seed=1):
        check_jacobians(robot, pm, q, v, integrate=lambda q0, dv: pin.integrate(pm, q0, dv))


def test_regressor_against_pinocchio(pair):
    pin = pytest.importorskip("pinocchio")
    robot, pm = pair
    pd = pm.createData()
    # one body per joint of the group layout, as Pinocchio's (the chart's massless links none)
    P = robot.inertial_parameters()
    assert P.shape == (pm.njoints - 1, 10) and len(robot.body_names) == pm.njoints - 1
    assert np.abs(P - [pm.inertias[j].toDynamicParameters()
                       for j in range(1, pm.njoints)]).max() <= TOL
    pi = P.reshape(-1)
    for q, v, a in _states(robot, pm, seed=2):
        Y = robot.regressor(q, v, a)
        tau = pin.rnea(pm, pd, q, v, a)
        assert np.abs(Y @ pi - tau).max() <= TOL * max(1.0, np.abs(tau).max())
        Yp = pin.computeJointTorqueRegressor(pm, pd, q, v, a)
        assert np.abs(Y - Yp).max() <= TOL * max(1.0, np.abs(Yp).max())


def subgroup_motion(pm, seed, w=1.3):
    """``(q0, fder)``: q(t) = q₀ ⊕ z(t) with each joint's z_j(t) = f_j(t) ξ_j, a fixed direction
    ξ_j (a one-parameter subgroup for the spherical and free joints); ``fder(t, k)`` is z^(k)(t),
    so V^(k) = ``fder(t, k + 1)`` exactly."""
    pin = pytest.importorskip("pinocchio")
    rng = np.random.default_rng(seed)
    q0 = pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq))
    xi = rng.normal(size=pm.nv)
    nvj = [pm.joints[j].nv for j in range(1, pm.njoints)]
    amp, ph, cq = rng.uniform(0.5, 1.5, (3, len(nvj)))

    def fder(t, k):
        """k-th derivative of f_j(t) = amp sin(w t + ph) + cq t², per velocity coordinate."""
        d = amp * w ** k * np.sin(w * t + ph + k * np.pi / 2)
        d = d + (cq * t * t if k == 0 else 2 * cq * t if k == 1 else 2 * cq if k == 2 else 0)
        return np.concatenate([np.full(n, x) for n, x in zip(nvj, d)]) * xi

    return q0, fder


def test_time_derivatives_against_differences_of_pinocchio(pair):
    """Along q(t) = q₀ ⊕ z(t), each joint's z_j(t) = f_j(t) ξ_j with a fixed direction ξ_j (a
    one-parameter subgroup for the spherical and free joints), so V(t) = (f_j′(t) ξ_j) and
    V^(k) = (f_j^(k+1)(t) ξ_j) exactly; τ′, τ″ against 8th-order differences of pin.rnea."""
    pin = pytest.importorskip("pinocchio")
    robot, pm = pair
    pd = pm.createData()
    q0, fder = subgroup_motion(pm, 3)

    def tau(t):
        return pin.rnea(pm, pd, pin.integrate(pm, q0, fder(t, 0)), fder(t, 1), fder(t, 2))

    for t in (0.0, 0.7):
        q = pin.integrate(pm, q0, fder(t, 0))
        vs = np.array([fder(t, k) for k in range(1, 5)])
        check_jet(robot.torque_derivatives((q, vs)), tau, t)


def test_integrate_is_pinocchios(pair):
    pin = pytest.importorskip("pinocchio")
    robot, pm = pair
    for q, v, _ in _states(robot, pm, seed=4):
        assert_same_configuration(pm, robot.integrate(q, v), pin.integrate(pm, q, v))


def test_unsupported_capabilities_name_the_joint(pair):
    robot, pm = pair
    assert robot.link_names[:2] == ("A", "B") and len(robot.lower) == robot.nv
    assert abs(robot.total_mass - sum(pm.inertias[i].mass for i in range(1, 5))) < 1e-12
    for name in ("kinematic_hessian", "coriolis_matrix", "with_payload"):
        with pytest.raises(NotImplementedError, match=f"{name} does not take the "
                                                      "spherical/floating joint 's'"):
            getattr(robot, name)
    # closed loops take them, passive (test/loops/test_loops_lie.py): one connect cannot
    # determine the free joint 'f', named
    with pytest.raises(ValueError, match="joint 'f': the loops do not determine"):
        mbs.load_urdf(_urdf(_geometry()), loops=[dict(name="l", type="connect",
                                                      frame_a="B", frame_b="tool")])
    with pytest.raises(ValueError, match="quaternion"):
        robot.inverse_dynamics(np.r_[np.zeros(5), 2.0, np.zeros(7)], np.zeros(11), np.zeros(11))


def test_simulation_on_the_group_conserves_pinocchios_energy(pair):
    """Free motion under gravity with the chart RK4: the quaternions stay unit and Pinocchio's
    kinetic + potential energy stays constant while joules swing between the two."""
    pin = pytest.importorskip("pinocchio")
    robot, pm = pair
    rng = np.random.default_rng(6)
    q0 = pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq))
    z = np.zeros(robot.nv)
    res = mbs.simulate(robot, lambda t, s: z, 0.5, 1e-3, q0=q0, qd0=rng.normal(size=robot.nv))
    drift, swing = energy_swing(pm, res, every=10)
    assert swing > 1.0
    assert drift < 1e-8 * swing
    for sl in (slice(2, 6), slice(9, 13)):  # the quaternions of s (q[2:6]) and f (q[6:13])
        assert np.abs(np.linalg.norm(res.q[:, sl], axis=1) - 1).max() < 1e-14


def test_round_trip_through_urdf(pair):
    """to_urdf writes each spherical / floating joint back as one joint (no chart links): the
    same robot loads again."""
    robot, pm = pair
    text = robot.to_urdf()
    assert 'type="spherical"' in text and 'type="floating"' in text and "_rx" not in text
    again = mbs.load_urdf(text)
    assert again.joint_names == robot.joint_names and again.nq == robot.nq
    for q, v, a in _states(robot, pm, seed=8):
        tau = robot.inverse_dynamics(q, v, a)
        assert np.abs(again.inverse_dynamics(q, v, a) - tau).max() <= TOL * max(
            1, np.abs(tau).max())
        assert np.abs(again.frame_placement(q, "tool") - robot.frame_placement(q, "tool")).max() \
            <= 1e-13


def test_keyword_arguments_as_robot(pair):
    """out=, representation=, method= work as on a Robot; f_ext= with a batch is refused."""
    robot, pm = pair
    q, v, a = _states(robot, pm, seed=9)[0]
    tau = robot.inverse_dynamics(q, v, a)
    out = np.empty(robot.nv)
    assert robot.inverse_dynamics(q, v, a, out=out) is out and np.array_equal(out, tau)
    for rep in ("spatial", "hybrid"):
        assert np.abs(robot.inverse_dynamics(q, v, a, representation=rep) - tau).max() <= 1e-12
    with pytest.raises(ValueError, match="dca.*joint 's_rx'.*singular inertia"):
        robot.forward_dynamics(q, v, tau, method="dca")  # the chart's massless links
    jet = robot.torque_derivatives((q, np.stack([v, a, v])))
    o = np.empty_like(jet)
    assert robot.torque_derivatives((q, np.stack([v, a, v])), out=o) is o
    assert np.array_equal(o, jet)
    with pytest.raises(ValueError, match="f_ext is not supported with batch"):
        robot.inverse_dynamics(q[None], v[None], a[None], f_ext={"tool": np.ones(6)})
