/* philox.h - Philox4x32-10, the counter-based generator behind rand and randn, written once
 * for the C backend and the CUDA backend, so that one seed gives the same numbers on every
 * device, as far as their arithmetic allows:
 *   rand   the same bits everywhere: integer arithmetic, then scalings by powers of two,
 *          which are exact (also where the compiler fuses them into an FMA);
 *   randn  not bit for bit: its Box-Muller step calls log, sin and cos in double, and CUDA's
 *          (within 1 and 2 ulps of the exact result) and the C library's round differently
 *          in their last bits. float64 values then differ between the CPU and a GPU by a few
 *          ulps now and then; float32 values, rounded from those doubles, almost always
 *          agree, and differ by one ulp where the double lies that close to a float32
 *          rounding boundary.
 *
 * A counter-based generator needs no state but (seed, counter): element i of a request is a
 * pure function of (seed, offset + i / per), so any thread can compute any element. That is
 * what lets the CPU and the GPU follow one stream, and the GPU fill an array in parallel.
 *
 * Layout (the contract both backends follow):
 *   block b = philox(counter = offset + i / per, key = seed) gives 4 words w[0..3].
 *   float32 (per = 4): uniform u = (w[i % 4] >> 8) * 2^-24                    in [0, 1)
 *   float64 (per = 2): uniform u = ((w[2j] >> 5) * 2^26 + (w[2j+1] >> 6)) * 2^-53, j = i % 2
 *   normal: Box-Muller on the block's pair of uniforms (u1, u2), computed in double:
 *           r = sqrt(-2 log(1 - u1)), z0 = r cos(2 pi u2), z1 = r sin(2 pi u2)
 *           float32: pairs (w0, w1) -> elements 0, 1 and (w2, w3) -> elements 2, 3
 *           float64: the block's two uniforms -> elements 0, 1
 * A request of n elements advances the generator's offset by ceil(n / per) blocks.
 */
#ifndef GPUDEV_PHILOX_H
#define GPUDEV_PHILOX_H

#include <stdint.h>
#include <math.h>

#include "hostdev.h"

#define GD_PHILOX_M0 0xD2511F53u
#define GD_PHILOX_M1 0xCD9E8D57u
#define GD_PHILOX_W0 0x9E3779B9u
#define GD_PHILOX_W1 0xBB67AE85u

/* elements produced per Philox block: 4 for float32 (one word each), 2 for float64 */
#define GD_PHILOX_PER_BLOCK(dtype_is_f32) ((dtype_is_f32) ? 4 : 2)

GD_HOSTDEV void gd_philox4x32_10(uint32_t w[4], uint64_t counter, uint64_t seed)
{
    uint32_t c0 = (uint32_t)counter, c1 = (uint32_t)(counter >> 32), c2 = 0, c3 = 0;
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int round = 0; round < 10; round++) {
        uint64_t p0 = (uint64_t)GD_PHILOX_M0 * c0;
        uint64_t p1 = (uint64_t)GD_PHILOX_M1 * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
        uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)p1;
        c3 = (uint32_t)p0;
        c0 = n0;
        c2 = n2;
        k0 += GD_PHILOX_W0;
        k1 += GD_PHILOX_W1;
    }
    w[0] = c0;
    w[1] = c1;
    w[2] = c2;
    w[3] = c3;
}

GD_HOSTDEV double gd_philox_u32_to_unit(uint32_t w) { return (double)(w >> 8) * (1.0 / 16777216.0); }

GD_HOSTDEV double gd_philox_u64_to_unit(uint32_t hi, uint32_t lo)
{
    return ((double)(hi >> 5) * 67108864.0 + (double)(lo >> 6)) * (1.0 / 9007199254740992.0);
}

/* Box-Muller: (u1, u2) uniform in [0, 1) -> two standard normals. 1 - u1 is in (0, 1]. */
GD_HOSTDEV void gd_philox_box_muller(double *z0, double *z1, double u1, double u2)
{
    const double two_pi = 6.283185307179586476925286766559;
    double r = sqrt(-2.0 * log(1.0 - u1));
    *z0 = r * cos(two_pi * u2);
    *z1 = r * sin(two_pi * u2);
}

/* One block's worth of float32 values (4 of them). */
GD_HOSTDEV void gd_philox_block_f32(float out[4], int normal, uint64_t counter, uint64_t seed)
{
    uint32_t w[4];
    gd_philox4x32_10(w, counter, seed);
    if (!normal) {
        for (int j = 0; j < 4; j++) out[j] = (float)gd_philox_u32_to_unit(w[j]);
    } else {
        double z0, z1, z2, z3;
        gd_philox_box_muller(&z0, &z1, gd_philox_u32_to_unit(w[0]), gd_philox_u32_to_unit(w[1]));
        gd_philox_box_muller(&z2, &z3, gd_philox_u32_to_unit(w[2]), gd_philox_u32_to_unit(w[3]));
        out[0] = (float)z0;
        out[1] = (float)z1;
        out[2] = (float)z2;
        out[3] = (float)z3;
    }
}

/* One block's worth of float64 values (2 of them). */
GD_HOSTDEV void gd_philox_block_f64(double out[2], int normal, uint64_t counter, uint64_t seed)
{
    uint32_t w[4];
    gd_philox4x32_10(w, counter, seed);
    double u0 = gd_philox_u64_to_unit(w[0], w[1]);
    double u1 = gd_philox_u64_to_unit(w[2], w[3]);
    if (!normal) {
        out[0] = u0;
        out[1] = u1;
    } else {
        gd_philox_box_muller(&out[0], &out[1], u0, u1);
    }
}

#endif /* GPUDEV_PHILOX_H */
