"""A closed-loop robot answers for the configuration asked for, whatever came before (issue 27,
findings 4, 9 and 10).

Oracles: a fresh robot (no history) for the state after an absurd call; the same samples in
another order (every call must converge to the same assembly, to rounding); the closure
residual and the actuated coordinates of ``expand``.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import mbs_dynamics as mbs
import loops_mechanisms as lm


def _load(name):
    u, loops, act = lm.ALL[name]()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", mbs.URDFWarning)
        return mbs.load_urdf(u, loops=loops, actuated=act)


@pytest.mark.parametrize("bad", [1e16, 1e17, 1e200, -1e16, 1e9, 10.5, -11.0, np.nan, np.inf])
def test_absurd_or_out_of_range_input_refused_and_forgotten(bad):
    """|q| ≥ 1e16 was assembled and poisoned the next call (the torque of another crank
    angle, silently)."""
    r, fresh = _load("planar_fourbar"), _load("planar_fourbar")
    z = np.zeros(1)
    want = fresh.inverse_dynamics([0.5], z, z)
    calls = [lambda x: r.inverse_dynamics(x, z, z), lambda x: r.forward_dynamics(x, z, z),
             lambda x: r.mass_matrix(x), lambda x: r.gravity_torques(x),
             lambda x: r.expand(x), lambda x: r.expand(np.stack([x, z])),
             lambda x: r.torque_derivatives(np.stack([x, z, z]))]
    for f in calls:
        with pytest.raises(ValueError, match="j_crank" if np.isfinite(bad) else "NaN or inf"):
            f(np.array([bad]))
        np.testing.assert_array_equal(r.inverse_dynamics([0.5], z, z), want)


def test_limits_named(tmp_path):
    r = _load("planar_fourbar")
    with pytest.raises(ValueError, match=r"'j_crank' = 10.5 is outside its limits \[-10, 10\]"):
        r.gravity_torques([10.5])
    with pytest.raises(ValueError, match=r"magnitude"):
        r.gravity_torques([1e17])
    r.gravity_torques([10.0])  # the limit itself is inside


@pytest.mark.parametrize("name", ["planar_fourbar", "spatial_fourbar", "delta"])
def test_answer_independent_of_call_order(name):
    """The assembly was warm-started from the previous call and stopped at a tolerance: the
    same samples in shuffled order differed by up to 2.9e-10 (in order: 5e-14)."""
    r1, r2 = _load(name), _load(name)
    n = r1.n
    rng = np.random.default_rng(11)
    q0 = r1.q_assembled[r1.actuated_index]
    Q = q0 + rng.uniform(-0.25, 0.25, (40, n))
    V = rng.normal(size=(40, n))
    T = rng.normal(size=(40, n))
    order = rng.permutation(40)

    def run(r, idx):
        out = {}
        for i in idx:
            out[i] = (r.forward_dynamics(Q[i], V[i], T[i]), r.inverse_dynamics(Q[i], V[i], T[i]),
                      r.expand(Q[i]))
        return out

    a, b = run(r1, range(40)), run(r2, order)
    worst = 0.0
    for i in range(40):
        for x, y in zip(a[i], b[i]):
            worst = max(worst, np.abs(x - y).max() / max(1.0, np.abs(x).max()))
    assert worst <= 1e-12, worst
    # and the assembly is one: closed, with exactly the actuated coordinates asked for
    for i in range(40):
        qf = a[i][2]
        assert np.abs(r1.loop_residual(qf)).max() <= 1e-12
        np.testing.assert_array_equal(qf[r1.actuated_index], Q[i])


def test_loop_spec_errors_name_the_problem():
    u, loops, act = lm.planar_fourbar()
    bad = [dict(loops[0], type=["connect"])]
    with pytest.raises(ValueError, match=r"type must be one of .*\['connect'\]"):
        mbs.load_urdf(u, loops=bad, actuated=act)
    for actuated in (0, 1.5, [0], ["j_crank", 3], b"j_crank"):
        with pytest.raises(ValueError, match="actuated must be a joint name or a list"):
            mbs.load_urdf(u, loops=loops, actuated=actuated)
    r = mbs.load_urdf(u, loops=loops, actuated=("j_crank",))  # any sequence of names
    assert r.joint_names == ["j_crank"] or list(r.joint_names) == ["j_crank"]
