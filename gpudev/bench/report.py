"""The bench's output: the setup line, the table of rows, and the JSON document of raw times.

    >>> r = RowResult(row="sum", size="1e8", device="cpu", unit="op", number=1, per=1, stmts={},
    ...               times={}, median={"gpudev": 0.01, "numpy": 0.02}, ratio={"numpy": 0.5},
    ...               metrics={}, target=None, verdict="INFO", note="")
    >>> print(format_table([r], ["numpy"]))  # doctest: +NORMALIZE_WHITESPACE
    row  size  device  gpudev  numpy  gd/np  verdict  notes
    ---  ----  ------  ------  -----  -----  -------  -----
    sum  1e8   cpu     10 ms   20 ms  0.50   INFO
"""

from __future__ import annotations

import dataclasses
import os
import platform
from typing import Any

import gpudev as gd

from .._format import format_seconds, jsonable
from .model import RowResult
from .peers import Context

__all__ = ["describe_setup", "document", "format_table", "setup_text"]


def _metric_text(m: dict[str, float]) -> str:
    """A peer's GB/s, GFLOP/s, % of peak and error, as the notes column shows them."""
    parts = []
    if "GB/s" in m:
        parts.append(f"{m['GB/s']:.3g} GB/s")
    if "GFLOP/s" in m:
        g = m["GFLOP/s"]
        parts.append(f"{g / 1e3:.3g} TFLOP/s" if g >= 1e4 else f"{g:.3g} GFLOP/s")
    if "% peak" in m:
        parts.append(f"{m['% peak']:.0f}% peak")
    if "rel_err" in m:
        parts.append(f"err {m['rel_err']:.1e}")
    return " ".join(parts)


_ABBREV = {"gpudev": "gd", "numpy": "np", "torch": "torch", "cupy": "cupy", "timeit": "timeit"}


def format_table(results: list[RowResult], peers: list[str]) -> str:
    """The results as a fixed-width text table."""
    header = ["row", "size", "device", "gpudev"] + peers + [f"gd/{_ABBREV[p]}" for p in peers] + ["verdict", "notes"]
    body = []
    for r in results:
        times = [format_seconds(r.median[p]) if p in r.median else "-" for p in ["gpudev"] + peers]
        ratios = [f"{r.ratio[p]:.2f}" if p in r.ratio else "-" for p in peers]
        notes = [f"{_ABBREV[p]} {_metric_text(m)}" for p, m in r.metrics.items() if m]
        if r.verdict != "INFO" or r.note:
            notes.append(f"[{r.note}]")
        unit = "" if r.unit == "op" else f" /{r.unit}"
        body.append([r.row + unit, r.size, r.device] + times + ratios + [r.verdict, "; ".join(notes)])
    widths = [max(len(str(x)) for x in col) for col in zip(header, *body)]
    widths[-1] = 0  # the notes column is last and left ragged
    lines = []
    for i, cells in enumerate([header] + body):
        lines.append("  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip())
        if i == 0:
            lines.append("  ".join("-" * w for w in widths[:-1]) + "  -----")
    return "\n".join(lines)


def describe_setup(ctx: Context, repeats: int, devices: list[str], notes: list[str]) -> dict[str, Any]:
    """The run's conditions: versions, threads, CPUs, devices, repeats and configured peaks."""
    info = gd.build_info()
    blas = info.get("blas") or {}
    setup = {
        "gpudev": info.get("version"),
        "blas": f"{blas.get('name', '?')} {blas.get('version', '')}".strip(),
        "blas_core": blas.get("core"),
        "blas_core_forced": blas.get("core_forced"),
        "threads": gd.get_num_threads(),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "devices": devices,
        "repeats": repeats,
        "quick": ctx.quick,
        "peers": {name: getattr(mod, "__version__", "?") for name, mod in ctx.peers.items()},
        "peak_gflops": ctx.peak_gflops,
        "gpu_peak_tflops": ctx.gpu_peak_tflops,
        "skipped_peers": notes,
    }
    if "torch" in ctx.peers:
        setup["torch_threads"] = ctx.peers["torch"].get_num_threads()
    return setup


def setup_text(setup: dict[str, Any]) -> str:
    """The lines printed above the table."""
    peers = ", ".join(f"{k} {v}" for k, v in setup["peers"].items())
    text = (
        f"gpudev {setup['gpudev']} bench: {setup['blas']}{_core_text(setup)}, {setup['threads']} threads, "
        f"{setup['cpus']} CPUs; peers: {peers or 'none'}; median of {setup['repeats']} repeats"
        f"{' (quick)' if setup['quick'] else ''}"
    )
    if setup["peak_gflops"] is None:
        text += "\n% of peak: set GPUDEV_PEAK_GFLOPS (or --peak-gflops) to this machine's FP32 peak"
    else:
        text += f"\n% of peak against {setup['peak_gflops']:g} GFLOP/s (configured)"
    text += "\n" + _load_text(setup)
    if setup.get("blas_core_forced"):
        text += (f"\nOPENBLAS_CORETYPE={setup['blas_core_forced']} forces OpenBLAS's kernels, for gpudev and "
                 "NumPy alike (PyTorch's MKL ignores it): products may run well below this CPU's speed; "
                 "unset it to measure the machine")
    for note in setup["skipped_peers"]:
        text += f"\n{note}"
    return text + "\ntimes per op unless the row says /loop or /call; ratio < 1: gpudev is faster"


def _core_text(setup: dict[str, Any]) -> str:
    """' (SkylakeX kernels)': the kernel set OpenBLAS runs, and whether the environment chose it."""
    core = setup.get("blas_core")
    if not core:
        return ""
    return f" ({core} kernels{', forced' if setup.get('blas_core_forced') else ''})"


def _load_text(setup: dict[str, Any]) -> str:
    """How busy the machine was: the busy processes the bench started, and the 1-minute load
    average before it started them and at the end of the last row."""
    busy = setup.get("busy_processes", 0)
    noun = "busy process" if busy == 1 else "busy processes"
    text = f"{busy} {noun} started by the bench (--load)" if busy else "no busy processes started"
    la = setup.get("load_average") or {}
    if la.get("before") and la.get("after"):
        text += f"; load average {la['before'][0]:.2f} before, {la['after'][0]:.2f} at the end"
    return text


def document(setup: dict[str, Any], results: list[RowResult]) -> dict[str, Any]:
    """The setup and every row with its raw times, as JSON values (NaN and infinities as None)."""
    return jsonable({"setup": setup, "rows": [dataclasses.asdict(r) for r in results]})
