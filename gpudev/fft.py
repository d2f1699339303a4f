"""``gd.fft``: the real-valued helpers of the array API standard's fft extension.

gpudev has no complex dtype, so of the extension only ``fftfreq``, ``rfftfreq``, ``fftshift``
and ``ifftshift`` exist here; the transforms (``fft``, ``ifft``, ``rfft``, ``irfft``, ``fftn``,
``hfft``, ...) are absent. Each is made of the core's operations (``arange``, arithmetic,
``roll``'s slices and ``concatenate``) and runs on the array's device, or the one named by
``device=``, with no copy to or from the host. The results equal NumPy's ``numpy.fft``
functions; the frequencies are computed in float64 as NumPy computes them and rounded once
to the requested dtype (float32 by default, gpudev's default float dtype).

>>> import gpudev as gd
>>> gd.fft.fftfreq(5, d=0.5, dtype=gd.float64).tolist()
[0.0, 0.4, 0.8, -0.8, -0.4]
>>> gd.fft.rfftfreq(4).tolist()
[0.0, 0.25, 0.5]
>>> gd.fft.fftshift(gd.arange(5)).tolist(), gd.fft.ifftshift(gd.arange(5)).tolist()
([3, 4, 0, 1, 2], [2, 3, 4, 0, 1])
"""

from __future__ import annotations

import numbers
import reprlib
from typing import Any, Sequence

import numpy as np

from . import _C
from ._array_api import _dtype
from ._devices import as_device
from ._api.shape import _is_int, _need_array, roll

__all__ = ["fftfreq", "fftshift", "ifftshift", "rfftfreq"]

Array = _C.Array


# ---------------------------------------------------------------------------------------------
# sample frequencies
# ---------------------------------------------------------------------------------------------

def _freq_args(op: str, n: Any, d: Any, dtype: Any, device: Any) -> tuple[float, np.dtype, Any]:
    """The checked arguments: 1 / (n * d) as NumPy computes it, the float dtype, the device."""
    if not _is_int(n):
        raise TypeError(f"{op}: n must be an int (the window length), got {reprlib.repr(n)}; "
                        f"e.g. gd.fft.{op}(8)")
    if n <= 0:
        raise ValueError(f"{op}: n must be a positive window length, got {n}; e.g. gd.fft.{op}(8)")
    if not isinstance(d, numbers.Real) or isinstance(d, bool):
        raise TypeError(f"{op}: d must be a real number (the sample spacing), got {reprlib.repr(d)}")
    if d == 0:
        raise ValueError(f"{op}: d must be a nonzero sample spacing, got {d!r}; the frequencies are "
                         f"k / (n * d), e.g. d=1.0")
    dt = np.dtype(np.float32) if dtype is None else _dtype(op, dtype)  # the default float dtype
    if dt.kind != "f":
        raise TypeError(f"{op}: dtype must be a real floating-point dtype, got {dt}; "
                        f"use gd.float32 or gd.float64")
    return 1.0 / (n * d), dt, None if device is None else as_device(device, op)


def fftfreq(n: int, /, *, d: float = 1.0, dtype: Any = None, device: Any = None) -> Array:
    """The sample frequencies of a discrete Fourier transform of length `n` with sample
    spacing `d`: ``[0, 1, ..., (n-1)//2, -(n//2), ..., -1] / (d*n)``, as ``numpy.fft.fftfreq``.

    Example:
        >>> gd.fft.fftfreq(4, dtype=gd.float64).tolist()
        [0.0, 0.25, -0.5, -0.25]
    """
    val, dt, device = _freq_args("fftfreq", n, d, dtype, device)
    k = _C.arange(n, dtype=_C.int64, device=device)
    # the indices from (n-1)//2 + 1 on are the negative frequencies: k - n there
    ints = k - (k >= (n - 1) // 2 + 1) * n
    return (ints * val).astype(dt, copy=False)


def rfftfreq(n: int, /, *, d: float = 1.0, dtype: Any = None, device: Any = None) -> Array:
    """The sample frequencies of a real transform of length `n` (``rfft``'s ``n//2 + 1``
    outputs) with sample spacing `d`: ``[0, 1, ..., n//2] / (d*n)``, as ``numpy.fft.rfftfreq``.

    Example:
        >>> gd.fft.rfftfreq(5, dtype=gd.float64).tolist()
        [0.0, 0.2, 0.4]
    """
    val, dt, device = _freq_args("rfftfreq", n, d, dtype, device)
    return (_C.arange(n // 2 + 1, dtype=_C.int64, device=device) * val).astype(dt, copy=False)


# ---------------------------------------------------------------------------------------------
# shifts
# ---------------------------------------------------------------------------------------------

def _shift_axes(op: str, x: Array, axes: Any) -> tuple[int, ...]:
    """axes (None: every axis; an int or a sequence of distinct ints) in [0, x.ndim)."""
    if axes is None:
        return tuple(range(x.ndim))
    given = (axes,) if _is_int(axes) else axes
    if isinstance(given, (str, bytes)) or not isinstance(given, Sequence):
        raise TypeError(f"{op}: axes must be None, an int or a sequence of ints, got {reprlib.repr(axes)}")
    out = []
    for a in given:
        if not _is_int(a):
            raise TypeError(f"{op}: axes must be None, an int or a sequence of ints, got {reprlib.repr(axes)}")
        if not -x.ndim <= a < x.ndim:
            hint = "a 0-d array has no axes; use axes=None" if x.ndim == 0 else \
                f"use axes in [{-x.ndim}, {x.ndim - 1}]"
            raise IndexError(f"{op}: axis {a} in axes={reprlib.repr(axes)} is out of range for an array of "
                             f"shape {x.shape}; {hint}")
        out.append(int(a) % x.ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"{op}: axes={reprlib.repr(axes)} names an axis twice (as {tuple(out)}); "
                         f"name each axis once")
    return tuple(out)


def fftshift(x: Array, /, *, axes: int | Sequence[int] | None = None) -> Array:
    """x with the zero-frequency term moved to the center: each of `axes` (None: all) rolled
    by half its length, as ``numpy.fft.fftshift``. A new array of x's shape and dtype.

    Example:
        >>> gd.fft.fftshift(gd.fft.fftfreq(4, dtype=gd.float64)).tolist()
        [-0.5, -0.25, 0.0, 0.25]
    """
    _need_array("fftshift", x)
    ax = _shift_axes("fftshift", x, axes)
    return roll(x, tuple(x.shape[a] // 2 for a in ax), axis=ax)


def ifftshift(x: Array, /, *, axes: int | Sequence[int] | None = None) -> Array:
    """The inverse of ``fftshift`` (the two differ by one element along odd-length axes), as
    ``numpy.fft.ifftshift``.

    Example:
        >>> gd.fft.ifftshift(gd.fft.fftshift(gd.arange(5))).tolist()
        [0, 1, 2, 3, 4]
    """
    _need_array("ifftshift", x)
    ax = _shift_axes("ifftshift", x, axes)
    return roll(x, tuple(-(x.shape[a] // 2) for a in ax), axis=ax)
