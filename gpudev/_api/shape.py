"""Shapes (csrc/core/shape_ops.c): joining, splitting, reshaping, broadcasting, tiling. The
core's concatenate and stack are declared here, and ``repeat`` (which needs a scan and a
search) where it is defined, in sort.py, which imports this module; defined here: the array
API standard's manipulation functions, PyTorch's ``cat``, new shapes, orders and copies of
arrays.

Each is a view (slicing, permute, reshape) or a short composite of the core's operations
(concatenate, broadcasting arithmetic, index arrays), so it runs on the input's device and
records gradients where its parts do.

>>> import gpudev as gd
>>> x = gd.arange(6).reshape(2, 3)
>>> gd.flip(x, axis=1).tolist(), gd.roll(x, 1, axis=1).tolist()
([[2, 1, 0], [5, 4, 3]], [[2, 0, 1], [5, 3, 4]])
>>> gd.tile(gd.asarray([1, 2]), (2,)).tolist()
[1, 2, 1, 2]
"""

from __future__ import annotations

import math
import numbers
import reprlib
from typing import Any, Sequence

import numpy as np

from .. import _C
from . import declare, public

__all__ = [
    "broadcast_arrays", "broadcast_to", "cat", "concat", "expand_dims", "flip", "matrix_transpose",
    "moveaxis", "permute_dims", "reshape", "roll", "squeeze", "tile", "unstack",
]

Array = _C.Array

declare("shape", _C, "concatenate stack", numpy="concatenate stack")


def _need_array(op: str, x: Any) -> Array:
    if not isinstance(x, Array):
        raise TypeError(f"{op}: expected a gpudev Array, got {type(x).__name__}; convert it first, "
                        f"e.g. gd.asarray(x)")
    return x


def _is_int(x: Any) -> bool:
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


def check_fits(op: str, shape: tuple[int, ...], dtype: Any) -> None:
    """ValueError, before anything is allocated, for a result no array can be: a dimension or
    a size in bytes past 2**63 - 1 (an empty array may have huge other dimensions), where a
    size computed in int64 would wrap."""
    if any(d > 2**63 - 1 for d in shape):
        raise ValueError(f"{op}: the result would have shape {reprlib.repr(shape)}, a dimension past 2**63 - 1; "
                         f"no array has one")
    if math.prod(shape) * dtype.itemsize > 2**63 - 1:
        raise ValueError(f"{op}: an array of shape {reprlib.repr(shape)} and dtype {dtype} would need more "
                         f"than 2**63 bytes; no array has that many elements")


def renamed(exc: BaseException, inner: str, op: str) -> BaseException:
    """exc, raised by the core's `inner` for a function `op` built on it, as naming `op`: the
    user called `op` and should read its name (the same type, the rest of the message)."""
    text = str(exc)
    return type(exc)(op + text[len(inner):]) if text.startswith(inner + ":") else exc


def normalize_axis(op: str, axis: Any, ndim: int) -> int:
    """axis in [0, ndim), negative axes counted from the end; IndexError otherwise."""
    if not _is_int(axis):
        raise TypeError(f"{op}: axis must be an int, got {reprlib.repr(axis)}")
    if not -ndim <= axis < ndim:
        raise IndexError(f"{op}: axis {reprlib.repr(axis)} is out of range for an array of {ndim} dimension(s); "
                         f"use an axis in [{-ndim}, {ndim - 1}]")
    return int(axis) % ndim


def normalize_axes(op: str, axis: Any, ndim: int) -> tuple[int, ...]:
    """None (every axis), an int or a tuple of distinct ints, as a sorted tuple in [0, ndim)."""
    if axis is None:
        return tuple(range(ndim))
    axes = tuple(normalize_axis(op, a, ndim) for a in ((axis,) if _is_int(axis) else tuple(axis)))
    if len(set(axes)) != len(axes):
        raise ValueError(f"{op}: axis {reprlib.repr(axis)} names an axis twice")
    return tuple(sorted(axes))


@public("shape", numpy="reshape")
def reshape(x: Array, /, shape: Sequence[int], *, copy: bool | None = None) -> Array:
    """x with a new shape of the same size (-1 once stands for the rest). ``copy=True`` always
    copies, ``copy=False`` refuses where only a copy could do it, None views when it can."""
    _need_array("reshape", x)
    shape = (shape,) if _is_int(shape) else tuple(shape)
    if copy is False and not x.is_contiguous() and x.size > 1:
        raise ValueError(f"reshape: copy=False, but the array of shape {x.shape} and strides "
                         f"{x.strides} is not contiguous, so {reprlib.repr(shape)} needs a copy; pass copy=None")
    out = x.reshape(shape)
    return out.copy() if copy else out


@public("shape", numpy="transpose")
def permute_dims(x: Array, /, axes: Sequence[int]) -> Array:
    """A view with the axes in the order `axes` (a permutation of range(x.ndim))."""
    _need_array("permute_dims", x)
    axes = tuple(axes)
    if len(axes) != x.ndim or sorted(normalize_axis("permute_dims", a, x.ndim) for a in axes) != list(range(x.ndim)):
        raise ValueError(f"permute_dims: axes {reprlib.repr(axes)} are not a permutation of the {x.ndim} axes of "
                         f"shape {x.shape}")
    return x.permute(*(normalize_axis("permute_dims", a, x.ndim) for a in axes))


@public("shape")
def matrix_transpose(x: Array, /) -> Array:
    """The last two axes swapped (a view): ``x.mT``."""
    if _need_array("matrix_transpose", x).ndim < 2:
        raise ValueError(f"matrix_transpose: needs at least 2 dimensions, got shape {x.shape}")
    return x.mT


@public("shape")
def concat(arrays: Sequence[Array], /, *, axis: int | None = 0) -> Array:
    """The arrays joined along an existing `axis` (None: each flattened, then joined)."""
    arrays = list(arrays)
    if axis is None:
        arrays = [_need_array("concat", a).reshape(-1) for a in arrays]
        axis = 0
    return _C.concatenate(arrays, axis=axis)


@public("shape", pytorch=True)
def cat(tensors: Any, dim: int = 0, *, axis: Any = None) -> Array:
    """PyTorch's ``cat(tensors, dim=0)``: the arrays joined along an existing axis.

    An alias of ``gd.concatenate`` with PyTorch's keyword.
    """
    if axis is not None and dim != 0:
        raise TypeError("cat: give dim= or axis=, not both")
    return _C.concatenate(tensors, axis=dim if axis is None else axis)


@public("shape", numpy="broadcast_to")
def broadcast_to(x: Array, /, shape: Sequence[int]) -> Array:
    """x broadcast to `shape` (NumPy's rules), as an array of its own."""
    _need_array("broadcast_to", x)
    shape = tuple(shape)
    try:
        full = np.broadcast_shapes(x.shape, shape)
    except ValueError as exc:
        if "too large" in str(exc):  # an empty shape whose other dimensions multiply past 2**63
            raise ValueError(f"broadcast_to: shape {reprlib.repr(shape)} has more than 2**63 - 1 elements "
                             f"(its dimensions other than 0 multiply past it); broadcast a smaller shape") from None
        full = None
    if full != shape:
        raise ValueError(f"broadcast_to: shape {x.shape} does not broadcast to {reprlib.repr(shape)}; only "
                         f"dimensions of length 1 grow, and the leading ones may be added")
    if x.shape == shape:
        return x
    base = _C.zeros(shape, dtype=x.dtype, device=x.device)
    return (base | x) if x.dtype == np.dtype(bool) else base + x


@public("shape")
def broadcast_arrays(*arrays: Array) -> list[Array]:
    """The arrays broadcast against each other to one shape."""
    for a in arrays:
        _need_array("broadcast_arrays", a)
    try:
        shape = np.broadcast_shapes(*(a.shape for a in arrays))
    except ValueError:
        raise ValueError(f"broadcast_arrays: shapes {[a.shape for a in arrays]} do not broadcast "
                         f"together") from None
    return [broadcast_to(a, shape) for a in arrays]


@public("shape")
def expand_dims(x: Array, /, axis: int = 0) -> Array:
    """A view with a new axis of length 1 at `axis` (in [-x.ndim - 1, x.ndim])."""
    _need_array("expand_dims", x)
    k = normalize_axis("expand_dims", axis, x.ndim + 1)
    return x.reshape(x.shape[:k] + (1,) + x.shape[k:])


@public("shape")
def squeeze(x: Array, /, axis: int | tuple[int, ...]) -> Array:
    """A view without the axes `axis`, each of which must have length 1."""
    _need_array("squeeze", x)
    axes = normalize_axes("squeeze", axis, x.ndim)
    for a in axes:
        if x.shape[a] != 1:
            raise ValueError(f"squeeze: axis {a} has length {x.shape[a]}, not 1 (shape {x.shape})")
    return x.reshape(tuple(n for k, n in enumerate(x.shape) if k not in axes))


@public("shape")
def flip(x: Array, /, *, axis: int | tuple[int, ...] | None = None) -> Array:
    """A view with the order of the elements along `axis` (every axis by default) reversed."""
    _need_array("flip", x)
    axes = normalize_axes("flip", axis, x.ndim)
    if x.ndim == 0:
        return x[...]
    return x[tuple(slice(None, None, -1) if k in axes else slice(None) for k in range(x.ndim))]


@public("shape")
def moveaxis(x: Array, source: int | tuple[int, ...], destination: int | tuple[int, ...], /) -> Array:
    """A view with the axes `source` moved to the places `destination`, the others in order."""
    _need_array("moveaxis", x)
    src, dst = (tuple(normalize_axis("moveaxis", a, x.ndim) for a in ((axes,) if _is_int(axes) else axes))
                for axes in (source, destination))
    if len(src) != len(dst):
        raise ValueError(f"moveaxis: {len(src)} source axes {reprlib.repr(src)} and {len(dst)} destinations "
                         f"{reprlib.repr(dst)}; give as many of each")
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise ValueError(f"moveaxis: an axis repeats in source {reprlib.repr(source)} or destination "
                         f"{reprlib.repr(destination)}")
    order = [a for a in range(x.ndim) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return x.permute(*order)


@public("shape")
def roll(x: Array, /, shift: int | tuple[int, ...], *, axis: int | tuple[int, ...] | None = None) -> Array:
    """The elements shifted by `shift` along `axis`, those pushed off one end coming back at the
    other (None: along the flattened array, then reshaped)."""
    _need_array("roll", x)
    if axis is None:
        if not _is_int(shift):
            raise TypeError(f"roll: without axis, shift must be one int, got {reprlib.repr(shift)}")
        return roll(x.reshape(-1), shift, axis=0).reshape(x.shape)
    shifts = (shift,) if _is_int(shift) else tuple(shift)
    axes = (axis,) if _is_int(axis) else tuple(axis)
    if len(shifts) == 1 and len(axes) > 1:
        shifts = shifts * len(axes)
    if len(shifts) != len(axes):
        raise ValueError(f"roll: {len(shifts)} shifts {reprlib.repr(shifts)} for {len(axes)} axes {reprlib.repr(axes)}")
    out = x
    for s, a in zip(shifts, axes):
        a = normalize_axis("roll", a, x.ndim)
        n = x.shape[a]
        if n == 0 or s % n == 0:
            continue
        k = n - s % n  # the first element of the result
        lead = (slice(None),) * a
        out = _C.concatenate([out[lead + (slice(k, None),)], out[lead + (slice(0, k),)]], axis=a)
    return out if out is not x else x.copy()


@public("shape")
def tile(x: Array, repetitions: Sequence[int], /) -> Array:
    """x repeated `repetitions[k]` times along each axis k (the shorter of the two padded
    with leading ones)."""
    _need_array("tile", x)
    reps = tuple(repetitions)
    if any(not _is_int(r) or r < 0 for r in reps):
        raise ValueError(f"tile: repetitions must be non-negative ints, got {reprlib.repr(reps)}")
    n = max(len(reps), x.ndim)
    reps = (1,) * (n - len(reps)) + reps
    shape = (1,) * (n - x.ndim) + x.shape
    tiled_shape = tuple(r * s for r, s in zip(reps, shape))
    check_fits("tile", tiled_shape, x.dtype)  # before anything is broadcast
    # (r0, n0, r1, n1, ...): a new axis of length 1 in front of each, broadcast, then merged
    grid = x.reshape(tuple(v for s in shape for v in (1, s)))
    tiled = broadcast_to(grid, tuple(v for r, s in zip(reps, shape) for v in (r, s)))
    return tiled.reshape(tiled_shape)


@public("shape")
def unstack(x: Array, /, *, axis: int = 0) -> tuple[Array, ...]:
    """The views of x along `axis`, one per index: ``x[..., i, ...]`` for each i."""
    _need_array("unstack", x)
    if x.ndim == 0:
        raise ValueError("unstack: needs at least 1 dimension, got a 0-d array")
    a = normalize_axis("unstack", axis, x.ndim)
    return tuple(x[(slice(None),) * a + (i,)] for i in range(x.shape[a]))

