"""Seed 004 §6.2: Q, Q̇, Q̈ of the KUKA LBR iiwa 14 R820 along a cos-function trajectory
(Figs. 3–4) and the CPU time of 10,000 second-order inverse-dynamics evaluations, closed form vs
recursive.

    python examples/seed004/run.py [--plot] [--evals 10000]

The trajectory (the shape of the seed's Fig. 3a; the amplitudes, frequencies and offsets are our
choice, the seed does not give them): q_i(t) = a_i cos(ω_i t) + b_i, t ∈ [0, 2π] s.
"""
import argparse
import os
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
A = np.array([0.8, 0.6, 0.7, 0.9, 1.0, 0.8, 1.2])          # rad
OMEGA = np.array([1.0, 1.2, 1.4, 1.6, 1.8, 2.0, 2.2])      # rad/s
B = np.array([0.0, 0.5, 0.0, -1.0, 0.0, 0.5, 0.0])         # rad
T_END = 2 * np.pi                                          # s


def jet(t, order=4):
    """(order+1, 7) rows q, q̇, …, q^(order) at time t [s] (analytic)."""
    rows = [A * np.cos(OMEGA * t) + B]
    for k in range(1, order + 1):
        rows.append(A * OMEGA ** k * np.cos(OMEGA * t + k * np.pi / 2))
    return np.array(rows)


def jets(ts):
    """(N, 5, 7): the jets q … q⁗ at the times ts, the input of torque_derivatives (k = 2)."""
    return np.array([jet(t) for t in ts])


def load():
    import mbs_dynamics as mbs
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # links 4 and 7: the rounded table's triangle slack
        return mbs.load_urdf(os.path.join(HERE, "iiwa14.urdf"))


def cpu_time(robot, xs, method):
    """CPU seconds for len(xs) single evaluations of τ, τ′, τ″."""
    out = np.empty((3, 7))
    f = robot.torque_derivatives
    kw = {"method": method} if method == "closed_form" else {}
    t0 = time.process_time()
    if method == "closed_form":
        for x in xs:
            f(x, **kw)
    else:
        for x in xs:
            f(x, out=out)
    return time.process_time() - t0


def plot(ts, Q, path_prefix):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    qs = jets(ts)[:, 0]
    names = [f"joint {i}" for i in range(1, 8)]
    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    ax[0].plot(ts, qs)
    ax[0].set(xlabel="t [s]", ylabel="q [rad]", title="(a) joint trajectories")
    ax[1].plot(ts, Q[:, 0])
    ax[1].set(xlabel="t [s]", ylabel="Q [N m]", title="(b) generalized forces Q")
    ax[1].legend(names, fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path_prefix + "fig3.png", dpi=100)
    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    # the closed form (lines) against central differences of the recursive Q (markers)
    h = ts[1] - ts[0]
    fd1 = np.gradient(Q[:, 0], h, axis=0, edge_order=2)
    fd2 = np.gradient(Q[:, 1], h, axis=0, edge_order=2)
    for k, (fd, lab) in enumerate(((fd1, "dQ/dt [N m/s]"), (fd2, "d²Q/dt² [N m/s²]"))):
        ax[k].plot(ts, Q[:, k + 1])
        ax[k].set_prop_cycle(None)
        ax[k].plot(ts[::25], fd[::25], "o", ms=3)
        ax[k].set(xlabel="t [s]", ylabel=lab,
                  title=["(a) first", "(b) second"][k] + "-order inverse dynamics")
    ax[0].legend(names, fontsize=7, ncol=2)
    fig.text(0.5, 0.01, "lines: closed form; markers: central differences of Q, Q̇",
             ha="center", fontsize=8)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(path_prefix + "fig4.png", dpi=100)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--plot", action="store_true", help="write fig3.png and fig4.png here")
    p.add_argument("--evals", type=int, default=10000, help="evaluations timed per method")
    a = p.parse_args(argv)
    robot = load()
    ts = np.linspace(0.0, T_END, 1001)
    X = jets(ts)
    Qc = robot.torque_derivatives(X, method="closed_form")
    Qr = robot.torque_derivatives(X)
    print(f"max |closed form - recursive| over {len(ts)} samples: "
          f"Q {np.abs(Qc - Qr)[:, 0].max():.2e}, dQ {np.abs(Qc - Qr)[:, 1].max():.2e}, "
          f"ddQ {np.abs(Qc - Qr)[:, 2].max():.2e}")
    if a.plot:
        plot(ts, Qc, os.path.join(HERE, ""))
    xs = X[np.arange(a.evals) % len(X)]
    rows = []
    for method in ("closed_form", "recursive"):
        cpu_time(robot, xs[:50], method)               # warm-up
        s = cpu_time(robot, xs, method)
        rows.append((method, s, s / a.evals * 1e6))
    print(f"{'method':<12} {'evals':>6} {'CPU total [s]':>14} {'per eval [us]':>14}")
    for m, s, us in rows:
        print(f"{m:<12} {a.evals:>6} {s:>14.3f} {us:>14.1f}")
    print(f"closed form / recursive: {rows[0][1] / rows[1][1]:.1f}x")


if __name__ == "__main__":
    main()
