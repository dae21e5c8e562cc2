"""Smoke test of the side-by-side benchmark (issue 3): tiny repeat counts, no timing assertions."""
from __future__ import annotations

import json
import math
import shlex

import numpy as np
import pytest

pin = pytest.importorskip("pinocchio")

from mbs_dynamics import benchmark  # noqa: E402


def _finite_ratios(obj):
    """All ``ratio`` medians/mins/maxes in the JSON results."""
    out = []
    if isinstance(obj, dict):
        if "ratio" in obj and isinstance(obj["ratio"], dict):
            out += [obj["ratio"]["median"], obj["ratio"]["min"], obj["ratio"]["max"]]
        for v in obj.values():
            out += _finite_ratios(v)
    elif isinstance(obj, list):
        for v in obj:
            out += _finite_ratios(v)
    return out


def test_benchmark_smoke(tmp_path):
    argv = ["--out-dir", str(tmp_path), "--robots", "panda,chain", "--chain-n", "4",
            "--repeat", "2", "--target-time", "1e-4", "--batch", "6", "--batch-repeat", "1",
            "--scaling", "2,3", "--skip-startup", "--blas-threads", "0",
            "--json", str(tmp_path / "results.json")]
    assert benchmark.main(argv) == 0
    readme = (tmp_path / "README.md").read_text()
    for heading in ("## Machine", "## Targets of issue 3", "### Panda (n = 7", "### chain4 (n = 4",
                    "## Batch path", "## Scaling", "## Where the time goes"):
        assert heading in readme, heading
    assert "python3 bench/run_benchmark.py" in readme
    png = (tmp_path / "scaling.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 1000
    res = json.loads((tmp_path / "results.json").read_text())
    ratios = _finite_ratios(res)
    # 11 single rows for the Panda (with MuJoCo and forward dynamics), batch rows for both robots
    assert len(ratios) >= 3 * 20
    assert all(math.isfinite(r) and r > 0 for r in ratios)
    # both sides compute the same thing (the agreement column), FD τ″ to its truncation error
    for name, rows in res["single"].items():
        for row in rows:
            d = row["max_abs_diff"]
            if d is None or (isinstance(d, float) and math.isnan(d)):
                continue
            tol = 1e-4 if "FD" in row["anchor"] or "MuJoCo" in row["what"] else 1e-8
            assert d < tol, (name, row["what"], d)


def test_command_line_reproduces_the_arguments():
    parser = benchmark.get_argument_parser()
    args = parser.parse_args(["--repeat", "3", "--robots", "ur5,chain", "--skip-mujoco",
                              "--scaling", "12,6"])
    cmd = shlex.split(benchmark.command_line(args))
    assert cmd[:2] == ["python3", "bench/run_benchmark.py"]
    again = parser.parse_args(cmd[2:])
    assert vars(again) == vars(args)
    with pytest.raises(SystemExit):
        parser.parse_args(["--repeat", "0"])
    with pytest.raises(SystemExit):
        parser.parse_args(["--robots", "nao"])


def test_chain_urdf_matches_pinocchio():
    import mbs_dynamics as mbs
    xml = benchmark.chain_urdf(9, seed=3)
    r = mbs.load_urdf(xml)
    pm = benchmark.pin_model(xml, {})
    assert r.n == pm.nv == 9
    assert r.total_mass == pytest.approx(sum(i.mass for i in pm.inertias))
    rng = np.random.default_rng(0)
    q, qd, qdd = rng.standard_normal((3, 9))
    np.testing.assert_allclose(r.inverse_dynamics(q, qd, qdd),
                               pin.rnea(pm, pm.createData(), q, qd, qdd), atol=1e-10)
    assert benchmark.chain_urdf(9, seed=3) == xml  # deterministic


def test_taylor_shift_is_the_quartic_expansion():
    """T± @ (q, q′, q″, q‴, q⁗) equals the derivatives of q(t) = Σ c_k t^k at t = ±h."""
    h = 0.3
    c = np.array([0.7, -1.1, 0.4, 2.0, -0.5])  # q(t) = Σ c_k t^k, a quartic

    def deriv(t, m):
        return sum(c[k] * math.factorial(k) / math.factorial(k - m) * t ** (k - m)
                   for k in range(m, 5))

    qs = np.array([[deriv(0.0, m)] for m in range(5)])
    Tp, Tm = benchmark._taylor_shift(h)
    for T, t in ((Tp, h), (Tm, -h)):
        np.testing.assert_allclose((T @ qs)[:, 0], [deriv(t, m) for m in range(4)], rtol=1e-12)


def test_pinocchio_fd_tau2_matches_finite_differences_of_rnea():
    """The anchor τ″ (Pinocchio FD of τ′) against a second difference of pin.rnea along the
    same quartic trajectory (an independent route)."""
    xml = benchmark.chain_urdf(5, seed=1)
    pm = benchmark.pin_model(xml, {})
    pd = pm.createData()
    qs = np.random.default_rng(4).standard_normal((5, 5))
    taud, tau2 = benchmark.make_pin_routes(pm, pd, False)
    tau, tau1, tau2v = tau2(qs)
    h = 1e-3
    Tp, Tm = benchmark._taylor_shift(h)
    tp = pin.rnea(pm, pd, *(Tp @ qs)[:3]).copy()
    tm = pin.rnea(pm, pd, *(Tm @ qs)[:3]).copy()
    t0 = pin.rnea(pm, pd, *qs[:3]).copy()
    np.testing.assert_allclose(tau, t0, atol=1e-12)
    np.testing.assert_allclose(tau1, (tp - tm) / (2 * h), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(tau2v, (tp - 2 * t0 + tm) / h ** 2, rtol=1e-3, atol=1e-3)
