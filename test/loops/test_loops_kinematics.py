"""Closed loops (issue 19): loop description, assembly, residual, constraint Jacobian, jets.

Oracles: Pinocchio's frame placements and LOCAL frame Jacobians of the spanning tree (the
residual and the relative twist of the loop frames, built here), and high-order central
differences of the assembled positions along analytic actuated trajectories.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import mbs_dynamics as mbs
import loops_mechanisms as lm

try:
    import pinocchio as pin
except ImportError:  # skip per test, not per module (launch_testing)
    pin = None
pytestmark = pytest.mark.skipif(pin is None, reason="pinocchio is not installed")

D = {1: np.array([1 / 280, -4 / 105, 1 / 5, -4 / 5, 0, 4 / 5, -1 / 5, 4 / 105, -1 / 280]),
     2: np.array([-1 / 560, 8 / 315, -1 / 5, 8 / 5, -205 / 72, 8 / 5, -1 / 5, 8 / 315, -1 / 560])}
NAMES = list(lm.ALL)


def rpy_pose(o):
    from mbs_dynamics.kernels import lie
    o = o or {}
    return pin.SE3(lie.pose(lie.rpy(*o.get("rpy", (0, 0, 0))), o.get("xyz", (0, 0, 0))))


class PinLoops:
    """The loops on Pinocchio's model of the spanning tree, written independently."""

    def __init__(self, urdf, loops):
        self.model = pin.buildModelFromXML(urdf)
        self.data = self.model.createData()
        self.loops = []
        for lp in loops:
            fa = self.model.getFrameId(lp["frame_a"], pin.BODY)
            fb = self.model.getFrameId(lp["frame_b"], pin.BODY)
            self.loops.append((lp, fa, rpy_pose(lp.get("origin_a")), fb,
                               rpy_pose(lp.get("origin_b"))))

    def frames(self, q):
        m, d = self.model, self.data
        pin.framesForwardKinematics(m, d, q)
        pin.computeJointJacobians(m, d, q)
        out = []
        for lp, fa, Oa, fb, Ob in self.loops:
            Ca, Cb = d.oMf[fa] * Oa, d.oMf[fb] * Ob
            Ja = Oa.toActionMatrixInverse() @ pin.getFrameJacobian(m, d, fa, pin.LOCAL)
            Jb = Ob.toActionMatrixInverse() @ pin.getFrameJacobian(m, d, fb, pin.LOCAL)
            out.append((lp, Ca, Cb, Ja, Jb))
        return out

    def rows(self, lp):
        return {"connect": [0, 1, 2], "weld": [0, 1, 2, 3, 4, 5],
                "revolute": [0, 1, 2, 3, 4]}[lp["type"]]

    def closure_error(self, q):
        """|points apart| and |z axes apart| / |frames apart| over the loops."""
        e = 0.0
        for lp, Ca, Cb, _, _ in self.frames(q):
            e = max(e, np.abs(Ca.translation - Cb.translation).max())
            if lp["type"] == "weld":
                e = max(e, np.abs(Ca.rotation - Cb.rotation).max())
            if lp["type"] == "revolute":
                e = max(e, np.abs(Ca.rotation[:, 2] - Cb.rotation[:, 2]).max())
        return e

    def jacobian(self, q):
        """Rows of V_b − Ad_{C_ba} V_a (LOCAL, linear first) per loop, stacked."""
        K = []
        for lp, Ca, Cb, Ja, Jb in self.frames(q):
            Cba = Cb.inverse() * Ca
            rel = Jb - Cba.toActionMatrix() @ Ja
            K.append(rel[self.rows(lp)])
        return np.vstack(K)


def load(name, **kw):
    u, loops, act = lm.ALL[name]()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", mbs.URDFWarning)
        r = mbs.load_urdf(u, loops=loops, actuated=kw.pop("actuated", act), **kw)
    return r, u, loops


def trajectory(r, t, seed=0):
    """Analytic actuated trajectory q_a(t) = q_a0 + A sin(ω t + φ) and its derivatives."""
    rng = np.random.default_rng(seed)
    q0 = r.q_assembled[r.actuated_index]
    A = rng.uniform(0.05, 0.15, r.n)
    w = rng.uniform(0.8, 1.6, r.n)
    ph = rng.uniform(0, 2 * np.pi, r.n)
    rows = [q0 + A * np.sin(w * t + ph) - A * np.sin(ph)]
    for k in range(1, 7):
        rows.append(A * w ** k * np.sin(w * t + ph + k * np.pi / 2))
    return np.array(rows)


@pytest.fixture(scope="module", params=NAMES)
def mech(request):
    r, u, loops = load(request.param)
    return request.param, r, PinLoops(u, loops)


def test_assembly_and_jacobian_match_pinocchio(mech):
    name, r, P = mech
    q = r.q_assembled
    assert P.closure_error(q) < 1e-11
    assert np.abs(r.loop_residual(q)).max() < 1e-11
    K = r.constraint_jacobian(q)
    Kp = P.jacobian(q)
    assert K.shape == (sum(len(P.rows(lp)) for lp, *_ in P.loops), r.n_full)
    assert np.abs(K - Kp).max() < 1e-12 * max(1, np.abs(Kp).max())
    # elsewhere K is the exact derivative of the residual
    qx = q + 0.2 * np.random.default_rng(3).standard_normal(r.n_full)
    eps = 1e-3
    Kfd = sum(c * np.array([r.loop_residual(qx + (i - 4) * eps * e) for e in np.eye(r.n_full)]).T
              for i, c in enumerate(D[1])) / eps
    assert np.abs(r.constraint_jacobian(qx) - Kfd).max() < 1e-9


def test_expand_jets_match_finite_differences(mech):
    name, r, P = mech
    r = r.copy()
    t0, h = 0.3, 2e-3
    k = 4
    qs = trajectory(r, t0)[:k + 1]
    X = r.expand(qs)
    assert X.shape == (k + 1, r.n_full)
    assert np.allclose(X[:, r.actuated_index], qs, atol=0, rtol=0)
    assert P.closure_error(X[0]) < 1e-11
    # positions and order-2 jets along the trajectory (each assembled by Newton from the
    # previous one); derivatives by 9-point central differences
    h = 1e-2
    ts = t0 + h * np.arange(-4, 5)
    J = np.array([r.expand(trajectory(r, t)[:3]) for t in ts])  # (9, 3, n_full)
    fd = {1: D[1] @ J[:, 0] / h, 2: D[2] @ J[:, 0] / h ** 2,
          3: D[1] @ J[:, 2] / h, 4: D[2] @ J[:, 2] / h ** 2}
    scale = np.abs(X[1:]).max() + 1
    for order, tol in ((1, 1e-9), (2, 1e-8), (3, 1e-9), (4, 1e-8)):
        assert np.abs(X[order] - fd[order]).max() < tol * scale, (name, order)
    # the velocity and acceleration satisfy Pinocchio's closure at velocity level
    Kp = P.jacobian(X[0])
    assert np.abs(Kp @ X[1]).max() < 1e-11 * scale


def test_one_dimensional_expand_and_branch(mech):
    name, r, P = mech
    r = r.copy()
    qa = r.q_assembled[r.actuated_index] + 0.05
    q = r.expand(qa)
    assert q.shape == (r.n_full,)
    assert P.closure_error(q) < 1e-11
    # the default start is the last assembled configuration: same answer again
    assert np.allclose(r.expand(qa), q, atol=1e-12)
    # and q_guess picks the start explicitly
    assert np.allclose(r.expand(qa, q_guess=q), q, atol=1e-12)


def test_redundant_planar_closure_is_rank_revealing():
    r, u, _ = load("planar_fourbar")
    K = r.constraint_jacobian(r.q_assembled)
    s = np.linalg.svd(K, compute_uv=False)
    assert s[-1] < 1e-12 * s[0]  # a 3-D connect in a planar loop: one equation is redundant
    r2, _, _ = load("two_loop_planar")
    K2 = r2.constraint_jacobian(r2.q_assembled)
    assert np.linalg.matrix_rank(K2) == 4 and K2.shape == (6, 5)


def test_actuated_chosen_when_not_given():
    u, loops, _ = lm.planar_fourbar()
    with pytest.warns(mbs.LoopWarning, match="chose the independent coordinates"):
        r = mbs.load_urdf(u, loops=loops)
    assert r.actuated_chosen and r.n == 1 and len(r.full_joint_names) == 3
    u, loops, _ = lm.delta()
    with pytest.warns(mbs.LoopWarning):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", mbs.URDFWarning)
            r = mbs.load_urdf(u, loops=loops)
    assert r.n == 3
    # the chosen joints determine the mechanism: a motion of them expands
    X = r.expand(np.stack([r.q_assembled[r.actuated_index], np.ones(3) * 0.1]))
    assert np.abs(r.constraint_jacobian(X[0]) @ X[1]).max() < 1e-12


def test_public_api_and_yaml(tmp_path):
    u, loops, act = lm.spatial_fourbar()
    import yaml
    f = tmp_path / "loops.yaml"
    f.write_text(yaml.safe_dump({"loops": loops}))
    r = mbs.load_urdf(u, loops=str(f), actuated=act)
    assert isinstance(r, mbs.ClosedLoopRobot)
    assert r.joint_names == ("crank",)
    assert r.full_joint_names == ("crank", "u1", "u2", "rocker")
    assert r.loops[0]["name"] == "ball" and r.loops[0]["type"] == "connect"
    assert "ClosedLoopRobot" in repr(r)
    # without loops nothing changes
    assert type(mbs.load_urdf(u)) is mbs.Robot


# ---------------------------------------------------------------- bad input
def test_bad_loops():
    u, loops, act = lm.planar_fourbar()

    def with_(**kw):
        d = dict(loops[0])
        d.update(kw)
        return [d]

    with pytest.raises(ValueError, match="frame_b 'nope' is not a link"):
        mbs.load_urdf(u, loops=with_(frame_b="nope"), actuated=act)
    with pytest.raises(ValueError, match="same rigid body"):
        mbs.load_urdf(u, loops=with_(frame_b="coupler"), actuated=act)
    with pytest.raises(ValueError, match="type must be one of"):
        mbs.load_urdf(u, loops=with_(type="ball"), actuated=act)
    with pytest.raises(ValueError, match="origin_a\\['xyz'\\] contains NaN"):
        mbs.load_urdf(u, loops=with_(origin_a={"xyz": [np.nan, 0, 0]}), actuated=act)
    with pytest.raises(ValueError, match="unknown key"):
        mbs.load_urdf(u, loops=with_(frame_c="x"), actuated=act)
    # origins that cannot be closed (the coupler tip 5 m away): Newton fails, says the residual
    with pytest.raises(ValueError, match=r"cannot be assembled.*\|h\| = .*loop 'closure'"):
        mbs.load_urdf(u, loops=with_(origin_a={"xyz": [5.0, 0, 0]}), actuated=act)
    with pytest.raises(ValueError, match="actuated joint 'nope'"):
        mbs.load_urdf(u, loops=loops, actuated=["nope"])
    with pytest.raises(ValueError, match="not independent.*closure"):
        mbs.load_urdf(u, loops=loops, actuated=["j_crank", "j_rocker"])
    with pytest.raises(ValueError, match="actuated= needs loops="):
        mbs.load_urdf(u, actuated=act)
    with pytest.raises(ValueError, match="cannot read"):
        mbs.load_urdf(u, loops="/nonexistent/loops.yaml")


def test_undetermined_mechanism_names_the_loop():
    u, loops, _ = lm.delta()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", mbs.URDFWarning)
        with pytest.raises(ValueError, match=r"do not determine.*leg"):
            mbs.load_urdf(u, loops=loops, actuated=["motor0", "motor1"])


def test_bad_inputs_of_methods():
    r, _, _ = load("planar_fourbar")
    with pytest.raises(ValueError, match="NaN"):
        r.expand([np.nan])
    with pytest.raises(ValueError, match="shape"):
        r.expand(np.zeros(2))
    with pytest.raises(ValueError, match="q_full has shape"):
        r.loop_residual(np.zeros(2))
    with pytest.raises(ValueError, match="NaN"):
        r.constraint_jacobian([0, np.nan, 0])
    with pytest.raises(ValueError, match="NaN"):
        r.inverse_dynamics([0.1], [np.inf], [0.0])
    with pytest.raises(ValueError, match="same shape"):
        r.inverse_dynamics(np.zeros((2, 1)), np.zeros(1), np.zeros(1))
    with pytest.raises(TypeError):
        r.inverse_dynamics([1j], [0.0], [0.0])
    # a rocker angle the crank-rocker cannot reach: a clear error naming the loop, no hang
    u, loops, _ = lm.planar_fourbar()
    r2 = mbs.load_urdf(u, loops=loops, actuated=["j_rocker"])
    with pytest.raises(ValueError, match="cannot assemble.*loop 'closure'"):
        r2.expand(r2.q_assembled[r2.actuated_index] + 1.0)


def test_cli_info_with_loops(tmp_path, capsys):
    import yaml
    from mbs_dynamics.cli import main
    u, loops, act = lm.spatial_fourbar()
    (tmp_path / "s.urdf").write_text(u)
    (tmp_path / "l.yaml").write_text(yaml.safe_dump({"loops": loops}))
    rc = main(["info", str(tmp_path / "s.urdf"), "--loops", str(tmp_path / "l.yaml"),
               "--actuated", "crank"])
    out = capsys.readouterr().out
    assert rc in (0, None) and "closed loops" in out and "ball: connect" in out
    assert main(["info", str(tmp_path / "s.urdf"), "--loops", str(tmp_path / "l.yaml"),
                 "--actuated", "nope"]) == 2
    assert "actuated joint 'nope'" in capsys.readouterr().err
    assert main(["info", str(tmp_path / "s.urdf"), "--json", "--loops",
                 str(tmp_path / "l.yaml"), "--actuated", "crank"]) == 0
    assert '"closed_loops"' in capsys.readouterr().out


def test_cli_feedforward_with_loops(tmp_path, capsys):
    """The CLI's feedforward on a closed loop: τ of the actuated crank equals the API's."""
    import yaml
    from mbs_dynamics.cli import main
    u, loops, act = lm.planar_fourbar()
    r = mbs.load_urdf(u, loops=loops, actuated=act)
    q0 = float(r.q_assembled[0])
    (tmp_path / "f.urdf").write_text(u)
    (tmp_path / "l.yaml").write_text(yaml.safe_dump({"loops": loops}))
    (tmp_path / "t.yaml").write_text(yaml.safe_dump({"joint_names": ["j_crank"], "points": [
        {"time_from_start": 0.0, "positions": [q0]},
        {"time_from_start": 1.0, "positions": [q0 + 1.0]}]}))
    out = tmp_path / "ff.csv"
    assert main(["feedforward", str(tmp_path / "f.urdf"), str(tmp_path / "t.yaml"), "--loops",
                 str(tmp_path / "l.yaml"), "--actuated", "j_crank", "--rate", "20", "-o",
                 str(out), "--quiet"]) == 0
    data = np.loadtxt(out, delimiter=",", skiprows=1)
    row = data[7]  # t = 0.35 s: columns t, q, q', q'', q''', q'''', τ, τ', τ''
    T = r.torque_derivatives(row[1:6].reshape(5, 1))
    assert np.allclose(row[6:9], T[:, 0], rtol=1e-8, atol=1e-8)
