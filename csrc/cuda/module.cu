/* module.cu - the gpudev._cuda extension module: hands the CUDA backend's table to gpudev._C
 * through the capsule `backend`, and offers the few functions that are about this build and
 * the CUDA runtime rather than a device: the GPU count, runtime and driver versions, the
 * architectures compiled for, and the TF32 switch. Everything about one device (memory,
 * properties, events) reaches Python through the table and gpudev._C. Importing this module
 * touches no driver, so it loads on machines without one.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "backend_cuda.cuh"

#ifndef GD_CUDA_ARCH_LIST
#define GD_CUDA_ARCH_LIST "unknown" /* setup.py defines the -gencode targets it compiled */
#endif

/* ------------------------------------------------------------------------------------------
 * devices and versions
 * ---------------------------------------------------------------------------------------- */

static PyObject *gd_py_device_count(PyObject *, PyObject *) { return PyLong_FromLong(gd_cuda_device_count()); }

static PyObject *gd_py_runtime_version(PyObject *, PyObject *)
{
    int driver, runtime;
    gd_cuda_versions(&driver, &runtime);
    return PyLong_FromLong(runtime);
}

static PyObject *gd_py_driver_version(PyObject *, PyObject *)
{
    int driver, runtime;
    gd_cuda_versions(&driver, &runtime);
    return PyLong_FromLong(driver);
}

static PyObject *gd_py_arch_list(PyObject *, PyObject *) { return PyUnicode_FromString(GD_CUDA_ARCH_LIST); }

/* ------------------------------------------------------------------------------------------
 * TF32
 * ---------------------------------------------------------------------------------------- */

/* Takes effect at each device's next matmul, which resets its handle's math mode under the
 * handle's lock, so a product already being queued by another thread is never disturbed. */
static PyObject *gd_py_set_tf32(PyObject *, PyObject *arg)
{
    int on = PyObject_IsTrue(arg);
    if (on < 0) return NULL;
    gd_cuda_set_tf32(on);
    Py_RETURN_NONE;
}

static PyObject *gd_py_get_tf32(PyObject *, PyObject *) { return PyBool_FromLong(gd_cuda_tf32.load() ? 1 : 0); }

/* ------------------------------------------------------------------------------------------
 * the module
 * ---------------------------------------------------------------------------------------- */

static PyMethodDef gd_cuda_methods[] = {
    {"device_count", gd_py_device_count, METH_NOARGS,
     "device_count() -> int\n\nNumber of CUDA GPUs; 0 without a driver or a GPU (never raises)."},
    {"set_tf32", gd_py_set_tf32, METH_O,
     "set_tf32(on)\n\nAllow (True) or forbid (False, the default) TF32 tensor cores in float32 matmuls."},
    {"get_tf32", gd_py_get_tf32, METH_NOARGS, "get_tf32() -> bool\n\nWhether float32 matmuls may use TF32."},
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
    "The CUDA backend of gpudev: its table for gpudev._C (the `backend` capsule), versions and TF32.",
    0,
    gd_cuda_methods,
    gd_cuda_slots,
    NULL,
    NULL,
    NULL,
};

extern "C" PyMODINIT_FUNC PyInit__cuda(void) { return PyModuleDef_Init(&gd_cuda_module); }
