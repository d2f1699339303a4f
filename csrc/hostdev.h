/* hostdev.h - GD_HOSTDEV, the qualifier of the small functions that the CPU and the CUDA
 * backends share (ewise_math.h, window_math.h, philox.h): inline C functions in the C build,
 * __host__ __device__ functions when nvcc (or the emulated GPUs' build) compiles them as CUDA
 * C++, so that one body runs on every device.
 */
#ifndef GPUDEV_HOSTDEV_H
#define GPUDEV_HOSTDEV_H

#ifdef __CUDACC__
#define GD_HOSTDEV __host__ __device__ __forceinline__
#else
#define GD_HOSTDEV static inline
#endif

#endif /* GPUDEV_HOSTDEV_H */
