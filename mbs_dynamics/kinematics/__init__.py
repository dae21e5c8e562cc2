"""Kinematics: frames, twists and Jacobians in the four representations (body, spatial, hybrid,
mixed; seed 001 §3), their time and configuration derivatives (seed 000 §2), Christoffel symbols."""
