/* module.cu - the gpudev._cuda extension module (and, compiled against the CPU emulation in
 * tools/cuda_emu with GD_CUDA_EMULATED, gpudev._cuda_emu: the same backend on emulated GPUs,
 * plus the emulation's controls for tests): hands the CUDA backend's table to gpudev._C
 * through the capsule `backend`, and offers the few functions that are about this build and
 * the CUDA runtime rather than a device: the GPU count, runtime and driver versions, the
 * architectures compiled for, and the TF32 switch. Everything about one device (memory,
 * properties, events) reaches Python through the table and gpudev._C. Importing this module
 * touches no driver, so it loads on machines without one.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "backend_cuda.cuh"

#ifdef GD_CUDA_EMULATED
#include "gd_emu.h"

#include <vector>
#define GD_CUDA_MODULE "gpudev._cuda_emu"
#else
#define GD_CUDA_MODULE "gpudev._cuda"
#endif

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

#ifdef GD_CUDA_EMULATED
/* ------------------------------------------------------------------------------------------
 * the emulation's controls (tools/cuda_emu/inc/gd_emu.h)
 * ---------------------------------------------------------------------------------------- */

static PyObject *gd_py_emu_configure(PyObject *, PyObject *args)
{
    int devices, multiprocessors;
    unsigned long long memory;
    if (!PyArg_ParseTuple(args, "iiK:configure", &devices, &multiprocessors, &memory)) return NULL;
    if (gd_emu_configure(devices, multiprocessors, 0) < 0) {
        PyErr_Format(PyExc_ValueError,
                     "configure: %d devices of %d multiprocessors: give 1 to 8 devices and 0 to 1024 multiprocessors",
                     devices, multiprocessors);
        return NULL;
    }
    for (int d = 0; d < devices; d++) gd_emu_set_device_memory(d, (size_t)memory);
    Py_RETURN_NONE;
}

/* The names fail_next (skips 0) or skip_next (skips 1) takes, as a list. */
static PyObject *gd_emu_names(int skips)
{
    PyObject *names = PyList_New(0);
    for (const char *const *n = gd_emu_plantable(skips); names && *n; n++) {
        PyObject *name = PyUnicode_FromString(*n);
        if (!name || PyList_Append(names, name) < 0) Py_CLEAR(names);
        Py_XDECREF(name);
    }
    return names;
}

/* ValueError for a plant under a name the emulation never asks about: it would never fire. */
static PyObject *gd_emu_unknown(const char *op, const char *call, int skips)
{
    PyObject *names = gd_emu_names(skips);
    PyObject *sep = names ? PyUnicode_FromString(", ") : NULL;
    PyObject *joined = sep ? PyUnicode_Join(sep, names) : NULL;
    if (joined)
        PyErr_Format(PyExc_ValueError, "%s: '%s' is not a call the emulation can %s, so nothing would happen; give "
                     "one of: %U", op, call, skips ? "skip" : "fail", joined);
    Py_XDECREF(joined);
    Py_XDECREF(sep);
    Py_XDECREF(names);
    return NULL;
}

static PyObject *gd_py_emu_plantable(PyObject *, PyObject *arg)
{
    const int skips = PyObject_IsTrue(arg);
    return skips < 0 ? NULL : gd_emu_names(skips);
}

static PyObject *gd_py_emu_fail_next(PyObject *, PyObject *args)
{
    const char *call;
    int status, times = 1, last_error = 0;
    if (!PyArg_ParseTuple(args, "si|ii:fail_next", &call, &status, &times, &last_error)) return NULL;
    if (status == 0 || times < 1) {
        PyErr_Format(PyExc_ValueError, "fail_next(%s): status %d, times %d: give a non-zero status and times >= 1",
                     call, status, times);
        return NULL;
    }
    if (gd_emu_fail_next(call, status, times, last_error) < 0) return gd_emu_unknown("fail_next", call, 0);
    Py_RETURN_NONE;
}

static PyObject *gd_py_emu_skip_next(PyObject *, PyObject *args)
{
    const char *call;
    int times = 1;
    if (!PyArg_ParseTuple(args, "s|i:skip_next", &call, &times)) return NULL;
    if (times < 1) {
        PyErr_Format(PyExc_ValueError, "skip_next(%s): times %d: give times >= 1", call, times);
        return NULL;
    }
    if (gd_emu_skip_next(call, times) < 0) return gd_emu_unknown("skip_next", call, 1);
    Py_RETURN_NONE;
}

static PyObject *gd_py_emu_clear(PyObject *, PyObject *)
{
    gd_emu_clear_planted();
    Py_RETURN_NONE;
}

static PyObject *gd_py_emu_pending(PyObject *, PyObject *) { return PyLong_FromLong(gd_emu_pending_operations()); }

static PyObject *gd_py_emu_context_active(PyObject *, PyObject *arg)
{
    const int device = PyLong_AsLong(arg);
    if (device == -1 && PyErr_Occurred()) return NULL;
    return PyBool_FromLong(gd_emu_context_active(device));
}

static PyObject *gd_py_emu_set_waits(PyObject *, PyObject *args)
{
    long queue;
    int interruptible;
    if (!PyArg_ParseTuple(args, "lp:set_waits", &queue, &interruptible)) return NULL;
    gd_emu_set_waits(queue, interruptible);
    Py_RETURN_NONE;
}

static PyObject *gd_py_emu_set_block_order(PyObject *, PyObject *args)
{
    int shuffle;
    unsigned long long seed;
    if (!PyArg_ParseTuple(args, "pK:set_block_order", &shuffle, &seed)) return NULL;
    gd_emu_set_block_order(shuffle, seed);
    Py_RETURN_NONE;
}

static PyObject *gd_py_emu_hold_after_steps(PyObject *, PyObject *arg)
{
    const long steps = PyLong_AsLong(arg);
    if (steps == -1 && PyErr_Occurred()) return NULL;
    gd_emu_hold_after_steps(steps);
    Py_RETURN_NONE;
}

static PyObject *gd_py_emu_held(PyObject *, PyObject *) { return PyBool_FromLong(gd_emu_held()); }

static PyObject *gd_emu_list(const std::vector<long long> &values)
{
    PyObject *list = PyList_New((Py_ssize_t)values.size());
    for (size_t i = 0; list && i < values.size(); i++) {
        PyObject *v = PyLong_FromLongLong(values[i]);
        if (!v) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, v);
    }
    return list;
}

/* A kernel that depends on the order of its blocks, for the test of the shuffled order: block
 * b records when it ran, and continues a chain that block b - 1 started with nothing that
 * orders the two, so `chain` is 1, 2, 3, ... only when the blocks run in index order. */
__global__ void gd_emu_block_order_kernel(long long *ran, long long *chain, unsigned long long *counter)
{
    if (threadIdx.x != 0) return;
    const unsigned b = blockIdx.x;
    ran[b] = (long long)atomicAdd(counter, 1ull);
    chain[b] = b == 0 ? 1 : chain[b - 1] + 1;
}

/* Runs it on emulated GPU 0 with `blocks` blocks (on a stream of its own, with the current
 * device put back); returns (ran, chain): the order the blocks ran in, and the chain. */
static PyObject *gd_py_emu_block_order_probe(PyObject *, PyObject *arg)
{
    const long blocks = PyLong_AsLong(arg);
    if (blocks == -1 && PyErr_Occurred()) return NULL;
    if (blocks < 1 || blocks > 65535) {
        PyErr_Format(PyExc_ValueError, "block_order_probe: %ld blocks: give 1 to 65535", blocks);
        return NULL;
    }
    std::vector<long long> ran((size_t)blocks), chain((size_t)blocks);
    const size_t words = (size_t)blocks * sizeof(long long), bytes = 2 * words + sizeof(unsigned long long);
    int previous = 0;
    cudaStream_t stream = nullptr;
    char *mem = nullptr;
    cudaError_t st = cudaGetDevice(&previous);
    if (st == cudaSuccess) st = cudaSetDevice(0);
    if (st == cudaSuccess) st = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    if (st == cudaSuccess) st = cudaMallocAsync((void **)&mem, bytes, stream);
    if (st == cudaSuccess) st = cudaMemsetAsync(mem, 0, bytes, stream);
    if (st == cudaSuccess) {
        gd_emu_block_order_kernel<<<(unsigned)blocks, 32, 0, stream>>>(
            (long long *)mem, (long long *)(mem + words), (unsigned long long *)(mem + 2 * words));
        st = cudaGetLastError();
    }
    if (st == cudaSuccess) st = cudaMemcpyAsync(ran.data(), mem, words, cudaMemcpyDeviceToHost, stream);
    if (st == cudaSuccess) st = cudaMemcpyAsync(chain.data(), mem + words, words, cudaMemcpyDeviceToHost, stream);
    if (mem) (void)cudaFreeAsync(mem, stream);
    if (stream && cudaStreamSynchronize(stream) == cudaSuccess) (void)cudaStreamDestroy(stream);
    (void)cudaSetDevice(previous);
    if (st != cudaSuccess) {
        PyErr_Format(PyExc_RuntimeError, "block_order_probe: %s", cudaGetErrorString(st));
        return NULL;
    }
    PyObject *order = gd_emu_list(ran), *values = order ? gd_emu_list(chain) : NULL;
    if (!values) {
        Py_XDECREF(order);
        return NULL;
    }
    return Py_BuildValue("(NN)", order, values);
}
#endif

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
#ifdef GD_CUDA_EMULATED
    {"configure", gd_py_emu_configure, METH_VARARGS,
     "configure(devices, multiprocessors, memory_bytes)\n\nShape the emulated GPUs; once, before any use "
     "(gpudev does it at import from GPUDEV_EMULATE_GPUS and its settings). 0 keeps a default."},
    {"fail_next", gd_py_emu_fail_next, METH_VARARGS,
     "fail_next(call, status, times=1, last_error=0)\n\nThe next `times` calls of the CUDA or cuBLAS "
     "function `call` (e.g. 'cudaMallocFromPoolAsync') fail with `status` without doing anything."},
    {"skip_next", gd_py_emu_skip_next, METH_VARARGS,
     "skip_next(call, times=1)\n\nThe next `times` calls of `call` (e.g. 'cudaStreamWaitEvent') do "
     "nothing and succeed: shows what a missing synchronization would read."},
    {"plantable", gd_py_emu_plantable, METH_O,
     "plantable(skips) -> list[str]\n\nThe calls fail_next (skips False) or skip_next (skips True) takes."},
    {"clear_planted", gd_py_emu_clear, METH_NOARGS,
     "clear_planted()\n\nForget the failures and skips planted and not yet used."},
    {"pending_operations", gd_py_emu_pending, METH_NOARGS,
     "pending_operations() -> int\n\nKernels, products, copies and memsets queued on emulated streams and not "
     "yet run (they run when something waits for them, or a launch finds the queue full)."},
    {"context_active", gd_py_emu_context_active, METH_O,
     "context_active(device) -> bool\n\nWhether emulated `device` has a CUDA context (one is made on first use)."},
    {"set_waits", gd_py_emu_set_waits, METH_VARARGS,
     "set_waits(queue, interruptible)\n\nAt most `queue` operations queued (0: no bound) before a launch runs the "
     "oldest; with `interruptible`, Ctrl-C stops a wait of the main thread between blocks."},
    {"set_block_order", gd_py_emu_set_block_order, METH_VARARGS,
     "set_block_order(shuffle, seed)\n\nBlocks of each launch in index order, or shuffled by `seed`."},
    {"hold_after_steps", gd_py_emu_hold_after_steps, METH_O,
     "hold_after_steps(steps)\n\nFor tests: the next interruptible wait pauses after `steps` blocks or product "
     "columns until a SIGINT arrives."},
    {"held", gd_py_emu_held, METH_NOARGS, "held() -> bool\n\nWhether a wait pauses now (hold_after_steps)."},
    {"block_order_probe", gd_py_emu_block_order_probe, METH_O,
     "block_order_probe(blocks) -> (ran, chain)\n\nA kernel of `blocks` blocks that depends on their order: the "
     "order they ran in, and a chain that is 1, 2, 3, ... only in index order."},
#endif
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
    GD_CUDA_MODULE,
    "The CUDA backend of gpudev: its table for gpudev._C (the `backend` capsule), versions and TF32.",
    0,
    gd_cuda_methods,
    gd_cuda_slots,
    NULL,
    NULL,
    NULL,
};

#ifdef GD_CUDA_EMULATED
extern "C" PyMODINIT_FUNC PyInit__cuda_emu(void) { return PyModuleDef_Init(&gd_cuda_module); }
#else
extern "C" PyMODINIT_FUNC PyInit__cuda(void) { return PyModuleDef_Init(&gd_cuda_module); }
#endif
