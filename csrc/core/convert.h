/* convert.h - what convert.c offers the other files of the core (core.h has the module state
 * and the objects). Nothing here is public API.
 */
#ifndef GPUDEV_CORE_CONVERT_H
#define GPUDEV_CORE_CONVERT_H

#include "core.h"

/* ------------------------------------------------------------------------------------------
 * convert.c: Arrays from Python objects and NumPy data
 * ---------------------------------------------------------------------------------------- */

/* array(obj) / asarray(obj): obj converted to an Array of `dtype_obj` (None: inferred) on
 * `dev` (has_device == 0: where obj is, the CPU for non-Arrays). copy: 1 always copies; 0
 * shares memory when it can (an Array already right, a NumPy array on the CPU). */
/* gpudev's bool arrays hold the bytes 0 and 1 only, as kernels such as sums, comparisons and
 * argmax read them raw. Memory that comes from outside (NumPy, DLPack) may hold any byte:
 * a itself (a new reference) when every byte is 0 or 1, else a copy in which every nonzero
 * byte is 1, as NumPy reads them. Arrays of other dtypes are returned as they are. */
ArrayObject *gd_canonical_bools(gd_state *st, ArrayObject *a, const char *op);
PyObject *gd_array_from_object(gd_state *st, PyObject *obj, PyObject *dtype_obj, gd_device dev, int has_device,
                               int copy, const char *op);

#endif /* GPUDEV_CORE_CONVERT_H */
