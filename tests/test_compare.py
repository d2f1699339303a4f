"""The bool dtype and comparisons against NumPy: every comparison with every dtype pair and
Python scalars, broadcasting, views, & | ^ ~, bool arithmetic as NumPy defines it, bool(a),
any/all, isnan/isfinite, and bools through conversions, reductions and products.

    >>> (gd.arange(4) > 1).tolist()
    [False, False, True, True]
"""

from __future__ import annotations

import operator

import numpy as np
import pytest

import gpudev as gd
from conftest import assert_array

ALL_DTYPES = [np.float32, np.float64, np.int64, np.int32, np.bool_]
IDS = ["f32", "f64", "i64", "i32", "bool"]
COMPARISONS = [operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge]


def values(shape, dtype, seed):
    """Small values with ties and, for floats, NaN and infinities."""
    rng = np.random.default_rng(seed)
    v = rng.integers(-2, 3, size=shape)
    if dtype == np.bool_:
        return v > 0
    v = v.astype(dtype)
    if np.issubdtype(dtype, np.floating) and v.size >= 3:
        v.flat[0], v.flat[1], v.flat[2] = np.nan, np.inf, -np.inf
    return v


@pytest.mark.parametrize("op", COMPARISONS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("xdt", ALL_DTYPES, ids=IDS)
@pytest.mark.parametrize("ydt", ALL_DTYPES, ids=IDS)
def test_every_comparison_with_every_dtype_pair(device, op, xdt, ydt):
    x, y = values((3, 4), xdt, 1), values((4,), ydt, 2)  # broadcasting too
    got = op(gd.array(x, device=device), gd.array(y, device=device))
    assert got.dtype == np.bool_
    assert_array(got, op(x, y))


@pytest.mark.parametrize("op", COMPARISONS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=IDS)
@pytest.mark.parametrize("scalar", [0, 1, -1.5, True, np.float32(0.5), np.int64(2), np.bool_(False)], ids=repr)
def test_comparisons_with_scalars(device, op, dtype, scalar):
    x = values((2, 5), dtype, 3)
    a = gd.array(x, device=device)
    assert_array(op(a, scalar), op(x, scalar))
    assert_array(op(scalar, a), op(scalar, x))


def test_comparisons_of_views_and_empty_arrays(device):
    x = values((6, 7), np.float64, 4)
    a = gd.array(x, device=device)
    assert_array(a[:, ::2] < a[:, 1::2][:, :1], x[:, ::2] < x[:, 1::2][:, :1])
    assert_array(a.T >= a[::-1].T, x.T >= x[::-1].T)
    assert_array(a[:0] == 1, x[:0] == 1)


def test_equality_is_elementwise_not_identity(device):
    a, b = gd.ones((2, 2), device=device), gd.ones((2, 2), device=device)
    assert_array(a == b, np.ones((2, 2), bool))
    assert (a.sum() == 4).item() is True
    assert bool(a.sum() == 4)
    assert not (a == "abc")  # Python's fallback for foreign types
    # None compares elementwise, as in NumPy: no element equals None
    assert_array(a == None, np.zeros((2, 2), bool))  # noqa: E711
    assert_array(a != None, np.ones((2, 2), bool))  # noqa: E711
    assert len({a, b}) == 2  # arrays still hash by identity


def test_comparisons_of_big_python_ints_are_refused(device):
    a = gd.arange(3, device=device)
    with pytest.raises(OverflowError, match=r"equal: Python integer 1180591620717411303424 out of bounds for int64"):
        a == 2**70


@pytest.mark.parametrize("op", [operator.and_, operator.or_, operator.xor], ids=lambda f: f.__name__)
@pytest.mark.parametrize("dt", [np.bool_, np.int64], ids=["bool", "i64"])
def test_bitwise_operations(device, op, dt):
    x, y = values((5, 3), dt, 5), values((3,), dt, 6)
    a, b = gd.array(x, device=device), gd.array(y, device=device)
    assert_array(op(a, b), op(x, y))
    assert_array(op(a, True if dt == np.bool_ else 3), op(x, True if dt == np.bool_ else 3))
    assert_array(~a, ~x)
    c = gd.array(x, device=device)
    c &= b
    assert_array(c, x & y)


def test_masks_combine_as_numpy():
    x = np.linspace(-2, 2, 11)
    a = gd.array(x)
    assert_array((a > -1) & (a < 1), (x > -1) & (x < 1))
    assert_array(~(a > 0) | (a == 2), ~(x > 0) | (x == 2))
    assert_array((a > 0) ^ True, (x > 0) ^ True)
    assert_array((a > 0) & 1, (x > 0) & 1)  # bool & int: int64


def test_bool_arithmetic_as_numpy(device):
    x, y = values((4,), np.bool_, 7), values((4,), np.bool_, 8)
    a, b = gd.array(x, device=device), gd.array(y, device=device)
    for f in (operator.add, operator.mul, gd.maximum, gd.minimum):
        ref = {gd.maximum: np.maximum, gd.minimum: np.minimum}.get(f, f)
        assert_array(f(a, b), ref(x, y))
    assert_array(a + 1, x + 1)
    assert_array(a * 2.5, x * 2.5)
    with np.errstate(divide="ignore", invalid="ignore"):
        assert_array(a / b, x / y)
    assert_array(abs(a), np.abs(x))
    assert_array(a ** b, (x ** y).astype(np.int64))  # NumPy's int8, computed as int64 here
    with pytest.raises(TypeError, match=r"subtract: not supported for bool operands, as in NumPy; use \^"):
        a - b
    with pytest.raises(TypeError, match=r"negative: not supported for bool arrays, as in NumPy; use ~a"):
        -a
    with pytest.raises(TypeError, match=r"invert: not supported for float32 arrays"):
        ~gd.ones(2, device=device)
    with pytest.raises(TypeError, match=r"bitwise_and: not supported for float32 operands"):
        gd.ones(2, device=device) & gd.ones(2, device=device)
    with pytest.raises(TypeError, match=r"add: cannot cast the int64 result to bool in place"):
        a += 1
    assert_array(a, x)


@pytest.mark.parametrize("shape", [(1,), (), (1, 1)], ids=str)
def test_truth_value_of_one_element(device, shape):
    assert bool(gd.ones(shape, device=device)) and not bool(gd.zeros(shape, device=device))


@pytest.mark.parametrize("shape", [(2,), (0,), (2, 3)], ids=str)
def test_truth_value_of_several_elements_is_ambiguous(device, shape):
    with pytest.raises(ValueError, match=r"bool: the truth value of an array with \d+ elements is ambiguous; "
                                         r"use a\.any\(\) or a\.all\(\)"):
        bool(gd.ones(shape, device=device))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=IDS)
@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1), -1])
def test_any_all(device, dtype, axis):
    for shape in [(3, 4), (0, 4), (3, 0)]:
        x = values(shape, dtype, 9)
        a = gd.array(x, device=device)
        for keepdims in (False, True):
            assert_array(a.any(axis=axis, keepdims=keepdims), x.any(axis=axis, keepdims=keepdims))
            assert_array(gd.all(a, axis, keepdims=keepdims), x.all(axis=axis, keepdims=keepdims))


def test_isnan_isfinite(device):
    x = values((4, 5), np.float32, 10)
    a = gd.array(x, device=device)
    assert_array(gd.isnan(a), np.isnan(x))
    assert_array(gd.isfinite(a[:, ::-2]), np.isfinite(x[:, ::-2]))
    assert_array(gd.isnan(gd.arange(3, device=device)), np.zeros(3, bool))
    assert_array(gd.isfinite(gd.arange(3, device=device) > 0), np.ones(3, bool))
    with pytest.raises(TypeError, match=r"isnan: expected a gpudev Array, got list"):
        gd.isnan([1.0])


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=IDS)
def test_bools_convert_both_ways(device, dtype):
    x = values((3, 5), dtype, 11)
    a = gd.array(x, device=device)
    assert_array(a.astype(gd.bool), x.astype(bool))
    assert_array(a.astype(gd.bool).astype(dtype), x.astype(bool).astype(dtype))
    assert_array((a > 0).T.copy(), (x > 0).T)  # a strided copy of one-byte elements


def test_bool_dtype_and_values(device):
    assert gd.bool is np.bool_ and gd.bool_ is np.bool_
    m = gd.array([True, False, True], device=device)
    assert m.dtype == np.bool_ and m.itemsize == 1
    assert m.tolist() == [True, False, True] and m[0].item() is True
    assert_array(gd.full((2, 2), True, device=device), np.full((2, 2), True))
    assert_array(gd.zeros(3, dtype=gd.bool, device=device), np.zeros(3, bool))
    assert_array(gd.ones((2,), dtype="bool", device=device), np.ones(2, bool))
    m[1] = 5
    m[2] = 0.0
    assert m.tolist() == [True, True, False]
    with pytest.raises(TypeError, match=r"arange: dtype bool is not supported"):
        gd.arange(3, dtype=gd.bool, device=device)
    with pytest.raises(TypeError, match=r"randn: dtype bool is not supported"):
        gd.randn(3, dtype=gd.bool, device=device)


def test_bool_reductions_and_products(device):
    x = values((4, 6), np.bool_, 12)
    a = gd.array(x, device=device)
    assert_array(a.sum(), x.sum())
    assert_array(a.sum(axis=0), x.sum(axis=0))
    assert_array(a.mean(axis=1), x.mean(axis=1))
    assert_array(a.max(axis=1), x.max(axis=1))
    assert_array(a.T.min(axis=0), x.T.min(axis=0))
    assert_array(a @ a.T, x @ x.T)
    y = values((6, 2), np.int64, 13)
    assert_array(a @ gd.array(y, device=device), x @ y)


def test_bools_share_memory_with_numpy_and_dlpack():
    x = np.array([True, False, True])
    a = gd.asarray(x)
    assert np.shares_memory(a.numpy(), x) and a.numpy().dtype == np.bool_
    back = np.from_dlpack(a)
    assert back.dtype == np.bool_ and back.tolist() == [True, False, True]
    assert gd.from_dlpack(x).tolist() == [True, False, True]
