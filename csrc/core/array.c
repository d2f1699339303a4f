/* array.c - Array objects: allocation, views and deallocation, below every operation (they
 * all make arrays). The type's attributes, number protocol, methods and slots are in
 * array_type.c, above the operations they call.
 */
#include "array.h"
#include "core.h"
#include "runtime.h"
#include "shape.h"

#include <string.h>

/* ------------------------------------------------------------------------------------------
 * allocation, views, deallocation
 * ---------------------------------------------------------------------------------------- */

ArrayObject *gd_need_array(gd_state *st, PyObject *o, const char *op)
{
    if (gd_is_array(st, o)) return (ArrayObject *)o;
    PyErr_Format(PyExc_TypeError, "%s: expected a gpudev Array, got %.100s; convert it with gd.asarray(x)", op,
                 Py_TYPE(o)->tp_name);
    return NULL;
}

/* The element count of a new array's shape, or -1 with ValueError (negative dimensions,
 * more than 2**63 bytes). */
static int64_t new_size(int ndim, const int64_t *shape, gd_dtype dtype, const char *op)
{
    char buf[256];
    const int64_t item = (int64_t)gd_dtype_size(dtype);
    int zero = 0;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0) {
            PyErr_Format(PyExc_ValueError, "%s: negative dimensions are not allowed, got shape %s", op,
                         gd_shape_str(ndim, shape, buf));
            return -1;
        }
        if (shape[i] == 0) zero = 1;
    }
    if (zero) return 0;
    int64_t size = 1;
    for (int i = 0; i < ndim; i++) {
        if (size > INT64_MAX / item / shape[i]) {
            PyErr_Format(PyExc_ValueError, "%s: an array of shape %s and dtype %s would need more than 2**63 bytes",
                         op, gd_shape_str(ndim, shape, buf), gd_dtype_name(dtype));
            return -1;
        }
        size *= shape[i];
    }
    return size;
}

/* ------------------------------------------------------------------------------------------
 * strides
 * ---------------------------------------------------------------------------------------- */

void gd_c_strides(int64_t *strides, int ndim, const int64_t *shape)
{
    int64_t acc = 1;
    for (int k = ndim - 1; k >= 0; k--) {
        strides[k] = acc;
        int64_t d = shape[k] > 1 ? shape[k] : 1;
        if (acc <= INT64_MAX / d) acc *= d; /* only an empty array can have a larger product */
    }
}

int gd_is_c_contiguous(int ndim, const int64_t *shape, const int64_t *strides)
{
    for (int k = 0; k < ndim; k++)
        if (shape[k] == 0) return 1;
    int64_t acc = 1; /* at most the element count: no overflow */
    for (int k = ndim - 1; k >= 0; k--) {
        if (shape[k] == 1) continue;
        if (strides[k] != acc) return 0;
        acc *= shape[k];
    }
    return 1;
}

/* An Array object with its shape and strides (NULL: C-contiguous) set and no data yet. */
static ArrayObject *alloc_object(gd_state *st, gd_device dev, gd_dtype dtype, int ndim, const int64_t *shape,
                                 const int64_t *strides, int64_t size)
{
    ArrayObject *a = (ArrayObject *)st->array_type->tp_alloc(st->array_type, 0);
    if (!a) return NULL;
    a->device = dev;
    a->dtype = dtype;
    a->ndim = ndim;
    a->size = size;
    memcpy(a->shape, shape, sizeof(int64_t) * (size_t)ndim);
    if (strides) {
        memcpy(a->strides, strides, sizeof(int64_t) * (size_t)ndim);
        a->contiguous = gd_is_c_contiguous(ndim, shape, strides);
    } else {
        gd_c_strides(a->strides, ndim, shape);
        a->contiguous = 1;
    }
    return a;
}

ArrayObject *gd_array_new(gd_state *st, gd_device dev, gd_dtype dtype, int ndim, const int64_t *shape,
                          const char *op)
{
    if (ndim < 0 || ndim > GD_MAX_NDIM) {
        PyErr_Format(PyExc_ValueError, "%s: %d dimensions; gpudev supports at most %d", op, ndim, GD_MAX_NDIM);
        return NULL;
    }
    int64_t size = new_size(ndim, shape, dtype, op);
    if (size < 0) return NULL;
    const gd_backend *be = gd_backend_for_memory(st, dev, op);
    if (!be) return NULL;
    ArrayObject *a = alloc_object(st, dev, dtype, ndim, shape, NULL, size);
    if (!a) return NULL;
    size_t nbytes = gd_array_nbytes(a);
    if (dev.type == GD_CPU && nbytes <= GD_INLINE_BYTES) {
        a->data = a->inline_data;
        return a;
    }
    gd_error err = {0};
    void *p = NULL;
    int rc;
    if (dev.type == GD_CPU) {
        rc = be->alloc(&p, dev.index, nbytes, &err);
    } else { /* on a full device it waits for pending frees */
        Py_BEGIN_ALLOW_THREADS
        rc = be->alloc(&p, dev.index, nbytes, &err);
        Py_END_ALLOW_THREADS
    }
    if (rc) {
        Py_DECREF(a);
        gd_raise(st, op, &err);
        return NULL;
    }
    a->alloc_ptr = p;
    a->alloc_bytes = nbytes;
    a->data = p;
    return a;
}

/* Pinned memory is the CUDA driver's: without a GPU there is none, and PyTorch raises too. */
static int need_pinned_memory(gd_state *st, const char *op)
{
    if (gd_num_gpus(st) > 0 && st->backends[GD_CUDA] && st->backends[GD_CUDA]->host_alloc) return 0;
    if (PyErr_Occurred()) return -1;
    PyObject *why = st->cuda_reason && st->cuda_reason != Py_None
                        ? Py_NewRef(st->cuda_reason)
                        : PyUnicode_FromString("no CUDA driver or GPU was found");
    if (!why) return -1;
    PyErr_Format(st->DeviceUnavailableError,
                 "%s: pinned host memory needs a GPU (it is the CUDA driver's), and this machine has none (%U); "
                 "leave pin_memory out where there is no GPU: is_pinned() is False there",
                 op, why);
    Py_DECREF(why);
    return -1;
}

ArrayObject *gd_array_new_pinned(gd_state *st, int gpu, gd_dtype dtype, int ndim, const int64_t *shape,
                                 const char *op)
{
    int64_t size = new_size(ndim, shape, dtype, op);
    if (size < 0 || need_pinned_memory(st, op) < 0) return NULL;
    const gd_backend *be = gd_backend_for_memory(st, (gd_device){GD_CUDA, gpu}, op);
    if (!be) return NULL;
    ArrayObject *a = alloc_object(st, GD_CPU_DEVICE, dtype, ndim, shape, NULL, size);
    if (!a) return NULL;
    gd_error err = {0};
    void *p = NULL;
    int rc = be->host_alloc(&p, gpu, gd_array_nbytes(a), &err);
    if (rc) {
        Py_DECREF(a);
        gd_raise(st, op, &err);
        return NULL;
    }
    a->alloc_ptr = a->data = p;
    a->alloc_bytes = gd_array_nbytes(a);
    a->pinned = 1;
    return a;
}

/* The element count of a view's shape: the source's elements or fewer, so it cannot overflow
 * unless the source is empty (then 0 is right). */
static int64_t view_size(int ndim, const int64_t *shape)
{
    int64_t size = 1;
    for (int i = 0; i < ndim; i++)
        if (shape[i] == 0) return 0;
    for (int i = 0; i < ndim; i++) size *= shape[i];
    return size;
}

ArrayObject *gd_array_view(gd_state *st, ArrayObject *src, char *data, int ndim, const int64_t *shape,
                           const int64_t *strides)
{
    ArrayObject *a = alloc_object(st, src->device, src->dtype, ndim, shape, strides, view_size(ndim, shape));
    if (!a) return NULL;
    a->data = data;
    /* the root of the storage (core.h): src's base when that is an Array, else src itself,
     * also when src's base is the foreign owner of borrowed memory */
    a->base = Py_NewRef((PyObject *)gd_owner(st, src));
    return a;
}

PyObject *gd_array_split_storage(gd_state *st, ArrayObject *a)
{
    if (a->base || !a->alloc_ptr || a->pinned || a->exported) Py_RETURN_NONE;
    ArrayObject *root = alloc_object(st, a->device, a->dtype, a->ndim, a->shape, a->strides, a->size);
    if (!root) return NULL;
    /* what core.h keeps per storage goes with the memory: the free, the write count and the
     * deferred checks (trace.c), which gd_owner(a) now finds on the root */
    root->data = a->data;
    root->alloc_ptr = a->alloc_ptr;
    root->alloc_bytes = a->alloc_bytes;
    root->version = a->version;
    root->guards = a->guards;
    a->guards = NULL;
    a->alloc_ptr = NULL;
    a->alloc_bytes = 0;
    a->base = Py_NewRef((PyObject *)root);
    a->storage_apart = 1;
    return (PyObject *)root;
}

/* The object at the end of o's chain of NumPy bases and memoryview exporters: the one that
 * holds the memory (a gpudev Array for `gd.asarray(a.numpy())`). */
static PyObject *memory_holder(PyObject *o)
{
    for (;;) {
        if (PyArray_Check(o) && PyArray_BASE((PyArrayObject *)o)) o = PyArray_BASE((PyArrayObject *)o);
        else if (PyMemoryView_Check(o) && PyMemoryView_GET_BUFFER(o)->obj) o = PyMemoryView_GET_BUFFER(o)->obj;
        else return o;
    }
}

ArrayObject *gd_array_borrow(gd_state *st, PyObject *owner, char *data, gd_device dev, gd_dtype dtype, int ndim,
                             const int64_t *shape, const int64_t *strides, int64_t size)
{
    ArrayObject *a = alloc_object(st, dev, dtype, ndim, shape, strides, size);
    if (!a) {
        Py_DECREF(owner);
        return NULL;
    }
    a->data = data;
    /* memory that a gpudev Array holds, come back through NumPy or a buffer: a view of that
     * Array's root (core.h), so that its writes count where the root's do */
    PyObject *holder = memory_holder(owner);
    if (gd_is_array(st, holder) && ((ArrayObject *)holder)->device.type == dev.type &&
        ((ArrayObject *)holder)->device.index == dev.index) {
        a->base = Py_NewRef((PyObject *)gd_owner(st, (ArrayObject *)holder));
        Py_DECREF(owner);
    } else {
        a->base = owner;
    }
    return a;
}

void gd_array_dealloc(PyObject *self)
{
    ArrayObject *a = (ArrayObject *)self;
    PyTypeObject *tp = Py_TYPE(self);
    if (a->weakreflist) PyObject_ClearWeakRefs(self);
    Py_XDECREF(a->ag);
    Py_XDECREF(a->grad);
    Py_XDECREF(a->guards);
    if (a->base) {
        Py_DECREF(a->base);
    } else if (a->alloc_ptr && a->pinned) { /* no copy uses it: trace.c's list held a reference */
        gd_state *st = PyType_GetModuleState(tp);
        if (st && st->backends[GD_CUDA]) st->backends[GD_CUDA]->host_free(a->alloc_ptr, 0, a->alloc_bytes);
    } else if (a->alloc_ptr) {
        gd_state *st = PyType_GetModuleState(tp);
        /* not gd_backend_of, which first waits for pending copies: a deallocation (maybe
         * inside that very wait) must not */
        const gd_backend *be = st ? gd_backend_for_memory(st, a->device, "free") : NULL;
        if (be && a->exported && be->synchronize_all) {
            /* another library's queued work may still read it (see `exported`); a failure
             * cannot be raised from here, and the free below is all that is left to do */
            gd_error err = {0};
            Py_BEGIN_ALLOW_THREADS
            (void)be->synchronize_all(a->device.index, &err);
            Py_END_ALLOW_THREADS
        }
        if (be) be->free(a->alloc_ptr, a->device.index, a->alloc_bytes);
        /* a GPU's free is queued on its stream: the next synchronize() waits for it, and
         * that is when the pool gives memory above its threshold back to the driver */
        if (be && a->device.type == GD_CUDA) st->pending_gpus |= (uint64_t)1 << a->device.index;
    }
    tp->tp_free(self);
    Py_DECREF(tp);
}

PyObject *gd_array_tp_new(PyTypeObject *Py_UNUSED(type), PyObject *Py_UNUSED(args), PyObject *Py_UNUSED(kwds))
{
    PyErr_SetString(PyExc_TypeError, "Array cannot be created directly; use gd.array(obj), gd.zeros(shape), ...");
    return NULL;
}

/* ------------------------------------------------------------------------------------------
 * methods added by the files that implement them
 * ---------------------------------------------------------------------------------------- */

int gd_array_add_methods(gd_state *st, PyMethodDef *defs)
{
    PyTypeObject *tp = st->array_type;
    for (PyMethodDef *m = defs; m->ml_name; m++) {
        PyObject *d = PyDescr_NewMethod(tp, m);
        int rc = d ? PyObject_SetAttrString((PyObject *)tp, m->ml_name, d) : -1;
        Py_XDECREF(d);
        if (rc < 0) return -1;
    }
    return 0;
}

