"""Every bad input raises the documented exception type with a message that names the
operation, the offending values and the fix; afterwards the arrays involved are unchanged
and usable, and the library keeps working."""

from __future__ import annotations

import gc
import re

import numpy as np
import pytest

import gpudev as gd
from conftest import NUM_GPUS, assert_array

# ---------------------------------------------------------------------------------------------
# the exception hierarchy
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "exc, bases",
    [
        (gd.GpudevError, (Exception,)),
        (gd.DeviceMismatchError, (gd.GpudevError, ValueError)),
        (gd.DeviceUnavailableError, (gd.GpudevError, RuntimeError)),
        (gd.OutOfMemoryError, (gd.GpudevError, MemoryError)),
        (gd.CudaError, (gd.GpudevError, RuntimeError)),
    ],
    ids=lambda x: getattr(x, "__name__", ""),
)
def test_exception_hierarchy(exc, bases):
    for base in bases:
        assert issubclass(exc, base)
    assert exc.__module__ == "gpudev"


def _still_usable(a, expected: np.ndarray) -> None:
    """`a` holds `expected` and works in a fresh operation."""
    assert_array(a, expected)
    assert_array(a + 1, expected + expected.dtype.type(1))


# ---------------------------------------------------------------------------------------------
# shapes: ValueError naming the op and the shapes
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("op, name", [(lambda a, b: a + b, "add"), (lambda a, b: a - b, "sub"),
                                      (lambda a, b: a * b, "mul"), (lambda a, b: a / b, "div"),
                                      (gd.maximum, "maximum"), (gd.minimum, "minimum")],
                         ids=["add", "sub", "mul", "div", "maximum", "minimum"])
def test_broadcast_mismatch(device, op, name):
    a = gd.ones((2, 3), device=device)
    b = gd.ones(4, device=device)
    with pytest.raises(ValueError, match=rf"{name}.*\(2, 3\).*\(4,\)"):
        op(a, b)
    _still_usable(a, np.ones((2, 3), np.float32))
    _still_usable(b, np.ones(4, np.float32))


def test_inplace_cannot_change_the_shape(device):
    a = gd.ones(3, device=device)
    with pytest.raises(ValueError, match=r"\(3,\).*\(2, 3\)|\(2, 3\).*\(3,\)"):
        a += gd.ones((2, 3), device=device)
    _still_usable(a, np.ones(3, np.float32))


def test_inplace_cannot_change_the_dtype_kind(device):
    a = gd.arange(3, device=device)
    with pytest.raises(TypeError, match=r"float64.*int64|int64.*float64"):
        a += 1.5  # NumPy: cannot cast float64 results into int64 in place
    with pytest.raises(TypeError, match=r"int64"):
        a /= 2
    _still_usable(a, np.arange(3))


def test_matmul_shape_mismatch():
    a, b = gd.ones((2, 3)), gd.ones((4, 5))
    with pytest.raises(ValueError, match=r"matmul: shapes \(2, 3\) and \(4, 5\) do not align: 3 .*!= 4"):
        gd.matmul(a, b)
    with pytest.raises(ValueError, match=r"matmul.*\(2, 3\).*\(4, 5\)"):
        a @ b
    with pytest.raises(ValueError, match=r"matmul.*\(2, 3, 4\).*\(3, 4, 2\)"):
        gd.ones((2, 3, 4)) @ gd.ones((3, 4, 2))  # batch dims 2 and 3 do not broadcast
    with pytest.raises(ValueError, match=r"matmul"):
        gd.ones(3) @ gd.ones(4)
    with pytest.raises(ValueError, match=r"matmul.*0-d|matmul.*scalar|matmul.*dimension"):
        gd.matmul(gd.array(2.0), gd.ones(3))
    _still_usable(a, np.ones((2, 3), np.float32))


@pytest.mark.parametrize("shape, new", [((2, 3), (4,)), ((2, 3), (4, -1)), ((2, 3), (-1, -1)), ((0, 3), (-1, 0))],
                         ids=str)
def test_reshape_errors(device, shape, new):
    a = gd.arange(int(np.prod(shape)), device=device).reshape(shape)
    with pytest.raises(ValueError, match=r"reshape"):
        a.reshape(new)
    _still_usable(a, np.arange(int(np.prod(shape))).reshape(shape))


def test_reshape_error_names_both_shapes(device):
    a = gd.zeros((2, 3), device=device)
    with pytest.raises(ValueError, match=r"reshape.*\(2, 3\).*\(4,\)|reshape.*size 6.*\(4,\)"):
        a.reshape(4)


def test_transpose_errors(device):
    a = gd.zeros((2, 3, 4), device=device)
    for axes in [(0, 1), (0, 1, 1), (0, 1, 3), (0, 1, 2, 3)]:
        with pytest.raises(ValueError, match=r"transpose"):
            a.transpose(axes)
    _still_usable(a, np.zeros((2, 3, 4), np.float32))


def test_concatenate_and_stack_errors(device):
    a, b = gd.ones((2, 3), device=device), gd.ones((2, 4), device=device)
    # the shapes, or (as NumPy says it) the sizes that differ along the named dimension
    with pytest.raises(ValueError, match=r"concatenate.*(\(2, 3\).*\(2, 4\)|dimension 1.*size 3.*size 4)"):
        gd.concatenate([a, b], axis=0)
    with pytest.raises(ValueError, match=r"stack.*\(2, 3\).*\(2, 4\)"):
        gd.stack([a, b])
    with pytest.raises(ValueError, match=r"concatenate.*dimensions|concatenate.*ndim"):
        gd.concatenate([a, gd.ones(3, device=device)])
    with pytest.raises(ValueError, match=r"concatenate.*empty|concatenate.*at least one"):
        gd.concatenate([])
    with pytest.raises(ValueError, match=r"stack.*empty|stack.*at least one"):
        gd.stack([])
    with pytest.raises((ValueError, IndexError), match=r"axis.*2"):
        gd.concatenate([a, a], axis=2)
    with pytest.raises(TypeError, match=r"concatenate"):
        gd.concatenate([a, np.ones((2, 3))])
    _still_usable(a, np.ones((2, 3), np.float32))


@pytest.mark.parametrize("kind", ["sum", "mean", "max", "min"])
def test_reduction_axis_errors(device, kind):
    a = gd.ones((2, 3), device=device)
    with pytest.raises((ValueError, IndexError), match=rf"{kind}.*axis 2.*2|{kind}.*2.*dimension"):
        getattr(a, kind)(axis=2)
    with pytest.raises((ValueError, IndexError), match=rf"{kind}"):
        getattr(a, kind)(axis=-3)
    with pytest.raises(ValueError, match=rf"{kind}.*repeat|{kind}.*duplicate|{kind}.*twice"):
        getattr(a, kind)(axis=(0, 0))
    with pytest.raises(TypeError, match=rf"{kind}"):
        getattr(a, kind)(axis=1.5)
    _still_usable(a, np.ones((2, 3), np.float32))


@pytest.mark.parametrize("kind", ["max", "min"])
def test_max_min_of_empty_raise(device, kind):
    a = gd.zeros((0, 3), device=device)
    with pytest.raises(ValueError, match=rf"{kind}.*(empty|zero-size)"):
        getattr(a, kind)()
    with pytest.raises(ValueError, match=rf"{kind}.*(empty|zero-size)"):
        getattr(a, kind)(axis=0)
    assert getattr(a, kind)(axis=1).shape == (0,)  # nothing is reduced over an empty axis here


def test_norm_axis_error(device):
    with pytest.raises((ValueError, IndexError), match=r"norm"):
        gd.norm(gd.ones((2, 3), device=device), axis=5)


# ---------------------------------------------------------------------------------------------
# creation: shapes, dtypes, values
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("create", [gd.zeros, gd.ones, gd.empty, lambda s, **k: gd.full(s, 1.0, **k),
                                    lambda s, **k: gd.rand(s, **k), lambda s, **k: gd.randn(s, **k)],
                         ids=["zeros", "ones", "empty", "full", "rand", "randn"])
def test_negative_dimensions(device, create):
    with pytest.raises(ValueError, match=r"negative"):
        create((2, -3), device=device)


def test_shape_errors_name_the_shape():
    with pytest.raises(ValueError, match=r"zeros.*-3"):
        gd.zeros((2, -3))
    with pytest.raises(ValueError, match=r"zeros.*16"):
        gd.zeros((1,) * 17)  # at most 16 dimensions
    with pytest.raises(TypeError, match=r"zeros.*shape"):
        gd.zeros((2, 1.5))
    with pytest.raises(TypeError, match=r"zeros.*shape"):
        gd.zeros("3")


def test_byte_size_overflow_raises_not_crashes():
    too_big = r"too (large|big)|overflow|more than 2\*\*63 bytes"
    with pytest.raises(ValueError, match=rf"zeros.*\(1099511627776, 1099511627776\).*({too_big})"):
        gd.zeros((2**40, 2**40))
    with pytest.raises(ValueError, match=rf"empty.*({too_big})"):
        gd.empty((2**31, 2**31, 2**31), dtype=gd.int64)
    with pytest.raises(ValueError, match=rf"ones.*({too_big})"):
        gd.ones((2**61, 2))  # the element count fits in int64, the byte count does not
    assert gd.zeros(3).sum().item() == 0.0


def _kernel_always_overcommits() -> bool:
    try:
        with open("/proc/sys/vm/overcommit_memory") as f:
            return f.read().strip() == "1"
    except OSError:
        return False


@pytest.mark.skipif(_kernel_always_overcommits(), reason="this kernel grants every allocation")
def test_host_out_of_memory():
    n = 1 << 42  # 16 TiB of float32: more than any host has
    with pytest.raises(gd.OutOfMemoryError, match=r"empty: .*(host|cpu)") as info:
        gd.empty(n)
    assert isinstance(info.value, MemoryError)
    assert re.search(r"16\.0 TiB|17592186044416", str(info.value)), str(info.value)
    np.testing.assert_array_equal(gd.ones(1000).numpy(), np.ones(1000, np.float32))


@pytest.mark.parametrize("bad", ["int16", np.int16, np.uint8, "complex64", "float16", str, object],
                         ids=str)
def test_unsupported_dtype_arguments(bad):
    with pytest.raises(TypeError, match=r"float32.*float64.*int64.*int32") as info:
        gd.zeros(3, dtype=bad)
    assert "zeros" in str(info.value)


@pytest.mark.parametrize(
    "src, name",
    [(np.array([1 + 2j]), "complex128"), (np.array([1], np.uint64), "uint64"), (np.array(["a"]), "str|<U1"),
     (np.array([None], dtype=object), "object"), (np.array([1.0], np.longdouble), "float128|longdouble")],
    ids=["complex128", "uint64", "str", "object", "longdouble"],
)
def test_unsupported_numpy_inputs(src, name, device):
    with pytest.raises(TypeError, match=name):
        gd.array(src, device=device)
    with pytest.raises(TypeError, match=name):
        gd.asarray(src, device=device)


@pytest.mark.parametrize("obj", [["a", "b"], [1, None], {"a": 1}, [1, [2]], object()], ids=str)
def test_unsupported_python_inputs(obj):
    with pytest.raises((TypeError, ValueError), match=r"array"):
        gd.array(obj)


def test_ragged_lists():
    with pytest.raises(ValueError, match=r"array.*ragged|array.*inhomogeneous|array.*same length"):
        gd.array([[1, 2], [3]])


def test_random_needs_a_float_dtype(device):
    with pytest.raises(TypeError, match=r"rand.*int64.*float"):
        gd.rand(3, dtype=gd.int64, device=device)
    with pytest.raises(TypeError, match=r"randn.*int64.*float"):
        gd.randn(3, dtype=gd.int64, device=device)


def test_arange_errors():
    with pytest.raises(ValueError, match=r"arange.*step.*0|arange.*zero"):
        gd.arange(0, 10, 0)
    with pytest.raises((ValueError, TypeError), match=r"arange"):
        gd.arange(float("nan"))
    with pytest.raises((ValueError, OverflowError), match=r"arange"):
        gd.arange(float("inf"))


def test_full_with_a_non_number():
    with pytest.raises(TypeError, match=r"full"):
        gd.full(3, "x")


# ---------------------------------------------------------------------------------------------
# values and operators
# ---------------------------------------------------------------------------------------------


def test_integer_to_negative_power(device):
    a = gd.arange(1, 4, device=device)
    with pytest.raises(ValueError, match=r"pow.*negative|negative.*pow"):
        a ** -1
    _still_usable(a, np.arange(1, 4))


def test_negative_integer_array_exponents_say_to_convert(device):
    # a negative exponent inside an int64 array is found by a reduction before computing
    a = gd.arange(1, 4, device=device)
    with pytest.raises(ValueError, match=r"power: Integers to negative integer powers are not allowed\. "
                                         r"\(the exponents include -3\); convert first, e\.g\. "
                                         r"a\.astype\(gd\.float64\) \*\* b"):
        2 ** -a
    with pytest.raises(ValueError, match=r"power: Integers to negative.*include -1"):
        a **= a - 2
    _still_usable(a, np.arange(1, 4))


@pytest.mark.parametrize("other", ["x", None, object()], ids=str)
def test_operators_with_foreign_types(device, other):
    a = gd.ones(2, device=device)
    with pytest.raises(TypeError):
        a + other
    with pytest.raises(TypeError):
        other * a
    with pytest.raises(TypeError):
        a += other
    _still_usable(a, np.ones(2, np.float32))


def test_item_of_a_multi_element_array(device):
    a = gd.ones((2, 3), device=device)
    with pytest.raises(ValueError, match=r"item.*size 1.*6|item.*6 elements|size 1"):
        a.item()
    with pytest.raises(ValueError, match=r"item"):
        gd.zeros(0, device=device).item()


def test_functions_reject_non_arrays():
    for fn in (gd.exp, gd.log, gd.sqrt, gd.tanh, gd.relu):
        with pytest.raises(TypeError, match=fn.__name__):
            fn("x")


def test_astype_to_an_unsupported_dtype(device):
    a = gd.ones(2, device=device)
    with pytest.raises(TypeError, match=r"astype.*int16"):
        a.astype(np.int16)
    _still_usable(a, np.ones(2, np.float32))


def test_allclose_shape_mismatch(device):
    with pytest.raises(ValueError, match=r"allclose.*\(2,\).*\(3,\)"):
        gd.allclose(gd.ones(2, device=device), gd.ones(3, device=device))


# ---------------------------------------------------------------------------------------------
# indexing: IndexError naming the index and the size
# ---------------------------------------------------------------------------------------------


def test_index_out_of_range(device):
    a = gd.arange(21, device=device).reshape(7, 3)
    with pytest.raises(IndexError, match=r"7.*axis 0.*size 7|7.*size 7"):
        a[7]
    with pytest.raises(IndexError, match=r"-8.*size 7"):
        a[-8]
    with pytest.raises(IndexError, match=r"3.*axis 1.*size 3|3.*size 3"):
        a[0, 3]
    with pytest.raises(IndexError, match=r"too many indices|3-dimensional|dimensions"):
        a[0, 0, 0]
    with pytest.raises(IndexError):
        gd.zeros((), device=device)[0]
    _still_usable(a, np.arange(21).reshape(7, 3))


def test_unsupported_indexes(device):
    a = gd.arange(12, device=device).reshape(4, 3)
    with pytest.raises(IndexError, match=r"getitem: only integers, slices .* got float"):
        a[1.5]
    with pytest.raises(IndexError, match=r"got str"):
        a["x"]
    with pytest.raises(IndexError, match=r"getitem: a bool \(True\) is not a valid index; .*a\[a > 0\]"):
        a[True]
    with pytest.raises(IndexError, match=r"getitem: an index can only have a single ellipsis"):
        a[..., ...]
    with pytest.raises(IndexError, match=r"too many indices for array: array is 2-dimensional, but 3 were indexed"):
        a[0, ::2, None, 1]
    with pytest.raises(ValueError, match=r"slice step cannot be zero"):
        a[::0]
    with pytest.raises(IndexError, match=r"setitem: only integers"):
        a[1.5] = 100
    # several index arrays: each one's range is checked, and a bad key writes nothing
    for index, axis in (((slice(None), gd.array([0, 3], device=device)), 1), (([0, 1], [0, 5]), 1),
                        (([4, 1], 1), 0), (([0, -5], 0), 0)):
        with pytest.raises(IndexError, match=rf"getitem: index -?\d is out of bounds for axis {axis} with size"):
            a[index]
        with pytest.raises(IndexError, match=rf"setitem: index -?\d is out of bounds for axis {axis}"):
            a[index] = 0
    with pytest.raises(IndexError, match=r"getitem: shape mismatch: indexing arrays could not be broadcast "
                                          r"together with shapes \(2,\) \(3,\)"):
        a[[0, 1], [0, 1, 2]]
    with pytest.raises(IndexError, match=r"getitem: only integers, slices .* got str"):
        a[[0, 1], "x"]
    assert a.tolist() == np.arange(12).reshape(4, 3).tolist()
    _still_usable(a, np.arange(12).reshape(4, 3))


def test_partial_slices_that_stay_contiguous_are_views(device):
    base = np.arange(24).reshape(2, 3, 4)
    a = gd.array(base, device=device)  # a copy: base stays the untouched reference
    for index in [(slice(0, 1), slice(1, 3)), (1, slice(1, 3)), (1, 2, slice(1, 3)), (slice(1, 2), slice(None), slice(None))]:
        view = a[index]
        np.testing.assert_array_equal(view.cpu().numpy(), base[index])
        view[...] = -1
        expected = base.copy()
        expected[index] = -1
        np.testing.assert_array_equal(a.cpu().numpy(), expected)
        a[...] = gd.array(base, device=device)


def test_setitem_errors_leave_the_target_unchanged(device):
    a = gd.arange(6.0, device=device).reshape(2, 3)
    expected = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    with pytest.raises(ValueError, match=r"\(2,\).*\(3,\)|\(3,\).*\(2,\)"):
        a[0] = gd.ones(2, device=device)
    with pytest.raises(ValueError, match=r"\(2, 3\)|\(4,\)"):
        a[:] = gd.ones(4, device=device)
    with pytest.raises(TypeError):
        a[0] = "x"
    with pytest.raises(IndexError):
        a[5] = 1.0
    _still_usable(a, expected)


# ---------------------------------------------------------------------------------------------
# devices: missing GPUs and mixed devices
# ---------------------------------------------------------------------------------------------


def test_missing_gpu_leaves_the_source_usable():
    missing = gd.Device("cuda", NUM_GPUS)
    a = gd.arange(4)
    with pytest.raises(gd.DeviceUnavailableError, match=re.escape(str(missing))):
        a.to(missing)
    with pytest.raises(gd.DeviceUnavailableError, match=re.escape(str(missing))):
        a.cuda(NUM_GPUS)
    with pytest.raises(gd.DeviceUnavailableError, match=re.escape(str(missing))):
        missing.info()
    _still_usable(a, np.arange(4))


@pytest.mark.gpu
@pytest.mark.parametrize(
    "op, name",
    [(lambda a, b: a + b, "add"), (lambda a, b: a * b, "multiply"), (lambda a, b: a @ b, "matmul"),
     (gd.maximum, "maximum"), (lambda a, b: gd.concatenate([a, b]), "concatenate"),
     (lambda a, b: gd.stack([a, b]), "stack"), (gd.allclose, "allclose")],
    ids=["add", "mul", "matmul", "maximum", "concatenate", "stack", "allclose"],
)
def test_device_mismatch_names_both_devices_and_the_fix(cuda0, op, name):
    a = gd.ones((3, 3), device=cuda0)
    b = gd.ones((3, 3))
    # sequences may say where each array is: "cuda:0 (index 0) and cpu (index 1)"
    with pytest.raises(gd.DeviceMismatchError, match=rf"{name}: .*cuda:0\b.* and cpu\b.*\.to\('cuda:0'\)") as info:
        op(a, b)
    assert isinstance(info.value, ValueError)
    with pytest.raises(gd.DeviceMismatchError, match=rf"{name}: .*cpu\b.* and cuda:0\b.*\.to\('cpu'\)"):
        op(b, a)
    _still_usable(a, np.ones((3, 3), np.float32))
    _still_usable(b, np.ones((3, 3), np.float32))


@pytest.mark.gpu
def test_setitem_and_inplace_across_devices(cuda0):
    a = gd.zeros(3, device=cuda0)
    with pytest.raises(gd.DeviceMismatchError, match=r"cuda:0.*cpu|cpu.*cuda:0"):
        a[:] = gd.ones(3)
    with pytest.raises(gd.DeviceMismatchError, match=r"cuda:0.*cpu|cpu.*cuda:0"):
        a += gd.ones(3)
    _still_usable(a, np.zeros(3, np.float32))


@pytest.mark.gpu2
def test_device_mismatch_between_two_gpus(cuda01):
    d0, d1 = cuda01
    a, b = gd.ones(4, device=d0), gd.ones(4, device=d1)
    names = " and ".join(re.escape(gd.device_label(d)) for d in cuda01)  # 'cuda:0 (emulated)' when emulated
    with pytest.raises(gd.DeviceMismatchError, match=rf"add: .*{names}.*\.to\('cuda:0'\)"):
        a + b
    _still_usable(a, np.ones(4, np.float32))


@pytest.mark.gpu
def test_gpu_out_of_memory_then_the_pool_still_works(cuda0):
    gc.collect()
    gd.synchronize()
    keep = gd.ones(1 << 20, device=cuda0)
    before = gd.memory_stats(cuda0)
    n = 1 << 40  # 4 TiB of float32: more than any GPU has
    with pytest.raises(gd.OutOfMemoryError, match=r"cuda:0") as info:
        gd.empty(n, device=cuda0)
    message = str(info.value)
    assert isinstance(info.value, MemoryError)
    assert re.search(r"4\.0 TiB|4096\.0 GiB|4398046511104", message), message
    assert re.search(r"free", message) and re.search(r"gpudev holds|held by gpudev", message), message
    after = gd.memory_stats(cuda0)
    assert after["allocated_bytes"] == before["allocated_bytes"]
    # the process and the pool go on: allocate, compute, free
    x = gd.full(1 << 22, 2.0, device=cuda0)
    assert (x * keep[:1]).sum().item() == 2.0 * (1 << 22)
    assert keep.sum().item() == float(1 << 20)
    del x
    gd.empty_cache(cuda0)
    assert gd.ones(10, device=cuda0).sum().item() == 10.0


@pytest.mark.gpu
@pytest.mark.hardware("fills a real card with 8 GiB blocks; emulated memory is host memory")
def test_many_moderate_allocations_until_oom_then_recover(cuda0):
    """Fill the card with 8 GiB blocks until it refuses; freeing them all makes room again."""
    blocks = []
    with pytest.raises(gd.OutOfMemoryError, match=r"cuda:0"):
        for _ in range(4096):  # 32 TiB: far beyond any card, so the loop ends by OOM
            blocks.append(gd.empty(1 << 31, device=cuda0))
    assert len(blocks) >= 1
    blocks.clear()
    gd.synchronize()
    gd.empty_cache(cuda0)
    y = gd.ones(1 << 31, device=cuda0)  # one 8 GiB block fits again
    assert y[: 1 << 10].sum().item() == 1024.0
