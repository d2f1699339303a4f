"""Elementwise operations (csrc/core/elementwise.c). Each row of the op lists (csrc/tables.h)
flagged FN is declared here from ``_C._ops``, with its aliases; defined here: the
composites, clipping, and the array API's spellings that no op row has (``astype``,
``positive``, the ``logical_*`` functions, ``isinf``, ``conj``, ``real``, ``imag``).

**Composites** are formulas over the op rows, written once here in Python. Each runs on every
backend, gets its gradient from its parts through autograd, and needs no kernel, no
conformance row and no stub of its own; its declaration names NumPy's function, the dtypes it
takes (an op row's TYPES) and its arity, from which it is exported, mapped for NumPy's
dispatch, swept with hostile arguments and checked against NumPy (tests/test_op_list.py). A
formula becomes a row of the op lists only for a measured need (CONTRIBUTING.md, "Adding an
operation"): its extra passes over memory cost time a benchmark shows, or an intermediate
loses accuracy a test shows.

``isnan`` and ``isfinite`` are comparisons the backends already run: NaN is the one value
unequal to itself, and x - x is 0 exactly for finite x (NaN for infinities and NaN).
Integers and bools are always finite numbers. ``signbit`` and ``reciprocal`` are the array
API standard's: a comparison after copysign, and true division. ``fmax`` is NumPy's maximum
that ignores NaNs: each NaN becomes -inf before ``maximum``, and only a pair of NaNs gives NaN.

**Clipping**: ``gd.clip`` (NumPy's name) and ``gd.clamp`` (PyTorch's) are both NumPy's
definition, ``minimum(maximum(a, min), max)``, made of the recorded operations ``maximum`` and
``minimum``: bounds broadcast, the result's dtype follows NumPy 2 promotion with Python scalars
as weak operands (an int64 array clipped to 0.5 is float64), NaN in ``a`` or a bound
propagates, and gradients come through ``maximum``/``minimum``.

>>> import gpudev as gd
>>> x = gd.array([1.0, float("nan"), float("inf")])
>>> gd.isnan(x).tolist(), gd.isfinite(x).tolist()
([False, True, False], [True, False, False])
>>> gd.clip(gd.arange(5), 1, 3).tolist(), gd.arange(5).clamp(max=2).tolist()
([1, 1, 2, 3, 3], [0, 1, 2, 2, 2])
"""

from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

from .. import _C, _array_api
from .._array_api import BOOL, _dtype
from .._C import Array
from .shape import _need_array, renamed
from . import Declaration, _add, declare, public

__all__ = ["astype", "clamp", "clip", "conj", "fmax", "imag", "isfinite", "isinf", "isnan", "logical_and",
           "logical_not", "logical_or", "logical_xor", "positive", "real", "reciprocal", "signbit"]

# the op rows with a module function, and their aliases (gd.pow is gd.power); a row's NumPy
# function is its ufunc, and a few also compute a NumPy function that is no ufunc
_NUMPY_ALSO = {"round": "round"}  # np.round (decimals=0) is the row of np.rint
for _op in _C._ops:
    if _op.function:
        _numpy = " ".join(filter(None, (_op.numpy, _NUMPY_ALSO.get(_op.name))))
        _add(Declaration(_op.name, getattr(_C, _op.name), "elementwise", _numpy or None))
        for _alias in _op.aliases:
            _add(Declaration(_alias, getattr(_C, _alias), "elementwise"))
declare("elementwise", _C, "allclose")
declare("elementwise", _array_api, "e pi inf nan")


# ---------------------------------------------------------------------------------------------
# composites
# ---------------------------------------------------------------------------------------------

def _need_array(name: str, a: object) -> _C.Array:
    if not isinstance(a, _C.Array):
        raise TypeError(f"{name}: expected a gpudev Array, got {type(a).__name__}; convert it with gd.asarray(x)")
    return a


@public("elementwise", numpy="isnan", types="ALL", arity=1)
def isnan(a: _C.Array) -> _C.Array:
    """Whether each element is NaN, as a bool array. ``gd.isnan(x).any()``"""
    a = _need_array("isnan", a)
    if a.dtype.kind != "f":
        return _C.zeros(a.shape, dtype=np.bool_, device=a.device)
    return a != a


@public("elementwise", numpy="isfinite", types="ALL", arity=1)
def isfinite(a: _C.Array) -> _C.Array:
    """Whether each element is neither infinite nor NaN, as a bool array. ``gd.isfinite(x).all()``"""
    a = _need_array("isfinite", a)
    if a.dtype.kind != "f":
        return _C.ones(a.shape, dtype=np.bool_, device=a.device)
    return (a - a) == 0


@public("elementwise", numpy="signbit", types="ALL", arity=1)
def signbit(x: _C.Array, /) -> _C.Array:
    """Whether each element's sign bit is set: True for negative numbers, -0.0, -inf and NaNs
    with the sign bit, as a bool array.

    >>> gd.signbit(gd.array([-0.0, 0.0, -1.0])).tolist()
    [True, False, True]
    """
    x = _need_array("signbit", x)
    if x.dtype == np.bool_:
        return _C.zeros(x.shape, dtype=np.bool_, device=x.device)
    if x.dtype.kind != "f":
        return x < 0
    # copysign moves the sign bit onto 1.0, where a comparison can see it (-0.0 < 0 is False)
    return _C.copysign(1.0, x) < 0


@public("elementwise", numpy="reciprocal", types="FLOAT", arity=1)
def reciprocal(x: _C.Array, /) -> _C.Array:
    """1 / x elementwise, with true division's special cases (1 / -0.0 is -inf); integers and
    bools give float64, as the standard's floating-point-only reciprocal does (NumPy's integer
    reciprocal truncates: 0 for every integer but 1 and -1).

    >>> gd.reciprocal(gd.array([4.0, -0.0])).tolist()
    [0.25, -inf]
    """
    x = _need_array("reciprocal", x)
    return 1.0 / (x if x.dtype.kind == "f" else x.astype(np.float64))


def _nan_to(x: object, value: float) -> object:
    """x with its NaNs replaced by value; a Python scalar stays one (weak in promotion)."""
    if isinstance(x, _C.Array):
        return _C.where(x != x, value, x) if x.dtype.kind == "f" else x
    return value if isinstance(x, float) and x != x else x


@public("elementwise", numpy="fmax", types="NUMERIC", arity=2)
def fmax(x1: _C.Array, x2: _C.Array, /) -> _C.Array:
    """The larger of each pair, ignoring NaNs: NumPy's fmax (gd.maximum propagates NaN). A NaN
    gives the other operand; only where both are NaN is the result NaN.

    >>> gd.fmax(gd.array([1.0, float("nan"), float("nan")]), gd.array([2.0, 3.0, float("nan")])).tolist()
    [2.0, 3.0, nan]
    """
    if not isinstance(x1, _C.Array) and not isinstance(x2, _C.Array):
        raise TypeError(f"fmax: expected a gpudev Array, got {type(x1).__name__} and {type(x2).__name__}; "
                        f"convert one with gd.asarray(x)")
    out = _C.maximum(_nan_to(x1, -np.inf), _nan_to(x2, -np.inf))
    if out.dtype.kind != "f":
        return out
    both = isnan(_C.asarray(x1, device=out.device)) & isnan(_C.asarray(x2, device=out.device))
    return _C.where(both, np.nan, out)


# ---------------------------------------------------------------------------------------------
# clipping
# ---------------------------------------------------------------------------------------------

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


# ---------------------------------------------------------------------------------------------
# the array API standard's spellings that the op list does not declare (it declares add, equal, ...)
# ---------------------------------------------------------------------------------------------

@public("elementwise")
def astype(x: Array, dtype: Any, /, *, copy: bool = True, device: Any = None) -> Array:
    """x as `dtype` (and on `device`, an explicit copy, when given); a new array unless
    ``copy=False`` and nothing changes.

    Example:
        >>> gd.astype(gd.asarray([1.7, -1.7]), gd.int64).tolist()
        [1, -1]
    """
    _need_array("astype", x)
    if device is not None:
        x = x.to(device)  # the copy was asked for
    return x.astype(_dtype("astype", dtype), copy=copy)


# NumPy's positive returns a new array; the + operator of a gpudev array returns the array itself
@public("elementwise")
def positive(x: Array, /) -> Array:
    """+x elementwise: a new array equal to x."""
    return _need_array("positive", x).copy()


def _logical(name: str, op: Any) -> Any:
    def fn(x1: Any, x2: Any, /) -> Array:
        return op(_as_bool(name, x1), _as_bool(name, x2))
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise logical {name.split('_')[1].upper()}: operands read as bool (nonzero is True)."
    return fn


def _as_bool(op: str, x: Any) -> Any:
    if isinstance(x, Array):
        return x if x.dtype == BOOL else x != 0
    if isinstance(x, (bool, int, float)):
        return bool(x)
    raise TypeError(f"{op}: expected a gpudev Array or a Python scalar, got {type(x).__name__}")


logical_and = public("elementwise")(_logical("logical_and", operator.and_))
logical_or = public("elementwise")(_logical("logical_or", operator.or_))
logical_xor = public("elementwise")(_logical("logical_xor", operator.xor))


@public("elementwise")
def logical_not(x: Array, /) -> Array:
    """Elementwise logical NOT: x read as bool (nonzero is True)."""
    return ~_as_bool("logical_not", _need_array("logical_not", x))


@public("elementwise")
def isinf(x: Array, /) -> Array:
    """Whether each element is +inf or -inf, as a bool array (never for integers and bools)."""
    _need_array("isinf", x)
    if x.dtype.kind != "f":
        return _C.zeros(x.shape, dtype=BOOL, device=x.device)
    return _C.abs(x) == math.inf


@public("elementwise")
def conj(x: Array, /) -> Array:
    """The complex conjugate: gpudev's dtypes are real, so a copy of x."""
    return _need_array("conj", x).copy()


@public("elementwise")
def real(x: Array, /) -> Array:
    """The real part: gpudev's dtypes are real, so a copy of x."""
    return _need_array("real", x).copy()


@public("elementwise")
def imag(x: Array, /) -> Array:
    """The imaginary part: gpudev's dtypes are real, so zeros of x's shape, dtype and device."""
    _need_array("imag", x)
    return _C.zeros(x.shape, dtype=x.dtype, device=x.device)
