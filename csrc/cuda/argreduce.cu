/* argreduce.cu - argmax and argmin over the middle axis of an (outer, len, inner) block: the
 * index of the first extreme, NaN counting as the extreme (NumPy's rule), as the CPU backend.
 *
 * Rows (inner == 1) take one block each: a block's threads stride through the row with
 * coalesced loads, then combine their candidates in shared memory. A warp per row would suit
 * many short rows better, but argmax rows are mostly long (class scores, whole arrays) and a
 * block keeps 8 warps of loads in flight per row. When there are fewer rows than fill the GPU
 * (a.argmax() of a whole array is one row), each row is cut into pieces, one block each,
 * whose candidates a second pass combines in order. Columns (inner > 1) take one thread
 * each, scanning down the column: neighbouring threads read neighbouring addresses.
 */
#include "backend_cuda.cuh"

namespace {

/* ------------------------------------------------------------------------------------------
 * comparisons: v beats b when strictly larger (argmax) or smaller (argmin), or a NaN over a
 * number; equal values and two NaNs are ties, which the smaller index wins
 * ---------------------------------------------------------------------------------------- */

template <bool MAX, class T> __device__ __forceinline__ bool beats(T v, T b)
{
    if constexpr (MAX) return v > b || (v != v && b == b);
    else return v < b || (v != v && b == b);
}

/* A candidate: a value and its index in the row (-1: none yet). */
template <class T> struct Cand {
    T v;
    int64_t at;
};

template <bool MAX, class T> __device__ __forceinline__ Cand<T> better(Cand<T> a, Cand<T> b)
{
    if (a.at < 0) return b;
    if (b.at < 0) return a;
    if (beats<MAX>(b.v, a.v)) return b;
    if (beats<MAX>(a.v, b.v)) return a;
    return b.at < a.at ? b : a;
}

/* ------------------------------------------------------------------------------------------
 * kernels
 * ---------------------------------------------------------------------------------------- */

/* Block (row o, piece p) of a grid of outer * pieces blocks: the first extreme of elements
 * [p * seg, (p + 1) * seg) of row o, into out[o * pieces + p]. With `idx` (the second pass),
 * element j of row o is in[o * len + idx[o * pieces_in + j]] and the index reported is
 * idx[...]; the row then has `pieces_in` elements. */
template <bool MAX, class T>
__global__ void arg_rows(int64_t *out, const T *in, const int64_t *idx, int64_t rows, int64_t len, int64_t n,
                         int64_t seg, int64_t pieces)
{
    __shared__ Cand<T> cands[GD_CUDA_THREADS];
    for (int64_t b = blockIdx.x; b < rows * pieces; b += gridDim.x) {
        const int64_t o = b / pieces, p = b % pieces;
        const int64_t from = p * seg, to = from + seg < n ? from + seg : n;
        Cand<T> c{T(), -1};
        for (int64_t j = from + threadIdx.x; j < to; j += blockDim.x) {
            const int64_t at = idx ? idx[o * n + j] : j;
            c = better<MAX>(c, Cand<T>{gd_load(in + o * len + at), at});
        }
        cands[threadIdx.x] = c;
        __syncthreads();
        for (int w = GD_CUDA_THREADS / 2; w > 0; w /= 2) {
            if ((int)threadIdx.x < w) cands[threadIdx.x] = better<MAX>(cands[threadIdx.x], cands[threadIdx.x + w]);
            __syncthreads();
        }
        if (threadIdx.x == 0) out[b] = cands[0].at;
        __syncthreads(); /* cands is refilled by the next block's row */
    }
}

/* Thread (o, i): down column i of outer index o. */
template <bool MAX, class T> __global__ void arg_cols(int64_t *out, const T *in, int64_t outer, int64_t len, int64_t inner)
{
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < outer * inner;
         t += (int64_t)gridDim.x * blockDim.x) {
        const int64_t o = t / inner, i = t % inner;
        const T *x = in + o * len * inner + i;
        T best = gd_load(x);
        int64_t at = 0;
        for (int64_t r = 1; r < len; r++) {
            const T v = gd_load(x + r * inner);
            if (beats<MAX>(v, best)) {
                best = v;
                at = r;
            }
        }
        out[t] = at;
    }
}

/* ------------------------------------------------------------------------------------------
 * launcher
 * ---------------------------------------------------------------------------------------- */

/* Rows are cut into pieces of at least this many elements when there are too few rows to
 * give every multiprocessor a block. */
#define GD_ARG_MIN_PIECE ((int64_t)1 << 14)

template <bool MAX, class T>
int launch_arg(int64_t *out, const T *in, int64_t outer, int64_t len, int64_t inner, gd_cuda_device *dev,
               gd_error *err)
{
    const unsigned max_blocks = (unsigned)dev->sm_count * (2048 / GD_CUDA_THREADS);
    if (inner > 1) {
        arg_cols<MAX, T><<<gd_cuda_blocks(dev, outer * inner, GD_CUDA_THREADS), GD_CUDA_THREADS, 0, dev->stream>>>(
            out, in, outer, len, inner);
        GD_CHECK_LAUNCH();
        return GD_OK;
    }
    int64_t pieces = 1;
    if (outer < (int64_t)max_blocks && len >= 2 * GD_ARG_MIN_PIECE) {
        pieces = ((int64_t)max_blocks + outer - 1) / outer;
        if (pieces > len / GD_ARG_MIN_PIECE) pieces = len / GD_ARG_MIN_PIECE;
    }
    const int64_t seg = (len + pieces - 1) / pieces;
    pieces = (len + seg - 1) / seg; /* every piece non-empty */
    auto grid = [&](int64_t blocks) { return (unsigned)(blocks < max_blocks ? blocks : max_blocks); };
    if (pieces == 1) {
        arg_rows<MAX, T><<<grid(outer), GD_CUDA_THREADS, 0, dev->stream>>>(out, in, nullptr, outer, len, len, len, 1);
        GD_CHECK_LAUNCH();
        return GD_OK;
    }
    void *scratch = nullptr;
    const size_t bytes = (size_t)(outer * pieces) * sizeof(int64_t);
    int rc = gd_cuda_pool_alloc(&scratch, dev, bytes, true, err);
    if (rc != GD_OK) return rc;
    int64_t *cand = (int64_t *)scratch;
    arg_rows<MAX, T><<<grid(outer * pieces), GD_CUDA_THREADS, 0, dev->stream>>>(cand, in, nullptr, outer, len, len,
                                                                                 seg, pieces);
    cudaError_t status = cudaGetLastError();
    if (status == cudaSuccess)
        arg_rows<MAX, T><<<grid(outer), GD_CUDA_THREADS, 0, dev->stream>>>(out, in, cand, outer, len, pieces,
                                                                            pieces, 1);
    gd_cuda_pool_free(scratch, dev, bytes, true); /* stream-ordered: after both passes */
    GD_CHECK(status);
    GD_CHECK_LAUNCH();
    return GD_OK;
}

using arg_launch = int (*)(int64_t *out, const void *in, int64_t outer, int64_t len, int64_t inner,
                           gd_cuda_device *dev, gd_error *err);

template <bool MAX, class T>
int launch_typed(int64_t *out, const void *in, int64_t outer, int64_t len, int64_t inner, gd_cuda_device *dev,
                 gd_error *err)
{
    return launch_arg<MAX, T>(out, (const T *)in, outer, len, inner, dev, err);
}

/* [argmin][dtype], from the enums (gd_launch_table: no dtype can be missing) */
struct pick_arg {
    template <int MIN, class T> static constexpr arg_launch entry() { return launch_typed<!MIN, T>; }
};
using arg_launchers = gd_launch_table<arg_launch, 2, pick_arg>;

} // namespace

/* ------------------------------------------------------------------------------------------
 * vtable entry
 * ---------------------------------------------------------------------------------------- */

int gd_cuda_argreduce(int64_t *out, gd_redop op, const void *in, gd_dtype dtype, int64_t outer, int64_t len,
                      int64_t inner, int device, gd_error *err)
{
    if (op != GD_RED_MAX && op != GD_RED_MIN)
        return gd_set_error(err, GD_ERR_VALUE, "cuda argreduce: operation %d is neither max nor min", (int)op);
    if ((unsigned)dtype >= GD_NUM_DTYPES)
        return gd_set_error(err, GD_ERR_VALUE, "cuda argreduce: unknown dtype %d", (int)dtype);
    if (outer <= 0 || inner <= 0) return GD_OK;
    if (len <= 0)
        return gd_set_error(err, GD_ERR_VALUE, "cuda argreduce: an axis of length %lld has no extreme", (long long)len);
    gd_cuda_device *dev = nullptr;
    int rc = gd_cuda_enter(&dev, device, err);
    return rc == GD_OK ? arg_launchers::at[op == GD_RED_MIN][dtype](out, in, outer, len, inner, dev, err) : rc;
}
