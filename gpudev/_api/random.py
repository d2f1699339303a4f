"""Random numbers (csrc/core/creation.c and the Philox generator, csrc/philox.h): the seed,
uniform and normal arrays from the core; defined here: PyTorch's ``normal`` and ``randint``,
short composites of the core's uniform and normal arrays.

>>> import gpudev as gd
>>> gd.randint(0, 10, (2, 3)).dtype, gd.normal(0.0, 1.0, size=4).shape
(dtype('int64'), (4,))
"""

from __future__ import annotations

import numbers
import reprlib
from typing import Any

import numpy as np

from .. import _C
from .._C import Array
from .._torch import _is_dtype
from . import declare, public

__all__ = ["normal", "randint"]

declare("random", _C, "manual_seed rand randn")


@public("random", pytorch=True)
def normal(mean: Any = 0.0, std: Any = 1.0, size: Any = None, *, dtype: Any = None,
           device: Any = None, requires_grad: bool = False) -> Array:
    """Normal random numbers: PyTorch's ``normal(mean, std, size)`` (NumPy's ``normal(loc,
    scale, size)`` in the same order). mean and std may be arrays (then size is their shape);
    ``requires_grad=True`` makes the result a leaf that requires grad.

    Example:
        >>> gd.normal(0, 0.01, size=(3, 4)).shape
        (3, 4)
    """
    arrays = [x for x in (mean, std) if isinstance(x, Array)]
    if size is None:
        if not arrays:
            raise TypeError("normal: give size= when mean and std are numbers, e.g. "
                            "gd.normal(0, 1, size=(3, 4))")
        size = np.broadcast_shapes(*(x.shape for x in arrays))
        device = arrays[0].device if device is None else device
        dtype = arrays[0].dtype if dtype is None else dtype
    shape = (size,) if isinstance(size, numbers.Integral) else tuple(size)
    out = _C.randn(*shape, dtype=dtype, device=device) * std + mean
    return out.requires_grad_() if requires_grad else out


@public("random", pytorch=True)
def randint(low: int, high: Any = None, size: Any = None, *, dtype: Any = None,
            device: Any = None) -> Array:
    """Random integers in [low, high) of shape `size` (int64, or ``dtype=gd.int32``), as
    PyTorch's and NumPy's randint; ``randint(high, size=...)`` draws from [0, high).

    Example:
        >>> gd.randint(0, 10, (2, 3)).shape
        (2, 3)
    """
    if high is None:
        low, high = 0, low
    for name, v in (("low", low), ("high", high)):
        if not isinstance(v, numbers.Integral) or isinstance(v, bool):
            raise TypeError(f"randint: {name} must be an int, got {reprlib.repr(v)}")
    if high <= low:
        raise ValueError(f"randint: high ({high}) must be above low ({low})")
    if size is None:
        raise TypeError("randint: give the shape, e.g. gd.randint(0, 10, (2, 3))")
    if dtype is None:
        dtype = _C.int64
    elif not (_is_dtype(dtype) and np.dtype(dtype) in (np.dtype(np.int64), np.dtype(np.int32))):
        raise TypeError(f"randint: dtype must be gd.int64 or gd.int32, got {reprlib.repr(dtype)}")
    info = np.iinfo(dtype)
    if low < info.min or high - 1 > info.max:
        raise ValueError(f"randint: [{low}, {high}) does not fit in {np.dtype(dtype)}; use dtype=gd.int64")
    shape = (size,) if isinstance(size, numbers.Integral) else tuple(size)
    # float64 keeps the scaled uniform exact below 2**53 values; floor stays inside [0, span)
    u = _C.rand(*shape, dtype=_C.float64, device=device)
    span = int(high) - int(low)
    out = _C.minimum((u * span).astype(_C.int64), span - 1) + int(low)
    return out.astype(dtype, copy=False)
