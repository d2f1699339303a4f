/* conformance_elementwise.c - the unary and binary entries: every operation in unops[] and
 * binops[] x every dtype it is defined for (tables.h) x every layout in cases[] (odd sizes, broadcast
 * strides, transposed, sliced and reversed operands, 0-d results, sizes past the parallel
 * thresholds), each with array operands, with scalar operands, writing in place (out is an
 * operand, with its strides) and writing into a strided output (a transposed, stepped view
 * whose gaps must stay untouched); and axpby, the fused update of a contiguous array.
 */
#include "conformance.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------
 * references: float64 for float dtypes (the float32 inputs are exact in double) and for
 * bools (0 and 1), exact wrapping arithmetic for int64 (done in uint64, where overflow is
 * defined); comparisons give 0 or 1
 * ---------------------------------------------------------------------------------------- */

#define WRAP(expr) ((int64_t)(uint64_t)(expr))

static double ref_copy(double x) { return x; }
static double ref_neg(double x) { return -x; }
static double ref_relu(double x) { return x > 0 || isnan(x) ? x : 0.0; }
static double ref_square(double x) { return x * x; }
/* IEEE's correctly rounded square root: a direct call, which GCC and clang compile to the
 * instruction (sqrtsd). Through a pointer to the C library's sqrt it would be mingw-w64's,
 * which takes the x87's fsqrt and, where the x87 rounds to 64 bits (the main thread), rounds
 * twice: 1 ulp off, against a tolerance of 0. */
static double ref_sqrt(double x) { return sqrt(x); }
static int64_t iref_copy(int64_t x) { return x; }
static int64_t iref_neg(int64_t x) { return WRAP(0 - (uint64_t)x); }
static int64_t iref_abs(int64_t x) { return x < 0 ? WRAP(0 - (uint64_t)x) : x; }
static int64_t iref_relu(int64_t x) { return x > 0 ? x : 0; }
static int64_t iref_square(int64_t x) { return WRAP((uint64_t)x * (uint64_t)x); }
static double ref_not(double x) { return x == 0.0; } /* ~ of a bool */
static int64_t iref_invert(int64_t x) { return ~x; }

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
static double ref_eq(double x, double y) { return x == y; }
static double ref_ne(double x, double y) { return x != y; }
static double ref_lt(double x, double y) { return x < y; }
static double ref_le(double x, double y) { return x <= y; }
static double ref_gt(double x, double y) { return x > y; }
static double ref_ge(double x, double y) { return x >= y; }
static int64_t iref_eq(int64_t x, int64_t y) { return x == y; }
static int64_t iref_ne(int64_t x, int64_t y) { return x != y; }
static int64_t iref_lt(int64_t x, int64_t y) { return x < y; }
static int64_t iref_le(int64_t x, int64_t y) { return x <= y; }
static int64_t iref_gt(int64_t x, int64_t y) { return x > y; }
static int64_t iref_ge(int64_t x, int64_t y) { return x >= y; }
/* bitwise: on bools (0 and 1) the logical operations */
static double ref_and(double x, double y) { return (double)((int)x & (int)y); }
static double ref_or(double x, double y) { return (double)((int)x | (int)y); }
static double ref_xor(double x, double y) { return (double)((int)x ^ (int)y); }
static int64_t iref_and(int64_t x, int64_t y) { return x & y; }
static int64_t iref_or(int64_t x, int64_t y) { return x | y; }
static int64_t iref_xor(int64_t x, int64_t y) { return x ^ y; }
static double ref_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
/* NumPy's floor division and remainder written from their definition (Python's rule: the
 * remainder takes the divisor's sign; zeros the signs NumPy gives them), apart from the
 * backends' ewise_math.h; integers through 128 bits, so INT64_MIN // -1 needs no care. */
static double ref_floor_div(double x, double y)
{
    if (y == 0) return x / y;
    double r = fmod(x, y), q = (x - r) / y;
    if (r != 0 && (r < 0) != (y < 0)) q -= 1;
    return q == 0 ? copysign(0.0, x / y) : round(q);
}
static double ref_mod(double x, double y)
{
    double r = fmod(x, y);
    if (y == 0) return r;
    if (r != 0 && (r < 0) != (y < 0)) r += y;
    return r == 0 ? copysign(0.0, y) : r;
}
static int64_t iref_floor_div(int64_t x, int64_t y)
{
    if (y == 0) return 0;
    if (y == -1) return WRAP(0 - (uint64_t)x); /* INT64_MIN / -1 wraps, as in NumPy */
    int64_t q = x / y;                           /* |q * y| <= |x|: no overflow below */
    if (q * y != x && (x < 0) != (y < 0)) q -= 1;
    return q;
}
static int64_t iref_mod(int64_t x, int64_t y)
{
    return y == 0 ? 0 : WRAP((uint64_t)x - (uint64_t)iref_floor_div(x, y) * (uint64_t)y);
}
/* the array API standard's functions: the C library's double functions are the references */
static double ref_sign(double x) { return isnan(x) ? x : (double)((x > 0) - (x < 0)); }
static int64_t iref_sign(int64_t x) { return (x > 0) - (x < 0); }
static int64_t iref_rounded(int64_t x) { return x; } /* ceil, floor, trunc, round of an integer */
static double ref_logaddexp(double x, double y)
{
    if (isnan(x) || isnan(y)) return NAN;
    if (x == y) return x + log(2.0);
    double hi = x > y ? x : y, lo = x > y ? y : x;
    return hi + log1p(exp(lo - hi));
}
/* sigmoid's backward (1 - y) * y * g, rounded at each step as the three operations it fuses:
 * in double for float64, in float for float32 (its ref_f32), so 0 ulps in both */
static double ref_sigmoid_grad(double y, double g) { return (1.0 - y) * y * g; }
static double ref_sigmoid_grad_f32(double y, double g)
{
    const float yf = (float)y, d = 1.0f - yf, dy = d * yf;
    return (double)(dy * (float)g);
}
/* float32's neighbour, not float64's (the float32 operands are exact in float) */
static double ref_nextafter_f32(double x, double y) { return nextafterf((float)x, (float)y); }
/* NumPy's shifts: a count outside [0, 64) shifts every bit out */
static int64_t iref_shl(int64_t x, int64_t n) { return n < 0 || n >= 64 ? 0 : WRAP((uint64_t)x << n); }
static int64_t iref_shr(int64_t x, int64_t n)
{
    if (n < 0 || n >= 64) return x < 0 ? -1 : 0;
    return (int64_t)floorl((long double)x / powl(2.0L, (long double)n)); /* the arithmetic shift */
}
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
    const char *name;         /* tables.h's */
    double (*ref)(double);    /* float dtypes and bool */
    int64_t (*iref)(int64_t); /* int64 */
    double ulps_f32, ulps_f64;
} unop_row;

/* One row per operation of tables.h's op lists, at its enum value: an operation without a row
 * (a gap left zero) fails check_rows, a row too many the static assertion. */
#define UNOP(E, ref, iref, u32, u64) [GD_##E] = {GD_##E, #E, ref, iref, u32, u64}
static const unop_row unops[] = {
    UNOP(COPY, ref_copy, iref_copy, 0, 0),
    UNOP(NEG, ref_neg, iref_neg, 0, 0),
    UNOP(ABS, fabs, iref_abs, 0, 0),
    UNOP(RELU, ref_relu, iref_relu, 0, 0),
    UNOP(EXP, exp, NULL, 3, 2),
    UNOP(LOG, log, NULL, 2, 2),
    UNOP(SQRT, ref_sqrt, NULL, 0, 0),
    UNOP(TANH, tanh, NULL, 3, 2),
    UNOP(SQUARE, ref_square, iref_square, 0, 0),
    UNOP(INVERT, ref_not, iref_invert, 0, 0),
    UNOP(SIGMOID, ref_sigmoid, NULL, 4, 3),
    UNOP(ACOS, acos, NULL, 3, 3),
    UNOP(ACOSH, acosh, NULL, 1, 4), /* float32: gpudev's own, in float64 (ewise_math.h) */
    UNOP(ASIN, asin, NULL, 3, 3),
    UNOP(ASINH, asinh, NULL, 4, 4),
    UNOP(ATAN, atan, NULL, 3, 3),
    UNOP(ATANH, atanh, NULL, 4, 3),
    UNOP(COS, cos, NULL, 3, 3),
    UNOP(COSH, cosh, NULL, 3, 3),
    UNOP(SIN, sin, NULL, 3, 3),
    UNOP(SINH, sinh, NULL, 4, 3),
    UNOP(TAN, tan, NULL, 5, 3),
    UNOP(LOG1P, log1p, NULL, 2, 2),
    UNOP(EXPM1, expm1, NULL, 2, 2),
    UNOP(LOG2, log2, NULL, 2, 2),
    UNOP(LOG10, log10, NULL, 3, 2),
    UNOP(CEIL, ceil, iref_rounded, 0, 0),
    UNOP(FLOOR, floor, iref_rounded, 0, 0),
    UNOP(TRUNC, trunc, iref_rounded, 0, 0),
    UNOP(ROUND, rint, iref_rounded, 0, 0),
    UNOP(SIGN, ref_sign, iref_sign, 0, 0),
    UNOP(EXP2, exp2, NULL, 3, 2),
};
GD_STATIC_ASSERT(GD_COUNT_OF(unops) == GD_NUM_UNOPS, "unops[]: one row per gd_unop");

typedef struct binop_row {
    gd_binop op;
    const char *name;
    double (*ref)(double, double);     /* float dtypes and bool */
    int64_t (*iref)(int64_t, int64_t); /* int64 */
    double ulps_f32, ulps_f64;
    int exponent_b; /* int64 b holds exponents 0..8 (negative ones are outside the contract) */
} binop_row;

#define BINOP(E, ref, iref, u32, u64, exponent_b) [GD_##E] = {GD_##E, #E, ref, iref, u32, u64, exponent_b}
static const binop_row binops[] = {
    BINOP(ADD, ref_add, iref_add, 0, 0, 0),
    BINOP(SUB, ref_sub, iref_sub, 0, 0, 0),
    BINOP(MUL, ref_mul, iref_mul, 0, 0, 0),
    BINOP(DIV, ref_div, NULL, 0, 0, 0),
    BINOP(POW, pow, iref_pow, 5, 3, 1),
    BINOP(MAXIMUM, ref_maximum, iref_maximum, 0, 0, 0),
    BINOP(MINIMUM, ref_minimum, iref_minimum, 0, 0, 0),
    BINOP(EQ, ref_eq, iref_eq, 0, 0, 0),
    BINOP(NE, ref_ne, iref_ne, 0, 0, 0),
    BINOP(LT, ref_lt, iref_lt, 0, 0, 0),
    BINOP(LE, ref_le, iref_le, 0, 0, 0),
    BINOP(GT, ref_gt, iref_gt, 0, 0, 0),
    BINOP(GE, ref_ge, iref_ge, 0, 0, 0),
    BINOP(AND, ref_and, iref_and, 0, 0, 0),
    BINOP(OR, ref_or, iref_or, 0, 0, 0),
    BINOP(XOR, ref_xor, iref_xor, 0, 0, 0),
    BINOP(FLOOR_DIV, ref_floor_div, iref_floor_div, 0, 0, 0),
    BINOP(MOD, ref_mod, iref_mod, 1, 0, 0),
    BINOP(HYPOT, hypot, NULL, 4, 3, 0),
    BINOP(ATAN2, atan2, NULL, 4, 3, 0),
    BINOP(COPYSIGN, copysign, NULL, 0, 0, 0),
    BINOP(NEXTAFTER, nextafter, NULL, 0, 0, 0), /* float32: binop_extras */
    BINOP(LOGADDEXP, ref_logaddexp, NULL, 3, 2, 0),
    BINOP(SHL, NULL, iref_shl, 0, 0, 0),
    BINOP(SHR, NULL, iref_shr, 0, 0, 0),
    BINOP(SIGMOID_GRAD, ref_sigmoid_grad, NULL, 0, 0, 0), /* float32: binop_extras */
};
GD_STATIC_ASSERT(GD_COUNT_OF(binops) == GD_NUM_BINOPS, "binops[]: one row per gd_binop");

/* What a few rows need beyond ulps of a float64 reference. */
typedef struct binop_extra {
    gd_binop op;
    double abs_f32, abs_f64;           /* absolute tolerances, added to the ulps */
    double (*ref_f32)(double, double); /* float32's own reference, where float64's differs */
} binop_extra;

static const binop_extra binop_extras[] = {
    {GD_NEXTAFTER, 0, 0, ref_nextafter_f32},
    {GD_SIGMOID_GRAD, 0, 0, ref_sigmoid_grad_f32},
    /* x + log1p(exp(y - x)) cancels where the result is near 0: its error is a few ulps of the
     * operands (|x| < 40 here), not of the result */
    {GD_LOGADDEXP, 2e-5, 4e-14, NULL},
};

static const binop_extra *extra_of(gd_binop op)
{
    static const binop_extra none = {GD_ADD, 0, 0, NULL};
    for (size_t k = 0; k < GD_COUNT_OF(binop_extras); k++)
        if (binop_extras[k].op == op) return &binop_extras[k];
    return &none;
}

#define NUM_UNOPS ((int)GD_COUNT_OF(unops))
#define NUM_BINOPS ((int)GD_COUNT_OF(binops))

/* Every row present and at its place, with the references its dtypes need: a float reference
 * where the op takes floats, an int64 one where it takes int64 (the shifts take only int64). */
static void check_rows(void)
{
    for (int u = 0; u < NUM_UNOPS; u++)
        CHECK(unops[u].name && (int)unops[u].op == u && unops[u].ref &&
                  (unops[u].iref || !gd_unop_defined((gd_unop)u, GD_INT64)),
              "unops[]: no complete row for %s (GD_%s): add one with its reference", gd_unop_table[u].name,
              gd_unop_table[u].id);
    for (int o = 0; o < NUM_BINOPS; o++)
        CHECK(binops[o].name && (int)binops[o].op == o &&
                  (binops[o].ref || !gd_binop_defined((gd_binop)o, GD_FLOAT64)) &&
                  (binops[o].iref || !gd_binop_defined((gd_binop)o, GD_INT64)),
              "binops[]: no complete row for %s (GD_%s): add one with its reference", gd_binop_table[o].name,
              gd_binop_table[o].id);
}

/* ------------------------------------------------------------------------------------------
 * the layouts
 * ---------------------------------------------------------------------------------------- */

/* How an operand is stored: its extent along each output axis (1 on a broadcast axis), the
 * order of its axes in memory, a step between neighbours along its innermost memory axis (a
 * sliced view such as x[:, ::2]), and whether output axis 0 runs backwards through memory (a
 * view such as x[::-1], with a negative stride). */
typedef struct layout {
    int64_t shape[4];
    int reversed; /* axes reversed in memory: a transposed view */
    int step;     /* 0 or 1: adjacent */
    int flip;
} layout;

typedef struct ewise_case {
    const char *name;
    int ndim;
    int64_t out[4];
    layout a, b;
} ewise_case;

#define PLAIN(...) {{__VA_ARGS__}, 0, 0, 0}

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
    {"(5,7).T (7,5)", 2, {7, 5}, {{7, 5}, 1, 0, 0}, PLAIN(7, 5)},
    {"(72,146)[:, ::2] (73,72).T", 2, {72, 73}, {{72, 73}, 0, 2, 0}, {{72, 73}, 1, 0, 0}},
    {"(9)[::-1] (9)[::-2]", 1, {9}, {{9}, 0, 0, 1}, {{9}, 0, 2, 1}},
    {"(6,7)[::-1] (7,6).T[::-1]", 2, {6, 7}, {{6, 7}, 0, 0, 1}, {{6, 7}, 1, 0, 1}},
    {"(130,140).T (130,140)", 2, {140, 130}, {{140, 130}, 1, 0, 0}, PLAIN(140, 130)},
    {"(72,73,74)", 3, {72, 73, 74}, PLAIN(72, 73, 74), PLAIN(72, 73, 74)},
    {"(72,1,74) (1,73,1)", 3, {72, 73, 74}, PLAIN(72, 1, 74), PLAIN(1, 73, 1)},
    {"(9,73,74) (9,73,1)", 3, {9, 73, 74}, PLAIN(9, 73, 74), PLAIN(9, 73, 1)},
    {"(5,70,66).T[::-1] (66,70,5)", 3, {66, 70, 5}, {{66, 70, 5}, 1, 0, 1}, PLAIN(66, 70, 5)},
    {"(130,1031) (1,1031)", 2, {130, 1031}, PLAIN(130, 1031), PLAIN(1, 1031)},
    {"(300001)", 1, {300001}, PLAIN(300001), PLAIN(300001)},
};

/* Where strided outputs go: transposed, with a step, axis 0 backwards. */
static const layout strided_out = {{0}, 1, 2, 1};

#define NUM_CASES ((int)(sizeof cases / sizeof cases[0]))

/* An operand (or an output) placed in memory: its strides per output axis and its buffers. */
typedef struct placed {
    int64_t strides[GD_MAX_NDIM];
    int64_t storage;  /* elements in its buffer */
    int64_t base;     /* the element of output index 0 (> 0 when an axis runs backwards) */
    int full;         /* stored exactly like the output: C order, no broadcast, no gaps */
    int writable;     /* no element repeats: an output may be laid out like it */
    int64_t *off;     /* where the element for output index i is, for the references */
    void *host, *dev; /* the buffer, host and device copies */
} placed;

static int64_t case_size(const ewise_case *c)
{
    int64_t n = 1;
    for (int k = 0; k < c->ndim; k++) n *= c->out[k];
    return n;
}

static void *at_base(const placed *p, gd_dtype t) { return (char *)p->dev + p->base * (int64_t)gd_dtype_size(t); }

/* shape: the layout's extents (NULL: the output's) */
static void place(placed *p, const layout *l, const ewise_case *c, gd_dtype t)
{
    memset(p, 0, sizeof *p);
    const int64_t *shape = l->shape[0] || c->ndim == 0 ? l->shape : c->out;
    int64_t run = 1;
    p->full = !l->reversed && l->step <= 1 && !(l->flip && c->out[0] > 1);
    p->writable = 1;
    for (int j = 0; j < c->ndim; j++) {
        int k = l->reversed ? j : c->ndim - 1 - j; /* memory order, innermost first */
        int64_t step = j == 0 && l->step > 1 ? l->step : 1;
        p->strides[k] = shape[k] == 1 && c->out[k] != 1 ? 0 : run * step;
        if (shape[k] != c->out[k]) p->full = p->writable = 0;
        run *= shape[k] * step;
    }
    if (l->flip && c->ndim > 0 && c->out[0] > 1 && p->strides[0] != 0) {
        p->base = p->strides[0] * (c->out[0] - 1);
        p->strides[0] = -p->strides[0];
    }
    p->storage = run;
    p->host = gdt_host(run, t);
    gdt_fill_edge(p->host, t, run);
    p->dev = gdt_upload_new(p->host, (size_t)run * gd_dtype_size(t));
    int64_t n = case_size(c);
    p->off = gdt_host(n, GD_INT64);
    for (int64_t i = 0; i < n; i++) {
        int64_t flat = i, off = p->base;
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

enum { ARRAYS, SCALAR_A, SCALAR_B, OUT_IS_A, OUT_IS_B, STRIDED_OUT, NUM_FORMS };
static const char *const form_names[] = {"arrays", "scalar a", "scalar b", "out is a", "out is b", "strided out"};

/* Scalars: -1.5 and 0.75 (pow: 2, which a backend may turn into a square); integers -3 and 7
 * (pow: 5). */
static gd_scalar scalar_for(gd_dtype t, int is_b, const binop_row *row)
{
    gd_scalar s;
    if (t == GD_BOOL)
        s.i = !is_b;
    else if (gdt_is_int(t))
        s.i = is_b ? (row && row->op == GD_POW ? 5 : 7) : -3;
    else
        s.f = is_b ? (row && row->op == GD_POW ? 2.0 : 0.75) : -1.5;
    return s;
}

static void operand_for(gd_operand *o, const placed *p, int scalar, gd_scalar s, int ndim, gd_dtype t)
{
    memset(o, 0, sizeof *o);
    o->scalar = s;
    if (scalar) return;
    o->data = at_base(p, t);
    memcpy(o->strides, p->strides, sizeof(int64_t) * (size_t)ndim);
}

static double value_of(const placed *p, const gd_operand *o, gd_dtype t, int64_t i)
{
    if (!o->data) return gdt_is_int(t) || t == GD_BOOL ? (double)o->scalar.i : o->scalar.f;
    return gdt_getf(p->host, t, p->off[i]);
}

static int64_t ivalue_of(const placed *p, const gd_operand *o, gd_dtype t, int64_t i)
{
    return o->data ? gdt_geti(p->host, t, p->off[i]) : o->scalar.i;
}

/* Fills a buffer with a value no operation here produces (0x7f7f... in every dtype), so an
 * element the backend does not write cannot pass for the result of an earlier call. */
static void poison(placed *p, gd_dtype t)
{
    memset(p->host, 0x7f, (size_t)p->storage * gd_dtype_size(t));
    gdt_upload(p->dev, p->host, (size_t)p->storage * gd_dtype_size(t));
}

/* The output of a call in `form`: a C-contiguous buffer, an operand itself, or a strided view. */
static placed *dest_for(int form, placed *pa, placed *pb, placed *out, placed *strided, gd_dtype t)
{
    placed *d = form == OUT_IS_A ? pa : form == OUT_IS_B ? pb : form == STRIDED_OUT ? strided : out;
    if (d == out || d == strided) poison(d, t);
    return d;
}

static gd_ewise ewise_for(const ewise_case *c, const gd_operand *a, const gd_operand *b, const placed *pa,
                          const placed *pb, const placed *dst)
{
    gd_ewise ew;
    memset(&ew, 0, sizeof ew);
    ew.ndim = c->ndim;
    ew.size = case_size(c);
    memcpy(ew.shape, c->out, sizeof(int64_t) * (size_t)c->ndim);
    memcpy(ew.out_strides, dst->strides, sizeof(int64_t) * (size_t)c->ndim);
    ew.contiguous = dst->full && (!a->data || pa->full) && (!b || !b->data || pb->full);
    return ew;
}

/* The whole destination buffer must hold what it held before (`before`, host) except at the
 * output's elements, which must match want: one check. */
static void expect_dest(const placed *d, const void *before, gd_dtype t, int64_t n, const void *want, gdt_tol tol,
                        const char *what, const char *name, const ewise_case *c, int form)
{
    void *full = gdt_ref_new(d->storage, t);
    for (int64_t j = 0; j < d->storage; j++) {
        if (gdt_is_int(t)) ((int64_t *)full)[j] = gdt_geti(before, t, j);
        else ((double *)full)[j] = gdt_getf(before, t, j);
    }
    for (int64_t i = 0; i < n; i++) {
        if (gdt_is_int(t)) ((int64_t *)full)[d->off[i]] = ((const int64_t *)want)[i];
        else ((double *)full)[d->off[i]] = ((const double *)want)[i];
    }
    EXPECT(d->dev, t, d->storage, full, tol, "%s %s %s %s, %s", what, name, gdt_dtype_name(t), c->name,
           form_names[form]);
    free(full);
}

/* After a call the destination's device copy holds the result: put its values back. */
static void restore(placed *p, gd_dtype t) { gdt_upload(p->dev, p->host, (size_t)p->storage * gd_dtype_size(t)); }

/* A copy of the destination's host buffer as it was before the call. */
static void *snapshot(const placed *d, gd_dtype t)
{
    void *b = gdt_host(d->storage, t);
    memcpy(b, d->host, (size_t)d->storage * gd_dtype_size(t));
    return b;
}

static void run_unary(const unop_row *row, const ewise_case *c, gd_dtype t, placed *pa, placed *out, placed *strided,
                      int form)
{
    int64_t n = case_size(c);
    gd_operand a;
    operand_for(&a, pa, form == SCALAR_A, (gd_scalar){.f = 2.5}, c->ndim, t);
    if (form == SCALAR_A && gdt_is_int(t)) a.scalar.i = -5;
    if (form == SCALAR_A && t == GD_BOOL) a.scalar.i = 1;
    placed *dst = dest_for(form, pa, NULL, out, strided, t);
    gd_ewise ew = ewise_for(c, &a, NULL, pa, NULL, dst);
    void *before = snapshot(dst, t);
    void *want = gdt_ref_new(n, t);
    for (int64_t i = 0; i < n; i++) {
        if (gdt_is_int(t)) /* int32: the int64 result's low bits, as its wrapping gives them */
            ((int64_t *)want)[i] = gdt_wrap(t, row->iref(ivalue_of(pa, &a, t, i)));
        else
            ((double *)want)[i] = row->ref(value_of(pa, &a, t, i));
    }
    if (OK(gdt_be->unary(at_base(dst, t), row->op, t, &ew, &a, gdt_dev, &gdt_err))) {
        gdt_tol tol = {t == GD_FLOAT32 ? row->ulps_f32 : row->ulps_f64, 0, NULL};
        expect_dest(dst, before, t, n, want, tol, "unary", row->name, c, form);
    }
    if (dst == pa) restore(pa, t);
    free(want);
    free(before);
}

/* out and strided are in the result's dtype ot: t, or bool for comparisons */
static void run_binary(const binop_row *row, const ewise_case *c, gd_dtype t, gd_dtype ot, placed *pa, placed *pb,
                       placed *out, placed *strided, int form)
{
    int64_t n = case_size(c);
    gd_operand a, b;
    operand_for(&a, pa, form == SCALAR_A, scalar_for(t, 0, row), c->ndim, t);
    operand_for(&b, pb, form == SCALAR_B, scalar_for(t, 1, row), c->ndim, t);
    placed *dst = dest_for(form, pa, pb, out, strided, ot);
    gd_ewise ew = ewise_for(c, &a, &b, pa, pb, dst);
    void *before = snapshot(dst, ot);
    void *want = gdt_ref_new(n, ot);
    const binop_extra *extra = extra_of(row->op);
    double (*ref)(double, double) = t == GD_FLOAT32 && extra->ref_f32 ? extra->ref_f32 : row->ref;
    for (int64_t i = 0; i < n; i++) {
        if (gdt_is_int(t) && ot == t)
            ((int64_t *)want)[i] = gdt_wrap(t, row->iref(ivalue_of(pa, &a, t, i), ivalue_of(pb, &b, t, i)));
        else if (gdt_is_int(t))
            ((double *)want)[i] = (double)row->iref(ivalue_of(pa, &a, t, i), ivalue_of(pb, &b, t, i));
        else
            ((double *)want)[i] = ref(value_of(pa, &a, t, i), value_of(pb, &b, t, i));
    }
    if (OK(gdt_be->binary(at_base(dst, ot), row->op, t, &ew, &a, &b, gdt_dev, &gdt_err))) {
        gdt_tol tol = {t == GD_FLOAT32 ? row->ulps_f32 : row->ulps_f64,
                       t == GD_FLOAT32 ? extra->abs_f32 : extra->abs_f64, NULL};
        expect_dest(dst, before, ot, n, want, tol, "binary", row->name, c, form);
    }
    if (dst == pa || dst == pb) restore(dst, t);
    free(want);
    free(before);
}

/* integer b as exponents 0..8: gpudev.h covers exponents >= 0 only (the value rows have large
 * ones) */
static void fill_exponents(placed *p, gd_dtype t)
{
    for (int64_t i = 0; i < p->storage; i++) gdt_put(p->host, t, i, 0, i % 9);
    restore(p, t);
}

/* ------------------------------------------------------------------------------------------
 * the section
 * ---------------------------------------------------------------------------------------- */

/* Whether `form` applies: in place needs an operand without repeated elements. */
static int form_applies(int form, const placed *pa, const placed *pb)
{
    return !((form == OUT_IS_A && !pa->writable) || (form == OUT_IS_B && !pb->writable));
}

static void check_case(const ewise_case *c, gd_dtype t)
{
    const layout plain = PLAIN(0);
    placed pa, pb, out, strided, bout, bstrided; /* bout, bstrided: bool results */
    place(&pa, &c->a, c, t);
    place(&pb, &c->b, c, t);
    place(&out, &plain, c, t);
    place(&strided, &strided_out, c, t);
    place(&bout, &plain, c, GD_BOOL);
    place(&bstrided, &strided_out, c, GD_BOOL);
    for (int u = 0; u < NUM_UNOPS; u++) {
        if (!unops[u].name || !gd_unop_defined(unops[u].op, t)) continue; /* check_rows reports a gap */
        for (int form = ARRAYS; form < NUM_FORMS; form++)
            if (form != SCALAR_B && form != OUT_IS_B && form_applies(form, &pa, &pb))
                run_unary(&unops[u], c, t, &pa, &out, &strided, form);
    }
    for (int o = 0; o < NUM_BINOPS; o++) {
        const binop_row *row = &binops[o];
        if (!row->name || !gd_binop_defined(row->op, t)) continue;
        const gd_dtype ot = gd_binop_has(row->op, GD_OP_BOOL_OUT) ? GD_BOOL : t;
        if (gdt_is_int(t) && row->exponent_b) fill_exponents(&pb, t);
        for (int form = ARRAYS; form < NUM_FORMS; form++)
            if (form_applies(form, &pa, &pb) && (ot == t || (form != OUT_IS_A && form != OUT_IS_B)))
                run_binary(row, c, t, ot, &pa, &pb, ot == t ? &out : &bout, ot == t ? &strided : &bstrided, form);
        if (gdt_is_int(t) && row->exponent_b) {
            gdt_fill_edge(pb.host, t, pb.storage);
            restore(&pb, t);
        }
    }
    unplace(&pa, t);
    unplace(&pb, t);
    unplace(&out, t);
    unplace(&strided, t);
    unplace(&bout, GD_BOOL);
    unplace(&bstrided, GD_BOOL);
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
        if (!row->name || (row->op != GD_ADD && row->op != GD_MUL && row->op != GD_OR) || !gd_binop_defined(row->op, t))
            continue;
        gd_operand a;
        operand_for(&a, &pa, 0, scalar_for(t, 0, row), c->ndim, t);
        gd_ewise ew = ewise_for(c, &a, &a, &pa, &pa, &pa);
        void *want = gdt_ref_new(n, t);
        for (int64_t i = 0; i < n; i++) {
            if (gdt_is_int(t))
                ((int64_t *)want)[i] = gdt_wrap(t, row->iref(gdt_geti(pa.host, t, i), gdt_geti(pa.host, t, i)));
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
    check_rows();
    for (int dt = 0; dt < GD_NUM_DTYPES; dt++) {
        for (int ci = 0; ci < NUM_CASES; ci++) check_case(&cases[ci], (gd_dtype)dt);
        check_self_alias((gd_dtype)dt);
    }
}

/* A sample for slow runs (the Windows build under Wine, where the whole section takes 100 s):
 * every operation and dtype on a small broadcast and on a transposed operand of 18200
 * elements, enough for the costly operations to be split over the threads (whose floating-point
 * state a platform may set apart from the main thread's). */
void gdt_check_elementwise_sample(void)
{
    static const char *const sample[] = {"(7,1) (1,5)", "(130,140).T (130,140)"};
    const int wanted = (int)(sizeof sample / sizeof sample[0]);
    int found = 0;
    for (int ci = 0; ci < NUM_CASES; ci++)
        for (int k = 0; k < wanted; k++)
            if (strcmp(cases[ci].name, sample[k]) == 0) {
                found++;
                for (int dt = 0; dt < GD_NUM_DTYPES; dt++) check_case(&cases[ci], (gd_dtype)dt);
            }
    CHECK(found == wanted, "the sample's %d layouts are rows of cases[]: %d found", wanted, found);
}

/* ------------------------------------------------------------------------------------------
 * axpby: y = beta * y + alpha * x in place, float32 and float64, exact against the two
 * roundings written out (each product, then the sum; no fused multiply-add), with edge values
 * (NaN, infinities, zeros), sizes past the CPU's parallel threshold, x equal to y, n = 0, and
 * the refusal of other dtypes
 * ---------------------------------------------------------------------------------------- */

static double axpby_ref(gd_dtype t, double y, double x, double beta, double alpha)
{
    if (t == GD_FLOAT32) {
        const float b = (float)beta, a = (float)alpha, py = b * (float)y, px = a * (float)x;
        return (double)(py + px);
    }
    return beta * y + alpha * x;
}

static void check_axpby_case(gd_dtype t, int64_t n, double beta, double alpha, int same)
{
    const size_t bytes = (size_t)n * gd_dtype_size(t);
    void *hy = gdt_host(n, t), *hx = gdt_host(n, t);
    gdt_fill_edge(hy, t, n);
    gdt_fill_normal(hx, t, n, 3.0);
    void *want = gdt_ref_new(n, t);
    for (int64_t i = 0; i < n; i++) {
        const double y = gdt_getf(hy, t, i), x = same ? y : gdt_getf(hx, t, i);
        ((double *)want)[i] = axpby_ref(t, y, x, beta, alpha);
    }
    void *dy = gdt_upload_new(hy, bytes), *dx = same ? dy : gdt_upload_new(hx, bytes);
    if (OK(gdt_be->axpby(dy, t, (gd_scalar){.f = beta}, dx, (gd_scalar){.f = alpha}, n, gdt_dev, &gdt_err)))
        EXPECT(dy, t, n, want, GDT_EXACT, "axpby %s n %lld, beta %g, alpha %g%s", gdt_dtype_name(t), (long long)n,
               beta, alpha, same ? ", x is y" : "");
    if (!same) gdt_free(dx, bytes);
    gdt_free(dy, bytes);
    free(want);
    free(hy);
    free(hx);
}

void gdt_check_axpby(void)
{
    static const int64_t sizes[] = {1, 17, 4099, 70001, 300007};
    static const double factors[][2] = {{1.0, -0.1}, {0.9, 1.0}, {0.0, 0.5}, {-2.5, 3e-3}};
    for (int t = GD_FLOAT32; t <= GD_FLOAT64; t++) {
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
            for (size_t f = 0; f < sizeof factors / sizeof factors[0]; f++)
                check_axpby_case((gd_dtype)t, sizes[s], factors[f][0], factors[f][1], 0);
        check_axpby_case((gd_dtype)t, 70001, 0.9, 0.3, 1);
        OK(gdt_be->axpby(NULL, (gd_dtype)t, (gd_scalar){.f = 1}, NULL, (gd_scalar){.f = 1}, 0, gdt_dev, &gdt_err));
    }
    int64_t one = 1;
    void *d = gdt_upload_new(&one, sizeof one);
    gd_error err = {0};
    CHECK(gdt_be->axpby(d, GD_INT64, (gd_scalar){.f = 1}, d, (gd_scalar){.f = 1}, 1, gdt_dev, &err) == GD_ERR_VALUE &&
              strstr(err.message, "axpby"),
          "axpby of int64: '%s'", err.message);
    gdt_free(d, sizeof one);
}
