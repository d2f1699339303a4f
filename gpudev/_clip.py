"""Limiting values to a range: ``gd.clip`` (NumPy's name) and ``gd.clamp`` (PyTorch's).

Both are NumPy's definition, ``minimum(maximum(a, min), max)``, made of the recorded
operations ``maximum`` and ``minimum``: bounds broadcast, the result's dtype follows NumPy 2
promotion with Python scalars as weak operands (an int64 array clipped to 0.5 is float64), NaN
in ``a`` or a bound propagates, and gradients come through ``maximum``/``minimum``.

>>> import gpudev as gd
>>> gd.clip(gd.arange(5), 1, 3).tolist()
[1, 1, 2, 3, 3]
>>> gd.arange(5).clamp(max=2).tolist()
[0, 1, 2, 2, 2]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _C
from ._api import public
from ._manipulation import renamed

__all__ = ["clamp", "clip"]


def _limit(name: str, a: Any, low: Any, high: Any) -> _C.Array:
    if not isinstance(a, _C.Array):
        raise TypeError(f"{name}: expected a gpudev Array, got {type(a).__name__}; convert it with gd.asarray(x)")
    if low is None and high is None:
        if name == "clip":  # NumPy 2: no bounds, a copy
            return a.copy()
        raise ValueError(f"{name}: one of the bounds must be given, got None for both (as PyTorch "
                         f"refuses it); pass min=, max= or both, or use gd.clip, which copies")
    low, high = _within_ints(a, low, True), _within_ints(a, high, False)
    try:
        out = a if low is None else _C.maximum(a, low)
        return out if high is None else _C.minimum(out, high)
    except OverflowError as exc:  # a bound the dtype cannot hold: name the call the user made
        raise renamed(renamed(exc, "maximum", name), "minimum", name) from None


def _within_ints(a: _C.Array, bound: Any, lower: bool) -> Any:
    """A Python int bound past an integer array's range on the side where it clips nothing (a
    min below the range, a max above it), moved to the range's end: it clips the same and
    keeps the dtype, where maximum/minimum would refuse the int (NumPy's clip). On the other
    side every element would become the bound, which the dtype cannot hold: maximum/minimum
    raise OverflowError, as NumPy's clip does."""
    if type(bound) is not int or a.dtype not in (_C.int32, _C.int64):
        return bound
    info = np.iinfo(a.dtype)
    return max(bound, int(info.min)) if lower else min(bound, int(info.max))


@public("elementwise")
def clip(x: _C.Array, /, min: Any = None, max: Any = None, *,  # noqa: A002 (the standard's names)
         a_min: Any = None, a_max: Any = None) -> _C.Array:
    """Elements of ``x`` limited to ``[min, max]``: ``minimum(maximum(x, min), max)``.

    Either bound may be None (no limit on that side), a number or an Array that broadcasts
    against ``x``; both None give a copy, as in NumPy 2. A bound above the other gives ``max``,
    as in NumPy. Returns a new array, also when nothing was clipped. ``min``/``max`` are the
    array API standard's names; NumPy's older ``a_min``/``a_max`` keywords work too.

    Example:
        >>> gd.clip(gd.array([-2.0, 0.5, 9.0]), 0.0, 1.0).tolist()
        [0.0, 0.5, 1.0]
    """
    for new, old, name in ((min, a_min, "min"), (max, a_max, "max")):
        if new is not None and old is not None:
            raise TypeError(f"clip: give {name}= or a_{name}=, not both")
    return _limit("clip", x, a_min if min is None else min, a_max if max is None else max)


@public("elementwise")
def clamp(a: _C.Array, min: Any = None, max: Any = None) -> _C.Array:  # noqa: A002 (PyTorch's names)
    """``gd.clip`` under PyTorch's name and keywords: ``clamp(a, min=None, max=None)``.

    As PyTorch's, it raises ValueError when both bounds are None.

    Example:
        >>> gd.clamp(gd.array([-2.0, 0.5, 9.0]), min=0.0).tolist()
        [0.0, 0.5, 9.0]
    """
    return _limit("clamp", a, min, max)
