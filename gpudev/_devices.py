"""Device arguments: one way to read them, and the one check that a GPU index exists here.

A device argument is a ``Device``, a string ('cpu', 'cuda', 'cuda:1') or, where several are
taken, an iterable of those. ``Device`` objects may name GPUs this machine lacks (they are
only names); :func:`is_missing` is the check, against ``num_gpus()``, before one is used.

    >>> as_devices(["cpu", "cuda:3"], "demo")
    [Device('cpu'), Device('cuda:3')]
    >>> is_missing(Device("cuda:3")) == (num_gpus() <= 3)
    True
"""

from __future__ import annotations

import reprlib
from collections.abc import Iterable
from typing import Any

from ._C import Device, DeviceUnavailableError, _cuda_reason, cpu, gpu, num_gpus

__all__ = ["DeviceLike", "all_devices", "as_device", "as_devices", "cuda_reason", "gpus_here",
           "is_missing", "no_gpu_reason", "present_and_missing", "require"]

DeviceLike = Any  # a Device, 'cpu', 'cuda', 'cuda:N'


def as_device(device: DeviceLike, op: str, default: Device | None = None) -> Device:
    """`device` as a Device (`default` when it is None and a default is given); a bad value
    raises its TypeError or ValueError naming `op` and the fix.

    >>> as_device("cuda:1", "demo"), as_device(None, "demo", default=cpu())
    (Device('cuda:1'), Device('cpu'))
    """
    if device is None and default is not None:
        return default
    try:
        return device if isinstance(device, Device) else Device(device)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"{op}: bad device {reprlib.repr(device)}: {exc}; use 'cpu', 'cuda' or 'cuda:N'") from None


def as_devices(devices: DeviceLike | Iterable[DeviceLike], op: str) -> list[Device]:
    """One device or an iterable of them, as a list of Devices (each read by as_device).

    >>> as_devices("cpu", "demo")
    [Device('cpu')]
    """
    if isinstance(devices, (str, Device)):
        devices = [devices]
    try:
        items = list(devices)
    except TypeError:
        raise TypeError(f"{op}: devices must be a device, a device string or a list of them, "
                        f"got {type(devices).__name__}; e.g. devices=['cpu', 'cuda:0']") from None
    return [as_device(d, op) for d in items]


def all_devices() -> list[Device]:
    """The CPU, then every GPU this machine has."""
    return [cpu()] + [gpu(i) for i in range(num_gpus())]


def is_missing(dev: Device) -> bool:
    """True when `dev` is a GPU this machine does not have."""
    return dev.type == "cuda" and dev.index >= num_gpus()


def present_and_missing(devices: Iterable[Device]) -> tuple[list[Device], list[Device]]:
    """The devices that are here (each once, in order), and the GPUs that are not.

    >>> present_and_missing([cpu(), cpu(), Device("cuda:99")])
    ([Device('cpu')], [Device('cuda:99')])
    """
    present: list[Device] = []
    missing: list[Device] = []
    for dev in devices:
        if is_missing(dev):
            missing.append(dev)
        elif dev not in present:
            present.append(dev)
    return present, missing


def cuda_reason() -> str | None:
    """Why CUDA is unavailable here (not compiled, no driver, no GPU...), None when it works."""
    return _cuda_reason()


def no_gpu_reason() -> str:
    """'this machine has no usable GPU (why)', or 'this machine has no GPU' when CUDA says nothing."""
    reason = cuda_reason()
    return f"this machine has no usable GPU ({reason})" if reason else "this machine has no GPU"


def gpus_here() -> str:
    """Why a GPU index is out of range: no GPU at all (and why), or how many there are."""
    n = num_gpus()
    return no_gpu_reason() if n == 0 else f"this machine has {n} GPU(s)"


def require(dev: Device, op: str, fix: str) -> Device:
    """`dev`, after checking it is there; a missing GPU raises DeviceUnavailableError naming
    `op`, the device, what this machine has, and `fix`.

    >>> require(cpu(), "demo", "use the CPU")
    Device('cpu')
    """
    if is_missing(dev):
        raise DeviceUnavailableError(f"{op}: {dev} is not available: {gpus_here()}; {fix}")
    return dev
