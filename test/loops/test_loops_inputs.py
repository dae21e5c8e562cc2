"""ClosedLoopRobot inputs and threads (fuzz campaign of issue 22): a 400-digit integer is a
ValueError naming the argument (it escaped as OverflowError), and a robot shared by threads gives
the right result or the "in use by another thread" error (its last-assembly state raced: wrong
torques, no error)."""
from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest

import mbs_dynamics as mbs
import loops_mechanisms as lm


@pytest.fixture(scope="module")
def fourbar():
    u, loops, act = lm.planar_fourbar()
    return mbs.load_urdf(u, loops=loops, actuated=act)


def _calls(r):
    q = r.q_assembled[r.actuated_index]
    z = np.zeros(r.n)
    qf = r.expand(q)
    return {"q": [lambda x: r.inverse_dynamics(x, z, z), lambda x: r.mass_matrix(x),
                  lambda x: r.gravity_torques(x), lambda x: r.coriolis_matrix(x, z),
                  lambda x: r.forward_dynamics(x, z, z), lambda x: r.constraint_forces(x, z, z)],
            "qd": [lambda x: r.forward_dynamics(q, x, z), lambda x: r.inverse_dynamics(q, x, z)],
            "tau": [lambda x: r.forward_dynamics(q, z, x, method="dca")],
            "qs": [lambda x: r.expand(x)],
            "q_full": [lambda x: r.loop_residual(x + [0.0] * (len(qf) - 1)),
                       lambda x: r.constraint_jacobian(x + [0.0] * (len(qf) - 1))]}


def test_huge_python_integers_are_value_errors_naming_the_argument(fourbar):
    for name, fns in _calls(fourbar).items():
        for fn in fns:
            with pytest.raises(ValueError, match=name):
                fn([10 ** 400])


def test_huge_integer_in_a_loop_origin_is_a_short_value_error():
    u, loops, act = lm.planar_fourbar()
    loops[0]["origin_a"] = {"xyz": [10 ** 400, 0, 0]}
    with pytest.raises(ValueError, match="origin_a") as e:
        mbs.load_urdf(u, loops=loops, actuated=act)
    assert len(str(e.value)) < 200


def test_shared_closed_loop_robot_is_right_or_busy(fourbar):
    r = fourbar
    rng = np.random.default_rng(0)
    q0 = r.q_assembled[r.actuated_index]
    Q = q0 + 0.05 * rng.standard_normal((20, r.n))
    V, A = rng.standard_normal((2, 20, r.n))
    want = r.copy().inverse_dynamics(Q, V, A)
    res = {"ok": 0, "busy": 0, "wrong": 0}
    lock = threading.Lock()

    def work(t):
        g = np.random.default_rng(t)
        for _ in range(60):
            i = int(g.integers(20))
            try:
                got = (r.inverse_dynamics(Q[i], V[i], A[i]) if g.random() < 0.5
                       else r.inverse_dynamics(Q, V, A)[i])
            except RuntimeError as e:
                assert "in use by another thread" in str(e)
                with lock:
                    res["busy"] += 1
                continue
            with lock:
                res["ok" if np.allclose(got, want[i], rtol=1e-9, atol=1e-9) else "wrong"] += 1

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        th = [threading.Thread(target=work, args=(t,)) for t in range(8)]
        for x in th:
            x.start()
        for x in th:
            x.join()
    assert res["wrong"] == 0 and res["ok"] > 0
    assert not r.data.in_use


@pytest.mark.parametrize("text", ["loops: " + "[" * 5000 + "]" * 5000,
                                  "loops:\n" + "".join("  " * i + "- \n" for i in range(60)),
                                  "\x00\x01binary"])
def test_hostile_loops_yaml_is_one_line_exit_2(tmp_path, capsys, text):
    # fuzz campaign (issue 22): the loops YAML bypassed the package's file limits — 5,000
    # nested brackets ended in a RecursionError traceback
    from mbs_dynamics import cli, data
    f = tmp_path / "loops.yaml"
    f.write_text(text)
    for argv in (["info", str(data.robot("arm7")), "--loops", str(f)],
                 ["kinematics", str(data.robot("arm7")), "--frame", "arm7_tool", "--q",
                  "0 0 0 0 0 0 0", "--loops", str(f)]):
        rc = cli.main(argv)
        err = capsys.readouterr().err
        assert rc == 2 and err.count("\n") == 1 and "loops" in err and "Traceback" not in err
    with pytest.raises(ValueError, match="loops"):
        mbs.load_urdf(data.robot("arm7"), loops=str(f))


def test_cli_says_which_actuated_joints_it_chose_in_one_line(tmp_path, capsys):
    """Without --actuated the package chooses the independent joints and warns; the CLI shows
    that as one ``mbs-dynamics: warning:`` line, not Python's warning with a source excerpt."""
    import yaml
    from mbs_dynamics import cli
    u, loops, _ = lm.parallelogram_arm()
    urdf, lf = tmp_path / "arm.urdf", tmp_path / "loops.yaml"
    urdf.write_text(u)
    lf.write_text(yaml.safe_dump({"loops": [dict(lp) for lp in loops]}))
    assert cli.main(["info", str(urdf), "--loops", str(lf)]) == 0
    err = capsys.readouterr().err
    assert err.startswith("mbs-dynamics: warning: no actuated joints given")
    assert err.count("\n") == 1 and ".py" not in err
