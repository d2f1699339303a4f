/* services.h - what services.c offers the other files of the core (core.h has the module state
 * and the objects). Nothing here is public API.
 */
#ifndef GPUDEV_CORE_SERVICES_H
#define GPUDEV_CORE_SERVICES_H

#include "core.h"

/* ------------------------------------------------------------------------------------------
 * services.c: device services of the backend table (memory statistics, caches, device
 * properties, events) as module functions
 * ---------------------------------------------------------------------------------------- */

int gd_services_setup(PyObject *module);
/* Wait for all work on GPU dev, on every stream of the process (synchronize_all, else
 * synchronize), so gpudev's stream may read memory another library wrote. -1 on error. */
int gd_sync_whole_device(gd_state *st, gd_device dev, const char *op);

#endif /* GPUDEV_CORE_SERVICES_H */
