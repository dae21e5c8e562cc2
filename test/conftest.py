"""Shared test fixtures: example-robot-data paths, Pinocchio twins of our models, random URDFs."""
from __future__ import annotations

import math
import os
import sys

import numpy as np
import pytest


def _keep_the_checkout_out():
    """The tests import the *installed* package. ``python -m pytest`` and ``colcon test`` start
    in the checkout, whose ``mbs_dynamics/`` has no compiled kernels unless it was built in place
    (``pip install -e``, ``colcon build --symlink-install``): then the checkout must not shadow
    the installed package, so it is taken off ``sys.path`` (as ``''`` or as a path)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    pkg = os.path.join(root, "mbs_dynamics", "kernels")
    built = os.path.isdir(pkg) and any(f.startswith("_rnea.") and f.endswith((".so", ".pyd"))
                                       for f in os.listdir(pkg))
    if not built and "mbs_dynamics" not in sys.modules:
        sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.getcwd()) != root]


_keep_the_checkout_out()


def _rooms_on_the_path():
    """The tests mirror the package's rooms (test/kernels, test/model, …); a room's oracles
    (e.g. test_mimic's Pinocchio twins, test_floating_base's states) serve the others, so every
    room folder is importable by module name, as test/ itself is."""
    here = os.path.dirname(os.path.abspath(__file__))
    for name in sorted(os.listdir(here)):
        d = os.path.join(here, name)
        if os.path.isdir(d) and not name.startswith(("_", ".")) and d not in sys.path:
            sys.path.append(d)


_rooms_on_the_path()


# ---- ROS 2 tests: the ``ros`` marker ------------------------------------------------------------
# A test that needs ROS 2 (rclpy, launch_testing, control_msgs, ros2_control) carries the ``ros``
# marker: ``pytestmark = pytest.mark.ros`` in its module, ``@pytest.mark.ros`` on a test, and on a
# launch test's ``generate_test_description`` (launch_testing's plugin hands those marks to its
# items). Where rclpy cannot be found, those tests are *deselected* (counted as "deselected", not
# as skipped). ``pytest -m ros`` selects only them. With ``MBS_REQUIRE_ROS=1`` (CI's ROS run) a
# missing rclpy or launch_testing plugin is a usage error, a ROS test module whose ROS imports
# failed is an error, and a ``ros`` test that skips fails: nothing is skipped for want of ROS.

def _flag(name):
    """An environment switch: set to anything but empty or 0."""
    return os.environ.get(name, "").strip() not in ("", "0")


def _ros_required():
    return _flag("MBS_REQUIRE_ROS")


def _deselect(config, items, chosen):
    """Report ``chosen`` as deselected and drop them from ``items`` (in place)."""
    config.hook.pytest_deselected(items=chosen)
    drop = set(map(id, chosen))
    items[:] = [it for it in items if id(it) not in drop]


def ros_available():
    """Whether rclpy can be found by this interpreter (found, not imported: no ROS start-up)."""
    import importlib.util
    try:
        return importlib.util.find_spec("rclpy") is not None
    except (ImportError, ValueError):
        return False


def _isolate_ros_domain():
    """The ROS tests talk only to themselves: one DDS domain for the whole run,
    ``MBS_TEST_ROS_DOMAIN_ID`` if set (CI sets one), else 1 + pid mod 100 — never the shell's
    ``ROS_DOMAIN_ID``, which may be a robot's — and discovery on this machine only (what
    ``ROS_AUTOMATIC_DISCOVERY_RANGE`` says if set, as in ROS's env; else LOCALHOST). The launch
    tests' modules read the same variable (they also run alone under ``launch_test``)."""
    domain = os.environ.get("MBS_TEST_ROS_DOMAIN_ID") or str(1 + os.getpid() % 100)
    if not (domain.isdigit() and 0 <= int(domain) <= 232):
        raise pytest.UsageError(f"MBS_TEST_ROS_DOMAIN_ID={domain!r}: a ROS domain id is an "
                                "integer in 0..232 (0..101 is safe on Linux)")
    os.environ["MBS_TEST_ROS_DOMAIN_ID"] = os.environ["ROS_DOMAIN_ID"] = domain
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")


def pytest_configure(config):
    if ros_available():
        _isolate_ros_domain()
    if _ros_required():
        if not ros_available():
            raise pytest.UsageError(
                "MBS_REQUIRE_ROS is set but rclpy cannot be imported: source ROS 2's setup "
                "(env.sh) and use the Python that built it")
        if not config.pluginmanager.hasplugin("launch_testing"):
            raise pytest.UsageError(
                "MBS_REQUIRE_ROS is set but launch_testing's pytest plugin is not loaded "
                "(launch_testing missing, or disabled with -p no:launch_testing)")


def _ros_test_module(item):
    """The Python module of a test item; launch_testing's items are named after theirs."""
    mod = getattr(item, "module", None)
    return mod if mod is not None else sys.modules.get(item.name)


def gazebo_available():
    """Whether gz_ros2_control and ros_gz_sim are on the sourced ament prefixes (no import)."""
    prefixes = [p for p in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p]
    return all(any(os.path.isdir(os.path.join(p, "share", pkg)) for p in prefixes)
               for pkg in ("gz_ros2_control", "ros_gz_sim"))


def pytest_collection_modifyitems(config, items):
    # Gazebo is not part of the ROS requirement (CI has no Gazebo): its tests are deselected
    # where it is not sourced, and MBS_REQUIRE_GAZEBO=1 makes that a usage error.
    gz = [it for it in items if it.get_closest_marker("gazebo") is not None]
    if gz and not gazebo_available():
        if _flag("MBS_REQUIRE_GAZEBO"):
            raise pytest.UsageError("MBS_REQUIRE_GAZEBO is set but gz_ros2_control / ros_gz_sim "
                                    "are not on AMENT_PREFIX_PATH (source Gazebo's ROS overlay)")
        _deselect(config, items, gz)
    ros = [it for it in items if it.get_closest_marker("ros") is not None]
    if not ros:
        return
    if not ros_available():
        _deselect(config, items, ros)
        return
    if _ros_required():
        broken = sorted({f"{it.nodeid.split('::')[0]}: {mod._MISSING}" for it in ros
                         for mod in [_ros_test_module(it)]
                         if mod is not None and getattr(mod, "_MISSING", "")})
        if broken:
            raise pytest.UsageError("MBS_REQUIRE_ROS: ROS imports failed in\n  "
                                    + "\n  ".join(broken))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if (rep.skipped and not hasattr(rep, "wasxfail") and _ros_required()
            and item.get_closest_marker("ros") is not None):
        reason = rep.longrepr[2] if isinstance(rep.longrepr, tuple) else str(rep.longrepr)
        rep.outcome = "failed"
        rep.longrepr = f"a ROS test skipped in a run that requires ROS 2 (MBS_REQUIRE_ROS): {reason}"


def erd_path(rel):
    """Path of a URDF shipped by the example-robot-data wheel (skips if it is not installed)."""
    pin = pytest.importorskip("pinocchio")
    from pathlib import Path
    for root in [Path(pin.__file__).parents[4]] + [Path(p).parents[2] for p in sys.path if p.endswith("site-packages") and "cmeel.prefix" in p]:
        f = root / "share/example-robot-data/robots" / rel
        if f.exists():
            return str(f)
    pytest.skip(f"example-robot-data not installed ({rel})")


# the robots of the oracle tests: (name, urdf, locked joints)
PANDA = ("panda_description/urdf/panda.urdf",
         {"panda_finger_joint1": 0.0, "panda_finger_joint2": 0.0})
UR5 = ("ur_description/urdf/ur5_robot.urdf", {})
BAXTER = ("baxter_description/urdf/baxter.urdf",
          {"l_gripper_l_finger_joint": 0.0, "l_gripper_r_finger_joint": 0.0,
           "r_gripper_l_finger_joint": 0.0, "r_gripper_r_finger_joint": 0.0})


def pin_model(urdf, locked=None, gravity=(0, 0, -9.81)):
    """Pinocchio's model of the same URDF (file path or XML text), reduced like ours."""
    pin = pytest.importorskip("pinocchio")
    m = (pin.buildModelFromUrdf(urdf) if os.path.exists(urdf)
         else pin.buildModelFromXML(urdf))
    if locked:
        q0 = pin.neutral(m)
        for name, v in locked.items():
            j = m.joints[m.getJointId(name)]
            if j.nq == 2:
                q0[j.idx_q:j.idx_q + 2] = (math.cos(v), math.sin(v))
            else:
                q0[j.idx_q] = v
        m = pin.buildReducedModel(m, [m.getJointId(n) for n in locked], q0)
    m.gravity.linear = np.asarray(gravity, dtype=float)
    return m


def pin_q(pm, q):
    """Our q (one coordinate per joint) → Pinocchio's configuration (continuous: cos, sin)."""
    out = np.empty(pm.nq)
    for j, x in zip(pm.joints[1:], q):
        if j.nq == 2:
            out[j.idx_q:j.idx_q + 2] = (math.cos(x), math.sin(x))
        else:
            out[j.idx_q] = x
    return out


def sym(M):
    """Pinocchio fills only the upper triangle of M in crba / computeRNEADerivatives."""
    return np.triu(M) + np.triu(M, 1).T


def _rpy(rng):
    return " ".join(f"{x:.6f}" for x in rng.uniform(-math.pi, math.pi, 3))


def _xyz(rng, s=0.3):
    return " ".join(f"{x:.6f}" for x in rng.uniform(-s, s, 3))


def random_urdf(seed, n_movable=22, branch_prob=0.3, fixed_prob=0.25, prismatic_prob=0.25,
                continuous_prob=0.15, massless_prob=0.1):
    """A random tree URDF: oblique axes, prismatic and continuous joints, rotated inertial
    frames, fixed joints mid-chain, massless links, several branches.

    Returns (xml, movable joint names)."""
    rng = np.random.default_rng(seed)
    links, joints, movable = ["base"], [], []
    parents = ["base"]

    def inertial(jt):
        # massless links only behind fixed joints, so that M stays positive definite
        if jt == "fixed" and rng.uniform() < massless_prob * 3:
            return ""
        m = rng.uniform(0.2, 3.0)
        # a physical inertia: principal moments satisfying the triangle inequality
        a, b = rng.uniform(0.01, 0.1, 2)
        c = rng.uniform(abs(a - b) + 1e-3, a + b)
        return (f'<inertial><origin xyz="{_xyz(rng, 0.2)}" rpy="{_rpy(rng)}"/><mass value="{m:.6f}"/>'
                f'<inertia ixx="{a:.6f}" ixy="0" ixz="0" iyy="{b:.6f}" iyz="0" izz="{c:.6f}"/></inertial>')

    k = 0
    while len(movable) < n_movable:
        k += 1
        parent = rng.choice(parents) if rng.uniform() < branch_prob else parents[-1]
        child = f"l{k}"
        u = rng.uniform()
        if u < fixed_prob:
            jt = "fixed"
        elif u < fixed_prob + prismatic_prob * (1 - fixed_prob):
            jt = "prismatic"
        elif rng.uniform() < continuous_prob:
            jt = "continuous"
        else:
            jt = "revolute"
        ax = rng.normal(size=3)
        ax /= np.linalg.norm(ax)
        lim = '<limit lower="-2" upper="2" effort="100" velocity="3"/>' if jt in ("revolute", "prismatic") else ""
        joints.append(
            f'<joint name="j{k}" type="{jt}"><parent link="{parent}"/><child link="{child}"/>'
            f'<origin xyz="{_xyz(rng)}" rpy="{_rpy(rng)}"/>'
            f'<axis xyz="{ax[0]:.6f} {ax[1]:.6f} {ax[2]:.6f}"/>{lim}</joint>')
        links.append(f'<link name="{child}">{inertial(jt)}</link>')
        parents.append(child)
        if jt != "fixed":
            movable.append(f"j{k}")
    body = "".join(f'<link name="{ln}"/>' if ln == "base" else ln for ln in links)
    return f'<?xml version="1.0"?><robot name="random{seed}">{body}{"".join(joints)}</robot>', movable


def trajectory(n, seed, order=5, scale=1.0):
    """An analytic trajectory: q(t) = Σ_j a_j sin(ω_j t + φ_j) per joint, with its exact
    derivatives; returns a function t → (order, n) array (q, q', …)."""
    rng = np.random.default_rng(seed)
    A = rng.uniform(0.2, 0.8, (3, n)) * scale
    w = rng.uniform(0.5, 2.5, (3, n))
    ph = rng.uniform(0, 2 * math.pi, (3, n))

    def at(t):
        out = np.empty((order, n))
        for d in range(order):
            out[d] = (A * w ** d * np.sin(w * t + ph + d * math.pi / 2)).sum(axis=0)
        return out
    return at


class LazyModule:
    """A module imported on first attribute access, skipping the *test* that touches it when it
    is missing (a module-level ``pytest.importorskip`` would skip the whole collection under
    launch_testing's pytest plugin)."""

    def __init__(self, name):
        self._name = name

    def __getattr__(self, attr):
        return getattr(pytest.importorskip(self._name), attr)
