/* gemm.c - the CPU backend's matrix products: float32 and float64 through OpenBLAS (row-major
 * CBLAS; transposed operands as transpose flags), always single-threaded and split over
 * gpudev's threads; integer products, and float products of at most 1024 multiply-adds,
 * with plain loops.
 */
#include <limits.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h> /* scipy-openblas32: scipy_cblas_* with 32-bit int dimensions */

#include "backend_cpu.h"
#include "cpu.h"
#include "pool.h"
#include "port.h"

/* ------------------------------------------------------------------------------------------
 * matrix products (OpenBLAS, row-major CBLAS)
 *
 * OpenBLAS runs on one thread (threads.c says why) and gpudev splits the work on its pool,
 * whose caller never waits for a worker that has not started: one product is cut into
 * panels of its result, each panel one OpenBLAS call; a batch of products is handed out a
 * few whole products at a time. A panel call packs its own copy of the operand every panel
 * reads whole, so a product is cut along the longer side of its result (rows when m >= n):
 * the copied operand is then the smaller one. Below GD_PAR_GEMM_MNK multiply-adds
 * (threads.h) a product runs whole on the calling thread.
 * ---------------------------------------------------------------------------------------- */

typedef struct gd_gemm_job {
    gd_dtype dtype;
    char *c;
    const char *a, *b;
    int m, n, k;
    int lda, ldb;
    int trans_a, trans_b;
    int64_t stride_a, stride_b, stride_c; /* bytes */
    int64_t esz;
    int64_t p;        /* the product a panel loop works on */
    int split_rows;   /* panels of rows (1) or of columns (0) */
} gd_gemm_job;

/* Row-major C[i0:i1, j0:j1] = A[i0:i1, :] @ B[:, j0:j1] for product p of the batch; ldc is n.
 * Row i of A is row i of the stored matrix, or its column i when A is transposed (and the
 * same for the columns of B). */
static void gd_gemm_block(const gd_gemm_job *job, int64_t p, int64_t i0, int64_t i1, int64_t j0, int64_t j1)
{
    const char *a = job->a + p * job->stride_a + (job->trans_a ? i0 : i0 * job->lda) * job->esz;
    const char *b = job->b + p * job->stride_b + (job->trans_b ? j0 * job->ldb : j0) * job->esz;
    char *c = job->c + p * job->stride_c + (i0 * job->n + j0) * job->esz;
    const enum CBLAS_TRANSPOSE ta = job->trans_a ? CblasTrans : CblasNoTrans;
    const enum CBLAS_TRANSPOSE tb = job->trans_b ? CblasTrans : CblasNoTrans;
    const int m = (int)(i1 - i0), n = (int)(j1 - j0);
    if (job->dtype == GD_FLOAT32)
        scipy_cblas_sgemm(CblasRowMajor, ta, tb, m, n, job->k, 1.0f, (const float *)a, job->lda, (const float *)b,
                          job->ldb, 0.0f, (float *)c, job->n);
    else
        scipy_cblas_dgemm(CblasRowMajor, ta, tb, m, n, job->k, 1.0, (const double *)a, job->lda, (const double *)b,
                          job->ldb, 0.0, (double *)c, job->n);
}

/* whole products [begin, end) of the batch */
static void gd_gemm_range(void *ctx, int64_t begin, int64_t end)
{
    const gd_gemm_job *job = ctx;
    for (int64_t p = begin; p < end; p++) gd_gemm_block(job, p, 0, job->m, 0, job->n);
}

/* rows or columns [begin, end) of product job->p */
static void gd_gemm_panel(void *ctx, int64_t begin, int64_t end)
{
    const gd_gemm_job *job = ctx;
    if (job->split_rows) gd_gemm_block(job, job->p, begin, end, 0, job->n);
    else gd_gemm_block(job, job->p, 0, job->m, begin, end);
}

/* Panel edges on multiples of this many columns (and the row panels of a @ a.T below, where
 * rows were not measured): OpenBLAS is column-major and sees C = A B as
 * C^T = B^T A^T, so our columns are its M, which its Haswell and SkylakeX sgemm kernels walk in
 * tiles of 16; an edge inside a tile runs the tail kernels (one thread, CPU time of
 * 10x256 @ 256xh: 6.3 us at h = 128, 7.3 us at h = 132, 7.9 us at h = 144). */
#define GD_GEMM_PANEL_ALIGN 16
/* Panel edges on multiples of this many rows: our rows are OpenBLAS's N, walked 4 at a time
 * (sgemm's 16x4 kernels), and the time per row is flat at any multiple of 4. Edges on
 * multiples of 16 cut 1000 rows into 512 + 488 for 2 threads: one thread, CPU time of
 * h x 1000 @ 1000 x 1000, median of 9 (2-core AMD EPYC, SkylakeX kernels):
 *     h = 488: 9.69 ms   496: 9.84   500: 9.88   504: 10.00   512: 10.15
 * so the caller's 512 rows ended 2.7% after an even half would have, and a 1000^3 product,
 * whose wall time on a quiet machine is its longer part's, took 1.01x NumPy's (whose two
 * OpenBLAS threads split it evenly); on 4, the parts are 500 + 500. */
#define GD_GEMM_ROW_ALIGN 4

/* Pieces per thread's part of `extent` rows or columns, for a product of `mnk` multiply-adds:
 * several, so that a thread that finishes early can take the panels of one that was
 * descheduled, but each at least GD_GEMM_PANEL_MIN rows, or GD_GEMM_PIECE_BIG once the
 * product is large enough (GD_GEMM_BIG_MNK) that repacking the operand read whole costs more
 * than a late thread would (threads.h has the figures). */
static int gd_gemm_pieces(int64_t extent, int nt, double mnk)
{
    const int64_t rows = mnk >= (double)GD_GEMM_BIG_MNK ? GD_GEMM_PIECE_BIG : GD_GEMM_PANEL_MIN;
    const int64_t p = extent / nt / rows;
    return p < 1 ? 1 : p > GD_POOL_PIECES ? GD_POOL_PIECES : (int)p;
}

/* One product, whole on this thread or in panels on nt threads. */
static void gd_gemm_split(gd_gemm_job *job, int64_t p, int nt)
{
    job->p = p;
    job->split_rows = job->m >= job->n;
    const int64_t extent = job->split_rows ? job->m : job->n;
    nt = (int)GD_MIN((int64_t)nt, extent / GD_GEMM_PANEL_MIN);
    if (nt <= 1) {
        gd_gemm_block(job, p, 0, job->m, 0, job->n);
        return;
    }
    const double mnk = (double)job->m * (double)job->n * (double)job->k;
    gd_pool_for(nt, extent, job->split_rows ? GD_GEMM_ROW_ALIGN : GD_GEMM_PANEL_ALIGN, gd_gemm_pieces(extent, nt, mnk),
                gd_gemm_panel, job);
}

/* ------------------------------------------------------------------------------------------
 * priming OpenBLAS's packing buffers
 *
 * Each OpenBLAS call packs its operands into one of a few buffers of the library's (32 MiB
 * of address space each, taken by whichever call comes first and kept for the life of the
 * process), whose pages the system maps only when first touched. OpenBLAS is column-major
 * and sees our row-major C = A B as C^T = B^T A^T, so its M is our n. A product with M at
 * most GEMM_P (320 for float32 on Haswell and Zen) packs each slice of its second operand at
 * the same spot, the first ~16 KiB of the buffer's B area, and its kernel prefetches past
 * that spot into pages no call has ever touched. A prefetch of an unmapped page is dropped
 * only after a full page walk (in a virtual machine, a two-level one) and is never cached,
 * so each one pays the walk again: 256x784 @ (256x784).T took 8.8 ms on one thread instead
 * of 2.7 ms, and stayed that slow for the life of the process, until some larger product
 * happened to write the pages (NumPy's threaded products do). Reading the buffer's first
 * MiB from outside (through /proc/self/maps, in an experiment) had the same effect, so it is
 * the unmapped pages and nothing else. These machines set transparent huge pages to
 * "madvise", as Ubuntu does; with "always" a first touch would map 2 MiB at once (not
 * measured).
 *
 * So, before the first float32 product, every buffer a product on gpudev's threads can hold
 * is primed: each of the nt threads runs, at the same moment, one product whose M is
 * GD_PRIME_M (above every GEMM_P, so OpenBLAS lays the slices side by side) and which
 * writes GD_PRIME_K x GD_PRIME_N floats (128 KiB) of the B area. Each thread waits, at most
 * GD_PRIME_WAIT_NS, until all have arrived, so that each call takes a different buffer.
 * The 5e7 multiply-adds cost about 2-3 ms per thread, once. A try in which some thread did
 * not arrive in time (a busy machine) is not counted and is made again on a later product;
 * after GD_PRIME_TRIES such tries gpudev stops trying. float64's kernels did not slow down
 * this way (256x784 @ (256x784).T: 1.02x after priming), so only float32's buffers are
 * primed. Threads of the user's own that call products at the same time as the pool's may
 * take further buffers, which stay unprimed.
 * ---------------------------------------------------------------------------------------- */

#define GD_PRIME_M 1536
#define GD_PRIME_K 256
#define GD_PRIME_N 128
#define GD_PRIME_WAIT_NS ((int64_t)10000000)
#define GD_PRIME_TRIES 3

typedef struct gd_prime_job {
    int nt;
    atomic_int arrived;
    atomic_int late; /* some thread stopped waiting before all had arrived */
    const float *a, *b; /* zeros: only the pages the packing writes matter */
    float *c;           /* one result per thread */
} gd_prime_job;

static atomic_int gd_primed_threads; /* products on this many threads at once find primed buffers */
static atomic_int gd_prime_late; /* tries in which some thread arrived late */

static void gd_prime_range(void *ctx, int64_t begin, int64_t end)
{
    gd_prime_job *job = ctx;
    for (int64_t t = begin; t < end; t++) {
        atomic_fetch_add(&job->arrived, 1);
        const int64_t deadline = gd_pool_now_ns() + GD_PRIME_WAIT_NS;
        while (atomic_load(&job->arrived) < job->nt && gd_pool_now_ns() < deadline) gd_thread_yield();
        if (atomic_load(&job->arrived) < job->nt) atomic_store(&job->late, 1);
        /* column-major C^T = B^T A^T: OpenBLAS's M (the rows it compares with GEMM_P) is our n */
        scipy_cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, GD_PRIME_N, GD_PRIME_M, GD_PRIME_K, 1.0f,
                          job->a, GD_PRIME_K, job->b, GD_PRIME_M, 0.0f, job->c + t * GD_PRIME_M * GD_PRIME_N,
                          GD_PRIME_M);
    }
}

/* Primes the buffers of products on nt threads at once, if not done yet (see above). */
static void gd_blas_prime(int nt)
{
    nt = GD_MIN(nt, GD_POOL_MAX_THREADS); /* a loop's most; more would wait for each other */
    if (nt <= atomic_load_explicit(&gd_primed_threads, memory_order_relaxed)) return;
    if (atomic_load(&gd_prime_late) >= GD_PRIME_TRIES) return; /* gave up: products are only slower */
    float *a = calloc((size_t)GD_PRIME_N * GD_PRIME_K + (size_t)GD_PRIME_K * GD_PRIME_M, sizeof(float));
    float *c = malloc((size_t)nt * GD_PRIME_M * GD_PRIME_N * sizeof(float));
    if (a != NULL && c != NULL) { /* without memory, products are only slower */
        gd_prime_job job = {.nt = nt, .a = a, .b = a + (size_t)GD_PRIME_N * GD_PRIME_K, .c = c};
        gd_pool_for(nt, nt, 1, 1, gd_prime_range, &job);
        if (atomic_load(&job.late)) {
            atomic_fetch_add(&gd_prime_late, 1);
        } else { /* all started together: each held its own buffer */
            int seen = atomic_load(&gd_primed_threads);
            while (seen < nt && !atomic_compare_exchange_weak(&gd_primed_threads, &seen, nt)) {
            }
        }
    }
    free(a);
    free(c);
}

int gd_cpu_blas_primed_threads(int *late)
{
    if (late != NULL) *late = atomic_load(&gd_prime_late);
    return atomic_load(&gd_primed_threads);
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

/* Rows [i0, i1) of the upper triangle of C = A A^T (A = op(stored a), n x k): the diagonal
 * block by syrk, the rest of those rows, C[i0:i1, i1:n] = A[i0:i1] A[i1:n]^T, by gemm (whose
 * second operand is then A's rows read with the opposite transpose flag). */
static void gd_gram_rows(const gd_gemm_job *job, int64_t i0, int64_t i1)
{
    const int64_t row = job->trans_a ? 1 : job->lda; /* elements from one row of A to the next */
    const char *a0 = job->a + i0 * row * job->esz, *a1 = job->a + i1 * row * job->esz;
    char *c = job->c + (i0 * job->n + i0) * job->esz, *c1 = job->c + (i0 * job->n + i1) * job->esz;
    const enum CBLAS_TRANSPOSE t = job->trans_a ? CblasTrans : CblasNoTrans;
    const enum CBLAS_TRANSPOSE tb = job->trans_a ? CblasNoTrans : CblasTrans;
    const int h = (int)(i1 - i0), rest = (int)(job->n - i1);
    if (job->dtype == GD_FLOAT32) {
        scipy_cblas_ssyrk(CblasRowMajor, CblasUpper, t, h, job->k, 1.0f, (const float *)a0, job->lda, 0.0f,
                          (float *)c, job->n);
        if (rest > 0)
            scipy_cblas_sgemm(CblasRowMajor, t, tb, h, rest, job->k, 1.0f, (const float *)a0, job->lda,
                              (const float *)a1, job->lda, 0.0f, (float *)c1, job->n);
    } else {
        scipy_cblas_dsyrk(CblasRowMajor, CblasUpper, t, h, job->k, 1.0, (const double *)a0, job->lda, 0.0,
                          (double *)c, job->n);
        if (rest > 0)
            scipy_cblas_dgemm(CblasRowMajor, t, tb, h, rest, job->k, 1.0, (const double *)a0, job->lda,
                              (const double *)a1, job->lda, 0.0, (double *)c1, job->n);
    }
}

/* Row panels of the upper triangle with equal work: rows above row r hold n^2/2 - (n-r)^2/2
 * of its elements, so panel j of P starts at n (1 - sqrt(1 - j / P)), on a multiple of
 * GD_GEMM_PANEL_ALIGN. */
typedef struct gd_gram_job {
    const gd_gemm_job *job;
    int64_t panels;
} gd_gram_job;

static int64_t gd_gram_edge(const gd_gram_job *g, int64_t j)
{
    const int64_t n = g->job->n;
    if (j >= g->panels) return n;
    const double r = (double)n * (1.0 - sqrt(1.0 - (double)j / (double)g->panels));
    return GD_MIN(n, (int64_t)(r / GD_GEMM_PANEL_ALIGN) * GD_GEMM_PANEL_ALIGN);
}

static void gd_gram_range(void *ctx, int64_t begin, int64_t end)
{
    const gd_gram_job *g = ctx;
    for (int64_t j = begin; j < end; j++) {
        const int64_t i0 = gd_gram_edge(g, j), i1 = gd_gram_edge(g, j + 1);
        if (i1 > i0) gd_gram_rows(g->job, i0, i1);
    }
}

static void gd_gram(const gd_gemm_job *job)
{
    const double work = (double)job->n * (double)job->n * (double)job->k / 2; /* multiply-adds of syrk */
    const int nt = (int)GD_MIN((int64_t)gd_threads_for((int64_t)GD_MIN(work, 1e18), GD_PAR_GEMM_MNK),
                               (int64_t)job->n / GD_GEMM_PANEL_MIN);
    if (nt <= 1) {
        gd_gram_rows(job, 0, job->n);
    } else {
        const int pieces = gd_gemm_pieces(job->n, nt, work);
        gd_gram_job g = {job, (int64_t)nt * pieces};
        gd_pool_for(nt, g.panels, 1, pieces, gd_gram_range, &g);
    }
    const int64_t tiles = (job->n + GD_MIRROR_TILE - 1) / GD_MIRROR_TILE;
    gd_mirror_job mj = {job->c, job->n, tiles, job->esz};
    gd_parallel_for(gd_threads_for((int64_t)job->n * job->n, GD_PAR_ELEMENTWISE), tiles * tiles, 1, gd_mirror_range,
                    &mj);
}

/* ------------------------------------------------------------------------------------------
 * plain-loop products: integers (int64 and int32), which no BLAS has, and float products of
 * at most GD_GEMM_SMALL_MNK multiply-adds. Row i of C is a[i, 0] * row 0 of B, plus
 * a[i, 1] * row 1 of B, and so on in k order, so the inner loop runs along a row of B and C
 * (vectorized when B is not transposed); arithmetic in the unsigned type of the width wraps
 * as NumPy's integer matmul does. Correct, not fast: about a multiply-add per nanosecond and
 * thread.
 *
 * Why small float products take this loop: each element is then summed as it is written,
 * ((a0 b0 + a1 b1) + a2 b2) + ..., with no fused multiply-add, the value the same sum written
 * elementwise gives, as PyTorch's CPU build gives it for such products. OpenBLAS's small
 * kernels sum with fused multiply-adds, so d2l's channels check (a 1x1 convolution as a
 * (2, 3) @ (3, 9) product against the channel-by-channel sum, `< 1e-6` on the sum of the
 * differences) failed for 23 of 200 seeds, and for none in PyTorch, whose product equals the
 * elementwise sum bit for bit in all 200. At 8x8x8 a call took 0.48 us from Python, NumPy's
 * 0.95 us; at 16x16x16, 1.89 against 1.00 us, so larger products go to OpenBLAS.
 * ---------------------------------------------------------------------------------------- */

#define GD_GEMM_SMALL_MNK 1024

typedef struct gd_loop_gemm_job {
    const gd_matrix *a, *b;
    void *c;
    int64_t m, n, k, stride_c;
} gd_loop_gemm_job;

/* S the suffix, T the element type, U the type it is computed in (integers: the unsigned twin) */
#define GD_DEFINE_LOOP_GEMM(S, T, U)                                                                 \
    static inline T gd_matrix_at_##S(const gd_matrix *x, int64_t p, int64_t i, int64_t j)        \
    {                                                                                            \
        const T *d = (const T *)x->data + p * x->stride;                                         \
        return x->trans ? d[j * x->ld + i] : d[i * x->ld + j];                                   \
    }                                                                                            \
    GD_SIMD static void gd_loop_gemm_row_update_##S(U *c, const T *b, int64_t step, U a, int64_t n) \
    {                                                                                            \
        if (step == 1)                                                                           \
            for (int64_t j = 0; j < n; j++) c[j] += a * (U)b[j];                                 \
        else                                                                                     \
            for (int64_t j = 0; j < n; j++) c[j] += a * (U)b[j * step];                          \
    }                                                                                            \
    /* rows [begin, end) of the whole batch, row r = product r / m, row r % m */                 \
    static void gd_loop_gemm_rows_##S(void *ctx, int64_t begin, int64_t end)                         \
    {                                                                                            \
        const gd_loop_gemm_job *job = ctx;                                                           \
        const gd_matrix *b = job->b;                                                             \
        for (int64_t r = begin; r < end; r++) {                                                  \
            const int64_t p = r / job->m, i = r % job->m;                                        \
            U *c = (U *)job->c + p * job->stride_c + i * job->n;                                 \
            const T *b0 = (const T *)b->data + p * b->stride; /* the first term, then the others */ \
            const int64_t step = b->trans ? b->ld : 1;                                           \
            const U a0 = (U)gd_matrix_at_##S(job->a, p, i, 0);                                   \
            for (int64_t j = 0; j < job->n; j++) c[j] = a0 * (U)b0[j * step];                    \
            for (int64_t q = 1; q < job->k; q++) {                                               \
                const T *brow = (const T *)b->data + p * b->stride + (b->trans ? q : q * b->ld); \
                gd_loop_gemm_row_update_##S(c, brow, b->trans ? b->ld : 1,                           \
                                        (U)gd_matrix_at_##S(job->a, p, i, q), job->n);           \
            }                                                                                    \
        }                                                                                        \
    }
GD_DEFINE_LOOP_GEMM(i64, int64_t, uint64_t)
GD_DEFINE_LOOP_GEMM(i32, int32_t, uint32_t)
GD_DEFINE_LOOP_GEMM(f32, float, float)
GD_DEFINE_LOOP_GEMM(f64, double, double)
#undef GD_DEFINE_LOOP_GEMM

/* C = A B, every product of the batch, by the loops above. */
static int gd_loop_gemm(void *c, gd_dtype dtype, const gd_matrix *a, const gd_matrix *b, int64_t batch, int64_t m,
                        int64_t n, int64_t k, int64_t stride_c)
{
    gd_loop_gemm_job job = {a, b, c, m, n, k, stride_c};
    const int64_t rows = batch * m;
    gd_range_fn fn = dtype == GD_INT64 ? gd_loop_gemm_rows_i64 : dtype == GD_INT32 ? gd_loop_gemm_rows_i32
                     : dtype == GD_FLOAT32 ? gd_loop_gemm_rows_f32 : gd_loop_gemm_rows_f64;
    const double mnk = (double)rows * (double)n * (double)k;
    gd_parallel_for(gd_threads_for((int64_t)GD_MIN(mnk, 1e18), GD_PAR_IGEMM_MNK), rows, 1, fn, &job);
    return GD_OK;
}

/* ------------------------------------------------------------------------------------------
 * the entry
 * ---------------------------------------------------------------------------------------- */

int gd_cpu_gemm(void *c, gd_dtype dtype, const gd_matrix *a, const gd_matrix *b, int64_t batch, int64_t m, int64_t n,
                int64_t k, int64_t stride_c, int device, gd_error *err)
{
    (void)device;
    if (dtype != GD_FLOAT32 && dtype != GD_FLOAT64 && dtype != GD_INT64 && dtype != GD_INT32)
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
    const double mnk = (double)m * (double)n * (double)k;
    if (dtype == GD_INT64 || dtype == GD_INT32) return gd_loop_gemm(c, dtype, a, b, batch, m, n, k, stride_c);
    if (m > INT_MAX || n > INT_MAX || k > INT_MAX || a->ld > INT_MAX || b->ld > INT_MAX)
        return gd_set_error(err, GD_ERR_VALUE,
                       "matmul: dimension too large for OpenBLAS's 32-bit interface (m=%lld, n=%lld, k=%lld, "
                       "lda=%lld, ldb=%lld; each must be <= %d); split the product into blocks",
                       (long long)m, (long long)n, (long long)k, (long long)a->ld, (long long)b->ld, INT_MAX);

    if (mnk <= (double)GD_GEMM_SMALL_MNK) return gd_loop_gemm(c, dtype, a, b, batch, m, n, k, stride_c);
    gd_blas_init();
    if (dtype == GD_FLOAT32) gd_blas_prime(gd_cpu_get_num_threads());
    gd_gemm_job job = {.dtype = dtype, .c = c, .a = a->data, .b = b->data, .m = (int)m, .n = (int)n, .k = (int)k,
                       .lda = (int)a->ld, .ldb = (int)b->ld, .trans_a = a->trans, .trans_b = b->trans,
                       .stride_a = a->stride * (int64_t)esz, .stride_b = b->stride * (int64_t)esz,
                       .stride_c = stride_c * (int64_t)esz, .esz = (int64_t)esz};
    const int nt = gd_threads_for((int64_t)GD_MIN((double)batch * mnk, 1e18), GD_PAR_GEMM_MNK);
    if (gd_is_gram(a, b, batch, m, n)) {
        gd_gram(&job);
        return GD_OK;
    }
    if (batch >= 2 * (int64_t)nt) {
        /* whole products, a grab worth GD_GEMM_BATCH_GRAIN_MNK multiply-adds at a time (64
         * of 16x16x16, one of 100^3), at least two grabs per thread */
        const int64_t grain = GD_MAX((int64_t)1, (int64_t)((double)GD_GEMM_BATCH_GRAIN_MNK / mnk));
        gd_parallel_for_dynamic(nt, batch, GD_MIN(grain, (batch + 2 * nt - 1) / (2 * nt)), gd_gemm_range, &job);
        return GD_OK;
    }
    /* one product, or a few: each split in panels over the threads */
    const int each = gd_threads_for((int64_t)GD_MIN(mnk, 1e18), GD_PAR_GEMM_MNK);
    for (int64_t p = 0; p < batch; p++) gd_gemm_split(&job, p, each);
    return GD_OK;
}
