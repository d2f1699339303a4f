/* window_math.h - where a sliding window (gd_window2d, gpudev.h) reads: which outputs of a row
 * read inside the input (im2col, col2im), pooling's windows as PyTorch clips and counts them,
 * and, for the GPU's adjoints, which outputs read a given input element. The CPU and the CUDA
 * backends both run these, so both compute the same windows.
 *
 * Plain C11 that also compiles as CUDA C++ (the functions are then __host__ __device__).
 */
#ifndef GPUDEV_WINDOW_MATH_H
#define GPUDEV_WINDOW_MATH_H

#include <stdint.h>

#include "gpudev.h"

#ifndef GD_HOSTDEV
#ifdef __CUDACC__
#define GD_HOSTDEV __host__ __device__ __forceinline__
#else
#define GD_HOSTDEV static inline
#endif
#endif

GD_HOSTDEV int64_t gd_win_min(int64_t a, int64_t b) { return a < b ? a : b; }
GD_HOSTDEV int64_t gd_win_max(int64_t a, int64_t b) { return a > b ? a : b; }

/* Outputs [*lo, *hi) of an axis of `out` whose input offset o * stride + off falls inside
 * [0, n) (stride >= 1). */
GD_HOSTDEV void gd_valid_range(int64_t *lo, int64_t *hi, int64_t off, int64_t stride, int64_t n, int64_t out)
{
    const int64_t a = off >= 0 ? 0 : (-off + stride - 1) / stride;
    const int64_t b = n - off <= 0 ? 0 : (n - off + stride - 1) / stride;
    *lo = gd_win_min(a, out);
    *hi = gd_win_max(*lo, gd_win_min(b, out));
}

/* Adaptive pooling's window along an axis: [floor(i n / out), ceil((i + 1) n / out)). */
GD_HOSTDEV int64_t gd_adaptive_start(int64_t i, int64_t n, int64_t out) { return i * n / out; }
GD_HOSTDEV int64_t gd_adaptive_end(int64_t i, int64_t n, int64_t out) { return ((i + 1) * n + out - 1) / out; }

/* One pooling window: the rows [h0, h1) and columns [w0, w1) it reads inside the input (in
 * steps of the dilation), and the average's divisor. PyTorch's arithmetic (avg_pool2d): the
 * window is first clipped to the padded input, whose size counts when count_include_pad;
 * `divisor` > 0 overrides both. */
typedef struct gd_win {
    int64_t h0, h1, w0, w1;
    double divisor;
} gd_win;

GD_HOSTDEV gd_win gd_window_at(const gd_window2d *g, int64_t i, int64_t j, int count_include_pad, int64_t divisor)
{
    gd_win r;
    if (g->adaptive) {
        r.h0 = gd_adaptive_start(i, g->h, g->out_h);
        r.h1 = gd_adaptive_end(i, g->h, g->out_h);
        r.w0 = gd_adaptive_start(j, g->w, g->out_w);
        r.w1 = gd_adaptive_end(j, g->w, g->out_w);
        r.divisor = (double)((r.h1 - r.h0) * (r.w1 - r.w0));
        return r;
    }
    const int64_t hs = i * g->stride_h - g->pad_h, ws = j * g->stride_w - g->pad_w;
    const int64_t he = gd_win_min(hs + (g->kernel_h - 1) * g->dilation_h + 1, g->h + g->pad_h);
    const int64_t we = gd_win_min(ws + (g->kernel_w - 1) * g->dilation_w + 1, g->w + g->pad_w);
    const int64_t padded = (he - hs) * (we - ws);
    /* the first row and column inside the input, on the window's grid of dilation steps */
    r.h0 = hs < 0 ? hs + (-hs + g->dilation_h - 1) / g->dilation_h * g->dilation_h : hs;
    r.w0 = ws < 0 ? ws + (-ws + g->dilation_w - 1) / g->dilation_w * g->dilation_w : ws;
    r.h1 = gd_win_min(he, g->h);
    r.w1 = gd_win_min(we, g->w);
    const int64_t inside = gd_win_max(0, r.h1 - r.h0) * gd_win_max(0, r.w1 - r.w0);
    r.divisor = divisor > 0 ? (double)divisor : (double)(count_include_pad ? padded : inside);
    return r;
}

/* The outputs [*lo, *hi) along an axis whose windows may read input position y: for a plain
 * window those whose span (kernel - 1) * dilation + 1 covers y (a dilated window may still
 * skip it: the caller checks), for an adaptive one those PyTorch's adaptive pooling assigns. */
GD_HOSTDEV void gd_covering(int64_t *lo, int64_t *hi, int64_t y, int64_t n, int64_t out, int64_t kernel,
                            int64_t stride, int64_t pad, int64_t dilation, int adaptive)
{
    if (adaptive) {
        *lo = y * out / n;
        *hi = gd_win_min(((y + 1) * out + n - 1) / n, out);
        return;
    }
    const int64_t span = (kernel - 1) * dilation + 1, at = y + pad;
    *lo = at < span ? 0 : (at - span) / stride + 1;
    *hi = gd_win_min(at / stride + 1, out);
}

#endif /* GPUDEV_WINDOW_MATH_H */
