/* ewise_math.h - the scalar function of every elementwise operation, which the CPU and the
 * CUDA backends both run, so that every device computes the same thing: one function per row
 * of the op lists (tables.h) and dtype of its TYPES, named gd_ew_<name>_<dtype>: f32 (float),
 * f64 (double), i64 (int64_t), i32 (int32_t), b (bool as a byte: any nonzero byte is true, as
 * NumPy reads memory it shares). The backends' kernels and launchers are generated from the op lists and
 * call these; a row without its functions fails to compile in both.
 *
 * Plain C11 that also compiles as CUDA C++ (the functions are then __host__ __device__). The
 * float functions are written once (GD_FLOAT_OPS) and come in f32 and f64 spellings, so that
 * float32 stays in float32, as NumPy's loops do; CUDA's libm may round its functions
 * differently from the C library's (within the conformance test's ulps).
 */
#ifndef GPUDEV_EWISE_MATH_H
#define GPUDEV_EWISE_MATH_H

#include <math.h>
#include <stdint.h>

#include "hostdev.h"

#include "ewise_exp_log.h" /* exp and log that vectorize */

/* ------------------------------------------------------------------------------------------
 * integer floor division and remainder (int64 and int32, written once)
 *
 * C's / and % truncate; NumPy floors, so the remainder takes the divisor's sign. A zero
 * divisor gives 0 for both (NumPy's result; gpudev raises no warning for it). Division by -1
 * is negation, done unsigned so that INT64_MIN // -1 wraps to INT64_MIN (INT32_MIN // -1 to
 * INT32_MIN) as in NumPy: the C division would trap (SIGFPE on x86) and is undefined
 * behaviour.
 * ---------------------------------------------------------------------------------------- */

#define GD_DEFINE_INT_DIVMOD(S, T, U)                                                            \
    GD_HOSTDEV T gd_ew_floor_divide_##S(T a, T b)                                                \
    {                                                                                            \
        if (b == 0) return 0;                                                                    \
        if (b == -1) return (T)(U)(0 - (U)a);                                                    \
        T q = a / b;                                                                             \
        /* truncation rounded up when the signs differ and something remains: step down */      \
        return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;                                 \
    }                                                                                            \
    GD_HOSTDEV T gd_ew_remainder_##S(T a, T b)                                                   \
    {                                                                                            \
        if (b == 0 || b == -1) return 0;                                                         \
        T r = a % b;                                                                             \
        return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;                                     \
    }
GD_DEFINE_INT_DIVMOD(i64, int64_t, uint64_t)
GD_DEFINE_INT_DIVMOD(i32, int32_t, uint32_t)
#undef GD_DEFINE_INT_DIVMOD

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
    GD_HOSTDEV T gd_ew_floor_divide_##S(T a, T b)                                                      \
    {                                                                                            \
        T mod;                                                                                   \
        return gd_divmod_##S(a, b, &mod);                                                        \
    }                                                                                            \
    GD_HOSTDEV T gd_ew_remainder_##S(T a, T b)                                                            \
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
 * sees arguments <= 0 and cannot overflow; NaN stays NaN. Both are computed and one chosen,
 * so that the loop vectorizes (ewise_exp_log.h).
 *
 * float32 does in float64 only what needs its digits, and the rest at float32's twice as many
 * lanes: in float32 alone the exp, the sum and the quotient would each round, up to 2.2 ulps in
 * all (no fused multiply-add may save a rounding: both backends build without contraction).
 * With a = -|x| (clamped at -104, where float32's sigmoid is 0 already) = k ln2 + r, |r| <=
 * ln2/2: k, r = r_hi + r_lo (ln2's high part has 15 bits, so k ln2_hi and r_hi are exact) and
 * the small part of e^r, r^3 p(r) (below 0.0075, so float32's roundings cost 2^-31 of e^r), in
 * float32; then 1 + r + r^2 / 2 + r^3 p(r) from the exact r_hi + r_lo, the power of two, the
 * quotient and the product in float64. p is a fit of (e^r - 1 - r - r^2/2) / r^3 at Chebyshev
 * nodes, within 2^-30 of e^r. Of every 7th bit pattern in [-110, 110] (3.2e8) none errs by
 * more than 0.53 ulp, and 19397 round otherwise than the correctly rounded value (the float64
 * path before this: 2, 0.50 ulp); it runs LeNet's sigmoids 1.3x as fast (PyTorch's, with fused
 * multiply-adds, about 2.4x as fast still).
 * ---------------------------------------------------------------------------------------- */

GD_HOSTDEV float gd_sigmoid_f32(float x)
{
    const float ln2_hi = 0x1.62e4p-1f, ln2_lo = 0x1.7f7d1cp-20f;
    float a = -gd_select_f32(fabsf(x) > 104.0f, 104.0f, fabsf(x));
    float k = (a * 1.44269504f + GD_SHIFT_F32) - GD_SHIFT_F32;
    float r_hi = a - k * ln2_hi, r_lo = -(k * ln2_lo), r = r_hi + r_lo;
    float p = 0x1.a124e8p-13f;
    p = p * r + 0x1.6d11p-10f;
    p = p * r + 0x1.1110ep-7f;
    p = p * r + 0x1.55551ap-5f;
    p = p * r + 0x1.555556p-3f;
    double rd = (double)r_hi + (double)r_lo, r3p = (double)(((r * r) * r) * p);
    double e = (1.0 + (rd + ((rd * rd) * 0.5 + r3p))) * gd_pow2_f64((double)k), q = 1.0 / (1.0 + e);
    return gd_select_f32(x >= 0.0f, (float)q, (float)(e * q));
}

GD_HOSTDEV double gd_sigmoid_f64(double x)
{
    double e = gd_exp_f64(-fabs(x));
    return gd_select_f64(x >= 0.0, 1.0 / (1.0 + e), e / (1.0 + e));
}

/* ------------------------------------------------------------------------------------------
 * acosh for float32: log(x + sqrt(x - 1) sqrt(x + 1)) in float64, with gpudev's own log, instead
 * of the C library's acoshf, whose accuracy is the platform's: mingw-w64's acoshf errs by 6.5
 * ulps near 1 (where acosh(x) ~ sqrt(2 (x - 1)) is steep), glibc's by up to 2. In float64 each
 * step rounds by about 1e-16 relative; near 1, x - 1 is exact and x + sqrt(...) >= 1 + 4.9e-4
 * (x >= 1 + 2^-23), so its rounding costs at most 2.3e-13 of the result: the float32 result is
 * the correctly rounded one but in rare ties. sqrt is IEEE's, correctly rounded on every
 * device. x < 1 and -inf take the square root of a negative, NaN: two roots, as the product
 * (x - 1)(x + 1) is positive again below -1, where its root would cancel x (to 0, log -inf,
 * from x < -6.7e7 on). NaN stays NaN, inf stays inf, and acosh(1) is +0. The loop vectorizes
 * (no call), unlike one acoshf per element.
 * ---------------------------------------------------------------------------------------- */

GD_HOSTDEV float gd_acosh_f32(float x)
{
    double d = (double)x;
    return (float)gd_log_f64(d + sqrt(d - 1.0) * sqrt(d + 1.0));
}

GD_HOSTDEV double gd_acosh_f64(double x) { return acosh(x); }

/* ------------------------------------------------------------------------------------------
 * logaddexp: log(exp(x) + exp(y)) as NumPy's npy_logaddexp computes it, the larger operand plus
 * log1p(exp(-|x - y|)), so exp never overflows. Equal operands take their own branch, which is
 * what keeps logaddexp(inf, inf) at inf (x - y would be NaN) and logaddexp(-inf, -inf) at -inf;
 * a NaN in either fails both comparisons and comes out as x - y, a NaN.
 * ---------------------------------------------------------------------------------------- */

#define GD_DEFINE_LOGADDEXP(S, T, LOG1P, EXP)                                                    \
    GD_HOSTDEV T gd_logaddexp_##S(T x, T y)                                                      \
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
 * float32 and float64: each function written once; M(fn) is the C library's function of the
 * dtype (expf or exp)
 *
 * The C library (and CUDA's device library, which keeps to C99's Annex F for these) gives what
 * the array API standard asks of special values: NaN in, NaN out; signed zeros kept by the odd
 * functions (sin(-0) is -0); acosh(x < 1), log1p(x < -1) NaN; atanh(+-1) and log1p(-1)
 * infinite; expm1(-inf) -1; atan2 and copysign read the signs of zeros and NaNs. round is rint:
 * halfway cases go to the even neighbour (the default rounding mode), as the standard and
 * NumPy round. sign gives +0 for both zeros and keeps NaN.
 * ---------------------------------------------------------------------------------------- */

#define GD_M_F32(fn) fn##f
#define GD_M_F64(fn) fn
#define GD_FLOAT_OPS(S, T, M)                                                                    \
    GD_HOSTDEV T gd_ew_copy_##S(T x) { return x; }                                               \
    GD_HOSTDEV T gd_ew_negative_##S(T x) { return -x; }                                          \
    GD_HOSTDEV T gd_ew_abs_##S(T x) { return M(fabs)(x); }                                       \
    GD_HOSTDEV T gd_ew_relu_##S(T x) { return (x > 0 || x != x) ? x : (T)0; }                    \
    GD_HOSTDEV T gd_ew_exp_##S(T x) { return gd_exp_##S(x); }                                        \
    GD_HOSTDEV T gd_ew_log_##S(T x) { return gd_log_##S(x); }                                        \
    GD_HOSTDEV T gd_ew_sqrt_##S(T x) { return M(sqrt)(x); }                                      \
    GD_HOSTDEV T gd_ew_tanh_##S(T x) { return gd_tanh_##S(x); }                                      \
    GD_HOSTDEV T gd_ew_square_##S(T x) { return x * x; }                                         \
    GD_HOSTDEV T gd_ew_sigmoid_##S(T x) { return gd_sigmoid_##S(x); }                            \
    GD_HOSTDEV T gd_ew_add_##S(T x, T y) { return x + y; }                                       \
    GD_HOSTDEV T gd_ew_subtract_##S(T x, T y) { return x - y; }                                  \
    GD_HOSTDEV T gd_ew_multiply_##S(T x, T y) { return x * y; }                                  \
    GD_HOSTDEV T gd_ew_divide_##S(T x, T y) { return x / y; }                                    \
    GD_HOSTDEV T gd_ew_power_##S(T x, T y) { return M(pow)(x, y); }                              \
    GD_HOSTDEV T gd_ew_hypot_##S(T x, T y) { return M(hypot)(x, y); }                            \
    GD_HOSTDEV T gd_ew_acos_##S(T x) { return M(acos)(x); }                                      \
    GD_HOSTDEV T gd_ew_acosh_##S(T x) { return gd_acosh_##S(x); }                                \
    GD_HOSTDEV T gd_ew_asin_##S(T x) { return M(asin)(x); }                                      \
    GD_HOSTDEV T gd_ew_asinh_##S(T x) { return M(asinh)(x); }                                    \
    GD_HOSTDEV T gd_ew_atan_##S(T x) { return M(atan)(x); }                                      \
    GD_HOSTDEV T gd_ew_atanh_##S(T x) { return M(atanh)(x); }                                    \
    GD_HOSTDEV T gd_ew_cos_##S(T x) { return M(cos)(x); }                                        \
    GD_HOSTDEV T gd_ew_cosh_##S(T x) { return M(cosh)(x); }                                      \
    GD_HOSTDEV T gd_ew_sin_##S(T x) { return M(sin)(x); }                                        \
    GD_HOSTDEV T gd_ew_sinh_##S(T x) { return M(sinh)(x); }                                      \
    GD_HOSTDEV T gd_ew_tan_##S(T x) { return M(tan)(x); }                                        \
    GD_HOSTDEV T gd_ew_log1p_##S(T x) { return M(log1p)(x); }                                    \
    GD_HOSTDEV T gd_ew_expm1_##S(T x) { return M(expm1)(x); }                                    \
    GD_HOSTDEV T gd_ew_log2_##S(T x) { return M(log2)(x); }                                      \
    GD_HOSTDEV T gd_ew_log10_##S(T x) { return M(log10)(x); }                                    \
    GD_HOSTDEV T gd_ew_exp2_##S(T x) { return M(exp2)(x); }                                      \
    GD_HOSTDEV T gd_ew_ceil_##S(T x) { return M(ceil)(x); }                                      \
    GD_HOSTDEV T gd_ew_floor_##S(T x) { return M(floor)(x); }                                    \
    GD_HOSTDEV T gd_ew_trunc_##S(T x) { return M(trunc)(x); }                                    \
    GD_HOSTDEV T gd_ew_round_##S(T x) { return M(rint)(x); }                                     \
    GD_HOSTDEV T gd_ew_sign_##S(T x) { return x > 0 ? (T)1 : x < 0 ? (T)-1 : x == 0 ? (T)0 : x; } \
    GD_HOSTDEV T gd_ew_atan2_##S(T x, T y) { return M(atan2)(x, y); }                            \
    GD_HOSTDEV T gd_ew_copysign_##S(T x, T y) { return M(copysign)(x, y); }                      \
    GD_HOSTDEV T gd_ew_nextafter_##S(T x, T y) { return M(nextafter)(x, y); }                    \
    GD_HOSTDEV T gd_ew_logaddexp_##S(T x, T y) { return gd_logaddexp_##S(x, y); }                \
    /* sigmoid's backward, y = sigmoid's result, g its gradient: the bits of 1 - y, times y, */  \
    /* times g, as three passes round them */                                                    \
    GD_HOSTDEV T gd_ew_sigmoid_grad_##S(T y, T g) { return ((T)1 - y) * y * g; }                 \
    /* NaN-propagating, written so that they vectorize to a compare and a blend */               \
    GD_HOSTDEV T gd_ew_maximum_##S(T x, T y) { return (x > y || x != x) ? x : y; }               \
    GD_HOSTDEV T gd_ew_minimum_##S(T x, T y) { return (x < y || x != x) ? x : y; }               \
    GD_COMPARE_OPS(S, T, GD_SAME)

/* Comparisons give 0 or 1 for every dtype; NaN compares false except with != */
#define GD_SAME(x) (x)
#define GD_TRUTH(x) ((x) != 0)
#define GD_COMPARE_OPS(S, T, V)                                                                  \
    GD_HOSTDEV uint8_t gd_ew_equal_##S(T x, T y) { return V(x) == V(y); }                        \
    GD_HOSTDEV uint8_t gd_ew_not_equal_##S(T x, T y) { return V(x) != V(y); }                    \
    GD_HOSTDEV uint8_t gd_ew_less_##S(T x, T y) { return V(x) < V(y); }                          \
    GD_HOSTDEV uint8_t gd_ew_less_equal_##S(T x, T y) { return V(x) <= V(y); }                   \
    GD_HOSTDEV uint8_t gd_ew_greater_##S(T x, T y) { return V(x) > V(y); }                       \
    GD_HOSTDEV uint8_t gd_ew_greater_equal_##S(T x, T y) { return V(x) >= V(y); }

GD_FLOAT_OPS(f32, float, GD_M_F32)
GD_FLOAT_OPS(f64, double, GD_M_F64)

/* ------------------------------------------------------------------------------------------
 * integers, int64 and int32 written once (S the suffix, T the type, U its unsigned twin,
 * BITS its width): arithmetic wraps, as NumPy's does, computed in U where overflow is defined
 * (the cast back keeps the bits)
 *
 * Shifts, as NumPy's npy_lshift / npy_rshift: a count of BITS or more, or a negative one (read
 * as unsigned, it is huge), shifts every bit out: 0, or -1 for a negative x shifted right. C
 * leaves those counts undefined, and a left shift of a negative number too, so the left shift
 * is done in U and the right shift of a negative x as ~(~x >> n), the arithmetic shift
 * written without relying on the compiler's choice.
 *
 * power: base ** exp by squaring, wrapping like NumPy. The core rejects negative exponents;
 * they get the truncated value of the exact result (0 unless base is 1 or -1).
 * ---------------------------------------------------------------------------------------- */

#define GD_INT_OPS(S, T, U, BITS)                                                                \
    GD_HOSTDEV T gd_ew_copy_##S(T x) { return x; }                                               \
    GD_HOSTDEV T gd_ew_negative_##S(T x) { return (T)(U)(0 - (U)x); }                            \
    GD_HOSTDEV T gd_ew_abs_##S(T x) { return x < 0 ? (T)(U)(0 - (U)x) : x; }                     \
    GD_HOSTDEV T gd_ew_relu_##S(T x) { return x > 0 ? x : 0; }                                   \
    GD_HOSTDEV T gd_ew_square_##S(T x) { return (T)(U)((U)x * (U)x); }                           \
    GD_HOSTDEV T gd_ew_invert_##S(T x) { return (T)~x; }                                         \
    GD_HOSTDEV T gd_ew_add_##S(T x, T y) { return (T)(U)((U)x + (U)y); }                         \
    GD_HOSTDEV T gd_ew_subtract_##S(T x, T y) { return (T)(U)((U)x - (U)y); }                    \
    GD_HOSTDEV T gd_ew_multiply_##S(T x, T y) { return (T)(U)((U)x * (U)y); }                    \
    GD_HOSTDEV T gd_ew_maximum_##S(T x, T y) { return x > y ? x : y; }                           \
    GD_HOSTDEV T gd_ew_minimum_##S(T x, T y) { return x < y ? x : y; }                           \
    GD_HOSTDEV T gd_ew_bitwise_and_##S(T x, T y) { return x & y; }                               \
    GD_HOSTDEV T gd_ew_bitwise_or_##S(T x, T y) { return x | y; }                                \
    GD_HOSTDEV T gd_ew_bitwise_xor_##S(T x, T y) { return x ^ y; }                               \
    GD_COMPARE_OPS(S, T, GD_SAME)                                                                \
    /* integers are already rounded */                                                           \
    GD_HOSTDEV T gd_ew_ceil_##S(T x) { return x; }                                               \
    GD_HOSTDEV T gd_ew_floor_##S(T x) { return x; }                                              \
    GD_HOSTDEV T gd_ew_trunc_##S(T x) { return x; }                                              \
    GD_HOSTDEV T gd_ew_round_##S(T x) { return x; }                                              \
    GD_HOSTDEV T gd_ew_sign_##S(T x) { return (T)((T)(x > 0) - (T)(x < 0)); }                    \
    GD_HOSTDEV T gd_ew_bitwise_left_shift_##S(T x, T n)                                          \
    {                                                                                            \
        return (U)n < (BITS) ? (T)(U)((U)x << n) : 0;                                            \
    }                                                                                            \
    GD_HOSTDEV T gd_ew_bitwise_right_shift_##S(T x, T n)                                         \
    {                                                                                            \
        if ((U)n >= (BITS)) return x < 0 ? -1 : 0;                                               \
        return x < 0 ? (T)~(~x >> n) : (T)(x >> n);                                              \
    }                                                                                            \
    GD_HOSTDEV T gd_ew_power_##S(T base, T exp)                                                  \
    {                                                                                            \
        if (exp < 0) return base == 1 ? 1 : base == -1 ? ((exp & 1) ? -1 : 1) : 0;               \
        U b = (U)base, r = 1;                                                                    \
        for (U e = (U)exp; e; e >>= 1) {                                                         \
            if (e & 1) r *= b;                                                                   \
            b *= b;                                                                              \
        }                                                                                        \
        return (T)r;                                                                             \
    }

GD_INT_OPS(i64, int64_t, uint64_t, 64)
GD_INT_OPS(i32, int32_t, uint32_t, 32)

/* ------------------------------------------------------------------------------------------
 * bool: bitwise operations are the logical ones and ~ is not
 * ---------------------------------------------------------------------------------------- */

GD_HOSTDEV uint8_t gd_ew_copy_b(uint8_t x) { return x; }
GD_HOSTDEV uint8_t gd_ew_invert_b(uint8_t x) { return (uint8_t)(x == 0); }
GD_HOSTDEV uint8_t gd_ew_bitwise_and_b(uint8_t x, uint8_t y) { return (uint8_t)(GD_TRUTH(x) & GD_TRUTH(y)); }
GD_HOSTDEV uint8_t gd_ew_bitwise_or_b(uint8_t x, uint8_t y) { return (uint8_t)(GD_TRUTH(x) | GD_TRUTH(y)); }
GD_HOSTDEV uint8_t gd_ew_bitwise_xor_b(uint8_t x, uint8_t y) { return (uint8_t)(GD_TRUTH(x) ^ GD_TRUTH(y)); }
GD_COMPARE_OPS(b, uint8_t, GD_TRUTH)

#endif /* GPUDEV_EWISE_MATH_H */
