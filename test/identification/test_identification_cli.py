"""``mbs-dynamics identify`` and ``mbs-dynamics excite`` end to end (issue 20, items 4 and 5).

Logs are simulated by Pinocchio (test/identification/identification_sim.py). Bad input: one line on stderr, exit
code 2, no traceback, and no output file written.
"""
from __future__ import annotations

import importlib.util
import builtins
import json
import sys

import numpy as np
import pytest

import mbs_dynamics as mbs
from mbs_dynamics import cli, data
from mbs_dynamics.identification import logs

from identification_sim import fourier, perturbed_model, pin, simulate

_NO_SCIPY = importlib.util.find_spec("scipy") is None   # a skip per test, not per module
# --plot needs matplotlib (optional: ROS's Python has none); without it the tests run without
# --plot, and test_identify_plot_without_matplotlib_is_a_one_line_hint checks that case
_HAS_MPL = importlib.util.find_spec("matplotlib") is not None
pytestmark = [pytest.mark.skipif(pin is None, reason="pinocchio is not installed"),
              pytest.mark.skipif(_NO_SCIPY, reason="scipy is not installed")]
URDF = data.robot("arm7")
SIGMA = 0.05


@pytest.fixture(scope="module")
def log_table():
    rng = np.random.default_rng(2)
    robot = mbs.load_urdf(URDF)
    model = perturbed_model(URDF.read_text(), rng)
    t = np.arange(0.0, 12.0, 1 / 500.0)
    q, qd, qdd = fourier(t, 7, rng)
    tau = simulate(model, t, q, qd, qdd, 0.3, 0.2, SIGMA, rng)
    return logs.JointLog(t, robot.joint_names, q, tau, None, None, "sim")


def _outputs(prefix):
    return [prefix.parent / (prefix.name + s) for s in (".urdf", "_actuators.yaml",
                                                         "_report.json")]


def test_identify_csv_writes_urdf_yaml_report_and_plot(tmp_path, log_table, capsys):
    logs.write_csv(tmp_path / "log.csv", log_table)
    out = tmp_path / "arm7_id"
    plot = ["--plot", str(tmp_path / "tau.png")] if _HAS_MPL else []
    rc = cli.main(["identify", str(URDF), str(tmp_path / "log.csv"), "-o", str(out)] + plot)
    text = capsys.readouterr().out
    assert rc == 0
    assert all(p.is_file() for p in _outputs(out))
    if _HAS_MPL:
        assert (tmp_path / "tau.png").read_bytes()[:4] == b"\x89PNG"
    rep = json.loads((tmp_path / "arm7_id_report.json").read_text())
    assert set(rep["rms"]) == set(log_table.joint_names)
    assert all(v < 1.2 * SIGMA for v in rep["rms"].values())
    assert rep["cutoff_hz"] == 10.0 and "cut-off 10 Hz" in rep["filter"]
    assert rep["condition_number"] > 1
    for v in rep["base_parameters"].values():
        assert {"value", "sigma", "relative_sigma_percent"} <= set(v)
    for j in log_table.joint_names:
        assert set(rep["friction"][j]) >= {"viscous", "coulomb"}
    assert "condition number" in text and "cut-off 10 Hz" in text
    mbs.load_urdf(out.with_suffix(".urdf"))
    assert mbs.actuator_from_params(__import__("yaml").safe_load(
        (tmp_path / "arm7_id_actuators.yaml").read_text()), 7) is None


def _bad_csv(tmp_path, log, case):
    t, q, e = log.time.copy(), log.position.copy(), log.effort.copy()
    names = list(log.joint_names)
    if case == "missing joint":
        q, e, names = q[:, :6], e[:, :6], names[:6]
    elif case == "backwards":
        t[100] = t[98]
    elif case == "repeat":
        t[100] = t[99]
    elif case == "nan row":
        q[200] = np.nan
    path = tmp_path / f"{case.replace(' ', '_')}.csv"
    logs.write_csv(path, logs.JointLog(t, tuple(names), q, e))
    return path


@pytest.mark.parametrize("case,match", [
    ("missing joint", "joint(s) arm7_joint7 missing"),
    ("backwards", "time stamps go backwards at sample 100"),
    ("repeat", "time stamps repeat at sample 100"),
    ("nan row", "arm7_joint1/position is nan at sample 200"),
    ("no jointstate", "no topic /joint_states"),
    ("not a log", "no such file or directory"),
])
def test_identify_bad_input_one_line_exit_2_nothing_written(tmp_path, log_table, capsys, case,
                                                             match):
    if case == "no jointstate":
        pytest.importorskip("rosbags")
        from rosbags.rosbag2 import Writer
        from rosbags.typesys import Stores, get_typestore
        store = get_typestore(Stores.ROS2_HUMBLE)
        path = tmp_path / "bag"
        with Writer(path, version=9) as w:
            c = w.add_connection("/chatter", "std_msgs/msg/String", typestore=store)
            w.write(c, 1, store.serialize_cdr(store.types["std_msgs/msg/String"](data="x"),
                                              "std_msgs/msg/String"))
    elif case == "not a log":
        path = tmp_path / "nothing.csv"
    else:
        path = _bad_csv(tmp_path, log_table, case)
    out = tmp_path / "out"
    plot = ["--plot", str(tmp_path / "p.png")] if _HAS_MPL else []
    rc = cli.main(["identify", str(URDF), str(path), "-o", str(out)] + plot)
    err = capsys.readouterr().err
    assert rc == 2
    assert err.startswith("mbs-dynamics: error: ") and err.count("\n") == 1, err
    assert match in err and "Traceback" not in err
    assert not any(p.exists() for p in _outputs(out)) and not (tmp_path / "p.png").exists()


def test_identify_plot_without_matplotlib_is_a_one_line_hint(tmp_path, monkeypatch, capsys):
    for mod in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, mod)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    out = tmp_path / "o"
    rc = cli.main(["identify", str(URDF), str(tmp_path / "log.csv"), "-o", str(out), "--plot",
                   str(tmp_path / "p.png")])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1, err
    assert "plots need matplotlib: pip install 'mbs_dynamics[plot]'" in err
    assert not any(p.exists() for p in _outputs(out)) and not (tmp_path / "p.png").exists()


def test_identify_hint_without_rosbags(tmp_path, monkeypatch, capsys):
    real = builtins.__import__

    def fake(name, *a, **k):
        if name.startswith("rosbags"):
            raise ImportError("No module named 'rosbags'")
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", fake)
    (tmp_path / "bag").mkdir()
    rc = cli.main(["identify", str(URDF), str(tmp_path / "bag"), "-o", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == 2 and "pip install 'mbs_dynamics[identify]'" in err and err.count("\n") == 1


def test_excite_writes_a_trajectory_within_limits_that_plays(tmp_path, capsys):
    out = tmp_path / "traj.yaml"
    rc = cli.main(["excite", str(URDF), "-o", str(out), "--iterations", "4", "--period", "8",
                   "--harmonics", "4", "--max-acceleration", "4"])
    text = capsys.readouterr().out
    assert rc == 0 and "condition number" in text
    robot = mbs.load_urdf(URDF)
    traj = mbs.Trajectory.load(out)
    assert traj.joint_names == robot.joint_names
    assert traj.duration == pytest.approx(8.0)
    s = traj.sample_many(np.linspace(traj.start_time, traj.end_time, 4001))
    assert np.all(s[:, 0] >= robot.lower) and np.all(s[:, 0] <= robot.upper)
    assert np.all(np.abs(s[:, 1]) <= robot.velocity_limit)
    assert np.all(np.abs(s[:, 2]) <= 4.0 * 1.001)
    np.testing.assert_allclose(s[[0, -1], 1:3], 0.0, atol=1e-12)  # at rest at both ends
    np.testing.assert_allclose(s[0, 0], s[-1, 0], atol=1e-9)  # periodic
    # it plays as any trajectory: the feedforward command samples it
    rc = cli.main(["feedforward", str(URDF), str(out), "--rate", "50", "-o",
                   str(tmp_path / "ff.csv"), "--quiet"])
    assert rc == 0 and (tmp_path / "ff.csv").is_file()


def test_excite_improves_the_condition_number():
    from mbs_dynamics.identification.excite import excite
    robot = mbs.load_urdf(URDF)
    d = excite(robot, period=8.0, harmonics=4, iterations=8, seed=1)
    assert d.condition < d.condition_start
    assert np.all(d.peak_velocity <= 0.9 * robot.velocity_limit * (1 + 1e-9))


def test_excite_bad_output_name(tmp_path, capsys):
    rc = cli.main(["excite", str(URDF), "-o", str(tmp_path / "traj.txt")])
    assert rc == 2 and "use a .yaml" in capsys.readouterr().err
    assert not (tmp_path / "traj.txt").exists()


def test_identify_refuses_lock(tmp_path, log_table, capsys):
    logs.write_csv(tmp_path / "log.csv", log_table)
    rc = cli.main(["identify", str(URDF), str(tmp_path / "log.csv"), "-o", str(tmp_path / "o"),
                   "--lock", "arm7_joint7=0"])
    assert rc == 2 and "--lock" in capsys.readouterr().err
    assert not any(p.exists() for p in _outputs(tmp_path / "o"))


@pytest.mark.parametrize("extra, words", [(["--period", "1e308"], "trajectory points"),
                                          (["--period", "1e6"], "trajectory points"),
                                          (["--periods", "100000"], "trajectory points"),
                                          (["--harmonics", "100000"], "harmonics")])
def test_excite_huge_period_is_one_line_exit_2_before_building(tmp_path, capsys, extra, words):
    # fuzz campaign (issue 22): --period 1e308 ended "cannot convert float infinity to integer"
    # (exit 1); --period 1e6 started building 5e7 points
    rc = cli.main(["excite", str(data.robot("arm7")), "-o", str(tmp_path / "t.yaml"), "--quiet",
                   "--iterations", "1", *extra])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and words in err and "Traceback" not in err
    assert not (tmp_path / "t.yaml").exists()


def test_excite_rejects_a_non_finite_period():
    from mbs_dynamics.identification import excite
    r = mbs.load_urdf(data.robot("arm7"))
    for p in (float("inf"), float("nan"), 0.0, -1.0):
        with pytest.raises(ValueError, match="period"):
            excite.excite(r, period=p, iterations=1)


@pytest.mark.parametrize("kw, exc, words", [
    (dict(harmonics=1000), ValueError, "harmonics"), (dict(harmonics=10 ** 400), ValueError,
                                                      "harmonics"),
    (dict(harmonics=2.5), TypeError, "harmonics"), (dict(margin="x"), TypeError, "margin"),
    (dict(max_acceleration=float("nan")), ValueError, "max_acceleration"),
    (dict(max_acceleration=10 ** 400), ValueError, "max_acceleration"),
    (dict(period=10 ** 400), ValueError, "period"), (dict(iterations=-1), ValueError, "iterations"),
    (dict(seed="x"), ValueError, "seed")])
def test_excite_arguments_are_checked_before_the_work(kw, exc, words):
    # fuzz campaign (issue 22): harmonics=1,000 ran for minutes per iteration (10**6 never
    # returned), 10**400 values escaped as OverflowError / UFuncTypeError, NaN acceleration
    # limits were accepted
    from mbs_dynamics.identification import excite
    r = mbs.load_urdf(data.robot("arm7"))
    with pytest.raises(exc, match=words):
        excite.excite(r, **dict(dict(iterations=1), **kw))
