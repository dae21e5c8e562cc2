"""mbs_dynamics: exact rigid-body dynamics and its time derivatives (τ, τ′, τ″) from URDF, in the
Lie-group / screw formulation, fast enough for 1 kHz feedforward from Python.
"""
import os

# The batch kernels are OpenMP parallel regions; with the default (active) wait policy their
# idle workers spin and starve the caller on a loaded machine. Only a default: the user's
# setting wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from .loader import from_dh, from_screws, load_urdf  # noqa: E402
from .model.model import Model  # noqa: E402
from .robot import Robot  # noqa: E402
from .model.urdf import URDFError, URDFWarning  # noqa: E402

__version__ = "0.1.0"


# The rest of the public API loads on first use, so that `import mbs_dynamics` stays cheap.
_LAZY = {
    "Trajectory": ("control.trajectory", "Trajectory"),
    "sea_feedforward": ("control.feedforward", "sea_feedforward"),
    "vsa_feedforward": ("control.feedforward", "vsa_feedforward"),
    "feedforward": ("control.feedforward", "feedforward"),
    "FeedforwardResult": ("control.feedforward", "FeedforwardResult"),
    "SEA": ("control.actuators", "SEA"),
    "VSA": ("control.actuators", "VSA"),
    "Spring": ("control.actuators", "Spring"),
    "LinearSpring": ("control.actuators", "LinearSpring"),
    "ExponentialAntagonisticSpring": ("control.actuators", "ExponentialAntagonisticSpring"),
    "SpringInversionError": ("control.actuators", "SpringInversionError"),
    "ACTUATOR_PARAMETERS": ("control.actuators", "ACTUATOR_PARAMETERS"),
    "actuator_from_params": ("control.actuators", "actuator_from_params"),
    "FeedforwardController": ("control.controller", "FeedforwardController"),
    "FlatnessController": ("control.flatness", "FlatnessController"),
    "simulate": ("sim.simulator", "simulate"),
    "MimicRobot": ("model.mimic", "MimicRobot"),
    "ClosedLoopRobot": ("loops.robot", "ClosedLoopRobot"),
    "LoopWarning": ("loops.robot", "LoopWarning"),
}


def __getattr__(name):
    if name in ("codegen", "calibration"):  # a capability as an attribute: mbs.codegen.generate
        import importlib
        return importlib.import_module(f".{name}", __name__)
    if name in _LAZY:
        import importlib
        mod, attr = _LAZY[name]
        return getattr(importlib.import_module(f".{mod}", __name__), attr)
    raise AttributeError(f"module 'mbs_dynamics' has no attribute '{name}'")


__all__ = ["Model", "Robot", "URDFError", "URDFWarning", "load_urdf", "from_dh", "from_screws",
           "__version__", *_LAZY]
