/* array_type.h - what array_type.c offers the other files of the core (core.h has the module state
 * and the objects). Nothing here is public API.
 */
#ifndef GPUDEV_CORE_ARRAY_TYPE_H
#define GPUDEV_CORE_ARRAY_TYPE_H

#include "core.h"

/* ------------------------------------------------------------------------------------------
 * array_type.c: the Array type (attributes, number protocol, method table, slots)
 * ---------------------------------------------------------------------------------------- */

int gd_array_setup(PyObject *module, gd_state *st);

#endif /* GPUDEV_CORE_ARRAY_TYPE_H */
