"""Emulated GPUs: gpudev's real CUDA backend compiled for the CPU (gpudev._cuda_emu, built from
csrc/cuda against the CUDA emulation in tools/cuda_emu), for machines without a GPU.

Select them before importing gpudev::

    GPUDEV_EMULATE_GPUS=2 python train.py      # cuda:0 and cuda:1, both emulated

Settings, read once at import:

    GPUDEV_EMULATE_GPUS=N                   N emulated GPUs (1 to 8); unset or 0: none
    GPUDEV_EMULATE_GPU_MEMORY=SIZE          memory of each, e.g. 64MiB, 2GiB or bytes (8GiB)
    GPUDEV_EMULATE_GPU_MULTIPROCESSORS=M    multiprocessors of each (2; an H200 has 132), which
                                            shapes launch plans (grids, reduction splits)
    GPUDEV_EMULATE_GPU_QUEUE=N              operations queued before a launch waits (32; 0: no
                                            bound), as a GPU's queue of about 1000 launches
    GPUDEV_EMULATE_BLOCK_ORDER=ORDER        blocks of each launch in `index` order (the default),
                                            or `shuffle` (a seed drawn, and exported in the
                                            variable for processes started later) or
                                            `shuffle:SEED`: a kernel that needs an order fails

Real and emulated GPUs never mix in one process: with the variable set, gpudev._cuda is not
loaded. The emulation runs the kernels for their logic and keeps CUDA's order of work (each
stream is a queue that runs only when something waits for it or it is full, so a missing
synchronization reads unfinished data); its times are CPU times, never GPU performance. Tests
drive the error paths with :func:`fail_next` and remove a synchronization with
:func:`skip_next`; both refuse a call the emulation never asks about (a typo would plant a
failure that never fires), and gpudev's pytest plugin forgets what a test planted and did not
use when the test ends. Ctrl-C stops a wait for an emulated GPU between two blocks (docs/guides/emulated-gpus.md,
"Ctrl-C on emulated GPUs").
"""

from __future__ import annotations

import os
import re
from types import ModuleType

__all__ = ["STATUS", "active", "clear_planted", "contexts", "fail_next", "pending_operations", "plantable", "settings",
           "skip_next"]

# The CUDA and cuBLAS statuses tests plant most, by name (values from the CUDA headers).
STATUS = {
    "cudaErrorInvalidValue": 1,
    "cudaErrorMemoryAllocation": 2,
    "cudaErrorLaunchFailure": 719,
    "cudaErrorIllegalAddress": 700,
    "CUBLAS_STATUS_ALLOC_FAILED": 3,
    "CUBLAS_STATUS_EXECUTION_FAILED": 13,
}

_MAX_DEVICES = 8
_DEFAULT_MEMORY = 8 << 30
_DEFAULT_QUEUE = 32  # tools/cuda_emu/emu.h, kDefaultQueue
_UNITS = {"": 1, "b": 1, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "kb": 10**3, "mb": 10**6, "gb": 10**9}
_module: ModuleType | None = None
_settings: dict[str, int] = {}
_block_order = ""  # 'index' or 'shuffle:SEED' once loaded


def _env_int(name: str, low: int, high: int, default: int) -> int:
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    if not text.isdigit() or not low <= int(text) <= high:
        raise ValueError(f"{name}={text!r}: give a whole number from {low} to {high}, e.g. {name}=2")
    return int(text)


def _env_bytes(name: str, default: int) -> int:
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    m = re.fullmatch(r"(\d+)\s*([kKmMgG]i?[bB]|[bB])?", text)
    if not m or int(m.group(1)) == 0:
        raise ValueError(f"{name}={text!r}: give a size such as 64MiB, 2GiB or a number of bytes")
    return int(m.group(1)) * _UNITS[(m.group(2) or "").lower()]


def _env_block_order() -> str:
    """GPUDEV_EMULATE_BLOCK_ORDER as 'index' or 'shuffle:SEED'; a drawn seed is written back
    into the variable, so that processes started from this one shuffle alike."""
    name = "GPUDEV_EMULATE_BLOCK_ORDER"
    given = os.environ.get(name, "").strip()
    text = given.lower()
    if text in ("", "index"):
        return "index"
    if text == "shuffle":
        text = f"shuffle:{int.from_bytes(os.urandom(4), 'little')}"
        os.environ[name] = text
    m = re.fullmatch(r"shuffle:(\d{1,19})", text)
    if not m or int(m.group(1)) >= 1 << 64:
        raise ValueError(f"{name}={given!r}: give index, shuffle or shuffle:SEED (SEED a whole number), "
                         "e.g. shuffle:1234")
    return text


def requested() -> int:
    """How many emulated GPUs GPUDEV_EMULATE_GPUS asks for (0: none); a bad value raises."""
    return _env_int("GPUDEV_EMULATE_GPUS", 0, _MAX_DEVICES, 0)


def load() -> ModuleType:
    """Import gpudev._cuda_emu and shape its devices from the environment (gpudev's import
    does this when GPUDEV_EMULATE_GPUS is set)."""
    global _module, _block_order
    try:
        from . import _cuda_emu
    except ImportError as exc:
        raise ImportError(
            f"GPUDEV_EMULATE_GPUS is set, but this gpudev was built without emulated GPUs ({exc}); "
            "rebuild with a C++ compiler present (GPUDEV_CUDA_EMU=1), or unset GPUDEV_EMULATE_GPUS") from None
    devices = requested()
    memory = _env_bytes("GPUDEV_EMULATE_GPU_MEMORY", _DEFAULT_MEMORY)
    sms = _env_int("GPUDEV_EMULATE_GPU_MULTIPROCESSORS", 1, 1024, 2)
    queue = _env_int("GPUDEV_EMULATE_GPU_QUEUE", 0, 1 << 30, _DEFAULT_QUEUE)
    order = _env_block_order()
    _cuda_emu.configure(devices, sms, memory)
    _cuda_emu.set_waits(queue, True)  # Ctrl-C stops a wait of the main thread (docs/guides/arrays.md)
    _cuda_emu.set_block_order(order != "index", int(order.partition(":")[2] or 0))
    _settings.update(devices=devices, memory=memory, multiprocessors=sms, queue=queue)
    _block_order = order
    _module = _cuda_emu
    return _cuda_emu


def active() -> bool:
    """Whether this process's GPUs are emulated."""
    return _module is not None


def settings() -> dict[str, int | str]:
    """The emulated GPUs' shape: devices, memory (bytes each), multiprocessors, queue (the
    operations queued before a launch waits) and block_order ('index' or 'shuffle:SEED');
    {} when off."""
    return {**_settings, "block_order": _block_order} if _settings else {}


def _emu(op: str) -> ModuleType:
    if _module is None:
        raise RuntimeError(f"emulation.{op}: emulated GPUs are not selected in this process; set "
                           "GPUDEV_EMULATE_GPUS=2 before importing gpudev")
    return _module


def _status(op: str, status: int | str) -> int:
    if isinstance(status, str):
        if status not in STATUS:
            raise ValueError(f"emulation.{op}: unknown status {status!r}; give one of {sorted(STATUS)} or a number")
        return STATUS[status]
    return int(status)


def fail_next(call: str, status: int | str = "cudaErrorMemoryAllocation", times: int = 1,
              last_error: int | str = 0) -> None:
    """The next `times` calls of the CUDA or cuBLAS function `call` (e.g.
    'cudaMallocFromPoolAsync', 'cudaMemcpyAsync', 'cublasSgemm', 'cudaLaunchKernel': one of
    :func:`plantable`, else ValueError listing them) fail with `status` and do nothing.
    `last_error` is also left for cudaGetLastError, as when a library call fails because a
    kernel it launched did."""
    _emu("fail_next").fail_next(call, _status("fail_next", status), times, _status("fail_next", last_error))


def skip_next(call: str, times: int = 1) -> None:
    """The next `times` calls of `call` (e.g. 'cudaStreamWaitEvent': one of
    ``plantable(skips=True)``, else ValueError listing them) do nothing and succeed."""
    _emu("skip_next").skip_next(call, times)


def plantable(skips: bool = False) -> list[str]:
    """The calls :func:`fail_next` takes (those the emulation asks about a planted failure), or
    with ``skips=True`` those :func:`skip_next` takes."""
    return _emu("plantable").plantable(bool(skips))


def clear_planted() -> None:
    """Forget every failure and skip planted and not used yet."""
    _emu("clear_planted").clear_planted()


def contexts() -> list[bool]:
    """For each emulated GPU, whether it has a CUDA context yet: CUDA makes one, about 0.5 GB
    on a real GPU, the first time a process uses a device."""
    emu = _emu("contexts")
    return [emu.context_active(d) for d in range(_settings["devices"])]


def pending_operations() -> int:
    """Operations that compute (kernel launches, matrix products, copies, memsets) queued on
    emulated streams that have not run yet: at most ``settings()["queue"]``, as a launch into a
    full queue first runs the oldest. Frees and other bookkeeping queue too, uncounted."""
    return _emu("pending_operations").pending_operations()
