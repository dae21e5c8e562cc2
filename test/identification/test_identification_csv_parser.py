"""The compiled CSV field parser of the map step (identification/_csv.pyx): every decimal it
accepts equals Python's correctly rounded ``float`` (and :func:`numpy.loadtxt`) bit for bit, and
everything else is refused with the line, so the caller falls back to loadtxt's reading and
messages.

Oracles: ``float()`` (David Gay's correctly rounded conversion in CPython) and numpy.loadtxt.
"""
from __future__ import annotations

import numpy as np
import pytest

from mbs_dynamics.identification import _csv, chunked, logs


def _parse(lines, cols):
    text = b"\n".join(lines)
    where = np.full(max(cols) + 1, -1, np.intp)
    where[list(cols)] = np.arange(len(cols))
    out = np.full((len(lines), len(cols)), np.nan)
    return _csv.parse(text, len(lines), where, out), out


def _bits(x):
    return np.asarray(x, float).view(np.uint64)


def _random_decimals(rng, k):
    """Decimals of every kind the fast path and its fallbacks meet: %.17g of random doubles of
    all magnitudes, short and long mantissas, leading zeros, exponents ±0…±330, signs."""
    out = []
    for _ in range(k):
        kind = rng.integers(6)
        if kind == 0:
            x = rng.normal() * 10.0 ** rng.integers(-25, 25)
            out.append(f"{x:.17g}")
        elif kind == 1:
            out.append(repr(float(rng.normal() * 10.0 ** rng.integers(-8, 12))))
        elif kind == 2:  # random digit strings, 1..25 digits, a point anywhere, an exponent
            digits = "".join(rng.choice(list("0123456789"), rng.integers(1, 26)))
            p = rng.integers(0, len(digits) + 1)
            s = digits[:p] + "." + digits[p:] if rng.random() < 0.8 else digits
            if s == ".":
                s = "0."
            if rng.random() < 0.5:
                s += f"e{rng.integers(-40, 40)}"
            out.append(("-" if rng.random() < 0.5 else "") + s)
        elif kind == 3:  # the halfway cases between two doubles (the rounding's hard cases)
            x = rng.uniform(0.5, 2.0) * 10.0 ** rng.integers(-10, 10)
            m, e = np.frexp(x)
            lo = np.ldexp(np.floor(m * 2 ** 53) / 2 ** 53, e)
            from decimal import Decimal, getcontext
            getcontext().prec = 60
            half = (Decimal(float(lo)) + Decimal(float(np.nextafter(lo, np.inf)))) / 2
            out.append(f"{half:.40g}"[:int(rng.integers(17, 41))])
        elif kind == 4:
            out.append(f"{rng.integers(-10**18, 10**18)}")
        else:
            out.append(f"{rng.normal():.17f}e{rng.integers(-330, 330)}")
    return out


def test_decimals_equal_python_float_bit_for_bit():
    rng = np.random.default_rng(30)
    fields = _random_decimals(rng, 60_000)
    lines = [",".join(fields[i:i + 6]).encode() for i in range(0, len(fields), 6)]
    r, out = _parse(lines, range(6))
    assert r == -1
    want = np.array([float(f) for f in fields]).reshape(out.shape)
    np.testing.assert_array_equal(_bits(out), _bits(want))


@pytest.mark.parametrize("text", [
    "1", "-0", "+0.0", "1.", ".5", "-.5e-3", "007.25", "1e5", "1E+05", " 2.5 ", "\t3",
    "1750000000.1229999", "0.00000000000000000000123456789", "123456789012345678901234",
    "9007199254740993", "1.7976931348623157e308", "2.2250738585072014e-308", "4.9e-324",
    "1e400", "-1e400", "1e-400"])
def test_accepted_fields_equal_float(text):
    r, out = _parse([f"{text},7".encode()], [0, 1])
    assert r == -1
    assert _bits(out[0, 0]) == _bits(float(text))
    assert out[0, 1] == 7.0


@pytest.mark.parametrize("text", [
    "", " ", "nan", "inf", "-Infinity", "0x10", "1_0", "abc", "1e", "1e+", ".", "-", "+.e1",
    "1.2.3", '"1.0"', "1 2", "1#c", "١٢"])
def test_other_fields_are_refused_with_their_line(text):
    lines = [b"1,2,3", f"4,{text},6".encode("utf-8"), b"7,8,9"]
    r, _ = _parse(lines, [0, 1])
    assert r == 1


def test_short_lines_crlf_and_unread_columns():
    r, out = _parse([b"1,2,3,x,y\r", b"4,5,6"], [2, 0])
    assert r == -1 and out.tolist() == [[3.0, 1.0], [6.0, 4.0]]
    r, _ = _parse([b"1,2,3", b"4,5"], [0, 2])
    assert r == 1
    r, _ = _parse([b"1,2,3"], [0, 1])  # fewer lines than asked for
    where = np.array([0, 1], np.intp)
    assert _csv.parse(b"1,2\n", 2, where, np.empty((2, 2))) == 1
    with pytest.raises(ValueError):
        _csv.parse(b"1,2\n", 3, where, np.empty((2, 2)))


def test_chunks_of_a_random_decimal_csv_equal_read_log(tmp_path):
    """A CSV whose fields are decimals of every kind: the chunked reader (compiled parser,
    loadtxt where it refuses) returns read_log's values bit for bit."""
    rng = np.random.default_rng(7)
    n, rows = 2, 3000
    names = ("j1", "j2")
    fields = np.array(_random_decimals(rng, rows * 2 * n), dtype=object).reshape(rows, 2 * n)
    t = [f"{1.75e9 + k / 1000.0:.17g}" for k in range(rows)]
    path = tmp_path / "log.csv"
    with open(path, "w") as f:
        f.write("time,j1/position,j2/position,junk,j1/effort,j2/effort\r\n")
        for k in range(rows):
            f.write(f"{t[k]},{fields[k, 0]},{fields[k, 1]},x,{fields[k, 2]},{fields[k, 3]}\r\n")
    whole = logs.read_csv(path, names)
    index = chunked.scan(path, names)
    for a, b in [(0, rows), (5, 1100), (1023, 1025), (2047, 3000)]:
        part = chunked._read_csv_rows(index, a, b)
        np.testing.assert_array_equal(_bits(part.time), _bits(whole.time[a:b]))
        np.testing.assert_array_equal(_bits(part.position), _bits(whole.position[a:b]))
        np.testing.assert_array_equal(_bits(part.effort), _bits(whole.effort[a:b]))
