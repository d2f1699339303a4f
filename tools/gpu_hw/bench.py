"""bench.py - the GPU bench rows behind the manual's GPU numbers (docs/guides/gpu.md), each beside its datasheet
figure: which GPU this is (an H200 NVL from an SXM before SGEMM is judged), SGEMM 4096 and
8192 against cuBLAS through PyTorch, device copy bandwidth, launch and synchronize latency,
host-device transfers (pageable, and pinned through PyTorch), sum and argmax bandwidth, the
cost of importing a bool tensor, and the two choices only hardware can make: 32- or 64-bit
index math (strided elementwise, gathers) and staging blocking copies through pinned
buffers, each side timed in a process of its own.

Every peer is timed with its own synchronization: gpudev with CUDA events on its stream
(gd.benchmark), PyTorch with torch.cuda.Event on its stream, a transfer by the host clock
around a copy that is itself blocking.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import time

import numpy as np

import gpudev as gd

from . import S, Skip, check, cuda_torch, gd_seconds, torch_seconds

# FP32 TFLOP/s without tensor cores, HBM TB/s, host link GB/s per direction (PCIe 5.0 x16),
# from NVIDIA's H200 and H100 datasheets.
DATASHEETS = {
    "H200 SXM": (67.0, 4.8, 64.0), "H200 NVL": (60.0, 4.8, 64.0),
    "H100 SXM": (67.0, 3.35, 64.0), "H100 NVL": (60.0, 3.9, 64.0), "H100 PCIe": (51.0, 2.0, 64.0),
}
SXM_MIN_WATTS = 650  # an SXM H200 or H100 is allowed 700 W; NVL and PCIe cards 600 W or less


@functools.lru_cache(maxsize=None)
def variant() -> tuple[str, dict]:
    """The datasheet this GPU answers to, by its name and its power limit (nvidia-smi)."""
    info = gd.gpu(int(S.dev.split(":")[1])).info()
    if info.get("emulated"):
        return "emulated", info
    name = info["name"]
    watts = None
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=power.max_limit", "--format=csv,noheader,nounits",
                              "-i", S.dev.split(":")[1]], capture_output=True, text=True, timeout=20).stdout
        watts = float(out.strip().splitlines()[0])
    except (OSError, ValueError, IndexError, subprocess.TimeoutExpired):
        pass
    info["power_max_w"] = watts
    chip = "H200" if "H200" in name else "H100" if "H100" in name else None
    if chip is None:
        return f"unknown ({name})", info
    form = "NVL" if "NVL" in name else "PCIe" if "PCIe" in name else "SXM"
    if form == "SXM" and watts is not None and watts < SXM_MIN_WATTS:
        form = "NVL"  # named as an SXM part, powered as a card: judge it by the card's figures
    return f"{chip} {form}", info


def sheet(what: int) -> float | None:
    """Datasheet figure `what` (0 TFLOP/s, 1 TB/s, 2 GB/s) of this GPU, None when unknown."""
    figures = DATASHEETS.get(variant()[0])
    return figures[what] if figures else None


def row(what: str, unit: str, gpudev: float, torch: float | None, datasheet: float | None) -> dict:
    """A bench row: the figures, and its line with each beside the datasheet."""
    parts = [f"{what}: gpudev {gpudev:.4g} {unit}"]
    if torch is not None:
        parts.append(f"torch {torch:.4g} {unit}")
    if datasheet:
        parts.append(f"datasheet {datasheet:.4g} {unit} (gpudev at {gpudev / datasheet:.0%})")
    elif gd.Device(S.dev).emulated:
        parts.append("emulated GPU: CPU times, no GPU figure")
    return {"line": ", ".join(parts), "unit": unit, "gpudev": gpudev, "torch": torch, "datasheet": datasheet}


def maybe_torch():
    try:
        return cuda_torch()
    except Skip:
        return None


@check("gpu: which GPU this is, so that each row is held to its own datasheet", part="bench")
def _():
    name, info = variant()
    fields = {k: info.get(k) for k in ("name", "multiprocessors", "clock_rate_khz", "memory_clock_rate_khz",
                                       "total_memory", "power_max_w")}
    return {"line": f"{name}: " + ", ".join(f"{k} {v}" for k, v in fields.items()), "variant": name, **fields}


for _i, _n in enumerate(S.sgemm):

    @check(f"SGEMM {_n} (float32, TF32 off) against cuBLAS through torch", part="bench")
    def _(i: int = _i):
        n = S.sgemm[i]  # the size in use (cut on an emulated GPU)
        gd.manual_seed(1)
        a, b = gd.randn(n, n, device=S.dev), gd.randn(n, n, device=S.dev)
        flop = 2.0 * n**3
        ours = flop / gd_seconds(lambda: a @ b) / 1e12
        torch, theirs = maybe_torch(), None
        if torch is not None:
            torch.backends.cuda.matmul.allow_tf32 = False
            ta, tb = torch.randn(n, n, device="cuda"), torch.randn(n, n, device="cuda")
            theirs = flop / torch_seconds(lambda: ta @ tb) / 1e12
        return row(f"SGEMM {n}", "TFLOP/s", ours, theirs, sheet(0))


@check("device copy (read + write) against HBM bandwidth", part="bench")
def _():
    n = S.copy_bytes // 4
    x, y = gd.ones(n, device=S.dev), gd.empty(n, device=S.dev)

    def copy():
        y[...] = x

    ours = 2 * S.copy_bytes / gd_seconds(copy) / 1e9
    torch, theirs = maybe_torch(), None
    if torch is not None:
        tx, ty = torch.ones(n, device="cuda"), torch.empty(n, device="cuda")
        theirs = 2 * S.copy_bytes / torch_seconds(lambda: ty.copy_(tx)) / 1e9
    tb = sheet(1)
    return row(f"copy of {S.copy_bytes >> 20} MiB", "GB/s", ours, theirs, tb * 1000 if tb else None)


def issue_and_round_trip(op, sync) -> tuple[float, float]:
    """(seconds per call to issue `op` back to back, seconds of one op then a synchronize)."""
    op()
    sync()
    t0 = time.perf_counter()
    for _ in range(S.latency_calls):
        op()
    issue = (time.perf_counter() - t0) / S.latency_calls
    sync()
    trips = []
    for _ in range(min(S.latency_calls, 200)):
        t0 = time.perf_counter()
        op()
        sync()
        trips.append(time.perf_counter() - t0)
    return issue, float(np.median(trips))


@check("launch latency (a 1-element add, issued back to back) and one add + synchronize", part="bench")
def _():
    x = gd.ones(1, device=S.dev)
    issue, trip = issue_and_round_trip(lambda: x + 1, gd.synchronize)
    torch, t_issue, t_trip = maybe_torch(), None, None
    if torch is not None:
        t = torch.ones(1, device="cuda")
        t_issue, t_trip = issue_and_round_trip(lambda: t + 1, torch.cuda.synchronize)
    launch = row("launch", "us", issue * 1e6, t_issue * 1e6 if t_issue else None, None)
    sync = row("add + synchronize", "us", trip * 1e6, t_trip * 1e6 if t_trip else None, None)
    return {"line": launch["line"] + "; " + sync["line"], "launch_us": launch, "round_trip_us": sync}


def transfers() -> dict[str, float]:
    """gpudev's blocking host<->device copies of S.transfer_bytes (pageable NumPy memory), GB/s,
    by the host clock around the copy, which returns when the bytes are there."""
    h = np.ones(S.transfer_bytes // 4, dtype=np.float32)
    d = gd.asarray(h, device=S.dev)
    up, down = [], []
    for _ in range(S.repeats):
        t0 = time.perf_counter()
        gd.asarray(h, device=S.dev)
        up.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        d.cpu()
        down.append(time.perf_counter() - t0)
    return {"h2d": S.transfer_bytes / float(np.median(up)) / 1e9,
            "d2h": S.transfer_bytes / float(np.median(down)) / 1e9}


@check("host -> device and device -> host: gpudev (pageable), torch pageable and pinned", part="bench")
def _():
    ours = transfers()
    torch, peers = maybe_torch(), {}
    if torch is not None:
        n = S.transfer_bytes // 4
        dev = torch.empty(n, device="cuda")
        for kind, host in (("pageable", torch.ones(n)), ("pinned", torch.ones(n).pin_memory())):
            peers[f"h2d {kind}"] = S.transfer_bytes / torch_seconds(lambda: dev.copy_(host)) / 1e9
            peers[f"d2h {kind}"] = S.transfer_bytes / torch_seconds(lambda: host.copy_(dev)) / 1e9
    link = sheet(2)
    rows = {k: row(f"{k} {S.transfer_bytes >> 20} MiB", "GB/s", v, peers.get(f"{k} pageable"), link)
            for k, v in ours.items()}
    line = "; ".join(r["line"] for r in rows.values())
    if peers:
        line += "; torch pinned " + ", ".join(f"{k[:3]} {v:.3g} GB/s" for k, v in peers.items() if "pinned" in k)
    return {"line": line, **rows, "torch": peers}


@check("sum and argmax(axis=0) bandwidth against HBM", part="bench")
def _():
    n = S.copy_bytes // 4
    x = gd.ones(n, device=S.dev)
    gd.manual_seed(2)
    y = gd.randn(S.arg_rows, 2, device=S.dev)
    ours = (S.copy_bytes / gd_seconds(lambda: x.sum()) / 1e9,
            S.arg_rows * 8 / gd_seconds(lambda: y.argmax(axis=0)) / 1e9)
    torch, theirs = maybe_torch(), (None, None)
    if torch is not None:
        tx, ty = torch.ones(n, device="cuda"), torch.randn(S.arg_rows, 2, device="cuda")
        theirs = (S.copy_bytes / torch_seconds(lambda: tx.sum()) / 1e9,
                  S.arg_rows * 8 / torch_seconds(lambda: ty.argmax(dim=0)) / 1e9)
    tb = sheet(1)
    rows = [row(what, "GB/s", o, t, tb * 1000 if tb else None)
            for what, o, t in zip((f"sum of {S.copy_bytes >> 20} MiB", f"argmax(axis=0) of ({S.arg_rows}, 2)"),
                                  ours, theirs)]
    return {"line": "; ".join(r["line"] for r in rows), "sum": rows[0], "argmax": rows[1]}


@check("bool import: gd.from_dlpack of a torch bool tensor of 0/1 (counted on the GPU)", part="bench")
def _():
    torch = cuda_torch()
    t = torch.zeros(S.copy_bytes, dtype=torch.bool, device="cuda")
    torch.cuda.synchronize()
    times, downloads = [], []
    for _ in range(S.repeats):
        t0 = time.perf_counter()
        gd.from_dlpack(t)
        times.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        t.cpu()
        downloads.append(time.perf_counter() - t0)
    ms, old = float(np.median(times)) * 1e3, float(np.median(downloads)) * 1e3
    return {"line": f"{S.copy_bytes >> 20} MiB: import {ms:.3g} ms; a download of it (the old path's "
                    f"least cost) {old:.3g} ms", "import_ms": ms, "download_ms": old}


# ---------------------------------------------------------------------------------------------
# the choices only hardware can make: both sides timed, each in its own process
# ---------------------------------------------------------------------------------------------

SWITCHES = {"GPUDEV_CUDA_WIDE_INDEX": "1", "GPUDEV_CUDA_STAGED_COPIES": "1"}


def choice_figures() -> dict[str, float]:
    """What the switches change, in GB/s: a strided add (a + b.T), a gather of rows of 3 float32
    by a random index (64-bit or 32-bit index math), and the blocking transfers (CUDA's own
    staging of pageable memory, or gpudev's through pinned buffers)."""
    n = S.strided
    a, b = gd.ones((n, n), device=S.dev), gd.ones((n, n), device=S.dev)
    out = {"strided add": 3 * n * n * 4 / gd_seconds(lambda: a + b.T) / 1e9}
    src = gd.ones((S.gather_rows, 3), device=S.dev)
    gd.manual_seed(4)
    idx = (gd.rand(S.gather_rows, device=S.dev) * S.gather_rows).astype(gd.int64)
    out["gather rows of 3"] = 2 * S.gather_rows * 12 / gd_seconds(lambda: src[idx]) / 1e9
    out.update(transfers())
    return out


@check("choices for hardware: 32- vs 64-bit index math, staged vs direct copies", part="bench")
def _():
    here = choice_figures()
    tool = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "gpu_hw_check.py")
    cmd = [sys.executable, tool, "--choice-figures", "--device", S.dev] + (["--small"] if S.label == "small" else [])
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env={**os.environ, **SWITCHES})
    assert p.returncode == 0, f"{' '.join(cmd)} with {SWITCHES}: exit {p.returncode}\n{p.stdout}\n{p.stderr[-2000:]}"
    other = json.loads(p.stdout.strip().splitlines()[-1])
    gain = {k: here[k] / other[k] for k in here}
    verdict = [
        f"keep 32-bit index math: {'yes' if max(gain['strided add'], gain['gather rows of 3']) >= 1.1 else 'no'} "
        f"(narrow / wide: strided add {gain['strided add']:.2f}x, gather {gain['gather rows of 3']:.2f}x; "
        "yes at 1.10x or more on either)",
        f"stage copies by default: {'yes' if min(1 / gain['h2d'], 1 / gain['d2h']) >= 1.2 else 'no'} "
        f"(staged / direct: h2d {1 / gain['h2d']:.2f}x, d2h {1 / gain['d2h']:.2f}x; yes at 1.20x or more on both)",
    ]
    line = "default " + ", ".join(f"{k} {v:.3g}" for k, v in here.items()) + " GB/s; with " + \
        " ".join(f"{k}=1" for k in SWITCHES) + " " + ", ".join(f"{k} {v:.3g}" for k, v in other.items()) + \
        " GB/s; " + "; ".join(verdict)
    if gd.Device(S.dev).emulated:
        line += " (emulated: CPU times decide nothing)"
    return {"line": line, "default": here, "switched": other, "verdict": verdict}
