"""``compile``: build a robot's generated C into a cached shared library and call it from Python.

The library is a CPython extension module (the generated C plus ``_wrapper.c.in``): a call with
exact arrays (float64, C-contiguous, the right shape, finite) goes straight from the
interpreter's vectorcall into the generated function, with no Python frame in between; anything
else (lists, strided views, ``out`` of the wrong kind, NaN, f_ext, other derivative orders) takes
the Python slow path of :class:`CompiledRobot`, which converts and checks with the kernels'
rules (:func:`~mbs_dynamics.kernels._data._check_array`) or hands the call to the robot itself.
Without the Python headers the same library is built without the wrapper and called with
:mod:`ctypes` (slower per call, the same results).

Cache: ``$MBS_DYNAMICS_CACHE``, else ``$XDG_CACHE_HOME/mbs_dynamics``, else
``~/.cache/mbs_dynamics``; one file per (generated source, flags, compiler, Python ABI), built in a
private temporary directory and moved into place with an atomic rename: a reader never sees a
half-built library, and two processes building the same model at once both succeed (the second
rename replaces an identical file). Compiler: ``$CC`` (default ``cc``), flags
``-O3 -march=native`` (never ``-ffast-math``: the results must match the kernels bit-for-bit in
spirit and at 1e-12 in fact).
"""
from __future__ import annotations

import ctypes
import hashlib
import importlib.util
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
import sysconfig
import tempfile
import threading
import warnings
from pathlib import Path

import numpy as np

from .generate import FUNCTIONS, c_name, check_arguments, generate
from .tree import Tree

DEFAULT_CFLAGS = ("-O3", "-march=native")
#: flags that change floating-point results or redefine what the code means; refused in
#: ``cflags`` and in ``$CC``'s words alike (a prefix match: ``-Dsin=cos``, ``-include x.h``)
_FORBIDDEN = ("-ffast-math", "-Ofast", "-funsafe-math-optimizations", "-ffinite-math-only",
              "-fassociative-math", "-freciprocal-math", "-fno-signed-zeros",
              "-fcx-limited-range", "-D", "-U", "-include", "-imacros")
#: environment variables that change what the compiler builds: part of the cache key
_CC_ENV = ("CPATH", "C_INCLUDE_PATH", "GCC_EXEC_PREFIX", "COMPILER_PATH", "LIBRARY_PATH",
           "LD_RUN_PATH", "SDKROOT", "MACOSX_DEPLOYMENT_TARGET")
_WRAPPER_VERSION = "2"
#: the C prefix of the code built into the CPython wrapper: none of the wrapper's own names
#: starts with it, whatever ``prefix`` the caller chose (``py``, ``wrapper`` once clashed)
_EXT_PREFIX = "mbs_gen"
_compilers = {}
_modules = {}
_failed = {}  # cache key → why the build failed (per process: never retried on every call)
_lock = threading.Lock()


class CompileError(RuntimeError):
    """The C compiler rejected the build, or the compiler, its flags or the cache directory
    cannot be used; the message names the value (and holds the compiler's own output)."""


class CodegenWarning(UserWarning):
    """Code generation fell back to the kernels (no working compiler)."""


def cache_dir() -> Path:
    """The per-user cache directory of compiled robots (created on use)."""
    d = os.path.expanduser(os.environ.get("MBS_DYNAMICS_CACHE") or "")
    if not d:
        xdg = os.environ.get("XDG_CACHE_HOME")
        d = os.path.join(xdg, "mbs_dynamics") if xdg else os.path.join(
            os.path.expanduser("~"), ".cache", "mbs_dynamics")
    return Path(d)


def _private_cache_dir():
    """:func:`cache_dir`, created 0700 and checked private: a directory that is not the user's,
    or that another user can write to, is refused (a library planted there would be loaded)."""
    d = cache_dir()
    src = "$MBS_DYNAMICS_CACHE" if os.environ.get("MBS_DYNAMICS_CACHE") else "the cache directory"
    try:
        d.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = d.stat()
    except (OSError, ValueError) as e:
        raise CompileError(f"{src} '{d}' cannot be created or used: "
                           f"{getattr(e, 'strerror', None) or e}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise CompileError(f"{src} '{d}' is not a directory")
    if hasattr(os, "getuid"):
        if st.st_uid != os.getuid():
            raise CompileError(f"{src} '{d}' belongs to user id {st.st_uid}, not to this user "
                               f"({os.getuid()}): its libraries are not loaded; choose a "
                               "directory of your own")
        if st.st_mode & 0o022:
            raise CompileError(f"{src} '{d}' can be written by other users (mode "
                               f"{stat.S_IMODE(st.st_mode):04o}): its libraries are not loaded; "
                               f"'chmod go-w {d}' or choose a private directory")
    return d


def _compiler():
    """(argv of $CC, identity string, None) or (argv, None, why it cannot be used).

    The identity is everything about the compiler that changes the bytes it writes: its argv,
    the executable's real path, size and time, its ``--version`` text and the environment
    variables it reads. Raises CompileError when ``$CC`` carries a refused flag."""
    raw = os.environ.get("CC")
    raw = "cc" if raw is None or raw == "" else raw
    try:
        cc = shlex.split(raw)
    except ValueError as e:
        return [raw], None, f"$CC = {raw!r} is not a command line ({e})"
    if not cc:
        return [raw], None, f"$CC = {raw!r} names no compiler"
    _refuse(cc[1:], f"$CC = {raw!r}", CompileError)
    key = tuple(cc)
    if key not in _compilers:
        exe = shutil.which(cc[0])
        if exe is None:
            _compilers[key] = (cc, None, f"$CC = {raw!r} is not found on PATH")
        else:
            try:
                st = os.stat(exe)
                r = subprocess.run(cc + ["--version"], capture_output=True, text=True,
                                   timeout=60, errors="replace")
                ident = "\0".join([repr(cc), os.path.realpath(exe), str(st.st_size),
                                   str(st.st_mtime_ns), r.stdout])
                _compilers[key] = (cc, ident, None)
            except (OSError, subprocess.SubprocessError) as e:
                _compilers[key] = (cc, None, f"$CC = {raw!r} does not run: {e}")
    cc, ident, why = _compilers[key]
    if ident is not None:
        ident += "\0" + repr([(k, os.environ.get(k)) for k in _CC_ENV])
    return cc, ident, why


def _refuse(flags, where, exc):
    for word in flags:
        for f in [word] + (word.split(",")[1:] if word.startswith("-Wp,") else []):
            _refuse1(f, word, where, exc)


def _refuse1(f, word, where, exc):
    for bad in _FORBIDDEN:
        if f == bad or (f.startswith(bad) and (bad in ("-D", "-U") or f[len(bad)] == "=")):
            raise exc(f"{where}: {word} changes the generated code's floating-point results "
                      "or meaning; it is not allowed")


def _check_flags(cflags):
    if cflags is None:
        return list(DEFAULT_CFLAGS)
    flags = shlex.split(cflags) if isinstance(cflags, str) else [str(f) for f in cflags]
    _refuse(flags, "cflags", ValueError)
    return flags


def _native(cc, flags):
    """What ``-march``/``-mcpu``/``-mtune=native`` resolve to, as the compiler reports it
    (``-###``: its driver's expanded target options); "" when no flag says native."""
    if not any(f.endswith("=native") for f in list(cc[1:]) + list(flags)):
        return ""
    key = ("native",) + tuple(cc) + tuple(flags)
    if key not in _compilers:
        d = tempfile.mkdtemp(prefix="mbs_cg_native_")
        try:
            Path(d, "n.c").write_text("int mbs_native;\n")
            r = subprocess.run(cc + list(flags) + ["-###", "-c", "n.c", "-o", "n.o"], cwd=d,
                               capture_output=True, text=True, timeout=60, errors="replace")
            out = "\n".join(ln for ln in (r.stderr + r.stdout).splitlines()
                            if "cc1" in ln)  # the compiler proper's command line (gcc, clang)
            opts = re.findall(r'"?(-m[A-Za-z0-9_.=,+-]+|-target-cpu"? "?\S+|'
                              r'-target-feature"? "?\S+)', out)
            res = " ".join(opts)
        except (OSError, subprocess.SubprocessError) as e:
            res = f"unknown ({e})"
        finally:
            shutil.rmtree(d, ignore_errors=True)
        if not res or res.startswith("unknown"):  # the compiler does not say: the CPU itself
            res += " " + _cpu_identity()
        _compilers[key] = res
    return _compilers[key]


def _cpu_identity():
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            lines = [ln for ln in f.read(1 << 20).splitlines()
                     if ln.startswith(("model name", "flags", "vendor_id", "Features",
                                       "CPU part"))]
        return " | ".join(dict.fromkeys(lines))
    except OSError:
        import platform
        return platform.machine() + " " + platform.processor()


def _python_headers():
    """Include directories for a CPython extension, or None when Python.h is missing."""
    inc = sysconfig.get_paths().get("include")
    if not inc or not os.path.exists(os.path.join(inc, "Python.h")):
        return None
    return [inc, np.get_include()]


def _wrapper_source(files, tr, prefix, modname, frames):
    tpl = (Path(__file__).with_name("_wrapper.c.in")).read_text()
    wrappers, table = [], []

    def add(pyname, body, doc):
        wrappers.append(
            f"static PyObject *py_{pyname}(PyObject *m, PyObject *const *args, Py_ssize_t nargs,"
            f" PyObject *kwnames)\n{{\n  (void)m;\n  return {body};\n}}\n")
        table.append(f'  {{"{pyname}", (PyCFunction)(void (*)(void))py_{pyname}, '
                     f'METH_FASTCALL | METH_KEYWORDS, "{doc}"}},')

    P = prefix
    for fn in files:
        if fn in ("inverse_dynamics", "forward_dynamics"):
            add(fn, f'call3("{fn}", {P}_{fn}, args, nargs, kwnames)', fn)
        elif fn == "torque_derivatives":
            add(fn, f'call_jet("{fn}", {P}_{fn}, args, nargs, kwnames)', fn)
        elif fn == "mass_matrix":
            add(fn, f'call1("{fn}", {P}_{fn}, NV, NV, args, nargs, kwnames)', fn)
        elif fn == "gravity_torques":
            add(fn, f'call1("{fn}", {P}_{fn}, 0, NV, args, nargs, kwnames)', fn)
    for f in frames:
        nm = f"frame_jacobian_{c_name(f)}"
        add(nm, f'call1("{nm}", {P}_{nm}, 6, NV, args, nargs, kwnames)', nm)
    quats = tr.quats or [-1]
    rep = {"@P@": P, "@NJ@": str(tr.nind), "@FB@": str(int(bool(tr.quats))),
           "@QUATS@": ", ".join(map(str, quats)), "@NQUAT@": str(len(tr.quats)),
           "@MOD@": modname,
           "@WRAPPERS@": "\n".join(wrappers), "@TABLE@": "\n".join(table)}
    for k, v in rep.items():
        tpl = tpl.replace(k, v)
    return tpl


def _build(cmd, cwd):
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, errors="replace")
    return r.returncode, (r.stderr + r.stdout).strip()


def _reason(msg):
    """The line of a compiler's output that says what went wrong (not a caret line)."""
    lines = [ln.strip() for ln in msg.splitlines() if ln.strip()]
    for ln in lines:
        if "error" in ln.lower():
            return ln
    return lines[-1] if lines else "no output"


def _load_extension(path, modname):
    if modname in _modules:
        return _modules[modname]
    spec = importlib.util.spec_from_file_location(modname, str(path))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    _modules[modname] = mod
    return mod


def _digest_path(final):
    return final.with_name(final.name + ".sha256")


def _file_digest(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _verified(final):
    """True when ``final`` and the SHA-256 written beside it when it was built agree; a
    library without its digest, truncated, flipped or emptied is never loaded (but rebuilt)."""
    if final.name in _loaded:
        return True  # already mapped into this process (verified when it was loaded)
    try:
        want = _digest_path(final).read_text(encoding="ascii", errors="replace").strip()
        ok = final.is_file() and re.fullmatch(r"[0-9a-f]{64}", want) is not None \
            and _file_digest(final) == want
    except OSError:
        ok = False
    return ok  # a bad entry stays until the rebuild replaces it (never unlinked under a reader)


_loaded = set()


def compile_robot(robot, cflags=None, functions=FUNCTIONS, frames=(), prefix="robot",
                  python_api=True):
    """Generate, build (or find in the cache) and load ``robot``'s C code.

    Args:
        robot: a Robot, MimicRobot or LieJointRobot (or a chart Robot, as
            :func:`~mbs_dynamics.codegen.generate`).
        cflags: compiler flags (a string or a list); default ``-O3 -march=native``. Flags that
            change floating-point semantics or redefine names (``-ffast-math``, ``-Ofast``,
            ``-D…``) are a ValueError.
        functions, frames, prefix: as :func:`~mbs_dynamics.codegen.generate`.
        python_api: build the CPython wrapper when the Python headers exist (else ctypes).
    Returns:
        A :class:`CompiledRobot`; or, when no C compiler works, ``robot`` itself after a
        :class:`CodegenWarning` that says why.
    Raises:
        CodegenError: a robot feature the generator does not handle (named).
        CompileError: the compiler failed (the message is its output); ``$CC`` carries a
            refused flag; the cache directory cannot be created, is not the user's or another
            user can write to it.
    """
    flags = _check_flags(cflags)
    if isinstance(functions, str):
        functions = (functions,)
    if isinstance(frames, str):
        frames = (frames,)
    functions, frames = tuple(functions), tuple(frames)
    tr = check_arguments(robot, functions, frames, prefix)  # generate's errors first
    cc, ident, why = _compiler()
    if ident is None:
        warnings.warn(f"mbs_dynamics.codegen.compile: no working C compiler ({why}); "
                      "using the compiled kernels instead", CodegenWarning, stacklevel=3)
        return robot
    ident = ident + "\0" + _native(cc, flags)
    cdir = _private_cache_dir()
    inc = _python_headers() if python_api else None
    fn_list = [f for f in functions if f != "frame_jacobian"]
    frame_list = list(dict.fromkeys(frames)) if "frame_jacobian" in functions else []
    kinds = ["ext", "lib"] if inc else ["lib"]
    ext_error = None
    for kind in kinds:
        P = _EXT_PREFIX if kind == "ext" else prefix
        final, modname = _cache_path(cdir, tr, functions, frames, prefix, flags, ident, kind)
        with _lock:
            bad = _failed.get(final.name)
            if bad is None and not _verified(final):
                files = generate(robot, functions=functions, frames=frames, prefix=P)
                ok, msg, cmd = _build_into(final, kind, files, tr, P, modname, fn_list,
                                           frame_list, cc, flags, inc)
                if not ok:
                    why = _probe(cc)
                    if why is not None:
                        warnings.warn(f"mbs_dynamics.codegen.compile: the C compiler "
                                      f"'{' '.join(cc)}' does not work ({why}); using the "
                                      "compiled kernels instead", CodegenWarning, stacklevel=3)
                        return robot
                    bad = (_reason(msg) if kind == "ext" else
                           f"{' '.join(shlex.quote(c) for c in cmd)} failed:\n{msg}")
                    _failed[final.name] = bad
        if bad is not None:
            if kind == "ext":  # the generated code alone may still build: ctypes
                ext_error = bad
                continue
            raise CompileError(bad)
        if ext_error is not None:
            warnings.warn(f"mbs_dynamics.codegen.compile: the Python wrapper did not build "
                          f"({ext_error}); calling the library through ctypes", CodegenWarning,
                          stacklevel=3)
        if kind == "ext":
            lib = _load_extension(final, modname)
            slots = 1
        else:
            files = generate(robot, functions=functions, frames=frames, prefix=prefix)
            lib = ctypes.CDLL(str(final))
            slots = int(re.search(r"double s\[(\d+)\];", files[f"{prefix}.h"]).group(1))
        _loaded.add(final.name)
        return CompiledRobot(robot, lib, kind, tr, P, fn_list, frame_list, str(final),
                             slots)
    raise AssertionError("unreachable")


def _source_digest():
    """SHA-256 of the generator's own source: a changed generator never reuses a library."""
    global _SOURCE_DIGEST
    if _SOURCE_DIGEST is None:
        h = hashlib.sha256()
        here = Path(__file__).parent
        for p in sorted(here.glob("*.py")) + sorted(here.glob("*.c.in")):
            h.update(p.name.encode() + p.read_bytes())
        _SOURCE_DIGEST = h.hexdigest()
    return _SOURCE_DIGEST


_SOURCE_DIGEST = None


def _cache_path(cdir, tr, functions, frames, prefix, flags, ident, kind):
    """(library path, module name) in the cache, keyed by everything that changes its bytes:
    the model hash (numbers and names), what is generated, the flags, the compiler (argv,
    executable, version, environment, what ``-march=native`` resolves to), the generator's
    source and (for the wrapper) the Python ABI."""
    h = hashlib.sha256()
    ext = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    for part in (tr.hash, repr(functions), repr(frames), prefix, repr(flags), ident, kind,
                 _WRAPPER_VERSION, _source_digest(), ext,
                 sys.version if kind == "ext" else "", np.__version__ if kind == "ext" else ""):
        h.update(str(part).encode("utf-8", "surrogatepass") + b"\0")
    modname = f"_mbs_cg_{h.hexdigest()[:24]}"
    return cdir / f"{modname}{ext if kind == 'ext' else '.so'}", modname


def _probe(cc):
    """None if ``cc`` compiles a trivial file (and writes it), else why not (cached)."""
    key = ("probe",) + tuple(cc)
    if key not in _compilers:
        d = tempfile.mkdtemp(prefix="mbs_cg_probe_")
        try:
            Path(d, "probe.c").write_text("int mbs_probe(void) { return 0; }\n")
            rc, msg = _build(cc + ["-c", "probe.c", "-o", "probe.o"], d)
            if rc != 0:
                _compilers[key] = _reason(msg) if msg else f"exit status {rc}"
            elif not Path(d, "probe.o").is_file() or Path(d, "probe.o").stat().st_size == 0:
                _compilers[key] = "it exits 0 but writes no object file"
            else:
                _compilers[key] = None
        except OSError as e:
            _compilers[key] = str(e)
        finally:
            shutil.rmtree(d, ignore_errors=True)
    return _compilers[key]


def _build_into(final, kind, files, tr, prefix, modname, fn_list, frame_list, cc, flags, inc):
    """Build in a private directory beside the cache, then move into place atomically, the
    library's SHA-256 beside it (written first, also atomically). Returns (ok, compiler
    output, command)."""
    cdir = final.parent
    tmp = tempfile.mkdtemp(prefix=".build-", dir=cdir)
    try:
        for nm, text in files.items():
            Path(tmp, nm).write_text(text, encoding="ascii")
        out = Path(tmp, final.name)
        if kind == "ext":
            wrapper = "mbs-wrapper.c"  # not a C identifier: no prefix names the same file
            Path(tmp, wrapper).write_text(
                _wrapper_source(fn_list, tr, prefix, modname, frame_list), encoding="ascii")
            src, incs = [wrapper], [f"-I{d}" for d in inc]
        else:
            src, incs = [f"{prefix}.c"], []
        cmd = cc + flags + ["-fPIC", "-shared", *incs, *src, "-o", out.name, "-lm"]
        try:
            rc, msg = _build(cmd, tmp)
        except OSError as e:
            return False, str(e), cmd
        if rc != 0:
            return False, msg, cmd
        if not out.is_file() or out.stat().st_size == 0:
            return False, (msg + "\n" if msg else "") + (
                f"error: the compiler exited 0 but wrote no library ({out.name})"), cmd
        dig = Path(tmp, "digest")
        dig.write_text(_file_digest(out) + "\n", encoding="ascii")
        os.replace(dig, _digest_path(final))
        os.replace(out, final)  # atomic: the cache holds whole libraries only
        return True, msg, cmd
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# the Python object
# ---------------------------------------------------------------------------------------------
_P = ctypes.POINTER(ctypes.c_double)


class CompiledRobot:
    """A robot whose dynamics run in its generated C code (see :func:`compile_robot`).

    Methods with the same names, arguments, input rules and results as the Robot's:
    ``inverse_dynamics``, ``forward_dynamics``, ``mass_matrix``, ``gravity_torques``,
    ``torque_derivatives`` (τ, τ′, τ″: ``qs`` (5, n) or ``(q, vs (4, nv))``, batches (N, …)),
    plus ``frame_jacobian(q, frame)`` (6, nv), in the generated code for the compiled frames
    (LOCAL, rows (linear, angular)). What the generated code does not cover (``f_ext``, other derivative orders,
    ``method="closed_form"``, every other attribute) is answered by the wrapped robot. The
    compiled calls are re-entrant (their workspace lives on the C stack) and batches of 256
    samples or more release the GIL, so threads may share one object; what falls back to the
    wrapped robot (a copy of it, kept) from these methods is serialised by a lock; other
    attributes are the wrapped robot's own.

    Attributes:
        robot: the wrapped Robot or MimicRobot. library: the shared library's path.
        model_hash: the SHA-256 the generated code was made from (``P_model_hash``).
    """

    def __init__(self, robot, lib, kind, tr, prefix, functions, frames, path, slots=1):
        self.robot = robot.copy() if hasattr(robot, "copy") else robot
        self.library = path
        self.model_hash = tr.hash
        self.frames = tuple(frames)
        self._kind, self._lib, self._P = kind, lib, prefix
        self._nq, self._nv, self._nj, self._fb = tr.nq, tr.nv, tr.nind, bool(tr.fb)
        self._quats = tuple(zip(tr.quats, tr.quat_names))
        #: spherical / floating joints in a robot whose own methods take other coordinates (a
        #: chart Robot): nothing may be handed to it
        self._foreign = None
        if tr.model.lie_joints and getattr(robot, "nq", None) != tr.nq:
            name, (jkind, _) = next(iter(tr.model.lie_joints.items()))
            self._foreign = (f"joint '{name}' ({jkind}): this robot's own methods take chart "
                             "coordinates, not the generated code's; only the compiled "
                             "functions are available")
        self._functions = tuple(functions)
        self._jac = {}
        self._lock = threading.Lock()
        self._guard = threading.local()
        if kind == "ext":
            lib._set_fallback(self._slow)
            for fn in functions:
                setattr(self, fn, getattr(lib, fn))  # the builtin itself: no Python frame
            for f in frames:
                self._jac[f] = getattr(lib, f"frame_jacobian_{c_name(f)}")
        else:
            ws_t = ctypes.c_void_p
            for fn in functions:
                cf = getattr(lib, f"{prefix}_{fn}")
                nin = {"inverse_dynamics": 3, "forward_dynamics": 3, "torque_derivatives": 2,
                       "mass_matrix": 1, "gravity_torques": 1}[fn]
                cf.argtypes = [_P] * (nin + 1) + [ws_t]
                cf.restype = None
                setattr(self, fn, self._py(fn))
            for f in frames:
                cf = getattr(lib, f"{prefix}_frame_jacobian_{c_name(f)}")
                cf.argtypes = [_P, _P, ws_t]
                cf.restype = None
                self._jac[f] = self._py(f"frame_jacobian_{c_name(f)}")
            self._ws = (ctypes.c_double * slots)()  # the header's P_workspace

    def __getattr__(self, name):
        if name.startswith("_") or name == "robot":
            raise AttributeError(name)
        self._peer(name)
        return getattr(self.robot, name)

    def _peer(self, what):
        """The wrapped robot, to answer ``what``; NotImplementedError when its methods take
        other coordinates than the generated code (a chart Robot of a model with spherical or
        floating joints that Python does not load as one robot)."""
        if self._foreign is not None:
            raise NotImplementedError(f"{what}: {self._foreign}")
        return self.robot

    def __repr__(self):
        return f"CompiledRobot({self.robot!r}, library='{self.library}')"

    @property
    def nq(self):
        return self._nq

    @property
    def nv(self):
        return self._nv

    def copy(self):
        """Itself: compiled calls are re-entrant and the slow path takes a lock."""
        return self

    def frame_jacobian(self, q, frame, representation="body", out=None):
        """J (6, nv) (or (N, 6, nv)) of ``frame``, rows (linear, angular), as
        :meth:`Robot.frame_jacobian`: a compiled frame in the body representation (Pinocchio's
        ``getFrameJacobian(..., LOCAL)``) runs in the generated code; any other frame or
        representation is answered by the wrapped robot."""
        f = self._jac.get(frame) if isinstance(frame, str) else None
        if f is not None and isinstance(representation, str) and representation == "body":
            return f(q, out=out)
        peer = self._peer(f"frame_jacobian of '{frame}' ({representation})")
        with self._lock:
            return peer.frame_jacobian(q, frame, representation, out=out)

    # ---------------------------------------------------------------- the slow path
    def _py(self, name):
        def call(*args, **kw):
            return self._slow(name, args, kw)
        call.__name__ = name
        return call

    def _raw(self, name, ins, shape):
        """The generated function on validated inputs, into a fresh array of ``shape``."""
        if self._kind == "ext":
            f = getattr(self._lib, name)
            if name == "torque_derivatives":
                return f(tuple(ins) if len(ins) == 2 else ins[0])
            return f(*ins)
        res = np.empty(shape)
        cf = getattr(self._lib, f"{self._P}_{name}")
        batch = ins[0].ndim == (2 if name != "torque_derivatives" or len(ins) == 2 else 3)
        N = ins[0].shape[0] if batch else 1
        flat = [x.reshape(N, -1) for x in ins]
        if name == "torque_derivatives" and len(ins) == 1:
            flat = [flat[0][:, :self._nj], flat[0][:, self._nj:]]
            flat = [np.ascontiguousarray(x) for x in flat]
        ro = res.reshape(N, -1)
        ptrs = [x.ctypes.data for x in flat]
        strides = [x.shape[1] * 8 for x in flat]
        op, os_ = ro.ctypes.data, ro.shape[1] * 8
        ws = ctypes.cast(self._ws, ctypes.c_void_p)
        for s in range(N):
            cf(*[ctypes.cast(p + s * st, _P) for p, st in zip(ptrs, strides)],
               ctypes.cast(op + s * os_, _P), ws)
        return res

    def _slow(self, name, args, kw):
        if getattr(self._guard, "active", False):  # the fast path refused validated arrays
            raise RuntimeError(f"{name}: the compiled fast path refused checked inputs")
        with self._lock:
            self._guard.active = True
            try:
                return self._slow_checked(name, args, kw)
            finally:
                self._guard.active = False

    def _slow_checked(self, name, args, kw):
        from ..kernels._data import _check_array
        fn = {"inverse_dynamics": _sig_id, "forward_dynamics": _sig_fd, "mass_matrix": _sig1,
              "gravity_torques": _sig1, "torque_derivatives": _sigjet}.get(
                  name, _sig1 if name.startswith("frame_jacobian_") else None)
        a = fn(*args, **kw)  # TypeError for wrong arguments, as a Python function gives
        nq, nv = self._nq, self._nv
        if name in ("inverse_dynamics", "forward_dynamics"):
            q, x, y, f_ext, out = a
            if f_ext is not None:
                return getattr(self._peer(f"{name} with f_ext"), name)(q, x, y, f_ext=f_ext,
                                                                        out=out)
            nd = 2 if np.ndim(q) == 2 else 1
            q = _check_array(q, "q", nd, (nq,) if nd == 1 else (-1, nq))
            lead = () if nd == 1 else (q.shape[0],)
            nx, ny = ("qd", "qdd") if name == "inverse_dynamics" else ("qd", "tau")
            ins = [q, _check_array(x, nx, nd, lead + (nv,)), _check_array(y, ny, nd, lead + (nv,))]
            shape = lead + (nv,)
        elif name == "torque_derivatives":
            qs, method, out, f_ext = a
            pair = isinstance(qs, tuple) and len(qs) == 2
            rows = None
            try:
                rows = (np.shape(qs[1])[-2] if pair else np.shape(qs)[-2]) if (
                    np.ndim(qs[1]) >= 2 if pair else np.ndim(qs) >= 2) else None
            except (TypeError, ValueError, IndexError):
                rows = None
            if (method != "recursive" or f_ext is not None
                    or rows != (4 if pair else 5) or (self._nq != self._nv and not pair)):
                return self._peer("torque_derivatives of this order / method / f_ext") \
                    .torque_derivatives(qs, method, out, f_ext=f_ext)
            if pair:
                q, vs = qs
                nd = 2 if np.ndim(q) == 2 else 1
                q = _check_array(q, "q", nd, (nq,) if nd == 1 else (-1, nq))
                lead = () if nd == 1 else (q.shape[0],)
                ins = [q, _check_array(vs, "vs", nd + 1, lead + (4, nv))]
            else:
                nd = 3 if np.ndim(qs) == 3 else 2
                qs = _check_array(qs, "qs", nd, (5, self._nj) if nd == 2 else (-1, 5, self._nj))
                lead = () if nd == 2 else (qs.shape[0],)
                ins = [qs]
            shape = lead + (3, nv)
        else:
            q, out = a
            nd = 2 if np.ndim(q) == 2 else 1
            q = _check_array(q, "q", nd, (nq,) if nd == 1 else (-1, nq))
            lead = () if nd == 1 else (q.shape[0],)
            ins = [q]
            shape = lead + ({"mass_matrix": (nv, nv), "gravity_torques": (nv,)}.get(name, (6, nv)))
        if self._quats:
            _check_quat(ins[0], nq, *zip(*self._quats))
        if out is not None:
            _check_array(out, "out", len(shape), shape, out=True)
        res = self._raw(name, ins, shape)
        if out is None:
            return res
        out[...] = res
        return out


def _check_quat(q, nq, at=(3,), names=("base",)):
    """ValueError naming the first quaternion (at q indices ``at``: the base's, then the
    spherical / floating joints' ``names``) that is not of unit norm (within 1e-6), or NaN."""
    for i, name in zip(at, names):
        x = q.reshape(-1, nq)[:, i:i + 4]
        r = np.einsum("ij,ij->i", x, x)
        bad = np.flatnonzero(~(np.abs(r - 1.0) <= 1e-6))
        if bad.size:
            c = x[bad[0]]
            what = "the base quaternion" if name == "base" and i == 3 else \
                f"the quaternion of joint '{name}' (q[{i}:{i + 4}])"
            raise ValueError(f"q: {what} (qx, qy, qz, qw) = ({c[0]:g}, {c[1]:g}, "
                             f"{c[2]:g}, {c[3]:g}) is not a unit quaternion")


def _sig_id(q, qd, qdd, f_ext=None, out=None):
    return q, qd, qdd, f_ext, out


def _sig_fd(q, qd, tau, f_ext=None, out=None):
    return q, qd, tau, f_ext, out


def _sig1(q, out=None):
    return q, out


def _sigjet(qs, method="recursive", out=None, *, f_ext=None):
    return qs, method, out, f_ext
