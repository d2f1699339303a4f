/* assign.c - assignment, dst[...] = value: a scalar fills, an Array is broadcast and cast
 * into the target as NumPy's setitem does. Below the operations that assign (indexing,
 * gathers, autograd's .data) and above compute.c, which does the copies.
 */
#include "assign.h"
#include "core.h"
#include "array.h"
#include "compute.h"
#include "device.h"
#include "operand.h"
#include "runtime.h"
#include "shape.h"
#include "trace.h"

#include <string.h>

/* ------------------------------------------------------------------------------------------
 * assignment: dst[...] = value
 * ---------------------------------------------------------------------------------------- */

/* NumPy's setitem broadcast: the value's shape right-aligned onto the target's, where extra
 * leading axes of the value must have length 1. */
static int check_assign_shape(const ArrayObject *dst, const ArrayObject *v, const char *op)
{
    for (int j = 0; j < v->ndim; j++) {
        int k = j - (v->ndim - dst->ndim);
        if (k < 0 ? v->shape[j] != 1 : (v->shape[j] != 1 && v->shape[j] != dst->shape[k])) {
            char s0[256], s1[256];
            PyErr_Format(PyExc_ValueError, "%s: could not broadcast input array from shape %s into shape %s",
                         op, gd_shape_str(v->ndim, v->shape, s0), gd_shape_str(dst->ndim, dst->shape, s1));
            return -1;
        }
    }
    return 0;
}

/* dst[...] = v for an Array v on dst's device whose shape fits; a v that overlaps dst in
 * another layout is copied first (NumPy reads the whole value before writing). */
static int assign_array(gd_state *st, const gd_backend *be, ArrayObject *dst, ArrayObject *v, const char *op)
{
    ArrayObject *tmp = NULL;
    if (v->dtype == dst->dtype && gd_overlaps(v, dst)) {
        if (gd_same_layout(v, dst)) return 0; /* a[...] = a */
        if (!(v = tmp = gd_converted(st, be, v, dst->dtype, op))) return -1;
    }
    int rc = gd_store(st, be, dst, v, op);
    Py_XDECREF(tmp);
    return rc;
}

int gd_assign(gd_state *st, ArrayObject *dst, PyObject *value, const char *op)
{
    gd_opinfo x;
    int r = gd_classify(st, value, &x, op);
    if (r < 0) return -1;
    if (r > 0) {
        PyErr_Format(PyExc_TypeError, "%s: cannot assign %s to a gpudev Array; give a number or an Array",
                     op, Py_TYPE(value)->tp_name);
        return -1;
    }
    const gd_backend *be = gd_backend_of(st, dst->device, op);
    if (!be) return -1;
    gd_bump_version(st, dst);
    if (!x.arr) {
        gd_scalar s;
        if (gd_scalar_assign(&s, &x, dst->dtype, op) < 0 || gd_fill(st, be, dst, s, op) < 0)
            return -1;
    } else {
        if (!gd_device_eq(x.arr->device, dst->device)) {
            char d0[32], d1[32], to[32];
            PyErr_Format(st->DeviceMismatchError,
                         "%s: the value is on %s but the array is on %s; copy it first, e.g. value.to('%s')",
                         op, gd_device_label(st, x.arr->device, d0), gd_device_label(st, dst->device, d1),
                         gd_device_str(dst->device, to));
            return -1;
        }
        if (check_assign_shape(dst, x.arr, op) < 0) return -1;
        if (dst->size && assign_array(st, be, dst, x.arr, op) < 0) return -1;
    }
    return gd_trace_op(st, "assign", dst, x.arr, NULL);
}
