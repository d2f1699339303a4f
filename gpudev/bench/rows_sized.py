"""Rows of elementwise work and sums on n x n float32 for growing n, per operation: where
spreading work over threads starts to pay, and whether it still pays when other processes
keep the cores busy (``python -m gpudev bench --load N``).

    >>> [(name, size) for name, size, *_ in sized_rows("cpu", [200])]
    [('a + b', '200x200'), ('b += b; b *= .5', '200x200'), ('a.sum().item()', '200x200'), ('exp(a)', '200x200')]
"""

from __future__ import annotations

from collections.abc import Callable

from .model import Row, Target
from .peers import Context, RowBuilder, host_randn

__all__ = ["QUICK_SIDES", "SIDES", "sized_rows"]

SIDES = [200, 400, 1000, 2000, 4000]
QUICK_SIDES = [200, 1000]

# Each operation: its statement per peer, and the bytes it reads and writes per element.
# `b += b; b *= .5` leaves b as it was, so repeating it never overflows; it runs on a local
# `b` that the setup binds to the row's `_b` (an augmented assignment needs a local name).
_OPS: dict[str, tuple[dict[str, str], int]] = {
    "a + b": (dict.fromkeys(("gpudev", "numpy", "torch"), "a + b"), 3 * 4),
    "b += b; b *= .5": (dict.fromkeys(("gpudev", "numpy", "torch"), "b += b; b *= .5"), 4 * 4),
    "a.sum().item()": ({"gpudev": "a.sum().item()", "numpy": "float(a.sum())", "torch": "a.sum().item()"}, 4),
    # a function whose arithmetic, not memory, sets the pace (NumPy's loop is vectorized)
    "exp(a)": ({"gpudev": "gd.exp(a)", "numpy": "np.exp(a)", "torch": "torch.exp(a)"}, 2 * 4),
}

# Elements per measurement: ~10 ms of work at NumPy's ~1 ns per element, so that reading the
# clock costs nothing and a measurement spans a few scheduler slices of a loaded machine.
_ELEMENTS_PER_MEASUREMENT = 10**7


def sized_rows(device: str, sides: list[int]) -> list[tuple[str, str, str, RowBuilder]]:
    """`a + b`, `b += b; b *= .5`, `a.sum().item()` and `exp(a)` on side x side float32 (randn + 1),
    per operation; each should take <= 1.25x NumPy's time, quiet or loaded."""
    target = Target("<= 1.25x numpy time", peer="numpy", max_ratio=1.25)
    rows = []
    for side in sides:
        for name in _OPS:

            def build(ctx: Context, name: str = name, side: int = side) -> Row:
                stmts, bytes_per_element = _OPS[name]
                impls = ctx.impls(device, stmts, _arrays(ctx, device, side), setup="b = _b")
                number = max(1, min(1000, _ELEMENTS_PER_MEASUREMENT // (side * side)))
                return Row(name, f"{side}x{side}", device, impls, number=number,
                           bytes=float(bytes_per_element * side * side), target=target)

            rows.append((name, f"{side}x{side}", device, build))
    return rows


def _arrays(ctx: Context, device: str, side: int) -> Callable[[str], dict]:
    """peer -> its own copies of a and b (the same values for every peer); `_b` is b."""
    host = ctx.shared(("sized", device, side), lambda: {"a": host_randn((side, side)), "b": host_randn((side, side))})

    def arrays(peer: str) -> dict:
        a, b = ctx.convert(peer, host["a"], device), ctx.convert(peer, host["b"], device)
        return {"a": a, "b": b, "_b": b}

    return arrays
