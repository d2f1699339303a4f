/* select.h - what select.c offers the other files of the core (core.h has the module state
 * and the objects). Nothing here is public API.
 */
#ifndef GPUDEV_CORE_SELECT_H
#define GPUDEV_CORE_SELECT_H

#include "core.h"
#include "args.h"

/* ------------------------------------------------------------------------------------------
 * select.c: where, argmax, argmin
 * ---------------------------------------------------------------------------------------- */

int gd_select_setup(PyObject *module);

GD_SIGNATURE_EXTERN(gd_array_argmax_sig);
GD_SIGNATURE_EXTERN(gd_array_argmin_sig);
PyObject *gd_array_argmax(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames);
PyObject *gd_array_argmin(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames);

#endif /* GPUDEV_CORE_SELECT_H */
