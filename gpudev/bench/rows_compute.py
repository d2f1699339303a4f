"""Rows limited by arithmetic: float32 matrix products, one large one per size and 1000
small ones (batched, and in a Python loop).

    >>> [size for _, size, *_ in sgemm_rows("cpu", [1000, 4000])]
    ['n=1000', 'n=4000']
"""

from __future__ import annotations

from collections.abc import Callable

from .model import BLAS_SETTLE, Row, Target
from .peers import Context, RowBuilder, host_randn, per_peer

__all__ = ["batched_rows", "sgemm_rows"]


def sgemm_rows(device: str, sizes: list[int]) -> list[tuple[str, str, str, RowBuilder]]:
    """float32 n x n products: GFLOP/s and % of the configured peak."""
    gpu = device != "cpu"
    rows = []
    for n in sizes:

        def build(ctx: Context, n: int = n) -> Row:
            host = {"a": host_randn((n, n)), "b": host_randn((n, n))}
            stmts = dict.fromkeys(("gpudev", "numpy", "torch", "cupy"), "a @ b")
            impls = ctx.impls(device, stmts, per_peer(ctx, device, host, share=True))
            flops = 2.0 * n**3
            # one measurement should take tens of milliseconds
            seconds_guess = flops / (50e12 if gpu else 100e9)
            number = max(1, min(20, int(0.05 / seconds_guess)))
            if gpu:
                target = Target(">= 0.95x torch GFLOP/s", peer="torch", max_ratio=1 / 0.95)
                peak = ctx.gpu_peak_tflops * 1e3 if ctx.gpu_peak_tflops else None
            else:
                target = Target(">= 0.95x numpy GFLOP/s", peer="numpy", max_ratio=1 / 0.95)
                peak = ctx.peak_gflops
            return Row("sgemm", f"n={n}", device, impls, number=number, unit="call", flops=flops,
                       peak_gflops=peak, target=target, settle=0.0 if gpu else BLAS_SETTLE)

        rows.append(("sgemm", f"n={n}", device, build))
    return rows


def batched_rows(device: str, quick: bool) -> list[tuple[str, str, str, RowBuilder]]:
    """1000 products of 100x100: one batched `@` and a Python loop of 1000 `@`."""
    gpu = device != "cpu"
    number = 1 if quick else 3
    shape = (1000, 100, 100)

    def arrays(ctx: Context) -> Callable[[str], dict]:
        host = ctx.shared(("batched", device), lambda: {"A": host_randn(shape), "B": host_randn(shape)})
        return per_peer(ctx, device, host, share=True)

    def batched(ctx: Context) -> Row:
        stmts = {"gpudev": "A @ B", "numpy": "np.matmul(A, B)", "torch": "A @ B", "cupy": "A @ B"}
        target = None if gpu else Target("<= 1.0x numpy batched time", peer="numpy", max_ratio=1.0)
        return Row("batched @", "1000x(100x100)", device, ctx.impls(device, stmts, arrays(ctx)), number=number,
                   unit="call", flops=2e9, target=target, settle=0.0 if gpu else BLAS_SETTLE)

    def looped(ctx: Context) -> Row:
        stmts = dict.fromkeys(("gpudev", "numpy", "torch", "cupy"), "[x @ y for x, y in zip(A, B)]")
        return Row("looped @", "1000x(100x100)", device, ctx.impls(device, stmts, arrays(ctx)), number=1,
                   unit="loop", flops=2e9)

    return [("batched @", "1000x(100x100)", device, batched), ("looped @", "1000x(100x100)", device, looped)]
