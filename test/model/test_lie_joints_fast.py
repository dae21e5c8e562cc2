"""LieJointRobot on random trees (several spherical and free joints anywhere below a first
hinge, revolute and prismatic joints between them) against Pinocchio 4.1 built by hand
(``JointModelSpherical``, ``JointModelFreeFlyer``, ``JointModelRevoluteUnaligned``,
``JointModelPrismaticUnaligned``): inverse dynamics with external wrenches in the body, spatial
and hybrid recursions (``pin.rnea`` with ``fext``); frame Jacobians, their time variation, frame
velocities and accelerations in the four representations (body = LOCAL, spatial = WORLD,
hybrid = LOCAL_WORLD_ALIGNED with the classical acceleration, mixed = hybrid's linear rows with
LOCAL's angular rows), single samples and batches; batches of (∂τ/∂q, ∂τ/∂q̇, M)
(``pin.computeRNEADerivatives``); one ``chart_step`` against the same RK4 step written with
Pinocchio's ABA (φ̈ = Jb⁻¹ (aba(q(φ), Jb φ̇, τ) − J̇b φ̇) in the chart, Jb and J̇b in closed
form here); and bad input of those entry points."""
from __future__ import annotations

import numpy as np
import pytest

import mbs_dynamics as mbs
from joint_oracle import TOL, fmt, rel_err
from test_lie_joints_batches import _batch as _states

KINDS = ("revolute", "prismatic", "spherical", "floating")


def _tree(seed, n=6):
    """A random tree: (URDF text, Pinocchio model, link names). Joint i (named j0i) carries
    link Li below a random earlier link; j00 is a hinge at the base; a frame "tool" is fixed
    to a random link at a random placement."""
    pin = pytest.importorskip("pinocchio")
    rng = np.random.default_rng(seed)
    parent = [-1] + [int(rng.integers(0, i)) for i in range(1, n)]
    kind = ["revolute"] + [str(rng.choice(KINDS)) for _ in range(1, n)]
    if "spherical" not in kind:
        kind[int(rng.integers(1, n))] = "spherical"
    if "floating" not in kind:
        kind[[i for i in range(1, n) if kind[i] != "spherical"][0]] = "floating"
    xyz, rpy = rng.uniform(-0.3, 0.3, (n, 3)), rng.uniform(-1, 1, (n, 3))
    axis = rng.normal(size=(n, 3))
    axis /= np.linalg.norm(axis, axis=1)[:, None]
    mass, com = rng.uniform(0.5, 2, n), rng.uniform(-0.1, 0.1, (n, 3))
    crpy, Id = rng.uniform(-1, 1, (n, 3)), rng.uniform(0.05, 0.09, (n, 3))
    tool_at, txyz, trpy = int(rng.integers(0, n)), rng.uniform(-0.2, 0.2, 3), \
        rng.uniform(-1, 1, 3)
    xml = ['<robot name="tree"><link name="base"/><link name="tool"/>']
    for i in range(n):
        xml.append(f'<link name="L{i}"><inertial><origin xyz="{fmt(com[i])}" '
                   f'rpy="{fmt(crpy[i])}"/><mass value="{float(mass[i])!r}"/><inertia '
                   + 'ixx="{!r}" iyy="{!r}" izz="{!r}"'.format(*map(float, Id[i]))
                   + ' ixy="0" ixz="0" iyz="0"/></inertial></link>')
        jt = {"revolute": "continuous"}.get(kind[i], kind[i])
        extra = f'<axis xyz="{fmt(axis[i])}"/>' if kind[i] in ("revolute", "prismatic") else ""
        if kind[i] == "prismatic":
            extra += '<limit lower="-10" upper="10" effort="1" velocity="1"/>'
        xml.append(f'<joint name="j{i:02d}" type="{jt}"><parent link='
                   f'"{"base" if parent[i] < 0 else f"L{parent[i]}"}"/><child link="L{i}"/>'
                   f'<origin xyz="{fmt(xyz[i])}" rpy="{fmt(rpy[i])}"/>{extra}</joint>')
    xml.append(f'<joint name="tool_fix" type="fixed"><parent link="L{tool_at}"/><child '
               f'link="tool"/><origin xyz="{fmt(txyz)}" rpy="{fmt(trpy)}"/></joint></robot>')
    children = {i: [c for c in range(n) if parent[c] == i] for i in range(-1, n)}
    order, stack = [], [-1]
    while stack:   # depth first, children by joint name (the package's joint order)
        i = stack.pop()
        if i >= 0:
            order.append(i)
        stack.extend(sorted(children[i], reverse=True))
    pm, jid = pin.Model(), {-1: 0}
    for i in order:
        jm = {"revolute": lambda: pin.JointModelRevoluteUnaligned(axis[i]),
              "prismatic": lambda: pin.JointModelPrismaticUnaligned(axis[i]),
              "spherical": pin.JointModelSpherical, "floating": pin.JointModelFreeFlyer}[kind[i]]()
        jid[i] = pm.addJoint(jid[parent[i]], jm, pin.SE3(pin.rpy.rpyToMatrix(*rpy[i]), xyz[i]),
                             f"j{i:02d}")
        R = pin.rpy.rpyToMatrix(*crpy[i])
        pm.appendBodyToJoint(jid[i], pin.Inertia(mass[i], com[i], R @ np.diag(Id[i]) @ R.T),
                             pin.SE3.Identity())
        pm.addFrame(pin.Frame(f"L{i}", jid[i], 0, pin.SE3.Identity(), pin.FrameType.BODY))
    pm.addFrame(pin.Frame("tool", jid[tool_at], 0,
                          pin.SE3(pin.rpy.rpyToMatrix(*trpy), txyz), pin.FrameType.OP_FRAME))
    return "".join(xml), pm, jid


@pytest.fixture(scope="module", params=[3, 8, 21])
def tree(request):
    xml, pm, jid = _tree(request.param, n=7 if request.param == 21 else 6)
    robot = mbs.load_urdf(xml)
    assert [name for name, *_ in robot.joint_layout()] == [pm.names[j] for j in
                                                           range(1, pm.njoints)]
    assert (robot.nq, robot.nv) == (pm.nq, pm.nv)
    return robot, pm, jid


def _wrenches(pm, jid, rng):
    """Two random wrenches on two random links: (link indices, (2, 6) wrenches (f, m),
    Pinocchio's fext)."""
    pin = pytest.importorskip("pinocchio")
    links = rng.choice(len(jid) - 1, 2, replace=False)
    W = rng.normal(size=(2, 6))
    fext = [pin.Force.Zero() for _ in range(pm.njoints)]
    for i, w in zip(links, W):
        fext[jid[i]] = pin.Force(w[:3], w[3:])
    return links, W, fext


REPS = {"body": "LOCAL", "spatial": "WORLD", "hybrid": "LOCAL_WORLD_ALIGNED"}


def test_inverse_dynamics_with_wrenches_in_three_recursions(tree):
    pin = pytest.importorskip("pinocchio")
    robot, pm, jid = tree
    pd = pm.createData()
    rng = np.random.default_rng(1)
    for q, v, a in zip(*_states(pm, 3, 2)):
        links, W, fext = _wrenches(pm, jid, rng)
        t, t0 = pin.rnea(pm, pd, q, v, a, fext), pin.rnea(pm, pd, q, v, a).copy()
        f_ext = {f"L{i}": w for i, w in zip(links, W)}
        for rep in ("body", "spatial", "hybrid"):
            assert rel_err(robot.inverse_dynamics(q, v, a, f_ext=f_ext, representation=rep),
                           t) <= TOL, rep
            assert rel_err(robot.inverse_dynamics(q, v, a, representation=rep), t0) <= TOL
            out = np.empty(pm.nv)
            assert robot.inverse_dynamics(q, v, a, f_ext=f_ext, out=out,
                                          representation=rep) is out
            assert rel_err(out, t) <= TOL
    Q, V, A = _states(pm, 4, 3)
    for rep in ("spatial", "hybrid"):
        T = robot.inverse_dynamics(Q, V, A, representation=rep)
        assert T.shape == (4, pm.nv)
        for i in range(4):
            assert rel_err(T[i], pin.rnea(pm, pd, Q[i], V[i], A[i])) <= TOL


def test_frames_in_four_representations(tree):
    pin = pytest.importorskip("pinocchio")
    robot, pm, jid = tree
    pd = pm.createData()
    Q, V, A = _states(pm, 3, 4)
    frames = ["tool", f"L{len(jid) - 2}"]
    res = {}
    for f in frames:
        fid = pm.getFrameId(f)
        for s, (q, v, a) in enumerate(zip(Q, V, A)):
            pin.computeJointJacobians(pm, pd, q)
            pin.computeJointJacobiansTimeVariation(pm, pd, q, v)
            pin.forwardKinematics(pm, pd, q, v, a)
            pin.updateFramePlacements(pm, pd)
            Rt = pd.oMf[fid].rotation.T
            ref = {}
            for rep, name in REPS.items():
                rf = getattr(pin.ReferenceFrame, name)
                acc = (pin.getFrameClassicalAcceleration if rep == "hybrid"
                       else pin.getFrameAcceleration)(pm, pd, fid, rf).vector
                ref[rep] = (pin.getFrameJacobian(pm, pd, fid, rf),
                            pin.getFrameJacobianTimeVariation(pm, pd, fid, rf),
                            pin.getFrameVelocity(pm, pd, fid, rf).vector, acc)
            # mixed: ṗ, p̈ in the world (hybrid's linear rows), ω, ω̇ in the frame (LOCAL's)
            J, Jd, vel, acc = ref["hybrid"]
            Jb, Jdb, velb, accb = ref["body"]
            ref["mixed"] = (np.r_[J[:3], Rt @ J[3:]], None, np.r_[vel[:3], velb[3:]],
                            np.r_[acc[:3], accb[3:]])
            for rep, (J, Jd, vel, acc) in ref.items():
                got = (robot.frame_jacobian(q, f, rep),
                       robot.frame_jacobian_derivative(q, v, f, rep),
                       robot.frame_velocity(q, v, f, rep),
                       robot.frame_acceleration(q, v, a, f, rep))
                res[f, rep, s] = got
                assert np.abs(got[0] - J).max() <= TOL, (f, rep)
                if Jd is not None:
                    assert np.abs(got[1] - Jd).max() <= 1e-11 * max(1, np.abs(Jd).max())
                else:   # mixed J̇: d/dt of [J_lin; Rᵀ J_ang] = [J̇_lin; Rᵀ(J̇_ang − ω̂ J_ang)]
                    Jh, Jdh = ref["hybrid"][0], ref["hybrid"][1]
                    w = ref["hybrid"][2][3:]
                    W = np.array([[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]])
                    assert np.abs(got[1] - np.r_[Jdh[:3], Rt @ (Jdh[3:] - W @ Jh[3:])]
                                  ).max() <= 1e-11 * max(1, np.abs(Jdh).max())
                assert rel_err(got[2], vel) <= TOL, (f, rep)
                assert rel_err(got[3], acc) <= TOL, (f, rep)
        for rep in ("body", "spatial", "hybrid", "mixed"):   # batches: the same numbers
            B = (robot.frame_jacobian(Q, f, rep), robot.frame_jacobian_derivative(Q, V, f, rep),
                 robot.frame_velocity(Q, V, f, rep), robot.frame_acceleration(Q, V, A, f, rep))
            assert B[0].shape == (3, 6, pm.nv) and B[2].shape == (3, 6)
            for s in range(3):
                for b, g in zip(B, res[f, rep, s]):
                    assert np.array_equal(b[s], g), (f, rep)
            out = np.empty((3, 6, pm.nv))
            assert robot.frame_jacobian(Q, f, rep, out=out) is out
            assert np.array_equal(out, B[0])


def test_derivative_batches_against_pinocchio(tree):
    pin = pytest.importorskip("pinocchio")
    robot, pm, _ = tree
    pd = pm.createData()
    Q, V, A = _states(pm, 5, 5)
    DQ, DV, M = robot.inverse_dynamics_derivatives(Q, V, A)
    assert DQ.shape == DV.shape == M.shape == (5, pm.nv, pm.nv)
    for i in range(5):
        dq, dv, m = (np.array(x) for x in pin.computeRNEADerivatives(pm, pd, Q[i], V[i], A[i]))
        m = np.triu(m) + np.triu(m, 1).T
        assert rel_err(DQ[i], dq) <= TOL and rel_err(DV[i], dv) <= TOL
        assert rel_err(M[i], m) <= TOL
        one = robot.inverse_dynamics_derivatives(Q[i], V[i], A[i])
        for b, o in zip((DQ, DV, M), one):
            assert np.array_equal(b[i], o)
    out = np.empty((3, 5, pm.nv, pm.nv))
    got = robot.inverse_dynamics_derivatives(Q, V, A, out=out)
    assert got[0].base is out or got[0] is out[0] or np.shares_memory(got[0], out)
    assert np.array_equal(out[0], DQ) and np.array_equal(out[1], DV)


def _E(b, c):
    sb, cb, sc, cc = np.sin(b), np.cos(b), np.sin(c), np.cos(c)
    return np.array([[cc * cb, sc, 0], [-sc * cb, cc, 0], [sb, 0, 1]])


def _dE(b, c, bd, cd):
    sb, cb, sc, cc = np.sin(b), np.cos(b), np.sin(c), np.cos(c)
    return (bd * np.array([[-cc * sb, 0, 0], [sc * sb, 0, 0], [cb, 0, 0]])
            + cd * np.array([[-sc * cb, cc, 0], [-cc * cb, -sc, 0], [0, 0, 0]]))


def _rxyz(a, b, c):
    pin = pytest.importorskip("pinocchio")
    return (pin.exp3(np.array([a, 0, 0])) @ pin.exp3(np.array([0, b, 0]))
            @ pin.exp3(np.array([0, 0, c])))


def _joints(pm):
    return [(pm.joints[j].idx_q, pm.joints[j].idx_v, pm.joints[j].nv)
            for j in range(1, pm.njoints)]


def _q_of(pm, q0, phi):
    """q0 ⊕ φ in chart coordinates: R0 Rx(a) Ry(b) Rz(c), p0 + R0 (x, y, z); w ≥ 0."""
    pin = pytest.importorskip("pinocchio")
    q = q0.copy()
    for iq, iv, nv in _joints(pm):
        if nv == 1:
            q[iq] = q0[iq] + phi[iv]
            continue
        r = iq + (3 if nv == 6 else 0)
        R0 = pin.Quaternion(q0[r + 3], *q0[r:r + 3]).normalized().matrix()
        R = R0 @ _rxyz(*phi[iv + nv - 3:iv + nv])
        x = pin.Quaternion(R).normalized().coeffs()
        q[r:r + 4] = x if x[3] >= 0 else -x
        if nv == 6:
            q[iq:iq + 3] = q0[iq:iq + 3] + R0 @ phi[iv:iv + 3]
    return q


def _pin_chart_step(pm, q0, v0, tau, h):
    """RK4 in the chart centred at q0 (Trans(x, y, z) Rx(a) Ry(b) Rz(c) after each group
    joint's pose), Pinocchio's ABA for the dynamics; (q, v) at t + h."""
    pin = pytest.importorskip("pinocchio")
    pd = pm.createData()
    joints = _joints(pm)

    def q_of(phi):
        return _q_of(pm, q0, phi)

    def jb(phi, phid):
        J, Jd = np.eye(pm.nv), np.zeros((pm.nv, pm.nv))
        for iq, iv, nv in joints:
            if nv == 1:
                continue
            r = iv + nv - 3
            a, b, c = phi[r:r + 3]
            J[r:r + 3, r:r + 3] = _E(b, c)
            Jd[r:r + 3, r:r + 3] = _dE(b, c, phid[r + 1], phid[r + 2])
            if nv == 6:
                Rr = _rxyz(a, b, c)
                w = _E(b, c) @ phid[r:r + 3]
                W = np.array([[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]])
                J[iv:iv + 3, iv:iv + 3] = Rr.T
                Jd[iv:iv + 3, iv:iv + 3] = -W @ Rr.T
        return J, Jd

    def f(phi, phid):
        J, Jd = jb(phi, phid)
        Vd = pin.aba(pm, pd, q_of(phi), J @ phid, tau)
        return phid, np.linalg.solve(J, Vd - Jd @ phid)

    y, yd = np.zeros(pm.nv), v0.copy()
    k1 = f(y, yd)
    k2 = f(y + 0.5 * h * k1[0], yd + 0.5 * h * k1[1])
    k3 = f(y + 0.5 * h * k2[0], yd + 0.5 * h * k2[1])
    k4 = f(y + h * k3[0], yd + h * k3[1])
    phi = y + h / 6 * (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0])
    phid = yd + h / 6 * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1])
    return q_of(phi), jb(phi, phid)[0] @ phid


@pytest.mark.parametrize("h", [1e-3, 0.05])
def test_chart_step_is_the_rk4_step_with_pinocchios_aba(tree, h):
    robot, pm, _ = tree
    Q, V, A = _states(pm, 3, 6)
    for q, v, tau in zip(Q, 3 * V, A):
        q1, v1 = robot.chart_step(q, v, tau, h)
        r1, w1 = _pin_chart_step(pm, q, v, tau, h)
        assert np.abs(q1 - r1).max() <= TOL
        assert rel_err(v1, w1) <= TOL


def test_bad_input_is_refused_naming_the_problem(tree):
    robot, pm, _ = tree
    Q, V, A = _states(pm, 3, 7)
    q, v, a = Q[0], V[0], A[0]
    nanq = q.copy()
    nanq[0] = np.nan
    badq = q.copy()
    badq[-1] += 0.5   # the last joint's quaternion w or a 1-DOF position
    with pytest.raises(ValueError, match="q must be"):
        robot.chart_step(nanq, v, a, 1e-3)
    with pytest.raises(ValueError, match="q must be"):
        robot.chart_step(q[:-1], v, a, 1e-3)
    with pytest.raises(ValueError, match="qd must be"):
        robot.chart_step(q, v[:-1], a, 1e-3)
    with pytest.raises(ValueError, match="tau must be"):
        robot.chart_step(q, v, np.full_like(a, np.inf), 1e-3)
    for h in (np.nan, np.inf, "x"):
        with pytest.raises((ValueError, TypeError), match="h must be|step"):
            robot.chart_step(q, v, a, h)
    nonunit = q.copy()
    i = next(sq for name, kind, sq, sv in robot.joint_layout() if kind == "spherical")
    nonunit[i] *= 1.5
    with pytest.raises(ValueError, match="the quaternion"):
        robot.chart_step(nonunit, v, a, 1e-3)
    with pytest.raises(ValueError, match="the quaternion"):
        robot.inverse_dynamics(nonunit, v, a, representation="spatial")
    with pytest.raises(ValueError, match="the quaternion"):
        robot.frame_jacobian(np.stack([q, nonunit]), "tool")
    with pytest.raises(ValueError, match="q must be"):
        robot.inverse_dynamics_derivatives(np.stack([q, nanq]), V[:2], A[:2])
    with pytest.raises(ValueError, match="same number of rows"):
        robot.inverse_dynamics_derivatives(Q, V[:2], A)
    with pytest.raises(ValueError, match="qdd must be"):
        robot.inverse_dynamics_derivatives(Q, V, np.full_like(A, np.nan))
    with pytest.raises(ValueError, match="qd (must be|has shape)"):
        robot.frame_velocity(Q, V[:, :-1], "tool", "hybrid")
    with pytest.raises(ValueError, match="representation"):
        robot.inverse_dynamics(q, v, a, representation="mixed")
    with pytest.raises(ValueError, match="representation"):
        robot.frame_jacobian(q, "tool", "world")
    with pytest.raises(ValueError, match="f_ext"):
        robot.inverse_dynamics(q, v, a, f_ext={"nowhere": np.ones(6)})
    with pytest.raises(ValueError, match="f_ext"):
        robot.inverse_dynamics(q, v, a, f_ext={"tool": np.full(6, np.nan)})
    with pytest.raises(ValueError, match="f_ext"):
        robot.inverse_dynamics(q, v, a, f_ext={"tool": np.ones(5)})
    with pytest.raises(ValueError, match="out must"):
        robot.inverse_dynamics_derivatives(Q, V, A, out=np.empty((3, 2, pm.nv, pm.nv)))


def test_forward_dynamics_and_torque_jets_with_wrenches(tree):
    """FD with f_ext against pin.aba with fext; τ, τ′ of a wrench constant in its link frame
    against pin.rnea and the chain rule of pin.computeRNEADerivatives with fext
    (τ′ = ∂τ/∂q V + ∂τ/∂q̇ V̇ + M V̈)."""
    pin = pytest.importorskip("pinocchio")
    robot, pm, jid = tree
    pd = pm.createData()
    rng = np.random.default_rng(9)
    for q, v, a in zip(*_states(pm, 3, 8)):
        links, W, fext = _wrenches(pm, jid, rng)
        f_ext = {f"L{i}": w for i, w in zip(links, W)}
        t = pin.rnea(pm, pd, q, v, a, fext).copy()
        assert rel_err(robot.forward_dynamics(q, v, t, f_ext=f_ext),
                       pin.aba(pm, pd, q, v, t, fext)) <= 1e-10
        jerk = rng.normal(size=pm.nv)
        dq, dv, M = (np.array(x) for x in pin.computeRNEADerivatives(pm, pd, q, v, a, fext))
        M = np.triu(M) + np.triu(M, 1).T
        jet = robot.torque_derivatives((q, np.stack([v, a, jerk])), f_ext=f_ext)
        assert rel_err(jet[0], t) <= TOL
        assert rel_err(jet[1], dq @ v + dv @ a + M @ jerk) <= TOL
        jet0 = robot.torque_derivatives((q, np.stack([v, a])), f_ext=f_ext)
        assert rel_err(jet0[0], t) <= TOL
        # a wrench jet W + t W′ on one link: τ′ gains the (linear) torque of W′ alone
        W1 = rng.normal(size=6)
        f1 = [pin.Force.Zero() for _ in range(pm.njoints)]
        f1[jid[links[0]]] = pin.Force(W1[:3], W1[3:])
        extra = pin.rnea(pm, pd, q, v, a, f1) - pin.rnea(pm, pd, q, v, a)
        jetW = robot.torque_derivatives((q, np.stack([v, a, jerk])), f_ext={
            f"L{links[0]}": np.stack([W[0], W1]), f"L{links[1]}": W[1]})
        assert rel_err(jetW[1], dq @ v + dv @ a + M @ jerk + extra) <= TOL
    with pytest.raises(ValueError, match=r"expected \(6,\) or \(r <= 2, 6\)"):
        robot.torque_derivatives((q, np.stack([v, a, jerk])), f_ext={"tool": np.ones((3, 6))})
    with pytest.raises(ValueError, match="contains NaN"):
        robot.forward_dynamics(q, v, a, f_ext={"tool": np.full(6, np.nan)})
    with pytest.raises(ValueError, match="unknown link"):
        robot.torque_derivatives((q, np.stack([v, a])), f_ext={3: np.ones(6)})


def test_integrate_against_pinocchio(tree):
    """q ⊕ v (exp on each group, pin.integrate; tiny rotations too) and q ⊕ φ in chart
    coordinates; quaternions with w ≥ 0 (Pinocchio's sign may differ: q and −q)."""
    pin = pytest.importorskip("pinocchio")
    robot, pm, _ = tree
    Q, V, _ = _states(pm, 3, 10)

    def canon(q):
        q = q.copy()
        for iq, iv, nv in _joints(pm):
            if nv > 1:
                r = iq + (3 if nv == 6 else 0)
                q[r:r + 4] *= 1.0 if q[r + 3] >= 0 else -1.0
        return q

    for q, v in zip(Q, V):
        for s in (1.0, 1e-9, 0.0):
            assert np.abs(robot.integrate(q, s * v) - canon(pin.integrate(pm, q, s * v))
                          ).max() <= TOL
        assert np.abs(robot.integrate(q, 0.7 * v, chart=True) - _q_of(pm, q, 0.7 * v)
                      ).max() <= TOL
    zero = Q[0].copy()
    i = next(sq for name, kind, sq, sv in robot.joint_layout() if kind == "spherical")
    zero[i] = 0.0
    with pytest.raises(ValueError, match="the quaternion is zero"):
        robot.integrate(zero, V[0])
    with pytest.raises(ValueError, match="v must be"):
        robot.integrate(Q[0], V[0, :-1])
    with pytest.raises(ValueError, match="q must be"):
        robot.integrate(np.full_like(Q[0], np.nan), V[0])


def test_forward_dynamics_derivatives_against_pinocchio(tree):
    pin = pytest.importorskip("pinocchio")
    robot, pm, _ = tree
    pd = pm.createData()
    Q, V, T = _states(pm, 3, 11)
    res = robot.forward_dynamics_derivatives(Q, V, T)
    for i, (q, v, tau) in enumerate(zip(Q, V, T)):
        ref = [np.array(x) for x in pin.computeABADerivatives(pm, pd, q, v, tau)]
        ref[2] = np.triu(ref[2]) + np.triu(ref[2], 1).T
        got = robot.forward_dynamics_derivatives(q, v, tau)
        for k in range(3):
            assert rel_err(got[k], ref[k]) <= TOL, k
            assert np.array_equal(res[k][i], got[k])
        assert np.array_equal(got[2], got[2].T)
