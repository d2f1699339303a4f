"""DLPack interchange: gd.from_dlpack(x), a.__dlpack__(), a.__dlpack_device__().

NumPy is the partner on the CPU; PyTorch and CuPy, where installed, on a GPU. Memory is shared
both ways (a write on one side shows on the other), either side may be deleted first, and bad
input raises the error the array API standard names. A small producer and consumer written
with ctypes check the C structs field by field and reach the cases NumPy never exports
(byte_offset, NULL strides, foreign versions, read-only flags).
"""

from __future__ import annotations

import ctypes
import gc
import threading
import weakref

import numpy as np
import pytest

import gpudev as gd
from conftest import DTYPE_IDS, DTYPES, INT32_EDGES, NO_GPU, NUM_GPUS, assert_array, is_gpu, sample

SHAPES = [(), (0,), (7,), (1, 1, 5), (2, 0, 3), (72, 73)]

# ---------------------------------------------------------------------------------------------
# the DLPack 1.0 ABI in ctypes, and capsule access through the C API
# ---------------------------------------------------------------------------------------------

kDLCPU, kDLCUDA, kDLROCM = 1, 2, 10
kDLInt, kDLUInt, kDLFloat, kDLBfloat, kDLComplex, kDLBool = 0, 1, 2, 4, 5, 6
READ_ONLY, IS_COPIED = 1, 2


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)  # releases the GIL while it runs


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", DELETER)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [
        ("version", DLPackVersion),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", DELETER),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", DLTensor),
    ]


# capsule names live as long as this module, as C requires of them
LEGACY, VERSIONED = b"dltensor", b"dltensor_versioned"
USED = {LEGACY: b"used_dltensor", VERSIONED: b"used_dltensor_versioned"}

_api = ctypes.pythonapi
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_SetName.restype = ctypes.c_int
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_GetName.restype = ctypes.c_char_p
_api.PyCapsule_GetName.argtypes = [ctypes.py_object]


def managed(capsule) -> DLManagedTensor | DLManagedTensorVersioned:
    """The struct inside an unconsumed capsule, read in place (the capsule keeps ownership)."""
    name = _api.PyCapsule_GetName(capsule)
    kind = DLManagedTensorVersioned if name == VERSIONED else DLManagedTensor
    return kind.from_address(_api.PyCapsule_GetPointer(capsule, name))


def tensor_fields(t: DLTensor) -> dict:
    return {
        "device": (t.device.device_type, t.device.device_id),
        "dtype": (t.dtype.code, t.dtype.bits, t.dtype.lanes),
        "shape": tuple(t.shape[i] for i in range(t.ndim)),
        "strides": tuple(t.strides[i] for i in range(t.ndim)) if t.strides else None,
        "byte_offset": t.byte_offset,
    }


class Producer:
    """A DLPack producer built by hand: exactly the tensor a test describes, over `buf`'s
    memory. Counts deleter calls; its capsule has no destructor, so an unconsumed capsule
    leaves the count alone."""

    def __init__(self, buf: np.ndarray, shape, strides=None, *, dtype=(kDLFloat, 64, 1), byte_offset=0,
                 versioned=True, major=1, flags=0, device=(kDLCPU, 0), reported_device=None):
        self.buf = buf
        self.device = reported_device or device
        self.deleted = 0
        self._shape = (ctypes.c_int64 * max(len(shape), 1))(*shape)
        self._strides = None if strides is None else (ctypes.c_int64 * max(len(strides), 1))(*strides)
        self._deleter = DELETER(self._delete)
        t = DLTensor(buf.ctypes.data, DLDevice(*device), len(shape), DLDataType(*dtype),
                     ctypes.cast(self._shape, ctypes.POINTER(ctypes.c_int64)),
                     None if strides is None else ctypes.cast(self._strides, ctypes.POINTER(ctypes.c_int64)),
                     byte_offset)
        if versioned:
            self.managed = DLManagedTensorVersioned(DLPackVersion(major, 0), None, self._deleter, flags, t)
        else:
            self.managed = DLManagedTensor(t, None, self._deleter)
        self.capsule = _api.PyCapsule_New(ctypes.addressof(self.managed), VERSIONED if versioned else LEGACY, None)

    def _delete(self, _self_ptr: int) -> None:
        self.deleted += 1

    def __dlpack__(self, **kwargs) -> object:
        return self.capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.device


def released(ref: weakref.ref) -> bool:
    """Whether the object behind `ref` is gone once garbage is collected."""
    gc.collect()
    return ref() is None


# ---------------------------------------------------------------------------------------------
# __dlpack_device__ and the exported structs
# ---------------------------------------------------------------------------------------------


def test_dlpack_device(device):
    a = gd.zeros(3, device=device)
    want = (kDLCUDA, device.index) if is_gpu(device) else (kDLCPU, 0)
    assert a.__dlpack_device__() == want
    assert all(type(v) is int for v in a.__dlpack_device__())


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("max_version", [None, (0, 8), (1, 0), (1, 3), (2, 0)], ids=str)
def test_exported_struct(device, shape, dtype, max_version):
    a = gd.zeros(shape, dtype=dtype, device=device)
    capsule = a.__dlpack__(max_version=max_version)
    versioned = max_version is not None and max_version[0] >= 1
    assert _api.PyCapsule_GetName(capsule) == (VERSIONED if versioned else LEGACY)
    m = managed(capsule)
    if versioned:
        assert (m.version.major, m.version.minor) == (1, 0)
        assert m.flags == 0
    kind = {np.dtype(np.float32): (kDLFloat, 32, 1), np.dtype(np.float64): (kDLFloat, 64, 1),
            np.dtype(np.int64): (kDLInt, 64, 1), np.dtype(np.int32): (kDLInt, 32, 1)}[np.dtype(dtype)]
    # C-order strides in elements, axes of length 0 counted as 1 (NumPy's convention)
    strides, step = [], 1
    for n in reversed(shape):
        strides.insert(0, step)
        step *= max(n, 1)
    assert tensor_fields(m.dl_tensor) == {
        "device": a.__dlpack_device__(),
        "dtype": kind,
        "shape": shape,
        "strides": tuple(strides),
        "byte_offset": 0,
    }
    if not is_gpu(device) and a.size:
        assert m.dl_tensor.data == a.numpy().ctypes.data


def test_export_of_a_view_points_into_the_base():
    a = gd.arange(12).reshape(3, 4)
    v = a[1]
    m = managed(v.__dlpack__(max_version=(1, 0)))
    assert m.dl_tensor.data == a.numpy().ctypes.data + 4 * 8
    n = np.from_dlpack(v)
    n[0] = -5
    assert a[1, 0].item() == -5


def test_copy_true_exports_a_fresh_copy(device):
    a = gd.arange(6.0, device=device)
    capsule = a.__dlpack__(max_version=(1, 0), copy=True)
    m = managed(capsule)
    assert m.flags == IS_COPIED
    if not is_gpu(device):
        assert m.dl_tensor.data != a.numpy().ctypes.data
        n = np.from_dlpack(a, copy=True)
        n[0] = 100
        assert a[0].item() == 0 and n.tolist() == [100, 1, 2, 3, 4, 5]


def test_copy_false_and_matching_dl_device_share(device):
    a = gd.arange(4, device=device)
    m = managed(a.__dlpack__(max_version=(1, 0), copy=False, dl_device=a.__dlpack_device__(), stream=None))
    assert m.flags == 0
    if not is_gpu(device):
        assert m.dl_tensor.data == a.numpy().ctypes.data


# ---------------------------------------------------------------------------------------------
# NumPy round trips, both ways
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_numpy_from_gpudev_shares_memory(shape, dtype):
    ref = sample(shape, dtype, seed=1)
    a = gd.array(ref)
    n = np.from_dlpack(a)
    assert n.shape == shape and n.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(n, ref)
    if a.size:
        assert np.shares_memory(n, a.numpy())
        n.reshape(-1)[-1] = 7
        assert a.numpy().reshape(-1)[-1] == 7


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_gpudev_from_numpy_shares_memory(shape, dtype):
    x = sample(shape, dtype, seed=2)
    expected = x.copy()
    g = gd.from_dlpack(x)
    assert isinstance(g, gd.Array) and g.device == gd.cpu()
    assert g.shape == shape and g.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(g.numpy(), expected)
    if x.size:
        assert np.shares_memory(g.numpy(), x)
        x.reshape(-1)[0] = 5  # a write through NumPy ...
        assert g.numpy().reshape(-1)[0] == 5  # ... is seen by gpudev
        g += 1  # and a gpudev write by NumPy
        np.testing.assert_array_equal(x.reshape(-1)[1:], expected.reshape(-1)[1:] + 1)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_round_trip_through_both_keeps_one_buffer(dtype):
    x = sample((5, 6), dtype, seed=3)
    back = np.from_dlpack(gd.from_dlpack(x))
    assert np.shares_memory(back, x)
    a = gd.array(sample((4, 3), dtype, seed=4))
    again = gd.from_dlpack(np.from_dlpack(a))
    assert np.shares_memory(again.numpy(), a.numpy())
    np.testing.assert_array_equal(again.numpy(), a.numpy())


def test_contiguous_views_import_without_copy():
    x = np.arange(24.0).reshape(4, 6)
    for view in (x[1:3], x[2], x[:, None, :], x[3:4, :]):
        g = gd.from_dlpack(view)
        assert g.shape == view.shape and np.shares_memory(g.numpy(), x)
        np.testing.assert_array_equal(g.numpy(), view)


def test_gpudev_array_passes_through(device):
    a = gd.ones(3, device=device)
    assert gd.from_dlpack(a) is a


def test_operations_on_imported_arrays():
    x = sample((7, 5), np.float32, seed=5)
    y = sample((5, 3), np.float32, seed=6)
    got = gd.from_dlpack(x) @ gd.from_dlpack(y) + gd.from_dlpack(y)[2:].sum(axis=0)
    np.testing.assert_allclose(got.numpy(), x @ y + y[2:].sum(axis=0), rtol=1e-5, atol=1e-5)


def test_read_only_numpy_array_is_copied():
    x = np.arange(5.0)
    x.flags.writeable = False
    g = gd.from_dlpack(x)
    assert not np.shares_memory(g.numpy(), x)
    g[0] = 42.0
    assert x[0] == 0.0 and g.numpy().tolist() == [42.0, 1.0, 2.0, 3.0, 4.0]


def test_misaligned_numpy_array_is_copied():
    raw = bytearray(8 * 5 + 1)
    x = np.frombuffer(raw, dtype=np.float64, offset=1, count=5)
    assert not x.flags.aligned
    x[:] = np.arange(5.0)
    g = gd.from_dlpack(x)
    assert g.numpy().ctypes.data % 8 == 0
    np.testing.assert_array_equal(g.numpy(), np.arange(5.0))


# ---------------------------------------------------------------------------------------------
# lifetimes
# ---------------------------------------------------------------------------------------------


def test_numpy_keeps_exported_gpudev_array_alive():
    a = gd.arange(1000.0)
    n = np.from_dlpack(a)
    ref = weakref.ref(a)
    del a
    assert not released(ref)
    np.testing.assert_array_equal(n, np.arange(1000.0))
    del n
    assert released(ref)


def test_gpudev_keeps_imported_numpy_array_alive():
    x = np.arange(1000.0)
    g = gd.from_dlpack(x)
    ref = weakref.ref(x)
    del x
    assert not released(ref)
    v = g[500:]  # a view of an import keeps the import's memory alive too
    del g
    assert not released(ref)
    np.testing.assert_array_equal(v.numpy(), np.arange(500.0, 1000.0))
    del v
    assert released(ref)


@pytest.mark.parametrize("max_version", [None, (1, 0)], ids=["legacy", "versioned"])
def test_unconsumed_capsule_releases_the_array(max_version):
    a = gd.ones(100)
    capsule = a.__dlpack__(max_version=max_version)
    ref = weakref.ref(a)
    del a
    assert not released(ref)
    del capsule
    assert released(ref)


@pytest.mark.parametrize("max_version", [None, (1, 0)], ids=["legacy", "versioned"])
def test_deleter_runs_on_a_thread_without_the_gil(max_version):
    a = gd.ones(100)
    capsule = a.__dlpack__(max_version=max_version)
    name = _api.PyCapsule_GetName(capsule)
    ptr = _api.PyCapsule_GetPointer(capsule, name)
    m = managed(capsule)
    assert _api.PyCapsule_SetName(capsule, USED[name]) == 0  # consumed: the tensor is ours now
    ref = weakref.ref(a)
    del a, capsule  # a used capsule must not delete the tensor again
    assert not released(ref)
    worker = threading.Thread(target=m.deleter, args=(ptr,))  # ctypes drops the GIL for the call
    worker.start()
    worker.join()
    assert released(ref)


def test_imported_tensor_is_deleted_once_after_the_last_view():
    buf = np.arange(10.0)
    p = Producer(buf, (2, 5))
    g = gd.from_dlpack(p)
    v = g[1]
    del g
    gc.collect()
    assert p.deleted == 0
    np.testing.assert_array_equal(v.numpy(), [5.0, 6.0, 7.0, 8.0, 9.0])
    del v
    gc.collect()
    assert p.deleted == 1
    assert _api.PyCapsule_GetName(p.capsule) == USED[VERSIONED]


# ---------------------------------------------------------------------------------------------
# producers NumPy never makes: byte_offset, NULL strides, odd strides, versions, flags
# ---------------------------------------------------------------------------------------------


def test_byte_offset_is_applied():
    buf = np.arange(10.0)
    p = Producer(buf, (4,), (1,), byte_offset=2 * 8)
    g = gd.from_dlpack(p)
    np.testing.assert_array_equal(g.numpy(), [2.0, 3.0, 4.0, 5.0])
    buf[2] = 99.0
    assert g[0].item() == 99.0


def test_legacy_tensor_with_null_strides_is_c_contiguous():
    buf = np.arange(12, dtype=np.int64)
    p = Producer(buf, (3, 4), None, dtype=(kDLInt, 64, 1), versioned=False)
    g = gd.from_dlpack(p)
    np.testing.assert_array_equal(g.numpy(), buf.reshape(3, 4))
    assert np.shares_memory(g.numpy(), buf)
    assert _api.PyCapsule_GetName(p.capsule) == USED[LEGACY]
    del g
    gc.collect()
    assert p.deleted == 1


def test_any_stride_on_axes_of_length_one():
    buf = np.arange(10.0, dtype=np.float32)
    g = gd.from_dlpack(Producer(buf, (2, 1, 5), (5, 12345, 1), dtype=(kDLFloat, 32, 1)))
    np.testing.assert_array_equal(g.numpy(), buf.reshape(2, 1, 5))


def test_read_only_flag_makes_a_copy_and_returns_the_tensor():
    buf = np.arange(6.0)
    p = Producer(buf, (6,), (1,), flags=READ_ONLY)
    g = gd.from_dlpack(p)
    assert p.deleted == 1  # copied, so handed back at once
    assert not np.shares_memory(g.numpy(), buf)
    g[0] = -1.0
    assert buf[0] == 0.0


def test_other_major_version_is_refused():
    p = Producer(np.zeros(3), (3,), (1,), major=2)
    with pytest.raises(BufferError, match=r"from_dlpack: Producer exported DLPack 2\.0; gpudev reads DLPack 1\.x"):
        gd.from_dlpack(p)
    assert _api.PyCapsule_GetName(p.capsule) == VERSIONED  # still the producer's


@pytest.mark.parametrize(
    "shape, strides",
    [((5,), (2,)), ((2, 3), (1, 2)), ((2, 2), (3, 2)), ((3, 2), (0, 1)), ((4,), (-1,))],
    ids=["step", "fortran", "gap", "broadcast", "reversed"],
)
def test_strided_producer_is_shared_with_its_strides(shape, strides):
    buf = np.arange(16.0)
    offset = 3 if strides[0] < 0 else 0
    p = Producer(buf[offset:], shape, strides)
    g = gd.from_dlpack(p)
    expected = np.lib.stride_tricks.as_strided(buf[offset:], shape, [8 * s for s in strides])
    assert_array(g, expected)
    assert g.strides == tuple(8 * s for s in strides)
    assert _api.PyCapsule_GetName(p.capsule) == USED[VERSIONED]
    buf[offset] = -1.0  # the same memory
    assert g.numpy().flat[0] == -1.0


def test_strides_reaching_beyond_int64_are_refused():
    p = Producer(np.zeros(4), (2, 2), (2**62, 1))
    with pytest.raises(ValueError, match=r"from_dlpack: the strides \(4611686018427387904, 1\) .* reach beyond 2\*\*63"):
        gd.from_dlpack(p)
    assert _api.PyCapsule_GetName(p.capsule) == VERSIONED  # still the producer's


@pytest.mark.parametrize(
    "dtype, name",
    [((kDLBfloat, 16, 1), "bfloat16"), ((kDLFloat, 32, 4), "float32x4"), ((kDLUInt, 64, 1), "uint64"),
     ((99, 8, 1), r"\(type code 99, 8 bits\)")],
    ids=["bfloat16", "lanes", "uint64", "unknown"],
)
def test_unsupported_dlpack_dtype_is_named(dtype, name):
    with pytest.raises(TypeError, match=rf"from_dlpack: dtype {name} is not supported"):
        gd.from_dlpack(Producer(np.zeros(4), (2,), (1,), dtype=dtype))


def test_shape_limits():
    with pytest.raises(ValueError, match="from_dlpack: the tensor has 17 dimensions; gpudev supports at most 16"):
        gd.from_dlpack(Producer(np.zeros(1), (1,) * 17, (1,) * 17))
    with pytest.raises(ValueError, match=r"from_dlpack: the tensor has a negative dimension, shape \(2, -1\)"):
        gd.from_dlpack(Producer(np.zeros(1), (2, -1), (1, 1)))


def test_producer_contradicting_itself_is_refused():
    p = Producer(np.zeros(2), (2,), (1,), reported_device=(kDLCPU, 0), device=(kDLCPU, 3))
    with pytest.raises(BufferError, match=r"said \(1, 0\) but its tensor is on \(1, 3\)"):
        gd.from_dlpack(p)


# ---------------------------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dtype, name, fix",
    [(np.int16, "int16", "int64"), (np.complex64, "complex64", "float32"),
     (np.float16, "float16", "float32"), (np.uint8, "uint8", "int64")],
    ids=["int16", "complex64", "float16", "uint8"],
)
def test_unsupported_numpy_dtype(dtype, name, fix):
    with pytest.raises(TypeError, match=rf"from_dlpack: dtype {name} is not supported; .* x\.astype\('{fix}'\)"):
        gd.from_dlpack(np.zeros(3, dtype))


@pytest.mark.parametrize("make", [lambda x: x[:, ::2], lambda x: x.T, lambda x: x[::-1]], ids=["step", "T", "reversed"])
def test_numpy_views_round_trip_with_strides(make):
    src = make(np.arange(24.0).reshape(4, 6))
    g = gd.from_dlpack(src)
    assert_array(g, src)
    assert g.strides == src.strides
    assert np.shares_memory(g.numpy(), src)
    back = np.from_dlpack(g)
    assert back.strides == src.strides and np.shares_memory(back, src)


def test_strided_gpudev_views_export_their_strides(device):
    a = gd.arange(24.0, device=device).reshape(4, 6)
    for view in (a.T, a[:, ::2], a[::-1, 1:]):
        fields = tensor_fields(managed(view.__dlpack__(max_version=(1, 0))).dl_tensor)
        assert fields["shape"] == view.shape
        assert tuple(view.itemsize * s for s in fields["strides"]) == view.strides


def test_dl_device_mismatch(device):
    a = gd.zeros(3, device=device)
    other = (kDLCPU, 0) if is_gpu(device) else (kDLCUDA, 0)
    with pytest.raises(BufferError, match=r"__dlpack__: the array is on .* but dl_device=.* asks for .*a\.to\("):
        a.__dlpack__(dl_device=other)
    with pytest.raises(BufferError, match=r"asks for DLPack device type 10, which gpudev does not support"):
        a.__dlpack__(dl_device=(kDLROCM, 0))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"stream": "0"}, "__dlpack__: stream must be None or an int"),
        ({"stream": 1.5}, "__dlpack__: stream must be None or an int"),
        ({"max_version": 1}, r"__dlpack__: max_version must be None or a tuple \(major, minor\)"),
        ({"max_version": (1,)}, r"__dlpack__: max_version must be None or a tuple"),
        ({"dl_device": "cpu"}, r"__dlpack__: dl_device must be None or a tuple \(device_type, device_id\)"),
        ({"device": None}, "__dlpack__\\(\\) got an unexpected keyword argument 'device'"),
    ],
    ids=["stream-str", "stream-float", "version-int", "version-short", "dl_device-str", "unknown"],
)
def test_bad_export_arguments(kwargs, match):
    with pytest.raises(TypeError, match=match):
        gd.ones(2).__dlpack__(**kwargs)


def test_positional_export_argument_is_refused():
    with pytest.raises(TypeError, match="__dlpack__: takes keyword arguments only"):
        gd.ones(2).__dlpack__(None)


def test_integer_stream_is_accepted(device):
    a = gd.ones(2, device=device)
    if device.type == "cpu":  # the DLPack standard: CPU data has no streams, only None is valid
        with pytest.raises(ValueError, match="stream must be None"):
            a.__dlpack__(stream=-1)
        return
    assert _api.PyCapsule_GetName(a.__dlpack__(stream=-1)) == LEGACY


def test_capsule_consumed_twice_raises_instead_of_crashing():
    class Twice:
        """Hands out the same capsule every time: only the first import may succeed."""

        def __init__(self, capsule):
            self.capsule = capsule

        def __dlpack__(self, **kwargs):
            return self.capsule

        def __dlpack_device__(self):
            return (kDLCPU, 0)

    x = np.arange(4.0)
    twice = Twice(x.__dlpack__(max_version=(1, 0)))
    first = gd.from_dlpack(twice)
    with pytest.raises(BufferError, match="from_dlpack: the DLPack capsule from Twice.__dlpack__\\(\\) was already consumed"):
        gd.from_dlpack(twice)
    np.testing.assert_array_equal(first.numpy(), x)

    exported = Twice(gd.arange(3.0).__dlpack__(max_version=(1, 0)))
    np.testing.assert_array_equal(np.from_dlpack(exported), [0.0, 1.0, 2.0])
    with pytest.raises((BufferError, ValueError, RuntimeError)):
        np.from_dlpack(exported)


def test_not_a_dlpack_producer():
    with pytest.raises(TypeError, match="from_dlpack: list does not support DLPack .*gd.asarray"):
        gd.from_dlpack([1.0, 2.0])

    class NoCapsule:
        def __dlpack__(self, **kwargs):
            return "capsule"

        def __dlpack_device__(self):
            return (kDLCPU, 0)

    with pytest.raises(TypeError, match=r"from_dlpack: NoCapsule.__dlpack__\(\) returned str, not a DLPack capsule"):
        gd.from_dlpack(NoCapsule())

    class BadDevice(NoCapsule):
        def __dlpack_device__(self):
            return "cpu"

    with pytest.raises(TypeError, match=r"__dlpack_device__\(\) returned 'cpu'; expected a tuple"):
        gd.from_dlpack(BadDevice())


def test_producer_without_max_version_gets_the_legacy_call():
    class Old:
        """A producer from before DLPack 1.0 (NumPy < 2): __dlpack__(stream=None) only."""

        def __init__(self, x):
            self.x = x
            self.calls = []

        def __dlpack__(self, stream=None):
            self.calls.append(stream)
            return self.x.__dlpack__()

        def __dlpack_device__(self):
            return self.x.__dlpack_device__()

    x = np.arange(6.0)
    old = Old(x)
    g = gd.from_dlpack(old)
    assert old.calls == [None] and np.shares_memory(g.numpy(), x)


def test_foreign_device_type_is_refused():
    class Rocm:
        def __dlpack__(self, **kwargs):
            raise AssertionError("must not be asked for its data")

        def __dlpack_device__(self):
            return (kDLROCM, 0)

    with pytest.raises(BufferError, match=r"from_dlpack: the data is in ROCm memory \(DLPack device type 10\)"):
        gd.from_dlpack(Rocm())


def test_missing_gpu_is_device_unavailable():
    class OnGpu:
        def __dlpack__(self, **kwargs):
            raise AssertionError("must not be asked for its data")

        def __dlpack_device__(self):
            return (kDLCUDA, NUM_GPUS)  # one past the last GPU this machine has

    with pytest.raises(gd.DeviceUnavailableError, match=rf"from_dlpack: cuda:{NUM_GPUS} is not available"):
        gd.from_dlpack(OnGpu())


def test_failed_imports_leave_the_producer_intact():
    x = np.arange(6, dtype=np.int16)
    ref = weakref.ref(x)
    for _ in range(3):
        with pytest.raises(TypeError):
            gd.from_dlpack(x)
    np.testing.assert_array_equal(x, np.arange(6))
    del x
    assert released(ref)  # every refused capsule gave NumPy its array back


def test_trace_records_the_import():
    with gd.trace() as t:
        gd.from_dlpack(np.zeros(3))
    assert [e.name for e in t.ops] == ["from_dlpack"]


# ---------------------------------------------------------------------------------------------
# leak soak
# ---------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_round_trips_do_not_leak():
    psutil = pytest.importorskip("psutil")
    x = np.arange(12.0).reshape(3, 4)
    a = gd.arange(12).reshape(3, 4)
    bad = np.zeros(3, np.int16)

    def rounds(n: int) -> None:
        for _ in range(n):
            np.from_dlpack(gd.from_dlpack(x))  # NumPy -> gpudev -> NumPy
            gd.from_dlpack(np.from_dlpack(a))  # gpudev -> NumPy -> gpudev
            a.__dlpack__()  # capsules nobody consumes
            a.__dlpack__(max_version=(1, 0), copy=True)
            try:
                gd.from_dlpack(bad)
            except TypeError:
                pass

    rounds(5_000)
    gc.collect()
    before = psutil.Process().memory_info().rss
    rounds(100_000)
    gc.collect()
    grown = psutil.Process().memory_info().rss - before
    # one leaked export per round measured 38 MiB; even a leaked 24-byte struct per round is 3 MiB
    assert grown < 2 * 2**20, f"resident memory grew by {grown / 2**20:.1f} MiB over 100k round trips"


# ---------------------------------------------------------------------------------------------
# PyTorch and CuPy (GPU cases need a GPU and the library; CPU cases need the library)
# ---------------------------------------------------------------------------------------------


def _torch_cpu():
    return pytest.importorskip("torch")


def _torch_cuda():
    torch = pytest.importorskip("torch")
    if NUM_GPUS < 1 or not torch.cuda.is_available():
        pytest.skip(NO_GPU)
    return torch


def _cupy():
    cupy = pytest.importorskip("cupy")
    if NUM_GPUS < 1:
        pytest.skip(NO_GPU)
    return cupy


def _gpu_ptr(a) -> int:
    return a.__cuda_array_interface__["data"][0]


def test_torch_cpu_round_trip():
    torch = _torch_cpu()
    t = torch.arange(6, dtype=torch.float64)
    g = gd.from_dlpack(t)
    t[0] = 9.0
    assert g[0].item() == 9.0 and g.dtype == gd.float64
    a = gd.arange(5)
    back = torch.from_dlpack(a)
    assert back.data_ptr() == a.numpy().ctypes.data and back.tolist() == [0, 1, 2, 3, 4]
    i32 = torch.arange(3, dtype=torch.int32)
    g32 = gd.from_dlpack(i32)
    assert g32.dtype == gd.int32 and g32.tolist() == [0, 1, 2]
    assert torch.from_dlpack(g32).dtype == torch.int32
    with pytest.raises(TypeError, match="from_dlpack: dtype int16 is not supported"):
        gd.from_dlpack(torch.zeros(2, dtype=torch.int16))


@pytest.mark.gpu
def test_torch_cuda_to_gpudev_shares_and_waits_for_torch_streams(cuda0):
    torch = _torch_cuda()
    n = 1 << 24
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):  # written on a stream gpudev knows nothing about, no sync
        t = torch.empty(n, device="cuda:0")
        t.fill_(3.0)
    g = gd.from_dlpack(t)
    assert g.device == cuda0 and g.dtype == gd.float32 and g.shape == (n,)
    assert _gpu_ptr(g) == t.data_ptr()
    assert g.sum().item() == pytest.approx(3.0 * n, rel=1e-6)
    t.zero_()
    torch.cuda.synchronize()
    assert g.max().item() == 0.0


@pytest.mark.gpu
def test_gpudev_to_torch_cuda_shares_after_gpudev_work(cuda0):
    torch = _torch_cuda()
    n = 1 << 24
    a = gd.full((n,), 2.0, device=cuda0) * 3.0  # still queued on gpudev's stream
    t = torch.from_dlpack(a)
    assert t.device == torch.device("cuda:0") and t.data_ptr() == _gpu_ptr(a)
    assert t.sum().item() == pytest.approx(6.0 * n, rel=1e-6)
    ref = weakref.ref(a)
    del a
    assert not released(ref)
    del t
    torch.cuda.synchronize()
    assert released(ref)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_cupy_round_trip(cuda0, dtype):
    cp = _cupy()
    x = cp.arange(12, dtype=dtype).reshape(3, 4)
    g = gd.from_dlpack(x)
    assert g.device == cuda0 and g.shape == (3, 4) and _gpu_ptr(g) == x.data.ptr
    np.testing.assert_array_equal(g.cpu().numpy(), np.arange(12, dtype=dtype).reshape(3, 4))
    a = gd.arange(6, dtype=dtype, device=cuda0) * 2
    y = cp.from_dlpack(a)
    assert y.data.ptr == _gpu_ptr(a)
    np.testing.assert_array_equal(cp.asnumpy(y), np.arange(6, dtype=dtype) * 2)


@pytest.mark.gpu
def test_cupy_strided_gpu_view_is_shared(cuda0):
    cp = _cupy()
    src = cp.arange(16.0).reshape(4, 4)[:, ::2]
    g = gd.from_dlpack(src)
    assert g.strides == src.strides
    assert _gpu_ptr(g) == src.data.ptr
    np.testing.assert_array_equal(g.cpu().numpy(), cp.asnumpy(src))


# ---------------------------------------------------------------------------------------------
# int32: DLPack, save and load
# ---------------------------------------------------------------------------------------------

def test_int32_dlpack_and_save_load(device, tmp_path):
    x = gd.asarray(INT32_EDGES, device=device)
    if device.type == "cpu":
        back = np.from_dlpack(x)
        assert back.dtype == np.int32 and back.tolist() == INT32_EDGES.tolist()
        y = gd.from_dlpack(INT32_EDGES)
        assert y.dtype == gd.int32 and np.shares_memory(y.numpy(), INT32_EDGES)
    gd.save(x, tmp_path / "x.npy")
    assert np.load(tmp_path / "x.npy").dtype == np.int32
    z = gd.load(tmp_path / "x.npy", device=device)
    assert_array(z, INT32_EDGES, device=device)
