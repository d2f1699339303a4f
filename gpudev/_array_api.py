"""gpudev as a Python array API standard namespace (version 2024.12): its inspection API, its
data type functions, the dtype and kind tables they read and its constants (the Array members
it asks for are in gpudev/_array.py).

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
from typing import Any, NamedTuple

import numpy as np

from . import _C
from ._api import public

__all__ = [
    "__array_api_version__", "__array_namespace_info__", "can_cast", "e", "finfo", "iinfo", "inf", "isdtype", "nan",
    "newaxis", "pi", "result_type",
]

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


# ---------------------------------------------------------------------------------------------
# data type functions
# ---------------------------------------------------------------------------------------------

class finfo_object(NamedTuple):
    """Machine limits of a float dtype, as the standard has them (Python floats)."""

    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: np.dtype


class iinfo_object(NamedTuple):
    """Limits of an integer dtype (Python ints)."""

    bits: int
    max: int
    min: int
    dtype: np.dtype


@public("devices")
def finfo(type: Any, /) -> finfo_object:  # noqa: A002 (the standard's name)
    """Machine limits of a float dtype (or a float array's): bits, eps, max, min, smallest_normal.

    Example:
        >>> gd.finfo(gd.float32).eps
        1.1920928955078125e-07
    """
    dt = _dtype_or_array("finfo", type)
    if dt.kind != "f":
        raise TypeError(f"finfo: {dt} is not a floating dtype; use gd.iinfo for integers")
    f = np.finfo(dt)
    return finfo_object(f.bits, float(f.eps), float(f.max), float(f.min), float(f.smallest_normal), dt)


@public("devices")
def iinfo(type: Any, /) -> iinfo_object:  # noqa: A002
    """Limits of an integer dtype (or an integer array's): bits, max, min.

    Example:
        >>> gd.iinfo(gd.int64).max
        9223372036854775807
    """
    dt = _dtype_or_array("iinfo", type)
    if dt.kind != "i":
        raise TypeError(f"iinfo: {dt} is not an integer dtype; use gd.finfo for floats")
    i = np.iinfo(dt)
    return iinfo_object(i.bits, int(i.max), int(i.min), dt)


@public("devices")
def isdtype(dtype: Any, kind: Any) -> bool:
    """Whether `dtype` is of `kind`: a dtype, a kind name ('bool', 'signed integer', 'unsigned
    integer', 'integral', 'real floating', 'complex floating', 'numeric') or a tuple of them.

    Example:
        >>> gd.isdtype(gd.float64, ("integral", "real floating"))
        True
    """
    dt = _dtype("isdtype", dtype)
    if isinstance(kind, tuple):
        return any(isdtype(dt, k) for k in kind)
    if isinstance(kind, str):
        if kind not in KINDS:
            raise ValueError(f"isdtype: unknown kind {reprlib.repr(kind)}; use one of {', '.join(map(repr, KINDS))}")
        return dt in KINDS[kind]
    return dt == _dtype("isdtype", kind)


@public("devices")
def result_type(*arrays_and_dtypes: Any) -> np.dtype:
    """The dtype that operations on these arrays, dtypes and Python scalars give (NumPy 2's
    promotion, which gpudev's operations follow; Python scalars adapt to the arrays).

    Example:
        >>> gd.result_type(gd.float32, gd.int64), gd.result_type(gd.float32, 1.0)
        (dtype('float64'), dtype('float32'))
    """
    if not arrays_and_dtypes:
        raise ValueError("result_type: give at least one array or dtype")
    typed = [_dtype_or_array("result_type", x) for x in arrays_and_dtypes
             if not isinstance(x, (bool, int, float, complex))]
    if not typed:
        raise ValueError("result_type: give at least one array or dtype besides Python scalars")
    scalars = [x for x in arrays_and_dtypes if isinstance(x, (bool, int, float, complex))]
    out = np.result_type(*typed, *scalars)
    if out not in DTYPES.values():
        raise TypeError(f"result_type: {out} is not a gpudev dtype (from {reprlib.repr(arrays_and_dtypes)})")
    return out


@public("devices")
def can_cast(from_: Any, to: Any, /) -> bool:
    """Whether `from_` (a dtype or an array) casts to `to` without losing values, as NumPy's
    "safe" casting says (bool -> int32 -> int64 -> float64, int32 -> float64, float32 -> float64).

    Example:
        >>> gd.can_cast(gd.int64, gd.float32), gd.can_cast(gd.float32, gd.float64)
        (False, True)
    """
    return bool(np.can_cast(_dtype_or_array("can_cast", from_), _dtype("can_cast", to), "safe"))


# ---------------------------------------------------------------------------------------------
# the inspection API
# ---------------------------------------------------------------------------------------------

class Info:
    """What this namespace supports, as ``gd.__array_namespace_info__()`` answers it.

    Example:
        >>> info = gd.__array_namespace_info__()
        >>> info.default_dtypes()["real floating"], sorted(info.dtypes(kind="real floating"))
        (dtype('float32'), ['float32', 'float64'])
    """

    def capabilities(self) -> dict[str, Any]:
        """Boolean masks index, nonzero/unique give data-dependent shapes, at most GD_MAX_NDIM axes."""
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": MAX_NDIM}

    def default_device(self) -> _C.Device:
        """The CPU: gpudev allocates on a GPU only when asked."""
        return _C.cpu()

    def devices(self) -> list[_C.Device]:
        """The CPU and each GPU found (emulated ones included)."""
        return [_C.cpu(), *(_C.gpu(i) for i in range(_C.num_gpus()))]

    def default_dtypes(self, *, device: Any = None) -> dict[str, Any]:
        """float32 for floats (as in PyTorch), int64 for integers and indices; no complex dtype."""
        self._check_device(device)
        return {"real floating": FLOAT32, "complex floating": None, "integral": INT64, "indexing": INT64}

    def dtypes(self, *, device: Any = None, kind: Any = None) -> dict[str, np.dtype]:
        """gpudev's dtypes by name (the same on every device), those of `kind` when given."""
        self._check_device(device)
        return {name: dt for name, dt in DTYPES.items() if kind is None or isdtype(dt, kind)}

    def _check_device(self, device: Any) -> None:
        if device is not None and not isinstance(device, _C.Device):
            _C.Device(device)  # raises the core's message for a bad device name


_INFO = Info()


def __array_namespace_info__() -> Info:
    """The inspection API: devices(), default_device(), dtypes(), default_dtypes(), capabilities()."""
    return _INFO
