"""Identification as map-reduce (issue 30): chunks of logs → sufficient statistics → one solve.

Oracles: torques simulated by Pinocchio (identification_sim.py); the normal equations of the
dense stacked base regressor Y F (formed here with NumPy from ``robot.regressor``); a whole log
filtered in one piece by scipy; :func:`identify` on the same data for the map-reduce result.
"""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import mbs_dynamics as mbs
from mbs_dynamics import data
from mbs_dynamics.identification import chunked, estimate, filtering, identify, logs, mapreduce
from mbs_dynamics.identification.pipeline import Unknowns, solve_statistics

from identification_sim import fourier, perturbed_model, pin, simulate

_NO_SCIPY = importlib.util.find_spec("scipy") is None
pytestmark = [pytest.mark.skipif(pin is None, reason="pinocchio is not installed"),
              pytest.mark.skipif(_NO_SCIPY, reason="scipy is not installed")]

RATE = 500.0
SIGMA = np.array([0.08, 0.2, 0.1, 0.1, 0.04, 0.03, 0.02])


@pytest.fixture(scope="module")
def arm7_log():
    path = data.robot("arm7")
    robot = mbs.load_urdf(path)
    rng = np.random.default_rng(21)
    model = perturbed_model(path.read_text(), rng)
    t = np.arange(0.0, 30.0, 1.0 / RATE)
    q, qd, qdd = fourier(t, 7, rng)
    tau = simulate(model, t, q, qd, qdd, rng.uniform(0.05, 0.5, 7), rng.uniform(0.05, 0.4, 7),
                   SIGMA, rng)
    return robot, logs.JointLog(t, robot.joint_names, q, tau, None, None, "sim")


def test_accumulator_equals_the_dense_normal_equations(arm7_log):
    robot, log = arm7_log
    unk = Unknowns(robot)
    rng = np.random.default_rng(0)
    q, qd, qdd = (rng.normal(size=(700, 7)) for _ in range(3))
    tau = rng.normal(size=(700, 7))
    neq = estimate.accumulate(robot, unk.F, q, qd, qdd, tau, names=unk.names, chunk=256)
    Yb = np.concatenate([robot.regressor(q, qd, qdd) @ unk.F, estimate.friction_columns(qd)], 2)
    for j in range(7):
        A = Yb[:, j].T @ Yb[:, j]
        np.testing.assert_allclose(neq.A[j], A, rtol=1e-12, atol=1e-12 * np.abs(A).max())
        np.testing.assert_allclose(neq.b[j], Yb[:, j].T @ tau[:, j], rtol=1e-12,
                                   atol=1e-12 * np.abs(A).max())
    np.testing.assert_allclose(neq.c, (tau ** 2).sum(0), rtol=1e-14)
    assert neq.N == 700


def test_chunked_filter_equals_the_whole_log_filtered_at_once(arm7_log):
    _, log = arm7_log
    whole = filtering.filter_states(log, rows=10 ** 9)
    assert whole.pieces == [(0, whole.q.shape[0])]
    cut = filtering.filter_states(log, rows=2000)
    assert len(cut.pieces) > 4 and cut.rows == whole.rows
    for k in ("q", "qd", "qdd"):
        a, b = getattr(whole, k), getattr(cut, k)
        # the overlap removes the transients; what is left is the rounding of the recursion,
        # amplified by the differences (1/Δt² for q̈)
        assert np.abs(a - b).max() <= {"q": 1e-13, "qd": 1e-11, "qdd": 1e-8}[k] * \
            np.abs(a).max(), k


def _write(log, tmp_path, kind):
    """The log as a CSV file or a rosbag2 ("mcap", "sqlite3") in tmp_path."""
    if kind == "csv":
        logs.write_csv(tmp_path / "log.csv", log)
        return tmp_path / "log.csv"
    pytest.importorskip("rosbags")
    logs.write_rosbag(tmp_path / "bag", log, storage=kind)
    return tmp_path / "bag"


def _values(sol):
    return np.array([v["value"] for v in sol.base_parameters.values()] +
                    [f[k] for f in sol.friction_sigma.values() for k in ("viscous", "coulomb")])


@pytest.mark.parametrize("kind", ["csv", "mcap"])
def test_map_reduce_equals_identify(arm7_log, tmp_path, kind):
    robot, log = arm7_log
    path = _write(log, tmp_path, kind)
    res = identify(robot, path, chunk_rows=3000)
    stats, unk = mapreduce.statistics(robot, [path], rows=3000)
    (neq, t0, t1), = stats.values()
    assert neq.N == res.report["samples_used"]
    sol = solve_statistics(robot, unk, neq)
    a = np.array([v["value"] for v in res.base_parameters.values()])
    b = np.array([v["value"] for v in sol.base_parameters.values()])
    np.testing.assert_allclose(b, a, rtol=1e-10, atol=0)
    np.testing.assert_allclose(sol.inertial_parameters, res.inertial_parameters, rtol=1e-10,
                               atol=1e-12)
    # and the statistics are those of the whole log: a single chunk agrees to rounding
    one, _ = mapreduce.statistics(robot, [path], rows=10 ** 9)
    sol1 = solve_statistics(robot, unk, one[0][0])
    sig = np.array([v["sigma"] for v in sol.base_parameters.values()])
    assert np.all(np.abs(_values(sol1)[:b.size] - b) < 1e-6 * sig)


@pytest.mark.parametrize("kind", ["csv", "mcap", "sqlite3"])
def test_chunks_are_slices_of_the_log(arm7_log, tmp_path, kind):
    """Rows read by chunked.read_rows equal the whole log read by logs.read_log (rosbags'
    deserializer for bags; the chunk reader decodes the CDR bytes itself)."""
    robot, log = arm7_log
    path = _write(log, tmp_path, kind)
    index = chunked.scan(path, robot.joint_names)
    assert index.rows == log.n_samples
    whole = logs.read_log(path, robot.joint_names)
    for a, b in ((0, 10), (1020, 1040), (5000, 15000), (14000, log.n_samples)):
        part = chunked.read_rows(index, a, b)
        np.testing.assert_array_equal(part.time, whole.time[a:b])
        np.testing.assert_array_equal(part.position, whole.position[a:b])
        np.testing.assert_array_equal(part.effort, whole.effort[a:b])


def test_a_bad_row_is_named(arm7_log, tmp_path):
    robot, log = arm7_log
    path = tmp_path / "bad.csv"
    logs.write_csv(path, log.select(slice(0, 3000)))
    lines = path.read_text().splitlines()
    lines[2001] = lines[2001].replace(",", ",oops", 1)
    path.write_text("\n".join(lines) + "\n")
    index = chunked.scan(path, robot.joint_names)
    with pytest.raises(logs.LogError, match=r"bad\.csv: row 2002: .*'oops"):
        chunked.read_rows(index, 1500, 2500)
    with pytest.raises(logs.LogError, match="missing"):
        chunked.scan(path, ("a", "b"))


# ---------------------------------------------------------------- consistent, with a margin
def test_divergence_residuals_are_the_log_det_divergence():
    """Σ r² of the relative log-Cholesky residuals equals tr(J̄⁻¹J) − log det(J̄⁻¹J) − 4
    computed directly (numpy slogdet), and their derivative equals finite differences."""
    from mbs_dynamics.identification import consistent as C
    robot = mbs.load_urdf(data.robot("arm7"))
    prior = robot.inertial_parameters()
    _, Ubar = C._factor(C.theta_of_pi(prior, floor=2 * C.MARGIN))
    rng = np.random.default_rng(4)
    th = rng.normal(scale=0.3, size=(prior.shape[0], 10))
    th[0, :4] = [0.0, 1e-6, -2e-5, 0.5]  # across the series branch
    r, dr = C._divergence_residuals(th)
    pi = C.pi_of_theta(th, Ubar)
    pi_bar = C.pi_of_theta(np.zeros_like(th), Ubar)
    np.testing.assert_allclose((r ** 2).sum(1), C.divergence(pi, pi_bar), rtol=1e-9,
                               atol=1e-13)
    h = 1e-6
    for c in range(4):
        tp, tm = th.copy(), th.copy()
        tp[:, c] += h
        tm[:, c] -= h
        fd = (C._divergence_residuals(tp)[0][:, c] - C._divergence_residuals(tm)[0][:, c]) / 2 / h
        np.testing.assert_allclose(dr[:, c], fd, rtol=1e-6, atol=1e-8)


def test_consistent_estimate_keeps_the_prior_and_a_margin():
    """Without information the prior is returned; an estimate pushed outside the physical bodies
    comes back with every pseudo-inertia's smallest eigenvalue ≥ 1e-6 of its largest."""
    from mbs_dynamics.identification import consistent as C
    robot = mbs.load_urdf(data.robot("arm7"))
    unk = Unknowns(robot, friction=False)
    prior = unk.prior
    pi, _, _ = C.consistent_estimate(unk.T, unk.T @ prior.ravel(), np.zeros((unk.p,) * 2),
                                     prior)
    np.testing.assert_allclose(pi, prior, rtol=1e-9, atol=1e-12)
    bad = prior.copy()
    bad[:, 4:] *= -0.5  # negative inertias: not a body
    bad[:, 0] *= 0.2
    info = np.eye(unk.p) * 1e6
    pi, _, _ = C.consistent_estimate(unk.T, unk.T @ bad.ravel(), info, prior)
    assert np.all(C.margin(pi) >= C.MARGIN * (1 - 1e-9)), C.margin(pi)
    robot.with_inertial_parameters(pi)  # this package's checks


def test_identified_urdf_loads_in_pinocchio_with_a_margin(arm7_log, tmp_path):
    robot, log = arm7_log
    res = identify(robot, log, urdf=data.robot("arm7"))
    assert res.report["prior"]["smallest_eigenvalue_ratio"] >= 1e-6
    res.write(tmp_path / "out")
    model = pin.buildModelFromUrdf(str(tmp_path / "out.urdf"))
    assert model.check(model.createData())
    for inertia in model.inertias[1:]:
        lam = np.linalg.eigvalsh(inertia.toPseudoInertia().toMatrix())
        assert lam[0] >= 1e-6 * (1 - 1e-6) * lam[-1]
    mbs.load_urdf(tmp_path / "out.urdf")
