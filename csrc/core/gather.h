/* gather.h - what gather.c offers the other files of the core (core.h has the module state
 * and the objects). Nothing here is public API.
 */
#ifndef GPUDEV_CORE_GATHER_H
#define GPUDEV_CORE_GATHER_H

#include "core.h"

/* ------------------------------------------------------------------------------------------
 * gather.c: indexing that copies (masks and integer index arrays), nonzero
 * ---------------------------------------------------------------------------------------- */

int gd_gather_setup(PyObject *module);
/* a[key] for a mask or index array key: 1 with *out the copy, 0 when key is a basic index
 * (nothing done), -1 with an exception. */
int gd_take(PyObject **out, gd_state *st, ArrayObject *a, PyObject *key);
/* a[key] = value for a mask or index array key: 1 done, 0 basic key, -1 with an exception
 * (then a is unchanged). */
int gd_put(gd_state *st, ArrayObject *a, PyObject *key, PyObject *value);
/* The int64 positions (C order) of mask's nonzero elements, 1-D, on mask's device. */
PyObject *gd_nonzero_flat(gd_state *st, ArrayObject *mask, const char *op);
PyObject *gd_array_nonzero(PyObject *self, PyObject *ignored);

#endif /* GPUDEV_CORE_GATHER_H */
