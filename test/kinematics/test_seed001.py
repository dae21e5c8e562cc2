"""Seed 001's worked example (examples/seed001, the RCM mechanism of §2.5 and §3.6): the package's
poses and Jacobians of the URDF against the closed forms printed in the paper.

Printed and checked: the reference poses A_i = C_i(0); the spatial joint screws Y_i (eq. 12);
the body-fixed joint screws ⁱX_i; the pose C_3(q) from the POE (eq. 10); the spatial screws
J_1^s … J_4^s(q) (eq. 28; the printed J_3^s has s₂₃ where its geometry and the printed J_4^s need
s₁₂ in the first moment row — used corrected); the body-fixed, hybrid and mixed Jacobians of body
3 from those by the relations of Table 3 (J^b = Ad_{C_3}^{−1} J^s, J^h = Ad_{−r_3} J^s,
J^m = diag(R_3ᵀ, I) J^h); and the remote center of motion itself. The printed body-fixed J_3^b
is not used: its columns 1 and 2 depend on x_1, x_2 (the offsets of bodies 1 and 2), which
cannot enter the velocity of body 3 — its third column, x_3 − d_3, is checked.
Public 6-vectors are (linear, angular); the paper's screws (angular, linear).
"""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import mbs_dynamics as mbs

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EX = os.path.join(ROOT, "examples", "seed001")
sys.path.insert(0, EX)
import rcm  # noqa: E402

sys.path.remove(EX)
P = rcm.PARAMS
d2, d3, d4, h4, d5 = P["d2"], P["d3"], P["d4"], P["h4"], P["d5"]
x = {i: P[f"x{i}"] for i in range(1, 6)}
z = {i: P[f"z{i}"] for i in range(1, 6)}
S2 = 1 / np.sqrt(2)
TOL = 1e-14


@pytest.fixture(scope="module", params=["from_screws", "urdf"])
def robot(request):
    """The model from the paper's (Y_i, A_i) directly, and the URDF it wrote (rcm.urdf)."""
    return rcm.robot() if request.param == "from_screws" else mbs.load_urdf(rcm.PATH)


def _la(X):
    """The paper's (ω, v) → the package's (v, ω), for a vector or the rows of a matrix."""
    X = np.asarray(X, dtype=float)
    return np.concatenate([X[3:], X[:3]])


def _Ad(C):
    R, p = C[:3, :3], C[:3, 3]
    pt = np.array([[0, -p[2], p[1]], [p[2], 0, -p[0]], [-p[1], p[0], 0]])
    A = np.zeros((6, 6))
    A[:3, :3] = A[3:, 3:] = R
    A[3:, :3] = pt @ R
    return A


def _c(*a):
    return np.cos(sum(a))


def _s(*a):
    return np.sin(sum(a))


def C3_printed(q):
    q1, q2, q3 = q[:3]
    return np.array([
        [_c(q1, q2, q3), -_s(q1, q2, q3), 0,
         -d2 * _c(q1) + (d2 + d3) * _c(q1, q2) + (x[3] - d3) * _c(q1, q2, q3)],
        [_s(q1, q2, q3), _c(q1, q2, q3), 0,
         -d2 * _s(q1) + (d2 + d3) * _s(q1, q2) + (x[3] - d3) * _s(q1, q2, q3)],
        [0, 0, 1, z[3]], [0, 0, 0, 1]])


def Js_printed(q):
    """J_1^s … J_4^s (ω, v) of §3.6 as columns (J_3^s with s₁₂, see the module docstring)."""
    q1, q2, q3 = q[:3]
    c1, s1 = _c(q1), _s(q1)
    c12, s12 = _c(q1, q2), _s(q1, q2)
    c123, s123 = _c(q1, q2, q3), _s(q1, q2, q3)
    J1 = [0, 0, 1, 0, 0, 0]
    J2 = [0, 0, 1, -d2 * s1, d2 * c1, 0]
    J3 = [0, 0, 1, (d2 + d3) * s12 - d2 * s1, d2 * c1 - (d2 + d3) * c12, 0]
    J4 = S2 * np.array([-c123, -s123, 1,
                        (d2 + d3) * s12 - d2 * s1 + (d4 + h4 - d3) * s123,
                        d2 * c1 - (d2 + d3) * c12 + (d3 - d4 - h4) * c123,
                        d2 * _s(q2, q3) - (d2 + d3) * _s(q3)])
    return np.array([J1, J2, J3, J4], dtype=float).T


def _configs():
    rng = np.random.default_rng(0)
    return [np.zeros(5)] + [rng.uniform(-2.5, 2.5, 5) for _ in range(4)]


def test_reference_configuration(robot):
    """C_i(0) = A_i = (R_i(0), r_i(0)) and the spatial screws Y_i = (e_i, y_i × e_i) (eq. 12)."""
    y, e, R, r = rcm.geometry()
    Y = [[0, 0, 1, 0, 0, 0], [0, 0, 1, 0, d2, 0], [0, 0, 1, 0, -d3, 0],
         [-S2, 0, S2, 0, -d4 * S2 - h4 * S2, 0], [0, 0, 1, 0, -d5, 0]]
    q0 = np.zeros(5)
    Js = robot.frame_jacobian(q0, "body5", "spatial")
    for i in range(5):
        C = robot.frame_placement(q0, f"body{i + 1}")
        assert np.abs(C[:3, :3] - R[i]).max() <= TOL and np.abs(C[:3, 3] - r[i]).max() <= TOL
        assert np.abs(Js[:, i] - _la(Y[i])).max() <= TOL, i


def test_body_fixed_joint_screws(robot):
    """ⁱX_i printed in §2.5 = the i-th column of body i's body-fixed Jacobian, at any q."""
    X = [[0, 0, 1, 0, -x[1], 0], [0, 0, 1, 0, d2 - x[2], 0], [0, 0, 1, 0, -d3 + x[3], 0],
         [0, 0, 1, 0, -d4 * S2 - h4 * S2 + x[4] * S2 + z[4] * S2, 0],
         [0, 0, 1, 0, -d5 + x[5], 0]]
    for q in _configs():
        for i in range(5):
            J = robot.frame_jacobian(q, f"body{i + 1}", "body")
            assert np.abs(J[:, i] - _la(X[i])).max() <= TOL, i
            assert not np.any(J[:, i + 1:])


def test_pose_of_body3(robot):
    for q in _configs():
        assert np.abs(robot.frame_placement(q, "body3") - C3_printed(q)).max() <= TOL


def test_spatial_jacobian(robot):
    for q in _configs():
        Js = robot.frame_jacobian(q, "body5", "spatial")
        assert np.abs(Js[:, :4] - _la(Js_printed(q))).max() <= TOL
        J3 = robot.frame_jacobian(q, "body3", "spatial")
        assert np.abs(J3[:, :3] - _la(Js_printed(q)[:, :3])).max() <= TOL
        assert np.abs(J3[:, 3:]).max() == 0.0


def test_body3_jacobian_in_all_representations(robot):
    """J^b, J^h, J^m of body 3 from the printed C_3 and J^s by seed 001's Table 3, and the
    printed third column of J_3^b, (0, 0, 1, 0, x_3 − d_3, 0)."""
    for q in _configs():
        C = C3_printed(q)
        Js = np.zeros((6, 5))
        Js[:, :3] = Js_printed(q)[:, :3]
        Jb = np.linalg.solve(_Ad(C), Js)
        shift = np.eye(4)
        shift[:3, 3] = -C[:3, 3]
        Jh = _Ad(shift) @ Js
        Jm = np.r_[C[:3, :3].T @ Jh[:3], Jh[3:]]
        for rep, ref in (("body", Jb), ("hybrid", Jh), ("mixed", Jm)):
            J = robot.frame_jacobian(q, "body3", rep)
            assert np.abs(J - _la(ref)).max() <= TOL, rep
        assert np.abs(robot.frame_jacobian(q, "body3", "body")[:, 2]
                      - _la([0, 0, 1, 0, x[3] - d3, 0])).max() <= TOL
        # twists: V = J q̇ in each representation (Table 3)
        qd = np.linspace(-1, 1, 5)
        for rep, ref in (("body", Jb), ("spatial", Js), ("hybrid", Jh), ("mixed", Jm)):
            assert np.abs(robot.frame_velocity(q, qd, "body3", rep) - _la(ref @ qd)).max() <= TOL


def test_remote_center_of_motion(robot):
    """The RCM: joints 4 and 5 pivot the instrument about one point fixed to body 3 — its world
    position does not move with q4, q5 (and its velocity there is zero)."""
    rng = np.random.default_rng(3)
    for _ in range(3):
        q = rng.uniform(-2.5, 2.5, 5)
        p = robot.frame_placement(q, "rcm")[:3, 3]
        C3 = robot.frame_placement(q, "body3")
        p3 = np.linalg.solve(C3, np.r_[p, 1])[:3]
        ref = np.linalg.solve(C3_printed(np.zeros(5)), np.r_[rcm.rcm_point(), 1])[:3]
        assert np.abs(p3 - ref).max() <= 1e-14
        for _ in range(3):
            q2 = q.copy()
            q2[3:] = rng.uniform(-2.5, 2.5, 2)
            assert np.abs(robot.frame_placement(q2, "rcm")[:3, 3] - p).max() <= 1e-14
        J = robot.frame_jacobian(q, "rcm", "hybrid")
        assert np.abs(J[:3, 3:]).max() <= 1e-14    # q̇4, q̇5 move no point velocity at the RCM


def test_urdf_file_is_generated_from_the_parameters():
    with open(rcm.PATH) as f:
        assert f.read() == rcm.robot().to_urdf()
