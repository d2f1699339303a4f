"""Rows that measure the fixed cost of a call: tiny operations on 4x4 arrays, per operation,
and the ``b += b`` loop of 1000 iterations for growing sizes, per loop.

    >>> [name for name, *_ in tiny_rows("cpu", 1000)]
    ['b += b', 'a + b', 'a.sum().item()']
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .model import Row, Target
from .peers import Context, RowBuilder, per_peer

__all__ = ["loop_rows", "tiny_rows"]


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
