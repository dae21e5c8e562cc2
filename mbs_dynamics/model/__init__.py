"""Model: URDF parsing and validation (``urdf``), the frozen :class:`~.model.Model` built from it
(``model``) and the mimic-joint projection (``mimic``). Reads only the kernels floor (Lie math,
the Data layout)."""
