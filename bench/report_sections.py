"""Generated sections of bench/README.md: the profile with its *Why*, and the start-up."""
from __future__ import annotations

import math
import os

from settings import TARGETS
from timing import Stat


def target_rows(res) -> dict:
    """key -> Row for every target measured (the Panda's, and the chain's batches)."""
    rows = res["single"].get("panda", []) + [r for rs in res["batch"].values() for r in rs]
    return {r.key: r for r in rows if r.key in TARGETS}


def profile_section(prof, res, args) -> list:
    """'Where the time goes' (public API only) and a generated *Why* for every missed target."""
    L = ["## Where the time goes (Panda, public API only)", "",
         "*public*: the method as called in the tables; *out=*: the same writing into a given "
         "array (no allocation); floors of this interpreter: a pure-Python no-op function with "
         f"three arguments {prof['floors']['python no-op call, 3 arguments'].fmt()} µs, "
         f"`np.empty(n)` {prof['floors']['np.empty(n)'].fmt()} µs.", "",
         "| call | public µs | out= µs | cProfile: own time per call, top entries (µs, calls) |",
         "|---|---|---|---|"]
    for name, st in prof["calls"].items():
        if isinstance(st, str):
            L.append(f"| {name} | {st} | | |")
            continue
        pr = prof["profiles"].get(name, {"rows": []})
        top = "; ".join(f"`{w}` {us:.2f} ({nc:g})" for us, nc, w in pr["rows"][:4])
        L.append(f"| {name} | {st[0].fmt()} | {st[1].fmt()} | {top} |")
    L += ["", "cProfile adds its own cost to each Python-level call it records, so its numbers "
          "are larger than the timings; compiled code shows up only where it is entered as a "
          "builtin, otherwise its time counts as the own time of the Python function that calls "
          "it.", "",
          "Batch calls, one call over N samples (µs per call); fixed cost and cost per sample "
          "from the smallest and the largest N:", "",
          "| call | " + " | ".join(f"N = {N}" for N, _ in
                                  next(iter(prof["batch"].values()))["points"])
          + " | fixed µs | µs per sample |",
          "|---|" + "---|" * (len(next(iter(prof["batch"].values()))["points"]) + 2)]
    for name, b in prof["batch"].items():
        L.append(f"| {name} | " + " | ".join(s.fmt() for _, s in b["points"])
                 + f" | {b['fixed']:.2f} | {b['per_sample']:.3f} |")
    L += ["", "Inputs that are not C-contiguous float64 (issue 10: converted once; issue 21 item "
          "5: the extra over a C-contiguous call at most 1 µs above NumPy's own conversion of "
          "the three inputs, `np.ascontiguousarray(x)` each, with `dtype=np.float64` where x is not float64 already), "
          "`inverse_dynamics` on the Panda, all rows timed in one round-robin group, "
          "differences per repeat:", "",
          "| input | µs per call | extra over C-contiguous µs | NumPy's conversion µs | "
          "extra − NumPy's µs | target ≤ 1 µs |", "|---|---|---|---|---|---|"]
    ref = next((x[1] for x in prof["inputs"] if not isinstance(x[1], str) and x[2] is not None),
               None)
    for label, st, conv in prof["inputs"]:
        if isinstance(st, str) or conv is None or ref is None:
            L.append(f"| {label} | {st if isinstance(st, str) else st.fmt()} | | | | |")
            continue
        extra = Stat([a - b for a, b in zip(st.values, ref.values)])
        over = Stat([a - b - c for a, b, c in zip(st.values, ref.values, conv.values)])
        verdict = ("" if st is ref else "**holds**" if over.med <= 1.0 else "**missed**")
        L.append(f"| {label} | {st.fmt()} | {'–' if st is ref else extra.fmt()} | {conv.fmt()} | "
                 f"{'–' if st is ref else over.fmt()} | {verdict} |")
    L += [""]
    # why
    tr = target_rows(res)
    calls = prof["calls"]
    why = []
    cmap = {"tau_dynibo": "inverse_dynamics", "g_dynibo": "gravity_torques",
            "M_best": "mass_matrix", "aba_pin": "forward_dynamics", "C_pin": "coriolis_matrix",
            "tau2_route": "torque_derivatives k=2"}
    for key, r in tr.items():
        bound = TARGETS[key][1]
        if r.ratio.med <= bound:
            continue
        if key in cmap and not isinstance(calls.get(cmap[key]), (str, type(None))):
            pub, outp = calls[cmap[key]]
            need = r.t_anchor.med * bound
            est = r.t_ours.med * outp.med / pub.med
            pr = prof["profiles"].get(cmap[key], {"rows": []})["rows"]
            topw = (f" Under cProfile the largest own times are "
                    + ", ".join(f"`{w}`" for _, _, w in pr[:2]) + "." if pr else "")
            why.append(
                f"- {TARGETS[key][0]}: {r.t_ours.med:.2f} µs against {r.t_anchor.med:.2f} µs "
                f"({r.anchor}); the bound is {need:.2f} µs. In the profile the call takes "
                f"{pub.med:.2f} µs and {outp.med:.2f} µs with `out=`, so without the allocation "
                f"of its result it would be ≈ {est:.2f} µs here: "
                + ("still above the bound, so the gap is the call path (argument checks, the "
                   "crossing into compiled code) and the arithmetic, not the allocation."
                   if est > need else "within the bound: the allocation of the result is the "
                   "gap.") + topw)
        elif key.startswith("batch") and not key.endswith("_chain"):
            name = "inverse_dynamics" if key == "batch_tau" else "torque_derivatives k=2"
            b = prof["batch"].get(name)
            need = r.t_anchor.med * bound
            if b:
                Nmax = b["points"][-1][0]
                fixed_share = b["fixed"] / max(b["points"][-1][1].med, 1e-12)
                why.append(
                    f"- {TARGETS[key][0]}: {r.t_ours.med:.3f} µs/sample against the loop's "
                    f"{r.t_anchor.med:.3f} µs/sample; ≥ 10× needs ≤ {need:.3f} µs/sample. The N "
                    f"sweep above (measured later in this run) splits one call into "
                    f"{b['fixed']:.1f} µs fixed and {b['per_sample']:.3f} µs per sample, so at "
                    f"N = {Nmax} the fixed part is {100 * fixed_share:.0f} % of the call: "
                    + ("the fixed cost per call (thread start-up, allocation, checks) is most of "
                       "the gap" if fixed_share > 0.5 else
                       "the per-sample arithmetic is most of the gap")
                    + f" (this machine has {os.cpu_count()} cores shared with other work; the "
                    "Python loop runs on one).")
    if why:
        L += ["### Why (targets missed in this run)", ""] + why + [""]
    return L


def startup_section(st) -> list:
    if not st:
        return ["## Start-up after a fresh install", "",
                "Not measured in this run: add `--startup` (a few minutes: it makes a new "
                "virtual environment, installs pin and dynibo and this checkout with pip, then "
                "times fresh processes).", ""]
    L = ["## Start-up after a fresh install (issue 10 item 5)", "",
         "A new virtual environment (`python -m venv`), `pip install pin dynibo` "
         f"({st.get('t_pip_peers', math.nan):.0f} s), then "
         f"`{st.get('pip_cmd', 'pip install .')}` of "
         f"a copy of this checkout ({st.get('t_pip_ours', math.nan):.0f} s, pip's cache allowed). "
         "Then, per library, a fresh Python process: import, load the Panda URDF (fingers "
         "locked), first call of every dynamics method. *cold*: the first process after the "
         "install; *warm*: a second one. Seconds, in-process (the process wall time adds the "
         "interpreter's own start).", ""]
    for note in st.get("notes", []):
        L.append(f"- {note}")
    if st.get("notes"):
        L.append("")
    runs = st.get("runs", {})
    for lib, d in runs.items():
        if "cold" not in d:
            continue
        L += [f"### {lib} {d['cold'].get('version', '')}", "",
              "| step | cold s | warm s |", "|---|---|---|"]
        warm = dict(d.get("warm", {}).get("steps", []))
        for name, t in d["cold"]["steps"]:
            w = warm.get(name)
            L.append(f"| {name} | {t:.3f} | {'–' if w is None else f'{w:.3f}'} |")
        L.append(f"| **import + load + first calls** | **{d['cold']['total']:.3f}** | "
                 f"{d.get('warm', {}).get('total', math.nan):.3f} |")
        L.append(f"| process wall time | {d['cold']['wall']:.3f} | "
                 f"{d.get('warm', {}).get('wall', math.nan):.3f} |")
        big = max(d["cold"]["steps"], key=lambda x: x[1])
        L += ["", f"Cold: the largest step is {big[0]} ({big[1]:.3f} s of "
              f"{d['cold']['total']:.3f} s).", ""]
    if "mbs_dynamics" in runs and "cold" in runs["mbs_dynamics"]:
        mods = st.get("compiled_modules", [])
        L += [f"The installed mbs_dynamics has {len(mods)} compiled extension module(s)"
              + (": " + ", ".join(f"`{m}`" for m in mods[:8]) if mods else "") + ". Batch first "
              "calls are listed after the total and not counted in it.", ""]
    return L


def limit_section(res) -> list:
    """The compiled limit: CasADi-generated C timed in C, next to ours from Python (issue 21)."""
    lim = res.get("limit")
    if not lim:
        return []
    L = ["## The compiled limit: CasADi-generated C (issue 21)", "",
         "CasADi SX of this robot's RNEA, written in `bench/casadi_c.py` from the model's numbers "
         "(Pinocchio's CasADi interface is not in the pip wheel), its jet by CasADi's forward "
         "mode (`jtimes` twice along the trajectory), C by CasADi's code generator, compiled "
         "with the same flags as the harness of `bench/ctiming.py` and timed there, in C, in "
         "thread CPU time (`clock_gettime(CLOCK_THREAD_CPUTIME_ID)`, loops calibrated like the "
         "Python side's, round-robin). *ours* and Pinocchio: this process, from Python. "
         "*max abs diff*: the C's result against ours on the benchmark state.", "",
         "| robot | quantity | CasADi C, in C µs | ours, one call from Python µs | ours, batch "
         "µs/sample | Pinocchio from Python µs | one call / C | batch / C | max abs diff |",
         "|---|---|---|---|---|---|---|---|---|"]
    notes = []
    for name, d in lim.items():
        label = res["cases"][name]["label"]
        if "error" in d:
            L.append(f"| {label} | – | not measured: {d['error']} | | | | | | |")
            continue
        c = d["c"]
        for k, what, pin in (("tau", "τ", "`pin.rnea`"),
                             ("jet", "τ, τ′, τ″", "τ′ route, τ and τ′ only")):
            sc, sp, sb = c["stats"][k], d["py"][k], d["batch"].get(k)
            L.append(f"| {label} | {what} | {sc.fmt()} | {sp.fmt()} | "
                     f"{sb.fmt() if sb else '–'} | {d['pin'][k].fmt()} ({pin}) | "
                     f"{sp.med / sc.med:.1f}× | "
                     f"{(sb.med / sc.med) if sb else float('nan'):.1f}× | {d['err'][k]:.1e} |")
        notes.append(f"{label}: CasADi SX {c['ops']['tau']} (τ) and {c['ops']['jet']} (jet) "
                     f"instructions; SX + C {c['gen_s']:.1f} s, compile {c['compile_s']:.1f} s "
                     f"(`{c['command']}`, {c['cc_version']})")
    L += [""] + [f"- {x}" for x in notes] + [""]
    return L
