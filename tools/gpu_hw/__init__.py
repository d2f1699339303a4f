"""gpu_hw - what tools/gpu_hw_check.py runs: checks of gpudev that only a real GPU can make
(checks.py, numerics.py) and the bench rows that give the manual's GPU numbers (docs/guides/gpu.md) beside their
datasheet figures (bench.py). This module is their frame: the sizes (full on a GPU, cut for an
emulated one), the registry, running one item and keeping its result, and timing a peer
library on its own clock.

Every item's result is written to $GPU_LOG_DIR/<part>.json as soon as it is known, and when
tools/gpu_check.sh runs it ($GPU_CHECK_ARCHIVE set) the log folder is packed into that archive
too, so a run cut short still brings back every item that finished.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import tarfile
import time
import traceback
from collections.abc import Callable

import numpy as np

import gpudev as gd

# ---------------------------------------------------------------------------------------------
# sizes
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Sizes:
    """Every size an item uses. FULL is for a real GPU (about 40 GB of its memory at most);
    SMALL keeps the same shapes of work at sizes an emulated GPU (or the CPU) runs in seconds."""

    label: str = "full"
    dev: str = "cuda:0"
    big: int = 2**31  # element offsets past this need 64-bit index math
    rows: int = 65537  # rows * cols = big + 32768 elements; rows is prime
    cols: int = 32768
    n: int = 2**31 + 2**20 + 3
    mask_n: int = 2**28 + 2**20 + 5  # bytes of a mask: past 2**27
    huge_mask: int = 2**31 + 2**20 + 7  # bytes of a mask: past 2**31
    arg_rows: int = 10**8  # the (1e8, 2) argmax
    min_argmax_gbs: float = 300.0  # what that argmax must read at least (an H200 reads ~4 TB/s)
    random_n: int = 10**7  # numbers compared between the GPU and the CPU, per dtype and generator
    bits_n: int = 10**6  # arguments per float function whose bits are compared with the CPU's
    spread_rows: int = 10**6  # scatter-add of this many rows of 64 into 16 rows, run to run
    sum_n: int = 10**9  # float32 elements of the event-timed sum
    pool: bool = True  # the checks that fill most of the GPU's memory
    sgemm: tuple[int, ...] = (4096, 8192)
    copy_bytes: int = 1 << 30  # device-to-device copy, sum, bool import
    transfer_bytes: int = 256 << 20  # host <-> device
    latency_calls: int = 2000
    strided: int = 8192  # a + b.T, (strided, strided) float32
    gather_rows: int = 1 << 24  # rows of 3 float32 gathered by index
    repeats: int = 10


FULL = Sizes()
SMALL = Sizes(label="small", big=1000, rows=8191, cols=16, n=1000 + 2**10 + 3, mask_n=2**13 + 5, huge_mask=2**14 + 7,
              arg_rows=10**5, min_argmax_gbs=0.0, random_n=10**4, bits_n=2000, spread_rows=2000, sum_n=10**5,
              pool=False, sgemm=(64, 128), copy_bytes=1 << 20, transfer_bytes=1 << 20, latency_calls=50,
              strided=64, gather_rows=1000, repeats=2)
S = Sizes()  # the sizes in use, which the item modules import: use() changes them in place


def use(sizes: Sizes, dev: str | None = None) -> None:
    """Run with `sizes` (FULL or SMALL), on `dev` when given."""
    for f in dataclasses.fields(Sizes):
        setattr(S, f.name, getattr(sizes, f.name))
    if dev:
        S.dev = dev

# ---------------------------------------------------------------------------------------------
# the registry
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Item:
    name: str
    fn: Callable[[], str | dict | None]
    part: str  # 'checks' or 'bench'
    full_only: bool  # left out of the quick check (tools/gpu_check.sh --quick)


ITEMS: list[Item] = []  # in the order they run
RESULTS: dict[str, dict] = {}


class Skip(Exception):
    """An item that cannot run here (a library missing): not a failure."""


def check(name: str, part: str = "checks", full_only: bool = False) -> Callable:
    """Register the decorated function as the item `name`. It returns a message, or for a bench
    row a dict of figures (see bench.py), and fails by raising."""

    def register(fn: Callable[[], str | dict | None]) -> Callable:
        ITEMS.append(Item(name, fn, part, full_only))
        return fn

    return register


def eq(got, want, what: str) -> None:
    assert got == want, f"{what}: got {got!r}, want {want!r}"


def need(module: str):
    """The module, or Skip when it is not installed."""
    try:
        return __import__(module)
    except ImportError as e:
        raise Skip(f"{module} not installed ({e})") from None


def cuda_torch():
    """PyTorch when it can use this GPU, else Skip (an emulated GPU is none of torch's)."""
    if gd.Device(S.dev).emulated:  # asked first: importing torch takes seconds
        raise Skip("torch cannot use an emulated GPU's memory")
    torch = need("torch")
    if not torch.cuda.is_available():
        raise Skip("torch sees no CUDA GPU")
    return torch


def ulps_apart(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """How many representable numbers lie between a and b, elementwise (same float dtype; NaNs
    of any payload count as equal)."""
    bits = np.int64 if a.dtype == np.float64 else np.int32
    ia, ib = (x.view(bits).astype(np.int64) for x in (a, b))
    ia, ib = (np.where(i < 0, np.iinfo(bits).min - i, i) for i in (ia, ib))  # sign-magnitude to ordered
    return np.where(np.isnan(a) & np.isnan(b), 0, np.abs(ia - ib))


def torch_seconds(fn: Callable[[], object], repeats: int | None = None, warmup: int = 2) -> float:
    """The median seconds of fn on torch's current stream, timed with torch's CUDA events (never
    gpudev's benchmark, which waits for no torch work)."""
    import torch

    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats or S.repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return sorted(times)[len(times) // 2]


def gd_seconds(fn: Callable[[], object], repeats: int | None = None) -> float:
    """The median seconds of fn on gpudev's stream, timed with CUDA events by gd.benchmark."""
    r = gd.benchmark(fn, n_warmup=2, n_repeat=repeats or S.repeats, n_calls=1, devices=[S.dev])
    assert r.clock == "gpu" or gd.Device(S.dev).type == "cpu", f"timed on the {r.clock} clock"
    return r.median


# ---------------------------------------------------------------------------------------------
# running and keeping results
# ---------------------------------------------------------------------------------------------


def pack() -> None:
    """The log folder into $GPU_CHECK_ARCHIVE, replaced whole (a run killed while packing keeps
    the previous archive), with tools/gpu_check.sh's summary as it stands."""
    archive, folder = os.environ.get("GPU_CHECK_ARCHIVE"), os.environ.get("GPU_LOG_DIR")
    if not archive or not folder:
        return
    summary = os.environ.get("GPU_CHECK_SUMMARY")
    if summary and os.path.exists(summary):
        shutil.copyfile(summary, os.path.join(folder, "summary.txt"))
    with tarfile.open(archive + ".new", "w:gz") as t:
        for name in sorted(os.listdir(folder)):
            t.add(os.path.join(folder, name), arcname=f"./{name}")  # as tar -C folder . names them
    os.replace(archive + ".new", archive)


def killed_here(name: str) -> None:
    """tests/test_gpu_check.py's cut: GPU_CHECK_INJECT_KILL=item:NAME kills the whole run (this
    process and tools/gpu_check.sh, one process group) as it reaches the item NAME, as a machine
    taken away would, so the test can see what the archive kept."""
    if os.environ.get("GPU_CHECK_INJECT_KILL") == f"item:{name}":
        print(f"GPU_CHECK_INJECT_KILL: killing the run at {name!r}", flush=True)
        if os.environ.get("GPU_CHECK_PGID"):  # the script's group (timeout(1) put this process in its own)
            os.killpg(int(os.environ["GPU_CHECK_PGID"]), signal.SIGKILL)
        os.killpg(os.getpgid(0), signal.SIGKILL)


def run_item(item: Item) -> dict:
    """Run one item, print and record what it gave, free what it left on the GPU, keep it."""
    killed_here(item.name)
    t0 = time.perf_counter()
    figures = None
    try:
        got = item.fn()
        status, msg = "PASS", ""
        if isinstance(got, dict):
            figures, msg = got, got.get("line", "")
        elif got:
            msg = got
    except Skip as e:
        status, msg = "SKIP", str(e)
    except AssertionError as e:
        status, msg = "FAIL", str(e)
    except Exception as e:  # noqa: BLE001 - every failure is reported, the next item runs
        status, msg = "FAIL", f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=4)}"
    seconds = time.perf_counter() - t0
    result = {"status": status, "seconds": round(seconds, 2), "message": msg}
    if figures:
        result["figures"] = {k: v for k, v in figures.items() if k != "line"}
    RESULTS[item.name] = result
    print(f"{status:4} {item.name} ({seconds:.1f} s) {msg}", flush=True)
    try:
        gd.synchronize()
        if gd.Device(S.dev).type == "cuda":
            gd.empty_cache(S.dev)
    except gd.GpudevError as e:
        print(f"     after {item.name}: {type(e).__name__}: {e}", flush=True)
    keep(item.part)
    return result


def keep(part: str) -> None:
    folder = os.environ.get("GPU_LOG_DIR")
    if folder:
        with open(os.path.join(folder, f"{part}.json"), "w") as f:
            json.dump(RESULTS, f, indent=1)
        pack()
