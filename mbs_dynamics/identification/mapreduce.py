"""Identification as map-reduce: sufficient statistics of chunks of logs, added, solved once.

The weighted least squares of :func:`~.pipeline.identify` needs only, per joint j, the normal
equations A_j = Σ Y_b,jᵀ Y_b,j, b_j = Σ Y_b,jᵀ τ_j, c_j = Σ τ_j² and the sample count N
(:class:`~.estimate.NormalEquations`): the residual sums of squares that give the weights and σ
are c_j − 2 b_jᵀx + xᵀA_j x. These are sums over samples, so

* **map** (:func:`map_chunk`): read rows [a, b) of one log (:mod:`.chunked`) plus
  :func:`~.filtering.overlap_samples` on each side, filter and differentiate the whole segment
  at the log's rate (the overlap carries the zero-phase filter's start-up transients, which decay below 1e-16 of
  the signal there, so the kept rows equal those of the whole log filtered at once), build the
  regressor in the compiled batch path and add the statistics
  (:class:`~.estimate.Accumulator`), separately for each time window the samples fall in;
  memory is bounded by the chunk;
* **reduce** (:func:`reduce`): add the chunks' statistics per window, in the order of the chunk
  ids (a chunk computed twice — a lost worker's task rerun — is stored once under its id, so it
  is never counted twice, and the sum does not depend on the order in which results arrive);
* **solve** (:func:`~.pipeline.solve_statistics`): the one solve :func:`~.pipeline.identify`
  also uses.

The first and last ``edge`` samples of every log are dropped as in :func:`identify` (the
filter's transients at the log's true ends), and every chunk is filtered at the rate
:func:`identify` uses (the median of the log's first intervals), so the result equals
:func:`identify`'s to rounding (tested to 1e-10 relative). A log whose intervals jitter by
more than :data:`~.filtering.JITTER` is resampled chunk by chunk on a grid starting at the
segment's first sample (an interpolation difference of the order of the jitter).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import chunked as _chunked
from . import estimate as _estimate
from . import filtering as _filtering
from ..model.description import refuse_lie_joints

__all__ = ["Chunk", "Problem", "plan", "map_chunk", "reduce", "statistics", "CHUNK_ROWS"]

CHUNK_ROWS = _filtering.CHUNK_ROWS
#: Rows of the head of a log read to estimate its rate for the overlap (:func:`plan`).
_HEAD = _filtering.RATE_INTERVALS + 1


@dataclass(frozen=True, eq=False)
class Chunk:
    """One map task: rows [keep_a, keep_b) of the log ``index`` (:class:`~.chunked.LogIndex`),
    read and filtered as the segment [lo, hi) (:func:`~.filtering.chunks`) at the log's ``rate``
    [Hz] (:func:`~.filtering.sampling_rate` of its head). ``id`` = (log number, chunk number)
    orders the reduce."""

    id: tuple
    index: object
    lo: int
    keep_a: int
    keep_b: int
    hi: int
    rate: float


@dataclass(frozen=True, eq=False)
class Problem:
    """What a map step needs (picklable; the Robot is rebuilt from ``model`` on a worker).

    Attributes:
        model: the robot's Model. F: (10 nb, p) from_base. names: the unknowns.
        friction: friction columns. cutoff: low-pass cut-off [Hz].
        torque_constants: None or (n,) k_t (effort is a current). window_ns: None (one window)
        or the window length [ns]; windows start at multiples of it since the epoch (UTC).
        key: identifies the model within a worker process (its Robot is built once).
        robot_type: the class of the caller's robot, which a worker builds from ``model``
            (pickled by reference).
    """

    model: object
    F: np.ndarray
    names: tuple
    friction: bool
    cutoff: float
    torque_constants: object = None
    window_ns: int | None = None
    key: str = ""
    robot_type: type = None


def plan(index, cutoff=_filtering.DEFAULT_CUTOFF, rows=None, log_id=0):
    """The chunks of one indexed log, cut as :func:`~.filtering.filter_states` cuts it.

    Raises:
        LogError / ValueError: the log's head is unusable (named), the cut-off is above Nyquist,
        too few samples.
    """
    head = _chunked.read_rows(index, 0, min(index.rows, _HEAD))
    rate = _filtering.sampling_rate(head, cutoff)
    return [Chunk((log_id, k), index, lo, ka, kb, hi, rate) for k, (lo, ka, kb, hi)
            in enumerate(_filtering.chunks(index.rows, rate, cutoff, rows, index.path))]


_ROBOTS = {}


def _robot(problem):
    """A Robot of the problem's model, one per model per process (the map step's workspace)."""
    hit = _ROBOTS.get(problem.key) if problem.key else None
    if hit is None:
        if len(_ROBOTS) > 8:
            _ROBOTS.clear()
        hit = problem.robot_type(problem.model)
        if problem.key:
            _ROBOTS[problem.key] = hit
    return hit


def map_chunk(problem: Problem, chunk: Chunk):
    """Sufficient statistics of one chunk, per window.

    Returns:
        {window: (NormalEquations, first_ns, last_ns)} for the windows its kept samples fall in
        (window 0 when ``problem.window_ns`` is None); first/last_ns: absolute times of the
        window's first and last sample in this chunk.
    """
    index = chunk.index
    lo = chunk.lo
    seg = _chunked.read_rows(index, lo, chunk.hi)
    rate = chunk.rate
    keep = slice(chunk.keep_a - lo, chunk.keep_b - lo)
    fs = _filtering.filter_segment(seg, problem.cutoff, keep, rate)
    tau = seg.effort[keep]
    if problem.torque_constants is not None:
        tau = tau * problem.torque_constants
    robot = _robot(problem)
    ns = index.absolute_ns(seg.time[keep])
    if problem.window_ns is None:
        wins = np.zeros(ns.size, np.int64)
    else:
        wins = ns // int(problem.window_ns)
    cut = np.flatnonzero(np.diff(wins)) + 1
    out = {}
    for a, b in zip(np.concatenate([[0], cut]), np.concatenate([cut, [ns.size]])):
        neq = _estimate.accumulate(robot, problem.F, fs.q[a:b], fs.qd[a:b], fs.qdd[a:b],
                                   tau[a:b], friction=problem.friction, names=problem.names)
        out[int(wins[a])] = (neq, int(ns[a]), int(ns[b - 1]))
    return out


def reduce(results):
    """Add chunk results ``{chunk_id: map_chunk(...)}`` per window, in chunk-id order.

    Returns:
        {window: (NormalEquations, first_ns, last_ns)}.
    """
    out = {}
    for cid in sorted(results):
        for w, (neq, t0, t1) in results[cid].items():
            if w not in out:
                n = neq.A.shape[0]
                out[w] = (_estimate.NormalEquations(n, neq.names).merge(neq), t0, t1)
            else:
                acc, a0, a1 = out[w]
                out[w] = (acc.merge(neq), min(a0, t0), max(a1, t1))
    return out


def statistics(robot, logs, *, friction=True, cutoff=None, topic="/joint_states",
               torque_constants=None, window_ns=None, rows=None):
    """Map and reduce in this process (the reference for a distributed run): the statistics of
    ``logs`` (paths) per window, and the :class:`Problem`."""
    from .pipeline import Unknowns
    _check_robot(robot)
    unk = Unknowns(robot, friction)
    problem = make_problem(unk, type(robot), cutoff, torque_constants, window_ns)
    results = {}
    for i, path in enumerate(logs):
        index = _chunked.scan(path, unk.joint_names, topic=topic)
        for ch in plan(index, problem.cutoff, rows, log_id=i):
            results[ch.id] = map_chunk(problem, ch)
    return reduce(results), unk


def _check_robot(robot):
    if getattr(robot, "floating_base", False):
        raise ValueError("identification from joint logs needs a fixed-base robot")
    refuse_lie_joints(robot, "identification from joint logs")
    if getattr(robot, "full_robot", None) is not None:
        raise ValueError("a robot with mimic joints is identified one log at a time with "
                         "identify(), not in chunks")


def make_problem(unknowns, robot_type, cutoff=None, torque_constants=None, window_ns=None):
    """The :class:`Problem` of :class:`~.pipeline.Unknowns` ``unknowns`` of a robot of class
    ``robot_type`` (built from a Model: mimic joints are not supported here)."""
    cutoff = _filtering.DEFAULT_CUTOFF if cutoff is None else float(cutoff)
    kt = None
    if torque_constants is not None:
        n = len(unknowns.joint_names)
        kt = np.broadcast_to(np.asarray(torque_constants, float), (n,)).copy()
        if not np.all(np.isfinite(kt)) or np.any(kt == 0):
            raise ValueError(f"torque constants must be finite and non-zero, got {kt.tolist()}")
    import hashlib
    import pickle
    key = hashlib.sha1(pickle.dumps(unknowns.model)).hexdigest()
    return Problem(unknowns.model, unknowns.F, unknowns.names, unknowns.friction, cutoff, kt,
                   None if window_ns is None else int(window_ns), key, robot_type)
