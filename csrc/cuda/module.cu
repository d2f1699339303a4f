/* module.cu - the gpudev._cuda extension module: hands the CUDA backend's table to gpudev._C
 * through the capsule `backend`, and offers the few functions that are about GPUs rather than
 * arrays (device count and properties, memory statistics, TF32, CUDA events for timing,
 * versions). Importing it touches no driver, so it loads on machines without one.
 *
 * Failures raise RuntimeError(message, status) with the CUDA status as the second argument;
 * the gpudev package re-raises them as gpudev.CudaError (or DeviceUnavailableError).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "backend_cuda.cuh"

#ifndef GD_CUDA_ARCH_LIST
#define GD_CUDA_ARCH_LIST "unknown" /* setup.py defines the -gencode targets it compiled */
#endif

#define GD_EVENT_CAPSULE_NAME "gpudev._cuda.event"

/* ------------------------------------------------------------------------------------------
 * errors and arguments
 * ---------------------------------------------------------------------------------------- */

/* RuntimeError("op: message", status); returns NULL for `return gd_py_raise(...)`. */
static PyObject *gd_py_raise(const char *op, const gd_error *err)
{
    PyObject *args = Py_BuildValue("(Ni)", PyUnicode_FromFormat("%s: %s", op, err->message), err->cuda_status);
    if (args) {
        PyErr_SetObject(PyExc_RuntimeError, args);
        Py_DECREF(args);
    }
    return NULL;
}

/* A device index argument: an int that names an existing GPU. -1 with an exception set. */
static int gd_py_device(PyObject *arg, const char *op)
{
    long i = PyLong_AsLong(arg);
    if (i == -1 && PyErr_Occurred()) return -1;
    gd_error err;
    if (i < 0 || i >= GD_CUDA_MAX_DEVICES) {
        gd_set_error(&err, GD_ERR_DEVICE_UNAVAILABLE, "cuda:%ld is not available: device indices run from 0 to %d",
                      i, GD_CUDA_MAX_DEVICES - 1);
        err.cuda_status = (int)cudaErrorInvalidDevice;
        gd_py_raise(op, &err);
        return -1;
    }
    if (gd_cuda_check_index((int)i, &err) != GD_OK) {
        gd_py_raise(op, &err);
        return -1;
    }
    return (int)i;
}

/* ------------------------------------------------------------------------------------------
 * devices and versions
 * ---------------------------------------------------------------------------------------- */

static PyObject *gd_py_device_count(PyObject *, PyObject *) { return PyLong_FromLong(gd_cuda_device_count()); }

static PyObject *gd_py_runtime_version(PyObject *, PyObject *)
{
    int v = 0;
    if (cudaRuntimeGetVersion(&v) != cudaSuccess) {
        (void)cudaGetLastError();
        v = 0;
    }
    return PyLong_FromLong(v);
}

static PyObject *gd_py_driver_version(PyObject *, PyObject *)
{
    int v = 0; /* stays 0 without a driver */
    if (cudaDriverGetVersion(&v) != cudaSuccess) {
        (void)cudaGetLastError();
        v = 0;
    }
    return PyLong_FromLong(v);
}

static PyObject *gd_py_arch_list(PyObject *, PyObject *) { return PyUnicode_FromString(GD_CUDA_ARCH_LIST); }

static int gd_device_synchronize(int device, gd_error *err)
{
    gd_cuda_device *dev;
    int rc = gd_cuda_enter(&dev, device, err);
    if (rc != GD_OK) return rc;
    GD_CHECK(cudaDeviceSynchronize());
    return GD_OK;
}

/* Waits for every stream of this process on the GPU, not only gpudev's: what importing memory
 * that another library may still be writing needs, whatever stream it writes on. */
static PyObject *gd_py_device_synchronize(PyObject *, PyObject *arg)
{
    int device = gd_py_device(arg, "device_synchronize");
    if (device < 0) return NULL;
    gd_error err;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = gd_device_synchronize(device, &err);
    Py_END_ALLOW_THREADS
    if (rc != GD_OK) return gd_py_raise("device_synchronize", &err);
    Py_RETURN_NONE;
}

static int gd_device_info(cudaDeviceProp *prop, int *clock_khz, int *mem_clock_khz, size_t *free_b, size_t *total_b,
                          int device, gd_error *err)
{
    gd_cuda_device *dev;
    int rc = gd_cuda_enter(&dev, device, err);
    if (rc != GD_OK) return rc;
    GD_CHECK(cudaGetDeviceProperties(prop, device));
    /* CUDA 13 removed the clock fields from cudaDeviceProp */
    GD_CHECK(cudaDeviceGetAttribute(clock_khz, cudaDevAttrClockRate, device));
    GD_CHECK(cudaDeviceGetAttribute(mem_clock_khz, cudaDevAttrMemoryClockRate, device));
    GD_CHECK(cudaMemGetInfo(free_b, total_b));
    return GD_OK;
}

static PyObject *gd_py_device_info(PyObject *, PyObject *arg)
{
    int device = gd_py_device(arg, "device_info");
    if (device < 0) return NULL;
    cudaDeviceProp prop;
    int clock_khz = 0, mem_clock_khz = 0, driver = 0, runtime = 0;
    size_t free_b = 0, total_b = 0;
    gd_error err;
    if (gd_device_info(&prop, &clock_khz, &mem_clock_khz, &free_b, &total_b, device, &err) != GD_OK)
        return gd_py_raise("device_info", &err);
    if (cudaDriverGetVersion(&driver) != cudaSuccess) (void)cudaGetLastError();
    if (cudaRuntimeGetVersion(&runtime) != cudaSuccess) (void)cudaGetLastError();
    return Py_BuildValue("{s:s, s:(ii), s:i, s:K, s:K, s:i, s:i, s:i, s:i, s:i, s:i}", "name", prop.name,
                         "compute_capability", prop.major, prop.minor, "multiprocessors", prop.multiProcessorCount,
                         "total_memory", (unsigned long long)total_b, "free_memory", (unsigned long long)free_b,
                         "clock_rate_khz", clock_khz, "memory_clock_rate_khz", mem_clock_khz, "memory_bus_width",
                         prop.memoryBusWidth, "driver_version", driver, "runtime_version", runtime, "l2_cache_bytes",
                         prop.l2CacheSize);
}

/* ------------------------------------------------------------------------------------------
 * memory
 * ---------------------------------------------------------------------------------------- */

static PyObject *gd_py_memory_stats(PyObject *, PyObject *arg)
{
    int device = gd_py_device(arg, "memory_stats");
    if (device < 0) return NULL;
    gd_cuda_memory_stats s;
    gd_error err;
    if (gd_cuda_get_memory_stats(&s, device, &err) != GD_OK) return gd_py_raise("memory_stats", &err);
    return Py_BuildValue("{s:L, s:L, s:L, s:L}", "allocated_bytes", (long long)s.allocated_bytes, "reserved_bytes",
                         (long long)s.reserved_bytes, "peak_allocated_bytes", (long long)s.peak_allocated_bytes,
                         "allocations", (long long)s.allocations);
}

static PyObject *gd_py_reset_peak_memory_stats(PyObject *, PyObject *arg)
{
    int device = gd_py_device(arg, "reset_peak_memory_stats");
    if (device < 0) return NULL;
    gd_cuda_reset_peak_memory_stats(device);
    Py_RETURN_NONE;
}

static PyObject *gd_py_empty_cache(PyObject *, PyObject *arg)
{
    int device = gd_py_device(arg, "empty_cache");
    if (device < 0) return NULL;
    gd_error err;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = gd_cuda_empty_cache(device, &err);
    Py_END_ALLOW_THREADS
    if (rc != GD_OK) return gd_py_raise("empty_cache", &err);
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------------------------------
 * TF32
 * ---------------------------------------------------------------------------------------- */

/* Takes effect at each device's next matmul, which resets its handle's math mode under the
 * handle's lock, so a product already being queued by another thread is never disturbed. */
static PyObject *gd_py_set_tf32(PyObject *, PyObject *arg)
{
    int on = PyObject_IsTrue(arg);
    if (on < 0) return NULL;
    gd_cuda_tf32.store(on != 0);
    Py_RETURN_NONE;
}

static PyObject *gd_py_get_tf32(PyObject *, PyObject *) { return PyBool_FromLong(gd_cuda_tf32.load() ? 1 : 0); }

/* ------------------------------------------------------------------------------------------
 * events: timing GPU work from Python
 * ---------------------------------------------------------------------------------------- */

typedef struct gd_py_event {
    cudaEvent_t event;
    int device;
} gd_py_event;

static void gd_py_event_destroy(PyObject *capsule)
{
    gd_py_event *e = (gd_py_event *)PyCapsule_GetPointer(capsule, GD_EVENT_CAPSULE_NAME);
    if (!e) {
        PyErr_Clear();
        return;
    }
    /* fails harmlessly once CUDA has shut down at interpreter exit */
    if (cudaEventDestroy(e->event) != cudaSuccess) (void)cudaGetLastError();
    PyMem_RawFree(e);
}

static gd_py_event *gd_py_event_arg(PyObject *arg, const char *op)
{
    if (!PyCapsule_IsValid(arg, GD_EVENT_CAPSULE_NAME)) {
        PyErr_Format(PyExc_TypeError, "%s: expected an event made by event_create(), got %.100s", op,
                     Py_TYPE(arg)->tp_name);
        return NULL;
    }
    return (gd_py_event *)PyCapsule_GetPointer(arg, GD_EVENT_CAPSULE_NAME);
}

static int gd_event_create(cudaEvent_t *out, int device, gd_error *err)
{
    gd_cuda_device *dev;
    int rc = gd_cuda_enter(&dev, device, err);
    if (rc != GD_OK) return rc;
    GD_CHECK(cudaEventCreate(out));
    return GD_OK;
}

static PyObject *gd_py_event_create(PyObject *, PyObject *arg)
{
    int device = gd_py_device(arg, "event_create");
    if (device < 0) return NULL;
    gd_py_event *e = (gd_py_event *)PyMem_RawMalloc(sizeof *e);
    if (!e) return PyErr_NoMemory();
    e->device = device;
    gd_error err;
    if (gd_event_create(&e->event, device, &err) != GD_OK) {
        PyMem_RawFree(e);
        return gd_py_raise("event_create", &err);
    }
    PyObject *capsule = PyCapsule_New(e, GD_EVENT_CAPSULE_NAME, gd_py_event_destroy);
    if (!capsule) {
        if (cudaEventDestroy(e->event) != cudaSuccess) (void)cudaGetLastError();
        PyMem_RawFree(e);
    }
    return capsule;
}

static int gd_event_record(const gd_py_event *e, gd_error *err)
{
    gd_cuda_device *dev;
    int rc = gd_cuda_enter(&dev, e->device, err);
    if (rc != GD_OK) return rc;
    GD_CHECK(cudaEventRecord(e->event, dev->stream));
    return GD_OK;
}

/* Records on the device's gpudev stream, so the event marks the point after all gpudev work
 * queued so far on that device. */
static PyObject *gd_py_event_record(PyObject *, PyObject *arg)
{
    gd_py_event *e = gd_py_event_arg(arg, "event_record");
    if (!e) return NULL;
    gd_error err;
    if (gd_event_record(e, &err) != GD_OK) return gd_py_raise("event_record", &err);
    Py_RETURN_NONE;
}

static int gd_event_elapsed(float *ms, const gd_py_event *start, const gd_py_event *end, gd_error *err)
{
    GD_CHECK(cudaEventSynchronize(end->event));
    GD_CHECK(cudaEventElapsedTime(ms, start->event, end->event));
    return GD_OK;
}

static PyObject *gd_py_event_elapsed_ms(PyObject *, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "event_elapsed_ms: expected 2 arguments (start, end), got %zd", nargs);
        return NULL;
    }
    gd_py_event *start = gd_py_event_arg(args[0], "event_elapsed_ms");
    gd_py_event *end = start ? gd_py_event_arg(args[1], "event_elapsed_ms") : NULL;
    if (!start || !end) return NULL;
    if (start->device != end->device) {
        PyErr_Format(PyExc_ValueError,
                     "event_elapsed_ms: the events belong to different GPUs, cuda:%d and cuda:%d; time each GPU "
                     "with its own pair of events",
                     start->device, end->device);
        return NULL;
    }
    float ms = 0.0f;
    gd_error err;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = gd_event_elapsed(&ms, start, end, &err);
    Py_END_ALLOW_THREADS
    if (rc != GD_OK) return gd_py_raise("event_elapsed_ms", &err);
    return PyFloat_FromDouble((double)ms);
}

/* ------------------------------------------------------------------------------------------
 * the module
 * ---------------------------------------------------------------------------------------- */

static PyMethodDef gd_cuda_methods[] = {
    {"device_count", gd_py_device_count, METH_NOARGS,
     "device_count() -> int\n\nNumber of CUDA GPUs; 0 without a driver or a GPU (never raises)."},
    {"device_info", gd_py_device_info, METH_O,
     "device_info(i) -> dict\n\nName, compute capability, multiprocessors, memory, clocks, bus width, L2 size "
     "and versions of GPU i."},
    {"device_synchronize", gd_py_device_synchronize, METH_O,
     "device_synchronize(i)\n\nWait until all work queued on GPU i by this process, on every stream, has finished."},
    {"memory_stats", gd_py_memory_stats, METH_O,
     "memory_stats(i) -> dict\n\nallocated_bytes, reserved_bytes, peak_allocated_bytes and allocations of gpudev "
     "on GPU i."},
    {"reset_peak_memory_stats", gd_py_reset_peak_memory_stats, METH_O,
     "reset_peak_memory_stats(i)\n\nSet peak_allocated_bytes of GPU i to what is allocated now."},
    {"empty_cache", gd_py_empty_cache, METH_O,
     "empty_cache(i)\n\nWait for GPU i, then return the memory pool's unused memory to the driver."},
    {"set_tf32", gd_py_set_tf32, METH_O,
     "set_tf32(on)\n\nAllow (True) or forbid (False, the default) TF32 tensor cores in float32 matmuls."},
    {"get_tf32", gd_py_get_tf32, METH_NOARGS, "get_tf32() -> bool\n\nWhether float32 matmuls may use TF32."},
    {"event_create", gd_py_event_create, METH_O,
     "event_create(i) -> capsule\n\nA CUDA event on GPU i, destroyed with the capsule."},
    {"event_record", gd_py_event_record, METH_O,
     "event_record(event)\n\nRecord the event after all gpudev work queued so far on its GPU."},
    {"event_elapsed_ms", (PyCFunction)(void (*)(void))gd_py_event_elapsed_ms, METH_FASTCALL,
     "event_elapsed_ms(start, end) -> float\n\nWait for `end`, then return the milliseconds between the events."},
    {"runtime_version", gd_py_runtime_version, METH_NOARGS,
     "runtime_version() -> int\n\nCUDA runtime version, e.g. 13000 for 13.0."},
    {"driver_version", gd_py_driver_version, METH_NOARGS,
     "driver_version() -> int\n\nHighest CUDA version the driver supports; 0 without a driver."},
    {"arch_list", gd_py_arch_list, METH_NOARGS,
     "arch_list() -> str\n\nThe GPU architectures this module was compiled for."},
    {NULL, NULL, 0, NULL},
};

static int gd_cuda_exec(PyObject *module)
{
    PyObject *capsule = PyCapsule_New((void *)gd_cuda_backend(), GD_BACKEND_CAPSULE_NAME, NULL);
    if (!capsule) return -1;
    if (PyModule_AddObject(module, "backend", capsule) < 0) {
        Py_DECREF(capsule);
        return -1;
    }
    return 0;
}

static PyModuleDef_Slot gd_cuda_slots[] = {
    {Py_mod_exec, (void *)gd_cuda_exec},
#if PY_VERSION_HEX >= 0x030C0000
    /* the backend keeps per-process state (streams, pools), one set for all interpreters */
    {Py_mod_multiple_interpreters, Py_MOD_MULTIPLE_INTERPRETERS_NOT_SUPPORTED},
#endif
    {0, NULL},
};

static struct PyModuleDef gd_cuda_module = {
    PyModuleDef_HEAD_INIT,
    "gpudev._cuda",
    "The CUDA backend of gpudev: its table for gpudev._C (the `backend` capsule) and GPU queries.",
    0,
    gd_cuda_methods,
    gd_cuda_slots,
    NULL,
    NULL,
    NULL,
};

extern "C" PyMODINIT_FUNC PyInit__cuda(void) { return PyModuleDef_Init(&gd_cuda_module); }
