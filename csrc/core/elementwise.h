/* elementwise.h - what elementwise.c offers the other files of the core (core.h has the module state
 * and the objects). Nothing here is public API.
 */
#ifndef GPUDEV_CORE_ELEMENTWISE_H
#define GPUDEV_CORE_ELEMENTWISE_H

#include "core.h"
#include "args.h"

/* ------------------------------------------------------------------------------------------
 * elementwise.c: unary and binary operations, astype, allclose
 * ---------------------------------------------------------------------------------------- */

int gd_elementwise_setup(PyObject *module, gd_state *st);
/* The in-place error's hint for op: "a = a + b", or "a = gd.maximum(a, b)" without an operator. */
void gd_binop_rewrite(char *buf, size_t size, gd_binop op);

/* a op b with NumPy broadcasting and NumPy 2 promotion. a, b: Array or Python/NumPy scalar.
 * inplace: the target of `a op= b` (then a is inplace) or NULL. Returns a new reference:
 * the result (inplace itself for in-place forms), Py_NotImplemented for foreign types, or
 * NULL with an exception. */
PyObject *gd_binary(gd_state *st, gd_binop op, PyObject *a, PyObject *b, ArrayObject *inplace);
/* op(a) elementwise; a is an Array. Integers become float64 for float-only operations. */
PyObject *gd_unary(gd_state *st, gd_unop op, ArrayObject *a);
/* a converted to dtype (a new array; or a itself with a new reference when copy == 0 and the
 * dtype already matches). */
PyObject *gd_astype(gd_state *st, ArrayObject *a, gd_dtype dtype, int copy);
/* a.astype(dtype, copy=True), for the type's method table */
GD_SIGNATURE_EXTERN(gd_array_astype_sig);
PyObject *gd_array_astype_method(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames);

#endif /* GPUDEV_CORE_ELEMENTWISE_H */
