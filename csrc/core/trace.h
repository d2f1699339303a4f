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
/* An 'op' event for `out = name(in0, in1)`; any of them may be NULL. Also passes in0's and
 * in1's deferred checks on to out (gd_guard_inherit), traced or not. -1 on error. */
int gd_trace_op(gd_state *st, const char *name, ArrayObject *out, ArrayObject *in0, ArrayObject *in1);
/* A 'copy' event of a's bytes to `dst` (kind h2h, h2d, d2h, d2d or peer). */
int gd_trace_copy(gd_state *st, const char *kind, ArrayObject *a, gd_device dst);
/* A sync point on dev that reads no array (synchronize(), a timer): runs the calling thread's
 * deferred checks (a failed one raises here), then records a 'sync' event when tracing and
 * cause is not NULL. */
int gd_trace_sync(gd_state *st, const char *cause, gd_device dev);
/* THE host read: every read of a's data by the host (item, tolist, repr, NumPy conversion,
 * the buffer protocol, a DLPack export to the CPU, a copy to the CPU) calls it once, after
 * any wait and copy. It runs the deferred checks that guard a's storage and the calling
 * thread's, and records a 'sync' event named `cause` on a's device, on the CPU too, where
 * the same line would synchronize on a GPU. 0, or -1 with an exception. */
int gd_host_read(gd_state *st, ArrayObject *a, const char *cause);
/* a handed to another library on its device (a GPU DLPack export, the CUDA array
 * interface): no host read, but the checks that guard a's storage run first. */
int gd_handoff(gd_state *st, ArrayObject *a);
/* out computed from in: out's storage is guarded by in's checks too. A pointer test unless
 * in has checks; every operation calls it for each input (gd_trace_op does for its two). */
int gd_guard_inherit_slow(gd_state *st, ArrayObject *out, ArrayObject *in);
static inline int gd_guard_inherit(gd_state *st, PyObject *out, PyObject *in)
{
    if (!in || !out || Py_TYPE(in) != st->array_type || Py_TYPE(out) != st->array_type) return 0;
    ArrayObject *a = (ArrayObject *)in;
    ArrayObject *root = a->base && Py_TYPE(a->base) == st->array_type ? (ArrayObject *)a->base : a;
    return root->guards ? gd_guard_inherit_slow(st, (ArrayObject *)out, a) : 0;
}
/* Copies between a GPU and pinned host memory that returned at once (a.to(dev,
 * non_blocking=True)). `holder` is the root Array of the host memory: the list keeps it alive,
 * and no host read (gd_host_read) or CPU operation (gd_backend_of) reaches it, until the copy's
 * `event` (recorded on GPU `gpu`, owned by the list from now on) has run. 0, or -1 with an
 * exception after waiting for the event. */
int gd_host_copy_add(gd_state *st, ArrayObject *holder, void *event, int gpu);
/* Waits for the pending copies of `holder` (NULL: all of them), without the GIL, each one a
 * 'sync' named "non-blocking copy" on its GPU in gd.trace(). 0, or -1 with an exception. */
int gd_host_copies_wait_slow(gd_state *st, ArrayObject *holder);
/* After a synchronize of GPU `gpu` that began when st->host_copy_seq was `before`: the copies
 * queued on it before then have ended, with no wait of their own to record. */
void gd_host_copies_settle(gd_state *st, int gpu, uint64_t before);
/* The check on every path that touches host memory: a load and a compare when none is pending. */
static inline int gd_host_copies_wait(gd_state *st)
{
    return st->n_host_copies ? gd_host_copies_wait_slow(st, NULL) : 0;
}
/* A monotonic clock in seconds, and the wait a sync site measured with it: the next sync
 * event on a GPU (or h2d copy event) of this thread reports it. */
double gd_trace_clock(void);
void gd_trace_waited(double seconds);

#endif /* GPUDEV_CORE_TRACE_H */
