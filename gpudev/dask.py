"""Dask arrays of gpudev chunks, on any Dask scheduler (threads, processes, distributed).

Dask is optional (``pip install "gpudev[dask]"``). Importing this module, or importing Dask's
arrays after gpudev (gpudev watches for it), registers gpudev's Array as a Dask chunk type:

- Dask wraps gpudev arrays and no longer defers to them, so ``dask_array + gd_array`` works;
- ``concatenate``, ``tensordot``, ``take``, ``empty`` and the element counts of means and
  variances are gpudev's, and so are the NumPy functions Dask calls on chunks with ``dtype=``,
  ``keepdims=`` and ``out=`` (gpudev/_protocols.py), so reductions and products stay gpudev
  arrays on their device;
- ``dask.config.set({"array.backend": "gpudev"})`` makes ``da.ones``, ``da.zeros``,
  ``da.empty``, ``da.full`` and ``da.arange`` build gpudev chunks, on the device named by
  ``dask.config.set({"array.gpudev.device": "cuda:0"})`` (default: the CPU);
- chunks move between processes by pickling (gpudev/_pickle.py), zero-copy for CPU chunks.

    >>> import dask.array as da, gpudev as gd, gpudev.dask
    >>> d = da.from_array(gd.arange(16.0).reshape(4, 4), chunks=2, asarray=False)
    >>> type(d.sum(axis=0).compute()).__name__
    'Array'
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from . import _C

__all__ = ["GpudevBackendEntrypoint", "register"]

Array = _C.Array
_registered = False


def _numel(x: Array, **kwargs: Any) -> Array:
    """Element counts of a reduction (Dask's mean and var), as a gpudev array on x's device."""
    from dask.array.backends import _numel as numpy_numel

    counts = numpy_numel(np.empty(x.shape, dtype=np.bool_), coerce_np_ndarray=True, **kwargs)
    return _C.asarray(np.asarray(counts), device=x.device)


def _nannumel(x: Array, **kwargs: Any) -> Array:
    return (x == x).sum(**kwargs)  # NaN is the only value not equal to itself


def _to_numpy(x: Array, **kwargs: Any) -> np.ndarray:
    return x.cpu().numpy() if not kwargs else np.asarray(x.cpu().numpy(), **kwargs)


def register() -> None:
    """Register gpudev's Array with Dask (idempotent); called on import of this module."""
    global _registered
    if _registered:
        return
    from dask.array.backends import array_creation_dispatch
    from dask.array.chunk_types import register_chunk_type
    from dask.array.dispatch import (
        concatenate_lookup, empty_lookup, nannumel_lookup, numel_lookup, take_lookup, tensordot_lookup,
        to_numpy_dispatch,
    )

    from .linalg import tensordot
    from ._api.index import take

    register_chunk_type(Array)
    concatenate_lookup.register(Array, lambda arrays, axis=0: _C.concatenate(arrays, axis=axis))
    tensordot_lookup.register(Array, lambda a, b, axes=2: tensordot(a, b, axes=axes))
    take_lookup.register(Array, lambda a, indices, axis=None: take(a, _C.asarray(indices, device=a.device), axis=axis))
    empty_lookup.register(Array, lambda shape, dtype=None, device=None: _C.empty(shape, dtype=dtype, device=device))
    numel_lookup.register(Array, _numel)
    nannumel_lookup.register(Array, _nannumel)
    to_numpy_dispatch.register(Array, _to_numpy)
    array_creation_dispatch.register_backend("gpudev", GpudevBackendEntrypoint())
    _registered = True


def _meta() -> Array:
    import dask

    return _C.empty((0,), dtype=np.float64, device=dask.config.get("array.gpudev.device", "cpu"))


def _with_meta(name: str, *args: Any, meta: Any = None, **kwargs: Any) -> Any:
    import dask
    import dask.array as da

    with dask.config.set({"array.backend": "numpy"}):
        return getattr(da, name)(*args, meta=_meta() if meta is None else meta, **kwargs)


def _entrypoint_base() -> type:
    from dask.array.backends import ArrayBackendEntrypoint

    return ArrayBackendEntrypoint


class GpudevBackendEntrypoint(_entrypoint_base()):  # type: ignore[misc]
    """Dask's creation backend "gpudev": ``dask.config.set({"array.backend": "gpudev"})``."""

    @classmethod
    def to_backend_dispatch(cls) -> Any:
        from dask.array.dispatch import to_numpy_dispatch

        return to_numpy_dispatch

    @classmethod
    def to_backend(cls, data: Any, **kwargs: Any) -> Any:
        if isinstance(data._meta, Array):
            return data
        device = kwargs.pop("device", None)
        return data.map_blocks(lambda b: _C.asarray(b, device=device), meta=_meta(), **kwargs)

    @property
    def RandomState(self) -> Any:  # noqa: N802 - Dask's name
        return np.random.RandomState

    @property
    def default_bit_generator(self) -> Any:
        return np.random.PCG64

    @staticmethod
    def arange(*args: Any, like: Any = None, **kwargs: Any) -> Any:
        import dask
        import dask.array as da

        with dask.config.set({"array.backend": "numpy"}):
            return da.arange(*args, like=_meta() if like is None else like, **kwargs)


# Dask's creation functions that take a meta array: each builds gpudev chunks the same way
for _name in ("ones", "zeros", "empty", "full"):
    setattr(GpudevBackendEntrypoint, _name, staticmethod(functools.partial(_with_meta, _name)))

register()
