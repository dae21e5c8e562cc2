"""Nothing from a URDF or the environment runs, poisons or crashes the generated code (issue 27).

Findings 1 (names injected into the C), 2 (cache key without $CC's arguments / the CPU),
3 (damaged cache entries), 7 (odd environment values), 8 (clashing prefixes) and the untried
risk of a cache directory another user can write to. Oracles: the same robot with plain names
(its symbols, its torques), the C compiler itself (``-Wall -Wextra -Werror -pedantic``), and
the file system (no file written by a payload).
"""
from __future__ import annotations

import importlib
import os
import shutil
import stat
import subprocess
import sys
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

import mbs_dynamics as mbs
from mbs_dynamics import codegen
from mbs_dynamics.codegen.generate import c_name
from conftest import random_urdf

cg_compile = importlib.import_module("mbs_dynamics.codegen.compile")  # the module, not the function
GCC = shutil.which("gcc")
NM = shutil.which("nm")
CC = shutil.which(os.environ.get("CC", "cc"))
needs_cc = pytest.mark.skipif(CC is None, reason="no C compiler")


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("MBS_DYNAMICS_CACHE", str(d))
    monkeypatch.delenv("CFLAGS", raising=False)
    return d


def _hostile(mark):
    """Names that end comments and literals, start preprocessor lines, form trigraphs and
    carry a constructor writing ``mark``."""
    payload = (f'*/ __attribute__((constructor)) static void pwn(void) '
               f'{{ system("touch {mark}"); }} /*')
    return [payload, "a\n#include </etc/passwd>\n", 'q"uote\\', "??/", "tri??/\nx",
            "back\\\\slash", "caf\u00e9 \u2603 \U0001F600", "*/", "/*", "//", "%41", "\r\t",
            "end\\"]


def _urdfs(tmp_path, seed=3, n=4):
    """(hostile URDF, plain URDF, hostile frame, plain frame): one tree, two sets of names.
    The plain frame is the C identifier of the hostile one, so both give the same symbols."""
    xml, _ = random_urdf(seed, n_movable=n)
    mark = tmp_path / "PWNED"
    bad = _hostile(mark)
    root = ET.fromstring(xml)
    hostile, plain = ET.fromstring(xml), root
    ren = {}
    links = [e.get("name") for e in hostile.iter("link")]
    for k, ln in enumerate(links):
        ren[ln] = f"{bad[k % len(bad)]}{k}"
    frame_h = ren[links[-1]]
    for el in hostile.iter():
        if el.tag == "link" and el.get("name") in ren:
            el.set("name", ren[el.get("name")])
        if el.tag in ("parent", "child"):
            el.set("link", ren[el.get("link")])
        if el.tag == "joint":
            k = int(el.get("name")[1:])
            el.set("name", bad[(3 * k + 1) % len(bad)] + el.get("name"))
    hostile.set("name", bad[0] + '"robot\\')
    frame_p = c_name(frame_h)
    for el in plain.iter():
        if el.tag == "link" and el.get("name") == links[-1]:
            el.set("name", frame_p)
        if el.tag == "child" and el.get("link") == links[-1]:
            el.set("link", frame_p)
    ph, pp = tmp_path / "hostile.urdf", tmp_path / "plain.urdf"
    ph.write_bytes(ET.tostring(hostile, encoding="utf-8"))
    pp.write_bytes(ET.tostring(plain, encoding="utf-8"))
    return ph, pp, frame_h, frame_p, mark


def _load(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", mbs.URDFWarning)
        return mbs.load_urdf(str(path))


def _symbols(d, files):
    for nm, text in files.items():
        (d / nm).write_text(text)
    r = subprocess.run([GCC, "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-O0",
                        "-c", "robot.c", "-o", "robot.o"], cwd=d, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    out = subprocess.run([NM, "-g", "--defined-only", "robot.o"], cwd=d, capture_output=True,
                         text=True, check=True).stdout
    return sorted(line.split()[-1] for line in out.splitlines() if line.strip())


@pytest.mark.skipif(GCC is None or NM is None, reason="no gcc / nm")
def test_hostile_names_compile_pedantic_with_the_plain_symbols(tmp_path):
    ph, pp, fh, fp, mark = _urdfs(tmp_path)
    rh, rp = _load(ph), _load(pp)
    assert any("*/" in n for n in rh.model.joint_names)  # the names did get through the loader
    fh_files = codegen.generate(rh, frames=[fh])
    fp_files = codegen.generate(rp, frames=[fp])
    for text in fh_files.values():
        # a comment opened by the generator closes where the generator closes it
        for line in text.splitlines():
            assert line.count("*/") <= 1 and "??" not in line and "\\" not in line
            assert line.isascii()
    (tmp_path / "h").mkdir()
    (tmp_path / "p").mkdir()
    assert _symbols(tmp_path / "h", fh_files) == _symbols(tmp_path / "p", fp_files)
    assert not mark.exists()


@needs_cc
def test_hostile_names_compile_and_load_without_running_anything(tmp_path):
    ph, pp, fh, fp, mark = _urdfs(tmp_path, seed=5)
    rh = _load(ph)
    ch = codegen.compile(rh, frames=[fh], cflags="-O0")
    assert not mark.exists()  # the constructor in a name never ran
    q = np.linspace(-0.5, 0.5, rh.nq)
    v, a = np.full(rh.nv, 0.3), np.full(rh.nv, -0.2)
    # against the kernels of the same robot (the loader orders joints by name, so the plain
    # twin may number its coordinates differently)
    assert np.allclose(ch.inverse_dynamics(q, v, a), rh.inverse_dynamics(q, v, a),
                       rtol=1e-12, atol=1e-12)
    assert np.allclose(ch.frame_jacobian(q, fh), rh.frame_jacobian(q, fh), rtol=1e-12,
                       atol=1e-12)


def test_robot_name_in_model_hash(tmp_path):
    xml, _ = random_urdf(2, n_movable=3)
    a, b = tmp_path / "a.urdf", tmp_path / "b.urdf"
    a.write_text(xml)
    b.write_text(xml.replace('robot name="random2"', 'robot name="other"'))
    from mbs_dynamics.codegen.tree import Tree
    assert Tree(_load(a)).hash != Tree(_load(b)).hash


def test_frames_whose_names_look_like_parts_do_not_clash(tmp_path, monkeypatch):
    """A frame named like another frame's static part (``tip_part0``) once redefined it."""
    from mbs_dynamics.codegen import emit
    monkeypatch.setattr(emit, "CHUNK", 5)
    xml, _ = random_urdf(4, n_movable=4)
    root = ET.fromstring(xml)
    links = [e.get("name") for e in root.iter("link")]
    ren = {links[-1]: "tip", links[1]: "tip_part0"}
    for el in root.iter():
        for key in ("name", "link"):
            if el.tag in ("link", "parent", "child") and el.get(key) in ren:
                el.set(key, ren[el.get(key)])
    p = tmp_path / "r.urdf"
    p.write_bytes(ET.tostring(root))
    robot = _load(p)
    files = codegen.generate(robot, functions=["frame_jacobian"], frames=["tip", "tip_part0"])
    assert "robot_frame_jacobian_tip_part0(" in files["robot.h"]
    if GCC is not None:
        (tmp_path / "o").mkdir()
        _symbols(tmp_path / "o", files)


# ------------------------------------------------------------------------ the cache key
def _arm():
    from mbs_dynamics import data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", mbs.URDFWarning)
        return mbs.load_urdf(data.robot("arm7"))


@pytest.mark.parametrize("cc", ["cc -ffast-math", "cc -Dsin=cos", "cc -Ofast", "cc -D sin=cos",
                                "cc -funsafe-math-optimizations -O2", "cc -Wp,-Dsin=cos",
                                "cc -include evil.h"])
def test_forbidden_flags_in_cc_refused(cc, monkeypatch):
    """``CC="cc -ffast-math"`` passed the flag check and its library (NaN checks folded away)
    was later served to a plain ``CC=cc``; ``CC="cc -Dsin=cos"`` served torques 195 N·m off."""
    monkeypatch.setenv("CC", cc)
    with pytest.raises(codegen.CompileError, match=r"\$CC = .* changes the generated code"):
        codegen.compile(_arm(), functions=["gravity_torques"])


@pytest.mark.parametrize("flags", ["-O2 -ffast-math", "-Dsin=cos", ["-U", "sin"],
                                   "-fassociative-math"])
def test_forbidden_cflags_refused(flags):
    with pytest.raises(ValueError, match="cflags: .* not allowed"):
        codegen.compile(_arm(), functions=["gravity_torques"], cflags=flags)


@needs_cc
def test_cache_key_has_cc_arguments_and_the_cpu(monkeypatch, cache):
    arm = _arm()
    a = codegen.compile(arm, functions=["gravity_torques"], cflags="-O0")
    monkeypatch.setenv("CC", f"{CC} -fno-common")
    b = codegen.compile(arm, functions=["gravity_torques"], cflags="-O0")
    assert a.library != b.library
    monkeypatch.setenv("CC", CC)
    # what -march=native resolves to is part of the key (a home shared by two CPUs)
    real = cg_compile._native
    monkeypatch.setattr(cg_compile, "_native", lambda cc, fl: real(cc, fl) + " other-cpu")
    c = codegen.compile(arm, functions=["gravity_torques"], cflags="-O0 -march=native")
    monkeypatch.setattr(cg_compile, "_native", real)
    d = codegen.compile(arm, functions=["gravity_torques"], cflags="-O0 -march=native")
    assert c.library != d.library


@pytest.mark.skipif(shutil.which("gcc") is None, reason="no gcc")
def test_native_is_what_the_compiler_reports():
    got = cg_compile._native(["gcc"], ["-O3", "-march=native"])
    march = [w for w in got.split() if w.startswith("-march=")]
    assert march and "-march=native" not in march, got
    assert cg_compile._native(["gcc"], ["-O3"]) == ""


# ------------------------------------------------------------------------ damaged entries
_CHILD = """
import sys, warnings, numpy as np, mbs_dynamics as mbs
from mbs_dynamics import codegen, data
warnings.simplefilter("ignore")
r = mbs.load_urdf(data.robot("arm7"))
c = codegen.compile(r, functions=["gravity_torques"], cflags="-O0", python_api={api})
q = np.linspace(-1, 1, r.n)
assert isinstance(c, codegen.CompiledRobot)
assert np.allclose(c.gravity_torques(q), r.gravity_torques(q), rtol=1e-12, atol=1e-12)
print(c.library)
"""


def _child(cache, api=True):
    env = dict(os.environ, MBS_DYNAMICS_CACHE=str(cache))
    # run outside the checkout: its uncompiled sources must not shadow the installed package
    return subprocess.run([sys.executable, "-c", _CHILD.format(api=api)], env=env,
                          cwd=str(Path(cache).parent), capture_output=True, text=True,
                          timeout=600)


def _damage(lib, how):
    b = bytearray(lib.read_bytes())
    if how == "half":
        lib.write_bytes(bytes(b[:len(b) // 2]))
    elif how == "empty":
        lib.write_bytes(b"")
    elif how == "flip":
        for i in range(len(b) // 7, len(b) - 64, len(b) // 9):
            b[i] ^= 0x5A
        lib.write_bytes(bytes(b))
    elif how == "no_digest":
        lib.with_name(lib.name + ".sha256").unlink()
        b[len(b) // 2] ^= 0x01
        lib.write_bytes(bytes(b))
    elif how == "bad_digest":
        lib.with_name(lib.name + ".sha256").write_text("0" * 64)


@needs_cc
@pytest.mark.parametrize("how,api", [("half", True), ("empty", True), ("flip", True),
                                     ("no_digest", True), ("bad_digest", True),
                                     ("flip", False), ("half", False)])
def test_damaged_cache_entry_rebuilt_never_loaded(tmp_path, how, api):
    """A .so truncated to half killed the next compile() with SIGBUS; flipped bytes gave wrong
    torques or killed the process; an empty one a raw ImportError; nothing rebuilt."""
    cache = tmp_path / "c"
    r = _child(cache, api)
    assert r.returncode == 0, r.stderr
    lib = Path(r.stdout.strip().splitlines()[-1])
    digest = lib.with_name(lib.name + ".sha256")
    assert digest.exists()
    _damage(lib, how)
    r = _child(cache, api)
    assert r.returncode == 0, r.stderr  # no signal, no traceback: rebuilt, then right
    assert lib.exists() and digest.read_text().strip() == cg_compile._file_digest(lib)


# ------------------------------------------------------------------------ the cache directory
@needs_cc
def test_cache_dir_created_private(tmp_path, monkeypatch):
    d = tmp_path / "new" / "cache"
    monkeypatch.setenv("MBS_DYNAMICS_CACHE", str(d))
    codegen.compile(_arm(), functions=["gravity_torques"], cflags="-O0")
    assert stat.S_IMODE(d.stat().st_mode) == 0o700


@needs_cc
@pytest.mark.parametrize("mode", [0o777, 0o775, 0o757])
def test_cache_dir_writable_by_others_refused(tmp_path, monkeypatch, mode):
    """A world-writable $MBS_DYNAMICS_CACHE: a library planted under the predictable name
    would be loaded."""
    d = tmp_path / "shared"
    d.mkdir()
    d.chmod(mode)
    monkeypatch.setenv("MBS_DYNAMICS_CACHE", str(d))
    with pytest.raises(codegen.CompileError, match=r"can be written by other users"):
        codegen.compile(_arm(), functions=["gravity_torques"])


@needs_cc
@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="needs root to chown")
def test_cache_dir_of_another_user_refused(tmp_path, monkeypatch):
    d = tmp_path / "theirs"
    d.mkdir(mode=0o700)
    os.chown(d, 65534, 65534)
    monkeypatch.setenv("MBS_DYNAMICS_CACHE", str(d))
    with pytest.raises(codegen.CompileError, match=r"belongs to user id 65534"):
        codegen.compile(_arm(), functions=["gravity_torques"])


@needs_cc
def test_cache_dir_that_cannot_be_one(tmp_path, monkeypatch):
    f = tmp_path / "file"
    f.write_text("x")
    for value, why in ((str(f), "is not a directory|cannot be created"),
                       ("/dev/null/x", "cannot be created")):
        monkeypatch.setenv("MBS_DYNAMICS_CACHE", value)
        with pytest.raises(codegen.CompileError, match=rf"'{value}' ({why})"):
            codegen.compile(_arm(), functions=["gravity_torques"])


# ------------------------------------------------------------------------ odd $CC values
@pytest.mark.parametrize("cc,why", [("   ", "names no compiler"),
                                    ('"x', "is not a command line"),
                                    ("true", "writes no object file"),
                                    ("/nonexistent/cc x", "not found")])
def test_odd_cc_warns_naming_it(cc, why, monkeypatch):
    if cc == "true" and shutil.which("true") is None:
        pytest.skip("no true")
    monkeypatch.setenv("CC", cc)
    arm = _arm()
    with pytest.warns(codegen.CodegenWarning, match=why) as rec:
        got = codegen.compile(arm, functions=["gravity_torques"])
    assert got is arm
    assert repr(cc) in str(rec[0].message)  # the value, quoted


# ------------------------------------------------------------------------ prefixes
@needs_cc
@pytest.mark.parametrize("prefix", ["py", "wrapper", "slow", "call3", "fallback", "is",
                                    "mbs_gen", "NQ", "PyInit"])
def test_prefixes_that_clashed_build_the_wrapper(prefix):
    """``py`` and ``wrapper`` broke the CPython wrapper (a silent ctypes fallback, a gcc caret
    line as the reason)."""
    arm = _arm()
    with warnings.catch_warnings():
        warnings.simplefilter("error", codegen.CodegenWarning)
        c = codegen.compile(arm, functions=["gravity_torques", "inverse_dynamics"],
                            prefix=prefix, cflags="-O0")
    assert c._kind == "ext"
    q = np.linspace(-1, 1, arm.n)
    assert np.allclose(c.gravity_torques(q), arm.gravity_torques(q), rtol=1e-12, atol=1e-12)
    if prefix in ("py", "wrapper"):  # and the generated code itself (ctypes) too
        c = codegen.compile(arm, functions=["gravity_torques"], prefix=prefix, cflags="-O0",
                            python_api=False)
        assert np.allclose(c.gravity_torques(q), arm.gravity_torques(q), rtol=1e-12, atol=1e-12)


@needs_cc
def test_failing_build_not_retried(monkeypatch):
    calls = []
    real = cg_compile._build

    def counting(cmd, cwd):
        calls.append(cmd)
        return real(cmd, cwd)

    monkeypatch.setattr(cg_compile, "_build", counting)
    arm = _arm()
    for _ in range(3):
        with pytest.raises(codegen.CompileError, match="no-such-flag"):
            codegen.compile(arm, functions=["gravity_torques"], cflags="-fno-such-flag-sec27")
    builds = [c for c in calls if "-shared" in c]
    assert len(builds) == 2  # the wrapper once, the plain library once; never again
