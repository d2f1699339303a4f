/* conformance_select.c - the selection entries: where (every dtype; array, scalar and
 * broadcast operands; transposed, stepped and reversed views; sizes past the parallel
 * thresholds) and argreduce (argmax and argmin of every dtype over rows, columns, long rows
 * and long columns, with ties, NaN anywhere and rows of NaN, and ties and NaNs across the
 * chunks a long axis is cut into), against plain host loops.
 */
#include "conformance.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------
 * where
 * ---------------------------------------------------------------------------------------- */

/* A 2-D where of shape (rows, cols) into a C-contiguous output: the condition broadcast
 * along rows, x transposed in memory, y with axis 0 reversed; or, flat, all three
 * contiguous. Each operand may instead be a scalar. */
typedef struct where_case {
    const char *name;
    int64_t rows, cols;
    int flat;                 /* every operand contiguous of rows * cols elements */
    int scalar_c, scalar_x, scalar_y;
} where_case;

static const where_case where_cases[] = {
    {"(1)", 1, 1, 1, 0, 0, 0},
    {"(1000) arrays", 1, 1000, 1, 0, 0, 0},
    {"(1000) scalar x and y", 1, 1000, 1, 0, 1, 1},
    {"(1000) scalar condition", 1, 1000, 1, 1, 0, 0},
    {"(300001) arrays", 1, 300001, 1, 0, 0, 0},
    {"(37,45) broadcast c, x.T, y[::-1]", 37, 45, 0, 0, 0, 0},
    {"(37,45) scalar y", 37, 45, 0, 0, 0, 1},
    {"(700,800) broadcast c, x.T, y[::-1]", 700, 800, 0, 0, 0, 0},
};

static void check_where_case(const where_case *wc, gd_dtype t)
{
    const int64_t n = wc->rows * wc->cols, esz = (int64_t)gd_dtype_size(t);
    uint8_t *c = gdt_host(wc->flat ? n : wc->cols, GD_BOOL);
    void *x = gdt_host(n, t), *y = gdt_host(n, t), *want = gdt_host(n, t), *got = gdt_host(n, t);
    const int64_t nc = wc->flat ? n : wc->cols;
    for (int64_t i = 0; i < nc; i++) c[i] = (uint8_t)(gdt_rand_u64() >> 63);
    gdt_fill_edge(x, t, n);
    gdt_fill_normal(y, t, n, 3.0);
    gd_ewise ew = {.ndim = wc->flat ? 1 : 2, .contiguous = wc->flat, .size = n};
    gd_operand oc = {0}, ox = {0}, oy = {0};
    if (wc->flat) {
        ew.shape[0] = n;
        ew.out_strides[0] = 1;
        oc.strides[0] = ox.strides[0] = oy.strides[0] = 1;
    } else {
        ew.shape[0] = wc->rows, ew.shape[1] = wc->cols;
        ew.out_strides[0] = wc->cols, ew.out_strides[1] = 1;
        oc.strides[0] = 0, oc.strides[1] = 1;            /* c: one row, broadcast */
        ox.strides[0] = 1, ox.strides[1] = wc->rows;     /* x: stored (cols, rows), read .T */
        oy.strides[0] = -wc->cols, oy.strides[1] = 1;    /* y: rows reversed */
    }
    /* scalars: the condition true, x the first element of x's data, y the second (the first
     * when there is only one) */
    const int64_t y1 = n > 1 ? 1 : 0;
    gd_scalar sx, sy;
    if (gd_dtype_is_float(t)) sx.f = gdt_getf(x, t, 0), sy.f = gdt_getf(y, t, y1);
    else if (gdt_is_int(t)) sx.i = gdt_geti(x, t, 0), sy.i = gdt_geti(y, t, y1);
    else sx.i = ((uint8_t *)x)[0], sy.i = ((uint8_t *)y)[y1];
    for (int64_t r = 0; r < wc->rows; r++)
        for (int64_t k = 0; k < wc->cols; k++) {
            const int64_t i = r * wc->cols + k;
            const int cv = wc->scalar_c ? 1 : wc->flat ? c[i] : c[k];
            const int64_t xi = wc->scalar_x ? 0 : wc->flat ? i : k * wc->rows + r;
            const int64_t yi = wc->scalar_y ? y1 : wc->flat ? i : (wc->rows - 1 - r) * wc->cols + k;
            memcpy((char *)want + i * esz, cv ? (char *)x + xi * esz : (char *)y + yi * esz, (size_t)esz);
        }
    void *dc = gdt_upload_new(c, (size_t)nc), *dx = gdt_upload_new(x, (size_t)(n * esz));
    void *dy = gdt_upload_new(y, (size_t)(n * esz)), *dout = gdt_alloc((size_t)(n * esz));
    oc.data = wc->scalar_c ? NULL : dc;
    oc.scalar.i = 1;
    ox.data = wc->scalar_x ? NULL : dx;
    ox.scalar = sx;
    oy.data = wc->scalar_y ? NULL : (wc->flat ? dy : (char *)dy + (wc->rows - 1) * wc->cols * esz);
    oy.scalar = sy;
    if (OK(gdt_be->where(dout, t, &ew, &oc, &ox, &oy, gdt_dev, &gdt_err))) {
        gdt_download(got, dout, (size_t)(n * esz));
        int64_t bad = -1;
        for (int64_t i = 0; i < n && bad < 0; i++)
            if (memcmp((char *)got + i * esz, (char *)want + i * esz, (size_t)esz)) bad = i;
        CHECK(bad < 0, "where %s, %s: element %lld is not the one selected", wc->name, gdt_dtype_name(t),
              (long long)bad);
    }
    gdt_free(dc, (size_t)nc);
    gdt_free(dx, (size_t)(n * esz));
    gdt_free(dy, (size_t)(n * esz));
    gdt_free(dout, (size_t)(n * esz));
    free(c), free(x), free(y), free(want), free(got);
}

/* ------------------------------------------------------------------------------------------
 * argreduce
 * ---------------------------------------------------------------------------------------- */

typedef struct arg_case {
    const char *name;
    int64_t outer, len, inner;
    int nan_every;  /* 0: no NaN; k: a NaN at every k-th element; -1: all NaN */
} arg_case;

static const arg_case arg_cases[] = {
    {"(1,1,1)", 1, 1, 1, 0},          {"(1,7,1)", 1, 7, 1, 0},
    {"(5,13,1)", 5, 13, 1, 0},        {"(5,13,1) NaN", 5, 13, 1, 5},
    {"(3,9,300)", 3, 9, 300, 0},      {"(3,9,300) NaN", 3, 9, 300, 7},
    {"(1,300001,1)", 1, 300001, 1, 0}, {"(1,300001,1) NaN", 1, 300001, 1, 100003},
    {"(2,70001,1)", 2, 70001, 1, 0},  {"(400,33,1)", 400, 33, 1, 0},
    {"(4,6,5) all NaN", 4, 6, 5, -1}, {"(1,40000,3)", 1, 40000, 3, 0},
    {"(1,200003,2)", 1, 200003, 2, 0}, {"(2,150001,3) NaN", 2, 150001, 3, 30011},
};

/* v beats b: strictly beyond it, or a NaN over a number (gpudev.h's argreduce contract) */
static int beats(double v, double b, int is_max)
{
    if (isnan(v)) return !isnan(b);
    return is_max ? v > b : v < b;
}

/* The first extreme of each column of x, an (outer, len, inner) block, into want. */
static void arg_reference(int64_t *want, const void *x, gd_dtype t, int64_t outer, int64_t len, int64_t inner,
                          int is_max)
{
    for (int64_t o = 0; o < outer; o++)
        for (int64_t k = 0; k < inner; k++) {
            int64_t at = 0;
            for (int64_t r = 1; r < len; r++)
                if (beats(gdt_getf(x, t, (o * len + r) * inner + k), gdt_getf(x, t, (o * len + at) * inner + k), is_max))
                    at = r;
            want[o * inner + k] = at;
        }
}

/* The backend's argreduce of the host block x against arg_reference. */
static void expect_arg(const void *x, gd_dtype t, int64_t outer, int64_t len, int64_t inner, int is_max,
                       const char *name)
{
    const int64_t n = outer * len * inner, m = outer * inner;
    int64_t *want = gdt_host(m, GD_INT64);
    arg_reference(want, x, t, outer, len, inner, is_max);
    const size_t bytes = (size_t)n * gd_dtype_size(t);
    void *dx = gdt_upload_new(x, bytes), *dout = gdt_alloc((size_t)m * sizeof(int64_t));
    if (OK(gdt_be->argreduce(dout, is_max ? GD_RED_MAX : GD_RED_MIN, dx, t, outer, len, inner, gdt_dev, &gdt_err)))
        EXPECT(dout, GD_INT64, m, want, GDT_EXACT, "%s %s %s", is_max ? "argmax" : "argmin", name, gdt_dtype_name(t));
    gdt_free(dx, bytes);
    gdt_free(dout, (size_t)m * sizeof(int64_t));
    free(want);
}

static void check_arg_case(const arg_case *ac, gd_dtype t, int is_max)
{
    const int64_t n = ac->outer * ac->len * ac->inner;
    void *x = gdt_host(n, t);
    for (int64_t i = 0; i < n; i++) { /* few distinct values: ties everywhere */
        const int64_t v = (int64_t)(gdt_rand_u64() % 7) - 3;
        const int nan = gd_dtype_is_float(t) && (ac->nan_every < 0 || (ac->nan_every > 0 && i % ac->nan_every == 3));
        gdt_put(x, t, i, nan ? NAN : (double)v * 0.5, t == GD_BOOL ? v > 0 : v);
    }
    expect_arg(x, t, ac->outer, ac->len, ac->inner, is_max, ac->name);
    free(x);
}

/* Long columns, few of them: the axis is cut into chunks (of rows that are multiples of 64 on
 * the GPU, 1/64 of the axis on the CPU) whose candidates are merged. In column c = o * inner
 * + k the extreme fills every row from run[c] on, so each later chunk offers a tie and the
 * merge must keep the earliest; a row before run[c] never holds it. With NaNs (floats),
 * nan[c] >= 0 puts a NaN at that row and at every 4099th row after it: NaNs tie with each
 * other across chunks and beat the extreme before them. The rows include the axis' first and
 * last rows and the first and last rows of chunks as this length is cut: 62528 rows ((1, L, 2) and (1, L, 3))
 * and 125056 ((2, L, 3)) with 2 multiprocessors; 1024, 960 and 1920 with 132; 15626 on the
 * CPU. */
typedef struct arg_run_case {
    const char *name;
    int64_t outer, len, inner;
    int64_t run[6], nan[6];
} arg_run_case;

static const arg_run_case arg_run_cases[] = {
    {"(1,1000003,2) runs", 1, 1000003, 2, {500224, 307199}, {-1, -1}},
    {"(1,1000003,2) runs, NaN", 1, 1000003, 2, {62527, 0}, {937920, 1023}},
    {"(1,1000003,3) runs at the ends", 1, 1000003, 3, {1000002, 15625, 745920}, {999999, -1, 959}},
    {"(2,1000003,3) runs, NaN", 2, 1000003, 3, {46877, 250112, 31252, 5, 1920, 1000000},
     {-1, 625280, 62528, 1919, -1, 700001}},
};

static void check_arg_run_case(const arg_run_case *rc, gd_dtype t, int is_max)
{
    const int64_t n = rc->outer * rc->len * rc->inner;
    const double extreme = is_max ? 2.0 : -2.0; /* beyond the other values, within [-1.5, 1.5] */
    void *x = gdt_host(n, t);
    for (int64_t o = 0; o < rc->outer; o++)
        for (int64_t r = 0; r < rc->len; r++)
            for (int64_t k = 0; k < rc->inner; k++) {
                const int64_t c = o * rc->inner + k, i = (o * rc->len + r) * rc->inner + k;
                const int64_t v = (int64_t)(gdt_rand_u64() % 7) - 3;
                const int in_run = r >= rc->run[c];
                const int nan = gd_dtype_is_float(t) && rc->nan[c] >= 0 && r >= rc->nan[c] && (r - rc->nan[c]) % 4099 == 0;
                if (t == GD_BOOL) gdt_put(x, t, i, 0, in_run ? is_max : !is_max);
                else if (nan) gdt_put(x, t, i, NAN, 0);
                else gdt_put(x, t, i, in_run ? extreme : (double)v * 0.5, in_run ? (int64_t)extreme * 2 : v);
            }
    expect_arg(x, t, rc->outer, rc->len, rc->inner, is_max, rc->name);
    free(x);
}

/* Entries refuse what their contract rules out, with a status and a message. */
static void check_refusals(void)
{
    int64_t out = 0;
    double x = 1.0;
    void *dx = gdt_upload_new(&x, sizeof x), *dout = gdt_alloc(sizeof out);
    gd_error err = {0};
    CHECK(gdt_be->argreduce(dout, GD_RED_SUM, dx, GD_FLOAT64, 1, 1, 1, gdt_dev, &err) == GD_ERR_VALUE &&
              strstr(err.message, "argreduce"),
          "argreduce with GD_RED_SUM: '%s'", err.message);
    gdt_free(dx, sizeof x);
    gdt_free(dout, sizeof out);
}

void gdt_check_select(void)
{
    for (int t = 0; t < GD_NUM_DTYPES; t++) {
        for (size_t i = 0; i < sizeof where_cases / sizeof where_cases[0]; i++) check_where_case(&where_cases[i], (gd_dtype)t);
        for (size_t i = 0; i < sizeof arg_cases / sizeof arg_cases[0]; i++) {
            check_arg_case(&arg_cases[i], (gd_dtype)t, 1);
            check_arg_case(&arg_cases[i], (gd_dtype)t, 0);
        }
        for (size_t i = 0; i < sizeof arg_run_cases / sizeof arg_run_cases[0]; i++) {
            check_arg_run_case(&arg_run_cases[i], (gd_dtype)t, 1);
            check_arg_run_case(&arg_run_cases[i], (gd_dtype)t, 0);
        }
    }
    check_refusals();
}
