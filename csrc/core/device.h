/* device.h - what device.c offers the other files of the core (core.h has the module state
 * and the objects). Nothing here is public API.
 */
#ifndef GPUDEV_CORE_DEVICE_H
#define GPUDEV_CORE_DEVICE_H

#include "core.h"

/* ------------------------------------------------------------------------------------------
 * device.c: the Device type and device arguments
 * ---------------------------------------------------------------------------------------- */

int gd_device_setup(PyObject *module, gd_state *st);
/* Parse a Device, 'cpu', 'cuda', 'cuda:N' or None (-> *out unchanged, returns 0). -1 on error. */
int gd_parse_device(gd_state *st, PyObject *obj, gd_device *out);
/* A GPU index argument: an int (a bool is refused) in [0, GD_MAX_GPUS). -1 with TypeError or
 * ValueError naming `op`. */
int gd_parse_gpu_index(int *out, PyObject *obj, const char *op);
PyObject *gd_device_object(gd_state *st, gd_device dev); /* new reference */
/* Append the Device object for `dev` to `list`; -1 on error. */
int gd_list_append_device(gd_state *st, PyObject *list, gd_device dev);
static inline int gd_device_eq(gd_device a, gd_device b) { return a.type == b.type && a.index == b.index; }
/* DeviceMismatchError "op: operands are on different devices, A and B; copy one ...". */
void gd_raise_device_mismatch(gd_state *st, const char *op, gd_device first, gd_device second);

#endif /* GPUDEV_CORE_DEVICE_H */
