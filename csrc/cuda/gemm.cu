/* gemm.cu - row-major (batched) matrix products: float32 and float64 through cuBLAS (transposed
 * operands as transpose flags), with TF32 off unless the user allowed it; int64 and int32 through
 * a plain tiled kernel (correct, not fast: no cuBLAS routine takes them and wraps). One cuBLAS
 * handle per device, created on the first product (cuBLAS cannot start without a driver, and
 * startup costs time a user who never multiplies should not pay), with its workspace from
 * gpudev's pool.
 */
#include "backend_cuda.cuh"

#include <climits>
#include <type_traits>

namespace {

/* The workspace cuBLAS recommends: 32 MiB on Hopper (compute capability 9) and later, 4 MiB
 * before. It comes from gpudev's pool, so it shows in memory_stats' reserved bytes and a full
 * device is handled by the pool's one retry path. */
size_t blas_workspace_bytes(const gd_cuda_device *dev) { return (size_t)(dev->cc_major >= 9 ? 32 : 4) << 20; }

/* cublasCreate takes device memory with plain cudaMalloc, outside gpudev's pool, and the pool
 * keeps freed arrays up to its release threshold: when creation runs out of memory, give the
 * pool's cache back and try once more. A handle is published only once bound to the stream
 * (an unbound one would run on the legacy default stream, unordered with everything else),
 * and with its workspace set after that (cublasSetStream drops the workspace). */
int blas_create(gd_cuda_device *dev, gd_error *err)
{
    cublasHandle_t h = nullptr;
    cublasStatus_t st = cublasCreate(&h);
    if (st == CUBLAS_STATUS_ALLOC_FAILED) {
        int rc = gd_cuda_trim(dev, err);
        if (rc != GD_OK) return rc;
        st = cublasCreate(&h);
    }
    if (st != CUBLAS_STATUS_SUCCESS) return gd_cuda_fail(err, st, "cublasCreate(&handle)", __FILE__, __LINE__);
    const size_t ws_bytes = blas_workspace_bytes(dev);
    void *ws = nullptr;
    int rc = gd_cuda_pool_alloc(&ws, dev, ws_bytes, false, err);
    if (rc == GD_OK) {
        st = cublasSetStream(h, dev->stream);
        if (st == CUBLAS_STATUS_SUCCESS) st = cublasSetWorkspace(h, ws, ws_bytes);
        if (st == CUBLAS_STATUS_SUCCESS) st = cublasSetMathMode(h, CUBLAS_DEFAULT_MATH);
        if (st != CUBLAS_STATUS_SUCCESS)
            rc = gd_cuda_fail(err, st, "cublasSetStream / cublasSetWorkspace (handle)", __FILE__, __LINE__);
    }
    if (rc != GD_OK) {
        cublasDestroy(h);
        if (ws) gd_cuda_pool_free(ws, dev, ws_bytes, false);
        return rc;
    }
    dev->blas = h;
    dev->blas_workspace = ws;
    dev->blas_tf32 = 0;
    return GD_OK;
}

/* Creates the device's handle on first use and keeps its math mode in step with set_tf32.
 * Called with dev->mutex held: a handle must not be reconfigured while another thread uses it. */
int blas_ready(gd_cuda_device *dev, gd_error *err)
{
    if (!dev->blas) {
        int rc = blas_create(dev, err);
        if (rc != GD_OK) return rc;
    }
    const int tf32 = gd_cuda_tf32.load(std::memory_order_relaxed) ? 1 : 0;
    if (tf32 != dev->blas_tf32) {
        GD_CHECK(cublasSetMathMode(dev->blas, tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
        dev->blas_tf32 = tf32;
    }
    return GD_OK;
}

/* C (m, n) = 0 for each of `batch` matrices stride_c elements apart: the product over k == 0. */
int zero_products(void *c, size_t elem, int64_t batch, int64_t m, int64_t n, int64_t stride_c, gd_cuda_device *dev,
                  gd_error *err)
{
    const size_t matrix = (size_t)m * (size_t)n * elem;
    if (stride_c == m * n) {
        GD_CHECK(cudaMemsetAsync(c, 0, matrix * (size_t)batch, dev->stream));
        return GD_OK;
    }
    for (int64_t p = 0; p < batch; p++)
        GD_CHECK(cudaMemsetAsync((char *)c + (size_t)p * (size_t)stride_c * elem, 0, matrix, dev->stream));
    return GD_OK;
}

/* cuBLAS is column-major and gpudev is row-major. A row-major (r, s) matrix with leading
 * dimension ld is, byte for byte, its (s, r) transpose in column-major. So the row-major
 * C = A B, i.e. column-major C^T = B^T A^T, is the column-major product of B's memory (seen as
 * B^T, n x k) and A's (seen as A^T, k x m) into C's (seen as C^T, n x m, ld n):
 * gemm(N, N, n, m, k, B, ldb, A, lda, C, n). An operand gpudev holds transposed (a.T) is, in
 * column-major, the matrix itself, so it takes the transpose flag instead: no transposition is
 * ever materialised. */
template <class T>
int gemm_typed(T *c, const gd_matrix &a, const gd_matrix &b, int64_t batch, int m, int n, int k, int64_t stride_c,
               cublasHandle_t h, gd_error *err)
{
    constexpr bool f32 = std::is_same<T, float>::value;
    const T one = 1, zero = 0;
    const cublasOperation_t opa = a.trans ? CUBLAS_OP_T : CUBLAS_OP_N, opb = b.trans ? CUBLAS_OP_T : CUBLAS_OP_N;
    const int lda = (int)a.ld, ldb = (int)b.ld;
    const T *ap = (const T *)a.data, *bp = (const T *)b.data;
    if (batch == 1) {
        if constexpr (f32) GD_CHECK(cublasSgemm(h, opb, opa, n, m, k, &one, bp, ldb, ap, lda, &zero, c, n));
        else GD_CHECK(cublasDgemm(h, opb, opa, n, m, k, &one, bp, ldb, ap, lda, &zero, c, n));
        return GD_OK;
    }
    /* cuBLAS counts the batch in an int; longer batches go in pieces */
    for (int64_t p = 0; p < batch; p += INT_MAX) {
        const int count = (int)(batch - p < INT_MAX ? batch - p : INT_MAX);
        const T *bq = bp + p * b.stride, *aq = ap + p * a.stride;
        T *cq = c + p * stride_c;
        if constexpr (f32)
            GD_CHECK(cublasSgemmStridedBatched(h, opb, opa, n, m, k, &one, bq, ldb, b.stride, aq, lda, a.stride, &zero,
                                               cq, n, stride_c, count));
        else
            GD_CHECK(cublasDgemmStridedBatched(h, opb, opa, n, m, k, &one, bq, ldb, b.stride, aq, lda, a.stride, &zero,
                                               cq, n, stride_c, count));
    }
    return GD_OK;
}

/* ------------------------------------------------------------------------------------------
 * integers (int64, int32): 16 x 16 tiles of C per block, A and B staged through shared memory;
 * arithmetic in the unsigned type of T's width wraps as NumPy's does
 * ---------------------------------------------------------------------------------------- */

#define GD_ITILE 16

template <class T> __device__ __forceinline__ T matrix_at(const gd_matrix &x, int64_t p, int64_t i, int64_t j)
{
    const T *d = (const T *)x.data + p * x.stride;
    return x.trans ? d[j * x.ld + i] : d[i * x.ld + j];
}

template <class T>
__global__ void __launch_bounds__(GD_ITILE *GD_ITILE)
    igemm_kernel(T *c, gd_matrix a, gd_matrix b, int64_t batch, int64_t m, int64_t n, int64_t k, int64_t stride_c)
{
    using U = std::make_unsigned_t<T>;
    __shared__ T ta[GD_ITILE][GD_ITILE], tb[GD_ITILE][GD_ITILE];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int64_t tiles_m = (m + GD_ITILE - 1) / GD_ITILE, tiles_n = (n + GD_ITILE - 1) / GD_ITILE;
    const int64_t total = batch * tiles_m * tiles_n;
    for (int64_t t = blockIdx.x; t < total; t += gridDim.x) { /* uniform across the block */
        const int64_t p = t / (tiles_m * tiles_n), rem = t % (tiles_m * tiles_n);
        const int64_t i = (rem / tiles_n) * GD_ITILE + ty, j = (rem % tiles_n) * GD_ITILE + tx;
        U acc = 0;
        for (int64_t q0 = 0; q0 < k; q0 += GD_ITILE) {
            ta[ty][tx] = i < m && q0 + tx < k ? matrix_at<T>(a, p, i, q0 + tx) : 0;
            tb[ty][tx] = q0 + ty < k && j < n ? matrix_at<T>(b, p, q0 + ty, j) : 0;
            __syncthreads();
#pragma unroll
            for (int q = 0; q < GD_ITILE; q++) acc += (U)ta[ty][q] * (U)tb[q][tx];
            __syncthreads(); /* the tiles are refilled next */
        }
        if (i < m && j < n) c[p * stride_c + i * n + j] = (T)acc;
    }
}

template <class T>
int igemm(void *c, const gd_matrix &a, const gd_matrix &b, int64_t batch, int64_t m, int64_t n, int64_t k,
          int64_t stride_c, gd_cuda_device *dev, gd_error *err)
{
    const int64_t tiles = batch * ((m + GD_ITILE - 1) / GD_ITILE) * ((n + GD_ITILE - 1) / GD_ITILE);
    const int64_t wave = (int64_t)dev->sm_count * 8;
    const unsigned blocks = (unsigned)(tiles < wave ? tiles : wave);
    igemm_kernel<T><<<blocks, dim3(GD_ITILE, GD_ITILE), 0, dev->stream>>>((T *)c, a, b, batch, m, n, k, stride_c);
    GD_CHECK_LAUNCH();
    return GD_OK;
}

/* The launcher table, [dtype] (one row): cuBLAS products of float32 and float64. */
using gemm_launch = int (*)(void *c, const gd_matrix &a, const gd_matrix &b, int64_t batch, int m, int n, int k,
                            int64_t stride_c, cublasHandle_t h, gd_error *err);

template <class T>
int launch_gemm(void *c, const gd_matrix &a, const gd_matrix &b, int64_t batch, int m, int n, int k, int64_t stride_c,
                cublasHandle_t h, gd_error *err)
{
    return gemm_typed<T>((T *)c, a, b, batch, m, n, k, stride_c, h, err);
}

struct pick_gemm {
    template <int, class T> static constexpr gemm_launch entry()
    {
        if constexpr (std::is_floating_point<T>::value) return launch_gemm<T>;
        else return nullptr;
    }
};

using gemm_launchers = gd_launch_table<gemm_launch, 1, pick_gemm>;

} // namespace

/* for p < batch: C + p*stride_c (m, n) = A_p (m, k) @ B_p (k, n), operands as gd_matrix says */
int gd_cuda_gemm(void *c, gd_dtype dtype, const gd_matrix *a, const gd_matrix *b, int64_t batch, int64_t m, int64_t n,
                 int64_t k, int64_t stride_c, int device, gd_error *err)
{
    const gemm_launch launch = (unsigned)dtype < GD_NUM_DTYPES ? gemm_launchers::at[0][dtype] : nullptr;
    if (!launch && dtype != GD_INT64 && dtype != GD_INT32)
        return gd_set_error(err, GD_ERR_VALUE, "matmul on cuda: dtype %d is not float32, float64, int64 or int32",
                             (int)dtype);
    if (batch <= 0 || m <= 0 || n <= 0) return GD_OK;
    if (launch && (m > INT_MAX || n > INT_MAX || k > INT_MAX || a->ld > INT_MAX || b->ld > INT_MAX))
        return gd_set_error(err, GD_ERR_VALUE,
                             "matmul on cuda: (m, n, k) = (%lld, %lld, %lld) with leading dimensions %lld and %lld "
                             "exceeds cuBLAS's limit of %d; split the product into blocks",
                             (long long)m, (long long)n, (long long)k, (long long)a->ld, (long long)b->ld, INT_MAX);
    gd_cuda_device *dev;
    int rc = gd_cuda_enter(&dev, device, err);
    if (rc != GD_OK) return rc;
    if (k <= 0) return zero_products(c, gd_dtype_size(dtype), batch, m, n, stride_c, dev, err);
    if (!launch && dtype == GD_INT32) return igemm<int32_t>(c, *a, *b, batch, m, n, k, stride_c, dev, err);
    if (!launch) return igemm<int64_t>(c, *a, *b, batch, m, n, k, stride_c, dev, err);

    std::lock_guard<std::mutex> lock(dev->mutex);
    rc = blas_ready(dev, err);
    if (rc != GD_OK) return rc;
    return launch(c, *a, *b, batch, (int)m, (int)n, (int)k, stride_c, dev->blas, err);
}
