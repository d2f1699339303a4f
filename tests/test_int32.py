"""int32 through the whole stack, against NumPy 2 on every device: creation and conversion,
promotion with every dtype and with Python and NumPy scalars, elementwise wrapping and edge
values, reductions (sums into int64, as NumPy and the array API standard accumulate a smaller
integer), matmul, int32 index arrays, DLPack, save and load, and the errors that name int32.

The dtype lists of conftest.py include int32 as well, so the generic tests of each family
cover it too; this file holds what is particular to it.
"""

from __future__ import annotations

import operator

import numpy as np
import pytest

import gpudev as gd
from conftest import assert_array, check, host, sample

I32 = np.iinfo(np.int32)
EDGES = np.array([I32.min, I32.min + 1, -7, -1, 0, 1, 7, 46341, I32.max], np.int32)


# ---------------------------------------------------------------------------------------------
# the dtype and making arrays
# ---------------------------------------------------------------------------------------------

def test_the_dtype():
    assert gd.int32 is np.int32 and "int32" in gd.__all__
    assert gd.iinfo(gd.int32).min == I32.min and gd.iinfo(gd.int32).bits == 32
    assert np.dtype(gd.int32).itemsize == 4


def test_creation(device):
    a = gd.array([1, -2, 3], dtype=gd.int32, device=device)
    assert a.dtype == gd.int32 and a.tolist() == [1, -2, 3] and a.nbytes == 12
    assert gd.zeros((2, 3), dtype=gd.int32, device=device).tolist() == [[0] * 3] * 2
    assert_array(gd.ones(4, dtype="int32", device=device), np.ones(4, np.int32))
    assert_array(gd.full((2,), -5, dtype=gd.int32, device=device), np.full(2, -5, np.int32))
    assert_array(gd.full((2,), np.int32(9), device=device), np.full(2, 9, np.int32))  # keeps its dtype
    assert_array(gd.arange(-5, 20, 3, dtype=gd.int32, device=device), np.arange(-5, 20, 3, dtype=np.int32))
    assert_array(gd.arange(0.5, 5, 1.5, dtype=gd.int32, device=device), np.arange(0.5, 5, 1.5, dtype=np.int32))
    assert_array(gd.arange(I32.max - 3, I32.max, dtype=gd.int32, device=device),
                 np.arange(I32.max - 3, I32.max, dtype=np.int32))
    assert_array(gd.asarray(EDGES, device=device), EDGES)
    assert_array(gd.zeros_like(gd.asarray(EDGES, device=device)), np.zeros_like(EDGES))


def test_numpy_round_trips():
    a = gd.asarray(EDGES)
    assert a.dtype == gd.int32 and np.shares_memory(a.numpy(), EDGES)  # zero-copy, as for int64
    assert a.numpy().dtype == np.int32 and np.asarray(a).dtype == np.int32
    assert gd.array(np.int32(-7)).dtype == gd.int32 and gd.array(np.int32(-7)).item() == -7
    assert isinstance(a[0].item(), int) and a[0].item() == I32.min and a.tolist() == EDGES.tolist()
    assert "int32" in repr(gd.asarray(np.array([1, 2], np.int32)))
    assert memoryview(a).format == "i" and memoryview(a).itemsize == 4


def test_astype(device):
    f = np.array([-2.7, -0.5, 0.5, 2.7, 3e9, -3e9, np.nan, np.inf], np.float64)
    x = gd.asarray(f, device=device)
    with np.errstate(invalid="ignore"):
        want = f.astype(np.int32)
    assert_array(x.astype(gd.int32), want)
    big = np.array([2**31, -(2**31) - 1, 2**40 + 5, -1], np.int64)
    assert_array(gd.asarray(big, device=device).astype(gd.int32), big.astype(np.int32))  # low 32 bits
    e = gd.asarray(EDGES, device=device)
    for dt in (gd.float32, gd.float64, gd.int64, gd.bool):
        assert_array(e.astype(dt), EDGES.astype(dt))
    assert_array(gd.asarray([True, False], device=device).astype(gd.int32), np.array([1, 0], np.int32))


def test_array_from_python_numbers_that_do_not_fit():
    with pytest.raises(OverflowError, match=r"array: a number in the input does not fit in int32 .*gd\.int64"):
        gd.array([1, 2**31], dtype=gd.int32)
    with pytest.raises(OverflowError, match=r"does not fit in int32"):
        gd.array([1.0, 3e9], dtype=gd.int32)
    assert gd.array([1.9, -1.9], dtype=gd.int32).tolist() == np.array([1.9, -1.9], dtype=np.int32).tolist()
    with pytest.raises(OverflowError, match=r"full: fill_value 2147483648 does not fit in int32"):
        gd.full(2, 2**31, dtype=gd.int32)
    with pytest.raises(OverflowError, match=r"arange: .* do not fit in int32; use dtype=gd.int64"):
        gd.arange(2**31 - 2, 2**31 + 2, dtype=gd.int32)


# ---------------------------------------------------------------------------------------------
# promotion (NumPy 2)
# ---------------------------------------------------------------------------------------------

OTHERS = [np.float32, np.float64, np.int64, np.int32, np.bool_]


@pytest.mark.parametrize("other", OTHERS, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("op", [operator.add, operator.mul, operator.sub, operator.truediv, operator.lt,
                                operator.floordiv], ids=lambda f: f.__name__)
def test_promotion_with_arrays(device, other, op):
    a = sample((3, 4), np.int32, seed=1, low=1, high=9)
    b = sample((3, 4), other, seed=2, low=1, high=9) if other is not np.bool_ else np.ones((3, 4), bool)
    if op is operator.sub and other is np.bool_:
        b = b.astype(np.int32)
    check(op, a, b, device=device)
    check(op, b, a, device=device)


@pytest.mark.parametrize("scalar", [3, -2, 2.5, True, np.int32(-4), np.int64(3), np.int16(2), np.uint16(9),
                                    np.uint32(11), np.float32(1.5), np.float64(-2.25), np.bool_(True)],
                         ids=lambda s: f"{type(s).__name__}({s})")
def test_promotion_with_scalars(device, scalar):
    a = sample((2, 3), np.int32, low=1, high=9)
    for op in (operator.add, operator.mul, operator.truediv, operator.lt):
        check(lambda x: op(x, scalar), a, device=device)
        check(lambda x: op(scalar, x), a, device=device)


def test_result_type_matches_the_operations(device):
    x = gd.ones(2, dtype=gd.int32, device=device)
    for other in (gd.float32, gd.float64, gd.int64, gd.bool):
        y = gd.ones(2, dtype=other, device=device)
        assert (x + y).dtype == gd.result_type(gd.int32, other) == np.result_type(np.int32, other)
    assert (x + 1).dtype == gd.int32 and (x + 1.5).dtype == gd.float64 and (x + True).dtype == gd.int32
    assert gd.matmul(gd.ones((2, 2), dtype=gd.int32), gd.ones((2, 2), dtype=gd.int64)).dtype == gd.int64


# ---------------------------------------------------------------------------------------------
# elementwise: wrapping and edge values against NumPy
# ---------------------------------------------------------------------------------------------

def _pairs():
    a = np.repeat(EDGES, EDGES.size)
    b = np.tile(EDGES, EDGES.size)
    return a, b


@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "floor_divide", "remainder", "maximum",
                                  "minimum", "bitwise_and", "bitwise_or", "bitwise_xor", "equal", "less",
                                  "greater_equal"])
def test_binary_edges(device, name):
    a, b = _pairs()
    check(getattr(gd, name), a, b, device=device, ref=getattr(np, name))


def test_shifts_and_powers(device):
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
def test_unary_edges(device, name):
    np_name = {"abs": "absolute", "round": "rint"}.get(name, name)
    ref = np.round if name == "round" else getattr(np, np_name)
    check(getattr(gd, name), EDGES, device=device, ref=ref)


@pytest.mark.parametrize("name", ["exp", "sqrt", "sin", "log1p", "tanh", "sigmoid"])
def test_float_functions_compute_in_float64(device, name):
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


def test_where_and_clip(device):
    a = sample((4, 5), np.int32)
    check(lambda x: gd.where(x > 0, x, -1), a, device=device, ref=lambda x: np.where(x > 0, x, -1).astype(np.int32))
    check(lambda x: gd.clip(x, -3, 4), a, device=device, ref=lambda x: np.clip(x, -3, 4))
    with pytest.raises(OverflowError, match="where: Python integer 4294967296 out of bounds for int32"):
        gd.where(gd.asarray(a, device=device) > 0, gd.asarray(a, device=device), 2**32)
    # bounds past the dtype's range clip nothing on their side, as NumPy's clip
    check(lambda x: gd.clip(x, -(2**40), 2**40), a, device=device, ref=lambda x: np.clip(x, -(2**40), 2**40))
    check(lambda x: gd.clip(x, 0, 2**70), a, device=device, ref=lambda x: np.clip(x, 0, 2**62))


def test_python_ints_past_int32_in_searchsorted_setitem_and_arange(device):
    x = gd.asarray(np.array([1, 2, 3], np.int32), device=device)
    assert gd.searchsorted(x, 2**40).item() == np.searchsorted(np.array([1, 2, 3], np.int32), 2**40) == 3
    for v in (np.int64(2**40 + 3), np.uint32(2**32 - 1), 2**31):  # NumPy's setitem raises for each
        with pytest.raises(OverflowError, match=r"setitem: Python integer \d+ out of bounds for int32"):
            x[0] = v
    x[1] = np.int64(-7)
    assert x.tolist() == [1, -7, 3]
    # (n - 1) * step is 2**63 here: past int64 itself, so past int32 too
    with pytest.raises(OverflowError, match=r"arange: 2147483649 values .* do not fit in int32"):
        gd.arange(-(2**31), 2**63 - 1, 2**32, dtype=gd.int32, device=device)


# ---------------------------------------------------------------------------------------------
# reductions and matmul
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("axis", [None, 0, 1, (0, 2)], ids=str)
def test_reductions(device, axis):
    a = np.full((3, 70, 5), I32.max, np.int32)
    a[1] = sample((70, 5), np.int32, low=-1000, high=1000)
    x = gd.asarray(a, device=device)
    assert_array(x.sum(axis=axis), a.sum(axis=axis))  # int64: no wrap past int32
    assert_array(gd.sum(x, axis=axis), np.sum(a, axis=axis))
    assert_array(x.max(axis=axis), a.max(axis=axis))
    assert_array(x.min(axis=axis), a.min(axis=axis))
    assert_array(x.mean(axis=axis), a.mean(axis=axis))
    assert_array(gd.prod(x % 3, axis=axis), np.prod(a % 3, axis=axis))
    if axis is None or isinstance(axis, int):
        assert_array(gd.argmax(x, axis=axis), np.argmax(a, axis=axis))
        assert_array(gd.argmin(x, axis=axis), np.argmin(a, axis=axis))


def test_reduction_dtypes(device):
    x = gd.asarray(EDGES, device=device)
    assert x.sum().dtype == gd.int64 and x.sum().item() == int(EDGES.astype(np.int64).sum())
    assert x.max().dtype == gd.int32 and x.max().item() == I32.max
    assert x.mean().dtype == gd.float64 and gd.norm(x).dtype == gd.float64
    assert gd.cumulative_sum(x).dtype == gd.int64
    assert_array(gd.cumulative_sum(x), np.cumsum(EDGES))
    assert gd.count_nonzero(x).item() == np.count_nonzero(EDGES)
    assert_array(x.sum(axis=0, keepdims=True), EDGES.sum(axis=0, keepdims=True))
    assert_array(gd.zeros((0, 3), dtype=gd.int32, device=device).sum(axis=0), np.zeros((0, 3), np.int32).sum(axis=0))


@pytest.mark.parametrize("shape_a, shape_b", [((3, 4), (4, 5)), ((2, 3, 4), (4, 1)), ((5,), (5,)), ((2, 0), (0, 3))],
                         ids=str)
def test_matmul(device, shape_a, shape_b):
    a = sample(shape_a, np.int32, seed=1, low=-50000, high=50000)
    b = sample(shape_b, np.int32, seed=2, low=-50000, high=50000)
    check(operator.matmul, a, b, device=device)  # products past int32 wrap, as NumPy's
    check(lambda x, y: x @ y.T.T, a, b, device=device)
    check(operator.matmul, a, b.astype(np.int64), device=device)
    check(operator.matmul, a.astype(np.float32), b, device=device, rtol=1e-5)


# ---------------------------------------------------------------------------------------------
# indexing
# ---------------------------------------------------------------------------------------------

def test_int32_index_arrays(device):
    src = sample((6, 6), np.float32)
    x = gd.asarray(src, device=device)
    idx = np.array([5, 0, -1, 2, 2], np.int32)
    for i in (idx, gd.asarray(idx, device=device), gd.asarray(idx)):
        assert_array(x[i], src[idx])
        assert_array(x[:, i[:3] if isinstance(i, np.ndarray) else i[:3]], src[:, idx[:3]])
    assert_array(gd.take(x, gd.asarray(idx, device=device), axis=0), np.take(src, idx, axis=0))
    y = gd.zeros((6, 6), device=device)
    y[gd.asarray(idx[:3], device=device)] = 1.0
    want = np.zeros((6, 6), np.float32)
    want[idx[:3]] = 1.0
    assert_array(y, want)
    with pytest.raises(IndexError):
        x[gd.asarray(np.array([6], np.int32), device=device)]
    assert_array(gd.repeat(x[:, 0], gd.asarray(np.array([1, 0, 2, 1, 0, 3], np.int32), device=device)),
                 np.repeat(src[:, 0], np.array([1, 0, 2, 1, 0, 3])))


def test_int32_data_indexed(device):
    a = sample((5, 4), np.int32)
    x = gd.array(a, device=device)
    assert_array(x[x > 0], a[a > 0])
    assert_array(x[[4, 0]], a[[4, 0]])
    assert_array(x[1:, ::2].T, a[1:, ::2].T)
    x[x < 0] = -1
    a[a < 0] = -1
    assert_array(x, a)
    assert_array(gd.sort(x, axis=1), np.sort(a, axis=1))
    assert_array(gd.unique_values(x), np.unique(a))
    assert_array(gd.nonzero(x)[0], np.nonzero(a)[0])
    assert int(gd.asarray(np.int32(3))) == 3 and [10, 20, 30, 40][gd.asarray(np.int32(2))] == 30


# ---------------------------------------------------------------------------------------------
# interchange and files
# ---------------------------------------------------------------------------------------------

def test_dlpack_and_save_load(device, tmp_path):
    x = gd.asarray(EDGES, device=device)
    if device.type == "cpu":
        back = np.from_dlpack(x)
        assert back.dtype == np.int32 and back.tolist() == EDGES.tolist()
        y = gd.from_dlpack(EDGES)
        assert y.dtype == gd.int32 and np.shares_memory(y.numpy(), EDGES)
    gd.save(x, tmp_path / "x.npy")
    assert np.load(tmp_path / "x.npy").dtype == np.int32
    z = gd.load(tmp_path / "x.npy", device=device)
    assert_array(z, EDGES, device=device)


def test_autograd_ignores_int32(device):
    x = gd.asarray(np.array([1.0, 2.0], np.float32), device=device).requires_grad_()
    y = (x.astype(gd.int32) * 2).astype(gd.float32) + x
    y.sum().backward()
    assert_array(x.grad, np.ones(2, np.float32))
    with pytest.raises((TypeError, ValueError, RuntimeError)):
        gd.ones(2, dtype=gd.int32, device=device).requires_grad_()


def test_host_values_agree_with_cpu(device):
    a = gd.asarray(EDGES, device=device)
    assert host(a * a).tolist() == (EDGES * EDGES).tolist()
