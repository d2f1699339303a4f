/* tables.h - the dtype table and the operation tables that every layer reads: the core (names
 * in messages and traces, NumPy and DLPack mappings, which operations need floats), the CPU
 * backend and the CUDA backend (their kernel tables, indexed by the same enums).
 *
 * Each table has one row per value of its enum in gpudev.h, in enum order, and each row starts
 * with that value. A table with a row too few or too many fails to compile (GD_CHECK_TABLE); in
 * C++, which the CUDA backend is compiled as in every build, so does a row out of order. Plain
 * C11 that also compiles as C++17. gpudev.h includes this file, so every user of the backend
 * ABI sees the tables.
 */
#ifndef GPUDEV_TABLES_H
#define GPUDEV_TABLES_H

#include <stddef.h>

#include "gpudev.h"

/* ------------------------------------------------------------------------------------------
 * compile-time checks
 * ---------------------------------------------------------------------------------------- */

#define GD_COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

#ifdef __cplusplus
#define GD_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#define GD_TABLE static constexpr     /* readable in constant expressions (kernel selection) */
#define GD_TABLE_FN static constexpr
/* Whether row i of `rows` describes enum value i (its member `id`), for every row. */
template <class Row, class Id, size_t N> constexpr bool gd_rows_in_order(const Row (&rows)[N], Id Row::*id)
{
    for (size_t i = 0; i < N; i++)
        if ((size_t)(rows[i].*id) != i) return false;
    return true;
}
#define GD_CHECK_TABLE(table, count, id)                                                         \
    static_assert(GD_COUNT_OF(table) == (size_t)(count), #table ": one row per enum value");      \
    static_assert(gd_rows_in_order(table, id), #table ": rows out of enum order")
#else
#define GD_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#define GD_TABLE static const
#define GD_TABLE_FN static inline
#define GD_CHECK_TABLE(table, count, id) \
    _Static_assert(GD_COUNT_OF(table) == (size_t)(count), #table ": one row per enum value")
#endif

/* ------------------------------------------------------------------------------------------
 * dtypes
 *
 * `kind` and `itemsize` are what NumPy calls the type (dtype.kind, dtype.itemsize) and what
 * DLPack calls it (type code float or int, bits = 8 * itemsize); the core derives both
 * mappings from them.
 * ---------------------------------------------------------------------------------------- */

typedef struct gd_dtype_info {
    gd_dtype dtype;
    const char *name;    /* "float32": gd.float32, messages, traces, NumPy's name for it */
    size_t itemsize;     /* bytes per element */
    char kind;           /* 'f' floating point, 'i' signed integer, 'b' bool */
    const char *format;  /* struct-module format of one element, for the buffer protocol */
} gd_dtype_info;

GD_TABLE gd_dtype_info gd_dtype_table[] = {
    {GD_FLOAT32, "float32", 4, 'f', "f"},
    {GD_FLOAT64, "float64", 8, 'f', "d"},
    {GD_INT64, "int64", 8, 'i', "q"},
    {GD_BOOL, "bool", 1, 'b', "?"},
};
GD_CHECK_TABLE(gd_dtype_table, GD_NUM_DTYPES, &gd_dtype_info::dtype);

GD_TABLE_FN size_t gd_dtype_size(gd_dtype t) { return gd_dtype_table[t].itemsize; }
GD_TABLE_FN const char *gd_dtype_name(gd_dtype t) { return gd_dtype_table[t].name; }
GD_TABLE_FN int gd_dtype_is_float(gd_dtype t) { return gd_dtype_table[t].kind == 'f'; }
GD_TABLE_FN int gd_dtype_is_bool(gd_dtype t) { return gd_dtype_table[t].kind == 'b'; }

/* The dtype of `kind` and `itemsize`, or -1 when gpudev has none. */
GD_TABLE_FN int gd_dtype_lookup(char kind, size_t itemsize)
{
    for (int t = 0; t < GD_NUM_DTYPES; t++)
        if (gd_dtype_table[t].kind == kind && gd_dtype_table[t].itemsize == itemsize) return t;
    return -1;
}

/* ------------------------------------------------------------------------------------------
 * elementwise operations
 * ---------------------------------------------------------------------------------------- */

enum gd_op_flags {
    GD_OP_FLOAT_ONLY = 1, /* defined for float dtypes only: the core computes integers in float64 */
    GD_OP_COSTLY = 2,     /* a libm call or a loop per element: worth threads at smaller sizes */
    GD_OP_BOOL_OUT = 4,   /* a comparison: the result is bool whatever the operands' dtype */
    GD_OP_BITWISE = 8,    /* defined for int64 and bool only */
    GD_OP_NUMERIC = 16,   /* arithmetic: not defined for bool (the core computes bools in int64) */
    GD_OP_NO_BOOL = 32,   /* a unary operation NumPy refuses for bools (else a bool is its own result) */
};

typedef struct gd_unop_info {
    gd_unop op;
    const char *name;     /* in messages and traces: "negative", "exp" */
    unsigned flags;       /* gd_op_flags */
} gd_unop_info;

GD_TABLE gd_unop_info gd_unop_table[] = {
    {GD_COPY, "copy", 0},
    {GD_NEG, "negative", GD_OP_NUMERIC | GD_OP_NO_BOOL},
    {GD_ABS, "abs", GD_OP_NUMERIC},
    {GD_RELU, "relu", GD_OP_NUMERIC},
    {GD_EXP, "exp", GD_OP_FLOAT_ONLY | GD_OP_COSTLY},
    {GD_LOG, "log", GD_OP_FLOAT_ONLY | GD_OP_COSTLY},
    {GD_SQRT, "sqrt", GD_OP_FLOAT_ONLY},
    {GD_TANH, "tanh", GD_OP_FLOAT_ONLY | GD_OP_COSTLY},
    {GD_SQUARE, "square", GD_OP_NUMERIC},
    {GD_INVERT, "invert", GD_OP_BITWISE},
    {GD_SIGMOID, "sigmoid", GD_OP_FLOAT_ONLY | GD_OP_COSTLY},
    {GD_ACOS, "acos", GD_OP_FLOAT_ONLY | GD_OP_COSTLY},
    {GD_ACOSH, "acosh", GD_OP_FLOAT_ONLY | GD_OP_COSTLY},
    {GD_ASIN, "asin", GD_OP_FLOAT_ONLY | GD_OP_COSTLY},
    {GD_ASINH, "asinh", GD_OP_FLOAT_ONLY | GD_OP_COSTLY},
    {GD_ATAN, "atan", GD_OP_FLOAT_ONLY | GD_OP_COSTLY},
    {GD_ATANH, "atanh", GD_OP_FLOAT_ONLY | GD_OP_COSTLY},
    {GD_COS, "cos", GD_OP_FLOAT_ONLY | GD_OP_COSTLY},
    {GD_COSH, "cosh", GD_OP_FLOAT_ONLY | GD_OP_COSTLY},
    {GD_SIN, "sin", GD_OP_FLOAT_ONLY | GD_OP_COSTLY},
    {GD_SINH, "sinh", GD_OP_FLOAT_ONLY | GD_OP_COSTLY},
    {GD_TAN, "tan", GD_OP_FLOAT_ONLY | GD_OP_COSTLY},
    {GD_LOG1P, "log1p", GD_OP_FLOAT_ONLY | GD_OP_COSTLY},
    {GD_EXPM1, "expm1", GD_OP_FLOAT_ONLY | GD_OP_COSTLY},
    {GD_LOG2, "log2", GD_OP_FLOAT_ONLY | GD_OP_COSTLY},
    {GD_LOG10, "log10", GD_OP_FLOAT_ONLY | GD_OP_COSTLY},
    {GD_CEIL, "ceil", GD_OP_NUMERIC},
    {GD_FLOOR, "floor", GD_OP_NUMERIC},
    {GD_TRUNC, "trunc", GD_OP_NUMERIC},
    {GD_ROUND, "round", GD_OP_NUMERIC},
    {GD_SIGN, "sign", GD_OP_NUMERIC | GD_OP_NO_BOOL},
};
GD_CHECK_TABLE(gd_unop_table, GD_NUM_UNOPS, &gd_unop_info::op);

typedef struct gd_binop_info {
    gd_binop op;
    const char *name;     /* in messages and traces: "add", "subtract" */
    const char *rewrite;  /* what to write instead of an in-place form that cannot cast back */
    unsigned flags;       /* gd_op_flags */
} gd_binop_info;

GD_TABLE gd_binop_info gd_binop_table[] = {
    {GD_ADD, "add", "a = a + b", GD_OP_NUMERIC},
    {GD_SUB, "subtract", "a = a - b", GD_OP_NUMERIC},
    {GD_MUL, "multiply", "a = a * b", GD_OP_NUMERIC},
    {GD_DIV, "divide", "a = a / b", GD_OP_FLOAT_ONLY},
    {GD_POW, "power", "a = a ** b", GD_OP_COSTLY | GD_OP_NUMERIC},
    {GD_MAXIMUM, "maximum", "a = gd.maximum(a, b)", GD_OP_NUMERIC},
    {GD_MINIMUM, "minimum", "a = gd.minimum(a, b)", GD_OP_NUMERIC},
    {GD_EQ, "equal", "a = a == b", GD_OP_BOOL_OUT},
    {GD_NE, "not_equal", "a = a != b", GD_OP_BOOL_OUT},
    {GD_LT, "less", "a = a < b", GD_OP_BOOL_OUT},
    {GD_LE, "less_equal", "a = a <= b", GD_OP_BOOL_OUT},
    {GD_GT, "greater", "a = a > b", GD_OP_BOOL_OUT},
    {GD_GE, "greater_equal", "a = a >= b", GD_OP_BOOL_OUT},
    {GD_AND, "bitwise_and", "a = a & b", GD_OP_BITWISE},
    {GD_OR, "bitwise_or", "a = a | b", GD_OP_BITWISE},
    {GD_XOR, "bitwise_xor", "a = a ^ b", GD_OP_BITWISE},
    {GD_FLOOR_DIV, "floor_divide", "a = a // b", GD_OP_COSTLY | GD_OP_NUMERIC},
    {GD_MOD, "remainder", "a = a % b", GD_OP_COSTLY | GD_OP_NUMERIC},
    {GD_ATAN2, "atan2", "a = gd.atan2(a, b)", GD_OP_FLOAT_ONLY | GD_OP_COSTLY},
    {GD_COPYSIGN, "copysign", "a = gd.copysign(a, b)", GD_OP_FLOAT_ONLY},
    {GD_NEXTAFTER, "nextafter", "a = gd.nextafter(a, b)", GD_OP_FLOAT_ONLY},
    {GD_LOGADDEXP, "logaddexp", "a = gd.logaddexp(a, b)", GD_OP_FLOAT_ONLY | GD_OP_COSTLY},
    {GD_SHL, "bitwise_left_shift", "a = a << b", GD_OP_BITWISE | GD_OP_NUMERIC},
    {GD_SHR, "bitwise_right_shift", "a = a >> b", GD_OP_BITWISE | GD_OP_NUMERIC},
};
GD_CHECK_TABLE(gd_binop_table, GD_NUM_BINOPS, &gd_binop_info::op);

GD_TABLE_FN int gd_unop_float_only(gd_unop op) { return (gd_unop_table[op].flags & GD_OP_FLOAT_ONLY) != 0; }
GD_TABLE_FN int gd_binop_float_only(gd_binop op) { return (gd_binop_table[op].flags & GD_OP_FLOAT_ONLY) != 0; }
GD_TABLE_FN int gd_unop_has(gd_unop op, unsigned flag) { return (gd_unop_table[op].flags & flag) != 0; }
GD_TABLE_FN int gd_binop_has(gd_binop op, unsigned flag) { return (gd_binop_table[op].flags & flag) != 0; }
/* Whether the backends define op for dtype (the core converts or refuses the rest). */
/* BITWISE and NUMERIC together (the shifts) mean int64 alone. */
GD_TABLE_FN int gd_unop_defined(gd_unop op, gd_dtype t)
{
    if (gd_unop_has(op, GD_OP_FLOAT_ONLY)) return gd_dtype_is_float(t);
    if (gd_unop_has(op, GD_OP_BITWISE) && gd_dtype_is_float(t)) return 0;
    return !(gd_unop_has(op, GD_OP_NUMERIC) && gd_dtype_is_bool(t));
}
GD_TABLE_FN int gd_binop_defined(gd_binop op, gd_dtype t)
{
    if (gd_binop_has(op, GD_OP_FLOAT_ONLY)) return gd_dtype_is_float(t);
    if (gd_binop_has(op, GD_OP_BITWISE) && gd_dtype_is_float(t)) return 0;
    return !(gd_binop_has(op, GD_OP_NUMERIC) && gd_dtype_is_bool(t));
}

/* ------------------------------------------------------------------------------------------
 * reductions
 * ---------------------------------------------------------------------------------------- */

typedef struct gd_redop_info {
    gd_redop op;
    const char *name;     /* in messages: "sum", "sum of squares" */
    gd_redop merge;       /* combines partial results of this reduction (SUMSQ's are summed) */
    int needs_elements;   /* no identity: an empty reduction is an error */
} gd_redop_info;

GD_TABLE gd_redop_info gd_redop_table[] = {
    {GD_RED_SUM, "sum", GD_RED_SUM, 0},
    {GD_RED_MAX, "max", GD_RED_MAX, 1},
    {GD_RED_MIN, "min", GD_RED_MIN, 1},
    {GD_RED_SUMSQ, "sum of squares", GD_RED_SUM, 0},
};
GD_CHECK_TABLE(gd_redop_table, GD_NUM_REDOPS, &gd_redop_info::op);

#endif /* GPUDEV_TABLES_H */
