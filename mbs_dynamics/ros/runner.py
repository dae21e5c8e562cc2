"""Process entry point shared by the nodes: init, spin, and a quiet, clean stop.

Two ordinary ways to stop a node used to end in a traceback and a non-zero exit code (seen with
rclpy 7.1.3 and ``ros2 launch`` on Jazzy):

* rclpy's SIGINT handler shuts the context down at once, so a callback already running (the
  simulator's timer publishing its state) fails with ``RCLError: ... publisher's context is
  invalid``;
* Ctrl-C in a terminal reaches every process of the ``ros2 launch`` group and launch then forwards
  another SIGINT to each node, which may land while the node is being destroyed
  (``KeyboardInterrupt`` in ``destroy_node``).

:func:`run` treats both as a normal stop (exit code 0); any error while the context is still valid
is re-raised. A node that cannot start because of its configuration exits with 1.
"""

from __future__ import annotations

import rclpy
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.logging import get_logger

__all__ = ["run"]


def run(make_node, name, *, args=None, make_executor=None, config_errors=()):
    """Initialise rclpy, build the node, spin it until shutdown, then clean up.

    Args:
        make_node: callable returning the node (called after ``rclpy.init``).
        name: logger name for a configuration error.
        args: command line arguments for ``rclpy.init`` (None: ``sys.argv``).
        make_executor: callable returning the executor (default: SingleThreadedExecutor).
        config_errors: exception types of ``make_node`` that mean "bad parameters": logged
            as fatal, exit code 1.

    Returns:
        int: the process exit code (0, or 1 for a configuration error).
    """
    rclpy.init(args=args)
    node = None
    code = 0
    try:
        try:
            node = make_node()
        except tuple(config_errors) as exc:
            get_logger(name).fatal(str(exc))
            code = 1
        else:
            executor = make_executor() if make_executor is not None else SingleThreadedExecutor()
            executor.add_node(node)
            executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except Exception:
        if rclpy.ok():
            raise
        # the context was shut down (Ctrl-C) under a running callback: a normal stop
    finally:
        _cleanup(node)
    return code


def _cleanup(node):
    """Destroy ``node`` and shut rclpy down; a further Ctrl-C meanwhile only skips a step."""
    steps = [rclpy.try_shutdown]
    if node is not None:
        steps.insert(0, node.destroy_node)
    for step in steps:
        try:
            step()
        except KeyboardInterrupt:
            pass
