/* window.c - the CPU backend's sliding-window kernels: im2col and col2im (convolution, as
 * Caffe computes it: the windows laid out as the columns of a matrix, which gemm.c then
 * multiplies by the weights) and 2-D max and average pooling with their adjoints.
 *
 * Every entry works plane by plane (one image's channel), one plane per item of a parallel
 * loop: a plane's writes never meet another's, so nothing needs atomics and the results are
 * the same on any number of threads. Rows of a window that fall in the padding are found by
 * arithmetic once per row, so the inner loops run over the valid part only (a memcpy for
 * im2col's unit stride).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "window_math.h"

/* ------------------------------------------------------------------------------------------
 * im2col and col2im
 * ---------------------------------------------------------------------------------------- */

/* One axis of a pooling window (window_math.h's gd_axis_window): inputs [lo, hi), and how many
 * positions of the padded axis it covers. */
typedef struct gd_span {
    int64_t lo, hi, padded;
} gd_span;

/* spans[o] for the out outputs of an axis; NULL when out of memory. */
static gd_span *gd_axis_spans(int64_t out, int64_t n, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation,
                              int adaptive)
{
    gd_span *s = malloc((size_t)out * sizeof *s);
    for (int64_t o = 0; s != NULL && o < out; o++)
        s[o].padded = gd_axis_window(&s[o].lo, &s[o].hi, o, n, out, kernel, stride, pad, dilation, adaptive);
    return s;
}

typedef struct gd_window_job {
    const gd_window2d *g;
    const gd_col_layout *layout;
    char *out;
    const char *in;
    int64_t *indices;       /* pool2d: NULL or the max's positions */
    const int64_t *idx_in;  /* pool2d_backward: the max's positions */
    gd_pool_kind kind;
    int count_include_pad;
    int64_t divisor;
    const gd_span *rows, *cols; /* pooling: each output row's and column's window */
    int64_t ja, jb;             /* average pooling: the outputs of a row whose windows are whole */
} gd_window_job;

/* S the suffix, T the element type */
#define GD_DEFINE_COLS(S, T)                                                                      \
    /* planes [begin, end): plane p is image p / channels, channel p % channels */                \
    static void gd_im2col_##S(void *ctx, int64_t begin, int64_t end)                              \
    {                                                                                             \
        const gd_window_job *job = ctx;                                                           \
        const gd_window2d *g = job->g;                                                            \
        const int64_t oh = g->out_h, ow = g->out_w;                                               \
        for (int64_t p = begin; p < end; p++) {                                                   \
            const int64_t b = p / g->channels, c = p % g->channels;                               \
            const T *plane = (const T *)job->in + p * g->h * g->w;                                \
            for (int64_t ka = 0; ka < g->kernel_h; ka++)                                          \
                for (int64_t kb = 0; kb < g->kernel_w; kb++) {                                    \
                    const int64_t r = (c * g->kernel_h + ka) * g->kernel_w + kb;                  \
                    T *dst = (T *)job->out + b * job->layout->image_stride + r * job->layout->row_stride; \
                    int64_t i0, i1, j0, j1;                                                       \
                    const int64_t hoff = ka * g->dilation_h - g->pad_h;                           \
                    const int64_t woff = kb * g->dilation_w - g->pad_w;                           \
                    gd_valid_range(&i0, &i1, hoff, g->stride_h, g->h, oh);                        \
                    gd_valid_range(&j0, &j1, woff, g->stride_w, g->w, ow);                        \
                    memset(dst, 0, (size_t)(i0 * ow) * sizeof(T));                                \
                    for (int64_t i = i0; i < i1; i++) {                                           \
                        T *d = dst + i * ow;                                                      \
                        const T *src = plane + (i * g->stride_h + hoff) * g->w + woff;            \
                        for (int64_t j = 0; j < j0; j++) d[j] = 0;                                \
                        if (g->stride_w == 1) memcpy(d + j0, src + j0, (size_t)(j1 - j0) * sizeof(T)); \
                        else                                                                      \
                            for (int64_t j = j0; j < j1; j++) d[j] = src[j * g->stride_w];        \
                        for (int64_t j = j1; j < ow; j++) d[j] = 0;                               \
                    }                                                                             \
                    memset(dst + i1 * ow, 0, (size_t)((oh - i1) * ow) * sizeof(T));               \
                }                                                                                 \
        }                                                                                         \
    }                                                                                             \
    static void gd_col2im_##S(void *ctx, int64_t begin, int64_t end)                              \
    {                                                                                             \
        const gd_window_job *job = ctx;                                                           \
        const gd_window2d *g = job->g;                                                            \
        const int64_t ow = g->out_w;                                                              \
        for (int64_t p = begin; p < end; p++) {                                                   \
            const int64_t b = p / g->channels, c = p % g->channels;                               \
            T *plane = (T *)job->out + p * g->h * g->w;                                           \
            memset(plane, 0, (size_t)(g->h * g->w) * sizeof(T));                                 \
            for (int64_t ka = 0; ka < g->kernel_h; ka++)                                          \
                for (int64_t kb = 0; kb < g->kernel_w; kb++) {                                    \
                    const int64_t r = (c * g->kernel_h + ka) * g->kernel_w + kb;                  \
                    const T *src = (const T *)job->in + b * job->layout->image_stride + r * job->layout->row_stride; \
                    int64_t i0, i1, j0, j1;                                                       \
                    const int64_t hoff = ka * g->dilation_h - g->pad_h;                           \
                    const int64_t woff = kb * g->dilation_w - g->pad_w;                           \
                    gd_valid_range(&i0, &i1, hoff, g->stride_h, g->h, g->out_h);                  \
                    gd_valid_range(&j0, &j1, woff, g->stride_w, g->w, ow);                        \
                    for (int64_t i = i0; i < i1; i++) {                                           \
                        T *d = plane + (i * g->stride_h + hoff) * g->w + woff;                    \
                        const T *s = src + i * ow;                                                \
                        if (g->stride_w == 1)                                                     \
                            for (int64_t j = j0; j < j1; j++) d[j] += s[j];                       \
                        else                                                                      \
                            for (int64_t j = j0; j < j1; j++) d[j * g->stride_w] += s[j];         \
                    }                                                                             \
                }                                                                                 \
        }                                                                                         \
    }
GD_DEFINE_COLS(f32, float)
GD_DEFINE_COLS(f64, double)
#undef GD_DEFINE_COLS

/* Planes of work per entry: threads from the elements the call writes (`work`). */
static void gd_window_run(gd_range_fn fn, gd_window_job *job, int64_t planes, int64_t work)
{
    gd_parallel_for(gd_threads_for(work, GD_PAR_ELEMENTWISE), planes, 1, fn, job);
}

int gd_cpu_im2col(void *col, const gd_col_layout *layout, gd_dtype dtype, const void *im, const gd_window2d *g,
                  int64_t images, int device, gd_error *err)
{
    (void)device;
    if (dtype != GD_FLOAT32 && dtype != GD_FLOAT64) return gd_cpu_bad_dtype(err, "im2col", dtype);
    gd_window_job job = {.g = g, .layout = layout, .out = col, .in = im};
    const int64_t planes = images * g->channels;
    const int64_t work = planes * g->kernel_h * g->kernel_w * g->out_h * g->out_w;
    if (planes > 0) gd_window_run(dtype == GD_FLOAT32 ? gd_im2col_f32 : gd_im2col_f64, &job, planes, work);
    return GD_OK;
}

int gd_cpu_col2im(void *im, gd_dtype dtype, const void *col, const gd_col_layout *layout, const gd_window2d *g,
                  int64_t images, int device, gd_error *err)
{
    (void)device;
    if (dtype != GD_FLOAT32 && dtype != GD_FLOAT64) return gd_cpu_bad_dtype(err, "col2im", dtype);
    gd_window_job job = {.g = g, .layout = layout, .out = im, .in = col};
    const int64_t planes = images * g->channels;
    const int64_t work = planes * g->kernel_h * g->kernel_w * g->out_h * g->out_w;
    if (planes > 0) gd_window_run(dtype == GD_FLOAT32 ? gd_col2im_f32 : gd_col2im_f64, &job, planes, work);
    return GD_OK;
}

/* ------------------------------------------------------------------------------------------
 * pooling and its adjoint
 * ---------------------------------------------------------------------------------------- */

/* Outputs per block of average pooling's whole windows: their sums stay on the stack. */
#define GD_POOL_BLOCK 64

/* S the suffix, T the element type; averages accumulate in double.
 *
 * Average pooling's outputs [ja, jb) of a row have whole windows along the row (no dilation:
 * kernel_w inputs from j * stride_w - pad_w, the same divisor), and go by blocks: the block's
 * sums grow one input of the window at a time, in the order the one-output loop adds them
 * (rows a, then columns b), so the results are the same bits, and the loop over the block's
 * outputs vectorizes; a stride of 2 (the common 2x2 window) is a constant there. */
#define GD_DEFINE_POOL(S, T)                                                                      \
    static void gd_avg_sums_##S(double *acc, const T *x, int64_t w, gd_span r, int64_t n, int64_t sw, \
                                int64_t kw)                                                       \
    {                                                                                             \
        for (int64_t k = 0; k < n; k++) acc[k] = 0;                                               \
        for (int64_t a = r.lo; a < r.hi; a++)                                                     \
            for (int64_t b = 0; b < kw; b++) {                                                    \
                const T *src = x + a * w + b;                                                     \
                if (sw == 2)                                                                      \
                    for (int64_t k = 0; k < n; k++) acc[k] += src[2 * k];                         \
                else                                                                              \
                    for (int64_t k = 0; k < n; k++) acc[k] += src[k * sw];                        \
            }                                                                                     \
    }                                                                                             \
    /* y[j] for j in [ja, jb) of output row i, whose window rows are r */                        \
    static void gd_avg_whole_##S(T *y, const T *x, const gd_window_job *job, gd_span r, double div) \
    {                                                                                             \
        const gd_window2d *g = job->g;                                                            \
        double acc[GD_POOL_BLOCK];                                                                \
        for (int64_t j = job->ja; j < job->jb; j += GD_POOL_BLOCK) {                              \
            const int64_t n = gd_win_min(GD_POOL_BLOCK, job->jb - j);                             \
            gd_avg_sums_##S(acc, x + j * g->stride_w - g->pad_w, g->w, r, n, g->stride_w, g->kernel_w); \
            for (int64_t k = 0; k < n; k++) y[j + k] = r.lo < r.hi ? (T)(acc[k] / div) : (T)0;    \
        }                                                                                         \
    }                                                                                             \
    /* gx's windows of the outputs [ja, jb) of row i += gy / div; the windows must not overlap  \
     * along the row (stride_w >= kernel_w), so each input takes at most one share per row */    \
    static void gd_unavg_whole_##S(T *gx, const T *gy, const gd_window_job *job, gd_span r, double div) \
    {                                                                                             \
        const gd_window2d *g = job->g;                                                            \
        const int64_t sw = g->stride_w, kw = g->kernel_w;                                         \
        T share[GD_POOL_BLOCK];                                                                   \
        for (int64_t j = job->ja; j < job->jb; j += GD_POOL_BLOCK) {                              \
            const int64_t n = gd_win_min(GD_POOL_BLOCK, job->jb - j);                             \
            for (int64_t k = 0; k < n; k++) share[k] = (T)(gy[j + k] / div);                      \
            for (int64_t a = r.lo; a < r.hi; a++)                                                 \
                for (int64_t b = 0; b < kw; b++) {                                                \
                    T *dst = gx + a * g->w + j * sw - g->pad_w + b;                               \
                    if (sw == 2)                                                                  \
                        for (int64_t k = 0; k < n; k++) dst[2 * k] += share[k];                   \
                    else                                                                          \
                        for (int64_t k = 0; k < n; k++) dst[k * sw] += share[k];                  \
                }                                                                                 \
        }                                                                                         \
    }                                                                                             \
    static void gd_pool_##S(void *ctx, int64_t begin, int64_t end)                                \
    {                                                                                             \
        const gd_window_job *job = ctx;                                                           \
        const gd_window2d *g = job->g;                                                            \
        const int64_t dh = g->adaptive ? 1 : g->dilation_h, dw = g->adaptive ? 1 : g->dilation_w; \
        const int64_t nout = g->out_h * g->out_w;                                                 \
        const int avg_pad = job->count_include_pad || g->adaptive;                                \
        const int64_t avg_div = g->adaptive ? 0 : job->divisor;                                   \
        const int64_t ja = job->ja, jb = job->jb, ow = g->out_w; /* locals: stores may alias */   \
        for (int64_t p = begin; p < end; p++) {                                                   \
            const T *x = (const T *)job->in + p * g->h * g->w;                                    \
            T *y = (T *)job->out + p * nout;                                                      \
            int64_t *ix = job->indices ? job->indices + p * nout : NULL;                          \
            for (int64_t i = 0; i < g->out_h; i++) {                                              \
                const gd_span r = job->rows[i];                                                   \
                if (ja < jb)                                                                      \
                    gd_avg_whole_##S(y + i * g->out_w, x, job, r,                                 \
                                     gd_window_divisor(r.padded, g->kernel_w, r.lo, r.hi, 0, g->kernel_w, \
                                                       avg_pad, avg_div));                        \
                for (int64_t j = ja ? 0 : jb; j < ow; j = j + 1 == ja ? jb : j + 1) { /* around [ja, jb) */   \
                    const gd_span c = job->cols[j];                                               \
                    if (job->kind == GD_POOL_MAX) {                                               \
                        T best = -(T)INFINITY;                                                    \
                        int64_t at = r.lo * g->w + c.lo;                                          \
                        for (int64_t a = r.lo; a < r.hi; a += dh)                                 \
                            for (int64_t b = c.lo; b < c.hi; b += dw) {                           \
                                const T v = x[a * g->w + b];                                      \
                                const int take = (v > best) | (v != v); /* selects, not branches: \
                                                                           random data mispredicts */ \
                                best = take ? v : best;                                           \
                                at = take ? a * g->w + b : at;                                    \
                            }                                                                     \
                        y[i * g->out_w + j] = best;                                               \
                        if (ix) ix[i * g->out_w + j] = at;                                        \
                        continue;                                                                 \
                    }                                                                             \
                    double sum = 0;                                                               \
                    for (int64_t a = r.lo; a < r.hi; a++)                                         \
                        for (int64_t b = c.lo; b < c.hi; b++) sum += x[a * g->w + b];             \
                    const double div = gd_window_divisor(r.padded, c.padded, r.lo, r.hi, c.lo, c.hi, avg_pad, \
                                                         avg_div);                                \
                    y[i * g->out_w + j] = r.lo < r.hi && c.lo < c.hi ? (T)(sum / div) : (T)0;     \
                }                                                                                 \
            }                                                                                     \
        }                                                                                         \
    }                                                                                             \
    /* planes [begin, end) of grad_in; an index outside the plane (another thread wrote the   \
     * indices after the check) routes nothing */                                                 \
    static void gd_unpool_##S(void *ctx, int64_t begin, int64_t end)                              \
    {                                                                                             \
        const gd_window_job *job = ctx;                                                           \
        const gd_window2d *g = job->g;                                                            \
        const int64_t nout = g->out_h * g->out_w, nin = g->h * g->w;                              \
        const int avg_pad = job->count_include_pad || g->adaptive;                                \
        const int64_t avg_div = g->adaptive ? 0 : job->divisor;                                   \
        const int64_t ja = job->ja, jb = job->jb, ow = g->out_w; /* locals: stores may alias */   \
        for (int64_t p = begin; p < end; p++) {                                                   \
            T *gx = (T *)job->out + p * nin;                                                      \
            const T *gy = (const T *)job->in + p * nout;                                          \
            memset(gx, 0, (size_t)nin * sizeof(T));                                               \
            if (job->kind == GD_POOL_MAX) {                                                       \
                const int64_t *ix = job->idx_in + p * nout;                                       \
                for (int64_t o = 0; o < nout; o++) {                                              \
                    const int64_t at = ix[o];                                                     \
                    if (at >= 0 && at < nin) gx[at] += gy[o];                                     \
                }                                                                                 \
                continue;                                                                         \
            }                                                                                     \
            for (int64_t i = 0; i < g->out_h; i++) {                                              \
                const gd_span r = job->rows[i];                                                   \
                if (ja < jb && r.lo < r.hi)                                                       \
                    gd_unavg_whole_##S(gx, gy + i * g->out_w, job, r,                             \
                                       gd_window_divisor(r.padded, g->kernel_w, r.lo, r.hi, 0, g->kernel_w, \
                                                         avg_pad, avg_div));                      \
                for (int64_t j = ja ? 0 : jb; j < ow; j = j + 1 == ja ? jb : j + 1) { /* around [ja, jb) */   \
                    const gd_span c = job->cols[j];                                               \
                    if (r.lo >= r.hi || c.lo >= c.hi) continue; /* an empty window's output is 0 */ \
                    const double div = gd_window_divisor(r.padded, c.padded, r.lo, r.hi, c.lo, c.hi, avg_pad, \
                                                         avg_div);                                \
                    const T share = (T)(gy[i * g->out_w + j] / div);                              \
                    for (int64_t a = r.lo; a < r.hi; a++)                                         \
                        for (int64_t b = c.lo; b < c.hi; b++) gx[a * g->w + b] += share;          \
                }                                                                                 \
            }                                                                                     \
        }                                                                                         \
    }
GD_DEFINE_POOL(f32, float)
GD_DEFINE_POOL(f64, double)
#undef GD_DEFINE_POOL

/* Sets job->ja and jb: the outputs of a row whose average windows are whole along it (none
 * for max or adaptive pooling, nor for an adjoint whose windows overlap along the row). */
static void gd_whole_columns(gd_window_job *job, int adjoint)
{
    const gd_window2d *g = job->g;
    int64_t j = 0;
    job->ja = job->jb = 0;
    if (job->kind != GD_POOL_AVG || g->adaptive || g->dilation_w != 1 || (adjoint && g->stride_w < g->kernel_w))
        return;
#define GD_WHOLE(j) (job->cols[j].lo == (j) * g->stride_w - g->pad_w && job->cols[j].hi == job->cols[j].lo + g->kernel_w)
    while (j < g->out_w && !GD_WHOLE(j)) j++;
    job->ja = j;
    while (j < g->out_w && GD_WHOLE(j)) j++;
    job->jb = j;
    if (job->jb - job->ja < 8) job->ja = job->jb = 0; /* a block's set-up costs more than it saves */
#undef GD_WHOLE
}

/* fn over every plane, with the job's tables of row and column windows. */
static int gd_pool_run(gd_range_fn fn, gd_window_job *job, int64_t images, const char *op, gd_error *err)
{
    const gd_window2d *g = job->g;
    const int64_t planes = images * g->channels;
    if (planes == 0) return GD_OK;
    gd_span *rows = gd_axis_spans(g->out_h, g->h, g->kernel_h, g->stride_h, g->pad_h, g->dilation_h, g->adaptive);
    gd_span *cols = gd_axis_spans(g->out_w, g->w, g->kernel_w, g->stride_w, g->pad_w, g->dilation_w, g->adaptive);
    int rc = GD_OK;
    if (rows == NULL || cols == NULL) {
        rc = gd_set_error(err, GD_ERR_HOST_OOM, "%s: out of host memory for %lld window rows and %lld columns", op,
                          (long long)g->out_h, (long long)g->out_w);
    } else {
        job->rows = rows;
        job->cols = cols;
        gd_whole_columns(job, fn == gd_unpool_f32 || fn == gd_unpool_f64);
        gd_window_run(fn, job, planes, planes * (g->h * g->w + g->out_h * g->out_w));
    }
    free(rows);
    free(cols);
    return rc;
}

int gd_cpu_pool2d(void *out, int64_t *indices, gd_dtype dtype, gd_pool_kind kind, const void *in,
                  const gd_window2d *g, int64_t images, int count_include_pad, int64_t divisor, int device,
                  gd_error *err)
{
    (void)device;
    if (dtype != GD_FLOAT32 && dtype != GD_FLOAT64) return gd_cpu_bad_dtype(err, "pool2d", dtype);
    gd_window_job job = {.g = g, .out = out, .in = in, .indices = indices, .kind = kind,
                         .count_include_pad = count_include_pad, .divisor = divisor};
    return gd_pool_run(dtype == GD_FLOAT32 ? gd_pool_f32 : gd_pool_f64, &job, images, "pool2d", err);
}

int gd_cpu_pool2d_backward(void *grad_in, gd_dtype dtype, gd_pool_kind kind, const void *grad_out,
                           const int64_t *indices, const gd_window2d *g, int64_t images, int count_include_pad,
                           int64_t divisor, int device, gd_error *err)
{
    (void)device;
    if (dtype != GD_FLOAT32 && dtype != GD_FLOAT64) return gd_cpu_bad_dtype(err, "pool2d_backward", dtype);
    if (kind == GD_POOL_MAX && indices == NULL)
        return gd_set_error(err, GD_ERR_VALUE, "pool2d_backward: max pooling needs the forward's indices");
    gd_window_job job = {.g = g, .out = grad_in, .in = grad_out, .idx_in = indices, .kind = kind,
                         .count_include_pad = count_include_pad, .divisor = divisor};
    return gd_pool_run(dtype == GD_FLOAT32 ? gd_unpool_f32 : gd_unpool_f64, &job, images, "pool2d_backward", err);
}
