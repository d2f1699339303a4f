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

import operator
from typing import Any, Callable

import numpy as np

from . import _C, _composite
from ._devices import device_label

__all__ = ["install"]

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
# and the composites of gpudev/_composite.py that NumPy has as ufuncs
_FUNCS.update({np.signbit: _composite.signbit, np.reciprocal: _composite.reciprocal})


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
    # numpy.equal(0.5, a), which a GPU array computes where it lives
    if method == "__call__" and not kwargs:
        res = _ufunc_by_gpudev(ufunc, inputs)
        if res is not NotImplemented:
            return res
    _refuse_gpu(name, (inputs, kwargs))
    _refuse_grad(name, (inputs, kwargs))
    out = kwargs.get("out")
    res = getattr(ufunc, method)(*_to_numpy(inputs), **_to_numpy(kwargs))
    if out is not None:  # NumPy wrote through the views; hand back the arrays it wrote to
        return out[0] if isinstance(out, tuple) and len(out) == 1 else out
    return res


def _reduction(method: str) -> Callable:
    def call(a: Array, axis: Any = None, *more: Any, keepdims: bool = False, **rest: Any) -> Any:
        if more or rest:  # dtype=, out=, initial=, where=: NumPy's
            return NotImplemented
        return getattr(a, method)(axis=axis, keepdims=keepdims)

    return call


def _transpose(a: Array, axes: Any = None) -> Array:
    return a.transpose() if axes is None else a.transpose(axes)


def _reshape(a: Array, shape: Any = None, **rest: Any) -> Any:
    if rest or shape is None:  # order=, copy=, NumPy 2.1's newshape=
        return NotImplemented
    return a.reshape(shape)


def _stacking(fn: Callable) -> Callable:
    def call(arrays: Any, axis: int = 0, *more: Any, **rest: Any) -> Any:
        if more or rest:  # out=, dtype=, casting=: NumPy's
            return NotImplemented
        return fn(arrays, axis=axis)

    return call


def _concatenate(arrays: Any, axis: Any = 0, *more: Any, **rest: Any) -> Any:
    if more or rest:  # out=, dtype=, casting=: NumPy's
        return NotImplemented
    if axis is None:  # NumPy flattens every array first, then joins them end to end
        arrays = [x.ravel() if isinstance(x, Array) else _C.asarray(x).ravel() for x in arrays]
        axis = 0
    return _C.concatenate(arrays, axis=axis)


def _where(condition: Any, *xy: Any, **rest: Any) -> Any:
    # np.where(condition) alone gives indices, and NumPy arrays are NumPy's to combine: NumPy's
    if len(xy) != 2 or rest or any(isinstance(o, np.ndarray) for o in (condition, *xy)):
        return NotImplemented
    return _C.where(condition, *xy)


# NumPy function -> how gpudev computes it; NotImplemented from one means: NumPy's, on views
_FUNCTIONS: dict[Callable, Callable] = {
    np.sum: _reduction("sum"),
    np.mean: _reduction("mean"),
    np.max: _reduction("max"),
    np.min: _reduction("min"),
    np.amax: _reduction("max"),
    np.amin: _reduction("min"),
    np.transpose: _transpose,
    np.reshape: _reshape,
    np.stack: _stacking(_C.stack),
    np.concatenate: _concatenate,
    # selection
    np.where: _where,
    np.argmax: _reduction("argmax"),
    np.argmin: _reduction("argmin"),
    np.round: lambda a, decimals=0, out=None: _C.round(a) if decimals == 0 and out is None else NotImplemented,
}


def array_function(self: Array, func: Callable, types: tuple, args: tuple, kwargs: dict) -> Any:
    """NumPy's function protocol: gpudev's function where it has one, else NumPy on views."""
    if not callable(func) or not isinstance(args, tuple) or not isinstance(kwargs, dict):
        raise TypeError(
            f"__array_function__: expected a NumPy function, a tuple of arguments and a dict of keyword "
            f"arguments, got {type(func).__name__}, {type(args).__name__} and {type(kwargs).__name__}; "
            f"NumPy calls this itself: call the NumPy function instead"
        )
    name = "numpy." + getattr(func, "__name__", type(func).__name__)
    _refuse_gpu(name, (args, kwargs))
    mine = _FUNCTIONS.get(func)
    if mine is not None and all(issubclass(t, (Array, np.ndarray)) for t in types):
        res = mine(*args, **kwargs)
        if res is not NotImplemented:
            return res
    _refuse_grad(name, (args, kwargs))
    return func(*_to_numpy(args), **_to_numpy(kwargs))


def install() -> None:
    """Make gpudev arrays take part in NumPy's dispatch (called once, at import)."""
    Array.__array_ufunc__ = array_ufunc
    Array.__array_function__ = array_function
