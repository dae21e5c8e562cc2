"""Fuzzing the public API: every method of Robot / MimicRobot / ClosedLoopRobot and the compiled
codegen object with the bad-input classes of the README's input contract (wrong shapes, NaN/inf,
huge values, 10**400, complex, read-only, strided, float32/int, lists, empty, N = 0 / 1 batches,
unknown names, wrong types for representation/method, bad ``out=``).

Used by test/test_fuzz_public_api.py (small, deterministic) and by the campaign script
(``python test/fuzz_api.py SEED SECONDS KIND``) that runs it for minutes in subprocesses.
Outcome of a call: a result (checked finite when the inputs are moderate), or a documented
exception (ValueError, TypeError — incl. URDFError — or RuntimeError "in use by another
thread"); anything else is an *escape*.
"""
from __future__ import annotations

import sys
import traceback

import numpy as np

ALLOWED = (ValueError, TypeError)
REPS = ("body", "spatial", "hybrid", "mixed")


def allowed(e):
    if isinstance(e, ALLOWED):
        return True
    return isinstance(e, RuntimeError) and "in use by another thread" in str(e)


# ---------------------------------------------------------------- valid states
def valid_state(r, rng, N=None):
    """(q, qd, qdd) valid for r, single or (N, ·)."""
    def one():
        if hasattr(r, "q_assembled"):
            q = r.q_assembled[r.actuated_index] + 0.05 * rng.standard_normal(r.n)
            return q, rng.standard_normal(r.n), rng.standard_normal(r.n)
        q = rng.uniform(-1, 1, r.nq)
        if r.floating_base:
            q[3:7] /= np.linalg.norm(q[3:7])
        return q, rng.standard_normal(r.nv), rng.standard_normal(r.nv)
    if N is None:
        return one()
    s = [one() for _ in range(N)]
    return tuple(np.array([x[i] for x in s]).reshape(N, -1) for i in range(3))


def valid_qs(r, rng, k=1, N=None):
    """torque_derivatives-style input: (k+3, n) rows, or the pair (q, vs) for a floating base."""
    if r.floating_base:
        q, _, _ = valid_state(r, rng, N)
        vs = rng.standard_normal(((N,) if N is not None else ()) + (k + 2, r.nv))
        return (q, vs)
    shape = ((N,) if N is not None else ()) + (k + 3, r.n)
    qs = 0.5 * rng.standard_normal(shape)
    if hasattr(r, "q_assembled"):
        qs[..., 0, :] += r.q_assembled[r.actuated_index]
    return qs


# ---------------------------------------------------------------- bad-input classes
def _huge_int_list(v):
    x = np.asarray(v, dtype=float).tolist()
    flat = x
    while isinstance(flat, list) and flat and isinstance(flat[0], list):
        flat = flat[0]
    if isinstance(flat, list) and flat:
        flat[0] = 10 ** 400
    return x


def array_variants(v):
    """(label, value, moderate) for an array argument whose valid value is ``v`` (float64);
    ``moderate``: still a valid, finite, ordinary-magnitude input (the result must be finite)."""
    v = np.asarray(v, dtype=float)
    out = []
    def put(label, x, moderate=False):
        out.append((label, x, moderate))
    put("list", v.tolist(), True)
    put("tuple", tuple(v.tolist()) if v.ndim == 1 else v.tolist(), True)
    ro = v.copy()
    ro.flags.writeable = False
    put("readonly", ro, True)
    put("strided", np.repeat(v, 2, axis=-1)[..., ::2] if v.size else v, True)
    put("fortran", np.asfortranarray(v), True)
    put("float32", v.astype(np.float32), True)
    put("int", np.round(v).astype(np.int64), True)
    put("bool", v > 0)
    if v.size:
        for bad in (np.nan, np.inf, -np.inf, 1e308, -1e308, 1e200, 5e-324):
            x = v.copy()
            x.flat[len(x.flat) // 2] = bad
            put(f"value {bad!r}", x)
        put("10**400", _huge_int_list(v))
        put("all 1e154", np.full_like(v, 1e154))
    put("complex0", v.astype(complex))
    put("complex", v + 1j)
    put("object", np.array(v.tolist() + [None] if v.ndim == 1 else v.tolist(), dtype=object))
    put("str", "abc")
    put("None", None)
    put("scalar", 1.0)
    put("dict", {"a": 1})
    put("empty", np.empty(0))
    put("empty2", np.empty((0,) + v.shape[1:]))
    put("longer", np.concatenate([v, v[..., :1]], axis=-1) if v.size else np.zeros(1))
    put("shorter", v[..., :-1])
    put("3d", v[None, None])
    put("transposed", v.T.copy() if v.ndim == 2 else v[:, None])
    return out


def name_variants():
    return [("unknown", "no_such_frame"), ("None", None), ("int", 3), ("bytes", b"x"),
            ("list", ["a"]), ("empty", ""), ("float", 1.5), ("nan", float("nan"))]


def rep_variants():
    return [("unknown", "world"), ("upper", "BODY"), ("None", None), ("int", 0),
            ("bytes", b"body"), ("list", ["body"]), ("float", 1.0)]


def out_variants(shape):
    shape = tuple(shape)
    vs = [("wrongshape", np.empty(shape + (1,))), ("float32", np.empty(shape, np.float32)),
          ("int", np.empty(shape, np.int64)), ("list", np.zeros(shape).tolist()),
          ("fortran", np.asfortranarray(np.empty(shape))), ("scalar", 1.0), ("str", "x")]
    ro = np.empty(shape)
    ro.flags.writeable = False
    vs.append(("readonly", ro))
    if shape and shape[-1] > 1:
        vs.append(("strided", np.empty(shape[:-1] + (2 * shape[-1],))[..., ::2]))
    return vs


# ---------------------------------------------------------------- the methods
def methods(r, rng):
    """[(name, fn, args dict, kinds dict)] with one valid call per public method of r:
    kinds maps an argument name to 'array' | 'frame' | 'rep' | 'method' | 'out'."""
    frames = list(getattr(r, "frame_names", []) or [])
    frame = frames[len(frames) - 1] if frames else None
    q, qd, qdd = valid_state(r, rng)
    loop = hasattr(r, "q_assembled")
    M = []
    def add(name, args, kinds, fn=None):
        if fn is None:
            if not hasattr(r, name):
                return
            fn = getattr(r, name)
        M.append((name, fn, args, kinds))
    A = "array"
    add("inverse_dynamics", dict(q=q, qd=qd, qdd=qdd), dict(q=A, qd=A, qdd=A, out="out"))
    add("forward_dynamics", dict(q=q, qd=qd, tau=qdd), dict(q=A, qd=A, tau=A, out="out"))
    add("mass_matrix", dict(q=q), dict(q=A, out="out"))
    add("coriolis_matrix", dict(q=q, qd=qd), dict(q=A, qd=A, out="out"))
    add("gravity_torques", dict(q=q), dict(q=A, out="out"))
    add("torque_derivatives", dict(qs=valid_qs(r, rng)), dict(qs=A, out="out", method="method"))
    if not loop:
        add("inverse_dynamics", dict(q=q, qd=qd, qdd=qdd, representation="spatial"),
            dict(q=A, qd=A, qdd=A, out="out", representation="rep"))
        add("forward_dynamics", dict(q=q, qd=qd, tau=qdd, method="dca"),
            dict(q=A, qd=A, tau=A, out="out", method="method"))
        add("frame_placement", dict(q=q, frame=frame), dict(q=A, frame="frame", out="out"))
        add("frame_velocity", dict(q=q, qd=qd, frame=frame, representation="hybrid"),
            dict(q=A, qd=A, frame="frame", representation="rep", out="out"))
        add("frame_jacobian", dict(q=q, frame=frame, representation="mixed"),
            dict(q=A, frame="frame", representation="rep", out="out"))
        add("frame_jacobian_derivative", dict(q=q, qd=qd, frame=frame, representation="spatial"),
            dict(q=A, qd=A, frame="frame", representation="rep", out="out"))
        add("frame_acceleration", dict(q=q, qd=qd, qdd=qdd, frame=frame),
            dict(q=A, qd=A, qdd=A, frame="frame", representation="rep", out="out"))
        add("frame_derivatives", dict(qs=valid_qs(r, rng), frame=frame),
            dict(qs=A, frame="frame", representation="rep", out="out"))
        add("kinematic_hessian", dict(q=q, frame=frame, representation="hybrid"),
            dict(q=A, frame="frame", representation="rep"))
        add("christoffel", dict(q=q), dict(q=A))
        add("regressor", dict(q=q, qd=qd, qdd=qdd), dict(q=A, qd=A, qdd=A, out="out"))
        add("regressor_derivatives", dict(qs=valid_qs(r, rng)), dict(qs=A, out="out"))
        add("inverse_dynamics_derivatives", dict(q=q, qd=qd, qdd=qdd),
            dict(q=A, qd=A, qdd=A, out="out"))
        add("forward_dynamics_derivatives", dict(q=q, qd=qd, tau=qdd), dict(q=A, qd=A, tau=A))
        add("inverse_dynamics_second_order_derivatives", dict(q=q, qd=qd, qdd=qdd),
            dict(q=A, qd=A, qdd=A, out="out"))
        pi = r.inertial_parameters()
        add("with_inertial_parameters", dict(pi=pi), dict(pi=A))
        add("mass_matrix_derivative", dict(q=q, qd=qd), dict(q=A, qd=A, out="out"))
    else:
        qf = r.expand(q)
        add("expand", dict(qs=q), dict(qs=A))
        add("loop_residual", dict(q_full=qf), dict(q_full=A))
        add("constraint_jacobian", dict(q_full=qf), dict(q_full=A))
        add("constraint_forces", dict(q=q, qd=qd, qdd=qdd), dict(q=A, qd=A, qdd=A))
        for m in ("lagrange", "dca"):
            add("forward_dynamics", dict(q=q, qd=qd, tau=qdd, method=m),
                dict(q=A, qd=A, tau=A, out="out", method="method"))
    compiled = getattr(r, "_functions", None)
    if compiled is not None:  # codegen's CompiledRobot: its own functions (+ frame Jacobians)
        M = [m for m in M if m[0] in compiled and "representation" not in m[2]
             and "method" not in m[2]]
        M = [(nm, fn, a, {k: v for k, v in kd.items() if v != "method"}) for nm, fn, a, kd in M]
        M.append(("frame_jacobian", r.frame_jacobian, dict(q=q, frame=frame),
                  dict(q=A, frame="frame", out="out")))
    return M


def _bad_values(kind, value, rng):
    if kind == "array":
        if isinstance(value, tuple):  # (q, vs) pair: mutate one half
            i = int(rng.integers(2))
            res = []
            for lab, x, mod in array_variants(value[i]):
                pair = list(value)
                pair[i] = x
                res.append((f"pair[{i}] {lab}", tuple(pair), mod))
            res.append(("pair as list", list(value), False))
            res.append(("3-tuple", value + (value[1],), False))
            return res
        return array_variants(value)
    if kind == "frame":
        return [(a, b, False) for a, b in name_variants()]
    if kind in ("rep", "method"):
        return [(a, b, False) for a, b in rep_variants()]
    return []


def call(fn, args):
    return fn(**args)


def check_call(fn, args, moderate, record, label):
    """Run one call; record escapes and non-finite outputs of moderate inputs."""
    try:
        res = fn(**args)
    except Exception as e:  # noqa: BLE001 - classify
        if not allowed(e):
            record("escape", label, f"{type(e).__name__}: {e}".splitlines()[0][:300],
                   traceback.format_exc(limit=-3))
        elif not str(e).strip():
            record("empty-message", label, type(e).__name__, "")
        return None
    huge = any(w in label for w in ("1e+308", "1e+200", "1e154", "5e-324"))
    if moderate or huge:
        for x in (res if isinstance(res, tuple) else (res,)):
            if isinstance(x, np.ndarray) and x.dtype.kind == "f" and not np.all(np.isfinite(x)):
                record("nonfinite" if moderate else "overflow", label,
                       "finite input gave non-finite output", "")
    return res


def fuzz_robot(r, rng, record, calls, tag=""):
    """``calls`` random bad-input calls over every method of r."""
    M = methods(r, rng)
    done = 0
    while done < calls:
        name, fn, args, kinds = M[int(rng.integers(len(M)))]
        # batch shapes: N = 0 / 1 / 3 for the array arguments of the state methods
        args = dict(args)
        arr = [k for k, v in kinds.items() if v == "array"]
        mode = rng.random()
        if mode < 0.15 and set(arr) <= {"q", "qd", "qdd", "tau"} and arr:
            N = int(rng.choice([0, 1, 3]))
            q, qd, qdd = valid_state(r, rng, N) if N else (
                np.empty((0, r.nq)), np.empty((0, r.nv)), np.empty((0, r.nv)))
            for k in arr:
                args[k] = {"q": q, "qd": qd, "qdd": qdd, "tau": qdd}[k]
            lab = f"{tag}{name} batch N={N} {args.get('representation', '')}"
            check_call(fn, args, True, record, lab)
            done += 1
            continue
        if mode < 0.3 and "out" in kinds:
            try:
                ref = fn(**args)
            except Exception as e:  # noqa: BLE001
                if not allowed(e):
                    record("escape", f"{tag}{name} valid", f"{type(e).__name__}: {e}"[:300],
                           traceback.format_exc(limit=-3))
                done += 1
                continue
            shape = ref[0].shape if isinstance(ref, tuple) else np.shape(ref)
            if isinstance(ref, tuple):
                shape = (len(ref),) + shape
            for lab, o in out_variants(shape):
                a2 = dict(args, out=o)
                check_call(fn, a2, False, record, f"{tag}{name} out={lab}")
                done += 1
            # aliasing: out is an input of the same shape
            for k in arr:
                v = args[k]
                if isinstance(v, np.ndarray) and v.shape == tuple(shape):
                    ref = fn(**args)  # again: a ClosedLoopRobot's result follows its branch
                    a2 = dict(args)
                    a2[k] = v.copy()
                    a2["out"] = a2[k]
                    res = check_call(fn, a2, True, record, f"{tag}{name} out aliases {k}")
                    if res is not None and not np.allclose(res, ref, rtol=1e-9, atol=1e-9):
                        record("wrong", f"{tag}{name} out aliases {k}", "result differs", "")
            continue
        k = list(kinds)[int(rng.integers(len(kinds)))]
        if kinds[k] == "out":
            continue
        bad = _bad_values(kinds[k], args.get(k), rng)
        if not bad:
            continue
        lab, x, moderate = bad[int(rng.integers(len(bad)))]
        args[k] = x
        check_call(fn, args, moderate, record, f"{tag}{name} {k}={lab}")
        done += 1
    return done


def consistency(r, rng, record, tag=""):
    """Single vs batch for every state method; MimicRobot vs its full robot projected."""
    q, qd, qdd = valid_state(r, rng, 3)
    for name, fn, args, kinds in methods(r, rng):
        arr = [k for k, v in kinds.items() if v == "array"]
        if not arr or not set(arr) <= {"q", "qd", "qdd", "tau"}:
            continue
        b = dict(args, **{k: {"q": q, "qd": qd, "qdd": qdd, "tau": qdd}[k] for k in arr})
        try:
            B = fn(**b)
            S = [fn(**dict(args, **{k: b[k][i] for k in arr})) for i in range(3)]
        except Exception as e:  # noqa: BLE001
            if not allowed(e):
                record("escape", f"{tag}{name} consistency", f"{type(e).__name__}: {e}"[:300],
                       traceback.format_exc(limit=-3))
            continue
        if isinstance(B, tuple):
            B = np.stack(B, axis=1)
            S = [np.stack(s) for s in S]
        err = np.abs(np.asarray(B) - np.stack(S)).max() / max(1.0, np.abs(B).max())
        if not err < 1e-9:
            record("wrong", f"{tag}{name} single vs batch", f"rel err {err:.3g}", "")
    if hasattr(r, "full_robot") and hasattr(r, "G") and not hasattr(r, "q_assembled"):
        f, G = r.full_robot, r.G
        x, xd, xdd = valid_state(r, rng)
        qf, vf, af = r.expand(x), G @ xd, G @ xdd
        pairs = [("inverse_dynamics", r.inverse_dynamics(x, xd, xdd),
                  G.T @ f.inverse_dynamics(qf, vf, af)),
                 ("mass_matrix", r.mass_matrix(x), G.T @ f.mass_matrix(qf) @ G),
                 ("frame_jacobian", r.frame_jacobian(x, r.frame_names[-1]),
                  f.frame_jacobian(qf, r.frame_names[-1]) @ G),
                 ("regressor", r.regressor(x, xd, xdd), G.T @ f.regressor(qf, vf, af)),
                 ("christoffel", np.einsum("ijk,ia,jb,kc->abc", r.christoffel(x), *(3 * [np.eye(r.nv)])),
                  np.einsum("ijk,ia,jb,kc->abc", f.christoffel(qf), G, G, G))]
        for nm, a, b in pairs:
            err = np.abs(a - b).max() / max(1.0, np.abs(b).max())
            if not err < 1e-9:
                record("wrong", f"{tag}{nm} mimic vs full", f"rel err {err:.3g}", "")


# ---------------------------------------------------------------- robots
def robots(kind, seed):
    """[(label, robot)] of a kind: 'bundled', 'random', 'mimic', 'erd', 'loops'."""
    import warnings
    import mbs_dynamics as mbs
    from pathlib import Path
    root = Path(mbs.__file__).parent / "data" / "robots"
    warnings.simplefilter("ignore")
    if kind == "bundled":
        return [("arm7", mbs.load_urdf(str(root / "arm7.urdf"))),
                ("quad12", mbs.load_urdf(str(root / "quad12.urdf"), floating_base=True))]
    from conftest import random_urdf
    if kind == "random":
        xml, _ = random_urdf(seed, n_movable=int(3 + seed % 9))
        out = [(f"random{seed}", mbs.load_urdf(xml))]
        try:
            out.append((f"random{seed}-fb", mbs.load_urdf(xml, floating_base=True)))
        except ValueError:
            pass
        return out
    if kind == "mimic":
        sys.path.insert(0, str(Path(__file__).parent / "model"))
        from test_mimic import CHAIN, _random_mimic
        out = [("chain", mbs.load_urdf(CHAIN))]
        try:
            out.append((f"mimic{seed}", mbs.load_urdf(_random_mimic(seed))))
            out.append((f"mimic{seed}-fb", mbs.load_urdf(_random_mimic(seed), floating_base=True)))
        except ValueError:
            pass
        return out
    if kind == "erd":
        from conftest import erd_path
        rels = ["ur_description/urdf/ur5_robot.urdf", "panda_description/urdf/panda.urdf",
                "solo_description/robots/solo12.urdf"]
        return [(p.split("/")[-1], mbs.load_urdf(erd_path(p), floating_base="solo" in p))
                for p in rels]
    if kind == "loops":
        sys.path.insert(0, str(Path(__file__).parent / "loops"))
        import loops_mechanisms as lm
        out = []
        for nm, f in lm.ALL.items():
            u, loops, act = f()
            out.append((nm, mbs.load_urdf(u, loops=loops, actuated=act)))
        return out
    raise ValueError(kind)


def campaign(seed, seconds, kind, log):
    """Run random bad-input calls on robots of ``kind`` for ``seconds``; write findings to log."""
    import json
    import time
    t_end = time.process_time() + seconds
    n = 0
    found = {}

    def record(cls, label, msg, tb):
        key = (cls, " ".join(label.split(" ")[1:3]), msg[:60])
        if key not in found:
            found[key] = 1
            log.write(json.dumps({"cls": cls, "label": label, "msg": msg, "tb": tb}) + "\n")
            log.flush()
        else:
            found[key] += 1
    s = seed
    while time.process_time() < t_end:
        rng = np.random.default_rng(s)
        for label, r in robots(kind, s):
            consistency(r, rng, record, tag=f"[{label}] ")
            n += fuzz_robot(r, rng, record, 300, tag=f"[{label}] ")
        s += 1000
    log.write(json.dumps({"summary": {"calls": n, "findings": len(found),
                                      "counts": sum(found.values())}}) + "\n")
    return n


if __name__ == "__main__":
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
    seed, seconds, kind = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
    out_dir = __import__("os").environ.get("FUZZ_DIR", "/tmp/fuzz")  # findings, JSON lines
    with open(f"{out_dir}/{kind}-{seed}.jsonl", "w") as log:
        campaign(seed, seconds, kind, log)


NAMED = ("value nan", "value inf", "value -inf", "complex", "str", "None", "dict", "longer",
         "shorter", "3d", "10**400", "unknown", "upper", "bytes", "wrongshape")


def sweep(r, record, tag="", seed=0):
    """Every method × every argument × every bad-input class once (deterministic), every
    ``out=`` variant, batches of N = 0 and 1, and single-vs-batch agreement. Also records
    messages that do not name the argument (``vague``)."""
    rng = np.random.default_rng(seed)
    n = 0
    for name, fn, args, kinds in methods(r, rng):
        for k, kind in kinds.items():
            if kind == "out":
                continue
            variants = _bad_values(kind, args.get(k), rng)
            if kind == "array" and isinstance(args.get(k), tuple):
                variants = [v for i in range(2) for v in
                            _bad_values(kind, args[k], np.random.default_rng(i))]
            for lab, x, moderate in variants:
                n += 1
                a2 = dict(args)
                a2[k] = x
                try:
                    res = fn(**a2)
                except Exception as e:  # noqa: BLE001 - classify
                    if not allowed(e):
                        record("escape", f"{tag}{name} {k}={lab}",
                               f"{type(e).__name__}: {e}".splitlines()[0][:300],
                               traceback.format_exc(limit=-3))
                    elif any(lab.endswith(w) for w in NAMED) and k.split("_")[0] not in str(e) \
                            and not (kind == "array" and isinstance(args[k], tuple)
                                     and ("q" in str(e) or "vs" in str(e))):
                        record("vague", f"{tag}{name} {k}={lab}", str(e)[:200], "")
                    continue
                huge = any(w in lab for w in ("1e+308", "1e+200", "1e154", "5e-324"))
                if moderate or huge:
                    for y in (res if isinstance(res, tuple) else (res,)):
                        if isinstance(y, np.ndarray) and not np.all(np.isfinite(y)):
                            record("nonfinite" if moderate else "overflow",
                                   f"{tag}{name} {k}={lab}", "", "")
        if "out" in kinds:
            ref = fn(**args)
            shape = ref[0].shape if isinstance(ref, tuple) else np.shape(ref)
            if isinstance(ref, tuple):
                shape = (len(ref),) + shape
            for lab, o in out_variants(shape):
                n += 1
                try:
                    fn(**dict(args, out=o))
                except Exception as e:  # noqa: BLE001
                    if not allowed(e):
                        record("escape", f"{tag}{name} out={lab}", f"{type(e).__name__}: {e}",
                               traceback.format_exc(limit=-3))
                    elif "out" not in str(e):
                        record("vague", f"{tag}{name} out={lab}", str(e)[:200], "")
                    continue
                if lab not in ("list", "scalar", "str") and not (
                        lab == "fortran" and np.asfortranarray(np.empty(shape)).flags.c_contiguous):
                    record("accepted-bad-out", f"{tag}{name} out={lab}", "", "")
        arr = [k for k, v in kinds.items() if v == "array"]
        if arr and set(arr) <= {"q", "qd", "qdd", "tau"}:
            for N in (0, 1):
                q, qd, qdd = valid_state(r, rng, N) if N else (
                    np.empty((0, r.nq)), np.empty((0, r.nv)), np.empty((0, r.nv)))
                a2 = dict(args, **{k: {"q": q, "qd": qd, "qdd": qdd, "tau": qdd}[k]
                                   for k in arr})
                n += 1
                check_call(fn, a2, True, record, f"{tag}{name} batch N={N}")
    consistency(r, rng, record, tag)
    return n
