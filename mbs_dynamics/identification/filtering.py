"""Zero-phase low-pass filtering and differentiation of logged joint positions (scipy.signal).

q is filtered forward and backward (``filtfilt``) by a Butterworth low-pass of order 4 with
cut-off ``cutoff`` [Hz] (effective order 8, no phase lag, −6 dB at the cut-off), then
differentiated by second-order central differences (a log whose sampling intervals jitter by
more than JITTER is first interpolated onto a uniform grid, the results back onto its times):
q̇ = d q_f/dt (or the filtered logged velocity when there is one), q̈ = d q̇_f/dt. The torques are
*not* filtered, so their noise stays white and the least-squares σ of the parameters needs no
correction for filtering. The signal is padded by its odd extension over ten periods of the
cut-off, and the first and last ``edge`` samples (three periods) are dropped: the filter's
start-up transients live there (measured on a 7-joint Fourier trajectory at 1 kHz, 10 Hz: q̈
error 4e-5 rad/s² at three periods from the end, 6e-6 inside).
"""
from __future__ import annotations

import numpy as np

__all__ = ["DEFAULT_CUTOFF", "FilteredStates", "filter_states", "filter_segment", "edge_samples",
           "sampling_rate", "overlap_samples", "OVERLAP_PERIODS", "chunks", "CHUNK_ROWS",
           "RATE_INTERVALS"]

#: Default cut-off [Hz]: above the bandwidth of exciting trajectories (a few Hz), well below the
#: noise of twice-differentiated encoder positions at 0.5–2 kHz logging.
DEFAULT_CUTOFF = 10.0
ORDER = 4


class FilteredStates:
    """q, q̇, q̈ at the kept samples ``rows`` of a log (see :func:`filter_states`)."""

    __slots__ = ("rows", "q", "qd", "qdd", "cutoff", "rate", "theta", "thetad", "thetadd",
                 "pieces")

    def __init__(self, rows, q, qd, qdd, cutoff, rate, theta=None, thetad=None, thetadd=None):
        self.rows, self.q, self.qd, self.qdd = rows, q, qd, qdd
        self.cutoff, self.rate = cutoff, rate
        self.theta, self.thetad, self.thetadd = theta, thetad, thetadd
        self.pieces = [(0, q.shape[0])]


def edge_samples(rate, cutoff):
    """Samples dropped at each end: three periods of the cut-off (at least 10; a rate that
    misses an integer count by rounding, 1/median(Δt) = 1000.0000001 Hz, gives that count)."""
    return max(10, int(np.ceil(3.0 * rate / cutoff - 1e-6)))


def _lowpass(x, rate, cutoff):
    from scipy.signal import butter, sosfiltfilt
    sos = butter(ORDER, cutoff, btype="low", fs=rate, output="sos")
    padlen = min(x.shape[0] - 1, int(np.ceil(10.0 * rate / cutoff)))
    return sosfiltfilt(sos, x, axis=0, padtype="odd", padlen=padlen)


#: Relative deviation of a sampling interval from the median above which the log is resampled.
JITTER = 1e-3


def _derivatives(t, x, rate, cutoff, xd=None):
    """Filtered x, ẋ, ẍ at the times t. Jittered logs are first interpolated (linearly) onto a
    uniform grid — the filter treats samples as equally spaced, and the jitter of t times ẋ
    would otherwise pass as signal into the differences — and the results interpolated back."""
    dt = 1.0 / rate
    if np.abs(np.diff(t) - dt).max() > JITTER * dt:
        m = int(np.floor((t[-1] - t[0]) * rate)) + 1
        tu = t[0] + dt * np.arange(m)
        xu = np.column_stack([np.interp(tu, t, c) for c in x.T])
        xdu = None if xd is None else np.column_stack([np.interp(tu, t, c) for c in xd.T])
        out = _derivatives(tu, xu, rate, cutoff, xdu)
        return tuple(np.column_stack([np.interp(t, tu, c) for c in a.T]) for a in out)
    xf = _lowpass(x, rate, cutoff)
    xd = np.gradient(xf, dt, axis=0) if xd is None else _lowpass(xd, rate, cutoff)
    return xf, xd, np.gradient(xd, dt, axis=0)


def filter_states(log, cutoff=DEFAULT_CUTOFF, rows=None) -> FilteredStates:
    """Zero-phase filtered q, q̇, q̈ (and θ, θ̇, θ̈ of a series elastic log) of a checked
    :class:`~.logs.JointLog`, filtered in the chunks of :func:`chunks` (exactly as the map
    steps of :mod:`.mapreduce` filter them).

    Args:
        log: the log (times strictly increasing, finite values).
        cutoff: low-pass cut-off [Hz]; must lie below the Nyquist frequency of the median
            sampling rate.
        rows: rows per chunk (default :data:`CHUNK_ROWS`).
    Returns:
        :class:`FilteredStates` at the rows ``slice(edge, N − edge)``; its ``pieces`` are the
        (start, stop) of each chunk's rows in the returned arrays.
    Raises:
        ValueError: the cut-off is not below Nyquist, or the log is too short for the filter.
    """
    rate = sampling_rate(log, cutoff)
    N = log.time.shape[0]
    plan = chunks(N, rate, cutoff, rows, log.source)
    parts = [filter_segment(log.select(slice(lo, hi)), cutoff, slice(ka - lo, kb - lo), rate)
             for lo, ka, kb, hi in plan]
    cat = (lambda k: None if getattr(parts[0], k) is None
           else np.concatenate([getattr(x, k) for x in parts]))
    out = FilteredStates(slice(plan[0][1], plan[-1][2]), cat("q"), cat("qd"), cat("qdd"),
                         cutoff, rate, cat("theta"), cat("thetad"), cat("thetadd"))
    sizes = np.cumsum([0] + [x.q.shape[0] for x in parts])
    out.pieces = list(zip(sizes[:-1].tolist(), sizes[1:].tolist()))
    return out


#: Rows of a log per chunk (a map task of :mod:`.mapreduce`; memory ~0.5 kB per row of a
#: 7-joint arm).
CHUNK_ROWS = 100_000


def chunks(N, rate, cutoff, rows=None, source="log"):
    """How a log of N samples is cut: (lo, keep_a, keep_b, hi) per chunk — its rows
    [keep_a, keep_b) are read and filtered as the segment [lo, hi), i.e. with
    :func:`overlap_samples` more on each side, and the whole log's first and last ``edge``
    samples (:func:`edge_samples`; a short log keeps its middle half) are in no chunk.

    Raises:
        ValueError: fewer than 60 samples.
    """
    if N < 60:
        raise ValueError(f"{source}: {N} samples are too few to filter and differentiate "
                         "(identification needs many more)")
    edge = edge_samples(rate, cutoff)
    if N < 4 * edge + 10:  # a short log: keep the middle half (the ends are less accurate)
        edge = max(5, N // 4)
    ov = overlap_samples(rate, cutoff)
    rows = max(int(CHUNK_ROWS if rows is None else rows), ov)
    cuts = list(range(edge, N - edge, rows)) + [N - edge]
    if len(cuts) > 2 and cuts[-1] - cuts[-2] < ov:  # no short last chunk
        del cuts[-2]
    return [(max(0, a - ov), a, b, min(N, b + ov)) for a, b in zip(cuts[:-1], cuts[1:])]


#: The sampling rate is measured on the first RATE_INTERVALS intervals of a log, so that a chunk
#: of a long log (:mod:`.mapreduce`) is filtered with the same rate, to the last bit, as the
#: whole log.
RATE_INTERVALS = 65536


def sampling_rate(log, cutoff):
    """1 / the median of the first :data:`RATE_INTERVALS` sampling intervals of ``log`` [Hz];
    ValueError unless ``cutoff`` lies below its Nyquist frequency."""
    rate = 1.0 / float(np.median(np.diff(log.time[:RATE_INTERVALS + 1])))
    if not (0 < cutoff < 0.5 * rate):
        raise ValueError(f"{log.source}: cut-off {cutoff:g} Hz must lie below the Nyquist "
                         f"frequency {0.5 * rate:g} Hz of the {rate:g} Hz log")
    return rate


#: Samples a chunk of a log is read beyond its rows on each side, in periods of the cut-off:
#: the slowest pole of the order-4 Butterworth decays as exp(−2π cos(3π/8) f_c t) ≈ e^(−2.4) per
#: period, so after 16 periods the start-up transient of the forward-backward filter is below
#: 1e-16 of the signal and a chunk's rows equal those of the whole log filtered at once.
OVERLAP_PERIODS = 16


def overlap_samples(rate, cutoff):
    """Samples a chunk is read beyond its rows on each side (:data:`OVERLAP_PERIODS`)."""
    return int(np.ceil(OVERLAP_PERIODS * rate / cutoff)) + 2


def filter_segment(log, cutoff, keep, rate) -> FilteredStates:
    """Filter and differentiate all of ``log`` (a whole log or a chunk read with its overlap)
    and return the states at the rows ``keep`` (a slice of the segment's rows)."""
    q, qd, qdd = _derivatives(log.time, log.position, rate, cutoff, log.velocity)
    out = FilteredStates(keep, q[keep], qd[keep], qdd[keep], cutoff, rate)
    if log.motor_position is not None:
        th, thd, thdd = _derivatives(log.time, log.motor_position, rate, cutoff)
        out.theta, out.thetad, out.thetadd = th[keep], thd[keep], thdd[keep]
    return out
