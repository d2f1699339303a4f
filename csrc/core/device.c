/* device.c - the Device type ('cpu', 'cuda:N'), parsing device arguments, and the
 * device-level module functions cpu(), gpu(), try_gpu(), try_all_gpus(). The CPU is device 0
 * of its backend everywhere in the core; only Device('cpu').index shows None.
 */
#include "device.h"
#include "core.h"
#include "args.h"
#include "runtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------
 * parsing and naming
 * ---------------------------------------------------------------------------------------- */


/* 'cpu', 'cuda' or 'cuda:N' as a device: 0, 1 when the string names none, -1 on error. The
 * whole Python string counts: 'cpu\0junk' is no device, though C's string functions would
 * stop at the NUL. */
static int parse_device_string(PyObject *str, gd_device *out)
{
    Py_ssize_t len;
    const char *s = PyUnicode_AsUTF8AndSize(str, &len);
    if (!s) return -1;
    if (strlen(s) != (size_t)len) return 1;
    if (strcmp(s, "cpu") == 0) {
        *out = GD_CPU_DEVICE;
        return 0;
    }
    if (strcmp(s, "cuda") == 0) {
        *out = (gd_device){GD_CUDA, 0};
        return 0;
    }
    if (strncmp(s, "cuda:", 5) == 0 && s[5] >= '0' && s[5] <= '9') {
        char *end;
        long idx = strtol(s + 5, &end, 10);
        if (*end == '\0' && idx >= 0 && idx < GD_MAX_GPUS) {
            *out = (gd_device){GD_CUDA, (int)idx};
            return 0;
        }
    }
    return 1;
}

int gd_parse_device(gd_state *st, PyObject *obj, gd_device *out)
{
    if (obj == Py_None) return 0;
    if (Py_TYPE(obj) == st->device_type) {
        *out = ((DeviceObject *)obj)->dev;
        return 0;
    }
    if (PyUnicode_Check(obj)) {
        int r = parse_device_string(obj, out);
        if (r <= 0) return r;
        PyObject *shown = gd_brief_repr(obj);
        if (shown)
            PyErr_Format(PyExc_ValueError,
                         "Device: cannot parse %U; expected 'cpu', 'cuda' or 'cuda:N' with 0 <= N < %d", shown,
                         GD_MAX_GPUS);
        Py_XDECREF(shown);
        return -1;
    }
    PyErr_Format(PyExc_TypeError,
                 "device must be a gd.Device or a string like 'cpu' or 'cuda:0', got %.100s",
                 Py_TYPE(obj)->tp_name);
    return -1;
}

int gd_parse_gpu_index(int *out, PyObject *obj, const char *op)
{
    /* True is an int to Python, but gpu(True) meaning cuda:1 is a mistake waiting to happen */
    if (PyBool_Check(obj) || !PyIndex_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s: a GPU index must be an int, got %.100s", op, Py_TYPE(obj)->tp_name);
        return -1;
    }
    PyObject *v = PyNumber_Index(obj);
    if (!v) return -1;
    int overflow;
    long long i = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow || i < 0 || i >= GD_MAX_GPUS) {
        PyObject *shown = gd_brief_repr(v);
        if (shown) PyErr_Format(PyExc_ValueError, "%s: GPU index must be in [0, %d), got %U", op, GD_MAX_GPUS, shown);
        Py_XDECREF(shown);
        Py_DECREF(v);
        return -1;
    }
    Py_DECREF(v);
    *out = (int)i;
    return 0;
}

void gd_raise_device_mismatch(gd_state *st, const char *op, gd_device first, gd_device second)
{
    char d0[32], d1[32], to[32];
    PyErr_Format(st->DeviceMismatchError,
                 "%s: operands are on different devices, %s and %s; copy one of them first, "
                 "e.g. b.to('%s')",
                 op, gd_device_label(st, first, d0), gd_device_label(st, second, d1), gd_device_str(first, to));
}

PyObject *gd_device_object(gd_state *st, gd_device dev)
{
    if (dev.type == GD_CPU && st->cpu_device) return Py_NewRef(st->cpu_device);
    DeviceObject *d = PyObject_New(DeviceObject, st->device_type);
    if (!d) return NULL;
    d->dev = dev;
    return (PyObject *)d;
}

int gd_list_append_device(gd_state *st, PyObject *list, gd_device dev)
{
    PyObject *d = gd_device_object(st, dev);
    if (!d) return -1;
    int rc = PyList_Append(list, d);
    Py_DECREF(d);
    return rc;
}

/* ------------------------------------------------------------------------------------------
 * the Device type
 * ---------------------------------------------------------------------------------------- */

static PyObject *device_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"type", "index", NULL};
    PyObject *spec, *index = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|O:Device", kwlist, &spec, &index)) return NULL;
    gd_state *st = PyType_GetModuleState(type);
    if (!st) return NULL;
    gd_device dev = GD_CPU_DEVICE;
    if (spec == Py_None) {
        PyErr_SetString(PyExc_TypeError, "Device: expected 'cpu', 'cuda' or 'cuda:N', got None");
        return NULL;
    }
    if (gd_parse_device(st, spec, &dev) < 0) return NULL;
    if (index != Py_None) {
        if (dev.type == GD_CPU) {
            PyErr_SetString(PyExc_ValueError, "Device: the CPU takes no index; use Device('cpu')");
            return NULL;
        }
        if (PyUnicode_Check(spec) && strchr(PyUnicode_AsUTF8(spec), ':')) {
            PyObject *shown = gd_brief_repr(spec), *shown_index = shown ? gd_brief_repr(index) : NULL;
            if (shown_index)
                PyErr_Format(PyExc_ValueError, "Device: index given twice, in %U and as %U", shown, shown_index);
            Py_XDECREF(shown);
            Py_XDECREF(shown_index);
            return NULL;
        }
        if (gd_parse_gpu_index(&dev.index, index, "Device") < 0) return NULL;
    }
    return gd_device_object(st, dev);
}

static void device_dealloc(PyObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    tp->tp_free(self);
    Py_DECREF(tp);
}

static PyObject *device_str(PyObject *self)
{
    char buf[32];
    return PyUnicode_FromString(gd_device_str(((DeviceObject *)self)->dev, buf));
}

/* Whether the device is a GPU of the CPU emulation (GPUDEV_EMULATE_GPUS): then every label
 * says so, and no time measured on it passes for GPU speed. */
static int device_is_emulated(PyObject *self)
{
    return ((DeviceObject *)self)->dev.type == GD_CUDA && gd_state_of(self)->cuda_emulated;
}

static PyObject *device_repr(PyObject *self)
{
    char buf[32];
    return PyUnicode_FromFormat(device_is_emulated(self) ? "Device('%s', emulated)" : "Device('%s')",
                                gd_device_str(((DeviceObject *)self)->dev, buf));
}

static PyObject *device_get_emulated(PyObject *self, void *Py_UNUSED(closure))
{
    return PyBool_FromLong(device_is_emulated(self));
}

static Py_hash_t device_hash(PyObject *self)
{
    /* equal to the hash of the string, since Device('cpu') == 'cpu' (and only that string) */
    PyObject *s = device_str(self);
    if (!s) return -1;
    Py_hash_t h = PyObject_Hash(s);
    Py_DECREF(s);
    return h;
}

static PyObject *device_richcompare(PyObject *self, PyObject *other, int op)
{
    if (op != Py_EQ && op != Py_NE) Py_RETURN_NOTIMPLEMENTED;
    gd_state *st = gd_state_of(self);
    int eq;
    if (Py_TYPE(other) == st->device_type) {
        eq = gd_device_eq(((DeviceObject *)self)->dev, ((DeviceObject *)other)->dev);
    } else if (PyUnicode_Check(other)) {
        /* Only the device's own name, str(d): equal objects must hash equal, and 'cuda' and
         * 'cuda:0' are two strings with two hashes. */
        PyObject *name = device_str(self);
        if (!name) return NULL;
        eq = PyUnicode_Compare(name, other) == 0;
        Py_DECREF(name);
    } else {
        Py_RETURN_NOTIMPLEMENTED;
    }
    return PyBool_FromLong(op == Py_EQ ? eq : !eq);
}

static PyObject *device_get_type(PyObject *self, void *Py_UNUSED(closure))
{
    return PyUnicode_FromString(((DeviceObject *)self)->dev.type == GD_CPU ? "cpu" : "cuda");
}

static PyObject *device_get_index(PyObject *self, void *Py_UNUSED(closure))
{
    gd_device d = ((DeviceObject *)self)->dev;
    if (d.type == GD_CPU) Py_RETURN_NONE;
    return PyLong_FromLong(d.index);
}

/* info() gathers facts from the OS and the CUDA runtime: readable Python does it best. */
static PyObject *device_info(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    PyObject *mod = PyImport_ImportModule("gpudev._info");
    if (!mod) return NULL;
    PyObject *res = PyObject_CallMethod(mod, "device_info", "O", self);
    Py_DECREF(mod);
    return res;
}

static PyObject *device_reduce(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    PyObject *s = device_str(self);
    if (!s) return NULL;
    PyObject *res = Py_BuildValue("(O(N))", (PyObject *)Py_TYPE(self), s);
    return res;
}

static PyMethodDef device_methods[] = {
    GD_METHOD("info", device_info, METH_NOARGS, "$self",
              "What this device is, as a dict (CPU: model, cores, SIMD, BLAS; GPU: name, memory...)."),
    GD_METHOD("__reduce__", device_reduce, METH_NOARGS, "$self", "pickle support: Device(str(self))"),
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef device_getset[] = {
    {"type", device_get_type, NULL, "'cpu' or 'cuda'", NULL},
    {"index", device_get_index, NULL, "GPU index, None for the CPU", NULL},
    {"emulated", device_get_emulated, NULL, "True for a GPU of the CPU emulation (GPUDEV_EMULATE_GPUS)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot device_slots[] = {
    {Py_tp_new, device_new},
    {Py_tp_dealloc, device_dealloc},
    {Py_tp_str, device_str},
    {Py_tp_repr, device_repr},
    {Py_tp_hash, device_hash},
    {Py_tp_richcompare, device_richcompare},
    {Py_tp_methods, device_methods},
    {Py_tp_getset, device_getset},
    {Py_tp_doc, GD_DOC("Device", "type, index=None",
                       "Where an array lives: Device('cpu' | 'cuda' | 'cuda:N') or Device('cuda', N).\n\n"
                       ">>> gd.Device('cuda:1').index\n1")},
    {0, NULL},
};

static PyType_Spec device_spec = {
    .name = "gpudev.Device",
    .basicsize = sizeof(DeviceObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = device_slots,
};

/* ------------------------------------------------------------------------------------------
 * module functions
 * ---------------------------------------------------------------------------------------- */

/* The i=0 argument of gpu() and try_gpu(). */
static int parse_gpu_index(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, int *out,
                           const gd_params *params)
{
    PyObject *arg = NULL;
    if (gd_parse_args(&arg, params, args, nargs, kwnames) < 0) return -1;
    *out = 0;
    return arg ? gd_parse_gpu_index(out, arg, params->fname) : 0;
}

static PyObject *mod_cpu(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    gd_state *st = PyModule_GetState(module);
    return Py_NewRef(st->cpu_device);
}

GD_SIGNATURE_USAGE(gpu_sig, "gpu", "$module, i=0", " takes at most one argument",
                   "Device('cuda:i'), whether or not it exists (allocating on a missing GPU raises).");
static PyObject *mod_gpu(PyObject *module, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    int i;
    if (parse_gpu_index(args, nargs, kwnames, &i, &gpu_sig) < 0) return NULL;
    return gd_device_object(PyModule_GetState(module), (gd_device){GD_CUDA, i});
}

GD_SIGNATURE_USAGE(try_gpu_sig, "try_gpu", "$module, i=0", " takes at most one argument",
                   "gpu(i) if it exists, else cpu().\n\n>>> x = gd.ones(3, device=gd.try_gpu())");
static PyObject *mod_try_gpu(PyObject *module, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    int i;
    if (parse_gpu_index(args, nargs, kwnames, &i, &try_gpu_sig) < 0) return NULL;
    gd_state *st = PyModule_GetState(module);
    if (gd_num_gpus(st) > i) return gd_device_object(st, (gd_device){GD_CUDA, i});
    return Py_NewRef(st->cpu_device);
}

static PyObject *mod_try_all_gpus(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    gd_state *st = PyModule_GetState(module);
    int n = gd_num_gpus(st);
    PyObject *list = PyList_New(0);
    if (!list) return NULL;
    for (int i = 0; i < n || (n == 0 && i == 0); i++) {
        gd_device dev = n ? (gd_device){GD_CUDA, i} : GD_CPU_DEVICE;
        if (gd_list_append_device(st, list, dev) < 0) {
            Py_DECREF(list);
            return NULL;
        }
    }
    return list;
}

static PyMethodDef device_module_methods[] = {
    GD_METHOD("cpu", mod_cpu, METH_NOARGS, "$module", "The host and all its cores."),
    GD_DEF(gpu_sig, GD_FN(mod_gpu), GD_FASTKW),
    GD_DEF(try_gpu_sig, GD_FN(mod_try_gpu), GD_FASTKW),
    GD_METHOD("try_all_gpus", mod_try_all_gpus, METH_NOARGS, "$module", "Every GPU, or [cpu()] when there is none."),
    {NULL, NULL, 0, NULL},
};

int gd_device_setup(PyObject *module, gd_state *st)
{
    st->device_type = (PyTypeObject *)PyType_FromModuleAndSpec(module, &device_spec, NULL);
    if (!st->device_type) return -1;
    if (PyModule_AddType(module, st->device_type) < 0) return -1;
    DeviceObject *cpu = PyObject_New(DeviceObject, st->device_type);
    if (!cpu) return -1;
    cpu->dev = GD_CPU_DEVICE;
    st->cpu_device = (PyObject *)cpu;
    return PyModule_AddFunctions(module, device_module_methods);
}
