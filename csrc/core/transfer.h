/* transfer.h - what transfer.c offers the other files of the core (core.h has the module state
 * and the objects). Nothing here is public API.
 */
#ifndef GPUDEV_CORE_TRANSFER_H
#define GPUDEV_CORE_TRANSFER_H

#include "core.h"
#include "args.h"

/* ------------------------------------------------------------------------------------------
 * transfer.c: copies between devices and to NumPy; Array methods and slots
 * ---------------------------------------------------------------------------------------- */

/* A copy of `a` on `dst` (records the copy when tracing). */
ArrayObject *gd_array_to_device(gd_state *st, ArrayObject *a, gd_device dst, const char *op);
/* 0 when NumPy can describe a (a view, a copy, a DLPack import), else -1 with `exc_type`
 * naming op and the shape: an empty array whose nonzero dimensions span more than 2**63 - 1
 * bytes has no NumPy twin. */
int gd_check_host_extent(const ArrayObject *a, PyObject *exc_type, const char *op);
/* `n` bytes from host memory into a's storage (a synchronizing upload for GPU arrays). */
int gd_upload(gd_state *st, ArrayObject *a, const void *host, size_t n, const char *op);

GD_SIGNATURE_EXTERN(gd_array_to_sig);
GD_SIGNATURE_EXTERN(gd_array_cuda_sig);
GD_SIGNATURE_EXTERN(gd_array_dunder_array_sig);
PyObject *gd_array_to(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames);
PyObject *gd_array_cpu(PyObject *self, PyObject *ignored);
PyObject *gd_array_cuda(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames);
PyObject *gd_array_numpy(PyObject *self, PyObject *ignored);
PyObject *gd_array_dunder_array(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames);
PyObject *gd_array_item(PyObject *self, PyObject *ignored);
PyObject *gd_array_tolist(PyObject *self, PyObject *ignored);
PyObject *gd_array_copy(PyObject *self, PyObject *ignored);
PyObject *gd_array_dunder_deepcopy(PyObject *self, PyObject *memo);
PyObject *gd_array_repr(PyObject *self);
PyObject *gd_array_str(PyObject *self);
/* The module functions of transfer.c (_to_host). 0 or -1. */
int gd_transfer_setup(PyObject *module);
/* format(a, spec): a 0-d array formats as its element (a host read), any array as str(a)
 * with an empty spec, as in NumPy and PyTorch. */
PyObject *gd_array_format(PyObject *self, PyObject *spec);
int gd_array_getbuffer(PyObject *self, Py_buffer *view, int flags);
void gd_array_releasebuffer(PyObject *self, Py_buffer *view);

#endif /* GPUDEV_CORE_TRANSFER_H */
