/* module.c - the gpudev._C module: multi-phase init, module state, exception types, the
 * backend registry (CPU built in, CUDA handed over by gpudev._cuda through a capsule),
 * synchronization, tracing hooks, the random seed and thread settings.
 */
#define GD_IMPORT_NUMPY
#include "core.h"

#include "cpu/backend_cpu.h"

#include <stdio.h>
#include <string.h>

extern PyMethodDef gd_array_module_methods[];

/* ------------------------------------------------------------------------------------------
 * errors
 * ---------------------------------------------------------------------------------------- */

int gd_raise(gd_state *st, const char *op, const gd_error *err)
{
    PyObject *type;
    switch (err->code) {
    case GD_ERR_HOST_OOM:
    case GD_ERR_DEVICE_OOM: type = st->OutOfMemoryError; break;
    case GD_ERR_DEVICE_UNAVAILABLE: type = st->DeviceUnavailableError; break;
    case GD_ERR_CUDA: type = st->CudaError; break;
    case GD_ERR_VALUE: type = PyExc_ValueError; break;
    case GD_ERR_UNSUPPORTED: type = PyExc_NotImplementedError; break;
    default: type = st->GpudevError; break;
    }
    PyObject *msg = PyUnicode_FromFormat("%s: %s", op, err->message[0] ? err->message : "unknown error");
    if (!msg) return -1;
    PyObject *exc = PyObject_CallOneArg(type, msg);
    Py_DECREF(msg);
    if (!exc) return -1;
    if (err->code == GD_ERR_CUDA) {
        PyObject *status = PyLong_FromLong(err->cuda_status);
        if (!status || PyObject_SetAttrString(exc, "status", status) < 0) {
            Py_XDECREF(status);
            Py_DECREF(exc);
            return -1;
        }
        Py_DECREF(status);
    }
    PyErr_SetObject(type, exc);
    Py_DECREF(exc);
    return -1;
}

/* ------------------------------------------------------------------------------------------
 * backends and devices
 * ---------------------------------------------------------------------------------------- */

static int gpu_count_cached = -1;

int gd_num_gpus(gd_state *st)
{
    if (!st->backends[GD_CUDA]) return 0;
    /* GPUs do not come and go while a process runs; asking the driver once is enough. */
    if (gpu_count_cached < 0) {
        int n = st->backends[GD_CUDA]->device_count();
        gpu_count_cached = n < 0 ? 0 : (n > GD_MAX_GPUS ? GD_MAX_GPUS : n);
    }
    return gpu_count_cached;
}

const gd_backend *gd_backend_for(gd_state *st, gd_device dev, const char *op)
{
    if (dev.type == GD_CPU) return st->backends[GD_CPU];
    char name[32];
    gd_device_str(dev, name);
    if (!st->backends[GD_CUDA]) {
        PyErr_Format(st->DeviceUnavailableError,
                     "%s: %s is not available: CUDA is off in this gpudev (%S); "
                     "use gd.try_gpu() to fall back to the CPU",
                     op, name, st->cuda_reason ? st->cuda_reason : Py_None);
        return NULL;
    }
    int n = gd_num_gpus(st);
    if (dev.index < 0 || dev.index >= n) {
        PyErr_Format(st->DeviceUnavailableError,
                     "%s: %s is not available: this machine has %d GPU%s%s; "
                     "use gd.try_gpu(%d) to fall back to the CPU",
                     op, name, n, n == 1 ? "" : "s",
                     n == 0 ? " (no CUDA driver or no device)" : "", dev.index);
        return NULL;
    }
    return st->backends[GD_CUDA];
}

int gd_sync_device(gd_state *st, gd_device dev, const char *cause)
{
    if (dev.type == GD_CUDA) {
        const gd_backend *be = gd_backend_for(st, dev, "synchronize");
        if (!be) return -1;
        if (be->synchronize) {
            gd_error err = {0};
            int rc;
            Py_BEGIN_ALLOW_THREADS
            rc = be->synchronize(dev.index, &err);
            Py_END_ALLOW_THREADS
            if (rc) return gd_raise(st, "synchronize", &err);
        }
        st->pending_gpus &= ~((uint64_t)1 << dev.index);
    }
    if (gd_tracing(st) && cause)
        return gd_trace_emit(st, "sync", cause, dev, NULL, -1, 0, 0);
    return 0;
}

/* _sync(cause, devices=None): synchronize `devices`, or every GPU with queued work. With
 * nothing to wait for it still records one CPU sync point, so traces show where a GPU
 * program would stall. */
static PyObject *mod_sync(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    gd_state *st = PyModule_GetState(module);
    if (nargs < 1 || nargs > 2 || !PyUnicode_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "_sync(cause: str, devices=None)");
        return NULL;
    }
    const char *cause = PyUnicode_AsUTF8(args[0]);
    if (!cause) return NULL;
    int synced = 0;
    if (nargs == 2 && args[1] != Py_None) {
        PyObject *seq = PySequence_Fast(args[1], "_sync: devices must be a list of devices");
        if (!seq) return NULL;
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
            gd_device dev = {GD_CPU, -1};
            if (gd_parse_device(st, PySequence_Fast_GET_ITEM(seq, i), &dev) < 0 ||
                gd_sync_device(st, dev, cause) < 0) {
                Py_DECREF(seq);
                return NULL;
            }
            synced++;
        }
        Py_DECREF(seq);
    } else {
        for (int i = 0; i < GD_MAX_GPUS; i++) {
            if (st->pending_gpus & ((uint64_t)1 << i)) {
                gd_device dev = {GD_CUDA, i};
                if (gd_sync_device(st, dev, cause) < 0) return NULL;
                synced++;
            }
        }
    }
    if (!synced) {
        gd_device cpu = {GD_CPU, -1};
        if (gd_sync_device(st, cpu, cause) < 0) return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *mod_synchronize(PyObject *module, PyObject *const *args, Py_ssize_t nargs,
                                 PyObject *kwnames)
{
    static const char *const names[] = {"device", NULL};
    gd_state *st = PyModule_GetState(module);
    PyObject *device = Py_None;
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    const char *kw = nkw ? PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, 0)) : NULL;
    if (nargs + nkw > 1 || (nkw && (!kw || strcmp(kw, names[0]) != 0))) {
        PyErr_SetString(PyExc_TypeError, "synchronize(device=None) takes at most one argument, device");
        return NULL;
    }
    if (nargs + nkw == 1) device = args[0];
    PyObject *cause = PyUnicode_FromString("synchronize");
    if (!cause) return NULL;
    PyObject *res;
    if (device == Py_None) {
        PyObject *a[1] = {cause};
        res = mod_sync(module, a, 1);
    } else {
        gd_device dev = {GD_CPU, -1};
        if (gd_parse_device(st, device, &dev) < 0) {
            Py_DECREF(cause);
            return NULL;
        }
        res = gd_sync_device(st, dev, "synchronize") < 0 ? NULL : Py_NewRef(Py_None);
    }
    Py_DECREF(cause);
    return res;
}

static PyObject *mod_pending_devices(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    gd_state *st = PyModule_GetState(module);
    PyObject *list = PyList_New(0);
    if (!list) return NULL;
    for (int i = 0; i < GD_MAX_GPUS; i++) {
        if ((st->pending_gpus & ((uint64_t)1 << i)) && gd_list_append_device(st, list, (gd_device){GD_CUDA, i}) < 0) {
            Py_DECREF(list);
            return NULL;
        }
    }
    return list;
}

static PyObject *mod_num_gpus(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    return PyLong_FromLong(gd_num_gpus(PyModule_GetState(module)));
}

static PyObject *mod_cuda_available(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    return PyBool_FromLong(gd_num_gpus(PyModule_GetState(module)) > 0);
}

/* _register_cuda(capsule): called by gpudev/__init__.py once gpudev._cuda imported. */
static PyObject *mod_register_cuda(PyObject *module, PyObject *capsule)
{
    gd_state *st = PyModule_GetState(module);
    const gd_backend *be = PyCapsule_GetPointer(capsule, GD_BACKEND_CAPSULE_NAME);
    if (!be) return NULL;
    if (be->abi_version != GD_BACKEND_ABI_VERSION) {
        PyErr_Format(PyExc_ImportError,
                     "gpudev._cuda was built for backend ABI %d but gpudev._C expects %d; rebuild gpudev",
                     be->abi_version, GD_BACKEND_ABI_VERSION);
        return NULL;
    }
    st->backends[GD_CUDA] = be;
    Py_XSETREF(st->cuda_capsule, Py_NewRef(capsule));
    Py_XSETREF(st->cuda_reason, Py_NewRef(Py_None));
    gpu_count_cached = -1;
    Py_RETURN_NONE;
}

static PyObject *mod_set_cuda_unavailable(PyObject *module, PyObject *reason)
{
    gd_state *st = PyModule_GetState(module);
    if (!PyUnicode_Check(reason)) {
        PyErr_SetString(PyExc_TypeError, "_set_cuda_unavailable(reason: str)");
        return NULL;
    }
    Py_XSETREF(st->cuda_reason, Py_NewRef(reason));
    Py_RETURN_NONE;
}

static PyObject *mod_cuda_reason(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    gd_state *st = PyModule_GetState(module);
    return Py_NewRef(st->cuda_reason ? st->cuda_reason : Py_None);
}

/* ------------------------------------------------------------------------------------------
 * tracing
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
        bytes_read += ins[i]->size * (int64_t)gd_dtype_size(ins[i]->dtype);
    }
    gd_device dev = out ? out->device : (in0 ? in0->device : (gd_device){GD_CPU, -1});
    int dtype = out ? (int)out->dtype : (in0 ? (int)in0->dtype : -1);
    int64_t bytes_written = out ? out->size * (int64_t)gd_dtype_size(out->dtype) : 0;
    int rc = gd_trace_emit(st, "op", name, dev, shapes, dtype, bytes_read, bytes_written);
    Py_DECREF(shapes);
    return rc;
}

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

/* ------------------------------------------------------------------------------------------
 * random seed, threads, CPU facts
 * ---------------------------------------------------------------------------------------- */

static PyObject *mod_manual_seed(PyObject *module, PyObject *seed)
{
    gd_state *st = PyModule_GetState(module);
    if (!PyLong_Check(seed)) {
        PyErr_Format(PyExc_TypeError, "manual_seed: seed must be an int, got %.100s", Py_TYPE(seed)->tp_name);
        return NULL;
    }
    /* Any Python int is accepted; its low 64 bits are the Philox key, as torch does. */
    uint64_t key = (uint64_t)PyLong_AsUnsignedLongLongMask(seed);
    if (key == (uint64_t)-1 && PyErr_Occurred()) return NULL;
    st->seed = key;
    st->offset = 0;
    Py_RETURN_NONE;
}

static PyObject *mod_rng_state(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    gd_state *st = PyModule_GetState(module);
    return Py_BuildValue("(KK)", (unsigned long long)st->seed, (unsigned long long)st->offset);
}

static PyObject *mod_set_num_threads(PyObject *module, PyObject *arg)
{
    gd_state *st = PyModule_GetState(module);
    long n = PyLong_AsLong(arg);
    if (n == -1 && PyErr_Occurred()) return NULL;
    if (n < 1 || n > 1024) {
        PyErr_Format(PyExc_ValueError, "set_num_threads: n must be between 1 and 1024, got %ld", n);
        return NULL;
    }
    gd_cpu_set_num_threads((int)n);
    st->num_threads = (int)n;
    Py_RETURN_NONE;
}

static PyObject *mod_get_num_threads(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(ignored))
{
    return PyLong_FromLong(gd_cpu_get_num_threads());
}

static PyObject *mod_cpu_facts(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(ignored))
{
    return Py_BuildValue("{s:s,s:s,s:i}", "simd", gd_cpu_simd_level(), "blas_config",
                         gd_cpu_blas_config(), "threads", gd_cpu_get_num_threads());
}

static PyObject *mod_cpu_memory_stats(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(ignored))
{
    int64_t s[4];
    gd_cpu_memory_stats(s);
    return Py_BuildValue("{s:L,s:L,s:L,s:L}", "allocated_bytes", (long long)s[0], "peak_allocated_bytes",
                         (long long)s[1], "allocations", (long long)s[2], "reserved_bytes", (long long)s[3]);
}

static PyObject *mod_cpu_reset_peak(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(ignored))
{
    gd_cpu_reset_peak();
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------------------------------
 * module definition
 * ---------------------------------------------------------------------------------------- */

static PyMethodDef module_methods[] = {
    {"num_gpus", mod_num_gpus, METH_NOARGS, "num_gpus() -> int: GPUs gpudev can use (0 without CUDA, driver or GPU)."},
    {"cuda_available", mod_cuda_available, METH_NOARGS, "cuda_available() -> bool: at least one usable GPU."},
    {"synchronize", (PyCFunction)(void (*)(void))mod_synchronize, METH_FASTCALL | METH_KEYWORDS,
     "synchronize(device=None): wait for queued work on `device`, or on every GPU with queued work."},
    {"_sync", (PyCFunction)(void (*)(void))mod_sync, METH_FASTCALL, NULL},
    {"_pending_devices", mod_pending_devices, METH_NOARGS, NULL},
    {"_register_cuda", mod_register_cuda, METH_O, NULL},
    {"_set_cuda_unavailable", mod_set_cuda_unavailable, METH_O, NULL},
    {"_cuda_reason", mod_cuda_reason, METH_NOARGS, NULL},
    {"_set_trace_hook", mod_set_trace_hook, METH_O, NULL},
    {"_get_trace_hook", mod_get_trace_hook, METH_NOARGS, NULL},
    {"manual_seed", mod_manual_seed, METH_O,
     "manual_seed(seed): seed the generator behind rand/randn on every device.\n\n"
     ">>> gd.manual_seed(0); a = gd.randn(3)"},
    {"_rng_state", mod_rng_state, METH_NOARGS, NULL},
    {"set_num_threads", mod_set_num_threads, METH_O,
     "set_num_threads(n): CPU threads for gpudev's kernels and OpenBLAS."},
    {"get_num_threads", mod_get_num_threads, METH_NOARGS, "get_num_threads() -> int"},
    {"_cpu_facts", mod_cpu_facts, METH_NOARGS, NULL},
    {"_cpu_memory_stats", mod_cpu_memory_stats, METH_NOARGS, NULL},
    {"_cpu_reset_peak", mod_cpu_reset_peak, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyObject *new_exception(PyObject *module, const char *name, PyObject *bases, const char *doc)
{
    PyObject *exc = PyErr_NewExceptionWithDoc(name, doc, bases, NULL);
    if (exc && PyModule_AddObjectRef(module, strrchr(name, '.') + 1, exc) < 0) Py_CLEAR(exc);
    return exc;
}

static int module_exec(PyObject *module)
{
    gd_state *st = PyModule_GetState(module);
    if (PyArray_ImportNumPyAPI() < 0) return -1;

    st->backends[GD_CPU] = &gd_cpu_backend;
    st->num_threads = gd_cpu_get_num_threads();
    /* Unseeded runs differ, as in NumPy; gd.manual_seed makes them repeatable. */
    PyObject *os = PyImport_ImportModule("os");
    PyObject *bytes = os ? PyObject_CallMethod(os, "urandom", "i", 8) : NULL;
    Py_XDECREF(os);
    if (!bytes) return -1;
    memcpy(&st->seed, PyBytes_AS_STRING(bytes), sizeof st->seed);
    Py_DECREF(bytes);
    st->cuda_reason = PyUnicode_FromString("the CUDA backend was not loaded");
    if (!st->cuda_reason) return -1;

    PyObject *bases = NULL;
    st->GpudevError = new_exception(module, "gpudev.GpudevError", PyExc_Exception,
                                    "Base class of every gpudev error.");
    if (!st->GpudevError) return -1;
#define GD_EXC(field, name, std, doc)                                                   \
    bases = PyTuple_Pack(2, st->GpudevError, std);                                      \
    if (!bases) return -1;                                                              \
    st->field = new_exception(module, "gpudev." name, bases, doc);                      \
    Py_DECREF(bases);                                                                   \
    if (!st->field) return -1;
    GD_EXC(DeviceMismatchError, "DeviceMismatchError", PyExc_ValueError,
           "The operands of one operation are on different devices; copy one with .to().")
    GD_EXC(DeviceUnavailableError, "DeviceUnavailableError", PyExc_RuntimeError,
           "The device does not exist on this machine, or its backend is not available.")
    GD_EXC(OutOfMemoryError, "OutOfMemoryError", PyExc_MemoryError,
           "An allocation did not fit in the device's memory; the process can go on.")
    GD_EXC(CudaError, "CudaError", PyExc_RuntimeError,
           "A CUDA or cuBLAS call failed; .status holds the CUDA status code.")
#undef GD_EXC

    static const int np_types[GD_NUM_DTYPES] = {NPY_FLOAT32, NPY_FLOAT64, NPY_INT64};
    static const char *dtype_names[GD_NUM_DTYPES] = {"float32", "float64", "int64"};
    for (int i = 0; i < GD_NUM_DTYPES; i++) {
        PyArray_Descr *d = PyArray_DescrFromType(np_types[i]);
        if (!d) return -1;
        st->np_dtypes[i] = (PyObject *)d;
        /* gd.float32 is numpy.float32, so `a.dtype == gd.float32` reads as in NumPy */
        if (PyModule_AddObjectRef(module, dtype_names[i], (PyObject *)d->typeobj) < 0) return -1;
    }
    st->np_ndarray = Py_NewRef((PyObject *)&PyArray_Type);

    if (gd_device_type_init(module, st) < 0) return -1;
    if (gd_array_type_init(module, st) < 0) return -1;
    if (PyModule_AddFunctions(module, gd_array_module_methods) < 0) return -1;
    return 0;
}

static int module_traverse(PyObject *module, visitproc visit, void *arg)
{
    gd_state *st = PyModule_GetState(module);
    Py_VISIT(st->device_type);
    Py_VISIT(st->array_type);
    Py_VISIT(st->GpudevError);
    Py_VISIT(st->DeviceMismatchError);
    Py_VISIT(st->DeviceUnavailableError);
    Py_VISIT(st->OutOfMemoryError);
    Py_VISIT(st->CudaError);
    for (int i = 0; i < GD_NUM_DTYPES; i++) Py_VISIT(st->np_dtypes[i]);
    Py_VISIT(st->np_ndarray);
    Py_VISIT(st->cpu_device);
    Py_VISIT(st->cuda_capsule);
    Py_VISIT(st->cuda_reason);
    Py_VISIT(st->trace_hook);
    return 0;
}

static int module_clear(PyObject *module)
{
    gd_state *st = PyModule_GetState(module);
    Py_CLEAR(st->device_type);
    Py_CLEAR(st->array_type);
    Py_CLEAR(st->GpudevError);
    Py_CLEAR(st->DeviceMismatchError);
    Py_CLEAR(st->DeviceUnavailableError);
    Py_CLEAR(st->OutOfMemoryError);
    Py_CLEAR(st->CudaError);
    for (int i = 0; i < GD_NUM_DTYPES; i++) Py_CLEAR(st->np_dtypes[i]);
    Py_CLEAR(st->np_ndarray);
    Py_CLEAR(st->cpu_device);
    /* The backends' code stays loaded (extension modules are never unloaded), so arrays
     * freed after this point can still return their memory through the table. */
    Py_CLEAR(st->cuda_capsule);
    Py_CLEAR(st->cuda_reason);
    Py_CLEAR(st->trace_hook);
    return 0;
}

static void module_free(void *module) { module_clear((PyObject *)module); }

static PyModuleDef_Slot module_slots[] = {
    {Py_mod_exec, module_exec},
    {0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "gpudev._C",
    .m_doc = "gpudev's C core: devices, arrays and the CPU backend.",
    .m_size = sizeof(gd_state),
    .m_methods = module_methods,
    .m_slots = module_slots,
    .m_traverse = module_traverse,
    .m_clear = module_clear,
    .m_free = module_free,
};

PyMODINIT_FUNC PyInit__C(void) { return PyModuleDef_Init(&module_def); }
