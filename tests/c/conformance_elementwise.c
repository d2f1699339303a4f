/* conformance_elementwise.c - the unary and binary entries: every operation in unops[] and
 * binops[] x every dtype it is defined for x every layout in cases[] (odd sizes, broadcast
 * strides, transposed and sliced operands, 0-d results, sizes past the parallel thresholds),
 * each with array operands, with scalar operands, and writing in place where gpudev.h allows
 * it (out aliasing a contiguous operand).
 */
#include "conformance.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------
 * references: float64 for float dtypes (the float32 inputs are exact in double), exact
 * wrapping arithmetic for int64 (done in uint64, where overflow is defined)
 * ---------------------------------------------------------------------------------------- */

#define WRAP(expr) ((int64_t)(uint64_t)(expr))

static double ref_copy(double x) { return x; }
static double ref_neg(double x) { return -x; }
static double ref_relu(double x) { return x > 0 || isnan(x) ? x : 0.0; }
static double ref_square(double x) { return x * x; }
static int64_t iref_copy(int64_t x) { return x; }
static int64_t iref_neg(int64_t x) { return WRAP(0 - (uint64_t)x); }
static int64_t iref_abs(int64_t x) { return x < 0 ? WRAP(0 - (uint64_t)x) : x; }
static int64_t iref_relu(int64_t x) { return x > 0 ? x : 0; }
static int64_t iref_square(int64_t x) { return WRAP((uint64_t)x * (uint64_t)x); }

static double ref_add(double x, double y) { return x + y; }
static double ref_sub(double x, double y) { return x - y; }
static double ref_mul(double x, double y) { return x * y; }
static double ref_div(double x, double y) { return x / y; }
static double ref_maximum(double x, double y) { return isnan(x) || isnan(y) ? NAN : x > y ? x : y; }
static double ref_minimum(double x, double y) { return isnan(x) || isnan(y) ? NAN : x < y ? x : y; }
static int64_t iref_add(int64_t x, int64_t y) { return WRAP((uint64_t)x + (uint64_t)y); }
static int64_t iref_sub(int64_t x, int64_t y) { return WRAP((uint64_t)x - (uint64_t)y); }
static int64_t iref_mul(int64_t x, int64_t y) { return WRAP((uint64_t)x * (uint64_t)y); }
static int64_t iref_maximum(int64_t x, int64_t y) { return x > y ? x : y; }
static int64_t iref_minimum(int64_t x, int64_t y) { return x < y ? x : y; }
static int64_t iref_pow(int64_t x, int64_t y) /* y >= 0: gpudev.h's contract */
{
    uint64_t r = 1;
    for (int64_t e = 0; e < y; e++) r *= (uint64_t)x;
    return WRAP(r);
}

/* ------------------------------------------------------------------------------------------
 * the operations: a row per operation. Tolerances are units in the last place of the result
 * against the float64 reference: 0 where IEEE 754 defines the result (copy, sign changes,
 * +, -, *, /, sqrt: correctly rounded, and float32 results of the float64 reference are then
 * exact); for the math library's functions CUDA's documented maximum error plus one, which
 * also covers glibc (float32: expf 2, logf 1, tanhf 2, powf 4 ulp; float64: exp, log, tanh
 * 1, pow 2 ulp).
 * ---------------------------------------------------------------------------------------- */

typedef struct unop_row {
    gd_unop op;
    const char *name;
    double (*ref)(double);
    int64_t (*iref)(int64_t); /* NULL: not defined for int64 */
    double ulps_f32, ulps_f64;
} unop_row;

static const unop_row unops[] = {
    {GD_COPY, "copy", ref_copy, iref_copy, 0, 0},   {GD_NEG, "neg", ref_neg, iref_neg, 0, 0},
    {GD_ABS, "abs", fabs, iref_abs, 0, 0},          {GD_RELU, "relu", ref_relu, iref_relu, 0, 0},
    {GD_EXP, "exp", exp, NULL, 3, 2},               {GD_LOG, "log", log, NULL, 2, 2},
    {GD_SQRT, "sqrt", sqrt, NULL, 0, 0},            {GD_TANH, "tanh", tanh, NULL, 3, 2},
    {GD_SQUARE, "square", ref_square, iref_square, 0, 0},
};

typedef struct binop_row {
    gd_binop op;
    const char *name;
    double (*ref)(double, double);
    int64_t (*iref)(int64_t, int64_t); /* NULL: not defined for int64 */
    double ulps_f32, ulps_f64;
    int exponent_b; /* int64 b holds exponents 0..8 (negative ones are outside the contract) */
} binop_row;

static const binop_row binops[] = {
    {GD_ADD, "add", ref_add, iref_add, 0, 0, 0},
    {GD_SUB, "sub", ref_sub, iref_sub, 0, 0, 0},
    {GD_MUL, "mul", ref_mul, iref_mul, 0, 0, 0},
    {GD_DIV, "div", ref_div, NULL, 0, 0, 0},
    {GD_POW, "pow", pow, iref_pow, 5, 3, 1},
    {GD_MAXIMUM, "maximum", ref_maximum, iref_maximum, 0, 0, 0},
    {GD_MINIMUM, "minimum", ref_minimum, iref_minimum, 0, 0, 0},
};

#define NUM_UNOPS ((int)(sizeof unops / sizeof unops[0]))
#define NUM_BINOPS ((int)(sizeof binops / sizeof binops[0]))

/* ------------------------------------------------------------------------------------------
 * the layouts
 * ---------------------------------------------------------------------------------------- */

/* How an operand is stored: its extent along each output axis (1 on a broadcast axis), the
 * order of its axes in memory, and a step between neighbours along its innermost memory axis
 * (a sliced view such as x[:, ::2]). */
typedef struct layout {
    int64_t shape[4];
    int reversed; /* axes reversed in memory: a transposed view */
    int step;     /* 0 or 1: adjacent */
} layout;

typedef struct ewise_case {
    const char *name;
    int ndim;
    int64_t out[4];
    layout a, b;
} ewise_case;

#define PLAIN(...) {{__VA_ARGS__}, 0, 0}

static const ewise_case cases[] = {
    {"(1)", 1, {1}, PLAIN(1), PLAIN(1)},
    {"(7)", 1, {7}, PLAIN(7), PLAIN(7)},
    {"0-d", 0, {0}, PLAIN(0), PLAIN(0)},
    {"(3,5) (1,5)", 2, {3, 5}, PLAIN(3, 5), PLAIN(1, 5)},
    {"(3,1) (3,5)", 2, {3, 5}, PLAIN(3, 1), PLAIN(3, 5)},
    {"(7,1) (1,5)", 2, {7, 5}, PLAIN(7, 1), PLAIN(1, 5)},
    {"(3,1,5) (1,4,5)", 3, {3, 4, 5}, PLAIN(3, 1, 5), PLAIN(1, 4, 5)},
    {"(3,1,4) (1,5,1)", 3, {3, 5, 4}, PLAIN(3, 1, 4), PLAIN(1, 5, 1)},
    {"(2,3,7) (1,1,1)", 3, {2, 3, 7}, PLAIN(2, 3, 7), PLAIN(1, 1, 1)},
    {"(2,1,4,1) (1,3,1,5)", 4, {2, 3, 4, 5}, PLAIN(2, 1, 4, 1), PLAIN(1, 3, 1, 5)},
    {"(5,7).T (7,5)", 2, {7, 5}, {{7, 5}, 1, 0}, PLAIN(7, 5)},
    {"(72,146)[:, ::2] (73,72).T", 2, {72, 73}, {{72, 73}, 0, 2}, {{72, 73}, 1, 0}},
    {"(72,73,74)", 3, {72, 73, 74}, PLAIN(72, 73, 74), PLAIN(72, 73, 74)},
    {"(72,1,74) (1,73,1)", 3, {72, 73, 74}, PLAIN(72, 1, 74), PLAIN(1, 73, 1)},
    {"(9,73,74) (9,73,1)", 3, {9, 73, 74}, PLAIN(9, 73, 74), PLAIN(9, 73, 1)},
    {"(130,1031) (1,1031)", 2, {130, 1031}, PLAIN(130, 1031), PLAIN(1, 1031)},
    {"(300001)", 1, {300001}, PLAIN(300001), PLAIN(300001)},
};

#define NUM_CASES ((int)(sizeof cases / sizeof cases[0]))

/* An operand placed in memory: its strides per output axis and its buffers. */
typedef struct placed {
    int64_t strides[GD_MAX_NDIM];
    int64_t storage; /* elements in its buffer */
    int full;        /* stored exactly like the output: C order, no broadcast, no gaps */
    int64_t *off;    /* where the element for output index i is, for the references */
    void *host, *dev;
} placed;

static int64_t case_size(const ewise_case *c)
{
    int64_t n = 1;
    for (int k = 0; k < c->ndim; k++) n *= c->out[k];
    return n;
}

static void place(placed *p, const layout *l, const ewise_case *c, gd_dtype t)
{
    memset(p, 0, sizeof *p);
    int64_t run = 1;
    p->full = !l->reversed && l->step <= 1;
    for (int j = 0; j < c->ndim; j++) {
        int k = l->reversed ? j : c->ndim - 1 - j; /* memory order, innermost first */
        int64_t step = j == 0 && l->step > 1 ? l->step : 1;
        p->strides[k] = l->shape[k] == 1 && c->out[k] != 1 ? 0 : run * step;
        if (l->shape[k] != c->out[k]) p->full = 0;
        run *= l->shape[k] * step;
    }
    p->storage = run;
    p->host = gdt_host(run, t);
    gdt_fill_edge(p->host, t, run);
    p->dev = gdt_upload_new(p->host, (size_t)run * gd_dtype_size(t));
    int64_t n = case_size(c);
    p->off = gdt_host(n, GD_INT64);
    for (int64_t i = 0; i < n; i++) {
        int64_t flat = i, off = 0;
        for (int k = c->ndim - 1; k >= 0; k--) {
            off += (flat % c->out[k]) * p->strides[k];
            flat /= c->out[k];
        }
        p->off[i] = off;
    }
}

static void unplace(placed *p, gd_dtype t)
{
    gdt_free(p->dev, (size_t)p->storage * gd_dtype_size(t));
    free(p->host);
    free(p->off);
}

/* ------------------------------------------------------------------------------------------
 * one call and its check
 * ---------------------------------------------------------------------------------------- */

enum { ARRAYS, SCALAR_A, SCALAR_B, OUT_IS_A, OUT_IS_B, NUM_FORMS };
static const char *const form_names[] = {"arrays", "scalar a", "scalar b", "out is a", "out is b"};

/* Scalars: -1.5 and 0.75 (pow: 2, which a backend may turn into a square); int64 -3 and 7
 * (pow: 5). */
static gd_scalar scalar_for(gd_dtype t, int is_b, const binop_row *row)
{
    gd_scalar s;
    if (t == GD_INT64)
        s.i = is_b ? (row && row->op == GD_POW ? 5 : 7) : -3;
    else
        s.f = is_b ? (row && row->op == GD_POW ? 2.0 : 0.75) : -1.5;
    return s;
}

static void operand_for(gd_operand *o, const placed *p, int scalar, gd_scalar s, int ndim)
{
    memset(o, 0, sizeof *o);
    o->scalar = s;
    if (scalar) return;
    o->data = p->dev;
    memcpy(o->strides, p->strides, sizeof(int64_t) * (size_t)ndim);
}

static double value_of(const placed *p, const gd_operand *o, gd_dtype t, int64_t i)
{
    if (!o->data) return t == GD_INT64 ? (double)o->scalar.i : o->scalar.f;
    return gdt_getf(p->host, t, p->off[i]);
}

static int64_t ivalue_of(const placed *p, const gd_operand *o, int64_t i)
{
    return o->data ? ((const int64_t *)p->host)[p->off[i]] : o->scalar.i;
}

static gd_ewise ewise_for(const ewise_case *c, const gd_operand *a, const gd_operand *b, const placed *pa,
                          const placed *pb)
{
    gd_ewise ew;
    memset(&ew, 0, sizeof ew);
    ew.ndim = c->ndim;
    ew.size = case_size(c);
    memcpy(ew.shape, c->out, sizeof(int64_t) * (size_t)c->ndim);
    ew.contiguous = (!a->data || pa->full) && (!b || !b->data || pb->full);
    return ew;
}

/* Fills the output with a value no operation here produces (0x7f7f... in every dtype), so an
 * element the backend does not write cannot pass for the result of an earlier call. */
static void poison(void *out, int64_t n, gd_dtype t)
{
    size_t bytes = (size_t)n * gd_dtype_size(t);
    void *p = gdt_host_bytes(bytes);
    memset(p, 0x7f, bytes);
    gdt_upload(out, p, bytes);
    free(p);
}

/* After an in-place form the operand's device copy holds the result: put its values back. */
static void restore(placed *p, gd_dtype t) { gdt_upload(p->dev, p->host, (size_t)p->storage * gd_dtype_size(t)); }

static void run_unary(const unop_row *row, const ewise_case *c, gd_dtype t, placed *pa, void *out, int form)
{
    int64_t n = case_size(c);
    gd_operand a;
    operand_for(&a, pa, form == SCALAR_A, (gd_scalar){.f = 2.5}, c->ndim);
    if (form == SCALAR_A && t == GD_INT64) a.scalar.i = -5;
    gd_ewise ew = ewise_for(c, &a, NULL, pa, NULL);
    void *dst = form == OUT_IS_A ? pa->dev : out;
    if (dst == out) poison(out, n, t);
    void *want = gdt_ref_new(n, t);
    for (int64_t i = 0; i < n; i++) {
        if (t == GD_INT64)
            ((int64_t *)want)[i] = row->iref(ivalue_of(pa, &a, i));
        else
            ((double *)want)[i] = row->ref(value_of(pa, &a, t, i));
    }
    if (OK(gdt_be->unary(dst, row->op, t, &ew, &a, gdt_dev, &gdt_err))) {
        gdt_tol tol = {t == GD_FLOAT32 ? row->ulps_f32 : row->ulps_f64, 0, NULL};
        EXPECT(dst, t, n, want, tol, "unary %s %s %s, %s", row->name, gdt_dtype_name(t), c->name, form_names[form]);
    }
    if (form == OUT_IS_A) restore(pa, t);
    free(want);
}

static void run_binary(const binop_row *row, const ewise_case *c, gd_dtype t, placed *pa, placed *pb, void *out,
                       int form)
{
    int64_t n = case_size(c);
    gd_operand a, b;
    operand_for(&a, pa, form == SCALAR_A, scalar_for(t, 0, row), c->ndim);
    operand_for(&b, pb, form == SCALAR_B, scalar_for(t, 1, row), c->ndim);
    gd_ewise ew = ewise_for(c, &a, &b, pa, pb);
    void *dst = form == OUT_IS_A ? pa->dev : form == OUT_IS_B ? pb->dev : out;
    if (dst == out) poison(out, n, t);
    void *want = gdt_ref_new(n, t);
    for (int64_t i = 0; i < n; i++) {
        if (t == GD_INT64)
            ((int64_t *)want)[i] = row->iref(ivalue_of(pa, &a, i), ivalue_of(pb, &b, i));
        else
            ((double *)want)[i] = row->ref(value_of(pa, &a, t, i), value_of(pb, &b, t, i));
    }
    if (OK(gdt_be->binary(dst, row->op, t, &ew, &a, &b, gdt_dev, &gdt_err))) {
        gdt_tol tol = {t == GD_FLOAT32 ? row->ulps_f32 : row->ulps_f64, 0, NULL};
        EXPECT(dst, t, n, want, tol, "binary %s %s %s, %s", row->name, gdt_dtype_name(t), c->name, form_names[form]);
    }
    if (form == OUT_IS_A) restore(pa, t);
    if (form == OUT_IS_B) restore(pb, t);
    free(want);
}

/* int64 b as exponents 0..8: gpudev.h covers exponents >= 0 only (the value rows have large
 * ones) */
static void fill_exponents(placed *p)
{
    for (int64_t i = 0; i < p->storage; i++) ((int64_t *)p->host)[i] = i % 9;
    restore(p, GD_INT64);
}

/* ------------------------------------------------------------------------------------------
 * the section
 * ---------------------------------------------------------------------------------------- */

static void check_case(const ewise_case *c, gd_dtype t)
{
    int64_t n = case_size(c);
    void *out = gdt_alloc((size_t)n * gd_dtype_size(t));
    placed pa, pb;
    place(&pa, &c->a, c, t);
    place(&pb, &c->b, c, t);
    for (int u = 0; u < NUM_UNOPS; u++) {
        if (t == GD_INT64 && !unops[u].iref) continue;
        run_unary(&unops[u], c, t, &pa, out, ARRAYS);
        run_unary(&unops[u], c, t, &pa, out, SCALAR_A);
        if (pa.full) run_unary(&unops[u], c, t, &pa, out, OUT_IS_A);
    }
    for (int o = 0; o < NUM_BINOPS; o++) {
        const binop_row *row = &binops[o];
        if (t == GD_INT64 && !row->iref) continue;
        if (t == GD_INT64 && row->exponent_b) fill_exponents(&pb);
        for (int form = ARRAYS; form < NUM_FORMS; form++) {
            if ((form == OUT_IS_A && !pa.full) || (form == OUT_IS_B && !pb.full)) continue;
            run_binary(row, c, t, &pa, &pb, out, form);
        }
        if (t == GD_INT64 && row->exponent_b) {
            gdt_fill_edge(pb.host, t, pb.storage);
            restore(&pb, t);
        }
    }
    unplace(&pa, t);
    unplace(&pb, t);
    gdt_free(out, (size_t)n * gd_dtype_size(t));
}

/* a += a and a = a * a: both operands and the output are one buffer */
static void check_self_alias(gd_dtype t)
{
    const ewise_case *c = &cases[NUM_CASES - 1]; /* past the parallel thresholds */
    int64_t n = case_size(c);
    placed pa;
    place(&pa, &c->a, c, t);
    for (int o = 0; o < NUM_BINOPS; o++) {
        const binop_row *row = &binops[o];
        if (row->op != GD_ADD && row->op != GD_MUL) continue;
        gd_operand a;
        operand_for(&a, &pa, 0, scalar_for(t, 0, row), c->ndim);
        gd_ewise ew = ewise_for(c, &a, &a, &pa, &pa);
        void *want = gdt_ref_new(n, t);
        for (int64_t i = 0; i < n; i++) {
            if (t == GD_INT64)
                ((int64_t *)want)[i] = row->iref(((int64_t *)pa.host)[i], ((int64_t *)pa.host)[i]);
            else
                ((double *)want)[i] = row->ref(gdt_getf(pa.host, t, i), gdt_getf(pa.host, t, i));
        }
        if (OK(gdt_be->binary(pa.dev, row->op, t, &ew, &a, &a, gdt_dev, &gdt_err)))
            EXPECT(pa.dev, t, n, want, GDT_EXACT, "binary %s %s %s, out is a is b", row->name, gdt_dtype_name(t),
                   c->name);
        restore(&pa, t);
        free(want);
    }
    unplace(&pa, t);
}

void gdt_check_elementwise(void)
{
    for (int dt = 0; dt < GD_NUM_DTYPES; dt++) {
        for (int ci = 0; ci < NUM_CASES; ci++) check_case(&cases[ci], (gd_dtype)dt);
        check_self_alias((gd_dtype)dt);
    }
}
