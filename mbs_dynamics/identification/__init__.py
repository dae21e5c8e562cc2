"""Identification: the regressor and its time derivatives, base parameters, estimation from logs
(seed 000 §6).

``robot.inertial_parameters()``, ``robot.with_inertial_parameters(pi)``, ``robot.regressor``,
``robot.regressor_derivatives``, ``robot.inverse_dynamics_derivatives`` and
``robot.forward_dynamics_derivatives`` are the Robot's methods (kernels here:
``_regressor.pyx``, ``_derivatives.pyx``); :func:`base_parameters` takes a robot.
"""
from .base import BaseParameters, base_parameters  # noqa: F401
