/* dlpack.c - DLPack interchange (and, at the end, the older CUDA Array Interface):
 * a.__dlpack__() and a.__dlpack_device__() export an Array's memory to NumPy, PyTorch, CuPy,
 * JAX, ...; gd.from_dlpack(x) wraps theirs. Both directions share memory, never copy it,
 * except where the exporter must not be written to (read-only or misaligned data is copied on
 * import) or the consumer asks for a copy (copy=True).
 * Strided tensors (views) travel with their strides, in both directions.
 *
 * Ownership: the producer hands the consumer a managed tensor inside a PyCapsule; the
 * consumer renames the capsule to "used_..." once it has taken the tensor over and calls the
 * tensor's deleter when it is done. A capsule nobody took over deletes the tensor itself.
 */
#include "interchange.h"
#include "core.h"
#include "args.h"
#include "array.h"
#include "convert.h"
#include "runtime.h"
#include "services.h"
#include "shape.h"
#include "sync.h"
#include "trace.h"
#include "transfer.h"
#include "dlpack.h"

#include <stdio.h>
#include <string.h>

#define IMPORT_KEEPER_NAME "gpudev.dlpack_import"

/* ------------------------------------------------------------------------------------------
 * shared helpers
 * ---------------------------------------------------------------------------------------- */

/* What DLPack calls a gpudev dtype: its kind (float, int or bool) and bits, from the dtype
 * table. */
static DLDataType dl_dtype_of(gd_dtype t)
{
    const char kind = gd_dtype_table[t].kind;
    const uint8_t code = (uint8_t)(kind == 'f' ? kDLFloat : kind == 'b' ? kDLBool : kDLInt);
    DLDataType d = {code, (uint8_t)(8 * gd_dtype_size(t)), 1};
    return d;
}

/* The gpudev dtype of a DLPack type, or -1 when gpudev has none. */
static int gd_dtype_from_dl(DLDataType d)
{
    char kind = d.code == kDLFloat ? 'f' : d.code == kDLInt ? 'i' : d.code == kDLBool ? 'b' : 0;
    if (d.lanes != 1 || !kind || d.bits % 8) return -1;
    return gd_dtype_lookup(kind, d.bits / 8);
}

static DLDevice dl_device_of(gd_device dev)
{
    DLDevice d = {dev.type == GD_CPU ? kDLCPU : kDLCUDA, dev.index};
    return d;
}

/* Destructors and deleters can run while an exception is propagating (they are triggered by
 * a DECREF anywhere); the exception must come out of them untouched. */
typedef struct saved_error {
#if PY_VERSION_HEX >= 0x030C0000
    PyObject *exc;
#else
    PyObject *type, *value, *traceback;
#endif
} saved_error;

static void error_save(saved_error *e)
{
#if PY_VERSION_HEX >= 0x030C0000
    e->exc = PyErr_GetRaisedException();
#else
    PyErr_Fetch(&e->type, &e->value, &e->traceback);
#endif
}

static void error_restore(saved_error *e)
{
#if PY_VERSION_HEX >= 0x030C0000
    PyErr_SetRaisedException(e->exc);
#else
    PyErr_Restore(e->type, e->value, e->traceback);
#endif
}

/* ------------------------------------------------------------------------------------------
 * export: a.__dlpack_device__(), a.__dlpack__()
 * ---------------------------------------------------------------------------------------- */

/* The consumer's stream, as the DLPack and array API standards define `stream` for CUDA:
 * None (the consumer named none), -1 (it synchronizes itself), or a stream: 1 the legacy
 * default stream, 2 the per-thread default stream, any larger value the stream's handle. */
typedef enum stream_kind { STREAM_NONE, STREAM_UNORDERED, STREAM_GIVEN } stream_kind;

typedef struct consumer_stream {
    stream_kind kind;
    uint64_t stream; /* STREAM_GIVEN */
} consumer_stream;

/* DLPack's 2: CUDA's per-thread default stream, a different stream in every thread. */
#define STREAM_PER_THREAD 2

/* One allocation per export: the managed tensor first (the consumer's pointer is its start),
 * then the shape and strides it points to, the reference that keeps the Array alive, and
 * what its release must wait for on a GPU. */
typedef struct dlpack_export {
    union {
        DLManagedTensor legacy;
        DLManagedTensorVersioned versioned;
    } managed;
    PyObject *array;
    const gd_backend *gpu; /* the CUDA backend for GPU memory, else NULL */
    int device;
    consumer_stream consumer;
    unsigned long thread; /* that exported, when the stream is STREAM_PER_THREAD */
    int64_t shape[GD_MAX_NDIM];
    int64_t strides[GD_MAX_NDIM];
} dlpack_export;

/* Before the reference goes (and with it, maybe, the memory, whose stream-ordered free runs
 * on gpudev's stream): gpudev's stream waits for the work the consumer queued on the stream
 * it named at export. The consumer is done with the memory when it calls the deleter, but
 * its queued kernels may not be. The stream must still exist, as the standard's streams do
 * while their tensors live; if ordering on it fails all the same, the owner's free waits for
 * the whole device instead (an export without a stream is marked so at once). A deleter
 * cannot raise, and that fallback is safe, so the failure is not reported. The per-thread
 * default stream is the exporting thread's only there: a deleter that runs on another thread
 * (a consumer's garbage collector, a worker) would order against its own thread's stream, so
 * it takes the same fallback. */
static void release_after_consumer(const dlpack_export *ex)
{
    if (!ex->gpu || ex->consumer.kind != STREAM_GIVEN || !ex->gpu->device_wait_stream) return;
    saved_error saved;
    error_save(&saved);
    gd_error err = {0};
    int elsewhere = ex->consumer.stream == STREAM_PER_THREAD && PyThread_get_thread_ident() != ex->thread;
    if (elsewhere || ex->gpu->device_wait_stream(ex->device, ex->consumer.stream, &err)) {
        gd_state *st = gd_state_of(ex->array);
        if (st) gd_mark_exported(st, (ArrayObject *)ex->array);
    }
    error_restore(&saved);
}

static void export_release(dlpack_export *ex)
{
    /* A consumer may call the deleter from a C++ destructor after Python has shut down;
     * there is nothing left to return the reference to, so it is dropped on purpose. */
    if (!Py_IsInitialized()) return;
    /* Consumers call deleters from any thread, with or without the GIL. */
    PyGILState_STATE gil = PyGILState_Ensure();
    release_after_consumer(ex);
    Py_DECREF(ex->array);
    PyMem_RawFree(ex);
    PyGILState_Release(gil);
}

static void export_deleter_legacy(DLManagedTensor *self) { export_release(self->manager_ctx); }
static void export_deleter_versioned(DLManagedTensorVersioned *self) { export_release(self->manager_ctx); }

/* The capsule's destructor: deletes the tensor only if no consumer took it over. */
static void export_capsule_free(PyObject *capsule)
{
    if (PyCapsule_IsValid(capsule, DLPACK_USED_CAPSULE_NAME) ||
        PyCapsule_IsValid(capsule, DLPACK_USED_VERSIONED_CAPSULE_NAME))
        return;
    saved_error saved;
    error_save(&saved);
    if (PyCapsule_IsValid(capsule, DLPACK_VERSIONED_CAPSULE_NAME)) {
        DLManagedTensorVersioned *m = PyCapsule_GetPointer(capsule, DLPACK_VERSIONED_CAPSULE_NAME);
        m->deleter(m);
    } else if (PyCapsule_IsValid(capsule, DLPACK_CAPSULE_NAME)) {
        DLManagedTensor *m = PyCapsule_GetPointer(capsule, DLPACK_CAPSULE_NAME);
        m->deleter(m);
    } else {
        /* renamed to something unknown: which struct it holds is unknowable, so leak it */
        PyErr_SetString(PyExc_BufferError, "__dlpack__: a DLPack capsule was renamed to an unknown name; "
                                           "its tensor is leaked");
        PyErr_WriteUnraisable(capsule);
    }
    error_restore(&saved);
}

PyObject *gd_array_dlpack_device(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    DLDevice d = dl_device_of(((ArrayObject *)self)->device);
    return Py_BuildValue("(ii)", (int)d.device_type, (int)d.device_id);
}

/* max_version: None (legacy capsule) or (major, minor); *versioned = major >= 1. */
static int parse_max_version(PyObject *obj, int *versioned)
{
    *versioned = 0;
    if (obj == Py_None) return 0;
    if (!PyTuple_Check(obj) || PyTuple_GET_SIZE(obj) != 2 || !PyLong_Check(PyTuple_GET_ITEM(obj, 0)) ||
        !PyLong_Check(PyTuple_GET_ITEM(obj, 1))) {
        PyObject *shown = gd_brief_repr(obj);
        if (shown)
            PyErr_Format(PyExc_TypeError,
                         "__dlpack__: max_version must be None or a tuple (major, minor) of ints, got %U", shown);
        Py_XDECREF(shown);
        return -1;
    }
    long major = PyLong_AsLong(PyTuple_GET_ITEM(obj, 0));
    if (major == -1 && PyErr_Occurred()) return -1;
    *versioned = major >= DLPACK_MAJOR_VERSION;
    return 0;
}

/* dl_device: None (the array's own device) or (device_type, device_id), which must be the
 * array's device: gpudev copies between devices only when asked to, with a.to(). */
static int check_dl_device(PyObject *obj, ArrayObject *a)
{
    if (obj == Py_None) return 0;
    long type = 0, id = 0;
    if (!PyTuple_Check(obj) || PyTuple_GET_SIZE(obj) != 2 || !PyLong_Check(PyTuple_GET_ITEM(obj, 0)) ||
        !PyLong_Check(PyTuple_GET_ITEM(obj, 1))) {
        PyObject *shown = gd_brief_repr(obj);
        if (shown)
            PyErr_Format(PyExc_TypeError,
                         "__dlpack__: dl_device must be None or a tuple (device_type, device_id) of ints, got %U", shown);
        Py_XDECREF(shown);
        return -1;
    }
    type = PyLong_AsLong(PyTuple_GET_ITEM(obj, 0));
    if (type == -1 && PyErr_Occurred()) return -1;
    id = PyLong_AsLong(PyTuple_GET_ITEM(obj, 1));
    if (id == -1 && PyErr_Occurred()) return -1;
    DLDevice own = dl_device_of(a->device);
    if (type == (long)own.device_type && id == (long)own.device_id) return 0;
    char here[32], there[32];
    gd_device_label(gd_state_of((PyObject *)a), a->device, here);
    if (type == kDLCPU) snprintf(there, sizeof there, "cpu");
    else if (type == kDLCUDA) snprintf(there, sizeof there, "cuda:%ld", id);
    else snprintf(there, sizeof there, "DLPack device type %ld", type);
    if (type == kDLCPU || type == kDLCUDA)
        PyErr_Format(PyExc_BufferError,
                     "__dlpack__: the array is on %s but dl_device=%R asks for %s; gpudev copies between devices "
                     "only when asked: export a.to('%s') instead",
                     here, obj, there, there);
    else
        PyErr_Format(PyExc_BufferError, "__dlpack__: the array is on %s but dl_device=%R asks for %s, which gpudev "
                                        "does not support; export to the CPU or a CUDA GPU",
                     here, obj, there);
    return -1;
}

/* stream= of __dlpack__ for an array on a GPU; -1 with ValueError for the values the
 * standard forbids (0 is ambiguous, other negative values mean nothing). */
static int parse_stream(PyObject *obj, consumer_stream *out)
{
    *out = (consumer_stream){STREAM_NONE, 0};
    if (obj == Py_None) return 0;
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(obj, &overflow);
    if (v == -1 && PyErr_Occurred()) return -1;
    if (overflow > 0) {
        unsigned long long u = PyLong_AsUnsignedLongLong(obj);
        if (u == (unsigned long long)-1 && PyErr_Occurred()) return -1;
        *out = (consumer_stream){STREAM_GIVEN, (uint64_t)u};
        return 0;
    }
    if (v == -1 && !overflow) {
        out->kind = STREAM_UNORDERED;
        return 0;
    }
    if (v > 0) {
        *out = (consumer_stream){STREAM_GIVEN, (uint64_t)v};
        return 0;
    }
    PyErr_Format(PyExc_ValueError,
                 "__dlpack__: stream=%R is not a CUDA stream; pass the consumer's stream handle, 1 for the legacy "
                 "default stream, 2 for the per-thread default stream, -1 for no synchronization, or None",
                 obj);
    return -1;
}

/* Before a GPU array is handed over: work the consumer queues on its stream must see what
 * gpudev queued. With a stream named, that is an event (no waiting here); with None, any
 * stream may read, so gpudev's stream is waited for (this also finishes the copy made for
 * copy=True); -1 means the consumer takes care of it. Without a stream gpudev cannot order
 * its free after the consumer's reads: the owner's free will wait for the whole device. */
static int export_order(gd_state *st, ArrayObject *a, const consumer_stream *c)
{
    gd_device dev = a->device;
    const gd_backend *be = gd_backend_of(st, dev, "__dlpack__");
    if (c->kind != STREAM_GIVEN || !be->stream_wait_device) gd_mark_exported(st, a);
    if (c->kind == STREAM_UNORDERED) return 0;
    if (c->kind == STREAM_NONE || !be->stream_wait_device) return gd_sync_device(st, dev, "__dlpack__");
    gd_error err = {0};
    /* no synchronization: the consumer's stream waits on the GPU */
    return be->stream_wait_device(dev.index, c->stream, &err) ? gd_raise(st, "__dlpack__", &err) : 0;
}

/* The capsule exporting `exported` (a new reference, given to the capsule's tensor):
 * versioned or legacy, with `copy` recorded in the versioned flags; a GPU export remembers
 * the consumer's stream for its release. */
static PyObject *export_capsule(gd_state *st, PyObject *exported, int versioned, int copy, const consumer_stream *c)
{
    dlpack_export *ex = PyMem_RawCalloc(1, sizeof *ex);
    if (!ex) {
        Py_DECREF(exported);
        return PyErr_NoMemory();
    }
    ArrayObject *src = (ArrayObject *)exported;
    ex->array = exported;
    if (src->device.type == GD_CUDA) {
        ex->gpu = gd_backend_of(st, src->device, "__dlpack__");
        ex->device = src->device.index;
        ex->consumer = *c;
        ex->thread = PyThread_get_thread_ident();
    }
    /* explicit strides (elements, as DLPack counts them), also for C-contiguous arrays and the
     * legacy struct: some consumers mishandle NULL */
    for (int i = 0; i < src->ndim; i++) {
        ex->shape[i] = src->shape[i];
        ex->strides[i] = src->strides[i];
    }
    DLTensor *t = versioned ? &ex->managed.versioned.dl_tensor : &ex->managed.legacy.dl_tensor;
    *t = (DLTensor){.data = src->data, .device = dl_device_of(src->device), .ndim = src->ndim,
                    .dtype = dl_dtype_of(src->dtype), .shape = ex->shape, .strides = ex->strides, .byte_offset = 0};
    PyObject *capsule;
    if (versioned) {
        DLManagedTensorVersioned *m = &ex->managed.versioned;
        m->version.major = DLPACK_MAJOR_VERSION;
        m->version.minor = DLPACK_MINOR_VERSION;
        m->manager_ctx = ex;
        m->deleter = export_deleter_versioned;
        m->flags = copy ? DLPACK_FLAG_BITMASK_IS_COPIED : 0;
        capsule = PyCapsule_New(m, DLPACK_VERSIONED_CAPSULE_NAME, export_capsule_free);
    } else {
        DLManagedTensor *m = &ex->managed.legacy;
        m->manager_ctx = ex;
        m->deleter = export_deleter_legacy;
        capsule = PyCapsule_New(m, DLPACK_CAPSULE_NAME, export_capsule_free);
    }
    if (!capsule) export_release(ex);
    return capsule;
}

GD_SIGNATURE_SHARED(gd_array_dlpack_sig, "__dlpack__",
                    "$self, *, stream=None, max_version=None, dl_device=None, copy=None",
                    "A DLPack capsule sharing the memory.\n\n>>> np.from_dlpack(gd.arange(3))\narray([0, 1, 2])");
PyObject *gd_array_dlpack(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    enum { STREAM, MAX_VERSION, DL_DEVICE, COPY, NUM_KW };
    PyObject *kw[NUM_KW] = {Py_None, Py_None, Py_None, Py_None};
    ArrayObject *a = (ArrayObject *)self;
    gd_state *st = gd_state_of(self);

    if (nargs) {
        PyErr_Format(PyExc_TypeError,
                     "__dlpack__: takes keyword arguments only (stream=None, max_version=None, dl_device=None, "
                     "copy=None), got %zd positional",
                     nargs);
        return NULL;
    }
    if (gd_parse_args(kw, &gd_array_dlpack_sig, args, nargs, kwnames) < 0) return NULL;
    if (kw[STREAM] != Py_None && (!PyLong_Check(kw[STREAM]) || PyBool_Check(kw[STREAM]))) {
        PyErr_Format(PyExc_TypeError, "__dlpack__: stream must be None or an int (a CUDA stream handle), got %.100s",
                     Py_TYPE(kw[STREAM])->tp_name);
        return NULL;
    }
    int versioned;
    if (parse_max_version(kw[MAX_VERSION], &versioned) < 0) return NULL;
    if (check_dl_device(kw[DL_DEVICE], a) < 0 || gd_check_host_extent(a, PyExc_BufferError, "__dlpack__") < 0)
        return NULL;
    int copy = kw[COPY] == Py_None ? 0 : PyObject_IsTrue(kw[COPY]);
    if (copy < 0) return NULL;
    consumer_stream consumer = {STREAM_NONE, 0};
    if (a->device.type == GD_CUDA && parse_stream(kw[STREAM], &consumer) < 0) return NULL;
    if (a->device.type == GD_CPU && kw[STREAM] != Py_None) { /* the DLPack standard: None for CPU data */
        PyErr_Format(PyExc_ValueError, "__dlpack__: stream=%R given for an array on the CPU; CPU data has no "
                                       "streams, so stream must be None", kw[STREAM]);
        return NULL;
    }

    /* a CPU consumer reads the memory from the host; a GPU one gets it on the device */
    if ((a->device.type == GD_CPU ? gd_host_read(st, a, "__dlpack__") : gd_handoff(st, a)) < 0) return NULL;
    PyObject *exported = copy ? (PyObject *)gd_array_to_device(st, a, a->device, "__dlpack__") : Py_NewRef(self);
    if (!exported) return NULL;
    if (a->device.type == GD_CUDA && export_order(st, (ArrayObject *)exported, &consumer) < 0) {
        Py_DECREF(exported);
        return NULL;
    }
    return export_capsule(st, exported, versioned, copy, &consumer);
}

/* ------------------------------------------------------------------------------------------
 * import: gd.from_dlpack(x)
 * ---------------------------------------------------------------------------------------- */

/* The base of an imported Array (inside a capsule): owns the producer's managed tensor and
 * hands it back, through its deleter, when the last Array sharing the memory goes away. */
typedef struct dlpack_import {
    DLManagedTensor *legacy;             /* exactly one of the two is set */
    DLManagedTensorVersioned *versioned;
    const gd_backend *gpu;               /* the CUDA backend for GPU memory, else NULL */
    int device;
    int exported;                        /* passed on to another library (gd_mark_exported) */
} dlpack_import;

void gd_mark_exported(gd_state *st, ArrayObject *array)
{
    PyObject *owner = array->base ? array->base : (PyObject *)array;
    if (gd_is_array(st, owner)) {
        ((ArrayObject *)owner)->exported = 1;
    } else if (PyCapsule_IsValid(owner, IMPORT_KEEPER_NAME)) {
        /* re-exported imported memory: the keeper hands it back to its producer */
        ((dlpack_import *)PyCapsule_GetPointer(owner, IMPORT_KEEPER_NAME))->exported = 1;
    }
}

static void keeper_free(PyObject *keeper)
{
    saved_error saved;
    error_save(&saved);
    dlpack_import *im = PyCapsule_GetPointer(keeper, IMPORT_KEEPER_NAME);
    if (!im) {
        PyErr_WriteUnraisable(keeper);
        error_restore(&saved);
        return;
    }
    if (im->gpu && im->gpu->synchronize) {
        /* Kernels queued on gpudev's stream may still read the memory, and the producer may
         * reuse it as soon as it is handed back: wait for them first; for every stream of the
         * device when gpudev passed the memory on to a library whose streams it cannot see. */
        gd_error err = {0};
        int rc;
        Py_BEGIN_ALLOW_THREADS
        rc = im->exported && im->gpu->synchronize_all ? im->gpu->synchronize_all(im->device, &err)
                                                       : im->gpu->synchronize(im->device, &err);
        Py_END_ALLOW_THREADS
        if (rc) {
            PyErr_Format(PyExc_RuntimeError, "from_dlpack: releasing imported memory on cuda:%d: %s", im->device,
                         err.message);
            PyErr_WriteUnraisable(keeper);
        }
    }
    if (im->versioned && im->versioned->deleter) im->versioned->deleter(im->versioned);
    if (im->legacy && im->legacy->deleter) im->legacy->deleter(im->legacy);
    PyMem_RawFree(im);
    error_restore(&saved);
}

static const char *dl_device_type_name(long type)
{
    switch (type) {
    case kDLCPU: return "CPU";
    case kDLCUDA: return "CUDA";
    case kDLCUDAHost: return "CUDA host (pinned)";
    case kDLOpenCL: return "OpenCL";
    case kDLVulkan: return "Vulkan";
    case kDLMetal: return "Metal";
    case kDLROCM: return "ROCm";
    case kDLROCMHost: return "ROCm host (pinned)";
    case kDLCUDAManaged: return "CUDA managed";
    case kDLOneAPI: return "oneAPI";
    case kDLWebGPU: return "WebGPU";
    default: return "unknown";
    }
}

/* "int32", "bool", "float16x4" for messages. */
static const char *dl_dtype_str(DLDataType d, char *buf, size_t cap)
{
    static const char *const codes[] = {"int", "uint", "float", "opaque", "bfloat", "complex", "bool"};
    unsigned code = d.code, bits = d.bits, lanes = d.lanes;
    int n;
    if (code == kDLBool && bits == 8) n = snprintf(buf, cap, "bool");
    else if (code < sizeof codes / sizeof codes[0]) n = snprintf(buf, cap, "%s%u", codes[code], bits);
    else n = snprintf(buf, cap, "(type code %u, %u bits)", code, bits);
    if (lanes != 1 && n > 0 && (size_t)n < cap) snprintf(buf + n, cap - (size_t)n, "x%u", lanes);
    return buf;
}

/* x.name, or TypeError saying that x does not speak DLPack. */
static PyObject *producer_method(PyObject *x, const char *name)
{
    PyObject *method = PyObject_GetAttrString(x, name);
    if (method || !PyErr_ExceptionMatches(PyExc_AttributeError)) return method;
    PyErr_Clear();
    PyErr_Format(PyExc_TypeError,
                 "from_dlpack: %.100s does not support DLPack (it has no %s method); use gd.asarray(x) for NumPy "
                 "arrays, lists and scalars",
                 Py_TYPE(x)->tp_name, name);
    return NULL;
}

/* x.__dlpack_device__() as a gpudev device; -1 with an exception for anything gpudev
 * cannot hold (DeviceUnavailableError for a GPU this machine lacks). */
static int producer_device(gd_state *st, PyObject *x, gd_device *out)
{
    PyObject *method = producer_method(x, "__dlpack_device__");
    if (!method) return -1;
    PyObject *res = PyObject_CallNoArgs(method);
    Py_DECREF(method);
    if (!res) return -1;
    long type = 0, id = 0;
    int ok = PyTuple_Check(res) && PyTuple_GET_SIZE(res) == 2 && PyLong_Check(PyTuple_GET_ITEM(res, 0)) &&
             PyLong_Check(PyTuple_GET_ITEM(res, 1));
    if (ok) {
        type = PyLong_AsLong(PyTuple_GET_ITEM(res, 0));
        id = type == -1 && PyErr_Occurred() ? -1 : PyLong_AsLong(PyTuple_GET_ITEM(res, 1));
        if (PyErr_Occurred()) {
            Py_DECREF(res);
            return -1;
        }
    } else {
        PyObject *shown = gd_brief_repr(res);
        if (shown)
            PyErr_Format(PyExc_TypeError,
                         "from_dlpack: %.100s.__dlpack_device__() returned %U; expected a tuple (device_type, device_id)",
                         Py_TYPE(x)->tp_name, shown);
        Py_XDECREF(shown);
    }
    Py_DECREF(res);
    if (!ok) return -1;
    if (type == kDLCPU) {
        *out = GD_CPU_DEVICE;
        return 0;
    }
    if (type == kDLCUDA) {
        if (id < 0 || id >= GD_MAX_GPUS) {
            PyErr_Format(st->DeviceUnavailableError, "from_dlpack: the data is on CUDA device %ld, which gpudev cannot "
                                                     "address (GPU indices run from 0 to %d)",
                         id, GD_MAX_GPUS - 1);
            return -1;
        }
        *out = (gd_device){GD_CUDA, (int)id};
        return gd_backend_of(st, *out, "from_dlpack") ? 0 : -1;
    }
    PyErr_Format(PyExc_BufferError,
                 "from_dlpack: the data is in %s memory (DLPack device type %ld), which gpudev cannot use; gpudev "
                 "reads CPU and CUDA memory: move it to the CPU in the producer first",
                 dl_device_type_name(type), type);
    return -1;
}

/* x.__dlpack__(...) asking for a versioned capsule, falling back to the legacy call for
 * producers that predate max_version (NumPy < 2, PyTorch < 2.4). stream=None for GPU data:
 * the caller then waits for the whole device, whatever stream the producer wrote on. */
static PyObject *producer_capsule(PyObject *x, int cuda)
{
    PyObject *method = producer_method(x, "__dlpack__");
    if (!method) return NULL;
    PyObject *args = PyTuple_New(0);
    PyObject *kw = args ? Py_BuildValue("{s:(ii)}", "max_version", DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION) : NULL;
    if (kw && cuda && PyDict_SetItemString(kw, "stream", Py_None) < 0) Py_CLEAR(kw);
    PyObject *capsule = kw ? PyObject_Call(method, args, kw) : NULL;
    if (!capsule && kw && PyErr_ExceptionMatches(PyExc_TypeError)) {
        PyErr_Clear();
        if (PyDict_DelItemString(kw, "max_version") == 0) capsule = PyObject_Call(method, args, kw);
    }
    Py_XDECREF(kw);
    Py_XDECREF(args);
    Py_DECREF(method);
    return capsule;
}

/* The tensor inside a producer's capsule, or NULL with the reason: not a DLPack capsule,
 * already consumed, or a major version whose layout gpudev does not know. Exactly one of
 * *legacy and *versioned is set on success. */
static DLTensor *capsule_tensor(PyObject *capsule, const char *producer, DLManagedTensor **legacy,
                                DLManagedTensorVersioned **versioned, int *read_only)
{
    *legacy = NULL;
    *versioned = NULL;
    *read_only = 0;
    if (PyCapsule_IsValid(capsule, DLPACK_VERSIONED_CAPSULE_NAME)) {
        DLManagedTensorVersioned *v = PyCapsule_GetPointer(capsule, DLPACK_VERSIONED_CAPSULE_NAME);
        /* another major version may lay out the fields after `flags` differently */
        if (v->version.major != DLPACK_MAJOR_VERSION) {
            PyErr_Format(PyExc_BufferError,
                         "from_dlpack: %.100s exported DLPack %u.%u; gpudev reads DLPack %d.x: ask the producer for "
                         "an older version or update gpudev",
                         producer, v->version.major, v->version.minor, DLPACK_MAJOR_VERSION);
            return NULL;
        }
        *versioned = v;
        *read_only = (v->flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0;
        return &v->dl_tensor;
    }
    if (PyCapsule_IsValid(capsule, DLPACK_CAPSULE_NAME)) {
        *legacy = PyCapsule_GetPointer(capsule, DLPACK_CAPSULE_NAME);
        return &(*legacy)->dl_tensor;
    }
    const char *name = PyCapsule_CheckExact(capsule) ? PyCapsule_GetName(capsule) : NULL;
    if (name && (strcmp(name, DLPACK_USED_CAPSULE_NAME) == 0 || strcmp(name, DLPACK_USED_VERSIONED_CAPSULE_NAME) == 0))
        PyErr_Format(PyExc_BufferError,
                     "from_dlpack: the DLPack capsule from %.100s.__dlpack__() was already consumed; a capsule "
                     "can be imported only once: pass the array itself, whose __dlpack__ makes a new one",
                     producer);
    else
        PyErr_Format(PyExc_TypeError, "from_dlpack: %.100s.__dlpack__() returned %.100s, not a DLPack capsule",
                     producer, PyCapsule_CheckExact(capsule) && name ? name : Py_TYPE(capsule)->tp_name);
    return NULL;
}

/* The tensor's device, rank and dtype as gpudev needs them; *dt is its gpudev dtype. */
static int check_tensor_kind(const DLTensor *t, gd_device dev, const char *producer, gd_dtype *dt)
{
    char buf[256];
    DLDevice want = dl_device_of(dev);
    if (t->device.device_type != want.device_type || t->device.device_id != want.device_id) {
        PyErr_Format(PyExc_BufferError,
                     "from_dlpack: %.100s.__dlpack_device__() said (%d, %d) but its tensor is on (%d, %d); the "
                     "producer contradicts itself",
                     producer, (int)want.device_type, (int)want.device_id, (int)t->device.device_type,
                     (int)t->device.device_id);
        return -1;
    }
    if (t->ndim < 0 || t->ndim > GD_MAX_NDIM) {
        PyErr_Format(PyExc_ValueError, "from_dlpack: the tensor has %d dimensions; gpudev supports at most %d",
                     (int)t->ndim, GD_MAX_NDIM);
        return -1;
    }
    int d = gd_dtype_from_dl(t->dtype);
    if (d < 0) {
        int to_int = t->dtype.code == kDLInt || t->dtype.code == kDLUInt || t->dtype.code == kDLBool;
        const char *target = to_int ? "int64" : "float32";
        PyErr_Format(PyExc_TypeError,
                     "from_dlpack: dtype %s is not supported; gpudev arrays hold float32, float64, int64, int32 or bool: "
                     "convert in the producer first, e.g. x.astype('%s') in NumPy or x.to(torch.%s) in PyTorch",
                     dl_dtype_str(t->dtype, buf, sizeof buf), target, target);
        return -1;
    }
    *dt = (gd_dtype)d;
    return 0;
}

/* The tensor's element count (*size), with its shape checked; -1 with ValueError. */
static int check_tensor_shape(const DLTensor *t, gd_dtype dt, int64_t *size)
{
    char buf[256];
    const int64_t item = (int64_t)gd_dtype_size(dt);
    *size = 1;
    for (int i = 0; i < t->ndim; i++) {
        if (t->shape[i] < 0) {
            PyErr_Format(PyExc_ValueError, "from_dlpack: the tensor has a negative dimension, shape %s",
                         gd_shape_str(t->ndim, t->shape, buf));
            return -1;
        }
        if (t->shape[i] == 0) *size = 0;
    }
    for (int i = 0; i < t->ndim && *size; i++) {
        if (*size > INT64_MAX / item / t->shape[i]) {
            PyErr_Format(PyExc_ValueError, "from_dlpack: a tensor of shape %s is larger than 2**63 bytes",
                         gd_shape_str(t->ndim, t->shape, buf));
            return -1;
        }
        *size *= t->shape[i];
    }
    return 0;
}

/* Any strides (elements, of any sign) whose reach in bytes fits in int64, so that views of
 * the tensor can address every element; NULL strides mean C order. And the data must be
 * there. */
static int check_tensor_layout(const DLTensor *t, gd_dtype dt, int64_t size, const char *producer)
{
    if (t->strides) {
        int64_t reach = 0, span = 0, bytes;
        int bad = 0;
        for (int i = 0; i < t->ndim && !bad; i++) {
            const int64_t s = t->strides[i];
            bad = s == INT64_MIN || gd_mul_overflows(&span, s < 0 ? -s : s, t->shape[i] - 1) || reach > INT64_MAX - span;
            if (!bad) reach += span;
        }
        if (bad || reach == INT64_MAX || gd_mul_overflows(&bytes, reach + 1, (int64_t)gd_dtype_size(dt))) {
            char buf[256], sbuf[256];
            PyErr_Format(PyExc_ValueError,
                         "from_dlpack: the strides %s (elements) of a tensor of shape %s reach beyond 2**63 bytes; "
                         "%.100s exported an invalid layout",
                         gd_shape_str(t->ndim, t->strides, sbuf), gd_shape_str(t->ndim, t->shape, buf), producer);
            return -1;
        }
    }
    if (!t->data) {
        PyErr_Format(PyExc_BufferError, "from_dlpack: %.100s exported %lld elements at a NULL address", producer,
                     (long long)size);
        return -1;
    }
    return 0;
}

/* An Array sharing the tensor's memory, whose base (a capsule) takes the producer's managed
 * tensor over once the producer's capsule is marked used. On failure the tensor goes back
 * through whichever of the two owns it by then. */
static ArrayObject *adopt_tensor(gd_state *st, PyObject *capsule, DLManagedTensor *legacy,
                                 DLManagedTensorVersioned *versioned, gd_device dev, gd_dtype dt, int64_t size)
{
    const DLTensor *t = versioned ? &versioned->dl_tensor : &legacy->dl_tensor;
    dlpack_import *im = PyMem_RawCalloc(1, sizeof *im);
    if (!im) {
        PyErr_NoMemory();
        return NULL;
    }
    im->legacy = legacy;
    im->versioned = versioned;
    im->gpu = dev.type == GD_CUDA ? gd_backend_of(st, dev, "from_dlpack") : NULL;
    im->device = dev.index;
    /* No destructor until the capsule is marked used: until then the capsule owns the tensor. */
    PyObject *keeper = PyCapsule_New(im, IMPORT_KEEPER_NAME, NULL);
    if (!keeper ||
        PyCapsule_SetName(capsule, versioned ? DLPACK_USED_VERSIONED_CAPSULE_NAME : DLPACK_USED_CAPSULE_NAME) < 0 ||
        PyCapsule_SetDestructor(keeper, keeper_free) < 0) { /* only fails for an invalid capsule */
        Py_XDECREF(keeper);
        PyMem_RawFree(im);
        return NULL;
    }
    /* the shape may be NULL for 0-d tensors; strides NULL for C order */
    int64_t shape[GD_MAX_NDIM], strides[GD_MAX_NDIM];
    if (t->ndim) memcpy(shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
    if (t->ndim && t->strides) memcpy(strides, t->strides, sizeof(int64_t) * (size_t)t->ndim);
    return gd_array_borrow(st, keeper, (char *)t->data + t->byte_offset, dev, dt, t->ndim, shape,
                           t->strides ? strides : NULL, size);
}

/* An Array for the tensor in `capsule` (on `dev`, which the producer named): sharing its
 * memory, or a copy when it must not be shared. On success the capsule is marked used and the
 * Array's base owns the tensor; on failure the capsule still owns it. */
static ArrayObject *import_capsule(gd_state *st, PyObject *capsule, gd_device dev, const char *producer)
{
    DLManagedTensor *legacy;
    DLManagedTensorVersioned *versioned;
    int read_only;
    gd_dtype dt;
    int64_t size;
    DLTensor *t = capsule_tensor(capsule, producer, &legacy, &versioned, &read_only);
    if (!t || check_tensor_kind(t, dev, producer, &dt) < 0 || check_tensor_shape(t, dt, &size) < 0) return NULL;
    if (size == 0) /* nothing to share; the producer gets its tensor back with the capsule */
        return gd_array_new(st, dev, dt, t->ndim, t->shape, "from_dlpack");
    if (check_tensor_layout(t, dt, size, producer) < 0) return NULL;
    /* gpudev's kernels read elements through typed pointers, so data must be aligned to them;
     * a read-only tensor must not become a writable Array. Both are copied instead. */
    uintptr_t data = (uintptr_t)t->data + (uintptr_t)t->byte_offset;
    int must_copy = read_only || data % (uintptr_t)gd_dtype_size(dt) != 0;
    /* every stream on the GPU, the producer's included, so gpudev's may read the memory at once */
    if (dev.type == GD_CUDA && gd_sync_whole_device(st, dev, "from_dlpack") < 0) return NULL;
    ArrayObject *a = adopt_tensor(st, capsule, legacy, versioned, dev, dt, size);
    if (!a || !must_copy) return a;
    /* releasing `a` afterwards waits for the copy before the producer gets its memory back */
    ArrayObject *c = gd_array_to_device(st, a, dev, "from_dlpack");
    Py_DECREF(a);
    return c;
}

/* gd.from_dlpack(x): an Array sharing the memory of any DLPack producer. */
static PyObject *mod_from_dlpack(PyObject *module, PyObject *x)
{
    gd_state *st = PyModule_GetState(module);
    if (gd_is_array(st, x)) return Py_NewRef(x);
    gd_device dev;
    if (producer_device(st, x, &dev) < 0) return NULL;
    PyObject *capsule = producer_capsule(x, dev.type == GD_CUDA);
    if (!capsule) return NULL;
    ArrayObject *out = import_capsule(st, capsule, dev, Py_TYPE(x)->tp_name);
    /* an unused capsule hands the tensor back to the producer here */
    Py_DECREF(capsule);
    /* bytes other than 0 and 1 in a bool tensor: a normalized copy instead of the shared memory */
    if (out) Py_SETREF(out, gd_canonical_bools(st, out, "from_dlpack"));
    if (out && gd_trace_op(st, "from_dlpack", out, NULL, NULL) < 0) Py_CLEAR(out);
    return (PyObject *)out;
}

static PyMethodDef dlpack_functions[] = {
    GD_METHOD("from_dlpack", mod_from_dlpack, METH_O, "$module, x, /",
     "An Array sharing the memory of x (NumPy, PyTorch, CuPy, ... on the CPU or a GPU).\n\n"
     ">>> a = gd.from_dlpack(np.arange(3.0))"),
    {NULL, NULL, 0, NULL},
};

int gd_dlpack_setup(PyObject *module) { return PyModule_AddFunctions(module, dlpack_functions); }

/* ------------------------------------------------------------------------------------------
 * the CUDA Array Interface (CuPy's and Numba's older protocol)
 * ---------------------------------------------------------------------------------------- */

PyObject *gd_array_cuda_array_interface(PyObject *self, void *Py_UNUSED(closure))
{
    ArrayObject *a = (ArrayObject *)self;
    if (a->device.type != GD_CUDA) {
        char dev[32];
        PyErr_Format(PyExc_AttributeError,
                     "__cuda_array_interface__: the array is on %s; only GPU arrays have it (use np.asarray(a) on the CPU)",
                     gd_device_str(a->device, dev));
        return NULL;
    }
    /* NumPy's typestr: byte order, kind, item size ("<f4") */
    char typestr[8];
    snprintf(typestr, sizeof typestr, "<%c%zu", gd_dtype_table[a->dtype].kind, gd_dtype_size(a->dtype));
    PyObject *shape = gd_shape_tuple(a->ndim, a->shape);
    if (!shape) return NULL;
    /* stream None: gpudev has synchronized, nothing is left for the consumer to wait for.
     * Exporting gpudev's stream instead would save that wait for consumers that honour the
     * field, but PyTorch's torch.as_tensor ignores it and would read unfinished data. */
    gd_state *st = gd_state_of(self);
    if (gd_sync_device(st, a->device, "__cuda_array_interface__") < 0 || gd_handoff(st, a) < 0) {
        Py_DECREF(shape);
        return NULL;
    }
    /* strides in bytes, or None for C-contiguous data (the interface's convention) */
    PyObject *strides = Py_NewRef(Py_None);
    if (!a->contiguous) {
        int64_t bytes[GD_MAX_NDIM];
        for (int k = 0; k < a->ndim; k++) bytes[k] = a->strides[k] * (int64_t)gd_dtype_size(a->dtype);
        Py_SETREF(strides, gd_shape_tuple(a->ndim, bytes));
        if (!strides) {
            Py_DECREF(shape);
            return NULL;
        }
    }
    /* The consumer keeps `a` alive while it uses the memory, but its queued kernels may still
     * read it after it lets go, on streams gpudev cannot see: the owner's free will wait for
     * the whole device. (DLPack exports know the consumer's stream and do better.) */
    gd_mark_exported(st, a);
    return Py_BuildValue("{s:N,s:s,s:(Ki),s:N,s:i,s:O}", "shape", shape, "typestr", typestr, "data",
                         (unsigned long long)(uintptr_t)a->data, 0, "strides", strides, "version", 3, "stream",
                         Py_None);
}
