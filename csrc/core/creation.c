/* creation.c - the functions that make new arrays: zeros, ones, empty, full, arange, rand,
 * randn, and array/asarray (convert.c does their conversions). Each parses its arguments,
 * allocates on the device asked for (the CPU by default), then fills through the backend.
 */
#include "creation.h"
#include "core.h"
#include "args.h"
#include "array.h"
#include "autograd.h"
#include "compute.h"
#include "convert.h"
#include "device.h"
#include "dtypes.h"
#include "runtime.h"
#include "shape.h"
#include "trace.h"
#include "philox.h"

#include <math.h>
#include <stdio.h>

/* ------------------------------------------------------------------------------------------
 * zeros, ones, empty, full
 * ---------------------------------------------------------------------------------------- */

typedef enum fill_kind { FILL_ZEROS, FILL_ONES, FILL_EMPTY, FILL_FULL } fill_kind;

/* A fill value: an int (is_int, iv) or a float (f), and the dtype it asks for. */
typedef struct fill_value {
    gd_dtype dtype;
    int is_int;
    int64_t iv;
    double f;
} fill_value;

/* full()'s fill_value: Python and NumPy bools give bool, ints int64 (one beyond int64
 * float64; numpy.int32 int32), Python floats float32 (gpudev's default float), NumPy floats their own precision. */
static int parse_fill_value(gd_state *st, fill_value *v, PyObject *value, const char *op)
{
    if (gd_is_array(st, value)) {
        PyErr_Format(PyExc_TypeError, "%s: fill_value must be a Python number, got an Array; use a.item()", op);
        return -1;
    }
    if (PyBool_Check(value) || PyArray_IsScalar(value, Bool)) {
        v->dtype = GD_BOOL;
        v->iv = PyObject_IsTrue(value);
        return v->iv < 0 ? -1 : 0;
    }
    if (PyLong_Check(value) || PyArray_IsScalar(value, Integer)) {
        int overflow = 0;
        v->dtype = GD_INT64;
        v->iv = PyLong_AsLongLongAndOverflow(value, &overflow);
        if (PyArray_IsScalar(value, Int)) v->dtype = GD_INT32; /* numpy.int32 (C's int) keeps its dtype */
        if (!overflow) return v->iv == -1 && PyErr_Occurred() ? -1 : 0;
        v->dtype = GD_FLOAT64;
        v->is_int = 0;
        v->f = PyFloat_AsDouble(value);
        return v->f == -1.0 && PyErr_Occurred() ? -1 : 0;
    }
    if (PyFloat_Check(value) || PyArray_IsScalar(value, Floating)) {
        v->dtype = PyArray_IsScalar(value, Double) && !PyFloat_CheckExact(value) ? GD_FLOAT64 : GD_FLOAT32;
        v->is_int = 0;
        v->f = PyFloat_AsDouble(value);
        return v->f == -1.0 && PyErr_Occurred() ? -1 : 0;
    }
    PyErr_Format(PyExc_TypeError, "%s: fill_value must be an int or a float, got %.100s", op, Py_TYPE(value)->tp_name);
    return -1;
}

/* The fill value converted to the array's dtype dt. -1 with OverflowError when it does not
 * fit in an integer dtype dt. */
static int fill_scalar(gd_scalar *out, const fill_value *v, gd_dtype dt, PyObject *value, const char *op)
{
    if (gd_dtype_is_float(dt)) {
        out->f = v->is_int ? (double)v->iv : v->f;
        return 0;
    }
    if (dt == GD_BOOL) { /* nonzero is true, as NumPy casts */
        out->i = v->is_int ? v->iv != 0 : v->f != 0.0;
        return 0;
    }
    /* int64 holds [-2**63, 2**63), int32 [-2**31, 2**31) */
    const double bound = dt == GD_INT32 ? 0x1p31 : 0x1p63;
    if (v->is_int ? dt == GD_INT32 && (v->iv < INT32_MIN || v->iv > INT32_MAX) : !(v->f >= -bound && v->f < bound)) {
        PyObject *shown = gd_brief_repr(value);
        if (shown) PyErr_Format(PyExc_OverflowError, "%s: fill_value %U does not fit in %s", op, shown, gd_dtype_name(dt));
        Py_XDECREF(shown);
        return -1;
    }
    out->i = v->is_int ? v->iv : (int64_t)v->f;
    return 0;
}

/* zeros/ones/empty/full share this: shape and fill value from the arguments, then fill. */
static PyObject *create_filled(PyObject *module, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                               const gd_params *params, fill_kind kind)
{
    gd_state *st = PyModule_GetState(module);
    const char *op = params->fname;
    PyObject *argv[6] = {NULL, Py_None, Py_None, Py_None, NULL, NULL};
    if (gd_parse_args(argv, params, args, nargs, kwnames) < 0) return NULL;
    /* zeros(2, 3) as PyTorch spells it: the positional arguments are the dimensions (`*dims`),
     * and a shape given as a sequence comes alone */
    const int dims_given = kind != FILL_FULL && nargs > 1;
    if (dims_given && (PyTuple_Check(args[0]) || PyList_Check(args[0]))) {
        gd_usage_error(params);
        return NULL;
    }
    if (kind != FILL_FULL) { /* (shape, dtype, device, ...) -> (shape, -, dtype, device, ...) */
        argv[5] = argv[4];
        argv[4] = argv[3];
        argv[3] = argv[2];
        argv[2] = argv[1];
        argv[1] = NULL;
    }
    int ndim;
    int64_t shape[GD_MAX_NDIM];
    fill_value v = {.dtype = GD_FLOAT32, .is_int = 1, .iv = kind == FILL_ONES};
    if (gd_parse_shape(dims_given ? args : &argv[0], dims_given ? nargs : 1, &ndim, shape, op) < 0) return NULL;
    if (kind == FILL_FULL && parse_fill_value(st, &v, argv[1], op) < 0) return NULL;
    gd_dtype dt = v.dtype;
    gd_scalar s;
    gd_device dev = GD_CPU_DEVICE;
    int pinned = 0;
    if (gd_parse_dtype(argv[2], &dt, op) < 0 || fill_scalar(&s, &v, dt, argv[1], op) < 0 ||
        gd_parse_device(st, argv[3], &dev) < 0 || gd_parse_bool(argv[5], &pinned) < 0)
        return NULL;
    if (pinned && dev.type != GD_CPU) {
        char name[32];
        PyErr_Format(PyExc_ValueError, "%s: pin_memory=True needs device='cpu', got device=%s: only host memory "
                     "is pinned", op, gd_device_str(dev, name));
        return NULL;
    }
    ArrayObject *a = pinned ? gd_array_new_pinned(st, 0, dt, ndim, shape, op)
                            : gd_array_new(st, dev, dt, ndim, shape, op);
    if (!a) return NULL;
    if ((kind != FILL_EMPTY && gd_run_fill(st, gd_backend_of(st, dev, op), dev, a->data, dt, s, a->size, op) < 0) ||
        gd_trace_op(st, op, a, NULL, NULL) < 0)
        Py_CLEAR(a);
    return gd_ag_created((PyObject *)a, argv[4]);
}

#define GD_FILL_FN(fname, kind)                                                              \
    static PyObject *mod_##fname(PyObject *m, PyObject *const *a, Py_ssize_t n, PyObject *k) \
    {                                                                                        \
        return create_filled(m, a, n, k, &fname##_sig, kind);                                \
    }
GD_SIGNATURE(zeros_sig, "zeros", "$module, shape, *dims, dtype=None, device=None, requires_grad=False, "
             "pin_memory=False",
             "An array of zeros; the shape as a tuple or as dimensions.\n\n"
             ">>> gd.zeros((2, 3), device=gd.try_gpu())\n>>> gd.zeros(2, 3)");
GD_SIGNATURE(ones_sig, "ones", "$module, shape, *dims, dtype=None, device=None, requires_grad=False, "
             "pin_memory=False",
             "An array of ones; ones((2, 3)) or ones(2, 3).");
GD_SIGNATURE(empty_sig, "empty", "$module, shape, *dims, dtype=None, device=None, requires_grad=False, "
             "pin_memory=False",
             "An array with uninitialised contents; empty((2, 3)) or empty(2, 3).");
GD_SIGNATURE(full_sig, "full", "$module, shape, fill_value, *, dtype=None, device=None, requires_grad=False, "
             "pin_memory=False",
             "An array of fill_value (its dtype by default: int64 for ints, float32 for floats).");
GD_FILL_FN(zeros, FILL_ZEROS)
GD_FILL_FN(ones, FILL_ONES)
GD_FILL_FN(empty, FILL_EMPTY)
GD_FILL_FN(full, FILL_FULL)
#undef GD_FILL_FN

/* ------------------------------------------------------------------------------------------
 * array, asarray
 * ---------------------------------------------------------------------------------------- */

static PyObject *array_or_asarray(PyObject *module, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                                  const gd_params *params, int copy)
{
    gd_state *st = PyModule_GetState(module);
    PyObject *argv[5] = {NULL, Py_None, Py_None, NULL, NULL}; /* obj, dtype, device, copy, requires_grad */
    gd_device dev = GD_CPU_DEVICE;
    if (gd_parse_args(argv, params, args, nargs, kwnames) < 0 || gd_parse_bool(argv[3], &copy) < 0 ||
        gd_parse_device(st, argv[2], &dev) < 0)
        return NULL;
    PyObject *res = gd_array_from_object(st, argv[0], argv[1], dev, argv[2] != Py_None, copy, params->fname);
    if (res && gd_trace_op(st, params->fname, (ArrayObject *)res, NULL, NULL) < 0) Py_CLEAR(res);
    return gd_ag_created(res, argv[4]);
}

GD_SIGNATURE(array_sig, "array", "$module, obj, dtype=None, device=None, copy=True, requires_grad=False",
             "A new array from obj, always a copy (copy=False: obj itself, or a view of it, when it\n"
             "already fits).\n\n>>> gd.array([[1, 2], [3, 4]])");
static PyObject *mod_array(PyObject *m, PyObject *const *a, Py_ssize_t n, PyObject *k)
{
    return array_or_asarray(m, a, n, k, &array_sig, 1);
}

GD_SIGNATURE(asarray_sig, "asarray", "$module, obj, dtype=None, device=None, copy=False, requires_grad=False",
             "obj itself when it already fits, else a conversion (copy=True: always a copy).\n"
             "A NumPy array of a gpudev dtype on the CPU is shared, not copied.");
static PyObject *mod_asarray(PyObject *m, PyObject *const *a, Py_ssize_t n, PyObject *k)
{
    return array_or_asarray(m, a, n, k, &asarray_sig, 0);
}

/* ------------------------------------------------------------------------------------------
 * arange
 * ---------------------------------------------------------------------------------------- */

/* start, stop and step of arange: ints (exact) or floats. */
typedef struct arange_args {
    double f[3];
    int64_t iv[3];
    int is_int[3];
} arange_args;

static int number_arg(PyObject *o, double *f, int64_t *i, int *is_int, const char *op, const char *name)
{
    if (PyBool_Check(o) || PyLong_Check(o) || PyArray_IsScalar(o, Integer)) {
        int overflow = 0;
        *i = PyLong_AsLongLongAndOverflow(o, &overflow);
        if (*i == -1 && PyErr_Occurred()) return -1;
        if (overflow) {
            PyObject *shown = gd_brief_repr(o);
            if (shown) PyErr_Format(PyExc_OverflowError, "%s: %s=%U does not fit in int64", op, name, shown);
            Py_XDECREF(shown);
            return -1;
        }
        *f = (double)*i;
        *is_int = 1;
        return 0;
    }
    if (PyFloat_Check(o) || PyArray_IsScalar(o, Floating)) {
        *f = PyFloat_AsDouble(o);
        if (*f == -1.0 && PyErr_Occurred()) return -1;
        *is_int = 0;
        return 0;
    }
    PyErr_Format(PyExc_TypeError, "%s: %s must be an int or a float, got %.100s", op, name, Py_TYPE(o)->tp_name);
    return -1;
}

/* vals: start, stop, step as given (stop NULL or None: arange(stop)). */
static int parse_arange(arange_args *r, PyObject **vals)
{
    static const char *const names[] = {"start", "stop", "step"};
    if (!vals[1] || vals[1] == Py_None) { /* arange(stop) */
        vals[1] = vals[0];
        vals[0] = NULL;
    }
    *r = (arange_args){{0.0, 0.0, 1.0}, {0, 0, 1}, {1, 1, 1}};
    /* None is only a missing stop (arange(5, None)) or step; as a start or the only bound it is
     * refused, as NumPy refuses it */
    for (int i = 0; i < 3; i++)
        if (vals[i] && (vals[i] != Py_None || i < 2) &&
            number_arg(vals[i], &r->f[i], &r->iv[i], &r->is_int[i], "arange", names[i]) < 0)
            return -1;
    return 0;
}

/* The number of elements, ceil((stop - start) / step) as NumPy computes it: exactly for ints,
 * in double otherwise (a difference of two ints exactly first, as Python subtracts them), and
 * 1 when a nonzero span divided by the step underflows to +0 (a tiny span, an infinite step).
 * -1 with ValueError for a zero step, a length that is not a number, or more than 2**63 - 1
 * elements. */
static int64_t arange_count(const arange_args *r, int all_int)
{
    if (all_int ? r->iv[2] == 0 : r->f[2] == 0.0) {
        PyErr_SetString(PyExc_ValueError, "arange: step must not be zero");
        return -1;
    }
    long double cnt;
    if (all_int) {
        /* int64 values are exact in long double, and so is their difference */
        long double span = (long double)r->iv[1] - (long double)r->iv[0];
        cnt = ceill(span / (long double)r->iv[2]);
    } else {
        double span = r->is_int[0] && r->is_int[1] ? (double)((long double)r->iv[1] - (long double)r->iv[0])
                                                   : r->f[1] - r->f[0];
        double q = span / r->f[2];
        if (q == 0.0 && span != 0.0) return signbit(q) ? 0 : 1;
        if (isnan(q) || !isfinite(span)) {
            PyErr_SetString(PyExc_ValueError, "arange: start, stop and step must be finite");
            return -1;
        }
        cnt = ceil(q); /* +-inf when a finite span over a tiny step overflows: too long, or empty */
    }
    if (cnt >= 0x1p63L) {
        char buf[32];
        snprintf(buf, sizeof buf, "%.3Lg", cnt); /* "inf" when the span over the step overflows */
        PyErr_Format(PyExc_ValueError, "arange: the range holds %s elements, more than 2**63 - 1; use a larger step",
                     buf);
        return -1;
    }
    return cnt > 0 ? (int64_t)cnt : 0;
}

/* trunc(v) into *out when it fits int64; 1 when it does not (NaN included). */
static int f64_to_i64(int64_t *out, double v)
{
    if (!(v >= -0x1p63 && v < 0x1p63)) return 1;
    *out = (int64_t)v;
    return 0;
}

/* *out = x - y; 1 instead when the difference does not fit int64. */
static int sub_overflows(int64_t *out, int64_t x, int64_t y)
{
    if (y < 0 ? x > INT64_MAX + y : x < INT64_MIN + y) return 1;
    *out = x - y;
    return 0;
}

/* Whether a0 + k * delta (k >= 0) stays inside int64, without computing it. */
static int steps_fit_i64(int64_t a0, int64_t k, int64_t delta)
{
    if (delta == 0 || k == 0) return 1;
    uint64_t room = delta > 0 ? (uint64_t)INT64_MAX - (uint64_t)a0 : (uint64_t)a0 - (uint64_t)INT64_MIN;
    uint64_t mag = delta > 0 ? (uint64_t)delta : 0 - (uint64_t)delta;
    return (uint64_t)k <= room / mag;
}

/* start and step of an int64 arange of n elements. Ints are exact. Otherwise, as NumPy: the
 * first two values are start and start + step converted to int64 (truncated), and the rest
 * follow at their difference, so arange(0.5, 5, 1.5, dtype=int64) is [0, 2, 4]. -1 with
 * OverflowError when a value does not fit int64 (where NumPy would wrap around). */
static int arange_int_steps(gd_scalar *start, gd_scalar *step, const arange_args *r, int all_int, int64_t n)
{
    int64_t a0 = r->iv[0], a1 = 0, delta = all_int ? r->iv[2] : 0;
    int ok = all_int || r->is_int[0] || !f64_to_i64(&a0, r->f[0]);
    if (ok && !all_int && n > 1)
        ok = !f64_to_i64(&a1, r->f[0] + r->f[2]) && !sub_overflows(&delta, a1, a0) && steps_fit_i64(a0, n - 1, delta);
    if (!ok) {
        char s0[32], s1[32];
        snprintf(s0, sizeof s0, "%.17g", r->f[0]);
        snprintf(s1, sizeof s1, "%.17g", r->f[2]);
        PyErr_Format(PyExc_OverflowError,
                     "arange: %lld values from start=%s in steps of %s do not fit in int64; use dtype=gd.float64",
                     (long long)n, s0, s1);
        return -1;
    }
    start->i = a0;
    step->i = delta;
    return 0;
}

/* An int32 arange: every value, from start to the last (both in int64: they fit there), must
 * fit in int32. -1 with OverflowError when one does not. */
static int arange_fits_int32(gd_scalar start, gd_scalar step, int64_t n)
{
    int64_t span = 0, last = start.i; /* a span past int64 cannot end inside int32 */
    const int wide = n > 1 && (gd_mul_overflows(&span, n - 1, step.i) || gd_add_overflows(&last, start.i, span));
    if (!wide && start.i >= INT32_MIN && start.i <= INT32_MAX && last >= INT32_MIN && last <= INT32_MAX) return 0;
    PyErr_Format(PyExc_OverflowError,
                 "arange: %lld values from %lld in steps of %lld do not fit in int32; use dtype=gd.int64",
                 (long long)n, (long long)start.i, (long long)step.i);
    return -1;
}

GD_SIGNATURE(arange_sig, "arange", "$module, start, stop=None, step=1, *, dtype=None, device=None, requires_grad=False",
             "Evenly spaced values in [start, stop), as NumPy's (arange(stop) counts from 0).\n\n"
             ">>> gd.arange(1, 7, 2).tolist()\n[1, 3, 5]");
static PyObject *mod_arange(PyObject *module, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    gd_state *st = PyModule_GetState(module);
    PyObject *argv[6] = {NULL, NULL, NULL, Py_None, Py_None, NULL};
    arange_args r;
    if (gd_parse_args(argv, &arange_sig, args, nargs, kwnames) < 0) return NULL;
    if (!argv[0]) {
        PyErr_SetString(PyExc_TypeError, "arange(start, stop=None, step=1, dtype=None, device=None): start is required");
        return NULL;
    }
    if (parse_arange(&r, argv) < 0) return NULL;
    int all_int = r.is_int[0] && r.is_int[1] && r.is_int[2];
    gd_dtype dt = all_int ? GD_INT64 : GD_FLOAT32;
    gd_device dev = GD_CPU_DEVICE;
    if (gd_parse_dtype(argv[3], &dt, "arange") < 0 || gd_parse_device(st, argv[4], &dev) < 0) return NULL;
    if (dt == GD_BOOL) {
        PyErr_SetString(PyExc_TypeError, "arange: dtype bool is not supported; use an integer or float dtype");
        return NULL;
    }
    int64_t n = arange_count(&r, all_int);
    /* one element is start itself, whatever the step (0 * inf would be NaN) */
    gd_scalar start = {.f = r.f[0]}, step = {.f = n > 1 ? r.f[2] : 0.0};
    if (n < 0 || (!gd_dtype_is_float(dt) && arange_int_steps(&start, &step, &r, all_int, n) < 0) ||
        (dt == GD_INT32 && n > 0 && arange_fits_int32(start, step, n) < 0))
        return NULL;
    ArrayObject *a = gd_array_new(st, dev, dt, 1, &n, "arange");
    if (!a) return NULL;
    if (n) {
        gd_error err;
        PyThreadState *ts = gd_run_begin(dev, (double)n);
        int rc = gd_backend_of(st, dev, "arange")->arange(a->data, dt, start, step, n, dev.index, &err);
        if (gd_run_end(st, dev, ts, rc, &err, "arange") < 0) Py_CLEAR(a);
    }
    if (a && gd_trace_op(st, "arange", a, NULL, NULL) < 0) Py_CLEAR(a);
    return gd_ag_created((PyObject *)a, argv[5]);
}

/* ------------------------------------------------------------------------------------------
 * rand, randn
 * ---------------------------------------------------------------------------------------- */

/* Philox blocks [offset, offset + blocks) for n numbers of dt; the next call starts after. */
static uint64_t take_philox_blocks(gd_state *st, gd_dtype dt, int64_t n)
{
    int per = GD_PHILOX_PER_BLOCK(dt == GD_FLOAT32);
    uint64_t offset = st->offset;
    st->offset += ((uint64_t)n + (uint64_t)per - 1) / (uint64_t)per;
    return offset;
}

static PyObject *random_array(PyObject *module, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                              const gd_params *params, gd_random_kind kind)
{
    gd_state *st = PyModule_GetState(module);
    const char *op = params->fname;
    /* size, dtype, device, requires_grad: keyword-only; size= is PyTorch's and NumPy's
     * keyword for the shape, so it replaces the positional dimensions rather than adding to them */
    PyObject *argv[4] = {Py_None, Py_None, Py_None, NULL};
    int ndim;
    int64_t shape[GD_MAX_NDIM];
    gd_dtype dt = GD_FLOAT32;
    gd_device dev = GD_CPU_DEVICE;
    if (gd_parse_args(argv, params, args + nargs, 0, kwnames) < 0) return NULL;
    if (argv[0] != Py_None && nargs > 0) {
        PyErr_Format(PyExc_TypeError, "%s() got the shape twice, as dimensions and as size=; give one, e.g. "
                     "%s(2, 3) or %s(size=(2, 3))", op, op, op);
        return NULL;
    }
    const int sized = argv[0] != Py_None;
    if (gd_parse_shape(sized ? &argv[0] : args, sized ? 1 : nargs, &ndim, shape, op) < 0) return NULL;
    PyObject **rest = argv + 1; /* dtype, device, requires_grad */
    if (gd_parse_dtype(rest[0], &dt, op) < 0) return NULL;
    if (!gd_dtype_is_float(dt)) {
        PyErr_Format(PyExc_TypeError,
                     "%s: dtype %s is not supported, random numbers are floats; use dtype=gd.float32 or gd.float64",
                     op, gd_dtype_name(dt));
        return NULL;
    }
    if (gd_parse_device(st, rest[1], &dev) < 0) return NULL;
    ArrayObject *a = gd_array_new(st, dev, dt, ndim, shape, op);
    if (!a) return NULL;
    if (a->size) {
        uint64_t offset = take_philox_blocks(st, dt, a->size);
        gd_error err;
        PyThreadState *ts = gd_run_begin(dev, (double)a->size);
        int rc = gd_backend_of(st, dev, "random")->random(a->data, dt, kind, st->seed, offset, a->size, dev.index, &err);
        if (gd_run_end(st, dev, ts, rc, &err, op) < 0) Py_CLEAR(a);
    }
    if (a && gd_trace_op(st, op, a, NULL, NULL) < 0) Py_CLEAR(a);
    return gd_ag_created((PyObject *)a, rest[2]);
}

GD_SIGNATURE(rand_sig, "rand", "$module, *shape, size=None, dtype=None, device=None, requires_grad=False",
             "Uniform random numbers in [0, 1); the shape as dimensions, as one tuple or as size=.\n\n"
             ">>> gd.rand(2, 3)");
static PyObject *mod_rand(PyObject *m, PyObject *const *a, Py_ssize_t n, PyObject *k)
{
    return random_array(m, a, n, k, &rand_sig, GD_RAND_UNIFORM);
}

GD_SIGNATURE(randn_sig, "randn", "$module, *shape, size=None, dtype=None, device=None, requires_grad=False",
             "Standard normal random numbers; the shape as dimensions, as one tuple or as size=.\n\n"
             "The same values on every device after manual_seed, to within about an ulp: a GPU's log, sin\n"
             "and cos are not the C library's.\n\n>>> gd.randn(2, 3)");
static PyObject *mod_randn(PyObject *m, PyObject *const *a, Py_ssize_t n, PyObject *k)
{
    return random_array(m, a, n, k, &randn_sig, GD_RAND_NORMAL);
}

/* ------------------------------------------------------------------------------------------
 * setup
 * ---------------------------------------------------------------------------------------- */

static PyMethodDef creation_functions[] = {
    GD_DEF(array_sig, GD_FN(mod_array), GD_FASTKW),
    GD_DEF(asarray_sig, GD_FN(mod_asarray), GD_FASTKW),
    GD_DEF(zeros_sig, GD_FN(mod_zeros), GD_FASTKW),
    GD_DEF(ones_sig, GD_FN(mod_ones), GD_FASTKW),
    GD_DEF(empty_sig, GD_FN(mod_empty), GD_FASTKW),
    GD_DEF(full_sig, GD_FN(mod_full), GD_FASTKW),
    GD_DEF(arange_sig, GD_FN(mod_arange), GD_FASTKW),
    GD_DEF(rand_sig, GD_FN(mod_rand), GD_FASTKW),
    GD_DEF(randn_sig, GD_FN(mod_randn), GD_FASTKW),
    {NULL, NULL, 0, NULL},
};

int gd_creation_setup(PyObject *module) { return PyModule_AddFunctions(module, creation_functions); }
