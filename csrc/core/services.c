/* services.c - the device services of the backend table as functions of gpudev._C: memory
 * statistics, the peak counter, the GPU pool's cache, device properties, waiting for a whole
 * device, events for timing, and the pointer chase of gd.latency_table. gpudev/_info.py and
 * gpudev/timing.py build the public API on them. Availability is checked once (gd_backend_of)
 * and every failure reaches Python by the one path, gd_raise; an entry a backend leaves NULL
 * answers for itself (the CPU caches nothing, has no properties beyond what the OS says, and is
 * timed by the host clock).
 */
#include "services.h"
#include "core.h"
#include "device.h"
#include "runtime.h"
#include "sync.h"
#include "trace.h"

#define GD_EVENT_CAPSULE_NAME "gpudev._C.event"

/* ------------------------------------------------------------------------------------------
 * device arguments
 * ---------------------------------------------------------------------------------------- */

/* The device named by obj (None: the CPU) and its backend, or NULL with DeviceUnavailableError
 * naming `op`. */
static const gd_backend *service_backend(gd_state *st, PyObject *obj, gd_device *dev, const char *op)
{
    *dev = GD_CPU_DEVICE;
    if (gd_parse_device(st, obj, dev) < 0) return NULL;
    return gd_backend_of(st, *dev, op);
}

/* gd_raise for functions that return an object: always NULL. */
static PyObject *raise_null(gd_state *st, const char *op, const gd_error *err)
{
    gd_raise(st, op, err);
    return NULL;
}

/* ------------------------------------------------------------------------------------------
 * memory
 * ---------------------------------------------------------------------------------------- */

static PyObject *mod_memory_stats(PyObject *module, PyObject *device)
{
    gd_state *st = PyModule_GetState(module);
    gd_device dev;
    const gd_backend *be = service_backend(st, device, &dev, "memory_stats");
    if (!be) return NULL;
    gd_memory_stats s;
    gd_error err = {0};
    if (!be->memory_stats) {
        gd_set_error(&err, GD_ERR_UNSUPPORTED, "the %s backend keeps no memory statistics", be->name);
        return raise_null(st, "memory_stats", &err);
    }
    if (be->memory_stats(&s, dev.index, &err)) return raise_null(st, "memory_stats", &err);
    return Py_BuildValue("{s:L,s:L,s:L,s:L}", "allocated_bytes", (long long)s.allocated_bytes, "reserved_bytes",
                         (long long)s.reserved_bytes, "peak_allocated_bytes", (long long)s.peak_allocated_bytes,
                         "allocations", (long long)s.allocations);
}

static PyObject *mod_reset_peak_memory(PyObject *module, PyObject *device)
{
    gd_state *st = PyModule_GetState(module);
    gd_device dev;
    const gd_backend *be = service_backend(st, device, &dev, "reset_peak_memory");
    if (!be) return NULL;
    if (be->reset_peak_memory) be->reset_peak_memory(dev.index);
    Py_RETURN_NONE;
}

/* Blocks until the device is idle, then gives the backend's cached memory back (where it keeps any). */
static PyObject *mod_empty_cache(PyObject *module, PyObject *device)
{
    gd_state *st = PyModule_GetState(module);
    gd_device dev;
    const gd_backend *be = service_backend(st, device, &dev, "empty_cache");
    if (!be || gd_wait(st, be->empty_cache, dev, "empty_cache") < 0) return NULL;
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------------------------------
 * devices
 * ---------------------------------------------------------------------------------------- */

/* The device's properties as a dict, or None where the backend has none (the CPU). */
static PyObject *mod_device_props(PyObject *module, PyObject *device)
{
    gd_state *st = PyModule_GetState(module);
    gd_device dev;
    const gd_backend *be = service_backend(st, device, &dev, "info");
    if (!be) return NULL;
    if (!be->device_props) Py_RETURN_NONE;
    gd_device_props p;
    gd_error err = {0};
    if (be->device_props(&p, dev.index, &err)) return raise_null(st, "info", &err);
    return Py_BuildValue("{s:s,s:(ii),s:i,s:L,s:L,s:i,s:i,s:i,s:i,s:i,s:L}", "name", p.name, "compute_capability",
                         p.cc_major, p.cc_minor, "multiprocessors", p.multiprocessors, "total_memory",
                         (long long)p.total_memory, "free_memory", (long long)p.free_memory, "clock_rate_khz",
                         p.clock_rate_khz, "memory_clock_rate_khz", p.memory_clock_rate_khz, "memory_bus_width",
                         p.memory_bus_width, "driver_version", p.driver_version, "runtime_version", p.runtime_version,
                         "l2_cache_bytes", (long long)p.l2_cache_bytes);
}

int gd_sync_whole_device(gd_state *st, gd_device dev, const char *op)
{
    const gd_backend *be = gd_backend_of(st, dev, op);
    if (!be || gd_wait(st, be->synchronize_all ? be->synchronize_all : be->synchronize, dev, op) < 0) return -1;
    return gd_trace_sync(st, op, dev);
}

/* ------------------------------------------------------------------------------------------
 * events
 * ---------------------------------------------------------------------------------------- */

/* What an event capsule holds: the backend's event and where it lives. */
typedef struct gd_event {
    const gd_backend *be;
    int device;
    void *event;
} gd_event;

static void event_capsule_free(PyObject *capsule)
{
    gd_event *e = PyCapsule_GetPointer(capsule, GD_EVENT_CAPSULE_NAME);
    if (!e) {
        PyErr_Clear();
        return;
    }
    /* the backend's code stays loaded; destroying fails harmlessly once CUDA has shut down */
    e->be->event_destroy(e->event, e->device);
    PyMem_RawFree(e);
}

static gd_event *event_arg(PyObject *arg, const char *op)
{
    if (!PyCapsule_IsValid(arg, GD_EVENT_CAPSULE_NAME)) {
        PyErr_Format(PyExc_TypeError, "%s: expected an event made by _event_create(), got %.100s", op,
                     Py_TYPE(arg)->tp_name);
        return NULL;
    }
    return PyCapsule_GetPointer(arg, GD_EVENT_CAPSULE_NAME);
}

/* _event_create(device) -> an event capsule, or None where the device's clock is the host's. */
static PyObject *mod_event_create(PyObject *module, PyObject *device)
{
    gd_state *st = PyModule_GetState(module);
    gd_device dev;
    const gd_backend *be = service_backend(st, device, &dev, "event_create");
    if (!be) return NULL;
    if (!be->event_create) Py_RETURN_NONE;
    gd_event *e = PyMem_RawMalloc(sizeof *e);
    if (!e) return PyErr_NoMemory();
    *e = (gd_event){be, dev.index, NULL};
    gd_error err = {0};
    if (be->event_create(&e->event, dev.index, &err)) {
        PyMem_RawFree(e);
        return raise_null(st, "event_create", &err);
    }
    PyObject *capsule = PyCapsule_New(e, GD_EVENT_CAPSULE_NAME, event_capsule_free);
    if (!capsule) {
        be->event_destroy(e->event, dev.index);
        PyMem_RawFree(e);
    }
    return capsule;
}

/* Marks the point after all work queued so far on the event's device. */
static PyObject *mod_event_record(PyObject *module, PyObject *arg)
{
    gd_event *e = event_arg(arg, "event_record");
    if (!e) return NULL;
    gd_error err = {0};
    if (e->be->event_record(e->event, e->device, &err))
        return raise_null(PyModule_GetState(module), "event_record", &err);
    Py_RETURN_NONE;
}

/* Waits for `end`, then the milliseconds from `start` to `end`. */
static PyObject *mod_event_elapsed_ms(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "event_elapsed_ms: expected 2 arguments (start, end), got %zd", nargs);
        return NULL;
    }
    gd_event *start = event_arg(args[0], "event_elapsed_ms");
    gd_event *end = start ? event_arg(args[1], "event_elapsed_ms") : NULL;
    if (!start || !end) return NULL;
    if (start->be != end->be || start->device != end->device) {
        PyErr_Format(PyExc_ValueError,
                     "event_elapsed_ms: the events belong to different GPUs, cuda:%d and cuda:%d; time each GPU "
                     "with its own pair of events",
                     start->device, end->device);
        return NULL;
    }
    double ms = 0.0;
    gd_error err = {0};
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = start->be->event_elapsed_ms(&ms, start->event, end->event, start->device, &err);
    Py_END_ALLOW_THREADS
    if (rc) return raise_null(PyModule_GetState(module), "event_elapsed_ms", &err);
    return PyFloat_FromDouble(ms);
}

/* ------------------------------------------------------------------------------------------
 * the pointer chase (gd.latency_table's dependent-load rows)
 * ---------------------------------------------------------------------------------------- */

#define GD_CHASE_MAX_BYTES ((long long)1 << 32) /* 4 GiB: past any cache, still a quick ring */
#define GD_CHASE_MAX_STEPS ((long long)1 << 34)
#define GD_CHASE_MAX_REPEATS 1000

/* args[i] as a long long in [lo, hi], else ValueError naming the argument, its range and the value. */
static int chase_arg(long long *out, PyObject *arg, const char *name, long long lo, long long hi)
{
    int overflow = 0;
    *out = PyLong_Check(arg) && !PyBool_Check(arg) ? PyLong_AsLongLongAndOverflow(arg, &overflow) : lo - 1;
    if (*out == -1 && PyErr_Occurred()) return -1;
    if (overflow || *out < lo || *out > hi) {
        PyErr_Format(PyExc_ValueError, "_pointer_chase: %s must be an int from %lld to %lld, got %R", name, lo, hi,
                     arg);
        return -1;
    }
    return 0;
}

/* _pointer_chase(device, working_set_bytes, steps, repeats) -> a tuple of `repeats` times per
 * load, in nanoseconds, each the mean of `steps` dependent loads through one random cycle of
 * the working set's 64-byte lines (csrc/chase.h). Blocks, without the GIL. */
static PyObject *mod_pointer_chase(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_Format(PyExc_TypeError,
                     "_pointer_chase: expected 4 arguments (device, working_set_bytes, steps, repeats), got %zd",
                     nargs);
        return NULL;
    }
    gd_state *st = PyModule_GetState(module);
    long long bytes, steps, repeats;
    if (chase_arg(&bytes, args[1], "working_set_bytes", 2 * 64, GD_CHASE_MAX_BYTES) < 0 ||
        chase_arg(&steps, args[2], "steps", 1, GD_CHASE_MAX_STEPS) < 0 ||
        chase_arg(&repeats, args[3], "repeats", 1, GD_CHASE_MAX_REPEATS) < 0)
        return NULL;
    gd_device dev;
    const gd_backend *be = service_backend(st, args[0], &dev, "pointer_chase");
    if (!be) return NULL;
    gd_error err = {0};
    if (!be->pointer_chase) {
        gd_set_error(&err, GD_ERR_UNSUPPORTED, "the %s backend has no pointer chase", be->name);
        return raise_null(st, "pointer_chase", &err);
    }
    double ns[GD_CHASE_MAX_REPEATS];
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = be->pointer_chase(ns, (int)repeats, bytes, steps, dev.index, &err);
    Py_END_ALLOW_THREADS
    if (rc) return raise_null(st, "pointer_chase", &err);
    PyObject *out = PyTuple_New((Py_ssize_t)repeats);
    for (Py_ssize_t r = 0; out && r < (Py_ssize_t)repeats; ++r) {
        PyObject *x = PyFloat_FromDouble(ns[r]);
        if (!x) Py_CLEAR(out);
        else PyTuple_SET_ITEM(out, r, x);
    }
    return out;
}

/* ------------------------------------------------------------------------------------------
 * setup
 * ---------------------------------------------------------------------------------------- */

static PyMethodDef services_functions[] = {
    {"_memory_stats", mod_memory_stats, METH_O, NULL},
    {"_reset_peak_memory", mod_reset_peak_memory, METH_O, NULL},
    {"_empty_cache", mod_empty_cache, METH_O, NULL},
    {"_device_props", mod_device_props, METH_O, NULL},
    {"_event_create", mod_event_create, METH_O, NULL},
    {"_event_record", mod_event_record, METH_O, NULL},
    {"_event_elapsed_ms", GD_FN(mod_event_elapsed_ms), METH_FASTCALL, NULL},
    {"_pointer_chase", GD_FN(mod_pointer_chase), METH_FASTCALL, NULL},
    {NULL, NULL, 0, NULL},
};

int gd_services_setup(PyObject *module) { return PyModule_AddFunctions(module, services_functions); }
