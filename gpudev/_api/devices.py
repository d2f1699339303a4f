"""Devices, dtypes, the Array type and errors (csrc/core/device.c, sync.c, runtime.c, dtypes.c,
array_type.c; gpudev/_devices.py, _info.py, cuda.py), the CPU's threads, and the array API's
namespace facts; defined here: the array API's data type functions (``finfo``, ``iinfo``,
``isdtype``, ``result_type``, ``can_cast``) and its inspection API, which read the dtype and
kind tables of gpudev/_array_api.py.

>>> import gpudev as gd
>>> gd.finfo(gd.float32).bits, gd.__array_namespace_info__().default_device()
(32, Device('cpu'))
"""

from __future__ import annotations

import reprlib
from typing import Any, NamedTuple

import numpy as np

from .. import _C, _array_api, _devices, _info, cuda
from .._array_api import DTYPES, FLOAT32, INT64, KINDS, MAX_NDIM, _dtype, _dtype_or_array
from . import declare, declare_modules, public

__all__ = ["Info", "__array_namespace_info__", "can_cast", "finfo", "finfo_object", "iinfo", "iinfo_object", "isdtype",
           "result_type"]

declare("devices", _C, "Array Device device=Device CudaError DeviceMismatchError DeviceUnavailableError "
        "GpudevError OutOfMemoryError cpu gpu try_gpu try_all_gpus num_gpus cuda_available synchronize "
        "get_num_threads set_num_threads float32 float64 int32 int64 bool bool_=bool")
declare("devices", _devices, "device_label")
declare("devices", _info, "build_info empty_cache memory_stats set_tf32")
declare("devices", _array_api, "__array_api_version__")
declare_modules("devices", cuda)


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


@public("devices")
def __array_namespace_info__() -> Info:
    """The inspection API: devices(), default_device(), dtypes(), default_dtypes(), capabilities()."""
    return _INFO
