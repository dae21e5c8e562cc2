"""Smoke test of the side-by-side benchmark in bench/ (issue 10): its quick mode, its anchors and
its start-up probe. No timing assertions: speed lives in bench/README.md.

The benchmark is not part of the installed package; its modules (one per concern, issue 21) are
imported from this checkout's bench/, put first on sys.path as bench/run_benchmark.py does. Each
test skips on its own where Pinocchio, dynibo or example-robot-data is missing.
"""
from __future__ import annotations

import importlib
import json
import math
import os
import shlex
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "bench"
MODULES = ("settings", "robots", "peers", "cases", "timing", "calls", "profiling", "trajectories",
           "startup", "machine", "report", "report_sections", "runner", "casadi_c", "ctiming")


@pytest.fixture(scope="module")
def bm():
    """bench/'s modules of this checkout as ``bm.<module>`` (they need only numpy to import)."""
    sys.path.insert(0, str(BENCH))
    try:
        return SimpleNamespace(**{m: importlib.import_module(m) for m in MODULES})
    finally:
        sys.path.remove(str(BENCH))


@pytest.fixture
def pin():
    return pytest.importorskip("pinocchio")


@pytest.fixture
def erd(pin, bm):
    try:
        return bm.robots.erd_root()
    except FileNotFoundError:
        pytest.skip("example-robot-data is not installed")


def _ratios(obj):
    """All ratio medians/mins/maxes in the JSON results."""
    out = []
    if isinstance(obj, dict):
        if isinstance(obj.get("ratio"), dict):
            out += [obj["ratio"]["median"], obj["ratio"]["min"], obj["ratio"]["max"]]
        for v in obj.values():
            out += _ratios(v)
    elif isinstance(obj, list):
        for v in obj:
            out += _ratios(v)
    return out


def test_package_does_not_ship_the_benchmark():
    assert not (REPO / "mbs_dynamics" / "benchmark.py").exists()
    assert (BENCH / "run_benchmark.py").is_file()


def test_bench_is_a_room_of_small_modules(bm):
    """One module per concern, each under ~400 lines, one entry point (issue 21 item 6)."""
    for m in MODULES:
        path = Path(getattr(bm, m).__file__)
        assert path.parent == BENCH, (m, path)  # not a same-named module from elsewhere
        assert len(path.read_text().splitlines()) <= 420, m
    assert not (BENCH / "benchmark.py").exists()


def test_quick_run_writes_the_report(bm, erd, tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "out"
    assert bm.runner.main(["--quick", "--out-dir", str(out), "--json", str(tmp_path / "r.json")]) == 0
    readme = (out / "README.md").read_text()
    for heading in ("## Machine", "## Targets of issue 10", "## Peers checked before timing",
                    "### Panda (n = 7", "### chain4 (n = 4", "## Batch path",
                    "## Where the time goes", "## Enriching a trajectory", "## Scaling",
                    "## Start-up after a fresh install", "python3 bench/run_benchmark.py --quick"):
        assert heading in readme, heading
    png = (out / "scaling.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 1000
    res = json.loads((tmp_path / "r.json").read_text())
    ratios = _ratios(res)
    assert len(ratios) >= 3 * 20
    assert all(math.isfinite(r) and r > 0 for r in ratios)
    # every Panda target that can be measured here has a row (dynibo's only where it is installed)
    keys = {row["key"] for rows in (res["single"]["panda"], res["batch"]["panda"]) for row in rows}
    expected = {"aba_pin", "C_pin", "tau2_route", "batch_tau", "batch_tau2"}
    if res["cases"]["panda"]["dy_check"]:
        expected |= {"tau_dynibo", "g_dynibo", "M_best"}
    assert expected <= keys
    # both sides compute the same thing (the agreement column), FD τ″ to its truncation error
    for name, rows in list(res["single"].items()) + list(res["batch"].items()):
        for row in rows:
            d = row["max_abs_diff"]
            if d is None or (isinstance(d, float) and math.isnan(d)):
                continue
            tol = 1e-4 if "FD" in row["anchor"] else 1e-8
            assert d < tol, (name, row["what"], row["anchor"], d)
    en = res["enrichment"]
    assert en["finite"] and en["samples"] == 51
    assert all(math.isfinite(s["median"]) and s["median"] > 0 for _, s in en["steps"])


def test_command_line_reproduces_the_arguments(bm):
    args = bm.runner.parse_args(["--repeat", "3", "--robots", "ur5,chain", "--skip-mujoco",
                          "--scaling", "12,6", "--startup"])
    cmd = shlex.split(bm.report.command_line(args))
    assert cmd[:2] == ["python3", "bench/run_benchmark.py"]
    again = bm.runner.parse_args(cmd[2:])
    assert vars(again) == vars(args)
    quick = bm.runner.parse_args(["--quick", "--repeat", "5"])
    assert quick.repeat == 5 and quick.batch == bm.settings.QUICK["batch"]
    assert shlex.split(bm.report.command_line(quick))[2:] == ["--quick", "--repeat", "5"]
    for bad in (["--repeat", "0"], ["--robots", "nao"], ["--target-time", "nan"]):
        with pytest.raises(SystemExit):
            bm.runner.parse_args(bad)


def test_chain_urdf_matches_pinocchio(bm, pin):
    import mbs_dynamics as mbs
    xml = bm.robots.chain_urdf(9, seed=3)
    r = mbs.load_urdf(xml, gravity=(0.0, 0.0, -bm.settings.G0))
    pm = bm.peers.pin_model(xml, {})
    assert r.n == pm.nv == 9
    assert r.total_mass == pytest.approx(sum(i.mass for i in pm.inertias))
    q, qd, qdd = np.random.default_rng(0).standard_normal((3, 9))
    np.testing.assert_allclose(r.inverse_dynamics(q, qd, qdd),
                               pin.rnea(pm, pm.createData(), q, qd, qdd), atol=1e-10)
    assert bm.robots.chain_urdf(9, seed=3) == xml  # deterministic


def test_taylor_shift_is_the_quartic_expansion(bm):
    """T± @ (q, q′, q″, q‴, q⁗) equals the derivatives of q(t) = Σ c_k t^k at t = ±h."""
    h = 0.3
    c = np.array([0.7, -1.1, 0.4, 2.0, -0.5])

    def deriv(t, m):
        return sum(c[k] * math.factorial(k) / math.factorial(k - m) * t ** (k - m)
                   for k in range(m, 5))

    qs = np.array([[deriv(0.0, m)] for m in range(5)])
    Tp, Tm = bm.peers._taylor_shift(h)
    for T, t in ((Tp, h), (Tm, -h)):
        np.testing.assert_allclose((T @ qs)[:, 0], [deriv(t, m) for m in range(4)], rtol=1e-12)


def test_pinocchio_fd_tau2_matches_finite_differences_of_rnea(bm, pin):
    """The anchor τ″ (Pinocchio FD of τ′) against a second difference of pin.rnea along the
    same quartic trajectory (an independent route)."""
    pm = bm.peers.pin_model(bm.robots.chain_urdf(5, seed=1), {})
    pd = pm.createData()
    qs = np.random.default_rng(4).standard_normal((5, 5))
    taud, tau2 = bm.peers.make_pin_routes(pm, pd, False)
    tau, tau1, tau2v = tau2(qs)
    h = 1e-3
    Tp, Tm = bm.peers._taylor_shift(h)
    tp = pin.rnea(pm, pd, *(Tp @ qs)[:3]).copy()
    tm = pin.rnea(pm, pd, *(Tm @ qs)[:3]).copy()
    t0 = pin.rnea(pm, pd, *qs[:3]).copy()
    np.testing.assert_allclose(tau, t0, atol=1e-12)
    np.testing.assert_allclose(tau1, (tp - tm) / (2 * h), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(tau2v, (tp - 2 * t0 + tm) / h ** 2, rtol=1e-3, atol=1e-3)


def test_locked_urdf_text_fixes_the_fingers_and_drops_mimic(bm, erd):
    xml = (erd / bm.settings.ERD["panda"][0]).read_text()
    root = ET.fromstring(bm.robots.locked_urdf_text(xml, bm.settings.PANDA_LOCKED))
    joints = {j.get("name"): j for j in root.findall("joint")}
    for name in bm.settings.PANDA_LOCKED:
        assert joints[name].get("type") == "fixed"
        assert joints[name].find("mimic") is None
    assert joints["panda_joint1"].get("type") == "revolute"
    with pytest.raises(ValueError):
        bm.robots.locked_urdf_text(xml, {"panda_finger_joint1": 0.01})


@pytest.mark.parametrize("name", ["panda", "baxter"])
def test_dynibo_twin_agrees_with_pinocchio(bm, erd, name):
    """dynibo is timed only after τ, g, M, q̈ agree with Pinocchio in our joint order (Baxter: a
    tree whose URDF order differs from Pinocchio's); a peer with other physics is refused."""
    pytest.importorskip("dynibo")
    rel, locked = bm.settings.ERD[name]
    xml = (erd / rel).read_text()
    pm = bm.peers.pin_model(xml, locked)
    qs = np.random.default_rng(7).standard_normal((5, pm.nv))
    twin, note = bm.peers.dynibo_twin(xml, locked, pm, qs)
    assert twin is not None, note
    assert sorted(twin.perm) == list(range(pm.nv))
    assert all(v < 1e-9 * 1e3 for v in twin.check.values()), twin.check
    if name == "baxter":
        assert not np.array_equal(twin.perm, np.arange(pm.nv))  # the order map is exercised
    wrong = bm.peers.pin_model(xml, locked, g=9.81)  # another gravity: must not pass as a peer
    twin2, note2 = bm.peers.dynibo_twin(xml, locked, wrong, qs)
    assert twin2 is None and "disagrees" in note2


def test_source_files_are_the_checkout(bm):
    files = bm.startup._source_files(bm.settings.REPO)
    assert "setup.py" in files and "bench/runner.py" in files
    assert not any(f.startswith(".git/") or "__pycache__" in f for f in files)


@pytest.mark.parametrize("lib", ["mbs_dynamics", "pinocchio", "dynibo"])
def test_startup_probe_calls_every_public_method(bm, erd, lib, tmp_path):
    """The script --startup runs in the fresh venv, here with this interpreter (public API only:
    it must work for any build of the package)."""
    if lib != "mbs_dynamics":
        pytest.importorskip(lib)
    urdf = erd / bm.settings.ERD["panda"][0]
    locked_file = tmp_path / "panda_locked.urdf"
    locked_file.write_text(bm.robots.locked_urdf_text(urdf.read_text(), bm.settings.PANDA_LOCKED))
    child = tmp_path / "child.py"
    child.write_text(bm.startup._STARTUP_CHILD)
    env = dict(os.environ)  # the package as installed (or as the caller's PYTHONPATH has it)
    p = subprocess.run([sys.executable, str(child), lib, str(urdf), str(locked_file),
                        json.dumps(bm.settings.PANDA_LOCKED)], capture_output=True, text=True,
                       timeout=600, env=env, cwd=str(tmp_path))
    assert p.returncode == 0, p.stderr[-2000:]
    d = json.loads(p.stdout.strip().splitlines()[-1])
    steps = [name for name, _ in d["steps"]]
    assert math.isfinite(d["total"]) and d["total"] > 0
    assert all(math.isfinite(t) and t >= 0 for _, t in d["steps"])
    if lib == "mbs_dynamics":
        assert steps[:3] == ["import numpy", "import mbs_dynamics", "load_urdf"]
        assert set(bm.settings.PUBLIC_METHODS) <= set(steps)
        import mbs_dynamics  # the child measured the same package this test process imports
        assert Path(d["file"]).resolve() == Path(mbs_dynamics.__file__).resolve()
    else:
        assert steps[:2] == ["import numpy", f"import {lib}"] and len(steps) >= 6


def test_casadi_c_agrees_with_pinocchio_and_the_timer_runs(bm, pin):
    """The compiled limit's C (CasADi SX written by hand in bench/casadi_c.py) computes the same
    τ as Pinocchio and the same τ′, τ″ as finite differences of Pinocchio's τ along a quartic
    trajectory (independent routes); the C timer (bench/ctiming.py) returns positive times."""
    pytest.importorskip("casadi")
    if bm.ctiming.cc_command() is None:
        pytest.skip("no C compiler")
    import mbs_dynamics as mbs
    xml = bm.robots.chain_urdf(4, seed=5)
    r = mbs.load_urdf(xml, gravity=(0.0, 0.0, -bm.settings.G0))
    pm = bm.peers.pin_model(xml, {})
    pd = pm.createData()
    qs = np.random.default_rng(2).standard_normal((5, 4))
    res = bm.casadi_c.time_casadi_c(r.model, qs, repeat=2, target_time=1e-4)
    tau = pin.rnea(pm, pd, *qs[:3]).copy()
    np.testing.assert_allclose(res["outputs"]["tau"], tau, rtol=1e-12, atol=1e-12)
    h = 1e-3
    Tp, Tm = bm.peers._taylor_shift(h)
    tp = pin.rnea(pm, pd, *(Tp @ qs)[:3]).copy()
    tm = pin.rnea(pm, pd, *(Tm @ qs)[:3]).copy()
    jet = res["outputs"]["jet"]
    np.testing.assert_allclose(jet[0], tau, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(jet[1], (tp - tm) / (2 * h), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(jet[2], (tp - 2 * tau + tm) / h ** 2, rtol=1e-3, atol=1e-3)
    for k in ("tau", "jet"):
        st = res["stats"][k]
        assert len(st.values) == 2 and all(math.isfinite(v) and v > 0 for v in st.values)


def test_ctiming_reports_the_compilers_message(bm):
    if bm.ctiming.cc_command() is None:
        pytest.skip("no C compiler")
    with pytest.raises(RuntimeError, match="undeclared|error"):
        bm.ctiming.time_c({"bad.c": "int f(void) { return undeclared_name; }"}, {"f": "f();"})
