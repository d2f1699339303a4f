"""Rows that measure the fixed cost of a call: tiny operations on 4x4 arrays, per operation,
the ``b += b`` loop of 1000 iterations for growing sizes, per loop, and gd.benchmark's own
figure for a tiny call against timeit's.

    >>> [name for name, *_ in tiny_rows("cpu", 1000)]
    ['b += b', 'a + b', 'a.sum().item()']
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import gpudev as gd

from .model import Impl, Row, Target
from .peers import Context, RowBuilder, per_peer

__all__ = ["benchmark_rows", "loop_rows", "tiny_rows"]


def tiny_rows(device: str, n: int) -> list[tuple[str, str, str, RowBuilder]]:
    """`b += b`, `a + b`, `a.sum().item()` on 4x4 float32, per operation."""
    gpu = device != "cpu"
    # On the CPU the time per op is compared with NumPy's (<= 0.5x); on GPUs with PyTorch's.
    target_cpu = Target("<= 0.5x numpy time", peer="numpy", max_ratio=0.5)
    target_gpu = Target("<= 1.0x torch time", peer="torch", max_ratio=1.0)
    target = target_gpu if gpu else target_cpu

    def data(ctx: Context) -> Callable[[str], dict]:
        # `_b` is the in-place rows' operand: their setup binds it to a local `b`, which
        # `b += b` needs inside timeit's function.
        host = {"a": np.ones((4, 4), np.float32), "_b": np.ones((4, 4), np.float32)}

        def arrays(peer: str) -> dict[str, Any]:
            d = {name: ctx.convert(peer, h, device) for name, h in host.items()}
            d["b"] = d["_b"]
            return d

        return arrays

    def iadd(ctx: Context) -> Row:
        stmts = dict.fromkeys(("gpudev", "numpy", "torch", "cupy"), "b += b")
        return Row("b += b", "4x4", device, ctx.impls(device, stmts, data(ctx), setup="b = _b"), number=n, target=target)

    def add(ctx: Context) -> Row:
        stmts = dict.fromkeys(("gpudev", "numpy", "torch", "cupy"), "a + b")
        return Row("a + b", "4x4", device, ctx.impls(device, stmts, data(ctx)), number=n, target=target)

    def sum_item(ctx: Context) -> Row:
        stmts = dict.fromkeys(("gpudev", "torch", "cupy"), "a.sum().item()")
        stmts["numpy"] = "float(a.sum())"
        return Row("a.sum().item()", "4x4", device, ctx.impls(device, stmts, data(ctx)), number=max(n // 5, 10), target=target)

    rows = [("b += b", "4x4", device, iadd), ("a + b", "4x4", device, add), ("a.sum().item()", "4x4", device, sum_item)]
    if gpu:

        def latency(ctx: Context) -> Row:
            stmts = {"gpudev": "b += b; sync()", "torch": "b += b; sync()", "cupy": "b += b; sync()"}
            base = data(ctx)

            def arrays(peer: str) -> dict:
                return {**base(peer), "sync": ctx.sync(peer, device)}

            impls = ctx.impls(device, stmts, arrays, setup="b = _b")
            return Row("launch latency", "4x4", device, impls, number=max(n // 5, 10), target=target_gpu)

        rows.append(("launch latency", "4x4", device, latency))
    return rows


def loop_rows(device: str, sizes: list[int]) -> list[tuple[str, str, str, RowBuilder]]:
    """The loop of exercise 5: 1000 times `b += b` on n x n, reported per loop."""
    rows = []
    for n in sizes:

        def build(ctx: Context, n: int = n) -> Row:
            host = {"_b": np.ones((n, n), np.float32)}
            stmts = dict.fromkeys(("gpudev", "numpy", "torch", "cupy"), "b += b")
            impls = ctx.impls(device, stmts, per_peer(ctx, device, host), setup="b = _b")
            # GB/s counts one read and one write of b per iteration
            return Row("b += b x1000", f"{n}x{n}", device, impls, number=1000, per=1000, unit="loop",
                       bytes=1000 * 2 * 4 * n * n)

        rows.append(("b += b x1000", f"{n}x{n}", device, build))
    return rows


def benchmark_rows(device: str, n: int) -> list[tuple[str, str, str, RowBuilder]]:
    """gd.benchmark(a.sum) on 4x4 against timeit of the same call, side by side: the median
    per call gd.benchmark reports must be within 1.5x of timeit's time per call (a
    per-repeat cost of clock reads and synchronization would show up here)."""

    def build(ctx: Context) -> Row:
        a = gd.ones((4, 4), device=device)

        def reported(number: int) -> float:
            return gd.benchmark(a.sum, n_warmup=1, max_duration=0.05).median * number

        impls = {"gpudev": Impl(stmt="gd.benchmark(a.sum).median", env={"a": a}, measure_with=reported),
                 "timeit": Impl(stmt="a.sum()", env={"a": a}, sync=ctx.sync("gpudev", device))}
        return Row("benchmark(a.sum)", "4x4", device, impls, number=n,
                   target=Target("<= 1.5x timeit", peer="timeit", max_ratio=1.5))

    return [("benchmark(a.sum)", "4x4", device, build)]
