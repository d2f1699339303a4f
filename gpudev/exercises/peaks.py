"""The roofs of the roofline chart, measured on this machine: the compute peak (the best of
several float32 products of a size at which BLAS runs at full speed), the main-memory
bandwidth (an in-place add ``b += b``, exercise 5's operation, on an array far larger than the last cache), and the
same add on arrays that fit in each cache level, with the cache sizes read from the machine
(Linux sysfs for the CPU, the CUDA device properties for a GPU).

    >>> levels = cache_levels(gd.cpu())          # e.g. [{'level': 'L1d', 'bytes': 32768}, ...]
    >>> measured, peak = measure_peaks(gd.cpu(), n=512)
    >>> sorted(peak)
    ['caches', 'gbps', 'gbps_source', 'gflops', 'gflops_source']
"""

from __future__ import annotations

import functools
import glob
import operator
import os
from typing import Any

import gpudev as gd

from .._devices import device_label
from .._format import format_bytes
from .measure import step

__all__ = ["PEAK_N", "SYSFS_CACHE", "cache_levels", "elementwise_parallel_from", "level_of", "measure_peaks", "threaded"]

# A product of this size runs at the BLAS / cuBLAS peak (OpenBLAS sgemm levels off from
# n ~ 2000 on a CPU core; cuBLAS needs thousands of rows per GPU) and is still affordable: a
# 2048 product is 17 GFLOP, about 0.1 s on two CPU cores.
PEAK_N = {"cpu": 2048, "cuda": 8192}
SYSFS_CACHE = "/sys/devices/system/cpu/cpu0/cache"
_MAIN_MEMORY_MIN_BYTES = 64 * 2**20  # per array; and at least 4x the largest cache


# ---------------------------------------------------------------------------------------------
# cache sizes
# ---------------------------------------------------------------------------------------------


def _sysfs_size(text: str) -> int:
    """'32K' -> 32768, '1M' -> 1048576, '512' -> 512."""
    text = text.strip().upper()
    scale = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1:], 1)
    return int(text.rstrip("KMG")) * scale


def cache_levels(device: gd.Device, sysfs: str = SYSFS_CACHE) -> list[dict[str, Any]]:
    """The data caches of `device`, smallest first: [{'level': 'L1d', 'bytes': 32768}, ...].

    The CPU's come from Linux sysfs (`sysfs`/index*/{level,type,size}); a GPU's L2 from its
    device properties. Empty when the machine does not say (another OS, a container
    without /sys): the chart then has no cache roofs.
    """
    if device.type == "cuda":
        size = device.info().get("l2_cache_bytes")
        return [{"level": "L2", "bytes": int(size)}] if size else []
    levels = []
    for index in sorted(glob.glob(os.path.join(sysfs, "index*"))):
        try:
            with open(os.path.join(index, "type")) as f:
                kind = f.read().strip()
            with open(os.path.join(index, "level")) as f:
                level = int(f.read())
            with open(os.path.join(index, "size")) as f:
                size = _sysfs_size(f.read())
        except (OSError, ValueError):
            continue
        if kind in ("Data", "Unified") and size > 0:
            levels.append({"level": f"L{level}" + ("d" if kind == "Data" else ""), "bytes": size})
    return sorted(levels, key=lambda c: c["bytes"])


def level_of(footprint: float | None, levels: list[dict[str, Any]]) -> str:
    """The smallest cache level that holds `footprint` bytes, else 'memory'.

    >>> level_of(1000, [{"level": "L1d", "bytes": 32768}]), level_of(None, [])
    ('L1d', 'memory')
    """
    for c in levels:
        if footprint is not None and footprint <= c["bytes"]:
            return c["level"]
    return "memory"


# ---------------------------------------------------------------------------------------------
# measuring
# ---------------------------------------------------------------------------------------------


def _best(fn: Any, repeats: int, budget_s: float) -> dict[str, Any]:
    """gd.benchmark of `fn`: the fastest of up to `repeats` repeats within `budget_s` seconds."""
    r = gd.benchmark(fn, n_warmup=1, n_repeat=repeats, max_duration=budget_s)
    return {"best_s": r.min, "median_s": r.median, "times": r.times, "clock": r.clock}


def elementwise_parallel_from() -> int:
    """Elements from which gpudev splits an elementwise operation over threads (on the CPU,
    when it has more than one thread)."""
    return int(gd._C._cpu_facts()["elementwise_parallel_from"])


def threaded(device: gd.Device, elements: int) -> bool:
    """True when an elementwise operation on `elements` runs on several CPU threads.

    >>> threaded(gd.cpu(), 16)
    False
    """
    return device.type == "cpu" and gd.get_num_threads() > 1 and elements >= elementwise_parallel_from()


def _stream_add(device: gd.Device, elements: int, repeats: int, budget_s: float) -> dict[str, Any]:
    """b += b on one float32 array of `elements` (exercise 5's operation, so that its points
    and these roofs are the same workload): 8 bytes moved and 1 FLOP per element."""
    b = gd.zeros((elements,), device=device)
    timed = _best(functools.partial(operator.iadd, b, b), repeats, budget_s)
    return {**timed, "flops": float(elements), "bytes": 8.0 * elements, "footprint": 4.0 * elements,
            "threaded": threaded(device, elements)}


def measure_peaks(device: gd.Device, *, n: int | None = None, repeats: int = 5,
                  budget_s: float = 3.0) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Measure `device`'s roofs; returns (measurements, peaks). `n` is the size of the
    products (default PEAK_N for the device's type).

    Each measurement: ``task`` ('peak sgemm' or 'stream add'), ``label``, ``level`` (cache
    level or 'memory'), the best and median time, ``flops``, ``bytes`` and ``footprint``.
    ``peaks``: ``gflops`` (best sgemm), ``gbps`` (main memory), ``caches`` (one bandwidth per
    cache level, smallest first) and where each comes from. Each measurement stops after
    `repeats` repeats or `budget_s` seconds, whichever comes first.
    """
    n = n or PEAK_N[device.type]
    step(f"1: peak: best of {repeats} products {n}x{n} on {device_label(device)}")
    a, b = gd.randn(n, n, device=device), gd.randn(n, n, device=device)
    mm = _best(functools.partial(gd.matmul, a, b), repeats, budget_s)
    del a, b
    out = [{"task": "peak sgemm", "label": f"peak: matmul {n}x{n}",
            "level": None, **mm, "flops": 2.0 * n**3, "bytes": 12.0 * n * n, "footprint": 12.0 * n * n}]
    levels = cache_levels(device)
    largest = max((c["bytes"] for c in levels), default=0)
    dram_elements = max(4 * largest, _MAIN_MEMORY_MIN_BYTES) // 4
    plan = [(c["level"], c["bytes"] // 8) for c in levels] + [("memory", dram_elements)]
    for level, elements in plan:  # an array filling half of each level, then main memory
        where = "main memory" if level == "memory" else f"{level} ({format_bytes(elements * 4)} of data)"
        step(f"1: peak: b += b in {where} on {device_label(device)}")
        # cache-resident adds take microseconds: more repeats cost nothing and find the best
        add = _stream_add(device, int(elements), repeats if level == "memory" else 4 * repeats, budget_s)
        out.append({"task": "stream add", "label": f"peak: b += b in {where}", "level": level, **add})
    peak = {"gflops": out[0]["flops"] / out[0]["best_s"] / 1e9,
            "gflops_source": f"best of {len(mm['times'])} products {n}x{n}",
            "gbps": out[-1]["bytes"] / out[-1]["best_s"] / 1e9,
            "gbps_source": f"best b += b on {format_bytes(dram_elements * 4)}",
            "caches": [{"level": m["level"], "bytes": c["bytes"], "gbps": m["bytes"] / m["best_s"] / 1e9,
                        "source": f"best b += b on {format_bytes(m['footprint'])}"}
                       for m, c in zip(out[1:-1], levels)]}
    return out, peak
