/* gather.c - the CPU backend's indexing that copies: gathers and scatters of whole rows by an
 * int64 index array (a[idx], a[idx] = v, the gradient of a[idx]), and stream compaction of a
 * bool mask into the coordinates of its nonzero elements (a[mask], gd.nonzero).
 *
 * Every index is checked before any row moves, so a bad one leaves the destination as it was.
 * Scatters split the work by columns, never by rows: each thread sees the indices in order,
 * so the last of repeated indices wins (as in NumPy) and scatter-adds need no atomics.
 *
 * Checked once, read once: the core releases the GIL around these calls, so another Python
 * thread may rewrite the index array or the mask while they run. The copy passes therefore
 * read each index once (read_index) and check that value again before using it: one that
 * turned bad after the first check moves nothing and is reported as bad. The fill pass of
 * the compaction writes no more than each chunk's counted share and reports a mask whose
 * count changed between the passes.
 */
#include <stdatomic.h>
#include <string.h>

#include "cpu.h"

/* ------------------------------------------------------------------------------------------
 * the bounds check
 * ---------------------------------------------------------------------------------------- */

/* One read of idx[k] that the compiler may not repeat: the value checked is the value used. */
static inline int64_t read_index(const int64_t *idx, int64_t k) { return ((const volatile int64_t *)idx)[k]; }

static inline int in_bounds(int64_t i, int64_t rows) { return i >= -rows && i < rows; }

/* The position of the first index outside [-rows, rows), or -1. */
static int64_t first_bad(const int64_t *idx, int64_t n, int64_t rows)
{
    for (int64_t k = 0; k < n; k++)
        if (!in_bounds(read_index(idx, k), rows)) return k;
    return -1;
}

static inline int64_t wrap(int64_t i, int64_t rows) { return i < 0 ? i + rows : i; }


/* ------------------------------------------------------------------------------------------
 * gather: rows in parallel (each output row is written once)
 * ---------------------------------------------------------------------------------------- */

typedef struct rows_job {
    char *dst;
    const char *src;
    const int64_t *idx;
    int64_t n, rows;
    size_t item, row_bytes;
    gd_dtype dtype;
    atomic_llong late; /* a position whose index turned bad after the check, or -1 */
} rows_job;

static void flag_late(rows_job *j, int64_t k) { atomic_store_explicit(&j->late, (long long)k, memory_order_relaxed); }

/* After the copy: *bad is a position that turned bad during it, if any. */
static void report_late(rows_job *j, int64_t *bad)
{
    long long k = atomic_load_explicit(&j->late, memory_order_relaxed);
    if (k >= 0) *bad = k;
}

static void gather_range(void *ctx, int64_t begin, int64_t end)
{
    rows_job *j = ctx;
    for (int64_t k = begin; k < end; k++) {
        const int64_t i = read_index(j->idx, k);
        char *to = j->dst + (size_t)k * j->row_bytes;
        if (!in_bounds(i, j->rows)) { /* rewritten since the check: the output row gets zeros */
            memset(to, 0, j->row_bytes);
            flag_late(j, k);
            continue;
        }
        memcpy(to, j->src + (size_t)wrap(i, j->rows) * j->row_bytes, j->row_bytes);
    }
}

int gd_cpu_gather_rows(void *out, int64_t *bad, const void *src, int64_t rows, const int64_t *idx, int64_t n,
                       gd_dtype dtype, int64_t inner, int device, gd_error *err)
{
    (void)device;
    (void)err;
    *bad = first_bad(idx, n, rows);
    if (*bad >= 0) return GD_OK;
    rows_job j = {.dst = out, .src = src, .idx = idx, .n = n, .rows = rows,
                  .row_bytes = (size_t)inner * gd_dtype_size(dtype)};
    atomic_init(&j.late, -1);
    int nt = gd_threads_for(n * (int64_t)j.row_bytes, GD_PAR_COPY_BYTES);
    gd_parallel_for(nt, n, 1, gather_range, &j);
    report_late(&j, bad);
    return GD_OK;
}

/* ------------------------------------------------------------------------------------------
 * scatter and scatter-add: columns in parallel, rows in order
 * ---------------------------------------------------------------------------------------- */

/* Each thread reads every index once for its columns; one rewritten since the check is
 * skipped (its row of src goes nowhere) and flagged. */
static void scatter_range(void *ctx, int64_t begin, int64_t end)
{
    rows_job *j = ctx;
    const size_t off = (size_t)begin * j->item, len = (size_t)(end - begin) * j->item;
    for (int64_t k = 0; k < j->n; k++) {
        const int64_t i = read_index(j->idx, k);
        if (!in_bounds(i, j->rows)) {
            flag_late(j, k);
            continue;
        }
        memcpy(j->dst + (size_t)wrap(i, j->rows) * j->row_bytes + off, j->src + (size_t)k * j->row_bytes + off, len);
    }
}

#define GD_ADD_COLUMNS(T)                                                                                       \
    for (int64_t k = 0; k < j->n; k++) {                                                                        \
        const int64_t r = read_index(j->idx, k);                                                                \
        if (!in_bounds(r, j->rows)) {                                                                           \
            flag_late(j, k);                                                                                    \
            continue;                                                                                           \
        }                                                                                                       \
        T *d = (T *)(j->dst + (size_t)wrap(r, j->rows) * j->row_bytes);                                         \
        const T *s = (const T *)(j->src + (size_t)k * j->row_bytes);                                            \
        for (int64_t i = begin; i < end; i++) d[i] += s[i];                                                     \
    }

static void scatter_add_range(void *ctx, int64_t begin, int64_t end)
{
    rows_job *j = ctx;
    switch (j->dtype) {
    case GD_FLOAT32: GD_ADD_COLUMNS(float) break;
    case GD_FLOAT64: GD_ADD_COLUMNS(double) break;
    /* integers wrap on overflow, as NumPy's do: added as unsigned */
    case GD_INT32: GD_ADD_COLUMNS(uint32_t) break;
    default: GD_ADD_COLUMNS(uint64_t) break;
    }
}

static int scatter_common(void *dst, int64_t *bad, int64_t rows, const int64_t *idx, const void *src, int64_t n,
                          gd_dtype dtype, int64_t inner, gd_range_fn fn)
{
    *bad = first_bad(idx, n, rows);
    if (*bad >= 0) return GD_OK;
    rows_job j = {.dst = dst, .src = src, .idx = idx, .n = n, .rows = rows, .dtype = dtype,
                  .item = gd_dtype_size(dtype), .row_bytes = (size_t)inner * gd_dtype_size(dtype)};
    atomic_init(&j.late, -1);
    int nt = gd_threads_for(n * (int64_t)j.row_bytes, GD_PAR_COPY_BYTES);
    gd_parallel_for(nt, inner, 64, fn, &j);
    report_late(&j, bad);
    return GD_OK;
}

int gd_cpu_scatter_rows(void *dst, int64_t *bad, int64_t rows, const int64_t *idx, const void *src, int64_t n,
                        gd_dtype dtype, int64_t inner, int device, gd_error *err)
{
    (void)device;
    (void)err;
    return scatter_common(dst, bad, rows, idx, src, n, dtype, inner, scatter_range);
}

int gd_cpu_scatter_add_rows(void *dst, int64_t *bad, int64_t rows, const int64_t *idx, const void *src, int64_t n,
                            gd_dtype dtype, int64_t inner, int device, gd_error *err)
{
    (void)device;
    if (dtype == GD_BOOL || (unsigned)dtype >= GD_NUM_DTYPES)
        return gd_set_error(err, GD_ERR_VALUE, "cpu scatter_add_rows: dtype %d is not float32, float64, int64 or int32",
                            (int)dtype);
    return scatter_common(dst, bad, rows, idx, src, n, dtype, inner, scatter_add_range);
}

/* ------------------------------------------------------------------------------------------
 * stream compaction: a count pass over chunks, then a fill pass from each chunk's offset
 * ---------------------------------------------------------------------------------------- */

#define GD_NZ_CHUNKS 64

typedef struct nz_job {
    const uint8_t *mask;
    int64_t n, chunk;
    int64_t counts[GD_NZ_CHUNKS + 1]; /* per chunk; then the exclusive prefix sums and the total */
    int64_t *out, count;
    int ndim;
    const int64_t *shape;
    atomic_int changed; /* a chunk's fill found another number of nonzero bytes than its count */
} nz_job;

static void count_range(void *ctx, int64_t begin, int64_t end)
{
    nz_job *j = ctx;
    for (int64_t c = begin; c < end; c++) {
        int64_t lo = c * j->chunk, hi = lo + j->chunk < j->n ? lo + j->chunk : j->n, s = 0;
        for (int64_t p = lo; p < hi; p++) s += j->mask[p] != 0;
        j->counts[c] = s;
    }
}

static void fill_range(void *ctx, int64_t begin, int64_t end)
{
    nz_job *j = ctx;
    for (int64_t c = begin; c < end; c++) {
        int64_t lo = c * j->chunk, hi = lo + j->chunk < j->n ? lo + j->chunk : j->n, at = j->counts[c];
        const int64_t stop = j->counts[c + 1]; /* this chunk's share of out ends here */
        const volatile uint8_t *mask = j->mask;
        int64_t p = lo;
        if (j->ndim == 1) { /* flat positions (every mask index): no divisions */
            for (; p < hi; p++)
                if (mask[p]) {
                    if (at == stop) break;
                    j->out[at++] = p;
                }
        } else
            for (; p < hi; p++) {
                if (!mask[p]) continue;
                if (at == stop) break;
                int64_t rem = p;
                for (int k = j->ndim - 1; k >= 0; k--) {
                    j->out[k * j->count + at] = rem % j->shape[k];
                    rem /= j->shape[k];
                }
                at++;
            }
        if (at != stop || p < hi) atomic_store_explicit(&j->changed, 1, memory_order_relaxed);
    }
}

/* Split the n mask bytes into at most GD_NZ_CHUNKS chunks; the number of threads. */
static int nz_plan(nz_job *j, const void *mask, int64_t n)
{
    j->mask = mask;
    j->n = n;
    j->chunk = n / GD_NZ_CHUNKS + 1;
    return gd_threads_for(n, GD_PAR_REDUCE);
}

static int64_t nz_chunks(const nz_job *j) { return j->n == 0 ? 0 : (j->n + j->chunk - 1) / j->chunk; }

int gd_cpu_count_nonzero(int64_t *count, const void *mask, int64_t n, int device, gd_error *err)
{
    (void)device;
    (void)err;
    nz_job j;
    int nt = nz_plan(&j, mask, n);
    gd_parallel_for(nt, nz_chunks(&j), 1, count_range, &j);
    int64_t s = 0;
    for (int64_t c = 0; c < nz_chunks(&j); c++) s += j.counts[c];
    *count = s;
    return GD_OK;
}

/* The mask was rewritten (by another thread) between the count and the fill. */
static int changed_error(gd_error *err, int64_t now, int64_t count)
{
    if (now >= 0)
        return gd_set_error(err, GD_ERR_VALUE,
                            "nonzero: the mask changed while it was read (%lld nonzero elements, then %lld); "
                            "another thread wrote it: synchronize the threads that share it",
                            (long long)count, (long long)now);
    return gd_set_error(err, GD_ERR_VALUE,
                        "nonzero: the mask changed while it was read (%lld nonzero elements counted, another "
                        "number found); another thread wrote it: synchronize the threads that share it",
                        (long long)count);
}

int gd_cpu_nonzero(int64_t *out, int64_t count, const void *mask, int ndim, const int64_t *shape, int device,
                   gd_error *err)
{
    (void)device;
    int64_t n = 1;
    for (int k = 0; k < ndim; k++) n *= shape[k];
    nz_job j;
    int nt = nz_plan(&j, mask, n);
    const int64_t chunks = nz_chunks(&j);
    gd_parallel_for(nt, chunks, 1, count_range, &j);
    int64_t s = 0;
    for (int64_t c = 0; c < chunks; c++) {
        int64_t here = j.counts[c];
        j.counts[c] = s;
        s += here;
    }
    j.counts[chunks] = s;
    if (s != count) return changed_error(err, s, count);
    j.out = out;
    j.count = count;
    j.ndim = ndim;
    j.shape = shape;
    atomic_init(&j.changed, 0);
    gd_parallel_for(nt, chunks, 1, fill_range, &j);
    if (atomic_load_explicit(&j.changed, memory_order_relaxed)) return changed_error(err, -1, count);
    return GD_OK;
}
