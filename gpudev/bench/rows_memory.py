"""Rows limited by memory bandwidth: sum, mean and norm of large float32 vectors (with
their error against float64), device-to-device copies, and copies between host and device.

    >>> [name for name, *_ in reduction_rows("cpu", 10**6)]
    ['sum', 'mean', 'norm']
"""

from __future__ import annotations

import importlib.util
import math
from typing import Any

import numpy as np

import gpudev as gd

from .model import MAX_REL_ERR, Row, Target
from .peers import Context, RowBuilder, host_randn

__all__ = ["reduction_rows", "transfer_rows"]


def _reference_sums(host: np.ndarray, chunk: int = 1 << 22) -> tuple[float, float]:
    """(sum, sum of squares) of a float32 vector in float64, exactly rounded across chunks.

    Chunks keep the float64 temporaries small; within a chunk NumPy's pairwise float64 sum
    errs by ~1e-16, and math.fsum adds the chunk sums without further rounding error."""
    sums, squares = [], []
    for start in range(0, host.size, chunk):
        block = host[start : start + chunk]
        sums.append(float(np.sum(block, dtype=np.float64)))
        squares.append(float(np.sum(np.square(block, dtype=np.float64))))
    return math.fsum(sums), math.fsum(squares)


# Each reduction's statement per peer, and the expression giving its result as a float.
_ALL = ("gpudev", "numpy", "torch", "cupy")
_REDUCTIONS = {
    "sum": ({p: "a.sum()" for p in _ALL}, {p: "a.sum().item()" for p in _ALL}),
    "mean": ({p: "a.mean()" for p in _ALL}, {p: "a.mean().item()" for p in _ALL}),
    "norm": ({"gpudev": "gd.norm(a)", "numpy": "np.linalg.norm(a)", "torch": "torch.linalg.norm(a)",
              "cupy": "cupy.linalg.norm(a)"},
             {"gpudev": "gd.norm(a).item()", "numpy": "np.linalg.norm(a)", "torch": "torch.linalg.norm(a).item()",
              "cupy": "cupy.linalg.norm(a).item()"}),
}


def _reduction_targets(device: str) -> dict[str, Target | None]:
    if device != "cpu":
        # On a GPU the sum must read at >= 80% of the rate a device-to-device copy of the same
        # vector moves bytes (the copy d2d row, measured just before it in the same run).
        return {"sum": Target(">= 0.8x d2d copy GB/s, err <= 1e-7", bandwidth=f"copy {device}",
                              min_fraction=0.8, max_rel_err=MAX_REL_ERR),
                "mean": None, "norm": None}
    return {
        "sum": Target(">= 1.3x numpy GB/s, err <= 1e-7", peer="numpy", max_ratio=1 / 1.3, max_rel_err=MAX_REL_ERR),
        "mean": Target(">= 1.3x numpy GB/s, err <= 1e-7", peer="numpy", max_ratio=1 / 1.3, max_rel_err=MAX_REL_ERR),
        "norm": Target(">= 1.0x np.linalg.norm GB/s, err <= 1e-7", peer="numpy", max_ratio=1.0,
                       max_rel_err=MAX_REL_ERR),
    }


def _reduction_data(ctx: Context, device: str, n: int) -> dict[str, Any]:
    """n float32 (randn + 1) for every peer on `device`, with the float64 sum and norm."""

    def make() -> dict[str, Any]:
        if device != "cpu":
            a = gd.randn(n, device=device) + 1
            host = a.cpu().numpy()
        else:
            host = host_randn(n)
            a = None
        total, squares = _reference_sums(host)
        per_peer = {}
        for peer in ["gpudev"] + ctx.peers_on(device):
            if peer == "gpudev" and a is not None:
                per_peer[peer] = {"a": a}
            else:
                per_peer[peer] = {"a": ctx.convert(peer, host, device, share=True)}
        return {"sum": total, "mean": total / n, "norm": math.sqrt(squares), "arrays": per_peer}

    return ctx.shared(("reduction", device, n), make)


def reduction_rows(device: str, n: int) -> list[tuple[str, str, str, RowBuilder]]:
    """sum, mean and norm of n float32 (randn + 1): time, GB/s and error vs float64 (on GPUs
    after a device-to-device copy of the same vector, whose GB/s the sum's target uses)."""
    gpu = device != "cpu"
    label = f"{n:.0e}".replace("e+0", "e").replace("e+", "e")
    targets = _reduction_targets(device)
    # enough calls per measurement to take milliseconds at the memory bandwidth
    number = max(5, 5 * 10**9 // n) if gpu else max(1, 10**8 // n)

    def copy_row(ctx: Context) -> Row:
        d = _reduction_data(ctx, device, n)
        stmts = {"gpudev": "a.copy()", "torch": "a.clone()", "cupy": "a.copy()"}
        impls = ctx.impls(device, stmts, lambda p: d["arrays"][p])
        return Row("copy d2d", label, device, impls, number=number, bytes=2 * 4 * n, provides=f"copy {device}")

    def reduction(name: str) -> RowBuilder:
        stmts, values = _REDUCTIONS[name]

        def build(ctx: Context) -> Row:
            d = _reduction_data(ctx, device, n)
            impls = ctx.impls(device, stmts, lambda p: d["arrays"][p], value=values)
            return Row(name, label, device, impls, number=number, bytes=4 * n, reference=d[name],
                       target=targets[name])

        return build

    rows = [("copy d2d", label, device, copy_row)] if gpu else []
    return rows + [(name, label, device, reduction(name)) for name in _REDUCTIONS]


def _can_pin() -> bool:
    """Whether PyTorch or CuPy, which can page-lock host memory, is installed."""
    return any(importlib.util.find_spec(m) is not None for m in ("torch", "cupy"))


def _pinned_host(host: np.ndarray) -> np.ndarray:
    """A copy of `host` in page-locked memory, which the GPU reads by DMA at full link speed,
    from PyTorch or else CuPy (gpudev allocates none of its own), whichever peers are timed."""
    if importlib.util.find_spec("torch") is not None:
        import torch

        pinned = torch.empty(host.shape, dtype=torch.float32).pin_memory().numpy()
    else:
        import cupyx

        pinned = cupyx.empty_pinned(host.shape, dtype=host.dtype)
    pinned[...] = host
    return pinned


def transfer_rows(device: str, n: int) -> list[tuple[str, str, str, RowBuilder]]:
    """Host<->device copies of n float32 from pageable memory, and host-to-device ones from
    page-locked (pinned) memory where PyTorch or CuPy can provide it."""
    label = f"{4 * n / 2**20:.0f} MiB"

    def data(ctx: Context) -> dict[str, Any]:
        def make() -> dict[str, Any]:
            host = host_randn(n)
            out = {"gpudev": {"h": gd.array(host), "d": gd.array(host, device=device), "dev": gd.Device(device)}}
            if "torch" in ctx.peers_on(device):
                t = ctx.peers["torch"].from_numpy(host)
                out["torch"] = {"h": t, "d": t.to(device), "dev": device}
            if "cupy" in ctx.peers_on(device):
                out["cupy"] = {"h": host, "d": ctx.convert("cupy", host, device)}
            if _can_pin():  # every peer reads the same page-locked buffer
                pinned = _pinned_host(host)
                out["gpudev"]["p"] = gd.asarray(pinned)
                if "torch" in out:
                    out["torch"]["p"] = ctx.peers["torch"].from_numpy(pinned)
                if "cupy" in out:
                    out["cupy"]["p"] = pinned
            return out

        return ctx.shared(("transfer", device, n), make)

    def h2d(ctx: Context) -> Row:
        d = data(ctx)
        stmts = {"gpudev": "h.to(dev)", "torch": "h.to(dev)", "cupy": "cupy.asarray(h)"}
        return Row("copy h2d", label, device, ctx.impls(device, stmts, lambda p: d[p]), number=3, unit="call",
                   bytes=4 * n)

    def d2h(ctx: Context) -> Row:
        d = data(ctx)
        stmts = {"gpudev": "d.cpu()", "torch": "d.cpu()", "cupy": "cupy.asnumpy(d)"}
        return Row("copy d2h", label, device, ctx.impls(device, stmts, lambda p: d[p]), number=3, unit="call",
                   bytes=4 * n)

    def h2d_pinned(ctx: Context) -> Row:
        d = data(ctx)
        stmts = {"gpudev": "p.to(dev)", "torch": "p.to(dev)", "cupy": "cupy.asarray(p)"}
        return Row("copy h2d pinned", label, device, ctx.impls(device, stmts, lambda p: d[p]), number=3,
                   unit="call", bytes=4 * n)

    rows = [("copy h2d", label, device, h2d), ("copy d2h", label, device, d2h)]
    return rows + [("copy h2d pinned", label, device, h2d_pinned)] if _can_pin() else rows
