"""Creating arrays: zeros/ones/empty/full/arange and array/asarray from Python objects, NumPy
arrays and gpudev arrays, with dtype conversion rules and devices."""

from __future__ import annotations

import numpy as np
import pytest

import gpudev as gd
from conftest import CPU, DTYPE_IDS, DTYPES, I32, INT32_EDGES, Array, assert_array, host, is_gpu

SHAPES = [(), (0,), (1,), (7,), (3, 4), (2, 0, 3), (72, 73, 74)]
SHAPE_IDS = [str(s) for s in SHAPES]


def test_dtypes_are_numpy_scalar_types():
    assert gd.float32 is np.float32
    assert gd.float64 is np.float64
    assert gd.int64 is np.int64


# ---------------------------------------------------------------------------------------------
# zeros, ones, empty, full
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_zeros_ones_full(device, shape, dtype):
    assert_array(gd.zeros(shape, dtype=dtype, device=device), np.zeros(shape, dtype), device=device)
    assert_array(gd.ones(shape, dtype=dtype, device=device), np.ones(shape, dtype), device=device)
    assert_array(gd.full(shape, 7, dtype=dtype, device=device), np.full(shape, 7, dtype), device=device)


@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
def test_empty_has_shape_dtype_device(device, shape):
    for dtype in DTYPES:
        a = gd.empty(shape, dtype=dtype, device=device)
        assert a.shape == shape
        assert a.dtype == dtype
        assert a.device == device
        assert a.nbytes == int(np.prod(shape)) * np.dtype(dtype).itemsize


def test_creation_defaults_to_float32_on_the_cpu():
    for a in (gd.zeros(3), gd.ones(3), gd.empty(3), gd.full(3, 1.5), gd.rand(3), gd.randn(3)):
        assert a.dtype == np.float32
        assert a.device == gd.cpu()


@pytest.mark.parametrize("shape", [5, (5,), [2, 3], (2, 3), ()], ids=["int", "tuple1", "list", "tuple2", "empty"])
def test_shape_arguments(shape):
    expected = (shape,) if isinstance(shape, int) else tuple(shape)
    assert gd.zeros(shape).shape == expected
    assert gd.ones(shape).shape == expected
    assert gd.full(shape, 2.0).shape == expected


def test_numpy_integer_shapes_are_accepted():
    assert gd.zeros((np.int64(2), np.int32(3))).shape == (2, 3)
    assert gd.zeros(np.int64(4)).shape == (4,)


@pytest.mark.parametrize(
    "spec", [gd.float64, np.float64, np.dtype("float64"), "float64"], ids=["gd", "np", "np.dtype", "str"]
)
def test_dtype_argument_forms(spec):
    assert gd.zeros(2, dtype=spec).dtype == np.float64
    assert gd.array([1, 2], dtype=spec).dtype == np.float64


def test_full_converts_the_value_to_the_dtype(device):
    assert_array(gd.full((2, 2), 2.75, dtype=gd.int64, device=device), np.full((2, 2), 2, np.int64))
    assert_array(gd.full(3, -1.5, device=device), np.full(3, -1.5, np.float32))
    assert_array(gd.full(3, 1 / 3, dtype=gd.float64, device=device), np.full(3, 1 / 3))
    big = 2**53 + 1  # exactly representable as int64, not as float64
    assert gd.full(1, big, dtype=gd.int64, device=device).item() == big


# ---------------------------------------------------------------------------------------------
# arange
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [(5,), (0,), (2, 10), (2, 10, 3), (10, 0, -2), (5, 1), (-3, 3), (0, 1000003, 7)],
    ids=str,
)
def test_arange_ints(device, args):
    assert_array(gd.arange(*args, device=device), np.arange(*args), device=device)


@pytest.mark.parametrize("args", [(0.0, 1.0, 0.1), (1.5,), (-1.0, 1.0, 0.25), (3, 0.0, -0.5)], ids=str)
def test_arange_floats_default_to_float32(device, args):
    assert_array(gd.arange(*args, device=device), np.arange(*args).astype(np.float32), device=device)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_arange_dtype(device, dtype):
    assert_array(gd.arange(0, 20, 3, dtype=dtype, device=device), np.arange(0, 20, 3, dtype=dtype))
    assert_array(gd.arange(1000, dtype=dtype, device=device), np.arange(1000, dtype=dtype))


def test_arange_large_float32_is_computed_in_double(device):
    # start + i * step evaluated in double then rounded: no accumulated drift
    got = gd.arange(0.0, 1e5, 0.1, dtype=gd.float32, device=device)
    assert_array(got, np.arange(0.0, 1e5, 0.1).astype(np.float32), rtol=0)


# ---------------------------------------------------------------------------------------------
# array / asarray from Python objects
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "obj, dtype",
    [
        (3, np.int64),
        (2.5, np.float32),
        (True, np.bool_),
        ([1, 2, 3], np.int64),
        ([1.0, 2, 3], np.float32),
        ([[1, 2], [3, 4]], np.int64),
        ([[1, 2.5], [3, 4]], np.float32),
        ([True, False], np.bool_),
        ([], np.float32),
        ([[], []], np.float32),
        ([[[1]], [[2]]], np.int64),
    ],
    ids=str,
)
def test_array_from_python(device, obj, dtype):
    assert_array(gd.array(obj, device=device), np.array(obj, dtype=dtype), device=device)
    assert_array(gd.asarray(obj, device=device), np.array(obj, dtype=dtype), device=device)


def test_array_from_python_with_dtype(device):
    assert_array(gd.array([1.7, -2.7, 0.5], dtype=gd.int64, device=device), np.array([1, -2, 0]))
    assert_array(gd.array([1, 2], dtype=gd.float64, device=device), np.array([1.0, 2.0]))
    assert_array(gd.array(1.0 / 3.0, dtype=gd.float64, device=device), np.array(1.0 / 3.0))


def test_array_keeps_int64_extremes(device):
    values = [2**63 - 1, -(2**63), 2**53 + 1]
    assert gd.array(values, device=device).tolist() == values


@pytest.mark.parametrize(
    "np_dtype, gd_dtype",
    [
        (np.float32, np.float32),
        (np.float64, np.float64),
        (np.int64, np.int64),
        (np.bool_, np.bool_),
        (np.int8, np.int64),
        (np.int16, np.int64),
        (np.int32, np.int32),
        (np.uint8, np.int64),
        (np.uint16, np.int64),
        (np.uint32, np.int64),
        (np.float16, np.float32),
    ],
    ids=lambda t: np.dtype(t).name,
)
def test_array_from_numpy_dtype_rules(device, np_dtype, gd_dtype):
    src = np.array([[0, 1, 2], [3, 4, 5]]).astype(np_dtype)
    if np_dtype == np.uint32:
        src[0, 0] = 2**32 - 1  # must survive the widening to int64
    assert_array(gd.array(src, device=device), src.astype(gd_dtype), device=device)
    assert_array(gd.asarray(src, device=device), src.astype(gd_dtype), device=device)


def test_array_from_numpy_scalars():
    assert gd.array(np.float64(1.5)).dtype == np.float64
    assert gd.array(np.float32(1.5)).dtype == np.float32
    assert gd.array(np.int32(7)).dtype == np.int32
    assert gd.array(np.int16(7)).dtype == np.int64
    assert gd.array(np.float64(1.5)).shape == ()


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_array_copies_numpy_input(device, dtype):
    src = np.arange(6, dtype=dtype).reshape(2, 3)
    a = gd.array(src, device=device)
    src[0, 0] = 100
    assert_array(a, np.arange(6, dtype=dtype).reshape(2, 3))


def test_asarray_is_zero_copy_for_matching_cpu_numpy():
    src = np.arange(6, dtype=np.float32).reshape(2, 3)
    a = gd.asarray(src)
    assert a.shape == (2, 3) and a.dtype == np.float32
    src[1, 2] = -4.0  # visible through the gpudev array
    assert a[1, 2].item() == -4.0
    a[0] = 9.0  # and the other way round
    np.testing.assert_array_equal(src[0], [9.0, 9.0, 9.0])
    assert np.shares_memory(np.asarray(a), src)


def test_asarray_keeps_the_numpy_buffer_alive():
    a = gd.asarray(np.arange(1000, dtype=np.int64))  # the only reference to the buffer
    np.testing.assert_array_equal(a.numpy(), np.arange(1000))


def test_asarray_copies_when_it_must():
    src = np.arange(12, dtype=np.float64).reshape(3, 4)
    strided = src[:, ::2]  # not contiguous
    a = gd.asarray(strided)
    assert_array(a, strided)
    converted = gd.asarray(src.astype(np.int16))  # dtype changes: a copy
    assert_array(converted, src.astype(np.int64))
    f32 = gd.asarray(src, dtype=gd.float32)
    src[0, 0] = 50.0
    assert f32[0, 0].item() == 0.0


def test_asarray_of_a_fortran_array():
    src = np.asfortranarray(np.arange(12, dtype=np.float32).reshape(3, 4))
    assert_array(gd.asarray(src), np.ascontiguousarray(src))


def test_asarray_of_an_array_is_the_same_array(device):
    a = gd.ones(3, device=device)
    assert gd.asarray(a) is a
    assert gd.asarray(a, device=device) is a
    assert gd.asarray(a, dtype=gd.float32) is a
    b = gd.asarray(a, dtype=gd.float64)
    assert b is not a and b.dtype == np.float64
    assert_array(b, np.ones(3))


def test_array_of_an_array_copies(device):
    a = gd.arange(4, device=device)
    b = gd.array(a)
    assert b is not a
    assert b.device == device
    b[0] = 10
    assert_array(a, np.arange(4))
    assert_array(b, np.array([10, 1, 2, 3]))


def test_array_moves_between_devices_when_asked(device):
    a = gd.array([1.0, 2.0, 3.0])
    b = gd.array(a, device=device)
    assert b.device == device
    assert_array(b, np.array([1.0, 2.0, 3.0], np.float32))
    c = gd.asarray(b, device=CPU)
    assert c.device == CPU
    assert_array(c, host(a))


@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_array_roundtrip_numpy(device, shape, dtype):
    src = np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)
    a = gd.array(src, device=device)
    assert isinstance(a, Array)
    assert_array(a, src, device=device)
    if is_gpu(device):
        assert_array(a, host(gd.array(src)))


# ---------------------------------------------------------------------------------------------
# int32: the dtype, making arrays, conversions, Python numbers that do not fit
# ---------------------------------------------------------------------------------------------

def test_the_int32_dtype():
    assert gd.int32 is np.int32 and "int32" in gd.__all__
    assert gd.iinfo(gd.int32).min == I32.min and gd.iinfo(gd.int32).bits == 32
    assert np.dtype(gd.int32).itemsize == 4


def test_int32_creation(device):
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
    assert_array(gd.asarray(INT32_EDGES, device=device), INT32_EDGES)
    assert_array(gd.zeros_like(gd.asarray(INT32_EDGES, device=device)), np.zeros_like(INT32_EDGES))


def test_int32_numpy_round_trips():
    a = gd.asarray(INT32_EDGES)
    assert a.dtype == gd.int32 and np.shares_memory(a.numpy(), INT32_EDGES)  # zero-copy, as for int64
    assert a.numpy().dtype == np.int32 and np.asarray(a).dtype == np.int32
    assert gd.array(np.int32(-7)).dtype == gd.int32 and gd.array(np.int32(-7)).item() == -7
    assert isinstance(a[0].item(), int) and a[0].item() == I32.min and a.tolist() == INT32_EDGES.tolist()
    assert "int32" in repr(gd.asarray(np.array([1, 2], np.int32)))
    assert memoryview(a).format == "i" and memoryview(a).itemsize == 4


def test_int32_astype(device):
    f = np.array([-2.7, -0.5, 0.5, 2.7, 3e9, -3e9, np.nan, np.inf], np.float64)
    x = gd.asarray(f, device=device)
    with np.errstate(invalid="ignore"):
        want = f.astype(np.int32)
    assert_array(x.astype(gd.int32), want)
    big = np.array([2**31, -(2**31) - 1, 2**40 + 5, -1], np.int64)
    assert_array(gd.asarray(big, device=device).astype(gd.int32), big.astype(np.int32))  # low 32 bits
    e = gd.asarray(INT32_EDGES, device=device)
    for dt in (gd.float32, gd.float64, gd.int64, gd.bool):
        assert_array(e.astype(dt), INT32_EDGES.astype(dt))
    assert_array(gd.asarray([True, False], device=device).astype(gd.int32), np.array([1, 0], np.int32))


def test_int32_array_from_python_numbers_that_do_not_fit():
    with pytest.raises(OverflowError, match=r"array: a number in the input does not fit in int32 .*gd\.int64"):
        gd.array([1, 2**31], dtype=gd.int32)
    with pytest.raises(OverflowError, match=r"does not fit in int32"):
        gd.array([1.0, 3e9], dtype=gd.int32)
    assert gd.array([1.9, -1.9], dtype=gd.int32).tolist() == np.array([1.9, -1.9], dtype=np.int32).tolist()
    with pytest.raises(OverflowError, match=r"full: fill_value 2147483648 does not fit in int32"):
        gd.full(2, 2**31, dtype=gd.int32)
    with pytest.raises(OverflowError, match=r"arange: .* do not fit in int32; use dtype=gd.int64"):
        gd.arange(2**31 - 2, 2**31 + 2, dtype=gd.int32)


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
