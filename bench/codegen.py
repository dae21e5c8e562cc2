"""Generated C (mbs_dynamics.codegen) against CasADi-generated C of the same robot (issue 21).

Both are C from one model's numbers, built with the same compiler and flags and timed in one C
program in thread CPU time (``clock_gettime(CLOCK_THREAD_CPUTIME_ID)``; this machine's load makes
wall time swing 2×), interleaved per repeat, best of the repeats:

- τ = RNEA(q, v, a): ours ``robot_inverse_dynamics`` vs a CasADi SX RNEA written here by hand
  from the Model (``pinocchio.casadi`` is not in the pip ``pin`` wheel): the textbook recursion on
  the model's joint poses, screws and inertias; SX folds its zeros and ones as it builds.
- τ, τ′, τ″ from (q, v, v′, v″, v‴): ours ``robot_torque_derivatives`` (doc/math.md recursion, K = 2)
  vs CasADi's forward mode on that RNEA: ``τ′ = jtimes(τ, (q, v, a), (v, a, v″))``,
  ``τ″ = jtimes(τ′, (q, v, a, v″), (v, a, v″, v‴))``, then ``casadi.cse``.

Also: the compiled Python object's single call against the raw C time (process CPU time,
timeit), and codegen + compile time of a 7-DOF arm from an empty cache.

    python bench/codegen.py [--robot panda|ur5|arm7|chain30] [--flags "-O3 -march=native"]
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import timeit
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "test"))

import mbs_dynamics as mbs  # noqa: E402
from mbs_dynamics import codegen  # noqa: E402

HARNESS = r"""
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "robot.h"
#include "cas.h"
#define NV robot_NV
static double now(void) {
  struct timespec t; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
int main(int argc, char **argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 30, inner = argc > 2 ? atoi(argv[2]) : 20000, r, k, i;
  static double q[NV], v[NV], a[NV], vs[4 * NV], tau[NV], jet[3 * NV], ctau[NV], cjet[3 * NV];
  static double cw[CAS_W], best[4] = {1e30, 1e30, 1e30, 1e30};
  static casadi_int iw[CAS_IW];
  volatile double sink = 0.0;
  robot_workspace w;
  const double *arg3[3]; double *res[1]; const double *arg2[2];
  double err_tau = 0.0, err_jet = 0.0;
  for (i = 0; i < NV; i++) { q[i] = 0.3 + 0.1 * i; v[i] = 0.5 - 0.07 * i; a[i] = 0.2 * i - 0.4; }
  for (i = 0; i < 4 * NV; i++) vs[i] = 0.1 * ((i * 7) % 11) - 0.5;
  arg3[0] = q; arg3[1] = v; arg3[2] = a; arg2[0] = q; arg2[1] = vs;
  for (r = 0; r < reps; r++) {
    double t0, t;
    t0 = now();
    for (k = 0; k < inner; k++) { robot_inverse_dynamics(q, v, a, tau, &w); sink += tau[0]; }
    t = (now() - t0) / inner; if (t < best[0]) best[0] = t;
    res[0] = ctau; t0 = now();
    for (k = 0; k < inner; k++) { cas_tau(arg3, res, iw, cw, 0); sink += ctau[0]; }
    t = (now() - t0) / inner; if (t < best[1]) best[1] = t;
    t0 = now();
    for (k = 0; k < inner; k++) { robot_torque_derivatives(q, vs, jet, &w); sink += jet[0]; }
    t = (now() - t0) / inner; if (t < best[2]) best[2] = t;
    res[0] = cjet; t0 = now();
    for (k = 0; k < inner; k++) { cas_jet(arg2, res, iw, cw, 0); sink += cjet[0]; }
    t = (now() - t0) / inner; if (t < best[3]) best[3] = t;
  }
  for (i = 0; i < NV; i++) {
    double d = tau[i] - ctau[i]; if (d < 0) d = -d; if (d > err_tau) err_tau = d;
  }
  for (i = 0; i < 3 * NV; i++) {
    double d = jet[i] - cjet[i]; if (d < 0) d = -d; if (d > err_jet) err_jet = d;
  }
  printf("%.6e %.6e %.6e %.6e %.3e %.3e\n", best[0], best[1], best[2], best[3], err_tau, err_jet);
  return sink == 12345.0;
}
"""


def casadi_rnea(model, ca):
    """τ(q, v, a) of a fixed-base Model as CasADi SX, the textbook recursion (seed 000 eq.
    67–68) on the model's B_i, X_i, inertias: one joint pose B_i exp(X_i q_i) per body."""
    n = model.n
    q, v, a = ca.SX.sym("q", n), ca.SX.sym("v", n), ca.SX.sym("a", n)
    Vs, As, Fs, T = [], [], [], []
    for i in range(n):
        B = model.B[i]
        X = model.X[i]
        rev = model.joint_types[i] != "prismatic"
        e = X[:3] if rev else X[3:]
        E = ca.DM([[0, -e[2], e[1]], [e[2], 0, -e[0]], [-e[1], e[0], 0]])
        if rev:
            Rj = ca.DM.eye(3) + ca.sin(q[i]) * E + (1 - ca.cos(q[i])) * ca.mtimes(E, E)
            pj = ca.DM.zeros(3)
        else:
            Rj = ca.DM.eye(3)
            pj = ca.DM(e) * q[i]
        R = ca.mtimes(ca.DM(B[:3, :3]), Rj)
        p = ca.DM(B[:3, 3]) + ca.mtimes(ca.DM(B[:3, :3]), pj)
        T.append((R, p))
        par = int(model.parent[i])
        if par >= 0:
            w0, v0 = Vs[par]
            aw0, av0 = As[par]
        else:
            w0, v0 = ca.DM.zeros(3), ca.DM.zeros(3)
            aw0, av0 = ca.DM.zeros(3), ca.DM(-model.gravity)
        Xw, Xv = ca.DM(X[:3]), ca.DM(X[3:])
        w = ca.mtimes(R.T, w0)
        vv = ca.mtimes(R.T, v0 + ca.cross(w0, p))
        aw = ca.mtimes(R.T, aw0)
        av = ca.mtimes(R.T, av0 + ca.cross(aw0, p))
        # V̇ = T V̇_λ + ad_{V} X q̇ + X q̈ = T V̇_λ − q̇ ad_X V + X q̈
        aw = aw + ca.cross(w, Xw) * v[i] + Xw * a[i]
        av = av + (ca.cross(vv, Xw) + ca.cross(w, Xv)) * v[i] + Xv * a[i]
        w = w + Xw * v[i]
        vv = vv + Xv * v[i]
        Vs.append((w, vv))
        As.append((aw, av))
        I6 = model.inertias[i]
        Th, hx, m = ca.DM(I6[:3, :3]), ca.DM(I6[:3, 3:]), I6[3, 3]
        # M V = (Θω + h̃ v, −h̃ ω + m v); F = M V̇ − ad_Vᵀ M V
        mw = ca.mtimes(Th, w) + ca.mtimes(hx, vv)
        mv = -ca.mtimes(hx, w) + m * vv
        fw = ca.mtimes(Th, aw) + ca.mtimes(hx, av) + ca.cross(w, mw) + ca.cross(vv, mv)
        fv = -ca.mtimes(hx, aw) + m * av + ca.cross(w, mv)
        Fs.append([fw, fv])
    tau = [None] * n
    for i in range(n - 1, -1, -1):
        fw, fv = Fs[i]
        X = model.X[i]
        tau[i] = ca.dot(ca.DM(X[:3]), fw) + ca.dot(ca.DM(X[3:]), fv)
        par = int(model.parent[i])
        if par >= 0:
            R, p = T[i]
            f = ca.mtimes(R, fv)
            Fs[par][0] = Fs[par][0] + ca.mtimes(R, fw) + ca.cross(p, f)
            Fs[par][1] = Fs[par][1] + f
    return q, v, a, ca.vertcat(*tau)


def build_casadi(model, d, flags):
    import casadi as ca
    q, v, a, tau = casadi_rnea(model, ca)
    n = model.n
    j, s = ca.SX.sym("j", n), ca.SX.sym("s", n)
    t1 = ca.jtimes(tau, ca.vertcat(q, v, a), ca.vertcat(v, a, j))
    t2 = ca.jtimes(t1, ca.vertcat(q, v, a, j), ca.vertcat(v, a, j, s))
    vs = ca.SX.sym("vs", 4 * n)
    sub = ca.vertcat(v, a, j, s)
    out = ca.substitute(ca.vertcat(tau, t1, t2), sub, vs)
    if hasattr(ca, "cse"):
        tau, out = ca.cse(tau), ca.cse(out)
    f_tau = ca.Function("cas_tau", [q, v, a], [tau])
    f_jet = ca.Function("cas_jet", [q, vs], [out])
    cg = ca.CodeGenerator("cas.c", {"with_header": True})
    cg.add(f_tau)
    cg.add(f_jet)
    cg.generate(str(d) + os.sep)
    sz_w = max(f_tau.sz_w(), f_jet.sz_w(), 1)
    sz_iw = max(f_tau.sz_iw(), f_jet.sz_iw(), 1)
    return sz_w, sz_iw


_SOURCE = {}


def robot_for(name):
    from conftest import PANDA, UR5, erd_path
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if name == "panda":
            _SOURCE[name] = (erd_path(PANDA[0]), PANDA[1])
            return mbs.load_urdf(erd_path(PANDA[0]), locked_joints=PANDA[1])
        if name == "ur5":
            _SOURCE[name] = (erd_path(UR5[0]), {})
            return mbs.load_urdf(erd_path(UR5[0]))
        if name == "arm7":
            from mbs_dynamics import data
            _SOURCE[name] = (str(data.robot("arm7")), {})
            return mbs.load_urdf(data.robot("arm7"))
        if name.startswith("chain"):
            from conftest import random_urdf
            n = int(name[5:])
            xml = random_urdf(11, n_movable=n, branch_prob=0.0)[0]
            _SOURCE[name] = (xml, {})
            return mbs.load_urdf(xml)
    raise SystemExit(f"unknown robot {name}")


def run(robot_name, flags, reps, inner):
    robot = robot_for(robot_name)
    cc = os.environ.get("CC", "cc")
    d = Path(tempfile.mkdtemp(prefix="mbs_bench_cg_"))
    try:
        t0 = time.perf_counter()
        codegen.generate(robot, functions=["inverse_dynamics", "torque_derivatives"],
                         out_dir=d)
        t_gen = time.perf_counter() - t0
        sz_w, sz_iw = build_casadi(robot.model, d, flags)
        (d / "main.c").write_text(f"#define CAS_W {sz_w}\n#define CAS_IW {sz_iw}\n" + HARNESS)
        fl = flags.split()
        for src in ("robot.c", "cas.c", "main.c"):
            subprocess.run([cc, *fl, "-c", src, "-o", src[:-2] + ".o"], cwd=d, check=True)
        subprocess.run([cc, "robot.o", "cas.o", "main.o", "-o", "bench", "-lm"], cwd=d,
                       check=True)
        res = subprocess.run([str(d / "bench"), str(reps), str(inner)], capture_output=True,
                             text=True, check=False).stdout.split()
        ours_tau, cas_tau, ours_jet, cas_jet, e_tau, e_jet = map(float, res)
    finally:
        shutil.rmtree(d, ignore_errors=True)

    # from Python: the compiled object vs the raw C time (process CPU time)
    cache = tempfile.mkdtemp(prefix="mbs_bench_cache_")
    os.environ["MBS_DYNAMICS_CACHE"] = cache
    try:
        t0 = time.perf_counter()
        c = codegen.compile(robot, cflags=flags)
        t_compile = time.perf_counter() - t0
        rng = np.random.default_rng(0)
        q, v, a = rng.normal(size=(3, robot.nv))
        vs = rng.normal(size=(4, robot.nv))
        pair = (q, vs)
        out, jout = np.empty(robot.nv), np.empty((3, robot.nv))
        tm = dict(timer=time.process_time, number=20000, repeat=7)
        py = {
            "tau": min(timeit.repeat(lambda: c.inverse_dynamics(q, v, a), **tm)) / 20000,
            "tau_out": min(timeit.repeat(lambda: c.inverse_dynamics(q, v, a, out=out), **tm))
            / 20000,
            "jet": min(timeit.repeat(lambda: c.torque_derivatives(pair), **tm)) / 20000,
            "jet_out": min(timeit.repeat(lambda: c.torque_derivatives(pair, out=jout), **tm))
            / 20000,
            "kernel_tau": min(timeit.repeat(lambda: robot.inverse_dynamics(q, v, a), **tm))
            / 20000,
            "kernel_jet": min(timeit.repeat(lambda: robot.torque_derivatives(pair), **tm))
            / 20000,
        }
        # batches, N = 10⁴, process CPU time: the compiled object vs a Python loop over pin.rnea
        N = 10000
        Q, V, A = rng.normal(size=(3, N, robot.nv))
        VS = rng.normal(size=(N, 4, robot.nv))
        tb = dict(timer=time.process_time, number=3, repeat=5)
        py["batch_tau"] = min(timeit.repeat(lambda: c.inverse_dynamics(Q, V, A), **tb)) / 3
        py["batch_jet"] = min(timeit.repeat(lambda: c.torque_derivatives((Q, VS)), **tb)) / 3
        try:
            import pinocchio as pin
            from conftest import pin_model, pin_q
            pm = pin_model(_SOURCE[robot_name][0], _SOURCE[robot_name][1])
            pd = pm.createData()
            PQ = np.array([pin_q(pm, x) for x in Q])

            def loop():
                for k in range(N):
                    pin.rnea(pm, pd, PQ[k], V[k], A[k])
            py["pin_loop"] = min(timeit.repeat(loop, timer=time.process_time, number=1,
                                               repeat=3))
        except (ImportError, KeyError):
            py["pin_loop"] = float("nan")
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    us = 1e6
    print(f"robot {robot_name} (nv = {robot.nv}), flags '{flags}', {cc}; thread CPU time, "
          f"best of {reps} × {inner}")
    print(f"  raw C  τ:          ours {ours_tau * us:.3f} µs   CasADi {cas_tau * us:.3f} µs   "
          f"ratio {ours_tau / cas_tau:.2f}   (|Δτ| {e_tau:.1e})")
    print(f"  raw C  τ, τ′, τ″:  ours {ours_jet * us:.3f} µs   CasADi {cas_jet * us:.3f} µs   "
          f"ratio {ours_jet / cas_jet:.2f}   (|Δ| {e_jet:.1e})")
    print(f"  Python τ: {py['tau'] * us:.3f} µs (+{(py['tau'] - ours_tau) * us:.3f} over raw C), "
          f"out=: {py['tau_out'] * us:.3f} µs (+{(py['tau_out'] - ours_tau) * us:.3f}); "
          f"kernels {py['kernel_tau'] * us:.3f} µs")
    print(f"  Python jet: {py['jet'] * us:.3f} µs (+{(py['jet'] - ours_jet) * us:.3f}), "
          f"out=: {py['jet_out'] * us:.3f} µs (+{(py['jet_out'] - ours_jet) * us:.3f}); "
          f"kernels {py['kernel_jet'] * us:.3f} µs")
    loop = py["pin_loop"]
    print(f"  batch N = 10⁴ (process CPU): τ {py['batch_tau'] * 1e3:.2f} ms, τ/τ′/τ″ "
          f"{py['batch_jet'] * 1e3:.2f} ms; a Python loop over pin.rnea {loop * 1e3:.1f} ms"
          f" → τ {loop / py['batch_tau']:.1f}×, jet {loop / py['batch_jet']:.1f}×"
          " the loop's τ alone")
    print(f"  generate τ + jet: {t_gen:.2f} s; generate + compile all six functions from an "
          f"empty cache: {t_compile:.2f} s (wall)")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--robot", default="panda")
    p.add_argument("--flags", default="-O3 -march=native")
    p.add_argument("--reps", type=int, default=30)
    p.add_argument("--inner", type=int, default=20000)
    a = p.parse_args()
    run(a.robot, a.flags, a.reps, a.inner)


if __name__ == "__main__":
    main()
