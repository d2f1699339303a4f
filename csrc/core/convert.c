/* convert.c - Arrays from Python objects, the heart of gd.array() and gd.asarray(): Arrays
 * are moved or cast as asked, everything else goes through NumPy (nested sequences, scalars,
 * the buffer protocol) with gpudev's dtype rules applied to what NumPy inferred. A NumPy array
 * that already fits is shared, not copied, by asarray.
 */
#include "convert.h"
#include "core.h"
#include "array.h"
#include "compute.h"
#include "device.h"
#include "dtypes.h"
#include "elementwise.h"
#include "runtime.h"
#include "trace.h"
#include "transfer.h"

/* ------------------------------------------------------------------------------------------
 * NumPy data
 * ---------------------------------------------------------------------------------------- */

/* The gpudev dtype for a NumPy array's data, or -1 with TypeError. `from_python` marks data
 * NumPy inferred from Python floats, which become float32 (gpudev's default float). */
static int infer_dtype(PyArrayObject *arr, int from_python, const char *op)
{
    if (from_python && PyArray_TYPE(arr) == NPY_FLOAT64) return GD_FLOAT32;
    int dt = gd_dtype_from_numpy(PyArray_DESCR(arr));
    if (dt < 0) {
        PyErr_Format(PyExc_TypeError,
                     "%s: cannot make a gpudev array from data of dtype %S; gpudev supports float32, "
                     "float64, int64, int32 and bool (other ints become int64, float16 becomes float32)",
                     op, (PyObject *)PyArray_DESCR(arr));
        return -1;
    }
    return dt;
}

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
    size_t n = out ? gd_array_nbytes(out) : 0;
    if (n && gd_upload(st, out, PyArray_DATA(arr), n, op) < 0) Py_CLEAR(out);
    return out;
}

/* Whether a CPU Array may share arr's memory as dtype dt: nothing about the values may
 * change, gpudev must be allowed to write them, and every stride must be whole elements (any
 * sign, 0 for a broadcast axis). */
/* Typed memory of another object: a NumPy array, or an exporter of the buffer protocol
 * (memoryview, bytearray, array.array; bytes and str are scalars to NumPy). Its dtype is its
 * own, and asarray shares it as NumPy does. */
static int is_typed_memory(PyObject *obj)
{
    return PyArray_Check(obj) || (PyObject_CheckBuffer(obj) && !PyBytes_Check(obj) && !PyUnicode_Check(obj));
}

static int can_borrow(gd_state *st, PyObject *obj, PyArrayObject *arr, gd_dtype dt, gd_device dev, int copy)
{
    if (copy || dev.type != GD_CPU || !is_typed_memory(obj) || !gd_numpy_is(st, PyArray_DESCR(arr), dt) ||
        !PyArray_ISALIGNED(arr) || !PyArray_ISWRITEABLE(arr) || !PyArray_ISNOTSWAPPED(arr) ||
        PyArray_NDIM(arr) > GD_MAX_NDIM)
        return 0;
    const npy_intp item = (npy_intp)gd_dtype_size(dt);
    for (int k = 0; k < PyArray_NDIM(arr); k++)
        if (PyArray_STRIDE(arr, k) % item != 0) return 0;
    return 1;
}

/* gd_canonical_bools(a), stealing a. */
static ArrayObject *canonical_or_same(gd_state *st, ArrayObject *a, const char *op)
{
    ArrayObject *c = gd_canonical_bools(st, a, op);
    Py_DECREF(a);
    return c;
}

/* An Array from NumPy's reading of obj (arr): shared when it can be, else converted to dt and
 * copied to dev. Steals the reference to arr. */
static PyObject *from_numpy(gd_state *st, PyObject *obj, PyArrayObject *arr, gd_dtype dt, gd_device dev, int copy,
                            const char *op)
{
    if (can_borrow(st, obj, arr, dt, dev, copy)) {
        int64_t shape[GD_MAX_NDIM], strides[GD_MAX_NDIM];
        for (int i = 0; i < PyArray_NDIM(arr); i++) {
            shape[i] = PyArray_DIM(arr, i);
            strides[i] = PyArray_STRIDE(arr, i) / (npy_intp)gd_dtype_size(dt);
        }
        /* the base keeps NumPy's memory alive */
        ArrayObject *shared = gd_array_borrow(st, (PyObject *)arr, PyArray_DATA(arr), dev, dt, PyArray_NDIM(arr),
                                              shape, strides, PyArray_SIZE(arr));
        return shared ? (PyObject *)canonical_or_same(st, shared, op) : NULL;
    }
    PyArray_Descr *want = (PyArray_Descr *)Py_NewRef(st->np_dtypes[dt]);
    PyArrayObject *c = (PyArrayObject *)PyArray_FromAny(
        (PyObject *)arr, want, 0, 0, NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED | NPY_ARRAY_FORCECAST, NULL);
    Py_DECREF(arr);
    if (!c) return NULL;
    ArrayObject *out = from_host_ndarray(st, c, dt, dev, op);
    Py_DECREF(c);
    return out ? (PyObject *)canonical_or_same(st, out, op) : NULL;
}

/* ------------------------------------------------------------------------------------------
 * bool bytes
 * ---------------------------------------------------------------------------------------- */

/* Whether every byte of host bool data (any strides, in bytes since a bool is one) is 0 or 1. */
static int host_bools_canonical(const uint8_t *p, int ndim, const int64_t *shape, const int64_t *strides)
{
    if (ndim == 0) return p[0] <= 1;
    if (ndim == 1 && strides[0] == 1) {
        uint8_t high = 0; /* any bit above the lowest: a byte other than 0 or 1 */
        for (int64_t i = 0; i < shape[0]; i++) high |= p[i] & 0xFE;
        return high == 0;
    }
    for (int64_t i = 0; i < shape[0]; i++)
        if (!host_bools_canonical(p + i * strides[0], ndim - 1, shape + 1, strides + 1)) return 0;
    return 1;
}

/* Words of GPU bools checked per pass: the temporary is 64 MiB however large the import. */
#define BOOL_CHECK_WORDS ((int64_t)1 << 24)

/* The bytes of n (>= 1) GPU bools at p that have a bit above the lowest set, counted on the
 * device: the whole 4-byte words among them, read as int32 and ANDed with 0xFEFEFEFE, then the
 * nonzero bytes of that counted, one number read back per BOOL_CHECK_WORDS words; the at most
 * 3 bytes before the first aligned word and after the last are downloaded. -1 with an
 * exception. */
static int64_t device_noncanonical_bytes(gd_state *st, const gd_backend *be, gd_device dev, const uint8_t *p,
                                         int64_t n, const char *op)
{
    int64_t head = (int64_t)((4 - (uintptr_t)p % 4) % 4);
    if (head > n) head = n;
    const int64_t words = (n - head) / 4, tail = n - head - 4 * words;
    uint8_t edge[6] = {0};
    gd_error err = {0};
    PyThreadState *ts = gd_run_begin(dev, 0);
    int rc = head ? be->copy_to_host(edge, p, dev.index, (size_t)head, &err) : 0;
    if (!rc && tail) rc = be->copy_to_host(edge + 3, p + head + 4 * words, dev.index, (size_t)tail, &err);
    if (gd_run_end(st, dev, ts, rc, &err, op) < 0) return -1;
    int64_t count = 0;
    for (int i = 0; i < 6; i++) count += (edge[i] & 0xFE) != 0;
    if (words == 0) return count;
    const int64_t pass = words < BOOL_CHECK_WORDS ? words : BOOL_CHECK_WORDS;
    ArrayObject *high = gd_array_new(st, dev, GD_INT32, 1, &pass, op);
    if (!high) return -1;
    const gd_operand mask = {.scalar.i = (int32_t)0xFEFEFEFEu};
    ts = gd_run_begin(dev, 0);
    for (int64_t w = 0; w < words && !rc && count == 0; w += pass) {
        const int64_t m = words - w < pass ? words - w : pass;
        gd_ewise ew;
        gd_contiguous_plan(&ew, m);
        const gd_operand x = {.data = p + head + 4 * w};
        rc = be->binary(high->data, GD_AND, GD_INT32, &ew, &x, &mask, dev.index, &err);
        int64_t found = 0;
        if (!rc) rc = be->count_nonzero(&found, high->data, 4 * m, dev.index, &err);
        count += found;
    }
    rc = gd_run_end(st, dev, ts, rc, &err, op);
    Py_DECREF(high);
    return rc < 0 ? -1 : count;
}

/* Whether a's bytes (a bool array on a GPU) are all 0 or 1: 1 or 0, -1 with an exception. A
 * strided array is made contiguous on its device first. */
static int device_bools_canonical(gd_state *st, ArrayObject *a, const char *op)
{
    const gd_backend *be = gd_backend_of(st, a->device, op);
    ArrayObject *c = be ? gd_contiguous(st, be, a, op) : NULL;
    if (!c) return -1;
    int64_t high = device_noncanonical_bytes(st, be, c->device, (const uint8_t *)c->data, c->size, op);
    Py_DECREF(c);
    /* the count came back to the host: a synchronization, as every read of a count is */
    if (high < 0 || gd_trace_sync(st, op, a->device) < 0) return -1;
    return high == 0;
}

ArrayObject *gd_canonical_bools(gd_state *st, ArrayObject *a, const char *op)
{
    if (a->dtype != GD_BOOL || a->size == 0) return (ArrayObject *)Py_NewRef((PyObject *)a);
    if (a->device.type != GD_CPU) {
        /* counted where the data is: a download of the whole array would cost a copy over the
         * bus and a pass of one host core per import; only data that needs fixing comes down */
        int canonical = device_bools_canonical(st, a, op);
        if (canonical) return canonical < 0 ? NULL : (ArrayObject *)Py_NewRef((PyObject *)a);
    }
    const gd_device cpu = GD_CPU_DEVICE;
    ArrayObject *host = a->device.type == GD_CPU ? (ArrayObject *)Py_NewRef((PyObject *)a)
                                                 : gd_array_to_device(st, a, cpu, op);
    if (!host) return NULL;
    if (host_bools_canonical((const uint8_t *)host->data, host->ndim, host->shape, host->strides)) {
        Py_DECREF(host);
        return (ArrayObject *)Py_NewRef((PyObject *)a);
    }
    /* a fresh C-contiguous copy on the host (the download already is one) */
    if (host == a) Py_SETREF(host, gd_array_to_device(st, a, cpu, op));
    if (!host) return NULL;
    uint8_t *p = (uint8_t *)host->data;
    for (int64_t i = 0; i < host->size; i++) p[i] = p[i] != 0;
    if (a->device.type == GD_CPU) return host;
    ArrayObject *out = gd_array_to_device(st, host, a->device, op);
    Py_DECREF(host);
    return out;
}

/* ------------------------------------------------------------------------------------------
 * array() and asarray()
 * ---------------------------------------------------------------------------------------- */

/* An Array as another Array: moved to `target`, cast to `dt`, or copied only as asked. */
static PyObject *from_array(gd_state *st, ArrayObject *a, gd_device target, gd_dtype dt, int copy, const char *op)
{
    PyObject *cur = Py_NewRef((PyObject *)a);
    if (!gd_device_eq(target, a->device)) {
        Py_SETREF(cur, (PyObject *)gd_array_to_device(st, a, target, op));
        if (!cur) return NULL;
        copy = 0; /* already a fresh array */
    }
    if (dt != ((ArrayObject *)cur)->dtype) Py_SETREF(cur, gd_astype(st, (ArrayObject *)cur, dt, 1));
    else if (copy) Py_SETREF(cur, (PyObject *)gd_array_to_device(st, (ArrayObject *)cur, target, op));
    return cur;
}

/* NumPy's reading of any other object; NULL with gpudev's message for what it refuses. */
static PyArrayObject *read_with_numpy(PyObject *obj, const char *op)
{
    if (PyComplex_Check(obj) || PyUnicode_Check(obj) || PyBytes_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s: cannot make a gpudev array from %.100s", op, Py_TYPE(obj)->tp_name);
        return NULL;
    }
    PyArrayObject *arr = (PyArrayObject *)PyArray_FromAny(obj, NULL, 0, 0, 0, NULL);
    if (!arr && PyErr_ExceptionMatches(PyExc_OverflowError)) {
        PyErr_Clear();
        PyErr_Format(PyExc_OverflowError, "%s: a Python int in the input does not fit in int64", op);
    }
    return arr;
}

/* Python ints beyond int64 make NumPy infer uint64 or object. obj is read again as the dtype
 * asked for (int64 when none was), so that such an int raises OverflowError saying it does not
 * fit, and float dtypes take it as NumPy does. Returns the reading to use: the new one when a
 * dtype was asked for, else arr (uint64 data stays refused with the caller's message); NULL
 * with the OverflowError. Steals arr. */
static PyArrayObject *reread_big_ints(gd_state *st, PyObject *obj, PyArrayObject *arr, gd_dtype dt, int has_dtype,
                                      const char *op)
{
    const PyArray_Descr *got = PyArray_DESCR(arr);
    if (!(got->kind == 'u' && PyDataType_ELSIZE(got) == 8) && got->kind != 'O') return arr;
    gd_dtype want = has_dtype ? dt : GD_INT64;
    PyArray_Descr *descr = (PyArray_Descr *)Py_NewRef(st->np_dtypes[want]);
    PyArrayObject *again = (PyArrayObject *)PyArray_FromAny(obj, descr, 0, 0, 0, NULL);
    if (again && !has_dtype) { /* ints that fit: uint64 data, refused with the caller's message */
        Py_DECREF(again);
        return arr;
    }
    if (again) {
        Py_DECREF(arr);
        return again;
    }
    if (!PyErr_ExceptionMatches(PyExc_Exception)) { /* KeyboardInterrupt during the reading goes on */
        Py_DECREF(arr);
        return NULL;
    }
    if (!PyErr_ExceptionMatches(PyExc_OverflowError)) { /* not about ints: the first reading's message */
        PyErr_Clear();
        return arr;
    }
    PyErr_Clear();
    PyErr_Format(PyExc_OverflowError, "%s: a Python int in the input does not fit in %s%s", op, gd_dtype_name(want),
                 want == GD_INT64 ? " (gpudev's integer dtype); give dtype=gd.float64 to store it as a float" : "");
    Py_DECREF(arr);
    return NULL;
}

/* Python numbers asked to become an integer dtype are read by NumPy one by one (as
 * np.array(obj, dtype=np.int64) does), not through float64 or int64 and a cast: infinities,
 * NaN, floats past the integer's range and (for int32) ints past it raise instead of wrapping,
 * and ints beside floats stay exact. Steals arr. */
static PyArrayObject *reread_as_int(gd_state *st, PyObject *obj, PyArrayObject *arr, gd_dtype dt, const char *op)
{
    const char kind = PyArray_DESCR(arr)->kind;
    if (kind != 'f' && !(dt == GD_INT32 && (kind == 'i' || kind == 'u'))) return arr;
    Py_DECREF(arr);
    PyArray_Descr *descr = (PyArray_Descr *)Py_NewRef(st->np_dtypes[dt]);
    PyArrayObject *again = (PyArrayObject *)PyArray_FromAny(obj, descr, 0, 0, 0, NULL);
    if (!again && (PyErr_ExceptionMatches(PyExc_OverflowError) || PyErr_ExceptionMatches(PyExc_ValueError))) {
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        PyErr_Format(PyErr_GivenExceptionMatches(type, PyExc_OverflowError) ? PyExc_OverflowError : PyExc_ValueError,
                     "%s: a number in the input does not fit in %s (%S); give dtype=%s to keep it", op,
                     gd_dtype_name(dt), value ? value : Py_None,
                     kind == 'f' ? "gd.float64" : "gd.int64");
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(tb);
    }
    return again;
}

PyObject *gd_array_from_object(gd_state *st, PyObject *obj, PyObject *dtype_obj, gd_device dev, int has_device,
                               int copy, const char *op)
{
    gd_dtype dt = GD_FLOAT32;
    int has_dtype = dtype_obj != Py_None;
    if (has_dtype && gd_parse_dtype(dtype_obj, &dt, op) < 0) return NULL;
    if (gd_is_array(st, obj)) {
        ArrayObject *a = (ArrayObject *)obj;
        return from_array(st, a, has_device ? dev : a->device, has_dtype ? dt : a->dtype, copy, op);
    }
    int from_python = !is_typed_memory(obj) && !PyArray_IsScalar(obj, Generic);
    PyArrayObject *arr = read_with_numpy(obj, op);
    if (arr && from_python) arr = reread_big_ints(st, obj, arr, dt, has_dtype, op);
    if (arr && from_python && has_dtype && gd_dtype_is_int(dt)) arr = reread_as_int(st, obj, arr, dt, op);
    if (!arr) return NULL;
    if (!has_dtype) {
        int idt = infer_dtype(arr, from_python, op);
        if (idt < 0) {
            Py_DECREF(arr);
            return NULL;
        }
        dt = (gd_dtype)idt;
    } else if (gd_dtype_from_numpy(PyArray_DESCR(arr)) < 0) {
        PyErr_Format(PyExc_TypeError, "%s: cannot convert data of dtype %S to %s", op,
                     (PyObject *)PyArray_DESCR(arr), gd_dtype_name(dt));
        Py_DECREF(arr);
        return NULL;
    }
    return from_numpy(st, obj, arr, dt, dev, copy, op);
}
