"""Composite elementwise operations: formulas over the operations of the op lists
(csrc/tables.h), written once here in Python. Each runs on every backend, gets its gradient
from its parts through autograd, and needs no kernel, no conformance row and no stub of its
own. A formula becomes a row of the op lists only for a measured need (CONTRIBUTING.md,
"Adding an operation"): its extra passes over memory cost time a benchmark shows, or an
intermediate loses accuracy a test shows.

``isnan`` and ``isfinite`` are comparisons the backends already run: NaN is the one value
unequal to itself, and x - x is 0 exactly for finite x (NaN for infinities and NaN).
Integers and bools are always finite numbers.

>>> import gpudev as gd
>>> x = gd.array([1.0, float("nan"), float("inf")])
>>> gd.isnan(x).tolist(), gd.isfinite(x).tolist()
([False, True, False], [True, False, False])
"""

from __future__ import annotations

import numpy as np

from . import _C

__all__ = ["isfinite", "isnan"]


def _need_array(name: str, a: object) -> _C.Array:
    if not isinstance(a, _C.Array):
        raise TypeError(f"{name}: expected a gpudev Array, got {type(a).__name__}; convert it with gd.asarray(x)")
    return a


def isnan(a: _C.Array) -> _C.Array:
    """Whether each element is NaN, as a bool array. ``gd.isnan(x).any()``"""
    a = _need_array("isnan", a)
    if a.dtype.kind != "f":
        return _C.zeros(a.shape, dtype=np.bool_, device=a.device)
    return a != a


def isfinite(a: _C.Array) -> _C.Array:
    """Whether each element is neither infinite nor NaN, as a bool array. ``gd.isfinite(x).all()``"""
    a = _need_array("isfinite", a)
    if a.dtype.kind != "f":
        return _C.ones(a.shape, dtype=np.bool_, device=a.device)
    return (a - a) == 0
