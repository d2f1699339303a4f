/* index.c - NumPy's basic indexing as views: a[i], a[i:j:k], a[..., None], a[key] = value,
 * len() and iteration (masks and index arrays go to gather.c, which copies); reshape (a view when the strides allow it, as NumPy decides), ravel
 * and flatten. Every view shares the base's memory, so writing through it changes the base.
 */
#include "index.h"
#include "core.h"
#include "array.h"
#include "assign.h"
#include "autograd.h"
#include "compute.h"
#include "gather.h"
#include "runtime.h"
#include "shape.h"
#include "trace.h"

#include <string.h>

/* ------------------------------------------------------------------------------------------
 * resolving a basic index to a view
 * ---------------------------------------------------------------------------------------- */

/* An index being resolved, one item at a time, from the leading axis on. */
typedef struct index_walk {
    const ArrayObject *a;
    const char *op;
    char *p;                      /* the view's element 0 (moved only when a is not empty) */
    int ax;                       /* the next axis of a */
    int nd;                       /* the view's axes so far */
    int64_t shape[GD_MAX_NDIM];
    int64_t strides[GD_MAX_NDIM]; /* elements */
} index_walk;

static int add_axis(index_walk *w, int64_t len, int64_t stride)
{
    if (w->nd >= GD_MAX_NDIM) {
        PyErr_Format(PyExc_IndexError, "%s: the result would have more than %d dimensions", w->op, GD_MAX_NDIM);
        return -1;
    }
    w->shape[w->nd] = len;
    w->strides[w->nd++] = stride;
    return 0;
}

/* Move the view's start by i elements along a stride; an empty array's pointer never moves
 * (its strides may be huge and its data is never read). */
static void move(index_walk *w, int64_t i, int64_t stride)
{
    if (w->a->size > 0) w->p += i * stride * (int64_t)gd_dtype_size(w->a->dtype);
}

static int index_slice(index_walk *w, PyObject *it)
{
    Py_ssize_t start, stop, step;
    if (PySlice_Unpack(it, &start, &stop, &step) < 0) return -1;
    const int64_t stride = w->a->strides[w->ax];
    Py_ssize_t len = PySlice_AdjustIndices((Py_ssize_t)w->a->shape[w->ax], &start, &stop, step);
    if (len > 0) move(w, start, stride);
    /* a step past the end leaves at most one element, whose stride is never used: keep the
     * product only where it is defined */
    int64_t s;
    if (gd_mul_overflows(&s, stride, step)) s = stride;
    w->ax++;
    return add_axis(w, len, s);
}

static int index_integer(index_walk *w, PyObject *it)
{
    Py_ssize_t i = PyNumber_AsSsize_t(it, PyExc_IndexError);
    if (i == -1 && PyErr_Occurred()) return -1;
    int64_t n = w->a->shape[w->ax];
    if (i < -n || i >= n) {
        PyErr_Format(PyExc_IndexError, "%s: index %zd is out of bounds for axis %d with size %lld", w->op, i, w->ax,
                     (long long)n);
        return -1;
    }
    move(w, i < 0 ? i + n : i, w->a->strides[w->ax]);
    w->ax++;
    return 0;
}

/* Whether `it` is an integer index: ints, NumPy integer scalars and 0-d integer arrays (not
 * bools, which NumPy reads as masks). */
static int is_integer_index(PyObject *it)
{
    if (PyBool_Check(it) || PyArray_IsScalar(it, Bool)) return 0;
    if (PyArray_Check(it))
        return PyArray_NDIM((PyArrayObject *)it) == 0 && PyArray_ISINTEGER((PyArrayObject *)it);
    return PyIndex_Check(it);
}

static int index_refuse(index_walk *w, PyObject *it)
{
    if (PyBool_Check(it) || PyArray_IsScalar(it, Bool))
        PyErr_Format(PyExc_IndexError,
                     "%s: a bool (%R) is not a valid index; use a bool array as a mask (a[a > 0])",
                     w->op, it);
    else
        PyErr_Format(PyExc_IndexError,
                     "%s: only integers, slices (start:stop:step), ellipsis (...), None and integer or boolean "
                     "arrays are valid indices, got %.100s",
                     w->op, Py_TYPE(it)->tp_name);
    return -1;
}

/* How many axes of a the items consume; -1 with IndexError for a second Ellipsis or too many
 * indices. */
static int consumed_axes(const ArrayObject *a, PyObject *items, const char *op)
{
    int used = 0, ellipses = 0;
    Py_ssize_t n = PyTuple_GET_SIZE(items);
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *it = PyTuple_GET_ITEM(items, k);
        if (it == Py_Ellipsis) ellipses++;
        else if (it != Py_None) used++;
    }
    if (ellipses > 1) {
        PyErr_Format(PyExc_IndexError, "%s: an index can only have a single ellipsis ('...')", op);
        return -1;
    }
    if (used > a->ndim) {
        PyErr_Format(PyExc_IndexError, "%s: too many indices for array: array is %d-dimensional, but %d were indexed",
                     op, a->ndim, used);
        return -1;
    }
    return used;
}

static int index_item(index_walk *w, PyObject *it, int used)
{
    if (it == Py_Ellipsis) {
        for (int fill = w->a->ndim - used; fill > 0; fill--, w->ax++)
            if (add_axis(w, w->a->shape[w->ax], w->a->strides[w->ax]) < 0) return -1;
        return 0;
    }
    if (it == Py_None) return add_axis(w, 1, 0);
    if (PySlice_Check(it)) return index_slice(w, it);
    /* gather.c takes index arrays and masks; a NumPy array here is 0-d, and only an integer
     * one is one integer (NumPy's __index__ of others raises its own TypeError) */
    if (PyArray_Check(it) && (PyArray_NDIM((PyArrayObject *)it) > 0 || !PyArray_ISINTEGER((PyArrayObject *)it)))
        return index_refuse(w, it);
    if (is_integer_index(it)) return index_integer(w, it);
    return index_refuse(w, it);
}

/* The view that a basic index (a tuple of items, or one item) selects. */
static ArrayObject *basic_view(gd_state *st, ArrayObject *a, PyObject *key, const char *op)
{
    PyObject *items = PyTuple_Check(key) ? Py_NewRef(key) : PyTuple_Pack(1, key);
    if (!items) return NULL;
    index_walk w = {.a = a, .op = op, .p = a->data};
    int used = consumed_axes(a, items, op), rc = used < 0 ? -1 : 0;
    for (Py_ssize_t k = 0; rc == 0 && k < PyTuple_GET_SIZE(items); k++)
        rc = index_item(&w, PyTuple_GET_ITEM(items, k), used);
    Py_DECREF(items);
    for (; rc == 0 && w.ax < a->ndim; w.ax++) rc = add_axis(&w, a->shape[w.ax], a->strides[w.ax]);
    return rc < 0 ? NULL : gd_array_view(st, a, w.p, w.nd, w.shape, w.strides);
}

/* ------------------------------------------------------------------------------------------
 * the mapping and sequence slots
 * ---------------------------------------------------------------------------------------- */

PyObject *gd_array_subscript(PyObject *self, PyObject *key)
{
    ArrayObject *a = (ArrayObject *)self;
    gd_state *st = gd_state_of(self);
    PyObject *copy = NULL;
    int taken = gd_take(&copy, st, a, key);
    if (taken) return taken < 0 ? NULL : copy;
    ArrayObject *out = basic_view(st, a, key, "getitem");
    return GD_AG_OUT(st, "getitem", out, a, NULL, Py_NewRef(key));
}

int gd_array_ass_subscript(PyObject *self, PyObject *key, PyObject *value)
{
    ArrayObject *a = (ArrayObject *)self;
    if (!value) {
        PyErr_SetString(PyExc_TypeError, "setitem: array elements cannot be deleted");
        return -1;
    }
    gd_state *st = gd_state_of(self);
    if (gd_ag_wanted(st, self, value)) return gd_ag_setitem(st, self, key, value);
    int put = gd_put(st, a, key, value);
    if (put) return put < 0 ? -1 : 0;
    ArrayObject *view = basic_view(st, a, key, "setitem");
    if (!view) return -1;
    int rc = gd_assign(st, view, value, "setitem");
    Py_DECREF(view);
    return rc;
}

Py_ssize_t gd_array_length(PyObject *self)
{
    ArrayObject *a = (ArrayObject *)self;
    if (a->ndim == 0) {
        PyErr_SetString(PyExc_TypeError, "len() of a 0-d array; use a.item() for its value");
        return -1;
    }
    return (Py_ssize_t)a->shape[0];
}

/* sq_item makes iteration work: a[0], a[1], ... until IndexError. */
PyObject *gd_array_sq_item(PyObject *self, Py_ssize_t i)
{
    ArrayObject *a = (ArrayObject *)self;
    if (a->ndim == 0) {
        PyErr_SetString(PyExc_TypeError, "iteration over a 0-d array");
        return NULL;
    }
    if (i < 0 || i >= a->shape[0]) {
        PyErr_Format(PyExc_IndexError, "index %zd is out of bounds for axis 0 with size %lld", i, (long long)a->shape[0]);
        return NULL;
    }
    char *p = a->size > 0 ? a->data + (int64_t)i * a->strides[0] * (int64_t)gd_dtype_size(a->dtype) : a->data;
    gd_state *st = gd_state_of(self);
    ArrayObject *out = gd_array_view(st, a, p, a->ndim - 1, a->shape + 1, a->strides + 1);
    return GD_AG_OUT(st, "getitem", out, a, NULL, PyLong_FromSsize_t(i));
}

/* ------------------------------------------------------------------------------------------
 * reshape, ravel, flatten
 * ---------------------------------------------------------------------------------------- */

/* Fill in a -1 of `shape` so that it holds `size` elements; -1 with ValueError when it
 * cannot. */
static int complete_shape(int ndim, int64_t *shape, const ArrayObject *a)
{
    int infer = -1;
    int64_t known = 1;
    char b1[256], b2[256];
    for (int i = 0; i < ndim; i++) {
        if (shape[i] == -1) {
            if (infer >= 0) {
                PyErr_Format(PyExc_ValueError, "reshape: can only specify one unknown dimension (-1), got %s",
                             gd_shape_str(ndim, shape, b1));
                return -1;
            }
            infer = i;
        } else if (shape[i] < 0) {
            PyErr_Format(PyExc_ValueError, "reshape: negative dimensions are not allowed, got %s",
                         gd_shape_str(ndim, shape, b1));
            return -1;
        } else if (shape[i] && known > INT64_MAX / shape[i]) {
            known = -1;
        } else {
            known *= shape[i];
        }
    }
    if (infer >= 0) {
        if (known > 0 && a->size % known == 0) shape[infer] = a->size / known;
        else known = -1; /* also known == 0: the unknown dimension would be ambiguous, as NumPy says */
    }
    if ((infer >= 0 && known < 0) || (infer < 0 && known != a->size)) {
        PyErr_Format(PyExc_ValueError, "reshape: cannot reshape array of size %lld (shape %s) into shape %s",
                     (long long)a->size, gd_shape_str(a->ndim, a->shape, b1), gd_shape_str(ndim, shape, b2));
        return -1;
    }
    return 0;
}

/* NumPy's rule for reshaping without a copy (C order): the old and new axes are matched in
 * groups of equal element count, each group of old axes must be contiguous within itself, and
 * the new axes of a group take strides from its innermost old axis. 1 with `strides` filled,
 * 0 when the data would have to move. a is not empty; shape holds a->size elements. */
static int reshape_strides(const ArrayObject *a, int nd, const int64_t *shape, int64_t *strides)
{
    int64_t od[GD_MAX_NDIM], os[GD_MAX_NDIM];
    int on = 0;
    for (int k = 0; k < a->ndim; k++) /* axes of length 1 have no say */
        if (a->shape[k] != 1) {
            od[on] = a->shape[k];
            os[on++] = a->strides[k];
        }
    int oi = 0, oj = 1, ni = 0, nj = 1;
    while (ni < nd && oi < on) {
        int64_t np = shape[ni], op = od[oi]; /* products of the group: at most a->size */
        while (np != op) {
            if (np < op) np *= shape[nj++];
            else op *= od[oj++];
        }
        for (int k = oi; k < oj - 1; k++)
            if (os[k] != od[k + 1] * os[k + 1]) return 0;
        strides[nj - 1] = os[oj - 1];
        for (int k = nj - 1; k > ni; k--) strides[k - 1] = strides[k] * shape[k];
        ni = nj++;
        oi = oj++;
    }
    const int64_t last = ni >= 1 ? strides[ni - 1] : 1;
    for (int k = ni; k < nd; k++) strides[k] = last; /* trailing axes of length 1 */
    return 1;
}

/* A new C-contiguous copy of a with the given shape (same size). */
static PyObject *reshaped_copy(gd_state *st, ArrayObject *a, int nd, const int64_t *shape, const char *op)
{
    const gd_backend *be = gd_backend_of(st, a->device, op);
    ArrayObject *c = be ? gd_converted(st, be, a, a->dtype, op) : NULL;
    if (!c) return NULL;
    /* c is new and not shared yet: giving it the new shape is a relabelling, not a change */
    c->ndim = nd;
    memcpy(c->shape, shape, (size_t)nd * sizeof(int64_t));
    gd_c_strides(c->strides, nd, shape);
    if (gd_trace_op(st, op, c, a, NULL) < 0) Py_CLEAR(c);
    return (PyObject *)c;
}

static PyObject *reshape_to(gd_state *st, ArrayObject *a, int nd, const int64_t *shape, const char *op)
{
    int64_t strides[GD_MAX_NDIM];
    if (a->contiguous || a->size == 0) return (PyObject *)gd_array_view(st, a, a->data, nd, shape, NULL);
    if (reshape_strides(a, nd, shape, strides)) return (PyObject *)gd_array_view(st, a, a->data, nd, shape, strides);
    return reshaped_copy(st, a, nd, shape, op);
}

PyObject *gd_array_reshape(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    ArrayObject *a = (ArrayObject *)self;
    int ndim;
    int64_t shape[GD_MAX_NDIM];
    if (nargs == 0) {
        PyErr_SetString(PyExc_TypeError, "reshape(*shape) needs a shape, e.g. a.reshape(2, -1)");
        return NULL;
    }
    if (gd_parse_shape(args, nargs, &ndim, shape, "reshape") < 0 || complete_shape(ndim, shape, a) < 0) return NULL;
    gd_state *st = gd_state_of(self);
    PyObject *out = reshape_to(st, a, ndim, shape, "reshape");
    return GD_AG_OUT(st, "reshape", out, a, NULL, NULL);
}

PyObject *gd_array_ravel(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    ArrayObject *a = (ArrayObject *)self;
    gd_state *st = gd_state_of(self);
    /* NumPy's ravel is a view only of C-contiguous data; any other layout is copied, even one
     * that a strided 1-d view could describe (a[::2]) */
    PyObject *out = a->contiguous || a->size == 0 ? (PyObject *)gd_array_view(st, a, a->data, 1, &a->size, NULL)
                                                  : reshaped_copy(st, a, 1, &a->size, "ravel");
    return GD_AG_OUT(st, "reshape", out, a, NULL, NULL);
}

PyObject *gd_array_flatten(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    ArrayObject *a = (ArrayObject *)self;
    gd_state *st = gd_state_of(self);
    PyObject *out = reshaped_copy(st, a, 1, &a->size, "flatten");
    return GD_AG_OUT(st, "reshape", out, a, NULL, NULL);
}
