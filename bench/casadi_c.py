"""The compiled limit (issue 21): CasADi-generated C of one robot's τ and τ, τ′, τ″, timed in C.

Pinocchio's CasADi interface (``pinocchio.casadi``) is not in the ``pin`` wheel, so the RNEA is
written here in CasADi SX from the Model's numbers (B, axis, parent, inertias, gravity; seed 000
eq. 67–68, body frames, twists (ω, v), wrenches (m, f), gravity as a base acceleration): every
constant is folded in, SX drops the products with structural zeros and ones, and CasADi's code
generator writes straight-line C. The jet is CasADi's forward mode along the trajectory:
τ′ = jtimes(τ, (q, q̇, q̈), (q̇, q̈, q⃛)) and τ″ = jtimes(τ′, (q, q̇, q̈, q⃛), (q̇, q̈, q⃛, q⁗)).
The C is compiled with the harness of ``ctiming`` (``-O3 -march=native``) and timed there in
thread CPU time. Fixed-base robots with revolute/continuous/prismatic joints.
"""
from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np

from ctiming import DEFAULT_CFLAGS, time_c


def _skew(e):
    return np.array([[0.0, -e[2], e[1]], [e[2], 0.0, -e[0]], [-e[1], e[0], 0.0]])


def rnea_sx(model):
    """CasADi SX expressions (q, v, a, τ) of the RNEA of a fixed-base ``model``
    (:class:`mbs_dynamics.model.Model`)."""
    import casadi as ca
    if getattr(model, "floating_base", False):
        raise NotImplementedError("casadi_c: floating bases are not written here")
    n = model.n
    q, v, a = ca.SX.sym("q", n), ca.SX.sym("v", n), ca.SX.sym("a", n)

    def mat3(M):
        return ca.SX(ca.DM(np.asarray(M, dtype=float)))

    def cross(x, y):
        return ca.vertcat(x[1] * y[2] - x[2] * y[1], x[2] * y[0] - x[0] * y[2],
                          x[0] * y[1] - x[1] * y[0])

    R, p, Vw, Vv, Aw, Av = [], [], [], [], [], []
    g = np.asarray(model.gravity, dtype=float)
    for i in range(n):
        B = np.asarray(model.B[i])
        e = np.asarray(model.axis[i], dtype=float)
        BR, Bp = B[:3, :3], B[:3, 3]
        if model.joint_types[i] == "prismatic":
            Ri = mat3(BR)
            pi = mat3(Bp.reshape(3, 1)) + mat3((BR @ e).reshape(3, 1)) * q[i]
            Xw, Xv = np.zeros(3), e
        else:  # R = B_R (I + sin q ẽ + (1 − cos q) ẽ²)
            E = _skew(e)
            Ri = mat3(BR) + mat3(BR @ E) * ca.sin(q[i]) + mat3(BR @ E @ E) * (1 - ca.cos(q[i]))
            pi = mat3(Bp.reshape(3, 1))
            Xw, Xv = e, np.zeros(3)
        par = int(model.parent[i])
        if par >= 0:  # Ad_{C⁻¹}: ω' = Rᵀ ω, v' = Rᵀ (v + ω × p)
            uw, uv = Ri.T @ Vw[par], Ri.T @ (Vv[par] + cross(Vw[par], pi))
            bw, bv = Ri.T @ Aw[par], Ri.T @ (Av[par] + cross(Aw[par], pi))
        else:
            uw, uv = ca.SX.zeros(3), ca.SX.zeros(3)
            bw, bv = ca.SX.zeros(3), Ri.T @ mat3((-g).reshape(3, 1))
        Xw_, Xv_ = mat3(Xw.reshape(3, 1)), mat3(Xv.reshape(3, 1))
        Viw, Viv = uw + Xw_ * v[i], uv + Xv_ * v[i]
        # V̇ = u̇ + X q̈ + ad_V X q̇, ad_V X = (ω × X_ω, ω × X_v + v × X_ω)
        Aiw = bw + Xw_ * a[i] + cross(Viw, Xw_) * v[i]
        Aiv = bv + Xv_ * a[i] + (cross(Viw, Xv_) + cross(Viv, Xw_)) * v[i]
        R.append(Ri)
        p.append(pi)
        Vw.append(Viw)
        Vv.append(Viv)
        Aw.append(Aiw)
        Av.append(Aiv)
    Fm, Ff = [None] * n, [None] * n
    for i in range(n):
        M = np.asarray(model.inertias[i], dtype=float)
        Msx = mat3(M)
        MV = Msx @ ca.vertcat(Vw[i], Vv[i])
        MA = Msx @ ca.vertcat(Aw[i], Av[i])
        m_, f_ = MV[:3], MV[3:]
        # F = M V̇ − ad_Vᵀ M V, −ad_Vᵀ (m, f) = (ω × m + v × f, ω × f)
        Fm[i] = MA[:3] + cross(Vw[i], m_) + cross(Vv[i], f_)
        Ff[i] = MA[3:] + cross(Vw[i], f_)
    tau = [None] * n
    for i in range(n - 1, -1, -1):
        e = np.asarray(model.axis[i], dtype=float)
        if model.joint_types[i] == "prismatic":
            tau[i] = ca.dot(mat3(e.reshape(3, 1)), Ff[i])
        else:
            tau[i] = ca.dot(mat3(e.reshape(3, 1)), Fm[i])
        par = int(model.parent[i])
        if par >= 0:  # Ad_Cᵀ: f' = R f, m' = R m + p × f'
            fp = R[i] @ Ff[i]
            Ff[par] = Ff[par] + fp
            Fm[par] = Fm[par] + R[i] @ Fm[i] + cross(p[i], fp)
    return q, v, a, ca.vertcat(*tau)


def casadi_functions(model):
    """``rnea(q, v, a) → τ`` and ``jet(q, q′, q″, q‴, q⁗) → (τ, τ′, τ″)`` as CasADi Functions."""
    import casadi as ca
    q, v, a, tau = rnea_sx(model)
    n = model.n
    j, s = ca.SX.sym("j", n), ca.SX.sym("s", n)  # q‴, q⁗
    t1 = ca.jtimes(tau, ca.vertcat(q, v, a), ca.vertcat(v, a, j))
    t2 = ca.jtimes(t1, ca.vertcat(q, v, a, j), ca.vertcat(v, a, j, s))
    opts = {"cse": True}  # common subexpressions shared (23 % fewer instructions in the jet)
    f_tau = ca.Function("cas_rnea", [q, v, a], [tau], ["q", "v", "a"], ["tau"], opts)
    f_jet = ca.Function("cas_jet", [q, v, a, j, s], [tau, t1, t2],
                        ["q", "v", "a", "j", "s"], ["tau", "tau1", "tau2"], opts)
    return f_tau, f_jet


def generate_c(model, workdir):
    """CasADi's C for ``cas_rnea`` and ``cas_jet`` into ``workdir`` (one .c and one .h).
    Returns ({file name: text}, functions, seconds to build the SX and write the C)."""
    import casadi as ca
    t0 = time.perf_counter()
    f_tau, f_jet = casadi_functions(model)
    cg = ca.CodeGenerator("casadi_robot.c", {"with_header": True})
    cg.add(f_tau)
    cg.add(f_jet)
    cg.generate(str(Path(workdir)) + "/")
    files = {f: (Path(workdir) / f).read_text() for f in ("casadi_robot.c", "casadi_robot.h")}
    return files, (f_tau, f_jet), time.perf_counter() - t0


def time_casadi_c(model, qs, *, cflags=DEFAULT_CFLAGS, repeat=11, target_time=0.02):
    """Generate, compile and time CasADi's τ and jet of ``model`` at the state ``qs`` (5, n)
    (q, q′, q″, q‴, q⁗) in C. Returns a dict: ``stats`` {"tau", "jet"} (µs per call, thread CPU
    time), ``outputs`` (τ; τ, τ′, τ″ from the C, for agreement checks), ``gen_s``,
    ``compile_s``, ``command``, ``ops`` (SX instruction counts)."""
    qs = np.asarray(qs, dtype=float)
    n = model.n
    with tempfile.TemporaryDirectory(prefix="mbs_casadi_") as wd:
        files, (f_tau, f_jet), gen_s = generate_c(model, wd)
        glob = ("static const double* arg_tau[3] = {q, v, a};\n"
                "static double* res_tau[1] = {tau};\n"
                "static const double* arg_jet[5] = {q, v, a, j, s};\n"
                "static double* res_jet[3] = {jtau, jtau1, jtau2};\n"
                f"static casadi_int iw[{max(f_tau.sz_iw(), f_jet.sz_iw(), 1)}];\n"
                f"static double w[{max(f_tau.sz_w(), f_jet.sz_w(), 1)}];\n")
        zeros = np.zeros(n)
        r = time_c({k: v for k, v in files.items()},
                   {"tau": "cas_rnea(arg_tau, res_tau, iw, w, 0);",
                    "jet": "cas_jet(arg_jet, res_jet, iw, w, 0);"},
                   arrays={"q": qs[0], "v": qs[1], "a": qs[2], "j": qs[3], "s": qs[4],
                           "tau": zeros, "jtau": zeros, "jtau1": zeros, "jtau2": zeros},
                   headers=["casadi_robot.h"], globals_c=glob, outputs=["tau", "jtau", "jtau1",
                                                                         "jtau2"],
                   cflags=cflags, repeat=repeat, target_time=target_time)
    o = r.outputs
    return {"stats": r.stats, "outputs": {"tau": o["tau"], "jet": np.stack(
        [o["jtau"], o["jtau1"], o["jtau2"]])}, "gen_s": gen_s, "compile_s": r.compile_s,
        "command": r.command, "cc_version": r.cc_version,
        "ops": {"tau": f_tau.n_instructions(), "jet": f_jet.n_instructions()}}
