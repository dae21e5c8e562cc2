"""How a call is timed: round-robin groups of statements, medians and ranges, ratios (bench/ room).

The clock is process CPU time by default (``set_clock``, ``--clock``): threads a batch call
starts add their CPU time to the call instead of hiding it (issue 21: threads add throughput, not
to the ratio), and other processes on a shared machine do not count. ``--clock wall`` gives
``time.perf_counter`` (the earlier reports)."""
from __future__ import annotations

import math
import time
import timeit
from dataclasses import dataclass, field

import numpy as np

CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}
_clock = {"name": "cpu"}


def set_clock(name: str) -> None:
    """Time with ``"cpu"`` (process CPU time, all threads) or ``"wall"`` from now on."""
    if name not in CLOCKS:
        raise ValueError(f"clock must be one of {', '.join(CLOCKS)}, got {name!r}")
    _clock["name"] = name


def clock_name() -> str:
    return _clock["name"]


@dataclass
class Stat:
    """Median and range of a list of samples."""
    values: list = field(default_factory=list)

    @property
    def med(self):
        return float(np.median(self.values)) if self.values else float("nan")

    @property
    def lo(self):
        return float(np.min(self.values)) if self.values else float("nan")

    @property
    def hi(self):
        return float(np.max(self.values)) if self.values else float("nan")

    def fmt(self, digits=3, scale=1.0):
        if not self.values:
            return "–"
        return (f"{_g(self.med * scale, digits)} [{_g(self.lo * scale, digits)}–"
                f"{_g(self.hi * scale, digits)}]")

    def to_dict(self):
        return {"median": self.med, "min": self.lo, "max": self.hi, "values": list(self.values)}


def _g(x, digits=3):
    if not math.isfinite(x):
        return str(x)
    if x == 0:
        return "0"
    e = math.floor(math.log10(abs(x)))
    dec = max(0, digits - 1 - e)
    return f"{x:.{dec}f}"


def _calibrate(timer, target):
    """Loop count so that one timing of ``timer`` takes about ``target`` seconds."""
    number = 1
    while True:
        t = timer.timeit(number)
        if t >= 0.2 * target or number >= 10 ** 7:
            return max(1, int(round(number * target / max(t, 1e-9))))
        number *= 10 if t < 0.02 * target else 2


def measure(stmt, ns, repeat, target):
    """µs per execution of ``stmt`` (a :class:`Stat` over ``repeat`` timings)."""
    return measure_group([stmt], ns, repeat, target)[0]


def measure_group(stmts, ns, repeat, target):
    """µs per execution of each statement, timed round-robin (the starting statement rotates
    between repeats) so that all of them see the same machine load. A list of :class:`Stat`
    whose ``values[r]`` all come from repeat ``r``."""
    timers = [timeit.Timer(s, globals=ns, timer=CLOCKS[_clock['name']]) for s in stmts]
    for t in timers:
        t.timeit(1)
    numbers = [_calibrate(t, target) for t in timers]
    k = len(stmts)
    vals = [[0.0] * repeat for _ in stmts]
    for r in range(repeat):
        for j in range(k):
            i = (r + j) % k
            vals[i][r] = timers[i].timeit(numbers[i]) / numbers[i] * 1e6
    return [Stat(v) for v in vals]


def ratio_stat(a: Stat, b: Stat) -> Stat:
    """Per-repeat ratio a/b of two Stats from the same :func:`measure_group`."""
    return Stat([x / y for x, y in zip(a.values, b.values)])


def min_stat(*stats: Stat) -> Stat:
    """Per-repeat minimum of Stats from the same :func:`measure_group` (the faster anchor)."""
    return Stat([min(v) for v in zip(*(s.values for s in stats))])


@dataclass
class Row:
    """One side-by-side comparison."""
    what: str
    ours: str
    anchor: str
    t_ours: Stat
    t_anchor: Stat
    ratio: Stat
    err: float = float("nan")   # max |ours − anchor| on the benchmark state
    key: str = ""               # TARGETS key when a target applies (Panda only)
    unit: str = "µs"

    def to_dict(self):
        return {"what": self.what, "ours": self.ours, "anchor": self.anchor, "unit": self.unit,
                "t_ours": self.t_ours.to_dict(), "t_anchor": self.t_anchor.to_dict(),
                "ratio": self.ratio.to_dict(), "max_abs_diff": self.err, "key": self.key}


def _maxdiff(a, b):
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b))))


# ------------------------------------------------------------------------------------------------
# The measurements
# ------------------------------------------------------------------------------------------------
def compare(rows, ns, args, label, what, ours, anchors, best=None, log=print, number_one=False):
    """Time ``ours`` and every anchor round-robin; append one :class:`Row` per anchor.

    Args:
        rows: list the rows are appended to.
        ns: namespace of the statements.
        what: the quantity (first column).
        ours: (label, statement).
        anchors: list of dicts with ``label``, ``stmt``, ``err`` and optional ``key``.
        best: optional (label, key): one more row against the faster anchor of each repeat.
        number_one: one execution per timing (batches), ``args.batch_repeat`` repeats.
    """
    t0 = time.perf_counter()
    stmts = [ours[1]] + [a["stmt"] for a in anchors]
    if number_one:
        stats = measure_group(stmts, ns, args.batch_repeat, 1e-12)
    else:
        stats = measure_group(stmts, ns, args.repeat, args.target_time)
    so, sa = stats[0], stats[1:]
    out = []
    for a, s in zip(anchors, sa):
        out.append(Row(what, ours[0], a["label"], so, s, ratio_stat(so, s),
                       err=a.get("err", math.nan),
                       key=a.get("key", "")))
    if best is not None and len(sa) > 1:
        sb = min_stat(*sa)
        out.append(Row(what, ours[0], best[0], so, sb, ratio_stat(so, sb),
                       err=max([a["err"] for a in anchors if math.isfinite(a.get("err", math.nan))]
                               or [math.nan]), key=best[1]))
    rows += out
    log(f"  {label:8s} {what:30s} ours {so.med:9.3f} µs  " + "  ".join(
        f"{r.anchor[:24]}: {r.t_anchor.med:.3f} ({r.ratio.med:.3f})" for r in out)
        + f"  [{time.perf_counter() - t0:.1f} s]")
    return out
