"""Write iiwa14.urdf: seed 004 §6.2's KUKA LBR iiwa 14 R820 with the identified inertial data.

Kinematics (seed 004 §6.2, eq. 58 ff.): modified
Denavit–Hartenberg body-fixed frames, every joint axis the local z axis, ``X_i = (0,0,1,0,0,0)``;
``r_{i-1,i} = 0`` except ``²r_{2,3} = (0, r3, 0)`` and ``⁴r_{4,5} = (0, -r5, 0)``;
``R_{0,1} = I``, ``R_{i-1,i} = Rx(+90°)`` for i = 2, 5, 6 and ``Rx(-90°)`` for i = 3, 4, 7.
The seed's text omits the lengths: r3 = 0.42 m and r5 = 0.40 m (the iiwa 14 R820's upper arm
and forearm, KUKA's data sheet), and the base frame sits 0.36 m below joint 1 (the shoulder
height).  The base offset is along gravity on a fixed base, so it changes no joint torque.

Dynamics: Table 1 of the seed (Kumar & Müller, "Closed-form time derivatives of the equations of
motion of rigid body systems", 2021) = Stürz, Affolter & Smith (2017), "Parameter identification of the
KUKA LBR iiwa robot including constraints on physical feasibility", IFAC-PapersOnLine 50(1).
Masses, COMs (in the link frames above) and inertias [Ixx Iyy Izz Iyz Ixz Ixy] about the COM in
the link frame, transcribed from the public copy in github.com/ESTEKI/iiwa14-control
(loadRobotmodel1.m, the COMs before that script's re-orientation to MATLAB's frames and the
inertia rows marked "Real values in paper").  One correction, see README.md: link 4's Izz is
published as 0.4988; we use 0.04988 (= Ixx + Iyy, the feasibility boundary).

Run ``python examples/seed004/model.py`` to rewrite the URDF next to this file.
"""
import math
import os

import numpy as np

R3, R5, D_BASE = 0.42, 0.40, 0.36            # m (not in the seed's text; see module docstring)

# link: mass [kg], COM [m] in the link frame, [Ixx Iyy Izz Iyz Ixz Ixy] [kg m^2] about the COM
TABLE1 = [
    (3.94781, (-0.00351, 0.00160, -0.03139), (0.00455, 0.00454, 0.00029, 0.00001, 0.0, 0.0)),
    (4.50275, (-0.00767, -0.16669, -0.00355), (0.00032, 0.00010, 0.00042, 0.0, 0.0, 0.0)),
    (2.45520, (-0.00225, -0.03492, -0.02652), (0.00223, 0.00219, 0.00073, 0.00007, 0.00007, 0.0)),
    (2.61155, (-0.05268, 0.03818, 0.03844), (0.03844, 0.01144, 0.04988, -0.00111, -0.00112, 0.00088)),
    (3.41000, (-0.00237, -0.21134, 0.00277), (0.00277, 0.00284, 0.00012, 0.0, 0.0, 0.0)),
    (3.38795, (0.02019, -0.02750, 0.00050), (0.00050, 0.00281, 0.00232, 0.0, 0.0, 0.0)),
    (0.35432, (-0.02324, 0.07138, 0.00795), (0.00795, 0.01089, 0.00294, -0.00029, -0.00029, 0.00029)),
]
LINK4_IZZ_PUBLISHED = 0.4988                  # corrected to 0.04988 above (README.md)

# joint i: (origin xyz in frame i-1, roll about x) — seed 004 §6.2
HALF_PI = math.pi / 2
JOINTS = [
    ((0.0, 0.0, D_BASE), 0.0),
    ((0.0, 0.0, 0.0), HALF_PI),
    ((0.0, R3, 0.0), -HALF_PI),
    ((0.0, 0.0, 0.0), -HALF_PI),
    ((0.0, -R5, 0.0), HALF_PI),
    ((0.0, 0.0, 0.0), HALF_PI),
    ((0.0, 0.0, 0.0), -HALF_PI),
]


def inertia_matrix(row):
    """3×3 inertia about the COM from a Table 1 row [Ixx Iyy Izz Iyz Ixz Ixy] (kg m²)."""
    ixx, iyy, izz, iyz, ixz, ixy = row
    return np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])


def urdf():
    """The URDF text of the model (base ``iiwa_link_0``, links ``iiwa_link_1`` … ``_7``)."""
    out = ['<?xml version="1.0"?>',
           '<!-- written by examples/seed004/model.py: seed 004 §6.2 frames, '
           'Stürz, Affolter & Smith (2017) Table 1 inertial data -->',
           '<robot name="iiwa14_seed004">', '  <link name="iiwa_link_0"/>']
    for i, ((m, c, row), (xyz, roll)) in enumerate(zip(TABLE1, JOINTS), start=1):
        ixx, iyy, izz, iyz, ixz, ixy = row
        out += [f'  <link name="iiwa_link_{i}">', '    <inertial>',
                f'      <origin xyz="{c[0]!r} {c[1]!r} {c[2]!r}" rpy="0 0 0"/>',
                f'      <mass value="{m!r}"/>',
                f'      <inertia ixx="{ixx!r}" ixy="{ixy!r}" ixz="{ixz!r}" iyy="{iyy!r}" '
                f'iyz="{iyz!r}" izz="{izz!r}"/>', '    </inertial>', '  </link>',
                f'  <joint name="iiwa_joint_{i}" type="revolute">',
                f'    <parent link="iiwa_link_{i - 1}"/>', f'    <child link="iiwa_link_{i}"/>',
                f'    <origin xyz="{xyz[0]!r} {xyz[1]!r} {xyz[2]!r}" rpy="{roll!r} 0 0"/>',
                '    <axis xyz="0 0 1"/>',
                '    <limit lower="-3.05" upper="3.05" effort="320" velocity="1.48"/>',
                '  </joint>']
    out.append('</robot>')
    return "\n".join(out) + "\n"


PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "iiwa14.urdf")

if __name__ == "__main__":
    with open(PATH, "w", encoding="utf-8") as fh:
        fh.write(urdf())
    for i, (_, _, row) in enumerate(TABLE1, start=1):
        ev = np.linalg.eigvalsh(inertia_matrix(row))
        print(f"link {i}: principal moments {ev}, triangle slack "
              f"{ev[0] + ev[1] - ev[2]:+.2e}")
    print("wrote", PATH)
