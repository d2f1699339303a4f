/* permute.c - the CPU backend's transposes: any permutation of a C-contiguous array's axes,
 * as row copies or tiled 2-D transposes after merging axes that stay neighbours.
 */
#include <string.h>

#include "cpu.h"

#define GD_TILE 32 /* transpose tile edge */

/* ------------------------------------------------------------------------------------------
 * permute
 *
 * Axes of size 1 are dropped and output-adjacent axes that are also adjacent in the
 * input are merged, so most permutations become either row copies (the input's last axis
 * stays last) or a batch of 2-D transposes, done in GD_TILE x GD_TILE tiles so both the
 * reads and the writes stay within a few cache lines.
 * ---------------------------------------------------------------------------------------- */

typedef struct gd_permute_job {
    char *out;
    const char *in;
    size_t esz;
    int nd;
    int64_t shape[GD_MAX_NDIM];      /* output shape after merging */
    int64_t in_stride[GD_MAX_NDIM];  /* input stride of each output axis, elements */
    int64_t out_stride[GD_MAX_NDIM];
    int q;                           /* output axis with input stride 1 (transpose mode) */
    int64_t row_tiles;               /* tiles along axis q */
} gd_permute_job;

/* Offsets of flat index `flat` over all axes except `skip0` and `skip1` (-1: none). */
static void gd_permute_offsets(const gd_permute_job *job, int64_t flat, int skip0, int skip1, int64_t *in_off,
                               int64_t *out_off)
{
    *in_off = *out_off = 0;
    for (int k = job->nd - 1; k >= 0; k--) {
        if (k == skip0 || k == skip1) continue;
        int64_t i = flat % job->shape[k];
        flat /= job->shape[k];
        *in_off += i * job->in_stride[k];
        *out_off += i * job->out_stride[k];
    }
}

static void gd_permute_rows_range(void *ctx, int64_t begin, int64_t end)
{
    const gd_permute_job *job = ctx;
    const int last = job->nd - 1;
    const size_t row_bytes = (size_t)job->shape[last] * job->esz;
    for (int64_t r = begin; r < end; r++) {
        int64_t in_off, out_off;
        gd_permute_offsets(job, r, last, -1, &in_off, &out_off);
        memcpy(job->out + out_off * (int64_t)job->esz, job->in + in_off * (int64_t)job->esz, row_bytes);
    }
}

/* out[j * os + i] = in[j + i * is] for j < rows, i < cols: one strip of tiles */
#define GD_DEFINE_TRANSPOSE(NAME, T)                                                             \
    static void NAME(void *out_, int64_t os, const void *in_, int64_t is, int64_t rows, int64_t cols) \
    {                                                                                            \
        T *out = out_;                                                                           \
        const T *in = in_;                                                                       \
        for (int64_t i0 = 0; i0 < cols; i0 += GD_TILE) {                                         \
            int64_t i1 = GD_MIN(cols, i0 + GD_TILE);                                             \
            for (int64_t j = 0; j < rows; j++)                                                   \
                for (int64_t i = i0; i < i1; i++) out[j * os + i] = in[j + i * is];              \
        }                                                                                        \
    }

GD_DEFINE_TRANSPOSE(gd_transpose_strip_4, uint32_t)
GD_DEFINE_TRANSPOSE(gd_transpose_strip_8, uint64_t)

static void gd_permute_tiles_range(void *ctx, int64_t begin, int64_t end)
{
    const gd_permute_job *job = ctx;
    const int last = job->nd - 1, q = job->q;
    const int64_t e = (int64_t)job->esz;
    for (int64_t t = begin; t < end; t++) {
        int64_t batch = t / job->row_tiles, j0 = (t % job->row_tiles) * GD_TILE;
        int64_t rows = GD_MIN((int64_t)GD_TILE, job->shape[q] - j0);
        int64_t in_off, out_off;
        gd_permute_offsets(job, batch, q, last, &in_off, &out_off);
        char *o = job->out + (out_off + j0 * job->out_stride[q]) * e;
        const char *i = job->in + (in_off + j0) * e;
        if (e == 4)
            gd_transpose_strip_4(o, job->out_stride[q], i, job->in_stride[last], rows, job->shape[last]);
        else
            gd_transpose_strip_8(o, job->out_stride[q], i, job->in_stride[last], rows, job->shape[last]);
    }
}

int gd_cpu_permute(void *out, gd_dtype dtype, const void *in, int ndim, const int64_t *in_shape, const int *perm,
                   int device, gd_error *err)
{
    (void)device;
    if ((unsigned)dtype >= GD_NUM_DTYPES) return gd_cpu_bad_dtype(err, "transpose", dtype);
    if (ndim < 0 || ndim > GD_MAX_NDIM)
        return gd_set_error(err, GD_ERR_VALUE, "transpose: %d axes given; at most %d are supported", ndim, GD_MAX_NDIM);
    int64_t stride[GD_MAX_NDIM], total = 1;
    for (int k = ndim - 1; k >= 0; k--) {
        stride[k] = total;
        total *= in_shape[k];
    }
    if (total == 0) return GD_OK;

    gd_permute_job job = {.out = out, .in = in, .esz = gd_dtype_size(dtype), .nd = 0};
    for (int k = 0; k < ndim; k++) {
        int p = perm[k];
        if (p < 0 || p >= ndim)
            return gd_set_error(err, GD_ERR_VALUE, "transpose: axis %d in the permutation is out of range for %d axes", p,
                           ndim);
        if (in_shape[p] == 1) continue;
        if (job.nd > 0 && job.in_stride[job.nd - 1] == stride[p] * in_shape[p]) {
            job.shape[job.nd - 1] *= in_shape[p]; /* continues the previous axis in the input too */
            job.in_stride[job.nd - 1] = stride[p];
        } else {
            job.shape[job.nd] = in_shape[p];
            job.in_stride[job.nd] = stride[p];
            job.nd++;
        }
    }
    if (job.nd <= 1) { /* at most one axis of size > 1: the order is unchanged */
        gd_copy_bytes(out, in, (size_t)total * job.esz);
        return GD_OK;
    }
    int64_t out_elems = 1;
    for (int k = job.nd - 1; k >= 0; k--) {
        job.out_stride[k] = out_elems;
        out_elems *= job.shape[k];
    }
    const int last = job.nd - 1;
    const int nt = gd_threads_for(total, GD_PAR_ELEMENTWISE);
    if (job.in_stride[last] == 1) {
        gd_parallel_for(nt, total / job.shape[last], 1, gd_permute_rows_range, &job);
        return GD_OK;
    }
    job.q = 0;
    while (job.in_stride[job.q] != 1) job.q++; /* the input's last axis; never `last` here */
    job.row_tiles = (job.shape[job.q] + GD_TILE - 1) / GD_TILE;
    int64_t batches = total / (job.shape[job.q] * job.shape[last]);
    gd_parallel_for(nt, batches * job.row_tiles, 1, gd_permute_tiles_range, &job);
    return GD_OK;
}
