/* generate.c - the CPU backend's generators: arange and the Philox random numbers (the same
 * philox.h as the CUDA backend, so one seed gives the same rand numbers, bit for bit, on
 * every device, and randn numbers within a few ulps of each other: see philox.h).
 */
#include <string.h>

#include "cpu.h"
#include "philox.h"

/* ------------------------------------------------------------------------------------------
 * arange
 * ---------------------------------------------------------------------------------------- */

typedef struct gd_arange_job {
    void *out;
    gd_dtype dtype;
    gd_scalar start, step;
} gd_arange_job;

GD_SIMD static void gd_arange_f32(float *out, double start, double step, int64_t begin, int64_t end)
{
    for (int64_t i = begin; i < end; i++) out[i] = (float)(start + (double)i * step);
}

GD_SIMD static void gd_arange_f64(double *out, double start, double step, int64_t begin, int64_t end)
{
    for (int64_t i = begin; i < end; i++) out[i] = start + (double)i * step;
}

GD_SIMD static void gd_arange_i64(int64_t *out, int64_t start, int64_t step, int64_t begin, int64_t end)
{
    for (int64_t i = begin; i < end; i++) out[i] = GD_WRAP(GD_U64(start) + GD_U64(i) * GD_U64(step));
}

/* the core checks that every value fits in int32 */
GD_SIMD static void gd_arange_i32(int32_t *out, int64_t start, int64_t step, int64_t begin, int64_t end)
{
    for (int64_t i = begin; i < end; i++) out[i] = (int32_t)(uint32_t)(GD_U64(start) + GD_U64(i) * GD_U64(step));
}

static void gd_arange_range(void *ctx, int64_t begin, int64_t end)
{
    const gd_arange_job *job = ctx;
    if (job->dtype == GD_FLOAT32)
        gd_arange_f32(job->out, job->start.f, job->step.f, begin, end);
    else if (job->dtype == GD_FLOAT64)
        gd_arange_f64(job->out, job->start.f, job->step.f, begin, end);
    else if (job->dtype == GD_INT32)
        gd_arange_i32(job->out, job->start.i, job->step.i, begin, end);
    else
        gd_arange_i64(job->out, job->start.i, job->step.i, begin, end);
}

int gd_cpu_arange(void *out, gd_dtype dtype, gd_scalar start, gd_scalar step, int64_t n, int device,
                  gd_error *err)
{
    (void)device;
    if ((unsigned)dtype >= GD_NUM_DTYPES || dtype == GD_BOOL) return gd_cpu_bad_dtype(err, "arange", dtype);
    if (n <= 0) return GD_OK;
    gd_arange_job job = {out, dtype, start, step};
    gd_parallel_for(gd_threads_for(n, GD_PAR_ELEMENTWISE), n, 16, gd_arange_range, &job);
    return GD_OK;
}

/* ------------------------------------------------------------------------------------------
 * random numbers: Philox4x32-10 exactly as philox.h lays it out (the CUDA kernel runs the
 * same functions), one block of `per` elements at a time.
 * ---------------------------------------------------------------------------------------- */

typedef struct gd_random_job {
    void *out;
    int f32, normal;
    uint64_t seed, offset;
    int64_t n;
} gd_random_job;

static void gd_random_range(void *ctx, int64_t begin, int64_t end) /* blocks [begin, end) */
{
    const gd_random_job *job = ctx;
    const int64_t per = GD_PHILOX_PER_BLOCK(job->f32);
    for (int64_t blk = begin; blk < end; blk++) {
        const uint64_t counter = job->offset + (uint64_t)blk;
        const int64_t first = blk * per, count = GD_MIN(per, job->n - first);
        if (job->f32) {
            float v[4];
            gd_philox_block_f32(v, job->normal, counter, job->seed);
            memcpy((float *)job->out + first, v, (size_t)count * sizeof(float));
        } else {
            double v[2];
            gd_philox_block_f64(v, job->normal, counter, job->seed);
            memcpy((double *)job->out + first, v, (size_t)count * sizeof(double));
        }
    }
}

int gd_cpu_random(void *out, gd_dtype dtype, gd_random_kind kind, uint64_t seed, uint64_t offset, int64_t n,
                  int device, gd_error *err)
{
    (void)device;
    if ((unsigned)dtype >= GD_NUM_DTYPES || !gd_dtype_is_float(dtype))
        return gd_set_error(err, GD_ERR_VALUE, "random: %s is not supported; random numbers are float32 or float64",
                       (unsigned)dtype < GD_NUM_DTYPES ? gd_dtype_name(dtype) : "this dtype");
    if (kind != GD_RAND_UNIFORM && kind != GD_RAND_NORMAL)
        return gd_set_error(err, GD_ERR_VALUE, "random: unknown distribution code %d", (int)kind);
    if (n <= 0) return GD_OK;
    gd_random_job job = {out, dtype == GD_FLOAT32, kind == GD_RAND_NORMAL, seed, offset, n};
    const int64_t per = GD_PHILOX_PER_BLOCK(job.f32);
    gd_parallel_for(gd_threads_for(n, GD_PAR_RANDOM), (n + per - 1) / per, 16, gd_random_range, &job);
    return GD_OK;
}
