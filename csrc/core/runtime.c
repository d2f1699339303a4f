/* runtime.c - what every operation of gpudev._C relies on: the exception types and the one
 * path from a backend's gd_error to them (gd_raise), the backend registry (the CPU built in,
 * CUDA handed over by gpudev._cuda through a capsule), synchronization, and the process-wide
 * settings: CPU threads and the random seed. Running a backend call (gd_run_begin and
 * gd_run_end) is inline in runtime.h, on every operation's path.
 */
#include "runtime.h"
#include "core.h"
#include "args.h"

#include "cpu/backend_cpu.h"

#include <string.h>

/* ------------------------------------------------------------------------------------------
 * exceptions
 * ---------------------------------------------------------------------------------------- */

/* A backend's message as people read it: under the CPU emulation every GPU the CUDA backend
 * names is an emulated one, so each "cuda:N" of a GPU here gets gd_device_label's " (emulated)"
 * (the backend's code is the real GPU's and does not know). out holds 2 * sizeof message. */
static const char *labelled(const gd_state *st, const char *text, char *out, size_t size)
{
    if (!st->cuda_emulated) return text;
    size_t o = 0;
    for (const char *p = text; *p && o + 1 < size; ) {
        int index, used = 0;
        char buf[32];
        if (strncmp(p, "cuda:", 5) == 0 && sscanf(p, "cuda:%d%n", &index, &used) == 1 && index >= 0 &&
            index < st->gpu_count && strncmp(p + used, " (emulated)", 11) != 0) {
            o += (size_t)snprintf(out + o, size - o, "%s", gd_device_label(st, (gd_device){GD_CUDA, index}, buf));
            p += used;
        } else {
            out[o++] = *p++;
        }
    }
    out[o < size ? o : size - 1] = '\0';
    return out;
}

int gd_raise(gd_state *st, const char *op, const gd_error *err)
{
    /* A call that failed while a signal waits for its handler (a wait for an emulated GPU
     * stops at Ctrl-C): the handler's exception (KeyboardInterrupt) comes first, as from
     * Python's own blocking calls. */
    if (PyErr_CheckSignals() < 0) return -1;
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
    char text[2 * sizeof err->message];
    PyObject *msg = PyUnicode_FromFormat("%s: %s", op,
                                         err->message[0] ? labelled(st, err->message, text, sizeof text) : "unknown error");
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

static PyObject *new_exception(PyObject *module, const char *name, PyObject *base, PyObject *std, const char *doc)
{
    PyObject *bases = std ? PyTuple_Pack(2, base, std) : Py_NewRef(base);
    if (!bases) return NULL;
    PyObject *exc = PyErr_NewExceptionWithDoc(name, doc, bases, NULL);
    Py_DECREF(bases);
    if (exc && PyModule_AddObjectRef(module, strrchr(name, '.') + 1, exc) < 0) Py_CLEAR(exc);
    return exc;
}

static int exceptions_setup(PyObject *module, gd_state *st)
{
    st->GpudevError = new_exception(module, "gpudev.GpudevError", PyExc_Exception, NULL,
                                    "Base class of every gpudev error.");
    if (!st->GpudevError) return -1;
    st->DeviceMismatchError =
        new_exception(module, "gpudev.DeviceMismatchError", st->GpudevError, PyExc_ValueError,
                      "The operands of one operation are on different devices; copy one with .to().");
    st->DeviceUnavailableError =
        new_exception(module, "gpudev.DeviceUnavailableError", st->GpudevError, PyExc_RuntimeError,
                      "The device does not exist on this machine, or its backend is not available.");
    st->OutOfMemoryError =
        new_exception(module, "gpudev.OutOfMemoryError", st->GpudevError, PyExc_MemoryError,
                      "An allocation did not fit in the device's memory; the process can go on.");
    st->CudaError = new_exception(module, "gpudev.CudaError", st->GpudevError, PyExc_RuntimeError,
                                  "A CUDA or cuBLAS call failed; .status holds the CUDA status code.");
    return st->DeviceMismatchError && st->DeviceUnavailableError && st->OutOfMemoryError && st->CudaError ? 0 : -1;
}

/* ------------------------------------------------------------------------------------------
 * backends and devices
 * ---------------------------------------------------------------------------------------- */

int gd_num_gpus(gd_state *st)
{
    if (!st->backends[GD_CUDA]) return 0;
    /* GPUs do not come and go while a process runs; asking the driver once is enough. */
    if (st->gpu_count < 0) {
        int n = st->backends[GD_CUDA]->device_count();
        st->gpu_count = n < 0 ? 0 : (n > GD_MAX_GPUS ? GD_MAX_GPUS : n);
    }
    return st->gpu_count;
}

const gd_backend *gd_backend_check(gd_state *st, gd_device dev, const char *op)
{
    if (dev.type == GD_CPU) return st->backends[GD_CPU];
    char name[32];
    gd_device_str(dev, name);
    int n = gd_num_gpus(st);
    if (n == 0) {
        /* one wording of a missing GPU, with CUDA's reason: gpudev/_devices.py's no_gpu_reason */
        PyObject *why = st->cuda_reason && st->cuda_reason != Py_None
                            ? Py_NewRef(st->cuda_reason)
                            : PyUnicode_FromString("no CUDA driver or GPU was found");
        if (!why) return NULL;
        PyErr_Format(st->DeviceUnavailableError,
                     "%s: %s is not available: this machine has no usable GPU (%U); "
                     "use gd.try_gpu(%d) to fall back to the CPU",
                     op, name, why, dev.index);
        Py_DECREF(why);
        return NULL;
    }
    if (dev.index < 0 || dev.index >= n) {
        PyErr_Format(st->DeviceUnavailableError,
                     "%s: %s is not available: this machine has %d %s%s; "
                     "use gd.try_gpu(%d) to fall back to the CPU",
                     op, name, n, st->cuda_emulated ? "emulated GPU" : "GPU", n == 1 ? "" : "s", dev.index);
        return NULL;
    }
    return st->backends[GD_CUDA];
}

static PyObject *mod_num_gpus(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    return PyLong_FromLong(gd_num_gpus(PyModule_GetState(module)));
}

static PyObject *mod_cuda_available(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    return PyBool_FromLong(gd_num_gpus(PyModule_GetState(module)) > 0);
}

/* _register_cuda(capsule, emulated=False): called by gpudev/__init__.py once gpudev._cuda (or,
 * emulated, gpudev._cuda_emu) imported. */
static PyObject *mod_register_cuda(PyObject *module, PyObject *args)
{
    gd_state *st = PyModule_GetState(module);
    PyObject *capsule;
    int emulated = 0;
    if (!PyArg_ParseTuple(args, "O|p:_register_cuda", &capsule, &emulated)) return NULL;
    const gd_backend *be = PyCapsule_GetPointer(capsule, GD_BACKEND_CAPSULE_NAME);
    if (!be) return NULL;
    if (be->abi_version != GD_BACKEND_ABI_VERSION) {
        PyErr_Format(PyExc_ImportError,
                     "gpudev._cuda was built for backend ABI %d but gpudev._C expects %d; rebuild gpudev",
                     be->abi_version, GD_BACKEND_ABI_VERSION);
        return NULL;
    }
    st->backends[GD_CUDA] = be;
    st->cuda_emulated = emulated;
    Py_XSETREF(st->cuda_capsule, Py_NewRef(capsule));
    Py_XSETREF(st->cuda_reason, Py_NewRef(Py_None));
    st->gpu_count = -1;
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

/* Unseeded runs differ, as in NumPy; gd.manual_seed makes them repeatable. */
static int seed_from_os(gd_state *st)
{
    PyObject *os = PyImport_ImportModule("os");
    PyObject *bytes = os ? PyObject_CallMethod(os, "urandom", "i", 8) : NULL;
    Py_XDECREF(os);
    if (!bytes) return -1;
    memcpy(&st->seed, PyBytes_AS_STRING(bytes), sizeof st->seed);
    Py_DECREF(bytes);
    return 0;
}

static PyObject *mod_set_num_threads(PyObject *Py_UNUSED(module), PyObject *arg)
{
    long n = PyLong_AsLong(arg);
    if (n == -1 && PyErr_Occurred()) return NULL;
    if (n < 1 || n > 1024) {
        PyErr_Format(PyExc_ValueError, "set_num_threads: n must be between 1 and 1024, got %ld", n);
        return NULL;
    }
    gd_cpu_set_num_threads((int)n);
    Py_RETURN_NONE;
}

static PyObject *mod_get_num_threads(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(ignored))
{
    return PyLong_FromLong(gd_cpu_get_num_threads());
}

static PyObject *mod_cpu_facts(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(ignored))
{
    return Py_BuildValue("{s:s,s:s,s:s,s:i,s:L}", "simd", gd_cpu_simd_level(), "blas_config",
                         gd_cpu_blas_config(), "blas_core", gd_cpu_blas_core(), "threads", gd_cpu_get_num_threads(),
                         "elementwise_parallel_from", (long long)gd_cpu_elementwise_parallel_from());
}

/* ------------------------------------------------------------------------------------------
 * setup
 * ---------------------------------------------------------------------------------------- */

static PyMethodDef runtime_functions[] = {
    GD_METHOD("num_gpus", mod_num_gpus, METH_NOARGS, "$module",
              "How many GPUs gpudev can use (0 without CUDA, driver or GPU)."),
    GD_METHOD("cuda_available", mod_cuda_available, METH_NOARGS, "$module", "Whether at least one GPU is usable."),
    {"_register_cuda", mod_register_cuda, METH_VARARGS, NULL},
    {"_set_cuda_unavailable", mod_set_cuda_unavailable, METH_O, NULL},
    {"_cuda_reason", mod_cuda_reason, METH_NOARGS, NULL},
    GD_METHOD("manual_seed", mod_manual_seed, METH_O, "$module, seed, /",
              "Seed the generator behind rand/randn on every device.\n\n>>> gd.manual_seed(0); a = gd.randn(3)"),
    {"_rng_state", mod_rng_state, METH_NOARGS, NULL},
    GD_METHOD("set_num_threads", mod_set_num_threads, METH_O, "$module, n, /",
              "CPU threads for gpudev's kernels and OpenBLAS."),
    GD_METHOD("get_num_threads", mod_get_num_threads, METH_NOARGS, "$module",
              "CPU threads for gpudev's kernels and OpenBLAS."),
    {"_cpu_facts", mod_cpu_facts, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

int gd_runtime_setup(PyObject *module, gd_state *st)
{
    st->backends[GD_CPU] = &gd_cpu_backend;
    st->gpu_count = -1;
    st->cuda_reason = PyUnicode_FromString("the CUDA backend was not loaded");
    if (!st->cuda_reason || seed_from_os(st) < 0 || exceptions_setup(module, st) < 0) return -1;
    return PyModule_AddFunctions(module, runtime_functions);
}
