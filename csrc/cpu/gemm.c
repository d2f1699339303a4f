/* gemm.c - the CPU backend's matrix products: float32 and float64 through OpenBLAS (row-major
 * CBLAS; transposed operands as transpose flags), one product threaded by OpenBLAS, batches of
 * small products one per core on gpudev's threads; int64 products with plain loops.
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
    int lda, ldb;
    int trans_a, trans_b;
    int64_t stride_a, stride_b, stride_c; /* bytes */
} gd_gemm_job;

/* Row-major C (m, n) = A (m, k) @ B (k, n) for product p of the batch. */
static void gd_gemm_one(const gd_gemm_job *job, int64_t p)
{
    const char *a = job->a + p * job->stride_a, *b = job->b + p * job->stride_b;
    char *c = job->c + p * job->stride_c;
    const enum CBLAS_TRANSPOSE ta = job->trans_a ? CblasTrans : CblasNoTrans;
    const enum CBLAS_TRANSPOSE tb = job->trans_b ? CblasTrans : CblasNoTrans;
    if (job->dtype == GD_FLOAT32)
        scipy_cblas_sgemm(CblasRowMajor, ta, tb, job->m, job->n, job->k, 1.0f, (const float *)a, job->lda,
                          (const float *)b, job->ldb, 0.0f, (float *)c, job->n);
    else
        scipy_cblas_dgemm(CblasRowMajor, ta, tb, job->m, job->n, job->k, 1.0, (const double *)a, job->lda,
                          (const double *)b, job->ldb, 0.0, (double *)c, job->n);
}

static void gd_gemm_range(void *ctx, int64_t begin, int64_t end)
{
    for (int64_t p = begin; p < end; p++) gd_gemm_one(ctx, p);
}

/* ------------------------------------------------------------------------------------------
 * a @ a.T and a.T @ a: OpenBLAS's syrk computes one triangle of the symmetric result, half the
 * multiply-adds of gemm (NumPy does the same), and the other triangle is mirrored in tiles
 * ---------------------------------------------------------------------------------------- */

#define GD_MIRROR_TILE 64

typedef struct gd_mirror_job {
    char *c;
    int64_t n, tiles, esz;
} gd_mirror_job;

/* tiles t of the strictly lower block triangle: C[j][i] = C[i][j] for j > i */
static void gd_mirror_range(void *ctx, int64_t begin, int64_t end)
{
    const gd_mirror_job *job = ctx;
    for (int64_t t = begin; t < end; t++) {
        const int64_t bi = t / job->tiles, bj = t % job->tiles;
        if (bj < bi) continue;
        const int64_t i0 = bi * GD_MIRROR_TILE, j0 = bj * GD_MIRROR_TILE;
        const int64_t i1 = GD_MIN(job->n, i0 + GD_MIRROR_TILE), j1 = GD_MIN(job->n, j0 + GD_MIRROR_TILE);
        for (int64_t j = j0; j < j1; j++)
            for (int64_t i = i0; i < GD_MIN(i1, j); i++) {
                if (job->esz == 4) ((float *)job->c)[j * job->n + i] = ((float *)job->c)[i * job->n + j];
                else ((double *)job->c)[j * job->n + i] = ((double *)job->c)[i * job->n + j];
            }
    }
}

/* Whether C = A @ B is one product of a matrix with its own transpose. */
static int gd_is_gram(const gd_matrix *a, const gd_matrix *b, int64_t batch, int64_t m, int64_t n)
{
    return batch == 1 && m == n && a->data == b->data && a->trans != b->trans && a->ld == b->ld;
}

static void gd_gram(const gd_gemm_job *job)
{
    /* a not transposed: C = A A^T with A the stored rows; transposed: C = S^T S */
    const enum CBLAS_TRANSPOSE t = job->trans_a ? CblasTrans : CblasNoTrans;
    if (job->dtype == GD_FLOAT32)
        scipy_cblas_ssyrk(CblasRowMajor, CblasUpper, t, job->n, job->k, 1.0f, (const float *)job->a, job->lda, 0.0f,
                          (float *)job->c, job->n);
    else
        scipy_cblas_dsyrk(CblasRowMajor, CblasUpper, t, job->n, job->k, 1.0, (const double *)job->a, job->lda, 0.0,
                          (double *)job->c, job->n);
    const int64_t tiles = (job->n + GD_MIRROR_TILE - 1) / GD_MIRROR_TILE;
    gd_mirror_job mj = {job->c, job->n, tiles, (int64_t)gd_dtype_size(job->dtype)};
    gd_parallel_for(gd_threads_for((int64_t)job->n * job->n, GD_PAR_CHEAP), tiles * tiles, 1, gd_mirror_range, &mj);
}

/* ------------------------------------------------------------------------------------------
 * int64 products: no BLAS has them. Row i of C accumulates a[i, p] * row p of B, so the
 * inner loop runs along a row of B and C (vectorized when B is not transposed); arithmetic in
 * uint64 wraps as NumPy's int64 matmul does. Correct, not fast: about a multiply-add per
 * nanosecond and thread.
 * ---------------------------------------------------------------------------------------- */

typedef struct gd_igemm_job {
    const gd_matrix *a, *b;
    int64_t *c;
    int64_t m, n, k, stride_c;
} gd_igemm_job;

static inline int64_t gd_matrix_at(const gd_matrix *x, int64_t p, int64_t i, int64_t j)
{
    const int64_t *d = (const int64_t *)x->data + p * x->stride;
    return x->trans ? d[j * x->ld + i] : d[i * x->ld + j];
}

GD_SIMD static void gd_igemm_row_update(uint64_t *c, const int64_t *b, int64_t step, uint64_t a, int64_t n)
{
    if (step == 1)
        for (int64_t j = 0; j < n; j++) c[j] += a * GD_U64(b[j]);
    else
        for (int64_t j = 0; j < n; j++) c[j] += a * GD_U64(b[j * step]);
}

/* rows [begin, end) of the whole batch, row r = product r / m, row r % m */
static void gd_igemm_rows(void *ctx, int64_t begin, int64_t end)
{
    const gd_igemm_job *job = ctx;
    const gd_matrix *b = job->b;
    for (int64_t r = begin; r < end; r++) {
        const int64_t p = r / job->m, i = r % job->m;
        uint64_t *c = (uint64_t *)(job->c + p * job->stride_c + i * job->n);
        for (int64_t j = 0; j < job->n; j++) c[j] = 0;
        for (int64_t q = 0; q < job->k; q++) {
            const int64_t *brow = (const int64_t *)b->data + p * b->stride + (b->trans ? q : q * b->ld);
            gd_igemm_row_update(c, brow, b->trans ? b->ld : 1, GD_U64(gd_matrix_at(job->a, p, i, q)), job->n);
        }
    }
}

/* ------------------------------------------------------------------------------------------
 * the entry
 * ---------------------------------------------------------------------------------------- */

int gd_cpu_gemm(void *c, gd_dtype dtype, const gd_matrix *a, const gd_matrix *b, int64_t batch, int64_t m, int64_t n,
                int64_t k, int64_t stride_c, int device, gd_error *err)
{
    (void)device;
    if (dtype != GD_FLOAT32 && dtype != GD_FLOAT64 && dtype != GD_INT64)
        return gd_cpu_bad_dtype(err, "matmul", dtype);
    if (batch < 0 || m < 0 || n < 0 || k < 0)
        return gd_set_error(err, GD_ERR_VALUE, "matmul: negative extent (batch=%lld, m=%lld, n=%lld, k=%lld)",
                       (long long)batch, (long long)m, (long long)n, (long long)k);
    if (batch == 0 || m == 0 || n == 0) return GD_OK;
    const size_t esz = gd_dtype_size(dtype);
    if (k == 0) { /* an empty sum: BLAS may leave C untouched */
        for (int64_t p = 0; p < batch; p++) memset((char *)c + p * stride_c * (int64_t)esz, 0, (size_t)(m * n) * esz);
        return GD_OK;
    }
    if (dtype == GD_INT64) {
        gd_igemm_job ij = {a, b, c, m, n, k, stride_c};
        const int64_t rows = batch * m;
        gd_parallel_for(gd_threads_for((int64_t)GD_MIN((double)rows * (double)n * (double)k, 1e18), GD_GEMM_PAR_MNK),
                        rows, 1, gd_igemm_rows, &ij);
        return GD_OK;
    }
    if (m > INT_MAX || n > INT_MAX || k > INT_MAX || a->ld > INT_MAX || b->ld > INT_MAX)
        return gd_set_error(err, GD_ERR_VALUE,
                       "matmul: dimension too large for OpenBLAS's 32-bit interface (m=%lld, n=%lld, k=%lld, "
                       "lda=%lld, ldb=%lld; each must be <= %d); split the product into blocks",
                       (long long)m, (long long)n, (long long)k, (long long)a->ld, (long long)b->ld, INT_MAX);

    gd_gemm_job job = {dtype, c, a->data, b->data, (int)m, (int)n, (int)k, (int)a->ld, (int)b->ld, a->trans, b->trans,
                       a->stride * (int64_t)esz, b->stride * (int64_t)esz, stride_c * (int64_t)esz};
    if (gd_is_gram(a, b, batch, m, n)) {
        gd_gram(&job);
        return GD_OK;
    }
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
