/* gather.cu - the CUDA backend's indexing that copies: gathers, scatters and scatter-adds of
 * whole rows by an int64 index array, and stream compaction of a bool mask (count, scan,
 * scatter) into the coordinates of its nonzero elements.
 *
 * A check kernel records the first bad index in a device word (atomicMin), and the copy
 * kernels queued after it do nothing when that word is set, so a bad index never reads or
 * writes out of bounds; the word is then read back, which synchronizes.
 *
 * Checked once, read once: the GIL is released while these are queued, so another thread's
 * write to the index array or the mask can land on the stream between two of our kernels.
 * The copy kernel therefore reads each index once and checks that value again (a bad one
 * moves nothing and is flagged), and the fill kernel never writes past the `count` that
 * sized its output, whatever the mask holds by then.
 */
#include "backend_cuda.cuh"

#include <climits>

namespace {

constexpr long long GD_NO_BAD = LLONG_MAX;
constexpr int GD_NZ_ITEMS = 8; /* mask bytes per thread in the compaction kernels */

/* ------------------------------------------------------------------------------------------
 * kernels: the bounds check and the row copies
 * ---------------------------------------------------------------------------------------- */

__global__ void init_flag_kernel(long long *flag) { *flag = GD_NO_BAD; }

__global__ void check_kernel(long long *flag, const int64_t *__restrict__ idx, int64_t n, int64_t rows)
{
    for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < n; k += (int64_t)gridDim.x * blockDim.x)
        if (idx[k] < -rows || idx[k] >= rows) atomicMin(flag, (long long)k);
}

__device__ inline int64_t wrap(int64_t i, int64_t rows) { return i < 0 ? i + rows : i; }

/* One kernel for the three row copies: MODE 0 gathers, 1 scatters, 2 scatter-adds. With
 * `narrow` (n * inner fits in 32 bits, gd_cuda_narrow_index) element e splits into its row and
 * column by a 32-bit division, a few instructions, instead of a 64-bit one, a software routine. */
template <int MODE, class U>
__global__ void rows_kernel(U *dst, const U *src, const int64_t *__restrict__ idx, int64_t n, int64_t rows,
                            int64_t inner, long long *flag, bool narrow)
{
    if (*flag != GD_NO_BAD) return;
    const int64_t total = n * inner;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total; e += (int64_t)gridDim.x * blockDim.x) {
        const int64_t k = narrow ? (int64_t)((uint32_t)e / (uint32_t)inner) : e / inner;
        const int64_t i = e - k * inner, r = idx[k];
        if (r < -rows || r >= rows) { /* rewritten since the check */
            atomicMin(flag, (long long)k);
            continue;
        }
        const int64_t at = wrap(r, rows) * inner + i;
        if constexpr (MODE == 0) dst[e] = src[at];
        else if constexpr (MODE == 1) dst[at] = src[e];
        else atomicAdd(&dst[at], src[e]);
    }
}

/* ------------------------------------------------------------------------------------------
 * kernels: stream compaction
 * ---------------------------------------------------------------------------------------- */

__global__ void count_kernel(unsigned long long *count, const uint8_t *__restrict__ mask, int64_t n)
{
    unsigned long long s = 0;
    for (int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; p < n; p += (int64_t)gridDim.x * blockDim.x)
        s += mask[p] != 0;
    if (s) atomicAdd(count, s);
}

/* The exclusive prefix sum of v over the block (blockDim.x == GD_CUDA_THREADS), through buf
 * (GD_CUDA_THREADS words of shared memory); *total gets the block's sum. Every thread of the
 * block calls it. */
__device__ long long block_scan(long long v, long long *buf, long long *total)
{
    const int t = threadIdx.x;
    buf[t] = v;
    __syncthreads();
    for (int off = 1; off < GD_CUDA_THREADS; off <<= 1) {
        const long long add = t >= off ? buf[t - off] : 0;
        __syncthreads();
        buf[t] += add;
        __syncthreads();
    }
    const long long inclusive = buf[t];
    *total = buf[GD_CUDA_THREADS - 1];
    __syncthreads(); /* buf is reused by the next call */
    return inclusive - v;
}

/* The nonzero bytes among this thread's GD_NZ_ITEMS consecutive bytes of tile t. */
__device__ long long thread_count(const uint8_t *mask, int64_t n, int64_t t)
{
    const int64_t lo = (t * GD_CUDA_THREADS + threadIdx.x) * GD_NZ_ITEMS;
    long long c = 0;
    for (int64_t p = lo; p < lo + GD_NZ_ITEMS && p < n; p++) c += mask[p] != 0;
    return c;
}

__global__ void tile_count_kernel(long long *tile_counts, const uint8_t *__restrict__ mask, int64_t n, int64_t tiles)
{
    __shared__ long long buf[GD_CUDA_THREADS];
    for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
        long long total;
        block_scan(thread_count(mask, n, t), buf, &total);
        if (threadIdx.x == 0) tile_counts[t] = total;
    }
}

/* tile_counts becomes its exclusive prefix sum; one block. */
__global__ void tile_scan_kernel(long long *tile_counts, int64_t tiles)
{
    __shared__ long long buf[GD_CUDA_THREADS];
    long long carry = 0;
    for (int64_t base = 0; base < tiles; base += GD_CUDA_THREADS) {
        const int64_t t = base + threadIdx.x;
        long long total;
        const long long excl = block_scan(t < tiles ? tile_counts[t] : 0, buf, &total);
        if (t < tiles) tile_counts[t] = carry + excl;
        carry += total;
    }
}

struct MaskShape {
    int ndim;
    int64_t shape[GD_MAX_NDIM];
};

__global__ void fill_kernel(int64_t *out, int64_t count, const uint8_t *__restrict__ mask, int64_t n, int64_t tiles,
                            const long long *tile_offsets, MaskShape s)
{
    __shared__ long long buf[GD_CUDA_THREADS];
    for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
        long long total;
        long long at = tile_offsets[t] + block_scan(thread_count(mask, n, t), buf, &total);
        const int64_t lo = (t * GD_CUDA_THREADS + threadIdx.x) * GD_NZ_ITEMS;
        for (int64_t p = lo; p < lo + GD_NZ_ITEMS && p < n && at < count; p++) {
            if (!mask[p]) continue;
            int64_t rem = p;
            for (int k = s.ndim - 1; k >= 0; k--) {
                out[k * count + at] = rem % s.shape[k];
                rem /= s.shape[k];
            }
            at++;
        }
    }
}

/* ------------------------------------------------------------------------------------------
 * launchers
 * ---------------------------------------------------------------------------------------- */

unsigned grid_of(int64_t blocks) { return (unsigned)(blocks < 65535 ? blocks : 65535); }

/* A device word from the pool, read back into *host once the queued work is done, then freed. */
int read_back(long long *host, long long *word, gd_cuda_device *dev, gd_error *err)
{
    cudaError_t s = cudaMemcpyAsync(host, word, sizeof *host, cudaMemcpyDeviceToHost, dev->stream);
    if (s == cudaSuccess) s = cudaStreamSynchronize(dev->stream);
    gd_cuda_pool_free(word, dev, sizeof *word, true);
    GD_CHECK(s);
    return GD_OK;
}

template <int MODE, class U>
int launch_rows(void *dst, const void *src, const int64_t *idx, int64_t n, int64_t rows, int64_t inner,
                long long *flag, gd_cuda_device *dev, gd_error *err)
{
    rows_kernel<MODE, U><<<gd_cuda_blocks(dev, n * inner, GD_CUDA_THREADS), GD_CUDA_THREADS, 0, dev->stream>>>(
        (U *)dst, (const U *)src, idx, n, rows, inner, flag, gd_cuda_narrow_index(n * inner));
    GD_CHECK_LAUNCH();
    return GD_OK;
}

/* The type a row copy moves: bits for gathers and scatters, the dtype's own for adds. */
template <int MODE>
int dispatch_rows(void *dst, const void *src, const int64_t *idx, int64_t n, int64_t rows, gd_dtype dtype,
                  int64_t inner, long long *flag, gd_cuda_device *dev, gd_error *err)
{
    if constexpr (MODE == 2) {
        if (dtype == GD_FLOAT32) return launch_rows<2, float>(dst, src, idx, n, rows, inner, flag, dev, err);
        if (dtype == GD_FLOAT64) return launch_rows<2, double>(dst, src, idx, n, rows, inner, flag, dev, err);
        /* integers wrap on overflow, as NumPy's do: the unsigned add has the same bits */
        if (dtype == GD_INT32) return launch_rows<2, unsigned int>(dst, src, idx, n, rows, inner, flag, dev, err);
        return launch_rows<2, unsigned long long>(dst, src, idx, n, rows, inner, flag, dev, err);
    } else {
        switch (gd_dtype_size(dtype)) {
        case 1: return launch_rows<MODE, uint8_t>(dst, src, idx, n, rows, inner, flag, dev, err);
        case 4: return launch_rows<MODE, uint32_t>(dst, src, idx, n, rows, inner, flag, dev, err);
        default: return launch_rows<MODE, unsigned long long>(dst, src, idx, n, rows, inner, flag, dev, err);
        }
    }
}

/* Check the indices, then (queued after the check, skipped when it failed) move the rows. */
template <int MODE>
int run_rows(void *dst, int64_t *bad, const void *src, int64_t rows, const int64_t *idx, int64_t n, gd_dtype dtype,
             int64_t inner, int device, gd_error *err)
{
    *bad = -1;
    if ((unsigned)dtype >= GD_NUM_DTYPES || (MODE == 2 && dtype == GD_BOOL))
        return gd_set_error(err, GD_ERR_VALUE, "cuda row copy: dtype %d is not supported", (int)dtype);
    if (n <= 0) return GD_OK;
    gd_cuda_device *dev;
    int rc = gd_cuda_enter(&dev, device, err);
    if (rc != GD_OK) return rc;
    long long *flag = nullptr, host = GD_NO_BAD;
    rc = gd_cuda_pool_alloc((void **)&flag, dev, sizeof *flag, true, err);
    if (rc != GD_OK) return rc;
    init_flag_kernel<<<1, 1, 0, dev->stream>>>(flag);
    cudaError_t s = cudaGetLastError();
    if (s == cudaSuccess) {
        check_kernel<<<gd_cuda_blocks(dev, n, GD_CUDA_THREADS), GD_CUDA_THREADS, 0, dev->stream>>>(flag, idx, n, rows);
        s = cudaGetLastError();
    }
    if (s != cudaSuccess) {
        gd_cuda_pool_free(flag, dev, sizeof *flag, true);
        GD_CHECK(s);
    }
    rc = inner > 0 ? dispatch_rows<MODE>(dst, src, idx, n, rows, dtype, inner, flag, dev, err) : GD_OK;
    if (rc != GD_OK) {
        gd_cuda_pool_free(flag, dev, sizeof *flag, true);
        return rc;
    }
    rc = read_back(&host, flag, dev, err);
    if (rc == GD_OK && host != GD_NO_BAD) *bad = host;
    return rc;
}

} // namespace

/* ------------------------------------------------------------------------------------------
 * vtable entries
 * ---------------------------------------------------------------------------------------- */

int gd_cuda_gather_rows(void *out, int64_t *bad, const void *src, int64_t rows, const int64_t *idx, int64_t n,
                        gd_dtype dtype, int64_t inner, int device, gd_error *err)
{
    return run_rows<0>(out, bad, src, rows, idx, n, dtype, inner, device, err);
}

int gd_cuda_scatter_rows(void *dst, int64_t *bad, int64_t rows, const int64_t *idx, const void *src, int64_t n,
                         gd_dtype dtype, int64_t inner, int device, gd_error *err)
{
    return run_rows<1>(dst, bad, src, rows, idx, n, dtype, inner, device, err);
}

int gd_cuda_scatter_add_rows(void *dst, int64_t *bad, int64_t rows, const int64_t *idx, const void *src, int64_t n,
                             gd_dtype dtype, int64_t inner, int device, gd_error *err)
{
    return run_rows<2>(dst, bad, src, rows, idx, n, dtype, inner, device, err);
}

int gd_cuda_count_nonzero(int64_t *count, const void *mask, int64_t n, int device, gd_error *err)
{
    *count = 0;
    if (n <= 0) return GD_OK;
    gd_cuda_device *dev;
    int rc = gd_cuda_enter(&dev, device, err);
    if (rc != GD_OK) return rc;
    long long *word = nullptr, host = 0;
    rc = gd_cuda_pool_alloc((void **)&word, dev, sizeof *word, true, err);
    if (rc != GD_OK) return rc;
    cudaError_t s = cudaMemsetAsync(word, 0, sizeof *word, dev->stream);
    if (s == cudaSuccess) {
        count_kernel<<<gd_cuda_blocks(dev, n, GD_CUDA_THREADS), GD_CUDA_THREADS, 0, dev->stream>>>(
            (unsigned long long *)word, (const uint8_t *)mask, n);
        s = cudaGetLastError();
    }
    if (s != cudaSuccess) {
        gd_cuda_pool_free(word, dev, sizeof *word, true);
        GD_CHECK(s);
    }
    rc = read_back(&host, word, dev, err);
    *count = host;
    return rc;
}

int gd_cuda_nonzero(int64_t *out, int64_t count, const void *mask, int ndim, const int64_t *shape, int device,
                    gd_error *err)
{
    if (ndim < 1 || ndim > GD_MAX_NDIM)
        return gd_set_error(err, GD_ERR_VALUE, "cuda nonzero: ndim %d is outside 1..%d", ndim, GD_MAX_NDIM);
    MaskShape s;
    s.ndim = ndim;
    int64_t n = 1;
    for (int k = 0; k < ndim; k++) n *= s.shape[k] = shape[k];
    if (n <= 0 || count <= 0) return GD_OK;
    gd_cuda_device *dev;
    int rc = gd_cuda_enter(&dev, device, err);
    if (rc != GD_OK) return rc;
    const int64_t tile = (int64_t)GD_CUDA_THREADS * GD_NZ_ITEMS, tiles = (n + tile - 1) / tile;
    long long *offsets = nullptr;
    rc = gd_cuda_pool_alloc((void **)&offsets, dev, (size_t)tiles * sizeof *offsets, true, err);
    if (rc != GD_OK) return rc;
    const uint8_t *m = (const uint8_t *)mask;
    tile_count_kernel<<<grid_of(tiles), GD_CUDA_THREADS, 0, dev->stream>>>(offsets, m, n, tiles);
    cudaError_t st = cudaGetLastError();
    if (st == cudaSuccess) {
        tile_scan_kernel<<<1, GD_CUDA_THREADS, 0, dev->stream>>>(offsets, tiles);
        st = cudaGetLastError();
    }
    if (st == cudaSuccess) {
        fill_kernel<<<grid_of(tiles), GD_CUDA_THREADS, 0, dev->stream>>>(out, count, m, n, tiles, offsets, s);
        st = cudaGetLastError();
    }
    gd_cuda_pool_free(offsets, dev, (size_t)tiles * sizeof *offsets, true);
    GD_CHECK(st);
    return GD_OK;
}
