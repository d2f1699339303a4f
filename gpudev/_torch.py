"""PyTorch's names for gpudev operations, written once: Array methods and module functions.

Each name here is an alias or a short composite of operations the core already has, so it
runs on every device and records its gradient through them. Where PyTorch and NumPy (or the
array API standard) give one call form two meanings, this module decides it as the README's
table of conflicts says: the standard wins where it defines the meaning, a form that is
ambiguous raises an error naming the spelling to use, and PyTorch's meaning is taken where
nobody else defines one.

>>> import gpudev as gd
>>> x = gd.zeros((2, 3)).add_(1).mul_(2)
>>> x.numel(), x.dim(), x.t().shape, x.float().dtype
(6, 2, (3, 2), dtype('float32'))
"""

from __future__ import annotations

import builtins
import math
import numbers
import reprlib
from typing import Any

import numpy as np

from . import _C
from ._fills import normal_, uniform_

__all__ = ["bmm", "cat", "from_numpy", "install", "max", "min", "mm", "normal", "randint"]

Array = _C.Array
# the core's methods that the PyTorch-aware ones below replace on Array, and call
REPLACED = {name: vars(Array)[name] for name in ("to", "transpose", "flatten", "max", "min")}
_c_to, _c_transpose, _c_flatten = REPLACED["to"], REPLACED["transpose"], REPLACED["flatten"]
_c_max, _c_min = REPLACED["max"], REPLACED["min"]
_c_size = Array.size  # the C getter: the element count


def _need_array(op: str, x: Any) -> Array:
    if not isinstance(x, Array):
        raise TypeError(f"{op}: expected a gpudev Array, got {type(x).__name__}; convert it "
                        f"first, e.g. gd.asarray(x)")
    return x


def _axis(op: str, a: Array, d: Any, extra: int = 0) -> int:
    """d as an axis in [0, a.ndim + extra), read as PyTorch reads negative dims."""
    n = builtins.max(a.ndim + extra, 1)  # a 0-d array takes dim 0 and -1, as in PyTorch
    if not isinstance(d, numbers.Integral) or isinstance(d, bool):
        raise TypeError(f"{op}: dim must be an int, got {type(d).__name__}")
    if not -n <= d < n:
        raise IndexError(f"{op}: dim {d} is out of range for an array of {a.ndim} dimension(s); "
                         f"use a dim in [{-n}, {n - 1}]")
    return int(d) % n


def _dims(sizes: tuple[Any, ...], op: str = "shape") -> tuple[int, ...]:
    """PyTorch's f(2, 3) or f((2, 3)) as one tuple of ints."""
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = tuple(sizes[0])
    for s in sizes:
        if not _is_int(s):
            raise TypeError(f"{op}: sizes must be ints, got {reprlib.repr(s)}")
    return tuple(int(s) for s in sizes)


# ---------------------------------------------------------------------------------------------
# in-place methods: each returns the array itself, as PyTorch's trailing-underscore methods do
# ---------------------------------------------------------------------------------------------

def zero_(self: Array) -> Array:
    """Set every element to 0 in place; returns self. ``x.grad.zero_()``"""
    self[...] = 0
    return self


def fill_(self: Array, value: Any) -> Array:
    """Set every element to `value` in place; returns self. ``x.fill_(7)``"""
    self[...] = value
    return self


def scaled_add_(y: Array, beta: Any, x: Any, alpha: Any) -> Array:
    """y = beta * y + alpha * x in place; returns y. One pass with no temporary (the backends'
    axpby) where the core can take it: float arrays of one dtype, shape and device, both
    C-contiguous, and nothing for autograd to record; else the two operations written out
    (y *= beta; y += alpha * x), which give the same bits. The optimizers' steps use it."""
    if _C._axpby(y, beta, x, alpha) is NotImplemented:
        # alpha * x is read before y changes: x may overlap y (a view of it)
        scaled = x if alpha == 1 and beta == 1 else alpha * x
        if beta != 1:
            y *= beta
        y += scaled
    return y


def add_(self: Array, other: Any, alpha: Any = 1) -> Array:
    """self += alpha * other; returns self."""
    if alpha == 1:
        self += other
        return self
    return scaled_add_(self, 1.0, other, alpha)


def sub_(self: Array, other: Any, alpha: Any = 1) -> Array:
    """self -= alpha * other; returns self."""
    if alpha == 1:
        self -= other
        return self
    return scaled_add_(self, 1.0, other, -alpha)


def mul_(self: Array, other: Any) -> Array:
    """self *= other; returns self."""
    self *= other
    return self


def div_(self: Array, other: Any) -> Array:
    """self /= other (true division, so only float arrays); returns self."""
    self /= other
    return self


def clamp_(self: Array, min: Any = None, max: Any = None) -> Array:  # noqa: A002 (PyTorch's names)
    """self limited to [min, max] in place; returns self."""
    self[...] = self.clamp(min, max)
    return self


def copy_(self: Array, src: Any) -> Array:
    """Copy src's values into self (broadcast and cast to self's shape and dtype); returns self.

    As in PyTorch, src may live on another device: copying it here is what was asked for.
    """
    if isinstance(src, Array) and src.device != self.device:
        src = src.to(self.device)
    self[...] = src
    return self


# ---------------------------------------------------------------------------------------------
# dtypes
# ---------------------------------------------------------------------------------------------

def _float(self: Array) -> Array:
    """As float32 (PyTorch's ``x.float()``); self when it is float32 already."""
    return self.astype(_C.float32, copy=False)


def _double(self: Array) -> Array:
    """As float64; self when it is float64 already."""
    return self.astype(_C.float64, copy=False)


def _long(self: Array) -> Array:
    """As int64; self when it is int64 already."""
    return self.astype(_C.int64, copy=False)


def _int(self: Array) -> Array:
    """As int32 (PyTorch's ``x.int()``); self when it is int32 already."""
    return self.astype(_C.int32, copy=False)


def _bool(self: Array) -> Array:
    """As bool (nonzero is True); self when it is bool already."""
    return self.astype(_C.bool, copy=False)


def _type(self: Array, dtype: Any = None) -> Any:
    """``x.type(dtype)``: x as `dtype`; ``x.type()``: the dtype's name, e.g. 'gpudev.float32'."""
    if dtype is None:
        return f"gpudev.{self.dtype}"
    return self.astype(dtype, copy=False)


def _is_dtype(x: Any) -> bool:
    """Whether x names a dtype (a.to(x) casts) rather than a device (a.to(x) moves)."""
    if x is None or isinstance(x, (str, _C.Device, bool, numbers.Number, list, tuple, dict)):
        return False
    try:
        np.dtype(x)
    except Exception:  # NumPy raises TypeError, ValueError or worse for things far from dtypes
        return False
    return True


def _to(self: Array, *args: Any, **kwargs: Any) -> Array:
    """a.to(device), a.to(dtype) or a.to(device, dtype): a copy on `device` and/or as `dtype`.

    Returns a itself when nothing changes. ``copy=True`` always copies. ``non_blocking=True``
    returns before a copy from a GPU to the CPU (into pinned memory) or from pinned memory to a
    GPU ends; reading or writing the host side waits for it first.

    Example:
        >>> gd.ones(2).to(gd.float64).dtype
        dtype('float64')
    """
    device, dtype = kwargs.pop("device", None), kwargs.pop("dtype", None)
    copy, non_blocking = kwargs.pop("copy", False), kwargs.pop("non_blocking", False)
    if kwargs:
        raise TypeError(f"to() got an unexpected keyword argument {reprlib.repr(next(iter(kwargs)))}; it takes "
                        f"device, dtype, copy and non_blocking")
    if not args and device is None and dtype is None:
        return _c_to(self)  # the core's usage error: to() needs a device (or here a dtype)
    for arg in args:
        if dtype is None and _is_dtype(arg):
            dtype = arg
        elif device is None:
            device = arg  # or what the core's to() explains is not a device
        else:
            raise TypeError(f"to: cannot read {reprlib.repr(arg)} as a device or a dtype; use e.g. "
                            f"a.to('cuda:0'), a.to(gd.float64) or a.to('cpu', gd.float64)")
    out = self if device is None else _c_to(self, device, copy=bool(copy) and dtype is None,
                                            non_blocking=non_blocking)
    if dtype is not None:
        out = out.astype(dtype, copy=bool(copy) and out is self)
    elif copy and out is self:
        out = self.copy()
    return out


# ---------------------------------------------------------------------------------------------
# shapes
# ---------------------------------------------------------------------------------------------

def _t(self: Array) -> Array:
    """The transpose of a 2-D array (a 0-D or 1-D array as it is), PyTorch's ``x.t()``."""
    if self.ndim > 2:
        raise ValueError(f"t: expects an array of at most 2 dimensions, got shape {self.shape}; "
                         f"use x.transpose(i, j), x.mT or x.permute(...)")
    return self.T if self.ndim == 2 else self


def _numel(self: Array) -> int:
    """The number of elements (``x.size``)."""
    return _c_size.__get__(self)


def _dim(self: Array) -> int:
    """The number of dimensions (``x.ndim``)."""
    return self.ndim


def _clone(self: Array) -> Array:
    """A copy with its own memory, recorded by autograd (``x.copy()``)."""
    return self.copy()


def _squeeze(self: Array, dim: Any = None) -> Array:
    """Without the axes of length 1 (or only `dim`, which stays when its length is not 1)."""
    if dim is None:
        return self.reshape(tuple(n for n in self.shape if n != 1))
    axes = dim if isinstance(dim, (tuple, list)) else (dim,)
    drop = {_axis("squeeze", self, d) for d in axes}
    return self.reshape(tuple(n for k, n in enumerate(self.shape) if k not in drop or n != 1))


def _unsqueeze(self: Array, dim: int) -> Array:
    """With a new axis of length 1 at `dim` (a view)."""
    k = _axis("unsqueeze", self, dim, extra=1)
    return self.reshape(self.shape[:k] + (1,) + self.shape[k:])


def _view(self: Array, *shape: Any) -> Array:
    """The same memory seen with another shape; raises where only a copy could do it.

    A contiguous array can be viewed with any shape of its size; for others use reshape.
    """
    if not self.is_contiguous():
        raise ValueError(f"view: the array of shape {self.shape} and strides {self.strides} is "
                         f"not contiguous, so it cannot be viewed as {reprlib.repr(shape)}; use "
                         f"x.reshape(...) (which copies when it must) or x.contiguous().view(...)")
    return self.reshape(_dims(shape, "view"))


def _expand(self: Array, *sizes: Any) -> Array:
    """self broadcast to `sizes` (-1 keeps a dimension), as PyTorch's expand.

    The result holds its own copy of the values (the core has no stride-0 views of length
    above 1): writing into it does not change self.
    """
    sizes = _dims(sizes, "expand")
    if len(sizes) < self.ndim:
        raise ValueError(f"expand: {len(sizes)} sizes {sizes} for an array of {self.ndim} "
                         f"dimensions {self.shape}; give at least {self.ndim}")
    lead = len(sizes) - self.ndim
    shape = tuple(n if (s == -1 and k >= lead) else s for k, (s, n) in
                  enumerate(zip(sizes, (1,) * lead + self.shape)))
    for k, (s, n) in enumerate(zip(shape, (1,) * lead + self.shape)):
        if s < 0 or (n != 1 and s != n):
            raise ValueError(f"expand: the size {sizes[k]} at dim {k} does not match {n}; only "
                             f"dimensions of length 1 expand (shape {self.shape} to {sizes})")
    base = _C.zeros(shape, dtype=self.dtype, device=self.device)
    return (base | self) if self.dtype == np.dtype(bool) else base + self


def _repeat(self: Array, *sizes: Any) -> Array:
    """PyTorch's ``x.repeat(2, 3)``: the array tiled `sizes` times along each dimension."""
    reps = _dims(sizes, "repeat")
    if len(reps) < self.ndim:
        raise ValueError(f"repeat: {len(reps)} repeat counts {reps} for an array of {self.ndim} "
                         f"dimensions; give at least {self.ndim}")
    shape = (1,) * (len(reps) - self.ndim) + self.shape
    # (r0, n0, r1, n1, ...): a new axis in front of each one, expanded, then merged back
    grid = self.reshape(tuple(v for n in shape for v in (1, n)))
    tiled = _expand(grid, tuple(v for r, n in zip(reps, shape) for v in (r, n)))
    return tiled.reshape(tuple(r * n for r, n in zip(reps, shape)))


def _flatten(self: Array, start_dim: Any = 0, end_dim: int = -1) -> Array:
    """The axes start_dim..end_dim merged into one (all of them by default), as a copy.

    ``x.flatten()`` is NumPy's and PyTorch's alike; ``x.flatten(1)`` is PyTorch's (NumPy's
    only argument is the order, of which gpudev has 'C').
    """
    if isinstance(start_dim, str):
        if start_dim != "C":
            raise ValueError(f"flatten: order {reprlib.repr(start_dim)} is not supported; gpudev arrays "
                             f"flatten in C order")
        return _c_flatten(self)
    if self.ndim == 0:
        return self.reshape(1)
    lo, hi = _axis("flatten", self, start_dim), _axis("flatten", self, end_dim)
    if lo > hi:
        raise ValueError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim}")
    merged = math.prod(self.shape[lo:hi + 1])
    return self.reshape(self.shape[:lo] + (merged,) + self.shape[hi + 1:]).copy()


def _transpose(self: Array, *axes: Any) -> Array:
    """NumPy's ``x.transpose(axes)`` and PyTorch's ``x.transpose(i, j)`` where they agree.

    Two ints swap two axes (PyTorch), except on a 2-D array where NumPy reads (0, 1) as the
    order it has: that form is refused with the spellings that say which is meant.
    """
    if len(axes) == 2 and all(_is_int(d) for d in axes):
        if self.ndim != 2:
            return self.swapaxes(*axes)  # NumPy would refuse two axes here: no conflict
        if all(-2 <= d < 2 for d in axes) and axes[0] % 2 < axes[1] % 2:
            raise ValueError(f"transpose{tuple(axes)} on a 2-D array means 'keep the order' in "
                             f"NumPy but 'swap' in PyTorch; write x.T or x.swapaxes(0, 1) to swap, "
                             f"or leave x as it is")
    return _c_transpose(self, *axes)  # (1, 0) swaps in both; bad axes get the core's error


class _Size(int):
    """``a.size``: the element count (an int, as the array API standard defines it).

    Calling it as PyTorch does raises a TypeError naming ``a.shape``: ``a.size()`` would
    otherwise have to return something other than what ``a.size`` is.
    """

    def __call__(self, *args: Any) -> Any:
        raise TypeError(f"size is the element count, an int ({int(self)}), as the array API "
                        f"defines it; for PyTorch's x.size() use x.shape, and x.shape[d] for "
                        f"x.size(d)")


def _size(self: Array) -> int:
    return _Size(_c_size.__get__(self))


def _correction(op: str, correction: Any, unbiased: Any) -> float:
    if unbiased is not None:
        if correction is not None:
            raise TypeError(f"{op}: give correction= or unbiased=, not both")
        return 1.0 if unbiased else 0.0
    if correction is None:
        return 0.0
    if not isinstance(correction, (int, float, np.integer, np.floating)):  # float("...") would quote it all
        raise TypeError(f"{op}: correction must be a number, got {type(correction).__name__}")
    return float(correction)


def _var(self: Array, axis: Any = None, *, correction: Any = None, keepdims: bool = False,
         unbiased: Any = None) -> Array:
    """The variance, dividing by n - correction (0 by default, as the array API and NumPy).

    PyTorch's default divides by n - 1: write ``correction=1`` (or ``unbiased=True``).
    """
    c = _correction("var", correction, unbiased)
    n = _numel(self) if axis is None else math.prod(
        self.shape[a] for a in ((axis,) if isinstance(axis, int) else axis))
    centered = self - self.mean(axis=axis, keepdims=True)
    total = (centered * centered).sum(axis=axis, keepdims=keepdims)
    return total / (n - c) if n - c > 0 else total * math.nan


def _std(self: Array, axis: Any = None, *, correction: Any = None, keepdims: bool = False,
         unbiased: Any = None) -> Array:
    """The standard deviation, dividing by n - correction (0 by default; see var)."""
    return _C.sqrt(_var(self, axis, correction=correction, keepdims=keepdims, unbiased=unbiased))


def _abs(self: Array) -> Array:
    """|x| elementwise (``gd.abs``)."""
    return _C.abs(self)


def _pow(self: Array, exponent: Any) -> Array:
    """self ** exponent (``gd.pow``)."""
    return _C.pow(self, exponent)


# ---------------------------------------------------------------------------------------------
# module functions
# ---------------------------------------------------------------------------------------------

def _ambiguous_axis(call: str, name: str, d: Any) -> TypeError:
    return TypeError(f"{call}: NumPy reads the int as an axis and returns values, PyTorch returns "
                     f"(values, indices); write {call.split('(')[0]}(axis={d}) for the values and "
                     f"arg{name}(axis={d}) for the indices")


def _dim_refused(name: str) -> TypeError:
    return TypeError(f"{name}() got an unexpected keyword argument 'dim'; use axis= (and "
                     f"arg{name}(axis=) for PyTorch's indices)")


def _is_int(x: Any) -> bool:
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


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


def max(a: Array, other: Any = None, *, axis: Any = None, keepdims: bool = False,  # noqa: A001
        dim: Any = None) -> Array:
    """``gd.max(a, axis=None)``: the largest values; ``gd.max(a, b)``: ``gd.maximum(a, b)``.

    ``gd.max(a, 1)`` means an axis in NumPy and (values, indices) in PyTorch, and so does
    ``dim=``: both are refused with the spellings to use.
    """
    return _extreme("max", _c_max, _C.maximum, a, other, axis, keepdims, dim)


def min(a: Array, other: Any = None, *, axis: Any = None, keepdims: bool = False,  # noqa: A001
        dim: Any = None) -> Array:
    """``gd.min(a, axis=None)``: the smallest values; ``gd.min(a, b)``: ``gd.minimum(a, b)``."""
    return _extreme("min", _c_min, _C.minimum, a, other, axis, keepdims, dim)


def _extreme_method(name: str, c_method: Any) -> Any:
    def method(self: Array, *args: Any, **kwargs: Any) -> Array:
        if "dim" in kwargs:
            raise _dim_refused(name)
        if args and _is_int(args[0]) and "axis" not in kwargs:
            raise _ambiguous_axis(f"a.{name}({args[0]})", name, args[0])
        return c_method(self, *args, **kwargs)

    method.__doc__ = (f"a.{name}(axis=None, keepdims=False): the {'largest' if name == 'max' else 'smallest'} "
                      f"values, NumPy's and the array API's; a.{name}(1) is refused (PyTorch reads it as "
                      f"(values, indices)): write a.{name}(axis=1).")
    return method


def cat(tensors: Any, dim: int = 0, *, axis: Any = None) -> Array:
    """PyTorch's ``cat(tensors, dim=0)``: the arrays joined along an existing axis.

    An alias of ``gd.concatenate`` with PyTorch's keyword.
    """
    if axis is not None and dim != 0:
        raise TypeError("cat: give dim= or axis=, not both")
    return _C.concatenate(tensors, axis=dim if axis is None else axis)


def _operands(op: str, a: Any, b: Any, form: str, fix: str) -> None:
    """mm's and bmm's check: both operands are Arrays of the one number of dimensions `form` names."""
    for what, x in (("first", a), ("second", b)):
        if _need_array(op, x).ndim != int(form[0]):
            raise ValueError(f"{op}: the {what} operand must be {form}, got shape {x.shape}; {fix}")


def bmm(a: Array, b: Array) -> Array:
    """Batched product of (B, n, k) and (B, k, m) arrays: (B, n, m), as PyTorch's bmm."""
    _operands("bmm", a, b, "3-D (batch, rows, cols)", "use gd.matmul for other shapes")
    if a.shape[0] != b.shape[0]:
        raise ValueError(f"bmm: batch sizes differ, {a.shape[0]} and {b.shape[0]} (shapes "
                         f"{a.shape} and {b.shape})")
    return _C.matmul(a, b)


def mm(input: Array, mat2: Array) -> Array:  # noqa: A002  (PyTorch's parameter names)
    """The product of a (n, k) and a (k, m) array: (n, m), as PyTorch's ``mm`` (2-D only; for
    other shapes ``gd.matmul`` or ``@``). Also the method ``a.mm(b)``.

    Example:
        >>> gd.mm(gd.ones((2, 3)), gd.ones((3, 4))).shape
        (2, 4)
    """
    _operands("mm", input, mat2, "2-D (a matrix)",
              "use gd.matmul (or @) for vectors and batches, gd.bmm for (B, n, k) batches")
    if input.shape[1] != mat2.shape[0]:
        raise ValueError(f"mm: shapes {input.shape} and {mat2.shape} cannot be multiplied "
                         f"({input.shape[1]} columns against {mat2.shape[0]} rows)")
    return _C.matmul(input, mat2)


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


def from_numpy(a: np.ndarray) -> Array:
    """A CPU Array of `a`'s values (PyTorch's from_numpy). A copy: gpudev owns its memory."""
    if not isinstance(a, np.ndarray):
        raise TypeError(f"from_numpy: expected a numpy.ndarray, got {type(a).__name__}")
    return _C.array(a)


# ---------------------------------------------------------------------------------------------
# installing the methods
# ---------------------------------------------------------------------------------------------

_METHODS = {
    "zero_": zero_, "fill_": fill_, "normal_": normal_, "uniform_": uniform_, "add_": add_,
    "sub_": sub_, "mul_": mul_, "div_": div_, "clamp_": clamp_, "copy_": copy_,
    "float": _float, "double": _double, "long": _long, "int": _int, "bool": _bool, "type": _type,
    "to": _to, "t": _t, "numel": _numel, "dim": _dim, "clone": _clone, "squeeze": _squeeze,
    "unsqueeze": _unsqueeze, "view": _view, "expand": _expand, "repeat": _repeat,
    "flatten": _flatten, "transpose": _transpose, "var": _var, "std": _std, "abs": _abs, "pow": _pow,
    "max": _extreme_method("max", _c_max), "min": _extreme_method("min", _c_min), "mm": mm,
}


def install() -> None:
    """Set the methods above on gd.Array (once, at import), and ``size`` as a _Size."""
    for name, fn in _METHODS.items():
        fn.__name__ = fn.__qualname__ = name
        setattr(Array, name, fn)
    Array.size = property(_size, doc=_Size.__doc__)
