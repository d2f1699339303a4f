"""Composite elementwise operations: formulas over the operations of the op lists
(csrc/tables.h), written once here in Python. Each runs on every backend, gets its gradient
from its parts through autograd, and needs no kernel, no conformance row and no stub of its
own. A formula becomes a row of the op lists only for a measured need (CONTRIBUTING.md,
"Adding an operation"): its extra passes over memory cost time a benchmark shows, or an
intermediate loses accuracy a test shows.

``isnan`` and ``isfinite`` are comparisons the backends already run: NaN is the one value
unequal to itself, and x - x is 0 exactly for finite x (NaN for infinities and NaN).
Integers and bools are always finite numbers. ``signbit`` and ``reciprocal`` are the array
API standard's: a comparison after copysign, and true division. ``fmax`` is NumPy's maximum
that ignores NaNs: each NaN becomes -inf before ``maximum``, and only a pair of NaNs gives NaN.

>>> import gpudev as gd
>>> x = gd.array([1.0, float("nan"), float("inf")])
>>> gd.isnan(x).tolist(), gd.isfinite(x).tolist()
([False, True, False], [True, False, False])
"""

from __future__ import annotations

import numpy as np

from . import _C
from ._api import public

__all__ = ["fmax", "isfinite", "isnan", "reciprocal", "signbit"]


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
