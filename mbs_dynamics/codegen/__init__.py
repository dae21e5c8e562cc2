"""Code generation: per-robot C99 for τ, its jets, M, g, forward dynamics and frame Jacobians.

``generate(robot, ...)`` writes straight-line C for one robot (the model's numbers folded in,
the tree unrolled, zeros and ones of screws, poses and inertias skipped, common subexpressions
shared); ``compile(robot)`` builds it into a cached shared library and returns a Robot-like
object calling it. The rooms:

- :mod:`.emit` — the scalar expression DAG (hash-consed, exact folds) and the C emitter;
- :mod:`.tree` — the robot in generator frames (one-entry screws), symbolic spatial algebra;
- :mod:`.jets` — RNEA and its jets τ^(k) (doc/math.md recursion; K = 0 is τ, v = a = 0 is g);
- :mod:`.crba`, :mod:`.ldl` — M(q) and forward dynamics (CRBA + unrolled LᵀDL);
- :mod:`.jacobian` — LOCAL frame Jacobians; :mod:`.generate` — the files;
- :mod:`.compile` — the cache, the compiler, the CPython wrapper (``_wrapper.c.in``) or ctypes.
"""
from .generate import FUNCTIONS, generate  # noqa: F401
from .tree import CodegenError  # noqa: F401
# the function shadows its submodule's name on purpose: ``mbs.codegen.compile(robot)``
from .compile import CodegenWarning, CompiledRobot, CompileError, cache_dir  # noqa: F401,E402
from .compile import compile_robot as compile  # noqa: F401,E402,A001


__all__ = ["FUNCTIONS", "CodegenError", "CodegenWarning", "CompileError", "CompiledRobot",
           "cache_dir", "compile", "generate"]
