"""sigmoid, floor division and remainder (// % divmod), integer powers with array exponents, and
clip/clamp, each against NumPy on every device (GPU variants also against the CPU backend):
every dtype pair, broadcasting, strided views, in-place forms, Python scalars on either side
and the special values (signed zeros, infinities, NaN, zero divisors, INT64_MIN)."""

from __future__ import annotations

import operator

import numpy as np
import pytest

import gpudev as gd
from conftest import CPU, assert_array, check, host, sample

ALL_DTYPES = [np.float32, np.float64, np.int64, np.int32, np.bool_]
ALL_IDS = ["float32", "float64", "int64", "int32", "bool"]
I64_MIN, I64_MAX = np.iinfo(np.int64).min, np.iinfo(np.int64).max

FLOOR_OPS = {
    "//": operator.floordiv,
    "%": operator.mod,
    "floor_divide": (gd.floor_divide, np.floor_divide),
    "remainder": (gd.remainder, np.remainder),
    "mod": (gd.mod, np.mod),
}


def _pair(name):
    f = FLOOR_OPS[name]
    return f if isinstance(f, tuple) else (f, f)


def _data(shape, dtype, seed, nonzero=False):
    if np.dtype(dtype) == np.bool_:
        x = sample(shape, np.int64, seed=seed, low=0, high=2).astype(np.bool_)
        return x | nonzero
    x = sample(shape, dtype, seed=seed, low=-20, high=20)
    if nonzero:
        x = np.where(x == 0, 3, x).astype(dtype)
    return x


def _numpy(ref):
    """NumPy's ref with int8 results (arithmetic on two bools) widened to gpudev's int64."""
    def call(*args):
        with np.errstate(all="ignore"):
            out = np.asarray(ref(*args))
        return out.astype(np.int64) if out.dtype == np.int8 else out
    return call


def _bits_equal(got, expected):
    """Values, NaNs and the signs of zeros all as NumPy's."""
    values = host(got)
    assert values.dtype == expected.dtype, f"dtype {values.dtype} != {expected.dtype}"
    np.testing.assert_array_equal(values, expected)
    if expected.dtype.kind == "f":
        np.testing.assert_array_equal(np.signbit(values), np.signbit(expected))


# ---------------------------------------------------------------------------------------------
# floor division and remainder
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(FLOOR_OPS))
@pytest.mark.parametrize("dtype_b", ALL_DTYPES, ids=ALL_IDS)
@pytest.mark.parametrize("dtype_a", ALL_DTYPES, ids=ALL_IDS)
def test_floor_ops_every_dtype_pair(device, name, dtype_a, dtype_b):
    ours, ref = _pair(name)
    a, b = _data((4, 5), dtype_a, 1), _data((5,), dtype_b, 2, nonzero=True)
    got = check(ours, a, b, device=device, ref=_numpy(ref), rtol=0)
    _bits_equal(got, _numpy(ref)(a, b))  # bool // bool: int64 (NumPy's int8; gpudev has no int8)


SHAPES = [((), ()), ((7,), (1,)), ((3, 1), (1, 4)), ((2, 3, 4), (3, 1)), ((0, 3), (1, 3)), ((130, 70), (70,))]


@pytest.mark.parametrize("shapes", SHAPES, ids=str)
@pytest.mark.parametrize("op", [operator.floordiv, operator.mod], ids=["//", "%"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64], ids=["float32", "float64", "int64"])
def test_floor_ops_broadcast(device, op, dtype, shapes):
    a, b = _data(shapes[0], dtype, 3), _data(shapes[1], dtype, 4, nonzero=True)
    check(op, a, b, device=device, rtol=0)
    check(op, b, a, device=device, rtol=0)  # zeros in a are divisors now


@pytest.mark.parametrize("op", [operator.floordiv, operator.mod, divmod], ids=["//", "%", "divmod"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64], ids=["float32", "float64", "int64"])
def test_floor_ops_on_strided_views(device, op, dtype):
    a, b = _data((6, 8), dtype, 5), _data((8, 6), dtype, 6, nonzero=True)
    views = {
        "negative steps": (lambda x, y: op(x[::-1, ::-2], y.T[::-1, 1::2])),
        "transposed": (lambda x, y: op(x.T, y)),
        "column": (lambda x, y: op(x[:, 3], y[::-1, 0][:6])),
    }
    for f in views.values():
        with np.errstate(all="ignore"):
            want = f(a, b)
        got = f(gd.array(a, device=device), gd.array(b, device=device))
        for g, w in zip(got, want) if op is divmod else [(got, want)]:
            _bits_equal(g, w)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64], ids=["float32", "float64", "int64"])
def test_floor_ops_with_python_scalars_on_either_side(device, dtype):
    a = _data((3, 4), dtype, 7, nonzero=True)
    for s in (3, -3, 2.5, -0.75, 0, True):
        for f in (lambda x: x // s, lambda x: x % s, lambda x: s // x, lambda x: s % x):
            with np.errstate(all="ignore"):
                want = f(a)
            got = f(gd.array(a, device=device))
            _bits_equal(got, want)  # weak scalars: float32 stays float32, 2.5 makes int64 float64


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_float_special_values_follow_numpy_bit_for_bit(device, dtype):
    vals = np.array([0.0, -0.0, 1.0, -1.0, 5.5, -5.5, 1e30, np.inf, -np.inf, np.nan, 3.0, -3.0], dtype)
    a, b = np.meshgrid(vals, vals, indexing="ij")
    ga, gb = gd.array(a, device=device), gd.array(b, device=device)
    with np.errstate(all="ignore"):
        _bits_equal(ga // gb, np.floor_divide(a, b))
        _bits_equal(ga % gb, np.remainder(a, b))
        q, r = divmod(ga, gb)
        nq, nr = np.divmod(a, b)
    _bits_equal(q, nq)
    _bits_equal(r, nr)


def test_int64_edge_cases_follow_numpy_without_trapping(device):
    vals = np.array([I64_MIN, I64_MIN + 1, -7, -3, -1, 0, 1, 3, 7, I64_MAX - 1, I64_MAX], np.int64)
    a, b = np.meshgrid(vals, vals, indexing="ij")
    ga, gb = gd.array(a, device=device), gd.array(b, device=device)
    with np.errstate(all="ignore"):
        _bits_equal(ga // gb, a // b)
        _bits_equal(ga % gb, a % b)
    x = gd.array([I64_MIN, 5, -5], device=device)
    assert (x // -1).tolist() == [I64_MIN, -5, 5]  # wraps as NumPy's, never SIGFPE
    assert (x % -1).tolist() == [0, 0, 0]
    assert (x // 0).tolist() == [0, 0, 0] and (x % 0).tolist() == [0, 0, 0]  # no warning either


def test_floor_ops_in_place(device):
    a = _data((3, 4), np.int64, 8)
    b = _data((4,), np.int64, 9, nonzero=True)
    x = gd.array(a, device=device)
    alias = x
    x //= gd.array(b, device=device)
    assert x is alias
    _bits_equal(x, a // b)
    x %= 3
    _bits_equal(x, (a // b) % 3)
    f = gd.array(a.astype(np.float32), device=device)
    f %= 2.5  # a weak float scalar keeps float32
    _bits_equal(f, a.astype(np.float32) % np.float32(2.5))
    f //= gd.array(b, device=device).astype(gd.float64)  # computed in float64, cast back
    with np.errstate(all="ignore"):
        _bits_equal(f, (np.remainder(a.astype(np.float32), np.float32(2.5)) // b).astype(np.float32))
    v = gd.array(a, device=device)
    v[:, ::2] //= 2  # through a view
    expected = a.copy()
    expected[:, ::2] //= 2
    _bits_equal(v, expected)
    with pytest.raises(TypeError, match=r"floor_divide: cannot cast the float64 result to int64 in place.*"
                                        r"a = a // b"):
        x //= 1.5
    with pytest.raises(ValueError, match=r"remainder: the result has shape \(2, 3, 4\).*write a = a % b"):
        x %= gd.ones((2, 3, 4), dtype=gd.int64, device=device)


def test_divmod_and_reflected_forms(device):
    a = gd.array([7, -7, 8], device=device)
    q, r = divmod(a, 3)
    assert q.tolist() == [2, -3, 2] and r.tolist() == [1, 2, 2]
    q, r = divmod(20, a)
    assert q.tolist() == [2, -3, 2] and r.tolist() == [6, -1, 4]
    assert (20 // a).tolist() == [2, -3, 2] and (20 % a).tolist() == [6, -1, 4]
    assert (gd.array([True, False], device=device) // True).dtype == gd.int64


def test_numpy_ufuncs_dispatch_to_gpudev():
    a = gd.array([7.5, -7.5])
    for uf, want in ((np.floor_divide, [3.0, -4.0]), (np.remainder, [1.5, 0.5]), (np.mod, [1.5, 0.5])):
        got = uf(a, 2)
        assert isinstance(got, gd.Array) and got.tolist() == want
        got = uf(15.0, gd.array([4.0]))
        assert isinstance(got, gd.Array)
    assert np.divmod(a, 2)[0].tolist() == [3.0, -4.0]  # not mapped: NumPy on a view


def test_floor_op_errors():
    with pytest.raises(TypeError, match=r"floor_divide\(a, b\) takes two arguments"):
        gd.floor_divide(gd.ones(2))
    with pytest.raises(TypeError, match=r"remainder: expected a gpudev Array, got int"):
        gd.remainder(3, 2)
    with pytest.raises(TypeError, match=r"unsupported operand type\(s\) for //"):
        gd.ones(2) // "x"
    with pytest.raises(TypeError, match=r"floor_divide: unsupported operand types gpudev.Array and str"):
        gd.floor_divide(gd.ones(2), "x")
    with pytest.raises(OverflowError, match=r"remainder: Python integer 9223372036854775808 out of bounds"):
        gd.arange(3) % 2 ** 63
    with pytest.raises(ValueError, match=r"floor_divide: shapes \(3,\) and \(4,\) cannot be broadcast together"):
        gd.ones(3) // gd.ones(4)


def test_floor_ops_refuse_mixed_devices(cuda0):
    with pytest.raises(gd.DeviceMismatchError, match="floor_divide"):
        gd.ones(2) // gd.ones(2, device=cuda0)


# ---------------------------------------------------------------------------------------------
# sigmoid
# ---------------------------------------------------------------------------------------------


def _np_sigmoid(x):
    x = np.asarray(x)
    out_dtype = x.dtype if x.dtype.kind == "f" else np.float64
    with np.errstate(all="ignore"):
        xd = x.astype(np.float64)
        y = np.where(xd >= 0, 1 / (1 + np.exp(-xd)), np.exp(xd) / (1 + np.exp(xd)))
    return y.astype(out_dtype)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=ALL_IDS)
def test_sigmoid_every_dtype(device, dtype):
    x = _data((5, 7), dtype, 10)
    for f in (gd.sigmoid, lambda a: a.sigmoid()):
        got = check(f, x, device=device, ref=_np_sigmoid, rtol=2e-6 if dtype == np.float32 else 1e-14)
        assert got.dtype == (np.dtype(dtype) if np.dtype(dtype).kind == "f" else np.float64)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_sigmoid_special_values_never_overflow(device, dtype):
    x = np.array([-1e4, 1e4, -np.inf, np.inf, 0.0, -0.0, np.nan, -80.0, 80.0, -745.0, 40.0], dtype)
    with np.errstate(all="raise"):  # nothing to warn about in the reference either
        got = gd.sigmoid(gd.array(x, device=device))
    values = host(got)
    assert values.dtype == dtype
    assert values[:6].tolist() == [0.0, 1.0, 0.0, 1.0, 0.5, 0.5]
    assert np.isnan(values[6])
    # sigmoid(-745) is float64's smallest subnormal, where one ulp is all of it: a GPU's exp may
    # round it to 0 or to twice that, which no relative tolerance allows
    np.testing.assert_allclose(values, _np_sigmoid(x), rtol=2e-6 if dtype == np.float32 else 1e-14, atol=1e-300)


def test_sigmoid_on_strided_views(device):
    x = sample((9, 8), np.float32, seed=11)
    g = gd.array(x, device=device)
    for view in (lambda a: a[::-2, ::3], lambda a: a.T, lambda a: a[:, 5]):
        np.testing.assert_allclose(host(gd.sigmoid(view(g))), _np_sigmoid(view(x)), rtol=2e-6)
        np.testing.assert_allclose(host(view(g).sigmoid()), _np_sigmoid(view(x)), rtol=2e-6)


def test_sigmoid_errors():
    with pytest.raises(TypeError, match=r"sigmoid: expected a gpudev Array, got list"):
        gd.sigmoid([1.0])


# ---------------------------------------------------------------------------------------------
# integer powers with array exponents
# ---------------------------------------------------------------------------------------------

NEG_POWER = r"power: Integers to negative integer powers are not allowed\. \(the exponents include -2\)"


@pytest.mark.parametrize("dtype_b", ALL_DTYPES, ids=ALL_IDS)
@pytest.mark.parametrize("dtype_a", ALL_DTYPES, ids=ALL_IDS)
def test_power_every_dtype_pair(device, dtype_a, dtype_b):
    a = _data((4, 5), dtype_a, 12) if dtype_a != np.int64 else sample((4, 5), np.int64, seed=12, low=-9, high=9)
    b = (sample((5,), np.int64, seed=13, low=0, high=40) if dtype_b == np.int64
         else _data((5,), dtype_b, 13) if dtype_b == np.bool_ else np.abs(_data((5,), dtype_b, 13)) / 4)
    for f, ref in ((operator.pow, operator.pow), (gd.power, np.power), (gd.pow, np.power)):
        check(f, a, b, device=device, ref=_numpy(ref), rtol=1e-5 if np.float32 in (dtype_a, dtype_b) else 1e-12)


def test_int_power_wraps_and_squares_like_numpy(device):
    base = np.array([3, -3, 2, -2, 7, I64_MIN, I64_MAX, 0, 1, -1, 0], np.int64)
    exp = np.array([50, 41, 63, 63, 100, 2, 3, 0, 1000, 1001, 5], np.int64)
    _bits_equal(gd.array(base, device=device) ** gd.array(exp, device=device), base ** exp)
    _bits_equal(2 ** gd.array(exp[:4], device=device), 2 ** exp[:4])  # a Python int base
    x = np.arange(12, dtype=np.int64).reshape(3, 4)
    e = np.arange(8, dtype=np.int64).reshape(2, 4)
    _bits_equal(gd.array(x, device=device)[::-1, ::2] ** gd.array(e, device=device).T[:0:-1],
                x[::-1, ::2] ** e.T[:0:-1])  # strided views, negative steps


def test_negative_integer_exponent_arrays_are_refused_before_writing(device):
    a = gd.array([2, 3, 4], device=device)
    b = gd.array([1, -2, 0], device=device)
    with pytest.raises(ValueError, match=NEG_POWER):
        a ** b
    with pytest.raises(ValueError, match=NEG_POWER):
        gd.power(5, b)
    with pytest.raises(ValueError, match=NEG_POWER):
        a **= b
    assert a.tolist() == [2, 3, 4]  # untouched
    with pytest.raises(ValueError, match=NEG_POWER):
        gd.array([True], device=device) ** b  # bool base: computed in int64
    assert (a ** b.astype(gd.float64)).tolist() == [2.0, 1 / 9, 1.0]  # float exponents work
    assert (gd.ones(0, dtype=gd.int64, device=device) ** gd.array([-1], device=device)).shape == (0,)
    with pytest.raises(ValueError, match="integers to negative integer powers are not allowed"):
        a ** -1  # a Python exponent: its own message, checked without a reduction


def test_int_power_in_place(device):
    a = gd.array([[2, 3], [4, 5]], device=device)
    a **= gd.array([3, 2], device=device)
    assert a.tolist() == [[8, 9], [64, 25]]
    a[:, 0] **= gd.array([2, 0], device=device)
    assert a.tolist() == [[64, 9], [1, 25]]


# ---------------------------------------------------------------------------------------------
# clip and clamp
# ---------------------------------------------------------------------------------------------

BOUNDS = [(1, 3), (-2.5, 2.5), (None, 0), (0.5, None), (4, 1), (True, None)]


@pytest.mark.parametrize("bounds", BOUNDS, ids=str)
@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=ALL_IDS)
def test_clip_scalar_bounds_follow_numpy(device, dtype, bounds):
    lo, hi = bounds
    x = _data((3, 5), dtype, 14)
    if dtype == np.bool_ and isinstance(lo, float):
        return
    want = np.clip(x, lo, hi)
    for f in (lambda a: gd.clip(a, lo, hi), lambda a: a.clip(lo, hi), lambda a: gd.clamp(a, min=lo, max=hi),
              lambda a: a.clamp(lo, hi), lambda a: a.clip(min=lo, max=hi)):
        got = check(f, x, device=device, ref=lambda a: np.clip(a, lo, hi), rtol=0)
        assert got.dtype == want.dtype


@pytest.mark.parametrize("dtype_b", ALL_DTYPES[:3], ids=ALL_IDS[:3])
@pytest.mark.parametrize("dtype_a", ALL_DTYPES[:3], ids=ALL_IDS[:3])
def test_clip_array_bounds_broadcast_and_promote(device, dtype_a, dtype_b):
    x = _data((4, 1, 5), dtype_a, 15)
    lo = _data((3, 1), dtype_b, 16) - 5
    hi = _data((5,), dtype_b, 17) + 5
    got = check(lambda a, l, h: gd.clip(a, l, h), x, lo, hi, device=device,
                ref=lambda a, l, h: np.clip(a, l, h), rtol=0)
    assert got.shape == (4, 3, 5)
    check(lambda a, l: a.clamp(min=l), x[:, :, ::-2], lo, device=device, ref=lambda a, l: np.maximum(a, l), rtol=0)


def test_clip_nan_and_views(device):
    x = np.array([np.nan, -np.inf, 1.0, np.inf, -0.0], np.float32)
    _bits_equal(gd.clip(gd.array(x, device=device), -1.0, 2.0), np.clip(x, np.float32(-1), np.float32(2)))
    _bits_equal(gd.clip(gd.array(x, device=device)[::-1], np.nan, None), np.maximum(x[::-1], np.nan))
    y = gd.array(x, device=device)
    assert gd.clip(y, 0.0, 1.0) is not y  # a new array, as NumPy's


def test_clip_errors(device):
    a = gd.ones(3, device=device)
    for f in (lambda: gd.clamp(a), lambda: a.clamp(None, None)):
        with pytest.raises(ValueError, match=r"clamp: one of the bounds must be given, got None for both"):
            f()
    for f in (lambda: gd.clip(a, None, None), lambda: a.clip()):  # NumPy 2: a copy
        c = f()
        assert c is not a and c.tolist() == [1.0, 1.0, 1.0]
        c += 1
        assert a.tolist() == [1.0, 1.0, 1.0]
    with pytest.raises(TypeError, match=r"clip: expected a gpudev Array, got list"):
        gd.clip([1.0], 0, 1)
    with pytest.raises(ValueError, match=r"maximum: shapes \(3,\) and \(2,\) cannot be broadcast together"):
        gd.clip(a, gd.zeros(2, device=device), None)
    with pytest.raises(TypeError, match="maximum"):
        gd.clip(a, "low", None)


def test_clip_gradient_flows_through_maximum_and_minimum(device):
    x = gd.array([-2.0, 0.5, 3.0], device=device).requires_grad_()
    gd.clip(x, 0.0, 1.0).sum().backward()
    assert x.grad.tolist() == [0.0, 1.0, 0.0]


def test_results_on_a_gpu_match_the_cpu(cuda0):
    device = cuda0
    a = sample((50, 40), np.float64, seed=18)
    b = sample((40,), np.float64, seed=19, low=-3, high=3)
    for f in (lambda x, y: x // y, lambda x, y: x % y, lambda x, y: gd.sigmoid(x) + y,
              lambda x, y: gd.clip(x, -1.0, y)):
        assert_array(f(gd.array(a, device=device), gd.array(b, device=device)),
                     host(f(gd.array(a, device=CPU), gd.array(b, device=CPU))), rtol=1e-14)
