"""Trajectory-level work: enriching a trajectory as the proxy does, and the n-joint scaling plot."""
from __future__ import annotations

import time

import numpy as np

from peers import make_pin_routes, pin_model
from robots import chain_urdf, robot_xml
from settings import G0
from timing import Stat, measure, measure_group


def bench_enrichment(args, log) -> dict:
    """Cost of enriching a trajectory as issue 11's proxy does (Panda, public API only).

    A C⁴ :class:`~mbs_dynamics.control.trajectory.Trajectory` through 1 s-spaced waypoints is resampled at
    1 kHz with ``sample_many``; then τ, τ′, τ″ in one batch call (effort output), or
    ``sea_feedforward`` on the (N, 5, n) samples (motor output)."""
    import mbs_dynamics as mbs
    from mbs_dynamics.control.feedforward import sea_feedforward
    from mbs_dynamics.control.trajectory import Trajectory
    xml, locked, _, _ = robot_xml("panda", args)
    r = mbs.load_urdf(xml, locked_joints=locked, gravity=(0.0, 0.0, -G0))
    n, T, rate = r.n, float(args.enrich_duration), 1000.0
    lo, hi = np.asarray(r.lower), np.asarray(r.upper)
    mid, half = 0.5 * (lo + hi), 0.3 * (hi - lo)
    m = max(1, int(round(T)))
    times = np.linspace(0.0, T, m + 1)
    rng = np.random.default_rng(args.seed + 3)
    pos = mid + half * rng.uniform(-1.0, 1.0, (m + 1, n))
    names = list(r.joint_names)
    traj = Trajectory(names, times, pos)
    ts = traj.times_at_rate(rate)
    QS = traj.sample_many(ts)
    ns = dict(Trajectory=Trajectory, names=names, times=times, pos=pos, traj=traj, ts=ts, QS=QS,
              r=r, sea=sea_feedforward, K=np.full(n, 3000.0), B=np.full(n, 0.3))
    steps = [("build the spline: `Trajectory(names, times, positions)`",
              "Trajectory(names, times, pos)"),
             ("resample at 1 kHz: `traj.sample_many(ts)`", "traj.sample_many(ts)"),
             ("τ, τ′, τ″: `robot.torque_derivatives(QS)`", "r.torque_derivatives(QS)"),
             ("τ only: `robot.inverse_dynamics(QS[:, 0], QS[:, 1], QS[:, 2])`",
              "r.inverse_dynamics(QS[:, 0], QS[:, 1], QS[:, 2])"),
             ("SEA: `sea_feedforward(robot, QS, K, B)` (θ, θ′, θ″, τ_m)", "sea(r, QS, K, B)")]
    sres = sea_feedforward(r, QS, np.full(n, 3000.0), np.full(n, 0.3))
    fin = bool(np.all(np.isfinite(r.torque_derivatives(QS))) and all(
        np.all(np.isfinite(v)) for v in (sres.theta, sres.theta_dot, sres.theta_ddot,
                                         sres.tau_motor)))
    stats = measure_group([s for _, s in steps], ns, args.batch_repeat, 1e-12)
    out = {"duration": T, "rate": rate, "samples": int(ts.shape[0]), "waypoints": m + 1, "n": n,
           "steps": [(label, st) for (label, _), st in zip(steps, stats)], "finite": bool(fin)}
    effort = Stat([a + b + c for a, b, c in zip(stats[0].values, stats[1].values,
                                                 stats[2].values)])
    motor = Stat([a + b + c for a, b, c in zip(stats[0].values, stats[1].values,
                                                stats[4].values)])
    out["total_effort"], out["total_motor"] = effort, motor
    log(f"  enrichment {T:g} s at 1 kHz ({ts.shape[0]} samples): effort {effort.med / 1e3:.2f} ms, "
        f"motor (SEA) {motor.med / 1e3:.2f} ms")
    return out


def bench_scaling(args, log) -> dict:
    """Chains of n joints: recursive vs closed-form τ, τ′, τ″ (and Pinocchio's τ′ route)."""
    import mbs_dynamics as mbs
    sizes = [int(s) for s in args.scaling.split(",") if s.strip()]
    res = {"n": sizes, "recursive": [], "closed_form": [], "pin_taud": []}
    for n in sizes:
        t0 = time.perf_counter()
        xml = chain_urdf(n, args.seed)
        r = mbs.load_urdf(xml, gravity=(0.0, 0.0, -G0))
        pm = pin_model(xml, {})
        taud, _ = make_pin_routes(pm, pm.createData(), False)
        qs = np.random.default_rng(args.seed + n).standard_normal((5, n))
        ns = dict(td=r.torque_derivatives, qs=qs, taud=taud)
        rec, pt = measure_group(["td(qs)", "taud(qs[0], qs[1], qs[2], qs[3])"], ns,
                                args.repeat, args.target_time)
        res["recursive"].append(rec)
        res["pin_taud"].append(pt)
        # the dense O(n³) closed form gets fewer repeats at large n (seconds per call at n = 96)
        res["closed_form"].append(measure("td(qs, method='closed_form')", ns,
                                          args.repeat if n <= 24 else min(args.repeat, 3),
                                          args.target_time))
        log(f"  scaling n={n:3d}: recursive {res['recursive'][-1].med:10.1f} µs  closed form "
            f"{res['closed_form'][-1].med:12.1f} µs  pin τ′ {res['pin_taud'][-1].med:8.1f} µs  "
            f"({time.perf_counter() - t0:.1f} s)")
    return res


def _slope(ns, ts):
    """Least-squares slope of log t vs log n."""
    if len(ns) < 2:
        return float("nan")
    return float(np.polyfit(np.log(ns), np.log(ts), 1)[0])


def scaling_summary(sc) -> dict:
    """Slopes (all points and the three largest n) and the crossover of the two methods."""
    n = np.array(sc["n"], dtype=float)
    rec = np.array([s.med for s in sc["recursive"]])
    cf = np.array([s.med for s in sc["closed_form"]])
    out = {"slope_rec": _slope(n, rec), "slope_rec_tail": _slope(n[-3:], rec[-3:]),
           "slope_cf": _slope(n, cf), "slope_cf_tail": _slope(n[-3:], cf[-3:]),
           "per_joint_rec": rec / n, "cross": None, "cf_over_rec": cf / rec}
    d = np.log(cf) - np.log(rec)
    for i in range(len(n) - 1):
        if d[i] == 0 or d[i] * d[i + 1] < 0:
            f = d[i] / (d[i] - d[i + 1]) if d[i] != d[i + 1] else 0.0
            out["cross"] = float(np.exp(np.log(n[i]) + f * (np.log(n[i + 1]) - np.log(n[i]))))
            break
    return out


def plot_scaling(sc, summ, path):
    """Log-log plot of time vs n (matplotlib Agg)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    n = np.array(sc["n"], dtype=float)
    fig, ax = plt.subplots(figsize=(7.5, 5.0), dpi=110)
    tail = f" over n ≥ {int(n[-3])}" if len(n) >= 3 else ""
    for key, lab, st in (("recursive", "ours, recursive (O(n), doc/math.md)", "o-"),
                         ("closed_form", "ours, closed form (dense NumPy, seed 004)", "s-"),
                         ("pin_taud", "Pinocchio τ′ route (τ, τ′ only; reference)", "^--")):
        med = np.array([s.med for s in sc[key]])
        lo = np.array([s.lo for s in sc[key]])
        hi = np.array([s.hi for s in sc[key]])
        if key == "recursive":
            lab += f", slope {summ['slope_rec_tail']:.2f}{tail}"
        elif key == "closed_form":
            lab += f", slope {summ['slope_cf_tail']:.2f}{tail}"
        ax.errorbar(n, med, yerr=[med - lo, hi - med], fmt=st, capsize=3, label=lab,
                    color={"recursive": "C0", "closed_form": "C3", "pin_taud": "0.45"}[key])
    rec = np.array([s.med for s in sc["recursive"]])
    ax.plot(n, rec[-1] * n / n[-1], ":", color="C0", alpha=0.6, label="O(n) through the largest n")
    cf = np.array([s.med for s in sc["closed_form"]])
    ax.plot(n, cf[-1] * (n / n[-1]) ** 3, ":", color="C3", alpha=0.6,
            label="O(n³) through the largest n")
    if summ["cross"] is not None:
        ax.axvline(summ["cross"], color="k", lw=0.8)
        ax.text(summ["cross"], ax.get_ylim()[0], f" crossover n ≈ {summ['cross']:.0f}",
                va="bottom")
    else:
        ax.text(0.98, 0.03, f"no crossover for n = {int(n[0])}…{int(n[-1])}: the closed form is "
                f"{summ['cf_over_rec'].min():.0f}–{summ['cf_over_rec'].max():.0f}× slower",
                transform=ax.transAxes, ha="right", va="bottom", fontsize=8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(n)
    ax.set_xticklabels([str(int(x)) for x in n])
    ax.minorticks_off()
    ax.set_xlabel("joints n (serial chain)")
    ax.set_ylabel("µs per call (median, bars min–max)")
    ax.set_title("τ, τ′, τ″ of an n-joint chain, one call from Python")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
