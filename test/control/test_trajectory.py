"""Tests of mbs_dynamics.control.trajectory: C⁴ interpolation, end conditions, I/O, every error path.

Oracles: analytic polynomials (the construction must reproduce quadratic motion exactly), the
knot-state rules written out independently, finite differences.
"""

import json

import numpy as np
import pytest

from mbs_dynamics.control.trajectory import Trajectory

NAMES = ["j1", "j2", "j3"]
TIMES = [0.0, 0.4, 1.1, 1.5, 2.7, 3.0]


def _positions(seed=1, m=len(TIMES), n=3):
    return np.random.default_rng(seed).uniform(-1.5, 1.5, size=(m, n))


def _variants():
    """Trajectories with nothing, velocities, velocities + accelerations prescribed."""
    P = _positions()
    rng = np.random.default_rng(2)
    V = rng.normal(size=P.shape)
    A = rng.normal(size=P.shape) * 3
    vel_some = [None, V[1], None, V[3], None, None]
    acc_some = [A[0], None, None, A[3], A[4], None]
    return {
        "plain": Trajectory(NAMES, TIMES, P),
        "velocities": Trajectory(NAMES, TIMES, P, velocities=V),
        "vel+acc": Trajectory(NAMES, TIMES, P, velocities=V, accelerations=A),
        "mixed": Trajectory(NAMES, TIMES, P, velocities=vel_some, accelerations=acc_some),
        "uneven": Trajectory(NAMES, [0.0, 0.05, 0.1, 2.0, 2.3, 5.0], P),
    }


@pytest.mark.parametrize("name", list(_variants()))
def test_continuity_across_knots(name):
    """q..q'''' from both sides of every interior knot (one ulp apart) agree to 1e-9, relative
    to each derivative's peak over the trajectory (at least 1)."""
    tr = _variants()[name]
    for tk in tr.times[1:-1]:
        left = tr.sample(np.nextafter(tk, -np.inf))
        right = tr.sample(np.nextafter(tk, np.inf))
        jump = np.abs(left - right).max(axis=1)
        assert np.all(jump <= 1e-9 * _peak(tr)), (name, tk, jump)


def _peak(tr):
    """max(1, peak |q⁽ᵈ⁾|) over the trajectory, d = 0..4."""
    ts = np.linspace(tr.start_time, tr.end_time, 5001)
    return np.maximum(1.0, np.abs(tr.sample_many(ts)).max(axis=(0, 2)))


@pytest.mark.parametrize("name", list(_variants()))
def test_waypoints_hit(name):
    tr = _variants()[name]
    for tk, pk in zip(tr.times, tr.positions):
        np.testing.assert_allclose(tr.sample(tk)[0], pk, rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", list(_variants()))
def test_derivatives_match_finite_differences(name):
    tr = _variants()[name]
    rng = np.random.default_rng(3)
    h = 1e-6
    for t in rng.uniform(tr.start_time + 1e-3, tr.end_time - 1e-3, size=20):
        if np.min(np.abs(tr.times - t)) < 2 * h:
            continue
        fd = (tr.sample(t + h) - tr.sample(t - h)) / (2 * h)
        ref = tr.sample(t)[1:]
        scale = np.abs(tr.sample_many(np.linspace(tr.start_time, tr.end_time, 200))[:, 1:]).max(
            axis=(0, 2))
        err = np.abs(fd[:4] - ref).max(axis=1) / scale
        assert np.all(err < 1e-6), (name, t, err)


def test_reproduces_quadratic_motion():
    """q = a + b t + c t² (monotone here, so the velocity guard is inactive) with its velocity
    and acceleration given at the two end points only: every knot state is the exact one (Bessel's
    rule is exact for parabolas, jerk = snap = 0), so the curve is the parabola."""
    t = np.array([0.0, 0.3, 1.0, 1.2, 2.0, 2.9])
    a, b, c = np.array([0.1, -0.2]), np.array([0.5, -1.5]), np.array([0.2, 0.1])
    P = a + np.outer(t, b) + np.outer(t ** 2, c)
    V = b + 2 * np.outer(t, c)
    vel = [V[0], None, None, None, None, V[-1]]
    acc = [2 * c, None, None, None, None, 2 * c]
    tr = Trajectory(["x", "y"], t, P, velocities=vel, accelerations=acc)
    ts = np.linspace(0, 2.9, 59)
    S = tr.sample_many(ts)
    np.testing.assert_allclose(S[:, 0], a + np.outer(ts, b) + np.outer(ts ** 2, c), atol=1e-12)
    np.testing.assert_allclose(S[:, 1], b + 2 * np.outer(ts, c), atol=1e-11)
    np.testing.assert_allclose(S[:, 2], np.tile(2 * c, (59, 1)), atol=1e-9)
    np.testing.assert_allclose(S[:, 3:], 0, atol=1e-7)


def test_knot_states_follow_the_documented_rules():
    """Interior knots: Bessel velocity (limited) and acceleration; jerk = snap = 0."""
    t = np.array([0.0, 1.0, 1.5, 3.0, 3.2])
    P = np.array([[0.0], [1.0], [1.2], [0.5], [0.6]])
    tr = Trajectory(["x"], t, P)
    m = np.diff(P[:, 0]) / np.diff(t)
    for k in (1, 2, 3):
        hl, hr = t[k] - t[k - 1], t[k + 1] - t[k]
        ml, mr = m[k - 1], m[k]
        v = (hr * ml + hl * mr) / (hl + hr)
        if ml * mr <= 0:
            v = 0.0
        else:
            v = np.sign(v) * min(abs(v), 3 * min(abs(ml), abs(mr)))
        s = tr.sample(t[k])[:, 0]
        assert s[1] == pytest.approx(v, abs=1e-12)
        assert s[2] == pytest.approx(2 * (mr - ml) / (hl + hr), abs=1e-10)
        assert abs(s[3]) < 1e-8 and abs(s[4]) < 1e-6
    # knot 1 is limited by 3 min|m|: m = (1, 0.4) -> Bessel 0.6 stays; knot 2 is a maximum
    assert tr.sample(1.5)[1, 0] == pytest.approx(0.0, abs=1e-12)


def test_uneven_spacing_does_not_ring():
    """Local construction: the curve stays inside the waypoints' range on uneven spacing (a
    global degree-5..9 interpolating spline overshoots this data by a factor 10 to 60)."""
    P = _positions()
    tr = Trajectory(NAMES, [0.0, 0.2, 0.4, 2.0, 2.5, 5.0], P)
    q = tr.sample_many(np.linspace(0.0, 5.0, 20001))[:, 0]
    assert np.all(q <= P.max(axis=0) + 1e-9) and np.all(q >= P.min(axis=0) - 1e-9)


def test_reproduces_a_line_when_its_velocity_is_given():
    """q = a + b t satisfies every condition (given velocity b, zero acc/jerk/snap at the ends):
    the unique spline is that line."""
    t = np.array([0.0, 0.3, 1.0, 1.2, 2.0])
    a, b = np.array([0.1, -0.2]), np.array([0.5, -1.5])
    P = a + np.outer(t, b)
    tr = Trajectory(["x", "y"], t, P, velocities=np.tile(b, (5, 1)))
    ts = np.linspace(0, 2, 41)
    S = tr.sample_many(ts)
    np.testing.assert_allclose(S[:, 0], a + np.outer(ts, b), atol=1e-12)
    np.testing.assert_allclose(S[:, 1], np.tile(b, (41, 1)), atol=1e-10)
    np.testing.assert_allclose(S[:, 2:], 0, atol=1e-7)  # rounding of the slopes / h⁴


def test_rest_at_both_ends_and_clamped_hold():
    tr = _variants()["plain"]
    for t in (tr.start_time, tr.end_time):
        np.testing.assert_allclose(tr.sample(t)[1:], 0.0, atol=1e-9)
    before = tr.sample(-1.0)
    after = tr.sample(10.0)
    np.testing.assert_array_equal(before[0], tr.positions[0])
    np.testing.assert_array_equal(after[0], tr.positions[-1])
    assert not before[1:].any() and not after[1:].any()
    # at rest ends make the whole time axis C⁴: the hold joins smoothly
    for t in (tr.start_time, tr.end_time):
        jump = np.abs(tr.sample(np.nextafter(t, -np.inf)) - tr.sample(np.nextafter(t, np.inf)))
        assert np.all(jump.max(axis=1) <= 1e-9 * _peak(tr))


def test_prescribed_velocities_and_accelerations_are_met():
    P = _positions()
    rng = np.random.default_rng(2)
    V = rng.normal(size=P.shape)
    A = rng.normal(size=P.shape) * 3
    tr = Trajectory(NAMES, TIMES, P, velocities=V, accelerations=A)
    for k, tk in enumerate(TIMES):
        s = tr.sample(tk)
        np.testing.assert_allclose(s[1], V[k], atol=1e-9)
        np.testing.assert_allclose(s[2], A[k], atol=1e-8)
    # jerk and snap are zero at both ends
    for tk in (TIMES[0], TIMES[-1]):
        np.testing.assert_allclose(tr.sample(tk)[3:], 0.0, atol=1e-7)


def test_sample_out_and_sample_many():
    tr = _variants()["mixed"]
    out = np.empty((5, 3))
    res = tr.sample(1.234, out=out)
    assert res is out
    ts = np.array([-1.0, 0.0, 0.2, 1.1, 2.99, 3.0, 4.0])
    many = tr.sample_many(ts)
    assert many.shape == (7, 5, 3)
    for i, t in enumerate(ts):
        np.testing.assert_array_equal(many[i], tr.sample(t))
    out3 = np.empty((7, 5, 3))
    assert tr.sample_many(ts, out=out3) is out3
    with pytest.raises(ValueError, match="out"):
        tr.sample(0.5, out=np.empty((4, 3)))
    with pytest.raises(ValueError, match="out"):
        tr.sample_many(ts, out=np.empty((7, 4, 3)))
    with pytest.raises(ValueError, match="finite"):
        tr.sample(float("nan"))
    with pytest.raises(ValueError, match="NaN"):
        tr.sample_many([0.0, np.inf])
    with pytest.raises(ValueError, match="1-D"):
        tr.sample_many(np.zeros((2, 2)))


def test_properties_and_times_at_rate():
    tr = Trajectory(NAMES, [0.5, 1.0, 2.0], _positions(m=3))
    assert tr.n == 3 and tr.joint_names == tuple(NAMES)
    assert tr.duration == 2.0 and tr.start_time == 0.5 and tr.end_time == 2.0
    ts = tr.times_at_rate(1000)
    assert ts[0] == 0.5 and ts[-1] == pytest.approx(2.0) and len(ts) == 1501
    assert np.allclose(np.diff(ts), 1e-3)
    ts = tr.times_at_rate(3.0)  # 1.5 s at 3 Hz: 0.5, .., 1.8333, then the end point
    assert ts[-1] == 2.0
    with pytest.raises(ValueError, match="rate"):
        tr.times_at_rate(0)
    assert "Trajectory(n=3" in repr(tr)


def test_reorder():
    tr = _variants()["mixed"]
    r = tr.reorder(["j3", "j1", "j2"])
    assert r.joint_names == ("j3", "j1", "j2")
    for t in (0.1, 1.3, 2.9):
        np.testing.assert_array_equal(r.sample(t), tr.sample(t)[:, [2, 0, 1]])
    d = r.to_dict()
    assert d["points"][1]["velocities"] == list(tr.to_dict()["points"][1]["velocities"][i]
                                                for i in (2, 0, 1))
    with pytest.raises(ValueError, match="not in the trajectory"):
        tr.reorder(["j1", "j2", "j3", "j4"])
    with pytest.raises(ValueError, match="missing"):
        tr.reorder(["j1", "j2"])
    with pytest.raises(ValueError, match="duplicates"):
        tr.reorder(["j1", "j1", "j2"])


def test_dict_roundtrip_and_ros_duration():
    tr = _variants()["mixed"]
    d = tr.to_dict()
    assert "velocities" not in d["points"][0] and "velocities" in d["points"][1]
    tr2 = Trajectory.from_dict(d)
    np.testing.assert_array_equal(tr2.sample_many([0.3, 1.7]), tr.sample_many([0.3, 1.7]))
    ros = {"joint_names": ["a"],
           "header": {"frame_id": ""},
           "points": [{"time_from_start": {"sec": 0, "nanosec": 0}, "positions": [0.0],
                       "velocities": [], "accelerations": [], "effort": []},
                      {"time_from_start": {"sec": 1, "nanosec": 500000000}, "positions": [1.0]}]}
    tr3 = Trajectory.from_dict(ros)
    assert tr3.duration == 1.5
    np.testing.assert_allclose(tr3.sample(0.75)[0], 0.5, atol=1e-12)  # symmetric rest-to-rest


@pytest.mark.parametrize("ext", [".yaml", ".yml", ".json"])
def test_save_load(tmp_path, ext):
    tr = _variants()["vel+acc"]
    path = tmp_path / f"traj{ext}"
    tr.save(path)
    back = Trajectory.load(path)
    assert back.joint_names == tr.joint_names
    ts = np.linspace(-0.5, 3.5, 33)
    np.testing.assert_array_equal(back.sample_many(ts), tr.sample_many(ts))
    if ext == ".json":
        assert json.loads(path.read_text())["joint_names"] == NAMES


def test_load_wrapped_in_trajectory_key(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text("trajectory:\n  joint_names: [a]\n  points:\n"
                    "    - {time_from_start: 0, positions: [0]}\n"
                    "    - {time_from_start: 1, positions: [1]}\n")
    assert Trajectory.load(path).n == 1


@pytest.mark.parametrize("kwargs, match", [
    (dict(times=[0.0, 1.0, 1.0]), r"increase strictly: points\[2\]"),
    (dict(times=[0.0, 2.0, 1.0]), r"points\[2\] at 1.0 s is not after points\[1\]"),
    (dict(times=[0.0, np.nan, 2.0]), r"points\[1\].time_from_start is nan"),
    (dict(times=[0.0, 1.0, np.inf]), r"points\[2\].time_from_start is inf"),
    (dict(times=[0.0]), "at least 2 points"),
    (dict(times=[[0.0, 1.0]]), "1-D"),
    (dict(times=["a", "b", "c"]), "times must be a list of numbers"),
    (dict(positions=None), "positions must be one row per point"),
    (dict(positions=[[0, 0], [1, np.nan], [2, 2]]), r"positions\[1\]\[1\] is nan"),
    (dict(positions=[[0, 0], [1, 1, 1], [2, 2]]), r"positions\[1\] has 3 values, expected 2"),
    (dict(positions=[[0, 0], [1, 1]]), "positions has 2 rows, expected 3"),
    (dict(positions=[[0, 0], ["x", 1], [2, 2]]), r"positions\[1\] is not a list of numbers"),
    (dict(velocities=[None, [1.0, np.inf], None]), r"points\[1\].velocities\[1\] is inf"),
    (dict(velocities=[None, [1.0], None]), r"points\[1\].velocities has 1 values"),
    (dict(velocities=[None, None]), "velocities has 2 rows, expected 3"),
    (dict(velocities=5.0), "velocities must be None or one row per point"),
    (dict(velocities=[None, "ab", None]), r"points\[1\].velocities is not a list of numbers"),
    (dict(accelerations=[[0.0, 0.0], None, [1.0, 2.0, 3.0]]), r"points\[2\].accelerations"),
    (dict(joint_names=["a", "a"]), r"joint_names\[1\] = 'a' duplicates joint_names\[0\]"),
    (dict(joint_names=[]), "joint_names is empty"),
    (dict(joint_names="ab"), "not one string"),
    (dict(joint_names=["a", ""]), r"joint_names\[1\]"),
    (dict(joint_names=["a", 3]), r"joint_names\[1\]"),
])
def test_constructor_errors(kwargs, match):
    args = dict(joint_names=["a", "b"], times=[0.0, 1.0, 2.0],
                positions=[[0, 0], [1, 1], [2, 2]])
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        Trajectory(**args)


@pytest.mark.parametrize("d, match", [
    ([1, 2], "must be a mapping"),
    ({"points": []}, "no 'joint_names'"),
    ({"joint_names": ["a"]}, "no 'points'"),
    ({"joint_names": ["a"], "points": [], "extra": 1}, r"unknown field\(s\) \['extra'\]"),
    ({"joint_names": ["a"], "points": {}}, "'points' must be a list"),
    ({"joint_names": "a", "points": []}, "'joint_names' must be a list"),
    ({"joint_names": ["a"], "points": [3]}, r"points\[0\] must be a mapping"),
    ({"joint_names": ["a"], "points": [{"positions": [0]}]}, r"points\[0\] has no time_from"),
    ({"joint_names": ["a"], "points": [{"time_from_start": 0}]}, r"points\[0\] has no positions"),
    ({"joint_names": ["a"], "points": [{"time_from_start": 0, "positions": [0], "foo": 1}]},
     r"points\[0\] has unknown field"),
    ({"joint_names": ["a"], "points": [{"time_from_start": "x", "positions": [0]}]},
     "not a number"),
    ({"joint_names": ["a"], "points": [{"time_from_start": None, "positions": [0]}]},
     "not a number"),
    ({"joint_names": ["a"], "points": [{"time_from_start": {"secs": 1}, "positions": [0]}]},
     "unknown keys"),
    ({"joint_names": ["a"], "points": [{"time_from_start": {"sec": "x"}, "positions": [0]}]},
     "not numeric"),
    ({"joint_names": ["a"], "points": [{"time_from_start": 0, "positions": [0, 1]}]},
     r"points\[0\].positions has 2 values, expected 1"),
    ({"joint_names": ["a"], "points": [{"time_from_start": 0, "positions": [0]}]},
     "at least 2 points"),
])
def test_from_dict_errors(d, match):
    with pytest.raises(ValueError, match=match):
        Trajectory.from_dict(d)


def test_load_errors(tmp_path):
    bad_ext = tmp_path / "t.txt"
    bad_ext.write_text("{}")
    with pytest.raises(ValueError, match="unknown trajectory file type"):
        Trajectory.load(bad_ext)
    bad_yaml = tmp_path / "t.yaml"
    bad_yaml.write_text("joint_names: [a\n")
    with pytest.raises(ValueError, match="invalid YAML"):
        Trajectory.load(bad_yaml)
    bad_json = tmp_path / "t.json"
    bad_json.write_text("{")
    with pytest.raises(ValueError, match="invalid JSON"):
        Trajectory.load(bad_json)
    ragged = tmp_path / "r.yaml"
    ragged.write_text("joint_names: [a, b]\npoints:\n  - {time_from_start: 0, positions: [0, 0]}"
                      "\n  - {time_from_start: 1, positions: [1]}\n")
    with pytest.raises(ValueError, match=r"r.yaml: points\[1\].positions has 1 values"):
        Trajectory.load(ragged)
    with pytest.raises(FileNotFoundError):
        Trajectory.load(tmp_path / "missing.yaml")
    with pytest.raises(ValueError, match="unknown trajectory file type"):
        _variants()["plain"].save(tmp_path / "x.csv")


def test_random_waypoints_property():
    """Random spacing, positions and prescribed derivatives: waypoints hit, C⁴ at every knot."""
    hypothesis = pytest.importorskip("hypothesis")
    st = hypothesis.strategies

    @hypothesis.settings(max_examples=40, deadline=None, derandomize=True)
    @hypothesis.given(st.integers(2, 7), st.integers(1, 3), st.integers(0, 2 ** 31 - 1))
    def check(npts, n, seed):
        rng = np.random.default_rng(seed)
        times = np.cumsum(rng.uniform(0.05, 2.0, npts)) - 0.05
        P = rng.uniform(-2, 2, (npts, n))
        vel = [rng.normal(size=n) if rng.random() < 0.3 else None for _ in range(npts)]
        acc = [rng.normal(size=n) if rng.random() < 0.3 else None for _ in range(npts)]
        tr = Trajectory([f"j{i}" for i in range(n)], times, P, velocities=vel,
                        accelerations=acc)
        peak = _peak(tr)
        for k, tk in enumerate(times):
            s = tr.sample(tk)
            np.testing.assert_allclose(s[0], P[k], rtol=0, atol=1e-12)
            if vel[k] is not None:
                np.testing.assert_allclose(s[1], vel[k], rtol=0, atol=1e-12 * peak[1])
            if 0 < k < npts - 1:
                jump = np.abs(tr.sample(np.nextafter(tk, -np.inf))
                              - tr.sample(np.nextafter(tk, np.inf))).max(axis=1)
                assert np.all(jump <= 1e-9 * peak)

    check()


# -- the package's one JointTrajectory parser -------------------------------------------------
def _msg(**point_changes):
    pts = [{"time_from_start": 0.0, "positions": [0.0, 0.0]},
           {"time_from_start": 1.0, "positions": [1.0, 2.0], "velocities": [],
            "effort": [5.0, 6.0]},
           {"time_from_start": {"sec": 2, "nanosec": 500000000}, "positions": [0.5, 0.5]}]
    for key, value in point_changes.items():
        pts[1][key] = value
    return {"header": {"stamp": 0}, "joint_names": ["a", "b"], "points": pts}


def test_parse_joint_trajectory_fields():
    from mbs_dynamics.control.trajectory import parse_joint_trajectory
    data = parse_joint_trajectory(_msg())
    assert data.joint_names == ("a", "b")
    np.testing.assert_array_equal(data.times, [0.0, 1.0, 2.5])
    assert data.velocities[1] is None                       # empty = not given
    np.testing.assert_array_equal(data.efforts[1], [5.0, 6.0])
    sub = data.select([1])
    assert sub.joint_names == ("b",) and sub.positions[:, 0].tolist() == [0.0, 2.0, 0.5]
    pre = parse_joint_trajectory({"joint_names": ["a"], "points": [
        {"time_from_start": 0.5, "positions": [1.0]}]}).prepend(0.0, [0.2])
    traj = pre.to_trajectory()
    np.testing.assert_allclose(traj.sample(0.0)[:, 0], [0.2, 0, 0, 0, 0], atol=0)
    with pytest.raises(ValueError, match="unknown field"):
        parse_joint_trajectory(_msg(foo=1))
    assert parse_joint_trajectory(_msg(foo=1), strict=False).times.shape == (3,)


@pytest.mark.parametrize("change, cause", [
    (dict(positions=[1.0]), "wrong_size"),
    (dict(positions=[]), "wrong_size"),
    (dict(positions=[float("nan"), 0.0]), "non_finite"),
    (dict(accelerations=[0.0, float("inf")]), "non_finite"),
    (dict(time_from_start=float("nan")), "non_finite"),
    (dict(time_from_start=0.0), "time_order"),
    (dict(time_from_start=5.0), "time_order"),
    (dict(positions="ab"), "invalid"),
    (dict(time_from_start="x"), "invalid"),
    (dict(velocities=3.0), "invalid"),
])
def test_parse_joint_trajectory_causes(change, cause):
    from mbs_dynamics.control.trajectory import TrajectoryError, parse_joint_trajectory
    with pytest.raises(TrajectoryError) as err:
        parse_joint_trajectory(_msg(**change))
    assert err.value.cause == cause, str(err.value)


def test_parse_joint_trajectory_name_causes():
    from mbs_dynamics.control.trajectory import TrajectoryError, parse_joint_trajectory
    for names, cause in ((["a", "a"], "duplicate_joint"), (["a", 3], "invalid"),
                         ("ab", "invalid"), ([], "wrong_size")):
        with pytest.raises(TrajectoryError) as err:
            parse_joint_trajectory({"joint_names": names, "points": []})
        assert err.value.cause == cause
    msg = _msg()
    msg["points"][0]["time_from_start"] = -1.0
    with pytest.raises(TrajectoryError, match="must be >= 0") as err:
        parse_joint_trajectory(msg)
    assert err.value.cause == "time_order"
