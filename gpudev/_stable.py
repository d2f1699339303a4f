"""Numerically stable forms that a forward function and its gradient rule both compute.

They record nothing: the softmaxes (:mod:`gpudev._api.reduce`) call them under ``no_grad``
and record one node, and :mod:`gpudev._grad_rules` calls them while rules run (never recorded).

>>> import gpudev as gd
>>> softmax_forward(gd.array([1000.0, 1000.0]), 0, log=False).tolist()
[0.5, 0.5]
"""

from __future__ import annotations

from . import _C
from ._C import Array

__all__ = ["shifted_exp", "softmax_forward"]


def shifted_exp(x: Array, axis: int) -> tuple[Array, Array, Array]:
    """(x - max, exp(x - max), its sum) along axis (kept): the parts of a softmax, whose
    largest term is exactly exp(0) = 1, so no row overflows. cross_entropy reuses them."""
    shifted = x - x.max(axis=axis, keepdims=True)
    e = _C.exp(shifted)
    return shifted, e, e.sum(axis=axis, keepdims=True)


def softmax_forward(x: Array, axis: int, log: bool) -> Array:
    """The values of (log_)softmax of float x along axis, without recording anything."""
    if x.ndim == 0:
        return _C.zeros((), dtype=x.dtype, device=x.device) + (0.0 if log else 1.0)
    if x.size == 0:
        return _C.empty(x.shape, dtype=x.dtype, device=x.device)
    shifted, e, total = shifted_exp(x, axis)
    if log:
        shifted -= _C.log(total)
        return shifted
    e /= total
    return e
