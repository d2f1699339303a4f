/* trace.h - what trace.c offers the other files of the core (core.h has the module state
 * and the objects). Nothing here is public API.
 */
#ifndef GPUDEV_CORE_TRACE_H
#define GPUDEV_CORE_TRACE_H

#include "core.h"

/* ------------------------------------------------------------------------------------------
 * trace.c: trace events, for gd.trace(), and the checks deferred to the next host read
 *
 * Events reach the hook as one tuple: (kind, name, device, shapes, dtype, bytes_read,
 * bytes_written, wait_s) with kind 'op' | 'copy' | 'sync'; for copies name is h2d/d2h/d2d/peer
 * and device is the destination, for syncs name is the cause. dtype may be None. wait_s is
 * the time the host waited: a GPU sync's wait (including the copy a d2h read makes), an
 * upload's wait for its source; 0.0 for everything else.
 * ---------------------------------------------------------------------------------------- */

int gd_trace_setup(PyObject *module);

/* Whether a trace is active: the only cost of tracing when none is. */
static inline int gd_tracing(gd_state *st) { return st->trace_hook != NULL; }
int gd_trace_emit(gd_state *st, const char *kind, const char *name, gd_device dev, PyObject *shapes,
                  int dtype, int64_t bytes_read, int64_t bytes_written);
/* An 'op' event for `out = name(in0, in1)`; any of them may be NULL. -1 on error. */
int gd_trace_op(gd_state *st, const char *name, ArrayObject *out, ArrayObject *in0, ArrayObject *in1);
/* A 'copy' event of a's bytes to `dst` (kind h2h, h2d, d2h, d2d or peer). */
int gd_trace_copy(gd_state *st, const char *kind, ArrayObject *a, gd_device dst);
/* A sync point on dev: runs the deferred checks (a failed one raises here), then records a
 * 'sync' event when tracing and cause is not NULL. */
int gd_trace_sync(gd_state *st, const char *cause, gd_device dev);
/* A monotonic clock in seconds, and the wait a sync site measured with it: the next sync
 * event on a GPU (or h2d copy event) of this thread reports it. */
double gd_trace_clock(void);
void gd_trace_waited(double seconds);

#endif /* GPUDEV_CORE_TRACE_H */
