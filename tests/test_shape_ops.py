"""stack and concatenate against NumPy on every device: axes, empty parts, dtype promotion,
tuples and views."""

from __future__ import annotations

import numpy as np
import pytest

import gpudev as gd
from conftest import DTYPE_IDS, DTYPES, assert_array, check, sample


# ---------------------------------------------------------------------------------------------
# stack and concatenate
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "shapes, axis",
    [([(3,), (4,)], 0), ([(2, 3), (4, 3), (1, 3)], 0), ([(2, 3), (2, 5)], 1), ([(2, 3), (2, 1)], -1),
     ([(0, 3), (2, 3)], 0), ([(2, 0), (2, 4)], 1), ([(5,)], 0), ([(2, 3, 4), (2, 1, 4)], 1),
     ([(72, 73, 1), (72, 73, 2)], 2)],
    ids=str,
)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_concatenate(device, shapes, axis, dtype):
    arrays = [sample(s, dtype, seed=31 + i) for i, s in enumerate(shapes)]
    check(lambda *xs: gd.concatenate(list(xs), axis=axis), *arrays, device=device,
          ref=lambda *xs: np.concatenate(xs, axis=axis))


@pytest.mark.parametrize(
    "shape, n, axis", [((3,), 2, 0), ((3,), 4, 1), ((2, 3), 3, 0), ((2, 3), 3, 1), ((2, 3), 2, -1),
                       ((2, 3), 2, 2), ((), 5, 0), ((0, 2), 3, 1), ((7, 1, 5), 2, 1)],
    ids=str,
)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_stack(device, shape, n, axis, dtype):
    arrays = [sample(shape, dtype, seed=40 + i) for i in range(n)]
    check(lambda *xs: gd.stack(list(xs), axis=axis), *arrays, device=device,
          ref=lambda *xs: np.stack(xs, axis=axis))


def test_concatenate_and_stack_promote_dtypes(device):
    a, b = gd.ones(2, device=device), gd.arange(3, device=device)
    assert gd.concatenate([a, b]).dtype == np.float64
    assert_array(gd.concatenate([a, b]), np.array([1.0, 1.0, 0.0, 1.0, 2.0]))
    assert gd.stack([a, gd.ones(2, dtype=gd.float64, device=device)]).dtype == np.float64


def test_concatenate_accepts_tuples_and_views(device):
    a = gd.arange(12, device=device).reshape(3, 4)
    assert_array(gd.concatenate((a[2:], a[:1])), np.arange(12).reshape(3, 4)[[2, 0]])
    assert_array(gd.stack((a[0], a[1]), axis=1), np.stack([np.arange(4), np.arange(4, 8)], axis=1))
