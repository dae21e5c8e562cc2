"""Seed 001's worked example (§2.5, §3.6): the surgical robot of Fig. 5 — a 3R arm (bodies 1–3)
carrying a remote-center-of-motion (RCM) mechanism (bodies 4, 5) whose joint axes 4 and 5 meet
the instrument axis in one point, the RCM (the incision point).

The paper describes it as a serial chain of five revolute joints by its spatial joint screws in
the reference configuration q = 0 (eq. 12, Fig. 6)

    y_1 = 0, y_2 = (−d2, 0, 0), y_3 = (d3, 0, 0), y_4 = (d4, 0, h4), y_5 = (d5, 0, 0),
    e_1 = e_2 = e_3 = e_5 = (0, 0, 1), e_4 = (−1/√2, 0, 1/√2),

and the reference poses of the body frames A_i = (R_i(0), r_i(0)) with R_4(0) = R_y(−45°) and
r_1 = (−x1, 0, z1), r_2 = (−x2, 0, −z2), r_3 = (x3, 0, z3), r_4 = (x4, 0, z4), r_5 = (x5, 0, z5).
The patent's mechanism realises the RCM with a curved guide; the paper's closed forms (and this
URDF) model the serial chain of five revolute joints that describes its motion — no closed loop.

The model is loaded straight from that data with ``mbs.from_screws(Y, A, ...)`` (the spatial
POE, seed 001 eq. 10): the body frames of the paper are the links ``body1`` … ``body5`` and the
joints ``q1`` … ``q5``; ``rcm`` is the remote center on body 5, the intersection of axes 4 and 5,
(d5, 0, h4 + d4 − d5) at q = 0. The paper gives no numbers: PARAMS are representative values in
metres. Run ``python rcm.py`` to rewrite ``rcm.urdf`` (``robot().to_urdf()``).
"""
from __future__ import annotations

import os

import numpy as np

PARAMS = dict(d2=0.30, d3=0.25, d4=0.20, h4=0.15, d5=0.35,
              x1=0.05, z1=0.10, x2=0.12, z2=0.05, x3=0.40, z3=0.20,
              x4=0.30, z4=0.35, x5=0.45, z5=0.30)

S2 = 1.0 / np.sqrt(2.0)


def geometry(p=PARAMS):
    """(y_i, e_i, R_i(0), r_i(0)) of the five joints/bodies (seed 001 §2.5)."""
    y = np.array([[0, 0, 0], [-p["d2"], 0, 0], [p["d3"], 0, 0], [p["d4"], 0, p["h4"]],
                  [p["d5"], 0, 0]], dtype=float)
    e = np.array([[0, 0, 1], [0, 0, 1], [0, 0, 1], [-S2, 0, S2], [0, 0, 1]], dtype=float)
    R = np.array([np.eye(3)] * 5)
    R[3] = [[S2, 0, -S2], [0, 1, 0], [S2, 0, S2]]
    r = np.array([[-p["x1"], 0, p["z1"]], [-p["x2"], 0, -p["z2"]], [p["x3"], 0, p["z3"]],
                  [p["x4"], 0, p["z4"]], [p["x5"], 0, p["z5"]]], dtype=float)
    return y, e, R, r


def rcm_point(p=PARAMS):
    """The remote center at q = 0: axis 5 (x = d5) meets axis 4 (y_4 + s e_4)."""
    return np.array([p["d5"], 0.0, p["h4"] + p["d4"] - p["d5"]])


def robot(p=PARAMS):
    """The RCM robot from its zero-reference screws Y_i = (y_i × e_i, e_i) (linear part first)
    and body reference poses A_i (seed 001 eq. 10–12)."""
    import mbs_dynamics as mbs

    y, e, R, r = geometry(p)
    Y = np.c_[np.cross(y, e), e]
    A = np.array([np.eye(4)] * 5)
    A[:, :3, :3], A[:, :3, 3] = R, r
    inertials = [dict(mass=2.0 - 0.3 * i, com=(0.02, 0.01, -0.03),
                      inertia=np.diag([0.02, 0.03, 0.025])) for i in range(5)]
    rcm = np.eye(4)
    rcm[:3, 3] = R[4].T @ (rcm_point(p) - r[4])
    return mbs.from_screws(Y, A, inertials=inertials, joint_names=[f"q{i}" for i in range(1, 6)],
                           link_names=[f"body{i}" for i in range(1, 6)],
                           limits=[(-3, 3, 2, 50)] * 5, frames={"rcm": ("body5", rcm)},
                           name="rcm_seed001")


PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rcm.urdf")

if __name__ == "__main__":
    with open(PATH, "w") as f:
        f.write(robot().to_urdf())
    print(f"wrote {PATH}")
