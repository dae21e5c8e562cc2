"""Mimic joints as dependent coordinates (issue 12, item 1).

Oracle: Pinocchio's FULL model of the same file (``buildModelFromUrdf`` without ``mimic=True``
treats mimic joints as ordinary independent joints — checked below), projected onto the
independent coordinates with a G built HERE from the URDF text (not from the code under test):
q_full = G q + off, τ = Gᵀ τ_full(G q̇, G q̈), M = Gᵀ M_full G, C̄ = Gᵀ C̄_full G, …
Pinocchio's own ``mimic=True`` is a second check where it builds and is right.
"""
from __future__ import annotations

import math
import re
import warnings
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import mbs_dynamics as mbs
from mbs_dynamics import URDFError
from conftest import erd_path, random_urdf, sym, trajectory

TOL = 1e-12  # relative, ‖a − b‖∞ / ‖b‖∞
D1 = np.array([1 / 280, -4 / 105, 1 / 5, -4 / 5, 0, 4 / 5, -1 / 5, 4 / 105, -1 / 280])
D2 = np.array([-1 / 560, 8 / 315, -1 / 5, 8 / 5, -205 / 72, 8 / 5, -1 / 5, 8 / 315, -1 / 560])

# a tree with a mimic chain jg → jc → jf → je across branches (masters in other branches), a
# revolute mimicking a continuous joint, a prismatic mimicking a revolute-like chain, and a
# mimic tag on a fixed joint (ignored)
_IN = ('<inertial><origin xyz="{c}" rpy="{r}"/><mass value="{m}"/><inertia ixx="{a}" ixy="0.001" '
       'ixz="-0.002" iyy="{b}" iyz="0.0015" izz="{d}"/></inertial>')


def _link(name, i):
    rng = np.random.default_rng(100 + i)
    c = " ".join(f"{x:.4f}" for x in rng.uniform(-0.1, 0.1, 3))
    r = " ".join(f"{x:.4f}" for x in rng.uniform(-1, 1, 3))
    a, b = rng.uniform(0.02, 0.05, 2)
    return f'<link name="{name}">' + _IN.format(c=c, r=r, m=f"{rng.uniform(0.3, 2):.4f}",
                                                a=f"{a:.5f}", b=f"{b:.5f}",
                                                d=f"{0.5 * (a + b):.5f}") + "</link>"


def _joint(name, jt, parent, child, xyz, axis, extra=""):
    return (f'<joint name="{name}" type="{jt}"><parent link="{parent}"/><child link="{child}"/>'
            f'<origin xyz="{xyz}" rpy="0.3 -0.2 0.5"/><axis xyz="{axis}"/>'
            f'<limit lower="-3" upper="3" effort="50" velocity="4"/>{extra}</joint>')


CHAIN = ('<?xml version="1.0"?><robot name="mimic_chain"><link name="base"/>'
         + "".join(_link(n, i) for i, n in enumerate("A B C D E F Gl H".split()))
         + _joint("ja", "revolute", "base", "A", "0 0 0.1", "0 0.6 0.8")
         + _joint("jb", "revolute", "A", "B", "0.2 0 0.1", "1 0 0")
         + _joint("jc", "revolute", "B", "C", "0.2 0.1 0", "0 0 1",
                  '<mimic joint="jf" multiplier="-0.5" offset="0.1"/>')
         + _joint("jd", "prismatic", "base", "D", "0 0.3 0", "0.6 0 0.8")
         + _joint("je", "continuous", "D", "E", "0.1 0 0.2", "0 1 0")
         + _joint("jf", "prismatic", "E", "F", "0 0.1 0.2", "0 0 1",
                  '<mimic joint="je" multiplier="2" offset="-0.3"/>')
         + _joint("jg", "revolute", "A", "Gl", "0 0.2 0", "0 1 0",
                  '<mimic joint="jc" multiplier="1.5" offset="0.2"/>')
         + _joint("jh", "fixed", "A", "H", "0.1 0.1 0", "1 0 0", '<mimic joint="ja"/>')
         + "</robot>")
CHAIN_MIMIC = {"jc": ("je", -1.0, 0.25), "jf": ("je", 2.0, -0.3), "jg": ("je", -1.5, 0.575)}


def _random_mimic(seed):
    """conftest's random tree with every 4th movable joint made a mimic of an earlier one."""
    xml, movable = random_urdf(seed)
    rng = np.random.default_rng(seed)
    for i in range(3, len(movable), 4):
        k, o = rng.uniform(-1.5, 1.5), rng.uniform(-0.3, 0.3)
        master = movable[rng.integers(0, i)]
        xml = re.sub(rf'(<joint name="{movable[i]}" .*?)</joint>',
                     lambda m: m.group(1) + f'<mimic joint="{master}" multiplier="{k:.6f}" '
                                            f'offset="{o:.6f}"/></joint>', xml, count=1)
    return xml


ERD = {"panda": "panda_description/urdf/panda.urdf",
       "baxter": "baxter_description/urdf/baxter.urdf",
       "pr2": "pr2_description/urdf/pr2.urdf",
       "tiago_pro": "tiago_pro_description/robots/tiago_pro.urdf",
       "talos_full": "talos_data/robots/talos_full_v2.urdf"}


def _text(src):
    if "<" in src:
        return src
    with open(src, "rb") as f:
        return f.read().decode("utf-8", "replace")


def oracle_map(src, names):
    """Independent joints and G (len(names) × n) + offset, from the URDF text by the URDF
    definition, for the full joints ``names`` (Pinocchio's order)."""
    root = ET.fromstring(_text(src).encode())
    tags = {}
    for j in root.findall("joint"):
        m = j.find("mimic")
        if m is not None and j.get("type") != "fixed":
            tags[j.get("name")] = (m.get("joint"), float(m.get("multiplier", 1)),
                                   float(m.get("offset", 0)))

    def resolve(name):
        if name not in tags:
            return name, 1.0, 0.0
        master, k, o = tags[name]
        root_, k2, o2 = resolve(master)
        return root_, k * k2, k * o2 + o

    ind = [n for n in names if n not in tags]
    G, off = np.zeros((len(names), len(ind))), np.zeros(len(names))
    for i, n in enumerate(names):
        master, k, o = resolve(n)
        G[i, ind.index(master)] = k
        off[i] = o
    return ind, G, off


class Oracle:
    """Pinocchio's full model projected onto the independent coordinates."""

    def __init__(self, src):
        import pinocchio as pin
        self.pin = pin
        self.pm = pin.buildModelFromUrdf(src) if "<" not in src else pin.buildModelFromXML(src)
        self.pd = self.pm.createData()
        self.names = list(self.pm.names[1:])
        self.ind, self.G, self.off = oracle_map(src, self.names)

    def q(self, q):
        """Independent q → Pinocchio configuration (continuous joints: cos, sin)."""
        qf = self.G @ q + self.off
        out = np.empty(self.pm.nq)
        for j, x in zip(self.pm.joints[1:], qf):
            if j.nq == 2:
                out[j.idx_q:j.idx_q + 2] = (math.cos(x), math.sin(x))
            else:
                out[j.idx_q] = x
        return out

    def v(self, v):
        return self.G @ v

    def tau(self, q, qd, qdd, fext=None):
        t = self.pin.rnea(self.pm, self.pd, self.q(q), self.v(qd), self.v(qdd), *(
            [fext] if fext is not None else []))
        return self.G.T @ t

    def M(self, q):
        return self.G.T @ sym(self.pin.crba(self.pm, self.pd, self.q(q))) @ self.G

    def g(self, q):
        return self.G.T @ self.pin.computeGeneralizedGravity(self.pm, self.pd, self.q(q))

    def C(self, q, qd):
        C = self.pin.computeCoriolisMatrix(self.pm, self.pd, self.q(q), self.v(qd))
        return self.G.T @ C @ self.G

    def Mdot(self, q, qd):
        C = self.pin.computeCoriolisMatrix(self.pm, self.pd, self.q(q), self.v(qd))
        return self.G.T @ (C + C.T) @ self.G  # Pinocchio's C satisfies Ṁ = C + Cᵀ

    def aba(self, q, qd, tau):
        h = self.tau(q, qd, np.zeros_like(qd))
        return np.linalg.solve(self.M(q), tau - h)

    def tau_dot(self, q, qd, qdd, qddd):
        self.pin.computeRNEADerivatives(self.pm, self.pd, self.q(q), self.v(qd), self.v(qdd))
        d = self.pd
        return self.G.T @ (d.dtau_dq @ self.v(qd) + d.dtau_dv @ self.v(qdd)
                           + sym(d.M) @ self.v(qddd))


def assert_rel(a, b, tol=TOL):
    a, b = np.asarray(a), np.asarray(b)
    scale = np.abs(b).max()
    assert scale > 0
    err = np.abs(a - b).max() / scale
    assert err <= tol, f"relative error {err:.3e} > {tol:.1e}"


def _source(case):
    if case == "chain":
        return CHAIN
    if case == "random":
        return _random_mimic(3)
    return erd_path(ERD[case])


@pytest.fixture(scope="module",
                params=["panda", "baxter", "pr2", "tiago_pro", "chain", "random"])
def pair(request):
    pytest.importorskip("pinocchio")
    src = _source(request.param)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", mbs.URDFWarning)
        robot = mbs.load_urdf(src)
    return robot, Oracle(src)


def test_independent_coordinates(pair):
    robot, o = pair
    assert isinstance(robot, mbs.MimicRobot)
    assert robot.joint_names == tuple(o.ind) and robot.n == len(o.ind)
    assert robot.full_joint_names == tuple(o.names)
    assert robot.nq == robot.nv == robot.n
    np.testing.assert_array_equal(robot.G, o.G)
    np.testing.assert_allclose(robot.offset, o.off, rtol=1e-15, atol=1e-15)
    assert set(robot.mimic_joints) == set(o.names) - set(o.ind)
    for m, (master, k, off) in robot.mimic_joints.items():
        i = o.names.index(m)
        assert o.G[i, o.ind.index(master)] == k and abs(o.off[i] - off) < 1e-15
    q = np.random.default_rng(0).normal(size=robot.n)
    np.testing.assert_allclose(robot.expand(q), o.G @ q + o.off, rtol=1e-15)
    np.testing.assert_allclose(robot.expand(q, 1), o.G @ q, rtol=1e-15)
    idx = [o.names.index(n) for n in o.ind]
    full = robot.full_robot
    np.testing.assert_array_equal(robot.lower, full.lower[idx])
    np.testing.assert_array_equal(robot.effort_limit, full.effort_limit[idx])
    assert robot.total_mass == full.total_mass


def test_chain_resolution():
    r = mbs.load_urdf(CHAIN)
    assert r.joint_names == ("ja", "jb", "jd", "je")
    assert set(r.mimic_joints) == set(CHAIN_MIMIC)
    for m, (master, k, o) in CHAIN_MIMIC.items():
        got = r.mimic_joints[m]
        assert got[0] == master and math.isclose(got[1], k) and math.isclose(got[2], o)


def test_dynamics_vs_pinocchio_full_model(pair):
    robot, o = pair
    rng = np.random.default_rng(1)
    for _ in range(3):
        q, qd, qdd = rng.uniform(-1.5, 1.5, (3, robot.n))
        assert_rel(robot.inverse_dynamics(q, qd, qdd), o.tau(q, qd, qdd))
        M = robot.mass_matrix(q)
        assert_rel(M, o.M(q))
        assert np.linalg.eigvalsh(M).min() > 0
        assert_rel(robot.gravity_torques(q), o.g(q))
        # C̄ is not unique (ours is seed 004 eq. 54, not Pinocchio's factorization): compare what
        # both define, C̄ q̇ and C̄ + C̄ᵀ = Ṁ
        C = robot.coriolis_matrix(q, qd)
        assert_rel(C @ qd, o.C(q, qd) @ qd)
        assert_rel(C + C.T, o.Mdot(q, qd))
        assert_rel(robot.mass_matrix_derivative(q, qd), o.Mdot(q, qd))
        tau = rng.uniform(-5, 5, robot.n)
        qdd_ours = robot.forward_dynamics(q, qd, tau)
        # the same linear system solved twice: agreement limited by M's condition number
        cond = np.linalg.cond(o.M(q))
        assert_rel(qdd_ours, o.aba(q, qd, tau), max(TOL, 1e-15 * cond))
        assert_rel(o.tau(q, qd, qdd_ours), tau, 1e-11)  # the inverse of inverse dynamics


def test_external_wrenches(pair):
    robot, o = pair
    pin = o.pin
    rng = np.random.default_rng(2)
    q, qd, qdd = rng.uniform(-1, 1, (3, robot.n))
    # wrenches on the child links of three full joints (link frame = Pinocchio's joint frame)
    full = robot.full_robot
    picks = [0, full.n // 2, full.n - 1]
    f_ext, fext = {}, [pin.Force.Zero() for _ in range(o.pm.njoints)]
    for i in picks:
        w = rng.normal(size=6)
        f_ext[full.link_names[i]] = w
        fext[o.pm.getJointId(full.joint_names[i])] = pin.Force(w)  # (f, m) both
    assert_rel(robot.inverse_dynamics(q, qd, qdd, f_ext=f_ext), o.tau(q, qd, qdd, fext))
    tau = robot.inverse_dynamics(q, qd, qdd, f_ext=f_ext)
    assert_rel(robot.forward_dynamics(q, qd, tau, f_ext=f_ext), qdd, 1e-10)


def test_first_derivative(pair):
    robot, o = pair
    rng = np.random.default_rng(3)
    for _ in range(2):
        qs = rng.uniform(-1.5, 1.5, (4, robot.n))
        res = robot.torque_derivatives(qs)
        assert res.shape == (2, robot.n)
        assert_rel(res[0], o.tau(*qs[:3]))
        assert_rel(res[1], o.tau_dot(*qs))


def test_second_derivative_vs_fd_of_pinocchio(pair):
    """τ″ against 8th-order central differences (h = 0.005 s) of the projected Pinocchio τ′
    along an analytic trajectory of the independent coordinates."""
    robot, o = pair
    traj = trajectory(robot.n, seed=11, order=6)
    h = 0.005
    for t in (0.3, 1.7):
        tau_dot = [o.tau_dot(*traj(t + j * h)[:4]) for j in range(-4, 5)]
        fd = np.tensordot(D1, tau_dot, axes=1) / h
        res = robot.torque_derivatives(traj(t))
        assert res.shape == (4, robot.n)
        assert_rel(res[2], fd, 1e-9)
        # τ‴: the second difference of Pinocchio's projected τ′ (h = 0.01 s)
        h3 = 0.01
        tau_dot = [o.tau_dot(*traj(t + j * h3)[:4]) for j in range(-4, 5)]
        assert_rel(res[3], np.tensordot(D2, tau_dot, axes=1) / h3 ** 2, 1e-7)


def test_batches_and_out(pair):
    robot, o = pair
    rng = np.random.default_rng(4)
    N, n = 4, robot.n
    q, qd, qdd = rng.uniform(-1, 1, (3, N, n))
    tau = robot.inverse_dynamics(q, qd, qdd)
    assert tau.shape == (N, n)
    for i in range(N):
        assert_rel(tau[i], o.tau(q[i], qd[i], qdd[i]))
    assert_rel(robot.forward_dynamics(q, qd, tau), qdd, 1e-10)
    qs = rng.uniform(-1, 1, (N, 5, n))
    res = robot.torque_derivatives(qs)
    assert res.shape == (N, 3, n)
    for i in range(N):
        assert_rel(res[i, 0], o.tau(*qs[i, :3]))
        assert_rel(res[i, 1], o.tau_dot(*qs[i, :4]))
    out = np.empty(n)
    assert robot.inverse_dynamics(q[0], qd[0], qdd[0], out=out) is out
    assert_rel(out, tau[0], 1e-14)
    M = np.empty((n, n))
    assert robot.mass_matrix(q[0], out=M) is M
    for bad in (np.empty(n + 1), np.empty(n, dtype=np.float32), np.empty((n, 2))[:, 0],
                np.zeros(n).copy(), [0.0] * n):
        if isinstance(bad, np.ndarray) and bad.shape == (n,) and bad.dtype == np.float64 \
                and bad.flags.c_contiguous:
            bad.setflags(write=False)
        with pytest.raises(ValueError, match="out"):
            robot.inverse_dynamics(q[0], qd[0], qdd[0], out=bad)
    with pytest.raises(ValueError, match="out"):
        robot.mass_matrix(q[0], out=np.empty((n, n + 1)))
    with pytest.raises(ValueError, match="qd"):
        robot.inverse_dynamics(q[0], qd[0, :-1], qdd[0])
    with pytest.raises(ValueError, match="q contains NaN"):
        robot.inverse_dynamics(np.full(n, np.nan), qd[0], qdd[0])
    with pytest.raises(ValueError, match="qs"):
        robot.torque_derivatives(np.zeros((2, n)))


def test_copy_and_payload(pair):
    robot, o = pair
    rng = np.random.default_rng(5)
    q, qd, qdd = rng.uniform(-1, 1, (3, robot.n))
    c = robot.copy()
    assert type(c) is type(robot) and c.joint_names == robot.joint_names
    assert_rel(c.inverse_dynamics(q, qd, qdd), o.tau(q, qd, qdd))
    link = robot.full_robot.link_names[-1]
    p = robot.with_payload(link, 0.7, (0.01, 0.02, 0.03), np.diag([1e-3, 2e-3, 2.5e-3]))
    assert isinstance(p, mbs.MimicRobot) and p.mimic_joints == robot.mimic_joints
    # Pinocchio with the same payload on the joint whose child link it is (same frame)
    pin = o.pin
    jid = o.pm.getJointId(robot.full_robot.joint_names[-1])
    saved = o.pm.inertias[jid].copy()
    o.pm.inertias[jid] = saved + pin.Inertia(0.7, np.array([0.01, 0.02, 0.03]),
                                             np.diag([1e-3, 2e-3, 2.5e-3]))
    try:
        assert_rel(p.inverse_dynamics(q, qd, qdd), o.tau(q, qd, qdd))
    finally:
        o.pm.inertias[jid] = saved
    assert p.total_mass == pytest.approx(robot.total_mass + 0.7)


@pytest.mark.parametrize("case", ["panda", "baxter", "chain"])
def test_pinocchio_mimic_true(case):
    """Second oracle: Pinocchio 4.1's own mimic=True model, where it builds and is right.

    Measured (4.1): it rejects a mimic of a mimic (`chain` fails to build), and on pr2 and
    tiago_pro, whose gripper masters sit in another branch than their mimics, its τ differs from
    the projection of its own full model by 8e-3 and 4e-6 relative, so those two are checked
    against the projection only (test_dynamics_vs_pinocchio_full_model)."""
    pin = pytest.importorskip("pinocchio")
    src = _source(case)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", mbs.URDFWarning)
        robot = mbs.load_urdf(src)
    try:
        pm = (pin.buildModelFromUrdf(src, mimic=True) if "<" not in src
              else pin.buildModelFromXML(src, mimic=True))
    except Exception:
        assert case == "chain"
        return
    assert pm.nv == robot.n
    o = Oracle(src)
    pd = pm.createData()
    rng = np.random.default_rng(6)
    cols = [pm.joints[pm.getJointId(n)].idx_v for n in robot.joint_names]
    for _ in range(3):
        q, qd, qdd = rng.uniform(-1, 1, (3, robot.n))
        pq = np.empty(pm.nq)
        for j, name in zip(pm.joints[1:], pm.names[1:]):
            if j.nq == 2 or j.shortname() == "JointModelMimic":
                continue
            pq[j.idx_q] = q[robot.joint_names.index(name)]
        v, a = np.zeros(pm.nv), np.zeros(pm.nv)
        v[cols], a[cols] = qd, qdd
        assert_rel(robot.inverse_dynamics(q, qd, qdd), pin.rnea(pm, pd, pq, v, a)[cols])
        assert_rel(robot.inverse_dynamics(q, qd, qdd), o.tau(q, qd, qdd))


def test_pinocchio_full_model_ignores_mimic():
    """The oracle's premise: without mimic=True Pinocchio keeps mimic joints independent."""
    pin = pytest.importorskip("pinocchio")
    pm = pin.buildModelFromUrdf(erd_path(ERD["panda"]))
    assert "panda_finger_joint2" in pm.names and pm.nv == 9
    assert pm.joints[pm.getJointId("panda_finger_joint2")].nv == 1


# ---------------------------------------------------------------- parsing and errors
def _two(extra2="", extra3="", t3="revolute"):
    return (f'<robot name="m"><link name="b"/>{_link("l1", 1)}{_link("l2", 2)}{_link("l3", 3)}'
            + _joint("j1", "revolute", "b", "l1", "0 0 0.1", "0 0 1")
            + _joint("j2", "revolute", "l1", "l2", "0.2 0 0", "0 1 0", extra2)
            + _joint("j3", t3, "l2", "l3", "0.2 0 0", "0 1 0", extra3) + "</robot>")


@pytest.mark.parametrize("text, words", [
    (_two('<mimic joint="nope"/>'), ["'j2'", "'nope'"]),
    (_two('<mimic joint="j3"/>', '<mimic joint="j2"/>'), ["cycle", "j2", "j3"]),
    (_two('<mimic joint="j2"/>'), ["cycle", "j2"]),
    (_two('<mimic joint="j3"/>', "", "fixed"), ["'j2'", "'j3'", "fixed"]),
    (_two('<mimic joint="j1" multiplier="nan"/>'), ["j2", "multiplier"]),
    (_two('<mimic multiplier="2"/>'), ["j2", "mimic", "'joint'"]),
])
def test_mimic_errors(text, words):
    with pytest.raises(URDFError) as e:
        mbs.load_urdf(text)
    for w in words:
        assert w in str(e.value), str(e.value)


def test_mimic_defaults_fixed_tags_and_plain_robot():
    r = mbs.load_urdf(_two('<mimic joint="j1"/>'))
    assert r.mimic_joints == {"j2": ("j1", 1.0, 0.0)}
    # a mimic tag on a fixed joint is ignored; a URDF without mimic gives a plain Robot
    r = mbs.load_urdf(_two("", '<mimic joint="j1"/>', "fixed"))
    assert type(r) is mbs.Robot and r.joint_names == ("j1", "j2")


def test_locked_master_locks_its_mimics():
    """Locking a master locks its mimics at multiplier·value + offset (as if both were locked)."""
    text = _two('<mimic joint="j1" multiplier="-2" offset="0.1"/>')
    r = mbs.load_urdf(text, locked_joints={"j1": 0.3})
    assert type(r) is mbs.Robot and r.joint_names == ("j3",)
    ref = mbs.load_urdf(_two(), locked_joints={"j1": 0.3, "j2": -0.5})
    q, qd, qdd = np.array([0.4]), np.array([0.7]), np.array([-1.1])
    np.testing.assert_array_equal(r.inverse_dynamics(q, qd, qdd), ref.inverse_dynamics(q, qd, qdd))
    # locking the mimic itself leaves its master free
    r = mbs.load_urdf(text, locked_joints={"j2": 0.2})
    assert type(r) is mbs.Robot and r.joint_names == ("j1", "j3")


def test_controller_accepts_mimic_robot():
    """Drop-in: the feedforward controller (public API only) holds the measured pose with the
    gravity torques of the independent coordinates (Pinocchio's full model, projected)."""
    pytest.importorskip("pinocchio")
    from mbs_dynamics.control.controller import FeedforwardController
    r = mbs.load_urdf(CHAIN)
    o = Oracle(CHAIN)
    ctl = FeedforwardController(r)
    q = np.array([0.1, -0.2, 0.05, 0.3])
    assert ctl.set_joint_state(r.joint_names, q, stamp=10.0)
    out = ctl.update(10.01)
    assert out.valid and out.mode == "hold"
    assert_rel(out.tau, o.g(q), 1e-12)


# ---------------------------------------------------------------- floating base + mimic
def _needs_floating_base():
    if "floating_base" not in getattr(mbs.Model, "__dataclass_fields__", {}):
        pytest.skip("this checkout has no floating-base kernels yet")


class OracleFB(Oracle):
    """Pinocchio's full model with a free-flyer root, projected with blockdiag(I₆, G)."""

    def __init__(self, src):
        import pinocchio as pin
        self.pin = pin
        ff = pin.JointModelFreeFlyer()
        self.pm = (pin.buildModelFromUrdf(src, ff) if "<" not in src
                   else pin.buildModelFromXML(src, ff))
        self.pd = self.pm.createData()
        self.names = list(self.pm.names[2:])
        self.ind, G, self.off = oracle_map(src, self.names)
        self.G = np.zeros((6 + len(self.names), 6 + len(self.ind)))
        self.G[:6, :6] = np.eye(6)
        self.G[6:, 6:] = G

    def q(self, q):
        qf = self.G[6:, 6:] @ q[7:] + self.off
        out = np.empty(self.pm.nq)
        out[:7] = q[:7]
        for j, x in zip(self.pm.joints[2:], qf):
            if j.nq == 2:
                out[j.idx_q:j.idx_q + 2] = (math.cos(x), math.sin(x))
            else:
                out[j.idx_q] = x
        return out


FB_CHAIN = CHAIN.replace('<link name="base"/>', _link("base", 9))


@pytest.mark.parametrize("case", ["talos_full", "chain"])
def test_floating_base_with_mimic_joints(case):
    """talos_full_v2 (12 gripper mimics) and the mimic chain on a free-flyer: τ, M, g, τ′ (pair
    form, Pinocchio's partials along the state) and forward dynamics, ≤ 1e-12 relative."""
    pytest.importorskip("pinocchio")
    _needs_floating_base()
    src = FB_CHAIN if case == "chain" else erd_path(ERD[case])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", mbs.URDFWarning)
        robot = mbs.load_urdf(src, floating_base=True)
    o = OracleFB(src)
    assert isinstance(robot, mbs.MimicRobot) and robot.floating_base
    assert robot.joint_names == tuple(o.ind)
    assert robot.nq == 7 + robot.n and robot.nv == 6 + robot.n
    np.testing.assert_array_equal(robot.G, o.G)
    rng = np.random.default_rng(7)
    for _ in range(2):
        quat = rng.normal(size=4)
        q = np.r_[rng.normal(size=3), quat / np.linalg.norm(quat), rng.uniform(-1, 1, robot.n)]
        v, a, j3 = rng.normal(size=(3, robot.nv))
        assert_rel(robot.inverse_dynamics(q, v, a), o.tau(q, v, a))
        assert_rel(robot.mass_matrix(q), o.M(q))
        assert_rel(robot.gravity_torques(q), o.g(q))
        res = robot.torque_derivatives((q, np.array([v, a, j3])))
        assert res.shape == (2, robot.nv)
        assert_rel(res[0], o.tau(q, v, a))
        assert_rel(res[1], o.tau_dot(q, v, a, j3))
        tau = rng.normal(size=robot.nv)
        assert_rel(o.tau(q, v, robot.forward_dynamics(q, v, tau)), tau, 1e-10)
    with pytest.raises(ValueError, match="pair"):
        robot.torque_derivatives(np.zeros((4, robot.nv)))


def test_selection_and_partial_locks_on_a_chain():
    """tip_link dropping the master makes the mimic independent; locking a joint in the middle of
    a mimic chain locks the joints that mimic it (at their mimic positions), not its master."""
    r = mbs.load_urdf(CHAIN, tip_link="C")  # base → A → B → C: jc's master je is off the chain
    assert type(r) is mbs.Robot and r.joint_names == ("ja", "jb", "jc")
    # jf = 2 je − 0.3 locked at 0.5: jc = −0.5·0.5 + 0.1 = −0.15, jg = 1.5·jc + 0.2 = −0.025
    r = mbs.load_urdf(CHAIN, locked_joints={"jf": 0.5})
    assert type(r) is mbs.Robot and r.joint_names == ("ja", "jb", "jd", "je")
    ref = mbs.load_urdf(CHAIN, locked_joints={"jf": 0.5, "jc": -0.15, "jg": -0.025})
    q, qd, qdd = np.random.default_rng(8).uniform(-1, 1, (3, 4))
    np.testing.assert_array_equal(r.inverse_dynamics(q, qd, qdd), ref.inverse_dynamics(q, qd, qdd))



def test_shared_mimic_robot_regressor_and_derivatives_are_right_or_busy():
    # fuzz campaign (issue 22): regressor, inverse_dynamics_derivatives and
    # forward_dynamics_derivatives used the shared single-sample buffers without holding the
    # workspace, corrupting each other's and the guarded methods' inputs (wrong results)
    import threading
    r = mbs.load_urdf(CHAIN)
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (3, 10, r.nv))
    calls = [lambda i: r.regressor(X[0, i], X[1, i], X[2, i]),
             lambda i: np.stack(r.inverse_dynamics_derivatives(X[0, i], X[1, i], X[2, i])),
             lambda i: np.stack(r.forward_dynamics_derivatives(X[0, i], X[1, i], X[2, i])),
             lambda i: r.frame_placement(X[0, i], r.frame_names[-1])]
    want = [[f(i) for i in range(10)] for f in calls]
    res = {"ok": 0, "busy": 0, "wrong": 0}
    lock = threading.Lock()

    def work(t):
        g = np.random.default_rng(t)
        for _ in range(300):
            j, i = int(g.integers(len(calls))), int(g.integers(10))
            try:
                got = calls[j](i)
            except RuntimeError as e:
                assert "in use by another thread" in str(e)
                with lock:
                    res["busy"] += 1
                continue
            with lock:
                res["ok" if np.allclose(got, want[j][i], rtol=1e-9, atol=1e-9) else "wrong"] += 1

    th = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for x in th:
        x.start()
    for x in th:
        x.join()
    assert res["wrong"] == 0 and res["ok"] > 0


def test_forward_dynamics_takes_method_like_robot():
    # Robot.forward_dynamics(method=) is this round's API; a MimicRobot had no such argument
    r = mbs.load_urdf(CHAIN)
    z = np.zeros(r.nv)
    assert np.array_equal(r.forward_dynamics(z, z, z, method="aba"), r.forward_dynamics(z, z, z))
    # seed 002's HDCA with the mimic rows closed in the assembly (test_loops_hdca_bases)
    assert np.abs(r.forward_dynamics(z, z, z, method="dca") - r.forward_dynamics(z, z, z)).max() \
        < 1e-12 * max(1.0, np.abs(r.forward_dynamics(z, z, z)).max())
    with pytest.raises(ValueError, match="method must be"):
        r.forward_dynamics(z, z, z, method="x")
