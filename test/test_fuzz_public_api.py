"""The fuzz campaign of issue 22, compact and deterministic: every public method of Robot (fixed
and floating base), MimicRobot, ClosedLoopRobot and the compiled codegen object, called with
every bad-input class of the README's input contract (harness: test/fuzz_api.py) — wrong shapes,
NaN/inf, 1e308, 10**400 as a Python int, complex, read-only, strided, Fortran, float32/int/bool,
lists, empty arrays, N = 0 / 1 batches, unknown frame names, wrong types for representation /
method, ``out=`` of the wrong shape/dtype/layout, read-only or aliasing an input.

Must hold: only ValueError / TypeError (URDFError, CodegenError are ValueErrors) naming the
argument; finite ordinary inputs give finite outputs; single and batch calls agree, and a
MimicRobot agrees with its full robot projected; a Robot shared by 8 threads gives the right
result or the "in use by another thread" error. The minutes-long campaign runs the same harness
randomly: ``python test/fuzz_api.py SEED SECONDS bundled|random|mimic|erd|loops``.
"""
from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest

import mbs_dynamics as mbs
import fuzz_api as F


def _findings(robots, fn=F.sweep):
    rec = []
    n = 0
    for label, r in robots:
        n += fn(r, lambda c, lab, m, tb: rec.append((c, lab, m)), f"[{label}] ")
    assert n > 0
    return rec      # overflow of huge finite inputs (|x| >= 1e154) is an error too: a ValueError


@pytest.mark.parametrize("kind", ["bundled", "random", "mimic", "loops"])
def test_every_method_every_bad_input_class(kind):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        robots = F.robots(kind, 3)
        if kind == "loops":
            robots = [x for x in robots if x[0] in ("planar_fourbar", "delta")]
        assert not _findings(robots[:3])


def test_compiled_object_every_bad_input_class():
    from mbs_dynamics import codegen, data
    r = mbs.load_urdf(data.robot("arm7"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c = codegen.compile(r, frames=["arm7_tool"])
    assert not _findings([("compiled arm7", c)])
    for frame in ("nope", None, 3, b"arm7_tool"):
        with pytest.raises((ValueError, TypeError), match="frame|compiled"):
            c.frame_jacobian(np.zeros(7), frame)
    for prefix in (None, 3, "", "1x", "x" * 5000):
        with pytest.raises(codegen.CodegenError, match="prefix"):
            codegen.generate(r, prefix=prefix)


def test_random_campaign_slice_is_clean():
    """A seeded slice of the random campaign (the minutes-long runs use other seeds)."""
    rec = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for kind in ("bundled", "mimic", "loops"):
            for label, r in F.robots(kind, 7)[:2]:
                rng = np.random.default_rng(7)
                F.consistency(r, rng, lambda *a: rec.append(a[:3]), f"[{label}] ")
                F.fuzz_robot(r, rng, lambda *a: rec.append(a[:3]), 150, f"[{label}] ")
    assert not rec


try:
    from hypothesis import HealthCheck, given, settings, strategies as st
    from hypothesis.extra import numpy as hnp
except ImportError:  # skip per test, not per module (launch_testing)
    given = None

_ARM = None


def _arm():
    global _ARM
    if _ARM is None:
        from mbs_dynamics import data
        _ARM = mbs.load_urdf(data.robot("arm7"))
    return _ARM


if given is None:
    def test_hypothesis_arrays_anywhere():
        pytest.skip("hypothesis is not installed")
else:
    _elements = st.one_of(st.floats(allow_nan=True, allow_infinity=True, width=64),
                          st.integers(-10 ** 400, 10 ** 400))
    _arrays = st.one_of(
        hnp.arrays(st.sampled_from([np.float64, np.float32, np.int64, np.bool_, np.complex128]),
                   hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=8)),
        st.lists(_elements, min_size=0, max_size=9), st.none(), st.text(max_size=3))
    _METHODS = ["inverse_dynamics", "forward_dynamics", "frame_placement", "frame_velocity",
                "frame_jacobian", "frame_jacobian_derivative", "frame_acceleration",
                "kinematic_hessian", "christoffel", "regressor", "inverse_dynamics_derivatives",
                "forward_dynamics_derivatives", "inverse_dynamics_second_order_derivatives",
                "frame_derivatives", "regressor_derivatives",
                "with_inertial_parameters"]


    @settings(max_examples=300, derandomize=True, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(method=st.sampled_from(_METHODS), which=st.integers(0, 3), x=_arrays,
           rep=st.one_of(st.sampled_from(F.REPS), st.text(max_size=4), st.none(), st.integers()))
    def test_hypothesis_arrays_anywhere(method, which, x, rep):
        r = _arm()
        rng = np.random.default_rng(0)
        M = {m[0]: m for m in F.methods(r, rng)}
        name, fn, args, kinds = M[method]
        args = dict(args)
        keys = [k for k, v in kinds.items() if v == "array"]
        args[keys[which % len(keys)]] = x
        if "representation" in kinds:
            args["representation"] = rep
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error", RuntimeWarning)  # no silent overflow warnings
                fn(**args)
        except (ValueError, TypeError):
            pass


def test_new_methods_shared_by_8_threads_are_right_or_busy():
    """Every method of a Robot and of a MimicRobot shared by 8 threads: right or busy."""
    from test_mimic import CHAIN
    for r in (_arm(), mbs.load_urdf(CHAIN)):
        rng = np.random.default_rng(1)
        M = [m for m in F.methods(r, rng) if m[0] != "with_inertial_parameters"]
        want = [fn(**a) for _, fn, a, _ in M]
        res = {"ok": 0, "busy": 0, "wrong": []}
        lock = threading.Lock()

        def work(t):
            g = np.random.default_rng(t)
            for _ in range(150):
                j = int(g.integers(len(M)))
                try:
                    got = M[j][1](**M[j][2])
                except RuntimeError as e:
                    assert "in use by another thread" in str(e)
                    with lock:
                        res["busy"] += 1
                    continue
                a = np.stack(got) if isinstance(got, tuple) else got
                b = np.stack(want[j]) if isinstance(want[j], tuple) else want[j]
                with lock:
                    if np.allclose(a, b, rtol=1e-9, atol=1e-9):
                        res["ok"] += 1
                    else:
                        res["wrong"].append(M[j][0])

        th = [threading.Thread(target=work, args=(t,)) for t in range(8)]
        for x in th:
            x.start()
        for x in th:
            x.join()
        assert not res["wrong"] and res["ok"] > 0
