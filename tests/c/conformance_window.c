/* conformance_window.c - the sliding-window entries: im2col and col2im in both column layouts
 * (one matrix per image, one for the batch) and pool2d and pool2d_backward (max with its
 * indices, average with and without the padding counted or a divisor given, adaptive), for
 * float32 and float64, over windows with padding, strides, dilation, asymmetric padding (the
 * output sizes of 'same' and ceil_mode) and sizes past the parallel thresholds, against
 * plain host loops that walk each window position by position.
 */
#include "conformance.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct window_case {
    const char *name;
    int64_t images, channels, h, w;
    int64_t kh, kw, sh, sw, ph, pw, dh, dw, oh, ow;
} window_case;

static const window_case window_cases[] = {
    {"3x3 pad 1", 2, 3, 7, 6, 3, 3, 1, 1, 1, 1, 1, 1, 7, 6},
    {"2x3 stride 2x1 pad 0x1 dilation 2x1", 1, 2, 9, 8, 2, 3, 2, 1, 0, 1, 2, 1, 4, 8},
    {"4x4 'same' (pad 1 before, 2 after)", 2, 1, 6, 5, 4, 4, 1, 1, 1, 1, 1, 1, 6, 5},
    {"3x3 stride 2 ceil_mode", 1, 2, 8, 8, 3, 3, 2, 2, 0, 0, 1, 1, 4, 4},
    {"1x1 stride 2", 2, 3, 5, 7, 1, 1, 2, 2, 0, 0, 1, 1, 3, 4},
    {"LeNet 5x5 pad 2, past the thread threshold", 5, 6, 28, 28, 5, 5, 1, 1, 2, 2, 1, 1, 28, 28},
    {"2x2 stride 2, past the thread threshold", 8, 16, 64, 64, 2, 2, 2, 2, 0, 0, 1, 1, 32, 32},
};

static gd_window2d geometry(const window_case *c, int adaptive)
{
    return (gd_window2d){c->channels, c->h, c->w, c->oh, c->ow, c->kh, c->kw, c->sh, c->sw,
                         c->ph, c->pw, c->dh, c->dw, adaptive};
}

/* Values with ties (multiples of 0.5) and, when `nans`, a NaN every 37 elements. */
static void fill_window_data(void *p, gd_dtype t, int64_t n, int nans)
{
    for (int64_t i = 0; i < n; i++) {
        const double v = nans && i % 37 == 5 ? NAN : round(gdt_rand_normal() * 4) / 2;
        gdt_put(p, t, i, v, 0);
    }
}

static gdt_tol sum_tol(gd_dtype t) { return (gdt_tol){4, t == GD_FLOAT32 ? 1e-5 : 1e-12, NULL}; }

/* ------------------------------------------------------------------------------------------
 * im2col and col2im
 * ---------------------------------------------------------------------------------------- */

static void check_cols(const window_case *c, gd_dtype t, int layout)
{
    const gd_window2d g = geometry(c, 0);
    const int64_t rows = c->channels * c->kh * c->kw, l = c->oh * c->ow, esz = (int64_t)gd_dtype_size(t);
    const int64_t nim = c->images * c->channels * c->h * c->w, ncol = c->images * rows * l;
    const gd_col_layout lay = {layout ? l : rows * l, layout ? c->images * l : l};
    void *im = gdt_host(nim, t), *col = gdt_host(ncol, t);
    double *want_col = gdt_ref_new(ncol, t), *want_im = gdt_ref_new(nim, t);
    fill_window_data(im, t, nim, 0);
    fill_window_data(col, t, ncol, 0);
    memset(want_im, 0, (size_t)nim * sizeof(double));
    for (int64_t b = 0; b < c->images; b++)
        for (int64_t ch = 0; ch < c->channels; ch++)
            for (int64_t a = 0; a < c->kh; a++)
                for (int64_t e = 0; e < c->kw; e++)
                    for (int64_t i = 0; i < c->oh; i++)
                        for (int64_t j = 0; j < c->ow; j++) {
                            const int64_t y = i * c->sh - c->ph + a * c->dh, x = j * c->sw - c->pw + e * c->dw;
                            const int64_t r = (ch * c->kh + a) * c->kw + e;
                            const int64_t at = b * lay.image_stride + r * lay.row_stride + i * c->ow + j;
                            const int inside = y >= 0 && y < c->h && x >= 0 && x < c->w;
                            const int64_t src = ((b * c->channels + ch) * c->h + y) * c->w + x;
                            want_col[at] = inside ? gdt_getf(im, t, src) : 0.0;
                            if (inside) want_im[src] += gdt_getf(col, t, at);
                        }
    void *dim = gdt_upload_new(im, (size_t)(nim * esz)), *dcol = gdt_alloc((size_t)(ncol * esz));
    if (OK(gdt_be->im2col(dcol, &lay, t, dim, &g, c->images, gdt_dev, &gdt_err)))
        EXPECT(dcol, t, ncol, want_col, GDT_EXACT, "im2col %s, %s, layout %d", c->name, gdt_dtype_name(t), layout);
    gdt_upload(dcol, col, (size_t)(ncol * esz));
    if (OK(gdt_be->col2im(dim, t, dcol, &lay, &g, c->images, gdt_dev, &gdt_err)))
        EXPECT(dim, t, nim, want_im, sum_tol(t), "col2im %s, %s, layout %d", c->name, gdt_dtype_name(t), layout);
    gdt_free(dim, (size_t)(nim * esz));
    gdt_free(dcol, (size_t)(ncol * esz));
    free(im), free(col), free(want_col), free(want_im);
}

/* ------------------------------------------------------------------------------------------
 * pooling
 * ---------------------------------------------------------------------------------------- */

typedef struct pool_mode {
    gd_pool_kind kind;
    int adaptive, count_include_pad;
    int64_t divisor;
} pool_mode;

/* The input positions window (i, j) reads, in row-major order, into at[] (plane offsets);
 * their count, and in *padded the positions inside the padded input (count_include_pad). */
static int64_t window_positions(int64_t *at, int64_t *padded, const window_case *c, const pool_mode *m, int64_t i,
                                int64_t j)
{
    int64_t n = 0;
    *padded = 0;
    if (m->adaptive) {
        const int64_t h0 = (int64_t)floor((double)(i * c->h) / (double)c->oh);
        const int64_t h1 = (int64_t)ceil((double)((i + 1) * c->h) / (double)c->oh);
        const int64_t w0 = (int64_t)floor((double)(j * c->w) / (double)c->ow);
        const int64_t w1 = (int64_t)ceil((double)((j + 1) * c->w) / (double)c->ow);
        for (int64_t y = h0; y < h1; y++)
            for (int64_t x = w0; x < w1; x++) at[n++] = y * c->w + x;
        *padded = n;
        return n;
    }
    for (int64_t a = 0; a < c->kh; a++)
        for (int64_t e = 0; e < c->kw; e++) {
            const int64_t y = i * c->sh - c->ph + a * c->dh, x = j * c->sw - c->pw + e * c->dw;
            *padded += y < c->h + c->ph && x < c->w + c->pw;
            if (y >= 0 && y < c->h && x >= 0 && x < c->w) at[n++] = y * c->w + x;
        }
    return n;
}

static void check_pool(const window_case *c, gd_dtype t, const pool_mode *m)
{
    const gd_window2d g = geometry(c, m->adaptive);
    const int64_t planes = c->images * c->channels, nin = c->h * c->w, nout = c->oh * c->ow;
    const int64_t esz = (int64_t)gd_dtype_size(t), kk = m->adaptive ? nin : c->kh * c->kw;
    void *x = gdt_host(planes * nin, t), *gy = gdt_host(planes * nout, t);
    double *want = gdt_ref_new(planes * nout, t), *want_gx = gdt_ref_new(planes * nin, t);
    int64_t *want_idx = malloc((size_t)(planes * nout) * sizeof(int64_t) + 1);
    int64_t *at = malloc((size_t)kk * sizeof(int64_t));
    fill_window_data(x, t, planes * nin, m->kind == GD_POOL_MAX);
    fill_window_data(gy, t, planes * nout, 0);
    memset(want_gx, 0, (size_t)(planes * nin) * sizeof(double));
    for (int64_t p = 0; p < planes; p++)
        for (int64_t o = 0; o < nout; o++) {
            int64_t padded;
            const int64_t n = window_positions(at, &padded, c, m, o / c->ow, o % c->ow);
            const double g_o = gdt_getf(gy, t, p * nout + o);
            if (m->kind == GD_POOL_MAX) { /* PyTorch's v > best || isnan(v), from -inf */
                double best = -INFINITY;
                int64_t where = at[0];
                for (int64_t k = 0; k < n; k++) {
                    const double v = gdt_getf(x, t, p * nin + at[k]);
                    if (v > best || isnan(v)) best = v, where = at[k];
                }
                want[p * nout + o] = best;
                want_idx[p * nout + o] = where;
                want_gx[p * nin + where] += g_o;
                continue;
            }
            double sum = 0;
            for (int64_t k = 0; k < n; k++) sum += gdt_getf(x, t, p * nin + at[k]);
            const double div = m->divisor ? (double)m->divisor : m->count_include_pad ? (double)padded : (double)n;
            want[p * nout + o] = n ? sum / div : 0.0;
            for (int64_t k = 0; k < n; k++) want_gx[p * nin + at[k]] += g_o / div;
        }
    const char *kind = m->kind == GD_POOL_MAX ? "max" : m->adaptive ? "adaptive avg" : "avg";
    void *dx = gdt_upload_new(x, (size_t)(planes * nin * esz)), *dy = gdt_alloc((size_t)(planes * nout * esz));
    int64_t *didx = m->kind == GD_POOL_MAX ? gdt_alloc((size_t)(planes * nout) * sizeof(int64_t)) : NULL;
    if (OK(gdt_be->pool2d(dy, didx, t, m->kind, dx, &g, c->images, m->count_include_pad, m->divisor, gdt_dev,
                          &gdt_err))) {
        EXPECT(dy, t, planes * nout, want, sum_tol(t), "pool2d %s %s, %s (include pad %d, divisor %lld)", kind,
               c->name, gdt_dtype_name(t), m->count_include_pad, (long long)m->divisor);
        if (didx) EXPECT(didx, GD_INT64, planes * nout, want_idx, GDT_EXACT, "pool2d %s %s indices", kind, c->name);
    }
    gdt_upload(dy, gy, (size_t)(planes * nout * esz));
    if (OK(gdt_be->pool2d_backward(dx, t, m->kind, dy, didx, &g, c->images, m->count_include_pad, m->divisor,
                                   gdt_dev, &gdt_err)))
        EXPECT(dx, t, planes * nin, want_gx, sum_tol(t), "pool2d_backward %s %s, %s (include pad %d, divisor %lld)",
               kind, c->name, gdt_dtype_name(t), m->count_include_pad, (long long)m->divisor);
    gdt_free(dx, (size_t)(planes * nin * esz));
    gdt_free(dy, (size_t)(planes * nout * esz));
    if (didx) gdt_free(didx, (size_t)(planes * nout) * sizeof(int64_t));
    free(x), free(gy), free(want), free(want_gx), free(want_idx), free(at);
}

/* Adaptive windows: shrinking by uneven factors, growing (windows overlap), one output. */
static const window_case adaptive_cases[] = {
    {"7x6 -> 3x4", 2, 3, 7, 6, 0, 0, 0, 0, 0, 0, 0, 0, 3, 4},
    {"5x5 -> 7x8", 1, 2, 5, 5, 0, 0, 0, 0, 0, 0, 0, 0, 7, 8},
    {"8x8 -> 1x1", 3, 2, 8, 8, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1},
};

void gdt_check_window(void)
{
    const gd_dtype dtypes[] = {GD_FLOAT32, GD_FLOAT64};
    const size_t ncases = sizeof window_cases / sizeof window_cases[0];
    for (size_t d = 0; d < 2; d++) {
        for (size_t k = 0; k < ncases; k++) {
            const window_case *c = &window_cases[k];
            check_cols(c, dtypes[d], 0);
            check_cols(c, dtypes[d], 1);
            check_pool(c, dtypes[d], &(pool_mode){GD_POOL_MAX, 0, 0, 0});
            if (c->dh != 1 || c->dw != 1) continue; /* average pooling has no dilation */
            check_pool(c, dtypes[d], &(pool_mode){GD_POOL_AVG, 0, 1, 0});
            check_pool(c, dtypes[d], &(pool_mode){GD_POOL_AVG, 0, 0, 0});
            check_pool(c, dtypes[d], &(pool_mode){GD_POOL_AVG, 0, 0, 5});
        }
        for (size_t k = 0; k < sizeof adaptive_cases / sizeof adaptive_cases[0]; k++) {
            check_pool(&adaptive_cases[k], dtypes[d], &(pool_mode){GD_POOL_AVG, 1, 0, 0});
            check_pool(&adaptive_cases[k], dtypes[d], &(pool_mode){GD_POOL_MAX, 1, 0, 0});
        }
    }
}
