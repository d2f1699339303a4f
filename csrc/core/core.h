/* core.h - the base header of gpudev._C, the Python-facing core in csrc/core: Python's, NumPy's
 * and the backend ABI's headers, the module state, and the Device and Array objects. What each
 * core file offers the others is declared in a header of its own (runtime.h for runtime.c,
 * ...; interchange.h for dlpack.c, since dlpack.h is the DLPack ABI), and each file includes
 * the headers whose declarations it uses, and no others (tests/test_layout.py). Every call
 * from one core file into another goes through such a declaration. Nothing here is public API.
 *
 * The layers below: gpudev.h (the backend table every operation ends in; tables.h, the dtype
 * and operation tables) and cpu/backend_cpu.h (the CPU backend, linked in).
 */
#ifndef GPUDEV_CORE_H
#define GPUDEV_CORE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "gpudev.h"

/* The NumPy C API: dtypes.c, at the bottom of the core, holds its table (GD_IMPORT_NUMPY) and
 * imports it (gd_import_numpy, which exec calls first); every other file shares the table. */
#define PY_ARRAY_UNIQUE_SYMBOL gd_ARRAY_API
#ifndef GD_IMPORT_NUMPY
#define NO_IMPORT_ARRAY
#endif
#include <numpy/arrayobject.h>

#define GD_MAX_GPUS 64
/* CPU arrays of at most this many bytes keep their data inside the Array object: tiny
 * operations then cost one object allocation and no malloc. */
#define GD_INLINE_BYTES 64
/* CPU work on more elements than this releases the GIL so other Python threads can run. */
#define GD_RELEASE_GIL_ELEMENTS 16384

/* The host: device 0 of the CPU backend (Device('cpu').index is None in Python). */
#define GD_CPU_DEVICE ((gd_device){GD_CPU, 0})

/* "cpu" or "cuda:N" into buf (at least 32 bytes); returns buf. Here, below every file: the
 * errors, the registry and the trace name devices, and device.c is above them. */
static inline const char *gd_device_str(gd_device dev, char *buf)
{
    if (dev.type == GD_CPU) snprintf(buf, 32, "cpu");
    else snprintf(buf, 32, "cuda:%d", dev.index);
    return buf;
}

/* ------------------------------------------------------------------------------------------
 * module state
 * ---------------------------------------------------------------------------------------- */

typedef struct gd_state {
    PyTypeObject *device_type;
    PyTypeObject *array_type;
    PyObject *GpudevError;
    PyObject *DeviceMismatchError;
    PyObject *DeviceUnavailableError;
    PyObject *OutOfMemoryError;
    PyObject *CudaError;
    PyObject *np_dtypes[GD_NUM_DTYPES]; /* numpy.dtype objects, what Array.dtype returns */
    PyObject *np_ndarray;               /* numpy.ndarray, to recognise NumPy input */
    PyObject *cpu_device;               /* the Device('cpu') singleton */
    const gd_backend *backends[2];      /* [GD_CPU] always; [GD_CUDA] once gpudev._cuda loaded */
    PyObject *cuda_capsule;             /* keeps the CUDA backend's module alive */
    PyObject *cuda_reason;              /* str: why CUDA is off, or None */
    int cuda_emulated;                  /* the CUDA backend is gpudev._cuda_emu (CPU emulation) */
    PyObject *trace_hook;               /* callable receiving trace events, or NULL */
    PyObject *deferred_key;             /* each thread's list of deferred checks is under this
                                         * key of its thread-state dictionary (trace.c) */
    int deferred_used;                  /* a deferred check was made: threads' lists to run */
    uint64_t seed;                      /* Philox key */
    uint64_t offset;                    /* next Philox block counter */
    uint64_t pending_gpus;              /* bit i: cuda:i may have queued work */
    uint64_t touched_gpus;              /* bit i: work was queued on cuda:i since the last
                                         * _take_touched_devices() (benchmark's warm-up) */
    int gpu_count;                      /* GPUs of the CUDA backend; -1 until first asked */
    struct gd_host_copy **host_copies;  /* trace.c: copies into or out of pinned host memory
                                         * that nothing has waited for yet */
    int n_host_copies, cap_host_copies;
    uint64_t host_copy_seq;             /* numbers the copies in the order they were queued */
    PyObject *ag_hooks;                 /* gpudev.autograd's recorder (autograd.c), or NULL */
    PyObject *multi_index;              /* (take, put) of gpudev/_index.py: keys with several
                                         * index arrays (gather.c), or NULL */
} gd_state;

/* ------------------------------------------------------------------------------------------
 * objects
 * ---------------------------------------------------------------------------------------- */

typedef struct DeviceObject {
    PyObject_HEAD
    gd_device dev;
} DeviceObject;

/* An Array is `size` elements of `dtype` on `device`: element (i0, ..., in-1) lives at
 * data + sum(ik * strides[k]) elements. Strides are in elements (`.strides` reports bytes, as
 * NumPy does), of any sign, and 0 where a NumPy array or DLPack tensor broadcast an axis. The
 * array that allocated the memory owns it (base == NULL) and frees it in dealloc; views
 * (indexing, slicing, transposes, reshape) point into the owner's block and keep it alive
 * through `base`. One rule keeps everything that is kept per storage (the write count, the
 * deferred checks) in one place: a view's base is always the Array at the root of its
 * storage, never another view and never a foreign object. The root is the Array that
 * allocated the memory (base NULL), or the Array that gd.asarray, gd.from_dlpack or the
 * buffer protocol made from another library's memory, whose base is that library's object
 * (a NumPy array, a DLPack capsule) and keeps it alive. gd_owner() finds the root (array.c's
 * gd_array_view is the one place views are made). `contiguous` says whether the elements
 * are C-contiguous (NumPy's rule: axes of length 1 and empty arrays never break it), which
 * every hot path checks first. Shapes and strides never change after creation. */
typedef struct ArrayObject {
    PyObject_HEAD
    char *data;
    PyObject *base;
    void *alloc_ptr;       /* owner only: what the backend's alloc returned (NULL if inline) */
    size_t alloc_bytes;
    int exported;          /* owner only: handed to another library whose streams gpudev
                            * cannot see (CUDA array interface, DLPack without a stream): its
                            * free first waits for the whole device */
    int pinned;            /* owner only: alloc_ptr is page-locked host memory from the CUDA
                            * backend's host_alloc (a.pin_memory()), freed by its host_free */
    int storage_apart;     /* a result whose memory gd_array_split_storage moved to a root of
                            * its own (base): still the whole array, not a view (_is_view) */
    gd_device device;
    gd_dtype dtype;
    int ndim;
    int contiguous;
    int64_t size;
    int64_t shape[GD_MAX_NDIM];
    int64_t strides[GD_MAX_NDIM];
    PyObject *weakreflist;
    PyObject *ag;          /* autograd: NULL outside any graph, Py_True for a leaf that requires
                            * grad, else the node that computed the array (autograd.c) */
    PyObject *grad;        /* autograd: the gradient backward() accumulated, or NULL */
    uint32_t version;      /* owners: writes in place so far, which backward() checks */
    PyObject *guards;      /* owners: tuple of the deferred checks that vouch for these values
                            * (trace.c), run at every host read of them; NULL for none */
    _Alignas(16) char inline_data[GD_INLINE_BYTES]; /* Python's allocator aligns objects to 16 */
} ArrayObject;

/* State of the module that defines Array/Device types, from an instance of either. O(1). */
static inline gd_state *gd_state_of(PyObject *obj) { return (gd_state *)PyType_GetModuleState(Py_TYPE(obj)); }

/* A device's name for people (messages): gd_device_str's, and "cuda:0 (emulated)" for a GPU of
 * the CPU emulation (GPUDEV_EMULATE_GPUS), whose times and errors are not a real GPU's. The
 * identifier itself (str(device), the code a message suggests) stays gd_device_str's; Python's
 * twin is gpudev._devices.device_label. buf holds at least 32 bytes; returns buf. */
static inline const char *gd_device_label(const gd_state *st, gd_device dev, char *buf)
{
    if (dev.type == GD_CUDA && st->cuda_emulated) snprintf(buf, 32, "cuda:%d (emulated)", dev.index);
    else gd_device_str(dev, buf);
    return buf;
}

/* ------------------------------------------------------------------------------------------
 * setup: each file that adds functions, types or exceptions to the module has a
 * gd_<file>_setup function, called once by module.c's exec slot (0, or -1 with an exception);
 * its PyMethodDef entries use these two
 * ---------------------------------------------------------------------------------------- */

#define GD_FASTKW (METH_FASTCALL | METH_KEYWORDS)
#define GD_FN(f) ((PyCFunction)(void (*)(void))(f))

#endif /* GPUDEV_CORE_H */
