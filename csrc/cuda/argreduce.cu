/* argreduce.cu - argmax and argmin over the middle axis of an (outer, len, inner) block: the
 * index of the first extreme, NaN counting as the extreme (NumPy's rule), as the CPU backend.
 *
 *   inner == 1   rows: a block per row, its threads striding through the row with coalesced
 *                loads (argmax rows are mostly long: class scores, whole arrays)
 *   inner > 1    columns: a block per tile of up to 32 adjacent columns by row lanes, so a
 *                warp's loads are coalesced also when inner is small (reduce.cu's shape)
 *
 * When rows or column tiles are too few to fill the GPU (a.argmax() of a whole array is one
 * row; argmax(axis=0) of a (1e8, 2) array is one tile), the reduced axis is cut into chunks,
 * one block each, and a second pass merges the chunks' candidates. A candidate carries its
 * value and index, and ties go to the smaller index, so the merge needs no order and never
 * reads the input again.
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

/* A candidate: a value and its index along the reduced axis (-1: none yet). */
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

/* Where the rows kernel reads element j of row o: the input itself, or (the second pass) the
 * candidates of the first, a (rows, splits) array. */
template <class T> struct from_input {
    const T *in;
    int64_t len;
    __device__ __forceinline__ Cand<T> operator()(int64_t o, int64_t j) const { return {gd_load(in + o * len + j), j}; }
};
template <class T> struct from_cands {
    const Cand<T> *cands;
    int64_t splits;
    __device__ __forceinline__ Cand<T> operator()(int64_t o, int64_t j) const { return cands[o * splits + j]; }
};

/* ------------------------------------------------------------------------------------------
 * kernels
 * ---------------------------------------------------------------------------------------- */

/* Work item w is chunk s = w % splits (elements [s * chunk, (s + 1) * chunk) of n) of row
 * o = w / splits. With splits == 1 (part NULL) the block writes the row's index to out[o];
 * otherwise its candidate to part[w]. */
template <bool MAX, class T, class Src>
__global__ void arg_rows(int64_t *out, Cand<T> *part, Src src, int64_t rows, int64_t n, int64_t splits, int64_t chunk)
{
    __shared__ Cand<T> cands[GD_CUDA_THREADS];
    for (int64_t w = blockIdx.x; w < rows * splits; w += gridDim.x) {
        const int64_t o = w / splits, from = (w % splits) * chunk, to = from + chunk < n ? from + chunk : n;
        Cand<T> c{T(), -1};
        for (int64_t j = from + threadIdx.x; j < to; j += blockDim.x) c = better<MAX>(c, src(o, j));
        cands[threadIdx.x] = c;
        __syncthreads();
        for (int half = GD_CUDA_THREADS / 2; half > 0; half /= 2) {
            if ((int)threadIdx.x < half) cands[threadIdx.x] = better<MAX>(cands[threadIdx.x], cands[threadIdx.x + half]);
            __syncthreads();
        }
        if (threadIdx.x == 0) {
            if (part) part[w] = cands[0];
            else out[o] = cands[0].at;
        }
        __syncthreads(); /* cands is refilled by the next work item */
    }
}

/* Column (o, i) of the block is in[(o * len + r) * inner + i], r < len. A block is a tile of
 * TX = 2^tx_bits adjacent columns (tx) by TY = GD_CUDA_THREADS / TX row lanes (ty). Work item
 * w is row chunk s = w % splits of column tile t = w / splits. With splits == 1 (part NULL)
 * the block writes the columns' indices to out[o * inner + i]; otherwise their candidates to
 * part[(o * inner + i) * splits + s], rows of the second pass. */
template <bool MAX, class T>
__global__ void arg_cols(int64_t *out, Cand<T> *part, const T *in, int64_t outer, int64_t len, int64_t inner,
                         int tx_bits, int64_t splits, int64_t chunk)
{
    __shared__ Cand<T> lanes[GD_CUDA_THREADS]; /* [ty][tx] == [threadIdx.x] */
    const int TX = 1 << tx_bits, TY = GD_CUDA_THREADS >> tx_bits;
    const int tx = threadIdx.x & (TX - 1), ty = threadIdx.x >> tx_bits;
    const int64_t tiles_per_row = (inner + TX - 1) >> tx_bits;
    for (int64_t w = blockIdx.x; w < outer * tiles_per_row * splits; w += gridDim.x) {
        const int64_t s = w % splits, t = w / splits;
        const int64_t o = t / tiles_per_row, i = (t % tiles_per_row) * TX + tx;
        const int64_t from = s * chunk, to = from + chunk < len ? from + chunk : len;
        Cand<T> c{T(), -1};
        if (i < inner && from + ty < to) {
            const T *col = in + o * len * inner + i;
            c = Cand<T>{gd_load(col + (from + ty) * inner), from + ty};
            /* this lane's rows come in increasing order: only a strict win moves it */
            for (int64_t r = from + ty + TY; r < to; r += TY) {
                const T v = gd_load(col + r * inner);
                if (beats<MAX>(v, c.v)) c = Cand<T>{v, r};
            }
        }
        lanes[threadIdx.x] = c;
        for (int half = TY >> 1; half > 0; half >>= 1) {
            __syncthreads();
            if (ty < half) lanes[threadIdx.x] = better<MAX>(lanes[threadIdx.x], lanes[threadIdx.x + half * TX]);
        }
        if (ty == 0 && i < inner) {
            if (part) part[(o * inner + i) * splits + s] = lanes[tx];
            else out[o * inner + i] = lanes[tx].at;
        }
        __syncthreads(); /* lanes is refilled by the next work item */
    }
}

/* ------------------------------------------------------------------------------------------
 * launcher
 * ---------------------------------------------------------------------------------------- */

/* Chunks are at least this long: rows' elements, or columns' rows per lane (a lane's loads
 * then outweigh its block's merge in shared memory). */
#define GD_ARG_MIN_ROW_CHUNK ((int64_t)1 << 14)
#define GD_ARG_MIN_LANE_ROWS 8

unsigned grid_of(int64_t items, int64_t wave) { return (unsigned)(items < wave ? items : wave); }

/* The second pass: each of `rows` outputs from its `splits` candidates. */
template <bool MAX, class T>
int merge_cands(int64_t *out, const Cand<T> *cands, int64_t rows, int64_t splits, int64_t wave, gd_cuda_device *dev,
                gd_error *err)
{
    arg_rows<MAX, T><<<grid_of(rows, wave), GD_CUDA_THREADS, 0, dev->stream>>>(
        out, (Cand<T> *)nullptr, from_cands<T>{cands, splits}, rows, splits, 1, splits);
    GD_CHECK_LAUNCH();
    return GD_OK;
}

/* One kernel over `items` work items (first pass) writing candidates when split, then the
 * merge; `first` launches the first pass into (out, part). */
template <bool MAX, class T, class First>
int run_split(int64_t *out, int64_t outputs, int64_t splits, int64_t wave, gd_cuda_device *dev, gd_error *err,
              First first)
{
    if (splits == 1) {
        first(out, (Cand<T> *)nullptr);
        GD_CHECK_LAUNCH();
        return GD_OK;
    }
    Cand<T> *part = nullptr;
    const size_t bytes = (size_t)(outputs * splits) * sizeof(Cand<T>);
    int rc = gd_cuda_pool_alloc((void **)&part, dev, bytes, true, err);
    if (rc != GD_OK) return rc;
    first(out, part);
    const cudaError_t status = cudaGetLastError();
    if (status == cudaSuccess) rc = merge_cands<MAX, T>(out, part, outputs, splits, wave, dev, err);
    gd_cuda_pool_free(part, dev, bytes, true); /* stream-ordered: after both passes */
    GD_CHECK(status);
    return rc;
}

template <bool MAX, class T>
int launch_arg(int64_t *out, const T *in, int64_t outer, int64_t len, int64_t inner, gd_cuda_device *dev,
               gd_error *err)
{
    const int64_t wave = (int64_t)dev->sm_count * (2048 / GD_CUDA_THREADS); /* blocks that fill the GPU once */
    int64_t splits;
    if (inner == 1) {
        const int64_t chunk = gd_cuda_plan_chunk(&splits, outer, len, wave, GD_ARG_MIN_ROW_CHUNK);
        return run_split<MAX, T>(out, outer, splits, wave, dev, err, [&](int64_t *o, Cand<T> *part) {
            arg_rows<MAX, T><<<grid_of(outer * splits, wave), GD_CUDA_THREADS, 0, dev->stream>>>(
                o, part, from_input<T>{in, len}, outer, len, splits, chunk);
        });
    }
    const int tx_bits = gd_cuda_col_tile_bits(inner);
    const int64_t tiles = outer * ((inner + ((int64_t)1 << tx_bits) - 1) >> tx_bits);
    const int64_t chunk = gd_cuda_plan_chunk(&splits, tiles, len, wave,
                                             GD_ARG_MIN_LANE_ROWS * (GD_CUDA_THREADS >> tx_bits));
    return run_split<MAX, T>(out, outer * inner, splits, wave, dev, err, [&](int64_t *o, Cand<T> *part) {
        arg_cols<MAX, T><<<grid_of(tiles * splits, wave), GD_CUDA_THREADS, 0, dev->stream>>>(
            o, part, in, outer, len, inner, tx_bits, splits, chunk);
    });
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
