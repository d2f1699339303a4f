/* conformance_values.c - fixed inputs with their expected outputs written out: the special
 * cases of the elementwise entries (IEEE division by zero, NaN through maximum/minimum/relu,
 * the math functions' special values, int64 wrap-around and large exponents), and the calls
 * a backend refuses (GD_ERR_VALUE: the defensive checks of operations ops.c never sends).
 * The expected values do not come from the reference loops, so they check those too.
 */
#include "conformance.h"

#include <limits.h>
#include <math.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------
 * special values: four elements per row, run for float32 and float64 (every value here is
 * exact in both)
 * ---------------------------------------------------------------------------------------- */

enum { NO_SCALAR, SCALAR_A, SCALAR_B };

typedef struct float_row {
    int binary, op, scalar; /* scalar: which operand is the scalar a[0] / b[0] */
    double a[4], b[4], want[4];
} float_row;

static const float_row float_rows[] = {
    {1, GD_DIV, 0, {1, -1, 0, NAN}, {0, 0, 0, 1}, {INFINITY, -INFINITY, NAN, NAN}},
    {1, GD_SUB, 0, {INFINITY, INFINITY, 1, NAN}, {INFINITY, 1, 1, 0}, {NAN, INFINITY, 0, NAN}},
    {1, GD_MUL, 0, {0, INFINITY, -2, 3}, {INFINITY, -1, 4, NAN}, {NAN, -INFINITY, -8, NAN}},
    {1, GD_MAXIMUM, 0, {1, NAN, 2, -INFINITY}, {NAN, 3, NAN, -INFINITY}, {NAN, NAN, NAN, -INFINITY}},
    {1, GD_MINIMUM, 0, {1, NAN, 2, -INFINITY}, {NAN, 3, NAN, -INFINITY}, {NAN, NAN, NAN, -INFINITY}},
    {1, GD_MAXIMUM, 0, {1, 5, -3, INFINITY}, {2, 4, -3, 1}, {2, 5, -3, INFINITY}},
    {1, GD_MINIMUM, 0, {1, 5, -3, -INFINITY}, {2, 4, -3, 1}, {1, 4, -3, -INFINITY}},
    {1, GD_MAXIMUM, SCALAR_B, {1, -INFINITY, INFINITY, 0}, {NAN}, {NAN, NAN, NAN, NAN}},
    {1, GD_MINIMUM, SCALAR_A, {NAN}, {1, -INFINITY, INFINITY, 0}, {NAN, NAN, NAN, NAN}},
    {1, GD_POW, 0, {2, -2, 0, NAN}, {10, 3, 0, 0}, {1024, -8, 1, 1}},
    {1, GD_POW, 0, {1, 4, 0, -1}, {NAN, 0.5, -1, INFINITY}, {1, 2, INFINITY, 1}},
    {1, GD_POW, SCALAR_B, {-3, 0.5, NAN, INFINITY}, {2}, {9, 0.25, NAN, INFINITY}},
    {0, GD_RELU, 0, {1, -1, NAN, -INFINITY}, {0}, {1, 0, NAN, 0}},
    {0, GD_SQRT, 0, {-1, 0, INFINITY, 4}, {0}, {NAN, 0, INFINITY, 2}},
    {0, GD_LOG, 0, {0, -1, INFINITY, 1}, {0}, {-INFINITY, NAN, INFINITY, 0}},
    {0, GD_EXP, 0, {-INFINITY, INFINITY, NAN, 0}, {0}, {0, INFINITY, NAN, 1}},
    {0, GD_TANH, 0, {INFINITY, -INFINITY, NAN, 0}, {0}, {1, -1, NAN, 0}},
    {0, GD_ABS, 0, {-0.0, -INFINITY, NAN, -2.5}, {0}, {0, INFINITY, NAN, 2.5}},
    {0, GD_NEG, 0, {INFINITY, NAN, 0, -2.5}, {0}, {-INFINITY, NAN, 0, 2.5}},
    {0, GD_SQUARE, 0, {-3, INFINITY, NAN, 0.5}, {0}, {9, INFINITY, NAN, 0.25}},
    {0, GD_COPY, SCALAR_A, {NAN}, {0}, {NAN, NAN, NAN, NAN}},
    {0, GD_SIGMOID, 0, {-1e4, 1e4, -INFINITY, NAN}, {0}, {0, 1, 0, NAN}},
    {0, GD_SIGMOID, 0, {0, -0.0, INFINITY, 0}, {0}, {0.5, 0.5, 1, 0.5}},
    {1, GD_FLOOR_DIV, 0, {7, -7, 7, -7}, {2, 2, -2, -2}, {3, -4, -4, 3}},
    {1, GD_FLOOR_DIV, 0, {5, -1, 1, INFINITY}, {0, INFINITY, INFINITY, 2}, {INFINITY, -1, 0, NAN}},
    {1, GD_FLOOR_DIV, 0, {0, NAN, 0, 1}, {0, 1, NAN, -INFINITY}, {NAN, NAN, NAN, -1}},
    {1, GD_MOD, 0, {7, -7, 7, -7}, {2, 2, -2, -2}, {1, 1, -1, -1}},
    {1, GD_MOD, 0, {5, -1, 1, INFINITY}, {0, INFINITY, INFINITY, 2}, {NAN, INFINITY, 1, NAN}},
    {1, GD_MOD, SCALAR_B, {5.5, -5.5, NAN, -0.0}, {2.5}, {0.5, 2, NAN, 0}},
};

typedef struct int_row {
    int binary, op, scalar;
    int64_t a[4], b[4], want[4];
} int_row;

static const int_row int_rows[] = {
    {0, GD_ABS, 0, {INT64_MIN, INT64_MAX, 3, -2}, {0}, {INT64_MIN, INT64_MAX, 3, 2}},
    {0, GD_NEG, 0, {INT64_MIN, INT64_MAX, 0, -5}, {0}, {INT64_MIN, -INT64_MAX, 0, 5}},
    {0, GD_RELU, 0, {-5, 0, 5, INT64_MIN}, {0}, {0, 0, 5, 0}},
    {0, GD_SQUARE, 0, {(int64_t)1 << 32, INT64_MIN, -3, 3037000500}, {0}, {0, 0, 9, -9223372036709301616}},
    {0, GD_COPY, SCALAR_A, {INT64_MIN}, {0}, {INT64_MIN, INT64_MIN, INT64_MIN, INT64_MIN}},
    {1, GD_ADD, 0, {INT64_MIN, INT64_MAX, 3, -2}, {-1, 1, 40, 63}, {INT64_MAX, INT64_MIN, 43, 61}},
    {1, GD_SUB, 0, {INT64_MIN, INT64_MAX, 0, 5}, {1, -1, INT64_MIN, 5}, {INT64_MAX, INT64_MIN, INT64_MIN, 0}},
    {1, GD_MUL, 0, {INT64_MAX, INT64_MIN, -1, (int64_t)1 << 32}, {2, -1, INT64_MIN, (int64_t)1 << 32},
     {-2, INT64_MIN, INT64_MIN, 0}},
    {1, GD_POW, 0, {3, -2, 7, 0}, {40, 63, 0, 0}, {-6289078614652622815, INT64_MIN, 1, 1}},
    {1, GD_POW, 0, {-1, 2, 0, 1}, {INT64_MAX, 64, 0, INT64_MAX}, {-1, 0, 1, 1}},
    {1, GD_POW, SCALAR_B, {-3, 2, 0, 10}, {3}, {-27, 8, 0, 1000}},
    {1, GD_MAXIMUM, 0, {INT64_MIN, INT64_MAX, -1, 0}, {INT64_MAX, INT64_MIN, -1, -1}, {INT64_MAX, INT64_MAX, -1, 0}},
    {1, GD_MINIMUM, 0, {INT64_MIN, INT64_MAX, -1, 0}, {INT64_MAX, INT64_MIN, -1, -1}, {INT64_MIN, INT64_MIN, -1, -1}},
    {1, GD_FLOOR_DIV, 0, {INT64_MIN, INT64_MIN, 7, -7}, {-1, 0, -2, 2}, {INT64_MIN, 0, -4, -4}},
    {1, GD_FLOOR_DIV, 0, {INT64_MAX, INT64_MIN, 0, -1}, {-1, 2, 5, INT64_MAX}, {-INT64_MAX, INT64_MIN / 2, 0, -1}},
    {1, GD_MOD, 0, {INT64_MIN, INT64_MIN, 7, -7}, {-1, 0, -2, 2}, {0, 0, -1, 1}},
    {1, GD_MOD, 0, {INT64_MAX, INT64_MIN, 3, -1}, {INT64_MIN, INT64_MAX, 0, INT64_MAX},
     {-1, INT64_MAX - 1, 0, INT64_MAX - 1}},
    {1, GD_MOD, SCALAR_B, {-5, 5, INT64_MIN, 0}, {-3}, {-2, -1, -2, 0}},
};

/* int32: the same wrapping at 32 bits, and shifts by counts past the width */
static const int_row int32_rows[] = {
    {0, GD_ABS, 0, {INT32_MIN, INT32_MAX, 3, -2}, {0}, {INT32_MIN, INT32_MAX, 3, 2}},
    {0, GD_NEG, 0, {INT32_MIN, INT32_MAX, 0, -5}, {0}, {INT32_MIN, -INT32_MAX, 0, 5}},
    {0, GD_SQUARE, 0, {65536, INT32_MIN, -3, 46341}, {0}, {0, 0, 9, -2147479015}},
    {0, GD_COPY, SCALAR_A, {INT32_MIN}, {0}, {INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN}},
    {1, GD_ADD, 0, {INT32_MIN, INT32_MAX, 3, -2}, {-1, 1, 40, 31}, {INT32_MAX, INT32_MIN, 43, 29}},
    {1, GD_MUL, 0, {INT32_MAX, INT32_MIN, -1, 65536}, {2, -1, INT32_MIN, 65536}, {-2, INT32_MIN, INT32_MIN, 0}},
    {1, GD_POW, 0, {3, -2, 7, 0}, {20, 31, 0, 0}, {-808182895, INT32_MIN, 1, 1}},
    {1, GD_FLOOR_DIV, 0, {INT32_MIN, INT32_MIN, 7, -7}, {-1, 0, -2, 2}, {INT32_MIN, 0, -4, -4}},
    {1, GD_MOD, 0, {INT32_MIN, INT32_MIN, 7, -7}, {-1, 0, -2, 2}, {0, 0, -1, 1}},
    {1, GD_MOD, SCALAR_B, {-5, 5, INT32_MIN, 0}, {-3}, {-2, -1, -2, 0}},
    {1, GD_SHL, 0, {1, 1, -1, 5}, {31, 32, 33, -1}, {INT32_MIN, 0, 0, 0}},
    {1, GD_SHR, 0, {INT32_MIN, -1, 5, -5}, {31, 32, 1, 40}, {-1, -1, 2, -1}},
};

/* Runs one row: a and b hold 4 host elements of dtype t (or the scalar in element 0). */
static int run_row(void *out, int binary, int op, int scalar, gd_dtype t, const void *a, const void *b)
{
    size_t bytes = 4 * gd_dtype_size(t);
    gd_ewise ew = {.ndim = 1, .contiguous = 1, .size = 4, .shape = {4}};
    gd_operand oa, ob;
    memset(&oa, 0, sizeof oa);
    memset(&ob, 0, sizeof ob);
    oa.strides[0] = ob.strides[0] = 1;
    void *da = NULL, *db = NULL;
    if (scalar == SCALAR_A)
        memcpy(&oa.scalar, a, 8); /* .f of a double or .i of an int64: both 8 bytes */
    else
        oa.data = da = gdt_upload_new(a, bytes);
    if (scalar == SCALAR_B)
        memcpy(&ob.scalar, b, 8);
    else if (binary)
        ob.data = db = gdt_upload_new(b, bytes);
    int rc = binary ? gdt_be->binary(out, (gd_binop)op, t, &ew, &oa, &ob, gdt_dev, &gdt_err)
                    : gdt_be->unary(out, (gd_unop)op, t, &ew, &oa, gdt_dev, &gdt_err);
    if (da) gdt_free(da, bytes);
    if (db) gdt_free(db, bytes);
    return rc;
}

void gdt_check_elementwise_values(void)
{
    void *out = gdt_alloc(32);
    for (size_t r = 0; r < sizeof float_rows / sizeof float_rows[0]; r++) {
        const float_row *row = &float_rows[r];
        for (int dt = GD_FLOAT32; dt <= GD_FLOAT64; dt++) {
            gd_dtype t = (gd_dtype)dt;
            double a[4], b[4]; /* device format: float32 rows are converted, scalars stay double */
            float af[4], bf[4];
            for (int i = 0; i < 4; i++) {
                a[i] = row->a[i], b[i] = row->b[i];
                af[i] = (float)a[i], bf[i] = (float)b[i];
            }
            const void *ha = t == GD_FLOAT32 && row->scalar != SCALAR_A ? (const void *)af : a;
            const void *hb = t == GD_FLOAT32 && row->scalar != SCALAR_B ? (const void *)bf : b;
            if (OK(run_row(out, row->binary, row->op, row->scalar, t, ha, hb)))
                EXPECT(out, t, 4, row->want, GDT_EXACT, "%s op %d %s, row %zu", row->binary ? "binary" : "unary",
                       row->op, gdt_dtype_name(t), r);
        }
    }
    for (size_t r = 0; r < sizeof int_rows / sizeof int_rows[0]; r++) {
        const int_row *row = &int_rows[r];
        if (OK(run_row(out, row->binary, row->op, row->scalar, GD_INT64, row->a, row->b)))
            EXPECT(out, GD_INT64, 4, row->want, GDT_EXACT, "%s op %d int64, row %zu",
                   row->binary ? "binary" : "unary", row->op, r);
    }
    for (size_t r = 0; r < sizeof int32_rows / sizeof int32_rows[0]; r++) {
        const int_row *row = &int32_rows[r];
        int32_t a[4], b[4]; /* device format; scalars stay int64 */
        for (int i = 0; i < 4; i++) a[i] = (int32_t)row->a[i], b[i] = (int32_t)row->b[i];
        const void *ha = row->scalar == SCALAR_A ? (const void *)row->a : a;
        const void *hb = row->scalar == SCALAR_B ? (const void *)row->b : b;
        if (OK(run_row(out, row->binary, row->op, row->scalar, GD_INT32, ha, hb)))
            EXPECT(out, GD_INT32, 4, row->want, GDT_EXACT, "%s op %d int32, row %zu",
                   row->binary ? "binary" : "unary", row->op, r);
    }
    gdt_free(out, 32);
}

/* ------------------------------------------------------------------------------------------
 * refusals: calls outside what ops.c sends, which the backends answer with GD_ERR_VALUE and
 * a message rather than computing garbage (gpudev.h: "defensive: ops.c should have caught
 * it"). None of them may touch the buffers they are given.
 * ---------------------------------------------------------------------------------------- */

typedef struct refusal {
    const char *what;
    int (*call)(void *buf, gd_error *err);
} refusal;

static const gd_ewise ew4 = {.ndim = 1, .contiguous = 1, .size = 4, .shape = {4}};

static gd_operand operand(void *buf)
{
    gd_operand o;
    memset(&o, 0, sizeof o);
    o.data = buf;
    o.strides[0] = 1;
    return o;
}

static int int64_exp(void *buf, gd_error *err)
{
    gd_operand a = operand(buf);
    return gdt_be->unary(buf, GD_EXP, GD_INT64, &ew4, &a, gdt_dev, err);
}
static int int64_sqrt(void *buf, gd_error *err)
{
    gd_operand a = operand(buf);
    return gdt_be->unary(buf, GD_SQRT, GD_INT64, &ew4, &a, gdt_dev, err);
}
static int int64_div(void *buf, gd_error *err)
{
    gd_operand a = operand(buf);
    return gdt_be->binary(buf, GD_DIV, GD_INT64, &ew4, &a, &a, gdt_dev, err);
}
static int unknown_unop(void *buf, gd_error *err)
{
    gd_operand a = operand(buf);
    return gdt_be->unary(buf, GD_NUM_UNOPS, GD_FLOAT32, &ew4, &a, gdt_dev, err);
}
static int unknown_binop(void *buf, gd_error *err)
{
    gd_operand a = operand(buf);
    return gdt_be->binary(buf, GD_NUM_BINOPS, GD_FLOAT32, &ew4, &a, &a, gdt_dev, err);
}
static int max_of_nothing(void *buf, gd_error *err)
{
    return gdt_be->reduce(buf, GD_FLOAT32, GD_RED_MAX, buf, GD_FLOAT32, 1, 0, 1, gdt_dev, err);
}
static int min_of_nothing(void *buf, gd_error *err)
{
    return gdt_be->reduce(buf, GD_INT64, GD_RED_MIN, buf, GD_INT64, 2, 0, 2, gdt_dev, err);
}
static int unknown_redop(void *buf, gd_error *err)
{
    return gdt_be->reduce(buf, GD_FLOAT32, GD_NUM_REDOPS, buf, GD_FLOAT32, 1, 4, 1, gdt_dev, err);
}
static int huge_gemm(void *buf, gd_error *err) /* m beyond the BLAS libraries' int */
{
    gd_matrix m = {buf, 0, 1, 0};
    return gdt_be->gemm(buf, GD_FLOAT32, &m, &m, 1, (int64_t)INT_MAX + 1, 1, 1, 0, gdt_dev, err);
}
static int int64_random(void *buf, gd_error *err)
{
    return gdt_be->random(buf, GD_INT64, GD_RAND_UNIFORM, 1, 0, 4, gdt_dev, err);
}

static const refusal refusals[] = {
    {"unary exp on int64", int64_exp},
    {"unary sqrt on int64", int64_sqrt},
    {"binary div on int64", int64_div},
    {"unknown unary operation", unknown_unop},
    {"unknown binary operation", unknown_binop},
    {"max over an empty axis", max_of_nothing},
    {"min over an empty axis", min_of_nothing},
    {"unknown reduction", unknown_redop},
    {"gemm with m > INT_MAX", huge_gemm},
    {"int64 random numbers", int64_random},
};

void gdt_check_refusals(void)
{
    static const int64_t guard[4] = {11, 22, 33, 44};
    void *buf = gdt_upload_new(guard, sizeof guard);
    for (size_t r = 0; r < sizeof refusals / sizeof refusals[0]; r++) {
        gd_error err;
        memset(&err, 0, sizeof err);
        int rc = refusals[r].call(buf, &err);
        CHECK(rc == GD_ERR_VALUE && err.code == GD_ERR_VALUE && err.message[0] != '\0',
              "%s: status %d (err.code %d), message '%s'; expected GD_ERR_VALUE with a message", refusals[r].what, rc,
              (int)err.code, err.message);
    }
    EXPECT(buf, GD_INT64, 4, guard, GDT_EXACT, "refused calls left their buffer alone");
    gdt_free(buf, sizeof guard);
}
