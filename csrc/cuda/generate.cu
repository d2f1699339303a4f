/* generate.cu - the CUDA backend's generators: arange and the Philox random kernel (the same
 * philox.h as the CPU backend, so one seed gives the same rand numbers, bit for bit, as the
 * CPU, and randn numbers within a few ulps of the CPU's: see philox.h).
 */
#include "backend_cuda.cuh"
#include "philox.h"

#include <type_traits>

namespace {

/* ------------------------------------------------------------------------------------------
 * arange
 * ---------------------------------------------------------------------------------------- */

template <class T> __global__ void arange_kernel(T *out, int64_t n, gd_scalar start, gd_scalar step)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        if constexpr (gd_is_int<T>) { /* int32: the core checks that every value fits */
            out[i] = (T)(int64_t)((uint64_t)start.i + (uint64_t)i * (uint64_t)step.i);
        } else {
            /* explicit roundings: a fused multiply-add would differ from the CPU in the last bit */
            out[i] = (T)__dadd_rn(start.f, __dmul_rn((double)i, step.f));
        }
    }
}

template <class T> int launch_arange(void *out, int64_t n, gd_scalar start, gd_scalar step, gd_cuda_device *dev, gd_error *err)
{
    arange_kernel<T><<<gd_cuda_blocks(dev, n, GD_CUDA_THREADS), GD_CUDA_THREADS, 0, dev->stream>>>((T *)out, n, start,
                                                                                                   step);
    GD_CHECK_LAUNCH();
    return GD_OK;
}

/* ------------------------------------------------------------------------------------------
 * random: one Philox block per thread, laid out exactly as philox.h says
 * ---------------------------------------------------------------------------------------- */

template <class T> __global__ void random_kernel(T *out, int64_t n, int normal, uint64_t seed, uint64_t offset)
{
    constexpr int per = sizeof(T) == 4 ? 4 : 2;
    const int64_t blocks = (n + per - 1) / per;
    for (int64_t b = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; b < blocks; b += (int64_t)gridDim.x * blockDim.x) {
        T v[per];
        if constexpr (per == 4) gd_philox_block_f32(v, normal, offset + (uint64_t)b, seed);
        else gd_philox_block_f64(v, normal, offset + (uint64_t)b, seed);
        const int64_t base = b * per;
#pragma unroll
        for (int j = 0; j < per; j++)
            if (base + j < n) out[base + j] = v[j];
    }
}

template <class T>
int launch_random(void *out, int64_t n, int normal, uint64_t seed, uint64_t offset, gd_cuda_device *dev, gd_error *err)
{
    const int64_t per = sizeof(T) == 4 ? 4 : 2, blocks = (n + per - 1) / per;
    random_kernel<T><<<gd_cuda_blocks(dev, blocks, GD_CUDA_THREADS), GD_CUDA_THREADS, 0, dev->stream>>>(
        (T *)out, n, normal, seed, offset);
    GD_CHECK_LAUNCH();
    return GD_OK;
}

/* The launcher tables, [dtype] (one row); random numbers are floats only. */
using arange_launch = int (*)(void *out, int64_t n, gd_scalar start, gd_scalar step, gd_cuda_device *dev,
                              gd_error *err);
using random_launch = int (*)(void *out, int64_t n, int normal, uint64_t seed, uint64_t offset, gd_cuda_device *dev,
                              gd_error *err);

struct pick_arange {
    template <int, class T> static constexpr arange_launch entry()
    {
        if constexpr (gd_is_bool<T>) return nullptr;
        else return launch_arange<T>;
    }
};

struct pick_random {
    template <int, class T> static constexpr random_launch entry()
    {
        if constexpr (!std::is_floating_point<T>::value) return nullptr;
        else return launch_random<T>;
    }
};

using arange_launchers = gd_launch_table<arange_launch, 1, pick_arange>;
using random_launchers = gd_launch_table<random_launch, 1, pick_random>;

} // namespace

/* ------------------------------------------------------------------------------------------
 * vtable entries
 * ---------------------------------------------------------------------------------------- */

int gd_cuda_arange(void *out, gd_dtype dtype, gd_scalar start, gd_scalar step, int64_t n, int device, gd_error *err)
{
    if (n <= 0) return GD_OK;
    if ((unsigned)dtype >= GD_NUM_DTYPES || dtype == GD_BOOL)
        return gd_set_error(err, GD_ERR_VALUE, "cuda arange: unsupported dtype %d", (int)dtype);
    gd_cuda_device *dev;
    int rc = gd_cuda_enter(&dev, device, err);
    if (rc != GD_OK) return rc;
    return arange_launchers::at[0][dtype](out, n, start, step, dev, err);
}

int gd_cuda_random(void *out, gd_dtype dtype, gd_random_kind kind, uint64_t seed, uint64_t offset, int64_t n,
                   int device, gd_error *err)
{
    if (n <= 0) return GD_OK;
    const random_launch launch = (unsigned)dtype < GD_NUM_DTYPES ? random_launchers::at[0][dtype] : nullptr;
    if (!launch) return gd_set_error(err, GD_ERR_VALUE, "cuda random: dtype %d is not a float dtype", (int)dtype);
    gd_cuda_device *dev;
    int rc = gd_cuda_enter(&dev, device, err);
    if (rc != GD_OK) return rc;
    return launch(out, n, kind == GD_RAND_NORMAL, seed, offset, dev, err);
}
