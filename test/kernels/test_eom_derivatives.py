"""Robot.eom_derivatives: M, C̄, Q_grav and their first two time derivatives (seed 004 §3–4).

Oracles: eighth-order central differences of the package's own ``mass_matrix``,
``coriolis_matrix`` and ``gravity_torques`` (compiled kernels, independent of the closed form)
along an analytic trajectory (1e-8); Pinocchio's ``computeCoriolisMatrix`` (C̄, and Ṁ = C̄ + C̄ᵀ)
and ``computeGeneralizedGravityDerivatives`` (ġ = ∂g/∂q q̇) at 1e-12.
"""
from pathlib import Path

import numpy as np
import pytest

import mbs_dynamics as mbs
from conftest import random_urdf, trajectory

ARM7 = Path(mbs.__file__).parent / "data" / "robots" / "arm7.urdf"
D1 = np.array([1 / 280, -4 / 105, 1 / 5, -4 / 5, 0.0, 4 / 5, -1 / 5, 4 / 105, -1 / 280])
D2 = np.array([-1 / 560, 8 / 315, -1 / 5, 8 / 5, -205 / 72, 8 / 5, -1 / 5, 8 / 315, -1 / 560])


def _robots():
    yield "arm7", mbs.load_urdf(str(ARM7))
    for seed in (1, 2):
        yield f"tree{seed}", mbs.load_urdf(random_urdf(seed, n_movable=6)[0])


@pytest.mark.parametrize("name,robot", list(_robots()))
def test_time_derivatives_match_differences_of_the_kernels(name, robot):
    n = robot.n
    at = trajectory(n, 11, order=4, scale=0.6)
    t0, h = 0.37, 2e-3
    Ms, Cs, gs = robot.eom_derivatives(at(t0))
    samples = [at(t0 + j * h) for j in range(-4, 5)]
    funcs = {"M": lambda x: robot.mass_matrix(x[0]),
             "C": lambda x: robot.coriolis_matrix(x[0], x[1]),
             "g": lambda x: robot.gravity_torques(x[0])}
    for key, ours in (("M", Ms), ("C", Cs), ("g", gs)):
        vals = np.array([funcs[key](x) for x in samples])
        np.testing.assert_allclose(ours[0], vals[4], rtol=0, atol=1e-12)
        d1 = np.tensordot(D1, vals, axes=1) / h
        d2 = np.tensordot(D2, vals, axes=1) / h ** 2
        scale = max(1.0, np.abs(vals).max())
        assert np.abs(ours[1] - d1).max() < 1e-8 * scale, (name, key, np.abs(ours[1] - d1).max())
        assert np.abs(ours[2] - d2).max() < 1e-8 * scale * 10, (name, key,
                                                                 np.abs(ours[2] - d2).max())
    # the skew property carried over: Ṁ = C̄ + C̄ᵀ, M̈ = Ċ̄ + Ċ̄ᵀ
    for r in range(2):
        np.testing.assert_allclose(Ms[r + 1], Cs[r] + Cs[r].T, rtol=0, atol=1e-11)


def test_against_pinocchio():
    pin = pytest.importorskip("pinocchio")
    robot = mbs.load_urdf(str(ARM7))
    pm = pin.buildModelFromUrdf(str(ARM7))
    pd = pm.createData()
    rng = np.random.default_rng(4)
    for _ in range(3):
        qs = rng.uniform(-1.5, 1.5, (4, robot.n))
        Ms, Cs, gs = robot.eom_derivatives(qs)
        C = pin.computeCoriolisMatrix(pm, pd, qs[0], qs[1]).copy()
        np.testing.assert_allclose(Cs[0], C, rtol=0, atol=1e-12)
        np.testing.assert_allclose(Ms[1], C + C.T, rtol=0, atol=1e-12)
        dg = pin.computeGeneralizedGravityDerivatives(pm, pd, qs[0])
        np.testing.assert_allclose(gs[1], dg @ qs[1], rtol=0, atol=1e-12)
        np.testing.assert_allclose(Ms[0], pin.crba(pm, pd, qs[0]).copy(), rtol=0, atol=1e-12)


def test_batches_shapes_and_bad_input():
    robot = mbs.load_urdf(str(ARM7))
    qs = np.random.default_rng(0).normal(size=(3, 4, 7))
    Ms, Cs, gs = robot.eom_derivatives(qs)
    assert Ms.shape == (3, 3, 7, 7) and gs.shape == (3, 3, 7)
    one = robot.eom_derivatives(qs[1])
    for a, b in zip((Ms[1], Cs[1], gs[1]), one):
        np.testing.assert_array_equal(a, b)
    assert robot.eom_derivatives(qs[0, :2])[0].shape == (1, 7, 7)
    with pytest.raises(ValueError, match="qs"):
        robot.eom_derivatives(np.zeros((5, 7)))
    with pytest.raises(ValueError):
        robot.eom_derivatives(np.full((3, 7), np.nan))
    fb = mbs.load_urdf(str(ARM7), floating_base=True)
    with pytest.raises(ValueError, match="fixed-base"):
        fb.eom_derivatives(np.zeros((3, 7)))
