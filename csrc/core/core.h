/* core.h - the one internal header of gpudev._C, the Python-facing core in csrc/core: the
 * module state, the Device and Array objects, and what each core file offers the others,
 * section by section. Every call from one core file into another goes through a declaration
 * here; core files include no other core file. Nothing here is public API.
 *
 * The layers below: gpudev.h (the backend table every operation ends in; tables.h, the dtype
 * and operation tables) and cpu/backend_cpu.h (the CPU backend, linked in).
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

/* *out = x * y for int64 values; returns 1 instead (leaving *out alone) when the product
 * overflows. Strides and offsets go through it wherever a product may not fit. */
static inline int gd_mul_overflows(int64_t *out, int64_t x, int64_t y)
{
#if defined(__GNUC__)
    int64_t r;
    if (__builtin_mul_overflow(x, y, &r)) return 1;
    *out = r;
    return 0;
#else /* the overflow tests of CERT C's INT32-C */
    if (x > 0 ? (y > 0 ? x > INT64_MAX / y : y < INT64_MIN / x)
              : (y > 0 ? x < INT64_MIN / y : (x != 0 && y < INT64_MAX / x)))
        return 1;
    *out = x * y;
    return 0;
#endif
}

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
    PyObject *deferred_checks;          /* list of checks run at the next host read (trace.c) */
    uint64_t seed;                      /* Philox key */
    uint64_t offset;                    /* next Philox block counter */
    uint64_t pending_gpus;              /* bit i: cuda:i may have queued work */
    uint64_t touched_gpus;              /* bit i: work was queued on cuda:i since the last
                                         * _take_touched_devices() (benchmark's warm-up) */
    int gpu_count;                      /* GPUs of the CUDA backend; -1 until first asked */
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
 * through `base`: the owning Array, or the object (a NumPy array, a DLPack capsule) whose
 * memory gd.asarray or gd.from_dlpack borrowed. `contiguous` says whether the elements are
 * C-contiguous (NumPy's rule: axes of length 1 and empty arrays never break it), which every
 * hot path checks first. Shapes and strides never change after creation. */
typedef struct ArrayObject {
    PyObject_HEAD
    char *data;
    PyObject *base;
    void *alloc_ptr;       /* owner only: what the backend's alloc returned (NULL if inline) */
    size_t alloc_bytes;
    int exported;          /* owner only: handed to another library whose streams gpudev
                            * cannot see (CUDA array interface, DLPack without a stream): its
                            * free first waits for the whole device */
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
    _Alignas(16) char inline_data[GD_INLINE_BYTES]; /* Python's allocator aligns objects to 16 */
} ArrayObject;

/* State of the module that defines Array/Device types, from an instance of either. O(1). */
static inline gd_state *gd_state_of(PyObject *obj) { return (gd_state *)PyType_GetModuleState(Py_TYPE(obj)); }

/* ------------------------------------------------------------------------------------------
 * setup: each file that adds functions, types or exceptions to the module has a
 * gd_<file>_setup function, called once by module.c's exec slot (0, or -1 with an exception);
 * its PyMethodDef entries use these two
 * ---------------------------------------------------------------------------------------- */

#define GD_FASTKW (METH_FASTCALL | METH_KEYWORDS)
#define GD_FN(f) ((PyCFunction)(void (*)(void))(f))

/* ------------------------------------------------------------------------------------------
 * runtime.c: exceptions, the backend registry, running backend calls, synchronization,
 * threads and the random seed
 * ---------------------------------------------------------------------------------------- */

int gd_runtime_setup(PyObject *module, gd_state *st);

/* Raise the Python exception for a failed backend call; `op` names the operation
 * (e.g. "matmul"). Always returns -1 so callers can `return gd_raise(...)`. */
int gd_raise(gd_state *st, const char *op, const gd_error *err);

/* The backend of a device, or NULL with DeviceUnavailableError set when the device's backend
 * is not loaded or its index is out of range ("op" names the operation): the one way to get
 * a backend (st->backends is runtime.c's registry). For a device that holds an array, or one
 * checked before, it is two loads and a compare. */
const gd_backend *gd_backend_check(gd_state *st, gd_device dev, const char *op);
static inline const gd_backend *gd_backend_of(gd_state *st, gd_device dev, const char *op)
{
    const gd_backend *be = st->backends[dev.type];
    if (be && (dev.type == GD_CPU || (dev.index >= 0 && dev.index < st->gpu_count))) return be;
    return gd_backend_check(st, dev, op); /* asks the driver once, raises */
}

/* GPUs the CUDA backend reports (0 without it), asked once per process. */
int gd_num_gpus(gd_state *st);

/* Remember that a GPU has queued work (Timer and synchronize use this). Called with the GIL
 * held, after the work was queued. */
static inline void gd_mark_pending(gd_state *st, gd_device dev)
{
    if (dev.type == GD_CUDA) {
        st->pending_gpus |= (uint64_t)1 << dev.index;
        st->touched_gpus |= (uint64_t)1 << dev.index;
    }
}

/* Called with the GIL held *before* waiting for the device (which releases the GIL): work
 * another thread queues during the wait marks the device again afterwards and is not lost. */
static inline void gd_clear_pending(gd_state *st, gd_device dev)
{
    if (dev.type == GD_CUDA) st->pending_gpus &= ~((uint64_t)1 << dev.index);
}

/* The one way to run a backend call: gd_run_begin before it, gd_run_end after it. Large CPU
 * work (`work` elements or multiply-adds) and every GPU call run without the GIL so other
 * Python threads go on, so the call must not touch Python objects. GPU calls mostly just
 * queue work, but some block: the first matmul creates cuBLAS, an allocation on a full device
 * waits for pending frees. gd_run_end marks a GPU as having work in flight, and returns 0, or
 * -1 with the Python exception for a failed call (rc != 0), naming `op`:
 *
 *     PyThreadState *ts = gd_run_begin(dev, n);
 *     rc = be->unary(out, GD_NEG, dtype, &ew, &a, dev.index, &err);
 *     if (gd_run_end(st, dev, ts, rc, &err, "negative") < 0) goto fail;
 */
static inline PyThreadState *gd_run_begin(gd_device dev, double work)
{
    return dev.type != GD_CPU || work > GD_RELEASE_GIL_ELEMENTS ? PyEval_SaveThread() : NULL;
}

static inline int gd_run_end(gd_state *st, gd_device dev, PyThreadState *released, int rc, const gd_error *err,
                             const char *op)
{
    if (released) PyEval_RestoreThread(released);
    gd_mark_pending(st, dev);
    return rc ? gd_raise(st, op, err) : 0;
}

/* A backend call that blocks until the device is idle (synchronize, empty_cache, ...), run
 * without the GIL; it clears the device's pending flag first (and sets it again if the call
 * fails). Nothing to do when `call` is NULL. 0, or -1 with the exception naming op (sync.c). */
int gd_wait(gd_state *st, int (*call)(int device, gd_error *err), gd_device dev, const char *op);

/* Synchronize one device (recording a trace event with `cause` when tracing; sync.c). -1 on
 * error. */
int gd_sync_device(gd_state *st, gd_device dev, const char *cause);

/* ------------------------------------------------------------------------------------------
 * trace.c: trace events, for gd.trace(), and the checks deferred to the next host read
 *
 * Events reach the hook as one tuple: (kind, name, device, shapes, dtype, bytes_read,
 * bytes_written, wait_s) with kind 'op' | 'copy' | 'sync'; for copies name is h2d/d2h/d2d/peer
 * and device is the destination, for syncs name is the cause. dtype may be None. wait_s is
 * the time the host waited: a GPU sync's wait (including the copy a d2h read makes), an
 * upload's wait for its source; 0.0 for everything else.
 * ---------------------------------------------------------------------------------------- */

int gd_trace_setup(PyObject *module);

/* Whether a trace is active: the only cost of tracing when none is. */
static inline int gd_tracing(gd_state *st) { return st->trace_hook != NULL; }
int gd_trace_emit(gd_state *st, const char *kind, const char *name, gd_device dev, PyObject *shapes,
                  int dtype, int64_t bytes_read, int64_t bytes_written);
/* An 'op' event for `out = name(in0, in1)`; any of them may be NULL. -1 on error. */
int gd_trace_op(gd_state *st, const char *name, ArrayObject *out, ArrayObject *in0, ArrayObject *in1);
/* A 'copy' event of a's bytes to `dst` (kind h2h, h2d, d2h, d2d or peer). */
int gd_trace_copy(gd_state *st, const char *kind, ArrayObject *a, gd_device dst);
/* A sync point on dev: runs the deferred checks (a failed one raises here), then records a
 * 'sync' event when tracing and cause is not NULL. */
int gd_trace_sync(gd_state *st, const char *cause, gd_device dev);
/* A monotonic clock in seconds, and the wait a sync site measured with it: the next sync
 * event on a GPU (or h2d copy event) of this thread reports it. */
double gd_trace_clock(void);
void gd_trace_waited(double seconds);

/* ------------------------------------------------------------------------------------------
 * args.c: arguments of METH_FASTCALL | METH_KEYWORDS functions
 *
 * The rule for arguments that hold other objects (a shape, a list of arrays, axes, an index,
 * a list of devices): own what you read before Python code runs or the GIL is released.
 * Python code runs inside __index__, __float__, __bool__, __array__, __dlpack__, repr, a
 * trace hook, any method of an argument; other threads run while the GIL is released
 * (gd_run_begin for large CPU work, gd_wait, copies to the host). Either may change a list or
 * drop the last reference to one of its items, and a C pointer into it then dangles. So:
 *   - read a sequence through gd_tuple_of (a tuple that holds every item), never through
 *     PySequence_Fast alone: for a list it returns the list itself, not a copy;
 *   - keep a strong reference to any object used after a callback or with the GIL released;
 *   - the FASTCALL args array and kwnames stay alive for the whole call, the containers they
 *     reach do not.
 * Each entry point that takes a sequence has a test with a mutating __index__ or another
 * thread mutating it (tests/test_callbacks.py).
 * ---------------------------------------------------------------------------------------- */

/* ------------------------------------------------------------------------------------------
 * Signatures, declared once. A function's parameters are written in one place: the text
 * signature at the head of its docstring, in CPython's Argument Clinic form
 *     "zeros($module, shape, *dims, dtype=None, device=None, requires_grad=False)\n--\n\n..."
 * ($module or $self first, `/` ends positional-only parameters, `*` or `*name` starts the
 * keyword-only ones). inspect.signature and editors read it from __text_signature__;
 * gd_parse_args reads the same text, on a function's first call, for the parameter names, how
 * many may be positional, how many are required and the usage of its TypeErrors; and
 * tools/make_stubs.py writes gpudev/_C.pyi from it. So names, kinds and defaults cannot
 * disagree between the three. Defaults are Python literals (None, True, False, numbers).
 *
 *   GD_SIGNATURE(zeros_sig, "zeros", "$module, shape, *dims, ...", "doc")   a parsed function:
 *       defines zeros_sig (its gd_params, for gd_parse_args) and its name and docstring;
 *   GD_DEF(zeros_sig, GD_FN(mod_zeros), GD_FASTKW)                          its PyMethodDef;
 *   GD_METHOD("exp", mod_exp, METH_O, "$module, a, /", "doc")               a PyMethodDef whose
 *       arguments CPython or the function checks (METH_O, METH_NOARGS, positional FASTCALL).
 * GD_SIGNATURE_USAGE adds a hint to the usage message; GD_SIGNATURE_SHARED is GD_SIGNATURE
 * for a method whose PyMethodDef lives in another file (core.h declares it with
 * GD_SIGNATURE_EXTERN). tests/test_signatures.py checks every public callable against what
 * its parser accepts.
 * ---------------------------------------------------------------------------------------- */

#define GD_MAX_PARAMS 6
#define GD_MAX_PARAM_NAME 24
#define GD_MAX_USAGE 320

/* The parameters of one function, for gd_parse_args. Only fname, doc and hint are written
 * (by the macros below); the rest is read from doc's signature on first use, so a gd_params
 * is never const. */
typedef struct gd_params {
    const char *fname; /* the function as messages name it: "zeros" */
    const char *doc;   /* its docstring, which starts with the signature */
    const char *hint;  /* appended to the usage message, or NULL */
    int ready;         /* the fields below are filled */
    int positional;    /* how many may be passed by position (the rest are keyword-only) */
    int posonly;       /* how many of those may not be passed by keyword */
    int required;      /* how many leading parameters must be given */
    int varargs;       /* `*name`: positional arguments past `positional` are the caller's */
    int count;         /* named parameters, in order, in names */
    char names[GD_MAX_PARAMS][GD_MAX_PARAM_NAME];
    char usage[GD_MAX_USAGE]; /* "zeros(shape, *dims, dtype=None, ...)" and the hint */
} gd_params;

#define GD_DOC(name, sig, doc) name "(" sig ")\n--\n\n" doc
#define GD_METHOD(name, fn, flags, sig, doc) {name, fn, flags, GD_DOC(name, sig, doc)}
#define GD_SIGNATURE_IN(storage, id, name, sig, hint, doc) \
    storage const char id##_name[] = name;                 \
    storage const char id##_doc[] = GD_DOC(name, sig, doc); \
    storage gd_params id = {id##_name, id##_doc, hint, 0, 0, 0, 0, 0, 0, {{0}}, {0}}
#define GD_SIGNATURE_SHARED(id, name, sig, doc) GD_SIGNATURE_IN(, id, name, sig, NULL, doc)
#define GD_SIGNATURE_USAGE(id, name, sig, hint, doc) GD_SIGNATURE_IN(static, id, name, sig, hint, doc)
#define GD_SIGNATURE(id, name, sig, doc) GD_SIGNATURE_IN(static, id, name, sig, NULL, doc)
#define GD_SIGNATURE_EXTERN(id) extern const char id##_name[], id##_doc[]; extern gd_params id
#define GD_DEF(id, fn, flags) {id##_name, fn, flags, id##_doc}

/* Match a FASTCALL call's arguments to p's parameters: out[i] receives the argument given for
 * p->names[i] and keeps what the caller stored there (its default) when none was given. 0, or
 * -1 with TypeError: p->usage for too many positional arguments or a missing required one,
 * "f() got an unexpected keyword argument 'k'", "f() got multiple values for argument 'k'".
 * With `*name` declared, positional arguments past p->positional are left to the caller.
 * (p is const for its callers; its derived fields are filled on the first call.) */
int gd_parse_args(PyObject **out, const gd_params *p, PyObject *const *args, Py_ssize_t nargs,
                  PyObject *kwnames);

/* TypeError with p's usage message; -1. */
int gd_usage_error(const gd_params *p);

/* obj's truth value into *out, leaving *out alone for NULL or None. -1 on error. */
int gd_parse_bool(PyObject *obj, int *out);

/* A tuple holding the items of any sequence or iterable `seq` (seq itself, with a new
 * reference, when it is a tuple), so that Python code run later cannot change what the caller
 * reads; NULL with TypeError `msg` when seq is not iterable. */
PyObject *gd_tuple_of(PyObject *seq, const char *msg);

/* repr(obj) for an error message (a new reference): cut to about GD_BRIEF_REPR characters,
 * and "<list object>" when repr itself fails (a list nested past the recursion limit), so a
 * hostile argument gets the message meant for it, of a readable length. */
#define GD_BRIEF_REPR 200
PyObject *gd_brief_repr(PyObject *obj);

/* ------------------------------------------------------------------------------------------
 * dtypes.c: gpudev's dtypes as NumPy sees them
 * ---------------------------------------------------------------------------------------- */

/* np_dtypes in the state, and gd.float32, gd.float64, gd.int64 (NumPy's scalar types). */
int gd_dtypes_setup(PyObject *module, gd_state *st);

/* Parse a dtype argument: gd/NumPy dtype objects, numpy scalar types, 'float32' strings...
 * None -> *out unchanged. -1 with TypeError on anything else. */
int gd_parse_dtype(PyObject *obj, gd_dtype *out, const char *op);
/* The gpudev dtype that holds data of NumPy dtype `descr` (kept, or widened: float16 becomes
 * float32, bool and small integers int64), or -1 when there is none. */
int gd_dtype_from_numpy(PyArray_Descr *descr);
/* Whether descr is exactly gpudev dtype dt (same NumPy type number). */
int gd_numpy_is(gd_state *st, PyArray_Descr *descr, gd_dtype dt);

/* ------------------------------------------------------------------------------------------
 * shape.c: shapes, broadcasting and axes
 * ---------------------------------------------------------------------------------------- */

/* Parse a shape given as a tuple/list of ints or as ints (`rand(2, 3)`). */
int gd_parse_shape(PyObject *const *args, Py_ssize_t nargs, int *ndim, int64_t *shape, const char *op);
/* The shape as a Python tuple of ints (new reference). */
PyObject *gd_shape_tuple(int ndim, const int64_t *shape);
/* "(2, 3)" into buf (at least 256 bytes); returns buf. */
const char *gd_shape_str(int ndim, const int64_t *shape, char *buf);
/* The number of elements of a shape; -1 with ValueError when it overflows int64. */
int gd_shape_size(int64_t *out, int ndim, const int64_t *shape, const char *op);
/* NumPy's broadcast of two shapes (right-aligned; a 1 stretches). -1 when they do not
 * broadcast; no exception set, each caller words its own (gd_raise_broadcast). */
int gd_broadcast(int *ndim, int64_t *shape, int na, const int64_t *sa, int nb, const int64_t *sb);
void gd_raise_broadcast(const char *op, int na, const int64_t *sa, int nb, const int64_t *sb);
/* Normalise one axis (negative counts from the end) against ndim; numpy's AxisError if out
 * of range. */
int gd_normalize_axis(int *out, int64_t axis, int ndim, const char *op);
/* One axis argument: an int (or an object with __index__) without the normalising, clipped to
 * int64 so that a huge value is out of range rather than truncated. -1 with TypeError. */
int gd_parse_axis(int64_t *out, PyObject *obj, const char *op);
/* Mark the reduced axes of an ndim-array; axis is None, an int or a tuple of ints. */
int gd_parse_axes(uint8_t *reduced, PyObject *axis, int ndim, const char *op);

static inline int gd_same_shape(const ArrayObject *x, const ArrayObject *y)
{
    return x->ndim == y->ndim && memcmp(x->shape, y->shape, (size_t)x->ndim * sizeof(int64_t)) == 0;
}

/* ------------------------------------------------------------------------------------------
 * device.c: the Device type and device arguments
 * ---------------------------------------------------------------------------------------- */

int gd_device_setup(PyObject *module, gd_state *st);
/* Parse a Device, 'cpu', 'cuda', 'cuda:N' or None (-> *out unchanged, returns 0). -1 on error. */
int gd_parse_device(gd_state *st, PyObject *obj, gd_device *out);
/* A GPU index argument: an int (a bool is refused) in [0, GD_MAX_GPUS). -1 with TypeError or
 * ValueError naming `op`. */
int gd_parse_gpu_index(int *out, PyObject *obj, const char *op);
PyObject *gd_device_object(gd_state *st, gd_device dev); /* new reference */
/* Append the Device object for `dev` to `list`; -1 on error. */
int gd_list_append_device(gd_state *st, PyObject *list, gd_device dev);
static inline int gd_device_eq(gd_device a, gd_device b) { return a.type == b.type && a.index == b.index; }
/* DeviceMismatchError "op: operands are on different devices, A and B; copy one ...". */
void gd_raise_device_mismatch(gd_state *st, const char *op, gd_device first, gd_device second);

/* ------------------------------------------------------------------------------------------
 * array_type.c: the Array type (attributes, number protocol, method table, slots)
 * ---------------------------------------------------------------------------------------- */

int gd_array_setup(PyObject *module, gd_state *st);

/* ------------------------------------------------------------------------------------------
 * array.c: Array objects: allocation, views, deallocation
 * ---------------------------------------------------------------------------------------- */

/* The type's dealloc and tp_new slots (array_type.c puts them in the type). */
void gd_array_dealloc(PyObject *self);
PyObject *gd_array_tp_new(PyTypeObject *type, PyObject *args, PyObject *kwds);
static inline int gd_is_array(gd_state *st, PyObject *o) { return Py_TYPE(o) == st->array_type; }
/* Whether o is a gpudev Array of any instance of the module (the number slots meet Arrays and
 * foreign objects in either position, before they know which module's state to use). */
static inline int gd_is_any_array(PyObject *o) { return Py_TYPE(o)->tp_dealloc == gd_array_dealloc; }

/* o itself when it is an Array, else NULL with TypeError ("convert it with gd.asarray(x)"). */
ArrayObject *gd_need_array(gd_state *st, PyObject *o, const char *op);
/* Adds the methods of `defs` (ending in a NULL name) to the Array type: the files of the
 * operations register their own methods this way. 0 or -1. */
int gd_array_add_methods(gd_state *st, PyMethodDef *defs);
static inline size_t gd_array_nbytes(const ArrayObject *a) { return (size_t)a->size * gd_dtype_size(a->dtype); }

/* A new owning C-contiguous array with uninitialised contents; NULL with an exception set
 * (shape errors, OutOfMemoryError, DeviceUnavailableError). `op` names the operation. */
ArrayObject *gd_array_new(gd_state *st, gd_device dev, gd_dtype dtype, int ndim, const int64_t *shape,
                          const char *op);
/* A view of `src`'s storage whose element 0 is at `data`, with a new shape and strides
 * (elements; NULL: C-contiguous), same dtype and device. */
ArrayObject *gd_array_view(gd_state *st, ArrayObject *src, char *data, int ndim, const int64_t *shape,
                           const int64_t *strides);
/* An Array of `dtype`, `shape` and `strides` (elements; NULL: C-contiguous) on `dev` sharing the
 * memory of `owner` at `data` (a NumPy array, a DLPack import), which it keeps alive. Steals
 * the reference to owner. */
ArrayObject *gd_array_borrow(gd_state *st, PyObject *owner, char *data, gd_device dev, gd_dtype dtype, int ndim,
                             const int64_t *shape, const int64_t *strides, int64_t size);
/* C-contiguous strides (elements) of a shape. Axes of length 0 count as 1, as in NumPy; for
 * an empty array with huge other axes the product stops growing where it would overflow (such
 * strides are never used to address memory). */
void gd_c_strides(int64_t *strides, int ndim, const int64_t *shape);
/* NumPy's C-contiguity: strides match gd_c_strides on every axis longer than 1, or the array
 * is empty. */
int gd_is_c_contiguous(int ndim, const int64_t *shape, const int64_t *strides);

/* The array that owns a's storage (a itself unless a is a view of another Array): writes in
 * place count on it, so every view of one storage shares the count. */
static inline ArrayObject *gd_owner(gd_state *st, ArrayObject *a)
{
    return a->base && gd_is_array(st, a->base) ? (ArrayObject *)a->base : a;
}
static inline void gd_bump_version(gd_state *st, ArrayObject *a) { gd_owner(st, a)->version++; }

/* ------------------------------------------------------------------------------------------
 * transfer.c: copies between devices and to NumPy; Array methods and slots
 * ---------------------------------------------------------------------------------------- */

/* A copy of `a` on `dst` (records the copy when tracing). */
ArrayObject *gd_array_to_device(gd_state *st, ArrayObject *a, gd_device dst, const char *op);
/* 0 when NumPy can describe a (a view, a copy, a DLPack import), else -1 with `exc_type`
 * naming op and the shape: an empty array whose nonzero dimensions span more than 2**63 - 1
 * bytes has no NumPy twin. */
int gd_check_host_extent(const ArrayObject *a, PyObject *exc_type, const char *op);
/* `n` bytes from host memory into a's storage (a synchronizing upload for GPU arrays). */
int gd_upload(gd_state *st, ArrayObject *a, const void *host, size_t n, const char *op);

GD_SIGNATURE_EXTERN(gd_array_to_sig);
GD_SIGNATURE_EXTERN(gd_array_cuda_sig);
GD_SIGNATURE_EXTERN(gd_array_dunder_array_sig);
PyObject *gd_array_to(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames);
PyObject *gd_array_cpu(PyObject *self, PyObject *ignored);
PyObject *gd_array_cuda(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames);
PyObject *gd_array_numpy(PyObject *self, PyObject *ignored);
PyObject *gd_array_dunder_array(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames);
PyObject *gd_array_item(PyObject *self, PyObject *ignored);
PyObject *gd_array_tolist(PyObject *self, PyObject *ignored);
PyObject *gd_array_copy(PyObject *self, PyObject *ignored);
PyObject *gd_array_dunder_deepcopy(PyObject *self, PyObject *memo);
PyObject *gd_array_repr(PyObject *self);
PyObject *gd_array_str(PyObject *self);
int gd_array_getbuffer(PyObject *self, Py_buffer *view, int flags);
void gd_array_releasebuffer(PyObject *self, Py_buffer *view);

/* ------------------------------------------------------------------------------------------
 * index.c: indexing and reshaping views; Array methods and slots
 * ---------------------------------------------------------------------------------------- */

PyObject *gd_array_subscript(PyObject *self, PyObject *key);
int gd_array_ass_subscript(PyObject *self, PyObject *key, PyObject *value);
Py_ssize_t gd_array_length(PyObject *self);
PyObject *gd_array_sq_item(PyObject *self, Py_ssize_t i);
PyObject *gd_array_reshape(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *gd_array_flatten(PyObject *self, PyObject *ignored);
PyObject *gd_array_ravel(PyObject *self, PyObject *ignored);

/* ------------------------------------------------------------------------------------------
 * gather.c: indexing that copies (masks and integer index arrays), nonzero
 * ---------------------------------------------------------------------------------------- */

int gd_gather_setup(PyObject *module);
/* a[key] for a mask or index array key: 1 with *out the copy, 0 when key is a basic index
 * (nothing done), -1 with an exception. */
int gd_take(PyObject **out, gd_state *st, ArrayObject *a, PyObject *key);
/* a[key] = value for a mask or index array key: 1 done, 0 basic key, -1 with an exception
 * (then a is unchanged). */
int gd_put(gd_state *st, ArrayObject *a, PyObject *key, PyObject *value);
/* The int64 positions (C order) of mask's nonzero elements, 1-D, on mask's device. */
PyObject *gd_nonzero_flat(gd_state *st, ArrayObject *mask, const char *op);
PyObject *gd_array_nonzero(PyObject *self, PyObject *ignored);

/* ------------------------------------------------------------------------------------------
 * convert.c: Arrays from Python objects and NumPy data
 * ---------------------------------------------------------------------------------------- */

/* array(obj) / asarray(obj): obj converted to an Array of `dtype_obj` (None: inferred) on
 * `dev` (has_device == 0: where obj is, the CPU for non-Arrays). copy: 1 always copies; 0
 * shares memory when it can (an Array already right, a NumPy array on the CPU). */
/* gpudev's bool arrays hold the bytes 0 and 1 only, as kernels such as sums, comparisons and
 * argmax read them raw. Memory that comes from outside (NumPy, DLPack) may hold any byte:
 * a itself (a new reference) when every byte is 0 or 1, else a copy in which every nonzero
 * byte is 1, as NumPy reads them. Arrays of other dtypes are returned as they are. */
ArrayObject *gd_canonical_bools(gd_state *st, ArrayObject *a, const char *op);
PyObject *gd_array_from_object(gd_state *st, PyObject *obj, PyObject *dtype_obj, gd_device dev, int has_device,
                               int copy, const char *op);

/* ------------------------------------------------------------------------------------------
 * creation.c: zeros, ones, empty, full, arange, rand, randn, array, asarray
 * ---------------------------------------------------------------------------------------- */

int gd_creation_setup(PyObject *module);

/* ------------------------------------------------------------------------------------------
 * operand.c: operands of elementwise operations (Arrays, Python and NumPy scalars) and
 * NumPy 2's promotion rules
 * ---------------------------------------------------------------------------------------- */

/* Python bools are weak bools: a bool array stays bool with them, others keep their dtype. */
typedef enum gd_operand_kind { OPD_ARRAY, OPD_WEAK_INT, OPD_WEAK_FLOAT, OPD_SCALAR, OPD_WEAK_BOOL } gd_operand_kind;

typedef struct gd_opinfo {
    gd_operand_kind kind;
    gd_dtype dtype;   /* the Array's or the NumPy scalar's; unused for Python scalars     */
    int small_int;    /* a NumPy integer scalar float32 holds exactly (bool, (u)int8/16)  */
    int big;          /* a Python int outside int64                                       */
    ArrayObject *arr; /* OPD_ARRAY, else NULL                                             */
    PyObject *obj;
    int64_t i;        /* integer scalars                                                   */
    double f;         /* float scalars                                                     */
} gd_opinfo;

/* Describe operand o: 0 done, 1 when gpudev does not know the type (the caller returns
 * NotImplemented), -1 with an exception (unsupported NumPy scalars, NumPy arrays, lists). */
int gd_classify(gd_state *st, PyObject *o, gd_opinfo *x, const char *op);
/* NumPy 2 promotion of x op y before the operation's own rules: arrays and NumPy scalars
 * decide, Python scalars adapt (a Python float lifts int64 to float64). */
gd_dtype gd_promote(const gd_opinfo *x, const gd_opinfo *y);
/* A scalar operand's value in the compute dtype. -1 on error. */
int gd_scalar_to(gd_scalar *out, const gd_opinfo *x, gd_dtype dt);
/* A scalar cast to dt the way NumPy's setitem casts (floats truncate into integers). */
int gd_scalar_assign(gd_scalar *out, const gd_opinfo *x, gd_dtype dt, const char *op);
/* A scalar operand's value as a double. */
double gd_scalar_f64(const gd_opinfo *x);
/* A double rounded to float32 as the hardware would, without the undefined behaviour of
 * casting an out-of-range double. */
double gd_round_f32(double v);

/* ------------------------------------------------------------------------------------------
 * compute.c: planning elementwise work and backend calls on whole arrays, shared by the
 * operations
 * ---------------------------------------------------------------------------------------- */

/* Describe out (`shape`, `size` >= 1 elements, strides `out_strides` in elements or NULL for
 * a new C-contiguous output) = f(operands). Each of the nops (<= 3) operands is an array
 * broadcastable to `shape` or NULL for a scalar whose opd[i].scalar the caller has set. Axes
 * are ordered by the output's strides and merge where every operand allows it. */
void gd_ewise_plan(gd_ewise *ew, gd_operand *opd, ArrayObject *const *arrs, int nops, int ndim,
                   const int64_t *shape, int64_t size, const int64_t *out_strides);
/* One contiguous run of n elements. */
void gd_contiguous_plan(gd_ewise *ew, int64_t n);

/* out = op(a) for the plan ew: one backend call. -1 with an exception. */
int gd_run_ewise_unary(gd_state *st, const gd_backend *be, gd_device dev, void *out, gd_unop op, gd_dtype dt,
                       const gd_ewise *ew, const gd_operand *a, const char *name);
/* out = op(in) over n contiguous elements of dt; out may be in. -1 with an exception. */
int gd_run_unary(gd_state *st, const gd_backend *be, gd_device dev, void *out, gd_unop op, gd_dtype dt,
                 const void *in, int64_t n, const char *name);
/* dst[...] = value, for any strides of dst. */
int gd_fill(gd_state *st, const gd_backend *be, ArrayObject *dst, gd_scalar value, const char *name);
/* out[0:n] = value. */
int gd_run_fill(gd_state *st, const gd_backend *be, gd_device dev, void *out, gd_dtype dt, gd_scalar value,
                int64_t n, const char *name);
/* out (n elements of odt) = in (n elements of idt), converted as C casts do (a copy when the
 * dtypes match); both contiguous. */
int gd_run_astype(gd_state *st, const gd_backend *be, gd_device dev, void *out, gd_dtype odt, const void *in,
                  gd_dtype idt, int64_t n, const char *name);
/* A new C-contiguous array holding a converted to dt (same device and shape); a plain copy
 * when a already has dt. */
ArrayObject *gd_converted(gd_state *st, const gd_backend *be, ArrayObject *a, gd_dtype dt, const char *name);
/* a itself (a new reference) when it is C-contiguous, else a C-contiguous copy. */
ArrayObject *gd_contiguous(gd_state *st, const gd_backend *be, ArrayObject *a, const char *name);
/* A new array holding a broadcast to (ndim, shape). */
ArrayObject *gd_expanded(gd_state *st, const gd_backend *be, ArrayObject *a, int ndim, const int64_t *shape,
                         const char *name);
/* dst[...] = src elementwise for src of dst's shape (or broadcastable to it), any strides and
 * dtypes on one device (converted as C casts do); src must not overlap dst other than
 * exactly. -1 with an exception. */
int gd_store(gd_state *st, const gd_backend *be, ArrayObject *dst, ArrayObject *src, const char *name);
/* Whether two arrays on one device may share a byte (their address ranges overlap). */
int gd_overlaps(const ArrayObject *x, const ArrayObject *y);
/* Whether x and y are the same elements: same data, dtype, shape and strides. */
int gd_same_layout(const ArrayObject *x, const ArrayObject *y);
/* Whether a non-empty array's elements fill one block of memory without gaps or repeats, in
 * any order (a.T, a[::-1]); gd_extent gives the block. */
int gd_is_dense(const ArrayObject *a);
/* The lowest and one past the highest byte address a non-empty array touches. */
void gd_extent(const ArrayObject *a, uintptr_t *lo, uintptr_t *hi);

/* ------------------------------------------------------------------------------------------
 * elementwise.c: unary and binary operations, astype, allclose
 * ---------------------------------------------------------------------------------------- */

int gd_elementwise_setup(PyObject *module, gd_state *st);
/* The in-place error's hint for op: "a = a + b", or "a = gd.maximum(a, b)" without an operator. */
void gd_binop_rewrite(char *buf, size_t size, gd_binop op);

/* a op b with NumPy broadcasting and NumPy 2 promotion. a, b: Array or Python/NumPy scalar.
 * inplace: the target of `a op= b` (then a is inplace) or NULL. Returns a new reference:
 * the result (inplace itself for in-place forms), Py_NotImplemented for foreign types, or
 * NULL with an exception. */
PyObject *gd_binary(gd_state *st, gd_binop op, PyObject *a, PyObject *b, ArrayObject *inplace);
/* op(a) elementwise; a is an Array. Integers become float64 for float-only operations. */
PyObject *gd_unary(gd_state *st, gd_unop op, ArrayObject *a);
/* a converted to dtype (a new array; or a itself with a new reference when copy == 0 and the
 * dtype already matches). */
PyObject *gd_astype(gd_state *st, ArrayObject *a, gd_dtype dtype, int copy);
/* a.astype(dtype, copy=True), for the type's method table */
GD_SIGNATURE_EXTERN(gd_array_astype_sig);
PyObject *gd_array_astype_method(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames);

/* ------------------------------------------------------------------------------------------
 * assign.c: dst[...] = value
 * ---------------------------------------------------------------------------------------- */

/* dst[...] = value, broadcasting value (Array on dst's device, or scalar) to dst's shape and
 * casting to dst's dtype as NumPy's setitem does (unsafe casting: floats truncate into ints).
 * -1 on error. */
int gd_assign(gd_state *st, ArrayObject *dst, PyObject *value, const char *op);

/* ------------------------------------------------------------------------------------------
 * reduce.c: sum, mean, max, min, norm
 * ---------------------------------------------------------------------------------------- */

int gd_reduce_setup(PyObject *module);

GD_SIGNATURE_EXTERN(gd_array_sum_sig);
GD_SIGNATURE_EXTERN(gd_array_mean_sig);
GD_SIGNATURE_EXTERN(gd_array_max_sig);
GD_SIGNATURE_EXTERN(gd_array_min_sig);
GD_SIGNATURE_EXTERN(gd_array_any_sig);
GD_SIGNATURE_EXTERN(gd_array_all_sig);
PyObject *gd_array_sum(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames);
PyObject *gd_array_mean(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames);
PyObject *gd_array_max(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames);
PyObject *gd_array_any(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames);
PyObject *gd_array_all(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames);
PyObject *gd_array_min(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames);

/* ------------------------------------------------------------------------------------------
 * select.c: where, argmax, argmin
 * ---------------------------------------------------------------------------------------- */

int gd_select_setup(PyObject *module);

/* ------------------------------------------------------------------------------------------
 * sync.c: synchronize(), _sync, the GPUs with queued or recent work
 * ---------------------------------------------------------------------------------------- */

int gd_sync_setup(PyObject *module);

GD_SIGNATURE_EXTERN(gd_array_argmax_sig);
GD_SIGNATURE_EXTERN(gd_array_argmin_sig);
PyObject *gd_array_argmax(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames);
PyObject *gd_array_argmin(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames);

/* ------------------------------------------------------------------------------------------
 * matmul.c: matrix products
 * ---------------------------------------------------------------------------------------- */

int gd_matmul_setup(PyObject *module);
/* NumPy's matmul: 1-D and 2-D cases and batched N-D with broadcast batch dims. */
PyObject *gd_matmul(gd_state *st, PyObject *a, PyObject *b);

/* ------------------------------------------------------------------------------------------
 * shape_ops.c: transpose, concatenate, stack
 * ---------------------------------------------------------------------------------------- */

int gd_shape_ops_setup(PyObject *module);
/* A view with the axes reversed (axes == NULL) or permuted as axes (a tuple). */
PyObject *gd_transpose(gd_state *st, ArrayObject *a, PyObject *axes);

PyObject *gd_array_transpose(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *gd_array_permute(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *gd_array_swapaxes(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *gd_array_mT(PyObject *self, void *closure);

/* ------------------------------------------------------------------------------------------
 * services.c: device services of the backend table (memory statistics, caches, device
 * properties, events) as module functions
 * ---------------------------------------------------------------------------------------- */

int gd_services_setup(PyObject *module);
/* Wait for all work on GPU dev, on every stream of the process (synchronize_all, else
 * synchronize), so gpudev's stream may read memory another library wrote. -1 on error. */
int gd_sync_whole_device(gd_state *st, gd_device dev, const char *op);

/* ------------------------------------------------------------------------------------------
 * dlpack.c: DLPack interchange with NumPy, PyTorch, CuPy, ...
 * ---------------------------------------------------------------------------------------- */

int gd_dlpack_setup(PyObject *module);
/* a.__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None) -> PyCapsule */
GD_SIGNATURE_EXTERN(gd_array_dlpack_sig);
PyObject *gd_array_dlpack(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames);
/* a.__dlpack_device__() -> (1, 0) for the CPU, (2, i) for cuda:i */
PyObject *gd_array_dlpack_device(PyObject *self, PyObject *ignored);
/* The memory of `array` (an Array, or a view of one) goes to another library whose queued
 * work gpudev cannot order against: its owner's free (an Array's, or the keeper of memory
 * gpudev imported and now passes on) will wait for the whole device. */
/* a.__cuda_array_interface__ (GPU arrays; synchronizes, marks the owner exported) */
PyObject *gd_array_cuda_array_interface(PyObject *self, void *closure);
void gd_mark_exported(gd_state *st, ArrayObject *array);

/* ------------------------------------------------------------------------------------------
 * autograd.c: recording operations for backward() (the tape is gpudev/autograd.py)
 * ---------------------------------------------------------------------------------------- */

/* The Array attributes requires_grad, grad, grad_fn, is_leaf and methods requires_grad_,
 * detach, backward; grad mode; the recorder's registration. */
int gd_autograd_setup(PyObject *module, gd_state *st);

#if defined(__GNUC__)
#define GD_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define GD_UNLIKELY(x) (x)
#endif

/* Grad mode of the calling thread, as in PyTorch: nonzero inside no_grad (only read once an
 * input is part of a graph). */
extern _Thread_local int gd_ag_off;

/* Whether o (an operand: Array, scalar or NULL) is part of a graph. */
static inline int gd_ag_has(gd_state *st, PyObject *o)
{
    return o && Py_TYPE(o) == st->array_type && ((ArrayObject *)o)->ag;
}
/* Whether an operation on a and b (b may be NULL) must be recorded. */
static inline int gd_ag_wanted(gd_state *st, PyObject *a, PyObject *b)
{
    return GD_UNLIKELY(gd_ag_has(st, a) || gd_ag_has(st, b)) && !gd_ag_off;
}
/* Whether any Array of a PySequence_Fast sequence is part of a graph, with grad mode on. */
int gd_ag_any(gd_state *st, PyObject *seq);

/* Record out = op(a, b) (b may be NULL; a may be a tuple of inputs) with `extra` (a new
 * reference or NULL, e.g. the axis of a reduction; NULL with an exception set is an error):
 * out's producer becomes the recorder's node. Steals out; returns it, or NULL with an
 * exception (the recorder names ops it cannot differentiate). */
PyObject *gd_ag_record(gd_state *st, const char *op, PyObject *out, PyObject *a, PyObject *b, PyObject *extra);
/* What every recorded operation returns: out, recorded when an input is part of a graph.
 * out, a and b are evaluated more than once: pass variables; extra only when recording. */
#define GD_AG_OUT(st, op, out, a, b, extra)                                                              \
    ((out) && gd_ag_wanted((st), (PyObject *)(a), (PyObject *)(b))                                       \
         ? gd_ag_record((st), (op), (PyObject *)(out), (PyObject *)(a), (PyObject *)(b), (extra))       \
         : (PyObject *)(out))
/* out with requires_grad set from a creation function's requires_grad= argument (NULL: not
 * given); steals out, NULL with an exception for integer dtypes. */
PyObject *gd_ag_created(PyObject *out, PyObject *requires_grad);
/* a op= b when a or b is part of a graph: the recorder checks, computes and records it. */
PyObject *gd_ag_inplace(gd_state *st, const char *op, PyObject *a, PyObject *b);
/* a[key] = value when a or value is part of a graph. -1 with an exception. */
int gd_ag_setitem(gd_state *st, PyObject *a, PyObject *key, PyObject *value);

#endif /* GPUDEV_CORE_H */
