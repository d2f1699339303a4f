"""Arithmetic, broadcasting, dtype promotion, elementwise functions and allclose, each against
NumPy (and on GPUs against the CPU backend). Reductions: test_reduce.py; matmul:
test_matmul.py; stack and concatenate: test_shape_ops.py."""

from __future__ import annotations

import math
import operator

import numpy as np
import pytest

import gpudev as gd
from conftest import CPU, DTYPE_IDS, DTYPES, FLOAT_DTYPES, I32, INT32_EDGES, assert_array, check, host, is_gpu, sample

BINARY_OPS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "truediv": operator.truediv}

BROADCAST_PAIRS = [
    ((), ()),
    ((7,), (7,)),
    ((1,), (7,)),
    ((3, 1), (1, 4)),
    ((2, 3, 4), (4,)),
    ((2, 3, 4), (3, 1)),
    ((5, 1, 7), (1, 6, 1)),
    ((), (2, 3)),
    ((0,), (1,)),
    ((0, 3), (1, 3)),
    ((2, 0, 3), (2, 1, 1)),
    ((72, 73, 74), (73, 1)),
    ((72, 73, 74), (72, 73, 74)),
    ((1, 1, 1, 1, 5), (4, 1, 3, 1, 1)),
]
PAIR_IDS = [f"{a}-{b}" for a, b in BROADCAST_PAIRS]


def _operands(shape_a, shape_b, dtype_a, dtype_b):
    a = sample(shape_a, dtype_a, seed=1)
    b = sample(shape_b, dtype_b, seed=2, low=1, high=10)  # nonzero: division stays finite
    return a, b


# ---------------------------------------------------------------------------------------------
# binary arithmetic and broadcasting
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("op", BINARY_OPS.values(), ids=BINARY_OPS.keys())
@pytest.mark.parametrize("shapes", BROADCAST_PAIRS, ids=PAIR_IDS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_binary_broadcasting(device, op, shapes, dtype):
    a, b = _operands(*shapes, dtype, dtype)
    check(op, a, b, device=device)
    check(op, b, a, device=device)


@pytest.mark.parametrize("op", BINARY_OPS.values(), ids=BINARY_OPS.keys())
@pytest.mark.parametrize("dtype_a", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("dtype_b", DTYPES, ids=DTYPE_IDS)
def test_binary_promotion(device, op, dtype_a, dtype_b):
    a, b = _operands((4, 3), (3,), dtype_a, dtype_b)
    expected = op(a, b)
    got = check(op, a, b, device=device)
    assert got.dtype == expected.dtype


PROMOTIONS = [
    (gd.float32, gd.float64, gd.float64),
    (gd.float32, gd.int64, gd.float64),
    (gd.float64, gd.int64, gd.float64),
    (gd.int64, gd.int64, gd.int64),
]


@pytest.mark.parametrize("dtype_a, dtype_b, result", PROMOTIONS, ids=str)
def test_promotion_table(dtype_a, dtype_b, result):
    a, b = gd.ones(2, dtype=dtype_a), gd.ones(2, dtype=dtype_b)
    assert (a + b).dtype == result
    assert (b * a).dtype == result
    assert (gd.arange(3) / gd.arange(1, 4)).dtype == np.float64  # int64 / int64 -> float64


@pytest.mark.parametrize("op", BINARY_OPS.values(), ids=BINARY_OPS.keys())
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("scalar", [3, 2.5, -1, 0.1], ids=str)
def test_python_scalars_adapt_to_the_array(device, op, dtype, scalar):
    a = sample((5, 3), dtype, seed=6, low=1, high=9)
    got = check(lambda x: op(x, scalar), a, device=device)
    got_reflected = check(lambda x: op(scalar, x), a, device=device)
    # NumPy 2: an int scalar keeps the array's dtype; a float scalar keeps float dtypes and
    # makes int64 float64; true division of ints is float64
    assert got.dtype == op(a, scalar).dtype
    assert got_reflected.dtype == op(scalar, a).dtype


def test_python_scalar_dtype_rules():
    f32, i64 = gd.ones(2), gd.ones(2, dtype=gd.int64)
    assert (f32 + 1).dtype == np.float32
    assert (f32 * 2.5).dtype == np.float32
    assert (i64 + 1).dtype == np.int64
    assert (i64 + 1.5).dtype == np.float64
    assert (i64 / 2).dtype == np.float64
    assert (2 - i64).dtype == np.int64


def test_numpy_scalars_are_not_weak():
    a = gd.ones(2)
    assert (a * np.float32(2)).dtype == np.float32
    assert (a * np.float64(2)).dtype == np.float64  # NumPy 2: NumPy scalars keep their dtype
    r = np.float64(2.0) * a  # NumPy's scalar must defer to the Array, not convert it
    assert isinstance(r, type(a)) and r.dtype == np.float64
    assert_array(r, np.full(2, 2.0))


def test_division_by_zero_follows_ieee(device):
    a = np.array([1.0, -1.0, 0.0, 2.0], np.float32)
    b = np.array([0.0, 0.0, 0.0, 4.0], np.float32)
    check(operator.truediv, a, b, device=device)
    i = np.array([1, -1, 0, 6])
    j = np.array([0, 0, 0, 4])
    check(operator.truediv, i, j, device=device)  # int64 / int64 -> float64 inf, -inf, nan, 1.5


def test_nan_and_inf_propagate(device):
    a = np.array([np.nan, np.inf, -np.inf, 1.0, np.inf])
    b = np.array([1.0, 1.0, np.inf, np.nan, np.inf])
    for op in BINARY_OPS.values():
        check(op, a, b, device=device)


def test_int64_arithmetic_is_exact(device):
    a = np.array([2**40 + 1, -(2**40) - 3, 2**62, 7])
    b = np.array([3, 5, 1, -7])
    for op in (operator.add, operator.sub, operator.mul):
        check(op, a, b, device=device)


# ---------------------------------------------------------------------------------------------
# powers, unary operators
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("exponent", [0, 1, 2, 3, 0.5, -1, 2.5, -0.5], ids=str)
def test_float_power(device, dtype, exponent):
    a = sample((7, 5), dtype, seed=9, low=0.1, high=4)
    check(lambda x: x**exponent, a, device=device)


@pytest.mark.parametrize("exponent", [0, 1, 2, 3, 7], ids=str)
def test_int_power_is_exact(device, exponent):
    a = np.arange(-5, 6)
    got = check(lambda x: x**exponent, a, device=device)
    assert got.dtype == np.int64


def test_reflected_power(device):
    check(lambda x: 2.0**x, sample((9,), np.float32, seed=1, low=-3, high=3), device=device)
    check(lambda x: 2**x, np.arange(10.0), device=device)
    got = check(lambda x: 2.5**x, np.arange(10), device=device)  # float base, int exponents
    assert got.dtype == np.float64


def test_int_power_with_float_exponent_is_float64(device):
    got = check(lambda x: x**0.5, np.arange(10), device=device)
    assert got.dtype == np.float64


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_unary_minus_and_abs(device, dtype):
    a = sample((72, 73, 74), dtype, seed=12)
    check(operator.neg, a, device=device)
    check(abs, a, device=device)
    check(gd.abs, a, device=device, ref=np.abs)


# ---------------------------------------------------------------------------------------------
# in-place operators
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "iop, op",
    [(operator.iadd, operator.add), (operator.isub, operator.sub), (operator.imul, operator.mul)],
    ids=["iadd", "isub", "imul"],
)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("other_shape", [(), (3,), (4, 1), (4, 3)], ids=str)
def test_inplace_returns_the_same_object(device, iop, op, dtype, other_shape):
    a_np = sample((4, 3), dtype, seed=13)
    b_np = sample(other_shape, dtype, seed=14)
    a = gd.array(a_np, device=device)
    b = gd.array(b_np, device=device)
    result = iop(a, b)
    assert result is a
    assert_array(a, op(a_np, b_np))
    assert_array(b, b_np)  # the operand is untouched


def test_inplace_scalars_and_division(device):
    a = gd.ones((2, 3), device=device)
    ident = id(a)
    a += 2
    a *= 1.5
    a -= 0.5
    a /= 2
    a **= 2
    assert id(a) == ident
    assert_array(a, np.full((2, 3), ((3 * 1.5 - 0.5) / 2) ** 2, np.float32))


def test_inplace_keeps_the_dtype(device):
    a = gd.ones(3, dtype=gd.float32, device=device)
    a += gd.full(3, 0.5, dtype=gd.float64, device=device)  # float64 -> float32: same kind
    assert a.dtype == np.float32
    assert_array(a, np.full(3, 1.5, np.float32))
    b = gd.ones(3, dtype=gd.float64, device=device)
    b *= gd.arange(3, device=device)
    assert_array(b, np.arange(3.0))


def test_inplace_on_a_view_changes_the_base(device):
    a = gd.zeros((3, 4), device=device)
    v = a[1:3]
    v += gd.arange(4.0, device=device)
    expected = np.zeros((3, 4), np.float32)
    expected[1:3] += np.arange(4.0, dtype=np.float32)
    assert_array(a, expected)


def test_inplace_with_itself_as_operand(device):
    a = gd.arange(5.0, device=device)
    a += a
    a *= a
    assert_array(a, (2 * np.arange(5.0, dtype=np.float32)) ** 2)


# ---------------------------------------------------------------------------------------------
# elementwise functions
# ---------------------------------------------------------------------------------------------

UNARY_FUNCS = [
    (gd.exp, np.exp, (-20, 20)),
    (gd.log, np.log, (1e-3, 1e3)),
    (gd.sqrt, np.sqrt, (0, 1e4)),
    (gd.tanh, np.tanh, (-5, 5)),
    (gd.abs, np.abs, (-5, 5)),
]


@pytest.mark.parametrize("fn, ref, domain", UNARY_FUNCS, ids=[f[1].__name__ for f in UNARY_FUNCS])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("shape", [(), (1,), (7,), (0,), (72, 73, 74)], ids=str)
def test_unary_functions(device, fn, ref, domain, dtype, shape):
    a = sample(shape, dtype, seed=15, low=domain[0], high=domain[1])
    check(fn, a, device=device, ref=ref)


@pytest.mark.parametrize("fn, ref", [(gd.exp, np.exp), (gd.log, np.log), (gd.sqrt, np.sqrt), (gd.tanh, np.tanh)],
                         ids=["exp", "log", "sqrt", "tanh"])
def test_unary_functions_of_ints_are_float64(device, fn, ref):
    got = check(fn, np.arange(1, 20), device=device, ref=ref)
    assert got.dtype == np.float64


def test_unary_functions_edge_values(device):
    # overflow to inf, zeros, negative inputs (nan), infinities and nan must come out as in
    # NumPy: no fast-math shortcuts that lose them
    x = np.array([0.0, -0.0, -1.0, np.inf, -np.inf, np.nan, 88.8, -87.0, 1e-30], np.float32)
    for fn, ref in [(gd.exp, np.exp), (gd.log, np.log), (gd.sqrt, np.sqrt), (gd.tanh, np.tanh)]:
        check(fn, x, device=device, ref=ref)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_relu(device, dtype):
    a = sample((7, 72), dtype, seed=16)
    got = check(gd.relu, a, device=device, ref=lambda x: np.maximum(x, 0).astype(x.dtype))
    assert got.dtype == dtype


@pytest.mark.parametrize("fn, ref", [(gd.maximum, np.maximum), (gd.minimum, np.minimum)], ids=["maximum", "minimum"])
@pytest.mark.parametrize("shapes", BROADCAST_PAIRS[:8], ids=PAIR_IDS[:8])
@pytest.mark.parametrize("dtypes", [(gd.float32, gd.float32), (gd.int64, gd.int64), (gd.float32, gd.float64),
                                    (gd.int64, gd.float32)], ids=str)
def test_maximum_minimum(device, fn, ref, shapes, dtypes):
    a = sample(shapes[0], dtypes[0], seed=17)
    b = sample(shapes[1], dtypes[1], seed=18)
    check(fn, a, b, device=device, ref=ref)


def test_maximum_minimum_propagate_nan_and_take_scalars(device):
    a = np.array([np.nan, 1.0, 2.0, -np.inf])
    b = np.array([0.0, np.nan, 3.0, 5.0])
    check(gd.maximum, a, b, device=device, ref=np.maximum)
    check(gd.minimum, a, b, device=device, ref=np.minimum)
    check(lambda x: gd.maximum(x, 0.5), a, device=device, ref=lambda x: np.maximum(x, 0.5))
    check(lambda x: gd.minimum(2, x), np.arange(5), device=device, ref=lambda x: np.minimum(2, x))


# ---------------------------------------------------------------------------------------------
# allclose
# ---------------------------------------------------------------------------------------------


def test_allclose(device):
    a = gd.array([1.0, 2.0, 3.0], dtype=gd.float64, device=device)
    assert gd.allclose(a, a) is True
    assert gd.allclose(a, a + 1e-9) is True
    assert gd.allclose(a, a + 1e-3) is False
    assert gd.allclose(a, a + 1e-3, rtol=1e-3) is True  # |a - b| <= atol + rtol * |b|
    assert gd.allclose(a, a + 1e-3, atol=1e-3) is True
    assert gd.allclose(a, a + 2e-3, atol=1e-3) is False
    assert gd.allclose(a, gd.array([1.0], dtype=gd.float64, device=device)) is False
    assert gd.allclose(gd.ones((2, 3), device=device), gd.ones(3, device=device)) is True  # broadcasts


def test_allclose_matches_numpy_on_edge_values(device):
    a = np.array([np.nan, np.inf, 1.0, 0.0])
    b = np.array([np.nan, np.inf, 1.0, 1e-9])
    for x, y in [(a, b), (a[1:], b[1:]), (a[:1], b[:1]), (a[1:2], -a[1:2]), (a[3:], b[3:])]:
        got = gd.allclose(gd.array(x, device=device), gd.array(y, device=device))
        assert got is bool(np.allclose(x, y)), (x, y)


def test_allclose_is_asymmetric_like_numpy(device):
    # |a - b| <= atol + rtol * |b|: b's magnitude sets the tolerance
    a = gd.array([0.0], device=device)
    b = gd.array([1e-8 + 2e-5], dtype=gd.float64, device=device)
    assert gd.allclose(a, b, rtol=1.0, atol=0.0) is True
    assert gd.allclose(b, a, rtol=1.0, atol=0.0) is False


def test_allclose_across_dtypes(device):
    assert gd.allclose(gd.arange(3, device=device), gd.array([0.0, 1.0, 2.0], device=device)) is True


# ---------------------------------------------------------------------------------------------
# results do not depend on the device
# ---------------------------------------------------------------------------------------------


@pytest.mark.gpu
def test_chain_of_operations_matches_the_cpu(cuda0):
    x = sample((64, 32), np.float32, seed=50, low=-1, high=1)
    w = sample((32, 16), np.float32, seed=51, low=-1, high=1)

    def model(a, b):
        h = gd.relu(a @ b + 0.5)
        return gd.tanh(h * 2).sum(axis=0) / gd.norm(h)

    on_gpu = model(gd.array(x, device=cuda0), gd.array(w, device=cuda0))
    on_cpu = model(gd.array(x), gd.array(w))
    assert on_gpu.device == cuda0 and on_cpu.device == CPU
    assert_array(on_gpu, host(on_cpu), rtol=1e-5, atol=1e-6)
    assert is_gpu(on_gpu.device)


# ---------------------------------------------------------------------------------------------
# int32: promotion (NumPy 2), wrapping and edge values against NumPy
# ---------------------------------------------------------------------------------------------

INT32_OTHERS = [np.float32, np.float64, np.int64, np.int32, np.bool_]


@pytest.mark.parametrize("other", INT32_OTHERS, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("op", [operator.add, operator.mul, operator.sub, operator.truediv, operator.lt,
                                operator.floordiv], ids=lambda f: f.__name__)
def test_int32_promotion_with_arrays(device, other, op):
    a = sample((3, 4), np.int32, seed=1, low=1, high=9)
    b = sample((3, 4), other, seed=2, low=1, high=9) if other is not np.bool_ else np.ones((3, 4), bool)
    if op is operator.sub and other is np.bool_:
        b = b.astype(np.int32)
    check(op, a, b, device=device)
    check(op, b, a, device=device)


@pytest.mark.parametrize("scalar", [3, -2, 2.5, True, np.int32(-4), np.int64(3), np.int16(2), np.uint16(9),
                                    np.uint32(11), np.float32(1.5), np.float64(-2.25), np.bool_(True)],
                         ids=lambda s: f"{type(s).__name__}({s})")
def test_int32_promotion_with_scalars(device, scalar):
    a = sample((2, 3), np.int32, low=1, high=9)
    for op in (operator.add, operator.mul, operator.truediv, operator.lt):
        check(lambda x: op(x, scalar), a, device=device)
        check(lambda x: op(scalar, x), a, device=device)


def test_int32_result_type_matches_the_operations(device):
    x = gd.ones(2, dtype=gd.int32, device=device)
    for other in (gd.float32, gd.float64, gd.int64, gd.bool):
        y = gd.ones(2, dtype=other, device=device)
        assert (x + y).dtype == gd.result_type(gd.int32, other) == np.result_type(np.int32, other)
    assert (x + 1).dtype == gd.int32 and (x + 1.5).dtype == gd.float64 and (x + True).dtype == gd.int32
    assert gd.matmul(gd.ones((2, 2), dtype=gd.int32), gd.ones((2, 2), dtype=gd.int64)).dtype == gd.int64


def _int32_pairs():
    a = np.repeat(INT32_EDGES, INT32_EDGES.size)
    b = np.tile(INT32_EDGES, INT32_EDGES.size)
    return a, b


@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "floor_divide", "remainder", "maximum",
                                  "minimum", "bitwise_and", "bitwise_or", "bitwise_xor", "equal", "less",
                                  "greater_equal"])
def test_int32_binary_edges(device, name):
    a, b = _int32_pairs()
    check(getattr(gd, name), a, b, device=device, ref=getattr(np, name))


def test_int32_shifts_and_powers(device):
    a = np.array([1, -1, 5, I32.min, I32.max, -5, 3, 7], np.int32)
    n = np.array([31, 32, 33, 0, 1, 40, -1, 100], np.int32)
    check(gd.bitwise_left_shift, a, n, device=device, ref=np.left_shift)
    check(gd.bitwise_right_shift, a, n, device=device, ref=np.right_shift)
    e = np.array([20, 31, 0, 2, 1, 3, 30, 5], np.int32)
    check(operator.pow, a, e, device=device)
    check(lambda x: x ** 3, a, device=device)
    with pytest.raises(ValueError, match="power: .*negative integer powers"):
        gd.asarray(a, device=device) ** gd.asarray(-e - 1, device=device)


@pytest.mark.parametrize("name", ["negative", "abs", "square", "invert", "sign", "ceil", "floor", "trunc", "round"])
def test_int32_unary_edges(device, name):
    np_name = {"abs": "absolute", "round": "rint"}.get(name, name)
    ref = np.round if name == "round" else getattr(np, np_name)
    check(getattr(gd, name), INT32_EDGES, device=device, ref=ref)


@pytest.mark.parametrize("name", ["exp", "sqrt", "sin", "log1p", "tanh", "sigmoid"])
def test_int32_float_functions_compute_in_float64(device, name):
    x = np.array([0, 1, 2, 7, 30], np.int32)
    got = getattr(gd, name)(gd.asarray(x, device=device))
    assert got.dtype == gd.float64
    if name != "sigmoid":
        assert_array(got, getattr(np, name)(x))


def test_inplace_keeps_int32(device):
    a = sample((3, 3), np.int32)
    x = gd.array(a, device=device)  # a copy: asarray would share a's memory on the CPU
    x += 2**31 - 1
    x *= gd.asarray(np.full((3, 3), 3, np.int64), device=device)  # same_kind: int64 result cast back
    with np.errstate(over="ignore"):
        want = (a + np.int32(2**31 - 1)) * np.int64(3)
    assert_array(x, want.astype(np.int32))
    with pytest.raises(TypeError, match="cannot cast the float64 result to int32 in place"):
        x += 0.5


def test_int32_host_values_agree_with_cpu(device):
    a = gd.asarray(INT32_EDGES, device=device)
    assert host(a * a).tolist() == (INT32_EDGES * INT32_EDGES).tolist()


# ---------------------------------------------------------------------------------------------
# Python scalars of another kind than the array
# ---------------------------------------------------------------------------------------------

SORTED = {"int64": np.array([1, 2, 9]), "int32": np.array([1, 2, 9], np.int32),
          "bool": np.array([False, True]), "float32": np.array([1.0, 16777216.0], np.float32),
          "float64": np.array([1.0, 2.5, 9.0])}
VALUES = [2.5, -0.5, 2, True, 16777217.0, 1e300, math.nan, math.inf, -2**63, [2.5, 1.5], [[0.5], [2.0]]]


@pytest.mark.parametrize("kind", sorted(SORTED))
def test_searchsorted_compares_python_numbers_as_numpy(device, kind):
    x1 = SORTED[kind]
    for value in VALUES:
        for side in ("left", "right"):
            got = gd.searchsorted(gd.asarray(x1, device=device), value, side=side)
            np.testing.assert_array_equal(host(got), np.searchsorted(x1, value, side=side),
                                          err_msg=f"{kind} {value!r} {side}")
    assert gd.searchsorted(gd.asarray([1, 2, 9], device=device), 2.5).item() == 2


def test_diff_takes_a_scalar_prepend_and_append_as_numpy(device):
    for x, kw in [(np.arange(3), {"prepend": 0.5}), (np.arange(6).reshape(2, 3), {"append": 7, "axis": 0}),
                  (np.arange(3, dtype=np.int32), {"prepend": 7}), (np.array([True, False]), {"prepend": 2}),
                  (np.arange(3.0, dtype=np.float32), {"prepend": 0.1, "append": np.array(2.0)})]:
        got = gd.diff(gd.asarray(x, device=device), **kw)
        want = np.diff(x, **kw)
        assert got.dtype == want.dtype, kw
        np.testing.assert_array_equal(host(got), want)


def _setitem(lib, a, s):
    a[1] = s
    return a


def _fill(lib, a, s):
    if lib is np:
        a.fill(s)
        return a
    return a.fill_(s)


SCALAR_FUNCTIONS = {
    "clip lo": lambda lib, a, s: lib.clip(a, s, None), "clip hi": lambda lib, a, s: lib.clip(a, None, s),
    "where": lambda lib, a, s: lib.where(a > 1, a, s), "full_like": lambda lib, a, s: lib.full_like(a, s),
    "maximum": lambda lib, a, s: lib.maximum(a, s), "minimum": lambda lib, a, s: lib.minimum(s, a),
    "less": lambda lib, a, s: a < s, "equal": lambda lib, a, s: a == s, "add": lambda lib, a, s: a + s,
    "setitem": _setitem, "fill": _fill,
}


@pytest.mark.parametrize("name", sorted(SCALAR_FUNCTIONS))
def test_functions_taking_a_scalar_give_numpys_answer_for_other_kinds(device, name):
    fn = SCALAR_FUNCTIONS[name]
    for x in (np.array([1, 2, 9]), np.array([False, True, True]), np.array([1, 2, 9], np.int32)):
        for s in (2.5, -0.5, True, 2, 16777217.0):
            want = fn(np, x.copy(), s)
            got = fn(gd, gd.asarray(x, device=device), s)
            assert got.dtype == want.dtype, (name, x.dtype, s)
            np.testing.assert_array_equal(host(got), want, err_msg=f"{name} {x.dtype} {s!r}")


def test_clip_to_an_int_bound_the_dtype_cannot_hold_raises_as_numpy(device):
    x = np.array([0, 5], np.int32)
    for low, high in [(2**40, None), (None, -2**40), (2**63, None)]:
        with pytest.raises(OverflowError):
            np.clip(x, low, high)
        with pytest.raises(OverflowError, match=r"^clip: Python integer -?\d+ out of bounds for int32"):
            gd.clip(gd.asarray(x, device=device), low, high)
    # past the range on the side that clips nothing, the bound changes nothing (NumPy's answer)
    for low, high in [(-2**40, None), (None, 2**40), (-2**70, 2**70)]:
        np.testing.assert_array_equal(host(gd.clip(gd.asarray(x, device=device), low, high)), np.clip(x, -2**31, 2**31 - 1))
