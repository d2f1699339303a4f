/* conformance_gather.c - the entries of indexing that copies: gather_rows, scatter_rows and
 * scatter_add_rows (negative indices, the first bad index reported and nothing written then,
 * repeated indices accumulating), count_nonzero and nonzero (stream compaction in C order,
 * and no write past the given count when the mask no longer matches it), against host loops.
 * Exact.
 */
#include "conformance.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------
 * row copies
 * ---------------------------------------------------------------------------------------- */

typedef struct rows_case {
    int64_t rows, inner, n;
    int repeats;   /* indices may repeat (gathers and scatter-adds only) */
    int64_t bad_at; /* position of the first bad index, or -1 */
} rows_case;

static const rows_case rows_cases[] = {
    {5, 3, 4, 0, -1},    {5, 1, 5, 0, -1},    {7, 2, 9, 1, -1},     {1, 4, 3, 1, -1},
    {3000, 100, 2500, 1, -1}, {400, 700, 300, 0, -1}, {5, 0, 3, 1, -1}, {6, 2, 10, 1, 4},
    {6, 2, 10, 1, 0},    {3, 5, 6, 1, 5},     {0, 3, 2, 1, 0},
};

/* n row numbers in [-rows, rows), unique (a permutation's prefix) unless repeats; the index at
 * bad_at (and one after it) out of range. */
static int64_t *make_indices(const rows_case *c)
{
    int64_t *idx = gdt_host(c->n, GD_INT64);
    for (int64_t k = 0; k < c->n; k++) idx[k] = c->rows ? (c->repeats ? (int64_t)(gdt_rand_u64() % (uint64_t)c->rows) : k) : 0;
    if (!c->repeats)
        for (int64_t k = c->n - 1; k > 0; k--) {
            int64_t j = (int64_t)(gdt_rand_u64() % (uint64_t)(k + 1)), t = idx[k];
            idx[k] = idx[j], idx[j] = t;
        }
    for (int64_t k = 0; k < c->n; k += 3) idx[k] -= c->rows; /* every third counts from the end */
    if (c->bad_at >= 0) {
        idx[c->bad_at] = c->bad_at % 2 ? -c->rows - 1 - c->bad_at : c->rows + c->bad_at;
        if (c->bad_at + 1 < c->n) idx[c->bad_at + 1] = c->rows + 100;
    }
    return idx;
}

static int64_t row_of(int64_t i, int64_t rows) { return i < 0 ? i + rows : i; }

typedef int (*scatter_fn)(void *, int64_t *, int64_t, const int64_t *, const void *, int64_t, gd_dtype, int64_t, int,
                          gd_error *);

static void check_rows_case(const rows_case *c, gd_dtype t)
{
    const size_t item = gd_dtype_size(t), tb = (size_t)(c->rows * c->inner) * item, sb = (size_t)(c->n * c->inner) * item;
    int64_t *idx = make_indices(c);
    void *table = gdt_host(c->rows * c->inner, t), *rowsv = gdt_host(c->n * c->inner, t);
    /* small integers: every sum of them is exact in every dtype */
    for (int64_t i = 0; i < c->rows * c->inner; i++) {
        int64_t v = t == GD_BOOL ? i % 3 == 0 : i % 13 - 6;
        gdt_put(table, t, i, (double)v, v);
    }
    for (int64_t i = 0; i < c->n * c->inner; i++) {
        int64_t v = t == GD_BOOL ? i % 2 : i % 7 - 3;
        gdt_put(rowsv, t, i, (double)v, v);
    }
    void *dtab = gdt_upload_new(table, tb), *drows = gdt_upload_new(rowsv, sb);
    void *didx = gdt_upload_new(idx, (size_t)c->n * sizeof(int64_t));
    void *want_g = gdt_ref_new(c->n * c->inner, t), *want_t = gdt_ref_new(c->rows * c->inner, t);
    /* references: int64_t[] for integers, double[] otherwise (bools as 0.0 and 1.0) */
    const int is_int = gdt_is_int(t);
#define REF(buf, i, v) (is_int ? (void)(((int64_t *)(buf))[i] = (int64_t)(v)) : (void)(((double *)(buf))[i] = (v)))
#define HOSTV(p, i)                                                                                                 \
    (is_int ? (double)gdt_geti((p), t, (i)) : t == GD_BOOL ? (double)((uint8_t *)(p))[i] : gdt_getf((p), t, (i)))

    /* gather: out untouched (still the rows' values) when an index is bad */
    int64_t bad = -2;
    for (int64_t k = 0; k < c->n; k++)
        for (int64_t i = 0; i < c->inner; i++)
            REF(want_g, k * c->inner + i,
                c->bad_at >= 0 ? HOSTV(rowsv, k * c->inner + i) : HOSTV(table, row_of(idx[k], c->rows) * c->inner + i));
    if (OK(gdt_be->gather_rows(drows, &bad, dtab, c->rows, didx, c->n, t, c->inner, gdt_dev, &gdt_err))) {
        CHECK(bad == c->bad_at, "gather_rows %s rows %lld: bad %lld, want %lld", gdt_dtype_name(t), (long long)c->rows,
              (long long)bad, (long long)c->bad_at);
        EXPECT(drows, t, c->n * c->inner, want_g, GDT_EXACT, "gather_rows %s rows %lld inner %lld n %lld",
               gdt_dtype_name(t), (long long)c->rows, (long long)c->inner, (long long)c->n);
    }
    gdt_upload(drows, rowsv, sb);

    /* scatter (unique indices: any winner is right) and scatter-add (repeats accumulate) */
    for (int add = 0; add < 2; add++) {
        if ((add && t == GD_BOOL) || (!add && c->repeats && c->bad_at < 0)) continue;
        for (int64_t i = 0; i < c->rows * c->inner; i++) REF(want_t, i, HOSTV(table, i));
        if (c->bad_at < 0)
            for (int64_t k = 0; k < c->n; k++)
                for (int64_t i = 0; i < c->inner; i++) {
                    int64_t at = row_of(idx[k], c->rows) * c->inner + i;
                    double v = HOSTV(rowsv, k * c->inner + i);
                    if (is_int) ((int64_t *)want_t)[at] = add ? ((int64_t *)want_t)[at] + (int64_t)v : (int64_t)v;
                    else ((double *)want_t)[at] = add ? ((double *)want_t)[at] + v : v;
                }
        gdt_upload(dtab, table, tb);
        scatter_fn f = add ? gdt_be->scatter_add_rows : gdt_be->scatter_rows;
        bad = -2;
        if (OK(f(dtab, &bad, c->rows, didx, drows, c->n, t, c->inner, gdt_dev, &gdt_err))) {
            CHECK(bad == c->bad_at, "%s %s: bad %lld, want %lld", add ? "scatter_add_rows" : "scatter_rows",
                  gdt_dtype_name(t), (long long)bad, (long long)c->bad_at);
            EXPECT(dtab, t, c->rows * c->inner, want_t, GDT_EXACT, "%s %s rows %lld inner %lld n %lld",
                   add ? "scatter_add_rows" : "scatter_rows", gdt_dtype_name(t), (long long)c->rows,
                   (long long)c->inner, (long long)c->n);
        }
    }
#undef REF
#undef HOSTV
    gdt_free(dtab, tb);
    gdt_free(drows, sb);
    gdt_free(didx, (size_t)c->n * sizeof(int64_t));
    free(idx);
    free(table);
    free(rowsv);
    free(want_g);
    free(want_t);
}

/* ------------------------------------------------------------------------------------------
 * stream compaction
 * ---------------------------------------------------------------------------------------- */

static void check_nonzero_case(int ndim, const int64_t *shape, int density_pct)
{
    int64_t n = 1;
    for (int k = 0; k < ndim; k++) n *= shape[k];
    uint8_t *mask = gdt_host(n, GD_BOOL);
    int64_t count = 0;
    for (int64_t p = 0; p < n; p++) count += mask[p] = (int)(gdt_rand_u64() % 100) < density_pct;
    void *dmask = gdt_upload_new(mask, (size_t)n);
    int64_t got = -1;
    if (OK(gdt_be->count_nonzero(&got, dmask, n, gdt_dev, &gdt_err)))
        CHECK(got == count, "count_nonzero n %lld density %d%%: %lld, want %lld", (long long)n, density_pct,
              (long long)got, (long long)count);
    if (count > 0) {
        int64_t *want = gdt_host(count * ndim, GD_INT64), j = 0;
        for (int64_t p = 0; p < n; p++) {
            if (!mask[p]) continue;
            int64_t rem = p;
            for (int k = ndim - 1; k >= 0; k--) {
                want[k * count + j] = rem % shape[k];
                rem /= shape[k];
            }
            j++;
        }
        void *out = gdt_alloc((size_t)(count * ndim) * sizeof(int64_t));
        if (OK(gdt_be->nonzero(out, count, dmask, ndim, shape, gdt_dev, &gdt_err)))
            EXPECT(out, GD_INT64, count * ndim, want, GDT_EXACT, "nonzero ndim %d n %lld density %d%%", ndim,
                   (long long)n, density_pct);
        gdt_free(out, (size_t)(count * ndim) * sizeof(int64_t));
        free(want);
    }
    gdt_free(dmask, (size_t)n);
    free(mask);
}

/* A mask that changed between count_nonzero and nonzero (another thread wrote it; the core
 * releases the GIL between them): whatever nonzero returns, it writes nothing past the count
 * that sized its output. The mask has n nonzero bytes, nonzero is told `count`. */
static void check_nonzero_changed(int ndim, const int64_t *shape, int64_t count)
{
    int64_t n = 1;
    for (int k = 0; k < ndim; k++) n *= shape[k];
    uint8_t *mask = gdt_host(n, GD_BOOL);
    memset(mask, 1, (size_t)n);
    void *dmask = gdt_upload_new(mask, (size_t)n);
    const int64_t guard = 4096, size = count * ndim + guard;
    int64_t *host = gdt_host(size, GD_INT64);
    for (int64_t i = 0; i < size; i++) host[i] = -7;
    void *out = gdt_upload_new(host, (size_t)size * sizeof(int64_t));
    gd_error err = {0};
    (void)gdt_be->nonzero(out, count, dmask, ndim, shape, gdt_dev, &err); /* an error is allowed */
    gdt_download(host, out, (size_t)size * sizeof(int64_t));
    int64_t past = 0;
    for (int64_t i = count * ndim; i < size; i++) past += host[i] != -7;
    CHECK(past == 0, "nonzero ndim %d n %lld told count %lld: %lld words written past the output", ndim,
          (long long)n, (long long)count, (long long)past);
    gdt_free(out, (size_t)size * sizeof(int64_t));
    gdt_free(dmask, (size_t)n);
    free(host);
    free(mask);
}

void gdt_check_gather(void)
{
    for (size_t c = 0; c < sizeof rows_cases / sizeof rows_cases[0]; c++)
        for (int t = 0; t < GD_NUM_DTYPES; t++) check_rows_case(&rows_cases[c], (gd_dtype)t);
    static const int64_t s1[] = {1}, s2[] = {100003}, s3[] = {3, 5, 7}, s4[] = {2, 1, 4099}, s5[] = {0};
    check_nonzero_case(1, s1, 100);
    check_nonzero_case(1, s1, 0);
    check_nonzero_case(1, s5, 50);
    check_nonzero_case(1, s2, 50);
    check_nonzero_case(1, s2, 1);
    check_nonzero_case(1, s2, 100);
    check_nonzero_case(3, s3, 40);
    check_nonzero_case(3, s4, 60);
    check_nonzero_changed(1, s2, 1);
    check_nonzero_changed(1, s2, 777);
    check_nonzero_changed(3, s4, 5000);
    check_nonzero_changed(1, s1, 3); /* fewer nonzero bytes than counted */
}
