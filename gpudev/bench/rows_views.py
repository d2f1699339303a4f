"""Rows on strided views: elementwise operations that read a sliced and a transposed view,
and the product of a matrix with its transpose (BLAS reads the view through a transpose flag).

    >>> [name for name, *_ in view_rows("cpu", 2000, [1000])]
    ['a[:, ::2] + 1', 'a.T + a', 'a @ a.T']
"""

from __future__ import annotations

from .model import BLAS_SETTLE, Row, Target
from .peers import Context, RowBuilder, host_randn, per_peer

__all__ = ["view_rows"]

_ALL = ("gpudev", "numpy", "torch", "cupy")


def view_rows(device: str, n: int, product_sizes: list[int]) -> list[tuple[str, str, str, RowBuilder]]:
    """`a[:, ::2] + 1` and `a.T + a` on n x n float32, and `a @ a.T` for each size."""
    gpu = device != "cpu"
    # On the CPU, the same views in NumPy are the reference (<= 1.5x its time); GPU rows inform.
    target = None if gpu else Target("<= 1.5x numpy time on the same views", peer="numpy", max_ratio=1.5)

    def elementwise(name: str, stmt: str) -> RowBuilder:
        def build(ctx: Context) -> Row:
            host = ctx.shared(("views", device, n), lambda: {"a": host_randn((n, n))})
            impls = ctx.impls(device, dict.fromkeys(_ALL, stmt), per_peer(ctx, device, host, share=True))
            # bytes read and written: a strided read of half (or all) of a, a write of the result
            moved = 4 * n * n * (1 if "::2" in stmt else 3)
            return Row(name, f"{n}x{n}", device, impls, number=5, unit="op", bytes=moved, target=target)

        return build

    rows = [(name, f"{n}x{n}", device, elementwise(name, name)) for name in ("a[:, ::2] + 1", "a.T + a")]
    for m in product_sizes:

        def product(ctx: Context, m: int = m) -> Row:
            host = ctx.shared(("views @", device, m), lambda: {"a": host_randn((m, m))})
            impls = ctx.impls(device, dict.fromkeys(_ALL, "a @ a.T"), per_peer(ctx, device, host, share=True))
            peer = "torch" if gpu else "numpy"
            return Row("a @ a.T", f"n={m}", device, impls, number=1 if m >= 2000 else 3, unit="call",
                       flops=2.0 * m**3, target=Target(f">= 0.95x {peer} GFLOP/s", peer=peer, max_ratio=1 / 0.95),
                       settle=0.0 if gpu else BLAS_SETTLE)

        rows.append(("a @ a.T", f"n={m}", device, product))
    return rows
