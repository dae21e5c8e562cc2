"""The MuJoCo model of a plain URDF for co-simulation inside ros2_control.

:func:`mujoco_model` turns a URDF into MJCF text that MuJoCo integrates with exactly the dynamics
the package's feedforward assumes, and nothing written by hand per robot:

* the link inertias of the URDF (``inertiafromgeom="false"``, no balancing), fixed joints fused;
* no geometry (visuals and collisions are stripped: no meshes to find, no contacts);
* no joint damping, friction, armature or limits (the rigid model has none of them; the URDF's
  ``<dynamics>`` and ``<limit>`` are ignored by the package's inverse dynamics too);
* gravity as given (the proxy's ``gravity`` parameter);
* mimic joints as MuJoCo joint equality constraints ``q_m = k q_j + o`` (stiff: time constant
  two time steps);
* series-elastic joints (``actuator.type: sea``; the reduced model of M. W. Spong, "Modeling and
  control of elastic joint robots", J. Dyn. Sys., Meas., Control 109(4), 1987, used by
  :mod:`mbs_dynamics.control.actuators`): per elastic joint ``j`` a rotor body on the world with
  one joint ``j__motor`` of the same kind (hinge or slide) whose inertia about its axis is the
  motor inertia B and whose viscous damping is D_m, and a fixed tendon ``j__spring`` of length
  θ − q with stiffness K and rest length 0, so the spring torque K (θ − q) acts on both sides:
  ``B θ'' + D_m θ' + K (θ − q) = τ_m`` and ``K (θ − q)`` drives the link, the model the
  flatness feedforward inverts. The rotor bodies carry gravity compensation (their centre of
  mass lies on the axis of a hinge; a slide would otherwise feel gravity along its axis).

Closed loops (the proxy's ``loops``) are refused (:class:`CosimModelError`): the MuJoCo model has
no loop-closure constraints of the package's form.

Spherical joints (the URDF extension ``type="spherical"``) become MuJoCo ``ball`` joints and URDF
``floating`` joints inside the tree three ``slide`` joints ``<name>__x``, ``__y``, ``__z`` along
the joint frame's axes followed by a ``ball`` joint ``<name>`` on the same body (MuJoCo's ``free``
joint exists only at the top level). Their configuration is a quaternion in MuJoCo's order
``(w, x, y, z)`` (ours, Pinocchio's, is ``(x, y, z, w)``); a ball joint's velocity is ω in the
child frame (ours too), the slides' is ṗ in the joint frame (ours: v = Rᵀ ṗ in the child frame).
:func:`mujoco_state` and :func:`robot_forces` convert. The ros2_control hardware exposes one
position/velocity/effort per joint, so :func:`cosim_description` refuses these joints.

:func:`ros2_control_block` writes the ``<ros2_control>`` element the launch file adds to the URDF
for the ``mbs_dynamics_mujoco/MujocoSystem`` hardware plugin, and :func:`cosim_description`
returns both.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

import numpy as np

__all__ = ["CosimModelError", "CosimJoint", "CosimModel", "mujoco_model", "ros2_control_block",
           "cosim_description", "write_cosim_files", "mujoco_state", "robot_forces",
           "HARDWARE_PLUGIN", "MOTOR_SUFFIX", "SPRING_SUFFIX", "SLIDE_SUFFIXES"]

#: pluginlib name of the hardware interface (package ``mbs_dynamics_mujoco``).
HARDWARE_PLUGIN = "mbs_dynamics_mujoco/MujocoSystem"
#: name of the rotor joint of an elastic joint ``j``: ``j + MOTOR_SUFFIX``.
MOTOR_SUFFIX = "__motor"
#: name of the spring tendon of an elastic joint ``j``: ``j + SPRING_SUFFIX``.
SPRING_SUFFIX = "__spring"
#: names of the slide joints of a URDF ``floating`` joint ``f`` inside the tree: ``f + suffix``.
SLIDE_SUFFIXES = ("__x", "__y", "__z")

_MAX_URDF_CHARS = 20_000_000


class CosimModelError(ValueError):
    """The URDF or the actuator configuration cannot be simulated (the message says why)."""


@dataclass(frozen=True)
class CosimJoint:
    """One joint the hardware exposes.

    Attributes:
        name: URDF joint name.
        kind: "revolute" or "prismatic" (continuous joints are revolute).
        elastic: True for a series-elastic joint (command interfaces position + effort).
        stiffness: K [Nm/rad] (elastic joints; 0 otherwise).
        motor_p: motor-loop position gain [Nm/rad] (elastic joints; 0 otherwise).
        motor_d: motor-loop velocity gain [Nm s/rad] (elastic joints; 0 otherwise).
        initial: initial position [rad] or [m].
    """

    name: str
    kind: str
    elastic: bool = False
    stiffness: float = 0.0
    motor_p: float = 0.0
    motor_d: float = 0.0
    initial: float = 0.0


@dataclass(frozen=True)
class CosimModel:
    """What :func:`mujoco_model` produced.

    Attributes:
        mjcf: the MJCF text.
        joints: the actuated joints, in URDF order (mimic joints excluded).
        mimic: mimic joint → (master, multiplier, offset).
        timestep: MuJoCo's time step [s].
        mjb: the compiled model in MuJoCo's binary format (what the plugin loads: MJCF text
            rounds numbers to 6 digits, the binary keeps the URDF's values exactly).
        lie_joints: spherical / inner floating joint → ``"spherical"`` | ``"floating"`` (not
            in ``joints``: MuJoCo ``ball`` joints, after three slides for a floating one).
    """

    mjcf: str
    joints: tuple
    mimic: dict = field(default_factory=dict)
    timestep: float = 0.00025
    mjb: bytes = b""
    lie_joints: dict = field(default_factory=dict)


def _parse(urdf):
    if not isinstance(urdf, str) or not urdf.strip():
        raise CosimModelError("robot_description: empty (expected URDF XML text)")
    if len(urdf) > _MAX_URDF_CHARS:
        raise CosimModelError(f"robot_description: longer than {_MAX_URDF_CHARS} characters")
    if "<!ENTITY" in urdf or "<!DOCTYPE" in urdf:
        raise CosimModelError("robot_description: DOCTYPE/ENTITY declarations are not accepted")
    from ..model.urdf import URDFError, robot_element

    try:
        return robot_element(urdf if urdf.lstrip().startswith("<") else urdf.encode("utf-8"))
    except URDFError as exc:
        raise CosimModelError(f"robot_description: {exc}") from None


def _float(text, what, default=0.0):
    if text is None:
        return default
    try:
        v = float(text)
    except ValueError:
        raise CosimModelError(f"{what}: {text!r} is not a number") from None
    if not math.isfinite(v):
        raise CosimModelError(f"{what}: {text!r} is not finite")
    return v


def _strip(root):
    """Remove what MuJoCo must not see: geometry, ros2_control/gazebo/transmission blocks,
    an existing <mujoco> element; return the movable joints, the mimic map and the spherical /
    inner floating joints (these re-typed ``spherical``, the slides added after import)."""
    for link in root.findall("link"):
        for tag in ("visual", "collision"):
            for el in link.findall(tag):
                link.remove(el)
    for tag in ("ros2_control", "gazebo", "transmission", "mujoco", "material"):
        for el in root.findall(tag):
            root.remove(el)
    joints, mimic, lie = [], {}, {}
    for j in root.findall("joint"):
        kind = j.get("type")
        name = j.get("name")
        if kind in ("floating", "spherical"):
            lie[name] = kind
            j.set("type", "spherical")
            continue
        if kind == "planar":
            raise CosimModelError(f"joint {name!r}: planar joints are not supported")
        if kind in ("universal", "cylindrical"):
            raise CosimModelError(f"joint {name!r}: {kind} joints (an mbs_dynamics URDF "
                                  "extension) are not supported by the MuJoCo model")
        if kind not in ("revolute", "continuous", "prismatic"):
            continue
        m = j.find("mimic")
        if m is not None:
            mimic[name] = (m.get("joint"), _float(m.get("multiplier"), f"{name} mimic", 1.0),
                           _float(m.get("offset"), f"{name} mimic", 0.0))
            j.remove(m)
        joints.append((name, "prismatic" if kind == "prismatic" else "revolute"))
    names = {n for n, _ in joints}
    for name, (master, _, _) in mimic.items():
        if master not in names:
            raise CosimModelError(f"mimic joint {name!r} follows {master!r}, which is not a "
                                  "movable joint of the URDF")
        if master in mimic:
            raise CosimModelError(f"mimic joint {name!r} follows {master!r}, itself a mimic "
                                  "joint: chains of mimics are not simulated")
    return joints, mimic, lie


def _per_joint(value, what, n):
    arr = np.array(value, dtype=float).reshape(-1)
    if arr.shape[0] == 1:
        arr = np.full(n, arr[0])
    if arr.shape[0] != n or not np.all(np.isfinite(arr)):
        raise CosimModelError(f"{what}: expected one finite number or {n}, got {value!r}")
    return arr


def mujoco_model(urdf, actuator=None, *, gravity=(0.0, 0.0, -9.81), timestep=0.00025,
                 initial=None, loops=None):
    """MJCF text of a URDF for co-simulation (see the module docstring).

    Args:
        urdf: URDF XML text.
        actuator: the ``actuator.*`` configuration (nested or dotted keys, as the nodes read
            it; :func:`mbs_dynamics.control.actuators.actuator_from_params`), or None (rigid).
            ``sea`` makes every actuated joint series-elastic; ``actuator.motor_loop.p`` /
            ``.d`` are the drive's motor-loop gains (per joint or one value).
        gravity: (3,) [m/s²] in the root frame.
        timestep: MuJoCo's time step [s] (> 0).
        initial: joint name → initial position (others start at 0).
        loops: the proxy's closed loops; anything non-empty is refused.

    Returns:
        :class:`CosimModel`.

    Raises:
        CosimModelError: malformed URDF, planar/universal/cylindrical joints, closed loops,
            a ``vsa`` actuator, a motor inertia of zero, or MuJoCo's compiler refusing the
            model.
    """
    import mujoco

    from ..control.actuators import SEA, actuator_from_params, flatten_params

    if loops:
        raise CosimModelError(
            "closed loops (the loops parameter) are not simulated by the MuJoCo co-simulation: "
            "run it on the open tree, or use the package's own simulator (sim_node) for "
            "closed-loop robots")
    if not (isinstance(timestep, (int, float)) and math.isfinite(timestep) and timestep > 0):
        raise CosimModelError(f"timestep must be a finite number > 0, got {timestep!r}")
    g = np.asarray(gravity, dtype=float).reshape(-1)
    if g.shape != (3,) or not np.all(np.isfinite(g)):
        raise CosimModelError(f"gravity must be 3 finite numbers, got {gravity!r}")
    root = _parse(urdf)
    all_joints, mimic, lie = _strip(root)
    if not all_joints and not lie:
        raise CosimModelError("the URDF has no movable joint")
    actuated = [(n, k) for n, k in all_joints if n not in mimic]
    n = len(actuated)
    flat = {k: v for k, v in flatten_params(dict(actuator or {})).items()
            if k.startswith("actuator.")}
    loop_keys = {k: v for k, v in flat.items() if k.startswith("actuator.motor_loop.")}
    try:
        model = actuator_from_params(flat, n)
    except ValueError as exc:
        raise CosimModelError(str(exc)) from None
    if model is not None and not isinstance(model, SEA):
        raise CosimModelError("actuator.type vsa is not simulated by the MuJoCo co-simulation "
                              "(rigid and sea are)")
    initial = dict(initial or {})
    for name, v in initial.items():
        _float(str(v), f"initial position of {name}")

    ET.SubElement(root, "mujoco").append(ET.Element("compiler", {
        "discardvisual": "true", "inertiafromgeom": "false", "balanceinertia": "false",
        "fusestatic": "true", "strippath": "true", "angle": "radian",
        # point masses and massless intermediate links are valid URDF (the package handles
        # them); MuJoCo needs positive values: 1e-12 kg / kg m² changes no dynamics visibly
        "boundmass": "1e-12", "boundinertia": "1e-12"}))
    try:
        spec = mujoco.MjSpec.from_string(ET.tostring(root, encoding="unicode"))
        spec.compile()
    except Exception as exc:  # noqa: BLE001 - MuJoCo's compiler error, named
        raise CosimModelError(f"MuJoCo cannot load the URDF: {exc}") from None
    spec.modelname = "cosim"
    spec.compiler.saveinertial = True   # to_xml drops explicit inertials of new bodies otherwise
    spec.option.timestep = float(timestep)
    spec.option.gravity = g
    spec.option.integrator = mujoco.mjtIntegrator.mjINT_RK4
    spec.option.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT)
    by_name = {j.name: j for j in spec.joints}
    for j in spec.joints:
        j.damping = np.zeros_like(np.asarray(j.damping, dtype=float))
        j.frictionloss = 0.0
        j.armature = 0.0
        j.stiffness = np.zeros_like(np.asarray(j.stiffness, dtype=float))
        j.limited = mujoco.mjtLimited.mjLIMITED_FALSE
        j.actfrclimited = mujoco.mjtLimited.mjLIMITED_FALSE
    missing = [nm for nm, _ in all_joints if nm not in by_name] + [
        nm for nm in lie if nm not in by_name]
    if missing:
        raise CosimModelError(f"MuJoCo's URDF import lost joints {missing}")
    for nm, kind in lie.items():
        _lie_joint(spec, by_name[nm], kind)
    for name, (master, mult, off) in mimic.items():
        eq = spec.add_equality()
        eq.type = mujoco.mjtEq.mjEQ_JOINT
        eq.name1, eq.name2 = name, master
        eq.data[:5] = [off, mult, 0.0, 0.0, 0.0]
        eq.solref = [2.0 * timestep, 1.0]

    joints = []
    if model is None:
        joints = [CosimJoint(nm, kind, initial=float(initial.get(nm, 0.0)))
                  for nm, kind in actuated]
    else:
        K = model._param(model.stiffness, n)
        B = model._param(model.motor_inertia, n)
        Dm = model._param(model.motor_damping, n)
        if not np.all(B > 0):
            raise CosimModelError("actuator.motor_inertia must be > 0 for every joint to "
                                  "simulate the rotor (a massless rotor has no dynamics)")
        P, D = _motor_loop_gains(loop_keys, K, B, n)
        for i, (nm, kind) in enumerate(actuated):
            q0 = float(initial.get(nm, 0.0))
            body = spec.worldbody.add_body(name=nm + "__rotor", gravcomp=1.0)
            body.mass = float(B[i])
            body.inertia = [float(B[i])] * 3
            body.explicitinertial = True
            rj = body.add_joint(name=nm + MOTOR_SUFFIX, axis=[0, 0, 1],
                                type=(mujoco.mjtJoint.mjJNT_SLIDE if kind == "prismatic"
                                      else mujoco.mjtJoint.mjJNT_HINGE))
            rj.damping = _first(rj.damping, Dm[i])
            rj.limited = mujoco.mjtLimited.mjLIMITED_FALSE
            ten = spec.add_tendon(name=nm + SPRING_SUFFIX)
            ten.stiffness = _first(ten.stiffness, K[i])
            ten.damping = _first(ten.damping, 0.0)
            ten.springlength = [0.0, 0.0]
            ten.limited = mujoco.mjtLimited.mjLIMITED_FALSE
            ten.wrap_joint(nm + MOTOR_SUFFIX, 1.0)
            ten.wrap_joint(nm, -1.0)
            joints.append(CosimJoint(nm, kind, True, float(K[i]), float(P[i]), float(D[i]), q0))
    try:
        compiled = spec.compile()
        xml = spec.to_xml()
    except Exception as exc:  # noqa: BLE001
        raise CosimModelError(f"MuJoCo cannot compile the co-simulation model: {exc}") from None
    buf = np.empty(mujoco.mj_sizeModel(compiled), dtype=np.uint8)
    mujoco.mj_saveModel(compiled, None, buf)
    return CosimModel(xml, tuple(joints), mimic, float(timestep), buf.tobytes(), lie)


def _lie_joint(spec, joint, kind):
    """A spherical joint is MuJoCo's ball joint as imported; a floating one becomes slides
    along the joint frame's x, y, z, then the ball (joints on one body apply in order)."""
    import mujoco

    if np.any(np.asarray(joint.pos, dtype=float) != 0.0):
        raise CosimModelError(f"joint {joint.name!r}: MuJoCo placed its centre off the body "
                              "frame")
    if kind == "spherical":
        return
    body, name = joint.parent, joint.name
    spec.delete(joint)
    for axis, suffix in zip(np.eye(3), SLIDE_SUFFIXES):
        sl = body.add_joint(name=name + suffix, type=mujoco.mjtJoint.mjJNT_SLIDE, axis=axis)
        sl.limited = mujoco.mjtLimited.mjLIMITED_FALSE
    body.add_joint(name=name, type=mujoco.mjtJoint.mjJNT_BALL)


def _layout(robot):
    """(name, kind, q slice, v slice) of each joint of a Robot or LieJointRobot."""
    if getattr(robot, "floating_base", False) or getattr(robot.model, "mimic", None):
        raise ValueError("mujoco_state/robot_forces: a floating base or mimic joints are not "
                         "mapped (the co-simulation model has a fixed base and mimic "
                         "equalities)")
    layout = getattr(robot, "joint_layout", None)
    if layout is not None:
        return layout()
    return [(nm, "joint", slice(i, i + 1), slice(i, i + 1))
            for i, nm in enumerate(robot.joint_names)]


def _quat_matrix(x, y, z, w):
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def _addresses(mj_model, name):
    import mujoco

    jid = mujoco.mj_name2id(mj_model, mujoco.mjtObj.mjOBJ_JOINT, name)
    if jid < 0:
        raise ValueError(f"joint {name!r} is not in the MuJoCo model")
    return int(mj_model.jnt_qposadr[jid]), int(mj_model.jnt_dofadr[jid])


def mujoco_state(mj_model, robot, q, v, a=None):
    """MuJoCo's ``(qpos, qvel[, qacc])`` of a model made by :func:`mujoco_model` from our state
    (joints matched by name; joints MuJoCo has and we do not — rotors of elastic joints,
    mimic joints — stay 0).

    Args:
        mj_model: ``mujoco.MjModel`` compiled from :attr:`CosimModel.mjb`.
        robot: the ``Robot`` or ``LieJointRobot`` of the same URDF (fixed base, no mimics).
        q: (nq,) configuration (quaternions ``(x, y, z, w)``); v: (nv,) velocity (a free joint's
            ``(v, ω)`` in its child frame); a: optional (nv,) acceleration (its time derivative).
    Returns:
        ``(qpos, qvel)`` or ``(qpos, qvel, qacc)``: quaternions ``(w, x, y, z)``, a floating
        joint's slides ``ṗ = R v`` and ``p̈ = R (v̇ + ω × v)`` in the joint frame.
    Raises:
        ValueError: a joint missing from the MuJoCo model, wrong sizes.
    """
    q, v = np.asarray(q, dtype=float), np.asarray(v, dtype=float)
    a = None if a is None else np.asarray(a, dtype=float)
    if q.shape != (robot.nq,) or v.shape != (robot.nv,) or (a is not None
                                                           and a.shape != (robot.nv,)):
        raise ValueError(f"q, v, a must have shapes ({robot.nq},), ({robot.nv},), "
                         f"({robot.nv},)")
    qpos, qvel, qacc = np.zeros(mj_model.nq), np.zeros(mj_model.nv), np.zeros(mj_model.nv)
    for name, kind, sq, sv in _layout(robot):
        x, w = q[sq], v[sv]
        dw = np.zeros_like(w) if a is None else a[sv]
        pa, da = _addresses(mj_model, name)
        if kind == "joint":
            qpos[pa], qvel[da], qacc[da] = x[0], w[0], dw[0]
            continue
        qpos[pa:pa + 4] = (x[-1], x[-4], x[-3], x[-2])
        qvel[da:da + 3], qacc[da:da + 3] = w[-3:], dw[-3:]
        if kind == "floating":
            R = _quat_matrix(*(x[3:7] / np.linalg.norm(x[3:7])))
            for i, suffix in enumerate(SLIDE_SUFFIXES):
                ps, ds = _addresses(mj_model, name + suffix)
                qpos[ps] = x[i]
                qvel[ds] = R[i] @ w[:3]
                qacc[ds] = R[i] @ (dw[:3] + np.cross(w[3:], w[:3]))
    return (qpos, qvel) if a is None else (qpos, qvel, qacc)


def robot_forces(mj_model, robot, q, qfrc):
    """Our generalized force (nv,) from MuJoCo's (``qfrc_inverse``, ``qfrc_applied``, …) of a
    model made by :func:`mujoco_model`: the power-conjugate of :func:`mujoco_state`'s velocity
    map (a floating joint's force f = Rᵀ f_slides in its child frame).

    Args:
        mj_model: ``mujoco.MjModel``; robot: as :func:`mujoco_state`.
        q: (nq,) our configuration; qfrc: (mj_model.nv,) MuJoCo's generalized force.
    Returns:
        τ (nv,) [N m, N].
    """
    q, qfrc = np.asarray(q, dtype=float), np.asarray(qfrc, dtype=float)
    if q.shape != (robot.nq,) or qfrc.shape != (mj_model.nv,):
        raise ValueError(f"q and qfrc must have shapes ({robot.nq},), ({mj_model.nv},)")
    tau = np.zeros(robot.nv)
    for name, kind, sq, sv in _layout(robot):
        pa, da = _addresses(mj_model, name)
        if kind == "joint":
            tau[sv] = qfrc[da]
            continue
        tau[sv.stop - 3:sv.stop] = qfrc[da:da + 3]
        if kind == "floating":
            x = q[sq]
            R = _quat_matrix(*(x[3:7] / np.linalg.norm(x[3:7])))
            f = np.array([qfrc[_addresses(mj_model, name + s)[1]] for s in SLIDE_SUFFIXES])
            tau[sv.start:sv.start + 3] = R.T @ f
    return tau


def _first(current, value):
    """A MuJoCo attribute that is a scalar or (in MuJoCo 4) a coefficient vector whose first
    entry is the linear coefficient: ``value`` there, zeros elsewhere."""
    arr = np.asarray(current, dtype=float)
    if arr.ndim == 0:
        return float(value)
    out = np.zeros_like(arr)
    out[0] = float(value)
    return out


def _motor_loop_gains(keys, K, B, n):
    """The drive's motor-loop PD gains: ``actuator.motor_loop.p`` / ``.d`` when given, else a
    critically damped loop on the rotor alone at the spring's frequency, p = K, d = 2 √(K B), for
    every value left at 0 (the default)."""
    P = _per_joint(keys.get("actuator.motor_loop.p", 0.0), "actuator.motor_loop.p", n)
    D = _per_joint(keys.get("actuator.motor_loop.d", 0.0), "actuator.motor_loop.d", n)
    P = np.where(P == 0.0, K, P)
    D = np.where(D == 0.0, 2.0 * np.sqrt(K * B), D)
    if not (np.all(P >= 0) and np.all(D >= 0)):
        raise CosimModelError("actuator.motor_loop.p and .d must be >= 0")
    return P, D


def _param(parent, name, value):
    el = ET.SubElement(parent, "param", {"name": name})
    el.text = value if isinstance(value, str) else repr(float(value))
    return el


def ros2_control_block(model, mjcf_path, *, name="MujocoSystem", substeps=None,
                       real_time_factor=1.0, publish_clock=True,
                       motor_state_topic="~/motor_states", lockstep_topic=""):
    """The ``<ros2_control>`` element for :data:`HARDWARE_PLUGIN` (an ElementTree element).

    Args:
        model: a :class:`CosimModel`.
        mjcf_path: where its model is stored (the plugin loads that file: ``.mjb``, MuJoCo's
            binary model (``model.mjb``), or MJCF text).
        name: the hardware component's name.
        substeps: MuJoCo steps per control period (None: the plugin derives it from the
            update rate and ``model.timestep``).
        real_time_factor: simulated seconds per wall second (0: as fast as possible).
        publish_clock: publish ``/clock`` (the controller manager then runs in sim time).
        motor_state_topic: topic (relative to the hardware's node) of the motor-side
            sensor_msgs/JointState of elastic joints.
        lockstep_topic: a std_msgs/Float64MultiArray command topic (e.g. an effort
            controller's ``~/commands``) whose publisher runs in another process: each cycle
            the simulation waits (at most 1 s of wall time) until a message has arrived on it
            since the cycle's state was read, so the command computed from the state of cycle
            k is applied from cycle k + 1 on, whatever the load (its data, one effort per joint
            in this block's joint order, is applied even when the controller's own subscription
            has not stored it yet). Empty: no waiting.
    """
    rc = ET.Element("ros2_control", {"name": name, "type": "system"})
    hw = ET.SubElement(rc, "hardware")
    ET.SubElement(hw, "plugin").text = HARDWARE_PLUGIN
    _param(hw, "mjcf", str(mjcf_path))
    if substeps is not None:
        _param(hw, "substeps", str(int(substeps)))
    _param(hw, "real_time_factor", real_time_factor)
    _param(hw, "publish_clock", "true" if publish_clock else "false")
    _param(hw, "motor_state_topic", motor_state_topic)
    if lockstep_topic:
        _param(hw, "lockstep_topic", lockstep_topic)
    for j in model.joints:
        je = ET.SubElement(rc, "joint", {"name": j.name})
        if j.elastic:
            ET.SubElement(je, "command_interface", {"name": "position"})
        ET.SubElement(je, "command_interface", {"name": "effort"})
        pos = ET.SubElement(je, "state_interface", {"name": "position"})
        _param(pos, "initial_value", j.initial)
        ET.SubElement(je, "state_interface", {"name": "velocity"})
        ET.SubElement(je, "state_interface", {"name": "effort"})
        if j.elastic:
            ET.SubElement(je, "state_interface", {"name": "motor_position"})
            ET.SubElement(je, "state_interface", {"name": "motor_velocity"})
            _param(je, "stiffness", j.stiffness)
            _param(je, "motor_p", j.motor_p)
            _param(je, "motor_d", j.motor_d)
    return rc


def cosim_description(urdf, mjcf_path, actuator=None, *, gravity=(0.0, 0.0, -9.81),
                      timestep=0.00025, initial=None, loops=None, **block_options):
    """The URDF with the ``<ros2_control>`` block added, and the MJCF text.

    Args:
        urdf: URDF XML text (a plain one: an existing ``<ros2_control>`` element is replaced).
        mjcf_path: the file the caller writes the model to (named in the block): ``model.mjb``
            for a ``.mjb`` name, else ``model.mjcf``.
        actuator, gravity, timestep, initial, loops: as :func:`mujoco_model`.
        **block_options: as :func:`ros2_control_block`.

    Returns:
        (urdf_text, model): the URDF for ``robot_description`` and the :class:`CosimModel`.

    Raises:
        CosimModelError: as :func:`mujoco_model`; spherical or floating joints.
    """
    model = mujoco_model(urdf, actuator, gravity=gravity, timestep=timestep, initial=initial,
                         loops=loops)
    if model.lie_joints:
        name, kind = next(iter(model.lie_joints.items()))
        raise CosimModelError(f"joint {name!r}: {kind} joints are in the MuJoCo model "
                              "(mujoco_model) but not in the ros2_control co-simulation, whose "
                              "hardware exposes one position/velocity/effort per joint")
    root = _parse(urdf)
    for el in root.findall("ros2_control"):
        root.remove(el)
    root.append(ros2_control_block(model, mjcf_path, **block_options))
    return ET.tostring(root, encoding="unicode"), model


def write_cosim_files(urdf, folder, actuator=None, *, gravity=(0.0, 0.0, -9.81), loops=None,
                      **block_options):
    """:func:`cosim_description` written to ``folder``: ``description.urdf`` (with the
    ``<ros2_control>`` block), ``model.mjb`` (what the plugin loads), ``model.xml`` (for
    reading) and ``joints.json`` (joint names, elastic flags).

    Returns:
        dict: ``description`` (path), ``model`` (path), ``joints`` (list of names),
        ``elastic`` (bool).

    Raises:
        CosimModelError: as :func:`mujoco_model`.
    """
    import json
    import os

    mjb = os.path.join(folder, "model.mjb")
    description, model = cosim_description(urdf, mjb, actuator, gravity=gravity, loops=loops,
                                           **block_options)
    with open(mjb, "wb") as f:
        f.write(model.mjb)
    with open(os.path.join(folder, "model.xml"), "w", encoding="utf-8") as f:
        f.write(model.mjcf)
    out = {"description": os.path.join(folder, "description.urdf"), "model": mjb,
           "joints": [j.name for j in model.joints],
           "elastic": any(j.elastic for j in model.joints)}
    with open(out["description"], "w", encoding="utf-8") as f:
        f.write(description)
    with open(os.path.join(folder, "joints.json"), "w", encoding="utf-8") as f:
        json.dump(out, f)
    return out


def main(argv=None):
    """``python -m mbs_dynamics.sim.mujoco_model REQUEST.json``: :func:`write_cosim_files` for
    an interpreter that has ``mujoco`` when the launching one has not. The request holds
    ``urdf_file``, ``folder``, ``actuator``, ``gravity``, ``loops`` and the block options;
    exit status 2 and the reason on stderr when the model is refused."""
    import json
    import sys

    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m mbs_dynamics.sim.mujoco_model REQUEST.json", file=sys.stderr)
        return 2
    with open(args[0], encoding="utf-8") as f:
        req = json.load(f)
    with open(req.pop("urdf_file"), encoding="utf-8") as f:
        urdf = f.read()
    try:
        write_cosim_files(urdf, req.pop("folder"), req.pop("actuator", None),
                          gravity=req.pop("gravity", (0.0, 0.0, -9.81)),
                          loops=req.pop("loops", None), **req)
    except CosimModelError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
