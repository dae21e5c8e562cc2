"""ROS 2 (rclpy) layer of mbs_dynamics: the only package that imports ``rclpy``.

* :mod:`mbs_dynamics.ros.feedforward_node` — the ``feedforward_node`` executable
  (``ros2 run mbs_dynamics feedforward_node``).
* :mod:`mbs_dynamics.ros.conversions` — message ⇄ NumPy helpers.
* :mod:`mbs_dynamics.ros.parameters` — the node's parameter table and checks (no rclpy).
* :mod:`mbs_dynamics.ros.sim_node` — the ``sim_node`` executable (built-in simulator peer).
* :mod:`mbs_dynamics.ros.runner` — the nodes' entry point: init, spin, clean Ctrl-C stop.

Nothing is imported here eagerly, so ``import mbs_dynamics.ros`` works without ROS 2.
"""
