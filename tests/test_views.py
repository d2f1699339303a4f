"""Strided views against NumPy: basic indexing (integers, slices with any step, ``...``,
``None``), views of views, transposes, reshape's view-or-copy rule, writes through views, and
operations that mix views with their bases, on every device.

    >>> a = gd.arange(12).reshape(3, 4)
    >>> a[:, ::2] += 100      # a view: the base changes
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest

import gpudev as gd
from conftest import DEVICES, DTYPE_IDS, DTYPES, assert_array, host, is_gpu, sample

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

by_device = pytest.mark.parametrize("device", DEVICES)

INDEXES = [
    (slice(None), 1), (slice(1, 3), 1), (slice(None), slice(None, None, 2)), (slice(None, None, -1),),
    (slice(None, None, -2), slice(3, 0, -1)), (Ellipsis, 0), (0, Ellipsis), (None, slice(1, None)),
    (slice(None), None, 2), (1, None, slice(None, None, -3)), (slice(5, 1),), (slice(None), slice(2, 2)),
    (Ellipsis, None), (-1, -1), (np.int64(1), slice(None, None, 3)), (slice(-100, 100, 7),),
]


@pytest.mark.parametrize("index", INDEXES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_basic_indexing_matches_numpy(device, index, dtype):
    src = sample((4, 5), dtype, seed=1)
    a = gd.array(src, device=device)
    view = a[index]
    assert_array(view, src[index], device=device)
    assert view.strides == src[index].strides


@by_device
@given(data=st.data())
def test_views_of_views(device, data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=0, max_side=6))
    src = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    first = data.draw(hnp.basic_indices(shape, allow_newaxis=True))
    mid = src[first]
    second = data.draw(hnp.basic_indices(mid.shape, allow_newaxis=True))
    a = gd.array(src, device=device)
    got = a[first][second]
    assert_array(got, mid[second])
    if got.size > 1:
        assert got.strides == mid[second].strides


@by_device
@given(data=st.data())
def test_writes_through_views_change_the_base(device, data):
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=6))
    index = data.draw(hnp.basic_indices(shape, allow_newaxis=True))
    src = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    a = gd.array(src, device=device)
    a[index] = -1.0
    src[index] = -1.0
    assert_array(a, src)
    view = a[index]
    view += 10.0
    src[index] += 10.0
    assert_array(a, src)


def test_writes_through_views(device):
    src = np.arange(20.0).reshape(4, 5)
    a = gd.array(src, device=device)
    a[:, 0] += 1
    a[:, ::2] = 0
    a[::-1, 1] *= 3
    a[1:3, 1:4] -= gd.ones(3, device=device)
    a.T[2] = 7
    col = a[:, 3]
    col /= 2
    src[:, 0] += 1
    src[:, ::2] = 0
    src[::-1, 1] *= 3
    src[1:3, 1:4] -= 1
    src.T[2] = 7
    src[:, 3] /= 2
    assert_array(a, src)


@pytest.mark.parametrize(
    "stmt",
    ["a[1:] += a[:-1]", "a[:-1] += a[1:]", "a += a.T", "a[::2] = a[1::2]", "a[::-1] = a", "a.T[...] = a",
     "a[:, ::-1] -= a", "a += a[0]", "a[1:3] = a[0:2]", "a *= a"],
)
def test_overlapping_operands_read_before_write(device, stmt):
    """NumPy reads every input before writing when operands overlap other than exactly."""
    src = np.arange(36.0).reshape(6, 6)
    ns = {"a": gd.array(src, device=device)}
    exec(stmt, {}, ns)
    ref = {"a": src.copy()}
    exec(stmt, {"np": np}, ref)
    assert_array(ns["a"], ref["a"])


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_operations_mix_views_and_bases(device, dtype):
    src = sample((6, 6), dtype, seed=2, low=1, high=9)
    a = gd.array(src, device=device)
    cases = [
        (lambda x: x.T + x, None), (lambda x: x[:, ::2] * x[:, 1::2], None), (lambda x: x[::-1] - x, None),
        (lambda x: gd.maximum(x[1:, ::-1], x[:-1]), lambda x: np.maximum(x[1:, ::-1], x[:-1])),
        (lambda x: -x.T[::2], None), (lambda x: abs(x[:, 1]), None), (lambda x: x.T[1:4, ::2] ** 2, None),
        (lambda x: x[None, :, 2] + x[:, None, 3], None),
    ]
    for fn, ref in cases:
        assert_array(fn(a), (ref or fn)(src))
    if np.dtype(dtype).kind == "f":
        assert_array(gd.exp(a.T[::2]), np.exp(src.T[::2]), rtol=1e-5)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_large_transposed_views(device, dtype):
    """Sizes past the thread and tile thresholds, odd edges."""
    src = sample((301, 517), dtype, seed=3)
    a = gd.array(src, device=device)
    assert_array(a.T + a.T[::-1], src.T + src.T[::-1])
    b = gd.array(sample((517, 301), dtype, seed=4), device=device)
    assert_array(a.T + b, src.T + host(b))
    out = gd.zeros((517, 602), dtype=dtype, device=device)
    out[:, ::2] = a.T
    expected = np.zeros((517, 602), dtype)
    expected[:, ::2] = src.T
    assert_array(out, expected)
    c = a.copy()
    c.T[...] += b  # an in-place operation on a transposed view
    assert_array(c, src + host(b).T)


def test_zero_size_slices(device):
    src = np.arange(12.0).reshape(3, 4)
    a = gd.array(src, device=device)
    for index in [(slice(2, 2),), (slice(None), slice(5, None)), (slice(3, 0),), (slice(0, 0, -1), slice(None, None, -1))]:
        assert_array(a[index], src[index])
    empty = a[1:1]
    empty += 5
    empty[...] = 3
    assert_array(empty.sum(axis=0), src[1:1].sum(axis=0))
    assert_array(a, src)


# ---------------------------------------------------------------------------------------------
# transposes and reshape
# ---------------------------------------------------------------------------------------------


def test_transposes_are_views(device):
    src = np.arange(24.0).reshape(2, 3, 4)
    a = gd.array(src, device=device)
    for got, want in [(a.T, src.T), (a.transpose(1, 0, 2), src.transpose(1, 0, 2)),
                      (a.permute(2, 0, 1), src.transpose(2, 0, 1)), (a.swapaxes(0, 2), src.swapaxes(0, 2)),
                      (a.mT, np.swapaxes(src, -1, -2)), (a.transpose((2, 1, 0)), src.transpose(2, 1, 0))]:
        assert_array(got, want)
        assert got.strides == want.strides
        assert not got.is_contiguous()
    a.mT[1, 0, 2] = -1
    src[1, 2, 0] = -1
    assert_array(a, src)
    with pytest.raises(ValueError, match=r"mT: matrix transpose with ndim < 2 is undefined"):
        gd.ones(3, device=device).mT
    with pytest.raises(TypeError, match=r"permute\(\*dims\) needs the new order of the axes"):
        a.permute()
    with pytest.raises(TypeError, match=r"swapaxes\(axis1, axis2\) takes two axes"):
        a.swapaxes(0)


@pytest.mark.parametrize(
    "make, new",
    [(lambda x: x.T, (12, 2)), (lambda x: x.T, (-1,)), (lambda x: x[:, ::2], (4, 4)), (lambda x: x[:, 1:3], (2, 8)),
     (lambda x: x[::-1], (6, 4)), (lambda x: x.T, (4, 3, 2)), (lambda x: x[:, :, None], (2, 12)),
     (lambda x: x[..., ::2], (6, 2)), (lambda x: x.transpose(1, 0, 2), (3, 8)), (lambda x: x[1:], (12,))],
)
def test_reshape_views_when_numpy_does(device, make, new):
    src = np.arange(24.0).reshape(2, 3, 4)
    a = gd.array(src, device=device)
    view, nview = make(a), make(src)
    got, want = view.reshape(new), nview.reshape(new)
    assert_array(got, want)
    numpy_viewed = np.shares_memory(want, src)
    got[...] = -7  # a view writes through to the base; a copy does not
    want[...] = -7
    assert_array(a, src)
    assert (host(a) == -7).any() == numpy_viewed


def test_ravel_and_flatten(device):
    src = np.arange(12.0).reshape(3, 4)
    a = gd.array(src, device=device)
    for make in (lambda x: x, lambda x: x.T, lambda x: x[:, ::2], lambda x: x[1:]):
        assert_array(make(a).ravel(), make(src).ravel())
        assert_array(make(a).flatten(), make(src).flatten())
    f = a.flatten()
    f[0] = 100
    assert a[0, 0].item() == 0
    r = a[1:].ravel()
    r[0] = 100
    assert a[1, 0].item() == 100


def test_contiguous_and_strides(device):
    src = np.arange(24, dtype=np.int64).reshape(2, 3, 4)
    a = gd.array(src, device=device)
    assert a.is_contiguous() and a.contiguous() is a and a.strides == src.strides
    for make in (lambda x: x.T, lambda x: x[:, ::2], lambda x: x[..., 1], lambda x: x[::-1]):
        v = make(a)
        assert v.strides == make(src).strides
        assert not v.is_contiguous()
        c = v.contiguous()
        assert c.is_contiguous() and c.strides == np.ascontiguousarray(make(src)).strides
        assert_array(c, make(src))
    assert a[0, :1].is_contiguous() and a[:1, 0:1].is_contiguous() and a[:0, ::2].is_contiguous()
    assert not a[:, 0:1, 0:1].is_contiguous()  # NumPy's rule: the (2, 1, 1) view steps 12 elements


# ---------------------------------------------------------------------------------------------
# every operation accepts views
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1)], ids=str)
def test_reductions_of_views(device, axis):
    src = sample((7, 9), np.float64, seed=5)
    a = gd.array(src, device=device)
    for make in (lambda x: x.T, lambda x: x[::-2, 1::3], lambda x: x[:, ::-1]):
        for name in ("sum", "mean", "max", "min"):
            assert_array(getattr(make(a), name)(axis=axis), getattr(make(src), name)(axis=axis), rtol=1e-12)
    assert_array(gd.norm(a.T[::2], axis=axis), np.linalg.norm(src.T[::2], axis=axis) if axis is not None
                 else np.linalg.norm(src.T[::2]), rtol=1e-12)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_matmul_of_views(device, dtype):
    """Transposed 2-D views go to BLAS as transpose flags, sliced ones with a leading dimension;
    other layouts are compacted. Every one gives NumPy's product."""
    x = sample((6, 8), dtype, seed=6)
    y = sample((8, 5), dtype, seed=7)
    a, b = gd.array(x, device=device), gd.array(y, device=device)
    rtol = 1e-5 if np.dtype(dtype) == np.float32 else None
    cases = [(a @ a.T, x @ x.T), (a.T @ a, x.T @ x), (a[:, ::2] @ b[::2], x[:, ::2] @ y[::2]),
             (a[:, 1:6] @ b[2:7], x[:, 1:6] @ y[2:7]), (b.T @ a.T, y.T @ x.T), (a[::-1] @ b, x[::-1] @ y),
             (a[0] @ b, x[0] @ y), (a @ b[:, 1], x @ y[:, 1]), (a[:, 2] @ a[:, 3], x[:, 2] @ x[:, 3]),
             (a.T[::2] @ a[:, ::3], x.T[::2] @ x[:, ::3])]
    for got, want in cases:
        # float32 sums in another order (a GPU's) differ by rounding relative to the largest
        # terms, which an element that nearly cancels shows as a large relative error
        atol = 1e-5 * float(np.abs(want).max()) if rtol else 0.0
        assert_array(got, want, rtol=rtol, atol=atol)
    batch = gd.array(sample((3, 4, 5), dtype, seed=8), device=device)
    nb = host(batch)
    assert_array(batch @ batch.mT, nb @ np.swapaxes(nb, -1, -2), rtol=rtol)
    assert_array(batch.transpose(1, 0, 2) @ b[:5], nb.transpose(1, 0, 2) @ y[:5], rtol=rtol)
    assert_array(batch[:, ::2] @ batch.mT[::-1], nb[:, ::2] @ np.swapaxes(nb, -1, -2)[::-1], rtol=rtol)


def test_int64_matmul_is_exact_and_wraps(device):
    x = np.arange(-12, 12, dtype=np.int64).reshape(4, 6) * 1_000_003
    a = gd.array(x, device=device)
    assert_array(a @ a.T, x @ x.T)
    big = gd.full((2, 2), 2**62, dtype=gd.int64, device=device)
    with np.errstate(over="ignore"):
        assert_array(big @ big, np.full((2, 2), 2**62, np.int64) @ np.full((2, 2), 2**62, np.int64))
    assert_array(gd.arange(6, device=device).reshape(2, 3) @ gd.arange(3, device=device), np.arange(6).reshape(2, 3) @ np.arange(3))
    assert_array(a @ gd.ones((6, 2), device=device), x @ np.ones((6, 2), np.float32))  # int64 @ float32: float64


def test_astype_copy_and_transfers_of_views(device):
    src = np.arange(24.0).reshape(4, 6)
    a = gd.array(src, device=device)
    v, nv = a[::-1, 1::2], src[::-1, 1::2]
    assert_array(v.astype(gd.int64), nv.astype(np.int64))
    assert_array(v.copy(), nv)
    assert v.copy().is_contiguous()
    assert_array(v.to("cpu"), nv)
    assert v.tolist() == nv.tolist()
    assert repr(v).startswith("Array(")
    assert_array(gd.concatenate([v, a[:, :3]], axis=1), np.concatenate([nv, src[:, :3]], axis=1))
    assert_array(gd.stack([a.T, a.T[::-1]]), np.stack([src.T, src.T[::-1]]))


# ---------------------------------------------------------------------------------------------
# NumPy sees the same memory
# ---------------------------------------------------------------------------------------------


def test_numpy_views_of_strided_arrays_are_zero_copy():
    src = np.arange(24.0).reshape(4, 6)
    a = gd.array(src)
    for make in (lambda x: x.T, lambda x: x[::-1, ::2], lambda x: x[:, 1], lambda x: x[None, ::3]):
        n = make(a).numpy()
        assert n.strides == make(src).strides
        assert np.shares_memory(n, a.numpy())
        np.testing.assert_array_equal(n, make(src))
    m = memoryview(a.T)
    assert m.strides == src.T.strides and not m.c_contiguous
    assert m.tobytes() == src.T.tobytes()
    with pytest.raises(BufferError, match=r"strided view, not C-contiguous"):
        zlib.crc32(a.T)  # asks for a plain C-contiguous buffer
    assert zlib.crc32(a.T.contiguous()) == zlib.crc32(np.ascontiguousarray(src.T))


def test_asarray_borrows_strided_numpy_memory():
    src = np.arange(24.0).reshape(4, 6)
    for view in (src[:, ::2], src.T, src[::-1], np.broadcast_to(src[0], (3, 6)).copy()[:, 1::2]):
        a = gd.asarray(view)
        assert a.strides == view.strides
        assert np.shares_memory(a.numpy(), view)
        assert_array(a + 1, view + 1)
    ro = src[:, ::2].copy()
    ro.flags.writeable = False
    assert not np.shares_memory(gd.asarray(ro).numpy(), ro)  # gpudev arrays are writable: a copy


@pytest.mark.gpu
def test_cuda_array_interface_states_strides(cuda0):
    a = gd.arange(24.0, device=cuda0).reshape(4, 6)
    assert a.__cuda_array_interface__["strides"] is None
    v = a.T[::2]
    cai = v.__cuda_array_interface__
    assert cai["strides"] == v.strides and cai["shape"] == v.shape


# ---------------------------------------------------------------------------------------------
# stride arithmetic cannot overflow
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_empty_arrays_with_huge_axes(device, dtype):
    """Strides of an empty array with huge other axes do not fit in int64; none of them may
    overflow (the sanitizer run checks), and none is ever used to address memory."""
    a = gd.zeros((0, 2**62, 2**62), dtype=dtype, device=device)
    assert a.size == 0 and a.is_contiguous()
    for v in (a.T, a[:, 2**61], a[:, ::2**61, ::-3], a[..., None], a.transpose(1, 2, 0), a[:, 1:, :-1].mT,
              a.reshape(2**62, 0, 2**62), a.ravel(), a.swapaxes(0, 1)[2**60:]):
        assert v.size == 0 and len(v.strides) == v.ndim
        assert (v + 1).shape == v.shape and (v.T * v.T).shape == v.shape[::-1]
        nonempty = tuple(k for k in range(v.ndim) if v.shape[k])  # reducing those leaves an empty result
        assert v.sum(axis=nonempty).size == 0 and v.max(axis=nonempty).size == 0 and v.contiguous().shape == v.shape
        v[...] = 1
        v += 1
    b = gd.zeros((2**40, 0), dtype=dtype, device=device)
    x = b[::-(2**20)]
    assert (x.T @ x).shape == (0, 0)
    assert gd.from_dlpack(a).shape == a.shape
    small = a[:, :3, ::2**60]  # NumPy can hold this one
    assert small.shape == (0, 3, 4)
    assert host(small).shape == (0, 3, 4)
    if not is_gpu(device):
        assert np.asarray(a[:, :2, :5].T).shape == (5, 2, 0)


def test_big_steps_and_indices_on_small_arrays(device):
    src = np.arange(10.0)
    a = gd.array(src, device=device)
    for index in [slice(None, None, 2**62), slice(None, None, -(2**62)), slice(2**62, None), slice(-(2**63), 2**63, 3)]:
        assert_array(a[index], src[index])
    with pytest.raises(IndexError, match=r"index 4611686018427387904 is out of bounds for axis 0 with size 10"):
        a[2**62]
