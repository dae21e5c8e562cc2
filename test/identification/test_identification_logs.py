"""Reading joint logs (CSV, rosbag2) and the one-line errors on bad ones; filtering.

The zero-phase filter is checked on an analytic Fourier trajectory (exact q̇, q̈); bags are written
here with the rosbags library directly.
"""
from __future__ import annotations

import builtins
import importlib.util

import numpy as np
import pytest

from mbs_dynamics.identification import filtering, logs

_NO_SCIPY = importlib.util.find_spec("scipy") is None   # a skip per test, not per module
pytestmark = pytest.mark.skipif(_NO_SCIPY, reason="scipy is not installed")
J = ["j1", "j2"]


def _csv(path, header, rows):
    path.write_text(",".join(header) + "\n" + "\n".join(",".join(str(x) for x in r)
                                                        for r in rows) + "\n")
    return path


def _table(n=50):
    t = np.arange(n) * 0.01
    return t, np.column_stack([np.sin(t), np.cos(t)]), np.column_stack([t, -t])


def test_csv_any_column_order_extra_columns_ignored(tmp_path):
    t, q, e = _table()
    header = ["j2/effort", "note", "j1/position", "time", "j1/effort", "j2/position",
              "j3/position", "j1/velocity", "j2/velocity"]
    rows = [[e[k, 1], "x", q[k, 0], t[k], e[k, 0], q[k, 1], 9, 1.0, 2.0] for k in range(t.size)]
    path = _csv(tmp_path / "a.csv", header, rows)
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes().replace(b"\n", b"\r\n"))  # Excel
    log = logs.read_log(path, J)
    np.testing.assert_array_equal(log.time, t)
    np.testing.assert_array_equal(log.position, q)
    np.testing.assert_array_equal(log.effort, e)
    np.testing.assert_array_equal(log.velocity, [[1.0, 2.0]] * t.size)
    assert log.motor_position is None


@pytest.mark.parametrize("case,match", [
    ("missing", r"joint\(s\) j2 missing"),
    ("backwards", r"time stamps go backwards at sample 5 \(t = 0.03 s after 0.04 s\)"),
    ("repeat", r"time stamps repeat at sample 5"),
    ("nan", r"j2/effort is nan at sample 7 \(t = 0.07 s\)"),
    ("empty", r"row 9: j1/position is missing|j1/position is nan at sample 7"),
    ("text", r"row 9: j1/position is 'abc', not a number"),
    ("notime", r"no 'time' column"),
    ("partial_velocity", r"'<joint>/velocity' columns for some joints but not for j2"),
])
def test_csv_errors_are_one_line_naming_the_fault(tmp_path, case, match):
    t, q, e = _table()
    header = ["time", "j1/position", "j2/position", "j1/effort", "j2/effort"]
    rows = [[t[k], q[k, 0], q[k, 1], e[k, 0], e[k, 1]] for k in range(t.size)]
    if case == "missing":
        header, rows = header[:2] + header[3:4], [r[:2] + r[3:4] for r in rows]
    elif case == "backwards":
        rows[5][0] = 0.03
    elif case == "repeat":
        rows[5][0] = rows[4][0]
    elif case == "nan":
        rows[7][4] = "nan"
    elif case == "empty":
        rows[7][1] = ""
    elif case == "text":
        rows[7][1] = "abc"
    elif case == "notime":
        header[0] = "stamp"
    elif case == "partial_velocity":
        header.append("j1/velocity")
        rows = [r + [0.0] for r in rows]
    path = _csv(tmp_path / "bad.csv", header, rows)
    with pytest.raises(logs.LogError, match=match) as exc:
        logs.read_log(path, J)
    msg = str(exc.value)
    assert "\n" not in msg and str(path) in msg


def _bag(path, messages, topic="/joint_states", msgtype="sensor_msgs/msg/JointState",
         storage="sqlite3"):
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore
    store = get_typestore(Stores.ROS2_HUMBLE)
    plugin = {"sqlite3": StoragePlugin.SQLITE3, "mcap": StoragePlugin.MCAP}[storage]
    with Writer(path, version=9, storage_plugin=plugin) as w:
        conn = w.add_connection(topic, msgtype, typestore=store)
        for k, msg in enumerate(messages(store)):
            w.write(conn, 10 ** 9 + k * 10 ** 7, store.serialize_cdr(msg, msgtype))
    return path


def _joint_states(t, names, q, e, v=None):
    def make(store):
        JS = store.types["sensor_msgs/msg/JointState"]
        Header = store.types["std_msgs/msg/Header"]
        Time = store.types["builtin_interfaces/msg/Time"]
        for k in range(len(t)):
            ns = 1_700_000_000 * 10 ** 9 + int(round(t[k] * 1e9))
            yield JS(header=Header(stamp=Time(sec=ns // 10 ** 9, nanosec=ns % 10 ** 9),
                                   frame_id=""), name=names,
                     position=np.ascontiguousarray(q[k], float),
                     velocity=np.zeros(0) if v is None else np.ascontiguousarray(v[k], float),
                     effort=np.ascontiguousarray(e[k], float))
    return make


@pytest.mark.parametrize("storage", ["sqlite3", "mcap"])
def test_rosbag_by_name_with_stamps(tmp_path, storage):
    pytest.importorskip("rosbags")
    t, q, e = _table()
    bag = _bag(tmp_path / "bag", _joint_states(t, ["j2", "j1"], q[:, ::-1], e[:, ::-1],
                                              v=q[:, ::-1] * 2), storage=storage)
    log = logs.read_log(bag, J)
    np.testing.assert_allclose(log.time, t, atol=1e-12)  # relative to the first stamp
    np.testing.assert_array_equal(log.position, q)
    np.testing.assert_array_equal(log.effort, e)
    np.testing.assert_array_equal(log.velocity, 2 * q)
    # the storage file inside the directory works too
    f = next(p for p in bag.iterdir() if p.suffix in (".db3", ".mcap"))
    np.testing.assert_array_equal(logs.read_log(f, J).position, q)


def test_rosbag_errors(tmp_path):
    pytest.importorskip("rosbags")
    t, q, e = _table()

    def strings(store):
        S = store.types["std_msgs/msg/String"]
        for _ in range(3):
            yield S(data="x")

    bag = _bag(tmp_path / "s", strings, topic="/joint_states", msgtype="std_msgs/msg/String")
    with pytest.raises(logs.LogError, match="carries std_msgs/msg/String, not sensor_msgs"):
        logs.read_log(bag, J)
    bag = _bag(tmp_path / "o", strings, topic="/chatter", msgtype="std_msgs/msg/String")
    with pytest.raises(logs.LogError, match=r"no topic /joint_states \(the bag has /chatter"):
        logs.read_log(bag, J)
    bag = _bag(tmp_path / "m", _joint_states(t, ["j1", "x"], q, e))
    with pytest.raises(logs.LogError, match=r"joint\(s\) j2 missing from the JointState"):
        logs.read_log(bag, J)
    tb = t.copy()
    tb[10] = tb[8]
    bag = _bag(tmp_path / "b", _joint_states(tb, J, q, e))
    with pytest.raises(logs.LogError, match="time stamps go backwards at sample 10"):
        logs.read_log(bag, J)
    (tmp_path / "junk").mkdir()
    with pytest.raises(logs.LogError, match="not a readable rosbag2"):
        logs.read_log(tmp_path / "junk", J)


def test_rosbags_missing_gives_a_hint(tmp_path, monkeypatch):
    real = builtins.__import__

    def fake(name, *a, **k):
        if name.startswith("rosbags"):
            raise ImportError("No module named 'rosbags'")
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", fake)
    (tmp_path / "bag").mkdir()
    with pytest.raises(logs.LogError, match=r"pip install 'mbs_dynamics\[identify\]'"):
        logs.read_log(tmp_path / "bag", J)


def test_zero_phase_filter_and_derivatives():
    """Filtered and differentiated q against the analytic derivatives of a Fourier series, with
    white position noise; the edges (filter transients) are dropped."""
    rate, f = 1000.0, [0.2, 0.7, 1.3]
    t = np.arange(0, 12, 1 / rate) + 1e-4 * np.random.default_rng(0).uniform(size=12000)
    t.sort()
    w = 2 * np.pi * np.array(f)
    q = np.column_stack([np.sin(w * t[:, None]).sum(1), np.cos(w * t[:, None]).sum(1)])
    qdd = np.column_stack([-(w ** 2 * np.sin(w * t[:, None])).sum(1),
                           -(w ** 2 * np.cos(w * t[:, None])).sum(1)])
    noisy = q + 1e-5 * np.random.default_rng(1).normal(size=q.shape)
    log = logs.JointLog(t, ("a", "b"), noisy, np.zeros_like(q), source="x").check()
    fs = filtering.filter_states(log, 10.0)
    assert fs.rows.start == filtering.edge_samples(fs.rate, 10.0) == 300
    err = np.abs(fs.qdd - qdd[fs.rows])
    assert err.max() < 0.02 * np.abs(qdd).max()
    with pytest.raises(ValueError, match="Nyquist"):
        filtering.filter_states(log, 600.0)
