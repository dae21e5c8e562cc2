"""Calibration on robots the other calibration tests do not use: random standard-DH arms with
prismatic joints, and random trees with planar, universal and cylindrical joints (their
massless intermediate links), measured at two frames on different branches, with a tracker
placed off the base. Hidden errors in every parameter (~2 mm / 2 mrad) and noise: estimates
within 3σ of the equivalent geometry (the noise-free fit), held-out error at the noise level,
the rest reported unidentifiable and left at 0; the calibrated robot's URDF loads to the same
poses."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import mbs_dynamics as mbs
from mbs_dynamics.calibration import GeometricParameters, Measurements, calibrate
from mbs_dynamics.kernels import lie

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "model"))

SIGMA = 5e-5  # [m]
LINK = dict(mass=1.5, com=(0.02, 0.01, 0.03), inertia=np.diag([0.02, 0.03, 0.025]))


def _dh_arm(seed):
    """A 6-joint standard-DH arm (two prismatic joints), a tool and a second target."""
    rng = np.random.default_rng(seed)
    table = np.c_[rng.uniform(0.05, 0.4, 6), rng.choice([-np.pi / 2, np.pi / 2, 0.3], 6),
                  rng.uniform(0.05, 0.3, 6), rng.uniform(-1, 1, 6)]
    types = ["revolute", "prismatic", "revolute", "revolute", "prismatic", "revolute"]
    tool, target = np.eye(4), np.eye(4)
    tool[:3, 3] = (0.03, -0.02, 0.1)
    target[:3, 3] = (0.1, 0.05, 0.0)
    robot = mbs.from_dh(table, "standard", inertials=[LINK] * 6, joint_types=types,
                        frames={"tool": ("link6", tool), "target": ("link4", target)})
    return robot, ("tool", "target"), True


def _composite_tree(seed):
    """A random tree of revolute, prismatic, planar, universal and cylindrical joints; the two
    deepest links of different branches measured (their own frames: no frame parameters)."""
    from test_joint_types_sweep import random_tree, tree_urdf
    kinds = ("revolute", "prismatic", "planar", "universal", "cylindrical", "fixed")
    spec = random_tree(seed, 7, kinds, "universal")
    robot = mbs.load_urdf(tree_urdf(spec))
    leaves = [j["child"] for j in spec["joints"] if j["kind"] != "fixed"
              and not any(k["parent"] == j["child"] for k in spec["joints"])]
    return robot, tuple(leaves[-2:]), False


def _measure(robot, gp, frames, truth, q, rng, noise=True):
    out = []
    for f in frames:
        P = gp.poses(truth, q, f)[:, :3, 3]
        if noise:
            P = P + SIGMA * rng.normal(size=P.shape)
        out.append(Measurements(q, f, positions=P, sigma_position=SIGMA))
    return out


@pytest.mark.parametrize("make, seed", [(_dh_arm, 1), (_dh_arm, 2), (_composite_tree, 3),
                                        (_composite_tree, 4)])
def test_calibration_of_unseen_robots(make, seed):
    pytest.importorskip("scipy")
    robot, frames, frame_params = make(seed)
    rng = np.random.default_rng(seed + 50)
    W = np.eye(4)
    W[:3, :3] = lie.so3_exp(np.array([0.1, -0.2, 0.3]))
    W[:3, 3] = (1.0, -0.5, 0.3)
    gp = GeometricParameters(robot.model, frames, base_pose=W, frame_params=frame_params)
    truth = 2e-3 * rng.normal(size=gp.size)
    q = rng.uniform(-1.5, 1.5, (90, robot.n))
    m = _measure(robot, gp, frames, truth, q, rng)
    calibrated, rep = calibrate(robot, m, base_pose=W, frame_params=frame_params)
    assert rep.converged
    b = [gp.names.index(nm) for nm in rep.identifiable]
    d = [gp.names.index(nm) for nm in rep.unidentifiable]
    assert sorted(b + d) == list(range(gp.size)) and len(d) > 0
    assert np.all(rep.pi[d] == 0)
    _, ref = calibrate(robot, _measure(robot, gp, frames, truth, q, rng, noise=False),
                       base_pose=W, frame_params=frame_params)
    assert ref.identifiable == rep.identifiable
    # exact (1e-16) on the arms; on trees with non-orthogonal universal joints the identifiable
    # parameters reach the true geometry only to second order in the hidden errors (3.8e-6 m
    # at 2 mm / 2 mrad): the unidentifiable ones, each alone, are absorbed exactly
    assert ref.rms_after["position"] <= (1e-12 if make is _dh_arm else 0.3 * SIGMA)
    z = (rep.estimates - ref.estimates) / rep.sigma
    assert np.abs(z).max() <= 3.5, dict(zip(rep.identifiable, np.round(z, 2)))
    assert 0.5 < rep.chi2_dof < 1.6
    # held out: the calibrated robot's URDF, loaded again, against the true geometry
    again = mbs.load_urdf(calibrated.to_urdf())
    qh = rng.uniform(-1.5, 1.5, (40, robot.n))
    for f in frames:
        T_true = gp.poses(truth, qh, f)[:, :3, 3]
        T_cal = np.array([(rep.base_pose @ again.frame_placement(x, f))[:3, 3] for x in qh])
        err = np.linalg.norm(T_cal - T_true, axis=1)
        assert np.sqrt(np.mean(err ** 2)) <= np.sqrt(3) * SIGMA, f
        err0 = np.linalg.norm(gp.poses(None, qh, f)[:, :3, 3] - T_true, axis=1)
        assert np.sqrt(np.mean(err0 ** 2)) > 20 * SIGMA, f
