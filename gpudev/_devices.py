"""Device arguments: one way to read them, the one check that a GPU index exists here, and the
one name of a device that people read.

A device argument is a ``Device``, a string ('cpu', 'cuda', 'cuda:1') or, where several are
taken, an iterable of those. ``Device`` objects may name GPUs this machine lacks (they are
only names); :func:`is_missing` is the check, against ``num_gpus()``, before one is used.

    >>> as_devices(["cpu", "cuda:3"], "demo")
    [Device('cpu'), Device('cuda:3')]
    >>> is_missing(Device("cuda:3")) == (num_gpus() <= 3)
    True

``str(device)`` is an identifier ('cuda:0', as PyTorch's), what a device argument takes back.
What people read (reprs, tables, plots, messages) is :func:`device_label`, which says
"emulated" after a GPU of the CPU emulation (GPUDEV_EMULATE_GPUS), whose times are CPU times:

    >>> device_label("cpu"), device_label("cuda:0", emulated={"cuda:0"})
    ('cpu', 'cuda:0 (emulated)')
"""

from __future__ import annotations

import reprlib
from collections.abc import Iterable
from typing import Any

from ._C import Device, DeviceUnavailableError, _cuda_reason, cpu, gpu, num_gpus

__all__ = ["EMULATED_MARK", "DeviceLike", "all_devices", "as_device", "as_devices", "cuda_reason", "device_label",
           "gpus_here", "is_missing", "no_gpu_reason", "present_and_missing", "require"]

DeviceLike = Any  # a Device, 'cpu', 'cuda', 'cuda:N'

# what follows the name of an emulated GPU wherever people read it (the C core's messages
# write the same: gd_device_label in csrc/core/core.h)
EMULATED_MARK = " (emulated)"


def device_label(device: DeviceLike, emulated: Iterable[str] | None = None) -> str:
    """The name of `device` for people: 'cpu', 'cuda:1', or 'cuda:1 (emulated)' for an
    emulated GPU; several devices joined by '+' ('cuda:0+cuda:1') are named one by one.

    `emulated`: the names of the emulated devices, for a report read back in another process
    (its ``meta["devices"]``); None asks this process's devices. ``str(device)`` stays the
    identifier.

    >>> device_label(cpu()), device_label("cuda:0+cuda:1", emulated=["cuda:0", "cuda:1"])
    ('cpu', 'cuda:0 (emulated)+cuda:1 (emulated)')
    """
    name = str(device)
    if "+" in name:
        return "+".join(device_label(part, emulated) for part in name.split("+"))
    if emulated is not None:
        fake = name in set(emulated)
    else:
        try:
            fake = (device if isinstance(device, Device) else Device(name)).emulated
        except (TypeError, ValueError):  # not a device name: shown as it is
            fake = False
    return name + EMULATED_MARK if fake else name


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
    """'this machine has no usable GPU (why)': the one wording of a missing GPU, which the C
    core's messages share (gd_backend_check in csrc/core/runtime.c)."""
    return f"this machine has no usable GPU ({cuda_reason() or 'no CUDA driver or GPU was found'})"


def gpus_here() -> str:
    """Why a GPU index is out of range: no GPU at all (and why), or how many there are
    ('this machine has 2 emulated GPUs'), worded as the C core words it."""
    n = num_gpus()
    if n == 0:
        return no_gpu_reason()
    kind = "emulated GPU" if gpu(0).emulated else "GPU"
    return f"this machine has {n} {kind}{'' if n == 1 else 's'}"


def require(dev: Device, op: str, fix: str) -> Device:
    """`dev`, after checking it is there; a missing GPU raises DeviceUnavailableError naming
    `op`, the device, what this machine has, and `fix`.

    >>> require(cpu(), "demo", "use the CPU")
    Device('cpu')
    """
    if is_missing(dev):
        raise DeviceUnavailableError(f"{op}: {dev} is not available: {gpus_here()}; {fix}")
    return dev
