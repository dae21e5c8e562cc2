"""Side-by-side speed benchmark of mbs_dynamics against Pinocchio and MuJoCo (issue 3).

Everything is measured in one process, interleaved: in each repeat our call and the anchor's call
are timed back to back (the order alternates between repeats), so the ratio ours/anchor of that
repeat sees the same machine load. Tables give medians with [min–max] over the repeats. Writes
``README.md`` (tables, the command that reproduces them, machine facts) and ``scaling.png`` into
``--out-dir``.

Robots: a Panda (fingers locked; Pinocchio ``buildReducedModel``), a UR5, an ``n``-joint generated
chain (:func:`chain_urdf`, the same XML for Pinocchio via ``buildModelFromXML``) and Baxter (a
fixed-base tree, its four gripper finger joints locked), all from example-robot-data.

Anchors: ``pin.rnea``, ``pin.crba``, ``pin.computeCoriolisMatrix``,
``pin.computeGeneralizedGravity``, ``pin.aba``; Pinocchio's τ′ route (``computeRNEADerivatives``
then τ′ = ∂τ/∂q q̇ + ∂τ/∂q̇ q̈ + M q⃛, the chain rule of MATH.md) and its finite-difference τ″
(central differences of that τ′ at t ± h along the quartic Taylor trajectory: two more τ′ calls);
``mujoco.mj_inverse`` for reference (the URDF loaded with visuals and collisions stripped).

Run ``python3 bench/run_benchmark.py`` (or ``mbs-dynamics bench``); ``--help`` lists the options.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
import timeit
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROBOTS = ("panda", "ur5", "chain", "baxter")
PANDA_LOCKED = {"panda_finger_joint1": 0.0, "panda_finger_joint2": 0.0}
BAXTER_LOCKED = {"l_gripper_l_finger_joint": 0.0, "l_gripper_r_finger_joint": 0.0,
                 "r_gripper_l_finger_joint": 0.0, "r_gripper_r_finger_joint": 0.0}
ERD = {"panda": ("panda_description/urdf/panda.urdf", PANDA_LOCKED),
       "ur5": ("ur_description/urdf/ur5_robot.urdf", {}),
       "baxter": ("baxter_description/urdf/baxter.urdf", BAXTER_LOCKED)}

# Issue 3 targets, 7-DOF arm (the Panda), as upper bounds on the time ratio ours/anchor
TARGETS = {"inverse_dynamics": 1.0, "mass_matrix": 1.5, "coriolis_matrix": 1.0,
           "tau2_recursive": 1.0, "batch_tau": 1 / 5, "batch_tau2": 1 / 10}
WARM_START_TARGET_S = 1.0
FD_STEP = 1e-5  # [s] step of the finite-difference τ″ (error O(h²), ≈ 1e-9 relative here)

DEFAULTS = dict(out_dir="bench", robots=",".join(ROBOTS), chain_n=30, repeat=11, target_time=0.02,
                batch=10_000, batch_repeat=5, scaling="6,12,24,48,96", skip_startup=False,
                skip_scaling=False, skip_mujoco=False, seed=0, json=None, blas_threads=1)


# ------------------------------------------------------------------------------------------------
# Models
# ------------------------------------------------------------------------------------------------
def erd_root() -> Path:
    """The example-robot-data ``robots`` folder installed with the ``example-robot-data`` wheel."""
    import pinocchio as pin
    cands = [Path(pin.__file__).parents[4]]
    cands += [Path(p).parent for p in sys.path if p.endswith("site-packages")]
    cands += [Path(p) / "cmeel.prefix" for p in sys.path if p.endswith("site-packages")]
    for c in cands:
        r = c / "share/example-robot-data/robots"
        if r.is_dir():
            return r
    raise FileNotFoundError("example-robot-data is not installed (pip install example-robot-data)")


def chain_urdf(n: int, seed: int = 0) -> str:
    """URDF text of a serial chain of ``n`` revolute joints (axes cycling z, y, x, tilted joint
    origins, rotated inertial frames with off-centre COMs), deterministic in ``seed``."""
    rng = np.random.default_rng(seed)
    axes = ("0 0 1", "0 1 0", "1 0 0")

    def f(v):
        return " ".join(f"{x:.6f}" for x in v)

    parts = [f'<?xml version="1.0"?>\n<robot name="chain{n}">', '  <link name="link0"/>']
    for i in range(1, n + 1):
        mass = 2.0 * 0.97 ** i + rng.uniform(0.0, 0.3)
        com = (rng.uniform(-0.02, 0.02), rng.uniform(-0.02, 0.02), rng.uniform(0.03, 0.07))
        d = mass * np.array([0.004, 0.004, 0.002]) * rng.uniform(0.9, 1.1, 3)  # A + B ≥ C
        parts.append(
            f'  <link name="link{i}"><inertial><origin xyz="{f(com)}" '
            f'rpy="{f(rng.uniform(-0.5, 0.5, 3))}"/><mass value="{mass:.6f}"/>'
            f'<inertia ixx="{d[0]:.6g}" ixy="0" ixz="0" iyy="{d[1]:.6g}" iyz="0" '
            f'izz="{d[2]:.6g}"/></inertial></link>')
        xyz = (rng.uniform(-0.02, 0.02), rng.uniform(-0.02, 0.02), 0.1)
        parts.append(
            f'  <joint name="joint{i}" type="revolute"><parent link="link{i - 1}"/>'
            f'<child link="link{i}"/><origin xyz="{f(xyz)}" rpy="{f(rng.uniform(-0.2, 0.2, 3))}"/>'
            f'<axis xyz="{axes[(i - 1) % 3]}"/>'
            f'<limit lower="-2.9" upper="2.9" effort="100" velocity="3"/></joint>')
    parts.append("</robot>\n")
    return "\n".join(parts)


def pin_model(xml: str, locked: dict):
    """Pinocchio's model of the same URDF text, locked joints removed by ``buildReducedModel``."""
    import pinocchio as pin
    m = pin.buildModelFromXML(xml)
    if locked:
        q0 = pin.neutral(m)
        for name, v in locked.items():
            j = m.joints[m.getJointId(name)]
            if j.nq != 1:
                raise ValueError(f"locked joint {name} is not 1-dof in Pinocchio")
            q0[j.idx_q] = v
        m = pin.buildReducedModel(m, [m.getJointId(name) for name in locked], q0)
    m.gravity.linear = np.array([0.0, 0.0, -9.81])
    return m


def mujoco_model(xml: str, locked: dict):
    """MuJoCo model of the URDF with ``<visual>``/``<collision>`` stripped (no meshes needed) and
    the locked joints (all at 0 here) made fixed. Returns (model, note)."""
    import mujoco
    root = ET.fromstring(xml.encode() if isinstance(xml, str) else xml)
    for e in list(root):
        if e.tag not in ("link", "joint"):
            root.remove(e)  # transmissions, gazebo, materials: MuJoCo does not need them
    for link in root.iter("link"):
        for tag in ("visual", "collision"):
            for e in link.findall(tag):
                link.remove(e)
    for j in root.iter("joint"):
        if j.get("name") in locked:
            if locked[j.get("name")] != 0.0:
                raise ValueError("MuJoCo twin supports joints locked at 0 only")
            j.set("type", "fixed")
    text = ET.tostring(root, encoding="unicode")
    try:
        return mujoco.MjModel.from_xml_string(text), ""
    except ValueError as e:  # e.g. massless moving bodies: bound them and say so
        ext = ET.SubElement(root, "mujoco")
        ET.SubElement(ext, "compiler", boundmass="1e-6", boundinertia="1e-9")
        m = mujoco.MjModel.from_xml_string(ET.tostring(root, encoding="unicode"))
        return m, f"loaded with boundmass/boundinertia after: {_first_line(e)}"


def _first_line(e):
    return (str(e).strip().splitlines() or [""])[0]


@dataclass
class Case:
    """One robot: our Robot, Pinocchio's and MuJoCo's twins, and a random state."""
    name: str
    label: str
    robot: object
    pm: object
    pd: object
    mj: tuple = None  # (model, data, qpos index, dof index) or None
    mj_note: str = ""
    qs: np.ndarray = None  # (5, n): q, q′, q″, q‴, q⁗
    sym: bool = False      # Pinocchio leaves the lower triangle of M empty
    source: str = ""       # where the URDF came from


def make_case(name: str, args) -> Case:
    """Build a :class:`Case` (our Robot from the same URDF text Pinocchio and MuJoCo get)."""
    import mbs_dynamics as mbs
    if name == "chain":
        xml, locked, label = chain_urdf(args.chain_n, args.seed), {}, f"chain{args.chain_n}"
        src = "generated by benchmark.chain_urdf"
    else:
        rel, locked = ERD[name]
        path = erd_root() / rel
        xml = path.read_text()
        src = f"example-robot-data/{rel}"
        label = {"panda": "Panda", "ur5": "UR5", "baxter": "Baxter"}[name]
    robot = mbs.load_urdf(xml, locked_joints=locked or None)
    pm = pin_model(xml, locked)
    if pm.nq != robot.n or pm.nv != robot.n:
        raise RuntimeError(f"{label}: Pinocchio has nq={pm.nq}, nv={pm.nv}, we have n={robot.n}")
    if list(pm.names[1:]) != list(robot.joint_names):
        raise RuntimeError(f"{label}: joint order differs from Pinocchio's")
    case = Case(name, label, robot, pm, pm.createData())
    case.source = src
    rng = np.random.default_rng(args.seed + 1)
    n = robot.n
    lo = np.where(np.isfinite(robot.lower), robot.lower, -math.pi)
    hi = np.where(np.isfinite(robot.upper), robot.upper, math.pi)
    mid, half = 0.5 * (lo + hi), 0.4 * (hi - lo)  # inside the limits (MuJoCo adds limit forces)
    qs = rng.standard_normal((5, n))
    qs[0] = mid + half * rng.uniform(-1.0, 1.0, n)
    case.qs = qs
    import pinocchio as pin
    M = pin.crba(pm, pm.createData(), qs[0])
    case.sym = not np.allclose(M, M.T)
    if not args.skip_mujoco:
        try:
            import mujoco
            mm, note = mujoco_model(xml, locked)
            md = mujoco.MjData(mm)
            qi = np.array([mm.joint(j).qposadr[0] for j in robot.joint_names])
            di = np.array([mm.joint(j).dofadr[0] for j in robot.joint_names])
            if mm.nq != n or mm.nv != n:
                raise RuntimeError(f"MuJoCo model has nq={mm.nq}, nv={mm.nv}, expected {n}")
            case.mj, case.mj_note = (mm, md, qi, di), note
        except Exception as e:  # noqa: BLE001 - reference only: record why and go on
            case.mj, case.mj_note = None, f"skipped ({type(e).__name__}: {_first_line(e)})"
    return case


# ------------------------------------------------------------------------------------------------
# Pinocchio's τ′ route and finite-difference τ″ (the anchors of torque_derivatives)
# ------------------------------------------------------------------------------------------------
def _taylor_shift(h):
    """(4, 5) matrices T± with T± @ [q, q′, q″, q‴, q⁗] = [q, q′, q″, q‴](t ± h) (quartic)."""
    out = []
    for s in (h, -h):
        T = np.zeros((4, 5))
        for r in range(4):
            for c in range(r, 5):
                T[r, c] = s ** (c - r) / math.factorial(c - r)
        out.append(T)
    return out


def make_pin_routes(pm, pd, sym):
    """Closures ``taud(q, qd, qdd, qddd) -> (τ, τ′)`` and ``tau2(qs) -> (τ, τ′, τ″)`` of Pinocchio."""
    import pinocchio as pin
    rnea_d = pin.computeRNEADerivatives
    Tp, Tm = _taylor_shift(FD_STEP)
    inv2h = 0.5 / FD_STEP

    if sym:
        def taud(q, qd, qdd, qddd):
            dq, dv, M = rnea_d(pm, pd, q, qd, qdd)
            M = np.triu(M) + np.triu(M, 1).T
            return pd.tau.copy(), dq @ qd + dv @ qdd + M @ qddd
    else:
        def taud(q, qd, qdd, qddd):
            dq, dv, M = rnea_d(pm, pd, q, qd, qdd)
            return pd.tau.copy(), dq @ qd + dv @ qdd + M @ qddd

    def tau2(qs):
        tau, t1 = taud(qs[0], qs[1], qs[2], qs[3])
        p = Tp @ qs
        m = Tm @ qs
        _, tp = taud(p[0], p[1], p[2], p[3])
        _, tm = taud(m[0], m[1], m[2], m[3])
        return tau, t1, (tp - tm) * inv2h

    return taud, tau2


# ------------------------------------------------------------------------------------------------
# Timing
# ------------------------------------------------------------------------------------------------
@dataclass
class Stat:
    """Median and range of a list of samples."""
    values: list = field(default_factory=list)

    @property
    def med(self):
        return float(np.median(self.values)) if self.values else float("nan")

    @property
    def lo(self):
        return float(np.min(self.values)) if self.values else float("nan")

    @property
    def hi(self):
        return float(np.max(self.values)) if self.values else float("nan")

    def fmt(self, digits=3, scale=1.0):
        if not self.values:
            return "–"
        return (f"{_g(self.med * scale, digits)} [{_g(self.lo * scale, digits)}–"
                f"{_g(self.hi * scale, digits)}]")

    def to_dict(self):
        return {"median": self.med, "min": self.lo, "max": self.hi, "values": list(self.values)}


def _g(x, digits=3):
    if not math.isfinite(x):
        return str(x)
    if x == 0:
        return "0"
    e = math.floor(math.log10(abs(x)))
    dec = max(0, digits - 1 - e)
    return f"{x:.{dec}f}"


def _calibrate(timer, target):
    """Loop count so that one timing of ``timer`` takes about ``target`` seconds."""
    number = 1
    while True:
        t = timer.timeit(number)
        if t >= 0.2 * target or number >= 10 ** 7:
            return max(1, int(round(number * target / max(t, 1e-9))))
        number *= 10 if t < 0.02 * target else 2


def measure(stmt, ns, repeat, target):
    """µs per execution of ``stmt`` (a :class:`Stat` over ``repeat`` timings)."""
    timer = timeit.Timer(stmt, globals=ns)
    timer.timeit(1)
    number = _calibrate(timer, target)
    return Stat([timer.timeit(number) / number * 1e6 for _ in range(repeat)])


def measure_group(stmts, ns, repeat, target):
    """µs per execution of each statement, timed round-robin (the starting statement rotates
    between repeats) so that all of them see the same machine load. A list of :class:`Stat`."""
    timers = [timeit.Timer(s, globals=ns) for s in stmts]
    for t in timers:
        t.timeit(1)
    numbers = [_calibrate(t, target) for t in timers]
    out = [Stat() for _ in stmts]
    k = len(stmts)
    for r in range(repeat):
        for j in range(k):
            i = (r + j) % k
            out[i].values.append(timers[i].timeit(numbers[i]) / numbers[i] * 1e6)
    return out


def measure_pair(ours, anchor, ns, repeat, target):
    """Interleaved timings of two statements: (ours µs, anchor µs, per-repeat ratio) Stats."""
    to, ta = timeit.Timer(ours, globals=ns), timeit.Timer(anchor, globals=ns)
    to.timeit(1)
    ta.timeit(1)
    no, na = _calibrate(to, target), _calibrate(ta, target)
    so, sa, sr = Stat(), Stat(), Stat()
    for r in range(repeat):
        if r % 2 == 0:
            o = to.timeit(no) / no
            a = ta.timeit(na) / na
        else:
            a = ta.timeit(na) / na
            o = to.timeit(no) / no
        so.values.append(o * 1e6)
        sa.values.append(a * 1e6)
        sr.values.append(o / a)
    return so, sa, sr


@dataclass
class Row:
    """One side-by-side comparison."""
    what: str
    ours: str
    anchor: str
    t_ours: Stat
    t_anchor: Stat
    ratio: Stat
    err: float = float("nan")   # max |ours − anchor| on the benchmark state
    key: str = ""               # TARGETS key when a target applies (Panda only)
    unit: str = "µs"

    def to_dict(self):
        return {"what": self.what, "ours": self.ours, "anchor": self.anchor, "unit": self.unit,
                "t_ours": self.t_ours.to_dict(), "t_anchor": self.t_anchor.to_dict(),
                "ratio": self.ratio.to_dict(), "max_abs_diff": self.err, "key": self.key}


def _maxdiff(a, b):
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b))))


# ------------------------------------------------------------------------------------------------
# The measurements
# ------------------------------------------------------------------------------------------------
def bench_single(case: Case, args, log) -> list:
    """Single-state calls of one robot, ours vs anchor, with agreement checks."""
    import pinocchio as pin
    r, pm, pd = case.robot, case.pm, case.pd
    q, qd, qdd, qddd, qdddd = case.qs
    taud, tau2 = make_pin_routes(pm, pd, case.sym)
    ns = dict(r=r, pm=pm, pd=pd, q=q, qd=qd, qdd=qdd, qddd=qddd, qs=case.qs,
              idyn=r.inverse_dynamics, crba_=r.mass_matrix, cor=r.coriolis_matrix,
              grav=r.gravity_torques, td=r.torque_derivatives, taud=taud, tau2=tau2,
              rnea=pin.rnea, crba=pin.crba, ccm=pin.computeCoriolisMatrix,
              cgg=pin.computeGeneralizedGravity, rnea_d=pin.computeRNEADerivatives,
              aba=pin.aba, out=np.empty(r.n))
    rows = []
    rep, tgt = args.repeat, args.target_time
    sym_note = " (M symmetrised)" if case.sym else ""

    def pair(what, ours, anchor, os_, as_, err, key=""):
        t0 = time.perf_counter()
        row = Row(what, ours, anchor, *measure_pair(os_, as_, ns, rep, tgt), err=err, key=key)
        rows.append(row)
        log(f"  {case.label:8s} {what:34s} ours {row.t_ours.med:9.2f} µs  anchor "
            f"{row.t_anchor.med:9.2f} µs  ratio {row.ratio.med:6.3f}  "
            f"({time.perf_counter() - t0:.1f} s)")

    tau_pin = pin.rnea(pm, pd, q, qd, qdd).copy()
    pair("τ = ID(q, q̇, q̈)", "`inverse_dynamics(q, qd, qdd)`", "`pin.rnea`",
         "idyn(q, qd, qdd)", "rnea(pm, pd, q, qd, qdd)",
         _maxdiff(r.inverse_dynamics(q, qd, qdd), tau_pin), "inverse_dynamics")
    pair("τ, into a given array", "`inverse_dynamics(..., out=out)`", "`pin.rnea`",
         "idyn(q, qd, qdd, out=out)", "rnea(pm, pd, q, qd, qdd)", float("nan"))
    pair("M(q)", "`mass_matrix(q)`", "`pin.crba`", "crba_(q)", "crba(pm, pd, q)",
         _maxdiff(r.mass_matrix(q), pin.crba(pm, pd, q)), "mass_matrix")
    Cp = pin.computeCoriolisMatrix(pm, pd, q, qd).copy()
    pair("C(q, q̇) (compared as C q̇)", "`coriolis_matrix(q, qd)`", "`pin.computeCoriolisMatrix`",
         "cor(q, qd)", "ccm(pm, pd, q, qd)", _maxdiff(r.coriolis_matrix(q, qd) @ qd, Cp @ qd),
         "coriolis_matrix")
    pair("Q_grav(q)", "`gravity_torques(q)`", "`pin.computeGeneralizedGravity`", "grav(q)",
         "cgg(pm, pd, q)", _maxdiff(r.gravity_torques(q), pin.computeGeneralizedGravity(pm, pd, q)))
    ours = r.torque_derivatives(case.qs)
    tp, t1p = taud(q, qd, qdd, qddd)
    _, _, t2p = tau2(case.qs)
    pair("τ, τ′, τ″ (recursive) vs τ, τ′", "`torque_derivatives(qs)` k=2",
         f"Pinocchio τ′ route{sym_note}", "td(qs)", "taud(q, qd, qdd, qddd)",
         max(_maxdiff(ours[0], tp), _maxdiff(ours[1], t1p)), "tau2_recursive")
    pair("τ, τ′, τ″ (recursive) vs FD τ″", "`torque_derivatives(qs)` k=2",
         "Pinocchio τ′ route + central FD τ″", "td(qs)", "tau2(qs)",
         _maxdiff(ours[2], t2p))
    cf = r.torque_derivatives(case.qs, method="closed_form")
    pair("τ, τ′, τ″ (closed form) vs τ, τ′", "`torque_derivatives(qs, 'closed_form')`",
         f"Pinocchio τ′ route{sym_note}", "td(qs, method='closed_form')",
         "taud(q, qd, qdd, qddd)", max(_maxdiff(cf[0], tp), _maxdiff(cf[1], t1p)))
    pair("τ, τ′, τ″ (closed form) vs FD τ″", "`torque_derivatives(qs, 'closed_form')`",
         "Pinocchio τ′ route + central FD τ″", "td(qs, method='closed_form')", "tau2(qs)",
         _maxdiff(cf[2], t2p))
    # forward dynamics: the Robot method if the core has it, else the ABA module's entry
    fd_label = "`forward_dynamics(q, qd, tau)`"
    if hasattr(r, "forward_dynamics"):
        ns["fdyn"] = r.forward_dynamics
    else:
        try:
            from . import aba as _aba
            ws = _aba.make_aba_workspace(r.n)
            ns["fdyn"] = lambda q, qd, tau, _r=r, _ws=ws: _aba.forward_dynamics(_r, _ws, q, qd, tau)
            fd_label = "`aba.forward_dynamics(robot, ws, q, qd, tau)` (no Robot method yet)"
        except ImportError:
            ns["fdyn"] = None
    if ns["fdyn"] is not None:
        ns["tau"] = tau_pin
        pair("q̈ = FD(q, q̇, τ)", fd_label, "`pin.aba`", "fdyn(q, qd, tau)",
             "aba(pm, pd, q, qd, tau)",
             _maxdiff(ns["fdyn"](q, qd, tau_pin), pin.aba(pm, pd, q, qd, tau_pin)))
    if case.mj is not None:
        import mujoco
        mm, md, qi, di = case.mj
        md.qpos[qi], md.qvel[di], md.qacc[di] = q, 0.0, qdd
        mujoco.mj_inverse(mm, md)
        # agreement at q̇ = 0 (no damping/friction velocity terms): τ(q, 0, q̈)
        err = _maxdiff(md.qfrc_inverse[di], r.inverse_dynamics(q, np.zeros(r.n), qdd))
        md.qvel[di] = qd
        ns.update(mm=mm, md=md, mj_inverse=mujoco.mj_inverse)
        pair("τ = ID(q, q̇, q̈), MuJoCo (reference)", "`inverse_dynamics(q, qd, qdd)`",
             "`mujoco.mj_inverse` (state in mjData)", "idyn(q, qd, qdd)", "mj_inverse(mm, md)",
             err)
    return rows


def bench_parallel_launch(args, log) -> dict:
    """Cost of entering one Numba ``parallel=True`` region that does (almost) nothing, and the
    threading layer in use: the fixed price every threaded batch call pays on this machine."""
    import numba
    from numba import njit, prange

    @njit(parallel=True)
    def probe(x):
        s = 0.0
        for i in prange(x.shape[0]):
            s += x[i]
        return s

    x = np.ones(16)
    probe(x)
    st = measure("probe(x)", {"probe": probe, "x": x}, args.repeat, args.target_time)
    out = {"stat": st, "layer": numba.threading_layer(), "threads": numba.get_num_threads(),
           "wait_policy": os.environ.get("OMP_WAIT_POLICY", "unset")}
    log(f"  parallel launch: {st.med:.1f} µs per empty prange region ({out['layer']} layer, "
        f"{out['threads']} threads, OMP_WAIT_POLICY {out['wait_policy']})")
    return out


def bench_batch(case: Case, args, log) -> list:
    """N-sample batches: our one compiled loop vs a Python loop over Pinocchio."""
    import pinocchio as pin
    r, pm, pd = case.robot, case.pm, case.pd
    n, N = r.n, args.batch
    rng = np.random.default_rng(args.seed + 2)
    QS = rng.standard_normal((N, 5, n))
    QS[:, 0] = case.qs[0] + 0.3 * rng.standard_normal((N, n))
    Q, QD, QDD = (np.ascontiguousarray(QS[:, i]) for i in range(3))
    taud, _ = make_pin_routes(pm, pd, case.sym)
    rows_q = [tuple(x) for x in zip(Q, QD, QDD)]
    rows_s = [tuple(x) for x in zip(QS[:, 0], QS[:, 1], QS[:, 2], QS[:, 3])]
    OUT, OUT1 = np.empty((N, n)), np.empty((N, n))

    def pin_loop():
        rnea = pin.rnea
        for i, (q, qd, qdd) in enumerate(rows_q):
            OUT[i] = rnea(pm, pd, q, qd, qdd)

    def pin_loop_taud():
        for i, (q, qd, qdd, qddd) in enumerate(rows_s):
            OUT[i], OUT1[i] = taud(q, qd, qdd, qddd)

    ns = dict(r=r, Q=Q, QD=QD, QDD=QDD, QS=QS, pin_loop=pin_loop, pin_loop_taud=pin_loop_taud)
    rows = []
    rep = args.batch_repeat
    for what, ours, anchor, os_, as_, key, check in (
            (f"τ, N = {N}", "`inverse_dynamics(Q, QD, QDD)` (N, n)", "Python loop over `pin.rnea`",
             "r.inverse_dynamics(Q, QD, QDD)", "pin_loop()", "batch_tau", "tau"),
            (f"τ, τ′, τ″ vs τ, τ′, N = {N}", "`torque_derivatives(QS)` (N, 5, n)",
             "Python loop over Pinocchio's τ′ route", "r.torque_derivatives(QS)",
             "pin_loop_taud()", "batch_tau2", "taud")):
        t0 = time.perf_counter()
        so, sa, sr = measure_pair(os_, as_, ns, rep, 1e-9)  # one batch per timing
        if check == "tau":
            err = _maxdiff(r.inverse_dynamics(Q, QD, QDD), OUT)
        else:
            res = r.torque_derivatives(QS)
            err = max(_maxdiff(res[:, 0], OUT), _maxdiff(res[:, 1], OUT1))
        # report per-sample µs so the columns read like the single-call tables
        for s in (so, sa):
            s.values = [v / N for v in s.values]
        row = Row(what, ours, anchor, so, sa, sr, err=err, key=key, unit="µs/sample")
        rows.append(row)
        log(f"  {case.label:8s} batch {what:28s} ours {1 / row.t_ours.med:7.3f} M/s  anchor "
            f"{1 / row.t_anchor.med:7.3f} M/s  ratio {row.ratio.med:6.3f}  "
            f"({time.perf_counter() - t0:.1f} s)")
    return rows


def bench_profile(case: Case, args, log) -> list:
    """Where the time of one call goes: public method, with ``out=``, the compiled kernel alone
    (packed model, workspace, preallocated output), a no-op compiled function with the same
    arguments (the dispatch floor), and the anchor. Uses Robot internals; skipped if they move."""
    import pinocchio as pin
    from numba import njit
    from . import _kernels as K
    r = case.robot
    try:
        pf, ws = r._pf, r._ws
    except AttributeError as e:
        return [("profile skipped", str(e))]

    @njit
    def noop4(a, b, c, d):
        return 0

    @njit
    def noop6(a, b, c, d, e, f):
        return 0

    @njit
    def noop5i(a, b, c, d, e, f):
        return 0

    q, qd, qdd, qddd, _ = case.qs
    n = r.n
    taud, _ = make_pin_routes(case.pm, case.pd, case.sym)
    ns = dict(r=r, K=K, pf=pf, ws=ws, q=q, qd=qd, qdd=qdd, qddd=qddd, qs=case.qs, o1=np.empty(n),
              o2=np.empty((n, n)), o3=np.empty((3, n)), noop4=noop4, noop6=noop6,
              noop5i=noop5i, pin=pin, pm=case.pm, pd=case.pd, taud=taud,
              idyn=r.inverse_dynamics, mm=r.mass_matrix, cor=r.coriolis_matrix,
              td=r.torque_derivatives)
    specs = [
        ("inverse_dynamics", "idyn(q, qd, qdd)", "idyn(q, qd, qdd, out=o1)",
         "K.rnea(pf, ws, q, qd, qdd, o1)", "noop6(pf, ws, q, qd, qdd, o1)",
         "pin.rnea(pm, pd, q, qd, qdd)"),
        ("mass_matrix", "mm(q)", "mm(q, out=o2)", "K.mass_matrix(pf, ws, q, o2)",
         "noop4(pf, ws, q, o2)", "pin.crba(pm, pd, q)"),
        ("coriolis_matrix", "cor(q, qd)", "cor(q, qd, out=o2)", "K.coriolis(pf, ws, q, qd, o2, 0)",
         "noop5i(pf, ws, q, qd, o2, 0)", "pin.computeCoriolisMatrix(pm, pd, q, qd)"),
        ("torque_derivatives k=2", "td(qs)", "td(qs, out=o3)",
         "K.torque_derivatives(pf, ws, qs, o3)", "noop4(pf, ws, qs, o3)",
         "taud(q, qd, qdd, qddd)"),
    ]
    rows = []
    for name, *stmts in specs:
        try:
            stats = measure_group(stmts, ns, args.repeat, args.target_time)
        except Exception as e:  # noqa: BLE001 - the core's internals changed: say so
            rows.append((name, f"skipped: {type(e).__name__}: {e}"))
            continue
        rows.append((name, stats))
        log(f"  profile {name:24s} " + "  ".join(f"{s.med:7.2f}" for s in stats) + "  µs")
    return rows


def bench_scaling(args, log) -> dict:
    """Chains of n joints: recursive vs closed-form τ, τ′, τ″ (and Pinocchio's τ′ route)."""
    import mbs_dynamics as mbs
    sizes = [int(s) for s in args.scaling.split(",") if s.strip()]
    res = {"n": sizes, "recursive": [], "closed_form": [], "pin_taud": []}
    for n in sizes:
        t0 = time.perf_counter()
        xml = chain_urdf(n, args.seed)
        r = mbs.load_urdf(xml)
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
            # log-log linear interpolation of the sign change
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
    fig, ax = plt.subplots(figsize=(7, 4.8), dpi=110)
    for key, lab, st in (("recursive", "recursive (O(n), Numba)", "o-"),
                         ("closed_form", "closed form (dense NumPy, seed 004)", "s-"),
                         ("pin_taud", "Pinocchio τ′ route only (τ, τ′; reference)", "^--")):
        med = np.array([s.med for s in sc[key]])
        lo = np.array([s.lo for s in sc[key]])
        hi = np.array([s.hi for s in sc[key]])
        tail = f" over n ≥ {int(n[-3])}" if len(n) >= 3 else ""
        if key == "recursive":
            lab += f", slope {summ['slope_rec_tail']:.2f}{tail}"
        elif key == "closed_form":
            lab += f", slope {summ['slope_cf_tail']:.2f}{tail}"
        ax.errorbar(n, med, yerr=[med - lo, hi - med], fmt=st, capsize=3, label=lab,
                    color={"recursive": "C0", "closed_form": "C3", "pin_taud": "0.5"}[key])
    rec = np.array([s.med for s in sc["recursive"]])
    ref = rec[-1] * n / n[-1]
    ax.plot(n, ref, ":", color="C0", alpha=0.6, label="O(n) through the largest n")
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
    ax.set_xlabel("joints n (serial chain)")
    ax.set_ylabel("µs per call (median, bars min–max)")
    ax.set_title("τ, τ′, τ″ of a chain: torque_derivatives order 2")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


_STARTUP_CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
import numpy as np
import numba
ta = time.perf_counter()
import mbs_dynamics as mbs
t1 = time.perf_counter()
r = mbs.load_urdf(sys.argv[1], locked_joints=json.loads(sys.argv[2]) or None)
t2 = time.perf_counter()
x = np.full(r.n, 0.1)
r.inverse_dynamics(x, x, x)
t3 = time.perf_counter()
r.torque_derivatives(np.full((5, r.n), 0.1))
t4 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "import_numpy_numba": ta - t0, "load": t2 - t1, "first_tau": t3 - t2, "first_tau2": t4 - t3}))
"""


def bench_startup(args, log) -> dict:
    """Cold (empty Numba cache) and warm (cache present) starts, each in a fresh subprocess:
    import + load_urdf (Panda) + first inverse_dynamics call (+ first τ″ call, listed apart)."""
    path = str(erd_root() / ERD["panda"][0])
    pkg_parent = str(Path(__file__).resolve().parents[1])
    out = {}
    with tempfile.TemporaryDirectory(prefix="mbs_numba_cache_") as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache,
                   PYTHONPATH=pkg_parent + os.pathsep + os.environ.get("PYTHONPATH", ""))
        for kind, times in (("cold", 1), ("warm", 3)):
            runs = []
            for _ in range(times):
                t0 = time.perf_counter()
                p = subprocess.run([sys.executable, "-c", _STARTUP_CHILD, path,
                                    json.dumps(PANDA_LOCKED)], env=env, capture_output=True,
                                   text=True, timeout=600)
                wall = time.perf_counter() - t0
                if p.returncode != 0:
                    raise RuntimeError(f"startup child failed: {p.stderr[-2000:]}")
                d = json.loads(p.stdout.strip().splitlines()[-1])
                d["wall"] = wall
                d["first_call_total"] = d["import"] + d["load"] + d["first_tau"]
                runs.append(d)
            # warm: the run with the median in-process total
            runs.sort(key=lambda d: d["first_call_total"])
            out[kind] = runs[len(runs) // 2]
            out[kind]["runs"] = len(runs)
            log(f"  startup {kind}: import {out[kind]['import']:.3f} s, load "
                f"{out[kind]['load']:.3f} s, first τ {out[kind]['first_tau']:.3f} s, first τ″ "
                f"{out[kind]['first_tau2']:.3f} s, process wall {out[kind]['wall']:.3f} s")
    return out


def blas_threads(n: int) -> str:
    """Set NumPy's OpenBLAS thread count at run time (``n`` > 0) and say what it is.

    The closed form multiplies 6n × 6n matrices; on a shared 2-core machine OpenBLAS threads
    spin against the other processes and make its timings erratic, so the benchmark pins them to
    one thread by default (the 1 kHz caller is single-threaded anyway)."""
    import ctypes
    import glob
    libdir = os.path.dirname(np.__file__) + ".libs"
    for path in sorted(glob.glob(os.path.join(libdir, "*openblas*"))):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for get, put in (("scipy_openblas_get_num_threads64_", "scipy_openblas_set_num_threads64_"),
                         ("scipy_openblas_get_num_threads", "scipy_openblas_set_num_threads"),
                         ("openblas_get_num_threads64_", "openblas_set_num_threads64_"),
                         ("openblas_get_num_threads", "openblas_set_num_threads")):
            if hasattr(lib, get) and hasattr(lib, put):
                before = getattr(lib, get)()
                if n > 0:
                    getattr(lib, put)(int(n))
                return (f"OpenBLAS {getattr(lib, get)()} thread(s)"
                        + (f" (set by --blas-threads; default was {before})" if n > 0 else ""))
    return "unknown BLAS (thread count left as is)"


# ------------------------------------------------------------------------------------------------
# Machine facts
# ------------------------------------------------------------------------------------------------
def machine_facts() -> dict:
    """CPU, cores, load, versions and thread settings that shape the numbers."""
    import numba
    facts = {}
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    facts["CPU"] = cpu
    facts["cores (os.cpu_count / usable)"] = (
        f"{os.cpu_count()} / {len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else '?'}")
    try:
        facts["load average at start (1, 5, 15 min)"] = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        pass
    facts["OS"] = f"{platform.system()} {platform.release()}"
    facts["Python"] = platform.python_version()
    facts["numpy"] = np.__version__
    facts["numba"] = f"{numba.__version__} ({numba.get_num_threads()} threads for parallel kernels)"
    for mod, key in (("pinocchio", "pinocchio"), ("mujoco", "mujoco")):
        try:
            facts[key] = __import__(mod).__version__
        except Exception:  # noqa: BLE001
            facts[key] = "not installed"
    import mbs_dynamics
    facts["mbs_dynamics"] = mbs_dynamics.__version__
    envs = {k: v for k, v in os.environ.items()
            if k.startswith(("OPENBLAS", "OMP_", "MKL_", "NUMBA_", "BLIS_"))}
    facts["thread/BLAS env"] = ", ".join(f"{k}={v}" for k, v in sorted(envs.items())) or "none set"
    try:
        repo = Path(__file__).resolve().parents[1]
        head = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, timeout=10).stdout.strip()
        core = [f"mbs_dynamics/{f}.py" for f in ("_kernels", "robot", "model", "urdf", "lie",
                                                 "closed_form", "aba", "benchmark")]
        dirty = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "--", *core],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        if head:
            facts["git commit"] = head + (" (the measured code has uncommitted changes)"
                                          if dirty else "")
    except (OSError, subprocess.SubprocessError):
        pass
    facts["date (UTC)"] = time.strftime("%Y-%m-%d %H:%M", time.gmtime())
    return facts


# ------------------------------------------------------------------------------------------------
# Report
# ------------------------------------------------------------------------------------------------
def command_line(args) -> str:
    """The command that reproduces this run (non-default options only)."""
    parts = ["python3", "bench/run_benchmark.py"]
    for k, v in sorted(vars(args).items()):
        if k not in DEFAULTS or v == DEFAULTS[k] or k in ("json",):
            continue
        if k == "out_dir" and Path(v).name == "bench":
            continue
        flag = "--" + k.replace("_", "-")
        if isinstance(v, bool):
            if v:
                parts.append(flag)
        else:
            parts += [flag, str(v)]
    return shlex.join(parts)


def _verdict(ratio, bound):
    if ratio <= bound:
        return "**holds**"
    return f"**missed** by {100 * (ratio / bound - 1):.0f} %"


def _rows_table(rows, targets=False):
    head = ("| quantity | ours | anchor | ours µs | anchor µs | ratio ours/anchor | max abs diff |"
            + (" target | |" if targets else ""))
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        t = ""
        if targets:
            t = (f" ≤ {TARGETS[r.key]:.2g} | {_verdict(r.ratio.med, TARGETS[r.key])} |"
                 if r.key in TARGETS and r.unit == "µs" else " | |")
        lines.append(f"| {r.what} | {r.ours} | {r.anchor} | {r.t_ours.fmt()} | "
                     f"{r.t_anchor.fmt()} | {r.ratio.fmt()} | {_e(r.err)} |{t}")
    return lines


def _e(x):
    return "–" if not math.isfinite(x) else f"{x:.1e}"


def write_report(path, res, args):
    """bench/README.md from the results dict."""
    L = []
    facts = res["facts"]
    L += ["# Speed: mbs_dynamics side by side with Pinocchio and MuJoCo", "",
          "Generated by `mbs_dynamics/benchmark.py` (issue 3); do not edit by hand. Reproduce with:",
          "", "```", res["command"], "```", "",
          "Every call is timed in this one process. In each repeat our call and the anchor's call "
          f"are timed back to back (order alternating), each over a loop calibrated to "
          f"≈ {args.target_time * 1e3:g} ms; the ratio is taken per repeat. Cells give the "
          f"median [min–max] over {args.repeat} repeats (batches: {args.batch_repeat}). Ratios "
          "below 1 mean we are faster. *max abs diff* is the largest difference of our result "
          "from the anchor's on the benchmark state (N m, or rad/s² for q̈), which shows that "
          "both sides compute the same thing.", "", "## Machine", ""]
    L += ["| | |", "|---|---|"] + [f"| {k} | {v} |" for k, v in facts.items()]
    L += [f"| load average at end | {res['load_end']} |", f"| total run time | "
          f"{res['elapsed']:.0f} s |", ""]
    # ---------------------------------------------------------------- targets
    tg = []
    panda_rows = {r.key: r for r in res["single"].get("panda", []) + res["batch"].get("panda", [])
                  if r.key}
    names = {"inverse_dynamics": "`inverse_dynamics` / `pin.rnea`",
             "mass_matrix": "`mass_matrix` / `pin.crba`",
             "coriolis_matrix": "`coriolis_matrix` / `pin.computeCoriolisMatrix`",
             "tau2_recursive": "`torque_derivatives` k=2 (τ, τ′, τ″) / Pinocchio τ′ route alone",
             "batch_tau": "batch τ, N samples / Python loop over `pin.rnea` (time ratio)",
             "batch_tau2": "batch τ, τ′, τ″ / Python loop over the τ′ route (time ratio)"}
    for key, bound in TARGETS.items():
        r = panda_rows.get(key)
        if r is None:
            continue
        extra = ""
        if key.startswith("batch"):
            extra = f" (throughput {1 / r.ratio.med:.1f}×, target ≥ {1 / bound:.0f}×)"
        tg.append(f"| {names[key]} | ≤ {bound:.2g} | {r.ratio.fmt()}{extra} | "
                  f"{_verdict(r.ratio.med, bound)} |")
    st = res.get("startup")
    if st:
        w = st["warm"]["first_call_total"]
        tg.append(f"| warm start: import + `load_urdf` + first `inverse_dynamics` (cache present) "
                  f"| < {WARM_START_TARGET_S:g} s | {w:.3f} s (process wall "
                  f"{st['warm']['wall']:.3f} s) | "
                  f"{'**holds**' if w < WARM_START_TARGET_S else '**missed**'} |")
    if tg:
        L += ["## Targets of issue 3 (7-DOF arm: Panda, same run)", "",
              "| target | bound | measured ratio, median [min–max] | verdict |",
              "|---|---|---|---|"] + tg + [""]
        missed = [k for k, b in TARGETS.items() if k in panda_rows and panda_rows[k].ratio.med > b]
        if missed:
            L += ["Where a target is missed, the profile below shows where the time goes "
                  "(see *Why*).", ""]
    # ---------------------------------------------------------------- per robot
    L += ["## Single calls", ""]
    for name, rows in res["single"].items():
        c = res["cases"][name]
        L += [f"### {c['label']} (n = {c['n']}, {c['source']})", ""]
        L += _rows_table(rows, targets=(name == "panda"))
        L += [""]
        if c["mj_note"]:
            L += [f"MuJoCo: {c['mj_note']}", ""]
        if c["sym"]:
            L += ["Pinocchio left M's lower triangle empty; the τ′ route symmetrises it.", ""]
    L += ["The MuJoCo row's *max abs diff* compares at q̇ = 0 (mj_inverse adds URDF joint damping "
          "and friction loss, which depend on q̇); its timing includes MuJoCo's whole pipeline "
          "(kinematics, inertia, constraints) on a model without geometry.", ""]
    # ---------------------------------------------------------------- batch
    if res["batch"]:
        L += ["## Batch path", "",
              f"N = {args.batch} random states, one call of ours over (N, n) or (N, 5, n) arrays "
              "(one compiled loop) against a plain Python loop over Pinocchio that stores each "
              "result into an (N, n) array. Times are per sample; throughput = 1 / time.", ""]
        pl = res.get("parallel_launch")
        if pl:
            L += [f"Entering one empty Numba `parallel=True` region costs "
                  f"{pl['stat'].fmt()} µs here ({pl['layer']} threading layer, {pl['threads']} "
                  f"threads, OMP_WAIT_POLICY {pl['wait_policy']}); every threaded batch call pays "
                  "it once.", ""]
        for name, rows in res["batch"].items():
            L += [f"### {res['cases'][name]['label']}", ""]
            L += ["| quantity | ours | anchor | ours µs/sample | anchor µs/sample | time ratio | "
                  "throughput ours | throughput anchor | speed-up | max abs diff |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
            for r in rows:
                L.append(f"| {r.what} | {r.ours} | {r.anchor} | {r.t_ours.fmt()} | "
                         f"{r.t_anchor.fmt()} | {r.ratio.fmt()} | {1 / r.t_ours.med:.2f} M/s | "
                         f"{1 / r.t_anchor.med:.2f} M/s | {1 / r.ratio.med:.1f}× | {_e(r.err)} |")
            L += [""]
    # ---------------------------------------------------------------- scaling
    sc = res.get("scaling")
    if sc:
        s = res["scaling_summary"]
        L += ["## Scaling: τ, τ′, τ″ of an n-joint chain", "", "![scaling](scaling.png)", "",
              "| n | recursive µs | closed form µs | closed / recursive | recursive µs per joint |"
              " Pinocchio τ′ route µs (τ, τ′ only) |", "|---|---|---|---|---|---|"]
        for i, n in enumerate(sc["n"]):
            L.append(f"| {n} | {sc['recursive'][i].fmt()} | {sc['closed_form'][i].fmt()} | "
                     f"{s['cf_over_rec'][i]:.1f} | {s['per_joint_rec'][i]:.2f} | "
                     f"{sc['pin_taud'][i].fmt()} |")
        cross = (f"The two methods cross at n ≈ {s['cross']:.0f}." if s["cross"] is not None else
                 f"They do not cross for n in {sc['n'][0]}–{sc['n'][-1]}: the closed form is "
                 f"{s['cf_over_rec'].min():.0f}–{s['cf_over_rec'].max():.0f}× slower "
                 "(dense 6n × 6n NumPy products plus per-call Python overhead).")
        L += ["", f"Log-log slopes: recursive {s['slope_rec']:.2f} over all n, "
              f"{s['slope_rec_tail']:.2f} over the three largest (O(n) is 1); closed form "
              f"{s['slope_cf']:.2f}, {s['slope_cf_tail']:.2f} over the three largest (its dense "
              f"products are O(n³); the fixed per-call overhead of some sixty NumPy calls "
              f"flattens it at small n). {cross}", ""]
    # ---------------------------------------------------------------- startup
    if st:
        L += ["## Startup (Panda, each in a fresh subprocess)", "",
              "Cold: `NUMBA_CACHE_DIR` set to a new empty directory, so every kernel compiles. "
              "Warm: the same directory again, the cache now present (median of "
              f"{st['warm']['runs']} runs). Seconds.", "",
              "| | import (of which numpy + numba) | `load_urdf` | first `inverse_dynamics` | "
              "import + load + first τ | then first `torque_derivatives` k=2 | process wall time |",
              "|---|---|---|---|---|---|---|"]
        for kind in ("cold", "warm"):
            d = st[kind]
            L.append(f"| {kind} | {d['import']:.3f} ({d['import_numpy_numba']:.3f}) | "
                     f"{d['load']:.3f} | {d['first_tau']:.3f} | {d['first_call_total']:.3f} | "
                     f"{d['first_tau2']:.3f} | {d['wall']:.3f} |")
        L += ["", "Kernels compiled with explicit signatures are compiled (cold) or loaded from "
              "the cache (warm) when `mbs_dynamics` is imported; lazily typed ones on their "
              "first call. The process wall time adds the interpreter's own start.", ""]
    # ---------------------------------------------------------------- profile
    prof = res.get("profile")
    if prof:
        L += ["## Where the time goes (Panda, µs per call, median [min–max])", "",
              "*public*: the Robot method; *out=*: the same writing into a given array; *kernel*: "
              "the compiled kernel called directly with the packed model, the workspace and a "
              "preallocated output (what the method does after validating); *dispatch floor*: a "
              "compiled no-op with the same arguments (the cost of crossing into Numba); *anchor*: "
              "Pinocchio.", "",
              "| call | public | out= | kernel | dispatch floor | anchor | kernel − floor "
              "(arithmetic) | public − kernel (Python wrapper) |", "|---|---|---|---|---|---|---|---|"]
        why = []
        for name, stats in prof:
            if isinstance(stats, str):
                L.append(f"| {name} | {stats} | | | | | | |")
                continue
            pub, outp, ker, flo, anc = stats
            L.append(f"| {name} | {pub.fmt()} | {outp.fmt()} | {ker.fmt()} | {flo.fmt()} | "
                     f"{anc.fmt()} | {_g(ker.med - flo.med)} | {_g(pub.med - ker.med)} |")
            if pub.med > anc.med:
                why.append(
                    f"- `{name}`: {pub.med:.2f} µs vs {anc.med:.2f} µs. Crossing into Numba "
                    f"costs {flo.med:.2f} µs before any work, the arithmetic about "
                    f"{ker.med - flo.med:.2f} µs, and the Python wrapper (argument checks, "
                    f"output allocation) {pub.med - ker.med:.2f} µs"
                    + (f"; with `out=` it is {outp.med:.2f} µs" if outp.med < pub.med else "")
                    + ".")
            if outp.med > 1.2 * pub.med:
                why.append(
                    f"- `{name}(..., out=...)`: {outp.med:.2f} µs, {outp.med - pub.med:.2f} µs "
                    "more than without `out`: that call does not take the method's fast path.")
        kern = {name: stats for name, stats in prof if not isinstance(stats, str)}
        for key, pname in (("batch_tau", "inverse_dynamics"),
                           ("batch_tau2", "torque_derivatives k=2")):
            r = panda_rows.get(key)
            if r is None or r.ratio.med <= TARGETS[key] or pname not in kern:
                continue
            ker, flo = kern[pname][2], kern[pname][3]
            need = r.t_anchor.med * TARGETS[key]
            why.append(
                f"- {r.what}: {r.t_ours.med:.3f} µs/sample against {r.t_anchor.med:.3f} µs/sample "
                f"for the Python loop; the target needs ≤ {need:.3f} µs/sample. One sample's "
                f"arithmetic in the single-call kernel is about {ker.med - flo.med:.2f} µs "
                f"(kernel − dispatch floor above), and the batch runs it on up to "
                f"{res.get('numba_threads', '?')} Numba thread(s) with no per-sample dispatch: "
                "the gap is arithmetic per sample and the number of cores, not call overhead.")
        pl = res.get("parallel_launch")
        if pl and pl["stat"].med > 100.0:
            why.append(
                f"- parallel launch: one empty `parallel=True` region costs {pl['stat'].med:.0f} µs "
                f"({pl['layer']} layer, OMP_WAIT_POLICY {pl['wait_policy']}), i.e. "
                f"{pl['stat'].med / args.batch:.2f} µs per sample of an N = {args.batch} batch. "
                "With `OMP_WAIT_POLICY=passive` or `NUMBA_THREADING_LAYER=workqueue` set before "
                "the first parallel call it is a few µs on this machine.")
        if st and st["warm"]["first_call_total"] >= WARM_START_TARGET_S:
            d = st["warm"]
            why.append(
                f"- warm start: {d['first_call_total']:.3f} s, of which importing NumPy and Numba "
                f"takes {d['import_numpy_numba']:.3f} s and importing mbs_dynamics (loading the "
                f"cached kernels) {d['import'] - d['import_numpy_numba']:.3f} s; `load_urdf` "
                f"{d['load']:.3f} s, first call {d['first_tau']:.3f} s.")
        L += [""]
        if why:
            L += ["### Why (where we are slower than the anchor or miss a target)", ""] + why + [""]
    L += ["## What is measured", "",
          "- Pinocchio τ′ route: `computeRNEADerivatives(q, q̇, q̈)` then "
          "τ′ = ∂τ/∂q q̇ + ∂τ/∂q̇ q̈ + M q⃛ (three mat-vecs; τ copied from `data.tau`). "
          "Pinocchio has no τ″; its FD τ″ is (τ′(t+h) − τ′(t−h)) / 2h with h = "
          f"{FD_STEP:g} s, the states at t ± h from the quartic Taylor expansion of "
          "(q, q′, q″, q‴, q⁗): three τ′ routes in all, giving τ, τ′ and τ″.",
          "- Ours: `torque_derivatives(qs)` with qs = (q, q′, q″, q‴, q⁗) returns τ, τ′ and τ″ "
          "together (recursive: one O(n) pass of MATH.md; closed form: seed 004 eq. 28 and 38 "
          "with dense 6n × 6n NumPy matrices).",
          "- Coriolis matrices are not unique; ours (seed 004 eq. 54) and Pinocchio's are compared "
          "through C q̇.",
          "- States: q uniform in the middle 80 % of the joint limits, the derivatives standard "
          "normal; the random generator is seeded (`--seed`).", ""]
    Path(path).write_text("\n".join(L))


# ------------------------------------------------------------------------------------------------
# CLI
# ------------------------------------------------------------------------------------------------
def _pos_int(s):
    v = int(s)
    if v <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {s}")
    return v


def _pos_float(s):
    v = float(s)
    if not v > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {s}")
    return v


def _robots(s):
    names = [x.strip() for x in s.split(",") if x.strip()]
    bad = [x for x in names if x not in ROBOTS]
    if bad or not names:
        raise argparse.ArgumentTypeError(f"robots must be a comma list of {', '.join(ROBOTS)}")
    return ",".join(names)


def _sizes(s):
    try:
        v = [int(x) for x in s.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {s}") from None
    if not v or min(v) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers, got {s}")
    return ",".join(str(x) for x in sorted(set(v)))


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the benchmark options to ``parser`` (used by ``mbs-dynamics bench``)."""
    d = DEFAULTS
    parser.add_argument("--out-dir", default=d["out_dir"],
                        help="where README.md and scaling.png go (default: %(default)s)")
    parser.add_argument("--robots", type=_robots, default=d["robots"],
                        help="comma list of %s (default: all)" % ", ".join(ROBOTS))
    parser.add_argument("--chain-n", type=_pos_int, default=d["chain_n"],
                        help="joints of the generated chain (default: %(default)s)")
    parser.add_argument("--repeat", type=_pos_int, default=d["repeat"],
                        help="timed repeats per call (default: %(default)s)")
    parser.add_argument("--target-time", type=_pos_float, default=d["target_time"],
                        help="seconds per timed loop (default: %(default)s)")
    parser.add_argument("--batch", type=_pos_int, default=d["batch"],
                        help="samples of the batch path (default: %(default)s)")
    parser.add_argument("--batch-repeat", type=_pos_int, default=d["batch_repeat"],
                        help="timed repeats of each batch (default: %(default)s)")
    parser.add_argument("--scaling", type=_sizes, default=d["scaling"],
                        help="chain sizes of the scaling plot (default: %(default)s)")
    parser.add_argument("--skip-scaling", action="store_true", help="no scaling plot")
    parser.add_argument("--skip-startup", action="store_true",
                        help="no cold/warm start subprocesses")
    parser.add_argument("--skip-mujoco", action="store_true", help="no MuJoCo reference rows")
    parser.add_argument("--blas-threads", type=int, default=d["blas_threads"],
                        help="NumPy BLAS threads during the run, 0 = leave as is (default: 1)")
    parser.add_argument("--seed", type=int, default=d["seed"], help="random states (default: 0)")
    parser.add_argument("--json", default=d["json"], help="also write the raw results here")
    return parser


def run(args) -> int:
    """Run the benchmark described by ``args`` (from :func:`add_arguments`); 0 on success."""
    try:
        import pinocchio  # noqa: F401
    except ImportError:
        print("mbs-dynamics bench needs Pinocchio: pip install pin example-robot-data",
              file=sys.stderr)
        return 2
    t_start = time.perf_counter()
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)

    def log(msg):
        print(msg, flush=True)

    facts = machine_facts()
    facts["NumPy BLAS"] = blas_threads(args.blas_threads)
    log("machine: " + "; ".join(f"{k}: {v}" for k, v in facts.items()))
    import numba
    res = {"facts": facts, "command": command_line(args), "single": {}, "batch": {}, "cases": {},
           "numba_threads": numba.get_num_threads()}
    profile_case = None
    for name in args.robots.split(","):
        log(f"{name}: loading")
        case = make_case(name, args)
        res["cases"][name] = {"label": case.label, "n": case.robot.n, "source": case.source,
                              "mj_note": case.mj_note, "sym": case.sym}
        res["single"][name] = bench_single(case, args, log)
        res["batch"][name] = bench_batch(case, args, log)
        if name == "panda":
            profile_case = case
    if res["batch"]:
        res["parallel_launch"] = bench_parallel_launch(args, log)
    if profile_case is not None:
        res["profile"] = bench_profile(profile_case, args, log)
    if not args.skip_scaling:
        sc = bench_scaling(args, log)
        res["scaling"] = sc
        res["scaling_summary"] = scaling_summary(sc)
        plot_scaling(sc, res["scaling_summary"], out_dir / "scaling.png")
    if not args.skip_startup:
        res["startup"] = bench_startup(args, log)
    res["load_end"] = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    res["elapsed"] = time.perf_counter() - t_start
    write_report(out_dir / "README.md", res, args)
    if args.json:
        Path(args.json).write_text(json.dumps(_jsonable(res), indent=1))
    log(f"wrote {out_dir / 'README.md'} in {res['elapsed']:.0f} s")
    return 0


def _jsonable(x):
    if isinstance(x, (Row,)):
        return x.to_dict()
    if isinstance(x, Stat):
        return x.to_dict()
    if isinstance(x, dict):
        return {k: _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, (np.floating, np.integer)):
        return x.item()
    return x


def get_argument_parser() -> argparse.ArgumentParser:
    return add_arguments(argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                                 prog="run_benchmark.py"))


def main(argv=None) -> int:
    """Entry point: ``python3 bench/run_benchmark.py [options]``."""
    return run(get_argument_parser().parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
