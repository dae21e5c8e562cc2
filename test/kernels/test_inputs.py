"""Inputs the NumPy way, for every public method, single and batch (property tests).

Any array-like (list, tuple, read-only, strided, Fortran-ordered, float32, integer) gives exactly
the result of the same numbers as a C-contiguous float64 array; complex input is a TypeError;
``out`` must be a writable float64 C-contiguous array of exactly the result's shape (else a
ValueError naming ``out``, never a silently unfilled array), and an ``out`` that shares memory
with an input gives the same result as the call without ``out``.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mbs_dynamics as mbs
from conftest import random_urdf

ROBOT = mbs.load_urdf(random_urdf(4, n_movable=5, massless_prob=0.0)[0])
N = ROBOT.n
XML_FB = random_urdf(6, n_movable=4, massless_prob=0.0)[0].replace(
    '<link name="base"/>', '<link name="base"><inertial><mass value="3"/><inertia ixx="0.1" '
    'ixy="0" ixz="0" iyy="0.2" iyz="0" izz="0.3"/></inertial></link>')
FLOAT = mbs.load_urdf(XML_FB, floating_base=True)


def _fb_q(rng, B=None):
    shape = (B,) if B else ()
    q = rng.uniform(-1, 1, shape + (FLOAT.nq,))
    q[..., 3:7] /= np.linalg.norm(q[..., 3:7], axis=-1, keepdims=True)
    return q


def _cases(batch):
    """name → (callable, list of argument arrays, result shape)."""
    rng = np.random.default_rng(0)
    B = 3
    s = (B, N) if batch else (N,)
    a = lambda *shape: rng.uniform(-1, 1, shape)  # noqa: E731
    out = {
        "inverse_dynamics": (ROBOT.inverse_dynamics, [a(*s), a(*s), a(*s)], s),
        "forward_dynamics": (ROBOT.forward_dynamics, [a(*s), a(*s), a(*s)], s),
        "torque_derivatives": (ROBOT.torque_derivatives, [a(*((B, 5, N) if batch else (5, N)))],
                               (B, 3, N) if batch else (3, N)),
        "fb_inverse_dynamics": (FLOAT.inverse_dynamics,
                                [_fb_q(rng, B if batch else None),
                                 a(*((B, FLOAT.nv) if batch else (FLOAT.nv,))),
                                 a(*((B, FLOAT.nv) if batch else (FLOAT.nv,)))],
                                (B, FLOAT.nv) if batch else (FLOAT.nv,)),
    }
    if not batch:
        out.update({
            "mass_matrix": (ROBOT.mass_matrix, [a(N)], (N, N)),
            "coriolis_matrix": (ROBOT.coriolis_matrix, [a(N), a(N)], (N, N)),
            "mass_matrix_derivative": (ROBOT.mass_matrix_derivative, [a(N), a(N)], (N, N)),
            "gravity_torques": (ROBOT.gravity_torques, [a(N)], (N,)),
            "closed_form": (lambda qs, out=None: ROBOT.torque_derivatives(
                qs, method="closed_form", out=out), [a(5, N)], (3, N)),
            "fb_mass_matrix": (FLOAT.mass_matrix, [_fb_q(rng)], (FLOAT.nv, FLOAT.nv)),
            "fb_forward_dynamics": (FLOAT.forward_dynamics,
                                    [_fb_q(rng), a(FLOAT.nv), a(FLOAT.nv)], (FLOAT.nv,)),
        })
    return out


SINGLE, BATCH = _cases(False), _cases(True)
ALL = [(k, False) for k in SINGLE] + [(k, True) for k in BATCH]
LAYOUTS = ["list", "tuple", "readonly", "strided", "fortran", "float32", "int", "view_of_bigger"]


def _relayout(x, how):
    """The same numbers (or their float32/int rounding) in another layout."""
    if how == "list":
        return x.tolist()
    if how == "tuple":
        return tuple(map(tuple, x)) if x.ndim == 2 else tuple(x.tolist())
    if how == "readonly":
        y = x.copy()
        y.setflags(write=False)
        return y
    if how == "strided":
        big = np.zeros(x.shape[:-1] + (2 * x.shape[-1],))
        big[..., ::2] = x
        return big[..., ::2]
    if how == "fortran":
        return np.asfortranarray(x)
    if how == "float32":
        return x.astype(np.float32)
    if how == "int":
        return np.round(x * 3).astype(np.int64)
    if how == "view_of_bigger":
        big = np.zeros((x.shape[0] + 2,) + x.shape[1:])
        big[1:-1] = x
        return big[1:-1]
    raise AssertionError(how)


def _as_reference(y):
    return np.ascontiguousarray(np.asarray(y, dtype=np.float64))


@settings(max_examples=60, deadline=None)
@given(case=st.sampled_from(ALL), how=st.sampled_from(LAYOUTS), which=st.integers(0, 2))
def test_any_layout_gives_the_c_float64_result(case, how, which):
    name, batch = case
    fn, args, _ = (BATCH if batch else SINGLE)[name]
    k = which % len(args)
    if name.startswith("fb_") and k == 0 and how in ("int", "float32"):
        return  # the rounded quaternion is not a unit quaternion: rejected, tested below
    moved = list(args)
    moved[k] = _relayout(args[k], how)
    ref_args = list(args)
    ref_args[k] = _as_reference(moved[k])
    np.testing.assert_array_equal(fn(*moved), fn(*ref_args))


@pytest.mark.parametrize("name,batch", ALL)
def test_complex_input_is_a_type_error(name, batch):
    fn, args, _ = (BATCH if batch else SINGLE)[name]
    for k in range(len(args)):
        moved = list(args)
        moved[k] = args[k] + 0.5j
        with pytest.raises(TypeError, match="real|complex"):
            fn(*moved)


BAD_OUTS = ["float32", "int", "fortran", "strided", "list", "readonly", "wrong_shape", "bigger"]


def _bad_out(shape, how):
    if how == "float32":
        return np.zeros(shape, np.float32)
    if how == "int":
        return np.zeros(shape, np.int64)
    if how == "fortran":
        return np.asfortranarray(np.zeros(shape + (2,))[..., 0]) if len(shape) == 1 else \
            np.asfortranarray(np.zeros(shape))
    if how == "strided":
        return np.zeros(shape[:-1] + (2 * shape[-1],))[..., ::2]
    if how == "list":
        return np.zeros(shape).tolist()
    if how == "readonly":
        y = np.zeros(shape)
        y.setflags(write=False)
        return y
    if how == "wrong_shape":
        return np.zeros(shape[:-1] + (shape[-1] + 1,))
    if how == "bigger":
        return np.zeros((2,) + shape)
    raise AssertionError(how)


@settings(max_examples=60, deadline=None)
@given(case=st.sampled_from(ALL), how=st.sampled_from(BAD_OUTS))
def test_a_wrong_out_is_a_value_error_naming_out(case, how):
    name, batch = case
    fn, args, shape = (BATCH if batch else SINGLE)[name]
    bad = _bad_out(shape, how)
    if how == "fortran" and isinstance(bad, np.ndarray) and bad.flags.c_contiguous:
        return  # a 1-D Fortran array is C-contiguous too: a valid out
    with pytest.raises(ValueError, match="^out "):
        fn(*args, out=bad)


@pytest.mark.parametrize("name,batch", ALL)
def test_out_is_filled_and_returned(name, batch):
    fn, args, shape = (BATCH if batch else SINGLE)[name]
    out = np.full(shape, np.nan)
    assert fn(*args, out=out) is out
    np.testing.assert_array_equal(out, fn(*args))


@pytest.mark.parametrize("name,batch", ALL)
def test_out_sharing_memory_with_an_input_gives_the_same_result(name, batch):
    fn, args, shape = (BATCH if batch else SINGLE)[name]
    ref = fn(*args)
    for k, a in enumerate(args):
        if a.shape != shape or name.startswith("fb_") and k == 0:
            continue  # only same-shaped inputs can be aliased by a valid out
        moved = [x.copy() for x in args]
        res = fn(*moved, out=moved[k])
        assert res is moved[k]
        np.testing.assert_array_equal(res, ref)
    # a view on the same buffer, overlapping partially (batch: rows shifted by one)
    if batch and args[0].shape == shape:
        buf = np.zeros((shape[0] + 1,) + shape[1:])
        buf[:-1] = args[0]
        q = buf[:-1]
        res = fn(q, *args[1:], out=buf[1:])
        np.testing.assert_array_equal(res, ref)


@pytest.mark.parametrize("name,batch", ALL)
def test_non_finite_and_empty(name, batch):
    fn, args, shape = (BATCH if batch else SINGLE)[name]
    for k in range(len(args)):
        moved = [x.copy() for x in args]
        moved[k].flat[-1] = np.nan
        with pytest.raises(ValueError, match="NaN or inf"):
            fn(*moved)
    if batch:
        empty = [x[:0] for x in args]
        assert fn(*empty).shape == (0,) + shape[1:]


def test_closed_form_validates_like_the_recursion():
    qs = np.random.default_rng(1).normal(size=(5, N))
    for bad in (np.nan, np.inf):
        q2 = qs.copy()
        q2[2, 1] = bad
        with pytest.raises(ValueError, match="qs contains NaN or inf"):
            ROBOT.torque_derivatives(q2, method="closed_form")
    empty = np.zeros((0, 5, N))
    assert ROBOT.torque_derivatives(empty, method="closed_form").shape == (0, 3, N)
    assert ROBOT.torque_derivatives(empty).shape == (0, 3, N)


def test_rounded_quaternion_is_rejected_not_silently_normalised():
    q = _fb_q(np.random.default_rng(3))
    with pytest.raises(ValueError, match="unit quaternion"):
        FLOAT.inverse_dynamics(np.round(q * 3).astype(int) + np.r_[0, 0, 0, 1, 1, 0, 0,
                                                                   np.zeros(FLOAT.n)],
                               np.zeros(FLOAT.nv), np.zeros(FLOAT.nv))
