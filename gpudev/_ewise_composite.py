"""The array API standard's elementwise functions that are formulas over gpudev's kernels,
signbit and reciprocal, and NumPy's a.round(). Each runs on its input's device as one or two
kernels, and gets its gradient from its parts.

>>> import gpudev as gd
>>> gd.signbit(gd.array([-0.0, 2.0, float("-inf")])).tolist()
[True, False, True]
"""

from __future__ import annotations

import numpy as np

from . import _C

__all__ = ["install", "reciprocal", "signbit"]

Array = _C.Array


def _need_array(name: str, a: object) -> Array:
    if not isinstance(a, Array):
        raise TypeError(f"{name}: expected a gpudev Array, got {type(a).__name__}; convert it with gd.asarray(x)")
    return a


def _is_bool(a: Array) -> bool:
    return a.dtype == np.bool_


# ---------------------------------------------------------------------------------------------
# tests of values
# ---------------------------------------------------------------------------------------------


def signbit(x: Array, /) -> Array:
    """Whether each element's sign bit is set: True for negative numbers, -0.0, -inf and NaNs
    with the sign bit, as a bool array.

    >>> gd.signbit(gd.array([-0.0, 0.0, -1.0])).tolist()
    [True, False, True]
    """
    x = _need_array("signbit", x)
    if _is_bool(x):
        return _C.zeros(x.shape, dtype=np.bool_, device=x.device)
    if x.dtype.kind != "f":
        return x < 0
    # copysign moves the sign bit onto 1.0, where a comparison can see it (-0.0 < 0 is False)
    return _C.copysign(1.0, x) < 0


# ---------------------------------------------------------------------------------------------
# arithmetic
# ---------------------------------------------------------------------------------------------


def reciprocal(x: Array, /) -> Array:
    """1 / x elementwise, with true division's special cases (1 / -0.0 is -inf); integers and
    bools give float64, as the standard's floating-point-only reciprocal does (NumPy's integer
    reciprocal truncates: 0 for every integer but 1 and -1).

    >>> gd.reciprocal(gd.array([4.0, -0.0])).tolist()
    [0.25, -inf]
    """
    x = _need_array("reciprocal", x)
    return 1.0 / (x if x.dtype.kind == "f" else x.astype(np.float64))


# ---------------------------------------------------------------------------------------------
# the method NumPy's arrays have
# ---------------------------------------------------------------------------------------------


def _round_method(self: Array, decimals: int = 0) -> Array:
    """a.round(): ``gd.round(a)``, halfway cases to the even integer (NumPy's method; only
    decimals=0, the standard's round).

    Example:
        >>> gd.array([0.5, 1.5]).round().tolist()
        [0.0, 2.0]
    """
    if not isinstance(decimals, int) or isinstance(decimals, bool):
        raise TypeError(f"round: decimals must be an int, got {type(decimals).__name__}")
    if decimals != 0:
        raise ValueError(f"round: decimals={decimals} is not supported; gpudev rounds to integers "
                         f"(decimals=0); for d digits write gd.round(a * 10**d) / 10**d")
    return _C.round(self)


def install() -> None:
    """``a.round()`` on Arrays, as NumPy's arrays have it (once, at import)."""
    Array.round = _round_method
