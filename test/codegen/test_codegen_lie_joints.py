"""Generated C for spherical joints and URDF ``floating`` joints inside the tree (issue 31):
against Pinocchio 4.1 models built by hand with ``JointModelSpherical`` / ``JointModelFreeFlyer``
as inner joints (and a free-flyer root for a floating base) — τ, M, g, forward dynamics and
LOCAL frame Jacobians to 1e-12 relative; the jets τ′, τ″ against 8th-order central differences of
``pin.rnea`` along an analytic motion on the group (q(t) = q₀ ⊕ f(t) ξ, a one-parameter subgroup
per joint, so V^(k) = f^(k+1)(t) ξ exactly); bad quaternions refused with the clear error."""
from __future__ import annotations

import os
import shutil
import warnings

import numpy as np
import pytest

import mbs_dynamics as mbs
from mbs_dynamics import codegen
from mbs_dynamics.model.model import build
from mbs_dynamics.robot import Robot
from joint_oracle import (check_jet, fmt, joint_xml, links_xml, pin_inertia, pin_placement,
                          random_links)
from test_codegen import cache  # noqa: F401  (autouse: a private compile cache per module)
from test_spherical_joint import subgroup_motion

TOL = 1e-12
CC = shutil.which(os.environ.get("CC", "cc"))
needs_cc = pytest.mark.skipif(CC is None, reason="no C compiler")


def rel(a, b):
    return np.abs(np.asarray(a) - b).max() / max(1.0, np.abs(b).max())


# (name, URDF type, parent link, child link); every child link has a random inertial; a fixed
# joint "tool" hangs a frame from the last link
TREES = {
    # a spherical joint mid-chain, a branch, a prismatic joint after it
    "spherical_mid": [("r", "continuous", "base", "A"), ("b", "continuous", "A", "B"),
                      ("s", "spherical", "A", "S"), ("e", "continuous", "S", "E"),
                      ("p", "prismatic", "E", "P")],
    # a spherical joint carrying an inner free joint (the chart has 9 links)
    "spherical_free": [("r", "continuous", "base", "A"), ("b", "continuous", "A", "B"),
                       ("s", "spherical", "A", "S"), ("f", "floating", "S", "F")],
    # an inner free joint first, a hinge after it
    "free_first": [("f", "floating", "base", "F"), ("e", "continuous", "F", "E")],
    # a floating base with a spherical joint (the chart Robot: Python does not load it as one)
    "base_spherical": [("r", "continuous", "base", "A"), ("s", "spherical", "A", "S"),
                       ("e", "prismatic", "S", "E")],
}
FLOATING_BASE = {"base_spherical"}


def _geometry(tree, seed):
    rng = np.random.default_rng(seed)
    g = {}
    names = ["base"] + [c for *_, c in tree]
    for j in [j[0] for j in tree] + ["tool"]:
        g["xyz_" + j] = rng.uniform(-0.3, 0.3, 3)
        g["rpy_" + j] = rng.uniform(-1, 1, 3)
        e = rng.normal(size=3)
        g["e_" + j] = e / np.linalg.norm(e)
    random_links(g, rng, names)
    return g


def _urdf(tree, g):
    links = [c for *_, c in tree]
    xml = '<robot name="lie_cg">' + links_xml(g, ["base"] + links) + '<link name="tool"/>'
    for name, typ, par, ch in tree:
        extra = f'<axis xyz="{fmt(g["e_" + name])}"/>' if typ in ("continuous", "prismatic") \
            else ""
        if typ == "prismatic":
            extra += '<limit lower="-1" upper="1" effort="1" velocity="1"/>'
        xml += joint_xml(g, name, typ, par, ch, extra)
    return xml + joint_xml(g, "tool", "fixed", links[-1], "tool") + "</robot>"


def _pin(tree, g, floating_base):
    pin = pytest.importorskip("pinocchio")
    m = pin.Model()
    jid = {"base": 0}
    if floating_base:
        jid["base"] = m.addJoint(0, pin.JointModelFreeFlyer(), pin.SE3.Identity(), "root")
        m.appendBodyToJoint(jid["base"], pin_inertia(g, "base"), pin.SE3.Identity())
    for name, typ, par, ch in tree:
        jm = {"continuous": lambda: pin.JointModelRevoluteUnaligned(g["e_" + name]),
              "prismatic": lambda: pin.JointModelPrismaticUnaligned(g["e_" + name]),
              "spherical": pin.JointModelSpherical, "floating": pin.JointModelFreeFlyer}[typ]()
        jid[ch] = m.addJoint(jid[par], jm, pin_placement(g, name), name)
        m.appendBodyToJoint(jid[ch], pin_inertia(g, ch), pin.SE3.Identity())
    for ch, j in jid.items():
        m.addFrame(pin.Frame(ch, j, 0, pin.SE3.Identity(), pin.FrameType.BODY))
    last = tree[-1][3]
    m.addFrame(pin.Frame("tool", jid[last], 0, pin_placement(g, "tool"),
                         pin.FrameType.OP_FRAME))
    return m


def _robot(key, seed=11):
    tree = TREES[key]
    g = _geometry(tree, seed)
    xml = _urdf(tree, g)
    fb = key in FLOATING_BASE
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", mbs.URDFWarning)
        if fb:  # load_urdf refuses it (LieJointRobot takes no floating base): the chart Robot
            robot = Robot(build(xml, floating_base=True))
        else:
            robot = mbs.load_urdf(xml)
    return robot, _pin(tree, g, fb), tree


_COMPILED = {}


def _compiled(key):
    if key not in _COMPILED:
        robot, pm, tree = _robot(key)
        frames = ["tool"] + [c for *_, c in tree]
        _COMPILED[key] = (robot, pm, codegen.compile(robot, frames=frames), frames)
    return _COMPILED[key]


def _states(pm, k, seed):
    pin = pytest.importorskip("pinocchio")
    rng = np.random.default_rng(seed)
    return [(pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq)),
             *rng.normal(size=(2, pm.nv))) for _ in range(k)]


@needs_cc
@pytest.mark.parametrize("key", list(TREES))
def test_dynamics_and_jacobians_against_pinocchio(key):
    pin = pytest.importorskip("pinocchio")
    robot, pm, c, frames = _compiled(key)
    assert isinstance(c, codegen.CompiledRobot)
    assert (c.nq, c.nv) == (pm.nq, pm.nv)
    pd = pm.createData()
    for q, v, a in _states(pm, 3, seed=len(key)):
        tau = pin.rnea(pm, pd, q, v, a)
        assert rel(c.inverse_dynamics(q, v, a), tau) <= TOL
        M = pin.crba(pm, pd, q)
        M = np.triu(M) + np.triu(M, 1).T
        assert rel(c.mass_matrix(q), M) <= TOL
        assert rel(c.gravity_torques(q), pin.computeGeneralizedGravity(pm, pd, q)) <= TOL
        ddq = pin.aba(pm, pd, q, v, tau)
        assert rel(c.forward_dynamics(q, v, tau), ddq) <= max(TOL, 1e-15 * np.linalg.cond(M))
        assert rel(c.forward_dynamics(q, v, tau), a) <= max(TOL, 1e-15 * np.linalg.cond(M))
        pin.computeJointJacobians(pm, pd, q)
        pin.updateFramePlacements(pm, pd)
        for f in frames:
            J = pin.getFrameJacobian(pm, pd, pm.getFrameId(f), pin.ReferenceFrame.LOCAL)
            assert np.abs(c.frame_jacobian(q, f) - J).max() <= TOL * max(1.0, np.abs(J).max()), f
        # batches through the fast path: the same numbers row by row
        Q = np.array([q, q])
        assert np.array_equal(c.inverse_dynamics(Q, np.array([v, v]), np.array([a, a]))[1],
                              c.inverse_dynamics(q, v, a))


@needs_cc
@pytest.mark.parametrize("key", list(TREES))
def test_jets_against_differences_of_pinocchio(key):
    """τ, τ′, τ″ of the generated code along q(t) = q₀ ⊕ z(t) (z_j = f_j(t) ξ_j: V^(k) =
    f^(k+1)(t) ξ) against pin.rnea and its 8th-order central differences; and, tighter, against
    the Python library's jets (themselves checked against Pinocchio in test/model)."""
    pin = pytest.importorskip("pinocchio")
    robot, pm, c, _ = _compiled(key)
    pd = pm.createData()
    q0, fder = subgroup_motion(pm, 5)

    def tau(t):
        return pin.rnea(pm, pd, pin.integrate(pm, q0, fder(t, 0)), fder(t, 1), fder(t, 2))

    for t in (0.0, 0.6):
        q = pin.integrate(pm, q0, fder(t, 0))
        vs = np.array([fder(t, k) for k in range(1, 5)])
        jet = c.torque_derivatives((q, vs))
        assert jet.shape == (3, pm.nv)
        check_jet(jet, tau, t)
        if isinstance(robot, mbs.model.lie_joints.LieJointRobot):
            assert rel(jet, robot.torque_derivatives((q, vs))) <= TOL


@needs_cc
def test_intermediate_chart_links_as_the_python_library():
    """The chart's own links (``S_spherical_rx`` …) are frames of the LieJointRobot: the compiled
    Jacobian of each is the Python library's (columns 0..c of the joint)."""
    robot, pm, _, _ = _compiled("spherical_free")
    chart = [ln for ln in robot.model.link_frames if "_spherical_" in ln or "_floating_" in ln]
    assert len(chart) == 2 + 5
    c = codegen.compile(robot, frames=chart)
    for q, _, _ in _states(pm, 2, seed=3):
        for f in chart:
            assert rel(c.frame_jacobian(q, f), robot.frame_jacobian(q, f)) <= TOL, f


@needs_cc
def test_bad_quaternions_are_refused():
    robot, pm, c, _ = _compiled("spherical_free")
    q, v, a = _states(pm, 1, seed=4)[0]
    for bad, words in [(2.0, "joint 's'.*not a unit quaternion"),
                       (np.nan, "not a unit quaternion|NaN|finite")]:
        x = q.copy()
        x[5] = bad  # s's qw (q = r, b, s (4), f (7))
        for call in (lambda: c.inverse_dynamics(x, v, a), lambda: c.mass_matrix(x),
                     lambda: c.gravity_torques(x), lambda: c.frame_jacobian(x, "tool"),
                     lambda: c.torque_derivatives((x, np.zeros((4, c.nv))))):
            with pytest.raises(ValueError, match=words):
                call()
    x = q.copy()
    x[12] = 3.0  # f's qw
    with pytest.raises(ValueError, match="joint 'f'.*not a unit quaternion"):
        c.inverse_dynamics(x, v, a)
    with pytest.raises(ValueError, match="not a unit quaternion"):
        c.inverse_dynamics(np.array([x, q]), np.array([v, v]), np.array([a, a]))
    # the base quaternion of a floating base keeps its message
    _, pmb, cb, _ = _compiled("base_spherical")
    qb = _states(pmb, 1, seed=5)[0][0]
    qb[6] = 2.0
    with pytest.raises(ValueError, match="base quaternion"):
        cb.gravity_torques(qb)


@needs_cc
def test_chart_robot_fallbacks_are_refused():
    """A chart Robot's own methods take Euler-angle chart coordinates: the compiled object never
    hands a call to it."""
    _, pm, c, _ = _compiled("base_spherical")
    q, v, a = _states(pm, 1, seed=6)[0]
    with pytest.raises(NotImplementedError, match="joint 's' .spherical."):
        c.frame_jacobian(q, "tool", "spatial")
    with pytest.raises(NotImplementedError, match="joint 's' .spherical."):
        c.inverse_dynamics(q, v, a, f_ext={"tool": np.ones(6)})
    with pytest.raises(NotImplementedError, match="joint 's' .spherical."):
        c.regressor(q, v, a)


def test_generated_header_names_the_layout():
    robot, _, _ = _robot("spherical_free")
    h = codegen.generate(robot, functions=("gravity_torques",))["robot.h"]
    assert "#define robot_NQ 13" in h and "#define robot_NV 11" in h
    assert "Joints: r, b, s, f." in h and "spherical joint: q (qx, qy, qz, qw)" in h
    assert "q = joints, v = joint velocities" in h


MIMIC = [("r", "continuous", "base", "A"), ("m", "continuous", "A", "Mm"),
         ("s", "spherical", "A", "S"), ("e", "continuous", "S", "E")]


@needs_cc
def test_mimic_joint_beside_a_spherical_joint():
    """A mimic joint elsewhere in the tree (m = 1.5 r + 0.2) with a spherical joint (the chart
    Robot: Python does not load the pair as one robot): Pinocchio's full model projected by
    G (v_full = G v), τ = Gᵀ τ_full, M = Gᵀ M_full G, J = J_full G, and the jets along
    q(t) = q₀ ⊕ G z(t) against differences of Gᵀ τ_full."""
    pin = pytest.importorskip("pinocchio")
    g = _geometry(MIMIC, 17)
    xml = _urdf(MIMIC, g).replace(
        '<axis xyz="' + fmt(g["e_m"]) + '"/>',
        '<axis xyz="' + fmt(g["e_m"]) + '"/><mimic joint="r" multiplier="1.5" offset="0.2"/>')
    assert "<mimic" in xml
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", mbs.URDFWarning)
        robot = Robot(build(xml))
    assert robot.model.mimic and robot.model.lie_joints
    frames = ["tool", "Mm", "S"]
    c = codegen.compile(robot, frames=frames)
    pm = _pin(MIMIC, g, False)
    pd = pm.createData()
    assert (c.nq, c.nv) == (pm.nq - 1, pm.nv - 1) == (6, 5)
    G = np.zeros((pm.nv, c.nv))  # full v (r, m, s (3), e) ← public (r, s (3), e)
    G[0, 0], G[1, 0] = 1.0, 1.5
    G[2:, 1:] = np.eye(4)

    def full_q(q):
        return np.r_[q[0], 1.5 * q[0] + 0.2, q[1:]]

    rng = np.random.default_rng(8)
    for _ in range(3):
        qf = pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq))
        q = np.delete(qf, 1)
        qf = full_q(q)
        v, a = rng.normal(size=(2, c.nv))
        tau = G.T @ pin.rnea(pm, pd, qf, G @ v, G @ a)
        assert rel(c.inverse_dynamics(q, v, a), tau) <= TOL
        M = pin.crba(pm, pd, qf)
        M = G.T @ (np.triu(M) + np.triu(M, 1).T) @ G
        assert rel(c.mass_matrix(q), M) <= TOL
        assert rel(c.gravity_torques(q), G.T @ pin.computeGeneralizedGravity(pm, pd, qf)) <= TOL
        assert rel(c.forward_dynamics(q, v, tau), a) <= max(TOL, 1e-15 * np.linalg.cond(M))
        pin.computeJointJacobians(pm, pd, qf)
        pin.updateFramePlacements(pm, pd)
        for f in frames:
            J = pin.getFrameJacobian(pm, pd, pm.getFrameId(f), pin.ReferenceFrame.LOCAL) @ G
            assert np.abs(c.frame_jacobian(q, f) - J).max() <= TOL * max(1.0, np.abs(J).max()), f
    # jets: each public joint moves along f_j(t) ξ_j (a one-parameter subgroup for s)
    xi = rng.normal(size=c.nv)
    amp, ph, cq = rng.uniform(0.5, 1.5, (3, 3))
    per = np.array([0, 1, 1, 1, 2])  # public coordinate → joint (r, s, s, s, e)
    w = 1.3

    def z(t, k):
        d = amp * w ** k * np.sin(w * t + ph + k * np.pi / 2)
        d = d + (cq * t * t if k == 0 else 2 * cq * t if k == 1 else 2 * cq if k == 2 else 0)
        return d[per] * xi

    q0 = full_q(np.delete(pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq)), 1))

    def tau_t(t):
        return G.T @ pin.rnea(pm, pd, pin.integrate(pm, q0, G @ z(t, 0)), G @ z(t, 1),
                              G @ z(t, 2))

    for t in (0.0, 0.5):
        q = np.delete(pin.integrate(pm, q0, G @ z(t, 0)), 1)
        check_jet(c.torque_derivatives((q, np.array([z(t, k) for k in range(1, 5)]))), tau_t, t)
