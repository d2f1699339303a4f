/* shape.c - shapes as the core handles them: parsing shape arguments, shapes as tuples and
 * strings for messages, element counts that must not overflow, NumPy's broadcasting, and axis
 * arguments (with numpy's AxisError).
 */
#include "shape.h"
#include "args.h"

#include <stdio.h>

/* ------------------------------------------------------------------------------------------
 * shape arguments, tuples and strings
 * ---------------------------------------------------------------------------------------- */

const char *gd_shape_str(int ndim, const int64_t *shape, char *buf)
{
    size_t n = 0, cap = 256;
    n += (size_t)snprintf(buf + n, cap - n, "(");
    for (int i = 0; i < ndim && n < cap - 24; i++)
        n += (size_t)snprintf(buf + n, cap - n, i ? ", %lld" : "%lld", (long long)shape[i]);
    snprintf(buf + n, cap - n, ndim == 1 ? ",)" : ")");
    return buf;
}

PyObject *gd_shape_tuple(int ndim, const int64_t *shape)
{
    PyObject *t = PyTuple_New(ndim);
    if (!t) return NULL;
    for (int i = 0; i < ndim; i++) {
        PyObject *v = PyLong_FromLongLong(shape[i]);
        if (!v) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, v);
    }
    return t;
}

static int parse_dim(PyObject *o, int64_t *out, const char *op)
{
    if (PyBool_Check(o) || !PyIndex_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s: shape entries must be ints, got %.100s", op, Py_TYPE(o)->tp_name);
        return -1;
    }
    long long v = PyLong_AsLongLong(o);
    if (v == -1 && PyErr_Occurred()) {
        if (PyErr_ExceptionMatches(PyExc_OverflowError)) {
            PyErr_Clear();
            PyObject *shown = gd_brief_repr(o);
            if (shown) PyErr_Format(PyExc_ValueError, "%s: dimension %U is too large", op, shown);
            Py_XDECREF(shown);
        }
        return -1;
    }
    *out = v;
    return 0;
}

int gd_parse_shape(PyObject *const *args, Py_ssize_t nargs, int *ndim, int64_t *shape, const char *op)
{
    /* one tuple or list holds the dimensions; else each argument is one */
    int packed = nargs == 1 && (PyTuple_Check(args[0]) || PyList_Check(args[0]));
    Py_ssize_t n = packed ? PySequence_Fast_GET_SIZE(args[0]) : nargs;
    if (n > GD_MAX_NDIM) {
        PyErr_Format(PyExc_ValueError, "%s: %zd dimensions given; gpudev supports at most %d", op, n, GD_MAX_NDIM);
        return -1;
    }
    /* a dimension's __index__ may change a list of them: read a tuple (args.h) */
    PyObject *held = packed ? gd_tuple_of(args[0], "shape: expected a tuple of ints") : NULL;
    if (packed && !held) return -1;
    PyObject *const *dims = packed ? PySequence_Fast_ITEMS(held) : args;
    int rc = 0;
    for (Py_ssize_t i = 0; i < n && rc == 0; i++) rc = parse_dim(dims[i], &shape[i], op);
    Py_XDECREF(held);
    *ndim = (int)n;
    return rc;
}

/* *out = x * y for sizes (>= 0); returns 1 instead when the product overflows int64. */
static inline int mul_overflows(int64_t *out, int64_t x, int64_t y)
{
    if (x != 0 && y > INT64_MAX / x) return 1;
    *out = x * y;
    return 0;
}

int gd_shape_size(int64_t *out, int ndim, const int64_t *shape, const char *op)
{
    int64_t n = 1;
    for (int k = 0; k < ndim; k++) {
        if (mul_overflows(&n, n, shape[k])) {
            char s[256];
            PyErr_Format(PyExc_ValueError, "%s: the shape %s has more than 2**63 - 1 elements",
                         op, gd_shape_str(ndim, shape, s));
            return -1;
        }
    }
    *out = n;
    return 0;
}

/* ------------------------------------------------------------------------------------------
 * broadcasting
 * ---------------------------------------------------------------------------------------- */

int gd_broadcast(int *ndim, int64_t *shape, int na, const int64_t *sa, int nb, const int64_t *sb)
{
    int nd = na > nb ? na : nb;
    for (int k = 0; k < nd; k++) {
        int ja = k - (nd - na), jb = k - (nd - nb);
        int64_t da = ja >= 0 ? sa[ja] : 1, db = jb >= 0 ? sb[jb] : 1;
        if (da != db && da != 1 && db != 1) return -1;
        shape[k] = da == 1 ? db : da;
    }
    *ndim = nd;
    return 0;
}

void gd_raise_broadcast(const char *op, int na, const int64_t *sa, int nb, const int64_t *sb)
{
    char s0[256], s1[256];
    PyErr_Format(PyExc_ValueError, "%s: shapes %s and %s cannot be broadcast together", op,
                 gd_shape_str(na, sa, s0), gd_shape_str(nb, sb, s1));
}

/* ------------------------------------------------------------------------------------------
 * axes
 * ---------------------------------------------------------------------------------------- */

/* numpy.exceptions.AxisError (a ValueError and IndexError), imported only when raised. */
static void raise_axis_error(int64_t axis, int ndim, const char *op)
{
    PyObject *mod = PyImport_ImportModule("numpy.exceptions");
    PyObject *cls = mod ? PyObject_GetAttrString(mod, "AxisError") : NULL;
    Py_XDECREF(mod);
    if (cls) {
        PyObject *exc = PyObject_CallFunction(cls, "Lis", (long long)axis, ndim, op);
        if (exc) {
            PyErr_SetObject(cls, exc);
            Py_DECREF(exc);
        }
        Py_DECREF(cls);
        return;
    }
    PyErr_Clear();
    PyErr_Format(PyExc_ValueError, "%s: axis %lld is out of bounds for array of dimension %d", op,
                 (long long)axis, ndim);
}

int gd_normalize_axis(int *out, int64_t axis, int ndim, const char *op)
{
    if (axis < -(int64_t)ndim || axis >= ndim) {
        raise_axis_error(axis, ndim, op);
        return -1;
    }
    *out = (int)(axis < 0 ? axis + ndim : axis);
    return 0;
}

int gd_parse_axis(int64_t *out, PyObject *obj, const char *op)
{
    if (!PyIndex_Check(obj) || PyBool_Check(obj)) { /* True is not axis 1 in NumPy */
        PyErr_Format(PyExc_TypeError, "%s: axis must be an int, got %.100s", op, Py_TYPE(obj)->tp_name);
        return -1;
    }
    Py_ssize_t v = PyNumber_AsSsize_t(obj, NULL); /* clips: huge values are out of range */
    if (v == -1 && PyErr_Occurred()) return -1;
    *out = v;
    return 0;
}

int gd_parse_axes(uint8_t *reduced, PyObject *axis, int ndim, const char *op)
{
    memset(reduced, axis == Py_None, (size_t)ndim);
    if (axis == Py_None) return 0;
    int single = !PyTuple_Check(axis);
    if (single && (!PyIndex_Check(axis) || PyBool_Check(axis))) {
        PyErr_Format(PyExc_TypeError, "%s: axis must be None, an int or a tuple of ints, got %s", op,
                     Py_TYPE(axis)->tp_name);
        return -1;
    }
    Py_ssize_t n = single ? 1 : PyTuple_GET_SIZE(axis);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = single ? axis : PyTuple_GET_ITEM(axis, i);
        if (!PyIndex_Check(item)) {
            PyErr_Format(PyExc_TypeError, "%s: axis must be None, an int or a tuple of ints, got %s in the tuple",
                         op, Py_TYPE(item)->tp_name);
            return -1;
        }
        int64_t v;
        int k;
        if (gd_parse_axis(&v, item, op) < 0 || gd_normalize_axis(&k, v, ndim, op) < 0) return -1;
        if (reduced[k]) {
            PyErr_Format(PyExc_ValueError, "%s: duplicate value in 'axis' (axis %d given twice)", op, k);
            return -1;
        }
        reduced[k] = 1;
    }
    return 0;
}
