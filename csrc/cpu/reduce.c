/* reduce.c - the CPU backend's reductions: sum, sum of squares, max, min and product over the middle
 * axis of an (outer, len, inner) block, with results that do not depend on the thread count.
 */
#include <math.h>
#include <stdlib.h>

#include "cpu.h"

#define GD_LANES 32                      /* independent accumulators in reductions */
#define GD_RED_BLOCK ((int64_t)1 << 14)  /* smallest block of a long row reduction */
#define GD_RED_MAX_BLOCKS 1024           /* blocks per row at most (partials on stack) */
#define GD_RED_TILE 1024                 /* column reductions: accumulators per tile */
#define GD_RED_RCHUNK ((int64_t)1 << 12) /* column reductions: rows per split chunk */
#define GD_RED_MAX_CHUNKS 64
#define GD_RED_SPLIT_MAX ((int64_t)4096) /* split rows only when outer * inner <= this */

/* ------------------------------------------------------------------------------------------
 * reduction kernels
 *
 * Each kernel reduces elements of type T into accumulators of type A (double for float
 * input and for integer input with a float64 result, uint64 for wrapping integer sums, which
 * int32 input joins (NumPy sums int32 into int64), int64 for integer max/min). A row reduction keeps GD_LANES accumulators so the loop vectorizes
 * without reassociating a single sum; float32 sums therefore stay at float64 accuracy.
 * 32 lanes are four AVX-512 vectors of doubles, four independent chains of additions: with
 * 16 (two chains, each waiting on its last addition) a float32 sum of 1e8 elements took
 * 11.3-15.2 ms on 2 threads here, with 32, 9.2-9.3 ms (NumPy: 22-25 ms). A row shorter than
 * the lanes (a softmax over 10 classes) is summed in order instead: combining 32 lanes per
 * row made a 256x10 sum(axis=1) take 6.5 us, 1.9 us without.
 * ---------------------------------------------------------------------------------------- */

typedef void (*gd_red_row_fn)(void *res, const void *x, int64_t n);     /* *res = reduce(x[:n]) */
typedef void (*gd_red_cols_fn)(void *acc, const void *x, int64_t n);    /* acc[i] op= x[i] */

#define GD_DEFINE_REDUCTION(NAME, T, A, IDENT, LOAD, COMBINE)                                    \
    GD_DEFINE_RED_ROW(NAME, T, A, IDENT, LOAD, COMBINE)                                          \
    GD_DEFINE_RED_COLS(NAME, T, A, LOAD, COMBINE)

#define GD_DEFINE_RED_ROW(NAME, T, A, IDENT, LOAD, COMBINE)                                      \
    GD_SIMD static void NAME##_row(void *res, const void *x_, int64_t n)                         \
    {                                                                                            \
        const T *x = x_;                                                                         \
        if (n < GD_LANES) { /* a short row (a softmax's 10 classes): no lanes to combine */      \
            A a = (IDENT);                                                                       \
            for (int64_t i = 0; i < n; i++) {                                                    \
                A v = LOAD(x[i]);                                                                \
                a = COMBINE(a, v);                                                               \
            }                                                                                    \
            *(A *)res = a;                                                                       \
            return;                                                                              \
        }                                                                                        \
        A acc[GD_LANES];                                                                         \
        for (int j = 0; j < GD_LANES; j++) acc[j] = (IDENT);                                     \
        int64_t i = 0;                                                                           \
        for (; i + GD_LANES <= n; i += GD_LANES)                                                 \
            for (int j = 0; j < GD_LANES; j++) {                                                 \
                A v = LOAD(x[i + j]);                                                            \
                acc[j] = COMBINE(acc[j], v);                                                     \
            }                                                                                    \
        for (int j = 0; i < n; i++, j++) { /* the tail spreads over the lanes too */             \
            A v = LOAD(x[i]);                                                                    \
            acc[j] = COMBINE(acc[j], v);                                                         \
        }                                                                                        \
        for (int w = GD_LANES / 2; w > 0; w /= 2) /* a fixed tree: short dependency chain */     \
            for (int j = 0; j < w; j++) acc[j] = COMBINE(acc[j], acc[j + w]);                    \
        *(A *)res = acc[0];                                                                      \
    }

#define GD_DEFINE_RED_COLS(NAME, T, A, LOAD, COMBINE)                                            \
    GD_SIMD static void NAME##_cols(void *acc_, const void *x_, int64_t n)                       \
    {                                                                                            \
        A *acc = acc_;                                                                           \
        const T *x = x_;                                                                         \
        for (int64_t i = 0; i < n; i++) {                                                        \
            A v = LOAD(x[i]);                                                                    \
            acc[i] = COMBINE(acc[i], v);                                                         \
        }                                                                                        \
    }

#define GD_LD(x) ((double)(x))
#define GD_LD_SQ(x) ((double)(x) * (double)(x))
#define GD_LU(x) GD_U64(x)
#define GD_LU_SQ(x) (GD_U64(x) * GD_U64(x))
#define GD_LI(x) (x)
#define GD_ADD(acc, v) ((acc) + (v))
#define GD_MUL(acc, v) ((acc) * (v)) /* uint64 accumulators: integer products wrap, as NumPy's */
#define GD_IMAX(acc, v) ((v) > (acc) ? (v) : (acc))
#define GD_IMIN(acc, v) ((v) < (acc) ? (v) : (acc))
/* v first: a NaN in either the new value or the accumulator survives */
#define GD_RMAX(acc, v) GD_FMAX(v, acc)
#define GD_RMIN(acc, v) GD_FMIN(v, acc)

GD_DEFINE_REDUCTION(red_sum_f32, float, double, 0.0, GD_LD, GD_ADD)
GD_DEFINE_REDUCTION(red_sum_f64, double, double, 0.0, GD_LD, GD_ADD)
GD_DEFINE_REDUCTION(red_sum_i64d, int64_t, double, 0.0, GD_LD, GD_ADD)
GD_DEFINE_REDUCTION(red_sum_i64, int64_t, uint64_t, 0, GD_LU, GD_ADD)
GD_DEFINE_REDUCTION(red_ssq_f32, float, double, 0.0, GD_LD_SQ, GD_ADD)
GD_DEFINE_REDUCTION(red_ssq_f64, double, double, 0.0, GD_LD_SQ, GD_ADD)
GD_DEFINE_REDUCTION(red_ssq_i64d, int64_t, double, 0.0, GD_LD_SQ, GD_ADD)
GD_DEFINE_REDUCTION(red_ssq_i64, int64_t, uint64_t, 0, GD_LU_SQ, GD_ADD)
GD_DEFINE_REDUCTION(red_sum_i32d, int32_t, double, 0.0, GD_LD, GD_ADD)
GD_DEFINE_REDUCTION(red_sum_i32, int32_t, uint64_t, 0, GD_LU, GD_ADD)
GD_DEFINE_REDUCTION(red_ssq_i32d, int32_t, double, 0.0, GD_LD_SQ, GD_ADD)
GD_DEFINE_REDUCTION(red_ssq_i32, int32_t, uint64_t, 0, GD_LU_SQ, GD_ADD)
/* products accumulate as sums do: float32 in double, integers in wrapping uint64 */
GD_DEFINE_REDUCTION(red_prod_f32, float, double, 1.0, GD_LD, GD_MUL)
GD_DEFINE_REDUCTION(red_prod_f64, double, double, 1.0, GD_LD, GD_MUL)
GD_DEFINE_REDUCTION(red_prod_i64d, int64_t, double, 1.0, GD_LD, GD_MUL)
GD_DEFINE_REDUCTION(red_prod_i64, int64_t, uint64_t, 1, GD_LU, GD_MUL)
GD_DEFINE_REDUCTION(red_prod_i32d, int32_t, double, 1.0, GD_LD, GD_MUL)
GD_DEFINE_REDUCTION(red_prod_i32, int32_t, uint64_t, 1, GD_LU, GD_MUL)

/* max and min of a row: the extreme in the input's own type (exact), then widened to the
 * accumulator; an empty row (never asked for: max of nothing is refused) gives the identity. */
#define GD_DEFINE_EXTREME_ROW(NAME, T, A, IDENT, CMP)                                            \
    GD_DEFINE_EXTREME(NAME##_extreme, T, CMP)                                                    \
    static void NAME##_row(void *res, const void *x, int64_t n)                                  \
    {                                                                                            \
        *(A *)res = n > 0 ? (A)NAME##_extreme(x, n) : (IDENT);                                   \
    }
/* The columns as sums do them: that loop vectorizes (with the accumulators in double, at
 * half float32's width; NumPy's max(axis=0) keeps float32 and is about 2.5x faster). */
#define GD_DEFINE_EXTREMES(NAME, T, A, IDENT, LOAD, CMP, COMBINE)                                \
    GD_DEFINE_EXTREME_ROW(NAME, T, A, IDENT, CMP)                                                \
    GD_DEFINE_RED_COLS(NAME, T, A, LOAD, COMBINE)

GD_DEFINE_EXTREMES(red_max_f32, float, double, -INFINITY, GD_LD, >, GD_RMAX)
GD_DEFINE_EXTREMES(red_max_f64, double, double, -INFINITY, GD_LD, >, GD_RMAX)
GD_DEFINE_EXTREMES(red_min_f32, float, double, INFINITY, GD_LD, <, GD_RMIN)
GD_DEFINE_EXTREMES(red_min_f64, double, double, INFINITY, GD_LD, <, GD_RMIN)
/* int64 has no NaN: the lanes of a plain reduction vectorize, and AVX-512 has a max of int64
 * (vpmaxsq): 8 us for a 256x256 max(axis=1), 15 us as above. */
GD_DEFINE_REDUCTION(red_max_i64, int64_t, int64_t, INT64_MIN, GD_LI, GD_IMAX)
GD_DEFINE_REDUCTION(red_min_i64, int64_t, int64_t, INT64_MAX, GD_LI, GD_IMIN)
/* int32 compares into int64 accumulators (one word type for every integer), merged as int64 */
GD_DEFINE_REDUCTION(red_max_i32, int32_t, int64_t, INT32_MIN, GD_LI, GD_IMAX)
GD_DEFINE_REDUCTION(red_min_i32, int32_t, int64_t, INT32_MAX, GD_LI, GD_IMIN)

/* How one reduction runs: its kernels, the kernels that combine partial accumulators
 * (a plain sum for SUMSQ too), the identity, and the accumulator type. */
typedef struct gd_red_desc {
    gd_red_row_fn row;
    gd_red_cols_fn cols;
    gd_red_row_fn merge_row;
    gd_red_cols_fn merge_cols;
    gd_word identity;
    int acc_double;
} gd_red_desc;

#define GD_RED_DESC(K, M, IDENT_FIELD, IDENT, ACC_DOUBLE)                                        \
    {K##_row, K##_cols, M##_row, M##_cols, {.IDENT_FIELD = (IDENT)}, (ACC_DOUBLE)}

/* [op][input dtype], rows in gpudev.h's gd_redop order, for a result of the input's dtype
 * (int32 sums: int64): integer sums wrap like NumPy's. No bool column: the core reduces bools
 * as int64. */
GD_STATIC_ASSERT(GD_NUM_DTYPES == 5, "the reduction rows list float32, float64, int64 and int32, not bool");
static const gd_red_desc gd_red_descs[][GD_NUM_DTYPES] = {
    {[GD_FLOAT32] = GD_RED_DESC(red_sum_f32, red_sum_f64, d, 0.0, 1),
     [GD_FLOAT64] = GD_RED_DESC(red_sum_f64, red_sum_f64, d, 0.0, 1),
     [GD_INT64] = GD_RED_DESC(red_sum_i64, red_sum_i64, u, 0, 0),
     [GD_INT32] = GD_RED_DESC(red_sum_i32, red_sum_i64, u, 0, 0)},
    {[GD_FLOAT32] = GD_RED_DESC(red_max_f32, red_max_f64, d, -INFINITY, 1),
     [GD_FLOAT64] = GD_RED_DESC(red_max_f64, red_max_f64, d, -INFINITY, 1),
     [GD_INT64] = GD_RED_DESC(red_max_i64, red_max_i64, i, INT64_MIN, 0),
     [GD_INT32] = GD_RED_DESC(red_max_i32, red_max_i64, i, INT32_MIN, 0)},
    {[GD_FLOAT32] = GD_RED_DESC(red_min_f32, red_min_f64, d, INFINITY, 1),
     [GD_FLOAT64] = GD_RED_DESC(red_min_f64, red_min_f64, d, INFINITY, 1),
     [GD_INT64] = GD_RED_DESC(red_min_i64, red_min_i64, i, INT64_MAX, 0),
     [GD_INT32] = GD_RED_DESC(red_min_i32, red_min_i64, i, INT32_MAX, 0)},
    {[GD_FLOAT32] = GD_RED_DESC(red_ssq_f32, red_sum_f64, d, 0.0, 1),
     [GD_FLOAT64] = GD_RED_DESC(red_ssq_f64, red_sum_f64, d, 0.0, 1),
     [GD_INT64] = GD_RED_DESC(red_ssq_i64, red_sum_i64, u, 0, 0),
     [GD_INT32] = GD_RED_DESC(red_ssq_i32, red_sum_i64, u, 0, 0)},
    {[GD_FLOAT32] = GD_RED_DESC(red_prod_f32, red_prod_f64, d, 1.0, 1),
     [GD_FLOAT64] = GD_RED_DESC(red_prod_f64, red_prod_f64, d, 1.0, 1),
     [GD_INT64] = GD_RED_DESC(red_prod_i64, red_prod_i64, u, 1, 0),
     [GD_INT32] = GD_RED_DESC(red_prod_i32, red_prod_i64, u, 1, 0)},
};
GD_STATIC_ASSERT(GD_COUNT_OF(gd_red_descs) == GD_NUM_REDOPS, "gd_red_descs: one row per gd_redop");

/* integer input with a float64 result (mean, norm): sums accumulate in double so they do not
 * wrap; max and min compare as integers, as above. */
static const gd_red_desc gd_red_descs_i64_to_f64[] = {
    GD_RED_DESC(red_sum_i64d, red_sum_f64, d, 0.0, 1),
    GD_RED_DESC(red_max_i64, red_max_i64, i, INT64_MIN, 0),
    GD_RED_DESC(red_min_i64, red_min_i64, i, INT64_MAX, 0),
    GD_RED_DESC(red_ssq_i64d, red_sum_f64, d, 0.0, 1),
    GD_RED_DESC(red_prod_i64d, red_prod_f64, d, 1.0, 1),
};
GD_STATIC_ASSERT(GD_COUNT_OF(gd_red_descs_i64_to_f64) == GD_NUM_REDOPS, "one entry per gd_redop");
static const gd_red_desc gd_red_descs_i32_to_f64[] = {
    GD_RED_DESC(red_sum_i32d, red_sum_f64, d, 0.0, 1),
    GD_RED_DESC(red_max_i32, red_max_i64, i, INT32_MIN, 0),
    GD_RED_DESC(red_min_i32, red_min_i64, i, INT32_MAX, 0),
    GD_RED_DESC(red_ssq_i32d, red_sum_f64, d, 0.0, 1),
    GD_RED_DESC(red_prod_i32d, red_prod_f64, d, 1.0, 1),
};
GD_STATIC_ASSERT(GD_COUNT_OF(gd_red_descs_i32_to_f64) == GD_NUM_REDOPS, "one entry per gd_redop");

#undef GD_RED_DESC

static const gd_red_desc *gd_red_select(gd_redop op, gd_dtype in, gd_dtype out)
{
    if (in == GD_INT64 && out == GD_FLOAT64) return &gd_red_descs_i64_to_f64[op];
    if (in == GD_INT32 && out == GD_FLOAT64) return &gd_red_descs_i32_to_f64[op];
    return &gd_red_descs[op][in];
}

/* out[start + i] = acc[i] converted to out_dtype, for i < n */
static void gd_red_store(void *out, gd_dtype out_dtype, int64_t start, const gd_word *acc, int64_t n,
                         int acc_double)
{
    for (int64_t i = 0; i < n; i++) {
        gd_word w = acc[i];
        switch (out_dtype) {
        case GD_FLOAT32: ((float *)out)[start + i] = acc_double ? (float)w.d : (float)w.i; break;
        case GD_FLOAT64: ((double *)out)[start + i] = acc_double ? w.d : (double)w.i; break;
        case GD_INT32: ((int32_t *)out)[start + i] = acc_double ? GD_F2I32(w.d) : (int32_t)(uint32_t)w.u; break;
        default: ((int64_t *)out)[start + i] = acc_double ? GD_F2I(w.d) : w.i; break;
        }
    }
}

/* ------------------------------------------------------------------------------------------
 * reduction driver
 *
 * out[o, i] = reduce over r of in[o, r, i] for the (outer, len, inner) view.
 * inner == 1: each row is a contiguous run, reduced as a fixed sequence of blocks whose
 *   partial results are combined in order; threads take blocks (one long row) or rows.
 * inner > 1: rows are accumulated into a tile of `inner` accumulators, one contiguous
 *   row segment at a time, so memory is read in order; threads take (o, tile) pairs, and
 *   long thin reductions also split r into fixed chunks merged afterwards.
 * Block and chunk boundaries depend only on the shape, never on the thread count, so a
 * result is the same bits with 1 or 64 threads.
 * ---------------------------------------------------------------------------------------- */

typedef struct gd_red_job {
    const gd_red_desc *d;
    const char *in;
    void *out;
    gd_dtype out_dtype;
    size_t esz;
    int64_t outer, len, inner;
    int64_t block;          /* rows: elements per block */
    gd_word *part;          /* rows: per-block results; columns: per-chunk accumulators */
    int64_t ntiles, nchunks, chunk_rows;
} gd_red_job;

static int64_t gd_red_block_size(int64_t len)
{
    int64_t b = GD_MAX(GD_RED_BLOCK, (len + GD_RED_MAX_BLOCKS - 1) / GD_RED_MAX_BLOCKS);
    return (b + GD_LANES - 1) / GD_LANES * GD_LANES;
}

static void gd_red_blocks_range(void *ctx, int64_t begin, int64_t end)
{
    const gd_red_job *job = ctx;
    for (int64_t blk = begin; blk < end; blk++) {
        int64_t start = blk * job->block, n = GD_MIN(job->block, job->len - start);
        job->d->row(&job->part[blk], job->in + start * (int64_t)job->esz, n);
    }
}

/* A row longer than one block: blocks spread over nt threads, then merged in order. Kept
 * out of line so short rows (the tiny-op path) never set up its 8 KiB of partials. */
GD_NOINLINE static gd_word gd_red_blocked_row(const gd_red_desc *d, const char *x, size_t esz, int64_t len,
                                              int64_t block, int nt)
{
    gd_word part[GD_RED_MAX_BLOCKS], r;
    gd_red_job job = {.d = d, .in = x, .esz = esz, .len = len, .block = block, .part = part};
    int64_t nblocks = (len + block - 1) / block;
    gd_parallel_for(nt, nblocks, 1, gd_red_blocks_range, &job);
    d->merge_row(&r, part, nblocks);
    return r;
}

/* One contiguous row of len elements. */
static gd_word gd_red_one_row(const gd_red_desc *d, const char *x, size_t esz, int64_t len, int nt)
{
    int64_t block = gd_red_block_size(len);
    if (len > block) return gd_red_blocked_row(d, x, esz, len, block, nt);
    gd_word r;
    d->row(&r, x, len);
    return r;
}

static void gd_red_rows_range(void *ctx, int64_t begin, int64_t end)
{
    const gd_red_job *job = ctx;
    for (int64_t o = begin; o < end; o++) {
        gd_word r = gd_red_one_row(job->d, job->in + o * job->len * (int64_t)job->esz, job->esz, job->len, 1);
        gd_red_store(job->out, job->out_dtype, o, &r, 1, job->d->acc_double);
    }
}

/* Job (o, tile, chunk) accumulates rows [chunk * chunk_rows, ...) of tile `tile` of outer
 * index o into acc (tile-width words). */
static void gd_red_cols_accumulate(const gd_red_job *job, gd_word *acc, int64_t o, int64_t tile, int64_t chunk)
{
    const int64_t i0 = tile * GD_RED_TILE, w = GD_MIN((int64_t)GD_RED_TILE, job->inner - i0);
    const int64_t r0 = chunk * job->chunk_rows, r1 = GD_MIN(job->len, r0 + job->chunk_rows);
    const int64_t e = (int64_t)job->esz;
    for (int64_t i = 0; i < w; i++) acc[i] = job->d->identity;
    const char *x = job->in + ((o * job->len + r0) * job->inner + i0) * e;
    for (int64_t r = r0; r < r1; r++, x += job->inner * e) job->d->cols(acc, x, w);
}

static void gd_red_tiles_range(void *ctx, int64_t begin, int64_t end)
{
    const gd_red_job *job = ctx;
    gd_word acc[GD_RED_TILE];
    for (int64_t t = begin; t < end; t++) {
        int64_t o = t / job->ntiles, tile = t % job->ntiles;
        gd_red_cols_accumulate(job, acc, o, tile, 0);
        int64_t i0 = tile * GD_RED_TILE;
        gd_red_store(job->out, job->out_dtype, o * job->inner + i0, acc,
                     GD_MIN((int64_t)GD_RED_TILE, job->inner - i0), job->d->acc_double);
    }
}

/* Split mode: job t = (o, tile, chunk) writes its accumulators to part[(o, chunk, i)]. */
static void gd_red_chunks_range(void *ctx, int64_t begin, int64_t end)
{
    const gd_red_job *job = ctx;
    for (int64_t t = begin; t < end; t++) {
        int64_t chunk = t % job->nchunks, rest = t / job->nchunks;
        int64_t o = rest / job->ntiles, tile = rest % job->ntiles;
        gd_word *acc = job->part + (o * job->nchunks + chunk) * job->inner + tile * GD_RED_TILE;
        gd_red_cols_accumulate(job, acc, o, tile, chunk);
    }
}

/* inner == 1: rows spread over the threads when there are many, else each row's blocks. */
static void gd_red_rows(gd_red_job *job, int nt)
{
    if (nt > 1 && job->outer >= 4 * (int64_t)nt) {
        gd_parallel_for(nt, job->outer, 1, gd_red_rows_range, job);
        return;
    }
    for (int64_t o = 0; o < job->outer; o++) {
        gd_word r = gd_red_one_row(job->d, job->in + o * job->len * (int64_t)job->esz, job->esz, job->len, nt);
        gd_red_store(job->out, job->out_dtype, o, &r, 1, job->d->acc_double);
    }
}

/* inner > 1: tiles of columns over the threads; long thin reductions also split the rows
 * into chunks whose accumulators are merged in order afterwards. */
static int gd_red_columns(gd_red_job *job, int nt, const char *name, gd_error *err)
{
    const int64_t outer = job->outer, len = job->len, inner = job->inner;
    job->ntiles = (inner + GD_RED_TILE - 1) / GD_RED_TILE;
    const int split = outer * len * inner >= GD_PAR_REDUCE && len >= 2 * GD_RED_RCHUNK &&
                      outer * inner <= GD_RED_SPLIT_MAX;
    if (!split) {
        job->nchunks = 1;
        job->chunk_rows = len;
        gd_parallel_for(nt, outer * job->ntiles, 1, gd_red_tiles_range, job);
        return GD_OK;
    }
    job->nchunks = GD_MIN((len + GD_RED_RCHUNK - 1) / GD_RED_RCHUNK, (int64_t)GD_RED_MAX_CHUNKS);
    job->chunk_rows = (len + job->nchunks - 1) / job->nchunks;
    job->nchunks = (len + job->chunk_rows - 1) / job->chunk_rows;
    size_t words = (size_t)(outer * job->nchunks * inner);
    job->part = malloc(words * sizeof(gd_word));
    if (!job->part) {
        char want[32];
        return gd_set_error(err, GD_ERR_HOST_OOM, "out of host memory allocating %s of %s scratch",
                            gd_format_bytes(want, sizeof want, words * sizeof(gd_word)), name);
    }
    gd_parallel_for(nt, outer * job->ntiles * job->nchunks, 1, gd_red_chunks_range, job);
    for (int64_t o = 0; o < outer; o++) {
        gd_word *acc = job->part + o * job->nchunks * inner;
        for (int64_t c = 1; c < job->nchunks; c++) job->d->merge_cols(acc, acc + c * inner, inner);
        gd_red_store(job->out, job->out_dtype, o * inner, acc, inner, job->d->acc_double);
    }
    free(job->part);
    return GD_OK;
}

int gd_cpu_reduce(void *out, gd_dtype out_dtype, gd_redop op, const void *in, gd_dtype in_dtype, int64_t outer,
                  int64_t len, int64_t inner, int device, gd_error *err)
{
    (void)device;
    if ((unsigned)op >= GD_NUM_REDOPS)
        return gd_set_error(err, GD_ERR_VALUE, "reduce: unknown operation code %d", (int)op);
    const char *name = gd_redop_table[op].name;
    if ((unsigned)in_dtype >= GD_NUM_DTYPES || in_dtype == GD_BOOL) return gd_cpu_bad_dtype(err, name, in_dtype);
    if (out_dtype != in_dtype && out_dtype != GD_FLOAT64 && !(in_dtype == GD_INT32 && out_dtype == GD_INT64))
        return gd_cpu_bad_dtype(err, name, out_dtype);
    if (outer < 0 || len < 0 || inner < 0)
        return gd_set_error(err, GD_ERR_VALUE, "%s: negative extent (outer=%lld, len=%lld, inner=%lld)", name,
                            (long long)outer, (long long)len, (long long)inner);
    if (len == 0 && gd_redop_table[op].needs_elements && outer * inner > 0)
        return gd_set_error(err, GD_ERR_VALUE, "%s: zero-size reduction has no identity; reduce a non-empty axis",
                            name);
    if (outer == 0 || inner == 0) return GD_OK;

    gd_red_job job = {.d = gd_red_select(op, in_dtype, out_dtype), .in = in, .out = out, .out_dtype = out_dtype,
                      .esz = gd_dtype_size(in_dtype), .outer = outer, .len = len, .inner = inner};
    const int nt = gd_threads_for(outer * len * inner, GD_PAR_REDUCE);
    if (inner == 1) {
        gd_red_rows(&job, nt);
        return GD_OK;
    }
    return gd_red_columns(&job, nt, name, err);
}
