"""Pickling gpudev arrays: what ``multiprocessing``, ``concurrent.futures``, joblib, Ray, Dask's
process and distributed schedulers and ``pickle.dumps(model)`` need.

An array pickles as the NumPy array of its data plus its device and ``requires_grad``, so
NumPy's own protocols apply: with protocol 5 and a ``buffer_callback``, a C-contiguous CPU
array's data goes out of band as a ``PickleBuffer`` of the array's own memory (no copy, as Ray's
object store and Dask's distributed scheduler use it); a view pickles as NumPy pickles a view
(a strided one as a copy). Reading the data is a host read (cause ``'pickle'``, counted by
``gd.trace()``): a GPU array is copied to the host once, explicitly. Unpickling puts the array
back on the device it came from; on a machine without that device it raises, naming the fix
(``with gd.map_location('cpu'):`` around the load), as PyTorch's loader does.

    >>> import pickle, gpudev as gd
    >>> b = pickle.loads(pickle.dumps(gd.arange(3)))
    >>> b.tolist(), b.device
    ([0, 1, 2], Device('cpu'))

Autograd graphs do not pickle, as in PyTorch: a result of a recorded operation raises; pickle
``x.detach()``. A leaf that requires grad comes back as a leaf that requires grad.
"""

from __future__ import annotations

import contextlib
import reprlib
import threading
from typing import Any

import numpy as np

from . import _C
from ._devices import as_device

__all__ = ["map_location"]

Array = _C.Array
_local = threading.local()  # .device: where this thread's unpickled arrays go (map_location)


class map_location(contextlib.ContextDecorator):  # noqa: N801 - used as a function, like no_grad
    """Unpickle every array inside the block onto `device` (a Device or a string such as
    'cpu' or 'cuda:0'), instead of the device it was pickled on: for arrays pickled on a GPU
    this machine lacks. Per thread; nestable.

        >>> import pickle, gpudev as gd
        >>> with gd.map_location("cpu"):
        ...     a = pickle.loads(pickle.dumps(gd.ones(2)))
    """

    def __init__(self, device: Any) -> None:
        if not isinstance(device, (str, _C.Device)):  # as gd.load's map_location: no dicts, no functions
            raise TypeError(f"map_location: expected a Device or a string such as 'cpu' or 'cuda:0', got "
                            f"{reprlib.repr(device)}")
        self.device = as_device(device, "map_location")  # the one reading of a device, as gd.load's
        self._outer: list[Any] = []

    def __enter__(self) -> None:
        self._outer.append(getattr(_local, "device", None))
        _local.device = self.device

    def __exit__(self, *exc: object) -> None:
        _local.device = self._outer.pop()


def _reduce_ex(self: Array, protocol: int) -> tuple:
    if self.requires_grad and not self.is_leaf:
        raise RuntimeError(
            f"pickle: this array is the result of a recorded operation ({type(self.grad_fn).__name__}); "
            f"autograd graphs do not cross processes, as in PyTorch; pickle x.detach() for its values")
    host = _C._to_host(self, "pickle")
    return (_rebuild, (host, str(self.device), bool(self.requires_grad)))


def _rebuild(host: np.ndarray, device: str, requires_grad: bool) -> Array:
    """The array back from its pickled parts, on its device or on map_location's."""
    target = getattr(_local, "device", None) or _C.Device(device)
    if target.type == "cuda" and target.index >= _C.num_gpus():
        raise _C.DeviceUnavailableError(
            f"unpickle: the array was pickled on {device}, which this machine does not have "
            f"({_C.num_gpus()} GPUs); load it inside `with gd.map_location('cpu'):` (or another "
            f"device) to put it there")
    # shares the host data on the CPU (an out-of-band buffer, or NumPy's fresh array)
    out = _C.asarray(host, device=target) if host.flags.writeable else _C.array(host, device=target)
    if requires_grad:
        out.requires_grad_()
    return out
