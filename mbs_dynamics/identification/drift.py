"""A fleet's logs: per robot and per time window the base parameters, friction and payload with
σ, and the parameters that drift (:func:`fleet`).

The tree ``LOGS_DIR/<robot_id>/<log>`` holds CSV files and rosbag2 directories (sqlite3 or MCAP)
of many robots of one model. Every log is cut into chunks (:mod:`.mapreduce`); each chunk's
samples are split by the window their absolute time stamp falls in (windows of ``window``
since the epoch, UTC; see :mod:`.chunked` for where a log's time comes from), the chunks run as
map steps in this process or on Dask (:mod:`.distributed`), and per robot and window the
statistics are added and solved once (:func:`~.pipeline.solve_statistics`, weighted least
squares with σ).

A parameter is flagged when it moves by more than k σ — σ of the difference,
(σ_a² + σ_b²)^½ — between consecutive windows of a robot ("window"), or from the fleet's median
in the same window, with σ of the robot's estimate ("fleet", with three robots or more). Each
flag names the robot, the window, the parameter, its kind ("friction" for ``<joint>.viscous`` /
``<joint>.coulomb``, "payload" for the base parameters of the last body, "inertial" otherwise),
the change and its size in σ.

A payload (a tool mounted or changed) is reported as what it is, a mass and a centre of mass on
the last body: when payload parameters are flagged, the change of the base parameters Δβ is a
linear image of the change of the last body's ten inertial parameters Δπ_L = (Δm, Δm c, ΔΘ)
(seed 000 §6: Δβ = T_L Δπ_L, T_L the base map's columns of that body), so Δπ_L is the
generalised least-squares fit of Δβ with its covariance C (of the two windows', or of the
robot's estimate and of the median of the other robots' estimates, whose variance is taken as
π/2n of their mean for n ≥ 3, the large-sample variance of a median): Δπ̂_L = (T_Lᵀ C⁺ T_L)⁺ T_Lᵀ C⁺ Δβ, its covariance
(T_Lᵀ C⁺ T_L)⁺. The mass is reported with σ when its direction is identifiable (in the range
of T_Lᵀ C⁺ T_L), the centre of mass c = Δh / Δm in the last body's frame with first-order σ.

Bad input does not stop the fleet: a log of another robot, a corrupt file or bag, an unreachable
scheduler each give one line naming the file or address (``FleetResult.errors``; the scheduler
falls back to a local run), and the rest is identified.
"""
from __future__ import annotations

import datetime as _dt
import json
import math
import re
from pathlib import Path

import numpy as np

from . import chunked as _chunked
from . import mapreduce as _mr
from .logs import LogError
from .pipeline import Unknowns, _jsonable, solve_statistics

__all__ = ["fleet", "FleetResult", "parse_window", "find_logs", "payload_change"]

_UNITS = {"s": 1, "sec": 1, "min": 60, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_window(window) -> int:
    """Window length [ns] of "1d", "12h", "30min", "90s", "2w" (or a number of seconds)."""
    if isinstance(window, (int, float)) and not isinstance(window, bool):
        sec = float(window)
    else:
        m = re.fullmatch(r"\s*(\d+(?:\.\d*)?)\s*(s|sec|min|m|h|d|w)\s*", str(window))
        if not m:
            raise ValueError(f"window {window!r}: expected a number and a unit "
                             "(s, min, h, d, w), e.g. '1d'")
        sec = float(m.group(1)) * _UNITS[m.group(2)]
    if not (math.isfinite(sec) and 1.0 <= sec <= 3.2e9):
        raise ValueError(f"window {window!r}: must lie between 1 s and 100 years")
    return int(round(sec * 1e9))


def _is_bag(p):
    return p.is_dir() and (any(p.glob("*.mcap")) or any(p.glob("*.db3"))
                           or (p / "metadata.yaml").exists())


def find_logs(logs_dir):
    """{robot_id: [log paths]} of the tree ``logs_dir/<robot_id>/<log>`` (CSV files, bag
    directories, sorted by name); other files are ignored."""
    root = Path(logs_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: no such directory (expected LOGS_DIR/<robot_id>/<log>)")
    out = {}
    for rd in sorted(x for x in root.iterdir() if x.is_dir()):
        found = [p for p in sorted(rd.iterdir())
                 if (p.is_file() and p.suffix.lower() == ".csv") or _is_bag(p)]
        if found:
            out[rd.name] = found
    return out


class FleetResult:
    """What :func:`fleet` returns.

    Attributes:
        robots: {robot_id: [window dicts]}: "window" (label), "start_ns", "end_ns", "samples",
            "parameters" {name: {"value", "sigma"}} (base parameters and friction), "payload"
            (the names of the last body's base parameters), "noise_sigma" per joint.
        flags: list of dicts: robot, window, parameter, kind, reason, change, size_sigma.
        payloads: list of dicts, one per robot, window and reason with flagged payload
            parameters: robot, window, reason, since, frame (the last body's link), mass [kg],
            mass_sigma, com [m] (3, in that link's frame), com_sigma, parameters (the fitted
            Δπ_L, :data:`~.parameters.PARAMETER_NAMES` order).
        errors: one line per log or address that could not be used.
        report: the JSON-able report (see :meth:`write`).
    """

    def __init__(self, **kw):
        self.__dict__.update(kw)

    def write(self, out, plots=True):
        """Write ``OUT/fleet_report.json`` and (``plots``, needs matplotlib) one figure per
        flagged robot, ``OUT/<robot_id>_drift.png``; returns the paths."""
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        paths = [out / "fleet_report.json"]
        paths[0].write_text(json.dumps(_jsonable(self.report), indent=1) + "\n")
        if plots and self.flags:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
            for rid in sorted({f["robot"] for f in self.flags}):
                paths.append(out / f"{_safe(rid)}_drift.png")
                plot_robot(plt, paths[-1], rid, self.robots[rid],
                           sorted({f["parameter"] for f in self.flags if f["robot"] == rid}))
        return [str(p) for p in paths]


def _safe(name):
    return re.sub(r"[^\w.-]", "_", name)[:100] or "robot"


def plot_robot(plt, path, rid, windows, names):
    """One panel per parameter: its value per window with ±σ bars and a ±σ band."""
    names = names[:12]
    fig, axes = plt.subplots(len(names), 1, sharex=True, figsize=(9, 1.8 * len(names) + 1.0),
                             squeeze=False)
    x = np.arange(len(windows))
    for ax, nm in zip(axes[:, 0], names):
        v = np.array([w["parameters"][nm]["value"] for w in windows])
        s = np.array([w["parameters"][nm]["sigma"] for w in windows])
        s = np.where(np.isfinite(s), s, 0.0)
        ax.fill_between(x, v - s, v + s, color="tab:blue", alpha=0.25, lw=0)
        ax.errorbar(x, v, yerr=s, fmt="o-", color="tab:blue", ms=3, lw=1, capsize=3)
        ax.set_ylabel(nm, fontsize="small")
        ax.grid(True, alpha=0.3)
    axes[-1, 0].set_xticks(x, [w["window"] for w in windows], rotation=30, fontsize="small")
    fig.suptitle(f"{rid}: flagged parameters per window (±σ)")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def _label(start_ns, window_ns):
    t = _dt.datetime.fromtimestamp(start_ns // 10 ** 9, tz=_dt.timezone.utc)
    return t.strftime("%Y-%m-%d") if window_ns % (86400 * 10 ** 9) == 0 else \
        t.strftime("%Y-%m-%dT%H:%M:%SZ")


def _kind(name, payload):
    if name.endswith((".viscous", ".coulomb")):
        return "friction"
    return "payload" if name in payload else "inertial"


def run_map(problem, chunks, *, scheduler=None, client=None, workers=2, progress=None,
            errors=None):
    """Map every chunk (in this process when ``workers`` is 0 and neither ``scheduler`` nor
    ``client`` is given, else on Dask); returns ({chunk id: result}, {chunk id: exception}).
    An unreachable scheduler adds its line to ``errors`` and the chunks run on a local cluster."""
    if client is None and scheduler is None and not workers:
        return _run_here(problem, chunks, progress)
    from . import distributed as _dist
    try:
        c, close = _dist.connect(scheduler, client, workers or 2)
    except _dist.SchedulerError as exc:
        if errors is not None:
            errors.append(f"{exc}; running " + ("on a local cluster" if workers else
                                                "in this process") + " instead")
        if not workers:
            return _run_here(problem, chunks, progress)
        c, close = _dist.connect(None, None, workers)
    try:
        return _dist.run_chunks(c, _mr.map_chunk, problem, chunks, progress)
    finally:
        close()


def _run_here(problem, chunks, progress):
    results, failed = {}, {}
    for i, ch in enumerate(chunks):
        try:
            results[ch.id] = _mr.map_chunk(problem, ch)
        except (LogError, ValueError, OSError) as exc:
            failed[ch.id] = exc
        if progress is not None:
            progress(i + 1, len(chunks), ch.id)
    return results, failed


def fleet(robot, logs_dir, window="1d", k=5.0, *, friction=True, cutoff=None,
          topic="/joint_states", torque_constants=None, scheduler=None, client=None, workers=2,
          rows=None, progress=None) -> FleetResult:
    """Identify every robot of a fleet per time window and flag the parameters that drift.

    Args:
        robot: the Robot of the fleet's model (its URDF; the prior of unexcited parameters).
        logs_dir: the tree ``<robot_id>/<log>`` (CSV files, rosbag2 directories).
        window: window length ("1d", "12h", "30min", … or seconds).
        k: flag changes larger than k σ.
        friction, cutoff, topic, torque_constants: as in :func:`~.pipeline.identify`.
        scheduler: "tcp://HOST:PORT" of a Dask scheduler; client: a dask Client; workers: the
            worker processes of a local cluster when neither is given (0: run in this process).
        rows: rows per chunk (default :data:`~.filtering.CHUNK_ROWS`).
        progress: optional callable(done, total, chunk_id).
    Returns:
        :class:`FleetResult`.
    Raises:
        FileNotFoundError: ``logs_dir`` is not a directory. ValueError: a bad window or k.
    """
    _mr._check_robot(robot)
    window_ns = parse_window(window)
    k = float(k)
    if not (math.isfinite(k) and k > 0):
        raise ValueError(f"k must be a positive number, got {k!r}")
    tree = find_logs(logs_dir)
    unk = Unknowns(robot, friction)
    problem = _mr.make_problem(unk, type(robot), cutoff, torque_constants, window_ns)
    errors, chunks, owner, logs_of = [], [], {}, {}
    for rid, paths in tree.items():
        for path in paths:
            li = len(owner)
            try:
                index = _chunked.scan(path, unk.joint_names, topic=topic)
                cs = _mr.plan(index, problem.cutoff, rows, log_id=li)
            except (LogError, ValueError, OSError) as exc:
                errors.append(_line(path, exc))
                continue
            owner[li] = (rid, str(path))
            logs_of.setdefault(rid, []).append(str(path))
            chunks += cs
    results, failed = run_map(problem, chunks, scheduler=scheduler, client=client,
                              workers=workers, progress=progress, errors=errors)
    bad_logs = {cid[0] for cid in failed}
    for li in sorted(bad_logs):
        exc = failed[min(c for c in failed if c[0] == li)]
        errors.append(_line(owner[li][1], exc) + " (the log is left out)")
    payload = _payload_names(unk)
    robots, covs = {}, {}
    for rid in sorted(logs_of):
        mine = {cid: r for cid, r in results.items()
                if owner[cid[0]][0] == rid and cid[0] not in bad_logs}
        wins = []
        for w, (neq, t0, t1) in sorted(_mr.reduce(mine).items()):
            sol = solve_statistics(robot, unk, neq, consistent=None)
            est = sol.estimate
            covs[rid, _label(w * window_ns, window_ns)] = est.covariance[:unk.p, :unk.p]
            wins.append({
                "window": _label(w * window_ns, window_ns), "start_ns": t0, "end_ns": t1,
                "samples": int(neq.N),
                "parameters": {nm: {"value": float(est.x[i]), "sigma": float(est.sigma[i])}
                               for i, nm in enumerate(unk.names)},
                "noise_sigma": dict(zip(unk.joint_names, est.noise.tolist())),
                "unexcited": list(est.unexcited), "warnings": sol.warnings})
        if wins:
            robots[rid] = wins
    flags = _flags(robots, unk.names, payload, k)
    payloads = _payloads(flags, robots, covs, unk)
    report = {"robot_model": getattr(unk.model, "name", ""), "logs_dir": str(logs_dir),
              "window": str(window), "window_seconds": window_ns / 1e9, "k": k,
              "joints": list(unk.joint_names), "payload_parameters": sorted(payload),
              "logs": logs_of, "robots": robots, "flags": flags, "payloads": payloads,
              "errors": errors}
    return FleetResult(robots=robots, flags=flags, payloads=payloads, errors=errors,
                       report=report)


def _line(path, exc):
    msg = " ".join(str(exc).split())
    return msg if str(path) in msg else f"{path}: {msg}"


def _payload_names(unk):
    """The base parameters that involve the last body's parameters (a tool or payload): built on
    one of them or regrouping one (β = π_B + K π_D)."""
    base = unk.base
    last = set(range(len(base.full_names) - 10, len(base.full_names)))
    dep = np.array([d in last for d in base.dependent], bool)
    out = set()
    for r, (c, nm) in enumerate(zip(base.columns, base.names)):
        if c in last or (dep.any() and np.any(np.abs(base.K[r, dep]) > 1e-12)):
            out.add(nm)
    return out


def payload_change(TL, dbeta, cov):
    """The change of the last body's inertial parameters that explains a change of the base
    parameters (see the module docstring).

    Args:
        TL: (p, 10) the base map's columns of the last body.
        dbeta: (p,) change of the base parameters.
        cov: (p, p) its covariance.
    Returns:
        dict: parameters (10,) Δπ_L, covariance (10, 10), mass and mass_sigma [kg] (None when
        the mass is not identifiable from the base parameters), com and com_sigma [m] (None
        without a mass).
    """
    W = np.linalg.pinv(cov, rcond=1e-12, hermitian=True)
    N = TL.T @ W @ TL
    Ninv = np.linalg.pinv(N, rcond=1e-12, hermitian=True)
    x = Ninv @ (TL.T @ W @ dbeta)
    out = {"parameters": x, "covariance": Ninv, "mass": None, "mass_sigma": None,
           "com": None, "com_sigma": None}
    e0 = np.zeros(10)
    e0[0] = 1.0
    if np.linalg.norm(N @ (Ninv @ e0) - e0) > 1e-6:  # e0 outside the range: m not identifiable
        return out
    m, sm = float(x[0]), float(np.sqrt(max(Ninv[0, 0], 0.0)))
    out["mass"], out["mass_sigma"] = m, sm
    if abs(m) > 3.0 * sm and m != 0.0:
        c = x[1:4] / m
        J = np.zeros((3, 10))  # ∂c/∂(m, h)
        J[:, 0] = -x[1:4] / m ** 2
        J[:, 1:4] = np.eye(3) / m
        out["com"] = c.tolist()
        out["com_sigma"] = np.sqrt(np.maximum(np.diag(J @ Ninv @ J.T), 0.0)).tolist()
    return out


def _payloads(flags, robots, covs, unk):
    """A mass and centre of mass per robot, window and reason whose payload parameters are
    flagged (:func:`payload_change`)."""
    p = unk.p
    TL = unk.T[:, -10:]
    frame = unk.base.full_names[-1].rsplit(".", 1)[0] if unk.base.full_names else ""
    out, seen = [], set()
    for f in flags:
        key = (f["robot"], f["window"], f["reason"])
        if f["kind"] != "payload" or key in seen:
            continue
        seen.add(key)
        rid, lab, why = key
        wins = {w["window"]: w for w in robots[rid]}
        beta = np.array([wins[lab]["parameters"][nm]["value"] for nm in unk.names[:p]])
        if why == "window":
            ref = np.array([wins[f["since"]]["parameters"][nm]["value"]
                            for nm in unk.names[:p]])
            cov = covs[rid, lab] + covs[rid, f["since"]]
            since = f["since"]
        else:  # the median of the other robots, with the σ of a median of n estimates
            others = [r for r in robots if r != rid and any(w["window"] == lab
                                                             for w in robots[r])]
            ref = np.array([np.median([w["parameters"][nm]["value"] for r in others
                                       for w in robots[r] if w["window"] == lab])
                            for nm in unk.names[:p]])
            n_o = len(others)
            mean_cov = sum(covs[r, lab] for r in others) / n_o
            cov = covs[rid, lab] + mean_cov * ((np.pi / 2 if n_o >= 3 else 1.0) / n_o)
            since = "fleet median"
        fit = payload_change(TL, beta - ref, cov)
        out.append({"robot": rid, "window": lab, "reason": why, "since": since,
                    "frame": frame, "mass": fit["mass"], "mass_sigma": fit["mass_sigma"],
                    "com": fit["com"], "com_sigma": fit["com_sigma"],
                    "parameters": fit["parameters"].tolist()})
    return out


def _flags(robots, names, payload, k):
    out = []
    for rid, wins in robots.items():
        for a, b in zip(wins[:-1], wins[1:]):
            for nm in names:
                pa, pb = a["parameters"][nm], b["parameters"][nm]
                s = math.hypot(pa["sigma"], pb["sigma"])
                d = pb["value"] - pa["value"]
                if math.isfinite(s) and s > 0 and abs(d) > k * s:
                    out.append({"robot": rid, "window": b["window"], "parameter": nm,
                                "kind": _kind(nm, payload), "reason": "window",
                                "change": d, "size_sigma": abs(d) / s,
                                "since": a["window"]})
    if len(robots) >= 3:
        labels = sorted({w["window"] for ws in robots.values() for w in ws})
        for lab in labels:
            here = {rid: w for rid, ws in robots.items() for w in ws if w["window"] == lab}
            if len(here) < 3:
                continue
            for nm in names:
                vals = np.array([w["parameters"][nm]["value"] for w in here.values()])
                med = float(np.median(vals))
                for rid, w in here.items():
                    p = w["parameters"][nm]
                    d = p["value"] - med
                    if math.isfinite(p["sigma"]) and p["sigma"] > 0 and \
                            abs(d) > k * p["sigma"]:
                        out.append({"robot": rid, "window": lab, "parameter": nm,
                                    "kind": _kind(nm, payload), "reason": "fleet",
                                    "change": d, "size_sigma": abs(d) / p["sigma"]})
    out.sort(key=lambda f: (f["robot"], f["window"], f["parameter"], f["reason"]))
    return out
