"""Simulation: the built-in plant and RK4 simulator (``simulator``) and the Lie-group
integrators of seed 003 (``lie_integrators``)."""
