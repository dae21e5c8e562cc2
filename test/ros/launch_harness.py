"""What the ROS 2 tests (test/ros) share: one guard for their ROS imports, the planar two-link arm
of the feedforward tests with its closed-form dynamics, the boilerplate of the launch tests, and
waits with deadlines generous enough for a loaded machine.

Imported by module name: test/conftest.py puts every test room (test/ros too) on ``sys.path``, and
pytest (or launch_testing's plugin) importing a test module from test/ros puts its folder there.

**The guard.** ``MISSING`` is ``""`` when everything the ROS tests import is importable, else the
first ImportError's text; then the ROS names below are ``None``. A test module binds it as its
``_MISSING`` (test/conftest.py reads that under ``MBS_REQUIRE_ROS=1``) and skips per test or per
class (the autouse fixture :func:`needs_ros`, imported by the module; :data:`skip_without_ros`
for launch tests), never at module level (test/test_structure.py). (No conftest module in this folder:
a second module named ``conftest`` would shadow test/conftest.py for ``from conftest import``.)

**Loaded machines.** CI's ROS run shares 2 cores with other work (load 8-14 seen): a probe's
callbacks lag seconds behind a 1 kHz publisher, discovery takes seconds, a node starts late. So
waits poll a condition up to :data:`DEADLINE` seconds (they return as soon as it holds), never
sleep a fixed time and then count.
"""
from __future__ import annotations

import math
import os
import tempfile
import threading
import time
import unittest

import numpy as np
import pytest

DEADLINE = 120.0
"""Seconds a wait may take before the test fails: ~30x what an idle machine needs."""

_ROS_NAMES = (
    "rclpy", "launch", "launch_testing", "Parameter", "Duration", "Time",
    "SingleThreadedExecutor", "MultiThreadedExecutor", "ReentrantCallbackGroup",
    "ActionServer", "CancelResponse", "GoalResponse", "DurabilityPolicy", "QoSProfile",
    "ReliabilityPolicy", "GoalStatus", "DurationMsg", "FollowJointTrajectory",
    "JointTolerance", "JointTrajectoryControllerState", "DiagnosticArray", "Clock", "JointState",
    "Float64MultiArray", "String", "JointTrajectory", "JointTrajectoryPoint",
    "IncludeLaunchDescription", "PythonLaunchDescriptionSource", "Node", "LockedActionClient")

MISSING = ""
try:  # ROS 2 (with launch_testing and control_msgs) is optional: see the module docstring
    import launch
    import launch_testing
    import launch_testing.actions
    import launch_testing.asserts
    import rclpy
    from action_msgs.msg import GoalStatus
    from builtin_interfaces.msg import Duration as DurationMsg
    from control_msgs.action import FollowJointTrajectory
    from control_msgs.msg import JointTolerance, JointTrajectoryControllerState
    from diagnostic_msgs.msg import DiagnosticArray
    from launch.actions import IncludeLaunchDescription
    from launch.launch_description_sources import PythonLaunchDescriptionSource
    from launch_ros.actions import Node
    from rclpy.action import ActionServer, CancelResponse, GoalResponse
    from rclpy.callback_groups import ReentrantCallbackGroup
    from rclpy.duration import Duration
    from rclpy.executors import MultiThreadedExecutor, SingleThreadedExecutor
    from rclpy.parameter import Parameter
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from rclpy.time import Time
    from rosgraph_msgs.msg import Clock
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray, String
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    from mbs_dynamics.ros.feedforward_proxy import LockedActionClient
except ImportError as exc:
    MISSING = str(exc)
    for _name in _ROS_NAMES:
        globals().setdefault(_name, None)

try:  # Kilted and later
    from launch_testing_ros.actions import EnableRmwIsolation
except ImportError:  # Jazzy: isolate by a per-process domain id instead (see test/conftest.py)
    EnableRmwIsolation = None
    os.environ["ROS_DOMAIN_ID"] = (os.environ.get("MBS_TEST_ROS_DOMAIN_ID")
                                   or str(1 + os.getpid() % 100))

@pytest.fixture(autouse=True)
def needs_ros(request):
    """Autouse where imported: skip each test of a module whose ``_MISSING`` is set."""
    missing = getattr(request.module, "_MISSING", "")
    if missing:
        pytest.skip(f"ROS 2 is not available here ({missing})")


skip_without_ros = unittest.skipIf(bool(MISSING), f"ROS 2 / launch_testing missing: {MISSING}")
"""Class decorator of the launch tests' unittest cases (the plugin runs no pytest fixtures)."""


def post_shutdown_test():
    """launch_testing's post-shutdown marker, or nothing where launch_testing is missing."""
    if MISSING:
        return lambda cls: cls
    return launch_testing.post_shutdown_test()


# ---- the planar two-link arm --------------------------------------------------------------------
# Joints about +x, links along +y, gravity -z: the textbook closed form of Spong, Hutchinson,
# Vidyasagar, *Robot Modeling and Control*, §7.4, is the oracle of every torque.
M1, M2, L1, LC1, LC2, I1, I2, G = 2.0, 1.5, 0.6, 0.3, 0.25, 0.05, 0.03, 9.81
JOINTS = ["shoulder", "elbow"]
TWO_LINK_BODY = f"""
  <link name="base"/>
  <link name="link1"><inertial><origin xyz="0 {LC1} 0"/><mass value="{M1}"/>
    <inertia ixx="{I1}" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
  <link name="link2"><inertial><origin xyz="0 {LC2} 0"/><mass value="{M2}"/>
    <inertia ixx="{I2}" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
  <joint name="shoulder" type="revolute"><parent link="base"/><child link="link1"/>
    <origin xyz="0 0 0"/><axis xyz="1 0 0"/>
    <limit lower="-3" upper="3" effort="100" velocity="5"/></joint>
  <joint name="elbow" type="revolute"><parent link="link1"/><child link="link2"/>
    <origin xyz="0 {L1} 0"/><axis xyz="1 0 0"/>
    <limit lower="-3" upper="3" effort="100" velocity="5"/></joint>
"""


def two_link_urdf(extra=""):
    """The arm's URDF; ``extra`` goes inside ``<robot>`` after the links (a ros2_control tag)."""
    return f'<?xml version="1.0"?>\n<robot name="two_link">{TWO_LINK_BODY}{extra}</robot>\n'


URDF = two_link_urdf()


def two_link_tau(q, qd, qdd):
    """Closed-form inverse dynamics τ = M(q) q̈ + C(q, q̇) q̇ + g(q) of the arm (Spong et al.,
    §7.4; angles from +y toward +z) [N m]."""
    c2, s2 = math.cos(q[1]), math.sin(q[1])
    m11 = I1 + I2 + M1 * LC1 ** 2 + M2 * (L1 ** 2 + LC2 ** 2 + 2 * L1 * LC2 * c2)
    m12 = I2 + M2 * (LC2 ** 2 + L1 * LC2 * c2)
    m22 = I2 + M2 * LC2 ** 2
    h = -M2 * L1 * LC2 * s2
    g1 = (M1 * LC1 + M2 * L1) * G * math.cos(q[0]) + M2 * LC2 * G * math.cos(q[0] + q[1])
    g2 = M2 * LC2 * G * math.cos(q[0] + q[1])
    return np.array([m11 * qdd[0] + m12 * qdd[1] + h * qd[1] ** 2 + 2 * h * qd[0] * qd[1] + g1,
                     m12 * qdd[0] + m22 * qdd[1] - h * qd[0] ** 2 + g2])


def gravity_torque(q):
    """g(q) of the arm: :func:`two_link_tau` at rest [N m]."""
    return two_link_tau(q, (0.0, 0.0), (0.0, 0.0))


def point(t, q):
    """A JointTrajectoryPoint at ``t`` s holding positions ``q``."""
    p = JointTrajectoryPoint()
    p.positions = [float(x) for x in q]
    sec = int(math.floor(t))
    p.time_from_start = DurationMsg(sec=sec, nanosec=int(round((t - sec) * 1e9)))
    return p


def seconds(d):
    """A builtin_interfaces Duration or Time in seconds."""
    return d.sec + 1e-9 * d.nanosec


# A single link about a vertical axis (sim_node's tests): J = 0.04 + 2 * 0.3² kg m² about it
ONE_LINK = """<robot name="one"><link name="base"/>
  <joint name="j" type="continuous"><parent link="base"/><child link="l"/>
    <origin xyz="0 0 0.1" rpy="0 0 0"/><axis xyz="0 0 1"/></joint>
  <link name="l"><inertial><origin xyz="0.3 0 0" rpy="0 0 0"/><mass value="2"/>
    <inertia ixx="0.02" ixy="0" ixz="0" iyy="0.03" iyz="0" izz="0.04"/></inertial></link>
</robot>"""


# ---- launch descriptions ------------------------------------------------------------------------
def launch_file(name):
    """The installed launch file (tests the install rules), else the one in the source tree."""
    try:
        from ament_index_python.packages import get_package_share_directory
        path = os.path.join(get_package_share_directory("mbs_dynamics"), "launch", name)
        if os.path.exists(path):
            return path
    except (ImportError, LookupError):
        pass
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "launch", name)


def temp_file(text, suffix):
    """``text`` in a new temporary file; its path (the post-shutdown test removes it)."""
    with tempfile.NamedTemporaryFile("w", suffix=suffix, delete=False) as f:
        f.write(text)
    return f.name


def include(name, **arguments):
    """Include the package's launch file ``name`` with these launch arguments."""
    return IncludeLaunchDescription(PythonLaunchDescriptionSource(launch_file(name)),
                                    launch_arguments=arguments.items())


def describe_launch(*actions):
    """The LaunchDescription of a launch test: RMW isolation where the ROS release has it,
    ``actions``, then ReadyToTest."""
    head = [] if EnableRmwIsolation is None else [EnableRmwIsolation()]
    return launch.LaunchDescription(head + list(actions)
                                    + [launch_testing.actions.ReadyToTest()])



# ---- waiting ------------------------------------------------------------------------------------
def wait_until(predicate, timeout=DEADLINE, period=0.01):
    """Poll ``predicate()`` until it holds (True) or ``timeout`` s pass (its last value)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(period)
    return predicate()


def wait_future(future, timeout=DEADLINE):
    """``future``'s result once done; AssertionError after ``timeout`` s."""
    if not wait_until(future.done, timeout, period=0.005):
        raise AssertionError(f"timed out after {timeout:g} s waiting for {future!r}")
    return future.result()


def wait_matched(endpoints, timeout=DEADLINE):
    """Wait until every publisher in ``endpoints`` has a subscriber and every subscription a
    publisher (discovery): a message sent before that is lost. AssertionError on timeout."""
    def count(e):
        return (e.get_subscription_count() if hasattr(e, "get_subscription_count")
                else e.get_publisher_count())
    if not wait_until(lambda: all(count(e) > 0 for e in endpoints), timeout, period=0.02):
        raise AssertionError("discovery: not matched within "
                             f"{timeout:g} s: {[e.topic_name for e in endpoints if not count(e)]}")


def spin_in_background(executor):
    """Spin ``executor`` in a daemon thread (returned, started) until it is shut down."""
    def spin():
        try:
            executor.spin()
        except Exception:  # noqa: BLE001 - ExternalShutdownException at shutdown
            pass
    thread = threading.Thread(target=spin, daemon=True)
    thread.start()
    return thread


class Probe:
    """A launch test's probe: its own node in the default context, spun by a multithreaded
    executor in a background thread (callbacks keep running while a test waits)."""

    def __init__(self, name, threads=4):
        rclpy.init()
        self.node = rclpy.create_node(name)
        self.lock = threading.Lock()
        self.executor = MultiThreadedExecutor(num_threads=threads)
        self.executor.add_node(self.node)
        self.thread = None

    def start(self):
        self.thread = spin_in_background(self.executor)

    def store(self, into):
        """A subscription callback appending each message to the list ``into`` (locked)."""
        def cb(msg):
            with self.lock:
                into.append(msg)
        return cb

    def close(self):
        self.executor.shutdown(timeout_sec=2.0)
        self.node.destroy_node()
        rclpy.shutdown()
        if self.thread is not None:
            self.thread.join(timeout=5.0)
