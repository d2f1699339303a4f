/* index.c - views: a[i], a[i:j], a[...] and a[key] = value, len() and iteration, reshape and
 * flatten. Every view is contiguous, so indexing takes leading axes only: integers, then
 * slices (step 1) of which only the first that keeps more than one index may be partial, then
 * an optional final Ellipsis.
 */
#include "core.h"

/* ------------------------------------------------------------------------------------------
 * resolving an index to a view
 * ---------------------------------------------------------------------------------------- */

/* An index being resolved, one item at a time, from the leading axis on. */
typedef struct index_walk {
    const ArrayObject *a;
    const char *op;
    int64_t strides[GD_MAX_NDIM]; /* bytes per step along each axis of a */
    char *p;                      /* the view's first byte so far */
    int64_t *shape;               /* the view's shape so far */
    int ax, out_ndim;
    int sliced;                   /* an axis was sliced: integers may not follow */
    int spread;                   /* a slice kept more than one index: partial slices may not follow */
} index_walk;

static int index_slice(index_walk *w, PyObject *it)
{
    Py_ssize_t start, stop, step;
    if (PySlice_Unpack(it, &start, &stop, &step) < 0) return -1;
    Py_ssize_t len = PySlice_AdjustIndices((Py_ssize_t)w->a->shape[w->ax], &start, &stop, step);
    if (step != 1) {
        PyErr_Format(PyExc_IndexError,
                     "%s: slices with a step (here %zd) are not supported: gpudev views stay contiguous; "
                     "copy to NumPy for strided access, e.g. a.cpu().numpy()[::2]",
                     w->op, step);
        return -1;
    }
    int full = start == 0 && len == w->a->shape[w->ax];
    /* Once an earlier axis keeps more than one index, a partial slice here would skip memory
     * between the kept rows: not a contiguous view. */
    if (w->spread && !full) {
        PyErr_Format(PyExc_IndexError,
                     "%s: a partial slice after a sliced axis (like a[:, :3]) would not be a contiguous "
                     "view; gpudev slices one leading axis partially, the rest with ':'; "
                     "use a.cpu().numpy()[:, :3] for a strided copy",
                     w->op);
        return -1;
    }
    if (len > 1) w->spread = 1;
    w->sliced = 1;
    if (len > 0) w->p += (int64_t)start * w->strides[w->ax];
    w->shape[w->out_ndim++] = len;
    w->ax++;
    return 0;
}

static int index_integer(index_walk *w, PyObject *it)
{
    Py_ssize_t i = PyNumber_AsSsize_t(it, PyExc_IndexError);
    if (i == -1 && PyErr_Occurred()) return -1;
    if (w->sliced) {
        PyErr_Format(PyExc_IndexError,
                     "%s: an integer index after a slice (like a[:, 0]) would not be a contiguous view; "
                     "gpudev indexes leading axes only: use a.T[0] (a copy) or a.cpu().numpy()[:, 0]",
                     w->op);
        return -1;
    }
    int64_t n = w->a->shape[w->ax];
    if (i < -n || i >= n) {
        PyErr_Format(PyExc_IndexError, "%s: index %zd is out of bounds for axis %d with size %lld", w->op, i, w->ax,
                     (long long)n);
        return -1;
    }
    if (i < 0) i += n;
    w->p += (int64_t)i * w->strides[w->ax];
    w->ax++;
    return 0;
}

/* One item of the index that is no slice, integer or Ellipsis: an error. */
static int index_refuse(index_walk *w, PyObject *it)
{
    if (it == Py_None)
        PyErr_Format(PyExc_IndexError, "%s: None (np.newaxis) is not supported in indices; use a.reshape(...)", w->op);
    else
        PyErr_Format(PyExc_IndexError,
                     "%s: only integers, slices (start:stop) and a final Ellipsis are valid indices, got %.100s "
                     "(boolean and array indexing are not supported)",
                     w->op, Py_TYPE(it)->tp_name);
    return -1;
}

/* The items of an index, one by one; 1 after a final Ellipsis. */
static int index_item(index_walk *w, PyObject *it, Py_ssize_t k, Py_ssize_t nitems)
{
    if (it == Py_Ellipsis) {
        if (k == nitems - 1) return 1;
        PyErr_Format(PyExc_IndexError,
                     "%s: an Ellipsis (...) may only come last in a gpudev index; views index leading axes only",
                     w->op);
        return -1;
    }
    if (w->ax >= w->a->ndim) {
        PyErr_Format(PyExc_IndexError, "%s: too many indices for array: array is %d-dimensional, but %zd were indexed",
                     w->op, w->a->ndim, nitems);
        return -1;
    }
    if (PySlice_Check(it)) return index_slice(w, it);
    /* NumPy arrays of more than one index (or of bools) have an __index__ that raises NumPy's
     * own TypeError; only a 0-d integer array is one integer */
    if (PyArray_Check(it) && (PyArray_NDIM((PyArrayObject *)it) > 0 || !PyArray_ISINTEGER((PyArrayObject *)it)))
        return index_refuse(w, it);
    if (PyIndex_Check(it) && !PyBool_Check(it) && !PyArray_IsScalar(it, Bool)) return index_integer(w, it);
    return index_refuse(w, it);
}

/* Resolve `key` to a view: (data, ndim, shape). */
static int resolve_index(ArrayObject *a, PyObject *key, char **data, int *ndim, int64_t *shape, const char *op)
{
    PyObject *items = PyTuple_Check(key) ? Py_NewRef(key) : PyTuple_Pack(1, key);
    if (!items) return -1;
    index_walk w = {.a = a, .op = op, .p = a->data, .shape = shape};
    int64_t acc = (int64_t)gd_dtype_size(a->dtype);
    for (int i = a->ndim - 1; i >= 0; i--) {
        w.strides[i] = acc;
        acc *= a->shape[i] ? a->shape[i] : 1;
    }
    Py_ssize_t nitems = PyTuple_GET_SIZE(items);
    int rc = 0;
    for (Py_ssize_t k = 0; k < nitems && rc == 0; k++) rc = index_item(&w, PyTuple_GET_ITEM(items, k), k, nitems);
    Py_DECREF(items);
    if (rc < 0) return -1;
    for (; w.ax < a->ndim; w.ax++) shape[w.out_ndim++] = a->shape[w.ax];
    *data = w.p;
    *ndim = w.out_ndim;
    return 0;
}

/* ------------------------------------------------------------------------------------------
 * the mapping and sequence slots
 * ---------------------------------------------------------------------------------------- */

PyObject *gd_array_subscript(PyObject *self, PyObject *key)
{
    ArrayObject *a = (ArrayObject *)self;
    char *data;
    int ndim;
    int64_t shape[GD_MAX_NDIM];
    if (resolve_index(a, key, &data, &ndim, shape, "getitem") < 0) return NULL;
    gd_state *st = gd_state_of(self);
    ArrayObject *out = gd_array_view(st, a, data, ndim, shape);
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
    char *data;
    int ndim;
    int64_t shape[GD_MAX_NDIM];
    if (resolve_index(a, key, &data, &ndim, shape, "setitem") < 0) return -1;
    ArrayObject *view = gd_array_view(st, a, data, ndim, shape);
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
    int64_t row = a->size / (a->shape[0] ? a->shape[0] : 1);
    gd_state *st = gd_state_of(self);
    ArrayObject *out =
        gd_array_view(st, a, a->data + (int64_t)i * row * (int64_t)gd_dtype_size(a->dtype), a->ndim - 1, a->shape + 1);
    return GD_AG_OUT(st, "getitem", out, a, NULL, PyLong_FromSsize_t(i));
}

/* ------------------------------------------------------------------------------------------
 * reshape and flatten
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
    ArrayObject *out = gd_array_view(st, a, a->data, ndim, shape);
    return GD_AG_OUT(st, "reshape", out, a, NULL, NULL);
}

PyObject *gd_array_flatten(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    ArrayObject *a = (ArrayObject *)self;
    gd_state *st = gd_state_of(self);
    ArrayObject *out = gd_array_view(st, a, a->data, 1, &a->size);
    return GD_AG_OUT(st, "reshape", out, a, NULL, NULL);
}
