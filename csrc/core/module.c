/* module.c - the root of gpudev._C: multi-phase init, the module state (core.h), and its
 * traverse and clear. Everything the module holds is added by the setup function of the file
 * that implements it; exec calls them in order.
 */
#include "core.h"
#include "array_type.h"
#include "autograd.h"
#include "creation.h"
#include "device.h"
#include "dtypes.h"
#include "elementwise.h"
#include "gather.h"
#include "interchange.h"
#include "matmul.h"
#include "reduce.h"
#include "runtime.h"
#include "select.h"
#include "services.h"
#include "shape_ops.h"
#include "sync.h"
#include "trace.h"
#include "window.h"
#include "transfer.h"

/* ------------------------------------------------------------------------------------------
 * exec: each file adds its part
 * ---------------------------------------------------------------------------------------- */

static int module_exec(PyObject *module)
{
    gd_state *st = PyModule_GetState(module);
    if (gd_import_numpy() < 0) return -1;
    if (gd_runtime_setup(module, st) < 0 || gd_dtypes_setup(module, st) < 0 || gd_device_setup(module, st) < 0 ||
        gd_array_setup(module, st) < 0)
        return -1;
    if (gd_trace_setup(module) < 0 || gd_creation_setup(module) < 0 || gd_elementwise_setup(module, st) < 0 ||
        gd_reduce_setup(module) < 0 || gd_matmul_setup(module) < 0 || gd_shape_ops_setup(module) < 0 ||
        gd_services_setup(module) < 0 || gd_dlpack_setup(module) < 0 || gd_autograd_setup(module, st) < 0 ||
        gd_gather_setup(module) < 0 || gd_select_setup(module) < 0 || gd_sync_setup(module) < 0 ||
        gd_transfer_setup(module) < 0 || gd_window_setup(module) < 0)
        return -1;
    return 0;
}

/* ------------------------------------------------------------------------------------------
 * traverse, clear, free
 * ---------------------------------------------------------------------------------------- */

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
    Py_VISIT(st->deferred_key);
    Py_VISIT(st->ag_hooks);
    Py_VISIT(st->multi_index);
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
    Py_CLEAR(st->deferred_key);
    Py_CLEAR(st->ag_hooks);
    Py_CLEAR(st->multi_index);
    return 0;
}

static void module_free(void *module) { module_clear((PyObject *)module); }

/* ------------------------------------------------------------------------------------------
 * the module
 * ---------------------------------------------------------------------------------------- */

static PyModuleDef_Slot module_slots[] = {
    {Py_mod_exec, module_exec},
    {0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "gpudev._C",
    .m_doc = "gpudev's C core: devices, arrays and the CPU backend.",
    .m_size = sizeof(gd_state),
    .m_slots = module_slots,
    .m_traverse = module_traverse,
    .m_clear = module_clear,
    .m_free = module_free,
};

PyMODINIT_FUNC PyInit__C(void) { return PyModuleDef_Init(&module_def); }
