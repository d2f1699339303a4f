"""Sorting, searching and unique values, each composed of the core's operations on the input's
device (as CuPy keeps its sorting apart from its statistics). Defined here, and declared where
defined: sort, argsort, searchsorted, the unique_* functions, and repeat (family shape), which
searches the running sum of its counts.

How, in a line each (n is the length along the axis):
- sort / argsort: a bitonic sorting network, ``log2(n)**2 / 2`` compare-exchange steps of
  ``where`` on (value, index) pairs, so it is stable and puts NaN last, as NumPy does;
- searchsorted: a binary search, ``log2(n)`` gathers;
- repeat with an array of counts: the source of each output element found by searchsorted in
  the running sum of the counts;
- unique_*: a sort, then the positions where the value changes.
No value is read back to the host, except where the size of the result depends on the
values (unique_*, the standard's "data-dependent shapes"; like nonzero, they synchronize).

>>> import gpudev as gd
>>> x = gd.asarray([3, 1, 2, 1])
>>> gd.sort(x).tolist(), gd.argsort(x).tolist(), gd.unique_counts(x).counts.tolist()
([1, 1, 2, 3], [1, 3, 2, 0], [2, 1, 1])
"""

from __future__ import annotations

import reprlib
from typing import NamedTuple

import numpy as np

from .. import _C
from .._C import Array
from . import public
from .index import take
from .reduce import as_numpy_would, cumulative_sum, diff
from .shape import _is_int, _need_array, broadcast_to, check_fits, concat, moveaxis, normalize_axis

__all__ = ["UniqueAllResult", "UniqueCountsResult", "UniqueInverseResult", "argsort", "repeat", "searchsorted",
           "sort", "unique_all", "unique_counts", "unique_inverse", "unique_values"]

BOOL, INT32, INT64 = np.dtype(np.bool_), np.dtype(np.int32), np.dtype(np.int64)


# ---------------------------------------------------------------------------------------------
# searching, and repeat, which searches
# ---------------------------------------------------------------------------------------------

def _before(a: Array, b: Array) -> Array:
    """a < b in the order of sort: NaN after every number (b may be float where a is not)."""
    lt = a < b
    return (lt | ((a == a) & (b != b))) if b.dtype.kind == "f" else lt


@public("sort")
def searchsorted(x1: Array, x2: Array, /, *, side: str = "left", sorter: Array | None = None) -> Array:
    """Where each x2 value would go in the sorted 1-D x1 to keep it sorted: the first such
    index (side='left') or the last (side='right'). `sorter`, when given, sorts x1. A Python
    number or list x2 is read as NumPy reads it (a float is float64) and compared with x1 in
    the dtype both promote to, so ``searchsorted(int array [1, 2, 9], 2.5)`` is 2.

    Example:
        >>> gd.searchsorted(gd.asarray([1.0, 2.0, 2.0, 5.0]), gd.asarray([2.0, 9.0])).tolist()
        [1, 4]
    """
    _need_array("searchsorted", x1)
    if x1.ndim != 1:
        raise ValueError(f"searchsorted: x1 must be 1-D, got shape {x1.shape}")
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {reprlib.repr(side)}")
    if sorter is not None:
        x1 = take(x1, sorter)
    x2 = as_numpy_would(x2, x1.device)  # 2.5 into an int x1 compares as 2.5, not 2
    n = x1.shape[0]
    lo = _C.zeros(x2.shape, dtype=INT64, device=x2.device)
    hi = _C.full(x2.shape, n, dtype=INT64, device=x2.device)
    for _ in range(n.bit_length()):  # the interval [lo, hi) halves each round
        active = lo < hi
        mid = (lo + hi) // 2
        v = x1[_C.minimum(mid, n - 1).reshape(-1)].reshape(x2.shape)
        go = _before(v, x2) if side == "left" else ~_before(x2, v)
        go = go & active
        lo = _C.where(go, mid + 1, lo)
        hi = _C.where(active & ~go, mid, hi)
    return lo


@public("shape")  # a shape, computed with a scan and a search
def repeat(x: Array, repeats: int | Array, /, *, axis: int | None = None) -> Array:
    """Each element repeated `repeats` times along `axis` (None: of the flattened array);
    `repeats` is an int or an integer array with one count per element along the axis.

    With an array of counts the length of the result depends on their values, so it is read
    back from the device (one synchronizing transfer of three numbers: the smallest count, the
    smallest running total and the total). Counts whose total does not fit an array raise
    ValueError, as NumPy's shape checks do (NumPy's own sum of the counts may wrap)."""
    _need_array("repeat", x)
    if axis is None:
        x, axis = x.reshape(-1), 0
    axis = normalize_axis("repeat", axis, x.ndim)
    n = x.shape[axis]
    if _is_int(repeats):
        if repeats < 0:
            raise ValueError(f"repeat: repeats must be non-negative, got {repeats}")
        check_fits("repeat", x.shape[:axis] + (n * int(repeats),) + x.shape[axis + 1:], x.dtype)
        moved = moveaxis(x, axis, -1)
        grown = broadcast_to(moved.reshape(moved.shape + (1,)), moved.shape + (int(repeats),))
        return moveaxis(grown.reshape(moved.shape[:-1] + (n * int(repeats),)), -1, axis)
    if not isinstance(repeats, Array) or repeats.dtype not in (INT32, INT64) or repeats.ndim > 1:
        raise TypeError(f"repeat: repeats must be an int or a 1-D integer array, got {reprlib.repr(repeats)}")
    if repeats.ndim == 0 or repeats.shape[0] == 1:
        counts = broadcast_to(repeats.reshape(1), (n,))
    elif repeats.shape[0] != n:
        raise ValueError(f"repeat: {repeats.shape[0]} counts for an axis of length {n}; give one "
                         f"per element or a single one")
    else:
        counts = repeats
    ends = cumulative_sum(counts)  # int64
    total = 0
    if n:
        # Every count is below 2**63, so the first running total past 2**63 - 1 wraps to a
        # negative one: a negative running total with no negative count is an overflow.
        low, low_end, total = _C.stack([counts.min().astype(INT64), ends.min(), ends[-1]]).tolist()
        if low < 0:
            raise ValueError(f"repeat: repeats must be non-negative, got {low}")
        if low_end < 0:
            raise ValueError(f"repeat: the counts add up to more than 2**63 - 1 elements along axis {axis}; "
                             f"no array has that many")
    check_fits("repeat", x.shape[:axis] + (total,) + x.shape[axis + 1:], x.dtype)
    positions = _C.arange(total, dtype=np.int64, device=x.device)
    source = searchsorted(ends, positions, side="right")
    return x[(slice(None),) * axis + (source,)]


# ---------------------------------------------------------------------------------------------
# sorting: a bitonic network over (class, key, index), class 0 numbers, 1 NaN, 2 padding
# ---------------------------------------------------------------------------------------------

def _pair_before(ca: Array, ka: Array, ia: Array, cb: Array, kb: Array, ib: Array,
                 descending: bool) -> Array:
    """Whether element a goes before element b: by class, then key, then index (stability)."""
    key_lt = (ka > kb) if descending else (ka < kb)
    numbers = ca == 0
    same = ca == cb
    tie = ((ka == kb) | ~numbers) & (ia < ib)
    return (ca < cb) | (same & ((numbers & key_lt) | tie))


def _bitonic(x: Array, descending: bool) -> tuple[Array, Array]:
    """(sorted values, their indices) along the last axis of x."""
    n = x.shape[-1]
    batch = x.shape[:-1]
    m = 1 << max(n - 1, 0).bit_length()  # the power of two at or above n
    key = x.astype(INT64) if x.dtype == BOOL else x
    pad = m - n
    idx = _C.arange(m, device=x.device) + _C.zeros(batch + (m,), dtype=INT64, device=x.device)
    cls = (idx >= n).astype(INT64) * 2
    if pad:
        key = concat([key, _C.zeros(batch + (pad,), dtype=key.dtype, device=x.device)], axis=-1)
    if key.dtype.kind == "f":
        cls = cls + (key != key).astype(INT64)
    arrays = [cls, key, idx]
    k = 2
    while k <= m:
        j = k // 2
        while j >= 1:
            arrays = _exchange(arrays, batch, m, j, k, descending)
            j //= 2
        k *= 2
    _, key, idx = (a[..., :n] for a in arrays)
    return key.astype(x.dtype, copy=False), idx


def _exchange(arrays: list[Array], batch: tuple[int, ...], m: int, j: int, k: int,
              descending: bool) -> list[Array]:
    """One step of the network: element i against i ^ j, ascending in blocks where i & k is 0."""
    pairs = [a.reshape(batch + (m // (2 * j), 2, j)) for a in arrays]
    lo = [p[..., 0, :] for p in pairs]
    hi = [p[..., 1, :] for p in pairs]
    block = _C.arange(m // (2 * j), device=arrays[0].device)
    ascending = ((block & (k // (2 * j))) == 0).reshape((m // (2 * j), 1))
    swap = _C.where(ascending, _pair_before(*hi, *lo, descending), _pair_before(*lo, *hi, descending))
    out = []
    for a_lo, a_hi in zip(lo, hi):
        new = _C.stack([_C.where(swap, a_hi, a_lo), _C.where(swap, a_lo, a_hi)], axis=-2)
        out.append(new.reshape(batch + (m,)))
    return out


def _sort_along(op: str, x: Array, axis: int, descending: bool) -> tuple[Array, Array, int]:
    _need_array(op, x)
    if x.ndim == 0:
        raise ValueError(f"{op}: needs at least 1 dimension, got a 0-d array")
    a = normalize_axis(op, axis, x.ndim)
    values, idx = _bitonic(moveaxis(x, a, -1), descending)
    return values, idx, a


@public("sort")
def argsort(x: Array, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Array:
    """The indices that sort x along `axis` (int64); equal elements keep their order (always
    stable), NaN goes last."""
    _, idx, a = _sort_along("argsort", x, axis, descending)
    return moveaxis(idx, -1, a)


@public("sort")
def sort(x: Array, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Array:
    """x sorted along `axis` (NaN last), ascending unless ``descending=True``."""
    values, _, a = _sort_along("sort", x, axis, descending)
    return moveaxis(values, -1, a)


# ---------------------------------------------------------------------------------------------
# set functions: each NaN is its own value, as the standard says
# ---------------------------------------------------------------------------------------------

class UniqueAllResult(NamedTuple):
    values: Array
    indices: Array
    inverse_indices: Array
    counts: Array


class UniqueCountsResult(NamedTuple):
    values: Array
    counts: Array


class UniqueInverseResult(NamedTuple):
    values: Array
    inverse_indices: Array


def _groups(x: Array) -> tuple[Array, Array, Array, Array]:
    """For flattened x: its stable sort order, the sorted values, where each run of equal
    values starts (the first element of the sorted array always), and that as a bool mask."""
    flat = _need_array("unique", x).reshape(-1)
    values, order = _bitonic(flat, False)
    n = flat.shape[0]
    if n == 0:
        return order, values, _C.zeros((0,), dtype=INT64, device=x.device), values != values
    first = _C.ones((1,), dtype=BOOL, device=x.device)
    starts = concat([first, values[1:] != values[:-1]], axis=0)  # NaN != NaN: each NaN its own
    return order, values, _C.nonzero(starts)[0], starts


def _counts(starts: Array, n: int) -> Array:
    return diff(starts, append=_C.full((1,), n, dtype=INT64, device=starts.device))


@public("sort")
def unique_values(x: Array, /) -> Array:
    """The distinct values of x, sorted, as a 1-D array."""
    _, values, starts, _ = _groups(x)
    return values[starts]


@public("sort")
def unique_counts(x: Array, /) -> UniqueCountsResult:
    """The distinct values of x, sorted, and how often each occurs."""
    _, values, starts, _ = _groups(x)
    return UniqueCountsResult(values[starts], _counts(starts, x.size))


def _inverse(x: Array, order: Array, mask: Array) -> Array:
    group = cumulative_sum(mask.astype(INT64)) - 1  # the distinct value each sorted element is
    inverse = _C.empty((x.size,), dtype=INT64, device=x.device)
    if x.size:
        inverse[order] = group
    return inverse.reshape(x.shape)


@public("sort")
def unique_inverse(x: Array, /) -> UniqueInverseResult:
    """The distinct values of x, sorted, and for each element of x the index of its value."""
    order, values, starts, mask = _groups(x)
    return UniqueInverseResult(values[starts], _inverse(x, order, mask))


@public("sort")
def unique_all(x: Array, /) -> UniqueAllResult:
    """The distinct values of x, sorted; the index of each one's first occurrence in the
    flattened x; the index of each element's value; and how often each value occurs."""
    order, values, starts, mask = _groups(x)
    return UniqueAllResult(values[starts], order[starts], _inverse(x, order, mask), _counts(starts, x.size))
