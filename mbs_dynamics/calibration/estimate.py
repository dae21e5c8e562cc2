"""``calibrate``: the identifiable geometric parameters from measured positions or poses of frames
(a laser tracker, a camera, a touch probe), by Levenberg–Marquardt on the σ-weighted residuals.

The residuals of a measurement at q are ``(p_meas − p(q, π)) / σ_p`` and, for a pose,
``log(R_meas R(q, π)ᵀ) / σ_r`` (the rotation error as a vector in W). Only the identifiable
parameters (:mod:`.identifiable`, from the Jacobian at the nominal model) are estimated; the
others stay at 0 and are reported as unidentifiable. The covariance of the estimates is
``(J_bᵀ J_b)⁻¹`` of the weighted Jacobian at the solution (the given σ taken as right:
``chi2_dof`` near 1 confirms them).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..kernels import lie
from .identifiable import identifiable_parameters
from .parameters import GeometricParameters, check_model

__all__ = ["Measurements", "CalibrationReport", "calibrate", "stack"]


@dataclass
class Measurements:
    """Measured positions or poses of one frame.

    Attributes:
        q: (N, n) joint positions of the N measurements [rad, m].
        frame: the measured frame (a link or fixed frame of the model).
        positions: (N, 3) measured positions in W [m] (a tracker or probe), or None.
        poses: (N, 4, 4) measured poses in W (a camera), or None; exactly one of the two.
        sigma_position: standard deviation of each position coordinate [m].
        sigma_rotation: standard deviation of each rotation-vector component [rad] (poses).
    """

    q: np.ndarray
    frame: str
    positions: np.ndarray | None = None
    poses: np.ndarray | None = None
    sigma_position: float = 1e-4
    sigma_rotation: float = 1e-3

    def checked(self, n):
        """A copy with validated float arrays (ValueError naming the field)."""
        q = np.array(self.q, dtype=float)
        if q.ndim != 2 or q.shape[1] != n or q.shape[0] == 0 or not np.all(np.isfinite(q)):
            raise ValueError(f"measurements of '{self.frame}': q must be (N, {n}) finite, got "
                             f"shape {q.shape}")
        N = q.shape[0]
        if (self.positions is None) == (self.poses is None):
            raise ValueError(f"measurements of '{self.frame}': give positions or poses (one)")
        pos = pose = None
        if self.positions is not None:
            pos = np.array(self.positions, dtype=float)
            if pos.shape != (N, 3) or not np.all(np.isfinite(pos)):
                raise ValueError(f"measurements of '{self.frame}': positions must be ({N}, 3) "
                                 f"finite, got shape {pos.shape}")
        else:
            pose = np.array(self.poses, dtype=float)
            if pose.shape != (N, 4, 4) or not np.all(np.isfinite(pose)):
                raise ValueError(f"measurements of '{self.frame}': poses must be ({N}, 4, 4) "
                                 f"finite, got shape {pose.shape}")
        for k in ("sigma_position", "sigma_rotation"):
            v = getattr(self, k)
            if not (isinstance(v, (int, float, np.floating)) and np.isfinite(v) and v > 0):
                raise ValueError(f"measurements of '{self.frame}': {k} must be a positive "
                                 f"number, got {v!r}")
        return Measurements(q, str(self.frame), pos, pose, float(self.sigma_position),
                            float(self.sigma_rotation))


@dataclass
class CalibrationReport:
    """What :func:`calibrate` found.

    Attributes:
        names: every geometric parameter (:class:`~.parameters.GeometricParameters`).
        identifiable: the names of the estimated (base) parameters.
        unidentifiable: the names of the parameters these measurements cannot identify (kept
            at their nominal value 0; their effect is absorbed by the identifiable ones, see
            ``regrouping``).
        estimates: (r,) the identifiable parameters [m, rad].
        sigma: (r,) their standard deviations [m, rad].
        correlation: (r, r) their correlation matrix.
        regrouping: (r, p − r) β: the estimates identify ``π_b + β π_d`` of the true geometry.
        pi: (p,) every parameter (0 for the unidentifiable ones).
        rms_before, rms_after: RMS position error [m] (and rotation error [rad] for poses) of
            the nominal and the calibrated model on the measurements, a dict.
        chi2_dof: weighted residual sum of squares over the degrees of freedom (≈ 1 when the
            σ are right).
        condition: condition number of the column-scaled Jacobian of the identifiable
            parameters at the nominal model.
        base_pose: (4, 4) the estimated pose of the robot base in W.
        iterations: Levenberg–Marquardt iterations; converged: the step fell below tolerance.
    """

    names: tuple
    identifiable: tuple
    unidentifiable: tuple
    estimates: np.ndarray
    sigma: np.ndarray
    correlation: np.ndarray
    regrouping: np.ndarray
    pi: np.ndarray
    rms_before: dict
    rms_after: dict
    chi2_dof: float
    condition: float
    base_pose: np.ndarray
    iterations: int
    converged: bool
    offsets: tuple = field(default=(), repr=False)

    def summary(self) -> str:
        """A plain-text table of the estimates (mm and mrad) and the residuals."""
        lines = [f"{'parameter':<32} {'estimate':>12} {'sigma':>10}"]
        for nm, v, s in zip(self.identifiable, self.estimates, self.sigma):
            k = 1e3
            unit = "mm" if nm.rsplit(".", 1)[-1].startswith("t") else "mrad"
            lines.append(f"{nm:<32} {k * v:>9.4f} {unit:<4} {k * s:>7.4f}")
        lines.append(f"unidentifiable ({len(self.unidentifiable)}): "
                     + (", ".join(self.unidentifiable) or "none"))
        for key in self.rms_before:
            lines.append(f"RMS {key}: {self.rms_before[key]:.6g} -> {self.rms_after[key]:.6g}")
        lines.append(f"chi2/dof {self.chi2_dof:.4g}, condition {self.condition:.4g}, "
                     f"{self.iterations} iterations{'' if self.converged else ' (not converged)'}")
        return "\n".join(lines)


def _as_list(measurements, n):
    if isinstance(measurements, (Measurements, dict)):
        measurements = [measurements]
    out = []
    for m in measurements:
        if isinstance(m, dict):
            try:
                m = Measurements(**m)
            except TypeError as e:
                raise ValueError(f"measurements: {e}") from None
        if not isinstance(m, Measurements):
            raise ValueError("measurements must be Measurements, dicts or a list of them")
        out.append(m.checked(n))
    if not out:
        raise ValueError("measurements: none given")
    return out


def stack(gp, pi, meas):
    """The weighted residuals r (m,) and ∂r/∂π = −J (returned as J, (m, p)) of all
    measurements, and the unweighted position / rotation errors (for the RMS)."""
    rs, Js, ep, er = [], [], [], []
    for m in meas:
        J, T = gp.jacobian(pi, m.q, m.frame)
        if m.positions is not None:
            e = m.positions - T[:, :3, 3]
            rs.append((e / m.sigma_position).ravel())
            Js.append((J[:, :3] / m.sigma_position).reshape(-1, gp.size))
            ep.append(e)
        else:
            e = m.poses[:, :3, 3] - T[:, :3, 3]
            w = lie.so3_log(m.poses[:, :3, :3] @ T[:, :3, :3].transpose(0, 2, 1))
            rs.append(np.c_[e / m.sigma_position, w / m.sigma_rotation].ravel())
            Jw = np.concatenate([J[:, :3] / m.sigma_position, J[:, 3:] / m.sigma_rotation], 1)
            Js.append(Jw.reshape(-1, gp.size))
            ep.append(e)
            er.append(w)
    rms = {"position": float(np.sqrt(np.mean(np.concatenate(ep) ** 2) * 3))}
    if er:
        rms["rotation"] = float(np.sqrt(np.mean(np.concatenate(er) ** 2) * 3))
    return np.concatenate(rs), np.concatenate(Js), rms


def calibrate(robot, measurements, *, base=True, base_pose=None, frame_params=True, rtol=1e-8,
              max_iter=100, tol=1e-10):
    """Geometric calibration of ``robot`` from measured frame positions or poses.

    Args:
        robot: a fixed-base Robot (or a :class:`~mbs_dynamics.model.model.Model`) without mimic
            joints.
        measurements: :class:`Measurements`, a dict of its fields, or a list of them (several
            frames, or positions and poses).
        base: estimate the pose of the robot base in the measurement frame W (six parameters);
            False when the measurements are in the robot's base frame.
        base_pose: the nominal 4×4 pose of the base in W (default the identity).
        frame_params: estimate each measured frame's pose in its body (six parameters each);
            the frames must then be fixed frames (a tool, a target), not a moving body's own.
        rtol: rank threshold of :func:`~.identifiable.identifiable_parameters`.
        max_iter, tol: Levenberg–Marquardt iteration limit and relative step tolerance.
    Returns:
        ``(calibrated, report)``: the calibrated robot (same type as ``robot``; a Model for a
        Model; write it with ``to_urdf()``) and a :class:`CalibrationReport`.
    Raises:
        ValueError naming the field or capability: wrong shapes, NaN, σ ≤ 0, an unknown frame, a
        floating base or mimic joints, fewer residuals than identifiable parameters.
    """
    model = getattr(robot, "model", robot)
    check_model(model)
    meas = _as_list(measurements, model.n)
    frames = tuple(dict.fromkeys(m.frame for m in meas))
    gp = GeometricParameters(model, frames, base=base, base_pose=base_pose,
                             frame_params=frame_params)
    pi = np.zeros(gp.size)
    r, J, rms0 = stack(gp, pi, meas)
    ident = identifiable_parameters(J, rtol)
    b = ident.base
    if r.size <= b.size:
        raise ValueError(f"calibration: {r.size} residuals for {b.size} identifiable "
                         "parameters; measure more poses")
    cost, mu, it, converged = r @ r, 1e-3, 0, False
    for it in range(1, max_iter + 1):
        Jb = J[:, b]
        A, g = Jb.T @ Jb, Jb.T @ r
        while True:
            step = np.linalg.solve(A + mu * np.diag(np.diag(A)), g)
            trial = pi.copy()
            trial[b] += step
            r1, J1, _ = stack(gp, trial, meas)
            if r1 @ r1 <= cost or mu > 1e12:
                break
            mu *= 4.0
        small = np.linalg.norm(step) <= tol * (np.linalg.norm(pi[b]) + tol)
        if r1 @ r1 <= cost:
            pi, r, J, cost, mu = trial, r1, J1, r1 @ r1, max(mu / 3.0, 1e-12)
        if small or mu > 1e12:
            converged = small
            break
    Jb = J[:, b]
    cov = np.linalg.inv(Jb.T @ Jb)
    sig = np.sqrt(np.diag(cov))
    _, _, rms1 = stack(gp, pi, meas)
    new_model, T_wb = gp.apply(pi)
    names = gp.names
    report = CalibrationReport(
        names=names, identifiable=tuple(names[k] for k in b),
        unidentifiable=tuple(names[k] for k in ident.dependent),
        estimates=pi[b].copy(), sigma=sig, correlation=cov / np.outer(sig, sig),
        regrouping=ident.beta, pi=pi, rms_before=rms0, rms_after=rms1,
        chi2_dof=float(cost / (r.size - b.size)), condition=ident.condition, base_pose=T_wb,
        iterations=it, converged=bool(converged), offsets=tuple(names[k] for k in gp.offsets))
    if robot is model:
        return new_model, report
    return type(robot)(new_model), report
