/* index.h - what index.c offers the other files of the core (core.h has the module state
 * and the objects). Nothing here is public API.
 */
#ifndef GPUDEV_CORE_INDEX_H
#define GPUDEV_CORE_INDEX_H

#include "core.h"

/* ------------------------------------------------------------------------------------------
 * index.c: indexing and reshaping views; Array methods and slots
 * ---------------------------------------------------------------------------------------- */

PyObject *gd_array_subscript(PyObject *self, PyObject *key);
int gd_array_ass_subscript(PyObject *self, PyObject *key, PyObject *value);
Py_ssize_t gd_array_length(PyObject *self);
PyObject *gd_array_sq_item(PyObject *self, Py_ssize_t i);
PyObject *gd_array_reshape(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *gd_array_flatten(PyObject *self, PyObject *ignored);
PyObject *gd_array_ravel(PyObject *self, PyObject *ignored);

#endif /* GPUDEV_CORE_INDEX_H */
