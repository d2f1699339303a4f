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
from ._C import (  # noqa: E402,F401
    Array,
    CudaError,
    Device,
    DeviceMismatchError,
    DeviceUnavailableError,
    GpudevError,
    OutOfMemoryError,
    allclose,
    arange,
    argmax,
    argmin,
    array,
    asarray,
    concatenate,
    cpu,
    cuda_available,
    empty,
    float32,
    float64,
    full,
    get_num_threads,
    gpu,
    int32,
    int64,
    manual_seed,
    matmul,
    nonzero,
    norm,
    num_gpus,
    ones,
    rand,
    randn,
    set_num_threads,
    stack,
    synchronize,
    try_all_gpus,
    try_gpu,
    where,
    zeros,
)

__version__ = "0.2.0"

# The elementwise module functions, one per row of the op lists in csrc/tables.h flagged FN
# (gd.exp, gd.maximum, ...), with their aliases (gd.pow); _C._ops describes every row.
_OP_FUNCTIONS = [n for op in _C._ops if op.function for n in (op.name, *op.aliases)]
globals().update({n: getattr(_C, n) for n in _OP_FUNCTIONS})


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

from . import _array, _index, emulation  # noqa: E402
from ._array_api import (  # noqa: E402,F401
    __array_api_version__,
    __array_namespace_info__,
    astype,
    can_cast,
    conj,
    e,
    finfo,
    from_dlpack,
    iinfo,
    imag,
    inf,
    isdtype,
    isinf,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    nan,
    newaxis,
    pi,
    positive,
    real,
    result_type,
)
from ._clip import clamp, clip  # noqa: E402
from ._creation import (  # noqa: E402
    empty_like, eye, full_like, linspace, meshgrid, ones_like, tril, triu, zeros_like,
)
from ._manipulation import (  # noqa: E402
    broadcast_arrays, broadcast_to, concat, expand_dims, flip, matrix_transpose, moveaxis,
    permute_dims, reshape, roll, squeeze, tile, unstack,
)
from ._statistics import (  # noqa: E402
    argsort, count_nonzero, cumulative_prod, cumulative_sum, diff, mean, prod, repeat, searchsorted,
    sort, std, take, take_along_axis, unique_all, unique_counts, unique_inverse, unique_values, var,
)
from ._composite import isfinite, isnan, reciprocal, signbit  # noqa: E402
from ._softmax import log_softmax, softmax  # noqa: E402
from .autograd import enable_grad, is_grad_enabled, no_grad, set_grad_enabled  # noqa: E402

_array.install()  # every Array member written in Python, from its one home
_index.install()
tensor = array  # PyTorch's spelling of gd.array
device = Device  # PyTorch's spelling of gd.Device: gd.device('cuda:0'), gd.device('cuda', 0)
from ._torch import bmm, cat, from_numpy, mm, normal, randint  # noqa: E402

from ._devices import device_label  # noqa: E402
from ._pickle import map_location  # noqa: E402
from ._info import build_info, empty_cache, memory_stats, set_tf32  # noqa: E402
from .io import load, save  # noqa: E402
from .timing import BenchmarkResult, Timer, benchmark  # noqa: E402
from .latency import latency_table  # noqa: E402
from .trace import Trace, trace  # noqa: E402
from .strict import StrictModeError, StrictModeWarning, strict  # noqa: E402
from . import cuda, fft, linalg, nn, optim, utils  # noqa: E402
from . import _dask_watch  # noqa: E402

_dask_watch.watch()
from .linalg import tensordot, vecdot  # noqa: E402


def __getattr__(name: str):
    # exercises and plots pull in matplotlib, testing pytest; load them only when asked for
    if name in ("exercises", "plots", "testing"):
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'gpudev' has no attribute {name!r}")


__all__ = [
    "Array", "BenchmarkResult", "all", "any", "bool", "bool_", "CudaError", "Device", "DeviceMismatchError",
    "DeviceUnavailableError", "GpudevError", "OutOfMemoryError", "StrictModeError", "StrictModeWarning", "Timer",
    "Trace", "allclose", "arange", "array", "asarray", "benchmark", "build_info", "concatenate", "cpu", "cuda_available",
    "device_label", "empty", "latency_table",
    "empty_cache", "empty_like", "enable_grad", "float32", "float64", "from_dlpack", "full", "full_like",
    "get_num_threads", "gpu", "int32", "int64", "is_grad_enabled", "isfinite", "isnan", "load", "log_softmax",
    "reciprocal", "signbit",
    "manual_seed", "matmul", "memory_stats", "nn", "no_grad", "norm", "num_gpus", "ones", "ones_like",
    "rand", "randn", "save", "set_grad_enabled", "set_num_threads", "set_tf32", "softmax", "stack", "strict",
    "synchronize", "tensor", "trace", "try_all_gpus", "try_gpu", "zeros", "zeros_like", "clamp", "clip",
    "argmax", "argmin", "nonzero", "where", "bmm", "cat", "cuda", "device", "from_numpy", "max",
    "min", "mm", "normal", "optim", "randint", "utils", "map_location",
    *_OP_FUNCTIONS,
    # the array API standard's names (gpudev/_array_api.py, _manipulation.py, _statistics.py)
    "__array_api_version__", "__array_namespace_info__", "argsort", "astype",
    "broadcast_arrays", "broadcast_to", "can_cast", "concat", "conj", "count_nonzero", "cumulative_prod",
    "cumulative_sum", "diff", "e", "expand_dims", "eye", "fft", "finfo", "flip",
    "iinfo", "imag", "inf", "isdtype", "isinf", "linalg", "linspace", "logical_and", "logical_not", "logical_or", "logical_xor",
    "matrix_transpose", "mean", "meshgrid", "moveaxis", "nan", "newaxis",
    "permute_dims", "pi", "positive", "prod", "real", "repeat", "reshape", "result_type",
    "roll", "searchsorted", "sort", "squeeze", "std", "sum", "take",
    "take_along_axis", "tensordot", "tile", "tril", "triu", "unique_all", "unique_counts",
    "unique_inverse", "unique_values", "unstack", "var", "vecdot",
    "compile", "jit",  # PyTorch's compilers, refused: gpudev runs eagerly (gpudev/jit.py)
]

# NumPy's names, bound last so the code above still sees Python's own any, all and bool
from ._C import all, any, bool  # noqa: E402,A004
from ._torch import max, min  # noqa: E402,A004
from ._statistics import sum  # noqa: E402,A004
from . import jit  # noqa: E402
from .jit import compile  # noqa: E402,A004  (PyTorch's torch.compile; Python's stays builtins.compile)

bool_ = bool
