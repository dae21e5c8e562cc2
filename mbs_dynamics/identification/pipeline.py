"""Identification from a log, end to end: :func:`identify`.

log → zero-phase filtered q, q̇, q̈ (:mod:`.filtering`) → (SEA: K, B, D_m per joint from the motor
equation) → per-joint normal equations of τ = Y_b β + friction (:mod:`.estimate`) → OLS, WLS,
σ → physically consistent π (:mod:`.consistent`) → a new Robot, friction, report; written as
OUT.urdf, OUT_actuators.yaml, OUT_report.json by :meth:`IdentificationResult.write`.

Series elastic actuators (a log with ``<joint>/motor_position`` θ; its effort is the motor torque
τ_m): the motor equation of each joint, τ_m = B θ̈ + D_m θ̇ + F_m sign(θ̇) + K (θ − q)
(doc/math.md, plus the motor's Coulomb friction F_m), is linear in (B, D_m, F_m, K) and solved
joint by joint (a log whose effort is the spring torque itself gives B = D_m = F_m = 0); the link torque τ = K̂ (θ − q) then feeds the
rigid-body identification.
"""
from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import numpy as np

from . import consistent as _consistent
from . import estimate as _estimate
from . import filtering as _filtering
from . import logs as _logs
from ..model.description import refuse_lie_joints

__all__ = ["identify", "IdentificationResult", "IdentificationWarning", "PARAMETER_KINDS",
           "Unknowns", "solve_statistics"]

PARAMETER_KINDS = ("m", "mx", "my", "mz", "Ixx", "Ixy", "Iyy", "Ixz", "Iyz", "Izz")


class IdentificationWarning(UserWarning):
    """Parameters the log does not excite (named), or a consistent estimate far from the
    least-squares one."""


def _base_parameters(robot):
    from . import base
    return base.base_parameters(robot)


class IdentificationResult:
    """What :func:`identify` returns.

    Attributes:
        robot: the identified Robot (physically consistent parameters when ``consistent``).
        inertial_parameters: (nb, 10) its parameters.
        friction: {joint: {"viscous": Fv, "coulomb": Fc}} for τ_f = Fv q̇ + Fc sign(q̇).
        base_parameters: {name: {"value", "sigma"}} (WLS estimate and its standard deviation).
        sea: None or {"stiffness", "motor_inertia", "motor_damping"} (n,) arrays.
        report: JSON-able dict (see :meth:`write`).
        unexcited: names of the unknowns the log does not excite (kept at the URDF's values).
    """

    def __init__(self, **kw):
        self.__dict__.update(kw)

    def friction_torque(self, qd):
        """τ_f (N, n) of the identified friction at velocities qd (N, n)."""
        qd = np.asarray(qd, float)
        Fv = np.array([self.friction[j]["viscous"] for j in self.joint_names])
        Fc = np.array([self.friction[j]["coulomb"] for j in self.joint_names])
        return np.where(np.abs(qd) >= _estimate.REST, Fv * qd + Fc * np.sign(qd), 0.0)

    def predict(self, q, qd, qdd):
        """Torques (N, n) of the identified model, friction included."""
        tau = self.robot.inverse_dynamics(np.atleast_2d(q), np.atleast_2d(qd),
                                          np.atleast_2d(qdd))
        return tau + self.friction_torque(np.atleast_2d(qd)) if self.friction else tau

    def urdf_text(self):
        from .urdf_writer import write_urdf
        if self.urdf_source is None:
            raise ValueError("identify() was not given the URDF text (urdf=...): cannot write it")
        return write_urdf(self.urdf_source, _full_model(self.robot), self.inertial_parameters)

    def actuator_text(self):
        from .urdf_writer import actuator_yaml
        return actuator_yaml(self.joint_names, self.sea, self.friction,
                             comment=f"identified by mbs-dynamics identify from "
                                     f"{self.report['log']}")

    def write(self, out):
        """Write ``OUT.urdf``, ``OUT_actuators.yaml`` and ``OUT_report.json``; returns their
        paths. Every text is made before the first file is written."""
        out = str(out)
        texts = {f"{out}.urdf": self.urdf_text(), f"{out}_actuators.yaml": self.actuator_text(),
                 f"{out}_report.json": json.dumps(_jsonable(self.report), indent=1) + "\n"}
        for path, text in texts.items():
            Path(path).write_text(text)
        return list(texts)


def _jsonable(x):
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, (np.floating, float)):
        x = float(x)
        return x if math.isfinite(x) else (None if math.isnan(x) else str(x))
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.ndarray):
        return _jsonable(x.tolist())
    return x


def _full_model(robot):
    return getattr(robot, "full_robot", robot).model


def _body_names(robot):
    from .urdf_writer import body_links
    return [main for main, _ in body_links(_full_model(robot))]


def _sea_motor_equation(log, fs, names):
    """Per joint, least squares of the motor equation τ_m = B θ̈ + D_m θ̇ + F_m sign(θ̇) + K (θ − q)
    (F_m: the motor side's Coulomb friction, 0 when there is none); returns dicts of (n,)
    arrays: the values and their σ."""
    rows = fs.rows
    tau_m = log.effort[rows]
    delta = log.motor_position[rows] - log.position[rows]
    n = len(names)
    keys = ("motor_inertia", "motor_damping", "motor_coulomb", "stiffness")
    out = {k: np.zeros(n) for k in keys}
    sig = {k: np.zeros(n) for k in keys}
    for j in range(n):
        moving = np.abs(fs.thetad[:, j]) >= _estimate.REST
        X = np.column_stack([fs.thetadd[:, j], fs.thetad[:, j],
                             np.where(moving, np.sign(fs.thetad[:, j]), 0.0), delta[:, j]])
        d = np.linalg.norm(X, axis=0)
        d[d == 0] = 1.0
        Ginv = np.linalg.pinv((X.T @ X) / np.outer(d, d))  # 4×4, columns scaled
        x = Ginv @ ((X.T @ tau_m[:, j]) / d) / d
        r = tau_m[:, j] - X @ x
        s2 = r @ r / max(X.shape[0] - 4, 1)
        cov = s2 * Ginv / np.outer(d, d)
        for k, key in enumerate(keys):
            out[key][j] = x[k]
            sig[key][j] = math.sqrt(max(cov[k, k], 0.0))
    bad = [names[j] for j in range(n) if not out["stiffness"][j] > 0]
    if bad:
        raise ValueError(f"{log.source}: no positive spring stiffness identified for "
                         f"{', '.join(bad)} (is motor_position the motor side of the spring?)")
    for key in ("motor_inertia", "motor_damping", "motor_coulomb"):
        out[key] = np.maximum(out[key], 0.0)
    return out, sig


class Unknowns:
    """The unknowns of a robot's identification, shared by :func:`identify` and the map step of
    :mod:`.mapreduce` (picklable: the model, not the Robot, travels to workers).

    Attributes:
        model: the robot's Model; joint_names; base: its :class:`~.base.BaseParameters`;
        T, F: (p, 10 nb) to_base and (10 nb, p) from_base matrices; p: base parameters;
        prior: (nb, 10) the URDF's parameters; friction: (Fv, Fc) per joint are unknowns;
        names: the P unknowns (base parameters, then ``<joint>.viscous``, ``<joint>.coulomb``).
    """

    def __init__(self, robot, friction=True):
        self.model = _full_model(robot)
        self.joint_names = tuple(robot.joint_names)
        self.base = _base_parameters(robot)
        self.prior = np.asarray(robot.inertial_parameters(), float)
        self.T, self.F = _estimate.base_map(self.base, self.prior.size)
        self.p = self.T.shape[0]
        self.friction = bool(friction)
        fr = [f"{j}.{k}" for j in self.joint_names for k in ("viscous", "coulomb")]
        self.names = tuple(self.base.names) + (tuple(fr) if friction else ())


class Solution:
    """What :func:`solve_statistics` returns (attributes named as in :class:`IdentificationResult`
    where they coincide)."""

    def __init__(self, **kw):
        self.__dict__.update(kw)


def solve_statistics(robot, problem, neq, consistent=True):
    """The one solve of identification, from the sufficient statistics ``neq`` of a log (or of
    many chunks added together): OLS, WLS, σ (:func:`.estimate.solve`), then the physically
    consistent estimate (:mod:`.consistent`) or the least-squares one (``consistent=None``:
    neither, only the estimate, its σ and the residuals); residual RMS per joint of the
    identified model and of the URDF's from the same statistics.

    Returns:
        :class:`Solution` with estimate, x (unknowns of the returned model), robot,
        inertial_parameters, friction, base_parameters, friction_sigma, warnings,
        chi2_increase, rms, rms_urdf.
    """
    names, p, T, prior = problem.joint_names, problem.p, problem.T, problem.prior
    nfr = len(problem.names) - p
    x0 = np.concatenate([T @ prior.ravel(), np.zeros(nfr)])
    est = _estimate.solve(neq, x0)
    warn = []
    if est.unexcited:
        warn.append("the log does not excite " + ", ".join(est.unexcited) +
                    ": kept at the URDF's values (excite every joint, e.g. with "
                    "`mbs-dynamics excite`)")
    if est.poorly_excited:
        warn.append("poorly excited (large variance inflation): " +
                    ", ".join(est.poorly_excited))
    N = max(neq.N, 1)
    if consistent is None:  # the estimate and σ only (a fleet's windows)
        return Solution(estimate=est, x=est.x, warnings=warn, rms=np.sqrt(neq.rss(est.x) / N),
                        rms_urdf=np.sqrt(neq.rss(x0) / N))
    if consistent:
        pi, fr, dchi2 = _consistent.consistent_estimate(T, est.x, est.information, prior, nfr)
        # warn when the constraint costs more than 1 % of residual RMS (2 % of χ²): the true
        # parameters are consistent, so the URDF's structure or the log is off
        if dchi2 > max(0.02 * est.dof, 4.0 * p):
            warn.append(f"the physically consistent estimate fits {dchi2 / est.dof:.1%} worse "
                        f"(chi-square +{dchi2:.3g}) than the least-squares one: the URDF's "
                        "structure (joints, fixed links) or the log may be off")
    else:
        pi = (prior.ravel() + _consistent.least_norm(T, est.x[:p] - T @ prior.ravel())
              ).reshape(prior.shape)
        fr, dchi2 = est.x[p:], 0.0
    try:
        new_robot = robot.with_inertial_parameters(pi)
    except ValueError as exc:
        if consistent:
            raise
        raise ValueError(f"the least-squares estimate is not a physical robot "
                         f"({' '.join(str(exc).split())}); use the physically consistent "
                         "estimate (consistent=True, without --least-squares)") from None
    fric, fr_out = {}, {}
    for j, nm in enumerate(names[:nfr // 2]):
        fric[nm] = {"viscous": float(fr[2 * j]), "coulomb": float(fr[2 * j + 1])}
        fr_out[nm] = dict(fric[nm], viscous_sigma=float(est.sigma[p + 2 * j]),
                          coulomb_sigma=float(est.sigma[p + 2 * j + 1]))
    base_params = {nm: {"value": float(est.x[i]), "sigma": float(est.sigma[i])}
                   for i, nm in enumerate(problem.base.names)}
    x = np.concatenate([T @ pi.ravel(), fr])
    return Solution(estimate=est, x=x, robot=new_robot, inertial_parameters=pi, friction=fric,
                    base_parameters=base_params, friction_sigma=fr_out, warnings=warn,
                    chi2_increase=dchi2, rms=np.sqrt(neq.rss(x) / N),
                    rms_urdf=np.sqrt(neq.rss(x0) / N))


def identify(robot, log, friction=True, consistent=True, *, cutoff=None, topic="/joint_states",
             torque_constants=None, urdf=None, progress=None, chunk_rows=None):
    """Identify the inertial parameters (and friction, and SEA K, B) of ``robot`` from a log.

    Args:
        robot: the Robot (or MimicRobot) loaded from the URDF to identify; its parameters are
            the prior for what the log does not excite. Fixed base only.
        log: a CSV file or a rosbag2 directory (see :mod:`.logs`), or a :class:`~.logs.JointLog`.
        friction: identify viscous and Coulomb friction per joint.
        consistent: return a physically consistent estimate (every pseudo-inertia positive
            definite); otherwise the least-squares one (may not be a valid URDF).
        cutoff: low-pass cut-off for q [Hz] (default :data:`~.filtering.DEFAULT_CUTOFF`).
        topic: JointState topic of a bag.
        torque_constants: scalar or (n,): the logged effort is a motor current; τ = k_t · i.
        urdf: the URDF text or path the robot came from (needed by ``result.write``).
        progress: optional callable(done, total) called while the regressor is accumulated.
        chunk_rows: rows per chunk (default :data:`~.filtering.CHUNK_ROWS`): the log is
            filtered and its statistics accumulated chunk by chunk, exactly as the map steps of
            :mod:`.mapreduce` do, so both give the same result.
    Returns:
        :class:`IdentificationResult`.
    Raises:
        LogError (ValueError): an unusable log (one line naming the file and fault).
        ValueError: a floating-base robot, a bad cut-off.
    Warns:
        IdentificationWarning naming the parameters the log does not excite.
    """
    if getattr(robot, "floating_base", False):
        raise ValueError("identification from joint logs needs a fixed-base robot (a floating "
                         "base's wrench is not measured)")
    refuse_lie_joints(robot, "identification from joint logs")
    names = tuple(robot.joint_names)
    n = len(names)
    if isinstance(log, _logs.JointLog):
        jl = log.check()
    else:
        jl = _logs.read_log(log, names, topic=topic)
    if tuple(jl.joint_names) != names:
        raise ValueError(f"{jl.source}: joints {jl.joint_names} differ from the robot's {names}")
    if torque_constants is not None:
        kt = np.broadcast_to(np.asarray(torque_constants, float), (n,))
        if not np.all(np.isfinite(kt)) or np.any(kt == 0):
            raise ValueError(f"torque constants must be finite and non-zero, got {kt.tolist()}")
        jl = _logs.JointLog(jl.time, jl.joint_names, jl.position, jl.effort * kt,
                            jl.velocity, jl.motor_position, jl.source)
    cutoff = _filtering.DEFAULT_CUTOFF if cutoff is None else float(cutoff)
    fs = _filtering.filter_states(jl, cutoff, chunk_rows)

    sea = sea_sigma = None
    if jl.motor_position is not None:
        sea, sea_sigma = _sea_motor_equation(jl, fs, names)
        tau = sea["stiffness"] * (jl.motor_position[fs.rows] - jl.position[fs.rows])
    else:
        tau = jl.effort[fs.rows]

    problem = Unknowns(robot, friction)
    # the map steps of mbs_dynamics.identification.mapreduce, in this process: the statistics
    # of each chunk the filter cut the log into, added in order
    neq = _estimate.NormalEquations(n, problem.names)
    for a, b in fs.pieces:
        neq.merge(_estimate.accumulate(robot, problem.F, fs.q[a:b], fs.qd[a:b], fs.qdd[a:b],
                                       tau[a:b], friction=friction, names=problem.names))
        if progress is not None:
            progress(b, fs.q.shape[0])
    sol = solve_statistics(robot, problem, neq, consistent)
    est, pi, fric, warn = sol.estimate, sol.inertial_parameters, sol.friction, sol.warnings
    dchi2, new_robot = sol.chi2_increase, sol.robot
    base_params, fr_out = sol.base_parameters, sol.friction_sigma
    pred = new_robot.inverse_dynamics(fs.q, fs.qd, fs.qdd)
    if fric:
        pred = pred + _estimate.friction_columns(fs.qd) @ sol.x[problem.p:]
    pred_urdf = robot.inverse_dynamics(fs.q, fs.qd, fs.qdd)
    rms_new, rms_urdf = sol.rms, sol.rms_urdf
    for w in warn:
        warnings.warn(IdentificationWarning(w), stacklevel=2)

    def rel(v, s):
        return 100.0 * s / abs(v) if v != 0 else math.inf

    report = {
        "robot": getattr(_full_model(robot), "name", ""), "log": jl.source,
        "joints": list(names), "samples_used": int(neq.N), "samples": int(jl.n_samples),
        "rate_hz": fs.rate, "cutoff_hz": cutoff,
        "filter": (f"Butterworth low-pass order {_filtering.ORDER}, zero-phase (forward-backward)"
                   f", cut-off {cutoff:g} Hz on q; torques unfiltered"),
        "method": "weighted least squares (per-joint noise), OLS for the weights",
        "condition_number": est.condition,
        "base_parameters": {nm: dict(v, relative_sigma_percent=rel(v["value"], v["sigma"]),
                                     ols_value=float(est.x_ols[i]),
                                     ols_sigma=float(est.sigma_ols[i]))
                            for i, (nm, v) in enumerate(base_params.items())},
        "friction": fr_out,
        "rms": dict(zip(names, rms_new.tolist())),
        "rms_urdf": dict(zip(names, rms_urdf.tolist())),
        "noise_sigma": dict(zip(names, est.noise.tolist())),
        "consistent": bool(consistent), "consistent_chi2_increase": dchi2,
        "prior": ({"divergence": "log-det of the pseudo-inertias (Lee, Wensing & Park 2020)",
                   "weight": _consistent.PRIOR_WEIGHT,
                   "smallest_eigenvalue_ratio": float(_consistent.margin(pi).min())}
                  if consistent else None),
        "unexcited": list(est.unexcited), "poorly_excited": list(est.poorly_excited),
        "warnings": warn,
        "inertial_parameters": {b: dict(zip(PARAMETER_KINDS, row.tolist()))
                                for b, row in zip(_body_names(robot), pi)},
    }
    if sea is not None:
        report["sea"] = {nm: {k: float(sea[k][j]) for k in sea} |
                         {f"{k}_sigma": float(sea_sigma[k][j]) for k in sea}
                         for j, nm in enumerate(names)}
    urdf_text = None
    if urdf is not None:
        urdf_text = (Path(urdf).read_text() if not str(urdf).lstrip().startswith("<")
                     else str(urdf))
    return IdentificationResult(
        robot=new_robot, inertial_parameters=pi, friction=fric, base_parameters=base_params,
        sea=sea, report=report, unexcited=list(est.unexcited), joint_names=names,
        estimate=est, states=fs, torque=tau, predicted=pred, predicted_urdf=pred_urdf,
        time=jl.time[fs.rows],
        urdf_source=urdf_text)
