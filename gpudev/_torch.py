"""PyTorch's habits that gpudev's Array methods and optimizers share: dims read as PyTorch reads
them, sizes given as f(2, 3) or f((2, 3)), dtypes told from devices in ``a.to(x)``, and the
fused update ``y = beta * y + alpha * x`` of the optimizers. PyTorch's module functions (cat,
mm, bmm, max, min, normal, randint, from_numpy) are declared in the family of what they spell
(gpudev/_api), the Array methods in gpudev/_array.py.

>>> from gpudev._torch import _dims
>>> _dims((2, 3)), _dims(((2, 3),))
((2, 3), (2, 3))
"""

from __future__ import annotations

import numbers
import reprlib
from typing import Any

import numpy as np

from . import _C
from ._api.shape import _is_int

__all__ = ["scaled_add_"]

Array = _C.Array


def _axis(op: str, a: Array, d: Any, extra: int = 0) -> int:
    """d as an axis in [0, a.ndim + extra), read as PyTorch reads negative dims."""
    n = max(a.ndim + extra, 1)  # a 0-d array takes dim 0 and -1, as in PyTorch
    if not isinstance(d, numbers.Integral) or isinstance(d, bool):
        raise TypeError(f"{op}: dim must be an int, got {type(d).__name__}")
    if not -n <= d < n:
        raise IndexError(f"{op}: dim {d} is out of range for an array of {a.ndim} dimension(s); "
                         f"use a dim in [{-n}, {n - 1}]")
    return int(d) % n


def _dims(sizes: tuple[Any, ...], op: str = "shape") -> tuple[int, ...]:
    """PyTorch's f(2, 3) or f((2, 3)) as one tuple of ints."""
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = tuple(sizes[0])
    for s in sizes:
        if not _is_int(s):
            raise TypeError(f"{op}: sizes must be ints, got {reprlib.repr(s)}")
    return tuple(int(s) for s in sizes)



def scaled_add_(y: Array, beta: Any, x: Any, alpha: Any) -> Array:
    """y = beta * y + alpha * x in place; returns y. One pass with no temporary (the backends'
    axpby) where the core can take it: float arrays of one dtype, shape and device, both
    C-contiguous, and nothing for autograd to record; else the two operations written out
    (y *= beta; y += alpha * x), which give the same bits. The optimizers' steps use it."""
    if _C._axpby(y, beta, x, alpha) is NotImplemented:
        # alpha * x is read before y changes: x may overlap y (a view of it)
        scaled = x if alpha == 1 and beta == 1 else alpha * x
        if beta != 1:
            y *= beta
        y += scaled
    return y



def _is_dtype(x: Any) -> bool:
    """Whether x names a dtype (a.to(x) casts) rather than a device (a.to(x) moves)."""
    if x is None or isinstance(x, (str, _C.Device, bool, numbers.Number, list, tuple, dict)):
        return False
    try:
        np.dtype(x)
    except Exception:  # NumPy raises TypeError, ValueError or worse for things far from dtypes
        return False
    return True


