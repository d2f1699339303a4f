"""Arrays shaped like another: ``zeros_like``, ``ones_like``, ``empty_like``, ``full_like``.

The new array takes the shape, dtype and device of ``a`` unless ``dtype`` or ``device`` say
otherwise; ``a`` may be a gpudev array or anything with ``.shape`` and ``.dtype`` (a NumPy
array, whose arrays go to the CPU unless ``device`` says otherwise).

>>> import gpudev as gd
>>> x = gd.arange(6).reshape(2, 3)
>>> gd.ones_like(x).tolist()
[[1, 1, 1], [1, 1, 1]]
>>> gd.full_like(x, 0.5, dtype=gd.float32).dtype
dtype('float32')
"""

from __future__ import annotations

from typing import Any

from . import _C

__all__ = ["empty_like", "full_like", "ones_like", "zeros_like"]


def _like(name: str, a: Any, dtype: Any, device: Any) -> tuple[tuple, dict]:
    """The shape, and the dtype and device keywords, of a new array like a."""
    if not (hasattr(a, "shape") and hasattr(a, "dtype")):
        raise TypeError(f"{name}: expected an array (with .shape and .dtype), got {type(a).__name__}")
    if device is None:
        device = a.device if isinstance(a, _C.Array) else "cpu"
    return tuple(a.shape), {"dtype": a.dtype if dtype is None else dtype, "device": device}


def zeros_like(a: Any, dtype: Any = None, device: Any = None) -> _C.Array:
    """An array of zeros with a's shape, dtype and device. ``gd.zeros_like(x)``"""
    shape, kw = _like("zeros_like", a, dtype, device)
    return _C.zeros(shape, **kw)


def ones_like(a: Any, dtype: Any = None, device: Any = None) -> _C.Array:
    """An array of ones with a's shape, dtype and device. ``gd.ones_like(x)``"""
    shape, kw = _like("ones_like", a, dtype, device)
    return _C.ones(shape, **kw)


def empty_like(a: Any, dtype: Any = None, device: Any = None) -> _C.Array:
    """An uninitialised array with a's shape, dtype and device. ``gd.empty_like(x)``"""
    shape, kw = _like("empty_like", a, dtype, device)
    return _C.empty(shape, **kw)


def full_like(a: Any, fill_value: Any, dtype: Any = None, device: Any = None) -> _C.Array:
    """An array of fill_value with a's shape, dtype and device. ``gd.full_like(x, 7)``"""
    shape, kw = _like("full_like", a, dtype, device)
    return _C.full(shape, fill_value, **kw)
