"""Issue 22, items 1–15: every defect of the fuzzing and soak campaign gets the right answer or a
one-line error naming the argument, file or field (CLI: exit 2, no traceback).

Oracles: the Robot's own entry checks (items 1, 2: the MimicRobot must match them), closed forms
(a free rigid body: q̈ = M⁻¹(τ − h) with M = diag(m I, Θ); a mimic chain's composed multiplier
is the product), per-thread copies of the same Robot (item 13), and resource measurements
(tracemalloc peaks, the number of URDF look-ups) instead of timings.
"""
from __future__ import annotations

import json
import threading
import tracemalloc

import numpy as np
import pytest

import mbs_dynamics as mbs
from mbs_dynamics import cli, data, demo
from mbs_dynamics.control.controller import FeedforwardController
from mbs_dynamics.control.enrich import INVALID_GOAL, EnrichmentError, TrajectoryEnricher
from mbs_dynamics.control.trajectory import Trajectory, TrajectoryError
from mbs_dynamics.kernels._data import BUSY_MESSAGE
from mbs_dynamics.model import limits
from mbs_dynamics.model.model import _resolve_mimics
from mbs_dynamics.model.urdf import MAX_MIMIC, URDFError, parse

ARM = data.robot("arm7")
ARM_NAMES = [f"arm7_joint{i}" for i in range(1, 8)]


# ------------------------------------------------------------------------------ URDF builders
def _link(name, m=1.0, I=0.01):
    if m is None:
        return f'<link name="{name}"/>'
    return (f'<link name="{name}"><inertial><mass value="{m}"/><origin xyz="0.05 0 0.1"/>'
            f'<inertia ixx="{I}" iyy="{I}" izz="{I}" ixy="0" ixz="0" iyz="0"/></inertial></link>')


def _joint(name, parent, child, axis="0 1 0", mimic=None, typ="revolute"):
    mm = "" if mimic is None else (f'<mimic joint="{mimic[0]}" multiplier="{mimic[1]}" '
                                   f'offset="{mimic[2] if len(mimic) > 2 else 0}"/>')
    return (f'<joint name="{name}" type="{typ}"><parent link="{parent}"/><child link="{child}"/>'
            f'<origin xyz="0 0 0.2"/><axis xyz="{axis}"/>'
            f'<limit lower="-3" upper="3" effort="10" velocity="5"/>{mm}</joint>')


def _robot(*parts):
    return '<robot name="r">' + "".join(parts) + "</robot>"


def _mimic_robot(k=2.0):
    """j1 (independent), j2 = k·j1, j3 (independent, another axis)."""
    return _robot(_link("b"), _link("a"), _link("c"), _link("d"),
                  _joint("j1", "b", "a"), _joint("j2", "a", "c", mimic=("j1", k)),
                  _joint("j3", "c", "d", axis="1 0 0"))


def _mimic_chain(n, k=1.0, offset=0.0):
    parts = [_link("l0")]
    for i in range(1, n + 1):
        parts += [_link(f"l{i}"), _joint(f"j{i}", f"l{i - 1}", f"l{i}",
                                         mimic=None if i == 1 else (f"j{i - 1}", k, offset))]
    return _robot(*parts)


@pytest.fixture(scope="module")
def mimic():
    return mbs.load_urdf(_mimic_robot())


def _calls(r, x, which):
    """Every MimicRobot method with ``x`` in the argument ``which``, zeros elsewhere."""
    z = np.zeros(r.nv)

    def pick(name):
        return x if name == which else z
    return {
        "inverse_dynamics": lambda: r.inverse_dynamics(pick("q"), pick("qd"), pick("qdd")),
        "forward_dynamics": lambda: r.forward_dynamics(pick("q"), pick("qd"), pick("tau")),
        "mass_matrix": lambda: r.mass_matrix(pick("q")),
        "coriolis_matrix": lambda: r.coriolis_matrix(pick("q"), pick("qd")),
        "mass_matrix_derivative": lambda: r.mass_matrix_derivative(pick("q"), pick("qd")),
        "gravity_torques": lambda: r.gravity_torques(pick("q")),
        "torque_derivatives": lambda: r.torque_derivatives(
            np.array([pick("q"), pick("qd"), pick("qdd"), z]) if which != "tau" else None),
        "batch inverse_dynamics": lambda: r.inverse_dynamics(
            pick("q")[None], pick("qd")[None], pick("qdd")[None]),
        "batch forward_dynamics": lambda: r.forward_dynamics(
            pick("q")[None], pick("qd")[None], pick("tau")[None]),
    }


ARGS = {"inverse_dynamics": ("q", "qd", "qdd"), "forward_dynamics": ("q", "qd", "tau"),
        "mass_matrix": ("q",), "coriolis_matrix": ("q", "qd"),
        "mass_matrix_derivative": ("q", "qd"), "gravity_torques": ("q",),
        "torque_derivatives": ("q", "qd", "qdd"),
        "batch inverse_dynamics": ("q", "qd", "qdd"),
        "batch forward_dynamics": ("q", "qd", "tau")}


# ---------------------------------------------------------------- items 1, 2: MimicRobot inputs
def test_item1_mimic_rejects_complex_input_like_robot(mimic):
    assert type(mimic).__name__ == "MimicRobot"
    full = mimic.full_robot
    with pytest.raises(TypeError, match="must be real"):   # the Robot's behaviour, the oracle
        full.inverse_dynamics(np.zeros(3, complex), np.zeros(3), np.zeros(3))
    x = np.array([0.1 + 1j, 0.2])
    for method, names in ARGS.items():
        for which in names:
            with pytest.raises(TypeError, match="must be real"):
                _calls(mimic, x, which)[method]()
    for bad in ([0.1 + 0j, 0.2], np.array([1, 2], dtype=np.complex64)):
        with pytest.raises(TypeError):
            mimic.forward_dynamics(np.zeros(2), np.zeros(2), bad)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_item2_mimic_rejects_nan_in_every_input(mimic, bad):
    for method, names in ARGS.items():
        for which in names:
            for pos in range(2):
                x = np.zeros(2)
                x[pos] = bad
                with pytest.raises(ValueError, match="NaN or inf"):
                    _calls(mimic, x, which)[method]()
                with pytest.raises(ValueError, match="NaN or inf"):   # lists: the slow path
                    _calls(mimic, list(x), which)[method]() if "batch" not in method \
                        else _calls(mimic, x, which)[method]()
    with pytest.raises(ValueError, match="tau contains NaN"):
        mimic.forward_dynamics([0.1, 0.2], [0.0, 0.0], [np.nan, 0.0])


def test_item2_mimic_valid_calls_still_agree_with_the_full_robot(mimic):
    """The projection identities of the module docstring, with the checks in place."""
    rng = np.random.default_rng(1)
    q, v, a = rng.uniform(-1, 1, (3, 2))
    G = mimic.G
    tau = mimic.inverse_dynamics(q, v, a)
    full = mimic.full_robot
    ref = G.T @ full.inverse_dynamics(mimic.expand(q), G @ v, G @ a)
    np.testing.assert_allclose(tau, ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(mimic.forward_dynamics(q, v, tau), a, rtol=1e-9, atol=1e-9)


# ------------------------------------------------------------------ item 7: absurd multipliers
@pytest.mark.parametrize("k", [-1e154, 1e154, 1e200, -1e300, 2e6])
def test_item7_absurd_mimic_multiplier_is_a_urdf_error_naming_the_joint(k):
    with pytest.raises(URDFError, match=r"joint 'j2' <mimic multiplier>.*1e\+06"):
        mbs.load_urdf(_mimic_robot(k))


def test_item7_mimic_offset_and_composed_chain_are_bounded():
    with pytest.raises(URDFError, match="joint 'j2' <mimic offset>"):
        mbs.load_urdf(_robot(_link("b"), _link("a"), _link("c"), _joint("j1", "b", "a"),
                             _joint("j2", "a", "c", mimic=("j1", 1.0, 1e7))))
    # each multiplier 1000 is allowed; their product along the chain (1e9 at j4) is not
    with pytest.raises(URDFError, match="joint 'j4': its mimic chain composes to multiplier 1e"):
        mbs.load_urdf(_mimic_chain(5, k=1000.0))
    r = mbs.load_urdf(_mimic_chain(3, k=1000.0))       # 1e6 exactly: the documented bound
    assert r.mimic_joints["j3"] == ("j1", MAX_MIMIC, 0.0)
    r = mbs.load_urdf(_mimic_robot(-1e6))              # the bound itself loads and is finite
    assert np.all(np.isfinite(r.forward_dynamics([0.1, 0.2], [0.0, 0.0], [0.0, 0.0])))


# ----------------------------------------------------------------- item 8: linear mimic chains
class _CountingDict(dict):
    lookups = 0

    def __getitem__(self, key):
        _CountingDict.lookups += 1
        return super().__getitem__(key)


def test_item8_mimic_chain_resolution_is_linear():
    counts = {}
    for n in (250, 1000):
        u = parse(_mimic_chain(n, k=1.0, offset=0.001))
        u.joints = _CountingDict(u.joints)
        _CountingDict.lookups = 0
        res = _resolve_mimics(u, {})
        counts[n] = _CountingDict.lookups
        assert res[f"j{n}"] == ("j1", 1.0, pytest.approx(0.001 * (n - 1), rel=1e-12))
    assert counts[1000] <= 4 * counts[250] * 1.1   # linear (a quadratic one grows 16x)


def test_item8_a_2000_joint_mimic_chain_loads_and_composes():
    r = mbs.load_urdf(_mimic_chain(2000, k=-1.0, offset=0.0))
    assert r.n == 1
    k = r.mimic_joints
    assert k["j2000"] == ("j1", -1.0, 0.0) and k["j1999"] == ("j1", 1.0, 0.0)


# -------------------------------------------------------- items 9, 10: floating-base mass check
def test_item9_heavy_inertia_light_body_is_a_valid_floating_base():
    body = _robot('<link name="b"><inertial><mass value="1"/><inertia ixx="1e12" iyy="1e12" '
                  'izz="1e12" ixy="0" ixz="0" iyz="0"/></inertial></link>')
    r = mbs.load_urdf(body, floating_base=True)
    q = np.r_[0, 0, 0, 0, 0, 0, 1.0]
    tau = np.r_[2.0, -3.0, 4.0, 1e12, 2e12, -3e12]      # (force, torque) in the base frame
    qdd = r.forward_dynamics(q, np.zeros(6), tau)
    # free rigid body at rest, COM at the origin: a = f/m + g, α = Θ⁻¹ m
    np.testing.assert_allclose(qdd, np.r_[2.0, -3.0, 4.0 - 9.81, 1.0, 2.0, -3.0], rtol=1e-12)


def test_item10_massless_floating_base_with_one_joint_is_refused_at_load():
    base = _robot(_link("b", None), _link("c"), _joint("j", "b", "c"))
    with pytest.raises(URDFError, match="floating base moves no mass.*give the base link"):
        mbs.load_urdf(base, floating_base=True)
    assert mbs.load_urdf(base).n == 1                    # with a fixed base it is a fine arm
    # a massless base carrying a body through a fixed joint is a rigid body: it loads
    rigid = _robot(_link("b", None), _link("c"), _joint("j", "b", "c", typ="fixed"))
    r = mbs.load_urdf(rigid, floating_base=True)
    assert np.all(np.isfinite(r.forward_dynamics(np.r_[0, 0, 0, 0, 0, 0, 1.0], np.zeros(6),
                                                 np.zeros(6))))


# ---------------------------------------------------------- item 11: floating base in control
def test_item11_controller_and_enricher_refuse_a_floating_base_robot():
    fb = mbs.load_urdf(data.robot("quad12"), floating_base=True)
    with pytest.raises(ValueError, match="FeedforwardController needs a fixed-base robot"):
        FeedforwardController(fb)
    with pytest.raises(ValueError, match="TrajectoryEnricher needs a fixed-base robot"):
        TrajectoryEnricher(fb)
    ctl = FeedforwardController(mbs.load_urdf(ARM))
    with pytest.raises(ValueError, match="fixed-base"):   # nor by a model swap
        ctl.swap_robot(fb)
    assert ctl.robot.floating_base is False


# ------------------------------------------------------ items 3, 4: enrichment, huge numbers
def _traj(p0, p1, t1=1.0, t0=0.0, key="positions"):
    z = [0.0] * 7
    pts = [{"time_from_start": t0, "positions": z}, {"time_from_start": t1, "positions": z}]
    pts[0][key] = p0
    pts[1][key] = p1
    return {"joint_names": ARM_NAMES, "points": pts}


@pytest.fixture(scope="module")
def enricher():
    return TrajectoryEnricher(mbs.load_urdf(ARM))


@pytest.mark.parametrize("case, words", [
    (_traj([10 ** 400] + [0] * 6, [0] * 7), r"points\[0\]\.positions\[0\] is an integer too"),
    (_traj([0] * 7, [0] * 6 + [-10 ** 400]), r"points\[1\]\.positions\[6\] is an integer too"),
    (_traj([0] * 7, [0, 10 ** 400] + [0] * 5, key="velocities"),
     r"points\[1\]\.velocities\[1\] is an integer too"),
    (_traj([0] * 7, [0] * 7, t1=10 ** 400), r"points\[1\]\.time_from_start is an integer too"),
    (_traj([0] * 7, [0] * 7, t1={"sec": 10 ** 400, "nanosec": 0}),
     r"points\[1\]\.time_from_start .* too large"),
])
def test_item3_huge_integers_name_the_field(enricher, case, words):
    with pytest.raises(EnrichmentError, match=words) as err:
        enricher.enrich(case)
    assert err.value.error_code == INVALID_GOAL
    with pytest.raises(TrajectoryError, match=words.split(" is")[0]):
        Trajectory.from_dict(case)


@pytest.mark.parametrize("p0, p1, t1", [
    ([1e300] + [0] * 6, [-1e300] + [0] * 6, 1e-3),
    ([0] * 7, [1e-10] + [0] * 6, 1e-300),
    ([1e308] + [0] * 6, [-1e308] + [0] * 6, 1.0),
])
def test_item4_spline_overflow_is_an_enrichment_error_with_its_code(enricher, p0, p1, t1):
    with pytest.raises(EnrichmentError, match=r"spline between points\[0\].*overflows.*not "
                                              r"finite") as err:
        enricher.enrich(_traj(p0, p1, t1))
    assert err.value.error_code == INVALID_GOAL
    assert isinstance(err.value, ValueError)


def test_item4_motionless_segment_of_tiny_duration_is_fine(enricher):
    res = enricher.enrich(_traj([0.0] * 7, [0.0] * 7, 1e-300))
    assert np.all(np.isfinite(res.effort))


# ------------------------------------------------------------------ items 5, 6, 14: the CLI
def _ff(tmp_path, capsys, traj_file, *extra):
    code = cli.main(["feedforward", str(ARM), str(traj_file), "-o", str(tmp_path / "o.csv"),
                     "--quiet", *extra])
    err = capsys.readouterr().err
    return code, err


def _one_line_exit_2(code, err, path, *words):
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mbs-dynamics: error: "), err
    assert "Traceback" not in err and str(path) in err, err
    for w in words:
        assert w in err, err


@pytest.mark.parametrize("suffix, text", [
    (".json", "[" * 100000 + "]" * 100000),
    (".yaml", "[" * 100000 + "]" * 100000),
    (".yaml", "a:\n" + "".join("  " * i + "- \n" for i in range(1, 3000))),
    (".json", '{"a": ' * 5000 + "1" + "}" * 5000),
])
def test_item5_deeply_nested_trajectory_is_one_line(tmp_path, capsys, suffix, text):
    f = tmp_path / f"nested{suffix}"
    f.write_text(text)
    code, err = _ff(tmp_path, capsys, f)
    _one_line_exit_2(code, err, f)
    assert "nested" in err or "nesting" in err


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_item6_400_digit_integer_names_file_and_field(tmp_path, capsys, suffix):
    f = tmp_path / f"big{suffix}"
    big = "1" + "0" * 400
    z = ", ".join(["0"] * 7)
    if suffix == ".json":
        f.write_text(f'{{"joint_names": {json.dumps(ARM_NAMES)}, "points": ['
                     f'{{"time_from_start": 0, "positions": [{z}]}}, '
                     f'{{"time_from_start": 1, "positions": [0, 0, {big}, 0, 0, 0, 0]}}]}}')
    else:
        f.write_text(f"joint_names: {ARM_NAMES}\npoints:\n- {{time_from_start: 0, positions: "
                     f"[{z}]}}\n- {{time_from_start: 1, positions: [0, 0, {big}, 0, 0, 0, 0]}}\n")
    code, err = _ff(tmp_path, capsys, f)
    _one_line_exit_2(code, err, f, "points[1].positions[2]", "too large")


@pytest.mark.parametrize("p1, ok", [([1.0] + [0.0] * 6, False), ([0.0] * 7, True)])
def test_item14_time_step_of_1e_300(tmp_path, capsys, p1, ok):
    f = tmp_path / "dt.json"
    z = [0.0] * 7
    f.write_text(json.dumps({"joint_names": ARM_NAMES, "points": [
        {"time_from_start": 0, "positions": z}, {"time_from_start": 1e-300, "positions": p1}]}))
    code, err = _ff(tmp_path, capsys, f)
    if ok:
        assert code == 0, err
    else:
        _one_line_exit_2(code, err, f, "points[0]", "points[1]", "overflows")


def test_fresh_install_spline_overflow_in_feedforward_exits_2_naming_the_file(tmp_path, capsys):
    f = tmp_path / "overflow.json"
    z = [0.0] * 7
    f.write_text(json.dumps({"joint_names": ARM_NAMES, "points": [
        {"time_from_start": 0, "positions": [1e300] + z[1:]},
        {"time_from_start": 1e-3, "positions": [-1e300] + z[1:]}]}))
    code, err = _ff(tmp_path, capsys, f)
    _one_line_exit_2(code, err, f, "arm7_joint1", "overflows")
    f2 = tmp_path / "huge.json"        # a finite spline whose torques overflow
    f2.write_text(json.dumps({"joint_names": ARM_NAMES, "points": [
        {"time_from_start": 0, "positions": z},
        {"time_from_start": 1, "positions": [1e200] + z[1:]}]}))
    code, err = _ff(tmp_path, capsys, f2)
    _one_line_exit_2(code, err, f2, "not finite")


# ---------------------------------------------------------------- item 15: resource limits
def _bomb(levels=9):
    text = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    prev = "a"
    for c in "bcdefghijk"[:levels - 1]:
        text += f"{c}: &{c} [" + ",".join([f"*{prev}"] * 9) + "]\n"
        prev = c
    return text + f"joint_names: *{prev}\npoints: *{prev}\n"


def _peak_mib(f):
    tracemalloc.start()
    try:
        f()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak / 2 ** 20


def test_item15_alias_bomb_is_refused_before_building(tmp_path, capsys):
    f = tmp_path / "bomb.yaml"
    f.write_text(_bomb())
    assert len(f.read_bytes()) < 600
    with pytest.raises(limits.FileLimitError, match="bomb.yaml.*aliases are expanded"):
        Trajectory.load(f)
    peak = _peak_mib(lambda: pytest.raises(ValueError, Trajectory.load, f))
    assert peak < 20, peak
    code, err = _ff(tmp_path, capsys, f)
    _one_line_exit_2(code, err, f, "MAX_NODES")
    # the actuator YAML goes through the same reader
    code, err = _ff(tmp_path, capsys, data.trajectory("arm7_example"), "--sea", str(f))
    _one_line_exit_2(code, err, f)


def test_item15_alias_count_and_entries_are_limited(tmp_path):
    many = "x: &x 1\nl: [" + ", ".join(["*x"] * (limits.MAX_ALIASES + 1)) + "]\n"
    with pytest.raises(limits.FileLimitError, match="YAML aliases"):
        limits.parse_yaml(many, "many.yaml")
    long = "[" + ",".join(["0"] * (limits.MAX_ITEMS + 1)) + "]"
    with pytest.raises(limits.FileLimitError, match="more than 100000 entries"):
        limits.parse_json(long, "long.json")
    with pytest.raises(limits.FileLimitError, match="more than 100000 entries"):
        limits.parse_yaml(long, "long.yaml")
    ok = "[" + ",".join(["0"] * limits.MAX_ITEMS) + "]"
    assert len(limits.parse_json(ok, "ok.json")) == limits.MAX_ITEMS
    assert limits.parse_yaml("a: &a [1, 2]\nb: *a\n", "fine.yaml") == {"a": [1, 2], "b": [1, 2]}


def test_item15_million_point_trajectory_is_refused_fast_and_small(tmp_path, capsys):
    f = tmp_path / "million.json"
    pts = ",".join('{"time_from_start":%d,"positions":[0,0,0,0,0,0,0]}' % i
                   for i in range(10 ** 6))
    f.write_text('{"joint_names":%s,"points":[%s]}' % (json.dumps(ARM_NAMES), pts))
    del pts
    peak = _peak_mib(lambda: pytest.raises(limits.FileLimitError, Trajectory.load, f))
    assert peak < 20, peak
    code, err = _ff(tmp_path, capsys, f)
    _one_line_exit_2(code, err, f, "MAX_FILE_BYTES")
    # under the size limit, the 100,001st point stops the scan (a compact file of one joint)
    g = tmp_path / "many.yaml"
    g.write_text("joint_names: [a]\npoints:\n" + "".join(
        f"- {{time_from_start: {i}, positions: [0]}}\n" for i in range(limits.MAX_POINTS + 1)))
    with pytest.raises(limits.FileLimitError, match="entries"):
        Trajectory.load(g)
    # an in-memory message with 10^6 points: refused before any point is converted
    msg = {"joint_names": ARM_NAMES, "points": [{}] * 10 ** 6}
    enricher = TrajectoryEnricher(mbs.load_urdf(ARM))
    with pytest.raises(EnrichmentError, match="1000000 points, more than the limit"):
        enricher.enrich(msg)


def test_item15_urdf_files_have_the_size_limit(tmp_path, monkeypatch):
    monkeypatch.setattr(limits, "MAX_FILE_BYTES", 1000)
    f = tmp_path / "big.urdf"
    f.write_text(_robot(*[_link(f"l{i}") for i in range(20)]))
    with pytest.raises(URDFError, match="big.urdf.*more than the limit"):
        mbs.load_urdf(f)
    with pytest.raises(URDFError, match="URDF text.*more than the limit"):
        mbs.load_urdf(f.read_text())


# ------------------------------------------------------------- item 12: long --robot names
def test_item12_demo_output_names_are_bounded(tmp_path, capsys):
    long = tmp_path / ("r" * 240 + ".urdf")
    long.write_bytes(ARM.read_bytes() if hasattr(ARM, "read_bytes") else open(ARM, "rb").read())
    other = tmp_path / ("r" * 239 + "s.urdf")
    a, b = demo.file_label(long.stem), demo.file_label(other.stem)
    assert len(a) <= demo.MAX_LABEL and len(b) <= demo.MAX_LABEL and a != b
    assert demo.file_label("arm7") == "arm7" and "/" not in demo.file_label("a b/c")
    out = tmp_path / "out"
    assert cli.main(["demo", "--robot", str(long), "--out", str(out), "--duration", "0.1",
                     "--no-plots"]) == 0, capsys.readouterr().err
    names = [p.name for p in out.iterdir()]
    assert names and max(len(n) for n in names) <= demo.MAX_LABEL + 30, names


# ---------------------------------------------------------------- item 13: threads
def _thread_run(robots, n_threads=8, calls=1250, seed=0):
    """Each thread makes ``calls`` mixed calls on ``robots[t]``; returns (ok, busy, wrong, other)
    counts. References come from a separate copy, computed before the threads start."""
    arm = robots[0]
    ref_robot = arm.copy()
    rng = np.random.default_rng(seed)
    N = 3000        # large enough for the OpenMP batch path and a GIL-free forward dynamics
    Q, V, A = rng.uniform(-1, 1, (3, N, arm.n))
    qs = rng.uniform(-1, 1, (8, arm.n))
    ref = {
        "idb": ref_robot.inverse_dynamics(Q, V, A),
        "id": ref_robot.inverse_dynamics(Q[0], V[0], A[0]),
        "M": ref_robot.mass_matrix(Q[1]),
        "C": ref_robot.coriolis_matrix(Q[2], V[2]),
        "g": ref_robot.gravity_torques(Q[3]),
    }
    ref["fdb"] = ref_robot.forward_dynamics(Q[:500], V[:500], ref["idb"][:500])
    ref["fd"] = ref_robot.forward_dynamics(Q[0], V[0], ref["id"])
    for k in range(6):
        ref[f"td{k}"] = ref_robot.torque_derivatives(qs[:k + 3])
    ref["tdb"] = ref_robot.torque_derivatives(np.repeat(qs[None, :6], 400, axis=0))
    ref["J"] = ref_robot.frame_jacobian(Q[:200], "arm7_tool", "hybrid")
    ref["Y"] = ref_robot.regressor(Q[:50], V[:50], A[:50])
    ref["dID"] = ref_robot.inverse_dynamics_derivatives(Q[4], V[4], A[4])
    ref["G"] = ref_robot.christoffel(Q[5])
    ref["H"] = ref_robot.kinematic_hessian(Q[6], "arm7_tool", "spatial")
    ref["FD"] = ref_robot.frame_derivatives(qs[:5], "arm7_tool", "mixed")
    tdb_in = np.repeat(qs[None, :6], 400, axis=0)
    counts = np.zeros((n_threads, 4), dtype=int)
    crashes = []

    def work(t):
        r = robots[t]
        g = np.random.default_rng(seed + t)
        try:
            for i in range(calls):
                kind = g.integers(0, 16)
                try:
                    if kind == 0:
                        got, want = r.inverse_dynamics(Q, V, A), ref["idb"]
                    elif kind == 1:
                        got = r.forward_dynamics(Q[:500], V[:500], ref["idb"][:500])
                        want = ref["fdb"]
                    elif kind == 2:
                        got, want = r.inverse_dynamics(Q[0], V[0], A[0]), ref["id"]
                    elif kind == 3:
                        got, want = r.forward_dynamics(Q[0], V[0], ref["id"]), ref["fd"]
                    elif kind == 4:
                        got, want = r.mass_matrix(Q[1]), ref["M"]
                    elif kind == 5:
                        got, want = r.coriolis_matrix(Q[2], V[2]), ref["C"]
                    elif kind == 6:
                        got, want = r.gravity_torques(Q[3]), ref["g"]
                    elif kind == 10:
                        got, want = r.frame_jacobian(Q[:200], "arm7_tool", "hybrid"), ref["J"]
                    elif kind == 7:
                        got, want = r.torque_derivatives(tdb_in), ref["tdb"]
                    elif kind == 11:
                        got, want = r.regressor(Q[:50], V[:50], A[:50]), ref["Y"]
                    elif kind == 12:
                        got = np.stack(r.inverse_dynamics_derivatives(Q[4], V[4], A[4]))
                        want = np.stack(ref["dID"])
                    elif kind == 13:
                        got, want = r.christoffel(Q[5]), ref["G"]
                    elif kind == 14:
                        got = r.kinematic_hessian(Q[6], "arm7_tool", "spatial")
                        want = ref["H"]
                    elif kind == 15:
                        got = r.frame_derivatives(qs[:5], "arm7_tool", "mixed")
                        want = ref["FD"]
                    else:                      # orders 0..5: the workspace grows meanwhile
                        k = int(g.integers(0, 6))
                        got, want = r.torque_derivatives(qs[:k + 3]), ref[f"td{k}"]
                    ok = np.allclose(got, want, rtol=1e-9, atol=1e-9)
                    counts[t, 0 if ok else 2] += 1
                except RuntimeError as e:
                    assert str(e) == BUSY_MESSAGE
                    counts[t, 1] += 1
        except Exception as e:  # noqa: BLE001 - reported below
            crashes.append(repr(e))
            counts[t, 3] += 1

    threads = [threading.Thread(target=work, args=(t,)) for t in range(n_threads)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not crashes, crashes[:3]
    return counts.sum(axis=0)


def test_item13_shared_robot_gives_right_results_or_the_busy_error():
    arm = mbs.load_urdf(ARM)
    ok, busy, wrong, other = _thread_run([arm] * 8)
    assert wrong == 0 and other == 0
    assert ok > 0                     # (how many are refused depends on the timing)
    assert "in use by another thread" in BUSY_MESSAGE and "robot.copy()" in BUSY_MESSAGE
    assert not arm.data.in_use        # every entry gave the workspace back


def test_item13_per_thread_copies_are_all_right_without_errors():
    arm = mbs.load_urdf(ARM)
    ok, busy, wrong, other = _thread_run([arm.copy() for _ in range(8)])
    assert (busy, wrong, other) == (0, 0, 0) and ok == 8 * 1250


def test_item13_shared_mimic_robot_and_the_acquire_api():
    r = mbs.load_urdf(_mimic_robot())
    ref = r.copy()
    rng = np.random.default_rng(3)
    X = rng.uniform(-1, 1, (50, 3, 2))
    want = [ref.forward_dynamics(*x) for x in X]
    bad, busy = [], [0]

    def work():
        for _ in range(40):
            for x, w in zip(X, want):
                try:
                    if not np.allclose(r.forward_dynamics(*x), w, rtol=1e-9, atol=1e-12):
                        bad.append(x)
                except RuntimeError as e:
                    assert str(e) == BUSY_MESSAGE
                    busy[0] += 1

    ths = [threading.Thread(target=work) for _ in range(4)]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    assert not bad
    # the documented API: a thread holding the workspace makes the others' calls fail fast
    d = r.full_robot.data
    held, release = threading.Event(), threading.Event()

    def holder():
        with d:
            assert d.in_use
            held.set()
            release.wait(10)

    h = threading.Thread(target=holder)
    h.start()
    held.wait(10)
    try:
        with pytest.raises(RuntimeError, match="in use by another thread"):
            r.mass_matrix([0.1, 0.2])
        with pytest.raises(RuntimeError, match="in use by another thread"):
            r.full_robot.gravity_torques(np.zeros(3))
        np.testing.assert_allclose(r.copy().mass_matrix([0.1, 0.2]), ref.mass_matrix([0.1, 0.2]))
    finally:
        release.set()
        h.join()
    assert not d.in_use
    d.acquire()               # re-entrant for the holder: its own calls pass
    try:
        assert np.all(np.isfinite(r.mass_matrix([0.1, 0.2])))
    finally:
        d.release()
    assert not d.in_use


def test_item3_huge_integers_elsewhere_are_value_errors():
    """The same OverflowError at the other float conversions of the public API."""
    big = 10 ** 400
    traj = Trajectory(ARM_NAMES, [0.0, 1.0], [[0.0] * 7, [0.1] * 7])
    for call in (lambda: traj.sample(big), lambda: traj.sample_many([0.0, big]),
                 lambda: traj.times_at_rate(big),
                 lambda: Trajectory(ARM_NAMES, [0, big], [[0.0] * 7, [0.1] * 7]),
                 lambda: TrajectoryEnricher(mbs.load_urdf(ARM), sample_period=big),
                 lambda: FeedforwardController(mbs.load_urdf(ARM), joint_state_timeout=big),
                 lambda: mbs.load_urdf(ARM, locked_joints={"arm7_joint7": big}),
                 lambda: mbs.load_urdf(ARM).with_payload("arm7_link7", big),
                 lambda: mbs.load_urdf(ARM).inverse_dynamics([big] + [0] * 6, [0] * 7, [0] * 7),
                 lambda: mbs.load_urdf(ARM).inverse_dynamics(
                     np.zeros(7), np.zeros(7), np.zeros(7), f_ext={"arm7_link7": [big] + [0] * 5}),
                 lambda: mbs.load_urdf(_mimic_robot()).mass_matrix([big, 0])):
        with pytest.raises(ValueError):
            call()
    ctl = FeedforwardController(mbs.load_urdf(ARM))
    assert ctl.set_joint_state(ARM_NAMES, [big] + [0] * 6, stamp=0.0) is False
    assert ctl.set_joint_state(ARM_NAMES, [0.0] * 7, velocities=[big] + [0] * 6, stamp=0.0) \
        is False
    assert ctl.set_joint_state(ARM_NAMES, [0.0] * 7, stamp=big) is False
    out = ctl.update(big)
    assert out is None or np.all(np.isfinite(out.tau))


def test_item7_mimic_inputs_whose_expansion_would_overflow_are_value_errors(mimic):
    """|k q| must stay finite: an input above 1e306 / max|k| is refused naming it (no NumPy
    overflow warning, no inf reaching the kernels)."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for which in ("q", "qd", "qdd"):
            x = np.array([1e308, 0.0])
            with pytest.raises(ValueError, match=f"^{which} has an entry of magnitude 1e\\+308"):
                _calls(mimic, x, which)["inverse_dynamics"]()
        with pytest.raises(ValueError, match="^qs has an entry"):
            mimic.torque_derivatives(np.full((4, 2), 1e308))
        assert np.all(np.isfinite(mimic.mass_matrix([1e300, 0.0])))   # below the bound: fine


def test_item10_base_free_to_translate_through_a_planar_2r_is_refused():
    """Base with rotational inertia but no mass, carrying a 1 kg body through two parallel
    revolute joints: the body can stay put while the base slides in x-y, so the base's
    articulated inertia is singular in those directions (found by a URDF fuzz of this fix)."""
    base = ('<link name="b"><inertial><mass value="0"/><inertia ixx="1" iyy="1" izz="1e12" ixy="0" '
            'ixz="0" iyz="0"/></inertial></link>')
    lim = '<limit lower="-3" upper="3" effort="10" velocity="5"/>'
    r2 = _robot(base, _link("m", None), _link("c"),
                f'<joint name="j1" type="revolute"><parent link="b"/><child link="m"/><origin '
                f'xyz="0.1 0 0"/><axis xyz="0 0 1"/>{lim}</joint>',
                f'<joint name="j2" type="revolute"><parent link="m"/><child link="c"/><origin '
                f'xyz="0.3 0 0"/><axis xyz="0 0 1"/>{lim}</joint>')
    with pytest.raises(URDFError, match="floating base moves no mass"):
        mbs.load_urdf(r2, floating_base=True)


@pytest.mark.filterwarnings("ignore:.*triangle inequality")
def test_item9_anisotropic_but_regular_floating_bases_load():
    """Scale-aware in both directions: a thin rod (1e-8 kg m² about its axis) and a heavy flywheel
    on a light body are regular; forward dynamics inverts inverse dynamics on them (residual)."""
    for I in ("1e-8 1 1", "1e6 1e6 0.01", "1 1 1e12"):
        ixx, iyy, izz = I.split()
        body = _robot(f'<link name="b"><inertial><mass value="1"/><inertia ixx="{ixx}" '
                      f'iyy="{iyy}" izz="{izz}" ixy="0" ixz="0" iyz="0"/></inertial></link>',
                      _link("c"), _joint("j", "b", "c"))
        r = mbs.load_urdf(body, floating_base=True)
        rng = np.random.default_rng(4)
        q = np.r_[0.1, 0.2, 0.3, 0, 0, 0, 1.0, 0.4]
        v, a = rng.uniform(-1, 1, (2, r.nv))
        tau = r.inverse_dynamics(q, v, a)
        qdd = r.forward_dynamics(q, v, tau)       # backward stable: τ is reproduced (M may
        back = r.inverse_dynamics(q, v, qdd)      # have a condition number of 1e12 here)
        np.testing.assert_allclose(back, tau, rtol=0, atol=1e-9 * np.abs(tau).max())


def _every_kernel_call(r):
    """One call of every public method of ``r`` that reaches a compiled kernel."""
    rng = np.random.default_rng(7)
    q, v, a = rng.uniform(-0.5, 0.5, (3, r.nv))
    qs = rng.uniform(-0.5, 0.5, (4, r.nv))
    Q = np.tile(q, (3, 1))
    f = r.frame_names[-1]
    return {
        "inverse_dynamics": lambda: r.inverse_dynamics(q, v, a),
        "inverse_dynamics batch": lambda: r.inverse_dynamics(Q, Q, Q),
        "inverse_dynamics spatial": lambda: r.inverse_dynamics(q, v, a, representation="spatial"),
        "inverse_dynamics hybrid batch": lambda: r.inverse_dynamics(Q, Q, Q,
                                                                    representation="hybrid"),
        "forward_dynamics": lambda: r.forward_dynamics(q, v, a),
        "forward_dynamics batch": lambda: r.forward_dynamics(Q, Q, Q),
        "torque_derivatives": lambda: r.torque_derivatives(qs),
        "torque_derivatives batch": lambda: r.torque_derivatives(qs[None].repeat(2, 0)),
        "mass_matrix": lambda: r.mass_matrix(q),
        "coriolis_matrix": lambda: r.coriolis_matrix(q, v),
        "mass_matrix_derivative": lambda: r.mass_matrix_derivative(q, v),
        "gravity_torques": lambda: r.gravity_torques(q),
        "frame_placement": lambda: r.frame_placement(q, f),
        "frame_velocity": lambda: r.frame_velocity(q, v, f),
        "frame_jacobian": lambda: r.frame_jacobian(q, f),
        "frame_jacobian_derivative": lambda: r.frame_jacobian_derivative(q, v, f),
        "frame_acceleration": lambda: r.frame_acceleration(q, v, a, f),
        "christoffel": lambda: r.christoffel(q),
        "frame_derivatives": lambda: r.frame_derivatives(qs, f),
        "kinematic_hessian": lambda: r.kinematic_hessian(q, f),
    }


@pytest.mark.parametrize("source", ["arm7", "mimic"])
def test_item13_every_kernel_entry_refuses_while_another_thread_holds_the_robot(source):
    r = mbs.load_urdf(ARM) if source == "arm7" else mbs.load_urdf(_mimic_robot())
    d = r.data if source == "arm7" else r.full_robot.data
    calls = _every_kernel_call(r)
    want = {k: f() for k, f in calls.items()}       # unheld: they run
    held, release = threading.Event(), threading.Event()

    def holder():
        with d:
            held.set()
            release.wait(10)

    h = threading.Thread(target=holder)
    h.start()
    held.wait(10)
    try:
        for name, f in calls.items():
            with pytest.raises(RuntimeError, match="in use by another thread"):
                f()
    finally:
        release.set()
        h.join()
    with d:                                         # the holder's own calls pass (re-entrant)
        for name, f in calls.items():
            np.testing.assert_allclose(f(), want[name], rtol=1e-12, atol=1e-12, err_msg=name)
    assert not d.in_use
