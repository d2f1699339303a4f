"""Where the CUDA libraries come from: found and loaded when gpudev starts, before gpudev._cuda.

gpudev._cuda names libcudart, libcublas (and, through it, libcublasLt) by SONAME only, with
no path into the machine that built it, so a wheel runs wherever those libraries are. This
module finds each one, for the CUDA major the build needs, in this order, and loads it with
RTLD_GLOBAL, so that the module's SONAMEs bind to it when it is imported:

1. the process: already loaded (by torch, CuPy...): one copy of a runtime per process;
2. NVIDIA's pip packages on sys.path: nvidia/cu13/lib (CUDA 13's layout), else
   nvidia/cuda_runtime/lib and nvidia/cublas/lib (CUDA 12's): what `pip install gpudev[cu13]`
   (or [cu12]) installs, and what torch's CUDA wheels bring;
3. the active conda environment ($CONDA_PREFIX/lib);
4. the toolkit: $CUDA_HOME, $CUDA_PATH, /usr/local/cuda (lib64, lib, targets/<arch>/lib);
5. the system loader (LD_LIBRARY_PATH, ldconfig's cache, the default directories).

NVIDIA's cuda-pathfinder searches much the same places, but it accepts any major it knows
(libcudart.so.13 or .12) and asks the system loader before CUDA_HOME; the backend needs the one
major it was compiled for, so the order is written here, in one place, with no dependency.

Then the driver: `cudaDriverGetVersion` of the runtime found must be at least the build's CUDA
version. When a library is missing or the driver is too old, gpudev runs on the CPU and says
so in one sentence (`problem()`, shown by gd.build_info() and `python -m gpudev info`).
"""

from __future__ import annotations

import ctypes
import os
import platform
import re
import sys
from typing import Any

# load order: libcublas needs libcublasLt, which must be in the process first
LIBRARIES = ("cudart", "cublasLt", "cublas")
_PIP_DIRS = {
    "cudart": ("nvidia/cu{major}/lib", "nvidia/cuda_runtime/lib"),
    "cublasLt": ("nvidia/cu{major}/lib", "nvidia/cublas/lib"),
    "cublas": ("nvidia/cu{major}/lib", "nvidia/cublas/lib"),
}
# the pip extras that bring a major's runtime and cuBLAS (pyproject.toml)
EXTRAS = {12: "cu12", 13: "cu13"}
ORDER = ("the process", "NVIDIA's pip packages", "conda", "the CUDA toolkit", "the system loader")

_state: dict[str, Any] = {"libraries": {}, "problem": None, "driver_version": None, "needs": None}


def soname(name: str, major: int) -> str:
    return f"lib{name}.so.{major}"


def build_major(build_info: dict[str, Any]) -> int | None:
    """The CUDA major the backend was linked for: recorded by setup.py, else read from the
    SONAME the module itself needs (builds that predate the record)."""
    version = build_info.get("cuda_version")
    if version:
        return int(str(version).split(".")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    for entry in sorted(os.listdir(here)):
        if entry.startswith("_cuda.") and entry.endswith(".so"):
            with open(os.path.join(here, entry), "rb") as f:
                m = re.search(rb"libcudart\.so\.(\d+)\x00", f.read(1 << 20))
            return int(m.group(1)) if m else None
    return None


def _mapped_path(name: str) -> str | None:
    """The file of a loaded library whose name starts with `name`, from /proc/self/maps."""
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.split(None, 5)[-1].strip()
                if os.path.basename(path).startswith(name):
                    return path
    except OSError:
        pass
    return None


def _in_process(name: str) -> str | None:
    try:  # RTLD_NOLOAD: succeeds only when a library with that SONAME is loaded already
        ctypes.CDLL(name, mode=os.RTLD_NOLOAD)
    except OSError:
        return None
    return _mapped_path(name) or name


def _toolkit_dirs() -> list[str]:
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    target = f"targets/{platform.machine().replace('aarch64', 'sbsa')}-linux/lib"
    return [os.path.join(r, d) for r in dict.fromkeys(filter(None, roots)) for d in ("lib64", "lib", target)]


def candidates(name: str, major: int) -> list[tuple[str, str]]:
    """(origin, path) for every file that could be `name`, in the search order (steps 2-4)."""
    so = soname(name, major)
    found = [("pip", os.path.join(p, d.format(major=major), so)) for p in sys.path if p
             for d in _PIP_DIRS[name]]
    if os.environ.get("CONDA_PREFIX"):
        found.append(("conda", os.path.join(os.environ["CONDA_PREFIX"], "lib", so)))
    found += [("toolkit", os.path.join(d, so)) for d in _toolkit_dirs()]
    return [(origin, path) for origin, path in found if os.path.isfile(path)]


def find_and_load(name: str, major: int) -> dict[str, str] | None:
    """Load `name` for CUDA `major` from the first place that has it; {origin, path} or None."""
    so = soname(name, major)
    path = _in_process(so)
    if path:
        return {"soname": so, "origin": "process", "path": path}
    for origin, path in candidates(name, major):
        try:
            ctypes.CDLL(path, mode=os.RTLD_GLOBAL)
        except OSError:  # wrong architecture, a broken file: try the next place
            continue
        return {"soname": so, "origin": origin, "path": path}
    try:
        ctypes.CDLL(so, mode=os.RTLD_GLOBAL)
    except OSError:
        return None
    return {"soname": so, "origin": "system", "path": _mapped_path(so) or so}


def driver_version(cudart_path: str) -> int:
    """The CUDA version the driver supports (e.g. 12040), 0 without a driver."""
    version = ctypes.c_int(0)
    try:
        cudart = ctypes.CDLL(cudart_path)
        status = cudart.cudaDriverGetVersion(ctypes.byref(version))
        if status != 0 and hasattr(cudart, "cudaGetLastError"):
            cudart.cudaGetLastError()  # leave no error behind for the backend's first check
    except (OSError, AttributeError):
        return 0
    return version.value if status == 0 else 0


def _version_text(v: int) -> str:
    return f"{v // 1000}.{v % 1000 // 10}"


def _fix(major: int) -> str:
    extra = EXTRAS.get(major)
    return f"pip install gpudev[{extra}]" if extra else "install them from NVIDIA's pip packages or the toolkit"


def missing_sentence(so: str, major: int) -> str:
    return (f"gpudev runs on the CPU: {so} was not found (searched {', '.join(ORDER)}); this build "
            f"needs CUDA {major}'s runtime and cuBLAS: {_fix(major)}")


def old_driver_sentence(driver: int, major: int) -> str:
    extra = EXTRAS.get(driver // 1000)
    return (f"gpudev runs on the CPU: the NVIDIA driver supports CUDA {_version_text(driver)}, and this "
            f"build needs CUDA {major}.0 or newer: update the driver, or install a gpudev built for "
            f"CUDA {driver // 1000}" + (f" (pip install gpudev[{extra}])" if extra else ""))


def no_gpu_sentence() -> str:
    """Why a backend that loaded counts zero GPUs: no driver, or none of its GPUs visible."""
    needs, driver = _state["needs"] or 0, _state["driver_version"] or 0
    if driver == 0:
        return ("gpudev runs on the CPU: no NVIDIA driver was found (libcuda.so.1)"
                + (f"; this build needs one for CUDA {_version_text(needs)} or newer" if needs else ""))
    return (f"gpudev runs on the CPU: the NVIDIA driver (CUDA {_version_text(driver)}) sees no GPU "
            "(check CUDA_VISIBLE_DEVICES and nvidia-smi)")


def prepare(build_info: dict[str, Any]) -> str | None:
    """Find and load the libraries the CUDA backend needs; None when it may be imported, else
    the one sentence that says why gpudev runs on the CPU (kept for problem())."""
    major = build_major(build_info)
    if major is None:
        return None  # nothing to look for: the import itself will tell
    _state["needs"] = major * 1000
    for name in LIBRARIES:
        found = find_and_load(name, major)
        if found is None:
            _state["problem"] = missing_sentence(soname(name, major), major)
            return _state["problem"]
        _state["libraries"][name] = found
    driver = driver_version(_state["libraries"]["cudart"]["path"])
    _state["driver_version"] = driver
    if 0 < driver < major * 1000:  # no driver at all (0) is the backend's to report: zero GPUs
        _state["problem"] = old_driver_sentence(driver, major)
    return _state["problem"]


def problem() -> str | None:
    """The sentence prepare() gave, None when the libraries and the driver are fine."""
    return _state["problem"]


def report() -> dict[str, Any]:
    """Where each library came from, the driver's CUDA version, the one the build needs."""
    return {"libraries": {k: dict(v) for k, v in _state["libraries"].items()},
            "driver_version": _state["driver_version"], "needs": _state["needs"],
            "problem": _state["problem"]}
