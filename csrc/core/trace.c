/* trace.c - trace events: while gd.trace() is active, every operation, copy and
 * synchronization reaches the Python hook as one tuple (see core.h), so a student sees what
 * each line of a program costs. With no trace active, the only cost is gd_tracing's test.
 */
#include "core.h"

/* ------------------------------------------------------------------------------------------
 * events
 * ---------------------------------------------------------------------------------------- */

int gd_trace_emit(gd_state *st, const char *kind, const char *name, gd_device dev, PyObject *shapes,
                  int dtype, int64_t bytes_read, int64_t bytes_written)
{
    if (!st->trace_hook) return 0;
    char devname[32];
    gd_device_str(dev, devname);
    PyObject *shapes_or_empty = shapes ? Py_NewRef(shapes) : PyTuple_New(0);
    if (!shapes_or_empty) return -1;
    PyObject *hook = Py_NewRef(st->trace_hook); /* the hook may replace itself */
    PyObject *event = Py_BuildValue("(sssOzLL)", kind, name, devname, shapes_or_empty,
                                    dtype >= 0 ? gd_dtype_name((gd_dtype)dtype) : NULL,
                                    (long long)bytes_read, (long long)bytes_written);
    Py_DECREF(shapes_or_empty);
    PyObject *res = event ? PyObject_CallOneArg(hook, event) : NULL;
    Py_XDECREF(event);
    Py_DECREF(hook);
    if (!res) return -1;
    Py_DECREF(res);
    return 0;
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
    if (!gd_tracing(st)) return 0;
    PyObject *shape = gd_shape_tuple(a->ndim, a->shape);
    if (!shape) return -1;
    PyObject *shapes = PyTuple_Pack(1, shape);
    Py_DECREF(shape);
    if (!shapes) return -1;
    int64_t n = (int64_t)gd_array_nbytes(a);
    int rc = gd_trace_emit(st, "copy", kind, dst, shapes, (int)a->dtype, n, n);
    Py_DECREF(shapes);
    return rc;
}

int gd_trace_sync(gd_state *st, const char *cause, gd_device dev)
{
    if (!gd_tracing(st) || !cause) return 0;
    return gd_trace_emit(st, "sync", cause, dev, NULL, -1, 0, 0);
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

static PyMethodDef trace_functions[] = {
    {"_set_trace_hook", mod_set_trace_hook, METH_O, NULL},
    {"_get_trace_hook", mod_get_trace_hook, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

int gd_trace_setup(PyObject *module) { return PyModule_AddFunctions(module, trace_functions); }
