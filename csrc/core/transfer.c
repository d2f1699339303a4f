/* transfer.c - copies between devices and out to the host: a.to(), a.cpu(), a.cuda(),
 * a.copy(); NumPy views and copies (a.numpy(), np.asarray(a)), Python scalars and lists
 * (a.item(), a.tolist()), the buffer protocol and repr. Copies are explicit: every one a user
 * did not write raises instead.
 */
#include "transfer.h"
#include "core.h"
#include "args.h"
#include "array.h"
#include "autograd.h"
#include "compute.h"
#include "device.h"
#include "runtime.h"
#include "shape.h"
#include "trace.h"

#include <string.h>

/* ------------------------------------------------------------------------------------------
 * copies between devices
 * ---------------------------------------------------------------------------------------- */

/* Before the host reads a CPU array's memory directly: the copies into it (or out of it) that
 * returned at once have ended. */
static int wait_for_host(gd_state *st, ArrayObject *a)
{
    return st->n_host_copies ? gd_host_copies_wait_slow(st, gd_owner(st, a)) : 0;
}

/* Copy a's bytes (a C-contiguous array) to host memory at dst, synchronizing for GPU arrays:
 * the host read of `read`, the array the user reads (a itself, or the array a compacts).
 * `cause` names the read in traces ("item", "repr", "cpu copy", ...). */
static int copy_to_host_bytes(gd_state *st, void *dst, ArrayObject *a, ArrayObject *read, const char *cause)
{
    size_t n = gd_array_nbytes(a);
    if (a->device.type == GD_CPU) {
        if (wait_for_host(st, a) < 0) return -1;
        if (n) memcpy(dst, a->data, n);
        return gd_host_read(st, read, cause);
    }
    const gd_backend *be = gd_backend_of(st, a->device, cause);
    if (!be) return -1;
    gd_error err = {0};
    int rc = 0;
    /* copy_to_host waits for the stream: everything queued before it will have run. The
     * flag is cleared before the GIL goes (see gd_clear_pending); the copy is GPU work that
     * benchmark() times even when nothing is left pending. */
    gd_clear_pending(st, a->device);
    st->touched_gpus |= (uint64_t)1 << a->device.index;
    double t0 = gd_trace_clock();
    Py_BEGIN_ALLOW_THREADS
    rc = be->copy_to_host(dst, a->data, a->device.index, n, &err);
    Py_END_ALLOW_THREADS
    gd_trace_waited(gd_trace_clock() - t0);
    if (rc) {
        gd_mark_pending(st, a->device);
        return gd_raise(st, cause, &err);
    }
    if (gd_tracing(st) && gd_trace_copy(st, "d2h", a, GD_CPU_DEVICE) < 0) return -1;
    return gd_host_read(st, read, cause);
}

int gd_upload(gd_state *st, ArrayObject *a, const void *host, size_t n, const char *op)
{
    if (gd_host_copies_wait(st) < 0) return -1; /* `host` may be pinned memory a copy is using */
    if (a->device.type == GD_CPU) {
        if (n) memcpy(a->data, host, n);
        return 0;
    }
    gd_error err = {0};
    int rc = GD_OK;
    if (n) { /* waits until the source may be reused: without the GIL */
        double t0 = gd_trace_clock();
        Py_BEGIN_ALLOW_THREADS
        rc = gd_backend_of(st, a->device, "copy")->copy_from_host(a->data, a->device.index, host, n, &err);
        Py_END_ALLOW_THREADS
        gd_trace_waited(gd_trace_clock() - t0);
    }
    gd_mark_pending(st, a->device);
    if (rc) return gd_raise(st, op, &err);
    return gd_trace_copy(st, "h2d", a, a->device);
}

/* Between two devices of the CUDA backend: on one GPU (d2d) or between two (peer). */
static int copy_between_gpus(gd_state *st, ArrayObject *out, ArrayObject *a, const char *op)
{
    const gd_backend *be = gd_backend_of(st, a->device, op);
    if (!be) return -1;
    size_t n = gd_array_nbytes(a);
    gd_error err = {0};
    int rc = n ? be->copy_device(out->data, out->device.index, a->data, a->device.index, n, &err) : GD_OK;
    gd_mark_pending(st, out->device);
    if (rc) return gd_raise(st, op, &err);
    return gd_trace_copy(st, a->device.index == out->device.index ? "d2d" : "peer", a, out->device);
}

/* ------------------------------------------------------------------------------------------
 * copies that return at once: between a GPU and pinned host memory
 *
 * The copy is queued on the GPU's stream with an event after it, and the host memory's root
 * Array joins trace.c's list of pending copies, which keeps it alive and makes every host
 * read of it, and every CPU operation, wait for the event first. So a result read too early
 * is still right (unlike PyTorch's), and gd.trace() shows where the program waited.
 * ---------------------------------------------------------------------------------------- */

/* Queues the copy of `a` into `out` (one of them on a GPU, the other pinned) and registers
 * `holder`, the host side's root. */
static int copy_async(gd_state *st, ArrayObject *out, ArrayObject *a, ArrayObject *holder, const char *op)
{
    const int to_host = out->device.type == GD_CPU;
    const int gpu = to_host ? a->device.index : out->device.index;
    const gd_backend *be = gd_backend_of(st, (gd_device){GD_CUDA, gpu}, op);
    if (!be) return -1;
    gd_error err = {0};
    void *event = NULL;
    int rc = be->event_create(&event, gpu, &err);
    if (!rc) {
        rc = be->copy_async(out->data, a->data, to_host, gpu, gd_array_nbytes(a), event, &err);
        if (rc) be->event_destroy(event, gpu);
    }
    gd_mark_pending(st, (gd_device){GD_CUDA, gpu});
    if (rc) return gd_raise(st, op, &err);
    if (gd_host_copy_add(st, holder, event, gpu) < 0) return -1;
    return gd_trace_copy(st, to_host ? "d2h" : "h2d", a, out->device);
}

/* Whether a copy of `a` to `dst` can return at once: a GPU array to the CPU (into new pinned
 * memory), or a pinned array to a GPU, with a backend that offers it. */
static int can_copy_async(gd_state *st, ArrayObject *a, gd_device dst)
{
    const gd_backend *cuda = st->backends[GD_CUDA];
    if (!cuda || !cuda->copy_async) return 0;
    if (a->device.type == GD_CUDA) return dst.type == GD_CPU;
    return dst.type == GD_CUDA && gd_owner(st, a)->pinned;
}

static ArrayObject *contiguous_to_device_async(gd_state *st, ArrayObject *a, gd_device dst, const char *op)
{
    ArrayObject *out = dst.type == GD_CPU ? gd_array_new_pinned(st, a->device.index, a->dtype, a->ndim, a->shape, op)
                                          : gd_array_new(st, dst, a->dtype, a->ndim, a->shape, op);
    if (!out) return NULL;
    /* a pinned source may itself still be filling (a.to('cpu', non_blocking=True).to(gpu)) */
    ArrayObject *holder = dst.type == GD_CPU ? out : gd_owner(st, a);
    if ((dst.type == GD_CUDA && wait_for_host(st, a) < 0) || copy_async(st, out, a, holder, op) < 0) Py_CLEAR(out);
    return out;
}

/* ------------------------------------------------------------------------------------------
 * copies that wait
 * ---------------------------------------------------------------------------------------- */

/* The copy of a (C-contiguous) on dst, a C-contiguous array itself. */
static ArrayObject *contiguous_to_device(gd_state *st, ArrayObject *a, gd_device dst, const char *op)
{
    ArrayObject *out = gd_array_new(st, dst, a->dtype, a->ndim, a->shape, op);
    if (!out) return NULL;
    int rc;
    if (a->device.type == GD_CPU && dst.type == GD_CPU) {
        size_t n = gd_array_nbytes(a);
        if (wait_for_host(st, a) < 0) {
            Py_DECREF(out);
            return NULL;
        }
        if (n) memcpy(out->data, a->data, n);
        rc = gd_trace_copy(st, "h2h", a, dst);
    } else if (a->device.type == GD_CPU) {
        rc = gd_upload(st, out, a->data, gd_array_nbytes(a), op);
    } else if (dst.type == GD_CPU) {
        rc = copy_to_host_bytes(st, out->data, a, a, "cpu copy");
    } else {
        rc = copy_between_gpus(st, out, a, op);
    }
    if (rc < 0) Py_CLEAR(out);
    return out;
}

/* The copy of a (C-contiguous) on dst: one that returns at once where non_blocking asks and
 * can_copy_async allows, else one that waits. */
static ArrayObject *copy_contiguous(gd_state *st, ArrayObject *a, gd_device dst, int non_blocking, const char *op)
{
    return non_blocking && can_copy_async(st, a, dst) ? contiguous_to_device_async(st, a, dst, op)
                                                      : contiguous_to_device(st, a, dst, op);
}

/* A view is compacted where it lives, then copied: copies between devices move whole blocks.
 * The copy keeps the deferred checks that guard a (trace.h). With non_blocking, a copy that
 * can return at once does (can_copy_async); any other waits, as in PyTorch. */
static ArrayObject *to_device(gd_state *st, ArrayObject *a, gd_device dst, int non_blocking, const char *op)
{
    ArrayObject *out;
    if (a->contiguous) {
        out = copy_contiguous(st, a, dst, non_blocking, op);
    } else {
        const gd_backend *be = gd_backend_of(st, a->device, op);
        ArrayObject *c = be ? gd_contiguous(st, be, a, op) : NULL;
        if (!c) return NULL;
        out = gd_device_eq(dst, a->device) ? (ArrayObject *)Py_NewRef((PyObject *)c)
                                           : copy_contiguous(st, c, dst, non_blocking, op);
        Py_DECREF(c);
    }
    if (out && gd_guard_inherit(st, (PyObject *)out, (PyObject *)a) < 0) Py_CLEAR(out);
    return out;
}

ArrayObject *gd_array_to_device(gd_state *st, ArrayObject *a, gd_device dst, const char *op)
{
    return to_device(st, a, dst, 0, op);
}

/* NumPy, and DLPack consumers that count bytes, describe an array only when the product of its
 * nonzero dimensions times the item size fits in a signed 64-bit size, even when another
 * dimension is 0 and it holds nothing. Arrays with elements always fit (they were allocated). */
static int has_host_extent(const ArrayObject *a)
{
    int64_t bytes = (int64_t)gd_dtype_size(a->dtype);
    for (int i = 0; i < a->ndim; i++) {
        if (a->shape[i] == 0) continue;
        if (bytes > INT64_MAX / a->shape[i]) return 0;
        bytes *= a->shape[i];
    }
    return 1;
}

int gd_check_host_extent(const ArrayObject *a, PyObject *exc_type, const char *op)
{
    if (has_host_extent(a)) return 0;
    char s[256];
    PyErr_Format(exc_type,
                 "%s: an empty array of shape %s and dtype %s spans more than 2**63 - 1 bytes counting its nonzero "
                 "dimensions, which NumPy cannot describe although it holds no elements; reshape it first, e.g. "
                 "a.reshape(0)",
                 op, gd_shape_str(a->ndim, a->shape, s), gd_dtype_name(a->dtype));
    return -1;
}

/* A host NumPy array with a's contents: a zero-copy view for CPU arrays (with a's strides),
 * a copy (one synchronizing transfer) for GPU arrays; either way a host read named `cause`.
 * `op` names the operation in messages. */
static PyObject *host_ndarray(gd_state *st, ArrayObject *a, const char *cause, const char *op)
{
    if (gd_check_host_extent(a, PyExc_ValueError, op) < 0) return NULL;
    npy_intp dims[GD_MAX_NDIM], strides[GD_MAX_NDIM];
    /* C-contiguous and empty arrays get NumPy's own strides (an empty view's may be too large
     * to state in bytes, and are never followed) */
    const int strided = !a->contiguous && a->size > 0;
    for (int i = 0; i < a->ndim; i++) {
        dims[i] = (npy_intp)a->shape[i];
        if (strided) strides[i] = (npy_intp)(a->strides[i] * (int64_t)gd_dtype_size(a->dtype));
    }
    if (a->device.type == GD_CPU) {
        PyArray_Descr *descr = (PyArray_Descr *)Py_NewRef(st->np_dtypes[a->dtype]);
        PyObject *arr = PyArray_NewFromDescr(&PyArray_Type, descr, a->ndim, dims,
                                             strided ? strides : NULL, a->data,
                                             NPY_ARRAY_ALIGNED | NPY_ARRAY_WRITEABLE, NULL);
        if (!arr) return NULL;
        if (PyArray_SetBaseObject((PyArrayObject *)arr, Py_NewRef((PyObject *)a)) < 0 ||
            gd_host_read(st, a, cause) < 0)
            Py_CLEAR(arr);
        return arr;
    }
    const gd_backend *be = gd_backend_of(st, a->device, cause);
    ArrayObject *c = be ? gd_contiguous(st, be, a, cause) : NULL;
    if (!c) return NULL;
    PyArray_Descr *descr = (PyArray_Descr *)Py_NewRef(st->np_dtypes[a->dtype]);
    PyObject *arr = PyArray_NewFromDescr(&PyArray_Type, descr, a->ndim, dims, NULL, NULL, 0, NULL);
    if (arr && copy_to_host_bytes(st, PyArray_DATA((PyArrayObject *)arr), c, a, cause) < 0) Py_CLEAR(arr);
    Py_DECREF(c);
    return arr;
}

/* ------------------------------------------------------------------------------------------
 * methods: to, cpu, cuda, copy, astype
 * ---------------------------------------------------------------------------------------- */

GD_SIGNATURE_SHARED(gd_array_to_sig, "to", "$self, device, copy=False, non_blocking=False",
                    "The array on `device` (itself when already there, unless copy=True).\n\n"
                    "non_blocking=True returns before the copy ends where it can: from a GPU to the CPU (the\n"
                    "result is pinned) and from pinned memory to a GPU. Reading or writing the host side\n"
                    "waits for the copy first.\n\n>>> b = a.to('cuda:0')");
PyObject *gd_array_to(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    gd_state *st = gd_state_of(self);
    ArrayObject *a = (ArrayObject *)self;
    PyObject *argv[3] = {NULL, NULL, NULL};
    int copy = 0, non_blocking = 0;
    if (gd_parse_args(argv, &gd_array_to_sig, args, nargs, kwnames) < 0 || gd_parse_bool(argv[1], &copy) < 0 ||
        gd_parse_bool(argv[2], &non_blocking) < 0)
        return NULL;
    if (argv[0] == Py_None) {
        PyErr_SetString(PyExc_TypeError, "to: device must be a Device or a string like 'cuda:0', not None");
        return NULL;
    }
    gd_device dev = a->device;
    if (gd_parse_device(st, argv[0], &dev) < 0) return NULL;
    if (gd_device_eq(dev, a->device) && !copy) return Py_NewRef(self);
    ArrayObject *out = to_device(st, a, dev, non_blocking, "to");
    return GD_AG_OUT(st, "to", out, a, NULL, NULL);
}

PyObject *gd_array_cpu(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    ArrayObject *a = (ArrayObject *)self;
    if (a->device.type == GD_CPU) return Py_NewRef(self);
    gd_state *st = gd_state_of(self);
    ArrayObject *out = gd_array_to_device(st, a, GD_CPU_DEVICE, "cpu");
    return GD_AG_OUT(st, "to", out, a, NULL, NULL);
}

GD_SIGNATURE_SHARED(gd_array_cuda_sig, "cuda", "$self, i=0", "A copy on GPU i (itself when already there).");
PyObject *gd_array_cuda(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    ArrayObject *a = (ArrayObject *)self;
    PyObject *arg = NULL;
    gd_device dev = {GD_CUDA, 0};
    if (gd_parse_args(&arg, &gd_array_cuda_sig, args, nargs, kwnames) < 0 ||
        (arg && gd_parse_gpu_index(&dev.index, arg, "cuda") < 0))
        return NULL;
    if (gd_device_eq(dev, a->device)) return Py_NewRef(self);
    gd_state *st = gd_state_of(self);
    ArrayObject *out = gd_array_to_device(st, a, dev, "cuda");
    return GD_AG_OUT(st, "to", out, a, NULL, NULL);
}

PyObject *gd_array_copy(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    ArrayObject *a = (ArrayObject *)self;
    gd_state *st = gd_state_of(self);
    ArrayObject *out = gd_converted(st, gd_backend_of(st, a->device, "copy"), a, a->dtype, "copy");
    if (out && gd_trace_op(st, "copy", out, a, NULL) < 0) Py_CLEAR(out);
    return GD_AG_OUT(st, "copy", out, a, NULL, NULL);
}

/* copy.deepcopy(a), as a.copy() (copy.copy(a) calls a.copy() through __copy__). Without
 * these the copy module would fall back to pickling, which Arrays refuse. */
PyObject *gd_array_dunder_deepcopy(PyObject *self, PyObject *memo)
{
    /* copy.deepcopy records the result in memo itself; a memo that is no dict is a misuse */
    if (memo != Py_None && !PyDict_Check(memo)) {
        PyErr_Format(PyExc_TypeError, "__deepcopy__: memo must be a dict or None, got %.100s", Py_TYPE(memo)->tp_name);
        return NULL;
    }
    /* a model's deep copy keeps its parameters: a twin of an array that requires grad does
     * too, as a new leaf (as in PyTorch) */
    PyObject *requires_grad = PyObject_GetAttrString(self, "requires_grad");
    PyObject *detached = requires_grad ? PyObject_CallMethod(self, "detach", NULL) : NULL;
    PyObject *out = detached ? gd_ag_created(gd_array_copy(detached, NULL),
                                             requires_grad == Py_True ? requires_grad : NULL)
                             : NULL;
    Py_XDECREF(detached);
    Py_XDECREF(requires_grad);
    return out;
}

/* ------------------------------------------------------------------------------------------
 * methods: NumPy and Python values
 * ---------------------------------------------------------------------------------------- */

static int refuse_gpu(ArrayObject *a, const char *op)
{
    if (a->device.type == GD_CPU) return 0;
    char dev[32];
    PyErr_Format(PyExc_TypeError,
                 "%s: the array is on %s and NumPy can only see host memory; copy it first with a.cpu() "
                 "(an explicit, synchronizing transfer), e.g. a.cpu().numpy()",
                 op, gd_device_label(gd_state_of((PyObject *)a), a->device, dev));
    return -1;
}

PyObject *gd_array_numpy(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    ArrayObject *a = (ArrayObject *)self;
    if (refuse_gpu(a, "numpy") < 0) return NULL;
    return host_ndarray(gd_state_of(self), a, "numpy", "numpy");
}

/* NumPy's own error for a dtype it cannot read may hold the whole argument, or fail to show a
 * deeply nested one (RecursionError): gpudev's names it briefly. */
static PyObject *not_a_numpy_dtype(PyObject *dtype)
{
    if (!PyErr_ExceptionMatches(PyExc_Exception)) return NULL;
    PyErr_Clear();
    PyObject *shown = gd_brief_repr(dtype);
    if (shown) PyErr_Format(PyExc_TypeError, "__array__: NumPy does not understand dtype=%U", shown);
    Py_XDECREF(shown);
    return NULL;
}

GD_SIGNATURE_SHARED(gd_array_dunder_array_sig, "__array__", "$self, dtype=None, copy=None",
                    "NumPy's conversion: a view sharing memory (CPU arrays only).");
PyObject *gd_array_dunder_array(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    ArrayObject *a = (ArrayObject *)self;
    PyObject *argv[2] = {Py_None, Py_None};
    int want_copy = 0;
    if (refuse_gpu(a, "__array__") < 0 || gd_parse_args(argv, &gd_array_dunder_array_sig, args, nargs, kwnames) < 0 ||
        gd_parse_bool(argv[1], &want_copy) < 0)
        return NULL;
    PyObject *arr = host_ndarray(gd_state_of(self), a, "__array__", "__array__");
    if (!arr || (argv[0] == Py_None && !want_copy)) return arr;
    PyArray_Descr *descr = NULL;
    if (argv[0] != Py_None && !PyArray_DescrConverter(argv[0], &descr)) {
        Py_DECREF(arr);
        return not_a_numpy_dtype(argv[0]);
    }
    /* copy=False (not None) forbids a copy: NumPy 2's protocol raises ValueError for a dtype
     * that needs one */
    int flags = want_copy ? NPY_ARRAY_ENSURECOPY : argv[1] != Py_None ? NPY_ARRAY_ENSURENOCOPY : 0;
    PyObject *res = PyArray_FromAny(arr, descr, 0, 0, flags, NULL);
    Py_DECREF(arr);
    return res;
}

/* The Python scalar for the element of dtype dt at p in host memory. */
static PyObject *scalar_from(const void *p, gd_dtype dt)
{
    switch (dt) {
    case GD_FLOAT32: return PyFloat_FromDouble(*(const float *)p);
    case GD_FLOAT64: return PyFloat_FromDouble(*(const double *)p);
    case GD_BOOL: return PyBool_FromLong(*(const unsigned char *)p);
    case GD_INT32: return PyLong_FromLong(*(const int32_t *)p);
    default: return PyLong_FromLongLong(*(const int64_t *)p);
    }
}

PyObject *gd_array_item(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    ArrayObject *a = (ArrayObject *)self;
    gd_state *st = gd_state_of(self);
    if (a->size != 1) {
        char buf[256];
        PyErr_Format(PyExc_ValueError,
                     "item: can only convert an array of size 1 to a Python scalar, got size %lld (shape %s); "
                     "index it first, e.g. a[0, 0].item(), or reduce it, e.g. a.sum().item()",
                     (long long)a->size, gd_shape_str(a->ndim, a->shape, buf));
        return NULL;
    }
    if (a->device.type == GD_CPU) {
        if (gd_host_read(st, a, "item") < 0) return NULL;
        return scalar_from(a->data, a->dtype);
    }
    char host[8];
    if (copy_to_host_bytes(st, host, a, a, "item") < 0) return NULL;
    return scalar_from(host, a->dtype);
}

PyObject *gd_array_tolist(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    PyObject *arr = host_ndarray(gd_state_of(self), (ArrayObject *)self, "tolist", "tolist");
    if (!arr) return NULL;
    PyObject *res = PyArray_ToList((PyArrayObject *)arr);
    Py_DECREF(arr);
    return res;
}

/* The host array repr and str format: an empty one of shape (0,) stands in for an empty array
 * NumPy cannot describe (has_host_extent), whose shape repr then gives apart. */
static PyObject *host_for_printing(gd_state *st, ArrayObject *a)
{
    if (has_host_extent(a)) return host_ndarray(st, a, "repr", "repr");
    npy_intp none[1] = {0};
    return PyArray_Zeros(1, none, (PyArray_Descr *)Py_NewRef(st->np_dtypes[a->dtype]), 0);
}

/* NumPy formats the numbers; gpudev/_format.py adds gpudev's type name, shape, dtype and device. */
PyObject *gd_array_repr(PyObject *self)
{
    ArrayObject *a = (ArrayObject *)self;
    PyObject *arr = host_for_printing(gd_state_of(self), a);
    if (!arr) return NULL;
    PyObject *mod = PyImport_ImportModule("gpudev._format");
    PyObject *shape = gd_shape_tuple(a->ndim, a->shape);
    char dev[32];
    PyObject *res = mod && shape ? PyObject_CallMethod(mod, "array_repr", "OsO", arr, gd_device_str(a->device, dev),
                                                       shape)
                                 : NULL;
    Py_XDECREF(mod);
    Py_XDECREF(shape);
    Py_DECREF(arr);
    return res;
}

PyObject *gd_array_str(PyObject *self)
{
    PyObject *arr = host_for_printing(gd_state_of(self), (ArrayObject *)self);
    if (!arr) return NULL;
    PyObject *s = PyObject_Str(arr);
    Py_DECREF(arr);
    return s;
}

PyObject *gd_array_format(PyObject *self, PyObject *spec)
{
    ArrayObject *a = (ArrayObject *)self;
    if (!PyUnicode_Check(spec)) {
        PyErr_Format(PyExc_TypeError, "__format__: the format spec must be a str, got %.100s", Py_TYPE(spec)->tp_name);
        return NULL;
    }
    if (a->ndim == 0) {
        PyObject *v = gd_array_item(self, NULL);
        PyObject *res = v ? PyObject_Format(v, spec) : NULL;
        Py_XDECREF(v);
        return res;
    }
    if (PyUnicode_GET_LENGTH(spec) == 0) return gd_array_str(self);
    char buf[256];
    PyErr_Format(PyExc_TypeError,
                 "__format__: format spec %R applies to 0-d arrays only, this one has shape %s; format its "
                 "elements, e.g. f\"{a[0].item():.3f}\", or a 0-d result such as a.sum()",
                 spec, gd_shape_str(a->ndim, a->shape, buf));
    return NULL;
}

/* _to_host(a, cause): a's data as a host NumPy array (a view of a CPU array, a copy of a GPU
 * one), read through the host-read entry under `cause`: pickling's way in (gpudev/_pickle.py). */
static PyObject *mod_to_host(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    gd_state *st = PyModule_GetState(module);
    if (nargs != 2 || !gd_is_array(st, args[0]) || !PyUnicode_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "_to_host: expected (Array, cause: str)");
        return NULL;
    }
    const char *cause = PyUnicode_AsUTF8(args[1]);
    return cause ? host_ndarray(st, (ArrayObject *)args[0], cause, cause) : NULL;
}

/* ------------------------------------------------------------------------------------------
 * pinned host memory: pin_memory, is_pinned
 * ---------------------------------------------------------------------------------------- */

static PyObject *array_pin_memory(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    gd_state *st = gd_state_of(self);
    ArrayObject *a = (ArrayObject *)self;
    if (a->device.type != GD_CPU) {
        char dev[32];
        PyErr_Format(PyExc_RuntimeError,
                     "pin_memory: the array is on %s; only CPU arrays can be pinned (a.to('cpu', "
                     "non_blocking=True) gives a pinned copy of a GPU array)",
                     gd_device_str(a->device, dev));
        return NULL;
    }
    if (gd_owner(st, a)->pinned) return Py_NewRef(self);
    const gd_backend *be = gd_backend_of(st, GD_CPU_DEVICE, "pin_memory"); /* waits for pending copies */
    ArrayObject *c = !be            ? NULL
                     : a->contiguous ? (ArrayObject *)Py_NewRef(self)
                                     : gd_contiguous(st, be, a, "pin_memory");
    if (!c) return NULL;
    ArrayObject *out = gd_array_new_pinned(st, 0, a->dtype, a->ndim, a->shape, "pin_memory");
    if (out) {
        if (gd_array_nbytes(c)) memcpy(out->data, c->data, gd_array_nbytes(c));
        if (gd_trace_copy(st, "h2h", c, GD_CPU_DEVICE) < 0 ||
            gd_guard_inherit(st, (PyObject *)out, (PyObject *)a) < 0)
            Py_CLEAR(out);
    }
    Py_DECREF(c);
    return GD_AG_OUT(st, "to", out, a, NULL, NULL);
}

static PyObject *array_is_pinned(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    ArrayObject *a = (ArrayObject *)self;
    return PyBool_FromLong(a->device.type == GD_CPU && gd_owner(gd_state_of(self), a)->pinned);
}

static PyMethodDef pinned_methods[] = {
    GD_METHOD("pin_memory", array_pin_memory, METH_NOARGS, "$self",
              "A copy in pinned (page-locked) host memory, which copies to and from GPUs with\n"
              "non_blocking=True do not wait for (itself when pinned already). CPU arrays only; needs a GPU."),
    GD_METHOD("is_pinned", array_is_pinned, METH_NOARGS, "$self",
              "Whether the array lives in pinned host memory (always False without a GPU)."),
    {NULL, NULL, 0, NULL},
};

static PyMethodDef transfer_functions[] = {
    {"_to_host", GD_FN(mod_to_host), METH_FASTCALL, NULL},
    {NULL, NULL, 0, NULL},
};

int gd_transfer_setup(PyObject *module)
{
    gd_state *st = PyModule_GetState(module);
    if (gd_array_add_methods(st, pinned_methods) < 0) return -1;
    return PyModule_AddFunctions(module, transfer_functions);
}

/* ------------------------------------------------------------------------------------------
 * the buffer protocol (CPU arrays only) and the CUDA array interface (GPU arrays only)
 * ---------------------------------------------------------------------------------------- */

int gd_array_getbuffer(PyObject *self, Py_buffer *view, int flags)
{
    ArrayObject *a = (ArrayObject *)self;
    view->obj = NULL;
    if (a->device.type != GD_CPU) {
        char dev[32];
        PyErr_Format(PyExc_BufferError,
                     "the array is on %s; only CPU arrays export their memory. Copy it first with a.cpu()",
                     gd_device_label(gd_state_of(self), a->device, dev));
        return -1;
    }
    /* the strides below would overflow */
    if (gd_check_host_extent(a, PyExc_BufferError, "buffer protocol") < 0) return -1;
    const int c_order = a->contiguous;
    if (!c_order && ((flags & PyBUF_STRIDES) != PyBUF_STRIDES || (flags & PyBUF_ANY_CONTIGUOUS) == PyBUF_ANY_CONTIGUOUS ||
                     (flags & PyBUF_C_CONTIGUOUS) == PyBUF_C_CONTIGUOUS ||
                     (flags & PyBUF_F_CONTIGUOUS) == PyBUF_F_CONTIGUOUS)) {
        PyErr_SetString(PyExc_BufferError,
                        "the array is a strided view, not C-contiguous; ask for strides (as NumPy does) or use "
                        "a.contiguous()");
        return -1;
    }
    if (gd_host_read(gd_state_of(self), a, "buffer") < 0) return -1;
    Py_ssize_t *meta = PyMem_Malloc(sizeof(Py_ssize_t) * 2 * (size_t)(a->ndim ? a->ndim : 1));
    if (!meta) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t item = (Py_ssize_t)gd_dtype_size(a->dtype);
    Py_ssize_t acc = item;
    for (int i = a->ndim - 1; i >= 0; i--) {
        meta[i] = (Py_ssize_t)a->shape[i];
        /* an empty array's strides are never followed: C-order ones are always valid there */
        meta[a->ndim + i] = c_order || a->size == 0 ? acc : (Py_ssize_t)(a->strides[i] * item);
        if (a->shape[i] > 1 && acc <= PY_SSIZE_T_MAX / a->shape[i]) acc *= (Py_ssize_t)a->shape[i];
    }
    view->buf = a->data;
    view->obj = Py_NewRef(self);
    view->len = (Py_ssize_t)gd_array_nbytes(a);
    view->readonly = 0;
    view->itemsize = item;
    view->format = (flags & PyBUF_FORMAT) ? (char *)gd_dtype_table[a->dtype].format : NULL;
    view->ndim = a->ndim;
    view->shape = (flags & PyBUF_ND) ? meta : NULL;
    view->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? meta + a->ndim : NULL;
    view->suboffsets = NULL;
    view->internal = meta;
    return 0;
}

void gd_array_releasebuffer(PyObject *Py_UNUSED(self), Py_buffer *view) { PyMem_Free(view->internal); }
