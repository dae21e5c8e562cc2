"""Time C functions in C, in thread CPU time (issue 21): the raw-C side of the compiled limit.

One helper, :func:`time_c`, for every generator of C code (CasADi's in ``casadi_c``, the
package's own code generation): it writes a small harness next to the given sources, compiles
them together with the same flags (``$CC``, default ``cc``; ``-O3 -march=native``), runs it once
and reads back µs per call. The harness times every call in a loop calibrated to about
``target_time`` seconds with ``clock_gettime(CLOCK_THREAD_CPUTIME_ID)`` (other processes on a
shared machine do not count; wall time swings 2× here), round-robin over the calls like
``timing.measure_group`` (the first call rotates between repeats), so the calls of one repeat see
the same machine state. The sources are separate translation units from the harness and no
link-time optimisation is used, so no call can be hoisted out of its loop.

Example (the package's generated code, ``robot.h`` declaring ``robot_inverse_dynamics`` and
``robot_workspace``)::

    r = time_c({"robot.c": c_text, "robot.h": h_text},
               {"tau": "robot_inverse_dynamics(q, v, a, tau, &w);"},
               arrays={"q": q, "v": v, "a": a, "tau": np.zeros(7)},
               headers=["robot.h"], globals_c="static robot_workspace w;",
               outputs=["tau"])
    r.stats["tau"].med      # µs per call, median over the repeats
    r.outputs["tau"]        # what the first call wrote, to compare with a reference
"""
from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from timing import Stat

DEFAULT_CFLAGS = ("-O3", "-march=native")


@dataclass
class CTiming:
    """What :func:`time_c` measured."""
    stats: dict                 # call name → Stat of µs per call (thread CPU time)
    outputs: dict               # array name → np.ndarray after one call of every call, in order
    numbers: dict               # call name → calls per timed loop
    compile_s: float            # seconds to compile sources + harness
    command: str                # the compiler command line
    cc_version: str = ""
    notes: list = field(default_factory=list)


def _c_array(name, a):
    a = np.ascontiguousarray(a, dtype=np.float64).ravel()
    vals = ", ".join(repr(float(x)) for x in a) if a.size else "0.0"
    return f"static double {name}[{max(a.size, 1)}] = {{{vals}}};"


_HARNESS = r"""
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <time.h>
%(includes)s

%(arrays)s
%(globals)s

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double) t.tv_sec + 1e-9 * (double) t.tv_nsec;
}

static double run(int k, long n) {
    long i;
    double t0 = now();
    switch (k) {
%(cases)s
    }
    return now() - t0;
}

int main(void) {
    const int K = %(ncalls)d, R = %(repeat)d;
    const double target = %(target)r;
    long number[%(ncalls)d];
    int k, r, j;
%(init)s
    for (k = 0; k < K; ++k) run(k, 1);           /* first calls: the outputs below */
%(print_outputs)s
    for (k = 0; k < K; ++k) {                    /* calibrate: one loop ~ target seconds */
        long n = 1;
        double t;
        for (;;) {
            t = run(k, n);
            if (t >= 0.2 * target || n >= 1000000000L) break;
            n *= (t < 0.02 * target) ? 10 : 2;
        }
        n = (long) (n * target / (t > 1e-9 ? t : 1e-9));
        number[k] = n > 0 ? n : 1;
    }
    for (r = 0; r < R; ++r)
        for (j = 0; j < K; ++j) {
            k = (r + j) %% K;
            printf("T %%d %%ld %%.17g\n", k, number[k], run(k, number[k]) / number[k] * 1e6);
        }
    return 0;
}
"""


def cc_command():
    """The C compiler (``$CC`` or ``cc``) as an argv list, or None if there is none."""
    cc = shlex.split(os.environ.get("CC", "cc"))
    return cc if cc and shutil.which(cc[0]) else None


def time_c(sources, calls, *, arrays=None, headers=(), globals_c="", init_c="", outputs=(),
           cflags=DEFAULT_CFLAGS, libs=("-lm",), repeat=11, target_time=0.02,
           workdir=None) -> CTiming:
    """Compile ``sources`` with a timing harness and time each call in thread CPU time.

    Args:
        sources: {file name: C text} written into the work directory (``.c`` files are
            compiled, others, e.g. headers, only written), or a list of paths of ``.c`` files.
        calls: {name: C statement(s)}, one execution per timed iteration, e.g.
            ``"robot_inverse_dynamics(q, v, a, tau, &w);"``.
        arrays: {name: array} → file-scope ``static double name[size]`` initialised with the
            values (flattened, C order): the inputs and the outputs of the calls.
        headers: names given to ``#include "…"`` in the harness.
        globals_c: C declarations at file scope (workspaces, argument pointer arrays …).
        init_c: C statements run once at the start of ``main`` (before the first calls).
        outputs: names in ``arrays`` printed after one call of every call (in ``calls``
            order) and returned in ``CTiming.outputs`` to check results against a reference.
        cflags: compiler flags for sources and harness alike (default ``-O3 -march=native``).
        repeat, target_time: timed repeats, seconds per timed loop (calibrated in C).
        workdir: where to build (default: a temporary directory, removed afterwards).
    Returns:
        :class:`CTiming`; ``stats[name]`` is a ``timing.Stat`` of µs per call.
    Raises:
        RuntimeError: no compiler, or the compiler's message when compiling fails.
    """
    cc = cc_command()
    if cc is None:
        raise RuntimeError(f"no C compiler: $CC / cc not found ({os.environ.get('CC', 'cc')})")
    arrays = dict(arrays or {})
    names = list(calls)
    tmp = None
    if workdir is None:
        tmp = tempfile.mkdtemp(prefix="mbs_ctime_")
        workdir = tmp
    wd = Path(workdir)
    wd.mkdir(parents=True, exist_ok=True)
    try:
        cfiles = []
        if isinstance(sources, dict):
            for fname, text in sources.items():
                (wd / fname).write_text(text)
                if fname.endswith(".c"):
                    cfiles.append(str(wd / fname))
        else:
            cfiles = [str(Path(p).resolve()) for p in sources]
        cases = "\n".join(f"    case {k}: for (i = 0; i < n; ++i) {{ {calls[nm]} }} break;"
                          for k, nm in enumerate(names))
        sizes = {nm: max(np.size(a), 1) for nm, a in arrays.items()}
        pr = "\n".join(
            f'    printf("O {o}");\n    for (j = 0; j < {sizes[o]}; ++j) printf(" %.17g", {o}[j]);'
            '\n    printf("\\n");' for o in outputs)
        text = _HARNESS % dict(
            includes="\n".join(f'#include "{h}"' for h in headers),
            arrays="\n".join(_c_array(nm, a) for nm, a in arrays.items()), globals=globals_c,
            cases=cases, ncalls=len(names), repeat=int(repeat), target=float(target_time),
            init=init_c, print_outputs=pr)
        (wd / "ctiming_harness.c").write_text(text)
        exe = wd / "ctiming_harness"
        cmd = cc + list(cflags) + ["-I", str(wd), str(wd / "ctiming_harness.c"), *cfiles,
                                   "-o", str(exe), *libs]
        t0 = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True, cwd=str(wd))
        compile_s = time.perf_counter() - t0
        if p.returncode:
            raise RuntimeError(f"{shlex.join(cmd)} failed:\n{p.stderr.strip()[-3000:]}")
        p = subprocess.run([str(exe)], capture_output=True, text=True, cwd=str(wd))
        if p.returncode:
            raise RuntimeError(f"the timing harness failed (exit {p.returncode}): "
                               f"{p.stderr.strip()[-1000:]}")
        vals = {nm: [] for nm in names}
        numbers, outs = {}, {}
        for line in p.stdout.splitlines():
            parts = line.split()
            if parts and parts[0] == "T":
                nm = names[int(parts[1])]
                numbers[nm] = int(parts[2])
                vals[nm].append(float(parts[3]))
            elif parts and parts[0] == "O":
                outs[parts[1]] = np.array([float(x) for x in parts[2:]]).reshape(
                    np.shape(arrays[parts[1]]))
        ver = subprocess.run(cc + ["--version"], capture_output=True, text=True)
        return CTiming({nm: Stat(v) for nm, v in vals.items()}, outs, numbers, compile_s,
                       shlex.join(cc + list(cflags)),
                       (ver.stdout.splitlines() or [""])[0])
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
