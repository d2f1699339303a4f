/* window.c - the sliding-window operations of convolution and pooling: _im2col and _col2im
 * (the backends' im2col and col2im: convolution as matrix products, as Caffe computes it) and
 * _pool2d and _pool2d_backward (max and average pooling, plain or adaptive, and their
 * adjoints). These are private building blocks of gpudev/nn/_conv.py and _pool.py, which
 * check the user's arguments against PyTorch's rules, name the layer in their messages, cut
 * the batch into chunks and record the autograd nodes; here each call is checked again, as a
 * backend never sees bad input: arrays, dtypes, devices, a geometry whose every extent is
 * positive and whose arrays' sizes fit in int64.
 *
 * A geometry is a tuple of ten ints, (kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w,
 * dilation_h, dilation_w, out_h, out_w): gpudev.h's gd_window2d, whose out_h and out_w the
 * caller chooses (the right and bottom padding follow from them).
 */
#include "window.h"
#include "core.h"
#include "array.h"
#include "compute.h"
#include "device.h"
#include "runtime.h"
#include "trace.h"

/* ------------------------------------------------------------------------------------------
 * arguments
 * ---------------------------------------------------------------------------------------- */

/* o as a float32 or float64 Array of `ndim` dimensions: a borrowed reference, or NULL with
 * TypeError / ValueError naming op. */
static ArrayObject *float_array(gd_state *st, PyObject *o, int ndim, const char *op, const char *what)
{
    ArrayObject *a = gd_need_array(st, o, op);
    if (!a) return NULL;
    if (a->dtype != GD_FLOAT32 && a->dtype != GD_FLOAT64) {
        PyErr_Format(PyExc_TypeError, "%s: %s must be float32 or float64, got %s; convert it, e.g. x.astype(gd.float32)",
                     op, what, gd_dtype_name(a->dtype));
        return NULL;
    }
    if (a->ndim != ndim) {
        PyErr_Format(PyExc_ValueError, "%s: %s must have %d dimensions, got %d", op, what, ndim, a->ndim);
        return NULL;
    }
    return a;
}

/* A tuple of n ints into out; -1 with TypeError naming op. */
static int int_tuple(int64_t *out, PyObject *o, int n, const char *op, const char *what)
{
    if (!PyTuple_Check(o) || PyTuple_GET_SIZE(o) != n) {
        PyErr_Format(PyExc_TypeError, "%s: %s must be a tuple of %d ints", op, what, n);
        return -1;
    }
    for (int k = 0; k < n; k++) {
        PyObject *item = PyTuple_GET_ITEM(o, k);
        if (!PyLong_Check(item)) {
            PyErr_Format(PyExc_TypeError, "%s: %s must be a tuple of %d ints", op, what, n);
            return -1;
        }
        out[k] = PyLong_AsLongLong(item);
        if (out[k] == -1 && PyErr_Occurred()) return -1;
    }
    return 0;
}

/* The largest extent of a geometry or a plane: index arithmetic (i * stride + a * dilation,
 * i * h) then stays far inside int64. */
#define GD_WINDOW_MAX_EXTENT ((int64_t)1 << 30)

/* g from the geometry tuple and an input of (images, channels, h, w); -1 with ValueError when
 * an extent is not positive or above GD_WINDOW_MAX_EXTENT, a pad negative, or the column
 * matrix's size overflows int64. */
static int parse_geometry(gd_window2d *g, PyObject *o, const int64_t *in_shape, int adaptive, const char *op)
{
    int64_t v[10];
    if (int_tuple(v, o, 10, op, "the geometry") < 0) return -1;
    *g = (gd_window2d){.channels = in_shape[1], .h = in_shape[2], .w = in_shape[3], .kernel_h = v[0],
                       .kernel_w = v[1], .stride_h = v[2], .stride_w = v[3], .pad_h = v[4], .pad_w = v[5],
                       .dilation_h = v[6], .dilation_w = v[7], .out_h = v[8], .out_w = v[9], .adaptive = adaptive};
    int ok = g->h >= 1 && g->w >= 1 && g->h <= GD_WINDOW_MAX_EXTENT && g->w <= GD_WINDOW_MAX_EXTENT;
    for (int k = 0; k < 10; k++) ok = ok && v[k] >= (k == 4 || k == 5 ? 0 : 1) && v[k] <= GD_WINDOW_MAX_EXTENT;
    int64_t r = 0, l = 0;
    if (!ok || gd_mul_overflows(&r, v[0], v[1]) || gd_mul_overflows(&r, r, g->channels) ||
        gd_mul_overflows(&l, v[8], v[9]) || gd_mul_overflows(&r, r, l) || gd_mul_overflows(&r, r, in_shape[0])) {
        PyErr_Format(PyExc_ValueError,
                     "%s: bad window (kernel %lldx%lld, stride %lldx%lld, padding %lldx%lld, dilation %lldx%lld, "
                     "output %lldx%lld over %lldx%lld planes): extents must be in [1, 2**30], padding in [0, 2**30], "
                     "and the work's size must fit in int64",
                     op, (long long)v[0], (long long)v[1], (long long)v[2], (long long)v[3], (long long)v[4],
                     (long long)v[5], (long long)v[6], (long long)v[7], (long long)v[8], (long long)v[9],
                     (long long)g->h, (long long)g->w);
        return -1;
    }
    return 0;
}

static int same_device(const ArrayObject *a, const ArrayObject *b, const char *op)
{
    if (gd_device_eq(a->device, b->device)) return 0;
    PyErr_Format(PyExc_ValueError, "%s: the arrays must be on one device", op);
    return -1;
}

static int want_shape(const ArrayObject *a, int ndim, const int64_t *shape, const char *op, const char *what)
{
    int same = a->ndim == ndim;
    for (int k = 0; same && k < ndim; k++) same = a->shape[k] == shape[k];
    if (same) return 0;
    PyErr_Format(PyExc_ValueError, "%s: %s does not have the shape the geometry gives", op, what);
    return -1;
}

/* ------------------------------------------------------------------------------------------
 * _im2col(x, geometry, layout) and _col2im(col, geometry, layout, image_shape)
 *
 * layout 0: col is (images, rows, L), one matrix per image; layout 1: col is (rows, images,
 * L), one matrix (rows, images * L) for the batch. rows = channels * kernel_h * kernel_w,
 * L = out_h * out_w.
 * ---------------------------------------------------------------------------------------- */

static int col_shape(int64_t *shape, gd_col_layout *lay, const gd_window2d *g, int64_t images, long layout,
                     const char *op)
{
    const int64_t rows = g->channels * g->kernel_h * g->kernel_w, l = g->out_h * g->out_w;
    if (layout != 0 && layout != 1) {
        PyErr_Format(PyExc_ValueError, "%s: layout must be 0 or 1, got %ld", op, layout);
        return -1;
    }
    shape[0] = layout ? rows : images;
    shape[1] = layout ? images : rows;
    shape[2] = l;
    lay->image_stride = layout ? l : rows * l;
    lay->row_stride = layout ? images * l : l;
    return 0;
}

/* out (a new array of out_shape) = im2col(in) (to_cols) or col2im(in), one backend call. */
static PyObject *run_cols(gd_state *st, int to_cols, ArrayObject *in, const gd_window2d *g, const gd_col_layout *lay,
                          int64_t images, int out_ndim, const int64_t *out_shape, const char *op)
{
    const gd_backend *be = gd_backend_of(st, in->device, op);
    ArrayObject *src = be ? gd_contiguous(st, be, in, op) : NULL;
    ArrayObject *out = src ? gd_array_new(st, in->device, in->dtype, out_ndim, out_shape, op) : NULL;
    if (out && out->size > 0) {
        gd_error err;
        PyThreadState *ts = gd_run_begin(in->device, (double)(to_cols ? out->size : in->size));
        const int dev = in->device.index;
        int rc = to_cols ? be->im2col(out->data, lay, in->dtype, src->data, g, images, dev, &err)
                         : be->col2im(out->data, in->dtype, src->data, lay, g, images, dev, &err);
        if (gd_run_end(st, in->device, ts, rc, &err, op) < 0) Py_CLEAR(out);
    }
    if (out && gd_trace_op(st, to_cols ? "im2col" : "col2im", out, in, NULL) < 0) Py_CLEAR(out);
    Py_XDECREF(src);
    return (PyObject *)out;
}

static PyObject *mod_im2col(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    gd_state *st = PyModule_GetState(module);
    const char *op = "_im2col";
    if (nargs != 3) return PyErr_Format(PyExc_TypeError, "%s(x, geometry, layout) takes 3 arguments", op);
    ArrayObject *x = float_array(st, args[0], 4, op, "x");
    gd_window2d g;
    const long layout = x ? PyLong_AsLong(args[2]) : 0;
    if (!x || (layout == -1 && PyErr_Occurred()) || parse_geometry(&g, args[1], x->shape, 0, op) < 0) return NULL;
    int64_t shape[3];
    gd_col_layout lay;
    if (col_shape(shape, &lay, &g, x->shape[0], layout, op) < 0) return NULL;
    return run_cols(st, 1, x, &g, &lay, x->shape[0], 3, shape, op);
}

static PyObject *mod_col2im(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    gd_state *st = PyModule_GetState(module);
    const char *op = "_col2im";
    if (nargs != 4) return PyErr_Format(PyExc_TypeError, "%s(col, geometry, layout, image_shape) takes 4 arguments", op);
    ArrayObject *col = float_array(st, args[0], 3, op, "col");
    int64_t ishape[4], shape[3];
    gd_window2d g;
    gd_col_layout lay;
    const long layout = col ? PyLong_AsLong(args[2]) : 0;
    if (!col || (layout == -1 && PyErr_Occurred()) || int_tuple(ishape, args[3], 4, op, "image_shape") < 0)
        return NULL;
    if (ishape[0] < 0 || ishape[1] < 0) return PyErr_Format(PyExc_ValueError, "%s: negative image_shape", op);
    if (parse_geometry(&g, args[1], ishape, 0, op) < 0 || col_shape(shape, &lay, &g, ishape[0], layout, op) < 0 ||
        want_shape(col, 3, shape, op, "col") < 0)
        return NULL;
    return run_cols(st, 0, col, &g, &lay, ishape[0], 4, ishape, op);
}

/* ------------------------------------------------------------------------------------------
 * _pool2d(x, kind, geometry, adaptive, count_include_pad, divisor, with_indices) and
 * _pool2d_backward(grad, kind, geometry, adaptive, count_include_pad, divisor, indices,
 * image_shape). kind 0 is max, 1 average; an average takes no dilation. _pool2d returns the
 * pooled array, or (pooled, indices) with with_indices; indices are int64 positions in each
 * input plane.
 * ---------------------------------------------------------------------------------------- */

typedef struct pool_args {
    long kind;
    int adaptive, count_include_pad;
    int64_t divisor;
} pool_args;

static int parse_pool(pool_args *p, PyObject *kind, PyObject *adaptive, PyObject *cip, PyObject *divisor,
                      const char *op)
{
    p->kind = PyLong_AsLong(kind);
    p->divisor = PyLong_AsLongLong(divisor);
    p->adaptive = PyObject_IsTrue(adaptive);
    p->count_include_pad = PyObject_IsTrue(cip);
    if (PyErr_Occurred() || p->adaptive < 0 || p->count_include_pad < 0) return -1;
    if ((p->kind != GD_POOL_MAX && p->kind != GD_POOL_AVG) || p->divisor < 0) {
        PyErr_Format(PyExc_ValueError, "%s: kind must be 0 (max) or 1 (average) and divisor >= 0", op);
        return -1;
    }
    return 0;
}

static int check_pool_geometry(const gd_window2d *g, const pool_args *p, const char *op)
{
    if (p->kind != GD_POOL_AVG || p->adaptive || (g->dilation_h == 1 && g->dilation_w == 1)) return 0;
    PyErr_Format(PyExc_ValueError, "%s: average pooling takes no dilation", op);
    return -1;
}

static PyObject *mod_pool2d(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    gd_state *st = PyModule_GetState(module);
    const char *op = "_pool2d";
    if (nargs != 7)
        return PyErr_Format(PyExc_TypeError,
                            "%s(x, kind, geometry, adaptive, count_include_pad, divisor, with_indices) takes 7 arguments",
                            op);
    ArrayObject *x = float_array(st, args[0], 4, op, "x");
    pool_args p;
    gd_window2d g;
    const int with_indices = x ? PyObject_IsTrue(args[6]) : 0;
    if (!x || with_indices < 0 || parse_pool(&p, args[1], args[3], args[4], args[5], op) < 0 ||
        parse_geometry(&g, args[2], x->shape, p.adaptive, op) < 0 || check_pool_geometry(&g, &p, op) < 0)
        return NULL;
    const int64_t shape[4] = {x->shape[0], x->shape[1], g.out_h, g.out_w};
    const gd_backend *be = gd_backend_of(st, x->device, op);
    ArrayObject *src = be ? gd_contiguous(st, be, x, op) : NULL;
    ArrayObject *out = src ? gd_array_new(st, x->device, x->dtype, 4, shape, op) : NULL;
    ArrayObject *idx = out && with_indices ? gd_array_new(st, x->device, GD_INT64, 4, shape, op) : NULL;
    if (out && with_indices && !idx) Py_CLEAR(out);
    if (out && out->size > 0) {
        gd_error err;
        PyThreadState *ts = gd_run_begin(x->device, (double)(x->size + out->size));
        int rc = be->pool2d(out->data, idx ? (int64_t *)idx->data : NULL, x->dtype, (gd_pool_kind)p.kind, src->data,
                            &g, x->shape[0], p.count_include_pad, p.divisor, x->device.index, &err);
        if (gd_run_end(st, x->device, ts, rc, &err, op) < 0) Py_CLEAR(out);
    }
    if (out && (gd_trace_op(st, "pool2d", out, x, NULL) < 0 || (idx && gd_guard_inherit(st, (PyObject *)idx, args[0]) < 0)))
        Py_CLEAR(out);
    Py_XDECREF(src);
    if (!out || !idx) {
        Py_XDECREF(idx);
        return (PyObject *)out;
    }
    return Py_BuildValue("(NN)", (PyObject *)out, (PyObject *)idx);
}

static PyObject *mod_pool2d_backward(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    gd_state *st = PyModule_GetState(module);
    const char *op = "_pool2d_backward";
    if (nargs != 8)
        return PyErr_Format(PyExc_TypeError,
                            "%s(grad, kind, geometry, adaptive, count_include_pad, divisor, indices, image_shape) "
                            "takes 8 arguments", op);
    ArrayObject *gy = float_array(st, args[0], 4, op, "grad");
    int64_t ishape[4];
    pool_args p;
    gd_window2d g;
    if (!gy || int_tuple(ishape, args[7], 4, op, "image_shape") < 0 ||
        parse_pool(&p, args[1], args[3], args[4], args[5], op) < 0 ||
        parse_geometry(&g, args[2], ishape, p.adaptive, op) < 0 || check_pool_geometry(&g, &p, op) < 0)
        return NULL;
    const int64_t oshape[4] = {ishape[0], ishape[1], g.out_h, g.out_w};
    ArrayObject *idx = NULL;
    if (want_shape(gy, 4, oshape, op, "grad") < 0) return NULL;
    if (p.kind == GD_POOL_MAX) {
        idx = gd_need_array(st, args[6], op);
        if (!idx || want_shape(idx, 4, oshape, op, "indices") < 0 || same_device(gy, idx, op) < 0) return NULL;
        if (idx->dtype != GD_INT64) return PyErr_Format(PyExc_TypeError, "%s: indices must be int64", op);
    }
    const gd_backend *be = gd_backend_of(st, gy->device, op);
    ArrayObject *src = be ? gd_contiguous(st, be, gy, op) : NULL;
    ArrayObject *isrc = src && idx ? gd_contiguous(st, be, idx, op) : NULL;
    ArrayObject *out = src && (isrc || !idx) ? gd_array_new(st, gy->device, gy->dtype, 4, ishape, op) : NULL;
    if (out && out->size > 0) {
        gd_error err;
        PyThreadState *ts = gd_run_begin(gy->device, (double)(gy->size + out->size));
        int rc = be->pool2d_backward(out->data, gy->dtype, (gd_pool_kind)p.kind, src->data,
                                     isrc ? (const int64_t *)isrc->data : NULL, &g, ishape[0], p.count_include_pad,
                                     p.divisor, gy->device.index, &err);
        if (gd_run_end(st, gy->device, ts, rc, &err, op) < 0) Py_CLEAR(out);
    }
    if (out && gd_trace_op(st, "pool2d_backward", out, gy, idx) < 0) Py_CLEAR(out);
    Py_XDECREF(src);
    Py_XDECREF(isrc);
    return (PyObject *)out;
}

/* ------------------------------------------------------------------------------------------
 * module functions
 * ---------------------------------------------------------------------------------------- */

static PyMethodDef window_functions[] = {
    {"_im2col", GD_FN(mod_im2col), METH_FASTCALL, "_im2col(x, geometry, layout): convolution's windows as columns"},
    {"_col2im", GD_FN(mod_col2im), METH_FASTCALL,
     "_col2im(col, geometry, layout, image_shape): the adjoint of _im2col"},
    {"_pool2d", GD_FN(mod_pool2d), METH_FASTCALL,
     "_pool2d(x, kind, geometry, adaptive, count_include_pad, divisor, with_indices): max or average pooling"},
    {"_pool2d_backward", GD_FN(mod_pool2d_backward), METH_FASTCALL,
     "_pool2d_backward(grad, kind, geometry, adaptive, count_include_pad, divisor, indices, image_shape): the "
     "adjoint of _pool2d"},
    {NULL, NULL, 0, NULL},
};

int gd_window_setup(PyObject *module) { return PyModule_AddFunctions(module, window_functions); }
