"""One benchmark robot with all its twins and a random state (:class:`Case`)."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from peers import DyniboTwin, _first_line, dynibo_twin, mujoco_model, pin_model
from robots import robot_xml
from settings import G0


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


def batch_states(case: Case, N: int, seed: int) -> np.ndarray:
    """(N, 5, n) random states around the benchmark state."""
    rng = np.random.default_rng(seed + 2)
    QS = rng.standard_normal((N, 5, case.robot.n))
    QS[:, 0] = case.qs[0] + 0.3 * rng.standard_normal((N, case.robot.n))
    return QS
