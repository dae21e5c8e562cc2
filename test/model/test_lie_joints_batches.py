"""LieJointRobot (spherical and inner free joints) with batches and external wrenches, against
Pinocchio 4.1 (``JointModelSpherical``, ``JointModelFreeFlyer``): a batch equals Pinocchio row
by row, f_ext equals ``pin.rnea``/``pin.aba`` with ``fext`` (a wrench in a link frame,
transported to its joint), τ′ with a constant wrench against 8th-order differences; the chart
re-centred in place gives the same numbers as a chart built afresh at q, whatever the order of
the calls."""
from __future__ import annotations

import numpy as np
import pytest

import mbs_dynamics as mbs
from joint_oracle import TOL, rel_err
from test_spherical_joint import _geometry, _pin, _urdf, subgroup_motion


@pytest.fixture(scope="module")
def pair():
    g = _geometry(11)
    return mbs.load_urdf(_urdf(g)), _pin(g)


def _batch(pm, N, seed):
    pin = pytest.importorskip("pinocchio")
    rng = np.random.default_rng(seed)
    q = np.array([pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq))
                  for _ in range(N)])
    return q, rng.normal(size=(N, pm.nv)), rng.normal(size=(N, pm.nv))


def test_batches_equal_pinocchio_row_by_row(pair):
    pin = pytest.importorskip("pinocchio")
    robot, pm = pair
    pd = pm.createData()
    Q, V, A = _batch(pm, 5, 1)
    fid = pm.getFrameId("tool")
    tau = robot.inverse_dynamics(Q, V, A)
    M = robot.mass_matrix(Q)
    ddq = robot.forward_dynamics(Q, V, tau)
    DQ, DV, MM = robot.inverse_dynamics_derivatives(Q, V, A)
    Y = robot.regressor(Q, V, A)
    P = robot.frame_placement(Q, "tool")
    J = robot.frame_jacobian(Q, "tool", "hybrid")
    G = robot.gravity_torques(Q)
    assert tau.shape == (5, 11) and M.shape == DQ.shape == (5, 11, 11) and P.shape == (5, 4, 4)
    for i, (q, v, a) in enumerate(zip(Q, V, A)):
        t = pin.rnea(pm, pd, q, v, a)
        assert rel_err(tau[i], t) <= TOL
        m = pin.crba(pm, pd, q)
        m = np.triu(m) + np.triu(m, 1).T
        assert rel_err(M[i], m) <= TOL and rel_err(MM[i], m) <= TOL
        assert rel_err(ddq[i], a) <= 1e-10
        dq, dv, _ = pin.computeRNEADerivatives(pm, pd, q, v, a)
        assert rel_err(DQ[i], dq) <= TOL and rel_err(DV[i], dv) <= TOL
        pi = robot.inertial_parameters().reshape(-1)
        assert rel_err(Y[i] @ pi, t) <= TOL
        pin.framesForwardKinematics(pm, pd, q)
        assert np.abs(P[i] - pd.oMf[fid].homogeneous).max() <= TOL
        Jp = pin.computeFrameJacobian(pm, pd, q, fid, pin.LOCAL_WORLD_ALIGNED)
        assert rel_err(J[i], Jp) <= TOL
        assert rel_err(G[i], pin.computeGeneralizedGravity(pm, pd, q)) <= TOL
    jets = robot.torque_derivatives((Q, np.stack([V, A, V, A], axis=1)))
    assert jets.shape == (5, 3, 11)
    for i in range(5):
        one = robot.torque_derivatives((Q[i], np.stack([V[i], A[i], V[i], A[i]])))
        assert np.array_equal(jets[i], one)
    out = np.empty((5, 11))
    assert robot.inverse_dynamics(Q, V, A, out=out) is out and np.array_equal(out, tau)


def test_batch_errors_name_the_problem(pair):
    robot, pm = pair
    Q, V, A = _batch(pm, 3, 2)
    with pytest.raises(ValueError, match="same number of rows N = 3"):
        robot.inverse_dynamics(Q, V[:2], A)
    with pytest.raises(ValueError, match="qd must be finite"):
        robot.inverse_dynamics(Q, np.full_like(V, np.nan), A)
    with pytest.raises(ValueError, match="f_ext is not supported with batch"):
        robot.forward_dynamics(Q, V, A, f_ext={"F": np.ones(6)})
    bad = Q.copy()
    bad[1, 5] = 3.0   # the spherical joint's quaternion of row 1
    with pytest.raises(ValueError, match="joint 's': the quaternion"):
        robot.mass_matrix(bad)


def _pin_fext(pm, pd, q, link_joint, placement, w):
    """Pinocchio's fext: the wrench (f, m) given in a frame fixed at ``placement`` of joint
    ``link_joint``, as a pin.Force in that joint's frame."""
    pin = pytest.importorskip("pinocchio")
    fext = [pin.Force.Zero() for _ in range(pm.njoints)]
    fext[link_joint] = placement.act(pin.Force(w[:3], w[3:]))
    return fext


@pytest.mark.parametrize("link", ["S", "F", "tool", "B"])
def test_f_ext_against_pinocchio(pair, link):
    pin = pytest.importorskip("pinocchio")
    robot, pm = pair
    pd = pm.createData()
    rng = np.random.default_rng(4)
    fid = pm.getFrameId("tool")
    joint = {"S": pm.getJointId("s"), "F": pm.getJointId("f"), "tool": pm.getJointId("f"),
             "B": pm.getJointId("b")}[link]
    placement = pm.frames[fid].placement if link == "tool" else pin.SE3.Identity()
    for q, v, a in zip(*_batch(pm, 3, 5)):
        w = rng.normal(size=6)
        fext = _pin_fext(pm, pd, q, joint, placement, w)
        t = pin.rnea(pm, pd, q, v, a, fext)
        assert rel_err(robot.inverse_dynamics(q, v, a, f_ext={link: w}), t) <= TOL
        for rep in ("spatial", "hybrid"):
            assert rel_err(robot.inverse_dynamics(q, v, a, f_ext={link: w},
                                                  representation=rep), t) <= TOL
        ddq = pin.aba(pm, pd, q, v, t, fext)
        assert rel_err(robot.forward_dynamics(q, v, t, f_ext={link: w}), ddq) <= 1e-10
        jet = robot.torque_derivatives((q, np.stack([v, a])), f_ext={link: w})
        assert rel_err(jet[0], t) <= TOL


def test_f_ext_jet_against_differences_of_pinocchio(pair):
    """A wrench constant in the link frame along q(t) = q₀ ⊕ f(t) ξ: τ′, τ″ against 8th-order
    central differences of pin.rnea with fext."""
    pin = pytest.importorskip("pinocchio")
    from joint_oracle import check_jet
    robot, pm = pair
    pd = pm.createData()
    q0, f = subgroup_motion(pm, 8)
    w = np.random.default_rng(8).normal(size=6)
    fext = _pin_fext(pm, pd, q0, pm.getJointId("f"), pin.SE3.Identity(), w)

    def tau(t):
        return pin.rnea(pm, pd, pin.integrate(pm, q0, f(t, 0)), f(t, 1), f(t, 2), fext)

    for t in (0.0, 0.4):
        q = pin.integrate(pm, q0, f(t, 0))
        vs = np.array([f(t, k) for k in range(1, 5)])
        check_jet(robot.torque_derivatives((q, vs), f_ext={"F": w}), tau, t)


def test_recentred_chart_equals_a_fresh_chart(pair):
    """The chart re-seated in place (any order of configurations) equals one built at q."""
    robot, pm = pair
    Q, V, A = _batch(pm, 4, 9)
    for i in (0, 1, 0, 2, 2, 3, 1):
        fresh, qc = robot.chart_robot(Q[i])
        rates, _ = robot._chart_rates(np.stack([V[i], A[i]]))
        tau = robot.inverse_dynamics(Q[i], V[i], A[i])
        assert rel_err(tau, fresh.inverse_dynamics(qc, rates[0], rates[1])) <= 1e-13
        M = robot.mass_matrix(Q[i])
        assert rel_err(M, fresh.mass_matrix(qc)) <= 1e-13
        assert np.abs(robot.frame_placement(Q[i], "tool")
                      - fresh.frame_placement(qc, "tool")).max() <= 1e-14
    copy = robot.copy()
    assert np.array_equal(copy.mass_matrix(Q[3]), robot.mass_matrix(Q[3]))


def test_frame_velocity_and_acceleration_against_pinocchio(pair):
    """Body (LOCAL), spatial (WORLD) and hybrid (LOCAL_WORLD_ALIGNED, classical acceleration)
    twists and accelerations of a frame behind the spherical and free joints; mixed = hybrid's
    linear part with the body's angular part."""
    pin = pytest.importorskip("pinocchio")
    robot, pm = pair
    pd = pm.createData()
    fid = pm.getFrameId("tool")
    Q, V, A = _batch(pm, 3, 13)
    reps = {"body": pin.LOCAL, "spatial": pin.WORLD, "hybrid": pin.LOCAL_WORLD_ALIGNED}
    for q, v, a in zip(Q, V, A):
        pin.forwardKinematics(pm, pd, q, v, a)
        pin.updateFramePlacements(pm, pd)
        got = {}
        for rep, rf in reps.items():
            vel = pin.getFrameVelocity(pm, pd, fid, rf).vector
            acc = (pin.getFrameClassicalAcceleration if rf == pin.LOCAL_WORLD_ALIGNED
                   else pin.getFrameAcceleration)(pm, pd, fid, rf).vector
            got[rep] = (robot.frame_velocity(q, v, "tool", rep),
                        robot.frame_acceleration(q, v, a, "tool", rep))
            assert rel_err(got[rep][0], vel) <= TOL
            assert rel_err(got[rep][1], acc) <= TOL
        mixed = robot.frame_velocity(q, v, "tool", "mixed")
        assert rel_err(mixed, np.r_[got["hybrid"][0][:3], got["body"][0][3:]]) <= TOL
    batch = robot.frame_acceleration(Q, V, A, "tool", "hybrid")
    assert batch.shape == (3, 6)
    assert np.array_equal(batch[2], robot.frame_acceleration(Q[2], V[2], A[2], "tool",
                                                             "hybrid"))


def test_a_robot_serves_one_thread_at_a_time(pair):
    """As Robot: another thread holding the workspace makes a call raise RuntimeError (never a
    wrong number); copy() gives an independent robot."""
    import threading
    robot, pm = pair
    q = robot.neutral()
    held, done = threading.Event(), threading.Event()

    def hold():
        with robot.data:
            held.set()
            done.wait(10)

    t = threading.Thread(target=hold)
    t.start()
    try:
        assert held.wait(10)
        with pytest.raises(RuntimeError, match="in use by another thread"):
            robot.mass_matrix(q + 0.0)
        assert robot.copy().mass_matrix(q).shape == (11, 11)
    finally:
        done.set()
        t.join()


def test_forward_dynamics_derivatives_against_pinocchio(pair):
    """(∂q̈/∂q, ∂q̈/∂v, M⁻¹) against pin.computeABADerivatives (itself checked here against
    central differences of pin.aba along pin.integrate); a batch row by row; f_ext refused."""
    pin = pytest.importorskip("pinocchio")
    robot, pm = pair
    pd = pm.createData()
    Q, V, T = _batch(pm, 3, 17)
    I = np.eye(pm.nv)
    res = robot.forward_dynamics_derivatives(Q, V, T)
    for i, (q, v, tau) in enumerate(zip(Q, V, T)):
        da_dq, da_dv, Minv = (np.array(x) for x in pin.computeABADerivatives(pm, pd, q, v, tau))
        Minv = np.triu(Minv) + np.triu(Minv, 1).T
        h = 1e-6
        fd = np.array([pin.aba(pm, pd, pin.integrate(pm, q, h * I[j]), v, tau)
                       - pin.aba(pm, pd, pin.integrate(pm, q, -h * I[j]), v, tau)
                       for j in range(pm.nv)]).T / (2 * h)
        assert rel_err(fd, da_dq) <= 1e-6
        got = robot.forward_dynamics_derivatives(q, v, tau)
        for g, p in zip(got, (da_dq, da_dv, Minv)):
            assert rel_err(g, p) <= 1e-12
        for k in range(3):
            assert np.array_equal(res[k][i], got[k])
    with pytest.raises(NotImplementedError, match="f_ext .*joint 's'"):
        robot.forward_dynamics_derivatives(Q[0], V[0], T[0], f_ext={"F": np.ones(6)})
