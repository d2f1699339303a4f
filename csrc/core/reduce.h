/* reduce.h - what reduce.c offers the other files of the core (core.h has the module state
 * and the objects). Nothing here is public API.
 */
#ifndef GPUDEV_CORE_REDUCE_H
#define GPUDEV_CORE_REDUCE_H

#include "core.h"
#include "args.h"

/* ------------------------------------------------------------------------------------------
 * reduce.c: the reduction list's methods (sum, max, min, ...), mean, any, all, norm
 * ---------------------------------------------------------------------------------------- */

int gd_reduce_setup(PyObject *module);

/* Array.<name> of each row of the reduction list (tables.h) with a method, then the others */
#define GD_REDUCTION_DECLARE(E, name, MERGE, IDENTITY, ACC, ENTRY, NUMPY, NOUN, DOC) \
    GD_REDUCTION_DECLARE_##ENTRY(name)
#define GD_REDUCTION_DECLARE_NONE(name)
#define GD_REDUCTION_DECLARE_METHOD(name)  \
    GD_SIGNATURE_EXTERN(gd_array_##name##_sig); \
    PyObject *gd_array_##name(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames);
#define GD_REDUCTION_DECLARE_METHOD_DTYPE GD_REDUCTION_DECLARE_METHOD
GD_REDUCTIONS(GD_REDUCTION_DECLARE)
#undef GD_REDUCTION_DECLARE
#undef GD_REDUCTION_DECLARE_NONE
#undef GD_REDUCTION_DECLARE_METHOD
#undef GD_REDUCTION_DECLARE_METHOD_DTYPE
GD_SIGNATURE_EXTERN(gd_array_mean_sig);
GD_SIGNATURE_EXTERN(gd_array_any_sig);
GD_SIGNATURE_EXTERN(gd_array_all_sig);
PyObject *gd_array_mean(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames);
PyObject *gd_array_any(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames);
PyObject *gd_array_all(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames);

#endif /* GPUDEV_CORE_REDUCE_H */
