"""Message ⇄ NumPy conversions for the feedforward node.

Times become float seconds on the node's clock (``sec + 1e-9 nanosec``); a double keeps
sub-microsecond resolution for present-day epoch times, ample for a 1 kHz loop.

Array fields of ROS 2 Python messages (``float64[]``) are ``array.array('d')``; assigning an
``array.array`` skips the element-by-element type check that a list triggers, so outputs are
written with :func:`to_array` (one memory copy).
"""

from __future__ import annotations

import array

import numpy as np

from std_msgs.msg import Float64MultiArray, MultiArrayDimension


def stamp_to_sec(stamp):
    """builtin_interfaces/Time (or Duration) → float seconds."""
    return stamp.sec + 1e-9 * stamp.nanosec


def to_array(values):
    """Convert a float64 NumPy array to ``array.array('d')`` for a ``float64[]`` field."""
    return array.array("d", values.tobytes())


def joint_trajectory_to_dict(msg):
    """Convert a trajectory_msgs/JointTrajectory to a JointTrajectory-shaped mapping.

    The mapping is what :meth:`FeedforwardController.set_trajectory` takes (``joint_names``,
    ``points`` with float ``time_from_start``). Empty optional fields stay empty (= not given).
    """
    return {
        "joint_names": list(msg.joint_names),
        "points": [
            {
                "time_from_start": stamp_to_sec(p.time_from_start),
                "positions": p.positions,
                "velocities": p.velocities,
                "accelerations": p.accelerations,
            }
            for p in msg.points
        ],
    }


def derivatives_message(n):
    """Make a Float64MultiArray with layout ``order`` (3: τ, τ', τ'') × ``joint`` (n)."""
    msg = Float64MultiArray()
    msg.layout.dim = [
        MultiArrayDimension(label="order", size=3, stride=3 * n),
        MultiArrayDimension(label="joint", size=n, stride=n),
    ]
    msg.layout.data_offset = 0
    msg.data = array.array("d", bytes(8 * 3 * n))
    return msg


def sec_to_duration_fields(t):
    """float seconds ≥ 0 → (sec, nanosec) of builtin_interfaces/Duration, nanosec < 1e9."""
    ns = int(round(t * 1e9))
    return ns // 1_000_000_000, ns % 1_000_000_000


def enriched_to_joint_trajectory(enriched, header=None):
    """An :class:`mbs_dynamics.enrich.EnrichedTrajectory` → trajectory_msgs/JointTrajectory.

    Args:
        enriched: the enriched trajectory (finite arrays, (N, m)).
        header: std_msgs/Header to copy (the stamp says when ``time_from_start = 0`` is; zero
            means "start now" for joint_trajectory_controller), or None.
    """
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    msg = JointTrajectory()
    if header is not None:
        msg.header = header
    msg.joint_names = list(enriched.joint_names)
    points = []
    for k in range(len(enriched)):
        p = JointTrajectoryPoint()
        p.positions = to_array(enriched.positions[k])
        p.velocities = to_array(enriched.velocities[k])
        p.accelerations = to_array(enriched.accelerations[k])
        p.effort = to_array(enriched.effort[k])
        p.time_from_start.sec, p.time_from_start.nanosec = sec_to_duration_fields(
            float(enriched.times[k]))
        points.append(p)
    msg.points = points
    return msg


def without_effort(msg):
    """A copy of a trajectory_msgs/JointTrajectory with every point's ``effort`` removed.

    For a controller that takes no effort (joint_trajectory_controller rejects any point with
    effort unless its command_interfaces contain ``effort``).
    """
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    out = JointTrajectory()
    out.header = msg.header
    out.joint_names = list(msg.joint_names)
    points = []
    for p in msg.points:
        q = JointTrajectoryPoint()
        q.positions = p.positions
        q.velocities = p.velocities
        q.accelerations = p.accelerations
        q.time_from_start = p.time_from_start
        points.append(q)
    out.points = points
    return out


def point_to_joint_trajectory(names, point):
    """One point (mapping of (m,) arrays and float ``time_from_start``) → a JointTrajectory.

    The header stamp stays zero: joint_trajectory_controller starts it at once.
    """
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    msg = JointTrajectory()
    msg.joint_names = list(names)
    p = JointTrajectoryPoint()
    for field in ("positions", "velocities", "accelerations", "effort"):
        setattr(p, field, to_array(np.ascontiguousarray(point[field], dtype=float)))
    p.time_from_start.sec, p.time_from_start.nanosec = sec_to_duration_fields(
        float(point["time_from_start"]))
    msg.points = [p]
    return msg
