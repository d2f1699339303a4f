/* ewise_exp_log.h - exp and log for float32 and float64, written so that a compiler turns a
 * loop over them into vector code; tanh too, and ewise_math.h's sigmoid calls exp.
 *
 * The C library's expf, logf and tanh are one call per element: on the CPU that made gd.exp
 * 5-6x slower than NumPy's vectorized loops and tanh 8-40x. These bodies are straight-line
 * arithmetic on the value and its bits: no branch, no table, no call; special values are
 * chosen with gd_select (a mask of the bits), because GCC does not vectorize a float ?: whose
 * operands it may not evaluate early (they could raise a floating-point flag). A CUDA
 * thread runs the same arithmetic, so every device computes the same values: the CUDA backend
 * is compiled with -fmad=false and the CPU with -ffp-contract=off (setup.py), as a fused
 * multiply-add would round once where the other device rounds twice (bit equality on a real
 * GPU is what tools/gpu_hw_check.py counts).
 *
 * Accuracy: below 1 ulp everywhere, measured against long double (tests/test_exp_log.py
 * sweeps each float32 range and samples float64; NumPy's own float32 exp and log err by up
 * to 2.3 and 3.4 ulps); special values are the C library's: exp(-inf) 0, exp(inf) inf,
 * overflow to inf, underflow through the subnormals to 0; log(0) -inf, log(x < 0) NaN,
 * log(inf) inf; tanh(+-0) +-0, tanh(+-inf) +-1; NaN in, NaN out.
 *
 * Method:
 *   exp: x = k ln2 + r with |r| <= ln2/2; ln2 = hi + lo, hi with trailing zero bits so that
 *        k hi and x - k hi are exact; e^r = 1 + r + r^2 p(r) (p: Cephes's expf fit, Taylor
 *        for float64), summed with 1 + r kept exact in two parts so that the only rounding
 *        that matters is the last; then times 2^k as two powers of two, so that results
 *        down in the subnormals round once.
 *   log: x = 2^k m with m in [sqrt(1/2), sqrt(2)), f = m - 1, s = f / (2 + f); log(1 + f) =
 *        2s + s R(s^2) with fdlibm's R, rearranged around f^2 / 2 as fdlibm's e_log.c does;
 *        plus k ln2 in two parts.
 *   tanh: from e^(2|x|) - 1 without cancellation (below).
 */
#ifndef GPUDEV_EWISE_EXP_LOG_H
#define GPUDEV_EWISE_EXP_LOG_H

#include <stdint.h>
#include <string.h>

#include "hostdev.h"

/* the bits of a float and back: memcpy is how C and CUDA C++ both say it without aliasing */
GD_HOSTDEV uint32_t gd_bits_f32(float x) { uint32_t u; memcpy(&u, &x, sizeof u); return u; }
GD_HOSTDEV float gd_from_bits_f32(uint32_t u) { float x; memcpy(&x, &u, sizeof x); return x; }
GD_HOSTDEV uint64_t gd_bits_f64(double x) { uint64_t u; memcpy(&u, &x, sizeof u); return u; }
GD_HOSTDEV double gd_from_bits_f64(uint64_t u) { double x; memcpy(&x, &u, sizeof x); return x; }

/* c ? a : b through a mask of the bits: both are computed, so the loop stays straight */
GD_HOSTDEV float gd_select_f32(int c, float a, float b)
{
    uint32_t m = (uint32_t)0 - (uint32_t)(c != 0);
    return gd_from_bits_f32((m & gd_bits_f32(a)) | (~m & gd_bits_f32(b)));
}
GD_HOSTDEV double gd_select_f64(int c, double a, double b)
{
    uint64_t m = (uint64_t)0 - (uint64_t)(c != 0);
    return gd_from_bits_f64((m & gd_bits_f64(a)) | (~m & gd_bits_f64(b)));
}

/* Round to an integer (ties to even) by adding 1.5 * 2^(mantissa bits): exact for |x| < 2^22
 * (float32) or 2^51, and the integer is then also in the sum's low bits (gd_pow2 reads it). */
#define GD_SHIFT_F32 0x1.8p23f
#define GD_SHIFT_F64 0x1.8p52

/* 2^k for an integer-valued k with 2^k a normal number: its exponent field is the low bits
 * of k + bias + shift, shifted into place */
GD_HOSTDEV float gd_pow2_f32(float k) { return gd_from_bits_f32(gd_bits_f32(k + (127.0f + GD_SHIFT_F32)) << 23); }
GD_HOSTDEV double gd_pow2_f64(double k) { return gd_from_bits_f64(gd_bits_f64(k + (1023.0 + GD_SHIFT_F64)) << 52); }

/* y * 2^k for an integer-valued k with |k| < 2 * 127 (float32) or 2 * 1023: as two factors of
 * 2^(k/2), each a normal number, so a subnormal result is rounded once, at the last multiply,
 * and 2^128 or 2^1024 overflows to inf as it should */
GD_HOSTDEV float gd_scale2_f32(float y, float k)
{
    float k1 = (k * 0.5f + GD_SHIFT_F32) - GD_SHIFT_F32;
    return y * gd_pow2_f32(k1) * gd_pow2_f32(k - k1);
}
GD_HOSTDEV double gd_scale2_f64(double y, double k)
{
    double k1 = (k * 0.5 + GD_SHIFT_F64) - GD_SHIFT_F64;
    return y * gd_pow2_f64(k1) * gd_pow2_f64(k - k1);
}

/* ------------------------------------------------------------------------------------------
 * exp. Arguments are first clamped to where the result is still inf or 0 (keeping NaN, for
 * which the comparisons are false), so k stays in gd_scale2's range.
 * ---------------------------------------------------------------------------------------- */

GD_HOSTDEV float gd_exp_f32(float x)
{
    const float ln2_hi = 0.693359375f, ln2_lo = -2.12194440e-4f; /* hi: 9 bits, k hi exact */
    float xc = gd_select_f32(x > 89.0f, 89.0f, x);                /* e^88.73 overflows */
    xc = gd_select_f32(xc < -104.0f, -104.0f, xc);                /* e^-103.98 rounds to 0 */
    float k = (xc * 1.44269504f + GD_SHIFT_F32) - GD_SHIFT_F32;
    float r_hi = xc - k * ln2_hi, r_lo = -(k * ln2_lo), r = r_hi + r_lo;
    float p = 1.9875691500e-4f; /* (e^r - 1 - r) / r^2 */
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    float y_hi = 1.0f + r_hi, y_lo = (1.0f - y_hi) + r_hi; /* 1 + r_hi exactly */
    return gd_scale2_f32(y_hi + (y_lo + (r_lo + (r * r) * p)), k);
}

/* x = k ln2 + r_hi + r_lo, k an integer and |r_hi + r_lo| <= ln2/2 (x already clamped) */
GD_HOSTDEV double gd_exp_reduce_f64(double x, double *r_hi, double *r_lo)
{
    const double ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10;
    double k = (x * 1.44269504088896338700 + GD_SHIFT_F64) - GD_SHIFT_F64;
    *r_hi = x - k * ln2_hi;
    *r_lo = -(k * ln2_lo);
    return k;
}

/* The last steps of Horner's scheme for (e^r - 1 - r) / r^2's Taylor polynomial: p holds the
 * sum so far, from the top coefficient down to 1 / 10!. */
GD_HOSTDEV double gd_exp_poly_tail_f64(double p, double r)
{
    p = p * r + 1.0 / 362880.0;
    p = p * r + 1.0 / 40320.0;
    p = p * r + 1.0 / 5040.0;
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    return p * r + 0.5;
}

/* (e^r - 1 - r) / r^2 for |r| <= ln2/2: Taylor to r^13 / 13!, whose remainder is below 2^-60 */
GD_HOSTDEV double gd_exp_poly_f64(double r)
{
    double p = 1.0 / 6227020800.0;
    p = p * r + 1.0 / 479001600.0;
    p = p * r + 1.0 / 39916800.0;
    p = p * r + 1.0 / 3628800.0;
    return gd_exp_poly_tail_f64(p, r);
}

GD_HOSTDEV double gd_exp_f64(double x)
{
    double xc = gd_select_f64(x > 710.0, 710.0, x);     /* e^709.79 overflows */
    xc = gd_select_f64(xc < -746.0, -746.0, xc);        /* e^-745.14 rounds to 0 */
    double r_hi, r_lo, k = gd_exp_reduce_f64(xc, &r_hi, &r_lo), r = r_hi + r_lo;
    double y_hi = 1.0 + r_hi, y_lo = (1.0 - y_hi) + r_hi;
    return gd_scale2_f64(y_hi + (y_lo + (r_lo + (r * r) * gd_exp_poly_f64(r))), k);
}

/* ------------------------------------------------------------------------------------------
 * tanh(x) = m / (m + 2) with m = e^(2|x|) - 1, and x's sign. m is 2^k (1 + q) - 1, summed as
 * (2^k - 1) + 2^k q with q = e^r - 1: no 1 + q is ever rounded, so a small m keeps all its
 * digits (glibc's tanh takes m from expm1 likewise). In float64 the sums keep their rounding
 * errors to correct the quotient with (without them tanh erred by up to 2.3 ulps). From
 * |x| = 19.1 on tanh rounds to +-1 (the clamp at 20 keeps k small); below 2^-28 it rounds to
 * x. float32 rounds a plain float64 quotient.
 * ---------------------------------------------------------------------------------------- */

/* s + e = a + b exactly (Knuth's TwoSum: any order of magnitudes) */
GD_HOSTDEV double gd_two_sum_f64(double a, double b, double *e)
{
    double s = a + b, b_part = s - a;
    *e = (a - (s - b_part)) + (b - b_part);
    return s;
}

/* p + e = a b exactly (Dekker's product: halves of 26 bits multiply exactly, Veltkamp's split) */
GD_HOSTDEV double gd_two_product_f64(double a, double b, double *e)
{
    double p = a * b, ca = 134217729.0 * a, cb = 134217729.0 * b;
    double a_hi = ca - (ca - a), a_lo = a - a_hi, b_hi = cb - (cb - b), b_lo = b - b_hi;
    *e = (((a_hi * b_hi - p) + a_hi * b_lo) + a_lo * b_hi) + a_lo * b_lo;
    return p;
}

/* e^z = 2^k (1 + q + q_err) for 0 <= z <= 40: q and its rounding error, and 2^k */
GD_HOSTDEV double gd_expm1_parts_f64(double z, double *two_k, double *q_err)
{
    double r_hi, r_lo, k = gd_exp_reduce_f64(z, &r_hi, &r_lo), r = r_hi + r_lo;
    *two_k = gd_pow2_f64(k);
    return gd_two_sum_f64(r_hi, r_lo + (r * r) * gd_exp_poly_f64(r), q_err);
}

GD_HOSTDEV double gd_tanh_f64(double x)
{
    double a = fabs(x), two_k, e0, q = gd_expm1_parts_f64(2.0 * gd_select_f64(a > 20.0, 20.0, a), &two_k, &e0);
    /* m = m_hi + m_lo and m + 2 = d + d_lo, each sum's rounding error carried along; then
     * t = (m_hi + m_lo) / (d + d_lo) to first order: t0 + (m_hi - t0 d + m_lo - t0 d_lo) / d,
     * with m_hi - t0 d, the quotient's remainder, exact. 1 / d need only be roughly right:
     * (1 - t0) / 2, or where t0 is too near 1 for that, 2^-k / (1 + q) to within q^3 */
    double e1, e2, e3, m_hi = gd_two_sum_f64(two_k - 1.0, two_k * q, &e1), m_lo = e1 + two_k * e0;
    double d = gd_two_sum_f64(m_hi, 2.0, &e2), d_lo = e2 + m_lo;
    double t0 = m_hi / d, t0_d = gd_two_product_f64(t0, d, &e3);
    double two_mk = gd_from_bits_f64(0x7fe0000000000000ull - gd_bits_f64(two_k)); /* 2^-k from 2^k's bits */
    double inv_d = gd_select_f64(d > 0x1p20, two_mk * (1.0 - q * (1.0 - q)), (1.0 - t0) * 0.5);
    double t = t0 + (((m_hi - t0_d) - e3) + (m_lo - t0 * d_lo)) * inv_d;
    return gd_select_f64(a < 0x1p-28, x, copysign(t, x));
}

/* float32 needs none of float64's corrections: m / (m + 2) in float64 errs by 2^-51 at most,
 * which float32's rounding hides (from |x| = 9.02 on, tanh rounds to +-1) */
GD_HOSTDEV float gd_tanh_f32(float x)
{
    double a = fabs((double)x), two_k, e0, q = gd_expm1_parts_f64(2.0 * gd_select_f64(a > 10.0, 10.0, a), &two_k, &e0);
    double m = (two_k - 1.0) + two_k * q;
    return gd_select_f32(fabsf(x) < 0x1p-12f, x, copysignf((float)(m / (m + 2.0)), x));
}

/* ------------------------------------------------------------------------------------------
 * log. Subnormal arguments are first scaled into the normals (and k lowered to match); the
 * reduction then reads k and m from the bits; zero, negative, inf and NaN arguments take
 * their results from the selects at the end.
 * ---------------------------------------------------------------------------------------- */

GD_HOSTDEV float gd_log_f32(float x)
{
    const float ln2_hi = 6.9313812256e-01f, ln2_lo = 9.0580006145e-06f;
    int sub = x < 0x1p-126f;
    float xs = gd_select_f32(sub, x * 0x1p23f, x);
    /* k and m with x = 2^k m, m in [sqrt(1/2), sqrt(2)): offsetting the bits by those of
     * sqrt(1/2) makes the exponent field count from there */
    uint32_t t = gd_bits_f32(xs) - 0x3f3504f3u;
    float k = (float)((int32_t)t >> 23) - 23.0f * (float)sub;
    float f = gd_from_bits_f32(gd_bits_f32(xs) - (t & 0xff800000u)) - 1.0f;
    float s = f / (2.0f + f), z = s * s, w = z * z;
    float big_r = z * (0.66666662693f + w * 0.28498786688f) + w * (0.40000972152f + w * 0.24279078841f);
    float hfsq = 0.5f * f * f;
    float y = k * ln2_hi - ((hfsq - (s * (hfsq + big_r) + k * ln2_lo)) - f);
    y = gd_select_f32(x == 0.0f, -HUGE_VALF, y);
    y = gd_select_f32(x < 0.0f, NAN, y);
    return gd_select_f32(x == HUGE_VALF || x != x, x, y);
}

GD_HOSTDEV double gd_log_f64(double x)
{
    const double ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10;
    int sub = x < 0x1p-1022;
    double xs = gd_select_f64(sub, x * 0x1p52, x);
    uint64_t t = gd_bits_f64(xs) - 0x3fe6a09e667f3bcdull;
    /* k is the top 12 bits of t read as a signed number: through GD_SHIFT's low bits, since
     * x86 before AVX-512 has no vector int64 shift right with sign, nor conversion */
    double k = gd_from_bits_f64(gd_bits_f64(GD_SHIFT_F64) + ((t >> 52) ^ 0x800u)) - (GD_SHIFT_F64 + 2048.0);
    k = k - 52.0 * (double)sub;
    double f = gd_from_bits_f64(gd_bits_f64(xs) - (t & 0xfff0000000000000ull)) - 1.0;
    double s = f / (2.0 + f), z = s * s, w = z * z;
    double t1 = w * (3.999999999940941908e-01 + w * (2.222219843214978396e-01 + w * 1.531383769920937332e-01));
    double t2 = z * (6.666666666666735130e-01 + w * (2.857142874366239149e-01 +
                w * (1.818357216161805012e-01 + w * 1.479819860511658591e-01)));
    double hfsq = 0.5 * f * f;
    double y = k * ln2_hi - ((hfsq - (s * (hfsq + (t1 + t2)) + k * ln2_lo)) - f);
    y = gd_select_f64(x == 0.0, -HUGE_VAL, y);
    y = gd_select_f64(x < 0.0, NAN, y);
    return gd_select_f64(x == HUGE_VAL || x != x, x, y);
}

#endif
