"""matmul against NumPy on every device: shapes, batches, promotion and views."""

from __future__ import annotations

import operator

import numpy as np
import pytest

import gpudev as gd
from conftest import FLOAT_DTYPES, assert_array, check, sample


# ---------------------------------------------------------------------------------------------
# matmul
# ---------------------------------------------------------------------------------------------

MATMUL_SHAPES = [
    ((1, 1), (1, 1)),
    ((7, 3), (3, 5)),
    ((64, 64), (64, 64)),
    ((257, 129), (129, 131)),
    ((0, 3), (3, 4)),
    ((3, 0), (0, 4)),
    ((3, 4), (4, 0)),
    ((5,), (5,)),
    ((5,), (5, 3)),
    ((4, 5), (5,)),
    ((2, 3, 4), (4, 5)),
    ((4, 5), (2, 5, 3)),
    ((2, 1, 3, 4), (5, 4, 6)),
    ((4,), (2, 4, 3)),
    ((2, 3, 4), (4,)),
    ((50, 17, 19), (50, 19, 23)),
    ((1, 7, 8), (3, 8, 2)),
]


def _matmul_atol(k: int, dtype) -> float:
    # inputs in [-1, 1): a float32 dot product of length k errs by at most ~k ulps of k
    return (2e-6 if np.dtype(dtype) == np.float32 else 1e-14) * max(k, 1)


@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=[f"{a}@{b}" for a, b in MATMUL_SHAPES])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=["float32", "float64"])
def test_matmul(device, shapes, dtype):
    a = sample(shapes[0], dtype, seed=24, low=-1, high=1)
    b = sample(shapes[1], dtype, seed=25, low=-1, high=1)
    k = shapes[0][-1]
    ref = lambda x, y: (x.astype(np.float64) @ y.astype(np.float64)).astype(dtype)  # noqa: E731
    tol = dict(rtol=0, atol=_matmul_atol(k, dtype))
    check(lambda x, y: x @ y, a, b, device=device, ref=ref, **tol)
    check(gd.matmul, a, b, device=device, ref=ref, **tol)


def test_matmul_promotes_mixed_floats(device):
    a = sample((3, 4), np.float32, seed=26)
    b = sample((4, 2), np.float64, seed=27)
    got = check(gd.matmul, a, b, device=device, ref=np.matmul)
    assert got.dtype == np.float64


def test_matmul_of_views(device):
    x = sample((6, 8, 8), np.float64, seed=28)
    a = gd.array(x, device=device)
    assert_array(a[2] @ a[3:5], x[2] @ x[3:5])
    assert_array(a[1:3].reshape(16, 8) @ a[0], x[1:3].reshape(16, 8) @ x[0])


def test_batched_matmul_of_many_small_matrices(device):
    a = sample((1000, 10, 10), np.float32, seed=29, low=-1, high=1)
    b = sample((1000, 10, 10), np.float32, seed=30, low=-1, high=1)
    check(gd.matmul, a, b, device=device, ref=lambda x, y: (x.astype(np.float64) @ y).astype(np.float32),
          rtol=0, atol=_matmul_atol(10, np.float32))


# ---------------------------------------------------------------------------------------------
# small products (at most 1024 multiply-adds on the CPU): each element summed in k order
# ---------------------------------------------------------------------------------------------

def _sum_in_k_order(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """x @ y as d2l's channels chapter writes a 1x1 convolution: the products of each k
    added one after the other, in x's dtype (NumPy's elementwise operations round each)."""
    out = x[..., :, 0:1] * y[..., 0:1, :]
    for k in range(1, x.shape[-1]):
        out = out + x[..., :, k:k + 1] * y[..., k:k + 1, :]
    return out


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=["float32", "float64"])
def test_small_products_sum_in_k_order_on_the_cpu(dtype):
    # d2l's channels chapter checks a (2, 3) @ (3, 9) product against the channel-by-channel
    # sum with `< 1e-6` on the sum of the differences; with fused multiply-adds that failed
    # for about one seed in nine
    for seed in range(50):
        x = sample((2, 3), dtype, seed=seed)
        y = sample((3, 9), dtype, seed=seed + 1000)
        got = (gd.asarray(x) @ gd.asarray(y)).numpy()
        np.testing.assert_array_equal(got, _sum_in_k_order(x, y))


@pytest.mark.parametrize("trans", ["nn", "tn", "nt", "tt"])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=["float32", "float64"])
def test_small_products_of_transposed_and_batched_operands(device, dtype, trans):
    # both sides of the 1024 multiply-add limit, transposed views read as stored
    for (m, k, n) in ((4, 5, 6), (8, 8, 16), (8, 8, 17), (1, 30, 1)):
        x = sample((3, k, m) if trans[0] == "t" else (3, m, k), dtype, seed=m * k, low=-1, high=1)
        y = sample((3, n, k) if trans[1] == "t" else (3, k, n), dtype, seed=k * n, low=-1, high=1)
        xs = x.swapaxes(1, 2) if trans[0] == "t" else x
        ys = y.swapaxes(1, 2) if trans[1] == "t" else y
        a, b = gd.array(x, device=device), gd.array(y, device=device)
        got = ((a.swapaxes(1, 2) if trans[0] == "t" else a) @ (b.swapaxes(1, 2) if trans[1] == "t" else b)).cpu().numpy()
        want = (xs.astype(np.float64) @ ys.astype(np.float64)).astype(dtype)
        np.testing.assert_allclose(got, want, rtol=0, atol=_matmul_atol(k, dtype))
        if device == gd.cpu() and m * n * k <= 1024:
            np.testing.assert_array_equal(got, _sum_in_k_order(xs, ys))


# ---------------------------------------------------------------------------------------------
# int32: products past int32 wrap, as NumPy's
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape_a, shape_b", [((3, 4), (4, 5)), ((2, 3, 4), (4, 1)), ((5,), (5,)), ((2, 0), (0, 3))],
                         ids=str)
def test_int32_matmul(device, shape_a, shape_b):
    a = sample(shape_a, np.int32, seed=1, low=-50000, high=50000)
    b = sample(shape_b, np.int32, seed=2, low=-50000, high=50000)
    check(operator.matmul, a, b, device=device)  # products past int32 wrap, as NumPy's
    check(lambda x, y: x @ y.T.T, a, b, device=device)
    check(operator.matmul, a, b.astype(np.int64), device=device)
    check(operator.matmul, a.astype(np.float32), b, device=device, rtol=1e-5)
