/* sync.c - waiting for a device: gd_wait and gd_sync_device, which every sync point of the
 * core goes through (timed, and reported to trace.c, which also runs the checks deferred to
 * the next host read); then synchronize(), the Timer's and benchmark's _sync, and the lists of
 * GPUs with queued or recent work, which take devices as Python objects (device.c parses
 * them). It sits above runtime.c, device.c and trace.c, so trace.c may use the backends.
 */
#include "sync.h"
#include "core.h"
#include "args.h"
#include "device.h"
#include "runtime.h"
#include "trace.h"

/* ------------------------------------------------------------------------------------------
 * synchronizing
 * ---------------------------------------------------------------------------------------- */

int gd_wait(gd_state *st, int (*call)(int device, gd_error *err), gd_device dev, const char *op)
{
    if (!call) return 0;
    gd_error err = {0};
    int rc;
    gd_clear_pending(st, dev); /* before the GIL goes: see gd_clear_pending */
    double t0 = gd_trace_clock();
    Py_BEGIN_ALLOW_THREADS
    rc = call(dev.index, &err);
    Py_END_ALLOW_THREADS
    gd_trace_waited(gd_trace_clock() - t0);
    if (!rc) return 0;
    gd_mark_pending(st, dev); /* the work may still be there */
    return gd_raise(st, op, &err);
}

int gd_sync_device(gd_state *st, gd_device dev, const char *cause)
{
    if (dev.type == GD_CUDA) {
        const gd_backend *be = gd_backend_of(st, dev, "synchronize");
        const uint64_t before = st->host_copy_seq; /* copies queued during the wait may still run */
        if (!be || gd_wait(st, be->synchronize, dev, "synchronize") < 0) return -1;
        gd_host_copies_settle(st, dev.index, before);
    }
    return gd_trace_sync(st, cause, dev);
}

/* Synchronize each device of the sequence `devices`; *synced counts them. */
static int sync_devices(gd_state *st, PyObject *devices, const char *cause, int *synced)
{
    /* waiting releases the GIL and tracing calls Python: read a tuple (args.h) */
    PyObject *seq = gd_tuple_of(devices, "_sync: devices must be a list of devices");
    if (!seq) return -1;
    int rc = 0;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq) && rc == 0; i++) {
        gd_device dev = GD_CPU_DEVICE;
        rc = gd_parse_device(st, PySequence_Fast_GET_ITEM(seq, i), &dev) < 0 || gd_sync_device(st, dev, cause) < 0
                 ? -1
                 : 0;
        *synced += rc == 0;
    }
    Py_DECREF(seq);
    return rc;
}

/* Synchronize `devices`, or every GPU with queued work. With nothing to wait for it still
 * records one CPU sync point, so traces show where a GPU program would stall. */
static int sync_cause(gd_state *st, const char *cause, PyObject *devices)
{
    int synced = 0;
    if (devices && devices != Py_None) {
        if (sync_devices(st, devices, cause, &synced) < 0) return -1;
    } else {
        for (int i = 0; i < GD_MAX_GPUS; i++) {
            if (st->pending_gpus & ((uint64_t)1 << i)) {
                if (gd_sync_device(st, (gd_device){GD_CUDA, i}, cause) < 0) return -1;
                synced++;
            }
        }
    }
    return synced ? 0 : gd_sync_device(st, GD_CPU_DEVICE, cause);
}

/* _sync(cause, devices=None), for Timer and benchmark. */
static PyObject *mod_sync(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 1 || nargs > 2 || !PyUnicode_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "_sync(cause: str, devices=None)");
        return NULL;
    }
    const char *cause = PyUnicode_AsUTF8(args[0]);
    if (!cause || sync_cause(PyModule_GetState(module), cause, nargs == 2 ? args[1] : NULL) < 0) return NULL;
    Py_RETURN_NONE;
}

GD_SIGNATURE_USAGE(synchronize_sig, "synchronize", "$module, device=None", " takes at most one argument, device",
                   "Wait for queued work on `device`, or on every GPU with queued work.");
static PyObject *mod_synchronize(PyObject *module, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    gd_state *st = PyModule_GetState(module);
    PyObject *device = Py_None;
    if (gd_parse_args(&device, &synchronize_sig, args, nargs, kwnames) < 0) return NULL;
    int rc;
    if (device == Py_None) {
        rc = sync_cause(st, "synchronize", NULL);
    } else {
        gd_device dev = GD_CPU_DEVICE;
        rc = gd_parse_device(st, device, &dev) < 0 ? -1 : gd_sync_device(st, dev, "synchronize");
    }
    if (rc < 0) return NULL;
    Py_RETURN_NONE;
}

/* The GPUs whose bit is set in `mask`, as a list of Devices. */
static PyObject *gpu_list(gd_state *st, uint64_t mask)
{
    PyObject *list = PyList_New(0);
    if (!list) return NULL;
    for (int i = 0; i < GD_MAX_GPUS; i++) {
        if ((mask & ((uint64_t)1 << i)) && gd_list_append_device(st, list, (gd_device){GD_CUDA, i}) < 0) {
            Py_DECREF(list);
            return NULL;
        }
    }
    return list;
}

static PyObject *mod_pending_devices(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    gd_state *st = PyModule_GetState(module);
    return gpu_list(st, st->pending_gpus);
}

/* The GPUs that got work since the last call, synchronized or not (benchmark's warm-up: a
 * function that ends in .item() leaves nothing pending, yet ran on the GPU). */
static PyObject *mod_take_touched_devices(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    gd_state *st = PyModule_GetState(module);
    PyObject *list = gpu_list(st, st->touched_gpus);
    if (list) st->touched_gpus = 0;
    return list;
}

/* ------------------------------------------------------------------------------------------
 * module functions
 * ---------------------------------------------------------------------------------------- */

static PyMethodDef sync_functions[] = {
    GD_DEF(synchronize_sig, GD_FN(mod_synchronize), GD_FASTKW),
    {"_sync", GD_FN(mod_sync), METH_FASTCALL, NULL},
    {"_pending_devices", mod_pending_devices, METH_NOARGS, NULL},
    {"_take_touched_devices", mod_take_touched_devices, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

int gd_sync_setup(PyObject *module) { return PyModule_AddFunctions(module, sync_functions); }
