"""Indexing that copies, against NumPy: bool masks of every rank, integer index arrays on the
first axis (negative, repeated, 2-D, empty), their assignments, gd.nonzero, strided and
negative-step sources and destinations, indices from other devices, and every error, with
nothing written when an assignment raises; on every device.

    >>> a = gd.arange(6).reshape(3, 2)
    >>> a[[2, 0]]          # rows 2 and 0, a copy
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import gpudev as gd
from conftest import DEVICES, DTYPE_IDS, DTYPES, assert_array, host, is_gpu, sample

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

by_device = pytest.mark.parametrize("device", DEVICES)
ALL_DTYPES = DTYPES + [gd.bool]
ALL_IDS = DTYPE_IDS + ["bool"]


def data_of(shape: tuple, dtype) -> np.ndarray:
    if np.dtype(dtype) == np.bool_:
        return sample(shape, np.int64, seed=3) > 0
    return sample(shape, dtype, seed=3)


# ---------------------------------------------------------------------------------------------
# masks
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=ALL_IDS)
@pytest.mark.parametrize("rank", [1, 2, 3])
@pytest.mark.parametrize("fill", ["random", "empty", "full"])
def test_masks_of_every_rank(device, dtype, rank, fill):
    src = data_of((4, 3, 2), dtype)
    mask = {"random": sample((4, 3, 2)[:rank], np.int64, seed=rank) > 0,
            "empty": np.zeros((4, 3, 2)[:rank], bool), "full": np.ones((4, 3, 2)[:rank], bool)}[fill]
    a = gd.array(src, device=device)
    for m in (mask, gd.array(mask, device=device), mask.tolist()):
        got = a[m]
        assert got.dtype == src.dtype and got.device == a.device
        assert_array(got, src[mask])
    got = a[gd.array(mask, device=device), ...]
    assert_array(got, src[mask, ...])


@by_device
@given(data=st.data())
def test_masks_match_numpy(device, data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=0, max_side=5))
    rank = data.draw(st.integers(1, len(shape)))
    mask = data.draw(hnp.arrays(np.bool_, shape[:rank]))
    src = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    a = gd.array(src, device=device)
    assert_array(a[gd.array(mask, device=device)], src[mask])
    a[mask] = -1.0
    src[mask] = -1.0
    assert_array(a, src)


def test_mask_setitem_broadcasts_the_value(device):
    src = np.arange(24.0).reshape(4, 3, 2)
    a = gd.array(src, device=device)
    mask = np.array([True, False, True, True])
    a[mask] = gd.array([10.0, 20.0], device=device)  # broadcast to (3, 3, 2)
    src[mask] = np.array([10.0, 20.0])
    assert_array(a, src)
    a[a > 15] = 0  # a mask built on the array itself
    src[src > 15] = 0
    assert_array(a, src)
    a[mask] = gd.arange(18, device=device).reshape(3, 3, 2)  # int64 into float64, as NumPy casts
    src[mask] = np.arange(18).reshape(3, 3, 2)
    assert_array(a, src)


# ---------------------------------------------------------------------------------------------
# integer index arrays
# ---------------------------------------------------------------------------------------------

INDICES = {
    "list": [3, 0, 4], "negative": [-1, -5, 2], "repeated": [1, 1, -4, 1], "2d": [[0, 4], [4, 2], [1, -1]],
    "empty": [], "one": [2], "full": [0, 1, 2, 3, 4],
}


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=ALL_IDS)
@pytest.mark.parametrize("name", sorted(INDICES))
def test_index_arrays_get(device, dtype, name):
    src = data_of((5, 3), dtype)
    a = gd.array(src, device=device)
    idx = np.array(INDICES[name], dtype=np.int64)
    for i in (INDICES[name], idx, idx.astype(np.int32), gd.array(idx), gd.array(idx, device=device),
              gd.array(idx.astype(np.int32), device=device)):
        assert_array(a[i], src[idx])
    assert_array(a[idx, ...], src[idx, ...])
    assert_array(a[idx, :], src[idx, :])
    assert_array(a.reshape(15)[idx], src.reshape(15)[idx])  # 1-D


@pytest.mark.parametrize("name", sorted(INDICES))
def test_index_arrays_set(device, name):
    idx = np.array(INDICES[name], dtype=np.int64)
    src = sample((5, 3), np.float64)
    a = gd.array(src, device=device)
    a[idx] = 7.5  # a scalar
    src[idx] = 7.5
    assert_array(a, src)
    v = sample(idx.shape + (3,), np.float64, seed=5)
    if len(set(idx.ravel() % 5)) == idx.size:  # unique: every device agrees with NumPy
        a[gd.array(idx, device=device)] = gd.array(v, device=device)
        src[idx] = v
        assert_array(a, src)
    row = np.array([1.0, 2.0, 3.0])
    a[INDICES[name]] = gd.array(row, device=device)  # broadcast over the selected rows
    src[idx] = row
    assert_array(a, src)


def test_repeated_indices_in_set_keep_one_of_the_values(device):
    a = gd.zeros(4, device=device)
    a[[2, 2, -2, 0]] = gd.array([1.0, 2.0, 3.0, 4.0], device=device)
    got = host(a)
    assert got[0] == 4.0 and got[1] == 0.0 and got[3] == 0.0
    if is_gpu(device):
        assert got[2] in (1.0, 2.0, 3.0)  # which write wins is unspecified on GPUs
    else:
        assert got[2] == 3.0  # NumPy's last write wins


@by_device
@given(data=st.data())
def test_index_arrays_match_numpy(device, data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=6))
    n = shape[0]
    idx = data.draw(hnp.arrays(np.int64, hnp.array_shapes(min_dims=1, max_dims=2, min_side=0, max_side=4),
                               elements=st.integers(-n, n - 1)))
    src = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    a = gd.array(src, device=device)
    assert_array(a[gd.array(idx, device=device)], src[idx])
    unique = np.unique(idx % n)
    a[unique - n] = -1  # negative, unique: the same on every device
    src[unique - n] = -1
    assert_array(a, src)


def test_minibatches(device):
    X = gd.array(np.arange(40.0).reshape(10, 4), device=device)
    perm = np.random.default_rng(0).permutation(10)
    batches = [X[perm[i:i + 4]] for i in range(0, 10, 4)]
    assert [b.shape for b in batches] == [(4, 4), (4, 4), (2, 4)]
    assert_array(gd.concatenate(batches), np.arange(40.0).reshape(10, 4)[perm])


# ---------------------------------------------------------------------------------------------
# strided sources and destinations
# ---------------------------------------------------------------------------------------------

VIEWS = {
    "rows_step": lambda x: x[::2], "reversed": lambda x: x[::-1], "columns": lambda x: x[:, 1::2],
    "transposed": lambda x: x.T, "both_negative": lambda x: x[::-2, ::-1],
}


@pytest.mark.parametrize("view", sorted(VIEWS))
def test_views_as_sources_and_destinations(device, view):
    src = np.arange(48.0).reshape(6, 8)
    a = gd.array(src, device=device)
    vs, va = VIEWS[view](src), VIEWS[view](a)
    idx = [-1, 0, 1]
    mask = (vs > 20)
    assert_array(va[idx], vs[idx])
    assert_array(va[mask], vs[mask])
    rows = gd.array(mask, device=device)[:, 0]  # a strided 1-D mask of the rows
    assert_array(va[rows], vs[mask[:, 0]])
    va[idx] = -gd.arange(vs.shape[1], device=device)  # writes through the view change the base
    vs[idx] = -np.arange(vs.shape[1])
    assert_array(a, src)
    va[va > 30] = 0.5
    vs[vs > 30] = 0.5
    assert_array(a, src)


def test_index_and_mask_that_are_views(device):
    src = np.arange(10.0)
    a = gd.array(src, device=device)
    idx = gd.arange(10)[::-3]  # a strided index array
    mask = gd.array(src > 3)[::-1]
    assert_array(a[idx], src[np.arange(10)[::-3]])
    assert_array(a[mask], src[(src > 3)[::-1]])


# ---------------------------------------------------------------------------------------------
# nonzero
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=ALL_IDS)
@pytest.mark.parametrize("shape", [(7,), (3, 4), (2, 3, 4), (0,), (3, 0), (1, 1)], ids=str)
def test_nonzero_matches_numpy(device, dtype, shape):
    src = data_of(shape, dtype)
    if src.size:
        src.flat[::3] = 0
    a = gd.array(src, device=device)
    for got in (gd.nonzero(a), a.nonzero()):
        want = np.nonzero(src)
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            assert g.dtype == np.int64 and g.device == a.device
            assert_array(g, w)


def test_nonzero_of_a_large_mask(device):
    src = np.random.default_rng(0).random(300_001) < 0.3
    got = gd.nonzero(gd.array(src, device=device))[0]
    assert_array(got, np.nonzero(src)[0])


def test_masks_and_gathers_of_large_arrays(device):
    src = np.random.default_rng(1).standard_normal((5000, 64)).astype(np.float32)
    a = gd.array(src, device=device)
    idx = np.random.default_rng(2).integers(-5000, 5000, 7000)
    assert_array(a[idx], src[idx])
    assert_array(a[a > 1.0], src[src > 1.0])
    a[idx] = 0.0
    src[idx] = 0.0
    assert_array(a, src)


# ---------------------------------------------------------------------------------------------
# devices
# ---------------------------------------------------------------------------------------------


def test_indices_on_the_cpu_index_any_device(device):
    src = np.arange(12.0).reshape(4, 3)
    a = gd.array(src, device=device)
    cpu_idx, cpu_mask = gd.array([3, 1]), gd.array(src[:, 0] > 2)
    assert_array(a[cpu_idx], src[[3, 1]])
    assert_array(a[cpu_mask], src[src[:, 0] > 2])
    a[cpu_mask] = 0.0
    src[src[:, 0] > 2] = 0.0
    assert_array(a, src)


@pytest.mark.gpu
def test_a_gpu_index_on_a_cpu_array_is_refused(cuda0):
    a = gd.arange(4.0)
    gpu = re.escape(gd.device_label(cuda0))  # 'cuda:0 (emulated)' on an emulated GPU
    with pytest.raises(ValueError, match=rf"getitem: the index is on {gpu} but the array is on cpu; indices must "
                                         r"be on the CPU or on the indexed array's device"):
        a[gd.array([0, 1], device=cuda0)]
    with pytest.raises(ValueError, match=rf"setitem: the index is on {gpu} but the array is on cpu"):
        a[gd.array([True, False, True, True], device=cuda0)] = 1.0
    assert a.tolist() == [0.0, 1.0, 2.0, 3.0]


@pytest.mark.gpu2
def test_an_index_on_another_gpu_is_refused(cuda01):
    a = gd.arange(4.0, device=cuda01[0])
    gpu0, gpu1 = (re.escape(gd.device_label(d)) for d in cuda01)
    with pytest.raises(ValueError, match=rf"the index is on {gpu1} but the array is on {gpu0}; .* idx\.to\('cuda:0'\)"):
        a[gd.array([0], device=cuda01[1])]


def test_indices_that_require_grad_are_fine(device):
    a = gd.arange(5.0, device=device)
    mask = gd.array([1.0, 0.0, 1.0, 0.0, 1.0], device=device).requires_grad_() > 0.5
    assert_array(a[mask], np.array([0.0, 2.0, 4.0], dtype=host(a).dtype))


# ---------------------------------------------------------------------------------------------
# errors: NumPy's wording, and nothing written when an assignment raises
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [5, 10, -6, -100])
def test_out_of_range_indices(device, bad):
    src = np.arange(15.0).reshape(5, 3)
    a = gd.array(src, device=device)
    msg = rf"index {bad} is out of bounds for axis 0 with size 5"
    with pytest.raises(IndexError, match=rf"getitem: {msg}"):
        a[[0, bad, 1]]
    with pytest.raises(IndexError, match=rf"getitem: {msg}"):
        a[gd.array([[1, 2], [bad, 200]], device=device)]  # the first bad one is named
    with pytest.raises(IndexError, match=rf"setitem: {msg}"):
        a[[0, bad, 1]] = -1.0
    with pytest.raises(IndexError, match=rf"setitem: {msg}"):
        a[::-1][[0, bad]] = gd.zeros((2, 3), device=device)  # through a view
    assert_array(a, src)  # nothing was written
    with pytest.raises(IndexError, match=r"index 0 is out of bounds for axis 0 with size 0"):
        gd.zeros((0, 3), device=device)[[0]]


def test_mask_shape_mismatch(device):
    a = gd.zeros((3, 4), device=device)
    with pytest.raises(IndexError, match=r"getitem: boolean index did not match indexed array along axis 0; size "
                                         r"of axis is 3 but size of corresponding boolean axis is 2"):
        a[[True, False]]
    with pytest.raises(IndexError, match=r"setitem: boolean index did not match indexed array along axis 1; size "
                                         r"of axis is 4 but size of corresponding boolean axis is 3"):
        a[np.ones((3, 3), bool)] = 1.0
    with pytest.raises(IndexError, match=r"too many indices for array: array is 2-dimensional, but 3 were indexed"):
        a[np.ones((3, 4, 1), bool)]
    assert a[gd.array(True, device=device)].shape == (1, 3, 4)  # NumPy's a[True]: a new axis
    assert host(a).sum() == 0


@pytest.mark.parametrize("key", [
    (slice(None), [0]), ([0], [1]), ([0], 1), (1, [0]), ([0], None), (None, [0]), ([0], slice(0, 1)),
    (Ellipsis, [0]), ([True, False, True], [0]),
], ids=str)
def test_other_advanced_combinations_follow_numpy(device, key):
    # keys with an index array after the first axis or next to another index: NumPy's result
    src = np.arange(12.0).reshape(3, 4)
    a = gd.array(src, device=device)
    assert_array(a[key], src[key])
    a[key] = -1.0
    want = src.copy()
    want[key] = -1.0
    assert_array(a, want)


def test_bad_index_arrays(device):
    a = gd.zeros((3, 4), device=device)
    with pytest.raises(IndexError, match=r"arrays used as indices must be of integer \(or boolean\) type, got "
                                         r"float(32|64)"):
        a[[0.5, 1.0]]
    with pytest.raises(IndexError, match=r"too many indices for array: array is 0-dimensional, but 1 were indexed"):
        gd.array(1.0, device=device)[[0]]
    with pytest.raises(IndexError, match=r"too many indices for array: array is 1-dimensional, but 2 were indexed"):
        gd.zeros(3, device=device)[[0], :]
    with pytest.raises(IndexError, match=r"getitem: the index list is not a list of integers or of bools"):
        a[[[0], [1, 2]]]  # ragged
    with pytest.raises(ValueError, match=r"could not broadcast|shape"):
        a[[0, 1]] = gd.ones((3, 4), device=device)
    assert host(a).sum() == 0


def test_results_past_sixteen_dimensions_are_refused(device):
    a = gd.zeros((2,) * 16, device=device)
    with pytest.raises(IndexError, match=r"getitem: the result would have more than 16 dimensions"):
        a[np.zeros((1, 1), dtype=np.int64)]
    assert a[np.zeros(1, dtype=np.int64)].shape == (1,) + (2,) * 15


def test_nonzero_errors():
    with pytest.raises(ValueError, match=r"nonzero: calling nonzero on 0d arrays is not allowed"):
        gd.nonzero(gd.array(1.0))
    with pytest.raises(TypeError, match=r"nonzero"):
        gd.nonzero([1, 0])


def test_index_add_checks_its_arguments():
    dst = gd.zeros((3, 2))
    with pytest.raises(TypeError, match=r"_index_add: dst must be float32, float64, int64 or int32"):
        gd._C._index_add(dst, gd.array([0]), gd.ones((1, 2), dtype=gd.int64))
    with pytest.raises(ValueError, match=r"_index_add: src has shape \(2, 2\), expected \(1, 2\)"):
        gd._C._index_add(dst, gd.array([0]), gd.ones((2, 2)))
    with pytest.raises(IndexError, match=r"_index_add: index 3 is out of bounds for axis 0 with size 3"):
        gd._C._index_add(dst, gd.array([3]), gd.ones((1, 2)))
    assert dst.tolist() == [[0.0, 0.0]] * 3
    with pytest.raises(IndexError, match=r"_index_add: idx must be an integer index array"):
        gd._C._index_add(dst, 0, gd.ones((1, 2)))
    gd._C._index_add(dst, gd.array([2, -1, 0]), gd.ones((3, 2)))
    assert dst.tolist() == [[1.0, 1.0], [0.0, 0.0], [2.0, 2.0]]


# ---------------------------------------------------------------------------------------------
# int32 index arrays and int32 data
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
# take: its own name in errors, bool indices as NumPy reads them
# ---------------------------------------------------------------------------------------------


def test_take_errors_name_take(device):
    x = gd.arange(3, device=device)
    with pytest.raises(IndexError, match="^take: index 5 is out of bounds for axis 0 with size 3"):
        gd.take(x, gd.asarray([5], device=device))
    with pytest.raises(IndexError, match="^take: arrays used as indices must be of integer"):
        gd.take(x, gd.asarray([1.5], device=device))
    with pytest.raises(IndexError, match="^take_along_axis: index 7 is out of bounds"):
        gd.take_along_axis(x, gd.asarray([7], device=device))
    with pytest.raises(IndexError, match="^take_along_axis: indices must be an integer array"):
        gd.take_along_axis(x, gd.asarray([True, False], device=device))


def test_take_reads_bool_indices_as_positions_as_numpy(device):
    x = np.arange(3)
    idx = np.array([True, False, True])
    np.testing.assert_array_equal(host(gd.take(gd.asarray(x, device=device), gd.asarray(idx, device=device))),
                                  np.take(x, idx))
