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

#include "hostdev.h"

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

/* The window of output o along one axis of n inputs: the inputs [*lo, *hi) it reads (in steps
 * of the dilation) and, returned, how many positions of the padded axis it covers. */
GD_HOSTDEV int64_t gd_axis_window(int64_t *lo, int64_t *hi, int64_t o, int64_t n, int64_t out, int64_t kernel,
                                  int64_t stride, int64_t pad, int64_t dilation, int adaptive)
{
    if (adaptive) {
        *lo = gd_adaptive_start(o, n, out);
        *hi = gd_adaptive_end(o, n, out);
        return *hi - *lo;
    }
    const int64_t s = o * stride - pad, e = gd_win_min(s + (kernel - 1) * dilation + 1, n + pad);
    /* the first position inside the input, on the window's grid of dilation steps */
    *lo = s < 0 ? s + (-s + dilation - 1) / dilation * dilation : s;
    *hi = gd_win_min(e, n);
    return e - s;
}

/* The average's divisor of a window whose axes cover `padded_h` x `padded_w` positions of the
 * padded input and [h0, h1) x [w0, w1) of the input itself. */
GD_HOSTDEV double gd_window_divisor(int64_t padded_h, int64_t padded_w, int64_t h0, int64_t h1, int64_t w0,
                                    int64_t w1, int count_include_pad, int64_t divisor)
{
    if (divisor > 0) return (double)divisor;
    if (count_include_pad) return (double)(padded_h * padded_w);
    return (double)(gd_win_max(0, h1 - h0) * gd_win_max(0, w1 - w0));
}

GD_HOSTDEV gd_win gd_window_at(const gd_window2d *g, int64_t i, int64_t j, int count_include_pad, int64_t divisor)
{
    gd_win r;
    const int64_t ph = gd_axis_window(&r.h0, &r.h1, i, g->h, g->out_h, g->kernel_h, g->stride_h, g->pad_h,
                                      g->dilation_h, g->adaptive);
    const int64_t pw = gd_axis_window(&r.w0, &r.w1, j, g->w, g->out_w, g->kernel_w, g->stride_w, g->pad_w,
                                      g->dilation_w, g->adaptive);
    r.divisor = gd_window_divisor(ph, pw, r.h0, r.h1, r.w0, r.w1, count_include_pad || g->adaptive,
                                  g->adaptive ? 0 : divisor);
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
