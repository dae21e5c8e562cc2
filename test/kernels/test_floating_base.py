"""Floating bases against Pinocchio's free-flyer (JointModelFreeFlyer): τ, M, C̄, g, ABA, and the
time derivatives τ′, τ″ with a base-motion jet and external-wrench jets.

Pinocchio's free-flyer layout is ours: q = (x, y, z, qx, qy, qz, qw, joints), v = (linear, angular
velocity of the base in its own frame, joint rates), a = v̇, τ = (force, moment on the base,
joint torques). τ′ comes from Pinocchio's partials along the trajectory
(dτ/dt = ∂τ/∂q·v + ∂τ/∂v·v̇ + M·v̈, the configuration derivative being the local one that matches
a body twist), τ″ from 8th-order central differences of that τ′ along an analytic base + joint
trajectory: C(t) = C₀ exp(X₁ s₁(t)) exp(X₂ s₂(t)), whose body twist and its derivatives are
known in closed form.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import mbs_dynamics as mbs
from conftest import erd_path, random_urdf

ROBOTS = {
    "solo12": "solo_description/robots/solo12.urdf",
    "anymal": "anymal_b_simple_description/robots/anymal.urdf",
    "go2": "go2_description/urdf/go2.urdf",
}
RTOL = 1e-12


def _pair(name):
    pin = pytest.importorskip("pinocchio")
    if name.startswith("random"):
        # a floating base needs mass of its own (a massless base on one joint is singular)
        xml = random_urdf(int(name[6:]), n_movable=12, massless_prob=0.0)[0].replace(
            '<link name="base"/>', '<link name="base"><inertial><origin xyz="0.01 0.02 -0.03" '
            'rpy="0.1 0.2 0.3"/><mass value="4"/><inertia ixx="0.2" ixy="0.01" ixz="0" iyy="0.3" '
            'iyz="0" izz="0.25"/></inertial></link>')
        return mbs.load_urdf(xml, floating_base=True), pin.buildModelFromXML(
            xml, pin.JointModelFreeFlyer())
    path = erd_path(ROBOTS[name])
    return mbs.load_urdf(path, floating_base=True), pin.buildModelFromUrdf(
        path, pin.JointModelFreeFlyer())


def _pinq(pm, q):
    """Our q (one coordinate per joint) → Pinocchio's (continuous joints: cos, sin)."""
    out = np.empty(pm.nq)
    out[:7] = q[:7]
    for j, x in zip(pm.joints[2:], q[7:]):
        if j.nq == 2:
            out[j.idx_q:j.idx_q + 2] = (math.cos(x), math.sin(x))
        else:
            out[j.idx_q] = x
    return out


def _rel(a, b):
    return np.abs(np.asarray(a) - b).max() / max(1.0, np.abs(b).max())


def _random_state(rng, robot):
    quat = rng.normal(size=4)
    q = np.r_[rng.normal(size=3), quat / np.linalg.norm(quat), rng.uniform(-2, 2, robot.n)]
    return q, rng.normal(size=robot.nv), rng.normal(size=robot.nv)


CASES = ["solo12", "anymal", "go2", "random5"]


@pytest.mark.parametrize("name", CASES)
def test_dynamics_match_pinocchio_free_flyer(name):
    pin = pytest.importorskip("pinocchio")
    robot, pm = _pair(name)
    pd = pm.createData()
    assert robot.floating_base and robot.nq == pm.nq - sum(j.nq == 2 for j in pm.joints[2:])
    assert robot.nv == pm.nv and list(robot.joint_names) == list(pm.names[2:])
    rng = np.random.default_rng(3)
    for _ in range(3):
        q, v, a = _random_state(rng, robot)
        pq = _pinq(pm, q)
        assert _rel(robot.inverse_dynamics(q, v, a), pin.rnea(pm, pd, pq, v, a)) <= RTOL
        M = pin.crba(pm, pd, pq)
        M = np.triu(M) + np.triu(M, 1).T
        assert _rel(robot.mass_matrix(q), M) <= RTOL
        assert _rel(robot.gravity_torques(q), pin.computeGeneralizedGravity(pm, pd, pq)) <= RTOL
        assert _rel(robot.coriolis_matrix(q, v), pin.computeCoriolisMatrix(pm, pd, pq, v)) <= RTOL
        tau = rng.normal(size=robot.nv) * 5
        assert _rel(robot.forward_dynamics(q, v, tau), pin.aba(pm, pd, pq, v, tau)) <= 1e-10
        # Ṁ − 2C̄ skew, Ṁ symmetric
        Md, C = robot.mass_matrix_derivative(q, v), robot.coriolis_matrix(q, v)
        S = Md - 2 * C
        assert np.abs(S + S.T).max() <= 1e-10 * max(1.0, np.abs(Md).max())


def test_forward_dynamics_matches_mujoco_free_joint():
    """MuJoCo's free joint: qvel = (linear velocity in the world frame, angular in the body frame);
    qacc likewise. Converted to Pinocchio's layout, ABA must agree."""
    mujoco = pytest.importorskip("mujoco")
    xml = """<robot name="two"><link name="base"><inertial><origin xyz="0.05 -0.02 0.01" rpy="0.1 0.2 0.3"/>
      <mass value="3"/><inertia ixx="0.1" ixy="0.01" ixz="0" iyy="0.2" iyz="0.02" izz="0.15"/></inertial></link>
      <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/><origin xyz="0.2 0 0" rpy="0.3 0 0"/>
        <axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="10" velocity="10"/></joint>
      <link name="l1"><inertial><origin xyz="0.1 0.02 0" rpy="0 0 0"/><mass value="1.2"/>
        <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.015"/></inertial></link></robot>"""
    robot = mbs.load_urdf(xml, floating_base=True)
    mj = """<mujoco><option gravity="0 0 -9.81" timestep="0.001"/><worldbody>
      <body name="base"><freejoint/>
        <inertial pos="{c0}" mass="3" fullinertia="{I0}"/>
        <body name="l1" pos="0.2 0 0" quat="{qj}"><joint name="j1" type="hinge" axis="0 1 0"/>
          <inertial pos="0.1 0.02 0" mass="1.2" diaginertia="0.01 0.02 0.015"/></body>
      </body></worldbody></mujoco>"""
    from scipy.spatial.transform import Rotation
    Rc = Rotation.from_euler("xyz", [0.1, 0.2, 0.3]).as_matrix()  # URDF rpy of the inertial
    Ic = Rc @ np.array([[0.1, 0.01, 0], [0.01, 0.2, 0.02], [0, 0.02, 0.15]]) @ Rc.T
    qj = Rotation.from_euler("xyz", [0.3, 0, 0]).as_quat(scalar_first=True)
    m = mujoco.MjModel.from_xml_string(mj.format(
        c0="0.05 -0.02 0.01", qj=" ".join("%.17g" % x for x in qj),
        I0=" ".join("%.17g" % x for x in [Ic[0, 0], Ic[1, 1], Ic[2, 2], Ic[0, 1], Ic[0, 2],
                                          Ic[1, 2]])))
    d = mujoco.MjData(m)
    rng = np.random.default_rng(4)
    for _ in range(3):
        quat = rng.normal(size=4)
        quat /= np.linalg.norm(quat)  # (w, x, y, z) in MuJoCo
        pos, qjv = rng.normal(size=3), rng.uniform(-2, 2)
        lin_b, ang_b, qdj = rng.normal(size=3), rng.normal(size=3), rng.normal()
        R = Rotation.from_quat(quat, scalar_first=True).as_matrix()
        d.qpos[:] = np.r_[pos, quat, qjv]
        d.qvel[:] = np.r_[R @ lin_b, ang_b, qdj]
        d.qfrc_applied[:] = 0
        d.qfrc_applied[6] = tau_j = rng.normal()
        mujoco.mj_forward(m, d)
        q = np.r_[pos, quat[1:], quat[0], qjv]
        ours = robot.forward_dynamics(q, np.r_[lin_b, ang_b, qdj], np.r_[np.zeros(6), tau_j])
        # body-frame linear acceleration of ours = d/dt(Rᵀ ṗ) = Rᵀ p̈ − ω × v_b
        lin_acc_b = R.T @ d.qacc[:3] - np.cross(ang_b, lin_b)
        ref = np.r_[lin_acc_b, d.qacc[3:6], d.qacc[6]]
        np.testing.assert_allclose(ours, ref, rtol=1e-9, atol=1e-9)


# ---------------------------------------------------------------------------------------------
# an analytic base + joint trajectory and Pinocchio's τ′ along it
# ---------------------------------------------------------------------------------------------
def _hat(X):
    w, v = X[:3], X[3:]
    H = np.zeros((4, 4))
    H[:3, :3] = [[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]]
    H[:3, 3] = v
    return H


def _adm(X):
    """ad_X for X = (ω, v): [[ω̃, 0], [ṽ, ω̃]]."""
    def sk(x):
        return np.array([[0, -x[2], x[1]], [x[2], 0, -x[0]], [-x[1], x[0], 0]])
    A = np.zeros((6, 6))
    A[:3, :3] = A[3:, 3:] = sk(X[:3])
    A[3:, :3] = sk(X[3:])
    return A


def _Ad(C):
    R, p = C[:3, :3], C[:3, 3]
    sk = np.array([[0, -p[2], p[1]], [p[2], 0, -p[0]], [-p[1], p[0], 0]])
    A = np.zeros((6, 6))
    A[:3, :3] = A[3:, 3:] = R
    A[3:, :3] = sk @ R
    return A


class Motion:
    """C(t) = C₀ exp(X₁ s₁) exp(X₂ s₂); joints q_j(t) = b_j + a_j sin(w_j t + φ_j)."""

    def __init__(self, n, seed):
        rng = np.random.default_rng(seed)
        self.X1, self.X2 = rng.normal(size=(2, 6))
        self.c = rng.uniform(0.3, 0.8, (2, 3))  # s_i = c0 sin(c1 t + c2)
        self.a, self.w, self.ph, self.b = (rng.uniform(0.2, 0.8, n), rng.uniform(0.5, 2, n),
                                           rng.uniform(0, 6, n), rng.uniform(-1, 1, n))
        self.C0 = np.eye(4)
        self.C0[:3, 3] = rng.normal(size=3)

    @staticmethod
    def _sin_derivs(A, w, ph, t, K):
        return np.array([A * w ** k * np.sin(w * t + ph + k * np.pi / 2) for k in range(K + 1)])

    def s(self, i, t, K):
        c = self.c[i]
        return self._sin_derivs(c[0], c[1], c[2], t, K)

    def q(self, t):
        from scipy.linalg import expm
        s1, s2 = self.s(0, t, 0)[0], self.s(1, t, 0)[0]
        C = self.C0 @ expm(_hat(self.X1) * s1) @ expm(_hat(self.X2) * s2)
        from scipy.spatial.transform import Rotation
        quat = Rotation.from_matrix(C[:3, :3]).as_quat()  # (x, y, z, w)
        qj = self.b + self._sin_derivs(self.a, self.w, self.ph, t, 0)[0]
        return np.r_[C[:3, 3], quat, qj]

    def v(self, t, K):
        """rows v, v′, …, v^(K): ν^(k) = Σ_m binom(k,m) Y^(m) s₁^(k−m+1) + X₂ s₂^(k+1) with
        Y = Ad_{exp(−X₂s₂)} X₁, Y^(m) = Φ_m Y (Φ: complete Bell polynomials of −s₂^(l) ad_{X₂})."""
        from scipy.linalg import expm
        s1, s2 = self.s(0, t, 5), self.s(1, t, 5)
        A = _adm(self.X2)
        Y = _Ad(expm(-_hat(self.X2) * s2[0])) @ self.X1
        # Φ_m (Φ_{m+1} = Φ̇_m − ṡ₂ A Φ_m) written out up to m = 4
        d = s2
        P = [np.eye(6), -d[1] * A, -d[2] * A + d[1] ** 2 * A @ A,
             -d[3] * A + 3 * d[1] * d[2] * A @ A - d[1] ** 3 * A @ A @ A]
        P.append(-d[4] * A + (4 * d[1] * d[3] + 3 * d[2] ** 2) * A @ A
                 - 6 * d[1] ** 2 * d[2] * A @ A @ A + d[1] ** 4 * A @ A @ A @ A)
        assert K <= 4
        rows = []
        for k in range(K + 1):
            nu = self.X2 * s2[k + 1]
            for m in range(k + 1):
                nu = nu + math.comb(k, m) * (P[m] @ Y) * s1[k - m + 1]
            qd = self._sin_derivs(self.a, self.w, self.ph, t, k + 1)[k + 1]
            rows.append(np.r_[nu[3:], nu[:3], qd])  # Pinocchio's order: linear first
        return np.array(rows)


def _pin_tau_dot(pm, pd, motion, t, fext_fn=None):
    """τ′ = ∂τ/∂q·v + ∂τ/∂v·v̇ + M·v̈ (− Jᵀ ḟ for an external wrench) from Pinocchio."""
    pin = pytest.importorskip("pinocchio")
    q = _pinq(pm, motion.q(t))
    v, a, ad = motion.v(t, 2)
    if fext_fn is None:
        pin.computeRNEADerivatives(pm, pd, q, v, a)
        extra = 0.0
    else:
        f, fd, jid = fext_fn(t)
        fext = [pin.Force.Zero() for _ in range(pm.njoints)]
        fext[jid] = pin.Force(f[:3], f[3:])  # (f, m)
        pin.computeRNEADerivatives(pm, pd, q, v, a, fext)
        pin.computeJointJacobians(pm, pd, q)
        J = pin.getJointJacobian(pm, pd, jid, pin.ReferenceFrame.LOCAL)
        extra = -J.T @ fd
    M = np.triu(pd.M) + np.triu(pd.M, 1).T
    return pd.dtau_dq @ v + pd.dtau_dv @ a + M @ ad + extra


def _fd8(f, t, h):
    """8th-order central difference."""
    c = (4 / 5, -1 / 5, 4 / 105, -1 / 280)
    return sum(ck * (f(t + (k + 1) * h) - f(t - (k + 1) * h)) for k, ck in enumerate(c)) / h


@pytest.mark.parametrize("name", ["solo12", "anymal", "random5"])
def test_torque_derivatives_with_base_motion_jet(name):
    pin = pytest.importorskip("pinocchio")
    robot, pm = _pair(name)
    pd = pm.createData()
    motion = Motion(robot.n, seed=11)
    for t in (0.3, 1.7):
        q, vs = motion.q(t), motion.v(t, 3)
        out = robot.torque_derivatives((q, vs))
        assert out.shape == (3, robot.nv)
        assert _rel(out[0], pin.rnea(pm, pd, _pinq(pm, q), vs[0], vs[1])) <= RTOL
        assert _rel(out[1], _pin_tau_dot(pm, pd, motion, t)) <= 1e-11
        ref2 = _fd8(lambda s: _pin_tau_dot(pm, pd, motion, s), t, 0.005)
        assert _rel(out[2], ref2) <= 1e-9
        # the O(n) recursion of order 0 equals the dedicated RNEA
        assert _rel(robot.torque_derivatives((q, vs[:2]))[0], out[0]) <= 1e-15


def test_external_wrench_jets_on_a_foot():
    """A contact wrench jet on a foot link (W, W′, W″ in the link frame) enters τ, τ′, τ″."""
    pin = pytest.importorskip("pinocchio")
    robot, pm = _pair("solo12")
    pd = pm.createData()
    motion = Motion(robot.n, seed=5)
    link = "FL_FOOT"
    frame = pm.frames[pm.getFrameId(link)]
    W0, W1 = np.array([2.0, -1.0, 15.0, 0.3, -0.2, 0.1]), np.array([1.0, 3.0, -4.0, 0.1, 0.2, -0.1])

    def wrench(t, k):  # W(t) = W0 + W1 sin(2t), in the foot frame, (f, m)
        return W0 * (k == 0) + W1 * 2 ** k * np.sin(2 * t + k * np.pi / 2)

    def fext_fn(t):  # Pinocchio wants it in the parent joint frame, force first
        f, fd = wrench(t, 0), wrench(t, 1)
        to_joint = frame.placement.act
        fj = to_joint(pin.Force(f[:3], f[3:]))
        fdj = to_joint(pin.Force(fd[:3], fd[3:]))
        return (np.r_[fj.linear, fj.angular], np.r_[fdj.linear, fdj.angular], frame.parentJoint)

    t = 0.9
    q, vs = motion.q(t), motion.v(t, 3)
    jet = np.array([wrench(t, k) for k in range(3)])
    out = robot.torque_derivatives((q, vs), f_ext={link: jet})
    fj = fext_fn(t)[0]
    fext = [pin.Force.Zero() for _ in range(pm.njoints)]
    fext[frame.parentJoint] = pin.Force(fj[:3], fj[3:])
    assert _rel(out[0], pin.rnea(pm, pd, _pinq(pm, q), vs[0], vs[1], fext)) <= RTOL
    assert _rel(out[1], _pin_tau_dot(pm, pd, motion, t, fext_fn)) <= 1e-11
    ref2 = _fd8(lambda s: _pin_tau_dot(pm, pd, motion, s, fext_fn), t, 0.005)
    assert _rel(out[2], ref2) <= 1e-9
    # a constant wrench given as (6,) is the jet (W, 0, 0)
    out_c = robot.torque_derivatives((q, vs), f_ext={link: W0})
    jet_c = np.zeros((3, 6))
    jet_c[0] = W0
    np.testing.assert_allclose(out_c, robot.torque_derivatives((q, vs), f_ext={link: jet_c}),
                               rtol=0, atol=1e-12)


def test_quaternion_is_normalised_or_rejected():
    robot, _ = _pair("solo12")
    rng = np.random.default_rng(0)
    q, v, a = _random_state(rng, robot)
    q2 = q.copy()
    q2[3:7] *= 1 + 2e-8           # close to unit: normalised
    np.testing.assert_allclose(robot.inverse_dynamics(q2, v, a), robot.inverse_dynamics(q, v, a),
                               rtol=1e-7, atol=1e-9)
    q3 = q.copy()
    q3[3:7] *= 1.1
    for call in (lambda: robot.inverse_dynamics(q3, v, a), lambda: robot.mass_matrix(q3),
                 lambda: robot.forward_dynamics(q3, v, a), lambda: robot.gravity_torques(q3),
                 lambda: robot.coriolis_matrix(q3, v),
                 lambda: robot.torque_derivatives((q3, np.zeros((3, robot.nv))))):
        with pytest.raises(ValueError, match="not a unit quaternion"):
            call()
    with pytest.raises(ValueError, match="pair"):
        robot.torque_derivatives(np.zeros((5, robot.n)))
    with pytest.raises(ValueError, match="q has shape"):
        robot.inverse_dynamics(np.zeros(robot.n), v, a)


def test_batches_equal_single_calls():
    robot, _ = _pair("random5")
    rng = np.random.default_rng(2)
    states = [_random_state(rng, robot) for _ in range(5)]
    Q, V, A = (np.array(x) for x in zip(*states))
    np.testing.assert_array_equal(robot.inverse_dynamics(Q, V, A),
                                  [robot.inverse_dynamics(*s) for s in states])
    np.testing.assert_array_equal(robot.forward_dynamics(Q, V, A),
                                  [robot.forward_dynamics(*s) for s in states])
    VS = rng.normal(size=(5, 4, robot.nv))
    np.testing.assert_array_equal(robot.torque_derivatives((Q, VS)),
                                  [robot.torque_derivatives((Q[i], VS[i])) for i in range(5)])


def test_info_and_free_body():
    """A single free body (no joint at all) loads with floating_base=True: Newton–Euler."""
    xml = """<robot name="box"><link name="b"><inertial><origin xyz="0 0 0"/><mass value="2"/>
      <inertia ixx="0.1" ixy="0" ixz="0" iyy="0.2" iyz="0" izz="0.3"/></inertial></link></robot>"""
    robot = mbs.load_urdf(xml, floating_base=True)
    assert (robot.n, robot.nq, robot.nv) == (0, 7, 6)
    q = np.r_[0, 0, 0, 0, 0, 0, 1.0]
    v = np.r_[0, 0, 0, 0, 0, 2.0]
    # free fall: a = (R^T g - ω×v, −I⁻¹ ω×Iω) = (0, 0, −9.81, 0, 0, 0) here
    np.testing.assert_allclose(robot.forward_dynamics(q, v, np.zeros(6)), [0, 0, -9.81, 0, 0, 0],
                               atol=1e-14)
    assert "floating" in repr(robot)
