"""``gd.cuda``: PyTorch's ``torch.cuda`` names on gpudev's device functions.

Each is one call of a function gpudev already has (``cuda_available``, ``num_gpus``,
``synchronize``, ``memory_stats``, ``empty_cache``); a device argument is a ``Device``, 'cuda:N'
or an index N, and None means GPU 0 (PyTorch's current device).

>>> import gpudev as gd
>>> gd.cuda.is_available() == gd.cuda_available(), gd.cuda.device_count() == gd.num_gpus()
(True, True)
"""

from __future__ import annotations

import numbers
from typing import Any

from . import _C
from ._devices import as_device, require
from ._info import empty_cache as _empty_cache
from ._info import memory_stats as _memory_stats

__all__ = ["current_device", "device_count", "empty_cache", "is_available", "max_memory_allocated",
           "memory_allocated", "memory_reserved", "synchronize"]


def is_available() -> bool:
    """Whether gpudev can use a GPU here (``gd.cuda_available()``)."""
    return _C.cuda_available()


def device_count() -> int:
    """How many GPUs gpudev can use here (``gd.num_gpus()``); 0 without CUDA."""
    return _C.num_gpus()


def current_device() -> int:
    """The index of the GPU that device=None means here: 0 (gpudev has no current device).

    Raises when there is no GPU, as PyTorch does.
    """
    _gpu(None, "current_device")
    return 0


def _gpu(device: Any, op: str) -> _C.Device:
    if device is None:
        device = 0
    if isinstance(device, numbers.Integral) and not isinstance(device, bool):
        if device < 0:
            raise ValueError(f"cuda.{op}: GPU index must be >= 0, got {device}")
        dev = _C.gpu(int(device))
    else:
        dev = as_device(device, f"cuda.{op}")
    if dev.type != "cuda":
        raise ValueError(f"cuda.{op}: {dev} is not a GPU; pass 'cuda:N' or an index, or use "
                         f"gd.memory_stats('cpu') for the host")
    return require(dev, f"cuda.{op}", "check gd.cuda.device_count() first")


def synchronize(device: Any = None) -> None:
    """Wait until the GPU's queued work is done (``gd.synchronize(gd.gpu(i))``)."""
    _C.synchronize(_gpu(device, "synchronize"))


def memory_allocated(device: Any = None) -> int:
    """Bytes of live arrays gpudev holds on the GPU."""
    return _memory_stats(_gpu(device, "memory_allocated"))["allocated_bytes"]


def max_memory_allocated(device: Any = None) -> int:
    """The most bytes of live arrays gpudev held on the GPU at once."""
    return _memory_stats(_gpu(device, "max_memory_allocated"))["peak_allocated_bytes"]


def memory_reserved(device: Any = None) -> int:
    """Bytes gpudev holds from the driver on the GPU, its pool's cache included."""
    return _memory_stats(_gpu(device, "memory_reserved"))["reserved_bytes"]


def empty_cache(device: Any = None) -> None:
    """Give the pool's cached memory back to the driver (a no-op without a GPU, as PyTorch)."""
    if _C.num_gpus():
        _empty_cache(_gpu(device, "empty_cache"))
