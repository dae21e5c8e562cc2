"""README "Trajectories and elastic-actuator feedforward" (runs from any directory)."""
import mbs_dynamics as mbs
from mbs_dynamics import data
from mbs_dynamics.control.trajectory import Trajectory
from mbs_dynamics.control.feedforward import feedforward, sea_feedforward, vsa_feedforward

robot = mbs.load_urdf(data.robot("arm7"))
traj = Trajectory.load(data.trajectory("arm7_example")).reorder(robot.joint_names)
qs = traj.sample(1.2)                     # (5, n): q, q′, q″, q‴, q⁗ — C⁴, at rest at both ends
ff = sea_feedforward(robot, qs, stiffness=2000.0, motor_inertia=0.2)
ff.theta, ff.theta_dot, ff.theta_ddot, ff.tau_motor    # θ = q + K⁻¹τ, …, τ_m = Bθ″ + τ
batch = sea_feedforward(robot, traj.sample_many(traj.times_at_rate(1000.0)), 2000.0, 0.2)  # (N, n)
vsa = vsa_feedforward(robot, qs, sigma=0.1, motor_inertia=0.2, k=1000.0, a=5.0)
same = feedforward(robot, qs, mbs.VSA(sigma=0.1, motor_inertia=0.2, k=1000.0, a=5.0))
print(batch.theta.shape, abs(vsa.theta - same.theta).max())
