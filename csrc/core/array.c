/* array.c - the Array type: creation, attributes, transfers between devices, views
 * (indexing, slicing, reshape), the number/mapping/buffer protocols, and the module-level
 * functions that create arrays or wrap the operations of ops.c.
 */
#include "core.h"
#include "philox.h"

#include <structmember.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------
 * dtypes and shapes
 * ---------------------------------------------------------------------------------------- */

static const char *const dtype_names[GD_NUM_DTYPES] = {"float32", "float64", "int64"};

/* NumPy type number -> gpudev dtype for data coming in: kept, widened, or refused (-1). */
static int dtype_from_numpy(int type_num)
{
    switch (type_num) {
    case NPY_FLOAT32: return GD_FLOAT32;
    case NPY_FLOAT64: return GD_FLOAT64;
    case NPY_INT64: return GD_INT64;
    case NPY_HALF: return GD_FLOAT32;
    case NPY_BOOL: case NPY_INT8: case NPY_INT16: case NPY_INT32:
    case NPY_UINT8: case NPY_UINT16: case NPY_UINT32:
        return GD_INT64;
    default:
        /* NPY_LONG/NPY_LONGLONG alias int64 on some platforms */
        if (type_num == NPY_LONG && sizeof(long) == 8) return GD_INT64;
        if (type_num == NPY_LONGLONG) return GD_INT64;
        if (type_num == NPY_INT && sizeof(int) == 8) return GD_INT64;
        return -1;
    }
}

static const int numpy_type_of[GD_NUM_DTYPES] = {NPY_FLOAT32, NPY_FLOAT64, NPY_INT64};

int gd_parse_dtype(gd_state *st, PyObject *obj, gd_dtype *out, const char *op)
{
    (void)st;
    if (obj == Py_None) return 0;
    PyArray_Descr *descr = NULL;
    if (!PyArray_DescrConverter2(obj, &descr) || !descr) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s: %R is not a dtype; use gd.float32, gd.float64 or gd.int64", op, obj);
        return -1;
    }
    int t = descr->type_num;
    int dt = -1;
    if (t == NPY_FLOAT32) dt = GD_FLOAT32;
    else if (t == NPY_FLOAT64) dt = GD_FLOAT64;
    else if (t == NPY_INT64 || (t == NPY_LONGLONG) || (t == NPY_LONG && sizeof(long) == 8)) dt = GD_INT64;
    if (dt < 0) {
        PyErr_Format(PyExc_TypeError, "%s: dtype %S is not supported; use gd.float32, gd.float64 or gd.int64",
                     op, (PyObject *)descr);
        Py_DECREF(descr);
        return -1;
    }
    Py_DECREF(descr);
    *out = (gd_dtype)dt;
    return 0;
}

const char *gd_shape_str(int ndim, const int64_t *shape, char *buf)
{
    size_t n = 0, cap = 256;
    n += (size_t)snprintf(buf + n, cap - n, "(");
    for (int i = 0; i < ndim && n < cap - 24; i++)
        n += (size_t)snprintf(buf + n, cap - n, i ? ", %lld" : "%lld", (long long)shape[i]);
    snprintf(buf + n, cap - n, ndim == 1 ? ",)" : ")");
    return buf;
}

static int parse_dim(PyObject *o, int64_t *out, const char *op)
{
    if (PyBool_Check(o) || !PyIndex_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s: shape entries must be ints, got %.100s", op, Py_TYPE(o)->tp_name);
        return -1;
    }
    long long v = PyLong_AsLongLong(o);
    if (v == -1 && PyErr_Occurred()) {
        if (PyErr_ExceptionMatches(PyExc_OverflowError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_ValueError, "%s: dimension %R is too large", op, o);
        }
        return -1;
    }
    *out = v;
    return 0;
}

PyObject *gd_shape_tuple(int ndim, const int64_t *shape)
{
    PyObject *t = PyTuple_New(ndim);
    if (!t) return NULL;
    for (int i = 0; i < ndim; i++) {
        PyObject *v = PyLong_FromLongLong(shape[i]);
        if (!v) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, v);
    }
    return t;
}

int gd_parse_shape(PyObject *const *args, Py_ssize_t nargs, int *ndim, int64_t *shape, const char *op)
{
    if (nargs == 1 && (PyTuple_Check(args[0]) || PyList_Check(args[0]))) {
        PyObject *seq = args[0];
        Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
        if (n > GD_MAX_NDIM) {
            PyErr_Format(PyExc_ValueError, "%s: %zd dimensions given; gpudev supports at most %d", op, n, GD_MAX_NDIM);
            return -1;
        }
        for (Py_ssize_t i = 0; i < n; i++)
            if (parse_dim(PySequence_Fast_GET_ITEM(seq, i), &shape[i], op) < 0) return -1;
        *ndim = (int)n;
        return 0;
    }
    if (nargs > GD_MAX_NDIM) {
        PyErr_Format(PyExc_ValueError, "%s: %zd dimensions given; gpudev supports at most %d", op, nargs, GD_MAX_NDIM);
        return -1;
    }
    for (Py_ssize_t i = 0; i < nargs; i++)
        if (parse_dim(args[i], &shape[i], op) < 0) return -1;
    *ndim = (int)nargs;
    return 0;
}

/* ------------------------------------------------------------------------------------------
 * allocation, views, deallocation
 * ---------------------------------------------------------------------------------------- */

static void array_dealloc(PyObject *self);

static inline int is_array(PyObject *o) { return Py_TYPE(o)->tp_dealloc == array_dealloc; }

ArrayObject *gd_array_new(gd_state *st, gd_device dev, gd_dtype dtype, int ndim, const int64_t *shape,
                          const char *op)
{
    char buf[256];
    if (ndim < 0 || ndim > GD_MAX_NDIM) {
        PyErr_Format(PyExc_ValueError, "%s: %d dimensions; gpudev supports at most %d", op, ndim, GD_MAX_NDIM);
        return NULL;
    }
    const int64_t item = (int64_t)gd_dtype_size(dtype);
    int64_t size = 1;
    int zero = 0;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0) {
            PyErr_Format(PyExc_ValueError, "%s: negative dimensions are not allowed, got shape %s", op,
                         gd_shape_str(ndim, shape, buf));
            return NULL;
        }
        if (shape[i] == 0) zero = 1;
    }
    if (zero) {
        size = 0;
    } else {
        for (int i = 0; i < ndim; i++) {
            if (size > INT64_MAX / item / shape[i]) {
                PyErr_Format(PyExc_ValueError, "%s: an array of shape %s and dtype %s would need more than 2**63 bytes",
                             op, gd_shape_str(ndim, shape, buf), dtype_names[dtype]);
                return NULL;
            }
            size *= shape[i];
        }
    }
    const gd_backend *be = gd_backend_for(st, dev, op);
    if (!be) return NULL;
    ArrayObject *a = (ArrayObject *)st->array_type->tp_alloc(st->array_type, 0);
    if (!a) return NULL;
    a->device = dev;
    a->dtype = dtype;
    a->ndim = ndim;
    a->size = size;
    memcpy(a->shape, shape, sizeof(int64_t) * (size_t)ndim);
    size_t nbytes = (size_t)(size * item);
    if (dev.type == GD_CPU && nbytes <= GD_INLINE_BYTES) {
        a->data = a->inline_data;
        return a;
    }
    gd_error err = {0};
    void *p = NULL;
    if (be->alloc(&p, dev.type == GD_CPU ? 0 : dev.index, nbytes, &err)) {
        Py_DECREF(a);
        gd_raise(st, op, &err);
        return NULL;
    }
    a->alloc_ptr = p;
    a->alloc_bytes = nbytes;
    a->data = p;
    return a;
}

ArrayObject *gd_array_view(gd_state *st, ArrayObject *src, char *data, int ndim, const int64_t *shape)
{
    ArrayObject *a = (ArrayObject *)st->array_type->tp_alloc(st->array_type, 0);
    if (!a) return NULL;
    a->device = src->device;
    a->dtype = src->dtype;
    a->ndim = ndim;
    int64_t size = 1;
    for (int i = 0; i < ndim; i++) size *= shape[i];
    a->size = size;
    memcpy(a->shape, shape, sizeof(int64_t) * (size_t)ndim);
    a->data = data;
    a->base = Py_NewRef(src->base ? src->base : (PyObject *)src);
    return a;
}

static void array_dealloc(PyObject *self)
{
    ArrayObject *a = (ArrayObject *)self;
    PyTypeObject *tp = Py_TYPE(self);
    if (a->weakreflist) PyObject_ClearWeakRefs(self);
    if (a->base) {
        Py_DECREF(a->base);
    } else if (a->alloc_ptr) {
        gd_state *st = PyType_GetModuleState(tp);
        const gd_backend *be = st ? st->backends[a->device.type] : NULL;
        if (be) be->free(a->alloc_ptr, a->device.type == GD_CPU ? 0 : a->device.index, a->alloc_bytes);
    }
    tp->tp_free(self);
    Py_DECREF(tp);
}

static inline int backend_index(gd_device dev) { return dev.type == GD_CPU ? 0 : dev.index; }
static inline size_t array_nbytes(const ArrayObject *a) { return (size_t)a->size * gd_dtype_size(a->dtype); }

/* ------------------------------------------------------------------------------------------
 * copies between devices
 * ---------------------------------------------------------------------------------------- */

static int trace_copy(gd_state *st, const char *kind, ArrayObject *a, gd_device dst)
{
    if (!gd_tracing(st)) return 0;
    PyObject *shape = gd_shape_tuple(a->ndim, a->shape);
    if (!shape) return -1;
    PyObject *shapes = PyTuple_Pack(1, shape);
    Py_DECREF(shape);
    if (!shapes) return -1;
    int64_t n = (int64_t)array_nbytes(a);
    int rc = gd_trace_emit(st, "copy", kind, dst, shapes, (int)a->dtype, n, n);
    Py_DECREF(shapes);
    return rc;
}

/* Copy a's bytes to host memory at dst (synchronizing for GPU arrays). `cause` names the
 * synchronization in traces ("item", "repr", "cpu copy", ...). */
static int copy_to_host_bytes(gd_state *st, void *dst, ArrayObject *a, const char *cause)
{
    size_t n = array_nbytes(a);
    if (a->device.type == GD_CPU) {
        if (n) memcpy(dst, a->data, n);
        if (gd_tracing(st)) return gd_trace_emit(st, "sync", cause, a->device, NULL, -1, 0, 0);
        return 0;
    }
    const gd_backend *be = gd_backend_for(st, a->device, cause);
    if (!be) return -1;
    gd_error err = {0};
    int rc = 0;
    Py_BEGIN_ALLOW_THREADS
    rc = be->copy_to_host(dst, a->data, a->device.index, n, &err);
    Py_END_ALLOW_THREADS
    if (rc) return gd_raise(st, cause, &err);
    /* copy_to_host waited for the stream: everything queued before it has run */
    st->pending_gpus &= ~((uint64_t)1 << a->device.index);
    if (gd_tracing(st)) {
        gd_device cpu = {GD_CPU, -1};
        if (trace_copy(st, "d2h", a, cpu) < 0) return -1;
        return gd_trace_emit(st, "sync", cause, a->device, NULL, -1, 0, 0);
    }
    return 0;
}

ArrayObject *gd_array_to_device(gd_state *st, ArrayObject *a, gd_device dst, const char *op)
{
    ArrayObject *out = gd_array_new(st, dst, a->dtype, a->ndim, a->shape, op);
    if (!out) return NULL;
    size_t n = array_nbytes(a);
    gd_error err = {0};
    int rc = 0;
    const char *kind;
    if (a->device.type == GD_CPU && dst.type == GD_CPU) {
        kind = "h2h";
        if (n) memcpy(out->data, a->data, n);
    } else if (a->device.type == GD_CPU) {
        kind = "h2d";
        const gd_backend *be = st->backends[GD_CUDA];
        if (n) rc = be->copy_from_host(out->data, dst.index, a->data, n, &err);
        gd_mark_pending(st, dst);
    } else if (dst.type == GD_CPU) {
        if (copy_to_host_bytes(st, out->data, a, "cpu copy") < 0) {
            Py_DECREF(out);
            return NULL;
        }
        return out; /* traced by copy_to_host_bytes */
    } else {
        const gd_backend *be = gd_backend_for(st, a->device, op);
        if (!be) {
            Py_DECREF(out);
            return NULL;
        }
        kind = a->device.index == dst.index ? "d2d" : "peer";
        if (n) rc = be->copy_device(out->data, dst.index, a->data, a->device.index, n, &err);
        gd_mark_pending(st, dst);
    }
    if (rc) {
        Py_DECREF(out);
        gd_raise(st, op, &err);
        return NULL;
    }
    if (gd_tracing(st) && trace_copy(st, kind, a, dst) < 0) {
        Py_DECREF(out);
        return NULL;
    }
    return out;
}

/* A host NumPy array with a's contents: a zero-copy view for CPU arrays, a copy (one
 * synchronizing transfer) for GPU arrays. */
static PyObject *host_ndarray(gd_state *st, ArrayObject *a, const char *cause)
{
    npy_intp dims[GD_MAX_NDIM];
    for (int i = 0; i < a->ndim; i++) dims[i] = (npy_intp)a->shape[i];
    PyArray_Descr *descr = (PyArray_Descr *)Py_NewRef(st->np_dtypes[a->dtype]);
    if (a->device.type == GD_CPU) {
        PyObject *arr = PyArray_NewFromDescr(&PyArray_Type, descr, a->ndim, dims, NULL, a->data,
                                             NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED | NPY_ARRAY_WRITEABLE, NULL);
        if (!arr) return NULL;
        if (PyArray_SetBaseObject((PyArrayObject *)arr, Py_NewRef((PyObject *)a)) < 0) {
            Py_DECREF(arr);
            return NULL;
        }
        if (cause && gd_tracing(st) && gd_trace_emit(st, "sync", cause, a->device, NULL, -1, 0, 0) < 0) {
            Py_DECREF(arr);
            return NULL;
        }
        return arr;
    }
    PyObject *arr = PyArray_NewFromDescr(&PyArray_Type, descr, a->ndim, dims, NULL, NULL, 0, NULL);
    if (!arr) return NULL;
    if (copy_to_host_bytes(st, PyArray_DATA((PyArrayObject *)arr), a, cause) < 0) {
        Py_DECREF(arr);
        return NULL;
    }
    return arr;
}

/* ------------------------------------------------------------------------------------------
 * creation from Python objects
 * ---------------------------------------------------------------------------------------- */

/* New array on `dev` holding the contents of a C-contiguous host ndarray of a gpudev dtype. */
static ArrayObject *from_host_ndarray(gd_state *st, PyArrayObject *arr, gd_dtype dt, gd_device dev, const char *op)
{
    int ndim = PyArray_NDIM(arr);
    if (ndim > GD_MAX_NDIM) {
        PyErr_Format(PyExc_ValueError, "%s: %d dimensions; gpudev supports at most %d", op, ndim, GD_MAX_NDIM);
        return NULL;
    }
    int64_t shape[GD_MAX_NDIM];
    for (int i = 0; i < ndim; i++) shape[i] = PyArray_DIM(arr, i);
    ArrayObject *out = gd_array_new(st, dev, dt, ndim, shape, op);
    if (!out) return NULL;
    size_t n = array_nbytes(out);
    if (!n) return out;
    if (dev.type == GD_CPU) {
        memcpy(out->data, PyArray_DATA(arr), n);
        return out;
    }
    gd_error err = {0};
    if (st->backends[GD_CUDA]->copy_from_host(out->data, dev.index, PyArray_DATA(arr), n, &err)) {
        Py_DECREF(out);
        gd_raise(st, op, &err);
        return NULL;
    }
    gd_mark_pending(st, dev);
    if (gd_tracing(st) && trace_copy(st, "h2d", out, dev) < 0) {
        Py_DECREF(out);
        return NULL;
    }
    return out;
}

/* The gpudev dtype for a NumPy array's data, or -1 with TypeError. `from_python` marks data
 * NumPy inferred from Python floats, which become float32 (gpudev's default float). */
static int infer_dtype(PyArrayObject *arr, int from_python, const char *op)
{
    int t = PyArray_TYPE(arr);
    if (from_python && t == NPY_FLOAT64) return GD_FLOAT32;
    int dt = dtype_from_numpy(t);
    if (dt < 0) {
        PyErr_Format(PyExc_TypeError,
                     "%s: cannot make a gpudev array from data of dtype %S; gpudev supports float32, "
                     "float64 and int64 (ints and bools become int64, float16 becomes float32)",
                     op, (PyObject *)PyArray_DESCR(arr));
        return -1;
    }
    return dt;
}

/* array(obj) / asarray(obj). copy: 1 always copies; 0 shares memory when it can. */
static PyObject *array_from_object(gd_state *st, PyObject *obj, PyObject *dtype_obj, gd_device dev,
                                   int has_device, int copy, const char *op)
{
    gd_dtype dt = GD_FLOAT32;
    int has_dtype = dtype_obj != Py_None;
    if (has_dtype && gd_parse_dtype(st, dtype_obj, &dt, op) < 0) return NULL;

    if (is_array(obj)) {
        ArrayObject *a = (ArrayObject *)obj;
        gd_device target = has_device ? dev : a->device;
        gd_dtype tdt = has_dtype ? dt : a->dtype;
        PyObject *cur = Py_NewRef(obj);
        if (!gd_device_eq(target, a->device)) {
            Py_SETREF(cur, (PyObject *)gd_array_to_device(st, a, target, op));
            if (!cur) return NULL;
            copy = 0; /* already a fresh array */
        }
        if (tdt != ((ArrayObject *)cur)->dtype) {
            Py_SETREF(cur, gd_astype(st, (ArrayObject *)cur, tdt, 1));
            copy = 0;
        } else if (copy) {
            Py_SETREF(cur, (PyObject *)gd_array_to_device(st, (ArrayObject *)cur, target, op));
        }
        return cur;
    }

    /* Anything else goes through NumPy, which knows nested sequences and the buffer
     * protocol; gpudev's dtype rules are applied to what NumPy inferred. */
    int from_python = !PyArray_Check(obj) && !PyArray_IsScalar(obj, Generic);
    if (PyComplex_Check(obj) || PyUnicode_Check(obj) || PyBytes_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s: cannot make a gpudev array from %.100s", op, Py_TYPE(obj)->tp_name);
        return NULL;
    }
    PyArrayObject *arr = (PyArrayObject *)PyArray_FromAny(obj, NULL, 0, 0, 0, NULL);
    if (!arr) {
        if (PyErr_ExceptionMatches(PyExc_OverflowError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_OverflowError, "%s: a Python int in the input does not fit in int64", op);
        }
        return NULL;
    }
    if (!has_dtype) {
        int idt = infer_dtype(arr, from_python, op);
        if (idt < 0) {
            Py_DECREF(arr);
            return NULL;
        }
        dt = (gd_dtype)idt;
    } else if (dtype_from_numpy(PyArray_TYPE(arr)) < 0) {
        PyErr_Format(PyExc_TypeError, "%s: cannot convert data of dtype %S to %s", op,
                     (PyObject *)PyArray_DESCR(arr), dtype_names[dt]);
        Py_DECREF(arr);
        return NULL;
    }
    /* zero-copy: a CPU array may borrow a NumPy array's memory when nothing must change */
    if (!copy && dev.type == GD_CPU && PyArray_Check(obj) && PyArray_TYPE(arr) == numpy_type_of[dt] &&
        PyArray_ISCARRAY(arr) && PyArray_ISNOTSWAPPED(arr) && PyArray_NDIM(arr) <= GD_MAX_NDIM) {
        int64_t shape[GD_MAX_NDIM];
        for (int i = 0; i < PyArray_NDIM(arr); i++) shape[i] = PyArray_DIM(arr, i);
        ArrayObject *a = (ArrayObject *)st->array_type->tp_alloc(st->array_type, 0);
        if (!a) {
            Py_DECREF(arr);
            return NULL;
        }
        a->device = dev;
        a->dtype = dt;
        a->ndim = PyArray_NDIM(arr);
        a->size = PyArray_SIZE(arr);
        memcpy(a->shape, shape, sizeof(int64_t) * (size_t)a->ndim);
        a->data = PyArray_DATA(arr);
        a->base = (PyObject *)arr; /* keeps NumPy's memory alive */
        return (PyObject *)a;
    }
    PyArray_Descr *want = (PyArray_Descr *)Py_NewRef(st->np_dtypes[dt]);
    PyArrayObject *c = (PyArrayObject *)PyArray_FromAny((PyObject *)arr, want, 0, 0,
                                                        NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED |
                                                            NPY_ARRAY_FORCECAST,
                                                        NULL);
    Py_DECREF(arr);
    if (!c) return NULL;
    ArrayObject *out = from_host_ndarray(st, c, dt, dev, op);
    Py_DECREF(c);
    return (PyObject *)out;
}

/* ------------------------------------------------------------------------------------------
 * argument parsing for creation functions: (positional..., dtype=None, device=None)
 * ---------------------------------------------------------------------------------------- */

typedef struct creation_kw {
    PyObject *dtype;
    PyObject *device;
    PyObject *extra[3]; /* named extras per function */
} creation_kw;

/* Splits FASTCALL keywords into dtype/device and up to three named extras. */
static int parse_creation_kwargs(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, creation_kw *kw,
                                 const char *const *extra_names, const char *op)
{
    kw->dtype = Py_None;
    kw->device = Py_None;
    kw->extra[0] = kw->extra[1] = kw->extra[2] = NULL;
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t i = 0; i < nkw; i++) {
        const char *k = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, i));
        if (!k) return -1;
        PyObject *v = args[nargs + i];
        if (strcmp(k, "dtype") == 0) kw->dtype = v;
        else if (strcmp(k, "device") == 0) kw->device = v;
        else {
            int found = 0;
            for (int j = 0; extra_names && extra_names[j]; j++) {
                if (strcmp(k, extra_names[j]) == 0) {
                    kw->extra[j] = v;
                    found = 1;
                }
            }
            if (!found) {
                PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%s'", op, k);
                return -1;
            }
        }
    }
    return 0;
}

static int fill_scalar(gd_state *st, ArrayObject *a, gd_scalar v, const char *op)
{
    if (!a->size) return 0;
    const gd_backend *be = st->backends[a->device.type];
    gd_ewise ew = {.ndim = 1, .contiguous = 1, .size = a->size};
    ew.shape[0] = a->size;
    gd_operand src = {.data = NULL, .scalar = v};
    gd_error err = {0};
    int rc;
    if (a->device.type == GD_CPU && a->size > GD_RELEASE_GIL_ELEMENTS) {
        Py_BEGIN_ALLOW_THREADS
        rc = be->unary(a->data, GD_COPY, a->dtype, &ew, &src, 0, &err);
        Py_END_ALLOW_THREADS
    } else {
        rc = be->unary(a->data, GD_COPY, a->dtype, &ew, &src, backend_index(a->device), &err);
    }
    if (rc) return gd_raise(st, op, &err);
    gd_mark_pending(st, a->device);
    return 0;
}

static gd_scalar scalar_of(gd_dtype dt, double f, int64_t i, int is_int)
{
    gd_scalar s;
    if (dt == GD_INT64) s.i = is_int ? i : (int64_t)f;
    else s.f = is_int ? (double)i : f;
    return s;
}

/* zeros/ones/empty/full share this: shape from args, then fill. */
static PyObject *create_filled(PyObject *module, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                               const char *op, int fill_kind /* 0 zeros, 1 ones, 2 empty, 3 full */)
{
    gd_state *st = PyModule_GetState(module);
    static const char *const full_extra[] = {"fill_value", "shape", NULL};
    creation_kw kw;
    if (parse_creation_kwargs(args, nargs, kwnames, &kw, fill_kind == 3 ? full_extra : NULL, op) < 0) return NULL;
    PyObject *shape_obj = nargs >= 1 ? args[0] : (fill_kind == 3 ? kw.extra[1] : NULL);
    PyObject *value = fill_kind == 3 ? (nargs >= 2 ? args[1] : kw.extra[0]) : NULL;
    if (!shape_obj || (fill_kind == 3 && !value) || nargs > (fill_kind == 3 ? 2 : 1)) {
        PyErr_Format(PyExc_TypeError, fill_kind == 3 ? "%s(shape, fill_value, dtype=None, device=None)"
                                                     : "%s(shape, dtype=None, device=None)", op);
        return NULL;
    }
    int ndim;
    int64_t shape[GD_MAX_NDIM];
    if (gd_parse_shape(&shape_obj, 1, &ndim, shape, op) < 0) return NULL;
    gd_dtype dt = GD_FLOAT32;
    double f = 0.0;
    int64_t iv = 0;
    int is_int = 1;
    if (fill_kind == 1) iv = 1;
    if (fill_kind == 3) {
        if (is_array(value)) {
            PyErr_Format(PyExc_TypeError, "%s: fill_value must be a Python number, got an Array; use a.item()", op);
            return NULL;
        }
        if (PyBool_Check(value) || PyLong_Check(value) || PyArray_IsScalar(value, Integer) ||
            PyArray_IsScalar(value, Bool)) {
            dt = GD_INT64;
            int overflow = 0;
            iv = PyLong_AsLongLongAndOverflow(value, &overflow);
            if (overflow) {
                f = PyFloat_AsDouble(value);
                is_int = 0;
                if (f == -1.0 && PyErr_Occurred()) return NULL;
            } else if (iv == -1 && PyErr_Occurred()) {
                return NULL;
            }
        } else if (PyFloat_Check(value) || PyArray_IsScalar(value, Floating)) {
            dt = PyArray_IsScalar(value, Double) ? GD_FLOAT64 : GD_FLOAT32;
            if (PyFloat_CheckExact(value)) dt = GD_FLOAT32;
            f = PyFloat_AsDouble(value);
            is_int = 0;
            if (f == -1.0 && PyErr_Occurred()) return NULL;
        } else {
            PyErr_Format(PyExc_TypeError, "%s: fill_value must be an int or a float, got %.100s", op,
                         Py_TYPE(value)->tp_name);
            return NULL;
        }
        if (!is_int && dt == GD_INT64) dt = GD_FLOAT64;
    }
    if (gd_parse_dtype(st, kw.dtype, &dt, op) < 0) return NULL;
    if (fill_kind == 3 && dt == GD_INT64 && !is_int) {
        if (!isfinite(f) || f >= 9.2233720368547758e18 || f < -9.2233720368547758e18) {
            PyErr_Format(PyExc_OverflowError, "%s: fill_value %R does not fit in int64", op, value);
            return NULL;
        }
    }
    gd_device dev = {GD_CPU, -1};
    if (gd_parse_device(st, kw.device, &dev) < 0) return NULL;
    ArrayObject *a = gd_array_new(st, dev, dt, ndim, shape, op);
    if (!a) return NULL;
    if (fill_kind != 2 && fill_scalar(st, a, scalar_of(dt, f, iv, is_int), op) < 0) {
        Py_DECREF(a);
        return NULL;
    }
    if (gd_tracing(st) && gd_trace_op(st, op, a, NULL, NULL) < 0) {
        Py_DECREF(a);
        return NULL;
    }
    return (PyObject *)a;
}

static PyObject *mod_zeros(PyObject *m, PyObject *const *a, Py_ssize_t n, PyObject *k)
{
    return create_filled(m, a, n, k, "zeros", 0);
}
static PyObject *mod_ones(PyObject *m, PyObject *const *a, Py_ssize_t n, PyObject *k)
{
    return create_filled(m, a, n, k, "ones", 1);
}
static PyObject *mod_empty(PyObject *m, PyObject *const *a, Py_ssize_t n, PyObject *k)
{
    return create_filled(m, a, n, k, "empty", 2);
}
static PyObject *mod_full(PyObject *m, PyObject *const *a, Py_ssize_t n, PyObject *k)
{
    return create_filled(m, a, n, k, "full", 3);
}

static PyObject *array_or_asarray(PyObject *module, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                                  int copy, const char *op)
{
    gd_state *st = PyModule_GetState(module);
    static const char *const extra[] = {"obj", "copy", NULL};
    creation_kw kw;
    if (parse_creation_kwargs(args, nargs, kwnames, &kw, extra, op) < 0) return NULL;
    PyObject *obj = nargs >= 1 ? args[0] : kw.extra[0];
    if (!obj || nargs > 1) {
        PyErr_Format(PyExc_TypeError, "%s(obj, dtype=None, device=None)", op);
        return NULL;
    }
    if (kw.extra[1] && kw.extra[1] != Py_None) {
        int c = PyObject_IsTrue(kw.extra[1]);
        if (c < 0) return NULL;
        copy = c;
    }
    gd_device dev = {GD_CPU, -1};
    int has_device = kw.device != Py_None;
    if (gd_parse_device(st, kw.device, &dev) < 0) return NULL;
    PyObject *res = array_from_object(st, obj, kw.dtype, dev, has_device, copy, op);
    if (res && gd_tracing(st) && gd_trace_op(st, op, (ArrayObject *)res, NULL, NULL) < 0) Py_CLEAR(res);
    return res;
}

static PyObject *mod_array(PyObject *m, PyObject *const *a, Py_ssize_t n, PyObject *k)
{
    return array_or_asarray(m, a, n, k, 1, "array");
}
static PyObject *mod_asarray(PyObject *m, PyObject *const *a, Py_ssize_t n, PyObject *k)
{
    return array_or_asarray(m, a, n, k, 0, "asarray");
}

static int number_arg(PyObject *o, double *f, int64_t *i, int *is_int, const char *op, const char *name)
{
    if (PyBool_Check(o) || PyLong_Check(o) || PyArray_IsScalar(o, Integer)) {
        int overflow = 0;
        *i = PyLong_AsLongLongAndOverflow(o, &overflow);
        if (*i == -1 && PyErr_Occurred()) return -1;
        if (overflow) {
            PyErr_Format(PyExc_OverflowError, "%s: %s=%R does not fit in int64", op, name, o);
            return -1;
        }
        *f = (double)*i;
        *is_int = 1;
        return 0;
    }
    if (PyFloat_Check(o) || PyArray_IsScalar(o, Floating)) {
        *f = PyFloat_AsDouble(o);
        if (*f == -1.0 && PyErr_Occurred()) return -1;
        *is_int = 0;
        return 0;
    }
    PyErr_Format(PyExc_TypeError, "%s: %s must be an int or a float, got %.100s", op, name, Py_TYPE(o)->tp_name);
    return -1;
}

static PyObject *mod_arange(PyObject *module, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    gd_state *st = PyModule_GetState(module);
    static const char *const extra[] = {"start", "stop", "step"};
    static const char *const extra_names[] = {"start", "stop", "step", NULL};
    creation_kw kw;
    if (parse_creation_kwargs(args, nargs, kwnames, &kw, extra_names, "arange") < 0) return NULL;
    PyObject *vals[3] = {NULL, NULL, NULL};
    if (nargs > 3) {
        PyErr_SetString(PyExc_TypeError, "arange(start, stop=None, step=1, dtype=None, device=None)");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < nargs; i++) vals[i] = args[i];
    for (int i = 0; i < 3; i++) {
        if (kw.extra[i]) {
            if (vals[i]) {
                PyErr_Format(PyExc_TypeError, "arange() got multiple values for argument '%s'", extra[i]);
                return NULL;
            }
            vals[i] = kw.extra[i];
        }
    }
    if (!vals[0]) {
        PyErr_SetString(PyExc_TypeError, "arange(start, stop=None, step=1, dtype=None, device=None): start is required");
        return NULL;
    }
    if (!vals[1] || vals[1] == Py_None) { /* arange(stop) */
        vals[1] = vals[0];
        vals[0] = NULL;
    }
    double f[3] = {0.0, 0.0, 1.0};
    int64_t iv[3] = {0, 0, 1};
    int is_int[3] = {1, 1, 1};
    for (int i = 0; i < 3; i++) {
        if (vals[i] && vals[i] != Py_None &&
            number_arg(vals[i], &f[i], &iv[i], &is_int[i], "arange", extra[i]) < 0)
            return NULL;
    }
    int all_int = is_int[0] && is_int[1] && is_int[2];
    gd_dtype dt = all_int ? GD_INT64 : GD_FLOAT32;
    if (gd_parse_dtype(st, kw.dtype, &dt, "arange") < 0) return NULL;
    gd_device dev = {GD_CPU, -1};
    if (gd_parse_device(st, kw.device, &dev) < 0) return NULL;
    if (all_int ? iv[2] == 0 : f[2] == 0.0) {
        PyErr_SetString(PyExc_ValueError, "arange: step must not be zero");
        return NULL;
    }
    int64_t n;
    if (all_int) {
        /* exact integer count: ceil((stop - start) / step), in 128-bit-safe steps */
        long double span = (long double)iv[1] - (long double)iv[0];
        long double cnt = ceill(span / (long double)iv[2]);
        n = cnt > 0 ? (int64_t)cnt : 0;
    } else {
        double cnt = ceil((f[1] - f[0]) / f[2]);
        if (!isfinite(cnt)) {
            PyErr_SetString(PyExc_ValueError, "arange: start, stop and step must be finite");
            return NULL;
        }
        n = cnt > 0 ? (int64_t)cnt : 0;
    }
    ArrayObject *a = gd_array_new(st, dev, dt, 1, &n, "arange");
    if (!a) return NULL;
    if (n) {
        gd_scalar start, step;
        if (dt == GD_INT64) {
            start.i = all_int ? iv[0] : (int64_t)f[0];
            step.i = all_int ? iv[2] : (int64_t)f[2];
        } else {
            start.f = f[0];
            step.f = f[2];
        }
        gd_error err = {0};
        if (st->backends[dev.type]->arange(a->data, dt, start, step, n, backend_index(dev), &err)) {
            Py_DECREF(a);
            gd_raise(st, "arange", &err);
            return NULL;
        }
        gd_mark_pending(st, dev);
    }
    if (gd_tracing(st) && gd_trace_op(st, "arange", a, NULL, NULL) < 0) {
        Py_DECREF(a);
        return NULL;
    }
    return (PyObject *)a;
}

static PyObject *random_array(PyObject *module, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                              gd_random_kind kind, const char *op)
{
    gd_state *st = PyModule_GetState(module);
    creation_kw kw;
    if (parse_creation_kwargs(args, nargs, kwnames, &kw, NULL, op) < 0) return NULL;
    int ndim;
    int64_t shape[GD_MAX_NDIM];
    if (gd_parse_shape(args, nargs, &ndim, shape, op) < 0) return NULL;
    gd_dtype dt = GD_FLOAT32;
    if (gd_parse_dtype(st, kw.dtype, &dt, op) < 0) return NULL;
    if (dt == GD_INT64) {
        PyErr_Format(PyExc_TypeError, "%s: dtype int64 is not supported, random numbers are floats; use dtype=gd.float32 or gd.float64", op);
        return NULL;
    }
    gd_device dev = {GD_CPU, -1};
    if (gd_parse_device(st, kw.device, &dev) < 0) return NULL;
    ArrayObject *a = gd_array_new(st, dev, dt, ndim, shape, op);
    if (!a) return NULL;
    if (a->size) {
        int per = GD_PHILOX_PER_BLOCK(dt == GD_FLOAT32);
        uint64_t blocks = ((uint64_t)a->size + (uint64_t)per - 1) / (uint64_t)per;
        uint64_t offset = st->offset;
        st->offset += blocks;
        gd_error err = {0};
        int rc;
        const gd_backend *be = st->backends[dev.type];
        if (dev.type == GD_CPU && a->size > GD_RELEASE_GIL_ELEMENTS) {
            Py_BEGIN_ALLOW_THREADS
            rc = be->random(a->data, dt, kind, st->seed, offset, a->size, 0, &err);
            Py_END_ALLOW_THREADS
        } else {
            rc = be->random(a->data, dt, kind, st->seed, offset, a->size, backend_index(dev), &err);
        }
        if (rc) {
            Py_DECREF(a);
            gd_raise(st, op, &err);
            return NULL;
        }
        gd_mark_pending(st, dev);
    }
    if (gd_tracing(st) && gd_trace_op(st, op, a, NULL, NULL) < 0) {
        Py_DECREF(a);
        return NULL;
    }
    return (PyObject *)a;
}

static PyObject *mod_rand(PyObject *m, PyObject *const *a, Py_ssize_t n, PyObject *k)
{
    return random_array(m, a, n, k, GD_RAND_UNIFORM, "rand");
}
static PyObject *mod_randn(PyObject *m, PyObject *const *a, Py_ssize_t n, PyObject *k)
{
    return random_array(m, a, n, k, GD_RAND_NORMAL, "randn");
}

/* ------------------------------------------------------------------------------------------
 * attributes
 * ---------------------------------------------------------------------------------------- */

static PyObject *get_shape(PyObject *self, void *Py_UNUSED(c))
{
    ArrayObject *a = (ArrayObject *)self;
    return gd_shape_tuple(a->ndim, a->shape);
}
static PyObject *get_ndim(PyObject *self, void *Py_UNUSED(c)) { return PyLong_FromLong(((ArrayObject *)self)->ndim); }
static PyObject *get_size(PyObject *self, void *Py_UNUSED(c)) { return PyLong_FromLongLong(((ArrayObject *)self)->size); }
static PyObject *get_dtype(PyObject *self, void *Py_UNUSED(c))
{
    return Py_NewRef(gd_state_of(self)->np_dtypes[((ArrayObject *)self)->dtype]);
}
static PyObject *get_itemsize(PyObject *self, void *Py_UNUSED(c))
{
    return PyLong_FromSize_t(gd_dtype_size(((ArrayObject *)self)->dtype));
}
static PyObject *get_nbytes(PyObject *self, void *Py_UNUSED(c)) { return PyLong_FromSize_t(array_nbytes((ArrayObject *)self)); }
static PyObject *get_device(PyObject *self, void *Py_UNUSED(c))
{
    return gd_device_object(gd_state_of(self), ((ArrayObject *)self)->device);
}
static PyObject *get_T(PyObject *self, void *Py_UNUSED(c)) { return gd_transpose(gd_state_of(self), (ArrayObject *)self, NULL); }
static PyObject *get_is_view(PyObject *self, void *Py_UNUSED(c))
{
    ArrayObject *a = (ArrayObject *)self;
    return PyBool_FromLong(a->base != NULL);
}

static PyObject *get_cuda_array_interface(PyObject *self, void *Py_UNUSED(c))
{
    ArrayObject *a = (ArrayObject *)self;
    if (a->device.type != GD_CUDA) {
        char dev[32];
        PyErr_Format(PyExc_AttributeError,
                     "__cuda_array_interface__: the array is on %s; only GPU arrays have it (use np.asarray(a) on the CPU)",
                     gd_device_str(a->device, dev));
        return NULL;
    }
    static const char *typestr[GD_NUM_DTYPES] = {"<f4", "<f8", "<i8"};
    PyObject *shape = get_shape(self, NULL);
    if (!shape) return NULL;
    /* stream: gpudev's per-device stream is not the legacy default stream; consumers must
     * synchronize with it, so we ask them to (None = the producer synchronized already). */
    gd_state *st = gd_state_of(self);
    if (gd_sync_device(st, a->device, "__cuda_array_interface__") < 0) {
        Py_DECREF(shape);
        return NULL;
    }
    return Py_BuildValue("{s:N,s:s,s:(Ki),s:O,s:i,s:O}", "shape", shape, "typestr", typestr[a->dtype], "data",
                         (unsigned long long)(uintptr_t)a->data, 0, "strides", Py_None, "version", 3, "stream",
                         Py_None);
}

static PyGetSetDef array_getset[] = {
    {"shape", get_shape, NULL, "tuple of dimensions", NULL},
    {"ndim", get_ndim, NULL, "number of dimensions", NULL},
    {"size", get_size, NULL, "number of elements", NULL},
    {"dtype", get_dtype, NULL, "numpy.dtype of the elements", NULL},
    {"itemsize", get_itemsize, NULL, "bytes per element", NULL},
    {"nbytes", get_nbytes, NULL, "bytes of data", NULL},
    {"device", get_device, NULL, "the Device the data lives on", NULL},
    {"T", get_T, NULL, "a new array with the axes reversed (a copy, not a view)", NULL},
    {"_is_view", get_is_view, NULL, NULL, NULL},
    {"__cuda_array_interface__", get_cuda_array_interface, NULL, "CUDA Array Interface v3 (GPU arrays)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

/* ------------------------------------------------------------------------------------------
 * methods: transfers and conversions
 * ---------------------------------------------------------------------------------------- */

static PyObject *array_to(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    gd_state *st = gd_state_of(self);
    ArrayObject *a = (ArrayObject *)self;
    PyObject *device = NULL, *copy_obj = Py_False;
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    if (nargs > 2) goto usage;
    if (nargs >= 1) device = args[0];
    if (nargs == 2) copy_obj = args[1];
    for (Py_ssize_t i = 0; i < nkw; i++) {
        const char *k = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, i));
        if (!k) return NULL;
        if (strcmp(k, "device") == 0 && !device) device = args[nargs + i];
        else if (strcmp(k, "copy") == 0) copy_obj = args[nargs + i];
        else goto usage;
    }
    if (!device) goto usage;
    gd_device dev = a->device;
    if (device == Py_None) {
        PyErr_SetString(PyExc_TypeError, "to: device must be a Device or a string like 'cuda:0', not None");
        return NULL;
    }
    if (gd_parse_device(st, device, &dev) < 0) return NULL;
    int copy = PyObject_IsTrue(copy_obj);
    if (copy < 0) return NULL;
    if (gd_device_eq(dev, a->device) && !copy) return Py_NewRef(self);
    return (PyObject *)gd_array_to_device(st, a, dev, "to");
usage:
    PyErr_SetString(PyExc_TypeError, "to(device, copy=False)");
    return NULL;
}

static PyObject *array_cpu(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    ArrayObject *a = (ArrayObject *)self;
    if (a->device.type == GD_CPU) return Py_NewRef(self);
    gd_device cpu = {GD_CPU, -1};
    return (PyObject *)gd_array_to_device(gd_state_of(self), a, cpu, "cpu");
}

static PyObject *array_cuda(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    ArrayObject *a = (ArrayObject *)self;
    long i = 0;
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    if (nargs + nkw > 1) {
        PyErr_SetString(PyExc_TypeError, "cuda(i=0)");
        return NULL;
    }
    if (nargs + nkw == 1) {
        i = PyLong_AsLong(args[0]);
        if (i == -1 && PyErr_Occurred()) return NULL;
        if (i < 0 || i >= GD_MAX_GPUS) {
            PyErr_Format(PyExc_ValueError, "cuda: GPU index must be in [0, %d), got %ld", GD_MAX_GPUS, i);
            return NULL;
        }
    }
    gd_device dev = {GD_CUDA, (int)i};
    if (gd_device_eq(dev, a->device)) return Py_NewRef(self);
    return (PyObject *)gd_array_to_device(gd_state_of(self), a, dev, "cuda");
}

static int refuse_gpu(ArrayObject *a, const char *op)
{
    if (a->device.type == GD_CPU) return 0;
    char dev[32];
    PyErr_Format(PyExc_TypeError,
                 "%s: the array is on %s and NumPy can only see host memory; copy it first with a.cpu() "
                 "(an explicit, synchronizing transfer), e.g. a.cpu().numpy()",
                 op, gd_device_str(a->device, dev));
    return -1;
}

static PyObject *array_numpy(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    ArrayObject *a = (ArrayObject *)self;
    if (refuse_gpu(a, "numpy") < 0) return NULL;
    return host_ndarray(gd_state_of(self), a, NULL);
}

static PyObject *array_dunder_array(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    ArrayObject *a = (ArrayObject *)self;
    if (refuse_gpu(a, "__array__") < 0) return NULL;
    PyObject *dtype = nargs >= 1 ? args[0] : Py_None, *copy = Py_None;
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t i = 0; i < nkw; i++) {
        const char *k = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, i));
        if (!k) return NULL;
        if (strcmp(k, "dtype") == 0) dtype = args[nargs + i];
        else if (strcmp(k, "copy") == 0) copy = args[nargs + i];
    }
    PyObject *arr = host_ndarray(gd_state_of(self), a, NULL);
    if (!arr) return NULL;
    int want_copy = copy == Py_None ? 0 : PyObject_IsTrue(copy);
    if (want_copy < 0) {
        Py_DECREF(arr);
        return NULL;
    }
    if (dtype != Py_None || want_copy) {
        PyArray_Descr *descr = NULL;
        if (dtype != Py_None && !PyArray_DescrConverter(dtype, &descr)) {
            Py_DECREF(arr);
            return NULL;
        }
        PyObject *res = PyArray_FromAny(arr, descr, 0, 0, want_copy ? NPY_ARRAY_ENSURECOPY : 0, NULL);
        Py_DECREF(arr);
        return res;
    }
    return arr;
}

/* The Python scalar for element `k` of a host buffer. */
static PyObject *scalar_from(const void *p, gd_dtype dt)
{
    switch (dt) {
    case GD_FLOAT32: return PyFloat_FromDouble(*(const float *)p);
    case GD_FLOAT64: return PyFloat_FromDouble(*(const double *)p);
    default: return PyLong_FromLongLong(*(const int64_t *)p);
    }
}

static PyObject *array_item(PyObject *self, PyObject *Py_UNUSED(ignored))
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
        if (gd_tracing(st) && gd_trace_emit(st, "sync", "item", a->device, NULL, -1, 0, 0) < 0) return NULL;
        return scalar_from(a->data, a->dtype);
    }
    char host[8];
    if (copy_to_host_bytes(st, host, a, "item") < 0) return NULL;
    return scalar_from(host, a->dtype);
}

static PyObject *array_tolist(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    PyObject *arr = host_ndarray(gd_state_of(self), (ArrayObject *)self, "tolist");
    if (!arr) return NULL;
    PyObject *res = PyArray_ToList((PyArrayObject *)arr);
    Py_DECREF(arr);
    return res;
}

static PyObject *array_copy(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    ArrayObject *a = (ArrayObject *)self;
    gd_state *st = gd_state_of(self);
    ArrayObject *out = gd_array_new(st, a->device, a->dtype, a->ndim, a->shape, "copy");
    if (!out) return NULL;
    size_t n = array_nbytes(a);
    if (n) {
        gd_error err = {0};
        int rc;
        const gd_backend *be = st->backends[a->device.type];
        int idx = backend_index(a->device);
        if (a->device.type == GD_CPU && a->size > GD_RELEASE_GIL_ELEMENTS) {
            Py_BEGIN_ALLOW_THREADS
            rc = be->copy_device(out->data, idx, a->data, idx, n, &err);
            Py_END_ALLOW_THREADS
        } else {
            rc = be->copy_device(out->data, idx, a->data, idx, n, &err);
        }
        if (rc) {
            Py_DECREF(out);
            gd_raise(st, "copy", &err);
            return NULL;
        }
        gd_mark_pending(st, a->device);
    }
    if (gd_tracing(st) && gd_trace_op(st, "copy", out, a, NULL) < 0) {
        Py_DECREF(out);
        return NULL;
    }
    return (PyObject *)out;
}

static PyObject *array_astype(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    gd_state *st = gd_state_of(self);
    PyObject *dtype = nargs >= 1 ? args[0] : NULL, *copy_obj = Py_True;
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    if (nargs > 2) goto usage;
    if (nargs == 2) copy_obj = args[1];
    for (Py_ssize_t i = 0; i < nkw; i++) {
        const char *k = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, i));
        if (!k) return NULL;
        if (strcmp(k, "dtype") == 0 && !dtype) dtype = args[nargs + i];
        else if (strcmp(k, "copy") == 0) copy_obj = args[nargs + i];
        else goto usage;
    }
    if (!dtype || dtype == Py_None) goto usage;
    gd_dtype dt;
    if (gd_parse_dtype(st, dtype, &dt, "astype") < 0) return NULL;
    int copy = PyObject_IsTrue(copy_obj);
    if (copy < 0) return NULL;
    return gd_astype(st, (ArrayObject *)self, dt, copy);
usage:
    PyErr_SetString(PyExc_TypeError, "astype(dtype, copy=True)");
    return NULL;
}

/* ------------------------------------------------------------------------------------------
 * methods: shapes and reductions
 * ---------------------------------------------------------------------------------------- */

static PyObject *array_reshape(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    ArrayObject *a = (ArrayObject *)self;
    int ndim;
    int64_t shape[GD_MAX_NDIM];
    if (nargs == 0) {
        PyErr_SetString(PyExc_TypeError, "reshape(*shape) needs a shape, e.g. a.reshape(2, -1)");
        return NULL;
    }
    if (gd_parse_shape(args, nargs, &ndim, shape, "reshape") < 0) return NULL;
    int infer = -1;
    int64_t known = 1;
    char b1[256], b2[256];
    for (int i = 0; i < ndim; i++) {
        if (shape[i] == -1) {
            if (infer >= 0) {
                PyErr_Format(PyExc_ValueError, "reshape: can only specify one unknown dimension (-1), got %s",
                             gd_shape_str(ndim, shape, b1));
                return NULL;
            }
            infer = i;
        } else if (shape[i] < 0) {
            PyErr_Format(PyExc_ValueError, "reshape: negative dimensions are not allowed, got %s",
                         gd_shape_str(ndim, shape, b1));
            return NULL;
        } else {
            if (shape[i] && known > INT64_MAX / shape[i]) known = -1;
            else known *= shape[i];
        }
    }
    if (infer >= 0) {
        if (known > 0 && a->size % known == 0) shape[infer] = a->size / known;
        else known = -1; /* also known == 0: the unknown dimension would be ambiguous, as NumPy says */
    }
    if ((infer >= 0 && known < 0) || (infer < 0 && known != a->size)) {
        PyErr_Format(PyExc_ValueError, "reshape: cannot reshape array of size %lld (shape %s) into shape %s",
                     (long long)a->size, gd_shape_str(a->ndim, a->shape, b1), gd_shape_str(ndim, shape, b2));
        return NULL;
    }
    return (PyObject *)gd_array_view(gd_state_of(self), a, a->data, ndim, shape);
}

static PyObject *array_flatten(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    ArrayObject *a = (ArrayObject *)self;
    return (PyObject *)gd_array_view(gd_state_of(self), a, a->data, 1, &a->size);
}

static PyObject *array_transpose(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    gd_state *st = gd_state_of(self);
    if (nargs == 0 || (nargs == 1 && args[0] == Py_None)) return gd_transpose(st, (ArrayObject *)self, NULL);
    if (nargs == 1 && (PyTuple_Check(args[0]) || PyList_Check(args[0]))) {
        PyObject *t = PySequence_Tuple(args[0]);
        if (!t) return NULL;
        PyObject *res = gd_transpose(st, (ArrayObject *)self, t);
        Py_DECREF(t);
        return res;
    }
    PyObject *t = PyTuple_New(nargs);
    if (!t) return NULL;
    for (Py_ssize_t i = 0; i < nargs; i++) PyTuple_SET_ITEM(t, i, Py_NewRef(args[i]));
    PyObject *res = gd_transpose(st, (ArrayObject *)self, t);
    Py_DECREF(t);
    return res;
}

/* (axis=None, keepdims=False) for reductions, parsed without building dicts. */
static int parse_axis_keepdims(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, PyObject **axis,
                               int *keepdims, const char *op)
{
    *axis = Py_None;
    *keepdims = 0;
    PyObject *kd = NULL;
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    if (nargs > 2) goto usage;
    if (nargs >= 1) *axis = args[0];
    if (nargs == 2) kd = args[1];
    for (Py_ssize_t i = 0; i < nkw; i++) {
        const char *k = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, i));
        if (!k) return -1;
        if (strcmp(k, "axis") == 0 && nargs < 1) *axis = args[nargs + i];
        else if (strcmp(k, "keepdims") == 0 && nargs < 2) kd = args[nargs + i];
        else goto usage;
    }
    if (kd) {
        *keepdims = PyObject_IsTrue(kd);
        if (*keepdims < 0) return -1;
    }
    return 0;
usage:
    PyErr_Format(PyExc_TypeError, "%s(axis=None, keepdims=False)", op);
    return -1;
}

#define GD_REDUCTION_METHOD(fname, kind)                                                            \
    static PyObject *array_##fname(PyObject *self, PyObject *const *args, Py_ssize_t nargs,         \
                                   PyObject *kwnames)                                               \
    {                                                                                               \
        PyObject *axis = Py_None;                                                                   \
        int keepdims = 0;                                                                           \
        if ((nargs || kwnames) && parse_axis_keepdims(args, nargs, kwnames, &axis, &keepdims, #fname) < 0) \
            return NULL;                                                                            \
        return gd_reduce(gd_state_of(self), kind, (ArrayObject *)self, axis, keepdims);             \
    }
GD_REDUCTION_METHOD(sum, GD_R_SUM)
GD_REDUCTION_METHOD(mean, GD_R_MEAN)
GD_REDUCTION_METHOD(max, GD_R_MAX)
GD_REDUCTION_METHOD(min, GD_R_MIN)
#undef GD_REDUCTION_METHOD

/* ------------------------------------------------------------------------------------------
 * indexing: leading axes only, so every view stays contiguous
 * ---------------------------------------------------------------------------------------- */

/* Resolve `key` to a view: (data, ndim, shape). Rules: integers on leading axes, then
 * slices (step 1) of which only the first that keeps more than one index may be partial,
 * then an optional final Ellipsis. */
static int resolve_index(ArrayObject *a, PyObject *key, char **data, int *ndim, int64_t *shape, const char *op)
{
    PyObject *items = PyTuple_Check(key) ? Py_NewRef(key) : PyTuple_Pack(1, key);
    if (!items) return -1;
    Py_ssize_t nitems = PyTuple_GET_SIZE(items);
    int64_t strides[GD_MAX_NDIM];
    int64_t acc = (int64_t)gd_dtype_size(a->dtype);
    for (int i = a->ndim - 1; i >= 0; i--) {
        strides[i] = acc;
        acc *= a->shape[i] ? a->shape[i] : 1;
    }
    char *p = a->data;
    int ax = 0, out_ndim = 0, sliced = 0, spread = 0, ellipsis = 0;
    for (Py_ssize_t k = 0; k < nitems; k++) {
        PyObject *it = PyTuple_GET_ITEM(items, k);
        if (it == Py_Ellipsis) {
            if (ellipsis || k != nitems - 1) {
                PyErr_Format(PyExc_IndexError,
                             "%s: an Ellipsis (...) may only come last in a gpudev index; views index leading axes only",
                             op);
                goto fail;
            }
            ellipsis = 1;
            break;
        }
        if (ax >= a->ndim) {
            PyErr_Format(PyExc_IndexError, "%s: too many indices for array: array is %d-dimensional, but %zd were indexed",
                         op, a->ndim, nitems);
            goto fail;
        }
        if (PySlice_Check(it)) {
            Py_ssize_t start, stop, step;
            if (PySlice_Unpack(it, &start, &stop, &step) < 0) goto fail;
            Py_ssize_t len = PySlice_AdjustIndices((Py_ssize_t)a->shape[ax], &start, &stop, step);
            if (step != 1) {
                PyErr_Format(PyExc_IndexError,
                             "%s: slices with a step (here %zd) are not supported: gpudev views stay contiguous; "
                             "copy to NumPy for strided access, e.g. a.cpu().numpy()[::2]",
                             op, step);
                goto fail;
            }
            int full = start == 0 && len == a->shape[ax];
            /* Once an earlier axis keeps more than one index, a partial slice here would
             * skip memory between the kept rows: not a contiguous view. */
            if (spread && !full) {
                PyErr_Format(PyExc_IndexError,
                             "%s: a partial slice after a sliced axis (like a[:, :3]) would not be a contiguous "
                             "view; gpudev slices one leading axis partially, the rest with ':'; "
                             "use a.cpu().numpy()[:, :3] for a strided copy",
                             op);
                goto fail;
            }
            if (len > 1) spread = 1;
            sliced = 1;
            if (len > 0) p += (int64_t)start * strides[ax];
            shape[out_ndim++] = len;
            ax++;
            continue;
        }
        if (PyIndex_Check(it) && !PyBool_Check(it)) {
            Py_ssize_t i = PyNumber_AsSsize_t(it, PyExc_IndexError);
            if (i == -1 && PyErr_Occurred()) goto fail;
            if (sliced) {
                PyErr_Format(PyExc_IndexError,
                             "%s: an integer index after a slice (like a[:, 0]) would not be a contiguous view; "
                             "gpudev indexes leading axes only: use a.T[0] (a copy) or a.cpu().numpy()[:, 0]",
                             op);
                goto fail;
            }
            int64_t n = a->shape[ax];
            if (i < -n || i >= n) {
                PyErr_Format(PyExc_IndexError, "%s: index %zd is out of bounds for axis %d with size %lld", op, i, ax,
                             (long long)n);
                goto fail;
            }
            if (i < 0) i += n;
            p += (int64_t)i * strides[ax];
            ax++;
            continue;
        }
        if (it == Py_None) {
            PyErr_Format(PyExc_IndexError, "%s: None (np.newaxis) is not supported in indices; use a.reshape(...)", op);
            goto fail;
        }
        PyErr_Format(PyExc_IndexError,
                     "%s: only integers, slices (start:stop) and a final Ellipsis are valid indices, got %.100s "
                     "(boolean and array indexing are not supported)",
                     op, Py_TYPE(it)->tp_name);
        goto fail;
    }
    for (; ax < a->ndim; ax++) shape[out_ndim++] = a->shape[ax];
    *data = p;
    *ndim = out_ndim;
    Py_DECREF(items);
    return 0;
fail:
    Py_DECREF(items);
    return -1;
}

static PyObject *array_subscript(PyObject *self, PyObject *key)
{
    ArrayObject *a = (ArrayObject *)self;
    char *data;
    int ndim;
    int64_t shape[GD_MAX_NDIM];
    if (resolve_index(a, key, &data, &ndim, shape, "getitem") < 0) return NULL;
    return (PyObject *)gd_array_view(gd_state_of(self), a, data, ndim, shape);
}

static int array_ass_subscript(PyObject *self, PyObject *key, PyObject *value)
{
    ArrayObject *a = (ArrayObject *)self;
    if (!value) {
        PyErr_SetString(PyExc_TypeError, "setitem: array elements cannot be deleted");
        return -1;
    }
    gd_state *st = gd_state_of(self);
    char *data;
    int ndim;
    int64_t shape[GD_MAX_NDIM];
    if (resolve_index(a, key, &data, &ndim, shape, "setitem") < 0) return -1;
    ArrayObject *view = gd_array_view(st, a, data, ndim, shape);
    if (!view) return -1;
    int rc = gd_assign(st, view, value, "setitem");
    Py_DECREF(view);
    return rc;
}

static Py_ssize_t array_length(PyObject *self)
{
    ArrayObject *a = (ArrayObject *)self;
    if (a->ndim == 0) {
        PyErr_SetString(PyExc_TypeError, "len() of a 0-d array; use a.item() for its value");
        return -1;
    }
    return (Py_ssize_t)a->shape[0];
}

/* sq_item makes iteration work: a[0], a[1], ... until IndexError. */
static PyObject *array_sq_item(PyObject *self, Py_ssize_t i)
{
    ArrayObject *a = (ArrayObject *)self;
    if (a->ndim == 0) {
        PyErr_SetString(PyExc_TypeError, "iteration over a 0-d array");
        return NULL;
    }
    if (i < 0 || i >= a->shape[0]) {
        PyErr_Format(PyExc_IndexError, "index %zd is out of bounds for axis 0 with size %lld", i, (long long)a->shape[0]);
        return NULL;
    }
    int64_t row = a->size / (a->shape[0] ? a->shape[0] : 1);
    return (PyObject *)gd_array_view(gd_state_of(self), a, a->data + (int64_t)i * row * (int64_t)gd_dtype_size(a->dtype),
                                     a->ndim - 1, a->shape + 1);
}

/* ------------------------------------------------------------------------------------------
 * number protocol
 * ---------------------------------------------------------------------------------------- */

static inline gd_state *pair_state(PyObject *a, PyObject *b)
{
    return gd_state_of(is_array(a) ? a : b);
}

#define GD_BINARY_SLOTS(slot, op)                                                         \
    static PyObject *array_##slot(PyObject *a, PyObject *b)                               \
    {                                                                                     \
        return gd_binary(pair_state(a, b), op, a, b, NULL);                               \
    }                                                                                     \
    static PyObject *array_inplace_##slot(PyObject *a, PyObject *b)                       \
    {                                                                                     \
        return gd_binary(gd_state_of(a), op, a, b, (ArrayObject *)a);                     \
    }
GD_BINARY_SLOTS(add, GD_ADD)
GD_BINARY_SLOTS(sub, GD_SUB)
GD_BINARY_SLOTS(mul, GD_MUL)
GD_BINARY_SLOTS(div, GD_DIV)
#undef GD_BINARY_SLOTS

static PyObject *array_pow(PyObject *a, PyObject *b, PyObject *mod)
{
    if (mod != Py_None) {
        PyErr_SetString(PyExc_TypeError, "power: the three-argument form pow(a, b, mod) is not supported");
        return NULL;
    }
    return gd_binary(pair_state(a, b), GD_POW, a, b, NULL);
}

static PyObject *array_inplace_pow(PyObject *a, PyObject *b, PyObject *mod)
{
    if (mod != Py_None) {
        PyErr_SetString(PyExc_TypeError, "power: the three-argument form pow(a, b, mod) is not supported");
        return NULL;
    }
    return gd_binary(gd_state_of(a), GD_POW, a, b, (ArrayObject *)a);
}

static PyObject *array_matmul(PyObject *a, PyObject *b) { return gd_matmul(pair_state(a, b), a, b); }

static PyObject *array_neg(PyObject *a) { return gd_unary(gd_state_of(a), GD_NEG, (ArrayObject *)a, "negative"); }
static PyObject *array_pos(PyObject *a) { return Py_NewRef(a); }
static PyObject *array_abs(PyObject *a) { return gd_unary(gd_state_of(a), GD_ABS, (ArrayObject *)a, "abs"); }

static PyObject *size1_item(PyObject *self, const char *op)
{
    ArrayObject *a = (ArrayObject *)self;
    if (a->size != 1) {
        PyErr_Format(PyExc_TypeError, "%s: only arrays of size 1 convert to Python scalars, got size %lld", op,
                     (long long)a->size);
        return NULL;
    }
    return array_item(self, NULL);
}

static int array_bool(PyObject *self)
{
    ArrayObject *a = (ArrayObject *)self;
    if (a->size != 1) {
        PyErr_Format(PyExc_ValueError,
                     "bool: the truth value of an array with %lld elements is ambiguous; reduce it first, "
                     "e.g. (a.max() > 0).item() or a.size > 0",
                     (long long)a->size);
        return -1;
    }
    PyObject *v = array_item(self, NULL);
    if (!v) return -1;
    int r = PyObject_IsTrue(v);
    Py_DECREF(v);
    return r;
}

static PyObject *array_float(PyObject *self)
{
    PyObject *v = size1_item(self, "float");
    if (v && !PyFloat_Check(v)) Py_SETREF(v, PyNumber_Float(v));
    return v;
}

static PyObject *array_int(PyObject *self)
{
    PyObject *v = size1_item(self, "int");
    if (v && !PyLong_Check(v)) Py_SETREF(v, PyNumber_Long(v));
    return v;
}

/* ------------------------------------------------------------------------------------------
 * buffer protocol (CPU arrays only), repr and str
 * ---------------------------------------------------------------------------------------- */

static int array_getbuffer(PyObject *self, Py_buffer *view, int flags)
{
    ArrayObject *a = (ArrayObject *)self;
    if (a->device.type != GD_CPU) {
        char dev[32];
        PyErr_Format(PyExc_BufferError,
                     "the array is on %s; only CPU arrays export their memory. Copy it first with a.cpu()",
                     gd_device_str(a->device, dev));
        view->obj = NULL;
        return -1;
    }
    static char *formats[GD_NUM_DTYPES] = {"f", "d", "q"};
    Py_ssize_t *meta = PyMem_Malloc(sizeof(Py_ssize_t) * 2 * (size_t)(a->ndim ? a->ndim : 1));
    if (!meta) {
        PyErr_NoMemory();
        view->obj = NULL;
        return -1;
    }
    Py_ssize_t item = (Py_ssize_t)gd_dtype_size(a->dtype);
    Py_ssize_t acc = item;
    for (int i = a->ndim - 1; i >= 0; i--) {
        meta[i] = (Py_ssize_t)a->shape[i];
        meta[a->ndim + i] = acc;
        acc *= (Py_ssize_t)a->shape[i];
    }
    view->buf = a->data;
    view->obj = Py_NewRef(self);
    view->len = (Py_ssize_t)array_nbytes(a);
    view->readonly = 0;
    view->itemsize = item;
    view->format = (flags & PyBUF_FORMAT) ? formats[a->dtype] : NULL;
    view->ndim = a->ndim;
    view->shape = (flags & PyBUF_ND) ? meta : NULL;
    view->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? meta + a->ndim : NULL;
    view->suboffsets = NULL;
    view->internal = meta;
    return 0;
}

static void array_releasebuffer(PyObject *Py_UNUSED(self), Py_buffer *view) { PyMem_Free(view->internal); }

/* NumPy formats the numbers; gpudev/_format.py adds gpudev's type name, dtype and device. */
static PyObject *array_repr(PyObject *self)
{
    ArrayObject *a = (ArrayObject *)self;
    PyObject *arr = host_ndarray(gd_state_of(self), a, "repr");
    if (!arr) return NULL;
    PyObject *mod = PyImport_ImportModule("gpudev._format");
    char dev[32];
    PyObject *res = mod ? PyObject_CallMethod(mod, "array_repr", "Os", arr, gd_device_str(a->device, dev)) : NULL;
    Py_XDECREF(mod);
    Py_DECREF(arr);
    return res;
}

static PyObject *array_str(PyObject *self)
{
    PyObject *arr = host_ndarray(gd_state_of(self), (ArrayObject *)self, "repr");
    if (!arr) return NULL;
    PyObject *s = PyObject_Str(arr);
    Py_DECREF(arr);
    return s;
}

/* ------------------------------------------------------------------------------------------
 * the Array type
 * ---------------------------------------------------------------------------------------- */

static PyObject *array_new(PyTypeObject *Py_UNUSED(type), PyObject *Py_UNUSED(args), PyObject *Py_UNUSED(kwds))
{
    PyErr_SetString(PyExc_TypeError, "Array cannot be created directly; use gd.array(obj), gd.zeros(shape), ...");
    return NULL;
}

#define FASTKW (METH_FASTCALL | METH_KEYWORDS)
#define FN(f) ((PyCFunction)(void (*)(void))(f))

static PyMethodDef array_methods[] = {
    {"to", FN(array_to), FASTKW,
     "to(device, copy=False) -> the array on `device` (itself when already there).\n\n>>> b = a.to('cuda:0')"},
    {"cpu", array_cpu, METH_NOARGS, "cpu() -> a copy on the CPU (itself when already there)."},
    {"cuda", FN(array_cuda), FASTKW, "cuda(i=0) -> a copy on GPU i (itself when already there)."},
    {"numpy", array_numpy, METH_NOARGS,
     "numpy() -> a NumPy view sharing memory (CPU arrays only; GPU arrays: a.cpu().numpy())."},
    {"__array__", FN(array_dunder_array), FASTKW, NULL},
    {"item", array_item, METH_NOARGS, "item() -> the only element as a Python scalar (synchronizes)."},
    {"tolist", array_tolist, METH_NOARGS, "tolist() -> nested Python lists (synchronizes)."},
    {"copy", array_copy, METH_NOARGS, "copy() -> a new array with the same data on the same device."},
    {"astype", FN(array_astype), FASTKW, "astype(dtype, copy=True) -> the array converted to dtype."},
    {"reshape", FN(array_reshape), METH_FASTCALL,
     "reshape(*shape) -> a view with a new shape (one dimension may be -1).\n\n>>> gd.arange(6).reshape(2, -1)"},
    {"flatten", array_flatten, METH_NOARGS, "flatten() -> a 1-D view sharing the data."},
    {"transpose", FN(array_transpose), METH_FASTCALL,
     "transpose(*axes) -> a new array with the axes permuted (reversed by default)."},
    {"sum", FN(array_sum), FASTKW, "sum(axis=None, keepdims=False)"},
    {"mean", FN(array_mean), FASTKW, "mean(axis=None, keepdims=False)"},
    {"max", FN(array_max), FASTKW, "max(axis=None, keepdims=False)"},
    {"min", FN(array_min), FASTKW, "min(axis=None, keepdims=False)"},
    {"__dlpack__", FN(gd_array_dlpack), FASTKW,
     "__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None) -> a DLPack capsule sharing the "
     "memory.\n\n>>> np.from_dlpack(gd.arange(3))\narray([0, 1, 2])"},
    {"__dlpack_device__", gd_array_dlpack_device, METH_NOARGS,
     "__dlpack_device__() -> (1, 0) on the CPU, (2, i) on cuda:i"},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef array_members[] = {
    {"__weaklistoffset__", T_PYSSIZET, offsetof(ArrayObject, weakreflist), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot array_slots[] = {
    {Py_tp_new, array_new},
    {Py_tp_dealloc, array_dealloc},
    {Py_tp_repr, array_repr},
    {Py_tp_str, array_str},
    {Py_tp_methods, array_methods},
    {Py_tp_members, array_members},
    {Py_tp_getset, array_getset},
    {Py_tp_doc, "An n-dimensional array on one device (CPU or a CUDA GPU).\n\n"
                ">>> a = gd.ones((2, 3), device=gd.try_gpu())\n>>> (a @ a.T).sum().item()\n18.0"},
    {Py_nb_add, array_add},
    {Py_nb_subtract, array_sub},
    {Py_nb_multiply, array_mul},
    {Py_nb_true_divide, array_div},
    {Py_nb_power, array_pow},
    {Py_nb_inplace_add, array_inplace_add},
    {Py_nb_inplace_subtract, array_inplace_sub},
    {Py_nb_inplace_multiply, array_inplace_mul},
    {Py_nb_inplace_true_divide, array_inplace_div},
    {Py_nb_inplace_power, array_inplace_pow},
    {Py_nb_matrix_multiply, array_matmul},
    {Py_nb_negative, array_neg},
    {Py_nb_positive, array_pos},
    {Py_nb_absolute, array_abs},
    {Py_nb_bool, array_bool},
    {Py_nb_float, array_float},
    {Py_nb_int, array_int},
    {Py_mp_length, array_length},
    {Py_mp_subscript, array_subscript},
    {Py_mp_ass_subscript, array_ass_subscript},
    {Py_sq_length, array_length},
    {Py_sq_item, array_sq_item},
    {Py_bf_getbuffer, array_getbuffer},
    {Py_bf_releasebuffer, array_releasebuffer},
    {0, NULL},
};

static PyType_Spec array_spec = {
    .name = "gpudev.Array",
    .basicsize = sizeof(ArrayObject),
    .flags = Py_TPFLAGS_DEFAULT,
    .slots = array_slots,
};

int gd_array_type_init(PyObject *module, gd_state *st)
{
    st->array_type = (PyTypeObject *)PyType_FromModuleAndSpec(module, &array_spec, NULL);
    if (!st->array_type) return -1;
    /* NumPy operators meeting an Array defer to it (which refuses mixing with a clear
     * message), instead of silently converting GPU data. */
    if (PyObject_SetAttrString((PyObject *)st->array_type, "__array_ufunc__", Py_None) < 0) return -1;
    return PyModule_AddType(module, st->array_type);
}

/* ------------------------------------------------------------------------------------------
 * module functions wrapping ops.c
 * ---------------------------------------------------------------------------------------- */

static ArrayObject *need_array(PyObject *o, const char *op)
{
    if (is_array(o)) return (ArrayObject *)o;
    PyErr_Format(PyExc_TypeError, "%s: expected a gpudev Array, got %.100s; convert it with gd.asarray(x)", op,
                 Py_TYPE(o)->tp_name);
    return NULL;
}

static PyObject *mod_matmul(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "matmul(a, b) takes two arrays");
        return NULL;
    }
    if (!is_array(args[0]) && !is_array(args[1])) {
        need_array(args[0], "matmul");
        return NULL;
    }
    return gd_matmul(PyModule_GetState(module), args[0], args[1]);
}

static PyObject *mod_norm(PyObject *module, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    if (nargs < 1) {
        PyErr_SetString(PyExc_TypeError, "norm(a, axis=None, keepdims=False)");
        return NULL;
    }
    ArrayObject *a = need_array(args[0], "norm");
    if (!a) return NULL;
    PyObject *axis;
    int keepdims;
    if (parse_axis_keepdims(args + 1, nargs - 1, kwnames, &axis, &keepdims, "norm") < 0) return NULL;
    return gd_reduce(PyModule_GetState(module), GD_R_NORM, a, axis, keepdims);
}

#define GD_UNARY_FN(fname, op)                                              \
    static PyObject *mod_##fname(PyObject *module, PyObject *arg)           \
    {                                                                       \
        ArrayObject *a = need_array(arg, #fname);                           \
        return a ? gd_unary(PyModule_GetState(module), op, a, #fname) : NULL; \
    }
GD_UNARY_FN(exp, GD_EXP)
GD_UNARY_FN(log, GD_LOG)
GD_UNARY_FN(sqrt, GD_SQRT)
GD_UNARY_FN(tanh, GD_TANH)
GD_UNARY_FN(relu, GD_RELU)
GD_UNARY_FN(abs, GD_ABS)
#undef GD_UNARY_FN

static PyObject *binary_fn(PyObject *module, PyObject *const *args, Py_ssize_t nargs, gd_binop op, const char *name)
{
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "%s(a, b) takes two arguments", name);
        return NULL;
    }
    if (!is_array(args[0]) && !is_array(args[1])) {
        need_array(args[0], name);
        return NULL;
    }
    PyObject *res = gd_binary(PyModule_GetState(module), op, args[0], args[1], NULL);
    if (res == Py_NotImplemented) {
        Py_DECREF(res);
        PyErr_Format(PyExc_TypeError, "%s: unsupported operand types %.100s and %.100s", name,
                     Py_TYPE(args[0])->tp_name, Py_TYPE(args[1])->tp_name);
        return NULL;
    }
    return res;
}

static PyObject *mod_maximum(PyObject *m, PyObject *const *a, Py_ssize_t n) { return binary_fn(m, a, n, GD_MAXIMUM, "maximum"); }
static PyObject *mod_minimum(PyObject *m, PyObject *const *a, Py_ssize_t n) { return binary_fn(m, a, n, GD_MINIMUM, "minimum"); }

static PyObject *join_fn(PyObject *module, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, int stack)
{
    const char *name = stack ? "stack" : "concatenate";
    PyObject *seq = nargs >= 1 ? args[0] : NULL, *axis_obj = nargs >= 2 ? args[1] : NULL;
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t i = 0; i < nkw; i++) {
        const char *k = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, i));
        if (!k) return NULL;
        if (strcmp(k, "axis") == 0 && !axis_obj) axis_obj = args[nargs + i];
        else if (strcmp(k, "arrays") == 0 && !seq) seq = args[nargs + i];
        else {
            PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%s'", name, k);
            return NULL;
        }
    }
    if (!seq || nargs > 2) {
        PyErr_Format(PyExc_TypeError, "%s(arrays, axis=0)", name);
        return NULL;
    }
    long axis = 0;
    if (axis_obj) {
        axis = PyLong_AsLong(axis_obj);
        if (axis == -1 && PyErr_Occurred()) return NULL;
    }
    return gd_concatenate(PyModule_GetState(module), seq, (int)axis, stack);
}

static PyObject *mod_stack(PyObject *m, PyObject *const *a, Py_ssize_t n, PyObject *k) { return join_fn(m, a, n, k, 1); }
static PyObject *mod_concatenate(PyObject *m, PyObject *const *a, Py_ssize_t n, PyObject *k)
{
    return join_fn(m, a, n, k, 0);
}

static PyObject *mod_allclose(PyObject *module, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"a", "b", "rtol", "atol", NULL};
    PyObject *a, *b;
    double rtol = 1e-5, atol = 1e-8;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO|dd:allclose", kwlist, &a, &b, &rtol, &atol)) return NULL;
    if (!is_array(a) && !is_array(b)) {
        need_array(a, "allclose");
        return NULL;
    }
    return gd_allclose(PyModule_GetState(module), a, b, rtol, atol);
}

PyMethodDef gd_array_module_methods[] = {
    {"array", FN(mod_array), FASTKW,
     "array(obj, dtype=None, device=None) -> a new array (always a copy).\n\n>>> gd.array([[1, 2], [3, 4]])"},
    {"asarray", FN(mod_asarray), FASTKW,
     "asarray(obj, dtype=None, device=None) -> obj itself when it already fits, else a conversion.\n"
     "A NumPy array of a gpudev dtype on the CPU is shared, not copied."},
    {"zeros", FN(mod_zeros), FASTKW, "zeros(shape, dtype=None, device=None)\n\n>>> gd.zeros((2, 3), device=gd.try_gpu())"},
    {"ones", FN(mod_ones), FASTKW, "ones(shape, dtype=None, device=None)"},
    {"empty", FN(mod_empty), FASTKW, "empty(shape, dtype=None, device=None): uninitialised contents"},
    {"full", FN(mod_full), FASTKW, "full(shape, fill_value, dtype=None, device=None)"},
    {"arange", FN(mod_arange), FASTKW, "arange(start, stop=None, step=1, dtype=None, device=None)"},
    {"rand", FN(mod_rand), FASTKW, "rand(*shape, dtype=None, device=None): uniform in [0, 1)\n\n>>> gd.rand(2, 3)"},
    {"randn", FN(mod_randn), FASTKW, "randn(*shape, dtype=None, device=None): standard normal"},
    {"matmul", FN(mod_matmul), METH_FASTCALL, "matmul(a, b): matrix product, NumPy semantics (also a @ b)"},
    {"norm", FN(mod_norm), FASTKW,
     "norm(a, axis=None, keepdims=False): Frobenius / 2-norm; axis=(1, 2) gives a batch of matrix norms"},
    {"exp", mod_exp, METH_O, "exp(a) elementwise"},
    {"log", mod_log, METH_O, "log(a) elementwise"},
    {"sqrt", mod_sqrt, METH_O, "sqrt(a) elementwise"},
    {"tanh", mod_tanh, METH_O, "tanh(a) elementwise"},
    {"relu", mod_relu, METH_O, "relu(a) = maximum(a, 0) elementwise"},
    {"abs", mod_abs, METH_O, "abs(a) elementwise"},
    {"maximum", FN(mod_maximum), METH_FASTCALL, "maximum(a, b) elementwise with broadcasting (NaN propagates)"},
    {"minimum", FN(mod_minimum), METH_FASTCALL, "minimum(a, b) elementwise with broadcasting (NaN propagates)"},
    {"stack", FN(mod_stack), FASTKW, "stack(arrays, axis=0): join along a new axis"},
    {"concatenate", FN(mod_concatenate), FASTKW, "concatenate(arrays, axis=0): join along an existing axis"},
    {"allclose", FN(mod_allclose), METH_VARARGS | METH_KEYWORDS,
     "allclose(a, b, rtol=1e-05, atol=1e-08) -> bool, as numpy.allclose"},
    {"from_dlpack", gd_from_dlpack, METH_O,
     "from_dlpack(x) -> an Array sharing the memory of x (NumPy, PyTorch, CuPy, ... on the CPU or a GPU).\n\n"
     ">>> a = gd.from_dlpack(np.arange(3.0))"},
    {NULL, NULL, 0, NULL},
};
