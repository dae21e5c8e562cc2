"""Seed 002 §3 reproduced: HDCA (momentum level, seed 002) vs the acceleration-level
formulation (index-1 Lagrange = the paper's DCA baseline, no stabilisation, no projection) on
the three test mechanisms of :mod:`mechanisms`, 10 s from rest.

    python examples/seed002/run.py            # everything (≈ 45 s of CPU time)
    python examples/seed002/run.py --quick    # a smoke run (1 s, loose tolerances)

Writes ``results.json``, ``energy_constraints.png`` (Fig. 5, 8, 9 of the paper: energy error,
loop closure violation at velocity and position level, RK45 at δ = 1e-6), ``point_K.png``
(Fig. 6–7: height and vertical velocity of the middle joint K of case 1) and
``efficiency.png`` (Fig. 10–11: DCA/HDCA ratios of wall-clock time and right-hand-side
evaluations over the tolerances), and prints the tables of the README.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import mechanisms as me  # noqa: E402
from mbs_dynamics.loops.simulate import simulate_loops, _hdca  # noqa: E402
from mbs_dynamics.loops.lagrange import acceleration  # noqa: E402

METHODS = {"hdca": "HDCA (momentum level)", "lagrange": "DCA-like (acceleration level)"}


def run(r, method, tol, integrator, T, dt):
    return simulate_loops(r, T, method=method, dt=dt, rtol=tol, atol=tol, integrator=integrator,
                          projection=False)


def rhs_time(r, method, reps=200):
    h = _hdca(r)
    q = r.q_assembled
    z = np.zeros(r.n_full)
    t0 = time.process_time()
    for _ in range(reps):
        if method == "hdca":
            h.rhs(q, z, z)
        else:
            acceleration(r, q, z, z)
    return (time.process_time() - t0) / reps * 1e3


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--plot", action="store_true", help="only redraw the plots from results.json")
    ap.add_argument("--tables", action="store_true",
                    help="only print the README's tables from results.json")
    a = ap.parse_args(argv)
    if a.plot or a.tables:
        with open(os.path.join(HERE, "results.json")) as f:
            out = json.load(f)
        return plot(out) if a.plot else tables(out)
    T = 1.0 if a.quick else 10.0
    dt = 0.01
    out = {"T": T, "cases": {}}
    robots = {k: me.load(k) for k in (1, 2, 3)}
    # Fig. 5–9: histories at RK45, δ = 1e-6
    for k, r in robots.items():
        c = out["cases"][str(k)] = {"title": me.case(k)[2], "actuated": list(r.joint_names),
                                    "history": {}, "table": [], "rhs_ms": {}}
        for m in METHODS:
            res = run(r, m, 1e-6, "RK45", T, dt)
            kq = r.full_joint_names.index(f"j{r.n_full // 2 + 1}")  # the middle joint K
            C = [_hdca(r).state(q)["C"][kq - 1] for q in res.q[::5]]
            zK = [float((Ci @ np.r_[1.0, 0, 0, 1])[2]) for Ci in C]
            c["history"][m] = {"t": res.t.tolist(), "dE": (res.energy - res.energy[0]).tolist(),
                               "h": res.residual.tolist(), "hv": res.velocity_residual.tolist(),
                               "tK": res.t[::5].tolist(), "zK": zK, "nfev": res.nfev,
                               "wall": res.wall_time}
            c["rhs_ms"][m] = rhs_time(r, m)
            print(f"case {k} {m}: |ΔE| max {np.abs(res.energy - res.energy[0]).max():.3g} J, "
                  f"|h| max {res.residual.max():.3g}, |ḣ| max {res.velocity_residual.max():.3g}, "
                  f"nfev {res.nfev}, wall {res.wall_time:.2f} s", flush=True)
    # efficiency (Fig. 10–11, Table 1–2): RK45 (ode45), LSODA (Adams/BDF, ode113's role), RK23 (ode23)
    tols = {"RK45": [1e-3, 1e-5, 1e-7, 1e-9], "LSODA": [1e-3, 1e-5, 1e-7, 1e-9],
            "RK23": [1e-3, 1e-5, 1e-7]}
    if a.quick:
        tols = {"RK45": [1e-3], "LSODA": [1e-3], "RK23": [1e-3]}
    for k, r in robots.items():
        for integ, ts in tols.items():
            for tol in ts:
                row = {"integrator": integ, "tol": tol}
                for m in METHODS:
                    res = run(r, m, tol, integ, T, 0.1)
                    row[m] = {"wall": res.wall_time, "nfev": res.nfev,
                              "dE": float(np.abs(res.energy - res.energy[0]).max()),
                              "h": float(res.residual.max()),
                              "hv": float(res.velocity_residual.max())}
                out["cases"][str(k)]["table"].append(row)
                print(f"case {k} {integ} {tol:g}: " + ", ".join(
                    f"{m} wall {row[m]['wall']:.2f} s nfev {row[m]['nfev']} dE {row[m]['dE']:.2g}"
                    for m in METHODS), flush=True)
    name = "results_quick.json" if a.quick else "results.json"
    with open(os.path.join(HERE, name), "w") as f:
        json.dump(out, f)
    plot(out, a.quick)
    tables(out)


def tables(out):
    """The README's tables (Markdown) from the results."""
    print("| case | HDCA max \\|ΔE\\| [J] | acc.-level max \\|ΔE\\| [J] | HDCA max velocity violation "
          "| acc.-level | HDCA max \\|h\\| [m] | acc.-level |")
    print("|---|---|---|---|---|---|---|")
    for k, c in out["cases"].items():
        h, a = c["history"]["hdca"], c["history"]["lagrange"]
        cells = [np.abs(h["dE"]).max(), np.abs(a["dE"]).max(), np.max(h["hv"]), np.max(a["hv"]),
                 np.max(h["h"]), np.max(a["h"])]
        print(f"| {k} | " + " | ".join(f"{x:.2g}" for x in cells) + " |")
    print("\n| case | HDCA rhs (q̇, Ṗ) [ms] | acceleration-level rhs (q̈) [ms] |\n|---|---|---|")
    for k, c in out["cases"].items():
        print(f"| {k} | {c['rhs_ms']['hdca']:.3f} | {c['rhs_ms']['lagrange']:.3f} |")
    print("\n| case | integrator | δ | HDCA wall [s] | HDCA RHS evals | HDCA max \\|ΔE\\| [J] "
          "| HDCA max \\|h\\| [m] | acc. wall [s] | acc. RHS evals | acc. max \\|ΔE\\| [J] "
          "| acc. max \\|h\\| [m] |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for k, c in out["cases"].items():
        for row in c["table"]:
            cells = []
            for m in METHODS:
                x = row[m]
                cells += [f"{x['wall']:.2f}", str(x["nfev"]), f"{x['dE']:.2g}", f"{x['h']:.2g}"]
            print(f"| {k} | {row['integrator']} | {row['tol']:.0e} | " + " | ".join(cells) + " |")


def plot(out, quick=False):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    sfx = "_quick" if quick else ""
    fig, ax = plt.subplots(3, 3, figsize=(13, 9), sharex=True)
    for j, (k, c) in enumerate(out["cases"].items()):
        for m, lab in METHODS.items():
            hst = c["history"][m]
            t = np.array(hst["t"])
            for i, key in enumerate(("dE", "hv", "h")):  # t > 0: the start is exact
                ax[i, j].semilogy(t[1:], np.maximum(np.abs(hst[key])[1:], 1e-17), label=lab)
        ax[0, j].set_title(c["title"])
        ax[2, j].set_xlabel("t [s]")
    for x in ax.flat:
        x.set_ylim(1e-17, None)
    ax[0, 0].set_ylabel("|E(t) − E(0)| [J]")
    ax[1, 0].set_ylabel("velocity-level violation [m/s]")
    ax[2, 0].set_ylabel("position-level violation |h| [m]")
    ax[0, 0].legend(fontsize=8)
    fig.suptitle("Seed 002 §3: RK45, rtol = atol = 1e-6, 10 s from rest (no projection)")
    fig.tight_layout()
    fig.savefig(os.path.join(HERE, f"energy_constraints{sfx}.png"), dpi=90)
    fig, ax = plt.subplots(1, 1, figsize=(6, 3.5))
    for m, lab in METHODS.items():
        hst = out["cases"]["1"]["history"][m]
        ax.plot(hst["tK"], hst["zK"], label=lab, ls="-" if m == "hdca" else "--")
    ax.set_xlabel("t [s]")
    ax.set_ylabel("z of the middle joint K [m]")
    ax.set_title("case 1: point K (Fig. 6)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(HERE, f"point_K{sfx}.png"), dpi=90)
    fig, ax = plt.subplots(1, 2, figsize=(12, 4))
    for k, c in out["cases"].items():
        for integ, mk in (("RK45", "o"), ("LSODA", "s"), ("RK23", "^")):
            rows = [r for r in c["table"] if r["integrator"] == integ]
            if not rows:
                continue
            tol = [r["tol"] for r in rows]
            ax[0].semilogx(tol, [r["lagrange"]["wall"] / r["hdca"]["wall"] for r in rows],
                           marker=mk, label=f"case {k} {integ}")
            ax[1].semilogx(tol, [r["lagrange"]["nfev"] / r["hdca"]["nfev"] for r in rows],
                           marker=mk, label=f"case {k} {integ}")
    ax[0].set_ylabel("wall-clock DCA-like / HDCA")
    ax[1].set_ylabel("RHS evaluations DCA-like / HDCA")
    for x in ax:
        x.axhline(1.0, color="k", lw=0.5)
        x.set_xlabel("tolerance δ (rtol = atol)")
        x.invert_xaxis()
    ax[1].legend(fontsize=7, ncol=3)
    fig.tight_layout()
    fig.savefig(os.path.join(HERE, f"efficiency{sfx}.png"), dpi=90)


if __name__ == "__main__":
    main()
