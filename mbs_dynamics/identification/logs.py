"""Joint logs for identification: a CSV file or a rosbag2 (sqlite3 or MCAP) of
``sensor_msgs/JointState``, read into one :class:`JointLog` with the joints in a given order.

CSV: a header row, a ``time`` column in seconds, then per joint ``<joint>/position`` and
``<joint>/effort`` and optionally ``<joint>/velocity`` and (series elastic actuators)
``<joint>/motor_position`` columns, in any order; other columns are ignored.

rosbag2: ``sensor_msgs/msg/JointState`` messages on one topic (default ``/joint_states``), read
with the ``rosbags`` library (no ROS installation needed). Times are ``header.stamp`` (the bag's
receive time only when every stamp is zero); joints by name; an empty ``velocity`` means "not
logged" (then q is differentiated). Messages that lack one of the wanted joints are skipped.

Every problem is a :class:`LogError` (a ValueError) whose message is one line naming the file and
what is wrong: a missing joint or column, time stamps that go backwards or repeat, a NaN or
infinite value (with its row and time), a bag without JointState messages.
"""
from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["LogError", "JointLog", "read_log", "read_csv", "read_rosbag", "write_csv",
           "write_rosbag", "ROSBAGS_HINT"]

ROSBAGS_HINT = "reading rosbag2 needs the rosbags library: pip install 'mbs_dynamics[identify]'"
JOINT_STATE = "sensor_msgs/msg/JointState"


class LogError(ValueError):
    """A log that cannot be used; the message is one line naming the file and the fault."""


@dataclass(frozen=True)
class JointLog:
    """Logged joint data, columns in ``joint_names`` order.

    Attributes:
        time: (N,) strictly increasing sample times [s].
        joint_names: the n joints.
        position: (N, n) link positions q [rad or m].
        effort: (N, n) measured torques [N m or N] (for a series elastic actuator: the motor
            torque τ_m).
        velocity: (N, n) logged q̇, or None (then q is differentiated).
        motor_position: (N, n) motor positions θ (series elastic actuators), or None.
        source: the file the data came from (for messages).
    """

    time: np.ndarray
    joint_names: tuple
    position: np.ndarray
    effort: np.ndarray
    velocity: np.ndarray | None = None
    motor_position: np.ndarray | None = None
    source: str = "log"

    @property
    def n_samples(self) -> int:
        return int(self.time.shape[0])

    def select(self, rows):
        """A log of the samples ``rows`` (a slice or index array)."""
        pick = (lambda a: None if a is None else a[rows])
        return JointLog(self.time[rows], self.joint_names, self.position[rows],
                        self.effort[rows], pick(self.velocity), pick(self.motor_position),
                        self.source)

    def check(self):
        """LogError unless the times strictly increase and every value is finite.

        Returns:
            self.
        """
        src, t = self.source, self.time
        if t.shape[0] < 10:
            raise LogError(f"{src}: only {t.shape[0]} samples; identification needs many more")
        _check_finite(src, "time", t[:, None], t, ("",))
        dt = np.diff(t)
        bad = np.flatnonzero(dt <= 0)
        if bad.size:
            i = int(bad[0])
            how = "repeat" if dt[i] == 0 else "go backwards"
            raise LogError(f"{src}: time stamps {how} at sample {i + 1} (t = {t[i + 1]:.9g} s "
                           f"after {t[i]:.9g} s)")
        for what, a in (("position", self.position), ("effort", self.effort),
                        ("velocity", self.velocity), ("motor_position", self.motor_position)):
            if a is not None:
                _check_finite(src, what, a, t, self.joint_names)
        return self


#: |value| of a logged time [s], position [rad, m], velocity or effort [N m, N] beyond which it
#: is no physical value (1e308 once reached the estimator as "qdd contains NaN or inf")
MAX_ABS_VALUE = 1e12


def _check_finite(src, what, a, t, names):
    bad = ~np.isfinite(a)
    if bad.any():
        i, j = (int(x) for x in np.argwhere(bad)[0])
        col = f"{names[j]}/{what}" if names[j] else what
        at = f" (t = {t[i]:.9g} s)" if what != "time" and math.isfinite(t[i]) else ""
        raise LogError(f"{src}: {col} is {a[i, j]} at sample {i}{at}; remove or repair the "
                       "rows with missing values")
    bad = np.abs(a) >= MAX_ABS_VALUE
    if bad.any():
        i, j = (int(x) for x in np.argwhere(bad)[0])
        col = f"{names[j]}/{what}" if names[j] else what
        at = f" (t = {t[i]:.9g} s)" if what != "time" and math.isfinite(t[i]) else ""
        raise LogError(f"{src}: {col} is {a[i, j]:.6g} at sample {i}{at}: beyond "
                       f"±{MAX_ABS_VALUE:g}, not a {what.replace('_', ' ')} in SI units; repair "
                       "the row")


# ------------------------------------------------------------------------------------ reading
def read_log(path, joint_names, *, topic="/joint_states") -> JointLog:
    """Read a CSV file or a rosbag2 directory (or its .db3/.mcap file) and check it.

    Args:
        path: a ``.csv`` file, a rosbag2 directory, or the storage file inside one.
        joint_names: the joints to read, in the order of the returned columns.
        topic: the JointState topic of a bag.
    Raises:
        LogError: naming the file and the fault (see the module docstring).
    """
    p = Path(path)
    if not p.exists():
        raise LogError(f"{p}: no such file or directory")
    if p.is_dir() or p.suffix.lower() in (".db3", ".mcap", ".yaml"):
        log = read_rosbag(p.parent if p.is_file() else p, joint_names, topic=topic)
    else:
        log = read_csv(p, joint_names)
    return log.check()


def _csv_lines(path, src):
    """The lines of a CSV log, bounded before they are parsed: the file's size
    (``MAX_LOG_BYTES``, before reading), its rows (``MAX_LOG_ROWS``) and the length of each line
    (``MAX_LINE_CHARS``); a byte that is not UTF-8 named with its line."""
    from ..model import limits
    try:
        data = limits.read_bytes(path, "CSV log", limit="MAX_LOG_BYTES")
    except limits.FileLimitError as exc:
        raise LogError(str(exc)) from None
    except OSError as exc:
        raise LogError(f"{src}: cannot be read ({exc.strerror or exc})") from None
    if data.startswith(b"\xef\xbb\xbf"):  # a BOM is not part of "time"
        data = data[3:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise LogError(f"{src}: line {line}: byte 0x{data[exc.start]:02x} is not UTF-8 text "
                       "(expected a CSV log)") from None
    del data
    nul = text.find("\x00")
    if nul >= 0:
        raise LogError(f"{src}: line {text.count(chr(10), 0, nul) + 1}: a NUL character "
                       "(not a text file; expected a CSV log)")
    lines = text.splitlines()
    del text
    if len(lines) > limits.MAX_LOG_ROWS + 1:
        raise LogError(f"{src}: more than {limits.MAX_LOG_ROWS} rows "
                       "(mbs_dynamics.model.limits.MAX_LOG_ROWS)")
    most = limits.MAX_LINE_CHARS
    if lines and max(map(len, lines)) > most:
        i = next(k for k, ln in enumerate(lines) if len(ln) > most)
        raise LogError(f"{src}: line {i + 1} has {len(lines[i])} characters, more than "
                       f"{most} (mbs_dynamics.model.limits.MAX_LINE_CHARS)")
    return lines


def read_csv(path, joint_names) -> JointLog:
    """A CSV log (see the module docstring); columns other than the wanted ones are ignored.
    Blank lines before the header are skipped."""
    path = Path(path)
    src = str(path)
    lines = _csv_lines(path, src)
    first = next((k for k, ln in enumerate(lines) if ln.strip()), None)
    if first is None:
        raise LogError(f"{src}: empty file (expected CSV with a header row)")
    header = next(csv.reader([lines[first]]))
    header = [h.strip() for h in header]
    col = {}
    for i, h in enumerate(header):
        if h in col:
            raise LogError(f"{src}: column '{h}' appears twice")
        col[h] = i
    if "time" not in col:
        raise LogError(f"{src}: no 'time' column (header: {', '.join(header[:6])}...)")
    missing = [j for j in joint_names
               if f"{j}/position" not in col or f"{j}/effort" not in col]
    if missing:
        have = sorted({h.split("/")[0] for h in header if "/" in h})
        raise LogError(f"{src}: joint(s) {', '.join(missing)} missing (need "
                       f"'<joint>/position' and '<joint>/effort' columns; the log has "
                       f"{', '.join(have) or 'no joint columns'})")
    opt = {}
    for kind in ("velocity", "motor_position"):
        have = [f"{j}/{kind}" in col for j in joint_names]
        if any(have) and not all(have):
            miss = [j for j, h in zip(joint_names, have) if not h]
            raise LogError(f"{src}: '<joint>/{kind}' columns for some joints but not for "
                           f"{', '.join(miss)}")
        opt[kind] = all(have)
    names = ["time"] + [f"{j}/{k}" for k in ("position", "effort") for j in joint_names]
    names += [f"{j}/{k}" for k in ("velocity", "motor_position") if opt[k] for j in joint_names]
    use = [col[c] for c in names]
    body = lines[first + 1:]
    del lines
    if not any(ln.strip() for ln in body):
        raise LogError(f"{src}: no data rows")
    try:
        table = np.loadtxt(body, delimiter=",", usecols=use, ndmin=2)
    except ValueError:
        table = _slow_csv(body, first + 2, use, names, src)
    n = len(joint_names)
    t = table[:, 0]
    blocks = [table[:, 1 + k * n:1 + (k + 1) * n] for k in range((len(names) - 1) // n)]
    vel = blocks[2] if opt["velocity"] else None
    mot = blocks[2 + opt["velocity"]] if opt["motor_position"] else None
    return JointLog(t, tuple(joint_names), blocks[0], blocks[1], vel, mot, src)


def _slow_csv(body, line0, use, names, src):
    """Row by row, to name the first bad field (empty, text, or a short row); ``line0`` is the
    file line of ``body[0]``."""
    rows = []
    for r, row in enumerate(csv.reader(body)):
        if not row:
            continue
        vals = []
        for c, name in zip(use, names):
            text = row[c].strip() if c < len(row) else ""
            try:
                vals.append(float(text) if text else math.nan)
            except ValueError:
                raise LogError(f"{src}: row {r + line0}: {name} is {text[:40]!r}, not a "
                               "number") from None
        rows.append(vals)
    if not rows:
        raise LogError(f"{src}: no data rows")
    return np.array(rows)


def _typestore():
    try:
        from rosbags.typesys import Stores, get_typestore
    except ImportError:
        raise LogError(ROSBAGS_HINT) from None
    return get_typestore(Stores.ROS2_HUMBLE)


def read_rosbag(path, joint_names, *, topic="/joint_states") -> JointLog:
    """``sensor_msgs/JointState`` messages of ``topic`` from a rosbag2 (sqlite3 or MCAP)."""
    try:
        from rosbags.rosbag2 import Reader
    except ImportError:
        raise LogError(ROSBAGS_HINT) from None
    src = str(path)
    store = _typestore()
    want = list(joint_names)
    _check_bag_size(Path(path), src)
    try:
        reader = Reader(path)
        reader.open()
    except Exception as exc:  # rosbags raises its own error types for broken bags
        raise LogError(f"{src}: not a readable rosbag2 ({_one_line(exc)})") from None
    try:
        return _read_messages(reader, src, store, want, topic)
    except LogError:
        raise
    except Exception as exc:  # a damaged message, chunk or index: rosbags' or struct's error
        raise LogError(f"{src}: a damaged rosbag2 ({type(exc).__name__}: "
                       f"{_one_line(exc)})") from None
    finally:
        try:
            reader.close()
        except Exception:  # closing a damaged bag may fail again: the first error is the news
            pass


def _one_line(exc):
    return " ".join(str(exc).split())[:300] or type(exc).__name__


def _check_bag_size(path, src):
    """LogError when the bag's files together exceed ``MAX_LOG_BYTES`` (before reading)."""
    from ..model import limits
    try:
        files = [p for p in path.iterdir() if p.is_file()] if path.is_dir() else [path]
        size = sum(p.stat().st_size for p in files)
    except OSError as exc:
        raise LogError(f"{src}: cannot be read ({exc.strerror or exc})") from None
    if size > limits.MAX_LOG_BYTES:
        raise LogError(f"{src}: rosbag2 of {limits._mib(size)} is more than the limit of "
                       f"{limits._mib(limits.MAX_LOG_BYTES)} "
                       "(mbs_dynamics.model.limits.MAX_LOG_BYTES)")


def _read_messages(reader, src, store, want, topic):
    """The JointLog of the JointState messages on ``topic`` of an open bag (at most
    ``MAX_LOG_ROWS`` of them)."""
    from ..model import limits
    conns = [c for c in reader.connections if c.topic == topic]
    if not conns:
        topics = sorted({f"{c.topic} ({c.msgtype})" for c in reader.connections})
        raise LogError(f"{src}: no topic {topic} (the bag has {', '.join(topics) or 'none'};"
                       " use --topic)")
    wrong = [c for c in conns if c.msgtype != JOINT_STATE]
    if wrong:
        raise LogError(f"{src}: topic {topic} carries {wrong[0].msgtype}, not "
                       f"sensor_msgs/msg/JointState")
    stamps, bag_t, pos, eff, vel = [], [], [], [], []
    seen, skipped, no_vel = set(), 0, False
    for conn, t_bag, raw in reader.messages(connections=conns):
        if len(pos) + skipped >= limits.MAX_LOG_ROWS:
            raise LogError(f"{src}: more than {limits.MAX_LOG_ROWS} messages on {topic} "
                           "(mbs_dynamics.model.limits.MAX_LOG_ROWS)")
        msg = store.deserialize_cdr(raw, conn.msgtype)
        names = list(msg.name)
        seen.update(names)
        index = {nm: i for i, nm in enumerate(names)}
        if any(j not in index for j in want):
            skipped += 1
            continue
        idx = [index[j] for j in want]
        p, e, v = (np.asarray(x, dtype=float) for x in (msg.position, msg.effort,
                                                          msg.velocity))
        if p.shape[0] != len(names) or e.shape[0] != len(names):
            raise LogError(f"{src}: a JointState at t = {t_bag * 1e-9:.9g} s has "
                           f"{len(names)} names but {p.shape[0]} positions and "
                           f"{e.shape[0]} efforts (efforts must be logged)")
        stamps.append(int(msg.header.stamp.sec) * 10 ** 9 + int(msg.header.stamp.nanosec))
        bag_t.append(int(t_bag))
        pos.append(p[idx])
        eff.append(e[idx])
        if v.shape[0] == len(names):
            vel.append(v[idx])
        else:
            no_vel = True
    if not pos:
        missing = [j for j in want if j not in seen]
        if not seen:
            raise LogError(f"{src}: no JointState messages on {topic}")
        raise LogError(f"{src}: joint(s) {', '.join(missing or want)} missing from the "
                       f"JointState messages on {topic} (they name "
                       f"{', '.join(sorted(seen)[:8])})")
    # integer nanoseconds relative to the first stamp: a float of 1.7e9 s resolves only 2e-7 s,
    # which perturbs differentiated velocities by 1e-4 relative at 1 kHz
    ns = np.array(stamps, dtype=np.int64)
    if not ns.any():
        ns = np.array(bag_t, dtype=np.int64)
    t = (ns - ns[0]).astype(float) * 1e-9
    return JointLog(t, tuple(want), np.array(pos), np.array(eff),
                    None if no_vel else np.array(vel), None, src)


# ------------------------------------------------------------------------------------ writing
def write_csv(path, log: JointLog):
    """Write ``log`` in the CSV format read by :func:`read_csv`."""
    cols, header = [log.time], ["time"]
    for kind in ("position", "effort", "velocity", "motor_position"):
        a = getattr(log, kind)
        if a is not None:
            header += [f"{j}/{kind}" for j in log.joint_names]
            cols += list(a.T)
    np.savetxt(path, np.column_stack(cols), delimiter=",", header=",".join(header),
               comments="", fmt="%.17g")


def write_rosbag(path, log: JointLog, *, topic="/joint_states", storage="sqlite3"):
    """Write ``log`` as a rosbag2 directory of ``sensor_msgs/msg/JointState`` on ``topic``
    (``storage``: "sqlite3" or "mcap"); header.stamp and the bag time are the sample times."""
    try:
        from rosbags.rosbag2 import StoragePlugin, Writer
    except ImportError:
        raise LogError(ROSBAGS_HINT) from None
    store = _typestore()
    JointState = store.types[JOINT_STATE]
    Header = store.types["std_msgs/msg/Header"]
    Time = store.types["builtin_interfaces/msg/Time"]
    plugin = {"sqlite3": StoragePlugin.SQLITE3, "mcap": StoragePlugin.MCAP}[storage]
    names = list(log.joint_names)
    empty = np.zeros(0)
    with Writer(path, version=9, storage_plugin=plugin) as writer:
        conn = writer.add_connection(topic, JOINT_STATE, typestore=store)
        for i, t in enumerate(log.time):
            ns = int(round(float(t) * 1e9))
            msg = JointState(
                header=Header(stamp=Time(sec=ns // 10 ** 9, nanosec=ns % 10 ** 9), frame_id=""),
                name=names, position=np.ascontiguousarray(log.position[i], dtype=float),
                velocity=(empty if log.velocity is None
                          else np.ascontiguousarray(log.velocity[i], dtype=float)),
                effort=np.ascontiguousarray(log.effort[i], dtype=float))
            writer.write(conn, ns, store.serialize_cdr(msg, JOINT_STATE))
