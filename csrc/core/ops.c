/* ops.c - every array operation of gpudev._C: check devices, shapes, dtypes and sizes, plan
 * broadcasting, then call the backend. A backend only ever sees valid arguments.
 *
 * The hot paths come first in gd_binary and gd_reduce: same-shape operations on tiny arrays
 * and full reductions run without temporary Python objects or formatting, so they cost little
 * more than Python's own dispatch. Everything else goes through one general path per operation
 * that follows NumPy 2's rules (promotion, broadcasting, in-place casting, overlap).
 */
#include "core.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------
 * small helpers
 * ---------------------------------------------------------------------------------------- */

static const char *const binop_names[GD_NUM_BINOPS] = {
    "add", "subtract", "multiply", "divide", "power", "maximum", "minimum",
};
/* What the user can write instead of an in-place form that cannot cast back. */
static const char *const binop_exprs[GD_NUM_BINOPS] = {
    "a = a + b", "a = a - b", "a = a * b", "a = a / b", "a = a ** b",
    "a = gd.maximum(a, b)", "a = gd.minimum(a, b)",
};
static const char *const reduction_names[] = {"sum", "mean", "max", "min", "norm"};

/* Backends number devices from 0; the CPU is device 0 of its backend. */
static inline int dev_index(gd_device d) { return d.type == GD_CPU ? 0 : d.index; }

/* The backend of a device that already holds an array: loaded, so the lookup is one load. */
static inline const gd_backend *backend_of(gd_state *st, gd_device dev, const char *op)
{
    const gd_backend *be = st->backends[dev.type];
    return be ? be : gd_backend_for(st, dev, op);
}

/* Run one backend call. Large CPU work runs without the GIL so other Python threads go on
 * (nothing in `call` may touch Python objects); GPU calls only queue work, so they keep the
 * GIL and record that the device has work in flight. */
#define GD_RUN(st, dev, work, rc, call)                                                    \
    do {                                                                                    \
        if ((dev).type == GD_CPU && (work) > GD_RELEASE_GIL_ELEMENTS) {                    \
            Py_BEGIN_ALLOW_THREADS (rc) = (call);                                           \
            Py_END_ALLOW_THREADS                                                            \
        } else {                                                                            \
            (rc) = (call);                                                                  \
            gd_mark_pending((st), (dev));                                                   \
        }                                                                                   \
    } while (0)

/* *out = x * y for sizes (>= 0); returns 1 instead when the product overflows int64. */
static inline int mul_overflows(int64_t *out, int64_t x, int64_t y)
{
    if (x != 0 && y > INT64_MAX / x) return 1;
    *out = x * y;
    return 0;
}

/* The number of elements of a shape; -1 with ValueError when it overflows. */
static int shape_size(int64_t *out, int ndim, const int64_t *shape, const char *op)
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

/* A double rounded to float32 as the hardware would, without the undefined behaviour of
 * casting an out-of-range double: past the rounding midpoint above FLT_MAX lies infinity. */
static double round_f32(double v)
{
    if (isfinite(v) && fabs(v) > FLT_MAX)
        return copysign(fabs(v) < 0x1.ffffffp127 ? FLT_MAX : INFINITY, v);
    return (double)(float)v;
}

/* Whether two arrays on one device share any byte. */
static int overlaps(const ArrayObject *x, const ArrayObject *y)
{
    if (x->size == 0 || y->size == 0) return 0;
    uintptr_t x0 = (uintptr_t)x->data, y0 = (uintptr_t)y->data;
    uintptr_t x1 = x0 + (uintptr_t)x->size * gd_dtype_size(x->dtype);
    uintptr_t y1 = y0 + (uintptr_t)y->size * gd_dtype_size(y->dtype);
    return x0 < y1 && y0 < x1;
}

static inline int same_shape(const ArrayObject *x, const ArrayObject *y)
{
    return x->ndim == y->ndim && memcmp(x->shape, y->shape, (size_t)x->ndim * sizeof(int64_t)) == 0;
}

/* ------------------------------------------------------------------------------------------
 * errors shared by several operations
 * ---------------------------------------------------------------------------------------- */

static void raise_device_mismatch(gd_state *st, const char *op, gd_device first, gd_device second)
{
    char d0[32], d1[32];
    PyErr_Format(st->DeviceMismatchError,
                 "%s: operands are on different devices, %s and %s; copy one of them first, "
                 "e.g. b.to('%s')",
                 op, gd_device_str(first, d0), gd_device_str(second, d1), d0);
}

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

/* Normalise one axis (negative counts from the end) against ndim. */
static int normalize_axis(int *out, int64_t axis, int ndim, const char *op)
{
    if (axis < -(int64_t)ndim || axis >= ndim) {
        raise_axis_error(axis, ndim, op);
        return -1;
    }
    *out = (int)(axis < 0 ? axis + ndim : axis);
    return 0;
}

/* NumPy arrays, lists and tuples are what users mean as arrays; gpudev never converts them
 * behind the user's back (that would hide a host-to-device copy). */
static int is_foreign_array(gd_state *st, PyObject *o)
{
    return PyList_Check(o) || PyTuple_Check(o) ||
           (st->np_ndarray && PyObject_TypeCheck(o, (PyTypeObject *)st->np_ndarray));
}

static void raise_foreign(const char *op, PyObject *o)
{
    PyErr_Format(PyExc_TypeError,
                 "%s: cannot combine a gpudev Array with %s; convert it first with "
                 "gd.asarray(x, device=a.device)",
                 op, Py_TYPE(o)->tp_name);
}

/* ------------------------------------------------------------------------------------------
 * operands: Arrays, Python scalars (weak) and NumPy scalars (strong)
 * ---------------------------------------------------------------------------------------- */

typedef enum opd_kind { OPD_ARRAY, OPD_WEAK_INT, OPD_WEAK_FLOAT, OPD_SCALAR } opd_kind;

typedef struct opd_info {
    opd_kind kind;
    gd_dtype dtype;   /* the Array's or the NumPy scalar's; unused for Python scalars     */
    int small_int;    /* a NumPy integer scalar float32 holds exactly (bool, (u)int8/16)  */
    int big;          /* a Python int outside int64                                       */
    ArrayObject *arr; /* OPD_ARRAY, else NULL                                             */
    PyObject *obj;
    int64_t i;        /* integer scalars                                                   */
    double f;         /* float scalars                                                     */
} opd_info;

static int weak_int(opd_info *x, PyObject *o)
{
    int overflow;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (v == -1 && PyErr_Occurred()) return -1;
    x->kind = OPD_WEAK_INT;
    x->big = overflow != 0;
    x->i = v;
    return 0;
}

/* NumPy scalars keep their dtype (NumPy 2's NEP 50): float32/float64 as they are, the
 * integers and bool as int64, float16 as float32. 1 when o is no NumPy scalar. */
static int numpy_scalar(opd_info *x, PyObject *o, const char *op)
{
    if (!PyArray_IsScalar(o, Generic)) return 1;
    PyArray_Descr *descr = PyArray_DescrFromScalar(o);
    if (!descr) return -1;
    char kind = descr->kind;
    npy_intp itemsize = PyDataType_ELSIZE(descr);
    Py_DECREF(descr);
    x->kind = OPD_SCALAR;
    if (kind == 'f' && itemsize <= 8) {
        x->dtype = itemsize == 8 ? GD_FLOAT64 : GD_FLOAT32;
        x->f = PyFloat_AsDouble(o);
        return (x->f == -1.0 && PyErr_Occurred()) ? -1 : 0;
    }
    if (kind == 'b' || kind == 'i' || (kind == 'u' && itemsize <= 4)) {
        PyObject *v = PyNumber_Long(o);
        if (!v) return -1;
        x->i = PyLong_AsLongLong(v);
        Py_DECREF(v);
        if (x->i == -1 && PyErr_Occurred()) return -1;
        x->dtype = GD_INT64;
        x->small_int = itemsize <= 2;
        return 0;
    }
    PyErr_Format(PyExc_TypeError,
                 "%s: %s scalars are not supported; gpudev computes in float32, float64 and int64, "
                 "so convert it first with float(x) or int(x)",
                 op, Py_TYPE(o)->tp_name);
    return -1;
}

/* Describe operand o: 0 done, 1 when gpudev does not know the type (the caller returns
 * NotImplemented), -1 with an exception (unsupported NumPy scalars, NumPy arrays, lists). */
static int classify(gd_state *st, PyObject *o, opd_info *x, const char *op)
{
    x->obj = o;
    x->arr = NULL;
    x->big = 0;
    x->small_int = 0;
    x->dtype = GD_FLOAT64;
    if (gd_is_array(st, o)) {
        x->kind = OPD_ARRAY;
        x->arr = (ArrayObject *)o;
        x->dtype = x->arr->dtype;
        return 0;
    }
    if (PyFloat_CheckExact(o)) {
        x->kind = OPD_WEAK_FLOAT;
        x->f = PyFloat_AS_DOUBLE(o);
        return 0;
    }
    if (PyLong_CheckExact(o) || PyBool_Check(o)) return weak_int(x, o);
    /* numpy.float64 subclasses float, so NumPy scalars are recognised before subclasses. */
    int r = numpy_scalar(x, o, op);
    if (r != 1) return r;
    if (PyFloat_Check(o)) {
        x->kind = OPD_WEAK_FLOAT;
        x->f = PyFloat_AsDouble(o);
        return (x->f == -1.0 && PyErr_Occurred()) ? -1 : 0;
    }
    if (PyLong_Check(o)) return weak_int(x, o);
    if (is_foreign_array(st, o)) {
        raise_foreign(op, o);
        return -1;
    }
    return 1;
}

static inline int is_strong(const opd_info *x) { return x->kind == OPD_ARRAY || x->kind == OPD_SCALAR; }

/* NumPy 2 promotion of x op y before the operation's own rules: arrays and NumPy scalars
 * decide, Python scalars adapt (a Python float lifts int64 to float64). */
static gd_dtype promote(const opd_info *x, const opd_info *y)
{
    if (is_strong(x) && is_strong(y)) {
        if (x->dtype == y->dtype) return x->dtype;
        /* int8 + float32 is float32 in NumPy: float32 holds every small integer exactly. */
        if ((x->small_int && y->dtype == GD_FLOAT32) || (y->small_int && x->dtype == GD_FLOAT32))
            return GD_FLOAT32;
        return GD_FLOAT64;
    }
    const opd_info *s = is_strong(x) ? x : y, *w = is_strong(x) ? y : x;
    if (w->kind == OPD_WEAK_FLOAT && s->dtype == GD_INT64) return GD_FLOAT64;
    return s->dtype;
}

/* A scalar operand's value in the compute dtype. */
static int scalar_to(gd_scalar *out, const opd_info *x, gd_dtype dt)
{
    if (dt == GD_INT64) {
        out->i = x->i;
        return 0;
    }
    double v;
    if (x->kind == OPD_WEAK_FLOAT || (x->kind == OPD_SCALAR && x->dtype != GD_INT64)) {
        v = x->f;
    } else if (x->big) {
        v = PyLong_AsDouble(x->obj);
        if (v == -1.0 && PyErr_Occurred()) return -1;
    } else {
        v = (double)x->i;
    }
    out->f = dt == GD_FLOAT32 ? round_f32(v) : v;
    return 0;
}

/* ------------------------------------------------------------------------------------------
 * elementwise planning: broadcasting and axis collapsing
 * ---------------------------------------------------------------------------------------- */

/* NumPy's broadcast of two shapes (right-aligned; a 1 stretches). -1 when they do not
 * broadcast; no exception set, each caller words its own. */
static int broadcast(int *ndim, int64_t *shape, int na, const int64_t *sa, int nb, const int64_t *sb)
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

static void raise_broadcast(const char *op, int na, const int64_t *sa, int nb, const int64_t *sb)
{
    char s0[256], s1[256];
    PyErr_Format(PyExc_ValueError, "%s: shapes %s and %s cannot be broadcast together", op,
                 gd_shape_str(na, sa, s0), gd_shape_str(nb, sb, s1));
}

/* Describe out (C-contiguous, `shape`, `size` >= 1 elements) = f(operands). Each operand is an
 * array broadcastable to `shape` (right-aligned; extra leading axes of length 1 allowed) or
 * NULL for a scalar whose opd[i].scalar the caller has set. Strides are in elements, 0 on
 * broadcast axes. Axes of length 1 drop out and neighbouring axes merge wherever every operand
 * steps through them as one, so the backend loops over as few axes as possible. */
static void ewise_plan(gd_ewise *ew, gd_operand *opd, ArrayObject *const *arrs, int nops, int ndim,
                       const int64_t *shape, int64_t size)
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

static inline void contiguous_plan(gd_ewise *ew, int64_t n)
{
    ew->ndim = 1;
    ew->contiguous = 1;
    ew->size = n;
    ew->shape[0] = n;
}

/* ------------------------------------------------------------------------------------------
 * backend calls on whole contiguous buffers
 * ---------------------------------------------------------------------------------------- */

/* out = op(in) over n elements of dt; out may be in. */
static int run_unary(gd_state *st, const gd_backend *be, gd_device dev, void *out, gd_unop op,
                     gd_dtype dt, const void *in, int64_t n, const char *name)
{
    if (n == 0) return 0;
    gd_ewise ew;
    gd_operand a;
    gd_error err;
    int rc;
    contiguous_plan(&ew, n);
    a.data = in;
    a.strides[0] = 1;
    GD_RUN(st, dev, n, rc, be->unary(out, op, dt, &ew, &a, dev_index(dev), &err));
    return rc ? gd_raise(st, name, &err) : 0;
}

/* out[0:n] = value. */
static int run_fill(gd_state *st, const gd_backend *be, gd_device dev, void *out, gd_dtype dt,
                    gd_scalar value, int64_t n, const char *name)
{
    if (n == 0) return 0;
    gd_ewise ew;
    gd_operand a;
    gd_error err;
    int rc;
    contiguous_plan(&ew, n);
    a.data = NULL;
    a.scalar = value;
    a.strides[0] = 0;
    GD_RUN(st, dev, n, rc, be->unary(out, GD_COPY, dt, &ew, &a, dev_index(dev), &err));
    return rc ? gd_raise(st, name, &err) : 0;
}

/* out (n elements of odt) = in (n elements of idt), converted as C casts do. */
static int run_astype(gd_state *st, const gd_backend *be, gd_device dev, void *out, gd_dtype odt,
                      const void *in, gd_dtype idt, int64_t n, const char *name)
{
    if (n == 0) return 0;
    gd_error err;
    int rc, d = dev_index(dev);
    if (odt == idt)
        GD_RUN(st, dev, n, rc, be->copy_device(out, d, in, d, (size_t)n * gd_dtype_size(odt), &err));
    else
        GD_RUN(st, dev, n, rc, be->astype(out, odt, in, idt, n, d, &err));
    return rc ? gd_raise(st, name, &err) : 0;
}

/* A new array holding a converted to dt (same device and shape); a plain copy when a already
 * has dt. Used for operands of another dtype and for inputs that overlap an output. */
static ArrayObject *converted(gd_state *st, const gd_backend *be, ArrayObject *a, gd_dtype dt,
                              const char *name)
{
    ArrayObject *t = gd_array_new(st, a->device, dt, a->ndim, a->shape, name);
    if (t && run_astype(st, be, a->device, t->data, dt, a->data, a->dtype, a->size, name) < 0)
        Py_CLEAR(t);
    return t;
}

/* A new array holding a broadcast to (ndim, shape). */
static ArrayObject *expanded(gd_state *st, const gd_backend *be, ArrayObject *a, int ndim,
                             const int64_t *shape, const char *name)
{
    int64_t size;
    if (shape_size(&size, ndim, shape, name) < 0) return NULL;
    ArrayObject *t = gd_array_new(st, a->device, a->dtype, ndim, shape, name);
    if (!t || size == 0) return t;
    gd_ewise ew;
    gd_operand opd;
    gd_error err;
    int rc;
    ewise_plan(&ew, &opd, &a, 1, ndim, shape, size);
    GD_RUN(st, a->device, size, rc,
           be->unary(t->data, GD_COPY, a->dtype, &ew, &opd, dev_index(a->device), &err));
    if (rc) {
        Py_DECREF(t);
        gd_raise(st, name, &err);
        return NULL;
    }
    return t;
}

/* ------------------------------------------------------------------------------------------
 * binary operations
 * ---------------------------------------------------------------------------------------- */

/* int64 division and powers need the general path (a float64 result, exponent checks). */
static inline int fast_op_ok(gd_binop op, gd_dtype dt)
{
    return dt != GD_INT64 || (op != GD_DIV && op != GD_POW);
}

/* A Python float or int as an operand of an array of dtype dt without changing its dtype;
 * 0 when the general path must decide (promotion, overflow). Never raises. */
static inline int fast_scalar(gd_operand *o, PyObject *s, gd_dtype dt)
{
    if (PyFloat_CheckExact(s)) {
        if (dt == GD_INT64) return 0;
        double v = PyFloat_AS_DOUBLE(s);
        o->scalar.f = dt == GD_FLOAT32 ? round_f32(v) : v;
    } else if (PyLong_CheckExact(s)) {
        int overflow;
        long long v = PyLong_AsLongLongAndOverflow(s, &overflow);
        if (overflow) return 0;
        if (dt == GD_INT64) o->scalar.i = v;
        else o->scalar.f = dt == GD_FLOAT32 ? round_f32((double)v) : (double)v;
    } else {
        return 0;
    }
    o->data = NULL;
    o->strides[0] = 0;
    return 1;
}

/* out = x op y where every array operand has `like`'s shape, dtype and device. */
static PyObject *binary_contiguous(gd_state *st, const gd_backend *be, gd_binop op, ArrayObject *like,
                                   const gd_operand *x, const gd_operand *y, ArrayObject *inplace)
{
    ArrayObject *out = inplace;
    if (out) Py_INCREF(out);
    else if (!(out = gd_array_new(st, like->device, like->dtype, like->ndim, like->shape, binop_names[op])))
        return NULL;
    int64_t n = like->size;
    if (n > 0) {
        gd_ewise ew;
        gd_error err;
        int rc;
        contiguous_plan(&ew, n);
        GD_RUN(st, like->device, n, rc,
               be->binary(out->data, op, like->dtype, &ew, x, y, dev_index(like->device), &err));
        if (rc) {
            Py_DECREF(out);
            gd_raise(st, binop_names[op], &err);
            return NULL;
        }
    }
    return (PyObject *)out;
}

static PyObject *binary_general(gd_state *st, gd_binop op, PyObject *ao, PyObject *bo, ArrayObject *inplace)
{
    const char *name = binop_names[op];
    opd_info x, y;
    int r = classify(st, ao, &x, name);
    if (r == 0) r = classify(st, bo, &y, name);
    if (r < 0) return NULL;
    if (r > 0) Py_RETURN_NOTIMPLEMENTED;
    if (!x.arr && !y.arr) {
        PyErr_Format(PyExc_TypeError,
                     "%s: at least one operand must be a gpudev Array, got %s and %s; create one "
                     "with gd.asarray(x)",
                     name, Py_TYPE(ao)->tp_name, Py_TYPE(bo)->tp_name);
        return NULL;
    }
    if (x.arr && y.arr && !gd_device_eq(x.arr->device, y.arr->device)) {
        raise_device_mismatch(st, name, x.arr->device, y.arr->device);
        return NULL;
    }
    gd_device dev = x.arr ? x.arr->device : y.arr->device;

    /* dtypes: NumPy 2 promotion, then the operation's own rules */
    gd_dtype dt = promote(&x, &y);
    if (dt == GD_INT64 && op == GD_DIV) dt = GD_FLOAT64; /* true division, as NumPy */
    if (dt == GD_INT64) {
        const opd_info *big = x.big ? &x : y.big ? &y : NULL;
        if (big) {
            PyErr_Format(PyExc_OverflowError,
                         "%s: Python integer %S out of bounds for int64; convert the array first, "
                         "e.g. a.astype(gd.float64)",
                         name, big->obj);
            return NULL;
        }
        if (op == GD_POW && y.arr) {
            PyErr_Format(PyExc_TypeError,
                         "power: int64 arrays as exponents of integers are not supported "
                         "(negative exponents cannot be checked on every device); convert first, "
                         "e.g. a.astype(gd.float64) ** b");
            return NULL;
        }
        if (op == GD_POW && y.i < 0) {
            PyErr_SetString(PyExc_ValueError,
                            "power: integers to negative integer powers are not allowed; use "
                            "a.astype(gd.float64) ** n");
            return NULL;
        }
    }

    /* shapes */
    int nx = x.arr ? x.arr->ndim : 0, ny = y.arr ? y.arr->ndim : 0;
    const int64_t *sx = x.arr ? x.arr->shape : NULL, *sy = y.arr ? y.arr->shape : NULL;
    int ndim;
    int64_t shape[GD_MAX_NDIM], size;
    if (broadcast(&ndim, shape, nx, sx, ny, sy) < 0) {
        raise_broadcast(name, nx, sx, ny, sy);
        return NULL;
    }
    if (shape_size(&size, ndim, shape, name) < 0) return NULL;

    if (inplace) {
        char s0[256], s1[256];
        if (ndim != inplace->ndim || memcmp(shape, inplace->shape, (size_t)ndim * sizeof(int64_t))) {
            PyErr_Format(PyExc_ValueError,
                         "%s: the result has shape %s but the in-place target has shape %s; write "
                         "%s instead",
                         name, gd_shape_str(ndim, shape, s0),
                         gd_shape_str(inplace->ndim, inplace->shape, s1), binop_exprs[op]);
            return NULL;
        }
        if (dt != GD_INT64 && inplace->dtype == GD_INT64) {
            PyErr_Format(PyExc_TypeError,
                         "%s: cannot cast the %s result to int64 in place (NumPy's same_kind "
                         "rule); write %s instead",
                         name, gd_dtype_name(dt), binop_exprs[op]);
            return NULL;
        }
    }

    const gd_backend *be = backend_of(st, dev, name);
    if (!be) return NULL;
    ArrayObject *xa = x.arr, *ya = y.arr, *tx = NULL, *ty = NULL, *out = NULL;
    gd_operand opd[2];
    if (!xa && scalar_to(&opd[0].scalar, &x, dt) < 0) return NULL;
    if (!ya && scalar_to(&opd[1].scalar, &y, dt) < 0) return NULL;

    if (size > 0) {
        if (xa && xa->dtype != dt && !(xa = tx = converted(st, be, xa, dt, name))) goto fail;
        if (ya && ya->dtype != dt && !(ya = ty = converted(st, be, ya, dt, name))) goto fail;
        /* NumPy reads every input before writing: an input that shares memory with the target
         * in another layout (a[1:] += a[:-1], a += a[0]) is copied first. */
        if (inplace && inplace->dtype == dt) {
            if (xa == x.arr && xa && overlaps(xa, inplace) && !(xa->data == inplace->data && xa->size == size)
                && !(xa = tx = converted(st, be, xa, dt, name)))
                goto fail;
            if (ya == y.arr && ya && overlaps(ya, inplace) && !(ya->data == inplace->data && ya->size == size)
                && !(ya = ty = converted(st, be, ya, dt, name)))
                goto fail;
        }
    }

    if (inplace && inplace->dtype == dt) {
        out = inplace;
        Py_INCREF(out);
    } else if (!(out = gd_array_new(st, dev, dt, ndim, shape, name))) {
        goto fail;
    }

    if (size > 0) {
        ArrayObject *arrs[2] = {xa, ya};
        gd_ewise ew;
        gd_error err;
        int rc;
        ewise_plan(&ew, opd, arrs, 2, ndim, shape, size);
        GD_RUN(st, dev, size, rc, be->binary(out->data, op, dt, &ew, &opd[0], &opd[1], dev_index(dev), &err));
        if (rc) {
            gd_raise(st, name, &err);
            goto fail;
        }
    }
    if (inplace && out != inplace) {
        /* computed in a wider dtype (float32 += float64): cast back into the target */
        if (run_astype(st, be, dev, inplace->data, inplace->dtype, out->data, dt, size, name) < 0) goto fail;
        Py_DECREF(out);
        out = inplace;
        Py_INCREF(out);
    }
    Py_XDECREF(tx);
    Py_XDECREF(ty);
    tx = ty = NULL;
    if (gd_tracing(st)) {
        ArrayObject *in0 = x.arr ? x.arr : y.arr, *in1 = x.arr ? y.arr : NULL;
        if (gd_trace_op(st, name, out, in0, in1) < 0) goto fail;
    }
    return (PyObject *)out;

fail:
    Py_XDECREF(tx);
    Py_XDECREF(ty);
    Py_XDECREF(out);
    return NULL;
}

PyObject *gd_binary(gd_state *st, gd_binop op, PyObject *ao, PyObject *bo, ArrayObject *inplace)
{
    /* Hot path: operands that need no promotion, broadcasting or overlap handling go straight
     * to the backend; no Python objects besides the result, no strides to fill. */
    PyTypeObject *at = st->array_type;
    if (!gd_tracing(st)) {
        gd_operand x, y;
        if (Py_TYPE(ao) == at) {
            ArrayObject *a = (ArrayObject *)ao;
            const gd_backend *be = st->backends[a->device.type];
            if (be && fast_op_ok(op, a->dtype)) {
                if (Py_TYPE(bo) == at) {
                    ArrayObject *b = (ArrayObject *)bo;
                    if (a->dtype == b->dtype && same_shape(a, b) && gd_device_eq(a->device, b->device) &&
                        (!inplace || a->data == b->data || !overlaps(a, b))) {
                        x.data = a->data;
                        x.strides[0] = 1;
                        y.data = b->data;
                        y.strides[0] = 1;
                        return binary_contiguous(st, be, op, a, &x, &y, inplace);
                    }
                } else if (fast_scalar(&y, bo, a->dtype)) {
                    x.data = a->data;
                    x.strides[0] = 1;
                    return binary_contiguous(st, be, op, a, &x, &y, inplace);
                }
            }
        } else if (Py_TYPE(bo) == at && !inplace) {
            ArrayObject *b = (ArrayObject *)bo;
            const gd_backend *be = st->backends[b->device.type];
            if (be && fast_op_ok(op, b->dtype) && fast_scalar(&x, ao, b->dtype)) {
                y.data = b->data;
                y.strides[0] = 1;
                return binary_contiguous(st, be, op, b, &x, &y, NULL);
            }
        }
    }
    return binary_general(st, op, ao, bo, inplace);
}

/* ------------------------------------------------------------------------------------------
 * unary operations
 * ---------------------------------------------------------------------------------------- */

PyObject *gd_unary(gd_state *st, gd_unop op, ArrayObject *a, const char *name)
{
    if (!gd_is_array(st, (PyObject *)a)) {
        PyErr_Format(PyExc_TypeError, "%s: expected a gpudev Array, got %s; convert it first with gd.asarray(x)",
                     name, Py_TYPE((PyObject *)a)->tp_name);
        return NULL;
    }
    const gd_backend *be = backend_of(st, a->device, name);
    if (!be) return NULL;
    ArrayObject *out;
    int float_only = op == GD_EXP || op == GD_LOG || op == GD_SQRT || op == GD_TANH;
    if (float_only && a->dtype == GD_INT64) {
        /* NumPy computes these in float64 for integers: convert, then apply in place. */
        if (!(out = converted(st, be, a, GD_FLOAT64, name))) return NULL;
        if (run_unary(st, be, a->device, out->data, op, GD_FLOAT64, out->data, out->size, name) < 0) goto fail;
    } else {
        if (!(out = gd_array_new(st, a->device, a->dtype, a->ndim, a->shape, name))) return NULL;
        if (run_unary(st, be, a->device, out->data, op, a->dtype, a->data, a->size, name) < 0) goto fail;
    }
    if (gd_tracing(st) && gd_trace_op(st, name, out, a, NULL) < 0) goto fail;
    return (PyObject *)out;
fail:
    Py_DECREF(out);
    return NULL;
}

/* ------------------------------------------------------------------------------------------
 * reductions
 * ---------------------------------------------------------------------------------------- */

/* Mark the reduced axes of an ndim-array; axis is None, an int or a tuple of ints. */
static int parse_axes(uint8_t *reduced, PyObject *axis, int ndim, const char *op)
{
    memset(reduced, axis == Py_None, (size_t)ndim);
    if (axis == Py_None) return 0;
    int single = !PyTuple_Check(axis);
    if (single && !PyIndex_Check(axis)) {
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
        Py_ssize_t v = PyNumber_AsSsize_t(item, NULL); /* clips: huge values are out of range */
        int k;
        if ((v == -1 && PyErr_Occurred()) || normalize_axis(&k, v, ndim, op) < 0) return -1;
        if (reduced[k]) {
            PyErr_Format(PyExc_ValueError, "%s: duplicate value in 'axis' (axis %d given twice)", op, k);
            return -1;
        }
        reduced[k] = 1;
    }
    return 0;
}

/* Store a double into a 0-d result of dtype dt that lives in host memory. */
static void store_host(void *out, gd_dtype dt, double v)
{
    if (dt == GD_FLOAT32) *(float *)out = (float)round_f32(v);
    else *(double *)out = v;
}

/* Contiguous arrays make every reduction a sequence of (outer, len, inner) passes, one per
 * run of adjacent reduced axes, the longest first (it shrinks the data most). Intermediate
 * passes of sums run in float64, so float32 loses nothing between passes; mean and norm end
 * in float64 (divide, square root) and cast to the result dtype last. */
PyObject *gd_reduce(gd_state *st, gd_reduction kind, ArrayObject *a, PyObject *axis, int keepdims)
{
    const char *name = reduction_names[kind];
    gd_dtype in_dt = a->dtype;
    gd_dtype res_dt = ((kind == GD_R_MEAN || kind == GD_R_NORM) && in_dt == GD_INT64) ? GD_FLOAT64 : in_dt;
    gd_redop first_op = kind == GD_R_MAX ? GD_RED_MAX : kind == GD_R_MIN ? GD_RED_MIN
                      : kind == GD_R_NORM ? GD_RED_SUMSQ : GD_RED_SUM;
    gd_redop later_op = first_op == GD_RED_SUMSQ ? GD_RED_SUM : first_op;
    gd_device dev = a->device;
    int ndim = a->ndim;
    int64_t out_shape[GD_MAX_NDIM];
    int out_ndim = 0;
    ArrayObject *out = NULL, *cur_tmp = NULL, *dst_tmp = NULL;
    gd_error err;
    int rc;
    const gd_backend *be = backend_of(st, dev, name);
    if (!be) return NULL;

    /* Hot path: a full reduction is one backend call writing a 0-d result. */
    int host_finish = kind == GD_R_MEAN || kind == GD_R_NORM;
    if (axis == Py_None && a->size > 0 && (dev.type == GD_CPU || !host_finish)) {
        for (int k = 0; k < ndim; k++) out_shape[k] = 1;
        if (!(out = gd_array_new(st, dev, res_dt, keepdims ? ndim : 0, out_shape, name))) return NULL;
        if (host_finish) {
            /* CPU memory is host memory: accumulate in a local double and finish here. */
            double acc;
            GD_RUN(st, dev, a->size, rc,
                   be->reduce(&acc, GD_FLOAT64, first_op, a->data, in_dt, 1, a->size, 1, dev_index(dev), &err));
            if (!rc) store_host(out->data, res_dt, kind == GD_R_MEAN ? acc / (double)a->size : sqrt(acc));
        } else {
            GD_RUN(st, dev, a->size, rc,
                   be->reduce(out->data, res_dt, first_op, a->data, in_dt, 1, a->size, 1, dev_index(dev), &err));
        }
        if (rc) {
            gd_raise(st, name, &err);
            goto fail;
        }
        goto done;
    }

    uint8_t reduced[GD_MAX_NDIM];
    if (parse_axes(reduced, axis, ndim, name) < 0) return NULL;
    int64_t out_size = 1;
    for (int k = 0; k < ndim; k++) {
        if (!reduced[k]) out_shape[out_ndim++] = a->shape[k];
        else if (keepdims) out_shape[out_ndim++] = 1;
    }
    if (shape_size(&out_size, out_ndim, out_shape, name) < 0) return NULL;
    if (!(out = gd_array_new(st, dev, res_dt, out_ndim, out_shape, name))) return NULL;
    if (out_size == 0) goto done;

    int64_t count = a->size / out_size; /* elements reduced into each result */
    if (count == 0) {
        if (kind == GD_R_MAX || kind == GD_R_MIN) {
            PyErr_Format(PyExc_ValueError,
                         "%s: zero-size array has no %s (reduction over an axis of length 0)", name,
                         kind == GD_R_MAX ? "maximum" : "minimum");
            goto fail;
        }
        gd_scalar v;
        if (res_dt == GD_INT64) v.i = 0;
        else v.f = kind == GD_R_MEAN ? NAN : 0.0;
        if (run_fill(st, be, dev, out->data, res_dt, v, out_size, name) < 0) goto fail;
        goto done;
    }

    /* runs of adjacent kept / reduced axes; axes of length 1 change nothing and drop out */
    int64_t run_len[GD_MAX_NDIM];
    uint8_t run_red[GD_MAX_NDIM];
    int nruns = 0, npasses = 0;
    for (int k = 0; k < ndim; k++) {
        if (a->shape[k] == 1) continue;
        if (nruns > 0 && run_red[nruns - 1] == reduced[k]) {
            run_len[nruns - 1] *= a->shape[k];
        } else {
            run_len[nruns] = a->shape[k];
            run_red[nruns++] = reduced[k];
            npasses += reduced[k];
        }
    }
    if (npasses == 0) {
        /* only axes of length 1 reduced: the input itself, in the result dtype */
        if (run_astype(st, be, dev, out->data, res_dt, a->data, in_dt, out_size, name) < 0) goto fail;
        if (kind == GD_R_NORM && run_unary(st, be, dev, out->data, GD_ABS, res_dt, out->data, out_size, name) < 0)
            goto fail;
        goto done;
    }

    gd_dtype acc_dt = kind == GD_R_MAX || kind == GD_R_MIN ? in_dt
                    : kind == GD_R_SUM ? (in_dt == GD_FLOAT32 && npasses > 1 ? GD_FLOAT64 : in_dt)
                    : GD_FLOAT64;
    char *cur = a->data;
    gd_dtype cur_dt = in_dt;
    for (int p = 0; p < npasses; p++) {
        int j = -1;
        for (int r = 0; r < nruns; r++)
            if (run_red[r] && (j < 0 || run_len[r] >= run_len[j])) j = r;
        int64_t outer = 1, inner = 1, len = run_len[j];
        for (int r = 0; r < j; r++) outer *= run_len[r];
        for (int r = j + 1; r < nruns; r++) inner *= run_len[r];
        char *dst;
        if (p == npasses - 1 && acc_dt == res_dt) {
            dst = out->data;
        } else {
            int64_t n = outer * inner;
            if (!(dst_tmp = gd_array_new(st, dev, acc_dt, 1, &n, name))) goto fail;
            dst = dst_tmp->data;
        }
        GD_RUN(st, dev, outer * len * inner, rc,
               be->reduce(dst, acc_dt, p == 0 ? first_op : later_op, cur, cur_dt, outer, len, inner,
                          dev_index(dev), &err));
        if (rc) {
            gd_raise(st, name, &err);
            goto fail;
        }
        Py_XSETREF(cur_tmp, dst_tmp);
        dst_tmp = NULL;
        cur = dst;
        cur_dt = acc_dt;
        nruns--;
        memmove(run_len + j, run_len + j + 1, (size_t)(nruns - j) * sizeof(int64_t));
        memmove(run_red + j, run_red + j + 1, (size_t)(nruns - j));
    }
    if (kind == GD_R_MEAN) {
        gd_ewise ew;
        gd_operand num, den;
        contiguous_plan(&ew, out_size);
        num.data = cur;
        num.strides[0] = 1;
        den.data = NULL;
        den.scalar.f = (double)count;
        den.strides[0] = 0;
        GD_RUN(st, dev, out_size, rc, be->binary(cur, GD_DIV, GD_FLOAT64, &ew, &num, &den, dev_index(dev), &err));
        if (rc) {
            gd_raise(st, name, &err);
            goto fail;
        }
    } else if (kind == GD_R_NORM &&
               run_unary(st, be, dev, cur, GD_SQRT, GD_FLOAT64, cur, out_size, name) < 0) {
        goto fail;
    }
    if (cur != out->data && run_astype(st, be, dev, out->data, res_dt, cur, acc_dt, out_size, name) < 0)
        goto fail;

done:
    Py_XDECREF(cur_tmp);
    if (gd_tracing(st) && gd_trace_op(st, name, out, a, NULL) < 0) {
        Py_DECREF(out);
        return NULL;
    }
    return (PyObject *)out;
fail:
    Py_XDECREF(cur_tmp);
    Py_XDECREF(dst_tmp);
    Py_XDECREF(out);
    return NULL;
}

/* ------------------------------------------------------------------------------------------
 * matrix product
 * ---------------------------------------------------------------------------------------- */

static void raise_0d_matmul(void)
{
    PyErr_SetString(PyExc_ValueError, "matmul: 0-d operands are not allowed; use * for scalars");
}

/* NumPy's matmul. a (..., m, k) @ b (..., k, n) -> (..., m, n) with broadcast batch axes; a
 * 1-D a is (1, k) and a 1-D b is (k, 1), their axis removed from the result. */
PyObject *gd_matmul(gd_state *st, PyObject *ao, PyObject *bo)
{
    const char *name = "matmul";
    if (!gd_is_array(st, ao) || !gd_is_array(st, bo)) {
        opd_info x;
        int r = classify(st, gd_is_array(st, ao) ? bo : ao, &x, name);
        if (r < 0) return NULL;
        if (r > 0) Py_RETURN_NOTIMPLEMENTED;
        raise_0d_matmul(); /* a number is a 0-d operand */
        return NULL;
    }
    ArrayObject *a = (ArrayObject *)ao, *b = (ArrayObject *)bo;
    char s0[256], s1[256];
    if (a->ndim == 0 || b->ndim == 0) {
        raise_0d_matmul();
        return NULL;
    }
    if (!gd_device_eq(a->device, b->device)) {
        raise_device_mismatch(st, name, a->device, b->device);
        return NULL;
    }
    if (a->dtype == GD_INT64 || b->dtype == GD_INT64) {
        PyErr_SetString(PyExc_TypeError,
                        "matmul: int64 operands are not supported; convert with a.astype(gd.float32)");
        return NULL;
    }
    gd_dtype dt = a->dtype == b->dtype ? a->dtype : GD_FLOAT64;
    int64_t m = a->ndim == 1 ? 1 : a->shape[a->ndim - 2], k = a->shape[a->ndim - 1];
    int64_t kb = b->ndim == 1 ? b->shape[0] : b->shape[b->ndim - 2], n = b->ndim == 1 ? 1 : b->shape[b->ndim - 1];
    if (k != kb) {
        PyErr_Format(PyExc_ValueError,
                     "matmul: shapes %s and %s do not align: %lld (last dim of a) != %lld (%s dim of b)",
                     gd_shape_str(a->ndim, a->shape, s0), gd_shape_str(b->ndim, b->shape, s1), (long long)k,
                     (long long)kb, b->ndim > 2 ? "second-to-last" : "first");
        return NULL;
    }
    int na = a->ndim > 2 ? a->ndim - 2 : 0, nb = b->ndim > 2 ? b->ndim - 2 : 0;
    int nbatch;
    int64_t shape[GD_MAX_NDIM + 1];
    if (broadcast(&nbatch, shape, na, a->shape, nb, b->shape) < 0) {
        char s2[256], s3[256];
        PyErr_Format(PyExc_ValueError,
                     "matmul: shapes %s and %s do not broadcast: batch dimensions %s and %s cannot "
                     "be broadcast together",
                     gd_shape_str(a->ndim, a->shape, s0), gd_shape_str(b->ndim, b->shape, s1),
                     gd_shape_str(na, a->shape, s2), gd_shape_str(nb, b->shape, s3));
        return NULL;
    }
    const char *big = m > INT_MAX ? "m" : n > INT_MAX ? "n" : k > INT_MAX ? "k" : NULL;
    if (big) {
        PyErr_Format(PyExc_ValueError,
                     "matmul: shapes %s and %s have a matrix dimension %s = %lld above the BLAS limit "
                     "2147483647; split the product into blocks",
                     gd_shape_str(a->ndim, a->shape, s0), gd_shape_str(b->ndim, b->shape, s1), big,
                     (long long)(big[0] == 'm' ? m : big[0] == 'n' ? n : k));
        return NULL;
    }
    int out_ndim = nbatch;
    if (a->ndim >= 2) shape[out_ndim++] = m;
    if (b->ndim >= 2) shape[out_ndim++] = n;
    int64_t batch, batch_a, batch_b, out_size;
    if (shape_size(&batch, nbatch, shape, name) < 0 || shape_size(&out_size, out_ndim, shape, name) < 0)
        return NULL;
    if (shape_size(&batch_a, na, a->shape, name) < 0 || shape_size(&batch_b, nb, b->shape, name) < 0)
        return NULL;

    const gd_backend *be = backend_of(st, a->device, name);
    if (!be) return NULL;
    ArrayObject *out = gd_array_new(st, a->device, dt, out_ndim, shape, name);
    ArrayObject *ta = NULL, *tb = NULL;
    if (!out) return NULL;
    if (out_size == 0) goto done;

    ArrayObject *ua = a, *ub = b; /* the operands as the backend reads them */
    if (ua->dtype != dt && !(ua = ta = converted(st, be, ua, dt, name))) goto fail;
    if (ub->dtype != dt && !(ub = tb = converted(st, be, ub, dt, name))) goto fail;
    /* Batches: equal, or one side a single matrix (stride 0), go to one gemm call. Partial
     * broadcasts ((2, 1, m, k) @ (3, k, n)) are materialised first: rare, simple and right. */
    if (batch_a != batch && batch_a != 1) {
        int64_t full[GD_MAX_NDIM + 2];
        memcpy(full, shape, (size_t)nbatch * sizeof(int64_t));
        full[nbatch] = m;
        full[nbatch + 1] = k;
        ArrayObject *t = expanded(st, be, ua, nbatch + 2, full, name);
        if (!t) goto fail;
        Py_XSETREF(ta, t);
        ua = t;
        batch_a = batch;
    }
    if (batch_b != batch && batch_b != 1) {
        int64_t full[GD_MAX_NDIM + 2];
        memcpy(full, shape, (size_t)nbatch * sizeof(int64_t));
        full[nbatch] = k;
        full[nbatch + 1] = n;
        ArrayObject *t = expanded(st, be, ub, nbatch + 2, full, name);
        if (!t) goto fail;
        Py_XSETREF(tb, t);
        ub = t;
        batch_b = batch;
    }
    int64_t stride_a = batch_a == 1 ? 0 : m * k, stride_b = batch_b == 1 ? 0 : k * n;
    int64_t gm = m, gbatch = batch;
    if (batch > 1 && stride_b == 0 && stride_a != 0 && batch * m <= INT_MAX) {
        /* a stack of matrices times one matrix is one tall product */
        gm = batch * m;
        gbatch = 1;
    }
    {
        gd_error err;
        int rc;
        double work = (double)gbatch * (double)gm * (double)n * (double)k;
        GD_RUN(st, a->device, work, rc,
               be->gemm(out->data, dt, ua->data, ub->data, gbatch, gm, n, k, stride_a, stride_b, m * n,
                        dev_index(a->device), &err));
        if (rc) {
            gd_raise(st, name, &err);
            goto fail;
        }
    }
done:
    Py_XDECREF(ta);
    Py_XDECREF(tb);
    if (gd_tracing(st) && gd_trace_op(st, name, out, a, b) < 0) {
        Py_DECREF(out);
        return NULL;
    }
    return (PyObject *)out;
fail:
    Py_XDECREF(ta);
    Py_XDECREF(tb);
    Py_DECREF(out);
    return NULL;
}

/* ------------------------------------------------------------------------------------------
 * transpose
 * ---------------------------------------------------------------------------------------- */

static int parse_perm(int *perm, PyObject *axes, int ndim, const int64_t *shape)
{
    PyObject *fast = PySequence_Fast(axes, "transpose: axes must be a tuple of ints");
    if (!fast) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    uint8_t seen[GD_MAX_NDIM] = {0};
    int rc = -1;
    char s0[256];
    if (n != ndim) {
        PyErr_Format(PyExc_ValueError,
                     "transpose: axes %R do not match an array of shape %s: give a permutation of its %d axes",
                     axes, gd_shape_str(ndim, shape, s0), ndim);
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(fast, i);
        if (!PyIndex_Check(item)) {
            PyErr_Format(PyExc_TypeError, "transpose: axes must be ints, got %s", Py_TYPE(item)->tp_name);
            goto done;
        }
        Py_ssize_t v = PyNumber_AsSsize_t(item, NULL);
        if ((v == -1 && PyErr_Occurred()) || normalize_axis(&perm[i], v, ndim, "transpose") < 0) goto done;
        if (seen[perm[i]]++) {
            PyErr_Format(PyExc_ValueError,
                         "transpose: repeated axis %d in axes %R; give a permutation of (0, ..., %d)", perm[i],
                         axes, ndim - 1);
            goto done;
        }
    }
    rc = 0;
done:
    Py_DECREF(fast);
    return rc;
}

PyObject *gd_transpose(gd_state *st, ArrayObject *a, PyObject *axes)
{
    const char *name = "transpose";
    int nd = a->ndim, perm[GD_MAX_NDIM];
    if (!axes || axes == Py_None) {
        for (int k = 0; k < nd; k++) perm[k] = nd - 1 - k;
    } else if (parse_perm(perm, axes, nd, a->shape) < 0) {
        return NULL;
    }
    int64_t shape[GD_MAX_NDIM];
    for (int k = 0; k < nd; k++) shape[k] = a->shape[perm[k]];
    const gd_backend *be = backend_of(st, a->device, name);
    if (!be) return NULL;
    ArrayObject *out = gd_array_new(st, a->device, a->dtype, nd, shape, name);
    if (!out) return NULL;
    if (a->size > 0) {
        /* Fewer axes, cheaper permute: drop axes of length 1, then merge input axes that stay
         * neighbours in the output. If one group is left, the data does not move at all. */
        int newidx[GD_MAX_NDIM], q[GD_MAX_NDIM], pos[GD_MAX_NDIM], nq = 0, nk = 0;
        int64_t ksh[GD_MAX_NDIM];
        for (int i = 0; i < nd; i++)
            if (a->shape[i] > 1) {
                newidx[i] = nk;
                ksh[nk++] = a->shape[i];
            }
        for (int k = 0; k < nd; k++)
            if (a->shape[perm[k]] > 1) q[nq++] = newidx[perm[k]];
        for (int k = 0; k < nq; k++) pos[q[k]] = k;
        int group[GD_MAX_NDIM], ng = 0, gperm[GD_MAX_NDIM];
        int64_t gshape[GD_MAX_NDIM];
        for (int i = 0; i < nk; i++) {
            if (i > 0 && pos[i] == pos[i - 1] + 1) {
                gshape[ng - 1] *= ksh[i];
            } else {
                gshape[ng] = ksh[i];
                ng++;
            }
            group[i] = ng - 1;
        }
        int np = 0;
        for (int k = 0; k < nq; k++)
            if (k == 0 || q[k] != q[k - 1] + 1) gperm[np++] = group[q[k]];
        gd_error err;
        int rc;
        if (ng <= 1)
            GD_RUN(st, a->device, a->size, rc,
                   be->copy_device(out->data, dev_index(a->device), a->data, dev_index(a->device),
                                   (size_t)a->size * gd_dtype_size(a->dtype), &err));
        else
            GD_RUN(st, a->device, a->size, rc,
                   be->permute(out->data, a->dtype, a->data, ng, gshape, gperm, dev_index(a->device), &err));
        if (rc) {
            Py_DECREF(out);
            gd_raise(st, name, &err);
            return NULL;
        }
    }
    if (gd_tracing(st) && gd_trace_op(st, name, out, a, NULL) < 0) {
        Py_DECREF(out);
        return NULL;
    }
    return (PyObject *)out;
}

/* ------------------------------------------------------------------------------------------
 * concatenate and stack
 * ---------------------------------------------------------------------------------------- */

PyObject *gd_concatenate(gd_state *st, PyObject *seq, int axis, int stack)
{
    const char *name = stack ? "stack" : "concatenate";
    PyObject *fast = PySequence_Fast(seq, stack ? "stack: expected a sequence of Arrays"
                                                : "concatenate: expected a sequence of Arrays");
    if (!fast) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    PyObject **items = PySequence_Fast_ITEMS(fast);
    ArrayObject *out = NULL, *tmp = NULL;
    char s0[256], s1[256];
    if (n == 0) {
        PyErr_Format(PyExc_ValueError, "%s: need at least one array", name);
        goto fail;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!gd_is_array(st, items[i])) {
            PyErr_Format(PyExc_TypeError,
                         "%s: expected a sequence of gpudev Arrays, but item %zd is %s; convert it "
                         "first with gd.asarray(x)",
                         name, i, Py_TYPE(items[i])->tp_name);
            goto fail;
        }
    }
    ArrayObject *a0 = (ArrayObject *)items[0];
    int nd = a0->ndim, out_nd = stack ? nd + 1 : nd, ax;
    gd_dtype dt = a0->dtype;
    if (!stack && nd == 0) {
        PyErr_SetString(PyExc_ValueError,
                        "concatenate: zero-dimensional arrays cannot be concatenated; use gd.stack "
                        "to join them along a new axis");
        goto fail;
    }
    for (Py_ssize_t i = 1; i < n; i++) {
        ArrayObject *ai = (ArrayObject *)items[i];
        if (!gd_device_eq(ai->device, a0->device)) {
            PyErr_Format(st->DeviceMismatchError,
                         "%s: arrays are on different devices, %s (index 0) and %s (index %zd); "
                         "copy them to one device first, e.g. arrays[%zd].to('%s')",
                         name, gd_device_str(a0->device, s0), gd_device_str(ai->device, s1), i, i, s0);
            goto fail;
        }
        if (stack && !same_shape(ai, a0)) {
            PyErr_Format(PyExc_ValueError,
                         "stack: all input arrays must have the same shape, but the array at index 0 "
                         "has shape %s and the array at index %zd has shape %s",
                         gd_shape_str(nd, a0->shape, s0), i, gd_shape_str(ai->ndim, ai->shape, s1));
            goto fail;
        }
        if (!stack && ai->ndim != nd) {
            PyErr_Format(PyExc_ValueError,
                         "concatenate: all the input arrays must have the same number of dimensions, "
                         "but the array at index 0 has %d dimension(s) and the array at index %zd has "
                         "%d dimension(s)",
                         nd, i, ai->ndim);
            goto fail;
        }
        if (ai->dtype != dt) dt = GD_FLOAT64; /* any mix of gpudev's dtypes promotes to float64 */
    }
    if (normalize_axis(&ax, axis, out_nd, name) < 0) goto fail;

    int64_t shape[GD_MAX_NDIM + 1], size;
    if (stack) {
        memcpy(shape, a0->shape, (size_t)ax * sizeof(int64_t));
        shape[ax] = n;
        memcpy(shape + ax + 1, a0->shape + ax, (size_t)(nd - ax) * sizeof(int64_t));
    } else {
        memcpy(shape, a0->shape, (size_t)nd * sizeof(int64_t));
        for (Py_ssize_t i = 1; i < n; i++) {
            ArrayObject *ai = (ArrayObject *)items[i];
            for (int k = 0; k < nd; k++) {
                if (k != ax && ai->shape[k] != a0->shape[k]) {
                    PyErr_Format(PyExc_ValueError,
                                 "concatenate: all the input array dimensions except for the "
                                 "concatenation axis must match exactly, but along dimension %d, the "
                                 "array at index 0 has size %lld and the array at index %zd has size %lld",
                                 k, (long long)a0->shape[k], i, (long long)ai->shape[k]);
                    goto fail;
                }
            }
            if (ai->shape[ax] > INT64_MAX - shape[ax]) {
                PyErr_Format(PyExc_ValueError,
                             "concatenate: the result has more than 2**63 - 1 elements along axis %d", ax);
                goto fail;
            }
            shape[ax] += ai->shape[ax];
        }
    }
    if (out_nd > GD_MAX_NDIM) {
        PyErr_Format(PyExc_ValueError, "stack: the result would have %d dimensions; gpudev supports at most %d",
                     out_nd, GD_MAX_NDIM);
        goto fail;
    }
    if (shape_size(&size, out_nd, shape, name) < 0) goto fail;
    const gd_backend *be = backend_of(st, a0->device, name);
    if (!be || !(out = gd_array_new(st, a0->device, dt, out_nd, shape, name))) goto fail;

    if (size > 0) {
        /* Each input is `outer` rows of `chunk` elements, copied into the output's rows (of
         * `row` elements) at a running column offset. */
        int64_t outer = 1, offset = 0;
        for (int k = 0; k < ax; k++) outer *= shape[k];
        int64_t row = size / outer;
        size_t isz = gd_dtype_size(dt);
        for (Py_ssize_t i = 0; i < n; i++) {
            ArrayObject *ai = (ArrayObject *)items[i], *src = ai;
            int64_t chunk = ai->size / outer;
            if (chunk == 0) continue;
            if (ai->dtype != dt && !(src = tmp = converted(st, be, ai, dt, name))) goto fail;
            gd_error err;
            int rc;
            GD_RUN(st, a0->device, ai->size, rc,
                   be->copy_2d(out->data + (size_t)offset * isz, (size_t)row * isz, src->data, (size_t)chunk * isz,
                               (size_t)chunk * isz, (size_t)outer, dev_index(a0->device), &err));
            Py_CLEAR(tmp);
            if (rc) {
                gd_raise(st, name, &err);
                goto fail;
            }
            offset += chunk;
        }
    }
    if (gd_tracing(st) &&
        gd_trace_op(st, name, out, a0, n > 1 ? (ArrayObject *)items[1] : NULL) < 0)
        goto fail;
    Py_DECREF(fast);
    return (PyObject *)out;
fail:
    Py_XDECREF(tmp);
    Py_XDECREF(out);
    Py_DECREF(fast);
    return NULL;
}

/* ------------------------------------------------------------------------------------------
 * astype and assignment
 * ---------------------------------------------------------------------------------------- */

PyObject *gd_astype(gd_state *st, ArrayObject *a, gd_dtype dtype, int copy)
{
    if (!copy && a->dtype == dtype) {
        Py_INCREF(a);
        return (PyObject *)a;
    }
    const gd_backend *be = backend_of(st, a->device, "astype");
    if (!be) return NULL;
    ArrayObject *out = converted(st, be, a, dtype, "astype");
    if (out && gd_tracing(st) && gd_trace_op(st, "astype", out, a, NULL) < 0) Py_CLEAR(out);
    return (PyObject *)out;
}

/* A scalar cast to dt the way NumPy's setitem casts (floats truncate into integers). */
static int assign_scalar(gd_scalar *out, const opd_info *x, gd_dtype dt, const char *op)
{
    int is_float = x->kind == OPD_WEAK_FLOAT || (x->kind == OPD_SCALAR && x->dtype != GD_INT64);
    if (dt != GD_INT64) return scalar_to(out, x, dt);
    if (!is_float) {
        if (x->big) {
            PyErr_Format(PyExc_OverflowError, "%s: Python integer %S out of bounds for int64", op, x->obj);
            return -1;
        }
        out->i = x->i;
        return 0;
    }
    if (isnan(x->f)) {
        PyErr_Format(PyExc_ValueError, "%s: cannot convert float NaN to integer", op);
        return -1;
    }
    /* int64 holds [-2**63, 2**63) */
    if (!(x->f >= -0x1p63 && x->f < 0x1p63)) {
        PyErr_Format(PyExc_OverflowError, "%s: cannot convert float %R to int64 (out of range)", op, x->obj);
        return -1;
    }
    out->i = (int64_t)x->f;
    return 0;
}

int gd_assign(gd_state *st, ArrayObject *dst, PyObject *value, const char *op)
{
    opd_info x;
    int r = classify(st, value, &x, op);
    if (r < 0) return -1;
    if (r > 0) {
        PyErr_Format(PyExc_TypeError, "%s: cannot assign %s to a gpudev Array; give a number or an Array",
                     op, Py_TYPE(value)->tp_name);
        return -1;
    }
    const gd_backend *be = backend_of(st, dst->device, op);
    if (!be) return -1;
    ArrayObject *v = x.arr, *tmp = NULL;
    if (!v) {
        gd_scalar s;
        if (assign_scalar(&s, &x, dst->dtype, op) < 0 ||
            run_fill(st, be, dst->device, dst->data, dst->dtype, s, dst->size, op) < 0)
            return -1;
        goto done;
    }
    if (!gd_device_eq(v->device, dst->device)) {
        char d0[32], d1[32];
        PyErr_Format(st->DeviceMismatchError,
                     "%s: the value is on %s but the array is on %s; copy it first, e.g. value.to('%s')",
                     op, gd_device_str(v->device, d0), gd_device_str(dst->device, d1), d1);
        return -1;
    }
    /* NumPy's setitem broadcast: the value's shape right-aligned onto the target's, where
     * extra leading axes of the value must have length 1. */
    for (int j = 0; j < v->ndim; j++) {
        int k = j - (v->ndim - dst->ndim);
        if (k < 0 ? v->shape[j] != 1 : (v->shape[j] != 1 && v->shape[j] != dst->shape[k])) {
            char s0[256], s1[256];
            PyErr_Format(PyExc_ValueError, "%s: could not broadcast input array from shape %s into shape %s",
                         op, gd_shape_str(v->ndim, v->shape, s0), gd_shape_str(dst->ndim, dst->shape, s1));
            return -1;
        }
    }
    if (dst->size == 0) goto done;
    if (v->dtype != dst->dtype) {
        /* different dtypes never share storage: cast straight in when nothing broadcasts */
        if (v->size == dst->size) {
            if (run_astype(st, be, dst->device, dst->data, dst->dtype, v->data, v->dtype, v->size, op) < 0)
                return -1;
            goto done;
        }
        if (!(v = tmp = converted(st, be, v, dst->dtype, op))) return -1;
    } else if (overlaps(v, dst)) {
        if (v->data == dst->data && v->size == dst->size) goto done; /* a[...] = a */
        if (!(v = tmp = converted(st, be, v, dst->dtype, op))) return -1;
    }
    {
        gd_ewise ew;
        gd_operand opd;
        gd_error err;
        int rc;
        ewise_plan(&ew, &opd, &v, 1, dst->ndim, dst->shape, dst->size);
        GD_RUN(st, dst->device, dst->size, rc,
               be->unary(dst->data, GD_COPY, dst->dtype, &ew, &opd, dev_index(dst->device), &err));
        Py_XDECREF(tmp);
        if (rc) return gd_raise(st, op, &err);
    }
done:
    if (gd_tracing(st) && gd_trace_op(st, "assign", dst, x.arr, NULL) < 0) return -1;
    return 0;
}

/* ------------------------------------------------------------------------------------------
 * allclose
 * ---------------------------------------------------------------------------------------- */

/* A float64 copy of a in host memory (a itself when it already is one). */
static ArrayObject *host_f64(gd_state *st, ArrayObject *a)
{
    ArrayObject *f = a;
    Py_INCREF(f);
    if (a->dtype != GD_FLOAT64) {
        const gd_backend *be = backend_of(st, a->device, "allclose");
        Py_SETREF(f, be ? converted(st, be, a, GD_FLOAT64, "allclose") : NULL);
        if (!f) return NULL;
    }
    if (f->device.type != GD_CPU) {
        gd_device cpu = {GD_CPU, -1};
        Py_SETREF(f, gd_array_to_device(st, f, cpu, "allclose"));
    }
    return f;
}

static double scalar_f64(const opd_info *x)
{
    if (x->kind == OPD_WEAK_FLOAT || (x->kind == OPD_SCALAR && x->dtype != GD_INT64)) return x->f;
    return x->big ? PyLong_AsDouble(x->obj) : (double)x->i;
}

/* NumPy's isclose with equal_nan=False: infinities are close only to themselves. */
static inline int is_close(double x, double y, double rtol, double atol)
{
    if (isfinite(x) && isfinite(y)) return fabs(x - y) <= atol + rtol * fabs(y);
    return x == y;
}

PyObject *gd_allclose(gd_state *st, PyObject *ao, PyObject *bo, double rtol, double atol)
{
    const char *name = "allclose";
    opd_info x, y;
    int r = classify(st, ao, &x, name);
    if (r == 0) r = classify(st, bo, &y, name);
    if (r < 0) return NULL;
    if (r > 0) {
        PyErr_Format(PyExc_TypeError, "allclose: expected gpudev Arrays or numbers, got %s and %s",
                     Py_TYPE(ao)->tp_name, Py_TYPE(bo)->tp_name);
        return NULL;
    }
    if (x.arr && y.arr && !gd_device_eq(x.arr->device, y.arr->device)) {
        raise_device_mismatch(st, name, x.arr->device, y.arr->device);
        return NULL;
    }
    int nx = x.arr ? x.arr->ndim : 0, ny = y.arr ? y.arr->ndim : 0, ndim;
    const int64_t *sx = x.arr ? x.arr->shape : NULL, *sy = y.arr ? y.arr->shape : NULL;
    int64_t shape[GD_MAX_NDIM], size;
    if (broadcast(&ndim, shape, nx, sx, ny, sy) < 0) {
        raise_broadcast(name, nx, sx, ny, sy);
        return NULL;
    }
    if (shape_size(&size, ndim, shape, name) < 0) return NULL;
    gd_operand opd[2];
    opd[0].scalar.f = x.arr ? 0.0 : scalar_f64(&x);
    opd[1].scalar.f = y.arr ? 0.0 : scalar_f64(&y);
    if (PyErr_Occurred()) return NULL;
    if (size == 0) Py_RETURN_TRUE;

    ArrayObject *hx = NULL, *hy = NULL;
    if (x.arr && !(hx = host_f64(st, x.arr))) return NULL;
    if (y.arr && !(hy = host_f64(st, y.arr))) {
        Py_XDECREF(hx);
        return NULL;
    }
    ArrayObject *arrs[2] = {hx, hy};
    gd_ewise ew;
    ewise_plan(&ew, opd, arrs, 2, ndim, shape, size);
    const double *px = opd[0].data, *py = opd[1].data;
    int close = 1;
    Py_BEGIN_ALLOW_THREADS
    /* walk the output in C order with an odometer over the collapsed axes */
    int64_t idx[GD_MAX_NDIM] = {0}, ox = 0, oy = 0;
    for (int64_t i = 0; i < size && close; i++) {
        double vx = px ? px[ox] : opd[0].scalar.f, vy = py ? py[oy] : opd[1].scalar.f;
        close = is_close(vx, vy, rtol, atol);
        for (int d = ew.ndim - 1; d >= 0; d--) {
            ox += opd[0].strides[d];
            oy += opd[1].strides[d];
            if (++idx[d] < ew.shape[d]) break;
            ox -= opd[0].strides[d] * ew.shape[d];
            oy -= opd[1].strides[d] * ew.shape[d];
            idx[d] = 0;
        }
    }
    Py_END_ALLOW_THREADS
    Py_XDECREF(hx);
    Py_XDECREF(hy);
    return PyBool_FromLong(close);
}
