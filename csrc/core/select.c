/* select.c - selection: gd.where(cond, x, y), and argmax / argmin (module functions and
 * methods). where is a three-operand elementwise operation planned like the binary ones
 * (gd_ewise_plan takes up to three operands); argmax and argmin read a C-contiguous source
 * as one (outer, len, inner) block.
 */
#include "select.h"
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
 * where: operands
 * ---------------------------------------------------------------------------------------- */

/* What where decided about its operands: 0 cond, 1 x, 2 y. */
typedef struct where_plan {
    gd_opinfo op[3];
    gd_device dev;
    gd_dtype dt;   /* the result's: x and y promoted */
    int ndim;
    int64_t shape[GD_MAX_NDIM], size;
} where_plan;

static const char *const where_names[3] = {"condition", "x", "y"};

/* Classify the three operands and find their device: every Array on one, at least one Array. */
static int where_operands(gd_state *st, where_plan *p, PyObject *const *args)
{
    const ArrayObject *first = NULL;
    for (int i = 0; i < 3; i++) {
        int r = gd_classify(st, args[i], &p->op[i], "where");
        if (r < 0) return -1;
        if (r > 0) {
            PyErr_Format(PyExc_TypeError,
                         "where: %s must be a gpudev Array or a number, got %.100s; convert it with gd.asarray(x)",
                         where_names[i], Py_TYPE(args[i])->tp_name);
            return -1;
        }
        const ArrayObject *a = p->op[i].arr;
        if (a && first && !gd_device_eq(a->device, first->device)) {
            gd_raise_device_mismatch(st, "where", first->device, a->device);
            return -1;
        }
        if (a && !first) first = a;
    }
    if (!first) {
        PyErr_SetString(PyExc_TypeError,
                        "where: at least one of condition, x and y must be a gpudev Array; create one with "
                        "gd.asarray(x)");
        return -1;
    }
    p->dev = first->device;
    return 0;
}

/* The dtype of a Python scalar on its own: bool, int64 or float64. */
static gd_dtype weak_dtype(const gd_opinfo *x)
{
    return x->kind == OPD_WEAK_BOOL ? GD_BOOL : x->kind == OPD_WEAK_INT ? GD_INT64 : GD_FLOAT64;
}

/* NumPy 2 promotion of x and y (the condition only selects); two Python scalars give the
 * wider of their own dtypes, as np.where(c, 1, 2.5) does. */
static int where_dtype(where_plan *p)
{
    const gd_opinfo *x = &p->op[1], *y = &p->op[2];
    const int strong = x->kind == OPD_ARRAY || x->kind == OPD_SCALAR || y->kind == OPD_ARRAY || y->kind == OPD_SCALAR;
    if (strong) {
        p->dt = gd_promote(x, y);
    } else {
        gd_dtype a = weak_dtype(x), b = weak_dtype(y);
        p->dt = a == GD_FLOAT64 || b == GD_FLOAT64 ? GD_FLOAT64 : a == GD_INT64 || b == GD_INT64 ? GD_INT64 : GD_BOOL;
    }
    for (int i = 1; i < 3; i++)
        if (!gd_int_fits(&p->op[i], p->dt)) {
            PyErr_Format(PyExc_OverflowError,
                         "where: Python integer %S out of bounds for %s; pass a float, e.g. float(v)",
                         p->op[i].obj, gd_dtype_name(p->dt));
            return -1;
        }
    return 0;
}

/* The three shapes broadcast together. */
static int where_shape(where_plan *p)
{
    int nd[3];
    const int64_t *sh[3];
    for (int i = 0; i < 3; i++) {
        nd[i] = p->op[i].arr ? p->op[i].arr->ndim : 0;
        sh[i] = p->op[i].arr ? p->op[i].arr->shape : NULL;
    }
    int ndim;
    int64_t shape[GD_MAX_NDIM];
    if (gd_broadcast(&ndim, shape, nd[0], sh[0], nd[1], sh[1]) < 0 ||
        gd_broadcast(&p->ndim, p->shape, ndim, shape, nd[2], sh[2]) < 0) {
        char s0[256], s1[256], s2[256];
        PyErr_Format(PyExc_ValueError,
                     "where: condition, x and y of shapes %s, %s and %s cannot be broadcast together",
                     gd_shape_str(nd[0], sh[0], s0), gd_shape_str(nd[1], sh[1], s1), gd_shape_str(nd[2], sh[2], s2));
        return -1;
    }
    return gd_shape_size(&p->size, p->ndim, p->shape, "where");
}

/* ------------------------------------------------------------------------------------------
 * where: computing
 * ---------------------------------------------------------------------------------------- */

/* Operand i as the backend reads it: the array itself when it has the dtype it needs (bool
 * for the condition, the result's for x and y), else a converted copy (a condition of another
 * dtype becomes cond != 0, as astype to bool gives); scalars into opd[i].scalar. *use is a
 * new reference, or NULL for a scalar. */
static int where_input(gd_state *st, const gd_backend *be, const where_plan *p, int i, gd_operand *opd,
                       ArrayObject **use)
{
    const gd_opinfo *x = &p->op[i];
    const gd_dtype want = i == 0 ? GD_BOOL : p->dt;
    *use = NULL;
    if (!x->arr) return gd_scalar_assign(&opd->scalar, x, want, "where");
    if (x->arr->dtype == want) *use = (ArrayObject *)Py_NewRef((PyObject *)x->arr);
    else *use = gd_converted(st, be, x->arr, want, "where");
    return *use ? 0 : -1;
}

static PyObject *where_compute(gd_state *st, PyObject *const *args)
{
    where_plan p;
    if (where_operands(st, &p, args) < 0 || where_dtype(&p) < 0 || where_shape(&p) < 0) return NULL;
    const gd_backend *be = gd_backend_of(st, p.dev, "where");
    if (!be) return NULL;
    gd_operand opd[3];
    ArrayObject *use[3] = {NULL, NULL, NULL}, *out = NULL;
    for (int i = 0; i < 3; i++)
        if (where_input(st, be, &p, i, &opd[i], &use[i]) < 0) goto fail;
    if (!(out = gd_array_new(st, p.dev, p.dt, p.ndim, p.shape, "where"))) goto fail;
    if (p.size > 0) { /* out is new: it shares memory with no operand */
        gd_ewise ew;
        gd_error err;
        gd_ewise_plan(&ew, opd, use, 3, p.ndim, p.shape, p.size, NULL);
        PyThreadState *ts = gd_run_begin(p.dev, (double)p.size);
        int rc = be->where(out->data, p.dt, &ew, &opd[0], &opd[1], &opd[2], p.dev.index, &err);
        if (gd_run_end(st, p.dev, ts, rc, &err, "where") < 0) goto fail;
    }
    if (gd_trace_op(st, "where", out, use[1] ? use[1] : use[0], use[2]) < 0 ||
        (use[1] && gd_guard_inherit(st, (PyObject *)out, (PyObject *)use[0]) < 0))
        goto fail;
    /* autograd: x and y are the inputs; the condition (as bool) rides along for the rule */
    PyObject *cond = use[0] ? (PyObject *)use[0] : args[0];
    PyObject *res = GD_AG_OUT(st, "where", out, args[1], args[2], Py_NewRef(cond));
    out = NULL;
    for (int i = 0; i < 3; i++) Py_XDECREF(use[i]);
    return res;
fail:
    for (int i = 0; i < 3; i++) Py_XDECREF(use[i]);
    Py_XDECREF(out);
    return NULL;
}

GD_SIGNATURE_USAGE(where_sig, "where", "$module, condition, x, y",
                   " takes 3 arguments: the elements of x where condition is true, else of y; for the "
                   "indices where condition is true use gd.nonzero(condition)",
                   "The elements of x where condition is true (nonzero), else those of y.\n\n"
                   "condition, x and y broadcast together; x and y may be Python numbers (NumPy 2 promotion). Values\n"
                   "are selected, not computed, so inf and NaN in the branch not taken do no harm. Gradients flow\n"
                   "to x and y, none to the condition. gd.nonzero(condition) gives the indices instead.\n\n"
                   ">>> x = gd.array([-1.0, 2.0, -3.0])\n>>> gd.where(x > 0, x, 0.0).tolist()\n[0.0, 2.0, 0.0]");
static PyObject *mod_where(PyObject *module, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *argv[3] = {NULL, NULL, NULL};
    if (gd_parse_args(argv, &where_sig, args, nargs, kwnames) < 0) return NULL;
    return where_compute(PyModule_GetState(module), argv);
}

/* ------------------------------------------------------------------------------------------
 * argmax and argmin
 * ---------------------------------------------------------------------------------------- */

/* The (outer, len, inner) block of a C-contiguous a reduced along axis `ax` (-1: all of it,
 * flattened). */
static void arg_block(const ArrayObject *a, int ax, int64_t *outer, int64_t *len, int64_t *inner)
{
    *outer = *inner = 1;
    *len = ax < 0 ? a->size : a->shape[ax];
    for (int k = 0; ax >= 0 && k < a->ndim; k++) {
        if (k < ax) *outer *= a->shape[k];
        if (k > ax) *inner *= a->shape[k];
    }
}

/* The result's shape: a without axis ax (all axes for -1), or with it as 1 under keepdims. */
static int arg_shape(int64_t *shape, const ArrayObject *a, int ax, int keepdims)
{
    int nd = 0;
    for (int k = 0; k < a->ndim; k++) {
        const int reduced = ax < 0 || k == ax;
        if (!reduced || keepdims) shape[nd++] = reduced ? 1 : a->shape[k];
    }
    return nd;
}

/* The index of the first maximum (GD_RED_MAX) or minimum of a along `axis` (None: the flat
 * index), int64. Views are compacted first: a copy of a, the price of reading one block. Never
 * recorded for autograd: the result is an integer array without a gradient. */
static PyObject *argreduce(gd_state *st, ArrayObject *a, PyObject *axis, int keepdims, gd_redop op)
{
    const char *name = op == GD_RED_MAX ? "argmax" : "argmin";
    int ax = -1;
    int64_t axis_v;
    if (axis != Py_None && (gd_parse_axis(&axis_v, axis, name) < 0 || gd_normalize_axis(&ax, axis_v, a->ndim, name) < 0))
        return NULL;
    if (ax < 0 ? a->size == 0 : a->shape[ax] == 0) {
        PyErr_Format(PyExc_ValueError, "%s: attempt to get %s of an empty sequence", name, name);
        return NULL;
    }
    const gd_backend *be = gd_backend_of(st, a->device, name);
    int64_t shape[GD_MAX_NDIM], outer, len, inner;
    const int nd = arg_shape(shape, a, ax, keepdims);
    ArrayObject *src = be ? gd_contiguous(st, be, a, name) : NULL;
    ArrayObject *out = src ? gd_array_new(st, a->device, GD_INT64, nd, shape, name) : NULL;
    if (out && out->size > 0) {
        gd_error err;
        arg_block(src, ax, &outer, &len, &inner);
        PyThreadState *ts = gd_run_begin(a->device, (double)src->size);
        int rc = be->argreduce((int64_t *)out->data, op, src->data, src->dtype, outer, len, inner, a->device.index, &err);
        if (gd_run_end(st, a->device, ts, rc, &err, name) < 0) Py_CLEAR(out);
    }
    if (out && gd_trace_op(st, name, out, a, NULL) < 0) Py_CLEAR(out);
    Py_XDECREF(src);
    return (PyObject *)out;
}

#define GD_ARG_DOC(what) \
    "The index of the first " what " (int64); axis=None: the index into the flattened array (a 0-d array). "
GD_SIGNATURE(argmax_sig, "argmax", "$module, a, axis=None, keepdims=False",
             GD_ARG_DOC("maximum") "NaN counts as the maximum, as in NumPy. The result has no gradient.\n\n"
             ">>> gd.argmax(gd.array([[1, 5, 5], [7, 0, 2]]), axis=1).tolist()\n[1, 0]");
GD_SIGNATURE(argmin_sig, "argmin", "$module, a, axis=None, keepdims=False",
             GD_ARG_DOC("minimum") "NaN counts as the minimum, as in NumPy. The result has no gradient.\n\n"
             ">>> gd.argmin(gd.array([3.0, 1.0, 1.0])).item()\n1");
GD_SIGNATURE_SHARED(gd_array_argmax_sig, "argmax", "$self, axis=None, keepdims=False",
                    GD_ARG_DOC("maximum") "NaN counts as the maximum.\n\n"
                    ">>> gd.array([1.0, 3.0, 3.0]).argmax().item()\n1");
GD_SIGNATURE_SHARED(gd_array_argmin_sig, "argmin", "$self, axis=None, keepdims=False",
                    GD_ARG_DOC("minimum") "NaN counts as the minimum.\n\n"
                    ">>> gd.array([[4, 2], [1, 3]]).argmin(axis=0).tolist()\n[1, 0]");
#undef GD_ARG_DOC

/* (a,) axis=None, keepdims=False, for the functions and the methods */
static PyObject *arg_call(gd_state *st, PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                          gd_redop op)
{
    gd_params *const fmax = &argmax_sig, *const fmin = &argmin_sig;
    gd_params *const mmax = &gd_array_argmax_sig, *const mmin = &gd_array_argmin_sig;
    const int is_max = op == GD_RED_MAX;
    PyObject *argv[3] = {self, Py_None, NULL};
    int keepdims = 0;
    const gd_params *p = self ? (is_max ? mmax : mmin) : (is_max ? fmax : fmin);
    if (gd_parse_args(self ? argv + 1 : argv, p, args, nargs, kwnames) < 0 || gd_parse_bool(argv[2], &keepdims) < 0)
        return NULL;
    ArrayObject *a = gd_need_array(st, argv[0], p->fname);
    return a ? argreduce(st, a, argv[1], keepdims, op) : NULL;
}

PyObject *gd_array_argmax(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return arg_call(gd_state_of(self), self, args, nargs, kwnames, GD_RED_MAX);
}

PyObject *gd_array_argmin(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return arg_call(gd_state_of(self), self, args, nargs, kwnames, GD_RED_MIN);
}

static PyObject *mod_argmax(PyObject *module, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return arg_call(PyModule_GetState(module), NULL, args, nargs, kwnames, GD_RED_MAX);
}

static PyObject *mod_argmin(PyObject *module, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    return arg_call(PyModule_GetState(module), NULL, args, nargs, kwnames, GD_RED_MIN);
}

/* ------------------------------------------------------------------------------------------
 * module functions
 * ---------------------------------------------------------------------------------------- */

static PyMethodDef select_functions[] = {
    GD_DEF(where_sig, GD_FN(mod_where), GD_FASTKW),
    GD_DEF(argmax_sig, GD_FN(mod_argmax), GD_FASTKW),
    GD_DEF(argmin_sig, GD_FN(mod_argmin), GD_FASTKW),
    {NULL, NULL, 0, NULL},
};

int gd_select_setup(PyObject *module) { return PyModule_AddFunctions(module, select_functions); }
