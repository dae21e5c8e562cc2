"""Models from DH tables and zero-reference screws (model/sources.py) and any model written out as
URDF (model/writer.py): poses and τ against Pinocchio models built programmatically from the same
DH / screw data (the oracle never sees our URDF), against hand-written URDFs, and bad input."""
from __future__ import annotations

import math

import numpy as np
import pytest

import mbs_dynamics as mbs
from mbs_dynamics.model.writer import rpy_of

TOL = 1e-13


def _inertials(n, rng):
    out = []
    for _ in range(n):
        Q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
        I = Q @ np.diag(rng.uniform(0.05, 0.09, 3)) @ Q.T
        out.append(dict(mass=rng.uniform(0.5, 3), com=rng.uniform(-0.1, 0.1, 3), inertia=I))
    return out


def _Rx(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])


def _Rz(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])


def _pin_dh(table, convention, types, inertials):
    """Pinocchio model of a DH chain, built joint by joint (its own SE3 algebra). Returns the
    model and, per link, (joint id, pose of the DH link frame in the joint frame)."""
    pin = pytest.importorskip("pinocchio")
    m = pin.Model()
    parent, prev_tail, links = 0, pin.SE3.Identity(), []
    for (a, al, d, th), t, ine in zip(table, types, inertials):
        jm = pin.JointModelPZ() if t == "prismatic" else pin.JointModelRZ()
        if convention == "modified":
            place = (pin.SE3(_Rx(al), np.zeros(3)) * pin.SE3(np.eye(3), np.array([a, 0, 0]))
                     * pin.SE3(_Rz(th), np.zeros(3)) * pin.SE3(np.eye(3), np.array([0, 0, d])))
            tail = pin.SE3.Identity()
        else:
            place = prev_tail * pin.SE3(_Rz(th), np.array([0, 0, d]))
            tail = pin.SE3(np.eye(3), np.array([a, 0, 0])) * pin.SE3(_Rx(al), np.zeros(3))
        jid = m.addJoint(parent, jm, place, f"j{len(links)}")
        I = pin.Inertia(ine["mass"], np.asarray(ine["com"]), np.asarray(ine["inertia"]))
        m.appendBodyToJoint(jid, tail.act(I), pin.SE3.Identity())
        links.append((jid, tail))
        parent, prev_tail = jid, tail
    return m, links


def _tables(rng, n):
    tab = np.c_[rng.uniform(-0.4, 0.4, n), rng.uniform(-np.pi, np.pi, n),
                rng.uniform(-0.4, 0.4, n), rng.uniform(-np.pi, np.pi, n)]
    types = [("prismatic" if k == 2 else "revolute") for k in range(n)]
    return tab, types


@pytest.mark.parametrize("convention", ["standard", "modified"])
def test_dh_equals_pinocchio(convention):
    pin = pytest.importorskip("pinocchio")
    rng = np.random.default_rng(3 + len(convention))
    n = 6
    tab, types = _tables(rng, n)
    ine = _inertials(n, rng)
    robot = mbs.from_dh(tab, convention, inertials=ine, joint_types=types)
    pm, links = _pin_dh(tab, convention, types, ine)
    pd = pm.createData()
    assert robot.joint_names == tuple(f"joint{i + 1}" for i in range(n))
    for _ in range(5):
        q, v, a = rng.normal(size=(3, n))
        pin.forwardKinematics(pm, pd, q)
        for i, (jid, tail) in enumerate(links):
            ref = (pd.oMi[jid] * tail).homogeneous
            assert np.abs(robot.frame_placement(q, f"link{i + 1}") - ref).max() <= TOL
        tau = pin.rnea(pm, pd, q, v, a)
        assert np.abs(robot.inverse_dynamics(q, v, a) - tau).max() <= TOL * max(
            1.0, np.abs(tau).max())


# seed 004 §6.2 (the iiwa 14 in the modified DH convention of the paper's ref. 29): R_{i-1,i} = Rx(+90°)
# for i = 2, 5, 6, Rx(−90°) for i = 3, 4, 7, ²r₂₃ = (0, r₃, 0), ⁴r₄₅ = (0, −r₅, 0), all else 0.
R3, R5 = 0.42, 0.4
IIWA_MDH = [(0, 0, 0, 0), (0, np.pi / 2, 0, 0), (0, -np.pi / 2, R3, 0), (0, -np.pi / 2, 0, 0),
            (0, np.pi / 2, R5, 0), (0, np.pi / 2, 0, 0), (0, -np.pi / 2, 0, 0)]


def _iiwa_urdf(ine):
    """The iiwa of seed 004 §6.2 by hand: origins from the printed B_i."""
    rx = {1: 0, 2: 1, 3: -1, 4: -1, 5: 1, 6: 1, 7: -1}
    xyz = {3: (0, R3, 0), 5: (0, -R5, 0)}
    out = ['<robot name="iiwa"><link name="base"/>']
    for i in range(1, 8):
        d = ine[i - 1]
        c, I = [float(x) for x in d["com"]], d["inertia"].tolist()
        I = {(a, b): I[a][b] for a in range(3) for b in range(3)}
        out.append(
            f'<link name="link{i}"><inertial><origin xyz="{c[0]!r} {c[1]!r} {c[2]!r}"/>'
            f'<mass value="{float(d["mass"])!r}"/><inertia ixx="{I[0, 0]!r}" ixy="{I[0, 1]!r}" '
            f'ixz="{I[0, 2]!r}" iyy="{I[1, 1]!r}" iyz="{I[1, 2]!r}" izz="{I[2, 2]!r}"/>'
            '</inertial></link>')
        p = xyz.get(i, (0, 0, 0))
        out.append(f'<joint name="joint{i}" type="revolute"><parent link="'
                   f'{"base" if i == 1 else f"link{i - 1}"}"/><child link="link{i}"/>'
                   f'<origin xyz="{p[0]} {p[1]} {p[2]}" rpy="{rx[i] * np.pi / 2!r} 0 0"/>'
                   '<axis xyz="0 0 1"/></joint>')
    return "".join(out) + "</robot>"


def test_iiwa_modified_dh_equals_the_printed_model():
    rng = np.random.default_rng(7)
    ine = _inertials(7, rng)
    robot = mbs.from_dh(IIWA_MDH, "modified", inertials=ine)
    ref = mbs.load_urdf(_iiwa_urdf(ine))
    for _ in range(5):
        q, v, a = rng.normal(size=(3, 7))
        for i in range(1, 8):
            assert np.abs(robot.frame_placement(q, f"link{i}")
                          - ref.frame_placement(q, f"link{i}")).max() <= TOL
        assert np.abs(robot.inverse_dynamics(q, v, a) - ref.inverse_dynamics(q, v, a)).max() \
            <= TOL * 10
    # the flange height of the assembled arm: the printed r₃ + r₅ along base z at q = 0
    assert np.abs(robot.frame_placement(np.zeros(7), "link7")[:3, 3]
                  - (0, 0, R3 + R5)).max() <= TOL


def _exp(Y, q):
    """exp of a (linear, angular) screw times q, by Rodrigues (independent of the package)."""
    v, w = np.asarray(Y[:3], float), np.asarray(Y[3:], float)
    T = np.eye(4)
    if np.linalg.norm(w) < 1e-12:
        T[:3, 3] = v * q
        return T
    K = np.array([[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]])
    R = np.eye(3) + math.sin(q) * K + (1 - math.cos(q)) * K @ K
    T[:3, :3] = R
    T[:3, 3] = (np.eye(3) - R) @ (K @ v) + np.outer(w, w) @ v * q
    return T


def _random_screws(rng, n, prismatic=()):
    Y, A = np.zeros((n, 6)), np.zeros((n, 4, 4))
    for i in range(n):
        e = rng.normal(size=3)
        e /= np.linalg.norm(e)
        y = rng.uniform(-0.5, 0.5, 3)
        Y[i] = np.r_[e, 0, 0, 0] if i in prismatic else np.r_[np.cross(y, e), e]
        Q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
        A[i] = np.eye(4)
        A[i, :3, :3] = Q * np.sign(np.linalg.det(Q))
        A[i, :3, 3] = rng.uniform(-0.5, 0.5, 3)
    return Y, A


@pytest.mark.parametrize("parent", [None, [-1, 0, 1, 1, 0]])
def test_screws_equal_the_product_of_exponentials_and_pinocchio(parent):
    """Seed 001 eq. 10 evaluated directly, and τ of Pinocchio built from (Y, A) with
    unaligned revolute/prismatic joints."""
    pin = pytest.importorskip("pinocchio")
    rng = np.random.default_rng(11)
    n = 5
    Y, A = _random_screws(rng, n, prismatic=(2,))
    ine = _inertials(n, rng)
    robot = mbs.from_screws(Y, A, inertials=ine, parent=parent)
    par = list(range(-1, n - 1)) if parent is None else parent
    assert robot.joint_names == tuple(f"joint{i + 1}" for i in range(n))
    # Pinocchio: joint frames at the base origin orientation, at a point of each axis
    pm = pin.Model()
    pts = []
    for i in range(n):
        v, e = Y[i, :3], Y[i, 3:]
        pt = np.zeros(3) if np.linalg.norm(e) < 0.5 else np.cross(e, v)
        jm = (pin.JointModelPrismaticUnaligned(v) if np.linalg.norm(e) < 0.5
              else pin.JointModelRevoluteUnaligned(e))
        pp = np.zeros(3) if par[i] < 0 else pts[par[i]]
        pm.addJoint(par[i] + 1, jm, pin.SE3(np.eye(3), pt - pp), f"j{i}")
        pts.append(pt)
        body = pin.SE3(A[i, :3, :3], A[i, :3, 3] - pt)  # body frame in the joint frame
        I = pin.Inertia(ine[i]["mass"], ine[i]["com"], ine[i]["inertia"])
        pm.appendBodyToJoint(i + 1, body.act(I), pin.SE3.Identity())
    pd = pm.createData()
    for _ in range(5):
        q, qd, qdd = rng.normal(size=(3, n))
        for i in range(n):
            C, j = A[i].copy(), i
            while j >= 0:
                C = _exp(Y[j], q[j]) @ C
                j = par[j]
            assert np.abs(robot.frame_placement(q, f"link{i + 1}") - C).max() <= TOL
        tau = pin.rnea(pm, pd, q, qd, qdd)
        assert np.abs(robot.inverse_dynamics(q, qd, qdd) - tau).max() <= TOL * max(
            1.0, np.abs(tau).max())


def test_to_urdf_round_trips_every_example_robot_data_model():
    """Every example-robot-data URDF that loads, written out and loaded again: the same joints in
    the same order (centauro and tiago_pro hang joints on fixed links in an order that is not
    the name order), the same τ and the same pose of every frame."""
    import glob
    import os
    import warnings
    from conftest import erd_path
    root = os.path.dirname(os.path.dirname(os.path.dirname(erd_path("ur_description/urdf/"
                                                                   "ur5_robot.urdf"))))
    rng = np.random.default_rng(5)
    done = 0
    for f in sorted(glob.glob(os.path.join(root, "**", "*.urdf"), recursive=True)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                a = mbs.load_urdf(f)
            except mbs.URDFError:
                continue  # the invalid files of test_example_robot_data
            a = getattr(a, "full_robot", a)
            b = mbs.load_urdf(a.to_urdf())
        b = getattr(b, "full_robot", b)
        assert b.joint_names == a.joint_names, f
        assert b.model.mimic == a.model.mimic, f
        q, v, acc = rng.normal(size=(3, a.n))
        tau = a.inverse_dynamics(q, v, acc)
        assert np.abs(b.inverse_dynamics(q, v, acc) - tau).max() <= 1e-12 * max(
            1, np.abs(tau).max()), f
        for fr in a.frame_names:
            assert np.abs(b.frame_placement(q, fr) - a.frame_placement(q, fr)).max() <= TOL, f
        done += 1
    assert done >= 60


def test_to_urdf_keeps_mimics_limits_and_hostile_names():
    name = 'a"<&>\'x'
    text = f"""<robot name="r"><link name="base"/>
    <link name="l1"><inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0"
      izz="1"/></inertial></link>
    <link name="{name.replace('&', '&amp;').replace('<', '&lt;').replace('"', '&quot;')}">
      <inertial><origin xyz="0.1 0 0"/><mass value="2"/><inertia ixx="1" ixy="0" ixz="0"
      iyy="1" iyz="0" izz="1"/></inertial></link>
    <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/>
      <origin xyz="0 0 0.3" rpy="0.1 0.2 0.3"/><axis xyz="0 1 0"/>
      <limit lower="-1" upper="2" effort="10" velocity="3"/></joint>
    <joint name="j2" type="prismatic"><parent link="l1"/>
      <child link="{name.replace('&', '&amp;').replace('<', '&lt;').replace('"', '&quot;')}"/>
      <axis xyz="1 0 0"/><mimic joint="j1" multiplier="2" offset="0.1"/>
      <limit lower="-1" upper="1" effort="10" velocity="3"/></joint></robot>"""
    a = mbs.load_urdf(text).full_robot
    b = mbs.load_urdf(a.to_urdf()).full_robot
    assert b.model.link_names == a.model.link_names and name in b.model.link_names
    assert b.model.mimic == a.model.mimic
    for k in ("lower", "upper", "effort_limit", "velocity_limit"):
        assert np.array_equal(getattr(b.model, k), getattr(a.model, k))


def test_rpy_of_at_the_gimbal_lock():
    from mbs_dynamics.kernels.lie import rpy
    for r, p, y in [(0.3, np.pi / 2, -1.0), (0.3, -np.pi / 2, 2.0), (1, 0.2, -3)]:
        R = rpy(r, p, y)
        assert np.abs(rpy(*rpy_of(R)) - R).max() <= 1e-15


@pytest.mark.parametrize("call, msg", [
    (lambda: mbs.from_dh(np.zeros((3, 3)), inertials=[None] * 3), "shape"),
    (lambda: mbs.from_dh([[0, 0, np.nan, 0]], inertials=[None]), "non-finite d in row 0"),
    (lambda: mbs.from_dh([[0, 0, 0, 0]], "craig", inertials=[None]), "unknown DH convention"),
    (lambda: mbs.from_dh([[0, 0, 0, 0]], joint_types=["ball"], inertials=[None]),
     "joint_types[0]"),
    (lambda: mbs.from_dh([[0, 0, 0, 0]] * 2, inertials=[None]), "inertials has 1 entries"),
    (lambda: mbs.from_dh([[0, 0, 0, 0]], inertials=[dict(mass=np.nan)]), "mass"),
    (lambda: mbs.from_dh([[0, 0, 0, 0]], inertials=[None]), "moves no mass"),
    (lambda: mbs.from_screws(np.zeros((2, 5)), np.tile(np.eye(4), (2, 1, 1)),
                             inertials=[None] * 2), "shape"),
    (lambda: mbs.from_screws([[0, 0, 0, 0, 0, 2]], [np.eye(4)], inertials=[None]),
     "unit vector"),
    (lambda: mbs.from_screws([[0, 0, 2e6, 0, 0, 1]], [np.eye(4)], inertials=[None]),
     "not a physical screw"),
    (lambda: mbs.from_screws([[0, 0, 0, 0, 0, 1]], [2 * np.eye(4)], inertials=[None]),
     "rigid"),
    (lambda: mbs.from_screws([[0, 0, 0, 0, 0, 1]], [np.eye(4)], inertials=[None],
                             parent=[0]), "parent"),
])
def test_bad_input_is_one_clear_error(call, msg):
    with pytest.raises(ValueError, match=None) as e:
        call()
    assert msg in str(e.value)


def test_to_urdf_round_trips_a_floating_base():
    """The base link's inertia is written on it; loaded again with floating_base=True, the
    same τ."""
    from conftest import erd_path
    path = erd_path("solo_description/robots/solo12.urdf")
    a = mbs.load_urdf(path, floating_base=True)
    b = mbs.load_urdf(a.to_urdf(), floating_base=True)
    assert b.joint_names == a.joint_names
    rng = np.random.default_rng(0)
    quat = rng.normal(size=4)
    q = np.r_[rng.normal(size=3), quat / np.linalg.norm(quat), rng.normal(size=a.n)]
    v, acc = rng.normal(size=(2, a.nv))
    tau = a.inverse_dynamics(q, v, acc)
    assert np.abs(b.inverse_dynamics(q, v, acc) - tau).max() <= 1e-12 * max(1, np.abs(tau).max())
