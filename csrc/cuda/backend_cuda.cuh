/* backend_cuda.cuh - internals of the CUDA backend shared by its .cu files: per-device state
 * (stream, memory pool, cuBLAS handle, counters), the device guard, the one error-check macro,
 * launch-size helpers and the vtable entries each file defines. Nothing here is seen by
 * gpudev._C, which only receives the finished gd_backend table through a capsule.
 */
#ifndef GPUDEV_BACKEND_CUDA_CUH
#define GPUDEV_BACKEND_CUDA_CUH

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <type_traits>
#include <utility>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "gpudev.h"

/* The most GPUs gpudev addresses; equal to GD_MAX_GPUS in core.h (a 64-bit mask of busy GPUs). */
#define GD_CUDA_MAX_DEVICES 64

/* Threads per block for the 1-D kernels: a multiple of the warp, small enough that eight
 * blocks fill the 2048 thread slots of an sm_80 or sm_90 multiprocessor. */
#define GD_CUDA_THREADS 256

/* ------------------------------------------------------------------------------------------
 * per-device state
 * ---------------------------------------------------------------------------------------- */

/* Created on first use by whichever thread gets there first; never destroyed (the driver
 * reclaims everything at exit, and destroying streams from atexit races CUDA's own teardown). */
struct gd_cuda_device {
    std::mutex mutex;              /* guards creation and every use of `blas` */
    std::atomic<bool> ready{false};
    int index = -1;                /* this device's number */
    cudaStream_t stream = nullptr; /* non-blocking: never waits for the legacy default stream */
    cudaMemPool_t pool = nullptr;  /* gpudev's own pool (not the device's current one, which
                                    * another library may have replaced) */
    cudaEvent_t order = nullptr;   /* orders this stream against another GPU's (peer copies) */
    cublasHandle_t blas = nullptr; /* created on the first matmul, bound to `stream` */
    void *blas_workspace = nullptr; /* from `pool`, for the life of `blas` */
    int blas_tf32 = 0;             /* math mode currently set on `blas` */
    int sm_count = 0;
    int cc_major = 0;              /* compute capability */
    size_t max_pitch = 0;          /* largest row pitch cudaMemcpy2DAsync accepts */
    std::atomic<int64_t> allocated_bytes{0};
    std::atomic<int64_t> peak_allocated_bytes{0};
    std::atomic<int64_t> allocations{0};
};

/* The state of `device` (index already range-checked by the caller or not: both fine). */
gd_cuda_device *gd_cuda_device_slot(int device);

/* Make `device` the calling thread's current device and its state ready; *out = its state.
 * GD_ERR_DEVICE_UNAVAILABLE when there is no such device or no driver. Table entries run
 * inside a gd_cuda_device_guard (backend_cuda.cu), which puts the thread's device back. */
int gd_cuda_enter(gd_cuda_device **out, int device, gd_error *err);

/* Saves the calling thread's current device and restores it when it goes out of scope:
 * gpudev's calls leave the device that PyTorch, CuPy or the user's own code made current in
 * this thread as it was. Errors while restoring are cleared, never reported (a destructor;
 * they also occur legitimately while CUDA tears down at exit). */
class gd_cuda_device_guard {
  public:
    gd_cuda_device_guard();
    ~gd_cuda_device_guard();
    gd_cuda_device_guard(const gd_cuda_device_guard &) = delete;
    gd_cuda_device_guard &operator=(const gd_cuda_device_guard &) = delete;

  private:
    int saved_;
};

/* Whether TF32 tensor cores may be used by float32 matmuls (off by default). */
extern std::atomic<bool> gd_cuda_tf32;

/* Whether the environment variable `name` is "1", read once per name by its caller (a static
 * local): the switches below, which let tools/gpu_hw_check.py time both sides of a choice
 * that only hardware can make, in a process of its own. */
bool gd_cuda_env_flag(const char *name);

/* Whether kernels over `n` elements may split an element index into coordinates with 32-bit
 * divisions (n fits in 32 bits), a few instructions each, where a 64-bit division is a
 * software routine. GPUDEV_CUDA_WIDE_INDEX=1 keeps the 64-bit path for every size. */
bool gd_cuda_narrow_index(int64_t n);

/* ------------------------------------------------------------------------------------------
 * errors: every CUDA and cuBLAS call goes through GD_CHECK
 * ---------------------------------------------------------------------------------------- */

/* Fill *err for a failed call (call text, error name and description, file:line) and return
 * GD_ERR_CUDA. Clears CUDA's per-thread last error so a later launch check does not report
 * this failure a second time. */
int gd_cuda_fail(gd_error *err, cudaError_t status, const char *call, const char *file, int line);
int gd_cuda_fail(gd_error *err, cublasStatus_t status, const char *call, const char *file, int line);

static inline bool gd_cuda_failed(cudaError_t status) { return status != cudaSuccess; }
static inline bool gd_cuda_failed(cublasStatus_t status) { return status != CUBLAS_STATUS_SUCCESS; }

/* Run a CUDA runtime or cuBLAS call; on failure fill `err` (which must be in scope) and
 * return the status from the enclosing function. */
#define GD_CHECK(call)                                                                     \
    do {                                                                                   \
        auto gd_check_status_ = (call);                                                    \
        if (gd_cuda_failed(gd_check_status_))                                              \
            return gd_cuda_fail(err, gd_check_status_, #call, __FILE__, __LINE__);         \
    } while (0)

/* After every kernel launch: a bad launch configuration is reported here, at the launch,
 * instead of as a mystery at the next synchronization. */
#define GD_CHECK_LAUNCH() GD_CHECK(cudaGetLastError())

/* ------------------------------------------------------------------------------------------
 * launch sizes
 * ---------------------------------------------------------------------------------------- */

/* Blocks for a grid-stride loop over n items with `threads` per block: one wave that fills
 * every multiprocessor (more blocks only add scheduling; on GPUs with fewer than 2048
 * resident threads per multiprocessor the rest wait for a second wave), fewer when n is
 * small. n >= 1. */
static inline unsigned gd_cuda_blocks(const gd_cuda_device *dev, int64_t n, int threads)
{
    int64_t blocks = (n + threads - 1) / threads;
    int64_t wave = (int64_t)dev->sm_count * (2048 / threads);
    if (wave < 1) wave = 1;
    return (unsigned)(blocks < wave ? blocks : wave);
}

/* Chunks of a reduction of `len` elements along each of `items` independent work items, so
 * that about `target` blocks run (argreduce.cu: a wave, sm_count * 2048 / GD_CUDA_THREADS;
 * reduce.cu: a constant, so that float sums add in the same order on every GPU), each chunk at
 * least `min_chunk` long and a multiple of 64 (a chunk of a contiguous row then starts on a
 * 16-byte boundary when the row does). *splits = chunks per item; returns the chunk length.
 * Long and few (one long row, two long columns) gives many chunks, whose partial results a
 * second pass merges; many items give one chunk each. */
static inline int64_t gd_cuda_plan_chunk(int64_t *splits, int64_t items, int64_t len, int64_t target,
                                         int64_t min_chunk)
{
    int64_t s = 1;
    if (items < target) {
        s = (target + items - 1) / items;
        const int64_t by_size = (len + min_chunk - 1) / min_chunk;
        if (s > by_size) s = by_size;
        if (s < 1) s = 1;
    }
    int64_t chunk = (len + s - 1) / s;
    chunk = (chunk + 63) / 64 * 64;
    *splits = (len + chunk - 1) / chunk;
    return chunk;
}

/* Column kernels (the reduced axis strided by inner > 1) work on tiles of TX = 2^bits
 * adjacent columns by GD_CUDA_THREADS / TX row lanes, so that a warp's loads are coalesced
 * whatever inner is: TX = inner rounded up to a power of two, at most 32. */
static inline int gd_cuda_col_tile_bits(int64_t inner)
{
    int bits = 0;
    while (bits < 5 && ((int64_t)1 << bits) < inner) bits++;
    return bits;
}

/* ------------------------------------------------------------------------------------------
 * kernel tables: each entry picks its launcher from a table indexed by enum values
 * ---------------------------------------------------------------------------------------- */

/* The C++ type of each dtype. A dtype added to gpudev.h without one fails to compile every
 * launcher table below. */
template <gd_dtype D> struct gd_ctype_of;
template <> struct gd_ctype_of<GD_FLOAT32> { using type = float; };
template <> struct gd_ctype_of<GD_FLOAT64> { using type = double; };
template <> struct gd_ctype_of<GD_INT64> { using type = int64_t; };
template <> struct gd_ctype_of<GD_BOOL> { using type = bool; }; /* one byte holding 0 or 1 */
template <> struct gd_ctype_of<GD_INT32> { using type = int32_t; };
template <int D> using gd_ctype = typename gd_ctype_of<(gd_dtype)D>::type;

template <class T> constexpr bool gd_is_int = std::is_same<T, int64_t>::value || std::is_same<T, int32_t>::value;
template <class T> constexpr bool gd_is_bool = std::is_same<T, bool>::value;

/* An element read from memory. gpudev's bool arrays hold 0 or 1, but a plain bool load of any
 * other byte is undefined (it compiles to a raw byte compare in ==, a signed byte conversion in
 * astype), so kernels read bools as the byte != 0, as NumPy does. */
template <class T> __host__ __device__ __forceinline__ T gd_load(const T *p) { return *p; }
template <> __host__ __device__ __forceinline__ bool gd_load<bool>(const bool *p)
{
    return *(const unsigned char *)p != 0;
}
/* The dtype of a C++ type of gd_ctype_of (the inverse map, for the table predicates). */
template <class T>
constexpr gd_dtype gd_dtype_of = std::is_same<T, float>::value    ? GD_FLOAT32
                                 : std::is_same<T, double>::value ? GD_FLOAT64
                                 : std::is_same<T, int64_t>::value ? GD_INT64
                                 : std::is_same<T, int32_t>::value ? GD_INT32
                                                                  : GD_BOOL;

/* at[i][d] == Pick::template entry<i, gd_ctype<d>>() for every i < N (an operation, or an
 * output dtype) and every dtype d: the compiler builds the table from the enums, so no entry
 * can be missing or in the wrong place. An entry is nullptr where the pair is undefined (a
 * float-only operation on int64). */
template <class Fn, int N, class Pick> struct gd_launch_table {
    using row_type = std::array<Fn, GD_NUM_DTYPES>;
    template <int I, size_t... D> static constexpr row_type row(std::index_sequence<D...>)
    {
        return row_type{{Pick::template entry<I, gd_ctype<(int)D>>()...}};
    }
    template <size_t... I> static constexpr std::array<row_type, N> rows(std::index_sequence<I...>)
    {
        return std::array<row_type, N>{{row<(int)I>(std::make_index_sequence<GD_NUM_DTYPES>{})...}};
    }
    static constexpr std::array<row_type, N> at = rows(std::make_index_sequence<N>{});
};

/* ------------------------------------------------------------------------------------------
 * vtable entries, by file
 * ---------------------------------------------------------------------------------------- */

/* runtime.cu: devices */
gd_device_count_fn gd_cuda_device_count;
gd_synchronize_fn gd_cuda_synchronize;

/* memory.cu */
gd_alloc_fn gd_cuda_alloc;
/* `nbytes` (a request of 0 gets 1 byte) from dev's pool, ordered on its stream. When the pool
 * cannot grow, it waits for the stream, gives every cached byte back (gd_cuda_trim) and
 * tries once more, so it blocks only when memory is short. `counted`: the block shows in
 * memory_stats as allocated (arrays and scratch; not cuBLAS's workspace, held for good). */
int gd_cuda_pool_alloc(void **out, gd_cuda_device *dev, size_t nbytes, bool counted, gd_error *err);
/* Stream-ordered: the block returns to the pool once the work queued before it is done. */
void gd_cuda_pool_free(void *ptr, gd_cuda_device *dev, size_t nbytes, bool counted);
/* Wait for dev's stream (pending frees still pin their blocks), then give the pool's whole
 * cache back to the driver, where cuBLAS and other libraries can have it. Blocks. */
int gd_cuda_trim(gd_cuda_device *dev, gd_error *err);
gd_free_fn gd_cuda_free;
gd_memory_stats_fn gd_cuda_get_memory_stats;
gd_reset_peak_memory_fn gd_cuda_reset_peak_memory;
gd_empty_cache_fn gd_cuda_empty_cache;

/* copy.cu */
gd_copy_from_host_fn gd_cuda_copy_from_host;
gd_copy_to_host_fn gd_cuda_copy_to_host;
gd_copy_device_fn gd_cuda_copy_device;
gd_copy_2d_fn gd_cuda_copy_2d;
/* copy.cu: pinned host memory and copies that return at once */
gd_alloc_fn gd_cuda_host_alloc;
gd_free_fn gd_cuda_host_free;
gd_copy_async_fn gd_cuda_copy_async;
gd_event_synchronize_fn gd_cuda_event_synchronize;

/* elementwise.cu */
gd_unary_fn gd_cuda_unary;
gd_binary_fn gd_cuda_binary;

/* elementwise.cu: where and axpby; argreduce.cu: argmax and argmin */
gd_where_fn gd_cuda_where;
gd_axpby_fn gd_cuda_axpby;
gd_argreduce_fn gd_cuda_argreduce;

/* cast.cu */
gd_astype_fn gd_cuda_astype;

/* reduce.cu */
gd_reduce_fn gd_cuda_reduce;

/* gemm.cu */
gd_gemm_fn gd_cuda_gemm;

/* permute.cu */
gd_permute_fn gd_cuda_permute;

/* generate.cu */
gd_arange_fn gd_cuda_arange;
gd_random_fn gd_cuda_random;

/* services.cu: device properties, whole-device synchronization, events, and ordering against
 * other libraries' streams */
gd_device_props_fn gd_cuda_device_props;
gd_synchronize_all_fn gd_cuda_synchronize_all;
gd_event_create_fn gd_cuda_event_create;
gd_event_record_fn gd_cuda_event_record;
gd_event_elapsed_ms_fn gd_cuda_event_elapsed_ms;
gd_event_destroy_fn gd_cuda_event_destroy;
gd_pointer_chase_fn gd_cuda_pointer_chase;
gd_stream_wait_device_fn gd_cuda_stream_wait_device;
gd_device_wait_stream_fn gd_cuda_device_wait_stream;

/* gather.cu: indexing that copies */
gd_gather_rows_fn gd_cuda_gather_rows;
gd_scatter_rows_fn gd_cuda_scatter_rows;
gd_scatter_add_rows_fn gd_cuda_scatter_add_rows;
gd_count_nonzero_fn gd_cuda_count_nonzero;
gd_nonzero_fn gd_cuda_nonzero;

/* window.cu: convolution's im2col and col2im, pooling */
gd_im2col_fn gd_cuda_im2col;
gd_col2im_fn gd_cuda_col2im;
gd_pool2d_fn gd_cuda_pool2d;
gd_pool2d_backward_fn gd_cuda_pool2d_backward;

/* The finished table (backend_cuda.cu); module.cu wraps it in the capsule. */
extern "C" const gd_backend *gd_cuda_backend(void);
/* Allow (1) or forbid (0) TF32 in float32 products, from each device's next product on
 * (gd.set_tf32, and the conformance test, which has no Python). */
extern "C" void gd_cuda_set_tf32(int enabled);

/* runtime.cu: GD_ERR_DEVICE_UNAVAILABLE with a message naming the device and the GPU count
 * (and why there are none) unless 0 <= device < gd_cuda_device_count(). */
int gd_cuda_check_index(int device, gd_error *err);
/* runtime.cu: the driver's and the runtime's CUDA versions (13000 for 13.0); 0 when unknown
 * (the driver's without a driver). Never fails. */
void gd_cuda_versions(int *driver, int *runtime);

#endif /* GPUDEV_BACKEND_CUDA_CUH */
