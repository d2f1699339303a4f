/* conformance_reduce.c - the reduce entry: every reduction in redops[] x input dtype x result
 * dtype (the input's, or float64) x every (outer, len, inner) in shapes[], including empty
 * axes for the sums and products; NaN wherever it sits; and the accumulation gpudev.h
 * promises: float32 sums accumulate in float64, shown on inputs where a float32 accumulator,
 * in any order, is far off.
 */
#include "conformance.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------
 * the reductions and the shapes
 *
 * Tolerances: max and min are exact (they pick an element) and so are int64 results (sums
 * wrap around). Float sums are compared with a long double reference: a float64 accumulator
 * in any order stays within 1e-13 of the sum of |terms| (about 450 float64 roundings of the
 * whole; a float32 one is millions of times worse), plus one float32 rounding of the result
 * when the result is float32.
 * ---------------------------------------------------------------------------------------- */

typedef struct redop_row {
    gd_redop op;
    const char *name;
    int is_sum;    /* accumulates (SUM, SUMSQ); otherwise picks an element (MAX, MIN) */
    int squares;   /* terms are squares */
    int needs_len; /* len >= 1 (an empty max has no identity) */
    int product;   /* multiplies: checked on inputs near 1 (see check_shapes) */
} redop_row;

/* One row per reduction of the list in tables.h, at its enum value: a reduction without its
 * row here stops the build. */
static const redop_row redops[] = {
    [GD_RED_SUM] = {GD_RED_SUM, "sum", 1, 0, 0},
    [GD_RED_MAX] = {GD_RED_MAX, "max", 0, 0, 1},
    [GD_RED_MIN] = {GD_RED_MIN, "min", 0, 0, 1},
    [GD_RED_SUMSQ] = {GD_RED_SUMSQ, "sumsq", 1, 1, 0},
    [GD_RED_PROD] = {GD_RED_PROD, "prod", 0, 0, 0, 1},
};

#define NUM_REDOPS ((int)(sizeof redops / sizeof redops[0]))
GD_STATIC_ASSERT(NUM_REDOPS == GD_NUM_REDOPS, "conformance_reduce.c: one redops[] row per reduction of GD_REDUCTIONS");
#define SUM_RTOL 1e-13
/* a float64 product of n terms is within n roundings of the exact one (n <= 3e6 here), plus
 * the smallest normal double for results that pass through subnormals */
#define PROD_RTOL 1e-9

/* (outer, len, inner): in is (outer, len, inner), out is (outer, inner); a fourth 1 runs the
 * shape for float32 input only (it is costly to emulate, and its path is the dtype's neither) */
static const int64_t shapes[][4] = {
    {1, 0, 1},       {3, 0, 4},        {2, 0, 3},       {1, 1, 1},      {1, 1, 7},       {1, 7, 1},
    {1, 16, 1},      {3, 17, 1},       {5, 17, 1},      {5, 33, 7},     {7, 5, 33},      {3, 7, 1000},
    {4, 13, 1029},   {1000, 13, 1},    {1000, 301, 1},  {3, 1000, 1},   {3, 1024, 1},    {2, 1025, 1},
    {2, 5000, 1},    {40000, 3, 1},    {2, 70, 5000},   {4, 3, 70000, 1}, {1, 10000, 100}, {1, 100003, 1},
    {1, 200000, 1},  {1, 500000, 2},   {2, 100000, 3},  {3, 20011, 5},  {1, 8193, 1030}, {72, 73, 74},
    {1, 5256, 74},   {5256, 74, 1},    {1, 388944, 1},  {1, 3000001, 1},
};

/* ------------------------------------------------------------------------------------------
 * the reference: every reduction of one input in one pass, in long double (sums), exactly
 * (max, min) and in wrapping uint64 (int64 sums)
 * ---------------------------------------------------------------------------------------- */

typedef struct red_ref {
    int64_t outer, len, inner;
    long double *sum[2], *mag[2]; /* [squares]: sum of terms and of |terms| */
    long double *prod;
    double *max, *min;            /* NaN wherever a NaN was reduced */
    uint64_t *isum[2], *iprod;
    int64_t *imax, *imin;
} red_ref;

static void red_ref_init(red_ref *f, const void *in, gd_dtype t, const int64_t *s)
{
    const int64_t outer = s[0], len = s[1], inner = s[2], nout = outer * inner;
    const size_t m = (size_t)(nout > 0 ? nout : 1);
    f->outer = outer, f->len = len, f->inner = inner;
    for (int q = 0; q < 2; q++) {
        f->sum[q] = calloc(m, sizeof(long double));
        f->mag[q] = calloc(m, sizeof(long double));
        f->isum[q] = calloc(m, sizeof(uint64_t));
    }
    f->max = calloc(m, sizeof(double)), f->min = calloc(m, sizeof(double));
    f->imax = calloc(m, sizeof(int64_t)), f->imin = calloc(m, sizeof(int64_t));
    f->prod = malloc(m * sizeof(long double)), f->iprod = malloc(m * sizeof(uint64_t));
    for (size_t k = 0; k < m; k++) f->prod[k] = 1, f->iprod[k] = 1;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t r = 0; r < len; r++)
            for (int64_t i = 0; i < inner; i++) {
                const int64_t k = o * inner + i, idx = (o * len + r) * inner + i;
                const double v = gdt_getf(in, t, idx);
                const int64_t iv = gdt_is_int(t) ? gdt_geti(in, t, idx) : 0;
                f->sum[0][k] += v, f->mag[0][k] += fabsl(v);
                f->sum[1][k] += (long double)v * v, f->mag[1][k] += (long double)v * v;
                f->isum[0][k] += (uint64_t)iv, f->isum[1][k] += (uint64_t)iv * (uint64_t)iv;
                f->prod[k] *= v, f->iprod[k] *= (uint64_t)iv;
                if (r == 0 || v > f->max[k] || isnan(v)) f->max[k] = v; /* nothing is > NaN: it stays */
                if (r == 0 || v < f->min[k] || isnan(v)) f->min[k] = v;
                if (r == 0 || iv > f->imax[k]) f->imax[k] = iv;
                if (r == 0 || iv < f->imin[k]) f->imin[k] = iv;
            }
}

static void red_ref_free(red_ref *f)
{
    for (int q = 0; q < 2; q++) free(f->sum[q]), free(f->mag[q]), free(f->isum[q]);
    free(f->max), free(f->min), free(f->imax), free(f->imin), free(f->prod), free(f->iprod);
}

/* Expected results of one reduction into `want` (double[] or int64_t[]), and the sums'
 * absolute tolerance into `slack`. */
static void red_ref_pick(const red_ref *f, const redop_row *row, gd_dtype in_t, gd_dtype out_t, void *want,
                         double *slack)
{
    const int q = row->squares, is_max = row->op == GD_RED_MAX;
    for (int64_t k = 0; k < f->outer * f->inner; k++) {
        slack[k] = row->is_sum ? SUM_RTOL * (double)f->mag[q][k] : 0.0;
        if (row->product) {
            slack[k] = PROD_RTOL * fabs((double)f->prod[k]) + DBL_MIN;
            if (gdt_is_int(out_t)) ((int64_t *)want)[k] = (int64_t)f->iprod[k];
            else ((double *)want)[k] = (double)f->prod[k];
        } else if (gdt_is_int(out_t))
            ((int64_t *)want)[k] = row->is_sum ? (int64_t)f->isum[q][k] : is_max ? f->imax[k] : f->imin[k];
        else if (row->is_sum)
            ((double *)want)[k] = (double)f->sum[q][k]; /* a NaN term makes the sum NaN */
        else if (gdt_is_int(in_t))
            ((double *)want)[k] = (double)(is_max ? f->imax[k] : f->imin[k]);
        else
            ((double *)want)[k] = is_max ? f->max[k] : f->min[k];
    }
}

/* Runs one reduction of the device input `din` and checks it. */
static void check_problem(const red_ref *f, const redop_row *row, gd_dtype in_t, gd_dtype out_t, const void *din,
                          const char *note)
{
    int64_t nout = f->outer * f->inner;
    size_t out_bytes = (size_t)nout * gd_dtype_size(out_t);
    void *garbage = gdt_host(nout, out_t);
    memset(garbage, 0xff, out_bytes); /* NaN or -1: every result must be written */
    void *out = gdt_upload_new(garbage, out_bytes);
    void *want = gdt_ref_new(nout, out_t);
    double *slack = gdt_host(nout, GD_FLOAT64);
    red_ref_pick(f, row, in_t, out_t, want, slack);
    if (OK(gdt_be->reduce(out, out_t, row->op, din, in_t, f->outer, f->len, f->inner, gdt_dev, &gdt_err))) {
        const int accumulates = row->is_sum || row->product;
        gdt_tol tol = {accumulates && out_t == GD_FLOAT32 ? 1 : 0, 0, accumulates ? slack : NULL};
        EXPECT(out, out_t, nout, want, tol, "reduce %s %s -> %s (%lld, %lld, %lld)%s", row->name,
               gdt_dtype_name(in_t), gdt_dtype_name(out_t), (long long)f->outer, (long long)f->len,
               (long long)f->inner, note);
    }
    gdt_free(out, out_bytes);
    free(garbage), free(want), free(slack);
}

/* Every reduction (or, with picks_only, those that pick an element; with products, those
 * that multiply) and result dtype of one input. */
static void check_all_ops(gd_dtype in_t, const int64_t *s, const void *din, const void *in, int picks_only,
                          int products, const char *note)
{
    red_ref f;
    red_ref_init(&f, in, in_t, s);
    for (int r = 0; r < NUM_REDOPS; r++) {
        const int accumulates = redops[r].is_sum || redops[r].product;
        if ((redops[r].needs_len && s[1] == 0) || (picks_only && accumulates) || redops[r].product != products)
            continue;
        for (int of = 0; of < 2; of++) {
            if (of && in_t == GD_FLOAT64) continue;
            /* int32 sums and products give int64 (NumPy's of a smaller integer) */
            const gd_dtype same = in_t == GD_INT32 && accumulates ? GD_INT64 : in_t;
            check_problem(&f, &redops[r], in_t, of ? GD_FLOAT64 : same, din, note);
        }
    }
    red_ref_free(&f);
}

/* ------------------------------------------------------------------------------------------
 * the section
 * ---------------------------------------------------------------------------------------- */

/* Values whose long products neither overflow nor vanish in float64 (normal ones vanish
 * after a few hundred, integers in the thousands overflow after a hundred, into inf or NaN by
 * their order): 1 + 0.01 normal, and integers from {1, -1, 2, 1}, whose products are exact
 * powers of two in any order. */
static void fill_near_one(void *p, gd_dtype t, int64_t n)
{
    static const int64_t ints[4] = {1, -1, 2, 1};
    for (int64_t i = 0; i < n; i++) {
        int64_t iv = ints[gdt_rand_u64() % 4];
        gdt_put(p, t, i, gdt_is_int(t) ? (double)iv : 1.0 + 0.01 * gdt_rand_normal(), iv);
    }
}

static void check_shapes(void)
{
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int64_t n = shapes[s][0] * shapes[s][1] * shapes[s][2];
        for (int dt = 0; dt < (shapes[s][3] ? 1 : GD_NUM_DTYPES); dt++) {
            gd_dtype t = (gd_dtype)dt;
            if (t == GD_BOOL) continue; /* the core reduces bools as int64 */
            void *in = gdt_host(n, t);
            gdt_fill_normal(in, t, n, gdt_is_int(t) ? 1000.0 : 1.0);
            void *din = gdt_upload_new(in, (size_t)n * gd_dtype_size(t));
            check_all_ops(t, shapes[s], din, in, 0, 0, "");
            fill_near_one(in, t, n);
            gdt_upload(din, in, (size_t)n * gd_dtype_size(t));
            check_all_ops(t, shapes[s], din, in, 0, 1, ", input near 1");
            gdt_free(din, (size_t)n * gd_dtype_size(t));
            free(in);
        }
    }
}

/* One NaN at a given place: its max and min are NaN, the other results are not. (NaN sums
 * need no more than IEEE arithmetic.) */
static void check_nan(void)
{
    static const struct {
        int64_t shape[3], at[3]; /* at: (o, r, i) of the NaN */
    } rows[] = {
        {{1, 100000, 1}, {0, 0, 0}},         {{1, 100000, 1}, {0, 33331, 0}}, {{1, 100000, 1}, {0, 65535, 0}},
        {{1, 100000, 1}, {0, 65536, 0}},     {{1, 100000, 1}, {0, 66662, 0}}, {{1, 100000, 1}, {0, 99993, 0}},
        {{1, 100000, 1}, {0, 99999, 0}},     {{1000, 13, 1}, {999, 12, 0}},
        {{3, 20011, 5}, {1, 20010, 3}},      {{1, 8193, 1030}, {0, 4096, 1029}}, {{4, 3, 7000}, {2, 1, 6999}},
        {{72, 73, 74}, {71, 0, 37}},
    };
    for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++) {
        const int64_t *s = rows[k].shape, *at = rows[k].at;
        int64_t n = s[0] * s[1] * s[2], idx = (at[0] * s[1] + at[1]) * s[2] + at[2];
        for (int dt = GD_FLOAT32; dt <= GD_FLOAT64; dt++) {
            gd_dtype t = (gd_dtype)dt;
            void *in = gdt_host(n, t);
            gdt_fill_normal(in, t, n, 1.0);
            gdt_put(in, t, idx, NAN, 0);
            void *din = gdt_upload_new(in, (size_t)n * gd_dtype_size(t));
            char note[64];
            snprintf(note, sizeof note, ", NaN at (%lld, %lld, %lld)", (long long)at[0], (long long)at[1],
                     (long long)at[2]);
            check_all_ops(t, s, din, in, 1, 0, note);
            gdt_free(din, (size_t)n * gd_dtype_size(t));
            free(in);
        }
    }
}

/* (2^25, 1, -2^25) repeated: a float32 accumulator loses every 1 (in any order, 2^25 + 1 and
 * 1 - 2^25 round back to +-2^25) and ends near 0; in float64 every partial sum is an integer
 * below 2^53, so any order gives exactly the number of triples. */
static void check_cancellation(void)
{
    static const int64_t s[][3] = {{1, 300009, 1}, {2, 300009, 3}};
    for (size_t k = 0; k < sizeof s / sizeof s[0]; k++) {
        int64_t n = s[k][0] * s[k][1] * s[k][2];
        float *in = gdt_host(n, GD_FLOAT32);
        for (int64_t j = 0; j < n; j++) {
            int64_t r = (j / s[k][2]) % s[k][1];
            in[j] = r % 3 == 0 ? 0x1p25f : r % 3 == 1 ? 1.0f : -0x1p25f;
        }
        void *din = gdt_upload_new(in, (size_t)n * 4);
        for (int of = 0; of < 2; of++) {
            gd_dtype out_t = of ? GD_FLOAT64 : GD_FLOAT32;
            int64_t nout = s[k][0] * s[k][2];
            void *out = gdt_alloc((size_t)nout * 8);
            double *want = gdt_ref_new(nout, GD_FLOAT64);
            for (int64_t j = 0; j < nout; j++) want[j] = (double)(s[k][1] / 3);
            if (OK(gdt_be->reduce(out, out_t, GD_RED_SUM, din, GD_FLOAT32, s[k][0], s[k][1], s[k][2], gdt_dev,
                                  &gdt_err)))
                EXPECT(out, out_t, nout, want, GDT_EXACT,
                       "sum of (2^25, 1, -2^25) x %lld in float32 -> %s (%lld, %lld, %lld): a float32 accumulator "
                       "gives about 0",
                       (long long)(s[k][1] / 3), gdt_dtype_name(out_t), (long long)s[k][0], (long long)s[k][1],
                       (long long)s[k][2]);
            gdt_free(out, (size_t)nout * 8);
            free(want);
        }
        gdt_free(din, (size_t)n * 4);
        free(in);
    }
}

/* 4e6 values of randn + 1: float64 accumulation is within 1e-12 of the exact sum (and sum of
 * squares); a float32 accumulator is off by 1e-7 (pairwise) to 1e-3 (one running sum). */
static void check_long_sums(void)
{
    const int64_t n = 4000037;
    float *in = gdt_host(n, GD_FLOAT32);
    long double exact[2] = {0, 0};
    for (int64_t i = 0; i < n; i++) {
        in[i] = (float)(gdt_rand_normal() + 1.0);
        exact[0] += in[i];
        exact[1] += (long double)in[i] * in[i];
    }
    void *din = gdt_upload_new(in, (size_t)n * 4);
    for (int sq = 0; sq < 2; sq++) {
        double got = 0;
        void *out = gdt_alloc(8);
        if (OK(gdt_be->reduce(out, GD_FLOAT64, sq ? GD_RED_SUMSQ : GD_RED_SUM, din, GD_FLOAT32, 1, n, 1, gdt_dev,
                              &gdt_err)))
            gdt_download(&got, out, 8);
        double rel = fabs(got - (double)exact[sq]) / (double)exact[sq];
        CHECK(rel < 1e-12, "%s of %lld float32 (randn + 1) -> float64: relative error %.3g, a float64 accumulator "
              "stays below 1e-12", sq ? "sumsq" : "sum", (long long)n, rel);
        gdt_free(out, 8);
    }
    gdt_free(din, (size_t)n * 4);
    free(in);
}

/* int64 sums wrap like NumPy's; their float64 results do not. */
static void check_int64_wrap(void)
{
    static const int64_t in[3] = {INT64_MAX, 1, 1};
    static const int64_t want_sum[1] = {INT64_MIN + 1}, want_sumsq[1] = {-9223372036709301615};
    static const int64_t sq_in[2] = {3037000500, 1};
    static const double want_f64[1] = {0x1p63};
    void *din = gdt_upload_new(in, sizeof in), *dsq = gdt_upload_new(sq_in, sizeof sq_in), *out = gdt_alloc(8);
    if (OK(gdt_be->reduce(out, GD_INT64, GD_RED_SUM, din, GD_INT64, 1, 3, 1, gdt_dev, &gdt_err)))
        EXPECT(out, GD_INT64, 1, want_sum, GDT_EXACT, "INT64_MAX + 1 + 1 wraps");
    if (OK(gdt_be->reduce(out, GD_FLOAT64, GD_RED_SUM, din, GD_INT64, 1, 3, 1, gdt_dev, &gdt_err)))
        EXPECT(out, GD_FLOAT64, 1, want_f64, GDT_EXACT, "INT64_MAX + 1 + 1 as float64 does not wrap");
    if (OK(gdt_be->reduce(out, GD_INT64, GD_RED_SUMSQ, dsq, GD_INT64, 1, 2, 1, gdt_dev, &gdt_err)))
        EXPECT(out, GD_INT64, 1, want_sumsq, GDT_EXACT, "3037000500^2 + 1 wraps");
    gdt_free(din, sizeof in);
    gdt_free(dsq, sizeof sq_in);
    gdt_free(out, 8);
}

/* int32 sums accumulate in int64: past INT32_MAX they do not wrap; int32 max and min stay
 * int32, INT32_MIN and INT32_MAX included. */
static void check_int32_sums(void)
{
    static const int32_t in[3] = {INT32_MAX, 1, INT32_MIN};
    static const int64_t want_sum[1] = {0}, want_head[1] = {(int64_t)INT32_MAX + 1};
    static const int64_t want_max[1] = {INT32_MAX}, want_min[1] = {INT32_MIN};
    void *din = gdt_upload_new(in, sizeof in), *out = gdt_alloc(8);
    if (OK(gdt_be->reduce(out, GD_INT64, GD_RED_SUM, din, GD_INT32, 1, 2, 1, gdt_dev, &gdt_err)))
        EXPECT(out, GD_INT64, 1, want_head, GDT_EXACT, "int32 INT32_MAX + 1 -> int64 does not wrap");
    if (OK(gdt_be->reduce(out, GD_INT64, GD_RED_SUM, din, GD_INT32, 1, 3, 1, gdt_dev, &gdt_err)))
        EXPECT(out, GD_INT64, 1, want_sum, GDT_EXACT, "int32 INT32_MAX + 1 + INT32_MIN -> int64");
    if (OK(gdt_be->reduce(out, GD_INT32, GD_RED_MAX, din, GD_INT32, 1, 3, 1, gdt_dev, &gdt_err)))
        EXPECT(out, GD_INT32, 1, want_max, GDT_EXACT, "int32 max of INT32_MAX, 1, INT32_MIN");
    if (OK(gdt_be->reduce(out, GD_INT32, GD_RED_MIN, din, GD_INT32, 1, 3, 1, gdt_dev, &gdt_err)))
        EXPECT(out, GD_INT32, 1, want_min, GDT_EXACT, "int32 min of INT32_MAX, 1, INT32_MIN");
    gdt_free(din, sizeof in);
    gdt_free(out, 8);
}

/* Products wrap in int64 like NumPy's; int32 ones accumulate in int64 and do not wrap there. */
static void check_products(void)
{
    static const struct {
        gd_dtype t;
        int64_t n, in[3], want;
        const char *what;
    } rows[] = {
        {GD_INT64, 2, {3037000500, 3037000500}, -9223372036709301616, "3037000500 * 3037000500 wraps"},
        {GD_INT32, 3, {65536, 65536, -1}, -4294967296, "int32 65536 * 65536 * -1 -> int64 does not wrap"},
    };
    for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++) {
        const size_t bytes = (size_t)rows[k].n * gd_dtype_size(rows[k].t);
        void *in = gdt_host(rows[k].n, rows[k].t);
        for (int64_t i = 0; i < rows[k].n; i++) gdt_put(in, rows[k].t, i, (double)rows[k].in[i], rows[k].in[i]);
        void *din = gdt_upload_new(in, bytes), *out = gdt_alloc(8);
        if (OK(gdt_be->reduce(out, GD_INT64, GD_RED_PROD, din, rows[k].t, 1, rows[k].n, 1, gdt_dev, &gdt_err)))
            EXPECT(out, GD_INT64, 1, &rows[k].want, GDT_EXACT, "%s", rows[k].what);
        gdt_free(din, bytes);
        gdt_free(out, 8);
        free(in);
    }
}

void gdt_check_reduce(void)
{
    for (int r = 0; r < NUM_REDOPS; r++)
        CHECK(redops[r].name && redops[r].op == (gd_redop)r, "redops[%d]: the row of %s", r, gd_redop_table[r].name);
    check_shapes();
    check_nan();
    check_cancellation();
    check_long_sums();
    check_int64_wrap();
    check_int32_sums();
    check_products();
}
