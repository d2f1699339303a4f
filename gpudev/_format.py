"""How gpudev writes values for people and for files: times, byte counts, ratios, counts,
JSON-ready values, and the repr() of arrays.

    >>> format_seconds(0.0123), format_bytes(43048), format_ratio(1234.5), format_count(1, "copy")
    ('12.3 ms', '42.0 KiB', '1,234x', '1 copy')
    >>> format_gflops(13700.0), format_percent(-0.25)
    ('13.7 TFLOP/s', '-25%')
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._devices import device_label

# ---------------------------------------------------------------------------------------------
# numbers in words
# ---------------------------------------------------------------------------------------------

TIME_SCALES = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}


def time_unit(seconds: float) -> str:
    """The largest unit of TIME_SCALES in which `seconds` reads as a number >= 1 ('ns' below).

    >>> time_unit(0.02), time_unit(3e-12)
    ('ms', 'ns')
    """
    for unit in ("s", "ms", "us"):
        if abs(seconds) >= TIME_SCALES[unit]:
            return unit
    return "ns"


def format_seconds(seconds: float, unit: str | None = None, *, micro: str = "us") -> str:
    """`seconds` with 3 significant digits in s, ms, us or ns (or the `unit` given); `micro`
    is how microseconds are written (figures use 'µs').

    >>> format_seconds(0.0123), format_seconds(4.2e-6, micro="µs")
    ('12.3 ms', '4.2 µs')
    """
    unit = unit or time_unit(seconds)
    return f"{seconds / TIME_SCALES[unit]:.3g} {micro if unit == 'us' else unit}"


def format_bytes(n: float) -> str:
    """A byte count in B, KiB, MiB, GiB or TiB.

    >>> format_bytes(43048)
    '42.0 KiB'
    """
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"


def format_gib(n: Any, digits: int = 1) -> str:
    """A byte count in GiB with `digits` decimals, '-' when `n` is not a number.

    >>> format_gib(3 * 2**29), format_gib(None)
    ('1.5 GiB', '-')
    """
    return f"{n / 2**30:.{digits}f} GiB" if isinstance(n, (int, float)) else "-"


def format_ratio(ratio: float) -> str:
    """A ratio for prose: 3 significant digits up to 100, whole numbers above.

    >>> format_ratio(3.14159), format_ratio(1234.5)
    ('3.14x', '1,234x')
    """
    return f"{ratio:,.0f}x" if ratio >= 100 else f"{ratio:.3g}x"


def format_gflops(gflops: float) -> str:
    """A rate given in GFLOP/s, in GFLOP/s, TFLOP/s or PFLOP/s with 3 significant digits.

    >>> format_gflops(137.2), format_gflops(13700.0), format_gflops(1.37e7)
    ('137 GFLOP/s', '13.7 TFLOP/s', '13.7 PFLOP/s')
    """
    for unit, scale in (("PFLOP/s", 1e6), ("TFLOP/s", 1e3)):
        if abs(gflops) >= scale:
            return f"{gflops / scale:.3g} {unit}"
    return f"{gflops:.3g} GFLOP/s"


def format_percent(fraction: float) -> str:
    """A signed whole percentage, without a '-0%' for a tiny negative.

    >>> format_percent(0.031), format_percent(-1e-9), format_percent(-0.25)
    ('+3%', '+0%', '-25%')
    """
    return f"{round(100 * fraction):+d}%"


def format_count(count: int, word: str) -> str:
    """'1 copy', '0 copies', '1,000 synchronizations'.

    >>> format_count(0, "copy"), format_count(1000, "sync")
    ('0 copies', '1,000 syncs')
    """
    plural = word[:-1] + "ies" if word.endswith("y") else word + "s"
    return f"{count:,} {word if count == 1 else plural}"


# ---------------------------------------------------------------------------------------------
# JSON
# ---------------------------------------------------------------------------------------------


def jsonable(obj: Any) -> Any:
    """`obj` as plain JSON values: NumPy scalars as Python ones, non-finite floats as None,
    tuples as lists, dict keys as strings, anything else as its str().

    >>> jsonable({"t": (np.float32(0.5), float("nan")), 1: np.int64(3)})
    {'t': [0.5, None], '1': 3}
    """
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return float(obj) if math.isfinite(obj) else None
    if obj is None or isinstance(obj, str):
        return obj
    return str(obj)


# ---------------------------------------------------------------------------------------------
# arrays: NumPy formats the numbers, gpudev names its type and device
# ---------------------------------------------------------------------------------------------

# gpudev's default dtypes (float32 from floats, int64 from ints) go unnamed, as NumPy does
# with its own defaults; any other dtype is shown.
_DEFAULT_DTYPES = (np.dtype(np.float32), np.dtype(np.int64))


def array_repr(arr: np.ndarray, device: str, shape: tuple[int, ...] | None = None) -> str:
    """`Array([[1., 2.]], dtype=float64, device='cuda:0')` for a host copy `arr` of the data on
    `device` (its identifier), which is named as people read it (``device='cuda:0 (emulated)'``
    on an emulated GPU); `shape` is the Array's (by default arr's), which an empty `arr` may
    stand in for.

    >>> array_repr(np.zeros((0, 2), np.float64), "cpu")
    'Array([], shape=(0, 2), dtype=float64)'
    >>> array_repr(np.zeros(0, np.float32), "cpu", (0, 2**62, 2**62))
    'Array([], shape=(0, 4611686018427387904, 4611686018427387904), dtype=float32)'
    """
    prefix = "Array("
    extras = []
    shape = arr.shape if shape is None else tuple(shape)
    if arr.size == 0:
        body = "[]"
        if len(shape) != 1:
            extras.append(f"shape={shape}")
        extras.append(f"dtype={arr.dtype}")
    else:
        body = np.array2string(arr, separator=", ", prefix=prefix, suffix=")")
        if arr.dtype not in _DEFAULT_DTYPES:
            extras.append(f"dtype={arr.dtype}")
    if device != "cpu":
        extras.append(f"device='{device_label(device)}'")
    return prefix + body + "".join(", " + e for e in extras) + ")"
