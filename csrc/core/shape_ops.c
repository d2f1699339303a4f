/* shape_ops.c - operations between shapes: transposes as views (a.T, a.mT, transpose,
 * permute, swapaxes), and concatenate and stack, which copy.
 */
#include "shape_ops.h"
#include "core.h"
#include "args.h"
#include "array.h"
#include "autograd.h"
#include "compute.h"
#include "device.h"
#include "operand.h"
#include "runtime.h"
#include "shape.h"
#include "trace.h"

#include <string.h>

/* ------------------------------------------------------------------------------------------
 * transpose
 * ---------------------------------------------------------------------------------------- */

static int parse_perm(int *perm, PyObject *axes, int ndim, const int64_t *shape)
{
    PyObject *fast = gd_tuple_of(axes, "transpose: axes must be a tuple of ints");
    if (!fast) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    uint8_t seen[GD_MAX_NDIM] = {0};
    int rc = -1;
    char s0[256];
    PyObject *shown = NULL;
    if (n != ndim) {
        if ((shown = gd_brief_repr(fast)))
            PyErr_Format(PyExc_ValueError,
                         "transpose: axes %U do not match an array of shape %s: give a permutation of its %d axes",
                         shown, gd_shape_str(ndim, shape, s0), ndim);
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(fast, i);
        if (!PyIndex_Check(item)) {
            PyErr_Format(PyExc_TypeError, "transpose: axes must be ints, got %s", Py_TYPE(item)->tp_name);
            goto done;
        }
        Py_ssize_t v = PyNumber_AsSsize_t(item, NULL);
        if ((v == -1 && PyErr_Occurred()) || gd_normalize_axis(&perm[i], v, ndim, "transpose") < 0) goto done;
        if (seen[perm[i]]++) {
            if ((shown = gd_brief_repr(fast)))
                PyErr_Format(PyExc_ValueError,
                             "transpose: repeated axis %d in axes %U; give a permutation of (0, ..., %d)", perm[i],
                             shown, ndim - 1);
            goto done;
        }
    }
    rc = 0;
done:
    Py_XDECREF(shown);
    Py_DECREF(fast);
    return rc;
}

/* The permutation as a tuple of ints, what autograd's rule inverts. */
static PyObject *perm_tuple(const int *perm, int nd)
{
    PyObject *t = PyTuple_New(nd);
    for (int k = 0; t && k < nd; k++) {
        PyObject *v = PyLong_FromLong(perm[k]);
        if (!v) Py_CLEAR(t);
        else PyTuple_SET_ITEM(t, k, v);
    }
    return t;
}

/* The view of a with its axes in the order perm (transpose, permute, swapaxes, mT), recorded
 * for autograd as a transpose. */
static PyObject *permuted_view(gd_state *st, ArrayObject *a, const int *perm)
{
    int64_t shape[GD_MAX_NDIM], strides[GD_MAX_NDIM];
    for (int k = 0; k < a->ndim; k++) {
        shape[k] = a->shape[perm[k]];
        strides[k] = a->strides[perm[k]];
    }
    ArrayObject *out = gd_array_view(st, a, a->data, a->ndim, shape, strides);
    return GD_AG_OUT(st, "transpose", out, a, NULL, perm_tuple(perm, a->ndim));
}

PyObject *gd_transpose(gd_state *st, ArrayObject *a, PyObject *axes)
{
    int nd = a->ndim, perm[GD_MAX_NDIM];
    if (!axes || axes == Py_None) {
        for (int k = 0; k < nd; k++) perm[k] = nd - 1 - k;
    } else if (parse_perm(perm, axes, nd, a->shape) < 0) {
        return NULL;
    }
    return permuted_view(st, a, perm);
}

/* The axes given as *args or as one tuple or list, as a tuple (new reference). */
static PyObject *axes_tuple(PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs == 1 && (PyTuple_Check(args[0]) || PyList_Check(args[0]))) return PySequence_Tuple(args[0]);
    PyObject *t = PyTuple_New(nargs);
    for (Py_ssize_t i = 0; t && i < nargs; i++) PyTuple_SET_ITEM(t, i, Py_NewRef(args[i]));
    return t;
}

PyObject *gd_array_transpose(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    gd_state *st = gd_state_of(self);
    if (nargs == 0 || (nargs == 1 && args[0] == Py_None)) return gd_transpose(st, (ArrayObject *)self, NULL);
    PyObject *t = axes_tuple(args, nargs);
    if (!t) return NULL;
    PyObject *res = gd_transpose(st, (ArrayObject *)self, t);
    Py_DECREF(t);
    return res;
}

PyObject *gd_array_permute(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    ArrayObject *a = (ArrayObject *)self;
    if (nargs == 0 && a->ndim > 0) {
        PyErr_SetString(PyExc_TypeError, "permute(*dims) needs the new order of the axes, e.g. a.permute(1, 0)");
        return NULL;
    }
    PyObject *t = axes_tuple(args, nargs);
    if (!t) return NULL;
    PyObject *res = gd_transpose(gd_state_of(self), a, t);
    Py_DECREF(t);
    return res;
}

PyObject *gd_array_swapaxes(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    ArrayObject *a = (ArrayObject *)self;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "swapaxes(axis1, axis2) takes two axes");
        return NULL;
    }
    int ax[2], perm[GD_MAX_NDIM];
    for (int i = 0; i < 2; i++) {
        if (!PyIndex_Check(args[i])) {
            PyErr_Format(PyExc_TypeError, "swapaxes: axes must be ints, got %s", Py_TYPE(args[i])->tp_name);
            return NULL;
        }
        Py_ssize_t v = PyNumber_AsSsize_t(args[i], NULL);
        if ((v == -1 && PyErr_Occurred()) || gd_normalize_axis(&ax[i], v, a->ndim, "swapaxes") < 0) return NULL;
    }
    for (int k = 0; k < a->ndim; k++) perm[k] = k == ax[0] ? ax[1] : k == ax[1] ? ax[0] : k;
    return permuted_view(gd_state_of(self), a, perm);
}

PyObject *gd_array_mT(PyObject *self, void *Py_UNUSED(closure))
{
    ArrayObject *a = (ArrayObject *)self;
    if (a->ndim < 2) {
        PyErr_Format(PyExc_ValueError, "mT: matrix transpose with ndim < 2 is undefined (the array has %d)", a->ndim);
        return NULL;
    }
    int perm[GD_MAX_NDIM];
    for (int k = 0; k < a->ndim; k++) perm[k] = k;
    perm[a->ndim - 2] = a->ndim - 1;
    perm[a->ndim - 1] = a->ndim - 2;
    return permuted_view(gd_state_of(self), a, perm);
}

/* ------------------------------------------------------------------------------------------
 * concatenate and stack
 * ---------------------------------------------------------------------------------------- */

/* The arrays to join and how: items[0..n) are Arrays (checked), stack or not. */
typedef struct join {
    const char *name;
    int stack;
    PyObject **items;
    Py_ssize_t n;
    gd_dtype dt;      /* the result's: any mix of gpudev's dtypes promotes to float64 */
} join;

static inline ArrayObject *join_item(const join *j, Py_ssize_t i) { return (ArrayObject *)j->items[i]; }

/* Every item an Array, on one device, with the dimensions the join needs. */
static int check_join(gd_state *st, join *j)
{
    char s0[256], s1[256];
    if (j->n == 0) {
        PyErr_Format(PyExc_ValueError, "%s: need at least one array", j->name);
        return -1;
    }
    for (Py_ssize_t i = 0; i < j->n; i++) {
        if (!gd_is_array(st, j->items[i])) {
            PyErr_Format(PyExc_TypeError,
                         "%s: expected a sequence of gpudev Arrays, but item %zd is %s; convert it "
                         "first with gd.asarray(x)",
                         j->name, i, Py_TYPE(j->items[i])->tp_name);
            return -1;
        }
    }
    ArrayObject *a0 = join_item(j, 0);
    if (!j->stack && a0->ndim == 0) {
        PyErr_SetString(PyExc_ValueError,
                        "concatenate: zero-dimensional arrays cannot be concatenated; use gd.stack "
                        "to join them along a new axis");
        return -1;
    }
    j->dt = a0->dtype;
    for (Py_ssize_t i = 1; i < j->n; i++) {
        ArrayObject *ai = join_item(j, i);
        if (!gd_device_eq(ai->device, a0->device)) {
            char to[32];
            PyErr_Format(st->DeviceMismatchError,
                         "%s: arrays are on different devices, %s (index 0) and %s (index %zd); "
                         "copy them to one device first, e.g. arrays[%zd].to('%s')",
                         j->name, gd_device_label(st, a0->device, s0), gd_device_label(st, ai->device, s1), i, i,
                         gd_device_str(a0->device, to));
            return -1;
        }
        if (j->stack && !gd_same_shape(ai, a0)) {
            PyErr_Format(PyExc_ValueError,
                         "stack: all input arrays must have the same shape, but the array at index 0 "
                         "has shape %s and the array at index %zd has shape %s",
                         gd_shape_str(a0->ndim, a0->shape, s0), i, gd_shape_str(ai->ndim, ai->shape, s1));
            return -1;
        }
        if (!j->stack && ai->ndim != a0->ndim) {
            PyErr_Format(PyExc_ValueError,
                         "concatenate: all the input arrays must have the same number of dimensions, "
                         "but the array at index 0 has %d dimension(s) and the array at index %zd has "
                         "%d dimension(s)",
                         a0->ndim, i, ai->ndim);
            return -1;
        }
        j->dt = gd_promote_dtypes(j->dt, ai->dtype); /* NumPy's: int32 with int64 is int64 */
    }
    return 0;
}

/* concatenate's result shape: the inputs' along every axis but ax, their sum along it. */
static int concat_shape(const join *j, int ax, int64_t *shape)
{
    const ArrayObject *a0 = join_item(j, 0);
    memcpy(shape, a0->shape, (size_t)a0->ndim * sizeof(int64_t));
    for (Py_ssize_t i = 1; i < j->n; i++) {
        const ArrayObject *ai = join_item(j, i);
        for (int k = 0; k < a0->ndim; k++) {
            if (k != ax && ai->shape[k] != a0->shape[k]) {
                PyErr_Format(PyExc_ValueError,
                             "concatenate: all the input array dimensions except for the "
                             "concatenation axis must match exactly, but along dimension %d, the "
                             "array at index 0 has size %lld and the array at index %zd has size %lld",
                             k, (long long)a0->shape[k], i, (long long)ai->shape[k]);
                return -1;
            }
        }
        if (ai->shape[ax] > INT64_MAX - shape[ax]) {
            PyErr_Format(PyExc_ValueError,
                         "concatenate: the result has more than 2**63 - 1 elements along axis %d", ax);
            return -1;
        }
        shape[ax] += ai->shape[ax];
    }
    return 0;
}

/* The result's shape (out_nd axes) for joining along `axis`; *ax is the axis normalised. */
static int join_shape(const join *j, int64_t axis, int *ax, int *out_nd, int64_t *shape)
{
    const ArrayObject *a0 = join_item(j, 0);
    const int nd = a0->ndim;
    *out_nd = j->stack ? nd + 1 : nd;
    if (gd_normalize_axis(ax, axis, *out_nd, j->name) < 0) return -1;
    if (!j->stack) return concat_shape(j, *ax, shape);
    memcpy(shape, a0->shape, (size_t)*ax * sizeof(int64_t));
    shape[*ax] = j->n;
    memcpy(shape + *ax + 1, a0->shape + *ax, (size_t)(nd - *ax) * sizeof(int64_t));
    if (*out_nd > GD_MAX_NDIM) {
        PyErr_Format(PyExc_ValueError, "stack: the result would have %d dimensions; gpudev supports at most %d",
                     *out_nd, GD_MAX_NDIM);
        return -1;
    }
    return 0;
}

/* Each input is `outer` rows of `chunk` elements, copied into the output's rows (of `row`
 * elements) at a running column offset. */
static int join_copy(gd_state *st, const gd_backend *be, const join *j, ArrayObject *out, int64_t outer)
{
    const int64_t row = out->size / outer;
    const size_t isz = gd_dtype_size(j->dt);
    const gd_device dev = out->device;
    int64_t offset = 0;
    for (Py_ssize_t i = 0; i < j->n; i++) {
        ArrayObject *ai = join_item(j, i), *src = ai, *tmp = NULL;
        int64_t chunk = ai->size / outer;
        if (chunk == 0) continue;
        if ((ai->dtype != j->dt || !ai->contiguous) && !(src = tmp = gd_converted(st, be, ai, j->dt, j->name)))
            return -1;
        gd_error err;
        PyThreadState *ts = gd_run_begin(dev, (double)ai->size);
        int rc = be->copy_2d(out->data + (size_t)offset * isz, (size_t)row * isz, src->data, (size_t)chunk * isz,
                             (size_t)chunk * isz, (size_t)outer, dev.index, &err);
        rc = gd_run_end(st, dev, ts, rc, &err, j->name);
        Py_XDECREF(tmp);
        if (rc < 0) return -1;
        offset += chunk;
    }
    return 0;
}

static PyObject *concatenate(gd_state *st, PyObject *seq, int64_t axis, int stack)
{
    join j = {.name = stack ? "stack" : "concatenate", .stack = stack};
    /* the copies run without the GIL: a tuple keeps every array alive whatever happens to
     * the caller's list meanwhile (args.h) */
    PyObject *fast = gd_tuple_of(seq, stack ? "stack: expected a sequence of Arrays"
                                            : "concatenate: expected a sequence of Arrays");
    if (!fast) return NULL;
    j.n = PySequence_Fast_GET_SIZE(fast);
    j.items = PySequence_Fast_ITEMS(fast);
    int ax, out_nd;
    int64_t shape[GD_MAX_NDIM + 1], size;
    ArrayObject *out = NULL;
    if (check_join(st, &j) < 0 || join_shape(&j, axis, &ax, &out_nd, shape) < 0 ||
        gd_shape_size(&size, out_nd, shape, j.name) < 0)
        goto done;
    ArrayObject *a0 = join_item(&j, 0);
    const gd_backend *be = gd_backend_of(st, a0->device, j.name);
    if (!be || !(out = gd_array_new(st, a0->device, j.dt, out_nd, shape, j.name))) goto done;
    int64_t outer = 1;
    for (int k = 0; k < ax; k++) outer *= shape[k];
    if ((size > 0 && join_copy(st, be, &j, out, outer) < 0) ||
        gd_trace_op(st, j.name, out, a0, j.n > 1 ? join_item(&j, 1) : NULL) < 0)
        Py_CLEAR(out);
    for (Py_ssize_t i = 2; out && i < j.n; i++) /* the first two came with the trace */
        if (gd_guard_inherit(st, (PyObject *)out, (PyObject *)join_item(&j, i)) < 0) Py_CLEAR(out);
    if (out && gd_ag_any(st, fast)) {
        PyObject *items = PySequence_Tuple(fast);
        out = items ? (ArrayObject *)gd_ag_record(st, j.name, (PyObject *)out, items, NULL, PyLong_FromLong(ax))
                    : (Py_DECREF(out), NULL);
        Py_XDECREF(items);
    }
done:
    Py_DECREF(fast);
    return (PyObject *)out;
}

/* stack(arrays, axis=0) and concatenate(arrays, axis=0). */
static PyObject *join_fn(PyObject *module, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                         const gd_params *params, int stack)
{
    PyObject *argv[2] = {NULL, NULL};
    if (gd_parse_args(argv, params, args, nargs, kwnames) < 0) return NULL;
    int64_t axis = 0;
    if (argv[1] && gd_parse_axis(&axis, argv[1], params->fname) < 0) return NULL;
    return concatenate(PyModule_GetState(module), argv[0], axis, stack);
}

GD_SIGNATURE(stack_sig, "stack", "$module, arrays, axis=0", "Join arrays along a new axis.");
static PyObject *mod_stack(PyObject *m, PyObject *const *a, Py_ssize_t n, PyObject *k)
{
    return join_fn(m, a, n, k, &stack_sig, 1);
}

GD_SIGNATURE(concatenate_sig, "concatenate", "$module, arrays, axis=0", "Join arrays along an existing axis.");
static PyObject *mod_concatenate(PyObject *m, PyObject *const *a, Py_ssize_t n, PyObject *k)
{
    return join_fn(m, a, n, k, &concatenate_sig, 0);
}

static PyMethodDef shape_ops_functions[] = {
    GD_DEF(stack_sig, GD_FN(mod_stack), GD_FASTKW),
    GD_DEF(concatenate_sig, GD_FN(mod_concatenate), GD_FASTKW),
    {NULL, NULL, 0, NULL},
};

int gd_shape_ops_setup(PyObject *module) { return PyModule_AddFunctions(module, shape_ops_functions); }
