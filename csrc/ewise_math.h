/* ewise_math.h - scalar math that the CPU and the CUDA backends both run, so that every device
 * gives the same bits: NumPy's floor division and remainder (npy_divmod for floats, Python's
 * floor rule for int64), a sigmoid that never overflows, the C library's functions under one
 * name per dtype, and the operations whose special cases (NaN, infinities, signed zeros, shift
 * counts past the width) need more than one C call: sign, logaddexp and the int64 shifts.
 *
 * Plain C11 that also compiles as CUDA C++ (the functions are then __host__ __device__). The
 * float functions come in f32 and f64 spellings so that float32 stays in float32, as NumPy's
 * loops do.
 */
#ifndef GPUDEV_EWISE_MATH_H
#define GPUDEV_EWISE_MATH_H

#include <math.h>
#include <stdint.h>

#ifndef GD_HOSTDEV
#ifdef __CUDACC__
#define GD_HOSTDEV __host__ __device__ __forceinline__
#else
#define GD_HOSTDEV static inline
#endif
#endif

/* ------------------------------------------------------------------------------------------
 * int64 floor division and remainder
 *
 * C's / and % truncate; NumPy floors, so the remainder takes the divisor's sign. A zero
 * divisor gives 0 for both (NumPy's result; gpudev raises no warning for it). Division by -1
 * is negation, done in uint64 so that INT64_MIN // -1 wraps to INT64_MIN as in NumPy: the C
 * division would trap (SIGFPE on x86) and is undefined behaviour.
 * ---------------------------------------------------------------------------------------- */

GD_HOSTDEV int64_t gd_floor_div_i64(int64_t a, int64_t b)
{
    if (b == 0) return 0;
    if (b == -1) return (int64_t)(0 - (uint64_t)a);
    int64_t q = a / b;
    /* truncation rounded up when the signs differ and something remains: step down */
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

GD_HOSTDEV int64_t gd_mod_i64(int64_t a, int64_t b)
{
    if (b == 0 || b == -1) return 0;
    int64_t r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

/* ------------------------------------------------------------------------------------------
 * float floor division and remainder: NumPy's npy_divmod, step for step
 *
 * fmod is exact; (a - mod) / b is then very nearly an integer, which is snapped to the nearest
 * one. Zeros take the sign NumPy gives them (the remainder the divisor's, the quotient that of
 * a / b); a zero divisor gives a / b and fmod(a, 0) (inf or NaN, and NaN); NaN and inf go
 * through the same arithmetic as in NumPy (floor_divide(-1, inf) is -1, remainder(-1, inf)
 * is inf).
 * ---------------------------------------------------------------------------------------- */

#define GD_DEFINE_DIVMOD(S, T, FMOD, FLOOR, COPYSIGN)                                            \
    GD_HOSTDEV T gd_divmod_##S(T a, T b, T *modulus)                                             \
    {                                                                                            \
        T mod = FMOD(a, b);                                                                      \
        if (!b) {                                                                                \
            *modulus = mod;                                                                      \
            return a / b;                                                                        \
        }                                                                                        \
        T div = (a - mod) / b;                                                                   \
        if (mod) {                                                                               \
            if ((b < 0) != (mod < 0)) {                                                          \
                mod += b;                                                                        \
                div -= (T)1;                                                                     \
            }                                                                                    \
        } else {                                                                                 \
            mod = COPYSIGN((T)0, b);                                                             \
        }                                                                                        \
        T floordiv;                                                                              \
        if (div) {                                                                               \
            floordiv = FLOOR(div);                                                               \
            if (div - floordiv > (T)0.5) floordiv += (T)1;                                       \
        } else {                                                                                 \
            floordiv = COPYSIGN((T)0, a / b);                                                    \
        }                                                                                        \
        *modulus = mod;                                                                          \
        return floordiv;                                                                         \
    }                                                                                            \
    GD_HOSTDEV T gd_floor_div_##S(T a, T b)                                                      \
    {                                                                                            \
        T mod;                                                                                   \
        return gd_divmod_##S(a, b, &mod);                                                        \
    }                                                                                            \
    GD_HOSTDEV T gd_mod_##S(T a, T b)                                                            \
    {                                                                                            \
        T mod;                                                                                   \
        gd_divmod_##S(a, b, &mod);                                                               \
        return mod;                                                                              \
    }

GD_DEFINE_DIVMOD(f32, float, fmodf, floorf, copysignf)
GD_DEFINE_DIVMOD(f64, double, fmod, floor, copysign)
#undef GD_DEFINE_DIVMOD

/* ------------------------------------------------------------------------------------------
 * sigmoid: 1 / (1 + exp(-x)) for x >= 0 and exp(x) / (1 + exp(x)) below, so exp only ever
 * sees arguments <= 0 and cannot overflow; NaN stays NaN.
 * ---------------------------------------------------------------------------------------- */

GD_HOSTDEV float gd_sigmoid_f32(float x)
{
    if (x >= 0.0f) return 1.0f / (1.0f + expf(-x));
    float e = expf(x);
    return e / (1.0f + e);
}

GD_HOSTDEV double gd_sigmoid_f64(double x)
{
    if (x >= 0.0) return 1.0 / (1.0 + exp(-x));
    double e = exp(x);
    return e / (1.0 + e);
}

/* ------------------------------------------------------------------------------------------
 * the C library's functions, one name per operation and dtype: gd_ew_cos_f32 is cosf,
 * gd_ew_cos_f64 is cos. The C library (and CUDA's device library, which keeps to C99's Annex F for these)
 * already gives what the array API standard asks of special values: NaN in, NaN out; signed
 * zeros kept by the odd functions (sin(-0) is -0); acosh(x < 1), log1p(x < -1) NaN;
 * atanh(+-1) and log1p(-1) infinite; expm1(-inf) -1. round is rint: halfway cases go to the
 * even neighbour (the default rounding mode), as the standard and NumPy round.
 * ---------------------------------------------------------------------------------------- */

#define GD_DEFINE_LIBM_UNARY(NAME, F)                                                            \
    GD_HOSTDEV float gd_ew_##NAME##_f32(float x) { return F##f(x); }                             \
    GD_HOSTDEV double gd_ew_##NAME##_f64(double x) { return F(x); }
#define GD_DEFINE_LIBM_BINARY(NAME, F)                                                           \
    GD_HOSTDEV float gd_ew_##NAME##_f32(float x, float y) { return F##f(x, y); }                 \
    GD_HOSTDEV double gd_ew_##NAME##_f64(double x, double y) { return F(x, y); }

GD_DEFINE_LIBM_UNARY(acos, acos)
GD_DEFINE_LIBM_UNARY(acosh, acosh)
GD_DEFINE_LIBM_UNARY(asin, asin)
GD_DEFINE_LIBM_UNARY(asinh, asinh)
GD_DEFINE_LIBM_UNARY(atan, atan)
GD_DEFINE_LIBM_UNARY(atanh, atanh)
GD_DEFINE_LIBM_UNARY(cos, cos)
GD_DEFINE_LIBM_UNARY(cosh, cosh)
GD_DEFINE_LIBM_UNARY(sin, sin)
GD_DEFINE_LIBM_UNARY(sinh, sinh)
GD_DEFINE_LIBM_UNARY(tan, tan)
GD_DEFINE_LIBM_UNARY(log1p, log1p)
GD_DEFINE_LIBM_UNARY(expm1, expm1)
GD_DEFINE_LIBM_UNARY(log2, log2)
GD_DEFINE_LIBM_UNARY(log10, log10)
GD_DEFINE_LIBM_UNARY(ceil, ceil)
GD_DEFINE_LIBM_UNARY(floor, floor)
GD_DEFINE_LIBM_UNARY(trunc, trunc)
GD_DEFINE_LIBM_UNARY(round, rint)
GD_DEFINE_LIBM_BINARY(atan2, atan2)
GD_DEFINE_LIBM_BINARY(copysign, copysign)
GD_DEFINE_LIBM_BINARY(nextafter, nextafter)
#undef GD_DEFINE_LIBM_UNARY
#undef GD_DEFINE_LIBM_BINARY

/* integers are already rounded */
GD_HOSTDEV int64_t gd_ew_ceil_i64(int64_t x) { return x; }
GD_HOSTDEV int64_t gd_ew_floor_i64(int64_t x) { return x; }
GD_HOSTDEV int64_t gd_ew_trunc_i64(int64_t x) { return x; }
GD_HOSTDEV int64_t gd_ew_round_i64(int64_t x) { return x; }

/* ------------------------------------------------------------------------------------------
 * sign: -1, 0 or 1; both zeros give +0 and NaN stays NaN (the standard's special cases and
 * NumPy's results). For int64 it is (x > 0) - (x < 0).
 * ---------------------------------------------------------------------------------------- */

GD_HOSTDEV float gd_ew_sign_f32(float x) { return x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : x == 0.0f ? 0.0f : x; }
GD_HOSTDEV double gd_ew_sign_f64(double x) { return x > 0.0 ? 1.0 : x < 0.0 ? -1.0 : x == 0.0 ? 0.0 : x; }
GD_HOSTDEV int64_t gd_ew_sign_i64(int64_t x) { return (int64_t)(x > 0) - (int64_t)(x < 0); }

/* ------------------------------------------------------------------------------------------
 * logaddexp: log(exp(x) + exp(y)) as NumPy's npy_logaddexp computes it, the larger operand plus
 * log1p(exp(-|x - y|)), so exp never overflows. Equal operands take their own branch, which is
 * what keeps logaddexp(inf, inf) at inf (x - y would be NaN) and logaddexp(-inf, -inf) at -inf;
 * a NaN in either fails both comparisons and comes out as x - y, a NaN.
 * ---------------------------------------------------------------------------------------- */

#define GD_DEFINE_LOGADDEXP(S, T, LOG1P, EXP)                                                    \
    GD_HOSTDEV T gd_ew_logaddexp_##S(T x, T y)                                                      \
    {                                                                                            \
        if (x == y) return x + (T)0.693147180559945309417232121458176568;                        \
        const T d = x - y;                                                                       \
        if (d > 0) return x + LOG1P(EXP(-d));                                                    \
        if (d <= 0) return y + LOG1P(EXP(d));                                                    \
        return d;                                                                                \
    }
GD_DEFINE_LOGADDEXP(f32, float, log1pf, expf)
GD_DEFINE_LOGADDEXP(f64, double, log1p, exp)
#undef GD_DEFINE_LOGADDEXP

/* ------------------------------------------------------------------------------------------
 * int64 shifts, as NumPy's npy_lshift / npy_rshift: a count of 64 or more, or a negative one
 * (read as unsigned, it is huge), shifts every bit out: 0, or -1 for a negative x shifted
 * right. C leaves those counts undefined, and a left shift of a negative number too, so the
 * left shift is done in uint64 and the right shift of a negative x as ~(~x >> n), which is
 * the arithmetic shift written without relying on the compiler's choice.
 * ---------------------------------------------------------------------------------------- */

GD_HOSTDEV int64_t gd_ew_bitwise_left_shift_i64(int64_t x, int64_t n)
{
    return (uint64_t)n < 64 ? (int64_t)((uint64_t)x << n) : 0;
}

GD_HOSTDEV int64_t gd_ew_bitwise_right_shift_i64(int64_t x, int64_t n)
{
    if ((uint64_t)n >= 64) return x < 0 ? -1 : 0;
    return x < 0 ? ~(~x >> n) : x >> n;
}

#endif /* GPUDEV_EWISE_MATH_H */
