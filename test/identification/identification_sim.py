"""Logs for the identification tests, simulated by Pinocchio (never by this package): joint
torques τ = pin.rnea(q, q̇, q̈) of a model with known ("true") inertial parameters, plus viscous and
Coulomb friction and Gaussian noise, along analytic finite Fourier series q(t)."""
from __future__ import annotations

import numpy as np

pin = None
try:
    import pinocchio as pin
except ImportError:  # the tests skip on their own
    pass


def fourier(t, n, rng, harmonics=5, period=10.0, amp=0.8, q0=None):
    """q, q̇, q̈ (N, n) of a random finite Fourier series (analytic derivatives)."""
    a = rng.normal(size=(harmonics, n)) * amp / np.arange(1, harmonics + 1)[:, None]
    b = rng.normal(size=(harmonics, n)) * amp / np.arange(1, harmonics + 1)[:, None]
    q = np.zeros((t.size, n))
    qd, qdd = np.zeros_like(q), np.zeros_like(q)
    for k in range(harmonics):
        w = 2 * np.pi * (k + 1) / period
        s, c = np.sin(w * t)[:, None], np.cos(w * t)[:, None]
        q += (a[k] / w) * s - (b[k] / w) * c
        qd += a[k] * c + b[k] * s
        qdd += -a[k] * w * s + b[k] * w * c
    if q0 is not None:
        q += q0
    return q, qd, qdd


def perturbed_model(urdf_text, rng, scale=0.25):
    """Pinocchio model of the URDF with every body's mass, COM and rotational inertia changed
    (physically consistent: inertia about the COM scaled by a positive factor)."""
    model = pin.buildModelFromXML(urdf_text)
    for i in range(1, model.njoints):
        inertia = model.inertias[i]
        m = inertia.mass * (1 + scale * rng.uniform(-1, 1))
        c = inertia.lever + scale * 0.05 * rng.normal(size=3)
        Ic = inertia.inertia * (1 + scale * rng.uniform(-1, 1))
        model.inertias[i] = pin.Inertia(m, c, 0.5 * (Ic + Ic.T))
    return model


def true_parameters(model):
    """(nb, 10) parameters of the Pinocchio model (Pinocchio's dynamic parameters)."""
    return np.array([model.inertias[i].toDynamicParameters() for i in range(1, model.njoints)])


def rigid_torques(model, q, qd, qdd):
    data = model.createData()
    return np.array([pin.rnea(model, data, q[k], qd[k], qdd[k]) for k in range(q.shape[0])])


def simulate(model, t, q, qd, qdd, Fv, Fc, sigma, rng):
    """Measured torques: rnea + Fv q̇ + Fc sign(q̇) + N(0, σ²) per joint."""
    tau = rigid_torques(model, q, qd, qdd) + Fv * qd + Fc * np.sign(qd)
    return tau + rng.normal(size=tau.shape) * sigma


def central_second_derivative(x, dt):
    """x'' by sixth-order central differences (ends by one-sided second order; tests drop them)."""
    c = np.array([1 / 90, -3 / 20, 3 / 2, -49 / 18, 3 / 2, -3 / 20, 1 / 90])
    out = np.gradient(np.gradient(x, dt, axis=0), dt, axis=0)
    inner = sum(ck * x[k:x.shape[0] - 6 + k] for k, ck in enumerate(c)) / dt ** 2
    out[3:-3] = inner
    return out


def central_first_derivative(x, dt):
    c = np.array([-1 / 60, 3 / 20, -3 / 4, 0.0, 3 / 4, -3 / 20, 1 / 60])
    out = np.gradient(x, dt, axis=0)
    out[3:-3] = sum(ck * x[k:x.shape[0] - 6 + k] for k, ck in enumerate(c)) / dt
    return out
