/* compute.c - what the operations share on the way to a backend: planning elementwise work
 * (broadcast strides, axis order, merged axes), where arrays lie in memory (overlap), and
 * backend calls on whole arrays (fill, unary, astype, compacting, converted and broadcast
 * copies, stores into views), each run through gd_run_begin/gd_run_end.
 */
#include "compute.h"
#include "core.h"
#include "array.h"
#include "runtime.h"
#include "shape.h"

#include <string.h>

/* |stride| for ordering axes (strides of real arrays are far from INT64_MIN) */
#define GD_ABS_STRIDE(s) ((s) < 0 ? -(s) : (s))

/* ------------------------------------------------------------------------------------------
 * elementwise planning: broadcasting, axis order and axis collapsing
 * ---------------------------------------------------------------------------------------- */

/* Whether every array operand is laid out exactly like a C-contiguous output of `size`. */
static int all_contiguous(ArrayObject *const *arrs, int nops, int ndim, const int64_t *shape, int64_t size,
                          const int64_t *out_strides)
{
    if (out_strides && !gd_is_c_contiguous(ndim, shape, out_strides)) return 0;
    for (int i = 0; i < nops; i++)
        if (arrs[i] && (!arrs[i]->contiguous || arrs[i]->size != size)) return 0;
    return 1;
}

/* The axes of length > 1 into order[], outermost first: by the output's stride, largest first
 * (a stable sort: a C-contiguous output keeps its order). Returns how many. */
static int axis_order(int *order, int ndim, const int64_t *shape, const int64_t *os)
{
    int n = 0;
    for (int k = 0; k < ndim; k++) {
        if (shape[k] == 1) continue;
        int j = n++;
        for (; j > 0 && GD_ABS_STRIDE(os[order[j - 1]]) < GD_ABS_STRIDE(os[k]); j--) order[j] = order[j - 1];
        order[j] = k;
    }
    return n;
}

/* Describe out = f(operands). Strides are in elements, 0 on broadcast axes. Axes of length 1
 * drop out, the rest are ordered by the output's strides (so an in-place operation on a
 * transposed view walks memory in order) and neighbouring axes merge wherever every operand
 * steps through them as one, so the backend loops over as few axes as possible. */
void gd_ewise_plan(gd_ewise *ew, gd_operand *opd, ArrayObject *const *arrs, int nops, int ndim, const int64_t *shape,
                   int64_t size, const int64_t *out_strides)
{
    ew->size = size;
    for (int i = 0; i < nops; i++) opd[i].data = arrs[i] ? arrs[i]->data : NULL;
    if (all_contiguous(arrs, nops, ndim, shape, size, out_strides)) {
        gd_contiguous_plan(ew, size);
        for (int i = 0; i < nops; i++) opd[i].strides[0] = arrs[i] ? 1 : 0;
        return;
    }
    int64_t os[GD_MAX_NDIM], st[3][GD_MAX_NDIM];
    if (out_strides) memcpy(os, out_strides, (size_t)ndim * sizeof(int64_t));
    else gd_c_strides(os, ndim, shape);
    for (int i = 0; i < nops; i++) {
        const ArrayObject *a = arrs[i];
        for (int k = 0; a && k < ndim; k++) {
            int j = k - (ndim - a->ndim);
            st[i][k] = j < 0 || a->shape[j] == 1 ? 0 : a->strides[j];
        }
    }
    int order[GD_MAX_NDIM], nd = 0;
    const int n = axis_order(order, ndim, shape, os);
    for (int q = 0; q < n; q++) {
        const int k = order[q];
        int merge = nd > 0 && ew->out_strides[nd - 1] == os[k] * shape[k];
        for (int i = 0; i < nops && merge; i++)
            if (arrs[i] && opd[i].strides[nd - 1] != st[i][k] * shape[k]) merge = 0;
        if (!merge) ew->shape[nd++] = 1;
        ew->shape[nd - 1] *= shape[k];
        ew->out_strides[nd - 1] = os[k];
        for (int i = 0; i < nops; i++) opd[i].strides[nd - 1] = arrs[i] ? st[i][k] : 0;
    }
    int contiguous = nd <= 1 && (nd == 0 || ew->out_strides[0] == 1);
    for (int i = 0; i < nops && contiguous; i++)
        if (arrs[i] && nd == 1 && opd[i].strides[0] != 1) contiguous = 0;
    if (nd == 0) { /* one element: every operand's is at its data */
        gd_contiguous_plan(ew, 1);
        for (int i = 0; i < nops; i++) opd[i].strides[0] = arrs[i] ? 1 : 0;
        return;
    }
    ew->ndim = nd;
    ew->contiguous = contiguous;
}

void gd_contiguous_plan(gd_ewise *ew, int64_t n)
{
    ew->ndim = 1;
    ew->contiguous = 1;
    ew->size = n;
    ew->shape[0] = n;
    ew->out_strides[0] = 1;
}

/* ------------------------------------------------------------------------------------------
 * where arrays lie in memory
 * ---------------------------------------------------------------------------------------- */

void gd_extent(const ArrayObject *a, uintptr_t *lo, uintptr_t *hi)
{
    /* a non-empty array's elements lie in its allocation: no sum below overflows */
    int64_t below = 0, above = 0;
    for (int k = 0; k < a->ndim; k++) {
        int64_t span = a->strides[k] * (a->shape[k] - 1);
        if (span < 0) below += span;
        else above += span;
    }
    const int64_t e = (int64_t)gd_dtype_size(a->dtype);
    *lo = (uintptr_t)a->data + (uintptr_t)(below * e);
    *hi = (uintptr_t)a->data + (uintptr_t)((above + 1) * e);
}

int gd_overlaps(const ArrayObject *x, const ArrayObject *y)
{
    if (x->size == 0 || y->size == 0) return 0;
    uintptr_t x0, x1, y0, y1;
    gd_extent(x, &x0, &x1);
    gd_extent(y, &y0, &y1);
    return x0 < y1 && y0 < x1;
}

int gd_is_dense(const ArrayObject *a)
{
    int64_t s[GD_MAX_NDIM], d[GD_MAX_NDIM];
    int n = 0;
    for (int k = 0; k < a->ndim; k++) { /* axes longer than 1 by |stride|, smallest first */
        if (a->shape[k] == 1) continue;
        int j = n++;
        const int64_t v = GD_ABS_STRIDE(a->strides[k]);
        for (; j > 0 && s[j - 1] > v; j--) {
            s[j] = s[j - 1];
            d[j] = d[j - 1];
        }
        s[j] = v;
        d[j] = a->shape[k];
    }
    int64_t acc = 1;
    for (int q = 0; q < n; q++) {
        if (s[q] != acc) return 0;
        acc *= d[q];
    }
    return a->size > 0;
}

int gd_same_layout(const ArrayObject *x, const ArrayObject *y)
{
    if (x->data != y->data || x->dtype != y->dtype || !gd_same_shape(x, y)) return 0;
    for (int k = 0; k < x->ndim; k++)
        if (x->shape[k] > 1 && x->strides[k] != y->strides[k]) return 0;
    return 1;
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

int gd_fill(gd_state *st, const gd_backend *be, ArrayObject *dst, gd_scalar value, const char *name)
{
    if (dst->size == 0) return 0;
    if (dst->contiguous) return gd_run_fill(st, be, dst->device, dst->data, dst->dtype, value, dst->size, name);
    gd_ewise ew;
    gd_operand a;
    ArrayObject *none = NULL;
    gd_ewise_plan(&ew, &a, &none, 1, dst->ndim, dst->shape, dst->size, dst->strides);
    a.scalar = value;
    return gd_run_ewise_unary(st, be, dst->device, dst->data, GD_COPY, dst->dtype, &ew, &a, name);
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

/* ------------------------------------------------------------------------------------------
 * copies between layouts
 * ---------------------------------------------------------------------------------------- */

/* A view that is dense in memory with positive strides is a permutation of a C-contiguous
 * block: *perm and in_shape describe it for the backend's permute (tiled transposes, faster
 * than an elementwise copy on GPUs). Returns 0 when a is not such a view. */
static int as_permutation(const ArrayObject *a, int64_t *in_shape, int *perm)
{
    int order[GD_MAX_NDIM], n = 0;
    for (int k = 0; k < a->ndim; k++) { /* axes by stride, largest first */
        int j = n++;
        for (; j > 0 && a->strides[order[j - 1]] < a->strides[k]; j--) order[j] = order[j - 1];
        order[j] = k;
    }
    int64_t acc = 1;
    for (int q = a->ndim - 1; q >= 0; q--) {
        const int k = order[q];
        if (a->shape[k] != 1 && a->strides[k] != acc) return 0;
        acc *= a->shape[k];
        in_shape[q] = a->shape[k];
        perm[k] = q;
    }
    return 1;
}

ArrayObject *gd_contiguous(gd_state *st, const gd_backend *be, ArrayObject *a, const char *name)
{
    if (a->contiguous) return (ArrayObject *)Py_NewRef((PyObject *)a);
    ArrayObject *out = gd_array_new(st, a->device, a->dtype, a->ndim, a->shape, name);
    if (!out || a->size == 0) return out;
    int64_t in_shape[GD_MAX_NDIM];
    int perm[GD_MAX_NDIM];
    const size_t esz = gd_dtype_size(a->dtype);
    int rc;
    if ((esz == 4 || esz == 8) && as_permutation(a, in_shape, perm)) {
        gd_error err;
        PyThreadState *ts = gd_run_begin(a->device, (double)a->size);
        rc = be->permute(out->data, a->dtype, a->data, a->ndim, in_shape, perm, a->device.index, &err);
        rc = gd_run_end(st, a->device, ts, rc, &err, name);
    } else {
        gd_ewise ew;
        gd_operand opd;
        gd_ewise_plan(&ew, &opd, &a, 1, a->ndim, a->shape, a->size, NULL);
        rc = gd_run_ewise_unary(st, be, a->device, out->data, GD_COPY, a->dtype, &ew, &opd, name);
    }
    if (rc < 0) Py_CLEAR(out);
    return out;
}

ArrayObject *gd_converted(gd_state *st, const gd_backend *be, ArrayObject *a, gd_dtype dt, const char *name)
{
    if (!a->contiguous) {
        ArrayObject *c = gd_contiguous(st, be, a, name);
        if (!c || dt == a->dtype) return c;
        ArrayObject *t = gd_converted(st, be, c, dt, name);
        Py_DECREF(c);
        return t;
    }
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
    gd_ewise_plan(&ew, &opd, &a, 1, ndim, shape, size, NULL);
    if (gd_run_ewise_unary(st, be, a->device, t->data, GD_COPY, a->dtype, &ew, &opd, name) < 0) Py_CLEAR(t);
    return t;
}

int gd_store(gd_state *st, const gd_backend *be, ArrayObject *dst, ArrayObject *src, const char *name)
{
    if (dst->size == 0) return 0;
    if (src->dtype != dst->dtype) {
        if (dst->contiguous && src->contiguous && src->size == dst->size)
            return gd_run_astype(st, be, dst->device, dst->data, dst->dtype, src->data, src->dtype, src->size, name);
        ArrayObject *t = gd_converted(st, be, src, dst->dtype, name);
        int rc = t ? gd_store(st, be, dst, t, name) : -1;
        Py_XDECREF(t);
        return rc;
    }
    gd_ewise ew;
    gd_operand opd;
    gd_ewise_plan(&ew, &opd, &src, 1, dst->ndim, dst->shape, dst->size, dst->strides);
    return gd_run_ewise_unary(st, be, dst->device, dst->data, GD_COPY, dst->dtype, &ew, &opd, name);
}
