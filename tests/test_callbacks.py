"""Arguments that run Python code while gpudev reads them: an ``__index__``, ``__float__`` or
``__bool__`` that changes the list it sits in, or raises; another thread changing a list
while gpudev copies from it with the GIL released. Each entry point that reads a sequence
(shapes, axes, lists of arrays, indices, nested lists, devices, DLPack producers, keyword
names) gives the right answer from what it read, or the caller's own exception; never a
crash. The rule behind this is in csrc/core/args.h."""

from __future__ import annotations

import sys
import threading

import numpy as np
import pytest

import gpudev as gd
from conftest import DEVICES, assert_array, host
from fuzz.hostile import Boom, BoolMutates, FloatMutates, IndexMutates, IndexRaises, fresh_int

# ---------------------------------------------------------------------------------------------
# shapes: a dimension's __index__ empties the list of dimensions
# ---------------------------------------------------------------------------------------------

SHAPE_FUNCTIONS = {
    "zeros": lambda shape, device: gd.zeros(shape, device=device),
    "ones": lambda shape, device: gd.ones(shape, device=device),
    "empty": lambda shape, device: gd.empty(shape, device=device),
    "full": lambda shape, device: gd.full(shape, 7.0, device=device),
    "rand": lambda shape, device: gd.rand(shape, device=device),
    "randn": lambda shape, device: gd.randn(shape, device=device),
    "reshape": lambda shape, device: gd.arange(2 * 260 * 270, device=device).reshape(shape),
}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("fn", SHAPE_FUNCTIONS.values(), ids=SHAPE_FUNCTIONS.keys())
def test_shape_list_emptied_by_index_is_read_as_given(fn, device):
    # the other dimensions die with the list; reading them after it is emptied reads junk
    shape: list = [0, fresh_int(260), fresh_int(270)]
    shape[0] = IndexMutates(shape, 2)
    assert fn(shape, device).shape == (2, 260, 270)
    assert shape == []


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("fn", SHAPE_FUNCTIONS.values(), ids=SHAPE_FUNCTIONS.keys())
def test_shape_index_that_raises_propagates(fn, device):
    with pytest.raises(Boom):
        fn([2, IndexRaises(), 4], device)


def test_shape_list_growing_under_index_is_read_as_given():
    shape: list = [2, fresh_int(300)]

    class Grows:
        def __index__(self) -> int:
            shape.extend([5] * 100)  # moves the list's item array
            shape[1] = 7  # and lets go of the int that was there
            return 4

    shape.insert(0, Grows())
    assert gd.zeros(shape).shape == (4, 2, 300)


def test_transpose_axes_list_emptied_by_index(device):
    a = np.arange(24.0).reshape(2, 3, 4)
    axes: list = [0, 0, 1]
    axes[0] = IndexMutates(axes, 2)
    assert_array(gd.array(a, device=device).transpose(axes), a.transpose(2, 0, 1))


# ---------------------------------------------------------------------------------------------
# axes, indices, keyword flags
# ---------------------------------------------------------------------------------------------


def test_axis_tuple_with_mutating_index(device):
    holder = [gd.ones((2, 3), device=device)]
    a = holder[0]
    got = a.sum(axis=(IndexMutates(holder, 1),))
    assert holder == []
    assert_array(got, np.full(2, 3.0, np.float32))
    with pytest.raises(Boom):
        a.max(axis=(0, IndexRaises()))


def test_concatenate_axis_index_empties_the_list(device):
    arrays = [gd.ones((2, 3), device=device), gd.zeros((2, 3), device=device)]
    # the axis is read first; an empty list is then an error, not a crash
    with pytest.raises(ValueError, match="need at least one array"):
        gd.concatenate(arrays, axis=IndexMutates(arrays, 1))


def test_index_whose_index_drops_the_last_reference_to_the_base(device):
    holder = [gd.array(np.arange(12.0).reshape(3, 4), device=device)]
    view = holder[0][1:]
    assert_array(view[IndexMutates(holder, 1), 2:], np.array([10.0, 11.0]))
    assert holder == []
    view[IndexMutates(holder, 0)] = 5.0
    assert_array(view, np.array([[5.0] * 4, [8.0, 9.0, 10.0, 11.0]]))


def test_keepdims_bool_that_mutates(device):
    holder = [gd.ones((2, 3), device=device)]
    assert holder[0].sum(axis=0, keepdims=BoolMutates(holder)).shape == (1, 3)


# ---------------------------------------------------------------------------------------------
# nested lists, fill values, GPU indices, devices, keyword names
# ---------------------------------------------------------------------------------------------


def nested_with_mutating_item(clear: str) -> list:
    """[[x, 2.0], [3.0, 4.0]] where x's __index__ and __float__ empty the inner or outer list."""
    inner: list = [0.0, 2.0]
    outer = [inner, [3.0, 4.0]]
    inner[0] = FloatMutates(inner if clear == "inner" else outer, 1)
    return outer


@pytest.mark.parametrize("clear", ["inner", "outer"])
@pytest.mark.parametrize("dtype", [None, gd.float64, gd.int64], ids=["inferred", "float64", "int64"])
def test_nested_list_with_mutating_item(device, clear, dtype):
    # NumPy reads an object it does not know as object data, which gpudev refuses; read again
    # in the dtype asked for, NumPy sees the list change under it and gpudev's refusal stands
    with pytest.raises(TypeError, match="dtype object"):
        gd.array(nested_with_mutating_item(clear), dtype=dtype, device=device)


def test_gpu_index_objects():
    assert gd.gpu(IndexMutates([], 3)) == gd.Device("cuda:3")
    with pytest.raises(Boom):
        gd.gpu(IndexRaises())
    with pytest.raises(Boom):
        gd.ones(2).cuda(IndexRaises())


def test_keyword_names_with_a_nul_are_unknown():
    with pytest.raises(TypeError, match=r"zeros\(\) got an unexpected keyword argument 'device\\x00junk'"):
        gd.zeros(2, **{"device\x00junk": "cpu"})
    with pytest.raises(TypeError, match="unexpected keyword argument"):
        gd.ones(2).sum(**{"axis\x00": 0})


def test_sync_of_a_device_list_a_trace_hook_empties():
    # _sync (behind Timer and benchmark) records one trace event per device it waits for
    devices = [gd.cpu(), gd.cpu(), gd.cpu()]

    def hook(event):
        devices.clear()

    previous = gd._C._set_trace_hook(hook)
    try:
        gd._C._sync("test", devices)
    finally:
        gd._C._set_trace_hook(previous)
    assert devices == []


# ---------------------------------------------------------------------------------------------
# DLPack producers that drop their data while being read
# ---------------------------------------------------------------------------------------------


class ForgetfulProducer:
    """A DLPack producer that lets go of its array while exporting it."""

    def __init__(self, data: np.ndarray) -> None:
        self.data = data

    def __dlpack_device__(self):
        return self.data.__dlpack_device__()

    def __dlpack__(self, **kwargs):
        capsule = self.data.__dlpack__(**kwargs)
        self.data = None
        return capsule


def test_from_dlpack_of_a_producer_that_drops_its_array():
    got = gd.from_dlpack(ForgetfulProducer(np.arange(6.0)))
    np.testing.assert_array_equal(host(got), np.arange(6.0))


# ---------------------------------------------------------------------------------------------
# another thread changes the list of arrays while they are copied without the GIL
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("join", [gd.concatenate, gd.stack], ids=["concatenate", "stack"])
def test_join_while_another_thread_replaces_the_arrays(join):
    # large enough that each copy runs without the GIL; each array holds one value, so a copy
    # read from a freed array shows as a mixed or foreign block
    rows, cols = 64, 4096
    arrays = [gd.full((rows, cols), 1.0), gd.full((rows, cols), 2.0)]
    stop = threading.Event()

    def mutate() -> None:
        value = 3.0
        while not stop.is_set():
            arrays[:] = [gd.full((rows, cols), value), gd.full((rows, cols), value + 1)]
            value = 3.0 if value > 100 else value + 2

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    thread = threading.Thread(target=mutate, daemon=True)
    thread.start()
    try:
        for _ in range(150):
            out = host(join(arrays))
            for block in out.reshape(2, -1):  # one block per input array
                assert (block == block[0]).all() and block[0] in np.arange(1.0, 104.0), block[:4]
    finally:
        stop.set()
        thread.join()
        sys.setswitchinterval(interval)
