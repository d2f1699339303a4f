"""Reductions (sum, mean, max, min, norm) against NumPy on every device: axes, keepdims,
dtypes of the results, accumulation, empty arrays and NaN."""

from __future__ import annotations

import numpy as np
import pytest

import gpudev as gd
from conftest import DTYPE_IDS, DTYPES, FLOAT_DTYPES, I32, INT32_EDGES, assert_array, check, host, rtol_for, sample


# ---------------------------------------------------------------------------------------------
# reductions
# ---------------------------------------------------------------------------------------------

REDUCE_CASES = [
    ((), None),
    ((1,), None),
    ((7,), 0),
    ((7,), -1),
    ((3, 4), None),
    ((3, 4), 0),
    ((3, 4), 1),
    ((2, 3, 4), (0, 2)),
    ((2, 3, 4), (2, 0)),
    ((2, 3, 4), (0, 1, 2)),
    ((2, 3, 4), ()),
    ((72, 73, 74), 1),
    ((72, 73, 74), (0, 1)),
    ((72, 73, 74), None),
    ((5, 1, 6), 1),
]


def _reduce_tolerance(x: np.ndarray, kind: str) -> float:
    """Absolute tolerance for a sum or mean of x summed in another order: a few ulps of
    sum(|x|) (a float32 result is one float32 rounding of the float64 sum). Exact otherwise."""
    if x.dtype.kind == "i" or kind not in ("sum", "mean"):
        return 0.0
    eps = 4e-7 if x.dtype == np.float32 else 1e-13
    return eps * float(np.abs(x.astype(np.float64)).sum() or 1.0) / (x.size if kind == "mean" else 1)


@pytest.mark.parametrize("kind", ["sum", "mean", "max", "min"])
@pytest.mark.parametrize("shape, axis", REDUCE_CASES, ids=[f"{s}-{a}" for s, a in REDUCE_CASES])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("keepdims", [False, True], ids=["", "keepdims"])
def test_reductions(device, kind, shape, axis, dtype, keepdims):
    x = sample(shape, dtype, seed=19)
    # float32 sums accumulate in float64: compare with float64 sums rounded to float32
    ref64 = getattr(x.astype(np.float64) if x.dtype == np.float32 else x, kind)(axis=axis, keepdims=keepdims)
    expected = np.asarray(ref64).astype(getattr(x, kind)(axis=axis, keepdims=keepdims).dtype)
    got = check(lambda a: getattr(a, kind)(axis=axis, keepdims=keepdims), x, device=device,
                ref=lambda _: expected, rtol=rtol_for(expected.dtype), atol=_reduce_tolerance(x, kind))
    assert got.dtype == expected.dtype


def test_reduction_dtypes_follow_numpy():
    i = gd.arange(6).reshape(2, 3)
    f = gd.ones((2, 3))
    assert i.sum().dtype == np.int64
    assert i.mean().dtype == np.float64
    assert i.max(axis=0).dtype == np.int64
    assert f.sum().dtype == np.float32
    assert f.mean(axis=1).dtype == np.float32
    assert i.sum().shape == ()
    assert i.sum().item() == 15
    assert i.mean().item() == 2.5


def test_float32_sum_accumulates_in_double(device):
    rng = np.random.default_rng(20)
    x = (rng.standard_normal(1 << 21) + 1).astype(np.float32)  # 2M values: a float32 loop drifts
    exact = x.astype(np.float64).sum()
    a = gd.array(x, device=device)
    total = a.sum().item()
    mean = a.mean().item()
    assert abs(total - exact) <= 1e-7 * abs(exact)  # only the final rounding to float32
    assert abs(mean - exact / x.size) <= 1e-7 * abs(exact / x.size)
    rows = a.reshape(1 << 11, 1 << 10).sum(axis=1)
    expected_rows = x.astype(np.float64).reshape(1 << 11, 1 << 10).sum(axis=1)
    np.testing.assert_allclose(host(rows), expected_rows, rtol=1.2e-7, atol=1e-5)


def test_sum_of_ones_is_exact(device):
    n = (1 << 24) + 8  # a float32 accumulator stops at 2**24
    assert gd.ones(n, device=device).sum().item() == float(n)


def test_reductions_of_empty_arrays(device):
    assert_array(gd.zeros(0, device=device).sum(), np.float32(0))
    assert_array(gd.zeros((0, 3), dtype=gd.int64, device=device).sum(axis=0), np.zeros(3, np.int64))
    assert_array(gd.zeros((0, 3), device=device).sum(axis=1), np.zeros(0, np.float32))
    assert_array(gd.zeros((0, 3), device=device).max(axis=1), np.zeros(0, np.float32))
    assert_array(gd.zeros((3, 0), device=device).min(axis=0), np.zeros(0, np.float32))
    with np.errstate(all="ignore"):
        assert_array(gd.zeros((0, 3), device=device).mean(axis=0), np.full(3, np.nan, np.float32))


def test_max_min_propagate_nan(device):
    x = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, 6.0]])
    for kind in ("max", "min"):
        check(lambda a: getattr(a, kind)(axis=1), x, device=device)
        check(lambda a: getattr(a, kind)(), x, device=device)
    check(lambda a: a.sum(axis=0), np.array([[np.inf, 1.0], [np.inf, -np.inf]]), device=device)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_max_min_find_the_extreme_or_nan_anywhere(device, dtype):
    """Rows of lengths around the CPU's vector widths and the GPU's warps, the extreme (or a
    NaN) at each position in turn: every lane, chain and tail of the kernels."""
    for n in [*range(1, 35), 63, 64, 65, 127, 128, 129]:
        x = sample((n, n), dtype, seed=n)
        for kind, big in (("max", 99), ("min", -99)):
            a = x.copy()
            np.fill_diagonal(a, big)
            variants = [a]
            if dtype in FLOAT_DTYPES:
                b = a.copy()
                np.fill_diagonal(b, np.nan)
                variants.append(b)
            for v in variants:
                check(lambda t: getattr(t, kind)(axis=1), v, device=device)
                check(lambda t: getattr(t, kind)(axis=0), v, device=device)
                check(lambda t: getattr(t, kind)(), v[n // 2], device=device)


def test_int64_sums_are_exact(device):
    x = np.array([2**52 + 1, 2**52 + 1, -3, 2**40])
    check(lambda a: a.sum(), x, device=device)
    check(lambda a: a.max(), x, device=device)


@pytest.mark.parametrize(
    "shape, axis",
    [((7,), None), ((3, 4), None), ((3, 4), 0), ((3, 4), 1), ((5, 6, 7), (1, 2)), ((5, 6, 7), -1),
     ((0,), None), ((72, 73, 74), None), ((2, 3, 4, 5), (2, 3))],
    ids=str,
)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_norm(device, shape, axis, dtype):
    x = sample(shape, dtype, seed=21)
    ref = np.linalg.norm(x.astype(np.float64), axis=axis)
    expected = np.asarray(ref).astype(np.float32 if dtype == gd.float32 else np.float64)
    got = check(lambda a: gd.norm(a, axis=axis), x, device=device, ref=lambda _: expected,
                rtol=2e-7 if dtype == gd.float32 else 1e-12)
    assert got.dtype == (np.float32 if dtype == gd.float32 else np.float64)


def test_norm_keepdims(device):
    x = sample((4, 5, 6), np.float64, seed=22)
    check(lambda a: gd.norm(a, axis=(1, 2), keepdims=True), x, device=device,
          ref=lambda v: np.linalg.norm(v, axis=(1, 2), keepdims=True))
    check(lambda a: gd.norm(a, axis=0, keepdims=True), x, device=device,
          ref=lambda v: np.linalg.norm(v, axis=0, keepdims=True))


def test_norm_of_large_float32_is_accurate(device):
    rng = np.random.default_rng(23)
    x = (rng.standard_normal(1 << 21) + 1).astype(np.float32)
    exact = np.sqrt((x.astype(np.float64) ** 2).sum())
    got = gd.norm(gd.array(x, device=device)).item()
    assert abs(got - exact) <= 1e-7 * exact


# ---------------------------------------------------------------------------------------------
# int32: sums into int64, as NumPy's
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("axis", [None, 0, 1, (0, 2)], ids=str)
def test_int32_reductions(device, axis):
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


def test_int32_reduction_dtypes(device):
    x = gd.asarray(INT32_EDGES, device=device)
    assert x.sum().dtype == gd.int64 and x.sum().item() == int(INT32_EDGES.astype(np.int64).sum())
    assert x.max().dtype == gd.int32 and x.max().item() == I32.max
    assert x.mean().dtype == gd.float64 and gd.norm(x).dtype == gd.float64
    assert gd.cumulative_sum(x).dtype == gd.int64
    assert_array(gd.cumulative_sum(x), np.cumsum(INT32_EDGES))
    assert gd.count_nonzero(x).item() == np.count_nonzero(INT32_EDGES)
    assert_array(x.sum(axis=0, keepdims=True), INT32_EDGES.sum(axis=0, keepdims=True))
    assert_array(gd.zeros((0, 3), dtype=gd.int32, device=device).sum(axis=0), np.zeros((0, 3), np.int32).sum(axis=0))
