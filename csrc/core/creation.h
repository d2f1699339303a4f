/* creation.h - what creation.c offers the other files of the core (core.h has the module state
 * and the objects). Nothing here is public API.
 */
#ifndef GPUDEV_CORE_CREATION_H
#define GPUDEV_CORE_CREATION_H

#include "core.h"

/* ------------------------------------------------------------------------------------------
 * creation.c: zeros, ones, empty, full, arange, rand, randn, array, asarray
 * ---------------------------------------------------------------------------------------- */

int gd_creation_setup(PyObject *module);

#endif /* GPUDEV_CORE_CREATION_H */
