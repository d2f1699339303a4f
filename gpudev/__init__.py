"""gpudev: learn and measure GPU computing.

Devices, arrays that live on one device, explicit copies between devices, fast matrix
products and reductions on the CPU (OpenBLAS) and on NVIDIA GPUs (cuBLAS), and timing that
is right for asynchronous GPU work.

>>> import gpudev as gd
>>> x = gd.ones((2, 3), device=gd.try_gpu())
>>> (x @ x.T).sum().item()
18.0
"""

from __future__ import annotations

# OpenBLAS comes from the scipy-openblas32 wheel; loading it first makes its library
# available to the C core (as NumPy's own development builds do).
import scipy_openblas32 as _openblas

_openblas.get_openblas_config()

from . import _C  # noqa: E402

__version__ = "0.2.0"


def _load_cuda() -> None:
    """Hand the CUDA backend to the core (the emulated one when GPUDEV_EMULATE_GPUS is set:
    the two never mix), or record why there is none."""
    from . import emulation

    if emulation.requested():
        _C._register_cuda(emulation.load().backend, True)
        return
    try:
        from ._build_info import BUILD_INFO
    except ImportError:  # a build without setup.py's record
        BUILD_INFO = {"cuda_compiled": False, "cuda_reason": "build information missing"}
    if not BUILD_INFO.get("cuda_compiled"):
        _C._set_cuda_unavailable(f"not compiled: {BUILD_INFO.get('cuda_reason', 'unknown')}")
        return
    from . import _cuda_libs

    problem = _cuda_libs.prepare(BUILD_INFO)  # loads libcudart and libcublas, checks the driver
    if problem:
        _C._set_cuda_unavailable(problem)
        return
    try:
        from . import _cuda
    except ImportError as exc:  # e.g. a library of the wrong version
        _C._set_cuda_unavailable(f"compiled, but gpudev._cuda failed to import: {exc}")
        return
    _C._register_cuda(_cuda.backend)
    if _C.num_gpus() == 0:  # the core asks the backend's table
        _C._set_cuda_unavailable(_cuda_libs.no_gpu_sentence())


_load_cuda()

from . import _api, _array, emulation  # noqa: E402

# the public names, each declared once: beside its definition (@public), or in its family's
# module of gpudev/_api (what C makes, classes, constants, subpackages). The array families
# first: the subpackages that packages.py declares use them as gd.<name> while they load
_api.load("autograd", "creation", "devices", "elementwise", "index", "random", "reduce", "shape", "sort")
_array.install()  # every Array member written in Python, from its one home
_api.index.install()  # where the core hands keys with several index arrays
globals().update(_api.namespace())
_api.load("fft", "io", "linalg", "measure", "packages")
globals().update(_api.namespace())
__all__ = sorted(_api.namespace())

from . import _dask_watch  # noqa: E402

_dask_watch.watch()


def __getattr__(name: str):
    # exercises and plots pull in matplotlib, testing pytest; load them only when asked for
    if name in ("exercises", "plots", "testing"):
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'gpudev' has no attribute {name!r}")
