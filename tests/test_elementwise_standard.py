"""The array API standard's elementwise functions (trigonometric and hyperbolic functions,
logarithms, rounding, sign tests, bitwise operations, ...) against NumPy on every
device, with the standard's special cases (NaN, infinities, signed zeros), gradients against
central differences, and the errors for inputs a function does not take.

One row per function in the tables below; every test reads them."""

from __future__ import annotations

import math
import operator
from typing import Any, Callable, NamedTuple

import numpy as np
import pytest

import gpudev as gd
from conftest import CPU, assert_array, host, is_gpu, rtol_for, sample
from test_autograd import gradcheck

F32, F64, I64, I32, B = np.float32, np.float64, np.int64, np.int32, np.bool_


class Unary(NamedTuple):
    ref: Callable[[np.ndarray], np.ndarray]  # NumPy's function
    low: float  # the domain random floats come from
    high: float
    kinds: str  # the dtype kinds gpudev takes: 'f' floats, 'i' int64, 'b' bool
    ints: str  # what an int64 or bool input gives: 'float64', 'same' (its own dtype) or 'bool'
    grad: bool  # differentiable (checked against central differences)


# float-only functions compute integers and bools in float64, as NumPy does for integers (for
# bools NumPy gives float16, which gpudev lacks)
UNARY: dict[str, Unary] = {
    "acos": Unary(np.arccos, -0.99, 0.99, "fib", "float64", True),
    "acosh": Unary(np.arccosh, 1.01, 10, "fib", "float64", True),
    "asin": Unary(np.arcsin, -0.99, 0.99, "fib", "float64", True),
    "asinh": Unary(np.arcsinh, -10, 10, "fib", "float64", True),
    "atan": Unary(np.arctan, -10, 10, "fib", "float64", True),
    "atanh": Unary(np.arctanh, -0.99, 0.99, "fib", "float64", True),
    "cos": Unary(np.cos, -10, 10, "fib", "float64", True),
    "cosh": Unary(np.cosh, -5, 5, "fib", "float64", True),
    "sin": Unary(np.sin, -10, 10, "fib", "float64", True),
    "sinh": Unary(np.sinh, -5, 5, "fib", "float64", True),
    "tan": Unary(np.tan, -1.5, 1.5, "fib", "float64", True),
    "tanh": Unary(np.tanh, -5, 5, "fib", "float64", True),
    "log1p": Unary(np.log1p, -0.99, 10, "fib", "float64", True),
    "expm1": Unary(np.expm1, -5, 5, "fib", "float64", True),
    "log2": Unary(np.log2, 0.01, 10, "fib", "float64", True),
    "log10": Unary(np.log10, 0.01, 10, "fib", "float64", True),
    "reciprocal": Unary(lambda x: 1.0 / x, 0.5, 10, "fib", "float64", True),
    # rounding keeps integers as they are, in their own dtype (the standard, NumPy 2)
    "ceil": Unary(np.ceil, -10, 10, "fib", "same", True),
    "floor": Unary(np.floor, -10, 10, "fib", "same", True),
    "trunc": Unary(np.trunc, -10, 10, "fib", "same", True),
    "round": Unary(np.round, -10, 10, "fib", "same", True),
    # NumPy refuses bools; gpudev's sign of a bool is the bool itself, as its abs is
    "sign": Unary(lambda x: x.copy() if x.dtype == np.bool_ else np.sign(x), -10, 10, "fib", "same", True),
    "square": Unary(np.square, -10, 10, "fib", "same", True),
    "negative": Unary(np.negative, -10, 10, "fi", "same", True),
    "signbit": Unary(np.signbit, -10, 10, "fib", "bool", False),
    "isnan": Unary(np.isnan, -10, 10, "fib", "bool", False),
    "isfinite": Unary(np.isfinite, -10, 10, "fib", "bool", False),
    "bitwise_invert": Unary(np.invert, -10, 10, "ib", "same", False),
}


class Binary(NamedTuple):
    ref: Callable[[np.ndarray, np.ndarray], np.ndarray]
    low: float
    high: float
    kinds: str
    ints: str
    grad: bool


BINARY: dict[str, Binary] = {
    "atan2": Binary(np.arctan2, -10, 10, "fib", "float64", True),
    "copysign": Binary(np.copysign, -10, 10, "fib", "float64", True),
    "logaddexp": Binary(np.logaddexp, -10, 10, "fib", "float64", True),
    "nextafter": Binary(np.nextafter, -10, 10, "fib", "float64", False),
    "bitwise_and": Binary(np.bitwise_and, -100, 100, "ib", "same", False),
    "bitwise_or": Binary(np.bitwise_or, -100, 100, "ib", "same", False),
    "bitwise_xor": Binary(np.bitwise_xor, -100, 100, "ib", "same", False),
    # shifts of bools are computed in int64 (NumPy: int8, which gpudev lacks)
    "bitwise_left_shift": Binary(np.left_shift, 0, 70, "ib", "int64", False),
    "bitwise_right_shift": Binary(np.right_shift, 0, 70, "ib", "int64", False),
}

KIND = {F32: "f", F64: "f", I64: "i", I32: "i", B: "b"}
ALL_DTYPES = [F32, F64, I64, I32, B]
DTYPE_IDS = ["float32", "float64", "int64", "int32", "bool"]
SHAPES = [(), (7,), (3, 5), (0,), (2, 0, 3)]


def _fn(name: str) -> Callable:
    return getattr(gd, name)


def _data(shape: tuple, dtype: Any, low: float, high: float, seed: int) -> np.ndarray:
    """Values in [low, high) of dtype; ints and bools from the domain rounded inwards."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return np.random.default_rng(seed).integers(0, 2, size=shape).astype(bool)
    if dtype.kind == "i":
        lo, hi = math.ceil(low), math.floor(high)
        return sample(shape, dtype, seed=seed, low=lo, high=max(hi, lo + 1))
    return sample(shape, dtype, seed=seed, low=low, high=high)


def _result_dtype(ints: str, dtype: Any, numpy_dtype: Any) -> np.dtype:
    """NumPy's result dtype for float inputs; the row's rule for int64 and bool ones."""
    if np.dtype(dtype).kind == "f":
        return np.dtype(numpy_dtype)
    if np.dtype(dtype).kind == "i" and ints == "int64":  # an integer row: each integer its own
        return np.dtype(dtype)
    return np.dtype(dtype) if ints == "same" else np.dtype(ints)


def _reference(ref: Callable, ints: str, *xs: np.ndarray) -> np.ndarray:
    """NumPy's answer, in float64 for integer inputs of float-only functions."""
    if ints == "float64" and all(x.dtype.kind != "f" for x in xs):
        xs = tuple(x.astype(np.float64) for x in xs)
    with np.errstate(all="ignore"):
        return np.asarray(ref(*xs))


def _compare(got: Any, want: np.ndarray, dtype: np.dtype, device: gd.Device) -> None:
    assert_array(got, want.astype(dtype), dtype=dtype, device=device)


# ---------------------------------------------------------------------------------------------
# against NumPy, every dtype a function takes, every device
# ---------------------------------------------------------------------------------------------


def _unary_cases() -> list:
    return [pytest.param(name, dt, id=f"{name}-{dtid}") for name, row in UNARY.items()
            for dt, dtid in zip(ALL_DTYPES, DTYPE_IDS) if KIND[dt] in row.kinds]


def _binary_cases() -> list:
    return [pytest.param(name, dt, id=f"{name}-{dtid}") for name, row in BINARY.items()
            for dt, dtid in zip(ALL_DTYPES, DTYPE_IDS) if KIND[dt] in row.kinds]


@pytest.mark.parametrize("name, dtype", _unary_cases())
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_unary_against_numpy(device, name, dtype, shape):
    row = UNARY[name]
    x = _data(shape, dtype, row.low, row.high, seed=len(shape))
    want = _reference(row.ref, row.ints, x)
    got = _fn(name)(gd.array(x, device=device))
    _compare(got, want, _result_dtype(row.ints, dtype, want.dtype), device)
    if is_gpu(device):
        assert_array(got, host(_fn(name)(gd.array(x, device=CPU))), device=device)


@pytest.mark.parametrize("name, dtype", _unary_cases())
def test_unary_of_strided_views(device, name, dtype):
    row = UNARY[name]
    x = _data((6, 9), dtype, row.low, row.high, seed=3)
    view = x.T[::2, 1::3]
    want = _reference(row.ref, row.ints, view)
    got = _fn(name)(gd.array(x, device=device).T[::2, 1::3])
    _compare(got, want, _result_dtype(row.ints, dtype, want.dtype), device)


BROADCASTS = [((), ()), ((7,), (7,)), ((3, 1), (1, 4)), ((2, 3, 4), (4,)), ((0, 3), (1, 3)), ((5, 6), ())]


@pytest.mark.parametrize("name, dtype", _binary_cases())
@pytest.mark.parametrize("shapes", BROADCASTS, ids=str)
def test_binary_against_numpy(device, name, dtype, shapes):
    row = BINARY[name]
    x = _data(shapes[0], dtype, row.low, row.high, seed=1)
    y = _data(shapes[1], dtype, row.low, row.high, seed=2)
    want = _reference(row.ref, row.ints, x, y)
    got = _fn(name)(gd.array(x, device=device), gd.array(y, device=device))
    _compare(got, want, _result_dtype(row.ints, dtype, want.dtype), device)
    if is_gpu(device):
        assert_array(got, host(_fn(name)(gd.array(x, device=CPU), gd.array(y, device=CPU))), device=device)


@pytest.mark.parametrize("name", BINARY)
def test_binary_with_a_python_scalar_on_either_side(device, name):
    row = BINARY[name]
    dtype = F64 if "f" in row.kinds else I64
    x = _data((4, 3), dtype, row.low, row.high, seed=5)
    s = 3 if dtype == I64 else 1.5
    a = gd.array(x, device=device)
    with np.errstate(all="ignore"):
        _compare(_fn(name)(a, s), np.asarray(row.ref(x, s)), np.asarray(row.ref(x, s)).dtype, device)
        _compare(_fn(name)(s, a), np.asarray(row.ref(s, x)), np.asarray(row.ref(s, x)).dtype, device)


def test_float32_operands_stay_float32_with_python_floats(device):
    a = gd.array([0.5, -2.0], dtype=gd.float32, device=device)
    for name in ("atan2", "copysign", "logaddexp", "nextafter"):
        assert _fn(name)(a, 1.5).dtype == gd.float32, name


# ---------------------------------------------------------------------------------------------
# special values: NaN, infinities and signed zeros, exactly as NumPy (which follows the
# standard for these), then the standard's own rows where a mistake would be easy to miss
# ---------------------------------------------------------------------------------------------

SPECIAL = [0.0, -0.0, math.inf, -math.inf, math.nan, 1.0, -1.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 3.0,
           1e-30, -1e-30, 1e30, -1e30]


def _assert_same_bits_where_special(got: np.ndarray, want: np.ndarray, what: str) -> None:
    """NaN where NumPy has NaN, the same infinities and the same signed zeros; the rest close."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
    if want.dtype.kind != "f":
        np.testing.assert_array_equal(got, want, err_msg=what)
        return
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=f"{what}: NaN positions")
    special = np.isinf(want) | (want == 0)
    np.testing.assert_array_equal(got[special], want[special], err_msg=f"{what}: infinities and zeros")
    np.testing.assert_array_equal(np.signbit(got[special]), np.signbit(want[special]), err_msg=f"{what}: signs")
    finite = np.isfinite(want) & ~special
    np.testing.assert_allclose(got[finite], want[finite], rtol=rtol_for(want.dtype), err_msg=what)


FLOAT_UNARY = [n for n, r in UNARY.items() if "f" in r.kinds]
FLOAT_BINARY = [n for n, r in BINARY.items() if "f" in r.kinds]


@pytest.mark.parametrize("dtype", [F32, F64], ids=["float32", "float64"])
@pytest.mark.parametrize("name", FLOAT_UNARY)
def test_unary_special_values_as_numpy(device, name, dtype):
    x = np.array(SPECIAL, dtype=dtype)
    want = _reference(UNARY[name].ref, "same", x)
    got = host(_fn(name)(gd.array(x, device=device)))
    _assert_same_bits_where_special(got, want, name)


@pytest.mark.parametrize("dtype", [F32, F64], ids=["float32", "float64"])
@pytest.mark.parametrize("name", FLOAT_BINARY + ["remainder", "floor_divide", "maximum", "minimum"])
def test_binary_special_values_as_numpy(device, name, dtype):
    x, y = (np.array(v, dtype=dtype) for v in zip(*[(p, q) for p in SPECIAL for q in SPECIAL]))
    ref = BINARY[name].ref if name in BINARY else getattr(np, name)
    want = _reference(ref, "same", x, y)
    got = host(_fn(name)(gd.array(x, device=device), gd.array(y, device=device)))
    _assert_same_bits_where_special(got, want, name)


INF, NAN = math.inf, math.nan
# (function, operands, result) from the standard's special cases; -0.0 and NaN's sign matter
STANDARD_CASES = [
    ("sign", (-0.0,), 0.0), ("sign", (0.0,), 0.0), ("sign", (NAN,), NAN), ("sign", (-INF,), -1.0),
    ("signbit", (-0.0,), True), ("signbit", (0.0,), False), ("signbit", (-NAN,), True),
    ("signbit", (NAN,), False), ("signbit", (-INF,), True),
    ("round", (2.5,), 2.0), ("round", (-0.5,), -0.0), ("round", (3.5,), 4.0), ("round", (-INF,), -INF),
    ("ceil", (-0.5,), -0.0), ("floor", (-0.0,), -0.0), ("trunc", (-0.7,), -0.0),
    ("sin", (-0.0,), -0.0), ("tan", (-0.0,), -0.0), ("asinh", (-0.0,), -0.0), ("atanh", (-0.0,), -0.0),
    ("atanh", (1.0,), INF), ("atanh", (-1.0,), -INF), ("atanh", (2.0,), NAN),
    ("acosh", (0.5,), NAN), ("acosh", (1.0,), 0.0), ("acos", (1.0,), 0.0), ("acos", (1.5,), NAN),
    ("log1p", (-1.0,), -INF), ("log1p", (-2.0,), NAN), ("log1p", (-0.0,), -0.0),
    ("expm1", (-INF,), -1.0), ("expm1", (-0.0,), -0.0), ("log2", (0.0,), -INF), ("log10", (-1.0,), NAN),
    ("cosh", (-INF,), INF), ("sinh", (-INF,), -INF), ("tanh", (-0.0,), -0.0),
    ("reciprocal", (-0.0,), -INF), ("reciprocal", (INF,), 0.0),
    ("atan2", (0.0, -0.0), math.pi), ("atan2", (-0.0, -0.0), -math.pi), ("atan2", (-0.0, 1.0), -0.0),
    ("atan2", (INF, -INF), 3 * math.pi / 4), ("atan2", (NAN, 1.0), NAN),
    ("copysign", (NAN, -1.0), -NAN), ("copysign", (2.0, -0.0), -2.0), ("copysign", (-2.0, NAN), 2.0),
    ("nextafter", (-0.0, 0.0), 0.0), ("nextafter", (0.0, -0.0), -0.0), ("nextafter", (1.0, NAN), NAN),
    ("logaddexp", (INF, INF), INF), ("logaddexp", (-INF, -INF), -INF), ("logaddexp", (INF, -INF), INF),
    ("logaddexp", (NAN, INF), NAN), ("logaddexp", (1000.0, 1000.0), 1000.0 + math.log(2.0)),
    ("remainder", (1.0, -INF), -INF), ("remainder", (-0.0, 2.0), 0.0), ("remainder", (INF, 2.0), NAN),
    ("floor_divide", (-0.0, 2.0), -0.0), ("floor_divide", (1.0, 0.0), INF), ("floor_divide", (0.0, 0.0), NAN),
    ("maximum", (NAN, 1.0), NAN), ("minimum", (1.0, NAN), NAN),
]


def _same(got: float, want: float, nan_sign: bool) -> bool:
    """got is want, zeros with their sign; NaNs with their sign only where the standard gives one."""
    if math.isnan(want):
        return math.isnan(got) and (not nan_sign or math.copysign(1, got) == math.copysign(1, want))
    return got == want and math.copysign(1, got) == math.copysign(1, want)


@pytest.mark.parametrize("dtype", [gd.float32, gd.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("name, args, want", STANDARD_CASES, ids=[f"{c[0]}{c[1]}" for c in STANDARD_CASES])
def test_standard_special_cases(device, name, args, want, dtype):
    arrays = [gd.array([a], dtype=dtype, device=device) for a in args]
    got = _fn(name)(*arrays).tolist()[0]
    if isinstance(want, bool):
        assert got is want
    else:
        want = float(np.asarray(want, dtype=dtype))  # rounded to the dtype
        assert _same(got, want, nan_sign=name == "copysign"), f"{name}{args} = {got!r}, the standard says {want!r}"


@pytest.mark.parametrize("name", ["bitwise_left_shift", "bitwise_right_shift"])
def test_shift_counts_past_the_width_and_negative_ones_as_numpy(device, name):
    x = np.array([1, -8, 5, -1, np.iinfo(np.int64).min, np.iinfo(np.int64).max], dtype=np.int64)
    n = np.array([0, 1, 63, 64, 65, -1, 1000], dtype=np.int64)
    xs, ns = np.meshgrid(x, n)
    want = BINARY[name].ref(xs, ns)
    got = _fn(name)(gd.array(xs, device=device), gd.array(ns, device=device))
    assert_array(got, want, device=device)


def test_round_is_half_to_even_and_keeps_integers(device):
    # 0.49999999999999994 + 0.5 rounds up to 1.0: floor(x + 0.5) would give 1
    x = gd.array([0.5, 1.5, 2.5, -0.5, -1.5, 1e300, 0.49999999999999994], dtype=gd.float64, device=device)
    got = gd.round(x).tolist()
    assert got == [0.0, 2.0, 2.0, -0.0, -2.0, 1e300, 0.0] and math.copysign(1, got[3]) == -1
    big = gd.array([2**62 + 1, -3], device=device)
    assert gd.round(big).tolist() == [2**62 + 1, -3]  # int64 stays int64, exactly


# ---------------------------------------------------------------------------------------------
# gradients
# ---------------------------------------------------------------------------------------------


STEPS = ("sign", "ceil", "floor", "trunc", "round")


def _grad_points(name: str, shape: tuple, low: float, high: float) -> np.ndarray:
    """Points inside the domain; for step functions a quarter away from every step."""
    rng = np.random.default_rng(sum(shape))
    if name in STEPS:
        return rng.integers(-5, 5, size=shape) + 0.25
    margin = 0.05 * (high - low)
    return rng.uniform(low + margin, high - margin, shape)


def _away_from_zero(shape: tuple, seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).uniform(-2, 2, shape)
    return np.where(np.abs(x) < 0.3, np.copysign(0.5, x) + x, x)  # copysign's kink, atan2's pole


@pytest.mark.parametrize("name", [n for n, r in UNARY.items() if r.grad])
def test_unary_gradients(device, name):
    row = UNARY[name]
    gradcheck(_fn(name), _grad_points(name, (3, 4), row.low, row.high), device=device)


def test_step_functions_have_zero_gradient(device):
    for name in STEPS:
        x = gd.array([-1.3, 0.2, 2.7], device=device).requires_grad_()
        (_fn(name)(x) * 3.0).sum().backward()
        assert x.grad.tolist() == [0.0, 0.0, 0.0], name


@pytest.mark.parametrize("name", [n for n, r in BINARY.items() if r.grad])
@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1), (1, 3))], ids=str)
def test_binary_gradients(device, name, shapes):
    gradcheck(_fn(name), _away_from_zero(shapes[0], 1), _away_from_zero(shapes[1], 2), device=device)


def test_nextafter_has_no_gradient(device):
    x = gd.array([1.0], device=device).requires_grad_()
    with pytest.raises(RuntimeError, match="nextafter"):
        gd.nextafter(x, 2.0).sum().backward()


# ---------------------------------------------------------------------------------------------
# errors, NumPy's functions on gpudev arrays, methods
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", [n for n, r in UNARY.items() if "b" not in r.kinds])
def test_unary_refuses_bools_as_numpy_does(name):
    with pytest.raises(TypeError, match=name):
        _fn(name)(gd.array([True, False]))


@pytest.mark.parametrize("name", [n for n, r in BINARY.items() if "f" not in r.kinds])
def test_bitwise_functions_refuse_floats(name):
    with pytest.raises(TypeError, match=r"integers and bools only"):
        _fn(name)(gd.array([1.5]), gd.array([2]))


# an alias's messages name the operation it is: bitwise_invert is ~, "invert"
ROW_NAME = {alias: op.name for op in gd._C._ops for alias in op.aliases}


@pytest.mark.parametrize("name", list(UNARY) + list(BINARY))
def test_non_arrays_are_refused_with_the_name(name):
    args = ([1.0],) if name in UNARY else ([1.0], [2.0])
    with pytest.raises(TypeError, match=ROW_NAME.get(name, name)):
        _fn(name)(*args)


@pytest.mark.parametrize("name", list(BINARY))
def test_operands_on_two_devices_are_refused(cuda0, name):
    with pytest.raises(gd.DeviceMismatchError, match="different devices"):
        _fn(name)(gd.array([1], device=cuda0), gd.array([1]))


@pytest.mark.parametrize("name", [n for n, r in BINARY.items() if "f" in r.kinds])
def test_shapes_that_do_not_broadcast_are_refused(name):
    with pytest.raises(ValueError, match=name):
        _fn(name)(gd.ones(3), gd.ones(4))


NUMPY_UFUNCS = {
    "acos": np.arccos, "acosh": np.arccosh, "asin": np.arcsin, "asinh": np.arcsinh, "atan": np.arctan,
    "atanh": np.arctanh, "cos": np.cos, "cosh": np.cosh, "sin": np.sin, "sinh": np.sinh, "tan": np.tan,
    "log1p": np.log1p, "expm1": np.expm1, "log2": np.log2, "log10": np.log10, "ceil": np.ceil,
    "floor": np.floor, "trunc": np.trunc, "sign": np.sign, "signbit": np.signbit, "square": np.square,
    "reciprocal": np.reciprocal, "bitwise_invert": np.invert,
    "atan2": np.arctan2, "copysign": np.copysign, "nextafter": np.nextafter, "logaddexp": np.logaddexp,
    "bitwise_left_shift": np.left_shift, "bitwise_right_shift": np.right_shift,
    "rint": np.rint,
}


@pytest.mark.parametrize("name", list(NUMPY_UFUNCS))
def test_numpy_ufuncs_run_as_gpudev_operations(name):
    uf = NUMPY_UFUNCS[name]
    x = np.array([1, 2, 63]) if "bitwise" in name else np.array([0.25, 0.5, 1.5])
    args = [x] * uf.nin
    got = uf(*[gd.array(a) for a in args])
    assert isinstance(got, gd.Array), f"np.{uf.__name__} gave {type(got).__name__}"
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(host(got), uf(*args), rtol=1e-12)


def test_round_as_a_method_as_numpy_arrays_have_it(device):
    x = gd.array([1.5, -2.5, 0.4], device=device)
    assert x.round().tolist() == [2.0, -2.0, 0.0]
    with pytest.raises(TypeError, match="round"):  # to integers only: NumPy's decimals= is not taken
        x.round(2)


def test_no_copies_between_devices(device):
    x = gd.array([[0.5, -1.0], [2.0, 0.25]], device=device)
    n = gd.array([[1, 2], [3, 4]], device=device)
    with gd.trace() as t:
        for name, row in UNARY.items():
            _fn(name)(n if "f" not in row.kinds else x)
        for name, row in BINARY.items():
            _fn(name)(x, x) if "f" in row.kinds else _fn(name)(n, n)
    kinds = {e.kind for e in t.events}
    assert "copy" not in kinds and "sync" not in kinds, [e for e in t.events if e.kind != "op"]
    assert {e.device for e in t.events} == {str(device)}


def test_operator_spellings_agree_with_the_functions(device):
    n = gd.array([5, -6, 7], device=device)
    for fn, op in ((gd.bitwise_and, operator.and_), (gd.bitwise_or, operator.or_),
                   (gd.bitwise_xor, operator.xor)):
        assert fn(n, 3).tolist() == op(n, 3).tolist()
    assert gd.bitwise_invert(n).tolist() == (~n).tolist()
    assert gd.negative(n).tolist() == (-n).tolist()
