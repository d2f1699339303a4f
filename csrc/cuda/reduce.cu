/* reduce.cu - sum, sum of squares, max, min and product over the middle axis of an (outer, len, inner)
 * block, the shape every gpudev reduction is reduced to by the core (csrc/core/reduce.c).
 *
 *   inner == 1, len <= 16     one thread per row (also fills the rows of an empty axis)
 *   inner == 1, len <= 1024   one warp per row
 *   inner == 1, longer rows   blocks over (row, chunk); rows split into chunks when there are
 *                             too few rows to fill the GPU, chunk partials reduced by a second
 *                             pass (the full sum of a large array is one row split ~1000 ways)
 *   inner > 1                 column kernel: a block covers up to 32 adjacent columns so every
 *                             load is coalesced, its threads split the rows between them;
 *                             split again into chunks with a second pass when columns are few
 *
 * float32 sums accumulate in float64, which keeps the error at float64 rounding for any size.
 * Two passes in a fixed order make every result reproducible run to run (no atomics), and on
 * every GPU model: the split plan depends on the shape alone (GD_REDUCE_BLOCKS below), never
 * on the multiprocessor count, so one shape adds its floats in one order everywhere (the
 * CPU's order is its own: its bits may differ in the last place).
 */
#include "backend_cuda.cuh"

#include <cmath>
#include <type_traits>

namespace {

/* ------------------------------------------------------------------------------------------
 * the operations: identity, element transform, combine
 * ---------------------------------------------------------------------------------------- */

template <class T> constexpr bool is_int = gd_is_int<T>;

/* Each operation below names every reduction of the list in tables.h: one it does not name
 * stops the build here (every row is instantiated by the launcher tables), instead of
 * computing a sum. */
template <gd_redop OP> constexpr bool unnamed_reduction = false;
#define GD_RED_UNNAMED(what) \
    static_assert(unnamed_reduction<OP>, what ": add this reduction of GD_REDUCTIONS (csrc/tables.h)")

template <gd_redop OP, class Acc> __device__ __forceinline__ Acc red_identity()
{
    if constexpr (OP == GD_RED_MAX) {
        if constexpr (std::is_same<Acc, int32_t>::value) return INT32_MIN;
        else if constexpr (is_int<Acc>) return INT64_MIN;
        else return -(Acc)INFINITY;
    } else if constexpr (OP == GD_RED_MIN) {
        if constexpr (std::is_same<Acc, int32_t>::value) return INT32_MAX;
        else if constexpr (is_int<Acc>) return INT64_MAX;
        else return (Acc)INFINITY;
    } else if constexpr (OP == GD_RED_SUM || OP == GD_RED_SUMSQ) {
        return Acc(0);
    } else if constexpr (OP == GD_RED_PROD) {
        return Acc(1);
    } else {
        GD_RED_UNNAMED("red_identity");
    }
}

/* integer sums and products (int64 accumulators) wrap as the CPU backend's do (in uint64,
 * where overflow is defined); max and min let a NaN win, as NumPy does. */
template <gd_redop OP, class Acc> __device__ __forceinline__ Acc red_combine(Acc a, Acc b)
{
    if constexpr (OP == GD_RED_MAX) {
        return (a > b || a != a) ? a : b;
    } else if constexpr (OP == GD_RED_MIN) {
        return (a < b || a != a) ? a : b;
    } else if constexpr (OP == GD_RED_SUM || OP == GD_RED_SUMSQ) {
        if constexpr (is_int<Acc>) return (int64_t)((uint64_t)a + (uint64_t)b);
        else return a + b;
    } else if constexpr (OP == GD_RED_PROD) {
        if constexpr (is_int<Acc>) return (int64_t)((uint64_t)a * (uint64_t)b);
        else return a * b;
    } else {
        GD_RED_UNNAMED("red_combine");
    }
}

template <gd_redop OP, class Acc, class T> __device__ __forceinline__ Acc red_load(T x)
{
    Acc v = (Acc)x;
    if constexpr (OP == GD_RED_SUMSQ) {
        if constexpr (is_int<Acc>) return (int64_t)((uint64_t)v * (uint64_t)v);
        else return v * v;
    } else if constexpr (OP == GD_RED_SUM || OP == GD_RED_MAX || OP == GD_RED_MIN || OP == GD_RED_PROD) {
        return v;
    } else {
        GD_RED_UNNAMED("red_load");
    }
}
#undef GD_RED_UNNAMED

/* ------------------------------------------------------------------------------------------
 * building blocks
 * ---------------------------------------------------------------------------------------- */

/* 16-byte vector of T: one load instruction moves 4 floats/int32s or 2 doubles/int64s. */
template <class T> struct Vec16;
template <> struct Vec16<float> { using type = float4; };
template <> struct Vec16<int32_t> { using type = int4; };
template <> struct Vec16<double> { using type = double2; };
template <> struct Vec16<int64_t> { using type = longlong2; };

template <gd_redop OP, class Acc, class T>
__device__ __forceinline__ Acc combine_vec(Acc acc, const typename Vec16<T>::type &v)
{
    const T *e = reinterpret_cast<const T *>(&v);
#pragma unroll
    for (int k = 0; k < (int)(16 / sizeof(T)); k++) acc = red_combine<OP, Acc>(acc, red_load<OP, Acc>(e[k]));
    return acc;
}

/* This thread's share (elements tid, tid + nthreads, ...) of the contiguous p[0, n): a scalar
 * head up to 16-byte alignment, 16-byte loads four at a time (enough bytes in flight to keep
 * HBM busy), a scalar tail. */
template <gd_redop OP, class Acc, class T>
__device__ __forceinline__ Acc thread_reduce_contig(const T *p, int64_t n, int tid, int nthreads)
{
    using V = typename Vec16<T>::type;
    constexpr int per_vec = 16 / sizeof(T);
    Acc acc = red_identity<OP, Acc>();
    if (n <= 0) return acc;
    int64_t head = (int64_t)(((16 - ((uintptr_t)p & 15)) & 15) / sizeof(T));
    if (head > n) head = n;
    for (int64_t i = tid; i < head; i += nthreads) acc = red_combine<OP, Acc>(acc, red_load<OP, Acc>(p[i]));

    const V *pv = reinterpret_cast<const V *>(p + head);
    const int64_t nv = (n - head) / per_vec, step = nthreads;
    int64_t j = tid;
    for (; j + 3 * step < nv; j += 4 * step) {
        const V v0 = pv[j], v1 = pv[j + step], v2 = pv[j + 2 * step], v3 = pv[j + 3 * step];
        acc = combine_vec<OP, Acc, T>(acc, v0);
        acc = combine_vec<OP, Acc, T>(acc, v1);
        acc = combine_vec<OP, Acc, T>(acc, v2);
        acc = combine_vec<OP, Acc, T>(acc, v3);
    }
    for (; j < nv; j += step) acc = combine_vec<OP, Acc, T>(acc, pv[j]);

    for (int64_t i = head + nv * per_vec + tid; i < n; i += nthreads)
        acc = red_combine<OP, Acc>(acc, red_load<OP, Acc>(p[i]));
    return acc;
}

template <gd_redop OP, class Acc> __device__ __forceinline__ Acc warp_reduce(Acc v)
{
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v = red_combine<OP, Acc>(v, __shfl_xor_sync(0xffffffffu, v, offset));
    return v;
}

/* The block's result, valid in thread 0. Every thread of the block must call it. */
template <gd_redop OP, class Acc> __device__ __forceinline__ Acc block_reduce(Acc v)
{
    __shared__ Acc warp_results[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    v = warp_reduce<OP, Acc>(v);
    if (lane == 0) warp_results[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < warps ? warp_results[lane] : red_identity<OP, Acc>();
        v = warp_reduce<OP, Acc>(v);
    }
    __syncthreads(); /* warp_results is reused by the caller's next iteration */
    return v;
}

/* ------------------------------------------------------------------------------------------
 * kernels. Rows are contiguous: row o of `in` is in[o * len, (o + 1) * len).
 * ---------------------------------------------------------------------------------------- */

template <gd_redop OP, class Acc, class T, class Out>
__global__ void __launch_bounds__(GD_CUDA_THREADS) rows_thread_kernel(Out *out, const T *in, int64_t rows, int64_t len)
{
    for (int64_t o = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; o < rows; o += (int64_t)gridDim.x * blockDim.x) {
        Acc acc = red_identity<OP, Acc>();
        for (int64_t r = 0; r < len; r++) acc = red_combine<OP, Acc>(acc, red_load<OP, Acc>(in[o * len + r]));
        out[o] = (Out)acc;
    }
}

template <gd_redop OP, class Acc, class T, class Out>
__global__ void __launch_bounds__(GD_CUDA_THREADS) rows_warp_kernel(Out *out, const T *in, int64_t rows, int64_t len)
{
    const int lane = threadIdx.x & 31;
    const int64_t first = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 5;
    const int64_t warps = ((int64_t)gridDim.x * blockDim.x) >> 5;
    for (int64_t o = first; o < rows; o += warps) { /* uniform across the warp, as shuffles need */
        Acc acc = thread_reduce_contig<OP, Acc>(in + o * len, len, lane, 32);
        acc = warp_reduce<OP, Acc>(acc);
        if (lane == 0) out[o] = (Out)acc;
    }
}

/* Work item w is chunk s = w % splits of row o = w / splits. With splits == 1 (partial NULL)
 * the block writes the row's result; otherwise partial[w], a (rows, splits) array. */
template <gd_redop OP, class Acc, class T, class Out>
__global__ void __launch_bounds__(GD_CUDA_THREADS)
    rows_block_kernel(Out *out, Acc *partial, const T *in, int64_t rows, int64_t len, int64_t splits, int64_t chunk)
{
    const int64_t items = rows * splits;
    for (int64_t w = blockIdx.x; w < items; w += gridDim.x) {
        const int64_t o = w / splits, begin = (w % splits) * chunk;
        const int64_t end = begin + chunk < len ? begin + chunk : len;
        Acc acc = thread_reduce_contig<OP, Acc>(in + o * len + begin, end - begin, threadIdx.x, blockDim.x);
        acc = block_reduce<OP, Acc>(acc);
        if (threadIdx.x == 0) {
            if (partial) partial[w] = acc;
            else out[o] = (Out)acc;
        }
    }
}

/* out[o * inner + i] = reduce over r of in[(o * len + r) * inner + i]. A block is a tile of
 * TX = 2^tx_bits adjacent columns (tx) by TY = 256 / TX row lanes (ty): consecutive threads
 * read consecutive addresses, also when inner is small (TX = 4: a warp reads 8 rows of 4).
 * Work item w is row chunk s = w % splits of column tile t = w / splits; with splits > 1 the
 * block writes partial[(o * inner + i) * splits + s], rows of the second pass. */
template <gd_redop OP, class Acc, class T, class Out>
__global__ void __launch_bounds__(GD_CUDA_THREADS)
    cols_kernel(Out *out, Acc *partial, const T *in, int64_t outer, int64_t len, int64_t inner, int tx_bits,
                int64_t splits, int64_t chunk)
{
    __shared__ Acc lanes[GD_CUDA_THREADS]; /* [ty][tx] == [threadIdx.x] */
    const int TX = 1 << tx_bits, TY = GD_CUDA_THREADS >> tx_bits;
    const int tx = threadIdx.x & (TX - 1), ty = threadIdx.x >> tx_bits;
    const int64_t tiles_per_row = (inner + TX - 1) >> tx_bits;
    const int64_t items = outer * tiles_per_row * splits;
    for (int64_t w = blockIdx.x; w < items; w += gridDim.x) {
        const int64_t s = w % splits, t = w / splits;
        const int64_t o = t / tiles_per_row, i = (t % tiles_per_row) * TX + tx;
        const int64_t begin = s * chunk, end = begin + chunk < len ? begin + chunk : len;
        Acc acc = red_identity<OP, Acc>();
        if (i < inner) {
            const T *col = in + o * len * inner + i;
#pragma unroll 4
            for (int64_t r = begin + ty; r < end; r += TY) acc = red_combine<OP, Acc>(acc, red_load<OP, Acc>(col[r * inner]));
        }
        lanes[threadIdx.x] = acc;
        for (int half = TY >> 1; half > 0; half >>= 1) {
            __syncthreads();
            if (ty < half) lanes[threadIdx.x] = red_combine<OP, Acc>(lanes[threadIdx.x], lanes[threadIdx.x + half * TX]);
        }
        if (ty == 0 && i < inner) {
            if (partial) partial[(o * inner + i) * splits + s] = lanes[tx];
            else out[o * inner + i] = (Out)lanes[tx];
        }
        __syncthreads(); /* lanes is refilled by the next iteration */
    }
}

/* ------------------------------------------------------------------------------------------
 * launch plans
 * ---------------------------------------------------------------------------------------- */

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

unsigned grid_of(int64_t items)
{
    const int64_t cap = (int64_t)1 << 30; /* grid-stride loops cover the rest */
    return (unsigned)(items < cap ? items : cap);
}

/* The second pass: rows of `splits` partials -> out. */
template <gd_redop OP, class Acc, class Out>
int merge_partials(Out *out, const Acc *partial, int64_t rows, int64_t splits, gd_cuda_device *dev, gd_error *err)
{
    constexpr gd_redop OP2 = gd_redop_table[OP].merge; /* SUMSQ's partials are summed */
    rows_warp_kernel<OP2, Acc, Acc, Out>
        <<<gd_cuda_blocks(dev, rows * 32, GD_CUDA_THREADS), GD_CUDA_THREADS, 0, dev->stream>>>(out, partial, rows, splits);
    GD_CHECK_LAUNCH();
    return GD_OK;
}

template <gd_redop OP, class Acc, class T, class Out>
int rows_split_passes(Out *out, Acc *partial, const T *in, int64_t rows, int64_t len, int64_t splits, int64_t chunk,
                      gd_cuda_device *dev, gd_error *err)
{
    rows_block_kernel<OP, Acc, T, Out>
        <<<grid_of(rows * splits), GD_CUDA_THREADS, 0, dev->stream>>>(out, partial, in, rows, len, splits, chunk);
    GD_CHECK_LAUNCH();
    return merge_partials<OP, Acc, Out>(out, partial, rows, splits, dev, err);
}

template <gd_redop OP, class Acc, class T, class Out>
int cols_split_passes(Out *out, Acc *partial, const T *in, int64_t outer, int64_t len, int64_t inner, int tx_bits,
                      int64_t splits, int64_t chunk, gd_cuda_device *dev, gd_error *err)
{
    const int64_t tiles = outer * ceil_div(inner, (int64_t)1 << tx_bits);
    cols_kernel<OP, Acc, T, Out><<<grid_of(tiles * splits), GD_CUDA_THREADS, 0, dev->stream>>>(
        out, partial, in, outer, len, inner, tx_bits, splits, chunk);
    GD_CHECK_LAUNCH();
    return merge_partials<OP, Acc, Out>(out, partial, outer * inner, splits, dev, err);
}

/* Partials come from gpudev's stream-ordered pool, through its one allocation path (the
 * retry when the device is full, memory_stats): allocating and freeing them costs no
 * synchronization, and the free waits for the second pass on the same stream. */
template <class Acc> int partials_alloc(Acc **out, int64_t count, gd_cuda_device *dev, gd_error *err)
{
    return gd_cuda_pool_alloc((void **)out, dev, (size_t)count * sizeof(Acc), true, err);
}

template <class Acc> void partials_free(Acc *partial, int64_t count, gd_cuda_device *dev)
{
    gd_cuda_pool_free(partial, dev, (size_t)count * sizeof(Acc), true);
}

/* The blocks a split plan aims at: a constant rather than a wave of this GPU (multiprocessors
 * x 2048 / GD_CUDA_THREADS, 1056 on an H200), so that the chunks, and with them the order in
 * which a float sum adds, are the same on every GPU. 2048 fills one wave of any GPU up to 256
 * multiprocessors; a smaller one runs them in a few waves, which costs a memory-bound pass
 * nothing measurable (tools/gpu_hw_check.py times the sum against the copy bandwidth). */
constexpr int64_t GD_REDUCE_BLOCKS = 2048;

template <gd_redop OP, class Acc, class T, class Out>
int reduce_impl(Out *out, const T *in, int64_t outer, int64_t len, int64_t inner, gd_cuda_device *dev, gd_error *err)
{
    const int64_t wave = GD_REDUCE_BLOCKS;

    if (len == 0 || (inner == 1 && len <= 16)) {
        const int64_t rows = outer * inner; /* len == 0: every output element is the identity */
        rows_thread_kernel<OP, Acc, T, Out>
            <<<gd_cuda_blocks(dev, rows, GD_CUDA_THREADS), GD_CUDA_THREADS, 0, dev->stream>>>(out, in, rows, len);
        GD_CHECK_LAUNCH();
        return GD_OK;
    }

    if (inner == 1) {
        if (len <= 1024) {
            rows_warp_kernel<OP, Acc, T, Out>
                <<<gd_cuda_blocks(dev, outer * 32, GD_CUDA_THREADS), GD_CUDA_THREADS, 0, dev->stream>>>(out, in, outer, len);
            GD_CHECK_LAUNCH();
            return GD_OK;
        }
        int64_t splits;
        const int64_t chunk = gd_cuda_plan_chunk(&splits, outer, len, wave, 16 * GD_CUDA_THREADS);
        if (splits == 1) {
            rows_block_kernel<OP, Acc, T, Out>
                <<<grid_of(outer), GD_CUDA_THREADS, 0, dev->stream>>>(out, nullptr, in, outer, len, 1, len);
            GD_CHECK_LAUNCH();
            return GD_OK;
        }
        Acc *partial = nullptr;
        int rc = partials_alloc(&partial, outer * splits, dev, err);
        if (rc != GD_OK) return rc;
        rc = rows_split_passes<OP, Acc, T, Out>(out, partial, in, outer, len, splits, chunk, dev, err);
        partials_free(partial, outer * splits, dev);
        return rc;
    }

    const int tx_bits = gd_cuda_col_tile_bits(inner);
    const int64_t rows_per_pass = GD_CUDA_THREADS >> tx_bits;
    const int64_t tiles = outer * ceil_div(inner, (int64_t)1 << tx_bits);
    int64_t splits;
    const int64_t chunk = gd_cuda_plan_chunk(&splits, tiles, len, wave, 8 * rows_per_pass);
    if (splits == 1) {
        cols_kernel<OP, Acc, T, Out><<<grid_of(tiles), GD_CUDA_THREADS, 0, dev->stream>>>(
            out, nullptr, in, outer, len, inner, tx_bits, 1, len);
        GD_CHECK_LAUNCH();
        return GD_OK;
    }
    Acc *partial = nullptr;
    int rc = partials_alloc(&partial, outer * inner * splits, dev, err);
    if (rc != GD_OK) return rc;
    rc = cols_split_passes<OP, Acc, T, Out>(out, partial, in, outer, len, inner, tx_bits, splits, chunk, dev, err);
    partials_free(partial, outer * inner * splits, dev);
    return rc;
}

/* Sums of float32 (and integer sums with a float64 result, i.e. means) accumulate in float64;
 * integer sums with an integer result wrap in int64 as NumPy's do (int32 sums give int64).
 * max/min compare in T. */
template <class T, class Out>
using sum_acc = typename std::conditional<is_int<T> && is_int<Out>, int64_t, double>::type;

/* max and min (the list's EXACT rows) compare in T; WIDE rows accumulate as sum_acc says. */
template <gd_redop OP, class T, class Out>
using red_acc = typename std::conditional<gd_redop_table[OP].widens, sum_acc<T, Out>, T>::type;

using reduce_launch = int (*)(void *out, const void *in, int64_t outer, int64_t len, int64_t inner,
                              gd_cuda_device *dev, gd_error *err);

template <gd_redop OP, class T, class Out>
int launch_reduce(void *out, const void *in, int64_t outer, int64_t len, int64_t inner, gd_cuda_device *dev,
                  gd_error *err)
{
    return reduce_impl<OP, red_acc<OP, T, Out>, T, Out>((Out *)out, (const T *)in, outer, len, inner, dev, err);
}

/* The launcher tables, [op][input dtype]: results of the input's dtype, float64 results
 * (means, multi-pass float32 sums), and int64 results of int32 sums. */
struct pick_reduce_same {
    template <int OP, class T> static constexpr reduce_launch entry()
    {
        if constexpr (gd_is_bool<T>) return nullptr; /* the core reduces bools as int64 */
        else return launch_reduce<(gd_redop)OP, T, T>;
    }
};

struct pick_reduce_f64 {
    template <int OP, class T> static constexpr reduce_launch entry()
    {
        if constexpr (gd_is_bool<T>) return nullptr;
        else return launch_reduce<(gd_redop)OP, T, double>;
    }
};

/* int64 results of int32 input (sums, as NumPy sums int32 into int64) */
struct pick_reduce_i64 {
    template <int OP, class T> static constexpr reduce_launch entry()
    {
        if constexpr (!std::is_same<T, int32_t>::value) return nullptr;
        else return launch_reduce<(gd_redop)OP, T, int64_t>;
    }
};

using reduce_same_launchers = gd_launch_table<reduce_launch, GD_NUM_REDOPS, pick_reduce_same>;
using reduce_f64_launchers = gd_launch_table<reduce_launch, GD_NUM_REDOPS, pick_reduce_f64>;
using reduce_i64_launchers = gd_launch_table<reduce_launch, GD_NUM_REDOPS, pick_reduce_i64>;

} // namespace

/* ------------------------------------------------------------------------------------------
 * vtable entry
 * ---------------------------------------------------------------------------------------- */

// in is (outer, len, inner), out is (outer, inner)
int gd_cuda_reduce(void *out, gd_dtype out_dtype, gd_redop op, const void *in, gd_dtype in_dtype, int64_t outer,
                   int64_t len, int64_t inner, int device, gd_error *err)
{
    if (outer <= 0 || inner <= 0) return GD_OK;
    if ((unsigned)op >= GD_NUM_REDOPS || (unsigned)in_dtype >= GD_NUM_DTYPES || in_dtype == GD_BOOL)
        return gd_set_error(err, GD_ERR_VALUE, "cuda reduce: unknown operation %d or dtype %d", (int)op, (int)in_dtype);
    if (len < 0 || (len == 0 && gd_redop_table[op].needs_elements))
        return gd_set_error(err, GD_ERR_VALUE, "cuda reduce: %s over an axis of length %lld has no identity",
                             gd_redop_table[op].name, (long long)len);
    if (out_dtype != in_dtype && out_dtype != GD_FLOAT64 && !(in_dtype == GD_INT32 && out_dtype == GD_INT64))
        return gd_set_error(err, GD_ERR_VALUE,
                             "cuda reduce: result dtype %d must be the input's (%d), float64, or int64 for int32",
                             (int)out_dtype, (int)in_dtype);
    gd_cuda_device *dev;
    int rc = gd_cuda_enter(&dev, device, err);
    if (rc != GD_OK) return rc;
    const reduce_launch launch = out_dtype == in_dtype      ? reduce_same_launchers::at[op][in_dtype]
                                 : out_dtype == GD_FLOAT64 ? reduce_f64_launchers::at[op][in_dtype]
                                                           : reduce_i64_launchers::at[op][in_dtype];
    return launch(out, in, outer, len, inner, dev, err);
}
