"""Reductions and statistics (csrc/core/reduce.c): sums, products, means, variances, extremes,
scans and differences; sorting, searching and unique values are the sort family's
(gpudev/_api/sort.py). The core's reductions are declared here, and the module function of each
row of the reduction list with a method (gd.sum, gd.prod) is made from its row; gd.max and gd.min
(PyTorch's and NumPy's forms) are written by hand. Defined here: those two, the array API
standard's reductions and scans, composed of the core's operations on the input's device,
and the softmaxes.

**Scans**: cumulative_sum and cumulative_prod are a Hillis-Steele scan, ``log2(n)`` shifted
sums (n: the length along the axis); no value is read back to the host.

**Softmax**: ``softmax`` and ``log_softmax`` along one axis, numerically stable, on every device.

Both subtract the maximum along the axis before ``exp``, so no row overflows (a row of
``[1000.0, 1000.0]`` gives ``[0.5, 0.5]``, not NaN) and the largest term is exactly
``exp(0) = 1``. A row holding NaN or ``inf`` gives NaN, as PyTorch's and SciPy's do. Integer
and bool arrays are computed in float64, as ``gd.exp`` computes them.

Each records one autograd node, not the five operations it is made of: the rule recomputes
the softmax from the saved input, which keeps the graph small and the tape short.

>>> import gpudev as gd
>>> gd.softmax(gd.array([[0.0, 0.0], [1000.0, 1000.0]]), axis=1).tolist()
[[0.5, 0.5], [0.5, 0.5]]
>>> round(gd.log_softmax(gd.array([0.0, 0.0])).tolist()[0], 6)
-0.693147
>>> gd.cumulative_sum(gd.asarray([3, 1, 2, 1])).tolist(), gd.prod(gd.asarray([3, 1, 2, 1])).item()
([3, 4, 6, 7], 6)
"""

from __future__ import annotations

import builtins
import operator
import reprlib
from typing import Any, Callable

import numpy as np

from .. import _C, autograd
from .._array_api import _dtype
from .._C import Array
from .._stable import softmax_forward
from . import Declaration, _add, declare, declared, public
from .shape import _is_int, _need_array, broadcast_to, concat, moveaxis, normalize_axes, normalize_axis

__all__ = ["as_numpy_would", "count_nonzero", "cumulative_prod", "cumulative_sum", "diff", "log_softmax", "max",
           "mean", "min", "prod", "softmax", "std", "sum", "var"]

BOOL, INT32, INT64 = np.dtype(np.bool_), np.dtype(np.int32), np.dtype(np.int64)

declare("reduce", _C, "all any argmax argmin norm", numpy="all any argmax argmin")

# the core's reductions behind gd.max and gd.min (private: a.max and a.min are gpudev/_array.py's)
_c_max, _c_min = vars(Array)["_max"], vars(Array)["_min"]


def _ambiguous_axis(call: str, name: str, d: Any) -> TypeError:
    return TypeError(f"{call}: NumPy reads the int as an axis and returns values, PyTorch returns "
                     f"(values, indices); write {call.split('(')[0]}(axis={d}) for the values and "
                     f"arg{name}(axis={d}) for the indices")


def _dim_refused(name: str) -> TypeError:
    return TypeError(f"{name}() got an unexpected keyword argument 'dim'; use axis= (and "
                     f"arg{name}(axis=) for PyTorch's indices)")


def _extreme(name: str, c_method: Any, pair: Any, a: Any, other: Any, axis: Any, keepdims: bool,
             dim: Any) -> Array:
    _need_array(name, a)
    if dim is not None:
        raise _dim_refused(name)
    if other is None:
        return c_method(a, axis=axis, keepdims=keepdims)
    if _is_int(other):
        raise _ambiguous_axis(f"gd.{name}(a, {other})", name, other)
    if axis is not None:
        raise TypeError(f"{name}: give a second array or axis=, not both")
    return pair(a, other)


@public("reduce", numpy="max amax", pytorch=True)
def max(a: Array, other: Any = None, *, axis: Any = None, keepdims: bool = False,  # noqa: A001
        dim: Any = None) -> Array:
    """``gd.max(a, axis=None)``: the largest values; ``gd.max(a, b)``: ``gd.maximum(a, b)``.

    ``gd.max(a, 1)`` means an axis in NumPy and (values, indices) in PyTorch, and so does
    ``dim=``: both are refused with the spellings to use.
    """
    return _extreme("max", _c_max, _C.maximum, a, other, axis, keepdims, dim)


@public("reduce", numpy="min amin", pytorch=True)
def min(a: Array, other: Any = None, *, axis: Any = None, keepdims: bool = False,  # noqa: A001
        dim: Any = None) -> Array:
    """``gd.min(a, axis=None)``: the smallest values; ``gd.min(a, b)``: ``gd.minimum(a, b)``."""
    return _extreme("min", _c_min, _C.minimum, a, other, axis, keepdims, dim)


def _accumulator(op: str, x: Array, dtype: Any) -> np.dtype:
    """The result dtype of sum/prod/cumulative_*: `dtype`, or x's with bool and int32 as
    int64 (the default integer, as NumPy and the standard accumulate smaller integers)."""
    if dtype is not None:
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


# gd.<name> for each row of the reduction list (csrc/tables.h) with a method, computing NumPy's
# function of its NUMPY column; a row whose module function is written by hand declares it
# there (gd.max and gd.min, PyTorch's and NumPy's forms, above)
LIST_FUNCTIONS = {row.name: _list_function(row) for row in _C._reductions if row.method}
for _row in _C._reductions:
    if _row.name in LIST_FUNCTIONS and _row.name not in declared():
        _add(Declaration(_row.name, LIST_FUNCTIONS[_row.name], "reduce", _row.numpy))
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


@public("reduce", numpy="mean")
def mean(x: Array, /, *, axis: Any = None, keepdims: bool = False) -> Array:
    """The arithmetic mean over `axis` (every axis by default) of a float array."""
    _need_array("mean", x)
    axes = normalize_axes("mean", axis, x.ndim)
    return x.copy() if not axes else x.mean(axis=axes, keepdims=keepdims)


def _correction(op: str, correction: Any) -> float:
    if isinstance(correction, bool) or not isinstance(correction, (int, float, np.integer, np.floating)):
        raise TypeError(f"{op}: correction must be a number, got {type(correction).__name__}")
    return float(correction)


@public("reduce", numpy="var")
def var(x: Array, /, *, axis: Any = None, correction: float = 0.0, keepdims: bool = False) -> Array:
    """The variance over `axis`, dividing by n - correction."""
    _need_array("var", x)
    correction = _correction("var", correction)
    return x.var(normalize_axes("var", axis, x.ndim), correction=correction, keepdims=keepdims)


@public("reduce", numpy="std")
def std(x: Array, /, *, axis: Any = None, correction: float = 0.0, keepdims: bool = False) -> Array:
    """The standard deviation over `axis`, dividing by n - correction."""
    _need_array("std", x)
    correction = _correction("std", correction)
    return x.std(normalize_axes("std", axis, x.ndim), correction=correction, keepdims=keepdims)


@public("reduce")
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
    return normalize_axis(op, axis, builtins.max(x.ndim, 1))


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


@public("reduce")
def cumulative_sum(x: Array, /, *, axis: int | None = None, dtype: Any = None,
                   include_initial: bool = False) -> Array:
    """The running sums along `axis` (optional for 1-D arrays); ``include_initial=True``
    starts with 0.

    Example:
        >>> gd.cumulative_sum(gd.asarray([1.0, 2.0, 3.0]), include_initial=True).tolist()
        [0.0, 1.0, 3.0, 6.0]
    """
    return _scan("cumulative_sum", _C.Array.__add__, 0, x, axis, dtype, include_initial)


@public("reduce")
def cumulative_prod(x: Array, /, *, axis: int | None = None, dtype: Any = None,
                    include_initial: bool = False) -> Array:
    """The running products along `axis` (optional for 1-D arrays); ``include_initial=True``
    starts with 1."""
    return _scan("cumulative_prod", _C.Array.__mul__, 1, x, axis, dtype, include_initial)


def as_numpy_would(value: Any, device: Any) -> Array:
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
    p = as_numpy_would(p, x.device)
    return broadcast_to(p, x.shape[:axis] + (1,) + x.shape[axis + 1:]) if p.ndim == 0 else p


@public("reduce")
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
    for _ in range(builtins.min(n, y.shape[a])):  # after as many rounds as elements, nothing is left
        hi, lo = y[lead + (slice(1, None),)], y[lead + (slice(None, -1),)]
        y = (hi != lo) if y.dtype == BOOL else hi - lo
    return y if n else y.copy()


# ---------------------------------------------------------------------------------------------
# softmax
# ---------------------------------------------------------------------------------------------

def _check(name: str, x: object, axis: object) -> tuple[Array, int]:
    if not isinstance(x, Array):
        raise TypeError(f"{name}: expected a gpudev Array, got {type(x).__name__}; convert it "
                        f"with gd.asarray(x)")
    try:
        if isinstance(axis, bool):  # True is not axis 1, as in NumPy
            raise TypeError
        ax = operator.index(axis)
    except TypeError:
        raise TypeError(f"{name}: axis must be an int, got {reprlib.repr(axis)} ({type(axis).__name__})") from None
    ndim = builtins.max(x.ndim, 1)  # a 0-d array has the one axis 0 (or -1), as in PyTorch
    if not -ndim <= ax < ndim:
        raise ValueError(f"{name}: axis {ax} is out of bounds for an array of {x.ndim} "
                         f"dimension(s); use an axis in [{-ndim}, {ndim - 1}]")
    if x.dtype.kind != "f":
        x = x.astype(_C.float64)
    return x, ax % ndim if x.ndim else 0


def _apply(name: str, x: object, axis: object, log: bool) -> Array:
    x, ax = _check(name, x, axis)
    recording = x.requires_grad and autograd.is_grad_enabled()
    with autograd.no_grad():
        out = softmax_forward(x, ax, log)
    if recording:
        _C._set_grad_fn(out, autograd._make_node(name, (out.shape, out.dtype, out.device), (x,), ax))
    return out


@public("reduce")
def softmax(x: Array, axis: int = -1) -> Array:
    """exp(x) / exp(x).sum(axis), with the maximum along `axis` subtracted first (stable).

        >>> gd.softmax(gd.array([0.0, 0.0, 0.0])).tolist()  # doctest: +ELLIPSIS
        [0.333..., 0.333..., 0.333...]
    """
    return _apply("softmax", x, axis, log=False)


@public("reduce")
def log_softmax(x: Array, axis: int = -1) -> Array:
    """x - log(exp(x).sum(axis)), with the maximum along `axis` subtracted first (stable).

    Better than ``gd.log(gd.softmax(x))``, which gives -inf where the softmax underflows.

        >>> gd.log_softmax(gd.array([0.0, -1000.0])).tolist()
        [0.0, -1000.0]
    """
    return _apply("log_softmax", x, axis, log=True)
