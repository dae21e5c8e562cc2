"""Joint logs are bounded before the work and every damage is one line (issue 27, findings 5,
6, 9): a huge CSV (size, rows, line length) refused before it is parsed; a non-UTF-8 byte, a
finite 1e308 cell and a blank first line named; damaged rosbag2 bags (a sqlite3 message cut
short, MCAP blocks zeroed or bytes flipped) a LogError, never a rosbags traceback; the CLI
prints one line."""
from __future__ import annotations

import sqlite3
import subprocess
import sys
import time

import numpy as np
import pytest

from mbs_dynamics.identification import logs
from mbs_dynamics.model import limits

J = ["j1", "j2"]
HEADER = "time,j1/position,j2/position,j1/effort,j2/effort"


def _rows(n=50):
    t = [k * 0.01 for k in range(n)]
    return [",".join(repr(float(x)) for x in (s, np.sin(s), np.cos(s), s, -s)) for s in t]


def _write(path, lines, end="\n"):
    path.write_text(end.join(lines) + end)
    return path


def test_huge_sparse_csv_refused_before_reading(tmp_path):
    """A 2 GB sparse CSV with a valid header once took 7.4 GB of memory and a minute."""
    p = tmp_path / "big.csv"
    with open(p, "w") as f:
        f.write(HEADER + "\n")
        f.truncate(2 * 1024 ** 3)
    t0 = time.process_time()
    with pytest.raises(logs.LogError, match=r"more than the limit .*MAX_LOG_BYTES"):
        logs.read_log(p, J)
    assert time.process_time() - t0 < 5.0  # refused from its size, nothing parsed


def test_rows_and_line_length_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(limits, "MAX_LOG_ROWS", 40)
    with pytest.raises(logs.LogError, match=r"more than 40 rows .*MAX_LOG_ROWS"):
        logs.read_log(_write(tmp_path / "rows.csv", [HEADER] + _rows(50)), J)
    monkeypatch.setattr(limits, "MAX_LOG_ROWS", 10 ** 6)
    rows = _rows(50)
    rows[20] += "," + "9" * 70_000
    with pytest.raises(logs.LogError, match=r"line 22 has 7\d{4} characters.*MAX_LINE_CHARS"):
        logs.read_log(_write(tmp_path / "line.csv", [HEADER] + rows), J)


def test_non_utf8_byte_names_file_and_line(tmp_path):
    p = _write(tmp_path / "latin.csv", [HEADER] + _rows(50))
    data = p.read_bytes().split(b"\n")
    data[12] = data[12] + b"\xe9"
    p.write_bytes(b"\n".join(data))
    with pytest.raises(logs.LogError, match=r"latin.csv: line 13: byte 0xe9 is not UTF-8"):
        logs.read_log(p, J)


def test_finite_huge_cell_named(tmp_path):
    rows = _rows(50)
    parts = rows[30].split(",")
    parts[2] = "1e308"
    rows[30] = ",".join(parts)
    with pytest.raises(logs.LogError, match=r"j2/position is 1e\+308 at sample 30 .*beyond"):
        logs.read_log(_write(tmp_path / "huge.csv", [HEADER] + rows), J)


def test_blank_first_lines_skipped(tmp_path):
    log = logs.read_log(_write(tmp_path / "blank.csv", ["", "  ", HEADER] + _rows(50)), J)
    assert log.n_samples == 50
    with pytest.raises(logs.LogError, match="empty file"):
        logs.read_log(_write(tmp_path / "e.csv", ["", " "]), J)
    with pytest.raises(logs.LogError, match="no data rows"):
        logs.read_log(_write(tmp_path / "h.csv", ["", HEADER, ""]), J)


def _good_bag(path, storage):
    t = np.arange(60) * 0.01
    q = np.column_stack([np.sin(t), np.cos(t)])
    log = logs.JointLog(t, tuple(J), q, q * 2, None, None)
    logs.write_rosbag(path, log, storage=storage)
    return path


def _damage_sqlite(bag):
    db = next(bag.glob("*.db3"))
    con = sqlite3.connect(db)
    con.execute("UPDATE messages SET data = substr(data, 1, 20) WHERE id = 7")
    con.commit()
    con.close()


def _damage_mcap(f, how, seed):
    b = bytearray(f.read_bytes())
    rng = np.random.default_rng(seed)
    if how == "zero":
        i = int(rng.integers(8, len(b) - 300))
        b[i:i + 256] = bytes(256)
    else:
        for i in rng.integers(8, len(b) - 8, 8):
            b[int(i)] ^= 0xFF
    f.write_bytes(bytes(b))


def test_damaged_sqlite_bag_is_one_line(tmp_path):
    """A message cut short in the sqlite3 storage ended in a rosbags traceback."""
    pytest.importorskip("rosbags")
    bag = _good_bag(tmp_path / "bag", "sqlite3")
    _damage_sqlite(bag)
    with pytest.raises(logs.LogError, match="damaged rosbag2") as exc:
        logs.read_log(bag, J)
    assert "\n" not in str(exc.value) and str(bag) in str(exc.value)


@pytest.mark.parametrize("how", ["zero", "flip"])
def test_damaged_mcap_bag_is_one_line(tmp_path, how):
    """MCAP with a zeroed block or flipped bytes: SerdeError, OverflowError, ReaderError
    tracebacks. Each damage is a LogError of one line, or (bytes the reader never needs) a log
    that passes the checks."""
    pytest.importorskip("rosbags")
    import shutil
    good = _good_bag(tmp_path / "good", "mcap")
    errors = 0
    for seed in range(16):
        bag = tmp_path / f"b{seed}"
        shutil.copytree(good, bag)
        _damage_mcap(next(bag.glob("*.mcap")), how, seed)
        try:
            logs.read_log(bag, J)
        except logs.LogError as exc:
            errors += 1
            assert "\n" not in str(exc) and str(bag) in str(exc)
    assert errors >= 4  # the damage was seen


def test_cli_prints_one_line_for_a_damaged_bag(tmp_path):
    pytest.importorskip("rosbags")
    pytest.importorskip("scipy")
    bag = _good_bag(tmp_path / "bag", "sqlite3")
    _damage_sqlite(bag)
    from mbs_dynamics import data
    r = subprocess.run([sys.executable, "-m", "mbs_dynamics.cli", "identify", data.robot("arm7"),
                        str(bag), "-o", str(tmp_path / "out"), "--quiet"],
                       capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
