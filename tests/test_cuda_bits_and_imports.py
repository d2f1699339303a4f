"""The CUDA backend's bits, index math, copies and imports, on emulated GPUs, where the emulation
can show them (a real GPU's side is tools/gpu_hw_check.py's):

- every float function gives the CPU's bits (the emulation is compiled without fused
  multiply-adds, as the CPU is with -ffp-contract=off and the GPU with -fmad=false);
- one shape's sums give the same bits on a GPU of 2 and of 132 multiprocessors (the split plan
  depends on the shape alone);
- both sides of the choices left to hardware compute the same: 32- and 64-bit index math
  (GPUDEV_CUDA_WIDE_INDEX=1), CUDA's own and gpudev's staged blocking copies
  (GPUDEV_CUDA_STAGED_COPIES=1);
- a GPU bool tensor from DLPack is checked for bytes other than 0/1 on the GPU: shared without
  a copy when it holds 0/1, copied and normalized when a byte in its head, a word or its tail
  holds more;
- an export for the per-thread default stream released from another thread makes the owner's
  free wait for the whole device (that stream is another one there).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import gpudev as gd
from test_dlpack import USED, _api, managed

pytestmark = pytest.mark.skipif(not gd.emulation.active(), reason="runs on emulated GPUs (make test-gpu-emu)")


def _float_rows() -> list:
    return [op for op in gd._C._ops if op.function and "float32" in op.dtypes]


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_every_float_function_gives_the_cpus_bits(cuda0, dtype):
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(4096) * np.exp2(rng.integers(-20, 20, 4096))).astype(dtype)
    x[:8] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 88.5]
    y = np.roll(x, 5)
    for op in _float_rows():
        fn = getattr(gd, op.name)
        args = (x, y)[: op.arity]
        with np.errstate(all="ignore"):
            gpu = fn(*(gd.asarray(a, device=cuda0) for a in args)).cpu().numpy()
            cpu = fn(*(gd.asarray(a) for a in args)).numpy()
        differ = gpu.view(np.uint8).reshape(len(gpu), -1) != cpu.view(np.uint8).reshape(len(cpu), -1)
        nans = np.isnan(gpu) & np.isnan(cpu) if gpu.dtype != np.bool_ else np.zeros(len(gpu), bool)
        bad = np.flatnonzero(differ.any(axis=1) & ~nans)  # a NaN's sign and payload are not compared
        assert not len(bad), (op.name, x[bad[:5]], gpu[bad[:5]], cpu[bad[:5]])


SUMS = """
import gpudev as gd, numpy as np
rng = np.random.default_rng(1)
out = {}
for shape, axis in (((1 << 20,), None), ((3, 200000), 1), ((200000, 3), 0), ((64, 4096), 0), ((5, 700, 9), 1)):
    for dt in ("float32", "float64"):
        x = gd.asarray(rng.standard_normal(shape).astype(dt), device="cuda:0")
        out[f"{shape} {axis} {dt}"] = x.sum(axis=axis).cpu().numpy().tobytes().hex()
print(out)
"""


def _child(code: str, **env: str) -> str:
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "GPUDEV_EMULATE_GPUS": "1", **env})
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout.strip().splitlines()[-1]


def test_sums_give_the_same_bits_on_any_number_of_multiprocessors(cuda0):
    """The split plan once used the multiprocessor count: one shape added its float32 and
    float64 elements in another order on an H200 (132) than on a smaller GPU."""
    few = _child(SUMS, GPUDEV_EMULATE_GPU_MULTIPROCESSORS="2")
    many = _child(SUMS, GPUDEV_EMULATE_GPU_MULTIPROCESSORS="132")
    assert few == many


CHOICES = """
import gpudev as gd, numpy as np, json
rng = np.random.default_rng(2)
dev = "cuda:0"
out = {}
a, b = rng.standard_normal((300, 301)).astype("float32"), rng.standard_normal((301, 300)).astype("float32")
out["strided add"] = (gd.asarray(a, device=dev) + gd.asarray(b, device=dev).T).cpu().numpy()
out["broadcast"] = (gd.asarray(a[:, :1], device=dev) * gd.asarray(b[:1, :300], device=dev)).cpu().numpy()
c = gd.asarray(a > 0, device=dev)
out["where"] = gd.where(c.T, gd.asarray(b, device=dev), 0.5).cpu().numpy()
src, idx = rng.standard_normal((1000, 3)).astype("float32"), rng.integers(-1000, 1000, 5000)
out["gather"] = gd.asarray(src, device=dev)[gd.asarray(idx, device=dev)].cpu().numpy()
acc = gd.zeros((7, 3), dtype=gd.float64, device=dev)
rows = np.round(src[idx] * 16).astype("float64")  # integers: exact sums in any order of the atomics
gd._C._index_add(acc, gd.asarray(idx % 7, device=dev), gd.asarray(rows, device=dev))
out["scatter-add"] = acc.cpu().numpy()
for n in (1 << 20, (1 << 20) - 1, (8 << 20) + 3, (17 << 20) + 5):  # around the staging buffers' 8 MiB
    h = rng.integers(0, 255, n, dtype=np.uint8)
    back = gd.asarray(h.view(bool), device=dev).cpu().numpy()
    assert np.array_equal(back, h != 0), n
    out[f"round trip {n}"] = back
ref = {"strided add": a + b.T, "broadcast": a[:, :1] * b[:1, :300], "where": np.where((a > 0).T, b, 0.5),
       "gather": src[idx]}
acc_ref = np.zeros((7, 3))
np.add.at(acc_ref, idx % 7, rows)
ref["scatter-add"] = acc_ref
wrong = [k for k, v in ref.items() if not np.array_equal(out[k], v)]
assert not wrong, wrong
print(json.dumps({k: v.tobytes().hex()[:4096] + str(v.shape) for k, v in out.items()}))
"""


def test_both_sides_of_the_choices_left_to_hardware_compute_the_same(cuda0):
    """32- and 64-bit index math, CUDA's and gpudev's staged copies: NumPy's results (checked
    in each process) and each other's bits."""
    default = json.loads(_child(CHOICES))
    switched = json.loads(_child(CHOICES, GPUDEV_CUDA_WIDE_INDEX="1", GPUDEV_CUDA_STAGED_COPIES="1"))
    assert default == switched


# ---------------------------------------------------------------------------------------------
# bool tensors from DLPack, checked on the GPU
# ---------------------------------------------------------------------------------------------


class _Producer:
    """A GPU DLPack producer of bool tensors: an int32 gpudev array's memory, handed out as
    `n` bools from byte `offset` (its bytes set through the int32 values)."""

    def __init__(self, words, offset: int, n: int, device: gd.Device):
        self.words = gd.asarray(np.asarray(words, dtype=np.uint32).view(np.int32), device=device)
        self.offset, self.n = offset, n

    def __dlpack__(self, **kwargs):
        capsule = self.words.__dlpack__(max_version=(1, 0))
        t = managed(capsule).dl_tensor
        t.dtype.code, t.dtype.bits, t.shape[0], t.strides[0], t.byte_offset = 6, 8, self.n, 1, self.offset
        return capsule

    def __dlpack_device__(self):
        return (2, self.words.device.index)


def _bytes(p: _Producer) -> np.ndarray:
    return p.words.cpu().numpy().view(np.uint8)[p.offset:p.offset + p.n]


@pytest.mark.parametrize("offset,n", [(0, 64), (1, 63), (3, 5), (2, 1), (0, 3), (1, 64)])
def test_a_gpu_bool_tensor_of_0_and_1_is_shared_and_never_downloaded(cuda0, offset, n):
    p = _Producer([0x01000100, 0x00010001, 0x01010101, 0] * 4 + [0x01], offset, n, cuda0)
    with gd.trace() as tr:
        b = gd.from_dlpack(p)
    assert tr.summary()["totals"]["copies"] == 0, tr.summary()  # the old check downloaded it all
    assert b.cpu().numpy().view(np.uint8).tolist() == _bytes(p).tolist()
    p.words[0] = 0  # shared: a write to the producer's memory shows
    assert b.cpu().numpy().view(np.uint8).tolist() == _bytes(p).tolist()


@pytest.mark.parametrize("at", [1, 2, 6, 33, 62], ids=["head", "head-2", "word", "middle", "tail"])
def test_a_gpu_bool_tensor_with_another_byte_anywhere_is_copied_as_0_and_1(cuda0, at):
    words = [0x01000100] * 16
    raw = np.array(words, dtype=np.uint32).view(np.uint8).copy()
    raw[at] = 7
    p = _Producer(raw.view(np.uint32).tolist(), 1, 62, cuda0)  # bytes 1..62: a head of 3, a tail of 3
    with gd.trace() as tr:
        b = gd.from_dlpack(p)
    assert tr.summary()["totals"]["copies"] == 2, tr.summary()  # down, normalized, up
    want = (_bytes(p) != 0).astype(np.uint8)
    assert b.cpu().numpy().view(np.uint8).tolist() == want.tolist() and b.sum().item() == int(want.sum())
    p.words[0] = 0  # a copy: the producer's later writes stay there
    assert b.cpu().numpy().view(np.uint8).tolist() == want.tolist()


# ---------------------------------------------------------------------------------------------
# an export to the per-thread default stream, released on another thread
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("release_on", ["same thread", "another thread"])
def test_per_thread_stream_export_released_elsewhere_waits_for_the_whole_device(cuda0, release_on):
    """The per-thread default stream named at export is the exporting thread's: a release on
    another thread cannot order on it, so the owner's free waits for the whole device (which
    runs everything queued, on the emulation), while a release on the same thread orders on
    the stream and waits for nothing."""
    b = gd.ones(1000, device=cuda0) * 2.0
    capsule = b.__dlpack__(stream=2, max_version=(1, 0))
    name = _api.PyCapsule_GetName(capsule)
    ptr = _api.PyCapsule_GetPointer(capsule, name)
    m = managed(capsule)
    assert _api.PyCapsule_SetName(capsule, USED[name]) == 0  # consumed: the tensor is ours now
    del capsule
    if release_on == "same thread":
        m.deleter(ptr)
    else:
        worker = threading.Thread(target=m.deleter, args=(ptr,))
        worker.start()
        worker.join()
    assert gd.emulation.pending_operations() > 0  # nothing has waited for b's kernels yet
    del b  # the last reference: the free
    waited = gd.emulation.pending_operations() == 0
    assert waited == (release_on == "another thread")
    gd.synchronize()


def test_a_large_gpu_bool_tensor_is_checked_in_passes_and_a_byte_in_the_last_one_counts(cuda0):
    """Past 64 MiB the check runs in passes over a temporary of 64 MiB."""
    words = np.full((64 << 20) // 4 + 1000, 0x01000001, dtype=np.uint32)
    p = _Producer(words, 2, len(words) * 4 - 3, cuda0)
    with gd.trace() as tr:
        b = gd.from_dlpack(p)
    assert tr.summary()["totals"]["copies"] == 0 and b.__cuda_array_interface__["data"][0] == \
        p.words.__cuda_array_interface__["data"][0] + 2
    words[-2] = 0x00000300  # a byte 3 in the second pass
    p = _Producer(words, 2, len(words) * 4 - 3, cuda0)
    b = gd.from_dlpack(p)
    assert b.__cuda_array_interface__["data"][0] != p.words.__cuda_array_interface__["data"][0] + 2
    assert b.astype(gd.int32).max().item() == 1 and b.sum().item() == int((_bytes(p) != 0).sum())
