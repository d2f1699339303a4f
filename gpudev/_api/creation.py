"""Creation (csrc/core/creation.c, convert.c): arrays from shapes, values and other libraries'
memory. The core's functions are declared here; the ones written in Python are defined here:
arrays shaped like another (``zeros_like``, ``ones_like``, ``empty_like``, ``full_like``),
``eye``, ``linspace``, ``meshgrid``, ``tril`` and ``triu``, PyTorch's ``from_numpy`` and the array
API's ``from_dlpack`` (arrays of other libraries' memory).

The new array of a ``*_like`` takes the shape, dtype and device of ``a`` unless ``dtype`` or
``device`` say otherwise; ``a`` may be a gpudev array or anything with ``.shape`` and ``.dtype``
(a NumPy array, whose arrays go to the CPU unless ``device`` says otherwise).

>>> import gpudev as gd
>>> x = gd.arange(6).reshape(2, 3)
>>> gd.ones_like(x).tolist()
[[1, 1, 1], [1, 1, 1]]
>>> gd.full_like(x, 0.5, dtype=gd.float32).dtype
dtype('float32')
"""

from __future__ import annotations

import numbers
import reprlib
from typing import Any

import numpy as np

from .. import _C
from .._C import Array
from .._devices import device_label
from . import declare, public

__all__ = ["empty_like", "eye", "from_dlpack", "from_numpy", "full_like", "linspace", "meshgrid", "ones_like", "tril",
           "triu", "zeros_like"]

# what the core makes (csrc/core/creation.c, convert.c); PyTorch's tensor is array
declare("creation", _C, "array asarray arange empty full ones zeros tensor=array")


def _like(name: str, a: Any, dtype: Any, device: Any) -> tuple[tuple, dict]:
    """The shape, and the dtype and device keywords, of a new array like a."""
    if not (hasattr(a, "shape") and hasattr(a, "dtype")):
        raise TypeError(f"{name}: expected an array (with .shape and .dtype), got {type(a).__name__}")
    if device is None:
        device = a.device if isinstance(a, _C.Array) else "cpu"
    return tuple(a.shape), {"dtype": a.dtype if dtype is None else dtype, "device": device}


@public("creation", numpy="zeros_like")
def zeros_like(a: Any, dtype: Any = None, device: Any = None) -> _C.Array:
    """An array of zeros with a's shape, dtype and device. ``gd.zeros_like(x)``"""
    shape, kw = _like("zeros_like", a, dtype, device)
    return _C.zeros(shape, **kw)


@public("creation", numpy="ones_like")
def ones_like(a: Any, dtype: Any = None, device: Any = None) -> _C.Array:
    """An array of ones with a's shape, dtype and device. ``gd.ones_like(x)``"""
    shape, kw = _like("ones_like", a, dtype, device)
    return _C.ones(shape, **kw)


@public("creation", numpy="empty_like")
def empty_like(a: Any, dtype: Any = None, device: Any = None) -> _C.Array:
    """An uninitialised array with a's shape, dtype and device. ``gd.empty_like(x)``"""
    shape, kw = _like("empty_like", a, dtype, device)
    return _C.empty(shape, **kw)


@public("creation", numpy="full_like")
def full_like(a: Any, fill_value: Any, dtype: Any = None, device: Any = None) -> _C.Array:
    """An array of fill_value with a's shape, dtype and device. ``gd.full_like(x, 7)``"""
    shape, kw = _like("full_like", a, dtype, device)
    return _C.full(shape, fill_value, **kw)


# ---------------------------------------------------------------------------------------------
# the array API standard's other creation functions, made of arange and comparisons on the
# device asked for (nothing is built on the host and copied)
# ---------------------------------------------------------------------------------------------

@public("creation")
def eye(n_rows: int, n_cols: int | None = None, /, *, k: int = 0, dtype: Any = None,
        device: Any = None) -> _C.Array:
    """The (n_rows, n_cols) array with ones on diagonal `k` (above the main one for k > 0)
    and zeros elsewhere. ``gd.eye(3)``

    The array of zeros is made first, which checks its size before anything else is
    allocated (``gd.eye(2**31)`` raises at once), and then its diagonal is set through a
    strided view; a diagonal outside the matrix (any int k) leaves it all zeros, as in NumPy."""
    n_cols = n_rows if n_cols is None else n_cols
    for name, value in (("n_rows", n_rows), ("n_cols", n_cols), ("k", k)):
        if not isinstance(value, numbers.Integral) or isinstance(value, bool):
            raise TypeError(f"eye: {name} must be an int, got {reprlib.repr(value)}")
    n_rows, n_cols, k = int(n_rows), int(n_cols), int(k)
    if n_rows < 0 or n_cols < 0:
        raise ValueError(f"eye: negative dimensions are not allowed, got ({n_rows}, {n_cols})")
    try:
        out = _C.zeros((n_rows, n_cols), dtype=_C.float32 if dtype is None else dtype, device=device)
    except (TypeError, ValueError, MemoryError) as exc:
        from .shape import renamed

        raise renamed(exc, "zeros", "eye") from None
    length = max(0, min(n_rows, n_cols - k) if k >= 0 else min(n_rows + k, n_cols))
    if length:  # the diagonal starts at (0, k) or (-k, 0) and steps by a row and a column
        start = k if k >= 0 else -k * n_cols
        out.reshape(-1)[start:start + (length - 1) * (n_cols + 1) + 1:n_cols + 1] = 1
    return out


@public("creation")
def linspace(start: float, stop: float, /, num: int, *, dtype: Any = None, device: Any = None,
             endpoint: bool = True) -> _C.Array:
    """`num` evenly spaced values from start to stop (stop left out when endpoint is False).
    ``gd.linspace(0, 1, 5)``"""
    if not isinstance(num, int) or isinstance(num, bool) or num < 0:
        raise ValueError(f"linspace: num must be a non-negative int, got {reprlib.repr(num)}")
    dtype = _C.float32 if dtype is None else dtype
    div = (num - 1) if endpoint else num
    step = (stop - start) / div if div > 0 else 0.0
    # computed in float64 and rounded once to dtype; the end is set exactly, as NumPy does
    out = _C.arange(num, dtype=_C.float64, device=device) * step + start
    if endpoint and num > 1:
        out[num - 1] = stop
    return out.astype(dtype, copy=False)


@public("creation")
def meshgrid(*arrays: _C.Array, indexing: str | None = None) -> list[_C.Array]:
    """Coordinate arrays from 1-D arrays: for 'xy' (Cartesian) the first two axes are swapped
    with respect to 'ij' (matrix indexing).

    With two or more arrays, ``indexing`` must be given: NumPy and the array API standard
    default to 'xy', PyTorch to 'ij', so code from either camp would get the other's axes
    without a word (d2l's ``torch.meshgrid(x, y)`` renamed). One array gives one answer."""
    if indexing is None:
        if len(arrays) > 1:
            raise TypeError("meshgrid: pass indexing= with two or more arrays: NumPy and the array API "
                            "default to indexing='xy', PyTorch to indexing='ij', which swaps the first "
                            "two axes; write gd.meshgrid(x, y, indexing='xy') or indexing='ij'")
        indexing = "xy"
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {reprlib.repr(indexing)}")
    from .shape import broadcast_to

    for a in arrays:
        if not isinstance(a, _C.Array) or a.ndim != 1:
            raise ValueError(f"meshgrid: expected 1-D gpudev arrays, got {getattr(a, 'shape', type(a).__name__)}")
    n = len(arrays)
    shape = [a.shape[0] for a in arrays]
    if indexing == "xy" and n > 1:
        shape[0], shape[1] = shape[1], shape[0]
    out = []
    for k, a in enumerate(arrays):
        axis = {0: 1, 1: 0}.get(k, k) if indexing == "xy" and n > 1 else k
        out.append(broadcast_to(a.reshape(tuple(-1 if j == axis else 1 for j in range(n))), tuple(shape)))
    return out


def _triangle(name: str, x: _C.Array, k: int, lower: bool) -> _C.Array:
    if not isinstance(x, _C.Array) or x.ndim < 2:
        raise ValueError(f"{name}: expected a gpudev Array of at least 2 dimensions, got "
                         f"{getattr(x, 'shape', type(x).__name__)}")
    rows = _C.arange(x.shape[-2], device=x.device).reshape((x.shape[-2], 1))
    cols = _C.arange(x.shape[-1], device=x.device).reshape((1, x.shape[-1]))
    keep = (cols - rows <= k) if lower else (cols - rows >= k)
    return _C.where(keep, x, _C.zeros((), dtype=x.dtype, device=x.device))


@public("creation")
def tril(x: _C.Array, /, *, k: int = 0) -> _C.Array:
    """x with the elements above diagonal `k` of each matrix (the last two axes) set to zero."""
    return _triangle("tril", x, k, True)


@public("creation")
def triu(x: _C.Array, /, *, k: int = 0) -> _C.Array:
    """x with the elements below diagonal `k` of each matrix (the last two axes) set to zero."""
    return _triangle("triu", x, k, False)


@public("creation", pytorch=True)
def from_numpy(a: np.ndarray) -> Array:
    """A CPU Array of `a`'s values (PyTorch's from_numpy). A copy: gpudev owns its memory."""
    if not isinstance(a, np.ndarray):
        raise TypeError(f"from_numpy: expected a numpy.ndarray, got {type(a).__name__}")
    return _C.array(a)


@public("creation")
def from_dlpack(x: Any, /, *, device: Any = None, copy: bool | None = None) -> Array:
    """An Array of a DLPack producer's data (``__dlpack__``: NumPy, PyTorch, CuPy...), sharing
    its memory where gpudev can (copy=None). ``copy=True`` always gives memory of its own;
    ``device`` asks for the result on that device, a copy when the data is elsewhere, which
    ``copy=False`` refuses. gpudev never writes into an exporter's read-only memory, so it
    copies that on import: ``copy=False`` refuses a read-only NumPy array too.

    Example:
        >>> import numpy as np
        >>> gd.from_dlpack(np.arange(3.0), copy=True).tolist()
        [0.0, 1.0, 2.0]
    """
    if copy is not None and not isinstance(copy, (bool, np.bool_)):
        raise TypeError(f"from_dlpack: copy must be True, False or None, got {type(copy).__name__}")
    target = None if device is None else (device if isinstance(device, _C.Device) else _C.Device(device))
    if copy is False and isinstance(x, np.ndarray) and not x.flags.writeable:
        raise ValueError("from_dlpack: copy=False, but the NumPy array is read-only and gpudev "
                         "copies such memory rather than share it; pass copy=None")
    out = _C.from_dlpack(x)
    if target is not None and out.device != target:
        if copy is False:
            raise ValueError(f"from_dlpack: copy=False, but the data is on {device_label(out.device)} and "
                             f"device={target} asks for a copy; pass copy=None or True")
        return out.to(target)
    return out.copy() if copy else out
