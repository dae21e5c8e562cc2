"""Start-up from a fresh install (issue 10 item 5): a new venv, pip install, fresh processes."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from robots import _first_line, erd_root, locked_urdf_text
from settings import ERD, PANDA_LOCKED, REPO


_STARTUP_CHILD = r'''
import json, sys, time
t0 = time.perf_counter()
lib, urdf, locked_urdf, locked = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
out = {"steps": []}
def step(name, fn):
    t = time.perf_counter()
    r = fn()
    out["steps"].append((name, time.perf_counter() - t))
    return r
np = step("import numpy", lambda: __import__("numpy"))
if lib == "mbs_dynamics":
    mbs = step("import mbs_dynamics", lambda: __import__("mbs_dynamics"))
    r = step("load_urdf", lambda: mbs.load_urdf(urdf, locked_joints=locked or None))
    x = np.full(r.n, 0.1)
    step("inverse_dynamics", lambda: r.inverse_dynamics(x, x, x))
    step("mass_matrix", lambda: r.mass_matrix(x))
    step("coriolis_matrix", lambda: r.coriolis_matrix(x, x))
    step("gravity_torques", lambda: r.gravity_torques(x))
    step("mass_matrix_derivative", lambda: r.mass_matrix_derivative(x, x))
    step("torque_derivatives", lambda: r.torque_derivatives(np.full((5, r.n), 0.1)))
    step("forward_dynamics", lambda: r.forward_dynamics(x, x, x))
    out["total"] = time.perf_counter() - t0
    X = np.full((4, r.n), 0.1)
    step("batch inverse_dynamics (4, n)", lambda: r.inverse_dynamics(X, X, X))
    X5 = np.full((4, 5, r.n), 0.1)
    step("batch torque_derivatives (4, 5, n)", lambda: r.torque_derivatives(X5))
    out["file"] = mbs.__file__
    out["version"] = getattr(mbs, "__version__", "?")
elif lib == "pinocchio":
    pin = step("import pinocchio", lambda: __import__("pinocchio"))
    def load():
        m = pin.buildModelFromUrdf(urdf)
        if locked:
            m = pin.buildReducedModel(m, [m.getJointId(k) for k in locked], pin.neutral(m))
        return m, m.createData()
    m, d = step("buildModelFromUrdf + buildReducedModel + createData", load)
    x = np.full(m.nv, 0.1)
    step("rnea", lambda: pin.rnea(m, d, x, x, x))
    step("crba", lambda: pin.crba(m, d, x))
    step("computeCoriolisMatrix", lambda: pin.computeCoriolisMatrix(m, d, x, x))
    step("computeGeneralizedGravity", lambda: pin.computeGeneralizedGravity(m, d, x))
    step("computeRNEADerivatives", lambda: pin.computeRNEADerivatives(m, d, x, x, x))
    step("aba", lambda: pin.aba(m, d, x, x, x))
    out["total"] = time.perf_counter() - t0
    out["file"], out["version"] = pin.__file__, pin.__version__
else:
    dynibo = step("import dynibo", lambda: __import__("dynibo"))
    r = step("Robot.from_urdf", lambda: dynibo.Robot.from_urdf(locked_urdf))
    x = np.full(r.joint_count, 0.1)
    step("inverse_dynamics", lambda: r.inverse_dynamics(x, x, x))
    step("mass_matrix", lambda: r.mass_matrix(x))
    step("gravity", lambda: r.gravity(x))
    step("forward_dynamics", lambda: r.forward_dynamics(x, x, x))
    out["total"] = time.perf_counter() - t0
    out["file"], out["version"] = dynibo.__file__, dynibo.__version__
print(json.dumps(out))
'''


def _source_files(repo: Path) -> list:
    """The checkout's files as git sees them (tracked + untracked, not ignored), else all files
    outside .git/build/egg-info/caches."""
    try:
        p = subprocess.run(["git", "-C", str(repo), "ls-files", "-co", "--exclude-standard", "-z"],
                           capture_output=True, timeout=60)
        if p.returncode == 0 and p.stdout:
            return [f for f in p.stdout.decode().split("\0") if f and (repo / f).is_file()]
    except (OSError, subprocess.SubprocessError):
        pass
    skip = {".git", "build", "__pycache__", ".pytest_cache", ".hypothesis"}
    return [str(p.relative_to(repo)) for p in repo.rglob("*")
            if p.is_file() and not (set(p.relative_to(repo).parts) & skip)
            and not any(x.endswith(".egg-info") for x in p.parts)]


def _run(cmd, log, what, timeout=1800, **kw):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    dt = time.perf_counter() - t0
    log(f"  startup: {what}: {dt:.1f} s (exit {p.returncode})")
    return p, dt


def bench_startup(args, log) -> dict:
    """Fresh virtual environment → pip install (peers, then this checkout) → for each library a
    fresh process: import + load the Panda + first call of every public method. Twice each: the
    first process after the install (cold) and a second one (warm). Public API only."""
    tmp = Path(tempfile.mkdtemp(prefix="mbs_startup_"))
    out = {"ok": False, "notes": []}
    try:
        venv = tmp / "venv"
        py = venv / "bin" / "python"
        p, out["t_venv"] = _run([sys.executable, "-m", "venv", str(venv)], log, "python -m venv")
        if p.returncode:
            out["notes"].append(f"python -m venv failed: {p.stderr.strip()[-400:]}")
            return out
        peers = ["pin", "dynibo"]
        p, out["t_pip_peers"] = _run([str(py), "-m", "pip", "install", "--quiet", *peers], log,
                                     "pip install " + " ".join(peers))
        if p.returncode:
            out["notes"].append(f"pip install of the peers failed: {p.stderr.strip()[-400:]}")
            peers = []
        out["peers"] = peers
        src = tmp / "src"
        for f in _source_files(REPO):
            (src / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / f, src / f)
        cmd = [str(py), "-m", "pip", "install", "--quiet", str(src)]
        p, out["t_pip_ours"] = _run(cmd, log, "pip install <checkout copy>")
        out["pip_cmd"] = "pip install ."
        if p.returncode:
            out["notes"].append("pip install with build isolation failed "
                                f"({_first_line(p.stderr.strip()[-300:])}); retried with "
                                "--no-build-isolation")
            _run([str(py), "-m", "pip", "install", "--quiet", "setuptools", "wheel", "cython",
                  "numpy"], log, "pip install build requirements")
            p, t2 = _run(cmd[:4] + ["--no-build-isolation"] + cmd[4:], log,
                         "pip install --no-build-isolation <checkout copy>")
            out["t_pip_ours"] += t2
            out["pip_cmd"] = "pip install --no-build-isolation ."
            if p.returncode:
                out["notes"].append(f"pip install failed: {p.stderr.strip()[-600:]}")
                return out
        urdf = str(erd_root() / ERD["panda"][0])
        locked_file = tmp / "panda_locked.urdf"
        locked_file.write_text(locked_urdf_text(Path(urdf).read_text(), PANDA_LOCKED))
        # a new user's environment: nothing that points imports or JIT caches elsewhere
        env = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")
               and not k.endswith("_CACHE_DIR")}
        child = tmp / "startup_child.py"
        child.write_text(_STARTUP_CHILD)
        runs = {}
        for lib in ["mbs_dynamics"] + (["pinocchio", "dynibo"] if peers else []):
            runs[lib] = {}
            for kind in ("cold", "warm"):
                t0 = time.perf_counter()
                p = subprocess.run([str(py), str(child), lib, urdf, str(locked_file),
                                    json.dumps(PANDA_LOCKED)], capture_output=True, text=True,
                                   timeout=900, cwd=str(tmp), env=env)
                wall = time.perf_counter() - t0
                if p.returncode:
                    out["notes"].append(f"{lib} {kind} start failed: {p.stderr.strip()[-600:]}")
                    break
                d = json.loads(p.stdout.strip().splitlines()[-1])
                d["wall"] = wall
                runs[lib][kind] = d
                log(f"  startup {lib:12s} {kind}: in-process {d['total']:.3f} s, process wall "
                    f"{wall:.3f} s")
        out["runs"] = runs
        ours = runs.get("mbs_dynamics", {})
        site = Path(ours.get("cold", {}).get("file", "")).parent
        out["compiled_modules"] = sorted(str(x.relative_to(site)) for x in site.rglob("*.so")) \
            if site.is_dir() else []
        if ours.get("cold") and not str(site).startswith(str(venv)):
            out["notes"].append(f"mbs_dynamics was imported from {site}, not from the fresh venv")
        out["ok"] = "cold" in ours
        return out
    finally:
        if args.keep_venv:
            out["notes"].append(f"venv kept at {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
