"""The peers' twins of one robot (Pinocchio, MuJoCo, dynibo, each checked before it is timed) and
Pinocchio's τ′ route with its finite-difference τ″ (the anchors of ``torque_derivatives``)."""
from __future__ import annotations

import math
import os
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass

import numpy as np

from robots import _first_line, locked_urdf_text, urdf_joint_orders
from settings import FD_STEP, G0
from timing import _maxdiff


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
