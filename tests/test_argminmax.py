"""argmax and argmin (gd.argmax, gd.argmin and the methods) against NumPy: every dtype, every
axis (negative too) with and without keepdims, views, ties, NaN anywhere and everywhere, long
rows split over threads or GPU blocks, errors, and their place outside autograd. Each test
runs on every device (the GPU variants skip without a GPU)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import host

import gpudev as gd

DTYPES = [np.bool_, np.int64, np.int32, np.float32, np.float64]
DTYPE_IDS = ["bool", "int64", "int32", "float32", "float64"]
OPS = ["argmax", "argmin"]


def data(shape, dtype, seed=0) -> np.ndarray:
    """Few distinct values, so rows hold ties."""
    v = np.random.default_rng(seed).integers(-3, 4, size=shape)
    return (v > 0 if np.dtype(dtype) == np.bool_ else v * (1.5 if np.dtype(dtype).kind == "f" else 1)).astype(dtype)


def same(got, want, device=None) -> None:
    want = np.asarray(want)
    assert isinstance(got, gd.Array), type(got)
    assert got.dtype == np.int64 and got.shape == want.shape, (got.dtype, got.shape, want.shape)
    if device is not None:
        assert got.device == device
    np.testing.assert_array_equal(host(got), want)


def both(device, op, a: np.ndarray, **kw) -> None:
    """The function and the method on a gpudev copy of a agree with NumPy's."""
    want = getattr(np, op)(a, **kw)
    g = gd.array(a, device=device)
    same(getattr(gd, op)(g, **kw), want, device)
    same(getattr(g, op)(**kw), want, device)


# ---------------------------------------------------------------------------------------------
# axes, keepdims, dtypes
# ---------------------------------------------------------------------------------------------

SHAPES = [(7,), (3, 4), (2, 3, 5), (1, 6, 1), (4, 1, 3, 2), ()]


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("op", OPS)
def test_every_axis_and_keepdims(device, op, shape, dtype):
    a = data(shape, dtype, seed=len(shape))
    for keepdims in (False, True):
        both(device, op, a, keepdims=keepdims)
        for axis in range(-len(shape), len(shape)):
            both(device, op, a, axis=axis, keepdims=keepdims)


@pytest.mark.parametrize("op", OPS)
def test_flat_index_is_a_0d_array(device, op):
    a = gd.array(data((3, 4), np.float64, 1), device=device)
    r = getattr(a, op)()
    assert r.shape == () and r.dtype == np.int64
    assert r.item() == getattr(np, op)(host(a))


@pytest.mark.parametrize("op", OPS)
def test_views_follow_the_views_order(device, op):
    base = data((6, 8), np.float32, 3)
    g = gd.array(base, device=device)
    for view in (lambda x: x.T, lambda x: x[::-1, ::2], lambda x: x[1:, ::-3], lambda x: x[:, 5]):
        for axis in (None, 0, -1):
            if axis is not None and view(base).ndim == 1 and axis != 0 and axis != -1:
                continue
            want = getattr(np, op)(view(base), axis=axis)
            same(getattr(view(g), op)(axis=axis), want, device)


# ---------------------------------------------------------------------------------------------
# ties and NaN
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("op", OPS)
def test_ties_give_the_first_occurrence(device, op):
    a = np.array([[2.0, 5.0, 5.0, -1.0, -1.0], [0.0, 0.0, 0.0, 0.0, 0.0], [-0.0, 0.0, -0.0, 3.0, 3.0]])
    for axis in (None, 0, 1):
        both(device, op, a, axis=axis)
    both(device, op, np.array([True, False, True, False]))
    both(device, op, np.array([7, 7, 7], dtype=np.int64))


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("op", OPS)
def test_nan_counts_as_the_extreme(device, op, dtype):
    nan, inf = np.nan, np.inf
    rows = [[nan, 1.0, 2.0], [1.0, nan, 2.0], [1.0, 2.0, nan], [nan, nan, 1.0], [1.0, nan, nan],
            [nan, nan, nan], [inf, -inf, nan], [-inf, inf, 0.0]]
    a = np.array(rows, dtype=dtype)
    for axis in (None, 0, 1):
        both(device, op, a, axis=axis)
    both(device, op, np.full((4, 3), nan, dtype=dtype), axis=0)  # all-NaN


# Row lengths around the CPU's vector widths (4 to 32 lanes, two chains, a scalar tail) and
# the GPU's warps: one row per position of the extreme.
EDGE_LENGTHS = [*range(1, 35), 63, 64, 65, 127, 128, 129]


def extreme_at_each_position(n, dtype, op, nan=False) -> np.ndarray:
    """Row p holds the extreme at p and ties of it 2, 4 and 8 places later (in another lane,
    and in the same lane of the other chain, of float64's and float32's vectors); with nan,
    row p holds a NaN at p instead, after an extreme at p - 1 (a NaN beats it)."""
    a = data((n, n), dtype, seed=n)
    if np.dtype(dtype) == np.bool_:
        a[:] = op == "argmin"
        np.fill_diagonal(a, op == "argmax")
        return a
    big = 9 if op == "argmax" else -9
    p = np.arange(n)
    a[p, p] = big
    for d in (2, 4, 8):
        a[p[:-d], p[:-d] + d] = big
    if nan:
        a[p[1:], p[1:] - 1] = big
        a[p, p] = np.nan
    return a


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("op", OPS)
def test_the_extreme_anywhere_in_rows_of_every_short_length(device, op, dtype):
    for n in EDGE_LENGTHS:
        for nan in (False, True) if np.dtype(dtype).kind == "f" else (False,):
            a = extreme_at_each_position(n, dtype, op, nan)
            both(device, op, a, axis=1)
            both(device, op, np.ascontiguousarray(a.T), axis=0)  # the same as columns
            both(device, op, a[n // 2])


# ---------------------------------------------------------------------------------------------
# long rows and wide blocks: split over threads (CPU) or blocks (GPU), merged in order
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("op", OPS)
def test_long_rows_split_into_pieces_keep_the_first_extreme(device, op):
    n = 300_001  # several pieces of a split row, the last one short
    a = np.zeros(n)
    extreme = 5.0 if op == "argmax" else -5.0
    for where in ([n - 1], [200_000, 250_000], [40_000, 40_001, 299_999], [0, 150_000]):
        b = a.copy()
        b[where] = extreme
        both(device, op, b)
        b[where[-1]] = np.nan  # a NaN beats every extreme, wherever it is
        both(device, op, b)
    two = np.zeros((2, n // 2), dtype=np.float32)
    two[0, 123_456], two[1, 7] = extreme, extreme
    both(device, op, two, axis=1)


@pytest.mark.parametrize("op", OPS)
def test_long_columns_split_into_chunks_keep_the_first_extreme(device, op):
    n = 200_003  # few long columns: each cut into chunks of rows, merged in order
    extreme = 5.0 if op == "argmax" else -5.0
    a = np.zeros((n, 2))
    a[150_000:, 0] = extreme  # a tie in every chunk from there on: the first one wins
    a[n - 1, 1] = extreme
    both(device, op, a, axis=0)
    a[[90_000, 180_000], 0] = np.nan  # NaNs tie across chunks and beat the extreme before them
    a[[7, 199_999], 1] = np.nan
    both(device, op, a, axis=0)
    b = data((2, n, 3), np.int64, 8)
    b[1, 123_456:, 2] = 9 if op == "argmax" else -9
    both(device, op, b, axis=1)
    both(device, op, b.astype(np.bool_), axis=1)


@pytest.mark.parametrize("op", OPS)
def test_many_columns_in_tiles(device, op):
    a = data((9, 3, 700), np.int64, 5)  # inner 700: three tiles of columns per outer index
    a[4, 1, 650] = 99 if op == "argmax" else -99
    for axis in (0, 1):
        both(device, op, a, axis=axis)
    f = data((50, 1000), np.float32, 6)
    f[[3, 30], [999, 2]] = np.nan
    both(device, op, f, axis=0)


def test_large_arrays_agree_with_the_cpu(device):
    if device.type != "cuda":
        pytest.skip("compares a GPU with the CPU")
    a = data((64, 4097), np.float32, 7)
    for op in OPS:
        for axis in (None, 0, 1):
            got = getattr(gd.array(a, device=device), op)(axis=axis)
            np.testing.assert_array_equal(host(got), host(getattr(gd.array(a), op)(axis=axis)))


# ---------------------------------------------------------------------------------------------
# empty arrays and errors
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("op", OPS)
def test_empty_axes_are_refused_with_numpys_words(device, op):
    msg = f"{op}: attempt to get {op} of an empty sequence"
    with pytest.raises(ValueError, match=msg):
        getattr(gd, op)(gd.zeros(0, device=device))
    with pytest.raises(ValueError, match=msg):
        getattr(gd.zeros((0, 3), device=device), op)(axis=0)
    with pytest.raises(ValueError, match=msg):
        getattr(gd.zeros((2, 0), device=device), op)()
    both(device, op, np.zeros((0, 3)), axis=1)  # nothing to reduce into: an empty result


@pytest.mark.parametrize("op", OPS)
def test_axis_errors_match_sums(device, op):
    a = gd.ones((2, 3), device=device)
    with pytest.raises(np.exceptions.AxisError) as sum_err:
        a.sum(axis=2)
    with pytest.raises(np.exceptions.AxisError) as arg_err:
        getattr(a, op)(axis=2)
    assert str(arg_err.value) == str(sum_err.value).replace("sum", op)
    with pytest.raises(np.exceptions.AxisError, match="out of bounds"):
        getattr(gd, op)(a, axis=-3)
    with pytest.raises(TypeError, match=f"{op}: axis must be an int, got tuple"):
        getattr(a, op)(axis=(0, 1))
    with pytest.raises(TypeError, match=f"{op}: expected a gpudev Array, got list"):
        getattr(gd, op)([1, 2])
    with pytest.raises(TypeError, match=rf"{op}\(a, axis=None, keepdims=False\)"):
        getattr(gd, op)()
    with pytest.raises(TypeError, match="got an unexpected keyword argument 'out'"):
        getattr(a, op)(out=None)


# ---------------------------------------------------------------------------------------------
# autograd, NumPy's protocols, tracing
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("op", OPS)
def test_arrays_that_require_grad_give_plain_int64_results(device, op):
    x = gd.array([[1.0, 3.0], [4.0, 2.0]], device=device).requires_grad_()
    r = getattr(x, op)(axis=1)
    assert r.dtype == np.int64 and not r.requires_grad and r.grad_fn is None
    loss = (x * 2.0).sum()
    loss.backward()  # the graph holds no argmax node
    np.testing.assert_array_equal(host(x.grad), np.full((2, 2), 2.0))


def test_numpy_argmax_and_argmin_on_cpu_arrays_are_gpudevs():
    a = gd.array([[1.0, 9.0, 3.0], [7.0, 0.0, 7.0]])
    same(np.argmax(a, axis=1), np.array([1, 0]))
    same(np.argmin(a), np.array(4))
    same(np.argmax(a, axis=0, keepdims=True), np.array([[1, 0, 1]]))


def test_numpy_argmax_on_gpu_arrays_runs_in_gpudev_where_it_lives(cuda0):
    got = np.argmax(gd.array([1.0, 3.0, 2.0], device=cuda0))  # gpudev's argmax: nothing copied
    assert isinstance(got, gd.Array) and got.device == cuda0 and got.item() == 1
    with pytest.raises(TypeError, match=r"numpy.argmax: NumPy cannot compute on a gpudev array on cuda:0"):
        np.argmax(gd.ones(3, device=cuda0), out=np.zeros((), np.int64))  # NumPy's out: NumPy's


def test_trace_records_argmax(device):
    a = gd.ones((2, 3), device=device)
    with gd.trace() as t:
        a.argmax(axis=0)
        gd.argmin(a)
    assert t.count(kind="op", name="argmax") == 1 and t.count(kind="op", name="argmin") == 1
