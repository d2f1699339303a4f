"""What this machine and this build are: build_info(), Device.info(), memory statistics.

The facts about one device come from its backend through gpudev._C; gpudev._cuda is asked
only about the build and the CUDA runtime (versions, TF32).
"""

from __future__ import annotations

import os
import platform
from typing import Any

from . import _C, _cuda_libs

try:
    from ._build_info import BUILD_INFO
except ImportError:
    BUILD_INFO: dict[str, Any] = {}

# OpenBLAS reads OPENBLAS_CORETYPE once, when gpudev loads it (just before this module): a
# value set later changes nothing, so the one that counts is the one seen now.
_FORCED_BLAS_CORE = os.environ.get("OPENBLAS_CORETYPE") or None


def _cuda_module():
    """The CUDA backend's module: gpudev._cuda_emu when GPUs are emulated, else gpudev._cuda
    when it was built and imports on this machine, else None."""
    from . import emulation

    if emulation.active():
        from . import _cuda_emu

        return _cuda_emu
    if not BUILD_INFO.get("cuda_compiled") or _cuda_libs.problem():
        return None
    try:
        from . import _cuda
    except ImportError:
        return None
    return _cuda


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("model name", "Model")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def build_info() -> dict[str, Any]:
    """What gpudev was built with and what it found at run time.

    >>> gd.build_info()['cuda']['compiled']
    True
    """
    from . import __version__, emulation

    facts = _C._cpu_facts()
    blas_config = facts["blas_config"]
    parts = blas_config.split()
    cuda: dict[str, Any] = {
        "compiled": bool(BUILD_INFO.get("cuda_compiled")),
        "toolkit": BUILD_INFO.get("cuda_toolkit"),
        "archs": BUILD_INFO.get("cuda_archs", ""),
        "version": BUILD_INFO.get("cuda_version"),  # the toolkit it was built with: the runtime it needs
        "build_reason": BUILD_INFO.get("cuda_reason", "unknown"),
        "available": _C.num_gpus() > 0,
        "num_gpus": _C.num_gpus(),
        "reason": _C._cuda_reason(),
        "emulated": emulation.settings() or False,
        "emulation_built": bool(BUILD_INFO.get("cuda_emu_compiled")),
    }
    cuda_mod = _cuda_module()
    cuda["runtime_version"] = cuda_mod.runtime_version() if cuda_mod else None
    libs = _cuda_libs.report()
    cuda["driver_version"] = cuda_mod.driver_version() if cuda_mod else libs["driver_version"]
    cuda["libraries"] = libs["libraries"]  # where libcudart, libcublasLt, libcublas came from
    return {
        "version": __version__,
        "compiler": BUILD_INFO.get("compiler", "unknown"),
        "sanitize": bool(BUILD_INFO.get("sanitize")),
        "machine": platform.machine(),
        "simd": facts["simd"],
        "blas": {
            "name": parts[0] if parts else "OpenBLAS",
            "version": parts[1] if len(parts) > 1 else "unknown",
            "config": blas_config,
            "core": facts["blas_core"],
            "core_forced": _FORCED_BLAS_CORE,
            "threads": _C.get_num_threads(),
        },
        "threads": _C.get_num_threads(),
        "cuda": cuda,
    }


def device_info(dev: _C.Device) -> dict[str, Any]:
    """Facts about one device (called by Device.info()).

    A GPU's come from its backend (name, compute capability, memory, clocks, versions); the
    host, whose backend has no such entry, is described from the OS and the CPU backend.
    """
    props = _C._device_props(dev)
    if props is not None:
        if dev.emulated:  # its clocks and bus are an H200's figures, which it does not have
            return {**props, "device": str(dev), "emulated": True}
        return {**props, "device": str(dev)}
    facts = _C._cpu_facts()
    return {
        "device": str(dev),
        "model": _cpu_model(),
        "cores": _cores(),
        "threads": _C.get_num_threads(),
        "simd": facts["simd"],
        "blas": facts["blas_config"],
    }


def memory_stats(device=None) -> dict[str, int]:
    """Memory gpudev holds on `device` (default: the CPU).

    Keys: allocated_bytes (live arrays), reserved_bytes (held from the system, including
    cached blocks: the GPU pool's, and on the CPU large freed blocks kept for reuse),
    peak_allocated_bytes, allocations (live blocks).

    >>> gd.memory_stats('cpu')['allocated_bytes'] >= 0
    True
    """
    return _C._memory_stats(device)


def empty_cache(device=None) -> None:
    """Give memory cached by gpudev back to the system: a GPU pool's to the driver, and on
    the CPU the freed blocks of 64 KiB and more kept for reuse.

    >>> gd.empty_cache('cpu')
    """
    _C._empty_cache(device)


def set_tf32(enabled: bool) -> None:
    """Allow (True) or forbid (False, the default) TF32 tensor cores in float32 matmuls on GPUs.

    TF32 keeps float32's range but only 10 mantissa bits: faster, less exact.

    >>> gd.set_tf32(False)
    """
    cuda_mod = _cuda_module()
    if cuda_mod is not None:  # without a GPU backend nothing uses TF32
        cuda_mod.set_tf32(bool(enabled))
