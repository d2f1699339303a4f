/* assign.h - what assign.c offers the other files of the core (core.h has the module state
 * and the objects). Nothing here is public API.
 */
#ifndef GPUDEV_CORE_ASSIGN_H
#define GPUDEV_CORE_ASSIGN_H

#include "core.h"

/* ------------------------------------------------------------------------------------------
 * assign.c: dst[...] = value
 * ---------------------------------------------------------------------------------------- */

/* dst[...] = value, broadcasting value (Array on dst's device, or scalar) to dst's shape and
 * casting to dst's dtype as NumPy's setitem does (unsafe casting: floats truncate into ints).
 * -1 on error. */
int gd_assign(gd_state *st, ArrayObject *dst, PyObject *value, const char *op);

#endif /* GPUDEV_CORE_ASSIGN_H */
