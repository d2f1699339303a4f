"""PyTorch's random fills of an array in place, ``x.normal_(mean, std)`` and
``x.uniform_(a, b)`` (Array methods, installed by ``_array.install``; ``nn.init`` calls them):
drawn with gpudev's generator on the array's device, with PyTorch's checks of the arguments.

>>> import gpudev as gd
>>> try:
...     gd.zeros(3).uniform_(5, 1)
... except ValueError as e:  # also a RuntimeError, PyTorch's class for it
...     print(e)
uniform_ expects to return a [from, to) range, but found from=5 > to=1; give the smaller bound first
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _C

Array = _C.Array


def _float_only(op: str, a: Array) -> None:
    if a.dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise TypeError(f"{op}: random values need a float array, got {a.dtype}; convert it "
                        f"first, e.g. x = x.float()")


class RandomBoundsError(ValueError, RuntimeError):
    """A bound or standard deviation that no distribution has: a ValueError, as gpudev's bad
    values are, and a RuntimeError, as PyTorch raises for it."""


def normal_(self: Array, mean: float = 0.0, std: float = 1.0) -> Array:
    """Fill in place with normal random numbers of `mean` and `std`; returns self. A std below
    0 (or NaN) raises PyTorch's error with its text (RandomBoundsError).

    Drawn with ``gd.randn`` on the array's device, so ``gd.manual_seed`` makes it repeatable.
    """
    _float_only("normal_", self)
    if not std >= 0:  # NaN too
        raise RandomBoundsError(f"normal expects std >= 0.0, but found std {std}; give a standard deviation "
                                f"of 0 or more")
    self[...] = _C.randn(*self.shape, dtype=self.dtype, device=self.device) * std + mean
    return self


def uniform_(self: Array, a: float = 0.0, b: float = 1.0) -> Array:
    """Fill in place with uniform random numbers in [a, b); returns self. Bounds outside the
    dtype's finite range, a > b and a range wider than the largest float raise PyTorch's
    errors with its texts (RandomBoundsError)."""
    _float_only("uniform_", self)
    _uniform_bounds(self.dtype, a, b)
    self[...] = _C.rand(*self.shape, dtype=self.dtype, device=self.device) * (b - a) + a
    return self


def _uniform_bounds(dtype: np.dtype, a: Any, b: Any) -> None:
    largest = float(np.finfo(dtype).max)
    for name, v in (("from", a), ("to", b)):
        if not -largest <= v <= largest:  # NaN and infinities too
            raise RandomBoundsError(f"{name} is out of bounds for {dtype}; give finite bounds")
    if not a <= b:
        raise RandomBoundsError(f"uniform_ expects to return a [from, to) range, but found from={a} > to={b}; "
                                f"give the smaller bound first")
    if b - a > largest:
        raise RandomBoundsError(f"uniform_ expects to-from <= {largest}, but found to={b} and from={a}; "
                                f"give a narrower range")
