"""Long logs in chunks: an index of a CSV file or a rosbag2 (sqlite3 or MCAP) made in one pass,
then any range of its rows read without the rest (the map step of :mod:`.mapreduce`).

:func:`scan` reads a log once without parsing its numbers: the CSV's header (the columns of
:mod:`.logs`), the byte offset of every :data:`STRIDE`-th data row, the number of rows; of a bag
the receive time of every :data:`STRIDE`-th JointState message of the topic (and how many
messages before it share that time) and the first message's ``header.stamp``.
:func:`read_rows` then reads rows ``[a, b)`` into a :class:`~.logs.JointLog` whose times are the
ones :func:`~.logs.read_log` gives for the whole log (the CSV's ``time`` column as written; a
bag's stamps relative to its first), so a chunk is bit for bit a slice of the whole log.

Absolute times (for windows of a fleet): a bag's stamps are nanoseconds since the epoch; a CSV's
``time`` column is taken as seconds since the epoch (UTC) when its first value is at least
:data:`EPOCH_MIN` (1973), otherwise as seconds since the log's start, which is then read from a
date and time in the file name (``2026-11-28T14-30-00``, ``rosbag2_2026_11_28-14_30_00``,
``20261128_143000``, or a date alone) or else its modification time.
"""
from __future__ import annotations

import contextlib
import csv
import datetime as _dt
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import _csv
from . import logs as _logs
from .logs import LogError

__all__ = ["LogIndex", "scan", "read_rows", "STRIDE", "EPOCH_MIN"]

#: Every STRIDE-th row's position is kept by :func:`scan`.
STRIDE = 1024
#: A CSV time column whose first value is below this [s] counts as relative (1973-03-03).
EPOCH_MIN = 1e8
_BLOCK = 1 << 24


@dataclass(frozen=True, eq=False)
class LogIndex:
    """What :func:`scan` learnt about a log (picklable, small: ~1/STRIDE of the rows).

    Attributes:
        path: the file (CSV) or bag directory.
        kind: "csv" or "bag".
        joint_names: the joints read, in column order.
        rows: number of samples (CSV data lines, JointState messages on the topic).
        start_ns: absolute time of the first sample [ns since the epoch, UTC].
        time_origin: where start_ns came from: "log", "file name" or "modification time".
        first_time: the first sample's time as :func:`~.logs.read_log` gives it [s].
        columns: CSV: indices of time, positions, efforts (and velocities) in the file.
        velocity: the log has velocities.
        marks: CSV: byte offset of data row k·STRIDE; bag: receive time [ns] of message k·STRIDE.
        ties: bag: messages before row k·STRIDE with the same receive time.
        topic: bag: the JointState topic.
        stamped: bag: times are header stamps (False: all stamps are zero, receive times used).
    """

    path: str
    kind: str
    joint_names: tuple
    rows: int
    start_ns: int
    time_origin: str
    first_time: float
    columns: tuple = ()
    velocity: bool = False
    marks: np.ndarray = field(default=None, repr=False)
    ties: np.ndarray = field(default=None, repr=False)
    topic: str = ""
    stamped: bool = True

    def absolute_ns(self, t):
        """Absolute times [ns since the epoch] (int64) of times ``t`` of :func:`read_rows`."""
        t = np.asarray(t, float)
        if self.kind == "csv" and self.time_origin == "log":
            return np.round(t * 1e9).astype(np.int64)
        return self.start_ns + np.round((t - self.first_time) * 1e9).astype(np.int64)


def scan(path, joint_names, *, topic="/joint_states") -> LogIndex:
    """Index a CSV file or a rosbag2 directory (or its .db3/.mcap file) for :func:`read_rows`.

    Raises:
        LogError: naming the file: missing, not a log of these joints, unreadable, empty.
    """
    p = Path(path)
    if not p.exists():
        raise LogError(f"{p}: no such file or directory")
    if p.is_dir() or p.suffix.lower() in (".db3", ".mcap", ".yaml"):
        return _scan_bag(p.parent if p.is_file() else p, tuple(joint_names), topic)
    return _scan_csv(p, tuple(joint_names))


def read_rows(index: LogIndex, a: int, b: int) -> _logs.JointLog:
    """Rows ``[a, b)`` of an indexed log as a checked :class:`~.logs.JointLog`."""
    if not 0 <= a < b <= index.rows:
        raise ValueError(f"{index.path}: rows [{a}, {b}) outside the log's {index.rows}")
    log = _read_csv_rows(index, a, b) if index.kind == "csv" else _read_bag_rows(index, a, b)
    return log.check()


# ------------------------------------------------------------------------------------ CSV
def _csv_columns(header, joint_names, src):
    """Column indices (time, positions, efforts, velocities?) of a CSV header; the same rules
    (and messages) as :func:`~.logs.read_csv`."""
    col = {}
    for i, h in enumerate(h.strip() for h in header):
        if h in col:
            raise LogError(f"{src}: column '{h}' appears twice")
        col[h] = i
    if "time" not in col:
        raise LogError(f"{src}: no 'time' column (header: {', '.join(header[:6])}...)")
    missing = [j for j in joint_names if f"{j}/position" not in col or f"{j}/effort" not in col]
    if missing:
        have = sorted({h.split("/")[0] for h in col if "/" in h})
        raise LogError(f"{src}: joint(s) {', '.join(missing)} missing (need "
                       f"'<joint>/position' and '<joint>/effort' columns; the log has "
                       f"{', '.join(have) or 'no joint columns'})")
    if any(f"{j}/motor_position" in col for j in joint_names):
        raise LogError(f"{src}: series elastic logs (motor_position columns) are identified "
                       "one at a time with identify(), not in chunks")
    vel = [f"{j}/velocity" in col for j in joint_names]
    if any(vel) and not all(vel):
        miss = [j for j, h in zip(joint_names, vel) if not h]
        raise LogError(f"{src}: '<joint>/velocity' columns for some joints but not for "
                       f"{', '.join(miss)}")
    kinds = ("position", "effort") + (("velocity",) if all(vel) else ())
    return (col["time"],) + tuple(col[f"{j}/{k}"] for k in kinds for j in joint_names), all(vel)


def _scan_csv(path, joint_names):
    src = str(path)
    with open(path, "rb") as f:
        head = f.readline()
        try:
            header = next(csv.reader([head.decode("utf-8-sig")]), None)
        except UnicodeDecodeError:
            raise LogError(f"{src}: not a text file (expected CSV with a header row)") from None
        if not header:
            raise LogError(f"{src}: empty file (expected CSV with a header row)")
        columns, velocity = _csv_columns(header, joint_names, src)
        marks, rows, pos, start = [], 0, len(head), len(head)
        while True:
            block = f.read(_BLOCK)
            if not block:
                break
            # a line starts after every newline; rows ended so far, where the next one starts
            got, rows, start = _csv.line_marks(block, pos, rows, start, STRIDE)
            marks += got
            pos += len(block)
        if pos > start:  # a last line without a newline
            if rows % STRIDE == 0:
                marks.append(start)
            rows += 1
    if rows == 0:
        raise LogError(f"{src}: no data rows")
    first = _parse_csv_lines(src, _csv_lines(path, np.array(marks, np.int64), 0, 1), columns, 0)
    t0 = float(first[0, 0])
    if not np.isfinite(t0):
        raise LogError(f"{src}: time is {t0} at sample 0")
    if t0 >= EPOCH_MIN:
        start, origin = int(round(t0 * 1e9)), "log"
    else:
        start, origin = _start_of(path)
    return LogIndex(src, "csv", joint_names, rows, start, origin, t0, columns, velocity,
                    np.array(marks, np.int64))


def _csv_lines(path, marks, a, b):
    """Data lines [a, b) (bytes) of a CSV whose row k·STRIDE starts at marks[k]."""
    k0 = a // STRIDE
    with open(path, "rb") as f:
        f.seek(int(marks[k0]))
        k1 = -(-b // STRIDE)
        text = f.read(int(marks[k1]) - int(marks[k0])) if k1 < len(marks) else f.read()
    lines = text.split(b"\n")
    skip = a - k0 * STRIDE
    return lines[skip:skip + (b - a)]


def _parse_csv_lines(src, lines, columns, row0):
    """(len(lines), len(columns)) floats; LogError naming the file, line and column of the first
    field that is not a number."""
    try:
        out = np.loadtxt(lines, delimiter=",", usecols=columns, ndmin=2, encoding="utf-8")
        if out.shape[0] == len(lines):
            return out
    except ValueError:
        pass
    for r, line in enumerate(lines):  # find the fault (empty line, short row, text)
        fields = line.decode("utf-8", "replace").split(",")
        for c in columns:
            text = fields[c].strip() if c < len(fields) else ""
            try:
                float(text)
            except ValueError:
                raise LogError(f"{src}: row {row0 + r + 2}: column {c + 1} is {text!r}, not a "
                               "number") from None
    raise LogError(f"{src}: rows {row0 + 2}…{row0 + len(lines) + 1} cannot be read")


def _read_csv_rows(index, a, b):
    table = _parse_csv_text(index, a, b)
    n = len(index.joint_names)
    vel = table[:, 1 + 2 * n:1 + 3 * n] if index.velocity else None
    return _logs.JointLog(table[:, 0], index.joint_names, table[:, 1:1 + n],
                          table[:, 1 + n:1 + 2 * n], vel, None, index.path)


def _parse_csv_text(index, a, b):
    """Rows [a, b) of an indexed CSV, (b − a, len(columns)): the bytes read once and parsed by
    the compiled parser (:mod:`._csv`, correctly rounded, so equal to :func:`numpy.loadtxt`
    bit for bit); where it refuses a line (text, an empty field, a comment, …), the rows are
    read by :func:`_parse_csv_lines`, which reads as :func:`~.logs.read_csv` and names the
    fault."""
    k0 = a // STRIDE
    with open(index.path, "rb") as f:
        f.seek(int(index.marks[k0]))
        k1 = -(-b // STRIDE)
        text = (f.read(int(index.marks[k1]) - int(index.marks[k0])) if k1 < len(index.marks)
                else f.read())
    pos = 0
    for _ in range(a - k0 * STRIDE):
        pos = text.find(b"\n", pos) + 1
        if pos == 0:
            pos = len(text)
            break
    cols = index.columns
    where = np.full(max(cols) + 1, -1, np.intp)
    where[list(cols)] = np.arange(len(cols))
    out = np.empty((b - a, len(cols)))
    if _csv.parse(memoryview(text)[pos:], b - a, where, out) == -1:
        return out
    lines = text[pos:].split(b"\n")[:b - a]
    return _parse_csv_lines(index.path, lines, cols, a)


_NAME_TIME = re.compile(r"(\d{4})[-_]?(\d{2})[-_]?(\d{2})"
                        r"(?:[T_ -]?(\d{2})[-_:]?(\d{2})[-_:]?(\d{2}))?")


def _start_of(path):
    """(ns since the epoch, origin) of a log with relative times: from a date in its name, else
    its modification time."""
    for m in _NAME_TIME.finditer(Path(path).name):
        y, mo, d, hh, mm, ss = (int(x) if x else 0 for x in m.groups())
        try:
            when = _dt.datetime(y, mo, d, hh, mm, ss, tzinfo=_dt.timezone.utc)
        except ValueError:
            continue
        return int(when.timestamp()) * 10 ** 9, "file name"
    return int(os.stat(path).st_mtime_ns), "modification time"


# ------------------------------------------------------------------------------------ rosbag2
def _open_bag(path):
    try:
        from rosbags.rosbag2 import Reader
    except ImportError:
        raise LogError(_logs.ROSBAGS_HINT) from None
    try:
        reader = Reader(path)
        reader.open()
    except Exception as exc:  # rosbags raises its own error types for broken bags
        raise LogError(f"{path}: not a readable rosbag2 ({' '.join(str(exc).split())})") \
            from None
    return reader


def _connections(reader, src, topic):
    conns = [c for c in reader.connections if c.topic == topic]
    if not conns:
        topics = sorted({f"{c.topic} ({c.msgtype})" for c in reader.connections})
        raise LogError(f"{src}: no topic {topic} (the bag has {', '.join(topics) or 'none'};"
                       " use --topic)")
    if any(c.msgtype != _logs.JOINT_STATE for c in conns):
        raise LogError(f"{src}: topic {topic} carries "
                       f"{[c for c in conns if c.msgtype != _logs.JOINT_STATE][0].msgtype}, "
                       "not sensor_msgs/msg/JointState")
    return conns


@contextlib.contextmanager
def _bag(path, topic):
    """The open bag's reader and the JointState connections of ``topic``; any failure of
    rosbags inside becomes one LogError line naming the bag."""
    src = str(path)
    reader = _open_bag(path)
    try:
        conns = _connections(reader, src, topic)
        try:
            yield reader, conns
        except LogError:
            raise
        except Exception as exc:  # rosbags' own errors for broken chunks, CDR, indexes
            raise LogError(f"{src}: unreadable rosbag2 data ({type(exc).__name__}: "
                           f"{' '.join(str(exc).split())[:200]})") from None
    finally:
        reader.close()


def _scan_bag(path, joint_names, topic):
    src = str(path)
    store = _logs._typestore()
    with _bag(path, topic) as (reader, conns):
        marks, ties, rows, prev, run, first = [], [], 0, None, 0, None
        for conn, t_bag, raw in reader.messages(connections=conns):
            run = run + 1 if t_bag == prev else 0
            if rows % STRIDE == 0:
                marks.append(int(t_bag))
                ties.append(run)
            if first is None:
                first = (store.deserialize_cdr(raw, conn.msgtype), int(t_bag))
            prev = t_bag
            rows += 1
    if first is None:
        raise LogError(f"{src}: no JointState messages on {topic}")
    msg, t_bag = first
    missing = [j for j in joint_names if j not in list(msg.name)]
    if missing:
        raise LogError(f"{src}: joint(s) {', '.join(missing)} missing from the JointState "
                       f"messages on {topic} (they name {', '.join(sorted(msg.name)[:8])})")
    stamp = int(msg.header.stamp.sec) * 10 ** 9 + int(msg.header.stamp.nanosec)
    stamped = stamp != 0
    start = stamp if stamped else t_bag
    return LogIndex(src, "bag", joint_names, rows, start, "log", 0.0, (), bool(len(msg.velocity)),
                    np.array(marks, np.int64), np.array(ties, np.int64), topic, stamped)


def _cdr_layout(raw):
    """Where a little-endian CDR ``sensor_msgs/JointState``'s fields lie: (names, end of the
    names, [(offset, count)] of position, velocity, effort), offsets from the message start;
    None when it is not little-endian CDR or is cut short."""
    if len(raw) < 16 or raw[1] != 1:
        return None
    u32 = (lambda o: int.from_bytes(raw[4 + o:8 + o], "little"))
    try:
        pos = 8
        pos += 4 + u32(pos)                     # frame_id
        pos = -(-pos // 4) * 4
        count, pos = u32(pos), pos + 4
        names = []
        for _ in range(count):
            pos = -(-pos // 4) * 4
            k = u32(pos)
            names.append(raw[8 + pos:8 + pos + k - 1].decode("utf-8"))
            pos += 4 + k
        end, fields = pos, []
        for _ in range(3):
            pos = -(-pos // 4) * 4
            cnt, pos = u32(pos), pos + 4
            if cnt:
                pos = -(-pos // 8) * 8
            fields.append((4 + pos, cnt))
            pos += 8 * cnt
    except (UnicodeDecodeError, IndexError):
        return None
    return (names, 4 + end, fields) if 4 + pos <= len(raw) else None


def _decode_joint_states(raws, want, src, stamped, bag_times, store, conn_type):
    """(stamps int64 (m,), position, effort, velocity or None) of JointState messages ``raws``
    in the joints ``want``: messages with the first one's layout (same length, frame_id and
    names) are read all at once from their bytes; the others one by one by rosbags."""
    m, n = len(raws), len(want)
    stamps = np.empty(m, np.int64)
    pos, eff, vel = np.empty((m, n)), np.empty((m, n)), np.empty((m, n))
    has_vel = np.ones(m, bool)
    lay = _cdr_layout(raws[0])
    fast = np.zeros(m, bool)
    if lay is not None and all(j in lay[0] for j in want):
        names, end, fields = lay
        L = len(raws[0])
        same_len = np.fromiter((len(r) == L for r in raws), bool, m)
        rows = np.flatnonzero(same_len)
        buf = np.frombuffer(b"".join(raws[i] for i in rows), np.uint8).reshape(rows.size, L)
        # the same encapsulation, frame_id and names (bytes 4..12 are the stamp)
        ok = (buf[:, 12:end] == buf[0, 12:end]).all(axis=1) & (buf[:, :4] == buf[0, :4]).all(1)
        rows, buf = rows[ok], buf[ok]
        idx = [names.index(j) for j in want]
        (po, pc), (vo, vc), (eo, ec) = fields
        if pc == len(names) and ec == len(names) and rows.size:
            f8 = (lambda off, c: np.ascontiguousarray(buf[:, off:off + 8 * c]).view("<f8"))
            pos[rows] = f8(po, pc)[:, idx]
            eff[rows] = f8(eo, ec)[:, idx]
            if vc == len(names):
                vel[rows] = f8(vo, vc)[:, idx]
            else:
                has_vel[rows] = False
            if stamped:
                sec = np.ascontiguousarray(buf[:, 4:8]).view("<i4")[:, 0].astype(np.int64)
                nsec = np.ascontiguousarray(buf[:, 8:12]).view("<u4")[:, 0].astype(np.int64)
                stamps[rows] = sec * 10 ** 9 + nsec
            else:
                stamps[rows] = bag_times[rows]
            fast[rows] = True
    for r in np.flatnonzero(~fast):
        msg = store.deserialize_cdr(raws[r], conn_type)
        names = list(msg.name)
        where = {nm: i for i, nm in enumerate(names)}
        t_bag = int(bag_times[r])
        if any(j not in where for j in want):
            raise LogError(f"{src}: the JointState at t = {t_bag * 1e-9:.9g} s lacks joint(s) "
                           f"{', '.join(j for j in want if j not in where)}")
        idx = [where[j] for j in want]
        p, e, v = (np.asarray(x, float) for x in (msg.position, msg.effort, msg.velocity))
        if p.shape[0] != len(names) or e.shape[0] != len(names):
            raise LogError(f"{src}: a JointState at t = {t_bag * 1e-9:.9g} s has {len(names)} "
                           f"names but {p.shape[0]} positions and {e.shape[0]} efforts "
                           "(efforts must be logged)")
        stamps[r] = (int(msg.header.stamp.sec) * 10 ** 9 + int(msg.header.stamp.nanosec)
                     if stamped else t_bag)
        pos[r], eff[r] = p[idx], e[idx]
        if v.shape[0] == len(names):
            vel[r] = v[idx]
        else:
            has_vel[r] = False
    return stamps, pos, eff, (vel if has_vel.all() else None)


def _read_bag_rows(index, a, b):
    src = index.path
    store = _logs._typestore()
    k0 = a // STRIDE
    skip = int(index.ties[k0]) + (a - k0 * STRIDE)
    m = b - a
    raws, times = [], []
    with _bag(index.path, index.topic) as (reader, conns):
        r = -skip
        for _, t_bag, raw in reader.messages(connections=conns, start=int(index.marks[k0])):
            if r >= 0:
                raws.append(bytes(raw))
                times.append(t_bag)
            r += 1
            if r == m:
                break
        if len(raws) < m:
            raise LogError(f"{src}: {m - len(raws)} JointState messages fewer than when it "
                           "was indexed")
        stamps, pos, eff, vel = _decode_joint_states(
            raws, list(index.joint_names), src, index.stamped, np.array(times, np.int64),
            store, conns[0].msgtype)
    t = (stamps - index.start_ns).astype(float) * 1e-9
    return _logs.JointLog(t, index.joint_names, pos, eff, vel, None, src)
