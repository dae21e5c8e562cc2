"""Closed loops: loop-closure constraints on a URDF spanning tree, constrained inverse dynamics
and its jets, and the Hamiltonian divide-and-conquer forward dynamics (seed 002).

Modules: :mod:`.spec` (loop dicts / YAML, validation), :mod:`.kinematics` (POE residual, exact
Jacobian, Newton assembly, dependent jets of any order — seed 001 §4), :mod:`.dynamics`
(projection by virtual work, jets of G), :mod:`.robot` (``ClosedLoopRobot``: the Robot API in
actuated coordinates over a full-coordinate tree Robot passed in), :mod:`.lagrange` (index-1,
Baumgarte), :mod:`.hdca` (seed 002, Alg. 1–3), :mod:`.simulate` (full-coordinate simulation),
``_closed`` (Cython: the per-call assembly, G, constrained inverse and forward dynamics, λ, M
and g of a ClosedLoopRobot in C over the RNEA/CRBA kernels; the NumPy modules are its fallback
and the jets).
Nothing here imports the package's ``__init__``, ``robot.py`` or ``loader.py``.
"""
