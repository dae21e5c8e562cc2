"""Inertial parameters (seed 000 §6; doc/math.md "Parameters"): each moving body's spatial inertia as
the 10 numbers τ is linear in, and back.

One row per moving body, in the kernels' (= Pinocchio's) body order: a floating base's body
first, then the bodies of the movable joints in ``joint_names`` order. Each row is Pinocchio's
``Inertia.toDynamicParameters()``::

    π_i = (m, m c_x, m c_y, m c_z, I_xx, I_xy, I_yy, I_xz, I_yz, I_zz)

with ``c`` the centre of mass and ``I = Θ_b`` the rotational inertia about the body frame's origin
(the child link frame of the joint, links on fixed joints merged), both in the body frame: the
6×6 body inertia of seed 004 eq. 24 is ``M_i = [[Θ_b, h̃], [−h̃, m 1]]`` with ``h = m c``.
"""
from __future__ import annotations

import warnings

import numpy as np

from ..model import model as _model
from ..model.urdf import MAX_LENGTH, URDFError, URDFWarning, check_inertias

#: names of the 10 parameters of one body, in the order of a row of :func:`inertial_parameters`
PARAMETER_NAMES = ("m", "mcx", "mcy", "mcz", "Ixx", "Ixy", "Iyy", "Ixz", "Iyz", "Izz")


def body_inertias(model) -> np.ndarray:
    """(nb, 6, 6): the floating base's inertia (if any) then the movable joints' bodies."""
    if model.floating_base:
        return np.concatenate([np.asarray(model.base_inertia)[None], model.inertias])
    return np.asarray(model.inertias)


def body_names(model) -> tuple:
    """The link that names each body (the base link first with a floating base)."""
    return ((model.base_link,) if model.floating_base else ()) + tuple(model.link_names)


def to_parameters(I6) -> np.ndarray:
    """(…, 6, 6) angular-first spatial inertias → (…, 10) dynamic parameters."""
    I6 = np.asarray(I6, dtype=float)
    out = np.empty(I6.shape[:-2] + (10,))
    out[..., 0] = I6[..., 3, 3]
    out[..., 1] = I6[..., 2, 4]   # the (ω, v) block h̃: h̃[2, 1] = h_x, h̃[0, 2] = h_y, h̃[1, 0] = h_z
    out[..., 2] = I6[..., 0, 5]
    out[..., 3] = I6[..., 1, 3]
    out[..., 4] = I6[..., 0, 0]
    out[..., 5] = I6[..., 0, 1]
    out[..., 6] = I6[..., 1, 1]
    out[..., 7] = I6[..., 0, 2]
    out[..., 8] = I6[..., 1, 2]
    out[..., 9] = I6[..., 2, 2]
    return out


def to_inertias(pi) -> np.ndarray:
    """(…, 10) dynamic parameters → (…, 6, 6) spatial inertias ``[[Θ_b, h̃], [−h̃, m 1]]``."""
    pi = np.asarray(pi, dtype=float)
    m, h = pi[..., 0], pi[..., 1:4]
    out = np.zeros(pi.shape[:-1] + (6, 6))
    Th = out[..., :3, :3]
    Th[..., 0, 0], Th[..., 1, 1], Th[..., 2, 2] = pi[..., 4], pi[..., 6], pi[..., 9]
    Th[..., 0, 1] = Th[..., 1, 0] = pi[..., 5]
    Th[..., 0, 2] = Th[..., 2, 0] = pi[..., 7]
    Th[..., 1, 2] = Th[..., 2, 1] = pi[..., 8]
    H = np.zeros(pi.shape[:-1] + (3, 3))
    H[..., 0, 1], H[..., 0, 2], H[..., 1, 2] = -h[..., 2], h[..., 1], -h[..., 0]
    H[..., 1, 0], H[..., 2, 0], H[..., 2, 1] = h[..., 2], -h[..., 1], h[..., 0]
    out[..., :3, 3:] = H
    out[..., 3:, :3] = -H
    for a in range(3):
        out[..., 3 + a, 3 + a] = m
    return out


def inertial_parameters(model) -> np.ndarray:
    """(nb, 10) rows π_i of every moving body (module docstring)."""
    return to_parameters(body_inertias(model))


def com_inertias(pi):
    """(nb, 10) → masses (nb,), COMs (nb, 3) and the 3×3 inertias about the COM (nb, 3, 3)
    (Steiner, seed 004 eq. 24: Θ_c = Θ_b + m c̃ c̃ = Θ_b + h̃ h̃ / m). A massless body keeps Θ_b
    and its COM is reported as 0."""
    pi = np.asarray(pi, dtype=float)
    m, h = pi[:, 0], pi[:, 1:4]
    I6 = to_inertias(pi)
    Th = I6[:, :3, :3]
    H = I6[:, :3, 3:]
    safe = np.where(m > 0, m, 1.0)
    c = np.where((m > 0)[:, None], h / safe[:, None], 0.0)
    Ic = Th + np.where((m > 0)[:, None, None], H @ H / safe[:, None, None], 0.0)
    return m, c, Ic


def check_parameters(model, pi, what="pi") -> np.ndarray:
    """``pi`` (nb, 10) or (10·nb,) as an (nb, 10) float array of physically consistent bodies,
    else ValueError naming the body (its link) and what is wrong: non-finite values, negative
    mass, a first moment without mass, an inertia about the COM that is not positive
    semi-definite (the same checks and tolerances as ``load_urdf``,
    :func:`~mbs_dynamics.model.urdf.check_inertias`). Dubious bodies (zero mass with inertia,
    principal moments violating the triangle inequality) warn (URDFWarning) as in load_urdf."""
    names = body_names(model)
    nb = len(names)
    if np.iscomplexobj(pi):
        raise TypeError(f"{what} must be real")
    try:
        p = np.array(pi, dtype=float)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{what} must be an array of numbers of shape ({nb}, 10)") from None
    if p.shape == (10 * nb,):
        p = p.reshape(nb, 10)
    if p.shape != (nb, 10):
        raise ValueError(f"{what} has shape {p.shape}, expected ({nb}, 10) or ({10 * nb},): one "
                         "row (m, mcx, mcy, mcz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz) per body")
    labels = [f"{what}: body {i} (link '{ln}')" for i, ln in enumerate(names)]
    bad = ~np.isfinite(p).all(axis=1)
    if bad.any():
        raise ValueError(f"{labels[int(np.argmax(bad))]} contains NaN or inf")
    m = p[:, 0]
    if (m < 0).any():
        i = int(np.argmax(m < 0))
        raise ValueError(f"{labels[i]} has negative mass {m[i]:g}")
    h = p[:, 1:4]
    hscale = np.abs(h).max(axis=1)
    orphan = (m == 0) & (hscale > 0)
    if orphan.any():
        i = int(np.argmax(orphan))
        raise ValueError(f"{labels[i]} has a first moment m·c = {h[i].tolist()} but zero mass")
    mm, c, Ic = com_inertias(p)
    far = np.abs(c).max(axis=1) > MAX_LENGTH
    if far.any():
        i = int(np.argmax(far))
        raise ValueError(f"{labels[i]}: centre of mass {c[i].tolist()} is more than "
                         f"{MAX_LENGTH:g} m from the body frame")
    # symmetric by construction; rounding of the Steiner shift must not fail the symmetry test
    Ic = 0.5 * (Ic + Ic.transpose(0, 2, 1))
    try:
        zero, tri = check_inertias(mm, Ic, labels)
    except URDFError as e:
        raise ValueError(str(e)) from None
    for lst, text in ((zero, "zero mass but a non-zero inertia"),
                      (tri, "principal moments that violate the triangle inequality")):
        if len(lst):
            warnings.warn(f"{what}: bodies {', '.join(names[i] for i in lst)} have {text} "
                          "(kept as given)", URDFWarning, stacklevel=3)
    return p


def model_with_parameters(model, pi):
    """A new frozen Model whose body inertias are ``pi`` (checked by :func:`check_parameters`),
    and whose mass matrix is regular (load_urdf's check: ValueError naming a joint that moves no
    mass)."""
    p = check_parameters(model, pi)
    I6 = to_inertias(p)
    fb = 1 if model.floating_base else 0
    new = model.with_inertias(I6[fb:])
    if fb:
        from dataclasses import replace
        new = replace(new, base_inertia=I6[0])
    exempt = set(model.mimic) | {v[0] for v in model.mimic.values()}
    try:
        _model._check_moves_mass(list(new.joint_names), new.parent, new.B, new.X, new.inertias,
                                 exempt, new.base_inertia if fb and not exempt else None)
    except URDFError as e:
        raise ValueError(f"pi: {e}") from None
    return new
