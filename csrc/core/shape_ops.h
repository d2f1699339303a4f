/* shape_ops.h - what shape_ops.c offers the other files of the core (core.h has the module state
 * and the objects). Nothing here is public API.
 */
#ifndef GPUDEV_CORE_SHAPE_OPS_H
#define GPUDEV_CORE_SHAPE_OPS_H

#include "core.h"

/* ------------------------------------------------------------------------------------------
 * shape_ops.c: transpose, concatenate, stack
 * ---------------------------------------------------------------------------------------- */

int gd_shape_ops_setup(PyObject *module);
/* A view with the axes reversed (axes == NULL) or permuted as axes (a tuple). */
PyObject *gd_transpose(gd_state *st, ArrayObject *a, PyObject *axes);

PyObject *gd_array_transpose(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *gd_array_permute(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *gd_array_swapaxes(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *gd_array_mT(PyObject *self, void *closure);

#endif /* GPUDEV_CORE_SHAPE_OPS_H */
