/* reduce.h - what reduce.c offers the other files of the core (core.h has the module state
 * and the objects). Nothing here is public API.
 */
#ifndef GPUDEV_CORE_REDUCE_H
#define GPUDEV_CORE_REDUCE_H

#include "core.h"
#include "args.h"

/* ------------------------------------------------------------------------------------------
 * reduce.c: sum, mean, max, min, norm
 * ---------------------------------------------------------------------------------------- */

int gd_reduce_setup(PyObject *module);

GD_SIGNATURE_EXTERN(gd_array_sum_sig);
GD_SIGNATURE_EXTERN(gd_array_mean_sig);
GD_SIGNATURE_EXTERN(gd_array_max_sig);
GD_SIGNATURE_EXTERN(gd_array_min_sig);
GD_SIGNATURE_EXTERN(gd_array_any_sig);
GD_SIGNATURE_EXTERN(gd_array_all_sig);
PyObject *gd_array_sum(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames);
PyObject *gd_array_mean(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames);
PyObject *gd_array_max(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames);
PyObject *gd_array_any(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames);
PyObject *gd_array_all(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames);
PyObject *gd_array_min(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames);

#endif /* GPUDEV_CORE_REDUCE_H */
