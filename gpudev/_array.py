"""The Array type's members written in Python, all of them, in one class body (as PyTorch's
torch/_tensor.py holds the Python methods of its Tensor).

gd.Array is made in C (csrc/core/array_type.c: attributes, operators, the method table; the op
rows and autograd add theirs). Every member that Python adds is defined or named here, in
``ArrayMethods``, and ``install()`` sets them on the type once, at import, refusing any name the
type already has: no member is replaced, so what a reader finds in the C table is what runs. A
Python method that wraps a C one calls it under a private name (``_to``, ``_max``, ``_min``,
``_flatten``, ``_transpose``, ``_size``); tests/test_array_members.py checks that every member
has exactly one home.

Where PyTorch and NumPy (or the array API standard) give one call form two meanings, the methods
decide it as the table of conflicts in docs/guides/pytorch.md says: the standard wins where it defines the
meaning, an ambiguous form raises an error naming the spelling to use, and PyTorch's meaning is
taken where nobody else defines one.

>>> import gpudev as gd
>>> x = gd.zeros((2, 3)).add_(1).mul_(2)
>>> x.numel(), x.dim(), x.t().shape, x.float().dtype
(6, 2, (3, 2), dtype('float32'))
"""

from __future__ import annotations

import math
import reprlib
from typing import Any

import numpy as np

from . import _C
from ._api.elementwise import _limit, clamp
from ._fills import normal_, uniform_
from ._pickle import _reduce_ex
from ._protocols import array_function, array_ufunc
from ._api.linalg import mm
from ._api.reduce import _ambiguous_axis, _dim_refused
from ._api.shape import _is_int
from ._torch import _axis, _dims, _is_dtype, scaled_add_

__all__ = ["ArrayMethods", "install", "members"]

Array = _C.Array


class _Size(int):
    """``a.size``: the element count (an int, as the array API standard defines it).

    Calling it as PyTorch does raises a TypeError naming ``a.shape``: ``a.size()`` would
    otherwise have to return something other than what ``a.size`` is.
    """

    def __call__(self, *args: Any) -> Any:
        raise TypeError(f"size is the element count, an int ({int(self)}), as the array API "
                        f"defines it; for PyTorch's x.size() use x.shape, and x.shape[d] for "
                        f"x.size(d)")


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


def _extreme_method(name: str) -> Any:
    """a.max / a.min: the core's reduction (Array._max, Array._min), with PyTorch's forms refused."""

    c_method = vars(Array)[f"_{name}"]

    def method(self: Array, *args: Any, **kwargs: Any) -> Array:
        if "dim" in kwargs:
            raise _dim_refused(name)
        if args and _is_int(args[0]) and "axis" not in kwargs:
            raise _ambiguous_axis(f"a.{name}({args[0]})", name, args[0])
        return c_method(self, *args, **kwargs)

    method.__name__ = name
    method.__doc__ = (f"a.{name}(axis=None, keepdims=False): the {'largest' if name == 'max' else 'smallest'} "
                      f"values, NumPy's and the array API's; a.{name}(1) is refused (PyTorch reads it as "
                      f"(values, indices)): write a.{name}(axis=1).")
    return method


class ArrayMethods:
    """The body of this class is the list of gd.Array's Python members; it is never instantiated."""

    # -----------------------------------------------------------------------------------------
    # in-place methods: each returns the array itself, as PyTorch's trailing-underscore methods do
    # -----------------------------------------------------------------------------------------

    def zero_(self: Array) -> Array:
        """Set every element to 0 in place; returns self. ``x.grad.zero_()``"""
        self[...] = 0
        return self

    def fill_(self: Array, value: Any) -> Array:
        """Set every element to `value` in place; returns self. ``x.fill_(7)``"""
        self[...] = value
        return self

    normal_ = normal_
    uniform_ = uniform_

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

    # -----------------------------------------------------------------------------------------
    # dtypes and devices
    # -----------------------------------------------------------------------------------------

    def float(self: Array) -> Array:
        """As float32 (PyTorch's ``x.float()``); self when it is float32 already."""
        return self.astype(_C.float32, copy=False)

    def double(self: Array) -> Array:
        """As float64; self when it is float64 already."""
        return self.astype(_C.float64, copy=False)

    def long(self: Array) -> Array:
        """As int64; self when it is int64 already."""
        return self.astype(_C.int64, copy=False)

    def int(self: Array) -> Array:
        """As int32 (PyTorch's ``x.int()``); self when it is int32 already."""
        return self.astype(_C.int32, copy=False)

    def bool(self: Array) -> Array:
        """As bool (nonzero is True); self when it is bool already."""
        return self.astype(_C.bool, copy=False)

    def type(self: Array, dtype: Any = None) -> Any:
        """``x.type(dtype)``: x as `dtype`; ``x.type()``: the dtype's name, e.g. 'gpudev.float32'."""
        if dtype is None:
            return f"gpudev.{self.dtype}"
        return self.astype(dtype, copy=False)

    def to(self: Array, *args: Any, **kwargs: Any) -> Array:
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
            raise TypeError(f"to() got an unexpected keyword argument {reprlib.repr(next(iter(kwargs)))}; it "
                            f"takes device, dtype, copy and non_blocking")
        if not args and device is None and dtype is None:
            return self._to()  # the core's usage error: to() needs a device (or here a dtype)
        for arg in args:
            if dtype is None and _is_dtype(arg):
                dtype = arg
            elif device is None:
                device = arg  # or what the core's to() explains is not a device
            else:
                raise TypeError(f"to: cannot read {reprlib.repr(arg)} as a device or a dtype; use e.g. "
                                f"a.to('cuda:0'), a.to(gd.float64) or a.to('cpu', gd.float64)")
        out = self if device is None else self._to(device, copy=bool(copy) and dtype is None,
                                                   non_blocking=non_blocking)
        if dtype is not None:
            out = out.astype(dtype, copy=bool(copy) and out is self)
        elif copy and out is self:
            out = self.copy()
        return out

    def to_device(self: Array, device: Any, /, *, stream: Any = None) -> Array:
        """This array on `device` (a copy, or itself when it is there): ``x.to(device)``."""
        if stream is not None:
            raise ValueError("to_device: stream= is not supported; gpudev orders work on each device's "
                             "own stream (call gd.synchronize() to wait for it)")
        return self.to(device)

    # -----------------------------------------------------------------------------------------
    # shapes
    # -----------------------------------------------------------------------------------------

    def t(self: Array) -> Array:
        """The transpose of a 2-D array (a 0-D or 1-D array as it is), PyTorch's ``x.t()``."""
        if self.ndim > 2:
            raise ValueError(f"t: expects an array of at most 2 dimensions, got shape {self.shape}; "
                             f"use x.transpose(i, j), x.mT or x.permute(...)")
        return self.T if self.ndim == 2 else self

    @property
    def size(self: Array) -> int:
        """``a.size``: the element count (an int, as the array API standard defines it).

        Calling it as PyTorch does raises a TypeError naming ``a.shape``: ``a.size()`` would
        otherwise have to return something other than what ``a.size`` is.
        """
        return _Size(self._size)

    def numel(self: Array) -> int:
        """The number of elements (``x.size``)."""
        return self._size

    def dim(self: Array) -> int:
        """The number of dimensions (``x.ndim``)."""
        return self.ndim

    def clone(self: Array) -> Array:
        """A copy with its own memory, recorded by autograd (``x.copy()``)."""
        return self.copy()

    def squeeze(self: Array, dim: Any = None) -> Array:
        """Without the axes of length 1 (or only `dim`, which stays when its length is not 1)."""
        if dim is None:
            return self.reshape(tuple(n for n in self.shape if n != 1))
        axes = dim if isinstance(dim, (tuple, list)) else (dim,)
        drop = {_axis("squeeze", self, d) for d in axes}
        return self.reshape(tuple(n for k, n in enumerate(self.shape) if k not in drop or n != 1))

    def unsqueeze(self: Array, dim: int) -> Array:
        """With a new axis of length 1 at `dim` (a view)."""
        k = _axis("unsqueeze", self, dim, extra=1)
        return self.reshape(self.shape[:k] + (1,) + self.shape[k:])

    def view(self: Array, *shape: Any) -> Array:
        """The same memory seen with another shape; raises where only a copy could do it.

        A contiguous array can be viewed with any shape of its size; for others use reshape.
        """
        if not self.is_contiguous():
            raise ValueError(f"view: the array of shape {self.shape} and strides {self.strides} is "
                             f"not contiguous, so it cannot be viewed as {reprlib.repr(shape)}; use "
                             f"x.reshape(...) (which copies when it must) or x.contiguous().view(...)")
        return self.reshape(_dims(shape, "view"))

    def expand(self: Array, *sizes: Any) -> Array:
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

    def repeat(self: Array, *sizes: Any) -> Array:
        """PyTorch's ``x.repeat(2, 3)``: the array tiled `sizes` times along each dimension."""
        reps = _dims(sizes, "repeat")
        if len(reps) < self.ndim:
            raise ValueError(f"repeat: {len(reps)} repeat counts {reps} for an array of {self.ndim} "
                             f"dimensions; give at least {self.ndim}")
        shape = (1,) * (len(reps) - self.ndim) + self.shape
        # (r0, n0, r1, n1, ...): a new axis in front of each one, expanded, then merged back
        grid = self.reshape(tuple(v for n in shape for v in (1, n)))
        tiled = grid.expand(tuple(v for r, n in zip(reps, shape) for v in (r, n)))
        return tiled.reshape(tuple(r * n for r, n in zip(reps, shape)))

    def flatten(self: Array, start_dim: Any = 0, end_dim: int = -1) -> Array:
        """The axes start_dim..end_dim merged into one (all of them by default), as a copy.

        ``x.flatten()`` is NumPy's and PyTorch's alike; ``x.flatten(1)`` is PyTorch's (NumPy's
        only argument is the order, of which gpudev has 'C').
        """
        if isinstance(start_dim, str):
            if start_dim != "C":
                raise ValueError(f"flatten: order {reprlib.repr(start_dim)} is not supported; gpudev "
                                 f"arrays flatten in C order")
            return self._flatten()
        if self.ndim == 0:
            return self.reshape(1)
        lo, hi = _axis("flatten", self, start_dim), _axis("flatten", self, end_dim)
        if lo > hi:
            raise ValueError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim}")
        merged = math.prod(self.shape[lo:hi + 1])
        return self.reshape(self.shape[:lo] + (merged,) + self.shape[hi + 1:]).copy()

    def transpose(self: Array, *axes: Any) -> Array:
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
        return self._transpose(*axes)  # (1, 0) swaps in both; bad axes get the core's error

    # -----------------------------------------------------------------------------------------
    # reductions and elementwise spellings
    # -----------------------------------------------------------------------------------------

    max = _extreme_method("max")
    min = _extreme_method("min")

    def var(self: Array, axis: Any = None, *, correction: Any = None, keepdims: bool = False,
            unbiased: Any = None) -> Array:
        """The variance, dividing by n - correction (0 by default, as the array API and NumPy).

        PyTorch's default divides by n - 1: write ``correction=1`` (or ``unbiased=True``).
        """
        c = _correction("var", correction, unbiased)
        n = self._size if axis is None else math.prod(
            self.shape[a] for a in ((axis,) if isinstance(axis, int) else axis))
        centered = self - self.mean(axis=axis, keepdims=True)
        total = (centered * centered).sum(axis=axis, keepdims=keepdims)
        return total / (n - c) if n - c > 0 else total * math.nan

    def std(self: Array, axis: Any = None, *, correction: Any = None, keepdims: bool = False,
            unbiased: Any = None) -> Array:
        """The standard deviation, dividing by n - correction (0 by default; see var)."""
        return _C.sqrt(self.var(axis, correction=correction, keepdims=keepdims, unbiased=unbiased))

    def abs(self: Array) -> Array:
        """|x| elementwise (``gd.abs``)."""
        return _C.abs(self)

    def pow(self: Array, exponent: Any) -> Array:
        """self ** exponent (``gd.pow``)."""
        return _C.pow(self, exponent)

    def clip(self: Array, min: Any = None, max: Any = None) -> Array:  # noqa: A002
        """a.clip(min=None, max=None): ``gd.clip(a, min, max)`` (NumPy's method).

        Example:
            >>> gd.arange(4).clip(1, 2).tolist()
            [1, 1, 2, 2]
        """
        return _limit("clip", self, min, max)

    clamp = clamp
    mm = mm

    def __lshift__(self: Array, other: Any, /) -> Array:
        """self << other elementwise (integers; the op list's bitwise_left_shift)."""
        return _C.bitwise_left_shift(self, other)

    def __rshift__(self: Array, other: Any, /) -> Array:
        """self >> other elementwise (integers, arithmetic: the sign is kept)."""
        return _C.bitwise_right_shift(self, other)

    def __rlshift__(self: Array, other: Any, /) -> Array:
        return _C.bitwise_left_shift(other, self)

    def __rrshift__(self: Array, other: Any, /) -> Array:
        return _C.bitwise_right_shift(other, self)

    def __ilshift__(self: Array, other: Any, /) -> Array:
        self[...] = _C.bitwise_left_shift(self, other)
        return self

    def __irshift__(self: Array, other: Any, /) -> Array:
        self[...] = _C.bitwise_right_shift(self, other)
        return self

    def __complex__(self: Array, /) -> complex:
        """complex(x) of a one-element array (a synchronizing transfer, as float(x))."""
        return complex(self.__float__())

    # -----------------------------------------------------------------------------------------
    # protocols: the array API, NumPy's dispatch (gpudev/_protocols.py), pickling (_pickle.py)
    # -----------------------------------------------------------------------------------------

    def __array_namespace__(self: Array, /, *, api_version: str | None = None) -> Any:
        """The array API namespace of this array: the gpudev module itself."""
        if api_version is not None and api_version not in ("2021.12", "2022.12", "2023.12", "2024.12"):
            raise ValueError(f"__array_namespace__: api_version {reprlib.repr(api_version)} is not "
                             f"supported; gpudev implements '2024.12' (and the earlier versions it contains)")
        import gpudev

        return gpudev

    __array_ufunc__ = array_ufunc
    __array_function__ = array_function
    __reduce_ex__ = _reduce_ex


# what a class body holds besides its members
_CLASS_MACHINERY = frozenset({"__module__", "__qualname__", "__doc__", "__dict__", "__weakref__",
                              "__firstlineno__", "__static_attributes__"})


def members() -> dict[str, Any]:
    """Name -> member: every member Python adds to gd.Array."""
    return {n: v for n, v in vars(ArrayMethods).items() if n not in _CLASS_MACHINERY}


def install(cls: type = Array) -> None:
    """Set the members above on `cls` (gd.Array, once, at import). A name the type has already
    (the C table's, the op rows', autograd's) is refused: a member has one home."""
    new = members()
    taken = sorted(set(new) & set(vars(cls)))
    if taken:
        raise RuntimeError(f"gpudev: {cls.__name__} already has {', '.join(taken)}; a member is defined once, "
                           f"in C or in gpudev/_array.py: rename the C one (e.g. _{taken[0]}) and call it")
    for name, member in new.items():
        if callable(member) and getattr(member, "__module__", None) == __name__:
            member.__qualname__ = name  # the function's own name, as help() shows it
        setattr(cls, name, member)
