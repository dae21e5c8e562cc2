"""Pinocchio's own C++ ``ComputeRNEASecondOrderDerivatives`` (its Python wheel does not expose it),
built at run time from the headers and libraries the pip-installed ``pin`` wheel ships (its
``cmeel.prefix``; Eigen from that prefix, from CasADi's wheel or the system), never from fetched
sources. ``bench/pinocchio_so.cpp`` is compiled once per source, flags and prefix into a cache
folder; a model crosses over as Pinocchio's own text serialisation (``model.saveToText``), so
locked joints, floating bases and chains built in Python are the same model in C++.

- :func:`tensors` → Pinocchio's four tensors at one state, as (nv, nv, nv) arrays in Pinocchio's
  index order ``T[i, j, k] = T(i, j, k)`` (its tensors are column-major Eigen tensors);
- :func:`timings` → CPU µs per call of the second-order call (its four tensors zeroed each call,
  as its documentation requires) and of ``computeRNEADerivatives``, both compiled in one
  translation unit with the same flags, interleaved repeats in one process.

:func:`build` raises :class:`Unavailable` (a clear message) when no C++ compiler, no Pinocchio
headers or no Eigen is found; callers skip on it.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import numpy as np

SOURCE = Path(__file__).resolve().parent / "pinocchio_so.cpp"
# Pinocchio's own interface definitions (its CMake config's INTERFACE_COMPILE_DEFINITIONS, minus
# PINOCCHIO_ENABLE_TEMPLATE_INSTANTIATION: both calls are instantiated here, with the same flags)
DEFINES = ("-DBOOST_MPL_LIMIT_LIST_SIZE=30", "-DBOOST_MPL_LIMIT_VECTOR_SIZE=30",
           "-DBOOST_MPL_CFG_NO_PREPROCESSED_HEADERS", "-DBOOST_FUSION_INVOKE_MAX_ARITY=12",
           "-DNDEBUG")
FAST = ("-O3", "-march=native")


class Unavailable(RuntimeError):
    """No compiler, Pinocchio headers or Eigen: the C++ peer cannot be built here."""


def prefix() -> Path:
    """The ``cmeel.prefix`` folder of the installed ``pin`` wheel (headers and libraries)."""
    for base in {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"], *sys.path}:
        p = Path(base) / "cmeel.prefix"
        if (p / "include" / "pinocchio" / "algorithm"
                / "rnea-second-order-derivatives.hpp").is_file():
            return p
    raise Unavailable("Pinocchio's C++ headers (the pin wheel's cmeel.prefix/include/pinocchio) "
                      "were not found")


def eigen_dir(pre: Path) -> Path:
    """A folder holding ``Eigen/`` and ``unsupported/Eigen/CXX11/Tensor``."""
    cands = [pre / "include" / "eigen3", pre / "include"]
    try:
        import casadi
        cands.append(Path(casadi.__file__).parent / "include" / "eigen3")
    except ImportError:
        pass
    cands.append(Path("/usr/include/eigen3"))
    for c in cands:
        if (c / "Eigen" / "Core").is_file() and (c / "unsupported/Eigen/CXX11/Tensor").is_file():
            return c
    raise Unavailable("no Eigen headers with unsupported/Eigen/CXX11/Tensor were found")


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "mbs_dynamics" / "pinocchio_so"


def build(opt=FAST, cache: Path | None = None) -> Path:
    """The compiled program (built on first use; ~2 CPU minutes at -O3)."""
    cxx = os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++")
    if not cxx or not shutil.which(cxx):
        raise Unavailable("no C++ compiler (g++ / c++ / $CXX) on PATH")
    pre = prefix()
    eig = eigen_dir(pre)
    lib = pre / "lib"
    cmd = [cxx, *opt, "-std=c++17", *DEFINES, f"-I{pre / 'include'}", f"-I{eig}",
           str(SOURCE), "-L" + str(lib), "-lboost_serialization"]
    # the key: what the program is made of, not where this environment lives (a fresh virtual
    # environment with the same wheels reuses it; the libraries are found through
    # LD_LIBRARY_PATH at run time, see _run)
    try:
        ver = subprocess.run([cxx, "--version"], capture_output=True, text=True).stdout
    except OSError as e:
        raise Unavailable(f"the C++ compiler {cxx} does not run: {e}") from None
    config = (pre / "include" / "pinocchio" / "config.hpp").read_text()
    eigen = (eig / "Eigen" / "src" / "Core" / "util" / "Macros.h").read_text()[:4000]
    key = hashlib.sha256("\0".join([SOURCE.read_text(), ver, config, eigen, *opt,
                                     *DEFINES]).encode()).hexdigest()[:16]
    folder = (cache or cache_root()) / key
    exe = folder / "pinocchio_so"
    if exe.is_file():
        return exe
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f"pinocchio_so.{os.getpid()}.tmp"
    r = subprocess.run([*cmd, "-o", str(tmp)], capture_output=True, text=True)
    if r.returncode != 0:
        raise Unavailable("compiling bench/pinocchio_so.cpp failed:\n" + r.stderr[-3000:])
    os.replace(tmp, exe)
    return exe


def _run(exe, pm, q, v, a, *args):
    with tempfile.TemporaryDirectory() as d:
        model, state = Path(d) / "model.txt", Path(d) / "state.txt"
        pm.saveToText(str(model))
        state.write_text(" ".join(repr(float(x)) for x in np.r_[q, v, a]))
        env = dict(os.environ)
        lib = str(prefix() / "lib")
        env["LD_LIBRARY_PATH"] = lib + (os.pathsep + env["LD_LIBRARY_PATH"]
                                        if env.get("LD_LIBRARY_PATH") else "")
        r = subprocess.run([str(exe), str(model), str(state), *map(str, args)],
                           capture_output=True, text=True, check=True, env=env)
    return r.stdout


def tensors(exe, pm, q, v, a):
    """Pinocchio's (d2tau_dqdq, d2tau_dvdv, dtau_dqdv, dtau_dadq) at (q, v, a), each
    ``T[i, j, k]`` = its ``T(i, j, k)``: dqdq[i, j, k] = ∂²τ_i/∂q_j∂q_k, dqdv[i, j, k] =
    ∂/∂q_k (∂τ_i/∂v_j), dadq[i, j, k] = ∂M_ij/∂q_k (its header)."""
    vals = np.array(_run(exe, pm, q, v, a, "dump").split(), dtype=float)
    nv = int(vals[0])
    return tuple(t.reshape((nv, nv, nv), order="F") for t in vals[1:].reshape(4, -1))


def timings(exe, pm, q, v, a, number, repeats):
    """(second-order µs, first-order µs) per interleaved repeat, CPU time."""
    out = _run(exe, pm, q, v, a, "bench", number, repeats)
    return np.array([[float(x) for x in line.split()] for line in out.splitlines()])
