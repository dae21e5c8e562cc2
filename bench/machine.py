"""Machine facts that shape the numbers: CPU, cores, load, versions, thread settings."""
from __future__ import annotations

import os
import platform
import subprocess
import time
from pathlib import Path

import numpy as np

from settings import REPO


def blas_threads(n: int) -> str:
    """Set NumPy's OpenBLAS thread count at run time (``n`` > 0) and say what it is.

    The closed form multiplies 6n × 6n matrices; on a shared 2-core machine OpenBLAS threads
    spin against the other processes and make its timings erratic, so the benchmark pins them to
    one thread by default (the 1 kHz caller is single-threaded anyway)."""
    import ctypes
    import glob
    libdir = os.path.dirname(np.__file__) + ".libs"
    for path in sorted(glob.glob(os.path.join(libdir, "*openblas*"))):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for get, put in (("scipy_openblas_get_num_threads64_", "scipy_openblas_set_num_threads64_"),
                         ("scipy_openblas_get_num_threads", "scipy_openblas_set_num_threads"),
                         ("openblas_get_num_threads64_", "openblas_set_num_threads64_"),
                         ("openblas_get_num_threads", "openblas_set_num_threads")):
            if hasattr(lib, get) and hasattr(lib, put):
                before = getattr(lib, get)()
                if n > 0:
                    getattr(lib, put)(int(n))
                return (f"OpenBLAS {getattr(lib, get)()} thread(s)"
                        + (f" (set by --blas-threads; default was {before})" if n > 0 else ""))
    return "unknown BLAS (thread count left as is)"


def omp_threads(n: int) -> str:
    """Run the package's OpenMP batches on ``n`` threads (``n`` > 0; 0 leaves them as they are)
    and say so. Issue 21 counts batches in CPU time with threads not counting toward the ratio:
    one thread makes the ratio work against work (on this shared 2-core machine a second thread
    costs more CPU time than it saves). Sets ``OMP_NUM_THREADS`` for what is loaded later and
    calls ``omp_set_num_threads`` of the process's libgomp for what is loaded already."""
    import ctypes
    if n <= 0:
        return f"left as is (OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')})"
    os.environ["OMP_NUM_THREADS"] = str(n)
    for name in ("libgomp.so.1", "libomp.so", "libiomp5.so"):
        try:
            ctypes.CDLL(name).omp_set_num_threads(int(n))
            break
        except (OSError, AttributeError):
            continue
    return f"{n} (set by --omp-threads: batches run on {n} thread(s))"


def machine_facts() -> dict:
    """CPU, cores, load, versions and thread settings that shape the numbers."""
    import mbs_dynamics
    facts = {}
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    facts["CPU"] = cpu
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else "?"
    facts["cores (os.cpu_count / usable by this process)"] = f"{os.cpu_count()} / {usable}"
    try:
        facts["load average at start (1, 5, 15 min)"] = ", ".join(
            f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        pass
    facts["OS"] = f"{platform.system()} {platform.release()}"
    facts["Python"] = platform.python_version()
    facts["numpy"] = np.__version__
    for mod in ("pinocchio", "dynibo", "mujoco"):
        try:
            facts[mod] = __import__(mod).__version__
        except Exception:  # noqa: BLE001
            facts[mod] = "not installed"
    pkg = Path(mbs_dynamics.__file__).parent
    so = sorted(x.name for x in pkg.rglob("*.so"))
    facts["mbs_dynamics"] = (f"{mbs_dynamics.__version__} from `{_short_path(pkg)}`; "
                             f"{len(so)} compiled extension module(s)")
    envs = {k: v for k, v in os.environ.items()
            if k.startswith(("OPENBLAS", "OMP_", "MKL_", "BLIS_", "GOMP_", "KMP_"))}
    facts["thread env (OMP_*, OPENBLAS_*, …)"] = (
        ", ".join(f"{k}={v}" for k, v in sorted(envs.items())) or "none set")
    try:
        head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--",
                                "mbs_dynamics", "setup.py", "pyproject.toml"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        if head:
            facts["git commit"] = head + (" (the measured code has uncommitted changes)"
                                          if dirty else "")
    except (OSError, subprocess.SubprocessError):
        pass
    facts["date (UTC)"] = time.strftime("%Y-%m-%d %H:%M", time.gmtime())
    return facts


def _short_path(p: Path) -> str:
    try:
        return str(Path(p).resolve().relative_to(REPO)) + " (this checkout)"
    except ValueError:
        return str(p)
