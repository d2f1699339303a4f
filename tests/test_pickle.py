"""Pickling arrays, devices and models (gpudev/_pickle.py): every protocol, views, dtypes and
devices; out-of-band buffers without a copy; the host read it makes; absent devices."""

from __future__ import annotations

import copy
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import gpudev as gd
from gpudev import nn

from conftest import DEVICES, NUM_GPUS

DTYPES = [gd.float32, gd.float64, gd.int64, gd.int32, gd.bool]
VIEWS = {
    "whole": lambda a: a,
    "transposed": lambda a: a.T,
    "strided": lambda a: a[::2, 1:],
    "row": lambda a: a[1],
    "0-d": lambda a: a[0, 0],
    "empty": lambda a: a[:0],
}


def _data(dtype):
    base = np.arange(12).reshape(4, 3) - 5
    return base % 2 == 0 if dtype == gd.bool else base.astype(np.dtype(dtype))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("view", list(VIEWS))
def test_round_trip_keeps_values_dtype_shape_and_device(device, protocol, dtype, view):
    data = _data(dtype)
    a = VIEWS[view](gd.array(data, dtype=dtype, device=device))
    b = pickle.loads(pickle.dumps(a, protocol=protocol))
    assert type(b) is gd.Array
    assert (b.dtype, b.shape, b.device) == (a.dtype, a.shape, a.device)
    np.testing.assert_array_equal(b.cpu().numpy(), VIEWS[view](data))
    b_writes = b.copy()  # the copy is independent of the original
    assert not np.shares_memory(b_writes.cpu().numpy(), a.cpu().numpy())


def test_out_of_band_buffer_is_the_arrays_own_memory_and_loads_without_a_copy():
    a = gd.arange(1000, dtype=gd.float32)
    buffers = []
    data = pickle.dumps(a, protocol=5, buffer_callback=buffers.append)
    assert len(buffers) == 1 and len(data) < 1000
    address = np.frombuffer(buffers[0].raw(), dtype=np.uint8).__array_interface__["data"][0]
    assert address == a.numpy().__array_interface__["data"][0]
    b = pickle.loads(data, buffers=buffers)
    assert b.numpy().__array_interface__["data"][0] == address  # shares the buffer it was given
    assert b.tolist() == a.tolist()


def test_pickling_100_mb_out_of_band_grows_peak_memory_by_less_than_10_mb():
    script = textwrap.dedent("""
        import pickle, resource, gpudev as gd
        a = gd.ones(25_000_000, dtype=gd.float32)  # 100 MB, touched
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        buffers = []
        data = pickle.dumps(a, protocol=5, buffer_callback=buffers.append)
        grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
        assert buffers[0].raw().nbytes == 100_000_000
        print(grown)  # KiB
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout.strip()) < 10 * 1024


@pytest.mark.parametrize("device", DEVICES)
def test_pickling_is_a_host_read_that_the_trace_counts_and_strict_catches(device):
    a = gd.ones(3, device=device)
    with gd.trace() as tr:
        pickle.dumps(a)
    assert tr.summary()["syncs"] == {"pickle": 1}
    assert tr.count("copy", "d2h") == (0 if device.type == "cpu" else 1)
    with pytest.raises(gd.StrictModeError, match="pickle"):
        with gd.strict("copy"):
            pickle.dumps(a)


def test_a_device_this_machine_lacks_raises_naming_map_location():
    data = pickle.dumps(gd.ones(2))
    missing = f"cuda:{NUM_GPUS + 3}"
    forged = data.replace(b"\x03cpu", bytes([len(missing)]) + missing.encode())
    assert forged != data
    with pytest.raises(gd.DeviceUnavailableError, match=rf"pickled on {missing}.*gd.map_location\('cpu'\)"):
        pickle.loads(forged)
    with gd.map_location("cpu"):
        b = pickle.loads(forged)
    assert b.device == gd.cpu() and b.tolist() == [1.0, 1.0]
    with pytest.raises(TypeError, match="map_location: expected a Device or a string"):
        gd.map_location(3)


@pytest.mark.parametrize("device", DEVICES)
def test_map_location_moves_arrays_to_another_device(device):
    data = pickle.dumps(gd.arange(3, device=device))
    with gd.map_location(gd.cpu()):
        b = pickle.loads(data)
    assert b.device == gd.cpu() and b.tolist() == [0, 1, 2]
    assert pickle.loads(data).device == device  # outside the block: where it was


@pytest.mark.parametrize("device", DEVICES)
def test_leaves_keep_requires_grad_and_graphs_refuse(device):
    w = gd.ones(3, device=device).requires_grad_()
    w2 = pickle.loads(pickle.dumps(w))
    assert w2.requires_grad and w2.is_leaf
    with pytest.raises(RuntimeError, match=r"pickle: this array is the result of a recorded operation.*x\.detach\(\)"):
        pickle.dumps(w * 2)
    assert pickle.loads(pickle.dumps((w * 2).detach())).tolist() == [2.0, 2.0, 2.0]


@pytest.mark.parametrize("device", DEVICES)
def test_models_pickle_and_deepcopy_with_their_parameters(device):
    gd.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8, device=device), nn.ReLU(), nn.Linear(8, 2, device=device))
    x = gd.randn(5, 4, device=device)
    for twin in (pickle.loads(pickle.dumps(model)), copy.deepcopy(model)):
        np.testing.assert_array_equal(twin(x).cpu().numpy(), model(x).cpu().numpy())
        params = list(twin.parameters())
        assert params and all(p.requires_grad and p.device == device for p in params)
        twin(x).sum().backward()  # trains on its own parameters
        assert all(p.grad is not None for p in params)
    assert gd.Device("cuda:1") == pickle.loads(pickle.dumps(gd.Device("cuda:1")))


@pytest.mark.parametrize("device", DEVICES)
def test_a_lazy_model_pickles_before_its_first_forward_and_materializes_after_loading(device):
    model = nn.Sequential(nn.LazyLinear(4, device=device), nn.ReLU(), nn.LazyLinear(2, device=device))
    twin = pickle.loads(pickle.dumps(model))
    assert [type(p).__name__ for p in twin.parameters()] == ["UninitializedParameter"] * 4
    assert all(p.device == device for p in twin.parameters())
    out = twin(gd.ones((3, 5), device=device))
    assert out.shape == (3, 2) and [p.shape for p in twin.parameters()] == [(4, 5), (4,), (2, 4), (2,)]
