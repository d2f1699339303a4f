/* interchange.h - what dlpack.c offers the other files of the core (core.h has the module state
 * and the objects). Nothing here is public API.
 */
#ifndef GPUDEV_CORE_INTERCHANGE_H
#define GPUDEV_CORE_INTERCHANGE_H

#include "core.h"
#include "args.h"

/* ------------------------------------------------------------------------------------------
 * dlpack.c: DLPack interchange with NumPy, PyTorch, CuPy, ...
 * ---------------------------------------------------------------------------------------- */

int gd_dlpack_setup(PyObject *module);
/* a.__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None) -> PyCapsule */
GD_SIGNATURE_EXTERN(gd_array_dlpack_sig);
PyObject *gd_array_dlpack(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames);
/* a.__dlpack_device__() -> (1, 0) for the CPU, (2, i) for cuda:i */
PyObject *gd_array_dlpack_device(PyObject *self, PyObject *ignored);
/* The memory of `array` (an Array, or a view of one) goes to another library whose queued
 * work gpudev cannot order against: its owner's free (an Array's, or the keeper of memory
 * gpudev imported and now passes on) will wait for the whole device. */
/* a.__cuda_array_interface__ (GPU arrays; synchronizes, marks the owner exported) */
PyObject *gd_array_cuda_array_interface(PyObject *self, void *closure);
void gd_mark_exported(gd_state *st, ArrayObject *array);

#endif /* GPUDEV_CORE_INTERCHANGE_H */
