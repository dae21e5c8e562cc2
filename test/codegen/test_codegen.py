"""Per-robot C code generation (issue 21, item 1): generate, compile, compare.

Oracles: Pinocchio's rnea, crba, computeGeneralizedGravity, aba and getFrameJacobian(LOCAL) on
the same URDF (free-flyer for floating bases; for mimic robots Pinocchio's full model projected
with a G built from the URDF text by test_mimic's Oracle), at 1e-12 relative; the jets τ, τ′, τ″
against ``robot.torque_derivatives`` (itself checked against Pinocchio and finite differences in
test_dynamics_oracle / test_floating_base) at 1e-12.
"""
from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import mbs_dynamics as mbs
from mbs_dynamics import codegen
from conftest import PANDA, UR5, erd_path, pin_model, pin_q, random_urdf, sym

TOL = 1e-12
CC = shutil.which(os.environ.get("CC", "cc"))
needs_cc = pytest.mark.skipif(CC is None, reason="no C compiler")


@pytest.fixture(autouse=True, scope="module")
def cache(tmp_path_factory):
    old = os.environ.get("MBS_DYNAMICS_CACHE")
    d = tmp_path_factory.mktemp("cg_cache")
    os.environ["MBS_DYNAMICS_CACHE"] = str(d)
    yield d
    if old is None:
        del os.environ["MBS_DYNAMICS_CACHE"]
    else:
        os.environ["MBS_DYNAMICS_CACHE"] = old


def rel(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return np.abs(a - b).max() / max(np.abs(b).max(), 1e-300)


def _pin():
    return pytest.importorskip("pinocchio")


# ------------------------------------------------------------------------ fixed-base robots
def _fixed(name):
    if name == "panda":
        return erd_path(PANDA[0]), PANDA[1], ["panda_link7", "panda_link8", "panda_hand"]
    if name == "ur5":
        return erd_path(UR5[0]), UR5[1], ["tool0", "wrist_3_link", "base_link"]
    n = int(name[6:])
    xml, _ = random_urdf(n, n_movable=n)
    links = [f"l{k}" for k in (1, n // 2 + 1, n)]
    return xml, {}, links


def _load(src, locked, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", mbs.URDFWarning)
        return mbs.load_urdf(src, locked_joints=locked or None, **kw)


def _flags(robot):
    return "-O0" if robot.nv > 25 else None  # big trees: the same code, a 3× faster compile


@needs_cc
@pytest.mark.parametrize("name", ["panda", "ur5", "random1", "random7", "random23", "random60"])
def test_fixed_base_vs_pinocchio(name):
    pin = _pin()
    src, locked, frames = _fixed(name)
    robot = _load(src, locked)
    frames = [f for f in frames if f in robot.model.link_frames]
    c = codegen.compile(robot, cflags=_flags(robot), frames=frames)
    assert isinstance(c, codegen.CompiledRobot)
    pm = pin_model(src, locked)
    pd = pm.createData()
    rng = np.random.default_rng(len(name))
    for _ in range(3):
        q, v, a = rng.uniform(-1.5, 1.5, (3, robot.nv))
        pq = pin_q(pm, q)
        tau = pin.rnea(pm, pd, pq, v, a)
        assert rel(c.inverse_dynamics(q, v, a), tau) <= TOL
        M = sym(pin.crba(pm, pd, pq))
        assert rel(c.mass_matrix(q), M) <= TOL
        assert rel(c.gravity_torques(q), pin.computeGeneralizedGravity(pm, pd, pq)) <= TOL
        fd = pin.aba(pm, pd, pq, v, tau)
        # the same linear system solved two ways: agreement bounded by M's condition number
        assert rel(c.forward_dynamics(q, v, tau), fd) <= max(TOL, 1e-15 * np.linalg.cond(M))
        pin.computeJointJacobians(pm, pd, pq)
        pin.updateFramePlacements(pm, pd)
        for f in frames:
            J = np.reshape(pin.getFrameJacobian(pm, pd, pm.getFrameId(f), pin.LOCAL), (6, -1))
            got = c.frame_jacobian(q, f)
            assert np.abs(got - J).max() <= TOL * max(1.0, np.abs(J).max()), f
        vs = rng.normal(size=(4, robot.nv))
        jet = robot.torque_derivatives((q, vs))
        assert rel(c.torque_derivatives((q, vs)), jet) <= TOL
        qs = np.vstack([q, vs])
        assert rel(c.torque_derivatives(qs), jet) <= TOL


# ------------------------------------------------------------------------ floating bases
FLOATING = {"solo12": "solo_description/robots/solo12.urdf",
            "anymal": "anymal_b_simple_description/robots/anymal.urdf"}


@needs_cc
@pytest.mark.parametrize("name", ["solo12", "anymal", "random9"])
def test_floating_base_vs_pinocchio(name):
    pin = _pin()
    if name.startswith("random"):
        xml = random_urdf(int(name[6:]), n_movable=9, massless_prob=0.0)[0].replace(
            '<link name="base"/>', '<link name="base"><inertial><origin xyz="0.01 0.02 -0.03" '
            'rpy="0.1 0.2 0.3"/><mass value="4"/><inertia ixx="0.2" ixy="0.01" ixz="0" '
            'iyy="0.3" iyz="0" izz="0.25"/></inertial></link>')
        robot = _load(xml, None, floating_base=True)
        pm = pin.buildModelFromXML(xml, pin.JointModelFreeFlyer())
    else:
        path = erd_path(FLOATING[name])
        robot = _load(path, None, floating_base=True)
        pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer())
    frames = [robot.base_link, robot.link_names[-1], robot.link_names[robot.n // 2]]
    c = codegen.compile(robot, frames=frames)
    pd = pm.createData()
    rng = np.random.default_rng(3)
    assert c.nq == robot.nq == robot.n + 7 and c.nv == robot.n + 6
    for _ in range(3):
        quat = rng.normal(size=4)
        q = np.r_[rng.normal(size=3), quat / np.linalg.norm(quat), rng.uniform(-2, 2, robot.n)]
        v, a = rng.normal(size=(2, robot.nv))
        pq = np.empty(pm.nq)
        pq[:7] = q[:7]
        for j, x in zip(pm.joints[2:], q[7:]):
            if j.nq == 2:
                pq[j.idx_q:j.idx_q + 2] = (math.cos(x), math.sin(x))
            else:
                pq[j.idx_q] = x
        tau = pin.rnea(pm, pd, pq, v, a)
        assert rel(c.inverse_dynamics(q, v, a), tau) <= TOL
        M = sym(pin.crba(pm, pd, pq))
        assert rel(c.mass_matrix(q), M) <= TOL
        assert rel(c.gravity_torques(q), pin.computeGeneralizedGravity(pm, pd, pq)) <= TOL
        fd = pin.aba(pm, pd, pq, v, tau)
        assert rel(c.forward_dynamics(q, v, tau), fd) <= max(TOL, 1e-15 * np.linalg.cond(M))
        pin.computeJointJacobians(pm, pd, pq)
        pin.updateFramePlacements(pm, pd)
        for f in frames:
            J = np.reshape(pin.getFrameJacobian(pm, pd, pm.getFrameId(f), pin.LOCAL), (6, -1))
            assert np.abs(c.frame_jacobian(q, f) - J).max() <= TOL * np.abs(J).max(), f
        vs = rng.normal(size=(4, robot.nv))
        assert rel(c.torque_derivatives((q, vs)), robot.torque_derivatives((q, vs))) <= TOL


# ------------------------------------------------------------------------ mimic joints
@needs_cc
@pytest.mark.parametrize("case", ["panda", "chain"])
def test_mimic_vs_projected_pinocchio(case):
    pin = _pin()
    from test_mimic import Oracle, _source
    src = _source(case)
    robot = _load(src, None)
    assert isinstance(robot, mbs.MimicRobot)
    o = Oracle(src)
    frames = [robot.full_robot.link_names[-1]]
    c = codegen.compile(robot, frames=frames)
    rng = np.random.default_rng(5)
    for _ in range(3):
        q, v, a = rng.uniform(-1.5, 1.5, (3, robot.n))
        tau = o.tau(q, v, a)
        assert rel(c.inverse_dynamics(q, v, a), tau) <= TOL
        assert rel(c.mass_matrix(q), o.M(q)) <= TOL
        assert rel(c.gravity_torques(q), o.g(q)) <= TOL
        assert rel(c.forward_dynamics(q, v, tau), a) <= max(TOL, 1e-15 * np.linalg.cond(o.M(q)))
        pd = o.pm.createData()
        pin.computeJointJacobians(o.pm, pd, o.q(q))
        pin.updateFramePlacements(o.pm, pd)
        J = pin.getFrameJacobian(o.pm, pd, o.pm.getFrameId(frames[0]), pin.LOCAL) @ o.G
        assert np.abs(c.frame_jacobian(q, frames[0]) - J).max() <= TOL * np.abs(J).max()
        qs = rng.uniform(-1, 1, (5, robot.n))
        assert rel(c.torque_derivatives(qs), robot.torque_derivatives(qs)) <= TOL


# ------------------------------------------------------------------------ the API
@pytest.fixture(scope="module")
def panda():
    return _load(erd_path(PANDA[0]), PANDA[1])


@pytest.fixture(scope="module")
def cpanda(panda):
    if CC is None:
        pytest.skip("no C compiler")
    return codegen.compile(panda, frames=["panda_link8"])


def test_generate_files_and_header(panda, tmp_path):
    files = codegen.generate(panda, frames=["panda_link8", "panda_hand"], prefix="panda",
                             out_dir=tmp_path)
    assert set(files) == {"panda.h", "panda.c"}
    assert {p.name for p in tmp_path.iterdir()} == {"panda.h", "panda.c"}
    h = files["panda.h"]
    for decl in ("#define panda_NQ 7", "#define panda_NV 7", "} panda_workspace;",
                 "extern const char panda_model_hash[];",
                 "void panda_inverse_dynamics(const double *q, const double *v, const double *a, "
                 "double *tau, panda_workspace *w);",
                 "void panda_torque_derivatives(const double *q, const double *vs, double *out, "
                 "panda_workspace *w);",
                 "void panda_mass_matrix(const double *q, double *M, panda_workspace *w);",
                 "void panda_gravity_torques(const double *q, double *g, panda_workspace *w);",
                 "void panda_forward_dynamics(const double *q, const double *v, const double *tau,"
                 " double *a, panda_workspace *w);",
                 "void panda_frame_jacobian_panda_link8(const double *q, double *J, "
                 "panda_workspace *w);",
                 "void panda_frame_jacobian_panda_hand("):
        assert decl in h, decl
    c = files["panda.c"]
    assert "malloc" not in c and "static double" not in c and "#include <math.h>" in c
    # only what was asked for
    only = codegen.generate(panda, functions=["inverse_dynamics"])
    assert "mass_matrix" not in only["robot.h"] and "robot_inverse_dynamics" in only["robot.h"]
    # the hash follows the model's numbers
    heavier = panda.with_payload("panda_link7", 1.0)
    assert codegen.generate(heavier, functions=["gravity_torques"])["robot.c"] != \
        codegen.generate(panda, functions=["gravity_torques"])["robot.c"]


@pytest.mark.parametrize("kw, words", [
    (dict(frames=["nope"]), "unknown frame 'nope'"),
    (dict(functions=["coriolis"]), "unknown function 'coriolis'"),
    (dict(prefix="3d robot"), "not a C identifier"),
    # fuzz campaign (issue 22): None escaped as AttributeError, a 5,000-character prefix as
    # OSError "File name too long" from compile()
    (dict(prefix=None), "not a C identifier"),
    (dict(prefix="x" * 5000), "more than 64"),
])
def test_generate_errors(panda, kw, words):
    with pytest.raises(codegen.CodegenError, match=words):
        codegen.generate(panda, **kw)


def test_unsupported_robot_says_which_feature(panda):
    class Loops:
        model = panda.model
        loop_closures = [("a", "b")]
    with pytest.raises(codegen.CodegenError, match="closed kinematic loops"):
        codegen.generate(Loops())
    with pytest.raises(codegen.CodegenError, match="no Model"):
        codegen.generate(object())


@needs_cc
def test_compiled_object_inputs_like_robot(panda, cpanda):
    c, r = cpanda, panda
    rng = np.random.default_rng(0)
    q, v, a = rng.normal(size=(3, 7))
    ref = r.inverse_dynamics(q, v, a)
    # lists, strided views, float32, Fortran batches: converted once, same results
    assert rel(c.inverse_dynamics(list(q), tuple(v), a.tolist()), ref) <= TOL
    big = np.repeat(q[:, None], 2, axis=1)
    assert rel(c.inverse_dynamics(big[:, 0], v, a), ref) <= TOL
    out = np.empty(7)
    assert c.inverse_dynamics(q, v, a, out=out) is out and rel(out, ref) <= TOL
    # out aliasing an input
    x = a.copy()
    c.inverse_dynamics(q, v, x, out=x)
    assert rel(x, ref) <= TOL
    # keywords by the Robot's names
    assert rel(c.inverse_dynamics(q=q, qd=v, qdd=a), ref) <= TOL
    assert rel(c.forward_dynamics(q, qd=v, tau=ref), a) <= 1e-10
    # batches (also aliased)
    Q, V, A = rng.normal(size=(3, 50, 7))
    refb = r.inverse_dynamics(Q, V, A)
    assert rel(c.inverse_dynamics(Q, V, A), refb) <= TOL
    A2 = A.copy()
    c.inverse_dynamics(Q, V, A2, out=A2)
    assert rel(A2, refb) <= TOL
    assert rel(c.inverse_dynamics(np.asfortranarray(Q), V, A), refb) <= TOL
    assert rel(c.forward_dynamics(Q, V, refb), A) <= 1e-10
    assert c.mass_matrix(Q).shape == (50, 7, 7) and c.gravity_torques(Q).shape == (50, 7)
    assert rel(c.mass_matrix(Q)[7], r.mass_matrix(Q[7])) <= TOL
    assert c.frame_jacobian(Q, "panda_link8").shape == (50, 6, 7)
    QS = rng.normal(size=(20, 5, 7))
    assert rel(c.torque_derivatives(QS), r.torque_derivatives(QS)) <= TOL
    assert rel(c.torque_derivatives((QS[:, 0].copy(), QS[:, 1:].copy())),
               r.torque_derivatives(QS)) <= TOL
    # bad input: one clear ValueError naming the argument, as Robot
    for args, words in [((q, v, a[:3]), "qdd has shape"), ((q, v * np.nan, a), "qd contains NaN"),
                        ((q, "x", a), "qd must be")]:
        with pytest.raises(ValueError, match=words):
            c.inverse_dynamics(*args)
    with pytest.raises(ValueError, match="out"):
        c.inverse_dynamics(q, v, a, out=np.empty(6))
    with pytest.raises(ValueError, match="out"):
        c.mass_matrix(q, out=np.empty((7, 7), dtype=np.float32))
    with pytest.raises(TypeError):
        c.inverse_dynamics(q + 1j, v, a)
    with pytest.raises(TypeError):
        c.inverse_dynamics(q, v)
    # a frame that was not compiled, or another representation: the robot answers
    assert rel(c.frame_jacobian(q, "panda_link3"), r.frame_jacobian(q, "panda_link3")) <= TOL
    assert rel(c.frame_jacobian(q, "panda_link8", "hybrid"),
               r.frame_jacobian(q, "panda_link8", "hybrid")) <= TOL
    with pytest.raises(ValueError, match="close names|frame"):
        c.frame_jacobian(q, "panda_linkk3")
    with pytest.raises(ValueError, match="qs has shape"):
        c.torque_derivatives(np.zeros((5, 6)))
    # what the generated code does not have is answered by the robot: f_ext, other orders
    fx = {"panda_link7": np.arange(6.0)}
    assert rel(c.inverse_dynamics(q, v, a, f_ext=fx), r.inverse_dynamics(q, v, a, f_ext=fx)) <= TOL
    qs4 = rng.normal(size=(6, 7))
    assert c.torque_derivatives(qs4).shape == (4, 7)
    assert rel(c.torque_derivatives(qs4), r.torque_derivatives(qs4)) <= TOL
    assert rel(c.coriolis_matrix(q, v), r.coriolis_matrix(q, v)) <= TOL
    assert c.n == 7 and c.joint_names == r.joint_names and c.model_hash in Path(
        c.library).read_bytes().decode("latin1")


@needs_cc
def test_floating_base_quaternion_checked():
    robot = _load(erd_path(FLOATING["solo12"]), None, floating_base=True)
    c = codegen.compile(robot, functions=["gravity_torques"])
    q = np.r_[0, 0, 0.3, 0, 0, 0, 2.0, np.zeros(12)]
    with pytest.raises(ValueError, match="not a unit quaternion"):
        c.gravity_torques(q)
    q[6] = 1.0
    assert rel(c.gravity_torques(q), robot.gravity_torques(q)) <= TOL


@needs_cc
def test_ctypes_path_without_python_headers(panda):
    c = codegen.compile(panda, functions=["inverse_dynamics", "torque_derivatives"],
                        python_api=False)
    rng = np.random.default_rng(1)
    q, v, a = rng.normal(size=(3, 7))
    assert rel(c.inverse_dynamics(q, v, a), panda.inverse_dynamics(q, v, a)) <= TOL
    Q = rng.normal(size=(4, 5, 7))
    assert rel(c.torque_derivatives(Q), panda.torque_derivatives(Q)) <= TOL


# ------------------------------------------------------------------------ cache and compiler
@needs_cc
def test_cache_hit_and_atomic(panda, cache):
    c1 = codegen.compile(panda, functions=["gravity_torques"])
    lib = Path(c1.library)
    assert lib.parent == cache and lib.exists()
    t = lib.stat().st_mtime_ns
    c2 = codegen.compile(panda, functions=["gravity_torques"])
    assert c2.library == c1.library and lib.stat().st_mtime_ns == t
    assert not [p for p in cache.iterdir() if p.name.startswith(".build-")]  # nothing half-built
    # other flags: another library
    c3 = codegen.compile(panda, functions=["gravity_torques"], cflags="-O2")
    assert c3.library != c1.library
    # another prefix: another library, the same numbers
    c4 = codegen.compile(panda, functions=["gravity_torques"], prefix="pnd")
    assert c4.library != c1.library
    q = np.linspace(-1, 1, 7)
    assert rel(c4.gravity_torques(q), panda.gravity_torques(q)) <= TOL


@needs_cc
def test_two_processes_compile_at_once(tmp_path):
    script = ("import sys, numpy as np, mbs_dynamics as mbs\n"
              "from mbs_dynamics import codegen, data\n"
              "r = mbs.load_urdf(data.robot('arm7'))\n"
              "c = codegen.compile(r, functions=['inverse_dynamics'], cflags=['-O1'])\n"
              "q = np.full(r.n, 0.3)\n"
              "assert isinstance(c, codegen.CompiledRobot)\n"
              "assert np.allclose(c.inverse_dynamics(q, q, q), r.inverse_dynamics(q, q, q), "
              "rtol=1e-12, atol=0)\n")
    env = dict(os.environ, MBS_DYNAMICS_CACHE=str(tmp_path))   # the installed package
    ps = [subprocess.Popen([sys.executable, "-c", script], env=env, stderr=subprocess.PIPE,
                           cwd=tmp_path) for _ in range(2)]
    for p in ps:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err.decode()
    libs = [p for p in tmp_path.iterdir() if p.suffix == ".so"]
    assert len(libs) == 1 and not [p for p in tmp_path.iterdir() if p.name.startswith(".build")]


@needs_cc
def test_compiler_error_shows_its_message(panda, cache):
    before = set(cache.iterdir())
    with pytest.raises(codegen.CompileError, match="no-such-flag"):
        codegen.compile(panda, functions=["gravity_torques"], cflags="-fno-such-flag-xyz")
    assert set(cache.iterdir()) == before  # nothing kept


def test_no_compiler_warns_and_uses_the_kernels(panda, monkeypatch):
    monkeypatch.setenv("CC", "/nonexistent/cc-xyz")
    with pytest.warns(codegen.CodegenWarning, match="not found"):
        got = codegen.compile(panda, functions=["gravity_torques"])
    assert got is panda
    if shutil.which("false"):  # found, runs, but compiles nothing
        monkeypatch.setenv("CC", "false")
        with pytest.warns(codegen.CodegenWarning, match="'false' does not work"):
            assert codegen.compile(panda, functions=["gravity_torques"]) is panda


def test_fast_math_refused(panda):
    with pytest.raises(ValueError, match="-ffast-math"):
        codegen.compile(panda, cflags="-O3 -ffast-math")


@needs_cc
def test_object_code_references_no_allocator(tmp_path):
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("no nm")
    xml, _ = random_urdf(4, n_movable=12)
    robot = _load(xml, None)
    codegen.generate(robot, frames=["l3"], prefix="rt", out_dir=tmp_path)
    subprocess.run([CC, "-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror", "-O2", "-c", "rt.c",
                    "-o", "rt.o"], cwd=tmp_path, check=True)
    undefined = subprocess.run([nm, "-u", "rt.o"], cwd=tmp_path, capture_output=True,
                               text=True, check=True).stdout.split()
    names = {u for u in undefined if u not in ("U", "w", "W")}
    bad = {u for u in names if any(k in u for k in ("malloc", "calloc", "realloc", "free",
                                                     "_Znw", "_Zna", "alloca"))}
    assert not bad, bad
    assert names <= {"sin", "cos", "sincos", "sqrt"}, names  # libm only


# ------------------------------------------------------------------------ command line
def test_cli_codegen(tmp_path, capsys):
    from mbs_dynamics import cli, data
    out = tmp_path / "gen"
    assert cli.main(["codegen", str(data.robot("arm7")), "-o", str(out), "--frames", "arm7_link6",
                     "arm7_link3", "--prefix", "arm7"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["arm7.c", "arm7.h"]
    h = (out / "arm7.h").read_text()
    assert "arm7_frame_jacobian_arm7_link6" in h and "#define arm7_NV 7" in h
    robot = mbs.load_urdf(data.robot("arm7"))
    assert (out / "arm7.c").read_text() == codegen.generate(
        robot, frames=["arm7_link6", "arm7_link3"], prefix="arm7")["arm7.c"]
    capsys.readouterr()
    assert cli.main(["codegen", str(data.robot("arm7")), "-o", str(out), "--frames", "nope"]) == 2
    assert "unknown frame 'nope'" in capsys.readouterr().err
    assert cli.main(["codegen", str(data.robot("arm7")), "-o", str(out), "--prefix", "1x"]) == 2
    assert "not a C identifier" in capsys.readouterr().err


@needs_cc
def test_floating_base_with_mimic_joints():
    """A floating base and mimic joints together, against the kernels (which test_mimic checks
    against Pinocchio's projected free-flyer model)."""
    from test_mimic import CHAIN
    xml = CHAIN.replace('<link name="base"/>', '<link name="base"><inertial><origin xyz="0.01 '
                        '0.02 -0.03" rpy="0.1 0.2 0.3"/><mass value="4"/><inertia ixx="0.2" '
                        'ixy="0.01" ixz="0" iyy="0.3" iyz="0" izz="0.25"/></inertial></link>')
    r = _load(xml, None, floating_base=True)
    assert isinstance(r, mbs.MimicRobot) and r.nq == r.n + 7
    c = codegen.compile(r, cflags="-O1")
    rng = np.random.default_rng(0)
    quat = rng.normal(size=4)
    q = np.r_[rng.normal(size=3), quat / np.linalg.norm(quat), rng.normal(size=r.n)]
    v, a = rng.normal(size=(2, r.nv))
    vs = rng.normal(size=(4, r.nv))
    assert rel(c.inverse_dynamics(q, v, a), r.inverse_dynamics(q, v, a)) <= TOL
    assert rel(c.mass_matrix(q), r.mass_matrix(q)) <= TOL
    assert rel(c.gravity_torques(q), r.gravity_torques(q)) <= TOL
    assert rel(c.forward_dynamics(q, v, a), r.forward_dynamics(q, v, a)) <= 1e-11
    assert rel(c.torque_derivatives((q, vs)), r.torque_derivatives((q, vs))) <= TOL


def test_cache_dir_order(monkeypatch, tmp_path):
    monkeypatch.setenv("MBS_DYNAMICS_CACHE", str(tmp_path / "a"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert codegen.cache_dir() == tmp_path / "a"
    monkeypatch.delenv("MBS_DYNAMICS_CACHE")
    assert codegen.cache_dir() == tmp_path / "x" / "mbs_dynamics"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "h"))
    assert codegen.cache_dir() == tmp_path / "h" / ".cache" / "mbs_dynamics"


@needs_cc
def test_threads_share_one_compiled_object(panda, cpanda):
    from concurrent.futures import ThreadPoolExecutor
    rng = np.random.default_rng(9)
    Q, V, A = rng.normal(size=(3, 4, 2000, 7))
    ref = [panda.inverse_dynamics(Q[k], V[k], A[k]) for k in range(4)]
    with ThreadPoolExecutor(4) as ex:
        got = list(ex.map(lambda k: cpanda.inverse_dynamics(Q[k], V[k], A[k]), range(4)))
    for g, r in zip(got, ref):
        assert rel(g, r) <= TOL
    # the slow path (lists: converted) from threads at once
    with ThreadPoolExecutor(4) as ex:
        got = list(ex.map(lambda k: cpanda.inverse_dynamics(Q[k, :9].tolist(), V[k, :9],
                                                            A[k, :9]), range(4)))
    for g, r in zip(got, ref):
        assert rel(g, r[:9]) <= TOL


@needs_cc
def test_functions_split_into_parts(panda, monkeypatch, tmp_path):
    """A large function is emitted as parts passing values through the workspace: the same
    results (forced here on the Panda with tiny parts)."""
    from mbs_dynamics.codegen import emit
    monkeypatch.setattr(emit, "CHUNK", 150)
    monkeypatch.setenv("MBS_DYNAMICS_CACHE", str(tmp_path))
    files = codegen.generate(panda, frames=["panda_hand"])
    assert "robot_torque_derivatives_part3" in files["robot.c"] and "w->s[" in files["robot.c"]
    c = codegen.compile(panda, frames=["panda_hand"], cflags="-O1")
    rng = np.random.default_rng(2)
    q, v, a = rng.normal(size=(3, 7))
    vs = rng.normal(size=(4, 7))
    assert rel(c.inverse_dynamics(q, v, a), panda.inverse_dynamics(q, v, a)) <= TOL
    assert rel(c.torque_derivatives((q, vs)), panda.torque_derivatives((q, vs))) <= TOL
    assert rel(c.mass_matrix(q), panda.mass_matrix(q)) <= TOL
    assert rel(c.forward_dynamics(q, v, a), panda.forward_dynamics(q, v, a)) <= 1e-10
    pin = _pin()
    pm = pin_model(erd_path(PANDA[0]), PANDA[1])
    pd = pm.createData()
    pin.computeJointJacobians(pm, pd, q)
    pin.updateFramePlacements(pm, pd)
    J = pin.getFrameJacobian(pm, pd, pm.getFrameId("panda_hand"), pin.LOCAL)
    assert rel(c.frame_jacobian(q, "panda_hand"), J) <= TOL


def test_emitter_folds_and_shares():
    from mbs_dynamics.codegen.emit import Graph, emit_function
    g = Graph()
    x, y = g.input("q", 0), g.input("q", 1)
    assert g.mul(x, 0.0) is g.zero and g.mul(x, 1.0) is x and g.add(x, 0.0) is x
    assert g.sub(x, x) is g.zero and g.neg(g.neg(x)) is x and g.mul(-1.0, x) is g.neg(x)
    assert g.mul(x, y) is g.mul(y, x) and g.add(x, y) is g.add(y, x)  # one node: shared
    assert g.add(x, g.neg(y)) is g.sub(x, y) and g.mul(2.0, 3.0).val == 6.0
    assert g.fn("cos", 0.0).val == 1.0
    e = g.add(g.mul(x, y), g.fn("sin", g.mul(y, x)))
    text, slots = emit_function(g, "void f(const double *q, double *out, ws *w)",
                                [("out[0]", e), ("out[1]", g.mul(x, y))], "p", "f")
    assert text.count("q[0] * q[1]") == 1 and slots == 0 and "(void)w;" in text
    with pytest.raises(ZeroDivisionError):
        g.div(x, 0.0)


def test_generated_code_skips_zeros_and_ones(panda):
    import re
    c = codegen.generate(panda)["robot.c"]
    assert not re.search(r"[*+-] (\(-?)?0\.0\b|\* 1\.0\b|\b0\.0 \*|\b1\.0 \*", c)
    # each joint's sin and cos once per function (shared by every use)
    for fn in codegen.FUNCTIONS[:-1]:
        one = codegen.generate(panda, functions=[fn])["robot.c"]
        for k in range(7):
            assert one.count(f"sin(q[{k}])") <= 1 and one.count(f"cos(q[{k}])") <= 1
    # joint 1 turns about gravity: Rz(q₁)ᵀ(0, 0, g) folds, τ never reads sin(q₁)
    assert "sin(q[0])" not in codegen.generate(panda, functions=["inverse_dynamics"])["robot.c"]
