"""The Array object: attributes, transfers between devices, views that share storage,
indexing and assignment, conversions, repr, iteration and zero-copy NumPy interop."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import gpudev as gd
from conftest import CPU, DTYPE_IDS, DTYPES, assert_array, host, is_gpu, sample

# ---------------------------------------------------------------------------------------------
# attributes
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(), (0,), (7,), (3, 4), (2, 0, 3), (72, 73, 74)], ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_attributes(device, shape, dtype):
    a = gd.zeros(shape, dtype=dtype, device=device)
    ref = np.zeros(shape, dtype)
    assert a.shape == ref.shape and isinstance(a.shape, tuple)
    assert all(type(n) is int for n in a.shape)
    assert a.ndim == ref.ndim
    assert a.size == ref.size
    assert a.dtype == ref.dtype and isinstance(a.dtype, np.dtype)
    assert a.itemsize == ref.itemsize
    assert a.nbytes == ref.nbytes
    assert a.device == device


def test_len(device):
    assert len(gd.zeros((7, 2), device=device)) == 7
    assert len(gd.zeros((0, 3), device=device)) == 0
    with pytest.raises(TypeError):
        len(gd.zeros((), device=device))


def test_arrays_support_weak_references():
    a = gd.ones(3)
    ref = weakref.ref(a)
    assert ref() is a
    del a
    gc.collect()
    assert ref() is None


# ---------------------------------------------------------------------------------------------
# transfers
# ---------------------------------------------------------------------------------------------


def test_to_the_same_device_returns_the_array_itself(device):
    a = gd.arange(5, device=device)
    assert a.to(device) is a
    assert a.to(str(device)) is a
    if is_gpu(device):
        assert a.cuda(device.index) is a
    else:
        assert a.cpu() is a


def test_to_with_copy_gives_an_independent_array(device):
    a = gd.arange(5, device=device)
    b = a.to(device, copy=True)
    assert b is not a and b.device == device
    b += 1
    assert_array(a, np.arange(5))
    assert_array(b, np.arange(1, 6))


@pytest.mark.parametrize("shape", [(), (0,), (1,), (7,), (3, 0), (72, 73, 74)], ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_roundtrip_through_the_device(device, shape, dtype):
    src = sample(shape, dtype, seed=3)
    a = gd.array(src).to(device)
    assert a.device == device
    back = a.cpu()
    assert back.device == CPU
    np.testing.assert_array_equal(back.numpy(), src)
    assert back.dtype == src.dtype


@pytest.mark.gpu
def test_cuda_method_copies_to_a_gpu(cuda0):
    a = gd.arange(6.0)
    g = a.cuda()
    assert g.device == cuda0
    assert g.cuda(0) is g
    np.testing.assert_array_equal(g.cpu().numpy(), np.arange(6.0, dtype=np.float32))


@pytest.mark.gpu2
def test_copies_cuda0_cpu_cuda1(cuda01):
    d0, d1 = cuda01
    src = sample((257, 131), np.float64, seed=5)
    a0 = gd.array(src, device=d0)
    a1 = a0.to(d1)  # peer copy, never through the host
    assert a1.device == d1
    np.testing.assert_array_equal(a1.cpu().numpy(), src)
    back = a1.cpu().to(d0)
    assert back.device == d0
    np.testing.assert_array_equal(back.cpu().numpy(), src)
    np.testing.assert_array_equal(a1.to(d0).cpu().numpy(), src)


@pytest.mark.gpu2
def test_peer_copy_waits_for_queued_work_on_the_source(cuda01):
    d0, d1 = cuda01
    n = 1 << 24
    a = gd.zeros(n, device=d0)
    for _ in range(10):
        a += 0.5  # queued on cuda:0
    b = a.to(d1)  # must be ordered after the additions
    a += 100  # and must not see this one
    assert b.sum().item() == 5.0 * n
    assert b.min().item() == 5.0


@pytest.mark.gpu2
def test_ops_on_the_second_gpu_match_the_cpu(cuda01):
    _, d1 = cuda01
    x, y = sample((33, 17), np.float32, 1), sample((17, 9), np.float32, 2)
    got = gd.array(x, device=d1) @ gd.array(y, device=d1) + 1
    assert got.device == d1
    assert_array(got, host(gd.array(x) @ gd.array(y) + 1), rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------------------------------
# conversions: numpy, item, tolist, copy, astype
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_numpy_is_a_zero_copy_view_on_the_cpu(dtype):
    a = gd.arange(6, dtype=dtype).reshape(2, 3)
    n = a.numpy()
    assert n.dtype == dtype and n.shape == (2, 3)
    n[1, 1] = 42
    assert a[1, 1].item() == 42
    a[0, 0] = -1
    assert n[0, 0] == -1
    assert np.shares_memory(n, a.numpy())
    assert np.shares_memory(n, np.asarray(a))


def test_numpy_view_keeps_the_storage_alive():
    n = gd.arange(1000).numpy()  # the Array is gone after this line; the view keeps its memory
    view = gd.arange(1000)[10:20].numpy()
    gc.collect()
    _ = [gd.ones(1000) for _ in range(10)]  # would reuse freed memory
    np.testing.assert_array_equal(n, np.arange(1000))
    np.testing.assert_array_equal(view, np.arange(10, 20))


def test_np_asarray_and_np_array(device):
    a = gd.array([[1.5, 2.5], [3.5, 4.5]], device=device)
    if is_gpu(device):
        with pytest.raises(TypeError, match=r"\.cpu\(\)"):
            np.asarray(a)
        return
    v = np.asarray(a)
    assert v.dtype == np.float32
    assert np.shares_memory(v, a.numpy())
    c = np.array(a)  # a copy, as for any array-like
    c[0, 0] = 0
    assert a[0, 0].item() == 1.5
    np.testing.assert_array_equal(np.asarray(a, dtype=np.float64), [[1.5, 2.5], [3.5, 4.5]])


@pytest.mark.gpu
def test_numpy_of_a_gpu_array_says_to_call_cpu(cuda0):
    a = gd.ones(3, device=cuda0)
    with pytest.raises(TypeError, match=r"\.cpu\(\)"):
        a.numpy()
    assert_array(a, np.ones(3, np.float32))  # still usable


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_item(device, dtype):
    a = gd.array([[2.5]], dtype=dtype, device=device)
    value = a.item()
    if np.dtype(dtype).kind == "i":
        assert type(value) is int and value == 2
    else:
        assert type(value) is float and value == 2.5
    assert gd.arange(5, device=device)[3].item() == 3
    assert gd.full((), -7.25, dtype=gd.float64, device=device).item() == -7.25


@pytest.mark.parametrize("shape", [(), (0,), (4,), (2, 3), (2, 0, 2), (2, 2, 2)], ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_tolist(device, shape, dtype):
    src = sample(shape, dtype, seed=11)
    got = gd.array(src, device=device).tolist()
    assert got == src.tolist()
    if shape == ():
        assert type(got) is (int if np.dtype(dtype).kind == "i" else float)


def test_copy_is_independent(device):
    a = gd.arange(6, device=device).reshape(2, 3)
    b = a.copy()
    assert b is not a and b.device == device and b.shape == (2, 3)
    b[0] = 0
    assert_array(a, np.arange(6).reshape(2, 3))
    v = a[1]
    c = v.copy()  # copying a view copies only the view
    assert c.shape == (3,)
    c += 10
    assert_array(a, np.arange(6).reshape(2, 3))


@pytest.mark.parametrize("src_dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("dst_dtype", DTYPES, ids=DTYPE_IDS)
def test_astype(device, src_dtype, dst_dtype):
    src = np.array([-2.75, -1.5, -0.5, 0.0, 0.5, 1.5, 2.75, 1e6 + 0.25]).astype(src_dtype)
    a = gd.array(src, device=device)
    b = a.astype(dst_dtype)
    assert b is not a
    assert_array(b, src.astype(dst_dtype), rtol=0, device=device)


def test_astype_same_dtype_copies(device):
    a = gd.ones(3, device=device)
    b = a.astype(gd.float32)
    assert b is not a
    b += 1
    assert_array(a, np.ones(3, np.float32))


def test_astype_float64_to_float32_rounds(device):
    src = np.array([1 / 3, 1e-50, 1e300, -1e300, np.pi])
    with np.errstate(over="ignore"):
        expected = src.astype(np.float32)
    assert_array(gd.array(src, device=device).astype(gd.float32), expected, rtol=0)


# ---------------------------------------------------------------------------------------------
# reshape, flatten, transpose
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "shape, new",
    [((6,), (2, 3)), ((2, 3), (3, 2)), ((2, 3, 4), (4, -1)), ((2, 3, 4), (-1,)), ((0, 3), (3, 0)),
     ((0, 3), (-1,)), ((1,), ()), ((), (1, 1)), ((72, 73, 74), (73, -1))],
    ids=str,
)
def test_reshape(device, shape, new):
    src = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    a = gd.array(src, device=device)
    assert_array(a.reshape(new), src.reshape(new), device=device)
    if new:  # reshape() with no arguments is an error, as in NumPy
        assert_array(a.reshape(*new), src.reshape(new), device=device)


def test_reshape_is_a_view(device):
    a = gd.zeros((2, 3), dtype=gd.int64, device=device)
    r = a.reshape(3, 2)
    r[1] = 5
    assert_array(a, np.array([[0, 0, 5], [5, 0, 0]]))
    f = a.flatten()
    assert f.shape == (6,)
    f[0] = 9  # flatten copies, as NumPy's does
    assert a[0, 0].item() == 0
    r = a.ravel()  # ravel is a view where it can be
    r[0] = 9
    assert a[0, 0].item() == 9


def test_reshape_of_a_view(device):
    a = gd.arange(24, device=device).reshape(2, 3, 4)
    v = a[1].reshape(4, 3)
    assert_array(v, np.arange(12, 24).reshape(4, 3))
    v[0] = -1
    assert_array(a[1, 0], np.array([-1, -1, -1, 15]))


@pytest.mark.parametrize(
    "shape, axes",
    [((), None), ((5,), None), ((3, 4), None), ((2, 3, 4), None), ((2, 3, 4), (1, 0, 2)),
     ((2, 3, 4), (2, 0, 1)), ((1, 7, 1), (2, 1, 0)), ((0, 3), None), ((72, 73, 74), (1, 2, 0)),
     ((2, 3, 4, 5), (3, 1, 0, 2))],
    ids=str,
)
def test_transpose(device, shape, axes):
    src = sample(shape, np.float64, seed=4)
    a = gd.array(src, device=device)
    if axes is None:
        assert_array(a.T, src.T, device=device)
        assert_array(a.transpose(), src.transpose(), device=device)
    else:
        assert_array(a.transpose(*axes), src.transpose(axes), device=device)
        assert_array(a.transpose(axes), src.transpose(axes), device=device)


def test_transpose_is_a_view(device):
    a = gd.arange(6, device=device).reshape(2, 3)
    t = a.T
    t[0] = 100
    assert_array(a, np.array([[100, 1, 2], [100, 4, 5]]))


# ---------------------------------------------------------------------------------------------
# indexing: views on leading axes
# ---------------------------------------------------------------------------------------------


INDEXES = [0, 3, -1, -7, np.int64(2), (1, 2), (-1, -2), (2, 3, 1), slice(2, 5), slice(None), slice(-3, None),
           slice(None, -2), slice(5, 100), slice(10, 20), slice(4, 2), slice(-100, 3), (1, slice(1, 3)),
           (0, 0, slice(0, 4))]


@pytest.mark.parametrize("index", INDEXES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_getitem(device, dtype, index):
    src = sample((7, 6, 5), dtype, seed=7)
    a = gd.array(src, device=device)
    assert_array(a[index], src[index], rtol=0, device=device)


def test_chained_indexing(device):
    src = np.arange(72 * 73 * 74, dtype=np.float32).reshape(72, 73, 74)
    a = gd.array(src, device=device)
    assert_array(a[71][72][73], src[71, 72, 73])
    assert_array(a[10:20][3:5][1], src[10:20][3:5][1])
    assert_array(a[-1, 5:9], src[-1, 5:9])


def test_indexing_returns_views(device):
    a = gd.zeros((4, 3), device=device)
    row = a[1]
    rows = a[2:4]
    row += 1
    rows[0] = 2
    rows[1, 2] = 3
    expected = np.array([[0, 0, 0], [1, 1, 1], [2, 2, 2], [0, 0, 3]], np.float32)
    assert_array(a, expected)
    assert_array(row, expected[1])


def test_views_keep_the_base_alive(device):
    a = gd.arange(100, device=device)
    ref = weakref.ref(a)
    v = a[10:20]
    w = v[2:4]
    del a
    gc.collect()
    assert ref() is not None, "a view must keep its base alive"
    _ = [gd.ones(100, device=device) for _ in range(10)]
    assert_array(w, np.array([12, 13]))
    del v, w
    gc.collect()
    assert ref() is None, "the base must be freed once no view uses it"


def test_views_share_memory_with_numpy():
    a = gd.arange(12.0).reshape(3, 4)
    assert np.shares_memory(np.asarray(a[1]), np.asarray(a))
    assert np.shares_memory(a[1:3].numpy(), a.numpy())
    assert np.shares_memory(a.reshape(4, 3).numpy(), a.numpy())
    assert np.shares_memory(a.T.numpy(), a.numpy())
    assert np.shares_memory(a[:, ::2].numpy(), a.numpy())
    assert not np.shares_memory(a.copy().numpy(), a.numpy())
    assert np.asarray(a[1]).ctypes.data == np.asarray(a).ctypes.data + 4 * 4


def test_iteration(device):
    src = sample((4, 3), np.float64, seed=8)
    a = gd.array(src, device=device)
    rows = list(a)
    assert len(rows) == 4
    for row, expected in zip(rows, src):
        assert_array(row, expected, device=device)
    assert [x.item() for x in gd.arange(5, device=device)] == [0, 1, 2, 3, 4]
    assert list(gd.zeros((0, 3), device=device)) == []
    with pytest.raises(TypeError, match="0-d"):
        list(gd.zeros((), device=device))


# ---------------------------------------------------------------------------------------------
# assignment
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_setitem_scalar(device, dtype):
    src = np.zeros((5, 4, 3), dtype)
    a = gd.array(src, device=device)
    for index, value in [(0, 1), (-1, 2.75), ((1, 2), 3), ((2, 1, 0), -4), (slice(3, 5), 5.5), ((4, slice(0, 2)), 6)]:
        a[index] = value
        src[index] = value
    assert_array(a, src)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_setitem_array_broadcasts_and_casts(device, dtype):
    src = np.zeros((5, 4, 3), dtype)
    a = gd.array(src, device=device)
    row = np.array([1.5, -2.5, 3.5])
    block = np.arange(12).reshape(4, 3)
    col = np.array([[7], [8], [9], [10]], np.float32)
    for index, value in [(0, row), (slice(1, 3), block), ((3,), col), (slice(None), row[:1])]:
        a[index] = gd.array(value, device=device)
        src[index] = value
        assert_array(a, src)


def test_setitem_whole_array_with_ellipsis_or_slice(device):
    a = gd.zeros((3, 2), device=device)
    a[:] = 4.0
    assert_array(a, np.full((3, 2), 4.0, np.float32))
    a[...] = gd.array([1.0, 2.0], device=device)
    assert_array(a, np.array([[1, 2]] * 3, np.float32))


def test_setitem_from_another_part_of_the_same_array(device):
    a = gd.arange(10, device=device)
    a[0:5] = a[5:10]
    assert_array(a, np.array([5, 6, 7, 8, 9, 5, 6, 7, 8, 9]))


def test_setitem_from_an_overlapping_view(device):
    # NumPy copies as if through a temporary: a forward element loop would smear a[0]
    src = np.arange(10)
    a = gd.array(src, device=device)
    a[1:6] = a[0:5]
    src[1:6] = src[0:5]
    assert_array(a, src)


def test_setitem_on_empty_selection(device):
    a = gd.arange(4, device=device)
    a[4:] = 100
    a[2:2] = gd.zeros(0, dtype=gd.int64, device=device)
    assert_array(a, np.arange(4))


# ---------------------------------------------------------------------------------------------
# repr
# ---------------------------------------------------------------------------------------------


def test_repr_shows_the_values_like_numpy(device):
    a = gd.array([[1.5, -2.25], [0.0, 3.0]], device=device)
    text = repr(a)
    for token in ("1.5", "-2.25", "3."):
        assert token in text
    assert text.lower().startswith("array(")
    ints = repr(gd.array([1, 2, 3], device=device))
    assert "1, 2, 3" in ints
    assert "float64" in repr(gd.array([0.5], dtype=gd.float64, device=device))
    if is_gpu(device):
        assert str(device) in text
    else:
        assert "cuda" not in text
    assert str(a)  # str works too


def test_repr_of_large_arrays_is_summarised(device):
    text = repr(gd.zeros(10**6, device=device))
    assert len(text) < 1000
    assert "..." in text


def test_repr_of_empty_and_scalar_arrays(device):
    assert "[]" in repr(gd.zeros(0, device=device))
    assert "7" in repr(gd.array(7, device=device))
    assert "(2, 0)" in repr(gd.zeros((2, 0), device=device)) or "[]" in repr(gd.zeros((2, 0), device=device))
