"""Seed 003's examples (examples/seed003): the heavy top of §5.1 and the floating bodies of §5.3,
against independent SciPy references and the paper's findings."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EX = os.path.join(ROOT, "examples", "seed003")


@pytest.fixture(scope="module")
def ex():
    sys.path.insert(0, EX)
    try:
        import floating_bodies
        import heavy_top
        yield heavy_top, floating_bodies
    finally:
        sys.path.remove(EX)


def test_heavy_top_data_match_the_paper(ex):
    """Θ₀ = diag(0.36, 0.306, 0.09) kg m² and the paper's initial kinetic energy T₀ = 13.97 kJ
    (which fixes r₀ = (0.5, 0, 0) m), in both velocity representations."""
    ht, _ = ex
    assert np.allclose(np.diag(ht.THETA0), [0.36, 0.306, 0.09], rtol=0, atol=1e-12)
    for group in ("se3", "so3r3"):
        mbs = ht.model()
        R0, p0, y0 = ht.initial(group, mbs)
        assert abs(mbs.energy(group, R0, p0, y0) - 13.97e3) < 5.0
        assert mbs.joint_violation(R0, p0)[0] == 0.0


def test_heavy_top_pivot_drift_se3_far_below_so3r3(ex):
    """The paper's §5.1 finding: on SE(3) the pivot does not drift (round-off only), on SO(3)×R³
    it drifts at the order of the scheme."""
    ht, _ = ex
    cps = np.array([0.2])
    d_se3 = ht.run("rkmk4-se3", 2e-3, 0.2, cps)[0][0]
    d_so3 = ht.run("rkmk4-so3r3", 2e-3, 0.2, cps)[0][0]
    assert d_se3 < 1e-13
    assert d_so3 > 1e-8
    assert d_so3 > 1e4 * d_se3
    # also for the 2nd-order schemes
    assert ht.run("rkmk2-se3", 2e-3, 0.1, cps / 2)[0][0] < 1e-13
    assert ht.run("rkmk2-so3r3", 2e-3, 0.1, cps / 2)[0][0] > 1e-6


def test_heavy_top_agrees_with_the_quaternion_reference(ex):
    ht, _ = ex
    cps = np.array([0.05, 0.1])
    Rref, pref = ht.reference(cps)
    for name in ("rkmk4-se3", "rkmk4-so3r3"):
        _, states, _, _ = ht.run(name, 1e-3, 0.1, cps)
        for (R, p, _), Rr, pr in zip(states, Rref, pref):
            assert np.abs(p - pr).max() < 1e-6
            assert np.abs(R - Rr).max() < 1e-5


def test_floating_bodies_drift_alike_on_both_groups(ex):
    """The paper's §5.3 finding: for two bodies joined to each other (not to the ground) the joint
    drifts on SE(3) too, at a level comparable with SO(3)×R³; both agree with the reference."""
    _, fb = ex
    cps = np.array([0.1, 0.2])
    ref = fb.reference(cps)
    drifts = {}
    for name in ("rkmk4-se3", "rkmk4-so3r3"):
        (drift, _), states, _, _ = fb.run(name, 4e-3, 0.2, cps)
        drifts[name] = drift
        for (R, p, _), (Rr, pr) in zip(states, ref):
            assert np.abs(p - pr).max() < 1e-6
            assert np.abs(R - Rr).max() < 1e-5
    assert drifts["rkmk4-se3"] > 1e-11 and drifts["rkmk4-so3r3"] > 1e-11
    assert 0.1 < drifts["rkmk4-se3"] / drifts["rkmk4-so3r3"] < 10.0


@pytest.mark.parametrize("script", ["heavy_top.py", "floating_bodies.py"])
def test_json_output_and_plot(script, tmp_path):
    pytest.importorskip("matplotlib")
    png = tmp_path / "plot.png"
    out = subprocess.run([sys.executable, os.path.join(EX, script), "--json", "--quick",
                          "--plot", str(png)], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout)
    assert isinstance(res["reference"], str) and res["reference"]
    for group in ("se3", "so3r3"):
        r = res[group]
        n = len(r["h"])
        assert n >= 2
        for key in ("constraint_drift", "error"):
            assert len(r[key]) == n and all(np.isfinite(r[key]))
        assert 3.0 < r["order"] < 5.5
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_double_pendulum_ground_joint_exact_on_se3_only(ex):
    """Seed 003 §5.2 (and §5.4's conclusion): in the spherical double pendulum in gravity, on
    SE(3) the ground joint stays exact (body 1's motion stays in the rotations about its pivot)
    while the joint between the bodies drifts; on SO(3)×R³ both drift. Paper's initial data:
    aligned along x, ω₁ = (10, 0, 0), ω₂ = (10π, 10π, 20π) rad/s."""
    _, fb = ex
    from rigid_mbs import SphericalMBS, cross
    from mbs_dynamics.sim.lie_integrators import INTEGRATORS
    mbs = SphericalMBS([fb.MASS, fb.MASS], [fb.THETA, fb.THETA],
                       [(0, -fb.S1, None, np.zeros(3)), (0, fb.S1, 1, fb.S2)],
                       gravity=(0.0, 0.0, -9.81))
    R = np.stack([np.eye(3), np.eye(3)])
    p = np.array([[fb.A / 2, 0, 0], [3 * fb.A / 2, 0, 0]])
    w = np.array([[10.0, 0, 0], [10 * np.pi, 10 * np.pi, 20 * np.pi]])
    pd1 = cross(w[0], p[0])
    pd = np.stack([pd1, pd1 + cross(w[0], fb.S1) - cross(w[1], fb.S2)])
    drift = {}
    for group in ("se3", "so3r3"):
        integ = INTEGRATORS[f"rkmk4-{group}"]
        y0 = mbs.initial_state(group, R, p, w, pd)
        assert np.abs(mbs.joint_violation(R, p)).max() < 1e-16
        worst = np.zeros(2)

        def observe(k, t, Rk, pk, yk):
            np.maximum(worst, mbs.joint_violation(Rk, pk), out=worst)

        integ.integrate(mbs.rhs(group), 0.0, R, p, y0, 1e-3, 200, observe=observe)
        drift[group] = worst.copy()
    assert drift["se3"][0] < 1e-13                      # ground joint: round-off only
    assert drift["se3"][1] > 1e3 * drift["se3"][0]      # joint 2 drifts
    assert drift["so3r3"][0] > 1e3 * drift["se3"][0]    # SO(3)×R³: the ground joint drifts too
    assert drift["so3r3"][1] > 1e-10
