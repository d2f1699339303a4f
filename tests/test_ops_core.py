"""The checks-then-dispatch layer against NumPy: promotion, broadcasting, in-place casting and
overlap, reductions over every axis combination, matmul shapes, transpose, concatenate and
stack, astype, assignment, allclose, and the message of every error these operations raise."""

from __future__ import annotations

import itertools
import operator
import re

import numpy as np
import pytest
from numpy.exceptions import AxisError

import gpudev as gd
from conftest import DTYPE_IDS, DTYPES, FLOAT_DTYPES, Array, assert_array, check, host, sample

OPERATORS = {"add": operator.add, "subtract": operator.sub, "multiply": operator.mul, "divide": operator.truediv}
OPS = [*OPERATORS, "maximum", "minimum"]


def gd_op(name: str):
    """The gpudev form of a binary operation: the operator, or gd.maximum / gd.minimum."""
    return OPERATORS.get(name) or getattr(gd, name)


def np_op(name: str):
    return OPERATORS.get(name) or getattr(np, name)


def positive(shape, dtype, seed=0):
    """Data safe for division and powers: values in [1, 5)."""
    return sample(shape, dtype, seed=seed, low=1, high=5)


# ---------------------------------------------------------------------------------------------
# promotion
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("op", OPS, ids=str)
@pytest.mark.parametrize("da", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("db", DTYPES, ids=DTYPE_IDS)
def test_promotion_array_array(device, op, da, db):
    a, b = positive((3, 4), da, seed=1), positive((3, 4), db, seed=2)
    got = gd_op(op)(gd.array(a, device=device), gd.array(b, device=device))
    with np.errstate(all="ignore"):
        ref = np_op(op)(a, b)
    assert_array(got, ref, device=device)


PY_SCALARS = [3, -2, 2.5, True, 0]
NP_SCALARS = [
    np.float32(1.5), np.float64(-2.25), np.float16(0.5), np.int64(3), np.int32(-4), np.int16(2),
    np.int8(-1), np.uint8(7), np.uint16(9), np.uint32(11), np.bool_(True),
]


@pytest.mark.parametrize("op", OPS, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("scalar", PY_SCALARS + NP_SCALARS, ids=lambda s: f"{type(s).__name__}({s})")
def test_promotion_scalars(device, op, dtype, scalar):
    """Python scalars are weak (they take the array's dtype), NumPy scalars are strong."""
    if op == "divide" and not scalar:
        scalar = type(scalar)(1)
    a = positive((2, 3), dtype)
    x = gd.array(a, device=device)
    with np.errstate(all="ignore"):
        assert_array(gd_op(op)(x, scalar), np_op(op)(a, scalar), device=device)
        assert_array(gd_op(op)(scalar, x), np_op(op)(scalar, a), device=device)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_big_python_int(device, dtype):
    a = np.arange(3, dtype=dtype)
    x = gd.array(a, device=device)
    if dtype in (gd.int64, gd.int32):
        name = np.dtype(dtype).name
        with pytest.raises(OverflowError, match=rf"add: Python integer 1180591620717411303424 out of bounds for {name}"):
            x + 2**70
        # true division happens in float64, so the integer need not fit int64 (as NumPy)
        assert_array(x / 2**70, a / 2**70, device=device)
    else:
        assert_array(x + 2**70, a + 2**70, device=device)


def test_python_int_beyond_int32(device):
    a = np.array([-3, 0, 2**31 - 1], np.int32)
    x = gd.array(a, device=device)
    with pytest.raises(OverflowError, match=r"multiply: Python integer 4294967296 out of bounds for int32; .*gd\.int64"):
        x * 2**32
    x[0] = a[0] = -(2**31)
    with pytest.raises(OverflowError, match=r"Python integer 2147483648 out of bounds for int32"):
        x[0] = 2**31
    assert x.tolist() == [-(2**31), 0, 2**31 - 1]
    # comparisons are exact for any int64 value, as NumPy 2's
    for v in (2**31, -(2**31) - 1, 2**40):
        assert_array(x == v, a == v, device=device)
        assert_array(x < v, a < v, device=device)
        assert_array(v >= x, v >= a, device=device)
    assert_array(x + 7, a + np.int32(7), device=device)  # wraps, as NumPy's


def test_float32_scalar_overflow_rounds_to_inf(device):
    x = gd.ones(2, device=device)
    with np.errstate(over="ignore"):
        ref = np.ones(2, np.float32) + 1e300
        assert_array(x + 1e300, ref, device=device)
        assert_array(x + 2**200, np.ones(2, np.float32) + 2**200, device=device)
    # just above FLT_MAX rounds back to FLT_MAX, as a float32 cast does
    near = float(np.finfo(np.float32).max) * (1 + 2**-26)
    assert_array(x * near, np.ones(2, np.float32) * np.float32(near), device=device)


@pytest.mark.parametrize("scalar", [np.complex64(1), np.uint64(1), np.longdouble(1)], ids=lambda s: type(s).__name__)
def test_unsupported_numpy_scalars(device, scalar):
    x = gd.ones(3, device=device)
    with pytest.raises(TypeError, match=rf"add: numpy\.{type(scalar).__name__} scalars are not supported"):
        x + scalar


@pytest.mark.parametrize("other", [np.ones(3), [1.0, 2.0, 3.0], (1.0, 2.0, 3.0)], ids=["ndarray", "list", "tuple"])
def test_foreign_arrays_are_refused(device, other):
    x = gd.ones(3, device=device)
    name = type(other).__name__ if not isinstance(other, np.ndarray) else "numpy.ndarray"
    msg = rf"add: cannot combine a gpudev Array with {name}; convert it first with gd\.asarray\(x, device=a\.device\)"
    with pytest.raises(TypeError, match=msg):
        x + other
    with pytest.raises(TypeError, match=msg):
        other + x
    with pytest.raises(TypeError, match=msg.replace("add", "multiply")):
        x *= other


@pytest.mark.parametrize("other", [None, "a", 1j, object()], ids=repr)
def test_unknown_operands_defer_to_python(device, other):
    x = gd.ones(3, device=device)
    with pytest.raises(TypeError, match="unsupported operand"):
        x + other
    with pytest.raises(TypeError, match="unsupported operand"):
        other - x


# ---------------------------------------------------------------------------------------------
# division and powers
# ---------------------------------------------------------------------------------------------


def test_integer_true_division(device):
    a, b = np.arange(-6, 6).reshape(3, 4), np.array([1, 2, -3, 4])
    check(lambda x, y: x / y, a, b, device=device)
    check(lambda x: x / 4, a, device=device)
    check(lambda x: 7 / x, b, device=device)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("exponent", [0, 1, 3, 2.5, np.int64(2), np.float32(0.5)], ids=repr)
def test_power_scalar_exponents(device, dtype, exponent):
    check(lambda x: x**exponent, positive((2, 5), dtype), device=device)


def test_power_arrays(device):
    check(lambda x, y: x**y, positive((3, 4), np.float32), positive((4,), np.float64), device=device)
    check(lambda x, y: x**y, positive((3, 4), np.int64), positive((4,), np.float32), device=device)
    check(lambda x: 2.0**x, positive((5,), np.int64), device=device)


def test_power_integer_errors(device):
    x = gd.arange(4, device=device)
    with pytest.raises(ValueError, match=r"power: integers to negative integer powers are not allowed; use a\.astype\(gd\.float64\) \*\* n"):
        x ** -1
    with pytest.raises(ValueError, match="negative integer powers"):
        x ** np.int32(-2)
    assert (x**x).tolist() == [1, 1, 4, 27]  # int64 exponent arrays are checked, then computed
    assert (2**x).tolist() == [1, 2, 4, 8]
    with pytest.raises(ValueError, match="power: Integers to negative integer powers are not allowed"):
        x ** -x
    with pytest.raises(ValueError, match="negative integer powers"):
        x **= -1
    assert_array(x, np.arange(4), device=device)  # nothing written by the failed in-place form


def test_nan_propagates_through_maximum_minimum(device):
    a = np.array([1.0, np.nan, 3.0, -np.inf], np.float32)
    b = np.array([np.nan, 2.0, 1.0, np.inf], np.float32)
    check(lambda x, y: gd.maximum(x, y), a, b, ref=np.maximum, device=device)
    check(lambda x, y: gd.minimum(x, y), a, b, ref=np.minimum, device=device)


# ---------------------------------------------------------------------------------------------
# broadcasting
# ---------------------------------------------------------------------------------------------

BROADCAST_PAIRS = [
    ((2, 3), (3,)), ((2, 1), (1, 3)), ((4, 1, 3), (2, 1)), ((), (2, 3)), ((3, 1, 1, 5), (1, 4, 1)),
    ((0, 3), (1, 3)), ((0,), (1,)), ((1,), (0,)), ((2, 0, 3), (2, 1, 3)), ((1, 1), (1,)),
    ((5, 1, 4), (5, 3, 1)), ((1, 6, 1, 7), (6, 2, 1)), ((3, 4), (3, 4)), ((2, 3, 4), (1, 1, 1)),
]


@pytest.mark.parametrize("op", OPS, ids=str)
@pytest.mark.parametrize("sa,sb", BROADCAST_PAIRS, ids=str)
def test_broadcasting(device, op, sa, sb):
    a, b = positive(sa, np.float32, seed=1), positive(sb, np.float64, seed=2)
    check(gd_op(op), a, b, ref=np_op(op), device=device)
    check(gd_op(op), b, a, ref=np_op(op), device=device)


def test_broadcasting_large_operands(device):
    """Past the size where the CPU releases the GIL, with broadcast and collapsed axes."""
    a, b, c = sample((3, 200, 100), np.float32), sample((200, 1), np.float32, seed=1), sample((100,), np.int64)
    check(lambda x, y: x + y, a, b, device=device)
    check(lambda x, y: x * y, a, c, device=device)
    check(lambda x: x - 3.5, a, device=device)


@pytest.mark.parametrize("sa,sb", [((2, 3), (4,)), ((2, 3), (3, 2)), ((0,), (2,)), ((5, 4, 3), (4, 2))], ids=str)
def test_broadcast_errors(device, sa, sb):
    x, y = gd.zeros(sa, device=device), gd.zeros(sb, device=device)
    fmt = lambda s: "(" + ", ".join(map(str, s)) + ("," if len(s) == 1 else "") + ")"
    msg = rf"add: shapes {fmt(sa)} and {fmt(sb)} cannot be broadcast together".replace("(", r"\(").replace(")", r"\)")
    with pytest.raises(ValueError, match=msg):
        x + y


def test_operations_on_views(device):
    base = sample((4, 5, 6), np.float64)
    x = gd.array(base, device=device)
    assert_array(x[1] + x[2, 3], base[1] + base[2, 3], device=device)
    assert_array(x[1:3] * x[0], base[1:3] * base[0], device=device)


# ---------------------------------------------------------------------------------------------
# in-place forms: casting, shapes, overlap
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "divide"], ids=str)
@pytest.mark.parametrize("target", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("other", DTYPES + [int, float], ids=DTYPE_IDS + ["int", "float"])
def test_inplace_same_kind_casting(device, op, target, other):
    a = positive((3, 4), target)
    b = positive((4,), other, seed=3) if other not in (int, float) else other(3)
    x = gd.array(a, device=device)
    y = gd.array(b, device=device) if isinstance(b, np.ndarray) else b
    iop = getattr(operator, {"add": "iadd", "subtract": "isub", "multiply": "imul", "divide": "itruediv"}[op])
    try:
        expected = iop(a.copy(), b)
    except Exception as e:  # NumPy refuses: gpudev must refuse with its own message
        assert "Cannot cast ufunc" in str(e) or "cast" in str(e)
        sym = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/"}[op]
        msg = rf"{op}: cannot cast the float64 result to {np.dtype(target).name} in place \(NumPy's same_kind rule\)"
        with pytest.raises(TypeError, match=rf"{msg}; write a = a \{sym} b instead"):
            iop(x, y)
        assert_array(x, a, device=device)
        return
    same = x
    x = iop(x, y)
    assert x is same
    assert_array(x, expected, device=device)


def test_inplace_shape_error(device):
    x, y = gd.zeros(3, device=device), gd.zeros((2, 3), device=device)
    with pytest.raises(ValueError, match=r"add: the result has shape \(2, 3\) but the in-place target has shape \(3,\); write a = a \+ b instead"):
        x += y
    z = gd.zeros((2, 1), device=device)
    with pytest.raises(ValueError, match=r"subtract: the result has shape \(2, 3\) but the in-place target has shape \(2, 1\); write a = a - b instead"):
        z -= y


def test_inplace_overlap_reads_before_writing(device):
    ref = np.arange(10.0)
    x = gd.array(ref, device=device)
    ref[1:6] += ref[0:5]
    x[1:6] += x[0:5]
    assert_array(x, ref, device=device)

    ref2 = np.arange(12.0).reshape(4, 3)
    y = gd.array(ref2, device=device)
    ref2 += ref2[1]  # broadcast operand inside the target
    y += y[1]
    assert_array(y, ref2, device=device)

    ref3 = np.arange(8, dtype=np.int64)
    z = gd.array(ref3, device=device)
    ref3[:-1] *= ref3[1:]
    z[:-1] *= z[1:]
    assert_array(z, ref3, device=device)

    w = gd.array(np.arange(6.0), device=device)
    w += w  # the same elements in the same layout: no copy needed, same answer
    assert_array(w, 2 * np.arange(6.0), device=device)


def test_inplace_wider_result_is_cast_back(device):
    x = gd.ones((2, 3), dtype=gd.float32, device=device)
    x += gd.full((3,), 1e-9, dtype=gd.float64, device=device)
    assert x.dtype == gd.float32
    x *= np.float64(3)
    x += 2**40
    ref = (np.ones((2, 3), np.float32) + 1e-9).astype(np.float32) * np.float32(3)
    ref += 2**40
    assert_array(x, ref, device=device)


def test_empty_results(device):
    x = gd.zeros((0, 3), device=device)
    assert (x + 1).shape == (0, 3)
    assert (x + gd.ones(3, device=device)).shape == (0, 3)
    same = x
    x += 1.0
    assert x is same and x.shape == (0, 3)
    assert (gd.zeros((2, 0), dtype=gd.int64, device=device) / 2).dtype == np.float64


# ---------------------------------------------------------------------------------------------
# unary operations
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "tanh", "abs", "relu", "negative"])
def test_unary(device, dtype, name):
    a = positive((3, 7), dtype) if name in ("log", "sqrt") else sample((3, 7), dtype, low=-3, high=3)
    fn = {"relu": lambda x: x * (x > 0), "negative": np.negative}.get(name) or getattr(np, name)
    gfn = {"negative": operator.neg}.get(name) or getattr(gd, name)
    got = gfn(gd.array(a, device=device))
    ref = fn(a)
    if name == "relu":
        ref = ref.astype(a.dtype)
    assert_array(got, ref, device=device)


def test_unary_empty_and_0d(device):
    assert gd.exp(gd.zeros((0, 4), dtype=gd.int64, device=device)).dtype == np.float64
    assert_array(-gd.array(np.float32(2.5), device=device), np.float32(-2.5), device=device)


# ---------------------------------------------------------------------------------------------
# reductions
# ---------------------------------------------------------------------------------------------

AXES = [None, 0, 1, 2, -1, -3, (), (0,), (1,), (2,), (0, 1), (0, 2), (1, 2), (0, 1, 2), (2, 0), (-1, 0)]
KINDS = ["sum", "mean", "max", "min", "norm"]


def reference(kind: str, a: np.ndarray, axis, keepdims: bool) -> np.ndarray:
    if kind == "norm":
        wide = a.astype(np.float64)
        r = np.sqrt(np.sum(wide * wide, axis=axis, keepdims=keepdims))
        return np.asarray(r).astype(np.float32 if a.dtype == np.float32 else np.float64)
    r = getattr(np, kind)(a.astype(np.float64) if a.dtype == np.float32 and kind in ("sum", "mean") else a, axis=axis, keepdims=keepdims)
    if a.dtype.kind == "i":  # NumPy's own dtypes: int32 sums give int64, means float64
        return np.asarray(r)
    return np.asarray(r).astype(a.dtype)


def reduce(kind: str, x, axis, keepdims: bool):
    if kind == "norm":
        return gd.norm(x, axis=axis, keepdims=keepdims)
    return getattr(x, kind)(axis=axis, keepdims=keepdims)


@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_reductions_every_axis(device, axis, dtype):
    a = sample((4, 5, 6), dtype, seed=7)
    x = gd.array(a, device=device)
    for kind, keepdims in itertools.product(KINDS, (False, True)):
        got = reduce(kind, x, axis, keepdims)
        ref = reference(kind, a, axis, keepdims)
        assert_array(got, ref, rtol=2e-7 if dtype == gd.float32 else 1e-12, device=device)


@pytest.mark.parametrize("shape,axis", [((1, 5, 1), (0, 2)), ((3, 1, 4), 1), ((1,), 0), ((1, 1), None), ((), None), ((), ())], ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_reductions_over_length_one_axes(device, shape, axis, dtype):
    a = sample(shape, dtype, seed=3)
    x = gd.array(a, device=device)
    for kind, keepdims in itertools.product(KINDS, (False, True)):
        assert_array(reduce(kind, x, axis, keepdims), reference(kind, a, axis, keepdims), device=device)


def test_empty_reductions(device):
    e = gd.zeros((0, 3), device=device)
    assert_array(e.sum(axis=0), np.zeros(3, np.float32), device=device)
    assert_array(e.sum(), np.float32(0), device=device)
    assert_array(gd.zeros((0,), dtype=gd.int64, device=device).sum(), np.int64(0), device=device)
    assert_array(e.mean(axis=0), np.full(3, np.nan, np.float32), device=device)
    assert_array(gd.norm(e, axis=0), np.zeros(3, np.float32), device=device)
    assert_array(e.max(axis=1), np.zeros(0, np.float32), device=device)  # nothing to reduce into
    assert_array(e.sum(axis=1, keepdims=True), np.zeros((0, 1), np.float32), device=device)
    with pytest.raises(ValueError, match=r"max: zero-size array has no maximum \(reduction over an axis of length 0\)"):
        e.max(axis=0)
    with pytest.raises(ValueError, match=r"min: zero-size array has no minimum"):
        e.min()


def test_reduction_axis_errors(device):
    x = gd.zeros((2, 3), device=device)
    with pytest.raises(AxisError, match=r"sum: axis 2 is out of bounds for array of dimension 2"):
        x.sum(axis=2)
    with pytest.raises(AxisError, match=r"mean: axis -3 is out of bounds"):
        x.mean(axis=(0, -3))
    with pytest.raises(ValueError, match=r"max: duplicate value in 'axis'"):
        x.max(axis=(1, -1))
    with pytest.raises(TypeError, match=r"sum: axis must be None, an int or a tuple of ints, got list"):
        x.sum(axis=[0])
    with pytest.raises(AxisError):
        gd.norm(gd.zeros((), device=device), axis=0)


def test_float32_sums_keep_float64_accuracy(device):
    """Multi-pass reductions over non-adjacent axes keep float64 intermediates."""
    a = (np.random.default_rng(0).standard_normal((64, 3, 4000)) + 1).astype(np.float32)
    x = gd.array(a, device=device)
    wide = a.astype(np.float64)
    for axis in [None, (0, 2), 2, (0, 1, 2)]:
        for kind in ["sum", "mean", "norm"]:
            ref = reference(kind, a, axis, False)
            exact = np.sqrt((wide * wide).sum(axis=axis)) if kind == "norm" else getattr(wide, kind)(axis=axis)
            got = host(reduce(kind, x, axis, False)).astype(np.float64)
            np.testing.assert_allclose(got, exact, rtol=1.2e-7)  # float32 rounding of the exact value
            np.testing.assert_allclose(got, ref, rtol=1.2e-7)


def test_int64_sums_are_exact(device):
    a = np.array([2**62, 3, -(2**62), 5], dtype=np.int64).reshape(2, 2)
    x = gd.array(a, device=device)
    assert x.sum().item() == 8
    assert_array(x.sum(axis=0), a.sum(axis=0), device=device)
    assert x.mean().dtype == np.float64


# ---------------------------------------------------------------------------------------------
# matrix product
# ---------------------------------------------------------------------------------------------

MATMUL_SHAPES = [
    ((3,), (3,)), ((3,), (3, 4)), ((2, 3), (3,)), ((2, 3), (3, 4)), ((5, 2, 3), (3, 4)),
    ((2, 3), (5, 3, 4)), ((5, 2, 3), (5, 3, 4)), ((5, 1, 2, 3), (4, 3, 2)), ((1, 2, 3), (5, 3, 4)),
    ((3,), (5, 3, 4)), ((5, 2, 3), (3,)), ((2, 1, 2, 3), (1, 3, 3, 2)), ((0, 3), (3, 4)),
    ((2, 0), (0, 4)), ((2, 3), (3, 0)), ((0, 2, 3), (3, 4)), ((0,), (0,)), ((1, 1), (1, 1)),
    ((7, 33, 17), (17, 9)),
]


@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES, ids=str)
@pytest.mark.parametrize("da,db", [(np.float32, np.float32), (np.float64, np.float64), (np.float32, np.float64)], ids=str)
def test_matmul_shapes(device, sa, sb, da, db):
    a, b = sample(sa, da, seed=1), sample(sb, db, seed=2)
    rtol = 1e-5 if np.result_type(da, db) == np.float32 else 1e-12
    check(lambda x, y: x @ y, a, b, device=device, rtol=rtol, atol=1e-4)
    check(lambda x, y: gd.matmul(x, y), a, b, ref=np.matmul, device=device, rtol=rtol, atol=1e-4)


def test_matmul_errors(device):
    x = gd.zeros((2, 3), device=device)
    with pytest.raises(ValueError, match=r"matmul: shapes \(2, 3\) and \(4, 5\) do not align: 3 \(last dim of a\) != 4 \(first dim of b\)"):
        x @ gd.zeros((4, 5), device=device)
    with pytest.raises(ValueError, match=r"matmul: shapes \(2, 3\) and \(6, 4, 5\) do not align: 3 \(last dim of a\) != 4 \(second-to-last dim of b\)"):
        x @ gd.zeros((6, 4, 5), device=device)
    with pytest.raises(ValueError, match=r"matmul: shapes \(2, 3\) and \(2,\) do not align: 3 \(last dim of a\) != 2 \(first dim of b\)"):
        x @ gd.zeros(2, device=device)
    with pytest.raises(ValueError, match=r"matmul: shapes \(4, 2, 3\) and \(5, 3, 2\) do not broadcast"):
        gd.zeros((4, 2, 3), device=device) @ gd.zeros((5, 3, 2), device=device)
    with pytest.raises(ValueError, match=r"matmul: 0-d operands are not allowed; use \* for scalars"):
        x @ gd.array(np.float32(2), device=device)
    with pytest.raises(ValueError, match=r"matmul: 0-d operands are not allowed"):
        x @ 2.0
    with pytest.raises(ValueError, match=r"matmul: 0-d operands are not allowed"):
        3 @ x
    with pytest.raises(TypeError, match=r"matmul: cannot combine a gpudev Array with numpy\.ndarray"):
        x @ np.zeros((3, 2), np.float32)


# ---------------------------------------------------------------------------------------------
# transpose
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(), (5,), (2, 3), (2, 3, 4), (1, 3, 1, 4), (0, 3)], ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_transpose_reverses(device, shape, dtype):
    a = sample(shape, dtype)
    x = gd.array(a, device=device)
    t = x.T
    assert_array(t, a.T, device=device)
    assert t is not x


def test_transpose_every_permutation(device):
    a = sample((2, 3, 1, 4), np.float64)
    x = gd.array(a, device=device)
    for perm in itertools.permutations(range(4)):
        assert_array(x.transpose(perm), a.transpose(perm), device=device)
    assert_array(x.transpose(-1, 0, -2, 1), a.transpose(-1, 0, -2, 1), device=device)
    b = sample((3, 4, 5, 6), np.int64)
    for perm in [(0, 1, 3, 2), (2, 3, 0, 1), (1, 2, 3, 0), (3, 0, 1, 2), (0, 2, 1, 3)]:
        assert_array(gd.array(b, device=device).transpose(perm), b.transpose(perm), device=device)


def test_transpose_errors(device):
    x = gd.zeros((2, 3), device=device)
    with pytest.raises(ValueError, match=r"transpose: repeated axis 0"):
        x.transpose(0, 0)
    with pytest.raises(ValueError, match=r"transpose: axes \(1, 0, 2\) do not match an array of shape \(2, 3\)"):
        x.transpose(1, 0, 2)
    with pytest.raises(AxisError, match=r"transpose: axis 2 is out of bounds for array of dimension 2"):
        x.transpose(0, 2)


# ---------------------------------------------------------------------------------------------
# concatenate and stack
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
def test_concatenate(device, axis):
    shapes = [(2, 3, 4), (2, 3, 4)]
    parts = []
    for i, n in enumerate([1, 3, 0, 2]):
        s = list(shapes[0])
        s[axis] = n
        parts.append(sample(tuple(s), np.float32, seed=i))
    got = gd.concatenate([gd.array(p, device=device) for p in parts], axis=axis)
    assert_array(got, np.concatenate(parts, axis=axis), device=device)


def test_concatenate_promotes(device):
    parts = [sample((2, 3), np.float32), sample((1, 3), np.int64), sample((2, 3), np.float64)]
    assert_array(gd.concatenate([gd.array(p, device=device) for p in parts]), np.concatenate(parts), device=device)
    ints = [sample((2,), np.int64), sample((3,), np.int64)]
    assert_array(gd.concatenate(tuple(gd.array(p, device=device) for p in ints)), np.concatenate(ints), device=device)


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
@pytest.mark.parametrize("shape", [(2, 3), (0, 3), (4, 1)], ids=str)
def test_stack(device, axis, shape):
    parts = [sample(shape, np.float64, seed=i) for i in range(3)]
    got = gd.stack([gd.array(p, device=device) for p in parts], axis=axis)
    assert_array(got, np.stack(parts, axis=axis), device=device)


def test_stack_scalars_and_mixed_dtypes(device):
    parts = [np.float32(1.5), np.float32(-2)]
    assert_array(gd.stack([gd.array(p, device=device) for p in parts]), np.stack(parts), device=device)
    mixed = [sample((3,), np.int64), sample((3,), np.float32)]
    assert_array(gd.stack([gd.array(p, device=device) for p in mixed]), np.stack(mixed).astype(np.float64), device=device)


def test_concatenate_errors(device):
    z = lambda *s: gd.zeros(s, device=device)
    with pytest.raises(ValueError, match=r"concatenate: need at least one array"):
        gd.concatenate([])
    with pytest.raises(ValueError, match=r"stack: need at least one array"):
        gd.stack([])
    with pytest.raises(ValueError, match=r"concatenate: all the input arrays must have the same number of dimensions, but the array at index 0 has 2 dimension\(s\) and the array at index 1 has 1 dimension\(s\)"):
        gd.concatenate([z(2, 3), z(3)])
    with pytest.raises(ValueError, match=r"concatenate: all the input array dimensions except for the concatenation axis must match exactly, but along dimension 1, the array at index 0 has size 3 and the array at index 1 has size 4"):
        gd.concatenate([z(2, 3), z(2, 4)])
    with pytest.raises(ValueError, match=r"stack: all input arrays must have the same shape, but the array at index 0 has shape \(2, 3\) and the array at index 2 has shape \(3, 2\)"):
        gd.stack([z(2, 3), z(2, 3), z(3, 2)])
    with pytest.raises(ValueError, match=r"concatenate: zero-dimensional arrays cannot be concatenated"):
        gd.concatenate([z(), z()])
    with pytest.raises(AxisError, match=r"concatenate: axis 2 is out of bounds for array of dimension 2"):
        gd.concatenate([z(2, 3), z(2, 3)], axis=2)
    with pytest.raises(AxisError, match=r"stack: axis -4 is out of bounds for array of dimension 3"):
        gd.stack([z(2, 3)], axis=-4)
    with pytest.raises(TypeError, match=r"concatenate: expected a sequence of gpudev Arrays, but item 1 is numpy\.ndarray"):
        gd.concatenate([z(2), np.zeros(2)])


# ---------------------------------------------------------------------------------------------
# astype
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("src", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("dst", DTYPES, ids=DTYPE_IDS)
def test_astype(device, src, dst):
    a = sample((3, 5), src, low=-100, high=100)
    x = gd.array(a, device=device)
    y = x.astype(dst)
    assert_array(y, a.astype(dst), device=device)
    assert y is not x
    if src == dst:
        assert x.astype(dst, copy=False) is x
    else:
        assert_array(x.astype(dst, copy=False), a.astype(dst), device=device)


def test_astype_truncates_toward_zero(device):
    a = np.array([-2.7, -0.5, 0.5, 2.7, 1e10], np.float64)
    assert_array(gd.array(a, device=device).astype(gd.int64), a.astype(np.int64), device=device)


# ---------------------------------------------------------------------------------------------
# assignment
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("value", [3, -2.75, True, np.float32(1.5), np.int8(-4), np.float64(7.25)], ids=repr)
def test_assign_scalars(device, dtype, value):
    a = sample((3, 4), dtype)
    x = gd.array(a, device=device)
    x[1] = value
    a[1] = value
    x[0:1] = value
    a[0:1] = value
    assert_array(x, a, device=device)


@pytest.mark.parametrize("dst", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("src", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("vshape", [(4,), (1, 4), (3, 4), (3, 1), (), (1, 1, 4)], ids=str)
def test_assign_arrays_broadcast_and_cast(device, dst, src, vshape):
    a = sample((2, 3, 4), dst)
    v = sample(vshape, src, seed=5, low=-50, high=50)
    x = gd.array(a, device=device)
    x[1] = gd.array(v, device=device)
    a[1] = v
    assert_array(x, a, device=device)


def test_assign_overlap(device):
    a = np.arange(10.0)
    x = gd.array(a, device=device)
    x[1:] = x[:-1]
    a[1:] = a[:-1].copy()
    assert_array(x, a, device=device)
    b = np.arange(12, dtype=np.int64).reshape(4, 3)
    y = gd.array(b, device=device)
    y[1:3] = y[0]
    b[1:3] = b[0].copy()
    y[:] = y  # itself: nothing to do
    assert_array(y, b, device=device)


def test_assign_errors(device):
    x = gd.zeros((3, 2, 2), device=device)
    with pytest.raises(ValueError, match=r"setitem: could not broadcast input array from shape \(3,\) into shape \(2, 2\)"):
        x[0] = gd.zeros(3, device=device)
    with pytest.raises(ValueError, match=r"setitem: could not broadcast input array from shape \(2, 2, 2\) into shape \(2, 2\)"):
        x[0] = gd.zeros((2, 2, 2), device=device)
    i = gd.zeros(3, dtype=gd.int64, device=device)
    with pytest.raises(ValueError, match=r"setitem: cannot convert float NaN to integer"):
        i[0] = float("nan")
    with pytest.raises(OverflowError, match=r"setitem: cannot convert float 1e\+30 to int64"):
        i[0] = 1e30
    with pytest.raises(OverflowError, match=r"setitem: Python integer 18446744073709551616 out of bounds for int64"):
        i[0] = 2**64
    with pytest.raises(TypeError, match=r"setitem: cannot combine a gpudev Array with numpy\.ndarray"):
        x[0] = np.zeros((2, 2))
    with pytest.raises(TypeError, match=r"setitem: cannot assign str to a gpudev Array"):
        x[0] = "a"
    assert_array(i, np.zeros(3, np.int64), device=device)


def test_assign_empty_target(device):
    x = gd.zeros((0, 3), device=device)
    x[0:0] = 1.0
    x[0:0] = gd.ones(3, device=device)
    assert x.shape == (0, 3)


# ---------------------------------------------------------------------------------------------
# allclose
# ---------------------------------------------------------------------------------------------


def test_allclose_edge_cases(device):
    a = lambda v, dt=np.float64: gd.array(np.asarray(v, dt), device=device)
    nan, inf = float("nan"), float("inf")
    cases = [
        (a([1.0, 2.0]), a([1.0, 2.0 + 1e-6])),
        (a([1.0, 2.0]), a([1.0, 2.1])),
        (a([nan]), a([nan])),
        (a([inf, -inf]), a([inf, -inf])),
        (a([inf]), a([-inf])),
        (a([inf]), a([1e308])),
        (a([0.0]), a([1e-9])),
        (a([0.0]), a([1e-7])),
        (a([1e-8]), a([0.0])),
        (a([[1.0, 2.0], [1.0, 2.0]]), a([1.0, 2.0])),
        (a([1, 2, 3], np.int64), a([1.0, 2.0, 3.0], np.float32)),
        (a(np.zeros((0, 3))), a(np.zeros(3))),
        (a([1.0, 1.0]), 1),
        (2.0, a([2.0, 2.0 + 1e-12])),
        (a([100.0]), a([100.0009])),
    ]
    for x, y in cases:
        nx = host(x) if isinstance(x, Array) else x
        ny = host(y) if isinstance(y, Array) else y
        assert gd.allclose(x, y) == np.allclose(nx, ny), (nx, ny)
    assert gd.allclose(a([1.0]), a([1.5]), rtol=0, atol=0.5)
    assert not gd.allclose(a([1.0]), a([1.5]), rtol=0, atol=0.49)
    assert gd.allclose(a([1.0]), a([2.0]), rtol=0.5)  # |a - b| <= rtol * |b|: asymmetric, as NumPy
    assert not gd.allclose(a([2.0]), a([1.0]), rtol=0.5)


def test_allclose_errors(device):
    with pytest.raises(ValueError, match=r"allclose: shapes \(2,\) and \(3,\) cannot be broadcast together"):
        gd.allclose(gd.zeros(2, device=device), gd.zeros(3, device=device))
    with pytest.raises(TypeError, match=r"allclose: cannot combine a gpudev Array with numpy\.ndarray"):
        gd.allclose(gd.zeros(2, device=device), np.zeros(2))


# ---------------------------------------------------------------------------------------------
# devices and tracing
# ---------------------------------------------------------------------------------------------


def test_device_mismatch_messages(cuda0):
    g, c = gd.ones((2, 2), device=cuda0), gd.ones((2, 2))
    gpu = re.escape(gd.device_label(cuda0))  # 'cuda:0 (emulated)' on an emulated GPU; the fix names 'cuda:0'
    with pytest.raises(gd.DeviceMismatchError, match=rf"add: operands are on different devices, {gpu} and cpu; copy one of them first, e\.g\. b\.to\('cuda:0'\)"):
        g + c
    with pytest.raises(gd.DeviceMismatchError, match=rf"matmul: operands are on different devices, cpu and {gpu}"):
        c @ g
    with pytest.raises(gd.DeviceMismatchError, match=rf"concatenate: arrays are on different devices, cpu \(index 0\) and {gpu} \(index 1\); copy them to one device first, e\.g\. arrays\[1\]\.to\('cpu'\)"):
        gd.concatenate([c, g])
    with pytest.raises(gd.DeviceMismatchError, match=rf"setitem: the value is on cpu but the array is on {gpu}; copy it first, e\.g\. value\.to\('cuda:0'\)"):
        g[0] = c[0]
    with pytest.raises(gd.DeviceMismatchError, match=r"allclose: operands are on different devices"):
        gd.allclose(g, c)


def test_trace_names_operations(device):
    x = gd.ones((2, 3), device=device)
    with gd.trace() as t:
        y = x + 1.0
        y += x
        y = y.sum(axis=0)
        z = x @ x.T
        x.astype(gd.float64)
        gd.stack([x, x])
        x[0] = 2.0
    names = [e.name for e in t.ops]
    for name in ["add", "sum", "matmul", "astype", "stack", "assign"]:
        assert name in names, names
    assert names.count("add") == 2
    assert z.shape == (2, 2) and y.shape == (3,)
