/* core.h - internals of the gpudev._C extension shared by module.c, device.c, array.c and
 * ops.c: the module state, the Device and Array objects, and the helpers each file offers
 * the others. Nothing here is public API.
 */
#ifndef GPUDEV_CORE_H
#define GPUDEV_CORE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "gpudev.h"

/* The NumPy C API: module.c imports it (GD_IMPORT_NUMPY); every other file shares its table. */
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
    PyObject *trace_hook;               /* callable receiving trace events, or NULL */
    uint64_t seed;                      /* Philox key */
    uint64_t offset;                    /* next Philox block counter */
    uint64_t pending_gpus;              /* bit i: cuda:i may have queued work */
    int num_threads;                    /* gpudev's own CPU threads (and OpenBLAS's) */
} gd_state;

/* ------------------------------------------------------------------------------------------
 * objects
 * ---------------------------------------------------------------------------------------- */

typedef struct DeviceObject {
    PyObject_HEAD
    gd_device dev;
} DeviceObject;

/* An Array is a C-contiguous block of `size` elements of `dtype` at `data` on `device`.
 * The array that allocated the memory owns it (base == NULL) and frees it in dealloc; views
 * (indexing, slicing, reshape) point into the owner's block and keep it alive through
 * `base`: the owning Array, or a NumPy array whose memory gd.asarray borrowed. Shapes never
 * change after creation. */
typedef struct ArrayObject {
    PyObject_HEAD
    char *data;
    PyObject *base;
    void *alloc_ptr;       /* owner only: what the backend's alloc returned (NULL if inline) */
    size_t alloc_bytes;
    gd_device device;
    gd_dtype dtype;
    int ndim;
    int64_t size;
    int64_t shape[GD_MAX_NDIM];
    PyObject *weakreflist;
    _Alignas(16) char inline_data[GD_INLINE_BYTES]; /* Python's allocator aligns objects to 16 */
} ArrayObject;

/* ------------------------------------------------------------------------------------------
 * module.c
 * ---------------------------------------------------------------------------------------- */

/* State of the module that defines Array/Device types, from an instance of either. O(1). */
static inline gd_state *gd_state_of(PyObject *obj) { return (gd_state *)PyType_GetModuleState(Py_TYPE(obj)); }

/* Raise the Python exception for a failed backend call; `op` names the operation
 * (e.g. "matmul"). Always returns -1 so callers can `return gd_raise(...)`. */
int gd_raise(gd_state *st, const char *op, const gd_error *err);

/* The backend for a device, or NULL with DeviceUnavailableError set when the device's
 * backend is not loaded or the index is out of range ("op" names the operation). */
const gd_backend *gd_backend_for(gd_state *st, gd_device dev, const char *op);

/* Remember that a GPU has queued work (Timer and synchronize use this). */
static inline void gd_mark_pending(gd_state *st, gd_device dev)
{
    if (dev.type == GD_CUDA) st->pending_gpus |= (uint64_t)1 << dev.index;
}

/* Synchronize one device (recording a trace event with `cause` when tracing). -1 on error. */
int gd_sync_device(gd_state *st, gd_device dev, const char *cause);

/* Tracing. gd_tracing is the only cost when no trace is active.
 * Events reach the hook as one tuple: (kind, name, device, shapes, dtype, bytes_read,
 * bytes_written) with kind 'op' | 'copy' | 'sync'; for copies name is h2d/d2h/d2d/peer and
 * device is the destination, for syncs name is the cause. dtype may be None. */
static inline int gd_tracing(gd_state *st) { return st->trace_hook != NULL; }
int gd_trace_emit(gd_state *st, const char *kind, const char *name, gd_device dev, PyObject *shapes,
                  int dtype, int64_t bytes_read, int64_t bytes_written);
/* An 'op' event for `out = name(in0, in1)`; in1 may be NULL. -1 on error. */
int gd_trace_op(gd_state *st, const char *name, ArrayObject *out, ArrayObject *in0, ArrayObject *in1);

/* ------------------------------------------------------------------------------------------
 * device.c
 * ---------------------------------------------------------------------------------------- */

int gd_device_type_init(PyObject *module, gd_state *st);
/* Parse a Device, 'cpu', 'cuda', 'cuda:N' or None (-> *out unchanged, returns 0). -1 on error. */
int gd_parse_device(gd_state *st, PyObject *obj, gd_device *out);
PyObject *gd_device_object(gd_state *st, gd_device dev); /* new reference */
/* Append the Device object for `dev` to `list`; -1 on error. */
int gd_list_append_device(gd_state *st, PyObject *list, gd_device dev);
/* "cpu" or "cuda:N" into buf (at least 32 bytes); returns buf. */
const char *gd_device_str(gd_device dev, char *buf);
static inline int gd_device_eq(gd_device a, gd_device b) { return a.type == b.type && a.index == b.index; }
int gd_num_gpus(gd_state *st);

/* ------------------------------------------------------------------------------------------
 * array.c
 * ---------------------------------------------------------------------------------------- */

int gd_array_type_init(PyObject *module, gd_state *st);
static inline int gd_is_array(gd_state *st, PyObject *o) { return Py_TYPE(o) == st->array_type; }

/* A new owning array with uninitialised contents; NULL with an exception set (shape errors,
 * OutOfMemoryError, DeviceUnavailableError). `op` names the operation for messages. */
ArrayObject *gd_array_new(gd_state *st, gd_device dev, gd_dtype dtype, int ndim, const int64_t *shape,
                          const char *op);
/* A view of `src`'s storage starting at `data` with a new shape (same dtype and device). */
ArrayObject *gd_array_view(gd_state *st, ArrayObject *src, char *data, int ndim, const int64_t *shape);
/* A copy of `a` on `dst` (records the copy when tracing). */
ArrayObject *gd_array_to_device(gd_state *st, ArrayObject *a, gd_device dst, const char *op);

/* Parse a dtype argument: gd/NumPy dtype objects, numpy scalar types, 'float32' strings...
 * None -> *out unchanged. -1 with TypeError on anything else. */
int gd_parse_dtype(gd_state *st, PyObject *obj, gd_dtype *out, const char *op);
/* Parse a shape given as a tuple/list of ints or as ints (`rand(2, 3)`). */
int gd_parse_shape(PyObject *const *args, Py_ssize_t nargs, int *ndim, int64_t *shape, const char *op);
/* The shape as a Python tuple of ints (new reference). */
PyObject *gd_shape_tuple(int ndim, const int64_t *shape);
/* "(2, 3)" into buf (at least 256 bytes); returns buf. */
const char *gd_shape_str(int ndim, const int64_t *shape, char *buf);

/* ------------------------------------------------------------------------------------------
 * ops.c: every operation checks its preconditions here, then calls the backend.
 * ---------------------------------------------------------------------------------------- */

typedef enum gd_reduction { GD_R_SUM = 0, GD_R_MEAN, GD_R_MAX, GD_R_MIN, GD_R_NORM } gd_reduction;

/* a op b with NumPy broadcasting and NumPy 2 promotion. a, b: Array or Python/NumPy scalar.
 * inplace: the target of `a op= b` (then a is inplace) or NULL. Returns a new reference:
 * the result (inplace itself for in-place forms), Py_NotImplemented for foreign types, or
 * NULL with an exception. */
PyObject *gd_binary(gd_state *st, gd_binop op, PyObject *a, PyObject *b, ArrayObject *inplace);
/* op(a) elementwise; a is an Array. ints become float64 for exp/log/sqrt/tanh. */
PyObject *gd_unary(gd_state *st, gd_unop op, ArrayObject *a, const char *name);
/* sum/mean/max/min/norm over axis (None, int or tuple of ints) with keepdims. */
PyObject *gd_reduce(gd_state *st, gd_reduction kind, ArrayObject *a, PyObject *axis, int keepdims);
/* NumPy's matmul: 1-D and 2-D cases and batched N-D with broadcast batch dims; float only. */
PyObject *gd_matmul(gd_state *st, PyObject *a, PyObject *b);
/* A new array with the axes reversed (axes == NULL) or permuted as axes (tuple). */
PyObject *gd_transpose(gd_state *st, ArrayObject *a, PyObject *axes);
/* concatenate (stack == 0) or stack (stack == 1) a sequence of Arrays along axis. */
PyObject *gd_concatenate(gd_state *st, PyObject *seq, int axis, int stack);
/* a converted to dtype (a new array; or a itself with a new reference when copy == 0 and the
 * dtype already matches). */
PyObject *gd_astype(gd_state *st, ArrayObject *a, gd_dtype dtype, int copy);
/* dst[...] = value, broadcasting value (Array on dst's device, or scalar) to dst's shape and
 * casting to dst's dtype as NumPy's setitem does (unsafe casting: floats truncate into ints).
 * -1 on error. */
int gd_assign(gd_state *st, ArrayObject *dst, PyObject *value, const char *op);
/* allclose(a, b) -> Py_True / Py_False, NumPy's definition, NaNs unequal. */
PyObject *gd_allclose(gd_state *st, PyObject *a, PyObject *b, double rtol, double atol);

/* ------------------------------------------------------------------------------------------
 * dlpack.c: DLPack interchange with NumPy, PyTorch, CuPy, ...
 * ---------------------------------------------------------------------------------------- */

/* a.__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None) -> PyCapsule */
PyObject *gd_array_dlpack(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames);
/* a.__dlpack_device__() -> (1, 0) for the CPU, (2, i) for cuda:i */
PyObject *gd_array_dlpack_device(PyObject *self, PyObject *ignored);
/* gd.from_dlpack(x): an Array sharing the memory of any DLPack producer (module function). */
PyObject *gd_from_dlpack(PyObject *module, PyObject *x);

#endif /* GPUDEV_CORE_H */
