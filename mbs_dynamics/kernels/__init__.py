"""Kernels: the compiled recursions (RNEA and its jets, CRBA/closed-form M, ABA) over the Data
workspace, the Lie-group math they are written in (``lie``) and the dense closed forms of seed 004
used as an independent cross-check. The lowest floor: imports nothing else of the package."""
