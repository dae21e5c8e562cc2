"""∂τ/∂π: the sensitivity of the inverse dynamics to the geometric parameters of every joint
frame (Müller 2018, "Screw and Lie group theory in multibody dynamics", §6.2), exact, by the
package's analytic ∂τ/∂q (seed 000 §6.1) on an augmented tree.

B_i exp(Û_i δ) exp(X_i q_i) is the same as six extra joints with the screws U_i1 … U_i6 (the
parameter basis of :class:`~.parameters.GeometricParameters`: prismatic along, revolute about
three orthonormal axes) at δ = 0 between body λ(i) and body i, carrying massless bodies:

    ∂τ_i/∂π_jk = ∂τ'_(i)/∂q'_(jk) at q' = (q, δ = 0),

the rows of the real joints and the columns of the virtual ones of the augmented model's ∂τ'/∂q'.
At δ = 0 the product exp(U_1 δ_1)···exp(U_6 δ_6) has the derivative U_k in every direction, so
this is the derivative at the model as given (π = 0); for another π build it first
(``GeometricParameters.apply``).
"""
from __future__ import annotations

import numpy as np

from ..model.model import Model
from .parameters import COMPONENTS, _basis

__all__ = ["augmented_model", "torque_sensitivity"]


def augmented_model(model):
    """The model with six massless virtual joints before each joint (module docstring).
    Returns ``(augmented Model, real)``: ``real[i]`` is joint i's index in it; virtual joint k of
    joint i is ``real[i] − 6 + k`` (parameter ``6 i + k`` of a GeometricParameters with
    ``base=False``)."""
    if model.floating_base or model.mimic:
        raise ValueError("torque_sensitivity: floating-base models and mimic joints are not "
                         "supported")
    n = model.n
    N = 7 * n
    real = np.arange(n) * 7 + 6
    parent = np.empty(N, dtype=int)
    B = np.tile(np.eye(4), (N, 1, 1))
    X = np.zeros((N, 6))
    axis = np.zeros((N, 3))
    inertias = np.zeros((N, 6, 6))
    names, links, types = [], [], []
    for i in range(n):
        U = _basis(model.axis[i])
        for k in range(6):
            j = 7 * i + k
            parent[j] = (real[model.parent[i]] if model.parent[i] >= 0 else -1) if k == 0 else j - 1
            X[j] = U[:, k]
            axis[j] = U[3:, k] if k < 3 else U[:3, k]
            names.append(f"{model.joint_names[i]}.{COMPONENTS[k]}")
            links.append(f"{model.link_names[i]}.{COMPONENTS[k]}")
            types.append("prismatic" if k < 3 else "revolute")
        B[7 * i] = model.B[i]
        parent[real[i]] = real[i] - 1
        X[real[i]], axis[real[i]] = model.X[i], model.axis[i]
        inertias[real[i]] = model.inertias[i]
        names.append(model.joint_names[i])
        links.append(model.link_names[i])
        types.append(model.joint_types[i])
    frames = {ln: ((real[b] if b >= 0 else -1), S) for ln, (b, S) in model.link_frames.items()}
    inf = np.full(N, np.inf)
    aug = Model(n=N, joint_names=tuple(names), link_names=tuple(links), joint_types=tuple(types),
                parent=parent, axis=axis, B=B, X=X, inertias=inertias, gravity=model.gravity,
                lower=-inf, upper=inf, velocity_limit=inf, effort_limit=inf, link_frames=frames,
                base_link=model.base_link, name=model.name)
    return aug, real


def torque_sensitivity(robot, q, qd, qdd):
    """∂τ/∂π (n, 6n) of ``robot.inverse_dynamics(q, qd, qdd)`` with respect to the six
    geometric parameters of every joint frame, in the order and units of
    :class:`~.parameters.GeometricParameters` with ``base=False`` (N m or N per m or rad).

    Args:
        robot: a fixed-base Robot without mimic joints.
        q, qd, qdd: (n,) joint positions, velocities, accelerations.
    Returns:
        (n, 6n) array.
    """
    model = robot.model
    aug, real = augmented_model(model)
    r = type(robot)(aug)
    n = model.n
    Q = np.zeros((3, aug.n))
    for k, v in enumerate((q, qd, qdd)):
        v = np.asarray(v, dtype=float)
        if v.shape != (n,) or not np.all(np.isfinite(v)):
            raise ValueError(f"torque_sensitivity: {('q', 'qd', 'qdd')[k]} must be {n} finite "
                             f"numbers, got shape {v.shape}")
        Q[k, real] = v
    dq = r.inverse_dynamics_derivatives(Q[0], Q[1], Q[2])[0]
    virtual = np.setdiff1d(np.arange(aug.n), real)
    return dq[np.ix_(real, virtual)]
