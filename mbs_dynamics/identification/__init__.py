"""Identification: the regressor and its time derivatives, base parameters, estimation from logs
(seed 000 §6).

``robot.inertial_parameters()``, ``robot.with_inertial_parameters(pi)``, ``robot.regressor``,
``robot.regressor_derivatives``, ``robot.inverse_dynamics_derivatives`` and
``robot.forward_dynamics_derivatives`` are the Robot's methods (kernels here:
``_regressor.pyx``, ``_derivatives.pyx``); :func:`base_parameters` takes a robot.

From logs: :func:`identify` (:mod:`.pipeline`) reads a CSV or rosbag2 log (:mod:`.logs`),
filters and differentiates q (:mod:`.filtering`), estimates base parameters, friction and SEA
springs (:mod:`.estimate`), makes them physically consistent (:mod:`.consistent`) and writes the
URDF and actuator YAML (:mod:`.urdf_writer`); :func:`excite` (:mod:`.excite`) designs exciting
trajectories. :func:`fleet` (:mod:`.drift`) identifies a fleet's logs per robot and time
window and flags drift, as map-reduce over chunks (:mod:`.chunked`, :mod:`.mapreduce`), on Dask
(:mod:`.distributed`) or in this process. These need scipy (and rosbags for bags, dask for a
cluster) and load on first use.
"""
from .base import BaseParameters, base_parameters  # noqa: F401

_LAZY = {
    "identify": ("pipeline", "identify"),
    "IdentificationResult": ("pipeline", "IdentificationResult"),
    "IdentificationWarning": ("pipeline", "IdentificationWarning"),
    "read_log": ("logs", "read_log"),
    "JointLog": ("logs", "JointLog"),
    "LogError": ("logs", "LogError"),
    "fleet": ("drift", "fleet"),
}
#: Submodules reachable as attributes (``mbs.identification.excite.excite(robot)``).
_SUBMODULES = ("logs", "filtering", "estimate", "consistent", "urdf_writer", "excite", "report",
               "pipeline", "chunked", "mapreduce", "distributed", "drift")


def __getattr__(name):
    import importlib
    if name in _LAZY:
        mod, attr = _LAZY[name]
        return getattr(importlib.import_module(f".{mod}", __name__), attr)
    if name in _SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'mbs_dynamics.identification' has no attribute '{name}'")
