"""Message ⇄ NumPy conversions for the feedforward node.

Times become float seconds on the node's clock (``sec + 1e-9 nanosec``); a double keeps
sub-microsecond resolution for present-day epoch times, ample for a 1 kHz loop.

Array fields of ROS 2 Python messages (``float64[]``) are ``array.array('d')``; assigning an
``array.array`` skips the element-by-element type check that a list triggers, so outputs are
written with :func:`to_array` (one memory copy).
"""

from __future__ import annotations

import array

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
