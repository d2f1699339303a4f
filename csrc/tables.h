/* tables.h - the op lists, the dtype table and the operation tables that every layer reads:
 * the core (names in messages and traces, NumPy and DLPack mappings, which operations need
 * floats, the module functions), the CPU backend and the CUDA backend (their kernel tables,
 * indexed by the same enums).
 *
 * Each table has one row per value of its enum in gpudev.h, in enum order, and each row starts
 * with that value. A table with a row too few or too many fails to compile (GD_CHECK_TABLE); in
 * C++, which the CUDA backend is compiled as in every build, so does a row out of order. Plain
 * C11 that also compiles as C++17. gpudev.h includes this file twice: first for the op lists
 * (macros only, from which it makes the enums), then, after its types, for the tables; so
 * every user of the backend ABI sees the tables. Include gpudev.h, not this file.
 */

/* ------------------------------------------------------------------------------------------
 * the op lists: one row per elementwise operation, and everything else comes from the row
 *
 *   X(ENUM, name, TYPES, FLAGS, NUMPY, SYMBOL, DOC)
 *
 * ENUM    the enum value without GD_ (GD_EXP), in gd_unop or gd_binop.
 * name    its name in messages, traces, the trace and autograd's RULES; gd.<name> when FN.
 * TYPES   the dtypes the backends compute it in, NumPy's loop types as a word:
 *           ALL      float32, float64, int64, int32 and bool
 *           NUMERIC  float32, float64, int64, int32 (the core computes bools in int64)
 *           FLOAT    float32, float64 (the core computes integers in float64)
 *           BITWISE  int64, int32 and bool (floats are refused)
 *           INT      int64, int32 (floats are refused, bools computed in int64)
 *           COMPARE  every dtype, the result bool
 * FLAGS   0 or GD_OP_ flags: COSTLY (a libm call per element: threads pay at smaller
 *         sizes), FN (a module function gd.<name>), METHOD (an Array method as well).
 * NUMPY   the NumPy ufunc of the same meaning, as a string, or NULL: the NumPy protocol maps
 *         it to gd.<name> (FN) and the tests compare with it.
 * SYMBOL  the Python operator ("+", "abs"), or NULL (then `a = gd.<name>(a, b)` is the rewrite
 *         an in-place error suggests).
 * DOC     gd.<name>'s docstring after its signature ("$module, a, /" or "$module, a, b, /").
 *
 * The scalar function of each row lives in ewise_math.h, once for both backends, named
 * gd_ew_<name>_<dtype> (f32, f64, i64, i32, b) for each dtype of its TYPES. New rows go last:
 * the enum values are the backend ABI's.
 * ---------------------------------------------------------------------------------------- */

#ifndef GPUDEV_OP_LISTS_H
#define GPUDEV_OP_LISTS_H

#define GD_UNARY_OPS(X)                                                                                     \
    X(COPY, copy, ALL, 0, NULL, NULL, "") /* out = a; with a scalar operand: fill, setitem */              \
    X(NEG, negative, NUMERIC, GD_OP_FN, "negative", "-",                                                   \
      "-a elementwise (integers wrap; bools are refused, as in NumPy).")                                   \
    X(ABS, abs, NUMERIC, GD_OP_FN, "absolute", "abs", "The absolute value elementwise.")                   \
    X(RELU, relu, NUMERIC, GD_OP_FN, NULL, NULL, "maximum(a, 0) elementwise.")                             \
    X(EXP, exp, FLOAT, GD_OP_COSTLY | GD_OP_FN, "exp", NULL, "e ** a elementwise.")                        \
    X(LOG, log, FLOAT, GD_OP_COSTLY | GD_OP_FN, "log", NULL, "The natural logarithm elementwise.")         \
    X(SQRT, sqrt, FLOAT, GD_OP_FN, "sqrt", NULL, "The square root elementwise.")                           \
    X(TANH, tanh, FLOAT, GD_OP_COSTLY | GD_OP_FN, "tanh", NULL, "The hyperbolic tangent elementwise.")     \
    X(SQUARE, square, NUMERIC, GD_OP_FN, "square", NULL, "a * a elementwise (integers wrap).")             \
    X(INVERT, invert, BITWISE, GD_OP_FN, "invert", "~",                                                    \
      "~a elementwise: bitwise not of integers, logical not of bools (NumPy's invert).")                   \
    X(SIGMOID, sigmoid, FLOAT, GD_OP_COSTLY | GD_OP_FN | GD_OP_METHOD, NULL, NULL,                         \
      "1 / (1 + exp(-a)) elementwise, computed without overflow (integers in float64).\n\n"                \
      ">>> gd.sigmoid(gd.array([-1e4, 0.0, 1e4])).tolist()\n[0.0, 0.5, 1.0]")                              \
    GD_STANDARD_UNARY_OPS(X)

/* The array API standard's unary functions that NumPy has: float-only ones compute integers and
 * bools in float64 (NumPy does so for integers); rounding keeps integers and bools as they are. */
#define GD_STANDARD_UNARY_OPS(X)                                                                            \
    X(ACOS, acos, FLOAT, GD_OP_COSTLY | GD_OP_FN, "arccos", NULL,                                          \
      "The inverse cosine elementwise, in radians; NaN outside [-1, 1].")                                  \
    X(ACOSH, acosh, FLOAT, GD_OP_COSTLY | GD_OP_FN, "arccosh", NULL,                                       \
      "The inverse hyperbolic cosine elementwise; NaN below 1.")                                           \
    X(ASIN, asin, FLOAT, GD_OP_COSTLY | GD_OP_FN, "arcsin", NULL,                                          \
      "The inverse sine elementwise, in radians; NaN outside [-1, 1].")                                    \
    X(ASINH, asinh, FLOAT, GD_OP_COSTLY | GD_OP_FN, "arcsinh", NULL, "The inverse hyperbolic sine elementwise.") \
    X(ATAN, atan, FLOAT, GD_OP_COSTLY | GD_OP_FN, "arctan", NULL, "The inverse tangent elementwise, in radians.") \
    X(ATANH, atanh, FLOAT, GD_OP_COSTLY | GD_OP_FN, "arctanh", NULL,                                       \
      "The inverse hyperbolic tangent elementwise; +-inf at +-1, NaN beyond.")                             \
    X(COS, cos, FLOAT, GD_OP_COSTLY | GD_OP_FN, "cos", NULL, "The cosine elementwise (a in radians).")     \
    X(COSH, cosh, FLOAT, GD_OP_COSTLY | GD_OP_FN, "cosh", NULL, "The hyperbolic cosine elementwise.")      \
    X(SIN, sin, FLOAT, GD_OP_COSTLY | GD_OP_FN, "sin", NULL,                                               \
      "The sine elementwise (a in radians).\n\n>>> gd.sin(gd.array([0.0, -0.0])).tolist()\n[0.0, -0.0]")    \
    X(SINH, sinh, FLOAT, GD_OP_COSTLY | GD_OP_FN, "sinh", NULL, "The hyperbolic sine elementwise.")        \
    X(TAN, tan, FLOAT, GD_OP_COSTLY | GD_OP_FN, "tan", NULL, "The tangent elementwise (a in radians).")    \
    X(LOG1P, log1p, FLOAT, GD_OP_COSTLY | GD_OP_FN, "log1p", NULL,                                         \
      "log(1 + a) elementwise, accurate for a near 0.\n\n>>> gd.log1p(gd.array([1e-20])).tolist()\n[1e-20]") \
    X(EXPM1, expm1, FLOAT, GD_OP_COSTLY | GD_OP_FN, "expm1", NULL,                                         \
      "exp(a) - 1 elementwise, accurate for a near 0.")                                                    \
    X(LOG2, log2, FLOAT, GD_OP_COSTLY | GD_OP_FN, "log2", NULL, "The base-2 logarithm elementwise.")       \
    X(LOG10, log10, FLOAT, GD_OP_COSTLY | GD_OP_FN, "log10", NULL, "The base-10 logarithm elementwise.")   \
    X(CEIL, ceil, NUMERIC, GD_OP_FN, "ceil", NULL,                                                         \
      "The smallest integer >= a elementwise; integers and bools are returned as they are.")               \
    X(FLOOR, floor, NUMERIC, GD_OP_FN, "floor", NULL,                                                      \
      "The largest integer <= a elementwise; integers and bools are returned as they are.")                \
    X(TRUNC, trunc, NUMERIC, GD_OP_FN, "trunc", NULL,                                                      \
      "a rounded towards zero elementwise; integers and bools are returned as they are.")                  \
    X(ROUND, round, NUMERIC, GD_OP_FN | GD_OP_METHOD, "rint", NULL,                                        \
      "a rounded to the nearest integer elementwise, halfway cases to the even one; integers and bools "   \
      "are returned as they are.\n\n>>> gd.round(gd.array([0.5, 1.5, 2.5])).tolist()\n[0.0, 2.0, 2.0]")     \
    X(SIGN, sign, NUMERIC, GD_OP_FN, "sign", NULL,                                                         \
      "-1, 0 or 1 by the sign of a elementwise; both zeros give 0, NaN stays NaN, a bool is itself.")      \
    X(EXP2, exp2, FLOAT, GD_OP_COSTLY | GD_OP_FN, "exp2", NULL,                                            \
      "2 ** a elementwise (integers in float64).\n\n"                                                      \
      ">>> gd.exp2(gd.array([3.0, -1.0])).tolist()\n[8.0, 0.5]")

/* NaN propagates through maximum and minimum, as in NumPy; integer powers take exponents >= 0
 * (the core checks); integer x // 0 and x % 0 are 0, INT64_MIN // -1 wraps to INT64_MIN (and
 * INT32_MIN // -1 to INT32_MIN). */
#define GD_BINARY_OPS(X)                                                                                    \
    X(ADD, add, NUMERIC, GD_OP_FN, "add", "+",                                                             \
      "a + b elementwise with broadcasting (integers wrap).")                                              \
    X(SUB, subtract, NUMERIC, GD_OP_FN, "subtract", "-",                                                   \
      "a - b elementwise with broadcasting (integers wrap).")                                              \
    X(MUL, multiply, NUMERIC, GD_OP_FN, "multiply", "*",                                                   \
      "a * b elementwise with broadcasting (integers wrap).")                                              \
    X(DIV, divide, FLOAT, GD_OP_FN, "divide", "/",                                                         \
      "a / b elementwise with broadcasting: true division (integers in float64).")                         \
    X(POW, power, NUMERIC, GD_OP_COSTLY | GD_OP_FN, "power", "**",                                         \
      "a ** b elementwise with broadcasting. Integers to negative integer powers raise "                   \
      "ValueError, as in NumPy; for an integer array of exponents that check is a reduction (on a GPU it "    \
      "waits for the device). Integer results wrap on overflow.\n\n"                                        \
      ">>> gd.power(gd.arange(4), gd.array([3, 2, 1, 0])).tolist()\n[0, 1, 2, 1]")                         \
    X(MAXIMUM, maximum, NUMERIC, GD_OP_FN, "maximum", NULL,                                                \
      "The larger of a and b elementwise with broadcasting (NaN propagates).")                             \
    X(MINIMUM, minimum, NUMERIC, GD_OP_FN, "minimum", NULL,                                                \
      "The smaller of a and b elementwise with broadcasting (NaN propagates).")                            \
    X(EQ, equal, COMPARE, GD_OP_FN, "equal", "==",                                                         \
      "a == b elementwise with broadcasting, a bool array.")                                               \
    X(NE, not_equal, COMPARE, GD_OP_FN, "not_equal", "!=",                                                 \
      "a != b elementwise with broadcasting, a bool array.")                                               \
    X(LT, less, COMPARE, GD_OP_FN, "less", "<",                                                            \
      "a < b elementwise with broadcasting, a bool array.")                                                \
    X(LE, less_equal, COMPARE, GD_OP_FN, "less_equal", "<=",                                               \
      "a <= b elementwise with broadcasting, a bool array.")                                               \
    X(GT, greater, COMPARE, GD_OP_FN, "greater", ">",                                                      \
      "a > b elementwise with broadcasting, a bool array.")                                                \
    X(GE, greater_equal, COMPARE, GD_OP_FN, "greater_equal", ">=",                                         \
      "a >= b elementwise with broadcasting, a bool array.")                                               \
    X(AND, bitwise_and, BITWISE, GD_OP_FN, "bitwise_and", "&", "a & b elementwise (integers and bools).")  \
    X(OR, bitwise_or, BITWISE, GD_OP_FN, "bitwise_or", "|", "a | b elementwise (integers and bools).")     \
    X(XOR, bitwise_xor, BITWISE, GD_OP_FN, "bitwise_xor", "^", "a ^ b elementwise (integers and bools).")  \
    X(FLOOR_DIV, floor_divide, NUMERIC, GD_OP_COSTLY | GD_OP_FN, "floor_divide", "//",                     \
      "a // b elementwise with broadcasting, as NumPy's: the quotient rounded down. "                      \
      "For integers, x // 0 is 0 (no warning) and the most negative value // -1 wraps to itself.\n\n"                    \
      ">>> gd.floor_divide(gd.array([7, -7]), 2).tolist()\n[3, -4]")                                       \
    X(MOD, remainder, NUMERIC, GD_OP_COSTLY | GD_OP_FN, "remainder", "%",                                  \
      "a % b elementwise with broadcasting, as NumPy's: the sign of b, and "                               \
      "a == (a // b) * b + a % b. For integers, x % 0 is 0 (no warning); for floats it is NaN.\n\n"           \
      ">>> gd.remainder(gd.array([7, -7]), 3).tolist()\n[1, 2]")                                       \
    X(HYPOT, hypot, FLOAT, GD_OP_COSTLY | GD_OP_FN, "hypot", NULL,                                         \
      "sqrt(a**2 + b**2) elementwise with broadcasting, as NumPy's: no overflow or underflow in the "      \
      "squares, inf when either is infinite (integers in float64).\n\n"                                    \
      ">>> gd.hypot(gd.array([3.0, 1e200], dtype=gd.float64), 4.0).tolist()\n[5.0, 1e+200]")               \
    GD_STANDARD_BINARY_OPS(X)                                                                              \
    /* internal (no gd.<name>): sigmoid's backward from its result y and the gradient g, (1 - y) *         \
     * y * g in one pass, rounded as those three operations (_grad_rules.py) */                            \
    X(SIGMOID_GRAD, sigmoid_grad, FLOAT, 0, NULL, NULL, "")

/* The array API standard's binary functions that NumPy has; shifts are for integers only (bools
 * are computed in int64, as NumPy computes them in int8). */
#define GD_STANDARD_BINARY_OPS(X)                                                                           \
    X(ATAN2, atan2, FLOAT, GD_OP_COSTLY | GD_OP_FN, "arctan2", NULL,                                       \
      "The angle of the point (b, a) elementwise, in radians in [-pi, pi], with the signs of both "        \
      "operands (atan2(0.0, -0.0) is pi).")                                                                \
    X(COPYSIGN, copysign, FLOAT, GD_OP_FN, "copysign", NULL,                                               \
      "|a| with the sign bit of b elementwise (b = -0.0 or a negative NaN count as negative).")            \
    X(NEXTAFTER, nextafter, FLOAT, GD_OP_FN, "nextafter", NULL,                                            \
      "The next float after a towards b elementwise, in their dtype.")                                     \
    X(LOGADDEXP, logaddexp, FLOAT, GD_OP_COSTLY | GD_OP_FN, "logaddexp", NULL,                             \
      "log(exp(a) + exp(b)) elementwise, computed without overflow.\n\n"                                    \
      ">>> gd.logaddexp(gd.array([1000.0]), 1000.0).tolist()\n[1000.6931471805599]")                       \
    X(SHL, bitwise_left_shift, INT, GD_OP_FN, "left_shift", "<<",                                          \
      "a << b elementwise for integers (bools in int64); a count below 0 or of the width (64 or 32 "  \
      "bits) and more gives 0, as in NumPy.")                                                                                      \
    X(SHR, bitwise_right_shift, INT, GD_OP_FN, "right_shift", ">>",                                        \
      "a >> b elementwise for integers (bools in int64), an arithmetic shift; a count below 0 or of "      \
      "the width (64 or 32 bits) and more gives 0, or -1 for a negative a, as in NumPy.")

/* Other names of module functions: A(KIND, ENUM, alias, DOC), KIND UNARY or BINARY. */
#define GD_OP_ALIASES(A)                                                                                    \
    A(BINARY, POW, pow, "gd.power (PyTorch's name).")                                                      \
    A(BINARY, MOD, mod, "gd.remainder (NumPy's alias).")                                                  \
    A(UNARY, INVERT, bitwise_invert, "gd.invert (the array API standard's name).")

/* ------------------------------------------------------------------------------------------
 * the reduction list: one row per reduction of the backends' reduce entry, and everything
 * else comes from the row
 *
 *   X(ENUM, name, MERGE, IDENTITY, ACC, ENTRY, NUMPY, NOUN, DOC)
 *
 * ENUM      the enum value without GD_RED_ (GD_RED_SUM), in gd_redop.
 * name      its name in messages, traces and autograd's RULES; Array.<name> when ENTRY says so.
 * MERGE     the reduction that combines its partial results (SUMSQ's partials are summed).
 * IDENTITY  GD_RED_IDENTITY(v): the result of an empty axis; GD_RED_NO_IDENTITY: an empty
 *           reduction is an error (max of nothing).
 * ACC       WIDE: it accumulates, float32 in float64 and int32 into int64, whose result is
 *           int64 as NumPy's on Linux (bools count as int64); EXACT: it picks an element, in
 *           the input's dtype (bools stay bools).
 * ENTRY     METHOD_DTYPE: Array.<name>(axis=None, keepdims=False, *, dtype=None);
 *           METHOD: Array.<name>(axis=None, keepdims=False); NONE: the core's own use (norm).
 * NUMPY     NumPy's function of the same meaning, as a string (the tests compare with it),
 *           or NULL.
 * NOUN      what an empty axis has none of, in messages ("maximum").
 * DOC       Array.<name>'s docstring after its signature.
 *
 * Where each row must be handled by hand, a missing one fails to compile: the CPU kernels'
 * rows (csrc/cpu/reduce.c), the CUDA operations (csrc/cuda/reduce.cu), the conformance rows
 * (tests/c/conformance_reduce.c); `make test` fails on a method row without a gradient rule
 * or refusal in gpudev/_grad_rules.py (tests/test_reduction_list.py). New rows go last: the
 * enum values are the backend ABI's.
 * ---------------------------------------------------------------------------------------- */

#define GD_REDUCTIONS(X)                                                                                    \
    X(SUM, sum, SUM, GD_RED_IDENTITY(0), WIDE, METHOD_DTYPE, "sum", "sum",                                 \
      "The sum over axis (an int, a tuple, or None for all), in dtype if given.")                          \
    X(MAX, max, MAX, GD_RED_NO_IDENTITY, EXACT, METHOD, "max", "maximum",                                  \
      "The maximum over axis (an int, a tuple, or None for all); NaN propagates.")                         \
    X(MIN, min, MIN, GD_RED_NO_IDENTITY, EXACT, METHOD, "min", "minimum",                                  \
      "The minimum over axis (an int, a tuple, or None for all); NaN propagates.")                         \
    X(SUMSQ, sumsq, SUM, GD_RED_IDENTITY(0), WIDE, NONE, NULL, "sum of squares", "")                      \
    X(PROD, prod, PROD, GD_RED_IDENTITY(1), WIDE, METHOD_DTYPE, "prod", "product",                         \
      "The product over axis (an int, a tuple, or None for all), in dtype if given; one pass, integers "   \
      "wrap.\n\n>>> gd.array([[1, 2], [3, 4]]).prod(axis=1).tolist()\n[2, 12]")

#endif /* GPUDEV_OP_LISTS_H */

#if defined(GPUDEV_H_TYPES) && !defined(GPUDEV_TABLES_H)
#define GPUDEV_TABLES_H

#include <stddef.h>

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
    {GD_INT32, "int32", 4, 'i', "i"},
};
GD_CHECK_TABLE(gd_dtype_table, GD_NUM_DTYPES, &gd_dtype_info::dtype);

GD_TABLE_FN size_t gd_dtype_size(gd_dtype t) { return gd_dtype_table[t].itemsize; }
GD_TABLE_FN const char *gd_dtype_name(gd_dtype t) { return gd_dtype_table[t].name; }
GD_TABLE_FN int gd_dtype_is_float(gd_dtype t) { return gd_dtype_table[t].kind == 'f'; }
GD_TABLE_FN int gd_dtype_is_bool(gd_dtype t) { return gd_dtype_table[t].kind == 'b'; }
GD_TABLE_FN int gd_dtype_is_int(gd_dtype t) { return gd_dtype_table[t].kind == 'i'; }

/* The dtype of `kind` and `itemsize`, or -1 when gpudev has none. */
GD_TABLE_FN int gd_dtype_lookup(char kind, size_t itemsize)
{
    for (int t = 0; t < GD_NUM_DTYPES; t++)
        if (gd_dtype_table[t].kind == kind && gd_dtype_table[t].itemsize == itemsize) return t;
    return -1;
}

/* ------------------------------------------------------------------------------------------
 * elementwise operations: the table rows come from the op lists at the top of this file
 * ---------------------------------------------------------------------------------------- */

enum gd_op_flags {
    GD_OP_FLOAT_ONLY = 1, /* defined for float dtypes only: the core computes integers in float64 */
    GD_OP_COSTLY = 2,     /* a libm call or a loop per element: worth threads at smaller sizes */
    GD_OP_BOOL_OUT = 4,   /* a comparison: the result is bool whatever the operands' dtype */
    GD_OP_BITWISE = 8,    /* defined for integers and bool only */
    GD_OP_NUMERIC = 16,   /* arithmetic: not defined for bool (the core computes bools in int64) */
    GD_OP_FN = 32,        /* a module function gd.<name>(a) / gd.<name>(a, b), with the row's doc */
    GD_OP_METHOD = 64,    /* also an Array method a.<name>() / a.<name>(b) */
};

/* The flags a TYPES column stands for. */
#define GD_TYPES_ALL 0
#define GD_TYPES_NUMERIC GD_OP_NUMERIC
#define GD_TYPES_FLOAT GD_OP_FLOAT_ONLY
#define GD_TYPES_BITWISE GD_OP_BITWISE
#define GD_TYPES_INT (GD_OP_BITWISE | GD_OP_NUMERIC)
#define GD_TYPES_COMPARE GD_OP_BOOL_OUT

typedef struct gd_op_info {
    int op;               /* its gd_unop or gd_binop */
    const char *name;     /* in messages, traces, gd.<name>, autograd's RULES: "negative", "exp" */
    const char *id;       /* the enum value without GD_: "NEG", "EXP" */
    const char *types;    /* the TYPES column: "ALL", "NUMERIC", "FLOAT", "BITWISE", "COMPARE" */
    unsigned flags;       /* gd_op_flags: the TYPES column's and the FLAGS column's */
    const char *numpy;    /* NumPy's ufunc of the same meaning, or NULL */
    const char *symbol;   /* its Python operator ("+", "abs"), or NULL */
    const char *doc;      /* the docstring of gd.<name> (GD_OP_FN), after its signature */
} gd_op_info;
typedef gd_op_info gd_unop_info;
typedef gd_op_info gd_binop_info;

#define GD_OP_ROW(E, name, TYPES, FLAGS, NUMPY, SYMBOL, DOC) \
    {GD_##E, #name, #E, #TYPES, (unsigned)(GD_TYPES_##TYPES) | (unsigned)(FLAGS), NUMPY, SYMBOL, DOC},
GD_TABLE gd_op_info gd_unop_table[] = {GD_UNARY_OPS(GD_OP_ROW)};
GD_CHECK_TABLE(gd_unop_table, GD_NUM_UNOPS, &gd_op_info::op);
GD_TABLE gd_op_info gd_binop_table[] = {GD_BINARY_OPS(GD_OP_ROW)};
GD_CHECK_TABLE(gd_binop_table, GD_NUM_BINOPS, &gd_op_info::op);
#undef GD_OP_ROW

GD_TABLE_FN int gd_unop_float_only(gd_unop op) { return (gd_unop_table[op].flags & GD_OP_FLOAT_ONLY) != 0; }
GD_TABLE_FN int gd_binop_float_only(gd_binop op) { return (gd_binop_table[op].flags & GD_OP_FLOAT_ONLY) != 0; }
GD_TABLE_FN int gd_unop_has(gd_unop op, unsigned flag) { return (gd_unop_table[op].flags & flag) != 0; }
GD_TABLE_FN int gd_binop_has(gd_binop op, unsigned flag) { return (gd_binop_table[op].flags & flag) != 0; }
/* Whether the backends define an operation of these flags for dtype (the core converts or
 * refuses the rest). */
GD_TABLE_FN int gd_op_flags_defined(unsigned flags, gd_dtype t)
{
    if (flags & GD_OP_FLOAT_ONLY) return gd_dtype_is_float(t);
    if ((flags & GD_OP_BITWISE) && gd_dtype_is_float(t)) return 0;
    return !((flags & GD_OP_NUMERIC) && gd_dtype_is_bool(t)); /* INT: BITWISE and NUMERIC, integers alone */
}
GD_TABLE_FN int gd_unop_defined(gd_unop op, gd_dtype t) { return gd_op_flags_defined(gd_unop_table[op].flags, t); }
GD_TABLE_FN int gd_binop_defined(gd_binop op, gd_dtype t) { return gd_op_flags_defined(gd_binop_table[op].flags, t); }

/* ------------------------------------------------------------------------------------------
 * reductions
 * ---------------------------------------------------------------------------------------- */

typedef struct gd_redop_info {
    gd_redop op;
    const char *name;     /* in messages and traces: "sum", "sumsq" */
    const char *id;       /* the enum value without GD_RED_: "SUM" */
    gd_redop merge;       /* combines partial results of this reduction (SUMSQ's are summed) */
    int needs_elements;   /* no identity: an empty reduction is an error */
    double identity;      /* the result over an empty axis, when it has one */
    int widens;           /* ACC WIDE: accumulates (int32 -> int64, float32 in float64) */
    const char *entry;    /* its ENTRY column: "METHOD_DTYPE", "METHOD" or "NONE" */
    const char *numpy;    /* NumPy's function of the same meaning, or NULL */
    const char *noun;     /* what an empty axis has none of, in messages */
    const char *doc;      /* Array.<name>'s docstring after its signature */
} gd_redop_info;

#define GD_RED_IDENTITY(v) 0, (v)
#define GD_RED_NO_IDENTITY 1, 0.0
#define GD_RED_WIDE 1
#define GD_RED_EXACT 0
#define GD_RED_ROW(E, name, MERGE, IDENTITY, ACC, ENTRY, NUMPY, NOUN, DOC) \
    {GD_RED_##E, #name, #E, GD_RED_##MERGE, IDENTITY, GD_RED_##ACC, #ENTRY, NUMPY, NOUN, DOC},
GD_TABLE gd_redop_info gd_redop_table[] = {GD_REDUCTIONS(GD_RED_ROW)};
GD_CHECK_TABLE(gd_redop_table, GD_NUM_REDOPS, &gd_redop_info::op);
#undef GD_RED_ROW

#endif /* GPUDEV_TABLES_H */
