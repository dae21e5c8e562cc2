"""Robot.eom_derivatives for a floating base (the pair form (q, vs)): M, C̄, Q_grav and their first
two time derivatives in the free-flyer tangent-space convention (issue 28).

Oracles: Pinocchio's ``crba``, ``computeCoriolisMatrix``, ``computeGeneralizedGravity`` (1e-12),
Ṁ = C̄ + C̄ᵀ from Pinocchio's C̄ and ġ = ∂g/∂q·v from ``computeGeneralizedGravityDerivatives``
(1e-12 relative); eighth-order central differences of the package's own compiled
``mass_matrix``, ``coriolis_matrix``, ``gravity_torques`` and of Pinocchio's along an analytic base
+ joint trajectory, C(t) = C₀ exp(X₁ s₁(t)) exp(X₂ s₂(t)), whose body twist and its derivatives
are known in closed form (test_floating_base.Motion): first derivatives to 1e-10, second to
1e-8, relative (measured: ≤ 5.6e-13 and ≤ 8.5e-10 on solo12, Talos' legs, a random tree).
"""
from pathlib import Path

import numpy as np
import pytest

import mbs_dynamics as mbs
from test_floating_base import Motion, _pair, _pinq

D1 = np.array([1 / 280, -4 / 105, 1 / 5, -4 / 5, 0.0, 4 / 5, -1 / 5, 4 / 105, -1 / 280])
D2 = np.array([-1 / 560, 8 / 315, -1 / 5, 8 / 5, -205 / 72, 8 / 5, -1 / 5, 8 / 315, -1 / 560])
ARM7 = Path(mbs.__file__).parent / "data" / "robots" / "arm7.urdf"


def _rel(a, b):
    return np.abs(np.asarray(a) - b).max() / max(1.0, np.abs(b).max())


@pytest.mark.parametrize("name", ["solo12", "talos_legs", "random5"])
def test_floating_base_against_pinocchio_and_differences(name):
    pin = pytest.importorskip("pinocchio")
    if name == "talos_legs":
        robot, pm = _talos_legs()
    else:
        robot, pm = _pair(name)
    pd = pm.createData()
    motion = Motion(robot.n, seed=5)
    t0, h = 0.41, 2e-3
    q, vs = motion.q(t0), motion.v(t0, 2)
    Ms, Cs, gs = robot.eom_derivatives((q, vs))
    assert Ms.shape == Cs.shape == (3, robot.nv, robot.nv) and gs.shape == (3, robot.nv)
    pq = _pinq(pm, q)
    C = pin.computeCoriolisMatrix(pm, pd, pq, vs[0]).copy()
    M = pin.crba(pm, pd, pq)
    M = np.triu(M) + np.triu(M, 1).T
    assert _rel(Ms[0], M) <= 1e-12
    assert _rel(Cs[0], C) <= 1e-12
    assert _rel(gs[0], pin.computeGeneralizedGravity(pm, pd, pq)) <= 1e-12
    assert _rel(Ms[1], C + C.T) <= 1e-12
    dg = pin.computeGeneralizedGravityDerivatives(pm, pd, pq)
    assert _rel(gs[1], dg @ vs[0]) <= 1e-12
    # 8th-order differences along the trajectory, of ours (compiled kernels) and of Pinocchio's
    samples = [(motion.q(t0 + j * h), motion.v(t0 + j * h, 0)[0]) for j in range(-4, 5)]

    def pin_M(x):
        A = pin.crba(pm, pd, _pinq(pm, x[0]))
        return np.triu(A) + np.triu(A, 1).T
    funcs = {
        "M": (lambda x: robot.mass_matrix(x[0]), pin_M),
        "C": (lambda x: robot.coriolis_matrix(x[0], x[1]),
              lambda x: pin.computeCoriolisMatrix(pm, pd, _pinq(pm, x[0]), x[1]).copy()),
        "g": (lambda x: robot.gravity_torques(x[0]),
              lambda x: pin.computeGeneralizedGravity(pm, pd, _pinq(pm, x[0])).copy()),
    }
    for key, ours in (("M", Ms), ("C", Cs), ("g", gs)):
        for f in funcs[key]:
            vals = np.array([f(x) for x in samples])
            d1 = np.tensordot(D1, vals, axes=1) / h
            d2 = np.tensordot(D2, vals, axes=1) / h ** 2
            assert _rel(ours[1], d1) <= 1e-10, (name, key, _rel(ours[1], d1))
            assert _rel(ours[2], d2) <= 1e-8, (name, key, _rel(ours[2], d2))
    # Ṁ − 2C̄ skew, and its derivative: M̈ = Ċ̄ + Ċ̄ᵀ
    for r in range(2):
        assert _rel(Ms[r + 1], Cs[r] + Cs[r].T) <= 1e-13


def _talos_legs():
    """Talos (example-robot-data) with its arms, head and torso locked: a 12-joint biped."""
    pin = pytest.importorskip("pinocchio")
    from conftest import erd_path
    path = erd_path("talos_data/robots/talos_reduced.urdf")
    full = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer())
    keep = [n for n in full.names[2:] if n.startswith(("leg_left", "leg_right"))]
    locked = {n: 0.0 for n in full.names[2:] if n not in keep}
    robot = mbs.load_urdf(path, floating_base=True, locked_joints=locked)
    pm = pin.buildReducedModel(full, [full.getJointId(n) for n in locked], pin.neutral(full))
    assert list(robot.joint_names) == list(pm.names[2:]) == keep
    return robot, pm


def test_fixed_base_pair_form_equals_the_closed_form():
    robot = mbs.load_urdf(str(ARM7))
    qs = np.random.default_rng(2).uniform(-1.5, 1.5, (4, robot.n))
    for a, b in zip(robot.eom_derivatives((qs[0], qs[1:])), robot.eom_derivatives(qs)):
        assert _rel(a, b) <= 1e-13


def test_floating_batches_and_bad_input():
    robot, _ = _pair("random5")
    motion = Motion(robot.n, seed=2)
    qb = np.array([motion.q(t) for t in (0.1, 0.5, 0.9)])
    vb = np.array([motion.v(t, 1) for t in (0.1, 0.5, 0.9)])
    Ms, Cs, gs = robot.eom_derivatives((qb, vb))
    assert Ms.shape == (3, 2, robot.nv, robot.nv) and gs.shape == (3, 2, robot.nv)
    for i in range(3):
        for a, b in zip((Ms[i], Cs[i], gs[i]), robot.eom_derivatives((qb[i], vb[i]))):
            np.testing.assert_array_equal(a, b)
    assert robot.eom_derivatives((qb[0], vb[0, :1]))[0].shape == (1, robot.nv, robot.nv)
    with pytest.raises(ValueError, match="vs"):
        robot.eom_derivatives((qb[0], np.zeros((4, robot.nv))))
    with pytest.raises(ValueError, match="quaternion"):
        robot.eom_derivatives((np.r_[qb[0, :3], 2.0, 0, 0, 0, qb[0, 7:]], vb[0]))
    with pytest.raises(ValueError):
        robot.eom_derivatives((qb[0], np.full((2, robot.nv), np.nan)))
    with pytest.raises(ValueError, match=r"\(q, vs\)"):
        robot.eom_derivatives(np.zeros((3, robot.n)))
