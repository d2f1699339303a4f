/* cast.cu - the CUDA backend's astype: dtype conversions as C casts (float -> int64 or int32
 * of NaN or out-of-range values gives INT64_MIN or INT32_MIN, as NumPy does on x86-64).
 */
#include "backend_cuda.cuh"

#include <type_traits>

namespace {

/* ------------------------------------------------------------------------------------------
 * astype
 * ---------------------------------------------------------------------------------------- */

/* C casts, except that float -> int64 or int32 of NaN or of a value outside the integer's range
 * (undefined behaviour in C) gives INT64_MIN or INT32_MIN, as NumPy does on x86-64; int64 ->
 * int32 keeps the low 32 bits. */
template <class To, class From> __device__ __forceinline__ To convert(From x)
{
    if constexpr (std::is_same<To, int64_t>::value && std::is_floating_point<From>::value) {
        const From lo = (From)-9223372036854775808.0, hi = (From)9223372036854775808.0; /* -2^63, 2^63 */
        return (x >= lo && x < hi) ? (int64_t)x : INT64_MIN; /* NaN fails both comparisons */
    } else if constexpr (std::is_same<To, int32_t>::value && std::is_floating_point<From>::value) {
        const From lo = (From)-2147483648.0, hi = (From)2147483648.0; /* -2^31, 2^31 */
        return (x >= lo && x < hi) ? (int32_t)x : INT32_MIN;
    } else if constexpr (std::is_same<To, int32_t>::value && std::is_same<From, int64_t>::value) {
        return (int32_t)(uint32_t)(uint64_t)x;
    } else {
        return (To)x;
    }
}

template <class To, class From> __global__ void astype_kernel(To *out, const From *in, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        out[i] = convert<To>(gd_load(in + i));
}

template <class To, class From> int launch_astype(void *out, const void *in, int64_t n, gd_cuda_device *dev, gd_error *err)
{
    astype_kernel<To, From><<<gd_cuda_blocks(dev, n, GD_CUDA_THREADS), GD_CUDA_THREADS, 0, dev->stream>>>(
        (To *)out, (const From *)in, n);
    GD_CHECK_LAUNCH();
    return GD_OK;
}

/* The launcher table, [out dtype][in dtype]; the diagonal is a plain copy. */
using astype_launch = int (*)(void *out, const void *in, int64_t n, gd_cuda_device *dev, gd_error *err);

struct pick_astype {
    template <int TO, class From> static constexpr astype_launch entry()
    {
        if constexpr (std::is_same<gd_ctype<TO>, From>::value) return nullptr;
        else return launch_astype<gd_ctype<TO>, From>;
    }
};

using astype_launchers = gd_launch_table<astype_launch, GD_NUM_DTYPES, pick_astype>;

} // namespace

/* ------------------------------------------------------------------------------------------
 * vtable entries
 * ---------------------------------------------------------------------------------------- */

int gd_cuda_astype(void *out, gd_dtype out_dtype, const void *in, gd_dtype in_dtype, int64_t n, int device,
                   gd_error *err)
{
    if (n <= 0) return GD_OK;
    if ((unsigned)out_dtype >= GD_NUM_DTYPES || (unsigned)in_dtype >= GD_NUM_DTYPES)
        return gd_set_error(err, GD_ERR_VALUE, "cuda astype: unknown dtype %d or %d", (int)out_dtype, (int)in_dtype);
    gd_cuda_device *dev;
    int rc = gd_cuda_enter(&dev, device, err);
    if (rc != GD_OK) return rc;
    if (out_dtype == in_dtype) {
        GD_CHECK(cudaMemcpyAsync(out, in, (size_t)n * gd_dtype_size(in_dtype), cudaMemcpyDeviceToDevice, dev->stream));
        return GD_OK;
    }
    return astype_launchers::at[out_dtype][in_dtype](out, in, n, dev, err);
}
