"""Constants of the side-by-side benchmark: robots, peers' targets, defaults (bench/ room)."""
from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
ROBOTS = ("panda", "ur5", "chain", "baxter")
PANDA_LOCKED = {"panda_finger_joint1": 0.0, "panda_finger_joint2": 0.0}
BAXTER_LOCKED = {"l_gripper_l_finger_joint": 0.0, "l_gripper_r_finger_joint": 0.0,
                 "r_gripper_l_finger_joint": 0.0, "r_gripper_r_finger_joint": 0.0}
ERD = {"panda": ("panda_description/urdf/panda.urdf", PANDA_LOCKED),
       "ur5": ("ur_description/urdf/ur5_robot.urdf", {}),
       "baxter": ("baxter_description/urdf/baxter.urdf", BAXTER_LOCKED)}
G0 = 9.80665  # [m/s²] standard gravity: dynibo's fixed value, used for every library here

# Issue 10 targets, 7-DOF Panda, as upper bounds on the time ratio ours/anchor
TARGETS = {
    "tau_dynibo": ("τ: `inverse_dynamics` / dynibo `inverse_dynamics`", 0.9),
    "g_dynibo": ("g: `gravity_torques` / dynibo `gravity`", 0.9),
    "M_best": ("M: `mass_matrix` / the faster of `pin.crba` and dynibo `mass_matrix`", 0.9),
    "aba_pin": ("ABA: `forward_dynamics` / `pin.aba`", 0.9),
    "C_pin": ("C̄: `coriolis_matrix` / `pin.computeCoriolisMatrix`", 1.0),
    "tau2_route": ("τ, τ′, τ″: `torque_derivatives` k=2 / Pinocchio's τ′ route", 0.3),
    "batch_tau": ("batch τ over N samples / Python loop over `pin.rnea` (time ratio)", 0.1),
    "batch_tau2": ("batch τ, τ′, τ″ over N samples / Python loop over Pinocchio's τ′ route "
                   "(time ratio)", 0.1),
    # issue 21 item 4: the same batches on the 30-joint chain, ≥ 6× (process CPU time)
    "batch_tau_chain": ("chain: batch τ over N samples / Python loop over `pin.rnea` (time ratio)",
                        1 / 6),
    "batch_tau2_chain": ("chain: batch τ, τ′, τ″ over N samples / Python loop over Pinocchio's τ′ "
                         "route (time ratio)", 1 / 6),
}
STARTUP_TARGET_S = 1.0
FD_STEP = 1e-5  # [s] step of the finite-difference τ″ (error O(h²), ≈ 1e-9 relative here)
PUBLIC_METHODS = ("inverse_dynamics", "mass_matrix", "coriolis_matrix", "gravity_torques",
                  "mass_matrix_derivative", "torque_derivatives", "forward_dynamics")

DEFAULTS = dict(out_dir=str(HERE), robots=",".join(ROBOTS), chain_n=30, repeat=11,
                target_time=0.02, batch=10_000, batch_repeat=5, scaling="6,12,24,48,96",
                enrich_duration=10.0, seed=0, blas_threads=1, clock="cpu",
                casadi="panda", omp_threads=1)
QUICK = dict(robots="panda,chain", chain_n=4, repeat=2, target_time=1e-4, batch=20,
             batch_repeat=1, scaling="2,3", enrich_duration=0.05, blas_threads=0,
             casadi="chain")
