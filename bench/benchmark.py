"""Side-by-side speed benchmark of mbs_dynamics against Pinocchio, dynibo and MuJoCo (issue 10).

Not part of the installed package: it lives in the repository's ``bench/`` and imports
``mbs_dynamics`` from the checkout (``bench/run_benchmark.py`` puts the checkout first on
``sys.path``). Only the public API of ``mbs_dynamics`` is used, so the same script measures the
package whatever its kernels are built with.

Everything is measured in one process, interleaved: in each repeat our call and every anchor's
call are timed back to back, round-robin (the starting call rotates between repeats), so the ratio
ours/anchor of that repeat sees the same machine load. Tables give medians with [min–max] over the
repeats. Writes ``README.md`` (tables, the command that reproduces them, machine facts) and
``scaling.png`` into ``--out-dir``.

Robots: a Panda (fingers locked), a UR5, an ``n``-joint generated chain (:func:`chain_urdf`) and
Baxter (a fixed-base tree, its gripper fingers locked), all from example-robot-data, with gravity
(0, 0, −9.80665) m/s² for every library (dynibo's fixed standard gravity).

Anchors: ``pin.rnea``, ``pin.crba``, ``pin.computeCoriolisMatrix``,
``pin.computeGeneralizedGravity``, ``pin.aba``; Pinocchio's τ′ route (``computeRNEADerivatives``
then τ′ = ∂τ/∂q q̇ + ∂τ/∂q̇ q̈ + M q⃛, the chain rule of MATH.md) and its finite-difference τ″;
dynibo's ``inverse_dynamics``, ``gravity``, ``mass_matrix``, ``forward_dynamics`` (checked against
Pinocchio first, or left out with the reason); ``mujoco.mj_inverse`` for reference.

Run ``python3 bench/run_benchmark.py`` (``--quick`` for a smoke run, ``--startup`` adds the
fresh-install start-up, ``--help`` lists the options).
"""
from __future__ import annotations

import argparse
import cProfile
import json
import math
import os
import platform
import pstats
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import timeit
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
ROBOTS = ("panda", "ur5", "chain", "baxter")
PANDA_LOCKED = {"panda_finger_joint1": 0.0, "panda_finger_joint2": 0.0}
BAXTER_LOCKED = {"l_gripper_l_finger_joint": 0.0, "l_gripper_r_finger_joint": 0.0,
                 "r_gripper_l_finger_joint": 0.0, "r_gripper_r_finger_joint": 0.0}
ERD = {"panda": ("panda_description/urdf/panda.urdf", PANDA_LOCKED),
       "ur5": ("ur_description/urdf/ur5_robot.urdf", {}),
       "baxter": ("baxter_description/urdf/baxter.urdf", BAXTER_LOCKED)}
G0 = 9.80665  # [m/s²] standard gravity: dynibo's fixed value, used for every library here

# Issue 10 targets, 7-DOF Panda, as upper bounds on the time ratio ours/anchor
TARGETS = {
    "tau_dynibo": ("τ: `inverse_dynamics` / dynibo `inverse_dynamics`", 0.9),
    "g_dynibo": ("g: `gravity_torques` / dynibo `gravity`", 0.9),
    "M_best": ("M: `mass_matrix` / the faster of `pin.crba` and dynibo `mass_matrix`", 0.9),
    "aba_pin": ("ABA: `forward_dynamics` / `pin.aba`", 0.9),
    "C_pin": ("C̄: `coriolis_matrix` / `pin.computeCoriolisMatrix`", 1.0),
    "tau2_route": ("τ, τ′, τ″: `torque_derivatives` k=2 / Pinocchio's τ′ route", 0.3),
    "batch_tau": ("batch τ over N samples / Python loop over `pin.rnea` (time ratio)", 0.1),
    "batch_tau2": ("batch τ, τ′, τ″ over N samples / Python loop over Pinocchio's τ′ route "
                   "(time ratio)", 0.1),
}
STARTUP_TARGET_S = 1.0
FD_STEP = 1e-5  # [s] step of the finite-difference τ″ (error O(h²), ≈ 1e-9 relative here)
PUBLIC_METHODS = ("inverse_dynamics", "mass_matrix", "coriolis_matrix", "gravity_torques",
                  "mass_matrix_derivative", "torque_derivatives", "forward_dynamics")

DEFAULTS = dict(out_dir=str(HERE), robots=",".join(ROBOTS), chain_n=30, repeat=11,
                target_time=0.02, batch=10_000, batch_repeat=5, scaling="6,12,24,48,96",
                enrich_duration=10.0, seed=0, blas_threads=1)
QUICK = dict(robots="panda,chain", chain_n=4, repeat=2, target_time=1e-4, batch=20,
             batch_repeat=1, scaling="2,3", enrich_duration=0.05, blas_threads=0)


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


def pin_model(xml: str, locked: dict, g: float = G0):
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
    m.gravity.linear = np.array([0.0, 0.0, -g])
    return m


def locked_urdf_text(xml: str, locked: dict) -> str:
    """The URDF with every locked joint (at 0) turned ``fixed`` and its mimic tag removed: the
    form dynibo and MuJoCo load (neither has a locked-joint option; dynibo rejects mimic)."""
    root = ET.fromstring(xml.encode() if isinstance(xml, str) else xml)
    for j in root.findall("joint"):
        if j.get("name") in locked:
            if locked[j.get("name")] != 0.0:
                raise ValueError("only joints locked at 0 can be made fixed")
            j.set("type", "fixed")
            for c in list(j):
                if c.tag in ("mimic", "axis", "limit", "dynamics", "safety_controller",
                             "calibration"):
                    j.remove(c)
    return ET.tostring(root, encoding="unicode")


def mujoco_model(xml: str, locked: dict):
    """MuJoCo model of the URDF with ``<visual>``/``<collision>`` stripped (no meshes needed) and
    the locked joints (all at 0 here) made fixed. Returns (model, note)."""
    import mujoco
    root = ET.fromstring(locked_urdf_text(xml, locked))
    for e in list(root):
        if e.tag not in ("link", "joint"):
            root.remove(e)  # transmissions, gazebo, materials: MuJoCo does not need them
    for link in root.iter("link"):
        for tag in ("visual", "collision"):
            for e in link.findall(tag):
                link.remove(e)
    text = ET.tostring(root, encoding="unicode")
    try:
        m, note = mujoco.MjModel.from_xml_string(text), ""
    except ValueError as e:  # e.g. massless moving bodies: bound them and say so
        ext = ET.SubElement(root, "mujoco")
        ET.SubElement(ext, "compiler", boundmass="1e-6", boundinertia="1e-9")
        m = mujoco.MjModel.from_xml_string(ET.tostring(root, encoding="unicode"))
        note = f"loaded with boundmass/boundinertia after: {_first_line(e)}"
    m.opt.gravity[:] = (0.0, 0.0, -G0)
    return m, note


def _first_line(e):
    return (str(e).strip().splitlines() or [""])[0]


@dataclass
class DyniboTwin:
    """dynibo's robot of the same URDF and the map between its joint order and ours."""
    robot: object
    perm: np.ndarray   # dynibo joint k is our joint perm[k]
    inv: np.ndarray    # our joint i is dynibo joint inv[i]
    check: dict        # max |dynibo − Pinocchio| per quantity on the benchmark state
    order: str = ""    # which joint order matched


def dynibo_twin(xml: str, locked: dict, pm, qs):
    """Load the URDF in dynibo and check it against Pinocchio before it is timed.

    dynibo exposes no joint names: the candidate joint orders of :func:`urdf_joint_orders` are
    tried, and the first in which τ, g, M and q̈ agree with Pinocchio to 1e-9 relative is used.
    Returns (twin or None, note)."""
    try:
        import dynibo
    except ImportError:
        return None, "dynibo is not installed (pip install dynibo)"
    import pinocchio as pin
    try:
        text = locked_urdf_text(xml, locked)
    except ValueError as e:
        return None, str(e)
    with tempfile.NamedTemporaryFile("w", suffix=".urdf", delete=False) as f:
        f.write(text)
    try:
        robot = dynibo.Robot.from_urdf(f.name)
    except Exception as e:  # noqa: BLE001 - a peer that cannot load the robot is reported
        return None, f"dynibo does not load it ({type(e).__name__}: {_first_line(e)})"
    finally:
        os.unlink(f.name)
    names = list(pm.names[1:])
    if robot.joint_count != len(names):
        return None, f"dynibo has {robot.joint_count} joints, Pinocchio {len(names)}"
    q, qd, qdd = qs[0], qs[1], qs[2]
    pd = pm.createData()
    tau = pin.rnea(pm, pd, q, qd, qdd).copy()
    M = pin.crba(pm, pd, q).copy()
    M = np.triu(M) + np.triu(M, 1).T
    ref = {"τ": tau, "g": pin.computeGeneralizedGravity(pm, pd, q).copy(), "M": M,
           "q̈ (ABA)": pin.aba(pm, pd, q, qd, tau).copy()}
    n = len(names)
    tried = []
    for how, order in urdf_joint_orders(text):
        if sorted(order) != sorted(names):
            continue
        perm = np.array([names.index(x) for x in order])
        inv = np.argsort(perm)
        got = {"τ": robot.inverse_dynamics(q[perm], qd[perm], qdd[perm])[inv],
               "g": robot.gravity(q[perm])[inv],
               "M": np.asarray(robot.mass_matrix(q[perm])).reshape(n, n, order="F")[
                   np.ix_(inv, inv)],
               "q̈ (ABA)": robot.forward_dynamics(q[perm], qd[perm], tau[perm])[inv]}
        check = {k: _maxdiff(got[k], ref[k]) for k in ref}
        bad = [k for k in ref if not check[k] <= 1e-9 * max(1.0, float(np.abs(ref[k]).max()))]
        if not bad:
            return DyniboTwin(robot, perm, inv, check, how), ""
        tried.append(f"{how}: " + ", ".join(f"{k} by {check[k]:.1e}" for k in bad))
    return None, ("dynibo disagrees with Pinocchio in every joint order tried (" + "; ".join(tried)
                  + "): left out, a wrong peer is no peer")


def urdf_joint_orders(text: str):
    """Candidate orders of the movable joints of a URDF: document order, breadth-first and
    depth-first from the root link (children in document order). Yields (name, list)."""
    root = ET.fromstring(text)
    joints = [j for j in root.findall("joint")]
    movable = {j.get("name") for j in joints if j.get("type") not in ("fixed", None)}
    children = {}
    childs = set()
    for j in joints:
        p, c = j.find("parent"), j.find("child")
        if p is None or c is None:
            continue
        children.setdefault(p.get("link"), []).append((j.get("name"), c.get("link")))
        childs.add(c.get("link"))
    roots = [lk.get("name") for lk in root.findall("link") if lk.get("name") not in childs]
    yield "URDF document order", [j.get("name") for j in joints if j.get("name") in movable]
    bfs, frontier = [], list(roots)
    while frontier:
        nxt = []
        for link in frontier:
            for jn, c in children.get(link, []):
                if jn in movable:
                    bfs.append(jn)
                nxt.append(c)
        frontier = nxt
    yield "breadth-first from the root link", bfs
    dfs = []

    def visit(link):
        for jn, c in children.get(link, []):
            if jn in movable:
                dfs.append(jn)
            visit(c)

    for r in roots:
        visit(r)
    yield "depth-first from the root link", dfs


@dataclass
class Case:
    """One robot: our Robot, Pinocchio's, dynibo's and MuJoCo's twins, and a random state."""
    name: str
    label: str
    robot: object
    pm: object
    pd: object
    xml: str = ""
    locked: dict = None
    mj: tuple = None  # (model, data, qpos index, dof index) or None
    mj_note: str = ""
    dy: DyniboTwin = None
    dy_note: str = ""
    qs: np.ndarray = None  # (5, n): q, q′, q″, q‴, q⁗
    sym: bool = False      # Pinocchio's crba left the lower triangle of M empty
    source: str = ""       # where the URDF came from


def robot_xml(name: str, args):
    """(URDF text, locked joints, label, source) of one benchmark robot."""
    if name == "chain":
        return (chain_urdf(args.chain_n, args.seed), {}, f"chain{args.chain_n}",
                "generated by bench/benchmark.py chain_urdf")
    rel, locked = ERD[name]
    return ((erd_root() / rel).read_text(), locked,
            {"panda": "Panda", "ur5": "UR5", "baxter": "Baxter"}[name],
            f"example-robot-data/{rel}")


def make_case(name: str, args) -> Case:
    """Build a :class:`Case` (our Robot from the same URDF text the peers get)."""
    import mbs_dynamics as mbs
    import pinocchio as pin
    xml, locked, label, src = robot_xml(name, args)
    robot = mbs.load_urdf(xml, locked_joints=locked or None, gravity=(0.0, 0.0, -G0))
    pm = pin_model(xml, locked)
    if pm.nq != robot.n or pm.nv != robot.n:
        raise RuntimeError(f"{label}: Pinocchio has nq={pm.nq}, nv={pm.nv}, we have n={robot.n}")
    if list(pm.names[1:]) != list(robot.joint_names):
        raise RuntimeError(f"{label}: joint order differs from Pinocchio's")
    case = Case(name, label, robot, pm, pm.createData(), xml=xml, locked=locked, source=src)
    rng = np.random.default_rng(args.seed + 1)
    n = robot.n
    lo = np.where(np.isfinite(robot.lower), robot.lower, -math.pi)
    hi = np.where(np.isfinite(robot.upper), robot.upper, math.pi)
    mid, half = 0.5 * (lo + hi), 0.4 * (hi - lo)  # inside the limits (MuJoCo adds limit forces)
    qs = rng.standard_normal((5, n))
    qs[0] = mid + half * rng.uniform(-1.0, 1.0, n)
    case.qs = qs
    M = pin.crba(pm, pm.createData(), qs[0])
    case.sym = not np.allclose(M, M.T)
    case.dy, case.dy_note = dynibo_twin(xml, locked, pm, qs)
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
    """Closures ``taud(q, qd, qdd, qddd) -> (τ, τ′)`` and ``tau2(qs) -> (τ, τ′, τ″)`` of Pinocchio.

    τ′ = ∂τ/∂q q̇ + ∂τ/∂q̇ q̈ + M q⃛ from ``computeRNEADerivatives`` (three mat-vecs; M
    symmetrised first where Pinocchio leaves its lower triangle empty)."""
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
    return measure_group([stmt], ns, repeat, target)[0]


def measure_group(stmts, ns, repeat, target):
    """µs per execution of each statement, timed round-robin (the starting statement rotates
    between repeats) so that all of them see the same machine load. A list of :class:`Stat`
    whose ``values[r]`` all come from repeat ``r``."""
    timers = [timeit.Timer(s, globals=ns) for s in stmts]
    for t in timers:
        t.timeit(1)
    numbers = [_calibrate(t, target) for t in timers]
    k = len(stmts)
    vals = [[0.0] * repeat for _ in stmts]
    for r in range(repeat):
        for j in range(k):
            i = (r + j) % k
            vals[i][r] = timers[i].timeit(numbers[i]) / numbers[i] * 1e6
    return [Stat(v) for v in vals]


def ratio_stat(a: Stat, b: Stat) -> Stat:
    """Per-repeat ratio a/b of two Stats from the same :func:`measure_group`."""
    return Stat([x / y for x, y in zip(a.values, b.values)])


def min_stat(*stats: Stat) -> Stat:
    """Per-repeat minimum of Stats from the same :func:`measure_group` (the faster anchor)."""
    return Stat([min(v) for v in zip(*(s.values for s in stats))])


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
def compare(rows, ns, args, label, what, ours, anchors, best=None, log=print, number_one=False):
    """Time ``ours`` and every anchor round-robin; append one :class:`Row` per anchor.

    Args:
        rows: list the rows are appended to.
        ns: namespace of the statements.
        what: the quantity (first column).
        ours: (label, statement).
        anchors: list of dicts with ``label``, ``stmt``, ``err`` and optional ``key``.
        best: optional (label, key): one more row against the faster anchor of each repeat.
        number_one: one execution per timing (batches), ``args.batch_repeat`` repeats.
    """
    t0 = time.perf_counter()
    stmts = [ours[1]] + [a["stmt"] for a in anchors]
    if number_one:
        stats = measure_group(stmts, ns, args.batch_repeat, 1e-12)
    else:
        stats = measure_group(stmts, ns, args.repeat, args.target_time)
    so, sa = stats[0], stats[1:]
    out = []
    for a, s in zip(anchors, sa):
        out.append(Row(what, ours[0], a["label"], so, s, ratio_stat(so, s),
                       err=a.get("err", math.nan),
                       key=a.get("key", "")))
    if best is not None and len(sa) > 1:
        sb = min_stat(*sa)
        out.append(Row(what, ours[0], best[0], so, sb, ratio_stat(so, sb),
                       err=max([a["err"] for a in anchors if math.isfinite(a.get("err", math.nan))]
                               or [math.nan]), key=best[1]))
    rows += out
    log(f"  {label:8s} {what:30s} ours {so.med:9.3f} µs  " + "  ".join(
        f"{r.anchor[:24]}: {r.t_anchor.med:.3f} ({r.ratio.med:.3f})" for r in out)
        + f"  [{time.perf_counter() - t0:.1f} s]")
    return out


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


def batch_states(case: Case, N: int, seed: int) -> np.ndarray:
    """(N, 5, n) random states around the benchmark state."""
    rng = np.random.default_rng(seed + 2)
    QS = rng.standard_normal((N, 5, case.robot.n))
    QS[:, 0] = case.qs[0] + 0.3 * rng.standard_normal((N, case.robot.n))
    return QS


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
    tgt = case.name == "panda"
    pin_loop()
    tau_b = r.inverse_dynamics(Q, QD, QDD)
    an = [dict(label="Python loop over `pin.rnea`", stmt="pin_loop()",
               err=_maxdiff(tau_b, OUT), key="batch_tau" if tgt else "")]
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
                         stmt="pin_loop_taud()", key="batch_tau2" if tgt else "",
                         err=max(_maxdiff(td[:, 0], OUT), _maxdiff(td[:, 1], OUT1)))],
                   log=log, number_one=True)
    for row in rows:  # per-sample µs, so the columns read like the single-call tables
        row.unit = "µs/sample"
    for s in {id(x): x for row in rows for x in (row.t_ours, row.t_anchor)}.values():
        s.values = [v / N for v in s.values]
    return rows


def _noop3(a, b, c):
    return None


def bench_profile(case: Case, args, log) -> dict:
    """Where the time of the Panda's calls goes, through the public API only.

    * single calls: the public method, the same with ``out=``, a pure-Python no-op with the same
      arguments (the interpreter's call floor), ``np.empty(n)`` (the allocation a method without
      ``out=`` makes), and a cProfile of the public call (functions by own time);
    * batches: one call over N ∈ {1, 10, …} samples, fitted as fixed cost + N × per-sample cost;
    * inputs: the cost of inputs that are not C-contiguous float64 arrays.
    """
    r, n = case.robot, case.robot.n
    q, qd, qdd, qddd, _ = case.qs
    tau = r.inverse_dynamics(q, qd, qdd)
    ns = dict(r=r, q=q, qd=qd, qdd=qdd, qs=case.qs, tau=tau, o1=np.empty(n), oM=np.empty((n, n)),
              o3=np.empty((3, n)), np=np, n=n, noop3=_noop3)
    specs = {  # name: (public, out=, profiled callable)
        "inverse_dynamics": ("r.inverse_dynamics(q, qd, qdd)",
                             "r.inverse_dynamics(q, qd, qdd, out=o1)",
                             lambda: r.inverse_dynamics(q, qd, qdd)),
        "gravity_torques": ("r.gravity_torques(q)", "r.gravity_torques(q, out=o1)",
                            lambda: r.gravity_torques(q)),
        "mass_matrix": ("r.mass_matrix(q)", "r.mass_matrix(q, out=oM)", lambda: r.mass_matrix(q)),
        "coriolis_matrix": ("r.coriolis_matrix(q, qd)", "r.coriolis_matrix(q, qd, out=oM)",
                            lambda: r.coriolis_matrix(q, qd)),
        "forward_dynamics": ("r.forward_dynamics(q, qd, tau)",
                             "r.forward_dynamics(q, qd, tau, out=o1)",
                             lambda: r.forward_dynamics(q, qd, tau)),
        "torque_derivatives k=2": ("r.torque_derivatives(qs)", "r.torque_derivatives(qs, out=o3)",
                                   lambda: r.torque_derivatives(case.qs)),
    }
    ns["qs"] = case.qs
    floors = measure_group(["noop3(q, qd, qdd)", "np.empty(n)"], ns, args.repeat,
                           args.target_time)
    out = {"floors": {"python no-op call, 3 arguments": floors[0], "np.empty(n)": floors[1]},
           "calls": {}, "profiles": {}, "batch": {}, "inputs": []}
    for name, (pub, witho, fn) in specs.items():
        try:
            st = measure_group([pub, witho], ns, args.repeat, args.target_time)
        except Exception as e:  # noqa: BLE001 - a public call that fails is reported
            out["calls"][name] = f"failed: {type(e).__name__}: {_first_line(e)}"
            continue
        out["calls"][name] = st
        out["profiles"][name] = cprofile_top(fn, 2000 if args.repeat < 5 else 20000)
        log(f"  profile {name:24s} public {st[0].med:7.3f} µs  out= {st[1].med:7.3f} µs")
    # batches: time of one call vs N
    QS_all = batch_states(case, max(args.batch, 1), args.seed)
    sizes = sorted({s for s in (1, 10, 100, 1000, 10_000) if s <= args.batch} | {args.batch})
    for name, mk, fn in (
            ("inverse_dynamics", lambda QS: tuple(np.ascontiguousarray(QS[:, i]) for i in range(3)),
             lambda a: r.inverse_dynamics(*a)),
            ("torque_derivatives k=2", lambda QS: (np.ascontiguousarray(QS),),
             lambda a: r.torque_derivatives(*a))):
        pts = []
        for N in sizes:
            a = mk(QS_all[:N])
            ns2 = {"fn": fn, "a": a}
            st = measure("fn(a)", ns2, args.repeat, args.target_time)
            pts.append((N, st))
        # two-point fit through the smallest and the largest N (the largest fixes the slope)
        (n0, s0), (n1, s1) = pts[0], pts[-1]
        slope = (s1.med - s0.med) / (n1 - n0) if n1 > n0 else s0.med / n0
        icept = s0.med - slope * n0
        out["batch"][name] = {"points": pts, "per_sample": float(slope), "fixed": float(icept)}
        log(f"  profile batch {name:24s} fixed {icept:8.2f} µs + {slope:.3f} µs/sample")
    # inputs
    X = np.ascontiguousarray(np.stack([q, qd, qdd], axis=1))  # columns are strided views
    ro = [np.array(x) for x in (q, qd, qdd)]
    for a in ro:
        a.setflags(write=False)
    kinds = [("C-contiguous float64 (reference)", (q, qd, qdd)),
             ("read-only float64", tuple(ro)),
             ("strided views (columns of an (n, 3) array)", (X[:, 0], X[:, 1], X[:, 2])),
             ("Python lists", (q.tolist(), qd.tolist(), qdd.tolist())),
             ("float32", tuple(x.astype(np.float32) for x in (q, qd, qdd))),
             ("int64", tuple(np.round(x).astype(np.int64) for x in (q, qd, qdd)))]
    ref = None
    for label, a in kinds:
        ns3 = {"r": r, "a": a}
        try:
            res = r.inverse_dynamics(*a)
            if not np.all(np.isfinite(res)):
                raise ValueError("non-finite result")
            st = measure("r.inverse_dynamics(*a)", ns3, args.repeat, args.target_time)
        except Exception as e:  # noqa: BLE001 - the error is the finding
            out["inputs"].append((label, f"{type(e).__name__}: {_first_line(e)[:90]}"))
            continue
        ref = st if ref is None else ref
        out["inputs"].append((label, st))
    N = min(100, args.batch)
    QSb = QS_all[:N]
    C = [np.ascontiguousarray(QSb[:, i]) for i in range(3)]
    F = [np.asfortranarray(np.ascontiguousarray(QSb[:, i])) for i in range(3)]
    for label, a in ((f"batch (N = {N}, n) C order", C), (f"batch (N = {N}, n) Fortran order", F)):
        ns3 = {"r": r, "a": a}
        try:
            st = measure("r.inverse_dynamics(*a)", ns3, args.repeat, args.target_time)
            out["inputs"].append((label, st))
        except Exception as e:  # noqa: BLE001
            out["inputs"].append((label, f"{type(e).__name__}: {_first_line(e)[:90]}"))
    return out


def cprofile_top(fn, calls, top=6):
    """cProfile of ``calls`` calls of ``fn``: the top functions by own time, µs per outer call.

    The profiler adds its own cost to every Python-level call it sees, so the shares matter more
    than the absolute numbers. Compiled code appears only where it is a builtin call."""
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(calls):
        fn()
    pr.disable()
    st = pstats.Stats(pr)
    rows = []
    total = sum(v[2] for v in st.stats.values())
    for (file, line, func), (cc, nc, tt, ct, _) in st.stats.items():
        if func == "<lambda>" or "disable" in func:
            continue
        where = f"{Path(file).name}:{line} {func}" if file != "~" else func
        rows.append((tt / calls * 1e6, nc / calls, where))
    rows.sort(reverse=True)
    return {"total_us": total / calls * 1e6, "rows": rows[:top]}


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
    for key, lab, st in (("recursive", "ours, recursive (O(n), MATH.md)", "o-"),
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


# ------------------------------------------------------------------------------------------------
# Start-up from a fresh install (issue 10 item 5)
# ------------------------------------------------------------------------------------------------
_STARTUP_CHILD = r'''
import json, sys, time
t0 = time.perf_counter()
lib, urdf, locked_urdf, locked = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
out = {"steps": []}
def step(name, fn):
    t = time.perf_counter()
    r = fn()
    out["steps"].append((name, time.perf_counter() - t))
    return r
np = step("import numpy", lambda: __import__("numpy"))
if lib == "mbs_dynamics":
    mbs = step("import mbs_dynamics", lambda: __import__("mbs_dynamics"))
    r = step("load_urdf", lambda: mbs.load_urdf(urdf, locked_joints=locked or None))
    x = np.full(r.n, 0.1)
    step("inverse_dynamics", lambda: r.inverse_dynamics(x, x, x))
    step("mass_matrix", lambda: r.mass_matrix(x))
    step("coriolis_matrix", lambda: r.coriolis_matrix(x, x))
    step("gravity_torques", lambda: r.gravity_torques(x))
    step("mass_matrix_derivative", lambda: r.mass_matrix_derivative(x, x))
    step("torque_derivatives", lambda: r.torque_derivatives(np.full((5, r.n), 0.1)))
    step("forward_dynamics", lambda: r.forward_dynamics(x, x, x))
    out["total"] = time.perf_counter() - t0
    X = np.full((4, r.n), 0.1)
    step("batch inverse_dynamics (4, n)", lambda: r.inverse_dynamics(X, X, X))
    X5 = np.full((4, 5, r.n), 0.1)
    step("batch torque_derivatives (4, 5, n)", lambda: r.torque_derivatives(X5))
    out["file"] = mbs.__file__
    out["version"] = getattr(mbs, "__version__", "?")
elif lib == "pinocchio":
    pin = step("import pinocchio", lambda: __import__("pinocchio"))
    def load():
        m = pin.buildModelFromUrdf(urdf)
        if locked:
            m = pin.buildReducedModel(m, [m.getJointId(k) for k in locked], pin.neutral(m))
        return m, m.createData()
    m, d = step("buildModelFromUrdf + buildReducedModel + createData", load)
    x = np.full(m.nv, 0.1)
    step("rnea", lambda: pin.rnea(m, d, x, x, x))
    step("crba", lambda: pin.crba(m, d, x))
    step("computeCoriolisMatrix", lambda: pin.computeCoriolisMatrix(m, d, x, x))
    step("computeGeneralizedGravity", lambda: pin.computeGeneralizedGravity(m, d, x))
    step("computeRNEADerivatives", lambda: pin.computeRNEADerivatives(m, d, x, x, x))
    step("aba", lambda: pin.aba(m, d, x, x, x))
    out["total"] = time.perf_counter() - t0
    out["file"], out["version"] = pin.__file__, pin.__version__
else:
    dynibo = step("import dynibo", lambda: __import__("dynibo"))
    r = step("Robot.from_urdf", lambda: dynibo.Robot.from_urdf(locked_urdf))
    x = np.full(r.joint_count, 0.1)
    step("inverse_dynamics", lambda: r.inverse_dynamics(x, x, x))
    step("mass_matrix", lambda: r.mass_matrix(x))
    step("gravity", lambda: r.gravity(x))
    step("forward_dynamics", lambda: r.forward_dynamics(x, x, x))
    out["total"] = time.perf_counter() - t0
    out["file"], out["version"] = dynibo.__file__, dynibo.__version__
print(json.dumps(out))
'''


def _source_files(repo: Path) -> list:
    """The checkout's files as git sees them (tracked + untracked, not ignored), else all files
    outside .git/build/egg-info/caches."""
    try:
        p = subprocess.run(["git", "-C", str(repo), "ls-files", "-co", "--exclude-standard", "-z"],
                           capture_output=True, timeout=60)
        if p.returncode == 0 and p.stdout:
            return [f for f in p.stdout.decode().split("\0") if f and (repo / f).is_file()]
    except (OSError, subprocess.SubprocessError):
        pass
    skip = {".git", "build", "__pycache__", ".pytest_cache", ".hypothesis"}
    return [str(p.relative_to(repo)) for p in repo.rglob("*")
            if p.is_file() and not (set(p.relative_to(repo).parts) & skip)
            and not any(x.endswith(".egg-info") for x in p.parts)]


def _run(cmd, log, what, timeout=1800, **kw):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    dt = time.perf_counter() - t0
    log(f"  startup: {what}: {dt:.1f} s (exit {p.returncode})")
    return p, dt


def bench_startup(args, log) -> dict:
    """Fresh virtual environment → pip install (peers, then this checkout) → for each library a
    fresh process: import + load the Panda + first call of every public method. Twice each: the
    first process after the install (cold) and a second one (warm). Public API only."""
    tmp = Path(tempfile.mkdtemp(prefix="mbs_startup_"))
    out = {"ok": False, "notes": []}
    try:
        venv = tmp / "venv"
        py = venv / "bin" / "python"
        p, out["t_venv"] = _run([sys.executable, "-m", "venv", str(venv)], log, "python -m venv")
        if p.returncode:
            out["notes"].append(f"python -m venv failed: {p.stderr.strip()[-400:]}")
            return out
        peers = ["pin", "dynibo"]
        p, out["t_pip_peers"] = _run([str(py), "-m", "pip", "install", "--quiet", *peers], log,
                                     "pip install " + " ".join(peers))
        if p.returncode:
            out["notes"].append(f"pip install of the peers failed: {p.stderr.strip()[-400:]}")
            peers = []
        out["peers"] = peers
        src = tmp / "src"
        for f in _source_files(REPO):
            (src / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / f, src / f)
        cmd = [str(py), "-m", "pip", "install", "--quiet", str(src)]
        p, out["t_pip_ours"] = _run(cmd, log, "pip install <checkout copy>")
        out["pip_cmd"] = "pip install ."
        if p.returncode:
            out["notes"].append("pip install with build isolation failed "
                                f"({_first_line(p.stderr.strip()[-300:])}); retried with "
                                "--no-build-isolation")
            _run([str(py), "-m", "pip", "install", "--quiet", "setuptools", "wheel", "cython",
                  "numpy"], log, "pip install build requirements")
            p, t2 = _run(cmd[:4] + ["--no-build-isolation"] + cmd[4:], log,
                         "pip install --no-build-isolation <checkout copy>")
            out["t_pip_ours"] += t2
            out["pip_cmd"] = "pip install --no-build-isolation ."
            if p.returncode:
                out["notes"].append(f"pip install failed: {p.stderr.strip()[-600:]}")
                return out
        urdf = str(erd_root() / ERD["panda"][0])
        locked_file = tmp / "panda_locked.urdf"
        locked_file.write_text(locked_urdf_text(Path(urdf).read_text(), PANDA_LOCKED))
        # a new user's environment: nothing that points imports or JIT caches elsewhere
        env = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")
               and not k.endswith("_CACHE_DIR")}
        child = tmp / "startup_child.py"
        child.write_text(_STARTUP_CHILD)
        runs = {}
        for lib in ["mbs_dynamics"] + (["pinocchio", "dynibo"] if peers else []):
            runs[lib] = {}
            for kind in ("cold", "warm"):
                t0 = time.perf_counter()
                p = subprocess.run([str(py), str(child), lib, urdf, str(locked_file),
                                    json.dumps(PANDA_LOCKED)], capture_output=True, text=True,
                                   timeout=900, cwd=str(tmp), env=env)
                wall = time.perf_counter() - t0
                if p.returncode:
                    out["notes"].append(f"{lib} {kind} start failed: {p.stderr.strip()[-600:]}")
                    break
                d = json.loads(p.stdout.strip().splitlines()[-1])
                d["wall"] = wall
                runs[lib][kind] = d
                log(f"  startup {lib:12s} {kind}: in-process {d['total']:.3f} s, process wall "
                    f"{wall:.3f} s")
        out["runs"] = runs
        ours = runs.get("mbs_dynamics", {})
        site = Path(ours.get("cold", {}).get("file", "")).parent
        out["compiled_modules"] = sorted(str(x.relative_to(site)) for x in site.rglob("*.so")) \
            if site.is_dir() else []
        if ours.get("cold") and not str(site).startswith(str(venv)):
            out["notes"].append(f"mbs_dynamics was imported from {site}, not from the fresh venv")
        out["ok"] = "cold" in ours
        return out
    finally:
        if args.keep_venv:
            out["notes"].append(f"venv kept at {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


# ------------------------------------------------------------------------------------------------
# Machine facts
# ------------------------------------------------------------------------------------------------
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


def machine_facts() -> dict:
    """CPU, cores, load, versions and thread settings that shape the numbers."""
    import mbs_dynamics
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
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else "?"
    facts["cores (os.cpu_count / usable by this process)"] = f"{os.cpu_count()} / {usable}"
    try:
        facts["load average at start (1, 5, 15 min)"] = ", ".join(
            f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        pass
    facts["OS"] = f"{platform.system()} {platform.release()}"
    facts["Python"] = platform.python_version()
    facts["numpy"] = np.__version__
    for mod in ("pinocchio", "dynibo", "mujoco"):
        try:
            facts[mod] = __import__(mod).__version__
        except Exception:  # noqa: BLE001
            facts[mod] = "not installed"
    pkg = Path(mbs_dynamics.__file__).parent
    so = sorted(x.name for x in pkg.rglob("*.so"))
    facts["mbs_dynamics"] = (f"{mbs_dynamics.__version__} from `{_short_path(pkg)}`; "
                             f"{len(so)} compiled extension module(s)")
    envs = {k: v for k, v in os.environ.items()
            if k.startswith(("OPENBLAS", "OMP_", "MKL_", "BLIS_", "GOMP_", "KMP_"))}
    facts["thread env (OMP_*, OPENBLAS_*, …)"] = (
        ", ".join(f"{k}={v}" for k, v in sorted(envs.items())) or "none set")
    try:
        head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--",
                                "mbs_dynamics", "setup.py", "pyproject.toml"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        if head:
            facts["git commit"] = head + (" (the measured code has uncommitted changes)"
                                          if dirty else "")
    except (OSError, subprocess.SubprocessError):
        pass
    facts["date (UTC)"] = time.strftime("%Y-%m-%d %H:%M", time.gmtime())
    return facts


def _short_path(p: Path) -> str:
    try:
        return str(Path(p).resolve().relative_to(REPO)) + " (this checkout)"
    except ValueError:
        return str(p)


# ------------------------------------------------------------------------------------------------
# Report
# ------------------------------------------------------------------------------------------------
def command_line(args) -> str:
    """The command that reproduces this run (non-default options only)."""
    parts = ["python3", "bench/run_benchmark.py"]
    if args.quick:
        parts.append("--quick")
    base = dict(DEFAULTS, **QUICK) if args.quick else DEFAULTS
    for k in sorted(vars(args)):
        v = getattr(args, k)
        if k in ("json", "quick", "keep_venv", "out_dir"):
            continue
        if isinstance(v, bool):
            if v:
                parts.append("--" + k.replace("_", "-"))
            continue
        if k in base and v == base[k]:
            continue
        parts += ["--" + k.replace("_", "-"), str(v)]
    if Path(args.out_dir).resolve() != HERE:
        parts += ["--out-dir", str(args.out_dir)]
    return shlex.join(parts)


def _verdict(ratio, bound):
    if ratio <= bound:
        return "**holds**"
    return f"**missed** (×{ratio / bound:.2f} the bound)"


def _e(x):
    return "–" if not (isinstance(x, float) and math.isfinite(x)) else f"{x:.1e}"


def _rows_table(rows, targets=False):
    head = ("| quantity | ours | anchor | ours µs | anchor µs | ratio ours/anchor | max abs diff |"
            + (" target | |" if targets else ""))
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        t = ""
        if targets:
            t = (f" ≤ {TARGETS[r.key][1]:g} | {_verdict(r.ratio.med, TARGETS[r.key][1])} |"
                 if r.key in TARGETS else " | |")
        lines.append(f"| {r.what} | {r.ours} | {r.anchor} | {r.t_ours.fmt()} | "
                     f"{r.t_anchor.fmt()} | {r.ratio.fmt()} | {_e(r.err)} |{t}")
    return lines


def target_rows(res) -> dict:
    """key -> Row of the Panda for every issue-10 target measured."""
    rows = res["single"].get("panda", []) + res["batch"].get("panda", [])
    return {r.key: r for r in rows if r.key in TARGETS}


def write_report(path, res, args):
    """bench/README.md from the results dict."""
    L = []
    facts = res["facts"]
    L += ["# Speed: mbs_dynamics side by side with Pinocchio, dynibo and MuJoCo", "",
          "Generated by `bench/benchmark.py` (issue 10); do not edit by hand. Reproduce with "
          "(from the repository root, with the bench extra installed: "
          "`pip install \".[bench]\"` or pin, dynibo, mujoco, example-robot-data, matplotlib):",
          "", "```", res["command"], "```", "",
          f"This run took {res['elapsed']:.0f} s. `--quick` gives a smoke run in seconds (what "
          "test/test_benchmark.py runs); `--startup` adds the fresh-install start-up "
          "(a new virtual environment; "
          + (f"{res['startup']['elapsed']:.0f} s of this run"
             if res.get("startup") else "a few minutes") + "); `--help` lists the options. The script "
          "imports `mbs_dynamics` from this checkout (its source tree must be importable, i.e. "
          "built in place if the package has compiled parts), or with `--use-installed` the "
          "installed package; the *Machine* table says which, and how many compiled modules "
          "it has.", "",
          "Every call is timed in this one process. In each repeat our call and every anchor's "
          "call are timed back to back, round-robin (the first call rotates between repeats), "
          f"each over a loop calibrated to ≈ {args.target_time * 1e3:g} ms; ratios are taken per "
          f"repeat. Cells give the median [min–max] over {args.repeat} repeats (batches: "
          f"{args.batch_repeat}). Ratios below 1 mean we are faster. *max abs diff* is the "
          "largest difference of our result from the anchor's on the benchmark state (N m, "
          "rad/s² for q̈), which shows that both sides compute the same thing. Gravity is "
          f"(0, 0, −{G0}) m/s² for every library (dynibo's fixed standard gravity).", "",
          "## Machine", ""]
    L += ["| | |", "|---|---|"] + [f"| {k} | {v} |" for k, v in facts.items()]
    L += [f"| load average at end | {res['load_end']} |",
          f"| total run time | {res['elapsed']:.0f} s |", ""]
    # ---------------------------------------------------------------- targets
    tr = target_rows(res)
    st = res.get("startup")
    L += ["## Targets of issue 10 (7-DOF Panda, fingers locked, same run)", "",
          "| target | bound | measured, median [min–max] | fastest repeats, ours/anchor | "
          "verdict |", "|---|---|---|---|---|"]
    for key, (desc, bound) in TARGETS.items():
        r = tr.get(key)
        if r is None:
            why = ("dynibo not available: " + res["cases"].get("panda", {}).get("dy_note", "")
                   if "dynibo" in key or key == "M_best" else "Panda not in this run")
            L.append(f"| {desc} | ≤ {bound:g} | not measured ({why}) | – | – |")
            continue
        extra = ""
        if key.startswith("batch"):
            desc = desc.replace("N samples", f"N = {args.batch} samples")
            extra = f" (speed-up {1 / r.ratio.med:.1f}×, target ≥ {1 / bound:.0f}×)"
        L.append(f"| {desc} | ≤ {bound:g} | {r.ratio.fmt()}{extra} | "
                 f"{_g(r.t_ours.lo / r.t_anchor.lo)} | {_verdict(r.ratio.med, bound)} |")
    if st and st.get("ok"):
        c = st["runs"]["mbs_dynamics"]["cold"]
        L.append(f"| start-up after a fresh install: import + `load_urdf` + first call of every "
                 f"public method | ≤ {STARTUP_TARGET_S:g} s | {c['total']:.3f} s in-process "
                 f"(process wall {c['wall']:.2f} s) | – | "
                 f"{'**holds**' if c['total'] <= STARTUP_TARGET_S else '**missed**'} |")
    else:
        L.append(f"| start-up after a fresh install | ≤ {STARTUP_TARGET_S:g} s | not measured in "
                 "this run (add `--startup`) | – | – |")
    missed = [k for k, r in tr.items() if r.ratio.med > TARGETS[k][1]]
    L += ["", "The verdict uses the median of the per-repeat ratios; *fastest repeats* divides "
          "the two sides' fastest timings (the least disturbed ones on a busy machine) as a "
          "cross-check.", "",
          (f"{len(missed)} of {len(tr)} measured speed targets missed; see *Where the time "
           "goes* below for the profile." if missed else
           f"All {len(tr)} measured speed targets hold."), ""]
    # ---------------------------------------------------------------- peer check
    L += ["## Peers checked before timing", "",
          "dynibo has no locked-joint option and rejects mimic joints, so it gets the URDF with "
          "the locked joints made `fixed` (at 0, as ours and Pinocchio's `buildReducedModel`). "
          "It exposes no joint names: candidate joint orders of the URDF (document order, "
          "breadth-first, depth-first) are tried and the first in which τ, g, M and q̈ agree "
          "with Pinocchio to 1e-9 relative on the benchmark state maps its joints to ours; a "
          "peer that agrees in none is not timed.", "",
          "| robot | n | dynibo vs Pinocchio, max abs diff | dynibo's joint order | MuJoCo |",
          "|---|---|---|---|---|"]
    for name, c in res["cases"].items():
        dyc = (", ".join(f"{k} {v:.1e}" for k, v in c["dy_check"].items()) if c["dy_check"]
               else c["dy_note"])
        L.append(f"| {c['label']} | {c['n']} | {dyc} | {c.get('dy_order') or '–'} | "
                 f"{c['mj_note'] or 'loaded'} |")
    L += [""]
    # ---------------------------------------------------------------- per robot
    L += ["## Single calls", ""]
    for name, rows in res["single"].items():
        c = res["cases"][name]
        L += [f"### {c['label']} (n = {c['n']}, {c['source']})", ""]
        L += _rows_table(rows, targets=(name == "panda"))
        L += [""]
    L += ["dynibo returns M flat in column-major order (for a symmetric M the same numbers as "
          "row-major): it is timed as it comes, without the `reshape`. The MuJoCo row's *max abs "
          "diff* compares at q̇ = 0 (mj_inverse adds URDF joint damping and friction loss, which "
          "depend on q̇); its timing includes MuJoCo's whole inverse pipeline on a model without "
          "geometry. C̄ is not unique: ours (seed 004 eq. 54) and Pinocchio's are compared as "
          "C̄ q̇.", ""]
    # ---------------------------------------------------------------- batch
    if res["batch"]:
        L += ["## Batch path", "",
              f"N = {args.batch} random states, one call of ours over (N, n) or (N, 5, n) arrays "
              "against a plain Python loop over the peer that stores each result into an (N, n) "
              "array. Times are per sample; speed-up = 1 / time ratio.", ""]
        for name, rows in res["batch"].items():
            L += [f"### {res['cases'][name]['label']}", ""]
            L += ["| quantity | ours | anchor | ours µs/sample | anchor µs/sample | time ratio | "
                  "speed-up | max abs diff |", "|---|---|---|---|---|---|---|---|"]
            for r in rows:
                L.append(f"| {r.what} | {r.ours} | {r.anchor} | {r.t_ours.fmt()} | "
                         f"{r.t_anchor.fmt()} | {r.ratio.fmt()} | {1 / r.ratio.med:.1f}× | "
                         f"{_e(r.err)} |")
            L += [""]
    # ---------------------------------------------------------------- profile
    prof = res.get("profile")
    if prof:
        L += profile_section(prof, res, args)
    # ---------------------------------------------------------------- enrichment
    en = res.get("enrichment")
    if en:
        L += ["## Enriching a trajectory (issue 11's proxy, Panda)", "",
              f"A {en['duration']:g} s trajectory through {en['waypoints']} waypoints, resampled "
              f"at {en['rate']:g} Hz ({en['samples']} samples, n = {en['n']}); each step timed "
              f"as one call, median [min–max] over {args.batch_repeat} repeats.", "",
              "| step | ms | µs per sample |", "|---|---|---|"]
        for label, s in en["steps"]:
            L.append(f"| {label} | {s.fmt(scale=1e-3)} | {s.fmt(scale=1.0 / en['samples'])} |")
        for label, s in (("**total, effort output** (spline + resample + τ, τ′, τ″)",
                          en["total_effort"]),
                         ("**total, motor output** (spline + resample + SEA)", en["total_motor"])):
            L.append(f"| {label} | {s.fmt(scale=1e-3)} | {s.fmt(scale=1.0 / en['samples'])} |")
        L += ["", f"Enriching the whole {en['duration']:g} s trajectory costs "
              f"{en['total_effort'].med / 1e3:.1f} ms (effort) / {en['total_motor'].med / 1e3:.1f} "
              f"ms (SEA motor references): "
              f"{en['total_motor'].med / 1e6 / en['duration'] * 100:.2f} "
              "% of the trajectory's duration, paid once per goal before it is forwarded.", ""]
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
              "products are O(n³); the fixed per-call cost of its many NumPy calls flattens it "
              f"at small n). {cross}", ""]
    # ---------------------------------------------------------------- startup
    L += startup_section(st)
    L += ["## What is measured", "",
          "- Pinocchio τ′ route: `computeRNEADerivatives(q, q̇, q̈)` then "
          "τ′ = ∂τ/∂q q̇ + ∂τ/∂q̇ q̈ + M q⃛ (three mat-vecs; τ copied from `data.tau`). "
          "Pinocchio has no τ″; its FD τ″ is (τ′(t+h) − τ′(t−h)) / 2h with h = "
          f"{FD_STEP:g} s, the states at t ± h from the quartic Taylor expansion of "
          "(q, q′, q″, q‴, q⁗): three τ′ routes in all, giving τ, τ′ and τ″.",
          "- Ours: `torque_derivatives(qs)` with qs = (q, q′, q″, q‴, q⁗) returns τ, τ′ and τ″ "
          "together (recursive: one O(n) pass of MATH.md; closed form: seed 004 eq. 28 and 38 "
          "with dense 6n × 6n NumPy matrices).",
          "- M: Pinocchio's `crba` fills only the upper triangle of `data.M`; the Python binding "
          "of Pinocchio ≥ 3 returns the symmetrised full matrix. The benchmark checks at run time "
          "and adds the symmetrisation to the anchor's time where the returned matrix is not "
          "symmetric.",
          "- States: q uniform in the middle 80 % of the joint limits, the derivatives standard "
          "normal; the random generator is seeded (`--seed`).", ""]
    notes = HERE / "NOTES.md"
    if notes.is_file():
        L += ["## Notes (hand-written, from bench/NOTES.md)", "", notes.read_text().strip(), ""]
    Path(path).write_text("\n".join(L))


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
    L += ["", "Inputs that are not C-contiguous float64 (issue 10: converted once, ≤ 1 µs extra), "
          "`inverse_dynamics` on the Panda:", "", "| input | µs per call |", "|---|---|"]
    for label, st in prof["inputs"]:
        L.append(f"| {label} | {st if isinstance(st, str) else st.fmt()} |")
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
        elif key.startswith("batch"):
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
    if not (v > 0 and math.isfinite(v)):
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


def get_argument_parser() -> argparse.ArgumentParser:
    """Options of ``bench/run_benchmark.py``; unset ones take ``--quick``'s or the defaults."""
    p = argparse.ArgumentParser(prog="run_benchmark.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true",
                   help="smoke run: Panda and a 4-joint chain, tiny repeat counts (seconds)")
    p.add_argument("--startup", action="store_true",
                   help="also time start-up after a fresh install in a new venv (minutes)")
    p.add_argument("--keep-venv", action="store_true", help="keep the --startup venv")
    p.add_argument("--use-installed", action="store_true",
                   help="measure the installed mbs_dynamics, not this checkout's source tree "
                        "(handled by run_benchmark.py)")
    p.add_argument("--out-dir", default=None,
                   help="where README.md and scaling.png go (default: bench/ of this checkout)")
    p.add_argument("--robots", type=_robots, help="comma list of %s" % ", ".join(ROBOTS))
    p.add_argument("--chain-n", type=_pos_int, help="joints of the generated chain (30)")
    p.add_argument("--repeat", type=_pos_int, help="timed repeats per call (11)")
    p.add_argument("--target-time", type=_pos_float, help="seconds per timed loop (0.02)")
    p.add_argument("--batch", type=_pos_int, help="samples of the batch path (10000)")
    p.add_argument("--batch-repeat", type=_pos_int, help="timed repeats of each batch (5)")
    p.add_argument("--scaling", type=_sizes, help="chain sizes of the scaling plot")
    p.add_argument("--enrich-duration", type=_pos_float,
                   help="seconds of the enriched trajectory (10)")
    p.add_argument("--skip-scaling", action="store_true", help="no scaling plot")
    p.add_argument("--skip-mujoco", action="store_true", help="no MuJoCo reference rows")
    p.add_argument("--blas-threads", type=int,
                   help="NumPy BLAS threads during the run, 0 = leave as is (1)")
    p.add_argument("--seed", type=int, help="random states (0)")
    p.add_argument("--json", default=None, help="also write the raw results here")
    return p


def parse_args(argv=None):
    """Parse and fill the unset options from ``QUICK`` (with ``--quick``) and ``DEFAULTS``."""
    args = get_argument_parser().parse_args(argv)
    base = dict(DEFAULTS, **QUICK) if args.quick else DEFAULTS
    for k, v in base.items():
        if getattr(args, k, None) is None:
            setattr(args, k, v)
    return args


def run(args) -> int:
    """Run the benchmark described by ``args`` (from :func:`parse_args`); 0 on success."""
    try:
        import pinocchio  # noqa: F401
    except ImportError:
        print("the benchmark needs Pinocchio: pip install pin example-robot-data", file=sys.stderr)
        return 2
    try:
        import mbs_dynamics  # noqa: F401
    except ImportError as e:
        print(f"cannot import mbs_dynamics ({e}): run from a checkout (built in place if it has "
              "compiled parts) or install it and pass --use-installed", file=sys.stderr)
        return 2
    t_start = time.perf_counter()
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)

    def log(msg):
        print(msg, flush=True)

    facts = machine_facts()
    facts["NumPy BLAS"] = blas_threads(args.blas_threads)
    log("machine: " + "; ".join(f"{k}: {v}" for k, v in facts.items()))
    res = {"facts": facts, "command": command_line(args), "single": {}, "batch": {}, "cases": {}}
    profile_case = None
    for name in args.robots.split(","):
        log(f"{name}: loading")
        case = make_case(name, args)
        res["cases"][name] = {"label": case.label, "n": case.robot.n, "source": case.source,
                              "mj_note": case.mj_note, "sym": case.sym, "dy_note": case.dy_note,
                              "dy_check": case.dy.check if case.dy else {},
                              "dy_order": case.dy.order if case.dy else ""}
        res["single"][name] = bench_single(case, args, log)
        res["batch"][name] = bench_batch(case, args, log)
        if name == "panda":
            profile_case = case
    if profile_case is not None:
        res["profile"] = bench_profile(profile_case, args, log)
    res["enrichment"] = bench_enrichment(args, log)
    if not args.skip_scaling:
        sc = bench_scaling(args, log)
        res["scaling"] = sc
        res["scaling_summary"] = scaling_summary(sc)
        plot_scaling(sc, res["scaling_summary"], out_dir / "scaling.png")
    if args.startup:
        t0 = time.perf_counter()
        res["startup"] = bench_startup(args, log)
        res["startup"]["elapsed"] = time.perf_counter() - t0
    res["load_end"] = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    res["elapsed"] = time.perf_counter() - t_start
    write_report(out_dir / "README.md", res, args)
    if args.json:
        Path(args.json).write_text(json.dumps(_jsonable(res), indent=1))
    log(f"wrote {out_dir / 'README.md'} in {res['elapsed']:.0f} s")
    return 0


def _jsonable(x):
    if isinstance(x, (Row, Stat)):
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


def main(argv=None) -> int:
    """Entry point: ``python3 bench/run_benchmark.py [options]``."""
    args = parse_args(argv)
    if args.out_dir is None:
        args.out_dir = str(HERE)
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
