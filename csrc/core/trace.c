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

#include "cpu/port.h" /* the clock */

/* ------------------------------------------------------------------------------------------
 * wait times
 * ---------------------------------------------------------------------------------------- */

/* Per thread: a sync site measures its wait and the event it emits next reports it. */
static _Thread_local double last_wait_s;

double gd_trace_clock(void)
{
    return 1e-9 * (double)gd_port_now_ns();
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
    if (gd_guard_inherit(st, (PyObject *)out, (PyObject *)in0) < 0 ||
        gd_guard_inherit(st, (PyObject *)out, (PyObject *)in1) < 0)
        return -1;
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

static int run_thread_checks(gd_state *st);
static int run_guard_checks(gd_state *st, ArrayObject *owner);

int gd_trace_sync(gd_state *st, const char *cause, gd_device dev)
{
    double wait_s = dev.type == GD_CUDA ? take_wait() : 0.0; /* nothing waits on the CPU */
    if (!cause) return 0;
    if (run_thread_checks(st) < 0) return -1;
    if (!gd_tracing(st)) return 0;
    return emit(st, "sync", cause, dev, NULL, -1, 0, 0, wait_s);
}

int gd_host_read(gd_state *st, ArrayObject *a, const char *cause)
{
    double wait_s = a->device.type == GD_CUDA ? take_wait() : 0.0;
    ArrayObject *owner = gd_owner(st, a);
    if (st->n_host_copies && a->device.type == GD_CPU && gd_host_copies_wait_slow(st, owner) < 0) return -1;
    if (owner->guards && run_guard_checks(st, owner) < 0) return -1;
    if (run_thread_checks(st) < 0) return -1;
    if (!gd_tracing(st)) return 0;
    return emit(st, "sync", cause, a->device, NULL, -1, 0, 0, wait_s);
}

int gd_handoff(gd_state *st, ArrayObject *a)
{
    ArrayObject *owner = gd_owner(st, a);
    return owner->guards ? run_guard_checks(st, owner) : 0;
}

/* ------------------------------------------------------------------------------------------
 * copies into and out of pinned host memory that nothing has waited for yet
 *
 * The list holds each copy's event and the root Array of its host memory. A wait releases the
 * GIL, as every wait for a device does, so entries live apart from the list's array (which a
 * copy added meanwhile may move) and count the threads in event_synchronize: an entry is
 * `done` only once a wait for it returned, so no thread goes on while its bytes still move,
 * and the last of its waiters frees it (a deallocation that its reference triggers finds the
 * list consistent). A failed or interrupted wait leaves the entry pending, to be waited for
 * again. At exit, entries never waited for keep their memory (a copy may still be writing it).
 * ---------------------------------------------------------------------------------------- */

struct gd_host_copy {
    ArrayObject *holder;
    void *event;
    int gpu;
    int waiters;  /* threads waiting for it now, without the GIL */
    int done;     /* a wait for it returned: its bytes are there */
    uint64_t seq; /* st->host_copy_seq when it was queued */
};

/* Takes c out of the list and frees it, with its event and its reference to the holder. */
static void host_copy_release(gd_state *st, struct gd_host_copy *c)
{
    for (int i = 0; i < st->n_host_copies; i++)
        if (st->host_copies[i] == c) {
            st->host_copies[i] = st->host_copies[--st->n_host_copies];
            break;
        }
    st->backends[GD_CUDA]->event_destroy(c->event, c->gpu); /* loaded: it recorded the event */
    PyObject *holder = (PyObject *)c->holder;
    PyMem_Free(c);
    Py_DECREF(holder);
}

/* Waits for c and records the wait. */
static int host_copy_wait(gd_state *st, struct gd_host_copy *c)
{
    const gd_backend *be = st->backends[GD_CUDA];
    gd_error err = {0};
    int rc;
    c->waiters++; /* keeps c in place while the GIL is released */
    const double t0 = gd_trace_clock();
    Py_BEGIN_ALLOW_THREADS
    rc = be->event_synchronize(c->event, c->gpu, &err);
    Py_END_ALLOW_THREADS
    const double waited = gd_trace_clock() - t0;
    const int gpu = c->gpu;
    c->waiters--;
    if (!rc) c->done = 1;
    if (c->done && !c->waiters) host_copy_release(st, c);
    if (rc) return gd_raise(st, "non-blocking copy", &err);
    return emit(st, "sync", "non-blocking copy", (gd_device){GD_CUDA, gpu}, NULL, -1, 0, 0, waited);
}

int gd_host_copy_add(gd_state *st, ArrayObject *holder, void *event, int gpu)
{
    struct gd_host_copy *c = PyMem_Malloc(sizeof *c);
    if (c && st->n_host_copies == st->cap_host_copies) {
        const int cap = st->cap_host_copies ? 2 * st->cap_host_copies : 8;
        struct gd_host_copy **p = PyMem_Realloc(st->host_copies, sizeof(*p) * (size_t)cap);
        if (p) {
            st->host_copies = p;
            st->cap_host_copies = cap;
        } else {
            PyMem_Free(c);
            c = NULL;
        }
    }
    if (!c) {
        gd_error err = {0};
        Py_BEGIN_ALLOW_THREADS
        (void)st->backends[GD_CUDA]->event_synchronize(event, gpu, &err); /* the copy's end */
        Py_END_ALLOW_THREADS
        st->backends[GD_CUDA]->event_destroy(event, gpu);
        PyErr_NoMemory();
        return -1;
    }
    *c = (struct gd_host_copy){(ArrayObject *)Py_NewRef(holder), event, gpu, 0, 0, st->host_copy_seq++};
    st->host_copies[st->n_host_copies++] = c;
    return 0;
}

/* A synchronize of the GPU has waited for these copies already: gd.trace() recorded that sync,
 * and a later read of their memory must not record another. A release may free an Array, so
 * the search starts over after each. */
void gd_host_copies_settle(gd_state *st, int gpu, uint64_t before)
{
    for (int i = 0; i < st->n_host_copies; i++) {
        struct gd_host_copy *c = st->host_copies[i];
        if (c->gpu != gpu || c->seq >= before || c->done) continue;
        c->done = 1;
        if (c->waiters) continue; /* the last of them frees it */
        host_copy_release(st, c);
        i = -1;
    }
}

/* Each wait releases the GIL, so the search starts over after it: the list may have changed. */
int gd_host_copies_wait_slow(gd_state *st, ArrayObject *holder)
{
    for (;;) {
        struct gd_host_copy *c = NULL;
        for (int i = 0; i < st->n_host_copies && !c; i++)
            if (!st->host_copies[i]->done && (!holder || st->host_copies[i]->holder == holder))
                c = st->host_copies[i];
        if (!c) return 0;
        if (host_copy_wait(st, c) < 0) return -1;
    }
}

/* ------------------------------------------------------------------------------------------
 * checks deferred to the next host read
 *
 * A check is a list [bounds, lo, hi, op, describe, state] (gpudev/_deferred.py makes them):
 * bounds an int64 array [min, -max] of some values on a device, which must lie in [lo, hi);
 * describe(value) gives the exception when they do not; state is None while pending, True
 * once passed, and the value outside the range once failed. A check is kept in two places:
 *  - the list of the thread that made it, run at that thread's next sync point of any kind
 *    (as a GPU reports a failed kernel at the next synchronization), then dropped;
 *  - `guards` of the storage of the arrays whose values it vouches for (an operation's
 *    result), run at every host read of them, in any thread: the operations pass it on to
 *    the arrays they compute from them (gd_guard_inherit), so a read of anything computed
 *    from a bad result raises too. A failed check raises again at every such read; another
 *    thread's unrelated read never runs it.
 * ---------------------------------------------------------------------------------------- */

enum { CHECK_BOUNDS, CHECK_LO, CHECK_HI, CHECK_OP, CHECK_DESCRIBE, CHECK_STATE, CHECK_FIELDS };

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

static int is_check(PyObject *c) { return PyList_CheckExact(c) && PyList_GET_SIZE(c) == CHECK_FIELDS; }

/* Runs one check: 0 when it holds (now or before), -1 with its exception when it fails (now
 * or before: a failed check keeps failing). */
static int run_check(gd_state *st, PyObject *check)
{
    if (!is_check(check)) {
        PyErr_SetString(PyExc_TypeError, "deferred check: expected [bounds, lo, hi, op, describe, state]");
        return -1;
    }
    PyObject *state = PyList_GET_ITEM(check, CHECK_STATE);
    if (state == Py_True) return 0;
    long long lo = PyLong_AsLongLong(PyList_GET_ITEM(check, CHECK_LO));
    long long hi = PyLong_AsLongLong(PyList_GET_ITEM(check, CHECK_HI));
    if (PyErr_Occurred()) return -1;
    long long bad;
    if (state != Py_None) { /* failed before: the value it found */
        bad = PyLong_AsLongLong(state);
        if (PyErr_Occurred()) return -1;
    } else {
        int64_t b[2];
        if (read_bounds(st, PyList_GET_ITEM(check, CHECK_BOUNDS), b) < 0) return -1;
        int64_t max = -b[1];
        if (b[0] >= lo && max < hi) return PyList_SetItem(check, CHECK_STATE, Py_NewRef(Py_True));
        bad = b[0] < lo ? b[0] : max;
        PyObject *v = PyLong_FromLongLong(bad);
        if (!v || PyList_SetItem(check, CHECK_STATE, v) < 0) return -1;
    }
    /* a new exception each time: one object raised again would pile up tracebacks */
    PyObject *exc = PyObject_CallFunction(PyList_GET_ITEM(check, CHECK_DESCRIBE), "L", bad);
    if (!exc) return -1;
    if (PyExceptionInstance_Check(exc)) PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
    else PyErr_SetString(PyExc_TypeError, "deferred check: describe() must return an exception");
    Py_DECREF(exc);
    return -1;
}

/* The calling thread's list of checks (created on first use); a borrowed reference. */
static PyObject *thread_checks(gd_state *st)
{
    PyObject *tdict = PyThreadState_GetDict();
    if (!tdict) {
        PyErr_SetString(PyExc_RuntimeError, "deferred check: no thread state dictionary");
        return NULL;
    }
    PyObject *list = PyDict_GetItemWithError(tdict, st->deferred_key);
    if (list || PyErr_Occurred()) return list;
    list = PyList_New(0);
    if (!list) return NULL;
    int rc = PyDict_SetItem(tdict, st->deferred_key, list);
    Py_DECREF(list); /* the dictionary holds it */
    return rc < 0 ? NULL : list;
}

/* Runs this thread's pending checks once: the list is emptied first, so a check's own reads
 * (and a failure) never run it from there again. */
static int run_thread_checks(gd_state *st)
{
    if (!st->deferred_used) return 0; /* no check was ever made: the common case, for free */
    PyObject *tdict = PyThreadState_GetDict();
    PyObject *list = tdict ? PyDict_GetItemWithError(tdict, st->deferred_key) : NULL;
    if (!list) return PyErr_Occurred() ? -1 : 0;
    if (!PyList_GET_SIZE(list)) return 0;
    PyObject *pending = PyList_AsTuple(list);
    if (!pending || PyList_SetSlice(list, 0, PY_SSIZE_T_MAX, NULL) < 0) {
        Py_XDECREF(pending);
        return -1;
    }
    int rc = 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(pending) && rc == 0; i++) {
        PyObject *c = PyTuple_GET_ITEM(pending, i);
        /* one that a read of its guarded arrays ran already has passed or been reported */
        if (!is_check(c) || PyList_GET_ITEM(c, CHECK_STATE) == Py_None) rc = run_check(st, c);
    }
    Py_DECREF(pending);
    return rc;
}

/* Runs the checks that guard owner's storage; those that passed are dropped from it. */
static int run_guard_checks(gd_state *st, ArrayObject *owner)
{
    PyObject *guards = Py_NewRef(owner->guards); /* a check's reads may replace it */
    int rc = 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(guards) && rc == 0; i++)
        rc = run_check(st, PyTuple_GET_ITEM(guards, i));
    if (rc == 0 && owner->guards == guards) Py_CLEAR(owner->guards);
    Py_DECREF(guards);
    return rc;
}

/* owner's guards with those of `more` (a tuple) added, the passed ones and repeats left out. */
static int add_guards(ArrayObject *owner, PyObject *more)
{
    PyObject *now = owner->guards;
    Py_ssize_t n_now = now ? PyTuple_GET_SIZE(now) : 0, n_more = PyTuple_GET_SIZE(more);
    PyObject *merged = PyList_New(0);
    if (!merged) return -1;
    for (Py_ssize_t i = 0; i < n_now + n_more; i++) {
        PyObject *c = i < n_now ? PyTuple_GET_ITEM(now, i) : PyTuple_GET_ITEM(more, i - n_now);
        if (is_check(c) && PyList_GET_ITEM(c, CHECK_STATE) == Py_True) continue;
        int seen = 0;
        for (Py_ssize_t j = 0; j < PyList_GET_SIZE(merged) && !seen; j++) seen = PyList_GET_ITEM(merged, j) == c;
        if (!seen && PyList_Append(merged, c) < 0) {
            Py_DECREF(merged);
            return -1;
        }
    }
    PyObject *t = PyList_GET_SIZE(merged) ? PyList_AsTuple(merged) : NULL;
    int failed = PyList_GET_SIZE(merged) && !t;
    Py_DECREF(merged);
    if (failed) return -1;
    Py_XSETREF(owner->guards, t);
    return 0;
}

int gd_guard_inherit_slow(gd_state *st, ArrayObject *out, ArrayObject *in)
{
    ArrayObject *to = gd_owner(st, out), *from = gd_owner(st, in);
    if (to == from || !from->guards) return 0;
    return add_guards(to, from->guards);
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

/* The calling thread's list of deferred checks: gpudev/_deferred.py appends and merges. */
static PyObject *mod_deferred_checks(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    gd_state *st = PyModule_GetState(module);
    PyObject *list = thread_checks(st);
    if (!list) return NULL;
    st->deferred_used = 1;
    return Py_NewRef(list);
}

/* _guard(a, check): the check vouches for the values of a's storage (see above). */
static PyObject *mod_guard(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    gd_state *st = PyModule_GetState(module);
    if (nargs != 2 || !gd_is_array(st, args[0]) || !is_check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "_guard: expected (Array, [bounds, lo, hi, op, describe, state])");
        return NULL;
    }
    PyObject *one = PyTuple_Pack(1, args[1]);
    int rc = one ? add_guards(gd_owner(st, (ArrayObject *)args[0]), one) : -1;
    Py_XDECREF(one);
    return rc < 0 ? NULL : Py_NewRef(Py_None);
}

/* The checks that guard a's storage, a tuple (tests read it). */
static PyObject *mod_guards(PyObject *module, PyObject *a)
{
    gd_state *st = PyModule_GetState(module);
    ArrayObject *arr = gd_need_array(st, a, "_guards");
    if (!arr) return NULL;
    PyObject *g = gd_owner(st, arr)->guards;
    return g ? Py_NewRef(g) : PyTuple_New(0);
}

static PyMethodDef trace_functions[] = {
    {"_set_trace_hook", mod_set_trace_hook, METH_O, NULL},
    {"_get_trace_hook", mod_get_trace_hook, METH_NOARGS, NULL},
    {"_deferred_checks", mod_deferred_checks, METH_NOARGS, NULL},
    {"_guard", GD_FN(mod_guard), METH_FASTCALL, NULL},
    {"_guards", mod_guards, METH_O, NULL},
    {NULL, NULL, 0, NULL},
};

int gd_trace_setup(PyObject *module)
{
    gd_state *st = PyModule_GetState(module);
    /* the key of each thread's list in its thread-state dictionary: an object of this module's */
    st->deferred_key = PyObject_CallNoArgs((PyObject *)&PyBaseObject_Type);
    if (!st->deferred_key) return -1;
    return PyModule_AddFunctions(module, trace_functions);
}
