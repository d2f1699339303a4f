/* autograd.c - the C side of reverse-mode differentiation: the Array attributes and methods
 * of autograd (requires_grad, grad, grad_fn, is_leaf, detach, backward), grad mode, and the
 * one call from an operation into the recorder that gpudev.autograd registers.
 *
 * The tape itself lives in Python (gpudev/autograd.py): nodes, the table of backward rules,
 * the topological walk. Here an Array only carries a pointer, `ag`: NULL for arrays outside
 * any graph, Py_True for a leaf that requires grad, or the node that produced it. Operations
 * test that pointer on their inputs (GD_AG_OUT in autograd.h, one predictable branch) and call
 * the recorder only when it is set and grad mode is on, so arrays that need no gradient pay
 * nothing else.
 */
#include "autograd.h"
#include "core.h"
#include "args.h"
#include "array.h"
#include "assign.h"
#include "device.h"
#include "shape.h"

/* ------------------------------------------------------------------------------------------
 * the recorder: calls into gpudev.autograd
 * ---------------------------------------------------------------------------------------- */

enum { HOOK_RECORD, HOOK_INPLACE, HOOK_SETITEM, HOOK_BACKWARD, NUM_HOOKS };

_Thread_local int gd_ag_off;

static PyObject *hook(gd_state *st, int which)
{
    if (st->ag_hooks) return PyTuple_GET_ITEM(st->ag_hooks, which);
    PyErr_SetString(PyExc_RuntimeError, "autograd: gpudev.autograd is not loaded; import gpudev first");
    return NULL;
}

PyObject *gd_ag_record(gd_state *st, const char *op, PyObject *out, PyObject *a, PyObject *b, PyObject *extra)
{
    PyObject *inputs = NULL, *node = NULL, *fn;
    if (out == a || !gd_is_array(st, out)) { /* a itself (x.to(x.device)) or NotImplemented */
        Py_XDECREF(extra);
        return out;
    }
    if (!extra && (PyErr_Occurred() || !(extra = Py_NewRef(Py_None)))) goto fail;
    inputs = PyTuple_Check(a) ? Py_NewRef(a) : b ? PyTuple_Pack(2, a, b) : PyTuple_Pack(1, a);
    if (!inputs || !(fn = hook(st, HOOK_RECORD))) goto fail;
    node = PyObject_CallFunction(fn, "sOOO", op, out, inputs, extra);
    if (!node) goto fail;
    if (node == Py_None) Py_DECREF(node);
    else Py_XSETREF(((ArrayObject *)out)->ag, node);
    Py_DECREF(inputs);
    Py_DECREF(extra);
    return out;
fail:
    Py_XDECREF(inputs);
    Py_XDECREF(extra);
    Py_DECREF(out);
    return NULL;
}

PyObject *gd_ag_inplace(gd_state *st, const char *op, PyObject *a, PyObject *b)
{
    PyObject *fn = hook(st, HOOK_INPLACE);
    return fn ? PyObject_CallFunction(fn, "sOO", op, a, b) : NULL;
}

int gd_ag_setitem(gd_state *st, PyObject *a, PyObject *key, PyObject *value)
{
    PyObject *fn = hook(st, HOOK_SETITEM);
    PyObject *r = fn ? PyObject_CallFunctionObjArgs(fn, a, key, value, NULL) : NULL;
    Py_XDECREF(r);
    return r ? 0 : -1;
}

int gd_ag_any(gd_state *st, PyObject *seq)
{
    if (gd_ag_off) return 0;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    for (Py_ssize_t i = 0; i < n; i++)
        if (gd_ag_has(st, items[i])) return 1;
    return 0;
}

/* ------------------------------------------------------------------------------------------
 * Array attributes
 * ---------------------------------------------------------------------------------------- */

static PyObject *get_requires_grad(PyObject *self, void *Py_UNUSED(c))
{
    return PyBool_FromLong(((ArrayObject *)self)->ag != NULL);
}

static int set_requires_grad(PyObject *self, PyObject *value, void *Py_UNUSED(c))
{
    ArrayObject *a = (ArrayObject *)self;
    int flag = value ? PyObject_IsTrue(value) : 0;
    if (flag < 0) return -1;
    if (a->ag && a->ag != Py_True) {
        if (flag) return 0;
        PyErr_SetString(PyExc_RuntimeError,
                        "requires_grad: only leaf arrays can stop requiring grad; this one was computed from "
                        "arrays that require grad: use y.detach() for a copy outside the graph");
        return -1;
    }
    if (flag && !gd_dtype_is_float(a->dtype)) {
        PyErr_Format(PyExc_TypeError,
                     "requires_grad: only float arrays can require gradients, got %s; convert first, e.g. "
                     "x.astype(gd.float32).requires_grad_()",
                     gd_dtype_name(a->dtype));
        return -1;
    }
    Py_XSETREF(a->ag, flag ? Py_NewRef(Py_True) : NULL);
    return 0;
}

static PyObject *get_grad(PyObject *self, void *Py_UNUSED(c))
{
    PyObject *g = ((ArrayObject *)self)->grad;
    return Py_NewRef(g ? g : Py_None);
}

/* A gradient must look like its array and hold no reference back into a graph: Arrays are
 * not tracked by the cycle collector, so a cycle through .grad would never be freed. */
static int check_grad(gd_state *st, ArrayObject *a, PyObject *value)
{
    ArrayObject *g = gd_need_array(st, value, "grad");
    if (!g) return -1;
    if (!gd_same_shape(a, g) || a->dtype != g->dtype || !gd_device_eq(a->device, g->device)) {
        char s0[256], s1[256], d0[32], d1[32];
        PyErr_Format(PyExc_ValueError,
                     "grad: the gradient must match the array: got shape %s, %s on %s for an array of shape %s, %s "
                     "on %s",
                     gd_shape_str(g->ndim, g->shape, s0), gd_dtype_name(g->dtype), gd_device_label(st, g->device, d0),
                     gd_shape_str(a->ndim, a->shape, s1), gd_dtype_name(a->dtype), gd_device_label(st, a->device, d1));
        return -1;
    }
    ArrayObject *owner = gd_owner(st, g);
    if (g->ag || owner->ag || owner == gd_owner(st, a)) {
        PyErr_SetString(PyExc_ValueError,
                        "grad: the gradient must be an array of its own outside any graph; assign a copy, e.g. "
                        "x.grad = g.detach().copy()");
        return -1;
    }
    return 0;
}

static int set_grad(PyObject *self, PyObject *value, void *Py_UNUSED(c))
{
    ArrayObject *a = (ArrayObject *)self;
    if (value && value != Py_None && check_grad(gd_state_of(self), a, value) < 0) return -1;
    Py_XSETREF(a->grad, value && value != Py_None ? Py_NewRef(value) : NULL);
    return 0;
}

static PyObject *get_grad_fn(PyObject *self, void *Py_UNUSED(c))
{
    PyObject *ag = ((ArrayObject *)self)->ag;
    return Py_NewRef(ag && ag != Py_True ? ag : Py_None);
}

static PyObject *get_is_leaf(PyObject *self, void *Py_UNUSED(c))
{
    PyObject *ag = ((ArrayObject *)self)->ag;
    return PyBool_FromLong(!ag || ag == Py_True);
}

static PyObject *detach(PyObject *self, PyObject *Py_UNUSED(ignored));

static PyObject *get_data(PyObject *self, void *Py_UNUSED(c)) { return detach(self, NULL); }

/* a.data = v copies v's values into a without recording (`p.data -= g` assigns back the
 * alias it changed in place: nothing left to copy). */
static int set_data(PyObject *self, PyObject *value, void *Py_UNUSED(c))
{
    gd_state *st = gd_state_of(self);
    ArrayObject *a = (ArrayObject *)self, *v;
    if (!value) {
        PyErr_SetString(PyExc_TypeError, "data: cannot be deleted");
        return -1;
    }
    if (!(v = gd_need_array(st, value, "data"))) return -1;
    if (!gd_same_shape(a, v)) {
        char s0[256], s1[256];
        PyErr_Format(PyExc_ValueError, "data: the new data has shape %s but the array has shape %s",
                     gd_shape_str(v->ndim, v->shape, s0), gd_shape_str(a->ndim, a->shape, s1));
        return -1;
    }
    return gd_assign(st, a, value, "data");
}

static PyObject *get_version(PyObject *self, void *Py_UNUSED(c))
{
    return PyLong_FromUnsignedLong(gd_owner(gd_state_of(self), (ArrayObject *)self)->version);
}

static PyGetSetDef autograd_getset[] = {
    {"requires_grad", get_requires_grad, set_requires_grad,
     "whether gradients flow to this array: operations on it are recorded for backward()", NULL},
    {"grad", get_grad, set_grad, "the gradient accumulated by backward() (leaf arrays), or None", NULL},
    {"grad_fn", get_grad_fn, NULL, "the node that computed this array and its gradient, or None for a leaf", NULL},
    {"is_leaf", get_is_leaf, NULL, "True unless the array was computed from arrays that require grad", NULL},
    {"data", get_data, set_data,
     "the same data outside the graph, as PyTorch's .data (p.data -= lr * p.grad is not recorded)", NULL},
    {"_version", get_version, NULL, "writes in place into this array's storage so far", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyObject *gd_ag_created(PyObject *out, PyObject *requires_grad)
{
    if (out && requires_grad && set_requires_grad(out, requires_grad, NULL) < 0) Py_CLEAR(out);
    return out;
}

/* ------------------------------------------------------------------------------------------
 * Array methods
 * ---------------------------------------------------------------------------------------- */

GD_SIGNATURE(requires_grad_sig, "requires_grad_", "$self, requires_grad=True",
             "self, now a leaf whose gradient backward() accumulates in .grad");
static PyObject *requires_grad_(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *flag = Py_True;
    if (gd_parse_args(&flag, &requires_grad_sig, args, nargs, kwnames) < 0 || set_requires_grad(self, flag, NULL) < 0)
        return NULL;
    return Py_NewRef(self);
}

static PyObject *detach(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    ArrayObject *a = (ArrayObject *)self;
    return (PyObject *)gd_array_view(gd_state_of(self), a, a->data, a->ndim, a->shape, a->strides);
}

GD_SIGNATURE(backward_sig, "backward", "$self, gradient=None, retain_graph=False",
             "Accumulate d(self)/d(leaf) into each leaf's .grad.\n\n"
             ">>> x = gd.ones(3).requires_grad_()\n>>> (x * x).sum().backward()\n>>> x.grad.tolist()\n[2.0, 2.0, 2.0]");
static PyObject *backward(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *argv[2] = {Py_None, Py_False};
    if (gd_parse_args(argv, &backward_sig, args, nargs, kwnames) < 0) return NULL;
    PyObject *fn = hook(gd_state_of(self), HOOK_BACKWARD);
    return fn ? PyObject_CallFunctionObjArgs(fn, self, argv[0], argv[1], NULL) : NULL;
}

static PyMethodDef autograd_methods[] = {
    GD_DEF(requires_grad_sig, GD_FN(requires_grad_), GD_FASTKW),
    GD_METHOD("detach", detach, METH_NOARGS, "$self", "A view of the same data outside the graph (no gradient flows)."),
    GD_DEF(backward_sig, GD_FN(backward), GD_FASTKW),
    {NULL, NULL, 0, NULL},
};

/* ------------------------------------------------------------------------------------------
 * module functions: grad mode and the recorder's registration
 * ---------------------------------------------------------------------------------------- */

static PyObject *mod_set_grad_enabled(PyObject *Py_UNUSED(module), PyObject *arg)
{
    int on = PyObject_IsTrue(arg);
    if (on < 0) return NULL;
    int was = !gd_ag_off;
    gd_ag_off = !on;
    return PyBool_FromLong(was);
}

static PyObject *mod_is_grad_enabled(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(ignored))
{
    return PyBool_FromLong(!gd_ag_off);
}

static PyObject *mod_set_autograd_hooks(PyObject *module, PyObject *arg)
{
    gd_state *st = PyModule_GetState(module);
    if (!PyTuple_Check(arg) || PyTuple_GET_SIZE(arg) != NUM_HOOKS) {
        PyErr_SetString(PyExc_TypeError, "_set_autograd_hooks: expected (record, record_inplace, record_setitem, "
                                         "backward)");
        return NULL;
    }
    Py_XSETREF(st->ag_hooks, Py_NewRef(arg));
    Py_RETURN_NONE;
}

/* _set_grad_fn(a, node): a's producer becomes node (None: outside the graph). */
static PyObject *mod_set_grad_fn(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    gd_state *st = PyModule_GetState(module);
    if (nargs != 2 || !gd_need_array(st, args[0], "_set_grad_fn")) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "_set_grad_fn(a, node) takes two arguments");
        return NULL;
    }
    ArrayObject *a = (ArrayObject *)args[0];
    Py_XSETREF(a->ag, args[1] == Py_None ? NULL : Py_NewRef(args[1]));
    Py_RETURN_NONE;
}

/* _split_storage(a): the root that now holds a's memory, or None (array.h). */
static PyObject *mod_split_storage(PyObject *module, PyObject *arg)
{
    gd_state *st = PyModule_GetState(module);
    if (!gd_need_array(st, arg, "_split_storage")) return NULL;
    return gd_array_split_storage(st, (ArrayObject *)arg);
}

static PyMethodDef autograd_functions[] = {
    {"_set_grad_enabled", mod_set_grad_enabled, METH_O, "_set_grad_enabled(on) -> whether it was on"},
    {"_is_grad_enabled", mod_is_grad_enabled, METH_NOARGS, "whether operations are recorded for backward()"},
    {"_set_autograd_hooks", mod_set_autograd_hooks, METH_O, NULL},
    {"_set_grad_fn", GD_FN(mod_set_grad_fn), METH_FASTCALL, NULL},
    {"_split_storage", mod_split_storage, METH_O, NULL},
    {NULL, NULL, 0, NULL},
};

/* The Array type gets the attributes and methods above as descriptors, so that the type's
 * own tables in array.c stay about arrays. */
int gd_autograd_setup(PyObject *module, gd_state *st)
{
    PyTypeObject *tp = st->array_type;
    for (PyGetSetDef *g = autograd_getset; g->name; g++) {
        PyObject *d = PyDescr_NewGetSet(tp, g);
        int rc = d ? PyObject_SetAttrString((PyObject *)tp, g->name, d) : -1;
        Py_XDECREF(d);
        if (rc < 0) return -1;
    }
    if (gd_array_add_methods(st, autograd_methods) < 0) return -1;
    return PyModule_AddFunctions(module, autograd_functions);
}
