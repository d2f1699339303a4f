/* compute.c - what the operations share on the way to a backend: planning elementwise work
 * (broadcast strides, merged axes) and backend calls on whole arrays (fill, unary, astype,
 * converted and broadcast copies), each run through gd_run_begin/gd_run_end.
 */
#include "core.h"

/* ------------------------------------------------------------------------------------------
 * elementwise planning: broadcasting and axis collapsing
 * ---------------------------------------------------------------------------------------- */

/* Describe out (C-contiguous, `shape`, `size` >= 1 elements) = f(operands). Each operand is an
 * array broadcastable to `shape` (right-aligned; extra leading axes of length 1 allowed) or
 * NULL for a scalar whose opd[i].scalar the caller has set. Strides are in elements, 0 on
 * broadcast axes. Axes of length 1 drop out and neighbouring axes merge wherever every operand
 * steps through them as one, so the backend loops over as few axes as possible. */
void gd_ewise_plan(gd_ewise *ew, gd_operand *opd, ArrayObject *const *arrs, int nops, int ndim, const int64_t *shape,
                   int64_t size)
{
    int64_t strides[3][GD_MAX_NDIM];
    int contiguous = 1;
    for (int i = 0; i < nops; i++) {
        const ArrayObject *a = arrs[i];
        opd[i].data = a ? a->data : NULL;
        if (!a) continue;
        if (a->size != size) contiguous = 0;
        int64_t run = 1;
        for (int k = ndim - 1; k >= 0; k--) {
            int j = k - (ndim - a->ndim);
            int64_t d = j >= 0 ? a->shape[j] : 1;
            strides[i][k] = d == 1 ? 0 : run;
            run *= d;
        }
    }
    ew->size = size;
    ew->contiguous = contiguous;
    if (contiguous) {
        ew->ndim = 1;
        ew->shape[0] = size;
        for (int i = 0; i < nops; i++) opd[i].strides[0] = arrs[i] ? 1 : 0;
        return;
    }
    int nd = 0;
    for (int k = 0; k < ndim; k++) {
        if (shape[k] == 1) continue;
        int merge = nd > 0;
        for (int i = 0; i < nops && merge; i++)
            if (arrs[i] && opd[i].strides[nd - 1] != strides[i][k] * shape[k]) merge = 0;
        if (merge) {
            ew->shape[nd - 1] *= shape[k];
            for (int i = 0; i < nops; i++) opd[i].strides[nd - 1] = arrs[i] ? strides[i][k] : 0;
        } else {
            ew->shape[nd] = shape[k];
            for (int i = 0; i < nops; i++) opd[i].strides[nd] = arrs[i] ? strides[i][k] : 0;
            nd++;
        }
    }
    ew->ndim = nd;
}

void gd_contiguous_plan(gd_ewise *ew, int64_t n)
{
    ew->ndim = 1;
    ew->contiguous = 1;
    ew->size = n;
    ew->shape[0] = n;
}

/* Whether two arrays on one device share any byte. */
int gd_overlaps(const ArrayObject *x, const ArrayObject *y)
{
    if (x->size == 0 || y->size == 0) return 0;
    uintptr_t x0 = (uintptr_t)x->data, y0 = (uintptr_t)y->data;
    uintptr_t x1 = x0 + (uintptr_t)x->size * gd_dtype_size(x->dtype);
    uintptr_t y1 = y0 + (uintptr_t)y->size * gd_dtype_size(y->dtype);
    return x0 < y1 && y0 < x1;
}

/* ------------------------------------------------------------------------------------------
 * backend calls on whole contiguous buffers
 * ---------------------------------------------------------------------------------------- */

int gd_run_ewise_unary(gd_state *st, const gd_backend *be, gd_device dev, void *out, gd_unop op, gd_dtype dt,
                       const gd_ewise *ew, const gd_operand *a, const char *name)
{
    gd_error err;
    PyThreadState *ts = gd_run_begin(dev, (double)ew->size);
    int rc = be->unary(out, op, dt, ew, a, dev.index, &err);
    return gd_run_end(st, dev, ts, rc, &err, name);
}

int gd_run_unary(gd_state *st, const gd_backend *be, gd_device dev, void *out, gd_unop op, gd_dtype dt,
                 const void *in, int64_t n, const char *name)
{
    if (n == 0) return 0;
    gd_ewise ew;
    gd_operand a;
    gd_contiguous_plan(&ew, n);
    a.data = in;
    a.strides[0] = 1;
    return gd_run_ewise_unary(st, be, dev, out, op, dt, &ew, &a, name);
}

int gd_run_fill(gd_state *st, const gd_backend *be, gd_device dev, void *out, gd_dtype dt, gd_scalar value,
                int64_t n, const char *name)
{
    if (n == 0) return 0;
    gd_ewise ew;
    gd_operand a;
    gd_contiguous_plan(&ew, n);
    a.data = NULL;
    a.scalar = value;
    a.strides[0] = 0;
    return gd_run_ewise_unary(st, be, dev, out, GD_COPY, dt, &ew, &a, name);
}

int gd_run_astype(gd_state *st, const gd_backend *be, gd_device dev, void *out, gd_dtype odt, const void *in,
                  gd_dtype idt, int64_t n, const char *name)
{
    if (n == 0) return 0;
    gd_error err;
    const int d = dev.index;
    PyThreadState *ts = gd_run_begin(dev, (double)n);
    int rc = odt == idt ? be->copy_device(out, d, in, d, (size_t)n * gd_dtype_size(odt), &err)
                        : be->astype(out, odt, in, idt, n, d, &err);
    return gd_run_end(st, dev, ts, rc, &err, name);
}

ArrayObject *gd_converted(gd_state *st, const gd_backend *be, ArrayObject *a, gd_dtype dt, const char *name)
{
    ArrayObject *t = gd_array_new(st, a->device, dt, a->ndim, a->shape, name);
    if (t && gd_run_astype(st, be, a->device, t->data, dt, a->data, a->dtype, a->size, name) < 0) Py_CLEAR(t);
    return t;
}

ArrayObject *gd_expanded(gd_state *st, const gd_backend *be, ArrayObject *a, int ndim, const int64_t *shape,
                         const char *name)
{
    int64_t size;
    if (gd_shape_size(&size, ndim, shape, name) < 0) return NULL;
    ArrayObject *t = gd_array_new(st, a->device, a->dtype, ndim, shape, name);
    if (!t || size == 0) return t;
    gd_ewise ew;
    gd_operand opd;
    gd_ewise_plan(&ew, &opd, &a, 1, ndim, shape, size);
    if (gd_run_ewise_unary(st, be, a->device, t->data, GD_COPY, a->dtype, &ew, &opd, name) < 0) Py_CLEAR(t);
    return t;
}
