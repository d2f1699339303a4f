"""NumPy's dispatch protocols for gpudev arrays: ``__array_ufunc__`` and ``__array_function__``.

NumPy functions and ufuncs that gpudev has run as gpudev operations and return gpudev arrays
(as CuPy does for its arrays); the rest run in NumPy on a zero-copy view of CPU arrays and
return what NumPy returns. GPU arrays are refused with TypeError: NumPy computes on the host,
and copying device memory behind the user's back would hide a transfer.

>>> import numpy as np, gpudev as gd
>>> a = gd.arange(6).reshape(2, 3)
>>> np.sum(a, axis=0)              # gpudev's sum: a gpudev array
Array([3, 5, 7])
>>> type(np.cumsum(a)).__name__   # NumPy's cumsum on a zero-copy view
'ndarray'
"""

from __future__ import annotations

import inspect
import operator
from typing import Any, Callable

import numpy as np

from . import _C
from ._api import _DECLARED, composites, elementwise, numpy_functions  # noqa: F401 (elementwise: the composites')
from ._devices import device_label

__all__ = ["array_function", "array_ufunc"]

Array = _C.Array

# ufunc -> the Array slot that computes it (binary: (forward, reflected); unary: one)
_BINARY: dict[np.ufunc, tuple[Callable, Callable]] = {
    np.add: (Array.__add__, Array.__radd__),
    np.subtract: (Array.__sub__, Array.__rsub__),
    np.multiply: (Array.__mul__, Array.__rmul__),
    np.true_divide: (Array.__truediv__, Array.__rtruediv__),
    np.power: (Array.__pow__, Array.__rpow__),
    np.matmul: (Array.__matmul__, Array.__rmatmul__),
    np.equal: (Array.__eq__, Array.__eq__),
    np.not_equal: (Array.__ne__, Array.__ne__),
    np.less: (Array.__lt__, Array.__gt__),
    np.less_equal: (Array.__le__, Array.__ge__),
    np.greater: (Array.__gt__, Array.__lt__),
    np.greater_equal: (Array.__ge__, Array.__le__),
    np.bitwise_and: (Array.__and__, Array.__rand__),
    np.bitwise_or: (Array.__or__, Array.__ror__),
    np.bitwise_xor: (Array.__xor__, Array.__rxor__),
    np.floor_divide: (Array.__floordiv__, Array.__rfloordiv__),
    np.remainder: (Array.__mod__, Array.__rmod__),  # np.mod is np.remainder
}
# ufunc -> the gpudev function: the operators above and the unary ones here, then every row
# of the op lists (csrc/tables.h) with a module function and a NumPy ufunc
_FUNCS: dict[np.ufunc, Callable] = {np.negative: operator.neg, np.invert: operator.invert}
_FUNCS.update({getattr(np, op.numpy): getattr(_C, op.name) for op in _C._ops
               if op.function and op.numpy and getattr(np, op.numpy) not in _BINARY})
# and the elementwise composites (gpudev/_api/elementwise.py) whose declaration names a NumPy ufunc
_FUNCS.update({getattr(np, d.numpy): d.obj for d in composites()
               if d.numpy and isinstance(getattr(np, d.numpy), np.ufunc)})


def _refuse_gpu(name: str, objs: Any) -> None:
    """TypeError when any gpudev array among objs (nested in lists, tuples, dicts) is on a GPU."""
    for o in _walk(objs):
        if isinstance(o, Array) and o.device.type != "cpu":
            raise TypeError(
                f"{name}: NumPy cannot compute on a gpudev array on {device_label(o.device)}; use gpudev's own "
                f"function, or copy it to the host first with a.cpu() (a.cpu().numpy() for a NumPy array)"
            )


def _refuse_grad(name: str, objs: Any) -> None:
    """RuntimeError when NumPy would compute on an array that requires grad: its result would
    silently carry no gradient."""
    if not _C._is_grad_enabled():
        return
    for o in _walk(objs):
        if isinstance(o, Array) and o.requires_grad:
            raise RuntimeError(
                f"{name}: gpudev has no gradient for this NumPy function and NumPy's result would "
                f"carry none; call it on a.detach() (or inside gd.no_grad()) if no gradient is wanted"
            )


def _walk(objs: Any):
    """Every object in objs, descending into lists, tuples and dict values (with a stack of its
    own, so lists nested thousands deep do not exhaust Python's recursion limit)."""
    stack = [objs]
    while stack:
        o = stack.pop()
        if isinstance(o, (list, tuple)):
            stack.extend(reversed(o))
        elif isinstance(o, dict):
            stack.extend(reversed(list(o.values())))
        else:
            yield o


def _to_numpy(obj: Any) -> Any:
    """obj with every gpudev array (nested in lists, tuples, dicts) replaced by its NumPy view."""
    if isinstance(obj, Array):
        return obj.numpy()
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_numpy(o) for o in obj)
    if isinstance(obj, dict):
        return {k: _to_numpy(v) for k, v in obj.items()}
    return obj


def _ufunc_by_gpudev(ufunc: np.ufunc, inputs: tuple) -> Any:
    """The gpudev operation for ufunc(*inputs), or NotImplemented when gpudev has none."""
    # NumPy scalars reach ufuncs as 0-d arrays (np.int64(2) < a): they are scalars to gpudev
    inputs = tuple(x[()] if isinstance(x, np.ndarray) and x.ndim == 0 else x for x in inputs)
    if ufunc in _BINARY and len(inputs) == 2:
        forward, reflected = _BINARY[ufunc]
        x, y = inputs
        res = forward(x, y) if isinstance(x, Array) else reflected(y, x)
        if res is NotImplemented:
            raise TypeError(f"{ufunc.__name__}: unsupported operand types {type(x).__name__} and {type(y).__name__}")
        return res
    if ufunc in _FUNCS:
        return _FUNCS[ufunc](*inputs)
    return NotImplemented


def array_ufunc(self: Array, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
    """NumPy's ufunc protocol: gpudev's operation where it has one, else NumPy on views."""
    name = f"numpy.{ufunc.__name__}" + ("" if method == "__call__" else f".{method}")
    # gpudev's own operation first, on any device: np.float32(0.5) == a reaches here as
    # numpy.equal(0.5, a), which a GPU array computes where it lives; dtype= (Dask's divide)
    # casts the inputs first, as NumPy computes in that dtype
    dtype = kwargs.get("dtype")
    if method == "__call__" and set(kwargs) <= {"dtype"} and dtype is not None:
        inputs = tuple(x.astype(dtype) if isinstance(x, Array) else x for x in inputs)
    if method == "__call__" and set(kwargs) <= {"dtype"}:
        res = _ufunc_by_gpudev(ufunc, inputs)
        if res is not NotImplemented:
            return res if dtype is None or not isinstance(res, Array) else res.astype(dtype)
    _refuse_gpu(name, (inputs, kwargs))
    _refuse_grad(name, (inputs, kwargs))
    out = kwargs.get("out")
    res = getattr(ufunc, method)(*_to_numpy(inputs), **_to_numpy(kwargs))
    if out is not None:  # NumPy wrote through the views; hand back the arrays it wrote to
        return out[0] if isinstance(out, tuple) and len(out) == 1 else out
    return res


def _into(out: Any, res: Array) -> Any:
    """res, or res written into out= (a gpudev array of res's shape) and out returned."""
    if out is None:
        return res
    if isinstance(out, tuple) and len(out) == 1:
        out = out[0]
    if not isinstance(out, Array):
        return NotImplemented  # NumPy's, into its own array
    if out.shape != res.shape:
        raise ValueError(f"out: expected shape {res.shape}, got {out.shape}")
    out[...] = res
    return out


def _reduction(method: str, params: tuple[str, ...] = ("axis", "dtype", "out", "keepdims")) -> Callable:
    """NumPy's reduction `method` with its own positional order (`params` after the array):
    gpudev's, with dtype= (the input cast first, so the sum runs in that dtype), keepdims= and
    out= (a gpudev array); initial=, where= and others are NumPy's (on CPU arrays)."""
    def call(a: Array, *args: Any, **kwargs: Any) -> Any:
        if len(args) > len(params):
            return NotImplemented
        kw = dict(zip(params, args))
        if set(kw) & set(kwargs):
            return NotImplemented  # a parameter given twice: NumPy's error
        kw.update(kwargs)
        dtype, out = kw.pop("dtype", None), kw.pop("out", None)
        axis, keepdims = kw.pop("axis", None), bool(kw.pop("keepdims", False))
        ddof = kw.pop("ddof", None)
        if kw:
            return NotImplemented
        x = a if dtype is None else a.astype(dtype)
        extra = {} if ddof is None else {"correction": ddof}
        if method in ("var", "std"):  # functions of gpudev/_api/reduce.py
            from ._api import reduce

            res = getattr(reduce, method)(x, axis=axis, keepdims=keepdims, **extra)
        else:
            res = getattr(x, method)(axis=axis, keepdims=keepdims)
        return _into(out, res)

    return call


def _transpose(a: Array, axes: Any = None) -> Array:
    return a.transpose() if axes is None else a.transpose(axes)


def _reshape(a: Array, shape: Any = None, **rest: Any) -> Any:
    if rest or shape is None:  # order=, copy=, NumPy 2.1's newshape=
        return NotImplemented
    return a.reshape(shape)


def _joined(arrays: Any, dtype: Any) -> Any:
    return arrays if dtype is None else [_C.asarray(x).astype(dtype) for x in arrays]


def _stacking(fn: Callable) -> Callable:
    def call(arrays: Any, axis: int = 0, out: Any = None, *more: Any, dtype: Any = None, **rest: Any) -> Any:
        if more or rest:  # casting=: NumPy's
            return NotImplemented
        return _into(out, fn(_joined(arrays, dtype), axis=axis))

    return call


def _concatenate(arrays: Any, axis: Any = 0, out: Any = None, *more: Any, dtype: Any = None, **rest: Any) -> Any:
    if more or rest:  # casting=: NumPy's
        return NotImplemented
    arrays = _joined(arrays, dtype)
    if axis is None:  # NumPy flattens every array first, then joins them end to end
        arrays = [x.ravel() if isinstance(x, Array) else _C.asarray(x).ravel() for x in arrays]
        axis = 0
    return _into(out, _C.concatenate(arrays, axis=axis))


def _broadcast_to(a: Array, shape: Any) -> Array:
    from ._api.shape import broadcast_to

    return broadcast_to(a, tuple(shape) if not isinstance(shape, int) else (shape,))


def _tensordot(a: Any, b: Any, axes: Any = 2) -> Any:
    from .linalg import tensordot

    if not (isinstance(a, Array) and isinstance(b, Array)):
        return NotImplemented
    return tensordot(a, b, axes=axes)


# NumPy's creation functions called with like=a gpudev array (Dask makes its chunks' metadata
# so): gpudev's, on that array's device, with NumPy's default dtype (float64)
def _created(like: Array, func: Callable, args: tuple, kwargs: dict) -> Any:
    kw = dict(kwargs)
    dtype = kw.pop("dtype", None)
    if kw.pop("device", None) not in (None, "cpu"):  # NumPy's own device= names only the host
        return NotImplemented
    if kw.pop("order", "C") not in ("C", "K", "A") or kw:
        return NotImplemented
    if func is np.arange:  # arange(start, stop, step, dtype); NumPy's dtype: int64 or float64
        if len(args) == 4 and dtype is None:
            *args, dtype = args
        args = tuple(x for x in args if x is not None)
        dt = dtype if dtype is not None else np.result_type(*(np.asarray(x) for x in args))
        return _C.arange(*args, dtype=dt, device=like.device)
    shape, *rest = args
    if func is np.full:
        (fill,) = rest
        dt = dtype if dtype is not None else np.asarray(fill).dtype
        return _C.full(shape, fill, dtype=dt, device=like.device)
    if rest:
        return NotImplemented
    return _CREATE[func](shape, dtype=np.float64 if dtype is None else dtype, device=like.device)


def _like(func: Callable) -> Callable:
    """np.empty_like(a, dtype=None, order='K', subok=True, shape=None) and its kin."""
    def call(a: Array, *args: Any, dtype: Any = None, order: str = "K", subok: bool = True, shape: Any = None,
             **rest: Any) -> Any:
        fill = args[0] if func is np.full_like and args else rest.pop("fill_value", None)
        extra = args[1:] if func is np.full_like else args
        if extra or rest or order not in ("C", "K", "A"):
            return NotImplemented
        dt = a.dtype if dtype is None else dtype
        shp = a.shape if shape is None else shape
        if func is np.full_like:
            return _C.full(shp, fill, dtype=dt, device=a.device)
        return _CREATE[_LIKE_OF[func]](shp, dtype=dt, device=a.device)

    return call


_CREATE: dict[Callable, Callable] = {np.ones: _C.ones, np.zeros: _C.zeros, np.empty: _C.empty}
_LIKE_OF = {np.ones_like: np.ones, np.zeros_like: np.zeros, np.empty_like: np.empty}


def _where(condition: Any, *xy: Any, **rest: Any) -> Any:
    # np.where(condition) alone gives indices, and NumPy arrays are NumPy's to combine: NumPy's
    if len(xy) != 2 or rest or any(isinstance(o, np.ndarray) for o in (condition, *xy)):
        return NotImplemented
    return _C.where(condition, *xy)


# how gpudev computes the NumPy functions whose arguments NumPy spells its own way, by NumPy's
# name; NotImplemented from one means: NumPy's, on views
# (the reduction list's rows come from _C._reductions: _reduction_adapters below)
_NO_DTYPE = ("axis", "out", "keepdims")
_ADAPTERS: dict[str, Callable] = {
    "mean": _reduction("mean"),
    "any": _reduction("any", _NO_DTYPE),
    "all": _reduction("all", _NO_DTYPE),
    "var": _reduction("var", ("axis", "dtype", "out", "ddof", "keepdims")),
    "std": _reduction("std", ("axis", "dtype", "out", "ddof", "keepdims")),
    "tensordot": _tensordot,
    "broadcast_to": lambda a, shape, subok=False: _broadcast_to(a, shape) if not subok else NotImplemented,
    "ones_like": _like(np.ones_like), "zeros_like": _like(np.zeros_like), "empty_like": _like(np.empty_like),
    "full_like": _like(np.full_like),
    "transpose": _transpose,
    "reshape": _reshape,
    "stack": _stacking(_C.stack),
    "concatenate": _concatenate,
    # selection
    "where": _where,
    "argmax": _reduction("argmax", _NO_DTYPE),
    "argmin": _reduction("argmin", _NO_DTYPE),
    "round": lambda a, decimals=0, out=None: _C.round(a) if decimals == 0 and out is None else NotImplemented,
}


def _direct(fn: Callable) -> Callable:
    """A declared NumPy function with no adapter: gpudev's function, called with NumPy's
    arguments where they fit its signature (else NumPy's own, on views)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):  # a callable without a signature: let it judge its arguments
        sig = None

    def call(*args: Any, **kwargs: Any) -> Any:
        if sig is not None:
            try:
                sig.bind(*args, **kwargs)
            except TypeError:
                return NotImplemented
        return fn(*args, **kwargs)

    return call


# NumPy function -> how gpudev computes it: every NumPy function that a declaration names
# (gpudev/_api) and that is no ufunc, built when NumPy first dispatches (the declarations are
# complete then) and again if declarations were added since
_FUNCTIONS: dict[Callable, Callable] = {}
_FUNCTIONS_FROM = -1  # the number of declarations _FUNCTIONS was built from


def _reduction_adapters(named: dict[str, Any]) -> dict[str, Callable]:
    """NumPy's functions of the reduction list's rows (GD_REDUCTIONS in csrc/tables.h, as
    _C._reductions), by the NumPy names that the declaration of gd.<row> gives (np.max and
    np.amax for gd.max), with NumPy's positional order: dtype= where the row takes one. A new
    row needs no line here."""
    adapters = {}
    for row in _C._reductions:
        params = ("axis", "dtype", "out", "keepdims") if row.dtype else _NO_DTYPE
        for numpy_name, decl in named.items():
            if row.method and decl.name == row.name:
                adapters[numpy_name] = _reduction(row.name, params)
    return adapters


def _functions() -> dict[Callable, Callable]:
    global _FUNCTIONS, _FUNCTIONS_FROM
    if _FUNCTIONS_FROM == len(_DECLARED):  # the live table, not a copy: this runs on every dispatch
        return _FUNCTIONS
    named = numpy_functions()
    adapters = {**_reduction_adapters(named), **_ADAPTERS}
    stray = set(adapters) - set(named)
    if stray:
        raise RuntimeError(f"gpudev: adapters for {sorted(stray)}, which no declaration names (numpy=...)")
    table: dict[Callable, Callable] = {}
    for numpy_name, decl in named.items():
        func = getattr(np, numpy_name)
        if not isinstance(func, np.ufunc):  # ufuncs: _FUNCS and _BINARY
            table[func] = adapters[numpy_name] if numpy_name in adapters else _direct(decl.obj)
    _FUNCTIONS, _FUNCTIONS_FROM = table, len(_DECLARED)
    return table


def array_function(self: Array, func: Callable, types: tuple, args: tuple, kwargs: dict) -> Any:
    """NumPy's function protocol: gpudev's function where it has one, else NumPy on views."""
    if not callable(func) or not isinstance(args, tuple) or not isinstance(kwargs, dict):
        raise TypeError(
            f"__array_function__: expected a NumPy function, a tuple of arguments and a dict of keyword "
            f"arguments, got {type(func).__name__}, {type(args).__name__} and {type(kwargs).__name__}; "
            f"NumPy calls this itself: call the NumPy function instead"
        )
    name = "numpy." + getattr(func, "__name__", type(func).__name__)
    # gpudev's own function first, on any device; only NumPy's fallback is refused on a GPU
    mine = _functions().get(func)
    if mine is not None and all(issubclass(t, (Array, np.ndarray)) for t in types):
        res = mine(*args, **kwargs)
        if res is not NotImplemented:
            return res
    if func in _CREATE or func in (np.full, np.arange):  # like=self
        res = _created(self, func, args, kwargs)
        if res is not NotImplemented:
            return res
    _refuse_gpu(name, (args, kwargs))
    _refuse_grad(name, (args, kwargs))
    return func(*_to_numpy(args), **_to_numpy(kwargs))
