"""Closed loops: loop-closure constraints, constrained inverse dynamics and its jets, and the
Hamiltonian divide-and-conquer forward dynamics (seed 002)."""
