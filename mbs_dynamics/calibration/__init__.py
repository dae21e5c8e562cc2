"""Geometric (kinematic) calibration (Müller 2018, "Screw and Lie group theory in multibody
dynamics", §6.2): the geometric parameters of every joint frame, B_i(π_i) = B_i0 exp(Û_i π_i),
the sensitivity of frame poses (``parameters``) and of τ (``torque``) to them, the parameters a measurement set-up can
identify (``identifiable``), their estimation from measured poses or positions
(``estimate.calibrate``) and the choice of measurement poses (``excite``).

Reads the model and kernel floors only (no compiled kernel: the few hundred poses of a
calibration are NumPy work); nothing inside the package imports it but the facade and the CLI.
"""
from .estimate import CalibrationReport, Measurements, calibrate
from .excite import select_poses
from .identifiable import identifiable_parameters
from .parameters import GeometricParameters
from .torque import torque_sensitivity

__all__ = ["GeometricParameters", "Measurements", "CalibrationReport", "calibrate",
           "identifiable_parameters", "select_poses", "torque_sensitivity"]
