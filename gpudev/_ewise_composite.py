"""The array API standard's elementwise functions that are formulas over gpudev's kernels:
logical operations, isinf and signbit, positive, reciprocal, and real, imag and conj of real
arrays. Each runs on its input's device as one or two kernels, and gets its gradient from
its parts.

Logical operations read any nonzero number (NaN included) as True, as NumPy and the
standard do for non-bool inputs.

>>> import gpudev as gd
>>> x = gd.array([-0.0, 2.0, float("-inf")])
>>> gd.signbit(x).tolist(), gd.isinf(x).tolist()
([True, False, True], [False, False, True])
>>> gd.logical_and(x, True).tolist()
[False, True, True]
"""

from __future__ import annotations

import math
from typing import Union

import numpy as np

from . import _C

__all__ = ["conj", "imag", "isinf", "logical_and", "logical_not", "logical_or", "logical_xor", "positive",
           "real", "reciprocal", "signbit"]

Array = _C.Array
Operand = Union[Array, bool, int, float]


def _need_array(name: str, a: object) -> Array:
    if not isinstance(a, Array):
        raise TypeError(f"{name}: expected a gpudev Array, got {type(a).__name__}; convert it with gd.asarray(x)")
    return a


def _is_bool(a: Array) -> bool:
    return a.dtype == np.bool_


# ---------------------------------------------------------------------------------------------
# tests of values
# ---------------------------------------------------------------------------------------------


def isinf(x: Array, /) -> Array:
    """Whether each element is +inf or -inf, as a bool array (False for integers and bools)."""
    x = _need_array("isinf", x)
    if x.dtype.kind != "f":
        return _C.zeros(x.shape, dtype=np.bool_, device=x.device)
    return _C.abs(x) == math.inf


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
# logical operations
# ---------------------------------------------------------------------------------------------


def _truth(name: str, x: Operand) -> Array | bool:
    if isinstance(x, Array):
        return x if _is_bool(x) else x != 0
    if isinstance(x, (bool, int, float)):
        return bool(x)
    raise TypeError(f"{name}: expected a gpudev Array or a Python bool, got {type(x).__name__}")


def _logical(name: str, op: str, x1: Operand, x2: Operand) -> Array:
    if not isinstance(x1, Array) and not isinstance(x2, Array):
        raise TypeError(f"{name}: at least one operand must be a gpudev Array, got {type(x1).__name__} and "
                        f"{type(x2).__name__}; create one with gd.asarray(x)")
    a, b = _truth(name, x1), _truth(name, x2)
    if isinstance(a, bool):  # bool & Array is the Array's operation either way round
        a, b = b, a
    try:
        return getattr(a, op)(b)
    except (TypeError, ValueError) as e:  # shapes, devices: say which function was called
        raise type(e)(f"{name}: {e}") from None


def logical_and(x1: Operand, x2: Operand, /) -> Array:
    """x1 and x2 elementwise, as a bool array (nonzero numbers are True).

    >>> gd.logical_and(gd.array([True, False]), True).tolist()
    [True, False]
    """
    return _logical("logical_and", "__and__", x1, x2)


def logical_or(x1: Operand, x2: Operand, /) -> Array:
    """x1 or x2 elementwise, as a bool array (nonzero numbers are True)."""
    return _logical("logical_or", "__or__", x1, x2)


def logical_xor(x1: Operand, x2: Operand, /) -> Array:
    """Whether exactly one of x1 and x2 is true, elementwise, as a bool array."""
    return _logical("logical_xor", "__xor__", x1, x2)


def logical_not(x: Array, /) -> Array:
    """not x elementwise, as a bool array: True where x is False or zero."""
    x = _need_array("logical_not", x)
    return ~x if _is_bool(x) else x == 0


# ---------------------------------------------------------------------------------------------
# arithmetic
# ---------------------------------------------------------------------------------------------


def positive(x: Array, /) -> Array:
    """+x: a copy of x (NumPy's positive; ``+x`` itself returns x). Refuses bools, as NumPy does."""
    x = _need_array("positive", x)
    if _is_bool(x):
        raise TypeError("positive: not supported for bool arrays, as in NumPy; use x.copy()")
    return x.copy()


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
# complex parts of real arrays: gpudev has no complex dtypes, so these are x itself and zeros
# ---------------------------------------------------------------------------------------------


def real(x: Array, /) -> Array:
    """The real part: x itself as a view, as NumPy gives it for real arrays."""
    return _need_array("real", x)[...]


def imag(x: Array, /) -> Array:
    """The imaginary part of a real array: zeros of x's shape and dtype, on x's device."""
    x = _need_array("imag", x)
    return _C.zeros(x.shape, dtype=x.dtype, device=x.device)


def conj(x: Array, /) -> Array:
    """The complex conjugate of a real array: a copy of x."""
    return _need_array("conj", x).copy()


# ---------------------------------------------------------------------------------------------
# the methods and attributes NumPy's arrays have for these
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
    """``a.round()``, ``a.conj()``, ``a.conjugate()``, ``a.real`` and ``a.imag`` on Arrays, as
    NumPy's arrays have them (once, at import)."""
    Array.round = _round_method
    Array.conj = conj
    Array.conjugate = conj
    Array.real = property(real, doc="The real part: the array itself (as a view), gpudev's arrays being real.")
    Array.imag = property(imag, doc="The imaginary part: zeros of the array's shape, dtype and device.")
