"""The ROS nodes' cores on a closed-loop robot with a passive free joint (issue 31): a 6-UPS
Stewart platform in standard URDF (the platform on a ``floating`` joint from the base, legs of
revolute and prismatic joints, closed by ``connect`` loops), as a motion simulator's driver
would give it to the feedforward node: ``load_robot``, ``rest_positions``, the feedforward
controller, the trajectory enricher and the proxy's hold — all in the six actuated legs.

Oracle: Pinocchio's ``constraintDynamics`` on the same mechanism built by hand with
``JointModelFreeFlyer`` and CONTACT_3D constraints (``PinMech`` of test/loops/test_loops_lie.py):
the published τ_a applied at the legs gives the trajectory's q̈_a (at rest: the platform stays
at rest); τ′ and τ″ against central differences of the controller's own τ along its trajectory.
"""
from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
import yaml

import mbs_dynamics as mbs
import loops_mechanisms as lm
from mbs_dynamics.control.controller import FeedforwardController
from mbs_dynamics.control.enrich import TrajectoryEnricher
from mbs_dynamics.ros import proxy_logic
from mbs_dynamics.ros.parameters import check_config, load_robot, rest_positions

try:
    import pinocchio as pin
except ImportError:  # skip per test, not per module (launch_testing)
    pin = None

needs_pin = pytest.mark.skipif(pin is None, reason="pinocchio is not installed")

D1 = np.array([1 / 280, -4 / 105, 1 / 5, -4 / 5, 0, 4 / 5, -1 / 5, 4 / 105, -1 / 280])
D2 = np.array([-1 / 560, 8 / 315, -1 / 5, 8 / 5, -205 / 72, 8 / 5, -1 / 5, 8 / 315, -1 / 560])


def rel(a, b):
    return np.abs(np.asarray(a) - b).max() / max(1.0, np.abs(b).max())


def stewart():
    """(urdf, loops YAML text, actuated legs, structured description for PinMech)."""
    name, links, joints, loops, act = lm.stewart()
    plain = json.loads(json.dumps(loops, default=float))   # the leg anchors: NumPy floats
    return lm.lie_urdf(name, links, joints), yaml.safe_dump({"loops": plain}), act, \
        (links, joints, loops)


def robot_and_oracle():
    from test_loops_lie import PinMech
    urdf, text, act, desc = stewart()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", mbs.URDFWarning)
        robot, note = load_robot(urdf, check_config({"loops": text, "actuated": act}))
    assert note == ""
    return robot, PinMech(desc, robot.full_joint_names)


def constrained_accel(robot, P, q_a, qd_a, tau_a):
    """Pinocchio's q̈ (full, nv_full) of the mechanism at the assembly of (q_a, q̇_a) with the
    actuated torques τ_a and nothing on the passive joints."""
    q, (v, _) = robot.expand(np.stack([q_a, qd_a, np.zeros_like(q_a)]))
    assert P.closure(q) < 1e-10
    tau = np.zeros(robot.nv_full)
    tau[robot.actuated_index] = tau_a
    return P.ddq(q, v, tau)


@needs_pin
def test_load_robot_takes_a_passive_free_joint_and_rests_on_the_assembly():
    robot, P = robot_and_oracle()
    assert type(robot).__name__ == "LieClosedLoopRobot"
    assert robot.joint_names == tuple(f"leg{i}" for i in range(6))
    q0 = rest_positions(robot)
    assert q0.shape == (6,) and np.all(np.isfinite(q0))
    qf = robot.expand(q0)
    assert P.closure(qf) < 1e-12
    # the legs' q columns (the free joint's quaternion shifts them from the v columns)
    assert np.array_equal(qf[robot.actuated_q_index], q0)
    assert not np.array_equal(robot.actuated_q_index, robot.actuated_index)
    # without the loops the free joint is a coordinate of an open tree: refused by name
    urdf, *_ = stewart()
    with pytest.raises(ValueError, match="joint 'free' is of type 'floating'.*open tree"):
        load_robot(urdf, check_config({}))


@needs_pin
def test_controller_holds_and_follows_a_trajectory_of_the_legs():
    robot, P = robot_and_oracle()
    names = list(robot.joint_names)
    order = names[::-1]
    perm = [names.index(j) for j in order]
    ctl = FeedforwardController(robot, joints=order, joint_state_timeout=0.0)
    q0 = rest_positions(robot) + np.array([0.02, -0.01, 0.015, 0.0, -0.02, 0.01])
    # hold at the measured legs: τ = g_a, which keeps Pinocchio's platform at rest
    assert ctl.set_joint_state(order, q0[perm], stamp=0.0)
    out = ctl.update(0.01)
    assert out.mode == "hold"
    tau = np.empty(6)
    tau[perm] = out.tau
    a = constrained_accel(robot, P, q0, np.zeros(6), tau)
    assert np.abs(a).max() < 1e-8
    assert np.abs(constrained_accel(robot, P, q0, np.zeros(6), 0.0 * tau)).max() > 0.1

    # an analytic motion of the legs, sent as waypoints with velocities and accelerations
    rng = np.random.default_rng(7)
    A, w, ph = 0.03 * rng.uniform(0.5, 1, 6), rng.uniform(1, 3, 6), rng.uniform(0, 6, 6)

    def jet(t):
        s, c = np.sin(w * t + ph), np.cos(w * t + ph)
        return np.stack([q0 + A * (s - np.sin(ph)), A * w * c, -A * w * w * s])

    T = np.linspace(0.0, 2.0, 41)
    J = np.array([jet(t) for t in T])
    msg = {"joint_names": order,
           "points": [{"time_from_start": float(t), "positions": J[k, 0, perm].tolist(),
                       "velocities": J[k, 1, perm].tolist(),
                       "accelerations": J[k, 2, perm].tolist()} for k, t in enumerate(T)]}
    assert ctl.set_trajectory(msg, now=0.0)
    spline = ctl._active.traj

    def tau_at(t):
        """τ, τ′, τ″ at t in model order (copied: the controller reuses its Output)."""
        o = ctl.update(t)
        assert o.mode == "trajectory"
        res = np.empty((3, 6))
        res[:, perm] = o.tau, o.tau_dot, o.tau_ddot
        return res

    t, h = 0.925, 1e-3   # the stencil inside one spline piece (knots every 0.05 s)
    runs = np.array([tau_at(t + k * h) for k in range(-4, 5)])   # forward, as a clock runs
    taus = runs[:, 0]
    tau, d1, d2 = runs[4]
    s = spline.sample(t)            # rows q, q', q'' in ctl.joints order
    qa, qda, qdda = (np.empty(6) for _ in range(3))
    qa[perm], qda[perm], qdda[perm] = s[0], s[1], s[2]
    a = constrained_accel(robot, P, qa, qda, tau)
    assert rel(a[robot.actuated_index], qdda) < 1e-8
    fd1 = D1 @ taus / h       # 8th-order central differences
    fd2 = D2 @ taus / h ** 2
    assert rel(d1, fd1) < 1e-7
    assert rel(d2, fd2) < 1e-4


@needs_pin
def test_enricher_and_hold_point_on_the_legs():
    robot, P = robot_and_oracle()
    q0 = rest_positions(robot)
    enr = TrajectoryEnricher(robot, output="effort", sample_period=0.05)
    goal = {"joint_names": list(robot.joint_names),
            "points": [{"time_from_start": 0.5, "positions": (q0 + 0.01).tolist()},
                       {"time_from_start": 1.5, "positions": (q0 - 0.02).tolist()}]}
    e = enr.enrich(goal)
    for k in (0, 9, len(e) - 1):
        a = constrained_accel(robot, P, e.positions[k], e.velocities[k], e.effort[k])
        assert rel(a[robot.actuated_index], e.accelerations[k]) < 1e-8
    hold = proxy_logic.hold_point(robot, list(robot.joint_names), q0 + 0.01)
    a = constrained_accel(robot, P, q0 + 0.01, np.zeros(6), np.asarray(hold["effort"]))
    assert np.abs(a).max() < 1e-8
