"""An adversarial sweep over every joint type on random trees the other joint tests do not use.

Random trees (seeded; several sizes; branches; fixed joints between; random joint origins with
rpy; non-unit and odd axes) mix revolute, continuous, prismatic, fixed, URDF ``planar`` (any
normal), ``universal`` (non-orthogonal axes), ``cylindrical``, ``spherical`` and ``floating``
joints (also consecutive ones and at the root), or — the mimic family, which a spherical joint
cannot join — helical joints written as a revolute joint and a prismatic mimic, with or without
a floating base. Each tree is loaded through the public API (``mbs.load_urdf``) and compared
with a Pinocchio 4.1 model built joint by joint from the same random numbers (never from our
URDF or our model): JointModelRevoluteUnaligned / PrismaticUnaligned / HelicalUnaligned /
Universal / Spherical / FreeFlyer; a planar joint as Pinocchio's chain of two prismatic joints
and a revolute one in the plane normal to the axis (Pinocchio's URDF reader puts every planar
joint in the x–y plane) and once as JointModelPlanar itself; a cylindrical joint as a revolute
and a prismatic joint on one axis.

Checked: frame poses, τ, M, g, forward dynamics, frame Jacobians, twists, accelerations and
Jacobian time variation in the four representations, τ′, τ″ against 8th-order differences of
Pinocchio's τ along q(t) = q₀ ⊕ z(t) (each joint's z_j(t) = (a t + b t² + c t³) ξ_j), the
regressor (Y π = τ), ∂τ/∂(q, v) where Pinocchio is right, energy along a free simulation; DH
tables (both conventions) and zero-reference screws against URDF written here and against the
product of exponentials; bad input."""
from __future__ import annotations

import numpy as np
import pytest

import mbs_dynamics as mbs
from joint_oracle import assert_same_configuration

TOL = 1e-12
D1 = np.array([1 / 280, -4 / 105, 1 / 5, -4 / 5, 0, 4 / 5, -1 / 5, 4 / 105, -1 / 280])
D2 = np.array([-1 / 560, 8 / 315, -1 / 5, 8 / 5, -205 / 72, 8 / 5, -1 / 5, 8 / 315, -1 / 560])
REPS = {"body": "LOCAL", "spatial": "WORLD", "hybrid": "LOCAL_WORLD_ALIGNED"}
LIE_KINDS = ("revolute", "continuous", "prismatic", "fixed", "planar", "universal",
             "cylindrical", "spherical", "floating")
MIMIC_KINDS = ("revolute", "continuous", "prismatic", "fixed", "planar", "universal",
               "cylindrical", "helical")


def _rel(a, b):
    return np.abs(np.asarray(a) - b).max() / max(1.0, np.abs(b).max())


def _rpy(r, p, y):
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    Rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    Ry = np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
    Rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    return Rz @ Ry @ Rx


def _unit(rng):
    e = rng.normal(size=3)
    return e / np.linalg.norm(e)


def _fmt(v):
    return " ".join(repr(float(x)) for x in v)


# --------------------------------------------------------------------------------------------
# random trees: a spec (list of joint dicts in depth-first order) → URDF text and Pinocchio model


def random_tree(seed, n, kinds, first=None, floating_base=False):
    """n joints in a random tree; names j00, j01, … in depth-first order (the package orders
    children by joint name, so its joint order is this one)."""
    rng = np.random.default_rng(seed)
    parent = [-1] + [int(rng.integers(max(0, i - 3), i)) for i in range(1, n + 1)]
    children = {i: [c for c in range(1, n + 1) if parent[c] == i] for i in range(n + 1)}
    order = []

    def dfs(i):
        for c in children[i]:
            order.append(c)
            dfs(c)
    dfs(0)
    label = {0: "base", **{c: f"L{k:02d}" for k, c in enumerate(order)}}
    links = {"base": _inertial(rng) if floating_base else None}
    joints = []
    for k, c in enumerate(order):
        kind = first if (k == 0 and first) else str(rng.choice(kinds))
        j = dict(name=f"j{k:02d}", kind=kind, parent=label[parent[c]], child=label[c],
                 xyz=rng.uniform(-0.4, 0.4, 3), rpy=rng.uniform(-np.pi, np.pi, 3),
                 axis=_unit(rng) * rng.uniform(0.2, 3.0))  # not unit: URDF normalizes
        if rng.uniform() < 0.3:  # an odd axis-aligned one, negative
            j["axis"] = -np.eye(3)[rng.integers(3)] * rng.uniform(0.5, 2)
        e1 = j["axis"] / np.linalg.norm(j["axis"])
        a2 = _unit(rng)
        while abs(a2 @ e1) > 0.9:
            a2 = _unit(rng)
        j["axis2"] = a2 * rng.uniform(0.5, 2)
        j["pitch"] = float(rng.uniform(-0.2, 0.2))
        joints.append(j)
        links[label[c]] = _inertial(rng)
    return dict(joints=joints, links=links, floating_base=floating_base)


def _inertial(rng):
    Q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    return dict(mass=float(rng.uniform(0.5, 2)), com=rng.uniform(-0.15, 0.15, 3),
                rpy=rng.uniform(-1, 1, 3), I=Q @ np.diag(rng.uniform(0.05, 0.09, 3)) @ Q.T)


def tree_urdf(spec):
    out = ['<robot name="sweep">']
    for name, ine in spec["links"].items():
        if ine is None:
            out.append(f'<link name="{name}"/>')
            continue
        I = ine["I"]
        out.append(f'<link name="{name}"><inertial><origin xyz="{_fmt(ine["com"])}" '
                   f'rpy="{_fmt(ine["rpy"])}"/><mass value="{ine["mass"]!r}"/>'
                   '<inertia ixx="{!r}" ixy="{!r}" ixz="{!r}" iyy="{!r}" iyz="{!r}" izz="{!r}"/>'
                   .format(*(float(I[i, k]) for i, k in ((0, 0), (0, 1), (0, 2), (1, 1),
                                                          (1, 2), (2, 2))))
                   + '</inertial></link>')
    for j in spec["joints"]:
        kind, name = j["kind"], j["name"]
        head = (f'<parent link="{j["parent"]}"/><origin xyz="{_fmt(j["xyz"])}" '
                f'rpy="{_fmt(j["rpy"])}"/>')
        lim = '<limit effort="100" velocity="10" lower="-10" upper="10"/>'
        axis = f'<axis xyz="{_fmt(j["axis"])}"/>'
        if kind == "helical":  # a revolute joint and a prismatic one mimicking it
            mid = j["child"] + "_nut"
            out.append(f'<link name="{mid}"/><joint name="{name}" type="revolute">{head}'
                       f'<child link="{mid}"/>{axis}{lim}</joint>'
                       f'<joint name="{name}_pitch" type="prismatic"><parent link="{mid}"/>'
                       f'<child link="{j["child"]}"/>{axis}{lim}<mimic joint="{name}" '
                       f'multiplier="{j["pitch"]!r}"/></joint>')
            continue
        extra = {"revolute": axis + lim, "prismatic": axis + lim, "continuous": axis,
                 "planar": axis, "cylindrical": axis,
                 "universal": axis + f'<axis2 xyz="{_fmt(j["axis2"])}"/>'}.get(kind, "")
        out.append(f'<joint name="{name}" type="{kind}">{head}<child link="{j["child"]}"/>'
                   f'{extra}</joint>')
    return "".join(out) + "</robot>"


def plane_axes(e):
    """The URDF planar joint's in-plane axes (doc/guide/joints.md): u₁ the joint frame's x axis
    projected on the plane (its y axis when |e_x| ≥ 0.9), u₂ = e × u₁."""
    x = np.array([1.0, 0, 0]) if abs(e[0]) < 0.9 else np.array([0, 1.0, 0])
    u1 = x - (x @ e) * e
    u1 /= np.linalg.norm(u1)
    return u1, np.cross(e, u1)


def expected_names(spec):
    suffix = {"planar": ("_x", "_y", "_theta"), "cylindrical": ("_theta", "_d"),
              "universal": ("_1", "_2"), "spherical": ("_rx", "_ry", "_rz"),
              "floating": ("_x", "_y", "_z", "_rx", "_ry", "_rz")}
    out = []
    for j in spec["joints"]:
        if j["kind"] != "fixed":
            out += [j["name"] + s for s in suffix.get(j["kind"], ("",))]
    return tuple(out)


def pin_model(spec, real_planar=False):
    """The tree as a Pinocchio model, joint by joint; every link a frame of its name."""
    pin = pytest.importorskip("pinocchio")
    m = pin.Model()
    m.gravity.linear = np.array([0, 0, -9.81])
    where = {"base": (0, pin.SE3.Identity())}

    def inertia(name):
        ine = spec["links"][name]
        R = _rpy(*ine["rpy"])
        return pin.Inertia(ine["mass"], ine["com"], R @ ine["I"] @ R.T)

    if spec["floating_base"]:
        jb = m.addJoint(0, pin.JointModelFreeFlyer(), pin.SE3.Identity(), "root")
        m.appendBodyToJoint(jb, inertia("base"), pin.SE3.Identity())
        where["base"] = (jb, pin.SE3.Identity())
    m.addFrame(pin.Frame("base", where["base"][0], 0, where["base"][1], pin.FrameType.OP_FRAME))
    for j in spec["joints"]:
        pj, Tp = where[j["parent"]]
        O = Tp * pin.SE3(_rpy(*j["rpy"]), np.asarray(j["xyz"], float))
        e = j["axis"] / np.linalg.norm(j["axis"])
        kind, name = j["kind"], j["name"]
        I3 = pin.SE3.Identity()
        if kind == "fixed":
            jid, place = pj, O
        elif kind in ("revolute", "continuous"):
            jid, place = m.addJoint(pj, pin.JointModelRevoluteUnaligned(e), O, name), I3
        elif kind == "prismatic":
            jid, place = m.addJoint(pj, pin.JointModelPrismaticUnaligned(e), O, name), I3
        elif kind == "helical":
            jid = m.addJoint(pj, pin.JointModelHelicalUnaligned(e, j["pitch"]), O, name)
            place = I3
        elif kind == "universal":
            e2 = j["axis2"] / np.linalg.norm(j["axis2"])
            jid, place = m.addJoint(pj, pin.JointModelUniversal(e, e2), O, name), I3
        elif kind == "cylindrical":
            a = m.addJoint(pj, pin.JointModelRevoluteUnaligned(e), O, name + "_theta")
            jid, place = m.addJoint(a, pin.JointModelPrismaticUnaligned(e), I3, name + "_d"), I3
        elif kind == "planar":
            u1, u2 = plane_axes(e)
            if real_planar:
                Ra = pin.SE3(np.c_[u1, u2, e], np.zeros(3))
                jid = m.addJoint(pj, pin.JointModelPlanar(), O * Ra, name)
                place = Ra.inverse()
            else:
                a = m.addJoint(pj, pin.JointModelPrismaticUnaligned(u1), O, name + "_x")
                b = m.addJoint(a, pin.JointModelPrismaticUnaligned(u2), I3, name + "_y")
                jid = m.addJoint(b, pin.JointModelRevoluteUnaligned(e), I3, name + "_theta")
                place = I3
        elif kind == "spherical":
            jid, place = m.addJoint(pj, pin.JointModelSpherical(), O, name), I3
        elif kind == "floating":
            jid, place = m.addJoint(pj, pin.JointModelFreeFlyer(), O, name), I3
        else:
            raise AssertionError(kind)
        m.appendBodyToJoint(jid, inertia(j["child"]), place)
        where[j["child"]] = (jid, place)
        m.addFrame(pin.Frame(j["child"], jid, 0, place, pin.FrameType.OP_FRAME))
    return m


# --------------------------------------------------------------------------------------------
# the trees

#: (seed, joints, kinds, first joint's kind, floating base)
LIE_TREES = [(1, 4, LIE_KINDS, "spherical", False), (2, 7, LIE_KINDS, "floating", False),
             (3, 10, LIE_KINDS, None, False), (4, 6, ("spherical", "floating", "fixed"),
                                                None, False),
             (5, 12, LIE_KINDS, "planar", False), (6, 20, LIE_KINDS, "universal", False)]
MIMIC_TREES = [(11, 5, MIMIC_KINDS, "helical", False), (12, 8, MIMIC_KINDS, "planar", True),
               (13, 9, MIMIC_KINDS, "helical", True)]
TREES = LIE_TREES + MIMIC_TREES


def _ids(t):
    return f"seed{t[0]}-n{t[1]}" + ("-fb" if t[4] else "") + ("-mimic" if t[2] is MIMIC_KINDS
                                                              else "")


_cache = {}


def _pair(tree):
    pytest.importorskip("pinocchio")
    if tree not in _cache:
        seed, n, kinds, first, fb = tree
        spec = random_tree(seed, n, kinds, first, fb)
        robot = mbs.load_urdf(tree_urdf(spec), floating_base=fb)
        _cache[tree] = spec, robot, pin_model(spec)
    return _cache[tree]


def _random_q(pm, seed):
    """pin.randomConfiguration from a seeded Pinocchio generator (its global one would make the
    states depend on the order the tests run in)."""
    pin = pytest.importorskip("pinocchio")
    pin.seed(int(seed))
    return pin.randomConfiguration(pm, -np.ones(pm.nq), np.ones(pm.nq))


def _states(pm, k, seed):
    rng = np.random.default_rng(seed)
    return [(_random_q(pm, 1000 * seed + i), *rng.normal(size=(2, pm.nv))) for i in range(k)]


def _frames(spec):
    return ["base"] + [j["child"] for j in spec["joints"]][-4:]


def _kinds_present(spec):
    return {j["kind"] for j in spec["joints"]}


def test_the_trees_cover_every_joint_type():
    """The sweep must exercise every type, consecutive Lie joints and a Lie joint at the
    root."""
    seen = set()
    consecutive = False
    for tree in TREES:
        spec = random_tree(*tree)
        seen |= _kinds_present(spec)
        kind = {j["child"]: j["kind"] for j in spec["joints"]}
        consecutive |= any(j["kind"] in ("spherical", "floating")
                           and kind.get(j["parent"]) in ("spherical", "floating")
                           for j in spec["joints"])
    assert seen == set(LIE_KINDS) | {"helical"}
    assert consecutive


@pytest.mark.parametrize("tree", TREES, ids=_ids)
def test_layout_and_core_against_pinocchio(tree):
    """Joint order and sizes, frame poses, τ, M, g and forward dynamics."""
    pin = pytest.importorskip("pinocchio")
    spec, robot, pm = _pair(tree)
    pd = pm.createData()
    assert (robot.nq, robot.nv) == (pm.nq, pm.nv)
    assert robot.joint_names == expected_names(spec)
    if hasattr(robot, "neutral"):  # spherical / floating joints: Pinocchio's group operations
        assert np.array_equal(robot.neutral(), pin.neutral(pm))
        for q, v, _ in _states(pm, 3, tree[0] + 900):
            assert_same_configuration(pm, robot.integrate(q, v), pin.integrate(pm, q, v))
    for q, v, a in _states(pm, 3, tree[0]):
        pin.framesForwardKinematics(pm, pd, q)
        for f in _frames(spec):
            T = pd.oMf[pm.getFrameId(f)].homogeneous
            assert np.abs(robot.frame_placement(q, f) - T).max() <= TOL, f
        tau = pin.rnea(pm, pd, q, v, a)
        assert _rel(robot.inverse_dynamics(q, v, a), tau) <= TOL
        M = pin.crba(pm, pd, q)
        M = np.triu(M) + np.triu(M, 1).T
        assert _rel(robot.mass_matrix(q), M) <= TOL
        g = pin.computeGeneralizedGravity(pm, pd, q)
        assert _rel(robot.gravity_torques(q), g) <= TOL
        ddq = pin.aba(pm, pd, q, v, tau)
        assert _rel(robot.forward_dynamics(q, v, tau), ddq) <= 1e-10


def _has_universal(spec):
    return "universal" in _kinds_present(spec)


@pytest.mark.parametrize("tree", TREES, ids=_ids)
def test_frames_in_four_representations_against_pinocchio(tree):
    """J, the twist, the acceleration and J̇ in body (LOCAL), spatial (WORLD), hybrid
    (LOCAL_WORLD_ALIGNED; its acceleration the classical one) and mixed (ṗ in the world, ω in
    the frame); J̇ also against 8th-order differences of Pinocchio's J along q ⊕ t v (Pinocchio's
    own J̇ is wrong for JointModelUniversal)."""
    pin = pytest.importorskip("pinocchio")
    spec, robot, pm = _pair(tree)
    pd = pm.createData()

    def jac(x, fid, rf):
        pin.computeJointJacobians(pm, pd, x)
        pin.framesForwardKinematics(pm, pd, x)
        return pin.getFrameJacobian(pm, pd, fid, rf)

    h = 1e-3
    for q, v, a in _states(pm, 2, tree[0] + 100):
        for f in _frames(spec)[-2:]:
            fid = pm.getFrameId(f)
            pin.forwardKinematics(pm, pd, q, v, a)
            pin.updateFramePlacements(pm, pd)
            R = pd.oMf[fid].rotation
            ref = {}
            for rep, name in REPS.items():
                rf = getattr(pin.ReferenceFrame, name)
                pin.forwardKinematics(pm, pd, q, v, a)
                pin.updateFramePlacements(pm, pd)
                V = pin.getFrameVelocity(pm, pd, fid, rf).vector
                A = (pin.getFrameClassicalAcceleration(pm, pd, fid, rf) if rep == "hybrid"
                     else pin.getFrameAcceleration(pm, pd, fid, rf)).vector
                J = jac(q, fid, rf)
                ref[rep] = J, V, A
            Jm, Vm, Am = (x.copy() for x in ref["hybrid"])
            Jm[3:], Vm[3:], Am[3:] = R.T @ Jm[3:], R.T @ Vm[3:], R.T @ Am[3:]
            ref["mixed"] = Jm, Vm, Am
            for rep, (J, V, A) in ref.items():
                assert np.abs(robot.frame_jacobian(q, f, rep) - J).max() <= TOL, (f, rep)
                assert _rel(robot.frame_velocity(q, v, f, rep), V) <= TOL, (f, rep)
                assert _rel(robot.frame_acceleration(q, v, a, f, rep), A) <= TOL, (f, rep)
                dJ = robot.frame_jacobian_derivative(q, v, f, rep)
                # Ĵ of the mixed representation: from the hybrid one of neighbouring states
                rf = getattr(pin.ReferenceFrame, REPS.get(rep, "LOCAL_WORLD_ALIGNED"))

                def jr(x):
                    Jx = jac(x, fid, rf)
                    if rep == "mixed":
                        Jx[3:] = pd.oMf[fid].rotation.T @ Jx[3:]
                    return Jx
                fd = sum(c * jr(pin.integrate(pm, q, k * h * v))
                         for c, k in zip(D1, range(-4, 5))) / h
                assert np.abs(dJ - fd).max() <= 1e-9 * max(1, np.abs(fd).max()), (f, rep)
                assert np.abs(dJ @ v - (A - J @ a)).max() <= 1e-11 * max(1, np.abs(A).max())
                if rep != "mixed" and not _has_universal(spec):
                    pin.computeJointJacobiansTimeVariation(pm, pd, q, v)
                    pin.updateFramePlacements(pm, pd)
                    dJp = pin.getFrameJacobianTimeVariation(pm, pd, fid, rf)
                    assert np.abs(dJ - dJp).max() <= TOL * max(1, np.abs(dJp).max()), (f, rep)


def _polynomial_motion(pm, seed):
    """q(t) = q₀ ⊕ z(t), each joint's block z_j(t) = (a t + b t² + c t³) ξ_j with a fixed
    direction ξ_j (a one-parameter subgroup of the spherical and free joints' groups), so
    V^(k)(t) = z^(k+1)(t) exactly; ``tau(t)`` is Pinocchio's τ along it."""
    pin = pytest.importorskip("pinocchio")
    rng = np.random.default_rng(seed)
    q0 = _random_q(pm, seed)
    xi = rng.normal(size=pm.nv)
    nvj = [pm.joints[j].nv for j in range(1, pm.njoints)]
    a, b, c = rng.uniform(-1.5, 1.5, (3, len(nvj)))
    coef = [np.zeros_like(a), a, b, c]

    def z(t, k):
        d = sum(coef[p] * np.prod(range(p - k + 1, p + 1)) * t ** (p - k)
                for p in range(k, 4))
        d = d if np.ndim(d) else np.zeros(len(nvj))
        return np.concatenate([np.full(n, x) for n, x in zip(nvj, d)]) * xi

    pd = pm.createData()

    def tau(t):
        return pin.rnea(pm, pd, pin.integrate(pm, q0, z(t, 0)), z(t, 1), z(t, 2))

    return q0, z, tau


@pytest.mark.parametrize("tree", TREES, ids=_ids)
def test_torque_jets_against_differences_of_pinocchio(tree):
    """τ, τ′, τ″ (jets to order 2) against 8th-order central differences of pin.rnea along a
    cubic motion on the group."""
    pin = pytest.importorskip("pinocchio")
    spec, robot, pm = _pair(tree)
    q0, z, tau = _polynomial_motion(pm, tree[0] + 7)

    hh = 5e-3  # truncation ~h⁸: up to 1.3e-9 relative on the 20-joint tree (|τ| ~ 2e4)
    for t in (0.0, 0.6):
        q = pin.integrate(pm, q0, z(t, 0))
        jet = robot.torque_derivatives((q, np.array([z(t, k) for k in range(1, 5)])))
        T = np.array([tau(t + k * hh) for k in range(-4, 5)])
        assert _rel(jet[0], T[4]) <= TOL
        assert _rel(jet[1], D1 @ T / hh) <= 1e-8
        assert _rel(jet[2], D2 @ T / hh ** 2) <= 1e-7


@pytest.mark.parametrize("tree", TREES, ids=_ids)
def test_regressor_and_derivatives_against_pinocchio(tree):
    """Y π = τ with the package's own inertial parameters; ∂τ/∂(q, v) against
    computeRNEADerivatives (itself wrong for JointModelUniversal, in ∂τ/∂q and ∂τ/∂v: there,
    central differences of pin.rnea along q ⊕ δ and v + δ)."""
    pin = pytest.importorskip("pinocchio")
    spec, robot, pm = _pair(tree)
    pd = pm.createData()
    pi = np.asarray(robot.inertial_parameters()).reshape(-1)
    I = np.eye(pm.nv)
    for q, v, a in _states(pm, 2, tree[0] + 200):
        tau = pin.rnea(pm, pd, q, v, a)
        assert _rel(robot.regressor(q, v, a) @ pi, tau) <= TOL
        if not hasattr(robot, "inverse_dynamics_derivatives"):
            continue
        dq, dv, _ = pin.computeRNEADerivatives(pm, pd, q, v, a)
        if _has_universal(spec):
            hd = 1e-4
            dq = sum(c * np.array([pin.rnea(pm, pd, pin.integrate(pm, q, k * hd * I[j]), v, a)
                                   for j in range(pm.nv)]).T
                     for c, k in zip(D1, range(-4, 5))) / hd
            # τ is quadratic in v: a central difference is exact up to rounding
            dv = np.array([pin.rnea(pm, pd, q, v + I[j], a) - pin.rnea(pm, pd, q, v - I[j], a)
                           for j in range(pm.nv)]).T / 2
        DQ, DV, M = robot.inverse_dynamics_derivatives(q, v, a)
        assert _rel(DQ, dq) <= (1e-9 if _has_universal(spec) else TOL)
        assert _rel(DV, dv) <= TOL


@pytest.mark.parametrize("tree", [t for t in TREES if t[1] <= 8], ids=_ids)
def test_free_motion_conserves_pinocchios_energy(tree):
    """Zero torque under gravity, the package's default integrator for the robot (RK4 in the
    re-centred chart for spherical / floating joints, a Lie-group RKMK scheme for a floating
    base): Pinocchio's kinetic + potential energy stays constant while joules swing between
    the two; the quaternions stay unit."""
    pin = pytest.importorskip("pinocchio")
    spec, robot, pm = _pair(tree)
    pd = pm.createData()
    rng = np.random.default_rng(tree[0] + 300)
    q0 = _random_q(pm, tree[0] + 300)
    z = np.zeros(robot.nv - 6 * tree[4])  # the joints' torque; a floating base is unactuated
    res = mbs.simulate(robot, lambda t, s: z, 0.3, 1e-3, q0=q0,
                       qd0=rng.normal(size=pm.nv))
    Q, V = res.q[::10], res.qd[::10]
    U = np.array([pin.computePotentialEnergy(pm, pd, x) for x in Q])
    E = np.array([pin.computeKineticEnergy(pm, pd, x, y) for x, y in zip(Q, V)]) + U
    assert np.ptp(U) > 0.1
    assert np.ptp(E) < 1e-9 * np.ptp(U)  # measured 1e-13 … 5e-11
    for j in range(1, pm.njoints):
        if pm.joints[j].nq > pm.joints[j].nv:  # a quaternion: the last four of its block
            i = pm.joints[j].idx_q + pm.joints[j].nq
            assert np.abs(np.linalg.norm(res.q[:, i - 4:i], axis=1) - 1).max() < 1e-13


def test_planar_joints_against_pinocchios_planar_joint():
    """The planar joints of one tree as Pinocchio's JointModelPlanar with its plane turned
    normal to the axis: q_pin = (x, y, cos θ, sin θ), v_pin = T v with
    T = diag(R(θ)ᵀ, 1) on the planar block, so τ = Tᵀ τ_pin(q_pin, T v, T a + Ṫ v),
    M = Tᵀ M_pin T, J = J_pin T."""
    pin = pytest.importorskip("pinocchio")
    tree = LIE_TREES[4]
    spec, robot, pm = _pair(tree)
    assert sum(j["kind"] == "planar" for j in spec["joints"]) >= 1
    pp = pin_model(spec, real_planar=True)
    dd = pp.createData()
    blocks = []  # (our q index, our v index, pin q index, pin v index, planar?)
    iq = iv = 0
    for j in spec["joints"]:
        if j["kind"] == "fixed":
            continue
        jp = pp.joints[pp.getJointId(j["name"] if j["kind"] not in ("cylindrical",)
                                     else j["name"] + "_theta")]
        nq, nv = {"planar": (3, 3), "cylindrical": (2, 2), "universal": (2, 2),
                  "spherical": (4, 3), "floating": (7, 6)}.get(j["kind"], (1, 1))
        blocks.append((iq, iv, jp.idx_q, jp.idx_v, nq, nv, j["kind"] == "planar"))
        iq, iv = iq + nq, iv + nv
    assert (iq, iv) == (robot.nq, robot.nv) and pp.nq == robot.nq + sum(b[6] for b in blocks)
    for q, v, a in _states(pm, 3, 18):
        qp, T, Td = np.zeros(pp.nq), np.zeros((pp.nv, robot.nv)), np.zeros((pp.nv, robot.nv))
        for i, k, ip, kp, nq, nv, planar in blocks:
            if planar:
                th, w = q[i + 2], v[k + 2]
                c, s = np.cos(th), np.sin(th)
                qp[ip:ip + 4] = q[i], q[i + 1], c, s
                T[kp:kp + 2, k:k + 2] = [[c, s], [-s, c]]
                Td[kp:kp + 2, k:k + 2] = w * np.array([[-s, c], [-c, -s]])
                T[kp + 2, k + 2] = 1
            else:
                qp[ip:ip + nq] = q[i:i + nq]
                T[kp:kp + nv, k:k + nv] = np.eye(nv)
        tau = T.T @ pin.rnea(pp, dd, qp, T @ v, T @ a + Td @ v)
        assert _rel(robot.inverse_dynamics(q, v, a), tau) <= TOL
        Mp = pin.crba(pp, dd, qp)
        Mp = np.triu(Mp) + np.triu(Mp, 1).T
        assert _rel(robot.mass_matrix(q), T.T @ Mp @ T) <= TOL
        pin.computeJointJacobians(pp, dd, qp)
        pin.framesForwardKinematics(pp, dd, qp)
        for f in _frames(spec):
            J = pin.getFrameJacobian(pp, dd, pp.getFrameId(f), pin.ReferenceFrame.LOCAL) @ T
            assert np.abs(robot.frame_jacobian(q, f) - J).max() <= TOL, f


def test_lie_joints_with_a_floating_base_are_refused_by_name():
    """A spherical / floating joint with floating_base=True: one URDFError naming the joint."""
    spec = random_tree(1, 4, LIE_KINDS, "spherical", True)
    with pytest.raises(mbs.URDFError, match="joint 'j00'.*floating"):
        mbs.load_urdf(tree_urdf(spec), floating_base=True)


# --------------------------------------------------------------------------------------------
# DH tables and zero-reference screws against URDF written here and the product of exponentials


def _Rz(t):
    T = np.eye(4)
    T[:2, :2] = [[np.cos(t), -np.sin(t)], [np.sin(t), np.cos(t)]]
    return T


def _Rx(t):
    T = np.eye(4)
    T[1:3, 1:3] = [[np.cos(t), -np.sin(t)], [np.sin(t), np.cos(t)]]
    return T


def _Tr(x, y, z):
    T = np.eye(4)
    T[:3, 3] = x, y, z
    return T


def _origin(T):
    """``<origin>`` of a 4×4 pose (rpy by Pinocchio's matrixToRpy)."""
    pin = pytest.importorskip("pinocchio")
    return f'<origin xyz="{_fmt(T[:3, 3])}" rpy="{_fmt(pin.rpy.matrixToRpy(T[:3, :3]))}"/>'


def _inertial_xml(d):
    I = d["inertia"]
    return ('<inertial><origin xyz="{}"/><mass value="{!r}"/><inertia ixx="{!r}" ixy="{!r}" '
            'ixz="{!r}" iyy="{!r}" iyz="{!r}" izz="{!r}"/></inertial>').format(
        _fmt(d["com"]), float(d["mass"]), *(float(I[i, k]) for i, k in (
            (0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2))))


def _random_dh(seed, n):
    rng = np.random.default_rng(seed)
    table = np.c_[rng.uniform(-0.5, 0.5, n), rng.uniform(-np.pi, np.pi, n),
                  rng.uniform(-0.5, 0.5, n), rng.uniform(-np.pi, np.pi, n)]
    types = [str(rng.choice(["revolute", "continuous", "prismatic"])) for _ in range(n)]
    ine = []
    for _ in range(n):
        Q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
        ine.append(dict(mass=float(rng.uniform(0.5, 2)), com=rng.uniform(-0.2, 0.2, 3),
                        inertia=Q @ np.diag(rng.uniform(0.05, 0.09, 3)) @ Q.T))
    return table, types, ine


def _dh_pose(table, types, q, convention):
    """Frame i in the base: the product of the DH link transforms (the joint variable added to
    θ or d)."""
    T, out = np.eye(4), []
    for (a, al, d, th), kind, x in zip(table, types, q):
        th, d = (th + x, d) if kind != "prismatic" else (th, d + x)
        T = T @ (_Rz(th) @ _Tr(0, 0, d) @ _Tr(a, 0, 0) @ _Rx(al) if convention == "standard"
                 else _Rx(al) @ _Tr(a, 0, 0) @ _Rz(th) @ _Tr(0, 0, d))
        out.append(T)
    return out


def _dh_equivalent_urdf(table, types, ine, convention):
    """Standard: joint i turns the whole link about z of frame i−1 (its origin the identity),
    then link i is welded at the full DH transform at q = 0. Modified: the joint frame is link
    frame i."""
    out = ['<robot name="dh"><link name="base"/>']
    lim = '<limit effort="1" velocity="1" lower="-100" upper="100"/>'
    for i, ((a, al, d, th), kind, dd) in enumerate(zip(table, types, ine)):
        parent = "base" if i == 0 else f"link{i}"
        jt = "prismatic" if kind == "prismatic" else "revolute"
        if convention == "standard":
            out.append(f'<link name="m{i + 1}"/><joint name="joint{i + 1}" type="{jt}">'
                       f'<parent link="{parent}"/><child link="m{i + 1}"/><axis xyz="0 0 1"/>'
                       f'{lim}</joint><link name="link{i + 1}">{_inertial_xml(dd)}</link>'
                       f'<joint name="w{i + 1}" type="fixed"><parent link="m{i + 1}"/>'
                       f'<child link="link{i + 1}"/>'
                       + _origin(_Rz(th) @ _Tr(0, 0, d) @ _Tr(a, 0, 0) @ _Rx(al)) + '</joint>')
        else:
            out.append(f'<link name="link{i + 1}">{_inertial_xml(dd)}</link>'
                       f'<joint name="joint{i + 1}" type="{jt}"><parent link="{parent}"/>'
                       f'<child link="link{i + 1}"/>'
                       + _origin(_Rx(al) @ _Tr(a, 0, 0) @ _Rz(th) @ _Tr(0, 0, d))
                       + f'<axis xyz="0 0 1"/>{lim}</joint>')
    return "".join(out) + "</robot>"


@pytest.mark.parametrize("convention", ["standard", "modified"])
@pytest.mark.parametrize("seed, n", [(31, 1), (32, 4), (33, 7)])
def test_dh_tables_equal_the_equivalent_urdf(convention, seed, n):
    """Poses against the product of the DH transforms and τ, M against the URDF written here
    (loaded by the package and by Pinocchio), to 1e-13."""
    pytest.importorskip("pinocchio")
    pin = pytest.importorskip("pinocchio")
    table, types, ine = _random_dh(seed, n)
    robot = mbs.from_dh(table, convention, inertials=ine, joint_types=types)
    text = _dh_equivalent_urdf(table, types, ine, convention)
    ref = mbs.load_urdf(text)
    pm = pin.buildModelFromXML(text)
    pd = pm.createData()
    rng = np.random.default_rng(seed)
    for _ in range(3):
        q, v, a = rng.uniform(-2, 2, (3, n))
        for i, T in enumerate(_dh_pose(table, types, q, convention)):
            assert np.abs(robot.frame_placement(q, f"link{i + 1}") - T).max() <= 1e-13
        tau = robot.inverse_dynamics(q, v, a)
        assert _rel(tau, ref.inverse_dynamics(q, v, a)) <= 1e-13
        assert _rel(tau, pin.rnea(pm, pd, q, v, a)) <= TOL
        assert _rel(robot.mass_matrix(q), ref.mass_matrix(q)) <= 1e-13
        assert _rel(mbs.load_urdf(robot.to_urdf()).inverse_dynamics(q, v, a), tau) <= 1e-13


def _screw_se3(Y, q):
    """exp(Ŷ q) as a 4×4 matrix (scipy's expm: an independent exponential)."""
    from scipy.linalg import expm
    v, w = Y[:3], Y[3:]
    X = np.zeros((4, 4))
    X[:3, :3] = [[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]]
    X[:3, 3] = v
    return expm(X * q)


def _random_screws(seed, n, tree):
    rng = np.random.default_rng(seed)
    parent = [-1] + [int(rng.integers(-1, i)) if tree else i - 1 for i in range(1, n)]
    Y, A, ine, kinds = np.zeros((n, 6)), np.zeros((n, 4, 4)), [], []
    for i in range(n):
        e = _unit(rng)
        kind = ["revolute", "prismatic", "helical"][i % 3]
        y = rng.uniform(-0.5, 0.5, 3)
        h = float(rng.uniform(-0.1, 0.1)) if kind == "helical" else 0.0
        Y[i] = np.r_[e, 0, 0, 0] if kind == "prismatic" else np.r_[np.cross(y, e) + h * e, e]
        Q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
        A[i] = np.eye(4)
        A[i, :3, :3] = Q * np.sign(np.linalg.det(Q))
        A[i, :3, 3] = rng.uniform(-0.6, 0.6, 3)
        Qi, _ = np.linalg.qr(rng.normal(size=(3, 3)))
        ine.append(dict(mass=float(rng.uniform(0.5, 2)), com=rng.uniform(-0.1, 0.1, 3),
                        inertia=Qi @ np.diag(rng.uniform(0.05, 0.09, 3)) @ Qi.T))
        kinds.append(kind)
    return Y, A, ine, parent, kinds


def _screws_pin(Y, A, ine, parent, kinds):
    """Pinocchio: every joint frame parallel to the base, on its axis (the foot of the
    perpendicular from the base origin)."""
    pin = pytest.importorskip("pinocchio")
    m = pin.Model()
    m.gravity.linear = np.array([0, 0, -9.81])
    F, jid = [], []
    for i in range(len(Y)):
        v, w = Y[i, :3], Y[i, 3:]
        if kinds[i] == "prismatic":
            p, jm = np.zeros(3), pin.JointModelPrismaticUnaligned(v)
        else:
            h = float(w @ v)
            p = np.cross(w, v - h * w)
            jm = (pin.JointModelHelicalUnaligned(w, h) if kinds[i] == "helical"
                  else pin.JointModelRevoluteUnaligned(w))
        pp = np.zeros(3) if parent[i] < 0 else F[parent[i]]
        jid.append(m.addJoint(0 if parent[i] < 0 else jid[parent[i]], jm,
                              pin.SE3(np.eye(3), p - pp), f"j{i}"))
        F.append(p)
        B = pin.SE3(A[i, :3, :3], A[i, :3, 3] - p)  # body i in its joint frame at q = 0
        m.appendBodyToJoint(jid[i], B.act(pin.Inertia(ine[i]["mass"], ine[i]["com"],
                                                      ine[i]["inertia"])), pin.SE3.Identity())
        m.addFrame(pin.Frame(f"link{i + 1}", jid[i], 0, B, pin.FrameType.OP_FRAME))
    return m


@pytest.mark.parametrize("seed, n, tree", [(41, 3, False), (42, 6, True), (43, 8, True)])
def test_screws_equal_the_product_of_exponentials_and_pinocchio(seed, n, tree):
    """C_i(q) = exp(Y₁q₁)···exp(Y_i q_i) A_i along the body's path to the base (poses to
    1e-13); τ, M against Pinocchio's revolute / prismatic / helical joints. The robot's
    coordinates are in ``joint_names`` order (depth first, children by name — doc/guide/
    joints.md), which on these trees is not the order of Y: q is placed by name."""
    pin = pytest.importorskip("pinocchio")
    Y, A, ine, parent, kinds = _random_screws(seed, n, tree)
    robot = mbs.from_screws(Y, A, inertials=ine, parent=parent)
    pm = _screws_pin(Y, A, ine, parent, kinds)
    pd = pm.createData()
    perm = [robot.joint_names.index(f"joint{i + 1}") for i in range(n)]
    assert sorted(perm) == list(range(n)) and (perm != list(range(n))) == (seed == 43)
    rng = np.random.default_rng(seed)
    for _ in range(3):
        q, v, a = rng.uniform(-2, 2, (3, n))  # in the order of Y
        qr, vr, ar = (np.empty(n) for _ in range(3))
        qr[perm], vr[perm], ar[perm] = q, v, a  # in the robot's order
        pin.framesForwardKinematics(pm, pd, q)
        for i in range(n):
            path, k = [], i
            while k >= 0:
                path.append(k)
                k = parent[k]
            C = np.eye(4)
            for k in reversed(path):
                C = C @ _screw_se3(Y[k], q[k])
            C = C @ A[i]
            assert np.abs(robot.frame_placement(qr, f"link{i + 1}") - C).max() <= 1e-13
            assert np.abs(pd.oMf[pm.getFrameId(f"link{i + 1}")].homogeneous - C).max() <= 1e-12
        tau = pin.rnea(pm, pd, q, v, a)
        assert _rel(robot.inverse_dynamics(qr, vr, ar), tau[np.argsort(perm)]) <= TOL
        # M by columns of RNEA (Pinocchio's CRBA needs its joints added depth first)
        z = np.zeros(n)
        M = np.array([pin.rnea(pm, pd, q, z, e) - pin.rnea(pm, pd, q, z, z) for e in np.eye(n)])
        M = M[np.ix_(np.argsort(perm), np.argsort(perm))]
        assert _rel(robot.mass_matrix(qr), M) <= TOL
        # the written URDF loads to the same robot, and Pinocchio orders it the same way
        text = robot.to_urdf()
        assert _rel(mbs.load_urdf(text).inverse_dynamics(qr, vr, ar),
                    tau[np.argsort(perm)]) <= TOL
        if "helical" not in kinds:
            assert tuple(pin.buildModelFromXML(text).names[1:]) == robot.joint_names


# --------------------------------------------------------------------------------------------
# every capability on the trees: generated C takes them; the others refuse by name


@pytest.mark.parametrize("tree", [LIE_TREES[1], MIMIC_TREES[2]], ids=_ids)
def test_generated_c_against_pinocchio(tree, tmp_path, monkeypatch):
    """Generated C of a tree with spherical / floating / planar / cylindrical joints and of one
    with helical joints on a floating base: τ, M, the body Jacobian against Pinocchio, the
    jets against the robot's (themselves checked above against differences)."""
    import os
    import shutil

    pin = pytest.importorskip("pinocchio")
    if shutil.which(os.environ.get("CC", "cc")) is None:
        pytest.skip("no C compiler")
    from mbs_dynamics import codegen
    monkeypatch.setenv("MBS_DYNAMICS_CACHE", str(tmp_path))
    spec, robot, pm = _pair(tree)
    pd = pm.createData()
    f = _frames(spec)[-1]
    c = codegen.compile(robot, frames=[f])
    for q, v, a in _states(pm, 2, tree[0] + 400):
        assert _rel(c.inverse_dynamics(q, v, a), pin.rnea(pm, pd, q, v, a)) <= TOL
        M = pin.crba(pm, pd, q)
        assert _rel(c.mass_matrix(q), np.triu(M) + np.triu(M, 1).T) <= TOL
        pin.computeJointJacobians(pm, pd, q)
        pin.updateFramePlacements(pm, pd)
        J = pin.getFrameJacobian(pm, pd, pm.getFrameId(f), pin.ReferenceFrame.LOCAL)
        assert np.abs(c.frame_jacobian(q, f) - J).max() <= TOL
        vs = np.random.default_rng(tree[0]).normal(size=(4, pm.nv))
        jet = robot.torque_derivatives((q, vs))
        assert _rel(c.torque_derivatives((q, vs)), jet) <= TOL


def _lie_robot():
    return _pair(LIE_TREES[0])[1]


def _lie_refusals():
    from mbs_dynamics.control.enrich import TrajectoryEnricher
    from mbs_dynamics.identification.excite import excite
    from mbs_dynamics.identification.pipeline import identify
    r = _lie_robot()
    jet = (r.neutral(), np.zeros((4, r.nv)))
    sea = mbs.SEA(stiffness=1000.0, motor_inertia=0.1)
    return {
        "feedforward": lambda: mbs.feedforward(r, jet),
        "sea_feedforward": lambda: mbs.sea_feedforward(r, jet, stiffness=1e3, motor_inertia=0.1),
        "vsa_feedforward": lambda: mbs.vsa_feedforward(r, jet, motor_inertia=0.1),
        "FeedforwardController": lambda: mbs.FeedforwardController(r),
        "FlatnessController": lambda: mbs.FlatnessController(r, sea, bandwidth=10.0,
                                                             damping=1.0),
        "TrajectoryEnricher": lambda: TrajectoryEnricher(r),
        "exciting trajectories": lambda: excite(r),
        "identification from joint logs": lambda: identify(r, "never-read.csv"),
    }


@pytest.mark.parametrize("capability", ["feedforward", "sea_feedforward", "vsa_feedforward",
                                        "FeedforwardController", "FlatnessController",
                                        "TrajectoryEnricher", "exciting trajectories",
                                        "identification from joint logs"])
def test_joint_space_capabilities_refuse_a_spherical_joint_by_name(capability):
    """Capabilities of 1-DOF joint coordinates (feedforward θ = q + K⁻¹τ, controllers,
    Fourier excitation, joint logs): one ValueError naming the capability and the joint — they
    used to run on a quaternion (θ from q[2:], "quaternion not of unit norm" from a Fourier
    series)."""
    pytest.importorskip("pinocchio")
    who = capability if "feedforward" not in capability or capability[0].isupper() \
        else "feedforward"
    with pytest.raises(ValueError, match=f"^{who}: joint 'j00' \\(spherical\\): "):
        _lie_refusals()[capability]()


def test_base_parameters_of_a_robot_with_a_spherical_joint():
    """base_parameters draws its random states on the group (it fed chart angles as a
    quaternion): the base regressor reproduces τ of Pinocchio, and Y π = Y_B β(π) for any π
    at states on the group it never saw."""
    pin = pytest.importorskip("pinocchio")

    from mbs_dynamics.identification import base_parameters
    spec, robot, pm = _pair(LIE_TREES[0])
    pd = pm.createData()
    b = base_parameters(robot)
    pi = np.asarray(robot.inertial_parameters()).reshape(-1)
    other = np.random.default_rng(5).normal(size=pi.shape)
    for q, v, a in _states(pm, 3, 500):
        Y = robot.regressor(q, v, a)
        tau = pin.rnea(pm, pd, q, v, a)
        assert _rel(b.regressor(Y) @ b.to_base(pi), tau) <= 1e-10
        assert _rel(b.regressor(Y) @ b.to_base(other), Y @ other) <= 1e-9


def _info_json(tree, tmp_path, capsys):
    """(robot, URDF path, ``mbs-dynamics info --json`` of the tree)."""
    import json

    from mbs_dynamics import cli
    spec, robot, _ = _pair(tree)
    path = tmp_path / "robot.urdf"
    path.write_text(tree_urdf(spec))
    assert cli.main(["info", str(path), "--json"]) == 0
    return robot, path, json.loads(capsys.readouterr().out)


def test_cli_on_a_robot_with_spherical_and_floating_joints(tmp_path, capsys):
    """info reports the robot's nq, nv and its spherical / floating joints (it printed the
    chart's sizes, nq = nv); kinematics asks for the quaternions by joint; excite, feedforward,
    identify and fleet refuse the joint by name (they complained about the chart joints'
    missing columns or non-unit quaternions)."""
    import json

    from mbs_dynamics import cli
    robot, path, d = _info_json(LIE_TREES[0], tmp_path, capsys)
    assert (d["nq"], d["nv"]) == (robot.nq, robot.nv) == (12, 10)
    assert d["lie_joints"] == {"j00": "spherical", "j01": "floating"}
    assert cli.main(["info", str(path)]) == 0
    assert "configuration: nq = 12, nv = 10; j00 (spherical" in capsys.readouterr().out
    q = " ".join(map(str, robot.neutral()))
    assert cli.main(["kinematics", str(path), "--frame", "L03", "--q", q, "--json"]) == 0
    J = np.array(json.loads(capsys.readouterr().out)["jacobian"])
    assert np.array_equal(J, robot.frame_jacobian(robot.neutral(), "L03"))
    assert cli.main(["kinematics", str(path), "--frame", "L03", "--q", q[:-4]]) == 2
    assert "expected 12 (j00 (qx qy qz qw), j01 (x y z qx qy qz qw), j03)" in \
        capsys.readouterr().err
    # commands of 1-DOF coordinates refuse the joint before reading files of joint names
    (tmp_path / "t.yaml").write_text("joint_names: [j00, j01, j03]\npoints:\n"
                                     "  - {positions: [0, 0, 0], time_from_start: 0.0}\n"
                                     "  - {positions: [0.1, 0.1, 0.1], time_from_start: 1.0}\n")
    (tmp_path / "log.csv").write_text("t,j00,j01,j03\n0,0,0,0\n")
    (tmp_path / "logs" / "r1").mkdir(parents=True)
    out = str(tmp_path / "o")
    for argv, cap in ((["excite", str(path), "-o", out + ".yaml"], "exciting trajectories"),
                      (["feedforward", str(path), str(tmp_path / "t.yaml"), "-o", out + ".csv"],
                       "feedforward"),
                      (["identify", str(path), str(tmp_path / "log.csv"), "-o", out],
                       "identification from joint logs"),
                      (["fleet", str(path), str(tmp_path / "logs"), "-o", out],
                       "identification from joint logs")):
        assert cli.main(argv) == 2
        assert f"{cap}: joint 'j00' (spherical)" in capsys.readouterr().err, argv[0]


def test_info_counts_a_mimic_robots_coordinates(tmp_path, capsys):
    """A helical joint is a revolute joint and a prismatic mimic: nq = nv = the independent
    coordinates."""
    robot, _, d = _info_json(MIMIC_TREES[0], tmp_path, capsys)
    assert (d["nq"], d["nv"]) == (robot.nq, robot.nv) == (5, 5)
    assert d["n"] == 6 and d["lie_joints"] == {}


# --------------------------------------------------------------------------------------------
# bad input: one clear error naming the argument and the row / joint

_INE = [dict(mass=1.0, com=(0, 0, 0), inertia=np.eye(3) * 0.01)] * 3
_TABLE = np.array([[0.1, 0.2, 0.3, 0.4]] * 3)


def _with(table, r, c, x):
    t = np.array(table, dtype=complex if isinstance(x, complex) else float)
    t[r, c] = x
    return t


@pytest.mark.parametrize("kwargs, message", [
    (dict(table=_TABLE[:, :3]), r"shape \(n, 4\).*got shape \(3, 3\)"),
    (dict(table=_TABLE.ravel()), r"shape \(n, 4\).*got shape \(12,\)"),
    (dict(table=_TABLE[None]), r"shape \(n, 4\).*got shape \(1, 3, 4\)"),
    (dict(table=np.zeros((0, 4)), inertials=[]), r"n ≥ 1"),
    (dict(table=[[0, 0, 0, 0], [0, 0, 0]]), r"DH table must be real numbers"),
    (dict(table=_with(_TABLE, 1, 2, np.nan)), r"non-finite d in row 1"),
    (dict(table=_with(_TABLE, 2, 1, -np.inf)), r"non-finite alpha in row 2"),
    (dict(table=_with(_TABLE, 0, 0, 1j)), r"DH table must be real numbers"),
    (dict(convention="craig"), r"unknown DH convention 'craig'"),
    (dict(convention=None), r"unknown DH convention None"),
    (dict(joint_types=["revolute", "spherical", "revolute"]),
     r"joint_types\[1\] = 'spherical'"),
    (dict(inertials=_INE[:2]), r"inertials has 2 entries for 3 links"),
    (dict(limits=np.full((3, 4), np.nan)), r"limits .*got a NaN in row 0"),
    (dict(limits=np.zeros((2, 4))), r"limits .*got shape \(2, 4\)"),
])
def test_bad_dh_input(kwargs, message):
    args = dict(table=_TABLE, convention="standard", inertials=_INE)
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        mbs.from_dh(args.pop("table"), args.pop("convention"), **args)


@pytest.mark.parametrize("Y, A, extra, message", [
    (np.array([[0, 0, 0, 0, 0, 2.0]]), None, {}, r"Y\[0\]: the angular part must be a unit"),
    (np.array([[np.nan, 0, 0, 0, 0, 1.0]]), None, {}, r"Y has a non-finite entry"),
    (np.array([[0, 0, 0, 0, 0, 1j]]), None, {}, r"Y must be real numbers"),
    (np.zeros((1, 5)), None, {}, r"Y must have shape \(n, 6\)"),
    (None, np.diag([1, 1, -1.0, 1])[None], {}, r"A\[0\] is not a rigid transform"),
    (None, None, dict(parent=[0]), r"parent must be 1 integers"),
    (np.array([[0, 0, 1e9, 0, 0, 1.0]]), None, {}, r"joint 'joint1'.*pitch"),
])
def test_bad_screw_input(Y, A, extra, message):
    Y = np.array([[0, 0, 0, 0, 0, 1.0]]) if Y is None else Y
    A = np.eye(4)[None] if A is None else A
    with pytest.raises(ValueError, match=message):
        mbs.from_screws(Y, A, inertials=_INE[:1], **extra)


# --------------------------------------------------------------------------------------------
# external wrenches, batches and the third time derivative on the same trees


@pytest.mark.parametrize("tree", TREES, ids=_ids)
def test_external_wrenches_and_batches_against_pinocchio(tree):
    """f_ext (link → (f, m) in the link frame, links welded by fixed joints included) in τ and
    forward dynamics against Pinocchio's fext (per joint, in the joint frame); batches equal
    the samples."""
    pin = pytest.importorskip("pinocchio")
    spec, robot, pm = _pair(tree)
    pd = pm.createData()
    rng = np.random.default_rng(tree[0] + 600)
    links = [j["child"] for j in spec["joints"]][-3:]
    states = _states(pm, 3, tree[0] + 601)
    for q, v, a in states:
        W = {k: rng.normal(size=6) for k in links}
        fext = [pin.Force.Zero() for _ in range(pm.njoints)]
        for k, w in W.items():
            fr = pm.frames[pm.getFrameId(k)]
            fext[fr.parentJoint] += fr.placement.act(pin.Force(w[:3], w[3:]))
        tau = pin.rnea(pm, pd, q, v, a, fext)
        assert _rel(robot.inverse_dynamics(q, v, a, f_ext=W), tau) <= TOL
        assert _rel(robot.forward_dynamics(q, v, tau, f_ext=W), a) <= 1e-10
    Q, V, A = (np.array(x) for x in zip(*states))
    T = robot.inverse_dynamics(Q, V, A)
    assert T.shape == (3, pm.nv)
    for k in range(3):
        assert np.abs(T[k] - robot.inverse_dynamics(Q[k], V[k], A[k])).max() <= 1e-13
    f = _frames(spec)[-1]
    J = robot.frame_jacobian(Q, f, "hybrid")
    for k in range(3):
        assert np.abs(J[k] - robot.frame_jacobian(Q[k], f, "hybrid")).max() <= 1e-15


D3 = np.array([-7 / 240, 3 / 10, -169 / 120, 61 / 30, 0, -61 / 30, 169 / 120, -3 / 10,
               7 / 240])  # 6th-order third derivative, nodes −4..4


@pytest.mark.parametrize("tree", [LIE_TREES[1], LIE_TREES[4], LIE_TREES[5], MIMIC_TREES[2]],
                         ids=_ids)
def test_third_time_derivative_against_differences(tree):
    """τ‴ (jets of order 3) against 6th-order central differences of Pinocchio's τ."""
    pin = pytest.importorskip("pinocchio")
    spec, robot, pm = _pair(tree)
    q0, z, tau = _polynomial_motion(pm, tree[0] + 9)

    hh = 5e-3
    t = 0.3
    q = pin.integrate(pm, q0, z(t, 0))
    jet = robot.torque_derivatives((q, np.array([z(t, k) for k in range(1, 6)])))
    assert jet.shape == (4, pm.nv)
    T = np.array([tau(t + k * hh) for k in range(-4, 5)])
    assert _rel(jet[3], D3 @ T / hh ** 3) <= 1e-6


def test_tools_reading_the_urdf_text_refuse_a_planar_joint_by_name():
    """The ROS nodes and the MuJoCo model hand the URDF itself to other readers: a planar joint
    (one name, three coordinates) is one error naming it; ``to_urdf()`` (1-DOF joints) is
    taken."""
    spec = random_tree(5, 12, LIE_KINDS, "planar", False)
    spec["joints"] = [j for j in spec["joints"] if j["kind"] not in (
        "spherical", "floating", "universal", "cylindrical")]
    keep = {"base"} | {j["child"] for j in spec["joints"]}
    spec["joints"] = [j for j in spec["joints"] if j["parent"] in keep]
    keep = {"base"} | {j["child"] for j in spec["joints"]}
    spec["links"] = {k: v for k, v in spec["links"].items() if k in keep}
    text = tree_urdf(spec)
    from mbs_dynamics.ros.parameters import load_robot
    with pytest.raises(ValueError, match="joint 'j00' is of type 'planar'.*ROS nodes"):
        load_robot(text, {})
    robot, _ = load_robot(mbs.load_urdf(text).to_urdf(), {})
    assert robot.joint_names[:3] == ("j00_x", "j00_y", "j00_theta")
    pytest.importorskip("mujoco")
    from mbs_dynamics.sim.mujoco_model import CosimModelError, mujoco_model
    with pytest.raises(CosimModelError, match="joint 'j00': planar"):
        mujoco_model(text)


@pytest.mark.parametrize("tree", TREES, ids=_ids)
def test_round_trip_representations_and_fd_derivatives(tree):
    """to_urdf loads to the same robot (poses, τ); τ in the spatial and hybrid recursions
    equals the body one; ∂q̈/∂(q, v) against Pinocchio's computeABADerivatives (not for
    JointModelUniversal, whose derivatives Pinocchio gets wrong)."""
    pin = pytest.importorskip("pinocchio")
    spec, robot, pm = _pair(tree)
    pd = pm.createData()
    again = mbs.load_urdf(robot.to_urdf(), floating_base=tree[4])
    assert again.joint_names == robot.joint_names
    for q, v, a in _states(pm, 2, tree[0] + 700):
        tau = pin.rnea(pm, pd, q, v, a)
        assert _rel(again.inverse_dynamics(q, v, a), tau) <= TOL
        for f in _frames(spec)[-2:]:
            assert np.abs(again.frame_placement(q, f) - robot.frame_placement(q, f)).max() \
                <= 1e-13
        for rep in ("spatial", "hybrid"):
            assert _rel(robot.inverse_dynamics(q, v, a, representation=rep), tau) <= TOL, rep
        if _has_universal(spec):
            continue
        da, dv, _ = pin.computeABADerivatives(pm, pd, q, v, tau)
        DA, DV, Minv = robot.forward_dynamics_derivatives(q, v, tau)
        assert _rel(DA, da) <= 1e-10 and _rel(DV, dv) <= 1e-10


@pytest.mark.parametrize("tree", [LIE_TREES[0], LIE_TREES[3]], ids=_ids)
def test_mujoco_export_of_spherical_and_floating_trees(tree, tmp_path):
    """The MuJoCo model (ball joints; slides + ball for an inner free joint) of random trees:
    MuJoCo's mj_inverse equals Pinocchio's τ through mujoco_state / robot_forces."""
    mujoco = pytest.importorskip("mujoco")
    pin = pytest.importorskip("pinocchio")

    from mbs_dynamics.sim.mujoco_model import mujoco_model, mujoco_state, robot_forces
    spec, robot, pm = _pair(tree)
    if {"planar", "universal", "cylindrical"} & _kinds_present(spec):
        pytest.skip("MuJoCo refuses these (test above)")
    path = tmp_path / "m.mjb"
    path.write_bytes(mujoco_model(tree_urdf(spec)).mjb)
    m = mujoco.MjModel.from_binary_path(str(path))
    d = mujoco.MjData(m)
    pd = pm.createData()
    for q, v, a in _states(pm, 3, tree[0] + 800):
        d.qpos[:], d.qvel[:], d.qacc[:] = mujoco_state(m, robot, q, v, a)
        mujoco.mj_inverse(m, d)
        tau = pin.rnea(pm, pd, q, v, a)
        # MuJoCo keeps each inertia in its principal axes (an eigendecomposition)
        assert _rel(robot_forces(m, robot, q, d.qfrc_inverse), tau) <= 1e-11


@pytest.mark.parametrize("option, got", [
    (dict(actuator=None, integrator="rkmk4-se3"), "integrator='rkmk4-se3'"),
    (dict(actuator="sea"), "actuator"),
    (dict(fext_body=lambda t, s: {}), "fext_body"),
])
def test_simulating_a_spherical_joint_names_the_option_it_cannot_take(option, got):
    pytest.importorskip("pinocchio")
    robot = _lie_robot()
    if option.get("actuator") == "sea":
        option = dict(actuator=mbs.SEA(stiffness=1e3, motor_inertia=0.1))
    z = np.zeros(robot.nv)
    with pytest.raises(ValueError, match=f"^simulate: joint 'j00' \\(spherical\\): .*got {got}"):
        mbs.simulate(robot, lambda t, s: z, 0.01, 1e-3, **option)


def _screws_equivalent_urdf(Y, A, ine, parent, kinds):
    """Joint frames parallel to the base at the foot of the perpendicular from the base origin
    to the axis (the origin for a prismatic joint), each body welded at F_i⁻¹ A_i; a helical
    joint as a revolute joint and a prismatic mimic."""
    lim = '<limit effort="1" velocity="1" lower="-100" upper="100"/>'
    out, F = ['<robot name="s"><link name="base"/>'], []
    for i in range(len(Y)):
        v, w = Y[i, :3], Y[i, 3:]
        p = np.zeros(3) if kinds[i] == "prismatic" else np.cross(w, v - (w @ v) * w)
        F.append(p)
        par = "base" if parent[i] < 0 else f"J{parent[i]}"
        O = np.eye(4)
        O[:3, 3] = p - (np.zeros(3) if parent[i] < 0 else F[parent[i]])
        ax = v if kinds[i] == "prismatic" else w
        jt = "prismatic" if kinds[i] == "prismatic" else "revolute"
        B = np.eye(4)
        B[:3, :3], B[:3, 3] = A[i, :3, :3], A[i, :3, 3] - p
        child = f"J{i}"
        if kinds[i] == "helical":
            out.append(f'<link name="N{i}"/><joint name="joint{i + 1}" type="revolute">'
                       f'<parent link="{par}"/><child link="N{i}"/>{_origin(O)}'
                       f'<axis xyz="{_fmt(ax)}"/>{lim}</joint>'
                       f'<link name="{child}"/><joint name="joint{i + 1}_pitch" '
                       f'type="prismatic"><parent link="N{i}"/><child link="{child}"/>'
                       f'<axis xyz="{_fmt(ax)}"/>{lim}<mimic joint="joint{i + 1}" '
                       f'multiplier="{float(w @ v)!r}"/></joint>')
        else:
            out.append(f'<link name="{child}"/><joint name="joint{i + 1}" type="{jt}">'
                       f'<parent link="{par}"/><child link="{child}"/>{_origin(O)}'
                       f'<axis xyz="{_fmt(ax)}"/>{lim}</joint>')
        out.append(f'<link name="link{i + 1}">{_inertial_xml(ine[i])}</link><joint '
                   f'name="w{i + 1}" type="fixed"><parent link="{child}"/>'
                   f'<child link="link{i + 1}"/>{_origin(B)}</joint>')
    return "".join(out) + "</robot>"


@pytest.mark.parametrize("seed, n, tree", [(41, 3, False), (42, 6, True), (44, 9, False)])
def test_screws_equal_an_equivalent_urdf_written_otherwise(seed, n, tree):
    """from_screws against a URDF with other joint frames (parallel to the base, at the foot
    of the perpendicular from the base origin): poses and τ to 1e-13."""
    pytest.importorskip("pinocchio")
    Y, A, ine, parent, kinds = _random_screws(seed, n, tree)
    robot = mbs.from_screws(Y, A, inertials=ine, parent=parent)
    ref = mbs.load_urdf(_screws_equivalent_urdf(Y, A, ine, parent, kinds))
    assert ref.joint_names == robot.joint_names
    rng = np.random.default_rng(seed)
    for _ in range(3):
        q, v, a = rng.uniform(-2, 2, (3, n))
        for i in range(n):
            f = f"link{i + 1}"
            assert np.abs(robot.frame_placement(q, f) - ref.frame_placement(q, f)).max() \
                <= 1e-13, f
        assert _rel(robot.inverse_dynamics(q, v, a), ref.inverse_dynamics(q, v, a)) <= 1e-13


@pytest.mark.parametrize("tree, joint, kind", [(LIE_TREES[0], "j00", "spherical"),
                                               (LIE_TREES[0], "j01", "floating"),
                                               (LIE_TREES[4], "j00", "planar"),
                                               (LIE_TREES[4], "j06", "universal"),
                                               (LIE_TREES[4], "j02", "cylindrical")])
def test_locking_a_multi_dof_joint_is_one_clear_error(tree, joint, kind):
    """locked_joints takes one position per joint: a multi-DOF joint is refused as such (it was
    called "not movable")."""
    spec = random_tree(*tree)
    assert {j["name"]: j["kind"] for j in spec["joints"]}[joint] == kind
    with pytest.raises(mbs.URDFError, match=f"locked joint '{joint}' is of type '{kind}': "
                                            "locked_joints takes one position"):
        mbs.load_urdf(tree_urdf(spec), locked_joints={joint: 0.1})


@pytest.mark.parametrize("tree, message", [
    (LIE_TREES[0], "calibration: joint 'j00' \\(spherical\\)"),
    (MIMIC_TREES[0], "calibration: mimic joints \\(j00_pitch\\)")])
def test_calibrate_command_refuses_the_joint_before_reading_columns(tree, message, tmp_path,
                                                                    capsys):
    """A measurement CSV with the URDF's own joint names: the joint calibration cannot take is
    the error (it was "missing column(s) j00_rx, ..." of the chart)."""
    import re

    from mbs_dynamics import cli
    spec = random_tree(*tree)
    path = tmp_path / "r.urdf"
    path.write_text(tree_urdf(spec))
    names = [j["name"] for j in spec["joints"] if j["kind"] != "fixed"]
    csv = tmp_path / "m.csv"
    csv.write_text(",".join(names + ["x", "y", "z"]) + "\n"
                   + "\n".join(",".join(["0.1"] * (len(names) + 3)) for _ in range(30)) + "\n")
    assert cli.main(["calibrate", str(path), str(csv), "--frame", spec["joints"][-1]["child"],
                     "-o", str(tmp_path / "out")]) == 2
    assert re.search(message, capsys.readouterr().err)


_BODY = ('<link name="{}"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" '
         'ixz="0" iyz="0"/></inertial></link>')


@pytest.mark.parametrize("kind, extra, clash", [
    ("planar", "", "m_x"), ("universal", '<axis2 xyz="0 1 0"/>', "m_2"),
    ("cylindrical", "", "m_d"), ("spherical", "", "m_rx"), ("floating", "", "m_z")])
@pytest.mark.parametrize("below", [True, False])
def test_a_urdf_joint_named_like_a_multi_dof_joints_part_is_refused(kind, extra, clash, below):
    """A planar joint 'm' is the joints m_x, m_y, m_theta: a URDF joint already called m_x
    gave two joints of one name (every name-based call then picks one); now one URDFError."""
    text = ('<robot name="r"><link name="a"/>' + _BODY.format("b") + _BODY.format("c")
            + f'<joint name="m" type="{kind}"><parent link="a"/><child link="b"/>'
            f'<axis xyz="1 0 0"/>{extra}</joint><joint name="{clash}" type="revolute">'
            f'<parent link="{"b" if below else "a"}"/><child link="c"/><axis xyz="0 0 1"/>'
            '<limit effort="1" velocity="1" lower="-1" upper="1"/></joint></robot>')
    with pytest.raises(mbs.URDFError, match=f"joint 'm' \\({kind}\\) names its 1-DOF joints "
                                            f".*already has a joint '{clash}'"):
        mbs.load_urdf(text)


@pytest.mark.parametrize("tree", [LIE_TREES[1], LIE_TREES[4], MIMIC_TREES[0], MIMIC_TREES[1]],
                         ids=_ids)
def test_torque_jets_with_wrench_jets_against_differences(tree):
    """τ, τ′, τ″ with f_ext jets (W, W′, W″ per link, in the link frame) against 8th-order
    differences of Pinocchio's τ with fext(t) along the cubic motion on the group."""
    pin = pytest.importorskip("pinocchio")
    spec, robot, pm = _pair(tree)
    pd = pm.createData()
    q0, z, _ = _polynomial_motion(pm, tree[0] + 11)
    rng = np.random.default_rng(tree[0])
    coef = {k: rng.normal(size=(3, 6)) for k in [j["child"] for j in spec["joints"]][-2:]}

    def wrench(k, t, d=0):
        c = coef[k]
        return (c[0] + c[1] * t + c[2] * t * t / 2, c[1] + c[2] * t, c[2])[d]

    def tau(t):
        fext = [pin.Force.Zero() for _ in range(pm.njoints)]
        for k in coef:
            fr, w = pm.frames[pm.getFrameId(k)], wrench(k, t)
            fext[fr.parentJoint] += fr.placement.act(pin.Force(w[:3], w[3:]))
        return pin.rnea(pm, pd, pin.integrate(pm, q0, z(t, 0)), z(t, 1), z(t, 2), fext)

    t, hh = 0.4, 5e-3
    jet = robot.torque_derivatives(
        (pin.integrate(pm, q0, z(t, 0)), np.array([z(t, k) for k in range(1, 5)])),
        f_ext={k: np.array([wrench(k, t, d) for d in range(3)]) for k in coef})
    T = np.array([tau(t + k * hh) for k in range(-4, 5)])
    assert _rel(jet[0], T[4]) <= TOL
    assert _rel(jet[1], D1 @ T / hh) <= 1e-9
    assert _rel(jet[2], D2 @ T / hh ** 2) <= 1e-8


@pytest.mark.parametrize("tree", [MIMIC_TREES[0], MIMIC_TREES[2]], ids=_ids)
def test_flatness_controller_on_helical_joints(tree):
    """FlatnessController on a robot with helical (mimic) joints (it raised AttributeError: no
    compiled workspace): on the trajectory, with no hold, its command is the SEA feedforward's
    motor torque τ_m = Bθ″ + τ_e."""
    pytest.importorskip("pinocchio")
    spec, robot, pm = _pair(tree)
    if robot.floating_base:
        robot = mbs.load_urdf(tree_urdf(spec))  # joint-space control: a fixed base
    K, B = 800.0, 0.2
    c = mbs.FlatnessController(robot, stiffness=K, motor_inertia=B, bandwidth=10.0,
                               damping=1.0, sample_time=0.0, delay=0.0)
    qs = 0.5 * np.random.default_rng(tree[0]).normal(size=(5, robot.n))
    ff = mbs.sea_feedforward(robot, qs, stiffness=K, motor_inertia=B)
    u = c.command(qs[0], qs[1], ff.theta, ff.theta_dot, qs)
    assert _rel(u, ff.tau_motor) <= 1e-11
