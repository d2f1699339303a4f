"""Several index arrays in one key (a[rows, cols], a[idx, :, idx2], a[:, idx], a[0, idx]) and
assignment through them, against NumPy on every device: the broadcast shape goes where the
index arrays are when they are next to each other and first otherwise, integers count as
0-d index arrays, bool arrays as their True coordinates, negative indices count from the end."""

from __future__ import annotations

import numpy as np
import pytest

import gpudev as gd
from conftest import assert_array

SRC = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)

KEYS = [
    ([0, 1], [1, 2]), (slice(None), [0, 2]), (0, [1, 2]), ([1, 0], slice(None), [3, 1]),
    ([[0], [1]], [0, 1, 2]), (Ellipsis, [1, 4]), ([0, 1], Ellipsis, [2, 3]), (None, [0, 1], [1, 2]),
    (slice(None), [0, 2], [1, 3]), (slice(None), [0, 2], slice(None), [1, 3]), (1, slice(None), [0, 3]),
    ([-1, 0], [-1, -2]), (np.array([True, False]), [0, 2]), (slice(None), np.array([True, False, True])),
    ([0, 1], [1, 2], [0, 3], [4, 0]), (slice(1, None), [0], slice(None, None, -1), [1, 2]), ([], []),
    (np.array([[True, False, True], [False, True, True]]), [0, 1, 2, 3]),
]


@pytest.mark.parametrize("key", KEYS, ids=str)
def test_get_and_set_follow_numpy(device, key):
    a = gd.array(SRC, device=device)
    want = SRC[key]
    assert_array(a[key], want)
    values = np.random.default_rng(0).standard_normal(want.shape).astype(np.float32)
    a[key] = gd.array(values, device=device)
    expected = SRC.copy()
    expected[key] = values
    assert_array(a, expected)
    a[key] = 7.0  # a scalar broadcasts
    expected[key] = 7.0
    assert_array(a, expected)


@pytest.mark.parametrize("key", KEYS[:8], ids=str)
def test_through_a_strided_view(device, key):
    base = SRC.copy()
    a = gd.array(base, device=device)
    view, nview = a[:, :, :, ::-1], base[:, :, :, ::-1]
    assert_array(view[key], nview[key])
    view[key] = -3.0
    nview[key] = -3.0
    assert_array(a, base)  # the writes reach the base


def test_the_index_arrays_values_broadcast(device):
    a = gd.array(SRC[0], device=device)
    a[[0, 2], [1, 3]] = gd.array([[1.0], [2.0]], device=device)[0]  # shape (1,) broadcasts to (2,)
    want = SRC[0].copy()
    want[[0, 2], [1, 3]] = 1.0
    assert_array(a, want)
    with pytest.raises(ValueError, match=r"setitem: could not broadcast input array from shape \(3,\) into shape "
                                         r"\(2, 5\)"):
        a[[0, 2], [1, 3]] = gd.zeros(3, device=device)


def test_index_arrays_on_the_gpu_or_the_cpu(device):
    a = gd.array(SRC[0], device=device)
    rows, cols = gd.array([2, 0]), gd.array([1, 1], device=device)
    assert_array(a[rows, cols], SRC[0][[2, 0], [1, 1]])


def test_gradient_flows_through_a_multi_index(device):
    x = gd.array(SRC[0], device=device).requires_grad_()
    (x[[0, 2, 2], [1, 3, 3]] * 2.0).sum().backward()
    want = np.zeros_like(SRC[0])
    np.add.at(want, ([0, 2, 2], [1, 3, 3]), 2.0)  # repeated pairs accumulate
    assert_array(x.grad, want)


def test_bad_keys_raise_and_write_nothing(device):
    a = gd.array(SRC[0], device=device)
    with pytest.raises(IndexError, match=r"getitem: index 3 is out of bounds for axis 0 with size 3"):
        a[[0, 3], [0, 0]]
    with pytest.raises(IndexError, match=r"setitem: index -5 is out of bounds for axis 1 with size 4"):
        a[[0, 1], [0, -5]] = 1.0
    with pytest.raises(IndexError, match=r"shape mismatch: indexing arrays could not be broadcast together with "
                                         r"shapes \(2,\) \(3,\)"):
        a[[0, 1], [0, 1, 2]]
    with pytest.raises(IndexError, match=r"boolean index did not match indexed array along axis 1; size of axis "
                                         r"is 4 but size of corresponding boolean axis is 2"):
        a[[0, 1], np.array([True, False])]
    with pytest.raises(IndexError, match=r"too many indices for array: array is 3-dimensional, but 4 were indexed"):
        a[[0], [0], [0], [0]]
    with pytest.raises(IndexError, match=r"an index can only have a single ellipsis"):
        a[..., [0], ...]
    assert_array(a, SRC[0])
