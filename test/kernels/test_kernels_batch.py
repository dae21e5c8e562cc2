"""The block batch kernels (kernels/_soa.h, issue 21 item 4): a batch gives the single calls'
numbers bit for bit (every block size, remainders, coordinate and oblique axes, prismatic
joints, the libm branch of the sine for |q| > 1e5, threads), and the joint-pose sine/cosine
(mbs_sincos) keeps τ at Pinocchio's to 1e-13 relative over a wide range of angles.
No timing here: speed lives in bench/README.md."""
from __future__ import annotations

import re

import numpy as np
import pytest

import mbs_dynamics as mbs
from conftest import pin_model, random_urdf

AXES = ("1 0 0", "0 1 0", "0 0 1", "0 0 -1", "-1 0 0", "0 0.6 0.8")


def _coordinate_axes(xml, seed):
    """The same tree with its joint axes along coordinate axes (the kernels' fast case), one
    oblique axis kept in the mix."""
    rng = np.random.default_rng(seed)
    return re.sub(r'<axis xyz="[^"]*"/>', lambda m: f'<axis xyz="{AXES[rng.integers(6)]}"/>',
                  xml)


@pytest.fixture(params=[(1, 3, False), (2, 9, True), (3, 14, False), (4, 25, True)],
                ids=lambda p: f"seed{p[0]}-n{p[1]}-{'coord' if p[2] else 'oblique'}")
def robot(request):
    seed, n, coord = request.param
    xml, _ = random_urdf(seed, n_movable=n, prismatic_prob=0.35)
    if coord:
        xml = _coordinate_axes(xml, seed)
    return mbs.load_urdf(xml)


@pytest.mark.parametrize("N", [1, 7, 12, 16, 40, 45, 64])  # 40: a block + 8 one by one
def test_batch_equals_single_calls_bit_for_bit(robot, N):
    n = robot.n
    rng = np.random.default_rng(N)
    QS = rng.uniform(-3, 3, (N, 5, n))
    QS[0, 0, 0] = 2.5e5            # a lane through libm's sin/cos
    if N > 3:
        QS[3, 0, -1] = -1.0e6
    tau = robot.inverse_dynamics(QS[:, 0], QS[:, 1], QS[:, 2])
    jet = robot.torque_derivatives(QS)
    pair = robot.torque_derivatives((np.ascontiguousarray(QS[:, 0]),
                                     np.ascontiguousarray(QS[:, 1:])))
    for s in range(N):
        np.testing.assert_array_equal(tau[s], robot.inverse_dynamics(*QS[s, :3]))
        np.testing.assert_array_equal(jet[s], robot.torque_derivatives(QS[s]))
        np.testing.assert_array_equal(pair[s], jet[s])
    # other orders take the general kernel: still the single calls' numbers
    jet1 = robot.torque_derivatives(QS[:, :4])
    for s in range(N):
        np.testing.assert_array_equal(jet1[s], robot.torque_derivatives(QS[s, :4]))


def test_large_batches_split_over_threads_give_the_same_numbers():
    xml, _ = random_urdf(11, n_movable=12)
    r = mbs.load_urdf(_coordinate_axes(xml, 11))
    N = 3001  # enough work to split (PARALLEL_WORK in _rnea.pyx) where threads exist
    QS = np.random.default_rng(5).standard_normal((N, 5, r.n))
    tau = r.inverse_dynamics(QS[:, 0], QS[:, 1], QS[:, 2])
    jet = r.torque_derivatives(QS)
    for s in (0, 1, N // 2 - 1, N // 2, N // 2 + 1, N - 17, N - 1):
        np.testing.assert_array_equal(tau[s], r.inverse_dynamics(*QS[s, :3]))
        np.testing.assert_array_equal(jet[s], r.torque_derivatives(QS[s]))


def test_out_and_aliasing_in_the_block_path():
    xml, _ = random_urdf(4, n_movable=6)
    r = mbs.load_urdf(_coordinate_axes(xml, 4))
    QS = np.random.default_rng(1).standard_normal((20, 5, 6))
    want = r.torque_derivatives(QS)
    out = np.empty((20, 3, 6))
    assert r.torque_derivatives(QS, out=out) is out
    np.testing.assert_array_equal(out, want)
    Q = np.ascontiguousarray(QS[:, 0])
    want_tau = r.inverse_dynamics(Q, QS[:, 1], QS[:, 2])
    r.inverse_dynamics(Q, QS[:, 1], QS[:, 2], out=Q)  # the result over an input
    np.testing.assert_array_equal(Q, want_tau)


def test_joint_sine_over_a_wide_range_matches_pinocchio():
    """One revolute joint swept over |q| ≤ 2e5 (both sides of the libm switch at 1e5): τ of the
    kernels' sincos against Pinocchio's (libm) at 1e-13 relative to the torque scale."""
    pin = pytest.importorskip("pinocchio")
    xml = """<robot name="p"><link name="b"/><link name="l"><inertial><origin xyz="0.3 0.05 0"/>
      <mass value="2"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.03"/>
      </inertial></link><joint name="j" type="revolute"><parent link="b"/><child link="l"/>
      <origin xyz="0 0 0.1" rpy="0.3 0 0"/><axis xyz="0 0 1"/>
      <limit lower="-1e9" upper="1e9" effort="1" velocity="1"/></joint></robot>"""
    r = mbs.load_urdf(xml, gravity=(0, -9.81, 0))
    pm = pin_model(xml, gravity=(0, -9.81, 0))
    pd = pm.createData()
    q = np.concatenate([np.linspace(-7, 7, 2001), np.geomspace(7, 2e5, 500),
                        -np.geomspace(7, 2e5, 500), [np.pi / 2, np.pi, 1e5, 1e5 + 1e-3]])
    Q = q[:, None]
    Z = np.zeros_like(Q)
    A = np.full_like(Q, 0.7)
    ours = r.inverse_dynamics(Q, Z + 0.3, A)[:, 0]
    ref = np.array([pin.rnea(pm, pd, np.array([x]), np.array([0.3]), np.array([0.7]))[0]
                    for x in q])
    scale = np.abs(ref).max()
    assert np.max(np.abs(ours - ref)) <= 1e-13 * scale
