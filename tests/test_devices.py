"""Devices: naming, parsing, equality, discovery (cpu/gpu/try_gpu), info(), threads,
synchronization and, on GPUs, asynchronous execution and the memory pool."""

from __future__ import annotations

import gc
import pickle

import numpy as np
import pytest

import gpudev as gd
from conftest import EMULATED, NUM_GPUS, assert_array

# ---------------------------------------------------------------------------------------------
# naming and parsing
# ---------------------------------------------------------------------------------------------


def test_cpu_device_attributes():
    d = gd.Device("cpu")
    assert d.type == "cpu"
    assert d.index is None
    assert str(d) == "cpu"
    assert repr(d) == "Device('cpu')"


@pytest.mark.parametrize("spec, index", [("cuda", 0), ("cuda:0", 0), ("cuda:1", 1), ("cuda:12", 12)])
def test_cuda_device_from_string(spec, index):
    d = gd.Device(spec)
    assert d.type == "cuda"
    assert d.index == index
    assert str(d) == f"cuda:{index}"
    assert repr(d) == (f"Device('cuda:{index}', emulated)" if EMULATED else f"Device('cuda:{index}')")


def test_cuda_device_from_type_and_index():
    assert gd.Device("cuda", 1) == gd.Device("cuda:1")
    assert gd.Device("cuda", 0) == gd.Device("cuda")
    assert gd.Device("cuda", index=3).index == 3


def test_device_equality_and_hash():
    assert gd.Device("cuda:1") == gd.Device("cuda", 1)
    assert gd.Device("cuda:1") != gd.Device("cuda:0")
    assert gd.Device("cpu") != gd.Device("cuda:0")
    assert hash(gd.Device("cuda:1")) == hash(gd.Device("cuda", 1))
    assert len({gd.Device("cpu"), gd.cpu(), gd.Device("cuda:0"), gd.gpu(0), gd.gpu(1)}) == 3
    table = {gd.gpu(1): "second"}
    assert table[gd.Device("cuda:1")] == "second"


def test_device_equals_its_string():
    assert gd.Device("cpu") == "cpu"
    assert gd.Device("cuda:1") == "cuda:1"
    assert gd.Device("cuda") == "cuda:0"
    assert gd.Device("cuda:1") != "cuda:0"
    assert gd.Device("cpu") != "cuda:0"
    assert gd.Device("cpu") != "not a device"
    assert gd.Device("cpu") != 0


def test_device_pickles():
    for d in (gd.cpu(), gd.gpu(2)):
        assert pickle.loads(pickle.dumps(d)) == d


def test_device_constructors():
    assert gd.cpu() == gd.Device("cpu")
    assert gd.gpu() == gd.Device("cuda:0")
    assert gd.gpu(2) == gd.Device("cuda:2")
    assert gd.gpu(i=3) == "cuda:3"
    # naming a GPU that does not exist is allowed; only allocating on it fails
    assert gd.gpu(NUM_GPUS + 5).index == NUM_GPUS + 5


@pytest.mark.parametrize("bad", ["", "gpu", "tpu", "cuda:", "cuda:x", "cuda:-1", "cuda:1.5", "cuda:0:1", " cpu"])
def test_bad_device_strings_raise_value_error(bad):
    with pytest.raises(ValueError, match="'cpu'.*'cuda:N'|'cuda:N'.*'cpu'") as info:
        gd.Device(bad)
    assert repr(bad) in str(info.value), "the message should quote the string it could not parse"


def test_bad_device_index_raises():
    with pytest.raises(ValueError, match="-1"):
        gd.Device("cuda", -1)
    with pytest.raises(ValueError, match="index"):
        gd.Device("cpu", 0)
    with pytest.raises(ValueError, match="-2"):
        gd.gpu(-2)


def test_device_argument_of_wrong_type_raises_type_error():
    with pytest.raises(TypeError, match="device"):
        gd.zeros(3, device=1.5)


def test_device_arguments_accept_strings_and_devices():
    for spec in ("cpu", gd.cpu(), gd.Device("cpu"), None):
        a = gd.zeros(2, device=spec)
        assert a.device == gd.cpu()


# ---------------------------------------------------------------------------------------------
# discovery
# ---------------------------------------------------------------------------------------------


def test_num_gpus_is_a_count():
    n = gd.num_gpus()
    assert isinstance(n, int)
    assert n >= 0
    assert n == gd.num_gpus(), "num_gpus() must be stable"


def test_cuda_available_means_a_usable_gpu():
    assert isinstance(gd.cuda_available(), bool)
    assert gd.cuda_available() == (gd.num_gpus() > 0)


def test_try_gpu_falls_back_to_cpu():
    n = gd.num_gpus()
    assert gd.try_gpu() == (gd.gpu(0) if n > 0 else gd.cpu())
    assert gd.try_gpu(n) == gd.cpu()
    assert gd.try_gpu(n + 10) == gd.cpu()
    if n > 0:
        assert gd.try_gpu(n - 1) == gd.gpu(n - 1)


def test_try_all_gpus():
    n = gd.num_gpus()
    devices = gd.try_all_gpus()
    assert isinstance(devices, list)
    if n == 0:
        assert devices == [gd.cpu()]
    else:
        assert devices == [gd.gpu(i) for i in range(n)]


def test_cpu_info():
    info = gd.cpu().info()
    assert isinstance(info, dict)
    assert {"model", "cores", "simd", "blas"} <= set(info), sorted(info)
    assert isinstance(info["model"], str) and info["model"]
    assert isinstance(info["cores"], int) and info["cores"] >= 1
    assert info["simd"] == gd.build_info()["simd"]
    assert "openblas" in str(info["blas"]).lower()


@pytest.mark.gpu
def test_gpu_info(cuda0):
    info = cuda0.info()
    assert {"name", "compute_capability", "multiprocessors", "total_memory", "free_memory", "driver_version",
            "runtime_version"} <= set(info), sorted(info)
    assert isinstance(info["name"], str) and info["name"]
    assert tuple(info["compute_capability"]) >= (7, 5)  # what CUDA 13 still supports
    assert info["multiprocessors"] > 0
    assert 0 < info["free_memory"] <= info["total_memory"]
    assert info["driver_version"] >= info["runtime_version"] > 0  # a driver runs older runtimes only


# ---------------------------------------------------------------------------------------------
# threads
# ---------------------------------------------------------------------------------------------


def test_set_and_get_num_threads():
    before = gd.get_num_threads()
    assert isinstance(before, int) and before >= 1
    try:
        gd.set_num_threads(1)
        assert gd.get_num_threads() == 1
        assert gd.build_info()["blas"]["threads"] == 1
        x = np.arange(12.0).reshape(3, 4)
        assert_array(gd.array(x) @ gd.array(x.T), x @ x.T)
        gd.set_num_threads(2)
        assert gd.get_num_threads() == 2
    finally:
        gd.set_num_threads(before)
    assert gd.get_num_threads() == before


@pytest.mark.parametrize("bad", [0, -1])
def test_set_num_threads_rejects_non_positive(bad):
    before = gd.get_num_threads()
    with pytest.raises(ValueError, match=rf"set_num_threads.*{bad}"):
        gd.set_num_threads(bad)
    assert gd.get_num_threads() == before


# ---------------------------------------------------------------------------------------------
# synchronization
# ---------------------------------------------------------------------------------------------


def test_synchronize_returns_none_and_results_hold(device):
    a = gd.ones(1000, device=device)
    b = a * 3
    assert gd.synchronize() is None
    assert gd.synchronize(device) is None
    assert gd.synchronize(str(device)) is None
    assert_array(b, np.full(1000, 3, np.float32))


@pytest.mark.gpu
def test_queued_work_is_visible_after_synchronize(cuda0):
    n = 1 << 22
    a = gd.zeros(n, device=cuda0)
    for _ in range(20):
        a += 1  # queued on the device's stream
    gd.synchronize(cuda0)
    assert cuda0 not in gd._C._pending_devices()
    values = a.cpu().numpy()
    assert (values == 20).all()


@pytest.mark.gpu
def test_pending_devices_tracks_queued_work(cuda0):
    gd.synchronize()
    a = gd.ones(1 << 20, device=cuda0)
    a *= 2
    assert cuda0 in gd._C._pending_devices()
    gd.synchronize()
    assert cuda0 not in gd._C._pending_devices()


@pytest.mark.gpu
def test_gpu_calls_return_before_the_work_is_done(cuda0):
    """Queueing twenty products waits for none of them: no synchronization while they are
    queued, and the device still has work queued after the loop (on an emulated GPU, whose
    queue runs only when waited for, the products themselves), none once synchronized. What
    is queued, not how long queueing took: comparing times is a benchmark's job."""
    a = gd.rand(256, 256, device=cuda0)
    b = gd.rand(256, 256, device=cuda0)
    c = a @ b  # the first product creates the cuBLAS handle
    gd.synchronize(cuda0)
    with gd.trace() as tr:
        for _ in range(20):
            c = a @ b
    assert tr.count("sync") == 0 and tr.count("op", "matmul") == 20
    assert cuda0 in gd._C._pending_devices()
    if EMULATED:
        assert gd.emulation.pending_operations() >= 20
    gd.synchronize(cuda0)
    assert cuda0 not in gd._C._pending_devices()
    if EMULATED:
        assert gd.emulation.pending_operations() == 0
    assert c.shape == (256, 256)


@pytest.mark.gpu
def test_item_is_right_without_explicit_synchronize(cuda0):
    a = gd.ones(1 << 24, device=cuda0)
    a *= 3
    a += 1
    assert a.sum().item() == 4.0 * (1 << 24)
    assert a[12345].item() == 4.0
    assert a.max().tolist() == 4.0


@pytest.mark.gpu
def test_freeing_memory_still_used_by_queued_work_is_safe(cuda0):
    n = 1 << 24
    for _ in range(5):
        x = gd.full(n, 2.0, device=cuda0)
        y = x * x  # queued; reads x
        del x  # x's memory goes back to the pool while the product may still be running
        z = gd.zeros(n, device=cuda0)  # may reuse x's block: stream order keeps y right
        z += 7
        assert y.sum().item() == 4.0 * n
        assert z.sum().item() == 7.0 * n


@pytest.mark.gpu
def test_host_source_may_be_reused_after_upload(cuda0):
    src = np.arange(1 << 20, dtype=np.float32)
    a = gd.asarray(src, device=cuda0)
    src[:] = -1  # the upload must not read the buffer after asarray returned
    np.testing.assert_array_equal(a.cpu().numpy(), np.arange(1 << 20, dtype=np.float32))


# ---------------------------------------------------------------------------------------------
# GPU memory pool
# ---------------------------------------------------------------------------------------------


def test_memory_stats_follow_allocations(device):
    gc.collect()  # arrays left for the collector by earlier tests must not be freed mid-test
    gd.synchronize()
    before = gd.memory_stats(device)
    assert set(before) >= {"allocated_bytes", "reserved_bytes", "peak_allocated_bytes", "allocations"}
    x = gd.empty((16, 1024, 1024), device=device)  # 64 MiB of float32
    during = gd.memory_stats(device)
    assert during["allocated_bytes"] >= before["allocated_bytes"] + x.nbytes
    assert during["allocations"] >= before["allocations"] + 1
    assert during["peak_allocated_bytes"] >= during["allocated_bytes"]
    assert during["reserved_bytes"] >= during["allocated_bytes"]
    del x
    gd.synchronize()
    after = gd.memory_stats(device)
    assert after["allocated_bytes"] == before["allocated_bytes"]
    assert after["allocations"] == before["allocations"]
    assert after["peak_allocated_bytes"] >= during["allocated_bytes"]
    gd.empty_cache(device)
    trimmed = gd.memory_stats(device)
    assert trimmed["reserved_bytes"] <= after["reserved_bytes"]
    assert trimmed["allocated_bytes"] == before["allocated_bytes"]
    # the allocator still works after a trim
    assert gd.ones(1000, device=device).sum().item() == 1000.0


@pytest.mark.gpu
def test_tf32_is_off_by_default_and_can_be_allowed(cuda0):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((512, 512)).astype(np.float32)
    b = rng.standard_normal((512, 512)).astype(np.float32)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    scale = np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)
    exact = (gd.asarray(a, device=cuda0) @ gd.asarray(b, device=cuda0)).cpu().numpy()
    # float32 products err by ~2e-7 of sum(|a||b|) here, TF32's 10-bit mantissas by ~1e-4
    assert (np.abs(exact - ref) <= 2e-6 * scale).all()
    try:
        gd.set_tf32(True)
        fast = (gd.asarray(a, device=cuda0) @ gd.asarray(b, device=cuda0)).cpu().numpy()
        assert (np.abs(fast - ref) <= 1e-3 * scale).all()
    finally:
        gd.set_tf32(False)
    again = (gd.asarray(a, device=cuda0) @ gd.asarray(b, device=cuda0)).cpu().numpy()
    assert (np.abs(again - ref) <= 2e-6 * scale).all()
