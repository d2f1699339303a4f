"""Indexing and selection (csrc/core/index.c, gather.c, select.c): the core's where and
nonzero; defined here: the array API standard's take and take_along_axis, and the core's keys
with several index arrays.

**Several index arrays**, NumPy's way: ``a[rows, cols]``, ``a[idx, :, idx2]``,
``a[:, idx]``, ``a[0, idx]`` and assignment through them.

The core handles one index array (or mask) on the leading axes itself and hands every other
advanced key here. The key becomes one flat index into ``a``'s basic view, composed from
whole-array operations that broadcast as NumPy does, then one gather ``v.reshape(-1)[flat]``
or scatter of the single-array kind, so it runs on every device and records its gradient.

NumPy's rules, all kept: the index arrays (integers count as 0-d ones, a bool array as the
coordinates of its True elements) broadcast together; their shape takes the place of the
first of them when they are next to each other, and goes first otherwise; negative indices
count from the end, and an index out of range raises IndexError (read back from the device
once per key, a synchronization, as for one index array).

>>> import gpudev as gd
>>> a = gd.arange(12).reshape(3, 4)
>>> a[[0, 2], [1, 3]].tolist()
[1, 11]
>>> a[:, [0, 3]].tolist()
[[0, 3], [4, 7], [8, 11]]
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import _C, _array_api
from .._C import Array
from .._devices import device_label
from . import declare, public
from .shape import _need_array, broadcast_to, normalize_axis, renamed

__all__ = ["install", "put_key", "take", "take_along_axis", "take_key"]

BOOL, INT64 = np.dtype(np.bool_), np.dtype(np.int64)

declare("index", _C, "nonzero where", numpy="where")
declare("index", _array_api, "newaxis")


def _is_array_item(it: Any) -> bool:
    if isinstance(it, (list, _C.Array)):
        return True
    return isinstance(it, np.ndarray) and (it.ndim > 0 or it.dtype == bool)


def _as_index(a: _C.Array, it: Any, op: str) -> list[_C.Array]:
    """An index item as int64 arrays on a's device: one for an integer array, one per axis
    for a bool array (its True coordinates)."""
    if isinstance(it, _C.Array):
        idx = it if it.device == a.device or it.device != _C.cpu() else it.to(a.device)
        if idx.device != a.device:
            raise ValueError(f"{op}: the index is on {device_label(idx.device)} but the array is on "
                             f"{device_label(a.device)}; "
                             f"indices must be on the CPU or on the indexed array's device: move "
                             f"it with idx.to('{a.device}')")
    else:
        try:
            idx = _C.asarray(it, device=a.device)
        except (TypeError, ValueError):
            raise IndexError(f"{op}: the index {type(it).__name__} is not a list of integers or "
                             f"of bools") from None
        if isinstance(it, list) and idx.size == 0:
            idx = idx.astype(_C.int64)
    if idx.dtype == np.dtype(bool):
        if idx.ndim == 0:  # NumPy arrays and lists; a gpudev 0-d mask is handled by _split
            raise IndexError(f"{op}: a 0-d boolean index that is not a gpudev array is not "
                             f"supported; use gd.asarray(mask)")
        return list(idx.nonzero())
    if idx.dtype == np.dtype(np.int32):
        idx = idx.astype(_C.int64)  # the positions computed from it need int64
    if idx.dtype != np.dtype(np.int64):
        raise IndexError(f"{op}: arrays used as indices must be of integer (or boolean) type, got "
                         f"{idx.dtype}")
    return [idx]


def _split(a: _C.Array, key: tuple, op: str) -> tuple[tuple, list[tuple[int, _C.Array]], list]:
    """The basic key (each advanced item replaced by full slices), the advanced indices as
    (axis of the basic view, int64 array) pairs in key order, and the bool indices' places."""
    if sum(1 for it in key if it is Ellipsis) > 1:
        raise IndexError(f"{op}: an index can only have a single ellipsis ('...')")
    used = sum(_consumed(it) for it in key)
    if used > a.ndim:
        raise IndexError(f"{op}: too many indices for array: array is {a.ndim}-dimensional, but "
                         f"{used} were indexed")
    basic: list[Any] = []
    advanced: list[tuple[int, _C.Array]] = []
    masks: list[tuple[int, tuple[int, ...]]] = []  # (first axis, shape) of each bool index
    axis = 0  # the next axis of the basic view
    for it in key:
        if it is Ellipsis:
            fill = a.ndim - used
            basic.append(Ellipsis)
            axis += fill
        elif it is None:
            basic.append(None)
            axis += 1
        elif isinstance(it, slice):
            basic.append(it)
            axis += 1
        elif isinstance(it, _C.Array) and it.ndim == 0 and it.dtype == np.dtype(bool):
            # NumPy's a[True] / a[False]: a new axis of length 1, kept or dropped by the mask
            basic.append(None)
            advanced.append((axis, _as_index(a, it.reshape(1), op)[0]))
            axis += 1
        elif _is_array_item(it) or _is_integer(it):
            arrays = _as_index(a, it, op) if _is_array_item(it) else [_C.array(int(it), device=a.device)]
            if _is_mask(it):
                masks.append((axis, tuple(it.shape) if hasattr(it, "shape") else np.shape(it)))
            for idx in arrays:
                basic.append(slice(None))
                advanced.append((axis, idx))
                axis += 1
        else:
            raise IndexError(f"{op}: only integers, slices (start:stop:step), ellipsis (...), None "
                             f"and integer or boolean arrays are valid indices, got "
                             f"{type(it).__name__}")
    return tuple(basic), advanced, masks


def _is_mask(it: Any) -> bool:
    return _consumed(it) >= 1 and (getattr(it, "dtype", None) == np.dtype(bool) or (
        isinstance(it, list) and np.asarray(it).dtype == bool))


def _check_masks(view: _C.Array, masks: list[tuple[int, tuple[int, ...]]], op: str) -> None:
    for axis, shape in masks:
        for k, m in enumerate(shape):
            if view.shape[axis + k] != m:
                raise IndexError(f"{op}: boolean index did not match indexed array along axis "
                                 f"{axis + k}; size of axis is {view.shape[axis + k]} but size of "
                                 f"corresponding boolean axis is {m}")


def _consumed(it: Any) -> int:
    """The axes of a that an index item uses: a bool array one per dimension."""
    if it is None or it is Ellipsis:
        return 0
    if isinstance(it, (_C.Array, np.ndarray)) and it.dtype == np.dtype(bool):
        return it.ndim
    if isinstance(it, list):
        try:
            arr = np.asarray(it)
        except ValueError:
            return 1  # ragged: converting it reports the problem
        return arr.ndim if arr.dtype == bool else 1
    return 1


def _is_integer(it: Any) -> bool:
    if isinstance(it, (bool, np.bool_)):
        return False
    if isinstance(it, np.ndarray):
        return it.ndim == 0 and it.dtype.kind in "iu"
    return hasattr(it, "__index__")


def _check_bounds(view: _C.Array, advanced: list[tuple[int, _C.Array]], op: str) -> None:
    """IndexError naming the first index out of range; one transfer for all of them."""
    nonempty = [(ax, idx) for ax, idx in advanced if idx.size]
    if not nonempty:
        return
    ends = _C.stack([v for _, idx in nonempty for v in (idx.min(), idx.max())]).tolist()
    for k, (ax, _) in enumerate(nonempty):
        n = view.shape[ax]
        for v in ends[2 * k:2 * k + 2]:
            if not -n <= v < n:
                raise IndexError(f"{op}: index {v} is out of bounds for axis {ax} with size {n}")


def _flat_index(view: _C.Array, advanced: list[tuple[int, _C.Array]], op: str) -> _C.Array:
    """The position in view.reshape(-1) of each element of view[advanced]: an int64 array of
    the result's shape."""
    try:
        bshape = np.broadcast_shapes(*(idx.shape for _, idx in advanced))
    except ValueError:
        shapes = " ".join(str(idx.shape) for _, idx in advanced)
        raise IndexError(f"{op}: shape mismatch: indexing arrays could not be broadcast together "
                         f"with shapes {shapes}") from None
    _check_bounds(view, advanced, op)
    axes = [ax for ax, _ in advanced]
    adjacent = axes == list(range(axes[0], axes[0] + len(axes)))
    rest = [k for k in range(view.ndim) if k not in axes]
    if adjacent:  # the broadcast shape replaces the advanced axes where they are
        before, after = [k for k in rest if k < axes[0]], [k for k in rest if k > axes[0]]
    else:  # NumPy puts it first
        before, after = [], rest
    nb = len(bshape)
    out_ndim = len(before) + nb + len(after)
    # C-order element strides of the view's shape: flat = sum(index_k * stride_k)
    strides = [math.prod(view.shape[k + 1:]) for k in range(view.ndim)]
    flat = _C.zeros((1,) * out_ndim, dtype=_C.int64, device=view.device)
    for ax, idx in advanced:
        n = view.shape[ax]
        idx = _C.where(idx < 0, idx + n, idx)
        shape = (1,) * len(before) + (1,) * (nb - idx.ndim) + idx.shape + (1,) * len(after)
        flat = flat + idx.reshape(shape) * strides[ax]
    for pos, k in enumerate(before + after):
        where = pos if pos < len(before) else pos + nb
        shape = tuple(view.shape[k] if d == where else 1 for d in range(out_ndim))
        flat = flat + _C.arange(view.shape[k], device=view.device).reshape(shape) * strides[k]
    return flat


def _plan(a: _C.Array, key: Any, op: str) -> tuple[_C.Array, _C.Array]:
    """(basic view of a, flat index into it) for an advanced key."""
    key = key if isinstance(key, tuple) else (key,)
    basic, advanced, masks = _split(a, key, op)
    view = a[basic]
    _check_masks(view, masks, op)
    return view, _flat_index(view, advanced, op)


def take_key(a: _C.Array, key: Any, value: None = None) -> _C.Array:
    """a[key] for a key with several index arrays (or one after a slice or an integer)."""
    view, flat = _plan(a, key, "getitem")
    return view.reshape(-1)[flat.reshape(-1)].reshape(flat.shape)


def put_key(a: _C.Array, key: Any, value: Any) -> None:
    """a[key] = value for the keys take_key() reads; value broadcasts to a[key]'s shape."""
    view, flat = _plan(a, key, "setitem")
    target = view.reshape(-1) if view.is_contiguous() else view.copy().reshape(-1)
    target[flat.reshape(-1)] = _broadcast_value(value, flat.shape, a)
    if not view.is_contiguous():  # the writes went to a copy: store it back through the view
        view[...] = target.reshape(view.shape)


def _broadcast_value(value: Any, shape: tuple[int, ...], a: _C.Array) -> Any:
    """value as an array of the selection's shape, flattened (NumPy's broadcast rules)."""
    v = value if isinstance(value, _C.Array) else _C.asarray(value, dtype=a.dtype, device=a.device)
    if v.shape == shape:
        return v.reshape(-1)
    try:
        np.broadcast_shapes(v.shape, shape)
    except ValueError:
        raise ValueError(f"setitem: could not broadcast input array from shape {v.shape} into "
                         f"shape {shape}") from None
    full = _C.zeros(shape, dtype=a.dtype, device=a.device)
    full[...] = v
    return full.reshape(-1)


def install() -> None:
    """Tell the core where such keys go (once, at import)."""
    _C._set_multi_index((take_key, put_key))


# ---------------------------------------------------------------------------------------------
# the array API standard's take and take_along_axis: a key with one index array each
# ---------------------------------------------------------------------------------------------

@public("index")
def take(x: Array, indices: Array, /, *, axis: int | None = None) -> Array:
    """The elements of x at the integer `indices` along `axis` (optional for 1-D arrays)."""
    _need_array("take", x)
    if axis is None:
        if x.ndim != 1:
            raise ValueError(f"take: axis is required for an array of {x.ndim} dimensions (shape {x.shape})")
        axis = 0
    a = normalize_axis("take", axis, x.ndim)
    if _need_array("take", indices).dtype == BOOL:  # positions 0 and 1, as NumPy's take reads them
        indices = indices.astype(INT64)
    return _gathered("take", x, (slice(None),) * a + (indices,))


def _gathered(op: str, x: Array, key: tuple) -> Array:
    """x[key], with the core's errors naming `op` instead of the indexing it runs."""
    try:
        return x[key]
    except (IndexError, TypeError, ValueError) as exc:
        raise renamed(exc, "getitem", op) from None


@public("index")
def take_along_axis(x: Array, indices: Array, /, *, axis: int = -1) -> Array:
    """``out[..., i, ...] = x[..., indices[..., i, ...], ...]`` along `axis`: the elements
    that, e.g., ``argsort(x, axis=axis)`` names."""
    _need_array("take_along_axis", x)
    if _need_array("take_along_axis", indices).dtype.kind != "i":
        raise IndexError(f"take_along_axis: indices must be an integer array (as NumPy's), got {indices.dtype}")
    if indices.ndim != x.ndim:
        raise ValueError(f"take_along_axis: indices have {indices.ndim} dimensions, x has {x.ndim}; "
                         f"give them the same number")
    a = normalize_axis("take_along_axis", axis, x.ndim)
    shape = tuple(np.broadcast_shapes(x.shape[:a] + x.shape[a + 1:], indices.shape[:a] + indices.shape[a + 1:]))
    shape = shape[:a] + (indices.shape[a],) + shape[a:]
    index = []
    for k in range(x.ndim):
        if k == a:
            index.append(indices)
        else:  # the position along axis k, shaped to broadcast along every other axis
            index.append(_C.arange(shape[k], device=x.device).reshape(
                tuple(shape[k] if j == k else 1 for j in range(x.ndim))))
    if x.ndim == 0:
        raise ValueError("take_along_axis: needs at least 1 dimension, got a 0-d array")
    return _gathered("take_along_axis", x, tuple(broadcast_to(i, shape) for i in index))
