"""Arguments at the edges of what each function takes: axes beyond a C int, device strings
with a NUL inside, bools where an index is wanted, arange with float arguments and integer
dtypes or lengths that underflow, reductions over axes of length 0, Python ints and floats
beyond int64, copies made by the copy module, hostile values in messages, empty arrays too
large for NumPy, NumPy arrays as indices and allclose with infinite tolerances. Each gives
NumPy's answer or a clear exception."""

from __future__ import annotations

import copy
import pickle
import warnings

import numpy as np
import pytest

import gpudev as gd
from conftest import DEVICES, assert_array, host

# ---------------------------------------------------------------------------------------------
# axes that do not fit a C int
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("axis", [2**32, 2**32 + 1, -(2**32), 2**63 - 1, 2**63, -(2**63) - 1, 2**100])
@pytest.mark.parametrize("join", [gd.concatenate, gd.stack], ids=["concatenate", "stack"])
def test_join_axis_beyond_int_is_out_of_range(device, join, axis):
    a = gd.ones((2, 3), device=device)
    with pytest.raises(np.exceptions.AxisError, match=rf"{join.__name__}: axis -?\d+ is out of bounds"):
        join([a, a], axis=axis)


@pytest.mark.parametrize("join", [gd.concatenate, gd.stack], ids=["concatenate", "stack"])
def test_join_axis_must_be_an_int(join):
    a = gd.ones((2, 3))
    with pytest.raises(TypeError, match=rf"{join.__name__}: axis must be an int, got float"):
        join([a, a], axis=1.0)
    assert join([a, a], axis=np.int64(-1)).shape == (np.concatenate if join is gd.concatenate else np.stack)(
        [np.ones((2, 3))] * 2, axis=-1).shape


# ---------------------------------------------------------------------------------------------
# devices: equality agrees with hashing, NUL bytes, bools as GPU indices
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["cpu", "cuda:0", "cuda:1", "cuda:63"])
def test_device_equals_exactly_the_strings_it_hashes_like(name):
    d = gd.Device(name)
    assert d == name and hash(d) == hash(name)
    assert {name: 1}[d] == 1 and {d: 1}[name] == 1


@pytest.mark.parametrize("other", ["cuda", "cuda:00", "cuda:01", "CPU", "cpu ", "cuda:0\x00"])
def test_device_differs_from_other_spellings(other):
    # Device('cuda') is cuda:0, yet the string 'cuda' is not 'cuda:0': two strings, two hashes
    d = gd.Device("cuda:0") if other.startswith("cuda") else gd.cpu()
    assert d != other and not (d == other)
    assert other not in {d: 1}


@pytest.mark.parametrize("bad", ["cpu\x00junk", "cuda:1\x00zz", "cuda\x00", "\x00cpu", "cpu\x00"])
def test_device_strings_with_a_nul_are_refused(bad):
    msg = r"Device: cannot parse '.*\\x00.*'; expected 'cpu', 'cuda' or 'cuda:N'"
    with pytest.raises(ValueError, match=msg):
        gd.Device(bad)
    with pytest.raises(ValueError, match=msg):
        gd.zeros(2, device=bad)
    with pytest.raises(ValueError, match=msg):
        gd.ones(2).to(bad)


@pytest.mark.parametrize("flag", [True, False, np.bool_(True)])
def test_bools_are_not_gpu_indices(flag):
    for call, op in [(lambda: gd.gpu(flag), "gpu"), (lambda: gd.try_gpu(flag), "try_gpu"),
                     (lambda: gd.ones(2).cuda(flag), "cuda"), (lambda: gd.Device("cuda", flag), "Device")]:
        with pytest.raises(TypeError, match=rf"{op}: a GPU index must be an int, got (bool|numpy.bool)"):
            call()


@pytest.mark.parametrize("index", [-1, 64, 2**63, -(2**70)])
def test_gpu_index_out_of_range_names_the_value(index):
    with pytest.raises(ValueError, match=rf"gpu: GPU index must be in \[0, 64\), got {index}$"):
        gd.gpu(index)
    with pytest.raises(ValueError, match=rf"Device: GPU index must be in \[0, 64\), got {index}$"):
        gd.Device("cuda", index)


def test_gpu_index_accepts_numpy_ints():
    assert gd.gpu(np.int64(2)) == gd.Device("cuda:2")
    assert gd.Device("cuda", np.uint8(5)).index == 5


def test_unknown_keywords_are_refused():
    a = gd.ones(2)
    with pytest.raises(TypeError, match=r"^cuda\(\) got an unexpected keyword argument 'foo'$"):
        a.cuda(foo=0)
    with pytest.raises(TypeError, match=r"^gpu\(\) got an unexpected keyword argument 'foo'$"):
        gd.gpu(foo=0)


# ---------------------------------------------------------------------------------------------
# arange
# ---------------------------------------------------------------------------------------------

ARANGE_INT64 = [
    (0.5, 5, 1.5), (0, 1, 0.1), (-0.5, 3, 1), (2.5, -3, -1.5), (0.9, 5.9, 1.0), (0, 10, 3.0),
    (1e18, 1e18 + 4096, 1024.0), (-1e18, 0, 3e17), (2**60, 2**60 + 10, 1.0), (0.0, 1e-320, 1e300),
]


@pytest.mark.parametrize("args", ARANGE_INT64, ids=str)
def test_arange_int64_from_floats_steps_as_numpy(device, args):
    assert_array(gd.arange(*args, dtype=gd.int64, device=device), np.arange(*args, dtype=np.int64))


@pytest.mark.parametrize(
    "args",
    [(0.0, 1e-320, 1e300), (0.0, -1e-320, 1e300), (0.0, 1e-320, -1e300), (0, 1, float("inf")),
     (0, -1, float("inf")), (0.0, 0.0, 1e300), (5e-324, 1e-323, 1e308)],
    ids=str,
)
@pytest.mark.parametrize("dtype", [gd.float64, gd.float32, gd.int64], ids=["float64", "float32", "int64"])
def test_arange_length_that_underflows(device, args, dtype):
    # (stop - start) / step rounds to +0 for a nonzero span: NumPy still gives start
    assert_array(gd.arange(*args, dtype=dtype, device=device), np.arange(*args, dtype=dtype))


@pytest.mark.parametrize("args", [(0, 1e30, 1e-10), (0, 2**63 - 1, 0.5), (-(2**63), 2**63 - 1), (-1e300, 1e300, 1.0),
                                  (0, 4, 2.2250738585072014e-308)], ids=str)
def test_arange_longer_than_int64_counts(args):
    # the last one's length overflows a double to +inf: still a length, not a non-finite input
    with pytest.raises(ValueError, match=r"arange: the range holds \S+ elements, more than 2\*\*63 - 1"):
        gd.arange(*args)


@pytest.mark.parametrize("args", [(0, -4, 2.2250738585072014e-308), (0, 4, -5e-324)], ids=str)
def test_arange_negative_length_past_a_double_is_empty(args):
    # (stop - start) / step overflows to -inf: a negative length, so an empty range (NumPy cannot
    # count it and raises; every other negative length is empty there too)
    assert gd.arange(*args).shape == (0,)


@pytest.mark.parametrize("args", [(0, float("inf")), (float("-inf"), 0), (0, 1, float("nan")), (float("nan"), 1)],
                         ids=str)
def test_arange_refuses_infinite_or_nan_bounds(args):
    with pytest.raises(ValueError, match=r"arange: start, stop and step must be finite"):
        gd.arange(*args)


@pytest.mark.parametrize("args", [(1e19, 1e19 + 1e6, 1e5), (-1e19, 0, 1e18), (0, 2e19, 1e18), (0.0, 2e19, 9e18)],
                         ids=str)
def test_arange_int64_values_past_int64_are_refused(args):
    # NumPy raises for some and wraps around for others
    with pytest.raises(OverflowError, match=r"arange: \d+ values from start=\S+ in steps of \S+ do not fit in int64"):
        gd.arange(*args, dtype=gd.int64)


def test_arange_int64_at_the_edges_of_int64():
    top = 2**63 - 1
    assert gd.arange(top - 2, top, dtype=gd.int64).tolist() == [top - 2, top - 1]
    assert gd.arange(-(2**63), -(2**63) + 2, dtype=gd.int64).tolist() == [-(2**63), -(2**63) + 1]
    assert gd.arange(-(2**63), 2**63 - 1, 2**62).tolist() == np.arange(-(2**63), 2**63 - 1, 2**62).tolist()
    assert gd.arange(-9.2e18, 9.2e18, 4.6e18, dtype=gd.int64).tolist() == \
        np.arange(-9.2e18, 9.2e18, 4.6e18, dtype=np.int64).tolist()


# ---------------------------------------------------------------------------------------------
# reductions over an axis of length 0
# ---------------------------------------------------------------------------------------------

EMPTY_REDUCTIONS = [((0, 0), 0), ((0, 0), 1), ((0, 0), (0, 1)), ((0, 3), 0), ((2, 0, 3), 1), ((2, 0, 3), (1, 2)),
                    ((0,), None), ((4, 0), -1)]


@pytest.mark.parametrize("shape, axis", EMPTY_REDUCTIONS, ids=str)
@pytest.mark.parametrize("kind", ["max", "min"])
@pytest.mark.parametrize("keepdims", [False, True])
def test_max_min_over_an_empty_axis_raise(device, kind, shape, axis, keepdims):
    with pytest.raises(ValueError):  # NumPy raises too, whatever the size of the result
        getattr(np.zeros(shape), kind)(axis=axis, keepdims=keepdims)
    with pytest.raises(ValueError, match=rf"{kind}: zero-size array has no (maximum|minimum)"):
        getattr(gd.zeros(shape, device=device), kind)(axis=axis, keepdims=keepdims)


@pytest.mark.parametrize("shape, axis", EMPTY_REDUCTIONS + [((3, 0), 0), ((0, 3), 1), ((2, 0, 3), (0, 2))], ids=str)
@pytest.mark.parametrize("kind", ["sum", "mean"])
def test_sum_mean_over_an_empty_axis(device, kind, shape, axis):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy warns of the mean of nothing
        expected = getattr(np.zeros(shape, np.float32), kind)(axis=axis)
    assert_array(getattr(gd.zeros(shape, device=device), kind)(axis=axis), expected)


@pytest.mark.parametrize("shape, axis", [((3, 0), 0), ((0, 3), 1), ((2, 0, 3), (0, 2))], ids=str)
@pytest.mark.parametrize("kind", ["max", "min", "sum"])
def test_reductions_over_nonempty_axes_of_an_empty_array(device, kind, shape, axis):
    expected = getattr(np.zeros(shape, np.float32), kind)(axis=axis)
    assert_array(getattr(gd.zeros(shape, device=device), kind)(axis=axis), expected)


@pytest.mark.parametrize("kind", ["max", "sum", "mean"])
def test_reductions_of_an_empty_array_with_huge_axes(device, kind):
    # the reduced axes hold 2**80 elements in all, which no int64 counts (NumPy cannot even
    # make this array); the result has no elements, so nothing is reduced
    a = gd.zeros((0, 2**40, 2**40), device=device)
    assert_array(getattr(a, kind)(axis=(1, 2)), np.zeros(0, np.float32))


# ---------------------------------------------------------------------------------------------
# Python ints beyond int64
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [2**63, -(2**63) - 1, 2**64, 10**30, [1, 2**70], [[1], [-(2**70)]]], ids=str)
@pytest.mark.parametrize("dtype", [None, gd.int64], ids=["inferred", "int64"])
def test_python_ints_beyond_int64_overflow(value, dtype):
    with pytest.raises(OverflowError, match=r"^array: a Python int in the input does not fit in int64 "
                                            r"\(gpudev's integer dtype\); give dtype=gd.float64"):
        gd.array(value, dtype=dtype)


@pytest.mark.parametrize("value", [2**63, -(2**63) - 1, 2**64, [1, 2**70]], ids=str)
@pytest.mark.parametrize("dtype", [gd.float64, gd.float32], ids=["float64", "float32"])
def test_python_ints_beyond_int64_as_floats(value, dtype):
    assert_array(gd.array(value, dtype=dtype), np.array(value, dtype=dtype))


def test_int64_edges_and_uint64_data():
    assert gd.array([2**63 - 1, -(2**63)]).tolist() == [2**63 - 1, -(2**63)]
    # NumPy's uint64 data stays refused, in a list or not (gpudev has no uint64)
    for data in (np.uint64(3), [np.uint64(3)], np.arange(3, dtype=np.uint64)):
        with pytest.raises(TypeError, match="uint64"):
            gd.array(data)
    assert gd.array([np.uint64(3)], dtype=gd.int64).tolist() == [3]


# ---------------------------------------------------------------------------------------------
# copy.copy and copy.deepcopy: device copies, never pickles
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("make", [copy.copy, copy.deepcopy, lambda a: copy.deepcopy(a, {})],
                         ids=["copy", "deepcopy", "deepcopy-memo"])
@pytest.mark.parametrize("shape", [(), (0,), (2, 3), (5, 7)], ids=str)
@pytest.mark.parametrize("dtype", [gd.float32, gd.float64, gd.int64], ids=["float32", "float64", "int64"])
def test_copy_module_copies_on_the_device(device, make, shape, dtype):
    a = gd.array(np.arange(int(np.prod(shape))).reshape(shape), dtype=dtype, device=device)
    b = make(a)
    assert b is not a and type(b) is type(a)
    assert_array(b, host(a), device=device)
    if a.size:
        b += 1
        assert_array(a, np.arange(int(np.prod(shape))).reshape(shape).astype(dtype))


def test_copy_of_a_view_owns_its_data():
    base = gd.array(np.arange(12.0).reshape(3, 4))
    for b in (copy.copy(base[1]), copy.deepcopy(base[1:])):
        assert not b._is_view
    c = copy.copy(base[1])
    c[...] = 0.0
    assert host(base)[1].tolist() == [4.0, 5.0, 6.0, 7.0]


def test_deepcopy_keeps_shared_arrays_shared():
    a = gd.ones(3)
    box = {"x": a, "y": a, "z": [a]}
    out = copy.deepcopy(box)
    assert out["x"] is out["y"] is out["z"][0] and out["x"] is not a


def test_deepcopy_of_a_model():
    net = gd.nn.Sequential(gd.nn.Linear(2, 3), gd.nn.ReLU(), gd.nn.Linear(3, 1))
    twin = copy.deepcopy(net)
    for (name, p), (name2, q) in zip(net.named_parameters(), twin.named_parameters(), strict=True):
        assert name == name2 and q.data is not p.data
        np.testing.assert_array_equal(host(q.data), host(p.data))
    lin = copy.deepcopy(gd.nn.Linear(2, 2))
    assert lin(gd.ones((1, 2))).shape == (1, 2)


def test_deepcopy_memo_must_be_a_dict():
    with pytest.raises(TypeError, match=r"__deepcopy__: memo must be a dict or None, got list"):
        gd.ones(2).__deepcopy__([])
    assert gd.ones(2).__deepcopy__(None).tolist() == [1.0, 1.0]


# ---------------------------------------------------------------------------------------------
# Python floats that do not fit int64
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("obj, kind", [(float("inf"), OverflowError), (-float("inf"), OverflowError),
                                       (float("nan"), ValueError), (1e300, OverflowError),
                                       ([1.5, float("inf")], OverflowError), ([[1e19]], OverflowError),
                                       (-9.3e18, OverflowError)])
def test_python_floats_beyond_int64_are_refused(obj, kind):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(kind):
            np.array(obj, dtype=np.int64)  # the reference refuses too
    with pytest.raises(kind, match=r"array: a number in the input does not fit in int64 \(.*\); give dtype=gd.float64"):
        gd.array(obj, dtype=gd.int64)


def test_python_ints_beside_floats_stay_exact_as_int64():
    obj = [1, 2**62 + 1, 0.5, -2.7]
    got = gd.array(obj, dtype=gd.int64).tolist()
    assert got == np.array(obj, dtype=np.int64).tolist() == [1, 2**62 + 1, 0, -2]


# ---------------------------------------------------------------------------------------------
# hostile arguments get messages of a readable length
# ---------------------------------------------------------------------------------------------


def _deep_list(depth: int) -> list:
    out: list = [0]
    for _ in range(depth):
        out = [out]
    return out


@pytest.mark.parametrize("call", [
    lambda v: gd.Device(v), lambda v: gd.zeros(2, device=v), lambda v: gd.ones(2).to(v),
    lambda v: gd.zeros(2, dtype=v), lambda v: gd.ones(2).astype(v), lambda v: gd.ones(2).__array__(dtype=v),
    lambda v: gd.ones(2).__dlpack__(dl_device=v), lambda v: gd.ones(2).__dlpack__(max_version=v),
    lambda v: gd.ones((2, 2)).transpose(v), lambda v: gd.benchmark(lambda: None, max_duration=v),
    lambda v: gd.Timer(devices=[v]), lambda v: gd.synchronize(v), lambda v: gd.Device("cuda:1", v),
], ids=["Device", "zeros device", "to", "zeros dtype", "astype", "__array__", "dl_device", "max_version",
        "transpose", "benchmark", "Timer", "synchronize", "Device index"])
@pytest.mark.parametrize("value", ["x" * 100_000, _deep_list(5000), ["x" * 100_000]], ids=["long str", "deep list",
                                                                                             "list of long str"])
def test_hostile_values_are_named_briefly(call, value):
    with pytest.raises((TypeError, ValueError, IndexError)) as info:
        call(value)
    assert not isinstance(info.value, RecursionError)
    assert 0 < len(str(info.value)) < 1000, str(info.value)[:300]


# ---------------------------------------------------------------------------------------------
# empty arrays whose other dimensions span more than 2**63 bytes
# ---------------------------------------------------------------------------------------------

HUGE_EMPTY = r"an empty array of shape \(0, 4611686018427387904, 4611686018427387904\) and dtype float32 spans more than"


@pytest.mark.parametrize("leave, kind, op", [
    (lambda a: a.numpy(), ValueError, "numpy"), (lambda a: a.tolist(), ValueError, "tolist"),
    (np.asarray, ValueError, "__array__"), (np.array, ValueError, "__array__"),
    (np.from_dlpack, BufferError, "__dlpack__"), (memoryview, BufferError, "buffer protocol"),
], ids=["numpy", "tolist", "asarray", "array", "from_dlpack", "memoryview"])
def test_huge_empty_arrays_do_not_leave_for_numpy(leave, kind, op):
    a = gd.zeros((0, 2**62, 2**62))
    with pytest.raises(kind, match=rf"{op}: {HUGE_EMPTY}"):
        leave(a)
    assert np.asarray(leave(a.reshape(0))).tolist() == []  # the fix the message gives


def test_huge_empty_arrays_print():
    a = gd.zeros((0, 2**62, 2**62))
    assert repr(a) == "Array([], shape=(0, 4611686018427387904, 4611686018427387904), dtype=float32)"
    assert str(a) == "[]"


# ---------------------------------------------------------------------------------------------
# NumPy arrays as indices, allclose with infinite tolerances
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("key, message", [
    (np.array(1.0), r"only integers, slices .* got numpy.ndarray"),
    (np.bool_(True), r"a bool \(np.True_\) is not a valid index; use a bool array as a mask"),
    ((0, np.array([0.5])), r"arrays used as indices must be of integer \(or boolean\) type, got float64"),
], ids=["0-d float", "np.bool_", "float array in tuple"])
def test_numpy_indices_gpudev_refuses(key, message):
    a = gd.ones((3, 3))
    with pytest.raises(IndexError, match=rf"getitem: {message}"):
        a[key]


def test_numpy_index_arrays_index_as_in_numpy():
    src = np.arange(9.0).reshape(3, 3)
    a = gd.array(src)
    for key in (np.array([0, 1]), np.array([True, False, True]), (0, np.array([0])),
                (np.array([2, 0]), np.array([1, 1]))):
        assert a[key].tolist() == src[key].tolist()


def test_numpy_integer_scalars_index():
    a = gd.arange(4.0)
    assert a[np.array(2)].item() == 2.0 and a[np.int64(-1)].item() == 3.0


@pytest.mark.parametrize("rtol, atol", [(np.inf, 0.0), (np.inf, np.nan), (0.0, np.nan), (1e-5, 1e-8)])
def test_allclose_of_equal_values_whatever_the_tolerances(device, rtol, atol):
    x = np.array([0.0, 1.0, -np.inf, np.inf, 5e-324])
    a = gd.array(x, dtype=gd.float64, device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy warns about the tolerances
        want = bool(np.allclose(x, x, rtol=rtol, atol=atol))
    assert gd.allclose(a, a, rtol=rtol, atol=atol) is want is True
