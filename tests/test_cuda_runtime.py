"""The CUDA backend next to other CUDA libraries in one process, on a real GPU: memory shared
through DLPack and the CUDA array interface stays valid while a consumer's queued kernels
still read it; gpudev's pool gives memory back for PyTorch and cuBLAS; the thread's current
device is left alone; blocking calls let other Python threads run; benchmark() and the
pending-work flags see all GPU work. Every test here needs a GPU (the `cuda0` fixture marks
them `gpu`), most also PyTorch or CuPy, and they are skipped without.

The consumer-side race tests keep the consumer's stream busy with ``torch.cuda._sleep`` so
that its read runs long after gpudev has freed (and reused) the memory, if nothing orders
the two.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import gpudev as gd
from gpudev import _C

from conftest import EMULATED, NO_GPU, NUM_GPUS

SLEEP_CYCLES = 500_000_000  # torch.cuda._sleep: ~0.25 s at the H200's 1.98 GHz


def _torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip(NO_GPU)
    return torch


def _cupy():
    return pytest.importorskip("cupy")


# ---------------------------------------------------------------------------------------------
# the suite itself: every test that takes a GPU is selected by `-m gpu`
# ---------------------------------------------------------------------------------------------


def test_every_test_taking_a_gpu_fixture_is_marked(request):
    """`pytest -m gpu` on a GPU machine must run every test that uses one, also those whose
    author forgot the marker: the conftest marks them from their fixtures."""
    items = request.session.items
    takers = [i for i in items if "cuda0" in getattr(i, "fixturenames", ())]
    if not takers:  # e.g. under -m "not gpu"
        pytest.skip("no selected test takes the cuda0 fixture")
    unmarked = [i.nodeid for i in takers if i.get_closest_marker("gpu") is None]
    assert not unmarked, unmarked
    pairs = [i for i in items if "cuda01" in getattr(i, "fixturenames", ())]
    assert all(i.get_closest_marker("gpu2") is not None for i in pairs)


# ---------------------------------------------------------------------------------------------
# memory shared with a consumer whose kernels are still queued
# ---------------------------------------------------------------------------------------------


def test_dlpack_export_freed_while_torch_still_reads(cuda0):
    torch = _torch()
    n = 1 << 26
    a = gd.ones(n, device=cuda0)
    t = torch.from_dlpack(a)  # torch passes its current stream: the export is ordered on it
    del a
    torch.cuda._sleep(SLEEP_CYCLES)  # torch's stream is busy...
    s = t.sum()  # ...so this read runs after everything below was queued
    del t  # the deleter: gpudev frees the memory (stream-ordered, on its own stream)
    b = gd.full((n,), 7.0, device=cuda0)  # may get the same block back at once
    assert b[0].item() == 7.0
    assert s.item() == pytest.approx(float(n), rel=1e-6)


def test_dlpack_export_is_ordered_for_torch_without_waiting(cuda0):
    torch = _torch()
    n = 1 << 24
    a = gd.full((n,), 2.0, device=cuda0) * 3.0  # queued on gpudev's stream
    t = torch.from_dlpack(a)  # torch's stream waits for it on the GPU
    assert t.sum().item() == pytest.approx(6.0 * n, rel=1e-6)


def test_dlpack_export_to_a_cupy_stream(cuda0):
    cp = _cupy()
    n = 1 << 24
    with cp.cuda.Stream(non_blocking=True) as stream:
        a = gd.full((n,), 3.0, device=cuda0)
        x = cp.from_dlpack(a)  # cupy names its current stream
        total = x.sum()
        del x, a
        b = gd.full((n,), 5.0, device=cuda0)
        stream.synchronize()
    assert float(total) == pytest.approx(3.0 * n, rel=1e-6) and b[-1].item() == 5.0


@pytest.mark.parametrize("stream", [0, -2, -(1 << 70)])
def test_dlpack_refuses_stream_values_the_standard_forbids(cuda0, stream):
    a = gd.ones(4, device=cuda0)
    with pytest.raises(ValueError, match=r"__dlpack__: stream=.* is not a CUDA stream; pass the consumer's stream"):
        a.__dlpack__(stream=stream)


@pytest.mark.parametrize("stream", [None, -1, 1, 2])
def test_dlpack_accepts_every_stream_the_standard_defines(cuda0, stream):
    a = gd.arange(4, dtype=gd.float32, device=cuda0)
    back = gd.from_dlpack(_Capsule(a.__dlpack__(stream=stream, max_version=(1, 0))))
    gd.synchronize()
    assert back.tolist() == [0.0, 1.0, 2.0, 3.0]


class _Capsule:
    """A DLPack producer that hands out one capsule made elsewhere."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return (2, 0)


def test_cuda_array_interface_export_freed_while_torch_still_reads(cuda0):
    torch = _torch()
    n = 1 << 26
    a = gd.ones(n, device=cuda0)
    t = torch.as_tensor(a, device="cuda:0")  # through __cuda_array_interface__, keeps `a` alive
    del a
    torch.cuda._sleep(SLEEP_CYCLES)
    s = t.sum()
    del t  # the last reference to gpudev's array: its free waits for the whole device
    b = gd.full((n,), 7.0, device=cuda0)
    assert b[0].item() == 7.0
    assert s.item() == pytest.approx(float(n), rel=1e-6)


# ---------------------------------------------------------------------------------------------
# memory given back to other libraries
# ---------------------------------------------------------------------------------------------


def test_freed_memory_goes_back_for_torch_after_a_synchronize(cuda0):
    torch = _torch()
    gd.empty_cache(cuda0)
    torch.cuda.empty_cache()
    free, total = torch.cuda.mem_get_info()
    n = int(free * 0.7) // 4
    big = gd.empty(n, device=cuda0)
    del big
    gd.synchronize()  # the pool keeps at most an eighth of the device after this
    assert gd.memory_stats(cuda0)["reserved_bytes"] <= total // 8 + (64 << 20)
    t = torch.empty(int(free * 0.6), dtype=torch.uint8, device="cuda:0")
    del t
    torch.cuda.empty_cache()


def test_empty_cache_gives_everything_back(cuda0):
    x = gd.empty(1 << 28, device=cuda0)
    del x
    gd.empty_cache(cuda0)
    stats = gd.memory_stats(cuda0)
    assert stats["reserved_bytes"] - stats["allocated_bytes"] < (64 << 20)


def test_first_matmul_after_freeing_almost_all_memory():
    """A fresh process fills the GPU with one array and frees it without synchronizing: the
    pool holds the memory cuBLAS needs for its handle, and gives it back when asked."""
    if NUM_GPUS < 1:
        pytest.skip(NO_GPU)
    code = textwrap.dedent(
        """
        import gpudev as gd
        n = gd.gpu(0).info()["free_memory"] - (128 << 20)
        while True:  # as much of the GPU as one array can have
            try:
                a = gd.empty(n // 4, device="cuda:0")
                break
            except gd.OutOfMemoryError:
                n -= 256 << 20
        del a  # freed, stream-ordered, not given back
        x = gd.ones((64, 64), device="cuda:0")
        print((x @ x)[0, 0].item())
        """
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=240)
    assert p.returncode == 0 and p.stdout.split()[-1] == "64.0", p.stdout + p.stderr[-2000:]


# ---------------------------------------------------------------------------------------------
# the thread's current device
# ---------------------------------------------------------------------------------------------


@pytest.mark.gpu2
def test_gpudev_leaves_torchs_current_device_alone(cuda01):
    torch = _torch()
    torch.cuda.set_device(1)
    x = gd.ones((128, 128), device=cuda01[0])
    (x @ x).sum().item()
    assert torch.cuda.current_device() == 1
    t = torch.ones(3, device="cuda")  # "cuda" is the current device
    assert t.device.index == 1


def test_gpudev_leaves_the_current_device_it_found(cuda0):
    torch = _torch()
    torch.cuda.set_device(0)
    gd.ones(10, device=cuda0).sum().item()
    assert torch.cuda.current_device() == 0


# ---------------------------------------------------------------------------------------------
# threads
# ---------------------------------------------------------------------------------------------


class _Counter(threading.Thread):
    """Counts while it holds the GIL. With a long switch interval it runs only when the main
    thread gives the GIL up of its own accord: inside a blocking call that releases it."""

    def __init__(self):
        super().__init__(daemon=True)
        self.count = 0
        self.stop = False

    def run(self):
        while not self.stop:
            self.count += 1


@pytest.fixture
def counter():
    old = sys.getswitchinterval()
    sys.setswitchinterval(1.0)
    c = _Counter()
    c.start()
    yield c
    c.stop = True
    sys.setswitchinterval(old)
    c.join()


def test_upload_lets_other_threads_run(cuda0, counter):
    host = np.ones(1 << 28, dtype=np.float32)  # 1 GiB of pageable memory: tens of milliseconds
    before = counter.count
    gd.asarray(host, device=cuda0)
    assert counter.count > before


def test_synchronize_keeps_work_another_thread_queues_meanwhile(cuda0):
    n = 256 if EMULATED else 8192  # emulated products run at the CPU's speed; the queue waits anyway
    a = gd.ones((n, n), device=cuda0)
    about_to_sync = threading.Event()
    queued = []

    def worker():
        about_to_sync.wait()
        queued.append(a * 2.0)  # runs while the main thread waits inside synchronize()

    old = sys.getswitchinterval()
    sys.setswitchinterval(1.0)
    try:
        t = threading.Thread(target=worker)
        t.start()
        for _ in range(10):
            b = a @ a  # ~0.2 s of queued work in all
        about_to_sync.set()
        gd.synchronize(cuda0)
        t.join()
    finally:
        sys.setswitchinterval(old)
    assert queued and cuda0 in _C._pending_devices()
    del b


def test_benchmark_times_the_gpu_when_fn_synchronizes(cuda0):
    a = gd.ones((512, 512), device=cuda0)
    r = gd.benchmark(lambda: (a + 1.0).sum().item(), n_repeat=3)
    assert r.clock == "gpu" and list(r.gpu_times) == ["cuda:0"]


# ---------------------------------------------------------------------------------------------
# random numbers on the GPU and the CPU
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [gd.float32, gd.float64], ids=["float32", "float64"])
def test_randn_on_the_gpu_matches_the_cpu_to_a_few_ulp(cuda0, dtype):
    """Box-Muller runs in double on both, but CUDA's log, sin and cos are not the C library's:
    float64 results may differ in the last bits, float32 ones (rounded from double) hardly
    ever; rand involves no libm and is bit for bit the same."""
    n = 1 << 20
    gd.manual_seed(3)
    gpu = gd.randn(n, dtype=dtype, device=cuda0).cpu().numpy()
    gd.manual_seed(3)
    cpu = gd.randn(n, dtype=dtype).numpy()
    ulps = np.abs(gpu - cpu) / np.spacing(np.abs(cpu).astype(cpu.dtype))
    assert ulps.max() <= (1 if dtype == gd.float32 else 8)
    gd.manual_seed(3)
    u_gpu = gd.rand(n, dtype=dtype, device=cuda0).cpu().numpy()
    gd.manual_seed(3)
    np.testing.assert_array_equal(u_gpu, gd.rand(n, dtype=dtype).numpy())
