"""End-to-end tests of the ``mbs-dynamics`` command line on the bundled arm7 example.

Oracles: Pinocchio's RNEA on the CSV's own q, q', q'' (τ column), the SEA formula θ = q + τ/K with
K read from the bundled config, and the URDF's <mass> elements (total mass).
"""

import csv
import json
import re
import sys
import types
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
import yaml

import mbs_dynamics
from mbs_dynamics import cli
from mbs_dynamics.cli import demo as cli_demo
from mbs_dynamics.cli import feedforward as cli_ff

DATA = Path(mbs_dynamics.__file__).parent / "data"
URDF = DATA / "robots" / "arm7.urdf"
TRAJ = DATA / "trajectories" / "arm7_example.yaml"
SEA_CFG = DATA / "config" / "arm7_sea.yaml"
VSA_CFG = DATA / "config" / "arm7_vsa.yaml"
JOINTS = [f"arm7_joint{i}" for i in range(1, 8)]

_INERTIAL = ('<inertial><mass value="{}"/>'
             '<inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial>')
TREE_URDF = f"""<robot name="tree">
  <link name="base"/>
  <link name="a">{_INERTIAL.format(1)}</link>
  <link name="b">{_INERTIAL.format(2)}</link>
  <link name="c">{_INERTIAL.format(3)}</link>
  <joint name="ja" type="continuous"><parent link="base"/><child link="a"/><axis xyz="0 0 1"/>
  </joint>
  <joint name="jb" type="revolute"><parent link="a"/><child link="b"/><axis xyz="0 1 0"/>
    <origin xyz="0 0 0.5"/><limit lower="-1" upper="1" effort="10" velocity="2"/></joint>
  <joint name="jc" type="prismatic"><parent link="a"/><child link="c"/><axis xyz="1 0 0"/>
    <origin xyz="0 0.2 0"/><limit lower="0" upper="0.3" effort="50" velocity="0.5"/></joint>
</robot>"""


def _read_csv(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    header = rows[0]
    data = np.array(rows[1:], dtype=float)
    return header, {h: data[:, i] for i, h in enumerate(header)}


def _column_name(header, qty, joint):
    """The CSV column ``<qty>_<joint> [unit]`` (asserts it exists once)."""
    found = [h for h in header if h.startswith(f"{qty}_{joint} [") and h.endswith("]")]
    assert len(found) == 1, (qty, joint, header[:5])
    return found[0]


def _columns(table, qty):
    header = list(table)
    return np.column_stack([table[_column_name(header, qty, j)] for j in JOINTS])


def test_bundled_files_exist():
    for p in (URDF, TRAJ, SEA_CFG, VSA_CFG):
        assert p.is_file(), p


def test_info_text_and_json(capsys):
    assert cli.main(["info", str(URDF)]) == 0
    out = capsys.readouterr().out
    for j in JOINTS:
        assert j in out
    assert "chain" in out and "revolute" in out and "base: fixed to the world" in out
    masses = sum(float(m.get("value")) for m in ET.parse(URDF).getroot().iter("mass"))
    assert cli.main(["info", str(URDF), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["n"] == 7 and d["structure"] == "chain"
    assert [j["name"] for j in d["joints"]] == JOINTS
    # every link's mass; the moving bodies (fixed links merged) carry all but the base's
    assert d["total_mass"] == pytest.approx(masses)
    assert d["moving_mass"] == pytest.approx(masses - 5.0)  # arm7_link0 (5 kg) is on the base
    assert d["base"] == "fixed"
    j1 = d["joints"][0]
    assert j1["lower"] == pytest.approx(-2.96) and j1["effort_limit"] == pytest.approx(320)
    assert j1["axis"] == pytest.approx([0, 0, 1])


def test_info_tree(tmp_path, capsys):
    path = tmp_path / "tree.urdf"
    path.write_text(TREE_URDF)
    assert cli.main(["info", str(path), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["structure"] == "tree" and d["n"] == 3
    assert [j["type"] for j in d["joints"]] == ["continuous", "revolute", "prismatic"]
    assert d["joints"][2]["parent_joint"] == "ja" and d["joints"][1]["parent_joint"] == "ja"
    assert d["total_mass"] == pytest.approx(6.0)
    assert cli.main(["info", str(path)]) == 0
    text = capsys.readouterr().out
    assert "tree" in text and "└─ jc [prismatic] → c" in text and "unlimited" in text
    # --lock makes a joint rigid: its link's mass moves to the parent body
    assert cli.main(["info", str(path), "--json", "--lock", "jc=0.1"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert [j["name"] for j in d["joints"]] == ["ja", "jb"] and d["structure"] == "chain"
    assert d["total_mass"] == pytest.approx(6.0)
    assert d["joints"][0]["body_mass"] == pytest.approx(4.0)
    assert "c" in d["joints"][0]["fixed_links"]


def test_feedforward_rigid_matches_pinocchio(tmp_path, capsys):
    pin = pytest.importorskip("pinocchio")
    out = tmp_path / "ff.csv"
    assert cli.main(["feedforward", str(URDF), str(TRAJ), "-o", str(out), "--rate", "200"]) == 0
    assert "samples" in capsys.readouterr().out
    header, table = _read_csv(out)
    units = {"q": "rad", "q_dot": "rad/s", "q_ddot": "rad/s^2", "q_dddot": "rad/s^3",
             "q_ddddot": "rad/s^4", "tau": "N m", "tau_dot": "N m/s", "tau_ddot": "N m/s^2"}
    expected = ["t [s]"] + [f"{q}_{j} [{units[q]}]" for q in cli_ff.Q_COLUMNS + cli_ff.FF_COLUMNS
                            for j in JOINTS]
    assert header == expected
    t = table["t [s]"]
    assert t[0] == 0.0 and t[-1] == pytest.approx(4.5) and len(t) == 901
    model = pin.buildModelFromUrdf(str(URDF))
    data = model.createData()
    q, qd, qdd = _columns(table, "q"), _columns(table, "q_dot"), _columns(table, "q_ddot")
    tau = _columns(table, "tau")
    for i in range(0, len(t), 50):
        ref = pin.rnea(model, data, q[i], qd[i], qdd[i])
        np.testing.assert_allclose(tau[i], ref, rtol=1e-9, atol=1e-9)
    # derivatives are consistent with the sampled τ (central differences at 200 Hz)
    tau_dot = _columns(table, "tau_dot")
    fd = (tau[2:] - tau[:-2]) / (t[2:] - t[:-2])[:, None]
    assert np.abs(fd - tau_dot[1:-1]).max() < 1e-2 * np.abs(tau_dot).max()


def test_feedforward_sea_csv_and_plot(tmp_path):
    pytest.importorskip("matplotlib")
    out, png = tmp_path / "ff.csv", tmp_path / "ff.png"
    argv = ["feedforward", str(URDF), str(TRAJ), "--sea", str(SEA_CFG), "-o", str(out),
            "--plot", str(png), "--quiet"]
    assert cli.main(argv) == 0
    header, table = _read_csv(out)
    for qty in cli_ff.Q_COLUMNS + cli_ff.FF_COLUMNS + cli_ff.ACT_COLUMNS:
        for j in JOINTS:
            _column_name(header, qty, j)
    assert "theta_arm7_joint3 [rad]" in header and "tau_motor_arm7_joint3 [N m]" in header
    cfg = yaml.safe_load(SEA_CFG.read_text())["actuator"]
    K = np.array(cfg["stiffness"])
    B = np.array(cfg["motor_inertia"])
    q, tau = _columns(table, "q"), _columns(table, "tau")
    np.testing.assert_allclose(_columns(table, "theta"), q + tau / K, rtol=1e-14, atol=1e-14)
    theta_dd = _columns(table, "q_ddot") + _columns(table, "tau_ddot") / K
    np.testing.assert_allclose(_columns(table, "theta_ddot"), theta_dd, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(_columns(table, "tau_motor"), B * theta_dd + tau, rtol=1e-12,
                               atol=1e-12)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20000


def test_feedforward_vsa_and_progress(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    out, png = tmp_path / "ffv.csv", tmp_path / "ffv.png"
    argv = ["feedforward", str(URDF), str(TRAJ), "--sea", str(VSA_CFG), "-o", str(out),
            "--plot", str(png), "--rate", "2000"]
    assert cli.main(argv) == 0
    err = capsys.readouterr().err
    assert "9001/9001 samples" in err  # progress bar on long runs
    header, table = _read_csv(out)
    assert "tau_motor_arm7_joint7 [N m]" in header and len(table["t [s]"]) == 9001
    assert "stiffness_arm7_joint7 [N m/rad]" in header
    # the VSA's stiffness column: φ_δ = k exp(a σ) cosh(a (θ − q)) with the bundled config
    cfg = yaml.safe_load(VSA_CFG.read_text())["actuator"]["vsa"]
    k, a, sigma = np.array(cfg["k"]), cfg["a"], cfg["sigma"]
    delta = _columns(table, "theta") - _columns(table, "q")
    np.testing.assert_allclose(_columns(table, "stiffness"),
                               k * np.exp(a * sigma) * np.cosh(a * delta), rtol=1e-12)
    assert png.is_file()


def test_feedforward_json_trajectory_in_other_joint_order(tmp_path):
    from mbs_dynamics.control.trajectory import Trajectory
    traj = Trajectory.load(TRAJ)
    rev = traj.reorder(JOINTS[::-1])
    path = tmp_path / "t.json"
    rev.save(path)
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    assert cli.main(["feedforward", str(URDF), str(TRAJ), "-o", str(a), "--quiet"]) == 0
    assert cli.main(["feedforward", str(URDF), str(path), "-o", str(b), "--quiet"]) == 0
    assert a.read_text() == b.read_text()


def _bad(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


@pytest.mark.parametrize("case", ["bad_urdf", "wrong_joints", "ragged", "bad_yaml_traj",
                                  "bad_config_yaml", "bad_config_key", "bad_stiffness",
                                  "no_out_dir", "config_not_mapping", "out_is_dir"])
def test_bad_files_exit_2(tmp_path, capsys, case):
    urdf, traj, cfg, out = str(URDF), str(TRAJ), None, str(tmp_path / "o.csv")
    expect = None
    if case == "bad_urdf":
        urdf = _bad(tmp_path, "x.urdf", "<robot name='x'><link name='a'></robot")
        expect = "x.urdf"
    elif case == "wrong_joints":
        traj = _bad(tmp_path, "t.yaml", "joint_names: [a]\npoints:\n"
                    "- {time_from_start: 0, positions: [0]}\n"
                    "- {time_from_start: 1, positions: [1]}\n")
        expect = "joint names do not match"
    elif case == "ragged":
        traj = _bad(tmp_path, "t.yaml", "joint_names: [a, b]\npoints:\n"
                    "- {time_from_start: 0, positions: [0, 0]}\n"
                    "- {time_from_start: 1, positions: [1]}\n")
        expect = "points[1].positions has 1 values"
    elif case == "bad_yaml_traj":
        traj = _bad(tmp_path, "t.yaml", "joint_names: [a\n")
        expect = "invalid YAML"
    elif case == "bad_config_yaml":
        cfg = _bad(tmp_path, "c.yaml", "actuator: {type: sea\n")
        expect = "invalid YAML"
    elif case == "bad_config_key":
        cfg = _bad(tmp_path, "c.yaml", "actuator: {type: sea, stifness: 10}\n")
        expect = "actuator.stifness"
    elif case == "bad_stiffness":
        cfg = _bad(tmp_path, "c.yaml", "actuator: {type: sea, stiffness: -5}\n")
        expect = "actuator.stiffness must be > 0"
    elif case == "no_out_dir":
        out = str(tmp_path / "missing" / "o.csv")
        expect = "does not exist"
    elif case == "out_is_dir":
        out = str(tmp_path)
        expect = "is a directory"
    elif case == "config_not_mapping":
        cfg = _bad(tmp_path, "c.yaml", "- sea\n")
        expect = "expected a mapping"
    argv = ["feedforward", urdf, traj, "-o", out, "--quiet"] + (["--sea", cfg] if cfg else [])
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("mbs-dynamics: error:") and expect in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("argv, expect", [
    (["feedforward", "missing.urdf", str(TRAJ), "-o", "x.csv"], "no such file"),
    (["feedforward", str(URDF), str(TRAJ), "-o", "x.csv", "--rate", "0"], "positive"),
    (["feedforward", str(URDF), str(TRAJ), "-o", "x.csv", "--rate", "abc"], "not a number"),
    (["info", str(DATA)], "not a file"),
    (["info", str(URDF), "--lock", "arm7_joint1"], "is not JOINT=POSITION"),
    (["info", str(URDF), "--lock", "arm7_joint1=nan"], "is not JOINT=POSITION"),
    (["feedforward", str(URDF), str(TRAJ)], "required"),
])
def test_bad_arguments_exit_2(capsys, argv, expect):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("mbs-dynamics: error:") and expect in err
    assert len(err.strip().splitlines()) == 1


def test_lazy_subcommands(monkeypatch, capsys):
    calls = {}
    fake = types.ModuleType("fake_demo")

    def add_arguments(parser):
        parser.add_argument("--speed", type=float, default=1.0)

    def run(args):
        calls["speed"] = args.speed
        return 0

    fake.add_arguments, fake.run = add_arguments, run
    monkeypatch.setitem(sys.modules, "fake_demo", fake)
    monkeypatch.setattr(cli_demo, "MODULE", "fake_demo")
    assert cli.main(["demo", "--speed", "3"]) == 0
    assert calls == {"speed": 3.0}
    monkeypatch.setattr(cli_demo, "MODULE", "mbs_dynamics.no_such_module")
    assert cli.main(["demo"]) == 2
    assert "not available" in capsys.readouterr().err


def test_help_lists_subcommands(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    names = ("codegen", "demo", "excite", "feedforward", "identify", "info", "kinematics")
    assert set(names) <= set(cli.commands())
    for name in cli.commands():
        # argparse's own list, once: "    name   help" (no hand-written second list)
        assert len(re.findall(rf"^ +{name}(\s|$)", out, re.M)) == 1, (name, out)


def test_every_command_module_registers_and_runs():
    """The command protocol: add_parser(subparsers) and run(args) or run_argv(argv)."""
    for name, module in cli.commands().items():
        assert callable(module.add_parser), name
        assert callable(getattr(module, "run", None) or getattr(module, "run_argv")), name


def test_command_help_exits_zero(capsys):
    for name in cli.commands():
        with pytest.raises(SystemExit) as exc:
            cli.main([name, "--help"])
        assert exc.value.code == 0
        assert f"mbs-dynamics {name}" in capsys.readouterr().out


# ------------------------------------------------------------------ first-contact errors (#14)
def _run_one_line_error(capsys, argv):
    """Run the CLI expecting exit 2 with exactly one stderr line and no Python warning."""
    import warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code = cli.main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith("mbs-dynamics: error:"), err
    assert len(err.strip().splitlines()) == 1, err
    assert not [w for w in caught if issubclass(w.category, (RuntimeWarning, UserWarning))], \
        [str(w.message) for w in caught]
    return err


@pytest.mark.parametrize("case", ["rate_memory", "rate_huge", "plot_format", "plot_no_suffix",
                                  "no_actuator_section", "binary_traj", "binary_config",
                                  "overflow", "plot_dir"])
def test_feedforward_errors_before_any_output(tmp_path, capsys, case):
    if case.startswith("plot"):
        pytest.importorskip("matplotlib")  # without it, the error is the install hint
    out = tmp_path / "o.csv"
    urdf, traj, extra, expect = str(URDF), str(TRAJ), [], []
    if case == "rate_memory":
        extra, expect = ["--rate", "1e9"], ["--rate", "GiB", "limit"]
    elif case == "rate_huge":
        extra, expect = ["--rate", "1e300"], ["--rate", "GiB"]
    elif case == "plot_format":
        extra, expect = ["--plot", str(tmp_path / "p.xyz")], ["p.xyz", "'xyz'", "png"]
    elif case == "plot_no_suffix":
        extra, expect = ["--plot", str(tmp_path / "p")], ["no file extension"]
    elif case == "plot_dir":
        extra, expect = ["--plot", str(tmp_path / "nodir" / "p.png")], ["does not exist"]
    elif case == "no_actuator_section":
        cfg = _bad(tmp_path, "k.yaml", "stiffness: 100.0\n")
        extra, expect = ["--sea", cfg], ["k.yaml", "no 'actuator:' section", "type: sea"]
    elif case == "binary_traj":
        p = tmp_path / "t.yaml"
        p.write_bytes(bytes(range(256)) * 4)
        traj, expect = str(p), ["t.yaml", "not a text file"]
    elif case == "binary_config":
        p = tmp_path / "c.yaml"
        p.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(200)))
        extra, expect = ["--sea", str(p)], ["c.yaml", "not a text file"]
    elif case == "overflow":
        pts = "\n".join(f"- {{time_from_start: {i}, positions: [{x}, 0, 0, 0, 0, 0, 0]}}"
                        for i, x in enumerate(["0", "1e300", "0"]))
        traj = _bad(tmp_path, "big.yaml", f"joint_names: {JOINTS}\npoints:\n{pts}\n")
        expect = ["big.yaml", "not finite"]
    err = _run_one_line_error(capsys, ["feedforward", urdf, traj, "-o", str(out), *extra])
    for e in expect:
        assert e in err, err
    assert not out.exists()  # checked before any output
    assert not list(tmp_path.glob("p*"))


def test_feedforward_actuator_file_with_ros_wrapper_and_rigid(tmp_path):
    """A ROS parameter file with an actuator section is accepted; type rigid is explicit."""
    ros = _bad(tmp_path, "ros.yaml", "node:\n  ros__parameters:\n    actuator:\n"
                                     "      type: sea\n      stiffness: 500.0\n")
    rigid = _bad(tmp_path, "rigid.yaml", "actuator: {type: rigid}\n")
    for cfg, has_theta in ((ros, True), (rigid, False)):
        out = tmp_path / "o.csv"
        assert cli.main(["feedforward", str(URDF), str(TRAJ), "-o", str(out), "--rate", "50",
                         "--sea", cfg, "--quiet"]) == 0
        header, table = _read_csv(out)
        assert any(h.startswith("theta_") for h in header) == has_theta
        if has_theta:  # K = 500 from the wrapped file: θ = q + τ/K
            np.testing.assert_allclose(_columns(table, "theta"),
                                       _columns(table, "q") + _columns(table, "tau") / 500.0,
                                       rtol=1e-13, atol=1e-13)


def test_plot_without_matplotlib_is_a_one_line_hint(tmp_path, capsys, monkeypatch):
    for mod in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, mod)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    out = tmp_path / "o.csv"
    err = _run_one_line_error(capsys, ["feedforward", str(URDF), str(TRAJ), "-o", str(out),
                                       "--plot", str(tmp_path / "p.png")])
    assert "plots need matplotlib: pip install 'mbs_dynamics[plot]'" in err
    assert not out.exists()


def test_substeps_must_be_positive(tmp_path, capsys):
    err = _run_one_line_error(capsys, ["demo", "--substeps", "0", "--out", str(tmp_path)])
    assert "--substeps" in err and ">= 1" in err


def test_no_import_cycle_and_lazy_matplotlib():
    """cli and demo do not import each other; importing them does not import matplotlib."""
    import subprocess
    code = ("import sys, mbs_dynamics.cli; a = 'mbs_dynamics.demo' in sys.modules; "
            "import mbs_dynamics.demo; b = 'mbs_dynamics.cli' in sys.modules; "
            "del sys.modules['mbs_dynamics.cli']; import importlib; "
            "sys.modules.pop('mbs_dynamics.demo'); import mbs_dynamics.demo; "
            "c = 'mbs_dynamics.cli' in sys.modules; "
            "print(a, c, 'matplotlib' in sys.modules)")
    root = str(Path(mbs_dynamics.__file__).parents[1])
    env = dict(__import__("os").environ, PYTHONPATH=root)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         cwd="/", timeout=600)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["False", "False", "False"], res.stdout


def _ur5_path():
    from conftest import UR5, erd_path
    return erd_path(UR5[0])


def test_newcomer_path_on_ur5(tmp_path, capsys, monkeypatch):
    """README's CLI on a UR5 from example-robot-data, from another directory: info, then
    feedforward along a trajectory inside its limits (τ checked against Pinocchio)."""
    pin = pytest.importorskip("pinocchio")
    from mbs_dynamics import demo
    monkeypatch.chdir(tmp_path)
    urdf = _ur5_path()
    assert cli.main(["info", urdf]) == 0
    assert "shoulder_pan_joint" in capsys.readouterr().out
    robot = __import__("mbs_dynamics").load_urdf(urdf)
    traj, _ = demo.generated_trajectory(robot)
    traj.save(tmp_path / "ur5.yaml")
    has_mpl = __import__("importlib").util.find_spec("matplotlib") is not None
    assert cli.main(["feedforward", urdf, "ur5.yaml", "-o", "ur5.csv", "--rate", "100"]
                    + (["--plot", "ur5.png"] if has_mpl else [])) == 0
    captured = capsys.readouterr()
    assert "warning" not in captured.err and "samples" in captured.out
    header, table = _read_csv(tmp_path / "ur5.csv")
    names = robot.joint_names
    cols = {q: np.column_stack([table[f"{q}_{j} [{u}]"] for j in names])
            for q, u in (("q", "rad"), ("q_dot", "rad/s"), ("q_ddot", "rad/s^2"),
                         ("tau", "N m"))}
    model = pin.buildModelFromUrdf(urdf)
    data = model.createData()
    for i in range(0, len(table["t [s]"]), 97):
        ref = pin.rnea(model, data, cols["q"][i], cols["q_dot"][i], cols["q_ddot"][i])
        np.testing.assert_allclose(cols["tau"][i], ref, rtol=1e-9, atol=1e-9)
    if has_mpl:
        assert (tmp_path / "ur5.png").stat().st_size > 20_000


def test_data_paths_from_another_directory(tmp_path, monkeypatch):
    from mbs_dynamics import data
    monkeypatch.chdir(tmp_path)
    urdf = data.robot("arm7")
    assert urdf.is_absolute() and urdf.is_file()
    assert urdf.samefile(URDF)
    assert data.trajectory("arm7_example").samefile(TRAJ)
    assert data.config("arm7_sea").samefile(SEA_CFG) and data.config("arm7_vsa").samefile(VSA_CFG)
    assert data.trajectory("arm7_demo").is_file()
    listing = data.available()
    assert listing["robots"] == ["arm7", "quad12"] and "arm7_example" in listing["trajectories"]
    assert set(listing["configs"]) >= {"arm7_sea", "arm7_vsa"}
    # the CLI accepts them from here
    assert cli.main(["feedforward", str(urdf), str(data.trajectory("arm7_example")), "-o",
                     "x.csv", "--sea", str(data.config("arm7_sea")), "--rate", "20",
                     "--quiet"]) == 0
    with pytest.raises(ValueError, match="available: arm7"):
        data.robot("panda")
    with pytest.raises(ValueError, match="no directory part"):
        data.robot("../robots/arm7")


@pytest.mark.parametrize("script", ["readme_usage.py", "readme_feedforward.py", "readme_legged.py",
                                    "readme_simulate.py"])
def test_readme_examples_run_from_any_directory(tmp_path, script):
    """The README's Python examples (examples/*.py hold them verbatim) run from another cwd."""
    import subprocess
    path = Path(__file__).resolve().parents[1] / "examples" / script  # this checkout's examples
    if not path.exists():
        pytest.skip("examples/ not in this checkout")
    # run with the package as installed (or as the caller's PYTHONPATH has it), from elsewhere
    res = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                         cwd=tmp_path, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "Traceback" not in res.stderr


def test_feedforward_lock_drops_the_locked_joint_from_the_trajectory(tmp_path):
    """--lock JOINT=POS with a trajectory written for the full arm: the locked column is
    dropped; τ matches Pinocchio's reduced model (buildReducedModel at that position)."""
    pin = pytest.importorskip("pinocchio")
    from conftest import pin_model
    out = tmp_path / "l.csv"
    assert cli.main(["feedforward", str(URDF), str(TRAJ), "--lock", "arm7_joint2=0.3", "-o",
                     str(out), "--rate", "50", "--quiet"]) == 0
    header, table = _read_csv(out)
    kept = [j for j in JOINTS if j != "arm7_joint2"]
    assert not any("arm7_joint2" in h for h in header)
    cols = {q: np.column_stack([table[_column_name(header, q, j)] for j in kept])
            for q in ("q", "q_dot", "q_ddot", "tau")}
    model = pin_model(str(URDF), {"arm7_joint2": 0.3})
    data = model.createData()
    for i in range(0, len(table["t [s]"]), 20):
        ref = pin.rnea(model, data, cols["q"][i], cols["q_dot"][i], cols["q_ddot"][i])
        np.testing.assert_allclose(cols["tau"][i], ref, rtol=1e-9, atol=1e-9)


def test_info_reports_a_floating_base(capsys):
    from mbs_dynamics import data
    quad = str(data.robot("quad12"))
    assert cli.main(["info", quad]) == 0
    assert "base: fixed to the world (use --floating-base" in capsys.readouterr().out
    assert cli.main(["info", quad, "--floating-base"]) == 0
    out = capsys.readouterr().out
    assert "base: floating" in out and "nq = 19, nv = 18" in out
    assert cli.main(["info", quad, "--floating-base", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    masses = sum(float(m.get("value")) for m in ET.parse(quad).getroot().iter("mass"))
    assert d["base"] == "floating" and (d["nq"], d["nv"]) == (19, 18)
    assert d["moving_mass"] == pytest.approx(masses) == d["total_mass"]


def test_info_shows_the_mimic_map(capsys):
    xml = """<robot name="m"><link name="base"/>
      <joint name="a" type="revolute"><parent link="base"/><child link="l1"/><axis xyz="0 0 1"/>
        <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
      <link name="l1"><inertial><mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1"
        iyz="0" izz="0.1"/></inertial></link>
      <joint name="b" type="revolute"><parent link="l1"/><child link="l2"/><axis xyz="1 0 0"/>
        <limit lower="-1" upper="1" effort="1" velocity="1"/><mimic joint="a" multiplier="2"
        offset="0.5"/></joint>
      <link name="l2"><inertial><mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1"
        iyz="0" izz="0.1"/></inertial></link></robot>"""
    import tempfile
    with tempfile.NamedTemporaryFile("w", suffix=".urdf", delete=False) as f:
        f.write(xml)
    assert cli.main(["info", f.name]) == 0
    assert "[mimic: 2·a + 0.5, not a coordinate]" in capsys.readouterr().out
    assert cli.main(["info", f.name, "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["joints"][1]["mimic"] == {"master": "a", "multiplier": 2.0, "offset": 0.5}
    assert d["joints"][0]["mimic"] is None
