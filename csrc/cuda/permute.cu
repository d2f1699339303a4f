/* permute.cu - the CUDA backend's transposes: a tiled transpose through shared memory for
 * (batched) 2-D transposes, a gather for other orders, after merging axes that stay neighbours.
 */
#include "backend_cuda.cuh"

namespace {

/* ------------------------------------------------------------------------------------------
 * permute
 * ---------------------------------------------------------------------------------------- */

#define GD_TILE 32
#define GD_TILE_ROWS 8 /* a 32x32 tile moved by 32x8 threads, 4 elements each */

/* out[b] (cols, rows) = in[b] (rows, cols) transposed, for b < batch. Reads and writes are
 * both coalesced by going through a shared-memory tile; the +1 column keeps the transposed
 * reads of the tile free of bank conflicts. U is a same-size unsigned type: only bits move. */
template <class U>
__global__ void __launch_bounds__(GD_TILE * GD_TILE_ROWS)
    transpose_kernel(U *__restrict__ out, const U *__restrict__ in, int64_t batch, int64_t rows, int64_t cols)
{
    __shared__ U tile[GD_TILE][GD_TILE + 1];
    const int64_t tiles_r = (rows + GD_TILE - 1) / GD_TILE, tiles_c = (cols + GD_TILE - 1) / GD_TILE;
    const int64_t per_matrix = tiles_r * tiles_c, total = batch * per_matrix;
    const int tx = threadIdx.x, ty = threadIdx.y;
    for (int64_t t = blockIdx.x; t < total; t += gridDim.x) {
        const int64_t b = t / per_matrix, rem = t % per_matrix;
        const int64_t r0 = (rem / tiles_c) * GD_TILE, c0 = (rem % tiles_c) * GD_TILE;
        const U *src = in + b * rows * cols;
        U *dst = out + b * rows * cols;
#pragma unroll
        for (int j = 0; j < GD_TILE; j += GD_TILE_ROWS) {
            const int64_t r = r0 + ty + j, c = c0 + tx;
            if (r < rows && c < cols) tile[ty + j][tx] = src[r * cols + c];
        }
        __syncthreads();
#pragma unroll
        for (int j = 0; j < GD_TILE; j += GD_TILE_ROWS) {
            const int64_t c = c0 + ty + j, r = r0 + tx; /* output row c, output column r */
            if (c < cols && r < rows) dst[c * rows + r] = tile[tx][ty + j];
        }
        __syncthreads(); /* the tile is refilled by the next iteration */
    }
}

/* The general case: out index -> coordinates in output order -> input offset. */
struct PermuteArgs {
    int ndim;
    int64_t out_shape[GD_MAX_NDIM];
    int64_t in_strides[GD_MAX_NDIM]; /* elements, in output axis order */
};

template <class U> __global__ void gather_kernel(U *__restrict__ out, const U *__restrict__ in, int64_t n, PermuteArgs p)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t rem = i, off = 0;
#pragma unroll
        for (int k = GD_MAX_NDIM - 1; k >= 0; k--) {
            if (k < p.ndim) {
                off += (rem % p.out_shape[k]) * p.in_strides[k];
                rem /= p.out_shape[k];
            }
        }
        out[i] = in[off];
    }
}

/* Drop axes of size 1 and merge axes that stay adjacent and in order, so that e.g. (0, 2, 3, 1)
 * on (B, C, H, W) becomes the batched transpose (0, 2, 1) on (B, C, H*W). Returns the new ndim. */
int simplify_permutation(int64_t *shape, int *perm, int ndim, const int64_t *in_shape, const int *in_perm)
{
    int kept_index[GD_MAX_NDIM]; /* input axis -> index among the kept axes, or -1 */
    int kept = 0;
    for (int k = 0; k < ndim; k++) kept_index[k] = in_shape[k] == 1 ? -1 : kept++;
    int order[GD_MAX_NDIM], m = 0; /* kept input axes in output order, renumbered */
    for (int k = 0; k < ndim; k++)
        if (kept_index[in_perm[k]] >= 0) order[m++] = kept_index[in_perm[k]];
    int64_t kept_shape[GD_MAX_NDIM];
    for (int k = 0; k < ndim; k++)
        if (kept_index[k] >= 0) kept_shape[kept_index[k]] = in_shape[k];

    /* groups: runs of consecutive input axes in output order */
    int group_first[GD_MAX_NDIM], groups = 0;
    int64_t group_size[GD_MAX_NDIM];
    for (int k = 0; k < m; k++) {
        if (k > 0 && order[k] == order[k - 1] + 1) {
            group_size[groups - 1] *= kept_shape[order[k]];
        } else {
            group_first[groups] = order[k];
            group_size[groups] = kept_shape[order[k]];
            groups++;
        }
    }
    /* the merged input axes are the groups sorted by their first input axis */
    for (int g = 0; g < groups; g++) {
        int r = 0;
        for (int h = 0; h < groups; h++) r += group_first[h] < group_first[g];
        shape[r] = group_size[g];
        perm[g] = r;
    }
    return groups;
}

template <class U>
int launch_permute(void *out, const void *in, int ndim, const int64_t *in_shape, const int *in_perm, int64_t n,
                   gd_cuda_device *dev, gd_error *err)
{
    int64_t shape[GD_MAX_NDIM];
    int perm[GD_MAX_NDIM];
    int nd = simplify_permutation(shape, perm, ndim, in_shape, in_perm);
    if (nd <= 1) { /* the identity once size-1 axes are gone: a plain copy */
        GD_CHECK(cudaMemcpyAsync(out, in, (size_t)n * sizeof(U), cudaMemcpyDeviceToDevice, dev->stream));
        return GD_OK;
    }
    int64_t batch = 0, rows = 0, cols = 0;
    if (nd == 2 && perm[0] == 1) batch = 1, rows = shape[0], cols = shape[1];
    if (nd == 3 && perm[0] == 0 && perm[1] == 2) batch = shape[0], rows = shape[1], cols = shape[2];
    if (batch > 0) {
        int64_t tiles = batch * ((rows + GD_TILE - 1) / GD_TILE) * ((cols + GD_TILE - 1) / GD_TILE);
        int64_t wave = (int64_t)dev->sm_count * 8;
        unsigned blocks = (unsigned)(tiles < wave ? tiles : wave);
        transpose_kernel<U><<<blocks, dim3(GD_TILE, GD_TILE_ROWS), 0, dev->stream>>>((U *)out, (const U *)in, batch,
                                                                                     rows, cols);
        GD_CHECK_LAUNCH();
        return GD_OK;
    }
    PermuteArgs p;
    p.ndim = nd;
    int64_t in_strides[GD_MAX_NDIM];
    int64_t stride = 1;
    for (int k = nd - 1; k >= 0; k--) {
        in_strides[k] = stride;
        stride *= shape[k];
    }
    for (int k = 0; k < nd; k++) {
        p.out_shape[k] = shape[perm[k]];
        p.in_strides[k] = in_strides[perm[k]];
    }
    gather_kernel<U><<<gd_cuda_blocks(dev, n, GD_CUDA_THREADS), GD_CUDA_THREADS, 0, dev->stream>>>(
        (U *)out, (const U *)in, n, p);
    GD_CHECK_LAUNCH();
    return GD_OK;
}

} // namespace

/* ------------------------------------------------------------------------------------------
 * vtable entries
 * ---------------------------------------------------------------------------------------- */

// in_shape (ndim), out.shape[k] = in_shape[perm[k]]; both C-contiguous
int gd_cuda_permute(void *out, gd_dtype dtype, const void *in, int ndim, const int64_t *in_shape, const int *perm,
                    int device, gd_error *err)
{
    if (ndim < 0 || ndim > GD_MAX_NDIM)
        return gd_set_error(err, GD_ERR_VALUE, "cuda permute: ndim %d is outside 0..%d", ndim, GD_MAX_NDIM);
    if ((unsigned)dtype >= GD_NUM_DTYPES || (gd_dtype_size(dtype) != 4 && gd_dtype_size(dtype) != 8))
        return gd_set_error(err, GD_ERR_VALUE, "cuda permute: dtype %d is not 4 or 8 bytes wide", (int)dtype);
    int64_t n = 1;
    for (int k = 0; k < ndim; k++) n *= in_shape[k];
    if (n <= 0) return GD_OK;
    gd_cuda_device *dev;
    int rc = gd_cuda_enter(&dev, device, err);
    if (rc != GD_OK) return rc;
    if (gd_dtype_size(dtype) == 4) return launch_permute<uint32_t>(out, in, ndim, in_shape, perm, n, dev, err);
    return launch_permute<uint64_t>(out, in, ndim, in_shape, perm, n, dev, err);
}
