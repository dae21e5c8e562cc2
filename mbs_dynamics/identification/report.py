"""The identification report as text, and the measured-vs-predicted torque plot."""
from __future__ import annotations

import math


__all__ = ["format_report", "plot_torques"]


def _pct(v):
    return "   n/a" if not math.isfinite(v) else (f"{v:6.1f}" if v < 1e4 else " >1e4")


def format_report(rep, max_parameters=None):
    """Human-readable summary of a report dict (see :func:`~.pipeline.identify`)."""
    out = [f"identified {rep['robot']!r} from {rep['log']}: {rep['samples_used']} of "
           f"{rep['samples']} samples at {rep['rate_hz']:.6g} Hz",
           f"filter: {rep['filter']}",
           f"method: {rep['method']}; condition number of the scaled base regressor "
           f"{rep['condition_number']:.4g}"]
    w = max(len(j) for j in rep["joints"])
    out.append(f"\n{'joint':<{w}}  {'RMS identified':>14}  {'RMS URDF':>10}  {'viscous':>10}"
               f"  {'coulomb':>10}")
    for j in rep["joints"]:
        f = rep["friction"].get(j)
        fv = f"{f['viscous']:10.4g}" if f else f"{'-':>10}"
        fc = f"{f['coulomb']:10.4g}" if f else f"{'-':>10}"
        out.append(f"{j:<{w}}  {rep['rms'][j]:14.4g}  {rep['rms_urdf'][j]:10.4g}  {fv}  {fc}")
    if "sea" in rep:
        out.append(f"\n{'joint':<{w}}  {'K':>10} {'%σ':>6}  {'B':>10} {'%σ':>6}  {'D_m':>10}")
        for j in rep["joints"]:
            s = rep["sea"][j]
            k_pct = 100 * s["stiffness_sigma"] / abs(s["stiffness"])
            b_pct = 100 * s["motor_inertia_sigma"] / max(abs(s["motor_inertia"]), 1e-300)
            out.append(f"{j:<{w}}  {s['stiffness']:10.5g} {_pct(k_pct)}  "
                       f"{s['motor_inertia']:10.4g} {_pct(b_pct)}  {s['motor_damping']:10.4g}")
    items = list(rep["base_parameters"].items())
    wn = max(len(k) for k, _ in items) if items else 4
    out.append(f"\n{len(items)} base parameters (WLS value, σ, %σ):")
    shown = items if max_parameters is None else items[:max_parameters]
    for name, v in shown:
        out.append(f"  {name:<{wn}}  {v['value']:12.5g}  {v['sigma']:10.3g}  "
                   f"{_pct(v['relative_sigma_percent'])}")
    if len(shown) < len(items):
        out.append(f"  ... ({len(items) - len(shown)} more in the JSON report)")
    for msg in rep["warnings"]:
        out.append(f"warning: {msg}")
    return "\n".join(out)


def plot_torques(plt, path, t, measured, predicted, predicted_urdf, joint_names, title=""):
    """One panel per joint: measured τ, the identified model's and the URDF's prediction."""
    n = len(joint_names)
    fig, axes = plt.subplots(n, 1, sharex=True, figsize=(10, 1.6 * n + 1.0), squeeze=False)
    for j, ax in enumerate(axes[:, 0]):
        ax.plot(t, measured[:, j], color="0.6", lw=0.6, label="measured")
        if predicted_urdf is not None:
            ax.plot(t, predicted_urdf[:, j], color="tab:red", lw=1.0, ls="--", label="URDF")
        ax.plot(t, predicted[:, j], color="tab:blue", lw=1.0, label="identified")
        ax.set_ylabel(f"{joint_names[j]}\nτ", fontsize="small")
        ax.grid(True, alpha=0.3)
    axes[0, 0].legend(loc="upper right", fontsize="small", ncol=3)
    axes[-1, 0].set_xlabel("t [s]")
    axes[-1, 0].set_xlim(t[0], t[-1])
    fig.suptitle(title or "measured vs predicted joint torques")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
