"""repr() of gpudev arrays: NumPy formats the numbers, gpudev names its type and device."""

from __future__ import annotations

import numpy as np

# gpudev's default dtypes (float32 from floats, int64 from ints) go unnamed, as NumPy does
# with its own defaults; any other dtype is shown.
_DEFAULT_DTYPES = (np.dtype(np.float32), np.dtype(np.int64))


def array_repr(arr: np.ndarray, device: str) -> str:
    """`Array([[1., 2.]], dtype=float64, device='cuda:0')` for a host copy `arr` of the data."""
    prefix = "Array("
    extras = []
    if arr.size == 0:
        body = "[]"
        if arr.ndim != 1:
            extras.append(f"shape={arr.shape}")
        extras.append(f"dtype={arr.dtype}")
    else:
        body = np.array2string(arr, separator=", ", prefix=prefix, suffix=")")
        if arr.dtype not in _DEFAULT_DTYPES:
            extras.append(f"dtype={arr.dtype}")
    if device != "cpu":
        extras.append(f"device='{device}'")
    return prefix + body + "".join(", " + e for e in extras) + ")"
