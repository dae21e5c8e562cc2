"""HDCA (seed 002) on floating bases and with mimic joints (issue 19, item 4).

Oracles, never this package's numbers: Pinocchio's ``aba`` on the free-flyer model of the same
URDF (floating-base trees); Pinocchio's M and RNEA of the mimic-free model projected with the
URDF's mimic map G written in test_mimic (``Oracle.aba``: GᵀMG q̈ = Gᵀ(τ_full − h)); for closed
loops on a floating base Pinocchio's ``constraintDynamics`` on the free-flyer spanning tree
(CONTACT_3D/6D) and an independent KKT solve written here from Pinocchio's free-flyer M, nle,
LOCAL frame Jacobians and frame accelerations (the exact K̇q̇).
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import mbs_dynamics as mbs
import loops_mechanisms as lm
from conftest import erd_path
from test_loops_kinematics import NAMES, rpy_pose

try:
    import pinocchio as pin
except ImportError:  # skip per test, not per module (launch_testing)
    pin = None
pytestmark = pytest.mark.skipif(pin is None, reason="pinocchio is not installed")

FREE = {"solo12": "solo_description/robots/solo12.urdf",
        "anymal": "anymal_b_simple_description/robots/anymal.urdf",
        "talos_reduced": "talos_data/robots/talos_reduced.urdf"}
BASE_INERTIA = ('<link name="base"><inertial><origin xyz="0.02 -0.01 0.03"/><mass value="3"/>'
                '<inertia ixx="0.05" iyy="0.06" izz="0.07" ixy="0.001" ixz="0" iyz="0"/>'
                '</inertial></link>')


def rel(a, b):
    return np.abs(np.asarray(a) - b).max() / max(1.0, np.abs(b).max())


def _load(src, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", mbs.URDFWarning)
        return mbs.load_urdf(src, **kw)


def _base_q(rng, n):
    quat = rng.normal(size=4)
    return np.r_[rng.normal(size=3), quat / np.linalg.norm(quat), rng.uniform(-1, 1, n)]


def constraint_dynamics(pm, loops, qf, vf, tf):
    """Pinocchio's constraintDynamics of the spanning tree with the loops as 3-D/6-D rigid
    constraints (connect/weld; Pinocchio has no 5-D hinge)."""
    cms = []
    for lp in loops:
        fa, fb = (pm.frames[pm.getFrameId(lp[f"frame_{s}"], pin.BODY)] for s in "ab")
        ct = (pin.ContactType.CONTACT_3D if lp["type"] == "connect"
              else pin.ContactType.CONTACT_6D)
        cms.append(pin.RigidConstraintModel(
            ct, pm, fa.parentJoint, fa.placement * rpy_pose(lp.get("origin_a")),
            fb.parentJoint, fb.placement * rpy_pose(lp.get("origin_b")),
            pin.ReferenceFrame.LOCAL))
    pd = pm.createData()
    cds = [c.createData() for c in cms]
    pin.initConstraintDynamics(pm, pd, cms, cds)
    return pin.constraintDynamics(pm, pd, qf, vf, tf, cms, cds,
                                  pin.ProximalSettings(1e-14, 1e-12, 200))


@pytest.mark.parametrize("name", list(FREE))
def test_floating_base_tree_equals_pinocchio_aba(name):
    from test_mimic import OracleFB
    path = erd_path(FREE[name])
    r = _load(path, floating_base=True)
    assert type(r) is mbs.Robot and r.floating_base
    o = OracleFB(path)
    rng = np.random.default_rng(3)
    Q, V, T = [], [], []
    for _ in range(3):
        q = _base_q(rng, r.n)
        v, tau = rng.normal(size=(2, r.nv))
        a = r.forward_dynamics(q, v, tau, method="dca")
        assert a.shape == (r.nv,)
        assert rel(a, pin.aba(o.pm, o.pd, o.q(q), v, tau)) < 1e-12
        Q.append(q), V.append(v), T.append(tau)
    Q, V, T = map(np.array, (Q, V, T))
    out = np.empty((3, r.nv))
    res = r.forward_dynamics(Q, V, T, method="dca", out=out)
    assert res is out and rel(out, r.forward_dynamics(Q, V, T)) < 1e-12
    # payloads on the floating base link and on the last link (Pinocchio: the same inertia
    # added to the parent joint of the link's frame)
    for link in (r.model.base_link, r.link_names[-1]):
        I3 = np.diag([0.01, 0.02, 0.015]) + 0.002
        r2 = r.with_payload(link, 1.7, com=(0.03, -0.02, 0.05), inertia=I3)
        pm = o.pm.copy()
        fr = pm.frames[pm.getFrameId(link)]
        pm.inertias[fr.parentJoint] += fr.placement.act(pin.Inertia(1.7, np.array([0.03, -0.02,
                                                                               0.05]), I3))
        a2 = r2.forward_dynamics(Q[0], V[0], T[0], method="dca")
        assert rel(a2, pin.aba(pm, pm.createData(), o.q(Q[0]), V[0], T[0])) < 1e-12
        assert rel(a2, r.forward_dynamics(Q[0], V[0], T[0], method="dca")) > 1e-6  # it moved
    bad = Q[0].copy()
    bad[3:7] *= 1.5
    with pytest.raises(ValueError, match="unit quaternion"):
        r.forward_dynamics(bad, V[0], T[0], method="dca")
    with pytest.raises(ValueError, match="qd"):
        r.forward_dynamics(Q[0], V[0][:-1], T[0], method="dca")
    with pytest.raises(ValueError, match="batch"):  # f_ext: test_loops_hdca_fext.py
        r.forward_dynamics(Q, V, T, method="dca", f_ext={r.link_names[0]: np.ones(6)})


def test_floating_base_without_base_mass_is_a_clear_error():
    u, _, _ = lm.planar_fourbar()
    r = _load(u, floating_base=True)  # the base link has no inertia: M_b⁻¹ does not exist
    z = np.zeros(r.nv)
    q = np.r_[np.zeros(6), 1.0, np.zeros(r.n)]
    with pytest.raises(ValueError, match="floating base link has a singular inertia"):
        r.forward_dynamics(q, z, z, method="dca")


@pytest.mark.parametrize("case", ["panda", "pr2", "tiago_pro", "chain", "random",
                                  "talos_full_fb", "chain_fb"])
def test_mimic_robot_equals_projected_pinocchio(case):
    """MimicRobot.forward_dynamics(method="dca"): the mimic rows closed in the assembly."""
    from test_mimic import FB_CHAIN, Oracle, OracleFB, _source
    fb = case.endswith("_fb")
    src = FB_CHAIN if case == "chain_fb" else (
        erd_path("talos_data/robots/talos_full_v2.urdf") if case == "talos_full_fb"
        else _source(case))
    r = _load(src, floating_base=fb)
    assert isinstance(r, mbs.MimicRobot) and r.floating_base == fb
    o = OracleFB(src) if fb else Oracle(src)
    rng = np.random.default_rng(5)
    Q, V, T = [], [], []
    for _ in range(2):
        q = _base_q(rng, r.n) if fb else rng.uniform(-1, 1, r.nq)
        v, tau = rng.normal(size=(2, r.nv))
        a = r.forward_dynamics(q, v, tau, method="dca")
        assert rel(a, o.aba(q, v, tau)) < 1e-12
        assert rel(o.tau(q, v, a), tau) < 1e-10  # round trip through Pinocchio's RNEA
        Q.append(q), V.append(v), T.append(tau)
    Q, V, T = map(np.array, (Q, V, T))
    assert rel(r.forward_dynamics(Q, V, T, method="dca"), r.forward_dynamics(Q, V, T)) < 1e-12
    with pytest.raises(ValueError, match="tau"):
        r.forward_dynamics(Q[0], V[0], T[0][:-1], method="dca")
    with pytest.raises(ValueError, match="method must be"):
        r.forward_dynamics(Q[0], V[0], T[0], method="crba")


# ---------------------------------------------------------------- loops on a floating base
def _floating(name):
    u, loops, act = lm.ALL[name]()
    u = u.replace('<link name="base"/>', BASE_INERTIA)
    r = _load(u, loops=loops, actuated=act, floating_base=True)
    pm = pin.buildModelFromXML(u, pin.JointModelFreeFlyer())
    return r, u, loops, pm


def _kkt(r, loops, pm, qf, vf, tf):
    """Min-norm KKT of the free-flyer spanning tree: M q̈ + nle = τ + Kᵀλ, K q̈ = −K̇q̇ with K the
    rows of V_b − Ad_{C_ba} V_a (LOCAL, linear first) and K̇q̇ = A_b − Ad_{C_ba} A_a +
    V_b × (Ad_{C_ba} V_a) from Pinocchio's frame velocities and accelerations at q̈ = 0."""
    pd = pm.createData()
    pin.forwardKinematics(pm, pd, qf, vf, np.zeros(pm.nv))
    pin.computeJointJacobians(pm, pd, qf)
    pin.updateFramePlacements(pm, pd)
    K, k = [], []
    for lp in loops:
        rows = {"connect": [0, 1, 2], "weld": [0, 1, 2, 3, 4, 5],
                "revolute": [0, 1, 2, 3, 4]}[lp["type"]]
        out = []
        for side in ("a", "b"):
            f = pm.getFrameId(lp[f"frame_{side}"], pin.BODY)
            fr = pm.frames[f]
            X = fr.placement * rpy_pose(lp.get(f"origin_{side}"))  # in the parent joint
            J = X.toActionMatrixInverse() @ pin.getJointJacobian(pm, pd, fr.parentJoint,
                                                                 pin.LOCAL)
            out.append((pd.oMi[fr.parentJoint] * X, J, X.actInv(pd.v[fr.parentJoint]),
                        X.actInv(pd.a[fr.parentJoint])))
        (Ca, Ja, Va, Aa), (Cb, Jb, Vb, Ab) = out
        Cba = Cb.inverse() * Ca
        K.append((Jb - Cba.toActionMatrix() @ Ja)[rows])
        k.append((Ab - Cba.act(Aa) + Vb.cross(Cba.act(Va))).vector[rows])
    K, k = np.vstack(K), np.concatenate(k)
    M = pin.crba(pm, pd, qf)
    M = np.triu(M) + np.triu(M, 1).T
    nle = pin.nonLinearEffects(pm, pd, qf, vf)
    m = K.shape[0]
    A = np.block([[M, -K.T], [K, np.zeros((m, m))]])
    sol = np.linalg.lstsq(A, np.r_[tf - nle, -k], rcond=None)[0]
    return sol[:pm.nv], K


@pytest.mark.parametrize("name", NAMES)
def test_hdca_on_floating_closed_loops(name):
    r, u, loops, pm = _floating(name)
    assert r.floating_base and r.nv == 6 + r.n
    rng = np.random.default_rng(21)
    qb = np.r_[rng.normal(size=3), rng.normal(size=4)]
    qb[3:] /= np.linalg.norm(qb[3:])
    q = np.r_[qb, r.q_assembled[r.actuated_index] + 0.05 * rng.standard_normal(r.n)]
    qd, tau = rng.standard_normal((2, r.nv))
    a = r.forward_dynamics(q, qd, tau, method="dca")
    assert a.shape == (r.nv,)
    assert rel(r.inverse_dynamics(q, qd, a), tau) < 1e-10  # forward → inverse round trip
    assert rel(a, r.forward_dynamics(q, qd, tau, method="lagrange")) < 1e-10
    # the full motion (base passes, joints from the closure) against the KKT oracle
    X = r.copy().expand(np.stack([q[7:], qd[6:]]))
    qf, vf = np.r_[q[:7], X[0]], np.r_[qd[:6], X[1]]
    tf = np.zeros(6 + r.n_full)
    tf[:6] = tau[:6]
    tf[6 + r.actuated_index] = tau[6:]
    af, K = _kkt(r, loops, pm, qf, vf, tf)
    assert np.abs(K @ vf).max() < 1e-12
    assert rel(a, np.r_[af[:6], af[6 + r.actuated_index]]) < 1e-10
    from mbs_dynamics.loops.hdca import acceleration
    assert rel(acceleration(r, qf, vf, tf), af) < 1e-10  # every joint's q̈, not only actuated
    # Pinocchio's constraintDynamics where its constraint types apply (no 5-D hinge)
    if all(lp["type"] != "revolute" for lp in loops):
        ddq = constraint_dynamics(pm, loops, qf, vf, tf)
        assert rel(acceleration(r, qf, vf, tf), ddq) < 1e-10  # measured ≤ 4e-14
    # a payload (a new model: a new assembly), checked by the round trip through its RNEA
    r2 = r.with_payload(r.full_robot.link_names[-1], 0.8, com=(0.02, 0.0, 0.01))
    a2 = r2.forward_dynamics(q, qd, tau, method="dca")
    assert rel(r2.inverse_dynamics(q, qd, a2), tau) < 1e-10 and rel(a2, a) > 1e-8
    # batches and bad input
    Q = np.array([q, q])
    out = np.empty((2, r.nv))
    assert r.forward_dynamics(Q, np.array([qd, qd]), np.array([tau, tau]), method="dca",
                              out=out) is out
    assert rel(out[1], a) < 1e-12
    bad = q.copy()
    bad[3:7] *= 2.0
    with pytest.raises(ValueError, match="unit quaternion"):
        r.forward_dynamics(bad, qd, tau, method="dca")
    with pytest.raises(ValueError, match="method must be"):
        r.forward_dynamics(q, qd, tau, method="ddca")
    with pytest.raises(ValueError, match="NaN"):
        r.forward_dynamics(q, qd, np.full(r.nv, np.nan), method="dca")


def test_hdca_with_mimic_joints_and_loops():
    """The four-bar with a flap mimicking the crank (test_loops_dynamics): HDCA closes the loop
    and the mimic row in one assembly; oracle the KKT with the mimic row written here."""
    u, loops, act = lm.planar_fourbar_with_flap()
    for fb in (False, True):
        src = u.replace('<link name="base"/>', BASE_INERTIA) if fb else u
        r = _load(src, loops=loops, actuated=act, floating_base=fb)
        rng = np.random.default_rng(4)
        q = r.q_assembled[r.actuated_index] + 0.1 * rng.standard_normal(r.n)
        if fb:
            q = np.r_[_base_q(rng, 0), q]
        qd, tau = rng.standard_normal((2, r.nv))
        a = r.forward_dynamics(q, qd, tau, method="dca")
        assert rel(a, r.forward_dynamics(q, qd, tau, method="lagrange")) < 1e-10
        assert rel(r.inverse_dynamics(q, qd, a), tau) < 1e-10
        # KKT oracle: Pinocchio (free-flyer or fixed) with the loop rows and q̈_f + 0.5 q̈_c = 0
        pm = (pin.buildModelFromXML(src, pin.JointModelFreeFlyer()) if fb
              else pin.buildModelFromXML(src))
        nb = 6 if fb else 0
        X = r.copy().expand(np.stack([q[7:] if fb else q, qd[nb:]]))
        qf = np.r_[q[:7], X[0]] if fb else X[0]
        vf = np.r_[qd[:6], X[1]] if fb else X[1]
        tf = np.zeros(nb + r.n_full)
        tf[:nb] = tau[:nb]
        tf[nb + r.actuated_index] = tau[nb:]
        names = list(pm.names[2 if fb else 1:])
        assert names == list(r.full_joint_names)
        row = np.zeros(nb + r.n_full)
        row[nb + names.index("j_flap")], row[nb + names.index("j_crank")] = 1.0, 0.5
        af, K = _kkt_rows(r, loops, pm, qf, vf, tf, row)
        assert rel(a, np.r_[af[:nb], af[nb + r.actuated_index]]) < 1e-10


def _kkt_rows(r, loops, pm, qf, vf, tf, row):
    """The KKT of :func:`_kkt` with one more constant constraint row (K̇ = 0)."""
    pd = pm.createData()
    af0, K = _kkt(r, loops, pm, qf, vf, tf)
    pin.forwardKinematics(pm, pd, qf, vf, np.zeros(pm.nv))
    M = pin.crba(pm, pd, qf)
    M = np.triu(M) + np.triu(M, 1).T
    nle = pin.nonLinearEffects(pm, pd, qf, vf)
    # K̇q̇ of the loop rows: K af0 = −K̇q̇ (af0 solves the loop-only KKT)
    k = -K @ af0
    Ka = np.vstack([K, row])
    m = Ka.shape[0]
    A = np.block([[M, -Ka.T], [Ka, np.zeros((m, m))]])
    sol = np.linalg.lstsq(A, np.r_[tf - nle, -k, 0.0], rcond=None)[0]
    return sol[:pm.nv], Ka


def test_simulation_with_a_mimic_joint_in_the_loop_mechanism():
    """Hamilton's equations (momentum level) with the mimic row among the velocity constraints:
    a flap on the coupler mimicking the crank; the mimic relation and the closure hold, the
    energy is conserved and the motion agrees with the acceleration-level baseline."""
    from mbs_dynamics.loops.simulate import simulate_loops
    u, loops, act = lm.planar_fourbar()
    flap = ('<link name="flap"><inertial><origin xyz="0.1 0 0"/><mass value="0.4"/><inertia '
            'ixx="0.001" iyy="0.002" izz="0.002" ixy="0" ixz="0" iyz="0"/></inertial></link>'
            '<joint name="j_flap" type="revolute"><parent link="coupler"/><child link="flap"/>'
            '<origin xyz="-0.2 0 0.1"/><axis xyz="0 1 0"/><limit lower="-3" upper="3" '
            'effort="10" velocity="5"/><mimic joint="j_crank" multiplier="-0.5" offset="0.1"/>'
            '</joint></robot>')
    r = _load(u.replace("</robot>", flap), loops=loops, actuated=act)
    i, c = r.full_joint_names.index("j_flap"), r.full_joint_names.index("j_crank")
    out = {}
    for m in ("hdca", "lagrange"):
        res = simulate_loops(r, 2.0, method=m, dt=0.5, rtol=1e-10, atol=1e-10)
        assert res.residual.max() < 1e-10
        assert np.abs(res.q[:, i] + 0.5 * res.q[:, c] - 0.1).max() < 1e-12
        assert np.abs(res.qd[:, i] + 0.5 * res.qd[:, c]).max() < 1e-10
        assert np.abs(res.energy - res.energy[0]).max() < 1e-6
        out[m] = res.q
    assert np.abs(out["hdca"] - out["lagrange"]).max() < 1e-6
