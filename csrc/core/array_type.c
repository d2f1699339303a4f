/* array_type.c - the Array type: its attributes, the number protocol, contiguity, its own
 * method table and slots, and the type object. Methods that belong to an operation live with
 * it and are added by that file (elementwise.c, autograd.c; transfer.c, index.c, reduce.c,
 * shape_ops.c and dlpack.c declare theirs for the table here). It calls the operations, which
 * call nothing here: the type sits above them.
 */
#include "array_type.h"
#include "core.h"
#include "args.h"
#include "array.h"
#include "autograd.h"
#include "compute.h"
#include "device.h"
#include "elementwise.h"
#include "gather.h"
#include "index.h"
#include "interchange.h"
#include "matmul.h"
#include "reduce.h"
#include "runtime.h"
#include "select.h"
#include "shape.h"
#include "shape_ops.h"
#include "trace.h"
#include "transfer.h"

#include <structmember.h>
#include <string.h>

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
static PyObject *get_nbytes(PyObject *self, void *Py_UNUSED(c))
{
    return PyLong_FromSize_t(gd_array_nbytes((ArrayObject *)self));
}
static PyObject *get_device(PyObject *self, void *Py_UNUSED(c))
{
    return gd_device_object(gd_state_of(self), ((ArrayObject *)self)->device);
}
static PyObject *get_strides(PyObject *self, void *Py_UNUSED(c))
{
    ArrayObject *a = (ArrayObject *)self;
    int64_t bytes[GD_MAX_NDIM];
    for (int k = 0; k < a->ndim; k++) bytes[k] = a->strides[k] * (int64_t)gd_dtype_size(a->dtype);
    return gd_shape_tuple(a->ndim, bytes);
}
static PyObject *get_T(PyObject *self, void *Py_UNUSED(c)) { return gd_transpose(gd_state_of(self), (ArrayObject *)self, NULL); }
static PyObject *get_is_view(PyObject *self, void *Py_UNUSED(c))
{
    ArrayObject *a = (ArrayObject *)self;
    return PyBool_FromLong(a->base != NULL && !a->storage_apart);
}

static PyGetSetDef array_getset[] = {
    {"shape", get_shape, NULL, "tuple of dimensions", NULL},
    {"ndim", get_ndim, NULL, "number of dimensions", NULL},
    {"_size", get_size, NULL, "number of elements (a.size, a.numel() in gpudev/_array.py)", NULL},
    {"dtype", get_dtype, NULL, "numpy.dtype of the elements", NULL},
    {"itemsize", get_itemsize, NULL, "bytes per element", NULL},
    {"nbytes", get_nbytes, NULL, "bytes of data", NULL},
    {"device", get_device, NULL, "the Device the data lives on", NULL},
    {"strides", get_strides, NULL, "bytes to step along each axis, as NumPy's .strides", NULL},
    {"T", get_T, NULL, "a view with the axes reversed (a.T[i, j] is a[j, i])", NULL},
    {"mT", gd_array_mT, NULL, "a view with the last two axes swapped (a batch of transposed matrices)", NULL},
    {"_is_view", get_is_view, NULL, NULL, NULL},
    {"__cuda_array_interface__", gd_array_cuda_array_interface, NULL, "CUDA Array Interface v3 (GPU arrays)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

/* ------------------------------------------------------------------------------------------
 * number protocol
 * ---------------------------------------------------------------------------------------- */

static inline gd_state *pair_state(PyObject *a, PyObject *b) { return gd_state_of(gd_is_any_array(a) ? a : b); }

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
GD_BINARY_SLOTS(and, GD_AND)
GD_BINARY_SLOTS(or, GD_OR)
GD_BINARY_SLOTS(xor, GD_XOR)
GD_BINARY_SLOTS(floordiv, GD_FLOOR_DIV)
GD_BINARY_SLOTS(mod, GD_MOD)
#undef GD_BINARY_SLOTS

/* divmod(a, b) -> (a // b, a % b), as NumPy's divmod */
static PyObject *array_divmod(PyObject *a, PyObject *b)
{
    gd_state *st = pair_state(a, b);
    PyObject *q = gd_binary(st, GD_FLOOR_DIV, a, b, NULL), *r = NULL, *res = NULL;
    if (!q || q == Py_NotImplemented) return q;
    r = gd_binary(st, GD_MOD, a, b, NULL);
    if (r && r != Py_NotImplemented) res = PyTuple_Pack(2, q, r);
    else res = Py_XNewRef(r);
    Py_DECREF(q);
    Py_XDECREF(r);
    return res;
}

/* a == None and a != None: NumPy compares each element with the object None, which no
 * number equals, so the answer is a bool array of all False (==) or all True (!=). */
static PyObject *compare_with_none(ArrayObject *a, int cmp)
{
    gd_state *st = gd_state_of((PyObject *)a);
    const char *name = cmp == Py_EQ ? "equal" : "not_equal";
    const gd_backend *be = gd_backend_of(st, a->device, name);
    if (!be) return NULL;
    ArrayObject *out = gd_array_new(st, a->device, GD_BOOL, a->ndim, a->shape, name);
    gd_scalar v = {.i = cmp == Py_NE};
    if (out && (gd_fill(st, be, out, v, name) < 0 || gd_trace_op(st, name, out, a, NULL) < 0)) Py_CLEAR(out);
    return (PyObject *)out;
}

/* ==, <, ... compare elementwise into a bool array, as in NumPy */
static PyObject *array_richcompare(PyObject *a, PyObject *b, int cmp)
{
    static const gd_binop ops[] = {[Py_LT] = GD_LT, [Py_LE] = GD_LE, [Py_EQ] = GD_EQ,
                                   [Py_NE] = GD_NE, [Py_GT] = GD_GT, [Py_GE] = GD_GE};
    if (b == Py_None && (cmp == Py_EQ || cmp == Py_NE)) return compare_with_none((ArrayObject *)a, cmp);
    return gd_binary(gd_state_of(a), ops[cmp], a, b, NULL);
}

/* Arrays hash by identity (as PyTorch's tensors do), so they can key dicts although == is
 * elementwise. */
static Py_hash_t array_hash(PyObject *self) { return PyBaseObject_Type.tp_hash(self); }

static int refuse_modulus(PyObject *mod)
{
    if (mod == Py_None) return 0;
    PyErr_SetString(PyExc_TypeError, "power: the three-argument form pow(a, b, mod) is not supported");
    return -1;
}

static PyObject *array_pow(PyObject *a, PyObject *b, PyObject *mod)
{
    return refuse_modulus(mod) < 0 ? NULL : gd_binary(pair_state(a, b), GD_POW, a, b, NULL);
}

static PyObject *array_inplace_pow(PyObject *a, PyObject *b, PyObject *mod)
{
    return refuse_modulus(mod) < 0 ? NULL : gd_binary(gd_state_of(a), GD_POW, a, b, (ArrayObject *)a);
}

static PyObject *array_matmul(PyObject *a, PyObject *b) { return gd_matmul(pair_state(a, b), a, b); }
static PyObject *array_neg(PyObject *a) { return gd_unary(gd_state_of(a), GD_NEG, (ArrayObject *)a); }
static PyObject *array_pos(PyObject *a) { return Py_NewRef(a); }
static PyObject *array_abs(PyObject *a) { return gd_unary(gd_state_of(a), GD_ABS, (ArrayObject *)a); }
static PyObject *array_invert(PyObject *a) { return gd_unary(gd_state_of(a), GD_INVERT, (ArrayObject *)a); }

static PyObject *size1_item(PyObject *self, const char *op)
{
    ArrayObject *a = (ArrayObject *)self;
    if (a->size != 1) {
        PyErr_Format(PyExc_TypeError, "%s: only arrays of size 1 convert to Python scalars, got size %lld", op,
                     (long long)a->size);
        return NULL;
    }
    return gd_array_item(self, NULL);
}

static int array_bool(PyObject *self)
{
    ArrayObject *a = (ArrayObject *)self;
    if (a->size != 1) {
        PyErr_Format(PyExc_ValueError,
                     "bool: the truth value of an array with %lld elements is ambiguous; use a.any() or a.all()",
                     (long long)a->size);
        return -1;
    }
    PyObject *v = gd_array_item(self, NULL);
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

/* operator.index(a) (a as a list index, a range bound, a shape): only a 0-d integer array is
 * one integer, as in NumPy 2, where bool and float arrays, and arrays of one element with
 * axes, are not. */
static PyObject *array_index(PyObject *self)
{
    ArrayObject *a = (ArrayObject *)self;
    if (a->ndim != 0 || !gd_dtype_is_int(a->dtype)) {
        PyErr_Format(PyExc_TypeError,
                     "__index__: only 0-d integer arrays convert to an index, got a %dd %s array; use int(a.item())",
                     a->ndim, gd_dtype_name(a->dtype));
        return NULL;
    }
    return gd_array_item(self, NULL);
}

/* ------------------------------------------------------------------------------------------
 * contiguity
 * ---------------------------------------------------------------------------------------- */

static PyObject *array_contiguous(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    ArrayObject *a = (ArrayObject *)self;
    if (a->contiguous) return Py_NewRef(self);
    gd_state *st = gd_state_of(self);
    const gd_backend *be = gd_backend_of(st, a->device, "contiguous");
    ArrayObject *out = be ? gd_contiguous(st, be, a, "contiguous") : NULL;
    if (out && gd_trace_op(st, "contiguous", out, a, NULL) < 0) Py_CLEAR(out);
    return GD_AG_OUT(st, "copy", out, a, NULL, NULL);
}

static PyObject *array_is_contiguous(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    return PyBool_FromLong(((ArrayObject *)self)->contiguous);
}

/* ------------------------------------------------------------------------------------------
 * the Array type
 * ---------------------------------------------------------------------------------------- */

static PyMethodDef array_methods[] = {
    GD_DEF_PRIVATE(gd_array_to_sig, GD_FN(gd_array_to), GD_FASTKW),
    GD_METHOD("cpu", gd_array_cpu, METH_NOARGS, "$self", "A copy on the CPU (itself when already there)."),
    GD_DEF(gd_array_cuda_sig, GD_FN(gd_array_cuda), GD_FASTKW),
    GD_METHOD("numpy", gd_array_numpy, METH_NOARGS, "$self",
              "A NumPy view sharing memory (CPU arrays only; GPU arrays: a.cpu().numpy())."),
    GD_DEF(gd_array_dunder_array_sig, GD_FN(gd_array_dunder_array), GD_FASTKW),
    GD_METHOD("item", gd_array_item, METH_NOARGS, "$self", "The only element as a Python scalar (synchronizes)."),
    GD_METHOD("__format__", gd_array_format, METH_O, "$self, format_spec, /",
              "format(a, spec): a 0-d array as its element (f'{loss:.3f}'), others as str(a) with an empty spec."),
    GD_METHOD("tolist", gd_array_tolist, METH_NOARGS, "$self", "Nested Python lists (synchronizes)."),
    GD_METHOD("copy", gd_array_copy, METH_NOARGS, "$self", "A new array with the same data on the same device."),
    GD_METHOD("__copy__", gd_array_copy, METH_NOARGS, "$self", "copy.copy(a): a.copy()"),
    GD_METHOD("__deepcopy__", gd_array_dunder_deepcopy, METH_O, "$self, memo, /",
              "copy.deepcopy(a): a.copy() (no pickling involved)"),
    GD_DEF(gd_array_astype_sig, GD_FN(gd_array_astype_method), GD_FASTKW),
    GD_METHOD("reshape", GD_FN(gd_array_reshape), METH_FASTCALL, "$self, *shape",
              "The array with a new shape, as dimensions or one tuple (one dimension may be -1): a view\n"
              "when the strides allow it, as in NumPy, else a copy.\n\n>>> gd.arange(6).reshape(2, -1)"),
    GD_METHOD("_flatten", gd_array_flatten, METH_NOARGS, "$self", "A 1-D copy, as NumPy's."),
    GD_METHOD("ravel", gd_array_ravel, METH_NOARGS, "$self", "The array as 1-D: a view when possible, else a copy."),
    GD_METHOD("nonzero", gd_array_nonzero, METH_NOARGS, "$self",
              "A tuple of int64 arrays, one per axis: the coordinates of the nonzero elements, as\n"
              "NumPy's (gd.nonzero). On a GPU the count is read back first (a synchronization).\n\n"
              ">>> gd.array([0, 2, 0, 3]).nonzero()\n(Array([1, 3]),)"),
    GD_METHOD("_transpose", GD_FN(gd_array_transpose), METH_FASTCALL, "$self, *axes",
              "A view with the axes permuted (reversed by default).\n\n>>> a.transpose(1, 0, 2)"),
    GD_METHOD("permute", GD_FN(gd_array_permute), METH_FASTCALL, "$self, *dims",
              "A view with the axes in the order dims (PyTorch's name for transpose(axes))."),
    GD_METHOD("swapaxes", GD_FN(gd_array_swapaxes), METH_FASTCALL, "$self, axis1, axis2, /",
              "A view with two axes swapped."),
    GD_METHOD("contiguous", array_contiguous, METH_NOARGS, "$self",
              "The array itself when C-contiguous, else a C-contiguous copy.\n\n>>> a.T.contiguous()"),
    GD_METHOD("is_contiguous", array_is_contiguous, METH_NOARGS, "$self",
              "Whether the elements are C-contiguous in memory (views may not be)."),
    GD_DEF(gd_array_sum_sig, GD_FN(gd_array_sum), GD_FASTKW),
    GD_DEF(gd_array_mean_sig, GD_FN(gd_array_mean), GD_FASTKW),
    GD_DEF_PRIVATE(gd_array_max_sig, GD_FN(gd_array_max), GD_FASTKW),
    GD_DEF_PRIVATE(gd_array_min_sig, GD_FN(gd_array_min), GD_FASTKW),
    GD_DEF(gd_array_any_sig, GD_FN(gd_array_any), GD_FASTKW),
    GD_DEF(gd_array_all_sig, GD_FN(gd_array_all), GD_FASTKW),
    GD_DEF(gd_array_argmax_sig, GD_FN(gd_array_argmax), GD_FASTKW),
    GD_DEF(gd_array_argmin_sig, GD_FN(gd_array_argmin), GD_FASTKW),
    GD_DEF(gd_array_dlpack_sig, GD_FN(gd_array_dlpack), GD_FASTKW),
    GD_METHOD("__dlpack_device__", gd_array_dlpack_device, METH_NOARGS, "$self",
              "(1, 0) on the CPU, (2, i) on cuda:i"),
    {NULL, NULL, 0, NULL},
};

static PyMemberDef array_members[] = {
    {"__weaklistoffset__", T_PYSSIZET, offsetof(ArrayObject, weakreflist), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot array_slots[] = {
    {Py_tp_new, gd_array_tp_new},
    {Py_tp_dealloc, gd_array_dealloc},
    {Py_tp_repr, gd_array_repr},
    {Py_tp_str, gd_array_str},
    {Py_tp_methods, array_methods},
    {Py_tp_members, array_members},
    {Py_tp_getset, array_getset},
    {Py_tp_doc, "An n-dimensional array on one device (CPU or a CUDA GPU).\n\n"
                ">>> a = gd.ones((2, 3), device=gd.try_gpu())\n>>> (a @ a.T).sum().item()\n18.0\n\n"
                "Basic indexing (a[0], a[:, ::2], a[..., None]) gives views. A bool mask over the leading axes\n"
                "(a[a > 0]) or an integer index array on the first axis (a[[2, 0]], a[idx, ...]) gives a copy,\n"
                "and a[mask] = v, a[idx] = v scatter v broadcast to the selection. Every index is checked\n"
                "first (IndexError, nothing written); on a GPU that check and a mask's count are read back,\n"
                "a synchronization. With repeated indices in a[idx] = v a GPU keeps any one of the writes.\n\n"
                ">>> b = gd.arange(6).reshape(3, 2)\n>>> b[[2, 0]].tolist(), b[b > 3].tolist()\n"
                "([[4, 5], [0, 1]], [4, 5])"},
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
    {Py_nb_floor_divide, array_floordiv},
    {Py_nb_remainder, array_mod},
    {Py_nb_divmod, array_divmod},
    {Py_nb_inplace_floor_divide, array_inplace_floordiv},
    {Py_nb_inplace_remainder, array_inplace_mod},
    {Py_nb_matrix_multiply, array_matmul},
    {Py_nb_negative, array_neg},
    {Py_nb_positive, array_pos},
    {Py_nb_absolute, array_abs},
    {Py_nb_invert, array_invert},
    {Py_nb_and, array_and},
    {Py_nb_or, array_or},
    {Py_nb_xor, array_xor},
    {Py_nb_inplace_and, array_inplace_and},
    {Py_nb_inplace_or, array_inplace_or},
    {Py_nb_inplace_xor, array_inplace_xor},
    {Py_tp_richcompare, array_richcompare},
    {Py_tp_hash, array_hash},
    {Py_nb_bool, array_bool},
    {Py_nb_float, array_float},
    {Py_nb_int, array_int},
    {Py_nb_index, array_index},
    {Py_mp_length, gd_array_length},
    {Py_mp_subscript, gd_array_subscript},
    {Py_mp_ass_subscript, gd_array_ass_subscript},
    {Py_sq_length, gd_array_length},
    {Py_sq_item, gd_array_sq_item},
    {Py_bf_getbuffer, gd_array_getbuffer},
    {Py_bf_releasebuffer, gd_array_releasebuffer},
    {0, NULL},
};

static PyType_Spec array_spec = {
    .name = "gpudev.Array",
    .basicsize = sizeof(ArrayObject),
    .flags = Py_TPFLAGS_DEFAULT,
    .slots = array_slots,
};

int gd_array_setup(PyObject *module, gd_state *st)
{
    st->array_type = (PyTypeObject *)PyType_FromModuleAndSpec(module, &array_spec, NULL);
    if (!st->array_type) return -1;
    return PyModule_AddType(module, st->array_type);
}
