/* window.c - the CPU backend's sliding-window kernels: im2col and col2im (convolution, as
 * Caffe computes it: the windows laid out as the columns of a matrix, which gemm.c then
 * multiplies by the weights) and 2-D max and average pooling with their adjoints.
 *
 * Every entry works plane by plane (one image's channel), one plane per item of a parallel
 * loop: a plane's writes never meet another's, so nothing needs atomics and the results are
 * the same on any number of threads. Rows of a window that fall in the padding are found by
 * arithmetic once per call, so the inner loops run over the valid part only.
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

/* One tap of the kernel along an axis (a row ka or a column kb of it): its input is o * stride
 * + off for output o, inside the image for the outputs [lo, hi) (gd_valid_range) and in the
 * padding for the others. The same for every plane, so computed once per call. */
typedef struct gd_tap {
    int64_t lo, hi, off;
} gd_tap;

/* t[k] for the kernel's taps k along an axis. */
static void gd_axis_taps(gd_tap *t, int64_t kernel, int64_t dilation, int64_t pad, int64_t stride, int64_t n,
                         int64_t out)
{
    for (int64_t k = 0; k < kernel; k++) {
        t[k].off = k * dilation - pad;
        gd_valid_range(&t[k].lo, &t[k].hi, t[k].off, stride, n, out);
    }
}

typedef struct gd_cols_job {
    const gd_window2d *g;
    const gd_col_layout *layout;
    char *out;
    const char *in;
    const gd_tap *th, *tw; /* the kernel's taps along the height and along the width */
} gd_cols_job;

/* The rows of a (ka, kb) block that read inside the image, for a unit stride: `rows` rows of
 * `row` bytes at d, one after the other, each `head` zero bytes, n bytes from s (the next
 * row's from s + sstep) and zeros to its end. A row is often a few dozen bytes (LeNet's second
 * layer: 10 floats), where memcpy's call and size dispatch cost more than the copy: here the n
 * bytes are moves of k bytes (k <= n), the last of which may overlap the one before, and the
 * padding on either side, when at most 16 bytes, is one 16-byte store of zeros that the copy
 * then partly overwrites. Inlined with a constant k. */
static inline void gd_copy_rows(char *d, const char *s, int64_t sstep, int64_t rows, size_t row, size_t head,
                                size_t n, size_t k)
{
    const size_t tail = row - head - n;
    for (int64_t r = 0; r < rows; r++, d += row, s += sstep) {
        if (head) memset(d, 0, 16);
        if (tail) memset(d + row - 16, 0, 16);
        for (size_t o = 0; o + k < n; o += k) memcpy(d + head + o, s + o, k);
        memcpy(d + head + n - k, s + n - k, k);
    }
}

/* gd_copy_rows with the widest k that fits n, or memcpy and memset where a row is narrower
 * than a 16-byte store or its padding wider. */
static inline void gd_cols_copy(char *d, const char *s, int64_t sstep, int64_t rows, size_t row, size_t head,
                                size_t n)
{
    const size_t tail = row - head - n;
    if (row < 16 || head > 16 || tail > 16 || n < 4) {
        for (int64_t r = 0; r < rows; r++, d += row, s += sstep) {
            memset(d, 0, head);
            memcpy(d + head, s, n);
            memset(d + head + n, 0, tail);
        }
    } else if (n >= 32) {
        gd_copy_rows(d, s, sstep, rows, row, head, n, 32);
    } else if (n >= 16) {
        gd_copy_rows(d, s, sstep, rows, row, head, n, 16);
    } else if (n >= 8) {
        gd_copy_rows(d, s, sstep, rows, row, head, n, 8);
    } else {
        gd_copy_rows(d, s, sstep, rows, row, head, n, 4);
    }
}

/* gd_add_rows<K>_S: d[j] += s[j] for j < n in `rows` rows (steps dstep and sstep), n >= K /
 * sizeof(T), in chunks of K bytes whose last overlaps the one before: the last is summed
 * first, so the lanes both chunks write get the same sum, d's old value plus s. Lane loops of
 * a constant count, which compile to one vector operation each (restrict: d and s never
 * overlap); chunks of GCC's 32-byte vectors took the stack where only SSE is enabled. */
#define GD_DEFINE_ADD_ROWS(S, T, K)                                                               \
    static inline void gd_add_rows##K##_##S(T *restrict d, int64_t dstep, const T *restrict s, int64_t sstep, \
                                            int64_t rows, int64_t n)                              \
    {                                                                                             \
        enum { k = K / sizeof(T) };                                                               \
        for (int64_t r = 0; r < rows; r++, d += dstep, s += sstep) {                              \
            T last[k];                                                                            \
            for (int l = 0; l < k; l++) last[l] = d[n - k + l] + s[n - k + l];                    \
            for (int64_t o = 0; o + k < n; o += k)                                                \
                for (int l = 0; l < k; l++) d[o + l] += s[o + l];                                 \
            for (int l = 0; l < k; l++) d[n - k + l] = last[l];                                   \
        }                                                                                         \
    }
GD_DEFINE_ADD_ROWS(f32, float, 32)
GD_DEFINE_ADD_ROWS(f32, float, 16)
GD_DEFINE_ADD_ROWS(f32, float, 8)
GD_DEFINE_ADD_ROWS(f64, double, 32)
GD_DEFINE_ADD_ROWS(f64, double, 16)
GD_DEFINE_ADD_ROWS(f64, double, 8)
#undef GD_DEFINE_ADD_ROWS

/* S the suffix, T the element type. Row (c, ka, kb) of a plane's columns is an out_h x out_w
 * block: zeros above and below the output rows [th.lo, th.hi) that read inside the image, and
 * in those rows zeros left and right of the columns [tw.lo, tw.hi), the input between. col2im
 * adds the blocks back in the same order, (ka, kb) then rows, so each input element sums its
 * contributions in the order of (ka, kb). The plane loops are GD_SIMD clones, into which the
 * helpers inline (a clone called per block cost col2im 10% more). */
#define GD_DEFINE_COLS(S, T)                                                                      \
    /* the rows of a block for a stride of sw > 1: from s, whose row steps by sstep */            \
    static void gd_cols_gather_##S(T *d, const T *s, int64_t sstep, int64_t rows, int64_t ow, gd_tap q, \
                                   int64_t sw)                                                    \
    {                                                                                             \
        for (int64_t r = 0; r < rows; r++, d += ow, s += sstep) {                                 \
            for (int64_t j = 0; j < q.lo; j++) d[j] = 0;                                          \
            if (sw == 2)                                                                          \
                for (int64_t j = q.lo; j < q.hi; j++) d[j] = s[(j - q.lo) * 2];                   \
            else                                                                                  \
                for (int64_t j = q.lo; j < q.hi; j++) d[j] = s[(j - q.lo) * sw];                  \
            for (int64_t j = q.hi; j < ow; j++) d[j] = 0;                                         \
        }                                                                                         \
    }                                                                                             \
    /* planes [begin, end): plane p is image p / channels, channel p % channels */                \
    GD_SIMD static void gd_im2col_##S(void *ctx, int64_t begin, int64_t end)                      \
    {                                                                                             \
        const gd_cols_job *job = ctx;                                                             \
        const gd_window2d *g = job->g;                                                            \
        const int64_t oh = g->out_h, ow = g->out_w, w = g->w, sh = g->stride_h, sw = g->stride_w; \
        const int64_t taps = g->kernel_h * g->kernel_w;                                           \
        for (int64_t p = begin; p < end; p++) {                                                   \
            const T *plane = (const T *)job->in + p * g->h * w;                                   \
            T *dst = (T *)job->out + (p / g->channels) * job->layout->image_stride +              \
                     (p % g->channels) * taps * job->layout->row_stride;                          \
            for (int64_t ka = 0; ka < g->kernel_h; ka++)                                          \
                for (int64_t kb = 0; kb < g->kernel_w; kb++, dst += job->layout->row_stride) {    \
                    const gd_tap r = job->th[ka], q = job->tw[kb];                                \
                    const int64_t rows = q.lo < q.hi ? r.hi - r.lo : 0; /* rows with input */     \
                    if (r.lo > 0) memset(dst, 0, (size_t)(r.lo * ow) * sizeof(T));                \
                    if (rows > 0) {                                                               \
                        const T *src = plane + (r.lo * sh + r.off) * w + q.lo * sw + q.off;       \
                        if (sw == 1)                                                              \
                            gd_cols_copy((char *)(dst + r.lo * ow), (const char *)src,            \
                                         sh * w * (int64_t)sizeof(T), rows, (size_t)ow * sizeof(T), \
                                         (size_t)q.lo * sizeof(T), (size_t)(q.hi - q.lo) * sizeof(T)); \
                        else                                                                      \
                            gd_cols_gather_##S(dst + r.lo * ow, src, sh * w, rows, ow, q, sw);   \
                    }                                                                             \
                    if (r.lo + rows < oh)                                                         \
                        memset(dst + (r.lo + rows) * ow, 0, (size_t)((oh - r.lo - rows) * ow) * sizeof(T)); \
                }                                                                                 \
        }                                                                                         \
    }                                                                                             \
    /* d[j * sw] += s[j] for j < n in rows rows (steps dstep and sstep) */                       \
    static inline void gd_add_rows_##S(T *d, int64_t dstep, const T *s, int64_t sstep, int64_t rows, int64_t n, \
                                       int64_t sw)                                                \
    {                                                                                             \
        const size_t bytes = (size_t)n * sizeof(T);                                               \
        if (sw == 1 && bytes >= 32)                                                               \
            gd_add_rows32_##S(d, dstep, s, sstep, rows, n);                                       \
        else if (sw == 1 && bytes >= 16)                                                          \
            gd_add_rows16_##S(d, dstep, s, sstep, rows, n);                                       \
        else if (sw == 1 && bytes >= 8)                                                           \
            gd_add_rows8_##S(d, dstep, s, sstep, rows, n);                                        \
        else if (sw == 2)                                                                         \
            for (int64_t r = 0; r < rows; r++, d += dstep, s += sstep)                            \
                for (int64_t j = 0; j < n; j++) d[j * 2] += s[j];                                 \
        else                                                                                      \
            for (int64_t r = 0; r < rows; r++, d += dstep, s += sstep)                            \
                for (int64_t j = 0; j < n; j++) d[j * sw] += s[j];                                \
    }                                                                                             \
    GD_SIMD static void gd_col2im_##S(void *ctx, int64_t begin, int64_t end)                      \
    {                                                                                             \
        const gd_cols_job *job = ctx;                                                             \
        const gd_window2d *g = job->g;                                                            \
        const int64_t ow = g->out_w, w = g->w, sh = g->stride_h, sw = g->stride_w;                \
        const int64_t taps = g->kernel_h * g->kernel_w;                                           \
        for (int64_t p = begin; p < end; p++) {                                                   \
            T *plane = (T *)job->out + p * g->h * w;                                              \
            const T *src = (const T *)job->in + (p / g->channels) * job->layout->image_stride +   \
                           (p % g->channels) * taps * job->layout->row_stride;                    \
            memset(plane, 0, (size_t)(g->h * w) * sizeof(T));                                     \
            for (int64_t ka = 0; ka < g->kernel_h; ka++)                                          \
                for (int64_t kb = 0; kb < g->kernel_w; kb++, src += job->layout->row_stride) {    \
                    const gd_tap r = job->th[ka], q = job->tw[kb];                                \
                    if (r.lo < r.hi && q.lo < q.hi)                                               \
                        gd_add_rows_##S(plane + (r.lo * sh + r.off) * w + q.lo * sw + q.off, sh * w, \
                                        src + r.lo * ow + q.lo, ow, r.hi - r.lo, q.hi - q.lo, sw); \
                }                                                                                 \
        }                                                                                         \
    }
GD_DEFINE_COLS(f32, float)
GD_DEFINE_COLS(f64, double)
#undef GD_DEFINE_COLS

/* Planes of work per entry: threads from the elements the call reads and writes (`work`) and
 * the size from which a second thread pays for that kind of work (threads.h). */
static void gd_window_run(gd_range_fn fn, void *job, int64_t planes, int64_t work, int64_t min_work)
{
    gd_parallel_for(gd_threads_for(work, min_work), planes, 1, fn, job);
}

/* fn over the planes of `images` images, with the job's taps. */
static int gd_cols_run(gd_range_fn fn, gd_cols_job *job, int64_t images, const char *op, gd_error *err)
{
    const gd_window2d *g = job->g;
    const int64_t planes = images * g->channels;
    if (planes == 0) return GD_OK;
    gd_tap *taps = malloc((size_t)(g->kernel_h + g->kernel_w) * sizeof *taps);
    if (taps == NULL)
        return gd_set_error(err, GD_ERR_HOST_OOM, "%s: out of host memory for a %lld x %lld kernel's taps", op,
                            (long long)g->kernel_h, (long long)g->kernel_w);
    gd_axis_taps(taps, g->kernel_h, g->dilation_h, g->pad_h, g->stride_h, g->h, g->out_h);
    gd_axis_taps(taps + g->kernel_h, g->kernel_w, g->dilation_w, g->pad_w, g->stride_w, g->w, g->out_w);
    job->th = taps;
    job->tw = taps + g->kernel_h;
    gd_window_run(fn, job, planes, planes * g->kernel_h * g->kernel_w * g->out_h * g->out_w, GD_PAR_ELEMENTWISE);
    free(taps);
    return GD_OK;
}

int gd_cpu_im2col(void *col, const gd_col_layout *layout, gd_dtype dtype, const void *im, const gd_window2d *g,
                  int64_t images, int device, gd_error *err)
{
    (void)device;
    if (dtype != GD_FLOAT32 && dtype != GD_FLOAT64) return gd_cpu_bad_dtype(err, "im2col", dtype);
    gd_cols_job job = {.g = g, .layout = layout, .out = col, .in = im};
    return gd_cols_run(dtype == GD_FLOAT32 ? gd_im2col_f32 : gd_im2col_f64, &job, images, "im2col", err);
}

int gd_cpu_col2im(void *im, gd_dtype dtype, const void *col, const gd_col_layout *layout, const gd_window2d *g,
                  int64_t images, int device, gd_error *err)
{
    (void)device;
    if (dtype != GD_FLOAT32 && dtype != GD_FLOAT64) return gd_cpu_bad_dtype(err, "col2im", dtype);
    gd_cols_job job = {.g = g, .layout = layout, .out = im, .in = col};
    return gd_cols_run(dtype == GD_FLOAT32 ? gd_col2im_f32 : gd_col2im_f64, &job, images, "col2im", err);
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
        gd_window_run(fn, job, planes, planes * (g->h * g->w + g->out_h * g->out_w), GD_PAR_POOL);
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
