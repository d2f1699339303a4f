"""gpudev as a Python array API standard namespace (version 2024.12): the dtype and kind
tables, the dtype check every family reads, and the standard's constants. The inspection API
and the data type functions are in gpudev/_api/devices.py, the Array members the standard
asks for in gpudev/_array.py.

The standard's spellings of operations (``astype``, ``logical_and``, ``from_dlpack``,
``concat``, ...) are defined and declared in the family modules of ``_api`` (elementwise.py,
creation.py, shape.py, reduce.py, sort.py, index.py) and in ``linalg``; each calls the
operations the core already has, on the operands' device.

>>> import gpudev as gd
>>> x = gd.asarray([1.0, 2.0])
>>> xp = x.__array_namespace__()
>>> xp.add(x, 1).tolist(), xp.finfo(xp.float32).bits, xp.__array_namespace_info__().default_device()
([2.0, 3.0], 32, Device('cpu'))
"""

from __future__ import annotations

import math
import reprlib
from typing import Any

import numpy as np

from . import _C

__all__ = ["BOOL", "DTYPES", "FLOAT32", "FLOAT64", "INT32", "INT64", "KINDS", "MAX_NDIM", "__array_api_version__", "e",
           "inf", "nan", "newaxis", "pi"]

Array = _C.Array
__array_api_version__ = "2024.12"

# the constants: Python floats, as the standard has them
e = math.e
pi = math.pi
inf = math.inf
nan = math.nan
newaxis = None

# GD_MAX_NDIM of csrc/gpudev.h (tests/test_array_api.py checks the two agree)
MAX_NDIM = 16
BOOL, FLOAT32, FLOAT64, INT32, INT64 = (
    np.dtype(t) for t in (np.bool_, np.float32, np.float64, np.int32, np.int64))
DTYPES = {"bool": BOOL, "float32": FLOAT32, "float64": FLOAT64, "int32": INT32, "int64": INT64}
# the standard's kinds (isdtype, __array_namespace_info__().dtypes) among gpudev's dtypes
KINDS = {
    "bool": (BOOL,),
    "signed integer": (INT32, INT64),
    "unsigned integer": (),
    "integral": (INT32, INT64),
    "real floating": (FLOAT32, FLOAT64),
    "complex floating": (),
    "numeric": (INT32, INT64, FLOAT32, FLOAT64),
}


def _dtype(op: str, dtype: Any) -> np.dtype:
    """dtype as one of gpudev's NumPy dtypes, or a TypeError naming them."""
    try:
        dt = None if dtype is None else np.dtype(dtype)  # np.dtype(None) would be float64
    except Exception:  # NumPy may raise more than TypeError for what is not a dtype
        dt = None
    if dt is None or not any(dt == d for d in DTYPES.values()):
        raise TypeError(f"{op}: {reprlib.repr(dtype)} is not one of gpudev's dtypes; use gd.bool, gd.int32, "
                        f"gd.int64, gd.float32 or gd.float64")
    return dt


def _dtype_or_array(op: str, x: Any) -> np.dtype:
    return x.dtype if isinstance(x, Array) else _dtype(op, x)
