/* sync.h - what sync.c offers the other files of the core (core.h has the module state
 * and the objects). Nothing here is public API.
 */
#ifndef GPUDEV_CORE_SYNC_H
#define GPUDEV_CORE_SYNC_H

#include "core.h"

/* ------------------------------------------------------------------------------------------
 * sync.c: synchronize(), _sync, the GPUs with queued or recent work
 * ---------------------------------------------------------------------------------------- */

int gd_sync_setup(PyObject *module);

/* A backend call that blocks until the device is idle (synchronize, empty_cache, ...), run
 * without the GIL; it clears the device's pending flag first (and sets it again if the call
 * fails). Nothing to do when `call` is NULL. 0, or -1 with the exception naming op. */
int gd_wait(gd_state *st, int (*call)(int device, gd_error *err), gd_device dev, const char *op);

/* Synchronize one device (recording a trace event with `cause` when tracing). -1 on
 * error. */
int gd_sync_device(gd_state *st, gd_device dev, const char *cause);

#endif /* GPUDEV_CORE_SYNC_H */
