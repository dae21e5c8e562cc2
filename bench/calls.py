"""The side-by-side tables: single calls and N-sample batches of one robot against the peers."""
from __future__ import annotations

import numpy as np

from cases import Case, batch_states
from peers import make_pin_routes
from timing import _maxdiff, compare


def bench_single(case: Case, args, log) -> list:
    """Single-state calls of one robot, ours vs the anchors, with agreement checks."""
    import pinocchio as pin
    r, pm, pd, n = case.robot, case.pm, case.pd, case.robot.n
    q, qd, qdd, qddd, _ = case.qs
    taud, tau2 = make_pin_routes(pm, pd, case.sym)
    tgt = case.name == "panda"

    def key(k):
        return k if tgt else ""

    if case.sym:
        def crba_full(q):
            M = pin.crba(pm, pd, q)
            return np.triu(M) + np.triu(M, 1).T
        crba_label = "`pin.crba` + symmetrisation (full M)"
    else:
        def crba_full(q):
            return pin.crba(pm, pd, q)
        crba_label = "`pin.crba` (returns the full M here)"
    tau_pin = pin.rnea(pm, pd, q, qd, qdd).copy()
    ns = dict(r=r, pm=pm, pd=pd, q=q, qd=qd, qdd=qdd, qddd=qddd, qs=case.qs, tau=tau_pin,
              idyn=r.inverse_dynamics, mmat=r.mass_matrix, cor=r.coriolis_matrix,
              grav=r.gravity_torques, td=r.torque_derivatives, fdyn=r.forward_dynamics,
              taud=taud, tau2=tau2, rnea=pin.rnea, crba_full=crba_full,
              ccm=pin.computeCoriolisMatrix, cgg=pin.computeGeneralizedGravity, aba=pin.aba,
              o1=np.empty(n), oM=np.empty((n, n)))
    dy = case.dy
    if dy is not None:
        p = dy.perm
        ns.update(dyn=dy.robot, dq=np.ascontiguousarray(q[p]), dqd=np.ascontiguousarray(qd[p]),
                  dqdd=np.ascontiguousarray(qdd[p]), dtau=np.ascontiguousarray(tau_pin[p]),
                  do1=np.empty(n), doM=np.empty(n * n))
    rows = []

    def dyn_err(res, ours):
        return _maxdiff(np.asarray(res)[dy.inv], ours)

    def cmp(what, ours, anchors, best=None):
        return compare(rows, ns, args, case.label, what, ours, anchors, best, log)

    # τ
    tau = r.inverse_dynamics(q, qd, qdd)
    an = [dict(label="`pin.rnea`", stmt="rnea(pm, pd, q, qd, qdd)", err=_maxdiff(tau, tau_pin))]
    if dy is not None:
        an.append(dict(label="dynibo `inverse_dynamics`",
                       stmt="dyn.inverse_dynamics(dq, dqd, dqdd)",
                       err=dyn_err(dy.robot.inverse_dynamics(ns["dq"], ns["dqd"], ns["dqdd"]), tau),
                       key=key("tau_dynibo")))
    if case.mj is not None:
        import mujoco
        mm, md, qi, di = case.mj
        md.qpos[qi], md.qvel[di], md.qacc[di] = q, 0.0, qdd
        mujoco.mj_inverse(mm, md)
        # agreement at q̇ = 0 (no damping/friction velocity terms): τ(q, 0, q̈)
        err = _maxdiff(md.qfrc_inverse[di], r.inverse_dynamics(q, np.zeros(n), qdd))
        md.qvel[di] = qd
        ns.update(mm=mm, md=md, mj_inverse=mujoco.mj_inverse)
        an.append(dict(label="`mujoco.mj_inverse` (reference, state in mjData)",
                       stmt="mj_inverse(mm, md)", err=err))
    cmp("τ = ID(q, q̇, q̈)", ("`inverse_dynamics(q, qd, qdd)`", "idyn(q, qd, qdd)"), an)
    an = [dict(label="`pin.rnea` (writes data.tau)", stmt="rnea(pm, pd, q, qd, qdd)")]
    if dy is not None:
        an.append(dict(label="dynibo `inverse_dynamics(..., out=)`",
                       stmt="dyn.inverse_dynamics(dq, dqd, dqdd, out=do1)"))
    cmp("τ, into a given array", ("`inverse_dynamics(..., out=o)`", "idyn(q, qd, qdd, out=o1)"), an)
    # g
    g = r.gravity_torques(q)
    an = [dict(label="`pin.computeGeneralizedGravity`", stmt="cgg(pm, pd, q)",
               err=_maxdiff(g, pin.computeGeneralizedGravity(pm, pd, q)))]
    if dy is not None:
        an.append(dict(label="dynibo `gravity`", stmt="dyn.gravity(dq)",
                       err=dyn_err(dy.robot.gravity(ns["dq"]), g), key=key("g_dynibo")))
    cmp("g(q)", ("`gravity_torques(q)`", "grav(q)"), an)
    # M
    M = r.mass_matrix(q)
    an = [dict(label=crba_label, stmt="crba_full(q)", err=_maxdiff(M, crba_full(q)))]
    best = None
    if dy is not None:
        Md = np.asarray(dy.robot.mass_matrix(ns["dq"])).reshape(n, n, order="F")
        an.append(dict(label="dynibo `mass_matrix` (flat, column-major)",
                       stmt="dyn.mass_matrix(dq)",
                       err=_maxdiff(Md[np.ix_(dy.inv, dy.inv)], M)))
        best = ("faster of the two, per repeat", key("M_best"))
    cmp("M(q)", ("`mass_matrix(q)`", "mmat(q)"), an, best)
    # C̄
    Cp = pin.computeCoriolisMatrix(pm, pd, q, qd).copy()
    cmp("C̄(q, q̇) (compared as C̄ q̇)", ("`coriolis_matrix(q, qd)`", "cor(q, qd)"),
        [dict(label="`pin.computeCoriolisMatrix`", stmt="ccm(pm, pd, q, qd)",
              err=_maxdiff(r.coriolis_matrix(q, qd) @ qd, Cp @ qd), key=key("C_pin"))])
    # ABA
    qdd_o = r.forward_dynamics(q, qd, tau_pin)
    an = [dict(label="`pin.aba`", stmt="aba(pm, pd, q, qd, tau)",
               err=_maxdiff(qdd_o, pin.aba(pm, pd, q, qd, tau_pin)), key=key("aba_pin"))]
    if dy is not None:
        an.append(dict(label="dynibo `forward_dynamics`",
                       stmt="dyn.forward_dynamics(dq, dqd, dtau)",
                       err=dyn_err(dy.robot.forward_dynamics(ns["dq"], ns["dqd"], ns["dtau"]),
                                   qdd_o)))
    cmp("q̈ = FD(q, q̇, τ) (ABA)", ("`forward_dynamics(q, qd, tau)`", "fdyn(q, qd, tau)"), an)
    # τ, τ′, τ″
    ours = r.torque_derivatives(case.qs)
    tp, t1p = taud(q, qd, qdd, qddd)
    _, _, t2p = tau2(case.qs)
    sym_note = " (M symmetrised)" if case.sym else ""
    cmp("τ, τ′, τ″ (recursive)", ("`torque_derivatives(qs)` k=2", "td(qs)"),
        [dict(label=f"Pinocchio τ′ route (τ, τ′ only){sym_note}", stmt="taud(q, qd, qdd, qddd)",
              err=max(_maxdiff(ours[0], tp), _maxdiff(ours[1], t1p)), key=key("tau2_route")),
         dict(label="Pinocchio τ′ route + central FD τ″", stmt="tau2(qs)",
              err=_maxdiff(ours[2], t2p))])
    cf = r.torque_derivatives(case.qs, method="closed_form")
    cmp("τ, τ′, τ″ (closed form)", ("`torque_derivatives(qs, 'closed_form')`",
                                    "td(qs, method='closed_form')"),
        [dict(label=f"Pinocchio τ′ route (τ, τ′ only){sym_note}", stmt="taud(q, qd, qdd, qddd)",
              err=max(_maxdiff(cf[0], tp), _maxdiff(cf[1], t1p)))])
    return rows


def bench_batch(case: Case, args, log) -> list:
    """N-sample batches: one call of ours vs a Python loop over Pinocchio (and dynibo)."""
    import pinocchio as pin
    r, pm, pd = case.robot, case.pm, case.pd
    n, N = r.n, args.batch
    QS = batch_states(case, N, args.seed)
    Q, QD, QDD = (np.ascontiguousarray(QS[:, i]) for i in range(3))
    taud, _ = make_pin_routes(pm, pd, case.sym)
    rows_q = [tuple(x) for x in zip(Q, QD, QDD)]
    rows_s = [tuple(x) for x in zip(QS[:, 0], QS[:, 1], QS[:, 2], QS[:, 3])]
    OUT, OUT1, OUTD = np.empty((N, n)), np.empty((N, n)), np.empty((N, n))

    def pin_loop():
        rnea = pin.rnea
        for i, (q, qd, qdd) in enumerate(rows_q):
            OUT[i] = rnea(pm, pd, q, qd, qdd)

    def pin_loop_taud():
        for i, (q, qd, qdd, qddd) in enumerate(rows_s):
            OUT[i], OUT1[i] = taud(q, qd, qdd, qddd)

    ns = dict(r=r, Q=Q, QD=QD, QDD=QDD, QS=QS, pin_loop=pin_loop, pin_loop_taud=pin_loop_taud)
    rows = []
    # targets: the Panda (issue 10) and the 30-joint chain (issue 21)
    sfx = {"panda": "", "chain": "_chain"}.get(case.name)
    tgt = sfx is not None and (case.name != "chain" or n == 30)
    pin_loop()
    tau_b = r.inverse_dynamics(Q, QD, QDD)
    an = [dict(label="Python loop over `pin.rnea`", stmt="pin_loop()",
               err=_maxdiff(tau_b, OUT), key="batch_tau" + sfx if tgt else "")]
    if case.dy is not None:
        dy = case.dy
        rows_d = [tuple(np.ascontiguousarray(x[dy.perm]) for x in t) for t in rows_q]
        dyn = dy.robot

        def dyn_loop():
            for i, (q, qd, qdd) in enumerate(rows_d):
                OUTD[i] = dyn.inverse_dynamics(q, qd, qdd)

        dyn_loop()
        ns["dyn_loop"] = dyn_loop
        an.append(dict(label="Python loop over dynibo `inverse_dynamics`", stmt="dyn_loop()",
                       err=_maxdiff(tau_b, OUTD[:, dy.inv])))
    res = compare(rows, ns, args, case.label, f"batch τ, N = {N}",
                  ("`inverse_dynamics(Q, QD, QDD)` (N, n)", "r.inverse_dynamics(Q, QD, QDD)"),
                  an, log=log, number_one=True)
    pin_loop_taud()
    td = r.torque_derivatives(QS)
    res += compare(rows, ns, args, case.label, f"batch τ, τ′, τ″, N = {N}",
                   ("`torque_derivatives(QS)` (N, 5, n)", "r.torque_derivatives(QS)"),
                   [dict(label="Python loop over Pinocchio's τ′ route (τ, τ′ only)",
                         stmt="pin_loop_taud()", key="batch_tau2" + sfx if tgt else "",
                         err=max(_maxdiff(td[:, 0], OUT), _maxdiff(td[:, 1], OUT1)))],
                   log=log, number_one=True)
    for row in rows:  # per-sample µs, so the columns read like the single-call tables
        row.unit = "µs/sample"
    for s in {id(x): x for row in rows for x in (row.t_ours, row.t_anchor)}.values():
        s.values = [v / N for v in s.values]
    return rows


def bench_limit(case: Case, args, batch_rows, log) -> dict:
    """The compiled limit (issue 21): CasADi-generated C of this robot's τ and τ, τ′, τ″, timed
    in C (thread CPU time, ``casadi_c``), next to our single calls and batches from Python and
    ``pin.rnea`` / Pinocchio's τ′ route (this process, process CPU time)."""
    import casadi_c
    import pinocchio as pin
    from timing import measure_group
    r, n = case.robot, case.robot.n
    try:
        c = casadi_c.time_casadi_c(r.model, case.qs, repeat=args.repeat,
                                   target_time=args.target_time)
    except Exception as e:  # noqa: BLE001 - no compiler, no casadi: the section says why
        log(f"  {case.label:8s} CasADi C: skipped ({type(e).__name__}: {e})")
        return {"error": f"{type(e).__name__}: {str(e).strip().splitlines()[-1][:200]}"}
    q, qd, qdd, _, _ = case.qs
    taud, _ = make_pin_routes(case.pm, case.pd, case.sym)
    ns = dict(idyn=r.inverse_dynamics, td=r.torque_derivatives, q=q, qd=qd, qdd=qdd,
              qs=case.qs, o1=np.empty(n), o3=np.empty((3, n)), rnea=pin.rnea, pm=case.pm,
              pd=case.pd, taud=taud, qddd=case.qs[3])
    st = measure_group(["idyn(q, qd, qdd)", "td(qs)", "rnea(pm, pd, q, qd, qdd)",
                        "taud(q, qd, qdd, qddd)"], ns, args.repeat, args.target_time)
    batch = {row.what.split(",")[0] + ("" if "τ′" not in row.what else " jet"): row.t_ours
             for row in batch_rows if "pin.rnea" in row.anchor or "τ′ route" in row.anchor}
    out = {"c": c, "py": {"tau": st[0], "jet": st[1]}, "pin": {"tau": st[2], "jet": st[3]},
           "batch": {"tau": batch.get("batch τ"), "jet": batch.get("batch τ jet")},
           "err": {"tau": _maxdiff(c["outputs"]["tau"], r.inverse_dynamics(q, qd, qdd)),
                   "jet": _maxdiff(c["outputs"]["jet"], r.torque_derivatives(case.qs))}}
    log(f"  {case.label:8s} CasADi C (in C): τ {c['stats']['tau'].med:.3f} µs, jet "
        f"{c['stats']['jet'].med:.3f} µs; ours from Python {st[0].med:.3f} / {st[1].med:.3f} µs "
        f"(generate {c['gen_s']:.1f} s, compile {c['compile_s']:.1f} s)")
    return out
