"""Devices, dtypes, the Array type and errors (csrc/core/device.c, sync.c, runtime.c, dtypes.c,
array_type.c; gpudev/_devices.py, _info.py, cuda.py), the CPU's threads, and the array API's
dtype functions (gpudev/_array_api.py, declared there) and namespace facts."""

from __future__ import annotations

from .. import _C, _array_api, _devices, _info, cuda
from . import declare, declare_modules

declare("devices", _C, "Array Device device=Device CudaError DeviceMismatchError DeviceUnavailableError "
        "GpudevError OutOfMemoryError cpu gpu try_gpu try_all_gpus num_gpus cuda_available synchronize "
        "get_num_threads set_num_threads float32 float64 int32 int64 bool bool_=bool")
declare("devices", _devices, "device_label")
declare("devices", _info, "build_info empty_cache memory_stats set_tf32")
declare("devices", _array_api, "__array_api_version__ __array_namespace_info__")
declare_modules("devices", cuda)
