/* trace.c - trace events: while gd.trace() is active, every operation, copy and
 * synchronization reaches the Python hook as one tuple (see trace.h), so a student sees what
 * each line of a program costs. With no trace active, the only cost is gd_tracing's test.
 *
 * Also the checks deferred to the next host read: a check of values on a device that would
 * cost a synchronization now (cross_entropy's class indices) is kept here as a small device
 * array and read at the next sync point, where the host waits anyway.
 */
#include "trace.h"
#include "core.h"
#include "array.h"
#include "runtime.h"
#include "shape.h"

#include <string.h>
#include <time.h>

/* ------------------------------------------------------------------------------------------
 * wait times
 * ---------------------------------------------------------------------------------------- */

/* Per thread: a sync site measures its wait and the event it emits next reports it. */
static _Thread_local double last_wait_s;

double gd_trace_clock(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void gd_trace_waited(double seconds) { last_wait_s = seconds; }

/* The wait measured last, once: a later event must not report it again. */
static double take_wait(void)
{
    double w = last_wait_s;
    last_wait_s = 0.0;
    return w;
}

/* ------------------------------------------------------------------------------------------
 * events
 * ---------------------------------------------------------------------------------------- */

static int emit(gd_state *st, const char *kind, const char *name, gd_device dev, PyObject *shapes, int dtype,
                int64_t bytes_read, int64_t bytes_written, double wait_s)
{
    if (!st->trace_hook) return 0;
    char devname[32];
    gd_device_str(dev, devname);
    PyObject *shapes_or_empty = shapes ? Py_NewRef(shapes) : PyTuple_New(0);
    if (!shapes_or_empty) return -1;
    PyObject *hook = Py_NewRef(st->trace_hook); /* the hook may replace itself */
    PyObject *event = Py_BuildValue("(sssOzLLd)", kind, name, devname, shapes_or_empty,
                                    dtype >= 0 ? gd_dtype_name((gd_dtype)dtype) : NULL,
                                    (long long)bytes_read, (long long)bytes_written, wait_s);
    Py_DECREF(shapes_or_empty);
    PyObject *res = event ? PyObject_CallOneArg(hook, event) : NULL;
    Py_XDECREF(event);
    Py_DECREF(hook);
    if (!res) return -1;
    Py_DECREF(res);
    return 0;
}

int gd_trace_emit(gd_state *st, const char *kind, const char *name, gd_device dev, PyObject *shapes,
                  int dtype, int64_t bytes_read, int64_t bytes_written)
{
    return emit(st, kind, name, dev, shapes, dtype, bytes_read, bytes_written, 0.0);
}

int gd_trace_op(gd_state *st, const char *name, ArrayObject *out, ArrayObject *in0, ArrayObject *in1)
{
    if (!st->trace_hook) return 0;
    ArrayObject *ins[2] = {in0, in1};
    int n = in1 ? 2 : (in0 ? 1 : 0);
    PyObject *shapes = PyTuple_New(n);
    if (!shapes) return -1;
    int64_t bytes_read = 0;
    for (int i = 0; i < n; i++) {
        PyObject *s = gd_shape_tuple(ins[i]->ndim, ins[i]->shape);
        if (!s) {
            Py_DECREF(shapes);
            return -1;
        }
        PyTuple_SET_ITEM(shapes, i, s);
        bytes_read += (int64_t)gd_array_nbytes(ins[i]);
    }
    gd_device dev = out ? out->device : (in0 ? in0->device : GD_CPU_DEVICE);
    int dtype = out ? (int)out->dtype : (in0 ? (int)in0->dtype : -1);
    int64_t bytes_written = out ? (int64_t)gd_array_nbytes(out) : 0;
    int rc = gd_trace_emit(st, "op", name, dev, shapes, dtype, bytes_read, bytes_written);
    Py_DECREF(shapes);
    return rc;
}

int gd_trace_copy(gd_state *st, const char *kind, ArrayObject *a, gd_device dst)
{
    /* a d2h copy is part of a sync, which reports the wait; an upload waits on its own */
    double wait_s = strcmp(kind, "d2h") ? take_wait() : 0.0;
    if (!gd_tracing(st)) return 0;
    PyObject *shape = gd_shape_tuple(a->ndim, a->shape);
    if (!shape) return -1;
    PyObject *shapes = PyTuple_Pack(1, shape);
    Py_DECREF(shape);
    if (!shapes) return -1;
    int64_t n = (int64_t)gd_array_nbytes(a);
    int rc = emit(st, "copy", kind, dst, shapes, (int)a->dtype, n, n, wait_s);
    Py_DECREF(shapes);
    return rc;
}

static int run_deferred_checks(gd_state *st);

int gd_trace_sync(gd_state *st, const char *cause, gd_device dev)
{
    double wait_s = dev.type == GD_CUDA ? take_wait() : 0.0; /* nothing waits on the CPU */
    if (!cause) return 0;
    if (st->deferred_checks && PyList_GET_SIZE(st->deferred_checks) && run_deferred_checks(st) < 0) return -1;
    if (!gd_tracing(st)) return 0;
    return emit(st, "sync", cause, dev, NULL, -1, 0, 0, wait_s);
}

/* ------------------------------------------------------------------------------------------
 * checks deferred to the next host read
 *
 * Each entry of st->deferred_checks is (bounds, lo, hi, op, describe): bounds an int64 array
 * [min, -max] of some values on a device (negated so that two entries merge with one
 * elementwise minimum, on the device, see gpudev/_deferred.py), and the values must lie in
 * [lo, hi). When they do not, describe(value) gives the exception to raise.
 * ---------------------------------------------------------------------------------------- */

/* bounds' two int64 values, read from its device (the sync point has waited already). */
static int read_bounds(gd_state *st, PyObject *bounds, int64_t out[2])
{
    if (!PyObject_TypeCheck(bounds, (PyTypeObject *)st->array_type) || ((ArrayObject *)bounds)->dtype != GD_INT64 ||
        ((ArrayObject *)bounds)->size != 2 || !((ArrayObject *)bounds)->contiguous) {
        PyErr_SetString(PyExc_TypeError, "deferred check: bounds must be a contiguous int64 array of 2 values");
        return -1;
    }
    ArrayObject *a = (ArrayObject *)bounds;
    if (a->device.type == GD_CPU) {
        memcpy(out, a->data, sizeof(int64_t[2]));
        return 0;
    }
    const gd_backend *be = gd_backend_of(st, a->device, "deferred check");
    if (!be) return -1;
    gd_error err = {0};
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = be->copy_to_host(out, a->data, a->device.index, sizeof(int64_t[2]), &err);
    Py_END_ALLOW_THREADS
    return rc ? gd_raise(st, "deferred check", &err) : 0;
}

static int run_check(gd_state *st, PyObject *entry)
{
    PyObject *bounds, *op, *describe;
    long long lo, hi;
    if (!PyArg_ParseTuple(entry, "OLLUO", &bounds, &lo, &hi, &op, &describe)) return -1;
    int64_t b[2];
    if (read_bounds(st, bounds, b) < 0) return -1;
    int64_t max = -b[1];
    if (b[0] >= lo && max < hi) return 0;
    PyObject *exc = PyObject_CallFunction(describe, "L", (long long)(b[0] < lo ? b[0] : max));
    if (!exc) return -1;
    PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
    Py_DECREF(exc);
    return -1;
}

/* Runs every pending check once: the list is emptied first, so a check's own reads (and a
 * failure) never run it again. */
static int run_deferred_checks(gd_state *st)
{
    PyObject *pending = PyList_AsTuple(st->deferred_checks);
    if (!pending || PyList_SetSlice(st->deferred_checks, 0, PY_SSIZE_T_MAX, NULL) < 0) {
        Py_XDECREF(pending);
        return -1;
    }
    int rc = 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(pending) && rc == 0; i++)
        rc = run_check(st, PyTuple_GET_ITEM(pending, i));
    Py_DECREF(pending);
    return rc;
}

/* ------------------------------------------------------------------------------------------
 * the hook
 * ---------------------------------------------------------------------------------------- */

static PyObject *mod_set_trace_hook(PyObject *module, PyObject *hook)
{
    gd_state *st = PyModule_GetState(module);
    if (hook != Py_None && !PyCallable_Check(hook)) {
        PyErr_SetString(PyExc_TypeError, "_set_trace_hook: expected a callable or None");
        return NULL;
    }
    PyObject *old = st->trace_hook;
    st->trace_hook = hook == Py_None ? NULL : Py_NewRef(hook);
    return old ? old : Py_NewRef(Py_None);
}

static PyObject *mod_get_trace_hook(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    gd_state *st = PyModule_GetState(module);
    return Py_NewRef(st->trace_hook ? st->trace_hook : Py_None);
}

/* The list of deferred checks itself: gpudev/_deferred.py appends and merges entries. */
static PyObject *mod_deferred_checks(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    gd_state *st = PyModule_GetState(module);
    return Py_NewRef(st->deferred_checks);
}

static PyMethodDef trace_functions[] = {
    {"_set_trace_hook", mod_set_trace_hook, METH_O, NULL},
    {"_get_trace_hook", mod_get_trace_hook, METH_NOARGS, NULL},
    {"_deferred_checks", mod_deferred_checks, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

int gd_trace_setup(PyObject *module)
{
    gd_state *st = PyModule_GetState(module);
    st->deferred_checks = PyList_New(0);
    if (!st->deferred_checks) return -1;
    return PyModule_AddFunctions(module, trace_functions);
}
