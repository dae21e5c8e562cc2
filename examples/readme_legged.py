"""README "Floating bases": a quadruped with series-elastic legs in stance (runs anywhere)."""
import numpy as np
import mbs_dynamics as mbs
from mbs_dynamics import data
from mbs_dynamics.control.feedforward import sea_feedforward

robot = mbs.load_urdf(data.robot("quad12"), floating_base=True)   # the bundled quadruped
q = np.r_[0.0, 0.0, 0.35, 0.0, 0.0, 0.0, 1.0,                      # base x, y, z, quaternion xyzw
          np.tile([0.0, 0.8, -1.6], 4)]                            # joints (robot.joint_names)
vs = np.zeros((4, robot.nv))          # v, v′, v″, v‴: base (linear, angular in its frame), joints
vs[0, :3] = (0.2, 0.0, 0.0)           # walking forward at 0.2 m/s
vs[1, 2] = 0.5                        # the base accelerating upward
tau = robot.inverse_dynamics(q, vs[0], vs[1])      # (nv,): base wrench (force, moment), joints
M = robot.mass_matrix(q)                            # (nv, nv)
weight = robot.total_mass * 9.81 / 4                # each foot carries a quarter, rising at 5 N/s
contacts = {f"{leg}_foot": [[0, 0, weight, 0, 0, 0], [0, 0, 5.0, 0, 0, 0]]
            for leg in ("LF", "RF", "LH", "RH")}    # (f, m) in the foot frame, and its rate
jet = robot.torque_derivatives((q, vs), f_ext=contacts)       # (3, nv): τ, τ′, τ″
ff = sea_feedforward(robot, (q, vs), stiffness=300.0, motor_inertia=0.02, f_ext=contacts)
ff.theta, ff.tau_motor, ff.base_wrench    # motor references of the 12 joints; what the base lacks
print(robot.nq, robot.nv, jet.shape, np.round(ff.base_wrench[0], 2))
