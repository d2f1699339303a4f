/* window.cu - the CUDA backend's sliding-window kernels: im2col and col2im as Caffe's
 * (src/caffe/util/im2col.cu: one thread per window position, writing its kernel_h * kernel_w
 * column entries; one thread per image element, summing the column entries that read it) and
 * 2-D pooling with its adjoint (one thread per output element; one thread per input element,
 * gathering from the outputs whose windows read it, as PyTorch's NCHW kernels do).
 *
 * No kernel accumulates with atomics: every element is written by one thread, which adds in
 * a fixed order, so a result does not depend on the schedule. The windows' geometry is
 * window_math.h's, which the CPU backend runs too.
 */
#include "backend_cuda.cuh"
#include "window_math.h"

#include <math.h>

namespace {

/* ------------------------------------------------------------------------------------------
 * kernels
 * ---------------------------------------------------------------------------------------- */

/* item k = window position (b, c, i, j) of the images, C order */
template <class T>
__global__ void im2col_kernel(T *col, gd_col_layout layout, const T *im, gd_window2d g, int64_t n)
{
    const int64_t l_count = g.out_h * g.out_w;
    for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < n; k += (int64_t)gridDim.x * blockDim.x) {
        const int64_t l = k % l_count, plane = k / l_count;
        const int64_t b = plane / g.channels, c = plane % g.channels;
        const int64_t i = l / g.out_w, j = l % g.out_w;
        const T *x = im + plane * g.h * g.w;
        T *dst = col + b * layout.image_stride + c * g.kernel_h * g.kernel_w * layout.row_stride + l;
        for (int64_t a = 0; a < g.kernel_h; a++) {
            const int64_t y = i * g.stride_h - g.pad_h + a * g.dilation_h;
            for (int64_t e = 0; e < g.kernel_w; e++) {
                const int64_t xw = j * g.stride_w - g.pad_w + e * g.dilation_w;
                const bool inside = y >= 0 && y < g.h && xw >= 0 && xw < g.w;
                dst[(a * g.kernel_w + e) * layout.row_stride] = inside ? x[y * g.w + xw] : (T)0;
            }
        }
    }
}

/* item k = image element (b, c, y, x), C order: the sum of the column entries that read it */
template <class T>
__global__ void col2im_kernel(T *im, const T *col, gd_col_layout layout, gd_window2d g, int64_t n)
{
    for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < n; k += (int64_t)gridDim.x * blockDim.x) {
        const int64_t xw = k % g.w, y = (k / g.w) % g.h, plane = k / (g.h * g.w);
        const int64_t b = plane / g.channels, c = plane % g.channels;
        int64_t i0, i1, j0, j1;
        gd_covering(&i0, &i1, y, g.h, g.out_h, g.kernel_h, g.stride_h, g.pad_h, g.dilation_h, 0);
        gd_covering(&j0, &j1, xw, g.w, g.out_w, g.kernel_w, g.stride_w, g.pad_w, g.dilation_w, 0);
        const T *src = col + b * layout.image_stride + c * g.kernel_h * g.kernel_w * layout.row_stride;
        T sum = 0;
        for (int64_t i = i0; i < i1; i++) {
            const int64_t da = y + g.pad_h - i * g.stride_h; /* a * dilation */
            if (da % g.dilation_h != 0) continue;
            const int64_t a = da / g.dilation_h;
            for (int64_t j = j0; j < j1; j++) {
                const int64_t de = xw + g.pad_w - j * g.stride_w;
                if (de % g.dilation_w != 0) continue;
                const int64_t r = a * g.kernel_w + de / g.dilation_w;
                sum += src[r * layout.row_stride + i * g.out_w + j];
            }
        }
        im[k] = sum;
    }
}

/* sums of float32 windows in float32, of float64 in float64 */
template <class T>
__global__ void pool_kernel(T *out, int64_t *indices, gd_pool_kind kind, const T *in, gd_window2d g,
                            int count_include_pad, int64_t divisor, int64_t n)
{
    const int64_t dh = g.adaptive ? 1 : g.dilation_h, dw = g.adaptive ? 1 : g.dilation_w;
    for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < n; k += (int64_t)gridDim.x * blockDim.x) {
        const int64_t j = k % g.out_w, i = (k / g.out_w) % g.out_h, plane = k / (g.out_h * g.out_w);
        const T *x = in + plane * g.h * g.w;
        const gd_win w = gd_window_at(&g, i, j, count_include_pad, divisor);
        if (kind == GD_POOL_MAX) {
            T best = -(T)INFINITY;
            int64_t at = w.h0 * g.w + w.w0;
            for (int64_t a = w.h0; a < w.h1; a += dh)
                for (int64_t b = w.w0; b < w.w1; b += dw) {
                    const T v = x[a * g.w + b];
                    if (v > best || v != v) {
                        best = v;
                        at = a * g.w + b;
                    }
                }
            out[k] = best;
            if (indices) indices[k] = at;
        } else {
            T sum = 0;
            for (int64_t a = w.h0; a < w.h1; a++)
                for (int64_t b = w.w0; b < w.w1; b++) sum += x[a * g.w + b];
            out[k] = w.h0 < w.h1 && w.w0 < w.w1 ? (T)(sum / (T)w.divisor) : (T)0;
        }
    }
}

/* item k = input element (plane, y, x): the gradient the outputs whose windows read it send */
template <class T>
__global__ void unpool_kernel(T *grad_in, gd_pool_kind kind, const T *grad_out, const int64_t *indices,
                              gd_window2d g, int count_include_pad, int64_t divisor, int64_t n)
{
    const int64_t nout = g.out_h * g.out_w;
    for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < n; k += (int64_t)gridDim.x * blockDim.x) {
        const int64_t xw = k % g.w, y = (k / g.w) % g.h, plane = k / (g.h * g.w);
        int64_t i0, i1, j0, j1;
        gd_covering(&i0, &i1, y, g.h, g.out_h, g.kernel_h, g.stride_h, g.pad_h, g.dilation_h, g.adaptive);
        gd_covering(&j0, &j1, xw, g.w, g.out_w, g.kernel_w, g.stride_w, g.pad_w, g.dilation_w, g.adaptive);
        const T *gy = grad_out + plane * nout;
        T sum = 0;
        for (int64_t i = i0; i < i1; i++)
            for (int64_t j = j0; j < j1; j++) {
                if (kind == GD_POOL_MAX) {
                    if (indices[plane * nout + i * g.out_w + j] == y * g.w + xw) sum += gy[i * g.out_w + j];
                    continue;
                }
                const gd_win w = gd_window_at(&g, i, j, count_include_pad, divisor);
                if (y >= w.h0 && y < w.h1 && xw >= w.w0 && xw < w.w1) sum += gy[i * g.out_w + j] / (T)w.divisor;
            }
        grad_in[k] = sum;
    }
}

/* ------------------------------------------------------------------------------------------
 * launching
 * ---------------------------------------------------------------------------------------- */

int bad_dtype(gd_error *err, const char *op, gd_dtype dtype)
{
    return gd_set_error(err, GD_ERR_VALUE, "cuda %s: defined for float32 and float64, not dtype %d", op, (int)dtype);
}

/* The device's state for an entry over n items of a float dtype; 1 when there is nothing to
 * do, GD_OK to launch, or an error code. */
int enter(gd_cuda_device **dev, int device, gd_dtype dtype, int64_t n, const char *op, gd_error *err)
{
    if (dtype != GD_FLOAT32 && dtype != GD_FLOAT64) return bad_dtype(err, op, dtype);
    if (n <= 0) return 1;
    return gd_cuda_enter(dev, device, err);
}

template <class T>
int launch_im2col(void *col, const gd_col_layout *layout, const void *im, const gd_window2d *g, int64_t n,
                  gd_cuda_device *dev, gd_error *err)
{
    im2col_kernel<T><<<gd_cuda_blocks(dev, n, GD_CUDA_THREADS), GD_CUDA_THREADS, 0, dev->stream>>>(
        (T *)col, *layout, (const T *)im, *g, n);
    GD_CHECK_LAUNCH();
    return GD_OK;
}

template <class T>
int launch_col2im(void *im, const void *col, const gd_col_layout *layout, const gd_window2d *g, int64_t n,
                  gd_cuda_device *dev, gd_error *err)
{
    col2im_kernel<T><<<gd_cuda_blocks(dev, n, GD_CUDA_THREADS), GD_CUDA_THREADS, 0, dev->stream>>>(
        (T *)im, (const T *)col, *layout, *g, n);
    GD_CHECK_LAUNCH();
    return GD_OK;
}

template <class T>
int launch_pool(void *out, int64_t *indices, gd_pool_kind kind, const void *in, const gd_window2d *g,
                int count_include_pad, int64_t divisor, int64_t n, gd_cuda_device *dev, gd_error *err)
{
    pool_kernel<T><<<gd_cuda_blocks(dev, n, GD_CUDA_THREADS), GD_CUDA_THREADS, 0, dev->stream>>>(
        (T *)out, indices, kind, (const T *)in, *g, count_include_pad, divisor, n);
    GD_CHECK_LAUNCH();
    return GD_OK;
}

template <class T>
int launch_unpool(void *grad_in, gd_pool_kind kind, const void *grad_out, const int64_t *indices,
                  const gd_window2d *g, int count_include_pad, int64_t divisor, int64_t n, gd_cuda_device *dev,
                  gd_error *err)
{
    unpool_kernel<T><<<gd_cuda_blocks(dev, n, GD_CUDA_THREADS), GD_CUDA_THREADS, 0, dev->stream>>>(
        (T *)grad_in, kind, (const T *)grad_out, indices, *g, count_include_pad, divisor, n);
    GD_CHECK_LAUNCH();
    return GD_OK;
}

} // namespace

/* ------------------------------------------------------------------------------------------
 * the entries
 * ---------------------------------------------------------------------------------------- */

int gd_cuda_im2col(void *col, const gd_col_layout *layout, gd_dtype dtype, const void *im, const gd_window2d *g,
                   int64_t images, int device, gd_error *err)
{
    const int64_t n = images * g->channels * g->out_h * g->out_w;
    gd_cuda_device *dev = nullptr;
    int rc = enter(&dev, device, dtype, n, "im2col", err);
    if (rc != GD_OK) return rc == 1 ? GD_OK : rc;
    if (dtype == GD_FLOAT32) return launch_im2col<float>(col, layout, im, g, n, dev, err);
    return launch_im2col<double>(col, layout, im, g, n, dev, err);
}

int gd_cuda_col2im(void *im, gd_dtype dtype, const void *col, const gd_col_layout *layout, const gd_window2d *g,
                   int64_t images, int device, gd_error *err)
{
    const int64_t n = images * g->channels * g->h * g->w;
    gd_cuda_device *dev = nullptr;
    int rc = enter(&dev, device, dtype, n, "col2im", err);
    if (rc != GD_OK) return rc == 1 ? GD_OK : rc;
    if (dtype == GD_FLOAT32) return launch_col2im<float>(im, col, layout, g, n, dev, err);
    return launch_col2im<double>(im, col, layout, g, n, dev, err);
}

int gd_cuda_pool2d(void *out, int64_t *indices, gd_dtype dtype, gd_pool_kind kind, const void *in,
                   const gd_window2d *g, int64_t images, int count_include_pad, int64_t divisor, int device,
                   gd_error *err)
{
    const int64_t n = images * g->channels * g->out_h * g->out_w;
    gd_cuda_device *dev = nullptr;
    int rc = enter(&dev, device, dtype, n, "pool2d", err);
    if (rc != GD_OK) return rc == 1 ? GD_OK : rc;
    if (dtype == GD_FLOAT32)
        return launch_pool<float>(out, indices, kind, in, g, count_include_pad, divisor, n, dev, err);
    return launch_pool<double>(out, indices, kind, in, g, count_include_pad, divisor, n, dev, err);
}

int gd_cuda_pool2d_backward(void *grad_in, gd_dtype dtype, gd_pool_kind kind, const void *grad_out,
                            const int64_t *indices, const gd_window2d *g, int64_t images, int count_include_pad,
                            int64_t divisor, int device, gd_error *err)
{
    if (kind == GD_POOL_MAX && indices == nullptr)
        return gd_set_error(err, GD_ERR_VALUE, "cuda pool2d_backward: max pooling needs the forward's indices");
    const int64_t n = images * g->channels * g->h * g->w;
    gd_cuda_device *dev = nullptr;
    int rc = enter(&dev, device, dtype, n, "pool2d_backward", err);
    if (rc != GD_OK) return rc == 1 ? GD_OK : rc;
    if (dtype == GD_FLOAT32)
        return launch_unpool<float>(grad_in, kind, grad_out, indices, g, count_include_pad, divisor, n, dev, err);
    return launch_unpool<double>(grad_in, kind, grad_out, indices, g, count_include_pad, divisor, n, dev, err);
}
