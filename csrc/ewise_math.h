/* ewise_math.h - scalar math that the CPU and the CUDA backends both run, so that every device
 * gives the same bits: NumPy's floor division and remainder (npy_divmod for floats, Python's
 * floor rule for int64) and a sigmoid that never overflows.
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

#endif /* GPUDEV_EWISE_MATH_H */
