"""Code generation: per-robot C99 for τ, its jets, M, g, forward dynamics and frame Jacobians.

``generate(robot, ...)`` writes straight-line C for one robot (the model's numbers folded in,
the tree unrolled, zeros and ones of screws, poses and inertias skipped, common subexpressions
shared: :mod:`.emit`); ``compile(robot)`` builds it into a cached shared library and returns a
Robot-like object calling it (:mod:`.compile`).
"""
from .generate import FUNCTIONS, generate  # noqa: F401
from .tree import CodegenError  # noqa: F401


def compile(robot, cflags=None, **kw):  # noqa: A001 (the issue's name)
    """See :func:`mbs_dynamics.codegen.compile.compile_robot`."""
    from .compile import compile_robot
    return compile_robot(robot, cflags=cflags, **kw)


__all__ = ["FUNCTIONS", "CodegenError", "compile", "generate"]
