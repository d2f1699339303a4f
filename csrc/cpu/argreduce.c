/* argreduce.c - the CPU backend's argmax and argmin over the middle axis of an (outer, len,
 * inner) block: the index of the first extreme, NaN counting as the extreme (NumPy's rule),
 * with results that do not depend on the thread count.
 *
 *   inner == 1, many rows     rows over the threads
 *   inner == 1, few long rows each row cut into pieces over the threads, merged in order
 *   inner > 1                 tiles of columns over the threads, each tile down every row
 *   inner > 1, few columns    the same, with the rows also cut into chunks (a (1e8, 2)
 *                             argmax(axis=0) is one tile: without chunks, one thread), each
 *                             chunk's per-column results merged in order afterwards
 */
#include "cpu.h"

#include <stdlib.h>

#define GD_ARG_TILE 256      /* columns scanned together when inner > 1 (their best on stack) */
#define GD_ARG_MAX_SEGS 64   /* pieces of one long row scanned by separate threads */
#define GD_ARG_MIN_SEG ((int64_t)1 << 15) /* smallest such piece (elements) */
/* columns: rows per chunk at least, and chunks only while outer * inner is at most
 * GD_ARG_SPLIT_MAX (a wider block already has tiles for every thread; its scratch of
 * chunks * outer * inner indices stays under 2 MiB) */
#define GD_ARG_RCHUNK ((int64_t)1 << 12)
#define GD_ARG_SPLIT_MAX ((int64_t)4096)

/* ------------------------------------------------------------------------------------------
 * kernels
 *
 * v beats the best so far when it is strictly larger (argmax) or smaller (argmin), or when it
 * is a NaN and the best is not: equal values keep the first, and once the best is a NaN
 * nothing beats it. For integers and bools v != v is false and the test is a plain compare.
 * ---------------------------------------------------------------------------------------- */

#define GD_BEATS_MAX(v, b) ((v) > (b) || ((v) != (v) && (b) == (b)))
#define GD_BEATS_MIN(v, b) ((v) < (b) || ((v) != (v) && (b) == (b)))

/* One argreduce: rows (inner == 1), tiles of columns (inner > 1), or pieces of one row. */
typedef struct gd_arg_job {
    int64_t *out;
    const char *in;
    int64_t outer, len, inner;
    int64_t ntiles;   /* column tiles per outer index */
    int64_t seg;      /* elements per piece of a split row; rows per chunk of split columns */
    int64_t nseg;     /* pieces of a split row; chunks of split columns */
    int64_t *seg_at;  /* each piece's first extreme (absolute index); for columns, chunk c of
                         outer index o at seg_at[(o * nseg + c) * inner + i] */
} gd_arg_job;

typedef struct gd_arg_kernels {
    gd_range_fn rows, tiles, segs, col_chunks;
    int64_t (*merge)(const gd_arg_job *j, int64_t nseg);
    void (*merge_cols)(const gd_arg_job *j);
} gd_arg_kernels;

/* Index of the first extreme of x[from, to), to > from, in one pass, each element read once
 * (also what the two-pass scan falls back on, see there). */
#define GD_DEFINE_ARG_SCAN_ONCE(NAME, T, BEATS)                                                  \
    static int64_t NAME##_scan_once(const T *x, int64_t from, int64_t to)                        \
    {                                                                                            \
        int64_t at = from;                                                                       \
        T best = x[from];                                                                        \
        for (int64_t i = from + 1; i < to; i++) {                                                \
            const T v = x[i];                                                                    \
            if (BEATS(v, best)) best = v, at = i;                                                \
        }                                                                                        \
        return at;                                                                               \
    }

/* GD_DEFINE_ARG_SCAN_VECTOR's end, in either form: of `lanes` lanes of best values and their
 * indices (best[j], at[j]), the best, the earliest index among equals; then the scalar tail
 * from x[i] on. */
#define GD_ARG_LANES_TAIL(T, BEATS, lanes)                                                       \
        T b = best[0];                                                                           \
        int64_t a = (int64_t)at[0];                                                              \
        for (int j = 1; j < lanes; j++) {                                                            \
            const T v = best[j];                                                                 \
            const int tie = v == b || (v != v && b != b);                                        \
            if (BEATS(v, b) || (tie && (int64_t)at[j] < a)) b = v, a = (int64_t)at[j];           \
        }                                                                                        \
        for (; i < n; i++)                                                                       \
            if (BEATS(x[i], b)) b = x[i], a = i;                                                 \
        return from + a;

#if GD_HAS_VECTORS
/* One step of a vector argreduce chain: lanes where v beats best (GD_BEATS_MAX/MIN) take v
 * and its indices. */
#define GD_ARG_STEP(CMP, best, at, v, idx)                                                       \
    do {                                                                                         \
        const mvec k_ = (mvec)((v)CMP(best)) | ((mvec)((v) != (v)) & (mvec)((best) == (best)));  \
        (best) = GD_VSEL(k_, v, best);                                                           \
        (at) = GD_MSEL(k_, idx, at);                                                             \
    } while (0)

/* NAME##_scan for float32, float64 and int64: one pass in GD_VEC_BYTES vectors (cpu.h), each lane
 * keeping its best value and that value's index in a mask-width integer (lane j sees
 * elements j, j + W, ...), so every step is compares and blends; then the lane that wins,
 * the earliest index among equals, and the scalar tail. Rows of 2^31 elements or more
 * (float32's indices are int32) take the scalar pass. */
#define GD_DEFINE_ARG_SCAN_VECTOR(NAME, T, BEATS, CMP)                                           \
    GD_DEFINE_ARG_SCAN_ONCE(NAME, T, BEATS)                                                      \
    GD_SIMD static int64_t NAME##_scan(const T *x_, int64_t from, int64_t to)                    \
    {                                                                                            \
        GD_VECTOR_TYPEDEF(vec, T, GD_VEC_BYTES);                                                 \
        GD_VECTOR_TYPEDEF(mvec, gd_mask_of_##T, GD_VEC_BYTES);                                   \
        enum { W = (int)(sizeof(vec) / sizeof(T)) };                                             \
        const T *x = x_ + from;                                                                  \
        const int64_t n = to - from;                                                             \
        if (n < 2 * W || n >= INT32_MAX) return NAME##_scan_once(x_, from, to);                  \
        vec best, best2;                                                                         \
        mvec at, at2, idx;                                                                       \
        memcpy(&best, x, sizeof best);                                                           \
        memcpy(&best2, x + W, sizeof best2);                                                     \
        for (int j = 0; j < W; j++) at[j] = (gd_mask_of_##T)j;                                   \
        at2 = at + W;                                                                            \
        idx = at;                                                                                \
        int64_t i = 2 * W;                                                                       \
        /* two chains: a compare waits for the last blend of its own chain only */               \
        for (; i + 2 * W <= n; i += 2 * W) {                                                     \
            vec u, v;                                                                            \
            memcpy(&u, x + i, sizeof u);                                                         \
            memcpy(&v, x + i + W, sizeof v);                                                     \
            idx += 2 * W;                                                                        \
            GD_ARG_STEP(CMP, best, at, u, idx);                                                  \
            GD_ARG_STEP(CMP, best2, at2, v, idx + W);                                            \
        }                                                                                        \
        /* chain 2 into chain 1, lane by lane: the earlier index among equals */                 \
        const mvec nan2 = (mvec)(best2 != best2), nan1 = (mvec)(best != best);                   \
        const mvec same = (mvec)(best2 == best) | (nan2 & nan1);                                 \
        const mvec k = (mvec)(best2 CMP best) | (nan2 & ~nan1) |                                 \
                       (same & (mvec)(at2 < at));                                                \
        best = GD_VSEL(k, best2, best);                                                          \
        at = GD_MSEL(k, at2, at);                                                                \
        GD_ARG_LANES_TAIL(T, BEATS, W)                                                         \
    }
#else
/* NAME##_scan without vector extensions (compiler.h): the same lanes in plain C, 2 *
 * GD_VEC_BYTES of them in arrays (lane j sees elements j, j + L, ...), each with its best
 * value and that value's index, a loop over them that compilers vectorize; then the lane
 * that wins, the earliest index among equals, and the scalar tail. */
#define GD_DEFINE_ARG_SCAN_VECTOR(NAME, T, BEATS, CMP)                                           \
    GD_DEFINE_ARG_SCAN_ONCE(NAME, T, BEATS)                                                      \
    GD_SIMD static int64_t NAME##_scan(const T *x_, int64_t from, int64_t to)                    \
    {                                                                                            \
        enum { L = (int)(2 * GD_VEC_BYTES / sizeof(T)) };                                        \
        const T *x = x_ + from;                                                                  \
        const int64_t n = to - from;                                                             \
        if (n < L || n >= INT32_MAX) return NAME##_scan_once(x_, from, to);                      \
        T best[L];                                                                               \
        gd_mask_of_##T at[L];                                                                    \
        memcpy(best, x, sizeof best);                                                            \
        for (int j = 0; j < L; j++) at[j] = (gd_mask_of_##T)j;                                   \
        int64_t i = L;                                                                           \
        for (; i + L <= n; i += L)                                                               \
            for (int j = 0; j < L; j++) {                                                        \
                const T v = x[i + j];                                                            \
                const int k = (v CMP best[j]) | ((v != v) & (best[j] == best[j]));              \
                best[j] = k ? v : best[j];                                                       \
                at[j] = k ? (gd_mask_of_##T)(i + j) : at[j];                                     \
            }                                                                                    \
        GD_ARG_LANES_TAIL(T, BEATS, L)                                                         \
    }
#endif

/* NAME##_scan for bools (whose byte lanes cannot hold an index): the extreme, vectorized
 * (cpu.h), then the first element equal to it, an early-stopping scan. A row that another
 * thread rewrote between the two passes (the GIL is released) may hold no element equal to
 * its extreme; the search stops at `to` and the one-pass scan answers. */
#define GD_DEFINE_ARG_SCAN_TWO_PASS(NAME, T, BEATS, CMP)                                         \
    GD_DEFINE_ARG_SCAN_ONCE(NAME, T, BEATS)                                                      \
    GD_DEFINE_EXTREME(NAME##_extreme, T, CMP)                                                    \
    static int64_t NAME##_scan(const T *x, int64_t from, int64_t to)                             \
    {                                                                                            \
        const T m = NAME##_extreme(x + from, to - from);                                         \
        int64_t r = from;                                                                        \
        while (r < to && x[r] != m) r++;                                                         \
        return r < to ? r : NAME##_scan_once(x, from, to);                                       \
    }

#define GD_DEFINE_ARG(NAME, T, BEATS, CMP, SCAN)                                                 \
    SCAN(NAME, T, BEATS, CMP)                                                                    \
    static void NAME##_rows(void *ctx, int64_t begin, int64_t end)                               \
    {                                                                                            \
        const gd_arg_job *j = ctx;                                                               \
        const T *x = (const T *)j->in;                                                           \
        for (int64_t o = begin; o < end; o++) j->out[o] = NAME##_scan(x + o * j->len, 0, j->len);  \
    }                                                                                            \
    /* tile t (columns [i0, i0 + w) of outer index t / ntiles) over rows [r0, r1), all of        \
     * its columns at once (reads stay in order along each row of the block): each column's      \
     * first extreme there into at[q] */                                                         \
    static void NAME##_tile(const gd_arg_job *j, int64_t t, int64_t r0, int64_t r1, int64_t *at) \
    {                                                                                            \
        T best[GD_ARG_TILE];                                                                     \
        const int64_t o = t / j->ntiles, i0 = (t % j->ntiles) * GD_ARG_TILE;                     \
        const int64_t w = GD_MIN(j->inner - i0, (int64_t)GD_ARG_TILE);                           \
        const T *x = (const T *)j->in + o * j->len * j->inner + i0;                              \
        for (int64_t q = 0; q < w; q++) {                                                        \
            best[q] = x[r0 * j->inner + q];                                                      \
            at[q] = r0;                                                                          \
        }                                                                                        \
        for (int64_t r = r0 + 1; r < r1; r++) {                                                  \
            const T *row = x + r * j->inner;                                                     \
            for (int64_t q = 0; q < w; q++)                                                      \
                if (BEATS(row[q], best[q])) {                                                    \
                    best[q] = row[q];                                                            \
                    at[q] = r;                                                                   \
                }                                                                                \
        }                                                                                        \
    }                                                                                            \
    static void NAME##_tiles(void *ctx, int64_t begin, int64_t end)                              \
    {                                                                                            \
        const gd_arg_job *j = ctx;                                                               \
        for (int64_t t = begin; t < end; t++)                                                    \
            NAME##_tile(j, t, 0, j->len,                                                         \
                        j->out + (t / j->ntiles) * j->inner + (t % j->ntiles) * GD_ARG_TILE);    \
    }                                                                                            \
    /* item p: row chunk c = p % nseg of tile t = p / nseg */                                    \
    static void NAME##_col_chunks(void *ctx, int64_t begin, int64_t end)                         \
    {                                                                                            \
        const gd_arg_job *j = ctx;                                                               \
        for (int64_t p = begin; p < end; p++) {                                                  \
            const int64_t c = p % j->nseg, t = p / j->nseg, o = t / j->ntiles;                   \
            const int64_t r0 = c * j->seg, r1 = GD_MIN(j->len, r0 + j->seg);                     \
            NAME##_tile(j, t, r0, r1, j->seg_at + (o * j->nseg + c) * j->inner + (t % j->ntiles) * GD_ARG_TILE); \
        }                                                                                        \
    }                                                                                            \
    /* each column's chunks in order: a later chunk wins only by beating the best so far */      \
    static void NAME##_merge_cols(const gd_arg_job *j)                                           \
    {                                                                                            \
        for (int64_t o = 0; o < j->outer; o++) {                                                 \
            const T *x = (const T *)j->in + o * j->len * j->inner;                               \
            const int64_t *chunks = j->seg_at + o * j->nseg * j->inner;                          \
            for (int64_t i = 0; i < j->inner; i++) {                                             \
                int64_t at = chunks[i];                                                          \
                for (int64_t c = 1; c < j->nseg; c++) {                                          \
                    const int64_t r = chunks[c * j->inner + i];                                  \
                    if (BEATS(x[r * j->inner + i], x[at * j->inner + i])) at = r;                \
                }                                                                                \
                j->out[o * j->inner + i] = at;                                                   \
            }                                                                                    \
        }                                                                                        \
    }                                                                                            \
    static void NAME##_segs(void *ctx, int64_t begin, int64_t end)                               \
    {                                                                                            \
        const gd_arg_job *j = ctx;                                                               \
        for (int64_t p = begin; p < end; p++)                                                    \
            j->seg_at[p] = NAME##_scan((const T *)j->in, p * j->seg, GD_MIN(j->len, (p + 1) * j->seg)); \
    }                                                                                            \
    /* the pieces' results in order: a later piece wins only by beating the best so far */       \
    static int64_t NAME##_merge(const gd_arg_job *j, int64_t nseg)                               \
    {                                                                                            \
        const T *x = (const T *)j->in;                                                           \
        int64_t at = j->seg_at[0];                                                               \
        for (int64_t p = 1; p < nseg; p++)                                                       \
            if (BEATS(x[j->seg_at[p]], x[at])) at = j->seg_at[p];                                \
        return at;                                                                               \
    }                                                                                            \
    static const gd_arg_kernels NAME = {NAME##_rows, NAME##_tiles, NAME##_segs, NAME##_col_chunks, \
                                        NAME##_merge, NAME##_merge_cols};

GD_DEFINE_ARG(argmax_f32, float, GD_BEATS_MAX, >, GD_DEFINE_ARG_SCAN_VECTOR)
GD_DEFINE_ARG(argmax_f64, double, GD_BEATS_MAX, >, GD_DEFINE_ARG_SCAN_VECTOR)
GD_DEFINE_ARG(argmax_i64, int64_t, GD_BEATS_MAX, >, GD_DEFINE_ARG_SCAN_VECTOR)
GD_DEFINE_ARG(argmax_i32, int32_t, GD_BEATS_MAX, >, GD_DEFINE_ARG_SCAN_VECTOR)
GD_DEFINE_ARG(argmax_b, uint8_t, GD_BEATS_MAX, >, GD_DEFINE_ARG_SCAN_TWO_PASS)
GD_DEFINE_ARG(argmin_f32, float, GD_BEATS_MIN, <, GD_DEFINE_ARG_SCAN_VECTOR)
GD_DEFINE_ARG(argmin_f64, double, GD_BEATS_MIN, <, GD_DEFINE_ARG_SCAN_VECTOR)
GD_DEFINE_ARG(argmin_i64, int64_t, GD_BEATS_MIN, <, GD_DEFINE_ARG_SCAN_VECTOR)
GD_DEFINE_ARG(argmin_i32, int32_t, GD_BEATS_MIN, <, GD_DEFINE_ARG_SCAN_VECTOR)
GD_DEFINE_ARG(argmin_b, uint8_t, GD_BEATS_MIN, <, GD_DEFINE_ARG_SCAN_TWO_PASS)

GD_STATIC_ASSERT(GD_NUM_DTYPES == 5, "the argreduce kernels list float32, float64, int64, bool and int32");
static const gd_arg_kernels *const gd_arg_table[2][GD_NUM_DTYPES] = {
    {&argmax_f32, &argmax_f64, &argmax_i64, &argmax_b, &argmax_i32},
    {&argmin_f32, &argmin_f64, &argmin_i64, &argmin_b, &argmin_i32},
};

/* ------------------------------------------------------------------------------------------
 * the entry: threads over rows or column tiles; a single long row is cut into pieces, and
 * long columns into chunks of rows, whose results merge in order, so the first extreme wins
 * whatever the thread count
 * ---------------------------------------------------------------------------------------- */

/* inner > 1: tiles of columns over the threads, each tile's rows cut into chunks when the
 * columns are few and long (the chunks' per-column results merged in order afterwards). */
static int gd_arg_columns(gd_arg_job *job, const gd_arg_kernels *k, int nt, const char *name, gd_error *err)
{
    const int64_t outer = job->outer, len = job->len, inner = job->inner;
    job->ntiles = (inner + GD_ARG_TILE - 1) / GD_ARG_TILE;
    const int64_t tiles = outer * job->ntiles;
    const int split = outer * len * inner >= GD_PAR_REDUCE && len >= 2 * GD_ARG_RCHUNK && outer * inner <= GD_ARG_SPLIT_MAX;
    if (!split) {
        gd_parallel_for(GD_MIN((int64_t)nt, tiles), tiles, 1, k->tiles, job);
        return GD_OK;
    }
    const int64_t want = GD_MIN((int64_t)GD_ARG_MAX_SEGS, len / GD_ARG_RCHUNK);
    job->seg = (len + want - 1) / want;
    job->nseg = (len + job->seg - 1) / job->seg; /* every chunk non-empty */
    const size_t bytes = (size_t)(outer * job->nseg * inner) * sizeof(int64_t);
    job->seg_at = malloc(bytes);
    if (!job->seg_at) {
        char want_text[32];
        return gd_set_error(err, GD_ERR_HOST_OOM, "%s: out of host memory allocating %s of scratch", name,
                            gd_format_bytes(want_text, sizeof want_text, bytes));
    }
    gd_parallel_for(GD_MIN((int64_t)nt, tiles * job->nseg), tiles * job->nseg, 1, k->col_chunks, job);
    k->merge_cols(job);
    free(job->seg_at);
    return GD_OK;
}

int gd_cpu_argreduce(int64_t *out, gd_redop op, const void *in, gd_dtype dtype, int64_t outer, int64_t len,
                     int64_t inner, int device, gd_error *err)
{
    (void)device;
    if (op != GD_RED_MAX && op != GD_RED_MIN)
        return gd_set_error(err, GD_ERR_VALUE, "argreduce: operation %d is neither max nor min", (int)op);
    if ((unsigned)dtype >= GD_NUM_DTYPES) return gd_cpu_bad_dtype(err, "argreduce", dtype);
    if (outer <= 0 || inner <= 0) return GD_OK;
    if (len <= 0) return gd_set_error(err, GD_ERR_VALUE, "argreduce: an axis of length %lld has no extreme", (long long)len);
    const gd_arg_kernels *k = gd_arg_table[op == GD_RED_MIN][dtype];
    gd_arg_job job = {.out = out, .in = in, .outer = outer, .len = len, .inner = inner};
    const int nt = gd_threads_for(outer * len * inner, GD_PAR_REDUCE);
    if (inner > 1) {
        return gd_arg_columns(&job, k, nt, op == GD_RED_MAX ? "argmax" : "argmin", err);
    } else if (outer >= nt || len < 2 * GD_ARG_MIN_SEG) {
        gd_parallel_for(GD_MIN((int64_t)nt, outer), outer, 1, k->rows, &job);
    } else { /* few long rows: each cut into pieces */
        int64_t seg_at[GD_ARG_MAX_SEGS];
        const int64_t want = GD_MIN((int64_t)GD_ARG_MAX_SEGS, len / GD_ARG_MIN_SEG);
        job.seg = (len + want - 1) / want;
        job.seg_at = seg_at;
        const int64_t nseg = (len + job.seg - 1) / job.seg; /* every piece non-empty */
        for (int64_t o = 0; o < outer; o++) {
            job.in = (const char *)in + o * len * (int64_t)gd_dtype_size(dtype);
            gd_parallel_for(GD_MIN((int64_t)nt, nseg), nseg, 1, k->segs, &job);
            out[o] = k->merge(&job, nseg);
        }
    }
    return GD_OK;
}
