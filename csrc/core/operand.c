/* operand.c - the operands of elementwise operations as NumPy 2 sees them: Arrays and NumPy
 * scalars are strong (their dtype counts), Python ints and floats are weak (they adapt to the
 * array's dtype); promotion between them; and scalar values converted to a compute dtype or,
 * as setitem does, cast into an array's dtype.
 */
#include "operand.h"
#include "core.h"
#include "array.h"

#include <float.h>
#include <math.h>

/* ------------------------------------------------------------------------------------------
 * classifying operands
 * ---------------------------------------------------------------------------------------- */

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

static int weak_int(gd_opinfo *x, PyObject *o)
{
    int overflow;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (v == -1 && PyErr_Occurred()) return -1;
    x->kind = OPD_WEAK_INT;
    x->big = overflow != 0;
    x->i = v;
    return 0;
}

/* NumPy scalars keep their dtype (NumPy 2's NEP 50): float32/float64, int32 and bool as they
 * are, the other integers as int64, float16 as float32. 1 when o is no NumPy scalar. */
static int numpy_scalar(gd_opinfo *x, PyObject *o, const char *op)
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
    if (kind == 'b') {
        x->dtype = GD_BOOL;
        x->i = PyObject_IsTrue(o);
        return x->i < 0 ? -1 : 0;
    }
    if (kind == 'i' || (kind == 'u' && itemsize <= 4)) {
        PyObject *v = PyNumber_Long(o);
        if (!v) return -1;
        x->i = PyLong_AsLongLong(v);
        Py_DECREF(v);
        if (x->i == -1 && PyErr_Occurred()) return -1;
        x->dtype = kind == 'i' && itemsize == 4 ? GD_INT32 : GD_INT64;
        x->small_int = itemsize <= 2;
        return 0;
    }
    PyErr_Format(PyExc_TypeError,
                 "%s: %s scalars are not supported; gpudev computes in float32, float64, int64, int32 and bool, "
                 "so convert it first with float(x) or int(x)",
                 op, Py_TYPE(o)->tp_name);
    return -1;
}

int gd_classify(gd_state *st, PyObject *o, gd_opinfo *x, const char *op)
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
    if (PyBool_Check(o)) {
        x->kind = OPD_WEAK_BOOL;
        x->i = o == Py_True;
        return 0;
    }
    if (PyLong_CheckExact(o)) return weak_int(x, o);
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

static inline int is_strong(const gd_opinfo *x) { return x->kind == OPD_ARRAY || x->kind == OPD_SCALAR; }

gd_dtype gd_promote_dtypes(gd_dtype a, gd_dtype b)
{
    if (a == b) return a;
    if (gd_dtype_is_bool(a) || gd_dtype_is_bool(b)) return gd_dtype_is_bool(a) ? b : a;
    if (gd_dtype_is_int(a) && gd_dtype_is_int(b)) return GD_INT64;
    return GD_FLOAT64; /* float32 with float64; an integer with a float (int32 + float32 too) */
}

gd_dtype gd_promote(const gd_opinfo *x, const gd_opinfo *y)
{
    if (is_strong(x) && is_strong(y)) {
        /* int8 + float32 is float32 and int16 + int32 is int32 in NumPy: the wider type holds
         * every small integer exactly. */
        const gd_opinfo *small = x->small_int ? x : y->small_int ? y : NULL, *other = small == x ? y : x;
        if (small && !other->small_int && (other->dtype == GD_FLOAT32 || other->dtype == GD_INT32))
            return other->dtype;
        return gd_promote_dtypes(x->dtype, y->dtype);
    }
    const gd_opinfo *s = is_strong(x) ? x : y, *w = is_strong(x) ? y : x;
    if (w->kind == OPD_WEAK_FLOAT && !gd_dtype_is_float(s->dtype)) return GD_FLOAT64;
    if (w->kind == OPD_WEAK_INT && s->dtype == GD_BOOL) return GD_INT64;
    return s->dtype;
}

int gd_int_fits(const gd_opinfo *x, gd_dtype dt)
{
    if ((x->kind != OPD_WEAK_INT && !(x->kind == OPD_SCALAR && gd_dtype_is_int(x->dtype))) || !gd_dtype_is_int(dt))
        return 1;
    if (x->big) return 0;
    return dt != GD_INT32 || (x->i >= INT32_MIN && x->i <= INT32_MAX);
}

/* ------------------------------------------------------------------------------------------
 * scalar values
 * ---------------------------------------------------------------------------------------- */

/* A float scalar: a Python float or a NumPy floating-point scalar. */
static inline int is_float_scalar(const gd_opinfo *x)
{
    return x->kind == OPD_WEAK_FLOAT || (x->kind == OPD_SCALAR && gd_dtype_is_float(x->dtype));
}

int gd_scalar_to(gd_scalar *out, const gd_opinfo *x, gd_dtype dt)
{
    if (!gd_dtype_is_float(dt)) {
        out->i = x->i;
        return 0;
    }
    double v;
    if (is_float_scalar(x)) {
        v = x->f;
    } else if (x->big) {
        v = PyLong_AsDouble(x->obj);
        if (v == -1.0 && PyErr_Occurred()) return -1;
    } else {
        v = (double)x->i;
    }
    out->f = dt == GD_FLOAT32 ? gd_round_f32(v) : v;
    return 0;
}

/* Past the rounding midpoint above FLT_MAX lies infinity. */
double gd_round_f32(double v)
{
    if (isfinite(v) && fabs(v) > FLT_MAX)
        return copysign(fabs(v) < 0x1.ffffffp127 ? FLT_MAX : INFINITY, v);
    return (double)(float)v;
}

int gd_scalar_assign(gd_scalar *out, const gd_opinfo *x, gd_dtype dt, const char *op)
{
    if (gd_dtype_is_float(dt)) return gd_scalar_to(out, x, dt);
    if (dt == GD_BOOL) { /* nonzero is true, as NumPy casts */
        out->i = is_float_scalar(x) ? x->f != 0.0 : x->big || x->i != 0;
        return 0;
    }
    if (!is_float_scalar(x)) {
        if (!gd_int_fits(x, dt)) { /* NumPy integers too: NumPy's setitem range-checks them */
            PyErr_Format(PyExc_OverflowError, "%s: Python integer %S out of bounds for %s", op, x->obj,
                         gd_dtype_name(dt));
            return -1;
        }
        out->i = x->i;
        return 0;
    }
    if (isnan(x->f)) {
        PyErr_Format(PyExc_ValueError, "%s: cannot convert float NaN to integer", op);
        return -1;
    }
    /* int64 holds [-2**63, 2**63), int32 [-2**31, 2**31) */
    const double bound = dt == GD_INT32 ? 0x1p31 : 0x1p63;
    if (!(x->f >= -bound && x->f < bound)) {
        PyErr_Format(PyExc_OverflowError, "%s: cannot convert float %R to %s (out of range)", op, x->obj,
                     gd_dtype_name(dt));
        return -1;
    }
    out->i = (int64_t)x->f;
    return 0;
}

double gd_scalar_f64(const gd_opinfo *x)
{
    if (is_float_scalar(x)) return x->f;
    return x->big ? PyLong_AsDouble(x->obj) : (double)x->i;
}
