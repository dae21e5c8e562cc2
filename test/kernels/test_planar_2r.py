"""The planar 2R robot of seed 004 §6.1: τ, τ′, τ″ written out by hand from the paper's printed
expressions, against our recursive and closed-form implementations."""
from __future__ import annotations

import numpy as np
import pytest
from numpy import cos, sin

import mbs_dynamics as mbs

L1, L2, m1, m2, g = 0.7, 0.5, 2.3, 1.4, 9.81

# Link frames at the joints (z axes = joint axes), COM at the end of each link, Θ_b as the
# paper's M_1, M_2: Θ_c = diag(L² m, 0, 0) so that Θ_b = diag(L² m, L² m, L² m). Gravity −y.
URDF = f"""<robot name="planar2r">
  <link name="base"/>
  <link name="link1"><inertial><origin xyz="{L1} 0 0"/><mass value="{m1}"/>
    <inertia ixx="{L1**2*m1}" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/></inertial></link>
  <link name="link2"><inertial><origin xyz="{L2} 0 0"/><mass value="{m2}"/>
    <inertia ixx="{L2**2*m2}" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/></inertial></link>
  <joint name="q1" type="revolute"><parent link="base"/><child link="link1"/>
    <axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="50" velocity="5"/></joint>
  <joint name="q2" type="revolute"><parent link="link1"/><child link="link2"/>
    <origin xyz="{L1} 0 0"/><axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="50" velocity="5"/></joint>
</robot>"""


def paper_tau(q, d1, d2, d3, d4):
    """Seed 004 §6.1 printed expressions; d1..d4 = q̇, q̈, q⃛, q⁗ (pairs)."""
    q1, q2 = q
    qd1, qd2 = d1
    qdd1, qdd2 = d2
    x1, x2 = d3  # third derivatives
    y1, y2 = d4  # fourth derivatives
    s2, c2, c1, s1 = sin(q2), cos(q2), cos(q1), sin(q1)
    c12, s12 = cos(q1 + q2), sin(q1 + q2)
    t1 = (L1**2 * qdd1 * m1 + L1**2 * qdd1 * m2 + L2**2 * qdd1 * m2 + L2**2 * qdd2 * m2
          + L2 * g * m2 * c12 + L1 * g * m1 * c1 + L1 * g * m2 * c1 - L1 * L2 * qd2**2 * m2 * s2
          + 2 * L1 * L2 * qdd1 * m2 * c2 + L1 * L2 * qdd2 * m2 * c2 - 2 * L1 * L2 * qd1 * qd2 * m2 * s2)
    t2 = L2 * m2 * (L1 * s2 * qd1**2 + L2 * qdd1 + L2 * qdd2 + g * c12 + L1 * qdd1 * c2)
    td1 = (L1**2 * x1 * m1 + L1**2 * x1 * m2 + L2**2 * x1 * m2 + L2**2 * x2 * m2
           - L2 * qd1 * g * m2 * s12 - L2 * qd2 * g * m2 * s12 + 2 * L1 * L2 * x1 * m2 * c2
           + L1 * L2 * x2 * m2 * c2 - L1 * qd1 * g * m1 * s1 - L1 * qd1 * g * m2 * s1
           - L1 * L2 * qd2**3 * m2 * c2 - 4 * L1 * L2 * qdd1 * qd2 * m2 * s2
           - 2 * L1 * L2 * qdd2 * qd1 * m2 * s2 - 3 * L1 * L2 * qdd2 * qd2 * m2 * s2
           - 2 * L1 * L2 * qd1 * qd2**2 * m2 * c2)
    td2 = L2 * m2 * (L2 * x1 + L2 * x2 - qd1 * g * s12 - qd2 * g * s12 + L1 * x1 * c2
                     + 2 * L1 * qdd1 * qd1 * s2 - L1 * qdd1 * qd2 * s2 + L1 * qd1**2 * qd2 * c2)
    tdd1 = (L1**2 * y1 * m1 + L1**2 * y1 * m2 + L2**2 * y1 * m2 + L2**2 * y2 * m2
            - 3 * L1 * L2 * qdd2**2 * m2 * s2 + L1 * L2 * qd2**4 * m2 * s2
            - L1 * qd1**2 * g * m1 * c1 - L1 * qd1**2 * g * m2 * c1
            - L2 * qdd1 * g * m2 * s12 - L2 * qdd2 * g * m2 * s12 + 2 * L1 * L2 * y1 * m2 * c2
            + L1 * L2 * y2 * m2 * c2 - L1 * qdd1 * g * m1 * s1 - L1 * qdd1 * g * m2 * s1
            - L2 * qd1**2 * g * m2 * c12 - L2 * qd2**2 * g * m2 * c12
            - 6 * L1 * L2 * qdd1 * qdd2 * m2 * s2 - 6 * L1 * L2 * x1 * qd2 * m2 * s2
            - 2 * L1 * L2 * x2 * qd1 * m2 * s2 - 4 * L1 * L2 * x2 * qd2 * m2 * s2
            - 6 * L1 * L2 * qdd1 * qd2**2 * m2 * c2 - 6 * L1 * L2 * qdd2 * qd2**2 * m2 * c2
            + 2 * L1 * L2 * qd1 * qd2**3 * m2 * s2 - 2 * L2 * qd1 * qd2 * g * m2 * c12
            - 6 * L1 * L2 * qdd2 * qd1 * qd2 * m2 * c2)
    tdd2 = -L2 * m2 * (qd1**2 * g * c12 - L2 * y2 - L2 * y1 + qd2**2 * g * c12
                       - 2 * L1 * qdd1**2 * s2 + qdd1 * g * s12 + qdd2 * g * s12 - L1 * y1 * c2
                       + L1 * qd1**2 * qd2**2 * s2 + 2 * qd1 * qd2 * g * c12
                       + L1 * qdd1 * qdd2 * s2 - 2 * L1 * x1 * qd1 * s2 + 2 * L1 * x1 * qd2 * s2
                       + L1 * qdd1 * qd2**2 * c2 - L1 * qdd2 * qd1**2 * c2
                       - 4 * L1 * qdd1 * qd1 * qd2 * c2)
    return np.array([[t1, t2], [td1, td2], [tdd1, tdd2]])


@pytest.mark.parametrize("method", ["recursive", "closed_form"])
def test_planar_2r_matches_paper(method):
    robot = mbs.load_urdf(URDF, gravity=(0.0, -g, 0.0))
    rng = np.random.default_rng(0)
    for _ in range(20):
        qs = rng.uniform(-2, 2, (5, 2))
        expect = paper_tau(*qs)
        got = robot.torque_derivatives(qs, method=method)
        np.testing.assert_allclose(got, expect, rtol=1e-12, atol=1e-11 * np.abs(expect).max())


def test_planar_2r_mass_matrix_and_gravity():
    """The textbook 2R M(q) and g(q) of the same robot (Spong–Hutchinson form)."""
    robot = mbs.load_urdf(URDF, gravity=(0.0, -g, 0.0))
    for q2 in (-1.0, 0.0, 0.4, 2.5):
        q = np.array([0.3, q2])
        c2 = cos(q2)
        M = np.array([[m1 * L1**2 + m2 * (L1**2 + L2**2 + 2 * L1 * L2 * c2), m2 * (L2**2 + L1 * L2 * c2)],
                      [m2 * (L2**2 + L1 * L2 * c2), m2 * L2**2]])
        np.testing.assert_allclose(robot.mass_matrix(q), M, rtol=1e-13)
        G = np.array([(m1 + m2) * g * L1 * cos(0.3) + m2 * g * L2 * cos(0.3 + q2),
                      m2 * g * L2 * cos(0.3 + q2)])
        np.testing.assert_allclose(robot.gravity_torques(q), G, rtol=1e-13)
