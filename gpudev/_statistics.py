"""The array API standard's reductions, scans, searching, sorting, set and indexing functions
that the core has no kernel for, each composed of the core's operations on the input's device.

How, in a line each (n is the length along the axis):
- cumulative_sum / cumulative_prod: a Hillis-Steele scan, ``log2(n)`` shifted sums;
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
>>> gd.sort(x).tolist(), gd.argsort(x).tolist(), gd.cumulative_sum(x).tolist()
([1, 1, 2, 3], [1, 3, 2, 0], [3, 4, 6, 7])
>>> gd.unique_counts(x).counts.tolist(), gd.prod(x).item()
([2, 1, 1], 6)
"""

from __future__ import annotations

import reprlib
from typing import Any, Callable, NamedTuple

import numpy as np

from . import _C
from ._api import public
from ._api.shape import (
    _is_int, _need_array, broadcast_to, check_fits, concat, moveaxis, normalize_axes, normalize_axis, renamed,
)

__all__ = [
    "argsort", "count_nonzero", "cumulative_prod", "cumulative_sum", "diff", "mean", "prod",
    "repeat", "searchsorted", "sort", "std", "sum", "take", "take_along_axis", "unique_all", "unique_counts",
    "unique_inverse", "unique_values", "var",
]

Array = _C.Array
BOOL, INT32, INT64 = np.dtype(np.bool_), np.dtype(np.int32), np.dtype(np.int64)


def _accumulator(op: str, x: Array, dtype: Any) -> np.dtype:
    """The result dtype of sum/prod/cumulative_*: `dtype`, or x's with bool and int32 as
    int64 (the default integer, as NumPy and the standard accumulate smaller integers)."""
    if dtype is not None:
        from ._array_api import _dtype

        return _dtype(op, dtype)
    return INT64 if x.dtype in (BOOL, INT32) else x.dtype


# ---------------------------------------------------------------------------------------------
# reductions
# ---------------------------------------------------------------------------------------------

def _list_function(row: Any) -> Callable[..., Array]:
    """gd.<name> for a row of the reduction list (csrc/tables.h) with a method: the array API
    standard's function, Array.<name> over `axis` (every axis by default; an empty tuple gives
    x itself), with dtype= where the row takes it."""
    name = row.name
    if row.dtype:
        def reduction(x: Array, /, *, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Array:
            return _accumulate(name, x, axis, dtype, keepdims)
    else:
        def reduction(x: Array, /, *, axis: Any = None, keepdims: bool = False) -> Array:  # type: ignore[misc]
            _need_array(name, x)
            axes = normalize_axes(name, axis, x.ndim)
            return x.copy() if not axes else getattr(x, name)(axis=axes, keepdims=keepdims)
    method = getattr(Array, f"_{name}", None) or getattr(Array, name)  # its C method's text
    summary, _, rest = (method.__doc__ or name).partition("\n\n")
    widens = "; bool, int32 and int64 give int64, as in the array API standard" if row.widens and row.dtype else ""
    reduction.__name__ = reduction.__qualname__ = name
    reduction.__doc__ = f"{summary.rstrip('.')}{widens}." + (f"\n\n{rest}" if rest else "")
    return reduction


# the reduction list's module functions, by name (gpudev/_api/reduce.py declares those that
# no module declares by hand: gd.max and gd.min have PyTorch's and NumPy's forms, _torch.py)
LIST_FUNCTIONS = {row.name: _list_function(row) for row in _C._reductions if row.method}
sum, prod = LIST_FUNCTIONS["sum"], LIST_FUNCTIONS["prod"]  # noqa: A001 (count_nonzero, linalg)


def _accumulate(op: str, x: Array, axis: Any, dtype: Any, keepdims: bool) -> Array:
    """The core's reduction `op` (Array.sum, Array.prod) in the standard's result dtype."""
    _need_array(op, x)
    acc = _accumulator(op, x, dtype)
    axes = normalize_axes(op, axis, x.ndim)
    if not axes:
        return x.astype(acc)
    if not (x.dtype == INT32 and acc == INT64):  # the core accumulates int32 into int64 itself
        x = x.astype(acc, copy=False)
    return getattr(x, op)(axis=axes, keepdims=keepdims).astype(acc, copy=False)  # int32 asked: it wraps


def mean(x: Array, /, *, axis: Any = None, keepdims: bool = False) -> Array:
    """The arithmetic mean over `axis` (every axis by default) of a float array."""
    _need_array("mean", x)
    axes = normalize_axes("mean", axis, x.ndim)
    return x.copy() if not axes else x.mean(axis=axes, keepdims=keepdims)


def _correction(op: str, correction: Any) -> float:
    if isinstance(correction, bool) or not isinstance(correction, (int, float, np.integer, np.floating)):
        raise TypeError(f"{op}: correction must be a number, got {type(correction).__name__}")
    return float(correction)


def var(x: Array, /, *, axis: Any = None, correction: float = 0.0, keepdims: bool = False) -> Array:
    """The variance over `axis`, dividing by n - correction."""
    _need_array("var", x)
    correction = _correction("var", correction)
    return x.var(normalize_axes("var", axis, x.ndim), correction=correction, keepdims=keepdims)


def std(x: Array, /, *, axis: Any = None, correction: float = 0.0, keepdims: bool = False) -> Array:
    """The standard deviation over `axis`, dividing by n - correction."""
    _need_array("std", x)
    correction = _correction("std", correction)
    return x.std(normalize_axes("std", axis, x.ndim), correction=correction, keepdims=keepdims)


def count_nonzero(x: Array, /, *, axis: Any = None, keepdims: bool = False) -> Array:
    """How many elements along `axis` are not zero (False), as int64."""
    _need_array("count_nonzero", x)
    return sum(x != 0, axis=axis, keepdims=keepdims)


# ---------------------------------------------------------------------------------------------
# scans and differences
# ---------------------------------------------------------------------------------------------

def _scan_axis(op: str, x: Array, axis: Any) -> int:
    if axis is None:
        if x.ndim > 1:
            raise ValueError(f"{op}: axis is required for an array of {x.ndim} dimensions (shape {x.shape})")
        return 0
    return normalize_axis(op, axis, max(x.ndim, 1))


def _scan(op: str, combine: Any, identity: Any, x: Array, axis: Any, dtype: Any,
          include_initial: bool) -> Array:
    _need_array(op, x)
    x = x.astype(_accumulator(op, x, dtype), copy=False)
    if x.ndim == 0:
        x = x.reshape(1)
    a = _scan_axis(op, x, axis)
    y = moveaxis(x, a, -1)
    n, shift = y.shape[-1], 1
    while shift < n:  # y[i] combines y[i - shift] and y[i]: after log2(n) rounds, all of y[:i+1]
        y = concat([y[..., :shift], combine(y[..., shift:], y[..., :-shift])], axis=-1)
        shift *= 2
    if include_initial:
        y = concat([_C.full(y.shape[:-1] + (1,), identity, dtype=y.dtype, device=y.device), y], axis=-1)
    elif shift == 1:
        y = y.copy()
    return moveaxis(y, -1, a)


def cumulative_sum(x: Array, /, *, axis: int | None = None, dtype: Any = None,
                   include_initial: bool = False) -> Array:
    """The running sums along `axis` (optional for 1-D arrays); ``include_initial=True``
    starts with 0.

    Example:
        >>> gd.cumulative_sum(gd.asarray([1.0, 2.0, 3.0]), include_initial=True).tolist()
        [0.0, 1.0, 3.0, 6.0]
    """
    return _scan("cumulative_sum", _C.Array.__add__, 0, x, axis, dtype, include_initial)


def cumulative_prod(x: Array, /, *, axis: int | None = None, dtype: Any = None,
                    include_initial: bool = False) -> Array:
    """The running products along `axis` (optional for 1-D arrays); ``include_initial=True``
    starts with 1."""
    return _scan("cumulative_prod", _C.Array.__mul__, 1, x, axis, dtype, include_initial)


def _as_numpy_would(value: Any, device: Any) -> Array:
    """A non-Array operand as ``np.asarray`` reads it: a Python float is float64 (where
    gpudev's own rule makes float32), an int int64, a bool bool, so that a float compared with
    an int array (searchsorted) or joined to one (diff) keeps its value, as in NumPy. Other
    values take gpudev's rules and errors (an int beyond int64: OverflowError)."""
    if isinstance(value, Array):
        return value
    try:
        host = np.asarray(value)
    except Exception:  # noqa: BLE001 - gpudev's own conversion says what is wrong with it
        host = None
    if host is not None and host.dtype in (BOOL, INT64, np.dtype(np.float64)):
        return _C.asarray(host, device=device)
    return _C.asarray(value, device=device)


def _edge(p: Any, x: Array, axis: int) -> Array:
    """diff's prepend or append: a scalar (or 0-d array) stands for a slice of x's shape with
    length 1 along the axis, as NumPy broadcasts it."""
    p = _as_numpy_would(p, x.device)
    return broadcast_to(p, x.shape[:axis] + (1,) + x.shape[axis + 1:]) if p.ndim == 0 else p


def diff(x: Array, /, *, axis: int = -1, n: int = 1, prepend: Any = None, append: Any = None) -> Array:
    """The n-th differences ``x[i + 1] - x[i]`` along `axis` (for bool, whether they differ),
    after joining `prepend` and `append` to x along that axis (a scalar stands for a slice of
    length 1; a Python float is float64, as in NumPy)."""
    _need_array("diff", x)
    if x.ndim == 0:
        raise ValueError("diff: needs at least 1 dimension, got a 0-d array")
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise ValueError(f"diff: n must be a non-negative int, got {reprlib.repr(n)}")
    a = normalize_axis("diff", axis, x.ndim)
    parts = [x if p is x else _edge(p, x, a) for p in (prepend, x, append) if p is not None]
    y = concat(parts, axis=a) if len(parts) > 1 else x
    lead = (slice(None),) * a
    for _ in range(min(n, y.shape[a])):  # after as many rounds as elements, nothing is left
        hi, lo = y[lead + (slice(1, None),)], y[lead + (slice(None, -1),)]
        y = (hi != lo) if y.dtype == BOOL else hi - lo
    return y if n else y.copy()


# ---------------------------------------------------------------------------------------------
# indexing and searching
# ---------------------------------------------------------------------------------------------

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


def _before(a: Array, b: Array) -> Array:
    """a < b in the order of sort: NaN after every number (b may be float where a is not)."""
    lt = a < b
    return (lt | ((a == a) & (b != b))) if b.dtype.kind == "f" else lt


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
    x2 = _as_numpy_would(x2, x1.device)  # 2.5 into an int x1 compares as 2.5, not 2
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


def argsort(x: Array, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Array:
    """The indices that sort x along `axis` (int64); equal elements keep their order (always
    stable), NaN goes last."""
    _, idx, a = _sort_along("argsort", x, axis, descending)
    return moveaxis(idx, -1, a)


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


def unique_values(x: Array, /) -> Array:
    """The distinct values of x, sorted, as a 1-D array."""
    _, values, starts, _ = _groups(x)
    return values[starts]


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


def unique_inverse(x: Array, /) -> UniqueInverseResult:
    """The distinct values of x, sorted, and for each element of x the index of its value."""
    order, values, starts, mask = _groups(x)
    return UniqueInverseResult(values[starts], _inverse(x, order, mask))


def unique_all(x: Array, /) -> UniqueAllResult:
    """The distinct values of x, sorted; the index of each one's first occurrence in the
    flattened x; the index of each element's value; and how often each value occurs."""
    order, values, starts, mask = _groups(x)
    return UniqueAllResult(values[starts], order[starts], _inverse(x, order, mask), _counts(starts, x.size))
