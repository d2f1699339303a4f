/* elementwise.c - unary and binary operations (the number protocol's + - * / ** and gd.exp,
 * gd.maximum, ...), astype and allclose: check devices, dtypes and
 * shapes, plan broadcasting, then call the backend.
 *
 * The hot path comes first in gd_binary: same-shape operations on tiny arrays run without
 * temporary Python objects or formatting, so they cost little more than Python's own dispatch.
 * Everything else goes through one general path that follows NumPy 2's rules (promotion,
 * broadcasting, in-place casting, overlap).
 */
#include "elementwise.h"
#include "core.h"
#include "args.h"
#include "array.h"
#include "autograd.h"
#include "compute.h"
#include "device.h"
#include "dtypes.h"
#include "operand.h"
#include "runtime.h"
#include "shape.h"
#include "trace.h"
#include "transfer.h"

#include <math.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------
 * binary operations: the hot path
 * ---------------------------------------------------------------------------------------- */

/* Integer division gives float64, integer powers check their exponents and bools follow
 * NumPy's rules for arithmetic: the general path. */
static inline int fast_op_ok(gd_binop op, gd_dtype dt)
{
    return gd_binop_defined(op, dt) && (gd_dtype_is_float(dt) || op != GD_POW);
}

/* The dtype of op's result computed in dt. */
static inline gd_dtype result_dtype(gd_binop op, gd_dtype dt)
{
    return gd_binop_has(op, GD_OP_BOOL_OUT) ? GD_BOOL : dt;
}

/* A Python float or int as an operand of an array of dtype dt without changing its dtype;
 * 0 when the general path must decide (promotion, overflow). Never raises. */
static inline int fast_scalar(gd_operand *o, PyObject *s, gd_dtype dt)
{
    if (dt == GD_BOOL) return 0;
    if (PyFloat_CheckExact(s)) {
        if (!gd_dtype_is_float(dt)) return 0;
        double v = PyFloat_AS_DOUBLE(s);
        o->scalar.f = dt == GD_FLOAT32 ? gd_round_f32(v) : v;
    } else if (PyLong_CheckExact(s)) {
        int overflow;
        long long v = PyLong_AsLongLongAndOverflow(s, &overflow);
        if (overflow || (dt == GD_INT32 && (v < INT32_MIN || v > INT32_MAX))) return 0;
        if (!gd_dtype_is_float(dt)) o->scalar.i = v;
        else o->scalar.f = dt == GD_FLOAT32 ? gd_round_f32((double)v) : (double)v;
    } else {
        return 0;
    }
    o->data = NULL;
    o->strides[0] = 0;
    return 1;
}

static inline void fast_array(gd_operand *o, const ArrayObject *a)
{
    o->data = a->data;
    o->strides[0] = 1;
}

/* out = x op y where every array operand has `like`'s shape, dtype and device. */
static PyObject *binary_contiguous(gd_state *st, const gd_backend *be, gd_binop op, ArrayObject *like,
                                   const gd_operand *x, const gd_operand *y, ArrayObject *inplace)
{
    const char *name = gd_binop_table[op].name;
    ArrayObject *out = inplace;
    if (out) Py_INCREF(out);
    else if (!(out = gd_array_new(st, like->device, result_dtype(op, like->dtype), like->ndim, like->shape, name)))
        return NULL;
    int64_t n = like->size;
    if (n > 0) {
        gd_ewise ew;
        gd_error err;
        gd_contiguous_plan(&ew, n);
        PyThreadState *ts = gd_run_begin(like->device, (double)n);
        int rc = be->binary(out->data, op, like->dtype, &ew, x, y, like->device.index, &err);
        if (gd_run_end(st, like->device, ts, rc, &err, name) < 0) Py_CLEAR(out);
    }
    return (PyObject *)out;
}

/* The hot path for Array op Array and Array op Python scalar; NULL (no exception) when the
 * general path must take the operation. */
static PyObject *binary_fast(gd_state *st, gd_binop op, PyObject *ao, PyObject *bo, ArrayObject *inplace)
{
    PyTypeObject *at = st->array_type;
    gd_operand x, y;
    if (Py_TYPE(ao) == at) {
        ArrayObject *a = (ArrayObject *)ao;
        const gd_backend *be = gd_backend_of(st, a->device, gd_binop_table[op].name);
        if (!be || !fast_op_ok(op, a->dtype)) return NULL;
        if (Py_TYPE(bo) == at) {
            ArrayObject *b = (ArrayObject *)bo;
            if (a->dtype != b->dtype || !a->contiguous || !b->contiguous || !gd_same_shape(a, b) ||
                !gd_device_eq(a->device, b->device) || (inplace && a->data != b->data && gd_overlaps(a, b)))
                return NULL;
            fast_array(&x, a);
            fast_array(&y, b);
            return binary_contiguous(st, be, op, a, &x, &y, inplace);
        }
        if (!a->contiguous || !fast_scalar(&y, bo, a->dtype)) return NULL;
        fast_array(&x, a);
        return binary_contiguous(st, be, op, a, &x, &y, inplace);
    }
    if (Py_TYPE(bo) == at && !inplace) {
        ArrayObject *b = (ArrayObject *)bo;
        const gd_backend *be = gd_backend_of(st, b->device, gd_binop_table[op].name);
        if (!be || !b->contiguous || !fast_op_ok(op, b->dtype) || !fast_scalar(&x, ao, b->dtype)) return NULL;
        fast_array(&y, b);
        return binary_contiguous(st, be, op, b, &x, &y, NULL);
    }
    return NULL;
}

/* ------------------------------------------------------------------------------------------
 * binary operations: the general path
 * ---------------------------------------------------------------------------------------- */

/* What the general path decided about x op y. */
typedef struct binary_plan {
    gd_binop op;
    const char *name;
    gd_opinfo x, y;
    gd_device dev;
    gd_dtype dt;       /* the compute dtype */
    gd_dtype rdt;      /* the result's: dt, or bool for comparisons */
    int ndim;          /* the result's shape */
    int64_t shape[GD_MAX_NDIM], size;
} binary_plan;

/* Classify the operands; 1 when the caller should return NotImplemented. */
static int binary_operands(gd_state *st, binary_plan *p, PyObject *ao, PyObject *bo)
{
    int r = gd_classify(st, ao, &p->x, p->name);
    if (r == 0) r = gd_classify(st, bo, &p->y, p->name);
    if (r != 0) return r;
    if (!p->x.arr && !p->y.arr) {
        PyErr_Format(PyExc_TypeError,
                     "%s: at least one operand must be a gpudev Array, got %s and %s; create one "
                     "with gd.asarray(x)",
                     p->name, Py_TYPE(ao)->tp_name, Py_TYPE(bo)->tp_name);
        return -1;
    }
    if (p->x.arr && p->y.arr && !gd_device_eq(p->x.arr->device, p->y.arr->device)) {
        gd_raise_device_mismatch(st, p->name, p->x.arr->device, p->y.arr->device);
        return -1;
    }
    p->dev = p->x.arr ? p->x.arr->device : p->y.arr->device;
    return 0;
}

/* Arithmetic on two bools as NumPy does it: + and maximum are or, * and minimum are and,
 * ** // % << and >> are computed in int64 (NumPy's int8; gpudev has no int8), - is refused. */
static int bool_arithmetic(binary_plan *p)
{
    switch (p->op) {
    case GD_ADD: case GD_MAXIMUM: p->op = GD_OR; return 0;
    case GD_MUL: case GD_MINIMUM: p->op = GD_AND; return 0;
    case GD_POW: case GD_FLOOR_DIV: case GD_MOD: case GD_SHL: case GD_SHR:
        p->dt = GD_INT64; /* NumPy: int8 */
        return 0;
    default:
        PyErr_Format(PyExc_TypeError,
                     "%s: not supported for bool operands, as in NumPy; use ^ (bitwise_xor) for bools, or "
                     "convert first, e.g. a.astype(gd.int64)",
                     p->name);
        return -1;
    }
}

/* NumPy 2 promotion, then the operation's own rules: true division of integers, integer
 * powers of scalar exponents >= 0, bitwise operations on integers and bools only. */
static int binary_dtype(binary_plan *p)
{
    p->dt = gd_promote(&p->x, &p->y);
    if (!gd_dtype_is_float(p->dt) && gd_binop_float_only(p->op)) p->dt = GD_FLOAT64;
    if (p->dt == GD_BOOL && gd_binop_has(p->op, GD_OP_NUMERIC) && bool_arithmetic(p) < 0) return -1;
    p->rdt = result_dtype(p->op, p->dt);
    if (gd_binop_has(p->op, GD_OP_BITWISE) && gd_dtype_is_float(p->dt)) {
        PyErr_Format(PyExc_TypeError,
                     "%s: not supported for %s operands (integers and bools only); for masks compare first, "
                     "e.g. (a > 0) & (b < 1)",
                     p->name, gd_dtype_name(p->dt));
        return -1;
    }
    if (gd_dtype_is_float(p->dt) || p->dt == GD_BOOL) return 0;
    const gd_opinfo *big = !gd_int_fits(&p->x, p->dt) ? &p->x : !gd_int_fits(&p->y, p->dt) ? &p->y : NULL;
    /* NumPy 2 compares an int32 array with a Python int exactly; here in int64 when it fits
     * there (past int64 gpudev refuses, for int64 arrays too) */
    if (big && p->dt == GD_INT32 && gd_binop_has(p->op, GD_OP_BOOL_OUT) && !big->big) {
        p->dt = GD_INT64;
        big = NULL;
    }
    if (big) {
        PyErr_Format(PyExc_OverflowError,
                     "%s: Python integer %S out of bounds for %s; convert the array first, "
                     "e.g. a.astype(%s)",
                     p->name, big->obj, gd_dtype_name(p->dt),
                     p->dt == GD_INT32 && !big->big ? "gd.int64" : "gd.float64");
        return -1;
    }
    if (p->op == GD_POW && !p->y.arr && p->y.i < 0) { /* array exponents: pow_exponents_ok */
        PyErr_SetString(PyExc_ValueError,
                        "power: integers to negative integer powers are not allowed; use "
                        "a.astype(gd.float64) ** n");
        return -1;
    }
    return 0;
}

/* bool < integer < float: NumPy's same_kind casting never goes down this order. */
static inline int kind_rank(gd_dtype t) { return gd_dtype_is_bool(t) ? 0 : gd_dtype_is_float(t) ? 2 : 1; }

/* The broadcast result shape, which an in-place target must have (and a dtype it can hold). */
static int binary_shape(binary_plan *p, const ArrayObject *inplace)
{
    const ArrayObject *xa = p->x.arr, *ya = p->y.arr;
    int nx = xa ? xa->ndim : 0, ny = ya ? ya->ndim : 0;
    const int64_t *sx = xa ? xa->shape : NULL, *sy = ya ? ya->shape : NULL;
    if (gd_broadcast(&p->ndim, p->shape, nx, sx, ny, sy) < 0) {
        gd_raise_broadcast(p->name, nx, sx, ny, sy);
        return -1;
    }
    if (gd_shape_size(&p->size, p->ndim, p->shape, p->name) < 0) return -1;
    if (!inplace) return 0;
    char s0[256], s1[256], rewrite[64];
    gd_binop_rewrite(rewrite, sizeof rewrite, p->op);
    if (p->ndim != inplace->ndim || memcmp(p->shape, inplace->shape, (size_t)p->ndim * sizeof(int64_t))) {
        PyErr_Format(PyExc_ValueError,
                     "%s: the result has shape %s but the in-place target has shape %s; write "
                     "%s instead",
                     p->name, gd_shape_str(p->ndim, p->shape, s0), gd_shape_str(inplace->ndim, inplace->shape, s1),
                     rewrite);
        return -1;
    }
    if (kind_rank(p->rdt) > kind_rank(inplace->dtype)) {
        PyErr_Format(PyExc_TypeError,
                     "%s: cannot cast the %s result to %s in place (NumPy's same_kind "
                     "rule); write %s instead",
                     p->name, gd_dtype_name(p->rdt), gd_dtype_name(inplace->dtype), rewrite);
        return -1;
    }
    return 0;
}

/* The operand as the backend reads it: a, or a copy in the compute dtype, or a copy when it
 * shares memory with the in-place target in another layout (NumPy reads every input before
 * writing: a[1:] += a[:-1], a += a[0], a += a.T). *tmp holds the copy. 0 or -1. */
static int binary_input(gd_state *st, const gd_backend *be, const binary_plan *p, ArrayObject *a,
                        ArrayObject *inplace, ArrayObject **use, ArrayObject **tmp)
{
    *use = a;
    if (!a || p->size == 0) return 0;
    int in_other_layout = inplace && inplace->dtype == p->dt && gd_overlaps(a, inplace) && !gd_same_layout(a, inplace);
    if (a->dtype == p->dt && !in_other_layout) return 0;
    *use = *tmp = gd_converted(st, be, a, p->dt, p->name);
    return *use ? 0 : -1;
}

/* out = x op y over the planned shape, out being the in-place target itself or a new array;
 * a result computed in a wider dtype than the in-place target (float32 += float64) is cast
 * back into it. */
static int binary_compute(gd_state *st, const gd_backend *be, const binary_plan *p, ArrayObject *out,
                          ArrayObject *xa, ArrayObject *ya, gd_operand *opd, ArrayObject *inplace)
{
    if (p->size > 0) {
        ArrayObject *arrs[2] = {xa, ya};
        gd_ewise ew;
        gd_error err;
        gd_ewise_plan(&ew, opd, arrs, 2, p->ndim, p->shape, p->size, out == inplace ? out->strides : NULL);
        PyThreadState *ts = gd_run_begin(p->dev, (double)p->size);
        int rc = be->binary(out->data, p->op, p->dt, &ew, &opd[0], &opd[1], p->dev.index, &err);
        if (gd_run_end(st, p->dev, ts, rc, &err, p->name) < 0) return -1;
    }
    if (!inplace || out == inplace) return 0;
    return gd_store(st, be, inplace, out, p->name);
}

/* The smallest element of a non-empty integer array, as a Python int: one backend reduction
 * into a 0-d array, read back (on a GPU, a wait for it). Not reduce.c's min: the reductions
 * are a layer above this file (any, all and reductions in a dtype use its operations). */
static PyObject *smallest_element(gd_state *st, const gd_backend *be, ArrayObject *a, const char *name)
{
    const int64_t no_shape[1] = {1}; /* a 0-d array's shape is empty, but not NULL */
    ArrayObject *c = gd_contiguous(st, be, a, name);
    ArrayObject *m = c ? gd_array_new(st, c->device, c->dtype, 0, no_shape, name) : NULL;
    PyObject *v = NULL;
    if (m) {
        gd_error err;
        PyThreadState *ts = gd_run_begin(c->device, (double)c->size);
        int rc = be->reduce(m->data, c->dtype, GD_RED_MIN, c->data, c->dtype, 1, c->size, 1, c->device.index, &err);
        if (gd_run_end(st, c->device, ts, rc, &err, name) == 0) v = gd_array_item((PyObject *)m, NULL);
    }
    Py_XDECREF(c);
    Py_XDECREF(m);
    return v;
}

/* Integer powers with an integer array of exponents: NumPy refuses negative ones, so the
 * smallest exponent is found first (a reduction, and on a GPU a wait for it) and nothing is
 * written when it is negative. 0 or -1. */
static int pow_exponents_ok(gd_state *st, const gd_backend *be, const binary_plan *p, ArrayObject *exponents)
{
    if (p->op != GD_POW || !gd_dtype_is_int(p->dt) || !p->y.arr || p->y.arr->dtype == GD_BOOL || p->size == 0) return 0;
    PyObject *v = smallest_element(st, be, exponents, p->name);
    if (!v) return -1;
    long long low = PyLong_AsLongLong(v);
    Py_DECREF(v);
    if (low == -1 && PyErr_Occurred()) return -1;
    if (low >= 0) return 0;
    PyErr_Format(PyExc_ValueError,
                 "power: Integers to negative integer powers are not allowed. (the exponents include %lld); "
                 "convert first, e.g. a.astype(gd.float64) ** b",
                 low);
    return -1;
}

static PyObject *binary_general(gd_state *st, gd_binop op, PyObject *ao, PyObject *bo, ArrayObject *inplace)
{
    binary_plan p = {.op = op, .name = gd_binop_table[op].name};
    int r = binary_operands(st, &p, ao, bo);
    if (r > 0) Py_RETURN_NOTIMPLEMENTED;
    if (r < 0 || binary_dtype(&p) < 0 || binary_shape(&p, inplace) < 0) return NULL;
    const gd_backend *be = gd_backend_of(st, p.dev, p.name);
    if (!be) return NULL;
    gd_operand opd[2];
    if ((!p.x.arr && gd_scalar_to(&opd[0].scalar, &p.x, p.dt) < 0) ||
        (!p.y.arr && gd_scalar_to(&opd[1].scalar, &p.y, p.dt) < 0))
        return NULL;
    ArrayObject *xa, *ya, *tx = NULL, *ty = NULL, *out = NULL;
    if (binary_input(st, be, &p, p.x.arr, inplace, &xa, &tx) < 0 ||
        binary_input(st, be, &p, p.y.arr, inplace, &ya, &ty) < 0 || pow_exponents_ok(st, be, &p, ya) < 0)
        goto fail;
    out = inplace && inplace->dtype == p.rdt ? (ArrayObject *)Py_NewRef(inplace)
                                             : gd_array_new(st, p.dev, p.rdt, p.ndim, p.shape, p.name);
    if (!out || binary_compute(st, be, &p, out, xa, ya, opd, inplace) < 0) goto fail;
    if (inplace) Py_SETREF(out, (ArrayObject *)Py_NewRef(inplace));
    Py_CLEAR(tx);
    Py_CLEAR(ty);
    if (gd_trace_op(st, p.name, out, p.x.arr ? p.x.arr : p.y.arr, p.x.arr ? p.y.arr : NULL) < 0) goto fail;
    return (PyObject *)out;
fail:
    Py_XDECREF(tx);
    Py_XDECREF(ty);
    Py_XDECREF(out);
    return NULL;
}

PyObject *gd_binary(gd_state *st, gd_binop op, PyObject *ao, PyObject *bo, ArrayObject *inplace)
{
    const char *name = gd_binop_table[op].name;
    if (inplace) {
        if (gd_ag_wanted(st, ao, bo)) return gd_ag_inplace(st, name, ao, bo);
        gd_bump_version(st, inplace);
    }
    /* Hot path: operands that need no promotion, broadcasting or overlap handling go straight
     * to the backend; no Python objects besides the result, no strides to fill. */
    PyObject *res = NULL;
    if (!gd_tracing(st)) res = binary_fast(st, op, ao, bo, inplace);
    if (!res && !PyErr_Occurred()) res = binary_general(st, op, ao, bo, inplace);
    /* the general path's trace passed on the operands' deferred checks; the fast one's not */
    if (res && (gd_guard_inherit(st, res, ao) < 0 || gd_guard_inherit(st, res, bo) < 0)) Py_CLEAR(res);
    return inplace ? res : GD_AG_OUT(st, name, res, ao, bo, NULL);
}

/* ------------------------------------------------------------------------------------------
 * unary operations and astype
 * ---------------------------------------------------------------------------------------- */

PyObject *gd_unary(gd_state *st, gd_unop op, ArrayObject *a)
{
    const char *name = gd_unop_table[op].name;
    if (!gd_is_array(st, (PyObject *)a)) {
        PyErr_Format(PyExc_TypeError, "%s: expected a gpudev Array, got %s; convert it first with gd.asarray(x)",
                     name, Py_TYPE((PyObject *)a)->tp_name);
        return NULL;
    }
    if (!gd_unop_defined(op, a->dtype) && !gd_unop_float_only(op)) {
        /* NumPy: -bool is refused, |bool| and bool squared are the bool itself; ~ needs ints */
        if (op == GD_NEG || op == GD_INVERT) {
            PyErr_Format(PyExc_TypeError,
                         "%s: not supported for %s arrays, as in NumPy; %s", name, gd_dtype_name(a->dtype),
                         op == GD_NEG ? "use ~a to negate a bool array" : "~ inverts integers and bools only");
            return NULL;
        }
        op = GD_COPY;
    }
    const gd_backend *be = gd_backend_of(st, a->device, name);
    if (!be) return NULL;
    ArrayObject *out;
    if (gd_unop_float_only(op) && !gd_dtype_is_float(a->dtype)) {
        /* NumPy computes these in float64 for integers: convert, then apply in place. */
        out = gd_converted(st, be, a, GD_FLOAT64, name);
        if (out && gd_run_unary(st, be, a->device, out->data, op, GD_FLOAT64, out->data, out->size, name) < 0)
            Py_CLEAR(out);
    } else {
        out = gd_array_new(st, a->device, a->dtype, a->ndim, a->shape, name);
        if (out && a->size > 0) {
            gd_ewise ew;
            gd_operand opd;
            gd_ewise_plan(&ew, &opd, &a, 1, a->ndim, a->shape, a->size, NULL);
            if (gd_run_ewise_unary(st, be, a->device, out->data, op, a->dtype, &ew, &opd, name) < 0) Py_CLEAR(out);
        }
    }
    if (out && gd_trace_op(st, name, out, a, NULL) < 0) Py_CLEAR(out);
    return GD_AG_OUT(st, name, out, a, NULL, NULL);
}

PyObject *gd_astype(gd_state *st, ArrayObject *a, gd_dtype dtype, int copy)
{
    if (!copy && a->dtype == dtype) return Py_NewRef((PyObject *)a);
    const gd_backend *be = gd_backend_of(st, a->device, "astype");
    if (!be) return NULL;
    ArrayObject *out = gd_converted(st, be, a, dtype, "astype");
    if (out && gd_trace_op(st, "astype", out, a, NULL) < 0) Py_CLEAR(out);
    return GD_AG_OUT(st, "astype", out, a, NULL, NULL);
}

GD_SIGNATURE_SHARED(gd_array_astype_sig, "astype", "$self, dtype, copy=True", "The array converted to dtype.");
PyObject *gd_array_astype_method(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *argv[2] = {NULL, Py_True};
    if (gd_parse_args(argv, &gd_array_astype_sig, args, nargs, kwnames) < 0) return NULL;
    if (argv[0] == Py_None) {
        PyErr_SetString(PyExc_TypeError, gd_array_astype_sig.usage);
        return NULL;
    }
    gd_dtype dt;
    if (gd_parse_dtype(argv[0], &dt, "astype") < 0) return NULL;
    int copy = PyObject_IsTrue(argv[1]);
    if (copy < 0) return NULL;
    return gd_astype(gd_state_of(self), (ArrayObject *)self, dt, copy);
}

/* ------------------------------------------------------------------------------------------
 * allclose
 * ---------------------------------------------------------------------------------------- */

/* A float64 copy of a in host memory (a itself when it already is one). */
static ArrayObject *host_f64(gd_state *st, ArrayObject *a)
{
    ArrayObject *f = (ArrayObject *)Py_NewRef((PyObject *)a);
    if (a->dtype != GD_FLOAT64) {
        const gd_backend *be = gd_backend_of(st, a->device, "allclose");
        Py_SETREF(f, be ? gd_converted(st, be, a, GD_FLOAT64, "allclose") : NULL);
        if (!f) return NULL;
    }
    if (f->device.type != GD_CPU) Py_SETREF(f, gd_array_to_device(st, f, GD_CPU_DEVICE, "allclose"));
    return f;
}

/* NumPy's isclose with equal_nan=False, term for term: equal values are close whatever the
 * tolerances (even rtol=inf, where inf * 0 is NaN), and an infinite y only to itself. */
static inline int is_close(double x, double y, double rtol, double atol)
{
    return (fabs(x - y) <= atol + rtol * fabs(y) && isfinite(y)) || x == y;
}

/* Whether every pair of the planned float64 operands is close; walks the output in C order
 * with an odometer over the collapsed axes. Runs without the GIL. */
static int all_close(const gd_ewise *ew, const gd_operand *opd, double rtol, double atol)
{
    const double *px = opd[0].data, *py = opd[1].data;
    int64_t idx[GD_MAX_NDIM] = {0}, ox = 0, oy = 0;
    for (int64_t i = 0; i < ew->size; i++) {
        double vx = px ? px[ox] : opd[0].scalar.f, vy = py ? py[oy] : opd[1].scalar.f;
        if (!is_close(vx, vy, rtol, atol)) return 0;
        for (int d = ew->ndim - 1; d >= 0; d--) {
            ox += opd[0].strides[d];
            oy += opd[1].strides[d];
            if (++idx[d] < ew->shape[d]) break;
            ox -= opd[0].strides[d] * ew->shape[d];
            oy -= opd[1].strides[d] * ew->shape[d];
            idx[d] = 0;
        }
    }
    return 1;
}

static PyObject *allclose(gd_state *st, PyObject *ao, PyObject *bo, double rtol, double atol)
{
    binary_plan p = {.name = "allclose"};
    int r = gd_classify(st, ao, &p.x, p.name);
    if (r == 0) r = gd_classify(st, bo, &p.y, p.name);
    if (r < 0) return NULL;
    if (r > 0) {
        PyErr_Format(PyExc_TypeError, "allclose: expected gpudev Arrays or numbers, got %s and %s",
                     Py_TYPE(ao)->tp_name, Py_TYPE(bo)->tp_name);
        return NULL;
    }
    if (p.x.arr && p.y.arr && !gd_device_eq(p.x.arr->device, p.y.arr->device)) {
        gd_raise_device_mismatch(st, p.name, p.x.arr->device, p.y.arr->device);
        return NULL;
    }
    if (binary_shape(&p, NULL) < 0) return NULL;
    gd_operand opd[2];
    opd[0].scalar.f = p.x.arr ? 0.0 : gd_scalar_f64(&p.x);
    opd[1].scalar.f = p.y.arr ? 0.0 : gd_scalar_f64(&p.y);
    if (PyErr_Occurred()) return NULL;
    if (p.size == 0) Py_RETURN_TRUE;
    ArrayObject *hx = NULL, *hy = NULL;
    if ((p.x.arr && !(hx = host_f64(st, p.x.arr))) || (p.y.arr && !(hy = host_f64(st, p.y.arr)))) {
        Py_XDECREF(hx);
        return NULL;
    }
    ArrayObject *arrs[2] = {hx, hy};
    gd_ewise ew;
    gd_ewise_plan(&ew, opd, arrs, 2, p.ndim, p.shape, p.size, NULL);
    int close;
    Py_BEGIN_ALLOW_THREADS
    close = all_close(&ew, opd, rtol, atol);
    Py_END_ALLOW_THREADS
    Py_XDECREF(hx);
    Py_XDECREF(hy);
    return PyBool_FromLong(close);
}

/* ------------------------------------------------------------------------------------------
 * module functions and methods, generated from the op lists (tables.h)
 * ---------------------------------------------------------------------------------------- */

void gd_binop_rewrite(char *buf, size_t size, gd_binop op)
{
    const gd_binop_info *info = &gd_binop_table[op];
    if (info->symbol) snprintf(buf, size, "a = a %s b", info->symbol);
    else snprintf(buf, size, "a = gd.%s(a, b)", info->name);
}

static PyObject *binary_fn(gd_state *st, PyObject *const *args, Py_ssize_t nargs, gd_binop op)
{
    const char *name = gd_binop_table[op].name;
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "%s(a, b) takes two arguments", name);
        return NULL;
    }
    if (!gd_is_array(st, args[0]) && !gd_is_array(st, args[1])) {
        gd_need_array(st, args[0], name);
        return NULL;
    }
    PyObject *res = gd_binary(st, op, args[0], args[1], NULL);
    if (res == Py_NotImplemented) {
        Py_DECREF(res);
        PyErr_Format(PyExc_TypeError, "%s: unsupported operand types %.100s and %.100s", name,
                     Py_TYPE(args[0])->tp_name, Py_TYPE(args[1])->tp_name);
        return NULL;
    }
    return res;
}

/* For each row: the module function (METH_O or two positional arguments) and the Array method
 * (a.name() or a.name(b)); only the rows flagged FN and METHOD are installed. */
#define GD_UNARY_FUNCS(E, name, ...)                                                           \
    static PyObject *mod_##name(PyObject *module, PyObject *arg)                               \
    {                                                                                          \
        gd_state *st = PyModule_GetState(module);                                              \
        ArrayObject *a = gd_need_array(st, arg, #name);                                        \
        return a ? gd_unary(st, GD_##E, a) : NULL;                                             \
    }                                                                                          \
    static PyObject *meth_##name(PyObject *self, PyObject *Py_UNUSED(ignored))                 \
    {                                                                                          \
        return gd_unary(gd_state_of(self), GD_##E, (ArrayObject *)self);                       \
    }
#define GD_BINARY_FUNCS(E, name, ...)                                                          \
    static PyObject *mod_##name(PyObject *module, PyObject *const *args, Py_ssize_t nargs)     \
    {                                                                                          \
        return binary_fn(PyModule_GetState(module), args, nargs, GD_##E);                       \
    }                                                                                          \
    static PyObject *meth_##name(PyObject *self, PyObject *other)                              \
    {                                                                                          \
        PyObject *args[2] = {self, other};                                                     \
        return binary_fn(gd_state_of(self), args, 2, GD_##E);                                  \
    }
GD_UNARY_OPS(GD_UNARY_FUNCS)
GD_BINARY_OPS(GD_BINARY_FUNCS)

#define GD_UNARY_DEF(E, name, T, F, NP, SYM, DOC) [GD_##E] = GD_METHOD(#name, mod_##name, METH_O, "$module, a, /", DOC),
#define GD_BINARY_DEF(E, name, T, F, NP, SYM, DOC) \
    [GD_##E] = GD_METHOD(#name, GD_FN(mod_##name), METH_FASTCALL, "$module, a, b, /", DOC),
#define GD_UNARY_METH(E, name, T, F, NP, SYM, DOC) \
    [GD_##E] = GD_METHOD(#name, meth_##name, METH_NOARGS, "$self", "As gd." #name "(a): " DOC),
#define GD_BINARY_METH(E, name, T, F, NP, SYM, DOC) \
    [GD_##E] = GD_METHOD(#name, meth_##name, METH_O, "$self, b, /", "As gd." #name "(a, b): " DOC),
static const PyMethodDef unary_defs[GD_NUM_UNOPS] = {GD_UNARY_OPS(GD_UNARY_DEF)};
static const PyMethodDef binary_defs[GD_NUM_BINOPS] = {GD_BINARY_OPS(GD_BINARY_DEF)};
static const PyMethodDef unary_meths[GD_NUM_UNOPS] = {GD_UNARY_OPS(GD_UNARY_METH)};
static const PyMethodDef binary_meths[GD_NUM_BINOPS] = {GD_BINARY_OPS(GD_BINARY_METH)};

#define GD_ALIAS_DEF(KIND, E, alias, DOC)                                                        \
    {#alias, GD_##KIND##_ALIAS_FN(E), GD_##KIND##_ALIAS_FLAGS, GD_##KIND##_ALIAS_DOC(alias, DOC)},
#define GD_UNARY_ALIAS_FN(E) unary_defs[GD_##E].ml_meth
#define GD_BINARY_ALIAS_FN(E) binary_defs[GD_##E].ml_meth
#define GD_UNARY_ALIAS_FLAGS METH_O
#define GD_BINARY_ALIAS_FLAGS METH_FASTCALL
#define GD_UNARY_ALIAS_DOC(alias, DOC) GD_DOC(#alias, "$module, a, /", DOC)
#define GD_BINARY_ALIAS_DOC(alias, DOC) GD_DOC(#alias, "$module, a, b, /", DOC)
#define GD_ALIAS_COUNT(...) +1
enum { GD_NUM_ALIASES = 0 GD_OP_ALIASES(GD_ALIAS_COUNT) };
#define GD_ALIAS_KIND(KIND, E, alias, DOC) {GD_##KIND##_IS_BINARY, GD_##E, #alias},
#define GD_UNARY_IS_BINARY 0
#define GD_BINARY_IS_BINARY 1
static const struct alias_info {
    int binary, op;
    const char *name;
} aliases[GD_NUM_ALIASES] = {GD_OP_ALIASES(GD_ALIAS_KIND)};

/* The module functions of the FN rows and their aliases, collected at setup into one table
 * (PyModule_AddFunctions keeps pointers to it). */
static PyMethodDef op_functions[GD_NUM_UNOPS + GD_NUM_BINOPS + GD_NUM_ALIASES + 1];
/* The Array methods of the METHOD rows, collected the same way. */
static PyMethodDef op_methods[GD_NUM_UNOPS + GD_NUM_BINOPS + 1];

static void collect_op_defs(void)
{
    int nf = 0, nm = 0;
    for (int op = 0; op < GD_NUM_UNOPS; op++) {
        if (gd_unop_table[op].flags & GD_OP_FN) op_functions[nf++] = unary_defs[op];
        if (gd_unop_table[op].flags & GD_OP_METHOD) op_methods[nm++] = unary_meths[op];
    }
    for (int op = 0; op < GD_NUM_BINOPS; op++) {
        if (gd_binop_table[op].flags & GD_OP_FN) op_functions[nf++] = binary_defs[op];
        if (gd_binop_table[op].flags & GD_OP_METHOD) op_methods[nm++] = binary_meths[op];
    }
    const PyMethodDef alias_defs[GD_NUM_ALIASES] = {GD_OP_ALIASES(GD_ALIAS_DEF)};
    for (int k = 0; k < GD_NUM_ALIASES; k++) op_functions[nf++] = alias_defs[k];
    op_functions[nf] = (PyMethodDef){NULL, NULL, 0, NULL};
    op_methods[nm] = (PyMethodDef){NULL, NULL, 0, NULL};
}

/* ------------------------------------------------------------------------------------------
 * _C._ops: the op lists as Python sees them, for the tests and the Python layer
 * ---------------------------------------------------------------------------------------- */

static PyStructSequence_Field op_fields[] = {
    {"name", "gd.<name>, and the name in messages, traces and autograd's RULES"},
    {"id", "the enum value without GD_, e.g. 'EXP'"},
    {"arity", "1 (gd_unop) or 2 (gd_binop)"},
    {"types", "the TYPES column: 'ALL', 'NUMERIC', 'FLOAT', 'BITWISE', 'INT' or 'COMPARE'"},
    {"dtypes", "the dtypes the backends compute it in (the core converts or refuses the others)"},
    {"costly", "whether each element calls the math library"},
    {"function", "whether gd.<name> exists"},
    {"method", "whether Array.<name> exists"},
    {"numpy", "the NumPy ufunc of the same meaning, or None"},
    {"symbol", "its Python operator, or None"},
    {"aliases", "other names of gd.<name>"},
    {NULL, NULL},
};
static PyStructSequence_Desc op_desc = {"gpudev.OpInfo", "One row of the op lists of csrc/tables.h.", op_fields,
                                        11};

static PyObject *op_entry(PyTypeObject *tp, const gd_op_info *info, int arity)
{
    PyObject *e = PyStructSequence_New(tp), *dtypes = PyTuple_New(0), *al = PyTuple_New(0);
    if (!e || !dtypes || !al) goto fail;
    for (int t = 0; t < GD_NUM_DTYPES; t++) {
        if (!gd_op_flags_defined(info->flags, (gd_dtype)t)) continue;
        PyObject *n = PyUnicode_FromString(gd_dtype_name((gd_dtype)t));
        if (!n || _PyTuple_Resize(&dtypes, PyTuple_GET_SIZE(dtypes) + 1) < 0) { Py_XDECREF(n); goto fail; }
        PyTuple_SET_ITEM(dtypes, PyTuple_GET_SIZE(dtypes) - 1, n);
    }
    for (int k = 0; k < GD_NUM_ALIASES; k++) {
        if (aliases[k].binary != (arity == 2) || aliases[k].op != info->op) continue;
        PyObject *n = PyUnicode_FromString(aliases[k].name);
        if (!n || _PyTuple_Resize(&al, PyTuple_GET_SIZE(al) + 1) < 0) { Py_XDECREF(n); goto fail; }
        PyTuple_SET_ITEM(al, PyTuple_GET_SIZE(al) - 1, n);
    }
    PyObject *values[] = {
        PyUnicode_FromString(info->name), PyUnicode_FromString(info->id), PyLong_FromLong(arity),
        PyUnicode_FromString(info->types), dtypes, PyBool_FromLong((info->flags & GD_OP_COSTLY) != 0),
        PyBool_FromLong((info->flags & GD_OP_FN) != 0), PyBool_FromLong((info->flags & GD_OP_METHOD) != 0),
        info->numpy ? PyUnicode_FromString(info->numpy) : Py_NewRef(Py_None),
        info->symbol ? PyUnicode_FromString(info->symbol) : Py_NewRef(Py_None), al,
    };
    dtypes = al = NULL; /* owned by values[] now */
    int ok = 1;
    for (int i = 0; i < 11; i++) {
        if (!values[i]) ok = 0;
        PyStructSequence_SetItem(e, i, values[i]);
    }
    if (ok) return e;
fail:
    Py_XDECREF(e);
    Py_XDECREF(dtypes);
    Py_XDECREF(al);
    return NULL;
}

static int add_op_list(PyObject *module)
{
    PyTypeObject *tp = PyStructSequence_NewType(&op_desc);
    PyObject *list = tp ? PyTuple_New(GD_NUM_UNOPS + GD_NUM_BINOPS) : NULL;
    int rc = -1;
    if (!list) goto done;
    for (int op = 0; op < GD_NUM_UNOPS + GD_NUM_BINOPS; op++) {
        const int unary = op < GD_NUM_UNOPS;
        PyObject *e = op_entry(tp, unary ? &gd_unop_table[op] : &gd_binop_table[op - GD_NUM_UNOPS], unary ? 1 : 2);
        if (!e) goto done;
        PyTuple_SET_ITEM(list, op, e);
    }
    rc = PyModule_AddObjectRef(module, "_ops", list);
done:
    Py_XDECREF(list);
    Py_XDECREF(tp);
    return rc;
}

/* _C._ewise(name, a[, b]): any operation of the op lists by name, the ones without a module
 * function included, so that the tests reach every row. */
static PyObject *mod_ewise(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    gd_state *st = PyModule_GetState(module);
    const char *name = nargs >= 1 && PyUnicode_Check(args[0]) ? PyUnicode_AsUTF8(args[0]) : NULL;
    if (name && nargs == 2) {
        for (int op = 0; op < GD_NUM_UNOPS; op++)
            if (!strcmp(gd_unop_table[op].name, name)) return unary_defs[op].ml_meth(module, args[1]);
    } else if (name && nargs == 3) {
        for (int op = 0; op < GD_NUM_BINOPS; op++)
            if (!strcmp(gd_binop_table[op].name, name)) return binary_fn(st, args + 1, 2, (gd_binop)op);
    }
    if (!PyErr_Occurred())
        PyErr_SetString(PyExc_TypeError, "_ewise(name, a[, b]): name is a unary (one operand) or binary (two) "
                                         "operation of gd._C._ops");
    return NULL;
}

static PyObject *mod_allclose(PyObject *module, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"a", "b", "rtol", "atol", NULL};
    gd_state *st = PyModule_GetState(module);
    PyObject *a, *b;
    double rtol = 1e-5, atol = 1e-8;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO|dd:allclose", kwlist, &a, &b, &rtol, &atol)) return NULL;
    if (!gd_is_array(st, a) && !gd_is_array(st, b)) {
        gd_need_array(st, a, "allclose");
        return NULL;
    }
    return allclose(st, a, b, rtol, atol);
}

/* ------------------------------------------------------------------------------------------
 * _C._axpby(y, beta, x, alpha): y = beta * y + alpha * x in place, one backend call with no
 * temporary (the backend's axpby), for the optimizers and add_/sub_(alpha=). It takes only
 * what that call can do: float arrays of one dtype, shape and device, both C-contiguous, x
 * equal to y or apart from it, nothing to record for autograd, real beta and alpha. For
 * anything else it returns NotImplemented and the caller writes the two operations out,
 * which give the same bits (gpudev.h, axpby).
 * ---------------------------------------------------------------------------------------- */

static int axpby_fits(gd_state *st, PyObject *yo, PyObject *xo)
{
    if (!gd_is_array(st, yo) || !gd_is_array(st, xo) || gd_ag_wanted(st, yo, xo)) return 0;
    const ArrayObject *y = (const ArrayObject *)yo, *x = (const ArrayObject *)xo;
    return gd_dtype_is_float(y->dtype) && x->dtype == y->dtype && y->contiguous && x->contiguous &&
           gd_same_shape(x, y) && gd_device_eq(x->device, y->device) &&
           (x->data == y->data || !gd_overlaps(x, y));
}

static int axpby_factor(PyObject *o, double *out)
{
    if (PyBool_Check(o) || !(PyFloat_Check(o) || PyLong_Check(o))) return 0;
    *out = PyFloat_AsDouble(o);
    return !(*out == -1.0 && PyErr_Occurred());
}

static PyObject *mod_axpby(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    gd_state *st = PyModule_GetState(module);
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "_axpby(y, beta, x, alpha) takes 4 arguments");
        return NULL;
    }
    gd_scalar beta, alpha;
    if (!axpby_fits(st, args[0], args[2]) || !axpby_factor(args[1], &beta.f) || !axpby_factor(args[3], &alpha.f)) {
        if (PyErr_Occurred()) PyErr_Clear(); /* an int too large for a double: the written-out form says so */
        Py_RETURN_NOTIMPLEMENTED;
    }
    ArrayObject *y = (ArrayObject *)args[0], *x = (ArrayObject *)args[2];
    const gd_backend *be = gd_backend_of(st, y->device, "axpby");
    if (!be) return NULL;
    gd_bump_version(st, y);
    if (y->size > 0) {
        gd_error err;
        PyThreadState *ts = gd_run_begin(y->device, (double)y->size);
        int rc = be->axpby(y->data, y->dtype, beta, x->data, alpha, y->size, y->device.index, &err);
        if (gd_run_end(st, y->device, ts, rc, &err, "axpby") < 0) return NULL;
    }
    if (gd_trace_op(st, "axpby", y, y, x) < 0) return NULL;
    return Py_NewRef((PyObject *)y);
}

static PyMethodDef elementwise_functions[] = {
    GD_METHOD("allclose", GD_FN(mod_allclose), METH_VARARGS | METH_KEYWORDS, "$module, a, b, rtol=1e-05, atol=1e-08",
              "Whether a and b are equal to within the tolerances, as numpy.allclose."),
    {"_ewise", GD_FN(mod_ewise), METH_FASTCALL, "_ewise(name, a[, b]): any elementwise operation by name"},
    {"_axpby", GD_FN(mod_axpby), METH_FASTCALL,
     "_axpby(y, beta, x, alpha): y = beta * y + alpha * x in place, or NotImplemented"},
    {NULL, NULL, 0, NULL},
};

int gd_elementwise_setup(PyObject *module, gd_state *st)
{
    collect_op_defs();
    if (PyModule_AddFunctions(module, op_functions) < 0 || PyModule_AddFunctions(module, elementwise_functions) < 0 ||
        add_op_list(module) < 0)
        return -1;
    return gd_array_add_methods(st, op_methods);
}
