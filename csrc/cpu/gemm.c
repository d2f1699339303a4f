/* gemm.c - the CPU backend's matrix products through OpenBLAS (row-major CBLAS): one product
 * threaded by OpenBLAS, batches of small products one per core on gpudev's threads.
 */
#include <limits.h>
#include <string.h>

#include <cblas.h> /* scipy-openblas32: scipy_cblas_* with 32-bit int dimensions */

#include "cpu.h"

#define GD_GEMM_ONE_THREAD_MNK 262144.0    /* OpenBLAS runs m*n*k <= 64^3 on one thread */
#define GD_GEMM_BATCH_MAX_MNK 16777216.0   /* batches of products up to 256^3: a core each */
#define GD_GEMM_PAR_MNK ((int64_t)1 << 18) /* multiply-adds worth a second thread */

/* ------------------------------------------------------------------------------------------
 * matrix products (OpenBLAS, row-major CBLAS)
 *
 * One product: OpenBLAS threads it. A batch of small products (1000 of 100x100 is the
 * benchmark) is spread over gpudev's threads instead, one parallel loop for the whole batch,
 * each product on one core: OpenBLAS's own batch call synchronizes its threads after every
 * `nthreads` products, which costs more than the products on a busy machine. Inside that
 * loop OpenBLAS must run single-threaded, or each product would start OpenBLAS's threads
 * too (nt * nt threads on nt cores). It already is for m*n*k <= 64^3; for larger products
 * its thread count is lowered to 1 for the duration (gd_blas_single_begin in threads.c: a
 * process-wide setting, so it is reference-counted and gd_cpu_set_num_threads defers).
 * ---------------------------------------------------------------------------------------- */

typedef struct gd_gemm_job {
    gd_dtype dtype;
    char *c;
    const char *a, *b;
    int m, n, k;
    int64_t stride_a, stride_b, stride_c; /* bytes */
} gd_gemm_job;

/* Row-major C (m, n) = A (m, k) @ B (k, n) for product p of the batch. */
static void gd_gemm_one(const gd_gemm_job *job, int64_t p)
{
    const char *a = job->a + p * job->stride_a, *b = job->b + p * job->stride_b;
    char *c = job->c + p * job->stride_c;
    if (job->dtype == GD_FLOAT32)
        scipy_cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, job->m, job->n, job->k, 1.0f,
                          (const float *)a, job->k, (const float *)b, job->n, 0.0f, (float *)c, job->n);
    else
        scipy_cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, job->m, job->n, job->k, 1.0,
                          (const double *)a, job->k, (const double *)b, job->n, 0.0, (double *)c, job->n);
}

static void gd_gemm_range(void *ctx, int64_t begin, int64_t end)
{
    for (int64_t p = begin; p < end; p++) gd_gemm_one(ctx, p);
}

int gd_cpu_gemm(void *c, gd_dtype dtype, const void *a, const void *b, int64_t batch, int64_t m, int64_t n,
                int64_t k, int64_t stride_a, int64_t stride_b, int64_t stride_c, int device, gd_error *err)
{
    (void)device;
    if ((unsigned)dtype >= GD_NUM_DTYPES || !gd_dtype_is_float(dtype))
        return gd_set_error(err, GD_ERR_VALUE, "matmul: %s is not supported by BLAS; convert with astype(float32) first",
                       (unsigned)dtype < GD_NUM_DTYPES ? gd_dtype_name(dtype) : "this dtype");
    if (batch < 0 || m < 0 || n < 0 || k < 0)
        return gd_set_error(err, GD_ERR_VALUE, "matmul: negative extent (batch=%lld, m=%lld, n=%lld, k=%lld)",
                       (long long)batch, (long long)m, (long long)n, (long long)k);
    if (batch == 0 || m == 0 || n == 0) return GD_OK;
    const size_t esz = gd_dtype_size(dtype);
    if (k == 0) { /* an empty sum: BLAS may leave C untouched */
        for (int64_t p = 0; p < batch; p++) memset((char *)c + p * stride_c * (int64_t)esz, 0, (size_t)(m * n) * esz);
        return GD_OK;
    }
    if (m > INT_MAX || n > INT_MAX || k > INT_MAX)
        return gd_set_error(err, GD_ERR_VALUE,
                       "matmul: dimension too large for OpenBLAS's 32-bit interface (m=%lld, n=%lld, k=%lld; "
                       "each must be <= %d); split the product into blocks",
                       (long long)m, (long long)n, (long long)k, INT_MAX);

    gd_gemm_job job = {dtype, c, a, b, (int)m, (int)n, (int)k, stride_a * (int64_t)esz,
                       stride_b * (int64_t)esz, stride_c * (int64_t)esz};
    const double mnk = (double)m * (double)n * (double)k;
    const int nt = batch == 1 ? 1 : gd_threads_for((int64_t)GD_MIN((double)batch * mnk, 1e18), GD_GEMM_PAR_MNK);
    const int one_thread_already = mnk <= GD_GEMM_ONE_THREAD_MNK;
    if (nt <= 1 || !(one_thread_already || (mnk <= GD_GEMM_BATCH_MAX_MNK && batch >= 2 * (int64_t)nt))) {
        gd_gemm_range(&job, 0, batch); /* one product, or few large ones: OpenBLAS threads each */
        return GD_OK;
    }
    if (!one_thread_already) gd_blas_single_begin();
    /* a grab of products worth GD_GEMM_PAR_MNK multiply-adds: 64 of 16x16x16, one of 100^3 */
    const int64_t grain = GD_MAX((int64_t)1, (int64_t)((double)GD_GEMM_PAR_MNK / mnk));
    gd_parallel_for_dynamic(nt, batch, GD_MIN(grain, (batch + 2 * nt - 1) / (2 * nt)), gd_gemm_range, &job);
    if (!one_thread_already) gd_blas_single_end();
    return GD_OK;
}
