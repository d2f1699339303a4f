/* gather.c - indexing that copies: a[mask] and a[idx] (a bool mask over the leading axes, an
 * integer index array on the first axis, alone or followed by ... and full slices), their
 * assignments a[mask] = v and a[idx] = v, gd.nonzero, and the scatter-add that the gradient
 * of a[idx] uses. Both kinds of index become one list of row numbers into a viewed as rows:
 * a mask's nonzero positions (stream compaction), or the index array itself. Every index is
 * checked before a row moves (on a GPU that reads the result back: a synchronization).
 *
 * Every other advanced key (several index arrays, a[rows, cols], a[idx, :, idx2], or one
 * after a slice or an integer) goes to gpudev/_index.py, which composes NumPy's broadcasting
 * rules from whole-array operations into one flat a.reshape(-1)[flat] of the single-array
 * kind here, and so runs on every backend.
 *
 * An assignment's row numbers must not change while the rows move: when they share memory
 * with the target (b[b] = 5, a[a[0]] = 5, views, reversed or partial), they are copied first,
 * as NumPy copies an index that overlaps its output. The values are always copied into a
 * buffer of their own before the scatter, so a value array overlapping the target is read
 * as it was. Arrays other threads may write while the GIL is released are the backends'
 * concern: their kernels read each index once (see csrc/cpu/gather.c).
 */
#include "gather.h"
#include "core.h"
#include "args.h"
#include "array.h"
#include "assign.h"
#include "autograd.h"
#include "compute.h"
#include "convert.h"
#include "device.h"
#include "elementwise.h"
#include "runtime.h"
#include "shape.h"
#include "trace.h"
#include "transfer.h"

#include <string.h>

/* ------------------------------------------------------------------------------------------
 * recognising an advanced index
 * ---------------------------------------------------------------------------------------- */

/* Whether an index item is an array of indices or a mask: a list, a gpudev Array, or a NumPy
 * array that is not one integer (NumPy scalars and 0-d integer arrays are basic indices). */
static int is_array_item(gd_state *st, PyObject *it)
{
    if (PyList_Check(it) || gd_is_array(st, it)) return 1;
    return PyArray_Check(it) && (PyArray_NDIM((PyArrayObject *)it) > 0 || PyArray_ISBOOL((PyArrayObject *)it));
}

static int is_full_slice(PyObject *it)
{
    if (!PySlice_Check(it)) return 0;
    PySliceObject *s = (PySliceObject *)it;
    return s->start == Py_None && s->stop == Py_None && s->step == Py_None;
}

/* The index array of an advanced key (a borrowed reference) and in *trailing the full slices
 * after it; NULL without an exception for a basic key; NULL with *multi set for any other
 * advanced key (gpudev/_index.py composes those). */
static PyObject *advanced_item(gd_state *st, PyObject *key, int *trailing, int *multi)
{
    *trailing = 0;
    *multi = 0;
    if (!PyTuple_Check(key)) return is_array_item(st, key) ? key : NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(key), arrays = 0;
    int plain_tail = 1;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *it = PyTuple_GET_ITEM(key, k);
        if (is_array_item(st, it)) arrays++;
        else if (k > 0 && !is_full_slice(it) && it != Py_Ellipsis) plain_tail = 0;
        else if (is_full_slice(it)) (*trailing)++;
    }
    if (arrays == 0) return NULL;
    if (arrays == 1 && plain_tail && is_array_item(st, PyTuple_GET_ITEM(key, 0))) return PyTuple_GET_ITEM(key, 0);
    *multi = 1;
    return NULL;
}

/* Hand a[key] (value NULL) or a[key] = value to gpudev/_index.py: its result, or NULL. */
static PyObject *multi_index(gd_state *st, ArrayObject *a, PyObject *key, PyObject *value, const char *op)
{
    if (!st->multi_index) {
        PyErr_Format(PyExc_IndexError, "%s: several index arrays need gpudev's Python package; import gpudev", op);
        return NULL;
    }
    PyObject *fn = PyTuple_GET_ITEM(st->multi_index, value ? 1 : 0);
    return PyObject_CallFunctionObjArgs(fn, (PyObject *)a, key, value, NULL);
}

/* ------------------------------------------------------------------------------------------
 * the index as an Array on a's device
 * ---------------------------------------------------------------------------------------- */

/* An empty list indexes as an empty integer array (NumPy's reading of a[[]]), but an empty
 * array of floats is refused like any other float array, as NumPy refuses it: -1 with
 * IndexError for those. */
static int refuse_empty_floats(const ArrayObject *idx, PyObject *item, const char *op)
{
    if (gd_dtype_is_int(idx->dtype) || idx->dtype == GD_BOOL || PyList_Check(item)) return 0;
    PyErr_Format(PyExc_IndexError, "%s: arrays used as indices must be of integer (or boolean) type, got %s", op,
                 gd_dtype_name(idx->dtype));
    return -1;
}

/* item as an Array on a's device (a new reference): Arrays on the CPU or on a's device are
 * taken as they are (a CPU one is copied over); lists and NumPy arrays are converted. */
static ArrayObject *index_array(gd_state *st, ArrayObject *a, PyObject *item, const char *op)
{
    ArrayObject *idx;
    if (gd_is_array(st, item) && refuse_empty_floats((ArrayObject *)item, item, op) < 0) return NULL;
    if (gd_is_array(st, item)) {
        idx = (ArrayObject *)item;
        char d0[32], d1[32], to[32];
        if (idx->device.type != GD_CPU && !gd_device_eq(idx->device, a->device)) {
            PyErr_Format(PyExc_ValueError,
                         "%s: the index is on %s but the array is on %s; indices must be on the CPU or on the "
                         "indexed array's device: move it with idx.to('%s')",
                         op, gd_device_label(st, idx->device, d0), gd_device_label(st, a->device, d1),
                         gd_device_str(a->device, to));
            return NULL;
        }
        if (!gd_device_eq(idx->device, a->device)) return gd_array_to_device(st, idx, a->device, op);
        return (ArrayObject *)Py_NewRef(item);
    }
    idx = (ArrayObject *)gd_array_from_object(st, item, Py_None, a->device, 1, 0, op);
    if (!idx) {
        if (PyErr_ExceptionMatches(PyExc_TypeError) || PyErr_ExceptionMatches(PyExc_ValueError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_IndexError, "%s: the index %.100s is not a list of integers or of bools", op,
                         Py_TYPE(item)->tp_name);
        }
        return NULL;
    }
    if (refuse_empty_floats(idx, item, op) < 0) Py_CLEAR(idx);
    return idx;
}

/* ------------------------------------------------------------------------------------------
 * the plan: a as `rows` rows of `inner` elements, the row numbers, the selection's shape
 * ---------------------------------------------------------------------------------------- */

typedef struct take_plan {
    ArrayObject *rowsidx; /* int64, C-contiguous, on a's device: the row numbers */
    int64_t rows, inner;  /* a as rows x inner elements */
    int lead;             /* axes of a the rows span */
    int foreign;          /* the index came from outside gpudev (a NumPy array may lend its memory) */
    int ndim;             /* the selection's shape */
    int64_t shape[GD_MAX_NDIM];
} take_plan;

static int plan_shape(take_plan *p, const ArrayObject *a, int nlead, const int64_t *lead, const char *op)
{
    if (nlead + a->ndim - p->lead > GD_MAX_NDIM) {
        PyErr_Format(PyExc_IndexError, "%s: the result would have more than %d dimensions", op, GD_MAX_NDIM);
        return -1;
    }
    p->ndim = 0;
    for (int k = 0; k < nlead; k++) p->shape[p->ndim++] = lead[k];
    p->rows = 1;
    p->inner = 1;
    for (int k = 0; k < a->ndim; k++) {
        if (k < p->lead) p->rows *= a->shape[k];
        else p->shape[p->ndim++] = a->shape[k], p->inner *= a->shape[k];
    }
    return 0;
}

static int too_many(const ArrayObject *a, int used, const char *op)
{
    PyErr_Format(PyExc_IndexError, "%s: too many indices for array: array is %d-dimensional, but %d were indexed", op,
                 a->ndim, used);
    return -1;
}

/* The row numbers of a mask: its nonzero positions in C order. */
static int plan_mask(take_plan *p, gd_state *st, ArrayObject *a, ArrayObject *mask, int trailing, const char *op)
{
    if (mask->ndim + trailing > a->ndim) return too_many(a, mask->ndim + trailing, op);
    for (int k = 0; k < mask->ndim; k++)
        if (mask->shape[k] != a->shape[k]) {
            PyErr_Format(PyExc_IndexError,
                         "%s: boolean index did not match indexed array along axis %d; size of axis is %lld but "
                         "size of corresponding boolean axis is %lld",
                         op, k, (long long)a->shape[k], (long long)mask->shape[k]);
            return -1;
        }
    p->lead = mask->ndim;
    ArrayObject *rows = (ArrayObject *)gd_nonzero_flat(st, mask, op);
    if (!rows) return -1;
    p->rowsidx = rows;
    return plan_shape(p, a, 1, &rows->size, op);
}

/* The row numbers of an integer index array: itself, as C-contiguous int64 (an int32 index
 * converted, which copies it). */
static int plan_ints(take_plan *p, gd_state *st, ArrayObject *a, ArrayObject *idx, int trailing, const char *op)
{
    if (!gd_dtype_is_int(idx->dtype) && !(idx->dtype != GD_BOOL && idx->size == 0)) {
        PyErr_Format(PyExc_IndexError, "%s: arrays used as indices must be of integer (or boolean) type, got %s", op,
                     gd_dtype_name(idx->dtype));
        return -1;
    }
    if (1 + trailing > a->ndim) return too_many(a, 1 + trailing, op);
    const gd_backend *be = gd_backend_of(st, a->device, op);
    p->rowsidx = be ? (idx->dtype == GD_INT64 ? gd_contiguous(st, be, idx, op) : gd_converted(st, be, idx, GD_INT64, op))
                    : NULL;
    if (!p->rowsidx) return -1;
    p->lead = 1;
    return plan_shape(p, a, idx->ndim, idx->shape, op);
}

/* A 0-d bool Array, which NumPy reads as a new axis of length 1 masked by it (a[True] is
 * a[None], a[False] an empty a[None][:0]): gpudev/_index.py composes that. */
static int is_0d_mask(gd_state *st, PyObject *item)
{
    if (!gd_is_array(st, item)) return 0;
    const ArrayObject *m = (const ArrayObject *)item;
    return m->ndim == 0 && m->dtype == GD_BOOL;
}

/* Plan a[key] for an advanced key: 1 with *p filled (p->rowsidx a new reference), 0 for a
 * basic key, 2 for a key that multi_index takes, -1 with an exception. */
static int plan_take(take_plan *p, gd_state *st, ArrayObject *a, PyObject *key, const char *op)
{
    int trailing, multi;
    PyObject *item = advanced_item(st, key, &trailing, &multi);
    if (multi || (item && is_0d_mask(st, item))) return 2;
    if (!item) return PyErr_Occurred() ? -1 : 0;
    if (a->ndim == 0) return too_many(a, 1, op);
    ArrayObject *idx = index_array(st, a, item, op);
    if (!idx) return -1;
    p->foreign = !gd_is_array(st, item) && idx->dtype != GD_BOOL;
    int rc = idx->dtype == GD_BOOL ? plan_mask(p, st, a, idx, trailing, op) : plan_ints(p, st, a, idx, trailing, op);
    Py_DECREF(idx);
    if (rc < 0) Py_CLEAR(p->rowsidx);
    return rc < 0 ? -1 : 1;
}

/* ------------------------------------------------------------------------------------------
 * running the row copies
 * ---------------------------------------------------------------------------------------- */

typedef int (*rows_entry)(void *dst, int64_t *bad, int64_t rows, const int64_t *idx, const void *src, int64_t n,
                          gd_dtype dtype, int64_t inner, int device, gd_error *err);

/* gather_rows with the scatters' argument order, so one runner serves all three. */
static int gather_entry(const gd_backend *be, void *out, int64_t *bad, int64_t rows, const int64_t *idx,
                        const void *src, int64_t n, gd_dtype dt, int64_t inner, int device, gd_error *err)
{
    return be->gather_rows(out, bad, src, rows, idx, n, dt, inner, device, err);
}

/* IndexError for the bad index at position `bad` of idx (read back from the device). */
static int raise_bad(gd_state *st, const gd_backend *be, ArrayObject *idx, int64_t bad, int64_t rows, const char *op)
{
    int64_t v = 0;
    gd_error err = {0};
    const char *at = idx->data + bad * (int64_t)sizeof(int64_t);
    PyThreadState *ts = gd_run_begin(idx->device, 0);
    int rc = be->copy_to_host(&v, at, idx->device.index, sizeof v, &err);
    if (gd_run_end(st, idx->device, ts, rc, &err, op) < 0) return -1;
    PyErr_Format(PyExc_IndexError, "%s: index %lld is out of bounds for axis 0 with size %lld", op, (long long)v,
                 (long long)rows);
    return -1;
}

/* One row copy (gather: which == 0; scatter: 1; scatter-add: 2) between the rows of `table`
 * (`rows` x `inner`) and the n rows of `other`; IndexError for a bad index. */
static int run_rows(gd_state *st, int which, char *table, int64_t rows, int64_t inner, ArrayObject *idx, char *other,
                    gd_dtype dt, gd_device dev, const char *op)
{
    const gd_backend *be = gd_backend_of(st, dev, op);
    if (!be) return -1;
    const int64_t n = idx->size;
    if (n == 0) return 0;
    int64_t bad = -1;
    gd_error err = {0};
    const int64_t *ix = (const int64_t *)idx->data;
    PyThreadState *ts = gd_run_begin(dev, (double)n * (double)inner);
    int rc = which == 0   ? gather_entry(be, other, &bad, rows, ix, table, n, dt, inner, dev.index, &err)
             : which == 1 ? be->scatter_rows(table, &bad, rows, ix, other, n, dt, inner, dev.index, &err)
                          : be->scatter_add_rows(table, &bad, rows, ix, other, n, dt, inner, dev.index, &err);
    if (gd_run_end(st, dev, ts, rc, &err, op) < 0) return -1;
    return bad >= 0 ? raise_bad(st, be, idx, bad, rows, op) : 0;
}

/* Scatter (or scatter-add) src's rows into a's, through a contiguous copy of a when a is a
 * strided view, written back only once every index passed. Row numbers that share memory
 * with a (an index that is a view of the target) are copied first: the scatter would
 * otherwise read indices it has already overwritten. */
static int scatter_into(gd_state *st, int which, ArrayObject *a, take_plan *p, ArrayObject *src, const char *op)
{
    const gd_backend *be = gd_backend_of(st, a->device, op);
    if (!be) return -1;
    if (gd_overlaps(p->rowsidx, a)) {
        ArrayObject *own = gd_converted(st, be, p->rowsidx, GD_INT64, op);
        if (!own) return -1;
        Py_SETREF(p->rowsidx, own);
    }
    ArrayObject *t = gd_contiguous(st, be, a, op);
    if (!t) return -1;
    int rc = run_rows(st, which, t->data, p->rows, p->inner, p->rowsidx, src->data, a->dtype, a->device, op);
    if (rc == 0 && t != a) rc = gd_store(st, be, a, t, op);
    if (rc == 0) gd_bump_version(st, a);
    Py_DECREF(t);
    return rc;
}

/* ------------------------------------------------------------------------------------------
 * a[key] and a[key] = value
 * ---------------------------------------------------------------------------------------- */

int gd_take(PyObject **out, gd_state *st, ArrayObject *a, PyObject *key)
{
    const char *op = "getitem";
    take_plan p = {0};
    int r = plan_take(&p, st, a, key, op);
    if (r == 2) {
        *out = multi_index(st, a, key, NULL, op);
        return *out ? 1 : -1;
    }
    if (r <= 0) return r;
    const gd_backend *be = gd_backend_of(st, a->device, op);
    ArrayObject *src = be ? gd_contiguous(st, be, a, op) : NULL;
    ArrayObject *res = src ? gd_array_new(st, a->device, a->dtype, p.ndim, p.shape, op) : NULL;
    if (res && run_rows(st, 0, src->data, p.rows, p.inner, p.rowsidx, res->data, a->dtype, a->device, op) < 0)
        Py_CLEAR(res);
    if (res && gd_trace_op(st, "take", res, a, p.rowsidx) < 0) Py_CLEAR(res);
    Py_XDECREF(src);
    PyObject *extra = NULL;
    if (res && gd_ag_wanted(st, (PyObject *)a, NULL)) {
        /* backward reads the rows again: a gpudev index is checked by its write count (a
         * change makes backward raise), one borrowed from NumPy has none and is copied */
        ArrayObject *rows = p.foreign && be ? gd_converted(st, be, p.rowsidx, GD_INT64, op)
                                            : (ArrayObject *)Py_NewRef((PyObject *)p.rowsidx);
        if (!rows) Py_CLEAR(res);
        else extra = Py_BuildValue("(Ni)", (PyObject *)rows, p.lead);
    }
    Py_DECREF(p.rowsidx);
    *out = GD_AG_OUT(st, "take", res, a, NULL, extra);
    return *out ? 1 : -1;
}

int gd_put(gd_state *st, ArrayObject *a, PyObject *key, PyObject *value)
{
    const char *op = "setitem";
    take_plan p = {0};
    int r = plan_take(&p, st, a, key, op);
    if (r == 2) {
        PyObject *done = multi_index(st, a, key, value, op);
        Py_XDECREF(done);
        return done ? 1 : -1;
    }
    if (r <= 0) return r;
    /* the value, broadcast and cast to the selection (NumPy's rules), in a buffer of its own */
    ArrayObject *src = gd_array_new(st, a->device, a->dtype, p.ndim, p.shape, op);
    int rc = src ? gd_assign(st, src, value, op) : -1;
    if (rc == 0) rc = scatter_into(st, 1, a, &p, src, op);
    Py_XDECREF(src);
    Py_DECREF(p.rowsidx);
    return rc < 0 ? -1 : 1;
}

/* ------------------------------------------------------------------------------------------
 * nonzero and the scatter-add
 * ---------------------------------------------------------------------------------------- */

/* The (ndim, count) int64 coordinates of mask's nonzero elements; ndim 1 for flat
 * positions (`flat`). */
static ArrayObject *nonzero_coords(gd_state *st, ArrayObject *mask, int flat, const char *op)
{
    const gd_backend *be = gd_backend_of(st, mask->device, op);
    ArrayObject *m = be ? gd_contiguous(st, be, mask, op) : NULL;
    if (!m) return NULL;
    int64_t count = 0, shape[2];
    gd_error err = {0};
    PyThreadState *ts = gd_run_begin(m->device, (double)m->size);
    int rc = be->count_nonzero(&count, m->data, m->size, m->device.index, &err);
    ArrayObject *out = NULL;
    if (gd_run_end(st, m->device, ts, rc, &err, op) < 0) goto done;
    /* the count came back to the host before the result could be allocated: a synchronization,
     * which trace and strict mode must see (on the CPU too, where a GPU would stall) */
    if (gd_trace_sync(st, op, m->device) < 0) goto done;
    shape[0] = flat ? 1 : m->ndim;
    shape[1] = count;
    out = gd_array_new(st, m->device, GD_INT64, 2, shape, op);
    if (!out || count == 0) goto done;
    ts = gd_run_begin(m->device, (double)m->size);
    rc = be->nonzero((int64_t *)out->data, count, m->data, flat ? 1 : m->ndim, flat ? &m->size : m->shape,
                     m->device.index, &err);
    if (gd_run_end(st, m->device, ts, rc, &err, op) < 0) Py_CLEAR(out);
done:
    Py_DECREF(m);
    return out;
}

PyObject *gd_nonzero_flat(gd_state *st, ArrayObject *mask, const char *op)
{
    ArrayObject *c = nonzero_coords(st, mask, 1, op);
    if (!c) return NULL;
    PyObject *row = (PyObject *)gd_array_view(st, c, c->data, 1, c->shape + 1, NULL);
    Py_DECREF(c);
    return row;
}

/* The bool array a != 0 (a itself, with a new reference, when it is bool). */
static ArrayObject *as_mask(gd_state *st, ArrayObject *a)
{
    if (a->dtype == GD_BOOL) return (ArrayObject *)Py_NewRef((PyObject *)a);
    PyObject *zero = PyLong_FromLong(0);
    PyObject *m = zero ? gd_binary(st, GD_NE, (PyObject *)a, zero, NULL) : NULL;
    Py_XDECREF(zero);
    return (ArrayObject *)m;
}

PyObject *gd_array_nonzero(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    const char *op = "nonzero";
    gd_state *st = gd_state_of(self);
    ArrayObject *a = (ArrayObject *)self;
    if (a->ndim == 0) {
        PyErr_SetString(PyExc_ValueError, "nonzero: calling nonzero on 0d arrays is not allowed; use "
                                          "a.reshape(1).nonzero() instead");
        return NULL;
    }
    ArrayObject *m = as_mask(st, a);
    ArrayObject *c = m ? nonzero_coords(st, m, 0, op) : NULL;
    Py_XDECREF(m);
    if (!c) return NULL;
    PyObject *out = PyTuple_New(c->shape[0]);
    for (int64_t k = 0; out && k < c->shape[0]; k++) {
        char *row = c->size ? c->data + k * c->shape[1] * (int64_t)sizeof(int64_t) : c->data;
        PyObject *v = (PyObject *)gd_array_view(st, c, row, 1, c->shape + 1, NULL);
        if (!v) Py_CLEAR(out);
        else PyTuple_SET_ITEM(out, k, v);
    }
    Py_DECREF(c);
    return out;
}

static PyObject *nonzero_fn(PyObject *module, PyObject *arg)
{
    gd_state *st = PyModule_GetState(module);
    ArrayObject *a = gd_need_array(st, arg, "nonzero");
    return a ? gd_array_nonzero((PyObject *)a, NULL) : NULL;
}

/* _index_add(dst, idx, src): dst[idx] += src with repeated indices accumulating, in place;
 * idx holds row numbers of dst (1-D), src has shape idx.shape + dst.shape[1:]. */
static PyObject *index_add_fn(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    const char *op = "_index_add";
    gd_state *st = PyModule_GetState(module);
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "_index_add(dst, idx, src) takes 3 arguments");
        return NULL;
    }
    ArrayObject *a = gd_need_array(st, args[0], op), *src = a ? gd_need_array(st, args[2], op) : NULL;
    if (!src) return NULL;
    if (a->dtype == GD_BOOL || src->dtype != a->dtype || !gd_device_eq(src->device, a->device)) {
        PyErr_Format(PyExc_TypeError, "%s: dst must be float32, float64, int64 or int32 and src of its dtype and device", op);
        return NULL;
    }
    take_plan p = {0};
    int r = plan_take(&p, st, a, args[1], op);
    if (r == 0 || r == 2) PyErr_Format(PyExc_IndexError, "%s: idx must be an integer index array", op);
    if (r <= 0 || r == 2) return NULL;
    ArrayObject *s = NULL;
    int rc = -1;
    char b1[256], b2[256];
    if (p.lead != 1 || src->ndim != p.ndim || memcmp(src->shape, p.shape, (size_t)p.ndim * sizeof(int64_t)) != 0)
        PyErr_Format(PyExc_ValueError, "%s: src has shape %s, expected %s", op, gd_shape_str(src->ndim, src->shape, b1),
                     gd_shape_str(p.ndim, p.shape, b2));
    else if ((s = gd_contiguous(st, gd_backend_of(st, a->device, op), src, op)))
        rc = scatter_into(st, 2, a, &p, s, op);
    Py_XDECREF(s);
    Py_DECREF(p.rowsidx);
    return rc < 0 ? NULL : Py_NewRef(Py_None);
}

/* ------------------------------------------------------------------------------------------
 * setup
 * ---------------------------------------------------------------------------------------- */

/* _set_multi_index((take, put)): the Python functions for keys with several index arrays. */
static PyObject *set_multi_index_fn(PyObject *module, PyObject *arg)
{
    gd_state *st = PyModule_GetState(module);
    if (!PyTuple_Check(arg) || PyTuple_GET_SIZE(arg) != 2) {
        PyErr_SetString(PyExc_TypeError, "_set_multi_index: expected (take, put)");
        return NULL;
    }
    Py_XSETREF(st->multi_index, Py_NewRef(arg));
    Py_RETURN_NONE;
}

static PyMethodDef gather_methods[] = {
    GD_METHOD("nonzero", (PyCFunction)nonzero_fn, METH_O, "$module, a, /",
     "A tuple of int64 arrays, one per axis: the coordinates of a's nonzero elements, as NumPy's.\n\n"
     "On a GPU the count is read back first (a synchronization).\n\n"
     ">>> gd.nonzero(gd.array([[0, 3], [5, 0]]))\n"
     "(Array([0, 1]), Array([1, 0]))"),
    {"_set_multi_index", set_multi_index_fn, METH_O, "_set_multi_index((take, put)): where keys with several "
     "index arrays go."},
    {"_index_add", GD_FN(index_add_fn), METH_FASTCALL,
     "_index_add(dst, idx, src): dst[idx] += src in place, repeated indices accumulating (autograd's scatter-add)."},
    {NULL, NULL, 0, NULL},
};

int gd_gather_setup(PyObject *module) { return PyModule_AddFunctions(module, gather_methods); }
