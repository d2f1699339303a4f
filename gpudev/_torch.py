"""PyTorch's names for gpudev module functions (its Array methods are in gpudev/_array.py).

Each name here is an alias or a short composite of operations the core already has, so it
runs on every device and records its gradient through them. Where PyTorch and NumPy (or the
array API standard) give one call form two meanings, this module decides it as the README's
table of conflicts says: the standard wins where it defines the meaning, a form that is
ambiguous raises an error naming the spelling to use, and PyTorch's meaning is taken where
nobody else defines one.

>>> import gpudev as gd
>>> gd.cat([gd.ones(2), gd.zeros(1)]).tolist(), gd.mm(gd.ones((2, 3)), gd.ones((3, 1))).shape
([1.0, 1.0, 0.0], (2, 1))
"""

from __future__ import annotations

import builtins
import numbers
import reprlib
from typing import Any

import numpy as np

from . import _C
from ._api import public

__all__ = ["max", "min"]

Array = _C.Array
# the core's reductions behind gd.max and gd.min (private: a.max and a.min are gpudev/_array.py's)
_c_max, _c_min = vars(Array)["_max"], vars(Array)["_min"]


def _need_array(op: str, x: Any) -> Array:
    if not isinstance(x, Array):
        raise TypeError(f"{op}: expected a gpudev Array, got {type(x).__name__}; convert it "
                        f"first, e.g. gd.asarray(x)")
    return x


def _axis(op: str, a: Array, d: Any, extra: int = 0) -> int:
    """d as an axis in [0, a.ndim + extra), read as PyTorch reads negative dims."""
    n = builtins.max(a.ndim + extra, 1)  # a 0-d array takes dim 0 and -1, as in PyTorch
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



# ---------------------------------------------------------------------------------------------
# module functions
# ---------------------------------------------------------------------------------------------

def _ambiguous_axis(call: str, name: str, d: Any) -> TypeError:
    return TypeError(f"{call}: NumPy reads the int as an axis and returns values, PyTorch returns "
                     f"(values, indices); write {call.split('(')[0]}(axis={d}) for the values and "
                     f"arg{name}(axis={d}) for the indices")


def _dim_refused(name: str) -> TypeError:
    return TypeError(f"{name}() got an unexpected keyword argument 'dim'; use axis= (and "
                     f"arg{name}(axis=) for PyTorch's indices)")


def _is_int(x: Any) -> bool:
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


def _extreme(name: str, c_method: Any, pair: Any, a: Any, other: Any, axis: Any, keepdims: bool,
             dim: Any) -> Array:
    _need_array(name, a)
    if dim is not None:
        raise _dim_refused(name)
    if other is None:
        return c_method(a, axis=axis, keepdims=keepdims)
    if _is_int(other):
        raise _ambiguous_axis(f"gd.{name}(a, {other})", name, other)
    if axis is not None:
        raise TypeError(f"{name}: give a second array or axis=, not both")
    return pair(a, other)


@public("reduce", numpy="max amax", pytorch=True)
def max(a: Array, other: Any = None, *, axis: Any = None, keepdims: bool = False,  # noqa: A001
        dim: Any = None) -> Array:
    """``gd.max(a, axis=None)``: the largest values; ``gd.max(a, b)``: ``gd.maximum(a, b)``.

    ``gd.max(a, 1)`` means an axis in NumPy and (values, indices) in PyTorch, and so does
    ``dim=``: both are refused with the spellings to use.
    """
    return _extreme("max", _c_max, _C.maximum, a, other, axis, keepdims, dim)


@public("reduce", numpy="min amin", pytorch=True)
def min(a: Array, other: Any = None, *, axis: Any = None, keepdims: bool = False,  # noqa: A001
        dim: Any = None) -> Array:
    """``gd.min(a, axis=None)``: the smallest values; ``gd.min(a, b)``: ``gd.minimum(a, b)``."""
    return _extreme("min", _c_min, _C.minimum, a, other, axis, keepdims, dim)
