/* cast.c - the CPU backend's astype: dtype conversions as C casts, one kernel per pair of
 * dtypes from an [out][in] table, split over threads when large.
 */
#include "cpu.h"

/* ------------------------------------------------------------------------------------------
 * astype
 *
 * C casts, except float -> int64 or int32 of NaN, infinities and values outside the integer's
 * range, which C leaves undefined: they become INT64_MIN or INT32_MIN, what NumPy gives on
 * x86-64 (GD_F2I, GD_F2I32). int64 -> int32 keeps the low 32 bits, as NumPy's cast does.
 * ---------------------------------------------------------------------------------------- */

typedef void (*gd_cast_kernel)(void *out, const void *in, int64_t n);

#define GD_DEFINE_CAST(NAME, TO, FROM, EXPR)                                                     \
    GD_SIMD static void NAME(void *out_, const void *in_, int64_t n)                             \
    {                                                                                            \
        TO *out = out_;                                                                          \
        const FROM *in = in_;                                                                    \
        for (int64_t i = 0; i < n; i++) {                                                        \
            FROM x = in[i];                                                                      \
            out[i] = (EXPR);                                                                     \
        }                                                                                        \
    }

GD_DEFINE_CAST(cast_f32_f64, float, double, (float)x)
GD_DEFINE_CAST(cast_f32_i64, float, int64_t, (float)x)
GD_DEFINE_CAST(cast_f32_i32, float, int32_t, (float)x)
GD_DEFINE_CAST(cast_f64_f32, double, float, (double)x)
GD_DEFINE_CAST(cast_f64_i64, double, int64_t, (double)x)
GD_DEFINE_CAST(cast_f64_i32, double, int32_t, (double)x)
GD_DEFINE_CAST(cast_i64_f32, int64_t, float, GD_F2I(x))
GD_DEFINE_CAST(cast_i64_f64, int64_t, double, GD_F2I(x))
GD_DEFINE_CAST(cast_i64_i32, int64_t, int32_t, (int64_t)x)
GD_DEFINE_CAST(cast_i32_f32, int32_t, float, GD_F2I32(x))
GD_DEFINE_CAST(cast_i32_f64, int32_t, double, GD_F2I32(x))
GD_DEFINE_CAST(cast_i32_i64, int32_t, int64_t, (int32_t)(uint32_t)(uint64_t)x)
/* from bool: any nonzero byte is 1, as NumPy reads bools (bool arrays hold 0 and 1, but memory
 * shared with NumPy or DLPack may be written with other bytes later) */
GD_DEFINE_CAST(cast_f32_b, float, uint8_t, (float)(x != 0))
GD_DEFINE_CAST(cast_f64_b, double, uint8_t, (double)(x != 0))
GD_DEFINE_CAST(cast_i64_b, int64_t, uint8_t, (int64_t)(x != 0))
GD_DEFINE_CAST(cast_i32_b, int32_t, uint8_t, (int32_t)(x != 0))
/* to bool: nonzero (NaN too) is true, as in NumPy */
GD_DEFINE_CAST(cast_b_f32, uint8_t, float, x != 0)
GD_DEFINE_CAST(cast_b_f64, uint8_t, double, x != 0)
GD_DEFINE_CAST(cast_b_i64, uint8_t, int64_t, x != 0)
GD_DEFINE_CAST(cast_b_i32, uint8_t, int32_t, x != 0)

/* [out dtype][in dtype] in gpudev.h's dtype order; the diagonal is a plain copy */
GD_STATIC_ASSERT(GD_NUM_DTYPES == 5, "the cast table lists float32, float64, int64, bool and int32");
static const gd_cast_kernel gd_cast_kernels[][GD_NUM_DTYPES] = {
    {NULL, cast_f32_f64, cast_f32_i64, cast_f32_b, cast_f32_i32},
    {cast_f64_f32, NULL, cast_f64_i64, cast_f64_b, cast_f64_i32},
    {cast_i64_f32, cast_i64_f64, NULL, cast_i64_b, cast_i64_i32},
    {cast_b_f32, cast_b_f64, cast_b_i64, NULL, cast_b_i32},
    {cast_i32_f32, cast_i32_f64, cast_i32_i64, cast_i32_b, NULL},
};
GD_STATIC_ASSERT(GD_COUNT_OF(gd_cast_kernels) == GD_NUM_DTYPES, "gd_cast_kernels: one row per gd_dtype");

typedef struct gd_cast_job {
    gd_cast_kernel k;
    char *out;
    const char *in;
    size_t out_esz, in_esz;
} gd_cast_job;

static void gd_cast_range(void *ctx, int64_t begin, int64_t end)
{
    const gd_cast_job *job = ctx;
    job->k(job->out + begin * (int64_t)job->out_esz, job->in + begin * (int64_t)job->in_esz, end - begin);
}

int gd_cpu_astype(void *out, gd_dtype out_dtype, const void *in, gd_dtype in_dtype, int64_t n, int device,
                  gd_error *err)
{
    (void)device;
    if ((unsigned)out_dtype >= GD_NUM_DTYPES) return gd_cpu_bad_dtype(err, "astype", out_dtype);
    if ((unsigned)in_dtype >= GD_NUM_DTYPES) return gd_cpu_bad_dtype(err, "astype", in_dtype);
    if (n <= 0) return GD_OK;
    if (out_dtype == in_dtype) {
        gd_copy_bytes(out, in, (size_t)n * gd_dtype_size(in_dtype));
        return GD_OK;
    }
    gd_cast_job job = {gd_cast_kernels[out_dtype][in_dtype], out, in, gd_dtype_size(out_dtype),
                       gd_dtype_size(in_dtype)};
    gd_parallel_for(gd_threads_for(n, GD_PAR_ASTYPE), n, 16, gd_cast_range, &job);
    return GD_OK;
}
