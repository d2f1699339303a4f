/* runtime.h - what runtime.c offers the other files of the core (core.h has the module state
 * and the objects). Nothing here is public API.
 */
#ifndef GPUDEV_CORE_RUNTIME_H
#define GPUDEV_CORE_RUNTIME_H

#include "core.h"
#include "trace.h"

/* ------------------------------------------------------------------------------------------
 * runtime.c: exceptions, the backend registry, running backend calls, synchronization,
 * threads and the random seed
 * ---------------------------------------------------------------------------------------- */

int gd_runtime_setup(PyObject *module, gd_state *st);

/* Raise the Python exception for a failed backend call; `op` names the operation
 * (e.g. "matmul"). Always returns -1 so callers can `return gd_raise(...)`. */
int gd_raise(gd_state *st, const char *op, const gd_error *err);

/* The backend of a device, or NULL with DeviceUnavailableError set when the device's backend
 * is not loaded or its index is out of range ("op" names the operation): the one way to get
 * a backend (st->backends is runtime.c's registry). For a device that holds an array, or one
 * checked before, it is two loads and a compare. */
const gd_backend *gd_backend_check(gd_state *st, gd_device dev, const char *op);
/* The same for allocating and freeing arrays (array.c), which touch no array's data. */
static inline const gd_backend *gd_backend_for_memory(gd_state *st, gd_device dev, const char *op)
{
    const gd_backend *be = st->backends[dev.type];
    if (be && (dev.type == GD_CPU || (dev.index >= 0 && dev.index < st->gpu_count))) return be;
    return gd_backend_check(st, dev, op); /* asks the driver once, raises */
}
static inline const gd_backend *gd_backend_of(gd_state *st, gd_device dev, const char *op)
{
    /* every CPU operation gets its backend here: it first waits for the copies into and out
     * of pinned host memory that are still running (trace.h), whichever arrays it touches */
    if (dev.type == GD_CPU && st->n_host_copies && gd_host_copies_wait_slow(st, NULL) < 0) return NULL;
    return gd_backend_for_memory(st, dev, op);
}

/* GPUs the CUDA backend reports (0 without it), asked once per process. */
int gd_num_gpus(gd_state *st);

/* Remember that a GPU has queued work (Timer and synchronize use this). Called with the GIL
 * held, after the work was queued. */
static inline void gd_mark_pending(gd_state *st, gd_device dev)
{
    if (dev.type == GD_CUDA) {
        st->pending_gpus |= (uint64_t)1 << dev.index;
        st->touched_gpus |= (uint64_t)1 << dev.index;
    }
}

/* Called with the GIL held *before* waiting for the device (which releases the GIL): work
 * another thread queues during the wait marks the device again afterwards and is not lost. */
static inline void gd_clear_pending(gd_state *st, gd_device dev)
{
    if (dev.type == GD_CUDA) st->pending_gpus &= ~((uint64_t)1 << dev.index);
}

/* The one way to run a backend call: gd_run_begin before it, gd_run_end after it. Large CPU
 * work (`work` elements or multiply-adds) and every GPU call run without the GIL so other
 * Python threads go on, so the call must not touch Python objects. GPU calls mostly just
 * queue work, but some block: the first matmul creates cuBLAS, an allocation on a full device
 * waits for pending frees. gd_run_end marks a GPU as having work in flight, and returns 0, or
 * -1 with the Python exception for a failed call (rc != 0), naming `op`:
 *
 *     PyThreadState *ts = gd_run_begin(dev, n);
 *     rc = be->unary(out, GD_NEG, dtype, &ew, &a, dev.index, &err);
 *     if (gd_run_end(st, dev, ts, rc, &err, "negative") < 0) goto fail;
 */
static inline PyThreadState *gd_run_begin(gd_device dev, double work)
{
    return dev.type != GD_CPU || work > GD_RELEASE_GIL_ELEMENTS ? PyEval_SaveThread() : NULL;
}

static inline int gd_run_end(gd_state *st, gd_device dev, PyThreadState *released, int rc, const gd_error *err,
                             const char *op)
{
    if (released) PyEval_RestoreThread(released);
    gd_mark_pending(st, dev);
    return rc ? gd_raise(st, op, err) : 0;
}

#endif /* GPUDEV_CORE_RUNTIME_H */
